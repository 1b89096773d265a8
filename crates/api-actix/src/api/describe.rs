//! `describe`: read (public subset or complete record), create (PUT), update (POST).

use actix_web::http::Method;
use actix_web::{HttpRequest, HttpResponse, web};
use medialib_domain::{Action, Caller, IdOrZero, NewObject, ObjectId, ObjectPatch};
use medialib_ports::services::{DescribeWithTokenFailed, Placement};

use super::{CollectionObject, Public, begin, is_read, not_implemented, options, path_id};
use crate::auth::presented_token;
use crate::blocking::run;
use crate::error::ApiError;
use crate::input::Form;
use crate::records::{AnyRecord, DescribeRecord, LimitedRecord, UuidBody};
use crate::state::AppState;

const ALLOW: &str = "GET, HEAD, PUT, POST, OPTIONS";

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
pub async fn handle(
    req: HttpRequest,
    path: CollectionObject,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (call, who) = begin(&req, payload, &state, ALLOW, Public::Reads).await?;
    let (c, o) = path.into_inner();
    let c = path_id::<ObjectId>(&c, "collection_uuid")?;
    let o = path_id::<ObjectId>(&o, "object_uuid")?;
    match call.method {
        ref m if is_read(m) => {
            call.only(&[])?;
            read(&state, &req, c, o).await
        }
        Method::PUT => {
            call.only(FIELDS)?;
            create(&state, who.caller()?, c, o, &call.form).await
        }
        Method::POST => {
            call.only(FIELDS)?;
            update(&state, who.caller()?, c, o, &call.form).await
        }
        Method::OPTIONS => {
            let writes = match (c, o) {
                (IdOrZero::Zero, _) => Action::CreateLibrary,
                (IdOrZero::Id(collection), IdOrZero::Zero) => Action::CreateIn { collection },
                (IdOrZero::Id(collection), IdOrZero::Id(_)) => Action::Edit { collection },
            };
            options(&state, &req, ALLOW, Some(writes)).await
        }
        _ => Err(not_implemented(ALLOW)),
    }
}

fn real(id: IdOrZero<ObjectId>, field: &str) -> Result<ObjectId, ApiError> {
    match id {
        IdOrZero::Id(id) => Ok(id),
        IdOrZero::Zero => Err(ApiError::BadRequest(format!(
            "{field} 0 is valid only when creating (PUT)"
        ))),
    }
}

async fn read(
    state: &AppState,
    req: &HttpRequest,
    c: IdOrZero<ObjectId>,
    o: IdOrZero<ObjectId>,
) -> Result<HttpResponse, ApiError> {
    let (c, o) = (real(c, "collection_uuid")?, real(o, "object_uuid")?);
    // The token is checked in the same blocking call and store read as the describe.
    let token = presented_token(req)?;
    let authenticated = token.is_some();
    let (object, view) = run(state, move |s| {
        s.media().describe_with_token(token.as_deref(), c, o)
    })
    .await?;
    let base = state.base_url();
    let record = match view {
        medialib_domain::DescribeView::Full => {
            AnyRecord::Full(DescribeRecord::new(&object, base, authenticated))
        }
        medialib_domain::DescribeView::Limited => {
            AnyRecord::Limited(LimitedRecord::new(&object, base, authenticated))
        }
    };
    Ok(HttpResponse::Ok().json(record))
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

async fn create(
    state: &AppState,
    caller: Caller,
    c: IdOrZero<ObjectId>,
    o: IdOrZero<ObjectId>,
    form: &Form,
) -> Result<HttpResponse, ApiError> {
    if o != IdOrZero::Zero {
        return Err(ApiError::BadRequest(
            "PUT creates a new object: object_uuid must be 0".into(),
        ));
    }
    let new = NewObject::from_patch(patch_from(form)?)
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let placement = match c {
        IdOrZero::Zero => Placement::TopLevel,
        IdOrZero::Id(id) => Placement::In(id),
    };
    let created = run(state, move |s| {
        s.media().create_object(&caller, placement, new)
    })
    .await?;
    Ok(HttpResponse::Created().json(UuidBody {
        uuid: created.id().to_string(),
    }))
}

async fn update(
    state: &AppState,
    caller: Caller,
    c: IdOrZero<ObjectId>,
    o: IdOrZero<ObjectId>,
    form: &Form,
) -> Result<HttpResponse, ApiError> {
    let (c, o) = (real(c, "collection_uuid")?, real(o, "object_uuid")?);
    let patch = patch_from(form)?;
    if patch.object_type.is_none() {
        return Err(ApiError::BadRequest("type is required".into()));
    }
    let updated = run(state, move |s| {
        s.media().update_object(&caller, c, o, patch)
    })
    .await?;
    Ok(HttpResponse::Accepted().json(UuidBody {
        uuid: updated.id().to_string(),
    }))
}
