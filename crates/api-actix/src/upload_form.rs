//! The one-shot upload for scripts (DECISIONS §7): `PUT /api/upload/c/{C}/o/0/` with
//! `multipart/form-data`, a `file` part and the describe fields, e.g.
//! `curl -T` is not it; `curl -X PUT -F title=Lecture -F file=@clip.mp4 …` is. The file part
//! streams to storage; fields before it describe the new object, fields after it update it.

use std::pin::Pin;

use actix_multipart::{Field, Multipart};
use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use futures_core::Stream;
use medialib_domain::{Caller, IdOrZero, ObjectPatch};
use medialib_ports::services::UploadTarget;
use serde::Serialize;

use crate::apidoc::media::{TusErrors, UploadPath};
use crate::blocking::run;
use crate::error::ApiError;
use crate::state::AppState;
use crate::transfer::with_body;

/// The largest value of a text field, in bytes (a description is at most 64 Ki characters).
const MAX_FIELD: usize = 256 * 1024;
/// The most text fields a form may carry.
const MAX_FIELDS: usize = 64;

/// An authenticated call to an upload path, as every method of it receives it (here, so
/// that `upload.rs`, which dispatches to the one-shot PUT, stays above this module).
pub(crate) struct UploadCall<'a> {
    /// The request (its headers).
    pub(crate) req: &'a HttpRequest,
    /// The path's collection and object (or `0`).
    pub(crate) target: UploadTarget,
    /// The body, not yet read.
    pub(crate) payload: web::Payload,
    /// The application.
    pub(crate) state: &'a AppState,
    /// Who is calling.
    pub(crate) caller: Caller,
}

/// `{"uuid"}` of a created object.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = CreatedUpload)]
pub(crate) struct Created {
    /// The object the upload stores its media in.
    pub(crate) uuid: String,
}

async fn next<S: Stream + Unpin>(stream: &mut S) -> Option<S::Item> {
    std::future::poll_fn(|cx| Pin::new(&mut *stream).poll_next(cx)).await
}

fn form_error(e: impl std::fmt::Display) -> ApiError {
    ApiError::BadRequest(format!("the multipart form does not parse: {e}"))
}

/// Reads a text field whole (bounded).
async fn text(field: &mut Field, name: &str) -> Result<String, ApiError> {
    let mut value = Vec::new();
    while let Some(chunk) = next(field).await {
        let chunk = chunk.map_err(form_error)?;
        if value.len() + chunk.len() > MAX_FIELD {
            return Err(ApiError::TooLarge(format!(
                "the form field {name} is longer than {MAX_FIELD} bytes"
            )));
        }
        value.extend_from_slice(&chunk);
    }
    String::from_utf8(value)
        .map_err(|_| ApiError::BadRequest(format!("the form field {name} is not UTF-8 text")))
}

/// Reads text fields until the `file` part (returned) or the end of the form.
async fn fields_until_file(
    form: &mut Multipart,
    pairs: &mut Vec<(String, String)>,
) -> Result<Option<Field>, ApiError> {
    while let Some(field) = next(form).await {
        let mut field = field.map_err(form_error)?;
        let name = field.name().unwrap_or("").to_owned();
        if name == "file" {
            return Ok(Some(field));
        }
        if pairs.len() >= MAX_FIELDS {
            return Err(ApiError::BadRequest(format!(
                "a form carries at most {MAX_FIELDS} fields"
            )));
        }
        let value = text(&mut field, &name).await?;
        pairs.push((name, value));
    }
    Ok(None)
}

/// Upload a file in one request (for scripts).
///
/// `multipart/form-data` with a `file` part and the describe fields (`type`, `title`,
/// `description`, `public`): fields before the file describe the new object, fields after
/// it update it. Needs `admin` on the collection and a token with `write`; the object is
/// always new (`…/o/0`). The file streams to storage: no size limit but `upload_max_size`.
#[utoipa::path(
    put,
    path = "/api/upload/c/{collection_uuid}/o/{object_uuid}",
    operation_id = "upload_put",
    tag = "upload",
    params(UploadPath),
    request_body(content = String, content_type = "multipart/form-data",
        description = "A `file` part and the describe fields."),
    responses(
        (status = 201, description = "Stored; the new object's UUID.", body = Created),
        TusErrors,
    )
)]
pub(crate) async fn put(call: UploadCall<'_>) -> Result<HttpResponse, ApiError> {
    if call.target.object != IdOrZero::Zero {
        return Err(ApiError::BadRequest(
            "the one-shot PUT creates a new object: use …/o/0/ (tus POST replaces an object's media)"
                .into(),
        ));
    }
    let is_form = call
        .req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("multipart/form-data"));
    if !is_form {
        return Err(ApiError::UnsupportedMediaType(
            "the one-shot PUT takes multipart/form-data with a `file` part".into(),
        ));
    }
    let mut form = Multipart::new(call.req.headers(), call.payload);
    let mut before = Vec::new();
    let Some(mut file) = fields_until_file(&mut form, &mut before).await? else {
        return Err(ApiError::BadRequest("the form has no `file` part".into()));
    };
    let filename = file
        .content_disposition()
        .and_then(|d| d.get_filename())
        .map(str::to_owned);
    let collection = call.target.collection;
    let id = with_body(call.state, &mut file, move |s, body| {
        s.uploads().put_file(
            &call.caller,
            collection,
            filename.as_deref(),
            body,
            &mut || std::mem::take(&mut before),
        )
    })
    .await??;
    // Fields after the file update the object it made.
    drop(file);
    let mut after = Vec::new();
    if fields_until_file(&mut form, &mut after).await?.is_some() {
        return Err(ApiError::BadRequest(
            "the form has a second `file` part; the first was stored".into(),
        ));
    }
    if !after.is_empty() {
        let patch =
            ObjectPatch::from_fields(&after).map_err(|e| ApiError::BadRequest(e.to_string()))?;
        run(call.state, move |s| {
            s.media().update_object(&call.caller, collection, id, patch)
        })
        .await?;
    }
    Ok(HttpResponse::Created()
        .insert_header((
            header::LOCATION,
            format!(
                "{}/api/describe/c/{collection}/o/{id}",
                call.state.config().base_url
            ),
        ))
        .json(Created {
            uuid: id.to_string(),
        }))
}
