//! Identifiers: RFC 4122 version-5 UUIDs assigned by the service; a grant's id is the one
//! exception ([`GrantId::ordered`]).

use std::fmt;
use std::str::FromStr;

use uuid::Uuid;

use crate::Timestamp;

/// Why a text is not a UUID.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} is not a UUID (32 hexadecimal digits, dashes optional)")]
pub struct InvalidUuid {
    field: &'static str,
}

impl InvalidUuid {
    /// The name of the input that failed to parse.
    pub fn field(&self) -> &'static str {
        self.field
    }
}

/// Parses 32 hex digits with the canonical dashes optional, any case.
///
/// Only the canonical 8-4-4-4-12 dash positions or no dashes at all are
/// accepted; braces, `urn:uuid:` prefixes and other spellings are refused.
fn parse_uuid(input: &str, field: &'static str) -> Result<Uuid, InvalidUuid> {
    // Only the simple (32 digits) and dashed (36 bytes) forms: the uuid crate's parser also
    // takes the braced (38) and URN (45) forms, which no id of this service is written in.
    // Its parser is table-driven (ids are parsed on every request's path, and a listing
    // parses a few per member) and checks the dashes' places.
    match input.len() {
        32 | 36 => Uuid::try_parse_ascii(input.as_bytes()).map_err(|_| InvalidUuid { field }),
        _ => Err(InvalidUuid { field }),
    }
}

/// The organization's namespace: the v5 namespace every id of this deployment is made in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OrgNamespace(Uuid);

impl OrgNamespace {
    /// Builds the namespace from 16 random bytes (done once, at first migration).
    pub fn from_random(bytes: [u8; 16]) -> Self {
        // Shape the random bytes as a version-4 UUID: the namespace itself is random.
        Self(uuid::Builder::from_random_bytes(bytes).into_uuid())
    }

    /// Parses a stored namespace.
    pub fn parse(input: &str) -> Result<Self, InvalidUuid> {
        parse_uuid(input, "namespace").map(Self)
    }

    /// Derives a fresh version-5 id in this namespace from 16 random bytes.
    fn derive(&self, random: [u8; 16]) -> Uuid {
        Uuid::new_v5(&self.0, &random)
    }
}

impl fmt::Display for OrgNamespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

/// The length of an id's text: 32 hex digits and 4 dashes.
pub const UUID_TEXT_LEN: usize = 36;

macro_rules! uuid_id {
    ($(#[$meta:meta])* $name:ident, $field:literal) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Uuid);

        impl $name {
            /// Mints a new version-5 id in the organization's namespace.
            pub fn generate(ns: &OrgNamespace, random: [u8; 16]) -> Self {
                Self(ns.derive(random))
            }

            /// Parses 32 hex digits, dashes optional, any case.
            pub fn parse(input: &str) -> Result<Self, InvalidUuid> {
                parse_uuid(input, $field).map(Self)
            }

            /// The 16 raw bytes.
            pub fn as_bytes(&self) -> &[u8; 16] {
                self.0.as_bytes()
            }

            /// The id as its `Display` writes it (hyphenated, lower case), written into `buf`:
            /// for writers that put many ids into one answer without the formatting
            /// machinery.
            pub fn encode_into<'b>(&self, buf: &'b mut [u8; UUID_TEXT_LEN]) -> &'b str {
                self.0.hyphenated().encode_lower(buf)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.hyphenated().fmt(f)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({})"), self.0.hyphenated())
            }
        }

        impl FromStr for $name {
            type Err = InvalidUuid;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::parse(s)
            }
        }

        #[cfg(feature = "serde")]
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    };
}

uuid_id!(
    /// Identifies a media object; a collection (media library) is an object of type `catalog`.
    ObjectId,
    "object_uuid"
);
uuid_id!(
    /// Identifies a user of the organization.
    UserId,
    "user_id"
);
uuid_id!(
    /// Identifies an OAuth grant: one user's approval of one client, and every token descended from it.
    GrantId,
    "grant_id"
);

impl GrantId {
    /// Mints a grant's id so that it sorts after the ids minted before it: an RFC 9562
    /// version-7 UUID whose 48-bit time field is `at` (to the second, in milliseconds),
    /// followed by the 32 bits of `sequence` (a counter of the minting process) and 42 bits of
    /// `random`. Text order is the same as this order (lower-case hex, fixed width).
    ///
    /// A grant is not an object of the spec and its id is never shown to a client. It is the
    /// key of the grant and of an index on each of the token tables and the codes, so an id
    /// made in order lands on the last page of each of those four B-trees, where a random
    /// version-5 id lands on a page of its own in each: a code grant then writes about 40 %
    /// fewer database pages (docs/storage.md, "Grant ids"). It tells whoever reads the
    /// database when the grant was made, which `created_at` says already. Two processes minting
    /// in the same second with the same sequence differ in the 42 random bits.
    pub fn ordered(at: Timestamp, sequence: u32, random: [u8; 16]) -> Self {
        const MAX_MILLIS: u64 = (1 << 48) - 1;
        let seconds = u64::try_from(at.epoch_seconds()).unwrap_or(0);
        let millis = seconds.saturating_mul(1000).min(MAX_MILLIS).to_be_bytes();
        let seq = sequence.to_be_bytes();
        let mut b = [0u8; 16];
        b[..6].copy_from_slice(&millis[2..]);
        // Version 7 in the high nibble of byte 6; the variant's two bits (0b10) at the top of
        // byte 8; the sequence's 32 bits in the 4 + 8 + 6 + 8 + 6 bits around them.
        b[6] = 0x70 | (seq[0] >> 4);
        b[7] = (seq[0] << 4) | (seq[1] >> 4);
        b[8] = 0x80 | ((seq[1] & 0x0f) << 2) | (seq[2] >> 6);
        b[9] = (seq[2] << 2) | (seq[3] >> 6);
        b[10] = (seq[3] << 2) | (random[0] & 0x03);
        b[11..].copy_from_slice(&random[1..6]);
        Self(Uuid::from_bytes(b))
    }
}

/// A path position that takes an id or the literal `0` (DECISIONS.md §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdOrZero<T> {
    /// The literal `0`: "new", "the caller" or "all", depending on the call.
    Zero,
    /// A real id.
    Id(T),
}

impl<T: FromStr<Err = InvalidUuid>> IdOrZero<T> {
    /// Parses `0` or an id.
    pub fn parse(input: &str) -> Result<Self, InvalidUuid> {
        if input == "0" {
            Ok(Self::Zero)
        } else {
            T::from_str(input).map(Self::Id)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: [u8; 16] = [7; 16];

    #[test]
    fn an_encoded_id_is_its_display() {
        let ns = OrgNamespace::from_random(NS);
        for random in [[0; 16], [0xab; 16], [0xff; 16]] {
            let object = ObjectId::generate(&ns, random);
            let user = UserId::generate(&ns, random);
            let mut buf = [0; UUID_TEXT_LEN];
            assert_eq!(object.encode_into(&mut buf), object.to_string());
            assert_eq!(user.encode_into(&mut buf), user.to_string());
        }
        let upper = ObjectId::parse("0123456789ABCDEF0123456789ABCDEF").unwrap();
        let mut buf = [0; UUID_TEXT_LEN];
        assert_eq!(
            upper.encode_into(&mut buf),
            "01234567-89ab-cdef-0123-456789abcdef"
        );
    }

    #[test]
    fn ordered_grant_ids_sort_by_time_then_sequence_as_text() {
        let at = |s| Timestamp::from_epoch_seconds(s);
        let id = |s, q, r| GrantId::ordered(at(s), q, [r; 16]).to_string();
        let first = id(1_800_000_000, 0, 0xff);
        assert_eq!(&first[14..15], "7", "version nibble");
        assert!(
            matches!(&first[19..20], "8" | "9" | "a" | "b"),
            "RFC variant: {first}"
        );
        assert_eq!(&first[..13], "01a3185c-5000", "the second, in milliseconds");
        // In text order: by second, then by sequence across every bit of it, whatever the
        // random bytes.
        let mut made = vec![
            id(1_800_000_000, 0, 0xff),
            id(1_800_000_000, 1, 0x00),
            id(1_800_000_000, 63, 0x00),
            id(1_800_000_000, 64, 0x00),
            id(1_800_000_000, 0x3fff, 0x00),
            id(1_800_000_000, 0x4000, 0x00),
            id(1_800_000_000, 0x000f_ffff, 0x00),
            id(1_800_000_000, 0x0010_0000, 0x00),
            id(1_800_000_000, 0x0fff_ffff, 0x00),
            id(1_800_000_000, u32::MAX, 0x00),
            id(1_800_000_001, 0, 0x00),
        ];
        let minted = made.clone();
        made.sort();
        assert_eq!(made, minted);
        made.dedup();
        assert_eq!(made.len(), minted.len());
        // The random bits still tell apart two ids of the same second and sequence.
        assert_ne!(id(1_800_000_000, 7, 1), id(1_800_000_000, 7, 2));
        // Round trip, and no panic at the edges of the clock.
        let g = GrantId::ordered(at(1_800_000_000), 5, [9; 16]);
        assert_eq!(GrantId::parse(&g.to_string()), Ok(g));
        let _ = GrantId::ordered(at(-1), 0, [0; 16]);
        let _ = GrantId::ordered(at(i64::MAX), u32::MAX, [0; 16]);
    }

    #[test]
    fn generated_ids_are_version_5_and_round_trip() {
        let ns = OrgNamespace::from_random(NS);
        let id = ObjectId::generate(&ns, [1; 16]);
        let text = id.to_string();
        assert_eq!(text.len(), 36);
        assert_eq!(&text[14..15], "5", "version nibble");
        assert_eq!(ObjectId::parse(&text), Ok(id));
        assert_eq!(ObjectId::parse(&text.replace('-', "")), Ok(id));
        assert_eq!(ObjectId::parse(&text.to_uppercase()), Ok(id));
        assert_ne!(id, ObjectId::generate(&ns, [2; 16]));
        assert_eq!(text, text.to_lowercase(), "output is lowercase");
    }

    #[test]
    fn malformed_uuids_are_refused() {
        for bad in [
            "",
            "0",
            "xyz",
            "0123456789abcdef0123456789abcde",
            "0123456789abcdef0123456789abcdef0",
            "0123456789abcdef0123456789abcdeg",
            "01234567-89abcdef0123456789abcde",
            "01234567-89ab-cdef-0123-456789abcdeg",
            "01234567-89ab-cdef-0123-456789abcde-",
            "{01234567-89ab-cdef-0123-456789abcdef}",
            "01234567-89abc-def0-123-456789abcdef",
            "0123456789ab-cdef-0123-456789abcdef-",
            "urn:uuid:01234567-89ab-cdef-0123-456789abcdef",
            "01234567-89ab-cdef-0123-456789abcdé",
        ] {
            assert!(ObjectId::parse(bad).is_err(), "{bad:?} must be refused");
        }
    }

    #[test]
    fn every_form_of_every_byte_parses_to_what_it_spells() {
        // Each of the 256 byte values in every position, in the dashed and the simple form,
        // lower and upper case, against the uuid crate's own formatting.
        for at in 0..16 {
            for value in 0..=255u8 {
                let mut bytes = [0x5a; 16];
                bytes[at] = value;
                let id = Uuid::from_bytes(bytes);
                let dashed = id.hyphenated().to_string();
                let simple = id.simple().to_string();
                for text in [
                    dashed.clone(),
                    dashed.to_uppercase(),
                    simple.clone(),
                    simple.to_uppercase(),
                ] {
                    assert_eq!(parse_uuid(&text, "id"), Ok(id), "{text}");
                }
            }
        }
        // A dash in any other place, or any non-digit in a digit's place, is refused.
        let good = "01234567-89ab-cdef-0123-456789abcdef";
        for at in 0..good.len() {
            for bad in [b'g', b'G', b'-', b' ', b'/', b':', b'@', b'`', 0] {
                let mut b = good.as_bytes().to_vec();
                if b[at] == bad {
                    continue;
                }
                b[at] = bad;
                let text = String::from_utf8_lossy(&b);
                assert!(parse_uuid(&text, "id").is_err(), "{text:?}");
            }
        }
    }

    #[test]
    fn zero_is_a_path_literal() {
        assert_eq!(IdOrZero::<UserId>::parse("0"), Ok(IdOrZero::Zero));
        let u = UserId::parse("0123456789abcdef0123456789abcdef").unwrap();
        assert_eq!(IdOrZero::parse(&u.to_string()), Ok(IdOrZero::Id(u)));
        assert!(IdOrZero::<UserId>::parse("00").is_err());
    }

    #[test]
    fn error_names_the_field() {
        assert_eq!(UserId::parse("x").unwrap_err().field(), "user_id");
    }
}
