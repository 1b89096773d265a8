//! The served OpenAPI document (`GET /api/openapi.json`): OpenAPI 3.1, every route of
//! the API and of the authorization server documented with its methods, every reference
//! resolvable, the answers of a real session (anonymous and signed in, success and error,
//! JSON, pages and redirects) conform to it, and the links from what creates an object or a
//! user lead to the operations on it.
//!
//! The conformance test validates each answer against the schema the document gives for
//! its path, method and status with a small JSON Schema validator (below) that knows
//! the keywords the document uses. `tests/schemathesis/run.sh` (in CI) fuzzes the same
//! document against a running server; it runs anonymously, so this test is where the
//! signed-in answers are checked.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use medialib_domain::oauth::AuthorizeParams;

use super::records::{MediaApp, audio_files, video_files};
use super::{Answer, ApiApp, Backend, REDIRECT, register_client};

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
    ("/api/oauth/authorize", &["get", "post", "options"]),
    ("/api/oauth/access_token", &["post", "options"]),
    ("/api/oauth/revoke", &["post", "options"]),
    ("/api/oauth/introspect", &["post", "options"]),
    ("/.well-known/oauth-authorization-server", &["get"]),
    ("/api/logout", &["post", "options"]),
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

    // Every operation has an id, a summary and a success response (the consent form's is
    // its redirect to the client, a 303).
    for (path, method) in &documented {
        let op = &doc["paths"][path][method];
        assert!(op["operationId"].is_string(), "{method} {path}");
        assert!(op["summary"].is_string(), "{method} {path}");
        let responses = op["responses"].as_object().unwrap();
        assert!(
            responses.keys().any(|s| s.starts_with('2') || s == "303"),
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

    let error_body = json!({"$ref": "#/components/schemas/ErrorBody"});
    let oauth_error = json!({"$ref": "#/components/schemas/OAuthError"});
    let either = json!({"oneOf": [oauth_error, error_body]});
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let responses = op["responses"].as_object().unwrap();
            // Every error response has the ErrorBody schema; the client endpoints of the
            // authorization server answer RFC 6749 errors (OAuthError) too, and its browser
            // endpoint error pages (HTML).
            let oauth_client_endpoint = [
                "/api/oauth/access_token",
                "/api/oauth/revoke",
                "/api/oauth/introspect",
            ]
            .contains(&path.as_str())
                && method == "post";
            for (status, response) in responses {
                if status.starts_with('4') || status.starts_with('5') {
                    let response = resolve(&doc, response);
                    let content = response["content"]
                        .as_object()
                        .unwrap_or_else(|| panic!("{method} {path} {status} documents no body"));
                    match content.get("application/json") {
                        Some(json) if oauth_client_endpoint => assert!(
                            [&error_body, &oauth_error, &either].contains(&&json["schema"]),
                            "{method} {path} {status}: {}",
                            json["schema"]
                        ),
                        Some(json) => {
                            assert_eq!(json["schema"], error_body, "{method} {path} {status}")
                        }
                        None => {
                            assert_eq!(path, "/api/oauth/authorize", "{method} {status}");
                            assert!(
                                content.contains_key("text/html"),
                                "{method} {path} {status}"
                            );
                        }
                    }
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

/// A raw answer: pages and redirects are no JSON.
#[derive(Debug)]
struct Raw {
    status: StatusCode,
    headers: reqwest::header::HeaderMap,
    body: String,
}

async fn raw(req: reqwest::RequestBuilder) -> Raw {
    let res = req.send().await.unwrap();
    Raw {
        status: res.status(),
        headers: res.headers().clone(),
        body: res.text().await.unwrap(),
    }
}

/// The authorization server's endpoints and `/api/logout` answer as the document says: JSON
/// records, RFC 6749 errors, HTML pages, redirects with `Location`.
async fn the_authorization_server_conforms_to_the_document(b: Backend) {
    let api = ApiApp::start(b).await;
    let doc = fetch_document(&api).await;
    let mut checked = Checked::new(&doc);
    let client = register_client(&api.services);
    let secret = client.client_secret.as_ref().unwrap().expose().to_owned();
    let (alice, alices) = api.signed_in("alice");
    let http = &api.app.client;

    // A code for alice, with offline access, the way the consent page makes it.
    let params = AuthorizeParams {
        response_type: Some("code"),
        client_id: Some(&client.client_id),
        redirect_uri: Some(REDIRECT),
        state: Some("s"),
        scope: Some("read write"),
        access_type: Some("offline"),
        ..AuthorizeParams::default()
    };
    let request = api.services.oauth().start_authorization(&params).unwrap();
    let code = api
        .services
        .oauth()
        .approve_authorization(request, alice.id)
        .unwrap()
        .param("code")
        .unwrap()
        .to_owned();

    const TOKEN: &str = "/api/oauth/access_token";
    const REVOKE: &str = "/api/oauth/revoke";
    const INTROSPECT: &str = "/api/oauth/introspect";
    const AUTHORIZE: &str = "/api/oauth/authorize";
    let post = |path: &str, form: &[(&str, &str)]| {
        http.post(api.app.url(path))
            .basic_auth(&client.client_id, Some(&secret))
            .form(form)
    };
    let a = api
        .send(post(
            TOKEN,
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", REDIRECT),
            ],
        ))
        .await;
    checked.status(TOKEN, "post", &a, 200);
    let access = a.json["access_token"].as_str().unwrap().to_owned();
    let refresh = a.json["refresh_token"].as_str().unwrap().to_owned();
    let a = api
        .send(post(
            TOKEN,
            &[("grant_type", "refresh_token"), ("refresh_token", &refresh)],
        ))
        .await;
    checked.status(TOKEN, "post", &a, 200);
    let refresh = a.json["refresh_token"].as_str().unwrap().to_owned();
    let a = api
        .send(post(TOKEN, &[("grant_type", "client_credentials")]))
        .await;
    checked.status(TOKEN, "post", &a, 400);
    assert_eq!(a.json["error"], "unsupported_grant_type");
    let a = api
        .send(
            http.post(api.app.url(TOKEN))
                .bearer_auth(&access)
                .form(&[("grant_type", "refresh_token")]),
        )
        .await;
    checked.status(TOKEN, "post", &a, 401);
    assert_eq!(a.json["error"], "invalid_client");
    let a = api.send(http.post(api.app.url(TOKEN))).await;
    checked.status(TOKEN, "post", &a, 401);
    // Another code, redeemed with the credentials in a JSON body, then again: spent (which
    // revokes what its first redemption issued).
    let request = api.services.oauth().start_authorization(&params).unwrap();
    let code = api
        .services
        .oauth()
        .approve_authorization(request, alice.id)
        .unwrap()
        .param("code")
        .unwrap()
        .to_owned();
    let body = json!({
        "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
        "client_id": client.client_id, "client_secret": secret,
    });
    for status in [200, 400] {
        let a = api.send(http.post(api.app.url(TOKEN)).json(&body)).await;
        checked.status(TOKEN, "post", &a, status);
    }

    for (token, active) in [
        (access.as_str(), true),
        (refresh.as_str(), true),
        ("mla_x", false),
    ] {
        let a = api.send(post(INTROSPECT, &[("token", token)])).await;
        checked.status(INTROSPECT, "post", &a, 200);
        assert_eq!(a.json["active"], active, "{a:?}");
    }
    let a = api.send(post(INTROSPECT, &[])).await;
    checked.status(INTROSPECT, "post", &a, 400);
    let a = api.send(post(REVOKE, &[("token", &refresh)])).await;
    checked.status(REVOKE, "post", &a, 200);
    let a = api.send(post(REVOKE, &[("token", "mlr_unknown")])).await;
    checked.status(REVOKE, "post", &a, 200);
    let a = api
        .send(post(
            REVOKE,
            &[("token", "a"), ("token_type_hint", "x"), ("token", "b")],
        ))
        .await;
    checked.status(REVOKE, "post", &a, 400);
    for path in [TOKEN, REVOKE, INTROSPECT, AUTHORIZE, "/api/logout"] {
        let a = api.call(Method::OPTIONS, path, None, &[]).await;
        checked.status(path, "options", &a, 200);
    }

    // The metadata document.
    const METADATA: &str = "/.well-known/oauth-authorization-server";
    checked.status(METADATA, "get", &api.get(METADATA, None).await, 200);
    checked.status(
        METADATA,
        "get",
        &api.get(&format!("{METADATA}?a=%zz"), None).await,
        400,
    );

    // The authorization endpoint: what a token is (JSON), the sign-in page, an error page, a
    // redirect with the error to the client, and the consent form without a session.
    let (bob, bobs) = api.signed_in("bob");
    let a = api.get(AUTHORIZE, Some(&bobs)).await;
    checked.status(AUTHORIZE, "get", &a, 200);
    assert_eq!(a.json["userId"], bob.id.to_string());
    checked.status(
        AUTHORIZE,
        "get",
        &api.get(AUTHORIZE, Some("mla_nope")).await,
        401,
    );
    let authorize = |query: &[(&str, &str)]| http.get(api.app.url(AUTHORIZE)).query(query);
    let page = raw(authorize(&[
        ("response_type", "code"),
        ("client_id", &client.client_id),
        ("redirect_uri", REDIRECT),
        ("state", "s"),
    ]))
    .await;
    checked.raw(AUTHORIZE, "get", &page, 200);
    assert!(page.body.contains("<form"), "{page:?}");
    let page = raw(authorize(&[
        ("response_type", "code"),
        ("client_id", "nobody"),
    ]))
    .await;
    checked.raw(AUTHORIZE, "get", &page, 400);
    let back = raw(authorize(&[
        ("response_type", "token"),
        ("client_id", &client.client_id),
        ("redirect_uri", REDIRECT),
    ]))
    .await;
    checked.raw(AUTHORIZE, "get", &back, 302);
    assert!(
        back.headers["location"]
            .to_str()
            .unwrap()
            .starts_with(REDIRECT),
        "{back:?}"
    );
    let consent = raw(http.post(api.app.url(AUTHORIZE)).form(&[
        ("decision", "approve"),
        ("csrf_token", "x"),
        ("client_id", &client.client_id),
    ]))
    .await;
    checked.raw(AUTHORIZE, "post", &consent, 401);
    let consent = raw(http
        .post(api.app.url(AUTHORIZE))
        .json(&json!({"decision": "approve"})))
    .await;
    checked.raw(AUTHORIZE, "post", &consent, 400);

    // Logout: no one, then the bearer token's user, whose tokens then stop working (the
    // tokens of the exchanges above are gone already: revoking the refresh token ended
    // their grant).
    const LOGOUT: &str = "/api/logout";
    checked.status(
        LOGOUT,
        "post",
        &api.call(Method::POST, LOGOUT, None, &[]).await,
        401,
    );
    let a = api.call(Method::POST, LOGOUT, Some(&alices), &[]).await;
    checked.status(LOGOUT, "post", &a, 200);
    let a = api.call(Method::POST, LOGOUT, Some(&alices), &[]).await;
    checked.status(LOGOUT, "post", &a, 401);
    let a = api
        .call(Method::POST, LOGOUT, Some(&bobs), &[("_METHOD", "DELETE")])
        .await;
    checked.status(LOGOUT, "post", &a, 501);

    assert!(checked.count >= 30, "checked {} answers", checked.count);
}

/// A path template with its parameters filled in.
fn fill(
    template: &str,
    parameters: &serde_json::Map<String, Value>,
    values: &[(&str, &str)],
) -> String {
    let mut path = template.to_owned();
    for (name, expression) in parameters {
        let expression = expression.as_str().unwrap();
        let value = values
            .iter()
            .find(|(e, _)| *e == expression)
            .map_or(expression, |(_, v)| *v);
        path = path.replace(&format!("{{{name}}}"), value);
    }
    assert!(!path.contains('{'), "{template}: {parameters:?}");
    path
}

/// The path template and method of the operation with `id`.
fn operation<'d>(doc: &'d Value, id: &str) -> (&'d str, &'d str) {
    doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .iter()
                .map(move |(method, op)| (path.as_str(), method.as_str(), op))
        })
        .find(|(_, _, op)| op["operationId"] == id)
        .map(|(path, method, _)| (path, method))
        .unwrap_or_else(|| panic!("no operation {id}"))
}

/// The links of a created object's and a created user's 201 lead, filled in from the
/// request and the answer as the document says, to operations that find what was created:
/// a document without links, or with a link whose parameters are wrong, fails here.
async fn links_lead_from_what_was_created_to_the_operations_on_it(b: Backend) {
    let api = ApiApp::start(b).await;
    let doc = fetch_document(&api).await;
    let mut checked = Checked::new(&doc);
    // An organization admin, who may rename the user a link leads to.
    let alice = api.user("alice", true);
    let t = api.token(&alice, "read write");
    let lib = api.library(&t, "Lectures").await;

    let created = |op: &str| {
        doc["paths"][operation(&doc, op).0][operation(&doc, op).1]["responses"]["201"]["links"]
            .clone()
    };
    let describe_put = created("describe_put");
    let user_post = created("user_post");
    let mut followed = Vec::new();
    // Each object link on a new video in the library, the deleting one last.
    let a = api
        .call(
            Method::PUT,
            &format!("/api/describe/c/{lib}/o/0"),
            Some(&t),
            &[("type", "video"), ("title", "Intro")],
        )
        .await;
    checked.status(
        "/api/describe/c/{collection_uuid}/o/{object_uuid}",
        "put",
        &a,
        201,
    );
    let video = a.json["uuid"].as_str().unwrap().to_owned();
    let mut links: Vec<(&String, &Value)> = describe_put.as_object().unwrap().iter().collect();
    links.sort_by_key(|(_, l)| l["operationId"] == "catalog_delete");
    for (name, link) in links {
        let id = link["operationId"].as_str().unwrap();
        let (template, method) = operation(&doc, id);
        let values = if name.starts_with("library_") {
            // The library links, on the new library itself.
            [
                ("$request.path.collection_uuid", "0"),
                ("$response.body#/uuid", lib.as_str()),
            ]
        } else {
            [
                ("$request.path.collection_uuid", lib.as_str()),
                ("$response.body#/uuid", video.as_str()),
            ]
        };
        let path = fill(template, link["parameters"].as_object().unwrap(), &values);
        let form: &[(&str, &str)] = match id {
            "describe_post" => &[(
                "type",
                if name.starts_with("library_") {
                    "catalog"
                } else {
                    "video"
                },
            )],
            "describe_put" => &[("type", "file"), ("title", "Notes")],
            "info_post" => &[("description", "Week one")],
            "media_post" => &[("action", "reprocess")],
            "user_post" => &[("uniqueId", "carol")],
            _ => &[],
        };
        let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
        if id.starts_with("upload_") {
            // tus and the one-shot upload take headers and files, not forms: found is enough.
            let a = api.call(Method::OPTIONS, &path, Some(&t), &[]).await;
            assert_eq!(a.json["proceed"], "true", "{name}: {path}");
            followed.push(id);
            continue;
        }
        let a = api.call(method, &path, Some(&t), form).await;
        // The object is found; the media calls on an object without media say so with a 404
        // of their own.
        let no_media = a.json["message"] == "this object has no media yet";
        assert!(
            a.status.is_success() || no_media,
            "{name} ({id}): {path}: {a:?}"
        );
        checked.answer(template, operation(&doc, id).1, &a);
        followed.push(id);
    }
    let a = api
        .get(&format!("/api/describe/c/{lib}/o/{video}"), Some(&t))
        .await;
    assert_eq!(
        a.status,
        StatusCode::NOT_FOUND,
        "the delete link removed it"
    );

    // The user links, on a user created on the library.
    let a = api
        .call(
            Method::POST,
            &format!("/api/user/c/{lib}/o/0"),
            Some(&t),
            &[("uniqueId", "dave")],
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    let dave = a.json["userId"].as_str().unwrap().to_owned();
    let mut links: Vec<(&String, &Value)> = user_post.as_object().unwrap().iter().collect();
    links.sort_by_key(|(_, l)| l["operationId"] == "permission_delete");
    for (name, link) in links {
        let id = link["operationId"].as_str().unwrap();
        let (template, method) = operation(&doc, id);
        let path = fill(
            template,
            link["parameters"].as_object().unwrap(),
            &[
                ("$request.path.collection_uuid", lib.as_str()),
                ("$response.body#/userId", dave.as_str()),
            ],
        );
        let form: &[(&str, &str)] = match id {
            "user_post" => &[("lastName", "Jones")],
            "permission_put" | "permission_post" => &[("level", "view")],
            _ => &[],
        };
        let a = api
            .call(
                Method::from_bytes(method.to_uppercase().as_bytes()).unwrap(),
                &path,
                Some(&t),
                form,
            )
            .await;
        assert!(a.status.is_success(), "{name} ({id}): {path}: {a:?}");
        checked.answer(template, method, &a);
        followed.push(id);
    }
    for id in [
        "describe_get",
        "describe_post",
        "info_get",
        "media_get",
        "media_delete",
        "catalog_delete",
        "catalog_get",
        "describe_put",
        "upload_create",
        "user_get",
        "permission_delete",
    ] {
        assert!(followed.contains(&id), "no link led to {id}: {followed:?}");
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

    #[tokio::test]
    async fn the_authorization_server_conforms_to_the_document() {
        super::the_authorization_server_conforms_to_the_document(Sqlite).await;
    }

    #[tokio::test]
    async fn links_lead_from_what_was_created_to_the_operations_on_it() {
        super::links_lead_from_what_was_created_to_the_operations_on_it(Sqlite).await;
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
        for (name, _) in &a.headers {
            if [
                "location",
                "set-cookie",
                "www-authenticate",
                "retry-after",
                "allow",
            ]
            .contains(&name.as_str())
                && a.status.is_success()
            {
                assert!(
                    response["headers"]
                        .as_object()
                        .is_some_and(|h| h.keys().any(|k| k.eq_ignore_ascii_case(name.as_str()))),
                    "{method} {path} {status}: header {name} is not documented"
                );
            }
        }
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

    /// For an answer that may be a page or a redirect: the status is documented, a page's
    /// `text/html` is, and a redirect documents and carries `Location`.
    fn raw(&mut self, path: &str, method: &str, a: &Raw, status: u16) {
        assert_eq!(a.status.as_u16(), status, "{method} {path}: {a:?}");
        let doc = self.doc;
        let response = doc["paths"][path][method]["responses"]
            .get(a.status.as_str())
            .map(|r| resolve(doc, r))
            .unwrap_or_else(|| panic!("{method} {path}: status {status} is not documented"));
        if a.status.is_redirection() {
            assert!(a.headers.contains_key("location"), "{a:?}");
            assert!(
                response["headers"].get("Location").is_some(),
                "{method} {path} {status}: Location is not documented"
            );
            assert!(
                response.get("content").is_none(),
                "{method} {path} {status}"
            );
        } else {
            let ctype = a.headers["content-type"].to_str().unwrap();
            assert!(
                ctype.starts_with("text/html"),
                "{method} {path} {status}: {ctype}"
            );
            assert!(
                response["content"].get("text/html").is_some(),
                "{method} {path} {status}: text/html is not documented"
            );
            assert!(
                a.body.contains("<html") || a.body.contains("<!DOCTYPE"),
                "{a:?}"
            );
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
