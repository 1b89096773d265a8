//! The picker (each pick's way back: Warpwire's `jsonData`, a signed Content-Item form, a
//! signed Deep Linking response) and the course's framed media list.

use actix_web::{HttpResponse, HttpResponseBuilder};
use askama::Template;
use medialib_domain::lti::v1p1::PickRequest;
use medialib_domain::lti::v1p3::ContentItem;
use medialib_domain::media::records::ImageSize;
use medialib_domain::{MediaObject, ObjectType};
use medialib_ports::services::lti::{DeepLink, Lti11LaunchFailed, Lti13Failed, LtiLaunch};
use serde_json::json;

use crate::blocking::run;
use crate::error::ApiError;
use crate::state::AppState;

use super::{form_urlencoded, html_attribute, origin_of, render};

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
pub(super) async fn course_page(
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
pub(super) enum Back {
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
pub(super) async fn picker(
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
