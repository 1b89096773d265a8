//! Housekeeping of uploads and media: expired uploads, objects deleted long ago.

use medialib_domain::Timestamp;
use medialib_domain::object::SOFT_DELETE_RETENTION_SECS;

use crate::error::StoreError;

use super::UploadServices;

impl UploadServices {
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
