//! `GET /`: the home page.

use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;

use super::{Visitor, error_page, here, render, visitor};
use crate::blocking::run;
use crate::error::ApiError;
use crate::state::AppState;

/// A library as the home page lists it.
#[derive(Debug)]
struct LibraryLink {
    id: String,
    title: String,
}

#[derive(Template)]
#[template(path = "home.html")]
struct HomePage {
    visitor: Option<Visitor>,
    here: String,
    libraries: Vec<LibraryLink>,
}

/// `GET /`: the signed-in person's libraries, or a sign-in button.
pub(super) async fn home(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    match page(&req, &state).await {
        Ok(page) => render(HttpResponse::Ok(), &page),
        Err(e) => error_page(&e),
    }
}

async fn page(req: &HttpRequest, state: &AppState) -> Result<HomePage, ApiError> {
    let visitor = visitor(req, state).await?;
    let libraries = match &visitor {
        Some(v) => {
            let caller = v.user.as_caller();
            run(state, move |s| s.media().libraries_of(&caller)).await?
        }
        None => Vec::new(),
    };
    Ok(HomePage {
        visitor,
        here: here(req),
        libraries: libraries
            .iter()
            .map(|l| LibraryLink {
                id: l.id().to_string(),
                title: title_or_untitled(l.fields().title.as_str()),
            })
            .collect(),
    })
}

/// A title as pages show it: "Untitled" for a blank one.
pub(super) fn title_or_untitled(title: &str) -> String {
    if title.trim().is_empty() {
        "Untitled".to_owned()
    } else {
        title.to_owned()
    }
}
