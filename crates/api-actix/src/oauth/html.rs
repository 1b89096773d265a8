//! How every page of the authorization endpoint is answered: its security headers (CSP with the
//! page's `form-action`, no framing, no referrer, `no-store`), rendering, redirects, and error
//! pages ([`Problem`]) whose status and headers come from [`ApiError`].

use actix_web::http::{Method, header};
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder};
use askama::Template;
use medialib_domain::oauth::ErrorPage as Untrusted;

use crate::api::options;
use crate::browser::ErrorPage;
use crate::error::ApiError;
use crate::state::AppState;

/// What a page's forms may submit to (CSP `form-action`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum FormAction {
    /// No form.
    None,
    /// This service only.
    SelfOnly,
    /// This service and the client's origin (`scheme://host[:port]`).
    SelfAnd(String),
    /// The directive is left out.
    Unrestricted,
}

/// The headers every page of the authorization endpoint carries.
pub(super) fn security_headers(builder: &mut HttpResponseBuilder, form_action: &FormAction) {
    let form_action = match form_action {
        FormAction::None => "; form-action 'none'".to_owned(),
        FormAction::SelfOnly => "; form-action 'self'".to_owned(),
        FormAction::SelfAnd(origin) => format!("; form-action 'self' {origin}"),
        FormAction::Unrestricted => String::new(),
    };
    builder
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            format!(
                "default-src 'none'; style-src 'self'; base-uri 'none'; frame-ancestors 'none'{form_action}"
            ),
        ))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::PRAGMA, "no-cache"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
}

/// A response with the status and headers (`WWW-Authenticate`, `Retry-After`, `Allow`) that
/// [`ApiError`] chooses for `error`; the body is added by the caller.
pub(super) fn error_builder(error: &ApiError) -> HttpResponseBuilder {
    error.page_builder()
}

/// Renders `page` with the security headers.
pub(super) fn render(
    mut builder: HttpResponseBuilder,
    page: &impl Template,
    form_action: FormAction,
) -> HttpResponse {
    security_headers(&mut builder, &form_action);
    match page.render() {
        Ok(body) => builder.content_type("text/html; charset=utf-8").body(body),
        Err(e) => {
            tracing::error!(error = %e, "cannot render an authorization page");
            let mut builder = error_builder(&ApiError::Internal);
            security_headers(&mut builder, &FormAction::None);
            builder
                .content_type("text/plain; charset=utf-8")
                .body("internal error")
        }
    }
}

/// A redirect (302 after GET, 303 after POST); never cached, no referrer.
pub(super) fn redirect(mut builder: HttpResponseBuilder, location: &str) -> HttpResponse {
    builder
        .insert_header((header::LOCATION, location))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::PRAGMA, "no-cache"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .finish()
}

/// A failure shown as an HTML error page: status and headers from `error`.
#[derive(Debug)]
pub(crate) struct Problem {
    pub(crate) error: ApiError,
    pub(crate) heading: &'static str,
    pub(crate) message: String,
}

impl Problem {
    pub(super) fn untrusted(why: Untrusted) -> Self {
        Self::untrusted_because(&why.to_string())
    }

    pub(super) fn untrusted_because(why: &str) -> Self {
        Self {
            error: ApiError::BadRequest(why.to_owned()),
            heading: "Invalid authorization request",
            message: format!(
                "The application that sent you here made a request medialib cannot accept ({why}), \
                 so you were not sent back to it. Tell the application's administrators."
            ),
        }
    }

    pub(super) fn expired_sign_in_form() -> Self {
        Self {
            error: ApiError::Forbidden("the sign-in form expired".into()),
            heading: "This form has expired",
            message: "The sign-in form expired or was opened in another window, so your \
                      password was not checked. Go back and start signing in again."
                .into(),
        }
    }

    pub(super) fn expired_consent_form() -> Self {
        Self {
            error: ApiError::Forbidden("the consent form expired".into()),
            heading: "This form has expired",
            message: "The consent form expired or belongs to another sign-in, so nothing was \
                      shared with the application. Go back to the application and start again."
                .into(),
        }
    }

    pub(super) fn signed_out() -> Self {
        Self {
            error: ApiError::AuthenticationRequired,
            heading: "Sign in again",
            message: "You are not signed in to medialib any more, so nothing was shared with \
                      the application. Go back to the application and start again: you will \
                      be asked to sign in."
                .into(),
        }
    }

    /// The error page.
    pub(crate) fn page(self) -> HttpResponse {
        let page = ErrorPage {
            heading: self.heading,
            message: &self.message,
            sign_in: None,
        };
        render(error_builder(&self.error), &page, FormAction::None)
    }
}

impl From<ApiError> for Problem {
    fn from(error: ApiError) -> Self {
        let (heading, message) = match &error {
            ApiError::TooManyRequests { retry_after } => (
                "Too many attempts",
                format!(
                    "Too many sign-in attempts came from your address. Wait {retry_after} \
                     seconds, then go back and try again."
                ),
            ),
            ApiError::IdentityProviderUnavailable => (
                "Sign-in is not available",
                "The organization's sign-in service cannot be reached right now. Try again in \
                 a few moments; if it keeps failing, contact your administrator."
                    .to_owned(),
            ),
            ApiError::DatabaseUnavailable => (
                "Service unavailable",
                "medialib cannot answer right now. Try again in a few moments.".to_owned(),
            ),
            ApiError::Internal => (
                "Something went wrong",
                "medialib ran into an unexpected error. Try again later.".to_owned(),
            ),
            ApiError::MethodNotImplemented { .. } => (
                "Not supported",
                "This address does not support this kind of request.".to_owned(),
            ),
            ApiError::BadRequest(_) | ApiError::PayloadTooLarge { .. } => (
                "Invalid request",
                format!("medialib cannot accept this request: {error}."),
            ),
            other => ("Something went wrong", format!("{other}.")),
        };
        Self {
            error,
            heading,
            message,
        }
    }
}

/// A browser endpoint's answer to a method it does not serve itself: OPTIONS is answered
/// like on every path (a JSON record), any other method is the 501 page naming `allow`.
pub(crate) async fn other_method(
    state: &AppState,
    req: &HttpRequest,
    allow: &'static str,
) -> Result<HttpResponse, Problem> {
    if *req.method() == Method::OPTIONS {
        Ok(options(state, req, allow, None).await?)
    } else {
        Err(ApiError::MethodNotImplemented { allow }.into())
    }
}
