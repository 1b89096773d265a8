//! `embed` and `video` (spec §4.6): read-only records of an object the caller may view
//! (`view` on the collection, DECISIONS.md §3).

use actix_web::HttpResponse;

use super::{Answer, Call, MemberPath, Resource, is_read, not_implemented};
use crate::apidoc::responses::ReadErrors;
use crate::apidoc::schemas::CollectionObjectId;
use crate::blocking::run_read;
use crate::records::{EmbedRecord, VideoRecord};

/// `embed` or `video`: the same path, checks and use case, another record.
pub(crate) struct Media<const VIDEO: bool>;

/// `/api/embed/c/{c}/o/{o}`.
pub(crate) type Embed = Media<false>;

/// `/api/video/c/{c}/o/{o}`.
pub(crate) type Video = Media<true>;

impl<const VIDEO: bool> Resource for Media<VIDEO> {
    const ALLOW: &'static str = "GET, HEAD, OPTIONS";
    type Path = MemberPath;

    async fn answer(call: Call<'_>, path: MemberPath) -> Answer {
        match call.input.method {
            ref m if is_read(m) && VIDEO => video(&call, path).await,
            ref m if is_read(m) => embed(&call, path).await,
            _ => Err(not_implemented(Self::ALLOW)),
        }
    }
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
pub(crate) async fn embed(call: &Call<'_>, MemberPath(c, o): MemberPath) -> Answer {
    call.only(&[])?;
    let caller = call.caller()?;
    let object = run_read(call.state, move |s| s.media().view_object(&caller, c, o)).await?;
    Ok(HttpResponse::Ok().json(EmbedRecord::new(&object, call.state.base_url())))
}

/// The playable files of a video or audio object.
///
/// Needs `view` on the collection; the object must be a member of it. A video lists each MP4
/// rendition (with its thumbnail track, size and bitrate), the HLS master playlist and the
/// SMIL; an audio recording its `.m4a` (format `mp4`); `images` the stills. URLs are signed
/// delivery URLs minted for this answer; `files` is `[]` and `images` `{}` until processing
/// made them. An object that is neither video nor audio is a 400.
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
pub(crate) async fn video(call: &Call<'_>, MemberPath(c, o): MemberPath) -> Answer {
    call.only(&[])?;
    let caller = call.caller()?;
    let view = run_read(call.state, move |s| s.uploads().video(&caller, c, o)).await?;
    Ok(HttpResponse::Ok().json(VideoRecord::new(&view, call.state.base_url())))
}
