//! Uploads (DECISIONS §7): tus 1.0 at `/api/upload/c/{C}/o/{O}/` (core, creation,
//! creation-with-upload, termination, checksum, expiration) and the one-shot multipart `PUT`
//! for scripts. Headers in, headers out; the use cases decide.

use actix_web::http::{ConnectionType, Method, StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use medialib_domain::media::{
    BadUploadHeader, PatchChecksum, PatchRefused, UploadDescription, UploadNotAdmitted,
    parse_byte_count,
};
use medialib_domain::{IdOrZero, ObjectId, Timestamp};
use medialib_ports::StorageError;
use medialib_ports::services::{
    AppendDone, AppendFailed, BeginUploadFailed, PutFileFailed, UploadLookupFailed, UploadTarget,
};
use serde::Serialize;

use crate::api::{collection_id, path_id};
use crate::apidoc::media::{
    TusCreate, TusErrors, TusPatch, TusVersion, UploadInProgressPath, UploadPath,
};
use crate::auth::{optional_caller, presented_token, required_caller};
use crate::blocking::run;
use crate::error::ApiError;
use crate::state::AppState;
use crate::transfer::with_body;
use crate::upload_form::{Created, UploadCall};

/// The methods of an upload path.
const ALLOW: &str = "HEAD, POST, PUT, PATCH, DELETE, OPTIONS";
/// The tus extensions offered.
const EXTENSIONS: &str = "creation,creation-with-upload,termination,checksum,expiration";
/// The body type of tus PATCH (and of creation-with-upload).
const OFFSET_OCTET_STREAM: &str = "application/offset+octet-stream";

/// Registers the upload routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(crate::routing::resource("/api/upload/c/{c}/o/{o}").to(upload));
}

impl From<StorageError> for ApiError {
    fn from(e: StorageError) -> Self {
        match e {
            StorageError::Unavailable(reason) => {
                tracing::warn!(%reason, "media storage unavailable");
                Self::StorageUnavailable
            }
            StorageError::Full => {
                tracing::error!("media storage is out of space");
                Self::InsufficientStorage
            }
            StorageError::NotFound | StorageError::OutOfRange => {
                Self::Missing("no such media file".into())
            }
            StorageError::Corrupt(reason) | StorageError::Unexpected(reason) => {
                tracing::error!(%reason, "media storage failure");
                Self::Internal
            }
        }
    }
}

impl From<UploadNotAdmitted> for ApiError {
    fn from(e: UploadNotAdmitted) -> Self {
        match e {
            UploadNotAdmitted::TooLarge { .. } => Self::TooLarge(e.to_string()),
            UploadNotAdmitted::QuotaExceeded => Self::Conflict(e.to_string()),
        }
    }
}

impl From<BadUploadHeader> for ApiError {
    fn from(e: BadUploadHeader) -> Self {
        Self::BadRequest(e.to_string())
    }
}

impl From<BeginUploadFailed> for ApiError {
    fn from(e: BeginUploadFailed) -> Self {
        match e {
            BeginUploadFailed::CollectionNotFound | BeginUploadFailed::NotFound => {
                Self::Missing(e.to_string())
            }
            BeginUploadFailed::NotACollection | BeginUploadFailed::NotMedia => {
                Self::BadRequest(e.to_string())
            }
            BeginUploadFailed::NotAdmitted(n) => n.into(),
            BeginUploadFailed::Storage(s) => s.into(),
            BeginUploadFailed::Refused(r) => r.into(),
            BeginUploadFailed::Store(s) => s.into(),
        }
    }
}

impl From<UploadLookupFailed> for ApiError {
    fn from(e: UploadLookupFailed) -> Self {
        match e {
            UploadLookupFailed::NoUpload | UploadLookupFailed::NotFound => {
                Self::Missing(e.to_string())
            }
            UploadLookupFailed::Storage(s) => s.into(),
            UploadLookupFailed::Refused(r) => r.into(),
            UploadLookupFailed::Store(s) => s.into(),
        }
    }
}

impl From<AppendFailed> for ApiError {
    fn from(e: AppendFailed) -> Self {
        match e {
            AppendFailed::NoUpload | AppendFailed::NotFound => Self::Missing(e.to_string()),
            AppendFailed::Busy | AppendFailed::LockLost => Self::Conflict(e.to_string()),
            AppendFailed::Patch(PatchRefused::Expired) => Self::Gone(e.to_string()),
            AppendFailed::Patch(PatchRefused::OffsetMismatch { .. }) => {
                Self::Conflict(e.to_string())
            }
            AppendFailed::TooLong => Self::TooLarge(e.to_string()),
            AppendFailed::ChecksumMismatch => Self::ChecksumMismatch(e.to_string()),
            AppendFailed::Body(_) => Self::BadRequest(e.to_string()),
            AppendFailed::Storage(s) => s.into(),
            AppendFailed::Refused(r) => r.into(),
            AppendFailed::Store(s) => s.into(),
        }
    }
}

impl From<PutFileFailed> for ApiError {
    fn from(e: PutFileFailed) -> Self {
        match e {
            PutFileFailed::CollectionNotFound => Self::Missing(e.to_string()),
            PutFileFailed::NotACollection
            | PutFileFailed::Description(_)
            | PutFileFailed::Body(_) => Self::BadRequest(e.to_string()),
            PutFileFailed::NotAdmitted(n) => n.into(),
            PutFileFailed::Storage(s) => s.into(),
            PutFileFailed::Refused(r) => r.into(),
            PutFileFailed::Store(s) => s.into(),
        }
    }
}

/// Adds the headers every tus answer carries.
fn tus(mut response: HttpResponse) -> HttpResponse {
    let headers = response.headers_mut();
    headers.insert(
        header::HeaderName::from_static("tus-resumable"),
        header::HeaderValue::from_static("1.0.0"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    response
}

fn header_str<'r>(req: &'r HttpRequest, name: &str) -> Result<Option<&'r str>, ApiError> {
    req.headers()
        .get(name)
        .map(|v| {
            v.to_str()
                .map_err(|_| ApiError::BadRequest(format!("{name} must be ASCII text")))
        })
        .transpose()
}

/// `Upload-Expires`: an HTTP date.
fn http_date(t: Timestamp) -> String {
    let secs = u64::try_from(t.epoch_seconds()).unwrap_or(0);
    header::HttpDate::from(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs)).to_string()
}

/// The upload path's ids: a collection, and `0` or an object.
fn target(path: &(String, String)) -> Result<UploadTarget, ApiError> {
    Ok(UploadTarget {
        collection: collection_id(&path.0)?,
        object: path_id(&path.1, "object_uuid")?,
    })
}

fn existing(target: UploadTarget) -> Result<ObjectId, ApiError> {
    match target.object {
        IdOrZero::Id(id) => Ok(id),
        IdOrZero::Zero => Err(ApiError::BadRequest(
            "object_uuid 0 names no upload: POST to …/o/0/ creates one".into(),
        )),
    }
}

/// The method the client means: tus clients behind proxies that allow only GET and POST
/// send `X-HTTP-Method-Override`.
fn effective_method(req: &HttpRequest) -> Result<Method, ApiError> {
    match header_str(req, "X-HTTP-Method-Override")? {
        Some(m) if *req.method() == Method::POST => Method::from_bytes(m.trim().as_bytes())
            .map_err(|_| ApiError::BadRequest("X-HTTP-Method-Override is not a method".into())),
        _ => Ok(req.method().clone()),
    }
}

/// Every method of `/api/upload/c/{C}/o/{O}/`.
async fn upload(
    req: HttpRequest,
    path: web::Path<(String, String)>,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> HttpResponse {
    let answer = answer(&req, &path, payload, &state).await;
    tus(answer.unwrap_or_else(|e| {
        let mut refused = actix_web::ResponseError::error_response(&e);
        if declares_body(&req) {
            // A refusal may come before the body was read (a disk that filled mid-PATCH, a
            // bad token on a large PUT), and the server then drops the connection. Say so,
            // so that the client opens a fresh one rather than fail on its next request.
            refused
                .head_mut()
                .set_connection_type(ConnectionType::Close);
        }
        refused
    }))
}

/// Whether the request says it carries a body.
fn declares_body(req: &HttpRequest) -> bool {
    let headers = req.headers();
    headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .is_some_and(|v| v.as_bytes() != b"0")
}

async fn answer(
    req: &HttpRequest,
    path: &(String, String),
    payload: web::Payload,
    state: &AppState,
) -> Result<HttpResponse, ApiError> {
    let method = effective_method(req)?;
    if method == Method::OPTIONS {
        return options(req, path, state).await;
    }
    if !ALLOW.split(", ").any(|m| m == method.as_str()) {
        return Err(ApiError::MethodNotImplemented { allow: ALLOW });
    }
    let caller = match crate::browser::page_caller(req, state).await? {
        Some(caller) => caller,
        None => required_caller(state, req).await?.caller(),
    };
    let call = UploadCall {
        caller,
        target: target(path)?,
        req,
        payload,
        state,
    };
    if method == Method::PUT {
        return crate::upload_form::put(call).await;
    }
    if header_str(req, "Tus-Resumable")? != Some("1.0.0") {
        return Err(ApiError::TusVersion);
    }
    match method {
        Method::POST => create(call).await,
        Method::HEAD => head(call).await,
        Method::PATCH => patch(call).await,
        Method::DELETE => terminate(call).await,
        _ => Err(ApiError::MethodNotImplemented { allow: ALLOW }),
    }
}

#[derive(Serialize)]
struct OptionsBody {
    methods: Vec<&'static str>,
    authenticated: &'static str,
    proceed: &'static str,
}

/// OPTIONS: the tus capabilities, and the spec's `{methods, authenticated, proceed}`, where
/// `proceed` says whether this caller may upload here now (signed in with a `write` token,
/// `admin` on the collection, room left in the quota).
async fn options(
    req: &HttpRequest,
    path: &(String, String),
    state: &AppState,
) -> Result<HttpResponse, ApiError> {
    let caller = if presented_token(req).is_ok() {
        optional_caller(state, req).await.ok().flatten()
    } else {
        None
    };
    let proceed = match (&caller, target(path)) {
        (Some(c), Ok(target)) => {
            let who = c.caller();
            run(state, move |s| s.uploads().may_upload(&who, target))
                .await
                .unwrap_or(false)
        }
        _ => false,
    };
    let max = state.services().uploads().settings().limits.max_size;
    Ok(HttpResponse::Ok()
        .insert_header((header::ALLOW, ALLOW))
        .insert_header(("Tus-Version", "1.0.0"))
        .insert_header(("Tus-Extension", EXTENSIONS))
        .insert_header(("Tus-Max-Size", max.to_string()))
        .insert_header(("Tus-Checksum-Algorithm", "sha256"))
        .json(OptionsBody {
            methods: ALLOW.split(", ").collect(),
            authenticated: medialib_domain::object::bool_str(caller.is_some()),
            proceed: medialib_domain::object::bool_str(proceed),
        }))
}

/// Start an upload (tus creation).
///
/// Needs `admin` on the collection and a token with `write`. On `…/o/0` it creates a new
/// object in the collection (its type from `type`, else the file's name or `filetype`; its
/// title from `title`, else the file's name); on `…/o/{object}` it starts an upload that will
/// replace the object's media when it finishes. With a body of
/// `application/offset+octet-stream` (creation-with-upload) the first bytes come along.
#[utoipa::path(
    post,
    path = "/api/upload/c/{collection_uuid}/o/{object_uuid}",
    operation_id = "upload_create",
    tag = "upload",
    params(UploadPath, TusCreate),
    responses(
        (status = 201, description = "Created; `Location` is the upload's URL.", body = Created,
            headers(
                ("Location" = String, description = "The upload's URL (HEAD, PATCH, DELETE)."),
                ("Upload-Offset" = String, description = "Bytes stored so far."),
                ("Upload-Expires" = String, description = "When the unfinished upload expires."),
            )),
        TusErrors,
    )
)]
pub(crate) async fn create(call: UploadCall<'_>) -> Result<HttpResponse, ApiError> {
    if header_str(call.req, "Upload-Defer-Length")?.is_some() {
        return Err(ApiError::BadRequest(
            "Upload-Defer-Length is not supported: send Upload-Length".into(),
        ));
    }
    let length = parse_byte_count(
        header_str(call.req, "Upload-Length")?
            .ok_or_else(|| ApiError::BadRequest("Upload-Length is required".into()))?,
        "Upload-Length",
    )?;
    let description =
        UploadDescription::from_tus_metadata(header_str(call.req, "Upload-Metadata")?)
            .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let has_body = content_type(call.req) == Some(OFFSET_OCTET_STREAM);
    let checksum = checksum(call.req)?;
    let upload = run(call.state, move |s| {
        s.uploads()
            .begin(&call.caller, call.target, length, description)
    })
    .await?;
    let object = upload.object;
    let location = format!(
        "{}/api/upload/c/{}/o/{object}/",
        call.state.config().base_url,
        call.target.collection
    );
    let mut offset = 0;
    let mut expires = upload.progress.expires;
    if has_body || length == 0 {
        // A failed first PATCH leaves the upload created: the client resumes it with HEAD.
        // An empty upload is complete at once.
        let collection = call.target.collection;
        let done = with_body(call.state, call.payload, move |s, body| {
            s.uploads()
                .append(&call.caller, collection, object, 0, checksum, body)
        })
        .await?;
        if let Ok(done) = done {
            offset = done.offset;
            expires = done.expires;
        }
    }
    Ok(HttpResponse::Created()
        .insert_header((header::LOCATION, location))
        .insert_header(("Upload-Offset", offset.to_string()))
        .insert_header(("Upload-Expires", http_date(expires)))
        .insert_header((
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            "Location, Upload-Offset, Upload-Expires, Tus-Resumable",
        ))
        .json(Created {
            uuid: object.to_string(),
        }))
}

/// End an upload (tus termination).
///
/// Deletes the upload and its bytes. An object the upload created stays, without media.
#[utoipa::path(
    delete,
    path = "/api/upload/c/{collection_uuid}/o/{object_uuid}",
    operation_id = "upload_terminate",
    tag = "upload",
    params(UploadInProgressPath, TusVersion),
    responses(
        (status = 204, description = "Ended; its bytes are deleted."),
        TusErrors,
    )
)]
pub(crate) async fn terminate(call: UploadCall<'_>) -> Result<HttpResponse, ApiError> {
    let object = existing(call.target)?;
    run(call.state, move |s| {
        s.uploads()
            .terminate(&call.caller, call.target.collection, object)
    })
    .await?;
    Ok(HttpResponse::NoContent().finish())
}

fn content_type(req: &HttpRequest) -> Option<&str> {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or("").trim())
}

fn checksum(req: &HttpRequest) -> Result<Option<PatchChecksum>, ApiError> {
    Ok(header_str(req, "Upload-Checksum")?
        .map(PatchChecksum::parse)
        .transpose()?)
}

/// Where an upload stands (tus HEAD).
///
/// `Upload-Offset` is the number of bytes durably stored: a client resumes from there.
#[utoipa::path(
    head,
    path = "/api/upload/c/{collection_uuid}/o/{object_uuid}",
    operation_id = "upload_status",
    tag = "upload",
    params(UploadInProgressPath, TusVersion),
    responses(
        (status = 200, description = "The upload's offset, length and expiry (no body).",
            headers(
                ("Upload-Offset" = String, description = "Bytes stored."),
                ("Upload-Length" = String, description = "The upload's size."),
                ("Upload-Expires" = String, description = "When the unfinished upload expires."),
            )),
        TusErrors,
    )
)]
pub(crate) async fn head(call: UploadCall<'_>) -> Result<HttpResponse, ApiError> {
    let object = existing(call.target)?;
    let upload = run(call.state, move |s| {
        s.uploads()
            .status(&call.caller, call.target.collection, object)
    })
    .await?;
    Ok(HttpResponse::Ok()
        .insert_header(("Upload-Offset", upload.progress.offset.to_string()))
        .insert_header(("Upload-Length", upload.progress.length.to_string()))
        .insert_header(("Upload-Expires", http_date(upload.progress.expires)))
        .finish())
}

/// Send bytes of an upload (tus PATCH).
///
/// The body continues the upload at `Upload-Offset`. What arrives is stored as it comes; a
/// connection that breaks keeps what arrived (HEAD tells how much). The last byte stores the
/// object's source and queues its processing before the answer. One PATCH at a time per
/// upload.
#[utoipa::path(
    patch,
    path = "/api/upload/c/{collection_uuid}/o/{object_uuid}",
    operation_id = "upload_patch",
    tag = "upload",
    params(UploadInProgressPath, TusPatch),
    request_body(content = Vec<u8>, content_type = "application/offset+octet-stream",
        description = "The bytes from `Upload-Offset` on."),
    responses(
        (status = 204, description = "Stored.",
            headers(
                ("Upload-Offset" = String, description = "The new offset."),
                ("Upload-Expires" = String, description = "When the unfinished upload expires."),
            )),
        TusErrors,
    )
)]
pub(crate) async fn patch(call: UploadCall<'_>) -> Result<HttpResponse, ApiError> {
    let object = existing(call.target)?;
    if content_type(call.req) != Some(OFFSET_OCTET_STREAM) {
        return Err(ApiError::UnsupportedMediaType(format!(
            "a PATCH body must be {OFFSET_OCTET_STREAM}"
        )));
    }
    let offset = parse_byte_count(
        header_str(call.req, "Upload-Offset")?
            .ok_or_else(|| ApiError::BadRequest("Upload-Offset is required".into()))?,
        "Upload-Offset",
    )?;
    let checksum = checksum(call.req)?;
    let collection = call.target.collection;
    let done: AppendDone = with_body(call.state, call.payload, move |s, body| {
        s.uploads()
            .append(&call.caller, collection, object, offset, checksum, body)
    })
    .await??;
    Ok(HttpResponse::build(StatusCode::NO_CONTENT)
        .insert_header(("Upload-Offset", done.offset.to_string()))
        .insert_header(("Upload-Expires", http_date(done.expires)))
        .finish())
}
