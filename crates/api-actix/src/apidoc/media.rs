//! Documentation-only shapes of uploads, the media call and delivery (DECISIONS §7): the
//! tus headers, the paths, and the error answers these operations add to the shared ones.

#![allow(
    dead_code,
    reason = "documentation-only types: utoipa reads their definitions, nothing builds them"
)]

use std::collections::BTreeMap;

use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};
use utoipa::{IntoParams, IntoResponses};

use super::schemas::{Uuid, UuidOrZero};

/// `c/{collection_uuid}/o/{object_uuid}` of an upload.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
pub struct UploadPath {
    /// The collection (media library) the object is in: a UUID.
    #[param(inline)]
    collection_uuid: Uuid,
    /// `0` to create a new object with this upload; an object's UUID to replace its media.
    #[param(inline)]
    object_uuid: UuidOrZero,
}

/// `c/{collection_uuid}/o/{object_uuid}` of an upload in progress.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
pub struct UploadInProgressPath {
    /// The collection (media library) the object is in: a UUID.
    #[param(inline)]
    collection_uuid: Uuid,
    /// The object whose upload it is (the `uuid` that creation answered).
    #[param(inline)]
    object_uuid: Uuid,
}

/// The tus version every tus request names.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
pub struct TusVersion {
    /// Always `1.0.0` (without it: 412 with `Tus-Version`).
    #[param(rename = "Tus-Resumable", pattern = "^1\\.0\\.0$")]
    tus_resumable: String,
}

/// The headers of tus creation.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
pub struct TusCreate {
    /// Always `1.0.0`.
    #[param(rename = "Tus-Resumable", pattern = "^1\\.0\\.0$")]
    tus_resumable: String,
    /// The upload's size in bytes (at most `upload_max_size`).
    #[param(rename = "Upload-Length", pattern = "^[0-9]{1,19}$")]
    upload_length: String,
    /// Comma-separated `key base64(value)` pairs: `filename`, `filetype`, `type`, `title`,
    /// `description`, `public`.
    #[param(rename = "Upload-Metadata", required = false)]
    upload_metadata: Option<String>,
}

/// The headers of a tus PATCH.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
pub struct TusPatch {
    /// Always `1.0.0`.
    #[param(rename = "Tus-Resumable", pattern = "^1\\.0\\.0$")]
    tus_resumable: String,
    /// The offset the body continues at: the upload's offset (HEAD tells it).
    #[param(rename = "Upload-Offset", pattern = "^[0-9]{1,19}$")]
    upload_offset: String,
    /// `sha256 BASE64` of this body: on a mismatch nothing of it is kept (460).
    #[param(rename = "Upload-Checksum", required = false)]
    upload_checksum: Option<String>,
}

/// `/m/{object}/{expires}/{signature}/{file}`: a delivery URL as a record gives it.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
pub struct DeliveryPath {
    /// The object's UUID.
    object: String,
    /// The URL's expiry, epoch seconds.
    expires: String,
    /// The URL's signature.
    signature: String,
    /// The file as the record's URL names it: the source (`source.mp4`) or a derived file,
    /// whose path may have several segments (`hls/720p.m3u8`, `stills/128x128.jpg`). It is
    /// the rest of the URL's path: `/` is sent as it is (or as `%2F`).
    file: String,
}

/// The `Range` of a delivery request.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
pub struct DeliveryRange {
    /// One `bytes=a-b`, `a-` or `-n` range (206); several ranges get the whole file.
    #[param(rename = "Range", required = false)]
    range: Option<String>,
}

fn plain(description: &str, error_body: bool) -> RefOr<Response> {
    let mut builder = ResponseBuilder::new().description(description);
    if error_body {
        builder = builder.content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build(),
        );
    }
    builder.build().into()
}

fn shared(name: &str) -> RefOr<Response> {
    Ref::from_response_name(name).into()
}

/// The answers every tus request may get besides its own.
#[derive(Debug)]
pub struct TusErrors;

impl IntoResponses for TusErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        BTreeMap::from([
            ("400".to_owned(), shared("BadRequest")),
            ("401".to_owned(), shared("Unauthorized")),
            ("403".to_owned(), shared("Forbidden")),
            (
                "404".to_owned(),
                plain(
                    "No such collection, object or upload in progress (finished, terminated or expired).",
                    true,
                ),
            ),
            (
                "409".to_owned(),
                plain(
                    "`Upload-Offset` is not the upload's offset, another PATCH is writing to the upload now, or the storage quota is exceeded.",
                    true,
                ),
            ),
            ("410".to_owned(), plain("The upload expired.", true)),
            ("412".to_owned(), plain("No `Tus-Resumable: 1.0.0`.", true)),
            (
                "413".to_owned(),
                plain(
                    "Larger than `upload_max_size`, or a body longer than the upload has left.",
                    true,
                ),
            ),
            (
                "415".to_owned(),
                plain(
                    "A PATCH body that is not `application/offset+octet-stream` (one-shot PUT: not `multipart/form-data`).",
                    true,
                ),
            ),
            (
                "460".to_owned(),
                plain(
                    "The body does not match its `Upload-Checksum`; nothing of it was kept.",
                    true,
                ),
            ),
            (
                "503".to_owned(),
                plain(
                    "The database or the media storage is unavailable; what was stored stays. Retry after `Retry-After`.",
                    true,
                ),
            ),
            (
                "507".to_owned(),
                plain("The media storage is out of space.", true),
            ),
        ])
    }
}

/// The answers of a delivery URL besides 200.
#[derive(Debug)]
pub struct DeliveryAnswers;

impl IntoResponses for DeliveryAnswers {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        BTreeMap::from([
            (
                "206".to_owned(),
                plain("The range asked for, with `Content-Range`.", false),
            ),
            (
                "302".to_owned(),
                plain(
                    "With `storage_redirect`: the object store's presigned URL in `Location`.",
                    false,
                ),
            ),
            (
                "304".to_owned(),
                plain("`If-None-Match` names the file's current `ETag`.", false),
            ),
            (
                "403".to_owned(),
                plain(
                    "The URL's signature is not valid or it has expired: fetch the record again for a fresh one.",
                    true,
                ),
            ),
            ("404".to_owned(), plain("No such media file.", true)),
            (
                "416".to_owned(),
                plain(
                    "The range starts past the end (`Content-Range: bytes */SIZE`).",
                    true,
                ),
            ),
            ("501".to_owned(), shared("NotImplemented")),
            (
                "503".to_owned(),
                plain(
                    "The database or the media storage is unavailable; retry after `Retry-After`.",
                    true,
                ),
            ),
        ])
    }
}
