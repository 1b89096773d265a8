//! Processing use cases: a worker takes a job, derives the files the domain's plan asks for from
//! the stored source, writes them to media storage and records the outcome (DECISIONS §7).
//!
//! One attempt: claim the job (the media turns `processing`) → copy the source into a work
//! directory of the attempt's own → probe → plan → run the plan's steps, each reporting
//! progress, which also extends the lease → store every file under `media/{object}/{dir}/` →
//! end the job (`ready` with the files, in one step with the media record). Any failure ends
//! the attempt as the [`RetryPolicy`] says: queued again after a backoff, or `failed` with a
//! message for people. The attempt's directory is fresh, and only a finished job's set is ever
//! recorded, so files of an attempt that died or was superseded are never served; the next
//! claimer, or the attempt itself, deletes them (and the work directory of an attempt that
//! died on the claimer's machine).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use medialib_domain::media::derive::{
    self, DerivePlan, MediaKind, Refusal, STILL_SIZES, SpritePlan, VideoPlan,
};
use medialib_domain::media::derived::{
    AfterFailure, DerivedDir, DerivedFile, DerivedPath, DerivedSet, FileRole, RetryPolicy, Step,
    abandoned_message, audio_paths, image_paths, video_paths,
};
use medialib_domain::media::documents::{smil, thumbnails_vtt};
use medialib_domain::media::probe::{Dimensions, MediaDuration};
use medialib_domain::media::progress::Percent;
use medialib_domain::media::{StorageKey, derive::AudioPlan};
use medialib_domain::{ObjectId, Timestamp};

use super::World;
use crate::error::StoreError;
use crate::jobs::{ClaimRequest, ClaimedJob, JobEnd, JobEnded, JobRepository, JobTicket};
use crate::processing::{MediaProcessor, ProbeError, ProcessError, ProgressSink};
use crate::storage::{MediaStorage, StorageError};
use crate::world::RandomExt as _;

/// How workers process.
#[derive(Debug, Clone)]
pub struct ProcessingSettings {
    /// How long a claimed job stays a worker's without word from it (`job_lease`); the worker
    /// extends it every third of this while it works.
    pub lease: Duration,
    /// How often a job is tried and how long it waits between tries (`job_attempts`).
    pub retry: RetryPolicy,
    /// Where attempts keep their work directories (the source's copy and the files made from
    /// it, deleted when the attempt ends).
    pub work_root: PathBuf,
}

impl Default for ProcessingSettings {
    fn default() -> Self {
        Self {
            lease: Duration::from_secs(60),
            retry: RetryPolicy::new(3, Duration::from_secs(30)),
            work_root: std::env::temp_dir().join("medialib-work"),
        }
    }
}

/// Processing: the worker's use cases.
#[derive(Clone)]
pub struct ProcessingServices {
    world: World,
    jobs: Arc<dyn JobRepository>,
    storage: Arc<dyn MediaStorage>,
    processor: Arc<dyn MediaProcessor>,
    settings: ProcessingSettings,
}

impl std::fmt::Debug for ProcessingServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessingServices")
            .field("settings", &self.settings)
            .field("processor", &self.processor)
            .finish_non_exhaustive()
    }
}

/// How an attempt ended ([`ProcessingServices::work_once`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The media is ready.
    Ready,
    /// The attempt failed; the job runs again at this time.
    Retrying {
        /// Why.
        error: String,
        /// When.
        at: Timestamp,
    },
    /// The job gave up; the media is failed.
    Failed {
        /// Why, as the `media` call shows it.
        error: String,
    },
    /// The worker was asked to stop: the job is queued again as it was.
    Released,
    /// Another worker or a re-queue took the job over; nothing of this attempt was kept.
    Superseded,
}

/// One attempt's report, for logs and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobReport {
    /// The object processed.
    pub object: ObjectId,
    /// Which attempt, from 1.
    pub attempt: u32,
    /// How it ended.
    pub outcome: Outcome,
}

/// Why an attempt failed.
#[derive(Debug)]
enum AttemptError {
    /// The source is not what its type says: for people, never retried.
    Refused(Refusal),
    /// The source cannot be decoded: for people, never retried.
    NotMedia(String),
    /// Nothing to do for this object, ever (its type has no processing): never retried.
    Permanent(String),
    /// Something another attempt may get past (a tool, storage, the disk).
    Transient(String),
    /// The lease was lost: another owns the job now.
    LeaseLost,
    /// The worker is stopping.
    Stopping,
}

impl AttemptError {
    fn transient(what: &str, e: impl std::fmt::Display) -> Self {
        Self::Transient(format!("{what}: {e}"))
    }
}

impl From<StoreError> for AttemptError {
    fn from(e: StoreError) -> Self {
        Self::transient("the database failed", e)
    }
}

/// What an attempt keeps between steps: its ticket, the lease and the progress it last wrote.
/// Shared by the attempt and its heartbeat thread.
struct Lease<'a> {
    services: &'a ProcessingServices,
    ticket: JobTicket,
    stop: &'a (dyn Fn() -> bool + Sync),
    /// When the lease was last extended, and the percentage written then.
    written: Mutex<(Timestamp, u8)>,
    lost: AtomicBool,
}

impl Lease<'_> {
    fn is_lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    /// Records `percent` when it changed since the last whole second, and extends the lease
    /// when a third of it has passed; `false` when the worker should stop (the lease is lost,
    /// or the worker is asked to stop).
    fn report(&self, percent: Percent) -> bool {
        if self.is_lost() || (self.stop)() {
            return false;
        }
        self.extend(Some(percent));
        !self.is_lost()
    }

    /// Extends the lease when a third of it has passed since the last extension, with the
    /// percentage last written: the heartbeat of steps that report no progress (copying a
    /// large source, packaging, storing).
    fn keep_alive(&self) {
        if !self.is_lost() {
            self.extend(None);
        }
    }

    fn extend(&self, percent: Option<Percent>) {
        let now = self.services.world.clock.now();
        let mut written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
        let (at, last) = *written;
        let third = i64::try_from(self.services.settings.lease.as_secs() / 3).unwrap_or(1);
        let due = now.epoch_seconds() >= at.epoch_seconds() + third.max(1);
        let value = percent.map_or(last, Percent::value);
        let changed = value != last && now.epoch_seconds() > at.epoch_seconds();
        if !(due || changed) {
            return;
        }
        match self.services.jobs.extend_job(
            self.ticket.clone(),
            now,
            now.plus_secs(self.services.settings.lease),
            value,
        ) {
            Ok(true) => *written = (now, value),
            Ok(false) => self.lost.store(true, Ordering::SeqCst),
            // A database hiccup is no reason to stop encoding: the lease has time left.
            Err(e) => {
                tracing::warn!(object = %self.ticket.object, error = %e, "extending a job's lease failed");
            }
        }
    }

    /// `report` at a step's boundary, as an error when the attempt should end.
    fn checkpoint(&self, step: Step, within: Percent) -> Result<(), AttemptError> {
        if self.report(step.overall(within)) {
            Ok(())
        } else if self.is_lost() {
            Err(AttemptError::LeaseLost)
        } else {
            Err(AttemptError::Stopping)
        }
    }

    /// Runs a processing step that reports its progress as `step`'s share of the whole (and may
    /// be told through it to stop); the step's failure is the attempt's.
    fn step<T>(
        &self,
        step: Step,
        run: impl FnOnce(&mut ProgressSink<'_>) -> Result<T, ProcessError>,
    ) -> Result<T, AttemptError> {
        let mut sink = |p: Percent| self.report(step.overall(p));
        run(&mut sink).map_err(|e| self.failed(e))
    }

    /// Makes a processing step's failure the attempt's.
    fn failed(&self, e: ProcessError) -> AttemptError {
        match e {
            ProcessError::NotMedia(m) => AttemptError::NotMedia(m),
            ProcessError::Stopped if self.is_lost() => AttemptError::LeaseLost,
            ProcessError::Stopped => AttemptError::Stopping,
            other => AttemptError::Transient(other.to_string()),
        }
    }
}

/// What an attempt derived in its work directory: each file's role and path there, and the
/// media's duration (none for an image).
struct Made {
    paths: Vec<(FileRole, String)>,
    duration: Option<MediaDuration>,
}

/// How often the heartbeat looks whether the lease needs extending.
const HEARTBEAT: Duration = Duration::from_millis(250);

impl ProcessingServices {
    /// The processing use cases.
    pub fn new(
        world: World,
        jobs: Arc<dyn JobRepository>,
        storage: Arc<dyn MediaStorage>,
        processor: Arc<dyn MediaProcessor>,
        settings: ProcessingSettings,
    ) -> Self {
        Self {
            world,
            jobs,
            storage,
            processor,
            settings,
        }
    }

    /// The settings.
    pub fn settings(&self) -> &ProcessingSettings {
        &self.settings
    }

    /// Takes one due job, if any, and works on it until it ends; `stop` is asked between and
    /// during steps (a worker shutting down). `Ok(None)` when no job is due.
    ///
    /// # Errors
    /// The database failed while claiming or ending the job (the job's lease then runs out
    /// and another attempt takes it).
    pub fn work_once(
        &self,
        holder: &str,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<Option<JobReport>, StoreError> {
        let dir = DerivedDir::parse(&self.world.random.hex(8))
            .map_err(|e| StoreError::Unexpected(e.to_string()))?;
        let now = self.world.clock.now();
        let Some(job) = self.jobs.claim_job(ClaimRequest {
            holder,
            now,
            until: now.plus_secs(self.settings.lease),
            dir: &dir,
        })?
        else {
            return Ok(None);
        };
        let object = job.ticket.object;
        if let Some(stale) = &job.stale_dir {
            self.delete_dir(object, stale);
            // A worker killed on this machine also left its work directory: the source's
            // copy and half-made files, which nothing else would ever delete.
            remove_stale_work(&self.settings.work_root, object, stale);
        }
        tracing::info!(%object, attempt = job.attempt, "processing started");
        let outcome = if self.settings.retry.exhausted(job.attempt) {
            self.give_up(&job, &abandoned_message(job.attempt - 1))?
        } else {
            let work = self
                .settings
                .work_root
                .join(format!("{object}-{}", dir.as_str()));
            let lease = Lease {
                services: self,
                ticket: job.ticket.clone(),
                stop,
                written: Mutex::new((now, 0)),
                lost: AtomicBool::new(false),
            };
            let done = AtomicBool::new(false);
            // The heartbeat keeps the lease through steps that report no progress.
            let result = std::thread::scope(|scope| {
                scope.spawn(|| {
                    while !done.load(Ordering::SeqCst) {
                        std::thread::sleep(HEARTBEAT);
                        lease.keep_alive();
                    }
                });
                let result = self.attempt(&job, &dir, &work, &lease);
                done.store(true, Ordering::SeqCst);
                result
            });
            if let Err(e) = fs::remove_dir_all(&work) {
                if e.kind() != io::ErrorKind::NotFound {
                    tracing::warn!(%object, error = %e, path = %work.display(), "a work directory stays behind");
                }
            }
            self.end(&job, &dir, result)?
        };
        tracing::info!(%object, attempt = job.attempt, ?outcome, "processing ended");
        Ok(Some(JobReport {
            object,
            attempt: job.attempt,
            outcome,
        }))
    }

    /// Records how an attempt ended, and deletes the files no record points to.
    fn end(
        &self,
        job: &ClaimedJob,
        dir: &DerivedDir,
        result: Result<DerivedSet, AttemptError>,
    ) -> Result<Outcome, StoreError> {
        let now = self.world.clock.now();
        let object = job.ticket.object;
        let (end, outcome, keep) = match &result {
            Ok(set) => (JobEnd::Ready(set), Outcome::Ready, true),
            Err(AttemptError::LeaseLost) => {
                self.delete_dir(object, dir);
                return Ok(Outcome::Superseded);
            }
            Err(AttemptError::Stopping) => (JobEnd::Released, Outcome::Released, false),
            Err(AttemptError::Refused(r)) => return self.fail(job, dir, r.to_string()),
            Err(AttemptError::NotMedia(m)) => {
                return self.fail(
                    job,
                    dir,
                    format!("This file cannot be processed: it is damaged or cut short ({m})."),
                );
            }
            Err(AttemptError::Permanent(m)) => return self.fail(job, dir, m.clone()),
            Err(AttemptError::Transient(m)) => {
                tracing::warn!(%object, attempt = job.attempt, error = %m, "a processing attempt failed");
                return match self.settings.retry.after_failure(job.attempt, true) {
                    AfterFailure::RetryIn(delay) => {
                        let at = now.plus_secs(delay);
                        self.finish(
                            job,
                            dir,
                            JobEnd::Retry { error: m, at },
                            Outcome::Retrying {
                                error: m.clone(),
                                at,
                            },
                            false,
                        )
                    }
                    AfterFailure::GiveUp => {
                        let error = format!(
                            "Processing failed {} times; the last error: {m}",
                            job.attempt
                        );
                        self.fail(job, dir, error)
                    }
                };
            }
        };
        self.finish(job, dir, end, outcome, keep)
    }

    /// Ends the job as failed for good with `error`, deleting the attempt's files.
    fn fail(
        &self,
        job: &ClaimedJob,
        dir: &DerivedDir,
        error: String,
    ) -> Result<Outcome, StoreError> {
        let end = JobEnd::Failed { error: &error };
        let outcome = Outcome::Failed {
            error: error.clone(),
        };
        self.finish(job, dir, end, outcome, false)
    }

    /// Ends the job as `end` says; deletes the attempt's files unless they are the new set,
    /// and the set the media had before when it was replaced.
    fn finish(
        &self,
        job: &ClaimedJob,
        dir: &DerivedDir,
        end: JobEnd<'_>,
        outcome: Outcome,
        keep: bool,
    ) -> Result<Outcome, StoreError> {
        let object = job.ticket.object;
        let ended = self
            .jobs
            .end_job(job.ticket.clone(), end, self.world.clock.now());
        let ended = match ended {
            Ok(e) => e,
            Err(e) => {
                if !keep {
                    self.delete_dir(object, dir);
                }
                return Err(e);
            }
        };
        match ended {
            JobEnded::Ended(previous) => {
                if !keep {
                    self.delete_dir(object, dir);
                }
                if let Some(old) = previous.filter(|p| p.dir() != dir) {
                    self.delete_dir(object, old.dir());
                }
                Ok(outcome)
            }
            JobEnded::Superseded => {
                self.delete_dir(object, dir);
                Ok(Outcome::Superseded)
            }
        }
    }

    /// Ends a job that may not run again.
    fn give_up(&self, job: &ClaimedJob, error: &str) -> Result<Outcome, StoreError> {
        let dir = job.stale_dir.clone();
        let outcome = Outcome::Failed {
            error: error.to_owned(),
        };
        match self.jobs.end_job(
            job.ticket.clone(),
            JobEnd::Failed { error },
            self.world.clock.now(),
        )? {
            JobEnded::Ended(previous) => {
                if let Some(old) = previous.filter(|p| Some(p.dir()) != dir.as_ref()) {
                    self.delete_dir(job.ticket.object, old.dir());
                }
                Ok(outcome)
            }
            JobEnded::Superseded => Ok(Outcome::Superseded),
        }
    }

    /// Deletes every file under `media/{object}/{dir}/`; failures are logged (the files are
    /// unreferenced and do no harm).
    fn delete_dir(&self, object: ObjectId, dir: &DerivedDir) {
        let Ok(prefix) = StorageKey::parse(&format!("media/{object}/{dir}")) else {
            return;
        };
        match self.storage.list(&prefix) {
            Ok(files) => {
                for f in files {
                    if let Err(e) = self.storage.delete(&f.key) {
                        tracing::warn!(key = %f.key, error = %e, "deleting an unreferenced derived file failed");
                    }
                }
            }
            Err(e) => {
                tracing::warn!(%prefix, error = %e, "listing an unreferenced derived directory failed");
            }
        }
    }

    /// One attempt: fetch, probe, plan, derive, store.
    fn attempt(
        &self,
        job: &ClaimedJob,
        dir: &DerivedDir,
        work: &Path,
        lease: &Lease<'_>,
    ) -> Result<DerivedSet, AttemptError> {
        let source = job
            .media
            .source
            .as_ref()
            .ok_or_else(|| AttemptError::Transient("the media has no source".into()))?;
        let Some(kind) = MediaKind::of(job.object_type) else {
            return Err(AttemptError::Permanent(format!(
                "objects of type {} are not processed",
                job.object_type.as_str()
            )));
        };
        fs::create_dir_all(work)
            .map_err(|e| AttemptError::transient("creating the work directory failed", e))?;
        // No extension: the tools find the format by content (see the processing port).
        let copy = work.join("source");
        self.fetch(&source.key, &copy)?;
        lease.checkpoint(Step::Fetch, Percent::new(80))?;
        let probe = self.processor.probe(&copy).map_err(|e| match e {
            ProbeError::NotMedia(detail) => {
                AttemptError::Refused(Refusal::unreadable(kind, &detail))
            }
            ProbeError::Tool(t) => AttemptError::Transient(t.to_string()),
        })?;
        let plan = derive::plan(kind, &probe).map_err(AttemptError::Refused)?;
        lease.checkpoint(Step::Fetch, Percent::DONE)?;
        let Made { paths, duration } = self.derive(&copy, &plan, work, lease)?;
        let files = self.store(job.ticket.object, dir, &plan, &paths, work, lease)?;
        DerivedSet::new(dir.clone(), files, duration).map_err(|e| {
            AttemptError::Transient(format!("the derived files are inconsistent: {e}"))
        })
    }

    /// Copies the stored source to `to`.
    fn fetch(&self, key: &StorageKey, to: &Path) -> Result<(), AttemptError> {
        let reading = self
            .storage
            .read(key, None)
            .map_err(|e| storage_failed("reading the source from storage failed", key, &e))?;
        let mut body = reading.body;
        let mut file = fs::File::create(to)
            .map_err(|e| AttemptError::transient("copying the source failed", e))?;
        io::copy(&mut body, &mut file)
            .and_then(|_| file.sync_all())
            .map_err(|e| AttemptError::transient("copying the source failed", e))
    }

    /// Makes the plan's files in `work` from `source`, step by step; the paths of the files
    /// made, and the media's duration.
    fn derive(
        &self,
        source: &Path,
        plan: &DerivePlan,
        work: &Path,
        lease: &Lease<'_>,
    ) -> Result<Made, AttemptError> {
        let processor = &self.processor;
        match plan {
            DerivePlan::Video(v) => {
                lease.step(Step::Encode, |sink| {
                    processor.transcode(source, v, work, sink)
                })?;
                lease.checkpoint(Step::Package, Percent::ZERO)?;
                processor
                    .package_hls(v, work)
                    .map_err(|e| lease.failed(e))?;
                processor
                    .video_stills(source, v, work)
                    .map_err(|e| lease.failed(e))?;
                write_document(work, VideoPlan::SMIL_PATH, &smil(v))?;
                write_document(work, SpritePlan::VTT_PATH, &thumbnails_vtt(v.sprites()))?;
                lease.checkpoint(Step::Pictures, Percent::ZERO)?;
                lease.step(Step::Pictures, |sink| processor.sprites(v, work, sink))?;
                lease.checkpoint(Step::Store, Percent::ZERO)?;
                Ok(Made {
                    paths: video_paths(v),
                    duration: Some(v.duration()),
                })
            }
            DerivePlan::Audio(a) => {
                lease.step(Step::Encode, |sink| {
                    processor.encode_audio(source, a, work, sink)
                })?;
                lease.checkpoint(Step::Pictures, Percent::ZERO)?;
                let waveform = lease.step(Step::Pictures, |sink| {
                    processor.waveform(source, a, work, sink)
                })?;
                write_document(work, AudioPlan::WAVEFORM_PATH, &waveform.to_json())?;
                lease.checkpoint(Step::Store, Percent::ZERO)?;
                Ok(Made {
                    paths: audio_paths(),
                    duration: Some(a.duration()),
                })
            }
            DerivePlan::Image(i) => {
                processor
                    .image_stills(source, i, work)
                    .map_err(|e| lease.failed(e))?;
                lease.checkpoint(Step::Pictures, Percent::DONE)?;
                Ok(Made {
                    paths: image_paths(),
                    duration: None,
                })
            }
        }
    }

    /// Writes every planned file to storage and describes it.
    fn store(
        &self,
        object: ObjectId,
        dir: &DerivedDir,
        plan: &DerivePlan,
        paths: &[(FileRole, String)],
        work: &Path,
        lease: &Lease<'_>,
    ) -> Result<Vec<DerivedFile>, AttemptError> {
        let mut files = Vec::with_capacity(paths.len());
        for (n, (role, path)) in paths.iter().enumerate() {
            let derived = DerivedPath::parse(path)
                .map_err(|e| AttemptError::Transient(format!("the plan names a bad path: {e}")))?;
            let key = StorageKey::parse(&format!("media/{object}/{dir}/{path}"))
                .map_err(|e| AttemptError::Transient(format!("no storage key for {path}: {e}")))?;
            let local = work.join(path);
            let mut file = fs::File::open(&local).map_err(|e| {
                AttemptError::Transient(format!("the processor made no {path}: {e}"))
            })?;
            let info = self.storage.put(&key, &mut file).map_err(|e| match e {
                StorageError::NotFound => storage_failed("storage refused a file", &key, &e),
                other => storage_failed("writing to storage failed", &key, &other),
            })?;
            let (dimensions, bitrate) = describe(plan, *role, path);
            files.push(DerivedFile {
                role: *role,
                path: derived,
                size: info.size,
                dimensions,
                bitrate,
            });
            let share = u8::try_from((n + 1) * 100 / paths.len()).unwrap_or(100);
            lease.checkpoint(Step::Store, Percent::new(share))?;
        }
        Ok(files)
    }
}

/// The picture size and bitrate the `media` call and the records show for a file.
fn describe(plan: &DerivePlan, role: FileRole, path: &str) -> (Option<Dimensions>, Option<u32>) {
    match (plan, role) {
        (
            DerivePlan::Video(v),
            FileRole::Rendition | FileRole::HlsPlaylist | FileRole::HlsMedia,
        ) => v
            .renditions()
            .iter()
            .find(|r| {
                path == r.mp4_path() || path == r.hls_playlist_path() || path == r.hls_media_path()
            })
            .map_or((None, None), |r| (Some(r.size()), Some(r.bitrate()))),
        (DerivePlan::Video(v), FileRole::Sprite) => (Some(v.sprites().sheet_size()), None),
        (DerivePlan::Audio(a), FileRole::Rendition) => (None, Some(a.encoding().kbps() * 1000)),
        (_, FileRole::Still) => (
            STILL_SIZES
                .into_iter()
                .find(|s| path.contains(&format!("/{s}."))),
            None,
        ),
        _ => (None, None),
    }
}

/// A storage failure as the attempt's error, which the media call shows: what failed and how,
/// in the port's words; the store's own (its endpoint, bucket and key, a path) go to the log.
fn storage_failed(what: &str, key: &StorageKey, e: &StorageError) -> AttemptError {
    tracing::warn!(%key, error = %e, "{what}");
    let how = match e {
        StorageError::NotFound | StorageError::OutOfRange | StorageError::Full => e.to_string(),
        StorageError::Unavailable(_) => "the media storage is unavailable".to_owned(),
        StorageError::Corrupt(_) | StorageError::Unexpected(_) => {
            "unexpected media storage error".to_owned()
        }
    };
    AttemptError::Transient(format!("{what}: {how}"))
}

/// Deletes the work directory a dead attempt of `object` that wrote to `dir` left under
/// `root` (the one `work_once` names), if it is there; a failure is logged.
fn remove_stale_work(root: &Path, object: ObjectId, dir: &DerivedDir) {
    let work = root.join(format!("{object}-{}", dir.as_str()));
    if let Err(e) = fs::remove_dir_all(&work) {
        if e.kind() != io::ErrorKind::NotFound {
            tracing::warn!(%object, error = %e, path = %work.display(), "a work directory stays behind");
        }
    }
}

/// Writes a document the domain made at `path` under `work`.
fn write_document(work: &Path, path: &str, text: &str) -> Result<(), AttemptError> {
    let target = work.join(path);
    if let Some(parent) = target.parent() {
        fs::create_dir_all(parent)
            .map_err(|e| AttemptError::transient("writing a document failed", e))?;
    }
    fs::write(&target, text).map_err(|e| AttemptError::transient("writing a document failed", e))
}
