//! `embed` and `video` (spec §4.6): read-only records of an object the caller may view
//! (`view` on the collection, DECISIONS.md §3).

use actix_web::http::Method;
use actix_web::{HttpRequest, HttpResponse, web};
use medialib_domain::{Caller, ObjectId};

use super::{
    CollectionObject, Public, begin, collection_id, is_read, not_implemented, options, path_real_id,
};
use crate::apidoc::responses::ReadErrors;
use crate::apidoc::schemas::CollectionObjectId;
use crate::blocking::run;
use crate::error::ApiError;
use crate::records::{EmbedRecord, VideoRecord};
use crate::state::AppState;

const ALLOW: &str = "GET, HEAD, OPTIONS";

/// Which record a path answers with.
#[derive(Debug, Clone, Copy)]
enum Record {
    Embed,
    Video,
}

/// The embed codes of an object.
///
/// Needs `view` on the collection; the object must be a member of it.
#[utoipa::path(
    get,
    path = "/api/embed/c/{collection_uuid}/o/{object_id}",
    operation_id = "embed_get",
    tag = "media",
    params(CollectionObjectId),
    responses(
        (status = 200, description = "The embed record (spec §2.6).", body = EmbedRecord),
        ReadErrors,
    )
)]
pub async fn embed(
    req: HttpRequest,
    path: CollectionObject,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    handle(&req, path, payload, &state, Record::Embed).await
}

/// The playable files of a video or audio object.
///
/// Needs `view` on the collection; the object must be a member of it. An object that is
/// neither video nor audio is a 400.
#[utoipa::path(
    get,
    path = "/api/video/c/{collection_uuid}/o/{object_id}",
    operation_id = "video_get",
    tag = "media",
    params(CollectionObjectId),
    responses(
        (status = 200, description = "The video record (spec §2.7).", body = VideoRecord),
        ReadErrors,
    )
)]
pub async fn video(
    req: HttpRequest,
    path: CollectionObject,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    handle(&req, path, payload, &state, Record::Video).await
}

async fn handle(
    req: &HttpRequest,
    path: CollectionObject,
    payload: web::Payload,
    state: &AppState,
    record: Record,
) -> Result<HttpResponse, ApiError> {
    let (call, who) = begin(req, payload, state, ALLOW, Public::Options).await?;
    let (c, o) = path.into_inner();
    let c = collection_id(&c)?;
    let o = path_real_id::<ObjectId>(&o, "object_id")?;
    match call.method {
        ref m if is_read(m) => {
            call.only(&[])?;
            read(state, who.caller()?, c, o, record).await
        }
        Method::OPTIONS => options(state, req, ALLOW, None).await,
        _ => Err(not_implemented(ALLOW)),
    }
}

async fn read(
    state: &AppState,
    caller: Caller,
    c: ObjectId,
    o: ObjectId,
    record: Record,
) -> Result<HttpResponse, ApiError> {
    match record {
        Record::Embed => {
            let object = run(state, move |s| s.media().view_object(&caller, c, o)).await?;
            Ok(HttpResponse::Ok().json(EmbedRecord::new(&object, state.base_url())))
        }
        Record::Video => {
            let object = run(state, move |s| s.media().view_video(&caller, c, o)).await?;
            Ok(HttpResponse::Ok().json(VideoRecord::new(&object)))
        }
    }
}
