//! The processing use case (`ProcessingServices::work_once`) without a database and without
//! ffmpeg: the in-memory store, the in-memory media store, the test clock, and
//! [`FakeProcessor`], a test double of the `MediaProcessor` port. Sources arrive through the
//! upload use case, as in production. `cargo test -p medialib-ports --test processing`.
//!
//! What ffmpeg makes of a real file is `crates/adapters-ffmpeg/tests`'s business; these cases
//! are the job's rules: which files a finished job keeps, which failures are tried again and
//! when, what a stopping worker, a dead one or one whose lease was taken over leaves behind.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "tests (helpers included) fail by panicking"
)]

use std::collections::BTreeSet;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use medialib_adapters_memory::storage::MemoryStorage;
use medialib_adapters_memory::testing::{World, world};
use medialib_domain::media::derive::{
    AudioPlan, ImagePlan, STILL_SIZES, SpritePlan, StillFormat, VideoPlan, still_path,
};
use medialib_domain::media::derived::{DerivedDir, FileRole, RetryPolicy};
use medialib_domain::media::documents::{Waveform, WaveformBuilder};
use medialib_domain::media::probe::{
    AudioStream, CodecName, ContainerFormat, Dimensions, FrameRate, MediaDuration, MediaProbe,
    VideoStream,
};
use medialib_domain::media::progress::Percent;
use medialib_domain::media::{ByteSpan, MediaState, StorageKey, UploadDescription, UploadLimits};
use medialib_domain::{IdOrZero, Lifetime, ObjectId, Timestamp};
use medialib_ports::services::processing::{
    JobReport, Outcome, ProcessingServices, ProcessingSettings,
};
use medialib_ports::services::{MediaFailed, Services, UploadSettings, UploadTarget};
use medialib_ports::{
    Append, Appended, ClaimRequest, MediaProcessor, MediaRecord, MediaStorage, ObjectInfo,
    ProbeError, ProcessError, ProgressSink, Reading, Staging, StorageError, ToolFailure,
};

/// How long a claim holds a job in these cases.
const LEASE: i64 = 60;
/// The first retry waits this long; each further one twice the one before.
const BACKOFF: i64 = 30;

// ---------------------------------------------------------------------------------------------
// Test doubles

/// Where a blocked call waits until the test lets it go on (one use).
#[derive(Debug, Default)]
struct Gate {
    /// (a call is held, the gate is open)
    state: Mutex<(bool, bool)>,
    changed: Condvar,
}

impl Gate {
    /// Called by the blocked side: says it is held and waits until the test opens the gate.
    fn hold(&self) {
        let mut state = self.state.lock().unwrap();
        state.0 = true;
        self.changed.notify_all();
        self.wait_for(state, |s| s.1, "the test to open the gate");
    }

    /// Waits until a call is held.
    fn wait_held(&self) {
        let state = self.state.lock().unwrap();
        self.wait_for(state, |s| s.0, "a call to reach the gate");
    }

    fn open(&self) {
        self.state.lock().unwrap().1 = true;
        self.changed.notify_all();
    }

    /// Waits (at most ten seconds, so that a broken case fails instead of hanging) until `done`.
    fn wait_for(
        &self,
        mut state: std::sync::MutexGuard<'_, (bool, bool)>,
        done: impl Fn(&(bool, bool)) -> bool,
        what: &str,
    ) {
        for _ in 0..100 {
            if done(&state) {
                return;
            }
            state = self
                .changed
                .wait_timeout(state, Duration::from_millis(100))
                .unwrap()
                .0;
        }
        panic!("waited ten seconds for {what}");
    }
}

/// A test double of the `MediaProcessor` port, in place of ffmpeg: its probe answers what the
/// test set, and each step writes a few bytes at every path the plan names for that step (so
/// the use case finds the files a real processor makes, no more), tells its progress sink 0,
/// 50 and 100 % (stopping when the sink says so), and fails or waits when the test says so.
#[derive(Debug, Default)]
struct FakeProcessor {
    probe: Mutex<Option<Result<MediaProbe, ProbeError>>>,
    /// The step that fails, and how (every time, until changed).
    failing: Mutex<Option<(&'static str, ProcessError)>>,
    /// The next transcode (or audio encode) waits at `gate` before it starts.
    hold_next_encode: AtomicBool,
    gate: Gate,
    /// Every call, by step name.
    calls: Mutex<Vec<&'static str>>,
}

impl FakeProcessor {
    fn probing(&self, probe: Result<MediaProbe, ProbeError>) {
        *self.probe.lock().unwrap() = Some(probe);
    }

    fn fail_in(&self, step: &'static str, error: ProcessError) {
        *self.failing.lock().unwrap() = Some((step, error));
    }

    fn succeed(&self) {
        *self.failing.lock().unwrap() = None;
    }

    fn calls(&self) -> Vec<&'static str> {
        self.calls.lock().unwrap().clone()
    }

    /// Records the call; the configured failure of `step`, if any.
    fn step(&self, step: &'static str) -> Result<(), ProcessError> {
        self.calls.lock().unwrap().push(step);
        match &*self.failing.lock().unwrap() {
            Some((failing, e)) if *failing == step => Err(e.clone()),
            _ => Ok(()),
        }
    }

    fn encode(&self, step: &'static str) -> Result<(), ProcessError> {
        if self.hold_next_encode.swap(false, Ordering::SeqCst) {
            self.gate.hold();
        }
        self.step(step)
    }
}

/// Tells `progress` 0, 50 and 100 %; `Stopped` when it asks to stop.
fn run(progress: &mut ProgressSink<'_>) -> Result<(), ProcessError> {
    for p in [0, 50, 100] {
        if !progress(Percent::new(p)) {
            return Err(ProcessError::Stopped);
        }
    }
    Ok(())
}

/// Writes a small file at `path` under `work`.
fn make(work: &Path, path: &str) {
    let file = work.join(path);
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(file, format!("{path}, made by the fake")).unwrap();
}

fn stills(work: &Path, format: StillFormat) {
    for size in STILL_SIZES {
        make(work, &still_path(size, format));
    }
}

impl MediaProcessor for FakeProcessor {
    fn probe(&self, source: &Path) -> Result<MediaProbe, ProbeError> {
        self.calls.lock().unwrap().push("probe");
        assert!(
            source.is_file(),
            "the source is copied into the work directory"
        );
        self.probe
            .lock()
            .unwrap()
            .clone()
            .expect("the case sets the probe")
    }

    fn transcode(
        &self,
        _: &Path,
        plan: &VideoPlan,
        work: &Path,
        progress: &mut ProgressSink<'_>,
    ) -> Result<(), ProcessError> {
        self.encode("transcode")?;
        run(progress)?;
        for r in plan.renditions() {
            make(work, &r.mp4_path());
        }
        Ok(())
    }

    fn package_hls(&self, plan: &VideoPlan, work: &Path) -> Result<(), ProcessError> {
        self.step("package_hls")?;
        make(work, VideoPlan::HLS_MASTER_PATH);
        for r in plan.renditions() {
            make(work, &r.hls_playlist_path());
            make(work, &r.hls_media_path());
        }
        Ok(())
    }

    fn video_stills(&self, _: &Path, _: &VideoPlan, work: &Path) -> Result<(), ProcessError> {
        self.step("video_stills")?;
        stills(work, StillFormat::Jpeg);
        Ok(())
    }

    fn sprites(
        &self,
        plan: &VideoPlan,
        work: &Path,
        progress: &mut ProgressSink<'_>,
    ) -> Result<(), ProcessError> {
        self.step("sprites")?;
        run(progress)?;
        for n in 1..=plan.sprites().sheets() {
            make(work, &SpritePlan::sheet_path(n));
        }
        Ok(())
    }

    fn image_stills(&self, _: &Path, _: &ImagePlan, work: &Path) -> Result<(), ProcessError> {
        self.step("image_stills")?;
        stills(work, StillFormat::Jpeg);
        Ok(())
    }

    fn encode_audio(
        &self,
        _: &Path,
        _: &AudioPlan,
        work: &Path,
        progress: &mut ProgressSink<'_>,
    ) -> Result<(), ProcessError> {
        self.encode("encode_audio")?;
        run(progress)?;
        make(work, AudioPlan::M4A_PATH);
        Ok(())
    }

    fn waveform(
        &self,
        _: &Path,
        plan: &AudioPlan,
        work: &Path,
        progress: &mut ProgressSink<'_>,
    ) -> Result<Waveform, ProcessError> {
        self.step("waveform")?;
        run(progress)?;
        stills(work, StillFormat::Png);
        let mut peaks = WaveformBuilder::new(8000, plan.samples_per_point());
        peaks.push_samples(&[0, 1000, -1000, 0]);
        Ok(peaks.finish())
    }
}

/// The in-memory media store, with every `put` recorded, and one of them held at a [`Gate`]
/// when the test says so: a test double for "a worker is busy storing its files".
#[derive(Debug, Default)]
struct GatedStorage {
    inner: MemoryStorage,
    puts: Mutex<Vec<StorageKey>>,
    /// Puts to let through before one is held (`None`: none is).
    hold_after: Mutex<Option<usize>>,
    gate: Gate,
}

impl GatedStorage {
    /// The put after the next `n` waits at the gate, before it stores anything.
    fn hold_put_after(&self, n: usize) {
        *self.hold_after.lock().unwrap() = Some(n);
    }

    fn puts(&self) -> Vec<StorageKey> {
        self.puts.lock().unwrap().clone()
    }
}

impl MediaStorage for GatedStorage {
    fn location(&self) -> String {
        self.inner.location()
    }

    fn put(&self, key: &StorageKey, body: &mut dyn Read) -> Result<ObjectInfo, StorageError> {
        let hold = {
            let mut left = self.hold_after.lock().unwrap();
            match *left {
                Some(0) => {
                    *left = None;
                    true
                }
                Some(n) => {
                    *left = Some(n - 1);
                    false
                }
                None => false,
            }
        };
        if hold {
            self.gate.hold();
        }
        self.puts.lock().unwrap().push(key.clone());
        self.inner.put(key, body)
    }

    fn head(&self, key: &StorageKey) -> Result<ObjectInfo, StorageError> {
        self.inner.head(key)
    }

    fn read(&self, key: &StorageKey, span: Option<ByteSpan>) -> Result<Reading, StorageError> {
        self.inner.read(key, span)
    }

    fn delete(&self, key: &StorageKey) -> Result<(), StorageError> {
        self.inner.delete(key)
    }

    fn list(&self, prefix: &StorageKey) -> Result<Vec<ObjectInfo>, StorageError> {
        self.inner.list(prefix)
    }

    fn stage(&self, key: &StorageKey, length: u64) -> Result<Staging, StorageError> {
        self.inner.stage(key, length)
    }

    fn append(&self, append: Append<'_>) -> Appended {
        self.inner.append(append)
    }

    fn finish(&self, staging: &Staging) -> Result<ObjectInfo, StorageError> {
        self.inner.finish(staging)
    }

    fn discard(&self, staging: &Staging) -> Result<(), StorageError> {
        self.inner.discard(staging)
    }

    fn presign(&self, key: &StorageKey, until: Timestamp) -> Option<String> {
        self.inner.presign(key, until)
    }
}

// ---------------------------------------------------------------------------------------------
// The bench

/// A directory of the system's temporary one, deleted when dropped.
struct WorkRoot(PathBuf);

impl WorkRoot {
    fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "medialib-processing-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        ));
        fs::create_dir_all(&path).unwrap();
        Self(path)
    }

    /// What attempts left in it.
    fn leftovers(&self) -> Vec<PathBuf> {
        fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect()
    }
}

impl Drop for WorkRoot {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// The world of the use-case tests (Alice's library, the test clock) with uploads into a
/// [`GatedStorage`] and processing by a [`FakeProcessor`].
struct Bench {
    w: World,
    s: Services,
    storage: Arc<GatedStorage>,
    fake: Arc<FakeProcessor>,
    processing: ProcessingServices,
    work_root: WorkRoot,
}

fn bench() -> Bench {
    let w = world();
    let storage = Arc::new(GatedStorage::default());
    let s = w.h.services.clone().with_storage(
        storage.clone(),
        UploadSettings {
            limits: UploadLimits {
                max_size: 1_000,
                quota: None,
            },
            expiry: Lifetime::from_seconds(3_600).unwrap(),
            url_ttl: Lifetime::from_seconds(600).unwrap(),
            signing_key: None,
            instance: "test".into(),
        },
    );
    let fake = Arc::new(FakeProcessor::default());
    let work = WorkRoot::new();
    let processing = s.processing(
        fake.clone(),
        ProcessingSettings {
            lease: Duration::from_secs(LEASE as u64),
            retry: RetryPolicy::new(3, Duration::from_secs(BACKOFF as u64)),
            work_root: work.0.clone(),
        },
    );
    Bench {
        w,
        s,
        storage,
        fake,
        processing,
        work_root: work,
    }
}

impl Bench {
    /// Alice uploads `filename` into her library (its extension gives the object's type);
    /// returns the new object, whose media is queued (or ready, for a file).
    fn upload(&self, filename: &str) -> ObjectId {
        let alice = self.w.alice.as_caller();
        let bytes = b"the source's bytes";
        let target = UploadTarget {
            collection: self.w.lib,
            object: IdOrZero::Zero,
        };
        let description = UploadDescription::from_fields(&[("filename", filename)]).unwrap();
        let object = self
            .s
            .uploads()
            .begin(&alice, target, bytes.len() as u64, description)
            .unwrap()
            .object;
        let done = self
            .s
            .uploads()
            .append(&alice, self.w.lib, object, 0, None, &mut &bytes[..])
            .unwrap();
        assert!(done.finished);
        object
    }

    /// One attempt of a worker that is not stopping.
    fn work(&self, holder: &str) -> Option<JobReport> {
        self.processing.work_once(holder, &|| false).unwrap()
    }

    fn media(&self, object: ObjectId) -> MediaRecord {
        self.w.h.store.media(object).unwrap().unwrap()
    }

    /// Every stored key of `object` but its source's.
    fn derived_keys(&self, object: ObjectId) -> BTreeSet<String> {
        let source = self.media(object).source.map(|s| s.key);
        let prefix = StorageKey::parse(&format!("media/{object}")).unwrap();
        self.storage
            .inner
            .inventory()
            .0
            .into_iter()
            .filter(|k| k.is_under(&prefix) && Some(k) != source.as_ref())
            .map(|k| k.as_str().to_owned())
            .collect()
    }

    /// The keys `paths` would have in `dir` of `object`.
    fn keys_in(object: ObjectId, dir: &DerivedDir, paths: &[&str]) -> BTreeSet<String> {
        paths
            .iter()
            .map(|p| format!("media/{object}/{dir}/{p}"))
            .collect()
    }

    fn advance(&self, secs: i64) {
        self.w.h.advance(secs);
    }

    fn now(&self) -> Timestamp {
        self.w.h.now()
    }
}

// ---------------------------------------------------------------------------------------------
// Probes

fn codec(name: &str) -> CodecName {
    CodecName::parse(name).unwrap()
}

fn container(name: &str) -> ContainerFormat {
    ContainerFormat::parse(name).unwrap()
}

fn video_stream(width: u32, height: u32, name: &str) -> VideoStream {
    VideoStream::new(
        Dimensions::new(width, height).unwrap(),
        0,
        FrameRate::new(25, 1),
        codec(name),
        false,
    )
}

fn stereo() -> AudioStream {
    AudioStream::new(2, 48_000, codec("aac")).unwrap()
}

/// A 720p clip of 61.5 s with sound.
fn video_probe() -> MediaProbe {
    MediaProbe::new(
        container("mov,mp4,m4a,3gp,3g2,mj2"),
        Some(MediaDuration::from_millis(61_500)),
        vec![video_stream(1280, 720, "h264")],
        Some(stereo()),
    )
}

/// 30 s of sound.
fn audio_probe() -> MediaProbe {
    MediaProbe::new(
        container("mp3"),
        Some(MediaDuration::from_secs(30)),
        vec![],
        Some(stereo()),
    )
}

/// A 2000 × 1500 photograph.
fn image_probe() -> MediaProbe {
    MediaProbe::new(
        container("image2"),
        None,
        vec![video_stream(2000, 1500, "mjpeg")],
        None,
    )
}

/// The one video file the cases expect: 720p and 360p, HLS, SMIL, thumbnails, stills.
const VIDEO_FILES: [&str; 13] = [
    "mp4/720p.mp4",
    "mp4/360p.mp4",
    "hls/master.m3u8",
    "hls/720p.m3u8",
    "hls/720p.m4s",
    "hls/360p.m3u8",
    "hls/360p.m4s",
    "video.smil",
    "thumbs/thumbnails.vtt",
    "thumbs/sprite_1.jpg",
    "stills/128x128.jpg",
    "stills/512x512.jpg",
    "stills/1280x760.jpg",
];

const IMAGE_FILES: [&str; 3] = [
    "stills/128x128.jpg",
    "stills/512x512.jpg",
    "stills/1280x760.jpg",
];

fn tool_failure(reason: &str) -> ProcessError {
    ProcessError::Tool(ToolFailure {
        tool: "ffmpeg",
        reason: reason.into(),
    })
}

// ---------------------------------------------------------------------------------------------
// The cases

#[test]
fn processing_a_video_an_audio_recording_and_an_image_stores_exactly_the_planned_files() {
    let cases: [(&str, MediaProbe, &[&str], Option<u32>); 3] = [
        ("clip.mp4", video_probe(), &VIDEO_FILES, Some(62)),
        (
            "talk.mp3",
            audio_probe(),
            &[
                "audio.m4a",
                "waveform.json",
                "stills/128x128.png",
                "stills/512x512.png",
                "stills/1280x760.png",
            ],
            Some(30),
        ),
        ("photo.jpg", image_probe(), &IMAGE_FILES, None),
    ];
    for (filename, probe, files, duration) in cases {
        let b = bench();
        b.fake.probing(Ok(probe));
        let object = b.upload(filename);
        assert_eq!(b.media(object).state, MediaState::Queued, "{filename}");

        assert_eq!(
            b.work("w1"),
            Some(JobReport {
                object,
                attempt: 1,
                outcome: Outcome::Ready
            }),
            "{filename}"
        );
        let media = b.media(object);
        assert_eq!(
            (media.state, media.progress, &media.error, media.attempts),
            (MediaState::Ready, 100, &None, 1),
            "{filename}"
        );
        let set = media.derived.unwrap();
        let mut recorded: Vec<&str> = set.files().iter().map(|f| f.path.as_str()).collect();
        let mut expected = files.to_vec();
        recorded.sort_unstable();
        expected.sort_unstable();
        assert_eq!(recorded, expected, "{filename}: the record");
        assert_eq!(
            b.derived_keys(object),
            Bench::keys_in(object, set.dir(), files),
            "{filename}: the stored files, nothing else"
        );
        for f in set.files() {
            let key =
                StorageKey::parse(&format!("media/{object}/{}/{}", set.dir(), f.path)).unwrap();
            assert_eq!(
                Some(f.size),
                b.storage.inner.bytes(&key).map(|bytes| bytes.len() as u64),
                "{filename}: {}",
                f.path
            );
        }
        let still = set.still(STILL_SIZES[0]).unwrap();
        assert_eq!(still.role, FileRole::Still);
        assert_eq!(still.dimensions, Some(STILL_SIZES[0]));
        let object_record = b.w.h.store.object(object).unwrap().unwrap();
        assert_eq!(
            object_record.fields().duration.map(|d| d.seconds()),
            duration,
            "{filename}"
        );
        assert!(
            b.work_root.leftovers().is_empty(),
            "{filename}: the work directory is gone"
        );
        assert_eq!(b.work("w1"), None, "{filename}: nothing else to do");
    }
}

#[test]
fn processing_records_what_each_video_file_is() {
    let b = bench();
    b.fake.probing(Ok(video_probe()));
    let object = b.upload("clip.mp4");
    b.work("w1").unwrap();
    let set = b.media(object).derived.unwrap();
    let file = |path: &str| set.file(path).unwrap();
    let hd = Dimensions::new(1280, 720);
    assert_eq!(
        (file("mp4/720p.mp4").role, file("mp4/720p.mp4").dimensions),
        (FileRole::Rendition, hd)
    );
    assert!(file("mp4/720p.mp4").bitrate > file("mp4/360p.mp4").bitrate);
    assert_eq!(file("mp4/360p.mp4").dimensions, Dimensions::new(640, 360));
    assert_eq!(file("hls/master.m3u8").role, FileRole::Hls);
    assert_eq!(
        (file("hls/720p.m4s").role, file("hls/720p.m4s").dimensions),
        (FileRole::HlsMedia, hd)
    );
    assert_eq!(file("video.smil").role, FileRole::Smil);
    assert_eq!(file("thumbs/thumbnails.vtt").role, FileRole::Thumbnails);
    assert_eq!(file("thumbs/sprite_1.jpg").role, FileRole::Sprite);
    // The documents are the domain's, not the processor's.
    let vtt = b
        .storage
        .inner
        .bytes(
            &StorageKey::parse(&format!(
                "media/{object}/{}/thumbs/thumbnails.vtt",
                set.dir()
            ))
            .unwrap(),
        )
        .unwrap();
    assert!(vtt.starts_with(b"WEBVTT"));
    assert_eq!(
        b.fake.calls(),
        [
            "probe",
            "transcode",
            "package_hls",
            "video_stills",
            "sprites"
        ]
    );
}

#[test]
fn processing_refuses_a_source_that_is_not_what_its_type_says_at_once_and_keeps_no_files() {
    let text = MediaProbe::new(
        container("tty"),
        Some(MediaDuration::from_secs(3)),
        vec![video_stream(640, 400, "ansi")],
        None,
    );
    let sound_only = audio_probe();
    let cases: [(Result<MediaProbe, ProbeError>, Option<ProcessError>, &str); 4] = [
        (Ok(text), None, "This file is text, not a video."),
        (
            Ok(sound_only),
            None,
            "This file has sound but no pictures: upload it as audio, not as a video.",
        ),
        (
            Err(ProbeError::NotMedia(
                "Invalid data found when processing input.".into(),
            )),
            None,
            "This file is not a video medialib can read: it is in no known audio, video or \
             image format (Invalid data found when processing input).",
        ),
        (
            Ok(video_probe()),
            Some(ProcessError::NotMedia("moov atom not found".into())),
            "This file cannot be processed: it is damaged or cut short (moov atom not found).",
        ),
    ];
    for (probe, failure, message) in cases {
        let b = bench();
        b.fake.probing(probe);
        if let Some(e) = failure {
            b.fake.fail_in("transcode", e);
        }
        let object = b.upload("clip.mp4");
        assert_eq!(
            b.work("w1"),
            Some(JobReport {
                object,
                attempt: 1,
                outcome: Outcome::Failed {
                    error: message.into()
                }
            })
        );
        let media = b.media(object);
        assert_eq!(
            (
                media.state,
                media.error.as_deref(),
                media.attempts,
                media.derived
            ),
            (MediaState::Failed, Some(message), 1, None)
        );
        assert!(b.derived_keys(object).is_empty(), "{message}");
        assert!(media.source.is_some(), "the source stays, for a reprocess");
        b.advance(10 * 3600);
        assert_eq!(b.work("w1"), None, "never tried again: {message}");
        assert!(b.work_root.leftovers().is_empty());
    }
}

#[test]
fn a_tool_failure_retries_processing_with_backoff_and_gives_up_with_the_last_error() {
    let b = bench();
    b.fake.probing(Ok(video_probe()));
    b.fake.fail_in(
        "transcode",
        tool_failure("exit status 1: Conversion failed!"),
    );
    let object = b.upload("clip.mp4");
    let first_error = "ffmpeg failed: exit status 1: Conversion failed!";

    // Attempt 1 fails: tried again after the first backoff.
    let at = b.now().plus_secs(Duration::from_secs(BACKOFF as u64));
    assert_eq!(
        b.work("w1").unwrap().outcome,
        Outcome::Retrying {
            error: first_error.into(),
            at
        }
    );
    let media = b.media(object);
    assert_eq!(
        (media.state, media.error.as_deref(), media.attempts),
        (MediaState::Queued, Some(first_error), 1)
    );
    b.advance(BACKOFF - 1);
    assert_eq!(b.work("w1"), None, "not before the backoff");
    b.advance(1);

    // Attempt 2 fails: the wait doubles.
    let report = b.work("w1").unwrap();
    assert_eq!(report.attempt, 2);
    assert_eq!(
        report.outcome,
        Outcome::Retrying {
            error: first_error.into(),
            at: b.now().plus_secs(Duration::from_secs(2 * BACKOFF as u64))
        }
    );
    b.advance(2 * BACKOFF - 1);
    assert_eq!(b.work("w1"), None);
    b.advance(1);

    // Attempt 3, the last, stalls somewhere else: that is the error it gives up with.
    b.fake.succeed();
    b.fake
        .fail_in("sprites", ProcessError::Stalled(Duration::from_secs(120)));
    let gave_up = "Processing failed 3 times; the last error: processing made no progress \
                   for 120 s and was stopped";
    assert_eq!(
        b.work("w1"),
        Some(JobReport {
            object,
            attempt: 3,
            outcome: Outcome::Failed {
                error: gave_up.into()
            }
        })
    );
    let media = b.media(object);
    assert_eq!(
        (
            media.state,
            media.error.as_deref(),
            media.attempts,
            media.derived
        ),
        (MediaState::Failed, Some(gave_up), 3, None)
    );
    assert!(b.derived_keys(object).is_empty());
    b.advance(10 * 3600);
    assert_eq!(b.work("w1"), None);
    assert!(b.work_root.leftovers().is_empty());
}

#[test]
fn a_stopping_worker_releases_processing_without_counting_the_attempt() {
    let b = bench();
    b.fake.probing(Ok(video_probe()));
    let object = b.upload("clip.mp4");
    // Asked to stop at its third question: inside the transcode's progress.
    let asked = AtomicU32::new(0);
    let stop = || asked.fetch_add(1, Ordering::SeqCst) >= 2;
    assert_eq!(
        b.processing.work_once("w1", &stop).unwrap(),
        Some(JobReport {
            object,
            attempt: 1,
            outcome: Outcome::Released
        })
    );
    assert_eq!(b.fake.calls(), ["probe", "transcode"]);
    let media = b.media(object);
    assert_eq!(
        (media.state, media.progress, media.attempts, media.error),
        (MediaState::Queued, 0, 0, None)
    );
    assert!(b.derived_keys(object).is_empty());
    assert!(b.work_root.leftovers().is_empty());

    // Due at once, and the next attempt is the first again.
    assert_eq!(
        b.work("w2"),
        Some(JobReport {
            object,
            attempt: 1,
            outcome: Outcome::Ready
        })
    );
    assert_eq!(b.media(object).attempts, 1);
}

#[test]
fn processing_whose_lease_is_taken_over_mid_run_is_superseded_and_the_new_attempt_kept() {
    let b = bench();
    b.fake.probing(Ok(video_probe()));
    let object = b.upload("clip.mp4");
    b.fake.hold_next_encode.store(true, Ordering::SeqCst);
    std::thread::scope(|s| {
        let stalled = s.spawn(|| b.work("worker-a"));
        b.fake.gate.wait_held();
        // worker-a makes no sign of life past its lease: worker-b takes the job and ends it.
        b.advance(LEASE + 1);
        assert_eq!(
            b.work("worker-b"),
            Some(JobReport {
                object,
                attempt: 2,
                outcome: Outcome::Ready
            })
        );
        b.fake.gate.open();
        assert_eq!(
            stalled.join().unwrap(),
            Some(JobReport {
                object,
                attempt: 1,
                outcome: Outcome::Superseded
            })
        );
    });
    let media = b.media(object);
    assert_eq!((media.state, media.attempts), (MediaState::Ready, 2));
    let set = media.derived.unwrap();
    assert_eq!(
        b.derived_keys(object),
        Bench::keys_in(object, set.dir(), &VIDEO_FILES),
        "worker-b's files, nothing of worker-a's"
    );
    assert!(b.work_root.leftovers().is_empty());
}

#[test]
fn processing_superseded_while_it_stores_deletes_what_it_stored() {
    let b = bench();
    b.fake.probing(Ok(image_probe()));
    let object = b.upload("photo.jpg");
    b.storage.hold_put_after(1);
    std::thread::scope(|s| {
        let stalled = s.spawn(|| b.work("worker-a"));
        b.storage.gate.wait_held();
        let first = b.derived_keys(object);
        assert_eq!(
            first.len(),
            1,
            "worker-a stored one file and waits with the second"
        );
        b.advance(LEASE + 1);
        assert_eq!(
            b.work("worker-b"),
            Some(JobReport {
                object,
                attempt: 2,
                outcome: Outcome::Ready
            })
        );
        b.storage.gate.open();
        assert_eq!(
            stalled.join().unwrap().map(|r| r.outcome),
            Some(Outcome::Superseded)
        );
    });
    let set = b.media(object).derived.unwrap();
    assert_eq!(
        b.derived_keys(object),
        Bench::keys_in(object, set.dir(), &IMAGE_FILES)
    );
    // worker-a stored two files (the second after worker-b had cleaned its directory) and
    // deleted both.
    let of_a: Vec<StorageKey> = b
        .storage
        .puts()
        .into_iter()
        .filter(|k| !k.as_str().contains(set.dir().as_str()) && k.as_str().contains("/stills/"))
        .collect();
    assert_eq!(of_a.len(), 2, "{of_a:?}");
}

#[test]
fn processing_queued_again_while_it_runs_is_superseded_and_deletes_its_files() {
    let b = bench();
    b.fake.probing(Ok(video_probe()));
    let object = b.upload("clip.mp4");
    let alice = b.w.alice.as_caller();
    b.fake.hold_next_encode.store(true, Ordering::SeqCst);
    std::thread::scope(|s| {
        let running = s.spawn(|| b.work("worker-a"));
        b.fake.gate.wait_held();
        // An admin asks for processing again while worker-a encodes (no time passes, so
        // worker-a learns it only when it records its result).
        let record = b.s.uploads().reprocess(&alice, b.w.lib, object).unwrap();
        assert_eq!((record.state, record.attempts), (MediaState::Queued, 0));
        b.fake.gate.open();
        assert_eq!(
            running.join().unwrap().map(|r| r.outcome),
            Some(Outcome::Superseded)
        );
    });
    let stored_by_a = b.storage.puts().len();
    assert!(
        stored_by_a >= VIDEO_FILES.len(),
        "worker-a stored its files"
    );
    assert!(b.derived_keys(object).is_empty(), "and deleted them");
    assert_eq!(b.media(object).state, MediaState::Queued);
    assert_eq!(
        b.work("worker-b"),
        Some(JobReport {
            object,
            attempt: 1,
            outcome: Outcome::Ready
        })
    );
}

#[test]
fn processing_abandoned_by_dead_workers_fails_with_the_abandoned_message() {
    let b = bench();
    b.fake.probing(Ok(video_probe()));
    let object = b.upload("clip.mp4");
    // Three workers take the job and die, the last after storing a file.
    for n in 1..=3u32 {
        let now = b.now();
        let dir = DerivedDir::parse(&format!("dead{n:04}")).unwrap();
        let claimed =
            b.w.h
                .store
                .claim_job(ClaimRequest {
                    holder: "dead",
                    now,
                    until: now.plus_secs(Duration::from_secs(LEASE as u64)),
                    dir: &dir,
                })
                .unwrap()
                .unwrap();
        assert_eq!(claimed.attempt, n);
        if n == 3 {
            let key = StorageKey::parse(&format!("media/{object}/{dir}/mp4/360p.mp4")).unwrap();
            b.storage.put(&key, &mut &b"half"[..]).unwrap();
        }
        b.advance(LEASE + 1);
    }
    let message = "Processing did not finish in 3 tries: the last one stopped without a result \
                   (the worker processing it ended). It is not tried again; ask for reprocessing \
                   once the cause is fixed.";
    assert_eq!(
        b.work("w1"),
        Some(JobReport {
            object,
            attempt: 4,
            outcome: Outcome::Failed {
                error: message.into()
            }
        })
    );
    assert!(b.fake.calls().is_empty(), "not tried a fourth time");
    let media = b.media(object);
    assert_eq!(
        (media.state, media.error.as_deref()),
        (MediaState::Failed, Some(message))
    );
    assert!(
        b.derived_keys(object).is_empty(),
        "the dead attempt's file is gone"
    );
    assert_eq!(b.work("w1"), None);
}

#[test]
fn reprocess_queues_processing_again_and_nothing_else_does() {
    let b = bench();
    let alice = b.w.alice.as_caller();
    // A text file uploaded as a video fails.
    b.fake.probing(Ok(MediaProbe::new(
        container("tty"),
        Some(MediaDuration::from_secs(3)),
        vec![video_stream(640, 400, "ansi")],
        None,
    )));
    let object = b.upload("clip.mp4");
    assert!(matches!(
        b.work("w1").unwrap().outcome,
        Outcome::Failed { .. }
    ));
    // Whatever is fixed meanwhile (here the processor), nothing is queued without a reprocess.
    b.fake.probing(Ok(video_probe()));
    b.advance(24 * 3600);
    assert_eq!(b.work("w1"), None);
    assert_eq!(b.media(object).state, MediaState::Failed);

    let record = b.s.uploads().reprocess(&alice, b.w.lib, object).unwrap();
    assert_eq!(
        (
            record.state,
            record.progress,
            record.error.as_deref(),
            record.attempts
        ),
        (MediaState::Queued, 0, None, 0)
    );
    assert_eq!(b.media(object), record);
    assert_eq!(b.work("w1").unwrap().outcome, Outcome::Ready);
    let first = b.media(object).derived.unwrap();

    // Ready media processed again: the new files replace the old ones, which are deleted.
    assert_eq!(
        b.work("w1"),
        None,
        "ready media is not processed again by itself"
    );
    b.s.uploads().reprocess(&alice, b.w.lib, object).unwrap();
    assert_eq!(
        b.media(object).derived.as_ref(),
        Some(&first),
        "the old files are served until the new ones are ready"
    );
    let report = b.work("w1").unwrap();
    assert_eq!((report.attempt, report.outcome), (1, Outcome::Ready));
    let second = b.media(object).derived.unwrap();
    assert_ne!(second.dir(), first.dir());
    assert_eq!(
        b.derived_keys(object),
        Bench::keys_in(object, second.dir(), &VIDEO_FILES)
    );

    // Only an admin of the collection may ask, and only for media that is processed.
    let bob = b.w.bob.as_caller();
    assert!(matches!(
        b.s.uploads().reprocess(&bob, b.w.lib, object),
        Err(MediaFailed::Refused(_))
    ));
    let file = b.upload("notes.pdf");
    assert_eq!(b.media(file).state, MediaState::Ready);
    assert_eq!(
        b.s.uploads().reprocess(&alice, b.w.lib, file).err(),
        Some(MediaFailed::NotProcessed)
    );
    assert_eq!(b.work("w1"), None);
}

#[test]
fn the_purge_deletes_a_long_deleted_objects_media_bytes_and_rows_and_nothing_sooner() {
    let b = bench();
    b.fake.probing(Ok(video_probe()));
    let object = b.upload("clip.mp4");
    assert_eq!(b.work("w1").map(|r| r.outcome), Some(Outcome::Ready));
    let prefix = StorageKey::parse(&format!("media/{object}")).unwrap();
    let stored = || {
        b.storage
            .inner
            .inventory()
            .0
            .into_iter()
            .filter(|k| k.is_under(&prefix))
            .count()
    };
    let files = stored();
    assert!(
        files > VIDEO_FILES.len(),
        "the source and the derived files: {files}"
    );
    b.w.h.store.remove_member(b.w.lib, object, b.now()).unwrap();

    // Within the 30-day restore window nothing goes.
    b.advance(medialib_domain::object::SOFT_DELETE_RETENTION_SECS);
    assert_eq!(b.s.uploads().purge_deleted_objects().unwrap(), 0);
    assert_eq!(stored(), files);
    assert!(b.w.h.store.object_any_state(object).unwrap().is_some());

    // After it, the bytes and the rows go.
    b.advance(1);
    assert_eq!(b.s.uploads().purge_deleted_objects().unwrap(), 1);
    assert_eq!(stored(), 0);
    assert!(b.w.h.store.object_any_state(object).unwrap().is_none());
    assert!(b.w.h.store.media(object).unwrap().is_none());
    assert_eq!(b.s.uploads().purge_deleted_objects().unwrap(), 0);
}
