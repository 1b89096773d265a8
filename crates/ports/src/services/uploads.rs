//! Upload use cases (tus 1.0 and the one-shot PUT), an object's media, and delivery of its
//! stored files through signed URLs (DECISIONS §7).
//!
//! Bytes stream from the HTTP layer's reader into [`MediaStorage`]; the database keeps the
//! bookkeeping ([`UploadRepository`]). Every rule (limits, offsets, expiry, file names,
//! signatures, ranges) is the domain's; these functions order the steps and keep the two
//! stores consistent: storage first, then the row that points at it, so a crash leaves at
//! worst unreferenced bytes (which housekeeping removes), never a row pointing at nothing.

use std::cell::RefCell;
use std::io::{self, Read};
use std::sync::{Arc, OnceLock};

use medialib_domain::media::derive::MediaKind;
use medialib_domain::media::probe::Dimensions;
use medialib_domain::media::{
    ByteSpan, FileName, MediaSigningKey, MediaState, PatchChecksum, PatchRefused, ResumableSha256,
    StorageKey, UploadDescription, UploadLimits, UploadNotAdmitted, UploadProgress, UrlRefused,
    content_type_of,
};
use medialib_domain::object::SOFT_DELETE_RETENTION_SECS;
use medialib_domain::{
    Action, Caller, IdOrZero, Lifetime, MediaObject, NewObject, ObjectId, ObjectType, Refusal,
    ShortCode, Timestamp,
};
use sha2::Digest as _;

use crate::error::StoreError;
use crate::failures::failures;
use crate::jobs::JobRepository;
use crate::repos::CreateObjectError;
use crate::storage::{Append, AppendStop, MediaStorage, ObjectInfo, Reading, StorageError};
use crate::uploads::{
    Finish, LockRequest, MediaRecord, NewMedia, Progress, SourceFile, UploadLock, UploadRecord,
    UploadRepository,
};
use crate::world::RandomExt;

use super::{MediaServices, World};

/// Settings of the upload use cases.
#[derive(Debug, Clone)]
pub struct UploadSettings {
    /// `upload_max_size` and `storage_quota`.
    pub limits: UploadLimits,
    /// `upload_expiry`: how long an unfinished upload lives.
    pub expiry: Lifetime,
    /// `media_url_ttl`: how long a delivery URL opens its files.
    pub url_ttl: Lifetime,
    /// `media_signing_key`, when the operator sets one (else the database's).
    pub signing_key: Option<MediaSigningKey>,
    /// This process's name among those sharing the database (a lock holder is
    /// `{instance}:{boot}`; see [`UploadServices::release_stale_locks`]).
    pub instance: String,
}

impl Default for UploadSettings {
    /// DECISIONS §7's defaults: 20 GiB uploads, no quota, a day to finish, URLs for 6 hours.
    fn default() -> Self {
        Self {
            limits: UploadLimits {
                max_size: 20 << 30,
                quota: None,
            },
            expiry: Lifetime::from_nonzero(nonzero(86_400)),
            url_ttl: Lifetime::from_nonzero(nonzero(6 * 3_600)),
            signing_key: None,
            instance: "medialib".to_owned(),
        }
    }
}

const fn nonzero(n: u32) -> std::num::NonZeroU32 {
    match std::num::NonZeroU32::new(n) {
        Some(n) => n,
        None => std::num::NonZeroU32::MIN,
    }
}

/// How long a PATCH holds an upload's lock without progress before another may take it.
const LOCK_LEASE_SECONDS: i64 = 60;

/// Upload, media and delivery use cases.
#[derive(Clone)]
pub struct UploadServices {
    pub(crate) world: World,
    pub(crate) objects: MediaServices,
    pub(crate) uploads: Arc<dyn UploadRepository>,
    pub(crate) jobs: Arc<dyn JobRepository>,
    pub(crate) storage: Arc<dyn MediaStorage>,
    settings: UploadSettings,
    /// `{instance}:{random}`: who holds the locks this process takes.
    holder: Arc<str>,
    key: Arc<OnceLock<MediaSigningKey>>,
}

impl std::fmt::Debug for UploadServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UploadServices")
            .field("settings", &self.settings)
            .field("storage", &self.storage.location())
            .finish_non_exhaustive()
    }
}

failures! {
    /// Starting an upload failed.
    pub enum BeginUploadFailed {
        CollectionNotFound,
        NotACollection,
        NotFound,
        /// The object cannot carry media.
        #[error("a catalog carries no media: upload into a video, audio, image or file object")]
        NotMedia,
        /// Limits.
        #[error(transparent)]
        NotAdmitted(#[from] UploadNotAdmitted),
        /// The media storage failed.
        #[error(transparent)]
        Storage(#[from] StorageError),
        Refused(Refusal),
        Store(StoreError),
    }

    /// Reading or ending an upload (HEAD, DELETE) failed.
    pub enum UploadLookupFailed {
        /// No upload in progress for this object (tus: 404).
        #[error("no upload in progress for this object")]
        NoUpload,
        NotFound,
        /// The media storage failed.
        #[error(transparent)]
        Storage(#[from] StorageError),
        Refused(Refusal),
        Store(StoreError),
    }

    /// A PATCH failed.
    pub enum AppendFailed {
        /// No upload in progress for this object (404).
        #[error("no upload in progress for this object")]
        NoUpload,
        NotFound,
        /// Another request is writing to this upload (409).
        #[error("another request is uploading to this upload now; try again when it ends")]
        Busy,
        /// Offset or expiry (409, 410).
        #[error(transparent)]
        Patch(#[from] PatchRefused),
        /// The body holds more bytes than the upload has left (413).
        #[error("the request body holds more bytes than the upload's Upload-Length leaves")]
        TooLong,
        /// The body's SHA-256 is not the `Upload-Checksum` (460); nothing was kept.
        #[error("the request body does not match its Upload-Checksum; nothing of it was kept")]
        ChecksumMismatch,
        /// The client's body broke off; what arrived before is kept.
        #[error("the request body broke off: {0}")]
        Body(String),
        /// The lock was lost to another request mid-way (409).
        #[error("another request took over this upload")]
        LockLost,
        /// The media storage failed.
        #[error(transparent)]
        Storage(#[from] StorageError),
        Refused(Refusal),
        Store(StoreError),
    }

    /// The one-shot upload failed.
    pub enum PutFileFailed {
        CollectionNotFound,
        NotACollection,
        /// The description does not parse.
        #[error(transparent)]
        Description(#[from] medialib_domain::media::InvalidDescription),
        /// Limits.
        #[error(transparent)]
        NotAdmitted(#[from] UploadNotAdmitted),
        /// The client's body broke off.
        #[error("the request body broke off: {0}")]
        Body(String),
        /// The media storage failed.
        #[error(transparent)]
        Storage(#[from] StorageError),
        Refused(Refusal),
        Store(StoreError),
    }

    /// Reading or changing an object's media failed.
    pub enum MediaFailed {
        NotFound,
        /// The object has no media (nothing uploaded yet).
        #[error("this object has no media yet")]
        NoMedia,
        /// The object's type has no processing (a file is served as uploaded): 409.
        #[error("media of this object's type is not processed: files are served as uploaded")]
        NotProcessed,
        /// The media storage failed.
        #[error(transparent)]
        Storage(#[from] StorageError),
        Refused(Refusal),
        Store(StoreError),
    }

    /// A delivery URL did not open a file.
    pub enum DeliverFailed {
        /// Tampered or expired (403).
        #[error(transparent)]
        Url(#[from] UrlRefused),
        /// No such object, media or file (404).
        #[error("no such media file")]
        Missing,
        /// The media storage failed.
        #[error(transparent)]
        Storage(#[from] StorageError),
        Store(StoreError),
    }
}

/// Where an upload goes: a new object in a collection, or an existing object's media.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UploadTarget {
    /// The collection of the path.
    pub collection: ObjectId,
    /// `0` (a new object) or the object whose media the upload replaces.
    pub object: IdOrZero<ObjectId>,
}

impl UploadTarget {
    /// What the gate is asked: creating in the collection, or editing through it.
    pub fn action(self) -> Action {
        match self.object {
            IdOrZero::Zero => Action::CreateIn {
                collection: self.collection,
            },
            IdOrZero::Id(_) => Action::Edit {
                collection: self.collection,
            },
        }
    }
}

/// What a PATCH achieved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendDone {
    /// The new offset.
    pub offset: u64,
    /// The upload's expiry.
    pub expires: Timestamp,
    /// The upload is complete: the object's media is stored (and queued for processing).
    pub finished: bool,
}

/// A stored file as a delivery URL names it.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// Where it is.
    pub key: StorageKey,
    /// What the store knows of it (size, modified, ETag); `None` when redirecting.
    pub info: Option<ObjectInfo>,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// The name to offer when it is downloaded.
    pub filename: Option<FileName>,
    /// A URL of the object store to redirect to instead (`storage_redirect`), when asked for
    /// and the store can presign.
    pub redirect: Option<String>,
}

/// A file of an object's media as records list it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaFile {
    /// `source`, or a derived file's role (`rendition`, `hls`, … see
    /// [`FileRole`](medialib_domain::media::derived::FileRole)).
    pub role: &'static str,
    /// The format (the extension).
    pub format: String,
    /// A signed delivery URL, path only (`/m/…`): the HTTP layer prefixes the base URL.
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// The picture's size (renditions, stills, sprite sheets).
    pub dimensions: Option<Dimensions>,
    /// Bits a second (renditions).
    pub bitrate: Option<u32>,
}

/// An object's media as the `media` call shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaView {
    /// The record.
    pub record: MediaRecord,
    /// Its files with fresh URLs.
    pub files: Vec<MediaFile>,
}

/// A reader that hashes what passes through it, refuses more than `limit` bytes and counts.
struct Metered<'a> {
    inner: &'a mut dyn Read,
    whole: &'a RefCell<ResumableSha256>,
    patch: Option<sha2::Sha256>,
    left: u64,
    /// Set when the body held more bytes than allowed; shared with the checkpoint, which then
    /// records nothing more (the PATCH is refused whole from its last checkpoint on).
    overflow: &'a std::cell::Cell<bool>,
}

impl Metered<'_> {
    /// Whether the body goes on past the allowed bytes: reads one byte more (an end of body
    /// answers 0 at once for a client that sent exactly what it announced).
    fn overruns(&mut self) -> io::Result<bool> {
        let mut probe = [0u8; 1];
        loop {
            match self.inner.read(&mut probe) {
                Ok(n) => return Ok(n > 0),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

impl Read for Metered<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 || buf.is_empty() {
            return Ok(0);
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        // The read that completes the allowed bytes looks for one more before it hands its
        // bytes on, so that a body longer than allowed is refused before the store makes the
        // last of them durable (a store may checkpoint the end before reading on).
        if n > 0 && self.left == 0 && self.overruns()? {
            self.overflow.set(true);
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the body is longer than the upload",
            ));
        }
        self.whole.borrow_mut().update(&buf[..n]);
        if let Some(p) = self.patch.as_mut() {
            p.update(&buf[..n]);
        }
        Ok(n)
    }
}

/// Why a gate kept a caller from an object (each operation's error names both).
#[derive(Debug)]
enum Denied {
    Refused(Refusal),
    NotFound,
}

macro_rules! denied_into {
    ($($failed:ident),*) => {$(
        impl From<Denied> for $failed {
            fn from(d: Denied) -> Self {
                match d {
                    Denied::Refused(r) => Self::Refused(r),
                    Denied::NotFound => Self::NotFound,
                }
            }
        }
    )*};
}
denied_into!(MediaFailed, UploadLookupFailed, AppendFailed);

impl UploadServices {
    /// The upload use cases on `uploads` and `storage`.
    pub fn new(
        objects: MediaServices,
        uploads: Arc<dyn UploadRepository>,
        jobs: Arc<dyn JobRepository>,
        storage: Arc<dyn MediaStorage>,
        settings: UploadSettings,
    ) -> Self {
        let world = objects.world.clone();
        let boot = world.random.hex(6);
        let holder: Arc<str> = format!("{}:{boot}", settings.instance).into();
        let key = Arc::new(OnceLock::new());
        if let Some(k) = settings.signing_key.clone() {
            let _ = key.set(k);
        }
        Self {
            world,
            objects,
            uploads,
            jobs,
            storage,
            settings,
            holder,
            key,
        }
    }

    /// The media store.
    pub fn storage(&self) -> &Arc<dyn MediaStorage> {
        &self.storage
    }

    /// The settings.
    pub fn settings(&self) -> &UploadSettings {
        &self.settings
    }

    /// Frees the upload locks an earlier life of this instance held (a process killed
    /// mid-PATCH leaves one): called at start, so a client resuming after a restart is not
    /// told "busy" for a lease's length.
    pub fn release_stale_locks(&self) -> Result<usize, StoreError> {
        self.uploads
            .release_upload_locks(&format!("{}:", self.settings.instance))
    }

    /// The lock holder of one request: `{instance}:{boot}:{random}`. Each PATCH holds the
    /// lock under a name of its own, so that the repository's "the same holder may take its
    /// lock again" lets no second request of this process in while the first writes (two
    /// PATCHes at once on one process would otherwise both write at the same offset); a
    /// restart still frees them all by the `{instance}:` prefix.
    fn request_holder(&self) -> String {
        let token = self.world.random.hex(6);
        format!("{}:{token}", self.holder)
    }

    fn signing_key(&self) -> Result<&MediaSigningKey, StoreError> {
        if let Some(k) = self.key.get() {
            return Ok(k);
        }
        let bytes = self
            .uploads
            .media_signing_key(&self.world.random.bytes32())?;
        let key = MediaSigningKey::new(bytes)
            .map_err(|e| StoreError::Corrupt(format!("media signing key: {e}")))?;
        Ok(self.key.get_or_init(|| key))
    }

    /// Whether `caller` may do what an upload to `target` does (OPTIONS' `proceed`, before
    /// the quota): the gate, and room left in the quota for at least one byte.
    pub fn may_upload(&self, caller: &Caller, target: UploadTarget) -> Result<bool, StoreError> {
        if !self.objects.permits(caller, target.action())? {
            return Ok(false);
        }
        let stored = self.uploads.stored_bytes()?;
        Ok(self.settings.limits.room_for(1, stored).is_ok())
    }

    /// Checks the gate and that the target object is a media object reachable through the
    /// collection; returns the object for an existing target.
    fn authorize(
        &self,
        caller: &Caller,
        target: UploadTarget,
    ) -> Result<Option<MediaObject>, BeginUploadFailed> {
        let collection = self
            .objects
            .media
            .object(target.collection)?
            .ok_or(BeginUploadFailed::CollectionNotFound)?;
        if !collection.object_type().is_collection() {
            return Err(BeginUploadFailed::NotACollection);
        }
        self.objects
            .gate(caller, target.action())?
            .map_err(BeginUploadFailed::Refused)?;
        match target.object {
            IdOrZero::Zero => Ok(None),
            IdOrZero::Id(id) => {
                if !self.objects.reachable(target.collection, id)? {
                    return Err(BeginUploadFailed::NotFound);
                }
                let object = self
                    .objects
                    .media
                    .object(id)?
                    .ok_or(BeginUploadFailed::NotFound)?;
                if object.object_type() == ObjectType::Catalog {
                    return Err(BeginUploadFailed::NotMedia);
                }
                Ok(Some(object))
            }
        }
    }

    /// A fresh storage key for an upload to `object`: `media/{object}/{random}/source[.ext]`.
    fn source_key(
        &self,
        object: ObjectId,
        filename: Option<&FileName>,
    ) -> Result<StorageKey, StoreError> {
        let token = self.world.random.hex(8);
        let file = match filename.and_then(FileName::extension) {
            Some(ext) => format!("source.{ext}"),
            None => "source".to_owned(),
        };
        StorageKey::parse(&format!("media/{object}/{token}/{file}"))
            .map_err(|e| StoreError::Unexpected(e.to_string()))
    }

    /// A fresh id in the organization's namespace.
    fn new_id(&self) -> Result<ObjectId, StoreError> {
        Ok(ObjectId::generate(
            &self.world.namespace()?,
            self.world.random.bytes16(),
        ))
    }

    fn new_object(
        &self,
        caller: &Caller,
        description: &UploadDescription,
        id: ObjectId,
        now: Timestamp,
    ) -> Result<MediaObject, StoreError> {
        let mut fields = description.fields.clone();
        fields.object_type = Some(description.object_type());
        if fields.title.is_none() {
            fields.title = description
                .filename
                .as_ref()
                .and_then(|f| medialib_domain::Title::parse(f.as_str()).ok());
        }
        let new =
            NewObject::from_patch(fields).map_err(|e| StoreError::Unexpected(e.to_string()))?;
        Ok(MediaObject::create(
            id,
            new,
            caller.user(),
            ShortCode::from_random(self.world.random.bytes16()),
            now,
        ))
    }

    /// tus creation: starts an upload of `length` bytes into `target`, creating the object
    /// when the target is `0`. Returns the upload as stored.
    pub fn begin(
        &self,
        caller: &Caller,
        target: UploadTarget,
        length: u64,
        description: UploadDescription,
    ) -> Result<UploadRecord, BeginUploadFailed> {
        let existing = self.authorize(caller, target)?;
        self.settings
            .limits
            .admit(length, self.uploads.stored_bytes()?)?;
        let now = self.world.clock.now();
        let created = match &existing {
            Some(_) => None,
            None => Some(self.new_object(caller, &description, self.new_id()?, now)?),
        };
        let object = existing
            .as_ref()
            .or(created.as_ref())
            .map(MediaObject::id)
            .ok_or(BeginUploadFailed::NotFound)?;
        let key = self.source_key(object, description.filename.as_ref())?;
        let staging = self.storage.stage(&key, length)?;
        let upload = UploadRecord {
            object,
            owner: caller.user(),
            progress: UploadProgress {
                length,
                offset: 0,
                expires: now.plus(self.settings.expiry),
            },
            staging,
            hash: ResumableSha256::new(),
            filename: description.filename,
            content_type: description.content_type,
            created: now,
        };
        let stored = match &created {
            Some(new) => self
                .uploads
                .create_with_media(new, target.collection, NewMedia::Upload(&upload))
                .map_err(|e| match e {
                    CreateObjectError::CollectionNotFound => BeginUploadFailed::CollectionNotFound,
                    CreateObjectError::NotACollection => BeginUploadFailed::NotACollection,
                    CreateObjectError::Store(s) => BeginUploadFailed::Store(s),
                }),
            None => self
                .uploads
                .replace_upload(&upload)
                .map_err(BeginUploadFailed::Store)
                .map(|old| {
                    if let Some(old) = old {
                        self.discard_quietly(&old);
                    }
                }),
        };
        if let Err(e) = stored {
            self.discard_quietly(&upload);
            return Err(e);
        }
        Ok(upload)
    }

    fn discard_quietly(&self, upload: &UploadRecord) {
        if let Err(e) = self.storage.discard(&upload.staging) {
            tracing::warn!(object = %upload.object, error = %e, "discarding an upload's bytes failed; housekeeping retries");
        }
    }

    /// Looks up the upload of `object` for `caller` (who needs the gate's `Edit` through
    /// `collection`).
    fn upload_for(
        &self,
        caller: &Caller,
        collection: ObjectId,
        object: ObjectId,
    ) -> Result<UploadRecord, UploadLookupFailed> {
        self.edit_gate::<UploadLookupFailed>(caller, collection, object)?;
        let upload = self
            .uploads
            .upload(object)?
            .ok_or(UploadLookupFailed::NoUpload)?;
        if self.world.clock.now() >= upload.progress.expires {
            return Err(UploadLookupFailed::NoUpload);
        }
        Ok(upload)
    }

    /// tus HEAD: where the upload stands.
    pub fn status(
        &self,
        caller: &Caller,
        collection: ObjectId,
        object: ObjectId,
    ) -> Result<UploadRecord, UploadLookupFailed> {
        self.upload_for(caller, collection, object)
    }

    /// tus termination: ends the upload and deletes its bytes.
    pub fn terminate(
        &self,
        caller: &Caller,
        collection: ObjectId,
        object: ObjectId,
    ) -> Result<(), UploadLookupFailed> {
        self.upload_for(caller, collection, object)?;
        if let Some(upload) = self.uploads.remove_upload(object)? {
            self.storage.discard(&upload.staging)?;
        }
        Ok(())
    }

    /// tus PATCH: appends `body` at `offset`. Progress is recorded whenever a prefix is
    /// durable (unless `checksum` asks that the whole body be checked first); the last byte
    /// stores the source and queues processing before this returns.
    pub fn append(
        &self,
        caller: &Caller,
        collection: ObjectId,
        object: ObjectId,
        offset: u64,
        checksum: Option<PatchChecksum>,
        body: &mut dyn Read,
    ) -> Result<AppendDone, AppendFailed> {
        self.edit_gate::<AppendFailed>(caller, collection, object)?;
        let now = self.world.clock.now();
        let lease = |now: Timestamp| {
            Timestamp::from_epoch_seconds(now.epoch_seconds() + LOCK_LEASE_SECONDS)
        };
        let holder = self.request_holder();
        let upload = match self.uploads.lock_upload(
            object,
            LockRequest {
                holder: &holder,
                until: lease(now),
                now,
            },
        )? {
            UploadLock::Locked(u) => u,
            UploadLock::Busy => return Err(AppendFailed::Busy),
            UploadLock::Missing => return Err(AppendFailed::NoUpload),
        };
        let result = self.append_locked(&upload, &holder, offset, checksum, body, &lease);
        match &result {
            Ok(done) if done.finished => {}
            _ => {
                if let Err(e) = self.uploads.unlock_upload(object, &holder) {
                    tracing::warn!(%object, error = %e, "releasing an upload lock failed; its lease ends it");
                }
            }
        }
        result
    }

    fn append_locked(
        &self,
        upload: &UploadRecord,
        holder: &str,
        offset: u64,
        checksum: Option<PatchChecksum>,
        body: &mut dyn Read,
        lease: &dyn Fn(Timestamp) -> Timestamp,
    ) -> Result<AppendDone, AppendFailed> {
        let now = self.world.clock.now();
        upload.progress.check_patch(offset, now)?;
        if upload.progress.is_complete() {
            // Every byte is durable, but storing the source did not finish (an empty upload, or
            // a failure after the last byte): finish now. A finished staging finishes again.
            let info = self.storage.finish(&upload.staging)?;
            self.record_source(upload, holder, info, upload.hash.finish())?;
            return Ok(AppendDone {
                offset: upload.progress.offset,
                expires: upload.progress.expires,
                finished: true,
            });
        }
        let hash = RefCell::new(upload.hash.clone());
        let overflow = std::cell::Cell::new(false);
        let mut metered = Metered {
            inner: body,
            whole: &hash,
            patch: checksum.map(|_| sha2::Sha256::new()),
            left: upload.progress.remaining(),
            overflow: &overflow,
        };
        let store_error = RefCell::new(None);
        let mut checkpoint = |staging: &crate::storage::Staging, at: u64| -> bool {
            if overflow.get() {
                // A body longer than the upload: what it sent since the last checkpoint is not
                // recorded, so the upload does not look complete to a HEAD after the 413.
                return false;
            }
            if checksum.is_some() {
                // Nothing is kept until the whole body matches its checksum.
                return true;
            }
            let hashed = hash.borrow();
            let saved = self.uploads.save_progress(
                upload.object,
                holder,
                Progress {
                    offset: at,
                    staging_state: &staging.state,
                    hash: &hashed,
                    lock_until: lease(self.world.clock.now()),
                },
            );
            match saved {
                Ok(still_ours) => still_ours,
                Err(e) => {
                    *store_error.borrow_mut() = Some(e);
                    false
                }
            }
        };
        let appended = self.storage.append(Append {
            staging: &upload.staging,
            offset,
            body: &mut metered,
            checkpoint: &mut checkpoint,
        });
        let overflow = overflow.get();
        let patch_digest = metered.patch.take().map(|p| <[u8; 32]>::from(p.finalize()));
        if let Some(e) = store_error.into_inner() {
            return Err(AppendFailed::Store(e));
        }
        match appended.stopped {
            None => {}
            Some(AppendStop::Checkpoint) if overflow => return Err(AppendFailed::TooLong),
            Some(AppendStop::Checkpoint) => return Err(AppendFailed::LockLost),
            Some(AppendStop::Storage(e)) => return Err(AppendFailed::Storage(e)),
            Some(AppendStop::Body(_)) if overflow => return Err(AppendFailed::TooLong),
            Some(AppendStop::Body(e)) => return Err(AppendFailed::Body(e.to_string())),
        }
        if let (Some(expected), Some(got)) = (checksum, patch_digest) {
            if expected.0 != got {
                return Err(AppendFailed::ChecksumMismatch);
            }
            let hashed = hash.borrow();
            let saved = self.uploads.save_progress(
                upload.object,
                holder,
                Progress {
                    offset: appended.offset,
                    staging_state: &appended.staging.state,
                    hash: &hashed,
                    lock_until: lease(self.world.clock.now()),
                },
            )?;
            if !saved {
                return Err(AppendFailed::LockLost);
            }
        }
        let finished = appended.offset >= upload.progress.length;
        if finished {
            let info = self.storage.finish(&appended.staging)?;
            let digest = hash.borrow().finish();
            self.record_source(upload, holder, info, digest)?;
        }
        Ok(AppendDone {
            offset: appended.offset,
            expires: upload.progress.expires,
            finished,
        })
    }

    /// The media record of a source stored as `info`: ready for processing (or ready, for a
    /// type that has none), its content type from the file name.
    fn stored_media(
        &self,
        object: ObjectId,
        object_type: ObjectType,
        filename: Option<FileName>,
        info: ObjectInfo,
        sha256: [u8; 32],
    ) -> MediaRecord {
        let content_type = filename
            .as_ref()
            .and_then(FileName::extension)
            .map_or("application/octet-stream", |e| content_type_of(&e))
            .to_owned();
        MediaRecord {
            object,
            state: MediaState::after_upload(object_type),
            progress: 0,
            error: None,
            attempts: 0,
            source: Some(SourceFile {
                key: info.key,
                filename,
                size: info.size,
                sha256,
                content_type,
            }),
            derived: None,
            modified: self.world.clock.now(),
        }
    }

    /// The last byte arrived and the source is stored under its key: the media record
    /// points at it (the upload row goes in the same step) and the replaced source's bytes
    /// are deleted.
    fn record_source(
        &self,
        upload: &UploadRecord,
        holder: &str,
        info: ObjectInfo,
        sha256: [u8; 32],
    ) -> Result<(), AppendFailed> {
        let object = self
            .objects
            .media
            .object_any_state(upload.object)?
            .ok_or(AppendFailed::NotFound)?;
        let media = self.stored_media(
            upload.object,
            object.object_type(),
            upload.filename.clone(),
            info,
            sha256,
        );
        match self.uploads.finish_upload(upload.object, holder, &media)? {
            Finish::Finished(previous) => {
                if let Some(old) = previous.and_then(|p| p.source) {
                    if let Err(e) = self.storage.delete(&old.key) {
                        tracing::warn!(object = %upload.object, error = %e, "deleting a replaced source failed");
                    }
                }
                tracing::info!(object = %upload.object, size = media.source.as_ref().map_or(0, |s| s.size), "upload finished");
                Ok(())
            }
            Finish::LockLost => Err(AppendFailed::LockLost),
        }
    }

    /// The one-shot upload (`PUT …/o/0/`, multipart): stores `body` (at most
    /// `upload_max_size` bytes) as the source of a new object in `collection`. `fields`
    /// are read once the file is stored (a form may send them after the file).
    pub fn put_file(
        &self,
        caller: &Caller,
        collection: ObjectId,
        filename: Option<&str>,
        body: &mut dyn Read,
        fields: &mut dyn FnMut() -> Vec<(String, String)>,
    ) -> Result<ObjectId, PutFileFailed> {
        let target = UploadTarget {
            collection,
            object: IdOrZero::Zero,
        };
        self.authorize(caller, target).map_err(|e| match e {
            BeginUploadFailed::CollectionNotFound => PutFileFailed::CollectionNotFound,
            BeginUploadFailed::NotACollection => PutFileFailed::NotACollection,
            BeginUploadFailed::Refused(r) => PutFileFailed::Refused(r),
            BeginUploadFailed::Store(s) => PutFileFailed::Store(s),
            BeginUploadFailed::Storage(s) => PutFileFailed::Storage(s),
            BeginUploadFailed::NotAdmitted(n) => PutFileFailed::NotAdmitted(n),
            BeginUploadFailed::NotFound | BeginUploadFailed::NotMedia => {
                PutFileFailed::CollectionNotFound
            }
        })?;
        let stored = self.uploads.stored_bytes()?;
        self.settings.limits.room_for(1, stored)?;
        let filename = filename
            .map(FileName::parse)
            .transpose()
            .map_err(|e| PutFileFailed::Description(e.into()))?;
        let hash = RefCell::new(ResumableSha256::new());
        let overflow = std::cell::Cell::new(false);
        let mut metered = Metered {
            inner: body,
            whole: &hash,
            patch: None,
            left: self.settings.limits.max_size,
            overflow: &overflow,
        };
        let now = self.world.clock.now();
        let id = self.new_id()?;
        let key = self.source_key(id, filename.as_ref())?;
        let info = match self.storage.put(&key, &mut metered) {
            Ok(info) => info,
            Err(e) => {
                return Err(if overflow.get() {
                    PutFileFailed::NotAdmitted(UploadNotAdmitted::TooLarge {
                        max: self.settings.limits.max_size,
                    })
                } else {
                    PutFileFailed::Storage(e)
                });
            }
        };
        let cleanup = |e: PutFileFailed| {
            if let Err(d) = self.storage.delete(&key) {
                tracing::warn!(%key, error = %d, "deleting a refused one-shot upload failed");
            }
            e
        };
        if let Err(e) = self.settings.limits.room_for(info.size, stored) {
            return Err(cleanup(e.into()));
        }
        let mut pairs = fields();
        if let Some(f) = &filename {
            pairs.insert(0, ("filename".to_owned(), f.as_str().to_owned()));
        }
        let description = UploadDescription::from_fields(&pairs).map_err(|e| cleanup(e.into()))?;
        let object = self
            .new_object(caller, &description, id, now)
            .map_err(|e| cleanup(e.into()))?;
        let media = self.stored_media(
            id,
            object.object_type(),
            description.filename.clone(),
            info,
            hash.borrow().finish(),
        );
        self.uploads
            .create_with_media(&object, collection, NewMedia::Stored(&media))
            .map_err(|e| {
                cleanup(match e {
                    CreateObjectError::CollectionNotFound => PutFileFailed::CollectionNotFound,
                    CreateObjectError::NotACollection => PutFileFailed::NotACollection,
                    CreateObjectError::Store(s) => PutFileFailed::Store(s),
                })
            })?;
        tracing::info!(object = %id, size = media.source.as_ref().map_or(0, |s| s.size), "one-shot upload stored");
        Ok(id)
    }

    /// [`Self::object_gate`] for `Edit` through `collection` (uploads, reprocess, removal).
    fn edit_gate<E: From<StoreError> + From<Denied>>(
        &self,
        caller: &Caller,
        collection: ObjectId,
        object: ObjectId,
    ) -> Result<(), E> {
        self.object_gate(
            Some(caller),
            collection,
            object,
            Action::Edit { collection },
        )
    }

    /// Checks that `caller` may `action` through `collection` and that `object` is in it.
    fn object_gate<E: From<StoreError> + From<Denied>>(
        &self,
        caller: Option<&Caller>,
        collection: ObjectId,
        object: ObjectId,
        action: Action,
    ) -> Result<(), E> {
        let Some(caller) = caller else {
            return Err(Denied::Refused(Refusal::Hidden).into());
        };
        self.objects
            .gate(caller, action)?
            .map_err(|r| E::from(Denied::Refused(r)))?;
        if !self.objects.reachable(collection, object)? {
            return Err(Denied::NotFound.into());
        }
        Ok(())
    }

    /// The `media` call (GET): the object's media with fresh URLs (`view` on the collection).
    pub fn media(
        &self,
        caller: Option<&Caller>,
        collection: ObjectId,
        object: ObjectId,
    ) -> Result<MediaView, MediaFailed> {
        self.object_gate::<MediaFailed>(caller, collection, object, Action::Read { collection })?;
        let record = self.uploads.media(object)?.ok_or(MediaFailed::NoMedia)?;
        let files = self.files_of(&record)?;
        Ok(MediaView { record, files })
    }

    /// The files of a media record with fresh signed URLs: the source, then the derived
    /// files.
    pub fn files_of(&self, record: &MediaRecord) -> Result<Vec<MediaFile>, StoreError> {
        let mut files = Vec::new();
        if let Some(source) = &record.source {
            let name = source.key.file_name();
            files.push(MediaFile {
                role: "source",
                format: name
                    .rsplit_once('.')
                    .map_or_else(|| "bin".to_owned(), |(_, e)| e.to_owned()),
                path: self.url_path(record.object, name)?,
                size: source.size,
                dimensions: None,
                bitrate: None,
            });
        }
        if let Some(set) = &record.derived {
            let base = self.url_path(record.object, "")?;
            for f in set.files() {
                files.push(MediaFile {
                    role: f.role.as_str(),
                    format: f.path.format().to_owned(),
                    path: format!("{base}{}", f.path),
                    size: f.size,
                    dimensions: f.dimensions,
                    bitrate: f.bitrate,
                });
            }
        }
        Ok(files)
    }

    /// `/m/{object}/{expires}/{signature}/{file}` valid for `media_url_ttl` (the expiry is
    /// rounded up to a whole minute so that URLs minted close together are equal and cache).
    pub fn url_path(&self, object: ObjectId, file: &str) -> Result<String, StoreError> {
        let now = self.world.clock.now().plus(self.settings.url_ttl);
        let expires = Timestamp::from_epoch_seconds((now.epoch_seconds() + 59) / 60 * 60);
        let signature = self.signing_key()?.sign(object, expires);
        Ok(format!(
            "/m/{object}/{}/{signature}/{file}",
            expires.epoch_seconds()
        ))
    }

    /// `media` POST `action=reprocess` (`admin`): queues processing again, with a fresh
    /// count of attempts (a worker busy with it is superseded).
    pub fn reprocess(
        &self,
        caller: &Caller,
        collection: ObjectId,
        object: ObjectId,
    ) -> Result<MediaRecord, MediaFailed> {
        self.edit_gate::<MediaFailed>(caller, collection, object)?;
        let kind = self
            .objects
            .media
            .object_any_state(object)?
            .map(|o| o.object_type());
        if kind.is_some_and(|t| MediaKind::of(t).is_none()) {
            return Err(MediaFailed::NotProcessed);
        }
        let record = self
            .jobs
            .requeue(object, self.world.clock.now())?
            .ok_or(MediaFailed::NoMedia)?;
        tracing::info!(%object, "processing queued again");
        Ok(record)
    }

    /// Deletes every stored file of `object`'s media (`media/{object}/…`): the source, every
    /// derived set, what failed attempts left. Stops at the first failure (the next pass
    /// finds the rest).
    pub fn delete_stored_media(&self, object: ObjectId) -> Result<usize, StorageError> {
        let prefix = StorageKey::parse(&format!("media/{object}"))
            .map_err(|e| StorageError::Unavailable(e.to_string()))?;
        let files = self.storage.list(&prefix)?;
        for f in &files {
            match self.storage.delete(&f.key) {
                Ok(()) | Err(StorageError::NotFound) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(files.len())
    }

    /// `media` DELETE (`admin`): removes the media and its bytes, keeps the object.
    pub fn remove_media(
        &self,
        caller: &Caller,
        collection: ObjectId,
        object: ObjectId,
    ) -> Result<(), MediaFailed> {
        self.edit_gate::<MediaFailed>(caller, collection, object)?;
        let (media, upload) = self.uploads.remove_media(object)?;
        if media.is_none() && upload.is_none() {
            return Err(MediaFailed::NoMedia);
        }
        if let Some(upload) = upload {
            self.storage.discard(&upload.staging)?;
        }
        if let Some(source) = media.and_then(|m| m.source) {
            self.storage.delete(&source.key)?;
        }
        self.delete_stored_media(object)?;
        Ok(())
    }

    /// Checks a delivery URL and finds the file it names: what the store knows of it, or a
    /// presigned URL of the object store when `redirect` is asked for and the store can.
    pub fn open_delivery(
        &self,
        object: &str,
        expires: &str,
        signature: &str,
        file: &str,
        redirect: bool,
    ) -> Result<Delivery, DeliverFailed> {
        // A path that names no object is no media file (404), as an unknown one is.
        let object = ObjectId::parse(object).map_err(|_| DeliverFailed::Missing)?;
        self.signing_key()?
            .verify(object, expires, signature, self.world.clock.now())?;
        let record = self.uploads.media(object)?.ok_or(DeliverFailed::Missing)?;
        let (key, filename) = match (&record.source, &record.derived) {
            (Some(source), _) if file == source.key.file_name() => {
                (source.key.clone(), source.filename.clone())
            }
            (_, Some(set)) if set.file(file).is_some() => (
                StorageKey::parse(&format!("media/{object}/{}/{file}", set.dir()))
                    .map_err(|_| DeliverFailed::Missing)?,
                None,
            ),
            _ => return Err(DeliverFailed::Missing),
        };
        if self.objects.media.object(object)?.is_none() {
            return Err(DeliverFailed::Missing);
        }
        let content_type = file
            .rsplit_once('.')
            .map_or("application/octet-stream", |(_, e)| content_type_of(e));
        let redirect = if redirect {
            let until = Timestamp::from_epoch_seconds(expires.parse().unwrap_or(0));
            self.storage.presign(&key, until)
        } else {
            None
        };
        let info = match &redirect {
            Some(_) => None,
            None => Some(self.storage.head(&key).map_err(|e| match e {
                StorageError::NotFound => DeliverFailed::Missing,
                other => DeliverFailed::Storage(other),
            })?),
        };
        Ok(Delivery {
            key,
            info,
            content_type,
            filename,
            redirect,
        })
    }

    /// Reads the file [`UploadServices::open_delivery`] found, or `span` of it.
    pub fn read_delivery(
        &self,
        delivery: &Delivery,
        span: Option<ByteSpan>,
    ) -> Result<Reading, DeliverFailed> {
        self.storage.read(&delivery.key, span).map_err(|e| match e {
            StorageError::NotFound => DeliverFailed::Missing,
            other => DeliverFailed::Storage(other),
        })
    }

    /// Housekeeping: deletes for good the objects soft-deleted more than 30 days ago
    /// (DECISIONS §7: their media is kept for the restore window, then goes), their media's
    /// bytes first, so that no byte outlives its record; returns how many.
    pub fn purge_deleted_objects(&self) -> Result<usize, StoreError> {
        let now = self.world.clock.now();
        let before =
            Timestamp::from_epoch_seconds(now.epoch_seconds() - SOFT_DELETE_RETENTION_SECS);
        let mut purged = 0;
        loop {
            let due = self.uploads.deleted_before(before, 50)?;
            if due.is_empty() {
                return Ok(purged);
            }
            for object in due {
                let bytes = self
                    .uploads
                    .upload(object)?
                    .map_or(Ok(()), |u| self.storage.discard(&u.staging))
                    .and_then(|()| self.delete_stored_media(object).map(drop));
                if let Err(e) = bytes {
                    tracing::warn!(%object, error = %e, "a deleted object's media stays until the next pass");
                    return Ok(purged);
                }
                if self.uploads.purge_deleted(object, before, now)? {
                    tracing::info!(%object, "purged an object deleted more than 30 days ago");
                    purged += 1;
                }
            }
        }
    }

    /// Housekeeping: ends uploads that expired unfinished and deletes their bytes; returns
    /// how many.
    pub fn purge_expired_uploads(&self) -> Result<usize, StoreError> {
        let now = self.world.clock.now();
        let mut purged = 0;
        loop {
            let expired = self.uploads.expired_uploads(now, 100)?;
            if expired.is_empty() {
                return Ok(purged);
            }
            for upload in expired {
                if let Err(e) = self.storage.discard(&upload.staging) {
                    tracing::warn!(object = %upload.object, error = %e, "an expired upload's bytes stay until the next pass");
                    return Ok(purged);
                }
                if self.uploads.remove_upload(upload.object)?.is_some() {
                    purged += 1;
                }
            }
        }
    }
}
