//! The `oidc` sign-in mode on the authorization endpoint (DECISIONS.md §6): the browser signs
//! in at the organization's OpenID Connect provider and comes back here.
//!
//! - `GET /api/oauth/authorize` with a valid request and no live session answers 302 to the
//!   identity provider; the sign-in's nonce and PKCE verifier and the authorize query are kept
//!   server-side under the digest of a fresh `state` (ten minutes, single use). When the
//!   provider cannot be reached, the client gets `error=server_error` (with its `state` and
//!   `iss`).
//! - `GET /api/sso/oidc/callback?state=..&code=..` finishes the sign-in: a new session cookie
//!   (as after the password form) and 303 back to the authorize page, which shows consent.
//! - A sign-in the provider refused or the user cancelled (`error=access_denied`), or an ID
//!   token that fails a check, sends the client `error=access_denied`; a provider that is
//!   down sends `server_error`. When the authorization request can no longer be resumed
//!   (the client was removed meanwhile), an error page says so instead.
//! - An unknown, expired or already used `state` is an error page (400), never a redirect.
//!
//! Every answer carries the same `no-store`, framing and referrer headers as the other
//! authorize pages (`html.rs`).

use actix_web::http::Method;
use actix_web::{HttpRequest, HttpResponse, web};
use medialib_domain::oauth::{AuthorizationRequest, OAuthErrorCode};
use medialib_domain::sign_in::{AfterSignIn, ReturnPath};
use medialib_ports::RedirectCallback;
use medialib_ports::services::{FinishSignInError, SignInError};

use super::html::{Problem, other_method, redirect};
use super::params::{Params, field, fields};
use super::request::resumable;
use super::session_cookie;
use crate::blocking::run;
use crate::error::ApiError;
use crate::state::AppState;

/// The methods of `/api/sso/oidc/callback`.
const CALLBACK_ALLOW: &str = "GET, OPTIONS";

/// Sends a browser with a valid authorization request and no session to the identity
/// provider (302), or the client `server_error` when the provider cannot be reached.
pub(super) async fn to_identity_provider(
    req: &HttpRequest,
    state: &AppState,
    request: AuthorizationRequest,
    params: &Params,
) -> Result<HttpResponse, Problem> {
    // Each start stores a pending sign-in: limited like the password form.
    state.limits().login_per_addr.hit(&state.remote_addr(req))?;
    let return_to = AfterSignIn::Authorize(params.query());
    match begin(state, &return_to).await? {
        Ok(url) => Ok(redirect(HttpResponse::Found(), &url)),
        Err(SignInError::Unavailable(why)) => {
            tracing::warn!(%why, "cannot start the sign-in at the identity provider");
            let issuer = state.services().settings().issuer.clone();
            let response = request.fail(
                OAuthErrorCode::ServerError,
                "the organization's sign-in service is unavailable; try again later",
                &issuer,
            );
            Ok(redirect(HttpResponse::Found(), &response.location()))
        }
        Err(e) => Err(ApiError::from(e).into()),
    }
}

/// Sends a browser signing in on medialib's own pages to the identity provider (302); it
/// comes back to `next`. A provider that cannot be reached is an error page.
pub(crate) async fn to_identity_provider_for(
    req: &HttpRequest,
    state: &AppState,
    next: ReturnPath,
) -> Result<HttpResponse, Problem> {
    // Each start stores a pending sign-in: limited like the password form.
    state.limits().login_per_addr.hit(&state.remote_addr(req))?;
    match begin(state, &AfterSignIn::Page(next)).await? {
        Ok(url) => Ok(redirect(HttpResponse::Found(), &url)),
        Err(SignInError::Unavailable(why)) => {
            tracing::warn!(%why, "cannot start the sign-in at the identity provider");
            Err(ApiError::IdentityProviderUnavailable.into())
        }
        Err(e) => Err(ApiError::from(e).into()),
    }
}

/// Keeps a pending sign-in that resumes at `return_to` and gives the identity provider's
/// URL to send the browser to.
async fn begin(
    state: &AppState,
    return_to: &AfterSignIn,
) -> Result<Result<String, SignInError>, Problem> {
    let kept = return_to.encode();
    Ok(run(state, move |s| {
        Ok::<_, ApiError>(s.sessions().begin_redirect_sign_in(&kept))
    })
    .await?)
}

/// `/api/sso/oidc/callback`: where the identity provider sends the browser back.
pub(super) async fn callback(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let answer = match *req.method() {
        Method::GET => finish(&req, &state).await,
        _ => other_method(&state, &req, CALLBACK_ALLOW).await,
    };
    answer.unwrap_or_else(Problem::page)
}

/// `GET /api/sso/oidc/callback?state=..&(code=..|error=..)`.
async fn finish(req: &HttpRequest, state: &AppState) -> Result<HttpResponse, Problem> {
    if !super::sign_in_method(state).returns_from_identity_provider() {
        return Err(Problem {
            error: ApiError::NotImplemented("OpenID Connect sign-in is not enabled".into()),
            heading: "Sign-in is not available",
            message: "This medialib does not sign people in through OpenID Connect, so this \
                      address has nothing to do. Go back to the application and start again."
                .into(),
        });
    }
    let query = fields(req.query_string().as_bytes())?;
    let Some(sso_state) = field(&query, "state").filter(|s| !s.is_empty()) else {
        return Err(no_pending_sign_in());
    };
    let sso_state = sso_state.to_owned();
    let text = |name: &str| field(&query, name).map(str::to_owned);
    let (code, error, description) = (text("code"), text("error"), text("error_description"));
    let outcome = run(state, move |s| {
        Ok::<_, ApiError>(s.sessions().finish_redirect_sign_in(
            &sso_state,
            RedirectCallback {
                code: code.as_deref(),
                error: error.as_deref(),
                error_description: description.as_deref(),
            },
        ))
    })
    .await?;
    match &outcome {
        Ok(_) => crate::metrics::count_sign_in(&state.metrics, &Ok::<(), SignInError>(())),
        Err(FinishSignInError::Failed { error, .. }) => {
            crate::metrics::count_sign_in(&state.metrics, &Err::<(), _>(error.clone()));
        }
        Err(FinishSignInError::UnknownState | FinishSignInError::Store(_)) => {}
    }
    match outcome {
        Ok(done) => {
            let mut builder = HttpResponse::SeeOther();
            builder.append_header((
                actix_web::http::header::SET_COOKIE,
                session_cookie(state, &done.session),
            ));
            let location = match AfterSignIn::decode(&done.return_to) {
                AfterSignIn::Authorize(query) => format!("/api/oauth/authorize?{query}"),
                AfterSignIn::Page(path) => path.as_str().to_owned(),
            };
            Ok(redirect(builder, &location))
        }
        Err(FinishSignInError::UnknownState) => Err(no_pending_sign_in()),
        Err(FinishSignInError::Store(e)) => Err(ApiError::from(e).into()),
        Err(FinishSignInError::Failed { error, return_to }) => {
            failed(state, error, &return_to).await
        }
    }
}

/// A sign-in that failed after its pending record was taken: the client is told
/// (`access_denied`, or `server_error` when the provider or medialib could not do its part),
/// or, when its authorization request cannot be resumed, an error page.
async fn failed(
    state: &AppState,
    error: SignInError,
    return_to: &str,
) -> Result<HttpResponse, Problem> {
    let (code, description, problem) = match error {
        e @ (SignInError::Unavailable(_) | SignInError::Store(_)) => (
            OAuthErrorCode::ServerError,
            "the sign-in could not be completed: the organization's sign-in service or medialib \
             is unavailable; try again later",
            Problem::from(ApiError::from(e)),
        ),
        SignInError::InvalidCredentials | SignInError::SlowDown(_) | SignInError::Unsupported => (
            OAuthErrorCode::AccessDenied,
            "the user was not signed in: the sign-in was cancelled or refused",
            Problem {
                error: ApiError::Forbidden("the sign-in was cancelled or refused".into()),
                heading: "You were not signed in",
                message: "The organization's sign-in service did not sign you in: the sign-in \
                          was cancelled, refused, or could not be verified. Nothing was shared \
                          with the application. Go back to the application and try again."
                    .into(),
            },
        ),
    };
    // A sign-in begun on medialib's own pages has no client to tell: the page says it.
    let AfterSignIn::Authorize(query) = AfterSignIn::decode(return_to) else {
        return Err(problem);
    };
    let Some(request) = resumable(state, &query).await else {
        return Err(problem);
    };
    let issuer = state.services().settings().issuer.clone();
    let response = request.fail(code, description, &issuer);
    Ok(redirect(HttpResponse::Found(), &response.location()))
}

/// The page for a callback whose `state` names no pending sign-in.
fn no_pending_sign_in() -> Problem {
    Problem {
        error: ApiError::BadRequest(
            "no sign-in is pending for this state: it is unknown, expired or already used".into(),
        ),
        heading: "This sign-in has expired",
        message: "This sign-in link is unknown, has expired, or was already used, so you were \
                  not signed in. Go back to the application and start signing in again."
            .into(),
    }
}
