//! The OAuth 2.0 authorization server's HTTP surface (DECISIONS.md §5): the browser pages of
//! the authorization endpoint and the client-facing JSON endpoints ([`endpoints`]).
//!
//! The browser side, by concern: [`pages`] answers `/api/oauth/authorize` and the password
//! form; [`consent`] the consent page and its form; [`header_sign_in`] and [`sso_callback`]
//! the `header` and `oidc` sign-in modes (the OpenID Connect return at
//! `/api/sso/oidc/callback`); [`request`] judges the authorize parameters that [`params`]
//! reads; [`html`] gives every page its security headers and error pages. The cookies are
//! read and written here.

mod consent;
mod endpoints;
pub(crate) mod header_sign_in;
pub(crate) mod html;
pub(crate) mod pages;
pub(crate) mod params;
mod request;
pub(crate) mod sso_callback;

use actix_web::{HttpRequest, HttpResponse, web};
use medialib_domain::sign_in::SignInMethod;

use crate::state::AppState;

pub(crate) use crate::browser::{
    LOGIN_FORM_COOKIE, SESSION_COOKIE, cookie, session_cookie, set_cookie,
};

/// Where the sign-in cookie is sent (the sign-in form's POST and the authorize page).
pub(crate) const LOGIN_COOKIE_PATH: &str = "/api/oauth";

/// Registers the authorization server's routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(crate::routing::resource("/api/oauth/authorize").to(authorize))
        .service(crate::routing::resource("/api/oauth/login").to(pages::login))
        .service(crate::routing::resource("/api/sso/oidc/callback").to(sso_callback::callback))
        .service(
            crate::routing::resource("/api/oauth/access_token")
                .to(endpoints::client_endpoint::<endpoints::AccessToken>),
        )
        .service(
            crate::routing::resource("/api/oauth/revoke")
                .to(endpoints::client_endpoint::<endpoints::Revoke>),
        )
        .service(
            crate::routing::resource("/api/oauth/introspect")
                .to(endpoints::client_endpoint::<endpoints::Introspect>),
        )
        .service(
            crate::routing::resource("/.well-known/oauth-authorization-server")
                .to(crate::api::endpoint::<endpoints::MetadataDocument>),
        )
        .service(
            crate::routing::resource("/api/logout").to(crate::api::endpoint::<endpoints::Logout>),
        );
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

/// The configured sign-in method, whose rules (in the domain) decide which way a browser
/// signs in.
pub(crate) fn sign_in_method(state: &AppState) -> SignInMethod {
    state.services().sessions().sign_in_method()
}
