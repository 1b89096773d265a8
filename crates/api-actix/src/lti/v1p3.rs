//! LTI 1.3: medialib's key set, the OIDC third-party-initiated login, and the launch.

use actix_web::http::{Method, header};
use actix_web::{HttpRequest, HttpResponse, ResponseError as _, web};
use medialib_ports::services::lti::Lti13Failed;
use serde_json::json;

use crate::blocking::run;
use crate::error::ApiError;
use crate::oauth::params::{fields, read_form};
use crate::state::AppState;

use super::{Endpoint, Refused, Why, form_urlencoded, refusal, refusal_page, signed_in};

/// medialib's public keys, for the platforms that check its Deep Linking responses.
pub(super) async fn jwks(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if *req.method() != Method::GET && *req.method() != Method::HEAD {
        return ApiError::MethodNotImplemented { allow: "GET, HEAD" }.error_response();
    }
    let keys = run(&state, |s| {
        s.lti().jwks().map_err(|e| match e {
            Lti13Failed::Store(e) => ApiError::from(e),
            other => {
                tracing::error!(error = %other, "cannot publish the LTI keys");
                ApiError::Internal
            }
        })
    })
    .await;
    match keys {
        Ok(keys) => {
            let keys: Vec<_> = keys
                .into_iter()
                .map(|k| {
                    json!({ "kty": "RSA", "alg": "RS256", "use": "sig", "kid": k.kid, "n": k.n, "e": k.e })
                })
                .collect();
            HttpResponse::Ok()
                // Short: a rotation shows within five minutes.
                .insert_header((header::CACHE_CONTROL, "public, max-age=300"))
                .json(json!({ "keys": keys }))
        }
        Err(e) => e.error_response(),
    }
}

/// The OIDC third-party-initiated login: the browser goes on to the platform's authorization
/// endpoint with a fresh state and nonce.
pub(super) async fn login(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> HttpResponse {
    if *req.method() != Method::GET && *req.method() != Method::POST {
        let error = ApiError::MethodNotImplemented { allow: "GET, POST" };
        return refusal_page(&state, &error.into());
    }
    let answer = async {
        let mut params = fields(req.query_string().as_bytes())?;
        if *req.method() == Method::POST {
            params.extend(read_form(&req, payload).await?);
        }
        run(&state, move |s| {
            Ok::<_, ApiError>(s.lti().login_v1p3(&params))
        })
        .await
    };
    match answer.await {
        Ok(Ok(request)) => {
            let query: Vec<String> = request
                .query
                .iter()
                .map(|(k, v)| format!("{k}={}", form_urlencoded(v)))
                .collect();
            let separator = if request.url.contains('?') { '&' } else { '?' };
            HttpResponse::Found()
                .insert_header((
                    header::LOCATION,
                    format!("{}{separator}{}", request.url, query.join("&")),
                ))
                .insert_header((header::CACHE_CONTROL, "no-store"))
                .insert_header((header::REFERRER_POLICY, "no-referrer"))
                .finish()
        }
        Ok(Err(failed)) => {
            state.metrics.count_lti_launch("1.3", failed.outcome());
            tracing::info!(reason = %failed, "LTI 1.3 login refused");
            refusal_page(&state, &refused_v1p3(failed))
        }
        Err(e) => {
            state.metrics.count_lti_launch("1.3", "error");
            refusal_page(&state, &e.into())
        }
    }
}

/// An LTI 1.3 launch: the platform posts the `id_token` and the login's `state`.
pub(super) async fn launch_v1p3(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> HttpResponse {
    if *req.method() != Method::POST {
        let error = ApiError::MethodNotImplemented { allow: "POST" };
        return refusal_page(&state, &error.into());
    }
    let answer = async {
        let form = read_form(&req, payload).await?;
        let get = |name: &str| {
            form.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        let (login_state, id_token) = (get("state"), get("id_token"));
        run(&state, move |s| {
            Ok::<_, ApiError>(s.lti().launch_v1p3(&login_state, &id_token))
        })
        .await
    };
    match answer.await {
        Ok(Ok(launch)) => {
            state.metrics.count_lti_launch("1.3", "ok");
            // The endpoint only matters to an LTI 1.1 pick.
            match signed_in(&state, launch, Endpoint::ContentItem).await {
                Ok(page) => page,
                Err(e) => refusal_page(&state, &e.into()),
            }
        }
        Ok(Err(failed)) => {
            state.metrics.count_lti_launch("1.3", failed.outcome());
            tracing::info!(reason = %failed, "LTI 1.3 launch refused");
            refusal_page(&state, &refused_v1p3(failed))
        }
        Err(e) => {
            state.metrics.count_lti_launch("1.3", "error");
            refusal_page(&state, &e.into())
        }
    }
}

/// What a refused LTI 1.3 login or launch tells the person, and its status.
fn refused_v1p3(failed: Lti13Failed) -> Refused {
    use medialib_domain::lti::v1p3::Refusal;
    let why = match &failed {
        Lti13Failed::Store(e) => return ApiError::from(e.clone()).into(),
        Lti13Failed::SignIn(e) => return ApiError::from(e.clone()).into(),
        Lti13Failed::Key(_) => return ApiError::Internal.into(),
        Lti13Failed::Token(medialib_ports::IdTokenRefusal::KeysUnavailable(_)) => {
            Why::KeysUnavailable
        }
        Lti13Failed::LearnerMayNotPick => Why::LearnerPick,
        Lti13Failed::Refused(
            Refusal::MessageType(_)
            | Refusal::Missing(_)
            | Refusal::ForeignTarget
            | Refusal::BadMedia
            | Refusal::NoReturnUrl
            | Refusal::WrongVersion,
        ) => Why::Unsupported,
        Lti13Failed::Refused(_)
        | Lti13Failed::AmbiguousPlatform
        | Lti13Failed::UnknownState
        | Lti13Failed::Token(_) => Why::Untrusted,
    };
    refusal(why, failed.to_string())
}
