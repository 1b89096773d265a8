//! `user` over HTTP: GET through a collection (user 0 = the caller; identifiers only for the
//! user itself and admins of the collection), POST (update names: 202; add by uniqueId: 201).

use medialib_domain::{UniqueId, User};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::permission::{entry, grant};
use super::{ApiApp, Backend, assert_error};

/// The complete user record of a user made by `ApiApp::user`.
fn full(u: &User) -> Value {
    json!({
        "firstName": "Ada",
        "lastName": u.unique_id.as_str(),
        "userId": u.id.to_string(),
        "uniqueId": u.unique_id.as_str(),
    })
}

/// The names-only record.
fn names(u: &User) -> Value {
    json!({"firstName": "Ada", "lastName": u.unique_id.as_str()})
}

fn user_path(lib: &str, who: &str) -> String {
    format!("/api/user/c/{lib}/o/{who}/")
}

async fn user_zero_is_the_caller_and_sees_its_identifiers(b: Backend) {
    let api = ApiApp::start(b).await;
    let (alice, t) = api.signed_in("alice");
    let (bob, tb) = api.signed_in("bob");
    let lib = api.library(&t, "L").await;
    grant(&api, &t, &lib, &bob, "view").await;
    for who in ["0".to_owned(), alice.id.to_string()] {
        let a = api.get(&user_path(&lib, &who), Some(&t)).await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        assert_eq!(a.json, full(&alice));
    }
    // A viewer reading itself sees its identifiers too; without the trailing slash as well.
    let a = api.get(&format!("/api/user/c/{lib}/o/0"), Some(&tb)).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.json, full(&bob));
    let a = api
        .get(&user_path(&lib, &bob.id.to_string()), Some(&tb))
        .await;
    assert_eq!(a.json, full(&bob));
}

async fn a_viewer_sees_only_the_names_of_others(b: Backend) {
    let api = ApiApp::start(b).await;
    let (alice, t) = api.signed_in("alice");
    let (bob, tb) = api.signed_in("bob");
    let carol = api.user("carol", false);
    let lib = api.library(&t, "L").await;
    grant(&api, &t, &lib, &bob, "view").await;
    grant(&api, &t, &lib, &carol, "none").await;
    let a = api
        .get(&user_path(&lib, &alice.id.to_string()), Some(&tb))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.json, names(&alice));
    // Any entry counts, `none` included.
    let a = api
        .get(&user_path(&lib, &carol.id.to_string()), Some(&tb))
        .await;
    assert_eq!(a.json, names(&carol));
}

async fn admins_see_the_identifiers_of_the_collections_users(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let bob = api.user("bob", false);
    let lib = api.library(&t, "L").await;
    grant(&api, &t, &lib, &bob, "view").await;
    let a = api
        .get(&user_path(&lib, &bob.id.to_string()), Some(&t))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.json, full(&bob));
    // An org admin is admin of every collection.
    let root = api.user("root", true);
    let tr = api.token(&root, "read");
    let a = api
        .get(&user_path(&lib, &bob.id.to_string()), Some(&tr))
        .await;
    assert_eq!(a.json, full(&bob));
    // Admin inherited from a parent library counts as admin of the sub-library.
    let sub = api.object(&t, &lib, "catalog", "Sub").await;
    let (dan, td) = api.signed_in("dan");
    grant(&api, &t, &lib, &dan, "admin").await;
    grant(&api, &t, &sub, &bob, "view").await;
    let a = api
        .get(&user_path(&sub, &bob.id.to_string()), Some(&td))
        .await;
    assert_eq!(a.json, full(&bob));
    let a = api.get(&user_path(&sub, "0"), Some(&td)).await;
    assert_eq!(a.json, full(&dan));
}

async fn users_without_an_entry_and_callers_without_view_get_404(b: Backend) {
    let api = ApiApp::start(b).await;
    let (alice, t) = api.signed_in("alice");
    let (_, tm) = api.signed_in("mallory");
    let carol = api.user("carol", false);
    let lib = api.library(&t, "L").await;
    // carol holds no entry on the library.
    let a = api
        .get(&user_path(&lib, &carol.id.to_string()), Some(&t))
        .await;
    assert_error(&a, 404);
    assert_eq!(a.json["message"], "user not found in this collection");
    let ghost = "0123456789abcdef0123456789abcdef";
    assert_error(&api.get(&user_path(&lib, ghost), Some(&t)).await, 404);
    // A caller without view on the collection finds nobody there, not even itself.
    for who in [alice.id.to_string(), "0".to_owned()] {
        let a = api.get(&user_path(&lib, &who), Some(&tm)).await;
        assert_error(&a, 404);
        assert_eq!(a.json["message"], "user not found in this collection");
    }
    // An explicit `none` is no view either.
    let (dave, td) = api.signed_in("dave");
    grant(&api, &t, &lib, &dave, "none").await;
    assert_error(&api.get(&user_path(&lib, "0"), Some(&td)).await, 404);
    // Unknown collection: 404; not a collection: 400; malformed: 400.
    assert_error(&api.get(&user_path(ghost, "0"), Some(&t)).await, 404);
    let v = api.object(&t, &lib, "video", "V").await;
    assert_error(&api.get(&user_path(&v, "0"), Some(&t)).await, 400);
    assert_error(&api.get(&user_path(&lib, "me"), Some(&t)).await, 400);
    assert_error(&api.get(&user_path("0", "0"), Some(&t)).await, 400);
}

async fn user_calls_need_a_valid_token(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let a = api.get(&user_path(&lib, "0"), None).await;
    assert_error(&a, 401);
    assert_eq!(a.json["message"], "authentication required");
    assert_eq!(a.headers["www-authenticate"], "Bearer");
    let a = api.get(&user_path(&lib, "0"), Some("mla_forged")).await;
    assert_error(&a, 401);
    assert_eq!(a.json["message"], "invalid or expired credentials");
    assert_error(
        &api.call(
            Method::POST,
            &user_path(&lib, "0"),
            None,
            &[("uniqueId", "x")],
        )
        .await,
        401,
    );
}

async fn post_updates_names_for_the_user_itself_or_an_admin(b: Backend) {
    let api = ApiApp::start(b).await;
    let (alice, t) = api.signed_in("alice");
    let (bob, tb) = api.signed_in("bob");
    let carol = api.user("carol", false);
    let lib = api.library(&t, "L").await;
    grant(&api, &t, &lib, &bob, "view").await;
    let bobs = user_path(&lib, &bob.id.to_string());
    // The user itself: 202 with its userId; only the named field changes.
    let a = api
        .call(Method::POST, &bobs, Some(&tb), &[("firstName", "Robert")])
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{a:?}");
    assert_eq!(a.json, json!({"userId": bob.id.to_string()}));
    let a = api.get(&bobs, Some(&tb)).await;
    assert_eq!(
        (a.json["firstName"].as_str(), a.json["lastName"].as_str()),
        (Some("Robert"), Some("bob"))
    );
    // On POST, user 0 means "add by uniqueId": without one it is a 400.
    let a = api
        .call(
            Method::POST,
            &user_path(&lib, "0"),
            Some(&tb),
            &[("firstName", "X")],
        )
        .await;
    assert_error(&a, 400);
    assert_eq!(a.json["message"], "uniqueId is required when user_id is 0");
    // An admin of the collection may not rename others: names are organization-wide
    // (DECISIONS.md §3, revised), so only the user itself or an organization admin
    // changes them; naming the names the user already has changes nothing and is allowed.
    let before = api.get(&bobs, Some(&t)).await.json;
    let a = api
        .call(
            Method::POST,
            &bobs,
            Some(&t),
            &[("firstName", "Bob"), ("lastName", "Builder")],
        )
        .await;
    assert_error(&a, 403);
    assert_eq!(api.get(&bobs, Some(&t)).await.json, before);
    let same = [
        ("firstName", before["firstName"].as_str().unwrap()),
        ("lastName", before["lastName"].as_str().unwrap()),
    ];
    let a = api.call(Method::POST, &bobs, Some(&t), &same).await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{a:?}");
    // An organization admin may.
    let (_, to) = {
        let root = api.user("root", true);
        let token = api.token(&root, "read write");
        (root, token)
    };
    let a = api
        .call(
            Method::POST,
            &bobs,
            Some(&to),
            &[("firstName", "Bob"), ("lastName", "Builder")],
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{a:?}");
    assert_eq!(
        api.get(&bobs, Some(&t)).await.json,
        json!({"firstName": "Bob", "lastName": "Builder", "userId": bob.id.to_string(), "uniqueId": "bob"})
    );
    // A viewer cannot rename others: 403.
    let a = api
        .call(
            Method::POST,
            &user_path(&lib, &alice.id.to_string()),
            Some(&tb),
            &[("firstName", "Eve")],
        )
        .await;
    assert_error(&a, 403);
    assert_eq!(
        api.get(&user_path(&lib, "0"), Some(&t)).await.json,
        full(&alice)
    );
    // An admin cannot rename someone without an entry on the collection: 404.
    assert_error(
        &api.call(
            Method::POST,
            &user_path(&lib, &carol.id.to_string()),
            Some(&t),
            &[("firstName", "C")],
        )
        .await,
        404,
    );
    // An outsider cannot even rename itself through a collection it cannot see: 403.
    let (mallory, tm) = api.signed_in("mallory");
    assert_error(
        &api.call(
            Method::POST,
            &user_path(&lib, &mallory.id.to_string()),
            Some(&tm),
            &[("firstName", "M")],
        )
        .await,
        403,
    );
    // A read-only token cannot write, even for the user itself.
    let ro = api.token(&bob, "read");
    assert_error(
        &api.call(Method::POST, &bobs, Some(&ro), &[("firstName", "R")])
            .await,
        403,
    );
    // Bad names: 400; the uniqueId cannot change: 409 (the same one is fine).
    let a = api
        .call(
            Method::POST,
            &bobs,
            Some(&t),
            &[("lastName", &"x".repeat(256))],
        )
        .await;
    assert_error(&a, 400);
    assert_eq!(a.json["message"], "lastName is longer than 255 characters");
    assert_error(
        &api.call(Method::POST, &bobs, Some(&t), &[("uniqueId", "robert")])
            .await,
        409,
    );
    let a = api
        .call(
            Method::POST,
            &bobs,
            Some(&to),
            &[("uniqueId", "bob"), ("firstName", "B")],
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED);
}

async fn post_with_user_zero_adds_a_user_with_view(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let (bob, tb) = api.signed_in("bob");
    let lib = api.library(&t, "L").await;
    let zero = user_path(&lib, "0");
    let a = api
        .call(
            Method::POST,
            &zero,
            Some(&t),
            &[
                ("uniqueId", "dave"),
                ("firstName", "Dave"),
                ("lastName", "Doe"),
            ],
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    let dave_id = a.json["userId"].as_str().unwrap().to_owned();
    assert_eq!(a.json, json!({"userId": dave_id}));
    let a = api
        .get(&format!("/api/permission/c/{lib}/o/{dave_id}"), Some(&t))
        .await;
    assert_eq!(
        a.json,
        json!([{"firstName": "Dave", "lastName": "Doe", "userId": dave_id, "uniqueId": "dave", "level": "view"}])
    );
    assert_eq!(
        api.get(&user_path(&lib, &dave_id), Some(&t)).await.json,
        json!({"firstName": "Dave", "lastName": "Doe", "userId": dave_id, "uniqueId": "dave"})
    );
    // An existing user is reused (same id), and an admin is never demoted to view.
    grant(&api, &t, &lib, &bob, "admin").await;
    let a = api
        .call(Method::POST, &zero, Some(&t), &[("uniqueId", "bob")])
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    assert_eq!(a.json, json!({"userId": bob.id.to_string()}));
    let a = api
        .get(&format!("/api/permission/c/{lib}/o/{}", bob.id), Some(&t))
        .await;
    assert_eq!(a.json, json!([entry(&bob, "admin")]));
    // Only an admin adds users: a viewer gets 403 and provisions nobody.
    grant(&api, &t, &lib, &bob, "view").await;
    assert_error(
        &api.call(Method::POST, &zero, Some(&tb), &[("uniqueId", "eve")])
            .await,
        403,
    );
    assert!(
        api.services
            .store()
            .user_by_unique_id(&UniqueId::parse("eve").unwrap())
            .unwrap()
            .is_none()
    );
    // uniqueId is required with user 0, and must be valid.
    assert_error(
        &api.call(Method::POST, &zero, Some(&t), &[("firstName", "X")])
            .await,
        400,
    );
    assert_error(
        &api.call(Method::POST, &zero, Some(&t), &[("uniqueId", "")])
            .await,
        400,
    );
    // Unknown collection: 404.
    let ghost = "0123456789abcdef0123456789abcdef";
    assert_error(
        &api.call(
            Method::POST,
            &user_path(ghost, "0"),
            Some(&t),
            &[("uniqueId", "x")],
        )
        .await,
        404,
    );
}

async fn options_and_unimplemented_methods(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let path = user_path(&lib, "0");
    let allow = "GET, HEAD, POST, OPTIONS";
    let a = api.call(Method::OPTIONS, &path, Some(&t), &[]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.headers["allow"], allow);
    assert_eq!(
        a.json,
        json!({"methods": ["GET", "HEAD", "POST", "OPTIONS"], "authenticated": "true", "proceed": "true"})
    );
    let a = api.call(Method::OPTIONS, &path, None, &[]).await;
    assert_eq!(
        a.json,
        json!({"methods": ["GET", "HEAD", "POST", "OPTIONS"], "authenticated": "false", "proceed": "false"})
    );
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
    user_zero_is_the_caller_and_sees_its_identifiers,
    a_viewer_sees_only_the_names_of_others,
    admins_see_the_identifiers_of_the_collections_users,
    users_without_an_entry_and_callers_without_view_get_404,
    user_calls_need_a_valid_token,
    post_updates_names_for_the_user_itself_or_an_admin,
    post_with_user_zero_adds_a_user_with_view,
    options_and_unimplemented_methods,
);
