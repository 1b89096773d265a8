//! `embed` and `video` over HTTP: record shapes, the type check, and who may read them.

use medialib_domain::{ObjectId, PermissionLevel};
use reqwest::{Method, StatusCode};
use serde_json::json;

use super::{ApiApp, Backend, assert_error, keys};

async fn embed_record_points_at_the_player_pages(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let v = api
        .object(&t, &lib, "video", r#"Intro "<b>" & 'more'"#)
        .await;
    let a = api
        .get(&format!("/api/embed/c/{lib}/o/{v}/"), Some(&t))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(keys(&a.json), ["properties", "type"]);
    assert_eq!(a.json["type"], "embed");
    let p = &a.json["properties"];
    assert_eq!(keys(p), ["iframe", "link", "script"]);

    let described = api
        .get(&format!("/api/describe/c/{lib}/o/{v}"), Some(&t))
        .await;
    let link = described.json["permLink"].as_str().unwrap();
    assert_eq!(p["link"], link);
    let code = link
        .strip_prefix(&format!("{}/w/", api.app.address))
        .and_then(|c| c.strip_suffix('/'))
        .unwrap();
    let base = &api.app.address;
    assert_eq!(
        p["iframe"],
        format!(
            r#"<iframe src="{base}/embed/{code}" width="640" height="360" title="Intro &quot;&lt;b&gt;&quot; &amp; &#39;more&#39;" allow="fullscreen" allowfullscreen></iframe>"#
        )
    );
    assert_eq!(
        p["script"],
        format!(r#"<script src="{base}/embed/{code}.js"></script>"#)
    );
    // The pages exist (the object is private: they say sign-in is required).
    for page in [format!("/embed/{code}"), format!("/embed/{code}.js")] {
        assert_eq!(
            api.app.get(&page).await.status(),
            StatusCode::UNAUTHORIZED,
            "{page}"
        );
    }
    // A collection has embed codes too (through itself).
    let a = api
        .get(&format!("/api/embed/c/{lib}/o/{lib}"), Some(&t))
        .await;
    assert_eq!(a.status, StatusCode::OK);
}

/// Without media the record lists nothing (processed media: `api::records`).
async fn video_record_lists_no_files_without_media(b: Backend) {
    let api = ApiApp::start(b).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let v = api.object(&t, &lib, "video", "V").await;
    let audio = api.object(&t, &lib, "audio", "A").await;
    for o in [&v, &audio] {
        let a = api
            .get(&format!("/api/video/c/{lib}/o/{o}"), Some(&t))
            .await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        assert_eq!(
            a.json,
            json!({"type": "video", "properties": {"files": []}, "images": {}, "uuid": o})
        );
    }
    // Only videos and audio recordings have a video record.
    let image = api.object(&t, &lib, "image", "I").await;
    let file = api.object(&t, &lib, "file", "F").await;
    for other in [&image, &file, &lib] {
        let a = api
            .get(&format!("/api/video/c/{lib}/o/{other}"), Some(&t))
            .await;
        assert_error(&a, 400);
        assert!(
            a.json["message"]
                .as_str()
                .unwrap()
                .starts_with("not a video"),
            "{a:?}"
        );
    }
}

async fn embed_and_video_need_view_on_the_collection(b: Backend) {
    let api = ApiApp::start(b).await;
    let (alice, t) = api.signed_in("alice");
    let lib = api.library(&t, "L").await;
    let other = api.library(&t, "M").await;
    let v = api.object(&t, &lib, "video", "V").await;
    let elsewhere = api.object(&t, &other, "video", "W").await;
    // Public or not: the records need `view`.
    let a = api
        .call(
            Method::POST,
            &format!("/api/describe/c/{lib}/o/{v}"),
            Some(&t),
            &[("type", "video"), ("public", "true")],
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED);
    let (bob, tb) = api.signed_in("bob");
    let (_, tm) = api.signed_in("mallory");
    api.services
        .people()
        .grant_permission(
            &alice.as_caller(),
            ObjectId::parse(&lib).unwrap(),
            medialib_ports::services::people::Grantee::Id(bob.id),
            PermissionLevel::View,
        )
        .unwrap();
    for resource in ["embed", "video"] {
        let path = format!("/api/{resource}/c/{lib}/o/{v}");
        let a = api.get(&path, None).await;
        assert_error(&a, 401);
        assert_eq!(a.headers["www-authenticate"], "Bearer");
        assert_error(&api.get(&path, Some(&tm)).await, 403);
        assert_eq!(api.get(&path, Some(&tb)).await.status, StatusCode::OK);
        assert_error(
            &api.get(&format!("/api/{resource}/c/{lib}/o/{elsewhere}"), Some(&t))
                .await,
            404,
        );
        assert_error(
            &api.get(&format!("/api/{resource}/c/{lib}/o/0"), Some(&t))
                .await,
            400,
        );
        let a = api.call(Method::PUT, &path, Some(&t), &[]).await;
        assert_error(&a, 501);
        assert_eq!(a.headers["allow"], "GET, HEAD, OPTIONS");
        let a = api.call(Method::OPTIONS, &path, Some(&t), &[]).await;
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(a.json["methods"], json!(["GET", "HEAD", "OPTIONS"]));
        assert_eq!(a.json["proceed"], "false", "no write methods here");
    }
}

medialib_adapters_diesel::backend_tests!(
    async on [sqlite, postgres] with crate::api::run:
    embed_record_points_at_the_player_pages,
    video_record_lists_no_files_without_media,
    embed_and_video_need_view_on_the_collection,
);
