//! Who is calling: `Authorization: Bearer TOKEN` or `Authorization: OAuth TOKEN`.
//!
//! The header's syntax is read by the domain's pure [`parse_authorization`] (fuzzed in
//! `fuzz/`); this module only maps its outcome onto HTTP errors.

use actix_web::HttpRequest;
use actix_web::http::header;
use medialib_domain::oauth::{Credentials, parse_authorization};
use medialib_ports::services::AuthenticatedCaller;

use crate::blocking::run_read;
use crate::error::ApiError;
use crate::state::AppState;

/// The token in the `Authorization` header: `Ok(None)` when there is none, an
/// error when the header is there but is not `Bearer`/`OAuth` with a well-formed token.
pub fn presented_token(req: &HttpRequest) -> Result<Option<String>, ApiError> {
    let Some(value) = req.headers().get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    match parse_authorization(value.as_bytes()) {
        Ok(Credentials::Bearer(token)) => Ok(Some(token.expose().to_owned())),
        Ok(Credentials::Basic { .. }) | Err(_) => Err(ApiError::InvalidToken),
    }
}

/// The authenticated caller, if a token was presented (a bad token is a 401).
pub async fn optional_caller(
    state: &AppState,
    req: &HttpRequest,
) -> Result<Option<AuthenticatedCaller>, ApiError> {
    match presented_token(req)? {
        None => Ok(None),
        // A read: on SQLite it is answered on the async worker when it can be.
        Some(token) => run_read(state, move |s| s.oauth().authenticate_bearer(&token))
            .await
            .map(Some),
    }
}

/// The authenticated caller; no token is a 401.
pub async fn required_caller(
    state: &AppState,
    req: &HttpRequest,
) -> Result<AuthenticatedCaller, ApiError> {
    optional_caller(state, req)
        .await?
        .ok_or(ApiError::AuthenticationRequired)
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    fn token(value: Option<&str>) -> Result<Option<String>, ApiError> {
        let mut req = TestRequest::default();
        if let Some(v) = value {
            req = req.insert_header((header::AUTHORIZATION, v));
        }
        presented_token(&req.to_http_request())
    }

    #[test]
    fn bearer_and_oauth_tokens_are_presented() {
        assert_eq!(token(None), Ok(None));
        assert_eq!(token(Some("Bearer mla_x")), Ok(Some("mla_x".into())));
        assert_eq!(token(Some("oauth   mla_y")), Ok(Some("mla_y".into())));
    }

    #[test]
    fn anything_else_is_an_invalid_token() {
        for value in [
            "Bearer",
            "Bearer a b",
            "Bearer mla_x;",
            "Basic aWQ6c2VjcmV0",
            "Digest x",
            "mla_x",
        ] {
            assert_eq!(token(Some(value)), Err(ApiError::InvalidToken), "{value}");
        }
    }
}
