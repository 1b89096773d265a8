//! The served OpenAPI document (`GET /api/openapi.json`): OpenAPI 3.1, every route of
//! the API documented with its methods, every reference resolvable, and the answers of
//! a real session (anonymous and signed in, success and error) conform to it.
//!
//! The conformance test validates each answer against the schema the document gives for
//! its path, method and status with a small JSON Schema validator (below) that knows
//! the keywords the document uses. `tests/schemathesis/run.sh` (in CI) fuzzes the same
//! document against a running server; it runs anonymously, so this test is where the
//! signed-in answers are checked.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::records::{MediaApp, audio_files, video_files};
use super::{Answer, ApiApp, Backend};

/// Every path and method of the route table (api/mod.rs, pages.rs, health), spelled as
/// the document spells it.
const OPERATIONS: &[(&str, &[&str])] = &[
    (
        "/api/describe/c/{collection_uuid}/o/{object_uuid}",
        &["get", "put", "post", "options"],
    ),
    (
        "/api/user/c/{collection_uuid}/o/{user_id}",
        &["get", "post", "options"],
    ),
    (
        "/api/permission/c/{collection_uuid}/o/{user_id}",
        &["get", "put", "post", "delete", "options"],
    ),
    (
        "/api/info/c/{collection_uuid}/o/{object_id}",
        &["get", "post", "options"],
    ),
    (
        "/api/embed/c/{collection_uuid}/o/{object_id}",
        &["get", "options"],
    ),
    (
        "/api/video/c/{collection_uuid}/o/{object_id}",
        &["get", "options"],
    ),
    ("/api/authenticate", &["get", "options"]),
    (
        "/api/catalog/c/{collection_uuid}/o/{object_uuid}",
        &["get", "put", "post", "delete", "options"],
    ),
    ("/api/catalog/o/{collection_uuid}", &["get", "options"]),
    ("/api/contribute/o/{object_id}", &["get", "options"]),
    (
        "/api/media/c/{collection_uuid}/o/{object_id}",
        &["get", "post", "delete", "options"],
    ),
    (
        "/api/upload/c/{collection_uuid}/o/{object_uuid}",
        &["put", "post", "delete", "options", "head", "patch"],
    ),
    ("/m/{object}/{expires}/{signature}/{file}", &["get"]),
    ("/api/oembed", &["get", "options"]),
    ("/api/openapi.json", &["get"]),
    ("/healthz", &["get"]),
    ("/readyz", &["get"]),
];

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

async fn fetch_document(api: &ApiApp) -> Value {
    let res = api.app.get("/api/openapi.json").await;
    assert_eq!(res.status(), StatusCode::OK);
    let ctype = res.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(ctype.starts_with("application/json"), "{ctype}");
    res.json().await.unwrap()
}

async fn document_is_openapi_3_1_and_lists_every_route(b: Backend) {
    let api = ApiApp::start(b).await;
    let doc = fetch_document(&api).await;
    let version = doc["openapi"].as_str().unwrap();
    assert!(version.starts_with("3.1."), "{version}");
    assert_eq!(doc["info"]["title"], "medialib");

    let mut expected: Vec<(String, String)> = OPERATIONS
        .iter()
        .flat_map(|(p, ms)| ms.iter().map(move |m| ((*p).to_owned(), (*m).to_owned())))
        .collect();
    let mut documented: Vec<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(p, item)| {
            METHODS
                .iter()
                .filter(|m| item.get(**m).is_some())
                .map(move |m| (p.clone(), (*m).to_owned()))
        })
        .collect();
    expected.sort();
    documented.sort();
    assert_eq!(documented, expected);

    // Every operation has an id, a summary and a success response.
    for (path, method) in &documented {
        let op = &doc["paths"][path][method];
        assert!(op["operationId"].is_string(), "{method} {path}");
        assert!(op["summary"].is_string(), "{method} {path}");
        let responses = op["responses"].as_object().unwrap();
        assert!(
            responses.keys().any(|s| s.starts_with('2')),
            "{method} {path} has no success response"
        );
    }
}

async fn references_resolve_and_errors_and_security_are_described(b: Backend) {
    let api = ApiApp::start(b).await;
    let doc = fetch_document(&api).await;

    let mut refs = Vec::new();
    collect_refs(&doc, &mut refs);
    assert!(!refs.is_empty());
    for r in &refs {
        let pointer = r
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("external ref {r}"));
        assert!(doc.pointer(pointer).is_some(), "unresolved {r}");
    }

    let bearer = &doc["components"]["securitySchemes"]["bearer"];
    assert_eq!(bearer["type"], "http");
    assert_eq!(bearer["scheme"], "bearer");
    assert!(bearer["description"].as_str().unwrap().contains("OAuth"));
    // Either scheme: one token, pasted in or got by the authorization-code flow with PKCE
    // (the API reference page's Authorize button).
    assert_eq!(
        doc["security"],
        json!([{"bearer": []}, {"oauth2": ["read", "write"]}])
    );
    let oauth2 = &doc["components"]["securitySchemes"]["oauth2"];
    assert_eq!(oauth2["type"], "oauth2");
    let flows = oauth2["flows"].as_object().unwrap();
    assert_eq!(flows.keys().collect::<Vec<_>>(), ["authorizationCode"]);

    let error_body = &doc["components"]["schemas"]["ErrorBody"];
    assert_eq!(error_body["required"], json!(["message"]));

    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let responses = op["responses"].as_object().unwrap();
            // Every error response has the ErrorBody schema.
            for (status, response) in responses {
                if status.starts_with('4') || status.starts_with('5') {
                    let response = resolve(&doc, response);
                    assert_eq!(
                        response["content"]["application/json"]["schema"]["$ref"],
                        "#/components/schemas/ErrorBody",
                        "{method} {path} {status}"
                    );
                }
            }
            // An operation that needs a token documents the 401 (public ones list `{}`).
            let security = op.get("security").unwrap_or(&doc["security"]);
            let needs_token = security
                .as_array()
                .unwrap()
                .iter()
                .all(|req| req.as_object().is_some_and(|r| !r.is_empty()));
            if needs_token {
                assert!(responses.contains_key("401"), "{method} {path}");
                let unauthorized = resolve(&doc, &responses["401"]);
                assert!(
                    unauthorized["headers"].get("WWW-Authenticate").is_some(),
                    "{method} {path}"
                );
            }
        }
    }
    // The public calls (spec §5) need no token.
    for (path, method) in [
        ("/api/describe/c/{collection_uuid}/o/{object_uuid}", "get"),
        ("/api/authenticate", "get"),
        ("/healthz", "get"),
    ] {
        let security = doc["paths"][path][method]["security"].as_array().unwrap();
        assert!(
            security.iter().any(|r| r == &json!({})),
            "{method} {path} is public"
        );
    }
}

async fn head_and_other_methods_on_the_document(b: Backend) {
    let api = ApiApp::start(b).await;
    let res = api
        .app
        .client
        .head(api.app.url("/api/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.bytes().await.unwrap().is_empty());
    let a = api
        .call(Method::POST, "/api/openapi.json", None, &[("a", "b")])
        .await;
    assert_eq!(a.status, StatusCode::NOT_IMPLEMENTED);
    assert_eq!(a.headers["allow"], "GET, HEAD");
    assert!(a.json["message"].is_string());
}

/// Calls the API as a client would and checks every answer against the document.
async fn a_real_session_conforms_to_the_document(b: Backend) {
    let api = ApiApp::start(b).await;
    let doc = fetch_document(&api).await;
    let mut checked = Checked::new(&doc);
    let (alice, t) = api.signed_in("alice");
    let (_, bob) = api.signed_in("bob");

    const DESCRIBE: &str = "/api/describe/c/{collection_uuid}/o/{object_uuid}";
    const CATALOG: &str = "/api/catalog/c/{collection_uuid}/o/{object_uuid}";
    const USER: &str = "/api/user/c/{collection_uuid}/o/{user_id}";
    const PERMISSION: &str = "/api/permission/c/{collection_uuid}/o/{user_id}";
    const INFO: &str = "/api/info/c/{collection_uuid}/o/{object_id}";

    // describe: create a library, an object in it, a sub-library.
    let a = api
        .call(
            Method::PUT,
            "/api/describe/c/0/o/0",
            Some(&t),
            &[("type", "catalog"), ("title", "Lectures")],
        )
        .await;
    checked.answer(DESCRIBE, "put", &a);
    let lib = a.json["uuid"].as_str().unwrap().to_owned();
    let a = api
        .call(
            Method::PUT,
            &format!("/api/describe/c/{lib}/o/0"),
            Some(&t),
            &[
                ("type", "video"),
                ("title", "Intro"),
                ("public", "true"),
                ("duration", "90"),
                ("properties[course]", "CS101"),
            ],
        )
        .await;
    checked.answer(DESCRIBE, "put", &a);
    let video = a.json["uuid"].as_str().unwrap().to_owned();
    let sub = api.object(&t, &lib, "catalog", "Week 1").await;
    let private = api.object(&t, &lib, "file", "Notes").await;

    let v = format!("/api/describe/c/{lib}/o/{video}");
    for (token, label) in [(Some(t.as_str()), "complete"), (None, "limited")] {
        let a = api.get(&v, token).await;
        assert_eq!(a.status, StatusCode::OK, "{label}");
        checked.answer(DESCRIBE, "get", &a);
    }
    let a = api.get(&v, Some(&bob)).await;
    checked.answer(DESCRIBE, "get", &a); // limited: public, no view
    let p = format!("/api/describe/c/{lib}/o/{private}");
    checked.status(DESCRIBE, "get", &api.get(&p, None).await, 401);
    checked.status(DESCRIBE, "get", &api.get(&p, Some(&bob)).await, 403);
    checked.status(
        DESCRIBE,
        "get",
        &api.get(&format!("/api/describe/c/{sub}/o/{video}"), Some(&t))
            .await,
        404,
    );
    checked.status(
        DESCRIBE,
        "get",
        &api.get(&format!("/api/describe/c/{lib}/o/nope"), Some(&t))
            .await,
        400,
    );
    let a = api
        .call(
            Method::POST,
            &v,
            Some(&t),
            &[("type", "video"), ("title", "Intro 2")],
        )
        .await;
    checked.status(DESCRIBE, "post", &a, 202);
    let a = api
        .call(Method::POST, &v, Some(&t), &[("type", "audio")])
        .await;
    checked.status(DESCRIBE, "post", &a, 409);
    let a = api.call(Method::OPTIONS, &v, Some(&t), &[]).await;
    checked.status(DESCRIBE, "options", &a, 200);
    let big = "x".repeat(2 << 20);
    let a = api
        .call(
            Method::PUT,
            "/api/describe/c/0/o/0",
            Some(&t),
            &[("title", &big)],
        )
        .await;
    checked.status(DESCRIBE, "put", &a, 413);

    // authenticate: good, absent and bad tokens.
    for token in [Some(t.as_str()), None, Some("mla_not-a-token")] {
        let a = api.get("/api/authenticate", token).await;
        checked.status("/api/authenticate", "get", &a, 200);
    }

    // catalog: list (both paths, with ts and completeRecords), add, cycle, remove.
    let a = api
        .get(&format!("/api/catalog/c/{lib}/o/0"), Some(&t))
        .await;
    checked.status(CATALOG, "get", &a, 200);
    assert!(a.json["list"].as_array().unwrap().len() >= 3);
    let a = api
        .get(
            &format!("/api/catalog/o/{lib}?ts=1&completeRecords=1"),
            Some(&t),
        )
        .await;
    checked.status("/api/catalog/o/{collection_uuid}", "get", &a, 200);
    let a = api
        .get(&format!("/api/catalog/c/{lib}/o/0?ts=0"), Some(&t))
        .await;
    checked.status(CATALOG, "get", &a, 400);
    // A page with a `next`, the page after it, and a malformed cursor.
    let a = api
        .get(&format!("/api/catalog/o/{lib}?limit=1"), Some(&t))
        .await;
    checked.status("/api/catalog/o/{collection_uuid}", "get", &a, 200);
    let next = a.json["next"].as_str().unwrap().to_owned();
    let a = api
        .get(
            &format!("/api/catalog/c/{lib}/o/0?limit=1&after={next}"),
            Some(&t),
        )
        .await;
    checked.status(CATALOG, "get", &a, 200);
    let a = api
        .get(
            &format!("/api/catalog/c/{lib}/o/0?limit=1&after=x"),
            Some(&t),
        )
        .await;
    checked.status(CATALOG, "get", &a, 400);
    let a = api
        .call(
            Method::PUT,
            &format!("/api/catalog/c/{sub}/o/{video}"),
            Some(&t),
            &[],
        )
        .await;
    checked.status(CATALOG, "put", &a, 201);
    let a = api
        .call(
            Method::PUT,
            &format!("/api/catalog/c/{sub}/o/{lib}"),
            Some(&t),
            &[],
        )
        .await;
    checked.status(CATALOG, "put", &a, 409);
    let a = api
        .call(
            Method::DELETE,
            &format!("/api/catalog/c/{sub}/o/{video}"),
            Some(&t),
            &[],
        )
        .await;
    checked.status(CATALOG, "delete", &a, 200);
    let a = api.get(&format!("/api/catalog/c/{lib}/o/0"), None).await;
    checked.status(CATALOG, "get", &a, 401);

    // info, embed, video.
    let a = api
        .get(&format!("/api/info/c/{lib}/o/{video}"), Some(&t))
        .await;
    checked.status(INFO, "get", &a, 200);
    let a = api
        .call(
            Method::POST,
            &format!("/api/info/c/{lib}/o/{video}"),
            Some(&t),
            &[("description", "Week one")],
        )
        .await;
    checked.status(INFO, "post", &a, 202);
    let a = api
        .get(&format!("/api/embed/c/{lib}/o/{video}"), Some(&t))
        .await;
    checked.status(
        "/api/embed/c/{collection_uuid}/o/{object_id}",
        "get",
        &a,
        200,
    );
    let a = api
        .get(&format!("/api/video/c/{lib}/o/{video}"), Some(&t))
        .await;
    checked.status(
        "/api/video/c/{collection_uuid}/o/{object_id}",
        "get",
        &a,
        200,
    );
    let a = api
        .get(&format!("/api/video/c/{lib}/o/{private}"), Some(&t))
        .await;
    checked.status(
        "/api/video/c/{collection_uuid}/o/{object_id}",
        "get",
        &a,
        400,
    );

    // user: self, create by uniqueId, rename, a uniqueId that is taken.
    let a = api.get(&format!("/api/user/c/{lib}/o/0"), Some(&t)).await;
    checked.status(USER, "get", &a, 200);
    assert_eq!(a.json["userId"], alice.id.to_string());
    let a = api
        .call(
            Method::POST,
            &format!("/api/user/c/{lib}/o/0"),
            Some(&t),
            &[("uniqueId", "carol"), ("firstName", "Carol")],
        )
        .await;
    checked.status(USER, "post", &a, 201);
    let carol = a.json["userId"].as_str().unwrap().to_owned();
    let a = api
        .call(
            Method::POST,
            &format!("/api/user/c/{lib}/o/{}", alice.id),
            Some(&t),
            &[("lastName", "Jones")],
        )
        .await;
    checked.status(USER, "post", &a, 202);
    // Another user's names: only that user or an organization admin changes them.
    let a = api
        .call(
            Method::POST,
            &format!("/api/user/c/{lib}/o/{carol}"),
            Some(&t),
            &[("lastName", "Jones")],
        )
        .await;
    checked.status(USER, "post", &a, 403);
    let a = api
        .get(&format!("/api/user/c/{lib}/o/{carol}"), Some(&t))
        .await;
    checked.status(USER, "get", &a, 200);

    // permission: list, grant by uniqueId, revoke, demote the last admin.
    let all = format!("/api/permission/c/{lib}/o/0");
    let a = api.get(&all, Some(&t)).await;
    checked.status(PERMISSION, "get", &a, 200);
    let a = api
        .call(
            Method::PUT,
            &all,
            Some(&t),
            &[("uniqueId", "bob"), ("level", "view")],
        )
        .await;
    checked.status(PERMISSION, "put", &a, 201);
    let a = api
        .call(
            Method::POST,
            &all,
            Some(&t),
            &[("uniqueId", "bob"), ("level", "admin")],
        )
        .await;
    checked.status(PERMISSION, "post", &a, 201);
    let a = api
        .call(Method::DELETE, &all, Some(&t), &[("uniqueId", "bob")])
        .await;
    checked.status(PERMISSION, "delete", &a, 200);
    let a = api
        .call(
            Method::PUT,
            &format!("/api/permission/c/{lib}/o/{}", alice.id),
            Some(&t),
            &[("level", "view")],
        )
        .await;
    checked.status(PERMISSION, "put", &a, 409);
    checked.status(PERMISSION, "get", &api.get(&all, Some(&bob)).await, 403);

    // contribute.
    let a = api
        .get(&format!("/api/contribute/o/{video}"), Some(&t))
        .await;
    checked.status("/api/contribute/o/{object_id}", "get", &a, 200);
    assert!(!a.json.as_array().unwrap().is_empty());

    // oembed of the public video's permLink.
    let perm = api.get(&v, Some(&t)).await.json["permLink"]
        .as_str()
        .unwrap()
        .to_owned();
    let a = api
        .send(
            api.app
                .client
                .get(api.app.url("/api/oembed"))
                .query(&[("url", perm.as_str()), ("maxwidth", "320")]),
        )
        .await;
    checked.status("/api/oembed", "get", &a, 200);
    let a = api
        .send(
            api.app
                .client
                .get(api.app.url("/api/oembed"))
                .query(&[("url", perm.as_str()), ("format", "xml")]),
        )
        .await;
    checked.status("/api/oembed", "get", &a, 501);
    checked.status(
        "/api/oembed",
        "get",
        &api.get("/api/oembed", None).await,
        400,
    );

    // OPTIONS everywhere, health, and the document itself.
    for (path, template) in [
        (
            format!("/api/catalog/o/{lib}"),
            "/api/catalog/o/{collection_uuid}",
        ),
        (
            format!("/api/contribute/o/{video}"),
            "/api/contribute/o/{object_id}",
        ),
        (format!("/api/permission/c/{lib}/o/0"), PERMISSION),
        ("/api/oembed".to_owned(), "/api/oembed"),
    ] {
        let a = api.call(Method::OPTIONS, &path, None, &[]).await;
        checked.status(template, "options", &a, 200);
    }
    checked.status("/healthz", "get", &api.get("/healthz", None).await, 200);
    checked.status("/readyz", "get", &api.get("/readyz", None).await, 200);
    checked.status(
        "/api/openapi.json",
        "get",
        &api.get("/api/openapi.json", None).await,
        200,
    );

    assert!(checked.count >= 45, "checked {} answers", checked.count);
}

/// The records of processed media (images, the video record's files, the media call's
/// derived files) conform to the document too.
async fn records_of_processed_media_conform_to_the_document(b: Backend) {
    let m = MediaApp::start(b).await;
    let doc = fetch_document(&m.app.api).await;
    let mut checked = Checked::new(&doc);
    let lib = m.app.lib.clone();
    let video = m.processed("lecture.mp4", "0a", &video_files()).await;
    let song = m.processed("song.m4a", "0b", &audio_files()).await;
    let a = m
        .app
        .api
        .call(
            Method::POST,
            &format!("/api/describe/c/{lib}/o/{video}"),
            Some(&m.app.token),
            &[("type", "video"), ("public", "true")],
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED);

    const DESCRIBE: &str = "/api/describe/c/{collection_uuid}/o/{object_uuid}";
    const VIDEO: &str = "/api/video/c/{collection_uuid}/o/{object_id}";
    const MEDIA: &str = "/api/media/c/{collection_uuid}/o/{object_id}";
    let describe = format!("/api/describe/c/{lib}/o/{video}");
    let full = m.get(&describe).await;
    checked.status(DESCRIBE, "get", &full, 200);
    assert_eq!(full.json["images"].as_object().unwrap().len(), 3);
    let limited = m.app.api.get(&describe, None).await;
    checked.status(DESCRIBE, "get", &limited, 200);
    assert_eq!(limited.json["images"].as_object().unwrap().len(), 3);
    for query in ["", "?completeRecords=1", "?limit=1"] {
        let a = m.get(&format!("/api/catalog/c/{lib}/o/0{query}")).await;
        checked.status(
            "/api/catalog/c/{collection_uuid}/o/{object_uuid}",
            "get",
            &a,
            200,
        );
        assert!(
            a.json["list"]
                .as_array()
                .unwrap()
                .iter()
                .any(|i| i["images"].as_object().unwrap().len() == 3),
            "{query}: {}",
            a.json
        );
    }
    for (object, files) in [(&video, 4), (&song, 1)] {
        let a = m.get(&format!("/api/video/c/{lib}/o/{object}")).await;
        checked.status(VIDEO, "get", &a, 200);
        assert_eq!(
            a.json["properties"]["files"].as_array().unwrap().len(),
            files
        );
        let a = m.get(&format!("/api/media/c/{lib}/o/{object}")).await;
        checked.status(MEDIA, "get", &a, 200);
    }
}

// The document does not depend on the database: SQLite only.
mod sqlite {
    use super::Backend::Sqlite;

    #[tokio::test]
    async fn document_is_openapi_3_1_and_lists_every_route() {
        super::document_is_openapi_3_1_and_lists_every_route(Sqlite).await;
    }

    #[tokio::test]
    async fn references_resolve_and_errors_and_security_are_described() {
        super::references_resolve_and_errors_and_security_are_described(Sqlite).await;
    }

    #[tokio::test]
    async fn head_and_other_methods_on_the_document() {
        super::head_and_other_methods_on_the_document(Sqlite).await;
    }

    #[tokio::test]
    async fn a_real_session_conforms_to_the_document() {
        super::a_real_session_conforms_to_the_document(Sqlite).await;
    }

    #[tokio::test]
    async fn records_of_processed_media_conform_to_the_document() {
        super::records_of_processed_media_conform_to_the_document(Sqlite).await;
    }
}

// ------------------------------------------------------------------ checking answers

/// Checks answers against the document and counts them.
struct Checked<'d> {
    doc: &'d Value,
    count: usize,
}

impl<'d> Checked<'d> {
    fn new(doc: &'d Value) -> Self {
        Self { doc, count: 0 }
    }

    /// Asserts the status, then conformance.
    fn status(&mut self, path: &str, method: &str, a: &Answer, status: u16) {
        assert_eq!(a.status.as_u16(), status, "{method} {path}: {a:?}");
        self.answer(path, method, a);
    }

    /// Asserts that the document lists the answer's status for the operation and that the
    /// body matches its schema (or is empty when the response has no content).
    fn answer(&mut self, path: &str, method: &str, a: &Answer) {
        let doc = self.doc;
        let op = doc["paths"][path]
            .get(method)
            .unwrap_or_else(|| panic!("{method} {path} is not in the document"));
        let status = a.status.as_str();
        let response = op["responses"]
            .get(status)
            .unwrap_or_else(|| panic!("{method} {path}: status {status} is not documented: {a:?}"));
        let response = resolve(doc, response);
        match response["content"].get("application/json") {
            Some(content) => {
                let ctype = a.headers["content-type"].to_str().unwrap();
                assert!(
                    ctype.starts_with("application/json"),
                    "{method} {path}: {ctype}"
                );
                let mut errors = Vec::new();
                validate(doc, &content["schema"], &a.json, "", &mut errors);
                assert!(
                    errors.is_empty(),
                    "{method} {path} {status} does not match the document:\n{}\nbody: {}",
                    errors.join("\n"),
                    a.json
                );
            }
            None => assert!(
                a.json.is_null(),
                "{method} {path} {status} documents no body: {a:?}"
            ),
        }
        self.count += 1;
    }
}

/// Follows a local `$ref` (once is enough for this document).
fn resolve<'a>(doc: &'a Value, v: &'a Value) -> &'a Value {
    match v["$ref"].as_str() {
        Some(r) => doc
            .pointer(r.trim_start_matches('#'))
            .unwrap_or_else(|| panic!("unresolved {r}")),
        None => v,
    }
}

fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                match (k.as_str(), child) {
                    ("$ref", Value::String(r)) => out.push(r.clone()),
                    _ => collect_refs(child, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect_refs(i, out)),
        _ => {}
    }
}

fn type_matches(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        _ => false,
    }
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_digit() || ('a'..='f').contains(&c),
        })
}

/// The JSON Schema keywords the document uses; errors name the instance location.
fn validate(doc: &Value, schema: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
    let schema = resolve(doc, schema);
    let here = if at.is_empty() { "/" } else { at };
    match &schema["type"] {
        Value::String(t) if !type_matches(t, v) => {
            errors.push(format!("{here}: expected {t}, got {v}"));
            return;
        }
        Value::Array(ts) if !ts.iter().any(|t| type_matches(t.as_str().unwrap_or(""), v)) => {
            errors.push(format!("{here}: expected one of {ts:?}, got {v}"));
            return;
        }
        _ => {}
    }
    if let Some(values) = schema["enum"].as_array() {
        if !values.contains(v) {
            errors.push(format!("{here}: {v} is not one of {values:?}"));
        }
    }
    if schema["format"] == "uuid" {
        if let Some(s) = v.as_str() {
            if !is_uuid(s) {
                errors.push(format!("{here}: {s:?} is not a lowercase dashed UUID"));
            }
        }
    }
    if let (Some(max), Some(s)) = (schema["maxLength"].as_u64(), v.as_str()) {
        if s.chars().count() as u64 > max {
            errors.push(format!("{here}: longer than {max}"));
        }
    }
    if let (Some(min), Some(n)) = (schema["minimum"].as_i64(), v.as_i64()) {
        if n < min {
            errors.push(format!("{here}: {n} is below {min}"));
        }
    }
    if let Some(obj) = v.as_object() {
        let properties = schema["properties"].as_object();
        for name in schema["required"].as_array().into_iter().flatten() {
            let name = name.as_str().unwrap();
            if !obj.contains_key(name) {
                errors.push(format!("{here}: missing required {name:?}"));
            }
        }
        for (k, child) in obj {
            let at = format!("{at}/{k}");
            if let Some(names) = schema["propertyNames"]["enum"].as_array() {
                if !names.contains(&json!(k)) {
                    errors.push(format!("{at}: key not one of {names:?}"));
                }
            }
            match properties.and_then(|p| p.get(k)) {
                Some(s) => validate(doc, s, child, &at, errors),
                None => match &schema["additionalProperties"] {
                    Value::Bool(false) => errors.push(format!("{at}: not in the document")),
                    extra @ Value::Object(_) => validate(doc, extra, child, &at, errors),
                    _ => {}
                },
            }
        }
    }
    if let (Some(items), Some(array)) = (schema.get("items"), v.as_array()) {
        for (i, item) in array.iter().enumerate() {
            validate(doc, items, item, &format!("{at}/{i}"), errors);
        }
    }
    if let Some(all) = schema["allOf"].as_array() {
        for s in all {
            validate(doc, s, v, at, errors);
        }
    }
    for (keyword, exactly_one) in [("oneOf", true), ("anyOf", false)] {
        if let Some(options) = schema[keyword].as_array() {
            let matching = options
                .iter()
                .filter(|s| {
                    let mut e = Vec::new();
                    validate(doc, s, v, at, &mut e);
                    e.is_empty()
                })
                .count();
            let ok = if exactly_one {
                matching == 1
            } else {
                matching >= 1
            };
            if !ok {
                errors.push(format!("{here}: {matching} of the {keyword} schemas match"));
            }
        }
    }
}

#[test]
fn the_validator_catches_what_it_should() {
    let doc = json!({"components": {"schemas": {
        "R": {"type": "object", "additionalProperties": false, "required": ["a"],
              "properties": {"a": {"type": "string", "enum": ["x"]},
                             "u": {"type": "string", "format": "uuid"},
                             "m": {"type": "object", "propertyNames": {"enum": ["k"]},
                                   "additionalProperties": {"type": "integer"}}}},
        "Either": {"oneOf": [{"$ref": "#/components/schemas/R"}, {"type": "object"}]}}}});
    let r = json!({"$ref": "#/components/schemas/R"});
    let errors = |schema: &Value, v: Value| {
        let mut e = Vec::new();
        validate(&doc, schema, &v, "", &mut e);
        e
    };
    assert!(errors(&r, json!({"a": "x", "m": {"k": 1}})).is_empty());
    assert_eq!(errors(&r, json!({})).len(), 1, "missing required");
    assert_eq!(errors(&r, json!({"a": "y"})).len(), 1, "enum");
    assert_eq!(errors(&r, json!({"a": "x", "z": 1})).len(), 1, "closed");
    assert_eq!(errors(&r, json!({"a": "x", "u": "ABC"})).len(), 1, "uuid");
    assert_eq!(
        errors(&r, json!({"a": "x", "m": {"j": "s"}})).len(),
        2,
        "map"
    );
    let either = json!({"$ref": "#/components/schemas/Either"});
    assert!(errors(&either, json!({"b": 1})).is_empty());
    assert_eq!(errors(&either, json!({"a": "x"})).len(), 1, "both match");
}
