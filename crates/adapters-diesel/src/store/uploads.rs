//! `UploadRepository`: uploads in progress (one row per object, with its write lock), each
//! object's media, and the key delivery URLs are signed with.
//!
//! The lock is taken and checked by conditional statements, never by a read followed by a
//! write: `lock_upload` is one `UPDATE … WHERE nobody or an expired lease or the same holder
//! holds it … RETURNING`, so of two concurrent callers one wins on either backend.

use std::fmt::Write as _;

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Integer, Text};
use medialib_domain::media::derived::DerivedSet;
use medialib_domain::media::{FileName, MediaState, ResumableSha256, StorageKey, UploadProgress};
use medialib_domain::{MediaObject, ObjectId, Timestamp, hex};
use medialib_ports::{
    CreateObjectError, Finish, LockRequest, MediaRecord, NewMedia, Progress, SourceFile, Staging,
    StoreError, UploadLock, UploadRecord, UploadRepository,
};

use super::Locks as _;
use super::fixed::{Fixed, FixedSql};
use super::jobs::enqueue_job;
use super::media::create_member;
use super::rows::{corrupt, object_id, ts, user_id};
use super::{DieselStore, flatten};
use crate::error::DbError;
use crate::macros::{with_conn, with_tx, with_write};
use crate::schema::{jobs, media, memberships, objects, organization, uploads};

/// An `uploads` row.
#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = uploads)]
struct UploadRow {
    object_id: String,
    owner_id: String,
    length: i64,
    offset_bytes: i64,
    storage_key: String,
    staging_state: String,
    sha256_state: String,
    filename: Option<String>,
    content_type: Option<String>,
    created_at: i64,
    expires_at: i64,
    lock_holder: Option<String>,
    lock_until: Option<i64>,
}

impl UploadRow {
    /// A new upload's row: nobody holds its lock.
    fn from_domain(u: &UploadRecord) -> Result<Self, StoreError> {
        Ok(Self {
            object_id: u.object.to_string(),
            owner_id: u.owner.to_string(),
            length: signed("length", u.progress.length)?,
            offset_bytes: signed("offset", u.progress.offset)?,
            storage_key: u.staging.key.as_str().to_owned(),
            staging_state: u.staging.state.clone(),
            sha256_state: u.hash.to_text(),
            filename: u.filename.as_ref().map(|f| f.as_str().to_owned()),
            content_type: u.content_type.clone(),
            created_at: u.created.epoch_seconds(),
            expires_at: u.progress.expires.epoch_seconds(),
            lock_holder: None,
            lock_until: None,
        })
    }

    fn into_domain(self) -> Result<UploadRecord, StoreError> {
        Ok(UploadRecord {
            object: object_id(&self.object_id)?,
            owner: user_id(&self.owner_id)?,
            progress: UploadProgress {
                length: unsigned("length", self.length)?,
                offset: unsigned("offset_bytes", self.offset_bytes)?,
                expires: ts(self.expires_at),
            },
            staging: Staging {
                key: storage_key(&self.storage_key)?,
                state: self.staging_state,
            },
            hash: ResumableSha256::from_text(&self.sha256_state)
                .map_err(|e| corrupt("sha256_state", e))?,
            filename: file_name(self.filename.as_deref())?,
            content_type: self.content_type,
            created: ts(self.created_at),
        })
    }
}

/// A `media` row.
#[derive(Debug, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = media, primary_key(object_id), treat_none_as_null = true)]
pub(super) struct MediaRow {
    object_id: String,
    state: String,
    progress: i32,
    error: Option<String>,
    attempts: i32,
    source_key: Option<String>,
    source_filename: Option<String>,
    source_size: Option<i64>,
    source_sha256: Option<String>,
    source_content_type: Option<String>,
    modified_at: i64,
    /// The derived files (`DerivedSet` as text).
    pub(super) derived: Option<String>,
}

impl MediaRow {
    fn from_domain(m: &MediaRecord) -> Result<Self, StoreError> {
        let source = m.source.as_ref();
        Ok(Self {
            object_id: m.object.to_string(),
            state: m.state.as_str().to_owned(),
            progress: i32::from(m.progress),
            error: m.error.clone(),
            attempts: i32::try_from(m.attempts)
                .map_err(|_| StoreError::Unexpected("media attempts out of range".into()))?,
            source_key: source.map(|s| s.key.as_str().to_owned()),
            source_filename: source
                .and_then(|s| s.filename.as_ref().map(|f| f.as_str().to_owned())),
            source_size: source.map(|s| signed("source size", s.size)).transpose()?,
            source_sha256: source.map(|s| hex::lower(&s.sha256)),
            source_content_type: source.map(|s| s.content_type.clone()),
            modified_at: m.modified.epoch_seconds(),
            derived: m.derived.as_ref().map(DerivedSet::to_text),
        })
    }

    pub(super) fn into_domain(self) -> Result<MediaRecord, StoreError> {
        let derived = self
            .derived
            .as_deref()
            .map(DerivedSet::from_text)
            .transpose()
            .map_err(|e| corrupt("media derived", e))?;
        let source = match (
            self.source_key,
            self.source_size,
            self.source_sha256,
            self.source_content_type,
        ) {
            (None, None, None, None) if self.source_filename.is_none() => None,
            (Some(key), Some(size), Some(sha256), Some(content_type)) => Some(SourceFile {
                key: storage_key(&key)?,
                filename: file_name(self.source_filename.as_deref())?,
                size: unsigned("source_size", size)?,
                sha256: from_hex(&sha256)
                    .and_then(|b| <[u8; 32]>::try_from(b).ok())
                    .ok_or_else(|| corrupt("source_sha256", "not 64 hex digits"))?,
                content_type,
            }),
            _ => return Err(corrupt("media source", "some of its columns are NULL")),
        };
        Ok(MediaRecord {
            object: object_id(&self.object_id)?,
            state: MediaState::parse(&self.state).map_err(|e| corrupt("media state", e))?,
            progress: u8::try_from(self.progress)
                .ok()
                .filter(|p| *p <= 100)
                .ok_or_else(|| corrupt("media progress", self.progress))?,
            error: self.error,
            attempts: u32::try_from(self.attempts).map_err(|e| corrupt("media attempts", e))?,
            source,
            derived,
            modified: ts(self.modified_at),
        })
    }
}

/// How many ids one statement of `media_of` (a library page's members) names: under SQLite's
/// smallest limit of bound parameters (999 before 3.32).
const IDS_PER_STATEMENT: usize = 500;

/// The rows `load` reads for `ids`, one statement per [`IDS_PER_STATEMENT`] of them, on the
/// caller's connection: SQLite binds every id of an `IN` list separately.
fn by_chunks<T>(
    ids: &[String],
    mut load: impl FnMut(&[String]) -> QueryResult<Vec<T>>,
) -> QueryResult<Vec<T>> {
    let mut rows = Vec::new();
    for chunk in ids.chunks(IDS_PER_STATEMENT) {
        rows.extend(load(chunk)?);
    }
    Ok(rows)
}

/// `(object_id, derived)` of the media of some objects, those whose derived files are known.
trait DerivedRows {
    fn derived_rows(&mut self, objects: &[ObjectId]) -> QueryResult<Vec<(String, String)>>;
}

/// The ids as one JSON array bound once, walked by `json_each` and each looked up in `media`
/// by its key (`CROSS JOIN` keeps that order). An `IN` list would be a statement of its own for
/// every length (never cached: parsed and planned each time) and bind every id separately:
/// for a catalog of 10 000 members that was a tenth of the answer's CPU (docs/performance.md).
struct DerivedOfList;
impl FixedSql for DerivedOfList {
    const SQL: &'static str = "SELECT m.object_id, m.derived \
        FROM json_each(?) AS j CROSS JOIN media AS m ON m.object_id = j.value \
        WHERE m.derived IS NOT NULL";
    type Row = (Text, Text);
}

impl DerivedRows for SqliteConnection {
    fn derived_rows(&mut self, objects: &[ObjectId]) -> QueryResult<Vec<(String, String)>> {
        // Each id once (a join would give a row per mention), in order, so that the lookups
        // walk the key's index forwards. An id prints as a hyphenated uuid (hex digits and
        // dashes): nothing to escape.
        let mut ids = objects.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let mut list = String::with_capacity(ids.len() * 39 + 2);
        list.push('[');
        for (i, id) in ids.iter().enumerate() {
            let sep = if i > 0 { "," } else { "" };
            // Written in place, not through a `String` of its own per id.
            write!(list, "{sep}\"{id}\"")
                .map_err(|e| diesel::result::Error::SerializationError(e.into()))?;
        }
        list.push(']');
        Fixed::<DerivedOfList>::new(&[&list]).load(self)
    }
}

impl DerivedRows for PgConnection {
    // `= ANY($1)` with one array bound: one cached statement whatever the number.
    fn derived_rows(&mut self, objects: &[ObjectId]) -> QueryResult<Vec<(String, String)>> {
        let ids: Vec<String> = objects.iter().map(ToString::to_string).collect();
        let rows: Vec<(String, Option<String>)> = media::table
            .filter(media::object_id.eq_any(&ids))
            .filter(media::derived.is_not_null())
            .select((media::object_id, media::derived))
            .load(self)?;
        Ok(rows
            .into_iter()
            .filter_map(|(id, text)| text.map(|t| (id, t)))
            .collect())
    }
}

/// The total of the sources' sizes and the unfinished uploads' lengths, in one statement
/// (`SUM` of a `BIGINT` is `NUMERIC` on PostgreSQL, hence the cast).
#[derive(QueryableByName)]
struct StoredBytes {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

const STORED_BYTES: &str = "SELECT CAST(\
     (SELECT COALESCE(SUM(source_size), 0) FROM media) + \
     (SELECT COALESCE(SUM(length), 0) FROM uploads) AS BIGINT) AS n";

fn signed(what: &str, n: u64) -> Result<i64, StoreError> {
    i64::try_from(n).map_err(|_| StoreError::Unexpected(format!("{what} {n} is out of range")))
}

fn unsigned(what: &str, n: i64) -> Result<u64, StoreError> {
    u64::try_from(n).map_err(|e| corrupt(what, e))
}

fn storage_key(s: &str) -> Result<StorageKey, StoreError> {
    StorageKey::parse(s).map_err(|e| corrupt("storage key", e))
}

fn file_name(s: Option<&str>) -> Result<Option<FileName>, StoreError> {
    s.map(FileName::parse)
        .transpose()
        .map_err(|e| corrupt("file name", e))
}

/// Bytes from hex (either case); `None` when it is not an even number of hex digits.
fn from_hex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    s.as_bytes()
        .chunks_exact(2)
        .map(|pair| {
            let digits = std::str::from_utf8(pair).ok()?;
            u8::from_str_radix(digits, 16).ok()
        })
        .collect()
}

/// Parses rows read inside a transaction; a row that does not parse rolls it back.
fn parsed<T, R>(
    row: Option<R>,
    parse: impl FnOnce(R) -> Result<T, StoreError>,
) -> Result<Option<T>, DbError> {
    row.map(parse).transpose().map_err(DbError::Store)
}

impl UploadRepository for DieselStore {
    fn create_with_media(
        &self,
        object: &MediaObject,
        collection: ObjectId,
        media: NewMedia<'_>,
    ) -> Result<(), CreateObjectError> {
        media.check_object(object)?;
        let c = collection.to_string();
        let upload_row = match media {
            NewMedia::Upload(upload) => Some(UploadRow::from_domain(upload)?),
            NewMedia::Stored(_) => None,
        };
        let media_row = MediaRow::from_domain(&media.record())?;
        let r: Result<Result<(), CreateObjectError>, DbError> = with_tx!(self.db, conn => {
            let outcome = create_member!(conn, object, &c);
            if outcome.is_ok() {
                if let Some(row) = &upload_row {
                    diesel::insert_into(uploads::table).values(row).execute(conn)?;
                }
                diesel::insert_into(media::table).values(&media_row).execute(conn)?;
                if media_row.state == MediaState::Queued.as_str() {
                    enqueue_job!(conn, &media_row.object_id, media_row.modified_at);
                }
            }
            Ok(outcome)
        });
        flatten(r)
    }

    fn replace_upload(&self, upload: &UploadRecord) -> Result<Option<UploadRecord>, StoreError> {
        let o = upload.object.to_string();
        let row = UploadRow::from_domain(upload)?;
        let r: Result<Option<UploadRecord>, DbError> = with_tx!(self.db, conn => {
            let old: Option<UploadRow> = diesel::delete(uploads::table.find(&o))
                .returning(UploadRow::as_returning())
                .get_result(conn)
                .optional()?;
            diesel::insert_into(uploads::table).values(&row).execute(conn)?;
            parsed(old, UploadRow::into_domain)
        });
        Ok(r?)
    }

    fn upload(&self, object: ObjectId) -> Result<Option<UploadRecord>, StoreError> {
        let o = object.to_string();
        let row: Option<UploadRow> = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                Ok(uploads::table
                    .find(&o)
                    .select(UploadRow::as_select())
                    .first(conn)
                    .optional()?)
            })
        })()?;
        row.map(UploadRow::into_domain).transpose()
    }

    fn lock_upload(
        &self,
        object: ObjectId,
        lock: LockRequest<'_>,
    ) -> Result<UploadLock, StoreError> {
        let LockRequest { holder, until, now } = lock;
        let o = object.to_string();
        let (locked, exists): (Option<UploadRow>, bool) = (|| -> Result<_, DbError> {
            with_write!(self.db, conn => {
                // One statement: the condition is evaluated on the row as it stands when the
                // update takes it (after a concurrent winner's commit), so one caller wins.
                let free = uploads::lock_holder
                    .is_null()
                    .or(uploads::lock_until.lt(now.epoch_seconds()))
                    .or(uploads::lock_holder.eq(holder));
                let locked: Option<UploadRow> = diesel::update(uploads::table.find(&o).filter(free))
                    .set((
                        uploads::lock_holder.eq(holder),
                        uploads::lock_until.eq(until.epoch_seconds()),
                    ))
                    .returning(UploadRow::as_returning())
                    .get_result(conn)
                    .optional()?;
                if locked.is_some() {
                    return Ok((locked, true));
                }
                let n: i64 = uploads::table.find(&o).count().get_result(conn)?;
                Ok((None, n > 0))
            })
        })()?;
        match locked {
            Some(row) => Ok(UploadLock::Locked(Box::new(row.into_domain()?))),
            None if exists => Ok(UploadLock::Busy),
            None => Ok(UploadLock::Missing),
        }
    }

    fn save_progress(
        &self,
        object: ObjectId,
        holder: &str,
        progress: Progress<'_>,
    ) -> Result<bool, StoreError> {
        let o = object.to_string();
        let offset = signed("offset", progress.offset)?;
        let hash = progress.hash.to_text();
        let n = (|| -> Result<usize, DbError> {
            with_write!(self.db, conn => {
                Ok(diesel::update(
                    uploads::table.find(&o).filter(uploads::lock_holder.eq(holder)),
                )
                .set((
                    uploads::offset_bytes.eq(offset),
                    uploads::staging_state.eq(progress.staging_state),
                    uploads::sha256_state.eq(&hash),
                    uploads::lock_until.eq(progress.lock_until.epoch_seconds()),
                ))
                .execute(conn)?)
            })
        })()?;
        Ok(n > 0)
    }

    fn unlock_upload(&self, object: ObjectId, holder: &str) -> Result<(), StoreError> {
        let o = object.to_string();
        let r = (|| -> Result<usize, DbError> {
            with_write!(self.db, conn => {
                Ok(diesel::update(
                    uploads::table.find(&o).filter(uploads::lock_holder.eq(holder)),
                )
                .set((
                    uploads::lock_holder.eq(None::<String>),
                    uploads::lock_until.eq(None::<i64>),
                ))
                .execute(conn)?)
            })
        })();
        r.map(drop).map_err(StoreError::from)
    }

    fn finish_upload(
        &self,
        object: ObjectId,
        holder: &str,
        record: &MediaRecord,
    ) -> Result<Finish, StoreError> {
        if record.object != object {
            return Err(StoreError::Unexpected("the media of another object".into()));
        }
        let o = object.to_string();
        let mut row = MediaRow::from_domain(record)?;
        let r: Result<Finish, DbError> = with_tx!(self.db, conn => {
            let n = diesel::delete(
                uploads::table.find(&o).filter(uploads::lock_holder.eq(holder)),
            )
            .execute(conn)?;
            if n == 0 {
                return Ok(Finish::LockLost);
            }
            let previous: Option<MediaRow> = media::table
                .find(&o)
                .select(MediaRow::as_select())
                .first(conn)
                .optional()?;
            // The files derived from the replaced source stay served until the new source's
            // processing replaces (and deletes) them.
            if let Some(p) = &previous {
                row.derived.clone_from(&p.derived);
            }
            diesel::insert_into(media::table)
                .values(&row)
                .on_conflict(media::object_id)
                .do_update()
                .set(&row)
                .execute(conn)?;
            if row.state == MediaState::Queued.as_str() {
                enqueue_job!(conn, &o, row.modified_at);
            }
            Ok(Finish::Finished(parsed(previous, MediaRow::into_domain)?))
        });
        Ok(r?)
    }

    fn remove_upload(&self, object: ObjectId) -> Result<Option<UploadRecord>, StoreError> {
        let o = object.to_string();
        let r: Result<Option<UploadRecord>, DbError> = with_tx!(self.db, conn => {
            let old: Option<UploadRow> = diesel::delete(uploads::table.find(&o))
                .returning(UploadRow::as_returning())
                .get_result(conn)
                .optional()?;
            parsed(old, UploadRow::into_domain)
        });
        Ok(r?)
    }

    fn expired_uploads(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<UploadRecord>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows: Vec<UploadRow> = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                Ok(uploads::table
                    .filter(uploads::expires_at.lt(now.epoch_seconds()))
                    .order((uploads::expires_at.asc(), uploads::object_id.asc()))
                    .limit(limit)
                    .select(UploadRow::as_select())
                    .load(conn)?)
            })
        })()?;
        rows.into_iter().map(UploadRow::into_domain).collect()
    }

    fn release_upload_locks(&self, prefix: &str) -> Result<usize, StoreError> {
        // Not LIKE: SQLite's is case-insensitive, and the prefix may hold `%` or `_`.
        let chars = i32::try_from(prefix.chars().count())
            .map_err(|_| StoreError::Unexpected("lock holder prefix too long".into()))?;
        let r = (|| -> Result<usize, DbError> {
            with_write!(self.db, conn => {
                let held_by_prefix = diesel::dsl::sql::<Bool>("substr(lock_holder, 1, ")
                    .bind::<Integer, _>(chars)
                    .sql(") = ")
                    .bind::<Text, _>(prefix);
                Ok(diesel::update(
                    uploads::table
                        .filter(uploads::lock_holder.is_not_null())
                        .filter(held_by_prefix),
                )
                .set((
                    uploads::lock_holder.eq(None::<String>),
                    uploads::lock_until.eq(None::<i64>),
                ))
                .execute(conn)?)
            })
        })();
        r.map_err(StoreError::from)
    }

    fn stored_bytes(&self) -> Result<u64, StoreError> {
        let total = (|| -> Result<i64, DbError> {
            with_conn!(self.db, conn => {
                Ok(diesel::sql_query(STORED_BYTES).get_result::<StoredBytes>(conn)?.n)
            })
        })()?;
        unsigned("stored bytes", total)
    }

    fn media_signing_key(&self, candidate: &[u8; 32]) -> Result<Vec<u8>, StoreError> {
        let key_hex = hex::lower(candidate);
        let stored: Option<Option<String>> = (|| -> Result<_, DbError> {
            with_write!(self.db, conn => {
                // Conditional: of concurrent first starts, the first writer's key stays.
                diesel::update(organization::table.find(1))
                    .filter(organization::media_signing_key.is_null())
                    .set(organization::media_signing_key.eq(&key_hex))
                    .execute(conn)?;
                Ok(organization::table
                    .find(1)
                    .select(organization::media_signing_key)
                    .first(conn)
                    .optional()?)
            })
        })()?;
        let stored = stored.flatten().ok_or_else(|| {
            StoreError::Corrupt("the organization row is missing: run `medialib migrate`".into())
        })?;
        from_hex(&stored).ok_or_else(|| corrupt("media_signing_key", "not hex"))
    }

    fn derived_of(&self, objects: &[ObjectId]) -> Result<Vec<(ObjectId, DerivedSet)>, StoreError> {
        if objects.is_empty() {
            return Ok(Vec::new());
        }
        let rows: Vec<(String, String)> = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => { Ok(conn.derived_rows(objects)?) })
        })()?;
        rows.into_iter()
            .map(|(id, text)| {
                let set = DerivedSet::from_text(&text).map_err(|e| corrupt("media derived", e))?;
                Ok((object_id(&id)?, set))
            })
            .collect()
    }

    fn media(&self, object: ObjectId) -> Result<Option<MediaRecord>, StoreError> {
        let o = object.to_string();
        let row: Option<MediaRow> = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                Ok(media::table
                    .find(&o)
                    .select(MediaRow::as_select())
                    .first(conn)
                    .optional()?)
            })
        })()?;
        row.map(MediaRow::into_domain).transpose()
    }

    fn media_of(&self, objects: &[ObjectId]) -> Result<Vec<MediaRecord>, StoreError> {
        if objects.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<String> = objects.iter().map(ToString::to_string).collect();
        let rows: Vec<MediaRow> = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                Ok(by_chunks(&ids, |chunk| {
                    media::table
                        .filter(media::object_id.eq_any(chunk))
                        .select(MediaRow::as_select())
                        .load(conn)
                })?)
            })
        })()?;
        rows.into_iter().map(MediaRow::into_domain).collect()
    }

    fn deleted_before(&self, before: Timestamp, limit: usize) -> Result<Vec<ObjectId>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let ids: Vec<String> = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                Ok(objects::table
                    .filter(objects::deleted_at.lt(before.epoch_seconds()))
                    .order((objects::deleted_at.asc(), objects::id.asc()))
                    .limit(limit)
                    .select(objects::id)
                    .load(conn)?)
            })
        })()?;
        ids.iter().map(|id| object_id(id)).collect()
    }

    fn purge_deleted(
        &self,
        object: ObjectId,
        before: Timestamp,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let o = object.to_string();
        let r: Result<bool, DbError> = with_tx!(self.db, conn => {
            conn.lock_object(&o)?;
            let members: Vec<String> = memberships::table
                .filter(memberships::collection_id.eq(&o))
                .select(memberships::member_id)
                .load(conn)?;
            // The rows that reference the object go with it (ON DELETE CASCADE).
            let n = diesel::delete(
                objects::table
                    .find(&o)
                    .filter(objects::deleted_at.lt(before.epoch_seconds())),
            )
            .execute(conn)?;
            if n == 0 {
                return Ok(false);
            }
            for m in &members {
                let remaining: i64 = memberships::table
                    .filter(memberships::member_id.eq(m))
                    .count()
                    .get_result(conn)?;
                if remaining == 0 {
                    diesel::update(
                        objects::table.find(m).filter(objects::deleted_at.is_null()),
                    )
                    .set((
                        objects::deleted_at.eq(Some(now.epoch_seconds())),
                        objects::deleted_from.eq(None::<String>),
                        objects::modified_at.eq(now.epoch_seconds()),
                    ))
                    .execute(conn)?;
                }
            }
            Ok(true)
        });
        Ok(r?)
    }

    fn remove_media(
        &self,
        object: ObjectId,
    ) -> Result<(Option<MediaRecord>, Option<UploadRecord>), StoreError> {
        let o = object.to_string();
        let r: Result<(Option<MediaRecord>, Option<UploadRecord>), DbError> = with_tx!(self.db, conn => {
            let m: Option<MediaRow> = diesel::delete(media::table.find(&o))
                .returning(MediaRow::as_returning())
                .get_result(conn)
                .optional()?;
            let u: Option<UploadRow> = diesel::delete(uploads::table.find(&o))
                .returning(UploadRow::as_returning())
                .get_result(conn)
                .optional()?;
            diesel::delete(jobs::table.find(&o)).execute(conn)?;
            Ok((parsed(m, MediaRow::into_domain)?, parsed(u, UploadRow::into_domain)?))
        });
        Ok(r?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::tests::prepared_statements;

    /// On SQLite, the stills of any number of objects are read by one statement, prepared once
    /// a connection and reused whatever the number of ids: an `IN` list's text changes with its
    /// length, and diesel finalizes such a statement after each use (docs/performance.md).
    #[test]
    fn the_derived_files_of_any_number_of_objects_are_read_by_one_cached_statement() {
        let conn = &mut *crate::db::tests::migrated_memory_connection();
        let ids: Vec<ObjectId> = (0..700)
            .map(|i| ObjectId::parse(&format!("00000000-0000-4000-8000-{i:012x}")).unwrap())
            .collect();
        for n in [1, 3, 700] {
            assert_eq!(conn.derived_rows(&ids[..n]).unwrap(), vec![]);
        }
        let stmts = prepared_statements(conn, "%json_each%");
        assert_eq!(stmts.len(), 1, "one statement: {stmts:?}");
        assert_eq!(stmts[0].run, 3, "{stmts:?}");
        assert_eq!(stmts[0].reprep, 0, "prepared again: {stmts:?}");
    }

    #[test]
    fn hex_round_trips_and_refuses_what_is_not_hex() {
        let bytes = [0u8, 1, 0xab, 0xff];
        assert_eq!(hex::lower(&bytes), "0001abff");
        assert_eq!(from_hex("0001abff").as_deref(), Some(&bytes[..]));
        assert_eq!(from_hex("0001ABFF").as_deref(), Some(&bytes[..]));
        assert_eq!(from_hex(""), Some(vec![]));
        for bad in ["0", "zz", "+1", "é0"] {
            assert_eq!(from_hex(bad), None, "{bad}");
        }
    }
}
