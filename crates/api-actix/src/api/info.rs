//! `info` (spec §4.5): the info record of an object reached through a collection (GET),
//! and changing its title and description (POST).

use actix_web::http::Method;
use actix_web::{HttpRequest, HttpResponse, web};
use medialib_domain::{Description, ObjectId, ObjectPatch, Title};

use super::{CollectionObject, collection_id, is_read, not_implemented, options, path_real_id};
use crate::auth::{reader, writer};
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
    let call = ApiCall::read(&req, payload).await?;
    let (c, o) = path.into_inner();
    let c = collection_id(&c)?;
    let o = path_real_id::<ObjectId>(&o, "object_id")?;
    match call.method {
        ref m if is_read(m) => read(&state, &req, c, o).await,
        Method::POST => update(&state, &req, c, o, &call).await,
        Method::OPTIONS => options(&state, &req, ALLOW, Some(c)).await,
        _ => Err(not_implemented(ALLOW)),
    }
}

async fn read(
    state: &AppState,
    req: &HttpRequest,
    c: ObjectId,
    o: ObjectId,
) -> Result<HttpResponse, ApiError> {
    let caller = reader(state, req).await?;
    let info = run(state, move |s| s.object_info(&caller, c, o)).await?;
    Ok(HttpResponse::Ok().json(InfoRecord::new(&info.object, info.owner.as_ref())))
}

async fn update(
    state: &AppState,
    req: &HttpRequest,
    c: ObjectId,
    o: ObjectId,
    call: &ApiCall,
) -> Result<HttpResponse, ApiError> {
    let caller = writer(state, req).await?;
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
    run(state, move |s| s.update_object(&caller, c, o, patch)).await?;
    Ok(HttpResponse::Accepted().finish())
}
