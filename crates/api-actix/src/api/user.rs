//! `user` (spec §4): not yet implemented.

use actix_web::{HttpRequest, HttpResponse, web};

use super::{CollectionObject, not_implemented};
use crate::error::ApiError;
use crate::state::AppState;

const ALLOW: &str = "OPTIONS";

/// `/api/user/c/{c}/o/{o}`.
pub async fn handle(
    _req: HttpRequest,
    _path: CollectionObject,
    _payload: web::Payload,
    _state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Err(not_implemented(ALLOW))
}
