//! The catalog response (spec §2.9), and the writer that streams it member by member while
//! the listing is read, with records that borrow from each object instead of owning copies.

use medialib_domain::object::bool_str;
use medialib_domain::{MediaObject, ObjectId, PageCursor, PermissionLevel, Timestamp, UserId};
use medialib_ports::CatalogItem;
use medialib_ports::services::CatalogSink;
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
#[derive(Debug)]
pub struct CatalogWriter<'a> {
    out: Vec<u8>,
    base_url: &'a str,
    complete: usize,
    written: usize,
    next: Option<PageCursor>,
    failed: Option<serde_json::Error>,
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
        }
    }

    /// The JSON body, or the first serialization error (none is expected: every key is a
    /// string). `None` when the listing never started (it was refused).
    pub fn finish(mut self) -> Option<serde_json::Result<Vec<u8>>> {
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
        Some(Ok(self.out))
    }

    fn write(&mut self, o: &MediaObject) -> serde_json::Result<()> {
        if self.written > 0 {
            self.out.push(b',');
        }
        if self.written < self.complete {
            serde_json::to_writer(&mut self.out, &FullRef::new(o, self.base_url, true))?;
        } else {
            serde_json::to_writer(&mut self.out, &LimitedRef::new(o, self.base_url, true))?;
        }
        self.written += 1;
        Ok(())
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
    images: EmptyMap,
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
    fn new(o: &'a MediaObject, base_url: &'a str, authenticated: bool) -> Self {
        let f = o.fields();
        Self {
            kind: o.object_type().as_str(),
            title: f.title.as_str(),
            images: EmptyMap,
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
    images: EmptyMap,
    public: &'static str,
    #[serde(serialize_with = "as_display")]
    uuid: ObjectId,
    perm_link: PermLinkRef<'a>,
    authenticated: &'static str,
}

impl<'a> LimitedRef<'a> {
    fn new(o: &'a MediaObject, base_url: &'a str, authenticated: bool) -> Self {
        let f = o.fields();
        Self {
            kind: o.object_type().as_str(),
            title: f.title.as_str(),
            description: f.description.as_str(),
            images: EmptyMap,
            public: bool_str(f.public),
            uuid: o.id(),
            perm_link: PermLinkRef { base_url, o },
            authenticated: bool_str(authenticated),
        }
    }
}

fn as_display<T: std::fmt::Display, S: serde::Serializer>(
    value: &T,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

/// `{}` (no image is stored yet).
struct EmptyMap;

impl Serialize for EmptyMap {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_map(Some(0))?.end()
    }
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
        assert!(CatalogWriter::new("https://x", 1).finish().is_none());
    }

    /// The member-by-member writer answers exactly what the owned records serialize to.
    #[test]
    fn catalog_json_matches_the_owned_records() {
        let items: Vec<CatalogItem> = [
            object(1, "Plain", &[], None),
            object(
                2,
                "Quotes \" and \\ and </script> é 🎬",
                &[("course", "C1"), ("a", "é\t")],
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
        for (complete, n, next) in [0, 1, 2, 3, usize::MAX]
            .into_iter()
            .flat_map(|c| [0, 1, 3].map(move |n| (c, n)))
            .flat_map(|(c, n)| [None, Some(cursor)].map(move |next| (c, n, next)))
        {
            {
                let owned = CatalogResponse {
                    ts: 42,
                    list: items[..n]
                        .iter()
                        .enumerate()
                        .map(|(i, item)| {
                            if i < complete {
                                AnyRecord::Full(DescribeRecord::new(&item.object, base, true))
                            } else {
                                AnyRecord::Limited(LimitedRecord::new(&item.object, base, true))
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
                let written = writer.finish().unwrap().unwrap();
                assert_eq!(
                    String::from_utf8(written).unwrap(),
                    expected,
                    "{complete} {n} {next:?}"
                );
            }
        }
    }
}
