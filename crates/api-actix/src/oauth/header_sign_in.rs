//! The `header` sign-in mode on the authorization page (DECISIONS.md §6): an authenticating
//! reverse proxy in `trusted_proxies` names the user in `sso_header`.
//!
//! `GET /api/oauth/authorize` with a valid request and no live session:
//! - request from a trusted proxy, header present: sign-in (the `header` SSO provider turns
//!   the value into the uniqueId, the user is provisioned on first sign-in), a new session
//!   cookie, and the consent page at once;
//! - header absent or blank: a 401 page (the request did not come through the organization's
//!   proxy, or the proxy did not sign the person in); the client is told nothing, so the
//!   person can retry through the proxy;
//! - header present but the peer is not a trusted proxy: a 403 page and a warning in the log,
//!   since someone may be forging the header. No session is started.
//!
//! There is no password form in this mode: `POST /api/oauth/login` answers 501.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse};
use medialib_domain::oauth::AuthorizationRequest;
use medialib_ports::Credentials;
use medialib_ports::services::{SignInError, StartedSession};

use super::consent::consent;
use super::html::Problem;
use super::params::Params;
use super::session_cookie;
use crate::blocking::run;
use crate::error::ApiError;
use crate::state::AppState;

/// Whether the request carries a non-blank sign-in header (trusted or not: [`sign_in`] decides).
pub(crate) fn carries_header(req: &HttpRequest, state: &AppState) -> bool {
    state.sso_header().is_some_and(|name| {
        req.headers()
            .get_all(name)
            .any(|v| !v.as_bytes().trim_ascii().is_empty())
    })
}

/// Signs in the person the proxy names and answers the consent page, or an error page.
pub(super) async fn sign_in(
    req: &HttpRequest,
    state: &AppState,
    request: &AuthorizationRequest,
    params: &Params,
) -> Result<HttpResponse, Problem> {
    let started = start_session(req, state).await?;
    let mut builder = HttpResponse::Ok();
    builder.append_header((header::SET_COOKIE, session_cookie(state, &started)));
    Ok(consent(
        builder,
        request,
        params,
        &started.user,
        started.cookie.expose(),
    ))
}

/// Signs in the person the proxy names (a trusted proxy's one non-blank header): the session
/// started, or an error page (no header: not through the proxy; an untrusted peer: a
/// possible forgery, logged; a name medialib cannot accept).
pub(crate) async fn start_session(
    req: &HttpRequest,
    state: &AppState,
) -> Result<StartedSession, Problem> {
    let Some(name) = state.sso_header() else {
        tracing::error!("sso = header, but the web layer was given no header name");
        return Err(Problem {
            error: ApiError::NotImplemented("header sign-in is not configured".into()),
            heading: "Sign-in is not available",
            message: "Signing in is not possible right now: medialib is not configured \
                      completely. Contact your administrator."
                .into(),
        });
    };
    let client = state.client(req);
    let values: Vec<_> = req
        .headers()
        .get_all(name)
        .filter(|v| !v.as_bytes().trim_ascii().is_empty())
        .collect();
    let Some(first) = values.first() else {
        return Err(not_through_the_proxy());
    };
    if !client.via_trusted_proxy {
        let peer = req.peer_addr().map(|a| a.ip());
        tracing::warn!(
            peer = ?peer,
            header = name,
            "refused a sign-in header from an address that is not a trusted proxy; someone may be forging it"
        );
        return Err(forged());
    }
    state.limits().login_per_addr.hit(&client.ip.to_string())?;
    let value = match (values.len(), std::str::from_utf8(first.as_bytes())) {
        (1, Ok(value)) => value.to_owned(),
        (count, _) => {
            tracing::warn!(
                header = name,
                count,
                "the trusted proxy's sign-in header is repeated or not UTF-8; refused"
            );
            return Err(unacceptable_identity(ApiError::AuthenticationRequired));
        }
    };
    // The provider checks the trust again (it never takes an untrusted header).
    let from_trusted_proxy = client.via_trusted_proxy;
    let outcome = run(state, move |s| {
        Ok::<_, ApiError>(s.sessions().sign_in(Credentials::ProxyHeader {
            value: &value,
            from_trusted_proxy,
        }))
    })
    .await?;
    crate::metrics::count_sign_in(&state.metrics, &outcome);
    match outcome {
        Ok(started) => Ok(started),
        Err(e @ SignInError::InvalidCredentials) => Err(unacceptable_identity(e.into())),
        Err(e @ (SignInError::Unsupported | SignInError::Unavailable(_))) => Err(Problem {
            heading: "Sign-in is not available",
            message: format!(
                "Signing in is not possible right now: {e}. Try again later, or contact your administrator."
            ),
            error: e.into(),
        }),
        Err(e @ (SignInError::SlowDown(_) | SignInError::Store(_))) => {
            Err(ApiError::from(e).into())
        }
    }
}

/// `POST /api/oauth/login` in the `header` mode: there is no password form to submit.
pub(super) fn no_password_form() -> Problem {
    Problem {
        error: ApiError::NotImplemented(
            "sign-in is handled by the organization's proxy; there is no password form".into(),
        ),
        heading: "No password sign-in here",
        message: "medialib does not take passwords here: signing in is handled by your \
                  organization's single sign-on in front of medialib. Go back to the \
                  application and start again."
            .into(),
    }
}

/// No identity header: the request did not come through the proxy (or it did not sign the
/// person in).
pub(crate) fn not_through_the_proxy() -> Problem {
    Problem {
        error: ApiError::AuthenticationRequired,
        heading: "Sign in through your organization",
        message: "Sign-in is handled by your organization's proxy, and this request did not \
                  come through it, so medialib does not know who you are. Open the link from \
                  the application again through your organization's usual address; if this \
                  keeps happening, contact your administrator."
            .into(),
    }
}

/// An identity header from an address that is not a trusted proxy.
fn forged() -> Problem {
    Problem {
        error: ApiError::Forbidden(
            "the sign-in header came from an address that is not a trusted proxy".into(),
        ),
        heading: "Sign-in refused",
        message: "This request names a user in the header that only your organization's \
                  proxy may set, but it did not come from that proxy, so medialib did not \
                  sign anyone in. Sign in through your organization's usual address."
            .into(),
    }
}

/// A header from the trusted proxy that does not name a user medialib can accept.
fn unacceptable_identity(error: ApiError) -> Problem {
    Problem {
        error,
        heading: "Sign-in refused",
        message: "Your organization's proxy signed you in, but the identity it passed on is \
                  not one medialib can accept, so nobody was signed in. Contact your \
                  administrator."
            .into(),
    }
}
