//! The pages people use (issue 21), server-rendered with askama and usable without
//! JavaScript:
//!
//! - `GET /`: the signed-in person's libraries, or what medialib is and a sign-in button;
//! - `GET /login?next=PATH`: signing in with the configured method (`local`: medialib's
//!   password form, posted back to `POST /login`; `oidc`: the identity provider, whose return
//!   ends here; `header`: the proxy's header), the same browser session as the authorization
//!   pages; then a 303 to `next`, which is only ever a path of this service
//!   ([`ReturnPath`](medialib_domain::sign_in::ReturnPath));
//! - `POST /logout`: ends the browser session (CSRF-checked against it) and goes home;
//! - `GET /libraries/{uuid}`: a library's members with their stills, type, duration and the
//!   state of their processing, for a person with `view` on it; for its admins also the forms
//!   of `POST /libraries/{uuid}` (`manage.rs`): edit it, add a sub-library, the people on it.
//!
//! The use cases decide who sees what (the same gate as the API); these handlers read the
//! session, call them and render. Every page is `no-store`, never framed, sends no referrer,
//! and loads only this service's own stylesheet, scripts, stills and media (CSP
//! `default-src 'self'`, no inline script).
//!
//! The library page uploads with tus from the page (`templates/library.js` on
//! tus-js-client, `assets.rs`): its requests carry the session cookie and the session's CSRF
//! token in `X-CSRF-Token` ([`page_caller`](crate::browser::page_caller)).

mod assets;
mod home;
mod library;
mod manage;
mod sign_in;

use actix_web::http::header;
use actix_web::{HttpResponse, HttpResponseBuilder, web};
use askama::Template;

pub(crate) use crate::browser::{Visitor, error_page, here, page_headers, visitor, wants_html};
use crate::error::ApiError;
use crate::routing::{read_only, resource};

/// The stylesheet of these pages.
const STYLESHEET: &str = include_str!("../../templates/site.css");

/// Registers the routes of these pages.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(read_only("/", home::home))
        .service(resource("/login").to(sign_in::login))
        .service(resource("/logout").to(sign_in::logout))
        .service(
            resource("/libraries/{library}")
                .route(web::get().to(library::library))
                .route(web::head().to(library::library))
                .route(web::post().to(manage::manage))
                .default_service(web::to(library_methods)),
        )
        .service(read_only("/assets/site.css", stylesheet))
        .service(read_only("/assets/library.js", assets::library_script))
        .service(read_only("/assets/tus.min.js", assets::tus_client));
}

/// Renders `page` with `builder`'s status and the page headers.
fn render(mut builder: HttpResponseBuilder, page: &impl Template) -> HttpResponse {
    match page.render() {
        Ok(body) => {
            page_headers(&mut builder);
            builder.content_type("text/html; charset=utf-8").body(body)
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot render a page");
            error_page(&ApiError::Internal)
        }
    }
}

/// A 303 to `location` (after a form), or a 302 (a GET that sends the browser on).
fn see_other(mut builder: HttpResponseBuilder, location: &str) -> HttpResponse {
    builder
        .insert_header((header::LOCATION, location))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .finish()
}

/// Any other method on a library's page.
async fn library_methods() -> HttpResponse {
    error_page(&ApiError::MethodNotImplemented {
        allow: "GET, HEAD, POST",
    })
}

/// `GET /assets/site.css`.
async fn stylesheet() -> HttpResponse {
    crate::pages::css(STYLESHEET)
}
