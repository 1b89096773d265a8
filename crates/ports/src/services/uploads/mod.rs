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

use medialib_domain::media::probe::Dimensions;
use medialib_domain::media::{
    FileName, MediaSigningKey, MediaState, PatchRefused, ResumableSha256, StorageKey,
    UploadDescription, UploadLimits, UploadNotAdmitted, UrlRefused, content_type_of,
};
use medialib_domain::{
    Action, Caller, IdOrZero, Lifetime, MediaObject, NewObject, ObjectId, ObjectType, Refusal,
    ShortCode, Timestamp,
};

use sha2::Digest as _;

use crate::error::StoreError;
use crate::failures::failures;
use crate::jobs::JobRepository;
use crate::storage::{MediaStorage, ObjectInfo, StorageError};
use crate::uploads::{MediaRecord, SourceFile, UploadRepository};
use crate::world::RandomExt;

use super::{MediaServices, World};

mod housekeeping;
mod media;
mod put;
mod tus;

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
}
