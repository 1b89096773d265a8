//! The consent page (who signed in, which client asks for what, where the answer goes) and its
//! form's POST: Approve or Deny, CSRF-checked against the session cookie, answered 303 to the
//! client.

use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder, web};
use askama::Template;
use medialib_domain::oauth::{AuthorizationRequest, Scope, ScopeSet};
use medialib_domain::{Secret, User, csrf_matches, csrf_token};

use super::html::{FormAction, Problem, redirect, render};
use super::params::{Hidden, Params, Parsed, field, read_form};
use super::request::validate;
use super::{SESSION_COOKIE, cookie};
use crate::blocking::run;
use crate::error::ApiError;
use crate::state::AppState;

/// The consent page for `user`, signed in with the session cookie `session_cookie` (its CSRF
/// token is bound to it). Users without names are shown by their uniqueId.
pub(super) fn consent(
    builder: HttpResponseBuilder,
    request: &AuthorizationRequest,
    params: &Params,
    user: &User,
    session_cookie: &str,
) -> HttpResponse {
    let user_name = user.display_name();
    let page = ConsentPage {
        client: request.client().name().as_str(),
        user_name: &user_name,
        unique_id: user.unique_id.as_str(),
        scopes: scope_words(request.scope()),
        offline: request.offline_requested(),
        destination: origin(request.redirect_uri().as_str()),
        csrf_token: &csrf_token(&Secret::new(session_cookie)),
        params: params.hidden(),
    };
    let action = consent_form_action(request.redirect_uri().as_str());
    render(builder, &page, action)
}

/// `POST /api/oauth/authorize`: the consent form.
pub(super) async fn decide(
    req: &HttpRequest,
    payload: web::Payload,
    state: &AppState,
) -> Result<HttpResponse, Problem> {
    let form = read_form(req, payload).await?;
    let Some(session_cookie) = cookie(req, SESSION_COOKIE) else {
        return Err(Problem::signed_out());
    };
    let presented = session_cookie.clone();
    let Some(user) = run(state, move |s| s.sessions().session_user(&presented)).await? else {
        return Err(Problem::signed_out());
    };
    let csrf_ok = field(&form, "csrf_token")
        .is_some_and(|token| csrf_matches(&Secret::new(session_cookie), token));
    if !csrf_ok {
        tracing::warn!("consent form refused: CSRF token missing or not bound to the session");
        return Err(Problem::expired_consent_form());
    }
    let request = match validate(state, Parsed::from_fields(&form)).await? {
        Ok(request) => request,
        Err(location) => return Ok(redirect(HttpResponse::SeeOther(), &location)),
    };
    let response = match field(&form, "decision") {
        Some("approve") => {
            let user_id = user.id;
            run(state, move |s| {
                s.oauth().approve_authorization(request, user_id)
            })
            .await?
        }
        Some("deny") => state.services().oauth().deny_authorization(request),
        _ => {
            return Err(Problem {
                error: ApiError::BadRequest("decision must be approve or deny".into()),
                heading: "No decision",
                message: "The consent form must be sent with Approve or Deny. Go back to the \
                          application and start again."
                    .into(),
            });
        }
    };
    tracing::info!(user = %user.id, "authorization decided");
    Ok(redirect(HttpResponse::SeeOther(), &response.location()))
}

/// `scheme://authority` of a (validated) redirect URI.
fn origin(uri: &str) -> &str {
    let after_scheme = uri.find("://").map_or(0, |i| i + 3);
    let end = uri
        .get(after_scheme..)
        .and_then(|rest| rest.find(['/', '?']))
        .map_or(uri.len(), |i| after_scheme + i);
    uri.get(..end).unwrap_or(uri)
}

/// The consent form's `form-action`: Chromium applies it to the redirect that follows the
/// POST, so the client's origin is allowed too. An origin that is not a plain
/// `scheme://host[:port]` source expression (an IPv6 literal, a `*`) drops the directive
/// rather than break the flow.
fn consent_form_action(redirect_uri: &str) -> FormAction {
    let origin = origin(redirect_uri).to_ascii_lowercase();
    let plain = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"))
        .is_some_and(|host| {
            !host.is_empty()
                && host
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':'))
        });
    if plain {
        FormAction::SelfAnd(origin)
    } else {
        FormAction::Unrestricted
    }
}

/// The scopes in words.
fn scope_words(scope: ScopeSet) -> Vec<&'static str> {
    let mut words = Vec::with_capacity(2);
    if scope.contains(Scope::Read) {
        words.push("See your media libraries and objects");
    }
    if scope.contains(Scope::Write) {
        words.push(
            "Change your media libraries and objects: create, edit and delete them, and \
             manage who may use them",
        );
    }
    words
}

#[derive(Template)]
#[template(path = "authorize_consent.html")]
struct ConsentPage<'a> {
    client: &'a str,
    user_name: &'a str,
    unique_id: &'a str,
    scopes: Vec<&'static str>,
    offline: bool,
    destination: &'a str,
    csrf_token: &'a str,
    params: Vec<Hidden<'a>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_consent_form_may_go_to_the_client_origin() {
        assert_eq!(
            consent_form_action("https://LMS.example.edu/cb?x=1"),
            FormAction::SelfAnd("https://lms.example.edu".into())
        );
        assert_eq!(
            consent_form_action("http://127.0.0.1:8123/cb"),
            FormAction::SelfAnd("http://127.0.0.1:8123".into())
        );
        assert_eq!(
            consent_form_action("http://[::1]:8123/cb"),
            FormAction::Unrestricted
        );
        assert_eq!(
            consent_form_action("https://a;script-src/cb"),
            FormAction::Unrestricted
        );
        assert_eq!(origin("https://a.example"), "https://a.example");
        assert_eq!(origin("https://a.example?x"), "https://a.example");
    }
}
