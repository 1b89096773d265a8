//! The scripts of these pages, compiled into the binary: the library page's own script
//! (`templates/library.js`: the upload box, live processing state) and the tus client it
//! uploads with (tus-js-client's browser build, installed by `build.rs` from the lockfile in
//! `web/`). Pages work without them, but for uploading from the page.

use actix_web::HttpResponse;

/// The library page's script.
const LIBRARY_SCRIPT: &str = include_str!("../../templates/library.js");
/// tus-js-client's browser build (`dist/tus.min.js`), as npm installed it.
const TUS_CLIENT: &[u8] = include_bytes!(concat!(
    env!("OUT_DIR"),
    "/web/node_modules/tus-js-client/dist/tus.min.js"
));

/// `GET /assets/library.js`.
pub(super) async fn library_script() -> HttpResponse {
    script(LIBRARY_SCRIPT.as_bytes())
}

/// `GET /assets/tus.min.js`.
pub(super) async fn tus_client() -> HttpResponse {
    script(TUS_CLIENT)
}

fn script(body: &'static [u8]) -> HttpResponse {
    crate::browser::asset("text/javascript; charset=utf-8", body)
}
