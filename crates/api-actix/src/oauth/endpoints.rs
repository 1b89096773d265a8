//! The client-facing JSON endpoints: token, revoke, introspect, metadata, token info, logout.

use actix_web::{HttpRequest, HttpResponse, web};

use crate::error::ApiError;
use crate::state::AppState;

/// `POST /api/oauth/access_token`.
pub async fn access_token(
    _req: HttpRequest,
    _payload: web::Payload,
    _state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotImplemented("not yet".into()))
}

/// `POST /api/oauth/revoke` (RFC 7009).
pub async fn revoke(
    _req: HttpRequest,
    _payload: web::Payload,
    _state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotImplemented("not yet".into()))
}

/// `POST /api/oauth/introspect` (RFC 7662).
pub async fn introspect(
    _req: HttpRequest,
    _payload: web::Payload,
    _state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotImplemented("not yet".into()))
}

/// `GET /.well-known/oauth-authorization-server` (RFC 8414).
pub async fn metadata(
    _req: HttpRequest,
    _state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotImplemented("not yet".into()))
}

/// `POST /api/logout`.
pub async fn logout(
    _req: HttpRequest,
    _payload: web::Payload,
    _state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotImplemented("not yet".into()))
}

/// `GET /api/oauth/authorize/` with a bearer token: what the token is.
pub async fn token_info(_req: HttpRequest, _state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::NotImplemented().finish()
}
