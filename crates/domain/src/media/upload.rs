//! Upload rules: the tus 1.0 headers, the file name a client gives, limits and quota, and the
//! checks a PATCH must pass. The HTTP layer parses with these; the use cases decide with them.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::object::{InvalidField, ObjectPatch, ObjectType};
use crate::time::Timestamp;

/// A tus header that is not what the protocol says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadUploadHeader {
    /// `Upload-Length` or `Upload-Offset` is not a non-negative integer of at most 19 digits.
    #[error("{0} must be a non-negative integer")]
    NotANumber(&'static str),
    /// `Upload-Metadata` is not comma-separated `key base64` pairs.
    #[error("Upload-Metadata must be comma-separated pairs of a key and a base64 value")]
    Metadata,
    /// A metadata value is not UTF-8.
    #[error("the Upload-Metadata value of {0} is not UTF-8 text")]
    MetadataText(String),
    /// `Upload-Checksum` is not `ALGORITHM BASE64` with a digest of the right size.
    #[error("Upload-Checksum must be `sha256` and a base64 SHA-256 digest")]
    Checksum,
    /// `Upload-Checksum` names an algorithm we do not offer (tus: 400).
    #[error("Upload-Checksum algorithm {0} is not supported (Tus-Checksum-Algorithm: sha256)")]
    ChecksumAlgorithm(String),
}

/// Parses `Upload-Length` or `Upload-Offset` (`name` for the message).
pub fn parse_byte_count(value: &str, name: &'static str) -> Result<u64, BadUploadHeader> {
    let value = value.trim();
    if value.is_empty() || value.len() > 19 || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(BadUploadHeader::NotANumber(name));
    }
    value
        .parse::<u64>()
        .ok()
        .filter(|n| i64::try_from(*n).is_ok())
        .ok_or(BadUploadHeader::NotANumber(name))
}

/// The name of an uploaded file, as its client gave it: 1 to 255 bytes of text with no path
/// separator, NUL or control character, and not `.` or `..`. It is shown to people and sent
/// in `Content-Disposition`; storage keys never contain it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileName(String);

/// Why a file name is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the file name {0}")]
pub struct InvalidFileName(&'static str);

impl FileName {
    /// Checks a file name.
    pub fn parse(input: &str) -> Result<Self, InvalidFileName> {
        if input.is_empty() || input.len() > 255 {
            return Err(InvalidFileName("must hold 1 to 255 bytes"));
        }
        if input.chars().any(|c| c == '/' || c == '\\') {
            return Err(InvalidFileName("must not contain a path (`/` or `\\`)"));
        }
        if input.chars().any(char::is_control) {
            return Err(InvalidFileName(
                "must not contain NUL or control characters",
            ));
        }
        if input == "." || input == ".." {
            return Err(InvalidFileName("must not be `.` or `..`"));
        }
        Ok(Self(input.to_owned()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The extension, lower-cased, when it is 1 to 8 ASCII letters or digits (`mp4`, `m4a`).
    pub fn extension(&self) -> Option<String> {
        let (stem, ext) = self.0.rsplit_once('.')?;
        (!stem.is_empty()
            && (1..=8).contains(&ext.len())
            && ext.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then(|| ext.to_ascii_lowercase())
    }
}

/// What a client says of an upload in `Upload-Metadata` (tus) or the one-shot form: the file
/// and the object's fields.
#[derive(Debug, Clone, Default)]
pub struct UploadDescription {
    /// `filename`.
    pub filename: Option<FileName>,
    /// `filetype` (the MIME type the client's browser reported; a hint only).
    pub content_type: Option<String>,
    /// `type`, `title`, `description`, `public` (as in describe).
    pub fields: ObjectPatch,
}

/// Why an upload's description is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidDescription {
    /// A header is malformed.
    #[error(transparent)]
    Header(#[from] BadUploadHeader),
    /// The file name.
    #[error(transparent)]
    FileName(#[from] InvalidFileName),
    /// An object field.
    #[error(transparent)]
    Field(#[from] InvalidField),
    /// The type is `catalog`: media goes into objects that carry media.
    #[error("an upload creates a video, audio, image or file object, not a catalog")]
    Catalog,
}

impl UploadDescription {
    /// Reads `Upload-Metadata`: comma-separated `key` or `key base64value` pairs (tus 1.0
    /// creation extension). Keys are non-empty ASCII without spaces or commas; values must
    /// be base64 of UTF-8 text. Unknown keys are ignored.
    pub fn from_tus_metadata(header: Option<&str>) -> Result<Self, InvalidDescription> {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for pair in header.unwrap_or("").split(',') {
            let pair = pair.trim();
            if pair.is_empty() {
                continue;
            }
            let mut parts = pair.split(' ');
            let key = parts.next().unwrap_or("");
            let value = parts.next().unwrap_or("");
            if key.is_empty() || !key.is_ascii() || parts.next().is_some() {
                return Err(BadUploadHeader::Metadata.into());
            }
            let bytes = STANDARD
                .decode(value)
                .map_err(|_| BadUploadHeader::Metadata)?;
            let text = String::from_utf8(bytes)
                .map_err(|_| BadUploadHeader::MetadataText(key.to_owned()))?;
            pairs.push((key.to_owned(), text));
        }
        Self::from_fields(&pairs)
    }

    /// Reads `(name, value)` pairs: `filename`, `filetype` and the describe fields.
    pub fn from_fields<K: AsRef<str>, V: AsRef<str>>(
        pairs: &[(K, V)],
    ) -> Result<Self, InvalidDescription> {
        let last = |name: &str| {
            pairs
                .iter()
                .rev()
                .find(|(k, _)| k.as_ref() == name)
                .map(|(_, v)| v.as_ref())
        };
        let fields = ObjectPatch::from_fields(pairs)?;
        if fields.object_type == Some(ObjectType::Catalog) {
            return Err(InvalidDescription::Catalog);
        }
        Ok(Self {
            filename: last("filename").map(FileName::parse).transpose()?,
            content_type: last("filetype")
                .filter(|t| t.len() <= 255 && t.is_ascii())
                .map(str::to_owned),
            fields,
        })
    }

    /// The type of the object an upload creates: the `type` given, else the one the file's
    /// MIME type or extension suggests, else `file`.
    pub fn object_type(&self) -> ObjectType {
        if let Some(t) = self.fields.object_type {
            return t;
        }
        let ext = self.filename.as_ref().and_then(FileName::extension);
        let mime = self.content_type.as_deref().unwrap_or("");
        let by_ext = ext.as_deref().map(content_type_of).unwrap_or("");
        for candidate in [mime, by_ext] {
            if candidate.starts_with("video/") {
                return ObjectType::Video;
            }
            if candidate.starts_with("audio/") {
                return ObjectType::Audio;
            }
            if candidate.starts_with("image/") {
                return ObjectType::Image;
            }
        }
        ObjectType::File
    }
}

/// The `Content-Type` delivered for a file with this extension (lower case).
pub fn content_type_of(extension: &str) -> &'static str {
    match extension {
        "mp4" | "m4v" => "video/mp4",
        "m4s" => "video/iso.segment",
        "mov" => "video/quicktime",
        "webm" => "video/webm",
        "mkv" => "video/x-matroska",
        "m4a" => "audio/mp4",
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        "ogg" | "oga" => "audio/ogg",
        "flac" => "audio/flac",
        "m3u8" => "application/vnd.apple.mpegurl",
        "vtt" => "text/vtt; charset=utf-8",
        "smil" => "application/smil+xml",
        "json" => "application/json",
        "jpg" | "jpeg" => "image/jpeg",
        "png" => "image/png",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// An `Upload-Checksum` (tus checksum extension): the SHA-256 the client computed over one
/// PATCH's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PatchChecksum(pub [u8; 32]);

impl PatchChecksum {
    /// Parses `sha256 BASE64`.
    pub fn parse(header: &str) -> Result<Self, BadUploadHeader> {
        let (algorithm, digest) = header
            .trim()
            .split_once(' ')
            .ok_or(BadUploadHeader::Checksum)?;
        if !algorithm.eq_ignore_ascii_case("sha256") {
            return Err(BadUploadHeader::ChecksumAlgorithm(
                algorithm.chars().take(32).collect(),
            ));
        }
        let bytes = STANDARD
            .decode(digest.trim())
            .map_err(|_| BadUploadHeader::Checksum)?;
        let digest: [u8; 32] = bytes.try_into().map_err(|_| BadUploadHeader::Checksum)?;
        Ok(Self(digest))
    }
}

/// The organization's limits on uploads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UploadLimits {
    /// The largest upload, in bytes.
    pub max_size: u64,
    /// Bytes the organization may keep, sources and unfinished uploads counted; `None`: no limit.
    pub quota: Option<u64>,
}

/// Why an upload may not begin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UploadNotAdmitted {
    /// Larger than `upload_max_size` (413).
    #[error("the upload is larger than the largest allowed ({max} bytes)")]
    TooLarge {
        /// The limit.
        max: u64,
    },
    /// Would pass `storage_quota` (409).
    #[error("storage quota exceeded")]
    QuotaExceeded,
}

impl UploadLimits {
    /// Whether an upload of `length` bytes may begin while `stored` bytes are kept.
    pub fn admit(&self, length: u64, stored: u64) -> Result<(), UploadNotAdmitted> {
        if length > self.max_size {
            return Err(UploadNotAdmitted::TooLarge { max: self.max_size });
        }
        self.room_for(length, stored)
    }

    /// Whether `length` more bytes fit in the quota beside `stored`.
    pub fn room_for(&self, length: u64, stored: u64) -> Result<(), UploadNotAdmitted> {
        match self.quota {
            Some(quota) if stored.saturating_add(length) > quota => {
                Err(UploadNotAdmitted::QuotaExceeded)
            }
            _ => Ok(()),
        }
    }
}

/// An unfinished upload, as far as the rules need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UploadProgress {
    /// The announced length.
    pub length: u64,
    /// Bytes durably received.
    pub offset: u64,
    /// When it expires if unfinished.
    pub expires: Timestamp,
}

/// Why a PATCH is refused before any byte is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PatchRefused {
    /// The upload expired (tus expiration: 410).
    #[error("the upload has expired")]
    Expired,
    /// `Upload-Offset` is not the upload's offset (tus: 409).
    #[error("Upload-Offset {given} does not match the upload's offset {expected}")]
    OffsetMismatch {
        /// What the client sent.
        given: u64,
        /// The upload's offset.
        expected: u64,
    },
}

impl UploadProgress {
    /// Checks a PATCH that claims to continue at `offset`, at `now`.
    pub fn check_patch(&self, offset: u64, now: Timestamp) -> Result<(), PatchRefused> {
        if now >= self.expires {
            return Err(PatchRefused::Expired);
        }
        if offset != self.offset {
            return Err(PatchRefused::OffsetMismatch {
                given: offset,
                expected: self.offset,
            });
        }
        Ok(())
    }

    /// Bytes still to come.
    pub fn remaining(&self) -> u64 {
        self.length.saturating_sub(self.offset)
    }

    /// Whether every byte has arrived.
    pub fn is_complete(&self) -> bool {
        self.offset >= self.length
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_are_plain_non_negative_integers() {
        assert_eq!(parse_byte_count("0", "Upload-Length"), Ok(0));
        assert_eq!(parse_byte_count(" 42 ", "Upload-Length"), Ok(42));
        for bad in [
            "",
            "-1",
            "+1",
            "1.5",
            "0x10",
            "99999999999999999999",
            "9223372036854775808",
        ] {
            assert!(parse_byte_count(bad, "Upload-Length").is_err(), "{bad}");
        }
        assert_eq!(
            parse_byte_count("9223372036854775807", "Upload-Length"),
            Ok(i64::MAX as u64)
        );
    }

    #[test]
    fn file_names_cannot_carry_paths_or_control_characters() {
        assert!(FileName::parse("lecture 1.mp4").is_ok());
        assert!(FileName::parse("Vorlesung – Übung.MOV").is_ok());
        for bad in [
            "",
            ".",
            "..",
            "../x.mp4",
            "a/b",
            "a\\b",
            "a\0b",
            "a\nb",
            &"x".repeat(256),
        ] {
            assert!(FileName::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn extensions_are_short_and_lower_cased() -> Result<(), InvalidFileName> {
        assert_eq!(
            FileName::parse("a.MP4")?.extension().as_deref(),
            Some("mp4")
        );
        assert_eq!(FileName::parse(".bashrc")?.extension(), None);
        assert_eq!(FileName::parse("noext")?.extension(), None);
        assert_eq!(
            FileName::parse("a.tar.gz")?.extension().as_deref(),
            Some("gz")
        );
        assert_eq!(FileName::parse("a.verylongext")?.extension(), None);
        assert_eq!(FileName::parse("a.m p4")?.extension(), None);
        Ok(())
    }

    #[test]
    fn tus_metadata_is_base64_pairs() -> Result<(), InvalidDescription> {
        // filename "clip.mp4", title "Hello", public "true", a key without a value.
        let d = UploadDescription::from_tus_metadata(Some(
            "filename Y2xpcC5tcDQ=,title SGVsbG8=, public dHJ1ZQ==,is_confidential",
        ))?;
        assert_eq!(d.filename.as_ref().map(FileName::as_str), Some("clip.mp4"));
        assert_eq!(d.fields.title.as_ref().map(|t| t.as_str()), Some("Hello"));
        assert_eq!(d.fields.public, Some(true));
        assert_eq!(d.object_type(), ObjectType::Video);
        for bad in [
            "filename !!!",
            "filename a b",
            "é",
            "filename Li4vZXRjL3Bhc3N3ZA==",
        ] {
            assert!(
                UploadDescription::from_tus_metadata(Some(bad)).is_err(),
                "{bad}"
            );
        }
        // type catalog is refused; a non-UTF-8 value too.
        assert_eq!(
            UploadDescription::from_tus_metadata(Some("type Y2F0YWxvZw==")).err(),
            Some(InvalidDescription::Catalog)
        );
        assert!(UploadDescription::from_tus_metadata(Some("title /w==")).is_err());
        Ok(())
    }

    #[test]
    fn the_object_type_follows_the_type_then_the_file() -> Result<(), InvalidDescription> {
        let by =
            |pairs: &[(&str, &str)]| UploadDescription::from_fields(pairs).map(|d| d.object_type());
        assert_eq!(by(&[("filename", "a.m4a")])?, ObjectType::Audio);
        assert_eq!(by(&[("filetype", "image/png")])?, ObjectType::Image);
        assert_eq!(by(&[("filename", "a.pdf")])?, ObjectType::File);
        assert_eq!(
            by(&[("filename", "a.mp4"), ("type", "file")])?,
            ObjectType::File
        );
        assert_eq!(by(&[])?, ObjectType::File);
        Ok(())
    }

    #[test]
    fn checksums_name_sha256_and_a_digest() {
        let digest = STANDARD.encode([7u8; 32]);
        assert_eq!(
            PatchChecksum::parse(&format!("sha256 {digest}")),
            Ok(PatchChecksum([7; 32]))
        );
        assert!(matches!(
            PatchChecksum::parse(&format!("sha1 {digest}")),
            Err(BadUploadHeader::ChecksumAlgorithm(_))
        ));
        for bad in ["sha256", "sha256 !!", "sha256 AAAA"] {
            assert_eq!(
                PatchChecksum::parse(bad),
                Err(BadUploadHeader::Checksum),
                "{bad}"
            );
        }
    }

    #[test]
    fn limits_refuse_too_large_before_quota() {
        let limits = UploadLimits {
            max_size: 100,
            quota: Some(150),
        };
        assert_eq!(limits.admit(100, 50), Ok(()));
        assert_eq!(
            limits.admit(101, 0),
            Err(UploadNotAdmitted::TooLarge { max: 100 })
        );
        assert_eq!(limits.admit(100, 51), Err(UploadNotAdmitted::QuotaExceeded));
        let unlimited = UploadLimits {
            max_size: u64::MAX,
            quota: None,
        };
        assert_eq!(unlimited.admit(u64::MAX, u64::MAX), Ok(()));
    }

    #[test]
    fn a_patch_must_continue_where_the_upload_stands_before_it_expires() {
        let p = UploadProgress {
            length: 10,
            offset: 4,
            expires: Timestamp::from_epoch_seconds(100),
        };
        let now = Timestamp::from_epoch_seconds(99);
        assert_eq!(p.check_patch(4, now), Ok(()));
        assert_eq!(
            p.check_patch(3, now),
            Err(PatchRefused::OffsetMismatch {
                given: 3,
                expected: 4
            })
        );
        assert_eq!(
            p.check_patch(4, Timestamp::from_epoch_seconds(100)),
            Err(PatchRefused::Expired)
        );
        assert_eq!(p.remaining(), 6);
        assert!(!p.is_complete());
    }
}
