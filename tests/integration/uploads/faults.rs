//! Uploads under faults, on SQLite and PostgreSQL:
//!
//! - `kill -9` of `medialib serve` while a client streams a PATCH slowly: after a restart on
//!   the same database and storage, HEAD's offset is progress whose bytes are on disk (the
//!   file's prefix), nothing acknowledged is lost, the client resumes and the stored file is
//!   byte-identical.
//! - Two PATCHes to one upload at once: one wins, the other is a 409 before any byte of it is
//!   taken; the bytes come out right.
//! - Garage (a real S3 server) stopped mid-upload: a PATCH is a 503 with `Retry-After`, never
//!   a 500, `/readyz` fails; once Garage is back the same medialib resumes the upload (HEAD +
//!   PATCH) to a byte-identical file. And a plain round trip on Garage, streamed and with
//!   `storage_redirect = true` (a 302 to a presigned URL that works).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use medialib_adapters_storage::testing::{Garage, REGION};
use reqwest::{Method, StatusCode};

use super::{UploadApp, data, object_of, paced_request, patch_head, sha256_hex};
use crate::api::{Backend, run};
use crate::helpers::ServeProcess;

medialib_adapters_diesel::backend_tests!(async on [sqlite, postgres] with run:
    kill_9_mid_patch_loses_nothing_acknowledged_and_the_upload_resumes,
    two_patches_at_once_one_wins_the_other_is_a_409,
    garage_stopped_mid_upload_is_a_503_and_the_upload_resumes_when_it_is_back,
    an_upload_on_garage_is_delivered_streamed_and_by_presigned_redirect,
);

const MIB: usize = 1024 * 1024;

/// Bytes that are not periodic (so that a shifted or repeated piece cannot match).
fn noise(n: usize) -> Vec<u8> {
    let mut x: u32 = 0x2545_f491;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

fn path_of(url: &str) -> &str {
    let rest = url.trim_start_matches("http://");
    &rest[rest.find('/').unwrap()..]
}

async fn head_offset(app: &UploadApp, location: &str) -> usize {
    let head = app.tus(Method::HEAD, location).send().await.unwrap();
    assert_eq!(head.status(), StatusCode::OK, "HEAD {location}");
    head.headers()["upload-offset"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

async fn kill_9_mid_patch_loses_nothing_acknowledged_and_the_upload_resumes(b: Backend) {
    let app = UploadApp::start(b).await;
    let media = crate::helpers::media_dir();
    let storage = format!("file://{}", media.path().display());
    let db_url = app.api.app.db_url.clone();
    // `medialib serve` on the test's database with its media in `media` (started off the
    // async workers: it waits for the child's "listening").
    let start = || {
        let (db_url, storage) = (db_url.clone(), storage.clone());
        tokio::task::spawn_blocking(move || {
            ServeProcess::start_with_env(&db_url, &[("MEDIALIB_STORAGE_URL", &storage)])
        })
    };
    let mut server = start().await.unwrap();

    let bytes = noise(16 * MIB);
    let create = app
        .tus(
            Method::POST,
            &format!("{}{}", server.address, app.upload_path("0")),
        )
        .header("Upload-Length", bytes.len().to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(create.status(), StatusCode::CREATED);
    let location = create.headers()["location"].to_str().unwrap().to_owned();
    let path = path_of(&location).to_owned();
    let object = object_of(&location);

    // One MiB acknowledged...
    let res = app.patch(&location, 0, &bytes[..MIB]).await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    assert_eq!(res.headers()["upload-offset"], MIB.to_string());

    // ...then the rest, slowly (about 4 MiB/s), killed after two seconds.
    let written = Arc::new(AtomicUsize::new(0));
    let host = server.address.trim_start_matches("http://").to_owned();
    let slow = tokio::spawn(paced_request(
        server.address.clone(),
        patch_head(&host, &path, &app.token, MIB, bytes.len() - MIB),
        bytes[MIB..].to_vec(),
        64 * 1024,
        Duration::from_millis(15),
        Arc::clone(&written),
    ));
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let sent = written.load(Ordering::SeqCst);
    server.kill_hard();
    let outcome = slow.await.unwrap();
    assert!(
        outcome.is_err(),
        "the slow PATCH got an answer before the kill: {outcome:?}"
    );
    assert!(
        sent > 2 * MIB && sent < bytes.len() - MIB,
        "the kill was not mid-PATCH ({sent} bytes sent)"
    );

    // A new life on the same database and storage: it frees the lock the dead one held.
    let server = start().await.unwrap();
    let location = format!("{}{path}", server.address);
    let offset = head_offset(&app, &location).await;
    assert!(
        offset >= MIB,
        "acknowledged bytes were lost: offset {offset}"
    );
    assert!(
        offset > MIB,
        "no progress of the killed PATCH was kept ({sent} bytes sent over 2.5 s)"
    );
    assert!(offset <= MIB + sent, "offset {offset} past what was sent");
    // The offset's bytes are on disk, and they are the file's prefix.
    let staged: Vec<_> = std::fs::read_dir(media.path().join("staging~"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(staged.len(), 1, "{staged:?}");
    let on_disk = std::fs::read(&staged[0]).unwrap();
    assert!(on_disk.len() >= offset);
    assert!(
        on_disk[..offset] == bytes[..offset],
        "the staged bytes below the offset are not the file's"
    );

    let res = app.patch(&location, offset, &bytes[offset..]).await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    assert_eq!(res.headers()["upload-offset"], bytes.len().to_string());
    let media_json = app.media_at(&server.address, &object).await;
    assert_eq!(media_json["source"]["sha256"], sha256_hex(&bytes));
    let url = media_json["files"][0]["url"].as_str().unwrap();
    let got = app.api.app.client.get(url).send().await.unwrap();
    assert_eq!(got.status(), StatusCode::OK);
    assert!(got.bytes().await.unwrap().as_ref() == bytes.as_slice());
    println!(
        "kill -9 [{b:?}]: {} bytes sent of the slow PATCH when killed; after restart HEAD said \
         {offset} (1 MiB acknowledged before it), resumed to {} bytes, SHA-256 equal",
        MIB + sent,
        bytes.len()
    );
}

async fn two_patches_at_once_one_wins_the_other_is_a_409(b: Backend) {
    let app = UploadApp::start(b).await;
    let host = app.api.app.address.trim_start_matches("http://").to_owned();

    // A slow PATCH holds the upload; others meanwhile are 409s and take nothing.
    let bytes = noise(2 * MIB);
    let location = app.create(bytes.len(), "race.bin").await;
    let path = path_of(&location).to_owned();
    let written = Arc::new(AtomicUsize::new(0));
    let slow = tokio::spawn(paced_request(
        app.api.app.address.clone(),
        patch_head(&host, &path, &app.token, 0, bytes.len()),
        bytes.clone(),
        64 * 1024,
        Duration::from_millis(25),
        Arc::clone(&written),
    ));
    while written.load(Ordering::SeqCst) < 256 * 1024 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for offset in [0, 256 * 1024] {
        let res = app
            .patch(&location, offset, &bytes[offset..offset + 1000])
            .await;
        assert_eq!(res.status(), StatusCode::CONFLICT);
        let body: serde_json::Value = res.json().await.unwrap();
        assert!(body["message"].is_string(), "{body}");
    }
    let head = head_offset(&app, &location).await;
    assert!(head < bytes.len());
    let won = slow.await.unwrap().unwrap();
    assert_eq!(won.status, 204, "{:?}", won.json());
    assert_eq!(won.header("upload-offset"), Some("2097152"));
    app.assert_stored(&object_of(&location), &bytes).await;

    // Two started together, both slow: exactly one is taken, the other is refused at once.
    let bytes = noise(MIB);
    let location = app.create(bytes.len(), "race2.bin").await;
    let path = path_of(&location).to_owned();
    let racer = || {
        tokio::spawn(paced_request(
            app.api.app.address.clone(),
            patch_head(&host, &path, &app.token, 0, bytes.len()),
            bytes.clone(),
            64 * 1024,
            Duration::from_millis(20),
            Arc::new(AtomicUsize::new(0)),
        ))
    };
    let (a, b2) = (racer(), racer());
    let (a, b2) = (a.await.unwrap().unwrap(), b2.await.unwrap().unwrap());
    let mut statuses = [a.status, b2.status];
    statuses.sort_unstable();
    assert_eq!(statuses, [204, 409], "{a:?} {b2:?}");
    let loser = if a.status == 409 { &a } else { &b2 };
    assert!(loser.json()["message"].is_string(), "{loser:?}");
    app.assert_stored(&object_of(&location), &bytes).await;
}

/// Starts Garage off the async workers (its readiness probe blocks on a runtime of its own).
pub(crate) async fn garage() -> Garage {
    tokio::task::spawn_blocking(Garage::start)
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn on_garage(b: Backend, garage: &Garage, redirect: bool) -> UploadApp {
    on_garage_with(b, garage, move |l| {
        l.set("storage_redirect", redirect.to_string())
    })
    .await
}

/// The settings of a medialib whose media is in `garage`'s bucket, under `medialib/`.
pub(crate) fn garage_settings(garage: &Garage) -> [(&'static str, String); 5] {
    [
        ("storage_url", format!("s3://{}/medialib", garage.bucket())),
        ("storage_s3_endpoint", garage.endpoint()),
        ("storage_s3_region", REGION.to_owned()),
        (
            "storage_s3_access_key_id",
            garage.access_key_id().to_owned(),
        ),
        (
            "storage_s3_secret_access_key",
            garage.secret_access_key().to_owned(),
        ),
    ]
}

/// The app on `garage`'s bucket, with `configure`'s settings too.
pub(crate) async fn on_garage_with(
    b: Backend,
    garage: &Garage,
    configure: impl FnOnce(
        medialib::configuration::SettingsLoader,
    ) -> medialib::configuration::SettingsLoader,
) -> UploadApp {
    let storage = garage_settings(garage);
    UploadApp::start_with(b, move |l| {
        configure(
            storage
                .into_iter()
                .fold(l, |l, (name, value)| l.set(name, value)),
        )
    })
    .await
}

async fn garage_stopped_mid_upload_is_a_503_and_the_upload_resumes_when_it_is_back(b: Backend) {
    let garage = garage().await;
    let app = on_garage(b, &garage, false).await;
    // Past one 5 MiB part, so that the resumed upload has parts and tails.
    let bytes = noise(7 * MIB);
    let location = app.create(bytes.len(), "lecture.mp4").await;
    let first = 3 * MIB + 12_345;
    let res = app.patch(&location, 0, &bytes[..first]).await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);

    let mut garage = tokio::task::spawn_blocking(move || {
        let mut garage = garage;
        garage.stop();
        garage
    })
    .await
    .unwrap();
    let res = app
        .patch(&location, first, &bytes[first..5 * MIB + 1])
        .await;
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(res.headers().contains_key("retry-after"));
    let body: serde_json::Value = res.json().await.unwrap();
    assert!(body["message"].is_string(), "{body}");
    let ready = app.api.app.get("/readyz").await;
    assert_eq!(
        ready.status(),
        StatusCode::SERVICE_UNAVAILABLE,
        "/readyz while the storage is down"
    );

    garage = tokio::task::spawn_blocking(move || {
        garage.restart().unwrap_or_else(|e| panic!("{e}"));
        garage
    })
    .await
    .unwrap();
    assert_eq!(app.api.app.get("/readyz").await.status(), StatusCode::OK);
    // The same medialib, not restarted: HEAD, then the rest.
    let offset = head_offset(&app, &location).await;
    assert!(
        (first..bytes.len()).contains(&offset),
        "offset {offset} after the outage"
    );
    let res = app.patch(&location, offset, &bytes[offset..]).await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    assert_eq!(res.headers()["upload-offset"], bytes.len().to_string());
    app.assert_stored(&object_of(&location), &bytes).await;
    garage_off_runtime(garage).await;
}

/// Drops `garage` (it kills its process) off the async workers.
pub(crate) async fn garage_off_runtime(garage: Garage) {
    tokio::task::spawn_blocking(move || drop(garage))
        .await
        .unwrap();
}

async fn an_upload_on_garage_is_delivered_streamed_and_by_presigned_redirect(b: Backend) {
    let garage = garage().await;
    let app = on_garage(b, &garage, true).await;
    let bytes = data(1_234_567);
    let location = app.create(bytes.len(), "notes.pdf").await;
    let res = app.patch(&location, 0, &bytes).await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let object = object_of(&location);
    let media = app.media(&object).await;
    assert_eq!(media["source"]["sha256"], sha256_hex(&bytes));
    let url = media["files"][0]["url"].as_str().unwrap();
    let found = app.api.app.client.get(url).send().await.unwrap();
    assert_eq!(found.status(), StatusCode::FOUND);
    let presigned = found.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        presigned.starts_with(&garage.endpoint()),
        "{presigned} is not on Garage"
    );
    // The presigned URL works without any medialib credential, Range included.
    let got = reqwest::get(&presigned).await.unwrap();
    assert_eq!(got.status(), StatusCode::OK);
    assert!(got.bytes().await.unwrap().as_ref() == bytes.as_slice());
    let part = reqwest::Client::new()
        .get(&presigned)
        .header("Range", "bytes=1000-1999")
        .send()
        .await
        .unwrap();
    assert_eq!(part.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(part.bytes().await.unwrap().as_ref(), &bytes[1000..2000]);

    // The same bucket through medialib, streamed (no redirect): byte-identical, with Range.
    let streamed = on_garage(b, &garage, false).await;
    let location = streamed.create(bytes.len(), "notes.pdf").await;
    let res = streamed.patch(&location, 0, &bytes).await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let object = object_of(&location);
    streamed.assert_stored(&object, &bytes).await;
    let url = streamed.source_url(&object).await;
    let part = streamed
        .api
        .app
        .client
        .get(&url)
        .header("Range", "bytes=1000000-")
        .send()
        .await
        .unwrap();
    assert_eq!(part.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(part.bytes().await.unwrap().as_ref(), &bytes[1_000_000..]);
    garage_off_runtime(garage).await;
}
