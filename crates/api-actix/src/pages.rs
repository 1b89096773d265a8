//! Server-rendered pages outside `/api/`: permLinks, the landing/player page, embeds, oEmbed.
//!
//! - `GET /w/{shortcode}` answers 302 to the landing page `/m/{shortcode}`, keeping the query
//!   (the player's parameters that LMS plugins add); an unknown shortcode is a 404: a page
//!   for a browser (`Accept: text/html`), JSON for other clients.
//! - `GET /m/{shortcode}` is the landing page, `GET /embed/{shortcode}` the same player
//!   for iframes, and `GET /embed/{shortcode}.js` a script that inserts that iframe.
//!   The landing page reads the browser session: a private object shows to a signed-in
//!   person who may see it, and asks anyone else to sign in (a 401 page with a sign-in
//!   button that comes back here). The embed page and script show public objects only (a
//!   framed page on another site does not get medialib's `SameSite=Lax` cookie anyway).
//! - `GET /api/oembed?url=PERMLINK&format=json` is oEmbed 1.0 for public objects.
//!
//! The player pages load `/assets/player.js`, the player API (Warpwire's shape): the player
//! posts `ready`, `play`, `pause`, `timeupdate` and `ended` to the page that frames it
//! (`{source: "medialib", event, currentTime, duration}`) and takes
//! `{target: "medialib", method: "play" | "pause" | "seek", value}` from it; it also adds
//! Copy buttons to the landing page's share box. The pages work without it.
//!
//! The player follows the query's options (`medialib_domain::player`: `start`, `end`,
//! `autoplay`, `title`, `share`, `controls`, `cc_load_policy`, `audio_only`, `width`,
//! `height`), on the landing page as in the embed. The landing page has a share box with the
//! permLink and the embed codes.
//!
//! With controls, the media element wears Plyr's (`/assets/plyr.*`, installed by `build.rs`):
//! the seek bar previews the WebVTT thumbnail track, the captions menu lists the caption
//! tracks; an audio recording's waveform peaks become a second seek bar (`player.js`).
//!
//! Pages load nothing but their stylesheets and scripts under `/assets/` from this service, and carry a strict CSP,
//! `Referrer-Policy: no-referrer` and `nosniff`. Both may be framed by the pages of
//! `embed_origins` (any site when it is empty: Warpwire's LMS plugins put the permLink itself
//! in an iframe); a framed landing page (`Sec-Fetch-Dest: iframe`) shows the player alone,
//! without the site's header and its sign-out form. The sign-in, consent and site pages are
//! never framed.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder, ResponseError, web};
use askama::Template;
use medialib_domain::media::records::PlayFormat;
use medialib_domain::player::PlayerOptions;
use medialib_domain::{MediaObject, ObjectType, ShortCode};
use medialib_ports::services::catalog::PermLinkFailed;
use medialib_ports::services::{ImageLinks, PlayableFile};

use crate::api::{Answer, Call, Endpoint, endpoint, is_read, not_implemented};
use crate::apidoc::responses::{BadRequest, NotFound, NotImplemented, Unauthorized, Unavailable};
use crate::apidoc::schemas::OEmbedQuery;
use crate::blocking::run;
use crate::browser::{Visitor, asset, error_body, here, query_escape, visitor, wants_html};
use crate::error::ApiError;
use crate::input::Form;
use crate::records::{
    EmbedRecord, OEmbedResponse, PLAYER_HEIGHT, PLAYER_WIDTH, embed_url, perm_link,
};
use crate::routing::read_only;
use crate::state::AppState;

/// The stylesheet every page links to.
const STYLESHEET: &str = include_str!("../templates/player.css");

/// The player API and the share box's copy buttons (`templates/player.js`).
const PLAYER_SCRIPT: &str = include_str!("../templates/player.js");

/// Plyr, the player's controls (seek-bar thumbnail previews, captions menu, keyboard use),
/// as `build.rs` installed it from the lockfile: its script, stylesheet and icons.
macro_rules! plyr_file {
    ($name:literal) => {
        include_bytes!(concat!(
            env!("OUT_DIR"),
            "/web/node_modules/plyr/dist/",
            $name
        ))
    };
}
const PLYR_SCRIPT: &[u8] = plyr_file!("plyr.min.js");
const PLYR_STYLESHEET: &[u8] = plyr_file!("plyr.css");
const PLYR_ICONS: &[u8] = plyr_file!("plyr.svg");

/// The stylesheet of the authorization endpoint's sign-in and consent pages.
const AUTHORIZE_STYLESHEET: &str = include_str!("../templates/authorize.css");

/// Registers the page routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(read_only("/w/{code}", perm_link_redirect))
        .service(read_only("/m/{code}", landing))
        .service(read_only("/embed/{code}", embed))
        .service(read_only("/assets/player.css", stylesheet))
        .service(read_only("/assets/authorize.css", authorize_stylesheet))
        .service(read_only("/assets/player.js", player_script))
        .service(read_only("/assets/plyr.min.js", plyr_script))
        .service(read_only("/assets/plyr.css", plyr_stylesheet))
        .service(read_only("/assets/plyr.svg", plyr_icons))
        .service(crate::routing::resource("/api/oembed").to(endpoint::<OEmbed>));
}

/// Which player page: each may be framed by the pages of `embed_origins` (any site by
/// default, since LMS plugins frame the permLink itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// The landing page a permLink leads to: it reads the browser session and, shown at the
    /// top, carries the site's header with its sign-out form.
    Landing,
    /// The embed page: public objects only, no form.
    Embed,
}

/// The security headers of every player page. Framing is allowed by `frame-ancestors` alone
/// (`X-Frame-Options` cannot name a list); the landing page's sign-out form posts here, the
/// embed page has no form.
fn page_headers(builder: &mut HttpResponseBuilder, framing: Framing, state: &AppState) {
    let frame_ancestors = state.frame_ancestors();
    let form_action = match framing {
        Framing::Landing => "'self'",
        Framing::Embed => "'none'",
    };
    builder
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            format!(
                "default-src 'self'; object-src 'none'; base-uri 'none'; form-action {form_action}; frame-ancestors {frame_ancestors}"
            ),
        ))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
}

/// Whether the browser loads this page into a frame (`Sec-Fetch-Dest: iframe`): a framed
/// landing page is shown as the embed is, without the site's header and its forms, so that
/// another site's page cannot trick a click on them.
fn framed(req: &HttpRequest) -> bool {
    req.headers()
        .get("sec-fetch-dest")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"iframe"))
}

/// An error as an HTML page: status and headers (`WWW-Authenticate`, `Retry-After`,
/// `Cache-Control`) come from [`ApiError`], only the body is HTML instead of JSON.
fn html_error(
    state: &AppState,
    e: &ApiError,
    framing: Framing,
    sign_in: Option<String>,
) -> HttpResponse {
    let Some(body) = error_body(e, sign_in) else {
        return e.error_response();
    };
    let mut builder = e.page_builder();
    page_headers(&mut builder, framing, state);
    builder.content_type("text/html; charset=utf-8").body(body)
}

/// One `<source>` of the media element.
#[derive(Debug)]
struct Source {
    url: String,
    mime: &'static str,
}

#[derive(Template)]
#[template(path = "player.html")]
struct PlayerPage<'a> {
    /// The person signed in (the landing page's header; the embed has none).
    visitor: Option<Visitor>,
    /// This page's path, percent-encoded (the header's sign-in link comes back to it).
    here: String,
    heading: &'a str,
    description: &'a str,
    kind: &'static str,
    perm_link: String,
    oembed_url: String,
    /// Whether the media element is `<audio>` (else `<video>`).
    audio: bool,
    sources: Vec<Source>,
    embedded: bool,
    /// What the query asks of the player (title, share, controls, autoplay, part, size).
    options: PlayerOptions,
    /// The media fragment of `start` and `end`, appended to each source's URL.
    fragment: String,
    /// The embed codes of the share box (the embed record's).
    iframe_code: String,
    script_code: String,
    /// A video's poster: its largest still.
    poster: Option<String>,
    /// A video's WebVTT thumbnail track (the seek bar's previews).
    thumbnails: Option<String>,
    /// An audio recording's waveform peaks, which `player.js` draws as a seek bar.
    waveform: Option<String>,
    /// An audio recording's waveform picture, shown until the peaks are drawn.
    waveform_picture: Option<String>,
    /// The caption tracks; `cc_load_policy=1` shows the first from the start.
    captions: Vec<CaptionTrack>,
}

/// A `<track kind="captions">` of the media element. No caption source exists yet (the spec
/// names none and processing derives none): the slot is filled once one does.
#[derive(Debug)]
struct CaptionTrack {
    url: String,
    /// BCP 47 language tag (`srclang`).
    language: String,
    /// What the captions menu shows.
    label: String,
}

/// The sources a browser can play natively, URLs under `base_url` (SMIL is a playlist for
/// other players).
fn sources(o: &MediaObject, files: &[PlayableFile], base_url: &str) -> Vec<Source> {
    files
        .iter()
        .filter_map(|f| {
            let mime = match f.format {
                PlayFormat::Mp4 if o.object_type() == ObjectType::Audio => "audio/mp4",
                PlayFormat::Mp4 => "video/mp4",
                PlayFormat::Hls => "application/vnd.apple.mpegurl",
                PlayFormat::Smil => return None,
            };
            Some(Source {
                url: format!("{base_url}{}", f.path),
                mime,
            })
        })
        .collect()
}

/// The URL of the largest still.
fn largest(images: &ImageLinks, base_url: &str) -> Option<String> {
    images
        .iter()
        .max_by_key(|(size, _)| size.dimensions().pixels())
        .map(|(_, path)| format!("{base_url}{path}"))
}

/// The player page (the landing page for `visitor`'s session, or the embed page of a public
/// object), or an HTML error page.
async fn player(
    req: &HttpRequest,
    state: &AppState,
    code: &str,
    framing: Framing,
    visitor: Option<Visitor>,
) -> HttpResponse {
    let here = match framing {
        Framing::Landing => here(req),
        Framing::Embed => String::new(),
    };
    let options = PlayerOptions::from_query(
        &web::Query::<Vec<(String, String)>>::from_query(req.query_string())
            .map(web::Query::into_inner)
            .unwrap_or_default(),
    );
    let caller = visitor.as_ref().map(|v| v.user.as_caller());
    let shown = match shortcode(code) {
        Ok(code) => {
            run(state, move |s| -> Result<_, ApiError> {
                let object = match framing {
                    Framing::Landing => s.media().page_object(caller.as_ref(), &code)?,
                    Framing::Embed => s.media().public_object(&code)?,
                };
                let media = s.uploads().player_media(&object)?;
                Ok((object, media))
            })
            .await
        }
        Err(e) => Err(e),
    };
    let (object, media) = match shown {
        Ok(shown) => shown,
        Err(e) => {
            let sign_in = (framing == Framing::Landing
                && !framed(req)
                && matches!(e, ApiError::AuthenticationRequired))
            .then(|| format!("/login?next={here}"));
            return html_error(state, &e, framing, sign_in);
        }
    };
    let base = state.base_url();
    let link = perm_link(base, &object);
    let embed = EmbedRecord::new(&object, base);
    let fields = object.fields();
    let title = fields.title.as_str();
    let page = PlayerPage {
        visitor,
        here,
        heading: if title.trim().is_empty() {
            "Untitled"
        } else {
            title
        },
        description: fields.description.as_str(),
        kind: object.object_type().as_str(),
        oembed_url: format!("{base}/api/oembed?url={}&format=json", query_escape(&link)),
        perm_link: link,
        audio: object.object_type() == ObjectType::Audio || options.audio_only,
        sources: sources(&object, &media.files, base),
        embedded: framing == Framing::Embed || framed(req),
        fragment: options.fragment(),
        options,
        iframe_code: embed.properties.iframe,
        script_code: embed.properties.script,
        poster: (object.object_type() == ObjectType::Video)
            .then(|| largest(&media.images, base))
            .flatten(),
        thumbnails: media
            .files
            .iter()
            .find_map(|f| f.thumbnails.as_ref())
            .map(|t| format!("{base}{t}")),
        waveform: media.waveform.as_ref().map(|w| format!("{base}{w}")),
        waveform_picture: (object.object_type() == ObjectType::Audio)
            .then(|| largest(&media.images, base))
            .flatten(),
        captions: Vec::new(),
    };
    match page.render() {
        Ok(body) => {
            let mut builder = HttpResponse::Ok();
            page_headers(&mut builder, framing, state);
            builder
                .insert_header((header::CACHE_CONTROL, "no-cache"))
                .content_type("text/html; charset=utf-8")
                .body(body)
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot render the player page");
            html_error(state, &ApiError::Internal, framing, None)
        }
    }
}

/// A shortcode from the path; a malformed one names no object.
fn shortcode(code: &str) -> Result<ShortCode, ApiError> {
    ShortCode::parse(code).map_err(|_| PermLinkFailed::NotFound.into())
}

/// The public object a shortcode names (401 when private, 404 when unknown).
async fn public_object(state: &AppState, code: &str) -> Result<MediaObject, ApiError> {
    let code = shortcode(code)?;
    run(state, move |s| s.media().public_object(&code)).await
}

/// `GET /w/{shortcode}`: 302 to the landing page, with the query as it came.
async fn perm_link_redirect(
    req: HttpRequest,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let found = async {
        let code = shortcode(&path.into_inner())?;
        run(&state, move |s| s.media().follow_perm_link(&code)).await
    };
    let object = match found.await {
        Ok(object) => object,
        Err(e) if wants_html(&req) => return html_error(&state, &e, Framing::Landing, None),
        Err(e) => return e.error_response(),
    };
    let query = match req.query_string() {
        "" => String::new(),
        q => format!("?{q}"),
    };
    HttpResponse::Found()
        .insert_header((
            header::LOCATION,
            format!("{}/m/{}{query}", state.base_url(), object.shortcode()),
        ))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .finish()
}

/// `GET /m/{shortcode}`: the landing page.
async fn landing(
    req: HttpRequest,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let visitor = match visitor(&req, &state).await {
        Ok(v) => v,
        Err(e) => return html_error(&state, &e, Framing::Landing, None),
    };
    player(&req, &state, &path.into_inner(), Framing::Landing, visitor).await
}

/// `GET /embed/{shortcode}` (the player for iframes) and `GET /embed/{shortcode}.js`.
async fn embed(
    req: HttpRequest,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let code = path.into_inner();
    match code.strip_suffix(".js") {
        Some(code) => embed_script(&state, code).await,
        None => Ok(player(&req, &state, &code, Framing::Embed, None).await),
    }
}

/// A script that inserts the embed iframe right after its own `<script>` element.
async fn embed_script(state: &AppState, code: &str) -> Result<HttpResponse, ApiError> {
    let object = public_object(state, code).await?;
    let js_string = |s: &str| {
        serde_json::to_string(s).map_err(|e| {
            tracing::error!(error = %e, "cannot encode a script string");
            ApiError::Internal
        })
    };
    let src = js_string(&embed_url(state.base_url(), &object))?;
    let title = js_string(object.fields().title.as_str())?;
    let body = format!(
        r#"(function () {{
  "use strict";
  var me = document.currentScript;
  if (!me || !me.parentNode) {{ return; }}
  var frame = document.createElement("iframe");
  frame.src = {src};
  frame.width = "{PLAYER_WIDTH}";
  frame.height = "{PLAYER_HEIGHT}";
  frame.title = {title};
  frame.allow = "fullscreen";
  frame.setAttribute("allowfullscreen", "");
  me.parentNode.insertBefore(frame, me.nextSibling);
}}());
"#
    );
    Ok(HttpResponse::Ok()
        .content_type("application/javascript; charset=utf-8")
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(body))
}

/// `GET /assets/player.css`.
async fn stylesheet() -> HttpResponse {
    css(STYLESHEET)
}

/// `GET /assets/player.js`.
async fn player_script() -> HttpResponse {
    asset("text/javascript; charset=utf-8", PLAYER_SCRIPT.as_bytes())
}

/// `GET /assets/plyr.min.js`.
async fn plyr_script() -> HttpResponse {
    asset("text/javascript; charset=utf-8", PLYR_SCRIPT)
}

/// `GET /assets/plyr.css`.
async fn plyr_stylesheet() -> HttpResponse {
    asset("text/css; charset=utf-8", PLYR_STYLESHEET)
}

/// `GET /assets/plyr.svg`.
async fn plyr_icons() -> HttpResponse {
    asset("image/svg+xml", PLYR_ICONS)
}

/// `GET /assets/authorize.css`.
async fn authorize_stylesheet() -> HttpResponse {
    css(AUTHORIZE_STYLESHEET)
}

pub(crate) fn css(body: &'static str) -> HttpResponse {
    asset("text/css; charset=utf-8", body.as_bytes())
}

/// `/api/oembed` (oEmbed 1.0, JSON only).
struct OEmbed;

impl Endpoint for OEmbed {
    const ALLOW: &'static str = "GET, HEAD, OPTIONS";

    async fn answer(call: Call<'_>) -> Answer {
        match call.input.method {
            ref m if is_read(m) => oembed_json(call.state, &call.input.query).await,
            _ => Err(not_implemented(Self::ALLOW)),
        }
    }
}

/// oEmbed 1.0 for a public object.
///
/// `url` is the object's permLink (`{base}/w/{shortcode}/`) or landing page
/// (`{base}/m/{shortcode}`). A URL that is no page of this service is a 404, a private
/// object a 401. Only `format=json` is offered (any other format is a 501).
#[utoipa::path(
    get,
    path = "/api/oembed",
    operation_id = "oembed_get",
    tag = "oembed",
    params(OEmbedQuery),
    security(()),
    responses(
        (status = 200, description = "The oEmbed response.", body = OEmbedResponse),
        (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 404, response = NotFound),
        (status = 501, response = NotImplemented),
        (status = 503, response = Unavailable),
    )
)]
pub(crate) async fn oembed_json(state: &AppState, query: &Form) -> Result<HttpResponse, ApiError> {
    // oEmbed 1.0 §2.3.4: an unsupported format is a 501.
    // An empty `format` counts as absent (oEmbed 1.0 §2.2: it is optional).
    if query
        .get("format")
        .is_some_and(|f| !f.is_empty() && f != "json")
    {
        return Err(ApiError::NotImplemented(
            "only format=json is supported".into(),
        ));
    }
    let url = query
        .get("url")
        .ok_or_else(|| ApiError::BadRequest("url is required".into()))?;
    let code = code_of_url(state.base_url(), url)?;
    let max_width = query.parse("maxwidth", |v| positive(v, "maxwidth"))?;
    let max_height = query.parse("maxheight", |v| positive(v, "maxheight"))?;
    let (width, height) = player_size(max_width, max_height);
    let (object, images) = run(state, move |s| -> Result<_, ApiError> {
        let object = s.media().public_object(&code)?;
        let images = s.uploads().images(&object)?;
        Ok((object, images))
    })
    .await?;
    let base = state.base_url();
    Ok(HttpResponse::Ok()
        .json(OEmbedResponse::new(&object, base, width, height).with_thumbnail(&images, base)))
}

fn positive(input: &str, field: &str) -> Result<u32, String> {
    input
        .parse::<u32>()
        .ok()
        .filter(|n| *n > 0 && input.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| format!("{field} must be a positive integer"))
}

/// The player's size within `maxwidth` x `maxheight`, keeping 16:9.
fn player_size(max_width: Option<u32>, max_height: Option<u32>) -> (u32, u32) {
    let (mut w, mut h) = (PLAYER_WIDTH, PLAYER_HEIGHT);
    if let Some(mw) = max_width.filter(|mw| *mw < w) {
        w = mw;
        h = (mw * 9 / 16).max(1);
    }
    if let Some(mh) = max_height.filter(|mh| *mh < h) {
        h = mh;
        w = (mh * 16 / 9).max(1);
    }
    (w, h)
}

/// The shortcode of a URL of one of this service's object pages: the permLink
/// `{base}/w/{code}/` (slash optional) or the landing page `{base}/m/{code}`.
/// Not an absolute http(s) URL: 400; any other URL: 404 (oEmbed: "no response").
fn code_of_url(base_url: &str, url: &str) -> Result<ShortCode, ApiError> {
    let lower = url.to_ascii_lowercase();
    let absolute = ["http://", "https://"].iter().any(|s| {
        lower
            .strip_prefix(s)
            .is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/'))
    });
    if !absolute || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(ApiError::BadRequest(
            "url must be an absolute http(s) URL".into(),
        ));
    }
    let not_ours = || ApiError::from(PermLinkFailed::NotFound);
    let rest = url
        .get(..base_url.len())
        .filter(|head| head.eq_ignore_ascii_case(base_url))
        .and_then(|_| url.get(base_url.len()..))
        .ok_or_else(not_ours)?;
    let path = rest.split(['?', '#']).next().unwrap_or_default();
    let code = path
        .strip_prefix("/w/")
        .map(|c| c.strip_suffix('/').unwrap_or(c))
        .or_else(|| path.strip_prefix("/m/"))
        .ok_or_else(not_ours)?;
    shortcode(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "https://media.example.edu";

    #[test]
    fn urls_of_object_pages_give_their_shortcode() {
        for url in [
            "https://media.example.edu/w/abcDEF1234/",
            "https://media.example.edu/w/abcDEF1234",
            "HTTPS://MEDIA.example.edu/w/abcDEF1234/?x=1#t",
            "https://media.example.edu/m/abcDEF1234",
        ] {
            assert_eq!(
                code_of_url(BASE, url).map(|c| c.as_str().to_owned()),
                Ok("abcDEF1234".to_owned()),
                "{url}"
            );
        }
    }

    #[test]
    fn other_urls_are_refused() {
        for (url, status) in [
            ("", 400),
            ("not a url", 400),
            ("ftp://media.example.edu/w/abcDEF1234/", 400),
            ("https://", 400),
            ("https://media.example.edu/w/abc DEF123/", 400),
            ("https://other.example/w/abcDEF1234/", 404),
            ("https://media.example.edu.evil.example/w/abcDEF1234/", 404),
            ("https://media.example.edu/w/short/", 404),
            ("https://media.example.edu/x/abcDEF1234/", 404),
            ("https://media.example.edu/w/abcDEF1234/extra", 404),
        ] {
            let err = code_of_url(BASE, url).err();
            assert_eq!(err.map(|e| e.status_code().as_u16()), Some(status), "{url}");
        }
    }

    #[test]
    fn player_size_keeps_the_ratio_within_the_bounds() {
        assert_eq!(player_size(None, None), (640, 360));
        assert_eq!(player_size(Some(320), None), (320, 180));
        assert_eq!(player_size(None, Some(180)), (320, 180));
        assert_eq!(player_size(Some(2000), Some(2000)), (640, 360));
        assert_eq!(player_size(Some(1), Some(1)), (1, 1));
    }

    fn rendered(options: PlayerOptions, captions: Vec<CaptionTrack>) -> String {
        PlayerPage {
            visitor: None,
            here: String::new(),
            heading: "Talk",
            description: "",
            kind: "video",
            perm_link: format!("{BASE}/w/abcDEF1234/"),
            oembed_url: String::new(),
            audio: false,
            sources: vec![Source {
                url: format!("{BASE}/m/o/1/s/mp4/360p.mp4"),
                mime: "video/mp4",
            }],
            embedded: true,
            fragment: String::new(),
            options,
            iframe_code: String::new(),
            script_code: String::new(),
            poster: Some(format!("{BASE}/m/o/1/s/stills/1280x760.jpg")),
            thumbnails: Some(format!("{BASE}/m/o/1/s/thumbs/thumbnails.vtt")),
            waveform: None,
            waveform_picture: None,
            captions,
        }
        .render()
        .unwrap()
    }

    fn track(language: &str) -> CaptionTrack {
        CaptionTrack {
            url: format!("{BASE}/m/o/1/s/captions/{language}.vtt"),
            language: language.to_owned(),
            label: language.to_uppercase(),
        }
    }

    #[test]
    fn caption_tracks_fill_the_slot_and_cc_load_policy_shows_the_first() {
        let on = PlayerOptions {
            captions: true,
            ..PlayerOptions::default()
        };
        let page = rendered(on, vec![track("en"), track("fr")]);
        assert!(page.contains(r#"<track kind="captions" src="https://media.example.edu/m/o/1/s/captions/en.vtt" srclang="en" label="EN" default>"#), "{page}");
        assert!(page.contains(r#"srclang="fr" label="FR">"#), "{page}");
        assert!(page.contains(r#" data-captions="on""#), "{page}");
        // Without cc_load_policy the tracks are offered, none shown from the start.
        let off = rendered(PlayerOptions::default(), vec![track("en")]);
        assert!(off.contains(r#"srclang="en" label="EN">"#), "{off}");
        assert!(
            !off.contains(" default>") && !off.contains("data-captions"),
            "{off}"
        );
        // No tracks, no slot; the poster and the thumbnail track are on the video.
        let none = rendered(on, Vec::new());
        assert!(!none.contains("<track"), "{none}");
        assert!(
            none.contains(r#" poster="https://media.example.edu/m/o/1/s/stills/1280x760.jpg""#)
        );
        assert!(none.contains(
            r#" data-thumbnails="https://media.example.edu/m/o/1/s/thumbs/thumbnails.vtt""#
        ));
        // Plyr comes with the controls, and not without them.
        assert!(none.contains(r#"<script src="/assets/plyr.min.js" defer>"#));
        let bare = rendered(
            PlayerOptions {
                controls: false,
                ..PlayerOptions::default()
            },
            Vec::new(),
        );
        assert!(!bare.contains("plyr"), "{bare}");
    }

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(
            query_escape("https://a.example/w/x/?a=b&c"),
            "https%3A%2F%2Fa.example%2Fw%2Fx%2F%3Fa%3Db%26c"
        );
    }
}
