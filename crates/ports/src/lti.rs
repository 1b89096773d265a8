//! What LTI needs from storage (DECISIONS.md §8): the registered LTI 1.1 consumers, the
//! nonces their launches used, and the library of each course.

use medialib_domain::lti::CourseKey;
use medialib_domain::lti::v1p3::Platform;
use medialib_domain::{MediaObject, ObjectId, Secret, Timestamp, UserId};

use crate::error::StoreError;
use crate::repos::CreateObjectError;

/// A registered LTI 1.1 consumer (an LMS that signs launches with OAuth 1.0a).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LtiConsumer {
    /// The consumer key (`oauth_consumer_key`), generated at registration.
    pub key: String,
    /// The operator's name for it (`medialib lti consumer add --name`).
    pub name: String,
    /// The shared secret. HMAC needs it whole, so it is stored as it is (as every LMS stores
    /// it); the database is the secret's only copy besides the platform's.
    pub secret: Secret,
    /// When it was registered.
    pub created_at: Timestamp,
}

/// Why a consumer could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddConsumerError {
    /// A consumer with this key exists.
    #[error("a consumer with this key exists")]
    KeyTaken,
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why a platform could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddPlatformError {
    /// A platform with this issuer and client id exists.
    #[error("a platform with this issuer and client id is registered")]
    Exists,
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A course's library: found, or made by this call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CourseLibrary {
    /// The course had a library already (another launch may have made it a moment ago).
    Existing(ObjectId),
    /// This call made it.
    Created(ObjectId),
}

impl CourseLibrary {
    /// The library, either way.
    pub fn id(self) -> ObjectId {
        match self {
            Self::Existing(id) | Self::Created(id) => id,
        }
    }
}

/// A launch's nonce, to be remembered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsedNonce<'a> {
    /// The consumer that signed the launch.
    pub consumer: &'a str,
    /// Its `oauth_nonce`.
    pub nonce: &'a str,
    /// Until when it must be remembered.
    pub kept_until: Timestamp,
}

/// Storage for LTI.
pub trait LtiRepository: Send + Sync {
    /// Registers a consumer.
    fn add_lti_consumer(&self, consumer: &LtiConsumer) -> Result<(), AddConsumerError>;
    /// The consumer with key `key`.
    fn lti_consumer(&self, key: &str) -> Result<Option<LtiConsumer>, StoreError>;
    /// Every consumer, by key.
    fn lti_consumers(&self) -> Result<Vec<LtiConsumer>, StoreError>;
    /// Removes the consumer with key `key` (its nonces go with it; its courses' libraries
    /// stay, as libraries); `false` when there was none.
    fn remove_lti_consumer(&self, key: &str) -> Result<bool, StoreError>;
    /// Records that `used.consumer` used `used.nonce`, to be remembered until `used.kept_until`: `false`
    /// (and nothing written) when the pair is remembered already, which makes the launch a
    /// replay. Of two concurrent calls with one pair, exactly one gets `true`. Forgets the
    /// consumer's nonces whose time has passed `now` first.
    fn use_lti_nonce(&self, used: UsedNonce<'_>, now: Timestamp) -> Result<bool, StoreError>;
    /// Registers an LTI 1.3 platform with its deployments, in one step.
    fn add_lti_platform(&self, platform: &Platform, now: Timestamp)
    -> Result<(), AddPlatformError>;
    /// The platforms registered with `issuer`, one per client id, by client id.
    fn lti_platforms_of(&self, issuer: &str) -> Result<Vec<Platform>, StoreError>;
    /// Every platform, by issuer and client id.
    fn lti_platforms(&self) -> Result<Vec<Platform>, StoreError>;
    /// Removes a platform and its deployments (its courses' libraries stay); `false` when
    /// there was none.
    fn remove_lti_platform(&self, issuer: &str, client_id: &str) -> Result<bool, StoreError>;
    /// The live library of course `course`, if it has one.
    fn course_library(&self, course: &CourseKey) -> Result<Option<ObjectId>, StoreError>;
    /// The library of `course`: the one it has, or `library` stored now as a top-level
    /// library with `admin` as its admin and recorded as the course's, in one step. Of two
    /// concurrent first launches, one creates and the other gets `Existing`.
    fn create_course_library(
        &self,
        course: &CourseKey,
        library: &MediaObject,
        admin: UserId,
    ) -> Result<CourseLibrary, CreateObjectError>;
}
