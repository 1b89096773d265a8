//! Single sign-on: how a browser user proves who they are.

use medialib_domain::{PersonName, Secret, Timestamp, UniqueId};

/// What the organization's SSO says about a signed-in person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SsoIdentity {
    /// The user's uniqueId.
    pub unique_id: UniqueId,
    /// First name, when the IdP tells.
    pub first_name: Option<PersonName>,
    /// Last name, when the IdP tells.
    pub last_name: Option<PersonName>,
}

/// What the browser brought to prove an identity.
#[derive(Debug, Clone, Copy)]
pub enum Credentials<'a> {
    /// The local directory's login form.
    Password {
        /// The uniqueId typed as "username".
        username: &'a str,
        /// The password.
        password: &'a Secret,
    },
    /// A header set by an authenticating reverse proxy.
    ProxyHeader {
        /// The header's value.
        value: &'a str,
        /// Whether the request came from a configured proxy address.
        from_trusted_proxy: bool,
    },
}

/// Why sign-in failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SsoError {
    /// Wrong username or password, or an untrusted header.
    #[error("invalid credentials")]
    InvalidCredentials,
    /// This provider does not take these credentials.
    #[error("this sign-in method is not enabled")]
    Unsupported,
    /// The identity provider (or the directory's storage) cannot be reached.
    #[error("the identity provider is unavailable: {0}")]
    Unavailable(String),
}

/// A password hash as the `local` directory stores it: an argon2id PHC string
/// (`$argon2id$v=19$m=...`). Not secret in the way a password is, but never logged.
#[derive(Clone, PartialEq, Eq)]
pub struct PasswordHash(String);

impl PasswordHash {
    /// Wraps a PHC string (made or checked by the adapter that owns the algorithm).
    pub fn new(phc: impl Into<String>) -> Self {
        Self(phc.into())
    }

    /// The PHC string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for PasswordHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PasswordHash([redacted])")
    }
}

/// The provider used when none is configured: every sign-in is `Unsupported`.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSso;

impl SsoProvider for NoSso {
    fn authenticate(
        &self,
        _credentials: Credentials<'_>,
        _now: Timestamp,
    ) -> Result<SsoIdentity, SsoError> {
        Err(SsoError::Unsupported)
    }
}

/// The organization's single sign-on (implemented in `adapters-sso`).
pub trait SsoProvider: Send + Sync {
    /// Checks credentials and says who they belong to.
    fn authenticate(
        &self,
        credentials: Credentials<'_>,
        now: Timestamp,
    ) -> Result<SsoIdentity, SsoError>;
}
