//! Hostile and careless uploads, on SQLite and PostgreSQL: each is a clear 4xx with a JSON
//! `message`, and nothing is written outside the upload's own storage key (the tests list the
//! storage directory afterwards, and the directory around it). Also: 10 000 one-byte PATCHes
//! (`MEDIALIB_TINY_PATCHES` changes the count)
//! over one keep-alive connection, the quota, OPTIONS' `proceed` for each kind of caller, a
//! token without `write`, and the media byte counters of `/metrics`.

use std::path::Path;
use std::time::Instant;

use base64::Engine as _;
use reqwest::{Method, StatusCode};
use sha2::{Digest as _, Sha256};
use tokio::io::AsyncWriteExt as _;

use super::{UploadApp, data, files_under, object_of, patch_head, read_answer};
use crate::api::{Backend, run};

medialib_adapters_diesel::backend_tests!(async on [sqlite, postgres] with run:
    malformed_uploads_are_4xx_with_a_message_and_write_nothing_astray,
    one_byte_patches_over_one_keep_alive_connection_complete_the_upload,
    a_refusal_before_the_body_is_read_closes_the_connection,
    quota_options_and_token_rights,
    metrics_count_media_bytes_in_and_out,
);

const MAX_SIZE: usize = 1024 * 1024;

fn b64(s: impl AsRef<[u8]>) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// An app whose media is the directory `media` inside a temporary directory (returned, so
/// that a test can list both), with `upload_max_size` = 1 MiB.
async fn app_in(
    b: Backend,
    extra: &'static [(&'static str, &'static str)],
) -> (UploadApp, tempfile::TempDir) {
    let around = tempfile::Builder::new()
        .prefix("medialib-hostile-")
        .tempdir()
        .unwrap();
    let media = around.path().join("media");
    std::fs::create_dir(&media).unwrap();
    let url = format!("file://{}", media.display());
    let app = UploadApp::start_with(b, move |l| {
        let mut l = l
            .set("storage_url", url)
            .set("upload_max_size", MAX_SIZE.to_string());
        for (k, v) in extra {
            l = l.set(k, *v);
        }
        l
    })
    .await;
    (app, around)
}

/// Sends `req` and asserts `status` and a JSON body with a `message`; returns the message.
async fn refused(req: reqwest::RequestBuilder, status: u16, what: &str) -> String {
    let res = req.send().await.unwrap();
    let got = res.status().as_u16();
    let tus = res.headers().get("tus-resumable").cloned();
    let body = res.text().await.unwrap();
    assert_eq!(got, status, "{what}: {body}");
    let json: serde_json::Value = serde_json::from_str(&body)
        .unwrap_or_else(|e| panic!("{what}: the body is not JSON ({e}): {body}"));
    let message = json["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{what}: no message in {json}"))
        .to_owned();
    assert!(!message.is_empty(), "{what}");
    assert_eq!(
        tus.as_ref().and_then(|v| v.to_str().ok()),
        Some("1.0.0"),
        "{what}: every upload answer says Tus-Resumable"
    );
    message
}

async fn offset_of(app: &UploadApp, location: &str) -> String {
    let head = app.tus(Method::HEAD, location).send().await.unwrap();
    assert_eq!(head.status(), StatusCode::OK);
    head.headers()["upload-offset"].to_str().unwrap().to_owned()
}

/// A multipart form with one `file` part named `filename` holding `bytes`.
fn form_with_file(filename: &str, bytes: &[u8]) -> (String, Vec<u8>) {
    let boundary = "medialib-hostile-boundary-7d1f";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nHostile\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// Asserts that `around` holds only `media/`, and `media/` only the staging files of
/// unfinished uploads and files under `media/{object}/` of `objects`.
fn assert_nothing_astray(around: &Path, objects: &[String]) {
    let outside: Vec<String> = files_under(around)
        .into_iter()
        .filter(|f| !f.starts_with("media/"))
        .collect();
    assert!(
        outside.is_empty(),
        "written outside the storage: {outside:?}"
    );
    for file in files_under(&around.join("media")) {
        let ok = file.starts_with("staging~/")
            || objects
                .iter()
                .any(|o| file.starts_with(&format!("media/{o}/")));
        assert!(ok, "a stored file that belongs to no upload: {file}");
    }
}

async fn malformed_uploads_are_4xx_with_a_message_and_write_nothing_astray(b: Backend) {
    let (app, around) = app_in(b, &[]).await;
    let create = |length: &str| {
        app.tus(Method::POST, &app.upload_path("0"))
            .header("Upload-Length", length.to_owned())
    };

    // Upload-Length: negative, not a number, past i64, absent.
    for length in [
        "-5",
        "12abc",
        "1e6",
        "",
        "9223372036854775808",
        "99999999999999999999999",
    ] {
        refused(create(length), 400, &format!("Upload-Length {length:?}")).await;
    }
    refused(
        app.tus(Method::POST, &app.upload_path("0")),
        400,
        "no Upload-Length",
    )
    .await;
    // Over upload_max_size: refused before any byte, with creation-with-upload bytes too.
    refused(
        create(&(MAX_SIZE + 1).to_string()),
        413,
        "over upload_max_size",
    )
    .await;
    refused(
        create(&(MAX_SIZE + 1).to_string())
            .header("Content-Type", "application/offset+octet-stream")
            .body(data(64 * 1024)),
        413,
        "over upload_max_size with a body",
    )
    .await;
    // Without Tus-Resumable.
    let no_tus = app
        .api
        .app
        .client
        .post(app.api.app.url(&app.upload_path("0")))
        .bearer_auth(&app.token)
        .header("Upload-Length", "10");
    refused(no_tus, 412, "no Tus-Resumable").await;
    // Upload-Metadata: not base64, a key without a value, not UTF-8 text.
    for metadata in [
        "filename !!!not-base64!!!".to_owned(),
        "filename a b c".to_owned(),
        format!("filename {}", b64([0xff, 0xfe, 0x00])),
    ] {
        refused(
            create("10").header("Upload-Metadata", metadata.clone()),
            400,
            &format!("Upload-Metadata {metadata:?}"),
        )
        .await;
    }
    // File names with a path or a NUL.
    for name in [
        "../../etc/passwd",
        "../evil.mp4",
        "a/b.mp4",
        "..\\evil.mp4",
        "a\0b.mp4",
        "..",
    ] {
        refused(
            create("10").header("Upload-Metadata", format!("filename {}", b64(name))),
            400,
            &format!("filename {name:?}"),
        )
        .await;
    }
    // The same in the one-shot form's filename.
    for name in ["../evil.pdf", "../../../../tmp/evil.pdf", "a/b.pdf"] {
        let (content_type, body) = form_with_file(name, b"%PDF-1.4 hostile");
        refused(
            app.api
                .app
                .client
                .put(app.api.app.url(&app.upload_path("0")))
                .bearer_auth(&app.token)
                .header("Content-Type", content_type)
                .body(body),
            400,
            &format!("form filename {name:?}"),
        )
        .await;
    }

    // PATCHes to a real upload.
    let bytes = data(100_000);
    let location = app.create(bytes.len(), "target.mp4").await;
    let object = object_of(&location);
    let patch = |offset: &str| {
        app.tus(Method::PATCH, &location)
            .header("Content-Type", "application/offset+octet-stream")
            .header("Upload-Offset", offset.to_owned())
    };
    refused(
        patch("5").body(bytes[5..100].to_vec()),
        409,
        "Upload-Offset mismatch",
    )
    .await;
    refused(
        patch("-1").body(bytes[..100].to_vec()),
        400,
        "negative Upload-Offset",
    )
    .await;
    refused(
        patch("x").body(bytes[..100].to_vec()),
        400,
        "Upload-Offset not a number",
    )
    .await;
    refused(
        app.tus(Method::PATCH, &location)
            .header("Upload-Offset", "0")
            .body(bytes[..100].to_vec()),
        415,
        "PATCH without Content-Type",
    )
    .await;
    refused(
        app.tus(Method::PATCH, &location)
            .header("Content-Type", "application/octet-stream")
            .header("Upload-Offset", "0")
            .body(bytes[..100].to_vec()),
        415,
        "PATCH with a wrong Content-Type",
    )
    .await;
    let no_tus = app
        .api
        .app
        .client
        .patch(&location)
        .bearer_auth(&app.token)
        .header("Content-Type", "application/offset+octet-stream")
        .header("Upload-Offset", "0")
        .body(bytes[..100].to_vec());
    refused(no_tus, 412, "PATCH without Tus-Resumable").await;
    // Checksums: a wrong digest keeps nothing (460); other algorithms and malformed are 400s.
    let wrong = b64(Sha256::digest(b"other bytes"));
    refused(
        patch("0")
            .header("Upload-Checksum", format!("sha256 {wrong}"))
            .body(bytes[..50_000].to_vec()),
        460,
        "wrong Upload-Checksum",
    )
    .await;
    assert_eq!(offset_of(&app, &location).await, "0", "a 460 kept bytes");
    for checksum in [
        format!("md5 {}", b64([0u8; 16])),
        format!("sha1 {}", b64([0u8; 20])),
        "sha256 not-base64!".to_owned(),
        format!("sha256 {}", b64([0u8; 20])),
        "sha256".to_owned(),
    ] {
        refused(
            patch("0")
                .header("Upload-Checksum", checksum.clone())
                .body(bytes[..100].to_vec()),
            400,
            &format!("Upload-Checksum {checksum:?}"),
        )
        .await;
    }
    assert_eq!(offset_of(&app, &location).await, "0");
    let right = b64(Sha256::digest(&bytes[..50_000]));
    let res = patch("0")
        .header("Upload-Checksum", format!("sha256 {right}"))
        .body(bytes[..50_000].to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    // A body longer than what Upload-Length leaves: 413, and nothing past the length is kept.
    let mut too_long = bytes[50_000..].to_vec();
    too_long.extend_from_slice(b"and then some");
    refused(
        patch("50000").body(too_long),
        413,
        "a body past Upload-Length",
    )
    .await;
    let offset: usize = offset_of(&app, &location).await.parse().unwrap();
    assert!(
        (50_000..=bytes.len()).contains(&offset),
        "offset {offset} after the refused body"
    );
    // Known bug (see `a_body_past_upload_length_leaves_the_upload_finishable`): the 413 can
    // leave the offset at the full length with the upload unfinished; an empty PATCH at that
    // offset then finishes it.
    let res = app.patch(&location, offset, &bytes[offset..]).await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    app.assert_stored(&object, &bytes).await;

    // Nothing anywhere but this upload's key (and no staging left for a finished upload).
    assert_nothing_astray(around.path(), &[object]);
    let staged = files_under(&around.path().join("media"))
        .into_iter()
        .filter(|f| f.starts_with("staging~/"))
        .count();
    assert_eq!(staged, 0, "the finished upload left its staging file");
}

/// How many one-byte PATCHes: the 10 000, or `MEDIALIB_TINY_PATCHES`. Each PATCH makes
/// the staged byte and the progress row durable (an fsync of the file and a database commit):
/// 1.9 ms each on SQLite and 4.2 ms on PostgreSQL on this project's 2-core machines
/// (2026-11-25), 19 s and 42 s for the 10 000.
fn tiny_patches() -> usize {
    std::env::var("MEDIALIB_TINY_PATCHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

/// A body longer than what `Upload-Length` leaves is a 413, and afterwards the upload must
/// still be one a tus client can finish: its offset below the length (the refused body kept
/// at most in part), or the upload finished. (The adapters make the bytes up to the length
/// durable before the extra byte is read; the use case then records no checkpoint of that
/// PATCH, so a HEAD never says that everything arrived for an upload that is not finished.)
#[tokio::test]
async fn a_body_past_upload_length_leaves_the_upload_finishable() {
    let (app, _around) = app_in(Backend::Sqlite, &[]).await;
    let bytes = data(10_000);
    let location = app.create(bytes.len(), "over.bin").await;
    let mut too_long = bytes.clone();
    too_long.push(0);
    let res = app.patch(&location, 0, &too_long).await;
    assert_eq!(res.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let head = app.tus(Method::HEAD, &location).send().await.unwrap();
    let finished = head.status() == StatusCode::NOT_FOUND;
    let below = head
        .headers()
        .get("upload-offset")
        .is_some_and(|o| o.to_str().unwrap().parse::<usize>().unwrap() < bytes.len());
    assert!(
        finished || below,
        "the upload is left unfinished at offset {:?} of {}",
        head.headers().get("upload-offset"),
        bytes.len()
    );
}

async fn one_byte_patches_over_one_keep_alive_connection_complete_the_upload(b: Backend) {
    let (app, around) = app_in(b, &[]).await;
    let n = tiny_patches();
    let bytes: Vec<u8> = (0..n).map(|i| (i * 7 + i / 256) as u8).collect();
    let location = app.create(n, "tiny.bin").await;
    let path = location.trim_start_matches(&app.api.app.address).to_owned();
    let host = app.api.app.address.trim_start_matches("http://").to_owned();
    let stream = tokio::net::TcpStream::connect(&host).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (read, mut write) = stream.into_split();
    let mut read = tokio::io::BufReader::new(read);
    let started = Instant::now();
    for (i, byte) in bytes.iter().enumerate() {
        let mut request = patch_head(&host, &path, &app.token, i, 1).into_bytes();
        request.push(*byte);
        write.write_all(&request).await.unwrap();
        let answer = read_answer(&mut read)
            .await
            .unwrap_or_else(|e| panic!("PATCH {i}: the connection broke: {e}"));
        assert_eq!(answer.status, 204, "PATCH {i}: {:?}", answer.json());
        assert_eq!(
            answer.header("upload-offset"),
            Some((i + 1).to_string().as_str())
        );
        assert_ne!(answer.header("connection"), Some("close"), "PATCH {i}");
    }
    let took = started.elapsed();
    println!(
        "{n} one-byte PATCHes over one connection [{b:?}] in {took:.1?} ({:.2} ms each)",
        took.as_secs_f64() * 1000.0 / n as f64
    );
    let object = object_of(&location);
    app.assert_stored(&object, &bytes).await;
    assert_nothing_astray(around.path(), &[object]);
}

/// A PATCH refused before its body is read (here a bad token) leaves bytes on the wire the
/// server will not read, so the server drops the connection: its answer says
/// `Connection: close`, or a keep-alive client would send its next request into a closing
/// socket (seen in CI as a HEAD failing after a 507). The control: the same refusal with no
/// body keeps the connection, and the next request on it is answered.
async fn a_refusal_before_the_body_is_read_closes_the_connection(b: Backend) {
    use tokio::io::AsyncReadExt as _;
    let (app, _around) = app_in(b, &[]).await;
    let location = app.create(MAX_SIZE, "refused.bin").await;
    let path = location.trim_start_matches(&app.api.app.address).to_owned();
    let host = app.api.app.address.trim_start_matches("http://").to_owned();
    let connect = || async {
        let stream = tokio::net::TcpStream::connect(&host).await.unwrap();
        let (read, write) = stream.into_split();
        (tokio::io::BufReader::new(read), write)
    };

    // The control: no body, so the refusal leaves the connection usable.
    let (mut read, mut write) = connect().await;
    for i in 0..2 {
        write
            .write_all(patch_head(&host, &path, "not-a-token", 0, 0).as_bytes())
            .await
            .unwrap();
        let answer = read_answer(&mut read).await.unwrap();
        assert_eq!(answer.status, 401, "request {i}: {:?}", answer.json());
        assert_ne!(answer.header("connection"), Some("close"), "request {i}");
    }

    // A body announced and not (yet) sent: refused, and the connection is closed after the
    // answer. No body byte is sent, so none lies unread when the server closes (which would
    // make its kernel reset the connection, and could cost the client the answer itself).
    let (mut read, mut write) = connect().await;
    write
        .write_all(patch_head(&host, &path, "not-a-token", 0, MAX_SIZE).as_bytes())
        .await
        .unwrap();
    let answer = read_answer(&mut read).await.unwrap();
    assert_eq!(answer.status, 401, "{:?}", answer.json());
    assert!(answer.json()["message"].is_string(), "{:?}", answer.json());
    assert_eq!(answer.header("connection"), Some("close"));
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        read.read_to_end(&mut rest),
    )
    .await;
    assert!(
        matches!(closed, Ok(Ok(0)) | Ok(Err(_))),
        "the connection stays open after the refusal: {closed:?}"
    );
}

async fn options(app: &UploadApp, token: Option<&str>) -> serde_json::Value {
    let mut req = app
        .api
        .app
        .client
        .request(Method::OPTIONS, app.api.app.url(&app.upload_path("0")));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let res = req.send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["tus-version"], "1.0.0");
    assert_eq!(res.headers()["tus-max-size"], MAX_SIZE.to_string());
    assert_eq!(res.headers()["tus-checksum-algorithm"], "sha256");
    res.json().await.unwrap()
}

async fn quota_options_and_token_rights(b: Backend) {
    let (app, around) = app_in(b, &[("storage_quota", "200000")]).await;
    // Alice's read-only token; Bob, a viewer of the library.
    let read_only = app.api.token(&app.user, "read");
    let (bob, bob_token) = app.api.signed_in("bob");
    let granted = app
        .api
        .call(
            Method::PUT,
            &format!("/api/permission/c/{}/o/{}", app.lib, bob.id),
            Some(&app.token),
            &[("level", "view")],
        )
        .await;
    assert_eq!(granted.status, StatusCode::CREATED, "{granted:?}");

    // OPTIONS: may this caller upload here now?
    let signed_out = options(&app, None).await;
    assert_eq!(signed_out["proceed"], "false", "{signed_out}");
    assert_eq!(signed_out["authenticated"], "false", "{signed_out}");
    assert_eq!(options(&app, Some(&read_only)).await["proceed"], "false");
    assert_eq!(options(&app, Some(&bob_token)).await["proceed"], "false");
    assert_eq!(options(&app, Some("not-a-token")).await["proceed"], "false");
    let admin = options(&app, Some(&app.token)).await;
    assert_eq!(admin["proceed"], "true", "{admin}");
    assert_eq!(admin["authenticated"], "true", "{admin}");

    // A token without `write`, and a viewer: 403 on POST and PATCH, with a message.
    let location = app.create(150_000, "mine.mp4").await;
    for (token, who) in [(&read_only, "a read-only token"), (&bob_token, "a viewer")] {
        let post = app
            .api
            .app
            .client
            .post(app.api.app.url(&app.upload_path("0")))
            .bearer_auth(token)
            .header("Tus-Resumable", "1.0.0")
            .header("Upload-Length", "10");
        refused(post, 403, &format!("POST with {who}")).await;
        let patch = app
            .api
            .app
            .client
            .patch(&location)
            .bearer_auth(token)
            .header("Tus-Resumable", "1.0.0")
            .header("Content-Type", "application/offset+octet-stream")
            .header("Upload-Offset", "0")
            .body(data(100));
        refused(patch, 403, &format!("PATCH with {who}")).await;
    }
    let anonymous = app
        .api
        .app
        .client
        .post(app.api.app.url(&app.upload_path("0")))
        .header("Tus-Resumable", "1.0.0")
        .header("Upload-Length", "10");
    refused(anonymous, 401, "POST signed out").await;
    assert_eq!(offset_of(&app, &location).await, "0");

    // The quota (200 000 bytes) counts unfinished uploads: 150 000 + 60 000 is over it.
    let over = app
        .tus(Method::POST, &app.upload_path("0"))
        .header("Upload-Length", "60000");
    let message = refused(over, 409, "over the quota").await;
    assert_eq!(message, "storage quota exceeded");
    let res = app.patch(&location, 0, &data(150_000)).await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    // Exactly up to the quota is allowed; after it, OPTIONS says no and the one-shot PUT too.
    let rest = app.create(50_000, "rest.bin").await;
    assert_eq!(
        app.patch(&rest, 0, &data(50_000)).await.status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(options(&app, Some(&app.token)).await["proceed"], "false");
    let (content_type, body) = form_with_file("more.pdf", b"%PDF-1.4 one byte too many");
    let put = app
        .api
        .app
        .client
        .put(app.api.app.url(&app.upload_path("0")))
        .bearer_auth(&app.token)
        .header("Content-Type", content_type)
        .body(body);
    let message = refused(put, 409, "one-shot PUT over the quota").await;
    assert_eq!(message, "storage quota exceeded");
    assert_nothing_astray(around.path(), &[object_of(&location), object_of(&rest)]);
}

/// `medialib_media_bytes_total{direction="…"}` in `/metrics`.
async fn media_bytes(app: &UploadApp, direction: &str) -> f64 {
    let text = app.api.app.get("/metrics").await.text().await.unwrap();
    let series = format!("medialib_media_bytes_total{{direction=\"{direction}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&series))
        .map_or(0.0, |v| v.trim().parse().unwrap())
}

async fn metrics_count_media_bytes_in_and_out(b: Backend) {
    let (app, _around) = app_in(b, &[]).await;
    let (in_before, out_before) = (
        media_bytes(&app, "in").await,
        media_bytes(&app, "out").await,
    );
    let bytes = data(200_000);
    let location = app.create(bytes.len(), "counted.mp4").await;
    assert_eq!(
        app.patch(&location, 0, &bytes).await.status(),
        StatusCode::NO_CONTENT
    );
    app.assert_stored(&object_of(&location), &bytes).await;
    let (in_after, out_after) = (
        media_bytes(&app, "in").await,
        media_bytes(&app, "out").await,
    );
    assert!(
        in_after - in_before >= 200_000.0,
        "in: {in_before} → {in_after}"
    );
    assert!(
        out_after - out_before >= 200_000.0,
        "out: {out_before} → {out_after}"
    );
}
