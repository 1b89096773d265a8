//! Media: where an object's bytes live, how they are uploaded, asked for and delivered.

pub mod derive;
pub mod derived;
pub mod documents;
mod key;
pub mod probe;
pub mod progress;
mod range;
pub mod records;
mod sha;
mod signed;
mod upload;

pub use key::{InvalidStorageKey, StorageKey};
pub use range::{ByteSpan, RangeAnswer, resolve_range};
pub use sha::{InvalidHashState, ResumableSha256};
pub use signed::{MediaSigningKey, UrlRefused, WeakSigningKey};
pub use upload::{
    BadUploadHeader, FileName, InvalidDescription, InvalidFileName, PatchChecksum, PatchRefused,
    UploadDescription, UploadLimits, UploadNotAdmitted, UploadProgress, content_type_of,
    parse_byte_count,
};

/// Where an object's media stands (DECISIONS §7): `uploading` → `queued` → `processing` →
/// `ready` | `failed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MediaState {
    /// Bytes are arriving.
    Uploading,
    /// Stored, waiting for a worker.
    Queued,
    /// A worker is deriving files.
    Processing,
    /// Playable / downloadable.
    Ready,
    /// Processing gave up; the error says why.
    Failed,
}

/// Text that is not a [`MediaState`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a media state: {0}")]
pub struct UnknownMediaState(pub String);

impl MediaState {
    /// The state's name in the API and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Uploading => "uploading",
            Self::Queued => "queued",
            Self::Processing => "processing",
            Self::Ready => "ready",
            Self::Failed => "failed",
        }
    }

    /// Parses a name written by [`MediaState::as_str`].
    pub fn parse(text: &str) -> Result<Self, UnknownMediaState> {
        Ok(match text {
            "uploading" => Self::Uploading,
            "queued" => Self::Queued,
            "processing" => Self::Processing,
            "ready" => Self::Ready,
            "failed" => Self::Failed,
            other => return Err(UnknownMediaState(other.to_owned())),
        })
    }

    /// The state a finished upload of an object of `object_type` enters: files are served
    /// as they are (ready); everything else waits for processing (queued).
    pub fn after_upload(object_type: crate::object::ObjectType) -> Self {
        match object_type {
            crate::object::ObjectType::File => Self::Ready,
            _ => Self::Queued,
        }
    }
}
