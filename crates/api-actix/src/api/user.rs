//! `user` (spec §4.3): read a user through a collection (GET), change its names or add a
//! user by uniqueId (POST).

use actix_web::http::Method;
use actix_web::{HttpRequest, HttpResponse, web};
use medialib_domain::{Action, Caller, IdOrZero, ObjectId, PersonName, UniqueId, UserId};
use medialib_ports::services::people::{AddUserInput, UserPatch};

use super::{
    CollectionObject, Public, begin, collection_id, is_read, not_implemented, options, user_path_id,
};
use crate::apidoc::responses::{ConflictingWriteErrors, HiddenReadErrors};
use crate::apidoc::schemas::{CollectionUser, UserForm};
use crate::blocking::run;
use crate::error::ApiError;
use crate::input::ApiCall;
use crate::records::{UserIdBody, UserRecord};
use crate::state::AppState;

const ALLOW: &str = "GET, HEAD, POST, OPTIONS";

/// `/api/user/c/{c}/o/{o}`.
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
            read(&state, who.caller()?, c, u).await
        }
        Method::POST => {
            call.only(&["firstName", "lastName", "uniqueId"])?;
            write(&state, who.caller()?, c, u, &call).await
        }
        Method::OPTIONS => {
            let writes = match u {
                IdOrZero::Zero => Action::Grant { collection: c },
                IdOrZero::Id(user) => Action::Rename { user },
            };
            options(&state, &req, ALLOW, Some(writes)).await
        }
        _ => Err(not_implemented(ALLOW)),
    }
}

/// Read a user through a collection.
///
/// Needs `view` on the collection, and the user must hold an entry on it or be the
/// caller (else 404). `user_id` `0` is the caller. `firstName` and `lastName` always;
/// `userId` and `uniqueId` only to the user itself or an admin of the collection.
#[utoipa::path(
    get,
    path = "/api/user/c/{collection_uuid}/o/{user_id}",
    operation_id = "user_get",
    tag = "user",
    params(CollectionUser),
    responses(
        (status = 200, description = "The user, with the fields the caller may see.", body = UserRecord),
        HiddenReadErrors,
    )
)]
pub(crate) async fn read(
    state: &AppState,
    caller: Caller,
    c: ObjectId,
    u: IdOrZero<UserId>,
) -> Result<HttpResponse, ApiError> {
    let view = run(state, move |s| s.people().read_user(&caller, c, u)).await?;
    Ok(HttpResponse::Ok().json(UserRecord::new(&view.user, view.visibility)))
}

fn name(call: &ApiCall, field: &'static str) -> Result<Option<PersonName>, ApiError> {
    call.field(field)
        .map(|v| PersonName::parse(v, field).map_err(|e| ApiError::BadRequest(e.to_string())))
        .transpose()
}

fn unique_id(call: &ApiCall) -> Result<Option<UniqueId>, ApiError> {
    call.field("uniqueId")
        .map(|v| UniqueId::parse(v).map_err(|e| ApiError::BadRequest(e.to_string())))
        .transpose()
}

/// Change a user's names, or add a user to a collection.
///
/// With a `user_id`: changes `firstName` / `lastName` (the user itself or an admin of
/// the collection; 202). With `user_id` `0` and a `uniqueId`: creates the user and
/// gives them `view` on the collection (an admin of the collection; 201). A `uniqueId`
/// that another user has is a 409. Fields may also be sent in the query string.
#[utoipa::path(
    post,
    path = "/api/user/c/{collection_uuid}/o/{user_id}",
    operation_id = "user_post",
    tag = "user",
    params(CollectionUser),
    request_body(
        description = "The names to set; `uniqueId` is required when `user_id` is `0`.",
        content = UserForm,
    ),
    responses(
        (status = 201, description = "The user was created (`user_id` `0`).", body = UserIdBody),
        (status = 202, description = "The user was updated.", body = UserIdBody),
        ConflictingWriteErrors,
    )
)]
pub(crate) async fn write(
    state: &AppState,
    caller: Caller,
    c: ObjectId,
    u: IdOrZero<UserId>,
    call: &ApiCall,
) -> Result<HttpResponse, ApiError> {
    let first_name = name(call, "firstName")?;
    let last_name = name(call, "lastName")?;
    let unique_id = unique_id(call)?;
    match u {
        IdOrZero::Zero => {
            let unique_id = unique_id.ok_or_else(|| {
                ApiError::BadRequest("uniqueId is required when user_id is 0".into())
            })?;
            let input = AddUserInput {
                unique_id,
                first_name,
                last_name,
            };
            let user = run(state, move |s| s.people().add_user(&caller, c, input)).await?;
            Ok(HttpResponse::Created().json(UserIdBody {
                user_id: user.id.to_string(),
            }))
        }
        IdOrZero::Id(target) => {
            let patch = UserPatch {
                first_name,
                last_name,
                unique_id,
            };
            let user = run(state, move |s| {
                s.people().update_user(&caller, c, target, patch)
            })
            .await?;
            Ok(HttpResponse::Accepted().json(UserIdBody {
                user_id: user.id.to_string(),
            }))
        }
    }
}
