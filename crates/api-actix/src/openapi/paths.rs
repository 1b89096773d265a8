//! One documentation-only function per operation.
//!
//! The real handlers dispatch every method of a path in one function (so that an
//! unimplemented method is a 501 and `OPTIONS` answers everywhere); utoipa documents
//! one operation per annotated function, so each operation gets its own empty
//! function here. Nothing calls them: the [`ApiDoc`](super::ApiDoc) derive reads their
//! attributes. The `OPTIONS` operation of every API path is added by
//! the [`Options`](super::Options) modifier.

#![allow(
    dead_code,
    reason = "documentation-only operations: utoipa reads their attributes, nothing calls them"
)]

use super::responses::{
    BadRequest, Conflict, Forbidden, NotFound, NotImplemented, PayloadTooLarge, Unauthorized,
    Unavailable,
};
use super::schemas::{
    AuthenticateRecord, CatalogListPath, CatalogQuery, CollectionObjectId, CollectionOnly,
    CollectionUser, DescribeCreatePath, DescribeForm, GranteeForm, HealthStatus, InfoForm,
    OEmbedQuery, ObjectInCollection, ObjectOnly, PermissionForm, UserForm,
};
use crate::records::{
    AnyRecord, CatalogResponse, ContributeEntry, EmbedRecord, InfoRecord, OEmbedResponse,
    PermissionRecord, UserIdBody, UserRecord, UuidBody, VideoRecord,
};

// ----------------------------------------------------------------------------------- describe

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
    tag = "describe",
    params(ObjectInCollection),
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "The complete or the limited record.", body = AnyRecord),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 404, response = NotFound),
        (status = 503, response = Unavailable),
    )
)]
fn describe_get() {}

/// Create an object.
///
/// `object_uuid` must be `0`. With `collection_uuid` `0` the new object is a top-level
/// library (its `type` must be `catalog`), open to any authenticated caller, who
/// becomes its admin; otherwise it is created in that collection, which needs `admin`
/// on it. The service assigns the UUID, so repeating a PUT creates another object.
#[utoipa::path(
    put,
    path = "/api/describe/c/{collection_uuid}/o/{object_uuid}",
    tag = "describe",
    params(DescribeCreatePath),
    request_body(
        description = "The new object's fields; `type` is required.",
        content(
            (DescribeForm = "application/x-www-form-urlencoded"),
            (DescribeForm = "multipart/form-data"),
            (DescribeForm = "application/json"),
        )
    ),
    responses(
        (status = 201, description = "Created; the body names the new object.", body = UuidBody),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 404, response = NotFound),
        (status = 413, response = PayloadTooLarge),
        (status = 503, response = Unavailable),
    )
)]
fn describe_put() {}

/// Update an object.
///
/// Needs `admin` on the collection. Fields that are absent keep their stored values;
/// `properties` are merged over the stored ones. `type` is required and must equal the
/// stored type (a change is a 409). Neither id may be `0`.
#[utoipa::path(
    post,
    path = "/api/describe/c/{collection_uuid}/o/{object_uuid}",
    tag = "describe",
    params(ObjectInCollection),
    request_body(
        description = "The fields to change; `type` is required.",
        content(
            (DescribeForm = "application/x-www-form-urlencoded"),
            (DescribeForm = "multipart/form-data"),
            (DescribeForm = "application/json"),
        )
    ),
    responses(
        (status = 202, description = "Updated; the body names the object.", body = UuidBody),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
        (status = 413, response = PayloadTooLarge),
        (status = 503, response = Unavailable),
    )
)]
fn describe_post() {}

// --------------------------------------------------------------------------------------- user

/// Read a user through a collection.
///
/// Needs `view` on the collection, and the user must hold an entry on it or be the
/// caller (else 404). `user_id` `0` is the caller. `firstName` and `lastName` always;
/// `userId` and `uniqueId` only to the user itself or an admin of the collection.
#[utoipa::path(
    get,
    path = "/api/user/c/{collection_uuid}/o/{user_id}",
    tag = "user",
    params(CollectionUser),
    responses(
        (status = 200, description = "The user, with the fields the caller may see.", body = UserRecord),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotFound),
        (status = 503, response = Unavailable),
    )
)]
fn user_get() {}

/// Change a user's names, or add a user to a collection.
///
/// With a `user_id`: changes `firstName` / `lastName` (the user itself or an admin of
/// the collection; 202). With `user_id` `0` and a `uniqueId`: creates the user and
/// gives them `view` on the collection (an admin of the collection; 201). A `uniqueId`
/// that another user has is a 409. Fields may also be sent in the query string.
#[utoipa::path(
    post,
    path = "/api/user/c/{collection_uuid}/o/{user_id}",
    tag = "user",
    params(CollectionUser),
    request_body(
        description = "The names to set; `uniqueId` is required when `user_id` is `0`.",
        content(
            (UserForm = "application/x-www-form-urlencoded"),
            (UserForm = "multipart/form-data"),
            (UserForm = "application/json"),
        )
    ),
    responses(
        (status = 201, description = "The user was created (`user_id` `0`).", body = UserIdBody),
        (status = 202, description = "The user was updated.", body = UserIdBody),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
        (status = 413, response = PayloadTooLarge),
        (status = 503, response = Unavailable),
    )
)]
fn user_post() {}

// --------------------------------------------------------------------------------- permission

/// List the permission entries of a collection.
///
/// Needs `admin` on the collection. `user_id` `0` lists every user with an explicit
/// entry; a user id lists that user's entry only (`[]` when there is none).
#[utoipa::path(
    get,
    path = "/api/permission/c/{collection_uuid}/o/{user_id}",
    tag = "permission",
    params(CollectionUser),
    responses(
        (status = 200, description = "The entries, `[]` when there are none.", body = [PermissionRecord]),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 404, response = NotFound),
        (status = 503, response = Unavailable),
    )
)]
fn permission_get() {}

/// Give a user a level on a collection.
///
/// Needs `admin` on the collection. The user is the path's `user_id`, or with `0` the
/// `uniqueId` field; a uniqueId no user has yet provisions that user. Demoting the last
/// admin is a 409. POST does the same.
#[utoipa::path(
    put,
    path = "/api/permission/c/{collection_uuid}/o/{user_id}",
    tag = "permission",
    params(CollectionUser),
    request_body(
        description = "The level (default `view`); `uniqueId` is required when `user_id` is `0`.",
        content(
            (PermissionForm = "application/x-www-form-urlencoded"),
            (PermissionForm = "multipart/form-data"),
            (PermissionForm = "application/json"),
        )
    ),
    responses(
        (status = 201, description = "The level is set (no body)."),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
        (status = 413, response = PayloadTooLarge),
        (status = 503, response = Unavailable),
    )
)]
fn permission_put() {}

/// Give a user a level on a collection (the same as PUT).
#[utoipa::path(
    post,
    path = "/api/permission/c/{collection_uuid}/o/{user_id}",
    tag = "permission",
    params(CollectionUser),
    request_body(
        description = "The level (default `view`); `uniqueId` is required when `user_id` is `0`.",
        content(
            (PermissionForm = "application/x-www-form-urlencoded"),
            (PermissionForm = "multipart/form-data"),
            (PermissionForm = "application/json"),
        )
    ),
    responses(
        (status = 201, description = "The level is set (no body)."),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
        (status = 413, response = PayloadTooLarge),
        (status = 503, response = Unavailable),
    )
)]
fn permission_post() {}

/// Remove a user's entry from a collection.
///
/// Needs `admin` on the collection. The user is the path's `user_id`, or with `0` the
/// `uniqueId` field. Removing the last admin is a 409; a user without an entry is a 404.
#[utoipa::path(
    delete,
    path = "/api/permission/c/{collection_uuid}/o/{user_id}",
    tag = "permission",
    params(CollectionUser),
    request_body(
        description = "`uniqueId`, required when `user_id` is `0`.",
        content(
            (GranteeForm = "application/x-www-form-urlencoded"),
            (GranteeForm = "multipart/form-data"),
            (GranteeForm = "application/json"),
        )
    ),
    responses(
        (status = 200, description = "The entry is removed (no body)."),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
        (status = 413, response = PayloadTooLarge),
        (status = 503, response = Unavailable),
    )
)]
fn permission_delete() {}

// --------------------------------------------------------------------------------------- info

/// The info record of an object.
///
/// Needs `view` on the collection; the object must be a member of it.
#[utoipa::path(
    get,
    path = "/api/info/c/{collection_uuid}/o/{object_id}",
    tag = "info",
    params(CollectionObjectId),
    responses(
        (status = 200, description = "The info record (spec §2.5).", body = InfoRecord),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 404, response = NotFound),
        (status = 503, response = Unavailable),
    )
)]
fn info_get() {}

/// Change an object's title and description.
///
/// Needs `admin` on the collection. Absent fields keep their values. Fields may also be
/// sent in the query string.
#[utoipa::path(
    post,
    path = "/api/info/c/{collection_uuid}/o/{object_id}",
    tag = "info",
    params(CollectionObjectId),
    request_body(
        description = "The fields to change.",
        content(
            (InfoForm = "application/x-www-form-urlencoded"),
            (InfoForm = "multipart/form-data"),
            (InfoForm = "application/json"),
        )
    ),
    responses(
        (status = 202, description = "Updated (no body)."),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 404, response = NotFound),
        (status = 413, response = PayloadTooLarge),
        (status = 503, response = Unavailable),
    )
)]
fn info_post() {}

// -------------------------------------------------------------------------------- embed, video

/// The embed codes of an object.
///
/// Needs `view` on the collection; the object must be a member of it.
#[utoipa::path(
    get,
    path = "/api/embed/c/{collection_uuid}/o/{object_id}",
    tag = "media",
    params(CollectionObjectId),
    responses(
        (status = 200, description = "The embed record (spec §2.6).", body = EmbedRecord),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 404, response = NotFound),
        (status = 503, response = Unavailable),
    )
)]
fn embed_get() {}

/// The playable files of a video or audio object.
///
/// Needs `view` on the collection; the object must be a member of it. An object that is
/// neither video nor audio is a 400.
#[utoipa::path(
    get,
    path = "/api/video/c/{collection_uuid}/o/{object_id}",
    tag = "media",
    params(CollectionObjectId),
    responses(
        (status = 200, description = "The video record (spec §2.7).", body = VideoRecord),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 404, response = NotFound),
        (status = 503, response = Unavailable),
    )
)]
fn video_get() {}

// ------------------------------------------------------------------------------ authenticate

/// Whether the caller is authenticated.
///
/// Never fails on a bad token: an unknown, expired or revoked token answers
/// `authenticated: "false"`.
#[utoipa::path(
    get,
    path = "/api/authenticate",
    tag = "authenticate",
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "Whether the presented token is good.", body = AuthenticateRecord,
            example = json!({"type": "authenticate", "authenticated": "false"})),
        (status = 503, response = Unavailable),
    )
)]
fn authenticate_get() {}

// ------------------------------------------------------------------------------------ catalog

/// List a collection, or a sub-catalog of it.
///
/// `object_uuid` `0` (or the collection itself) lists the collection's members; the
/// UUID of a catalog member lists that sub-catalog (a member that is no catalog is a
/// 400). Needs `view`. Order: most recently modified first, ties by uuid.
#[utoipa::path(
    get,
    path = "/api/catalog/c/{collection_uuid}/o/{object_uuid}",
    tag = "catalog",
    params(CatalogListPath, CatalogQuery),
    responses(
        (status = 200, description = "The members (spec §2.9).", body = CatalogResponse),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 404, response = NotFound),
        (status = 503, response = Unavailable),
    )
)]
fn catalog_get() {}

/// List a collection (the same as `c/{collection_uuid}/o/0`).
#[utoipa::path(
    get,
    path = "/api/catalog/o/{collection_uuid}",
    tag = "catalog",
    params(CollectionOnly, CatalogQuery),
    responses(
        (status = 200, description = "The members (spec §2.9).", body = CatalogResponse),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 404, response = NotFound),
        (status = 503, response = Unavailable),
    )
)]
fn catalog_short_get() {}

/// Add an existing object to a collection.
///
/// Needs `admin` on the collection and `view` on the object through some collection it
/// is in. Adding a member again is still a 201. Adding a collection into itself or one
/// of its descendants is a 409. POST does the same.
#[utoipa::path(
    put,
    path = "/api/catalog/c/{collection_uuid}/o/{object_uuid}",
    tag = "catalog",
    params(ObjectInCollection),
    responses(
        (status = 201, description = "The object is a member (no body)."),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
        (status = 413, response = PayloadTooLarge),
        (status = 503, response = Unavailable),
    )
)]
fn catalog_put() {}

/// Add an existing object to a collection (the same as PUT).
#[utoipa::path(
    post,
    path = "/api/catalog/c/{collection_uuid}/o/{object_uuid}",
    tag = "catalog",
    params(ObjectInCollection),
    responses(
        (status = 201, description = "The object is a member (no body)."),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 404, response = NotFound),
        (status = 409, response = Conflict),
        (status = 413, response = PayloadTooLarge),
        (status = 503, response = Unavailable),
    )
)]
fn catalog_post() {}

/// Remove an object from a collection.
///
/// Needs `admin` on the collection. Removing an object's last membership soft-deletes
/// it (kept 30 days, restorable with `medialib restore UUID`).
#[utoipa::path(
    delete,
    path = "/api/catalog/c/{collection_uuid}/o/{object_uuid}",
    tag = "catalog",
    params(ObjectInCollection),
    responses(
        (status = 200, description = "The membership is removed (no body)."),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 404, response = NotFound),
        (status = 413, response = PayloadTooLarge),
        (status = 503, response = Unavailable),
    )
)]
fn catalog_delete() {}

// --------------------------------------------------------------------------------- contribute

/// The libraries the caller may add an object to.
///
/// Every library where the caller is `admin`, each saying whether the object is a member.
#[utoipa::path(
    get,
    path = "/api/contribute/o/{object_id}",
    tag = "contribute",
    params(ObjectOnly),
    responses(
        (status = 200, description = "The libraries, `[]` when there are none.", body = [ContributeEntry]),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotFound),
        (status = 503, response = Unavailable),
    )
)]
fn contribute_get() {}

// ------------------------------------------------------------------------------------- oembed

/// oEmbed 1.0 for a public object.
///
/// `url` is the object's permLink (`{base}/w/{shortcode}/`) or landing page
/// (`{base}/m/{shortcode}`). A URL that is no page of this service is a 404, a private
/// object a 401. Only `format=json` is offered (any other format is a 501).
#[utoipa::path(
    get,
    path = "/api/oembed",
    tag = "oembed",
    params(OEmbedQuery),
    security(()),
    responses(
        (status = 200, description = "The oEmbed response.", body = OEmbedResponse),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotFound),
        (status = 501, response = NotImplemented),
        (status = 503, response = Unavailable),
    )
)]
fn oembed_get() {}

// ------------------------------------------------------------------------------------ health

/// Liveness: the process answers.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "health",
    security(()),
    responses(
        (status = 200, description = "The process is up.", body = HealthStatus,
            example = json!({"status": "ok"})),
    )
)]
fn healthz() {}

/// Readiness: the database answers.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "health",
    security(()),
    responses(
        (status = 200, description = "The database answers.", body = HealthStatus,
            example = json!({"status": "ready"})),
        (status = 503, response = Unavailable),
    )
)]
fn readyz() {}

/// This document.
#[utoipa::path(
    get,
    path = "/api/openapi.json",
    tag = "meta",
    security(()),
    responses(
        (status = 200, description = "The OpenAPI 3.1 document of the service.",
            content_type = "application/json", body = Object),
    )
)]
fn openapi_json() {}
