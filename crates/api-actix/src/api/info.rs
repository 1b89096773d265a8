//! `info` (spec §4.5): the info record of an object reached through a collection (GET),
//! and changing its title and description (POST).

use actix_web::http::Method;
use actix_web::{HttpRequest, HttpResponse, web};
use medialib_domain::{Action, Caller, Description, ObjectId, ObjectPatch, Title};

use super::{
    CollectionObject, Public, begin, collection_id, is_read, not_implemented, options, path_real_id,
};
use crate::apidoc::responses::{ReadErrors, WriteErrors};
use crate::apidoc::schemas::{CollectionObjectId, InfoForm};
use crate::blocking::run;
use crate::error::ApiError;
use crate::input::ApiCall;
use crate::records::InfoRecord;
use crate::state::AppState;

const ALLOW: &str = "GET, HEAD, POST, OPTIONS";

/// `/api/info/c/{c}/o/{o}`.
pub async fn handle(
    req: HttpRequest,
    path: CollectionObject,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (call, who) = begin(&req, payload, &state, ALLOW, Public::Options).await?;
    let (c, o) = path.into_inner();
    let c = collection_id(&c)?;
    let o = path_real_id::<ObjectId>(&o, "object_id")?;
    match call.method {
        ref m if is_read(m) => {
            call.only(&[])?;
            read(&state, who.caller()?, c, o).await
        }
        Method::POST => {
            call.only(&["title", "description"])?;
            update(&state, who.caller()?, c, o, &call).await
        }
        Method::OPTIONS => {
            let writes = Action::Edit { collection: c };
            options(&state, &req, ALLOW, Some(writes)).await
        }
        _ => Err(not_implemented(ALLOW)),
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
pub(crate) async fn read(
    state: &AppState,
    caller: Caller,
    c: ObjectId,
    o: ObjectId,
) -> Result<HttpResponse, ApiError> {
    let info = run(state, move |s| s.people().object_info(&caller, c, o)).await?;
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
pub(crate) async fn update(
    state: &AppState,
    caller: Caller,
    c: ObjectId,
    o: ObjectId,
    call: &ApiCall,
) -> Result<HttpResponse, ApiError> {
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
    run(state, move |s| {
        s.media().update_object(&caller, c, o, patch)
    })
    .await?;
    Ok(HttpResponse::Accepted().finish())
}
