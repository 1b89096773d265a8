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
    /// The identity provider cannot be reached.
    #[error("the identity provider is unavailable: {0}")]
    Unavailable(String),
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
