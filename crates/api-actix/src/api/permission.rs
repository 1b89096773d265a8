//! `permission` (spec §4.4): list (GET), set (PUT/POST) and remove (DELETE) a user's
//! explicit level on a collection.

use actix_web::HttpResponse;
use medialib_domain::{Action, IdOrZero, PermissionLevel, UniqueId, UserId};
use medialib_ports::services::people::Grantee;

use super::{Answer, Call, Resource, UserPath, answer};
use crate::apidoc::responses::{ConflictingWriteErrors, ReadErrors};
use crate::apidoc::schemas::{CollectionUser, GranteeForm, PermissionForm};
use crate::blocking::{run, run_read};
use crate::error::ApiError;
use crate::records::PermissionRecord;

/// `/api/permission/c/{c}/o/{o}`.
pub(crate) struct Permission;

impl Resource for Permission {
    const ALLOW: &'static str = "GET, HEAD, PUT, POST, DELETE, OPTIONS";
    type Path = UserPath;

    fn writes(UserPath(c, _): UserPath) -> Option<Action> {
        Some(Action::Grant { collection: c })
    }

    async fn answer(call: Call<'_>, path: UserPath) -> Answer {
        answer!(call, path, read => list, PUT | POST => grant, DELETE => revoke)
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
pub(crate) async fn list(call: &Call<'_>, UserPath(c, u): UserPath) -> Answer {
    call.only(&[])?;
    let caller = call.caller()?;
    let only = match u {
        IdOrZero::Zero => None,
        IdOrZero::Id(id) => Some(id),
    };
    let entries = run_read(call.state, move |s| {
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
fn grantee(u: IdOrZero<UserId>, call: &Call<'_>) -> Result<Grantee, ApiError> {
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
pub(crate) async fn grant(call: &Call<'_>, UserPath(c, u): UserPath) -> Answer {
    call.only(&["uniqueId", "level"])?;
    let caller = call.caller()?;
    let level = call
        .field("level")
        .map(|v| PermissionLevel::parse(v).map_err(|e| ApiError::BadRequest(e.to_string())))
        .transpose()?
        .unwrap_or(PermissionLevel::DEFAULT_ASSIGNED);
    let who = grantee(u, call)?;
    run(call.state, move |s| {
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
pub(crate) async fn revoke(call: &Call<'_>, UserPath(c, u): UserPath) -> Answer {
    call.only(&["uniqueId"])?;
    let caller = call.caller()?;
    let who = grantee(u, call)?;
    run(call.state, move |s| {
        s.people().revoke_permission(&caller, c, who)
    })
    .await?;
    Ok(HttpResponse::Ok().finish())
}
