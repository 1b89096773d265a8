//! The health endpoints and the JSON 404s, against the real app over HTTP.

use crate::helpers::spawn_app;

#[tokio::test]
async fn healthz_answers_ok() {
    let app = spawn_app().await;
    let res = app.get("/healthz").await;
    assert_eq!(res.status(), 200);
    assert!(res.headers().contains_key("x-request-id"));
    let body: serde_json::Value = res.json().await.unwrap();
    assert_eq!(body, serde_json::json!({"status": "ok"}));
}

#[tokio::test]
async fn readyz_answers_ready_when_the_database_is_reachable() {
    let app = spawn_app().await;
    assert_ne!(
        app.port, 0,
        "port 0 must resolve to the port actually bound"
    );
    let db_file = app.db_url.strip_prefix("sqlite://").unwrap();
    assert!(
        std::path::Path::new(db_file).is_file(),
        "the app created its SQLite file"
    );
    let res = app.get("/readyz").await;
    assert_eq!(res.status(), 200);
    let body: serde_json::Value = res.json().await.unwrap();
    assert_eq!(body, serde_json::json!({"status": "ready"}));
}

#[tokio::test]
async fn unknown_api_methods_are_json_404s() {
    let app = spawn_app().await;
    let res = app.get("/api/nope").await;
    assert_eq!(res.status(), 404);
    let body: serde_json::Value = res.json().await.unwrap();
    assert_eq!(body, serde_json::json!({"message": "API method not found"}));

    let res = app.get("/no/such/page").await;
    assert_eq!(res.status(), 404);
    let body: serde_json::Value = res.json().await.unwrap();
    assert_eq!(body, serde_json::json!({"message": "not found"}));
}

#[tokio::test]
async fn request_ids_differ_between_requests() {
    let app = spawn_app().await;
    let first = app.get("/healthz").await;
    let second = app.get("/healthz").await;
    assert_ne!(
        first.headers().get("x-request-id"),
        second.headers().get("x-request-id")
    );
}

#[tokio::test]
async fn head_answers_without_a_body_and_trailing_slashes_are_optional() {
    let app = spawn_app().await;
    let res = app.client.head(app.url("/readyz")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.bytes().await.unwrap().is_empty());

    let res = app.get("/healthz/").await;
    assert_eq!(res.status(), 200);
}

/// When the database goes away, API calls and /readyz answer 503 with
/// `Retry-After` and a JSON message (no hang beyond the pool timeout, no 500),
/// and the process keeps serving.
#[tokio::test]
async fn a_database_outage_is_a_503_with_retry_after() {
    let Some(db) = medialib_adapters_diesel::testing::PgTestDb::create_or_skip() else {
        return;
    };
    let app = crate::helpers::spawn_app_on(db.url.clone(), Box::new(()), |l| l).await;
    assert_eq!(app.get("/readyz").await.status(), 200);
    let lib = "0123456789abcdef0123456789abcdef";
    assert_eq!(
        app.get(&format!("/api/describe/c/{lib}/o/{lib}"))
            .await
            .status(),
        404,
        "the database answers before the outage"
    );
    drop(db); // DROP DATABASE ... WITH (FORCE): every connection is cut.
    for path in [
        "/readyz".to_owned(),
        format!("/api/describe/c/{lib}/o/{lib}"),
    ] {
        let started = std::time::Instant::now();
        let res = app.get(&path).await;
        assert_eq!(res.status(), 503, "{path}");
        assert_eq!(res.headers()["retry-after"], "5", "{path}");
        let body: serde_json::Value = res.json().await.unwrap();
        assert_eq!(body["message"], "database unavailable", "{path}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(15),
            "{path} answered in bounded time"
        );
    }
    assert_eq!(
        app.get("/healthz").await.status(),
        200,
        "the process stays up"
    );
}
