//! Staged uploads as S3 multipart uploads.
//!
//! Every part but the last holds between `P = max(5 MiB, ⌈length / 9000⌉)` rounded up to a
//! MiB and `2P` bytes (S3 wants every part but the last to be at least 5 MiB, and at most
//! 10 000 parts), in order; the state keeps each part's length. An append collects the bytes
//! of the part being written in memory and puts them as a part when it holds `2P`, or when its
//! body ends with at least `P` (so a PATCH of `P` to `2P` bytes, like a tus client's 8 MiB,
//! is exactly one part). Bytes a body ends with that make less than `P` are stored as a
//! *tail*: a small object of its own, `{prefix}/staging~/{name}/tail-{offset}-{len}`, so they
//! are durable at once and the offset moves on. Tails are read back once, into the next part
//! (or by `finish`, into the last part).
//!
//! Tiny appends (a tus client may send thousands of small PATCHes) would leave one tail
//! each, and the state, written at every checkpoint, would grow with their number. So a new
//! tail absorbs the tails before it that are no larger than it, as a binary counter carries:
//! tail sizes strictly decrease along the list, there are O(log P) of them, and each byte is
//! rewritten O(log n) times, never the O(n²) of rewriting the whole tail on every append.
//!
//! Tails a new state no longer names are listed in it as *stale* and deleted when the next
//! append starts from that state (the caller has then recorded it and moved on), or by
//! `finish` and `discard`. Until then an older state, and the tails it names, stay valid, so
//! an append can be re-run from an offset recorded before a failed or unrecorded one. Parts
//! the state does not name are overwritten by re-putting the same part number.

use std::io::Read;

use bytes::Bytes;
use futures_util::StreamExt as _;
use medialib_domain::media::StorageKey;
use medialib_ports::{AppendStop, Appended, Checkpoint, ObjectInfo, Staging, StorageError};
use object_store::multipart::{MultipartStore as _, PartId};
use object_store::{ObjectStoreExt as _, PutPayload};
use serde::{Deserialize, Serialize};

use super::S3Storage;
use super::errors::s3_error;
use crate::{COPY_BUFFER, STAGING, random_name, read_full, sends_more};

const MIB: u64 = 1024 * 1024;
/// The smallest part S3 accepts (but for the last).
const MIN_PART: u64 = 5 * MIB;
/// The most parts an upload is cut into (S3 allows 10 000).
const MAX_PARTS: u64 = 9000;

/// The part size of an upload of `length` bytes.
fn part_size(length: u64) -> u64 {
    length.div_ceil(MAX_PARTS).max(MIN_PART).div_ceil(MIB) * MIB
}

/// What `Staging::state` holds for an S3 staged upload.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct S3Staging {
    /// The multipart upload's id.
    upload: String,
    /// The name of the upload's staging area (`{prefix}/staging~/{name}/`).
    name: String,
    /// The upload's length.
    length: u64,
    /// The smallest part an append puts (the largest is [`S3Staging::max_part`]).
    part: u64,
    /// The ETags of the parts put, in order.
    parts: Vec<String>,
    /// Each part's length, in order; empty when every part is `part` bytes long (states
    /// written before parts could differ in size).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    sizes: Vec<u64>,
    /// The tails after the last part, in order: `[offset, len]`.
    tails: Vec<(u64, u64)>,
    /// Tails this state no longer names, to delete when an append starts from it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    stale: Vec<(u64, u64)>,
}

impl S3Staging {
    fn parse(staging: &Staging) -> Result<Self, StorageError> {
        let state: Self = serde_json::from_str(&staging.state)
            .map_err(|e| StorageError::Corrupt(format!("staging state: {e}")))?;
        let mut end = state.parts_end();
        for &(offset, len) in &state.tails {
            if offset != end || len == 0 {
                return Err(StorageError::Corrupt(
                    "staging state: tails out of order".into(),
                ));
            }
            end += len;
        }
        if state.part < MIN_PART || end > state.length || state.tails_len() >= state.part {
            return Err(StorageError::Corrupt(
                "staging state: sizes do not add up".into(),
            ));
        }
        if state.name.len() != 32 || !state.name.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(StorageError::Corrupt("staging state: a bad name".into()));
        }
        let sized = state.sizes.is_empty()
            || (state.sizes.len() == state.parts.len()
                && state
                    .sizes
                    .iter()
                    .all(|&n| n >= state.part && n <= state.max_part()));
        if !sized {
            return Err(StorageError::Corrupt(
                "staging state: part sizes out of bounds".into(),
            ));
        }
        Ok(state)
    }

    fn to_staging(&self, key: &StorageKey) -> Result<Staging, StorageError> {
        Ok(Staging {
            key: key.clone(),
            state: serde_json::to_string(self)
                .map_err(|e| StorageError::Unexpected(e.to_string()))?,
        })
    }

    fn parts_end(&self) -> u64 {
        match self.sizes.is_empty() {
            true => self.parts.len() as u64 * self.part,
            false => self.sizes.iter().sum(),
        }
    }

    /// The largest part an append puts, and so the most bytes it holds in memory: twice the
    /// smallest, so that a PATCH of up to that size becomes one part with no tail to write
    /// and read back (with 8 MiB PATCHes and 5 MiB parts, 3 MiB of every PATCH was).
    fn max_part(&self) -> u64 {
        2 * self.part
    }

    /// Records a part of `len` bytes put with `tag`.
    fn push_part(&mut self, tag: String, len: u64) {
        let uniform = self.sizes.is_empty() && len == self.part;
        if !uniform {
            if self.sizes.is_empty() {
                self.sizes = vec![self.part; self.parts.len()];
            }
            self.sizes.push(len);
        }
        self.parts.push(tag);
    }

    fn tails_len(&self) -> u64 {
        self.tails.iter().map(|(_, len)| len).sum()
    }

    /// Where the durable bytes end.
    fn end(&self) -> u64 {
        self.parts_end() + self.tails_len()
    }

    fn area(&self) -> String {
        format!("{STAGING}/{}", self.name)
    }

    fn tail(&self, (offset, len): (u64, u64)) -> String {
        format!("{}/tail-{offset}-{len}", self.area())
    }
}

impl S3Storage {
    /// Reads a staged tail back into pooled chunks (counted in the append's share of the
    /// memory budget, like the bytes it joins).
    fn read_tail(&self, state: &S3Staging, tail: (u64, u64)) -> Result<Vec<Bytes>, StorageError> {
        let path = self.path(&state.tail(tail))?;
        let missing = |e: object_store::Error| match s3_error(e) {
            StorageError::NotFound => {
                StorageError::Corrupt(format!("the staged tail {} is missing", state.tail(tail)))
            }
            other => other,
        };
        let mut stream = self
            .run(self.store.get(&path))
            .map_err(missing)?
            .into_stream();
        let mut chunks: Vec<Bytes> = Vec::new();
        let mut pending = Bytes::new();
        let mut ended = false;
        let mut failed = None;
        let mut held: u64 = 0;
        while !ended {
            // One pooled chunk filled whole from as many of the response's pieces as it takes.
            let (chunk, ()) = self.chunks.fill(usize::MAX, |buf| {
                let mut n = 0;
                while n < buf.len() {
                    if pending.is_empty() {
                        match self.run(stream.next()) {
                            Some(Ok(next)) => pending = next,
                            Some(Err(e)) => {
                                failed = Some(e);
                                ended = true;
                                break;
                            }
                            None => {
                                ended = true;
                                break;
                            }
                        }
                        continue;
                    }
                    let take = (buf.len() - n).min(pending.len());
                    buf[n..n + take].copy_from_slice(&pending.split_to(take));
                    n += take;
                }
                (n, ())
            });
            if let Some(e) = failed.take() {
                return Err(missing(e));
            }
            held += chunk.len() as u64;
            if !chunk.is_empty() {
                chunks.push(chunk);
            }
        }
        if held != tail.1 {
            return Err(StorageError::Corrupt(format!(
                "the staged tail {} holds {held} bytes",
                state.tail(tail)
            )));
        }
        Ok(chunks)
    }

    fn delete_tails(&self, state: &S3Staging, tails: &[(u64, u64)]) {
        for &tail in tails {
            let deleted = self
                .path(&state.tail(tail))
                .and_then(|path| self.run(self.store.delete(&path)).map_err(s3_error));
            if let Err(e) = deleted {
                // `finish` and `discard` delete the whole staging area anyway.
                tracing::debug!(error = %e, "deleting a staged tail failed");
            }
        }
    }

    /// Puts the next part: the tails, then `fresh`.
    fn put_part(
        &self,
        key: &StorageKey,
        state: &S3Staging,
        fresh: Vec<Bytes>,
    ) -> Result<String, StorageError> {
        let mut pieces = Vec::with_capacity(state.tails.len() + fresh.len());
        for &tail in &state.tails {
            pieces.extend(self.read_tail(state, tail)?);
        }
        pieces.extend(fresh);
        let path = self.key_path(key)?;
        let payload: PutPayload = pieces.into_iter().collect();
        let part = self
            .run(
                self.store
                    .put_part(&path, &state.upload, state.parts.len(), payload),
            )
            .map_err(s3_error)?;
        Ok(part.content_id)
    }

    /// Stores `fresh` as a tail after the existing ones, absorbing those no larger than it;
    /// the tails it replaced, to delete once the new state is recorded.
    fn put_tail(
        &self,
        state: &mut S3Staging,
        fresh: Vec<Bytes>,
    ) -> Result<Vec<(u64, u64)>, StorageError> {
        let mut start = state.end();
        let mut len: u64 = fresh.iter().map(|b| b.len() as u64).sum();
        let mut older = Vec::new();
        let mut absorbed = Vec::new();
        while let Some(&last) = state.tails.last() {
            if last.1 > len {
                break;
            }
            older.push(self.read_tail(state, last)?);
            state.tails.pop();
            absorbed.push(last);
            start = last.0;
            len += last.1;
        }
        older.reverse();
        let pieces = older.into_iter().flatten().chain(fresh);
        let path = self.path(&state.tail((start, len)))?;
        let payload: PutPayload = pieces.collect();
        if let Err(e) = self.run(self.store.put(&path, payload)).map_err(s3_error) {
            state.tails.extend(absorbed.into_iter().rev());
            return Err(e);
        }
        state.tails.push((start, len));
        Ok(absorbed)
    }

    /// Removes the staging area of a finished or discarded upload.
    fn clean(&self, state: &S3Staging) -> Result<(), StorageError> {
        self.delete_all(&state.area())
    }

    /// The object a retried `finish` already stored, if it is whole.
    fn finished(&self, key: &StorageKey, length: u64) -> Result<ObjectInfo, StorageError> {
        use medialib_ports::MediaStorage as _;
        match self.head(key) {
            Ok(info) if info.size == length => Ok(info),
            _ => Err(StorageError::NotFound),
        }
    }
}

pub(super) fn stage(
    store: &S3Storage,
    key: &StorageKey,
    length: u64,
) -> Result<Staging, StorageError> {
    let path = store.key_path(key)?;
    let upload = store
        .run(store.store.create_multipart(&path))
        .map_err(s3_error)?;
    S3Staging {
        upload,
        name: random_name(),
        length,
        part: part_size(length),
        parts: Vec::new(),
        sizes: Vec::new(),
        tails: Vec::new(),
        stale: Vec::new(),
    }
    .to_staging(key)
}

/// Where an append stands: the state and offset last made durable.
struct Progress {
    staging: Staging,
    offset: u64,
}

pub(super) fn append(
    store: &S3Storage,
    staging: &Staging,
    offset: u64,
    body: &mut dyn Read,
    checkpoint: &mut Checkpoint<'_>,
) -> Appended {
    let mut progress = Progress {
        staging: staging.clone(),
        offset,
    };
    let stopped = match try_append(store, staging, offset, body, checkpoint, &mut progress) {
        Ok(stopped) => stopped,
        Err(e) => Some(AppendStop::Storage(e)),
    };
    Appended {
        staging: progress.staging,
        offset: progress.offset,
        stopped,
    }
}

fn try_append(
    store: &S3Storage,
    staging: &Staging,
    offset: u64,
    body: &mut dyn Read,
    checkpoint: &mut Checkpoint<'_>,
    progress: &mut Progress,
) -> Result<Option<AppendStop>, StorageError> {
    let key = &staging.key;
    let mut state = S3Staging::parse(staging)?;
    if state.end() != offset {
        return Err(StorageError::Corrupt(format!(
            "the offset is {offset} but the staged bytes end at {}",
            state.end()
        )));
    }
    // Memory for the bytes of (at most) the part being filled: waits while other uploads
    // hold the store's budget.
    let _share = store
        .buffers
        .take(state.max_part().min(state.length - offset))?;
    // The caller appends from this state: older ones, and the tails only they name, are gone.
    let stale = std::mem::take(&mut state.stale);
    store.delete_tails(&state, &stale);
    // The bytes read and not yet durable, at most what completes the current part, in
    // chunks of at most `COPY_BUFFER` as they arrived: a slow client holds only what it
    // sent, and no part-sized block is allocated (and zeroed) up front.
    let mut fresh: Vec<Bytes> = Vec::new();
    let mut fresh_len: u64 = 0;
    let mut checkpointed = false;
    loop {
        let end = state.end() + fresh_len;
        let room = state.max_part() - state.tails_len() - fresh_len;
        let want = room.min(state.length - end).min(COPY_BUFFER as u64);
        let want = usize::try_from(want).unwrap_or(COPY_BUFFER);
        let (n, failed) = if want == 0 {
            (0, None)
        } else {
            let (chunk, (n, failed)) = store.chunks.fill(want, |buf| {
                let (n, failed) = read_full(body, buf);
                (n, (n, failed))
            });
            if n > 0 {
                fresh.push(chunk);
                fresh_len += n as u64;
            }
            (n, failed)
        };
        let ended = failed.is_some() || n < want || want == 0;

        // A full buffer, or what a body ends with when it makes a part, is put as a part;
        // less than a part is stored as a tail.
        let held = state.tails_len() + fresh_len;
        let stored = if held == state.max_part() || (ended && held >= state.part) {
            let tag = store.put_part(key, &state, std::mem::take(&mut fresh))?;
            state.push_part(tag, held);
            Some(std::mem::take(&mut state.tails))
        } else if ended && fresh_len > 0 {
            Some(store.put_tail(&mut state, std::mem::take(&mut fresh))?)
        } else {
            None
        };
        if let Some(absorbed) = stored {
            fresh_len = 0;
            state.stale.extend(absorbed);
            progress.staging = state.to_staging(key)?;
            progress.offset = state.end();
            if !checkpoint(&progress.staging, progress.offset) {
                return Ok(Some(AppendStop::Checkpoint));
            }
            checkpointed = true;
        } else if n > 0 {
            checkpointed = false;
        }

        if ended {
            // Called at least once, at the end, even when nothing new was stored.
            if !checkpointed && !checkpoint(&progress.staging, progress.offset) {
                return Ok(Some(AppendStop::Checkpoint));
            }
            if let Some(e) = failed {
                return Ok(Some(AppendStop::Body(e)));
            }
            let more = match state.end() == state.length {
                true => sends_more(body),
                false => None,
            };
            return Ok(more.map(AppendStop::Body));
        }
    }
}

pub(super) fn finish(store: &S3Storage, staging: &Staging) -> Result<ObjectInfo, StorageError> {
    use medialib_ports::MediaStorage as _;
    let key = &staging.key;
    let state = S3Staging::parse(staging)?;
    if state.end() != state.length {
        return Err(StorageError::Corrupt(format!(
            "{} of {} bytes are staged",
            state.end(),
            state.length
        )));
    }
    let path = store.key_path(key)?;
    let completed = if state.length == 0 {
        // S3 completes no upload of zero parts: store the empty object itself.
        store
            .run(store.store.put(&path, PutPayload::default()))
            .map_err(s3_error)
            .and_then(
                |_| match store.run(store.store.abort_multipart(&path, &state.upload)) {
                    Ok(()) => Ok(()),
                    Err(e) => match s3_error(e) {
                        StorageError::NotFound => Ok(()),
                        other => Err(other),
                    },
                },
            )
    } else {
        let mut parts: Vec<PartId> = state
            .parts
            .iter()
            .map(|tag| PartId {
                content_id: tag.clone(),
            })
            .collect();
        let last = match state.tails.is_empty() {
            true => Ok(None),
            false => store.put_part(key, &state, Vec::new()).map(Some),
        };
        last.and_then(|last| {
            parts.extend(last.map(|content_id| PartId { content_id }));
            store.complete(&path, &state.upload, parts)
        })
    };
    match completed {
        Ok(()) => {}
        // A retry of a finish that completed: the upload and its tails are gone.
        Err(StorageError::NotFound | StorageError::Corrupt(_)) => {
            if let Ok(info) = store.finished(key, state.length) {
                store.clean(&state)?;
                return Ok(info);
            }
            return Err(StorageError::NotFound);
        }
        Err(e) => return Err(e),
    }
    store.clean(&state)?;
    store.head(key)
}

pub(super) fn discard(store: &S3Storage, staging: &Staging) -> Result<(), StorageError> {
    let state = S3Staging::parse(staging)?;
    let path = store.key_path(&staging.key)?;
    match store.run(store.store.abort_multipart(&path, &state.upload)) {
        Ok(()) => {}
        Err(e) => match s3_error(e) {
            StorageError::NotFound => {}
            other => return Err(other),
        },
    }
    store.clean(&state)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(parts: usize, sizes: Vec<u64>) -> S3Staging {
        S3Staging {
            upload: "u".into(),
            name: "0".repeat(32),
            length: 100 * MIB,
            part: 5 * MIB,
            parts: vec!["e".into(); parts],
            sizes,
            tails: Vec::new(),
            stale: Vec::new(),
        }
    }

    fn parsed(state: &S3Staging) -> Result<S3Staging, StorageError> {
        S3Staging::parse(&state.to_staging(&StorageKey::parse("k").unwrap()).unwrap())
    }

    #[test]
    fn parts_of_the_smallest_size_need_no_sizes_and_others_record_them() {
        let mut s = state(2, Vec::new());
        s.push_part("e".into(), 5 * MIB);
        assert!(s.sizes.is_empty(), "all parts are P long");
        assert_eq!(s.end(), 15 * MIB);
        s.push_part("e".into(), 8 * MIB);
        assert_eq!(s.sizes, vec![5 * MIB, 5 * MIB, 5 * MIB, 8 * MIB]);
        assert_eq!(s.end(), 23 * MIB);
        assert_eq!(parsed(&s).unwrap().end(), 23 * MIB);
        // A state written before sizes existed reads as parts of P.
        let old = r#"{"upload":"u","name":"00000000000000000000000000000000","length":104857600,"part":5242880,"parts":["a","b"],"tails":[[10485760,3]]}"#;
        let back = S3Staging::parse(&Staging {
            key: StorageKey::parse("k").unwrap(),
            state: old.into(),
        })
        .unwrap();
        assert_eq!(back.end(), 10 * MIB + 3);
        // The first part longer than P is recorded too.
        let mut first = state(0, Vec::new());
        first.push_part("e".into(), 8 * MIB);
        assert_eq!(first.sizes, vec![8 * MIB]);
        assert_eq!(first.end(), 8 * MIB);
    }

    #[test]
    fn sizes_out_of_bounds_or_not_one_per_part_are_corrupt() {
        for sizes in [
            vec![5 * MIB],
            vec![5 * MIB, 4 * MIB],
            vec![5 * MIB, 11 * MIB],
        ] {
            assert!(
                matches!(
                    parsed(&state(2, sizes.clone())),
                    Err(StorageError::Corrupt(_))
                ),
                "{sizes:?}"
            );
        }
        assert!(parsed(&state(2, vec![5 * MIB, 10 * MIB])).is_ok());
    }

    #[test]
    fn parts_are_at_least_five_mib_and_at_most_nine_thousand() {
        assert_eq!(part_size(0), 5 * MIB);
        assert_eq!(part_size(1), 5 * MIB);
        assert_eq!(part_size(20 * 1024 * MIB), 5 * MIB);
        assert_eq!(part_size(9000 * 5 * MIB + 1), 6 * MIB);
        let huge = 5 * 1024 * 1024 * MIB;
        assert!(huge.div_ceil(part_size(huge)) <= MAX_PARTS);
        assert_eq!(part_size(huge) % MIB, 0);
    }
}
