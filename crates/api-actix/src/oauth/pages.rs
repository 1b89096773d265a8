//! The authorization endpoint's browser pages: sign-in and consent (askama, no JavaScript).
//!
//! - `GET /api/oauth/authorize?response_type=code&client_id=..&redirect_uri=..&state=..` validates
//!   the request (a repeated parameter is `invalid_request`, RFC 6749 §3.1; an empty one counts
//!   as absent). An untrusted client or redirect URI gets a 400 page and never a redirect;
//!   other errors go back to the client (302). A valid request shows the sign-in page (with a
//!   fresh `medialib_login` cookie binding its CSRF token) or, with a live session, the
//!   consent page. With `sso = oidc` a browser without a session goes to the identity
//!   provider instead and comes back through `/api/sso/oidc/callback` (`sso_callback`).
//! - `POST /api/oauth/login` (the sign-in form): rate-limited per address, CSRF-checked against
//!   the `medialib_login` cookie, the authorize parameters re-validated; success starts a
//!   session (new `medialib_session` cookie every time: no fixation) and answers 303 back to
//!   the authorize page.
//! - `POST /api/oauth/authorize` (the consent form): needs the session, CSRF-checked against
//!   the session cookie, re-validated; Approve or Deny answer 303 to the client.
//!
//! Every page (errors included) is `no-store`, never framed, loads only `/assets/authorize.css`
//! or `/assets/player.css` from this service, and sends no referrer. Statuses of error pages
//! come from [`ApiError`]; only the body is HTML.

use actix_web::http::{Method, header};
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder, web};
use askama::Template;
use medialib_domain::oauth::{
    AuthorizationRequest, AuthorizeParams, AuthorizeRejection, ErrorPage as Untrusted,
    OAuthErrorCode, OAuthState, Scope, ScopeSet,
};
use medialib_domain::sign_in::{Authorize, WithoutSession};
use medialib_domain::{Secret, TokenKind, User, csrf_matches, csrf_token};
use medialib_ports::Credentials;
use medialib_ports::services::{SignInError, StartedSession};

use super::{LOGIN_FORM_COOKIE, SESSION_COOKIE, cookie};
use crate::api::options;
use crate::blocking::{run, run_hashing};
use crate::error::ApiError;
use crate::input::parse_urlencoded;
use crate::pages::ErrorPage;
use crate::state::AppState;

/// The `header` sign-in mode (its own file, a submodule so it shares the page helpers).
#[path = "header_sign_in.rs"]
mod header_sign_in;

/// The `oidc` sign-in mode's return from the identity provider (its own file, a submodule so
/// it shares the page helpers).
#[path = "sso_callback.rs"]
pub(super) mod sso_callback;

/// The methods of `/api/oauth/authorize`.
const AUTHORIZE_ALLOW: &str = "GET, HEAD, POST, OPTIONS";
/// The methods of `/api/oauth/login`.
const LOGIN_ALLOW: &str = "POST, OPTIONS";
/// Largest accepted form body: the forms carry a few short fields.
const FORM_LIMIT: usize = 64 * 1024;
/// Where the sign-in cookie is sent (the sign-in form's POST and the authorize page).
const LOGIN_COOKIE_PATH: &str = "/api/oauth";

/// `GET|POST /api/oauth/authorize`: validate, then the sign-in or consent page; the consent
/// form's POST approves or denies.
pub async fn authorize(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> HttpResponse {
    let answer = match *req.method() {
        Method::GET | Method::HEAD => show(&req, &state).await,
        Method::POST => decide(&req, payload, &state).await,
        Method::OPTIONS => options(&state, &req, AUTHORIZE_ALLOW, None)
            .await
            .map_err(Problem::from),
        _ => Err(ApiError::MethodNotImplemented {
            allow: AUTHORIZE_ALLOW,
        }
        .into()),
    };
    answer.unwrap_or_else(|p| p.page())
}

/// `POST /api/oauth/login`: the `local` directory's sign-in form.
pub async fn login(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> HttpResponse {
    let answer = match *req.method() {
        Method::POST => sign_in(&req, payload, &state).await,
        Method::OPTIONS => options(&state, &req, LOGIN_ALLOW, None)
            .await
            .map_err(Problem::from),
        _ => Err(ApiError::MethodNotImplemented { allow: LOGIN_ALLOW }.into()),
    };
    answer.unwrap_or_else(|p| p.page())
}

/// `GET /api/oauth/authorize`: the sign-in page, or the consent page for a signed-in browser.
async fn show(req: &HttpRequest, state: &AppState) -> Result<HttpResponse, Problem> {
    let parsed = Parsed::from_fields(&fields(req.query_string().as_bytes())?);
    let request = match validate(state, parsed.clone()).await? {
        Ok(request) => request,
        Err(location) => return Ok(redirect(HttpResponse::Found(), &location)),
    };
    let params = parsed.params;
    let method = super::sign_in_method(state);
    let without_session = match method.authorize(header_sign_in::carries_header(req, state)) {
        Authorize::ByProxyHeader => {
            return header_sign_in::sign_in(req, state, &request, &params).await;
        }
        Authorize::SessionOr(without_session) => without_session,
    };
    if let Some(cookie) = cookie(req, SESSION_COOKIE) {
        let presented = cookie.clone();
        if let Some(user) = run(state, move |s| s.session_user(&presented)).await? {
            return Ok(consent(
                HttpResponse::Ok(),
                &request,
                &params,
                &user,
                &cookie,
            ));
        }
    }
    match without_session {
        WithoutSession::ByProxyHeader => {
            header_sign_in::sign_in(req, state, &request, &params).await
        }
        WithoutSession::AtIdentityProvider => {
            sso_callback::to_identity_provider(req, state, request, &params).await
        }
        WithoutSession::PasswordForm => Ok(login_page(state, &request, &params)),
    }
}

/// The sign-in page, with a fresh `medialib_login` cookie binding its CSRF token.
fn login_page(state: &AppState, request: &AuthorizationRequest, params: &Params) -> HttpResponse {
    let login_cookie = state.services().new_login_form_cookie();
    let mut builder = HttpResponse::Ok();
    builder.append_header((
        header::SET_COOKIE,
        set_cookie(
            state,
            LOGIN_FORM_COOKIE,
            login_cookie.expose(),
            LOGIN_COOKIE_PATH,
            None,
        ),
    ));
    let page = LoginPage {
        client: request.client().name().as_str(),
        error: None,
        username: "",
        csrf_token: &csrf_token(&login_cookie),
        params: params.hidden(),
    };
    render(builder, &page, FormAction::SelfOnly)
}

/// `POST /api/oauth/login`.
async fn sign_in(
    req: &HttpRequest,
    payload: web::Payload,
    state: &AppState,
) -> Result<HttpResponse, Problem> {
    if !super::sign_in_method(state).takes_submitted_passwords() {
        return Err(header_sign_in::no_password_form());
    }
    state.limits().login_per_addr.hit(&state.remote_addr(req))?;
    let form = read_form(req, payload).await?;
    let login_cookie = cookie(req, LOGIN_FORM_COOKIE)
        .filter(|c| TokenKind::LoginForm.digest_presented(c).is_some())
        .map(Secret::new);
    let csrf_ok = match (&login_cookie, field(&form, "csrf_token")) {
        (Some(c), Some(token)) => csrf_matches(c, token),
        _ => false,
    };
    let Some(login_cookie) = login_cookie.filter(|_| csrf_ok) else {
        tracing::warn!("sign-in form refused: CSRF token missing or not bound to the cookie");
        return Err(Problem::expired_sign_in_form());
    };
    let parsed = Parsed::from_fields(&form);
    let request = match validate(state, parsed.clone()).await? {
        Ok(request) => request,
        Err(location) => return Ok(redirect(HttpResponse::SeeOther(), &location)),
    };
    let params = parsed.params;
    let username = field(&form, "username").unwrap_or_default().to_owned();
    let password = field(&form, "password").unwrap_or_default();
    let form_again = |error: &ApiError, alert: &str| {
        let page = LoginPage {
            client: request.client().name().as_str(),
            error: Some(alert),
            username: &username,
            csrf_token: &csrf_token(&login_cookie),
            params: params.hidden(),
        };
        render(error_builder(error), &page, FormAction::SelfOnly)
    };
    if username.trim().is_empty() || password.is_empty() {
        let e = ApiError::BadRequest("username and password are required".into());
        return Ok(form_again(&e, "Enter your username and password."));
    }
    let password = Secret::new(password);
    let account = username.clone();
    let outcome = run_hashing(state, move |s| {
        Ok::<_, ApiError>(s.sign_in(Credentials::Password {
            username: &account,
            password: &password,
        }))
    })
    .await?;
    crate::metrics::count_sign_in(&state.metrics, &outcome);
    match outcome {
        Ok(started) => {
            let mut builder = HttpResponse::SeeOther();
            builder
                .append_header((header::SET_COOKIE, session_cookie(state, &started)))
                .append_header((
                    header::SET_COOKIE,
                    set_cookie(state, LOGIN_FORM_COOKIE, "", LOGIN_COOKIE_PATH, Some(0)),
                ));
            Ok(redirect(
                builder,
                &format!("/api/oauth/authorize?{}", params.query()),
            ))
        }
        Err(e @ SignInError::InvalidCredentials) => {
            Ok(form_again(&e.into(), "Wrong username or password."))
        }
        Err(SignInError::SlowDown(wait)) => {
            let seconds = wait.seconds();
            let alert = format!(
                "Too many failed sign-ins for this account. Wait {seconds} second{}, then try again.",
                if seconds == 1 { "" } else { "s" }
            );
            Ok(form_again(&SignInError::SlowDown(wait).into(), &alert))
        }
        Err(e @ (SignInError::Unsupported | SignInError::Unavailable(_))) => Err(Problem {
            heading: "Sign-in is not available",
            message: format!(
                "Signing in is not possible right now: {e}. Try again later, or contact your administrator."
            ),
            error: e.into(),
        }),
        Err(e @ SignInError::Store(_)) => Err(ApiError::from(e).into()),
    }
}

/// The consent page for `user`, signed in with the session cookie `session_cookie` (its CSRF
/// token is bound to it). Users without names are shown by their uniqueId.
fn consent(
    builder: HttpResponseBuilder,
    request: &AuthorizationRequest,
    params: &Params,
    user: &User,
    session_cookie: &str,
) -> HttpResponse {
    let names = format!("{} {}", user.first_name.as_str(), user.last_name.as_str());
    let user_name = match names.trim() {
        "" => user.unique_id.as_str(),
        names => names,
    };
    let page = ConsentPage {
        client: request.client().name().as_str(),
        user_name,
        unique_id: user.unique_id.as_str(),
        scopes: scope_words(request.scope()),
        offline: request.offline_requested(),
        destination: origin(request.redirect_uri().as_str()),
        csrf_token: &csrf_token(&Secret::new(session_cookie)),
        params: params.hidden(),
    };
    let action = consent_form_action(request.redirect_uri().as_str());
    render(builder, &page, action)
}

/// The `Set-Cookie` value that starts the browser session `started` (path `/`, for the
/// session's lifetime).
fn session_cookie(state: &AppState, started: &StartedSession) -> String {
    let max_age = state.services().settings().session_ttl.seconds();
    set_cookie(
        state,
        SESSION_COOKIE,
        started.cookie.expose(),
        "/",
        Some(max_age),
    )
}

/// The authorization request an authorize query string (`return_to`) still makes, if it is
/// valid now (a client deleted or changed meanwhile makes it invalid).
async fn resumable(state: &AppState, return_to: &str) -> Option<AuthorizationRequest> {
    let parsed = Parsed::from_fields(&fields(return_to.as_bytes()).ok()?);
    if parsed.repeated.is_some() {
        return None;
    }
    let params = parsed.params;
    match run(state, move |s| s.start_authorization(&params.authorize())).await {
        Ok(Ok(request)) => Some(request),
        Ok(Err(_)) | Err(_) => None,
    }
}

/// `POST /api/oauth/authorize`: the consent form.
async fn decide(
    req: &HttpRequest,
    payload: web::Payload,
    state: &AppState,
) -> Result<HttpResponse, Problem> {
    let form = read_form(req, payload).await?;
    let Some(session_cookie) = cookie(req, SESSION_COOKIE) else {
        return Err(Problem::signed_out());
    };
    let presented = session_cookie.clone();
    let Some(user) = run(state, move |s| s.session_user(&presented)).await? else {
        return Err(Problem::signed_out());
    };
    let csrf_ok = field(&form, "csrf_token")
        .is_some_and(|token| csrf_matches(&Secret::new(session_cookie), token));
    if !csrf_ok {
        tracing::warn!("consent form refused: CSRF token missing or not bound to the session");
        return Err(Problem::expired_consent_form());
    }
    let request = match validate(state, Parsed::from_fields(&form)).await? {
        Ok(request) => request,
        Err(location) => return Ok(redirect(HttpResponse::SeeOther(), &location)),
    };
    let response = match field(&form, "decision") {
        Some("approve") => {
            let user_id = user.id;
            run(state, move |s| s.approve_authorization(request, user_id)).await?
        }
        Some("deny") => state.services().deny_authorization(request),
        _ => {
            return Err(Problem {
                error: ApiError::BadRequest("decision must be approve or deny".into()),
                heading: "No decision",
                message: "The consent form must be sent with Approve or Deny. Go back to the \
                          application and start again."
                    .into(),
            });
        }
    };
    tracing::info!(user = %user.id, "authorization decided");
    Ok(redirect(HttpResponse::SeeOther(), &response.location()))
}

/// Validates the authorize parameters: the request, `Ok(Err(location))` when the client is
/// to be told about an error, or `Err` for an error page (an untrusted client or redirect URI).
async fn validate(
    state: &AppState,
    parsed: Parsed,
) -> Result<Result<AuthorizationRequest, String>, Problem> {
    let Parsed { params, repeated } = parsed;
    if let Some(name) = repeated {
        return repeated_parameter(state, params, name).await;
    }
    let result = run(state, move |s| s.start_authorization(&params.authorize())).await?;
    match result {
        Ok(request) => Ok(Ok(request)),
        Err(AuthorizeRejection::ErrorPage(why)) => Err(Problem::untrusted(why)),
        Err(AuthorizeRejection::Redirect(response)) => Ok(Err(response.location())),
    }
}

/// A parameter sent twice (RFC 6749 §3.1): `invalid_request` to the client when the client
/// and the redirect URI can be trusted, an error page otherwise.
async fn repeated_parameter(
    state: &AppState,
    params: Params,
    name: &'static str,
) -> Result<Result<AuthorizationRequest, String>, Problem> {
    let description = format!("{name} must not be repeated");
    if matches!(name, "client_id" | "redirect_uri") {
        return Err(Problem::untrusted_because(&description));
    }
    // The domain checks the client and the redirect URI first: `ErrorPage` is exactly the
    // answer for an untrusted pair, whatever else the request lacks.
    let probe = Params {
        client_id: params.client_id.clone(),
        redirect_uri: params.redirect_uri.clone(),
        ..Params::default()
    };
    if let Err(AuthorizeRejection::ErrorPage(why)) =
        run(state, move |s| s.start_authorization(&probe.authorize())).await?
    {
        return Err(Problem::untrusted(why));
    }
    let redirect_uri = params.redirect_uri.unwrap_or_default();
    let state_param = params
        .state
        .filter(|_| name != "state")
        .and_then(|s| OAuthState::parse(&s));
    let issuer = state.services().settings().issuer.as_str().to_owned();
    let mut location = redirect_uri;
    let mut sep = if location.contains('?') { '&' } else { '?' };
    let mut add = |k: &str, v: &str| {
        location.push(sep);
        location.push_str(k);
        location.push('=');
        location.push_str(&query_escape(v));
        sep = '&';
    };
    add("error", OAuthErrorCode::InvalidRequest.as_str());
    add("error_description", &description);
    if let Some(s) = &state_param {
        add("state", s.as_str());
    }
    add("iss", &issuer);
    Ok(Err(location))
}

/// The authorize parameters of one request, each at most once.
#[derive(Debug, Clone, Default)]
struct Params {
    response_type: Option<String>,
    client_id: Option<String>,
    redirect_uri: Option<String>,
    state: Option<String>,
    scope: Option<String>,
    access_type: Option<String>,
    code_challenge: Option<String>,
    code_challenge_method: Option<String>,
}

impl Params {
    /// The parameter called `name` (and its `'static` name), if it is one.
    fn slot(&mut self, name: &str) -> Option<(&'static str, &mut Option<String>)> {
        Some(match name {
            "response_type" => ("response_type", &mut self.response_type),
            "client_id" => ("client_id", &mut self.client_id),
            "redirect_uri" => ("redirect_uri", &mut self.redirect_uri),
            "state" => ("state", &mut self.state),
            "scope" => ("scope", &mut self.scope),
            "access_type" => ("access_type", &mut self.access_type),
            "code_challenge" => ("code_challenge", &mut self.code_challenge),
            "code_challenge_method" => ("code_challenge_method", &mut self.code_challenge_method),
            _ => return None,
        })
    }

    /// Every parameter, present or not, in a fixed order.
    fn entries(&self) -> [(&'static str, Option<&str>); 8] {
        [
            ("response_type", self.response_type.as_deref()),
            ("client_id", self.client_id.as_deref()),
            ("redirect_uri", self.redirect_uri.as_deref()),
            ("state", self.state.as_deref()),
            ("scope", self.scope.as_deref()),
            ("access_type", self.access_type.as_deref()),
            ("code_challenge", self.code_challenge.as_deref()),
            (
                "code_challenge_method",
                self.code_challenge_method.as_deref(),
            ),
        ]
    }

    fn authorize(&self) -> AuthorizeParams<'_> {
        AuthorizeParams {
            response_type: self.response_type.as_deref(),
            client_id: self.client_id.as_deref(),
            redirect_uri: self.redirect_uri.as_deref(),
            state: self.state.as_deref(),
            scope: self.scope.as_deref(),
            access_type: self.access_type.as_deref(),
            code_challenge: self.code_challenge.as_deref(),
            code_challenge_method: self.code_challenge_method.as_deref(),
        }
    }

    /// The present parameters as hidden form fields.
    fn hidden(&self) -> Vec<Hidden<'_>> {
        self.entries()
            .into_iter()
            .filter_map(|(name, value)| {
                Some(Hidden {
                    name,
                    value: value?,
                })
            })
            .collect()
    }

    /// The present parameters as a query string.
    fn query(&self) -> String {
        self.entries()
            .into_iter()
            .filter_map(|(name, value)| Some(format!("{name}={}", query_escape(value?))))
            .collect::<Vec<_>>()
            .join("&")
    }
}

/// The authorize parameters of a query or form, and the first one that was repeated.
#[derive(Debug, Clone, Default)]
struct Parsed {
    params: Params,
    repeated: Option<&'static str>,
}

impl Parsed {
    /// Picks the authorize parameters out of `fields`; others are ignored (RFC 6749 §3.1),
    /// as are empty values ("treated as if they were omitted").
    fn from_fields(fields: &[(String, String)]) -> Self {
        let mut parsed = Self::default();
        for (k, v) in fields.iter().filter(|(_, v)| !v.is_empty()) {
            let Some((name, slot)) = parsed.params.slot(k) else {
                continue;
            };
            if slot.is_some() {
                parsed.repeated.get_or_insert(name);
            } else {
                *slot = Some(v.clone());
            }
        }
        parsed
    }
}

/// Urlencoded fields in order, decoded strictly (a malformed escape or non-UTF-8 is a 400).
fn fields(raw: &[u8]) -> Result<Vec<(String, String)>, ApiError> {
    // The strict parser refuses what the lenient one would quietly repair.
    parse_urlencoded(raw)?;
    let text =
        std::str::from_utf8(raw).map_err(|_| ApiError::BadRequest("input must be UTF-8".into()))?;
    web::Query::<Vec<(String, String)>>::from_query(text)
        .map(web::Query::into_inner)
        .map_err(|e| ApiError::BadRequest(format!("malformed form: {e}")))
}

/// The last value of a form field.
fn field<'a>(form: &'a [(String, String)], name: &str) -> Option<&'a str> {
    form.iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Reads an urlencoded form body (what browsers send for these forms).
async fn read_form(
    req: &HttpRequest,
    payload: web::Payload,
) -> Result<Vec<(String, String)>, ApiError> {
    let essence = req
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap_or_default())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        });
    if essence.is_some_and(|e| e != "application/x-www-form-urlencoded") {
        return Err(ApiError::BadRequest(
            "send the form as application/x-www-form-urlencoded".into(),
        ));
    }
    fields(&crate::input::body_within(payload, FORM_LIMIT).await?)
}

/// A `Set-Cookie` value: HttpOnly, SameSite=Lax, Secure when the service is reached over https.
fn set_cookie(
    state: &AppState,
    name: &str,
    value: &str,
    path: &str,
    max_age: Option<i64>,
) -> String {
    let mut out = format!("{name}={value}; Path={path}");
    if let Some(seconds) = max_age {
        out.push_str(&format!("; Max-Age={seconds}"));
    }
    out.push_str("; HttpOnly; SameSite=Lax");
    if state.is_https() {
        out.push_str("; Secure");
    }
    out
}

/// Percent-encodes a query value (everything but RFC 3986 unreserved characters).
fn query_escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `scheme://authority` of a (validated) redirect URI.
fn origin(uri: &str) -> &str {
    let after_scheme = uri.find("://").map_or(0, |i| i + 3);
    let end = uri
        .get(after_scheme..)
        .and_then(|rest| rest.find(['/', '?']))
        .map_or(uri.len(), |i| after_scheme + i);
    uri.get(..end).unwrap_or(uri)
}

/// The consent form's `form-action`: Chromium applies it to the redirect that follows the
/// POST, so the client's origin is allowed too. An origin that is not a plain
/// `scheme://host[:port]` source expression (an IPv6 literal, a `*`) drops the directive
/// rather than break the flow.
fn consent_form_action(redirect_uri: &str) -> FormAction {
    let origin = origin(redirect_uri).to_ascii_lowercase();
    let plain = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"))
        .is_some_and(|host| {
            !host.is_empty()
                && host
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':'))
        });
    if plain {
        FormAction::SelfAnd(origin)
    } else {
        FormAction::Unrestricted
    }
}

/// The scopes in words.
fn scope_words(scope: ScopeSet) -> Vec<&'static str> {
    let mut words = Vec::with_capacity(2);
    if scope.contains(Scope::Read) {
        words.push("See your media libraries and objects");
    }
    if scope.contains(Scope::Write) {
        words.push(
            "Change your media libraries and objects: create, edit and delete them, and \
             manage who may use them",
        );
    }
    words
}

/// What a page's forms may submit to (CSP `form-action`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum FormAction {
    /// No form.
    None,
    /// This service only.
    SelfOnly,
    /// This service and the client's origin (`scheme://host[:port]`).
    SelfAnd(String),
    /// The directive is left out.
    Unrestricted,
}

/// The headers every page of the authorization endpoint carries.
fn security_headers(builder: &mut HttpResponseBuilder, form_action: &FormAction) {
    let form_action = match form_action {
        FormAction::None => "; form-action 'none'".to_owned(),
        FormAction::SelfOnly => "; form-action 'self'".to_owned(),
        FormAction::SelfAnd(origin) => format!("; form-action 'self' {origin}"),
        FormAction::Unrestricted => String::new(),
    };
    builder
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            format!(
                "default-src 'none'; style-src 'self'; base-uri 'none'; frame-ancestors 'none'{form_action}"
            ),
        ))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::PRAGMA, "no-cache"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
}

/// A response with the status and headers (`WWW-Authenticate`, `Retry-After`, `Allow`) that
/// [`ApiError`] chooses for `error`; the body is added by the caller.
fn error_builder(error: &ApiError) -> HttpResponseBuilder {
    error.page_builder()
}

/// Renders `page` with the security headers.
fn render(
    mut builder: HttpResponseBuilder,
    page: &impl Template,
    form_action: FormAction,
) -> HttpResponse {
    security_headers(&mut builder, &form_action);
    match page.render() {
        Ok(body) => builder.content_type("text/html; charset=utf-8").body(body),
        Err(e) => {
            tracing::error!(error = %e, "cannot render an authorization page");
            let mut builder = error_builder(&ApiError::Internal);
            security_headers(&mut builder, &FormAction::None);
            builder
                .content_type("text/plain; charset=utf-8")
                .body("internal error")
        }
    }
}

/// A redirect (302 after GET, 303 after POST); never cached, no referrer.
fn redirect(mut builder: HttpResponseBuilder, location: &str) -> HttpResponse {
    builder
        .insert_header((header::LOCATION, location))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::PRAGMA, "no-cache"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .finish()
}

/// A failure shown as an HTML error page: status and headers from `error`.
#[derive(Debug)]
struct Problem {
    error: ApiError,
    heading: &'static str,
    message: String,
}

impl Problem {
    fn untrusted(why: Untrusted) -> Self {
        Self::untrusted_because(&why.to_string())
    }

    fn untrusted_because(why: &str) -> Self {
        Self {
            error: ApiError::BadRequest(why.to_owned()),
            heading: "Invalid authorization request",
            message: format!(
                "The application that sent you here made a request medialib cannot accept ({why}), \
                 so you were not sent back to it. Tell the application's administrators."
            ),
        }
    }

    fn expired_sign_in_form() -> Self {
        Self {
            error: ApiError::Forbidden("the sign-in form expired".into()),
            heading: "This form has expired",
            message: "The sign-in form expired or was opened in another window, so your \
                      password was not checked. Go back to the application and start signing \
                      in again."
                .into(),
        }
    }

    fn expired_consent_form() -> Self {
        Self {
            error: ApiError::Forbidden("the consent form expired".into()),
            heading: "This form has expired",
            message: "The consent form expired or belongs to another sign-in, so nothing was \
                      shared with the application. Go back to the application and start again."
                .into(),
        }
    }

    fn signed_out() -> Self {
        Self {
            error: ApiError::AuthenticationRequired,
            heading: "Sign in again",
            message: "You are not signed in to medialib any more, so nothing was shared with \
                      the application. Go back to the application and start again: you will \
                      be asked to sign in."
                .into(),
        }
    }

    /// The error page.
    fn page(self) -> HttpResponse {
        let page = ErrorPage {
            heading: self.heading,
            message: &self.message,
        };
        render(error_builder(&self.error), &page, FormAction::None)
    }
}

impl From<ApiError> for Problem {
    fn from(error: ApiError) -> Self {
        let (heading, message) = match &error {
            ApiError::TooManyRequests { retry_after } => (
                "Too many attempts",
                format!(
                    "Too many sign-in attempts came from your address. Wait {retry_after} \
                     seconds, then go back and try again."
                ),
            ),
            ApiError::IdentityProviderUnavailable => (
                "Sign-in is not available",
                "The organization's sign-in service cannot be reached right now. Try again in \
                 a few moments; if it keeps failing, contact your administrator."
                    .to_owned(),
            ),
            ApiError::DatabaseUnavailable => (
                "Service unavailable",
                "medialib cannot answer right now. Try again in a few moments.".to_owned(),
            ),
            ApiError::Internal => (
                "Something went wrong",
                "medialib ran into an unexpected error. Try again later.".to_owned(),
            ),
            ApiError::MethodNotImplemented { .. } => (
                "Not supported",
                "This address does not support this kind of request.".to_owned(),
            ),
            ApiError::BadRequest(_) | ApiError::PayloadTooLarge { .. } => (
                "Invalid request",
                format!("medialib cannot accept this request: {error}."),
            ),
            other => ("Something went wrong", format!("{other}.")),
        };
        Self {
            error,
            heading,
            message,
        }
    }
}

/// A hidden form field carrying an authorize parameter.
#[derive(Debug)]
struct Hidden<'a> {
    name: &'static str,
    value: &'a str,
}

#[derive(Template)]
#[template(path = "authorize_login.html")]
struct LoginPage<'a> {
    client: &'a str,
    error: Option<&'a str>,
    username: &'a str,
    csrf_token: &'a str,
    params: Vec<Hidden<'a>>,
}

#[derive(Template)]
#[template(path = "authorize_consent.html")]
struct ConsentPage<'a> {
    client: &'a str,
    user_name: &'a str,
    unique_id: &'a str,
    scopes: Vec<&'static str>,
    offline: bool,
    destination: &'a str,
    csrf_token: &'a str,
    params: Vec<Hidden<'a>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn repeated_and_empty_parameters() {
        let p = Parsed::from_fields(&pairs(&[
            ("state", "a"),
            ("scope", ""),
            ("scope", "read"),
            ("other", "x"),
            ("other", "y"),
        ]));
        assert_eq!(
            p.repeated, None,
            "empty values count as absent, unknown ones are ignored"
        );
        assert_eq!(p.params.scope.as_deref(), Some("read"));
        let p = Parsed::from_fields(&pairs(&[("state", "a"), ("state", "b")]));
        assert_eq!(p.repeated, Some("state"));
        assert_eq!(p.params.state.as_deref(), Some("a"));
    }

    #[test]
    fn the_query_is_re_encoded() {
        let p = Parsed::from_fields(&pairs(&[
            ("scope", "read write"),
            ("state", "a&b=c"),
            ("client_id", "x"),
        ]))
        .params;
        assert_eq!(p.query(), "client_id=x&state=a%26b%3Dc&scope=read%20write");
    }

    #[test]
    fn fields_are_decoded_strictly() {
        assert_eq!(
            fields(b"a=b+c&d=%C3%A9").ok(),
            Some(pairs(&[("a", "b c"), ("d", "é")]))
        );
        assert!(fields(b"a=%zz").is_err());
        assert!(fields(b"a=%ff").is_err());
    }

    #[test]
    fn the_consent_form_may_go_to_the_client_origin() {
        assert_eq!(
            consent_form_action("https://LMS.example.edu/cb?x=1"),
            FormAction::SelfAnd("https://lms.example.edu".into())
        );
        assert_eq!(
            consent_form_action("http://127.0.0.1:8123/cb"),
            FormAction::SelfAnd("http://127.0.0.1:8123".into())
        );
        assert_eq!(
            consent_form_action("http://[::1]:8123/cb"),
            FormAction::Unrestricted
        );
        assert_eq!(
            consent_form_action("https://a;script-src/cb"),
            FormAction::Unrestricted
        );
        assert_eq!(origin("https://a.example"), "https://a.example");
        assert_eq!(origin("https://a.example?x"), "https://a.example");
    }
}
