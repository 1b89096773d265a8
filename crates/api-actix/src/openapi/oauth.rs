//! The authorization server in the document (DECISIONS.md §5): the authorization endpoint
//! (`GET`: its pages, or with a bearer token and no query what the token is; `POST`: the
//! consent form), the token, revocation (RFC 7009) and introspection (RFC 7662) endpoints,
//! the metadata document (RFC 8414) and `POST /api/logout`.
//!
//! These operations have no function of their own to carry a `#[utoipa::path]` attribute:
//! the token, revocation and introspection endpoints share one generic handler
//! (`oauth::endpoints::client_endpoint`), and the authorization endpoint's GET and POST are
//! one handler that chooses between pages. So the attributes sit on the empty functions
//! below, next to mirrors of the bodies those handlers write (as `apidoc/schemas.rs` mirrors
//! the API's small records); `tests/integration/api/openapi.rs` checks real answers against
//! them, so a drift between a handler and its mirror fails it.
//!
//! The answers follow the handlers: the client endpoints' errors are RFC 6749 §5.2 bodies
//! (`error`, `error_description`, and the API's `message`), except the ones decided before
//! the endpoint looks at the call (a body over 1 MiB, the rate limits, load shedding), which
//! are the API's `{"message"}`; the authorization endpoint's pages (errors included) are
//! `text/html`, its redirects a `Location`.

#![allow(
    dead_code,
    reason = "documentation-only functions and types: utoipa reads their definitions, nothing calls or builds them"
)]

use std::collections::BTreeMap;

use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, Type};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};
use utoipa::{IntoParams, IntoResponses, PartialSchema, ToResponse, ToSchema};

// ------------------------------------------------------------------ records

/// A successful token response (RFC 6749 §5.1). Sent with `Cache-Control: no-store` and
/// `Pragma: no-cache`.
#[derive(ToSchema)]
#[schema(example = json!({"token_type": "Bearer", "access_token": "mla_...", "expires_in": 3600,
    "refresh_token": "mlr_...", "scope": "read write"}))]
pub struct TokenResponse {
    /// Always `Bearer`.
    token_type: String,
    /// The access token, for `Authorization: Bearer`.
    access_token: String,
    /// Seconds until the access token expires.
    expires_in: i64,
    /// A new refresh token: only when the user approved offline access
    /// (`access_type=offline`); a refresh answers a new one and spends the old one.
    #[schema(required = false)]
    refresh_token: String,
    /// The granted scopes, space-separated (`read`, `write`).
    scope: String,
}

/// An RFC 7662 answer. `active` is a JSON boolean, as the RFC requires (not the media API's
/// string booleans); an unknown, expired, revoked or spent token, or another client's, is
/// `{"active": false}` alone.
#[derive(ToSchema)]
#[schema(example = json!({"active": true, "scope": "read write", "client_id": "...",
    "username": "alice", "sub": "5f0c1f8e-6d7c-5a1e-9a55-0f3c1c1e2b3a", "token_type": "Bearer",
    "exp": 1767225600, "iss": "http://127.0.0.1:8080"}))]
pub struct IntrospectionResponse {
    /// Whether the token is live and the calling client's.
    active: bool,
    /// The token's scopes, space-separated.
    #[schema(required = false)]
    scope: String,
    /// The client the token was issued to.
    #[schema(required = false)]
    client_id: String,
    /// The user's uniqueId.
    #[schema(required = false)]
    username: String,
    /// The user's id.
    #[schema(required = false)]
    sub: String,
    /// `Bearer` for an access token, `refresh_token` for a refresh token.
    #[schema(required = false)]
    token_type: String,
    /// When the token expires, epoch seconds.
    #[schema(required = false)]
    exp: i64,
    /// The issuer (the service's base URL).
    #[schema(required = false)]
    iss: String,
}

/// The revocation answer: always the empty object (RFC 7009 §2.2), whether or not anything
/// was revoked, so that the endpoint tells nobody which tokens exist.
pub struct RevocationResponse;

impl ToSchema for RevocationResponse {}

impl PartialSchema for RevocationResponse {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some(
                "Always `{}` (RFC 7009 §2.2), whether or not anything was revoked.",
            ))
            .max_properties(Some(0))
            .into()
    }
}

/// The authorization server metadata (RFC 8414 §2). URLs are absolute, on the configured
/// base URL.
#[derive(ToSchema)]
pub struct AuthorizationServerMetadata {
    /// The base URL; the `iss` that authorization responses carry.
    issuer: String,
    /// `{issuer}/api/oauth/authorize`.
    authorization_endpoint: String,
    /// `{issuer}/api/oauth/access_token`.
    token_endpoint: String,
    /// `{issuer}/api/oauth/revoke`.
    revocation_endpoint: String,
    /// `{issuer}/api/oauth/introspect`.
    introspection_endpoint: String,
    /// `["code"]`.
    response_types_supported: Vec<String>,
    /// `["query"]`.
    response_modes_supported: Vec<String>,
    /// `["authorization_code", "refresh_token"]`.
    grant_types_supported: Vec<String>,
    /// `["client_secret_basic", "client_secret_post", "none"]`.
    token_endpoint_auth_methods_supported: Vec<String>,
    /// `["client_secret_basic", "client_secret_post"]`.
    revocation_endpoint_auth_methods_supported: Vec<String>,
    /// `["client_secret_basic", "client_secret_post"]`.
    introspection_endpoint_auth_methods_supported: Vec<String>,
    /// `["S256"]`.
    code_challenge_methods_supported: Vec<String>,
    /// `["read", "write"]`.
    scopes_supported: Vec<String>,
    /// `true`: authorization responses carry `iss` (RFC 9207).
    authorization_response_iss_parameter_supported: bool,
    /// This document's URL.
    service_documentation: String,
}

/// What a bearer token is (`GET /api/oauth/authorize` with the token and no query string,
/// DECISIONS.md §5).
#[derive(ToSchema)]
#[schema(example = json!({"type": "authorize", "authenticated": "true",
    "userId": "5f0c1f8e-6d7c-5a1e-9a55-0f3c1c1e2b3a", "client_id": "...", "scope": "read write",
    "expires_in": 3542}))]
pub struct TokenInfo {
    /// Always `authorize`.
    #[schema(rename = "type")]
    kind: String,
    /// Always `"true"`.
    authenticated: String,
    /// The token's user.
    #[schema(rename = "userId")]
    user_id: String,
    /// The client the token was issued to.
    client_id: String,
    /// The token's scopes, space-separated.
    scope: String,
    /// Seconds until the token expires.
    expires_in: i64,
}

/// The answer of `POST /api/logout`.
#[derive(ToSchema)]
#[schema(example = json!({"type": "logout", "signedOut": "true"}))]
pub struct LogoutRecord {
    /// Always `logout`.
    #[schema(rename = "type")]
    kind: String,
    /// Always `"true"`.
    #[schema(rename = "signedOut")]
    signed_out: String,
}

/// An error of the token, revocation or introspection endpoint (RFC 6749 §5.2), with the
/// API's `message` (the same text as `error_description`). Sent with `Cache-Control:
/// no-store`.
#[derive(ToSchema)]
#[schema(example = json!({"error": "invalid_grant", "error_description": "invalid authorization code",
    "message": "invalid authorization code"}))]
pub struct OAuthError {
    /// The RFC 6749 error code.
    error: String,
    /// What went wrong, for a developer.
    error_description: String,
    /// The same as `error_description`.
    message: String,
}

// ------------------------------------------------------------------ forms and parameters

/// The token request (RFC 6749 §4.1.3, §6). Parameters come from the body only (a client
/// secret never rides in the URI), each at most once (a repeated one is `invalid_request`);
/// an empty value counts as absent; others are ignored.
///
/// The client authenticates by HTTP Basic *or* by `client_id` and `client_secret` here, never
/// both (a `client_secret` next to Basic, or a `client_id` that differs from Basic's, is
/// `invalid_request`); a public client sends `client_id` alone and must have used PKCE.
#[derive(ToSchema)]
pub struct TokenForm {
    /// `authorization_code` or `refresh_token`; any other is `unsupported_grant_type`.
    grant_type: GrantType,
    /// `authorization_code`: the code the authorization response carried.
    #[schema(required = false)]
    code: String,
    /// `authorization_code`: exactly the `redirect_uri` of the authorization request.
    #[schema(required = false)]
    redirect_uri: String,
    /// `authorization_code`: the PKCE verifier, when the request had a challenge.
    #[schema(required = false)]
    code_verifier: String,
    /// `refresh_token`: the refresh token (spent by this call; presenting a spent one revokes
    /// the whole grant).
    #[schema(required = false)]
    refresh_token: String,
    /// `refresh_token`: a narrower scope than the grant's, space-separated.
    #[schema(required = false)]
    scope: String,
    /// The client, when it does not authenticate by HTTP Basic.
    #[schema(required = false)]
    client_id: String,
    /// The client's secret, with `client_id` in the body (confidential clients).
    #[schema(required = false)]
    client_secret: String,
}

/// The grant types of the token endpoint.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum GrantType {
    /// Redeem an authorization code.
    AuthorizationCode,
    /// Renew with a refresh token (rotation: a new refresh token each time).
    RefreshToken,
}

/// A revocation (RFC 7009 §2.1) or introspection (RFC 7662 §2.1) request: the same body
/// rules and client authentication as the token request.
#[derive(ToSchema)]
pub struct TokenQueryForm {
    /// The access token (`mla_…`) or refresh token (`mlr_…`).
    token: String,
    /// Accepted and ignored: the token's prefix says what it is.
    #[schema(required = false)]
    token_type_hint: String,
    /// The client, when it does not authenticate by HTTP Basic.
    #[schema(required = false)]
    client_id: String,
    /// The client's secret, with `client_id` in the body.
    #[schema(required = false)]
    client_secret: String,
}

/// The parameters of an authorization request (RFC 6749 §4.1.1, PKCE RFC 7636), in the query
/// of the GET and again (hidden fields) in the consent form. An empty value counts as absent;
/// a repeated one is `invalid_request`; unknown ones are ignored.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuthorizeQuery {
    /// `code` (the only response type).
    #[param(required = false)]
    response_type: Option<String>,
    /// The client.
    #[param(required = false)]
    client_id: Option<String>,
    /// One of the client's registered redirect URIs, exactly (a loopback address matches on
    /// any port); without it the request is refused with an error page.
    #[param(required = false)]
    redirect_uri: Option<String>,
    /// Opaque; returned to the client with the answer.
    #[param(required = false)]
    state: Option<String>,
    /// `read`, `write` or both, space-separated (default: both).
    #[param(required = false)]
    scope: Option<String>,
    /// `offline` also asks for a refresh token.
    #[param(required = false)]
    access_type: Option<String>,
    /// The PKCE challenge (required for public clients).
    #[param(required = false)]
    code_challenge: Option<String>,
    /// `S256`.
    #[param(required = false)]
    code_challenge_method: Option<String>,
}

/// The consent form (what the consent page posts): the decision, the CSRF token bound to
/// the session cookie, and the authorization request's parameters again.
#[derive(ToSchema)]
pub struct ConsentForm {
    /// `approve` or `deny`.
    decision: Decision,
    /// The token the consent page carries, bound to the `medialib_session` cookie.
    csrf_token: String,
    /// As in the query of the GET.
    #[schema(required = false)]
    response_type: String,
    /// As in the query of the GET.
    #[schema(required = false)]
    client_id: String,
    /// As in the query of the GET.
    #[schema(required = false)]
    redirect_uri: String,
    /// As in the query of the GET.
    #[schema(required = false)]
    state: String,
    /// As in the query of the GET.
    #[schema(required = false)]
    scope: String,
    /// As in the query of the GET.
    #[schema(required = false)]
    access_type: String,
    /// As in the query of the GET.
    #[schema(required = false)]
    code_challenge: String,
    /// As in the query of the GET.
    #[schema(required = false)]
    code_challenge_method: String,
}

/// The person's answer on the consent page.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
pub enum Decision {
    /// Give the client the scopes it asked for.
    Approve,
    /// Refuse (`access_denied` to the client).
    Deny,
}

// ------------------------------------------------------------------ responses

/// The component names of the responses below (also named by `openapi.rs`).
pub(super) const OAUTH_BAD_REQUEST: &str = "OAuthBadRequest";
pub(super) const INVALID_CLIENT: &str = "InvalidClient";
pub(super) const TOO_MANY_REQUESTS: &str = "TooManyRequests";
pub(super) const OAUTH_UNAVAILABLE: &str = "OAuthUnavailable";

fn string_header(description: &str) -> utoipa::openapi::header::Header {
    HeaderBuilder::new()
        .schema(ObjectBuilder::new().schema_type(Type::String))
        .description(Some(description))
        .build()
}

fn json_of(schema: impl Into<RefOr<utoipa::openapi::schema::Schema>>) -> utoipa::openapi::Content {
    ContentBuilder::new().schema(Some(schema)).build()
}

/// 400 at a client endpoint.
#[derive(Debug)]
pub struct OAuthBadRequest;

impl<'r> ToResponse<'r> for OAuthBadRequest {
    fn response() -> (&'r str, RefOr<Response>) {
        let response = ResponseBuilder::new()
            .description(
                "An RFC 6749 §5.2 error. `invalid_request`: a required parameter is missing \
                 (`grant_type`, `code`, `refresh_token`, `token`), a parameter is repeated, \
                 HTTP Basic and body credentials are both given, or the body or query does not \
                 parse. At the token endpoint also `invalid_grant` (an unknown, expired, spent \
                 or another client's code or refresh token; a `redirect_uri` that differs; a \
                 PKCE verifier wrong, missing or without a challenge), `invalid_scope` (a \
                 refresh `scope` malformed or wider than the grant) and `unsupported_grant_type`.",
            )
            .header("Cache-Control", string_header("`no-store`."))
            .content(
                "application/json",
                json_of(Ref::from_schema_name("OAuthError")),
            )
            .build();
        (OAUTH_BAD_REQUEST, response.into())
    }
}

/// 401 at a client endpoint.
#[derive(Debug)]
pub struct InvalidClient;

impl<'r> ToResponse<'r> for InvalidClient {
    fn response() -> (&'r str, RefOr<Response>) {
        let response = ResponseBuilder::new()
            .description(
                "`invalid_client`: no client authentication, an unknown client, a wrong or \
                 missing secret, malformed HTTP Basic credentials, or another `Authorization` \
                 scheme (a bearer token authenticates no client).",
            )
            .header(
                "WWW-Authenticate",
                string_header("`Basic realm=\"medialib\"`."),
            )
            .header("Cache-Control", string_header("`no-store`."))
            .content(
                "application/json",
                json_of(Ref::from_schema_name("OAuthError")),
            )
            .build();
        (INVALID_CLIENT, response.into())
    }
}

/// 429 at a client endpoint.
#[derive(Debug)]
pub struct TooManyRequests;

impl<'r> ToResponse<'r> for TooManyRequests {
    fn response() -> (&'r str, RefOr<Response>) {
        let response = ResponseBuilder::new()
            .description(
                "Over a per-minute limit (`rate_limit_token`): one per remote address, checked \
                 first, and one per `client_id`.",
            )
            .header("Retry-After", string_header("Seconds to wait."))
            .content(
                "application/json",
                json_of(Ref::from_schema_name("ErrorBody")),
            )
            .build();
        (TOO_MANY_REQUESTS, response.into())
    }
}

/// 503 at a client endpoint: the store's `temporarily_unavailable` or the API's overload.
#[derive(Debug)]
pub struct OAuthUnavailable;

impl<'r> ToResponse<'r> for OAuthUnavailable {
    fn response() -> (&'r str, RefOr<Response>) {
        let either = OneOfBuilder::new()
            .item(Ref::from_schema_name("OAuthError"))
            .item(Ref::from_schema_name("ErrorBody"));
        let response = ResponseBuilder::new()
            .description(
                "The database is unavailable (`temporarily_unavailable`, an RFC 6749 error), or \
                 the server is shedding load or past its deadline (the API's `{\"message\"}`); \
                 retry after `Retry-After` seconds.",
            )
            .header("Retry-After", string_header("Seconds to wait."))
            .content("application/json", json_of(either))
            .build();
        (OAUTH_UNAVAILABLE, response.into())
    }
}

fn shared(name: &str) -> RefOr<Response> {
    Ref::from_response_name(name).into()
}

/// The errors of the token, revocation and introspection endpoints.
pub struct ClientEndpointErrors;

impl IntoResponses for ClientEndpointErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        BTreeMap::from([
            ("400".to_owned(), shared(OAUTH_BAD_REQUEST)),
            ("401".to_owned(), shared(INVALID_CLIENT)),
            ("413".to_owned(), shared("PayloadTooLarge")),
            ("429".to_owned(), shared(TOO_MANY_REQUESTS)),
            ("501".to_owned(), shared("NotImplemented")),
            ("503".to_owned(), shared(OAUTH_UNAVAILABLE)),
        ])
    }
}

/// The errors of the metadata document: a query that does not parse.
pub struct MetadataErrors;

impl IntoResponses for MetadataErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        BTreeMap::from([("400".to_owned(), shared("BadRequest"))])
    }
}

/// The errors of `POST /api/logout`: the API's, as every `/api/` call reads its body and
/// method override; no token nor session is a 401 (a stale session cookie is then cleared).
pub struct LogoutErrors;

impl IntoResponses for LogoutErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        BTreeMap::from([
            ("400".to_owned(), shared("BadRequest")),
            ("401".to_owned(), shared("Unauthorized")),
            ("413".to_owned(), shared("PayloadTooLarge")),
            ("501".to_owned(), shared("NotImplemented")),
            ("503".to_owned(), shared("Unavailable")),
        ])
    }
}

/// An HTML page of the authorization endpoint with `description` and the given headers.
fn page(description: &str, headers: &[(&str, &str)]) -> RefOr<Response> {
    let mut builder = ResponseBuilder::new().description(description).content(
        "text/html",
        ContentBuilder::new()
            .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
            .build(),
    );
    for (name, text) in headers {
        builder = builder.header(*name, string_header(text));
    }
    builder.build().into()
}

/// The error pages of the consent form's POST.
pub struct ConsentErrors;

impl IntoResponses for ConsentErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        BTreeMap::from([
            (
                "400".to_owned(),
                page(
                    "An error page: the form is not `application/x-www-form-urlencoded` or does \
                     not parse, `decision` is neither `approve` nor `deny`, or the client or its \
                     redirect URI cannot be trusted (never redirected to).",
                    &[],
                ),
            ),
            (
                "401".to_owned(),
                page(
                    "An error page: the browser has no live session (signed out meanwhile).",
                    &[("WWW-Authenticate", "`Bearer`.")],
                ),
            ),
            (
                "403".to_owned(),
                page(
                    "An error page: the CSRF token is missing or not bound to the session cookie.",
                    &[],
                ),
            ),
            (
                "413".to_owned(),
                page("An error page: the form is larger than 64 KiB.", &[]),
            ),
            (
                "503".to_owned(),
                page(
                    "An error page: the database is unavailable or the server is busy.",
                    &[("Retry-After", "Seconds to wait.")],
                ),
            ),
        ])
    }
}

// ------------------------------------------------------------------ operations

/// The authorization endpoint: sign-in and consent pages, or what a token is.
///
/// A browser comes here with an authorization request (RFC 6749 §4.1.1, PKCE S256). A valid
/// request shows the sign-in page (with a `medialib_login` cookie binding its CSRF token),
/// or, for a browser with a live `medialib_session`, the consent page; with `sso = oidc` a
/// browser without a session is sent to the identity provider (302), and with `sso = header`
/// the proxy's header signs it in. An error the client may hear of goes back to its redirect
/// URI (302 with `error`, `state` and `iss`); an unknown client or redirect URI gets an error
/// page and never a redirect. Pages are never cached or framed.
///
/// With an `Authorization: Bearer` (or `OAuth`) header and no query string the answer is
/// instead a JSON record of what the token is; a bad token is then a JSON 401.
#[utoipa::path(
    get,
    path = "/api/oauth/authorize",
    operation_id = "oauth_authorize_get",
    tag = "oauth",
    params(AuthorizeQuery),
    security((), ("bearer" = []), ("oauth2" = [])),
    responses(
        (status = 200, description = "The sign-in page or the consent page (HTML); with a \
            bearer token and no query string, what the token is (JSON).",
            content(
                (TokenInfo = "application/json"),
                (String = "text/html"),
            ),
            headers(
                ("Cache-Control" = String, description = "`no-store`."),
                ("Set-Cookie" = String, description = "The sign-in page's `medialib_login` cookie."),
            )),
        (status = 302, description = "To the client's redirect URI with `error`, `state` and \
            `iss` (a request the client may hear about is wrong), or to the identity provider \
            (`sso = oidc`).",
            headers(("Location" = String, description = "Where the browser goes."))),
        (status = 400, description = "An error page: the query does not parse, or the client \
            or its redirect URI cannot be trusted (no redirect).",
            content_type = "text/html", body = String),
        (status = 401, description = "A bad bearer token (JSON, `WWW-Authenticate: Bearer \
            error=\"invalid_token\"`), or an error page when the proxy's header names no one \
            medialib accepts (`sso = header`).",
            content(
                (crate::apidoc::schemas::ErrorBody = "application/json"),
                (String = "text/html"),
            ),
            headers(("WWW-Authenticate" = String, description = "`Bearer` or `Bearer error=\"invalid_token\"`."))),
        (status = 403, description = "An error page: a sign-in header that did not come \
            through a trusted proxy (`sso = header`).",
            content_type = "text/html", body = String),
        (status = 429, description = "An error page: too many failed sign-ins (`sso = header`).",
            content_type = "text/html", body = String,
            headers(("Retry-After" = String, description = "Seconds to wait."))),
        (status = 503, description = "The database or the identity provider is unavailable, \
            or the server is busy: an error page, or JSON for the token record.",
            content(
                (crate::apidoc::schemas::ErrorBody = "application/json"),
                (String = "text/html"),
            ),
            headers(("Retry-After" = String, description = "Seconds to wait."))),
    )
)]
pub fn authorize_get() {}

/// The consent form: approve or deny.
///
/// What the consent page posts (`application/x-www-form-urlencoded`). Needs the browser's
/// `medialib_session` cookie and the CSRF token bound to it; the authorization request is
/// judged again. Approve sends the browser to the client with a code (single use, 60
/// seconds), Deny with `access_denied`.
#[utoipa::path(
    post,
    path = "/api/oauth/authorize",
    operation_id = "oauth_authorize_post",
    tag = "oauth",
    request_body(
        description = "The consent page's form.",
        content = ConsentForm,
        content_type = "application/x-www-form-urlencoded",
    ),
    security(("session" = [])),
    responses(
        (status = 303, description = "To the client's redirect URI with `code` (approved) or \
            `error` (denied, or a request the client may hear about is wrong), `state` and `iss`.",
            headers(("Location" = String, description = "Where the browser goes."))),
        ConsentErrors,
    )
)]
pub fn authorize_post() {}

/// The token endpoint: exchange a code, or refresh.
///
/// `grant_type=authorization_code` redeems a code (once: a second redemption revokes what
/// the first one issued); `grant_type=refresh_token` answers a new access token and a new
/// refresh token and spends the old one. No other grant is implemented (`client_credentials`,
/// `password` and the rest are `unsupported_grant_type`). The body may also be
/// `multipart/form-data` or a JSON object.
#[utoipa::path(
    post,
    path = "/api/oauth/access_token",
    operation_id = "oauth_token",
    tag = "oauth",
    request_body(description = "The token request.", content = TokenForm),
    security(("client_basic" = []), ()),
    responses(
        (status = 200, description = "Tokens.", body = TokenResponse,
            headers(
                ("Cache-Control" = String, description = "`no-store`."),
                ("Pragma" = String, description = "`no-cache`."),
            )),
        ClientEndpointErrors,
    )
)]
pub fn token() {}

/// Revoke a token (RFC 7009).
///
/// Revoking an access token ends that token; revoking a refresh token ends its whole grant.
/// The answer is the same whether the token was live, dead, unknown or another client's
/// (which is left alone).
#[utoipa::path(
    post,
    path = "/api/oauth/revoke",
    operation_id = "oauth_revoke",
    tag = "oauth",
    request_body(description = "The token to revoke.", content = TokenQueryForm),
    security(("client_basic" = []), ()),
    responses(
        (status = 200, description = "Done (or nothing to do).", body = RevocationResponse,
            headers(("Cache-Control" = String, description = "`no-store`."))),
        ClientEndpointErrors,
    )
)]
pub fn revoke() {}

/// Introspect a token (RFC 7662).
///
/// What the token is, for the client that holds it.
#[utoipa::path(
    post,
    path = "/api/oauth/introspect",
    operation_id = "oauth_introspect",
    tag = "oauth",
    request_body(description = "The token to look at.", content = TokenQueryForm),
    security(("client_basic" = []), ()),
    responses(
        (status = 200, description = "The token's state.", body = IntrospectionResponse,
            headers(("Cache-Control" = String, description = "`no-store`."))),
        ClientEndpointErrors,
    )
)]
pub fn introspect() {}

/// The authorization server metadata (RFC 8414).
///
/// Public and the same for everyone.
#[utoipa::path(
    get,
    path = "/.well-known/oauth-authorization-server",
    operation_id = "oauth_metadata",
    tag = "oauth",
    security(()),
    responses(
        (status = 200, description = "The metadata.", body = AuthorizationServerMetadata,
            headers(("Cache-Control" = String, description = "`public, max-age=3600`."))),
        MetadataErrors,
    )
)]
pub fn metadata() {}

/// Sign out.
///
/// Every access token of the user stops working and every browser session of theirs ends;
/// refresh tokens survive, so offline clients can renew. The user is the bearer token's, or,
/// without an `Authorization` header, the browser session's (whose cookie the answer
/// clears). Any scope will do.
#[utoipa::path(
    post,
    path = "/api/logout",
    operation_id = "logout_post",
    tag = "oauth",
    security(("bearer" = []), ("oauth2" = []), ("session" = [])),
    responses(
        (status = 200, description = "Signed out.", body = LogoutRecord,
            headers(
                ("Cache-Control" = String, description = "`no-store`."),
                ("Set-Cookie" = String, description = "Clears `medialib_session` (session sign-out)."),
            )),
        LogoutErrors,
    )
)]
pub fn logout() {}
