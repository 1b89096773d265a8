//! What the records show of an object's media, with fresh signed URLs (DECISIONS §7
//! "Records"): the `images` of describe, catalog and video records, and the playable files of
//! the video record and the player page.
//!
//! The domain chooses the files ([`DerivedSet::images`], [`DerivedSet::playable`]); these use
//! cases read the derived set and sign. They take objects their caller was already allowed to
//! read (a describe, a listing, a public object): the URLs they mint open every file of the
//! object until they expire.

use std::collections::HashMap;

use medialib_domain::media::derive::MediaKind;
use medialib_domain::media::derived::DerivedSet;
use medialib_domain::media::probe::Dimensions;
use medialib_domain::media::records::{ImageSize, PlayFormat, has_video_record};
use medialib_domain::{Action, Caller, IdOrZero, MediaObject, ObjectId, ObjectType};

use super::catalog::VideoFailed;
use super::{CatalogPage, MembershipChangeFailed, UploadServices, UploadTarget};
use crate::error::StoreError;
use crate::repos::PermissionEntry;
use crate::uploads::MediaRecord;

/// A record's `images`: a signed delivery URL, path only (`/m/…`: the HTTP layer prefixes
/// the base URL), for each still the media has, smallest first. Empty until processing made
/// them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageLinks(Vec<(ImageSize, String)>);

impl ImageLinks {
    /// Links as given (the use cases below make them from a derived set).
    pub fn new(links: Vec<(ImageSize, String)>) -> Self {
        Self(links)
    }

    /// The stills: size and signed path.
    pub fn iter(&self) -> impl Iterator<Item = (ImageSize, &str)> {
        self.0.iter().map(|(size, path)| (*size, path.as_str()))
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A file of the video record with a signed delivery URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlayableFile {
    /// `mp4`, `hls` or `smil`.
    pub format: PlayFormat,
    /// The file's signed delivery URL, path only (`/m/…`).
    pub path: String,
    /// The WebVTT thumbnail track's signed URL, path only (a video's).
    pub thumbnails: Option<String>,
    /// The picture's size (MP4 renditions).
    pub dimensions: Option<Dimensions>,
    /// Bits a second (MP4 renditions, the `.m4a`).
    pub bitrate: Option<u32>,
}

/// A library as its page shows it: the listing, and for its members their media's state
/// and their stills.
#[derive(Debug, Clone)]
pub struct LibraryView {
    /// The library.
    pub library: MediaObject,
    /// Its members (most recently changed first) and the caller's level on it.
    pub page: CatalogPage,
    /// The media record of each member that has one (state, progress, error).
    pub media: HashMap<ObjectId, MediaRecord>,
    /// The stills of each member that has them.
    pub images: HashMap<ObjectId, ImageLinks>,
    /// The people with an entry on it, when the caller may read them (its admins, whom the
    /// page offers its forms); `None` for a viewer.
    pub people: Option<Vec<PermissionEntry>>,
    /// Whether the caller may upload new media into it now (the upload gate and room in the
    /// quota: OPTIONS' `proceed`), so that the page offers its upload box.
    pub may_upload: bool,
}

/// The video record of an object: the object, its playable files and its images, with URLs
/// minted for this answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VideoView {
    /// The video or audio object.
    pub object: MediaObject,
    /// `[]` until processing derived them.
    pub files: Vec<PlayableFile>,
    /// Empty until processing derived them.
    pub images: ImageLinks,
}

/// What the player page shows of an object, with URLs minted for this page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlayerMedia {
    /// The playable files (the video record's), `[]` for a type that is not played.
    pub files: Vec<PlayableFile>,
    /// The stills.
    pub images: ImageLinks,
    /// The waveform peaks' signed URL, path only (an audio recording's).
    pub waveform: Option<String>,
}

impl UploadServices {
    /// The `images` of `object`'s record (describe), for a caller who may read it. Only
    /// processed media has stills: a catalog or a file costs no read.
    pub fn images(&self, object: &MediaObject) -> Result<ImageLinks, StoreError> {
        self.images_from(object.id(), self.derived(object)?.as_ref())
    }

    /// The `images` of `object`'s record from its derived files as already read (describe
    /// GET's [`Described::derived`](super::media::Described::derived)): no read, only the signed
    /// URLs.
    pub fn images_from(
        &self,
        object: ObjectId,
        derived: Option<&DerivedSet>,
    ) -> Result<ImageLinks, StoreError> {
        match derived {
            Some(set) => self.image_links(object, set),
            None => Ok(ImageLinks::default()),
        }
    }

    /// The `images` of many objects at once (the members of a catalog answer, by id and
    /// type): one read for all of them, whatever their number. Objects without stills are
    /// left out of the map.
    pub fn images_of(
        &self,
        objects: &[(ObjectId, ObjectType)],
    ) -> Result<HashMap<ObjectId, ImageLinks>, StoreError> {
        let processed: Vec<ObjectId> = objects
            .iter()
            .filter(|(_, t)| MediaKind::of(*t).is_some())
            .map(|(id, _)| *id)
            .collect();
        let mut out = HashMap::new();
        for (id, set) in self.uploads.derived_of(&processed)? {
            let links = self.image_links(id, &set)?;
            if !links.is_empty() {
                out.insert(id, links);
            }
        }
        Ok(out)
    }

    /// A library's page for `caller` (who needs `view` on it): its members, the state of
    /// their media and their stills, and for its admins the people on it.
    pub fn library_view(
        &self,
        caller: &Caller,
        library: ObjectId,
    ) -> Result<LibraryView, MembershipChangeFailed> {
        let page = self.objects.list_catalog(caller, library, None, None)?;
        let found = self
            .objects
            .media
            .object(library)?
            .ok_or(MembershipChangeFailed::NotFound)?;
        let members: Vec<(ObjectId, ObjectType)> = page
            .items
            .iter()
            .map(|i| (i.object.id(), i.object.object_type()))
            .collect();
        // One read for every member's media: their state, and their stills.
        let items: Vec<ObjectId> = members
            .iter()
            .filter(|(_, t)| !t.is_collection())
            .map(|(id, _)| *id)
            .collect();
        let mut media = HashMap::new();
        let mut images = HashMap::new();
        for record in self.uploads.media_of(&items)? {
            if let Some(set) = record.derived.as_ref() {
                let links = self.image_links(record.object, set)?;
                if !links.is_empty() {
                    images.insert(record.object, links);
                }
            }
            media.insert(record.object, record);
        }
        let manages = self.objects.permits(
            caller,
            Action::ReadPermissions {
                collection: library,
            },
        )?;
        let people = if manages {
            Some(self.objects.media.permission_entries(library)?)
        } else {
            None
        };
        let may_upload = self.may_upload(
            caller,
            UploadTarget {
                collection: library,
                object: IdOrZero::Zero,
            },
        )?;
        Ok(LibraryView {
            library: found,
            page,
            media,
            images,
            people,
            may_upload,
        })
    }

    /// What the player page shows of `object` (a caller already read it): the playable
    /// files of a video or audio object, its stills (a video's poster, an audio recording's
    /// waveform picture) and an audio recording's waveform peaks. Empty until processing
    /// derived them; a type that is not played has no files.
    pub fn player_media(&self, object: &MediaObject) -> Result<PlayerMedia, StoreError> {
        let Some(set) = self.derived(object)? else {
            return Ok(PlayerMedia::default());
        };
        let files = if has_video_record(object.object_type()) {
            self.playable_links(object.id(), &set)?
        } else {
            Vec::new()
        };
        let waveform = match set.waveform() {
            Some(f) => Some(self.url_path(object.id(), f.path.as_str())?),
            None => None,
        };
        Ok(PlayerMedia {
            files,
            images: self.image_links(object.id(), &set)?,
            waveform,
        })
    }

    /// The video record (video GET, `view` on the collection): a video's MP4 renditions, HLS
    /// master and SMIL, or an audio recording's `.m4a`, and the images. Any other type is
    /// refused ([`VideoFailed::NotPlayable`]).
    pub fn video(
        &self,
        caller: &Caller,
        collection: ObjectId,
        object: ObjectId,
    ) -> Result<VideoView, VideoFailed> {
        let object = self.objects.view_video(caller, collection, object)?;
        let (files, images) = match self.derived(&object)? {
            Some(set) => (
                self.playable_links(object.id(), &set)?,
                self.image_links(object.id(), &set)?,
            ),
            None => (Vec::new(), ImageLinks::default()),
        };
        Ok(VideoView {
            object,
            files,
            images,
        })
    }

    /// The derived set of `object`'s media, when its type is processed and a job finished.
    fn derived(&self, object: &MediaObject) -> Result<Option<DerivedSet>, StoreError> {
        if MediaKind::of(object.object_type()).is_none() {
            return Ok(None);
        }
        Ok(self.uploads.media(object.id())?.and_then(|m| m.derived))
    }

    fn image_links(&self, object: ObjectId, set: &DerivedSet) -> Result<ImageLinks, StoreError> {
        let mut images = set.images().peekable();
        if images.peek().is_none() {
            return Ok(ImageLinks::default());
        }
        let base = self.url_path(object, "")?;
        Ok(ImageLinks(
            images
                .map(|(size, f)| (size, format!("{base}{}", f.path)))
                .collect(),
        ))
    }

    fn playable_links(
        &self,
        object: ObjectId,
        set: &DerivedSet,
    ) -> Result<Vec<PlayableFile>, StoreError> {
        let playable = set.playable();
        if playable.is_empty() {
            return Ok(Vec::new());
        }
        let base = self.url_path(object, "")?;
        Ok(playable
            .into_iter()
            .map(|p| PlayableFile {
                format: p.format,
                path: format!("{base}{}", p.file.path),
                thumbnails: p.thumbnails.map(|t| format!("{base}{}", t.path)),
                dimensions: p.file.dimensions,
                bitrate: p.file.bitrate,
            })
            .collect())
    }
}
