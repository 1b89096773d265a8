//! The media store: where uploaded and derived media bytes live (a directory, an S3 bucket).
//!
//! The port is blocking, like the repositories: use cases run on the HTTP layer's blocking
//! threads and hand bodies over as [`std::io::Read`]. Bytes are streamed, never held whole in
//! memory (an adapter may buffer one part of a multipart upload).

use std::fmt;
use std::io::Read;

use medialib_domain::Timestamp;
use medialib_domain::media::{ByteSpan, StorageKey};

/// What the store knows of one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    /// Its key.
    pub key: StorageKey,
    /// Its size in bytes.
    pub size: u64,
    /// When it was last written (whole seconds).
    pub modified: Timestamp,
    /// A strong validator that changes whenever the bytes change, without quotes.
    pub etag: String,
}

/// Bytes being read from the store.
pub struct Reading {
    /// The object read.
    pub info: ObjectInfo,
    /// The span read; `None`: the whole object.
    pub span: Option<ByteSpan>,
    /// The bytes (exactly `span.len()`, or `info.size`).
    pub body: Box<dyn Read + Send>,
}

impl fmt::Debug for Reading {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reading")
            .field("info", &self.info)
            .field("span", &self.span)
            .finish_non_exhaustive()
    }
}

/// Why a storage operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StorageError {
    /// No object under that key.
    #[error("no such stored object")]
    NotFound,
    /// The requested span starts at or past the end of the object.
    #[error("the requested range lies outside the stored object")]
    OutOfRange,
    /// The store has no space left (a full disk, a bucket quota): 507.
    #[error("the media storage is out of space")]
    Full,
    /// The store cannot be reached now; trying again later may work: 503 + Retry-After.
    #[error("the media storage is unavailable: {0}")]
    Unavailable(String),
    /// A staged upload's state does not match what the store holds.
    #[error("the staged upload does not match the media storage: {0}")]
    Corrupt(String),
    /// Anything else.
    #[error("unexpected media storage error: {0}")]
    Unexpected(String),
}

/// An upload being assembled in the store: the final key and the adapter's own state (part
/// numbers, tags, an upload id), which the caller keeps in the database beside the offset
/// and hands back unchanged. The bytes become visible under `key` only by
/// [`MediaStorage::finish`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Staging {
    /// The key the finished upload is stored under.
    pub key: StorageKey,
    /// The adapter's state, opaque to everyone else (a few bytes for a file; for S3, every
    /// part's tag: about 36 bytes a part, some 150 KB for a 20 GiB upload).
    pub state: String,
}

/// Why [`MediaStorage::append`] stopped before the end of the body.
#[derive(Debug)]
pub enum AppendStop {
    /// Reading the body failed: the client went away, sent too much, or the caller's
    /// reader refused what it read (the message says why).
    Body(std::io::Error),
    /// The store failed.
    Storage(StorageError),
    /// The checkpoint callback asked to stop (it lost the upload's lock).
    Checkpoint,
}

/// What [`MediaStorage::append`] achieved.
#[derive(Debug)]
pub struct Appended {
    /// The state to keep for the next append.
    pub staging: Staging,
    /// The offset up to which every byte is durable in the store.
    pub offset: u64,
    /// Why it stopped early; `None` when the body was read to its end and is all durable.
    pub stopped: Option<AppendStop>,
}

/// Told by [`MediaStorage::append`] each time the bytes up to `offset` are durable, with the
/// state that describes them. The adapter calls it only when every byte it has read from the
/// body so far is durable, so a caller that hashes the body as it is read knows the hash of
/// exactly `[0, offset)`. Returning `false` stops the append ([`AppendStop::Checkpoint`]).
pub type Checkpoint<'a> = dyn FnMut(&Staging, u64) -> bool + 'a;

/// What [`MediaStorage::append`] is asked: append `body` to the staged upload `staging`,
/// whose durable bytes end at `offset` (the offset the caller last recorded with `staging`;
/// bytes the store holds beyond it, left by a failed append, are overwritten), calling
/// `checkpoint` whenever a prefix is durable (at least at the end).
pub struct Append<'a> {
    /// The staged upload, as the caller last recorded it.
    pub staging: &'a Staging,
    /// Where its durable bytes end.
    pub offset: u64,
    /// The bytes to append.
    pub body: &'a mut dyn Read,
    /// Told of each durable prefix; `false` stops the append.
    pub checkpoint: &'a mut Checkpoint<'a>,
}

impl fmt::Debug for Append<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Append")
            .field("staging", self.staging)
            .field("offset", &self.offset)
            .finish_non_exhaustive()
    }
}

impl Append<'_> {
    /// The answer of an append that stopped, for `why`, with its bytes durable up to `offset`.
    pub fn stopped(staging: &Staging, offset: u64, why: AppendStop) -> Appended {
        Appended {
            staging: staging.clone(),
            offset,
            stopped: Some(why),
        }
    }
}

/// The media store.
pub trait MediaStorage: Send + Sync + fmt::Debug {
    /// Where the store is, for operators (`file:///srv/media`, `s3://bucket/prefix`), with no
    /// secret in it.
    fn location(&self) -> String;

    /// Writes a whole object from `body`, replacing any object under `key`. The object appears
    /// whole or not at all.
    fn put(&self, key: &StorageKey, body: &mut dyn Read) -> Result<ObjectInfo, StorageError>;

    /// What the store knows of `key`.
    fn head(&self, key: &StorageKey) -> Result<ObjectInfo, StorageError>;

    /// Reads `key`, or the span of it. A span reaching past the end is cut at the end; one
    /// starting at or past the end is [`StorageError::OutOfRange`].
    fn read(&self, key: &StorageKey, span: Option<ByteSpan>) -> Result<Reading, StorageError>;

    /// Deletes `key`. Deleting what is not there succeeds.
    fn delete(&self, key: &StorageKey) -> Result<(), StorageError>;

    /// Every object whose key lies under `prefix` (`prefix/…`), in no particular order.
    fn list(&self, prefix: &StorageKey) -> Result<Vec<ObjectInfo>, StorageError>;

    /// Begins assembling an upload of `length` bytes that [`MediaStorage::finish`] will store
    /// under `key`.
    fn stage(&self, key: &StorageKey, length: u64) -> Result<Staging, StorageError>;

    /// Does what [`Append`] asks: reads its body to the end unless something stops it.
    fn append(&self, append: Append<'_>) -> Appended;

    /// Stores the staged bytes `[0, length)` under the staging's key and forgets the staging.
    fn finish(&self, staging: &Staging) -> Result<ObjectInfo, StorageError>;

    /// Forgets a staged upload and its bytes. Discarding what is gone succeeds.
    fn discard(&self, staging: &Staging) -> Result<(), StorageError>;

    /// A URL of the object store itself that serves `key` until `until`, for stores that can
    /// presign one (S3); `None` where the store cannot (the file system).
    fn presign(&self, key: &StorageKey, until: Timestamp) -> Option<String>;
}

/// The store of a service that keeps no media: every operation is
/// [`StorageError::Unavailable`] (the default of [`Services`](crate::Services) until
/// [`Services::with_storage`](crate::Services::with_storage) names one).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoStorage;

const NO_STORAGE: &str = "no media storage is configured";

impl MediaStorage for NoStorage {
    fn location(&self) -> String {
        "none".to_owned()
    }

    fn put(&self, _: &StorageKey, _: &mut dyn Read) -> Result<ObjectInfo, StorageError> {
        Err(StorageError::Unavailable(NO_STORAGE.to_owned()))
    }

    fn head(&self, _: &StorageKey) -> Result<ObjectInfo, StorageError> {
        Err(StorageError::Unavailable(NO_STORAGE.to_owned()))
    }

    fn read(&self, _: &StorageKey, _: Option<ByteSpan>) -> Result<Reading, StorageError> {
        Err(StorageError::Unavailable(NO_STORAGE.to_owned()))
    }

    fn delete(&self, _: &StorageKey) -> Result<(), StorageError> {
        Err(StorageError::Unavailable(NO_STORAGE.to_owned()))
    }

    fn list(&self, _: &StorageKey) -> Result<Vec<ObjectInfo>, StorageError> {
        Err(StorageError::Unavailable(NO_STORAGE.to_owned()))
    }

    fn stage(&self, _: &StorageKey, _: u64) -> Result<Staging, StorageError> {
        Err(StorageError::Unavailable(NO_STORAGE.to_owned()))
    }

    fn append(&self, append: Append<'_>) -> Appended {
        let why = AppendStop::Storage(StorageError::Unavailable(NO_STORAGE.to_owned()));
        Append::stopped(append.staging, append.offset, why)
    }

    fn finish(&self, _: &Staging) -> Result<ObjectInfo, StorageError> {
        Err(StorageError::Unavailable(NO_STORAGE.to_owned()))
    }

    fn discard(&self, _: &Staging) -> Result<(), StorageError> {
        Err(StorageError::Unavailable(NO_STORAGE.to_owned()))
    }

    fn presign(&self, _: &StorageKey, _: Timestamp) -> Option<String> {
        None
    }
}
