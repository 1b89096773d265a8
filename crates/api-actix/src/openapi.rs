//! The OpenAPI document served at `GET /api/openapi.json`.

use actix_web::web;

/// Registers the OpenAPI route.
pub fn configure(_cfg: &mut web::ServiceConfig) {}
