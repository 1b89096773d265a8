//! Media objects: their type, visibility, permLink shortcode and update rules.

use std::fmt;

use crate::ids::{ObjectId, UserId};
use crate::text::{Description, InvalidProperties, InvalidText, Properties, Title};
use crate::time::{DurationSecs, InvalidDuration, Timestamp};

/// The kind of a media object, fixed at creation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectType {
    /// A collection (media library).
    Catalog,
    /// A video.
    Video,
    /// An audio recording.
    Audio,
    /// An image.
    Image,
    /// Any other file.
    File,
}

/// An object type the service does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("type must be one of catalog, video, audio, image, file")]
pub struct UnknownObjectType;

impl ObjectType {
    /// Every type, in a stable order.
    pub const ALL: [ObjectType; 5] = [
        Self::Catalog,
        Self::Video,
        Self::Audio,
        Self::Image,
        Self::File,
    ];

    /// Parses the wire name (exact, lowercase).
    pub fn parse(input: &str) -> Result<Self, UnknownObjectType> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str() == input)
            .ok_or(UnknownObjectType)
    }

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Catalog => "catalog",
            Self::Video => "video",
            Self::Audio => "audio",
            Self::Image => "image",
            Self::File => "file",
        }
    }

    /// Whether objects of this type can hold members.
    pub const fn is_collection(self) -> bool {
        matches!(self, Self::Catalog)
    }
}

impl fmt::Display for ObjectType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A boolean form field that is not `true`/`false` (any case).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} must be true or false")]
pub struct InvalidBool {
    field: &'static str,
}

/// Parses a boolean input field: `true`/`false` in any case; anything else names the field.
pub fn parse_bool(input: &str, field: &'static str) -> Result<bool, InvalidBool> {
    if input.eq_ignore_ascii_case("true") {
        Ok(true)
    } else if input.eq_ignore_ascii_case("false") {
        Ok(false)
    } else {
        Err(InvalidBool { field })
    }
}

/// Renders a boolean the way the API does: the strings `"true"` / `"false"`.
pub const fn bool_str(value: bool) -> &'static str {
    if value { "true" } else { "false" }
}

/// The permanent short code of an object's permLink: 10 base62 characters.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShortCode(String);

/// A text that is not a shortcode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a shortcode is 10 letters or digits")]
pub struct InvalidShortCode;

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

impl ShortCode {
    /// Length in characters.
    pub const LEN: usize = 10;

    /// Makes a shortcode from 16 random bytes (bias is below 2^-60).
    pub fn from_random(random: [u8; 16]) -> Self {
        let mut n = u128::from_le_bytes(random);
        let mut s = String::with_capacity(Self::LEN);
        for _ in 0..Self::LEN {
            let digit = (n % 62) as usize;
            n /= 62;
            s.push(char::from(BASE62[digit]));
        }
        Self(s)
    }

    fn check(input: &str) -> Result<(), InvalidShortCode> {
        if input.len() == Self::LEN && input.bytes().all(|b| b.is_ascii_alphanumeric()) {
            Ok(())
        } else {
            Err(InvalidShortCode)
        }
    }

    /// The code.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

crate::text::parse_by_check!(
    ShortCode,
    InvalidShortCode,
    "Parses a stored or requested shortcode."
);

impl fmt::Debug for ShortCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ShortCode({})", self.0)
    }
}

impl fmt::Display for ShortCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where an object is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifecycle {
    /// Visible through its collections.
    Live,
    /// Its last membership was removed at this time; kept 30 days for restore, purged after.
    SoftDeleted {
        /// When the last membership went.
        at: Timestamp,
    },
}

/// How long a soft-deleted object is kept before it is purged, in seconds (30 days).
pub const SOFT_DELETE_RETENTION_SECS: i64 = 30 * 24 * 3600;

/// The editable description of an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectFields {
    /// Title.
    pub title: Title,
    /// Description.
    pub description: Description,
    /// Whether unauthenticated callers may see the limited record.
    pub public: bool,
    /// Duration of the media, when known.
    pub duration: Option<DurationSecs>,
    /// Client-defined properties.
    pub properties: Properties,
}

/// A media object as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaObject {
    id: ObjectId,
    object_type: ObjectType,
    fields: ObjectFields,
    owner: UserId,
    shortcode: ShortCode,
    created: Timestamp,
    modified: Timestamp,
    lifecycle: Lifecycle,
}

/// Everything needed to rebuild a stored object (adapters use this, through [`MediaObject::restore`]).
#[derive(Debug, Clone)]
pub struct StoredObject {
    /// Id.
    pub id: ObjectId,
    /// Type.
    pub object_type: ObjectType,
    /// Editable fields.
    pub fields: ObjectFields,
    /// Creating user.
    pub owner: UserId,
    /// permLink code.
    pub shortcode: ShortCode,
    /// Created.
    pub created: Timestamp,
    /// Last modified.
    pub modified: Timestamp,
    /// Live or soft-deleted.
    pub lifecycle: Lifecycle,
}

/// A request to create an object (describe PUT).
#[derive(Debug, Clone)]
pub struct NewObject {
    /// Type, fixed from now on.
    pub object_type: ObjectType,
    /// Initial fields (`public` defaults to false).
    pub fields: ObjectFields,
}

/// A describe PUT names no `type`: an object's type is chosen once, at creation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("type is required")]
pub struct TypeRequired;

impl NewObject {
    /// A new object from the fields a creation names: `type` is required; a field left
    /// out starts empty (`public` false, no duration, no properties).
    pub fn from_patch(patch: ObjectPatch) -> Result<Self, TypeRequired> {
        Ok(Self {
            object_type: patch.object_type.ok_or(TypeRequired)?,
            fields: ObjectFields {
                title: patch.title.unwrap_or_default(),
                description: patch.description.unwrap_or_default(),
                public: patch.public.unwrap_or(false),
                duration: patch.duration,
                properties: patch.properties.unwrap_or_default(),
            },
        })
    }
}

/// A partial update (describe POST, info POST): only the named fields change.
#[derive(Debug, Clone, Default)]
pub struct ObjectPatch {
    /// The type the caller names; must equal the stored type when given.
    pub object_type: Option<ObjectType>,
    /// New title.
    pub title: Option<Title>,
    /// New description.
    pub description: Option<Description>,
    /// New visibility.
    pub public: Option<bool>,
    /// New duration.
    pub duration: Option<DurationSecs>,
    /// Properties to set (merged over the stored ones).
    pub properties: Option<Properties>,
}

/// A field of an object form that does not parse; the message is the field's own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidField {
    /// `type`.
    #[error(transparent)]
    Type(#[from] UnknownObjectType),
    /// `title` or `description`.
    #[error(transparent)]
    Text(#[from] InvalidText),
    /// `public`.
    #[error(transparent)]
    Public(#[from] InvalidBool),
    /// `duration`.
    #[error(transparent)]
    Duration(#[from] InvalidDuration),
    /// `properties[KEY]`.
    #[error(transparent)]
    Properties(#[from] InvalidProperties),
}

impl ObjectPatch {
    /// Reads an object form (describe PUT/POST), given as `(name, value)` pairs in arrival
    /// order: `type`, `title`, `description`, `public` and `duration`, the last value of a
    /// repeated name winning, and `properties[KEY]`. Other names are ignored; absent fields
    /// stay `None`, and `properties` is `Some` once any name starts with `properties[`.
    /// Errors are checked in the order properties, type, title, description, public, duration.
    pub fn from_fields<K: AsRef<str>, V: AsRef<str>>(
        fields: &[(K, V)],
    ) -> Result<Self, InvalidField> {
        let last = |name: &str| {
            fields
                .iter()
                .rev()
                .find(|(k, _)| k.as_ref() == name)
                .map(|(_, v)| v.as_ref())
        };
        let properties = if fields
            .iter()
            .any(|(k, _)| k.as_ref().starts_with("properties["))
        {
            Some(Properties::parse(fields.iter().filter_map(|(k, v)| {
                let key = k.as_ref().strip_prefix("properties[")?.strip_suffix(']')?;
                Some((key, v.as_ref()))
            }))?)
        } else {
            None
        };
        Ok(Self {
            object_type: last("type").map(ObjectType::parse).transpose()?,
            title: last("title").map(Title::parse).transpose()?,
            description: last("description").map(Description::parse).transpose()?,
            public: last("public")
                .map(|v| parse_bool(v, "public"))
                .transpose()?,
            duration: last("duration").map(DurationSecs::parse).transpose()?,
            properties,
        })
    }
}

/// Why an update is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpdateError {
    /// `type` is fixed at creation.
    #[error("type is {stored} and cannot be changed to {requested}")]
    TypeChange {
        /// Stored type.
        stored: ObjectType,
        /// Requested type.
        requested: ObjectType,
    },
    /// The merged properties break a limit.
    #[error(transparent)]
    Properties(#[from] crate::text::InvalidProperties),
}

impl MediaObject {
    /// Creates a new live object.
    pub fn create(
        id: ObjectId,
        new: NewObject,
        owner: UserId,
        shortcode: ShortCode,
        now: Timestamp,
    ) -> Self {
        Self {
            id,
            object_type: new.object_type,
            fields: new.fields,
            owner,
            shortcode,
            created: now,
            modified: now,
            lifecycle: Lifecycle::Live,
        }
    }

    /// Rebuilds a stored object.
    pub fn restore(stored: StoredObject) -> Self {
        Self {
            id: stored.id,
            object_type: stored.object_type,
            fields: stored.fields,
            owner: stored.owner,
            shortcode: stored.shortcode,
            created: stored.created,
            modified: stored.modified,
            lifecycle: stored.lifecycle,
        }
    }

    /// Applies a patch; the type may be named but never changed.
    pub fn apply(mut self, patch: ObjectPatch, now: Timestamp) -> Result<Self, UpdateError> {
        if let Some(requested) = patch.object_type {
            if requested != self.object_type {
                return Err(UpdateError::TypeChange {
                    stored: self.object_type,
                    requested,
                });
            }
        }
        if let Some(t) = patch.title {
            self.fields.title = t;
        }
        if let Some(d) = patch.description {
            self.fields.description = d;
        }
        if let Some(p) = patch.public {
            self.fields.public = p;
        }
        if let Some(d) = patch.duration {
            self.fields.duration = Some(d);
        }
        if let Some(p) = patch.properties {
            self.fields.properties = std::mem::take(&mut self.fields.properties).merged(p)?;
        }
        self.modified = self.modified.max(now);
        Ok(self)
    }

    /// Marks the object changed (e.g. when a member is added to a collection).
    pub fn touched(mut self, now: Timestamp) -> Self {
        self.modified = self.modified.max(now);
        self
    }

    /// Soft-deletes the object (its last membership went).
    pub fn soft_deleted(mut self, now: Timestamp) -> Self {
        self.lifecycle = Lifecycle::SoftDeleted { at: now };
        self.modified = self.modified.max(now);
        self
    }

    /// Brings a soft-deleted object back.
    pub fn restored(mut self, now: Timestamp) -> Self {
        self.lifecycle = Lifecycle::Live;
        self.modified = self.modified.max(now);
        self
    }

    /// Id.
    pub fn id(&self) -> ObjectId {
        self.id
    }

    /// The order in which libraries are offered to a person (contribute, the home page): by
    /// title (Unicode code points), then id.
    pub fn by_title(a: &Self, b: &Self) -> std::cmp::Ordering {
        a.fields
            .title
            .as_str()
            .cmp(b.fields.title.as_str())
            .then_with(|| a.id.cmp(&b.id))
    }
    /// Type.
    pub fn object_type(&self) -> ObjectType {
        self.object_type
    }
    /// Editable fields.
    pub fn fields(&self) -> &ObjectFields {
        &self.fields
    }
    /// Creating user.
    pub fn owner(&self) -> UserId {
        self.owner
    }
    /// permLink code.
    pub fn shortcode(&self) -> &ShortCode {
        &self.shortcode
    }
    /// Creation time.
    pub fn created(&self) -> Timestamp {
        self.created
    }
    /// Last change.
    pub fn modified(&self) -> Timestamp {
        self.modified
    }
    /// Live or soft-deleted.
    pub fn lifecycle(&self) -> Lifecycle {
        self.lifecycle
    }
    /// Whether the object is public.
    pub fn is_public(&self) -> bool {
        self.fields.public
    }
}

/// What removing a membership does to the member object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterRemoval {
    /// Still a member elsewhere: nothing else happens.
    StillListed,
    /// That was its last membership: it is soft-deleted.
    SoftDelete,
}

/// Decides the member's fate from how many memberships remain after a removal.
///
/// A top-level library (one that was never in a collection) is deleted through its
/// own path, not through this rule.
pub fn after_membership_removed(remaining_memberships: usize) -> AfterRemoval {
    if remaining_memberships == 0 {
        AfterRemoval::SoftDelete
    } else {
        AfterRemoval::StillListed
    }
}

/// Whether a soft-deleted object is due for purging at `now`.
pub fn purge_due(lifecycle: Lifecycle, now: Timestamp) -> bool {
    match lifecycle {
        Lifecycle::Live => false,
        Lifecycle::SoftDeleted { at } => {
            now.epoch_seconds() - at.epoch_seconds() >= SOFT_DELETE_RETENTION_SECS
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::OrgNamespace;

    fn sample(t: ObjectType) -> MediaObject {
        let ns = OrgNamespace::from_random([1; 16]);
        MediaObject::create(
            ObjectId::generate(&ns, [2; 16]),
            NewObject {
                object_type: t,
                fields: ObjectFields {
                    title: Title::parse("t").unwrap(),
                    description: Description::default(),
                    public: false,
                    duration: None,
                    properties: Properties::parse([("a", "1")]).unwrap(),
                },
            },
            UserId::generate(&ns, [3; 16]),
            ShortCode::from_random([4; 16]),
            Timestamp::from_epoch_seconds(100),
        )
    }

    #[test]
    fn types_parse_exactly() {
        for t in ObjectType::ALL {
            assert_eq!(ObjectType::parse(t.as_str()), Ok(t));
        }
        assert!(ObjectType::parse("Video").is_err());
        assert!(ObjectType::parse("folder").is_err());
        assert!(ObjectType::Catalog.is_collection());
        assert!(!ObjectType::Video.is_collection());
    }

    #[test]
    fn booleans_accept_any_case_and_name_the_field() {
        assert_eq!(parse_bool("TRUE", "public"), Ok(true));
        assert_eq!(parse_bool("False", "public"), Ok(false));
        let e = parse_bool("1", "public").unwrap_err();
        assert_eq!(e.to_string(), "public must be true or false");
        assert_eq!(bool_str(true), "true");
    }

    #[test]
    fn shortcodes_are_ten_base62_characters() {
        let s = ShortCode::from_random([0xff; 16]);
        assert_eq!(s.as_str().len(), 10);
        assert_eq!(ShortCode::parse(s.as_str()), Ok(s.clone()));
        assert_ne!(s, ShortCode::from_random([0xfe; 16]));
        for bad in ["", "abc", "../../etc", "abcdefghi!", "abcdefghijk"] {
            assert!(ShortCode::parse(bad).is_err(), "{bad}");
            assert!(ShortCode::parse_owned(bad.to_owned()).is_err(), "{bad}");
        }
        assert_eq!(ShortCode::parse_owned(s.as_str().to_owned()), Ok(s.clone()));
    }

    #[test]
    fn type_cannot_change_but_may_be_restated() {
        let o = sample(ObjectType::Video);
        let same = ObjectPatch {
            object_type: Some(ObjectType::Video),
            title: Some(Title::parse("new").unwrap()),
            ..ObjectPatch::default()
        };
        let o2 = o
            .clone()
            .apply(same, Timestamp::from_epoch_seconds(200))
            .unwrap();
        assert_eq!(o2.fields().title.as_str(), "new");
        assert_eq!(o2.modified(), Timestamp::from_epoch_seconds(200));
        let change = ObjectPatch {
            object_type: Some(ObjectType::Audio),
            ..ObjectPatch::default()
        };
        assert_eq!(
            o.apply(change, Timestamp::from_epoch_seconds(200)),
            Err(UpdateError::TypeChange {
                stored: ObjectType::Video,
                requested: ObjectType::Audio
            })
        );
    }

    #[test]
    fn patch_changes_only_named_fields_and_merges_properties() {
        let o = sample(ObjectType::File);
        let patch = ObjectPatch {
            public: Some(true),
            properties: Some(Properties::parse([("b", "2")]).unwrap()),
            ..ObjectPatch::default()
        };
        let o = o.apply(patch, Timestamp::from_epoch_seconds(150)).unwrap();
        assert!(o.is_public());
        assert_eq!(o.fields().title.as_str(), "t");
        assert_eq!(o.fields().properties.len(), 2);
    }

    #[test]
    fn forms_become_patches() {
        let f = |pairs: &[(&str, &str)]| ObjectPatch::from_fields(pairs);
        let p = f(&[
            ("type", "video"),
            ("title", "a"),
            ("title", "b"),
            ("public", "TRUE"),
            ("duration", "7"),
            ("properties[k]", "1"),
            ("properties[k]", "2"),
            ("unknown", "x"),
        ])
        .unwrap();
        assert_eq!(p.object_type, Some(ObjectType::Video));
        assert_eq!(p.title.unwrap().as_str(), "b", "the last value wins");
        assert_eq!(p.public, Some(true));
        assert_eq!(p.duration.map(DurationSecs::seconds), Some(7));
        let props = p.properties.unwrap();
        assert_eq!(props.iter().collect::<Vec<_>>(), vec![("k", "2")]);
        assert!(p.description.is_none());
        let none = f(&[]).unwrap();
        assert!(none.properties.is_none() && none.title.is_none());
        // A name that opens `properties[` without closing it names no key, yet counts.
        assert_eq!(
            f(&[("properties[k", "v")]).unwrap().properties,
            Some(Properties::empty())
        );
    }

    #[test]
    fn form_errors_name_the_field_in_a_fixed_order() {
        let f = |pairs: &[(&str, &str)]| ObjectPatch::from_fields(pairs).unwrap_err().to_string();
        assert_eq!(f(&[("public", "yes")]), "public must be true or false");
        assert_eq!(
            f(&[("title", &"é".repeat(256)), ("type", "folder")]),
            "type must be one of catalog, video, audio, image, file"
        );
        assert_eq!(
            f(&[("type", "folder"), ("properties[]", "v")]),
            "property key \"\" must be 1 to 64 characters without control characters"
        );
        assert!(f(&[("duration", "-1")]).starts_with("duration must be"));
    }

    #[test]
    fn modified_never_goes_backwards() {
        let o = sample(ObjectType::File).touched(Timestamp::from_epoch_seconds(50));
        assert_eq!(o.modified(), Timestamp::from_epoch_seconds(100));
    }

    #[test]
    fn last_membership_soft_deletes_and_purge_waits_30_days() {
        assert_eq!(after_membership_removed(0), AfterRemoval::SoftDelete);
        assert_eq!(after_membership_removed(1), AfterRemoval::StillListed);
        let o = sample(ObjectType::Video).soft_deleted(Timestamp::from_epoch_seconds(1000));
        let l = o.lifecycle();
        assert!(!purge_due(
            l,
            Timestamp::from_epoch_seconds(1000 + SOFT_DELETE_RETENTION_SECS - 1)
        ));
        assert!(purge_due(
            l,
            Timestamp::from_epoch_seconds(1000 + SOFT_DELETE_RETENTION_SECS)
        ));
        assert!(!purge_due(
            Lifecycle::Live,
            Timestamp::from_epoch_seconds(i64::MAX)
        ));
        assert_eq!(
            o.restored(Timestamp::from_epoch_seconds(1001)).lifecycle(),
            Lifecycle::Live
        );
    }
}
