//! The JSON records of the API (spec §2), built from domain values.
//!
//! Booleans are the strings `"true"`/`"false"`; keyed groups are objects (`{}` when empty),
//! lists are arrays (DECISIONS.md §2).

use std::collections::BTreeMap;

use medialib_domain::object::bool_str;
use medialib_domain::{
    MediaObject, ObjectId, PageCursor, PermissionLevel, Timestamp, User, UserId,
};
use medialib_ports::CatalogItem;
use medialib_ports::services::CatalogSink;
use serde::Serialize;
use serde::ser::SerializeMap as _;

/// Image URLs by size (`thumbnail`, `square`, `large`), only the sizes that exist.
pub type Images = BTreeMap<&'static str, String>;

/// The permanent short URL of an object.
pub fn perm_link(base_url: &str, o: &MediaObject) -> String {
    format!("{base_url}/w/{}/", o.shortcode())
}

/// Client-defined properties as a JSON object.
pub fn properties(o: &MediaObject) -> BTreeMap<String, String> {
    o.fields()
        .properties
        .iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// `metadata`: `{"duration": SECONDS}` when known.
pub fn metadata(o: &MediaObject) -> BTreeMap<&'static str, u32> {
    o.fields()
        .duration
        .map(|d| ("duration", d.seconds()))
        .into_iter()
        .collect()
}

/// The complete describe record (spec §2.2).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DescribeRecord {
    /// Object type.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Title.
    pub title: String,
    /// Image URLs by size (`thumbnail`, `square`, `large`), only those that exist.
    #[schema(value_type = BTreeMap<String, String>)]
    pub images: Images,
    /// `"true"`/`"false"`.
    pub public: &'static str,
    /// Metadata.
    pub metadata: BTreeMap<&'static str, u32>,
    /// Description.
    pub description: String,
    /// Properties.
    pub properties: BTreeMap<String, String>,
    /// UUID.
    pub uuid: String,
    /// The creating user.
    pub user_id: String,
    /// Whether the caller is authenticated.
    pub authenticated: &'static str,
    /// Permanent short URL.
    pub perm_link: String,
    /// Epoch seconds.
    pub created: i64,
    /// Epoch seconds.
    pub modified: i64,
}

/// The limited describe record for callers without `view` (DECISIONS.md §3).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LimitedRecord {
    /// Object type.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Title.
    pub title: String,
    /// Description.
    pub description: String,
    /// Image URLs by size (`thumbnail`, `square`, `large`), only those that exist.
    #[schema(value_type = BTreeMap<String, String>)]
    pub images: Images,
    /// `"true"`/`"false"`.
    pub public: &'static str,
    /// UUID.
    pub uuid: String,
    /// Permanent short URL.
    pub perm_link: String,
    /// Whether the caller is authenticated.
    pub authenticated: &'static str,
}

/// Either describe record.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum AnyRecord {
    /// Complete.
    Full(DescribeRecord),
    /// Limited.
    Limited(LimitedRecord),
}

impl DescribeRecord {
    /// Builds the complete record.
    pub fn new(o: &MediaObject, base_url: &str, authenticated: bool) -> Self {
        let f = o.fields();
        Self {
            kind: o.object_type().as_str(),
            title: f.title.as_str().to_owned(),
            images: Images::new(),
            public: bool_str(f.public),
            metadata: metadata(o),
            description: f.description.as_str().to_owned(),
            properties: properties(o),
            uuid: o.id().to_string(),
            user_id: o.owner().to_string(),
            authenticated: bool_str(authenticated),
            perm_link: perm_link(base_url, o),
            created: o.created().epoch_seconds(),
            modified: o.modified().epoch_seconds(),
        }
    }
}

impl LimitedRecord {
    /// Builds the limited record.
    pub fn new(o: &MediaObject, base_url: &str, authenticated: bool) -> Self {
        let f = o.fields();
        Self {
            kind: o.object_type().as_str(),
            title: f.title.as_str().to_owned(),
            description: f.description.as_str().to_owned(),
            images: Images::new(),
            public: bool_str(f.public),
            uuid: o.id().to_string(),
            perm_link: perm_link(base_url, o),
            authenticated: bool_str(authenticated),
        }
    }
}

/// `{"uuid": ...}`, the answer of describe PUT/POST.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct UuidBody {
    /// The object's UUID.
    pub uuid: String,
}

/// `{"userId": ...}`, the answer of user POST.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserIdBody {
    /// The user's id.
    pub user_id: String,
}

/// A permission entry (spec §2.4).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRecord {
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
    /// User id.
    pub user_id: String,
    /// SSO unique id.
    pub unique_id: String,
    /// `none`, `view` or `admin`.
    pub level: &'static str,
}

impl PermissionRecord {
    /// Builds an entry.
    pub fn new(u: &User, level: medialib_domain::PermissionLevel) -> Self {
        Self {
            first_name: u.first_name.as_str().to_owned(),
            last_name: u.last_name.as_str().to_owned(),
            user_id: u.id.to_string(),
            unique_id: u.unique_id.as_str().to_owned(),
            level: level.as_str(),
        }
    }
}

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

/// [`DescribeRecord`] borrowing from the object (same fields, same order).
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

/// [`LimitedRecord`] borrowing from the object (same fields, same order).
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

/// [`perm_link`] without building the string first.
struct PermLinkRef<'a> {
    base_url: &'a str,
    o: &'a MediaObject,
}

impl Serialize for PermLinkRef<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&format_args!("{}/w/{}/", self.base_url, self.o.shortcode()))
    }
}

/// Width of the embedded player in CSS pixels, unless a consumer asks for less (16:9).
pub const PLAYER_WIDTH: u32 = 640;

/// Height of the embedded player in CSS pixels, unless a consumer asks for less (16:9).
pub const PLAYER_HEIGHT: u32 = 360;

/// The embed record (spec §2.6).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EmbedRecord {
    /// Always `embed`.
    #[serde(rename = "type")]
    #[schema(example = "embed")]
    pub kind: &'static str,
    /// The embed codes.
    pub properties: EmbedProperties,
}

/// The embed codes of an object.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EmbedProperties {
    /// The object's permLink.
    pub link: String,
    /// HTML: an `<iframe>` showing the player page `{base}/embed/{shortcode}`.
    pub iframe: String,
    /// HTML: a `<script>` that inserts that iframe next to itself.
    pub script: String,
}

impl EmbedRecord {
    /// Builds the record.
    pub fn new(o: &MediaObject, base_url: &str) -> Self {
        let script_src = escape_html(&format!("{}.js", embed_url(base_url, o)));
        Self {
            kind: "embed",
            properties: EmbedProperties {
                link: perm_link(base_url, o),
                iframe: iframe_html(base_url, o, PLAYER_WIDTH, PLAYER_HEIGHT),
                script: format!(r#"<script src="{script_src}"></script>"#),
            },
        }
    }
}

/// The player page meant for iframes.
pub fn embed_url(base_url: &str, o: &MediaObject) -> String {
    format!("{base_url}/embed/{}", o.shortcode())
}

/// The `<iframe>` embed code of an object, attribute values HTML-escaped.
pub fn iframe_html(base_url: &str, o: &MediaObject, width: u32, height: u32) -> String {
    format!(
        r#"<iframe src="{src}" width="{width}" height="{height}" title="{title}" allow="fullscreen" allowfullscreen></iframe>"#,
        src = escape_html(&embed_url(base_url, o)),
        title = escape_html(o.fields().title.as_str()),
    )
}

/// Escapes text for an HTML attribute value or element content.
fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The video record (spec §2.7).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct VideoRecord {
    /// Always `video`.
    #[serde(rename = "type")]
    #[schema(example = "video")]
    pub kind: &'static str,
    /// The playable files.
    pub properties: VideoProperties,
    /// Image URLs by size (`thumbnail`, `square`, `large`), only those that exist.
    #[schema(value_type = BTreeMap<String, String>)]
    pub images: Images,
    /// The object's UUID.
    pub uuid: String,
}

/// The files of a video record.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct VideoProperties {
    /// The files, `[]` while none are stored.
    pub files: Vec<VideoFile>,
}

/// One playable file of a video or audio object.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct VideoFile {
    /// `hls`, `smil` or `mp4`.
    #[schema(example = "mp4")]
    pub format: &'static str,
    /// The file's URL.
    pub url: String,
    /// Keyed extras, e.g. `thumbnail`: a WebVTT thumbnail track URL.
    pub properties: BTreeMap<String, String>,
}

impl VideoFile {
    /// The playable files of an object. No media files are stored yet (upload and
    /// transcoding are not built), so this is always empty (docs/decisions.md).
    pub fn of(_object: &MediaObject) -> Vec<Self> {
        Vec::new()
    }
}

impl VideoRecord {
    /// Builds the record.
    pub fn new(o: &MediaObject) -> Self {
        Self {
            kind: "video",
            properties: VideoProperties {
                files: VideoFile::of(o),
            },
            images: Images::new(),
            uuid: o.id().to_string(),
        }
    }
}

/// An oEmbed 1.0 response (`GET /api/oembed`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct OEmbedResponse {
    /// Always `1.0`.
    #[schema(example = "1.0")]
    pub version: &'static str,
    /// `video` for video objects, `rich` for the others.
    #[serde(rename = "type")]
    #[schema(example = "video")]
    pub kind: &'static str,
    /// The object's title.
    pub title: String,
    /// Always `medialib`.
    #[schema(example = "medialib")]
    pub provider_name: &'static str,
    /// The service's base URL.
    pub provider_url: String,
    /// The `<iframe>` embed code.
    pub html: String,
    /// Width of `html` in pixels.
    pub width: u32,
    /// Height of `html` in pixels.
    pub height: u32,
}

impl OEmbedResponse {
    /// Builds the response for a player of `width` x `height`.
    pub fn new(o: &MediaObject, base_url: &str, width: u32, height: u32) -> Self {
        let kind = if o.object_type() == medialib_domain::ObjectType::Video {
            "video"
        } else {
            "rich"
        };
        Self {
            version: "1.0",
            kind,
            title: o.fields().title.as_str().to_owned(),
            provider_name: "medialib",
            provider_url: base_url.to_owned(),
            html: iframe_html(base_url, o, width, height),
            width,
            height,
        }
    }
}

/// A user record (spec §2.3): names always; `userId` and `uniqueId` only for the user
/// itself or an admin of the collection the user is read through.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserRecord {
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
    /// User id (self or collection admin only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// SSO unique id (self or collection admin only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unique_id: Option<String>,
}

impl UserRecord {
    /// Builds the record with the fields `visibility` allows.
    pub fn new(u: &User, visibility: medialib_domain::projection::UserFieldVisibility) -> Self {
        let ids = visibility.identifiers;
        Self {
            first_name: u.first_name.as_str().to_owned(),
            last_name: u.last_name.as_str().to_owned(),
            user_id: ids.then(|| u.id.to_string()),
            unique_id: ids.then(|| u.unique_id.as_str().to_owned()),
        }
    }
}

/// The owner inside an info record.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OwnerRecord {
    /// The owner's user id.
    pub user_id: String,
    /// First name (blank if unknown).
    pub first_name: String,
    /// Last name (blank if unknown).
    pub last_name: String,
}

/// The info record (spec §2.5).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InfoRecord {
    /// Always `"info"`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The owner.
    pub owner: OwnerRecord,
    /// Title.
    pub title: String,
    /// Description.
    pub description: String,
    /// Epoch seconds.
    pub created: i64,
    /// Epoch seconds.
    pub modified: i64,
    /// Properties.
    pub properties: BTreeMap<String, String>,
    /// UUID.
    pub uuid: String,
    /// The object type (`catalog`, `video`, `audio`, `image`, `file`).
    pub file_type: &'static str,
    /// Seconds, `null` when unknown.
    pub duration: Option<u32>,
}

impl InfoRecord {
    /// Builds the record; `owner` is `None` only if the owner's row is gone.
    pub fn new(o: &MediaObject, owner: Option<&User>) -> Self {
        let f = o.fields();
        Self {
            kind: "info",
            owner: OwnerRecord {
                user_id: o.owner().to_string(),
                first_name: owner
                    .map(|u| u.first_name.as_str().to_owned())
                    .unwrap_or_default(),
                last_name: owner
                    .map(|u| u.last_name.as_str().to_owned())
                    .unwrap_or_default(),
            },
            title: f.title.as_str().to_owned(),
            description: f.description.as_str().to_owned(),
            created: o.created().epoch_seconds(),
            modified: o.modified().epoch_seconds(),
            properties: properties(o),
            uuid: o.id().to_string(),
            file_type: o.object_type().as_str(),
            duration: f.duration.map(|d| d.seconds()),
        }
    }
}

/// A contribute entry (spec §2.10): a library the caller administers.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ContributeEntry {
    /// The library's UUID.
    pub uuid: String,
    /// The library's title.
    pub title: String,
    /// `"true"` when the object is a direct member of the library.
    pub member: &'static str,
}

impl ContributeEntry {
    /// Builds an entry.
    pub fn new(library: &MediaObject, member: bool) -> Self {
        Self {
            uuid: library.id().to_string(),
            title: library.fields().title.as_str().to_owned(),
            member: bool_str(member),
        }
    }
}

#[cfg(test)]
mod tests {
    use medialib_domain::{
        Description, DurationSecs, NewObject, ObjectFields, ObjectType, OrgNamespace, Properties,
        ShortCode, Title,
    };

    use super::*;

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
