//! CORS for the API (spec §4.1.8, DECISIONS.md §4): browser callers from the configured
//! origins (`MEDIALIB_CORS_ORIGINS`) may call every path under `/api/` (uploads with tus
//! included) and fetch delivered media under `/m/` (DECISIONS §7), except the
//! authorization endpoint `/api/oauth/authorize*` (RFC 9700 §2.6: no CORS there), and
//! may read the authorization server metadata (`/.well-known/oauth-authorization-server`).
//!
//! For an allowed `Origin` the response gets `Access-Control-Allow-Origin: <origin>`, and
//! a preflight (`OPTIONS`) also the path's methods (its `Allow` header), the request
//! headers a client may send, and a 10-minute max age. Other origins get no CORS header,
//! so the browser withholds the response. Every API response carries `Vary: Origin`
//! while origins are configured, so that a shared cache never serves one origin's answer
//! to another. No credentials mode: the API is called with a bearer token, not cookies.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::http::header::{self, HeaderMap, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{HttpRequest, web};

use crate::state::AppState;

/// The request headers a cross-origin caller may send.
/// The tus headers let a browser page on an allowed origin upload (tus-js-client, Uppy);
/// `Range` lets it fetch a part of a delivered file.
const ALLOW_HEADERS: &str = "Authorization, Content-Type, X-HTTP-Method-Override, Range, \
     Tus-Resumable, Upload-Length, Upload-Offset, Upload-Metadata, Upload-Checksum, \
     Upload-Defer-Length";

/// The response headers a cross-origin caller may read (beyond the CORS-safelisted ones).
const EXPOSE_HEADERS: &str = "Allow, Retry-After, WWW-Authenticate, X-Request-Id, Location, \
     Tus-Resumable, Tus-Version, Tus-Extension, Tus-Max-Size, Tus-Checksum-Algorithm, \
     Upload-Offset, Upload-Length, Upload-Expires, Content-Range, Accept-Ranges, ETag, \
     Content-Length";

/// How long a browser may cache a preflight answer, in seconds.
const MAX_AGE: &str = "600";

/// Middleware (for `middleware::from_fn`), inside path normalisation.
pub async fn cors(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let state = req.app_data::<web::Data<AppState>>().cloned();
    let mut res = next.call(req).await?;
    let origins = state
        .as_ref()
        .map_or(&[][..], |s| s.config().cors_origins.as_slice());
    if origins.is_empty() || !applies(res.request()) {
        return Ok(res);
    }
    let allowed = res
        .request()
        .headers()
        .get(header::ORIGIN)
        .filter(|o| is_allowed(o, origins))
        .cloned();
    let preflight = res.request().method() == Method::OPTIONS;
    let headers = res.headers_mut();
    headers.append(header::VARY, HeaderValue::from_static("Origin"));
    if let Some(origin) = allowed {
        add_cors_headers(headers, origin, preflight);
    }
    Ok(res)
}

/// The RFC 8414 metadata document: outside `/api/`, but browser clients read it too.
const METADATA_PATH: &str = "/.well-known/oauth-authorization-server";

/// Whether the path is an API path (or the metadata document) that CORS is offered on
/// (the matched route's pattern is checked too, so no spelling of the path reaches the
/// authorization endpoint with CORS headers).
fn applies(req: &HttpRequest) -> bool {
    // The sign-in form belongs to the authorization endpoint: no CORS there either.
    let authorize =
        |p: &str| p.starts_with("/api/oauth/authorize") || p.starts_with("/api/oauth/login");
    let path = req.path();
    (path == "/api"
        || path.starts_with("/api/")
        || path.starts_with("/m/")
        || path == METADATA_PATH)
        && !authorize(path)
        && !req.match_pattern().as_deref().is_some_and(authorize)
}

/// Exact match against a configured origin (a trailing slash there is ignored, the
/// scheme and host compare case-insensitively). `null` is never allowed.
fn is_allowed(origin: &HeaderValue, allowed: &[String]) -> bool {
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    origin != "null"
        && allowed
            .iter()
            .any(|a| a.trim_end_matches('/').eq_ignore_ascii_case(origin))
}

fn add_cors_headers(headers: &mut HeaderMap, origin: HeaderValue, preflight: bool) {
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSE_HEADERS),
    );
    if preflight {
        if let Some(allow) = headers.get(header::ALLOW).cloned() {
            headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, allow);
        }
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static(ALLOW_HEADERS),
        );
        headers.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static(MAX_AGE),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_match_exactly() {
        let allowed = vec!["https://lms.example.edu/".to_owned()];
        let ok = |o: &'static str| is_allowed(&HeaderValue::from_static(o), &allowed);
        assert!(ok("https://lms.example.edu"));
        assert!(ok("https://LMS.example.edu"));
        assert!(!ok("https://lms.example.edu.evil.example"));
        assert!(!ok("http://lms.example.edu"));
        assert!(!ok("https://lms.example.edu:8443"));
        assert!(!ok("null"));
        assert!(!is_allowed(
            &HeaderValue::from_static("null"),
            &["null".to_owned()]
        ));
    }
}
