//! Target `text_values`: every scalar value the API reads from a form, query or path,
//! through its domain constructor. Each is checked against its documented rule, written
//! here a second time, and accepted text must come back verbatim (SQL metacharacters,
//! quotes and multi-byte UTF-8 are data, never altered).

use medialib_domain::oauth::{
    ClientId, ClientName, CodeChallenge, CodeVerifier, OAuthState, ScopeSet,
};
use medialib_domain::object::parse_bool;
use medialib_domain::{
    Description, DurationSecs, ObjectType, PermissionLevel, PersonName, Secret, ShortCode, Since,
    Title, TokenDigest, TokenKind, UniqueId, csrf_matches, csrf_token,
};

/// Checks one input (every parser sees every input: they are cheap).
pub fn check(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let chars = s.chars().count();
    let no_control = !s.chars().any(char::is_control);

    // PostgreSQL cannot store U+0000, so stored free text refuses it on every backend.
    let no_nul = !s.contains('\0');
    let title = Title::parse(s);
    assert_eq!(
        title.is_ok(),
        chars <= 255 && no_nul,
        "title of {chars} characters"
    );
    if let Ok(t) = title {
        assert_eq!(t.as_str(), s);
    }
    let description = Description::parse(s);
    assert_eq!(description.is_ok(), chars <= 65_536 && no_nul);
    if let Ok(d) = description {
        assert_eq!(d.as_str(), s);
    }
    let unique = UniqueId::parse(s);
    assert_eq!(unique.is_ok(), (1..=255).contains(&chars) && no_control);
    if let Ok(u) = unique {
        assert_eq!(u.as_str(), s);
    }
    let name = PersonName::parse(s, "firstName");
    assert_eq!(name.is_ok(), chars <= 255 && no_control);
    if let Err(e) = name {
        assert!(e.to_string().starts_with("firstName "), "{e}");
    }

    let alnum10 = s.len() == 10 && s.bytes().all(|b| b.is_ascii_alphanumeric());
    match ShortCode::parse(s) {
        Ok(code) => {
            assert!(alnum10);
            assert_eq!(code.as_str(), s);
        }
        // Path traversal and the like never become a shortcode.
        Err(_) => assert!(!alnum10),
    }

    let known_type = ["catalog", "video", "audio", "image", "file"].contains(&s);
    match ObjectType::parse(s) {
        Ok(t) => assert_eq!(t.as_str(), s),
        Err(_) => assert!(!known_type),
    }
    match PermissionLevel::parse(s) {
        Ok(l) => assert_eq!(l.as_str(), s),
        Err(_) => assert!(!["none", "view", "admin"].contains(&s)),
    }
    match parse_bool(s, "public") {
        Ok(b) => assert!(s.eq_ignore_ascii_case(if b { "true" } else { "false" })),
        Err(e) => {
            assert!(!s.eq_ignore_ascii_case("true") && !s.eq_ignore_ascii_case("false"));
            assert_eq!(e.to_string(), "public must be true or false");
        }
    }

    numbers(s);
    oauth_values(s, chars, no_control);
}

/// `duration` (whole seconds, u32) and the catalog's `ts` filter (positive epoch seconds).
fn numbers(s: &str) {
    // The oracle: optional `+`, then decimal digits; the value must fit.
    let decimal = |t: &str| -> Option<u128> {
        let digits = t.strip_prefix('+').unwrap_or(t);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        // Leading zeros do not change the value; past 20 digits it is too big for both.
        let significant = digits.trim_start_matches('0');
        if significant.len() > 20 {
            return Some(u128::MAX);
        }
        Some(
            significant
                .bytes()
                .fold(0, |n, b| n * 10 + u128::from(b - b'0')),
        )
    };
    let expected = decimal(s.trim()).filter(|v| *v <= u128::from(u32::MAX));
    match DurationSecs::parse(s) {
        Ok(d) => {
            assert_eq!(Some(u128::from(d.seconds())), expected, "duration {s:?}");
            let again = DurationSecs::parse(&d.seconds().to_string());
            assert_eq!(again, Ok(d), "canonical duration reparses");
        }
        Err(_) => assert_eq!(expected, None, "duration {s:?} refused"),
    }
    let positive = decimal(s).filter(|v| (1..=i64::MAX as u128).contains(v));
    match Since::parse(s) {
        Ok(since) => {
            let secs = since.timestamp().epoch_seconds();
            assert_eq!(Some(secs as u128), positive, "ts {s:?}");
        }
        Err(_) => assert_eq!(positive, None, "ts {s:?} refused"),
    }
}

fn oauth_values(s: &str, chars: usize, no_control: bool) {
    let unreserved = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~');

    let scope_ok = s.split(' ').all(|w| w == "read" || w == "write");
    match ScopeSet::parse(s) {
        Ok(set) => {
            assert!(scope_ok);
            assert_eq!(
                ScopeSet::parse(&set.to_string()),
                Ok(set),
                "scope prints back"
            );
        }
        Err(_) => assert!(!scope_ok),
    }
    let vschar = (1..=512).contains(&s.len()) && s.bytes().all(|b| (0x20..=0x7e).contains(&b));
    match OAuthState::parse(s) {
        Some(state) => {
            assert!(vschar);
            assert_eq!(state.as_str(), s);
        }
        None => assert!(!vschar),
    }
    let id_ok = (1..=128).contains(&s.len()) && s.bytes().all(unreserved);
    assert_eq!(ClientId::parse(s).is_ok(), id_ok);
    assert_eq!(
        ClientName::parse(s).is_ok(),
        (1..=200).contains(&chars) && no_control
    );

    let verifier_ok = (43..=128).contains(&s.len()) && s.bytes().all(unreserved);
    match CodeVerifier::parse(s) {
        Ok(v) => {
            assert!(verifier_ok);
            let challenge = CodeChallenge::of(&v);
            let Ok(stored) = CodeChallenge::parse(challenge.as_str(), Some("S256")) else {
                panic!("a computed challenge must parse");
            };
            assert!(stored.verify(&v), "a verifier answers its own challenge");
        }
        Err(_) => assert!(!verifier_ok),
    }
    let challenge_ok = s.len() == 43
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    assert_eq!(CodeChallenge::parse_stored(s).is_ok(), challenge_ok);
    assert!(
        CodeChallenge::parse(s, Some("plain")).is_err(),
        "plain is refused"
    );
    assert!(
        CodeChallenge::parse(s, None).is_err(),
        "no method means plain"
    );

    let hex_ok = s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    match TokenDigest::from_hex(s) {
        Ok(d) => {
            assert!(hex_ok);
            assert_eq!(d.to_hex(), s);
        }
        Err(_) => assert!(!hex_ok),
    }
    for kind in [TokenKind::Access, TokenKind::Refresh, TokenKind::Code] {
        let well_formed = s.strip_prefix(kind.prefix()).is_some_and(|body| {
            body.len() == 43
                && body
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
        let digest = kind.digest_presented(s);
        assert_eq!(digest.is_some(), well_formed, "{kind:?} {s:?}");
        if let Some(d) = digest {
            assert_eq!(d, TokenDigest::of(&Secret::new(s)));
        }
    }
    // A CSRF token matches its own cookie and nothing else short of a hash collision.
    let cookie = Secret::new("mlb_fixed-cookie");
    let token = csrf_token(&cookie);
    assert_eq!(csrf_matches(&cookie, s), s == token);
}
