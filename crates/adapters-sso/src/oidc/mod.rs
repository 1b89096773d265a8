//! `oidc`: an OpenID Connect relying party (DECISIONS.md §6) built on the `openidconnect`
//! crate.
//!
//! - **Discovery, lazily.** The provider's metadata (`{issuer}/.well-known/openid-configuration`)
//!   and its key set (JWKS) are fetched on the first sign-in, not at startup, so medialib starts
//!   while the identity provider is down. They are kept for [`METADATA_TTL_SECONDS`] and fetched
//!   again when they are older, or at once when an ID token names a key the cached set lacks
//!   (the provider rotated its keys).
//! - **Authorization request.** Code flow with PKCE (S256), a fresh `state` and `nonce`,
//!   scopes `openid profile`, and the redirect URI `{base_url}/api/sso/oidc/callback`
//!   ([`CALLBACK_PATH`]). The `state`, `nonce` and PKCE verifier go back to the caller, which
//!   keeps them server-side until the browser returns.
//! - **Callback.** The code is exchanged at the token endpoint with `client_secret_basic`
//!   (or `client_secret_post` when the provider's metadata offers only that; a public client
//!   without a secret sends just its id). The ID token is checked by the crate's verifier:
//!   signature against the provider's keys and the algorithms it announces, `iss`, `aud`,
//!   `exp` and `iat` with the configured clock skew, and the `nonce`.
//! - **Identity.** The uniqueId is `sub` or the configured claim; the names are `given_name`
//!   and `family_name`. Each is read from the ID token, and from the userinfo endpoint when the
//!   ID token lacks it (many providers put profile claims only there).
//! - **Errors.** An unreachable or broken provider is [`SsoError::Unavailable`]; a refused or
//!   cancelled sign-in, a code the provider rejects, or an ID token that fails a check is
//!   [`SsoError::InvalidCredentials`]. Reasons are logged; tokens, codes and secrets never are.

mod claims;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, OnceLock};

use claims::{Found, id_token_claim, identity};

use medialib_domain::{Secret, Timestamp};
use medialib_ports::{
    PendingSignIn, RedirectCallback, RedirectStart, SignInMethod, SsoError, SsoIdentity,
    SsoProvider,
};
use openidconnect::core::{
    CoreAuthDisplay, CoreAuthPrompt, CoreAuthenticationFlow, CoreClientAuthMethod,
    CoreErrorResponseType, CoreGenderClaim, CoreJsonWebKey, CoreJweContentEncryptionAlgorithm,
    CoreJwsSigningAlgorithm, CoreProviderMetadata, CoreRevocableToken, CoreRevocationErrorResponse,
    CoreTokenIntrospectionResponse, CoreTokenType,
};
use openidconnect::{
    AdditionalClaims, AuthType, AuthorizationCode, ClaimsVerificationError, Client, ClientId,
    ClientSecret, CsrfToken, EmptyExtraTokenFields, EndpointMaybeSet, EndpointNotSet, EndpointSet,
    HttpClientError, IdTokenClaims, IdTokenFields, IdTokenVerifier, IssuerUrl, Nonce,
    OAuth2TokenResponse as _, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, RequestTokenError,
    Scope, SignatureVerificationError, StandardErrorResponse, StandardTokenResponse,
    TokenResponse as _,
};
use rand::TryRngCore as _;
use rand::rngs::OsRng;
use serde::{Deserialize, Serialize};

/// Where the identity provider sends the browser back, under medialib's base URL.
pub const CALLBACK_PATH: &str = "/api/sso/oidc/callback";

/// How long the discovered metadata and keys are used before they are fetched again.
pub const METADATA_TTL_SECONDS: i64 = 600;

/// The default allowed clock skew between medialib and the identity provider (seconds).
pub const DEFAULT_CLOCK_SKEW_SECONDS: u32 = 60;

/// The most characters of a provider's `error_description` that are logged.
const LOGGED_DESCRIPTION_CHARS: usize = 200;
/// The most characters of a provider's `error` that are logged (it comes from the browser).
const LOGGED_ERROR_CHARS: usize = 64;

/// Claims beyond the standard ones (for a configured uniqueId claim such as `employee_id`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
struct ExtraClaims {
    #[serde(flatten)]
    other: HashMap<String, serde_json::Value>,
}

impl AdditionalClaims for ExtraClaims {}

type OidcTokenResponse = StandardTokenResponse<
    IdTokenFields<
        ExtraClaims,
        EmptyExtraTokenFields,
        CoreGenderClaim,
        CoreJweContentEncryptionAlgorithm,
        CoreJwsSigningAlgorithm,
    >,
    CoreTokenType,
>;

/// The client as built from discovery: authorization endpoint set; token and userinfo
/// endpoints as the metadata says.
type OidcClient = Client<
    ExtraClaims,
    CoreAuthDisplay,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJsonWebKey,
    CoreAuthPrompt,
    StandardErrorResponse<CoreErrorResponseType>,
    OidcTokenResponse,
    CoreTokenIntrospectionResponse,
    CoreRevocableToken,
    CoreRevocationErrorResponse,
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

type TokenError = RequestTokenError<
    HttpClientError<reqwest::Error>,
    StandardErrorResponse<CoreErrorResponseType>,
>;

/// medialib's registration at the identity provider.
#[derive(Clone)]
pub struct OidcConfig {
    /// The issuer URL, compared verbatim with the metadata's `issuer` and the ID token's `iss`.
    pub issuer: String,
    /// medialib's client id at the provider (the ID token's `aud` must name it).
    pub client_id: String,
    /// medialib's client secret; `None` for a public client.
    pub client_secret: Option<Secret>,
    /// The claim that becomes the user's uniqueId (`sub` by default).
    pub unique_id_claim: String,
    /// medialib's public base URL; the redirect URI is this plus [`CALLBACK_PATH`].
    pub base_url: String,
    /// How far the provider's clock may be off, for `exp` and `iat` (seconds).
    pub clock_skew_seconds: u32,
}

impl fmt::Debug for OidcConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OidcConfig")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[redacted]"),
            )
            .field("unique_id_claim", &self.unique_id_claim)
            .field("base_url", &self.base_url)
            .field("clock_skew_seconds", &self.clock_skew_seconds)
            .finish()
    }
}

/// The configuration cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OidcConfigError {
    /// The issuer is not a URL.
    #[error("oidc_issuer `{0}` is not a URL")]
    Issuer(String),
    /// The redirect URI built from the base URL is not a URL.
    #[error("the redirect URI `{0}` is not a URL")]
    RedirectUri(String),
}

/// What discovery found, and when.
#[derive(Clone)]
struct Discovered {
    metadata: CoreProviderMetadata,
    fetched_at: Timestamp,
}

/// The `oidc` SSO provider: sends browsers to the organization's OpenID Connect provider and
/// checks what they bring back.
pub struct OidcProvider {
    config: OidcConfig,
    issuer: IssuerUrl,
    redirect_uri: RedirectUrl,
    /// Built on first use, on a blocking thread (reqwest's blocking client must not be made
    /// on an async worker).
    http: OnceLock<Result<reqwest::blocking::Client, String>>,
    discovered: Mutex<Option<Discovered>>,
}

impl fmt::Debug for OidcProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OidcProvider")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl OidcProvider {
    /// A provider for `config`. Contacts nobody: discovery happens on first use.
    pub fn new(config: OidcConfig) -> Result<Self, OidcConfigError> {
        let issuer = IssuerUrl::new(config.issuer.clone())
            .map_err(|_| OidcConfigError::Issuer(config.issuer.clone()))?;
        let redirect = format!("{}{CALLBACK_PATH}", config.base_url.trim_end_matches('/'));
        let redirect_uri = RedirectUrl::new(redirect.clone())
            .map_err(|_| OidcConfigError::RedirectUri(redirect))?;
        Ok(Self {
            config,
            issuer,
            redirect_uri,
            http: OnceLock::new(),
            discovered: Mutex::new(None),
        })
    }

    /// The redirect URI to register at the identity provider.
    pub fn redirect_uri(&self) -> &str {
        self.redirect_uri.as_str()
    }

    /// The HTTP client for the provider: no redirects followed (SSRF), bounded timeouts.
    fn http(&self) -> Result<&reqwest::blocking::Client, SsoError> {
        self.http
            .get_or_init(crate::http::client)
            .as_ref()
            .map_err(|e| {
                tracing::error!(error = %e, "cannot build the HTTP client for OpenID Connect");
                SsoError::Unavailable(format!("cannot build the HTTP client: {e}"))
            })
    }

    /// The provider's metadata and keys: cached ones younger than [`METADATA_TTL_SECONDS`]
    /// unless `refresh`, else discovered now.
    fn metadata(&self, now: Timestamp, refresh: bool) -> Result<CoreProviderMetadata, SsoError> {
        let mut cache = self
            .discovered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(d) = cache.as_ref() {
            let age = now
                .epoch_seconds()
                .saturating_sub(d.fetched_at.epoch_seconds());
            if !refresh && (0..METADATA_TTL_SECONDS).contains(&age) {
                return Ok(d.metadata.clone());
            }
        }
        let http = self.http()?;
        match CoreProviderMetadata::discover(&self.issuer, http) {
            Ok(metadata) => {
                tracing::info!(
                    issuer = %self.config.issuer,
                    keys = metadata.jwks().keys().len(),
                    "discovered the OpenID Connect provider"
                );
                *cache = Some(Discovered {
                    metadata: metadata.clone(),
                    fetched_at: now,
                });
                Ok(metadata)
            }
            Err(e) => {
                tracing::warn!(
                    issuer = %self.config.issuer,
                    error = %error_chain(&e),
                    "OpenID Connect discovery failed"
                );
                Err(SsoError::Unavailable(format!(
                    "the identity provider's discovery document or keys cannot be fetched: {e}"
                )))
            }
        }
    }

    /// A client for the discovered provider.
    fn client(&self, metadata: CoreProviderMetadata) -> OidcClient {
        let auth_type = auth_type(&metadata);
        OidcClient::from_provider_metadata(
            metadata,
            ClientId::new(self.config.client_id.clone()),
            self.config
                .client_secret
                .as_ref()
                .map(|s| ClientSecret::new(s.expose().to_owned())),
        )
        .set_redirect_uri(self.redirect_uri.clone())
        .set_auth_type(auth_type)
    }

    /// The ID-token verifier: the client's keys, algorithms, issuer and audience, with the
    /// time checks done at `now` give or take the configured skew.
    fn verifier<'c>(
        &self,
        client: &'c OidcClient,
        now: Timestamp,
    ) -> Result<IdTokenVerifier<'c, CoreJsonWebKey>, SsoError> {
        let now = chrono::DateTime::from_timestamp(now.epoch_seconds(), 0)
            .ok_or_else(|| SsoError::Unavailable("the clock is out of range".into()))?;
        let skew = chrono::TimeDelta::seconds(i64::from(self.config.clock_skew_seconds));
        let latest_issue = now + skew;
        Ok(client
            .id_token_verifier()
            // `exp` must be after this: expired tokens are accepted for `skew` more seconds.
            .set_time_fn(move || now - skew)
            .set_issue_time_verifier_fn(move |iat| {
                if iat > latest_issue {
                    Err(format!("the ID token is issued in the future ({iat})"))
                } else {
                    Ok(())
                }
            }))
    }

    /// Exchanges `code` and checks the ID token: its claims, and the access token for userinfo.
    fn exchange(
        &self,
        code: &str,
        pending: &PendingSignIn,
        now: Timestamp,
    ) -> Result<
        (
            IdTokenClaims<ExtraClaims, CoreGenderClaim>,
            OidcClient,
            OidcTokenResponse,
        ),
        SsoError,
    > {
        let http = self.http()?;
        let client = self.client(self.metadata(now, false)?);
        let response = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(|e| {
                tracing::error!(error = %e, "the identity provider's metadata names no token endpoint");
                SsoError::Unavailable("the identity provider has no token endpoint".into())
            })?
            .set_pkce_verifier(PkceCodeVerifier::new(
                pending.pkce_verifier.expose().to_owned(),
            ))
            .request(http)
            .map_err(token_error)?;
        let Some(id_token) = response.id_token() else {
            tracing::warn!("the identity provider's token response has no ID token");
            return Err(SsoError::InvalidCredentials);
        };
        let nonce = Nonce::new(pending.nonce.expose().to_owned());
        let checked = id_token
            .claims(&self.verifier(&client, now)?, &nonce)
            .cloned();
        match checked {
            Ok(claims) => Ok((claims, client, response)),
            Err(ClaimsVerificationError::SignatureVerification(
                SignatureVerificationError::NoMatchingKey,
            )) => {
                // Key rotation: the token names a key the cached set lacks.
                tracing::info!(
                    "the ID token is signed with a key not in the cached key set; fetching the provider's keys again"
                );
                let client = self.client(self.metadata(now, true)?);
                let claims = id_token
                    .claims(&self.verifier(&client, now)?, &nonce)
                    .cloned()
                    .map_err(invalid_id_token)?;
                Ok((claims, client, response))
            }
            Err(e) => Err(invalid_id_token(e)),
        }
    }
}

impl SsoProvider for OidcProvider {
    fn method(&self) -> SignInMethod {
        SignInMethod::Redirect
    }

    fn begin_redirect(&self, now: Timestamp) -> Result<RedirectStart, SsoError> {
        let client = self.client(self.metadata(now, false)?);
        let state = random_token()?;
        let nonce = random_token()?;
        // 32 random bytes in base64url: 43 characters, RFC 7636's minimum length.
        let verifier = random_token()?;
        let challenge =
            PkceCodeChallenge::from_code_verifier_sha256(&PkceCodeVerifier::new(verifier.clone()));
        let (state_param, nonce_param) = (state.clone(), nonce.clone());
        let (url, _, _) = client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                move || CsrfToken::new(state_param),
                move || Nonce::new(nonce_param),
            )
            .add_scope(Scope::new("profile".to_owned()))
            .set_pkce_challenge(challenge)
            .url();
        Ok(RedirectStart {
            url: url.to_string(),
            pending: PendingSignIn {
                state: Secret::new(state),
                nonce: Secret::new(nonce),
                pkce_verifier: Secret::new(verifier),
            },
        })
    }

    fn finish_redirect(
        &self,
        callback: RedirectCallback<'_>,
        pending: &PendingSignIn,
        now: Timestamp,
    ) -> Result<SsoIdentity, SsoError> {
        if let Some(error) = callback.error {
            let description: String = callback
                .error_description
                .unwrap_or_default()
                .chars()
                .take(LOGGED_DESCRIPTION_CHARS)
                .collect();
            let logged: String = error.chars().take(LOGGED_ERROR_CHARS).collect();
            tracing::info!(
                error = logged,
                description,
                "the identity provider did not sign the user in"
            );
            return Err(match error {
                "server_error" | "temporarily_unavailable" => {
                    SsoError::Unavailable(format!("the identity provider answered `{error}`"))
                }
                _ => SsoError::InvalidCredentials,
            });
        }
        let Some(code) = callback.code.filter(|c| !c.is_empty()) else {
            tracing::info!("the identity provider's callback has neither a code nor an error");
            return Err(SsoError::InvalidCredentials);
        };
        let (claims, client, response) = self.exchange(code, pending, now)?;
        let claim = self.config.unique_id_claim.as_str();
        let mut found = Found {
            unique_id: id_token_claim(&claims, claim),
            given_name: claims
                .given_name()
                .and_then(|n| n.get(None))
                .map(|n| n.as_str().to_owned()),
            family_name: claims
                .family_name()
                .and_then(|n| n.get(None))
                .map(|n| n.as_str().to_owned()),
        };
        if found.is_incomplete() && client.user_info_url().is_some() {
            let info = client
                .user_info(
                    response.access_token().clone(),
                    Some(claims.subject().clone()),
                )
                .map_err(|e| SsoError::Unavailable(e.to_string()))
                .and_then(|request| {
                    request
                        .request::<ExtraClaims, CoreGenderClaim, _>(self.http()?)
                        .map_err(|e| {
                            tracing::warn!(error = %error_chain(&e), "the userinfo request failed");
                            SsoError::Unavailable(format!("the userinfo request failed: {e}"))
                        })
                });
            match info {
                Ok(info) => found.fill_from(&info, claim),
                // Without a uniqueId there is no sign-in; missing names only stay blank.
                Err(e) if found.unique_id.is_none() => return Err(e),
                Err(_) => {}
            }
        }
        identity(found, claim)
    }
}

/// `client_secret_basic` unless the provider offers only `client_secret_post` (RFC 8414's
/// default for a missing list is `client_secret_basic`).
fn auth_type(metadata: &CoreProviderMetadata) -> AuthType {
    match metadata.token_endpoint_auth_methods_supported() {
        Some(methods)
            if !methods.contains(&CoreClientAuthMethod::ClientSecretBasic)
                && methods.contains(&CoreClientAuthMethod::ClientSecretPost) =>
        {
            AuthType::RequestBody
        }
        _ => AuthType::BasicAuth,
    }
}

/// 32 bytes from the OS random source, base64url without padding.
fn random_token() -> Result<String, SsoError> {
    use base64::Engine as _;
    let mut bytes = [0u8; 32];
    OsRng.try_fill_bytes(&mut bytes).map_err(|e| {
        tracing::error!(error = %e, "the operating system's random source failed");
        SsoError::Unavailable("no randomness".into())
    })?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// How a failed token request reaches the user: a code the provider rejects is a failed
/// sign-in; a provider that cannot be reached, answers nonsense or refuses medialib's own
/// credentials is unavailable (the user is not at fault).
fn token_error(e: TokenError) -> SsoError {
    match e {
        RequestTokenError::ServerResponse(r) => {
            let code = r.error();
            match code {
                CoreErrorResponseType::InvalidClient
                | CoreErrorResponseType::UnauthorizedClient => {
                    tracing::error!(
                        error = code.as_ref(),
                        "the identity provider refused medialib's client credentials: check oidc_client_id and oidc_client_secret"
                    );
                    SsoError::Unavailable(format!(
                        "the identity provider refused medialib's client credentials ({})",
                        code.as_ref()
                    ))
                }
                _ => {
                    tracing::warn!(
                        error = code.as_ref(),
                        "the identity provider refused the authorization code"
                    );
                    SsoError::InvalidCredentials
                }
            }
        }
        RequestTokenError::Request(e) => {
            tracing::warn!(error = %error_chain(&e), "cannot reach the identity provider's token endpoint");
            SsoError::Unavailable(format!("the token endpoint cannot be reached: {e}"))
        }
        // The body is not logged: it may hold tokens.
        RequestTokenError::Parse(e, _) => {
            tracing::warn!(error = %e, "the identity provider's token response cannot be read");
            SsoError::Unavailable("the token response cannot be read".into())
        }
        RequestTokenError::Other(e) => {
            tracing::warn!(error = %e, "the token request failed");
            SsoError::Unavailable(format!("the token request failed: {e}"))
        }
    }
}

/// An ID token that fails a check: a failed sign-in, logged with the reason.
fn invalid_id_token(e: ClaimsVerificationError) -> SsoError {
    tracing::warn!(error = %error_chain(&e), "the ID token was refused");
    SsoError::InvalidCredentials
}

/// An error and its sources on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use medialib_ports::Credentials;

    fn config() -> OidcConfig {
        OidcConfig {
            issuer: "https://idp.example.edu/realms/staff".into(),
            client_id: "medialib".into(),
            client_secret: Some(Secret::new("s3cret")),
            unique_id_claim: "sub".into(),
            base_url: "https://media.example.edu/".into(),
            clock_skew_seconds: 60,
        }
    }

    #[test]
    fn the_redirect_uri_is_the_callback_under_the_base_url() {
        let p = OidcProvider::new(config()).unwrap();
        assert_eq!(
            p.redirect_uri(),
            "https://media.example.edu/api/sso/oidc/callback"
        );
        assert_eq!(p.method(), SignInMethod::Redirect);
        let shown = format!("{p:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("[redacted]"), "{shown}");
    }

    #[test]
    fn a_bad_issuer_is_a_configuration_error() {
        let bad = OidcConfig {
            issuer: "not a url".into(),
            ..config()
        };
        assert!(matches!(
            OidcProvider::new(bad),
            Err(OidcConfigError::Issuer(_))
        ));
    }

    #[test]
    fn passwords_are_not_taken() {
        let p = OidcProvider::new(config()).unwrap();
        let password = Secret::new("x");
        let r = p.authenticate(
            Credentials::Password {
                username: "u",
                password: &password,
            },
            Timestamp::from_epoch_seconds(0),
        );
        assert_eq!(r, Err(SsoError::Unsupported));
    }

    #[test]
    fn a_refused_or_cancelled_sign_in_is_invalid_credentials_and_contacts_nobody() {
        // The issuer is not reachable from tests: had the callback been sent anywhere, the
        // answer would be `Unavailable`.
        let p = OidcProvider::new(config()).unwrap();
        let pending = PendingSignIn {
            state: Secret::new("s"),
            nonce: Secret::new("n"),
            pkce_verifier: Secret::new("v"),
        };
        let now = Timestamp::from_epoch_seconds(1_800_000_000);
        for error in ["access_denied", "login_required", "interaction_required"] {
            let cb = RedirectCallback {
                error: Some(error),
                error_description: Some("End-User aborted interaction"),
                code: None,
            };
            assert_eq!(
                p.finish_redirect(cb, &pending, now),
                Err(SsoError::InvalidCredentials),
                "{error}"
            );
        }
        let cb = RedirectCallback {
            error: Some("temporarily_unavailable"),
            ..RedirectCallback::default()
        };
        assert!(matches!(
            p.finish_redirect(cb, &pending, now),
            Err(SsoError::Unavailable(_))
        ));
        assert_eq!(
            p.finish_redirect(RedirectCallback::default(), &pending, now),
            Err(SsoError::InvalidCredentials),
            "no code and no error"
        );
    }

    #[test]
    fn random_tokens_are_43_url_safe_characters_and_differ() {
        let a = random_token().unwrap();
        let b = random_token().unwrap();
        assert_eq!(a.len(), 43);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        );
        assert_ne!(a, b);
    }
}
