//! `GET /healthz` (the process answers) and `GET /readyz` (the database answers).

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use serde_json::json;
use tracing::Span;

use crate::{ApiError, AppState};

/// Liveness: answering at all is the whole check.
pub(crate) async fn healthz() -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(json!({"status": "ok"}))
}

/// Readiness: pings the database on the blocking pool, keeping the request span.
pub(crate) async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let readiness = state.readiness();
    let span = Span::current();
    let outcome = web::block(move || span.in_scope(|| readiness.ready())).await;
    match outcome {
        Ok(Ok(())) => Ok(HttpResponse::Ok()
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .json(json!({"status": "ready"}))),
        Ok(Err(reason)) => {
            tracing::warn!(%reason, "readiness probe failed");
            Err(ApiError::DatabaseUnavailable)
        }
        Err(blocking) => {
            tracing::error!(error = %blocking, "readiness probe could not run");
            Err(ApiError::DatabaseUnavailable)
        }
    }
}
