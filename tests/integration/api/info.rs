//! `info` over HTTP: GET (the info record, `view` needed, access inherited down the library
//! tree and overridden by an explicit `none`), POST (title and description: 202, no body).

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::permission::grant;
use super::{ApiApp, Backend, assert_error};

fn info_path(c: &str, o: &str) -> String {
    format!("/api/info/c/{c}/o/{o}/")
}

async fn the_info_record_has_exactly_the_spec_fields(b: Backend) {
    let api = ApiApp::start(b).await;
    let (alice, t) = api.signed_in("alice");
    let lib = api.library(&t, "Lectures").await;
    let v = api.object(&t, &lib, "video", "Intro").await;
    let a = api
        .call(
            Method::POST,
            &format!("/api/describe/c/{lib}/o/{v}"),
            Some(&t),
            &[
                ("type", "video"),
                ("description", "First lecture"),
                ("duration", "42"),
                ("properties[course]", "CS101"),
            ],
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{a:?}");
    let described = api
        .get(&format!("/api/describe/c/{lib}/o/{v}"), Some(&t))
        .await
        .json;
    let a = api.get(&info_path(&lib, &v), Some(&t)).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(
        a.json,
        json!({
            "type": "info",
            "owner": {"userId": alice.id.to_string(), "firstName": "Ada", "lastName": "alice"},
            "title": "Intro",
            "description": "First lecture",
            "created": described["created"],
            "modified": described["modified"],
            "properties": {"course": "CS101"},
            "uuid": v,
            "fileType": "video",
            "duration": 42,
        })
    );
    assert!(a.json["created"].is_i64() && a.json["modified"].is_i64());
    // Unknown duration is null; a library's info through itself.
    let a = api
        .get(&format!("/api/info/c/{lib}/o/{lib}"), Some(&t))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.json["fileType"], "catalog");
    assert_eq!(a.json["duration"], Value::Null);
    assert_eq!(a.json["properties"], json!({}));
    // A viewer sees the same record, owner included.
    let (bob, tb) = api.signed_in("bob");
    grant(&api, &t, &lib, &bob, "view").await;
    let a = api.get(&info_path(&lib, &v), Some(&tb)).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.json["owner"]["userId"], alice.id.to_string());
}

async fn info_needs_a_token_and_view_on_the_collection(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let (_, tm) = api.signed_in("mallory");
    let lib = api.library(&t, "L").await;
    let other = api.library(&t, "Other").await;
    let v = api.object(&t, &lib, "audio", "A").await;
    let path = info_path(&lib, &v);
    let a = api.get(&path, None).await;
    assert_error(&a, 401);
    assert_eq!(a.json["message"], "authentication required");
    assert_error(&api.get(&path, Some("mla_forged")).await, 401);
    assert_error(&api.get(&path, Some(&tm)).await, 403);
    // Even a public object: info is the complete record, only for viewers.
    let a = api
        .call(
            Method::POST,
            &format!("/api/describe/c/{lib}/o/{v}"),
            Some(&t),
            &[("type", "audio"), ("public", "true")],
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED);
    assert_error(&api.get(&path, Some(&tm)).await, 403);
    // Not in that collection, no such object, no such collection: 404.
    let ghost = "0123456789abcdef0123456789abcdef";
    for p in [
        info_path(&other, &v),
        info_path(&lib, ghost),
        info_path(ghost, &v),
    ] {
        let a = api.get(&p, Some(&t)).await;
        assert_error(&a, 404);
        assert_eq!(a.json["message"], "object not found in this collection");
    }
    // Malformed ids and 0: 400.
    for p in [
        info_path(&lib, "0"),
        info_path("0", &v),
        info_path(&lib, "x"),
    ] {
        assert_error(&api.get(&p, Some(&t)).await, 400);
    }
}

async fn post_changes_title_and_description_with_202_and_no_body(b: Backend) {
    let api = ApiApp::start(b).await;
    let (alice, t) = api.signed_in("alice");
    let (bob, tb) = api.signed_in("bob");
    let lib = api.library(&t, "L").await;
    let v = api.object(&t, &lib, "video", "Old").await;
    grant(&api, &t, &lib, &bob, "view").await;
    let path = info_path(&lib, &v);
    let a = api
        .call(
            Method::POST,
            &path,
            Some(&t),
            &[("title", "New"), ("description", "Better")],
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{a:?}");
    assert_eq!(a.json, Value::Null, "202 without a body");
    let r = api.get(&path, Some(&t)).await.json;
    assert_eq!(
        (
            r["title"].as_str(),
            r["description"].as_str(),
            r["fileType"].as_str()
        ),
        (Some("New"), Some("Better"), Some("video"))
    );
    // Only the named field changes.
    let a = api
        .call(Method::POST, &path, Some(&t), &[("description", "")])
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED);
    let r = api.get(&path, Some(&t)).await.json;
    assert_eq!(
        (r["title"].as_str(), r["description"].as_str()),
        (Some("New"), Some(""))
    );
    // A viewer, a read-only token, no token: 403, 403, 401.
    assert_error(
        &api.call(Method::POST, &path, Some(&tb), &[("title", "Hacked")])
            .await,
        403,
    );
    let ro = api.token(&alice, "read");
    assert_error(
        &api.call(Method::POST, &path, Some(&ro), &[("title", "RO")])
            .await,
        403,
    );
    assert_error(
        &api.call(Method::POST, &path, None, &[("title", "Anon")])
            .await,
        401,
    );
    assert_eq!(api.get(&path, Some(&t)).await.json["title"], "New");
    // Too long a title: 400; an object outside the collection: 404.
    let a = api
        .call(
            Method::POST,
            &path,
            Some(&t),
            &[("title", &"t".repeat(256))],
        )
        .await;
    assert_error(&a, 400);
    assert_eq!(a.json["message"], "title is longer than 255 characters");
    let other = api.library(&t, "Other").await;
    assert_error(
        &api.call(
            Method::POST,
            &info_path(&other, &v),
            Some(&t),
            &[("title", "X")],
        )
        .await,
        404,
    );
}

async fn access_flows_down_the_library_tree_and_none_overrides_it(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let (bob, tb) = api.signed_in("bob");
    let (carol, tc) = api.signed_in("carol");
    let top = api.library(&t, "Top").await;
    let sub = api.object(&t, &top, "catalog", "Sub").await;
    let deep = api.object(&t, &sub, "catalog", "Deep").await;
    let v = api.object(&t, &deep, "video", "V").await;
    // view on the top library reaches an object two levels down.
    grant(&api, &t, &top, &bob, "view").await;
    let a = api.get(&info_path(&deep, &v), Some(&tb)).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.json["uuid"], v.as_str());
    assert_eq!(
        api.get(&info_path(&top, &sub), Some(&tb)).await.status,
        StatusCode::OK
    );
    // But only through a collection the object is in.
    assert_error(&api.get(&info_path(&top, &v), Some(&tb)).await, 404);
    // Inherited view does not allow writes; inherited admin does.
    assert_error(
        &api.call(
            Method::POST,
            &info_path(&deep, &v),
            Some(&tb),
            &[("title", "B")],
        )
        .await,
        403,
    );
    grant(&api, &t, &top, &carol, "admin").await;
    let a = api
        .call(
            Method::POST,
            &info_path(&deep, &v),
            Some(&tc),
            &[("title", "C")],
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{a:?}");
    // An explicit `none` on the middle library cuts bob off below it.
    grant(&api, &t, &sub, &bob, "none").await;
    assert_error(&api.get(&info_path(&deep, &v), Some(&tb)).await, 403);
    assert_error(&api.get(&info_path(&sub, &deep), Some(&tb)).await, 403);
    assert_eq!(
        api.get(&info_path(&top, &sub), Some(&tb)).await.status,
        StatusCode::OK,
        "the top library itself is still visible"
    );
    // An explicit entry lower down grants again.
    grant(&api, &t, &deep, &bob, "view").await;
    assert_eq!(
        api.get(&info_path(&deep, &v), Some(&tb)).await.json["title"],
        "C"
    );
}

async fn options_and_unimplemented_methods(b: Backend) {
    let api = ApiApp::start(b).await;
    let (bob, tb) = api.signed_in("bob");
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let v = api.object(&t, &lib, "file", "F").await;
    grant(&api, &t, &lib, &bob, "view").await;
    let path = info_path(&lib, &v);
    let allow = "GET, HEAD, POST, OPTIONS";
    let a = api.call(Method::OPTIONS, &path, Some(&t), &[]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.headers["allow"], allow);
    assert_eq!(
        a.json,
        json!({"methods": ["GET", "HEAD", "POST", "OPTIONS"], "authenticated": "true", "proceed": "true"})
    );
    let a = api.call(Method::OPTIONS, &path, Some(&tb), &[]).await;
    assert_eq!(a.json["proceed"], "false");
    for m in [Method::PUT, Method::DELETE] {
        let a = api.call(m, &path, Some(&t), &[]).await;
        assert_error(&a, 501);
        assert_eq!(a.headers["allow"], allow);
    }
    let a = api.call(Method::HEAD, &path, Some(&t), &[]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.json, Value::Null, "HEAD has no body");
}

medialib_adapters_diesel::backend_tests!(
    async on [sqlite, postgres] with crate::api::run:
    the_info_record_has_exactly_the_spec_fields,
    info_needs_a_token_and_view_on_the_collection,
    post_changes_title_and_description_with_202_and_no_body,
    access_flows_down_the_library_tree_and_none_overrides_it,
    options_and_unimplemented_methods,
);
