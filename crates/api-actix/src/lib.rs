//! medialib's HTTP surface: actix-web routes, the request-span middleware and
//! the one mapping from errors to HTTP responses ([`ApiError`]).
//!
//! This crate knows the ports and the domain, never a storage adapter: the
//! composition root (`crates/medialib`) hands it trait objects such as
//! [`Readiness`] inside an [`AppState`].

mod admission;
mod answers;
mod api;
mod apidoc;
mod auth;
mod blocking;
mod browser;
mod cors;
mod delivery;
mod error;
mod health;
mod input;
mod lti;
mod metrics;
mod normalize;
mod oauth;
mod openapi;
mod pages;
mod proxy;
mod ratelimit;
mod records;
mod reference;
mod request_id;
mod routing;
mod site;
mod state;
mod transfer;
mod upload;
mod upload_form;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::header;
use actix_web::middleware::{Condition, DefaultHeaders, from_fn};
use actix_web::{App, HttpRequest, HttpResponse, web};

pub use answers::DEFAULT_ANSWER_BUDGET;
pub use error::ApiError;
pub use metrics::{METRICS_PATH, PoolMetrics, PoolUsage};
pub use proxy::{ClientInfo, TrustedProxies};
pub use ratelimit::RateLimitConfig;
pub use request_id::{REQUEST_ID_HEADER, RequestId, request_span};
pub use state::{AppState, HttpConfig, Readiness};

/// Registers every route of the service, the shared state and the JSON 404 fallback.
///
/// [`app`] wraps this with the middleware; use `configure` directly only when
/// composing a custom [`App`].
pub fn configure(cfg: &mut web::ServiceConfig, state: AppState) {
    let metrics = std::sync::Arc::clone(&state.metrics);
    cfg.app_data(web::Data::new(state))
        .service(routing::read_only("/healthz", health::healthz))
        .service(routing::read_only("/readyz", health::readyz))
        .configure(|cfg| metrics::configure(cfg, metrics))
        .configure(api::configure)
        .configure(upload::configure)
        .configure(delivery::configure)
        .configure(oauth::configure)
        .configure(pages::configure)
        .configure(site::configure)
        .configure(lti::configure)
        .configure(openapi::configure)
        .configure(reference::configure)
        .default_service(web::to(not_found));
}

/// The complete application: routes from [`configure`], paths normalised
/// (a trailing slash is optional), one tracing span per request with its
/// id in the `X-Request-Id` response header, and every request counted for `/metrics`.
pub fn app(
    state: AppState,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let hsts = state.hsts();
    App::new()
        .wrap(from_fn(cors::cors))
        .wrap(from_fn(metrics::track))
        .wrap(from_fn(normalize::normalize_path))
        .wrap(from_fn(request_span))
        // Outermost, so that every answer carries them, errors and probes included
        // (DECISIONS.md §4); a handler's own value of either header is kept.
        .wrap(Condition::new(
            hsts,
            DefaultHeaders::new().add((header::STRICT_TRANSPORT_SECURITY, "max-age=31536000")),
        ))
        .wrap(DefaultHeaders::new().add((header::X_CONTENT_TYPE_OPTIONS, "nosniff")))
        .configure(move |cfg| configure(cfg, state))
}

/// Fallback for paths no route matches: the API namespace has its own message; elsewhere a
/// browser gets a page.
async fn not_found(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let path = req.path();
    if path == "/api" || path.starts_with("/api/") {
        Err(ApiError::ApiMethodNotFound)
    } else if site::wants_html(&req) {
        Ok(site::error_page(&ApiError::NotFound))
    } else {
        Err(ApiError::NotFound)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use actix_web::http::StatusCode;
    use actix_web::test;
    use medialib_adapters_memory::MemoryStore;
    use medialib_domain::Lifetime;
    use medialib_domain::oauth::{Issuer, TokenLifetimes};
    use medialib_ports::{ManualClock, RandomSource, ServiceSettings, Services};

    use super::*;

    /// Fixed "randomness": these tests draw nothing that has to differ.
    struct Zeros;

    impl RandomSource for Zeros {
        fn fill(&self, buf: &mut [u8]) {
            buf.fill(0);
        }
    }

    /// The use cases on an empty in-memory store.
    fn services() -> Services {
        let hour = Lifetime::from_seconds(3600).unwrap();
        Services::new(
            Arc::new(MemoryStore::new([7; 16])),
            Arc::new(ManualClock::at(1_700_000_000)),
            Arc::new(Zeros),
            ServiceSettings {
                lifetimes: TokenLifetimes {
                    access: hour,
                    refresh: hour,
                    retry_grace: None,
                },
                code_ttl: Lifetime::from_seconds(60).unwrap(),
                issuer: Issuer::new("http://localhost"),
                session_ttl: hour,
            },
        )
    }

    #[derive(Debug, Default)]
    struct Switch(AtomicBool);

    impl Readiness for Switch {
        fn ready(&self) -> Result<(), String> {
            if self.0.load(Ordering::SeqCst) {
                Ok(())
            } else {
                Err("connection refused".to_owned())
            }
        }
    }

    async fn call(
        switch: Arc<Switch>,
        req: test::TestRequest,
    ) -> (
        StatusCode,
        actix_web::http::header::HeaderMap,
        serde_json::Value,
    ) {
        let state = AppState::new(switch, services(), HttpConfig::default());
        let app = test::init_service(app(state)).await;
        let res = test::call_service(&app, req.to_request()).await;
        let status = res.status();
        let headers = res.headers().clone();
        let body = test::read_body(res).await;
        let json = if body.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::from_slice(&body).unwrap()
        };
        (status, headers, json)
    }

    fn up() -> Arc<Switch> {
        Arc::new(Switch(AtomicBool::new(true)))
    }

    #[actix_web::test]
    async fn healthz_is_ok_with_and_without_trailing_slash() {
        for path in ["/healthz", "/healthz/"] {
            let (status, headers, body) = call(up(), test::TestRequest::get().uri(path)).await;
            assert_eq!(status, StatusCode::OK, "{path}");
            assert_eq!(body, serde_json::json!({"status": "ok"}));
            let id = headers.get(REQUEST_ID_HEADER).unwrap().to_str().unwrap();
            assert_eq!(id.len(), 32, "request id is 128 bits of hex");
        }
    }

    #[actix_web::test]
    async fn readyz_follows_the_probe() {
        let switch = up();
        let (status, _, body) = call(switch.clone(), test::TestRequest::get().uri("/readyz")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, serde_json::json!({"status": "ready"}));

        switch.0.store(false, Ordering::SeqCst);
        let (status, headers, body) = call(switch, test::TestRequest::get().uri("/readyz")).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(headers.get("retry-after").unwrap(), "5");
        assert_eq!(body, serde_json::json!({"message": "database unavailable"}));
    }

    #[actix_web::test]
    async fn unknown_paths_are_json_404s() {
        for (path, message) in [
            ("/api/nope", "API method not found"),
            ("/api/", "API method not found"),
            ("/api", "API method not found"),
            ("/nope", "not found"),
            ("/apiary", "not found"),
        ] {
            let (status, headers, body) = call(up(), test::TestRequest::get().uri(path)).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
            assert_eq!(body, serde_json::json!({ "message": message }), "{path}");
            assert!(headers.contains_key(REQUEST_ID_HEADER));
        }
    }

    #[actix_web::test]
    async fn other_methods_on_health_are_501_with_allow() {
        let (status, headers, body) = call(up(), test::TestRequest::post().uri("/healthz")).await;
        assert_eq!(status, StatusCode::NOT_IMPLEMENTED);
        assert_eq!(headers.get("allow").unwrap(), "GET, HEAD");
        assert!(body["message"].is_string());
    }

    #[actix_web::test]
    async fn head_is_answered_like_get() {
        // actix-http drops the body of a HEAD response on the wire (tested over HTTP in tests/).
        let req = test::TestRequest::default()
            .method(actix_web::http::Method::HEAD)
            .uri("/readyz");
        let (status, _, _) = call(up(), req).await;
        assert_eq!(status, StatusCode::OK);
    }
}
