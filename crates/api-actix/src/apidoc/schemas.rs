//! Documentation-only types: the shapes the document names that have no public
//! Rust type of their own (the error body, the small records built inline by a
//! handler, the request forms and the path parameters).
//!
//! Nothing constructs these types; utoipa reads their definitions. The
//! integration test `api::openapi` compares the answers of the live service with
//! the mirrored records, so a drift between a handler and its mirror fails it.

#![allow(
    dead_code,
    reason = "documentation-only types: utoipa reads their definitions, nothing builds them"
)]

use std::collections::BTreeMap;

use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::{IntoParams, PartialSchema, ToSchema};

// The ids and the cursor of paths and queries, as `IdOrZero::parse` and `PageCursor::parse`
// take them: a UUID is 32 hexadecimal digits, dashed 8-4-4-4-12 or not, any case. Their
// fields are `#[param(inline)]`; these are comments, not docs, so that no description of
// the type joins the parameter's own.

// A UUID.
#[derive(ToSchema)]
#[schema(
    pattern = "^([0-9a-fA-F]{32}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$"
)]
pub struct Uuid(String);

// A UUID, or `0` with the meaning the operation gives it.
#[derive(ToSchema)]
#[schema(
    pattern = "^(0|[0-9a-fA-F]{32}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$"
)]
pub struct UuidOrZero(String);

// A catalog cursor: epoch seconds, a dot, a UUID.
#[derive(ToSchema)]
#[schema(
    pattern = "^[0-9]{1,19}\\.([0-9a-fA-F]{32}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$"
)]
pub struct Cursor(String);

/// The body of every error response (DECISIONS.md §4): a human-readable message
/// that names the offending field when there is one.
#[derive(ToSchema)]
#[schema(example = json!({"message": "title is longer than 255 characters"}))]
pub struct ErrorBody {
    /// What went wrong.
    message: String,
}

/// The answer of `OPTIONS` on an API path (DECISIONS.md §4).
#[derive(ToSchema)]
pub struct OptionsRecord {
    /// The methods the path implements (also in the `Allow` header).
    methods: Vec<String>,
    /// `"true"` when a valid token was presented.
    authenticated: String,
    /// `"true"` when the caller may perform the path's write methods (PUT, POST, DELETE):
    /// a token with the `write` scope and `admin` on the collection of the path.
    proceed: String,
}

/// The answer of the health probes.
#[derive(ToSchema)]
#[schema(example = json!({"status": "ok"}))]
pub struct HealthStatus {
    /// `ok` (`/healthz`) or `ready` (`/readyz`).
    status: String,
    /// `/readyz` only, and only when it happened in the last five minutes: a write refused
    /// with 507 because the database or the media storage was out of space, and how long ago.
    #[schema(example = "a write was refused for want of space 12 s ago")]
    space: Option<String>,
}

/// Fields of describe PUT (create) and POST (update).
///
/// Sent as `application/x-www-form-urlencoded`, `multipart/form-data` or a JSON object.
/// In form bodies each property is a field `properties[KEY]=VALUE`; in JSON, `properties`
/// is an object of strings. On POST, fields that are absent keep their stored values and
/// `properties` are merged over the stored ones.
#[derive(ToSchema)]
pub struct DescribeForm {
    /// Object type; required, and fixed at creation (a POST that changes it is a 409).
    #[schema(rename = "type")]
    kind: ObjectType,
    /// Title, at most 255 characters, may be blank.
    #[schema(required = false, max_length = 255)]
    title: String,
    /// Description, at most 65 536 characters, may be blank.
    #[schema(required = false, max_length = 65536)]
    description: String,
    /// `true` or `false` (any case); default `false` on PUT.
    #[schema(
        required = false,
        pattern = "^([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])$",
        example = "false"
    )]
    public: String,
    /// Duration in seconds.
    #[schema(required = false)]
    duration: u32,
    /// Client-defined string properties: at most 64 keys of 1 to 64 characters, values of at
    /// most 4 096 characters.
    #[schema(required = false)]
    properties: BTreeMap<String, String>,
}

/// The kinds of media object (DECISIONS.md §2): the domain's [`medialib_domain::ObjectType`],
/// by their wire names.
pub struct ObjectType;

impl ToSchema for ObjectType {}

impl PartialSchema for ObjectType {
    fn schema() -> RefOr<Schema> {
        let names = medialib_domain::ObjectType::ALL.map(medialib_domain::ObjectType::as_str);
        ObjectBuilder::new()
            .schema_type(Type::String)
            .description(Some("The kinds of media object (DECISIONS.md §2)."))
            .enum_values(Some(names))
            .into()
    }
}

/// A permission level (spec §2.4).
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
pub enum Level {
    /// No access (overrides a level inherited from a parent collection).
    None,
    /// Read access.
    View,
    /// Read and write access, including permissions.
    Admin,
}

/// Fields of user POST.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct UserForm {
    /// First name, at most 255 characters without control characters.
    #[schema(
        required = false,
        max_length = 255,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"
    )]
    first_name: String,
    /// Last name, at most 255 characters without control characters.
    #[schema(
        required = false,
        max_length = 255,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"
    )]
    last_name: String,
    /// The user's SSO unique id; required when `user_id` is `0` (creates the user).
    #[schema(
        required = false,
        min_length = 1,
        max_length = 255,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$"
    )]
    unique_id: String,
}

/// Fields of permission PUT and POST.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct PermissionForm {
    /// The user's SSO unique id; required when `user_id` is `0`. A uniqueId no user has yet
    /// provisions that user, so access can be granted before their first sign-in.
    #[schema(
        required = false,
        min_length = 1,
        max_length = 255,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$"
    )]
    unique_id: String,
    /// The level to give; default `view`.
    #[schema(required = false)]
    level: Level,
}

/// Fields of permission DELETE.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct GranteeForm {
    /// The user's SSO unique id; required when `user_id` is `0`.
    #[schema(
        required = false,
        min_length = 1,
        max_length = 255,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$"
    )]
    unique_id: String,
}

/// Fields of media POST.
#[derive(ToSchema)]
pub struct MediaActionForm {
    /// `reprocess`.
    #[schema(pattern = "^reprocess$")]
    action: String,
}

/// Fields of info POST.
#[derive(ToSchema)]
pub struct InfoForm {
    /// Title, at most 255 characters, may be blank.
    #[schema(required = false, max_length = 255)]
    title: String,
    /// Description, at most 65 536 characters, may be blank.
    #[schema(required = false, max_length = 65536)]
    description: String,
}

/// `c/{collection_uuid}/o/0` (describe PUT).
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
pub struct DescribeCreatePath {
    /// The collection (media library) to create the object in: a UUID (32 hexadecimal
    /// digits, dashed 8-4-4-4-12 or not, any case), or `0` to create a top-level library.
    #[param(inline)]
    collection_uuid: UuidOrZero,
    /// Always `0`: the service assigns the new object's UUID.
    #[param(pattern = "^0$")]
    object_uuid: String,
}

/// `c/{collection_uuid}/o/{object_uuid}` where both are real ids (describe GET/POST,
/// catalog PUT/POST/DELETE).
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
pub struct ObjectInCollection {
    /// The collection (media library): a UUID (32 hexadecimal digits, dashed 8-4-4-4-12 or
    /// not, any case).
    #[param(inline)]
    collection_uuid: Uuid,
    /// The object (or collection): a UUID.
    #[param(inline)]
    object_uuid: Uuid,
}

/// `c/{collection_uuid}/o/{object_uuid}` (catalog GET).
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
pub struct CatalogListPath {
    /// The collection (media library): a UUID (32 hexadecimal digits, dashed 8-4-4-4-12 or
    /// not, any case).
    #[param(inline)]
    collection_uuid: Uuid,
    /// `0` (or the collection's own UUID) lists the collection; the UUID of a catalog
    /// member lists that sub-catalog.
    #[param(inline)]
    object_uuid: UuidOrZero,
}

/// `c/{collection_uuid}/o/{object_id}` (info, embed, video).
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
pub struct CollectionObjectId {
    /// The collection (media library) the object is read through: a UUID (32 hexadecimal
    /// digits, dashed 8-4-4-4-12 or not, any case).
    #[param(inline)]
    collection_uuid: Uuid,
    /// The object's UUID.
    #[param(inline)]
    object_id: Uuid,
}

/// `c/{collection_uuid}/o/{user_id}` (user, permission).
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
pub struct CollectionUser {
    /// The collection (media library): a UUID (32 hexadecimal digits, dashed 8-4-4-4-12 or
    /// not, any case).
    #[param(inline)]
    collection_uuid: Uuid,
    /// The user's id (a UUID), or `0` with the meaning the operation gives it.
    #[param(inline)]
    user_id: UuidOrZero,
}

/// `o/{object_id}` (contribute).
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
pub struct ObjectOnly {
    /// The object's UUID (32 hexadecimal digits, dashed 8-4-4-4-12 or not, any case).
    #[param(inline)]
    object_id: Uuid,
}

/// `o/{collection_uuid}` (the short catalog path).
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
pub struct CollectionOnly {
    /// The collection (media library): a UUID (32 hexadecimal digits, dashed 8-4-4-4-12 or
    /// not, any case).
    #[param(inline)]
    collection_uuid: Uuid,
}

/// The query of catalog GET.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(
    non_snake_case,
    reason = "the spec names the parameter completeRecords"
)]
pub struct CatalogQuery {
    /// Epoch seconds: list only members whose object was modified, or whose membership was
    /// added, at or after `ts` (pass back the previous answer's `ts`). `0`, negative and
    /// non-integer values are a 400.
    #[param(required = false, minimum = 1)]
    ts: i64,
    /// How many of the listed items (the first ones) are complete describe records; the rest
    /// are limited records. Absent: every item is complete.
    #[param(required = false, minimum = 0)]
    completeRecords: u32,
    /// Page size: list at most `limit` members (1 to 1000; anything else is a 400). Absent:
    /// every member, unpaged. When more members follow, the answer's `next` is the cursor
    /// for the next page. `completeRecords` counts from the start of each page.
    #[param(required = false, minimum = 1, maximum = 1000)]
    limit: u16,
    /// The `next` of the previous page: list the members after it (keyset; a member is never
    /// listed twice in one walk). Needs `limit`; a malformed cursor, or `after` without
    /// `limit`, is a 400.
    #[param(
        required = false,
        inline,
        example = "1732300000.01234567-89ab-5def-8123-456789abcdef"
    )]
    after: Cursor,
}

/// The query of oEmbed GET (oEmbed 1.0 §2.2).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OEmbedQuery {
    /// The object's permLink or landing-page URL (absolute http or https).
    #[param(format = "uri", pattern = "^[Hh][Tt][Tt][Pp][Ss]?://[^/]")]
    url: String,
    /// `json`, the only format offered (others are a 501); default `json`.
    #[param(required = false, example = "json")]
    format: String,
    /// Largest width of the player, pixels (positive).
    #[param(required = false, minimum = 1)]
    maxwidth: u32,
    /// Largest height of the player, pixels (positive).
    #[param(required = false, minimum = 1)]
    maxheight: u32,
}
