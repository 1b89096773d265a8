//! Media processing under faults (issue 20), with `medialib worker` (and, for the scale-out,
//! `medialib serve`) as child processes of the built binary:
//!
//! - scale-out on PostgreSQL and Garage: two servers (`workers = 0`) and two workers on one
//!   database and one bucket; the worker that took the job is killed (`kill -9`)
//!   mid-transcode, the other finishes it once the lease ran out, the second server lists
//!   the files and delivers each of them, and exactly one derived set is recorded and
//!   stored;
//! - `kill -9` of the only worker mid-transcode, then a new one on the same machine: the job
//!   is taken again after the lease and finishes; what the dead attempt left (its work
//!   directory, files in its storage directory) is deleted and never listed;
//! - an ffmpeg that always fails: `failed` after `job_attempts` tries with the tool's words,
//!   and `reprocess` queues it again (a worker with a working ffmpeg then makes it ready);
//! - Garage stopped mid-processing: the attempt fails and is retried, nothing is `ready`
//!   without its files; Garage back, the job finishes and every listed file is in the bucket;
//! - an ffmpeg stopped with SIGSTOP: the watchdog ends it, the attempt fails with the stall
//!   message and the job is retried.
//!
//! Derived files are checked in the storage (the directory, or Garage through the S3 API),
//! and in the scale-out also fetched through the second server. The fault tests run on
//! SQLite and on PostgreSQL; `MEDIALIB_TEST_SKIP_FFMPEG=1` skips these where no ffmpeg is
//! installed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use medialib_adapters_storage::S3Storage;
use medialib_adapters_storage::testing::Garage;
use medialib_domain::media::StorageKey;
use medialib_ports::MediaStorage as _;
use reqwest::StatusCode;
use serde_json::Value;

use crate::api::{Backend, run};
use crate::helpers::{ServeProcess, WorkerProcess, alive, children_named, signal, sql};
use crate::processing::{clip, ffprobe, files, settled, settled_at, skip, upload, upload_at};
use crate::uploads::UploadApp;
use crate::uploads::faults::{garage, garage_off_runtime, garage_settings, on_garage_with};

medialib_adapters_diesel::backend_tests!(async on [postgres] with run:
    two_servers_and_two_workers_on_garage_survive_a_worker_killed_mid_transcode,
);

/// The fault tests of one worker, on both databases (a module of their own: the scale-out's
/// `postgres` module above has the same name).
mod one_worker {
    use super::*;

    medialib_adapters_diesel::backend_tests!(async on [sqlite, postgres] with run:
        a_worker_killed_mid_transcode_is_replaced_and_its_attempts_files_are_deleted,
        an_ffmpeg_that_always_fails_ends_failed_after_job_attempts_and_reprocess_queues_it,
        garage_stopped_mid_processing_fails_the_attempt_and_the_job_finishes_when_it_is_back,
        a_stopped_ffmpeg_is_ended_by_the_watchdog_and_the_job_retried,
    );
}

/// Settings as `medialib` reads them from its environment.
type Env = Vec<(String, String)>;

/// The environment that puts a medialib's media in `storage` (settings by name).
fn storage_env(storage: &[(&str, String)]) -> Env {
    storage
        .iter()
        .map(|(name, value)| (format!("MEDIALIB_{}", name.to_uppercase()), value.clone()))
        .collect()
}

/// The environment of a `medialib worker` on `storage`, working in `work`: a 5 s lease
/// (renewed every second while it reports progress) and 1 s before a retry; `more` are
/// further variables.
fn worker_env(storage: &[(&str, String)], work: &Path, more: &[(&str, &str)]) -> Env {
    let mut env = storage_env(storage);
    env.extend([
        ("MEDIALIB_WORK_DIR".into(), work.display().to_string()),
        ("MEDIALIB_JOB_LEASE".into(), "5".into()),
        ("MEDIALIB_JOB_RETRY_DELAY".into(), "1".into()),
    ]);
    env.extend(more.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    env
}

/// The storage settings of a directory.
fn in_dir(dir: &Path) -> [(&'static str, String); 1] {
    [("storage_url", format!("file://{}", dir.display()))]
}

/// Starts `medialib worker` off the async workers (it waits for the child's first lines).
async fn start_worker(db_url: &str, env: Env) -> WorkerProcess {
    let db_url = db_url.to_owned();
    tokio::task::spawn_blocking(move || {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        WorkerProcess::start(&db_url, &env)
    })
    .await
    .unwrap()
}

/// Starts `medialib serve` with `workers = 0` off the async workers.
async fn start_server(db_url: &str, env: Env) -> ServeProcess {
    let db_url = db_url.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut env: Vec<(&str, &str)> =
            env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        env.push(("MEDIALIB_WORKERS", "0"));
        ServeProcess::start_with_env(&db_url, &env)
    })
    .await
    .unwrap()
}

/// Polls the media call at `base` until `until` holds (at most `timeout`); `each` sees every
/// record on the way.
async fn wait_media(
    app: &UploadApp,
    base: &str,
    object: &str,
    what: &str,
    timeout: Duration,
    mut each: impl FnMut(&Value),
    until: impl Fn(&Value) -> bool,
) -> Value {
    let start = Instant::now();
    loop {
        let media = app.media_at(base, object).await;
        each(&media);
        if until(&media) {
            return media;
        }
        assert!(
            start.elapsed() < timeout,
            "not {what} within {timeout:?}: {media}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until one of the processes `workers` runs an ffmpeg: a video's first tool after
/// ffprobe, its transcode (seen in `/proc`, not through the media call, whose progress is
/// written at most once a second and can miss a short encode). Returns the worker's index and
/// the tool's pid. Fails when the media turns `ready` first, or after `timeout`.
async fn wait_for_transcode(
    app: &UploadApp,
    base: &str,
    object: &str,
    workers: &[u32],
    timeout: Duration,
) -> (usize, u32) {
    let start = Instant::now();
    let mut polls = 0u32;
    loop {
        for (n, &pid) in workers.iter().enumerate() {
            if let Some(&tool) = children_named(pid, "ffmpeg").first() {
                return (n, tool);
            }
        }
        polls += 1;
        if polls % 10 == 0 {
            let media = app.media_at(base, object).await;
            only_the_source_until_ready(&media);
            assert_ne!(media["state"], "ready", "the encode ended unseen: {media}");
        }
        assert!(
            start.elapsed() < timeout,
            "no worker ran ffmpeg within {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Checks that a media that is not `ready` lists its source alone: no file of an attempt that
/// did not finish is ever listed.
fn only_the_source_until_ready(media: &Value) {
    if media["state"] != "ready" {
        assert_eq!(
            media["files"].as_array().unwrap().len(),
            1,
            "a media that is not ready lists files besides its source: {media}"
        );
        assert_eq!(files(media, "source").len(), 1, "{media}");
    }
}

/// `kill -9` of `worker` mid-job. The ffmpeg it ran dies with it (the adapter starts its tools
/// with a parent-death signal, through util-linux's `setpriv`): checked, then any survivor is
/// ended by its process id so that it cannot slow the rest of the test. Returns how many
/// tools survived their worker by more than two seconds (0 where `setpriv` exists).
fn kill_worker(worker: &mut WorkerProcess) -> usize {
    let tools = children_named(worker.pid(), "ffmpeg");
    worker.kill_hard();
    let deadline = Instant::now() + Duration::from_secs(2);
    while tools.iter().any(|&pid| alive(pid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let survivors = tools
        .into_iter()
        .filter(|&pid| alive(pid) && signal(pid, "KILL"))
        .count();
    if std::path::Path::new("/usr/bin/setpriv").exists() {
        assert_eq!(survivors, 0, "an ffmpeg outlived its killed worker");
    }
    survivors
}

/// The job row of `object`: (holder, work_dir, attempts); `None` once the job ended.
fn job_row(db_url: &str, object: &str) -> Option<(String, String, u32)> {
    let row = sql(
        db_url,
        &format!("SELECT holder, work_dir, attempts FROM jobs WHERE object_id = '{object}'"),
    );
    let cols: Vec<&str> = row.split('|').collect();
    match cols[..] {
        [holder, dir, attempts] => Some((holder.into(), dir.into(), attempts.parse().unwrap())),
        _ => None,
    }
}

/// The path a delivery URL names after `/m/{object}/{expires}/{signature}/`.
fn url_file(url: &str) -> &str {
    let (_, rest) = url.split_once("/m/").unwrap();
    rest.splitn(4, '/').nth(3).unwrap()
}

/// What the storage holds under `media/{object}/`: each directory's files (paths within
/// it) with their sizes.
type Stored = BTreeMap<String, BTreeMap<String, u64>>;

fn stored(listing: impl IntoIterator<Item = (String, u64)>) -> Stored {
    let mut dirs = Stored::new();
    for (path, size) in listing {
        let (dir, file) = path.split_once('/').unwrap();
        dirs.entry(dir.to_owned())
            .or_default()
            .insert(file.to_owned(), size);
    }
    dirs
}

/// [`Stored`] in a storage directory.
fn stored_in_dir(root: &Path, object: &str) -> Stored {
    let base = root.join("media").join(object);
    stored(crate::uploads::files_under(&base).into_iter().map(|path| {
        let size = std::fs::metadata(base.join(&path)).unwrap().len();
        (path, size)
    }))
}

/// A blocking store on `garage`'s bucket, where `garage_settings` put medialib's media.
fn bucket(config: medialib_adapters_storage::S3Config) -> S3Storage {
    S3Storage::open(config).unwrap()
}

/// [`Stored`] in Garage's bucket, listed through the S3 API.
async fn stored_in_garage(garage: &Garage, object: &str) -> Stored {
    let config = garage.config("medialib");
    let prefix = format!("media/{object}");
    tokio::task::spawn_blocking(move || {
        let listed = bucket(config)
            .list(&StorageKey::parse(&prefix).unwrap())
            .unwrap();
        stored(listed.into_iter().map(|info| {
            let key = info.key.as_str();
            (key[prefix.len() + 1..].to_owned(), info.size)
        }))
    })
    .await
    .unwrap()
}

/// The bytes of `key` in Garage's bucket.
async fn garage_file(garage: &Garage, key: String) -> Vec<u8> {
    let config = garage.config("medialib");
    tokio::task::spawn_blocking(move || {
        let mut body = bucket(config)
            .read(&StorageKey::parse(&key).unwrap(), None)
            .unwrap()
            .body;
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut body, &mut bytes).unwrap();
        bytes
    })
    .await
    .unwrap()
}

/// Checks that `object` has one derived set, recorded and stored: the database names its
/// directory, the media call lists exactly the files that directory holds (with their
/// sizes), and the storage holds that directory and the source's, nothing else (no second
/// set, nothing of another attempt). Returns the set's directory.
fn check_one_set(db_url: &str, object: &str, media: &Value, stored: &Stored) -> String {
    let row = sql(
        db_url,
        &format!("SELECT source_key, derived FROM media WHERE object_id = '{object}'"),
    );
    let (source_key, derived) = row.split_once('|').unwrap();
    // `media/{object}/{dir}/source.mp4`; the set's text starts `v1 {dir} {duration}`.
    let source_dir = source_key.split('/').nth(2).unwrap();
    let set_dir = derived.split(' ').nth(1).unwrap();
    let dirs: BTreeSet<&str> = stored.keys().map(String::as_str).collect();
    assert_eq!(
        dirs,
        BTreeSet::from([source_dir, set_dir]),
        "the storage holds more than the source and one set: {stored:#?}"
    );
    let listed: BTreeMap<String, u64> = media["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["role"] != "source")
        .map(|f| {
            let path = url_file(f["url"].as_str().unwrap()).to_owned();
            (path, f["size"].as_u64().unwrap())
        })
        .collect();
    assert!(!listed.is_empty(), "no derived file listed: {media}");
    assert_eq!(
        &listed, &stored[set_dir],
        "the listed files are not the recorded set's"
    );
    set_dir.to_owned()
}

/// The path (within a set) of the 720p rendition the media call lists.
fn rendition_720p(media: &Value) -> String {
    let r = files(media, "rendition")
        .into_iter()
        .find(|r| r["height"] == 720)
        .unwrap_or_else(|| panic!("no 720p rendition: {media}"));
    url_file(r["url"].as_str().unwrap()).to_owned()
}

/// Checks that an encode is whole: its duration is the source's (`secs`).
fn assert_whole(bytes: &[u8], secs: f64) {
    let p = ffprobe(bytes);
    assert_eq!(p.codec, "h264");
    assert!((p.duration - secs).abs() <= 0.2, "{p:?}, not {secs} s");
}

async fn two_servers_and_two_workers_on_garage_survive_a_worker_killed_mid_transcode(b: Backend) {
    if skip() {
        return;
    }
    let garage = garage().await;
    let started = Instant::now();
    // alice, her token and library, on the database the processes share.
    let app = UploadApp::start(b).await;
    let db_url = app.api.app.db_url.clone();
    let storage = garage_settings(&garage);
    let servers = [
        start_server(&db_url, storage_env(&storage)).await,
        start_server(&db_url, storage_env(&storage)).await,
    ];
    // Two machines' workers: a work directory each.
    let work = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let mut workers = Vec::new();
    for w in &work {
        workers.push(start_worker(&db_url, worker_env(&storage, w.path(), &[])).await);
    }

    let dir = tempfile::tempdir().unwrap();
    let source = clip(dir.path(), "lecture.mp4", "1280x720", 20);
    let object = upload_at(&app, &servers[0].address, &source, "lecture.mp4").await;
    let pids: Vec<u32> = workers.iter().map(WorkerProcess::pid).collect();
    let (encoder, _) = wait_for_transcode(
        &app,
        &servers[0].address,
        &object,
        &pids,
        Duration::from_secs(120),
    )
    .await;
    let took: Vec<usize> = (0..2)
        .filter(|&n| {
            !workers[n]
                .logs
                .about("processing started", &object)
                .is_empty()
        })
        .collect();
    assert_eq!(took, [encoder], "one worker took the job, the one encoding");
    let (dead, alive_one) = (took[0], 1 - took[0]);
    let (_, dead_dir, attempts) = job_row(&db_url, &object).unwrap();
    assert_eq!(attempts, 1);
    let orphans = kill_worker(&mut workers[dead]);
    let killed = Instant::now();

    // The other worker takes the job once the lease ran out and finishes it; the second
    // server lists the files.
    let media = settled_at(
        &app,
        &servers[1].address,
        &object,
        only_the_source_until_ready,
    )
    .await;
    assert_eq!(media["state"], "ready", "{media}");
    assert_eq!(
        media["attempts"], 2,
        "the killed attempt and one more: {media}"
    );
    assert_eq!(media["error"], Value::Null);
    let logs = &workers[alive_one].logs;
    let taken = logs.about("processing started", &object);
    assert_eq!(taken.len(), 1, "{}", logs.text());
    assert_eq!(taken[0]["attempt"], 2);
    // The worker logs the end after its write, which the API may show first.
    logs.wait_for("processing ended", Duration::from_secs(10));
    let ended = logs.about("processing ended", &object);
    assert_eq!(ended.len(), 1, "{}", logs.text());
    assert_eq!(ended[0]["outcome"], "Ready", "{}", logs.text());

    // One set recorded and stored; nothing of the killed attempt.
    let stored = stored_in_garage(&garage, &object).await;
    let set_dir = check_one_set(&db_url, &object, &media, &stored);
    assert!(!stored.contains_key(&dead_dir), "{stored:#?}");

    // The second server serves every listed file (renditions, the HLS master and its
    // playlists, stills, sprites, the VTT, the SMIL) and the source, byte for byte what the
    // bucket holds; the 720p rendition is whole.
    let mut r720 = Vec::new();
    for file in media["files"].as_array().unwrap() {
        let url = file["url"].as_str().unwrap();
        assert!(url.starts_with(&servers[1].address), "{url}");
        let res = app.api.app.client.get(url).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{url}");
        let served = res.bytes().await.unwrap().to_vec();
        let expected = if file["role"] == "source" {
            std::fs::read(&source).unwrap()
        } else {
            let path = url_file(url);
            garage_file(&garage, format!("media/{object}/{set_dir}/{path}")).await
        };
        assert!(served == expected, "{url}: not the stored bytes");
        if file["role"] == "rendition" && file["height"] == 720 {
            r720 = served;
        }
    }
    assert!(!r720.is_empty(), "no 720p rendition listed: {media}");
    assert_whole(&r720, 20.0);
    println!(
        "scale-out [{b:?}]: worker {dead} killed mid-transcode ({orphans} orphaned ffmpeg left \
         running, ended by the test); worker {alive_one} finished attempt 2 {:.1?} after the \
         kill; one set of {} files in Garage; {:.1?} in all",
        killed.elapsed(),
        stored[&set_dir].len(),
        started.elapsed()
    );
    drop(workers);
    garage_off_runtime(garage).await;
}

async fn a_worker_killed_mid_transcode_is_replaced_and_its_attempts_files_are_deleted(b: Backend) {
    if skip() {
        return;
    }
    let media_dir = crate::helpers::media_dir();
    let work = tempfile::tempdir().unwrap();
    let storage = in_dir(media_dir.path());
    let app = UploadApp::start_with(b, |l| l.set(storage[0].0, storage[0].1.clone())).await;
    let db_url = app.api.app.db_url.clone();
    let base = app.api.app.address.clone();
    let env = worker_env(&storage, work.path(), &[]);
    let mut first = start_worker(&db_url, env.clone()).await;

    let dir = tempfile::tempdir().unwrap();
    let source = clip(dir.path(), "lecture.mp4", "1280x720", 20);
    let object = upload(&app, &source, "lecture.mp4").await;
    wait_for_transcode(
        &app,
        &base,
        &object,
        &[first.pid()],
        Duration::from_secs(120),
    )
    .await;
    let seen = app.media_at(&base, &object).await;
    let (_, dead_dir, _) = job_row(&db_url, &object).unwrap();
    let dead_work = work.path().join(format!("{object}-{dead_dir}"));
    assert!(
        dead_work.join("source").is_file(),
        "the attempt works in {}",
        dead_work.display()
    );
    let orphans = kill_worker(&mut first);
    assert!(
        dead_work.join("source").is_file(),
        "the dead attempt's work directory stays"
    );
    // What a worker killed while it stored its files leaves: the start of a set in the
    // attempt's directory, which no record names. (Planted by the test: the store step is
    // too short to kill a worker inside it on purpose.)
    let planted = media_dir
        .path()
        .join(format!("media/{object}/{dead_dir}/mp4/720p.mp4"));
    std::fs::create_dir_all(planted.parent().unwrap()).unwrap();
    std::fs::write(&planted, b"the first bytes of a rendition").unwrap();
    let stale = app.media(&object).await;
    assert_eq!(stale["state"], "processing", "{stale}");
    only_the_source_until_ready(&stale);

    // A new worker on the same machine (the same work directory).
    let second = start_worker(&db_url, env).await;
    let media = settled(&app, &object).await;
    only_the_source_until_ready(&media);
    assert_eq!(media["state"], "ready", "{media}");
    assert_eq!(media["attempts"], 2, "{media}");
    let taken = second.logs.about("processing started", &object);
    assert_eq!(taken.len(), 1, "{}", second.logs.text());
    assert_eq!(taken[0]["attempt"], 2);

    // The dead attempt's files are gone, from the storage and from the work directory.
    assert!(!planted.exists(), "the dead attempt's stored file stays");
    assert!(
        !dead_work.exists(),
        "the dead attempt's work directory stays: {:?}",
        crate::uploads::files_under(&dead_work)
    );
    assert_eq!(
        crate::uploads::files_under(work.path()),
        Vec::<String>::new(),
        "the work directory holds files of no attempt"
    );
    let stored = stored_in_dir(media_dir.path(), &object);
    let set_dir = check_one_set(&db_url, &object, &media, &stored);
    let r720 = std::fs::read(media_dir.path().join(format!(
        "media/{object}/{set_dir}/{}",
        rendition_720p(&media)
    )))
    .unwrap();
    assert_whole(&r720, 20.0);
    println!(
        "kill -9 [{b:?}]: the worker died at {}% of attempt 1 ({orphans} orphaned ffmpeg left \
         running, ended by the test); a new worker finished attempt 2; the dead attempt's work \
         directory and stored file were deleted",
        seen["progress"]
    );
}

async fn an_ffmpeg_that_always_fails_ends_failed_after_job_attempts_and_reprocess_queues_it(
    b: Backend,
) {
    if skip() {
        return;
    }
    let media_dir = crate::helpers::media_dir();
    let work = tempfile::tempdir().unwrap();
    let storage = in_dir(media_dir.path());
    let app = UploadApp::start_with(b, |l| l.set(storage[0].0, storage[0].1.clone())).await;
    let db_url = app.api.app.db_url.clone();

    // Fault injection: this worker finds an `ffmpeg` that always fails first on its PATH
    // (the tools are looked up in PATH, through `nice`); its ffprobe is still Debian's, so
    // the source probes fine and every encode fails, as a broken or missing codec would.
    let tools = tempfile::tempdir().unwrap();
    let fake = tools.path().join("ffmpeg");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'fake ffmpeg: this one always fails' >&2\nexit 1\n",
    )
    .unwrap();
    let mut permissions = std::fs::metadata(&fake).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&fake, permissions).unwrap();
    let path = format!(
        "{}:{}",
        tools.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let env = worker_env(
        &storage,
        work.path(),
        &[("MEDIALIB_JOB_ATTEMPTS", "2"), ("PATH", path.as_str())],
    );
    let mut broken = start_worker(&db_url, env).await;

    let dir = tempfile::tempdir().unwrap();
    let source = clip(dir.path(), "short.mp4", "854x480", 2);
    let object = upload(&app, &source, "short.mp4").await;
    let media = settled(&app, &object).await;
    assert_eq!(media["state"], "failed", "{media}");
    assert_eq!(media["attempts"], 2, "job_attempts tries: {media}");
    let error = media["error"].as_str().unwrap();
    assert!(
        error.starts_with("Processing failed 2 times; the last error: ffmpeg failed")
            && error.ends_with("fake ffmpeg: this one always fails"),
        "the tool's last words, readable: {error}"
    );
    let work_text = work.path().display().to_string();
    assert!(!error.contains(&work_text), "no paths: {error}");
    assert_eq!(media["files"].as_array().unwrap().len(), 1, "{media}");
    assert_eq!(broken.logs.about("processing started", &object).len(), 2);
    assert!(job_row(&db_url, &object).is_none(), "the job ended");
    let status = broken.terminate();
    assert!(status.success(), "the worker stopped cleanly: {status}");

    // reprocess queues it again, attempts afresh; a worker with a working ffmpeg makes it
    // ready.
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
    let queued = app.media(&object).await;
    assert_eq!(queued["state"], "queued", "{queued}");
    assert_eq!(queued["attempts"], 0, "{queued}");
    assert_eq!(queued["error"], Value::Null, "{queued}");
    assert!(job_row(&db_url, &object).is_some(), "a job again");
    let _fixed = start_worker(&db_url, worker_env(&storage, work.path(), &[])).await;
    let media = settled(&app, &object).await;
    assert_eq!(media["state"], "ready", "{media}");
    assert_eq!(media["attempts"], 1, "{media}");
    let stored = stored_in_dir(media_dir.path(), &object);
    check_one_set(&db_url, &object, &media, &stored);
}

async fn garage_stopped_mid_processing_fails_the_attempt_and_the_job_finishes_when_it_is_back(
    b: Backend,
) {
    if skip() {
        return;
    }
    let garage = garage().await;
    // The app's own worker (in-process), retrying fast and often enough for the outage.
    let app = on_garage_with(b, &garage, |l| {
        l.set("workers", "1")
            .set("job_retry_delay", "1")
            .set("job_attempts", "10")
            .set("job_lease", "30")
    })
    .await;
    let base = app.api.app.address.clone();
    let dir = tempfile::tempdir().unwrap();
    // Long enough that the encode is seen running before the store step begins.
    let source = clip(dir.path(), "talk.mp4", "1280x720", 10);
    let object = upload(&app, &source, "talk.mp4").await;
    // The worker runs in this process: its ffmpeg is this process's child.
    wait_for_transcode(
        &app,
        &base,
        &object,
        &[std::process::id()],
        Duration::from_secs(120),
    )
    .await;

    let mut garage = tokio::task::spawn_blocking(move || {
        let mut garage = garage;
        garage.stop();
        garage
    })
    .await
    .unwrap();
    // The attempt fails when it stores its files, the next when it reads the source: each is
    // queued again with its error, never `ready`.
    let mut errors = BTreeSet::new();
    let media = wait_media(
        &app,
        &base,
        &object,
        "failed twice while Garage is down",
        Duration::from_secs(120),
        |m| {
            assert_ne!(m["state"], "ready", "ready while the storage is down: {m}");
            assert_ne!(m["state"], "failed", "{m}");
            only_the_source_until_ready(m);
            if let Some(e) = m["error"].as_str() {
                errors.insert(e.to_owned());
            }
        },
        |m| m["state"] == "queued" && m["attempts"].as_u64().unwrap() >= 2,
    )
    .await;
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("writing to storage failed")),
        "the first attempt failed storing its files: {errors:?}"
    );
    // The media call shows people what failed, not the store's endpoint, bucket or keys.
    assert!(
        errors.iter().all(
            |e| e.ends_with("from storage failed: the media storage is unavailable")
                || e == "writing to storage failed: the media storage is unavailable"
        ),
        "{errors:?}"
    );

    let garage = tokio::task::spawn_blocking(move || {
        garage.restart().unwrap_or_else(|e| panic!("{e}"));
        garage
    })
    .await
    .unwrap();
    let done = settled(&app, &object).await;
    assert_eq!(done["state"], "ready", "{done}");
    assert_eq!(done["error"], Value::Null, "{done}");
    assert!(
        done["attempts"].as_u64().unwrap() > media["attempts"].as_u64().unwrap(),
        "{done}"
    );
    // Every listed file is in the bucket, and nothing else but the source.
    let stored = stored_in_garage(&garage, &object).await;
    let set_dir = check_one_set(&app.api.app.db_url, &object, &done, &stored);
    let r720 = garage_file(
        &garage,
        format!("media/{object}/{set_dir}/{}", rendition_720p(&done)),
    )
    .await;
    assert_whole(&r720, 10.0);
    println!(
        "storage outage [{b:?}]: errors while Garage was down: {errors:?}; ready after {} \
         attempts",
        done["attempts"]
    );
    garage_off_runtime(garage).await;
}

async fn a_stopped_ffmpeg_is_ended_by_the_watchdog_and_the_job_retried(b: Backend) {
    if skip() {
        return;
    }
    let media_dir = crate::helpers::media_dir();
    let work = tempfile::tempdir().unwrap();
    let storage = in_dir(media_dir.path());
    let app = UploadApp::start_with(b, |l| l.set(storage[0].0, storage[0].1.clone())).await;
    let db_url = app.api.app.db_url.clone();
    let base = app.api.app.address.clone();
    // Attempts to spare: on a loaded machine (CI builds beside the suite) ffprobe or ffmpeg
    // in the idle scheduling class can really go 3 s without progress, and three such
    // attempts failed the job once; the stall this test makes is the first attempt's.
    let env = worker_env(
        &storage,
        work.path(),
        &[
            ("MEDIALIB_JOB_STALL_TIMEOUT", "3"),
            ("MEDIALIB_JOB_ATTEMPTS", "10"),
        ],
    );
    let worker = start_worker(&db_url, env).await;

    let dir = tempfile::tempdir().unwrap();
    let source = clip(dir.path(), "talk.mp4", "1280x720", 10);
    let object = upload(&app, &source, "talk.mp4").await;
    // SIGSTOP the worker's ffmpeg: alive, silent, no progress.
    let (_, stopped) = wait_for_transcode(
        &app,
        &base,
        &object,
        &[worker.pid()],
        Duration::from_secs(120),
    )
    .await;
    assert!(
        signal(stopped, "STOP"),
        "the transcode ended before it was stopped"
    );
    // The watchdog counts from ffmpeg's last progress, a little before the SIGSTOP.
    let at = Instant::now();
    let retried = wait_media(
        &app,
        &base,
        &object,
        "retried after the stall",
        Duration::from_secs(60),
        |_| {},
        |m| m["error"].as_str().is_some(),
    )
    .await;
    let waited = at.elapsed();
    assert_eq!(
        retried["error"], "processing made no progress for 3 s and was stopped",
        "{retried}"
    );
    assert!(!alive(stopped), "the stopped ffmpeg was ended");
    let media = settled(&app, &object).await;
    assert_eq!(media["state"], "ready", "{media}");
    // Attempt 2 makes it ready, or a later one (see the attempts above).
    assert!(
        media["attempts"].as_u64().is_some_and(|n| n >= 2),
        "{media}"
    );
    assert_eq!(media["error"], Value::Null, "{media}");
    println!(
        "watchdog [{b:?}]: a stopped ffmpeg was ended and its attempt failed {waited:.1?} after SIGSTOP; attempt {} made it ready",
        media["attempts"]
    );
}
