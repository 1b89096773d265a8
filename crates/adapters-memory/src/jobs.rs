//! `JobRepository`: the processing queue. One mutex makes each method one step, as each is one
//! statement or transaction in the diesel adapter (`adapters-diesel/src/store/jobs.rs`), whose
//! rules these mirror.

use medialib_domain::media::MediaState;
use medialib_domain::media::derived::DerivedDir;
use medialib_domain::{ObjectId, ObjectPatch, Timestamp};
use medialib_ports::{
    ClaimRequest, ClaimedJob, JobCounts, JobEnd, JobEnded, JobRepository, JobTicket, MediaRecord,
    StoreError,
};

use crate::MemoryStore;
use crate::state::State;

/// A `jobs` row.
#[derive(Debug, Clone)]
pub(crate) struct JobEntry {
    pub(crate) generation: u64,
    pub(crate) attempts: u32,
    pub(crate) run_at: Timestamp,
    pub(crate) lease: Option<(String, Timestamp)>,
    pub(crate) work_dir: Option<DerivedDir>,
    pub(crate) last_error: Option<String>,
}

impl State {
    /// Queues `object`'s job due at `at`: a new one, or the existing one with a new
    /// generation, no attempts and no lease (its directory stays, for the next claimer to
    /// clean).
    pub(crate) fn enqueue_job(&mut self, object: ObjectId, at: Timestamp) {
        let job = self
            .jobs
            .entry(object)
            .and_modify(|j| j.generation += 1)
            .or_insert(JobEntry {
                generation: 0,
                attempts: 0,
                run_at: at,
                lease: None,
                work_dir: None,
                last_error: None,
            });
        job.attempts = 0;
        job.run_at = at;
        job.lease = None;
        job.last_error = None;
    }

    /// The job a ticket names, when the ticket is still its own.
    fn ticketed(&mut self, ticket: JobTicket) -> Option<&mut JobEntry> {
        self.jobs
            .get_mut(&ticket.object)
            .filter(|j| j.generation == ticket.generation && j.lease.is_some())
    }
}

impl JobRepository for MemoryStore {
    fn claim_job(&self, request: ClaimRequest<'_>) -> Result<Option<ClaimedJob>, StoreError> {
        let ClaimRequest {
            holder,
            now,
            until,
            dir,
        } = request;
        let mut state = self.lock();
        // Mirrors the diesel adapter: ORDER BY run_at, object_id; free when no lease or an
        // ended one.
        let mut due: Vec<(Timestamp, ObjectId)> = state
            .jobs
            .iter()
            .filter(|(_, j)| j.run_at <= now && j.lease.as_ref().is_none_or(|(_, l)| *l < now))
            .map(|(o, j)| (j.run_at, *o))
            .collect();
        due.sort();
        let Some((_, object)) = due.first().copied() else {
            return Ok(None);
        };
        let (Some(record), Some(media)) = (
            state.objects.get(&object).map(|r| r.object.clone()),
            state.media.get(&object).cloned(),
        ) else {
            return Err(StoreError::Corrupt(format!(
                "job {object} has no object or no media"
            )));
        };
        let Some(job) = state.jobs.get_mut(&object) else {
            return Ok(None);
        };
        job.generation += 1;
        job.attempts += 1;
        job.lease = Some((holder.to_owned(), until));
        let stale_dir = job.work_dir.replace(dir.clone()).filter(|d| d != dir);
        let (generation, attempts) = (job.generation, job.attempts);
        let media = MediaRecord {
            state: MediaState::Processing,
            progress: 0,
            attempts,
            modified: now,
            ..media
        };
        state.media.insert(object, media.clone());
        Ok(Some(ClaimedJob {
            ticket: JobTicket { object, generation },
            attempt: attempts,
            object_type: record.object_type(),
            media,
            stale_dir,
        }))
    }

    fn extend_job(
        &self,
        ticket: JobTicket,
        until: Timestamp,
        progress: u8,
    ) -> Result<bool, StoreError> {
        let mut state = self.lock();
        let Some(job) = state.ticketed(ticket) else {
            return Ok(false);
        };
        if let Some((_, lease)) = &mut job.lease {
            *lease = until;
        }
        if let Some(m) = state.media.get_mut(&ticket.object) {
            m.progress = progress.min(99);
        }
        Ok(true)
    }

    fn end_job(
        &self,
        ticket: JobTicket,
        end: JobEnd<'_>,
        now: Timestamp,
    ) -> Result<JobEnded, StoreError> {
        let mut state = self.lock();
        let Some(job) = state.ticketed(ticket) else {
            return Ok(JobEnded::Superseded);
        };
        let object = ticket.object;
        let attempts = job.attempts;
        let Some(mut media) = state.media.get(&object).cloned() else {
            return Ok(JobEnded::Superseded);
        };
        let mut previous = None;
        match end {
            JobEnd::Ready(set) => {
                state.jobs.remove(&object);
                previous = media.derived.replace(set.clone());
                media.state = MediaState::Ready;
                media.progress = 100;
                media.error = None;
                if let Some(record) = state.objects.get_mut(&object) {
                    let patch = ObjectPatch {
                        duration: set.duration_secs(),
                        ..ObjectPatch::default()
                    };
                    record.object = record
                        .object
                        .clone()
                        .apply(patch, now)
                        .map_err(|e| StoreError::Unexpected(e.to_string()))?;
                }
            }
            JobEnd::Retry { error, at } => {
                if let Some(job) = state.jobs.get_mut(&object) {
                    job.lease = None;
                    job.run_at = at;
                    job.last_error = Some(error.to_owned());
                }
                media.state = MediaState::Queued;
                media.progress = 0;
                media.error = Some(error.to_owned());
            }
            JobEnd::Released => {
                let attempts = attempts.saturating_sub(1);
                if let Some(job) = state.jobs.get_mut(&object) {
                    job.lease = None;
                    job.run_at = now;
                    job.attempts = attempts;
                }
                media.state = MediaState::Queued;
                media.progress = 0;
                media.attempts = attempts;
            }
            JobEnd::Failed { error } => {
                state.jobs.remove(&object);
                previous = media.derived.take();
                media.state = MediaState::Failed;
                media.progress = 0;
                media.error = Some(error.to_owned());
            }
        }
        media.modified = now;
        state.media.insert(object, media);
        Ok(JobEnded::Ended(previous))
    }

    fn requeue(&self, object: ObjectId, now: Timestamp) -> Result<Option<MediaRecord>, StoreError> {
        let mut state = self.lock();
        let Some(media) = state.media.get_mut(&object).filter(|m| m.source.is_some()) else {
            return Ok(None);
        };
        media.state = MediaState::Queued;
        media.progress = 0;
        media.error = None;
        media.attempts = 0;
        media.modified = now;
        let media = media.clone();
        state.enqueue_job(object, now);
        Ok(Some(media))
    }

    fn job_counts(&self, now: Timestamp) -> Result<JobCounts, StoreError> {
        let state = self.lock();
        let running = state
            .jobs
            .values()
            .filter(|j| j.lease.as_ref().is_some_and(|(_, l)| *l >= now))
            .count() as u64;
        Ok(JobCounts {
            waiting: state.jobs.len() as u64 - running,
            running,
        })
    }
}
