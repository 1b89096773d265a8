//! The browser-facing surface over HTTP: permLinks, the landing and embed pages, the
//! embed script, oEmbed, and CORS on the API.

use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::{ApiApp, Backend, assert_error};
use crate::helpers::spawn_app_for;

/// A public (or private) object of `kind` with `title`; returns (uuid, shortcode, permLink).
async fn published(
    api: &ApiApp,
    token: &str,
    lib: &str,
    kind: &str,
    title: &str,
    public: bool,
) -> (String, String, String) {
    let a = api
        .call(
            Method::PUT,
            &format!("/api/describe/c/{lib}/o/0"),
            Some(token),
            &[
                ("type", kind),
                ("title", title),
                ("description", "Week 1:\nthe <basics> & more"),
                ("public", if public { "true" } else { "false" }),
            ],
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    let uuid = a.json["uuid"].as_str().unwrap().to_owned();
    let d = api
        .get(&format!("/api/describe/c/{lib}/o/{uuid}"), Some(token))
        .await;
    let link = d.json["permLink"].as_str().unwrap().to_owned();
    let code = link
        .strip_prefix(&format!("{}/w/", api.app.address))
        .and_then(|c| c.strip_suffix('/'))
        .unwrap()
        .to_owned();
    (uuid, code, link)
}

struct Page {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

async fn page(api: &ApiApp, path: &str) -> Page {
    let res = api.app.get(path).await;
    Page {
        status: res.status(),
        headers: res.headers().clone(),
        body: res.text().await.unwrap(),
    }
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> &'a str {
    h.get(name).map_or("", |v| v.to_str().unwrap())
}

/// The headers every player page carries: it may be framed by any site (`embed_origins`
/// unset: LMS plugins frame the permLink), by `frame-ancestors` alone.
fn assert_page_headers(p: &Page) {
    assert!(
        header(&p.headers, "content-type").starts_with("text/html"),
        "{:?}",
        p.headers
    );
    let csp = header(&p.headers, "content-security-policy");
    assert!(csp.contains("default-src 'self'"), "{csp}");
    assert_eq!(header(&p.headers, "referrer-policy"), "no-referrer");
    assert_eq!(header(&p.headers, "x-content-type-options"), "nosniff");
    assert!(csp.contains("frame-ancestors *"), "{csp}");
    assert!(!p.headers.contains_key("x-frame-options"));
}

/// Every `src`/`href` of a page points at this service (no third-party resources; a link
/// within the page, `#main`, is none).
fn assert_only_own_resources(body: &str, address: &str) {
    for attr in ["src=\"", "href=\""] {
        for (i, _) in body.match_indices(attr) {
            let url = &body[i + attr.len()..];
            assert!(
                url.starts_with('/') || url.starts_with(address) || url.starts_with('#'),
                "{}",
                &url[..url.len().min(80)]
            );
        }
    }
}

async fn perm_link_leads_to_the_landing_page(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let (_, code, link) = published(&api, &t, &lib, "video", "Lecture <1> & \"more\"", true).await;
    let landing = format!("{}/m/{code}", api.app.address);

    for url in [link.clone(), link.trim_end_matches('/').to_owned()] {
        let res = api.app.client.get(&url).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::FOUND, "{url}");
        assert_eq!(header(res.headers(), "location"), landing);
    }
    let p = page(&api, &format!("/m/{code}")).await;
    assert_eq!(p.status, StatusCode::OK, "{}", p.body);
    assert_page_headers(&p);
    assert!(p.body.contains("<html lang=\"en\">"));
    assert!(
        p.body
            .contains("<h1 id=\"title\">Lecture &#60;1&#62; &#38; &#34;more&#34;</h1>")
            || p.body
                .contains("<h1 id=\"title\">Lecture &lt;1&gt; &amp; &quot;more&quot;</h1>"),
        "the title, escaped: {}",
        p.body
    );
    assert!(!p.body.contains("<1>"), "nothing unescaped");
    assert!(p.body.contains("Week 1:"), "the description");
    assert!(p.body.contains(&link), "the permLink");
    assert!(
        p.body.contains("application/json+oembed"),
        "oEmbed discovery"
    );
    // Nothing uploaded: no media element, a note instead (with media: `api::records`).
    assert!(!p.body.contains("<video") && !p.body.contains("<audio"));
    assert!(p.body.contains("No playable media files"));
    assert_only_own_resources(&p.body, &api.app.address);
    // The stylesheets it links to are served here.
    for css in ["/assets/site.css", "/assets/player.css"] {
        assert!(
            p.body
                .contains(&format!(r#"<link rel="stylesheet" href="{css}">"#))
        );
        let res = api.app.get(css).await;
        assert_eq!(res.status(), StatusCode::OK);
        assert!(header(res.headers(), "content-type").starts_with("text/css"));
    }

    // HEAD answers like GET without a body.
    let res = api
        .app
        .client
        .head(api.app.url(&format!("/m/{code}")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.text().await.unwrap().is_empty());

    // Unknown and malformed shortcodes: JSON 404s; other methods: 501.
    for path in ["/w/ZZZZZZZZZZ/", "/w/short", "/w/ab%2Fcdefghi"] {
        let res = api.app.get(path).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{path}");
        let body: Value = res.json().await.unwrap();
        assert!(body["message"].is_string());
    }
    let res = api
        .app
        .client
        .post(api.app.url(&format!("/w/{code}")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NOT_IMPLEMENTED);
    let p = page(&api, "/m/ZZZZZZZZZZ").await;
    assert_eq!(p.status, StatusCode::NOT_FOUND);
    assert_page_headers(&p);
}

async fn private_objects_need_a_sign_in(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let (uuid, code, link) = published(&api, &t, &lib, "audio", "Secret talk", false).await;

    // The permLink resolves (it names an existing object) ...
    let res = api.app.client.get(&link).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::FOUND);
    // ... but its pages say sign-in is required, and show nothing of it.
    for path in [format!("/m/{code}"), format!("/embed/{code}")] {
        let p = page(&api, &path).await;
        assert_eq!(p.status, StatusCode::UNAUTHORIZED, "{path}");
        assert_page_headers(&p);
        assert!(p.body.contains("Sign-in required"), "{}", p.body);
        assert!(!p.body.contains("Secret talk"));
    }
    assert_eq!(
        api.app.get(&format!("/embed/{code}.js")).await.status(),
        StatusCode::UNAUTHORIZED
    );
    let a = oembed(&api, &[("url", &link), ("format", "json")]).await;
    assert_error(&a, 401);

    // Once public, the same pages show it.
    let a = api
        .call(
            Method::POST,
            &format!("/api/describe/c/{lib}/o/{uuid}"),
            Some(&t),
            &[("type", "audio"), ("public", "true")],
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED);
    let p = page(&api, &format!("/m/{code}")).await;
    assert_eq!(p.status, StatusCode::OK);
    assert!(p.body.contains("Secret talk"));
}

async fn the_embed_page_may_be_framed_and_the_script_inserts_it(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let (_, code, link) = published(&api, &t, &lib, "video", "Clip \"1\"", true).await;

    let p = page(&api, &format!("/embed/{code}")).await;
    assert_eq!(p.status, StatusCode::OK);
    assert_page_headers(&p);
    assert!(p.body.contains("Clip &#34;1&#34;") || p.body.contains("Clip &quot;1&quot;"));
    assert!(p.body.contains(&link));
    assert_only_own_resources(&p.body, &api.app.address);

    let res = api.app.get(&format!("/embed/{code}.js")).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(
        header(res.headers(), "content-type").starts_with("application/javascript"),
        "{:?}",
        res.headers()
    );
    assert_eq!(header(res.headers(), "x-content-type-options"), "nosniff");
    let js = res.text().await.unwrap();
    assert!(
        js.contains(&format!("\"{}/embed/{code}\"", api.app.address)),
        "{js}"
    );
    assert!(js.contains(r#"frame.title = "Clip \"1\"";"#), "{js}");
    assert!(js.contains("document.currentScript") && js.contains("insertBefore"));
}

async fn oembed(api: &ApiApp, query: &[(&str, &str)]) -> super::Answer {
    let req = api.app.client.get(api.app.url("/api/oembed")).query(query);
    api.send(req).await
}

async fn oembed_describes_public_objects(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let (video, _, link) = published(&api, &t, &lib, "video", "Intro", true).await;
    let (_, audio_code, audio_link) = published(&api, &t, &lib, "audio", "Talk", true).await;

    let a = oembed(&api, &[("url", &link), ("format", "json")]).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    let embed = api
        .get(&format!("/api/embed/c/{lib}/o/{video}"), Some(&t))
        .await;
    assert_eq!(
        a.json,
        serde_json::json!({
            "version": "1.0",
            "type": "video",
            "title": "Intro",
            "provider_name": "medialib",
            "provider_url": api.app.address,
            "html": embed.json["properties"]["iframe"],
            "width": 640,
            "height": 360,
        })
    );
    // Not a video: `rich`; `format` may be left out; the landing page URL works too;
    // the size follows maxwidth / maxheight.
    let landing = format!("{}/m/{audio_code}", api.app.address);
    for url in [audio_link.as_str(), landing.as_str()] {
        let a = oembed(&api, &[("url", url), ("maxwidth", "320")]).await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        assert_eq!(a.json["type"], "rich");
        assert_eq!(
            (a.json["width"].as_u64(), a.json["height"].as_u64()),
            (Some(320), Some(180))
        );
        assert!(
            a.json["html"]
                .as_str()
                .unwrap()
                .contains(r#"width="320" height="180""#)
        );
    }

    let unknown = format!("{}/w/ZZZZZZZZZZ/", api.app.address);
    assert_error(
        &oembed(&api, &[("url", &unknown), ("format", "json")]).await,
        404,
    );
    assert_error(
        &oembed(&api, &[("url", "https://elsewhere.example/w/ZZZZZZZZZZ/")]).await,
        404,
    );
    let a = oembed(&api, &[("url", &link), ("format", "xml")]).await;
    assert_error(&a, 501);
    assert_eq!(a.json["message"], "only format=json is supported");
    assert!(!a.headers.contains_key("allow"), "not a method problem");
    let a = oembed(&api, &[("url", &link), ("format", "")]).await;
    assert_eq!(
        a.status.as_u16(),
        200,
        "an empty format counts as absent: {a:?}"
    );
    assert_error(
        &oembed(&api, &[("url", "not a url"), ("format", "json")]).await,
        400,
    );
    assert_error(&oembed(&api, &[("format", "json")]).await, 400);
    assert_error(
        &oembed(&api, &[("url", &link), ("maxwidth", "-5")]).await,
        400,
    );
    // It is an API path: OPTIONS answers there.
    let a = api.call(Method::OPTIONS, "/api/oembed", None, &[]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.headers["allow"], "GET, HEAD, OPTIONS");
}

medialib_adapters_diesel::backend_tests!(
    async on [sqlite, postgres] with crate::api::run:
    perm_link_leads_to_the_landing_page,
    private_objects_need_a_sign_in,
    the_embed_page_may_be_framed_and_the_script_inserts_it,
    oembed_describes_public_objects,
);

/// `embed_origins` limits who may frame the player pages; a framed landing page shows the
/// player alone (no site header, no sign-out form to click into); the site's own pages stay
/// unframeable. Framing touches no storage: one backend is enough.
#[tokio::test]
async fn embed_origins_limit_who_frames_the_player_and_a_framed_landing_page_has_no_forms() {
    let api = ApiApp::start_with(Backend::Sqlite, |l| {
        l.set(
            "embed_origins",
            "https://lms.example.edu,https://moodle.example.org",
        )
    })
    .await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let (_, code, _) = published(&api, &t, &lib, "video", "Framed", true).await;
    for path in [
        format!("/m/{code}"),
        format!("/embed/{code}"),
        "/m/ZZZZZZZZZZ".into(),
    ] {
        let p = page(&api, &path).await;
        let csp = header(&p.headers, "content-security-policy");
        assert!(
            csp.ends_with("frame-ancestors https://lms.example.edu https://moodle.example.org"),
            "{path}: {csp}"
        );
        assert!(!p.headers.contains_key("x-frame-options"), "{path}");
    }
    // At the top, the landing page has the site's header; in a frame, the player alone.
    let top = page(&api, &format!("/m/{code}")).await;
    assert!(
        top.body.contains(r#"<header class="site">"#),
        "{}",
        top.body
    );
    let res = api
        .app
        .client
        .get(api.app.url(&format!("/m/{code}")))
        .header("Sec-Fetch-Dest", "iframe")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let framed = res.text().await.unwrap();
    assert!(framed.contains("<h1 id=\"title\">Framed</h1>"), "{framed}");
    assert!(
        !framed.contains("<header") && !framed.contains("<form"),
        "{framed}"
    );
    // The site's pages are never framed.
    let home = page(&api, "/").await;
    assert!(header(&home.headers, "content-security-policy").contains("frame-ancestors 'none'"));
    assert_eq!(header(&home.headers, "x-frame-options"), "DENY");
}

// CORS does not touch storage: one backend is enough.

const LMS: &str = "https://lms.example.edu";

fn has_cors_headers(h: &HeaderMap) -> bool {
    h.keys().any(|k| k.as_str().starts_with("access-control-"))
}

#[tokio::test]
async fn cors_headers_only_for_allowed_origins() {
    let app = spawn_app_for(Backend::Sqlite, |l| l.set("cors_origins", LMS)).await;
    let send = |method: Method, path: &str, origin: &str| {
        app.client
            .request(method, app.url(path))
            .header("Origin", origin)
            .header("Access-Control-Request-Method", "PUT")
            .header("Access-Control-Request-Headers", "authorization")
            .send()
    };

    // A simple request from the allowed origin.
    let res = send(Method::GET, "/api/authenticate", LMS).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(header(res.headers(), "access-control-allow-origin"), LMS);
    assert!(header(res.headers(), "vary").contains("Origin"));

    // A preflight from the allowed origin.
    let path = "/api/describe/c/0123456789abcdef0123456789abcdef/o/0/";
    let res = send(Method::OPTIONS, path, LMS).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let h = res.headers();
    assert_eq!(header(h, "access-control-allow-origin"), LMS);
    assert_eq!(
        header(h, "access-control-allow-methods"),
        "GET, HEAD, PUT, POST, OPTIONS"
    );
    assert_eq!(
        header(h, "access-control-allow-headers"),
        "Authorization, Content-Type, X-HTTP-Method-Override, Range, Tus-Resumable, \
         Upload-Length, Upload-Offset, Upload-Metadata, Upload-Checksum, Upload-Defer-Length"
    );
    assert_eq!(header(h, "access-control-max-age"), "600");
    assert!(!h.contains_key("access-control-allow-credentials"));
    // Errors carry the headers too, so the browser can read the message.
    let res = send(
        Method::GET,
        "/api/catalog/o/0123456789abcdef0123456789abcdef",
        LMS,
    )
    .await
    .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(header(res.headers(), "access-control-allow-origin"), LMS);

    // Any other origin gets no CORS header at all.
    for origin in [
        "https://evil.example",
        "https://lms.example.edu.evil.example",
        "null",
    ] {
        for method in [Method::GET, Method::OPTIONS] {
            let res = send(method.clone(), "/api/authenticate", origin)
                .await
                .unwrap();
            assert!(
                !has_cors_headers(res.headers()),
                "{origin} {method}: {:?}",
                res.headers()
            );
        }
    }
    // Never on the authorization endpoint, however it is spelt; never outside /api/.
    for path in [
        "/api/oauth/authorize",
        "/api/oauth/authorize/",
        "/api//oauth/authorize",
        "/api/oauth/authorize?response_type=code",
        "/healthz",
    ] {
        for method in [Method::GET, Method::OPTIONS] {
            let res = send(method.clone(), path, LMS).await.unwrap();
            assert!(
                !has_cors_headers(res.headers()),
                "{path} {method}: {:?}",
                res.headers()
            );
        }
    }
}

#[tokio::test]
async fn no_cors_without_configured_origins() {
    let app = spawn_app_for(Backend::Sqlite, |l| l).await;
    let res = app
        .client
        .get(app.url("/api/authenticate"))
        .header("Origin", LMS)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(!has_cors_headers(res.headers()));
}
