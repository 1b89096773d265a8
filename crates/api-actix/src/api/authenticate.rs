//! `authenticate` (spec §4.7): whether the caller's token is good; never fails on a bad one.

use actix_web::http::Method;
use actix_web::{HttpRequest, HttpResponse, web};
use medialib_domain::object::bool_str;
use serde::Serialize;

use super::{Public, begin, is_read, not_implemented, options};
use crate::apidoc::responses::Unavailable;
use crate::auth::optional_caller;
use crate::error::ApiError;
use crate::state::AppState;

const ALLOW: &str = "GET, HEAD, OPTIONS";

/// The answer of `GET /api/authenticate` (spec §2.8).
#[derive(Serialize, utoipa::ToSchema)]
struct AuthenticateRecord {
    /// Always `authenticate`.
    #[serde(rename = "type")]
    kind: &'static str,
    /// `"true"` when a valid token was presented, else `"false"`; a bad token is not an error here.
    authenticated: &'static str,
}

/// Whether the caller is authenticated.
///
/// Never fails on a bad token: an unknown, expired or revoked token answers
/// `authenticated: "false"`.
#[utoipa::path(
    get,
    path = "/api/authenticate",
    operation_id = "authenticate_get",
    tag = "authenticate",
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "Whether the presented token is good.", body = AuthenticateRecord,
            example = json!({"type": "authenticate", "authenticated": "false"})),
        (status = 503, response = Unavailable),
    )
)]
pub async fn handle(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    // Read the call like every resource does: a body is consumed (and limited) before the
    // answer, so a client still sending one never meets a closed connection.
    let (call, _) = begin(&req, payload, &state, ALLOW, Public::All).await?;
    match &call.method {
        m if is_read(m) => {
            call.only(&[])?;
            let authenticated = match optional_caller(&state, &req).await {
                Ok(c) => c.is_some(),
                Err(ApiError::InvalidToken) => false,
                Err(e) => return Err(e),
            };
            Ok(HttpResponse::Ok().json(AuthenticateRecord {
                kind: "authenticate",
                authenticated: bool_str(authenticated),
            }))
        }
        &Method::OPTIONS => options(&state, &req, ALLOW, None).await,
        _ => Err(not_implemented(ALLOW)),
    }
}
