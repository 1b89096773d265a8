//! LTI (DECISIONS.md §8). LTI 1.1: `POST /api/lti/` (Warpwire's plugins: a pick returns as
//! `jsonData` on the return URL) and `POST /api/ltix/` (a pick returns as a signed
//! ContentItemSelection). LTI 1.3: `GET /api/lti/jwks` (medialib's public keys),
//! `GET|POST /api/lti/login` (the OIDC third-party-initiated login, which sends the browser
//! to the platform) and `POST /api/lti/launch` (the platform's signed `id_token`; a pick
//! returns as a signed Deep Linking response). A launch signs the person in with the same
//! browser session as the sign-in pages and sends them on: to a player, the course library,
//! or the picker, which is the launch's answer itself. Every refusal is a page that says
//! why, counted on `/metrics`.
//!
//! The pages here may be framed by the LMS (`embed_origins`, any site by default), as the
//! player's landing page may: an LMS shows a tool in an iframe.

use actix_web::http::{Method, header};
use actix_web::{HttpMessage as _, HttpRequest, HttpResponse, HttpResponseBuilder, web};
use askama::Template;
use medialib_ports::services::lti::{LaunchNext, Lti11LaunchFailed, LtiLaunch};

use crate::blocking::run;
use crate::browser::{ErrorPage, session_cookie};
use crate::error::ApiError;
use crate::normalize::OriginalPath;
use crate::oauth::params::{fields, read_form};
use crate::routing::resource;
use crate::state::AppState;

mod picker;
mod v1p3;

use picker::{Back, course_page, picker};
use v1p3::{jwks, launch_v1p3, login};

/// Registers the LTI routes (their trailing slash is normalized away before routing; the
/// signature is checked against the path as sent).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/api/lti").to(warpwire))
        .service(resource("/api/ltix").to(content_item))
        .service(resource("/api/lti/jwks").to(jwks))
        .service(resource("/api/lti/login").to(login))
        .service(resource("/api/lti/launch").to(launch_v1p3));
}

/// How a pick goes back to the platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    /// `/api/lti/`: Warpwire's plugins read `jsonData` from their return URL.
    Warpwire,
    /// `/api/ltix/`: a signed `ContentItemSelection` form posted to `content_item_return_url`.
    ContentItem,
}

async fn warpwire(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> HttpResponse {
    launch(&req, payload, &state, Endpoint::Warpwire).await
}

async fn content_item(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> HttpResponse {
    launch(&req, payload, &state, Endpoint::ContentItem).await
}

/// A refusal as the person sees it.
struct Refused {
    error: ApiError,
    heading: &'static str,
    message: String,
}

impl From<ApiError> for Refused {
    fn from(error: ApiError) -> Self {
        Self {
            heading: "The launch did not work",
            message: format!("{error}"),
            error,
        }
    }
}

async fn launch(
    req: &HttpRequest,
    payload: web::Payload,
    state: &AppState,
    endpoint: Endpoint,
) -> HttpResponse {
    if *req.method() != Method::POST {
        let error = ApiError::MethodNotImplemented { allow: "POST" };
        return refusal_page(state, &error.into());
    }
    let answer = async {
        let mut params = fields(req.query_string().as_bytes())?;
        params.extend(read_form(req, payload).await?);
        let path = req
            .extensions()
            .get::<OriginalPath>()
            .map_or_else(|| req.path().to_owned(), |p| p.0.clone());
        let url = format!("{}{path}", state.base_url());
        let outcome = run(state, move |s| {
            Ok::<_, ApiError>(s.lti().launch_v1p1(&url, params))
        })
        .await?;
        Ok::<_, ApiError>(outcome)
    };
    let outcome = match answer.await {
        Ok(outcome) => outcome,
        Err(e) => {
            state.metrics.count_lti_launch("1.1", "error");
            return refusal_page(state, &e.into());
        }
    };
    match outcome {
        Ok(launch) => {
            state.metrics.count_lti_launch("1.1", "ok");
            match signed_in(state, launch, endpoint).await {
                Ok(page) => page,
                Err(e) => refusal_page(state, &e.into()),
            }
        }
        Err(failed) => {
            state.metrics.count_lti_launch("1.1", failed.outcome());
            tracing::info!(reason = %failed, "LTI 1.1 launch refused");
            refusal_page(state, &refused(failed))
        }
    }
}

/// Why a launch was refused, as its page tells it.
enum Why {
    /// A launch medialib does not serve (400).
    Unsupported,
    /// A learner at the picker (403).
    LearnerPick,
    /// A launch that could not be trusted (403).
    Untrusted,
    /// The platform's keys could not be fetched (503).
    KeysUnavailable,
}

/// The refusal page's status, heading and message for `why`, with `message` saying what.
fn refusal(why: Why, message: String) -> Refused {
    let (error, heading) = match why {
        Why::Unsupported => (
            ApiError::BadRequest(message.clone()),
            "medialib cannot answer this launch",
        ),
        Why::LearnerPick => (
            ApiError::Forbidden(message.clone()),
            "Only teachers pick media",
        ),
        Why::Untrusted => (
            ApiError::Forbidden(message.clone()),
            "This launch could not be trusted",
        ),
        Why::KeysUnavailable => (
            ApiError::IdentityProviderUnavailable,
            "The course system's keys could not be fetched",
        ),
    };
    Refused {
        error,
        heading,
        message: format!(
            "{message}. Nothing was changed. If it keeps happening, show this page to the \
             course system's administrator."
        ),
    }
}

/// What a refused LTI 1.1 launch tells the person, and its status.
fn refused(failed: Lti11LaunchFailed) -> Refused {
    let why = match &failed {
        Lti11LaunchFailed::Store(e) => return ApiError::from(e.clone()).into(),
        Lti11LaunchFailed::SignIn(e) => return ApiError::from(e.clone()).into(),
        Lti11LaunchFailed::Launch(_) => Why::Unsupported,
        Lti11LaunchFailed::LearnerMayNotPick => Why::LearnerPick,
        Lti11LaunchFailed::Signature(_)
        | Lti11LaunchFailed::UnknownConsumer
        | Lti11LaunchFailed::Replay => Why::Untrusted,
    };
    refusal(why, failed.to_string())
}

/// The refusal page: the status and headers of its error, framable by the LMS.
fn refusal_page(state: &AppState, refused: &Refused) -> HttpResponse {
    let page = ErrorPage {
        heading: refused.heading,
        message: &refused.message,
        sign_in: None,
    };
    render(state, refused.error.page_builder(), &page, None)
}

/// Renders `page` with headers that let the LMS frame it; `form_to` is the one origin
/// other than medialib a form on it may post to.
fn render(
    state: &AppState,
    mut builder: HttpResponseBuilder,
    page: &impl Template,
    form_to: Option<&str>,
) -> HttpResponse {
    let frame_ancestors = state.frame_ancestors();
    let form_action = match form_to {
        Some(origin) => format!("'self' {origin}"),
        None => "'self'".to_owned(),
    };
    builder
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            format!(
                "default-src 'self'; object-src 'none'; base-uri 'none'; \
                 form-action {form_action}; frame-ancestors {frame_ancestors}"
            ),
        ))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
    match page.render() {
        Ok(body) => builder.content_type("text/html; charset=utf-8").body(body),
        Err(e) => {
            tracing::error!(error = %e, "cannot render an LTI page");
            crate::browser::error_page(&ApiError::Internal)
        }
    }
}

/// After a launch was let in: the session cookie, and where it leads.
async fn signed_in(
    state: &AppState,
    launch: LtiLaunch,
    endpoint: Endpoint,
) -> Result<HttpResponse, ApiError> {
    let cookie = session_cookie(state, &launch.session);
    let location = match &launch.next {
        LaunchNext::Pick(pick) => {
            let mut builder = HttpResponse::Ok();
            builder.append_header((header::SET_COOKIE, cookie));
            let back = match endpoint {
                Endpoint::Warpwire => Back::Warpwire(pick.clone()),
                Endpoint::ContentItem => Back::ContentItem(pick.clone()),
            };
            return picker(state, builder, &launch, back).await;
        }
        LaunchNext::DeepLink(link) => {
            let mut builder = HttpResponse::Ok();
            builder.append_header((header::SET_COOKIE, cookie));
            return picker(state, builder, &launch, Back::DeepLinking(link.clone())).await;
        }
        LaunchNext::Page(path) => path.clone(),
        LaunchNext::Player(media) => {
            let media = *media;
            let object = run(state, move |s| s.store().object(media)).await?;
            let object = object.ok_or(ApiError::NotFound)?;
            format!("/m/{}", object.shortcode())
        }
        LaunchNext::Library => {
            // The library's own page refuses frames (its forms could be clickjacked): the
            // launch answers a framable list of the course's media, each leading to its
            // player (framable).
            let mut builder = HttpResponse::Ok();
            builder.append_header((header::SET_COOKIE, cookie));
            return course_page(state, builder, &launch).await;
        }
    };
    Ok(HttpResponse::SeeOther()
        .append_header((header::SET_COOKIE, cookie))
        .insert_header((header::LOCATION, location))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .finish())
}

/// `scheme://host[:port]` of an absolute `http(s)` URL, for a CSP `form-action`; `None` when
/// the URL's authority holds anything a host and port do not (a `;` or a space would add a
/// directive to the header).
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let authority = rest.split(['/', '?', '#']).next()?;
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']');
    let fits = matches!(scheme.as_str(), "http" | "https")
        && !authority.is_empty()
        && authority.chars().all(plain);
    fits.then(|| format!("{scheme}://{authority}"))
}

/// `text` percent-encoded for a query value (`application/x-www-form-urlencoded`).
fn form_urlencoded(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(char::from(byte));
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// `text` for a double-quoted HTML attribute.
fn html_attribute(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_action_origin_is_a_plain_http_origin_or_none() {
        assert_eq!(
            origin_of("https://lms.example.edu:8443/mod/lti/return.php?course=2").as_deref(),
            Some("https://lms.example.edu:8443")
        );
        assert_eq!(
            origin_of("HTTP://[::1]:8000").as_deref(),
            Some("http://[::1]:8000")
        );
        for bad in [
            "https://a;script-src *@lms.example.edu/",
            "https://lms example.edu/",
            "javascript://x/",
            "https:///path",
            "lms.example.edu/path",
        ] {
            assert_eq!(origin_of(bad), None, "{bad}");
        }
    }

    #[test]
    fn query_values_are_form_encoded() {
        assert_eq!(
            form_urlencoded("[{\"a\": \"b c&d\"}]"),
            "%5B%7B%22a%22%3A+%22b+c%26d%22%7D%5D"
        );
    }
}
