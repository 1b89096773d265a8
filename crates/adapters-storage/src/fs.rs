//! The media store in a directory of the file system.
//!
//! An object is the file `{root}/{key}` (a `StorageKey` cannot leave the root). A whole object
//! is written to a temporary file beside it, synced and renamed over it, so it appears whole
//! or not at all; temporary names hold a `~`, which no key does, so `list` skips them. A
//! staged upload is the file `{root}/staging~/{name}`, renamed into place by `finish`.

use std::fs::{self, File, Metadata};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, UNIX_EPOCH};

use medialib_domain::Timestamp;
use medialib_domain::media::{ByteSpan, StorageKey};
use medialib_ports::{
    Append, AppendStop, Appended, MediaStorage, ObjectInfo, Reading, Staging, StorageError,
};
use serde::{Deserialize, Serialize};

use crate::direct::{AlignedBuffer, StagedFile};
use crate::{COPY_BUFFER, STAGING, random_name, read_full, sends_more};

/// Bytes written between two `fdatasync`s and checkpoints of an append, at most.
const CHECKPOINT_BYTES: u64 = 8 * 1024 * 1024;
/// Time spent writing between two checkpoints of an append, at most (give or take one
/// buffer's read).
const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(1);
/// Bytes written after which a background flush is started while the append goes on reading,
/// so that the sync before a checkpoint finds little left to write.
const FLUSH_AHEAD: u64 = 2 * 1024 * 1024;

/// Starts the disk's writes of a staged file early: a thread that `fdatasync`s a handle of
/// the file whenever it is asked and not already busy. Nothing counts as durable because of
/// it (the append still syncs before each checkpoint); it only overlaps the disk's work with
/// the reading of the body, which otherwise waited for each other once per PATCH.
struct Flusher {
    asks: Option<std::sync::mpsc::SyncSender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Flusher {
    fn start(file: &File) -> Self {
        let Ok(handle) = file.try_clone() else {
            return Self {
                asks: None,
                thread: None,
            };
        };
        let (asks, asked) = std::sync::mpsc::sync_channel::<()>(1);
        let thread = std::thread::Builder::new()
            .name("medialib-flush".into())
            .spawn(move || {
                while asked.recv().is_ok() {
                    // A failure shows again at the append's own sync, which reports it.
                    let _ = handle.sync_data();
                }
            })
            .ok();
        Self {
            asks: thread.as_ref().map(|_| asks),
            thread,
        }
    }

    /// Asks for a flush unless one is pending already.
    fn ask(&self) {
        if let Some(asks) = &self.asks {
            let _ = asks.try_send(());
        }
    }
}

impl Drop for Flusher {
    fn drop(&mut self) {
        self.asks = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The media store in a directory.
#[derive(Debug, Clone)]
pub struct FileStorage {
    root: PathBuf,
    /// Whether appends write around the page cache where the file system allows
    /// ([`crate::direct`]).
    direct: bool,
}

/// What `Staging::state` holds for a staged upload in a directory.
#[derive(Debug, Serialize, Deserialize)]
struct FileStaging {
    /// The staging file's name in `{root}/staging~`.
    name: String,
    /// The upload's length.
    length: u64,
}

impl FileStorage {
    /// The store in `root`, which is created (with the staging area) when missing.
    pub fn open(root: PathBuf) -> Result<Self, StorageError> {
        fs::create_dir_all(root.join(STAGING)).map_err(io_error)?;
        let root = root.canonicalize().map_err(io_error)?;
        Ok(Self { root, direct: true })
    }

    /// The same store with every write through the page cache, as on a file system that
    /// refuses direct writes (the contract suite runs both ways).
    #[must_use]
    pub fn buffered(mut self) -> Self {
        self.direct = false;
        self
    }

    /// How many files the staging area holds, for tests that check that `finish` and
    /// `discard` leave nothing behind.
    #[cfg(feature = "testing")]
    pub fn staged_objects(&self) -> Result<usize, StorageError> {
        Ok(fs::read_dir(self.root.join(STAGING))
            .map_err(io_error)?
            .count())
    }

    fn path(&self, key: &StorageKey) -> PathBuf {
        // A key is relative `/`-separated segments, none `.` or `..`: it stays under root.
        self.root.join(key.as_str())
    }

    fn staging_path(&self, name: &str) -> PathBuf {
        self.root.join(STAGING).join(name)
    }

    fn info(&self, key: &StorageKey, meta: &Metadata) -> Result<ObjectInfo, StorageError> {
        if !meta.is_file() {
            return Err(StorageError::NotFound);
        }
        let nanos = meta
            .modified()
            .map_err(io_error)?
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let secs = i64::try_from(nanos / 1_000_000_000).unwrap_or(i64::MAX);
        Ok(ObjectInfo {
            key: key.clone(),
            size: meta.len(),
            modified: Timestamp::from_epoch_seconds(secs),
            etag: etag(meta, nanos),
        })
    }

    fn parse_state(staging: &Staging) -> Result<FileStaging, StorageError> {
        let state: FileStaging = serde_json::from_str(&staging.state)
            .map_err(|e| StorageError::Corrupt(format!("staging state: {e}")))?;
        let valid_name =
            state.name.len() == 32 && state.name.bytes().all(|b| b.is_ascii_hexdigit());
        if !valid_name {
            return Err(StorageError::Corrupt(
                "staging state: a bad file name".into(),
            ));
        }
        Ok(state)
    }

    fn try_append(
        &self,
        append: Append<'_>,
        durable: &mut u64,
    ) -> Result<Option<AppendStop>, StorageError> {
        let offset = append.offset;
        let state = Self::parse_state(append.staging)?;
        if offset > state.length {
            return Err(StorageError::Corrupt(format!(
                "offset {offset} is past the upload's length {}",
                state.length
            )));
        }
        let mut staged =
            StagedFile::open(&self.staging_path(&state.name), self.direct).map_err(io_error)?;
        let file = staged.file();
        let held = file.metadata().map_err(io_error)?.len();
        if held < offset {
            return Err(StorageError::Corrupt(format!(
                "the staged file holds {held} bytes, fewer than the offset {offset}"
            )));
        }
        // Bytes past the durable offset were left by a failed append: drop them.
        file.set_len(offset).map_err(io_error)?;

        let mut buffer = AlignedBuffer::new(COPY_BUFFER);
        let buf = buffer.as_mut_slice();
        let mut written = offset;
        let mut since = Instant::now();
        let mut checkpointed = false;
        let flusher = Flusher::start(staged.file());
        let mut flushed_at = offset;
        loop {
            let left = usize::try_from(state.length - written).unwrap_or(usize::MAX);
            let want = staged.next_len(written, left.min(buf.len()));
            let (n, failed) = if want == 0 {
                (0, None)
            } else {
                read_full(append.body, &mut buf[..want])
            };
            staged.write_at(&buf[..n], written).map_err(io_error)?;
            written += n as u64;
            if written - flushed_at >= FLUSH_AHEAD {
                flusher.ask();
                flushed_at = written;
            }
            let ended = failed.is_some() || n < want || want == 0;
            // At the end, a sync and a checkpoint only for bytes not yet made durable (an
            // 8 MiB PATCH would otherwise sync twice: at 8 MiB and at its end), but always
            // one checkpoint per append, as the port promises.
            let unsynced = written > *durable || !checkpointed;
            if (ended && unsynced)
                || written - *durable >= CHECKPOINT_BYTES
                || since.elapsed() >= CHECKPOINT_INTERVAL
            {
                staged.file().sync_data().map_err(io_error)?;
                *durable = written;
                if !(append.checkpoint)(append.staging, written) {
                    return Ok(Some(AppendStop::Checkpoint));
                }
                checkpointed = true;
                since = Instant::now();
            }
            if let Some(e) = failed {
                return Ok(Some(AppendStop::Body(e)));
            }
            if ended {
                let more = if written == state.length {
                    sends_more(append.body)
                } else {
                    None
                };
                return Ok(more.map(AppendStop::Body));
            }
        }
    }
}

/// A strong validator: the inode (a put renames a new file in), the size and the
/// modification time in nanoseconds.
fn etag(meta: &Metadata, mtime_nanos: u128) -> String {
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(meta);
    #[cfg(not(unix))]
    let inode = 0u64;
    format!("{inode:x}-{:x}-{mtime_nanos:x}", meta.len())
}

/// Maps a file system error: a missing file is `NotFound`, a full disk or quota `Full`.
fn io_error(e: io::Error) -> StorageError {
    // ENOSPC and EDQUOT on Linux, should the kind not say it.
    const ENOSPC: i32 = 28;
    const EDQUOT: i32 = 122;
    match e.kind() {
        io::ErrorKind::NotFound => StorageError::NotFound,
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded | io::ErrorKind::FileTooLarge => {
            StorageError::Full
        }
        _ if matches!(e.raw_os_error(), Some(ENOSPC | EDQUOT)) => StorageError::Full,
        _ => StorageError::Unexpected(e.to_string()),
    }
}

/// Makes a rename or a new entry in `dir` durable.
fn sync_dir(dir: &Path) -> Result<(), StorageError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io_error)
}

/// Copies `body` into `file` through one buffer.
fn copy(body: &mut dyn Read, file: &mut File) -> Result<(), StorageError> {
    let mut buf = vec![0u8; COPY_BUFFER];
    loop {
        let (n, failed) = read_full(body, &mut buf);
        file.write_all(&buf[..n]).map_err(io_error)?;
        if let Some(e) = failed {
            return Err(StorageError::Unexpected(format!("reading the body: {e}")));
        }
        if n < buf.len() {
            return Ok(());
        }
    }
}

impl MediaStorage for FileStorage {
    fn location(&self) -> String {
        format!("file://{}", self.root.display())
    }

    fn put(&self, key: &StorageKey, body: &mut dyn Read) -> Result<ObjectInfo, StorageError> {
        let target = self.path(key);
        let dir = target
            .parent()
            .ok_or_else(|| StorageError::Unexpected("a key names the root".into()))?;
        fs::create_dir_all(dir).map_err(io_error)?;
        let temporary = dir.join(format!(".{}~{}", key.file_name(), random_name()));
        let written = File::create_new(&temporary)
            .map_err(io_error)
            .and_then(|mut file| {
                copy(body, &mut file)?;
                file.sync_all().map_err(io_error)
            })
            .and_then(|()| fs::rename(&temporary, &target).map_err(io_error));
        if let Err(e) = written {
            let _ = fs::remove_file(&temporary);
            return Err(e);
        }
        sync_dir(dir)?;
        self.head(key)
    }

    fn head(&self, key: &StorageKey) -> Result<ObjectInfo, StorageError> {
        let meta = fs::metadata(self.path(key)).map_err(io_error)?;
        self.info(key, &meta)
    }

    fn read(&self, key: &StorageKey, span: Option<ByteSpan>) -> Result<Reading, StorageError> {
        let mut file = File::open(self.path(key)).map_err(io_error)?;
        let info = self.info(key, &file.metadata().map_err(io_error)?)?;
        let Some(span) = span else {
            let size = info.size;
            return Ok(Reading {
                info,
                span: None,
                body: Box::new(file.take(size)),
            });
        };
        if span.start() >= info.size {
            return Err(StorageError::OutOfRange);
        }
        let end = span.end().min(info.size);
        let cut =
            ByteSpan::new(span.start(), end - span.start()).ok_or(StorageError::OutOfRange)?;
        file.seek(SeekFrom::Start(cut.start())).map_err(io_error)?;
        Ok(Reading {
            info,
            span: Some(cut),
            body: Box::new(file.take(cut.len())),
        })
    }

    fn delete(&self, key: &StorageKey) -> Result<(), StorageError> {
        match fs::remove_file(self.path(key)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_error(e)),
        }
    }

    fn list(&self, prefix: &StorageKey) -> Result<Vec<ObjectInfo>, StorageError> {
        let mut found = Vec::new();
        let mut dirs = vec![self.path(prefix)];
        while let Some(dir) = dirs.pop() {
            let entries = match fs::read_dir(&dir) {
                Ok(entries) => entries,
                // Not there, or the prefix is an object itself (not `prefix/…`).
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                    ) =>
                {
                    continue;
                }
                Err(e) => return Err(io_error(e)),
            };
            for entry in entries {
                let entry = entry.map_err(io_error)?;
                let path = entry.path();
                let meta = match fs::metadata(&path) {
                    Ok(meta) => meta,
                    // Deleted or renamed while we looked.
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(io_error(e)),
                };
                if meta.is_dir() {
                    dirs.push(path);
                    continue;
                }
                // Temporary files (a `~` in the name) are no keys.
                let key = path
                    .strip_prefix(&self.root)
                    .ok()
                    .and_then(|relative| relative.to_str())
                    .and_then(|relative| StorageKey::parse(relative).ok());
                if let Some(key) = key {
                    found.push(self.info(&key, &meta)?);
                }
            }
        }
        Ok(found)
    }

    fn stage(&self, key: &StorageKey, length: u64) -> Result<Staging, StorageError> {
        let name = random_name();
        File::create_new(self.staging_path(&name)).map_err(io_error)?;
        sync_dir(&self.root.join(STAGING))?;
        let state = serde_json::to_string(&FileStaging { name, length })
            .map_err(|e| StorageError::Unexpected(e.to_string()))?;
        Ok(Staging {
            key: key.clone(),
            state,
        })
    }

    fn append(&self, append: Append<'_>) -> Appended {
        let staging = append.staging;
        let mut durable = append.offset;
        let stopped = match self.try_append(append, &mut durable) {
            Ok(stopped) => stopped,
            Err(e) => Some(AppendStop::Storage(e)),
        };
        Appended {
            staging: staging.clone(),
            offset: durable,
            stopped,
        }
    }

    fn finish(&self, staging: &Staging) -> Result<ObjectInfo, StorageError> {
        let state = Self::parse_state(staging)?;
        let staged = self.staging_path(&state.name);
        let file = match File::open(&staged) {
            Ok(file) => file,
            // Finished already (a retry after the rename): the object is there, whole.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return match self.head(&staging.key) {
                    Ok(info) if info.size == state.length => Ok(info),
                    _ => Err(StorageError::NotFound),
                };
            }
            Err(e) => return Err(io_error(e)),
        };
        let held = file.metadata().map_err(io_error)?.len();
        if held != state.length {
            return Err(StorageError::Corrupt(format!(
                "the staged file holds {held} of {} bytes",
                state.length
            )));
        }
        file.sync_all().map_err(io_error)?;
        let target = self.path(&staging.key);
        let dir = target
            .parent()
            .ok_or_else(|| StorageError::Unexpected("a key names the root".into()))?;
        fs::create_dir_all(dir).map_err(io_error)?;
        fs::rename(&staged, &target).map_err(io_error)?;
        sync_dir(dir)?;
        sync_dir(&self.root.join(STAGING))?;
        self.head(&staging.key)
    }

    fn discard(&self, staging: &Staging) -> Result<(), StorageError> {
        let state = Self::parse_state(staging)?;
        match fs::remove_file(self.staging_path(&state.name)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_error(e)),
        }
    }

    fn presign(&self, _key: &StorageKey, _until: Timestamp) -> Option<String> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_or_quota_is_full() {
        for full in [
            io::Error::from_raw_os_error(28),
            io::Error::from_raw_os_error(122),
            io::Error::from(io::ErrorKind::StorageFull),
            io::Error::from(io::ErrorKind::QuotaExceeded),
        ] {
            assert_eq!(io_error(full), StorageError::Full);
        }
        assert_eq!(
            io_error(io::Error::from(io::ErrorKind::NotFound)),
            StorageError::NotFound
        );
        assert!(matches!(
            io_error(io::Error::from(io::ErrorKind::PermissionDenied)),
            StorageError::Unexpected(_)
        ));
    }
}
