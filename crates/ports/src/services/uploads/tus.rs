//! tus 1.0: creation, HEAD, PATCH and termination; the last byte stores the source.

use std::cell::RefCell;
use std::io::Read;

use medialib_domain::media::{PatchChecksum, ResumableSha256, UploadDescription, UploadProgress};
use medialib_domain::{Caller, MediaObject, ObjectId, Timestamp};
use sha2::Digest as _;

use crate::repos::CreateObjectError;
use crate::storage::{Append, AppendStop, ObjectInfo};
use crate::uploads::{Finish, LockRequest, NewMedia, Progress, UploadLock, UploadRecord};

use super::{
    AppendDone, AppendFailed, BeginUploadFailed, LOCK_LEASE_SECONDS, Metered, UploadLookupFailed,
    UploadServices, UploadTarget,
};

impl UploadServices {
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
}
