//! Media processing end to end (issue 20): media that Debian's ffmpeg makes in the test is
//! uploaded through tus to the real app, whose in-process worker (`workers = 1`) processes it;
//! the outputs are fetched through their signed delivery URLs and checked by real tools
//! (`ffprobe` on every rendition and still, the HLS playlists parsed and every segment range
//! fetched, the WebVTT track parsed and every `#xywh` checked against its sprite sheet).
//!
//! SQLite and the file system here; `processing_faults.rs` runs workers as processes of their
//! own, kills them, stops the tools and the storage (PostgreSQL and Garage for the scale-out).
//! `MEDIALIB_TEST_SKIP_FFMPEG=1` skips these where no ffmpeg is installed.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::Value;

use crate::api::{Backend, run};
use crate::uploads::{UploadApp, object_of};

medialib_adapters_diesel::backend_tests!(async on [sqlite] with run:
    a_1080p_clip_becomes_two_renditions_hls_smil_stills_and_thumbnails,
    a_480p_clip_gets_no_720p_rendition,
    audio_becomes_an_m4a_a_waveform_and_its_pictures,
    an_image_gets_its_three_sizes,
    text_uploaded_as_video_fails_in_words_and_reprocess_queues_it_again,
    a_decompression_bomb_is_refused_unprocessed,
    a_portrait_clip_keeps_its_orientation,
    a_silent_clip_gets_renditions_without_sound,
    a_one_frame_video_is_a_short_video_with_one_thumbnail,
    a_truncated_clip_fails_as_damaged_without_retries,
);

pub(crate) fn skip() -> bool {
    std::env::var_os("MEDIALIB_TEST_SKIP_FFMPEG").is_some_and(|v| v == "1")
}

/// The app with one in-process worker that retries fast.
pub(crate) async fn processing_app(b: Backend) -> UploadApp {
    UploadApp::start_with(b, |l| {
        l.set("workers", "1")
            .set("job_retry_delay", "1")
            .set("job_lease", "30")
    })
    .await
}

/// Runs ffmpeg (quietly) with `args`, writing `name` in `dir`.
pub(crate) fn generate(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let out = dir.join(name);
    let status = std::process::Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-y"])
        .args(args)
        .arg(&out)
        .status()
        .expect("ffmpeg runs");
    assert!(status.success(), "ffmpeg could not make {name}");
    out
}

/// A `secs`-second test clip of `size` with a tone, H.264/AAC MP4.
pub(crate) fn clip(dir: &Path, name: &str, size: &str, secs: u32) -> PathBuf {
    let video = format!("testsrc2=size={size}:rate=30:duration={secs}");
    let audio = format!("sine=frequency=440:duration={secs}");
    generate(
        dir,
        name,
        &[
            "-f",
            "lavfi",
            "-i",
            &video,
            "-f",
            "lavfi",
            "-i",
            &audio,
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "aac",
            "-shortest",
        ],
    )
}

/// Uploads `path` through tus as `filename`; returns the new object's id.
pub(crate) async fn upload(app: &UploadApp, path: &Path, filename: &str) -> String {
    upload_at(app, &app.api.app.address, path, filename).await
}

/// Uploads `path` through tus to the medialib at `base` (on `app`'s database); returns the
/// new object's id.
pub(crate) async fn upload_at(app: &UploadApp, base: &str, path: &Path, filename: &str) -> String {
    let bytes = std::fs::read(path).unwrap();
    let location = app.create_at(base, bytes.len(), filename).await;
    let res = app.patch(&location, 0, &bytes).await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    object_of(&location)
}

/// Polls the media call until the state is `ready` or `failed` (or two minutes passed);
/// checks on the way that progress never goes back within one attempt.
pub(crate) async fn settled(app: &UploadApp, object: &str) -> Value {
    settled_at(app, &app.api.app.address, object, |_| {}).await
}

/// [`settled`] on the medialib at `base`, handing `each` every media record seen on the way
/// (the last, settled one included).
pub(crate) async fn settled_at(
    app: &UploadApp,
    base: &str,
    object: &str,
    mut each: impl FnMut(&Value),
) -> Value {
    let start = Instant::now();
    let mut last = (0u64, 0u64);
    loop {
        let media = app.media_at(base, object).await;
        each(&media);
        let state = media["state"].as_str().unwrap().to_owned();
        if state == "ready" || state == "failed" {
            return media;
        }
        // A failed attempt queues the job again with progress 0: progress only rises while
        // an attempt runs.
        if state == "processing" {
            let now = (
                media["attempts"].as_u64().unwrap(),
                media["progress"].as_u64().unwrap(),
            );
            assert!(now >= last, "progress went back: {last:?} then {now:?}");
            last = now;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "processing did not end in 2 minutes: {media}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The files of `role`.
pub(crate) fn files<'a>(media: &'a Value, role: &str) -> Vec<&'a Value> {
    media["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["role"] == role)
        .collect()
}

/// Fetches `url` whole; asserts a 200 and the Content-Type's start.
async fn fetch(app: &UploadApp, url: &str, content_type: &str) -> Vec<u8> {
    let res = app.api.app.client.get(url).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK, "{url}");
    let got = res.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(got.starts_with(content_type), "{url}: {got}");
    res.bytes().await.unwrap().to_vec()
}

/// What ffprobe says of a file: the first video stream's codec, width and height (or the
/// first audio stream's codec), and the container's duration.
#[derive(Debug)]
pub(crate) struct Probed {
    pub codec: String,
    pub width: u64,
    pub height: u64,
    pub duration: f64,
}

pub(crate) fn ffprobe(bytes: &[u8]) -> Probed {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("probe");
    std::fs::write(&path, bytes).unwrap();
    let out = std::process::Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-print_format",
            "json",
            "-show_streams",
            "-show_format",
        ])
        .arg(&path)
        .output()
        .expect("ffprobe runs");
    assert!(out.status.success(), "ffprobe refused the file");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let streams = v["streams"].as_array().unwrap();
    let first = streams
        .iter()
        .find(|s| s["codec_type"] == "video")
        .or_else(|| streams.first())
        .unwrap();
    Probed {
        codec: first["codec_name"].as_str().unwrap().to_owned(),
        width: first["width"].as_u64().unwrap_or(0),
        height: first["height"].as_u64().unwrap_or(0),
        duration: v["format"]["duration"]
            .as_str()
            .and_then(|d| d.parse().ok())
            .unwrap_or(0.0),
    }
}

/// Checks the three stills: each is fetched and is exactly its size.
async fn check_stills(app: &UploadApp, media: &Value, content_type: &str) {
    let stills = files(media, "still");
    let mut sizes: Vec<(u64, u64)> = Vec::new();
    for s in &stills {
        let bytes = fetch(app, s["url"].as_str().unwrap(), content_type).await;
        let p = ffprobe(&bytes);
        assert_eq!(
            (p.width, p.height),
            (s["width"].as_u64().unwrap(), s["height"].as_u64().unwrap())
        );
        sizes.push((p.width, p.height));
    }
    sizes.sort_unstable();
    assert_eq!(sizes, [(128, 128), (512, 512), (1280, 760)]);
}

/// The URI lines of a playlist, resolved against `base` (the playlist's URL).
fn uris(playlist: &str, base: &str) -> Vec<String> {
    let dir = &base[..=base.rfind('/').unwrap()];
    playlist
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| format!("{dir}{l}"))
        .collect()
}

/// The HLS master → each media playlist → every byte range of its segments (206 each, the
/// ranges cover the file without gaps).
async fn check_hls(app: &UploadApp, media: &Value, variants: usize) {
    let master_url = files(media, "hls")[0]["url"].as_str().unwrap().to_owned();
    let master =
        String::from_utf8(fetch(app, &master_url, "application/vnd.apple.mpegurl").await).unwrap();
    assert!(master.starts_with("#EXTM3U"), "{master}");
    let playlists = uris(&master, &master_url);
    assert_eq!(playlists.len(), variants, "{master}");
    for url in playlists {
        let text =
            String::from_utf8(fetch(app, &url, "application/vnd.apple.mpegurl").await).unwrap();
        assert!(text.contains("#EXT-X-ENDLIST"), "{text}");
        // EXT-X-MAP (the init section) and every segment are byte ranges of one .m4s.
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        let mut media_url = None;
        for line in text.lines() {
            let range = if let Some(map) = line.strip_prefix("#EXT-X-MAP:") {
                let uri = map
                    .split("URI=\"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap();
                media_url = Some(uris(uri, &url).remove(0));
                map.split("BYTERANGE=\"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap()
                    .to_owned()
            } else if let Some(r) = line.strip_prefix("#EXT-X-BYTERANGE:") {
                r.to_owned()
            } else {
                continue;
            };
            let (len, at) = range.split_once('@').unwrap();
            ranges.push((at.parse().unwrap(), len.parse().unwrap()));
        }
        let media_url = media_url.expect("an EXT-X-MAP");
        assert!(ranges.len() >= 2, "an init section and a segment: {text}");
        let mut next = 0;
        for (at, len) in &ranges {
            assert_eq!(*at, next, "ranges follow each other: {text}");
            next = at + len;
            let res = app
                .api
                .app
                .client
                .get(&media_url)
                .header("Range", format!("bytes={at}-{}", at + len - 1))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), StatusCode::PARTIAL_CONTENT);
            assert_eq!(res.bytes().await.unwrap().len() as u64, *len);
        }
    }
}

/// The WebVTT track: every cue's `#xywh` lies inside its sheet, the sheets are fetched.
async fn check_thumbnails(app: &UploadApp, media: &Value) {
    let vtt_url = files(media, "thumbnails")[0]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let vtt = String::from_utf8(fetch(app, &vtt_url, "text/vtt").await).unwrap();
    assert!(vtt.starts_with("WEBVTT"), "{vtt}");
    let mut cues = 0;
    for line in vtt.lines().filter(|l| l.contains("#xywh=")) {
        let (file, frag) = line.split_once("#xywh=").unwrap();
        let xywh: Vec<u64> = frag.split(',').map(|n| n.parse().unwrap()).collect();
        let sheet_url = uris(file, &vtt_url).remove(0);
        let sheet = ffprobe(&fetch(app, &sheet_url, "image/jpeg").await);
        assert!(
            xywh[0] + xywh[2] <= sheet.width && xywh[1] + xywh[3] <= sheet.height,
            "{line} on {sheet:?}"
        );
        cues += 1;
    }
    assert!(cues >= 1, "{vtt}");
}

async fn a_1080p_clip_becomes_two_renditions_hls_smil_stills_and_thumbnails(b: Backend) {
    if skip() {
        return;
    }
    let app = processing_app(b).await;
    let dir = tempfile::tempdir().unwrap();
    let source = clip(dir.path(), "talk.mp4", "1920x1080", 3);
    let source_duration = ffprobe(&std::fs::read(&source).unwrap()).duration;
    let object = upload(&app, &source, "talk.mp4").await;
    let media = settled(&app, &object).await;
    assert_eq!(media["state"], "ready", "{media}");
    assert_eq!(media["progress"], 100);
    assert_eq!(media["error"], Value::Null);
    let mut heights = Vec::new();
    for r in files(&media, "rendition") {
        let p = ffprobe(&fetch(&app, r["url"].as_str().unwrap(), "video/mp4").await);
        assert_eq!(p.codec, "h264");
        assert_eq!(p.height, r["height"].as_u64().unwrap());
        assert!(
            (p.duration - source_duration).abs() <= 0.1,
            "{p:?} vs {source_duration}"
        );
        heights.push(p.height);
    }
    heights.sort_unstable();
    assert_eq!(heights, [360, 720]);
    check_hls(&app, &media, 2).await;
    let smil = String::from_utf8(
        fetch(
            &app,
            files(&media, "smil")[0]["url"].as_str().unwrap(),
            "application/smil+xml",
        )
        .await,
    )
    .unwrap();
    assert_eq!(smil.matches("<video").count(), 2, "{smil}");
    check_thumbnails(&app, &media).await;
    check_stills(&app, &media, "image/jpeg").await;
    // metadata.duration is the source's, in whole seconds.
    let described = app
        .api
        .get(
            &format!("/api/describe/c/{}/o/{object}/", app.lib),
            Some(&app.token),
        )
        .await;
    assert_eq!(
        described.json["metadata"]["duration"], 3,
        "{}",
        described.json
    );
}

async fn a_480p_clip_gets_no_720p_rendition(b: Backend) {
    if skip() {
        return;
    }
    let app = processing_app(b).await;
    let dir = tempfile::tempdir().unwrap();
    let source = clip(dir.path(), "small.mp4", "854x480", 2);
    let object = upload(&app, &source, "small.mp4").await;
    let media = settled(&app, &object).await;
    assert_eq!(media["state"], "ready", "{media}");
    let renditions = files(&media, "rendition");
    assert_eq!(renditions.len(), 1, "{media}");
    assert_eq!(renditions[0]["height"], 360);
    check_hls(&app, &media, 1).await;
}

async fn audio_becomes_an_m4a_a_waveform_and_its_pictures(b: Backend) {
    if skip() {
        return;
    }
    let app = processing_app(b).await;
    let dir = tempfile::tempdir().unwrap();
    let source = generate(
        dir.path(),
        "tone.wav",
        &["-f", "lavfi", "-i", "sine=frequency=330:duration=3"],
    );
    let object = upload(&app, &source, "tone.wav").await;
    let media = settled(&app, &object).await;
    assert_eq!(media["state"], "ready", "{media}");
    let m4a = files(&media, "rendition");
    assert_eq!(m4a.len(), 1);
    let p = ffprobe(&fetch(&app, m4a[0]["url"].as_str().unwrap(), "audio/mp4").await);
    assert_eq!(p.codec, "aac");
    assert!((p.duration - 3.0).abs() <= 0.1, "{p:?}");
    let peaks: Value = serde_json::from_slice(
        &fetch(
            &app,
            files(&media, "waveform")[0]["url"].as_str().unwrap(),
            "application/json",
        )
        .await,
    )
    .unwrap();
    assert!(
        peaks["data"].as_array().is_some_and(|d| !d.is_empty()),
        "{peaks}"
    );
    check_stills(&app, &media, "image/png").await;
}

async fn an_image_gets_its_three_sizes(b: Backend) {
    if skip() {
        return;
    }
    let app = processing_app(b).await;
    let dir = tempfile::tempdir().unwrap();
    let source = generate(
        dir.path(),
        "board.png",
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=800x600",
            "-frames:v",
            "1",
        ],
    );
    let object = upload(&app, &source, "board.png").await;
    let media = settled(&app, &object).await;
    assert_eq!(media["state"], "ready", "{media}");
    check_stills(&app, &media, "image/jpeg").await;
}

async fn text_uploaded_as_video_fails_in_words_and_reprocess_queues_it_again(b: Backend) {
    if skip() {
        return;
    }
    let app = processing_app(b).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.mp4");
    std::fs::write(
        &path,
        "These are my lecture notes, not a video.\n".repeat(50),
    )
    .unwrap();
    let object = upload(&app, &path, "notes.mp4").await;
    let media = settled(&app, &object).await;
    assert_eq!(media["state"], "failed", "{media}");
    let error = media["error"].as_str().unwrap();
    assert!(
        error.starts_with("This file"),
        "a sentence for people: {error}"
    );
    assert!(!error.contains('/'), "no paths: {error}");
    assert_eq!(media["attempts"], 1, "a refused source is not retried");
    assert_eq!(files(&media, "source").len(), 1, "only the source: {media}");
    assert_eq!(media["files"].as_array().unwrap().len(), 1);

    // reprocess queues it again: a new attempt runs (and fails the same way). Times are whole
    // seconds: wait for the next one, so that the new attempt's writes show in `modified`.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let res = app
        .api
        .app
        .client
        .post(
            app.api
                .app
                .url(&format!("/api/media/c/{}/o/{object}/", app.lib)),
        )
        .bearer_auth(&app.token)
        .form(&[("action", "reprocess")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::ACCEPTED);
    let again = settled(&app, &object).await;
    assert_eq!(again["state"], "failed");
    assert!(
        again["modified"].as_i64() > media["modified"].as_i64(),
        "a new attempt ran: {again}"
    );
    assert_eq!(again["attempts"], 1, "reprocess starts the count afresh");
}

/// A PNG whose header says 20 000 × 20 000 pixels with one tiny compressed row: the probe
/// reads the size from the header and the plan refuses it before any decoder allocates
/// 1.6 GB.
fn png_bomb() -> Vec<u8> {
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = 0xffff_ffffu32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xedb8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }
    fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut body = kind.to_vec();
        body.extend_from_slice(data);
        out.extend_from_slice(&body);
        out.extend_from_slice(&crc32(&body).to_be_bytes());
    }
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&20_000u32.to_be_bytes());
    ihdr.extend_from_slice(&20_000u32.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(&mut png, b"IHDR", &ihdr);
    // zlib of nothing much (a stored empty block): the rows are missing, as in a bomb's prefix.
    chunk(
        &mut png,
        b"IDAT",
        &[
            0x78, 0x01, 0x01, 0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01,
        ],
    );
    chunk(&mut png, b"IEND", &[]);
    png
}

async fn a_decompression_bomb_is_refused_unprocessed(b: Backend) {
    if skip() {
        return;
    }
    let app = processing_app(b).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.png");
    std::fs::write(&path, png_bomb()).unwrap();
    let object = upload(&app, &path, "huge.png").await;
    let media = settled(&app, &object).await;
    assert_eq!(media["state"], "failed", "{media}");
    let error = media["error"].as_str().unwrap();
    assert!(error.contains("20000 × 20000"), "{error}");
    assert_eq!(
        media["files"].as_array().unwrap().len(),
        1,
        "nothing derived: {media}"
    );
}

async fn a_portrait_clip_keeps_its_orientation(b: Backend) {
    if skip() {
        return;
    }
    let app = processing_app(b).await;
    let dir = tempfile::tempdir().unwrap();
    let source = clip(dir.path(), "phone.mp4", "720x1280", 2);
    let object = upload(&app, &source, "phone.mp4").await;
    let media = settled(&app, &object).await;
    assert_eq!(media["state"], "ready", "{media}");
    let mut sizes = Vec::new();
    for r in files(&media, "rendition") {
        let p = ffprobe(&fetch(&app, r["url"].as_str().unwrap(), "video/mp4").await);
        assert!(p.height > p.width, "upright: {p:?}");
        sizes.push((p.width, p.height));
    }
    sizes.sort_unstable();
    assert_eq!(sizes, [(360, 640), (720, 1280)]);
}

async fn a_silent_clip_gets_renditions_without_sound(b: Backend) {
    if skip() {
        return;
    }
    let app = processing_app(b).await;
    let dir = tempfile::tempdir().unwrap();
    let source = generate(
        dir.path(),
        "silent.mp4",
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=640x360:rate=25:duration=2",
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-pix_fmt",
            "yuv420p",
        ],
    );
    let object = upload(&app, &source, "silent.mp4").await;
    let media = settled(&app, &object).await;
    assert_eq!(media["state"], "ready", "{media}");
    let mp4 = fetch(
        &app,
        files(&media, "rendition")[0]["url"].as_str().unwrap(),
        "video/mp4",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.mp4");
    std::fs::write(&path, mp4).unwrap();
    let out = std::process::Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-show_entries",
            "stream=codec_type",
            "-of",
            "csv=p=0",
        ])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "video",
        "no audio stream"
    );
}

async fn a_one_frame_video_is_a_short_video_with_one_thumbnail(b: Backend) {
    if skip() {
        return;
    }
    let app = processing_app(b).await;
    let dir = tempfile::tempdir().unwrap();
    let source = generate(
        dir.path(),
        "frame.mp4",
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=640x360",
            "-frames:v",
            "1",
            "-c:v",
            "libx264",
            "-pix_fmt",
            "yuv420p",
        ],
    );
    let object = upload(&app, &source, "frame.mp4").await;
    let media = settled(&app, &object).await;
    // An MP4 of one frame has a length (one frame's): it plays as a video. (A picture
    // uploaded as a video, with no length, is refused: the domain's `StillAsVideo`.)
    assert_eq!(media["state"], "ready", "{media}");
    assert_eq!(files(&media, "rendition").len(), 1);
    assert_eq!(files(&media, "sprite").len(), 1);
    let vtt_url = files(&media, "thumbnails")[0]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let vtt = String::from_utf8(fetch(&app, &vtt_url, "text/vtt").await).unwrap();
    assert_eq!(vtt.matches("#xywh=").count(), 1, "{vtt}");
    check_stills(&app, &media, "image/jpeg").await;
}

async fn a_truncated_clip_fails_as_damaged_without_retries(b: Backend) {
    if skip() {
        return;
    }
    let app = processing_app(b).await;
    let dir = tempfile::tempdir().unwrap();
    let source = clip(dir.path(), "whole.mp4", "640x360", 3);
    let bytes = std::fs::read(&source).unwrap();
    let cut = dir.path().join("cut.mp4");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let object = upload(&app, &cut, "cut.mp4").await;
    let media = settled(&app, &object).await;
    assert_eq!(media["state"], "failed", "{media}");
    assert_eq!(
        media["attempts"], 1,
        "a damaged source is not retried: {media}"
    );
    let error = media["error"].as_str().unwrap();
    assert!(error.starts_with("This file"), "{error}");
    assert_eq!(
        media["files"].as_array().unwrap().len(),
        1,
        "nothing derived: {media}"
    );
}
