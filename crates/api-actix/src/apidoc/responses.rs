//! The error responses the operations share, as reusable components
//! (`#/components/responses/...`): every one carries an [`ErrorBody`](super::schemas::ErrorBody).

use utoipa::ToResponse;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};

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
