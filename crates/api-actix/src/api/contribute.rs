//! `contribute` (spec §4.9): the libraries the caller administers, each saying whether
//! the object is a member of it.

use actix_web::{HttpRequest, HttpResponse, web};
use medialib_domain::{Caller, ObjectId};

use super::{Public, begin, is_read, not_implemented, options, path_real_id};
use crate::apidoc::responses::HiddenReadErrors;
use crate::apidoc::schemas::ObjectOnly;
use crate::blocking::run;
use crate::error::ApiError;
use crate::records::ContributeEntry;
use crate::state::AppState;

const ALLOW: &str = "GET, HEAD, OPTIONS";

/// `/api/contribute/o/{o}`.
pub async fn handle(
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (call, who) = begin(&req, payload, &state, ALLOW, Public::Options).await?;
    let o = path_real_id::<ObjectId>(&path.into_inner(), "object_id")?;
    match call.method {
        ref m if is_read(m) => {
            call.only(&[])?;
            list(&state, who.caller()?, o).await
        }
        actix_web::http::Method::OPTIONS => options(&state, &req, ALLOW, None).await,
        _ => Err(not_implemented(ALLOW)),
    }
}

/// The libraries the caller may add an object to.
///
/// Every library where the caller is `admin`, each saying whether the object is a member.
#[utoipa::path(
    get,
    path = "/api/contribute/o/{object_id}",
    operation_id = "contribute_get",
    tag = "contribute",
    params(ObjectOnly),
    responses(
        (status = 200, description = "The libraries, `[]` when there are none.", body = [ContributeEntry]),
        HiddenReadErrors,
    )
)]
pub(crate) async fn list(
    state: &AppState,
    caller: Caller,
    o: ObjectId,
) -> Result<HttpResponse, ApiError> {
    let libraries = run(state, move |s| s.people().contribute_libraries(&caller, o)).await?;
    let entries: Vec<ContributeEntry> = libraries
        .iter()
        .map(|l| ContributeEntry::new(&l.library, l.member))
        .collect();
    Ok(HttpResponse::Ok().json(entries))
}
