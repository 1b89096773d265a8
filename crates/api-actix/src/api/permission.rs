//! `permission` (spec §4.4): list (GET), set (PUT/POST) and remove (DELETE) a user's
//! explicit level on a collection.

use actix_web::http::Method;
use actix_web::{HttpRequest, HttpResponse, web};
use medialib_domain::{Action, Caller, IdOrZero, ObjectId, PermissionLevel, UniqueId, UserId};
use medialib_ports::services::people::Grantee;

use super::{
    CollectionObject, Public, begin, collection_id, is_read, not_implemented, options, user_path_id,
};
use crate::apidoc::responses::{ConflictingWriteErrors, ReadErrors};
use crate::apidoc::schemas::{CollectionUser, GranteeForm, PermissionForm};
use crate::blocking::run;
use crate::error::ApiError;
use crate::input::ApiCall;
use crate::records::PermissionRecord;
use crate::state::AppState;

const ALLOW: &str = "GET, HEAD, PUT, POST, DELETE, OPTIONS";

/// `/api/permission/c/{c}/o/{o}`.
pub async fn handle(
    req: HttpRequest,
    path: CollectionObject,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let (call, who) = begin(&req, payload, &state, ALLOW, Public::Options).await?;
    let (c, u) = path.into_inner();
    let c = collection_id(&c)?;
    let u = user_path_id(&u)?;
    match call.method {
        ref m if is_read(m) => {
            call.only(&[])?;
            list(&state, who.caller()?, c, u).await
        }
        Method::PUT | Method::POST => {
            call.only(&["uniqueId", "level"])?;
            grant(&state, who.caller()?, c, u, &call).await
        }
        Method::DELETE => {
            call.only(&["uniqueId"])?;
            revoke(&state, who.caller()?, c, u, &call).await
        }
        Method::OPTIONS => {
            let writes = Action::Grant { collection: c };
            options(&state, &req, ALLOW, Some(writes)).await
        }
        _ => Err(not_implemented(ALLOW)),
    }
}

/// List the permission entries of a collection.
///
/// Needs `admin` on the collection. `user_id` `0` lists every user with an explicit
/// entry; a user id lists that user's entry only (`[]` when there is none).
#[utoipa::path(
    get,
    path = "/api/permission/c/{collection_uuid}/o/{user_id}",
    operation_id = "permission_get",
    tag = "permission",
    params(CollectionUser),
    responses(
        (status = 200, description = "The entries, `[]` when there are none.", body = [PermissionRecord]),
        ReadErrors,
    )
)]
pub(crate) async fn list(
    state: &AppState,
    caller: Caller,
    c: ObjectId,
    u: IdOrZero<UserId>,
) -> Result<HttpResponse, ApiError> {
    let only = match u {
        IdOrZero::Zero => None,
        IdOrZero::Id(id) => Some(id),
    };
    let entries = run(state, move |s| {
        s.people().list_permissions(&caller, c, only)
    })
    .await?;
    let records: Vec<PermissionRecord> = entries
        .iter()
        .map(|e| PermissionRecord::new(&e.user, e.level))
        .collect();
    Ok(HttpResponse::Ok().json(records))
}

/// The user a write is about: the path's id, or with path `0` the `uniqueId` field.
fn grantee(u: IdOrZero<UserId>, call: &ApiCall) -> Result<Grantee, ApiError> {
    match u {
        IdOrZero::Id(id) => Ok(Grantee::Id(id)),
        IdOrZero::Zero => {
            let raw = call.field("uniqueId").ok_or_else(|| {
                ApiError::BadRequest("uniqueId is required when user_id is 0".into())
            })?;
            UniqueId::parse(raw)
                .map(Grantee::UniqueId)
                .map_err(|e| ApiError::BadRequest(e.to_string()))
        }
    }
}

/// Give a user a level on a collection.
///
/// Needs `admin` on the collection. The user is the path's `user_id`, or with `0` the
/// `uniqueId` field; a uniqueId no user has yet provisions that user. Demoting the last
/// admin is a 409. POST does the same.
#[utoipa::path(
    put,
    path = "/api/permission/c/{collection_uuid}/o/{user_id}",
    operation_id = "permission_put",
    tag = "permission",
    params(CollectionUser),
    request_body(
        description = "The level (default `view`); `uniqueId` is required when `user_id` is `0`.",
        content = PermissionForm,
    ),
    responses(
        (status = 201, description = "The level is set (no body)."),
        ConflictingWriteErrors,
    )
)]
pub(crate) async fn grant(
    state: &AppState,
    caller: Caller,
    c: ObjectId,
    u: IdOrZero<UserId>,
    call: &ApiCall,
) -> Result<HttpResponse, ApiError> {
    let level = call
        .field("level")
        .map(|v| PermissionLevel::parse(v).map_err(|e| ApiError::BadRequest(e.to_string())))
        .transpose()?
        .unwrap_or(PermissionLevel::DEFAULT_ASSIGNED);
    let who = grantee(u, call)?;
    run(state, move |s| {
        s.people().grant_permission(&caller, c, who, level)
    })
    .await?;
    Ok(HttpResponse::Created().finish())
}

/// Remove a user's entry from a collection.
///
/// Needs `admin` on the collection. The user is the path's `user_id`, or with `0` the
/// `uniqueId` field. Removing the last admin is a 409; a user without an entry is a 404.
#[utoipa::path(
    delete,
    path = "/api/permission/c/{collection_uuid}/o/{user_id}",
    operation_id = "permission_delete",
    tag = "permission",
    params(CollectionUser),
    request_body(
        description = "`uniqueId`, required when `user_id` is `0`.",
        content = GranteeForm,
    ),
    responses(
        (status = 200, description = "The entry is removed (no body)."),
        ConflictingWriteErrors,
    )
)]
pub(crate) async fn revoke(
    state: &AppState,
    caller: Caller,
    c: ObjectId,
    u: IdOrZero<UserId>,
    call: &ApiCall,
) -> Result<HttpResponse, ApiError> {
    let who = grantee(u, call)?;
    run(state, move |s| {
        s.people().revoke_permission(&caller, c, who)
    })
    .await?;
    Ok(HttpResponse::Ok().finish())
}
