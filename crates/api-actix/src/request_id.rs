//! One tracing span per request, identified by a random request id that is
//! also returned in the `X-Request-Id` response header.

use std::fmt;
use std::future::{Ready, ready};
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{FromRequest, HttpMessage, HttpRequest};
use tracing::Instrument;

/// The response header that carries the request id.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// A request's id: 128 random bits as 32 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(String);

impl RequestId {
    fn generate() -> Self {
        Self(format!("{:032x}", rand::random::<u128>()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Handlers may take the current request's id as an argument (for example to
/// put it in an opaque 500 body).
impl FromRequest for RequestId {
    type Error = actix_web::Error;
    type Future = Ready<Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let id = req.extensions().get::<RequestId>().cloned();
        ready(Ok(id.unwrap_or_else(RequestId::generate)))
    }
}

/// Middleware (for `middleware::from_fn`): opens the request span, records
/// status and latency, and adds the `X-Request-Id` header.
pub async fn request_span(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let request_id = RequestId::generate();
    let span = tracing::info_span!(
        "http_request",
        request_id = %request_id,
        method = %req.method(),
        path = %req.path(),
    );
    req.extensions_mut().insert(request_id.clone());
    let started = Instant::now();
    let result = next.call(req).instrument(span.clone()).await;
    let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let _entered = span.enter();
    match result {
        Ok(mut res) => {
            let status = res.status().as_u16();
            let shed = res
                .response()
                .error()
                .and_then(|e| e.as_error::<crate::error::ApiError>())
                .is_some_and(|e| matches!(e, crate::error::ApiError::Overloaded));
            if shed {
                // Expected under overload, and as many as the requests refused: counted in
                // `medialib_requests_shed_total`, and the start of shedding is logged once
                // (`admission.rs`), not each refusal at ERROR.
                tracing::debug!(status, latency_ms, "request shed");
            } else if crate::error::is_service_failure(res.status()) {
                tracing::error!(status, latency_ms, "request failed");
            } else {
                tracing::info!(status, latency_ms, "request finished");
            }
            if let Ok(value) = HeaderValue::from_str(request_id.as_str()) {
                res.headers_mut()
                    .insert(HeaderName::from_static(REQUEST_ID_HEADER), value);
            }
            Ok(res)
        }
        Err(error) => {
            tracing::error!(%error, latency_ms, "request failed in middleware");
            Err(error)
        }
    }
}
