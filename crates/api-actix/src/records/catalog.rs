//! The catalog response (spec §2.9), and the writer that streams it member by member while
//! the listing is read, with records that borrow from each object instead of owning copies.

use std::cell::Cell;
use std::collections::HashMap;

use medialib_domain::object::bool_str;
use medialib_domain::{
    MediaObject, ObjectId, ObjectType, PageCursor, PermissionLevel, Timestamp, UserId,
};
use medialib_ports::CatalogItem;
use medialib_ports::services::{CatalogSink, ImageLinks};
use serde::Serialize;
use serde::ser::SerializeMap as _;

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
/// `images` cannot be read while the listing is (the store is busy handing out members, and
/// one read per member is what must not happen): each member's is written `{}` and its place
/// kept, the caller reads the images of every [`members`](Self::members) at once after the
/// listing, and [`finish`](Self::finish) writes them in.
#[derive(Debug)]
pub struct CatalogWriter<'a> {
    out: Vec<u8>,
    base_url: &'a str,
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

    fn write(&mut self, o: &MediaObject) -> serde_json::Result<()> {
        if self.written > 0 {
            self.out.push(b',');
        }
        let position = Cell::new(self.out.len());
        let images = ImagesAt {
            position: &position,
            start: Cell::new(None),
        };
        let mut out = Tracked {
            out: &mut self.out,
            position: &position,
        };
        let record = FullRef::new(o, self.base_url, true, &images);
        if self.written < self.complete {
            serde_json::to_writer(&mut out, &record)?;
        } else {
            serde_json::to_writer(&mut out, &record.limited())?;
        }
        if let Some(at) = images.start.get() {
            self.slots.push(ImagesSlot {
                at,
                object: o.id(),
                kind: o.object_type(),
            });
        }
        self.written += 1;
        Ok(())
    }
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

/// A member's `images` as first written.
const EMPTY_MAP: &[u8] = b"{}";

/// The body being written, telling `position` how long it is after every write (serde_json
/// writes straight through, so while a value serializes, `position` is where it starts).
struct Tracked<'o, 'p> {
    out: &'o mut Vec<u8>,
    position: &'p Cell<usize>,
}

impl std::io::Write for Tracked<'_, '_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.out.extend_from_slice(buf);
        self.position.set(self.out.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A member's `images` while the listing is read: `{}`, and where it was written.
struct ImagesAt<'p> {
    position: &'p Cell<usize>,
    start: Cell<Option<usize>>,
}

impl Serialize for ImagesAt<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.start.set(Some(self.position.get()));
        serializer.serialize_map(Some(0))?.end()
    }
}

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

/// [`DescribeRecord`](super::DescribeRecord) borrowing from the object (same fields, same order).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FullRef<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    title: &'a str,
    images: &'a ImagesAt<'a>,
    public: &'static str,
    metadata: MetadataRef,
    description: &'a str,
    properties: PropertiesRef<'a>,
    #[serde(serialize_with = "as_display")]
    uuid: ObjectId,
    #[serde(serialize_with = "as_display")]
    user_id: UserId,
    authenticated: &'static str,
    perm_link: PermLinkRef<'a>,
    created: i64,
    modified: i64,
}

impl<'a> FullRef<'a> {
    fn new(
        o: &'a MediaObject,
        base_url: &'a str,
        authenticated: bool,
        images: &'a ImagesAt<'a>,
    ) -> Self {
        let f = o.fields();
        Self {
            kind: o.object_type().as_str(),
            title: f.title.as_str(),
            images,
            public: bool_str(f.public),
            metadata: MetadataRef {
                duration: f.duration.map(|d| d.seconds()),
            },
            description: f.description.as_str(),
            properties: PropertiesRef(o),
            uuid: o.id(),
            user_id: o.owner(),
            authenticated: bool_str(authenticated),
            perm_link: PermLinkRef { base_url, o },
            created: o.created().epoch_seconds(),
            modified: o.modified().epoch_seconds(),
        }
    }
}

/// [`LimitedRecord`](super::LimitedRecord) borrowing from the object (same fields, same order).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LimitedRef<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    title: &'a str,
    description: &'a str,
    images: &'a ImagesAt<'a>,
    public: &'static str,
    #[serde(serialize_with = "as_display")]
    uuid: ObjectId,
    perm_link: PermLinkRef<'a>,
    authenticated: &'static str,
}

impl<'a> FullRef<'a> {
    /// The same member as a limited record, past `completeRecords`.
    fn limited(self) -> LimitedRef<'a> {
        LimitedRef {
            kind: self.kind,
            title: self.title,
            description: self.description,
            images: self.images,
            public: self.public,
            uuid: self.uuid,
            perm_link: self.perm_link,
            authenticated: self.authenticated,
        }
    }
}

fn as_display<T: std::fmt::Display, S: serde::Serializer>(
    value: &T,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

/// `metadata`: `{"duration": SECONDS}` when known, else `{}`.
#[derive(Serialize)]
struct MetadataRef {
    #[serde(skip_serializing_if = "Option::is_none")]
    duration: Option<u32>,
}

/// The object's properties as a JSON object, in key order.
struct PropertiesRef<'a>(&'a MediaObject);

impl Serialize for PropertiesRef<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let props = &self.0.fields().properties;
        let mut map = serializer.serialize_map(Some(props.len()))?;
        for (k, v) in props.iter() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// [`perm_link`](super::perm_link) without building the string first.
struct PermLinkRef<'a> {
    base_url: &'a str,
    o: &'a MediaObject,
}

impl Serialize for PermLinkRef<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&format_args!("{}/w/{}/", self.base_url, self.o.shortcode()))
    }
}

#[cfg(test)]
mod tests {
    use medialib_domain::{
        Description, DurationSecs, NewObject, ObjectFields, ObjectType, OrgNamespace, Properties,
        ShortCode, Title,
    };

    use medialib_domain::media::records::ImageSize;

    use super::*;
    use crate::records::{DescribeRecord, LimitedRecord};

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
        let base = "https://media.example.edu";
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
