//! Media: where an object's bytes live, how they are uploaded, asked for and delivered.

mod key;
mod range;
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
