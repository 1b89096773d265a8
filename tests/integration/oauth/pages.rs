//! The authorization endpoint's browser pages over real HTTP, on SQLite and PostgreSQL:
//! the sign-in form (`POST /api/oauth/login`), the consent form (`POST /api/oauth/authorize`),
//! every error page, and the security properties of SECURITY-CHECKLIST.md lines 1-8, 15-18,
//! 20, 21, 23 and 24 that they carry.
//!
//! A [`Browser`] drives the forms by hand: it keeps cookies from `Set-Cookie`, follows no
//! redirect, and reads the hidden fields of each form out of the HTML.

use std::time::{SystemTime, UNIX_EPOCH};

use medialib_ports::services::ClientCredentials;
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode, Url};

use super::{Backend, OAuthApp, PASSWORD};
use crate::api::REDIRECT;

/// The client's name: markup in it must come out escaped.
const CLIENT_NAME: &str = "Course <Site> & \"Co\"";
/// [`CLIENT_NAME`] as the pages must show it.
const CLIENT_NAME_HTML: &str = "Course &#60;Site&#62; &#38; &#34;Co&#34;";
/// The origin of [`REDIRECT`].
const LMS: &str = "https://lms.example.edu";
/// A state with characters that need escaping in HTML and in URLs.
const STATE: &str = "s1 <&> \"q\" 'a'=b";
/// RFC 7636 Appendix B.
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
const AUTHORIZE: &str = "/api/oauth/authorize";
const LOGIN: &str = "/api/oauth/login";

// ---------------------------------------------------------------------------------------
// A hand-driven browser.

/// One HTTP answer, body as text.
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

    fn location(&self) -> Option<&str> {
        self.headers.get("location").map(|v| v.to_str().unwrap())
    }

    /// The `Set-Cookie` of cookie `name`, if any.
    fn set_cookie(&self, name: &str) -> Option<SetCookie> {
        self.headers
            .get_all("set-cookie")
            .iter()
            .map(|v| v.to_str().unwrap())
            .find_map(|c| {
                let mut parts = c.split(';').map(str::trim);
                let (n, v) = parts.next()?.split_once('=')?;
                (n == name).then(|| SetCookie {
                    value: v.to_owned(),
                    attributes: parts.map(str::to_ascii_lowercase).collect(),
                })
            })
    }

    /// The hidden fields of the page's forms, HTML-unescaped.
    fn hidden(&self) -> Vec<(String, String)> {
        self.body
            .split('<')
            .filter(|t| t.starts_with("input "))
            .map(|t| t.split('>').next().unwrap())
            .filter(|t| attribute(t, "type").as_deref() == Some("hidden"))
            .map(|t| {
                (
                    attribute(t, "name").expect("hidden field without a name"),
                    attribute(t, "value").unwrap_or_default(),
                )
            })
            .collect()
    }

    fn hidden_value(&self, name: &str) -> Option<String> {
        self.hidden()
            .into_iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    }

    /// The query parameters of the `Location` (relative ones resolved against `base`).
    fn location_params(&self, base: &str) -> Vec<(String, String)> {
        let location = self.location().expect("no Location");
        let url = Url::parse(base).unwrap().join(location).unwrap();
        url.query_pairs()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    }
}

/// A parsed `Set-Cookie`: the value and the lower-cased attributes (`httponly`, `path=/`).
#[derive(Debug)]
struct SetCookie {
    value: String,
    attributes: Vec<String>,
}

impl SetCookie {
    fn has(&self, attribute: &str) -> bool {
        self.attributes.iter().any(|a| a == attribute)
    }

    fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find_map(|a| a.strip_prefix(key)?.strip_prefix('='))
    }
}

/// The value of `name="..."` in a tag, unescaped.
fn attribute(tag: &str, name: &str) -> Option<String> {
    let needle = format!(" {name}=\"");
    let start = tag.find(&needle)? + needle.len();
    let len = tag[start..].find('"')?;
    Some(html_unescape(&tag[start..start + len]))
}

/// Decodes the character references askama writes (`&amp;`, `&#34;`, ...).
pub(crate) fn html_unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let end = tail.find(';').expect("unterminated character reference");
        let entity = &tail[1..end];
        let c = match entity {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            "apos" => '\'',
            _ => {
                let code = match entity.strip_prefix("#x").or(entity.strip_prefix("#X")) {
                    Some(hex) => u32::from_str_radix(hex, 16).unwrap(),
                    None => entity.strip_prefix('#').unwrap().parse().unwrap(),
                };
                char::from_u32(code).unwrap()
            }
        };
        out.push(c);
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    out
}

/// A browser: a cookie jar over the app's client (which follows no redirect).
struct Browser<'a> {
    app: &'a OAuthApp,
    cookies: Vec<(String, String)>,
}

impl<'a> Browser<'a> {
    fn new(app: &'a OAuthApp) -> Self {
        Self {
            app,
            cookies: Vec::new(),
        }
    }

    fn cookie(&self, name: &str) -> Option<&str> {
        self.cookies
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn set(&mut self, name: &str, value: &str) {
        self.cookies.retain(|(k, _)| k != name);
        self.cookies.push((name.to_owned(), value.to_owned()));
    }

    async fn send(&mut self, mut req: reqwest::RequestBuilder) -> Page {
        if !self.cookies.is_empty() {
            let header: Vec<String> = self
                .cookies
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            req = req.header("Cookie", header.join("; "));
        }
        let res = req.send().await.unwrap();
        let page = Page {
            status: res.status(),
            headers: res.headers().clone(),
            body: res.text().await.unwrap(),
        };
        for name in ["medialib_login", "medialib_session"] {
            if let Some(c) = page.set_cookie(name) {
                self.cookies.retain(|(k, _)| k != name);
                if c.attribute("max-age") != Some("0") {
                    self.cookies.push((name.to_owned(), c.value));
                }
            }
        }
        page
    }

    async fn get(&mut self, path: &str) -> Page {
        let req = self.app.api.app.client.get(self.app.url(path));
        self.send(req).await
    }

    async fn post(&mut self, path: &str, form: &[(String, String)]) -> Page {
        let req = self.app.api.app.client.post(self.app.url(path)).form(form);
        self.send(req).await
    }

    /// `GET /api/oauth/authorize?query`.
    async fn authorize(&mut self, query: &[(&str, &str)]) -> Page {
        self.get(&authorize_path(query)).await
    }

    /// Fills in the sign-in form of `page` and submits it.
    async fn sign_in(&mut self, page: &Page, username: &str, password: &str) -> Page {
        let mut form = page.hidden();
        form.push(("username".into(), username.into()));
        form.push(("password".into(), password.into()));
        self.post(LOGIN, &form).await
    }

    /// The consent page of the authorize request `query`: signs in as `username` first
    /// unless this browser is signed in already.
    async fn consent(&mut self, query: &[(&str, &str)], username: &str) -> Page {
        let page = self.authorize(query).await;
        assert_eq!(page.status, StatusCode::OK, "{page:?}");
        if !page.body.contains(r#"action="/api/oauth/login""#) {
            return page;
        }
        let signed_in = self.sign_in(&page, username, PASSWORD).await;
        assert_eq!(signed_in.status, StatusCode::SEE_OTHER, "{signed_in:?}");
        let consent = self.get(signed_in.location().unwrap()).await;
        assert_eq!(consent.status, StatusCode::OK, "{consent:?}");
        consent
    }

    /// Submits the consent form of `page` with `decision`.
    async fn decide(&mut self, page: &Page, decision: &str) -> Page {
        let mut form = page.hidden();
        form.push(("decision".into(), decision.into()));
        self.post(AUTHORIZE, &form).await
    }
}

/// `/api/oauth/authorize?...` with `query` form-encoded.
fn authorize_path(query: &[(&str, &str)]) -> String {
    let url = Url::parse_with_params(&format!("http://x{AUTHORIZE}"), query).unwrap();
    format!("{AUTHORIZE}?{}", url.query().unwrap_or_default())
}

/// A code-flow request of `client` with [`STATE`], plus `extra` parameters.
fn request<'a>(
    client: &'a ClientCredentials,
    extra: &[(&'a str, &'a str)],
) -> Vec<(&'a str, &'a str)> {
    let mut q = vec![
        ("response_type", "code"),
        ("client_id", client.client_id.as_str()),
        ("redirect_uri", REDIRECT),
        ("state", STATE),
    ];
    q.extend_from_slice(extra);
    q
}

/// `query` with the value of `name` replaced.
fn replaced<K: PartialEq + Clone, V: Clone>(query: &[(K, V)], name: K, value: V) -> Vec<(K, V)> {
    query
        .iter()
        .map(|(k, v)| {
            let v = if *k == name { value.clone() } else { v.clone() };
            (k.clone(), v)
        })
        .collect()
}

/// `query` without `name`.
fn without<'a>(query: &[(&'a str, &'a str)], name: &str) -> Vec<(&'a str, &'a str)> {
    query.iter().copied().filter(|(k, _)| *k != name).collect()
}

fn value<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

// ---------------------------------------------------------------------------------------
// What every page must carry.

/// The headers of every page of the authorization endpoint, and no resource from elsewhere.
fn assert_page(p: &Page, form_action: &str) {
    assert!(p.header("content-type").starts_with("text/html"), "{p:?}");
    assert_eq!(p.header("x-frame-options"), "DENY", "{p:?}");
    let csp = p.header("content-security-policy");
    for directive in [
        "frame-ancestors 'none'",
        "default-src 'none'",
        "style-src 'self'",
        "base-uri 'none'",
        form_action,
    ] {
        assert!(
            csp.split(';').any(|d| d.trim() == directive),
            "CSP {csp:?} lacks {directive:?}"
        );
    }
    assert_eq!(p.header("referrer-policy"), "no-referrer");
    assert_eq!(p.header("cache-control"), "no-store");
    assert_eq!(p.header("pragma"), "no-cache");
    assert_eq!(p.header("x-content-type-options"), "nosniff");
    assert!(
        !p.headers.contains_key("access-control-allow-origin"),
        "{p:?}"
    );
    assert!(!p.body.contains("<script"), "no JavaScript: {}", p.body);
    assert!(p.body.contains("<html lang=\"en\">"), "{}", p.body);
    assert!(
        p.body.contains("<title>") && p.body.contains("<h1>"),
        "{}",
        p.body
    );
    // Every referenced resource and form target is on this service (RFC 9700 §4.2.4).
    for attr in [" src=\"", " href=\"", " action=\""] {
        for (i, _) in p.body.match_indices(attr) {
            let value = &p.body[i + attr.len()..];
            let value = &value[..value.find('"').unwrap()];
            assert!(
                value.starts_with('/') && !value.starts_with("//"),
                "{attr:?}{value:?} is not same-origin in {}",
                p.body
            );
        }
    }
}

/// An error page: HTML with the page headers, no redirect.
fn assert_error_page(p: &Page, status: StatusCode) {
    assert_eq!(p.status, status, "{p:?}");
    assert!(
        p.location().is_none(),
        "an error page never redirects: {p:?}"
    );
    assert_page(p, "form-action 'none'");
}

/// The 303 (never 307) after a form POST, not cached.
fn assert_see_other(p: &Page) {
    assert_eq!(p.status, StatusCode::SEE_OTHER, "{p:?}");
    assert_eq!(p.header("cache-control"), "no-store");
    assert_eq!(p.header("referrer-policy"), "no-referrer");
}

/// A redirect to the client with `error`, the state when `state` is given, `iss`, no code.
fn assert_error_redirect(app: &OAuthApp, p: &Page, error: &str, state: Option<&str>) {
    let location = p.location().unwrap_or_else(|| panic!("no redirect: {p:?}"));
    assert!(location.starts_with(&format!("{REDIRECT}?")), "{location}");
    let params = p.location_params(app.base());
    assert_eq!(value(&params, "error"), Some(error), "{location}");
    assert!(value(&params, "error_description").is_some_and(|d| !d.is_empty()));
    assert_eq!(value(&params, "state"), state, "{location}");
    assert_eq!(value(&params, "iss"), Some(app.base()), "{location}");
    assert_eq!(value(&params, "code"), None, "never a code: {location}");
    assert!(
        !location.contains('#'),
        "no fragment (no implicit flow): {location}"
    );
}

struct Setup {
    app: OAuthApp,
    client: ClientCredentials,
}

async fn setup(b: Backend) -> Setup {
    setup_with(b, |l| l).await
}

async fn setup_with(
    b: Backend,
    configure: impl FnOnce(
        medialib::configuration::SettingsLoader,
    ) -> medialib::configuration::SettingsLoader,
) -> Setup {
    let app = OAuthApp::start_with(b, configure).await;
    let client = app.register(CLIENT_NAME, &[REDIRECT], false);
    app.user_with_password("ada", PASSWORD);
    Setup { app, client }
}

// ---------------------------------------------------------------------------------------
// The sign-in page and form.

async fn sign_in_page_carries_the_request_and_a_bound_csrf_token(b: Backend) {
    let Setup { app, client } = setup(b).await;
    let mut browser = Browser::new(&app);
    let query = request(
        &client,
        &[
            ("scope", "read write"),
            ("access_type", "offline"),
            ("code_challenge", CHALLENGE),
            ("code_challenge_method", "S256"),
        ],
    );
    let page = browser.authorize(&query).await;
    assert_eq!(page.status, StatusCode::OK, "{page:?}");
    assert_page(&page, "form-action 'self'");
    for markup in [
        r#"<form class="sign-in" method="post" action="/api/oauth/login">"#,
        r#"<label for="username">Username</label>"#,
        r#"<input id="username" name="username" autocomplete="username" autofocus required>"#,
        r#"<label for="password">Password</label>"#,
        r#"<input id="password" name="password" type="password" autocomplete="current-password" required>"#,
        r#"<button type="submit">Sign in</button>"#,
        CLIENT_NAME_HTML,
    ] {
        assert!(
            page.body.contains(markup),
            "{markup} missing in {}",
            page.body
        );
    }
    assert!(!page.body.contains("role=\"alert\""), "{}", page.body);
    // Every authorize parameter rides along, unchanged, plus the CSRF token.
    let mut hidden = page.hidden();
    let token = hidden.remove(0);
    assert_eq!(token.0, "csrf_token");
    let mut expected: Vec<(String, String)> = query
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    expected.sort();
    hidden.sort();
    assert_eq!(hidden, expected);
    // The form cookie binds the token: HttpOnly, Lax, scoped to the OAuth paths, not Secure
    // over plain http.
    let cookie = page
        .set_cookie("medialib_login")
        .expect("no medialib_login cookie");
    assert!(cookie.value.starts_with("mlf_"), "{cookie:?}");
    assert!(
        cookie.has("httponly") && cookie.has("samesite=lax"),
        "{cookie:?}"
    );
    assert_eq!(cookie.attribute("path"), Some("/api/oauth"));
    assert!(!cookie.has("secure"), "{cookie:?}");
    assert!(!token.1.is_empty() && token.1 != cookie.value);
    assert_eq!(
        token.1,
        medialib_domain::csrf_token(&medialib_domain::Secret::new(cookie.value.clone()))
    );
    assert!(
        !page.body.contains(&cookie.value),
        "the cookie is not in the page"
    );
    // Each visit gets a fresh form cookie.
    let again = browser.authorize(&query).await;
    assert_ne!(
        again.set_cookie("medialib_login").unwrap().value,
        cookie.value
    );
    // The stylesheet the page links to is served here.
    assert!(
        page.body
            .contains(r#"<link rel="stylesheet" href="/assets/authorize.css">"#)
    );
    let css = app.api.app.get("/assets/authorize.css").await;
    assert_eq!(css.status(), StatusCode::OK);
    assert!(
        css.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/css")
    );
    // Focus stays visible for keyboard use: the style every page shares (site.css, linked
    // before the page's own).
    assert!(
        page.body
            .contains(r#"<link rel="stylesheet" href="/assets/site.css">"#)
    );
    let site = app.api.app.get("/assets/site.css").await;
    assert!(site.text().await.unwrap().contains(":focus-visible"));
    // HEAD is GET without a body.
    let head = app
        .api
        .app
        .client
        .head(app.url(&authorize_path(&query)))
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), StatusCode::OK);
    assert_eq!(head.headers()["x-frame-options"], "DENY");
}

async fn cookies_are_secure_when_the_service_is_https(b: Backend) {
    let Setup { app, client } =
        setup_with(b, |l| l.set("base_url", "https://media.example.edu")).await;
    let mut browser = Browser::new(&app);
    let page = browser.authorize(&request(&client, &[])).await;
    assert_eq!(page.status, StatusCode::OK, "{page:?}");
    let cookie = page.set_cookie("medialib_login").unwrap();
    assert!(cookie.has("secure"), "{cookie:?}");
    let signed_in = browser.sign_in(&page, "ada", PASSWORD).await;
    assert_see_other(&signed_in);
    let session = signed_in.set_cookie("medialib_session").unwrap();
    assert!(
        session.has("secure") && session.has("httponly"),
        "{session:?}"
    );
    assert!(
        signed_in
            .set_cookie("medialib_login")
            .unwrap()
            .has("secure")
    );
}

async fn a_wrong_password_shows_the_form_again(b: Backend) {
    let Setup { app, client } = setup(b).await;
    let mut browser = Browser::new(&app);
    let page = browser.authorize(&request(&client, &[])).await;
    let wrong = browser.sign_in(&page, "ada", "not the password").await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED, "{wrong:?}");
    assert_page(&wrong, "form-action 'self'");
    assert!(
        wrong
            .body
            .contains(r#"role="alert" id="sign-in-error">Wrong username or password.</p>"#),
        "{}",
        wrong.body
    );
    assert!(
        wrong.body.contains(r#"value="ada""#),
        "the username is kept: {}",
        wrong.body
    );
    assert!(!wrong.body.contains("not the password"));
    assert!(wrong.set_cookie("medialib_session").is_none());
    assert!(browser.cookie("medialib_session").is_none());
    // An unknown account reads the same.
    let unknown = browser.sign_in(&wrong, "nobody", PASSWORD).await;
    assert_eq!(unknown.status, StatusCode::UNAUTHORIZED);
    assert!(unknown.body.contains("Wrong username or password."));
    // An empty password never reaches the directory.
    let empty = browser.sign_in(&page, "ada", "").await;
    assert_eq!(empty.status, StatusCode::BAD_REQUEST, "{empty:?}");
    assert!(empty.body.contains("Enter your username and password."));
    // The form shown again still works.
    let right = browser.sign_in(&unknown, "ada", PASSWORD).await;
    assert_see_other(&right);
}

async fn signing_in_starts_a_fresh_session_and_returns_to_authorize(b: Backend) {
    let Setup { app, client } = setup(b).await;
    let query = request(&client, &[("scope", "read"), ("access_type", "offline")]);
    let mut browser = Browser::new(&app);
    let page = browser.authorize(&query).await;
    // A session cookie the browser already holds (say, planted by an attacker) is not adopted.
    let planted = "mlb_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    browser.set("medialib_session", planted);
    let signed_in = browser.sign_in(&page, "ada", PASSWORD).await;
    assert_see_other(&signed_in);
    assert!(signed_in.body.is_empty());
    // Back to the authorize page with the same parameters.
    let location = signed_in.location().unwrap();
    assert!(location.starts_with("/api/oauth/authorize?"), "{location}");
    let mut back = signed_in.location_params(app.base());
    let mut sent: Vec<(String, String)> = query
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    back.sort();
    sent.sort();
    assert_eq!(back, sent);
    let session = signed_in.set_cookie("medialib_session").unwrap();
    assert!(session.value.starts_with("mlb_") && session.value != planted);
    assert!(
        session.has("httponly") && session.has("samesite=lax"),
        "{session:?}"
    );
    assert!(!session.has("secure"), "plain http: {session:?}");
    assert_eq!(session.attribute("path"), Some("/"));
    let max_age: i64 = session.attribute("max-age").unwrap().parse().unwrap();
    assert!((1..=8 * 3600).contains(&max_age), "{session:?}");
    // The form cookie is spent.
    let login = signed_in.set_cookie("medialib_login").unwrap();
    assert_eq!(login.attribute("max-age"), Some("0"));
    assert_eq!(login.attribute("path"), Some("/api/oauth"));
    assert!(browser.cookie("medialib_login").is_none());
    // Every sign-in gets a new session value.
    let mut other = Browser::new(&app);
    let page = other.authorize(&query).await;
    let second = other.sign_in(&page, "ada", PASSWORD).await;
    assert_see_other(&second);
    assert_ne!(
        second.set_cookie("medialib_session").unwrap().value,
        session.value
    );
    // The session works: the same request now asks for consent.
    let consent = browser.get(location).await;
    assert_eq!(consent.status, StatusCode::OK);
    assert!(
        consent.body.contains("name=\"decision\" value=\"approve\""),
        "{}",
        consent.body
    );
}

// ---------------------------------------------------------------------------------------
// The consent page and form.

async fn the_consent_page_names_client_scopes_and_offline_access(b: Backend) {
    let Setup { app, client } = setup(b).await;
    let mut browser = Browser::new(&app);
    let query = request(&client, &[("access_type", "offline")]);
    let consent = browser.consent(&query, "ada").await;
    // The redirect that follows the POST goes to the client: form-action allows its origin.
    assert_page(&consent, &format!("form-action 'self' {LMS}"));
    for text in [
        CLIENT_NAME_HTML,
        "See your media libraries and objects",
        "Change your media libraries and objects",
        "Keep access when you are not using it (offline access: a refresh token)",
        "Signed in as <strong>Ada ada</strong> (ada)",
        r#"<form method="post" action="/api/oauth/authorize">"#,
        r#"<button type="submit" name="decision" value="approve">Approve</button>"#,
        r#"<button type="submit" name="decision" value="deny">Deny</button>"#,
        LMS,
    ] {
        assert!(
            consent.body.contains(text),
            "{text} missing in {}",
            consent.body
        );
    }
    assert!(
        !consent.body.contains(CLIENT_NAME),
        "the client name is escaped"
    );
    // The CSRF token is bound to the session cookie.
    let session = browser.cookie("medialib_session").unwrap().to_owned();
    assert_eq!(
        consent.hidden_value("csrf_token").unwrap(),
        medialib_domain::csrf_token(&medialib_domain::Secret::new(session.clone()))
    );
    assert!(!consent.body.contains(&session));
    assert_eq!(consent.hidden_value("state").as_deref(), Some(STATE));
    assert_eq!(
        consent.hidden_value("access_type").as_deref(),
        Some("offline")
    );

    // Read only, online: no write line, no offline line.
    let page = browser
        .authorize(&request(&client, &[("scope", "read")]))
        .await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("See your media libraries and objects"));
    assert!(
        !page.body.contains("Change your media libraries"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("offline access"), "{}", page.body);
    assert!(page.body.contains("It does not ask to keep access"));
}

async fn approving_redirects_with_a_code_that_exchanges(b: Backend) {
    let Setup { app, client } = setup(b).await;
    let mut browser = Browser::new(&app);
    let query = request(
        &client,
        &[
            ("access_type", "offline"),
            ("code_challenge", CHALLENGE),
            ("code_challenge_method", "S256"),
        ],
    );
    let consent = browser.consent(&query, "ada").await;
    let approved = browser.decide(&consent, "approve").await;
    assert_see_other(&approved);
    let location = approved.location().unwrap();
    assert!(
        location.starts_with(&format!("{REDIRECT}?code=")),
        "{location}"
    );
    let params = approved.location_params(app.base());
    let keys: Vec<&str> = params.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["code", "state", "iss"]);
    assert_eq!(value(&params, "state"), Some(STATE));
    assert_eq!(value(&params, "iss"), Some(app.base()));
    let code = value(&params, "code").unwrap();
    assert!(code.starts_with("mlc_"), "{code}");
    let tokens = app
        .api
        .services
        .oauth()
        .exchange_code(&client, code, Some(REDIRECT), Some(VERIFIER))
        .unwrap();
    assert!(
        tokens.refresh_token.is_some(),
        "offline access was approved"
    );
    assert_eq!(tokens.scope.to_string(), "read write");
    assert!(
        app.api
            .services
            .oauth()
            .exchange_code(&client, code, Some(REDIRECT), Some(VERIFIER))
            .is_err(),
        "a code is single use"
    );

    // Without access_type=offline there is no refresh token.
    let consent = browser
        .consent(&request(&client, &[("scope", "read")]), "ada")
        .await;
    let approved = browser.decide(&consent, "approve").await;
    assert_see_other(&approved);
    let params = approved.location_params(app.base());
    let tokens = app
        .api
        .services
        .oauth()
        .exchange_code(
            &client,
            value(&params, "code").unwrap(),
            Some(REDIRECT),
            None,
        )
        .unwrap();
    assert!(tokens.refresh_token.is_none());
    assert_eq!(tokens.scope.to_string(), "read");
}

async fn denying_redirects_with_access_denied(b: Backend) {
    let Setup { app, client } = setup(b).await;
    let mut browser = Browser::new(&app);
    let consent = browser.consent(&request(&client, &[]), "ada").await;
    let denied = browser.decide(&consent, "deny").await;
    assert_see_other(&denied);
    assert_error_redirect(&app, &denied, "access_denied", Some(STATE));
    // Neither approve nor deny: an error page, no redirect.
    let neither = browser.decide(&consent, "maybe").await;
    assert_error_page(&neither, StatusCode::BAD_REQUEST);
}

async fn consent_needs_the_session_and_its_csrf_token(b: Backend) {
    let Setup { app, client } = setup(b).await;
    app.user_with_password("grace", PASSWORD);
    let mut browser = Browser::new(&app);
    let consent = browser.consent(&request(&client, &[]), "ada").await;
    let mut other = Browser::new(&app);
    let other_consent = other.consent(&request(&client, &[]), "grace").await;

    let without = |field: &str| -> Vec<(String, String)> {
        let mut form = consent.hidden();
        form.retain(|(k, _)| k != field);
        form.push(("decision".into(), "approve".into()));
        form
    };
    // No CSRF token.
    let missing = browser.post(AUTHORIZE, &without("csrf_token")).await;
    assert_error_page(&missing, StatusCode::FORBIDDEN);
    assert!(missing.body.contains("expired"), "{}", missing.body);
    // Another session's token (a cross-site form cannot know ours).
    let mut form = without("csrf_token");
    form.push((
        "csrf_token".into(),
        other_consent.hidden_value("csrf_token").unwrap(),
    ));
    let foreign = browser.post(AUTHORIZE, &form).await;
    assert_error_page(&foreign, StatusCode::FORBIDDEN);
    // A garbled one.
    let mut form = without("csrf_token");
    form.push(("csrf_token".into(), "x".repeat(43)));
    assert_error_page(&browser.post(AUTHORIZE, &form).await, StatusCode::FORBIDDEN);
    // No session at all: sign in again.
    let mut stranger = Browser::new(&app);
    let mut form = consent.hidden();
    form.push(("decision".into(), "approve".into()));
    let signed_out = stranger.post(AUTHORIZE, &form).await;
    assert_error_page(&signed_out, StatusCode::UNAUTHORIZED);
    assert!(
        signed_out.body.contains("Sign in again"),
        "{}",
        signed_out.body
    );
    // A session cookie that names no session is the same.
    stranger.set(
        "medialib_session",
        "mlb_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    );
    assert_error_page(
        &stranger.post(AUTHORIZE, &form).await,
        StatusCode::UNAUTHORIZED,
    );
    // The genuine form still works.
    assert_see_other(&browser.decide(&consent, "approve").await);
}

async fn sign_in_needs_the_form_cookie_and_its_csrf_token(b: Backend) {
    let Setup { app, client } = setup(b).await;
    let mut browser = Browser::new(&app);
    let page = browser.authorize(&request(&client, &[])).await;
    let mut form = page.hidden();
    form.retain(|(k, _)| k != "csrf_token");
    form.push(("username".into(), "ada".into()));
    form.push(("password".into(), PASSWORD.into()));
    // No token.
    let missing = browser.post(LOGIN, &form).await;
    assert_error_page(&missing, StatusCode::FORBIDDEN);
    assert!(missing.set_cookie("medialib_session").is_none());
    // Another browser's token.
    let mut other = Browser::new(&app);
    let other_page = other.authorize(&request(&client, &[])).await;
    let mut foreign = form.clone();
    foreign.push((
        "csrf_token".into(),
        other_page.hidden_value("csrf_token").unwrap(),
    ));
    assert_error_page(&browser.post(LOGIN, &foreign).await, StatusCode::FORBIDDEN);
    // The right token without its cookie (a cross-site POST).
    let mut stranger = Browser::new(&app);
    let mut with_token = form.clone();
    with_token.push((
        "csrf_token".into(),
        page.hidden_value("csrf_token").unwrap(),
    ));
    let cookieless = stranger.post(LOGIN, &with_token).await;
    assert_error_page(&cookieless, StatusCode::FORBIDDEN);
    assert!(cookieless.set_cookie("medialib_session").is_none());
    // The genuine form still works.
    assert_see_other(&browser.post(LOGIN, &with_token).await);
}

// ---------------------------------------------------------------------------------------
// Refused requests.

async fn an_untrusted_client_or_redirect_uri_gets_an_error_page(b: Backend) {
    let Setup { app, client } = setup(b).await;
    let mut browser = Browser::new(&app);
    let other = app.register("Other", &["https://other.example/cb"], false);
    let base = request(&client, &[]);
    let cases: Vec<Vec<(&str, &str)>> = vec![
        // Not registered for this client (exact match: no prefix, no extra path or query).
        replaced(&base, "redirect_uri", "https://evil.example/callback"),
        replaced(&base, "redirect_uri", "https://lms.example.edu/callback/x"),
        replaced(
            &base,
            "redirect_uri",
            "https://lms.example.edu/callback?x=1",
        ),
        replaced(&base, "redirect_uri", "http://lms.example.edu/callback"),
        // Another client's URI.
        replaced(&base, "redirect_uri", "https://other.example/cb"),
        // No redirect_uri.
        without(&base, "redirect_uri"),
        // Unknown, missing, or malformed client.
        replaced(&base, "client_id", "0123456789abcdef0123456789abcdef"),
        without(&base, "client_id"),
        replaced(&base, "client_id", "<x>"),
        // A repeated client_id or redirect_uri cannot be trusted either.
        request(&client, &[("client_id", &other.client_id)]),
        request(&client, &[("redirect_uri", REDIRECT)]),
    ];
    for query in &cases {
        let page = browser.authorize(query).await;
        assert_error_page(&page, StatusCode::BAD_REQUEST);
        assert!(
            page.body.contains("Invalid authorization request"),
            "{}",
            page.body
        );
        assert!(page.set_cookie("medialib_login").is_none());
    }
    // Also after signing in, and on the consent POST.
    let consent = browser.consent(&request(&client, &[]), "ada").await;
    let page = browser.authorize(&cases[0]).await;
    assert_error_page(&page, StatusCode::BAD_REQUEST);
    let mut form = replaced(
        &consent.hidden(),
        "redirect_uri".to_owned(),
        "https://evil.example/callback".to_owned(),
    );
    form.push(("decision".into(), "approve".into()));
    assert_error_page(
        &browser.post(AUTHORIZE, &form).await,
        StatusCode::BAD_REQUEST,
    );
    // A malformed query is a 400 page too.
    let page = browser.get("/api/oauth/authorize?client_id=%zz").await;
    assert_error_page(&page, StatusCode::BAD_REQUEST);
}

async fn a_missing_or_invalid_state_is_invalid_request(b: Backend) {
    let Setup { app, client } = setup(b).await;
    let mut browser = Browser::new(&app);
    let long = "s".repeat(600);
    let at_limit = "s".repeat(512);
    let with_state = |state: Option<&'static str>| -> Vec<(&str, &str)> {
        let mut q = request(&client, &[]);
        q.retain(|(k, _)| *k != "state");
        if let Some(s) = state {
            q.push(("state", s));
        }
        q
    };
    for query in [
        with_state(None),
        with_state(Some("tab\there")),
        with_state(Some("caf\u{e9}")),
        with_state(Some("del\u{7f}")),
        // Empty counts as absent (RFC 6749 §3.1).
        with_state(Some("")),
    ] {
        let page = browser.authorize(&query).await;
        assert_eq!(page.status, StatusCode::FOUND, "{query:?}: {page:?}");
        // The state is not echoed: it is what was wrong.
        assert_error_redirect(&app, &page, "invalid_request", None);
    }
    let mut query = with_state(None);
    query.push(("state", &long));
    let page = browser.authorize(&query).await;
    assert_error_redirect(&app, &page, "invalid_request", None);
    // 512 visible characters are fine.
    let mut query = with_state(None);
    query.push(("state", &at_limit));
    let page = browser.authorize(&query).await;
    assert_eq!(page.status, StatusCode::OK, "{page:?}");
}

async fn the_implicit_flow_and_other_bad_requests_go_back_to_the_client(b: Backend) {
    let Setup { app, client } = setup(b).await;
    let mut browser = Browser::new(&app);
    let with = |name: &'static str, value: &'static str| -> Vec<(&str, &str)> {
        let mut q = request(&client, &[]);
        q.retain(|(k, _)| *k != name);
        q.push((name, value));
        q
    };
    for (query, error) in [
        (with("response_type", "token"), "unsupported_response_type"),
        (
            with("response_type", "code token"),
            "unsupported_response_type",
        ),
        (with("scope", "admin"), "invalid_scope"),
        (with("access_type", "forever"), "invalid_request"),
        (with("code_challenge_method", "plain"), "invalid_request"),
    ] {
        let page = browser.authorize(&query).await;
        assert_eq!(page.status, StatusCode::FOUND, "{query:?}: {page:?}");
        assert_eq!(page.header("cache-control"), "no-store");
        assert_error_redirect(&app, &page, error, Some(STATE));
        assert!(!page.location().unwrap().contains("access_token"));
    }
    // A parameter sent twice (RFC 6749 §3.1).
    let page = browser
        .authorize(&request(&client, &[("scope", "read"), ("scope", "write")]))
        .await;
    assert_eq!(page.status, StatusCode::FOUND, "{page:?}");
    assert_error_redirect(&app, &page, "invalid_request", Some(STATE));
    let params = page.location_params(app.base());
    assert_eq!(
        value(&params, "error_description"),
        Some("scope must not be repeated")
    );
    let page = browser
        .authorize(&request(&client, &[("state", "again")]))
        .await;
    assert_error_redirect(&app, &page, "invalid_request", None);
    // Tampering with the consent form after signing in: 303 back to the client, no code.
    let consent = browser.consent(&request(&client, &[]), "ada").await;
    let mut form = replaced(
        &consent.hidden(),
        "response_type".to_owned(),
        "token".to_owned(),
    );
    form.push(("decision".into(), "approve".into()));
    let tampered = browser.post(AUTHORIZE, &form).await;
    assert_see_other(&tampered);
    assert_error_redirect(&app, &tampered, "unsupported_response_type", Some(STATE));
}

// ---------------------------------------------------------------------------------------
// Slowing down and limiting sign-ins.

fn epoch_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn retry_after(p: &Page) -> u32 {
    p.header("retry-after")
        .parse()
        .unwrap_or_else(|_| panic!("no Retry-After: {p:?}"))
}

async fn failed_sign_ins_slow_one_account_down(b: Backend) {
    let Setup { app, client } = setup(b).await;
    app.user_with_password("grace", PASSWORD);
    let query = request(&client, &[]);
    // The service counts in whole seconds: when the sixth attempt lands in a later second
    // than the fifth failure, the one-second wait may be over already; only then is the
    // run repeated, with a fresh account.
    let mut slowed = None;
    for run in 0..3 {
        let account = format!("victim{run}");
        app.user_with_password(&account, PASSWORD);
        let mut browser = Browser::new(&app);
        let page = browser.authorize(&query).await;
        for attempt in 1..5 {
            let p = browser.sign_in(&page, &account, "wrong").await;
            assert_eq!(
                p.status,
                StatusCode::UNAUTHORIZED,
                "attempt {attempt}: {p:?}"
            );
        }
        let start = epoch_seconds();
        let fifth = browser.sign_in(&page, &account, "wrong").await;
        assert_eq!(fifth.status, StatusCode::UNAUTHORIZED, "{fifth:?}");
        // Even the right password waits.
        let sixth = browser.sign_in(&page, &account, PASSWORD).await;
        let end = epoch_seconds();
        if sixth.status == StatusCode::TOO_MANY_REQUESTS {
            slowed = Some(sixth);
            break;
        }
        assert_ne!(
            start, end,
            "the sixth sign-in was not slowed down: {sixth:?}"
        );
    }
    let sixth = slowed.expect("three runs straddled a second boundary");
    assert!(retry_after(&sixth) >= 1);
    assert_page(&sixth, "form-action 'self'");
    assert!(sixth.body.contains("role=\"alert\""), "{}", sixth.body);
    assert!(
        sixth
            .body
            .contains("Too many failed sign-ins for this account")
    );
    assert!(sixth.set_cookie("medialib_session").is_none());
    // Another account is not affected.
    let mut browser = Browser::new(&app);
    let page = browser.authorize(&query).await;
    assert_see_other(&browser.sign_in(&page, "grace", PASSWORD).await);
}

async fn sign_ins_are_rate_limited_per_address(b: Backend) {
    let Setup { app, client } = setup_with(b, |l| l.set("rate_limit_login", "2")).await;
    let mut browser = Browser::new(&app);
    let page = browser.authorize(&request(&client, &[])).await;
    for _ in 0..2 {
        let p = browser.sign_in(&page, "ada", "wrong").await;
        assert_eq!(p.status, StatusCode::UNAUTHORIZED, "{p:?}");
    }
    // The third submission from this address is refused before anything is checked.
    let limited = browser.sign_in(&page, "ada", PASSWORD).await;
    assert_error_page(&limited, StatusCode::TOO_MANY_REQUESTS);
    assert!((1..=60).contains(&retry_after(&limited)), "{limited:?}");
    assert!(limited.set_cookie("medialib_session").is_none());
    // Also for another account, and for a form without a CSRF token.
    let mut other = Browser::new(&app);
    let page = other.authorize(&request(&client, &[])).await;
    assert_error_page(
        &other.sign_in(&page, "grace", PASSWORD).await,
        StatusCode::TOO_MANY_REQUESTS,
    );
    assert_error_page(&other.post(LOGIN, &[]).await, StatusCode::TOO_MANY_REQUESTS);
    // The pages themselves are not limited.
    assert_eq!(
        other.authorize(&request(&client, &[])).await.status,
        StatusCode::OK
    );
}

// ---------------------------------------------------------------------------------------
// Methods and CORS.

async fn other_methods_and_cross_origin_requests(b: Backend) {
    let Setup { app, client } = setup_with(b, |l| l.set("cors_origins", LMS)).await;
    let send = |method: Method, path: &str| {
        app.api
            .app
            .client
            .request(method, app.url(path))
            .header("Origin", LMS)
            .header("Access-Control-Request-Method", "POST")
    };
    let page = |res: reqwest::Response| async move {
        Page {
            status: res.status(),
            headers: res.headers().clone(),
            body: res.text().await.unwrap(),
        }
    };
    // The control: CORS is on for the API.
    let api = page(
        send(Method::OPTIONS, "/api/authenticate")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(api.header("access-control-allow-origin"), LMS, "{api:?}");

    // Neither the authorization endpoint nor its sign-in form answers with CORS headers
    // (RFC 9700 §2.6), whatever the method.
    for (method, path) in [
        (Method::OPTIONS, AUTHORIZE),
        (Method::OPTIONS, "/api/oauth/authorize/"),
        (Method::OPTIONS, LOGIN),
        (Method::GET, AUTHORIZE),
        (Method::POST, AUTHORIZE),
        (Method::POST, LOGIN),
        (Method::PUT, AUTHORIZE),
    ] {
        let p = page(send(method.clone(), path).send().await.unwrap()).await;
        assert!(
            !p.headers
                .keys()
                .any(|k| k.as_str().starts_with("access-control-")),
            "{method} {path}: {p:?}"
        );
    }
    let path = authorize_path(&request(&client, &[]));
    let p = page(send(Method::GET, &path).send().await.unwrap()).await;
    assert_eq!(p.status, StatusCode::OK);
    assert!(p.header("access-control-allow-origin").is_empty(), "{p:?}");

    // OPTIONS answers like elsewhere in the API.
    let options = page(send(Method::OPTIONS, AUTHORIZE).send().await.unwrap()).await;
    assert_eq!(options.status, StatusCode::OK, "{options:?}");
    assert_eq!(options.header("allow"), "GET, HEAD, POST, OPTIONS");
    let options = page(send(Method::OPTIONS, LOGIN).send().await.unwrap()).await;
    assert_eq!(options.header("allow"), "POST, OPTIONS");

    // Other methods: 501 with Allow, as an HTML page.
    for (method, path, allow) in [
        (Method::PUT, AUTHORIZE, "GET, HEAD, POST, OPTIONS"),
        (Method::DELETE, AUTHORIZE, "GET, HEAD, POST, OPTIONS"),
        (Method::GET, LOGIN, "POST, OPTIONS"),
        (Method::PUT, LOGIN, "POST, OPTIONS"),
    ] {
        let p = page(
            app.api
                .app
                .client
                .request(method.clone(), app.url(path))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_error_page(&p, StatusCode::NOT_IMPLEMENTED);
        assert_eq!(p.header("allow"), allow, "{method} {path}");
    }
}

/// A burst of sign-ins waits for its sign-in slots on the async workers, not on blocking
/// threads (`run_as(.., Work::PasswordHash, ..)` in crates/api-actix/src/blocking.rs; the blocking pool is sized for
/// the database pool): every sign-in succeeds, and a request that needs a blocking thread (the
/// authorize page reads the client) is answered while the burst is still being hashed, not
/// after the sign-ins queued ahead of it.
async fn a_burst_of_sign_ins_does_not_hold_up_other_requests(b: Backend) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    const BURST: usize = 48;
    let Setup { app, client } = setup_with(b, |l| l.set("rate_limit_login", "0")).await;
    let query = request(&client, &[]);
    // Each sign-in with its own form and form cookie, as owned requests that tasks can send.
    let mut forms = Vec::new();
    for _ in 0..BURST {
        let mut browser = Browser::new(&app);
        let page = browser.authorize(&query).await;
        assert_eq!(page.status, StatusCode::OK, "{page:?}");
        let mut form = page.hidden();
        form.push(("username".into(), "ada".into()));
        form.push(("password".into(), PASSWORD.into()));
        let cookie = format!(
            "medialib_login={}",
            browser.cookie("medialib_login").unwrap()
        );
        forms.push((cookie, form));
    }
    let done = Arc::new(AtomicUsize::new(0));
    let mut burst = tokio::task::JoinSet::new();
    for (cookie, form) in forms {
        let (http, url, done) = (
            app.api.app.client.clone(),
            app.url(LOGIN),
            Arc::clone(&done),
        );
        burst.spawn(async move {
            let res = http
                .post(url)
                .header("Cookie", cookie)
                .form(&form)
                .send()
                .await;
            done.fetch_add(1, SeqCst);
            res.unwrap().status()
        });
    }
    // Once the burst is under way (its first sign-in answered), one more request.
    while done.load(SeqCst) == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    let before = done.load(SeqCst);
    let page = Browser::new(&app).authorize(&query).await;
    let waited_for = done.load(SeqCst) - before;
    assert_eq!(page.status, StatusCode::OK, "{page:?}");
    while let Some(status) = burst.join_next().await {
        assert_eq!(status.unwrap(), StatusCode::SEE_OTHER);
    }
    assert!(
        waited_for <= 8,
        "the authorize page was answered only after {waited_for} more sign-ins of the burst"
    );
}

medialib_adapters_diesel::backend_tests!(
    async on [sqlite, postgres] with crate::api::run:
    a_burst_of_sign_ins_does_not_hold_up_other_requests,
    sign_in_page_carries_the_request_and_a_bound_csrf_token,
    cookies_are_secure_when_the_service_is_https,
    a_wrong_password_shows_the_form_again,
    signing_in_starts_a_fresh_session_and_returns_to_authorize,
    the_consent_page_names_client_scopes_and_offline_access,
    approving_redirects_with_a_code_that_exchanges,
    denying_redirects_with_access_denied,
    consent_needs_the_session_and_its_csrf_token,
    sign_in_needs_the_form_cookie_and_its_csrf_token,
    an_untrusted_client_or_redirect_uri_gets_an_error_page,
    a_missing_or_invalid_state_is_invalid_request,
    the_implicit_flow_and_other_bad_requests_go_back_to_the_client,
    failed_sign_ins_slow_one_account_down,
    sign_ins_are_rate_limited_per_address,
    other_methods_and_cross_origin_requests,
);
