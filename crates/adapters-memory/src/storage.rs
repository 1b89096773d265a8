//! A media store in memory, for use-case tests that need neither a disk nor an S3 server.
//! It keeps the port's contract (durable prefixes, checkpoints only when every byte read is
//! durable, staging that `finish` makes visible whole) and can be told to fail, to test what
//! the use cases do when storage goes away mid-upload.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use medialib_domain::Timestamp;
use medialib_domain::media::{ByteSpan, StorageKey};
use medialib_ports::{
    Append, AppendStop, Appended, MediaStorage, ObjectInfo, Reading, Staging, StorageError,
};

/// Media bytes in memory.
#[derive(Debug)]
pub struct MemoryStorage {
    objects: Mutex<BTreeMap<StorageKey, (Vec<u8>, u64)>>,
    staged: Mutex<BTreeMap<String, Vec<u8>>>,
    /// Stagings already finished: finishing one again answers what it stored (as the real
    /// adapters do), so a caller that lost the first answer can finish again.
    finished: Mutex<std::collections::BTreeSet<String>>,
    /// Bytes between checkpoints during an append.
    checkpoint_every: usize,
    /// Appends fail (as an unreachable store would) once this many bytes were appended in
    /// all; `u64::MAX`: never.
    fail_after: AtomicU64,
    appended: AtomicU64,
    down: AtomicBool,
    fail_finish: AtomicBool,
    versions: AtomicU64,
}

impl Default for MemoryStorage {
    fn default() -> Self {
        Self::new(64 * 1024)
    }
}

impl MemoryStorage {
    /// An empty store that checkpoints every `checkpoint_every` bytes of an append.
    pub fn new(checkpoint_every: usize) -> Self {
        Self {
            objects: Mutex::default(),
            staged: Mutex::default(),
            finished: Mutex::default(),
            checkpoint_every: checkpoint_every.max(1),
            fail_after: AtomicU64::new(u64::MAX),
            appended: AtomicU64::new(0),
            down: AtomicBool::new(false),
            fail_finish: AtomicBool::new(false),
            versions: AtomicU64::new(0),
        }
    }

    /// Appends stop with [`StorageError::Unavailable`] once `bytes` more have been appended.
    pub fn fail_after(&self, bytes: u64) {
        let so_far = self.appended.load(Ordering::SeqCst);
        self.fail_after
            .store(so_far.saturating_add(bytes), Ordering::SeqCst);
    }

    /// Every operation fails as unavailable (`true`) or works again (`false`).
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
        if !down {
            self.fail_after.store(u64::MAX, Ordering::SeqCst);
        }
    }

    /// The next [`MediaStorage::finish`] stores the bytes but answers that the store failed
    /// (a connection that broke before the answer).
    pub fn fail_next_finish(&self) {
        self.fail_finish.store(true, Ordering::SeqCst);
    }

    /// The bytes stored under `key`.
    pub fn bytes(&self, key: &StorageKey) -> Option<Vec<u8>> {
        self.objects
            .lock()
            .ok()
            .and_then(|o| o.get(key).map(|(b, _)| b.clone()))
    }

    /// Every key stored, and how many stagings are open.
    pub fn inventory(&self) -> (Vec<StorageKey>, usize) {
        let keys = self
            .objects
            .lock()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        let staged = self.staged.lock().map(|s| s.len()).unwrap_or(0);
        (keys, staged)
    }

    fn up(&self) -> Result<(), StorageError> {
        if self.down.load(Ordering::SeqCst) {
            Err(StorageError::Unavailable("the memory store is down".into()))
        } else {
            Ok(())
        }
    }

    fn poisoned() -> StorageError {
        StorageError::Unexpected("a memory store lock is poisoned".into())
    }

    fn info(&self, key: &StorageKey, bytes: &[u8], version: u64) -> ObjectInfo {
        ObjectInfo {
            key: key.clone(),
            size: bytes.len() as u64,
            modified: Timestamp::from_epoch_seconds(1),
            etag: format!("v{version}"),
        }
    }
}

impl MediaStorage for MemoryStorage {
    fn location(&self) -> String {
        "memory:".to_owned()
    }

    fn put(&self, key: &StorageKey, body: &mut dyn Read) -> Result<ObjectInfo, StorageError> {
        self.up()?;
        let mut bytes = Vec::new();
        body.read_to_end(&mut bytes)
            .map_err(|e| StorageError::Unexpected(format!("reading the body: {e}")))?;
        let version = self.versions.fetch_add(1, Ordering::SeqCst);
        let info = self.info(key, &bytes, version);
        self.objects
            .lock()
            .map_err(|_| Self::poisoned())?
            .insert(key.clone(), (bytes, version));
        Ok(info)
    }

    fn head(&self, key: &StorageKey) -> Result<ObjectInfo, StorageError> {
        self.up()?;
        let objects = self.objects.lock().map_err(|_| Self::poisoned())?;
        let (bytes, version) = objects.get(key).ok_or(StorageError::NotFound)?;
        Ok(self.info(key, bytes, *version))
    }

    fn read(&self, key: &StorageKey, span: Option<ByteSpan>) -> Result<Reading, StorageError> {
        self.up()?;
        let objects = self.objects.lock().map_err(|_| Self::poisoned())?;
        let (bytes, version) = objects.get(key).ok_or(StorageError::NotFound)?;
        let info = self.info(key, bytes, *version);
        let (span, slice) = match span {
            None => (None, bytes.clone()),
            Some(s) => {
                let start = usize::try_from(s.start()).unwrap_or(usize::MAX);
                if start >= bytes.len() {
                    return Err(StorageError::OutOfRange);
                }
                let end = usize::try_from(s.end())
                    .unwrap_or(usize::MAX)
                    .min(bytes.len());
                let cut = ByteSpan::new(s.start(), (end - start) as u64);
                (cut, bytes[start..end].to_vec())
            }
        };
        Ok(Reading {
            info,
            span,
            body: Box::new(io::Cursor::new(slice)),
        })
    }

    fn delete(&self, key: &StorageKey) -> Result<(), StorageError> {
        self.up()?;
        self.objects
            .lock()
            .map_err(|_| Self::poisoned())?
            .remove(key);
        Ok(())
    }

    fn list(&self, prefix: &StorageKey) -> Result<Vec<ObjectInfo>, StorageError> {
        self.up()?;
        let objects = self.objects.lock().map_err(|_| Self::poisoned())?;
        Ok(objects
            .iter()
            .filter(|(k, _)| k.is_under(prefix) && *k != prefix)
            .map(|(k, (b, v))| self.info(k, b, *v))
            .collect())
    }

    fn stage(&self, key: &StorageKey, _length: u64) -> Result<Staging, StorageError> {
        self.up()?;
        let id = format!("staged-{}", self.versions.fetch_add(1, Ordering::SeqCst));
        self.staged
            .lock()
            .map_err(|_| Self::poisoned())?
            .insert(id.clone(), Vec::new());
        Ok(Staging {
            key: key.clone(),
            state: id,
        })
    }

    fn append(&self, append: Append<'_>) -> Appended {
        let Append {
            staging,
            offset,
            body,
            checkpoint,
        } = append;
        let stop = |offset, why| Append::stopped(staging, offset, why);
        if let Err(e) = self.up() {
            return stop(offset, AppendStop::Storage(e));
        }
        let Ok(mut staged) = self.staged.lock() else {
            return stop(offset, AppendStop::Storage(Self::poisoned()));
        };
        let Some(bytes) = staged.get_mut(&staging.state) else {
            return stop(
                offset,
                AppendStop::Storage(StorageError::Corrupt("no such staging".into())),
            );
        };
        // Bytes past the durable offset were left by a failed append: overwritten.
        bytes.truncate(usize::try_from(offset).unwrap_or(usize::MAX));
        let mut durable = bytes.len() as u64;
        let mut buf = vec![0u8; self.checkpoint_every];
        loop {
            let mut filled = 0;
            let mut ended = false;
            while filled < buf.len() {
                match body.read(&mut buf[filled..]) {
                    Ok(0) => {
                        ended = true;
                        break;
                    }
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        // What was read before the failure is kept and checkpointed.
                        bytes.extend_from_slice(&buf[..filled]);
                        let at = bytes.len() as u64;
                        if filled > 0 && !checkpoint(staging, at) {
                            return stop(durable, AppendStop::Checkpoint);
                        }
                        return stop(at, AppendStop::Body(e));
                    }
                }
            }
            let total = self.appended.fetch_add(filled as u64, Ordering::SeqCst) + filled as u64;
            if total > self.fail_after.load(Ordering::SeqCst) || self.up().is_err() {
                return stop(
                    durable,
                    AppendStop::Storage(StorageError::Unavailable(
                        "the memory store failed".into(),
                    )),
                );
            }
            bytes.extend_from_slice(&buf[..filled]);
            if filled > 0 || ended {
                let at = bytes.len() as u64;
                if !checkpoint(staging, at) {
                    return stop(durable, AppendStop::Checkpoint);
                }
                durable = at;
            }
            if ended {
                return Appended {
                    staging: staging.clone(),
                    offset: durable,
                    stopped: None,
                };
            }
        }
    }

    fn finish(&self, staging: &Staging) -> Result<ObjectInfo, StorageError> {
        self.up()?;
        let done_before = self
            .finished
            .lock()
            .map_err(|_| Self::poisoned())?
            .contains(&staging.state);
        if done_before {
            return self.head(&staging.key);
        }
        let bytes = self
            .staged
            .lock()
            .map_err(|_| Self::poisoned())?
            .remove(&staging.state)
            .ok_or_else(|| StorageError::Corrupt("no such staging".into()))?;
        self.finished
            .lock()
            .map_err(|_| Self::poisoned())?
            .insert(staging.state.clone());
        let version = self.versions.fetch_add(1, Ordering::SeqCst);
        let info = self.info(&staging.key, &bytes, version);
        self.objects
            .lock()
            .map_err(|_| Self::poisoned())?
            .insert(staging.key.clone(), (bytes, version));
        if self.fail_finish.swap(false, Ordering::SeqCst) {
            return Err(StorageError::Unavailable(
                "the memory store broke off before answering".into(),
            ));
        }
        Ok(info)
    }

    fn discard(&self, staging: &Staging) -> Result<(), StorageError> {
        self.up()?;
        self.staged
            .lock()
            .map_err(|_| Self::poisoned())?
            .remove(&staging.state);
        Ok(())
    }

    fn presign(&self, _: &StorageKey, _: Timestamp) -> Option<String> {
        None
    }
}
