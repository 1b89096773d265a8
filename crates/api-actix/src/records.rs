//! The JSON records of the API (spec §2), built from domain values.
//!
//! Booleans are the strings `"true"`/`"false"`; keyed groups are objects (`{}` when empty),
//! lists are arrays (DECISIONS.md §2).

mod catalog;

use std::collections::BTreeMap;

use medialib_domain::object::bool_str;
use medialib_domain::{MediaObject, User};
use medialib_ports::services::{ImageLinks, PlayableFile, VideoView};
use serde::Serialize;

pub use catalog::{CatalogResponse, CatalogWriter, EMPTY_MAP, RecordWriter};

/// Image URLs by size (`thumbnail`, `square`, `large`), only the sizes that exist.
pub type Images = BTreeMap<&'static str, String>;

/// `images` from the signed paths the use case minted, as URLs under `base_url`.
pub fn images(links: &ImageLinks, base_url: &str) -> Images {
    links
        .iter()
        .map(|(size, path)| (size.key(), format!("{base_url}{path}")))
        .collect()
}

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

/// `metadata`: `{"duration": SECONDS}` when known (the owned record's, which tests compare
/// [`RecordWriter`]'s bytes with).
#[cfg(test)]
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
///
/// The describe answer's schema. The answer itself is written by [`RecordWriter`], which the
/// tests hold to these records' serialization, so only the tests build them.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
#[cfg_attr(
    not(test),
    expect(dead_code, reason = "the schema; RecordWriter writes the answer")
)]
pub enum AnyRecord {
    /// Complete.
    Full(DescribeRecord),
    /// Limited.
    Limited(LimitedRecord),
}

#[cfg(test)]
impl DescribeRecord {
    /// Builds the complete record.
    pub fn new(o: &MediaObject, base_url: &str, authenticated: bool, images: Images) -> Self {
        let f = o.fields();
        Self {
            kind: o.object_type().as_str(),
            title: f.title.as_str().to_owned(),
            images,
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

#[cfg(test)]
impl LimitedRecord {
    /// Builds the limited record (a public object's: its images are public too).
    pub fn new(o: &MediaObject, base_url: &str, authenticated: bool, images: Images) -> Self {
        let f = o.fields();
        Self {
            kind: o.object_type().as_str(),
            title: f.title.as_str().to_owned(),
            description: f.description.as_str().to_owned(),
            images,
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

/// The video record (spec §2.7): the playable files of a video or an audio recording.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct VideoRecord {
    /// Always `video` (an audio recording's record too).
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
    /// Each MP4 rendition, the HLS master playlist and the SMIL; an audio recording's `.m4a`
    /// (format `mp4`). `[]` until processing made them.
    pub files: Vec<VideoFile>,
}

/// One playable file of a video or audio object.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct VideoFile {
    /// `hls`, `smil` or `mp4`.
    #[schema(example = "mp4")]
    pub format: &'static str,
    /// The file's signed delivery URL.
    pub url: String,
    /// What is known of it; keys without a value are left out (`{}` when none has one).
    pub properties: VideoFileProperties,
}

/// The keyed extras of a video file.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct VideoFileProperties {
    /// The signed URL of the video's WebVTT thumbnail track (its cues name sprite-sheet
    /// regions under the same signed prefix). Absent for an audio recording.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thumbnail: Option<String>,
    /// Pixels (MP4 renditions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    /// Pixels (MP4 renditions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
    /// Bits per second, video and audio together (MP4 renditions, the `.m4a`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bitrate: Option<u32>,
}

impl VideoFile {
    /// A file with its URLs under `base_url`.
    pub fn new(f: &PlayableFile, base_url: &str) -> Self {
        Self {
            format: f.format.as_str(),
            url: format!("{base_url}{}", f.path),
            properties: VideoFileProperties {
                thumbnail: f.thumbnails.as_ref().map(|t| format!("{base_url}{t}")),
                width: f.dimensions.map(|d| d.width()),
                height: f.dimensions.map(|d| d.height()),
                bitrate: f.bitrate,
            },
        }
    }
}

impl VideoRecord {
    /// Builds the record, URLs under `base_url`.
    pub fn new(view: &VideoView, base_url: &str) -> Self {
        Self {
            kind: "video",
            properties: VideoProperties {
                files: view
                    .files
                    .iter()
                    .map(|f| VideoFile::new(f, base_url))
                    .collect(),
            },
            images: images(&view.images, base_url),
            uuid: view.object.id().to_string(),
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
    /// The object's largest still (1280x760), once processing made it: a signed URL that
    /// opens for `media_url_ttl` (a consumer that keeps thumbnails copies it then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thumbnail_url: Option<String>,
    /// The still's width, with `thumbnail_url`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thumbnail_width: Option<u32>,
    /// The still's height, with `thumbnail_url`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thumbnail_height: Option<u32>,
}

impl OEmbedResponse {
    /// Adds the thumbnail: the largest of `images` (a still's size and signed path).
    pub fn with_thumbnail(mut self, images: &ImageLinks, base_url: &str) -> Self {
        if let Some((size, path)) = images.iter().last() {
            let d = size.dimensions();
            self.thumbnail_url = Some(format!("{base_url}{path}"));
            self.thumbnail_width = Some(d.width());
            self.thumbnail_height = Some(d.height());
        }
        self
    }

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
            thumbnail_url: None,
            thumbnail_width: None,
            thumbnail_height: None,
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
