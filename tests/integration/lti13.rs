//! LTI 1.3 over HTTP against the running app, on SQLite and PostgreSQL, with a stand-in
//! platform: its key set served on 127.0.0.1 and its id_tokens signed with `jsonwebtoken`
//! The login's redirect, a launch's session and pages, the Deep Linking pick signed with the
//! key medialib publishes, and every attack refused with a page that says why. Then two real
//! platforms: PyPI `lti1p3platform` served by `tests/e2e/lti13_platform.py`, with Chromium
//! in its course page's iframe for a Deep Linking round trip and a learner's playback, and
//! PyPI `lti-provider-mock` for a resource-link launch.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use medialib_domain::lti::v1p3::{Platform, UniqueIdClaim, claim};
use medialib_domain::{ObjectId, PermissionLevel, UniqueId};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::api::{ApiApp, Backend};
use crate::lti::{
    Page, all_hidden_fields, assert_refused as refused, attributes, get_page, page, post_page,
};

medialib_adapters_diesel::backend_tests!(
    async on [sqlite, postgres] with crate::api::run:
    a_teacher_picks_through_deep_linking_and_a_learner_opens_the_pick,
    attacks_on_the_login_and_the_launch_are_refused_with_a_page,
    medialibs_keys_are_published_and_rotated,
    lti1p3platform_deep_links_a_video_that_a_learner_plays_in_the_frame,
    lti_provider_mock_launches_it,
);

const ISSUER: &str = "https://lms.example.edu";
const CLIENT: &str = "medialib-at-lms";
const TEACHER: &str = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor";
const LEARNER: &str = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner";
const RETURN: &str = "https://lms.example.edu/deep-link-return";

/// A platform's RSA key, published at `jwks_url` by a thread on 127.0.0.1.
struct PlatformKeys {
    jwks_url: String,
    encoding: EncodingKey,
}

impl PlatformKeys {
    fn serve() -> Self {
        use rsa::pkcs1::EncodeRsaPrivateKey as _;
        use rsa::traits::PublicKeyParts as _;
        let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).unwrap();
        let b64 = |bytes: Vec<u8>| {
            use base64::Engine as _;
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
        };
        let body = json!({ "keys": [{
            "kty": "RSA", "alg": "RS256", "use": "sig", "kid": "platform-1",
            "n": b64(key.n().to_bytes_be()), "e": b64(key.e().to_bytes_be()),
        }]})
        .to_string();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let jwks_url = format!("http://{}/certs", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Self {
            jwks_url,
            encoding: EncodingKey::from_rsa_der(key.to_pkcs1_der().unwrap().as_bytes()),
        }
    }

    fn sign(&self, kid: &str, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, claims, &self.encoding).unwrap()
    }
}

struct Lms {
    app: ApiApp,
    keys: PlatformKeys,
}

/// A login's answer: the state and nonce the platform is to send back.
struct Login {
    state: String,
    nonce: String,
}

impl Lms {
    async fn start(b: Backend) -> Self {
        let app = ApiApp::start(b).await;
        let keys = PlatformKeys::serve();
        app.services
            .lti()
            .add_platform(Platform {
                issuer: ISSUER.into(),
                client_id: CLIENT.into(),
                deployments: vec!["dep-1".into()],
                auth_url: format!("{ISSUER}/auth"),
                token_url: format!("{ISSUER}/token"),
                jwks_url: keys.jwks_url.clone(),
                unique_id_claim: UniqueIdClaim::Subject,
            })
            .unwrap();
        Self { app, keys }
    }

    fn launch_url(&self) -> String {
        self.app.app.url("/api/lti/launch")
    }

    async fn get(&self, path: &str, cookie: &str) -> Page {
        get_page(&self.app, path, cookie).await
    }

    async fn post(&self, path: &str, form: &[(&str, &str)]) -> Page {
        let form: Vec<(String, String)> = form
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        post_page(&self.app, path, &form).await
    }

    /// The platform's login initiation; the state and nonce medialib sends to its `auth_url`.
    async fn login(&self) -> Login {
        let target = self.launch_url();
        let answer = self
            .post(
                "/api/lti/login",
                &[
                    ("iss", ISSUER),
                    ("login_hint", "u-1"),
                    ("target_link_uri", &target),
                    ("lti_message_hint", "rl-1"),
                ],
            )
            .await;
        assert_eq!(answer.status, StatusCode::FOUND, "{}", answer.body);
        let location = reqwest::Url::parse(answer.header("location")).unwrap();
        assert_eq!(
            location.as_str().split('?').next(),
            Some(format!("{ISSUER}/auth").as_str())
        );
        let get = |name: &str| {
            location
                .query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
                .unwrap_or_else(|| panic!("no {name} in {location}"))
        };
        assert_eq!(get("client_id"), CLIENT);
        assert_eq!(get("redirect_uri"), self.launch_url());
        assert_eq!(get("response_mode"), "form_post");
        assert_eq!(get("lti_message_hint"), "rl-1");
        Login {
            state: get("state"),
            nonce: get("nonce"),
        }
    }

    /// The claims of a launch by `sub` with `role` in course c-7, for `login`.
    fn claims(login: &Login, sub: &str, role: &str, deep: bool) -> Value {
        let now = crate::helpers::epoch_now();
        let mut claims = json!({
            "iss": ISSUER, "aud": CLIENT, "sub": sub, "nonce": login.nonce,
            "iat": now, "exp": now + 300,
            "given_name": "Ada", "family_name": "Lovelace",
            (claim::VERSION): "1.3.0",
            (claim::DEPLOYMENT_ID): "dep-1",
            (claim::ROLES): [role],
            (claim::CONTEXT): { "id": "c-7", "title": "Biology 101" },
            (claim::RESOURCE_LINK): { "id": "rl-1" },
            (claim::MESSAGE_TYPE): if deep { "LtiDeepLinkingRequest" } else { "LtiResourceLinkRequest" },
        });
        if deep {
            claims[claim::DEEP_LINKING_SETTINGS] = json!({
                "deep_link_return_url": RETURN,
                "accept_types": ["ltiResourceLink"],
                "data": "dl-data",
            });
        }
        claims
    }

    /// Posts a launch: `claims` signed with key `kid`, and the login's state.
    async fn launch(&self, state: &str, kid: &str, claims: &Value) -> Page {
        let token = self.keys.sign(kid, claims);
        self.post("/api/lti/launch", &[("id_token", &token), ("state", state)])
            .await
    }

    /// A whole login and launch.
    async fn visit(
        &self,
        sub: &str,
        role: &str,
        deep: bool,
        edit: impl FnOnce(&mut Value),
    ) -> Page {
        let login = self.login().await;
        let mut claims = Self::claims(&login, sub, role, deep);
        edit(&mut claims);
        self.launch(&login.state, "platform-1", &claims).await
    }

    fn user(&self, sub: &str) -> medialib_domain::User {
        self.app
            .services
            .store()
            .user_by_unique_id(&UniqueId::parse(&format!("{CLIENT}:{sub}")).unwrap())
            .unwrap()
            .unwrap()
    }

    fn course_library(&self) -> Option<ObjectId> {
        let key =
            medialib_domain::lti::CourseKey::new(&format!("{ISSUER}#{CLIENT}"), "c-7").unwrap();
        self.app.services.store().course_library(&key).unwrap()
    }
}

async fn a_teacher_picks_through_deep_linking_and_a_learner_opens_the_pick(b: Backend) {
    let lms = Lms::start(b).await;
    let first = lms.visit("t-1", TEACHER, true, |_| {}).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert!(first.body.contains("Pick media"), "{}", first.body);
    assert!(
        first
            .header("content-security-policy")
            .contains("frame-ancestors *")
    );
    let library = lms.course_library().expect("the teacher's launch made it");
    let teacher = lms.user("t-1");
    let token = lms.app.token(&teacher, "read write");
    let media = lms
        .app
        .object(&token, &library.to_string(), "video", "Cell division")
        .await;

    let picker = lms.visit("t-1", TEACHER, true, |_| {}).await;
    assert_eq!(picker.status, StatusCode::OK, "{}", picker.body);
    assert!(picker.body.contains("Cell division"), "{}", picker.body);
    assert!(
        picker
            .header("content-security-policy")
            .contains("form-action 'self' https://lms.example.edu"),
        "{}",
        picker.header("content-security-policy")
    );
    assert_eq!(attributes(&picker.body, "action"), [RETURN]);
    let forms = all_hidden_fields(&picker.body);
    assert_eq!(forms.len(), 1);
    let (name, jwt) = &forms[0][0];
    assert_eq!(name, "JWT");

    // The platform checks the response with the key medialib publishes.
    let jwks: Value = serde_json::from_str(&lms.get("/api/lti/jwks", "").await.body).unwrap();
    let header = jsonwebtoken::decode_header(jwt).unwrap();
    let key = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kid"].as_str() == header.kid.as_deref())
        .expect("the response's kid is published");
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_audience(&[ISSUER]);
    validation.set_issuer(&[CLIENT]);
    let claims = jsonwebtoken::decode::<Value>(
        jwt,
        &DecodingKey::from_rsa_components(key["n"].as_str().unwrap(), key["e"].as_str().unwrap())
            .unwrap(),
        &validation,
    )
    .unwrap()
    .claims;
    assert_eq!(claims[claim::MESSAGE_TYPE], "LtiDeepLinkingResponse");
    assert_eq!(claims[claim::DEPLOYMENT_ID], "dep-1");
    assert_eq!(claims[claim::DATA], "dl-data");
    let item = &claims[claim::CONTENT_ITEMS][0];
    assert_eq!(item["type"], "ltiResourceLink");
    assert_eq!(item["title"], "Cell division");
    assert_eq!(item["url"], lms.launch_url());
    assert_eq!(item["custom"]["media"], media);

    // A learner launches the link the platform made of it: the player, signed in.
    let watch = lms
        .visit("s-1", LEARNER, false, |c| {
            c[claim::CUSTOM] = json!({ "media": media });
        })
        .await;
    assert_eq!(watch.status, StatusCode::SEE_OTHER, "{}", watch.body);
    let player = watch.header("location").to_owned();
    assert!(player.starts_with("/m/"), "{player}");
    let cookie = watch.session();
    let shown = lms.get(&player, &cookie).await;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.body);
    assert!(shown.body.contains("Cell division"), "{}", shown.body);
    // The course library holds both at the right levels.
    let level = |sub: &str| {
        lms.app
            .services
            .store()
            .explicit_level(library, lms.user(sub).id)
            .unwrap()
    };
    assert_eq!(level("t-1"), Some(PermissionLevel::Admin));
    assert_eq!(level("s-1"), Some(PermissionLevel::View));
}

async fn attacks_on_the_login_and_the_launch_are_refused_with_a_page(b: Backend) {
    let lms = Lms::start(b).await;
    // Positive control: the untouched launch is let in.
    let ok = lms.visit("s-1", LEARNER, false, |_| {}).await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.body);

    // A tampered id_token: a claim changed after signing.
    let login = lms.login().await;
    let token = lms
        .keys
        .sign("platform-1", &Lms::claims(&login, "s-1", LEARNER, false));
    let parts: Vec<&str> = token.split('.').collect();
    let forged = {
        use base64::Engine as _;
        let claims = Lms::claims(&login, "s-1", TEACHER, true);
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims.to_string())
    };
    let tampered = format!("{}.{forged}.{}", parts[0], parts[2]);
    let page = lms
        .post(
            "/api/lti/launch",
            &[("id_token", &tampered), ("state", &login.state)],
        )
        .await;
    refused(&page, StatusCode::FORBIDDEN, "signature does not hold");

    let expired = lms
        .visit("s-1", LEARNER, false, |c| {
            c["exp"] = json!(crate::helpers::epoch_now() - 3600);
            c["iat"] = json!(crate::helpers::epoch_now() - 4000);
        })
        .await;
    refused(&expired, StatusCode::FORBIDDEN, "expired");
    let wrong_aud = lms
        .visit("s-1", LEARNER, false, |c| c["aud"] = json!("another-tool"))
        .await;
    refused(&wrong_aud, StatusCode::FORBIDDEN, "not for this tool");
    let deployment = lms
        .visit("s-1", LEARNER, false, |c| {
            c[claim::DEPLOYMENT_ID] = json!("dep-9")
        })
        .await;
    refused(&deployment, StatusCode::FORBIDDEN, "deployment");
    let learner_pick = lms.visit("s-1", LEARNER, true, |_| {}).await;
    refused(&learner_pick, StatusCode::FORBIDDEN, "teachers");

    // A key the platform's set does not have.
    let login = lms.login().await;
    let unknown = lms
        .launch(
            &login.state,
            "platform-9",
            &Lms::claims(&login, "s-1", LEARNER, false),
        )
        .await;
    refused(&unknown, StatusCode::FORBIDDEN, "no key");

    // A reused state, and a reused nonce with a fresh state.
    let login = lms.login().await;
    let claims = Lms::claims(&login, "s-1", LEARNER, false);
    let first = lms.launch(&login.state, "platform-1", &claims).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    let again = lms.launch(&login.state, "platform-1", &claims).await;
    refused(&again, StatusCode::FORBIDDEN, "used already");
    let fresh = lms.login().await;
    let replayed_nonce = lms.launch(&fresh.state, "platform-1", &claims).await;
    refused(&replayed_nonce, StatusCode::FORBIDDEN, "nonce");

    // Logins that name nobody registered, or another site.
    let target = lms.launch_url();
    let stranger = lms
        .post(
            "/api/lti/login",
            &[
                ("iss", "https://evil.example"),
                ("login_hint", "u"),
                ("target_link_uri", &target),
            ],
        )
        .await;
    refused(&stranger, StatusCode::FORBIDDEN, "no LTI 1.3 platform");
    let elsewhere = lms
        .post(
            "/api/lti/login",
            &[
                ("iss", ISSUER),
                ("login_hint", "u"),
                ("target_link_uri", "https://evil.example/"),
            ],
        )
        .await;
    refused(
        &elsewhere,
        StatusCode::BAD_REQUEST,
        "not an address of this medialib",
    );
    let empty = lms.post("/api/lti/launch", &[]).await;
    refused(&empty, StatusCode::FORBIDDEN, "start it again");
    let get = lms.get("/api/lti/launch", "").await;
    assert_eq!(get.status, StatusCode::NOT_IMPLEMENTED);
    assert_eq!(get.header("allow"), "POST");

    let metrics = lms.get("/metrics", "").await.body;
    for (outcome, n) in [
        ("ok", 2),
        ("bad_signature", 2),
        ("stale", 1),
        ("wrong_audience", 1),
        ("unknown_deployment", 1),
        ("learner_pick", 1),
        ("replay", 3),
        ("unknown_platform", 1),
        ("unsupported", 1),
    ] {
        crate::lti::assert_launches(&metrics, "1.3", outcome, n);
    }
}

async fn medialibs_keys_are_published_and_rotated(b: Backend) {
    let lms = Lms::start(b).await;
    let jwks = |page: &Page| -> Vec<String> {
        let set: Value = serde_json::from_str(&page.body).unwrap();
        set["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| {
                assert_eq!(
                    (&k["kty"], &k["alg"], &k["use"], &k["e"]),
                    (
                        &json!("RSA"),
                        &json!("RS256"),
                        &json!("sig"),
                        &json!("AQAB")
                    )
                );
                // 2048-bit modulus: 256 bytes, 342 base64url characters.
                assert_eq!(k["n"].as_str().unwrap().len(), 342);
                k["kid"].as_str().unwrap().to_owned()
            })
            .collect()
    };
    let first = lms.get("/api/lti/jwks", "").await;
    assert_eq!(first.status, StatusCode::OK);
    assert!(first.header("content-type").starts_with("application/json"));
    assert_eq!(first.header("cache-control"), "public, max-age=300");
    let kids = jwks(&first);
    assert_eq!(kids.len(), 1);
    assert_eq!(
        jwks(&lms.get("/api/lti/jwks", "").await),
        kids,
        "the same key"
    );
    let rotated = lms.app.services.lti().rotate_key().unwrap();
    assert_eq!(
        jwks(&lms.get("/api/lti/jwks", "").await),
        [rotated.kid.clone(), kids[0].clone()]
    );
    let newest = lms.app.services.lti().rotate_key().unwrap();
    assert_eq!(
        jwks(&lms.get("/api/lti/jwks", "").await),
        [newest.kid, rotated.kid]
    );
}

/// A Python web server of the tests (in `tests/e2e`) on a free port of 127.0.0.1, stopped
/// when dropped.
struct PyServer {
    child: std::process::Child,
    url: String,
}

impl PyServer {
    /// Runs `python args…` (`{port}` in an argument or a variable becomes the port) with `env`, and waits
    /// until the port takes connections.
    fn start(python: &std::ffi::OsStr, args: &[&str], env: &[(&str, String)]) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("http://127.0.0.1:{port}");
        let args: Vec<String> = args
            .iter()
            .map(|a| a.replace("{port}", &port.to_string()))
            .collect();
        let mut child = std::process::Command::new(python)
            .args(&args)
            .envs(
                env.iter()
                    .map(|(k, v)| (*k, v.replace("{port}", &port.to_string()))),
            )
            .current_dir(crate::uploads::clients::e2e_dir())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {args:?}: {e}"));
        let started = std::time::Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = child.try_wait().unwrap() {
                let mut stderr = String::new();
                std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
                panic!("{args:?} ended ({status}) before it listened:\n{stderr}");
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(60),
                "{args:?} did not listen within a minute"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Self { child, url }
    }
}

impl Drop for PyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// PyPI `lti1p3platform` on 127.0.0.1: a teacher's Deep Linking launch over HTTP makes the
/// course library; a clip goes into it; in Chromium, inside the course page's iframe, the
/// teacher picks it (the platform verifies the response with medialib's JWKS) and a learner
/// launches the link and plays it. The teacher is alice by `preferred_username`: the same
/// medialib user as her sign-in.
async fn lti1p3platform_deep_links_a_video_that_a_learner_plays_in_the_frame(b: Backend) {
    use crate::uploads::clients::{chromium, client_with_env, node, python, skipped};
    if skipped("lti1p3platform_deep_links_a_video_that_a_learner_plays_in_the_frame")
        || crate::processing::skip()
    {
        return;
    }
    let (node, chromium, python) = (node(), chromium(), python());
    let mut app = crate::processing::processing_app(b).await;
    let tool = app.api.app.address.clone();
    let server = PyServer::start(
        &python,
        &[
            "lti13_platform.py",
            "--port",
            "{port}",
            "--tool",
            &tool,
            "--client-id",
            "medialib-client",
            "--deployment-id",
            "dep-1",
        ],
        &[],
    );
    let platform = app
        .api
        .services
        .lti()
        .add_platform(Platform {
            issuer: server.url.clone(),
            client_id: "medialib-client".into(),
            deployments: vec!["dep-1".into()],
            auth_url: format!("{}/authorize", server.url),
            token_url: format!("{}/token", server.url),
            jwks_url: format!("{}/jwks", server.url),
            unique_id_claim: UniqueIdClaim::parse("preferred_username").unwrap(),
        })
        .unwrap();

    // alice's first launch, over HTTP: the platform's login, its authorization, its form.
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let location = |r: &reqwest::Response| r.headers()["location"].to_str().unwrap().to_owned();
    let start = http
        .get(format!("{}/start?user=alice&kind=deep", server.url))
        .send()
        .await
        .unwrap();
    let login = http.get(location(&start)).send().await.unwrap();
    assert_eq!(login.status(), StatusCode::FOUND, "medialib's login answer");
    let authorize = http.get(location(&login)).send().await.unwrap();
    let form_page = authorize.text().await.unwrap();
    let form = all_hidden_fields(&form_page).remove(0);
    let action = attributes(&form_page, "action").remove(0);
    assert_eq!(action, format!("{tool}/api/lti/launch"));
    let launched = page(http.post(&action).form(&form).send().await.unwrap()).await;
    assert_eq!(launched.status, StatusCode::OK, "{}", launched.body);
    assert!(launched.body.contains("Pick media"), "{}", launched.body);
    let course =
        medialib_domain::lti::CourseKey::new(&platform.course_platform(), "bio-101").unwrap();
    let library = app
        .api
        .services
        .store()
        .course_library(&course)
        .unwrap()
        .expect("alice's launch made the course library");
    assert_eq!(
        app.api
            .services
            .store()
            .explicit_level(library, app.user.id)
            .unwrap(),
        Some(PermissionLevel::Admin),
        "the LTI teacher is alice, as her sign-in"
    );

    // A clip in the course library, processed.
    app.lib = library.to_string();
    let dir = tempfile::tempdir().unwrap();
    let clip = crate::processing::clip(dir.path(), "mitosis.mp4", "640x360", 3);
    let object = crate::processing::upload(&app, &clip, "mitosis.mp4").await;
    let media = crate::processing::settled(&app, &object).await;
    assert_eq!(media["state"], "ready", "{media}");

    let out = client_with_env(
        node,
        "lti13_iframe.mjs",
        vec![
            "--platform".into(),
            server.url.clone(),
            "--title".into(),
            "mitosis.mp4".into(),
        ],
        vec![("CHROMIUM", chromium.display().to_string())],
    )
    .await;
    assert_eq!(out["picker"], "Pick media for the course", "{out}");
    assert_eq!(out["linked"], "Linked: mitosis.mp4", "{out}");
    let player = &out["player"];
    assert!(player["currentTime"].as_f64().unwrap() >= 1.0, "{out}");
    assert!(player["videoHeight"].as_u64().unwrap() > 0, "{out}");
    assert_eq!(player["mediaError"], Value::Null, "{out}");
    assert_eq!(out["consoleErrors"], json!([]), "{out}");

    // What the platform kept: a resource link to medialib with the object as `media`.
    let links: Value = reqwest::get(format!("{}/links", server.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(links[0]["type"], "ltiResourceLink", "{links}");
    assert_eq!(links[0]["custom"]["media"], object.as_str(), "{links}");
    // bob, the learner, holds `view` on the course library.
    let bob = app
        .api
        .services
        .store()
        .user_by_unique_id(&UniqueId::parse("bob").unwrap())
        .unwrap()
        .expect("bob's launch signed him in");
    assert_eq!(
        app.api
            .services
            .store()
            .explicit_level(library, bob.id)
            .unwrap(),
        Some(PermissionLevel::View)
    );
}

/// PyPI `lti-provider-mock`, a second platform: a learner's resource-link launch signs them
/// in and shows the course's page; the same form posted again is refused.
async fn lti_provider_mock_launches_it(b: Backend) {
    use crate::uploads::clients::{client_with_env, python, skipped};
    if skipped("lti_provider_mock_launches_it") {
        return;
    }
    let python = python();
    let app = ApiApp::start(b).await;
    let tool = app.app.address.clone();
    let mock = PyServer::start(
        &python,
        &[
            "-m",
            "uvicorn",
            "lti_provider_mock.server:app",
            "--host",
            "127.0.0.1",
            "--port",
            "{port}",
            "--log-level",
            "warning",
        ],
        &[
            ("LTI_PROVIDER_MOCK__LTI__LOGIN_URL", format!("{tool}/api/lti/login")),
            ("LTI_PROVIDER_MOCK__LTI__LAUNCH_URL", format!("{tool}/api/lti/launch")),
            (
                "LTI_PROVIDER_MOCK__USERS",
                r#"[{"id":"grace","given_name":"Grace","family_name":"Hopper","email":"grace@example.edu"}]"#.into(),
            ),
            ("LTI_PROVIDER_MOCK__COURSES", r#"[{"id":"phys-1","name":"Physics"}]"#.into()),
            // Its issuer is its own address.
            ("LTI_PROVIDER_MOCK__LTI__ISS", "http://127.0.0.1:{port}".into()),
        ],
    );
    // As the mock is built: client id `lti-provider-mock`, deployment `1`.
    app.services
        .lti()
        .add_platform(Platform {
            issuer: mock.url.clone(),
            client_id: "lti-provider-mock".into(),
            deployments: vec!["1".into()],
            auth_url: format!("{}/authorize", mock.url),
            token_url: format!("{}/token", mock.url),
            jwks_url: format!("{}/jwks", mock.url),
            unique_id_claim: UniqueIdClaim::Subject,
        })
        .unwrap();
    let out = client_with_env(
        python,
        "lti13_provider_mock.py",
        vec![
            "--mock".into(),
            mock.url.clone(),
            "--user".into(),
            "grace".into(),
            "--course".into(),
            "phys-1".into(),
        ],
        Vec::new(),
    )
    .await;
    assert_eq!(out["login"], 302, "{out}");
    assert_eq!(out["authorize"], 200, "{out}");
    assert_eq!(out["launch"], 200, "{out}");
    assert_eq!(out["session"], true, "{out}");
    assert!(
        out["page"]
            .as_str()
            .unwrap()
            .contains("No course media yet"),
        "a learner's launch before any teacher's: {out}"
    );
    assert_eq!(out["replay"]["status"], 403, "{out}");
    assert!(
        out["replay"]["page"]
            .as_str()
            .unwrap()
            .contains("used already"),
        "{out}"
    );
    let grace = app
        .services
        .store()
        .user_by_unique_id(&UniqueId::parse("lti-provider-mock:grace").unwrap())
        .unwrap()
        .expect("the launch signed grace in");
    assert_eq!(grace.first_name.as_str(), "Grace");
    let _ = tool;
}
