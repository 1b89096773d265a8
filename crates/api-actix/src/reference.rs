//! The API reference page, `GET /api/docs`: the served OpenAPI document
//! (`/api/openapi.json`) rendered by Swagger UI, whose files the build installs from npm
//! (`build.rs`) and this module compiles in: no CDN, nothing third-party in the repository.
//!
//! Its Authorize dialog signs in with OAuth's authorization-code flow and PKCE against this
//! service (the document's `oauth2` scheme), as the public client `docs_client_id` when one is
//! configured, whose redirect URI is `{base_url}/api/docs/oauth2-redirect.html`; "Try it out"
//! then calls the API with the token it got. The page runs only scripts of this service
//! (`script-src 'self'`); Swagger UI needs inline styles and `data:` images.

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use askama::Template;

use crate::browser::asset;
use crate::routing::read_only;
use crate::state::AppState;

/// Where the page sits.
pub const PATH: &str = "/api/docs";
/// Where Swagger UI's sign-in popup returns.
pub const REDIRECT_PATH: &str = "/api/docs/oauth2-redirect.html";

macro_rules! swagger_file {
    ($name:literal) => {
        include_bytes!(concat!(
            env!("OUT_DIR"),
            "/web/node_modules/swagger-ui-dist/",
            $name
        ))
    };
}

const BUNDLE: &[u8] = swagger_file!("swagger-ui-bundle.js");
const STYLESHEET: &[u8] = swagger_file!("swagger-ui.css");
const REDIRECT_SCRIPT: &[u8] = swagger_file!("oauth2-redirect.js");
/// This service's start-up script of the page (`templates/reference.js`).
const START: &str = include_str!("../templates/reference.js");
/// This service's touches over Swagger UI's stylesheet (`templates/reference.css`).
const OWN_STYLESHEET: &str = include_str!("../templates/reference.css");

/// The CSP of the page and its popup's return page.
const CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; \
     object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// Registers the page and its files.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(read_only(PATH, page))
        .service(read_only(REDIRECT_PATH, redirect_page))
        .service(read_only("/api/docs/swagger-ui-bundle.js", bundle))
        .service(read_only("/api/docs/swagger-ui.css", stylesheet))
        .service(read_only("/api/docs/oauth2-redirect.js", redirect_script))
        .service(read_only("/api/docs/reference.js", start))
        .service(read_only("/api/docs/reference.css", own_stylesheet));
}

#[derive(Template)]
#[template(path = "reference.html")]
struct ReferencePage<'a> {
    document: &'a str,
    redirect: String,
    client_id: &'a str,
}

#[derive(Template)]
#[template(path = "reference_redirect.html")]
struct RedirectPage;

/// `GET /api/docs`.
async fn page(state: web::Data<AppState>) -> HttpResponse {
    let config = state.config();
    let page = ReferencePage {
        document: crate::openapi::DOCUMENT_PATH,
        redirect: format!("{}{REDIRECT_PATH}", config.base_url),
        client_id: config.docs_client_id.as_deref().unwrap_or(""),
    };
    html(page.render())
}

/// `GET /api/docs/oauth2-redirect.html`: where the sign-in popup returns; Swagger UI's
/// script hands the code to the page that opened it.
async fn redirect_page() -> HttpResponse {
    html(RedirectPage.render())
}

fn html(rendered: askama::Result<String>) -> HttpResponse {
    match rendered {
        Ok(body) => HttpResponse::Ok()
            .content_type("text/html; charset=utf-8")
            .insert_header((header::CONTENT_SECURITY_POLICY, CSP))
            .insert_header((header::X_FRAME_OPTIONS, "DENY"))
            .insert_header((header::REFERRER_POLICY, "no-referrer"))
            .insert_header((header::CACHE_CONTROL, "no-cache"))
            .body(body),
        Err(e) => {
            tracing::error!(error = %e, "cannot render the API reference page");
            actix_web::ResponseError::error_response(&crate::error::ApiError::Internal)
        }
    }
}

async fn bundle() -> HttpResponse {
    asset("text/javascript; charset=utf-8", BUNDLE)
}

async fn stylesheet() -> HttpResponse {
    asset("text/css; charset=utf-8", STYLESHEET)
}

async fn redirect_script() -> HttpResponse {
    asset("text/javascript; charset=utf-8", REDIRECT_SCRIPT)
}

async fn start() -> HttpResponse {
    asset("text/javascript; charset=utf-8", START.as_bytes())
}

async fn own_stylesheet() -> HttpResponse {
    asset("text/css; charset=utf-8", OWN_STYLESHEET.as_bytes())
}
