//! `JobRepository`: the processing queue in the `jobs` table.
//!
//! A claim picks the due job with no live lease (on PostgreSQL `FOR UPDATE SKIP LOCKED`, so
//! concurrent workers take different jobs instead of queueing on one row; SQLite's write
//! transactions are serial already) and updates it by its generation in the same
//! transaction. Every later write of a worker is conditional on the generation and the
//! directory it claimed (`WHERE generation = … AND work_dir = … AND holder IS NOT NULL`: a new
//! row starts its generations over, the directory is fresh for every attempt), so a worker that
//! lost its lease, or whose job was queued again, changes nothing; the outcome and the media row
//! are written in one transaction.

use diesel::prelude::*;
use diesel::{PgConnection, SqliteConnection};
use medialib_domain::media::MediaState;
use medialib_domain::media::derived::{DerivedDir, DerivedSet};
use medialib_domain::{ObjectId, ObjectType, Timestamp};
use medialib_ports::{
    ClaimRequest, ClaimedJob, JobCounts, JobEnd, JobEnded, JobRepository, JobTicket, MediaRecord,
    StoreError,
};

use super::DieselStore;
use super::rows::{corrupt, object_id};
use super::uploads::MediaRow;
use crate::error::DbError;
use crate::macros::{with_conn, with_tx};
use crate::schema::{jobs, media, memberships, objects};

/// Queues `$object`'s job due at `$at` (epoch seconds) in the caller's transaction: a new row,
/// or the existing one with a new generation, no attempts, no lease and no error (its
/// `work_dir` stays, for the next claimer to clean).
macro_rules! enqueue_job {
    ($conn:ident, $object:expr, $at:expr) => {{
        use $crate::schema::jobs;
        let at: i64 = $at;
        diesel::insert_into(jobs::table)
            .values((
                jobs::object_id.eq($object),
                jobs::generation.eq(0_i64),
                jobs::attempts.eq(0),
                jobs::run_at.eq(at),
                jobs::created_at.eq(at),
            ))
            .on_conflict(jobs::object_id)
            .do_update()
            .set((
                jobs::generation.eq(jobs::generation + 1_i64),
                jobs::attempts.eq(0),
                jobs::run_at.eq(at),
                jobs::holder.eq(None::<String>),
                jobs::lease_until.eq(None::<i64>),
                jobs::last_error.eq(None::<String>),
            ))
            .execute($conn)?;
    }};
}

pub(crate) use enqueue_job;

/// The job a claim picks: the one due longest with no live lease, locked against other
/// claimers where the backend needs it.
trait PickJob {
    /// `(object_id, generation, work_dir)` of the job to claim.
    fn pick_job(&mut self, now: i64) -> QueryResult<Option<(String, i64, Option<String>)>>;
}

/// Due by `now`, and nobody's or with a lease that ended.
macro_rules! due_and_free {
    ($now:expr) => {
        jobs::table
            .filter(jobs::run_at.le($now))
            .filter(jobs::holder.is_null().or(jobs::lease_until.lt($now)))
            .order((jobs::run_at.asc(), jobs::object_id.asc()))
            .select((jobs::object_id, jobs::generation, jobs::work_dir))
    };
}

impl PickJob for SqliteConnection {
    fn pick_job(&mut self, now: i64) -> QueryResult<Option<(String, i64, Option<String>)>> {
        due_and_free!(now).first(self).optional()
    }
}

impl PickJob for PgConnection {
    fn pick_job(&mut self, now: i64) -> QueryResult<Option<(String, i64, Option<String>)>> {
        due_and_free!(now)
            .for_update()
            .skip_locked()
            .first(self)
            .optional()
    }
}

fn generation(n: i64) -> Result<u64, StoreError> {
    u64::try_from(n).map_err(|e| corrupt("job generation", e))
}

fn signed_generation(n: u64) -> Result<i64, StoreError> {
    i64::try_from(n).map_err(|_| StoreError::Unexpected("job generation out of range".into()))
}

fn work_dir(s: Option<String>) -> Result<Option<DerivedDir>, StoreError> {
    s.as_deref()
        .map(DerivedDir::parse)
        .transpose()
        .map_err(|e| corrupt("job work_dir", e))
}

/// What a claim read and wrote, before it is parsed outside the transaction.
struct ClaimRows {
    object: String,
    generation: i64,
    attempts: i32,
    stale: Option<String>,
    object_type: String,
    media: MediaRow,
}

/// What `end_job` read: the media row as it was (its derived files, for the caller to delete).
fn previous_derived(row: &MediaRow) -> Result<Option<DerivedSet>, StoreError> {
    row.derived
        .as_deref()
        .map(DerivedSet::from_text)
        .transpose()
        .map_err(|e| corrupt("media derived", e))
}

impl JobRepository for DieselStore {
    fn claim_job(&self, request: ClaimRequest<'_>) -> Result<Option<ClaimedJob>, StoreError> {
        let ClaimRequest {
            holder,
            now,
            until,
            dir,
        } = request;
        let now_s = now.epoch_seconds();
        let r: Result<Option<ClaimRows>, DbError> = with_tx!(self.db, conn => {
            let Some((object, picked, stale)) = conn.pick_job(now_s)? else {
                return Ok(None);
            };
            let (generation, attempts): (i64, i32) = diesel::update(
                jobs::table.find(&object).filter(jobs::generation.eq(picked)),
            )
            .set((
                jobs::generation.eq(jobs::generation + 1_i64),
                jobs::attempts.eq(jobs::attempts + 1),
                jobs::holder.eq(holder),
                jobs::lease_until.eq(until.epoch_seconds()),
                jobs::work_dir.eq(dir.as_str()),
            ))
            .returning((jobs::generation, jobs::attempts))
            .get_result(conn)?;
            let media: Option<MediaRow> = diesel::update(media::table.find(&object))
                .set((
                    media::state.eq(MediaState::Processing.as_str()),
                    media::progress.eq(0),
                    media::attempts.eq(attempts),
                    media::modified_at.eq(now_s),
                ))
                .returning(MediaRow::as_returning())
                .get_result(conn)
                .optional()?;
            let object_type: Option<String> = objects::table
                .find(&object)
                .select(objects::object_type)
                .first(conn)
                .optional()?;
            let (Some(media), Some(object_type)) = (media, object_type) else {
                return Err(DbError::Store(StoreError::Corrupt(format!(
                    "job {object} has no object or no media"
                ))));
            };
            Ok(Some(ClaimRows { object, generation, attempts, stale, object_type, media }))
        });
        let Some(rows) = r? else {
            return Ok(None);
        };
        let stale_dir = work_dir(rows.stale)?.filter(|d| d != dir);
        let attempt = u32::try_from(rows.attempts).map_err(|e| corrupt("job attempts", e))?;
        Ok(Some(ClaimedJob {
            ticket: JobTicket {
                object: object_id(&rows.object)?,
                generation: generation(rows.generation)?,
                dir: dir.clone(),
            },
            attempt,
            object_type: ObjectType::parse(&rows.object_type)
                .map_err(|e| corrupt("object type", e))?,
            media: rows.media.into_domain()?,
            stale_dir,
        }))
    }

    fn extend_job(
        &self,
        ticket: JobTicket,
        now: Timestamp,
        until: Timestamp,
        progress: u8,
    ) -> Result<bool, StoreError> {
        let o = ticket.object.to_string();
        let g = signed_generation(ticket.generation)?;
        let r: Result<bool, DbError> = with_tx!(self.db, conn => {
            let n = diesel::update(
                jobs::table
                    .find(&o)
                    .filter(jobs::generation.eq(g))
                    .filter(jobs::work_dir.eq(ticket.dir.as_str()))
                    .filter(jobs::holder.is_not_null())
                    .filter(jobs::lease_until.ge(now.epoch_seconds())),
            )
            .set(jobs::lease_until.eq(until.epoch_seconds()))
            .execute(conn)?;
            if n == 0 {
                return Ok(false);
            }
            diesel::update(media::table.find(&o))
                .set(media::progress.eq(i32::from(progress.min(99))))
                .execute(conn)?;
            Ok(true)
        });
        Ok(r?)
    }

    fn end_job(
        &self,
        ticket: JobTicket,
        end: JobEnd<'_>,
        now: Timestamp,
    ) -> Result<JobEnded, StoreError> {
        let o = ticket.object.to_string();
        let g = signed_generation(ticket.generation)?;
        let now_s = now.epoch_seconds();
        let derived = match end {
            JobEnd::Ready(set) => Some(set.to_text()),
            _ => None,
        };
        let duration = match end {
            JobEnd::Ready(set) => set.duration_secs().map(|d| i64::from(d.seconds())),
            _ => None,
        };
        let r: Result<Option<MediaRow>, DbError> = with_tx!(self.db, conn => {
            let ours = jobs::table
                .find(&o)
                .filter(jobs::generation.eq(g))
                .filter(jobs::work_dir.eq(ticket.dir.as_str()))
                .filter(jobs::holder.is_not_null());
            let n = match end {
                JobEnd::Ready(_) | JobEnd::Failed { .. } => diesel::delete(ours).execute(conn)?,
                JobEnd::Retry { error, at } => diesel::update(ours)
                    .set((
                        jobs::holder.eq(None::<String>),
                        jobs::lease_until.eq(None::<i64>),
                        jobs::run_at.eq(at.epoch_seconds()),
                        jobs::last_error.eq(error),
                    ))
                    .execute(conn)?,
                JobEnd::Released => diesel::update(ours)
                    .set((
                        jobs::holder.eq(None::<String>),
                        jobs::lease_until.eq(None::<i64>),
                        jobs::run_at.eq(now_s),
                        jobs::attempts.eq(jobs::attempts - 1),
                    ))
                    .execute(conn)?,
            };
            if n == 0 {
                return Ok(None);
            }
            let previous: MediaRow = media::table
                .find(&o)
                .select(MediaRow::as_select())
                .first(conn)?;
            match end {
                JobEnd::Ready(_) => {
                    diesel::update(media::table.find(&o))
                        .set((
                            media::state.eq(MediaState::Ready.as_str()),
                            media::progress.eq(100),
                            media::error.eq(None::<String>),
                            media::derived.eq(derived.as_deref()),
                            media::modified_at.eq(now_s),
                        ))
                        .execute(conn)?;
                    let modified: i64 = objects::table
                        .find(&o)
                        .select(objects::modified_at)
                        .first(conn)?;
                    let modified = modified.max(now_s);
                    diesel::update(objects::table.find(&o))
                        .set(objects::modified_at.eq(modified))
                        .execute(conn)?;
                    if let Some(seconds) = duration {
                        diesel::update(objects::table.find(&o))
                            .set(objects::duration.eq(seconds))
                            .execute(conn)?;
                    }
                    diesel::update(memberships::table.filter(memberships::member_id.eq(&o)))
                        .set(memberships::member_modified_at.eq(modified))
                        .execute(conn)?;
                }
                JobEnd::Retry { error, .. } => {
                    diesel::update(media::table.find(&o))
                        .set((
                            media::state.eq(MediaState::Queued.as_str()),
                            media::progress.eq(0),
                            media::error.eq(error),
                            media::modified_at.eq(now_s),
                        ))
                        .execute(conn)?;
                }
                JobEnd::Released => {
                    diesel::update(media::table.find(&o))
                        .set((
                            media::state.eq(MediaState::Queued.as_str()),
                            media::progress.eq(0),
                            media::attempts.eq(media::attempts - 1),
                            media::modified_at.eq(now_s),
                        ))
                        .execute(conn)?;
                }
                JobEnd::Failed { error } => {
                    diesel::update(media::table.find(&o))
                        .set((
                            media::state.eq(MediaState::Failed.as_str()),
                            media::progress.eq(0),
                            media::error.eq(error),
                            media::derived.eq(None::<String>),
                            media::modified_at.eq(now_s),
                        ))
                        .execute(conn)?;
                }
            }
            Ok(Some(previous))
        });
        let Some(previous) = r? else {
            return Ok(JobEnded::Superseded);
        };
        Ok(JobEnded::Ended(match end {
            JobEnd::Ready(_) | JobEnd::Failed { .. } => previous_derived(&previous)?,
            JobEnd::Retry { .. } | JobEnd::Released => None,
        }))
    }

    fn requeue(&self, object: ObjectId, now: Timestamp) -> Result<Option<MediaRecord>, StoreError> {
        let o = object.to_string();
        let now_s = now.epoch_seconds();
        let r: Result<Option<MediaRow>, DbError> = with_tx!(self.db, conn => {
            let row: Option<MediaRow> = diesel::update(
                media::table.find(&o).filter(media::source_key.is_not_null()),
            )
            .set((
                media::state.eq(MediaState::Queued.as_str()),
                media::progress.eq(0),
                media::error.eq(None::<String>),
                media::attempts.eq(0),
                media::modified_at.eq(now_s),
            ))
            .returning(MediaRow::as_returning())
            .get_result(conn)
            .optional()?;
            if row.is_some() {
                enqueue_job!(conn, &o, now_s);
            }
            Ok(row)
        });
        r?.map(MediaRow::into_domain).transpose()
    }

    fn job_counts(&self, now: Timestamp) -> Result<JobCounts, StoreError> {
        let now_s = now.epoch_seconds();
        let (all, running): (i64, i64) = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                let all: i64 = jobs::table.count().get_result(conn)?;
                let running: i64 = jobs::table
                    .filter(jobs::holder.is_not_null())
                    .filter(jobs::lease_until.ge(now_s))
                    .count()
                    .get_result(conn)?;
                Ok((all, running))
            })
        })()?;
        let count = |n: i64| u64::try_from(n).map_err(|e| corrupt("job count", e));
        Ok(JobCounts {
            waiting: count(all - running)?,
            running: count(running)?,
        })
    }
}
