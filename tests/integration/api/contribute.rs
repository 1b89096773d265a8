//! `contribute` over HTTP: the libraries where the caller is admin (explicit entries, or
//! every live library for an org admin), ordered by title then uuid, each with `member`.

use medialib_domain::ObjectId;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::permission::grant;
use super::{ApiApp, Backend, assert_error};

fn contribute_path(o: &str) -> String {
    format!("/api/contribute/o/{o}/")
}

fn id(s: &str) -> ObjectId {
    ObjectId::parse(s).unwrap()
}

fn lib_entry(uuid: &str, title: &str, member: bool) -> Value {
    json!({"uuid": uuid, "title": title, "member": if member { "true" } else { "false" }})
}

async fn lists_exactly_the_admin_libraries_with_membership(b: Backend) {
    let api = ApiApp::start(b).await;
    let (alice, t) = api.signed_in("alice");
    let (_, tb) = api.signed_in("bob");
    let beta = api.library(&t, "Beta").await;
    let alpha = api.library(&t, "Alpha").await;
    let gamma = api.library(&tb, "Gamma").await; // alice: view only
    let delta = api.library(&tb, "Delta").await; // alice: admin by grant
    let _epsilon = api.library(&tb, "Epsilon").await; // alice: nothing
    grant(&api, &tb, &gamma, &alice, "view").await;
    grant(&api, &tb, &delta, &alice, "admin").await;
    let o = api.object(&t, &beta, "video", "Clip").await;
    api.services
        .media()
        .add_member(&alice.as_caller(), id(&delta), id(&o))
        .unwrap();
    let a = api.get(&contribute_path(&o), Some(&t)).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(
        a.json,
        json!([
            lib_entry(&alpha, "Alpha", false),
            lib_entry(&beta, "Beta", true),
            lib_entry(&delta, "Delta", true),
        ])
    );
    // bob administers Gamma, Delta and Epsilon; the object is in Delta. Without the slash.
    let a = api.get(&format!("/api/contribute/o/{o}"), Some(&tb)).await;
    let titles: Vec<&str> = a
        .json
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Delta", "Epsilon", "Gamma"]);
    assert_eq!(a.json[0]["member"], "true");
    assert_eq!(a.json[2]["member"], "false");
    // Someone who cannot see the object gets exactly what an unknown uuid gets (DECISIONS.md
    // §3: no existence oracle).
    let (carol, tc) = api.signed_in("carol");
    let hidden = api.get(&contribute_path(&o), Some(&tc)).await;
    let unknown = api
        .get(
            &contribute_path("0123456789abcdef0123456789abcdef"),
            Some(&tc),
        )
        .await;
    assert_error(&hidden, 404);
    assert_eq!(
        (hidden.status, &hidden.json),
        (unknown.status, &unknown.json)
    );
    // Once she may view it (through Delta), she administers nothing: the empty set.
    grant(&api, &tb, &delta, &carol, "view").await;
    let a = api.get(&contribute_path(&o), Some(&tc)).await;
    assert_eq!((a.status, &a.json), (StatusCode::OK, &json!([])));
}

async fn explicit_entries_decide_and_ties_order_by_uuid(b: Backend) {
    let api = ApiApp::start(b).await;
    let (alice, t) = api.signed_in("alice");
    let (_, tb) = api.signed_in("bob");
    let top = api.library(&t, "Top").await;
    // A sub-library alice only inherits admin on is no candidate; one with an explicit
    // admin entry is; an explicit `view` under an admin parent is not admin.
    let inherited = api.object(&t, &top, "catalog", "Inherited").await;
    let explicit = api.library(&tb, "Same").await;
    let same2 = api.library(&tb, "Same").await;
    let viewed = api.object(&t, &top, "catalog", "Viewed").await;
    grant(&api, &tb, &explicit, &alice, "admin").await;
    grant(&api, &tb, &same2, &alice, "admin").await;
    let (carol, _) = api.signed_in("carol");
    grant(&api, &t, &viewed, &carol, "admin").await;
    grant(&api, &t, &viewed, &alice, "view").await;
    let o = api.object(&t, &inherited, "file", "F").await;
    let a = api.get(&contribute_path(&o), Some(&t)).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    let (first, second) = if explicit < same2 {
        (&explicit, &same2)
    } else {
        (&same2, &explicit)
    };
    assert_eq!(
        a.json,
        json!([
            lib_entry(first, "Same", false),
            lib_entry(second, "Same", false),
            lib_entry(&top, "Top", false),
        ])
    );
}

async fn an_org_admin_gets_every_live_library(b: Backend) {
    let api = ApiApp::start(b).await;
    let (alice, t) = api.signed_in("alice");
    let root = api.user("root", true);
    let tr = api.token(&root, "read");
    let a_lib = api.library(&t, "A").await;
    let sub = api.object(&t, &a_lib, "catalog", "Sub").await;
    let gone = api.object(&t, &a_lib, "catalog", "Gone").await;
    let o = api.object(&t, &sub, "audio", "Song").await;
    // Removing its only membership soft-deletes a library: it is listed no more.
    api.services
        .media()
        .remove_member(&alice.as_caller(), id(&a_lib), id(&gone))
        .unwrap();
    let a = api.get(&contribute_path(&o), Some(&tr)).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(
        a.json,
        json!([lib_entry(&a_lib, "A", false), lib_entry(&sub, "Sub", true)])
    );
}

async fn contribute_needs_a_token_and_an_existing_object(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let o = api.object(&t, &lib, "image", "I").await;
    let a = api.get(&contribute_path(&o), None).await;
    assert_error(&a, 401);
    assert_eq!(a.json["message"], "authentication required");
    assert_error(
        &api.get(&contribute_path(&o), Some("mla_forged")).await,
        401,
    );
    let ghost = "0123456789abcdef0123456789abcdef";
    let a = api.get(&contribute_path(ghost), Some(&t)).await;
    assert_error(&a, 404);
    assert_eq!(a.json["message"], "object not found");
    for bad in ["0", "nope"] {
        assert_error(&api.get(&contribute_path(bad), Some(&t)).await, 400);
    }
    // A library is itself an object one may contribute.
    let a = api.get(&contribute_path(&lib), Some(&t)).await;
    assert_eq!(a.json, json!([lib_entry(&lib, "L", false)]));
}

async fn options_and_unimplemented_methods(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let path = contribute_path(&lib);
    let allow = "GET, HEAD, OPTIONS";
    let a = api.call(Method::OPTIONS, &path, Some(&t), &[]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.headers["allow"], allow);
    assert_eq!(
        a.json,
        json!({"methods": ["GET", "HEAD", "OPTIONS"], "authenticated": "true", "proceed": "false"})
    );
    for m in [Method::POST, Method::PUT, Method::DELETE] {
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
    lists_exactly_the_admin_libraries_with_membership,
    explicit_entries_decide_and_ties_order_by_uuid,
    an_org_admin_gets_every_live_library,
    contribute_needs_a_token_and_an_existing_object,
    options_and_unimplemented_methods,
);
