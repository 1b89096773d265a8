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

impl SsoProvider for NoSso {}

/// How the organization signs people in: the domain's type, as the provider reports it
/// ([`SsoProvider::method`]): the password form ([`Credentials::Password`]), a redirect to
/// the identity provider and back to `{base_url}/api/sso/oidc/callback`
/// ([`SsoProvider::begin_redirect`], [`SsoProvider::finish_redirect`]), or an authenticating
/// reverse proxy's header ([`Credentials::ProxyHeader`]).
pub use medialib_domain::sign_in::SignInMethod;

/// What a redirect-based sign-in keeps server-side between sending the browser to the
/// identity provider and its return (single use, short-lived).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingSignIn {
    /// The `state` sent to the provider (looked up by its digest when the browser returns).
    pub state: Secret,
    /// The OpenID Connect `nonce` the ID token must carry.
    pub nonce: Secret,
    /// The PKCE code verifier for the provider's token endpoint.
    pub pkce_verifier: Secret,
}

/// A started redirect-based sign-in.
#[derive(Debug, Clone)]
pub struct RedirectStart {
    /// Where to send the browser (the provider's authorization endpoint with its query).
    pub url: String,
    /// What to keep until the browser returns.
    pub pending: PendingSignIn,
}

/// What the identity provider's callback brought (its query parameters).
#[derive(Debug, Clone, Copy, Default)]
pub struct RedirectCallback<'a> {
    /// `code`, on success.
    pub code: Option<&'a str>,
    /// `error`, when the provider refused or the user cancelled.
    pub error: Option<&'a str>,
    /// `error_description`.
    pub error_description: Option<&'a str>,
}

/// The organization's single sign-on (implemented in `adapters-sso`).
pub trait SsoProvider: Send + Sync {
    /// How the pages sign a browser in with this provider.
    fn method(&self) -> SignInMethod {
        SignInMethod::PasswordForm
    }

    /// Checks credentials and says who they belong to. A provider that takes none (it
    /// redirects, or none is configured) refuses every one as `Unsupported`.
    fn authenticate(
        &self,
        _credentials: Credentials<'_>,
        _now: Timestamp,
    ) -> Result<SsoIdentity, SsoError> {
        Err(SsoError::Unsupported)
    }

    /// Starts a redirect-based sign-in: the provider's URL and what to keep meanwhile.
    fn begin_redirect(&self, _now: Timestamp) -> Result<RedirectStart, SsoError> {
        Err(SsoError::Unsupported)
    }

    /// Finishes a redirect-based sign-in from the provider's callback and what was kept.
    fn finish_redirect(
        &self,
        _callback: RedirectCallback<'_>,
        _pending: &PendingSignIn,
        _now: Timestamp,
    ) -> Result<SsoIdentity, SsoError> {
        Err(SsoError::Unsupported)
    }
}
