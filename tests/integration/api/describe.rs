//! `describe`: GET (limited / complete), PUT (create), POST (update), and the general rules
//! of §4.1 that every resource shares (overrides, body formats, limits, OPTIONS, 501).

use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::{ApiApp, Backend, COMPLETE_RECORD, LIMITED_RECORD, assert_error, keys};

async fn create_and_read_complete_record(b: Backend) {
    let api = ApiApp::start(b).await;
    let (alice, t) = api.signed_in("alice");
    let lib = api.library(&t, "Lectures").await;
    let v = api.object(&t, &lib, "video", "Intro").await;
    let a = api
        .get(&format!("/api/describe/c/{lib}/o/{v}/"), Some(&t))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    let r = &a.json;
    assert_eq!(keys(r), COMPLETE_RECORD);
    assert_eq!(r["type"], "video");
    assert_eq!(r["title"], "Intro");
    assert_eq!(r["public"], "false");
    assert_eq!(r["authenticated"], "true");
    assert_eq!(r["uuid"], v.as_str());
    assert_eq!(r["userId"], alice.id.to_string());
    assert_eq!(r["images"], serde_json::json!({}));
    assert_eq!(r["properties"], serde_json::json!({}));
    assert!(r["created"].is_i64() && r["modified"].is_i64());
    let perm = r["permLink"].as_str().unwrap();
    assert!(
        perm.starts_with(&format!("{}/w/", api.app.address)) && perm.ends_with('/'),
        "{perm}"
    );
    // The collection can be described through itself; without the trailing slash too.
    let a = api
        .get(&format!("/api/describe/c/{lib}/o/{lib}"), Some(&t))
        .await;
    assert_eq!(a.json["type"], "catalog");
    // Dashes are optional and case does not matter in input.
    let bare = v.replace('-', "").to_uppercase();
    let a = api
        .get(&format!("/api/describe/c/{lib}/o/{bare}"), Some(&t))
        .await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.json["uuid"], v.as_str(), "output is lowercase dashed");
}

async fn anonymous_and_outsiders_see_the_limited_subset_of_public_objects(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let (_, other) = api.signed_in("mallory");
    let lib = api.library(&t, "L").await;
    let v = api.object(&t, &lib, "audio", "Talk").await;
    let path = format!("/api/describe/c/{lib}/o/{v}");

    let a = api.get(&path, None).await;
    assert_error(&a, 401);
    assert_eq!(a.json["message"], "authentication required");
    assert_eq!(a.headers["www-authenticate"], "Bearer");
    assert_error(&api.get(&path, Some(&other)).await, 403);

    let a = api
        .call(
            Method::POST,
            &path,
            Some(&t),
            &[("type", "audio"), ("public", "TRUE")],
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{a:?}");
    assert_eq!(a.json["uuid"], v.as_str());

    for token in [None, Some(other.as_str())] {
        let a = api.get(&path, token).await;
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(keys(&a.json), LIMITED_RECORD);
        assert_eq!(a.json["public"], "true");
        assert_eq!(
            a.json["authenticated"],
            if token.is_some() { "true" } else { "false" }
        );
    }
}

async fn objects_outside_the_collection_are_not_found(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let a_lib = api.library(&t, "A").await;
    let b_lib = api.library(&t, "B").await;
    let v = api.object(&t, &a_lib, "file", "F").await;
    assert_error(
        &api.get(&format!("/api/describe/c/{b_lib}/o/{v}"), Some(&t))
            .await,
        404,
    );
    let ghost = "0123456789abcdef0123456789abcdef";
    assert_error(
        &api.get(&format!("/api/describe/c/{ghost}/o/{v}"), Some(&t))
            .await,
        404,
    );
    assert_error(
        &api.get(&format!("/api/describe/c/{a_lib}/o/{ghost}"), Some(&t))
            .await,
        404,
    );
}

async fn bad_input_is_a_400_naming_the_problem(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let put = format!("/api/describe/c/{lib}/o/0");
    for bad in ["xyz", "0123456789abcdef0123456789abcdeg", &"a".repeat(5000)] {
        assert_error(
            &api.get(&format!("/api/describe/c/{bad}/o/{lib}"), Some(&t))
                .await,
            400,
        );
    }
    let cases: Vec<(Vec<(&str, String)>, &str)> = vec![
        (vec![("title", "t".into())], "type is required"),
        (vec![("type", "folder".into())], "type must be one of"),
        (
            vec![("type", "video".into()), ("public", "yes".into())],
            "public must be true or false",
        ),
        (
            vec![("type", "video".into()), ("title", "é".repeat(256))],
            "title is longer than 255 characters",
        ),
        (
            vec![("type", "video".into()), ("duration", "-3".into())],
            "duration",
        ),
    ];
    for (form, message) in cases {
        let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let a = api.call(Method::PUT, &put, Some(&t), &form).await;
        assert_error(&a, 400);
        assert!(
            a.json["message"].as_str().unwrap().contains(message),
            "{a:?}"
        );
    }
    let max = "é".repeat(255);
    let a = api
        .call(
            Method::PUT,
            &put,
            Some(&t),
            &[("type", "video"), ("title", &max)],
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED);
    let v = a.json["uuid"].as_str().unwrap().to_owned();
    let a = api
        .get(&format!("/api/describe/c/{lib}/o/{v}"), Some(&t))
        .await;
    assert_eq!(a.json["title"], max.as_str());
    // A top-level object must be a catalog; PUT needs o/0.
    assert_error(
        &api.call(
            Method::PUT,
            "/api/describe/c/0/o/0",
            Some(&t),
            &[("type", "video")],
        )
        .await,
        400,
    );
    assert_error(
        &api.call(
            Method::PUT,
            &format!("/api/describe/c/{lib}/o/{v}"),
            Some(&t),
            &[("type", "video")],
        )
        .await,
        400,
    );
    // The type is fixed at creation.
    let a = api
        .call(
            Method::POST,
            &format!("/api/describe/c/{lib}/o/{v}"),
            Some(&t),
            &[("type", "audio")],
        )
        .await;
    assert_error(&a, 409);
    // SQL metacharacters are stored and returned verbatim.
    let nasty = "Robert'); DROP TABLE objects;-- \"%_\\";
    let a = api
        .call(
            Method::POST,
            &format!("/api/describe/c/{lib}/o/{v}"),
            Some(&t),
            &[("type", "video"), ("description", nasty)],
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED);
    let a = api
        .get(&format!("/api/describe/c/{lib}/o/{v}"), Some(&t))
        .await;
    assert_eq!(a.json["description"], nasty);
}

async fn permissions_and_scopes_guard_writes(b: Backend) {
    let api = ApiApp::start(b).await;
    let (alice, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let v = api.object(&t, &lib, "video", "V").await;
    let path = format!("/api/describe/c/{lib}/o/{v}");
    // A read-only token cannot write, even for an admin.
    let read_only = api.token(&alice, "read");
    assert_error(
        &api.call(Method::POST, &path, Some(&read_only), &[("type", "video")])
            .await,
        403,
    );
    assert_eq!(
        api.get(&path, Some(&read_only)).await.status,
        StatusCode::OK
    );
    // A viewer reads but cannot write or create.
    let (bob, tb) = api.signed_in("bob");
    let lib_id = medialib_domain::ObjectId::parse(&lib).unwrap();
    api.services
        .people()
        .grant_permission(
            &alice.as_caller(),
            lib_id,
            medialib_ports::services::people::Grantee::Id(bob.id),
            medialib_domain::PermissionLevel::View,
        )
        .unwrap();
    assert_eq!(api.get(&path, Some(&tb)).await.status, StatusCode::OK);
    assert_error(
        &api.call(Method::POST, &path, Some(&tb), &[("type", "video")])
            .await,
        403,
    );
    assert_error(
        &api.call(
            Method::PUT,
            &format!("/api/describe/c/{lib}/o/0"),
            Some(&tb),
            &[("type", "video")],
        )
        .await,
        403,
    );
    // No token on a write: 401; a bad token anywhere: 401 invalid_token.
    assert_error(
        &api.call(
            Method::PUT,
            "/api/describe/c/0/o/0",
            None,
            &[("type", "catalog")],
        )
        .await,
        401,
    );
    let a = api.get(&path, Some("mla_not-a-real-token")).await;
    assert_error(&a, 401);
    assert_eq!(a.json["message"], "invalid or expired credentials");
    assert_eq!(
        a.headers["www-authenticate"],
        r#"Bearer error="invalid_token""#
    );
    // The `OAuth` scheme works like `Bearer`.
    let req = api
        .app
        .client
        .get(api.app.url(&path))
        .header("Authorization", format!("OAuth {t}"));
    assert_eq!(api.send(req).await.json["authenticated"], "true");
}

async fn method_overrides_and_body_formats(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let put = api.app.url(&format!("/api/describe/c/{lib}/o/0"));
    // POST + _METHOD=PUT creates.
    let a = api
        .call(
            Method::POST,
            &format!("/api/describe/c/{lib}/o/0"),
            Some(&t),
            &[("_METHOD", "PUT"), ("type", "file")],
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    // POST + X-HTTP-Method-Override: PUT creates.
    let req = api
        .app
        .client
        .post(&put)
        .bearer_auth(&t)
        .header("X-HTTP-Method-Override", "PUT")
        .form(&[("type", "file")]);
    assert_eq!(api.send(req).await.status, StatusCode::CREATED);
    // Odd override values are refused.
    assert_error(
        &api.call(
            Method::POST,
            &format!("/api/describe/c/{lib}/o/0"),
            Some(&t),
            &[("_METHOD", "TRACE"), ("type", "file")],
        )
        .await,
        400,
    );
    // JSON and multipart bodies.
    let req = api.app.client.put(&put).bearer_auth(&t).json(&serde_json::json!({"type": "video", "title": "J", "public": true, "properties": {"k": "v"}}));
    let a = api.send(req).await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    let id = a.json["uuid"].as_str().unwrap().to_owned();
    let r = api
        .get(&format!("/api/describe/c/{lib}/o/{id}"), Some(&t))
        .await
        .json;
    assert_eq!(
        (r["title"].as_str(), r["public"].as_str()),
        (Some("J"), Some("true"))
    );
    assert_eq!(r["properties"], serde_json::json!({"k": "v"}));
    let boundary = "medialibBoundary";
    let body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"type\"\r\n\r\naudio\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nM\r\n--{boundary}--\r\n"
    );
    let req = api
        .app
        .client
        .put(&put)
        .bearer_auth(&t)
        .header(
            "Content-Type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(body);
    assert_eq!(api.send(req).await.status, StatusCode::CREATED);
    // Non-UTF-8 input and oversize bodies.
    let req = api
        .app
        .client
        .put(&put)
        .bearer_auth(&t)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(b"type=video&title=%ff%fe".to_vec());
    assert_error(&api.send(req).await, 400);
    let big = format!("type=video&description={}", "x".repeat(1 << 20));
    let req = api
        .app
        .client
        .put(&put)
        .bearer_auth(&t)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(big);
    let a = api.send(req).await;
    assert_error(&a, 413);
    assert_eq!(
        a.headers["connection"], "close",
        "the unread body ends the connection"
    );
    // The client's next request on this host works (no reuse of the dropped connection).
    assert_eq!(
        api.get(&format!("/api/describe/c/{lib}/o/{lib}"), Some(&t))
            .await
            .status,
        StatusCode::OK
    );
}

async fn options_and_unimplemented_methods(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let (_, other) = api.signed_in("bob");
    let lib = api.library(&t, "L").await;
    let path = format!("/api/describe/c/{lib}/o/0");
    let a = api.call(Method::OPTIONS, &path, Some(&t), &[]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.headers["allow"], "GET, HEAD, PUT, POST, OPTIONS");
    assert_eq!(a.json["authenticated"], "true");
    assert_eq!(a.json["proceed"], "true");
    let a = api.call(Method::OPTIONS, &path, Some(&other), &[]).await;
    assert_eq!(a.json["proceed"], "false", "bob is no admin of the library");
    let a = api.call(Method::OPTIONS, &path, None, &[]).await;
    assert_eq!(
        (a.json["authenticated"].as_str(), a.json["proceed"].as_str()),
        (Some("false"), Some("false"))
    );
    let a = api.call(Method::DELETE, &path, Some(&t), &[]).await;
    assert_error(&a, 501);
    assert_eq!(a.headers["allow"], "GET, HEAD, PUT, POST, OPTIONS");
    let a = api
        .call(
            Method::HEAD,
            &format!("/api/describe/c/{lib}/o/{lib}"),
            Some(&t),
            &[],
        )
        .await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.json, Value::Null, "HEAD has no body");
    assert_error(&api.get("/api/nothing/here", Some(&t)).await, 404);
}

medialib_adapters_diesel::backend_tests!(
    async on [sqlite, postgres] with crate::api::run:
    create_and_read_complete_record,
    anonymous_and_outsiders_see_the_limited_subset_of_public_objects,
    objects_outside_the_collection_are_not_found,
    bad_input_is_a_400_naming_the_problem,
    permissions_and_scopes_guard_writes,
    method_overrides_and_body_formats,
    options_and_unimplemented_methods,
);
