//! Path normalisation before routing: runs of `/` merge into one and trailing slashes go, so
//! `/api//describe/c/1/o/2/` reaches the same route as `/api/describe/c/1/o/2`.
//!
//! actix-web's `NormalizePath` does the same with a regular expression run on every request;
//! it was a measurable share of a describe's CPU (docs/performance.md). Here a path that is
//! already normal (almost every request) costs one scan and no allocation.

use actix_web::HttpMessage as _;
use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::uri::{PathAndQuery, Uri};
use actix_web::middleware::Next;

/// Middleware (for `middleware::from_fn`): rewrites the request's path to its normal form
/// (see [`normalized`]) before the router sees it; the query string is kept as it was.
pub async fn normalize_path(
    mut req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    if let Some(path) = normalized(req.path()) {
        let original = OriginalPath(req.path().to_owned());
        req.extensions_mut().insert(original);
        let mut parts = req.head().uri.clone().into_parts();
        let path_and_query = match parts.path_and_query.as_ref().and_then(PathAndQuery::query) {
            Some(query) => format!("{path}?{query}"),
            None => path,
        };
        // The pieces come from a URI that parsed, so these cannot fail; if they did, the
        // request would simply be routed as it came.
        if let Ok(pq) = PathAndQuery::try_from(path_and_query) {
            parts.path_and_query = Some(pq);
            if let Ok(uri) = Uri::from_parts(parts) {
                req.match_info_mut().get_mut().update(&uri);
                req.head_mut().uri = uri;
            }
        }
    }
    next.call(req).await
}

/// The path a request came with, kept (as a request extension) when [`normalize_path`]
/// rewrote it: an LTI 1.1 signature covers the URL as the consumer sent it.
#[derive(Debug, Clone)]
pub struct OriginalPath(pub String);

/// `path` with every run of `/` made one and trailing slashes removed (`/` itself stays);
/// `None` when that changes nothing. An empty path (a URI without one) is left alone.
pub fn normalized(path: &str) -> Option<String> {
    let bytes = path.as_bytes();
    let doubled = bytes.windows(2).any(|w| w == b"//");
    let trailing = bytes.len() > 1 && bytes.last() == Some(&b'/');
    if path.is_empty() || !(doubled || trailing) {
        return None;
    }
    let mut out = String::with_capacity(path.len());
    for ch in path.chars() {
        if ch == '/' && out.ends_with('/') {
            continue;
        }
        out.push(ch);
    }
    while out.len() > 1 && out.ends_with('/') {
        out.pop();
    }
    (out != path).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::normalized;

    #[test]
    fn normal_paths_are_left_alone() {
        for path in ["/", "/api/describe/c/1/o/2", "/a", "", "/api/catalog/o/0"] {
            assert_eq!(normalized(path), None, "{path:?}");
        }
    }

    #[test]
    fn slashes_are_merged_and_trailing_ones_trimmed() {
        let cases = [
            ("//", "/"),
            ("///", "/"),
            ("/api/", "/api"),
            ("/api///", "/api"),
            ("//api//describe/c/1//o/2/", "/api/describe/c/1/o/2"),
            ("/a//b", "/a/b"),
            ("/v1//s/", "/v1/s"),
        ];
        for (path, want) in cases {
            assert_eq!(normalized(path).as_deref(), Some(want), "{path:?}");
        }
    }

    #[test]
    fn what_comes_out_is_normal() {
        // Every path over a small alphabet, up to 6 characters: the result is a fixed point
        // and keeps every non-slash character in order.
        let alphabet = ['/', 'a', 'b'];
        let mut paths = vec![String::new()];
        for _ in 0..6 {
            let longer: Vec<String> = paths
                .iter()
                .flat_map(|p| alphabet.iter().map(move |c| format!("{p}{c}")))
                .collect();
            paths.extend(longer);
        }
        for path in paths.iter().filter(|p| p.starts_with('/')) {
            let out = normalized(path).unwrap_or_else(|| path.clone());
            assert_eq!(normalized(&out), None, "{path:?} -> {out:?}");
            assert!(
                !out.contains("//") && (out == "/" || !out.ends_with('/')),
                "{out:?}"
            );
            let letters = |s: &str| s.chars().filter(|c| *c != '/').collect::<String>();
            assert_eq!(letters(&out), letters(path));
        }
    }
}
