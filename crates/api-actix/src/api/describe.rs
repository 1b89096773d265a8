//! `describe`: read (public subset or complete record), create (PUT), update (POST).

use std::borrow::Cow;

use actix_web::HttpResponse;
use actix_web::http::header::ContentType;
use medialib_domain::{Action, IdOrZero, NewObject, ObjectId, ObjectPatch};
use medialib_ports::services::{DescribeWithTokenFailed, Placement};

use super::{Answer, Call, CollectionObject, PathIds, Public, Resource, answer, path_id};
use crate::apidoc::responses::{ConflictingWriteErrors, ReadErrors, WriteErrors};
use crate::apidoc::schemas::{DescribeCreatePath, DescribeForm, ObjectInCollection};
use crate::auth::presented_token;
use crate::blocking::{run, run_read};
use crate::error::ApiError;
use crate::input::Form;
use crate::records::{AnyRecord, EMPTY_MAP, RecordWriter, UuidBody, images};

/// The fields of describe PUT and POST (spec §4.2).
const FIELDS: &[&str] = &[
    "type",
    "title",
    "description",
    "public",
    "duration",
    "properties[",
];

/// `/api/describe/c/{c}/o/{o}`.
pub(crate) struct Describe;

/// `c/{collection_uuid}/o/{object_uuid}`, either of which may be `0` (PUT creates).
#[derive(Debug, Clone, Copy)]
pub(crate) struct DescribePath(IdOrZero<ObjectId>, IdOrZero<ObjectId>);

impl PathIds for DescribePath {
    type Segments = CollectionObject;

    fn parse((c, o): CollectionObject) -> Result<Self, ApiError> {
        Ok(Self(
            path_id(&c, "collection_uuid")?,
            path_id(&o, "object_uuid")?,
        ))
    }
}

impl Resource for Describe {
    const ALLOW: &'static str = "GET, HEAD, PUT, POST, OPTIONS";
    const PUBLIC: Public = Public::Reads;
    type Path = DescribePath;

    fn writes(DescribePath(c, o): DescribePath) -> Option<Action> {
        Some(match (c, o) {
            (IdOrZero::Zero, _) => Action::CreateLibrary,
            (IdOrZero::Id(collection), IdOrZero::Zero) => Action::CreateIn { collection },
            (IdOrZero::Id(collection), IdOrZero::Id(_)) => Action::Edit { collection },
        })
    }

    async fn answer(call: Call<'_>, path: DescribePath) -> Answer {
        answer!(call, path, read => read, PUT => create, POST => update)
    }
}

impl DescribePath {
    /// The collection and the object, neither of which may be `0` but to create.
    fn existing(self) -> Result<(ObjectId, ObjectId), ApiError> {
        let real = |id: IdOrZero<ObjectId>, field: &str| match id {
            IdOrZero::Id(id) => Ok(id),
            IdOrZero::Zero => Err(ApiError::BadRequest(format!(
                "{field} 0 is valid only when creating (PUT)"
            ))),
        };
        Ok((
            real(self.0, "collection_uuid")?,
            real(self.1, "object_uuid")?,
        ))
    }
}

/// Describe an object.
///
/// The complete record (spec §2.2) for a caller with `view` on the collection; the
/// limited record (`type, title, description, images, public, uuid, permLink,
/// authenticated`) for an anonymous caller or one without `view`, when the object is
/// public. An anonymous read of a non-public object is a 401, an authenticated one
/// without `view` a 403. A collection can be described through itself
/// (`c/{C}/o/{C}`). Neither id may be `0`.
#[utoipa::path(
    get,
    path = "/api/describe/c/{collection_uuid}/o/{object_uuid}",
    operation_id = "describe_get",
    tag = "describe",
    params(ObjectInCollection),
    security((), ("bearer" = []), ("oauth2" = ["read"])),
    responses(
        (status = 200, description = "The complete or the limited record.", body = AnyRecord),
        ReadErrors,
    )
)]
pub(crate) async fn read(call: &Call<'_>, path: DescribePath) -> Answer {
    call.only(&[])?;
    let (c, o) = path.existing()?;
    // The token is checked in the same store read as the describe.
    let token = presented_token(call.req)?;
    let authenticated = token.is_some();
    let (object, view, links) = run_read(call.state, move |s| -> Result<_, ApiError> {
        let d = s.media().describe_with_token(token.as_deref(), c, o)?;
        // The stills come from the derived files the same read returned.
        let links = s.uploads().images_from(d.object.id(), d.derived.as_ref())?;
        Ok((d.object, d.view, links))
    })
    .await?;
    let base = call.state.base_url();
    // Written straight into the body (`RecordWriter`): the same JSON as the owned records'.
    let written = (|| {
        let images = if links.is_empty() {
            Cow::Borrowed(EMPTY_MAP)
        } else {
            Cow::Owned(serde_json::to_vec(&images(&links, base))?)
        };
        let mut body = Vec::with_capacity(640 + images.len());
        let full = matches!(view, medialib_domain::DescribeView::Full);
        RecordWriter::new(base).write(&mut body, &object, full, authenticated, &images)?;
        Ok::<_, serde_json::Error>(body)
    })();
    let body = written.map_err(|e| {
        tracing::error!(error = %e, "cannot write the describe record");
        ApiError::Internal
    })?;
    Ok(HttpResponse::Ok()
        .insert_header(ContentType::json())
        .body(body))
}

impl From<DescribeWithTokenFailed> for ApiError {
    fn from(e: DescribeWithTokenFailed) -> Self {
        match e {
            DescribeWithTokenFailed::Bearer(b) => b.into(),
            DescribeWithTokenFailed::Describe(d) => d.into(),
        }
    }
}

/// The editable fields of a form (the domain's reading); absent fields stay `None`.
pub(crate) fn patch_from(form: &Form) -> Result<ObjectPatch, ApiError> {
    ObjectPatch::from_fields(form.pairs()).map_err(|e| ApiError::BadRequest(e.to_string()))
}

/// Create an object.
///
/// `object_uuid` must be `0`. With `collection_uuid` `0` the new object is a top-level
/// library (its `type` must be `catalog`), open to any authenticated caller, who
/// becomes its admin; otherwise it is created in that collection, which needs `admin`
/// on it. The service assigns the UUID, so repeating a PUT creates another object.
#[utoipa::path(
    put,
    path = "/api/describe/c/{collection_uuid}/o/{object_uuid}",
    operation_id = "describe_put",
    tag = "describe",
    params(DescribeCreatePath),
    request_body(
        description = "The new object's fields; `type` is required.",
        content = DescribeForm,
    ),
    responses(
        (status = 201, description = "Created; the body names the new object.", body = UuidBody),
        WriteErrors,
    )
)]
pub(crate) async fn create(call: &Call<'_>, DescribePath(c, o): DescribePath) -> Answer {
    call.only(FIELDS)?;
    let caller = call.caller()?;
    if o != IdOrZero::Zero {
        return Err(ApiError::BadRequest(
            "PUT creates a new object: object_uuid must be 0".into(),
        ));
    }
    let new = NewObject::from_patch(patch_from(&call.input.form)?)
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let placement = match c {
        IdOrZero::Zero => Placement::TopLevel,
        IdOrZero::Id(id) => Placement::In(id),
    };
    let created = run(call.state, move |s| {
        s.media().create_object(&caller, placement, new)
    })
    .await?;
    Ok(HttpResponse::Created().json(UuidBody {
        uuid: created.id().to_string(),
    }))
}

/// Update an object.
///
/// Needs `admin` on the collection. Fields that are absent keep their stored values;
/// `properties` are merged over the stored ones. `type` is required and must equal the
/// stored type (a change is a 409). Neither id may be `0`.
#[utoipa::path(
    post,
    path = "/api/describe/c/{collection_uuid}/o/{object_uuid}",
    operation_id = "describe_post",
    tag = "describe",
    params(ObjectInCollection),
    request_body(
        description = "The fields to change; `type` is required.",
        content = DescribeForm,
    ),
    responses(
        (status = 202, description = "Updated; the body names the object.", body = UuidBody),
        ConflictingWriteErrors,
    )
)]
pub(crate) async fn update(call: &Call<'_>, path: DescribePath) -> Answer {
    call.only(FIELDS)?;
    let caller = call.caller()?;
    let (c, o) = path.existing()?;
    let patch = patch_from(&call.input.form)?;
    if patch.object_type.is_none() {
        return Err(ApiError::BadRequest("type is required".into()));
    }
    let updated = run(call.state, move |s| {
        s.media().update_object(&caller, c, o, patch)
    })
    .await?;
    Ok(HttpResponse::Accepted().json(UuidBody {
        uuid: updated.id().to_string(),
    }))
}
