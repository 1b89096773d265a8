//! Processed media over HTTP, on SQLite and PostgreSQL (DECISIONS §7 "Delivery URLs"): a
//! source uploaded with tus, its processing ended through the job port with small fake files
//! stored through the storage port, then delivery of nested paths: the HLS master, a media
//! playlist and a byte range of its media, each reached from the one before by resolving its
//! relative URI under the signed prefix.

use medialib_adapters_storage::FileStorage;
use medialib_domain::media::derived::{DerivedDir, DerivedFile, DerivedPath, DerivedSet, FileRole};
use medialib_domain::media::probe::Dimensions;
use medialib_domain::media::StorageKey;
use medialib_domain::{ObjectId, Timestamp};
use medialib_ports::{ClaimRequest, JobEnd, JobEnded, MediaStorage as _};
use reqwest::StatusCode;

use super::{Backend, run};
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

fn bytes_of<'a>(files: &'a [Fake], path: &str) -> &'a [u8] {
    &files.iter().find(|f| f.path == path).unwrap().bytes
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

medialib_adapters_diesel::backend_tests!(
    async on [sqlite, postgres] with run:
    hls_playlists_resolve_under_the_signed_prefix,
);
