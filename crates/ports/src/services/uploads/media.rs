//! An object's media (the `media` call, reprocess, removal) and delivery of its files
//! through signed URLs.

use medialib_domain::media::derive::MediaKind;
use medialib_domain::media::{ByteSpan, StorageKey, content_type_of};
use medialib_domain::{Action, Caller, ObjectId, Timestamp};

use crate::error::StoreError;
use crate::storage::{Reading, StorageError};
use crate::uploads::MediaRecord;

use super::{DeliverFailed, Delivery, MediaFailed, MediaFile, MediaView, UploadServices};

impl UploadServices {
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
}
