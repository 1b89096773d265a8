//! `catalog` (spec §4.8): not yet implemented.

use actix_web::{HttpRequest, HttpResponse, web};

use super::{CollectionObject, not_implemented};
use crate::error::ApiError;
use crate::state::AppState;

const ALLOW: &str = "OPTIONS";

/// `/api/catalog/c/{c}/o/{o}`.
pub async fn handle(
    _req: HttpRequest,
    _path: CollectionObject,
    _payload: web::Payload,
    _state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Err(not_implemented(ALLOW))
}

/// `/api/catalog/o/{c}`: the same as `c/{c}/o/0`.
pub async fn handle_short(
    _req: HttpRequest,
    _path: web::Path<String>,
    _payload: web::Payload,
    _state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Err(not_implemented(ALLOW))
}
