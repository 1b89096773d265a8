//! The authorization endpoint's browser pages: sign-in and consent (askama, no JavaScript).

use actix_web::{HttpRequest, HttpResponse, web};

use crate::error::ApiError;
use crate::state::AppState;

/// `GET|POST /api/oauth/authorize`: validate, then the sign-in or consent page; the consent
/// form's POST approves or denies.
pub async fn authorize(
    _req: HttpRequest,
    _payload: web::Payload,
    _state: web::Data<AppState>,
) -> HttpResponse {
    HttpResponse::NotImplemented().finish()
}

/// `POST /api/oauth/login`: the `local` directory's sign-in form.
pub async fn login(
    _req: HttpRequest,
    _payload: web::Payload,
    _state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotImplemented("not yet".into()))
}
