//! The authorization request: validation, and its two exits (approve, deny).

use std::fmt;

use super::client::Client;
use super::error::OAuthErrorCode;
use super::pkce::CodeChallenge;
use super::redirect::RedirectUri;
use super::scope::ScopeSet;
use super::tokens::IssuedCode;
use crate::ids::UserId;
use crate::secret::{Secret, TokenDigest};
use crate::time::{Lifetime, Timestamp};

/// The raw query of `GET /api/oauth/authorize`.
#[derive(Debug, Clone, Copy, Default)]
pub struct AuthorizeParams<'a> {
    /// Must be `code`.
    pub response_type: Option<&'a str>,
    /// The client.
    pub client_id: Option<&'a str>,
    /// Must match a registered URI.
    pub redirect_uri: Option<&'a str>,
    /// The client's CSRF value, echoed back.
    pub state: Option<&'a str>,
    /// `read`, `write` or both; default both.
    pub scope: Option<&'a str>,
    /// `offline` asks for a refresh token; `online` or absent does not.
    pub access_type: Option<&'a str>,
    /// PKCE challenge.
    pub code_challenge: Option<&'a str>,
    /// PKCE method, must be `S256`.
    pub code_challenge_method: Option<&'a str>,
    /// The first parameter the request carried more than once, if any (RFC 6749 §3.1: a
    /// parameter must not be repeated).
    pub repeated: Option<&'a str>,
}

/// The client's `state`: 1..=512 characters of `%x20-7E` (RFC 6749 VSCHAR).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthState(String);

impl OAuthState {
    /// Parses a state value.
    pub fn parse(input: &str) -> Option<Self> {
        let ok =
            (1..=512).contains(&input.len()) && input.bytes().all(|b| (0x20..=0x7e).contains(&b));
        ok.then(|| Self(input.to_owned()))
    }

    /// The value.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The authorization server's issuer identifier (its base URL), sent as `iss` (RFC 9207).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issuer(String);

impl Issuer {
    /// Wraps the configured base URL (a trailing slash is dropped).
    pub fn new(base_url: &str) -> Self {
        Self(base_url.trim_end_matches('/').to_owned())
    }
    /// The issuer.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Why the request gets an error page instead of a redirect (never an open redirector).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ErrorPage {
    /// No `client_id`.
    #[error("the request names no client")]
    MissingClient,
    /// `client_id` is not registered.
    #[error("the client is not registered")]
    UnknownClient,
    /// No `redirect_uri`.
    #[error("the request names no redirect_uri")]
    MissingRedirectUri,
    /// `redirect_uri` is malformed or not registered for this client.
    #[error("the redirect_uri is not registered for this client")]
    UnregisteredRedirectUri,
    /// `client_id` was sent more than once: which client is meant cannot be told.
    #[error("client_id must not be repeated")]
    RepeatedClient,
    /// `redirect_uri` was sent more than once: where to send the answer cannot be told.
    #[error("redirect_uri must not be repeated")]
    RepeatedRedirectUri,
}

/// A response sent back to the client's redirect URI (success or error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizationResponse {
    redirect_uri: RedirectUri,
    params: Vec<(&'static str, String)>,
}

impl AuthorizationResponse {
    fn error(
        redirect_uri: RedirectUri,
        code: OAuthErrorCode,
        description: &str,
        state: Option<&OAuthState>,
        issuer: &Issuer,
    ) -> Self {
        let mut params = vec![
            ("error", code.as_str().to_owned()),
            ("error_description", description.to_owned()),
        ];
        if let Some(s) = state {
            params.push(("state", s.as_str().to_owned()));
        }
        params.push(("iss", issuer.as_str().to_owned()));
        Self {
            redirect_uri,
            params,
        }
    }

    /// The query parameters, in order.
    pub fn params(&self) -> &[(&'static str, String)] {
        &self.params
    }

    /// The value of one parameter.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The `Location` to redirect the browser to.
    pub fn location(&self) -> String {
        let base = self.redirect_uri.as_str();
        let mut out = String::with_capacity(base.len() + 128);
        out.push_str(base);
        let mut sep = if base.contains('?') { '&' } else { '?' };
        for (k, v) in &self.params {
            out.push(sep);
            out.push_str(k);
            out.push('=');
            percent_encode_into(v, &mut out);
            sep = '&';
        }
        out
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
fn percent_encode_into(value: &str, out: &mut String) {
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(b"0123456789ABCDEF"[usize::from(b >> 4)]));
            out.push(char::from(b"0123456789ABCDEF"[usize::from(b & 15)]));
        }
    }
}

/// Why an authorization request is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthorizeRejection {
    /// Show an error page (the client or redirect URI cannot be trusted).
    ErrorPage(ErrorPage),
    /// Redirect to the client with an error.
    Redirect(AuthorizationResponse),
}

/// A validated authorization request, waiting for the user's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizationRequest {
    client: Client,
    redirect_uri: RedirectUri,
    state: OAuthState,
    scope: ScopeSet,
    offline: bool,
    challenge: Option<CodeChallenge>,
}

/// Validates the query of the authorize endpoint against the registered client.
///
/// `client` is the registration found for `client_id`, if any.
pub fn validate_authorization_request(
    params: &AuthorizeParams<'_>,
    client: Option<&Client>,
    issuer: &Issuer,
) -> Result<AuthorizationRequest, AuthorizeRejection> {
    use AuthorizeRejection::{ErrorPage as Page, Redirect};
    use OAuthErrorCode as E;

    match params.repeated {
        Some("client_id") => return Err(Page(ErrorPage::RepeatedClient)),
        Some("redirect_uri") => return Err(Page(ErrorPage::RepeatedRedirectUri)),
        _ => {}
    }
    if params.client_id.is_none() {
        return Err(Page(ErrorPage::MissingClient));
    }
    let client = client.ok_or(Page(ErrorPage::UnknownClient))?;
    let requested = params
        .redirect_uri
        .ok_or(Page(ErrorPage::MissingRedirectUri))?;
    let requested =
        RedirectUri::parse(requested).map_err(|_| Page(ErrorPage::UnregisteredRedirectUri))?;
    if client.registered_redirect(&requested).is_none() {
        return Err(Page(ErrorPage::UnregisteredRedirectUri));
    }
    // From here on the redirect URI is trusted: errors go back to the client.
    let fail = |code, description: &str, state: Option<&OAuthState>| {
        Redirect(AuthorizationResponse::error(
            requested.clone(),
            code,
            description,
            state,
            issuer,
        ))
    };
    if let Some(name) = params.repeated {
        // The state is echoed when it is itself single and well formed.
        let state = params
            .state
            .filter(|_| name != "state")
            .and_then(OAuthState::parse);
        let description = format!("{name} must not be repeated");
        return Err(fail(E::InvalidRequest, &description, state.as_ref()));
    }
    let state = match params.state.map(OAuthState::parse) {
        Some(Some(s)) => s,
        Some(None) => {
            return Err(fail(
                E::InvalidRequest,
                "state must be 1 to 512 visible ASCII characters",
                None,
            ));
        }
        None => return Err(fail(E::InvalidRequest, "state is required", None)),
    };
    let st = Some(&state);
    match params.response_type {
        Some("code") => {}
        Some(_) => {
            return Err(fail(
                E::UnsupportedResponseType,
                "only response_type=code is supported",
                st,
            ));
        }
        None => return Err(fail(E::InvalidRequest, "response_type is required", st)),
    }
    let scope = ScopeSet::parse_or_default(params.scope)
        .map_err(|e| fail(E::InvalidScope, &e.to_string(), st))?;
    let offline = match params.access_type {
        None | Some("online") => false,
        Some("offline") => true,
        Some(_) => {
            return Err(fail(
                E::InvalidRequest,
                "access_type must be online or offline",
                st,
            ));
        }
    };
    let challenge = match (params.code_challenge, params.code_challenge_method) {
        (Some(c), m) => Some(
            CodeChallenge::parse(c, m).map_err(|e| fail(E::InvalidRequest, &e.to_string(), st))?,
        ),
        (None, Some(_)) => {
            return Err(fail(
                E::InvalidRequest,
                "code_challenge_method without code_challenge",
                st,
            ));
        }
        (None, None) => None,
    };
    if challenge.is_none() && client.is_public() {
        return Err(fail(
            E::InvalidRequest,
            "PKCE (code_challenge with S256) is required for public clients",
            st,
        ));
    }
    Ok(AuthorizationRequest {
        client: client.clone(),
        redirect_uri: requested,
        state,
        scope,
        offline,
        challenge,
    })
}

impl AuthorizationRequest {
    /// The client asking.
    pub fn client(&self) -> &Client {
        &self.client
    }
    /// The scopes asked for.
    pub fn scope(&self) -> ScopeSet {
        self.scope
    }
    /// Whether offline access (a refresh token) is asked for.
    pub fn offline_requested(&self) -> bool {
        self.offline
    }
    /// The validated redirect URI.
    pub fn redirect_uri(&self) -> &RedirectUri {
        &self.redirect_uri
    }
    /// The client's state.
    pub fn state(&self) -> &OAuthState {
        &self.state
    }

    /// The user approved: a code is issued (to be stored by digest) and the browser redirected.
    ///
    /// `code` is a freshly minted code secret and its digest.
    pub fn approve(
        self,
        user: UserId,
        code: (Secret, TokenDigest),
        now: Timestamp,
        code_ttl: Lifetime,
        issuer: &Issuer,
    ) -> (IssuedCode, AuthorizationResponse) {
        let (secret, digest) = code;
        let issued = IssuedCode {
            digest,
            client: self.client.id().clone(),
            redirect_uri: self.redirect_uri.clone(),
            user,
            scope: self.scope,
            offline: self.offline,
            challenge: self.challenge,
            expires_at: now.plus(code_ttl),
        };
        let response = AuthorizationResponse {
            redirect_uri: self.redirect_uri,
            params: vec![
                ("code", secret.expose().to_owned()),
                ("state", self.state.0),
                ("iss", issuer.as_str().to_owned()),
            ],
        };
        (issued, response)
    }

    /// The user denied: the browser goes back with `access_denied`.
    pub fn deny(self, issuer: &Issuer) -> AuthorizationResponse {
        AuthorizationResponse::error(
            self.redirect_uri,
            OAuthErrorCode::AccessDenied,
            "the user denied the request",
            Some(&self.state),
            issuer,
        )
    }

    /// The request cannot go on (the sign-in failed or was cancelled, or the identity
    /// provider is down): the browser goes back with `code` (`access_denied`, `server_error`,
    /// ...), `error_description`, `state` and `iss`.
    pub fn fail(
        self,
        code: OAuthErrorCode,
        description: &str,
        issuer: &Issuer,
    ) -> AuthorizationResponse {
        AuthorizationResponse::error(
            self.redirect_uri,
            code,
            description,
            Some(&self.state),
            issuer,
        )
    }
}

impl fmt::Display for OAuthState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
