//! `contribute` (spec §4.9): the libraries the caller administers, each saying whether
//! the object is a member of it.

use actix_web::HttpResponse;
use medialib_domain::ObjectId;

use super::{Answer, Call, PathIds, Resource, answer, path_real_id};
use crate::apidoc::responses::HiddenReadErrors;
use crate::apidoc::schemas::ObjectOnly;
use crate::blocking::run;
use crate::error::ApiError;
use crate::records::ContributeEntry;

/// `/api/contribute/o/{o}`.
pub(crate) struct Contribute;

/// `o/{object_id}`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ObjectPath(ObjectId);

impl PathIds for ObjectPath {
    type Segments = String;

    fn parse(o: String) -> Result<Self, ApiError> {
        path_real_id(&o, "object_id").map(Self)
    }
}

impl Resource for Contribute {
    const ALLOW: &'static str = "GET, HEAD, OPTIONS";
    type Path = ObjectPath;

    async fn answer(call: Call<'_>, path: ObjectPath) -> Answer {
        answer!(call, path, read => list)
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
pub(crate) async fn list(call: &Call<'_>, ObjectPath(o): ObjectPath) -> Answer {
    call.only(&[])?;
    let caller = call.caller()?;
    let libraries = run(call.state, move |s| {
        s.people().contribute_libraries(&caller, o)
    })
    .await?;
    let entries: Vec<ContributeEntry> = libraries
        .iter()
        .map(|l| ContributeEntry::new(&l.library, l.member))
        .collect();
    Ok(HttpResponse::Ok().json(entries))
}
