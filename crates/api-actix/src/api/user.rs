//! `user` (spec §4.3): read a user through a collection (GET), change its names or add a
//! user by uniqueId (POST).

use actix_web::HttpResponse;
use medialib_domain::{Action, IdOrZero, PersonName, UniqueId};
use medialib_ports::services::people::{AddUserInput, UserPatch};

use super::{Answer, Call, Resource, UserPath, answer};
use crate::apidoc::responses::{ConflictingWriteErrors, HiddenReadErrors};
use crate::apidoc::schemas::{CollectionUser, UserForm};
use crate::blocking::{run, run_read};
use crate::error::ApiError;
use crate::records::{UserIdBody, UserRecord};

/// `/api/user/c/{c}/o/{o}`.
pub(crate) struct User;

impl Resource for User {
    const ALLOW: &'static str = "GET, HEAD, POST, OPTIONS";
    type Path = UserPath;

    fn writes(UserPath(c, u): UserPath) -> Option<Action> {
        Some(match u {
            IdOrZero::Zero => Action::Grant { collection: c },
            IdOrZero::Id(user) => Action::Rename { user },
        })
    }

    async fn answer(call: Call<'_>, path: UserPath) -> Answer {
        answer!(call, path, read => read, POST => write)
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
pub(crate) async fn read(call: &Call<'_>, UserPath(c, u): UserPath) -> Answer {
    call.only(&[])?;
    let caller = call.caller()?;
    let view = run_read(call.state, move |s| s.people().read_user(&caller, c, u)).await?;
    Ok(HttpResponse::Ok().json(UserRecord::new(&view.user, view.visibility)))
}

fn name(call: &Call<'_>, field: &'static str) -> Result<Option<PersonName>, ApiError> {
    call.field(field)
        .map(|v| PersonName::parse(v, field).map_err(|e| ApiError::BadRequest(e.to_string())))
        .transpose()
}

fn unique_id(call: &Call<'_>) -> Result<Option<UniqueId>, ApiError> {
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
pub(crate) async fn write(call: &Call<'_>, UserPath(c, u): UserPath) -> Answer {
    call.only(&["firstName", "lastName", "uniqueId"])?;
    let caller = call.caller()?;
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
            let user = run(call.state, move |s| s.people().add_user(&caller, c, input)).await?;
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
            let user = run(call.state, move |s| {
                s.people().update_user(&caller, c, target, patch)
            })
            .await?;
            Ok(HttpResponse::Accepted().json(UserIdBody {
                user_id: user.id.to_string(),
            }))
        }
    }
}
