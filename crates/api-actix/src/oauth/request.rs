//! The authorization request a query string or form makes, judged by the domain
//! (`Services::start_authorization`): valid, an error to send back to the client, or an error
//! page when the client or its redirect URI cannot be trusted. A repeated parameter is handled
//! here, because the domain sees each parameter once (RFC 6749 §3.1).

use medialib_domain::oauth::{
    AuthorizationRequest, AuthorizeRejection, OAuthErrorCode, OAuthState,
};

use super::html::Problem;
use super::params::{Params, Parsed, fields};
use crate::blocking::run;
use crate::pages::query_escape;
use crate::state::AppState;

/// Validates the authorize parameters: the request, `Ok(Err(location))` when the client is
/// to be told about an error, or `Err` for an error page (an untrusted client or redirect URI).
pub(super) async fn validate(
    state: &AppState,
    parsed: Parsed,
) -> Result<Result<AuthorizationRequest, String>, Problem> {
    let Parsed { params, repeated } = parsed;
    if let Some(name) = repeated {
        return repeated_parameter(state, params, name).await;
    }
    let result = run(state, move |s| {
        s.oauth().start_authorization(&params.authorize())
    })
    .await?;
    match result {
        Ok(request) => Ok(Ok(request)),
        Err(AuthorizeRejection::ErrorPage(why)) => Err(Problem::untrusted(why)),
        Err(AuthorizeRejection::Redirect(response)) => Ok(Err(response.location())),
    }
}

/// A parameter sent twice (RFC 6749 §3.1): `invalid_request` to the client when the client
/// and the redirect URI can be trusted, an error page otherwise.
async fn repeated_parameter(
    state: &AppState,
    params: Params,
    name: &'static str,
) -> Result<Result<AuthorizationRequest, String>, Problem> {
    let description = format!("{name} must not be repeated");
    if matches!(name, "client_id" | "redirect_uri") {
        return Err(Problem::untrusted_because(&description));
    }
    // The domain checks the client and the redirect URI first: `ErrorPage` is exactly the
    // answer for an untrusted pair, whatever else the request lacks.
    let probe = params.client_and_redirect_uri();
    if let Err(AuthorizeRejection::ErrorPage(why)) = run(state, move |s| {
        s.oauth().start_authorization(&probe.authorize())
    })
    .await?
    {
        return Err(Problem::untrusted(why));
    }
    let redirect_uri = params.redirect_uri.unwrap_or_default();
    let state_param = params
        .state
        .filter(|_| name != "state")
        .and_then(|s| OAuthState::parse(&s));
    let issuer = state.services().settings().issuer.as_str().to_owned();
    let mut location = redirect_uri;
    let mut sep = if location.contains('?') { '&' } else { '?' };
    let mut add = |k: &str, v: &str| {
        location.push(sep);
        location.push_str(k);
        location.push('=');
        location.push_str(&query_escape(v));
        sep = '&';
    };
    add("error", OAuthErrorCode::InvalidRequest.as_str());
    add("error_description", &description);
    if let Some(s) = &state_param {
        add("state", s.as_str());
    }
    add("iss", &issuer);
    Ok(Err(location))
}

/// The authorization request an authorize query string (`return_to`) still makes, if it is
/// valid now (a client deleted or changed meanwhile makes it invalid).
pub(super) async fn resumable(state: &AppState, return_to: &str) -> Option<AuthorizationRequest> {
    let parsed = Parsed::from_fields(&fields(return_to.as_bytes()).ok()?);
    if parsed.repeated.is_some() {
        return None;
    }
    let params = parsed.params;
    match run(state, move |s| {
        s.oauth().start_authorization(&params.authorize())
    })
    .await
    {
        Ok(Ok(request)) => Some(request),
        Ok(Err(_)) | Err(_) => None,
    }
}
