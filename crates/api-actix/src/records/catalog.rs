//! The catalog response (spec §2.9), and the writer that streams it member by member while
//! the listing is read; and [`RecordWriter`], which writes a describe record straight from the
//! object, for each member and for the describe GET's answer.

use std::collections::HashMap;

use medialib_domain::object::bool_str;
use medialib_domain::{
    MediaObject, ObjectId, ObjectType, PageCursor, PermissionLevel, Timestamp, UUID_TEXT_LEN,
};
use medialib_ports::CatalogItem;
use medialib_ports::services::{CatalogSink, ImageLinks};
use serde::Serialize;

use super::AnyRecord;

/// The catalog response (spec §2.9).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CatalogResponse {
    /// Server time (epoch seconds) when the request started: pass it back as `ts` next time.
    pub ts: i64,
    /// The members, most recently modified first, ties by uuid; the first
    /// `completeRecords` complete, the rest limited (per page when paged).
    pub list: Vec<AnyRecord>,
    /// Only when the listing was paged (`limit`) and more members follow: the cursor to pass
    /// as `after` for the next page (digits, a dot, a uuid; no escaping needed).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "1732300000.01234567-89ab-5def-8123-456789abcdef")]
    pub next: Option<String>,
}

/// Writes the catalog response (the JSON of [`CatalogResponse`]) member by member while the
/// listing is read: no owned record, string copy or map per member, and a member is dropped
/// once written, so a listing costs its JSON and one member at a time. The first `complete`
/// members get the complete record, the rest the limited one (`authenticated` is `"true"`:
/// listing needs a token).
///
/// Each member's record is written by a [`RecordWriter`].
///
/// `images` cannot be read while the listing is (the store is busy handing out members, and
/// one read per member is what must not happen): each member's is written `{}` and its place
/// kept, the caller reads the images of every [`members`](Self::members) at once after the
/// listing, and [`finish`](Self::finish) writes them in.
#[derive(Debug)]
pub struct CatalogWriter<'a> {
    out: Vec<u8>,
    base_url: &'a str,
    records: RecordWriter,
    complete: usize,
    written: usize,
    next: Option<PageCursor>,
    failed: Option<serde_json::Error>,
    slots: Vec<ImagesSlot>,
}

/// Where a member's `images` value (`{}` as written) is in the body, and whose it is.
#[derive(Debug, Clone, Copy)]
struct ImagesSlot {
    at: usize,
    object: ObjectId,
    kind: ObjectType,
}

impl<'a> CatalogWriter<'a> {
    /// A writer for records under `base_url`, the first `complete` of them complete.
    pub fn new(base_url: &'a str, complete: usize) -> Self {
        Self {
            out: Vec::new(),
            base_url,
            records: RecordWriter::new(base_url),
            complete,
            written: 0,
            next: None,
            failed: None,
            slots: Vec::new(),
        }
    }

    /// The members written so far, by id and type: whose `images` to read.
    pub fn members(&self) -> Vec<(ObjectId, ObjectType)> {
        self.slots.iter().map(|s| (s.object, s.kind)).collect()
    }

    /// The JSON body with each member's `images` from `images` (`{}` for a member it does not
    /// name), or the first serialization error (none is expected: every key is a string).
    /// `None` when the listing never started (it was refused).
    pub fn finish(
        mut self,
        images: &HashMap<ObjectId, ImageLinks>,
    ) -> Option<serde_json::Result<Vec<u8>>> {
        if let Some(e) = self.failed {
            return Some(Err(e));
        }
        if self.out.is_empty() {
            return None;
        }
        self.out.push(b']');
        if let Some(next) = self.next {
            self.out.extend_from_slice(b",\"next\":");
            if let Err(e) = serde_json::to_writer(&mut self.out, &next.to_string()) {
                return Some(Err(e));
            }
        }
        self.out.push(b'}');
        Some(fill_images(self.out, &self.slots, images, self.base_url))
    }

    /// Appends `o`'s record, complete or limited by its place, its `images` as `{}`.
    fn write(&mut self, o: &MediaObject) -> serde_json::Result<()> {
        if self.written > 0 {
            self.out.push(b',');
        }
        let full = self.written < self.complete;
        let at = self
            .records
            .write(&mut self.out, o, full, true, EMPTY_MAP)?;
        self.slots.push(ImagesSlot {
            at,
            object: o.id(),
            kind: o.object_type(),
        });
        self.written += 1;
        Ok(())
    }
}

/// Writes describe records straight into a body, the same bytes serde_json writes for
/// [`DescribeRecord`](super::DescribeRecord) and [`LimitedRecord`](super::LimitedRecord) (a
/// test holds the two to it): the keys are constants, written as bytes; the free texts
/// (title, description, properties) go through serde_json's string escaping; ids, numbers
/// and the permLink are written without `fmt`, as none of them can need escaping. serde's
/// derive escaped every constant key of every record and formatted each id through the
/// formatting machinery, and the owned records copied every text first (docs/performance.md).
#[derive(Debug)]
pub struct RecordWriter {
    /// `"BASE_URL/w/` as a JSON string's opening, escaped once: a permLink is this, the
    /// object's shortcode and `/"`.
    perm_link_start: Vec<u8>,
}

impl RecordWriter {
    /// A writer for records under `base_url`.
    pub fn new(base_url: &str) -> Self {
        // A string always serializes; its closing quote is left off, to follow each shortcode.
        let mut perm_link_start = serde_json::to_vec(&format!("{base_url}/w/")).unwrap_or_default();
        perm_link_start.pop();
        Self { perm_link_start }
    }

    /// Appends `o`'s record to `out`: the complete one (the fields of `DescribeRecord`, in its
    /// order) when `full`, else the limited one (those of `LimitedRecord`), with `images` (a
    /// JSON object, written as given) as its `images`. Returns where `images` starts in `out`.
    pub fn write(
        &self,
        out: &mut Vec<u8>,
        o: &MediaObject,
        full: bool,
        authenticated: bool,
        images: &[u8],
    ) -> serde_json::Result<usize> {
        let f = o.fields();
        out.extend_from_slice(b"{\"type\":\"");
        out.extend_from_slice(o.object_type().as_str().as_bytes());
        out.extend_from_slice(b"\",\"title\":");
        text(out, f.title.as_str())?;
        if !full {
            out.extend_from_slice(b",\"description\":");
            text(out, f.description.as_str())?;
        }
        out.extend_from_slice(b",\"images\":");
        let at = out.len();
        out.extend_from_slice(images);
        out.extend_from_slice(b",\"public\":\"");
        out.extend_from_slice(bool_str(f.public).as_bytes());
        out.push(b'"');
        if full {
            out.extend_from_slice(b",\"metadata\":{");
            if let Some(d) = f.duration {
                out.extend_from_slice(b"\"duration\":");
                number(out, d.seconds());
            }
            out.extend_from_slice(b"},\"description\":");
            text(out, f.description.as_str())?;
            out.extend_from_slice(b",\"properties\":{");
            for (i, (k, v)) in f.properties.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                text(out, k)?;
                out.push(b':');
                text(out, v)?;
            }
            out.push(b'}');
        }
        out.extend_from_slice(b",\"uuid\":\"");
        let mut id = [0; UUID_TEXT_LEN];
        out.extend_from_slice(o.id().encode_into(&mut id).as_bytes());
        let authenticated: &[u8] = if authenticated {
            b"\"authenticated\":\"true\""
        } else {
            b"\"authenticated\":\"false\""
        };
        if full {
            out.extend_from_slice(b"\",\"userId\":\"");
            out.extend_from_slice(o.owner().encode_into(&mut id).as_bytes());
            out.extend_from_slice(b"\",");
            out.extend_from_slice(authenticated);
            out.extend_from_slice(b",\"permLink\":");
            self.perm_link(out, o);
            out.extend_from_slice(b",\"created\":");
            number(out, o.created().epoch_seconds());
            out.extend_from_slice(b",\"modified\":");
            number(out, o.modified().epoch_seconds());
        } else {
            out.extend_from_slice(b"\",\"permLink\":");
            self.perm_link(out, o);
            out.push(b',');
            out.extend_from_slice(authenticated);
        }
        out.push(b'}');
        Ok(at)
    }

    /// [`perm_link`](super::perm_link) as a JSON string: the escaped start, the shortcode (ten
    /// letters or digits, the domain's `ShortCode`, so nothing to escape) and the closing `/"`.
    fn perm_link(&self, out: &mut Vec<u8>, o: &MediaObject) {
        let code = o.shortcode().as_str();
        debug_assert!(code.bytes().all(|b| b.is_ascii_alphanumeric()));
        out.extend_from_slice(&self.perm_link_start);
        out.extend_from_slice(code.as_bytes());
        out.extend_from_slice(b"/\"");
    }
}

/// `value` as a JSON string, escaped by serde_json.
fn text(out: &mut Vec<u8>, value: &str) -> serde_json::Result<()> {
    serde_json::to_writer(out, value)
}

/// `value` as a JSON number.
fn number(out: &mut Vec<u8>, value: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

/// `body` with the `{}` at each slot replaced by the member's images, when it has any.
fn fill_images(
    body: Vec<u8>,
    slots: &[ImagesSlot],
    images: &HashMap<ObjectId, ImageLinks>,
    base_url: &str,
) -> serde_json::Result<Vec<u8>> {
    if images.is_empty() {
        return Ok(body);
    }
    let mut out = Vec::with_capacity(body.len() + images.len() * 512);
    let mut copied = 0;
    for slot in slots {
        let Some(links) = images.get(&slot.object) else {
            continue;
        };
        out.extend_from_slice(&body[copied..slot.at]);
        serde_json::to_writer(&mut out, &super::images(links, base_url))?;
        copied = slot.at + EMPTY_MAP.len();
    }
    out.extend_from_slice(&body[copied..]);
    Ok(out)
}

/// `images` with none: a member's as first written, a described object's without stills.
pub const EMPTY_MAP: &[u8] = b"{}";

impl CatalogSink for CatalogWriter<'_> {
    fn start(&mut self, ts: Timestamp, _level: PermissionLevel) {
        self.out = format!("{{\"ts\":{},\"list\":[", ts.epoch_seconds()).into_bytes();
    }

    fn member(&mut self, item: CatalogItem) {
        if self.failed.is_none() {
            if let Err(e) = self.write(&item.object) {
                self.failed = Some(e);
            }
        }
    }

    fn next(&mut self, cursor: PageCursor) {
        self.next = Some(cursor);
    }
}

#[cfg(test)]
mod tests {
    use medialib_domain::{
        Description, DurationSecs, NewObject, ObjectFields, ObjectType, OrgNamespace, Properties,
        ShortCode, Title,
    };

    use medialib_domain::media::records::ImageSize;

    use medialib_domain::UserId;

    use super::*;
    use crate::records::{AnyRecord, DescribeRecord, LimitedRecord};

    fn object(n: u8, title: &str, props: &[(&str, &str)], duration: Option<u32>) -> MediaObject {
        let ns = OrgNamespace::from_random([3; 16]);
        MediaObject::create(
            ObjectId::generate(&ns, [n; 16]),
            NewObject {
                object_type: if n % 2 == 0 {
                    ObjectType::Video
                } else {
                    ObjectType::Catalog
                },
                fields: ObjectFields {
                    title: Title::parse(title).unwrap(),
                    description: Description::parse("line one\nline \"two\"").unwrap(),
                    public: n % 3 == 0,
                    duration: duration.map(|d| DurationSecs::from_seconds(i64::from(d)).unwrap()),
                    properties: Properties::parse(props.iter().copied()).unwrap(),
                },
            },
            UserId::generate(&ns, [n; 16]),
            ShortCode::from_random([n; 16]),
            Timestamp::from_epoch_seconds(1_700_000_000 + i64::from(n)),
        )
    }

    #[test]
    fn a_refused_listing_writes_nothing() {
        assert!(
            CatalogWriter::new("https://x", 1)
                .finish(&HashMap::new())
                .is_none()
        );
    }

    fn links(paths: &[(ImageSize, &str)]) -> ImageLinks {
        ImageLinks::new(paths.iter().map(|(s, p)| (*s, (*p).to_owned())).collect())
    }

    /// The member-by-member writer answers exactly what the owned records serialize to,
    /// images written in after the listing included.
    #[test]
    fn catalog_json_matches_the_owned_records() {
        let items: Vec<CatalogItem> = [
            object(1, "Plain", &[], None),
            object(
                2,
                "Quotes \" and \\ and </script> é 🎬 \"images\":{}",
                &[("course", "C1"), ("a", "é\t"), ("images", "{}")],
                Some(90),
            ),
            object(3, "Third", &[("z", "")], Some(0)),
        ]
        .into_iter()
        .map(|object| CatalogItem {
            object,
            added_at: Timestamp::from_epoch_seconds(5),
        })
        .collect();
        // The second base needs escaping in a JSON string (the permLink's start is escaped once).
        for base in [
            "https://media.example.edu",
            "https://media.example.edu/a\\\"b",
        ] {
            catalog_json_matches_under(base, &items);
        }
    }

    /// A describe answer is exactly what the owned record serializes to, for every kind of
    /// record, caller and images.
    #[test]
    fn a_describe_record_matches_the_owned_record() {
        let objects = [
            object(1, "Plain", &[], None),
            object(
                2,
                "Quotes \" and \\ é 🎬",
                &[("course", "C1"), ("a", "é\t")],
                Some(90),
            ),
            object(3, "Third", &[("z", "")], Some(0)),
        ];
        let stills = links(&[
            (ImageSize::Thumbnail, "/m/a/1/s/stills/128x128.jpg"),
            (ImageSize::Large, "/m/a/1/\"s\"/1280x760.jpg"),
        ]);
        let none = links(&[]);
        for base in [
            "https://media.example.edu",
            "https://media.example.edu/a\\\"b",
        ] {
            let writer = RecordWriter::new(base);
            for o in &objects {
                for (full, authenticated, l) in [true, false]
                    .into_iter()
                    .flat_map(|f| [true, false].map(move |a| (f, a)))
                    .flat_map(|(f, a)| [&none, &stills].map(move |l| (f, a, l)))
                {
                    let images = crate::records::images(l, base);
                    let owned = if full {
                        AnyRecord::Full(DescribeRecord::new(o, base, authenticated, images))
                    } else {
                        AnyRecord::Limited(LimitedRecord::new(o, base, authenticated, images))
                    };
                    let written_images = if l.is_empty() {
                        EMPTY_MAP.to_vec()
                    } else {
                        serde_json::to_vec(&crate::records::images(l, base)).unwrap()
                    };
                    let mut body = b"[".to_vec();
                    let at = writer
                        .write(&mut body, o, full, authenticated, &written_images)
                        .unwrap();
                    assert_eq!(&body[at..at + written_images.len()], &written_images[..]);
                    assert_eq!(
                        String::from_utf8(body[1..].to_vec()).unwrap(),
                        serde_json::to_string(&owned).unwrap(),
                        "{full} {authenticated} {}",
                        l.is_empty()
                    );
                }
            }
        }
    }

    fn catalog_json_matches_under(base: &str, items: &[CatalogItem]) {
        let cursor = PageCursor::at(Timestamp::from_epoch_seconds(7), items[1].object.id());
        let some_images = HashMap::from([
            (
                items[1].object.id(),
                links(&[
                    (ImageSize::Thumbnail, "/m/a/1/s/stills/128x128.jpg"),
                    (ImageSize::Square, "/m/a/1/s/stills/512x512.jpg"),
                    (ImageSize::Large, "/m/a/1/s/stills/1280x760.jpg"),
                ]),
            ),
            (
                items[2].object.id(),
                links(&[(ImageSize::Large, "/m/b/1/\"s\"/x.png")]),
            ),
        ]);
        let no_images = HashMap::new();
        for (complete, n, next, images) in [0, 1, 2, 3, usize::MAX]
            .into_iter()
            .flat_map(|c| [0, 1, 3].map(move |n| (c, n)))
            .flat_map(|(c, n)| [None, Some(cursor)].map(move |next| (c, n, next)))
            .flat_map(|(c, n, next)| [&no_images, &some_images].map(move |i| (c, n, next, i)))
        {
            let owned = CatalogResponse {
                ts: 42,
                list: items[..n]
                    .iter()
                    .enumerate()
                    .map(|(i, item)| {
                        let o = &item.object;
                        let images = images
                            .get(&o.id())
                            .map(|l| crate::records::images(l, base))
                            .unwrap_or_default();
                        if i < complete {
                            AnyRecord::Full(DescribeRecord::new(o, base, true, images))
                        } else {
                            AnyRecord::Limited(LimitedRecord::new(o, base, true, images))
                        }
                    })
                    .collect(),
                next: next.map(|c| c.to_string()),
            };
            let expected = serde_json::to_string(&owned).unwrap();
            let mut writer = CatalogWriter::new(base, complete);
            writer.start(Timestamp::from_epoch_seconds(42), PermissionLevel::View);
            for item in &items[..n] {
                writer.member(item.clone());
            }
            if let Some(c) = next {
                writer.next(c);
            }
            let members: Vec<ObjectId> = writer.members().into_iter().map(|(id, _)| id).collect();
            assert_eq!(
                members,
                items[..n].iter().map(|i| i.object.id()).collect::<Vec<_>>()
            );
            let written = writer.finish(images).unwrap().unwrap();
            assert_eq!(
                String::from_utf8(written).unwrap(),
                expected,
                "{complete} {n} {next:?} {}",
                images.len()
            );
        }
    }
}
