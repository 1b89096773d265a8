//! The `header` sign-in mode over real HTTP, on SQLite and PostgreSQL (DECISIONS.md §6,
//! docs/sso.md): an authenticating reverse proxy in `trusted_proxies` names the user in
//! `sso_header`. The test client connects from 127.0.0.1, so it plays the proxy when
//! `trusted_proxies` holds 127.0.0.1 and a forger when it does not.

use medialib_domain::UniqueId;
use medialib_ports::services::ClientCredentials;
use reqwest::header::HeaderMap;
use reqwest::{RequestBuilder, StatusCode};
use serde_json::Value;

use super::{Backend, OAuthApp};
use crate::api::REDIRECT;

medialib_adapters_diesel::backend_tests!(
    async on [sqlite, postgres] with crate::api::run:
    a_trusted_proxy_signs_the_user_in_and_the_flow_completes,
    the_header_name_is_configurable,
    a_header_from_an_untrusted_address_is_refused,
    a_missing_header_is_a_401_page,
    an_unacceptable_identity_is_refused,
    there_is_no_password_form_in_header_mode,
    an_untrusted_client_still_gets_the_error_page_first,
    the_proxy_header_wins_over_a_session_left_in_the_browser,
    the_sites_sign_in_takes_the_proxys_header_too,
);

const AUTHORIZE: &str = "/api/oauth/authorize";
const STATE: &str = "header-state-1";

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

    /// The value of the `Set-Cookie` for cookie `name`, if any.
    fn set_cookie(&self, name: &str) -> Option<String> {
        self.headers
            .get_all("set-cookie")
            .iter()
            .map(|v| v.to_str().unwrap())
            .find_map(|c| {
                let (n, v) = c.split(';').next()?.split_once('=')?;
                (n == name).then(|| v.to_owned())
            })
    }

    /// The hidden fields of the page's form, HTML-unescaped.
    fn hidden(&self) -> Vec<(String, String)> {
        self.body
            .split("<input ")
            .skip(1)
            .map(|t| t.split('>').next().unwrap())
            .filter(|t| t.contains(r#"type="hidden""#))
            .map(|t| (attribute(t, "name"), attribute(t, "value")))
            .collect()
    }

    /// An HTML error page of the authorization endpoint: the status, the security headers,
    /// no redirect to the client and no session started.
    fn assert_error_page(&self, status: StatusCode) {
        assert_eq!(self.status, status, "{self:?}");
        assert!(
            self.header("content-type").starts_with("text/html"),
            "{self:?}"
        );
        assert_eq!(self.header("cache-control"), "no-store");
        assert_eq!(self.header("x-frame-options"), "DENY");
        assert!(self.headers.get("location").is_none(), "{self:?}");
        assert_eq!(self.set_cookie("medialib_session"), None, "{self:?}");
        assert_no_password_form(self);
    }
}

/// The value of `name="..."` in a tag, with the character references askama writes undone.
fn attribute(tag: &str, name: &str) -> String {
    let needle = format!(" {name}=\"");
    let start = tag.find(&needle).unwrap() + needle.len();
    let len = tag[start..].find('"').unwrap();
    let mut out = String::new();
    let mut rest = &tag[start..start + len];
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let end = rest[i..].find(';').unwrap() + i;
        let code: u32 = match &rest[i + 1..end] {
            "amp" => 38,
            "lt" => 60,
            "gt" => 62,
            "quot" => 34,
            numeric => numeric.strip_prefix('#').unwrap().parse().unwrap(),
        };
        out.push(char::from_u32(code).unwrap());
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

fn assert_no_password_form(page: &Page) {
    assert!(
        !page.body.contains(r#"type="password""#) && !page.body.contains("/api/oauth/login"),
        "the password form must never show in header mode: {}",
        page.body
    );
}

/// The app in `header` mode, trusting `proxies`, with extra settings, and a client.
async fn start(
    b: Backend,
    proxies: &str,
    configure: impl FnOnce(
        medialib::configuration::SettingsLoader,
    ) -> medialib::configuration::SettingsLoader,
) -> (OAuthApp, ClientCredentials) {
    let proxies = proxies.to_owned();
    let app = OAuthApp::start_with(b, move |l| {
        configure(l.set("sso", "header").set("trusted_proxies", proxies))
    })
    .await;
    let client = app.register("Course Site", &[REDIRECT], false);
    (app, client)
}

async fn send(req: RequestBuilder) -> Page {
    let res = req.send().await.unwrap();
    Page {
        status: res.status(),
        headers: res.headers().clone(),
        body: res.text().await.unwrap(),
    }
}

/// `GET /api/oauth/authorize` for `client` with `headers`.
async fn authorize(app: &OAuthApp, client: &ClientCredentials, headers: &[(&str, &str)]) -> Page {
    let mut req = app.api.app.client.get(app.url(AUTHORIZE)).query(&[
        ("response_type", "code"),
        ("client_id", client.client_id.as_str()),
        ("redirect_uri", REDIRECT),
        ("state", STATE),
        ("scope", "read write"),
    ]);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    send(req).await
}

/// Approves the consent `page` with the session cookie `session`; the code from the redirect.
async fn approve(app: &OAuthApp, page: &Page, session: &str) -> String {
    let mut form = page.hidden();
    form.push(("decision".into(), "approve".into()));
    let answer = send(
        app.api
            .app
            .client
            .post(app.url(AUTHORIZE))
            .header("Cookie", format!("medialib_session={session}"))
            .form(&form),
    )
    .await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{answer:?}");
    let location = reqwest::Url::parse(answer.header("location")).unwrap();
    assert!(location.as_str().starts_with(REDIRECT), "{location}");
    let param = |name: &str| {
        location
            .query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    assert_eq!(param("state").as_deref(), Some(STATE));
    param("code").expect("no code in the redirect")
}

/// Redeems `code` for `client`: the access token.
async fn redeem(app: &OAuthApp, client: &ClientCredentials, code: &str) -> String {
    let secret = client.client_secret.as_ref().unwrap().expose().to_owned();
    let answer = app
        .api
        .send(
            app.api
                .app
                .client
                .post(app.url("/api/oauth/access_token"))
                .form(&[
                    ("grant_type", "authorization_code"),
                    ("code", code),
                    ("redirect_uri", REDIRECT),
                    ("client_id", client.client_id.as_str()),
                    ("client_secret", secret.as_str()),
                ]),
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{answer:?}");
    answer.json["access_token"].as_str().unwrap().to_owned()
}

/// The user with `unique_id`, if there is one.
fn user(app: &OAuthApp, unique_id: &str) -> Option<medialib_domain::User> {
    app.api
        .services
        .store()
        .user_by_unique_id(&UniqueId::parse(unique_id).unwrap())
        .unwrap()
}

/// The whole flow as the user the proxy names: consent page at once (the user is
/// provisioned), approve, code, token, and an API call that knows the user.
async fn a_trusted_proxy_signs_the_user_in_and_the_flow_completes(b: Backend) {
    let (app, client) = start(b, "127.0.0.1/32", |l| l).await;
    assert!(user(&app, "carol@uni.example").is_none());
    let page = authorize(&app, &client, &[("Remote-User", " carol@uni.example ")]).await;
    assert_eq!(page.status, StatusCode::OK, "{page:?}");
    assert_no_password_form(&page);
    assert!(page.body.contains("Course Site"), "{}", page.body);
    assert!(page.body.contains("carol@uni.example"), "{}", page.body);
    assert!(page.body.contains(r#"value="approve""#), "{}", page.body);
    assert_eq!(page.header("cache-control"), "no-store");
    assert_eq!(page.header("x-frame-options"), "DENY");
    let session = page
        .set_cookie("medialib_session")
        .expect("no session cookie");
    let carol = user(&app, "carol@uni.example").expect("the user was not provisioned");

    // With the session, the consent page comes back without a new sign-in.
    let again = send(
        app.api
            .app
            .client
            .get(app.url(AUTHORIZE))
            .query(&[
                ("response_type", "code"),
                ("client_id", client.client_id.as_str()),
                ("redirect_uri", REDIRECT),
                ("state", STATE),
            ])
            .header("Cookie", format!("medialib_session={session}")),
    )
    .await;
    assert_eq!(again.status, StatusCode::OK, "{again:?}");
    assert_eq!(again.set_cookie("medialib_session"), None);
    assert!(again.body.contains("carol@uni.example"));

    let code = approve(&app, &page, &session).await;
    let token = redeem(&app, &client, &code).await;
    let info = app.api.get("/api/oauth/authorize/", Some(&token)).await;
    assert_eq!(info.status, StatusCode::OK, "{info:?}");
    assert_eq!(info.json["userId"], Value::from(carol.id.to_string()));
    assert_eq!(
        info.json["client_id"],
        Value::from(client.client_id.clone())
    );
    let library = app.api.library(&token, "Carol's library").await;
    let me = app
        .api
        .get(&format!("/api/user/c/{library}/o/0"), Some(&token))
        .await;
    assert_eq!(me.status, StatusCode::OK, "{me:?}");
    assert_eq!(me.json["uniqueId"], "carol@uni.example", "{me:?}");

    // A second sign-in by the proxy finds the same user.
    let later = authorize(&app, &client, &[("Remote-User", "carol@uni.example")]).await;
    assert_eq!(later.status, StatusCode::OK, "{later:?}");
    assert_eq!(user(&app, "carol@uni.example").unwrap().id, carol.id);
}

/// `sso_header` chooses the header; the default `Remote-User` then means nothing.
async fn the_header_name_is_configurable(b: Backend) {
    let (app, client) = start(b, "10.0.0.0/8, 127.0.0.1", |l| {
        l.set("sso_header", "X-Auth-User")
    })
    .await;
    let page = authorize(&app, &client, &[("Remote-User", "mallory")]).await;
    page.assert_error_page(StatusCode::UNAUTHORIZED);
    let page = authorize(
        &app,
        &client,
        &[("Remote-User", "mallory"), ("x-auth-user", "dave")],
    )
    .await;
    assert_eq!(page.status, StatusCode::OK, "{page:?}");
    assert!(page.body.contains("dave"), "{}", page.body);
    assert!(!page.body.contains("mallory"), "{}", page.body);
    assert!(user(&app, "dave").is_some());
    assert!(user(&app, "mallory").is_none());
}

/// A peer that is not a configured proxy cannot sign anyone in, not even by claiming in
/// `X-Forwarded-For` / `Forwarded` that it is one.
async fn a_header_from_an_untrusted_address_is_refused(b: Backend) {
    let (app, client) = start(b, "10.0.0.1", |l| l).await;
    for headers in [
        vec![("Remote-User", "eve")],
        vec![("Remote-User", "eve"), ("X-Forwarded-For", "10.0.0.1")],
        vec![("Remote-User", "eve"), ("Forwarded", "for=10.0.0.1")],
        vec![("Remote-User", "eve"), ("X-Real-IP", "10.0.0.1")],
    ] {
        let page = authorize(&app, &client, &headers).await;
        page.assert_error_page(StatusCode::FORBIDDEN);
        assert!(page.body.contains("Sign-in refused"), "{}", page.body);
    }
    assert!(user(&app, "eve").is_none(), "no user was provisioned");
}

/// No header (or a blank one): the request did not come through the proxy. A clear 401 page,
/// nothing to the client, and the person can retry.
async fn a_missing_header_is_a_401_page(b: Backend) {
    let (app, client) = start(b, "127.0.0.1/32", |l| l).await;
    for headers in [
        vec![],
        vec![("Remote-User", "")],
        vec![("Remote-User", "   ")],
    ] {
        let page = authorize(&app, &client, &headers).await;
        page.assert_error_page(StatusCode::UNAUTHORIZED);
        assert!(page.body.contains("did not come through"), "{}", page.body);
    }
    // A retry through the proxy works.
    let page = authorize(&app, &client, &[("Remote-User", "frank")]).await;
    assert_eq!(page.status, StatusCode::OK, "{page:?}");
    // The same from an untrusted address.
    let (app, client) = start(b, "10.0.0.1", |l| l).await;
    let page = authorize(&app, &client, &[]).await;
    page.assert_error_page(StatusCode::UNAUTHORIZED);
}

/// The trusted proxy sends a value that is no uniqueId (too long, control characters,
/// the header twice): nobody is signed in.
async fn an_unacceptable_identity_is_refused(b: Backend) {
    let (app, client) = start(b, "127.0.0.1", |l| l).await;
    let long = "x".repeat(300);
    for headers in [
        vec![("Remote-User", long.as_str())],
        vec![("Remote-User", "a\tb")],
        vec![("Remote-User", "gina"), ("Remote-User", "hank")],
    ] {
        let page = authorize(&app, &client, &headers).await;
        page.assert_error_page(StatusCode::UNAUTHORIZED);
        assert!(
            page.body.contains("not one medialib can accept"),
            "{}",
            page.body
        );
    }
    assert!(user(&app, "gina").is_none() && user(&app, "hank").is_none());
}

/// `POST /api/oauth/login` answers 501 in header mode, whatever it carries.
async fn there_is_no_password_form_in_header_mode(b: Backend) {
    let (app, client) = start(b, "127.0.0.1", |l| l).await;
    app.user_with_password("ivan", super::PASSWORD);
    let page = send(
        app.api
            .app
            .client
            .post(app.url("/api/oauth/login"))
            .header("Remote-User", "ivan")
            .form(&[
                ("response_type", "code"),
                ("client_id", client.client_id.as_str()),
                ("redirect_uri", REDIRECT),
                ("state", STATE),
                ("username", "ivan"),
                ("password", super::PASSWORD),
            ]),
    )
    .await;
    page.assert_error_page(StatusCode::NOT_IMPLEMENTED);
    assert!(
        page.body.contains("No password sign-in here"),
        "{}",
        page.body
    );
}

/// The request is validated before anyone is signed in: an unknown client gets the 400 error
/// page even with the proxy's header, and no session.
async fn an_untrusted_client_still_gets_the_error_page_first(b: Backend) {
    let (app, _client) = start(b, "127.0.0.1", |l| l).await;
    let unknown = ClientCredentials {
        client_id: "0123456789abcdef0123456789abcdef".into(),
        client_secret: None,
    };
    let page = authorize(&app, &unknown, &[("Remote-User", "judy")]).await;
    page.assert_error_page(StatusCode::BAD_REQUEST);
    assert!(user(&app, "judy").is_none());
}

/// A shared browser: carol's session is still alive when dave signs in at the proxy. The
/// header names dave, so the consent page is dave's, with a new session, never carol's.
async fn the_proxy_header_wins_over_a_session_left_in_the_browser(b: Backend) {
    let (app, client) = start(b, "127.0.0.1/32", |l| l).await;
    let carol = authorize(&app, &client, &[("Remote-User", "carol@uni.example")]).await;
    let carol_session = carol.set_cookie("medialib_session").unwrap();
    let dave = send(
        app.api
            .app
            .client
            .get(app.url(AUTHORIZE))
            .query(&[
                ("response_type", "code"),
                ("client_id", client.client_id.as_str()),
                ("redirect_uri", REDIRECT),
                ("state", STATE),
            ])
            .header("Cookie", format!("medialib_session={carol_session}"))
            .header("Remote-User", "dave@uni.example"),
    )
    .await;
    assert_eq!(dave.status, StatusCode::OK, "{dave:?}");
    assert!(dave.body.contains("dave@uni.example"), "{}", dave.body);
    assert!(!dave.body.contains("carol@uni.example"), "{}", dave.body);
    let dave_session = dave.set_cookie("medialib_session").expect("a new session");
    assert_ne!(dave_session, carol_session);
}

/// medialib's own `/login` signs in by the proxy's header as the authorize page does, then
/// goes to `next`; without the header it is the same 401 page, and there is no form.
async fn the_sites_sign_in_takes_the_proxys_header_too(b: Backend) {
    let (app, _) = start(b, "127.0.0.1/32", |l| l).await;
    let login = |headers: &[(&str, &str)]| {
        let mut req = app
            .api
            .app
            .client
            .get(app.url("/login"))
            .query(&[("next", "/libraries")]);
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        send(req)
    };
    let signed = login(&[("Remote-User", "dave@uni.example")]).await;
    assert_eq!(signed.status, StatusCode::SEE_OTHER, "{signed:?}");
    assert_eq!(signed.header("location"), "/libraries");
    assert!(
        signed.set_cookie("medialib_session").is_some(),
        "{signed:?}"
    );
    assert!(user(&app, "dave@uni.example").is_some(), "provisioned");
    let without = login(&[]).await;
    assert_eq!(without.status, StatusCode::UNAUTHORIZED, "{without:?}");
    assert_no_password_form(&without);
    assert!(without.set_cookie("medialib_session").is_none());
}
