//! Who is calling: `Authorization: Bearer TOKEN` or `Authorization: OAuth TOKEN`.

use actix_web::HttpRequest;
use actix_web::http::header;
use medialib_domain::Caller;
use medialib_domain::oauth::Scope;
use medialib_ports::services::AuthenticatedCaller;

use crate::blocking::run;
use crate::error::ApiError;
use crate::state::AppState;

/// The token in the `Authorization` header: `Ok(None)` when there is none, an
/// error when the header is there but is not `Bearer`/`OAuth` with a token.
pub fn presented_token(req: &HttpRequest) -> Result<Option<String>, ApiError> {
    let Some(value) = req.headers().get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let value = value.to_str().map_err(|_| ApiError::InvalidToken)?;
    let (scheme, token) = value.split_once(' ').ok_or(ApiError::InvalidToken)?;
    let token = token.trim();
    let scheme_ok = scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("oauth");
    if !scheme_ok || token.is_empty() {
        return Err(ApiError::InvalidToken);
    }
    Ok(Some(token.to_owned()))
}

/// The authenticated caller, if a token was presented (a bad token is a 401).
pub async fn optional_caller(
    state: &AppState,
    req: &HttpRequest,
) -> Result<Option<AuthenticatedCaller>, ApiError> {
    match presented_token(req)? {
        None => Ok(None),
        Some(token) => run(state, move |s| s.authenticate_bearer(&token))
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

/// The authenticated caller of a write (PUT/POST/DELETE): the token must carry `write`.
pub async fn writer(state: &AppState, req: &HttpRequest) -> Result<Caller, ApiError> {
    let c = required_caller(state, req).await?;
    if !c.scope.contains(Scope::Write) {
        return Err(ApiError::Forbidden(
            "this token's scope does not allow writes".into(),
        ));
    }
    Ok(c.user.as_caller())
}

/// The authenticated caller of a read.
pub async fn reader(state: &AppState, req: &HttpRequest) -> Result<Caller, ApiError> {
    Ok(required_caller(state, req).await?.user.as_caller())
}
