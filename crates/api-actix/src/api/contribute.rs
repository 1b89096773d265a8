//! `contribute` (spec §4.9): not yet implemented.

use actix_web::{HttpRequest, HttpResponse, web};

use super::not_implemented;
use crate::error::ApiError;
use crate::state::AppState;

const ALLOW: &str = "OPTIONS";

/// `/api/contribute/o/{o}`.
pub async fn handle(
    _req: HttpRequest,
    _path: web::Path<String>,
    _state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Err(not_implemented(ALLOW))
}
