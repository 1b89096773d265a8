//! Where media bytes live inside the media store, as a value that cannot name a place outside it.

use std::fmt;

/// A key inside the media store: relative, `/`-separated segments of ASCII letters, digits,
/// `-`, `_` and `.`, none of them empty, `.` or `..`, at most 512 bytes. A key built from a
/// client's file name or path cannot leave the store's root: the storage adapters join it to
/// their root (a directory or a bucket prefix) without further checks.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StorageKey(String);

/// Why a string is not a [`StorageKey`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a storage key: {0}")]
pub struct InvalidStorageKey(&'static str);

impl StorageKey {
    /// The longest key, in bytes (S3 allows 1024; the adapters add a prefix).
    pub const MAX_LEN: usize = 512;

    /// Parses a key.
    pub fn parse(input: &str) -> Result<Self, InvalidStorageKey> {
        if input.is_empty() {
            return Err(InvalidStorageKey("empty"));
        }
        if input.len() > Self::MAX_LEN {
            return Err(InvalidStorageKey("longer than 512 bytes"));
        }
        for segment in input.split('/') {
            check_segment(segment)?;
        }
        Ok(Self(input.to_owned()))
    }

    /// This key with one more segment (`self/segment`).
    pub fn join(&self, segment: &str) -> Result<Self, InvalidStorageKey> {
        Self::parse(&format!("{}/{segment}", self.0))
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The last segment.
    pub fn file_name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or(&self.0)
    }

    /// Whether `self` lies under `prefix` (equal to it, or `prefix/…`).
    pub fn is_under(&self, prefix: &StorageKey) -> bool {
        self.0 == prefix.0
            || (self.0.starts_with(&prefix.0)
                && self.0.as_bytes().get(prefix.0.len()) == Some(&b'/'))
    }
}

fn check_segment(segment: &str) -> Result<(), InvalidStorageKey> {
    if segment.is_empty() {
        return Err(InvalidStorageKey(
            "an empty segment (`//`, or a leading or trailing `/`)",
        ));
    }
    if segment == "." || segment == ".." {
        return Err(InvalidStorageKey("a `.` or `..` segment"));
    }
    if !segment
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err(InvalidStorageKey(
            "a character other than ASCII letters, digits, `-`, `_` and `.`",
        ));
    }
    Ok(())
}

impl fmt::Display for StorageKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_stay_inside_the_store() {
        for good in [
            "a",
            "media/0b7c/1/source",
            "x.y-z_9",
            "uploads/abc/part.0001",
        ] {
            assert!(StorageKey::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "", "/abs", "a/", "a//b", "..", "a/../b", "./a", "a/.", "a\\b", "a\0b", "é", "a b",
            "%2e%2e",
        ] {
            assert!(StorageKey::parse(bad).is_err(), "{bad:?}");
        }
        assert!(StorageKey::parse(&"a".repeat(513)).is_err());
        assert!(StorageKey::parse(&"a".repeat(512)).is_ok());
    }

    #[test]
    fn join_checks_the_segment_and_is_under_respects_segment_boundaries()
    -> Result<(), InvalidStorageKey> {
        let media = StorageKey::parse("media/1")?;
        assert_eq!(media.join("source")?.as_str(), "media/1/source");
        assert!(media.join("../x").is_err());
        assert!(media.join("source")?.is_under(&media));
        assert!(media.is_under(&media));
        assert!(!StorageKey::parse("media/10/x")?.is_under(&media));
        assert_eq!(media.join("source")?.file_name(), "source");
        Ok(())
    }
}
