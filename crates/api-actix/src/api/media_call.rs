//! `media` (DECISIONS §7): where an object's media stands (GET), processing again (POST
//! `action=reprocess`), removing it (DELETE).

use actix_web::HttpResponse;
use medialib_domain::Action;
use medialib_ports::services::{MediaFailed, MediaView};
use serde::Serialize;

use super::{Answer, Call, MemberPath, Resource, answer};
use crate::apidoc::responses::{ConflictingWriteErrors, ReadErrors, WriteErrors};
use crate::apidoc::schemas::{CollectionObjectId, ErrorBody, MediaActionForm};
use crate::blocking::run;
use crate::error::ApiError;

/// `/api/media/c/{c}/o/{o}`.
pub(crate) struct Media;

impl Resource for Media {
    const ALLOW: &'static str = "GET, HEAD, POST, DELETE, OPTIONS";
    type Path = MemberPath;

    fn writes(MemberPath(c, _): MemberPath) -> Option<Action> {
        Some(Action::Edit { collection: c })
    }

    async fn answer(call: Call<'_>, path: MemberPath) -> Answer {
        answer!(call, path, read => read, POST => reprocess, DELETE => remove)
    }
}

impl From<MediaFailed> for ApiError {
    fn from(e: MediaFailed) -> Self {
        match e {
            MediaFailed::NotFound | MediaFailed::NoMedia => Self::Missing(e.to_string()),
            MediaFailed::NotProcessed => Self::Conflict(e.to_string()),
            MediaFailed::Storage(s) => s.into(),
            MediaFailed::Refused(r) => r.into(),
            MediaFailed::Store(s) => s.into(),
        }
    }
}

/// The stored source file.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = MediaSource)]
pub(crate) struct SourceRecord {
    /// The client's file name.
    filename: Option<String>,
    /// Bytes.
    size: u64,
    /// SHA-256, lower-case hex.
    sha256: String,
    /// The `Content-Type` it is delivered with.
    content_type: String,
}

/// A file of an object's media.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = MediaFile)]
pub(crate) struct FileRecord {
    /// `source`, or what a derived file is: `rendition` (an MP4, or an audio recording's
    /// `.m4a`), `hls` (the master playlist), `hls-playlist` and `hls-media` (one rendition's
    /// HLS playlist and the file its segments are ranges of), `smil`, `thumbnails` (the WebVTT
    /// track), `sprite` (a sheet of it), `still` (128x128, 512x512, 1280x760), `waveform`.
    role: &'static str,
    /// The format (the file's extension).
    format: String,
    /// A signed delivery URL.
    url: String,
    /// Bytes.
    size: u64,
    /// Pixels, for video and images.
    width: Option<u32>,
    /// Pixels, for video and images.
    height: Option<u32>,
    /// Bits per second, for audio and video.
    bitrate: Option<u64>,
}

/// The media call's answer (DECISIONS §7).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct MediaRecord {
    /// Always `media`.
    #[serde(rename = "type")]
    kind: &'static str,
    /// `uploading`, `queued`, `processing`, `ready` or `failed`.
    state: &'static str,
    /// Processing progress, 0 to 100.
    progress: u8,
    /// The last processing error, for people.
    error: Option<String>,
    /// Processing attempts so far.
    attempts: u32,
    /// The stored source, once an upload finished.
    source: Option<SourceRecord>,
    /// The files with fresh signed URLs.
    files: Vec<FileRecord>,
    /// Last change, epoch seconds.
    modified: i64,
}

impl MediaRecord {
    fn new(view: MediaView, base_url: &str) -> Self {
        let r = view.record;
        Self {
            kind: "media",
            state: r.state.as_str(),
            progress: r.progress,
            error: r.error,
            attempts: r.attempts,
            source: r.source.map(|s| SourceRecord {
                filename: s.filename.map(|f| f.as_str().to_owned()),
                size: s.size,
                sha256: medialib_domain::hex::lower(&s.sha256),
                content_type: s.content_type,
            }),
            files: view
                .files
                .into_iter()
                .map(|f| FileRecord {
                    role: f.role,
                    format: f.format,
                    url: format!("{base_url}{}", f.path),
                    size: f.size,
                    width: f.dimensions.map(|d| d.width()),
                    height: f.dimensions.map(|d| d.height()),
                    bitrate: f.bitrate.map(u64::from),
                })
                .collect(),
            modified: r.modified.epoch_seconds(),
        }
    }
}

/// Where an object's media stands.
///
/// Needs `view` on the collection. `state` goes `uploading` → `queued` → `processing` →
/// `ready` | `failed`; `files` carry signed delivery URLs minted for this answer.
#[utoipa::path(
    get,
    path = "/api/media/c/{collection_uuid}/o/{object_id}",
    operation_id = "media_get",
    tag = "upload",
    params(CollectionObjectId),
    responses(
        (status = 200, description = "The media record.", body = MediaRecord),
        ReadErrors,
    )
)]
pub(crate) async fn read(call: &Call<'_>, MemberPath(c, o): MemberPath) -> Answer {
    call.only(&[])?;
    let caller = call.caller()?;
    let view = run(call.state, move |s| s.uploads().media(Some(&caller), c, o)).await?;
    Ok(HttpResponse::Ok().json(MediaRecord::new(view, &call.state.config().base_url)))
}

/// Process an object's media again.
///
/// Needs `admin` on the collection; `action=reprocess` is the only action. Queues the media
/// again with a fresh count of attempts (a worker busy with it is superseded); a `file`
/// object, which is not processed, is a 409.
#[utoipa::path(
    post,
    path = "/api/media/c/{collection_uuid}/o/{object_id}",
    operation_id = "media_post",
    tag = "upload",
    params(CollectionObjectId),
    request_body(description = "The action.", content = MediaActionForm),
    responses(
        (status = 202, description = "Queued again (no body)."),
        ConflictingWriteErrors,
    )
)]
pub(crate) async fn reprocess(call: &Call<'_>, MemberPath(c, o): MemberPath) -> Answer {
    call.only(&["action"])?;
    if call.field("action") != Some("reprocess") {
        return Err(ApiError::BadRequest(
            "action must be reprocess (the only action on media)".into(),
        ));
    }
    let caller = call.caller()?;
    run(call.state, move |s| s.uploads().reprocess(&caller, c, o)).await?;
    Ok(HttpResponse::Accepted().finish())
}

/// Remove an object's media.
///
/// Needs `admin` on the collection. Deletes the source, the derived files and any upload in
/// progress; the object stays.
#[utoipa::path(
    delete,
    path = "/api/media/c/{collection_uuid}/o/{object_id}",
    operation_id = "media_delete",
    tag = "upload",
    params(CollectionObjectId),
    responses(
        (status = 200, description = "Removed.", body = ErrorBody),
        WriteErrors,
    )
)]
pub(crate) async fn remove(call: &Call<'_>, MemberPath(c, o): MemberPath) -> Answer {
    call.only(&[])?;
    let caller = call.caller()?;
    run(call.state, move |s| s.uploads().remove_media(&caller, c, o)).await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({"message": "media removed"})))
}
