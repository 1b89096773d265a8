//! The OAuth 2.0 authorization server's HTTP surface (DECISIONS.md §5):
//! the browser pages of the authorization endpoint ([`pages`], with the OpenID Connect
//! return at `/api/sso/oidc/callback`) and the client-facing JSON endpoints ([`endpoints`]).

mod endpoints;
mod pages;

use actix_web::{HttpRequest, HttpResponse, web};
use medialib_domain::sign_in::SignInMethod;

use crate::state::AppState;

/// The session cookie set after SSO sign-in (value `mlb_...`; HttpOnly, SameSite=Lax).
pub const SESSION_COOKIE: &str = "medialib_session";
/// The cookie binding the sign-in form's CSRF token before a session exists (`mlf_...`).
pub const LOGIN_FORM_COOKIE: &str = "medialib_login";

/// Registers the authorization server's routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(crate::routing::resource("/api/oauth/authorize").to(authorize))
        .service(crate::routing::resource("/api/oauth/login").to(pages::login))
        .service(
            crate::routing::resource("/api/sso/oidc/callback").to(pages::sso_callback::callback),
        )
        .service(crate::routing::resource("/api/oauth/access_token").to(endpoints::access_token))
        .service(crate::routing::resource("/api/oauth/revoke").to(endpoints::revoke))
        .service(crate::routing::resource("/api/oauth/introspect").to(endpoints::introspect))
        .service(
            crate::routing::resource("/.well-known/oauth-authorization-server")
                .to(endpoints::metadata),
        )
        .service(crate::routing::resource("/api/logout").to(endpoints::logout));
}

/// `/api/oauth/authorize` (a trailing slash is trimmed): a GET with no query string and an
/// `Authorization` header is the token-info call; everything else is the browser endpoint.
async fn authorize(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> HttpResponse {
    let token_info = req.method() == actix_web::http::Method::GET
        && req.query_string().is_empty()
        && req
            .headers()
            .contains_key(actix_web::http::header::AUTHORIZATION);
    if token_info {
        endpoints::token_info(req, state).await
    } else {
        pages::authorize(req, payload, state).await
    }
}

/// The configured sign-in method, in the domain's type, whose rules decide which way a
/// browser signs in (`medialib_ports::SignInMethod` names the same three methods).
fn sign_in_method(state: &AppState) -> SignInMethod {
    use medialib_ports::SignInMethod as Reported;
    match state.services().sign_in_method() {
        Reported::PasswordForm => SignInMethod::PasswordForm,
        Reported::Redirect => SignInMethod::Redirect,
        Reported::ProxyHeader => SignInMethod::ProxyHeader,
    }
}

/// The first value of cookie `name` in the request's `Cookie` headers (values are never logged).
fn cookie(req: &HttpRequest, name: &str) -> Option<String> {
    req.headers()
        .get_all(actix_web::http::header::COOKIE)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim_matches('"').to_owned())
}
