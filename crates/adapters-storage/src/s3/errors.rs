//! object_store's errors as the port's.
//!
//! object_store keeps the HTTP status of a failed request in a private type; what is public
//! is its transport error (`HttpError`, whose kind tells a refused connection or a timeout)
//! and the text, which names the status (`status code: 507 …`) or carries the S3 error body
//! (`<Code>NoSuchUpload</Code>`). Both are read here, in this one place.

use std::error::Error as _;

use medialib_ports::StorageError;
use object_store::client::{HttpError, HttpErrorKind};

/// Maps an object_store error to the port's.
pub(super) fn s3_error(e: object_store::Error) -> StorageError {
    if let object_store::Error::NotFound { .. } = e {
        return StorageError::NotFound;
    }
    let mut text = e.to_string();
    let mut source = e.source();
    let mut transport = None;
    while let Some(cause) = source {
        if let Some(http) = cause.downcast_ref::<HttpError>() {
            transport = Some(http.kind());
        }
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    classify(&text, transport)
}

fn classify(text: &str, transport: Option<HttpErrorKind>) -> StorageError {
    if let Some(
        HttpErrorKind::Connect
        | HttpErrorKind::Request
        | HttpErrorKind::Timeout
        | HttpErrorKind::Interrupted,
    ) = transport
    {
        return StorageError::Unavailable(text.to_owned());
    }
    let code = s3_code(text);
    match (status(text), code) {
        (Some(416), _) | (_, Some("InvalidRange")) => StorageError::OutOfRange,
        (Some(404), _) | (_, Some("NoSuchKey" | "NoSuchUpload")) => StorageError::NotFound,
        (Some(507), _) | (_, Some("QuotaExceeded" | "InsufficientStorage" | "EntityTooLarge")) => {
            StorageError::Full
        }
        _ if text.to_ascii_lowercase().contains("quota") => StorageError::Full,
        (Some(500..=599), _) | (_, Some("SlowDown" | "ServiceUnavailable" | "InternalError")) => {
            StorageError::Unavailable(text.to_owned())
        }
        _ => StorageError::Unexpected(text.to_owned()),
    }
}

/// The HTTP status object_store's text names (`… status code: 507 Insufficient Storage …`).
fn status(text: &str) -> Option<u16> {
    let (_, rest) = text.split_once("status code: ")?;
    rest.get(..3)?.parse().ok()
}

/// The `<Code>` of an S3 error body in the text.
fn s3_code(text: &str) -> Option<&str> {
    let (_, rest) = text.split_once("<Code>")?;
    rest.split_once("</Code>").map(|(code, _)| code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_codes_name_the_port_errors() {
        let full = "Generic S3 error: Error performing PUT http://x in 1ms - Server returned \
                    non-2xx status code: 507 Insufficient Storage: ";
        assert_eq!(classify(full, None), StorageError::Full);
        let range = "Server returned non-2xx status code: 416 Range Not Satisfiable: <Error>\
                     <Code>InvalidRange</Code></Error>";
        assert_eq!(classify(range, None), StorageError::OutOfRange);
        let upload = "Server returned error response: <Error><Code>NoSuchUpload</Code></Error>";
        assert_eq!(classify(upload, None), StorageError::NotFound);
        assert!(matches!(
            classify("status code: 503 Service Unavailable", None),
            StorageError::Unavailable(_)
        ));
        assert!(matches!(
            classify("error sending request", Some(HttpErrorKind::Connect)),
            StorageError::Unavailable(_)
        ));
        assert!(matches!(
            classify("status code: 400 Bad Request", None),
            StorageError::Unexpected(_)
        ));
    }
}
