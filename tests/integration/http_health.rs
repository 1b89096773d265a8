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
