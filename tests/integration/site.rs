//! The pages people use, over HTTP as a browser sends them (issue 21): the home page, signing
//! in and out on medialib's own pages (the `local` password form, CSRF-bound to its cookie;
//! `next` only ever a path of this service), library pages, a private object's landing page
//! for a signed-in viewer, the permLink keeping its query, and error pages for browsers.
//! The library page's upload box: tus requests as the session, only with its CSRF token.
//! Cookies are carried by hand, as a browser would, so that each one's scope is checked.

use std::collections::BTreeMap;

use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::api::{Backend, run};
use crate::oauth::{OAuthApp, PASSWORD};

medialib_adapters_diesel::backend_tests!(async on [sqlite, postgres] with run:
    the_home_page_offers_sign_in_then_lists_the_persons_libraries,
    a_wrong_password_or_a_forged_form_signs_nobody_in,
    sign_in_returns_only_to_paths_of_this_service,
    a_library_page_lists_its_members_to_a_viewer,
    a_private_objects_landing_page_shows_to_a_signed_in_viewer_and_asks_others_to_sign_in,
    signing_out_ends_the_session,
    a_perm_link_keeps_the_players_query,
    unknown_pages_are_pages_for_browsers_and_json_for_the_rest,
    an_admin_manages_a_library_and_its_people_from_its_page,
    the_upload_box_uploads_as_the_session_only_with_its_csrf_token,
    a_failed_members_card_offers_its_admins_to_try_again,
);

/// A browser: its cookies (name → value, whatever their path here: each test checks the
/// paths it relies on) and the app.
struct Browser<'a> {
    app: &'a OAuthApp,
    cookies: BTreeMap<String, String>,
}

/// What a page answered.
#[derive(Debug)]
struct Page {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Page {
    fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", |v| v.to_str().unwrap())
    }

    /// The value of a hidden form field.
    fn hidden(&self, name: &str) -> String {
        let marker = format!("name=\"{name}\" value=\"");
        let start = self
            .body
            .find(&marker)
            .unwrap_or_else(|| panic!("no {name} field: {}", self.body))
            + marker.len();
        let end = self.body[start..].find('"').unwrap() + start;
        self.body[start..end].to_owned()
    }

    /// The `Set-Cookie` header that sets `name`, whole.
    fn set_cookie(&self, name: &str) -> Option<String> {
        self.headers
            .get_all("set-cookie")
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .find(|v| v.starts_with(&format!("{name}=")))
    }
}

impl<'a> Browser<'a> {
    fn new(app: &'a OAuthApp) -> Self {
        Self {
            app,
            cookies: BTreeMap::new(),
        }
    }

    async fn send(&mut self, method: Method, path: &str, form: &[(&str, &str)]) -> Page {
        let mut req = self
            .app
            .api
            .app
            .client
            .request(method, self.app.url(path))
            .header("Accept", "text/html,application/xhtml+xml,*/*;q=0.8");
        if !self.cookies.is_empty() {
            let jar: Vec<String> = self
                .cookies
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            req = req.header("Cookie", jar.join("; "));
        }
        if !form.is_empty() {
            req = req.form(form);
        }
        let res = req.send().await.unwrap();
        let page = Page {
            status: res.status(),
            headers: res.headers().clone(),
            body: res.text().await.unwrap(),
        };
        for set in page.headers.get_all("set-cookie") {
            let set = set.to_str().unwrap();
            let (pair, attributes) = set.split_once(';').unwrap_or((set, ""));
            let (name, value) = pair.split_once('=').unwrap();
            if value.is_empty() || attributes.contains("Max-Age=0") {
                self.cookies.remove(name);
            } else {
                self.cookies.insert(name.to_owned(), value.to_owned());
            }
        }
        page
    }

    async fn get(&mut self, path: &str) -> Page {
        self.send(Method::GET, path, &[]).await
    }

    /// Signs in through `/login?next=…` with `password`; returns the form's answer.
    async fn sign_in(&mut self, next: &str, username: &str, password: &str) -> Page {
        let form = self
            .get(&format!("/login?next={}", urlencoding(next)))
            .await;
        assert_eq!(form.status, StatusCode::OK, "{}", form.body);
        let cookie = form.set_cookie("medialib_login").unwrap();
        assert!(cookie.contains("Path=/login"), "{cookie}");
        assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"));
        let csrf = form.hidden("csrf_token");
        let next = form.hidden("next");
        self.send(
            Method::POST,
            "/login",
            &[
                ("csrf_token", &csrf),
                ("next", &next),
                ("username", username),
                ("password", password),
            ],
        )
        .await
    }

    fn signed_in(&self) -> bool {
        self.cookies.contains_key("medialib_session")
    }
}

/// Percent-encodes a query value (all but RFC 3986's unreserved characters).
fn urlencoding(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The headers of the pages people use.
fn assert_site_headers(p: &Page) {
    assert!(p.header("content-type").starts_with("text/html"), "{p:?}");
    let csp = p.header("content-security-policy");
    assert!(csp.contains("default-src 'self'"), "{csp}");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert_eq!(p.header("x-frame-options"), "DENY");
    assert_eq!(p.header("cache-control"), "no-store");
    assert_eq!(p.header("referrer-policy"), "no-referrer");
}

/// alice (a local-directory user with [`PASSWORD`]) and her API token, with a library "L".
async fn alice(b: Backend) -> (OAuthApp, String, String) {
    let app = OAuthApp::start(b).await;
    let user = app.user_with_password("alice", PASSWORD);
    let token = app.api.token(&user, "read write");
    let lib = app.api.library(&token, "L").await;
    (app, token, lib)
}

/// A new object of `kind` in `lib`; returns its uuid and shortcode.
async fn object(
    app: &OAuthApp,
    token: &str,
    lib: &str,
    kind: &str,
    title: &str,
) -> (String, String) {
    let a = app
        .api
        .call(
            Method::PUT,
            &format!("/api/describe/c/{lib}/o/0"),
            Some(token),
            &[("type", kind), ("title", title)],
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    let uuid = a.json["uuid"].as_str().unwrap().to_owned();
    let d = app
        .api
        .get(&format!("/api/describe/c/{lib}/o/{uuid}"), Some(token))
        .await;
    let link = d.json["permLink"].as_str().unwrap();
    let code = link
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    (uuid, code)
}

async fn the_home_page_offers_sign_in_then_lists_the_persons_libraries(b: Backend) {
    let (app, _, lib) = alice(b).await;
    // bob's library is not alice's to see.
    let bob = app.api.user("bob", false);
    let bob_token = app.api.token(&bob, "read write");
    app.api.library(&bob_token, "Bob's own").await;
    let mut browser = Browser::new(&app);

    let home = browser.get("/").await;
    assert_eq!(home.status, StatusCode::OK, "{}", home.body);
    assert_site_headers(&home);
    assert!(
        home.body.contains(r#"href="/login?next=%2F""#),
        "{}",
        home.body
    );
    assert!(!home.body.contains("Your libraries"));

    let signed = browser.sign_in("/", "alice", PASSWORD).await;
    assert_eq!(signed.status, StatusCode::SEE_OTHER, "{}", signed.body);
    assert_eq!(signed.header("location"), "/");
    let session = signed.set_cookie("medialib_session").unwrap();
    assert!(
        session.contains("Path=/;") && session.contains("HttpOnly"),
        "{session}"
    );
    assert!(
        signed
            .set_cookie("medialib_login")
            .unwrap()
            .contains("Max-Age=0"),
        "the form's cookie is cleared"
    );

    let home = browser.get("/").await;
    assert_eq!(home.status, StatusCode::OK);
    assert!(home.body.contains("Your libraries"), "{}", home.body);
    assert!(
        home.body
            .contains("Signed in as <strong>Ada alice</strong>"),
        "{}",
        home.body
    );
    assert!(
        home.body
            .contains(&format!(r#"<a href="/libraries/{lib}">L</a>"#)),
        "{}",
        home.body
    );
    assert!(!home.body.contains("Bob&#39;s own") && !home.body.contains("Bob's own"));
    // A signed-in browser asking to sign in again goes on at once.
    let again = browser.get("/login?next=%2Flibraries").await;
    assert_eq!(again.status, StatusCode::FOUND);
    assert_eq!(again.header("location"), "/libraries");
}

async fn a_wrong_password_or_a_forged_form_signs_nobody_in(b: Backend) {
    let (app, _, _) = alice(b).await;
    let mut browser = Browser::new(&app);
    let wrong = browser.sign_in("/", "alice", "not the password").await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED, "{}", wrong.body);
    assert_site_headers(&wrong);
    assert!(
        wrong.body.contains("Wrong username or password."),
        "{}",
        wrong.body
    );
    assert!(
        wrong.body.contains(r#"value="alice""#),
        "the username stays filled in"
    );
    assert!(!browser.signed_in());

    // A form posted without the cookie its token is bound to (another site's form) is
    // refused before the password is looked at, even the right one.
    let form = browser.get("/login").await;
    let csrf = form.hidden("csrf_token");
    browser.cookies.clear();
    let forged = browser
        .send(
            Method::POST,
            "/login",
            &[
                ("csrf_token", csrf.as_str()),
                ("username", "alice"),
                ("password", PASSWORD),
            ],
        )
        .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "{}", forged.body);
    assert!(forged.body.contains("This form has expired"));
    assert!(!browser.signed_in());
    // Positive control: the same browser with a fresh form signs in.
    let ok = browser.sign_in("/", "alice", PASSWORD).await;
    assert_eq!(ok.status, StatusCode::SEE_OTHER, "{}", ok.body);
    assert!(browser.signed_in());
}

async fn sign_in_returns_only_to_paths_of_this_service(b: Backend) {
    let (app, _, lib) = alice(b).await;
    for (next, location) in [
        (format!("/libraries/{lib}"), format!("/libraries/{lib}")),
        ("//evil.example/".to_owned(), "/".to_owned()),
        ("https://evil.example/".to_owned(), "/".to_owned()),
        ("/\\evil.example".to_owned(), "/".to_owned()),
    ] {
        let mut browser = Browser::new(&app);
        let signed = browser.sign_in(&next, "alice", PASSWORD).await;
        assert_eq!(signed.status, StatusCode::SEE_OTHER, "{next}");
        assert_eq!(signed.header("location"), location, "{next}");
    }
}

async fn a_library_page_lists_its_members_to_a_viewer(b: Backend) {
    let (app, token, lib) = alice(b).await;
    let (_, code) = object(&app, &token, &lib, "video", "Lecture <1>").await;
    let (sub, _) = object(&app, &token, &lib, "catalog", "Week 2").await;
    let page = format!("/libraries/{lib}");

    let mut browser = Browser::new(&app);
    let away = browser.get(&page).await;
    assert_eq!(away.status, StatusCode::FOUND, "sign in first");
    assert_eq!(
        away.header("location"),
        format!("/login?next=%2Flibraries%2F{lib}")
    );
    browser.sign_in(&page, "alice", PASSWORD).await;
    let p = browser.get(&page).await;
    assert_eq!(p.status, StatusCode::OK, "{}", p.body);
    assert_site_headers(&p);
    assert!(p.body.contains("<h1>L</h1>"), "{}", p.body);
    assert!(p.body.contains("Your access: admin"), "{}", p.body);
    assert!(
        p.body.contains(&format!(r#"href="/m/{code}""#)),
        "{}",
        p.body
    );
    assert!(p.body.contains("Lecture &#60;1&#62;") || p.body.contains("Lecture &lt;1&gt;"));
    assert!(!p.body.contains("Lecture <1>"), "escaped");
    assert!(
        p.body.contains(&format!(r#"href="/libraries/{sub}""#)),
        "{}",
        p.body
    );
    // The sub-library's page, through the level alice holds above it.
    let s = browser.get(&format!("/libraries/{sub}")).await;
    assert_eq!(s.status, StatusCode::OK, "{}", s.body);
    assert!(s.body.contains("This library is empty."));

    // carol, signed in without any level on it, is refused; an unknown id is not found.
    app.user_with_password("carol", PASSWORD);
    let mut carol = Browser::new(&app);
    carol.sign_in("/", "carol", PASSWORD).await;
    let refused = carol.get(&page).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    assert_site_headers(&refused);
    assert!(!refused.body.contains("Lecture"));
    for unknown in [
        "/libraries/not-a-uuid",
        "/libraries/00000000-0000-5000-8000-000000000000",
    ] {
        let p = carol.get(unknown).await;
        assert_eq!(p.status, StatusCode::NOT_FOUND, "{unknown}: {}", p.body);
        assert!(p.header("content-type").starts_with("text/html"));
    }
}

async fn a_private_objects_landing_page_shows_to_a_signed_in_viewer_and_asks_others_to_sign_in(
    b: Backend,
) {
    let (app, token, lib) = alice(b).await;
    let (_, code) = object(&app, &token, &lib, "video", "Private talk").await;
    let landing = format!("/m/{code}");

    let mut browser = Browser::new(&app);
    let asked = browser.get(&landing).await;
    assert_eq!(asked.status, StatusCode::UNAUTHORIZED, "{}", asked.body);
    assert!(asked.body.contains("Sign-in required"));
    let sign_in = format!(r#"href="/login?next=%2Fm%2F{code}""#);
    assert!(asked.body.contains(&sign_in), "{}", asked.body);
    assert!(!asked.body.contains("Private talk"));

    let signed = browser.sign_in(&landing, "alice", PASSWORD).await;
    assert_eq!(signed.header("location"), landing);
    let shown = browser.get(&landing).await;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.body);
    assert!(shown.body.contains("Private talk"));
    assert!(
        shown.body.contains("Signed in as"),
        "the header: {}",
        shown.body
    );

    // A signed-in stranger learns nothing more than of an unknown link.
    app.user_with_password("carol", PASSWORD);
    let mut carol = Browser::new(&app);
    carol.sign_in("/", "carol", PASSWORD).await;
    let hidden = carol.get(&landing).await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND, "{}", hidden.body);
    assert!(!hidden.body.contains("Private talk"));
    // The embed page stays for public objects only, session or not.
    let embed = browser.get(&format!("/embed/{code}")).await;
    assert_eq!(embed.status, StatusCode::UNAUTHORIZED);
}

async fn signing_out_ends_the_session(b: Backend) {
    let (app, _, _) = alice(b).await;
    let mut browser = Browser::new(&app);
    browser.sign_in("/", "alice", PASSWORD).await;
    let home = browser.get("/").await;
    let csrf = home.hidden("csrf_token");
    let session = browser.cookies["medialib_session"].clone();

    let forged = browser
        .send(Method::POST, "/logout", &[("csrf_token", "not-the-token")])
        .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "{}", forged.body);
    assert!(browser.signed_in(), "a forged sign-out changes nothing");
    assert!(browser.get("/").await.body.contains("Your libraries"));

    let out = browser
        .send(Method::POST, "/logout", &[("csrf_token", csrf.as_str())])
        .await;
    assert_eq!(out.status, StatusCode::SEE_OTHER, "{}", out.body);
    assert_eq!(out.header("location"), "/");
    assert!(
        out.set_cookie("medialib_session")
            .unwrap()
            .contains("Max-Age=0")
    );
    // The old cookie, presented again, names no session any more.
    browser.cookies.insert("medialib_session".into(), session);
    let home = browser.get("/").await;
    assert!(!home.body.contains("Your libraries"), "{}", home.body);
    assert!(home.body.contains("/login?next="));
    // Signing out without a session is no error.
    browser.cookies.clear();
    let again = browser.send(Method::POST, "/logout", &[("x", "1")]).await;
    assert_eq!(again.status, StatusCode::SEE_OTHER);
}

async fn a_perm_link_keeps_the_players_query(b: Backend) {
    let (app, token, lib) = alice(b).await;
    let (_, code) = object(&app, &token, &lib, "video", "Embedded").await;
    // As Warpwire's LMS plugins frame the permLink.
    let query = "share=false&title=false&autoplay=true&cc_load_policy=1";
    let res = app.api.app.get(&format!("/w/{code}/?{query}")).await;
    assert_eq!(res.status(), StatusCode::FOUND);
    assert_eq!(
        res.headers()["location"].to_str().unwrap(),
        format!("{}/m/{code}?{query}", app.base())
    );
    let res = app.api.app.get(&format!("/w/{code}/")).await;
    assert_eq!(
        res.headers()["location"].to_str().unwrap(),
        format!("{}/m/{code}", app.base()),
        "no query, none added"
    );
}

async fn unknown_pages_are_pages_for_browsers_and_json_for_the_rest(b: Backend) {
    let (app, _, _) = alice(b).await;
    let mut browser = Browser::new(&app);
    for path in ["/nowhere", "/w/ZZZZZZZZZZ/"] {
        let p = browser.get(path).await;
        assert_eq!(p.status, StatusCode::NOT_FOUND, "{path}");
        assert!(p.header("content-type").starts_with("text/html"), "{path}");
        assert!(p.body.contains("<h1>Not found</h1>"), "{}", p.body);
        assert!(p.body.contains(r#"href="/""#), "a way home");
        // An API client (no text/html in Accept) gets the JSON message.
        let res = app.api.app.get(path).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND);
        let body: Value = res.json().await.unwrap();
        assert!(body["message"].is_string(), "{path}");
    }
    // The API namespace answers JSON whatever the Accept header says.
    let p = browser.get("/api/nowhere").await;
    assert!(
        p.header("content-type").starts_with("application/json"),
        "{p:?}"
    );
}

async fn an_admin_manages_a_library_and_its_people_from_its_page(b: Backend) {
    let (app, _, lib) = alice(b).await;
    let page = format!("/libraries/{lib}");
    let mut alice = Browser::new(&app);
    alice.sign_in("/", "alice", PASSWORD).await;
    let p = alice.get(&page).await;
    assert!(p.body.contains("Manage this library"), "{}", p.body);
    let csrf = p.hidden("csrf_token");
    let post = |form: Vec<(&'static str, String)>| {
        let mut form = form;
        form.push(("csrf_token", csrf.clone()));
        form
    };
    let send = async |browser: &mut Browser<'_>, form: Vec<(&'static str, String)>| {
        let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        browser.send(Method::POST, &page, &pairs).await
    };

    // Edit: title, description, public.
    let done = send(
        &mut alice,
        post(vec![
            ("action", "edit".into()),
            ("title", "Physics 101".into()),
            ("description", "Lectures & labs".into()),
            ("public", "on".into()),
        ]),
    )
    .await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    assert_eq!(done.header("location"), page);
    let p = alice.get(&page).await;
    assert!(p.body.contains("<h1>Physics 101</h1>"), "{}", p.body);
    assert!(p.body.contains(r#"name="public" checked"#), "{}", p.body);
    // A new sub-library is listed.
    let done = send(
        &mut alice,
        post(vec![
            ("action", "create".into()),
            ("title", "Week 1".into()),
        ]),
    )
    .await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    assert!(alice.get(&page).await.body.contains("Week 1"));
    // bob gets view by his username (provisioned before his first sign-in).
    let done = send(
        &mut alice,
        post(vec![
            ("action", "grant".into()),
            ("unique_id", "bob".into()),
            ("level", "view".into()),
        ]),
    )
    .await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    let p = alice.get(&page).await;
    assert!(p.body.contains("<td>bob</td>"), "{}", p.body);
    let bob_user = app
        .api
        .services
        .oauth()
        .list_users()
        .unwrap()
        .into_iter()
        .find(|u| u.unique_id.as_str() == "bob")
        .unwrap();
    let hash =
        medialib_adapters_sso::hash_password(&medialib_domain::Secret::new(PASSWORD)).unwrap();
    app.api
        .services
        .store()
        .set_password_hash(
            bob_user.id,
            &hash,
            medialib_domain::Timestamp::from_epoch_seconds(0),
        )
        .unwrap();
    let mut bob = Browser::new(&app);
    bob.sign_in("/", "bob", PASSWORD).await;
    assert!(bob.get("/").await.body.contains("Physics 101"));
    let seen = bob.get(&page).await;
    assert_eq!(seen.status, StatusCode::OK);
    assert!(seen.body.contains("Your access: view"));
    assert!(
        !seen.body.contains("Manage this library"),
        "a viewer has no forms"
    );
    // bob's own form (his CSRF token) is refused by the gate: he only views.
    let bob_csrf = seen.hidden("csrf_token");
    let refused = bob
        .send(
            Method::POST,
            &page,
            &[
                ("csrf_token", bob_csrf.as_str()),
                ("action", "create"),
                ("title", "Mine"),
            ],
        )
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    // A form without the session's token changes nothing.
    let forged = alice
        .send(
            Method::POST,
            &page,
            &[
                ("csrf_token", "forged"),
                ("action", "create"),
                ("title", "X"),
            ],
        )
        .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "{}", forged.body);
    assert!(!alice.get(&page).await.body.contains(">X<"));
    // The last admin cannot remove herself.
    let last = send(
        &mut alice,
        post(vec![
            ("action", "revoke".into()),
            ("unique_id", "alice".into()),
        ]),
    )
    .await;
    assert_eq!(last.status, StatusCode::CONFLICT, "{}", last.body);
    // Removing bob takes the library from him.
    let done = send(
        &mut alice,
        post(vec![
            ("action", "revoke".into()),
            ("unique_id", "bob".into()),
        ]),
    )
    .await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    assert_eq!(bob.get(&page).await.status, StatusCode::FORBIDDEN);
    assert!(!bob.get("/").await.body.contains("Physics 101"));
}

/// The value of attribute `name` in the first tag that has it.
fn attribute(body: &str, name: &str) -> Option<String> {
    let marker = format!(" {name}=\"");
    let start = body.find(&marker)? + marker.len();
    let end = body[start..].find('"')? + start;
    Some(body[start..end].to_owned())
}

async fn the_upload_box_uploads_as_the_session_only_with_its_csrf_token(b: Backend) {
    let (app, _, lib) = alice(b).await;
    let page = format!("/libraries/{lib}");
    let mut alice = Browser::new(&app);
    alice.sign_in("/", "alice", PASSWORD).await;
    let p = alice.get(&page).await;
    assert_site_headers(&p);
    assert!(
        !p.header("content-security-policy").contains("script-src"),
        "its own scripts run (default-src 'self'): {p:?}"
    );
    let endpoint = attribute(&p.body, "data-endpoint").expect("an upload box");
    assert_eq!(endpoint, format!("/api/upload/c/{lib}/o/0/"));
    let csrf = attribute(&p.body, "data-csrf").unwrap();
    assert_eq!(csrf, p.hidden("csrf_token"), "the session's token");
    for script in ["/assets/tus.min.js", "/assets/library.js"] {
        assert!(
            p.body
                .contains(&format!(r#"<script src="{script}" defer>"#))
        );
        let s = alice.get(script).await;
        assert_eq!(s.status, StatusCode::OK, "{script}");
        assert!(s.header("content-type").starts_with("text/javascript"));
        assert_eq!(s.header("x-content-type-options"), "nosniff");
        assert!(s.body.contains("tus"), "{script}");
    }

    let session = alice.cookies["medialib_session"].clone();
    let create = async |cookie: Option<&str>, token: Option<&str>| {
        let mut req = app
            .api
            .app
            .client
            .post(app.url(&endpoint))
            .header("Tus-Resumable", "1.0.0")
            .header("Upload-Length", "5")
            .header("Upload-Metadata", "filename bm90ZXMudHh0");
        if let Some(c) = cookie {
            req = req.header("Cookie", format!("medialib_session={c}"));
        }
        if let Some(t) = token {
            req = req.header("X-CSRF-Token", t);
        }
        req.send().await.unwrap()
    };
    // The cookie alone (what another site's form or script could make the browser send), a
    // wrong token, or the token without the cookie: nobody.
    for (cookie, token) in [
        (Some(session.as_str()), None),
        (Some(session.as_str()), Some("mlc_forged")),
        (None, Some(csrf.as_str())),
    ] {
        let refused = create(cookie, token).await;
        assert_eq!(
            refused.status(),
            StatusCode::UNAUTHORIZED,
            "cookie {}, token {token:?}",
            cookie.is_some()
        );
    }
    // Both: the upload is alice's, and goes on with both.
    let created = create(Some(&session), Some(&csrf)).await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let location = created.headers()["location"].to_str().unwrap().to_owned();
    let patch = app
        .api
        .app
        .client
        .patch(&location)
        .header("Tus-Resumable", "1.0.0")
        .header("Content-Type", "application/offset+octet-stream")
        .header("Upload-Offset", "0")
        .header("Cookie", format!("medialib_session={session}"))
        .header("X-CSRF-Token", &csrf)
        .body("hello")
        .send()
        .await
        .unwrap();
    assert_eq!(patch.status(), StatusCode::NO_CONTENT);
    let p = alice.get(&page).await;
    assert!(p.body.contains("notes.txt"), "listed: {}", p.body);

    // A viewer is offered no upload box, and cannot upload with her own session either.
    app.user_with_password("carol", PASSWORD);
    let granted = alice
        .send(
            Method::POST,
            &page,
            &[
                ("csrf_token", &csrf),
                ("action", "grant"),
                ("unique_id", "carol"),
                ("level", "view"),
            ],
        )
        .await;
    assert_eq!(granted.status, StatusCode::SEE_OTHER, "{}", granted.body);
    let mut carol = Browser::new(&app);
    carol.sign_in("/", "carol", PASSWORD).await;
    let p = carol.get(&page).await;
    assert_eq!(p.status, StatusCode::OK, "{}", p.body);
    assert!(attribute(&p.body, "data-endpoint").is_none(), "{}", p.body);
    let carol_csrf = p.hidden("csrf_token");
    let carol_session = carol.cookies["medialib_session"].clone();
    let refused = create(Some(&carol_session), Some(&carol_csrf)).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);

    // Signed out, the session uploads no more.
    let out = alice
        .send(Method::POST, "/logout", &[("csrf_token", &csrf)])
        .await;
    assert_eq!(out.status, StatusCode::SEE_OTHER, "{}", out.body);
    let ended = create(Some(&session), Some(&csrf)).await;
    assert_eq!(ended.status(), StatusCode::UNAUTHORIZED);
}

async fn a_failed_members_card_offers_its_admins_to_try_again(b: Backend) {
    use medialib_domain::Timestamp;
    use medialib_domain::media::derived::DerivedDir;
    use medialib_ports::{ClaimRequest, JobEnd, JobEnded};

    let (app, token, lib) = alice(b).await;
    // A "video" that is five bytes of text: uploaded whole, its job queued (no worker runs
    // in this app).
    let http = &app.api.app.client;
    let created = http
        .post(app.url(&format!("/api/upload/c/{lib}/o/0/")))
        .bearer_auth(&token)
        .header("Tus-Resumable", "1.0.0")
        .header("Upload-Length", "5")
        .header("Upload-Metadata", "filename Y2xpcC5tcDQ=")
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let location = created.headers()["location"].to_str().unwrap().to_owned();
    let object = location
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    let patched = http
        .patch(&location)
        .bearer_auth(&token)
        .header("Tus-Resumable", "1.0.0")
        .header("Content-Type", "application/offset+octet-stream")
        .header("Upload-Offset", "0")
        .body("hello")
        .send()
        .await
        .unwrap();
    assert_eq!(patched.status(), StatusCode::NO_CONTENT);
    // A worker takes the job and gives up on it, as one does with a source it cannot read.
    let store = app.api.services.store();
    let now = Timestamp::from_epoch_seconds(
        i64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs(),
        )
        .unwrap()
            + 5,
    );
    let give_up = |error: &str| {
        let dir = DerivedDir::parse("0000000a").unwrap();
        let job = store
            .claim_job(ClaimRequest {
                holder: "test worker",
                now,
                until: now.plus_secs(std::time::Duration::from_secs(60)),
                dir: &dir,
            })
            .unwrap()
            .expect("the object's job, queued");
        let ended = store
            .end_job(job.ticket, JobEnd::Failed { error }, now)
            .unwrap();
        assert!(matches!(ended, JobEnded::Ended(_)), "{ended:?}");
    };
    give_up("the source is not a video");

    let page = format!("/libraries/{lib}");
    let mut alice = Browser::new(&app);
    alice.sign_in("/", "alice", PASSWORD).await;
    let p = alice.get(&page).await;
    assert!(
        p.body
            .contains("Processing failed: the source is not a video"),
        "{}",
        p.body
    );
    assert!(p.body.contains("Try again"), "{}", p.body);
    assert!(
        p.body
            .contains(&format!(r#"name="object" value="{object}""#)),
        "{}",
        p.body
    );
    let csrf = p.hidden("csrf_token");
    let again = alice
        .send(
            Method::POST,
            &page,
            &[
                ("csrf_token", csrf.as_str()),
                ("action", "reprocess"),
                ("object", object.as_str()),
            ],
        )
        .await;
    assert_eq!(again.status, StatusCode::SEE_OTHER, "{}", again.body);
    let p = alice.get(&page).await;
    assert!(!p.body.contains("Processing failed"), "{}", p.body);
    assert!(p.body.contains("Waiting to be processed"), "{}", p.body);

    // A viewer sees the failure but is offered no button, and her form is refused.
    app.user_with_password("carol", PASSWORD);
    alice
        .send(
            Method::POST,
            &page,
            &[
                ("csrf_token", csrf.as_str()),
                ("action", "grant"),
                ("unique_id", "carol"),
                ("level", "view"),
            ],
        )
        .await;
    give_up("still not a video");
    let mut carol = Browser::new(&app);
    carol.sign_in("/", "carol", PASSWORD).await;
    let p = carol.get(&page).await;
    assert!(
        p.body.contains("Processing failed: still not a video"),
        "{}",
        p.body
    );
    assert!(!p.body.contains("Try again"), "{}", p.body);
    let carol_csrf = p.hidden("csrf_token");
    let refused = carol
        .send(
            Method::POST,
            &page,
            &[
                ("csrf_token", carol_csrf.as_str()),
                ("action", "reprocess"),
                ("object", object.as_str()),
            ],
        )
        .await;
    assert!(
        refused.status == StatusCode::FORBIDDEN || refused.status == StatusCode::NOT_FOUND,
        "{}",
        refused.body
    );
}
