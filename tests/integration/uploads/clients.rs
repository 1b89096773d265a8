//! Real tus clients against the running app, each run as its own process from `tests/e2e`:
//!
//! - tus-js-client (the tus project's JavaScript client, under Node): a whole upload in
//!   chunks; and an upload whose process ends after the first chunks, resumed by a *new*
//!   process that finds it through tus-js-client's file URL storage (fingerprint) and asks
//!   the server where it stands.
//! - tuspy (the tus project's Python client) with `Upload-Checksum: sha256` on every PATCH:
//!   the same two, the resuming process given the upload URL (`Uploader(url=…)`, HEAD).
//! - Chromium (playwright-core) reading a delivered file: `fetch` with `Range` from a page of
//!   the app's origin, and a `<video src>` whose loader asks with a Range of its own.
//! - Chromium playing a video processed by the app's worker on its player page (the 360p MP4
//!   of a 480p clip, a second of it; needs ffmpeg).
//! - Chromium on a page of another origin (`embed_api.mjs`) that embeds a processed public
//!   video twice: by the embed record's iframe code, which it drives by the player API
//!   (play, seek, pause) and whose events it hears by `postMessage`, and by the permLink with
//!   the LMS plugins' query, which plays by itself, framed, without its title (needs ffmpeg).
//! - Chromium, phone-sized, used as a person would (`site_flow.mjs`): the home page, Sign in
//!   with the password form, the library from the home page, the private video's card with
//!   its still, its page, where it plays, and Sign out; screenshots of each page kept in
//!   `$CARGO_TARGET_TMPDIR/screenshots` (needs ffmpeg).
//!
//! - Chromium, phone-sized, uploading from a library page (`page_upload.mjs`): a clip whose
//!   progress reaches "Uploaded" and whose card then shows its still without a reload, and
//!   which plays; then a file of two chunks and a bit whose second chunk is held, the page
//!   reloaded and the file chosen again: the upload goes on at the first chunk's end, no new
//!   upload is created, and the stored bytes are the file's (needs ffmpeg).
//!
//! Every upload ends with the media call's SHA-256 equal to the file's and the delivered bytes
//! identical. The tools come from `scripts/test` (`MEDIALIB_TEST_NODE`,
//! `MEDIALIB_TEST_PYTHON`, `tests/e2e/node_modules`, Debian's Chromium);
//! `MEDIALIB_TEST_SKIP_E2E=1` skips these tests, as it does the OAuth ones.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::{UploadApp, data};
use crate::api::{Backend, run};

medialib_adapters_diesel::backend_tests!(async on [sqlite, postgres] with run:
    tus_js_client_uploads_a_file_whole,
    tus_js_client_resumes_an_interrupted_upload_from_a_new_process,
    tuspy_uploads_a_file_whole_with_sha256_checksums,
    tuspy_resumes_an_interrupted_upload_from_a_new_process,
    chromium_reads_a_range_of_a_delivered_file,
    chromium_plays_a_processed_video_on_its_player_page,
    an_audio_recording_plays_with_its_waveform_as_a_seek_bar,
    a_person_signs_in_finds_a_private_video_in_a_library_and_plays_it,
    another_site_embeds_the_player_drives_it_and_hears_its_events,
    a_person_uploads_from_the_library_page_and_a_reload_mid_upload_resumes,
);

const SKIP_ENV: &str = "MEDIALIB_TEST_SKIP_E2E";
const HOW_TO_FIX: &str =
    "run scripts/test (it installs the e2e tools) or set MEDIALIB_TEST_SKIP_E2E=1";
/// Longest a client may run.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(160);
/// The test file: six and a bit chunks.
const SIZE: usize = 800_000;
const CHUNK: usize = 128 * 1024;
/// Where the interrupted clients stop (two chunks acknowledged).
const STOP_AFTER: usize = 2 * CHUNK;

pub(crate) fn skipped(test: &str) -> bool {
    let skip = std::env::var(SKIP_ENV).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"));
    if skip {
        eprintln!("{SKIP_ENV}=1: skipping the end-to-end test {test}");
    }
    skip
}

/// `tests/e2e`.
pub(crate) fn e2e_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("e2e")
}

pub(crate) fn node() -> OsString {
    let modules = e2e_dir().join("node_modules");
    for package in ["tus-js-client", "playwright-core"] {
        let manifest = modules.join(package).join("package.json");
        assert!(
            manifest.is_file(),
            "{} is missing (npm ci in tests/e2e): {HOW_TO_FIX}",
            manifest.display()
        );
    }
    std::env::var_os("MEDIALIB_TEST_NODE").unwrap_or_else(|| "node".into())
}

pub(crate) fn python() -> OsString {
    let Some(python) = std::env::var_os("MEDIALIB_TEST_PYTHON").filter(|v| !v.is_empty()) else {
        panic!(
            "MEDIALIB_TEST_PYTHON is not set (a venv's python with tests/e2e/requirements.txt): {HOW_TO_FIX}"
        );
    };
    python
}

pub(crate) fn chromium() -> PathBuf {
    let chromium =
        std::env::var_os("CHROMIUM").map_or_else(|| "/usr/bin/chromium".into(), PathBuf::from);
    assert!(
        chromium.is_file(),
        "no Chromium at {} (apt-get install chromium, or point CHROMIUM at one): {HOW_TO_FIX}",
        chromium.display()
    );
    chromium
}

/// Runs `program script args…` in `tests/e2e` (on the blocking pool: the app serves on this
/// test's runtime) and returns the JSON of its last output line; panics, with its output,
/// when it fails, prints no JSON or outlives [`SCRIPT_TIMEOUT`].
async fn client(program: OsString, script: &'static str, args: Vec<String>) -> Value {
    client_with_env(program, script, args, Vec::new()).await
}

/// [`client`] with extra environment variables.
pub(crate) async fn client_with_env(
    program: OsString,
    script: &'static str,
    args: Vec<String>,
    env: Vec<(&'static str, String)>,
) -> Value {
    tokio::task::spawn_blocking(move || {
        let what = format!("{} {script} {}", program.to_string_lossy(), args.join(" "));
        let mut child = Command::new(&program)
            .arg(script)
            .args(&args)
            .current_dir(e2e_dir())
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("PYTHONUNBUFFERED", "1")
            .envs(env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}: {HOW_TO_FIX}"));
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > SCRIPT_TIMEOUT {
                let _ = child.kill();
                let out = child.wait_with_output().unwrap();
                panic!(
                    "{what} ran longer than {SCRIPT_TIMEOUT:?}\n--- stdout:\n{}--- stderr:\n{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let last = stdout
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str::<Value>(l).ok());
        match last {
            Some(v) if out.status.success() && v.get("error").is_none() => v,
            _ => panic!(
                "{what} failed ({})\n--- stdout:\n{stdout}--- stderr:\n{stderr}",
                out.status
            ),
        }
    })
    .await
    .expect("the client runner panicked")
}

/// A test file of [`SIZE`] bytes in a new temporary directory.
fn test_file() -> (tempfile::TempDir, PathBuf, Vec<u8>) {
    let dir = tempfile::Builder::new()
        .prefix("medialib-tus-")
        .tempdir()
        .unwrap();
    let path = dir.path().join("upload.bin");
    // Not `data()`'s period of 251: a resumed upload that skipped or repeated a chunk
    // cannot come out equal by chance.
    let bytes: Vec<u8> = data(SIZE)
        .iter()
        .enumerate()
        .map(|(i, b)| b ^ (i / 1000) as u8)
        .collect();
    std::fs::write(&path, &bytes).unwrap();
    (dir, path, bytes)
}

fn base_args(app: &UploadApp, file: &Path) -> Vec<String> {
    vec![
        "--endpoint".into(),
        app.api.app.url(&app.upload_path("0")),
        "--token".into(),
        app.token.clone(),
        "--file".into(),
        file.display().to_string(),
        "--chunk-size".into(),
        CHUNK.to_string(),
    ]
}

fn with(mut args: Vec<String>, more: &[&str]) -> Vec<String> {
    args.extend(more.iter().map(|s| (*s).to_owned()));
    args
}

/// tus HEAD's `Upload-Offset` of the upload at `url`.
async fn head_offset(app: &UploadApp, url: &str) -> u64 {
    let head = app.tus(Method::HEAD, url).send().await.unwrap();
    assert_eq!(head.status(), StatusCode::OK);
    head.headers()["upload-offset"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

async fn tus_js_client_uploads_a_file_whole(b: Backend) {
    if skipped("tus_js_client_uploads_a_file_whole") {
        return;
    }
    let node = node();
    let app = UploadApp::start(b).await;
    let (_dir, path, bytes) = test_file();
    let done = client(node, "tus_upload.mjs", base_args(&app, &path)).await;
    assert_eq!(done["stopped"], false, "{done}");
    assert_eq!(done["offset"], SIZE, "{done}");
    app.assert_stored(done["uuid"].as_str().unwrap(), &bytes)
        .await;
}

async fn tus_js_client_resumes_an_interrupted_upload_from_a_new_process(b: Backend) {
    if skipped("tus_js_client_resumes_an_interrupted_upload_from_a_new_process") {
        return;
    }
    let node = node();
    let app = UploadApp::start(b).await;
    let (dir, path, bytes) = test_file();
    let storage = dir.path().join("tus-urls.json").display().to_string();
    let args = with(base_args(&app, &path), &["--url-storage", &storage]);

    let first = client(
        node.clone(),
        "tus_upload.mjs",
        with(args.clone(), &["--stop-after", &STOP_AFTER.to_string()]),
    )
    .await;
    assert_eq!(first["stopped"], true, "{first}");
    assert_eq!(first["resumed"], false, "{first}");
    let url = first["url"].as_str().unwrap().to_owned();
    // What the server acknowledged is what it holds, after the client process is gone.
    assert_eq!(head_offset(&app, &url).await, STOP_AFTER as u64);

    // A new process: tus-js-client finds the upload by the file's fingerprint and resumes.
    let second = client(node, "tus_upload.mjs", args).await;
    assert_eq!(second["resumed"], true, "{second}");
    assert_eq!(second["url"], url.as_str(), "{second}");
    assert_eq!(second["offset"], SIZE, "{second}");
    app.assert_stored(first["uuid"].as_str().unwrap(), &bytes)
        .await;
}

async fn tuspy_uploads_a_file_whole_with_sha256_checksums(b: Backend) {
    if skipped("tuspy_uploads_a_file_whole_with_sha256_checksums") {
        return;
    }
    let python = python();
    let app = UploadApp::start(b).await;
    let (_dir, path, bytes) = test_file();
    let done = client(python, "tus_upload.py", base_args(&app, &path)).await;
    assert_eq!(done["stopped"], false, "{done}");
    assert_eq!(done["offset"], SIZE, "{done}");
    app.assert_stored(done["uuid"].as_str().unwrap(), &bytes)
        .await;
}

async fn tuspy_resumes_an_interrupted_upload_from_a_new_process(b: Backend) {
    if skipped("tuspy_resumes_an_interrupted_upload_from_a_new_process") {
        return;
    }
    let python = python();
    let app = UploadApp::start(b).await;
    let (_dir, path, bytes) = test_file();
    let first = client(
        python.clone(),
        "tus_upload.py",
        with(
            base_args(&app, &path),
            &["--stop-after", &STOP_AFTER.to_string()],
        ),
    )
    .await;
    assert_eq!(first["stopped"], true, "{first}");
    assert_eq!(first["offset"], STOP_AFTER, "{first}");
    let url = first["url"].as_str().unwrap().to_owned();
    assert_eq!(head_offset(&app, &url).await, STOP_AFTER as u64);

    let second = client(
        python,
        "tus_upload.py",
        with(base_args(&app, &path), &["--upload-url", &url]),
    )
    .await;
    assert_eq!(second["resumed_at"], STOP_AFTER, "{second}");
    assert_eq!(second["offset"], SIZE, "{second}");
    assert_eq!(second["url"], url.as_str(), "{second}");
    app.assert_stored(first["uuid"].as_str().unwrap(), &bytes)
        .await;
}

async fn chromium_reads_a_range_of_a_delivered_file(b: Backend) {
    if skipped("chromium_reads_a_range_of_a_delivered_file") {
        return;
    }
    let node = node();
    let chromium = chromium();
    let app = UploadApp::start(b).await;
    let bytes = data(300_000);
    let location = app.create(bytes.len(), "clip.mp4").await;
    assert_eq!(
        app.patch(&location, 0, &bytes).await.status(),
        StatusCode::NO_CONTENT
    );
    let url = app.source_url(&super::object_of(&location)).await;
    let (from, to) = (123_456_usize, 124_455_usize);
    // Any page of the app's origin: the fetch is then same-origin, as a player's would be.
    let page = app.api.app.url("/healthz");
    let out = client_with_env(
        node,
        "range_fetch.mjs",
        vec![
            "--page".into(),
            page,
            "--url".into(),
            url,
            "--range".into(),
            format!("{from}-{to}"),
        ],
        vec![("CHROMIUM", chromium.display().to_string())],
    )
    .await;
    let fetched = &out["fetch"];
    assert_eq!(fetched["status"], 206, "{out}");
    assert_eq!(
        fetched["contentRange"],
        format!("bytes {from}-{to}/{}", bytes.len()),
        "{out}"
    );
    assert_eq!(fetched["acceptRanges"], "bytes", "{out}");
    let got = base64::engine::general_purpose::STANDARD
        .decode(fetched["base64"].as_str().unwrap())
        .unwrap();
    assert!(
        got == bytes[from..=to],
        "the browser got other bytes ({} of them)",
        got.len()
    );
    // The media element asked with a Range of its own and was answered with part of the file.
    let video = &out["video"];
    assert!(video.is_object(), "the <video> made no request: {out}");
    assert!(
        video["requestRange"]
            .as_str()
            .is_some_and(|r| r.starts_with("bytes=")),
        "{out}"
    );
    assert_eq!(video["status"], 206, "{out}");
}

async fn chromium_plays_a_processed_video_on_its_player_page(b: Backend) {
    if skipped("chromium_plays_a_processed_video_on_its_player_page") || crate::processing::skip() {
        return;
    }
    let app = crate::processing::processing_app(b).await;
    let object = processed_clip(&app, "welcome.mp4").await;
    // The player page of a public object (its permLink).
    let link = public_link(&app, &object, "video").await;
    let out = page_script(b, "player_plays.mjs", link).await;
    assert_eq!(out["error"], Value::Null, "{out}");
    assert!(
        out["currentTime"].as_f64().unwrap() >= 1.0,
        "it played: {out}"
    );
    assert_eq!(
        out["videoHeight"], 360,
        "the 360p rendition of a 480p source: {out}"
    );
    assert!(
        out["currentSrc"]
            .as_str()
            .unwrap()
            .contains("/mp4/360p.mp4"),
        "{out}"
    );
    // Plyr's controls, with the video's largest still as its poster.
    assert_eq!(out["controls"], true, "{out}");
    assert!(
        out["poster"]
            .as_str()
            .is_some_and(|p| p.ends_with("/stills/1280x760.jpg")),
        "{out}"
    );
    // Hovering the seek bar at 60 % of a 4 s clip shows the tile of the sprite sheet that the
    // thumbnail track names there, loaded through the track's signed prefix.
    let preview = &out["preview"];
    assert!(
        preview["src"]
            .as_str()
            .is_some_and(|src| src.starts_with(&format!("/m/{object}/"))
                && src.ends_with("/thumbs/sprite_1.jpg")),
        "{out}"
    );
    assert!(preview["naturalWidth"].as_u64().unwrap() > 0, "{out}");
    assert_eq!(preview["time"], "00:02", "{out}");
    assert_clean(&out);
}

async fn an_audio_recording_plays_with_its_waveform_as_a_seek_bar(b: Backend) {
    if skipped("an_audio_recording_plays_with_its_waveform_as_a_seek_bar")
        || crate::processing::skip()
    {
        return;
    }
    let app = crate::processing::processing_app(b).await;
    let dir = tempfile::tempdir().unwrap();
    let source = crate::processing::generate(
        dir.path(),
        "tone.wav",
        &["-f", "lavfi", "-i", "sine=frequency=330:duration=4"],
    );
    let object = crate::processing::upload(&app, &source, "tone.wav").await;
    let media = crate::processing::settled(&app, &object).await;
    assert_eq!(media["state"], "ready", "{media}");
    let link = public_link(&app, &object, "audio").await;
    let out = page_script(b, "waveform.mjs", link).await;
    assert_eq!(out["error"], Value::Null, "{out}");
    // A 4 s tone is drawn across the width of a phone's screen.
    assert!(out["painted"].as_u64().unwrap() > 1000, "{out}");
    assert_eq!(out["pictureHidden"], true, "{out}");
    assert!(out["played"].as_f64().unwrap() >= 1.0, "it played: {out}");
    let duration = out["duration"].as_f64().unwrap();
    assert!((duration - 4.0).abs() < 0.2, "{out}");
    assert_eq!(
        out["afterEnd"].as_f64(),
        Some(duration),
        "End seeks to the end: {out}"
    );
    assert_eq!(
        out["afterHome"].as_f64(),
        Some(0.0),
        "Home seeks to the start: {out}"
    );
    assert_eq!(out["valueText"], "0:04 of 0:04", "{out}");
    assert_clean(&out);
}

async fn a_person_signs_in_finds_a_private_video_in_a_library_and_plays_it(b: Backend) {
    if skipped("a_person_signs_in_finds_a_private_video_in_a_library_and_plays_it")
        || crate::processing::skip()
    {
        return;
    }
    let node = node();
    let chromium = chromium();
    let app = crate::processing::processing_app(b).await;
    with_password(&app, &app.user);
    // A colleague with a password but no access yet: alice adds them on the library's page.
    let colleague = app.api.user("carol", false);
    with_password(&app, &colleague);
    processed_clip(&app, "lecture.mp4").await;
    let library = format!("/api/describe/c/{0}/o/{0}/", app.lib);
    let library = app.api.get(&library, Some(&app.token)).await;
    let library = library.json["title"].as_str().unwrap().to_owned();
    let shots = screenshots(b);
    let out = client_with_env(
        node,
        "site_flow.mjs",
        vec![
            "--base".into(),
            format!("{}/", app.api.app.address),
            "--username".into(),
            app.user.unique_id.as_str().to_owned(),
            "--password".into(),
            PASSWORD.into(),
            "--library".into(),
            library.clone(),
            "--video".into(),
            "lecture.mp4".into(),
            "--colleague".into(),
            "carol".into(),
            "--colleague-password".into(),
            PASSWORD.into(),
            "--screenshots".into(),
            shots.display().to_string(),
        ],
        vec![("CHROMIUM", chromium.display().to_string())],
    )
    .await;
    assert_eq!(out["error"], Value::Null, "{out}");
    assert_eq!(
        out["pages"],
        serde_json::json!([
            "Home · medialib",
            "Sign in · medialib",
            "Home · medialib",
            format!("{library} · medialib"),
            format!("{library} · medialib"),
            "lecture.mp4 · medialib"
        ]),
        "{out}"
    );
    assert_eq!(
        out["still"]["naturalWidth"], 512,
        "the card's still loaded: {out}"
    );
    assert!(
        out["currentTime"].as_f64().unwrap() >= 1.0,
        "it played: {out}"
    );
    assert_eq!(out["videoHeight"], 360, "{out}");
    assert_eq!(out["mediaError"], Value::Null, "{out}");
    assert_eq!(out["signedOut"], true, "{out}");
    assert_eq!(out["subLibrary"], true, "{out}");
    assert_eq!(
        out["people"],
        serde_json::json!(["alice", "carol"]),
        "{out}"
    );
    // The colleague sees the library and plays the video, without the admins' forms.
    let colleague = &out["colleague"];
    assert_eq!(
        colleague["pages"],
        serde_json::json!([
            "Home · medialib",
            format!("{library} · medialib"),
            "lecture.mp4 · medialib"
        ]),
        "{out}"
    );
    assert!(
        colleague["currentTime"].as_f64().unwrap() >= 1.0,
        "it played for the colleague: {out}"
    );
    assert_eq!(colleague["mediaError"], Value::Null, "{out}");
    assert_eq!(colleague["adminForms"], 0, "{out}");
    // Through the use cases: carol holds view on the library.
    let people = app
        .api
        .get(
            &format!("/api/permission/c/{}/o/0", app.lib),
            Some(&app.token),
        )
        .await;
    assert!(
        people.json.to_string().contains("\"carol\""),
        "{}",
        people.json
    );
    assert_clean(&out);
    for page in [
        "home-signed-out",
        "sign-in",
        "home",
        "library",
        "library-people",
        "player",
        "colleague-library",
        "colleague-player",
    ] {
        assert!(shots.join(format!("{page}.png")).is_file(), "{page}.png");
    }
}

async fn another_site_embeds_the_player_drives_it_and_hears_its_events(b: Backend) {
    if skipped("another_site_embeds_the_player_drives_it_and_hears_its_events")
        || crate::processing::skip()
    {
        return;
    }
    let node = node();
    let chromium = chromium();
    let app = crate::processing::processing_app(b).await;
    let object = processed_clip(&app, "talk.mp4").await;
    let describe = format!("/api/describe/c/{}/o/{object}/", app.lib);
    make_public(&app, &describe, "video").await;
    let embed = app
        .api
        .get(
            &format!("/api/embed/c/{}/o/{object}/", app.lib),
            Some(&app.token),
        )
        .await;
    let out = client_with_env(
        node,
        "embed_api.mjs",
        vec![
            "--iframe".into(),
            embed.json["properties"]["iframe"]
                .as_str()
                .unwrap()
                .to_owned(),
            "--permlink".into(),
            embed.json["properties"]["link"]
                .as_str()
                .unwrap()
                .to_owned(),
        ],
        vec![("CHROMIUM", chromium.display().to_string())],
    )
    .await;
    assert_eq!(out["error"], Value::Null, "{out}");
    for event in ["ready", "play", "timeupdate", "pause"] {
        assert!(
            out["embed"].as_array().unwrap().iter().any(|e| e == event),
            "{event}: {out}"
        );
    }
    assert!(out["afterSeek"].as_f64().unwrap() >= 2.5, "seek: {out}");
    assert!(
        out["permLink"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e == "play"),
        "the permLink's player autoplays: {out}"
    );
    assert_eq!(out["permLinkTitle"], false, "title=false: {out}");
    assert!(
        out["permLinkFrameUrl"]
            .as_str()
            .unwrap()
            .ends_with("?share=false&title=false&autoplay=true&cc_load_policy=1"),
        "the redirect kept the query: {out}"
    );
}

/// A 4 s 480p clip named `name`, uploaded to the app's library and processed (`ready`);
/// returns the object's uuid.
async fn processed_clip(app: &UploadApp, name: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let source = crate::processing::clip(dir.path(), name, "854x480", 4);
    let object = crate::processing::upload(app, &source, name).await;
    let media = crate::processing::settled(app, &object).await;
    assert_eq!(media["state"], "ready", "{media}");
    object
}

/// Makes the object at `describe` (its describe path), of `object_type`, public.
async fn make_public(app: &UploadApp, describe: &str, object_type: &str) {
    let made_public = app
        .api
        .call(
            Method::POST,
            describe,
            Some(&app.token),
            &[("type", object_type), ("public", "true")],
        )
        .await;
    assert_eq!(made_public.status, StatusCode::ACCEPTED);
}

/// Makes `object` (of `object_type`, in the app's library) public; its permLink.
async fn public_link(app: &UploadApp, object: &str, object_type: &str) -> String {
    let describe = format!("/api/describe/c/{}/o/{object}/", app.lib);
    make_public(app, &describe, object_type).await;
    app.api.get(&describe, Some(&app.token)).await.json["permLink"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Runs the browser script `script` on the page at `link` (`--page`), keeping its
/// screenshots with `b`'s; its report.
async fn page_script(b: Backend, script: &'static str, link: String) -> Value {
    client_with_env(
        node(),
        script,
        vec![
            "--page".into(),
            link,
            "--screenshots".into(),
            screenshots(b).display().to_string(),
        ],
        vec![("CHROMIUM", chromium().display().to_string())],
    )
    .await
}

/// A browser script's report shows no console error and no axe-core violation.
fn assert_clean(out: &Value) {
    assert_eq!(out["consoleErrors"], serde_json::json!([]), "{out}");
    assert_eq!(
        out["violations"],
        serde_json::json!([]),
        "axe-core found WCAG 2.1 A/AA violations: {out}"
    );
}

/// The password alice signs in with in the browser tests.
const PASSWORD: &str = "correct horse battery staple";

/// Gives `user` (of the app's database) [`PASSWORD`] in the local directory, to sign in with.
fn with_password(app: &UploadApp, user: &medialib_domain::User) {
    let hash =
        medialib_adapters_sso::hash_password(&medialib_domain::Secret::new(PASSWORD)).unwrap();
    assert!(
        app.api
            .services
            .store()
            .set_password_hash(
                user.id,
                &hash,
                medialib_domain::Timestamp::from_epoch_seconds(0)
            )
            .unwrap()
    );
}

/// A directory for `b`'s screenshots, under `CARGO_TARGET_TMPDIR/screenshots`.
pub(crate) fn screenshots(b: Backend) -> PathBuf {
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("screenshots")
        .join(format!("{b:?}").to_lowercase());
    std::fs::create_dir_all(&shots).unwrap();
    shots
}

/// The chunk size of the library page's uploads (`templates/library.js`).
const PAGE_CHUNK: usize = 8 * 1024 * 1024;

async fn a_person_uploads_from_the_library_page_and_a_reload_mid_upload_resumes(b: Backend) {
    if skipped("a_person_uploads_from_the_library_page_and_a_reload_mid_upload_resumes")
        || crate::processing::skip()
    {
        return;
    }
    let node = node();
    let chromium = chromium();
    let app = crate::processing::processing_app(b).await;
    with_password(&app, &app.user);
    let dir = tempfile::tempdir().unwrap();
    let clip = crate::processing::clip(dir.path(), "seminar.mp4", "854x480", 3);
    // Two chunks and a bit, in a pattern that a skipped or repeated chunk cannot keep.
    let big: Vec<u8> = data(2 * PAGE_CHUNK + 100_000)
        .iter()
        .enumerate()
        .map(|(i, b)| b ^ (i / 4096) as u8)
        .collect();
    let big_path = dir.path().join("slides.bin");
    std::fs::write(&big_path, &big).unwrap();
    let shots = screenshots(b);
    let out = client_with_env(
        node,
        "page_upload.mjs",
        vec![
            "--base".into(),
            format!("{}/", app.api.app.address),
            "--library".into(),
            format!("/libraries/{}", app.lib),
            "--username".into(),
            app.user.unique_id.as_str().to_owned(),
            "--password".into(),
            PASSWORD.into(),
            "--clip".into(),
            clip.display().to_string(),
            "--big".into(),
            big_path.display().to_string(),
            "--screenshots".into(),
            shots.display().to_string(),
        ],
        vec![("CHROMIUM", chromium.display().to_string())],
    )
    .await;
    assert!(
        out["clip"]["currentTime"].as_f64().unwrap() >= 1.0,
        "it played: {out}"
    );
    assert_eq!(out["clip"]["videoHeight"], 360, "{out}");
    assert_eq!(out["clip"]["mediaError"], Value::Null, "{out}");
    assert_eq!(out["stillWidth"], 512, "the card's still: {out}");
    let resume = &out["resume"];
    assert_eq!(
        resume["offsetsBefore"],
        serde_json::json!([0, PAGE_CHUNK]),
        "the first chunk went through, the second was held: {out}"
    );
    assert_eq!(resume["postsBefore"], 1, "{out}");
    assert_eq!(
        resume["offsetsAfter"],
        serde_json::json!([PAGE_CHUNK, 2 * PAGE_CHUNK]),
        "after the reload it went on at the first chunk's end: {out}"
    );
    assert_eq!(resume["postsAfter"], 0, "no new upload: {out}");
    assert_clean(&out);
    // The library holds the two uploads, and the resumed one is the file, byte for byte.
    let listed = app
        .api
        .get(&format!("/api/catalog/o/{}", app.lib), Some(&app.token))
        .await;
    let list = listed.json["list"].as_array().unwrap();
    assert_eq!(list.len(), 2, "{}", listed.json);
    let slides = list
        .iter()
        .find(|m| m["title"] == "slides.bin")
        .unwrap_or_else(|| panic!("{}", listed.json));
    app.assert_stored(slides["uuid"].as_str().unwrap(), &big)
        .await;
    for page in [
        "upload-done",
        "upload-processed",
        "upload-held",
        "upload-resumed",
    ] {
        assert!(shots.join(format!("{page}.png")).is_file(), "{page}.png");
    }
}
