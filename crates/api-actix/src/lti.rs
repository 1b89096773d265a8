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
use actix_web::{
    HttpMessage as _, HttpRequest, HttpResponse, HttpResponseBuilder, ResponseError as _, web,
};
use askama::Template;
use medialib_domain::lti::v1p1::PickRequest;
use medialib_domain::lti::v1p3::ContentItem;
use medialib_domain::media::records::ImageSize;
use medialib_domain::{MediaObject, ObjectType};
use medialib_ports::services::lti::{
    DeepLink, LaunchNext, Lti11LaunchFailed, Lti13Failed, LtiLaunch,
};
use serde_json::json;

use crate::blocking::run;
use crate::browser::{ErrorPage, session_cookie};
use crate::error::ApiError;
use crate::normalize::OriginalPath;
use crate::oauth::params::{fields, read_form};
use crate::routing::resource;
use crate::state::AppState;

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

/// What a refused launch tells the person, and its status.
fn refused(failed: Lti11LaunchFailed) -> Refused {
    let message = failed.to_string();
    let (error, heading) = match failed {
        Lti11LaunchFailed::Store(e) => return ApiError::from(e).into(),
        Lti11LaunchFailed::SignIn(e) => return ApiError::from(e).into(),
        Lti11LaunchFailed::Launch(_) => (
            ApiError::BadRequest(message.clone()),
            "medialib cannot answer this launch",
        ),
        Lti11LaunchFailed::LearnerMayNotPick => (
            ApiError::Forbidden(message.clone()),
            "Only teachers pick media",
        ),
        Lti11LaunchFailed::Signature(_)
        | Lti11LaunchFailed::UnknownConsumer
        | Lti11LaunchFailed::Replay => (
            ApiError::Forbidden(message.clone()),
            "This launch could not be trusted",
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

/// medialib's public keys, for the platforms that check its Deep Linking responses.
async fn jwks(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
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
async fn login(
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
async fn launch_v1p3(
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
    let message = failed.to_string();
    let (error, heading) = match failed {
        Lti13Failed::Store(e) => return ApiError::from(e).into(),
        Lti13Failed::SignIn(e) => return ApiError::from(e).into(),
        Lti13Failed::Key(_) => return ApiError::Internal.into(),
        Lti13Failed::Token(medialib_ports::IdTokenRefusal::KeysUnavailable(_)) => (
            ApiError::IdentityProviderUnavailable,
            "The course system's keys could not be fetched",
        ),
        Lti13Failed::LearnerMayNotPick => (
            ApiError::Forbidden(message.clone()),
            "Only teachers pick media",
        ),
        Lti13Failed::Refused(
            medialib_domain::lti::v1p3::Refusal::MessageType(_)
            | medialib_domain::lti::v1p3::Refusal::Missing(_)
            | medialib_domain::lti::v1p3::Refusal::ForeignTarget
            | medialib_domain::lti::v1p3::Refusal::BadMedia
            | medialib_domain::lti::v1p3::Refusal::NoReturnUrl
            | medialib_domain::lti::v1p3::Refusal::WrongVersion,
        ) => (
            ApiError::BadRequest(message.clone()),
            "medialib cannot answer this launch",
        ),
        Lti13Failed::Refused(_)
        | Lti13Failed::AmbiguousPlatform
        | Lti13Failed::UnknownState
        | Lti13Failed::Token(_) => (
            ApiError::Forbidden(message.clone()),
            "This launch could not be trusted",
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

/// One media the picker offers.
#[derive(Debug)]
struct Item {
    title: String,
    kind: &'static str,
    still: Option<String>,
    /// Warpwire: the link back with `jsonData`; Content-Item: the signed form's fields.
    pick: Pick,
}

#[derive(Debug)]
enum Pick {
    Link(String),
    Form(Vec<(String, String)>),
}

/// A library the picker lists.
#[derive(Debug)]
struct Shelf {
    id: String,
    title: String,
    items: Vec<Item>,
    course: bool,
}

#[derive(Template)]
#[template(path = "lti_picker.html")]
struct PickerPage {
    shelves: Vec<Shelf>,
    return_url: String,
    course_library: Option<String>,
}

#[derive(Template)]
#[template(path = "lti_course.html")]
struct CoursePage {
    /// The course library, when the course has one.
    library: Option<CourseShelf>,
}

/// The course library as its framed page lists it.
#[derive(Debug)]
struct CourseShelf {
    id: String,
    title: String,
    items: Vec<CourseItem>,
}

/// A member of the course library, leading to its player.
#[derive(Debug)]
struct CourseItem {
    title: String,
    kind: &'static str,
    still: Option<String>,
    href: String,
}

/// A resource launch without `media`: the course library's media, each linked to its player.
async fn course_page(
    state: &AppState,
    builder: HttpResponseBuilder,
    launch: &LtiLaunch,
) -> Result<HttpResponse, ApiError> {
    let Some(library) = launch.course_library else {
        return Ok(render(state, builder, &CoursePage { library: None }, None));
    };
    let caller = launch.session.user.as_caller();
    let view = run(state, move |s| s.uploads().library_view(&caller, library)).await?;
    let base = state.base_url().to_owned();
    let items = view
        .page
        .items
        .iter()
        .map(|i| &i.object)
        .filter(|o| !o.object_type().is_collection())
        .map(|o| CourseItem {
            title: title_or_untitled(o),
            kind: o.object_type().as_str(),
            still: still_of(&view.images, o, &base),
            href: format!("/m/{}", o.shortcode()),
        })
        .collect();
    let page = CoursePage {
        library: Some(CourseShelf {
            id: library.to_string(),
            title: title_or_untitled(&view.library),
            items,
        }),
    };
    Ok(render(state, builder, &page, None))
}

/// The still a list shows for `object`: its large image, else any.
fn still_of(
    images: &std::collections::HashMap<
        medialib_domain::ObjectId,
        medialib_ports::services::ImageLinks,
    >,
    object: &MediaObject,
    base: &str,
) -> Option<String> {
    images.get(&object.id()).and_then(|links| {
        links
            .iter()
            .find(|(size, _)| *size == ImageSize::Large)
            .or_else(|| links.iter().next())
            .map(|(_, path)| format!("{base}{path}"))
    })
}

/// How the picker's pick goes back to the platform.
#[derive(Debug, Clone)]
enum Back {
    /// Warpwire's `jsonData` on the return URL (LTI 1.1, `/api/lti/`).
    Warpwire(PickRequest),
    /// A signed ContentItemSelection form (LTI 1.1, `/api/ltix/`).
    ContentItem(PickRequest),
    /// A signed Deep Linking response (LTI 1.3).
    DeepLinking(DeepLink),
}

impl Back {
    fn return_url(&self) -> &str {
        match self {
            Self::Warpwire(pick) | Self::ContentItem(pick) => &pick.return_url,
            Self::DeepLinking(link) => &link.request.return_url,
        }
    }
}

/// The picker: the media of every library the person may view, the course library first,
/// each with the way its pick goes back.
async fn picker(
    state: &AppState,
    builder: HttpResponseBuilder,
    launch: &LtiLaunch,
    back: Back,
) -> Result<HttpResponse, ApiError> {
    let caller = launch.session.user.as_caller();
    let course = launch.course_library;
    let views = run(state, move |s| {
        let mut views = Vec::new();
        for library in s.media().libraries_of(&caller)? {
            let view = s
                .uploads()
                .library_view(&caller, library.id())
                .map_err(ApiError::from)?;
            views.push(view);
        }
        Ok::<_, ApiError>(views)
    })
    .await?;
    let base = state.base_url().to_owned();
    let mut shelves = Vec::new();
    // LTI 1.3: each item's Deep Linking content, signed below, all in one call.
    let mut deep_links = Vec::new();
    for view in views {
        let mut items = Vec::new();
        for member in view.page.items.iter().map(|i| &i.object) {
            if member.object_type().is_collection() {
                continue;
            }
            let still = still_of(&view.images, member, &base);
            let pick = match &back {
                Back::Warpwire(pick) => {
                    Pick::Link(warpwire_return(pick, &base, member, still.as_deref()))
                }
                // Signed below, all in one call.
                Back::ContentItem(pick) => Pick::Form(content_item_selection(
                    pick,
                    &base,
                    member,
                    still.as_deref(),
                )),
                Back::DeepLinking(link) => {
                    deep_links.push(deep_link_item(link, &base, member, still.clone()));
                    Pick::Form(Vec::new())
                }
            };
            items.push(Item {
                title: title_or_untitled(member),
                kind: member.object_type().as_str(),
                still,
                pick,
            });
        }
        let id = view.library.id();
        shelves.push(Shelf {
            id: id.to_string(),
            title: title_or_untitled(&view.library),
            items,
            course: Some(id) == course,
        });
    }
    match &back {
        Back::Warpwire(_) => {}
        Back::ContentItem(pick) => {
            sign_forms(state, launch, &pick.return_url, &mut shelves).await?
        }
        Back::DeepLinking(link) => sign_deep_links(state, link, deep_links, &mut shelves).await?,
    }
    shelves.sort_by_key(|s| !s.course);
    let page = PickerPage {
        shelves,
        return_url: back.return_url().to_owned(),
        course_library: course.map(|c| c.to_string()),
    };
    let form_to = origin_of(back.return_url());
    Ok(render(state, builder, &page, form_to.as_deref()))
}

/// The picker's forms, in order.
fn forms_of(shelves: &mut [Shelf]) -> Vec<&mut Vec<(String, String)>> {
    shelves
        .iter_mut()
        .flat_map(|shelf| shelf.items.iter_mut())
        .filter_map(|item| match &mut item.pick {
            Pick::Form(fields) => Some(fields),
            Pick::Link(_) => None,
        })
        .collect()
}

/// The Deep Linking content of a pick of `member`: an `ltiResourceLink` that launches its
/// player, or, where the platform takes no links, an iframe of the player.
fn deep_link_item(
    link: &DeepLink,
    base: &str,
    member: &MediaObject,
    still: Option<String>,
) -> ContentItem {
    let title = title_or_untitled(member);
    if link.request.accepts_link {
        ContentItem::ResourceLink {
            title,
            url: format!("{base}{}", medialib_ports::services::lti::LAUNCH_PATH),
            media: member.id(),
            thumbnail: still,
        }
    } else {
        ContentItem::Html {
            html: player_iframe(base, member, &title),
            title,
        }
    }
}

/// Signs the LTI 1.3 picker's Deep Linking responses into its forms (one `JWT` field each),
/// in one call of the use case.
async fn sign_deep_links(
    state: &AppState,
    link: &DeepLink,
    items: Vec<ContentItem>,
    shelves: &mut [Shelf],
) -> Result<(), ApiError> {
    let link = link.clone();
    let signed = run(state, move |s| {
        s.lti().sign_deep_links(&link, items).map_err(|e| match e {
            Lti13Failed::Store(e) => ApiError::from(e),
            other => {
                tracing::error!(error = %other, "cannot sign a Deep Linking response");
                ApiError::Internal
            }
        })
    })
    .await?;
    for (form, jwt) in forms_of(shelves).into_iter().zip(signed) {
        *form = vec![("JWT".to_owned(), jwt)];
    }
    Ok(())
}

/// Signs the picker's Content-Item forms in place, in one call of the use case.
async fn sign_forms(
    state: &AppState,
    launch: &LtiLaunch,
    return_url: &str,
    shelves: &mut [Shelf],
) -> Result<(), ApiError> {
    let mut forms = forms_of(shelves);
    let unsigned: Vec<_> = forms.iter_mut().map(|f| std::mem::take(&mut **f)).collect();
    let (consumer, url) = (launch.consumer.clone(), return_url.to_owned());
    let signed = run(state, move |s| {
        s.lti()
            .sign_each(&consumer, &url, unsigned)
            .map_err(|e| match e {
                Lti11LaunchFailed::Store(e) => ApiError::from(e),
                other => ApiError::BadRequest(other.to_string()),
            })
    })
    .await?
    .ok_or(ApiError::NotFound)?;
    for (form, fields) in forms.into_iter().zip(signed) {
        *form = fields;
    }
    Ok(())
}

fn title_or_untitled(object: &MediaObject) -> String {
    let title = object.fields().title.as_str().trim();
    if title.is_empty() {
        "Untitled".to_owned()
    } else {
        title.to_owned()
    }
}

/// The size Warpwire's plugins embed a pick at.
fn embed_size(kind: ObjectType) -> (u32, u32) {
    match kind {
        ObjectType::Audio => (640, 120),
        _ => (640, 360),
    }
}

/// Warpwire's pick: the return URL with `jsonData`, a JSON array of one
/// `{"_ww_img": still, "_ww_src": "[warpwire:permLink?width=W&height=H]"}`.
fn warpwire_return(
    pick: &PickRequest,
    base: &str,
    member: &MediaObject,
    still: Option<&str>,
) -> String {
    let (width, height) = embed_size(member.object_type());
    let data = json!([{
        "_ww_img": still.unwrap_or_default(),
        "_ww_src": format!("[warpwire:{base}/w/{}?width={width}&height={height}]", member.shortcode()),
    }]);
    let separator = if pick.return_url.contains('?') {
        '&'
    } else {
        '?'
    };
    let encoded: String = form_urlencoded(&data.to_string());
    format!("{}{separator}jsonData={encoded}", pick.return_url)
}

/// A standard ContentItemSelection (LTI Content-Item Message 1.0): an LTI link back to
/// `/api/ltix/` with the custom parameter `media`, or, where the platform takes no links,
/// an iframe of the player.
fn content_item_selection(
    pick: &PickRequest,
    base: &str,
    member: &MediaObject,
    still: Option<&str>,
) -> Vec<(String, String)> {
    let title = title_or_untitled(member);
    let mut item = if pick.accepts_link {
        json!({
            "@type": "LtiLinkItem",
            "mediaType": "application/vnd.ims.lti.v1.ltilink",
            "title": title,
            "url": format!("{base}/api/ltix/"),
            "custom": { "media": member.id().to_string() },
        })
    } else {
        json!({
            "@type": "ContentItem",
            "mediaType": "text/html",
            "title": title,
            "text": player_iframe(base, member, &title),
        })
    };
    if let Some(still) = still {
        item["thumbnail"] = json!({ "@id": still });
    }
    let items = json!({
        "@context": "http://purl.imsglobal.org/ctx/lti/v1/ContentItem",
        "@graph": [item],
    });
    let mut params = vec![
        (
            "lti_message_type".to_owned(),
            "ContentItemSelection".to_owned(),
        ),
        ("lti_version".to_owned(), "LTI-1p0".to_owned()),
        ("content_items".to_owned(), items.to_string()),
    ];
    if let Some(data) = &pick.data {
        params.push(("data".to_owned(), data.clone()));
    }
    params
}

/// An iframe of `member`'s player, for a platform that embeds HTML.
fn player_iframe(base: &str, member: &MediaObject, title: &str) -> String {
    let (width, height) = embed_size(member.object_type());
    format!(
        "<iframe src=\"{base}/m/{}\" width=\"{width}\" height=\"{height}\" \
         allow=\"autoplay; fullscreen\" allowfullscreen title=\"{}\"></iframe>",
        member.shortcode(),
        html_attribute(title)
    )
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
