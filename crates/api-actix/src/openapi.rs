//! The OpenAPI 3.1 document served at `GET /api/openapi.json`.
//!
//! It is generated from the code with utoipa: the response records are the real
//! structs of [`crate::records`]; each operation is documented by a
//! `#[utoipa::path]` attribute on the function that answers it (the per-method function an
//! `api::Resource` dispatches to, such as `api::describe::create`); error responses and the
//! shapes that have no Rust type of their own are in [`crate::apidoc`]. Two kinds of operation
//! have no function of their own: the `OPTIONS` operation of every API path is added by the
//! [`Options`] modifier, and a POST that does what the path's PUT does (one function answers
//! both) is derived from that PUT by the [`SameAsPut`] modifier.
//!
//! [`refine`] then states, on the JSON, what the derive cannot see:
//! - response records are closed (`additionalProperties: false`), so an answer with a
//!   field the document does not list (say, a leak into the limited record) fails a
//!   conformance check;
//! - booleans are the strings `"true"`/`"false"`, `uuid`/`userId` are UUIDs, `images`
//!   has the keys `thumbnail`, `square`, `large`, and fields typed `&'static str` take a
//!   fixed set of values ([`FIXED_VALUES`]);
//! - request forms are closed too: an unknown field is a 400 naming it (DECISIONS.md §4;
//!   the method override `_METHOD` is the one field every form takes, docs/api.md);
//!   every form is accepted urlencoded, as multipart and as JSON ([`FORM_ENCODINGS`]);
//!   client-defined properties have their limits and are `properties[KEY]`
//!   (`deepObject`) in urlencoded bodies, and some request bodies are optional
//!   ([`OPTIONAL_BODIES`]).
//!
//! The authorization server's operations (authorize, token, revoke, introspect, metadata,
//! logout) are documented in [`oauth`], and [`links`] adds OpenAPI links from each operation
//! that creates an object or a user to the operations on it.
//!
//! The unit tests below check that every refinement finds its target, and
//! `tests/integration/api/openapi.rs` that real answers conform to the document.

mod links;
mod oauth;

use std::sync::LazyLock;

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use serde_json::{Value, json};
use utoipa::openapi::path::{Operation, OperationBuilder, Parameter, ParameterIn};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, AuthorizationCode, Flow, HttpAuthScheme, HttpBuilder, OAuth2, Scopes,
    SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
use utoipa::{Modify, OpenApi, PartialSchema};

use crate::apidoc::{responses, schemas};
use crate::error::ApiError;
use crate::{api, delivery, health, pages, upload, upload_form};

/// The path the document is served at.
pub const DOCUMENT_PATH: &str = "/api/openapi.json";

/// The general rules of the API, shown at the top of the document.
const DESCRIPTION: &str = include_str!("openapi/description.md");

#[derive(OpenApi)]
#[openapi(
    info(
        title = "medialib",
        version = "1.0",
        description = DESCRIPTION,
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    paths(
        api::describe::read,
        api::describe::create,
        api::describe::update,
        api::user::read,
        api::user::write,
        api::permission::list,
        api::permission::grant,
        api::permission::revoke,
        api::info::read,
        api::info::update,
        api::media::embed,
        api::media::video,
        api::authenticate::read,
        api::catalog::list,
        api::catalog::list_short,
        api::catalog::add,
        api::catalog::remove,
        api::contribute::list,
        api::media_call::read,
        api::media_call::reprocess,
        api::media_call::remove,
        upload::create,
        upload::head,
        upload::patch,
        upload::terminate,
        upload_form::put,
        delivery::deliver,
        pages::oembed_json,
        health::healthz,
        health::readyz,
        oauth::authorize_get,
        oauth::authorize_post,
        oauth::token,
        oauth::revoke,
        oauth::introspect,
        oauth::metadata,
        oauth::logout,
        serve,
    ),
    components(
        schemas(schemas::ErrorBody, schemas::OptionsRecord, oauth::OAuthError),
        responses(
            responses::BadRequest,
            responses::Unauthorized,
            responses::Forbidden,
            responses::NotFound,
            responses::Conflict,
            responses::PayloadTooLarge,
            responses::NotImplemented,
            responses::Unavailable,
            oauth::OAuthBadRequest,
            oauth::InvalidClient,
            oauth::TooManyRequests,
            oauth::OAuthUnavailable,
        ),
    ),
    modifiers(&Bearer, &SameAsPut, &Options),
    security(("bearer" = []), ("oauth2" = ["read", "write"])),
    tags(
        (name = "describe", description = "Objects and libraries: read, create, update (spec §4.2)."),
        (name = "user", description = "Users as seen through a collection (spec §4.3)."),
        (name = "permission", description = "Who has which level on a collection (spec §4.4)."),
        (name = "info", description = "An object's info record (spec §4.5)."),
        (name = "media", description = "Embed codes and playable files (spec §4.6)."),
        (name = "authenticate", description = "Whether the caller's token is good (spec §4.7)."),
        (name = "catalog", description = "Collection membership: list, add, remove (spec §4.8)."),
        (name = "contribute", description = "Libraries the caller may add an object to (spec §4.9)."),
        (name = "upload", description = "Media in: tus 1.0 resumable uploads, the one-shot PUT, an object's media (DECISIONS §7)."),
        (name = "delivery", description = "Media out: signed URLs with Range (DECISIONS §7)."),
        (name = "oembed", description = "oEmbed 1.0 for public objects."),
        (name = "health", description = "Probes for orchestrators and load balancers."),
        (name = "oauth", description = "The OAuth 2.0 authorization server (RFC 6749 with PKCE, revocation RFC 7009, introspection RFC 7662, metadata RFC 8414) and signing out (DECISIONS §5)."),
        (name = "meta", description = "This document."),
    )
)]
struct ApiDoc;

/// The `bearer` and `oauth2` security schemes (one token, two ways to get it), and the two
/// credentials of the authorization server's own endpoints: `client_basic` (a client at the
/// token, revocation and introspection endpoints) and `session` (a browser's cookie).
struct Bearer;

impl Modify for Bearer {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let scheme = HttpBuilder::new()
            .scheme(HttpAuthScheme::Bearer)
            .description(Some(
                "An OAuth 2.0 access token: `Authorization: Bearer TOKEN`. The form \
                 `Authorization: OAuth TOKEN` is accepted too, on every call. A non-public \
                 call without a token is a 401 with `WWW-Authenticate: Bearer`; an unknown, \
                 expired or revoked token is a 401 with \
                 `WWW-Authenticate: Bearer error=\"invalid_token\"`. A token without the \
                 `write` scope gets 403 on PUT, POST and DELETE.",
            ))
            .build();
        // The same tokens, as the API reference page (`/api/docs`) gets them: the
        // authorization-code flow with PKCE against this service.
        let flow = AuthorizationCode::new(
            "/api/oauth/authorize",
            "/api/oauth/access_token",
            Scopes::from_iter([
                ("read", "read what the user may see"),
                ("write", "create, change and delete as the user may"),
            ]),
        );
        let oauth2 = OAuth2::with_description(
            [Flow::AuthorizationCode(flow)],
            "OAuth 2.0 (RFC 6749) with PKCE (S256; required for public clients): the same \
             access tokens as `bearer`. The URLs are relative to the server.",
        );
        let client = HttpBuilder::new()
            .scheme(HttpAuthScheme::Basic)
            .description(Some(
                "An OAuth client at the token, revocation and introspection endpoints (RFC 6749 \
                 §2.3.1): `Authorization: Basic base64(urlencode(client_id):urlencode(client_secret))`. \
                 A client may instead send `client_id` and `client_secret` in the body, never \
                 both ways; a public client sends `client_id` alone. A failure is a 401 \
                 `invalid_client` with `WWW-Authenticate: Basic realm=\"medialib\"`.",
            ))
            .build();
        let session = ApiKey::Cookie(ApiKeyValue::with_description(
            "medialib_session",
            "The browser session that signing in on medialib's pages starts (HttpOnly, \
             SameSite=Lax): the consent form's POST needs it, and `/api/logout` takes it \
             when no `Authorization` header is sent.",
        ));
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme("bearer", SecurityScheme::Http(scheme));
        components.add_security_scheme("oauth2", SecurityScheme::OAuth2(oauth2));
        components.add_security_scheme("client_basic", SecurityScheme::Http(client));
        components.add_security_scheme("session", SecurityScheme::ApiKey(session));
    }
}

/// Adds the POST operations that do what the path's PUT does: one function answers both
/// methods, and utoipa gives an attribute's methods one operation (one `operationId`), so
/// the POST is the PUT with an id and a summary of its own.
struct SameAsPut;

/// The paths whose POST is their PUT: `(path, operationId, summary)`.
const SAME_AS_PUT: [(&str, &str, &str); 2] = [
    (
        "/api/permission/c/{collection_uuid}/o/{user_id}",
        "permission_post",
        "Give a user a level on a collection (the same as PUT).",
    ),
    (
        "/api/catalog/c/{collection_uuid}/o/{object_uuid}",
        "catalog_post",
        "Add an existing object to a collection (the same as PUT).",
    ),
];

impl Modify for SameAsPut {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for (path, id, summary) in SAME_AS_PUT {
            let Some(item) = openapi.paths.paths.get_mut(path) else {
                continue;
            };
            let Some(mut post) = item.put.clone() else {
                continue;
            };
            post.operation_id = Some(id.to_owned());
            post.summary = Some(summary.to_owned());
            post.description = None;
            item.post = Some(post);
        }
    }
}

/// Adds the `OPTIONS` operation every API path answers (DECISIONS.md §4).
struct Options;

impl Modify for Options {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for (path, item) in openapi.paths.paths.iter_mut() {
            if !path.starts_with("/api/") || path == DOCUMENT_PATH || item.options.is_some() {
                continue;
            }
            let ops: Vec<&Operation> = [&item.get, &item.put, &item.post, &item.delete]
                .into_iter()
                .flatten()
                .collect();
            let tags = ops.first().and_then(|op| op.tags.clone());
            let parameters = ops
                .first()
                .and_then(|op| op.parameters.clone())
                .map(|params| {
                    params
                        .into_iter()
                        .filter(|p| p.parameter_in == ParameterIn::Path)
                        .map(|p| widened(p, &ops))
                        .collect::<Vec<_>>()
                });
            item.options = Some(options_operation(path, parameters, tags));
        }
    }
}

/// OPTIONS parses a path's ids like its other methods but gives `0` no meaning of its
/// own: where the methods disagree on a parameter (describe's PUT takes `0`, its GET a
/// UUID), OPTIONS takes either.
fn widened(mut param: Parameter, ops: &[&Operation]) -> Parameter {
    let schema_of = |op: &Operation| {
        op.parameters
            .iter()
            .flatten()
            .find(|p| p.name == param.name && p.parameter_in == ParameterIn::Path)
            .map(|p| p.schema.clone())
    };
    let first = ops.first().and_then(|op| schema_of(op));
    if ops.iter().any(|op| schema_of(op) != first) {
        param.schema = Some(schemas::UuidOrZero::schema());
    }
    param
}

fn options_operation(
    path: &str,
    parameters: Option<Vec<utoipa::openapi::path::Parameter>>,
    tags: Option<Vec<String>>,
) -> Operation {
    let id = format!(
        "{}_options",
        path.trim_start_matches("/api/")
            .split('/')
            .next()
            .unwrap_or("api")
    );
    let id = if path.starts_with("/api/catalog/o/") {
        "catalog_short_options".to_owned()
    } else if let Some(endpoint) = path.strip_prefix("/api/oauth/") {
        // Four paths under /api/oauth/: one id each.
        format!("oauth_{endpoint}_options")
    } else {
        id
    };
    let ok = ResponseBuilder::new()
        .description(
            "The methods of the path (also in the `Allow` header), whether the caller is \
             authenticated, and whether it may perform the path's write methods.",
        )
        .header(
            "Allow",
            utoipa::openapi::header::HeaderBuilder::new()
                .schema(ObjectBuilder::new().schema_type(Type::String))
                .description(Some("The methods the path implements."))
                .build(),
        )
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("OptionsRecord")))
                .build(),
        )
        .build();
    OperationBuilder::new()
        .operation_id(Some(id))
        .summary(Some("Methods and pre-flight"))
        .description(Some(
            "Answers 200 on every API path (CORS pre-flight too): `proceed` tells a client, \
             before a long operation such as an upload, whether the caller may perform the \
             path's write methods. Never fails on a bad token (it answers \
             `authenticated: \"false\"`). Malformed ids in the path are a 400.",
        ))
        .tags(tags)
        .parameters(parameters)
        .security(SecurityRequirement::default())
        .security(SecurityRequirement::new::<_, _, &str>("bearer", []))
        .response("200", ok)
        .response("400", Ref::from_response_name("BadRequest"))
        .build()
}

/// The object types (DECISIONS.md §2).
const OBJECT_TYPES: [&str; 5] = ["catalog", "video", "audio", "image", "file"];

/// Fields whose values the Rust types cannot show: `(schema, property, allowed values)`.
const FIXED_VALUES: &[(&str, &str, &[&str])] = &[
    ("DescribeRecord", "type", &OBJECT_TYPES),
    ("LimitedRecord", "type", &OBJECT_TYPES),
    ("InfoRecord", "type", &["info"]),
    ("InfoRecord", "fileType", &OBJECT_TYPES),
    ("EmbedRecord", "type", &["embed"]),
    ("VideoRecord", "type", &["video"]),
    ("VideoFile", "format", &["hls", "smil", "mp4"]),
    ("PermissionRecord", "level", &["none", "view", "admin"]),
    ("OEmbedResponse", "version", &["1.0"]),
    ("OEmbedResponse", "type", &["video", "rich"]),
    ("OEmbedResponse", "provider_name", &["medialib"]),
    ("AuthenticateRecord", "type", &["authenticate"]),
    ("HealthStatus", "status", &["ok", "ready"]),
    ("TokenResponse", "token_type", &["Bearer"]),
    (
        "IntrospectionResponse",
        "token_type",
        &["Bearer", "refresh_token"],
    ),
    ("TokenInfo", "type", &["authorize"]),
    ("TokenInfo", "authenticated", &["true"]),
    ("LogoutRecord", "type", &["logout"]),
    ("LogoutRecord", "signedOut", &["true"]),
    // The codes the token, revocation and introspection endpoints answer with a 400, 401 or
    // 503 (`server_error` comes only with a 500).
    (
        "OAuthError",
        "error",
        &[
            "invalid_request",
            "invalid_client",
            "invalid_grant",
            "invalid_scope",
            "unsupported_grant_type",
            "temporarily_unavailable",
        ],
    ),
];

/// Request forms that take parameters they do not know and ignore them (RFC 6749 §3.1 and
/// §3.2: the authorization server's endpoints), where the API's forms refuse them.
const OPEN_FORMS: [&str; 3] = ["TokenForm", "TokenQueryForm", "ConsentForm"];

/// Properties that are booleans as the strings `"true"` / `"false"` (DECISIONS.md §2).
const BOOLEAN_STRINGS: [&str; 4] = ["public", "authenticated", "member", "proceed"];

/// The keys of `images` (DECISIONS.md §2).
const IMAGE_SIZES: [&str; 3] = ["thumbnail", "square", "large"];

/// Properties that hold a UUID (lowercase and dashed in output).
const UUIDS: [&str; 3] = ["uuid", "userId", "sub"];

/// The document as JSON, refined (see the module documentation).
pub fn document() -> Result<Value, serde_json::Error> {
    let mut doc = serde_json::to_value(ApiDoc::openapi())?;
    refine(&mut doc);
    Ok(doc)
}

/// Applies what the derive cannot express.
fn refine(doc: &mut Value) {
    let response_schemas = response_schema_names(doc);
    let request_schemas = request_schema_names(doc);
    let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for (name, schema) in schemas.iter_mut() {
        if response_schemas.contains(name) {
            close(schema);
        } else if OPEN_FORMS.contains(&name.as_str()) {
            schema["additionalProperties"] = json!(true);
        } else if request_schemas.contains(name) && schema.get("properties").is_some() {
            // A field a call does not know is a 400 naming it (input.rs, `ApiCall::only`).
            schema.as_object_mut().into_iter().for_each(|s| {
                s.entry("additionalProperties").or_insert(json!(false));
            });
        }
        for (schema_name, property, values) in FIXED_VALUES {
            if schema_name == name {
                if let Some(p) = schema.pointer_mut(&format!("/properties/{property}")) {
                    p["enum"] = json!(values);
                }
            }
        }
    }
    if let Some(p) = doc.pointer_mut("/components/schemas/DescribeForm/properties/properties") {
        property_limits(p);
    }
    form_bodies(doc);
    form_encodings(doc);
    optional_bodies(doc);
    links::add(doc);
}

/// The limits of client-defined properties (`medialib_domain::text::Properties`), which
/// utoipa's field attributes cannot state for a map.
fn property_limits(schema: &mut Value) {
    schema["maxProperties"] = json!(64);
    schema["propertyNames"] = json!({
        "type": "string",
        "minLength": 1,
        "maxLength": 64,
        "pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f]+$",
    });
    schema["additionalProperties"] = json!({"type": "string", "maxLength": 4096});
}

/// Operations whose body may be empty: every field is optional, or may come from the
/// query string, or is needed only with a `0` in the path.
const OPTIONAL_BODIES: [&str; 5] = [
    "user_post",
    "permission_put",
    "permission_post",
    "permission_delete",
    "info_post",
];

/// utoipa marks every request body required; some are not.
fn optional_bodies(doc: &mut Value) {
    for op in operations_mut(doc) {
        let optional = op["operationId"]
            .as_str()
            .is_some_and(|id| OPTIONAL_BODIES.contains(&id));
        if optional {
            if let Some(body) = op.get_mut("requestBody") {
                body["required"] = json!(false);
            }
        }
    }
}

/// The encodings every request body is accepted in (`input.rs`): an operation names its
/// form once (`request_body(content = Form)`, which utoipa files under JSON), and it is
/// offered in each of these.
const FORM_ENCODINGS: [&str; 3] = [
    "application/x-www-form-urlencoded",
    "multipart/form-data",
    "application/json",
];

/// Offers every request body's form in each of [`FORM_ENCODINGS`].
fn form_bodies(doc: &mut Value) {
    for op in operations_mut(doc) {
        let Some(content) = op
            .pointer_mut("/requestBody/content")
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        let Some(form) = content.get("application/json").cloned() else {
            continue;
        };
        for encoding in FORM_ENCODINGS {
            content.insert(encoding.to_owned(), form.clone());
        }
    }
}

/// Every operation of the document (with the other members of each path item, which the
/// callers' lookups pass over).
fn operations(doc: &Value) -> impl Iterator<Item = &Value> {
    doc.get("paths")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|paths| paths.values())
        .filter_map(Value::as_object)
        .flat_map(|item| item.values())
}

/// [`operations`], to change them.
fn operations_mut(doc: &mut Value) -> impl Iterator<Item = &mut Value> {
    doc.get_mut("paths")
        .and_then(Value::as_object_mut)
        .into_iter()
        .flat_map(|paths| paths.values_mut())
        .filter_map(Value::as_object_mut)
        .flat_map(|item| item.values_mut())
}

/// Names of the component schemas that responses use, directly or through other schemas.
fn response_schema_names(doc: &Value) -> std::collections::BTreeSet<String> {
    let mut found = std::collections::BTreeSet::new();
    let mut pending = Vec::new();
    let mut roots = Vec::new();
    for op in operations(doc) {
        if let Some(responses) = op["responses"].as_object() {
            roots.extend(responses.values());
        }
    }
    if let Some(responses) = doc
        .pointer("/components/responses")
        .and_then(Value::as_object)
    {
        roots.extend(responses.values());
    }
    for root in roots {
        collect_refs(root, &mut pending);
    }
    while let Some(name) = pending.pop() {
        if found.insert(name.clone()) {
            if let Some(schema) = doc.pointer(&format!("/components/schemas/{name}")) {
                collect_refs(schema, &mut pending);
            }
        }
    }
    found
}

/// Names of the component schemas that request bodies use directly.
fn request_schema_names(doc: &Value) -> std::collections::BTreeSet<String> {
    let mut refs = Vec::new();
    for op in operations(doc) {
        if let Some(body) = op.get("requestBody") {
            collect_refs(body, &mut refs);
        }
    }
    refs.into_iter().collect()
}

/// Pushes the schema names of every `$ref` inside `v`.
fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                if k == "$ref" {
                    if let Some(name) = child
                        .as_str()
                        .and_then(|r| r.strip_prefix("#/components/schemas/"))
                    {
                        out.push(name.to_owned());
                    }
                } else {
                    collect_refs(child, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect_refs(i, out)),
        _ => {}
    }
}

/// Closes a response schema and the inline object schemas inside it; types its
/// boolean-string, UUID and `images` properties.
fn close(schema: &mut Value) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    if let Some(properties) = map.get_mut("properties").and_then(Value::as_object_mut) {
        for (name, p) in properties.iter_mut() {
            let is_string = p["type"] == "string";
            if is_string && BOOLEAN_STRINGS.contains(&name.as_str()) {
                p["enum"] = json!(["true", "false"]);
            }
            if is_string && UUIDS.contains(&name.as_str()) {
                p["format"] = json!("uuid");
            }
            if name == "images" && p["type"] == "object" {
                p["propertyNames"] = json!({"enum": IMAGE_SIZES});
            }
            close(p);
        }
        map.entry("additionalProperties").or_insert(json!(false));
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = map.get_mut(key) {
            close(child);
        }
    }
    for key in ["oneOf", "anyOf", "allOf"] {
        if let Some(Value::Array(children)) = map.get_mut(key) {
            children.iter_mut().for_each(close);
        }
    }
}

/// In urlencoded bodies an object field is sent as `NAME[KEY]=VALUE` (`deepObject`).
fn form_encodings(doc: &mut Value) {
    let objects = object_fields_of_schemas(doc);
    for op in operations_mut(doc) {
        let Some(form) = op.pointer_mut("/requestBody/content/application~1x-www-form-urlencoded")
        else {
            continue;
        };
        let name = form
            .pointer("/schema/$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/components/schemas/"))
            .map(str::to_owned);
        let Some(fields) = name.and_then(|n| objects.get(&n)) else {
            continue;
        };
        for field in fields {
            form["encoding"][field] = json!({"style": "deepObject", "explode": true});
        }
    }
}

/// For each component schema, its properties that are objects.
fn object_fields_of_schemas(doc: &Value) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut out = std::collections::BTreeMap::new();
    if let Some(schemas) = doc
        .pointer("/components/schemas")
        .and_then(Value::as_object)
    {
        for (name, schema) in schemas {
            let fields: Vec<String> = schema["properties"]
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(_, p)| p["type"] == "object")
                .map(|(k, _)| k.clone())
                .collect();
            if !fields.is_empty() {
                out.insert(name.clone(), fields);
            }
        }
    }
    out
}

/// The serialized document, built once.
static DOCUMENT: LazyLock<Result<String, String>> = LazyLock::new(|| {
    document()
        .and_then(|doc| serde_json::to_string(&doc))
        .map_err(|e| e.to_string())
});

/// This document.
#[utoipa::path(
    get,
    path = "/api/openapi.json",
    operation_id = "openapi_json",
    tag = "meta",
    security(()),
    responses(
        (status = 200, description = "The OpenAPI 3.1 document of the service.",
            content_type = "application/json", body = Object),
    )
)]
pub(crate) async fn serve() -> Result<HttpResponse, ApiError> {
    match &*DOCUMENT {
        Ok(json) => Ok(HttpResponse::Ok()
            .content_type("application/json")
            .insert_header((header::CACHE_CONTROL, "public, max-age=300"))
            .body(json.clone())),
        Err(reason) => {
            tracing::error!(%reason, "the OpenAPI document cannot be serialized");
            Err(ApiError::Internal)
        }
    }
}

/// Registers the OpenAPI route.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(crate::routing::read_only(DOCUMENT_PATH, serve));
}

#[cfg(test)]
mod tests;
