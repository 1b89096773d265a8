//! `UploadRepository`: uploads in progress with their write locks, each object's media, and
//! the key delivery URLs are signed with. One mutex makes each method one step, as each is one
//! statement or transaction in the diesel adapter.

use medialib_domain::media::MediaState;
use medialib_domain::{Lifecycle, MediaObject, ObjectId, Timestamp};
use medialib_ports::{
    CreateObjectError, Finish, LockRequest, MediaRecord, NewMedia, Progress, StoreError,
    UploadLock, UploadRecord, UploadRepository,
};

use crate::MemoryStore;
use crate::state::{State, UploadEntry, constraint};

impl State {
    /// Refuses an upload the `uploads` table would refuse for an existing object: an owner
    /// that is no user. (Offsets past the length are the caller's to prevent, as there.)
    fn check_upload_owner(&self, upload: &UploadRecord) -> Result<(), StoreError> {
        if self.users.contains_key(&upload.owner) {
            Ok(())
        } else {
            Err(constraint("uploads.owner_id references users"))
        }
    }
}

impl UploadRepository for MemoryStore {
    fn create_with_media(
        &self,
        object: &MediaObject,
        collection: ObjectId,
        media: NewMedia<'_>,
    ) -> Result<(), CreateObjectError> {
        media.check_object(object)?;
        let mut state = self.lock();
        if let NewMedia::Upload(upload) = media {
            state.check_upload_owner(upload)?;
        }
        state.create_member(object, collection)?;
        if let NewMedia::Upload(upload) = media {
            state.uploads.insert(
                object.id(),
                UploadEntry {
                    record: upload.clone(),
                    lock: None,
                },
            );
        }
        let record = media.record();
        if record.state == MediaState::Queued {
            state.enqueue_job(object.id(), record.modified);
        }
        state.media.insert(object.id(), record);
        Ok(())
    }

    fn replace_upload(&self, upload: &UploadRecord) -> Result<Option<UploadRecord>, StoreError> {
        let mut state = self.lock();
        if !state.objects.contains_key(&upload.object) {
            return Err(constraint("uploads.object_id references objects"));
        }
        state.check_upload_owner(upload)?;
        let old = state.uploads.insert(
            upload.object,
            UploadEntry {
                record: upload.clone(),
                lock: None,
            },
        );
        Ok(old.map(|e| e.record))
    }

    fn upload(&self, object: ObjectId) -> Result<Option<UploadRecord>, StoreError> {
        Ok(self.lock().uploads.get(&object).map(|e| e.record.clone()))
    }

    fn lock_upload(
        &self,
        object: ObjectId,
        lock: LockRequest<'_>,
    ) -> Result<UploadLock, StoreError> {
        let LockRequest { holder, until, now } = lock;
        let mut state = self.lock();
        let Some(entry) = state.uploads.get_mut(&object) else {
            return Ok(UploadLock::Missing);
        };
        // Mirrors adapters-diesel uploads.rs: free when nobody holds it, its lease ended
        // before `now`, or the caller already holds it.
        let free = match &entry.lock {
            None => true,
            Some((h, lease)) => *lease < now || h == holder,
        };
        if !free {
            return Ok(UploadLock::Busy);
        }
        entry.lock = Some((holder.to_owned(), until));
        Ok(UploadLock::Locked(Box::new(entry.record.clone())))
    }

    fn save_progress(
        &self,
        object: ObjectId,
        holder: &str,
        progress: Progress<'_>,
    ) -> Result<bool, StoreError> {
        let mut state = self.lock();
        let Some(entry) = state.uploads.get_mut(&object) else {
            return Ok(false);
        };
        if !held_by(entry, holder) {
            return Ok(false);
        }
        entry.record.progress.offset = progress.offset;
        entry.record.staging.state = progress.staging_state.to_owned();
        entry.record.hash = progress.hash.clone();
        entry.lock = Some((holder.to_owned(), progress.lock_until));
        Ok(true)
    }

    fn unlock_upload(&self, object: ObjectId, holder: &str) -> Result<(), StoreError> {
        let mut state = self.lock();
        if let Some(entry) = state.uploads.get_mut(&object) {
            if held_by(entry, holder) {
                entry.lock = None;
            }
        }
        Ok(())
    }

    fn finish_upload(
        &self,
        object: ObjectId,
        holder: &str,
        media: &MediaRecord,
    ) -> Result<Finish, StoreError> {
        if media.object != object {
            return Err(StoreError::Unexpected("the media of another object".into()));
        }
        let mut state = self.lock();
        if !state
            .uploads
            .get(&object)
            .is_some_and(|e| held_by(e, holder))
        {
            return Ok(Finish::LockLost);
        }
        state.uploads.remove(&object);
        if media.state == MediaState::Queued {
            state.enqueue_job(object, media.modified);
        }
        // Mirrors the diesel adapter: the replaced source's derived files stay served until
        // the new source's processing replaces (and deletes) them.
        let mut media = media.clone();
        if let Some(previous) = state.media.get(&object) {
            media.derived.clone_from(&previous.derived);
        }
        Ok(Finish::Finished(state.media.insert(object, media)))
    }

    fn remove_upload(&self, object: ObjectId) -> Result<Option<UploadRecord>, StoreError> {
        Ok(self.lock().uploads.remove(&object).map(|e| e.record))
    }

    fn expired_uploads(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<UploadRecord>, StoreError> {
        let state = self.lock();
        let mut expired: Vec<&UploadRecord> = state
            .uploads
            .values()
            .map(|e| &e.record)
            .filter(|u| u.progress.expires < now)
            .collect();
        // Mirrors adapters-diesel uploads.rs: ORDER BY expires_at, object_id.
        expired.sort_by_key(|u| (u.progress.expires, u.object));
        Ok(expired.into_iter().take(limit).cloned().collect())
    }

    fn release_upload_locks(&self, prefix: &str) -> Result<usize, StoreError> {
        let mut state = self.lock();
        let mut released = 0;
        for entry in state.uploads.values_mut() {
            if entry
                .lock
                .as_ref()
                .is_some_and(|(h, _)| h.starts_with(prefix))
            {
                entry.lock = None;
                released += 1;
            }
        }
        Ok(released)
    }

    fn stored_bytes(&self) -> Result<u64, StoreError> {
        let state = self.lock();
        let sources = state
            .media
            .values()
            .filter_map(|m| m.source.as_ref())
            .fold(0u64, |n, s| n.saturating_add(s.size));
        let uploads = state
            .uploads
            .values()
            .fold(0u64, |n, e| n.saturating_add(e.record.progress.length));
        Ok(sources.saturating_add(uploads))
    }

    fn media_signing_key(&self, candidate: &[u8; 32]) -> Result<Vec<u8>, StoreError> {
        let mut state = self.lock();
        Ok(state
            .media_signing_key
            .get_or_insert_with(|| candidate.to_vec())
            .clone())
    }

    fn derived_of(
        &self,
        objects: &[ObjectId],
    ) -> Result<Vec<(ObjectId, medialib_domain::media::derived::DerivedSet)>, StoreError> {
        let state = self.lock();
        // Mirrors adapters-diesel: an id named twice is one row.
        let ids: std::collections::BTreeSet<&ObjectId> = objects.iter().collect();
        Ok(ids
            .into_iter()
            .filter_map(|o| {
                let set = state.media.get(o)?.derived.clone()?;
                Some((*o, set))
            })
            .collect())
    }

    fn media(&self, object: ObjectId) -> Result<Option<MediaRecord>, StoreError> {
        Ok(self.lock().media.get(&object).cloned())
    }

    fn media_of(&self, objects: &[ObjectId]) -> Result<Vec<MediaRecord>, StoreError> {
        let state = self.lock();
        // Mirrors adapters-diesel: an id named twice is one row.
        let ids: std::collections::BTreeSet<&ObjectId> = objects.iter().collect();
        Ok(ids
            .into_iter()
            .filter_map(|o| state.media.get(o).cloned())
            .collect())
    }

    fn deleted_before(&self, before: Timestamp, limit: usize) -> Result<Vec<ObjectId>, StoreError> {
        let state = self.lock();
        let mut due: Vec<(Timestamp, ObjectId)> = state
            .objects
            .values()
            .filter_map(|r| match r.object.lifecycle() {
                Lifecycle::SoftDeleted { at } if at < before => Some((at, r.object.id())),
                _ => None,
            })
            .collect();
        // Mirrors the diesel adapter: ORDER BY deleted_at, id.
        due.sort();
        Ok(due.into_iter().take(limit).map(|(_, id)| id).collect())
    }

    fn purge_deleted(
        &self,
        object: ObjectId,
        before: Timestamp,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let mut state = self.lock();
        let due = state.objects.get(&object).is_some_and(
            |r| matches!(r.object.lifecycle(), Lifecycle::SoftDeleted { at } if at < before),
        );
        if !due {
            return Ok(false);
        }
        state.objects.remove(&object);
        state.permissions.remove(&object);
        state.uploads.remove(&object);
        state.media.remove(&object);
        state.jobs.remove(&object);
        for parent in state.parents_of(object).collect::<Vec<_>>() {
            state.unlink(parent, object);
        }
        let members: Vec<ObjectId> = state
            .members
            .get(&object)
            .map(|m| m.keys().copied().collect())
            .unwrap_or_default();
        for member in members {
            state.unlink(object, member);
            // Mirrors the diesel adapter: a member left in no collection is soft-deleted now,
            // with no collection to restore it to.
            if state.parents_of(member).next().is_none() {
                state.soft_delete(member, now, None);
            }
        }
        Ok(true)
    }

    fn remove_media(
        &self,
        object: ObjectId,
    ) -> Result<(Option<MediaRecord>, Option<UploadRecord>), StoreError> {
        let mut state = self.lock();
        let media = state.media.remove(&object);
        let upload = state.uploads.remove(&object).map(|e| e.record);
        state.jobs.remove(&object);
        Ok((media, upload))
    }
}

/// Whether `holder` holds the entry's lock (whatever its lease).
fn held_by(entry: &UploadEntry, holder: &str) -> bool {
    entry.lock.as_ref().is_some_and(|(h, _)| h == holder)
}
