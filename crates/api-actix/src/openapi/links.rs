//! OpenAPI links: from the answer of an operation that creates something (its 201 names the
//! new object's `uuid` or the new user's `userId`) to the operations that read, change, list,
//! get the media of and delete it, with the path parameters filled in from the request and
//! the answer. A client generator or a viewer shows them; schemathesis' stateful phase
//! follows them, so it calls those operations on objects that exist instead of on random
//! UUIDs that answer 404.
//!
//! The operations are named by their `operationId`s, which the handlers' attributes give;
//! the unit tests of `openapi.rs` check that every target and every parameter exists.

use serde_json::{Map, Value, json};

/// The collection of the request that created the object.
const COLLECTION: &str = "$request.path.collection_uuid";
/// The object the answer names.
const CREATED: &str = "$response.body#/uuid";
/// The user the answer names.
const CREATED_USER: &str = "$response.body#/userId";
/// The literal `0` of a path (a new object, the caller, every user: docs/api.md).
const ZERO: &str = "0";

/// One link: its name, the target `operationId`, the target's parameters and what fills
/// them, and what following it does.
pub(super) struct Link {
    pub(super) name: &'static str,
    pub(super) operation_id: &'static str,
    pub(super) parameters: &'static [(&'static str, &'static str)],
    pub(super) description: &'static str,
}

const fn link(
    name: &'static str,
    operation_id: &'static str,
    parameters: &'static [(&'static str, &'static str)],
    description: &'static str,
) -> Link {
    Link {
        name,
        operation_id,
        parameters,
        description,
    }
}

/// `c/{collection}/o/{new object}` in the two spellings of the object parameter.
const OBJECT_UUID: &[(&str, &str)] = &[("collection_uuid", COLLECTION), ("object_uuid", CREATED)];
const OBJECT_ID: &[(&str, &str)] = &[("collection_uuid", COLLECTION), ("object_id", CREATED)];
/// The new object as a collection (a library in itself).
const AS_LIBRARY: &[(&str, &str)] = &[("collection_uuid", CREATED), ("object_uuid", CREATED)];
const IN_LIBRARY: &[(&str, &str)] = &[("collection_uuid", CREATED), ("object_uuid", ZERO)];
const USER_IN_LIBRARY: &[(&str, &str)] = &[("collection_uuid", CREATED), ("user_id", ZERO)];
/// `c/{collection}/o/{new user}`.
const USER: &[(&str, &str)] = &[("collection_uuid", COLLECTION), ("user_id", CREATED_USER)];

/// What can be done with an object created in the request's collection.
const OBJECT_LINKS: &[Link] = &[
    link(
        "read",
        "describe_get",
        OBJECT_UUID,
        "Read the new object's record.",
    ),
    link(
        "update",
        "describe_post",
        OBJECT_UUID,
        "Change the new object.",
    ),
    link(
        "info",
        "info_get",
        OBJECT_ID,
        "Read the new object's info record.",
    ),
    link(
        "update_info",
        "info_post",
        OBJECT_ID,
        "Change the new object's info.",
    ),
    link(
        "embed",
        "embed_get",
        OBJECT_ID,
        "The new object's embed codes.",
    ),
    link(
        "video",
        "video_get",
        OBJECT_ID,
        "The new object's playable files.",
    ),
    link(
        "media",
        "media_get",
        OBJECT_ID,
        "Where the new object's media stands.",
    ),
    link(
        "reprocess",
        "media_post",
        OBJECT_ID,
        "Process the new object's media again.",
    ),
    link(
        "remove_media",
        "media_delete",
        OBJECT_ID,
        "Remove the new object's media.",
    ),
    link(
        "upload",
        "upload_create",
        OBJECT_UUID,
        "Upload media for the new object (tus).",
    ),
    link(
        "libraries",
        "contribute_get",
        &[("object_id", CREATED)],
        "Libraries the new object may be added to.",
    ),
    link(
        "delete",
        "catalog_delete",
        OBJECT_UUID,
        "Remove the new object from the collection (its last membership: it is deleted).",
    ),
];

/// What can be done with a new library (or any new `catalog`): it is read as a member of
/// itself, and things are created in it. A top-level library (`c/0/o/0`) is reached only so.
const LIBRARY_LINKS: &[Link] = &[
    link(
        "library_read",
        "describe_get",
        AS_LIBRARY,
        "Read the new library's record.",
    ),
    link(
        "library_update",
        "describe_post",
        AS_LIBRARY,
        "Change the new library.",
    ),
    link(
        "library_list",
        "catalog_short_get",
        &[("collection_uuid", CREATED)],
        "List the new library.",
    ),
    link(
        "library_members",
        "catalog_get",
        IN_LIBRARY,
        "List the new library.",
    ),
    link(
        "library_create",
        "describe_put",
        IN_LIBRARY,
        "Create an object in the new library.",
    ),
    link(
        "library_permissions",
        "permission_get",
        USER_IN_LIBRARY,
        "Who has which level on the new library.",
    ),
    link(
        "library_me",
        "user_get",
        USER_IN_LIBRARY,
        "The caller as the new library sees them.",
    ),
    link(
        "library_add_user",
        "user_post",
        USER_IN_LIBRARY,
        "Create a user with `view` on the new library.",
    ),
    link(
        "library_upload",
        "upload_put",
        IN_LIBRARY,
        "Upload a new object into the new library.",
    ),
    link(
        "library_tus",
        "upload_create",
        IN_LIBRARY,
        "Start a tus upload of a new object into the new library.",
    ),
];

/// What can be done with the upload a tus creation started.
const UPLOAD_LINKS: &[Link] = &[
    link(
        "upload_status",
        "upload_status",
        OBJECT_UUID,
        "How much of the upload is stored.",
    ),
    link(
        "upload_resume",
        "upload_patch",
        OBJECT_UUID,
        "Send the upload's next bytes.",
    ),
    link(
        "upload_terminate",
        "upload_terminate",
        OBJECT_UUID,
        "Give the upload up.",
    ),
];

/// What can be done with a user created on a collection.
const USER_LINKS: &[Link] = &[
    link("read", "user_get", USER, "Read the new user."),
    link("update", "user_post", USER, "Rename the new user."),
    link(
        "permission",
        "permission_get",
        USER,
        "The new user's level on the collection.",
    ),
    link(
        "grant",
        "permission_put",
        USER,
        "Give the new user a level on the collection.",
    ),
    link(
        "grant_post",
        "permission_post",
        USER,
        "Give the new user a level on the collection (POST).",
    ),
    link(
        "revoke",
        "permission_delete",
        USER,
        "Take the new user's level on the collection away.",
    ),
];

/// The creating operations, the status that carries their links, and the links.
pub(super) const SOURCES: &[(&str, &str, &[&[Link]])] = &[
    ("describe_put", "201", &[OBJECT_LINKS, LIBRARY_LINKS]),
    ("upload_put", "201", &[OBJECT_LINKS]),
    ("upload_create", "201", &[OBJECT_LINKS, UPLOAD_LINKS]),
    ("user_post", "201", &[USER_LINKS]),
];

/// Adds the links of [`SOURCES`] to the document.
pub(super) fn add(doc: &mut Value) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for op in paths
        .values_mut()
        .filter_map(Value::as_object_mut)
        .flat_map(|item| item.values_mut())
    {
        let Some((_, status, sets)) = SOURCES
            .iter()
            .find(|(id, _, _)| op["operationId"].as_str() == Some(*id))
        else {
            continue;
        };
        let Some(response) = op.pointer_mut(&format!("/responses/{status}")) else {
            continue;
        };
        let links: Map<String, Value> = sets
            .iter()
            .flat_map(|set| set.iter())
            .map(|l| {
                let parameters: Map<String, Value> = l
                    .parameters
                    .iter()
                    .map(|(name, value)| ((*name).to_owned(), json!(value)))
                    .collect();
                (
                    l.name.to_owned(),
                    json!({
                        "operationId": l.operation_id,
                        "parameters": parameters,
                        "description": l.description,
                    }),
                )
            })
            .collect();
        response["links"] = Value::Object(links);
    }
}
