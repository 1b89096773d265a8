//! The JSON records of the API (spec §2), built from domain values.
//!
//! Booleans are the strings `"true"`/`"false"`; keyed groups are objects (`{}` when empty),
//! lists are arrays (DECISIONS.md §2).

use std::collections::BTreeMap;

use medialib_domain::object::bool_str;
use medialib_domain::{MediaObject, User};
use serde::Serialize;

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
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeRecord {
    /// Object type.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Title.
    pub title: String,
    /// Images.
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
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LimitedRecord {
    /// Object type.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Title.
    pub title: String,
    /// Description.
    pub description: String,
    /// Images.
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
#[derive(Debug, Serialize)]
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
#[derive(Debug, Serialize)]
pub struct UuidBody {
    /// The object's UUID.
    pub uuid: String,
}

/// `{"userId": ...}`, the answer of user POST.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UserIdBody {
    /// The user's id.
    pub user_id: String,
}

/// A permission entry (spec §2.4).
#[derive(Debug, Serialize)]
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
