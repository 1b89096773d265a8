//! The authorization request a query string or form makes, judged by the domain
//! (`OAuthServices::start_authorization`, repeated parameters included): valid, an error to
//! send back to the client, or an error page when the client or its redirect URI cannot be
//! trusted.

use medialib_domain::oauth::{AuthorizationRequest, AuthorizeParams, AuthorizeRejection};
use medialib_ports::services::StartAuthorizationFailed;

use super::html::Problem;
use super::params::{Parsed, fields};
use crate::blocking::run;
use crate::error::ApiError;
use crate::state::AppState;

/// Validates the authorize parameters: the request, `Ok(Err(location))` when the client is
/// to be told about an error, or `Err` for an error page (an untrusted client or redirect URI).
pub(super) async fn validate(
    state: &AppState,
    parsed: Parsed,
) -> Result<Result<AuthorizationRequest, String>, Problem> {
    let Parsed { params, repeated } = parsed;
    // The outer result is the blocking pool's (overload, a panic); the inner one the use case's.
    let started = run(state, move |s| {
        Ok::<_, ApiError>(s.oauth().start_authorization(&AuthorizeParams {
            repeated,
            ..params.authorize()
        }))
    })
    .await?;
    match started {
        Ok(request) => Ok(Ok(request)),
        Err(StartAuthorizationFailed::Rejected(AuthorizeRejection::ErrorPage(why))) => {
            Err(Problem::untrusted(why))
        }
        Err(StartAuthorizationFailed::Rejected(AuthorizeRejection::Redirect(response))) => {
            Ok(Err(response.location()))
        }
        Err(StartAuthorizationFailed::Store(e)) => Err(ApiError::from(e).into()),
    }
}

/// The authorization request an authorize query string (`return_to`) still makes, if it is
/// valid now (a client deleted or changed meanwhile makes it invalid).
pub(super) async fn resumable(state: &AppState, return_to: &str) -> Option<AuthorizationRequest> {
    let parsed = Parsed::from_fields(&fields(return_to.as_bytes()).ok()?);
    validate(state, parsed).await.ok()?.ok()
}
