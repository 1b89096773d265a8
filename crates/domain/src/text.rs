//! Text values with their limits (DECISIONS.md §2).

use std::collections::BTreeMap;
use std::fmt;

/// A text input that breaks its limit; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidText {
    /// Longer than allowed (in Unicode scalar values).
    #[error("{field} is longer than {max} characters")]
    TooLong {
        /// Input name.
        field: &'static str,
        /// Limit.
        max: usize,
    },
    /// Empty where a value is required.
    #[error("{field} must not be empty")]
    Empty {
        /// Input name.
        field: &'static str,
    },
    /// Holds control characters.
    #[error("{field} must not contain control characters")]
    ControlCharacter {
        /// Input name.
        field: &'static str,
    },
    /// Holds U+0000, which PostgreSQL cannot store in text (refused on every backend alike).
    #[error("{field} must not contain NUL characters")]
    Nul {
        /// Input name.
        field: &'static str,
    },
}

fn check_len(s: &str, field: &'static str, max: usize) -> Result<(), InvalidText> {
    // Count scalar values lazily, stopping as soon as the limit is passed.
    if s.len() > max && s.chars().nth(max).is_some() {
        Err(InvalidText::TooLong { field, max })
    } else {
        Ok(())
    }
}

fn check_no_nul(s: &str, field: &'static str) -> Result<(), InvalidText> {
    if s.contains('\0') {
        Err(InvalidText::Nul { field })
    } else {
        Ok(())
    }
}

macro_rules! text_newtype {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(String);

        impl $name {
            /// The text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({:?})"), self.0)
            }
        }

        #[cfg(feature = "serde")]
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }
    };
}

text_newtype!(
    /// An object's title: at most 255 Unicode scalar values, no NUL, may be blank.
    Title
);
text_newtype!(
    /// An object's description: may be blank, at most 65 536 characters, no NUL.
    Description
);
text_newtype!(
    /// A user's SSO unique identifier: 1..=255 characters, no control characters.
    UniqueId
);
text_newtype!(
    /// A first or last name: at most 255 characters, may be blank.
    PersonName
);

/// `parse` (which copies the input) and `parse_owned` (which keeps a stored row's allocation)
/// for a newtype over `String` whose rules are its `check`.
macro_rules! parse_by_check {
    ($name:ident, $error:ty, $doc:expr) => {
        impl $name {
            #[doc = $doc]
            pub fn parse(input: &str) -> Result<Self, $error> {
                Self::check(input)?;
                Ok(Self(input.to_owned()))
            }

            /// [`parse`](Self::parse), keeping `input`'s allocation (a stored row's text).
            pub fn parse_owned(input: String) -> Result<Self, $error> {
                Self::check(&input)?;
                Ok(Self(input))
            }
        }
    };
}
pub(crate) use parse_by_check;

/// The rules of a free text of at most `$max` characters without NUL, named `$field` in its
/// errors, and its parsing.
macro_rules! free_text_parsing {
    ($name:ident, $field:literal, $max:expr) => {
        impl $name {
            #[doc = concat!("Longest ", $field, ", in characters.")]
            pub const MAX_CHARS: usize = $max;

            fn check(input: &str) -> Result<(), InvalidText> {
                check_len(input, $field, Self::MAX_CHARS)?;
                check_no_nul(input, $field)
            }
        }
        parse_by_check!($name, InvalidText, concat!("Parses a ", $field, "."));
    };
}

free_text_parsing!(Title, "title", 255);
free_text_parsing!(Description, "description", 65_536);

impl UniqueId {
    /// Longest uniqueId, in characters.
    pub const MAX_CHARS: usize = 255;

    /// Parses a uniqueId; surrounding white space is not trimmed, it is refused as part of the value.
    pub fn parse(input: &str) -> Result<Self, InvalidText> {
        let field = "uniqueId";
        if input.is_empty() {
            return Err(InvalidText::Empty { field });
        }
        check_len(input, field, Self::MAX_CHARS)?;
        if input.chars().any(char::is_control) {
            return Err(InvalidText::ControlCharacter { field });
        }
        Ok(Self(input.to_owned()))
    }
}

impl PersonName {
    /// Longest name, in characters.
    pub const MAX_CHARS: usize = 255;

    /// Parses a first or last name (`field` names the input in errors).
    pub fn parse(input: &str, field: &'static str) -> Result<Self, InvalidText> {
        check_len(input, field, Self::MAX_CHARS)?;
        if input.chars().any(char::is_control) {
            return Err(InvalidText::ControlCharacter { field });
        }
        Ok(Self(input.to_owned()))
    }
}

/// Client-defined string properties of an object (`properties[KEY]=VALUE`).
///
/// At most 64 keys; a key is 1..=64 characters without control characters,
/// a value at most 4 096 characters without NUL.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Properties(BTreeMap<String, String>);

/// Why a set of properties is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidProperties {
    /// More keys than allowed.
    #[error("at most {max} properties are allowed")]
    TooMany {
        /// Limit.
        max: usize,
    },
    /// A key breaks its limits.
    #[error("property key {key:?} must be 1 to 64 characters without control characters")]
    BadKey {
        /// The key (cut to 80 characters).
        key: String,
    },
    /// A value is too long.
    #[error("property {key:?} is longer than 4096 characters")]
    ValueTooLong {
        /// The key.
        key: String,
    },
    /// A value holds U+0000 (PostgreSQL cannot store it).
    #[error("property {key:?} must not contain NUL characters")]
    ValueNul {
        /// The key.
        key: String,
    },
}

impl Properties {
    /// Most keys.
    pub const MAX_KEYS: usize = 64;
    /// Longest key.
    pub const MAX_KEY_CHARS: usize = 64;
    /// Longest value.
    pub const MAX_VALUE_CHARS: usize = 4096;

    /// No properties.
    pub fn empty() -> Self {
        Self::default()
    }

    /// Parses key/value pairs; a later duplicate key replaces the earlier one. Owned texts
    /// (a stored row's) are kept, borrowed ones copied.
    pub fn parse<I, K, V>(pairs: I) -> Result<Self, InvalidProperties>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str> + Into<String>,
        V: AsRef<str> + Into<String>,
    {
        let mut map = BTreeMap::new();
        for (key, value) in pairs {
            let (k, v) = (key.as_ref(), value.as_ref());
            let key_ok = !k.is_empty()
                && check_len(k, "key", Self::MAX_KEY_CHARS).is_ok()
                && !k.chars().any(char::is_control);
            if !key_ok {
                return Err(InvalidProperties::BadKey {
                    key: k.chars().take(80).collect(),
                });
            }
            if check_len(v, "value", Self::MAX_VALUE_CHARS).is_err() {
                return Err(InvalidProperties::ValueTooLong { key: k.to_owned() });
            }
            if v.contains('\0') {
                return Err(InvalidProperties::ValueNul { key: k.to_owned() });
            }
            map.insert(key.into(), value.into());
            if map.len() > Self::MAX_KEYS {
                return Err(InvalidProperties::TooMany {
                    max: Self::MAX_KEYS,
                });
            }
        }
        Ok(Self(map))
    }

    /// Merges `other` over `self` (an update sets the keys it names and keeps the rest).
    pub fn merged(mut self, other: Properties) -> Result<Self, InvalidProperties> {
        self.0.extend(other.0);
        if self.0.len() > Self::MAX_KEYS {
            return Err(InvalidProperties::TooMany {
                max: Self::MAX_KEYS,
            });
        }
        Ok(self)
    }

    /// Key/value pairs, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn title_counts_characters_not_bytes() {
        let ok = "é".repeat(255);
        assert_eq!(Title::parse(&ok).unwrap().as_str(), ok);
        let bad = "é".repeat(256);
        assert_eq!(
            Title::parse(&bad),
            Err(InvalidText::TooLong {
                field: "title",
                max: 255
            })
        );
        assert!(Title::parse(&"a".repeat(255)).is_ok());
        assert!(Title::parse(&"a".repeat(256)).is_err());
        assert!(Title::parse("").is_ok(), "blank is allowed");
        assert_eq!(
            Title::parse("a\0b"),
            Err(InvalidText::Nul { field: "title" })
        );
        assert!(Title::parse("tab\tand\nnewline").is_ok());
        assert_eq!(
            Description::parse("\0").unwrap_err().to_string(),
            "description must not contain NUL characters"
        );
        assert_eq!(
            Title::parse(&"x".repeat(300)).unwrap_err().to_string(),
            "title is longer than 255 characters"
        );
    }

    #[test]
    fn owned_texts_follow_the_same_rules() {
        let long = "é".repeat(256);
        let longer = "x".repeat(65_537);
        for input in ["", "plain", "a\0b", "tab\tand\nnewline", &long, &longer] {
            assert_eq!(Title::parse_owned(input.to_owned()), Title::parse(input));
            assert_eq!(
                Description::parse_owned(input.to_owned()),
                Description::parse(input)
            );
        }
        assert!(
            Title::parse_owned(long).is_err(),
            "the control: one that fails"
        );
    }

    #[test]
    fn unique_id_rules() {
        assert!(UniqueId::parse("").is_err());
        assert!(UniqueId::parse("alice\n").is_err());
        assert!(UniqueId::parse(&"a".repeat(256)).is_err());
        assert_eq!(
            UniqueId::parse("alice@uni.example").unwrap().as_str(),
            "alice@uni.example"
        );
    }

    #[test]
    fn person_names_may_be_blank() {
        assert!(PersonName::parse("", "firstName").is_ok());
        assert!(PersonName::parse("a\u{0}", "firstName").is_err());
    }

    #[test]
    fn properties_limits() {
        assert!(Properties::parse([("k", "v")]).is_ok());
        assert!(Properties::parse([("", "v")]).is_err());
        assert!(Properties::parse([("k".repeat(65), "v".to_owned())]).is_err());
        assert!(Properties::parse([("k".to_owned(), "v".repeat(4097))]).is_err());
        assert_eq!(
            Properties::parse([("k", "a\0")]),
            Err(InvalidProperties::ValueNul { key: "k".into() })
        );
        let many: Vec<(String, String)> =
            (0..65).map(|i| (format!("k{i}"), String::new())).collect();
        assert_eq!(
            Properties::parse(many),
            Err(InvalidProperties::TooMany { max: 64 })
        );
        let dup = Properties::parse([("a", "1"), ("a", "2")]).unwrap();
        assert_eq!(dup.iter().collect::<Vec<_>>(), vec![("a", "2")]);
    }

    #[test]
    fn properties_merge_keeps_unnamed_keys() {
        let a = Properties::parse([("a", "1"), ("b", "2")]).unwrap();
        let b = Properties::parse([("b", "3")]).unwrap();
        let m = a.merged(b).unwrap();
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![("a", "1"), ("b", "3")]);
    }
}
