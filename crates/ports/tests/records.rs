//! What the records show of processed media, on the in-memory store and media store: the
//! `images` of describe and catalog records (one object, and many in one read), the video
//! record's files of a video and an audio recording, the player page's files, each with
//! signed URLs that open the files they name. No database, no disk:
//! `cargo test -p medialib-ports --test records`.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "tests (helpers included) fail by panicking"
)]

use std::collections::HashMap;
use std::io::Read as _;
use std::sync::Arc;

use medialib_adapters_memory::storage::MemoryStorage;
use medialib_adapters_memory::testing::{World, world};
use medialib_domain::media::derived::{DerivedDir, DerivedFile, DerivedPath, DerivedSet, FileRole};
use medialib_domain::media::probe::Dimensions;
use medialib_domain::media::records::{ImageSize, PlayFormat};
use medialib_domain::media::{StorageKey, UploadLimits};
use medialib_domain::{Lifetime, ObjectId, ObjectType, PermissionLevel, Refusal};
use medialib_ports::services::catalog::VideoFailed;
use medialib_ports::services::{ImageLinks, PlayerMedia, Services, UploadSettings};
use medialib_ports::{ClaimRequest, JobEnd, JobEnded, MediaStorage as _};

struct Media {
    w: World,
    s: Services,
    storage: Arc<MemoryStorage>,
}

fn media() -> Media {
    let w = world();
    let storage = Arc::new(MemoryStorage::new(1 << 20));
    let settings = UploadSettings {
        limits: UploadLimits {
            max_size: 1 << 20,
            quota: None,
        },
        expiry: Lifetime::from_seconds(3_600).unwrap(),
        url_ttl: Lifetime::from_seconds(600).unwrap(),
        signing_key: None,
        instance: "test".into(),
    };
    let s = w.h.services.clone().with_storage(storage.clone(), settings);
    Media { w, s, storage }
}

fn file(role: FileRole, path: &str, size: Option<(u32, u32)>, bitrate: Option<u32>) -> DerivedFile {
    DerivedFile {
        role,
        path: DerivedPath::parse(path).unwrap(),
        size: path.len() as u64,
        dimensions: size.and_then(|(w, h)| Dimensions::new(w, h)),
        bitrate,
    }
}

fn stills(ext: &str) -> Vec<DerivedFile> {
    [(128, 128), (512, 512), (1280, 760)]
        .into_iter()
        .map(|(w, h)| {
            file(
                FileRole::Still,
                &format!("stills/{w}x{h}.{ext}"),
                Some((w, h)),
                None,
            )
        })
        .collect()
}

fn video_files() -> Vec<DerivedFile> {
    let mut files = vec![
        file(
            FileRole::Rendition,
            "mp4/720p.mp4",
            Some((1280, 720)),
            Some(2_928_000),
        ),
        file(
            FileRole::Rendition,
            "mp4/360p.mp4",
            Some((640, 360)),
            Some(928_000),
        ),
        file(FileRole::Hls, "hls/master.m3u8", None, None),
        file(FileRole::HlsPlaylist, "hls/720p.m3u8", None, None),
        file(FileRole::HlsMedia, "hls/720p.m4s", None, None),
        file(FileRole::HlsPlaylist, "hls/360p.m3u8", None, None),
        file(FileRole::HlsMedia, "hls/360p.m4s", None, None),
        file(FileRole::Smil, "video.smil", None, None),
        file(FileRole::Thumbnails, "thumbs/thumbnails.vtt", None, None),
        file(
            FileRole::Sprite,
            "thumbs/sprite_1.jpg",
            Some((1280, 720)),
            None,
        ),
    ];
    files.extend(stills("jpg"));
    files
}

fn audio_files() -> Vec<DerivedFile> {
    let mut files = vec![
        file(FileRole::Rendition, "audio.m4a", None, Some(128_000)),
        file(FileRole::Waveform, "waveform.json", None, None),
    ];
    files.extend(stills("png"));
    files
}

/// Uploads a source for a new `object_type` object in alice's library, and ends its
/// processing `ready` with `files` (stored, each holding its own path) in directory `dir`.
/// No other job may be waiting (the claim takes the oldest).
fn processed(m: &Media, object_type: ObjectType, dir: &str, files: Vec<DerivedFile>) -> ObjectId {
    let id = uploaded(m, object_type);
    let set = DerivedSet::new(DerivedDir::parse(dir).unwrap(), files, None).unwrap();
    let job =
        m.w.h
            .store
            .claim_job(ClaimRequest {
                holder: "worker",
                now: m.w.h.now(),
                until: m.w.h.now().plus(Lifetime::from_seconds(60).unwrap()),
                dir: set.dir(),
            })
            .unwrap()
            .expect("the upload queued a job");
    assert_eq!(job.ticket.object, id);
    for f in set.files() {
        let key = StorageKey::parse(&format!("media/{id}/{dir}/{}", f.path)).unwrap();
        m.storage
            .put(&key, &mut f.path.as_str().as_bytes())
            .unwrap();
    }
    assert_eq!(
        m.w.h
            .store
            .end_job(job.ticket, JobEnd::Ready(&set), m.w.h.now())
            .unwrap(),
        JobEnded::Ended(None)
    );
    id
}

/// Uploads a source for a new `object_type` object in alice's library: queued, not processed.
fn uploaded(m: &Media, object_type: ObjectType) -> ObjectId {
    m.s.uploads()
        .put_file(
            &m.w.alice.as_caller(),
            m.w.lib,
            Some("source.bin"),
            &mut &b"source bytes"[..],
            &mut || vec![("type".to_owned(), object_type.as_str().to_owned())],
        )
        .unwrap()
}

/// Opens a signed path (`/m/…`) as delivery does and reads the whole file.
fn fetch(m: &Media, path: &str) -> (String, &'static str) {
    let rest = path.strip_prefix("/m/").unwrap();
    let mut parts = rest.splitn(4, '/');
    let (o, e, s, f) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let uploads = m.s.uploads();
    let delivery = uploads.open_delivery(o, e, s, f, false).unwrap();
    let mut body = String::new();
    uploads
        .read_delivery(&delivery, None)
        .unwrap()
        .body
        .read_to_string(&mut body)
        .unwrap();
    (body, delivery.content_type)
}

fn object(m: &Media, id: ObjectId) -> medialib_domain::MediaObject {
    m.w.h.store.object(id).unwrap().unwrap()
}

/// A played file: its format, what its URL serves, its size and bitrate.
type Played = (PlayFormat, String, Option<(u32, u32)>, Option<u32>);

fn image_paths(links: &ImageLinks) -> Vec<(ImageSize, String)> {
    links.iter().map(|(s, p)| (s, p.to_owned())).collect()
}

#[test]
fn a_processed_video_shows_its_stills_and_plays_its_mp4s_hls_and_smil() {
    let m = media();
    let id = processed(&m, ObjectType::Video, "0a1b", video_files());
    let images = m.s.uploads().images(&object(&m, id)).unwrap();
    let got = image_paths(&images);
    assert_eq!(
        got.iter().map(|(s, _)| s.key()).collect::<Vec<_>>(),
        ["thumbnail", "square", "large"]
    );
    for ((_, path), expected) in got.iter().zip(["128x128", "512x512", "1280x760"]) {
        let file = format!("stills/{expected}.jpg");
        assert!(
            path.starts_with(&format!("/m/{id}/")) && path.ends_with(&format!("/{file}")),
            "{path}"
        );
        assert_eq!(fetch(&m, path), (file, "image/jpeg"));
    }

    let view =
        m.s.uploads()
            .video(&m.w.bob.as_caller(), m.w.lib, id)
            .unwrap();
    assert_eq!(view.object.id(), id);
    assert_eq!(
        view.images, images,
        "minted in the same minute: the same URLs"
    );
    let summary: Vec<Played> = view
        .files
        .iter()
        .map(|f| {
            (
                f.format,
                fetch(&m, &f.path).0,
                f.dimensions.map(|d| (d.width(), d.height())),
                f.bitrate,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                PlayFormat::Mp4,
                "mp4/720p.mp4".to_owned(),
                Some((1280, 720)),
                Some(2_928_000)
            ),
            (
                PlayFormat::Mp4,
                "mp4/360p.mp4".to_owned(),
                Some((640, 360)),
                Some(928_000)
            ),
            (PlayFormat::Hls, "hls/master.m3u8".to_owned(), None, None),
            (PlayFormat::Smil, "video.smil".to_owned(), None, None),
        ]
    );
    for f in &view.files {
        let track = f
            .thumbnails
            .as_deref()
            .expect("every video file names the track");
        assert_eq!(
            fetch(&m, track),
            (
                "thumbs/thumbnails.vtt".to_owned(),
                "text/vtt; charset=utf-8"
            )
        );
    }
    // The player page plays the same files, with the stills (the poster) and no waveform.
    let player = m.s.uploads().player_media(&object(&m, id)).unwrap();
    assert_eq!(
        (player.files, player.images, player.waveform),
        (view.files, view.images, None)
    );
}

#[test]
fn an_audio_recording_plays_its_m4a_and_shows_its_waveform_pictures() {
    let m = media();
    let id = processed(&m, ObjectType::Audio, "0c", audio_files());
    let view =
        m.s.uploads()
            .video(&m.w.bob.as_caller(), m.w.lib, id)
            .unwrap();
    let [only] = &view.files[..] else {
        panic!("{:?}", view.files)
    };
    assert_eq!(
        (
            only.format,
            only.thumbnails.as_deref(),
            only.dimensions,
            only.bitrate
        ),
        (PlayFormat::Mp4, None, None, Some(128_000))
    );
    assert_eq!(fetch(&m, &only.path), ("audio.m4a".to_owned(), "audio/mp4"));
    let (size, large) = image_paths(&view.images).pop().unwrap();
    assert_eq!(size, ImageSize::Large);
    assert_eq!(
        fetch(&m, &large),
        ("stills/1280x760.png".to_owned(), "image/png")
    );
    // The player page draws its waveform from the peaks.
    let player = m.s.uploads().player_media(&object(&m, id)).unwrap();
    assert_eq!(player.files, view.files);
    assert_eq!(
        fetch(&m, player.waveform.as_deref().expect("a waveform")),
        ("waveform.json".to_owned(), "application/json")
    );
}

#[test]
fn nothing_shows_before_processing_and_only_video_and_audio_have_a_video_record() {
    let m = media();
    let bob = m.w.bob.as_caller();
    let uploads = m.s.uploads();
    let picture = processed(&m, ObjectType::Image, "0d", stills("jpg"));
    // Queued, never processed; a video with no media at all.
    let waiting = uploaded(&m, ObjectType::Video);
    for id in [waiting, m.w.video] {
        assert!(uploads.images(&object(&m, id)).unwrap().is_empty());
        let view = uploads.video(&bob, m.w.lib, id).unwrap();
        assert_eq!((view.files, view.images), (vec![], ImageLinks::default()));
        assert_eq!(
            uploads.player_media(&object(&m, id)).unwrap(),
            PlayerMedia::default()
        );
    }
    // An image has images but is not played.
    assert_eq!(
        uploads.images(&object(&m, picture)).unwrap().iter().count(),
        3
    );
    assert_eq!(
        uploads.video(&bob, m.w.lib, picture),
        Err(VideoFailed::NotPlayable(ObjectType::Image))
    );
    let shown = uploads.player_media(&object(&m, picture)).unwrap();
    assert_eq!(
        (shown.files, shown.images.iter().count(), shown.waveform),
        (vec![], 3, None)
    );
    // A catalog has neither.
    let lib = object(&m, m.w.lib);
    assert!(uploads.images(&lib).unwrap().is_empty());
    assert_eq!(
        uploads.video(&bob, m.w.lib, m.w.lib),
        Err(VideoFailed::NotPlayable(ObjectType::Catalog))
    );
    // The gate comes first.
    assert!(matches!(
        uploads.video(&m.w.carol.as_caller(), m.w.lib, picture),
        Err(VideoFailed::Refused(Refusal::Forbidden(f))) if f.actual == PermissionLevel::None
    ));
}

#[test]
fn many_objects_images_come_from_one_read() {
    let m = media();
    let video = processed(&m, ObjectType::Video, "1a", video_files());
    let audio = processed(&m, ObjectType::Audio, "1b", audio_files());
    let bare = processed(
        &m,
        ObjectType::Video,
        "1c",
        vec![file(
            FileRole::Rendition,
            "mp4/360p.mp4",
            Some((640, 360)),
            None,
        )],
    );
    let waiting = uploaded(&m, ObjectType::Video);
    let asked: Vec<(ObjectId, ObjectType)> = [video, audio, bare, waiting, m.w.video, m.w.lib]
        .into_iter()
        .map(|id| (id, object(&m, id).object_type()))
        .collect();
    let got = m.s.uploads().images_of(&asked).unwrap();
    let one_by_one: HashMap<ObjectId, ImageLinks> = [video, audio]
        .into_iter()
        .map(|id| (id, m.s.uploads().images(&object(&m, id)).unwrap()))
        .collect();
    assert_eq!(got, one_by_one, "objects without stills are left out");
    assert!(m.s.uploads().images_of(&[]).unwrap().is_empty());
    // A catalog is not even looked up: its type says it has no media.
    assert!(
        m.s.uploads()
            .images_of(&[(video, ObjectType::Catalog)])
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_library_page_shows_its_members_media_state_and_stills_to_a_viewer() {
    let m = media();
    let ready = processed(&m, ObjectType::Video, "0a1b", video_files());
    let queued = uploaded(&m, ObjectType::Audio);
    let sub =
        m.w.h
            .object_in(&m.w.alice, m.w.lib, ObjectType::Catalog, "sub");
    let uploads = m.s.uploads();
    // bob views alice's library: every member, with the media of those that have some.
    let view = uploads.library_view(&m.w.bob.as_caller(), m.w.lib).unwrap();
    assert_eq!(view.library.id(), m.w.lib);
    assert_eq!(view.page.level, PermissionLevel::View);
    let listed: Vec<ObjectId> = view.page.items.iter().map(|i| i.object.id()).collect();
    for id in [ready, queued, sub, m.w.video] {
        assert!(listed.contains(&id), "{id} listed");
    }
    let state = |id| view.media.get(&id).map(|r| r.state.as_str());
    assert_eq!(state(ready), Some("ready"));
    assert_eq!(state(queued), Some("queued"));
    assert_eq!(state(sub), None, "a catalog has no media");
    assert_eq!(state(m.w.video), None, "nothing uploaded yet");
    // Stills only where processing made them; each opens its file.
    assert_eq!(view.images.keys().collect::<Vec<_>>(), [&ready]);
    for (_, path) in view.images[&ready].iter() {
        let (body, _) = fetch(&m, path);
        assert!(path.ends_with(&body), "{path} serves {body}");
    }
    // bob only views: no people; alice administers: hers and bob's entries.
    assert!(view.people.is_none());
    let admin = uploads
        .library_view(&m.w.alice.as_caller(), m.w.lib)
        .unwrap();
    let mut people: Vec<(String, PermissionLevel)> = admin
        .people
        .unwrap()
        .into_iter()
        .map(|e| (e.user.unique_id.as_str().to_owned(), e.level))
        .collect();
    people.sort();
    assert_eq!(
        people,
        [
            ("alice".to_owned(), PermissionLevel::Admin),
            ("bob".to_owned(), PermissionLevel::View)
        ]
    );
    // carol holds no level on it: refused as every listing is.
    assert!(matches!(
        uploads.library_view(&m.w.carol.as_caller(), m.w.lib),
        Err(medialib_ports::services::MembershipChangeFailed::Refused(_))
    ));
}
