//! `GET /libraries/{uuid}`: a library's page.

use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use medialib_domain::media::MediaState;
use medialib_domain::media::records::ImageSize;
use medialib_domain::{DurationSecs, ObjectId};
use medialib_ports::services::LibraryView;

use super::home::title_or_untitled;
use super::{Visitor, error_page, here, render, see_other, visitor};
use crate::blocking::run;
use crate::error::ApiError;
use crate::state::AppState;

/// The processing state of a member's media, as its card shows it.
#[derive(Debug)]
struct StateView {
    /// `uploading`, `queued`, `processing`, `ready` or `failed`.
    name: &'static str,
    /// What the progress bar says.
    label: &'static str,
    progress: u8,
    error: Option<String>,
}

/// One member's card.
#[derive(Debug)]
struct Member {
    /// Its uuid (the "Try again" form names it).
    id: String,
    title: String,
    kind: &'static str,
    href: String,
    still: Option<String>,
    duration: Option<String>,
    state: Option<StateView>,
}

/// A person with an entry on the library, as its admins see them.
#[derive(Debug)]
struct Person {
    name: String,
    unique_id: String,
    level: &'static str,
}

#[derive(Template)]
#[template(path = "library.html")]
struct LibraryPage {
    visitor: Option<Visitor>,
    here: String,
    id: String,
    title: String,
    description: String,
    public: bool,
    level: &'static str,
    members: Vec<Member>,
    /// The forms to change it and its people, for its admins (`None` for viewers).
    people: Option<Vec<Person>>,
    /// Whether the visitor may upload into it (the page then offers its upload box).
    may_upload: bool,
}

/// `GET /libraries/{uuid}`: the library's members for a person with `view` on it; a browser
/// without a session is sent to sign in first.
pub(super) async fn library(
    req: HttpRequest,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let answer = async {
        let Some(visitor) = visitor(&req, &state).await? else {
            let next = format!("/login?next={}", here(&req));
            return Ok(see_other(HttpResponse::Found(), &next));
        };
        // A path that names no object is no library, as an unknown one is.
        let id = ObjectId::parse(&path.into_inner()).map_err(|_| ApiError::NotFound)?;
        let caller = visitor.user.as_caller();
        let mut view = run(&state, move |s| s.uploads().library_view(&caller, id)).await?;
        let entries = view.people.take();
        let mut page = page(view, visitor, here(&req), state.base_url());
        page.people = entries.map(|entries| {
            entries
                .into_iter()
                .map(|e| Person {
                    name: e.user.display_name(),
                    unique_id: e.user.unique_id.as_str().to_owned(),
                    level: e.level.as_str(),
                })
                .collect()
        });
        Ok::<_, ApiError>(render(HttpResponse::Ok(), &page))
    };
    answer.await.unwrap_or_else(|e| error_page(&e))
}

fn page(view: LibraryView, visitor: Visitor, here: String, base: &str) -> LibraryPage {
    let fields = view.library.fields();
    let members = view
        .page
        .items
        .iter()
        .map(|item| {
            let o = &item.object;
            let href = if o.object_type().is_collection() {
                format!("/libraries/{}", o.id())
            } else {
                format!("/m/{}", o.shortcode())
            };
            let still = view.images.get(&o.id()).and_then(|links| {
                links
                    .iter()
                    .find(|(size, _)| *size == ImageSize::Square)
                    .map(|(_, path)| format!("{base}{path}"))
            });
            let state = view.media.get(&o.id()).map(|r| StateView {
                name: r.state.as_str(),
                label: match r.state {
                    MediaState::Uploading => "Uploading",
                    MediaState::Queued => "Waiting to be processed",
                    _ => "Processing",
                },
                progress: r.progress,
                error: r.error.clone(),
            });
            Member {
                id: o.id().to_string(),
                title: title_or_untitled(o.fields().title.as_str()),
                kind: o.object_type().as_str(),
                href,
                still,
                duration: o.fields().duration.map(clock),
                state,
            }
        })
        .collect();
    LibraryPage {
        visitor: Some(visitor),
        here,
        id: view.library.id().to_string(),
        title: title_or_untitled(fields.title.as_str()),
        description: fields.description.as_str().to_owned(),
        public: fields.public,
        level: view.page.level.as_str(),
        members,
        people: None,
        may_upload: view.may_upload,
    }
}

/// A duration as a clock shows it: `m:ss`, or `h:mm:ss` from an hour on.
fn clock(d: DurationSecs) -> String {
    let s = d.seconds();
    let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_a_clock() {
        let c = |s| clock(DurationSecs::from_seconds(s).unwrap());
        assert_eq!(c(0), "0:00");
        assert_eq!(c(59), "0:59");
        assert_eq!(c(61), "1:01");
        assert_eq!(c(3600), "1:00:00");
        assert_eq!(c(3 * 3600 + 5 * 60 + 7), "3:05:07");
    }
}
