//! `info` (spec §4.5): the info record of an object reached through a collection (GET),
//! and changing its title and description (POST).

use actix_web::HttpResponse;
use medialib_domain::{Action, Description, ObjectPatch, Title};

use super::{Answer, Call, MemberPath, Resource, answer};
use crate::apidoc::responses::{ReadErrors, WriteErrors};
use crate::apidoc::schemas::{CollectionObjectId, InfoForm};
use crate::blocking::{run, run_read};
use crate::error::ApiError;
use crate::records::InfoRecord;

/// `/api/info/c/{c}/o/{o}`.
pub(crate) struct Info;

impl Resource for Info {
    const ALLOW: &'static str = "GET, HEAD, POST, OPTIONS";
    type Path = MemberPath;

    fn writes(MemberPath(c, _): MemberPath) -> Option<Action> {
        Some(Action::Edit { collection: c })
    }

    async fn answer(call: Call<'_>, path: MemberPath) -> Answer {
        answer!(call, path, read => read, POST => update)
    }
}

/// The info record of an object.
///
/// Needs `view` on the collection; the object must be a member of it.
#[utoipa::path(
    get,
    path = "/api/info/c/{collection_uuid}/o/{object_id}",
    operation_id = "info_get",
    tag = "info",
    params(CollectionObjectId),
    responses(
        (status = 200, description = "The info record (spec §2.5).", body = InfoRecord),
        ReadErrors,
    )
)]
pub(crate) async fn read(call: &Call<'_>, MemberPath(c, o): MemberPath) -> Answer {
    call.only(&[])?;
    let caller = call.caller()?;
    let info = run_read(call.state, move |s| s.people().object_info(&caller, c, o)).await?;
    Ok(HttpResponse::Ok().json(InfoRecord::new(&info.object, info.owner.as_ref())))
}

/// Change an object's title and description.
///
/// Needs `admin` on the collection. Absent fields keep their values. Fields may also be
/// sent in the query string.
#[utoipa::path(
    post,
    path = "/api/info/c/{collection_uuid}/o/{object_id}",
    operation_id = "info_post",
    tag = "info",
    params(CollectionObjectId),
    request_body(
        description = "The fields to change.",
        content = InfoForm,
    ),
    responses(
        (status = 202, description = "Updated (no body)."),
        WriteErrors,
    )
)]
pub(crate) async fn update(call: &Call<'_>, MemberPath(c, o): MemberPath) -> Answer {
    call.only(&["title", "description"])?;
    let caller = call.caller()?;
    let bad = |e: medialib_domain::InvalidText| ApiError::BadRequest(e.to_string());
    let patch = ObjectPatch {
        title: call
            .field("title")
            .map(Title::parse)
            .transpose()
            .map_err(bad)?,
        description: call
            .field("description")
            .map(Description::parse)
            .transpose()
            .map_err(bad)?,
        ..ObjectPatch::default()
    };
    run(call.state, move |s| {
        s.media().update_object(&caller, c, o, patch)
    })
    .await?;
    Ok(HttpResponse::Accepted().finish())
}
