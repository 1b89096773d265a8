//! The one-shot upload (`PUT …/o/0/`, multipart).

use std::cell::RefCell;
use std::io::Read;

use medialib_domain::media::{FileName, ResumableSha256, UploadDescription, UploadNotAdmitted};
use medialib_domain::{Caller, IdOrZero, ObjectId};

use crate::repos::CreateObjectError;
use crate::uploads::NewMedia;

use super::{BeginUploadFailed, Metered, PutFileFailed, UploadServices, UploadTarget};

impl UploadServices {
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
}
