//! The client-facing JSON endpoints: token, revoke, introspect, metadata, token info, logout.
//!
//! The token, revocation and introspection endpoints are [`ClientEndpoint`]s: one handler,
//! [`client_endpoint`], answers OPTIONS and reads their calls ([`read_client_call`]): the
//! per-address rate limit, the body (JSON or form), the
//! RFC 6749 §3.1 rule that no parameter is repeated, client authentication by HTTP Basic
//! (RFC 6749 §2.3.1) or by `client_id`/`client_secret` in the body (never both), and the
//! per-client rate limit. The use cases do the rest.

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder, ResponseError, web};
use medialib_domain::oauth::{
    Credentials, InvalidCredentials, OAuthErrorCode, parse_authorization,
};
use medialib_domain::object::bool_str;
use medialib_domain::{Secret, TokenKind, User};
use medialib_ports::RevokeOutcome;
use medialib_ports::services::{ClientCredentials, Introspection, TokenResponse};
use serde::Serialize;

use super::SESSION_COOKIE;
use crate::api::{Answer, Call, Endpoint, is_read, not_implemented, options};
use crate::auth::presented_token;
use crate::blocking::{run, run_read};
use crate::error::ApiError;
use crate::input::{ApiCall, Form};
use crate::state::AppState;

/// Methods of the token, revocation, introspection and logout endpoints.
const POST_ALLOW: &str = "POST, OPTIONS";

/// Paths the metadata document points at.
const AUTHORIZE_PATH: &str = "/api/oauth/authorize";
const TOKEN_PATH: &str = "/api/oauth/access_token";
const REVOKE_PATH: &str = "/api/oauth/revoke";
const INTROSPECT_PATH: &str = "/api/oauth/introspect";

fn invalid_request(description: impl Into<String>) -> ApiError {
    ApiError::OAuth {
        code: OAuthErrorCode::InvalidRequest,
        description: description.into(),
    }
}

fn invalid_client(description: impl Into<String>) -> ApiError {
    ApiError::OAuth {
        code: OAuthErrorCode::InvalidClient,
        description: description.into(),
    }
}

/// A response that must not be cached (RFC 6749 §5.1): token, introspection, logout.
fn no_store(status: StatusCode) -> HttpResponseBuilder {
    let mut builder = HttpResponse::build(status);
    builder
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::PRAGMA, "no-cache"));
    builder
}

/// A parameter's value; an empty value counts as absent (RFC 6749 §3.1).
fn param<'a>(form: &'a Form, name: &str) -> Option<&'a str> {
    form.get(name).filter(|v| !v.is_empty())
}

/// A required parameter, as an owned string for the blocking pool.
fn required(form: &Form, name: &str) -> Result<String, ApiError> {
    param(form, name)
        .map(str::to_owned)
        .ok_or_else(|| invalid_request(format!("{name} is required")))
}

/// A client-authenticated POST, read and past both rate limits.
pub(crate) struct ClientCall {
    creds: ClientCredentials,
    form: Form,
}

/// What reading a client-authenticated endpoint's request gave.
enum Reading {
    /// A POST to serve.
    Call(ClientCall),
    /// An OPTIONS answer.
    Answered(HttpResponse),
}

/// One of the client-authenticated endpoints (token, revocation, introspection): its answer
/// to a call [`client_endpoint`] has read.
pub(crate) trait ClientEndpoint {
    /// Answers a POST read by [`read_client_call`].
    async fn answer(req: &HttpRequest, state: &AppState, call: ClientCall) -> Answer;
}

/// The handler of every [`ClientEndpoint`]: OPTIONS, a 501 for any other method but POST,
/// the reading they share ([`read_client_call`]), then the endpoint's answer.
pub(crate) async fn client_endpoint<E: ClientEndpoint>(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Answer {
    match read_client_call(&req, payload, &state).await? {
        Reading::Call(call) => E::answer(&req, &state, call).await,
        Reading::Answered(res) => Ok(res),
    }
}

/// Reads a POST to the token, revocation or introspection endpoint (see the module docs).
async fn read_client_call(
    req: &HttpRequest,
    payload: web::Payload,
    state: &AppState,
) -> Result<Reading, ApiError> {
    match *req.method() {
        Method::OPTIONS => {
            return Ok(Reading::Answered(
                options(state, req, POST_ALLOW, None).await?,
            ));
        }
        Method::POST => {}
        _ => {
            // Consume a body the client may still be sending before answering.
            ApiCall::read(req, payload).await?;
            return Err(not_implemented(POST_ALLOW));
        }
    }
    let limits = state.limits();
    limits.token_per_addr.hit(&state.remote_addr(req))?;
    let call = ApiCall::read(req, payload).await.map_err(|e| match e {
        ApiError::BadRequest(why) => invalid_request(why),
        other => other,
    })?;
    if call.method != Method::POST {
        return Err(not_implemented(POST_ALLOW));
    }
    // Parameters come from the body only: a client secret must never ride in the URI
    // (RFC 6749 §2.3.1), and the spec sends the token request as a body.
    let form = call.form;
    if let Some(name) = form.repeated_name() {
        return Err(invalid_request(format!("{name} is given more than once")));
    }
    let creds = client_credentials(req, &form)?;
    limits.token_per_client.hit(&creds.client_id)?;
    Ok(Reading::Call(ClientCall { creds, form }))
}

/// The client's credentials: HTTP Basic or the body, never both.
fn client_credentials(req: &HttpRequest, form: &Form) -> Result<ClientCredentials, ApiError> {
    let body_id = param(form, "client_id");
    let body_secret = param(form, "client_secret");
    match basic_credentials(req)? {
        Some(basic) => {
            // A `client_id` repeated in the body (RFC 6749 §4.1.3 allows it) must agree.
            if body_secret.is_some() || body_id.is_some_and(|id| id != basic.client_id) {
                return Err(invalid_request(
                    "use one client authentication method: HTTP Basic or client_id and client_secret in the body, not both",
                ));
            }
            Ok(basic)
        }
        None => match body_id {
            Some(id) => Ok(ClientCredentials {
                client_id: id.to_owned(),
                client_secret: body_secret.map(Secret::new),
            }),
            None => Err(invalid_client(
                "client authentication required: HTTP Basic, or client_id (and client_secret) in the body",
            )),
        },
    }
}

/// `Authorization: Basic base64(urlencode(id) ":" urlencode(secret))` (RFC 6749 §2.3.1,
/// read by the domain's [`parse_authorization`]); `None` without an `Authorization`
/// header. An empty secret is no secret (a public client).
fn basic_credentials(req: &HttpRequest) -> Result<Option<ClientCredentials>, ApiError> {
    let Some(value) = req.headers().get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    match parse_authorization(value.as_bytes()) {
        Ok(Credentials::Basic {
            client_id,
            client_secret,
        }) => Ok(Some(ClientCredentials {
            client_id,
            client_secret,
        })),
        Ok(Credentials::Bearer(_))
        | Err(InvalidCredentials::UnknownScheme | InvalidCredentials::BadToken) => {
            Err(invalid_client(
                "clients authenticate with HTTP Basic or in the body; no other Authorization scheme is accepted here",
            ))
        }
        Err(InvalidCredentials::Malformed | InvalidCredentials::BadBasic) => {
            Err(invalid_client("malformed HTTP Basic client credentials"))
        }
    }
}

/// The successful token response (RFC 6749 §5.1, spec §2.11).
#[derive(Serialize)]
struct TokenBody<'a> {
    token_type: &'static str,
    access_token: &'a str,
    expires_in: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    refresh_token: Option<&'a str>,
    scope: String,
}

impl<'a> From<&'a TokenResponse> for TokenBody<'a> {
    fn from(t: &'a TokenResponse) -> Self {
        Self {
            token_type: "Bearer",
            access_token: t.access_token.expose(),
            expires_in: t.expires_in,
            refresh_token: t.refresh_token.as_ref().map(Secret::expose),
            scope: t.scope.to_string(),
        }
    }
}

/// `POST /api/oauth/access_token`.
pub(crate) struct AccessToken;

impl ClientEndpoint for AccessToken {
    async fn answer(req: &HttpRequest, state: &AppState, call: ClientCall) -> Answer {
        let ClientCall { creds, form } = call;
        let grant_type =
            param(&form, "grant_type").ok_or_else(|| invalid_request("grant_type is required"))?;
        crate::metrics::note_grant_type(req, grant_type);
        let tokens = match grant_type {
            "authorization_code" => {
                let code = required(&form, "code")?;
                let redirect_uri = param(&form, "redirect_uri").map(str::to_owned);
                let verifier = param(&form, "code_verifier").map(str::to_owned);
                run(state, move |s| {
                    s.oauth().exchange_code(
                        &creds,
                        &code,
                        redirect_uri.as_deref(),
                        verifier.as_deref(),
                    )
                })
                .await?
            }
            "refresh_token" => {
                let token = required(&form, "refresh_token")?;
                let scope = param(&form, "scope").map(str::to_owned);
                run(state, move |s| {
                    s.oauth().refresh(&creds, &token, scope.as_deref())
                })
                .await?
            }
            other => {
                tracing::info!(grant_type = other, "unsupported grant type");
                return Err(ApiError::OAuth {
                    code: OAuthErrorCode::UnsupportedGrantType,
                    description: "grant_type must be authorization_code or refresh_token".into(),
                });
            }
        };
        Ok(no_store(StatusCode::OK).json(TokenBody::from(&tokens)))
    }
}

/// `POST /api/oauth/revoke` (RFC 7009): 200 `{}` whether or not anything was revoked, so
/// the endpoint tells nobody which tokens exist; another client's token is left alone.
pub(crate) struct Revoke;

impl ClientEndpoint for Revoke {
    async fn answer(_: &HttpRequest, state: &AppState, call: ClientCall) -> Answer {
        let ClientCall { creds, form } = call;
        // `token_type_hint` is optional and only an optimisation: the prefix tells the kind.
        let token = required(&form, "token")?;
        let client = creds.client_id.clone();
        let outcome = run(state, move |s| s.oauth().revoke(&creds, &token)).await?;
        match outcome {
            RevokeOutcome::OtherClient => {
                tracing::warn!(%client, "a client tried to revoke another client's token");
            }
            RevokeOutcome::AccessTokenRevoked | RevokeOutcome::GrantRevoked => {
                tracing::info!(%client, ?outcome, "token revoked");
            }
            RevokeOutcome::Unknown => {}
        }
        Ok(no_store(StatusCode::OK).json(serde_json::json!({})))
    }
}

/// An RFC 7662 introspection answer. `active` is a JSON boolean as the RFC requires
/// (the media API's string booleans do not apply to this endpoint).
#[derive(Serialize, Default)]
struct IntrospectionBody {
    active: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    scope: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    client_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    username: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sub: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    token_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exp: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    iss: Option<String>,
}

/// `POST /api/oauth/introspect` (RFC 7662).
pub(crate) struct Introspect;

impl ClientEndpoint for Introspect {
    async fn answer(_: &HttpRequest, state: &AppState, call: ClientCall) -> Answer {
        let ClientCall { creds, form } = call;
        let token = required(&form, "token")?;
        // A read: on SQLite it is answered on the async worker when it can be.
        let body = match run_read(state, move |s| s.oauth().introspect(&creds, &token)).await? {
            Introspection::Inactive => IntrospectionBody::default(),
            Introspection::Active {
                kind,
                user,
                client,
                scope,
                expires_at,
            } => IntrospectionBody {
                active: true,
                scope: Some(scope.to_string()),
                client_id: Some(client.as_str().to_owned()),
                username: Some(user.unique_id.to_string()),
                sub: Some(user.id.to_string()),
                token_type: Some(match kind {
                    TokenKind::Refresh => "refresh_token",
                    _ => "Bearer",
                }),
                exp: Some(expires_at.epoch_seconds()),
                iss: Some(state.base_url().to_owned()),
            },
        };
        Ok(no_store(StatusCode::OK).json(body))
    }
}

/// The authorization server metadata (RFC 8414 §2).
#[derive(Serialize)]
struct Metadata {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    revocation_endpoint: String,
    introspection_endpoint: String,
    response_types_supported: [&'static str; 1],
    response_modes_supported: [&'static str; 1],
    grant_types_supported: [&'static str; 2],
    token_endpoint_auth_methods_supported: [&'static str; 3],
    revocation_endpoint_auth_methods_supported: [&'static str; 3],
    introspection_endpoint_auth_methods_supported: [&'static str; 2],
    code_challenge_methods_supported: [&'static str; 1],
    scopes_supported: [&'static str; 2],
    authorization_response_iss_parameter_supported: bool,
    service_documentation: String,
}

impl Metadata {
    fn for_base(base: &str) -> Self {
        let url = |path: &str| format!("{base}{path}");
        Self {
            issuer: base.to_owned(),
            authorization_endpoint: url(AUTHORIZE_PATH),
            token_endpoint: url(TOKEN_PATH),
            revocation_endpoint: url(REVOKE_PATH),
            introspection_endpoint: url(INTROSPECT_PATH),
            response_types_supported: ["code"],
            response_modes_supported: ["query"],
            grant_types_supported: ["authorization_code", "refresh_token"],
            token_endpoint_auth_methods_supported: [
                "client_secret_basic",
                "client_secret_post",
                "none",
            ],
            // A public client revokes its tokens with its id alone (RFC 7009 §2.1).
            revocation_endpoint_auth_methods_supported: [
                "client_secret_basic",
                "client_secret_post",
                "none",
            ],
            introspection_endpoint_auth_methods_supported: [
                "client_secret_basic",
                "client_secret_post",
            ],
            code_challenge_methods_supported: ["S256"],
            scopes_supported: ["read", "write"],
            authorization_response_iss_parameter_supported: true,
            service_documentation: url(crate::openapi::DOCUMENT_PATH),
        }
    }
}

/// `GET /.well-known/oauth-authorization-server` (RFC 8414).
pub(crate) struct MetadataDocument;

impl Endpoint for MetadataDocument {
    const ALLOW: &'static str = "GET, HEAD, OPTIONS";

    async fn answer(call: Call<'_>) -> Answer {
        match call.input.method {
            ref m if is_read(m) => Ok(HttpResponse::Ok()
                // Public and the same for everyone; a client may cache it for an hour.
                .insert_header((header::CACHE_CONTROL, "public, max-age=3600"))
                .json(Metadata::for_base(call.state.base_url()))),
            _ => Err(not_implemented(Self::ALLOW)),
        }
    }
}

/// `GET /api/oauth/authorize/` with a bearer token (DECISIONS.md §5).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TokenInfo {
    #[serde(rename = "type")]
    kind: &'static str,
    authenticated: &'static str,
    user_id: String,
    #[serde(rename = "client_id")]
    client_id: String,
    scope: String,
    #[serde(rename = "expires_in")]
    expires_in: i64,
}

/// `GET /api/oauth/authorize/` with a bearer token: what the token is.
pub async fn token_info(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let answer = async {
        let token = presented_token(&req)?.ok_or(ApiError::AuthenticationRequired)?;
        let caller = run(&state, move |s| s.oauth().authenticate_bearer(&token)).await?;
        Ok::<_, ApiError>(TokenInfo {
            kind: "authorize",
            authenticated: bool_str(true),
            user_id: caller.user().id.to_string(),
            client_id: caller.client().as_str().to_owned(),
            scope: caller.scope().to_string(),
            expires_in: caller.expires_in(),
        })
    };
    match answer.await {
        Ok(info) => no_store(StatusCode::OK).json(info),
        Err(e) => e.error_response(),
    }
}

/// `{"type": "logout", "signedOut": "true"}`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LogoutBody {
    #[serde(rename = "type")]
    kind: &'static str,
    signed_out: &'static str,
}

/// `Set-Cookie` values that delete the session cookie ([`SESSION_COOKIE`]), without and with TLS.
const CLEAR_SESSION_COOKIE: &str = "medialib_session=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax";
const CLEAR_SESSION_COOKIE_SECURE: &str =
    "medialib_session=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax; Secure";

/// The `Set-Cookie` value that deletes the session cookie.
fn clear_session_cookie(state: &AppState) -> HeaderValue {
    HeaderValue::from_static(if state.is_https() {
        CLEAR_SESSION_COOKIE_SECURE
    } else {
        CLEAR_SESSION_COOKIE
    })
}

/// Who is signing out, and how they said so.
enum SigningOut {
    /// A bearer token's user.
    Bearer(User),
    /// The browser session's user (the cookie is cleared).
    Session(User),
}

/// `POST /api/logout`: the user's access tokens stop working and all their browser
/// sessions end; refresh tokens survive (DECISIONS.md §5). Authenticated by a bearer
/// token, or else by the browser session cookie.
pub(crate) struct Logout;

impl Endpoint for Logout {
    const ALLOW: &'static str = POST_ALLOW;

    async fn answer(call: Call<'_>) -> Answer {
        match call.input.method {
            Method::POST => sign_out(call.req, call.state).await,
            _ => Err(not_implemented(Self::ALLOW)),
        }
    }
}

/// The POST of [`Logout`].
async fn sign_out(req: &HttpRequest, state: &AppState) -> Answer {
    let who = match presented_token(req)? {
        Some(token) => {
            let caller = run(state, move |s| s.oauth().authenticate_bearer(&token)).await?;
            SigningOut::Bearer(caller.into_user())
        }
        None => {
            let cookie = super::cookie(req, SESSION_COOKIE);
            let had_cookie = cookie.is_some();
            let user = match cookie {
                Some(c) => run(state, move |s| s.sessions().session_user(&c)).await?,
                None => None,
            };
            match user {
                Some(u) => SigningOut::Session(u),
                None => {
                    let mut res = ApiError::AuthenticationRequired.error_response();
                    if had_cookie {
                        // A stale session cookie is of no use to the browser: drop it.
                        res.headers_mut()
                            .append(header::SET_COOKIE, clear_session_cookie(state));
                    }
                    return Ok(res);
                }
            }
        }
    };
    let (user, clear_cookie) = match who {
        SigningOut::Bearer(u) => (u, false),
        SigningOut::Session(u) => (u, true),
    };
    let id = user.id;
    run(state, move |s| s.oauth().logout(id)).await?;
    let mut res = no_store(StatusCode::OK);
    if clear_cookie {
        res.insert_header((header::SET_COOKIE, clear_session_cookie(state)));
    }
    Ok(res.json(LogoutBody {
        kind: "logout",
        signed_out: bool_str(true),
    }))
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD as BASIC_BASE64;

    use super::*;

    fn basic(value: &str) -> Result<Option<ClientCredentials>, ApiError> {
        let req = TestRequest::default()
            .insert_header((header::AUTHORIZATION, value))
            .to_http_request();
        basic_credentials(&req)
    }

    fn code_of(e: ApiError) -> OAuthErrorCode {
        match e {
            ApiError::OAuth { code, .. } => code,
            other => panic!("expected an OAuth error, got {other:?}"),
        }
    }

    #[test]
    fn basic_credentials_are_form_decoded() {
        // "my%20id:s%3Acret+x" -> id "my id", secret "s:cret x".
        let encoded = BASIC_BASE64.encode("my%20id:s%3Acret+x");
        let c = basic(&format!("Basic {encoded}")).unwrap().unwrap();
        assert_eq!(c.client_id, "my id");
        assert_eq!(c.client_secret.unwrap().expose(), "s:cret x");
        // Unpadded base64 and a lower-case scheme are accepted; an empty secret is none.
        let encoded = base64::engine::general_purpose::STANDARD_NO_PAD.encode("id:");
        let c = basic(&format!("basic {encoded}")).unwrap().unwrap();
        assert_eq!(c.client_id, "id");
        assert!(c.client_secret.is_none());
        let none = TestRequest::default().to_http_request();
        assert!(basic_credentials(&none).unwrap().is_none());
    }

    #[test]
    fn malformed_basic_is_invalid_client() {
        let no_colon = BASIC_BASE64.encode("idsecret");
        let empty_id = BASIC_BASE64.encode(":secret");
        let bad_escape = BASIC_BASE64.encode("id:%zz");
        let not_utf8 = BASIC_BASE64.encode([0xff, b':', b'a']);
        for value in [
            "Basic".to_owned(),
            "Basic !!!".to_owned(),
            format!("Basic {no_colon}"),
            format!("Basic {empty_id}"),
            format!("Basic {bad_escape}"),
            format!("Basic {not_utf8}"),
            "Bearer mla_x".to_owned(),
        ] {
            let e = basic(&value).unwrap_err();
            assert_eq!(code_of(e), OAuthErrorCode::InvalidClient, "{value}");
        }
    }

    #[test]
    fn one_authentication_method_at_a_time() {
        let encoded = BASIC_BASE64.encode("a:b");
        let req = TestRequest::default()
            .insert_header((header::AUTHORIZATION, format!("Basic {encoded}")))
            .to_http_request();
        let form = |s: &str| crate::input::parse_urlencoded(s.as_bytes()).unwrap();
        let both = client_credentials(&req, &form("client_id=a&client_secret=b")).unwrap_err();
        assert_eq!(code_of(both), OAuthErrorCode::InvalidRequest);
        let other_id = client_credentials(&req, &form("client_id=z")).unwrap_err();
        assert_eq!(code_of(other_id), OAuthErrorCode::InvalidRequest);
        let same_id = client_credentials(&req, &form("client_id=a")).unwrap();
        assert_eq!(same_id.client_id, "a");
        let plain = TestRequest::default().to_http_request();
        let none = client_credentials(&plain, &form("grant_type=x")).unwrap_err();
        assert_eq!(code_of(none), OAuthErrorCode::InvalidClient);
        let public = client_credentials(&plain, &form("client_id=p&client_secret=")).unwrap();
        assert!(public.client_secret.is_none(), "an empty value is absent");
    }

    #[test]
    fn cookies_are_found_by_name() {
        let req = TestRequest::default()
            .insert_header((header::COOKIE, "a=1; medialib_session=mlb_x; b=2"))
            .to_http_request();
        assert_eq!(
            crate::oauth::cookie(&req, SESSION_COOKIE).as_deref(),
            Some("mlb_x")
        );
        assert_eq!(crate::oauth::cookie(&req, "c"), None);
        for clear in [CLEAR_SESSION_COOKIE, CLEAR_SESSION_COOKIE_SECURE] {
            assert!(clear.starts_with(&format!("{SESSION_COOKIE}=;")), "{clear}");
        }
    }
}
