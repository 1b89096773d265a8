//! `embed` and `video` (spec §4.6): not yet implemented.

use actix_web::{HttpRequest, HttpResponse, web};

use super::{CollectionObject, not_implemented};
use crate::error::ApiError;
use crate::state::AppState;

const ALLOW: &str = "OPTIONS";

/// `/api/embed/c/{c}/o/{o}`.
pub async fn embed(
    _req: HttpRequest,
    _path: CollectionObject,
    _state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Err(not_implemented(ALLOW))
}

/// `/api/video/c/{c}/o/{o}`.
pub async fn video(
    _req: HttpRequest,
    _path: CollectionObject,
    _state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Err(not_implemented(ALLOW))
}
