//! What the database keeps of uploads in progress and of each object's media.
//!
//! Bytes live in the [`MediaStorage`](crate::MediaStorage); their bookkeeping (offset, the
//! storage adapter's staging state, the SHA-256 so far, the owner, the expiry, the write lock)
//! lives here, so an upload survives a restart and any process can continue it.

use medialib_domain::media::derived::DerivedSet;
use medialib_domain::media::{FileName, MediaState, ResumableSha256, StorageKey, UploadProgress};
use medialib_domain::{MediaObject, ObjectId, Timestamp, UserId};

use crate::error::StoreError;
use crate::repos::CreateObjectError;
use crate::storage::Staging;

/// An upload in progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadRecord {
    /// The object whose media it brings (one upload per object at a time).
    pub object: ObjectId,
    /// Who started it.
    pub owner: UserId,
    /// Length, durable offset, expiry.
    pub progress: UploadProgress,
    /// The storage adapter's staging (the final key and its opaque state).
    pub staging: Staging,
    /// The SHA-256 of the bytes `[0, offset)`.
    pub hash: ResumableSha256,
    /// The client's file name.
    pub filename: Option<FileName>,
    /// The MIME type the client reported.
    pub content_type: Option<String>,
    /// When it began.
    pub created: Timestamp,
}

/// The stored source file of an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// Where its bytes are.
    pub key: StorageKey,
    /// The client's file name.
    pub filename: Option<FileName>,
    /// Its size in bytes.
    pub size: u64,
    /// Its SHA-256.
    pub sha256: [u8; 32],
    /// The `Content-Type` it is delivered with.
    pub content_type: String,
}

/// An object's media: its state and its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaRecord {
    /// The object.
    pub object: ObjectId,
    /// Where processing stands.
    pub state: MediaState,
    /// Processing progress, 0 to 100.
    pub progress: u8,
    /// The last processing error, for people.
    pub error: Option<String>,
    /// Processing attempts so far.
    pub attempts: u32,
    /// The stored source, once an upload finished.
    pub source: Option<SourceFile>,
    /// The files the last finished processing derived from it.
    pub derived: Option<DerivedSet>,
    /// When any of this last changed.
    pub modified: Timestamp,
}

/// The answer to [`UploadRepository::lock_upload`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UploadLock {
    /// The caller holds the lock; the record as it stands (boxed: the other answers carry
    /// nothing).
    Locked(Box<UploadRecord>),
    /// Another request holds it (409).
    Busy,
    /// No upload for that object (404).
    Missing,
}

/// Durable progress of a locked upload.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// Bytes durable.
    pub offset: u64,
    /// The staging state that describes them.
    pub staging_state: &'a str,
    /// The SHA-256 of `[0, offset)`.
    pub hash: &'a ResumableSha256,
    /// The lock's new lease.
    pub lock_until: Timestamp,
}

/// What a new object's media starts as ([`UploadRepository::create_with_media`]).
#[derive(Debug, Clone, Copy)]
pub enum NewMedia<'a> {
    /// An upload to come: the media record is `uploading`, with no source.
    Upload(&'a UploadRecord),
    /// A source already stored (the one-shot upload): the media record as it is.
    Stored(&'a MediaRecord),
}

impl NewMedia<'_> {
    /// The object the media belongs to.
    pub fn object(&self) -> ObjectId {
        match self {
            Self::Upload(u) => u.object,
            Self::Stored(m) => m.object,
        }
    }

    /// Refuses media for another object than `object`: a caller's bug, which every adapter
    /// refuses before it writes anything.
    pub fn check_object(&self, object: &MediaObject) -> Result<(), StoreError> {
        if self.object() == object.id() {
            Ok(())
        } else {
            Err(StoreError::Unexpected("media for another object".into()))
        }
    }

    /// The media record the object starts with: for an upload, `uploading` with no source,
    /// changed when the upload began.
    pub fn record(&self) -> MediaRecord {
        match self {
            Self::Upload(u) => MediaRecord {
                object: u.object,
                state: MediaState::Uploading,
                progress: 0,
                error: None,
                attempts: 0,
                source: None,
                derived: None,
                modified: u.created,
            },
            Self::Stored(m) => (*m).clone(),
        }
    }
}

/// Who asks for an upload's write lock, until when, and the time of asking
/// ([`UploadRepository::lock_upload`]).
#[derive(Debug, Clone, Copy)]
pub struct LockRequest<'a> {
    /// The lock holder's name.
    pub holder: &'a str,
    /// The end of the lease asked for.
    pub until: Timestamp,
    /// Now: a lease that ended before it is free.
    pub now: Timestamp,
}

/// Uploads and media in the database.
pub trait UploadRepository: Send + Sync {
    /// Stores a new object as a member of `collection` with the start of its media, in one
    /// step: for tus creation on `…/o/0/` its upload and a media record in state `uploading`;
    /// for the one-shot upload the media record of its stored source (and, when it is
    /// `queued`, its processing job). A crash leaves either
    /// the whole object or nothing.
    fn create_with_media(
        &self,
        object: &MediaObject,
        collection: ObjectId,
        media: NewMedia<'_>,
    ) -> Result<(), CreateObjectError>;

    /// Starts `upload` for an existing object, replacing its unfinished upload (returned, so
    /// that its bytes can be discarded); the media record keeps its source until the new
    /// upload finishes.
    fn replace_upload(&self, upload: &UploadRecord) -> Result<Option<UploadRecord>, StoreError>;

    /// The upload of `object`.
    fn upload(&self, object: ObjectId) -> Result<Option<UploadRecord>, StoreError>;

    /// Takes the write lock of `object`'s upload for `lock.holder` until `lock.until`, when
    /// nobody holds it or its holder's lease ended before `lock.now`. One statement: of two concurrent callers
    /// one wins.
    fn lock_upload(
        &self,
        object: ObjectId,
        lock: LockRequest<'_>,
    ) -> Result<UploadLock, StoreError>;

    /// Records progress of the upload `holder` has locked; `false` (and nothing written) when
    /// it no longer holds the lock.
    fn save_progress(
        &self,
        object: ObjectId,
        holder: &str,
        progress: Progress<'_>,
    ) -> Result<bool, StoreError>;

    /// Releases `holder`'s lock (a no-op when it holds none).
    fn unlock_upload(&self, object: ObjectId, holder: &str) -> Result<(), StoreError>;

    /// The upload `holder` has locked is complete: deletes it and stores `media` as the
    /// object's media, in one step; when `media` is `queued`, its processing job is queued in
    /// the same step (replacing one that waits or runs: see [`JobRepository`](crate::JobRepository)). Returns the media record it replaced (whose source the
    /// caller deletes from storage), or [`Finish::LockLost`] when `holder` no longer holds the lock.
    fn finish_upload(
        &self,
        object: ObjectId,
        holder: &str,
        media: &MediaRecord,
    ) -> Result<Finish, StoreError>;

    /// Deletes `object`'s upload (termination, expiry) and returns it. An object created by
    /// that upload keeps existing, with media in state `uploading` and no source, until it is
    /// deleted or uploaded again.
    fn remove_upload(&self, object: ObjectId) -> Result<Option<UploadRecord>, StoreError>;

    /// Up to `limit` uploads whose expiry is before `now`.
    fn expired_uploads(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<UploadRecord>, StoreError>;

    /// Releases every lock whose holder starts with `prefix` (a restarted process freeing the
    /// locks its previous life held); returns how many.
    fn release_upload_locks(&self, prefix: &str) -> Result<usize, StoreError>;

    /// Bytes the organization keeps: the sources' sizes plus the lengths of unfinished uploads.
    fn stored_bytes(&self) -> Result<u64, StoreError>;

    /// The key delivery URLs are signed with: the stored one, or `candidate` after storing it
    /// when none is stored yet (of concurrent first starts, the first writer wins and every
    /// caller gets its key).
    fn media_signing_key(&self, candidate: &[u8; 32]) -> Result<Vec<u8>, StoreError>;

    /// The derived files of each of `objects` whose media has some, in no particular order;
    /// an object without media, or without derived files, is left out. One read for many
    /// objects (the `images` of a catalog answer), never one per object.
    fn derived_of(&self, objects: &[ObjectId]) -> Result<Vec<(ObjectId, DerivedSet)>, StoreError>;

    /// The media of `object`.
    fn media(&self, object: ObjectId) -> Result<Option<MediaRecord>, StoreError>;

    /// The media of each of `objects` that has some, in no particular order: one read for
    /// many objects (a library's page), never one per object.
    fn media_of(&self, objects: &[ObjectId]) -> Result<Vec<MediaRecord>, StoreError>;

    /// Up to `limit` objects soft-deleted before `before` (the oldest first): those the purge
    /// takes, once their media's bytes are deleted.
    fn deleted_before(&self, before: Timestamp, limit: usize) -> Result<Vec<ObjectId>, StoreError>;

    /// Deletes `object` for good when it was soft-deleted before `before`, with everything
    /// that hangs on it (properties, memberships both ways, permissions, upload, media, job);
    /// a member it held that is left in no collection is soft-deleted at `now`, as removing
    /// its last membership would (restorable for 30 days, with `--into`). One step; `false`
    /// when the object is not (or no longer) such an object.
    fn purge_deleted(
        &self,
        object: ObjectId,
        before: Timestamp,
        now: Timestamp,
    ) -> Result<bool, StoreError>;

    /// Deletes the media record of `object` (its source included), its upload and its
    /// processing job; returns the first two so the caller can delete their bytes.
    fn remove_media(
        &self,
        object: ObjectId,
    ) -> Result<(Option<MediaRecord>, Option<UploadRecord>), StoreError>;
}

/// The answer to [`UploadRepository::finish_upload`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(
    clippy::large_enum_variant,
    reason = "one answer per finished upload, moved once: boxing would only add an allocation"
)]
pub enum Finish {
    /// Done; the media record replaced, if there was one.
    Finished(Option<MediaRecord>),
    /// The caller no longer held the lock: nothing changed.
    LockLost,
}
