//! Records of processed media over HTTP, on SQLite and PostgreSQL (DECISIONS §7 "Records",
//! "Delivery URLs"): a source uploaded with tus, its processing ended through the job port
//! with small fake files stored through the storage port, then
//! - delivery of nested paths: the HLS master, a media playlist and a byte range of its media,
//!   each reached from the one before by resolving its relative URI under the signed prefix;
//! - `images` in describe (complete and limited), catalog items (complete, limited, paged,
//!   a sub-catalog) and the video record, each URL serving its still;
//! - the video record's files of a video and of an audio recording, and the player page's
//!   sources;
//! - `{}` and `[]` before processing ends.

use medialib_adapters_storage::FileStorage;
use medialib_domain::media::derived::{DerivedDir, DerivedFile, DerivedPath, DerivedSet, FileRole};
use medialib_domain::media::probe::Dimensions;
use medialib_domain::media::{StorageKey, content_type_of};
use medialib_domain::{ObjectId, Timestamp};
use medialib_ports::{ClaimRequest, JobEnd, JobEnded, MediaStorage as _};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::{Answer, Backend, keys, run};
use crate::uploads::{RawAnswer, UploadApp, data, object_of, read_answer};

/// An app whose media directory this test writes derived files to through the storage port.
pub struct MediaApp {
    pub app: UploadApp,
    storage: FileStorage,
    _dir: tempfile::TempDir,
}

/// A fake derived file: what it is, where, and its bytes.
pub struct Fake {
    role: FileRole,
    path: &'static str,
    size: Option<(u32, u32)>,
    bitrate: Option<u32>,
    bytes: Vec<u8>,
}

fn fake(role: FileRole, path: &'static str, bytes: impl Into<Vec<u8>>) -> Fake {
    Fake {
        role,
        path,
        size: None,
        bitrate: None,
        bytes: bytes.into(),
    }
}

fn sized(mut f: Fake, width: u32, height: u32) -> Fake {
    f.size = Some((width, height));
    f
}

fn still(path: &'static str, width: u32, height: u32) -> Fake {
    sized(
        fake(FileRole::Still, path, format!("still {width}x{height}")),
        width,
        height,
    )
}

const MASTER: &str = "#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-INDEPENDENT-SEGMENTS\n\
    #EXT-X-STREAM-INF:BANDWIDTH=2928000,RESOLUTION=1280x720\n720p.m3u8\n\
    #EXT-X-STREAM-INF:BANDWIDTH=928000,RESOLUTION=640x360\n360p.m3u8\n";

/// A media playlist as ffmpeg writes it with `single_file` fMP4: the init section and one
/// segment as byte ranges of `{name}.m4s`.
fn media_playlist(name: &str) -> String {
    format!(
        "#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-TARGETDURATION:4\n#EXT-X-MEDIA-SEQUENCE:0\n\
         #EXT-X-PLAYLIST-TYPE:VOD\n#EXT-X-MAP:URI=\"{name}.m4s\",BYTERANGE=\"100@0\"\n\
         #EXTINF:4.000000,\n#EXT-X-BYTERANGE:500@100\n{name}.m4s\n#EXT-X-ENDLIST\n"
    )
}

/// What processing a video leaves (DECISIONS §7), small and fake.
pub fn video_files() -> Vec<Fake> {
    let mp4 = |path, w, h, rate| {
        let mut f = sized(fake(FileRole::Rendition, path, data(3000)), w, h);
        f.bitrate = Some(rate);
        f
    };
    vec![
        mp4("mp4/720p.mp4", 1280, 720, 2_928_000),
        mp4("mp4/360p.mp4", 640, 360, 928_000),
        fake(FileRole::Hls, "hls/master.m3u8", MASTER),
        fake(
            FileRole::HlsPlaylist,
            "hls/720p.m3u8",
            media_playlist("720p"),
        ),
        fake(FileRole::HlsMedia, "hls/720p.m4s", data(600)),
        fake(
            FileRole::HlsPlaylist,
            "hls/360p.m3u8",
            media_playlist("360p"),
        ),
        fake(FileRole::HlsMedia, "hls/360p.m4s", data(601)),
        fake(FileRole::Smil, "video.smil", "<smil/>"),
        fake(
            FileRole::Thumbnails,
            "thumbs/thumbnails.vtt",
            "WEBVTT\n\n00:00.000 --> 00:05.000\nsprite_1.jpg#xywh=0,0,128,72\n",
        ),
        sized(
            fake(FileRole::Sprite, "thumbs/sprite_1.jpg", "sprite"),
            1280,
            720,
        ),
        still("stills/128x128.jpg", 128, 128),
        still("stills/512x512.jpg", 512, 512),
        still("stills/1280x760.jpg", 1280, 760),
    ]
}

/// What processing an audio recording leaves.
pub fn audio_files() -> Vec<Fake> {
    let mut m4a = fake(FileRole::Rendition, "audio.m4a", data(2000));
    m4a.bitrate = Some(128_000);
    vec![
        m4a,
        fake(FileRole::Waveform, "waveform.json", "{}"),
        still("stills/128x128.png", 128, 128),
        still("stills/512x512.png", 512, 512),
        still("stills/1280x760.png", 1280, 760),
    ]
}

impl MediaApp {
    pub async fn start(b: Backend) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("medialib-records-")
            .tempdir()
            .unwrap();
        let url = format!("file://{}", dir.path().display());
        let app = UploadApp::start_with(b, move |l| l.set("storage_url", url)).await;
        let storage = FileStorage::open(dir.path().to_path_buf()).unwrap();
        Self {
            app,
            storage,
            _dir: dir,
        }
    }

    /// Uploads a small source named `filename` into the library with tus: a new object,
    /// queued for processing. Returns its uuid.
    pub async fn upload(&self, filename: &str) -> String {
        let bytes = data(1000);
        let location = self.app.create(bytes.len(), filename).await;
        let res = self.app.patch(&location, 0, &bytes).await;
        assert_eq!(res.status(), StatusCode::NO_CONTENT);
        object_of(&location)
    }

    /// Ends `object`'s processing as a worker would: claims its job (the only one due),
    /// stores `files` under `media/{object}/{dir}/` and records them `ready`.
    pub fn process(&self, object: &str, dir: &str, files: &[Fake]) {
        let store = self.app.api.services.store();
        let id = ObjectId::parse(object).unwrap();
        let set = DerivedSet::new(
            DerivedDir::parse(dir).unwrap(),
            files
                .iter()
                .map(|f| DerivedFile {
                    role: f.role,
                    path: DerivedPath::parse(f.path).unwrap(),
                    size: f.bytes.len() as u64,
                    dimensions: f.size.and_then(|(w, h)| Dimensions::new(w, h)),
                    bitrate: f.bitrate,
                })
                .collect(),
            None,
        )
        .unwrap();
        // The job is due from when the upload finished, by the server's clock.
        let now = Timestamp::from_epoch_seconds(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs() as i64
                + 1,
        );
        let job = store
            .claim_job(ClaimRequest {
                holder: "test-worker",
                now,
                until: Timestamp::from_epoch_seconds(now.epoch_seconds() + 60),
                dir: set.dir(),
            })
            .unwrap()
            .expect("the upload queued a job");
        assert_eq!(job.ticket.object, id, "the only job due is this object's");
        for f in files {
            let key = StorageKey::parse(&format!("media/{object}/{dir}/{}", f.path)).unwrap();
            self.storage.put(&key, &mut &f.bytes[..]).unwrap();
        }
        let ended = store.end_job(job.ticket, JobEnd::Ready(&set), now).unwrap();
        assert_eq!(ended, JobEnded::Ended(None));
    }

    /// A processed upload: `upload` then `process`.
    pub async fn processed(&self, filename: &str, dir: &str, files: &[Fake]) -> String {
        let object = self.upload(filename).await;
        self.process(&object, dir, files);
        object
    }

    /// `GET path` with alice's token.
    pub async fn get(&self, path: &str) -> Answer {
        self.app.api.get(path, Some(&self.app.token)).await
    }

    /// `GET url` (a delivery URL: no token), with extra headers.
    pub async fn fetch(&self, url: &str, headers: &[(&str, &str)]) -> reqwest::Response {
        let mut req = self.app.api.app.client.get(url);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.send().await.unwrap()
    }
}

/// The file path of a delivery URL: what follows `/m/{object}/{expires}/{signature}/`.
pub fn file_of(url: &str) -> &str {
    let rest = url.split_once("/m/").unwrap().1;
    rest.splitn(4, '/').nth(3).unwrap()
}

/// Asserts that `url` is a delivery URL under the base URL that serves `bytes` as
/// `content_type`.
async fn serves(m: &MediaApp, url: &str, bytes: &[u8], content_type: &str) {
    assert!(
        url.starts_with(&format!("{}/m/", m.app.api.app.address)),
        "{url}"
    );
    let res = m.fetch(url, &[]).await;
    assert_eq!(res.status(), StatusCode::OK, "{url}");
    assert_eq!(res.headers()["content-type"], content_type, "{url}");
    assert_eq!(res.bytes().await.unwrap().as_ref(), bytes, "{url}");
}

fn bytes_of<'a>(files: &'a [Fake], path: &str) -> &'a [u8] {
    &files.iter().find(|f| f.path == path).unwrap().bytes
}

/// Asserts that `images` holds the three stills of `files` (by path, each serving its bytes).
async fn shows_stills(m: &MediaApp, images: &Value, files: &[Fake], ext: &str) {
    assert_eq!(keys(images), ["large", "square", "thumbnail"], "{images}");
    for (key, size) in [
        ("thumbnail", "128x128"),
        ("square", "512x512"),
        ("large", "1280x760"),
    ] {
        let url = images[key].as_str().unwrap();
        let path = format!("stills/{size}.{ext}");
        assert_eq!(file_of(url), path);
        serves(m, url, bytes_of(files, &path), content_type_of(ext)).await;
    }
}

/// `GET path` sent byte for byte on a connection of its own.
async fn raw_get(m: &MediaApp, path: &str) -> RawAnswer {
    use tokio::io::AsyncWriteExt as _;
    let host = m
        .app
        .api
        .app
        .address
        .trim_start_matches("http://")
        .to_owned();
    let mut stream = tokio::net::TcpStream::connect(&host).await.unwrap();
    let head = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    read_answer(&mut tokio::io::BufReader::new(stream))
        .await
        .unwrap()
}

/// The URIs of a playlist's lines that are not tags.
fn uris(playlist: &str) -> Vec<&str> {
    playlist
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

async fn hls_playlists_resolve_under_the_signed_prefix(b: Backend) {
    let m = MediaApp::start(b).await;
    let files = video_files();
    let object = m.processed("lecture.mp4", "0a1b2c", &files).await;
    let media = m.app.media(&object).await;
    assert_eq!(media["state"], "ready");
    let url_of = |role: &str| -> String {
        media["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["role"] == role)
            .unwrap_or_else(|| panic!("no {role} in {media}"))["url"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let master_url = reqwest::Url::parse(&url_of("hls")).unwrap();
    assert_eq!(file_of(master_url.as_str()), "hls/master.m3u8");

    // master → media playlist → the init section and a segment, by byte ranges.
    let res = m.fetch(master_url.as_str(), &[]).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.headers()["content-type"],
        "application/vnd.apple.mpegurl"
    );
    let master = res.text().await.unwrap();
    assert_eq!(master, MASTER);
    let variants = uris(&master);
    assert_eq!(variants, ["720p.m3u8", "360p.m3u8"]);
    for variant in variants {
        let playlist_url = master_url.join(variant).unwrap();
        let res = m.fetch(playlist_url.as_str(), &[]).await;
        assert_eq!(res.status(), StatusCode::OK, "{playlist_url}");
        let playlist = res.text().await.unwrap();
        let name = variant.trim_end_matches(".m3u8");
        assert_eq!(playlist, media_playlist(name));
        let [segment] = uris(&playlist)[..] else {
            panic!("{playlist}")
        };
        let media_url = playlist_url.join(segment).unwrap();
        assert_eq!(file_of(media_url.as_str()), format!("hls/{name}.m4s"));
        let stored = bytes_of(&files, file_of(media_url.as_str()));
        for (range, from, to) in [("bytes=0-99", 0, 100), ("bytes=100-599", 100, 600)] {
            let res = m.fetch(media_url.as_str(), &[("Range", range)]).await;
            assert_eq!(
                res.status(),
                StatusCode::PARTIAL_CONTENT,
                "{media_url} {range}"
            );
            assert_eq!(res.headers()["content-type"], "video/iso.segment");
            assert_eq!(
                res.headers()["content-range"],
                format!("bytes {from}-{}/{}", to - 1, stored.len())
            );
            assert_eq!(res.bytes().await.unwrap().as_ref(), &stored[from..to]);
        }
    }

    // A slash sent as `%2F` names the same file; HEAD answers its headers.
    let encoded = master_url
        .as_str()
        .replace("/hls/master.m3u8", "/hls%2Fmaster.m3u8");
    let res = m.fetch(&encoded, &[]).await;
    assert_eq!(res.status(), StatusCode::OK, "{encoded}");
    assert_eq!(res.text().await.unwrap(), MASTER);
    let head = m
        .app
        .api
        .app
        .client
        .head(master_url.as_str())
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), StatusCode::OK);
    assert_eq!(head.headers()["content-length"], MASTER.len().to_string());

    // Under the same prefix, only the files the set lists: anything else is a 404, whatever
    // lies in storage; a tampered signature is a 403 on a nested path too.
    let prefix = master_url.as_str().trim_end_matches("hls/master.m3u8");
    m.storage
        .put(
            &StorageKey::parse(&format!("media/{object}/0a1b2c/hls/extra.m3u8")).unwrap(),
            &mut &b"not listed"[..],
        )
        .unwrap();
    for path in [
        "hls/extra.m3u8",
        "hls/master.m3u8/x",
        "hls",
        "0a1b2c/hls/master.m3u8",
        "source",
    ] {
        let res = m.fetch(&format!("{prefix}{path}"), &[]).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{path}");
    }
    // Dot segments sent as they are (a URL library would resolve them first): no file of the
    // set is named so.
    let raw_prefix = prefix.trim_start_matches(&m.app.api.app.address);
    for path in [
        "hls/../video.smil",
        "hls/%2E%2E/video.smil",
        "hls/./master.m3u8",
        "../../../../etc/passwd",
    ] {
        let answer = raw_get(&m, &format!("{raw_prefix}{path}")).await;
        assert_eq!(answer.status, 404, "{path}: {answer:?}");
    }
    let (head_part, tail) = prefix.trim_end_matches('/').rsplit_once('/').unwrap();
    let forged = format!(
        "{head_part}/{}{}/hls/720p.m3u8",
        if tail.starts_with('A') { "B" } else { "A" },
        &tail[1..]
    );
    assert_eq!(m.fetch(&forged, &[]).await.status(), StatusCode::FORBIDDEN);
}

async fn records_show_images_and_playable_files_once_media_is_ready(b: Backend) {
    let m = MediaApp::start(b).await;
    let lib = m.app.lib.clone();
    let files = video_files();
    let video = m.upload("lecture.mp4").await;
    let describe = format!("/api/describe/c/{lib}/o/{video}");
    let video_record = format!("/api/video/c/{lib}/o/{video}");
    let catalog = format!("/api/catalog/c/{lib}/o/0");

    // Queued: nothing to show yet.
    assert_eq!(m.get(&describe).await.json["images"], json!({}));
    assert_eq!(
        m.get(&video_record).await.json,
        json!({"type": "video", "properties": {"files": []}, "images": {}, "uuid": video})
    );
    assert_eq!(m.get(&catalog).await.json["list"][0]["images"], json!({}));

    m.process(&video, "0a", &files);

    // describe, complete and (public, anonymous) limited.
    let a = m.get(&describe).await;
    assert_eq!(a.status, StatusCode::OK);
    shows_stills(&m, &a.json["images"], &files, "jpg").await;
    let a = m
        .app
        .api
        .call(
            Method::POST,
            &describe,
            Some(&m.app.token),
            &[("type", "video"), ("public", "true")],
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED);
    let limited = m.app.api.get(&describe, None).await;
    assert_eq!(limited.json["authenticated"], "false");
    shows_stills(&m, &limited.json["images"], &files, "jpg").await;

    // The video record: each MP4 with its track, size and bitrate, the master, the SMIL.
    let a = m.get(&video_record).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(keys(&a.json), ["images", "properties", "type", "uuid"]);
    shows_stills(&m, &a.json["images"], &files, "jpg").await;
    let listed = a.json["properties"]["files"].as_array().unwrap();
    let summary: Vec<(&str, &str, Value)> = listed
        .iter()
        .map(|f| {
            let mut props = f["properties"].clone();
            let track = props
                .as_object_mut()
                .unwrap()
                .remove("thumbnail")
                .expect("every video file names the thumbnail track");
            assert_eq!(file_of(track.as_str().unwrap()), "thumbs/thumbnails.vtt");
            (
                f["format"].as_str().unwrap(),
                file_of(f["url"].as_str().unwrap()),
                props,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "mp4",
                "mp4/720p.mp4",
                json!({"width": 1280, "height": 720, "bitrate": 2_928_000})
            ),
            (
                "mp4",
                "mp4/360p.mp4",
                json!({"width": 640, "height": 360, "bitrate": 928_000})
            ),
            ("hls", "hls/master.m3u8", json!({})),
            ("smil", "video.smil", json!({})),
        ]
    );
    for f in listed {
        let url = f["url"].as_str().unwrap();
        let path = file_of(url);
        let ext = path.rsplit_once('.').unwrap().1;
        serves(&m, url, bytes_of(&files, path), content_type_of(ext)).await;
    }
    let track = listed[0]["properties"]["thumbnail"].as_str().unwrap();
    serves(
        &m,
        track,
        bytes_of(&files, "thumbs/thumbnails.vtt"),
        "text/vtt; charset=utf-8",
    )
    .await;

    // Catalog items: complete, limited, a page, and through a sub-catalog.
    let sub = m
        .app
        .api
        .object(&m.app.token, &lib, "catalog", "Week 1")
        .await;
    let a = m
        .app
        .api
        .call(
            Method::PUT,
            &format!("/api/catalog/c/{sub}/o/{video}"),
            Some(&m.app.token),
            &[],
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED);
    for path in [
        catalog.clone(),
        format!("{catalog}?completeRecords=0"),
        format!("/api/catalog/o/{lib}?limit=2&completeRecords=1"),
        format!("/api/catalog/c/{lib}/o/{sub}"),
    ] {
        let a = m.get(&path).await;
        assert_eq!(a.status, StatusCode::OK, "{path}: {a:?}");
        let list = a.json["list"].as_array().unwrap();
        let item = list
            .iter()
            .find(|i| i["uuid"] == video.as_str())
            .unwrap_or_else(|| panic!("{path}: {a:?}"));
        shows_stills(&m, &item["images"], &files, "jpg").await;
        for other in list.iter().filter(|i| i["uuid"] != video.as_str()) {
            assert_eq!(other["images"], json!({}), "{path}: {other}");
        }
    }
}

async fn an_audio_recording_answers_the_video_record_with_its_m4a(b: Backend) {
    let m = MediaApp::start(b).await;
    let files = audio_files();
    let song = m.processed("song.m4a", "0b", &files).await;
    let a = m.get(&format!("/api/video/c/{}/o/{song}", m.app.lib)).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.json["type"], "video");
    let listed = a.json["properties"]["files"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{a:?}");
    assert_eq!(listed[0]["format"], "mp4");
    assert_eq!(listed[0]["properties"], json!({"bitrate": 128_000}));
    let url = listed[0]["url"].as_str().unwrap();
    assert_eq!(file_of(url), "audio.m4a");
    serves(&m, url, bytes_of(&files, "audio.m4a"), "audio/mp4").await;
    shows_stills(&m, &a.json["images"], &files, "png").await;
    // A file has no video record.
    let notes = m.upload("notes.pdf").await;
    let a = m
        .get(&format!("/api/video/c/{}/o/{notes}", m.app.lib))
        .await;
    super::assert_error(&a, 400);
    assert_eq!(
        a.json["message"],
        "not a video or an audio recording: the object's type is file"
    );
}

/// The `src` of each `<source>` of a page, and its `type`.
fn sources(page: &str) -> Vec<(String, String)> {
    page.split("<source src=\"")
        .skip(1)
        .map(|rest| {
            let (src, rest) = rest.split_once('"').unwrap();
            let kind = rest
                .split("type=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            (src.to_owned(), kind.to_owned())
        })
        .collect()
}

async fn the_player_page_of_a_public_object_plays_its_processed_files(b: Backend) {
    let m = MediaApp::start(b).await;
    let video_files = video_files();
    let video = m.processed("lecture.mp4", "0c", &video_files).await;
    let audio_files = audio_files();
    let song = m.processed("song.m4a", "0d", &audio_files).await;
    for (object, element, expected) in [
        (
            &video,
            "<video",
            vec![
                ("mp4/720p.mp4", "video/mp4"),
                ("mp4/360p.mp4", "video/mp4"),
                ("hls/master.m3u8", "application/vnd.apple.mpegurl"),
            ],
        ),
        (&song, "<audio", vec![("audio.m4a", "audio/mp4")]),
    ] {
        let describe = format!("/api/describe/c/{}/o/{object}", m.app.lib);
        let kind = m.get(&describe).await.json["type"]
            .as_str()
            .unwrap()
            .to_owned();
        let a = m
            .app
            .api
            .call(
                Method::POST,
                &describe,
                Some(&m.app.token),
                &[("type", kind.as_str()), ("public", "true")],
            )
            .await;
        assert_eq!(a.status, StatusCode::ACCEPTED);
        let link = m.get(&describe).await.json["permLink"]
            .as_str()
            .unwrap()
            .to_owned();
        let code = link.trim_end_matches('/').rsplit('/').next().unwrap();
        for page in [format!("/m/{code}"), format!("/embed/{code}")] {
            let res = m.app.api.app.get(&page).await;
            assert_eq!(res.status(), StatusCode::OK, "{page}");
            let body = res.text().await.unwrap();
            assert!(body.contains(element), "{page}: {body}");
            let found = sources(&body);
            assert_eq!(
                found
                    .iter()
                    .map(|(src, kind)| (file_of(src), kind.as_str()))
                    .collect::<Vec<_>>(),
                expected,
                "{page}"
            );
            let files = if object == &video {
                &video_files
            } else {
                &audio_files
            };
            for (src, kind) in &found {
                serves(&m, src, bytes_of(files, file_of(src)), kind).await;
            }
        }
    }
}

/// The player follows the options LMS plugins put on the permLink, which the redirect keeps;
/// the landing page offers the permLink and the embed codes unless `share=false`.
async fn the_player_follows_its_query_and_the_landing_page_shares(b: Backend) {
    let m = MediaApp::start(b).await;
    let files = video_files();
    let video = m.processed("lecture.mp4", "0e", &files).await;
    let describe = format!("/api/describe/c/{}/o/{video}", m.app.lib);
    let a = m
        .app
        .api
        .call(
            Method::POST,
            &describe,
            Some(&m.app.token),
            &[("type", "video"), ("public", "true"), ("title", "Week <1>")],
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED);
    let link = m.get(&describe).await.json["permLink"]
        .as_str()
        .unwrap()
        .to_owned();
    let code = link.trim_end_matches('/').rsplit('/').next().unwrap();
    let embed = m
        .get(&format!("/api/embed/c/{}/o/{video}", m.app.lib))
        .await
        .json;

    // Defaults: title, controls, no autoplay, the whole media, a share box on the landing
    // page holding the embed record's codes (escaped as text).
    let body = m
        .app
        .api
        .app
        .get(&format!("/m/{code}"))
        .await
        .text()
        .await
        .unwrap();
    assert!(body.contains(r#"<h1 id="title">"#), "{body}");
    assert!(body.contains("<video controls preload"), "{body}");
    assert!(!body.contains("autoplay"));
    assert!(sources(&body).iter().all(|(src, _)| !src.contains("#t=")));
    assert!(
        body.contains(r#"<h2 id="share-heading">Share</h2>"#),
        "{body}"
    );
    assert!(
        body.contains(&format!(r#"value="{link}""#)),
        "the permLink: {body}"
    );
    let iframe = embed["properties"]["iframe"].as_str().unwrap();
    assert!(
        body.contains(
            &iframe
                .replace('&', "&#38;")
                .replace('<', "&#60;")
                .replace('>', "&#62;")
                .replace('"', "&#34;")
        ) || body.contains(
            &iframe
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('"', "&quot;")
        ),
        "the iframe code as text: {body}"
    );
    assert!(!body.contains(iframe), "never as markup");

    // The plugins' query, through the permLink's redirect.
    let query = "share=false&title=false&autoplay=true&cc_load_policy=1&start=10&end=20&width=320&height=180";
    let res = m.app.api.app.get(&format!("/w/{code}/?{query}")).await;
    let landing = res.headers()["location"].to_str().unwrap().to_owned();
    for page in [
        landing,
        format!("{}/embed/{code}?{query}", m.app.api.app.address),
    ] {
        let body = m
            .app
            .api
            .app
            .client
            .get(&page)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(!body.contains(r#"<h1 id="title">"#), "{page}: no title");
        assert!(
            body.contains("aria-label=\"Week"),
            "{page}: the player keeps a name: {body}"
        );
        assert!(body.contains("autoplay muted"), "{page}");
        assert!(body.contains(r#"width="320" height="180""#), "{page}");
        assert!(
            !body.contains("Share</h2>") && !body.contains("Open in medialib<"),
            "{page}"
        );
        let found = sources(&body);
        assert!(!found.is_empty());
        assert!(
            found.iter().all(|(src, _)| src.ends_with("#t=10,20")),
            "{found:?}"
        );
    }
    // oEmbed carries the largest still as the thumbnail (the Drupal plugin reads it).
    let oembed = m
        .app
        .api
        .app
        .get(&format!(
            "/api/oembed?url={}&format=json",
            link.replace(':', "%3A").replace('/', "%2F")
        ))
        .await;
    let oembed: Value = oembed.json().await.unwrap();
    assert_eq!(oembed["thumbnail_width"], 1280, "{oembed}");
    assert_eq!(oembed["thumbnail_height"], 760, "{oembed}");
    let thumbnail = oembed["thumbnail_url"].as_str().unwrap();
    let large = files
        .iter()
        .find(|f| f.role == FileRole::Still && f.size == Some((1280, 760)))
        .map(|f| f.path)
        .unwrap();
    assert_eq!(file_of(thumbnail), large, "{oembed}");
    serves(&m, thumbnail, bytes_of(&files, large), "image/jpeg").await;
    // Without controls it starts by itself; audio_only plays the sound in an <audio>.
    let body = m
        .app
        .api
        .app
        .get(&format!("/m/{code}?controls=false"))
        .await
        .text()
        .await
        .unwrap();
    assert!(body.contains("<video autoplay muted preload"), "{body}");
    let body = m
        .app
        .api
        .app
        .get(&format!("/m/{code}?audio_only=true"))
        .await
        .text()
        .await
        .unwrap();
    assert!(
        body.contains("<audio controls") && !body.contains("<video"),
        "{body}"
    );
}

medialib_adapters_diesel::backend_tests!(
    async on [sqlite, postgres] with run:
    hls_playlists_resolve_under_the_signed_prefix,
    records_show_images_and_playable_files_once_media_is_ready,
    an_audio_recording_answers_the_video_record_with_its_m4a,
    the_player_page_of_a_public_object_plays_its_processed_files,
    the_player_follows_its_query_and_the_landing_page_shares,
);
