//! The one place where errors become HTTP status codes, headers and bodies.
//!
//! Handlers return [`ApiError`]; nothing else in the service picks a status.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;

/// Every failure an HTTP handler can answer with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// An unknown path under `/api/`.
    #[error("API method not found")]
    ApiMethodNotFound,
    /// An unknown path outside the API.
    #[error("not found")]
    NotFound,
    /// A known path called with a method it does not implement.
    #[error("method not implemented for this path")]
    MethodNotImplemented {
        /// The methods the path does implement, for the `Allow` header.
        allow: &'static str,
    },
    /// The database cannot be reached (or its pool is exhausted).
    #[error("database unavailable")]
    DatabaseUnavailable,
}

/// Seconds a client should wait before retrying a 503.
const RETRY_AFTER_SECONDS: &str = "5";

#[derive(Serialize)]
struct ErrorBody<'a> {
    message: &'a str,
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::ApiMethodNotFound | Self::NotFound => StatusCode::NOT_FOUND,
            Self::MethodNotImplemented { .. } => StatusCode::NOT_IMPLEMENTED,
            Self::DatabaseUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let mut builder = HttpResponse::build(self.status_code());
        match self {
            Self::MethodNotImplemented { allow } => {
                builder.insert_header((header::ALLOW, *allow));
            }
            Self::DatabaseUnavailable => {
                builder.insert_header((header::RETRY_AFTER, RETRY_AFTER_SECONDS));
            }
            Self::ApiMethodNotFound | Self::NotFound => {}
        }
        let message = self.to_string();
        builder
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .json(ErrorBody { message: &message })
    }
}
