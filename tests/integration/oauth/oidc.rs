//! `sso = oidc` against a real OpenID Connect provider: Node's `oidc-provider`
//! (`tests/oidc/provider.mjs`, pinned in `tests/oidc/package.json`), started by each test on
//! 127.0.0.1, with a hand-driven browser (cookies per host, no redirect followed by itself).
//!
//! The whole flow: medialib's authorize page → 302 to the provider → the provider's login and
//! consent → back to `/api/sso/oidc/callback` → medialib's consent page → approve → the
//! client's callback with a code → token → API calls as the provisioned user. And what must
//! fail: a cancelled sign-in, an ID token for another audience, an expired one (beyond the
//! allowed clock skew), a wrong nonce, a replayed or unknown callback, and a provider that is
//! down (at the start, mid-flow) — never a 500.
//!
//! The tools come from `scripts/test` (`npm ci` in `tests/oidc`, Node.js from the system);
//! `MEDIALIB_TEST_SKIP_E2E=1` skips these tests like the other end-to-end ones.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use medialib_domain::{Secret, Timestamp, TokenDigest};
use medialib_ports::services::ClientCredentials;
use reqwest::header::HeaderMap;
use reqwest::{StatusCode, Url};
use serde_json::{Value, json};

use super::{Backend, OAuthApp};
use crate::api::REDIRECT;

const CALLBACK: &str = "/api/sso/oidc/callback";
const SKIP_ENV: &str = "MEDIALIB_TEST_SKIP_E2E";
const HOW_TO_FIX: &str =
    "run scripts/test (it runs npm ci in tests/oidc) or set MEDIALIB_TEST_SKIP_E2E=1";
/// The longest the provider may take to start or to answer a command.
const IDP_TIMEOUT: Duration = Duration::from_secs(30);

medialib_adapters_diesel::backend_tests!(
    async on [sqlite, postgres] with crate::api::run:
    the_whole_flow_provisions_the_user_and_later_sign_ins_update_the_names,
    a_cancelled_sign_in_sends_the_client_access_denied,
    an_id_token_with_another_nonce_is_refused,
    a_callback_is_single_use,
    a_provider_that_is_down_means_server_error_and_rotated_keys_are_fetched,
    the_sites_sign_in_goes_through_the_provider_and_back_to_its_page,
);

// ---------------------------------------------------------------------------------------
// The identity provider.

/// A running `tests/oidc/provider.mjs`, killed when dropped.
struct Idp {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    issuer: String,
    /// The `kid` of its signing key (new at every start).
    kid: String,
}

impl Idp {
    /// Starts the provider on `port` (0: any), with profile claims in the ID token too when
    /// `names_in_id_token`.
    fn start(port: u16, names_in_id_token: bool) -> Self {
        let node = std::env::var_os("MEDIALIB_TEST_NODE").unwrap_or_else(|| "node".into());
        let mut child = Command::new(&node)
            .arg("provider.mjs")
            .current_dir(oidc_dir())
            .env("OIDC_PORT", port.to_string())
            .env("OIDC_CONFORM", if names_in_id_token { "0" } else { "1" })
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if std::env::var_os("TEST_LOG").is_some() {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {node:?}: {e}: {HOW_TO_FIX}"));
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut idp = Self {
            child,
            stdin,
            lines,
            issuer: String::new(),
            kid: String::new(),
        };
        let hello = idp.next_line("the issuer line");
        idp.issuer = hello["issuer"].as_str().unwrap().to_owned();
        idp.kid = hello["kid"].as_str().unwrap().to_owned();
        idp
    }

    fn next_line(&mut self, what: &str) -> Value {
        match self.lines.recv_timeout(IDP_TIMEOUT) {
            Ok(line) => serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("the provider printed {line:?} ({e})")),
            Err(RecvTimeoutError::Timeout) => panic!("the provider sent no {what} in time"),
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.child.wait();
                panic!("the provider exited ({status:?}) before {what}: {HOW_TO_FIX}")
            }
        }
    }

    /// Sends one command and waits for its answer.
    fn command(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
        let answer = self.next_line("an answer");
        assert!(answer["ok"].is_string(), "{message} was refused: {answer}");
    }

    /// Registers medialib (at `base`) as a confidential client `client_id`.
    fn register(&mut self, client_id: &str, secret: &str, base: &str) {
        self.command(json!({"client": {
            "client_id": client_id,
            "client_secret": secret,
            "redirect_uris": [format!("{base}{CALLBACK}")],
            "token_endpoint_auth_method": "client_secret_basic",
            "grant_types": ["authorization_code"],
            "response_types": ["code"],
        }}));
    }

    /// Sets the claims of account `id`.
    fn account(&mut self, id: &str, claims: Value) {
        let mut account = claims;
        account["id"] = json!(id);
        self.command(json!({ "account": account }));
    }

    /// Makes the next ID tokens name `aud` as audience, or expire `expired_by` seconds ago.
    fn tamper(&mut self, aud: Option<&str>, expired_by: u64) {
        self.command(json!({"tamper": {"aud": aud, "expired_by": expired_by}}));
    }

    /// Stops the provider (its port closes).
    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn port(&self) -> u16 {
        Url::parse(&self.issuer).unwrap().port().unwrap()
    }
}

impl Drop for Idp {
    fn drop(&mut self) {
        self.stop();
    }
}

fn oidc_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("oidc")
}

/// `true` (after a note) when the end-to-end tests are skipped; otherwise the provider's
/// packages must be installed.
fn skipped(test: &str) -> bool {
    let skip = std::env::var(SKIP_ENV).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"));
    if skip {
        eprintln!("{SKIP_ENV}=1: skipping the OpenID Connect test {test}");
        return true;
    }
    let package = oidc_dir().join("node_modules/oidc-provider/package.json");
    assert!(
        package.is_file(),
        "{} is missing (npm ci in tests/oidc): {HOW_TO_FIX}",
        package.display()
    );
    false
}

/// A port on 127.0.0.1 where nothing listens (taken from the OS, then released).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

const IDP_SECRET: &str = "medialib-test-client-secret-0123456789abcdef";

/// medialib with `sso = oidc` against `issuer` as client `medialib`, with `skew` seconds of
/// clock skew when given.
async fn medialib(b: Backend, issuer: &str, skew: Option<u32>, claim: Option<&str>) -> OAuthApp {
    let issuer = issuer.to_owned();
    let claim = claim.map(str::to_owned);
    OAuthApp::start_with(b, move |l| {
        let mut l = l
            .set("sso", "oidc")
            .set("oidc_issuer", issuer)
            .set("oidc_client_id", "medialib")
            .set("oidc_client_secret", IDP_SECRET);
        if let Some(skew) = skew {
            l = l.set("oidc_clock_skew", skew.to_string());
        }
        if let Some(claim) = claim {
            l = l.set("oidc_unique_id_claim", claim);
        }
        l
    })
    .await
}

/// A provider and medialib registered with each other, plus medialib's OAuth client.
struct Setup {
    idp: Idp,
    app: OAuthApp,
    client: ClientCredentials,
}

async fn setup(b: Backend, names_in_id_token: bool, claim: Option<&str>) -> Setup {
    let mut idp = Idp::start(0, names_in_id_token);
    let app = medialib(b, &idp.issuer, None, claim).await;
    idp.register("medialib", IDP_SECRET, app.base());
    let client = app.register("Course Site", &[REDIRECT], false);
    Setup { idp, app, client }
}

// ---------------------------------------------------------------------------------------
// A hand-driven browser.

/// One answer.
#[derive(Debug)]
struct Hop {
    url: Url,
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Hop {
    fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", |v| v.to_str().unwrap())
    }

    /// The `Location`, resolved against the request's URL.
    fn location(&self) -> Option<Url> {
        let location = self.headers.get("location")?.to_str().unwrap();
        Some(self.url.join(location).unwrap())
    }

    fn set_cookie_names(&self) -> Vec<String> {
        self.headers
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| Some(v.to_str().ok()?.split('=').next()?.trim().to_owned()))
            .collect()
    }

    /// The hidden fields of the page's forms.
    fn hidden(&self) -> Vec<(String, String)> {
        self.body
            .split('<')
            .filter(|t| t.starts_with("input "))
            .map(|t| t.split('>').next().unwrap())
            .filter(|t| attribute(t, "type").as_deref() == Some("hidden"))
            .map(|t| {
                (
                    attribute(t, "name").unwrap(),
                    attribute(t, "value").unwrap_or_default(),
                )
            })
            .collect()
    }
}

/// The value of `name="..."` in a tag, with the character references askama writes decoded.
fn attribute(tag: &str, name: &str) -> Option<String> {
    let needle = format!(" {name}=\"");
    let start = tag.find(&needle)? + needle.len();
    let len = tag[start..].find('"')?;
    let raw = &tag[start..start + len];
    let mut out = String::new();
    let mut rest = raw;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let end = rest[i..].find(';').unwrap() + i;
        let entity = &rest[i + 1..end];
        out.push(match entity {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            _ => char::from_u32(entity.strip_prefix('#').unwrap().parse().unwrap()).unwrap(),
        });
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Some(out)
}

/// Cookies per `host:port`; every cookie of a host is sent on every request to it (the
/// provider's cookie names are distinct, so paths do not matter here).
struct Browser {
    http: reqwest::Client,
    jar: HashMap<String, BTreeMap<String, String>>,
}

impl Browser {
    fn new() -> Self {
        Self {
            http: crate::helpers::http_client()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            jar: HashMap::new(),
        }
    }

    fn host(url: &Url) -> String {
        format!(
            "{}:{}",
            url.host_str().unwrap(),
            url.port_or_known_default().unwrap()
        )
    }

    async fn send(&mut self, url: &Url, mut req: reqwest::RequestBuilder) -> Hop {
        let host = Self::host(url);
        if let Some(cookies) = self.jar.get(&host).filter(|c| !c.is_empty()) {
            let header: Vec<String> = cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
            req = req.header("Cookie", header.join("; "));
        }
        let res = req.send().await.unwrap();
        let hop = Hop {
            url: url.clone(),
            status: res.status(),
            headers: res.headers().clone(),
            body: res.text().await.unwrap(),
        };
        let jar = self.jar.entry(host).or_default();
        for cookie in hop.headers.get_all("set-cookie") {
            let cookie = cookie.to_str().unwrap();
            let mut parts = cookie.split(';').map(str::trim);
            let Some((name, value)) = parts.next().and_then(|p| p.split_once('=')) else {
                continue;
            };
            let attributes: Vec<String> = parts.map(str::to_ascii_lowercase).collect();
            let cleared = value.is_empty()
                || attributes
                    .iter()
                    .any(|a| a == "max-age=0" || a.starts_with("expires=thu, 01 jan 1970"));
            if cleared {
                jar.remove(name);
            } else {
                jar.insert(name.to_owned(), value.to_owned());
            }
        }
        hop
    }

    async fn get(&mut self, url: &Url) -> Hop {
        let req = self.http.get(url.clone());
        self.send(url, req).await
    }

    async fn post(&mut self, url: &Url, form: &[(String, String)]) -> Hop {
        let req = self.http.post(url.clone()).form(form);
        self.send(url, req).await
    }

    fn has_cookie(&self, url: &str, name: &str) -> bool {
        let url = Url::parse(url).unwrap();
        self.jar
            .get(&Self::host(&url))
            .is_some_and(|c| c.contains_key(name))
    }
}

/// What the person does at the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AtIdp {
    /// Signs in as the account and consents.
    SignIn,
    /// Cancels at the first page.
    Cancel,
}

/// medialib's authorize URL for `client` with `state`.
fn authorize_url(app: &OAuthApp, client: &ClientCredentials, state: &str) -> Url {
    Url::parse_with_params(
        &app.url("/api/oauth/authorize"),
        [
            ("response_type", "code"),
            ("client_id", client.client_id.as_str()),
            ("redirect_uri", REDIRECT),
            ("state", state),
            ("scope", "read write"),
        ],
    )
    .unwrap()
}

/// Opens medialib's authorize page without a session: it must send the browser to the
/// provider (302), whose URL is returned.
async fn start(browser: &mut Browser, s: &Setup, state: &str) -> Url {
    let hop = browser.get(&authorize_url(&s.app, &s.client, state)).await;
    assert_eq!(hop.status, StatusCode::FOUND, "{hop:?}");
    assert_eq!(hop.header("cache-control"), "no-store");
    assert_eq!(hop.header("referrer-policy"), "no-referrer");
    let to = hop.location().unwrap();
    assert!(
        to.as_str().starts_with(&format!("{}/auth?", s.idp.issuer)),
        "{to}"
    );
    let params: HashMap<_, _> = to.query_pairs().into_owned().collect();
    assert_eq!(params["response_type"], "code");
    assert_eq!(params["client_id"], "medialib");
    assert_eq!(
        params["redirect_uri"],
        format!("{}{CALLBACK}", s.app.base())
    );
    assert_eq!(params["code_challenge_method"], "S256");
    let scopes: Vec<&str> = params["scope"].split(' ').collect();
    assert!(
        scopes.contains(&"openid") && scopes.contains(&"profile"),
        "{scopes:?}"
    );
    for p in ["state", "nonce", "code_challenge"] {
        assert!(
            params[p].len() >= 43,
            "{p} is not a fresh random value: {to}"
        );
    }
    assert_ne!(
        params["state"], state,
        "the provider never sees the client's state"
    );
    to
}

/// Goes through the provider from `url` until it sends the browser back to medialib's
/// callback; returns that URL (not yet opened).
async fn at_idp(
    browser: &mut Browser,
    mut url: Url,
    login: &str,
    act: AtIdp,
    app: &OAuthApp,
) -> Url {
    let back = app.url(CALLBACK);
    for _ in 0..16 {
        if url.as_str().starts_with(&back) {
            return url;
        }
        let hop = browser.get(&url).await;
        if let Some(next) = hop.location() {
            url = next;
            continue;
        }
        assert_eq!(hop.status, StatusCode::OK, "{hop:?}");
        assert!(url.path().starts_with("/interaction/"), "{hop:?}");
        if act == AtIdp::Cancel {
            url = url.join(&format!("{}/abort", url.path())).unwrap();
            continue;
        }
        let prompt = if hop.body.contains(r#"name="prompt" value="login""#) {
            "login"
        } else {
            assert!(
                hop.body.contains(r#"name="prompt" value="consent""#),
                "{hop:?}"
            );
            "consent"
        };
        let form: Vec<(String, String)> =
            [("prompt", prompt), ("login", login), ("password", "any")]
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
        let posted = browser.post(&url, &form).await;
        url = posted
            .location()
            .unwrap_or_else(|| panic!("the provider did not redirect: {posted:?}"));
    }
    panic!("the provider never sent the browser back to medialib (last at {url})");
}

/// The `state` medialib sent to the provider, as the callback URL carries it.
fn sso_state(callback: &Url) -> String {
    callback
        .query_pairs()
        .find(|(k, _)| k == "state")
        .unwrap()
        .1
        .into_owned()
}

/// Opens the callback: it must start a session and go back (303) to the authorize page,
/// which shows the consent page; returns that page.
async fn back_at_medialib(browser: &mut Browser, s: &Setup, callback: &Url) -> Hop {
    let hop = browser.get(callback).await;
    assert_eq!(hop.status, StatusCode::SEE_OTHER, "{hop:?}");
    assert_eq!(hop.header("cache-control"), "no-store");
    assert!(
        hop.set_cookie_names()
            .contains(&"medialib_session".to_owned()),
        "{hop:?}"
    );
    let to = hop.location().unwrap();
    assert!(
        to.as_str().starts_with(&s.app.url("/api/oauth/authorize?")),
        "{to}"
    );
    let consent = browser.get(&to).await;
    assert_eq!(consent.status, StatusCode::OK, "{consent:?}");
    assert!(
        consent.body.contains(r#"value="approve""#),
        "the consent page: {}",
        consent.body
    );
    assert_eq!(consent.header("x-frame-options"), "DENY");
    consent
}

/// Approves on the consent page and exchanges the code: the access token.
async fn approve_and_exchange(
    browser: &mut Browser,
    s: &Setup,
    consent: &Hop,
    state: &str,
) -> String {
    let mut form = consent.hidden();
    form.push(("decision".into(), "approve".into()));
    let approved = browser
        .post(
            &Url::parse(&s.app.url("/api/oauth/authorize")).unwrap(),
            &form,
        )
        .await;
    assert_eq!(approved.status, StatusCode::SEE_OTHER, "{approved:?}");
    let to = approved.location().unwrap();
    assert!(to.as_str().starts_with(REDIRECT), "{to}");
    let params: HashMap<_, _> = to.query_pairs().into_owned().collect();
    assert_eq!(params["state"], state);
    assert_eq!(params["iss"], s.app.base());
    let res = s
        .app
        .api
        .app
        .client
        .post(s.app.url("/api/oauth/access_token"))
        .form(&[
            ("grant_type", "authorization_code"),
            ("code", params["code"].as_str()),
            ("redirect_uri", REDIRECT),
            ("client_id", s.client.client_id.as_str()),
            (
                "client_secret",
                s.client.client_secret.as_ref().unwrap().expose(),
            ),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let tokens: Value = res.json().await.unwrap();
    tokens["access_token"].as_str().unwrap().to_owned()
}

/// A whole sign-in as `login` with a fresh medialib session: the access token.
async fn sign_in(browser: &mut Browser, s: &Setup, login: &str, state: &str) -> String {
    let to_idp = start(browser, s, state).await;
    let callback = at_idp(browser, to_idp, login, AtIdp::SignIn, &s.app).await;
    let consent = back_at_medialib(browser, s, &callback).await;
    approve_and_exchange(browser, s, &consent, state).await
}

/// Asserts a redirect to the OAuth client with `error`, the client's `state` and `iss`.
fn assert_client_told(hop: &Hop, app: &OAuthApp, error: &str, state: &str) {
    assert_eq!(hop.status, StatusCode::FOUND, "{hop:?}");
    let to = hop
        .location()
        .unwrap_or_else(|| panic!("no redirect: {hop:?}"));
    assert!(to.as_str().starts_with(&format!("{REDIRECT}?")), "{to}");
    let params: HashMap<_, _> = to.query_pairs().into_owned().collect();
    assert_eq!(params.get("error").map(String::as_str), Some(error), "{to}");
    assert_eq!(params.get("state").map(String::as_str), Some(state), "{to}");
    assert_eq!(
        params.get("iss").map(String::as_str),
        Some(app.base()),
        "{to}"
    );
    assert!(
        params
            .get("error_description")
            .is_some_and(|d| !d.is_empty())
    );
    assert!(!params.contains_key("code"), "{to}");
    assert!(
        !hop.set_cookie_names()
            .contains(&"medialib_session".to_owned()),
        "no session after a failed sign-in: {hop:?}"
    );
    assert_eq!(hop.header("cache-control"), "no-store");
    assert_eq!(hop.header("referrer-policy"), "no-referrer");
}

/// Asserts an HTML error page with the authorize pages' headers, and no redirect.
fn assert_error_page(hop: &Hop, status: StatusCode, words: &str) {
    assert_eq!(hop.status, status, "{hop:?}");
    assert!(hop.location().is_none(), "{hop:?}");
    assert!(
        hop.header("content-type").starts_with("text/html"),
        "{hop:?}"
    );
    assert_eq!(hop.header("x-frame-options"), "DENY");
    assert!(
        hop.header("content-security-policy")
            .contains("frame-ancestors 'none'")
    );
    assert_eq!(hop.header("cache-control"), "no-store");
    assert_eq!(hop.header("referrer-policy"), "no-referrer");
    assert!(hop.body.contains(words), "{words:?} not in {}", hop.body);
    assert!(
        !hop.set_cookie_names()
            .contains(&"medialib_session".to_owned()),
        "{hop:?}"
    );
}

/// `GET /api/oauth/authorize/` with the token: the userId it belongs to.
async fn token_user(app: &OAuthApp, token: &str) -> String {
    let a = app.api.get("/api/oauth/authorize/", Some(token)).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    a.json["userId"].as_str().unwrap().to_owned()
}

fn now() -> Timestamp {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    Timestamp::from_epoch_seconds(i64::try_from(secs).unwrap())
}

fn names(app: &OAuthApp, unique_id: &str) -> (String, String, String) {
    let user = app
        .api
        .services
        .store()
        .user_by_unique_id(&medialib_domain::UniqueId::parse(unique_id).unwrap())
        .unwrap()
        .unwrap_or_else(|| panic!("{unique_id} was not provisioned"));
    (
        user.id.to_string(),
        user.first_name.as_str().to_owned(),
        user.last_name.as_str().to_owned(),
    )
}

// ---------------------------------------------------------------------------------------
// The tests.

/// First sign-in provisions the user with the names userinfo gives (this provider puts
/// profile claims only there); the token works on the API; a later sign-in after the names
/// changed at the provider updates them, on the same user.
async fn the_whole_flow_provisions_the_user_and_later_sign_ins_update_the_names(b: Backend) {
    if skipped("whole_flow") {
        return;
    }
    let mut s = setup(b, false, None).await;
    s.idp.account(
        "ada.lovelace",
        json!({"given_name": "Ada", "family_name": "Lovelace"}),
    );
    let mut browser = Browser::new();
    let token = sign_in(&mut browser, &s, "ada.lovelace", "first").await;
    let (id, first, last) = names(&s.app, "ada.lovelace");
    assert_eq!((first.as_str(), last.as_str()), ("Ada", "Lovelace"));
    assert_eq!(token_user(&s.app, &token).await, id);
    let library = s.app.api.library(&token, "Ada's lectures").await;
    assert!(!library.is_empty());

    // The same person later, with new names at the provider and no medialib session (a new
    // browser for medialib; the provider's own session cookies are kept).
    s.idp.account(
        "ada.lovelace",
        json!({"given_name": "Augusta Ada", "family_name": "King"}),
    );
    browser
        .jar
        .remove(&Browser::host(&Url::parse(s.app.base()).unwrap()));
    let token = sign_in(&mut browser, &s, "ada.lovelace", "second").await;
    let (again, first, last) = names(&s.app, "ada.lovelace");
    assert_eq!(again, id, "the same user, not a new one");
    assert_eq!((first.as_str(), last.as_str()), ("Augusta Ada", "King"));
    assert_eq!(token_user(&s.app, &token).await, id);
}

/// The user cancels at the provider: the provider answers `error=access_denied`, and
/// medialib sends the client `access_denied` with its own `state` (and `iss`); no session.
async fn a_cancelled_sign_in_sends_the_client_access_denied(b: Backend) {
    if skipped("cancelled") {
        return;
    }
    let s = setup(b, false, None).await;
    let mut browser = Browser::new();
    let to_idp = start(&mut browser, &s, "cancel-me").await;
    let callback = at_idp(&mut browser, to_idp, "nobody", AtIdp::Cancel, &s.app).await;
    assert!(
        callback
            .query_pairs()
            .any(|(k, v)| k == "error" && v == "access_denied"),
        "{callback}"
    );
    let hop = browser.get(&callback).await;
    assert_client_told(&hop, &s.app, "access_denied", "cancel-me");
    assert!(!browser.has_cookie(s.app.base(), "medialib_session"));

    // When the application was removed meanwhile, there is nobody to tell: an error page.
    let to_idp = start(&mut browser, &s, "client-gone").await;
    let callback = at_idp(&mut browser, to_idp, "nobody", AtIdp::Cancel, &s.app).await;
    let id = medialib_domain::oauth::ClientId::parse(&s.client.client_id).unwrap();
    assert!(s.app.api.services.store().remove_client(&id).unwrap());
    let hop = browser.get(&callback).await;
    assert_error_page(&hop, StatusCode::FORBIDDEN, "You were not signed in");
}

/// An ID token whose nonce is not the one kept for this sign-in (here: the kept record is
/// swapped for one with another nonce) is refused: `access_denied` to the client.
async fn an_id_token_with_another_nonce_is_refused(b: Backend) {
    if skipped("nonce") {
        return;
    }
    let mut s = setup(b, false, None).await;
    s.idp.account(
        "grace",
        json!({"given_name": "Grace", "family_name": "Hopper"}),
    );
    let mut browser = Browser::new();
    let to_idp = start(&mut browser, &s, "nonce-test").await;
    let callback = at_idp(&mut browser, to_idp, "grace", AtIdp::SignIn, &s.app).await;
    let digest = TokenDigest::of(&Secret::new(sso_state(&callback)));
    let store = s.app.api.services.store();
    let mut kept = store
        .take_pending_sign_in(&digest, now())
        .unwrap()
        .expect("the sign-in is pending under the digest of its state");
    assert!(
        kept.return_to.contains("state=nonce-test"),
        "{}",
        kept.return_to
    );
    kept.nonce = Secret::new("another-nonce-than-the-one-sent-to-the-provider");
    store
        .put_pending_sign_in(
            &digest,
            &kept,
            Timestamp::from_epoch_seconds(now().epoch_seconds() + 600),
        )
        .unwrap();
    let hop = browser.get(&callback).await;
    assert_client_told(&hop, &s.app, "access_denied", "nonce-test");
    assert!(
        names_opt(&s.app, "grace").is_none(),
        "nobody is provisioned from a refused ID token"
    );
}

fn names_opt(app: &OAuthApp, unique_id: &str) -> Option<String> {
    app.api
        .services
        .store()
        .user_by_unique_id(&medialib_domain::UniqueId::parse(unique_id).unwrap())
        .unwrap()
        .map(|u| u.id.to_string())
}

/// The callback works once: opening it again (a replay, a reload) is an error page, with
/// no session and no redirect.
async fn a_callback_is_single_use(b: Backend) {
    if skipped("single_use") {
        return;
    }
    let mut s = setup(b, false, None).await;
    s.idp.account(
        "alan",
        json!({"given_name": "Alan", "family_name": "Turing"}),
    );
    let mut browser = Browser::new();
    let to_idp = start(&mut browser, &s, "once").await;
    let callback = at_idp(&mut browser, to_idp, "alan", AtIdp::SignIn, &s.app).await;
    back_at_medialib(&mut browser, &s, &callback).await;
    let mut stranger = Browser::new();
    let replay = stranger.get(&callback).await;
    assert_error_page(&replay, StatusCode::BAD_REQUEST, "This sign-in has expired");
}

/// The provider is down when medialib starts and at the first authorization: medialib
/// starts anyway and sends the client `server_error` (with its state). Once the provider is
/// up, sign-in works (discovery is lazy). When the provider goes down between its login and
/// the callback, the client gets `server_error`. When it comes back with new signing keys,
/// medialib fetches them (the ID token names a key it has not seen) and sign-in works.
async fn a_provider_that_is_down_means_server_error_and_rotated_keys_are_fetched(b: Backend) {
    if skipped("provider_down") {
        return;
    }
    let port = closed_port();
    let issuer = format!("http://127.0.0.1:{port}");
    let app = medialib(b, &issuer, None, None).await;
    let client = app.register("Course Site", &[REDIRECT], false);
    let mut browser = Browser::new();
    let hop = browser
        .get(&authorize_url(&app, &client, "while-down"))
        .await;
    assert_client_told(&hop, &app, "server_error", "while-down");

    // Up: lazy discovery.
    let mut idp = Idp::start(port, false);
    assert_eq!(idp.port(), port);
    idp.register("medialib", IDP_SECRET, app.base());
    idp.account(
        "edsger",
        json!({"given_name": "Edsger", "family_name": "Dijkstra"}),
    );
    let mut s = Setup { idp, app, client };
    let first_kid = s.idp.kid.clone();
    sign_in(&mut browser, &s, "edsger", "when-up").await;

    // Down between the provider's login and the callback.
    browser
        .jar
        .remove(&Browser::host(&Url::parse(s.app.base()).unwrap()));
    let to_idp = start(&mut browser, &s, "mid-flow").await;
    let callback = at_idp(&mut browser, to_idp, "edsger", AtIdp::SignIn, &s.app).await;
    s.idp.stop();
    let hop = browser.get(&callback).await;
    assert_client_told(&hop, &s.app, "server_error", "mid-flow");

    // Back on the same issuer, with a new signing key.
    let mut idp = Idp::start(port, false);
    assert_ne!(
        idp.kid, first_kid,
        "a restarted provider signs with a new key"
    );
    idp.register("medialib", IDP_SECRET, s.app.base());
    idp.account(
        "edsger",
        json!({"given_name": "Edsger W.", "family_name": "Dijkstra"}),
    );
    s.idp = idp;
    let mut browser = Browser::new();
    let token = sign_in(&mut browser, &s, "edsger", "rotated").await;
    let (id, first, _) = names(&s.app, "edsger");
    assert_eq!(first, "Edsger W.");
    assert_eq!(token_user(&s.app, &token).await, id);
}

/// The uniqueId from a configured claim (`employee_number`, a number at this provider) and
/// the names from the ID token itself.
#[tokio::test]
async fn the_unique_id_can_come_from_another_claim_and_names_from_the_id_token() {
    if skipped("claim") {
        return;
    }
    let mut s = setup(Backend::Sqlite, true, Some("employee_number")).await;
    s.idp.account(
        "kg-4711",
        json!({"given_name": "Kurt", "family_name": "Gödel", "employee_number": 4711}),
    );
    let mut browser = Browser::new();
    let token = sign_in(&mut browser, &s, "kg-4711", "claim").await;
    let (id, first, last) = names(&s.app, "4711");
    assert_eq!((first.as_str(), last.as_str()), ("Kurt", "Gödel"));
    assert_eq!(token_user(&s.app, &token).await, id);
    assert!(
        names_opt(&s.app, "kg-4711").is_none(),
        "sub is not the uniqueId here"
    );
}

/// An ID token for another audience is refused (`access_denied`); the same setup without
/// the tampering signs in.
#[tokio::test]
async fn an_id_token_for_another_audience_is_refused() {
    if skipped("audience") {
        return;
    }
    let mut s = setup(Backend::Sqlite, false, None).await;
    s.idp.account(
        "barbara",
        json!({"given_name": "Barbara", "family_name": "Liskov"}),
    );
    s.idp.tamper(Some("some-other-application"), 0);
    let mut browser = Browser::new();
    let to_idp = start(&mut browser, &s, "aud").await;
    let callback = at_idp(&mut browser, to_idp, "barbara", AtIdp::SignIn, &s.app).await;
    let hop = browser.get(&callback).await;
    assert_client_told(&hop, &s.app, "access_denied", "aud");
    assert!(names_opt(&s.app, "barbara").is_none());

    s.idp.tamper(None, 0);
    sign_in(&mut Browser::new(), &s, "barbara", "aud-ok").await;
    assert!(names_opt(&s.app, "barbara").is_some());
}

/// An ID token that expired longer ago than the allowed clock skew is refused; within the
/// skew it is accepted; with `oidc_clock_skew = 0` even a few seconds are too many.
#[tokio::test]
async fn an_expired_id_token_is_refused_beyond_the_clock_skew() {
    if skipped("expired") {
        return;
    }
    let mut s = setup(Backend::Sqlite, false, None).await;
    s.idp.account(
        "hedy",
        json!({"given_name": "Hedy", "family_name": "Lamarr"}),
    );
    // The default skew is 60 seconds.
    s.idp.tamper(None, 120);
    let mut browser = Browser::new();
    let to_idp = start(&mut browser, &s, "expired").await;
    let callback = at_idp(&mut browser, to_idp, "hedy", AtIdp::SignIn, &s.app).await;
    let hop = browser.get(&callback).await;
    assert_client_told(&hop, &s.app, "access_denied", "expired");

    s.idp.tamper(None, 20);
    sign_in(&mut Browser::new(), &s, "hedy", "within-skew").await;

    // No skew allowed: a second medialib, registered at the provider in the first one's place.
    let strict = medialib(Backend::Sqlite, &s.idp.issuer, Some(0), None).await;
    s.idp.register("medialib", IDP_SECRET, strict.base());
    let client = strict.register("Course Site", &[REDIRECT], false);
    let mut browser = Browser::new();
    let hop = browser
        .get(&authorize_url(&strict, &client, "strict"))
        .await;
    assert_eq!(hop.status, StatusCode::FOUND, "{hop:?}");
    let to_idp = hop.location().unwrap();
    let callback = at_idp(&mut browser, to_idp, "hedy", AtIdp::SignIn, &strict).await;
    let hop = browser.get(&callback).await;
    assert_client_told(&hop, &strict, "access_denied", "strict");
}

/// A callback without a state, or with one medialib never issued, is an error page (400),
/// never a redirect; so is one in another sign-in mode (501). The provider need not be up.
#[tokio::test]
async fn an_unknown_callback_is_an_error_page() {
    let issuer = format!("http://127.0.0.1:{}", closed_port());
    let app = medialib(Backend::Sqlite, &issuer, None, None).await;
    let mut browser = Browser::new();
    for query in [
        "",
        "?code=abc",
        "?state=never-issued&code=abc",
        "?state=x&error=access_denied",
    ] {
        let url = Url::parse(&format!("{}{query}", app.url(CALLBACK))).unwrap();
        let hop = browser.get(&url).await;
        assert_error_page(&hop, StatusCode::BAD_REQUEST, "This sign-in has expired");
    }
    let url = Url::parse(&app.url(CALLBACK)).unwrap();
    let post = browser.post(&url, &[]).await;
    assert_eq!(post.status, StatusCode::NOT_IMPLEMENTED, "{post:?}");
    assert_eq!(post.header("allow"), "GET, OPTIONS");

    let local = OAuthApp::start(Backend::Sqlite).await;
    let url = Url::parse(&format!("{}?state=x&code=y", local.url(CALLBACK))).unwrap();
    let hop = browser.get(&url).await;
    assert_error_page(
        &hop,
        StatusCode::NOT_IMPLEMENTED,
        "Sign-in is not available",
    );
}

/// medialib's own `/login?next=…` sends the browser to the provider too, and the callback
/// ends on that page of medialib's, signed in (no client, no consent).
async fn the_sites_sign_in_goes_through_the_provider_and_back_to_its_page(b: Backend) {
    let s = setup(b, false, None).await;
    let mut browser = Browser::new();
    let login = Url::parse(&s.app.url("/login?next=%2Flibraries%2Fx%3Fpage%3D2")).unwrap();
    let hop = browser.get(&login).await;
    assert_eq!(hop.status, StatusCode::FOUND, "{hop:?}");
    let to = hop.location().unwrap();
    assert!(
        to.as_str().starts_with(&format!("{}/auth?", s.idp.issuer)),
        "{to}"
    );
    let callback = at_idp(&mut browser, to, "erin", AtIdp::SignIn, &s.app).await;
    let back = browser.get(&callback).await;
    assert_eq!(back.status, StatusCode::SEE_OTHER, "{back:?}");
    assert_eq!(
        back.location().unwrap().as_str(),
        s.app.url("/libraries/x?page=2"),
        "back to the page the sign-in started from"
    );
    assert!(
        back.set_cookie_names()
            .contains(&"medialib_session".to_owned())
    );
    let home = browser.get(&Url::parse(&s.app.url("/")).unwrap()).await;
    assert!(home.body.contains("Your libraries"), "{home:?}");
}
