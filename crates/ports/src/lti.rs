//! What LTI needs from storage (DECISIONS.md §8): the registered LTI 1.1 consumers, the
//! nonces their launches used, and the library of each course.

use medialib_domain::lti::CourseKey;
use medialib_domain::lti::v1p3::{DeepLinkingResponse, IdToken, Platform};
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

/// One of medialib's own RSA keys for signing LTI 1.3 messages.
#[derive(Clone, PartialEq, Eq)]
pub struct ToolKey {
    /// Its key id, published in the JWKS and named in what it signs.
    pub kid: String,
    /// The private key, PKCS#8 PEM.
    pub private_key: Secret,
    /// When it was made: the newest signs.
    pub created_at: Timestamp,
}

impl std::fmt::Debug for ToolKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolKey")
            .field("kid", &self.kid)
            .field("created_at", &self.created_at)
            .finish_non_exhaustive()
    }
}

/// An LTI 1.3 login begun and waiting for its launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingLogin {
    /// The `state` sent to the platform (and back with the launch).
    pub state: String,
    /// The `nonce` the launch's id_token must carry.
    pub nonce: String,
    /// The platform's issuer.
    pub issuer: String,
    /// The platform's client id for medialib.
    pub client_id: String,
    /// When it lapses.
    pub expires_at: Timestamp,
}

/// The public half of one of medialib's keys, as a JSON Web Key (RFC 7517, RSA).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicJwk {
    /// Its key id.
    pub kid: String,
    /// The modulus, base64url without padding.
    pub n: String,
    /// The public exponent, base64url without padding.
    pub e: String,
}

/// Why a launch's id_token was not read: it is not a token of the platform's keys.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdTokenRefusal {
    /// Not a compact JWS of JSON claims.
    #[error("the id_token is not a signed JWT: {0}")]
    Malformed(String),
    /// Signed with another algorithm than RS256 (or not signed).
    #[error("the id_token must be signed with RS256, not {0}")]
    Algorithm(String),
    /// Its `kid` is not in the platform's key set, even fetched again.
    #[error("the platform's key set has no key `{0}`")]
    UnknownKey(String),
    /// The signature does not hold.
    #[error("the id_token's signature does not hold")]
    BadSignature,
    /// The platform's key set could not be fetched or read.
    #[error("the platform's key set could not be fetched: {0}")]
    KeysUnavailable(String),
}

/// A key could not be made or used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("LTI key: {0}")]
pub struct KeyError(pub String);

/// The cryptography and the platform's keys LTI 1.3 needs: medialib's RSA keys, the RS256
/// signature of what it sends, and the check of a platform's id_token against the keys the
/// platform publishes (fetched and cached by `kid`).
pub trait LtiTokens: Send + Sync {
    /// A new RSA private key, PKCS#8 PEM.
    fn generate_key(&self) -> Result<Secret, KeyError>;
    /// The public half of `key`.
    fn public_jwk(&self, key: &ToolKey) -> Result<PublicJwk, KeyError>;
    /// `response`'s claims as a JWT signed with `key` (RS256, its `kid` in the header).
    fn sign(&self, key: &ToolKey, response: &DeepLinkingResponse) -> Result<String, KeyError>;
    /// The claims of `id_token` after its RS256 signature held against a key of
    /// `platform.jwks_url`; the claims themselves are checked by the caller.
    fn read_id_token(&self, platform: &Platform, id_token: &str)
    -> Result<IdToken, IdTokenRefusal>;
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
    /// Stores a new signing key and deletes all but the newest `keep` (by `created_at`, then
    /// `kid`).
    fn add_lti_key(&self, key: &ToolKey, keep: usize) -> Result<(), StoreError>;
    /// The signing keys, newest first.
    fn lti_keys(&self) -> Result<Vec<ToolKey>, StoreError>;
    /// Stores a login begun; forgets the logins that lapsed before `now` first.
    fn begin_lti_login(&self, login: &PendingLogin, now: Timestamp) -> Result<(), StoreError>;
    /// Takes the login with `state` (no later call finds it): `None` when there is none or it
    /// lapsed before `now`. Of two concurrent calls with one state, at most one gets it.
    fn take_lti_login(
        &self,
        state: &str,
        now: Timestamp,
    ) -> Result<Option<PendingLogin>, StoreError>;
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

/// No LTI 1.3 cryptography: every call fails, saying so.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoLtiTokens;

const NO_LTI_TOKENS: &str = "LTI 1.3 is not set up in this process";

impl LtiTokens for NoLtiTokens {
    fn generate_key(&self) -> Result<Secret, KeyError> {
        Err(KeyError(NO_LTI_TOKENS.into()))
    }
    fn public_jwk(&self, _: &ToolKey) -> Result<PublicJwk, KeyError> {
        Err(KeyError(NO_LTI_TOKENS.into()))
    }
    fn sign(&self, _: &ToolKey, _: &DeepLinkingResponse) -> Result<String, KeyError> {
        Err(KeyError(NO_LTI_TOKENS.into()))
    }
    fn read_id_token(&self, _: &Platform, _: &str) -> Result<IdToken, IdTokenRefusal> {
        Err(IdTokenRefusal::KeysUnavailable(NO_LTI_TOKENS.into()))
    }
}
