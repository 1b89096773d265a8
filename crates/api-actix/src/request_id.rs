//! One tracing span per request, tracing-actix-web's `TracingLogger` with a root span of
//! ours ([`RootSpan`]), identified by the request id it draws (a random UUID), which is
//! also returned, as 32 lowercase hex digits, in the `X-Request-Id` response header.

use std::fmt;
use std::future::{Ready, ready};
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{FromRequest, HttpMessage, HttpRequest};
use tracing::Span;
use tracing_actix_web::RootSpanBuilder;

/// The response header that carries the request id.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// A request's id: 32 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(String);

impl RequestId {
    /// The id tracing-actix-web drew for the request, if its middleware runs.
    fn of(extensions: &actix_web::dev::Extensions) -> Option<Self> {
        extensions
            .get::<tracing_actix_web::RequestId>()
            .map(|id| Self(id.simple().to_string()))
    }

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
        let id = RequestId::of(&req.extensions());
        ready(Ok(id.unwrap_or_else(RequestId::generate)))
    }
}

/// When the request started (request extension), for the latency in the last log line.
#[derive(Debug, Clone, Copy)]
struct Started(Instant);

/// The request span and its closing log line, for `TracingLogger::<RootSpan>`.
#[derive(Debug)]
pub struct RootSpan;

impl RootSpanBuilder for RootSpan {
    fn on_request_start(req: &ServiceRequest) -> Span {
        let request_id = RequestId::of(&req.extensions()).unwrap_or_else(RequestId::generate);
        req.extensions_mut().insert(Started(Instant::now()));
        tracing::info_span!(
            "http_request",
            request_id = %request_id,
            method = %req.method(),
            path = %req.path(),
        )
    }

    fn on_request_end<B: MessageBody>(
        _span: Span,
        outcome: &Result<ServiceResponse<B>, actix_web::Error>,
    ) {
        // Called inside the span.
        match outcome {
            Ok(res) => {
                let latency_ms = res.request().extensions().get::<Started>().map_or(0, |s| {
                    u64::try_from(s.0.elapsed().as_millis()).unwrap_or(u64::MAX)
                });
                let status = res.status().as_u16();
                if crate::error::is_service_failure(res.status()) {
                    tracing::error!(status, latency_ms, "request failed");
                } else {
                    tracing::info!(status, latency_ms, "request finished");
                }
            }
            // No request left to read the start time from.
            Err(error) => tracing::error!(%error, "request failed in middleware"),
        }
    }
}

/// Middleware (for `middleware::from_fn`, inside `TracingLogger`): adds the
/// `X-Request-Id` header.
pub async fn request_id_header(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let request_id = RequestId::of(&req.extensions());
    let mut res = next.call(req).await?;
    if let Some(value) = request_id.and_then(|id| HeaderValue::from_str(id.as_str()).ok()) {
        res.headers_mut()
            .insert(HeaderName::from_static(REQUEST_ID_HEADER), value);
    }
    Ok(res)
}
