//! The media store in an S3 bucket, through `object_store`.
//!
//! An object is `{prefix}/{key}`. object_store is async: the store owns a small tokio runtime
//! (two workers) and every call waits for its future from the calling thread with
//! `Handle::block_on`, which works on any thread that is not itself running async tasks (the
//! port's callers are on blocking threads, a `spawn_blocking` thread of another runtime
//! included). A read streams: its body pulls one chunk of the HTTP response at a time.
//!
//! A staged upload is an S3 multipart upload; see [`staging`] for how appends of any size
//! become parts of at least 5 MiB.

mod budget;
mod errors;
mod staging;

use std::fmt;
use std::io::{self, Read};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use futures_util::StreamExt as _;
use futures_util::stream::BoxStream;
use medialib_domain::media::{ByteSpan, StorageKey};
use medialib_domain::{Secret, Timestamp};
use medialib_ports::{Append, Appended, MediaStorage, ObjectInfo, Reading, Staging, StorageError};
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::multipart::{MultipartStore as _, PartId};
use object_store::path::Path;
use object_store::signer::Signer as _;
use object_store::{
    BackoffConfig, ClientOptions, GetOptions, GetRange, ObjectMeta, ObjectStore as _,
    ObjectStoreExt as _, PutPayload, RetryConfig,
};

use crate::read_full;
use errors::s3_error;

/// The part size of a whole-object `put` that does not fit in one request.
const PUT_PART: usize = 8 * 1024 * 1024;
/// The bytes all uploads to one store may hold in memory at once ([`budget`]): four uploads
/// with 5 MiB parts, or three one-shot puts.
const BUFFER_MEMORY: u64 = 24 * 1024 * 1024;
/// How long an upload waits for its share of [`BUFFER_MEMORY`] before it is told to retry.
const BUFFER_WAIT: Duration = Duration::from_secs(30);

/// Where an S3 store is and how to sign in to it.
#[derive(Clone, PartialEq, Eq)]
pub struct S3Config {
    /// The bucket.
    pub bucket: String,
    /// The prefix inside the bucket every key is stored under (`""`: none).
    pub prefix: String,
    /// The endpoint (`http://127.0.0.1:3900`); `None`: Amazon S3 of `region`.
    pub endpoint: Option<String>,
    /// The region (`garage` for Garage, `us-east-1` …).
    pub region: String,
    /// The access key id.
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: Secret,
    /// Whether an `http://` endpoint is allowed.
    pub allow_http: bool,
}

impl fmt::Debug for S3Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Config")
            .field("bucket", &self.bucket)
            .field("prefix", &self.prefix)
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &self.secret_access_key)
            .field("allow_http", &self.allow_http)
            .finish()
    }
}

/// The store's own runtime, shut down without waiting when the last user (the store, a
/// reading body) lets go of it, so that dropping it on an async thread does not panic.
#[derive(Debug)]
struct Runtime {
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
}

impl Runtime {
    fn new() -> Result<Self, StorageError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("medialib-s3")
            .enable_all()
            .build()
            .map_err(|e| StorageError::Unexpected(format!("starting the S3 runtime: {e}")))?;
        Ok(Self {
            handle: runtime.handle().clone(),
            runtime: Some(runtime),
        })
    }

    /// Runs `future` on this runtime and waits for it on the calling thread.
    fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.handle.block_on(future)
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// The media store in an S3 bucket.
#[derive(Debug)]
pub struct S3Storage {
    store: AmazonS3,
    runtime: Arc<Runtime>,
    /// The memory uploads may hold before their bytes are sent.
    buffers: budget::Budget,
    /// The chunks those bytes are read into, reused.
    chunks: Arc<budget::Chunks>,
    /// The prefix without slashes at either end (`""`: none).
    prefix: String,
    location: String,
}

impl S3Storage {
    /// The store that `config` describes. Nothing is sent yet: an unreachable endpoint shows
    /// at the first call.
    pub fn open(config: S3Config) -> Result<Self, StorageError> {
        let prefix = config.prefix.trim_matches('/').to_owned();
        if !prefix.is_empty() {
            Path::parse(&prefix)
                .map_err(|e| StorageError::Unexpected(format!("the S3 prefix: {e}")))?;
        }
        let client = ClientOptions::new()
            .with_allow_http(config.allow_http)
            .with_connect_timeout(Duration::from_secs(5))
            .with_timeout(Duration::from_secs(120));
        // A few quick retries: a store that stays down is `Unavailable` within seconds, and
        // the caller (a tus client) retries the request.
        let retry = RetryConfig {
            backoff: BackoffConfig::default(),
            max_retries: 3,
            retry_timeout: Duration::from_secs(15),
        };
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&config.bucket)
            .with_region(&config.region)
            .with_access_key_id(&config.access_key_id)
            .with_secret_access_key(config.secret_access_key.expose())
            .with_allow_http(config.allow_http)
            .with_client_options(client)
            .with_retry(retry);
        if let Some(endpoint) = &config.endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        let store = builder
            .build()
            .map_err(|e| StorageError::Unexpected(format!("configuring S3: {e}")))?;
        let location = match &config.endpoint {
            Some(endpoint) => format!("s3://{}/{prefix} at {endpoint}", config.bucket),
            None => format!("s3://{}/{prefix} in {}", config.bucket, config.region),
        };
        Ok(Self {
            store,
            runtime: Arc::new(Runtime::new()?),
            buffers: budget::Budget::new(BUFFER_MEMORY, BUFFER_WAIT),
            chunks: budget::Chunks::new(
                crate::COPY_BUFFER,
                usize::try_from(BUFFER_MEMORY).unwrap_or(usize::MAX) / crate::COPY_BUFFER,
            ),
            prefix,
            location,
        })
    }

    fn run<F: Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// The object path of `relative` (a key, or a staging path) under the prefix.
    fn path(&self, relative: &str) -> Result<Path, StorageError> {
        let full = if self.prefix.is_empty() {
            relative.to_owned()
        } else {
            format!("{}/{relative}", self.prefix)
        };
        Path::parse(full).map_err(|e| StorageError::Unexpected(format!("an object path: {e}")))
    }

    fn key_path(&self, key: &StorageKey) -> Result<Path, StorageError> {
        self.path(key.as_str())
    }

    fn info(&self, key: StorageKey, meta: &ObjectMeta) -> ObjectInfo {
        let etag = match &meta.e_tag {
            Some(tag) => tag.trim_matches('"').to_owned(),
            None => format!(
                "{:x}-{:x}",
                meta.size,
                meta.last_modified.timestamp_nanos_opt().unwrap_or_default()
            ),
        };
        ObjectInfo {
            key,
            size: meta.size,
            modified: Timestamp::from_epoch_seconds(meta.last_modified.timestamp()),
            etag,
        }
    }

    /// Every object under `relative/`, as object_store lists it.
    fn list_paths(&self, relative: &str) -> Result<Vec<ObjectMeta>, StorageError> {
        let prefix = self.path(relative)?;
        self.run(async {
            let mut listed = self.store.list(Some(&prefix));
            let mut found = Vec::new();
            while let Some(meta) = listed.next().await {
                found.push(meta.map_err(s3_error)?);
            }
            Ok(found)
        })
    }

    /// Deletes every object under `relative/`.
    fn delete_all(&self, relative: &str) -> Result<(), StorageError> {
        for meta in self.list_paths(relative)? {
            match self
                .run(self.store.delete(&meta.location))
                .map_err(s3_error)
            {
                Ok(()) | Err(StorageError::NotFound) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// How many objects the staging area holds (tails of staged uploads), for tests that
    /// check that `finish` and `discard` leave nothing behind.
    #[cfg(feature = "testing")]
    pub fn staged_objects(&self) -> Result<usize, StorageError> {
        Ok(self.list_paths(crate::STAGING)?.len())
    }

    /// Writes a body too large for one request as a multipart upload, one part in memory.
    fn put_parts(
        &self,
        path: &Path,
        first: Vec<u8>,
        body: &mut dyn Read,
    ) -> Result<(), StorageError> {
        let upload = self
            .run(self.store.create_multipart(path))
            .map_err(s3_error)?;
        let written = (|| {
            let mut parts = Vec::new();
            let mut buf = first;
            loop {
                let payload = PutPayload::from(Bytes::from(buf));
                let part = self
                    .run(self.store.put_part(path, &upload, parts.len(), payload))
                    .map_err(s3_error)?;
                parts.push(part);
                let mut next = vec![0u8; PUT_PART];
                let (n, failed) = read_full(body, &mut next);
                if let Some(e) = failed {
                    return Err(StorageError::Unexpected(format!("reading the body: {e}")));
                }
                next.truncate(n);
                if n == 0 {
                    break;
                }
                buf = next;
            }
            self.run(self.store.complete_multipart(path, &upload, parts))
                .map_err(s3_error)
        })();
        if let Err(e) = written {
            let _ = self.run(self.store.abort_multipart(path, &upload));
            return Err(e);
        }
        Ok(())
    }

    fn complete(
        &self,
        path: &Path,
        upload: &String,
        parts: Vec<PartId>,
    ) -> Result<(), StorageError> {
        self.run(self.store.complete_multipart(path, upload, parts))
            .map(|_| ())
            .map_err(s3_error)
    }
}

/// A reading body: pulls the response's chunks one at a time, on the store's runtime.
struct StreamRead {
    runtime: Arc<Runtime>,
    stream: BoxStream<'static, object_store::Result<Bytes>>,
    chunk: Bytes,
    left: u64,
}

impl Read for StreamRead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() || self.left == 0 {
            return Ok(0);
        }
        while self.chunk.is_empty() {
            match self.runtime.block_on(self.stream.next()) {
                Some(Ok(chunk)) => self.chunk = chunk,
                Some(Err(e)) => return Err(io::Error::other(e)),
                None => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the object store's response ended early",
                    ));
                }
            }
        }
        let n = buf.len().min(self.chunk.len());
        let n = n.min(usize::try_from(self.left).unwrap_or(usize::MAX));
        buf[..n].copy_from_slice(&self.chunk.split_to(n));
        self.left -= n as u64;
        Ok(n)
    }
}

impl MediaStorage for S3Storage {
    fn location(&self) -> String {
        self.location.clone()
    }

    fn put(&self, key: &StorageKey, body: &mut dyn Read) -> Result<ObjectInfo, StorageError> {
        let path = self.key_path(key)?;
        let _share = self.buffers.take(PUT_PART as u64)?;
        let mut first = vec![0u8; PUT_PART];
        let (n, failed) = read_full(body, &mut first);
        if let Some(e) = failed {
            return Err(StorageError::Unexpected(format!("reading the body: {e}")));
        }
        first.truncate(n);
        if n < PUT_PART {
            self.run(self.store.put(&path, PutPayload::from(first)))
                .map_err(s3_error)?;
        } else {
            self.put_parts(&path, first, body)?;
        }
        self.head(key)
    }

    fn head(&self, key: &StorageKey) -> Result<ObjectInfo, StorageError> {
        let path = self.key_path(key)?;
        let meta = self.run(self.store.head(&path)).map_err(s3_error)?;
        Ok(self.info(key.clone(), &meta))
    }

    fn read(&self, key: &StorageKey, span: Option<ByteSpan>) -> Result<Reading, StorageError> {
        let path = self.key_path(key)?;
        let options = GetOptions {
            range: span.map(|s| GetRange::Bounded(s.start()..s.end())),
            ..GetOptions::default()
        };
        let result = self
            .run(self.store.get_opts(&path, options))
            .map_err(s3_error)?;
        let info = self.info(key.clone(), &result.meta);
        let range = result.range.clone();
        let cut = match span {
            None => None,
            Some(_) => Some(
                ByteSpan::new(range.start, range.end - range.start)
                    .ok_or(StorageError::OutOfRange)?,
            ),
        };
        Ok(Reading {
            info,
            span: cut,
            body: Box::new(StreamRead {
                runtime: Arc::clone(&self.runtime),
                stream: result.into_stream(),
                chunk: Bytes::new(),
                left: range.end - range.start,
            }),
        })
    }

    fn delete(&self, key: &StorageKey) -> Result<(), StorageError> {
        let path = self.key_path(key)?;
        match self.run(self.store.delete(&path)).map_err(s3_error) {
            Ok(()) | Err(StorageError::NotFound) => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn list(&self, prefix: &StorageKey) -> Result<Vec<ObjectInfo>, StorageError> {
        // object_store lists by whole segments: `a/1` finds `a/1/x`, not `a/10/x`.
        let under = match self.prefix.is_empty() {
            true => String::new(),
            false => format!("{}/", self.prefix),
        };
        Ok(self
            .list_paths(prefix.as_str())?
            .into_iter()
            .filter_map(|meta| {
                let key = meta.location.as_ref().strip_prefix(&under)?;
                let key = StorageKey::parse(key).ok()?;
                Some(self.info(key, &meta))
            })
            .collect())
    }

    fn stage(&self, key: &StorageKey, length: u64) -> Result<Staging, StorageError> {
        staging::stage(self, key, length)
    }

    fn append(&self, a: Append<'_>) -> Appended {
        staging::append(self, a.staging, a.offset, a.body, a.checkpoint)
    }

    fn finish(&self, staging: &Staging) -> Result<ObjectInfo, StorageError> {
        staging::finish(self, staging)
    }

    fn discard(&self, staging: &Staging) -> Result<(), StorageError> {
        staging::discard(self, staging)
    }

    fn presign(&self, key: &StorageKey, until: Timestamp) -> Option<String> {
        let path = self.key_path(key).ok()?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let now = i64::try_from(now).unwrap_or(i64::MAX);
        // S3 signs for one second to seven days.
        let seconds = until
            .epoch_seconds()
            .saturating_sub(now)
            .clamp(1, 7 * 24 * 3600);
        let expires_in = Duration::from_secs(seconds.unsigned_abs());
        match self.run(self.store.signed_url(http::Method::GET, &path, expires_in)) {
            Ok(url) => Some(url.to_string()),
            Err(e) => {
                tracing::warn!(error = %e, "presigning a media URL failed");
                None
            }
        }
    }
}
