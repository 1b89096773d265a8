//! `GET /healthz` (the process answers) and `GET /readyz` (the database answers).

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use serde_json::json;
use tracing::Span;

use crate::apidoc::responses::Unavailable;
use crate::apidoc::schemas::HealthStatus;
use crate::{ApiError, AppState};

/// Liveness: the process answers.
#[utoipa::path(
    get,
    path = "/healthz",
    operation_id = "healthz",
    tag = "health",
    security(()),
    responses(
        (status = 200, description = "The process is up.", body = HealthStatus,
            example = json!({"status": "ok"})),
    )
)]
pub(crate) async fn healthz() -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(json!({"status": "ok"}))
}

/// Readiness: the database answers.
#[utoipa::path(
    get,
    path = "/readyz",
    operation_id = "readyz",
    tag = "health",
    security(()),
    responses(
        (status = 200, description = "The database answers.", body = HealthStatus,
            example = json!({"status": "ready"})),
        (status = 503, response = Unavailable),
    )
)]
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
