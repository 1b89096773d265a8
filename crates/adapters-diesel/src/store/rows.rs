//! Row types and their conversion to domain values through the domain's own constructors.
//! A row that does not parse is reported as `StoreError::Corrupt`, never a panic.

use diesel::prelude::*;
use medialib_domain::oauth::{ClientId, ScopeSet};
use medialib_domain::{
    Description, DurationSecs, GrantId, Lifecycle, MediaObject, ObjectFields, ObjectId, ObjectType,
    PersonName, Properties, ShortCode, StoredObject, Timestamp, Title, TokenDigest, UniqueId, User,
    UserId,
};
use medialib_ports::StoreError;

use crate::schema::{objects, users};

pub(crate) fn corrupt(what: &str, detail: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("{what}: {detail}"))
}

pub(crate) fn object_id(s: &str) -> Result<ObjectId, StoreError> {
    ObjectId::parse(s).map_err(|e| corrupt("object id", e))
}

pub(crate) fn user_id(s: &str) -> Result<UserId, StoreError> {
    UserId::parse(s).map_err(|e| corrupt("user id", e))
}

pub(crate) fn grant_id(s: &str) -> Result<GrantId, StoreError> {
    GrantId::parse(s).map_err(|e| corrupt("grant id", e))
}

pub(crate) fn client_id(s: &str) -> Result<ClientId, StoreError> {
    ClientId::parse(s).map_err(|e| corrupt("client id", e))
}

pub(crate) fn scope(s: &str) -> Result<ScopeSet, StoreError> {
    ScopeSet::parse(s).map_err(|e| corrupt("scope", e))
}

pub(crate) fn digest(s: &str) -> Result<TokenDigest, StoreError> {
    TokenDigest::from_hex(s).map_err(|e| corrupt("digest", e))
}

pub(crate) fn ts(secs: i64) -> Timestamp {
    Timestamp::from_epoch_seconds(secs)
}

/// A `users` row.
#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = users)]
pub(crate) struct UserRow {
    pub id: String,
    pub unique_id: String,
    pub first_name: String,
    pub last_name: String,
    pub org_admin: bool,
    pub created_at: i64,
    pub modified_at: i64,
}

impl UserRow {
    pub(crate) fn from_domain(u: &User, now: Timestamp) -> Self {
        Self {
            id: u.id.to_string(),
            unique_id: u.unique_id.as_str().to_owned(),
            first_name: u.first_name.as_str().to_owned(),
            last_name: u.last_name.as_str().to_owned(),
            org_admin: u.org_admin,
            created_at: now.epoch_seconds(),
            modified_at: now.epoch_seconds(),
        }
    }

    pub(crate) fn into_domain(self) -> Result<User, StoreError> {
        Ok(User {
            id: user_id(&self.id)?,
            unique_id: UniqueId::parse(&self.unique_id).map_err(|e| corrupt("uniqueId", e))?,
            first_name: PersonName::parse(&self.first_name, "firstName")
                .map_err(|e| corrupt("firstName", e))?,
            last_name: PersonName::parse(&self.last_name, "lastName")
                .map_err(|e| corrupt("lastName", e))?,
            org_admin: self.org_admin,
        })
    }
}

/// An `objects` row.
#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = objects)]
pub(crate) struct ObjectRow {
    pub id: String,
    pub object_type: String,
    pub title: String,
    pub description: String,
    pub public: bool,
    pub duration: Option<i64>,
    pub owner_id: String,
    pub shortcode: String,
    pub created_at: i64,
    pub modified_at: i64,
    pub deleted_at: Option<i64>,
}

impl ObjectRow {
    pub(crate) fn from_domain(o: &MediaObject) -> Self {
        let f = o.fields();
        Self {
            id: o.id().to_string(),
            object_type: o.object_type().as_str().to_owned(),
            title: f.title.as_str().to_owned(),
            description: f.description.as_str().to_owned(),
            public: f.public,
            duration: f.duration.map(|d| i64::from(d.seconds())),
            owner_id: o.owner().to_string(),
            shortcode: o.shortcode().as_str().to_owned(),
            created_at: o.created().epoch_seconds(),
            modified_at: o.modified().epoch_seconds(),
            deleted_at: match o.lifecycle() {
                Lifecycle::Live => None,
                Lifecycle::SoftDeleted { at } => Some(at.epoch_seconds()),
            },
        }
    }

    /// Rebuilds the object with its properties (`(key, value)` pairs).
    pub(crate) fn into_domain(
        self,
        properties: Vec<(String, String)>,
    ) -> Result<MediaObject, StoreError> {
        let fields = ObjectFields {
            title: Title::parse_owned(self.title).map_err(|e| corrupt("title", e))?,
            description: Description::parse_owned(self.description)
                .map_err(|e| corrupt("description", e))?,
            public: self.public,
            duration: self
                .duration
                .map(DurationSecs::from_seconds)
                .transpose()
                .map_err(|e| corrupt("duration", e))?,
            properties: Properties::parse(properties).map_err(|e| corrupt("properties", e))?,
        };
        Ok(MediaObject::restore(StoredObject {
            id: object_id(&self.id)?,
            object_type: ObjectType::parse(&self.object_type).map_err(|e| corrupt("type", e))?,
            fields,
            owner: user_id(&self.owner_id)?,
            shortcode: ShortCode::parse_owned(self.shortcode)
                .map_err(|e| corrupt("shortcode", e))?,
            created: ts(self.created_at),
            modified: ts(self.modified_at),
            lifecycle: match self.deleted_at {
                None => Lifecycle::Live,
                Some(at) => Lifecycle::SoftDeleted { at: ts(at) },
            },
        }))
    }
}
