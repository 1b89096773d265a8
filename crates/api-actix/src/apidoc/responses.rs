//! The error responses the operations share, as reusable components
//! (`#/components/responses/...`): every one carries an [`ErrorBody`](super::schemas::ErrorBody).

use std::collections::BTreeMap;

use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};
use utoipa::{IntoResponses, ToResponse};

/// A response named `name` with `description`, a JSON [`ErrorBody`](super::schemas::ErrorBody)
/// and the given `(header, description)` pairs.
fn error(
    name: &'static str,
    description: &str,
    headers: &[(&str, &str)],
) -> (&'static str, RefOr<Response>) {
    let mut builder = ResponseBuilder::new().description(description).content(
        "application/json",
        ContentBuilder::new()
            .schema(Some(Ref::from_schema_name("ErrorBody")))
            .build(),
    );
    for (header, text) in headers {
        builder = builder.header(
            *header,
            HeaderBuilder::new()
                .schema(ObjectBuilder::new().schema_type(Type::String))
                .description(Some(*text))
                .build(),
        );
    }
    (name, builder.build().into())
}

macro_rules! error_response {
    ($(#[$doc:meta])* $name:ident, $description:expr $(, ($header:expr, $text:expr))* $(,)?) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl<'r> ToResponse<'r> for $name {
            fn response() -> (&'r str, RefOr<Response>) {
                error(stringify!($name), $description, &[$(($header, $text)),*])
            }
        }
    };
}

error_response!(
    /// 400.
    BadRequest,
    "One or more input parameters are invalid; the message names the field (a malformed \
     id, `0` where it has no meaning, a title over 255 characters, an unknown type, \
     malformed or non-UTF-8 input, ...)."
);
error_response!(
    /// 401.
    Unauthorized,
    "No token on a call that needs one (`{\"message\": \"authentication required\"}`, \
     `WWW-Authenticate: Bearer`), or an unknown, expired or revoked token \
     (`{\"message\": \"invalid or expired credentials\"}`, \
     `WWW-Authenticate: Bearer error=\"invalid_token\"`).",
    (
        "WWW-Authenticate",
        "`Bearer`, or `Bearer error=\"invalid_token\"` for a bad token."
    ),
);
error_response!(
    /// 403.
    Forbidden,
    "The caller lacks the permission level the call needs on the collection, or the \
     token's scope lacks `write` for a PUT, POST or DELETE."
);
error_response!(
    /// 404.
    NotFound,
    "The collection, object or user does not exist where the path says (an object that is \
     not a member of the collection is not found), or the path is no API method."
);
error_response!(
    /// 409.
    Conflict,
    "The request conflicts with the stored state; the message carries the details."
);
error_response!(
    /// 413.
    PayloadTooLarge,
    "The request body is larger than 1 MiB."
);
error_response!(
    /// 503.
    Unavailable,
    "The database is unavailable or its connection pool is exhausted; retry after the \
     `Retry-After` seconds.",
    ("Retry-After", "Seconds to wait before retrying."),
);
error_response!(
    /// 501.
    NotImplemented,
    "The call is not implemented; the `Allow` header lists what the path offers.",
    ("Allow", "The methods the path implements."),
);

/// A set of error answers, each a reference to its shared component; an operation names the
/// set in its `responses(...)` next to its success answer.
macro_rules! error_set {
    ($(#[$doc:meta])* $name:ident: $($status:literal => $response:ident),+ $(,)?) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name;

        impl IntoResponses for $name {
            fn responses() -> BTreeMap<String, RefOr<Response>> {
                BTreeMap::from([$((
                    $status.to_owned(),
                    Ref::from_response_name(<$response as ToResponse>::response().0).into(),
                )),+])
            }
        }
    };
}

error_set!(
    /// The errors of a read through a collection: a malformed id, no or a bad token, a missing
    /// level, nothing there, or the database.
    ReadErrors: "400" => BadRequest, "401" => Unauthorized, "403" => Forbidden,
    "404" => NotFound, "503" => Unavailable,
);
error_set!(
    /// The errors of a read that answers a refusal with 404 too, so that an outsider cannot
    /// tell what exists.
    HiddenReadErrors: "400" => BadRequest, "401" => Unauthorized, "404" => NotFound,
    "503" => Unavailable,
);
error_set!(
    /// The errors of a write that cannot conflict with the stored state.
    WriteErrors: "400" => BadRequest, "401" => Unauthorized, "403" => Forbidden,
    "404" => NotFound, "413" => PayloadTooLarge, "503" => Unavailable,
);
error_set!(
    /// The errors of a write that can conflict with the stored state (409).
    ConflictingWriteErrors: "400" => BadRequest, "401" => Unauthorized, "403" => Forbidden,
    "404" => NotFound, "409" => Conflict, "413" => PayloadTooLarge, "503" => Unavailable,
);
