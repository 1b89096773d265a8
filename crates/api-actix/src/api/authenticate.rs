//! `authenticate` (spec §4.7): whether the caller's token is good; never fails on a bad one.

use actix_web::HttpResponse;
use medialib_domain::object::bool_str;
use serde::Serialize;

use super::{Answer, Call, Public, Resource, answer};
use crate::apidoc::responses::Unavailable;
use crate::auth::optional_caller;
use crate::error::ApiError;

/// `/api/authenticate`. Its call is read like every resource's (a body is consumed, and
/// limited, before the answer, so a client still sending one never meets a closed
/// connection), but it is public: it judges the token itself.
pub(crate) struct Authenticate;

impl Resource for Authenticate {
    const ALLOW: &'static str = "GET, HEAD, OPTIONS";
    const PUBLIC: Public = Public::All;
    type Path = ();

    async fn answer(call: Call<'_>, (): ()) -> Answer {
        answer!(call, (), read => read)
    }
}

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
    security((), ("bearer" = []), ("oauth2" = ["read"])),
    responses(
        (status = 200, description = "Whether the presented token is good.", body = AuthenticateRecord,
            example = json!({"type": "authenticate", "authenticated": "false"})),
        (status = 503, response = Unavailable),
    )
)]
pub(crate) async fn read(call: &Call<'_>, (): ()) -> Answer {
    call.only(&[])?;
    let authenticated = match optional_caller(call.state, call.req).await {
        Ok(c) => c.is_some(),
        Err(ApiError::InvalidToken) => false,
        Err(e) => return Err(e),
    };
    Ok(HttpResponse::Ok().json(AuthenticateRecord {
        kind: "authenticate",
        authenticated: bool_str(authenticated),
    }))
}
