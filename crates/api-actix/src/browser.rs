//! What the HTTP layer knows of a browser: its cookies (the session and the sign-in form's,
//! read and written here only), the person its session names ([`Visitor`]), the page it
//! asked for ([`here`]), whether it wants pages rather than JSON ([`wants_html`]), and the
//! error page it then gets ([`error_body`]), and who a page's own script acts as
//! ([`page_caller`]).
//!
//! A leaf module: the authorization pages (`oauth/`), the player pages (`pages.rs`) and the
//! pages people use (`site/`) all read the same session through it.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder};
use askama::Template;
use medialib_domain::{Caller, Secret, User, csrf_token};
use medialib_ports::services::StartedSession;

use crate::blocking::run;
use crate::error::ApiError;
use crate::state::AppState;

/// The session cookie set after sign-in (value `mlb_...`; HttpOnly, SameSite=Lax).
pub const SESSION_COOKIE: &str = "medialib_session";
/// The cookie binding the sign-in form's CSRF token before a session exists (`mlf_...`).
pub const LOGIN_FORM_COOKIE: &str = "medialib_login";

/// The first value of cookie `name` in the request's `Cookie` headers (values are never logged).
pub(crate) fn cookie(req: &HttpRequest, name: &str) -> Option<String> {
    req.headers()
        .get_all(actix_web::http::header::COOKIE)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim_matches('"').to_owned())
}

/// The `Set-Cookie` value that starts the browser session `started` (path `/`, for the
/// session's lifetime).
pub(crate) fn session_cookie(state: &AppState, started: &StartedSession) -> String {
    let max_age = state.services().settings().session_ttl.seconds();
    set_cookie(
        state,
        SESSION_COOKIE,
        started.cookie.expose(),
        "/",
        Some(max_age),
    )
}

/// A `Set-Cookie` value: HttpOnly, SameSite=Lax, Secure when the service is reached over https.
pub(crate) fn set_cookie(
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

/// The person a browser's session names, as the page header shows them.
#[derive(Debug)]
pub(crate) struct Visitor {
    /// Who they are.
    pub(crate) user: User,
    /// Their name as shown: first and last name, else their username.
    pub(crate) name: String,
    /// Their username (the uniqueId).
    pub(crate) unique_id: String,
    /// The sign-out form's CSRF token, bound to the session cookie.
    pub(crate) csrf: String,
}

impl Visitor {
    fn new(user: User, session: &Secret) -> Self {
        Self {
            name: user.display_name(),
            unique_id: user.unique_id.as_str().to_owned(),
            user,
            csrf: csrf_token(session),
        }
    }
}

/// The person whose live session the browser presents, if any.
pub(crate) async fn visitor(
    req: &HttpRequest,
    state: &AppState,
) -> Result<Option<Visitor>, ApiError> {
    let Some(value) = cookie(req, SESSION_COOKIE) else {
        return Ok(None);
    };
    let presented = value.clone();
    let user = run(state, move |s| s.sessions().session_user(&presented)).await?;
    Ok(user.map(|u| Visitor::new(u, &Secret::new(&value))))
}

/// Whether `presented` is the CSRF token of the session the request's cookie names (a form
/// of the pages people use, posted by the browser that holds that session).
pub(crate) fn csrf_ok(req: &HttpRequest, presented: &str) -> bool {
    cookie(req, SESSION_COOKIE)
        .is_some_and(|session| medialib_domain::csrf_matches(&Secret::new(&session), presented))
}

/// The header in which a page's script sends its session's CSRF token (the library page's
/// upload box, on every tus request).
pub(crate) const CSRF_HEADER: &str = "X-CSRF-Token";

/// Who a page's own script acts as on an API path that takes it (the uploads): the person
/// whose session the cookie names, when the request carries no bearer token and carries
/// that session's CSRF token in [`CSRF_HEADER`]. Another site's page can neither read the
/// token nor set the header on a request that sends the cookie (SameSite=Lax, and a custom
/// header needs a CORS preflight that these paths never grant to a cookie); `None` otherwise,
/// so the caller then needs a token.
pub(crate) async fn page_caller(
    req: &HttpRequest,
    state: &AppState,
) -> Result<Option<Caller>, ApiError> {
    if req.headers().contains_key(header::AUTHORIZATION) {
        return Ok(None);
    }
    let Some(presented) = req.headers().get(CSRF_HEADER).and_then(|v| v.to_str().ok()) else {
        return Ok(None);
    };
    if !csrf_ok(req, presented) {
        return Ok(None);
    }
    Ok(visitor(req, state).await?.map(|v| v.user.as_caller()))
}

/// The sign-in link's `next` for the page at `req`'s path and query, percent-encoded.
pub(crate) fn here(req: &HttpRequest) -> String {
    let uri = req.uri();
    query_escape(uri.path_and_query().map_or("/", |p| p.as_str()))
}

/// Whether the client asked for a page (a browser's `Accept` names `text/html`) rather than
/// JSON: errors outside the API answer it a page.
pub(crate) fn wants_html(req: &HttpRequest) -> bool {
    req.headers()
        .get_all(header::ACCEPT)
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/html"))
}

/// Percent-encodes a query value (everything but RFC 3986 unreserved characters).
pub(crate) fn query_escape(value: &str) -> String {
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

/// The HTML error page (also rendered by the authorization endpoint's pages).
#[derive(Template)]
#[template(path = "error.html")]
pub(crate) struct ErrorPage<'a> {
    /// The `<h1>` and title.
    pub(crate) heading: &'a str,
    /// What happened and what to do.
    pub(crate) message: &'a str,
    /// Where a "Sign in" button leads (`/login?next=…`), when signing in would help.
    pub(crate) sign_in: Option<String>,
}

/// The error page's HTML for `error` (every page's errors, the player's too), with a Sign in
/// button leading to `sign_in` when signing in would help; `None` if it cannot be rendered.
pub(crate) fn error_body(error: &ApiError, sign_in: Option<String>) -> Option<String> {
    let (heading, message) = match error {
        ApiError::AuthenticationRequired | ApiError::InvalidToken => (
            "Sign-in required",
            "This is private: sign in to see it.".to_owned(),
        ),
        ApiError::NotFound | ApiError::Missing(_) => (
            "Not found",
            "There is nothing at this address, or it is not shared with you.".to_owned(),
        ),
        ApiError::Forbidden(_) => (
            "Not allowed",
            "Your account may not open this page.".to_owned(),
        ),
        ApiError::Gone(_) => ("Gone", "What was here has been removed.".to_owned()),
        ApiError::LinkRefused(_) => (
            "Link expired",
            "Links to media files last a few hours, and this one has expired or is not \
             valid. Open the item's page again for a new one."
                .to_owned(),
        ),
        ApiError::DatabaseUnavailable | ApiError::Overloaded | ApiError::StorageUnavailable => (
            "Service unavailable",
            "medialib cannot answer right now. Try again in a few moments.".to_owned(),
        ),
        ApiError::Internal => (
            "Something went wrong",
            "medialib ran into an unexpected error. Try again later.".to_owned(),
        ),
        other => ("Something went wrong", format!("{other}.")),
    };
    let page = ErrorPage {
        heading,
        message: &message,
        sign_in,
    };
    page.render().ok()
}

/// The headers of the pages people use (`site/`) and of the error pages browsers get: a
/// strict CSP (this service's own stylesheet, scripts, stills and media, and requests to it
/// only; forms post here only), never framed, no referrer, never stored.
pub(crate) fn page_headers(builder: &mut HttpResponseBuilder) {
    builder
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; object-src 'none'; base-uri 'none'; \
             form-action 'self'; frame-ancestors 'none'",
        ))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
}

/// `error` as an HTML page: the status and headers [`ApiError`] chooses, a sentence for a
/// person.
pub(crate) fn error_page(error: &ApiError) -> HttpResponse {
    let mut builder = error.page_builder();
    match error_body(error, None) {
        Some(body) => {
            page_headers(&mut builder);
            builder.content_type("text/html; charset=utf-8").body(body)
        }
        None => actix_web::ResponseError::error_response(error),
    }
}

/// A file compiled into the binary, cached for an hour.
pub(crate) fn asset(content_type: &'static str, body: &'static [u8]) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(content_type)
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CACHE_CONTROL, "public, max-age=3600"))
        .body(body)
}
