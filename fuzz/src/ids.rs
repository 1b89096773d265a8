//! Target `uuid`: ids in paths and forms (`ObjectId`, `UserId`, `GrantId`, `IdOrZero`).
//!
//! Oracle: the `uuid` crate, restricted to the two spellings the API accepts (32 hex
//! digits, or the canonical 8-4-4-4-12 with dashes). The domain parses UUIDs itself.

use medialib_domain::{GrantId, IdOrZero, ObjectId, UserId};
use uuid::Uuid;

/// Checks one input.
pub fn check(data: &[u8]) {
    if data.len() >= 16 {
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&data[..16]);
        formats_round_trip(Uuid::from_bytes(bytes));
    }
    if let Ok(text) = std::str::from_utf8(data) {
        parses_like_the_oracle(text);
    }
}

/// Every spelling of any 16 bytes that the API documents parses back to those bytes.
fn formats_round_trip(u: Uuid) {
    let hyphenated = u.hyphenated().to_string();
    for spelling in [
        hyphenated.clone(),
        hyphenated.to_ascii_uppercase(),
        u.simple().to_string(),
        u.simple().to_string().to_ascii_uppercase(),
    ] {
        let Ok(id) = ObjectId::parse(&spelling) else {
            panic!("{spelling:?} is a UUID and must parse");
        };
        assert_eq!(id.as_bytes(), u.as_bytes(), "{spelling:?}");
        assert_eq!(id.to_string(), hyphenated, "output is canonical lowercase");
    }
}

fn parses_like_the_oracle(text: &str) {
    let oracle = Uuid::try_parse(text)
        .ok()
        .filter(|_| matches!(text.len(), 32 | 36));
    let parsed = ObjectId::parse(text);
    match (&parsed, oracle) {
        (Ok(id), Some(u)) => {
            assert_eq!(id.as_bytes(), u.as_bytes(), "{text:?}");
            let canonical = id.to_string();
            assert_eq!(canonical, u.hyphenated().to_string(), "{text:?}");
            assert_eq!(ObjectId::parse(&canonical).as_ref(), Ok(id), "reparse");
            assert_eq!(
                canonical.replace('-', ""),
                text.replace('-', "").to_ascii_lowercase(),
                "the canonical form spells the same digits"
            );
            assert_eq!(format!("{id:?}"), format!("ObjectId({canonical})"));
        }
        (Err(e), None) => assert_eq!(e.field(), "object_uuid"),
        (Ok(_), None) => panic!("{text:?} accepted but is not a UUID spelling the API allows"),
        (Err(_), Some(_)) => panic!("{text:?} is a UUID spelling the API allows but was refused"),
    }
    // The other id types share the rule and name their own field.
    let user = UserId::parse(text);
    let grant = GrantId::parse(text);
    assert_eq!(user.is_ok(), parsed.is_ok());
    assert_eq!(grant.is_ok(), parsed.is_ok());
    if let Err(e) = &user {
        assert_eq!(e.field(), "user_id");
    }
    if let Ok(id) = &parsed {
        assert_eq!(user.map(|u| *u.as_bytes()), Ok(*id.as_bytes()));
    }
    // `0` is the path literal; everything else is an id or nothing.
    match IdOrZero::<ObjectId>::parse(text) {
        Ok(IdOrZero::Zero) => assert_eq!(text, "0"),
        Ok(IdOrZero::Id(id)) => assert_eq!(Ok(id), parsed),
        Err(_) => assert!(text != "0" && parsed.is_err()),
    }
}
