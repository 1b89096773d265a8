//! `permission` over HTTP: GET (all entries or one user's), PUT/POST (set a level, by user
//! id or by uniqueId with provisioning), DELETE, the last-admin rule, and who may call it.

use medialib_domain::{UniqueId, User};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::{ApiApp, Backend, assert_error};

/// Sets `user`'s level on `lib` through the API (201 expected).
pub(super) async fn grant(api: &ApiApp, token: &str, lib: &str, user: &User, level: &str) {
    let a = api
        .call(
            Method::PUT,
            &format!("/api/permission/c/{lib}/o/{}", user.id),
            Some(token),
            &[("level", level)],
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
}

/// The JSON of a permission entry for a user made by `ApiApp::user`.
pub(super) fn entry(u: &User, level: &str) -> Value {
    json!({
        "firstName": "Ada",
        "lastName": u.unique_id.as_str(),
        "userId": u.id.to_string(),
        "uniqueId": u.unique_id.as_str(),
        "level": level,
    })
}

async fn admin_lists_every_entry(b: Backend) {
    let api = ApiApp::start(b).await;
    let (alice, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let all = format!("/api/permission/c/{lib}/o/0/");
    let a = api.get(&all, Some(&t)).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.json, json!([entry(&alice, "admin")]));

    let zed = api.user("zed", false);
    let bob = api.user("bob", false);
    grant(&api, &t, &lib, &zed, "none").await;
    grant(&api, &t, &lib, &bob, "view").await;
    let a = api.get(&all, Some(&t)).await;
    assert_eq!(
        a.json,
        json!([
            entry(&alice, "admin"),
            entry(&bob, "view"),
            entry(&zed, "none")
        ]),
        "ordered by uniqueId"
    );
    // Without the trailing slash too.
    let a = api
        .get(&format!("/api/permission/c/{lib}/o/0"), Some(&t))
        .await;
    assert_eq!(a.json.as_array().map(Vec::len), Some(3));
}

async fn one_user_reads_as_its_entry_or_the_empty_set(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let bob = api.user("bob", false);
    let carol = api.user("carol", false);
    grant(&api, &t, &lib, &bob, "view").await;
    let a = api
        .get(&format!("/api/permission/c/{lib}/o/{}", bob.id), Some(&t))
        .await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.json, json!([entry(&bob, "view")]));
    // A user without an entry, or no such user: the empty set.
    let a = api
        .get(&format!("/api/permission/c/{lib}/o/{}", carol.id), Some(&t))
        .await;
    assert_eq!((a.status, &a.json), (StatusCode::OK, &json!([])));
    let ghost = "0123456789abcdef0123456789abcdef";
    let a = api
        .get(&format!("/api/permission/c/{lib}/o/{ghost}"), Some(&t))
        .await;
    assert_eq!((a.status, &a.json), (StatusCode::OK, &json!([])));
}

async fn put_and_post_set_a_level_with_201_and_no_body(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let bob = api.user("bob", false);
    let path = format!("/api/permission/c/{lib}/o/{}/", bob.id);
    // No level: view.
    let a = api.call(Method::PUT, &path, Some(&t), &[]).await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    assert_eq!(a.json, Value::Null, "201 without a body");
    assert_eq!(
        api.get(&path, Some(&t)).await.json,
        json!([entry(&bob, "view")])
    );
    // POST is identical to PUT.
    let a = api
        .call(Method::POST, &path, Some(&t), &[("level", "admin")])
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    assert_eq!(a.json, Value::Null);
    assert_eq!(
        api.get(&path, Some(&t)).await.json,
        json!([entry(&bob, "admin")])
    );
    let a = api
        .call(Method::POST, &path, Some(&t), &[("level", "none")])
        .await;
    assert_eq!(a.status, StatusCode::CREATED);
    assert_eq!(
        api.get(&path, Some(&t)).await.json,
        json!([entry(&bob, "none")])
    );
    // Setting a level for an unknown user id is a 404.
    let ghost = "0123456789abcdef0123456789abcdef";
    assert_error(
        &api.call(
            Method::PUT,
            &format!("/api/permission/c/{lib}/o/{ghost}"),
            Some(&t),
            &[],
        )
        .await,
        404,
    );
}

async fn an_unknown_level_is_a_400(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let bob = api.user("bob", false);
    let path = format!("/api/permission/c/{lib}/o/{}", bob.id);
    for bad in ["owner", "Admin", ""] {
        let a = api
            .call(Method::PUT, &path, Some(&t), &[("level", bad)])
            .await;
        assert_error(&a, 400);
        assert_eq!(a.json["message"], "level must be one of none, view, admin");
    }
    assert_eq!(api.get(&path, Some(&t)).await.json, json!([]));
}

async fn a_unique_id_provisions_the_user_before_first_sign_in(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let path = format!("/api/permission/c/{lib}/o/0");
    let a = api
        .call(
            Method::PUT,
            &path,
            Some(&t),
            &[("uniqueId", "newcomer"), ("level", "view")],
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    assert_eq!(a.json, Value::Null);
    let newcomer = api
        .services
        .store()
        .user_by_unique_id(&UniqueId::parse("newcomer").unwrap())
        .unwrap()
        .expect("provisioned");
    let listed = api.get(&path, Some(&t)).await.json;
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(
        listed[1],
        json!({
            "firstName": "",
            "lastName": "",
            "userId": newcomer.id.to_string(),
            "uniqueId": "newcomer",
            "level": "view",
        })
    );
    // The provisioned user can use the access once signed in.
    let tn = api.token(&newcomer, "read write");
    let a = api
        .get(&format!("/api/describe/c/{lib}/o/{lib}"), Some(&tn))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    // A known uniqueId reuses the user (POST works like PUT), no duplicate.
    let a = api
        .call(
            Method::POST,
            &path,
            Some(&t),
            &[("uniqueId", "newcomer"), ("level", "admin")],
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED);
    let a = api
        .get(
            &format!("/api/permission/c/{lib}/o/{}", newcomer.id),
            Some(&t),
        )
        .await;
    assert_eq!(a.json[0]["level"], "admin");
    assert_eq!(
        api.get(&path, Some(&t)).await.json.as_array().map(Vec::len),
        Some(2)
    );
    // user_id 0 needs a uniqueId.
    let a = api
        .call(Method::PUT, &path, Some(&t), &[("level", "view")])
        .await;
    assert_error(&a, 400);
    assert_eq!(a.json["message"], "uniqueId is required when user_id is 0");
    assert_error(
        &api.call(Method::PUT, &path, Some(&t), &[("uniqueId", "")])
            .await,
        400,
    );
}

async fn delete_removes_an_entry_with_200_and_no_body(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let bob = api.user("bob", false);
    let carol = api.user("carol", false);
    grant(&api, &t, &lib, &bob, "view").await;
    grant(&api, &t, &lib, &carol, "admin").await;
    let path = format!("/api/permission/c/{lib}/o/{}", bob.id);
    let a = api.call(Method::DELETE, &path, Some(&t), &[]).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.json, Value::Null, "200 without a body");
    assert_eq!(api.get(&path, Some(&t)).await.json, json!([]));
    // No entry any more, or no such user: 404.
    assert_error(&api.call(Method::DELETE, &path, Some(&t), &[]).await, 404);
    let ghost = "0123456789abcdef0123456789abcdef";
    assert_error(
        &api.call(
            Method::DELETE,
            &format!("/api/permission/c/{lib}/o/{ghost}"),
            Some(&t),
            &[],
        )
        .await,
        404,
    );
    // By uniqueId with user_id 0 (an override from POST too).
    let zero = format!("/api/permission/c/{lib}/o/0");
    let a = api
        .call(
            Method::POST,
            &zero,
            Some(&t),
            &[("_METHOD", "DELETE"), ("uniqueId", "carol")],
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(
        api.get(&zero, Some(&t)).await.json.as_array().map(Vec::len),
        Some(1)
    );
    assert_error(
        &api.call(Method::DELETE, &zero, Some(&t), &[("uniqueId", "nobody")])
            .await,
        404,
    );
    assert_error(&api.call(Method::DELETE, &zero, Some(&t), &[]).await, 400);
}

async fn the_last_admin_cannot_be_removed_or_demoted(b: Backend) {
    let api = ApiApp::start(b).await;
    let (alice, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let path = format!("/api/permission/c/{lib}/o/{}", alice.id);
    let a = api.call(Method::DELETE, &path, Some(&t), &[]).await;
    assert_error(&a, 409);
    assert_eq!(
        a.json["message"],
        "the last admin of a collection cannot be removed or demoted"
    );
    for level in ["view", "none"] {
        assert_error(
            &api.call(Method::PUT, &path, Some(&t), &[("level", level)])
                .await,
            409,
        );
    }
    assert_eq!(
        api.get(&path, Some(&t)).await.json,
        json!([entry(&alice, "admin")])
    );
    // With a second admin, the first may step down.
    let bob = api.user("bob", false);
    grant(&api, &t, &lib, &bob, "admin").await;
    let a = api
        .call(Method::PUT, &path, Some(&t), &[("level", "view")])
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
}

async fn only_admins_with_a_write_token_change_permissions(b: Backend) {
    let api = ApiApp::start(b).await;
    let (alice, t) = api.signed_in("alice");
    let (bob, tb) = api.signed_in("bob");
    let (_, tm) = api.signed_in("mallory");
    let lib = api.library(&t, "L").await;
    grant(&api, &t, &lib, &bob, "view").await;
    let all = format!("/api/permission/c/{lib}/o/0");
    let bobs = format!("/api/permission/c/{lib}/o/{}", bob.id);
    // No token: 401 on every method.
    for m in [Method::GET, Method::PUT, Method::POST, Method::DELETE] {
        let a = api.call(m, &bobs, None, &[]).await;
        assert_error(&a, 401);
        assert_eq!(a.json["message"], "authentication required");
    }
    // A viewer cannot read or change the entries; an outsider neither.
    for token in [&tb, &tm] {
        assert_error(&api.get(&all, Some(token)).await, 403);
        assert_error(
            &api.call(Method::PUT, &bobs, Some(token), &[("level", "admin")])
                .await,
            403,
        );
        assert_error(
            &api.call(Method::DELETE, &bobs, Some(token), &[]).await,
            403,
        );
        assert_error(
            &api.call(Method::PUT, &all, Some(token), &[("uniqueId", "sneaky")])
                .await,
            403,
        );
    }
    assert!(
        api.services
            .store()
            .user_by_unique_id(&UniqueId::parse("sneaky").unwrap())
            .unwrap()
            .is_none(),
        "a refused grant provisions nobody"
    );
    // A read-only token reads but cannot write, even for an admin.
    let ro = api.token(&alice, "read");
    assert_eq!(api.get(&all, Some(&ro)).await.status, StatusCode::OK);
    for m in [Method::PUT, Method::POST, Method::DELETE] {
        assert_error(&api.call(m, &bobs, Some(&ro), &[]).await, 403);
    }
    assert_eq!(
        api.get(&bobs, Some(&t)).await.json,
        json!([entry(&bob, "view")])
    );
    // An org admin administers every collection.
    let root = api.user("root", true);
    let tr = api.token(&root, "read write");
    let a = api
        .call(Method::PUT, &bobs, Some(&tr), &[("level", "admin")])
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    // Unknown collection: 404; not a collection: 400; malformed ids: 400.
    let ghost = "0123456789abcdef0123456789abcdef";
    assert_error(
        &api.get(&format!("/api/permission/c/{ghost}/o/0"), Some(&t))
            .await,
        404,
    );
    let v = api.object(&t, &lib, "video", "V").await;
    assert_error(
        &api.get(&format!("/api/permission/c/{v}/o/0"), Some(&t))
            .await,
        400,
    );
    assert_error(
        &api.call(
            Method::PUT,
            &format!("/api/permission/c/{v}/o/{}", bob.id),
            Some(&t),
            &[],
        )
        .await,
        400,
    );
    assert_error(
        &api.get(&format!("/api/permission/c/{lib}/o/nope"), Some(&t))
            .await,
        400,
    );
    assert_error(&api.get("/api/permission/c/0/o/0", Some(&t)).await, 400);
}

async fn options_and_unimplemented_methods(b: Backend) {
    let api = ApiApp::start(b).await;
    let (bob, tb) = api.signed_in("bob");
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    grant(&api, &t, &lib, &bob, "view").await;
    let path = format!("/api/permission/c/{lib}/o/0");
    let allow = "GET, HEAD, PUT, POST, DELETE, OPTIONS";
    let a = api.call(Method::OPTIONS, &path, Some(&t), &[]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.headers["allow"], allow);
    assert_eq!(
        a.json,
        json!({"methods": ["GET", "HEAD", "PUT", "POST", "DELETE", "OPTIONS"], "authenticated": "true", "proceed": "true"})
    );
    let a = api.call(Method::OPTIONS, &path, Some(&tb), &[]).await;
    assert_eq!(
        a.json["proceed"], "false",
        "a viewer may not change permissions"
    );
    let a = api.call(Method::PATCH, &path, Some(&t), &[]).await;
    assert_error(&a, 501);
    assert_eq!(a.headers["allow"], allow);
    let a = api.call(Method::HEAD, &path, Some(&t), &[]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.json, Value::Null, "HEAD has no body");
}

medialib_adapters_diesel::backend_tests!(
    async on [sqlite, postgres] with crate::api::run:
    admin_lists_every_entry,
    one_user_reads_as_its_entry_or_the_empty_set,
    put_and_post_set_a_level_with_201_and_no_body,
    an_unknown_level_is_a_400,
    a_unique_id_provisions_the_user_before_first_sign_in,
    delete_removes_an_entry_with_200_and_no_body,
    the_last_admin_cannot_be_removed_or_demoted,
    only_admins_with_a_write_token_change_permissions,
    options_and_unimplemented_methods,
);
