//! CORS for the API (spec §4.1.8, DECISIONS.md §4), with actix-cors: browser callers from
//! the configured origins (`MEDIALIB_CORS_ORIGINS`) may call every path under `/api/`
//! except the authorization endpoint `/api/oauth/authorize*` (RFC 9700 §2.6: no CORS
//! there), and may read the authorization server metadata
//! (`/.well-known/oauth-authorization-server`).

use actix_web::dev::RequestHead;
use actix_web::http::header::{self, HeaderName, HeaderValue};

/// The request headers a cross-origin caller may send.
const ALLOW_HEADERS: [HeaderName; 3] = [
    header::AUTHORIZATION,
    header::CONTENT_TYPE,
    HeaderName::from_static("x-http-method-override"),
];

/// The response headers a cross-origin caller may read (beyond the CORS-safelisted ones).
const EXPOSE_HEADERS: [HeaderName; 4] = [
    header::ALLOW,
    header::RETRY_AFTER,
    header::WWW_AUTHENTICATE,
    HeaderName::from_static("x-request-id"),
];

/// How long a browser may cache a preflight answer, in seconds.
const MAX_AGE: usize = 600;

/// The CORS middleware for `origins` (inside path normalisation).
pub(crate) fn cors(origins: Vec<String>) -> actix_cors::Cors {
    actix_cors::Cors::default()
        .allowed_origin_fn(move |origin, req| applies(req) && is_allowed(origin, &origins))
        .allowed_methods(["GET", "HEAD", "PUT", "POST", "DELETE", "OPTIONS"])
        .allowed_headers(ALLOW_HEADERS)
        .expose_headers(EXPOSE_HEADERS)
        .max_age(MAX_AGE)
        .block_on_origin_mismatch(false)
}

/// The RFC 8414 metadata document: outside `/api/`, but browser clients read it too.
const METADATA_PATH: &str = "/.well-known/oauth-authorization-server";

/// Whether the path is an API path (or the metadata document) that CORS is offered on.
/// Only the path is known here: actix-cors decides before routing.
fn applies(req: &RequestHead) -> bool {
    // The sign-in form belongs to the authorization endpoint: no CORS there either.
    let authorize =
        |p: &str| p.starts_with("/api/oauth/authorize") || p.starts_with("/api/oauth/login");
    let path = req.uri.path();
    (path == "/api" || path.starts_with("/api/") || path == METADATA_PATH) && !authorize(path)
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
