//! `/login` and `/logout`: signing in and out on medialib's own pages, with the same browser
//! session (and the same rules of which way a browser signs in, `medialib_domain::sign_in`)
//! as the authorization endpoint's pages.

use actix_web::http::{Method, header};
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use medialib_domain::sign_in::{Authorize, ReturnPath, WithoutSession};
use medialib_domain::{Secret, csrf_matches, csrf_token};
use medialib_ports::services::StartedSession;

use super::{render, see_other, visitor};
use crate::blocking::run;
use crate::error::ApiError;
use crate::oauth::html::{Problem, other_method};
use crate::oauth::pages::{check_password, new_sign_in_form, read_sign_in_form};
use crate::oauth::params::{field, fields, read_form};
use crate::oauth::{
    LOGIN_FORM_COOKIE, SESSION_COOKIE, cookie, header_sign_in, session_cookie, set_cookie,
    sign_in_method, sso_callback,
};
use crate::state::AppState;

/// Where the sign-in form's cookie is sent: the form's page and its POST.
const LOGIN_PATH: &str = "/login";

#[derive(Template)]
#[template(path = "site_login.html")]
struct LoginPage<'a> {
    error: Option<&'a str>,
    username: &'a str,
    csrf_token: &'a str,
    next: &'a str,
}

/// `/login`: GET shows the way in (or sends a signed-in browser on), POST checks the form.
pub(super) async fn login(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> HttpResponse {
    let answer = match *req.method() {
        Method::GET | Method::HEAD => show(&req, &state).await,
        Method::POST => submit(&req, payload, &state).await,
        _ => other_method(&state, &req, "GET, HEAD, POST, OPTIONS").await,
    };
    answer.unwrap_or_else(Problem::page)
}

/// `/logout`: POST ends the session.
pub(super) async fn logout(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> HttpResponse {
    let answer = match *req.method() {
        Method::POST => sign_out(&req, payload, &state).await,
        _ => other_method(&state, &req, "POST, OPTIONS").await,
    };
    answer.unwrap_or_else(Problem::page)
}

/// The `next` of a query or form: a path of this service, else home.
fn next_of(form: &[(String, String)]) -> ReturnPath {
    ReturnPath::or_home(field(form, "next"))
}

/// `GET /login?next=PATH`.
async fn show(req: &HttpRequest, state: &AppState) -> Result<HttpResponse, Problem> {
    let next = next_of(&fields(req.query_string().as_bytes())?);
    let without_session =
        match sign_in_method(state).authorize(header_sign_in::carries_header(req, state)) {
            Authorize::ByProxyHeader => {
                let started = header_sign_in::start_session(req, state).await?;
                return Ok(signed_in(state, &started, &next));
            }
            Authorize::SessionOr(without_session) => without_session,
        };
    if visitor(req, state).await?.is_some() {
        return Ok(see_other(HttpResponse::Found(), next.as_str()));
    }
    match without_session {
        WithoutSession::ByProxyHeader => Err(header_sign_in::not_through_the_proxy()),
        WithoutSession::AtIdentityProvider => {
            sso_callback::to_identity_provider_for(req, state, next).await
        }
        WithoutSession::PasswordForm => Ok(login_form(state, &next)),
    }
}

/// The password form, with a fresh sign-in form cookie binding its CSRF token.
fn login_form(state: &AppState, next: &ReturnPath) -> HttpResponse {
    let (builder, login_cookie) = new_sign_in_form(state, LOGIN_PATH);
    let page = LoginPage {
        error: None,
        username: "",
        csrf_token: &csrf_token(&login_cookie),
        next: next.as_str(),
    };
    render(builder, &page)
}

/// `POST /login`: the password form.
async fn submit(
    req: &HttpRequest,
    payload: web::Payload,
    state: &AppState,
) -> Result<HttpResponse, Problem> {
    let (form, login_cookie) = read_sign_in_form(req, payload, state).await?;
    let next = next_of(&form);
    let username = field(&form, "username").unwrap_or_default();
    let password = field(&form, "password").unwrap_or_default();
    match check_password(state, username, password).await? {
        Ok(started) => Ok(signed_in(state, &started, &next)),
        Err(refused) => {
            let page = LoginPage {
                error: Some(&refused.alert),
                username,
                csrf_token: &csrf_token(&login_cookie),
                next: next.as_str(),
            };
            Ok(render(refused.error.page_builder(), &page))
        }
    }
}

/// The answer to a sign-in: the new session's cookie, the form's cookie cleared, and a 303
/// to `next`.
fn signed_in(state: &AppState, started: &StartedSession, next: &ReturnPath) -> HttpResponse {
    let mut builder = HttpResponse::SeeOther();
    builder
        .append_header((header::SET_COOKIE, session_cookie(state, started)))
        .append_header((
            header::SET_COOKIE,
            set_cookie(state, LOGIN_FORM_COOKIE, "", LOGIN_PATH, Some(0)),
        ));
    see_other(builder, next.as_str())
}

/// `POST /logout`: ends the browser's session when the form's CSRF token is bound to it,
/// clears the cookie and goes home. Without a session there is nothing to end. The access
/// tokens of applications stay valid (`POST /api/logout` is the spec's sign-out that ends
/// them too).
async fn sign_out(
    req: &HttpRequest,
    payload: web::Payload,
    state: &AppState,
) -> Result<HttpResponse, Problem> {
    let form = read_form(req, payload).await?;
    let mut builder = HttpResponse::SeeOther();
    if let Some(session) = cookie(req, SESSION_COOKIE) {
        let token = field(&form, "csrf_token").unwrap_or_default();
        if !csrf_matches(&Secret::new(&session), token) {
            tracing::warn!("sign-out form refused: CSRF token missing or not bound to the session");
            return Err(Problem {
                error: ApiError::Forbidden("the sign-out form expired".into()),
                heading: "This form has expired",
                message: "The sign-out form belongs to another session, so nothing was changed. \
                          Go back, reload the page and sign out again."
                    .into(),
            });
        }
        run(state, move |s| s.sessions().end_session(&session)).await?;
        builder.append_header((
            header::SET_COOKIE,
            set_cookie(state, SESSION_COOKIE, "", "/", Some(0)),
        ));
    }
    Ok(see_other(builder, "/"))
}
