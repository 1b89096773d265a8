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
//! - `POST /api/oauth/authorize` (the consent form, `consent.rs`): needs the session,
//!   CSRF-checked against the session cookie, re-validated; Approve or Deny answer 303 to the
//!   client.
//!
//! Every page (errors included) is `no-store`, never framed, loads only `/assets/authorize.css`
//! or `/assets/player.css` from this service, and sends no referrer (`html.rs`). Statuses of
//! error pages come from [`ApiError`]; only the body is HTML.
//!
//! Which way a browser signs in (the proxy's header, a live session, the identity provider or
//! the password form) is the domain's decision (`medialib_domain::sign_in`); this module
//! applies it.

use actix_web::http::{Method, header};
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder, web};
use askama::Template;
use medialib_domain::oauth::AuthorizationRequest;
use medialib_domain::sign_in::{Authorize, WithoutSession};
use medialib_domain::{Secret, TokenKind, csrf_matches, csrf_token};
use medialib_ports::Credentials;
use medialib_ports::services::{SignInError, StartedSession};

use super::consent::{consent, decide};
use super::html::{FormAction, Problem, error_builder, other_method, redirect, render};
use super::params::{Hidden, Params, Parsed, field, fields, read_form};
use super::request::validate;
use super::{
    LOGIN_COOKIE_PATH, LOGIN_FORM_COOKIE, SESSION_COOKIE, cookie, header_sign_in, session_cookie,
    set_cookie, sso_callback,
};
use crate::blocking::{Work, run, run_as};
use crate::error::ApiError;
use crate::state::AppState;

/// The methods of `/api/oauth/authorize`.
const AUTHORIZE_ALLOW: &str = "GET, HEAD, POST, OPTIONS";
/// The methods of `/api/oauth/login`.
const LOGIN_ALLOW: &str = "POST, OPTIONS";

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
        _ => other_method(&state, &req, AUTHORIZE_ALLOW).await,
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
        _ => other_method(&state, &req, LOGIN_ALLOW).await,
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
        if let Some(user) = run(state, move |s| s.sessions().session_user(&presented)).await? {
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
    let (builder, login_cookie) = new_sign_in_form(state, LOGIN_COOKIE_PATH);
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
    let (form, login_cookie) = read_sign_in_form(req, payload, state).await?;
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
    match check_password(state, &username, password).await? {
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
        Err(refused) => Ok(form_again(&refused.error, &refused.alert)),
    }
}

/// A 200 that sets a fresh sign-in form cookie for `path` (where the form is shown and
/// posted), and that cookie, which the form's CSRF token is bound to.
pub(crate) fn new_sign_in_form(state: &AppState, path: &str) -> (HttpResponseBuilder, Secret) {
    let login_cookie = state.services().sessions().new_login_form_cookie();
    let mut builder = HttpResponse::Ok();
    builder.append_header((
        header::SET_COOKIE,
        set_cookie(state, LOGIN_FORM_COOKIE, login_cookie.expose(), path, None),
    ));
    (builder, login_cookie)
}

/// Reads a submitted password form (the authorize page's or medialib's own `/login`): only
/// where passwords are taken, rate-limited per address, and only with the CSRF token bound
/// to the browser's sign-in form cookie. Returns the fields and that cookie.
pub(crate) async fn read_sign_in_form(
    req: &HttpRequest,
    payload: web::Payload,
    state: &AppState,
) -> Result<(Vec<(String, String)>, Secret), Problem> {
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
    match login_cookie.filter(|_| csrf_ok) {
        Some(login_cookie) => Ok((form, login_cookie)),
        None => {
            tracing::warn!("sign-in form refused: CSRF token missing or not bound to the cookie");
            Err(Problem::expired_sign_in_form())
        }
    }
}

/// A password sign-in that was refused in a way the form shows again, with what to tell the
/// person.
#[derive(Debug)]
pub(crate) struct PasswordRefused {
    /// The status (and headers: `Retry-After`) of the form shown again.
    pub(crate) error: ApiError,
    /// The alert above the form.
    pub(crate) alert: String,
}

/// Checks a submitted username and password with the configured provider (on the sign-in
/// slots of the blocking pool) and counts the outcome: the session it started, a refusal to
/// show on the form (blank fields, wrong credentials, slow down), or an error page (the
/// provider unavailable, the store failing).
pub(crate) async fn check_password(
    state: &AppState,
    username: &str,
    password: &str,
) -> Result<Result<StartedSession, PasswordRefused>, Problem> {
    if username.trim().is_empty() || password.is_empty() {
        return Ok(Err(PasswordRefused {
            error: ApiError::BadRequest("username and password are required".into()),
            alert: "Enter your username and password.".into(),
        }));
    }
    let password = Secret::new(password);
    let account = username.to_owned();
    let outcome = run_as(state, Work::PasswordHash, move |s| {
        Ok::<_, ApiError>(s.sessions().sign_in(Credentials::Password {
            username: &account,
            password: &password,
        }))
    })
    .await?;
    crate::metrics::count_sign_in(&state.metrics, &outcome);
    match outcome {
        Ok(started) => Ok(Ok(started)),
        Err(e @ SignInError::InvalidCredentials) => Ok(Err(PasswordRefused {
            error: e.into(),
            alert: "Wrong username or password.".into(),
        })),
        Err(SignInError::SlowDown(wait)) => {
            let seconds = wait.seconds();
            let alert = format!(
                "Too many failed sign-ins for this account. Wait {seconds} second{}, then try again.",
                if seconds == 1 { "" } else { "s" }
            );
            Ok(Err(PasswordRefused {
                error: SignInError::SlowDown(wait).into(),
                alert,
            }))
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

#[derive(Template)]
#[template(path = "authorize_login.html")]
struct LoginPage<'a> {
    client: &'a str,
    error: Option<&'a str>,
    username: &'a str,
    csrf_token: &'a str,
    params: Vec<Hidden<'a>>,
}
