//! Processing jobs in the database: the queue the workers take media from.
//!
//! One job per object. It is queued in the same step as the media record turns `queued` (a
//! finished upload, [`UploadRepository::finish_upload`](crate::UploadRepository::finish_upload),
//! or [`JobRepository::requeue`]), taken by one worker at a time under a lease the worker
//! extends while it works, and ended in the same step as the media record turns `ready`, back
//! to `queued` (a retry) or `failed`. Every claim and every re-queue bumps the job's
//! generation; a worker's writes name the generation it claimed and its attempt's directory,
//! so a worker whose lease another took over, or whose job was queued again meanwhile, changes
//! nothing. (The generation alone does not tell attempts apart for good: a job that ended, or
//! whose media was removed, is gone, and the next job of the same object counts from 0 again.)

use medialib_domain::media::derived::{DerivedDir, DerivedSet};
use medialib_domain::{ObjectId, ObjectType, Timestamp};

use crate::error::StoreError;
use crate::uploads::MediaRecord;

/// One claimed attempt of a job: what a worker's later writes name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobTicket {
    /// The object.
    pub object: ObjectId,
    /// The generation the claim gave the job.
    pub generation: u64,
    /// The directory the claim named ([`ClaimRequest::dir`], fresh for every attempt): with
    /// the generation, what tells this attempt from one of a later job of the same object,
    /// whose generations start over.
    pub dir: DerivedDir,
}

/// A job a worker took ([`JobRepository::claim_job`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedJob {
    /// What the worker's writes name.
    pub ticket: JobTicket,
    /// This attempt's number, from 1.
    pub attempt: u32,
    /// The object's type (what to derive).
    pub object_type: ObjectType,
    /// The media record as the claim left it (`processing`), with its source.
    pub media: MediaRecord,
    /// The directory an earlier attempt wrote to, when it differs from this one's: what that
    /// attempt left there belongs to no record and is the claimer's to delete.
    pub stale_dir: Option<DerivedDir>,
}

/// How a job ended ([`JobRepository::end_job`]).
#[derive(Debug, Clone, Copy)]
pub enum JobEnd<'a> {
    /// Every file is stored: the media is `ready` with these files, and the object's duration
    /// (`metadata.duration`) is the set's.
    Ready(&'a DerivedSet),
    /// The attempt failed and the job is tried again at `at`: the media is `queued` with the
    /// error.
    Retry {
        /// Why, for people.
        error: &'a str,
        /// Not before.
        at: Timestamp,
    },
    /// The worker is stopping: the job is due again now, this attempt uncounted, and the
    /// media `queued` as before the claim.
    Released,
    /// The job gave up: the media is `failed` with the error and no derived files.
    Failed {
        /// Why, for people.
        error: &'a str,
    },
}

/// The answer to [`JobRepository::end_job`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobEnded {
    /// Written; the derived files the media had before, when they are not the new ones (the
    /// caller deletes their bytes).
    Ended(Option<DerivedSet>),
    /// The ticket is no longer the job's (its lease was taken over, it was queued again, or the
    /// media was removed): nothing was written, and the attempt's files are the caller's to
    /// delete.
    Superseded,
}

/// What [`JobRepository::claim_job`] asks for.
#[derive(Debug, Clone, Copy)]
pub struct ClaimRequest<'a> {
    /// The worker's name.
    pub holder: &'a str,
    /// Now: jobs due by now whose lease (if any) ended before it are free.
    pub now: Timestamp,
    /// The lease's end.
    pub until: Timestamp,
    /// The directory this attempt will write to.
    pub dir: &'a DerivedDir,
}

/// How many jobs there are (metrics, health).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JobCounts {
    /// Waiting for a worker (due or backing off).
    pub waiting: u64,
    /// Under a live lease.
    pub running: u64,
}

/// The processing queue.
pub trait JobRepository: Send + Sync {
    /// Takes the job due longest (`run_at` ≤ now) that nobody holds a live lease on, in one
    /// step: the job's generation and attempts go up by one, its lease is `holder`'s until
    /// `until` and its directory `dir`; the media turns `processing` with progress 0 and the
    /// job's attempts. Of concurrent claimers, each job goes to one. `None` when no job is
    /// free.
    fn claim_job(&self, request: ClaimRequest<'_>) -> Result<Option<ClaimedJob>, StoreError>;

    /// Extends the lease of a claimed job to `until` and records its progress (0 to 99) on
    /// the media; `false`, with nothing written, when the ticket is no longer the job's or its
    /// lease ended before `now` (a worker that was silent past its lease stops: another may
    /// have been told the job is free).
    fn extend_job(
        &self,
        ticket: JobTicket,
        now: Timestamp,
        until: Timestamp,
        progress: u8,
    ) -> Result<bool, StoreError>;

    /// Ends a claimed attempt as `end` says, in one step with the media record (and, for
    /// [`JobEnd::Ready`], the object's duration and modification time, so that catalogs
    /// synchronised by time see the new images).
    fn end_job(
        &self,
        ticket: JobTicket,
        end: JobEnd<'_>,
        now: Timestamp,
    ) -> Result<JobEnded, StoreError>;

    /// Queues `object`'s media again (`reprocess`): when it has a stored source, the media
    /// turns `queued` with progress 0, no error and no attempts, and its job is due now with
    /// no attempts and a new generation (a worker busy with it is superseded). Returns the
    /// media record as written; `None` when the object has no media with a source.
    fn requeue(&self, object: ObjectId, now: Timestamp) -> Result<Option<MediaRecord>, StoreError>;

    /// How many jobs wait and run at `now`.
    fn job_counts(&self, now: Timestamp) -> Result<JobCounts, StoreError>;
}
