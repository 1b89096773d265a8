//! The whole way through: tus creation, PATCHes, HEAD, the media call, delivery with Range;
//! the one-shot PUT with curl.

use reqwest::{Method, StatusCode};

use super::{UploadApp, data, sha256_hex};
use crate::api::{Backend, run};

medialib_adapters_diesel::backend_tests!(async on [sqlite, postgres] with run:
    tus_upload_in_two_patches_is_delivered_byte_identical_with_ranges,
    the_one_shot_put_with_curl_stores_the_file,
);

async fn tus_upload_in_two_patches_is_delivered_byte_identical_with_ranges(b: Backend) {
    let app = UploadApp::start(b).await;
    let bytes = data(300_000);
    let location = app.create(bytes.len(), "lecture.mp4").await;
    let object = location
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();

    let res = app.patch(&location, 0, &bytes[..100_000]).await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    assert_eq!(res.headers()["upload-offset"], "100000");
    assert_eq!(res.headers()["tus-resumable"], "1.0.0");
    let head = app.tus(Method::HEAD, &location).send().await.unwrap();
    assert_eq!(head.status(), StatusCode::OK);
    assert_eq!(head.headers()["upload-offset"], "100000");
    assert_eq!(head.headers()["upload-length"], "300000");
    let res = app.patch(&location, 100_000, &bytes[100_000..]).await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    assert_eq!(res.headers()["upload-offset"], "300000");

    let media = app.media(&object).await;
    assert_eq!(media["state"], "queued");
    assert_eq!(media["source"]["sha256"], sha256_hex(&bytes));
    assert_eq!(media["source"]["size"], 300_000);
    let url = media["files"][0]["url"].as_str().unwrap().to_owned();

    let whole = app.api.app.client.get(&url).send().await.unwrap();
    assert_eq!(whole.status(), StatusCode::OK);
    assert_eq!(whole.headers()["content-type"], "video/mp4");
    assert_eq!(whole.headers()["accept-ranges"], "bytes");
    let etag = whole.headers()["etag"].to_str().unwrap().to_owned();
    assert_eq!(whole.bytes().await.unwrap().as_ref(), &bytes[..]);

    let part = app
        .api
        .app
        .client
        .get(&url)
        .header("Range", "bytes=1000-1999")
        .send()
        .await
        .unwrap();
    assert_eq!(part.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(part.headers()["content-range"], "bytes 1000-1999/300000");
    assert_eq!(part.bytes().await.unwrap().as_ref(), &bytes[1000..2000]);

    let cached = app
        .api
        .app
        .client
        .get(&url)
        .header("If-None-Match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(cached.status(), StatusCode::NOT_MODIFIED);
    let past = app
        .api
        .app
        .client
        .get(&url)
        .header("Range", "bytes=300000-")
        .send()
        .await
        .unwrap();
    assert_eq!(past.status(), StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(past.headers()["content-range"], "bytes */300000");

    // A changed signature is refused.
    let mut parts: Vec<&str> = url.rsplitn(2, '/').collect();
    let file = parts.remove(0);
    let prefix = parts.remove(0);
    let (head_part, sig) = prefix.rsplit_once('/').unwrap();
    let forged = format!(
        "{head_part}/{}{}/{file}",
        if sig.starts_with('A') { "B" } else { "A" },
        &sig[1..]
    );
    let res = app.api.app.client.get(&forged).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let json: serde_json::Value = res.json().await.unwrap();
    assert_eq!(json["message"], "the media URL's signature is not valid");
    // A person who opens it in a browser gets a page that says what to do.
    let page = app
        .api
        .app
        .client
        .get(&forged)
        .header("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::FORBIDDEN);
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let body = page.text().await.unwrap();
    assert!(body.contains("Link expired"), "{body}");
    assert!(body.contains("Open the item"), "{body}");
}

async fn the_one_shot_put_with_curl_stores_the_file(b: Backend) {
    let app = UploadApp::start(b).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.pdf");
    let bytes = data(123_457);
    std::fs::write(&path, &bytes).unwrap();
    let url = app.api.app.url(&app.upload_path("0"));
    let out = tokio::process::Command::new("curl")
        .args(["-sS", "-X", "PUT", "-H"])
        .arg(format!("Authorization: Bearer {}", app.token))
        .args(["-F", "title=Week 1 notes", "-F"])
        .arg(format!("file=@{}", path.display()))
        .args(["-F", "public=true", "-w", "\n%{http_code}"])
        .arg(&url)
        .output()
        .await
        .expect("curl runs");
    let text = String::from_utf8(out.stdout).unwrap();
    let (body, status) = text.rsplit_once('\n').unwrap();
    assert_eq!(status, "201", "{body}");
    let uuid = serde_json::from_str::<serde_json::Value>(body).unwrap()["uuid"]
        .as_str()
        .unwrap()
        .to_owned();
    let describe = app
        .api
        .get(
            &format!("/api/describe/c/{}/o/{uuid}", app.lib),
            Some(&app.token),
        )
        .await;
    assert_eq!(describe.json["title"], "Week 1 notes");
    assert_eq!(describe.json["type"], "file");
    assert_eq!(describe.json["public"], "true");
    let media = app.media(&uuid).await;
    assert_eq!(media["state"], "ready");
    let url = media["files"][0]["url"].as_str().unwrap();
    let got = app.api.app.client.get(url).send().await.unwrap();
    assert_eq!(got.headers()["content-type"], "application/pdf");
    assert_eq!(got.bytes().await.unwrap().as_ref(), &bytes[..]);
}
