//! `catalog` (spec §4.8, DECISIONS.md §3): list a collection or one of its sub-catalogs
//! (GET), add an existing object to a collection (PUT/POST), remove a membership (DELETE).

use actix_web::HttpResponse;
use actix_web::http::header::ContentType;
use medialib_domain::{
    Action, Caller, IdOrZero, ObjectId, PageCursor, PageRequest, PageSize, Since,
};
use medialib_ports::MediaServices;

use super::{Answer, Call, CollectionObject, PathIds, Resource, answer, collection_id, path_id};
use crate::answers::{self, Chunked};
use crate::apidoc::responses::{ConflictingWriteErrors, ReadErrors, WriteErrors};
use crate::apidoc::schemas::{CatalogListPath, CatalogQuery, CollectionOnly, ObjectInCollection};
use crate::blocking::{self, run};
use crate::error::ApiError;
use crate::input::Form;
use crate::records::{CatalogResponse, CatalogWriter};

/// The fields of a listing (spec §4.8, and the keyset pagination of docs/api.md).
const LIST_FIELDS: &[&str] = &["ts", "completeRecords", "limit", "after"];

/// `/api/catalog/c/{c}/o/{o}`.
pub(crate) struct Catalog;

/// `c/{collection_uuid}/o/{object_uuid}`: the object may be `0` (list the collection).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CatalogPath(ObjectId, IdOrZero<ObjectId>);

impl PathIds for CatalogPath {
    type Segments = CollectionObject;

    fn parse((c, o): CollectionObject) -> Result<Self, ApiError> {
        Ok(Self(collection_id(&c)?, path_id(&o, "object_uuid")?))
    }
}

impl Resource for Catalog {
    const ALLOW: &'static str = "GET, HEAD, PUT, POST, DELETE, OPTIONS";
    type Path = CatalogPath;

    fn writes(CatalogPath(c, o): CatalogPath) -> Option<Action> {
        Some(match o {
            IdOrZero::Id(member) => Action::Link {
                collection: c,
                member,
            },
            IdOrZero::Zero => Action::Unlink { collection: c },
        })
    }

    async fn answer(call: Call<'_>, path: CatalogPath) -> Answer {
        answer!(call, path, read => list, PUT | POST => add, DELETE => remove)
    }
}

/// `/api/catalog/o/{c}`: the short form lists only, there is no object to add or remove.
pub(crate) struct CatalogShort;

/// `o/{collection_uuid}`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CollectionPath(ObjectId);

impl PathIds for CollectionPath {
    type Segments = String;

    fn parse(c: String) -> Result<Self, ApiError> {
        collection_id(&c).map(Self)
    }
}

impl Resource for CatalogShort {
    const ALLOW: &'static str = "GET, HEAD, OPTIONS";
    type Path = CollectionPath;

    async fn answer(call: Call<'_>, path: CollectionPath) -> Answer {
        answer!(call, path, read => list_short)
    }
}

/// List a collection (the same as `c/{collection_uuid}/o/0`).
#[utoipa::path(
    get,
    path = "/api/catalog/o/{collection_uuid}",
    operation_id = "catalog_short_get",
    tag = "catalog",
    params(CollectionOnly, CatalogQuery),
    responses(
        (status = 200, description = "The members (spec §2.9).", body = CatalogResponse),
        ReadErrors,
    )
)]
pub(crate) async fn list_short(call: &Call<'_>, CollectionPath(c): CollectionPath) -> Answer {
    list(call, CatalogPath(c, IdOrZero::Zero)).await
}

impl CatalogPath {
    /// The collection and the object of a write: `0` names nothing to add or remove.
    fn member(self) -> Result<(ObjectId, ObjectId), ApiError> {
        match self.1 {
            IdOrZero::Id(id) => Ok((self.0, id)),
            IdOrZero::Zero => Err(ApiError::BadRequest(
                "object_uuid 0 is valid only when listing (GET)".into(),
            )),
        }
    }
}

/// `completeRecords`: a non-negative integer (a huge one means "all").
fn parse_count(input: &str) -> Result<usize, &'static str> {
    if input.is_empty() || !input.bytes().all(|b| b.is_ascii_digit()) {
        return Err("completeRecords must be a non-negative integer");
    }
    Ok(input.parse().unwrap_or(usize::MAX))
}

/// `limit` and `after`: a page of the listing, or all of it when neither is given. Each value
/// is checked first; then `after` without `limit` is a 400 with the domain's reason
/// ([`PageRequest::from_parts`]).
fn page_request(query: &Form) -> Result<Option<PageRequest>, ApiError> {
    let size = query.parse("limit", PageSize::parse)?;
    let after = query.parse("after", PageCursor::parse)?;
    PageRequest::from_parts(size, after).map_err(|e| ApiError::BadRequest(e.to_string()))
}

/// List a collection, or a sub-catalog of it.
///
/// `object_uuid` `0` (or the collection itself) lists the collection's members; the
/// UUID of a catalog member lists that sub-catalog (a member that is no catalog is a
/// 400). Needs `view`. Order: most recently modified first, ties by uuid.
#[utoipa::path(
    get,
    path = "/api/catalog/c/{collection_uuid}/o/{object_uuid}",
    operation_id = "catalog_get",
    tag = "catalog",
    params(CatalogListPath, CatalogQuery),
    responses(
        (status = 200, description = "The members (spec §2.9).", body = CatalogResponse),
        ReadErrors,
    )
)]
pub(crate) async fn list(call: &Call<'_>, CatalogPath(c, o): CatalogPath) -> Answer {
    let caller = call.caller()?;
    call.only(LIST_FIELDS)?;
    let query = &call.input.query;
    let since = query.parse("ts", Since::parse)?;
    let complete = query.parse("completeRecords", parse_count)?;
    let page = page_request(query)?;
    let base = call.state.base_url().to_owned();
    let complete = complete.unwrap_or(usize::MAX);
    // Admitted first, so that the wait for the budget counts as queueing (`admission.rs`).
    let slot = blocking::admit(call.state)?;
    // The answer's share of the bytes large answers may hold at once, taken before it is built
    // (waiting here, holding no thread, while the budget is spent) and settled on its real size
    // once built; given back when the body has been handed to the socket (`answers.rs`).
    let budget = &call.state.answers;
    let share = budget.reserve(answers::ESTIMATE).await?;
    // Listed and written to JSON on the blocking pool, member by member as the rows are
    // read: a large listing never holds up the async worker, and only its bytes come back.
    let (body, slot) =
        blocking::run_then_wait(call.state, slot, move |s| -> Result<Vec<u8>, ApiError> {
            let mut writer = CatalogWriter::new(&base, complete);
            match o {
                IdOrZero::Id(sub) if sub != c => {
                    s.media()
                        .list_sub_catalog_into(&caller, c, sub, since, page, &mut writer)?;
                }
                _ => s
                    .media()
                    .list_catalog_into(&caller, c, since, page, &mut writer)?,
            }
            // The members' images in one read once the listing is written (none while it is
            // read: see `CatalogWriter`).
            let images = s.uploads().images_of(&writer.members())?;
            match writer.finish(&images) {
                Some(Ok(body)) => Ok(body),
                Some(Err(e)) => {
                    tracing::error!(error = %e, "cannot write the catalog response");
                    Err(ApiError::Internal)
                }
                None => {
                    tracing::error!("a catalog listing succeeded without starting");
                    Err(ApiError::Internal)
                }
            }
        })
        .await?;
    // Its waits end once the rest of its share is settled: a wait for the budget that only the
    // built answer's size reveals is queueing too, and at 512 listings at once it is most of it.
    let settled = budget.settle(share, body.len()).await;
    slot.end_waits();
    drop(slot);
    let share = settled?;
    // Sent in small chunks, so the connection's write buffer never grows to the answer's size.
    Ok(HttpResponse::Ok()
        .insert_header(ContentType::json())
        .body(Chunked::new(body, share)))
}

/// Add an existing object to a collection.
///
/// Needs `admin` on the collection and `view` on the object through some collection it
/// is in. Adding a member again is still a 201. Adding a collection into itself or one
/// of its descendants is a 409. POST does the same.
#[utoipa::path(
    put,
    path = "/api/catalog/c/{collection_uuid}/o/{object_uuid}",
    operation_id = "catalog_put",
    tag = "catalog",
    params(ObjectInCollection),
    responses(
        (status = 201, description = "The object is a member (no body)."),
        ConflictingWriteErrors,
    )
)]
pub(crate) async fn add(call: &Call<'_>, path: CatalogPath) -> Answer {
    change_member(call, path, MediaServices::add_member).await?;
    Ok(HttpResponse::Created().finish())
}

/// Remove an object from a collection.
///
/// Needs `admin` on the collection. Removing an object's last membership soft-deletes
/// it (kept 30 days, restorable with `medialib restore UUID`).
#[utoipa::path(
    delete,
    path = "/api/catalog/c/{collection_uuid}/o/{object_uuid}",
    operation_id = "catalog_delete",
    tag = "catalog",
    params(ObjectInCollection),
    responses(
        (status = 200, description = "The membership is removed (no body)."),
        WriteErrors,
    )
)]
pub(crate) async fn remove(call: &Call<'_>, path: CatalogPath) -> Answer {
    change_member(call, path, MediaServices::remove_member).await?;
    Ok(HttpResponse::Ok().finish())
}

/// A membership write (add or remove): no fields, the caller, an object that is not `0`, and
/// `change`, the use case, run on the blocking pool.
async fn change_member<T, E>(
    call: &Call<'_>,
    path: CatalogPath,
    change: fn(&MediaServices, &Caller, ObjectId, ObjectId) -> Result<T, E>,
) -> Result<T, ApiError>
where
    T: Send + 'static,
    E: Into<ApiError> + Send + 'static,
{
    call.only(&[])?;
    let caller = call.caller()?;
    let (c, o) = path.member()?;
    run(call.state, move |s| change(s.media(), &caller, c, o)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_records_is_a_non_negative_integer() {
        assert_eq!(parse_count("0"), Ok(0));
        assert_eq!(parse_count("3"), Ok(3));
        assert_eq!(parse_count("99999999999999999999999"), Ok(usize::MAX));
        for bad in ["", "-1", "+1", "1.5", "abc", " 1"] {
            assert!(parse_count(bad).is_err(), "{bad:?}");
        }
    }
}
