//! `POST /libraries/{uuid}`: what a library's page changes, for its admins, through the same
//! use cases as the API: its title, description and visibility (`action=edit`), a new
//! sub-library (`action=create`), and the people on it (`action=grant` adds or changes a
//! person's level by uniqueId, `action=revoke` removes their entry; the domain keeps the
//! last admin), and a member whose processing failed processed again (`action=reprocess`
//! with `object`, the API's reprocess). Each form carries the session's CSRF token; success is a 303 back to the page.

use actix_web::{HttpRequest, HttpResponse, web};
use medialib_domain::{NewObject, ObjectId, ObjectPatch, PermissionLevel, UniqueId};
use medialib_ports::services::Placement;
use medialib_ports::services::people::Grantee;

use super::{error_page, see_other, visitor};
use crate::blocking::run;
use crate::browser::csrf_ok;
use crate::error::ApiError;
use crate::oauth::params::{field, read_form};
use crate::state::AppState;

/// `POST /libraries/{uuid}`.
pub(super) async fn manage(
    req: HttpRequest,
    path: web::Path<String>,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> HttpResponse {
    let answer = async {
        let form = read_form(&req, payload).await?;
        let Some(visitor) = visitor(&req, &state).await? else {
            return Err(ApiError::AuthenticationRequired);
        };
        if !csrf_ok(&req, field(&form, "csrf_token").unwrap_or_default()) {
            return Err(ApiError::Forbidden(
                "the form expired or belongs to another session; reload the page and try again"
                    .into(),
            ));
        }
        let library = ObjectId::parse(&path.into_inner()).map_err(|_| ApiError::NotFound)?;
        let caller = visitor.user.as_caller();
        let value = |name: &str| field(&form, name).unwrap_or_default().to_owned();
        match field(&form, "action").unwrap_or_default() {
            "edit" => {
                let public = if field(&form, "public").is_some() {
                    "true"
                } else {
                    "false"
                };
                let patch = ObjectPatch::from_fields(&[
                    ("title", value("title").as_str()),
                    ("description", value("description").as_str()),
                    ("public", public),
                ])
                .map_err(|e| ApiError::BadRequest(e.to_string()))?;
                run(&state, move |s| {
                    s.media().update_object(&caller, library, library, patch)
                })
                .await?;
            }
            "create" => {
                let patch = ObjectPatch::from_fields(&[
                    ("type", "catalog"),
                    ("title", value("title").as_str()),
                ])
                .map_err(|e| ApiError::BadRequest(e.to_string()))?;
                let new = NewObject::from_patch(patch)
                    .map_err(|e| ApiError::BadRequest(e.to_string()))?;
                run(&state, move |s| {
                    s.media()
                        .create_object(&caller, Placement::In(library), new)
                })
                .await?;
            }
            "grant" => {
                let who = grantee(&value("unique_id"))?;
                let level = PermissionLevel::parse(&value("level")).map_err(|_| {
                    ApiError::BadRequest("level must be none, view or admin".into())
                })?;
                run(&state, move |s| {
                    s.people().grant_permission(&caller, library, who, level)
                })
                .await?;
            }
            "revoke" => {
                let who = grantee(&value("unique_id"))?;
                run(&state, move |s| {
                    s.people().revoke_permission(&caller, library, who)
                })
                .await?;
            }
            "reprocess" => {
                let object = ObjectId::parse(&value("object"))
                    .map_err(|_| ApiError::BadRequest("object must be a member's uuid".into()))?;
                run(&state, move |s| {
                    s.uploads().reprocess(&caller, library, object)
                })
                .await?;
            }
            _ => {
                return Err(ApiError::BadRequest(
                    "action must be edit, create, grant, revoke or reprocess".into(),
                ));
            }
        }
        Ok(see_other(
            HttpResponse::SeeOther(),
            &format!("/libraries/{library}"),
        ))
    };
    answer.await.unwrap_or_else(|e| error_page(&e))
}

/// A person by the username (uniqueId) typed into a form.
fn grantee(unique_id: &str) -> Result<Grantee, ApiError> {
    UniqueId::parse(unique_id.trim())
        .map(Grantee::UniqueId)
        .map_err(|e| ApiError::BadRequest(format!("username: {e}")))
}
