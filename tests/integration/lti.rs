//! LTI 1.1 over HTTP against the running app, on SQLite and PostgreSQL: launches signed with
//! the domain's OAuth 1.0a signer (checked against other implementations in its own tests,
//! and by PyPI `lti` and a replay of Warpwire's Moodle plugin in `lti_e2e.rs`), the session
//! they start, the pages they lead to, the picker's two ways back, and every refusal as a
//! page that says why.

use medialib_domain::lti::CourseKey;
use medialib_domain::lti::oauth1::{SignedRequest, sign};
use medialib_domain::{ObjectId, Secret, Timestamp, UniqueId};
use medialib_ports::LtiConsumer;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::api::{ApiApp, Backend};
use crate::oauth::pages::html_unescape;

medialib_adapters_diesel::backend_tests!(
    async on [sqlite, postgres] with crate::api::run:
    a_teachers_launch_makes_the_course_library_and_the_warpwire_picker_returns_json_data,
    a_content_item_pick_is_a_form_signed_for_the_platform,
    a_learners_resource_launch_opens_the_player_with_the_session,
    refused_launches_are_pages_that_say_why_and_are_counted,
    independent_consumers_and_warpwires_plugin_launch_it,
    a_course_page_frames_the_launch_in_chromium,
);

/// What the course system sends back to in the tests.
const RETURN: &str = "https://moodle.example.edu/local/warpwire/html/warpwire.html";

struct Lms {
    app: ApiApp,
    consumer: LtiConsumer,
}

/// One answer of the app, with its body as text.
pub(crate) struct Page {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: String,
}

impl Page {
    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .map_or("", |v| v.to_str().unwrap_or_default())
    }

    /// The session cookie it sets (`name=value`).
    pub(crate) fn session(&self) -> String {
        self.headers
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|c| c.starts_with("medialib_session="))
            .and_then(|c| c.split(';').next())
            .unwrap_or_else(|| panic!("no session cookie: {:?}", self.headers))
            .to_owned()
    }
}

impl Lms {
    async fn start(b: Backend) -> Self {
        let app = ApiApp::start(b).await;
        let consumer = app.services.lti().add_consumer("Test LMS").unwrap();
        Self { app, consumer }
    }

    fn now(&self) -> Timestamp {
        Timestamp::from_epoch_seconds(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs()
                .try_into()
                .unwrap(),
        )
    }

    /// `fields` signed as this consumer for `path`, with a fresh nonce.
    fn signed(&self, path: &str, fields: &[(&str, &str)]) -> Vec<(String, String)> {
        let params = fields
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect();
        let nonce = format!("{:032x}", rand::random::<u128>());
        let url = self.app.app.url(path);
        sign(
            &url,
            params,
            &self.consumer.key,
            &self.consumer.secret,
            &nonce,
            self.now(),
        )
        .unwrap()
    }

    async fn post(&self, path: &str, form: &[(String, String)]) -> Page {
        post_page(&self.app, path, form).await
    }

    async fn get(&self, path: &str, cookie: &str) -> Page {
        get_page(&self.app, path, cookie).await
    }

    /// A launch's parameters: `message` by `user` with `roles` in course `c-1` ("BIO101").
    fn launch(
        message: &'static str,
        user: &'static str,
        roles: &'static str,
    ) -> Vec<(&'static str, &'static str)> {
        vec![
            ("lti_version", "LTI-1p0"),
            ("lti_message_type", message),
            ("user_id", user),
            ("ext_user_username", user),
            ("roles", roles),
            ("context_id", "c-1"),
            ("context_label", "BIO101"),
            ("launch_presentation_return_url", RETURN),
        ]
    }

    fn course_library(&self) -> Option<ObjectId> {
        let key = CourseKey::new(&self.consumer.key, "c-1").unwrap();
        self.app.services.store().course_library(&key).unwrap()
    }

    /// A video titled `title` in `library`, made by `unique_id` through the API; its id and
    /// permLink code.
    async fn video(&self, unique_id: &str, library: ObjectId, title: &str) -> (ObjectId, String) {
        let user = self
            .app
            .services
            .store()
            .user_by_unique_id(&UniqueId::parse(unique_id).unwrap())
            .unwrap()
            .unwrap();
        let token = self.app.token(&user, "read write");
        let id = self
            .app
            .object(&token, &library.to_string(), "video", title)
            .await;
        let id = ObjectId::parse(&id).unwrap();
        let code = self
            .app
            .services
            .store()
            .object(id)
            .unwrap()
            .unwrap()
            .shortcode()
            .to_string();
        (id, code)
    }
}

/// A refused launch: its status, an HTML page that says `says`, and no cookie set.
pub(crate) fn assert_refused(page: &Page, status: StatusCode, says: &str) {
    assert_eq!(page.status, status, "{}", page.body);
    assert!(
        page.header("content-type").starts_with("text/html"),
        "{:?}",
        page.headers
    );
    assert!(page.body.contains(says), "{says:?} not in {}", page.body);
    assert!(
        page.headers.get("set-cookie").is_none(),
        "a refused launch signs nobody in (and sets no cookie)"
    );
}

/// `path` of `app` posted with `form`.
pub(crate) async fn post_page(app: &ApiApp, path: &str, form: &[(String, String)]) -> Page {
    let res = app
        .app
        .client
        .post(app.app.url(path))
        .form(form)
        .send()
        .await
        .unwrap();
    page(res).await
}

/// `path` of `app` with `cookie`.
pub(crate) async fn get_page(app: &ApiApp, path: &str, cookie: &str) -> Page {
    let res = app
        .app
        .client
        .get(app.app.url(path))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    page(res).await
}

pub(crate) async fn page(res: reqwest::Response) -> Page {
    let status = res.status();
    let headers = res.headers().clone();
    let body = res.text().await.unwrap();
    Page {
        status,
        headers,
        body,
    }
}

/// The values of every `attribute="…"` in `html`, in order, decoded.
pub(crate) fn attributes(html: &str, attribute: &str) -> Vec<String> {
    let needle = format!("{attribute}=\"");
    html.match_indices(&needle)
        .map(|(i, _)| {
            let rest = &html[i + needle.len()..];
            html_unescape(&rest[..rest.find('"').unwrap()])
        })
        .collect()
}

/// The hidden fields of the first form in `html`.
fn hidden_fields(html: &str) -> Vec<(String, String)> {
    all_hidden_fields(html).remove(0)
}

/// The hidden fields of every form in `html`, in order.
pub(crate) fn all_hidden_fields(html: &str) -> Vec<Vec<(String, String)>> {
    html.split("<form")
        .skip(1)
        .map(|rest| {
            let form = &rest[..rest.find("</form>").expect("a closed form")];
            let names = attributes(form, "name");
            let values = attributes(form, "value");
            assert_eq!(names.len(), values.len(), "{form}");
            names.into_iter().zip(values).collect()
        })
        .collect()
}

/// Decodes `application/x-www-form-urlencoded` text.
fn form_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                out.push(u8::from_str_radix(&text[i + 1..i + 3], 16).unwrap());
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).unwrap()
}

async fn a_teachers_launch_makes_the_course_library_and_the_warpwire_picker_returns_json_data(
    b: Backend,
) {
    let lms = Lms::start(b).await;
    assert_eq!(lms.course_library(), None);
    let form = lms.signed(
        "/api/lti/",
        &Lms::launch("ContentItemSelectionRequest", "teacher", "Instructor"),
    );
    let first = lms.post("/api/lti/", &form).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert!(first.body.contains("Pick media"), "{}", first.body);
    let csp = first.header("content-security-policy");
    assert!(
        csp.contains("frame-ancestors *"),
        "the LMS may frame it: {csp}"
    );
    assert!(first.header("x-frame-options").is_empty());
    let library = lms
        .course_library()
        .expect("the teacher's launch made the course library");
    assert!(
        first.body.contains(&format!("/libraries/{library}")),
        "{}",
        first.body
    );

    // The session the launch started opens the course library's page.
    let cookie = first.session();
    let shelf = lms.get(&format!("/libraries/{library}"), &cookie).await;
    assert_eq!(shelf.status, StatusCode::OK);
    assert!(shelf.body.contains("BIO101"), "{}", shelf.body);

    let (_, code) = lms.video("teacher", library, "Cell division").await;
    let again = lms
        .post(
            "/api/lti/",
            &lms.signed(
                "/api/lti/",
                &Lms::launch("ContentItemSelectionRequest", "teacher", "Instructor"),
            ),
        )
        .await;
    assert_eq!(again.status, StatusCode::OK);
    assert!(again.body.contains("Cell division"), "{}", again.body);
    let back: Vec<String> = attributes(&again.body, "href")
        .into_iter()
        .filter(|h| h.starts_with(RETURN))
        .collect();
    assert_eq!(back.len(), 1, "{back:?}");
    let json_data = back[0].split_once("?jsonData=").unwrap().1;
    let data: Value = serde_json::from_str(&form_decode(json_data)).unwrap();
    let base = lms.app.app.url("");
    let base = base.trim_end_matches('/');
    assert_eq!(
        data,
        serde_json::json!([{
            "_ww_img": "",
            "_ww_src": format!("[warpwire:{base}/w/{code}?width=640&height=360]"),
        }])
    );
}

async fn a_content_item_pick_is_a_form_signed_for_the_platform(b: Backend) {
    let lms = Lms::start(b).await;
    let return_url = "https://lms.example.edu/mod/lti/contentitem_return.php?course=2";
    let mut fields = Lms::launch("ContentItemSelectionRequest", "teacher", "Instructor");
    fields.retain(|(n, _)| *n != "launch_presentation_return_url");
    fields.extend([
        ("content_item_return_url", return_url),
        ("data", "opaque&data"),
    ]);
    lms.post("/api/ltix/", &lms.signed("/api/ltix/", &fields))
        .await;
    let library = lms.course_library().unwrap();
    let (other, _) = lms.video("teacher", library, "Meiosis").await;
    let (media, _) = lms.video("teacher", library, "Mitosis").await;

    let picker = lms
        .post("/api/ltix/", &lms.signed("/api/ltix/", &fields))
        .await;
    assert_eq!(picker.status, StatusCode::OK, "{}", picker.body);
    let csp = picker.header("content-security-policy");
    assert!(
        csp.contains("form-action 'self' https://lms.example.edu"),
        "{csp}"
    );
    assert_eq!(attributes(&picker.body, "action"), [return_url, return_url]);
    // The platform reads the form and its return URL's query (`course=2`).
    let mut form = vec![("course".to_owned(), "2".to_owned())];
    form.extend(hidden_fields(&picker.body));
    // The platform checks the signature with the consumer's secret, as medialib does.
    let verified = SignedRequest::parse("POST", return_url, form)
        .unwrap()
        .verify(&lms.consumer.secret, lms.now())
        .unwrap_or_else(|e| panic!("medialib signs what it sends back: {e}: {}", picker.body));
    assert_eq!(
        verified.get("lti_message_type"),
        Some("ContentItemSelection")
    );
    assert_eq!(verified.get("data"), Some("opaque&data"));
    let items: Value = serde_json::from_str(verified.get("content_items").unwrap()).unwrap();
    let item = &items["@graph"][0];
    assert_eq!(item["@type"], "LtiLinkItem");
    // Two videos made in the same second: either may come first.
    let expected = if item["title"] == "Mitosis" {
        media
    } else {
        other
    };
    assert!(
        item["title"] == "Mitosis" || item["title"] == "Meiosis",
        "{item}"
    );
    assert_eq!(item["custom"]["media"], expected.to_string());
    assert_eq!(item["url"], lms.app.app.url("/api/ltix/"));
    // Every item's form is signed, each with a nonce of its own.
    let forms = all_hidden_fields(&picker.body);
    assert_eq!(forms.len(), 2, "{}", picker.body);
    let mut nonces = Vec::new();
    for fields in forms {
        let mut form = vec![("course".to_owned(), "2".to_owned())];
        form.extend(fields);
        let v = SignedRequest::parse("POST", return_url, form)
            .unwrap()
            .verify(&lms.consumer.secret, lms.now())
            .unwrap();
        nonces.push(v.nonce().to_owned());
        let items: Value = serde_json::from_str(v.get("content_items").unwrap()).unwrap();
        let id = items["@graph"][0]["custom"]["media"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(id == media.to_string() || id == other.to_string(), "{id}");
    }
    assert_ne!(nonces[0], nonces[1]);
    // Another secret does not verify it: the check above could fail.
    let mut form = vec![("course".to_owned(), "2".to_owned())];
    form.extend(hidden_fields(&picker.body));
    assert!(
        SignedRequest::parse("POST", return_url, form)
            .unwrap()
            .verify(&Secret::new("not the secret"), lms.now())
            .is_err()
    );
}

async fn a_learners_resource_launch_opens_the_player_with_the_session(b: Backend) {
    let lms = Lms::start(b).await;
    let teach = Lms::launch("ContentItemSelectionRequest", "teacher", "Instructor");
    lms.post("/api/lti/", &lms.signed("/api/lti/", &teach))
        .await;
    let library = lms.course_library().unwrap();
    let (media, code) = lms.video("teacher", library, "Meiosis").await;

    let mut fields = Lms::launch("basic-lti-launch-request", "student", "Learner");
    let media_text = media.to_string();
    fields.extend([
        ("resource_link_id", "rl-1"),
        ("custom_media", media_text.as_str()),
    ]);
    let launched = lms
        .post("/api/ltix/", &lms.signed("/api/ltix/", &fields))
        .await;
    assert_eq!(launched.status, StatusCode::SEE_OTHER, "{}", launched.body);
    assert_eq!(launched.header("location"), format!("/m/{code}"));
    let cookie = launched.session();
    let player = lms.get(&format!("/m/{code}"), &cookie).await;
    assert_eq!(player.status, StatusCode::OK, "{}", player.body);
    assert!(player.body.contains("Meiosis"));
    // Without the launch's session the private video's page asks to sign in.
    let anonymous = lms.get(&format!("/m/{code}"), "").await;
    assert_ne!(anonymous.status, StatusCode::OK);

    // The learner is a viewer of the course library.
    let student = lms
        .app
        .services
        .store()
        .user_by_unique_id(&UniqueId::parse("student").unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(
        lms.app
            .services
            .store()
            .explicit_level(library, student.id)
            .unwrap(),
        Some(medialib_domain::PermissionLevel::View)
    );
    // A launch without `media` answers the course library's media, framable, each linked to
    // its player (the library's own page refuses frames).
    let plain = Lms::launch("basic-lti-launch-request", "student", "Learner");
    let course = lms
        .post("/api/lti/", &lms.signed("/api/lti/", &plain))
        .await;
    assert_eq!(course.status, StatusCode::OK, "{}", course.body);
    assert!(
        course
            .header("content-security-policy")
            .contains("frame-ancestors *")
    );
    assert!(course.body.contains("Meiosis"), "{}", course.body);
    assert!(
        attributes(&course.body, "href").contains(&format!("/m/{code}")),
        "{}",
        course.body
    );
    assert!(attributes(&course.body, "href").contains(&format!("/libraries/{library}")));
    assert!(!course.session().is_empty());
}

async fn refused_launches_are_pages_that_say_why_and_are_counted(b: Backend) {
    let lms = Lms::start(b).await;
    let fields = Lms::launch("basic-lti-launch-request", "student", "Learner");
    let refused = assert_refused;

    let good = lms.signed("/api/lti/", &fields);
    assert_eq!(lms.post("/api/lti/", &good).await.status, StatusCode::OK);
    refused(
        &lms.post("/api/lti/", &good).await,
        StatusCode::FORBIDDEN,
        "sent before",
    );

    let mut tampered = lms.signed("/api/lti/", &fields);
    for (n, v) in &mut tampered {
        if n == "roles" {
            *v = "Instructor".into();
        }
    }
    refused(
        &lms.post("/api/lti/", &tampered).await,
        StatusCode::FORBIDDEN,
        "signature does not match",
    );

    let hour_ago = Timestamp::from_epoch_seconds(lms.now().epoch_seconds() - 3600);
    let params = fields
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
    let stale = sign(
        &lms.app.app.url("/api/lti/"),
        params,
        &lms.consumer.key,
        &lms.consumer.secret,
        "old",
        hour_ago,
    )
    .unwrap();
    refused(
        &lms.post("/api/lti/", &stale).await,
        StatusCode::FORBIDDEN,
        "from this server",
    );

    let learner_pick = lms.signed(
        "/api/lti/",
        &Lms::launch("ContentItemSelectionRequest", "student", "Learner"),
    );
    refused(
        &lms.post("/api/lti/", &learner_pick).await,
        StatusCode::FORBIDDEN,
        "Only teachers",
    );

    let unsigned: Vec<(String, String)> = fields
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
    refused(
        &lms.post("/api/ltix/", &unsigned).await,
        StatusCode::FORBIDDEN,
        "oauth_signature_method",
    );

    let mut unknown = fields.clone();
    unknown.retain(|(n, _)| *n != "lti_version");
    refused(
        &lms.post("/api/lti/", &lms.signed("/api/lti/", &unknown))
            .await,
        StatusCode::BAD_REQUEST,
        "lti_version",
    );

    // Signed for the other endpoint: the URL is part of the signature.
    let elsewhere = lms.signed("/api/ltix/", &fields);
    refused(
        &lms.post("/api/lti/", &elsewhere).await,
        StatusCode::FORBIDDEN,
        "signature does not match",
    );

    lms.app
        .services
        .lti()
        .remove_consumer(&lms.consumer.key)
        .unwrap();
    refused(
        &lms.post("/api/lti/", &lms.signed("/api/lti/", &fields))
            .await,
        StatusCode::FORBIDDEN,
        "no LTI consumer",
    );

    let get = lms.get("/api/lti/", "").await;
    assert_eq!(get.status, StatusCode::NOT_IMPLEMENTED);
    assert_eq!(get.header("allow"), "POST");

    let metrics = lms.get("/metrics", "").await.body;
    for (outcome, n) in [
        ("ok", 1),
        ("replay", 1),
        ("bad_signature", 2),
        ("stale", 1),
        ("learner_pick", 1),
        ("unsigned", 1),
        ("unsupported", 1),
        ("unknown_consumer", 1),
    ] {
        assert_launches(&metrics, "1.1", outcome, n);
    }
}

/// `/metrics` text counts `n` launches of LTI `version` with `outcome`.
pub(crate) fn assert_launches(metrics: &str, version: &str, outcome: &str, n: u32) {
    let line =
        format!("medialib_lti_launches_total{{version=\"{version}\",outcome=\"{outcome}\"}} {n}");
    assert!(metrics.contains(&line), "{line} not in\n{metrics}");
}

/// PyPI `lti`'s ToolConsumer, oauthlib, and a replay of Warpwire's Moodle plugin
/// (`tests/e2e/lti11_consumers.py`) against the running app.
async fn independent_consumers_and_warpwires_plugin_launch_it(b: Backend) {
    use crate::uploads::clients::{client_with_env, python, skipped};
    if skipped("independent_consumers_and_warpwires_plugin_launch_it") {
        return;
    }
    let python = python();
    let lms = Lms::start(b).await;
    // A teacher's launch makes the course library of `course-7`; a video goes into it.
    let teacher = [
        ("lti_version", "LTI-1p0"),
        ("lti_message_type", "basic-lti-launch-request"),
        ("user_id", "first-teacher"),
        ("roles", "Instructor"),
        ("context_id", "course-7"),
        ("context_title", "Biology 101"),
    ];
    let first = lms
        .post("/api/lti/", &lms.signed("/api/lti/", &teacher))
        .await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    let key = CourseKey::new(&lms.consumer.key, "course-7").unwrap();
    let library = lms
        .app
        .services
        .store()
        .course_library(&key)
        .unwrap()
        .unwrap();
    let (media, code) = lms
        .video(
            &format!("{}:first-teacher", lms.consumer.key),
            library,
            "Osmosis",
        )
        .await;

    let base = lms.app.app.url("");
    let summary = client_with_env(
        python,
        "lti11_consumers.py",
        vec![
            "--base".into(),
            base.trim_end_matches('/').to_owned(),
            "--key".into(),
            lms.consumer.key.clone(),
            "--secret".into(),
            lms.consumer.secret.expose().to_owned(),
            "--media".into(),
            media.to_string(),
            "--permlink".into(),
            format!("{}/w/{code}", base.trim_end_matches('/')),
        ],
        Vec::new(),
    )
    .await;
    assert_eq!(summary["failures"], serde_json::json!([]), "{summary}");
    assert!(summary["passed"].as_u64().unwrap() >= 11, "{summary}");
}

/// Chromium opens a course page that posts a launch into an iframe (`tests/e2e/lti_iframe.mjs`):
/// on the same site as medialib the picker shows and the session survives a navigation in
/// the frame to a private video's player; from another site the picker shows but the browser keeps no session (the
/// `SameSite=Lax` cookie of a cross-site frame), which is what docs/lti.md tells operators.
async fn a_course_page_frames_the_launch_in_chromium(b: Backend) {
    use crate::uploads::clients::{chromium, client_with_env, node, skipped};
    if skipped("a_course_page_frames_the_launch_in_chromium") {
        return;
    }
    let (node, chromium) = (node(), chromium());
    let lms = Lms::start(b).await;
    let teach = Lms::launch("ContentItemSelectionRequest", "teacher", "Instructor");
    let first = lms
        .post("/api/lti/", &lms.signed("/api/lti/", &teach))
        .await;
    assert_eq!(first.status, StatusCode::OK);
    let library = lms.course_library().unwrap();
    let (_, code) = lms.video("teacher", library, "Photosynthesis").await;
    let form = |fields: Vec<(String, String)>| {
        serde_json::to_string(&fields.into_iter().map(|(n, v)| [n, v]).collect::<Vec<_>>()).unwrap()
    };
    let out = client_with_env(
        node,
        "lti_iframe.mjs",
        vec![
            "--action".into(),
            lms.app.app.url("/api/lti/"),
            "--same".into(),
            form(lms.signed("/api/lti/", &teach)),
            "--cross".into(),
            form(lms.signed("/api/lti/", &teach)),
            "--player".into(),
            format!("/m/{code}"),
        ],
        vec![("CHROMIUM", chromium.display().to_string())],
    )
    .await;
    // On a failure, what the server counted beside what the frames showed: each launch's
    // outcome and status, and any load shedding.
    let metrics = lms.get("/metrics", "").await.body;
    let counted: Vec<&str> = metrics
        .lines()
        .filter(|l| {
            l.starts_with("medialib_lti_launches_total")
                || l.starts_with("medialib_requests_shed")
                || l.starts_with("medialib_http_requests_total{route=\"/api/lti")
        })
        .collect();
    let why = format!("{out}\n{}", counted.join("\n"));
    assert!(out["error"].is_null(), "{why}");
    let same = &out["sameSite"];
    assert_eq!(same["picker"], true, "{why}");
    assert_eq!(same["sessionCookie"], true, "{why}");
    let title = |record: &Value| {
        record["playerTitle"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        title(same).contains("Photosynthesis"),
        "the private video, with the launch's session: {why}"
    );
    let cross = &out["crossSite"];
    assert_eq!(
        cross["picker"], true,
        "the launch itself works in any frame: {why}"
    );
    assert_eq!(cross["sessionCookie"], false, "{why}");
    assert!(
        !title(cross).contains("Photosynthesis"),
        "no session, no private video: {why}"
    );
    assert_eq!(out["violations"], serde_json::json!([]), "{why}");
}
