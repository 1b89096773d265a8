//! `GET /healthz` (the process answers) and `GET /readyz` (the database answers; its body also
//! says when a write was refused for want of space in the last five minutes).

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use serde_json::json;
use tracing::Span;

use crate::apidoc::responses::Unavailable;
use crate::apidoc::schemas::HealthStatus;
use crate::{ApiError, AppState};

/// How long `/readyz` mentions a write refused for want of space (507).
const SPACE_NOTE: std::time::Duration = std::time::Duration::from_secs(300);

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
    let probe = web::block(move || span.in_scope(|| readiness.ready()));
    let outcome = crate::blocking::within_deadline(&state, probe).await?;
    match outcome {
        Ok(Ok(())) => {
            // Reads still work on a full disk, so the service stays ready; it says so.
            let body = match state.metrics.out_of_space_seen() {
                Some(ago) if ago <= SPACE_NOTE => json!({
                    "status": "ready",
                    "space": format!(
                        "a write was refused for want of space {} s ago",
                        ago.as_secs()
                    ),
                }),
                _ => json!({"status": "ready"}),
            };
            Ok(HttpResponse::Ok()
                .insert_header((header::CACHE_CONTROL, "no-store"))
                .json(body))
        }
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
