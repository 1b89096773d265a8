//! The `application/x-www-form-urlencoded` syntax (query strings, form bodies, and the
//! client id and secret inside HTTP Basic, RFC 6749 §2.3.1), decoded strictly: a `%`
//! must be followed by two hexadecimal digits and the result must be UTF-8.

/// Most fields a form may carry.
pub const MAX_FIELDS: usize = 1000;

/// Why a form or one of its components is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidForm {
    /// A `%` not followed by two hexadecimal digits.
    #[error("malformed percent-encoding")]
    BadEscape,
    /// The decoded bytes are not UTF-8.
    #[error("input must be UTF-8")]
    NotUtf8,
    /// More than [`MAX_FIELDS`] fields.
    #[error("at most {max} form fields are accepted")]
    TooManyFields {
        /// Limit.
        max: usize,
    },
}

fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decodes one component: `+` is a space, `%XY` the byte `0xXY`, anything else itself.
pub fn decode_component(input: &[u8]) -> Result<String, InvalidForm> {
    let mut out = Vec::with_capacity(input.len());
    let mut bytes = input.iter();
    while let Some(&b) = bytes.next() {
        match b {
            b'+' => out.push(b' '),
            b'%' => {
                let hi = bytes.next().copied().and_then(hex_digit);
                let lo = bytes.next().copied().and_then(hex_digit);
                match (hi, lo) {
                    (Some(hi), Some(lo)) => out.push((hi << 4) | lo),
                    _ => return Err(InvalidForm::BadEscape),
                }
            }
            b => out.push(b),
        }
    }
    String::from_utf8(out).map_err(|_| InvalidForm::NotUtf8)
}

/// Encodes one component so that [`decode_component`] gives it back: RFC 3986 unreserved
/// characters stay, a space becomes `+`, every other byte `%XY`.
pub fn encode_component(value: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        match b {
            b' ' => out.push('+'),
            b if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') => {
                out.push(char::from(b));
            }
            b => {
                out.push('%');
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 15)]));
            }
        }
    }
    out
}

/// Splits `a=1&b=2` into decoded `(name, value)` pairs in arrival order. Empty pieces
/// (`a=1&&b=2`) are skipped; a piece without `=` is a name with an empty value.
pub fn parse_urlencoded(input: &[u8]) -> Result<Vec<(String, String)>, InvalidForm> {
    let mut fields = Vec::new();
    for piece in input.split(|b| *b == b'&').filter(|p| !p.is_empty()) {
        if fields.len() >= MAX_FIELDS {
            return Err(InvalidForm::TooManyFields { max: MAX_FIELDS });
        }
        let (name, value) = match piece.iter().position(|b| *b == b'=') {
            Some(i) => (&piece[..i], &piece[i + 1..]),
            None => (piece, &b""[..]),
        };
        fields.push((decode_component(name)?, decode_component(value)?));
    }
    Ok(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_decode_strictly() {
        assert_eq!(decode_component(b"a+b%C3%A9%2b").unwrap(), "a bé+");
        assert_eq!(decode_component(b"").unwrap(), "");
        for bad in [&b"%"[..], b"%4", b"%zz", b"%4g", b"x%"] {
            assert_eq!(
                decode_component(bad),
                Err(InvalidForm::BadEscape),
                "{bad:?}"
            );
        }
        assert_eq!(decode_component(b"%ff"), Err(InvalidForm::NotUtf8));
        assert_eq!(decode_component(&[0xc3]), Err(InvalidForm::NotUtf8));
    }

    /// Regression: `u8::from_str_radix` takes a leading `+`, so a decoder built on it
    /// read `%+A` as a newline. A sign is no hexadecimal digit.
    #[test]
    fn a_sign_is_not_a_hex_digit() {
        for bad in [&b"%+A"[..], b"%-1", b"%+0", b"% 1"] {
            assert_eq!(
                decode_component(bad),
                Err(InvalidForm::BadEscape),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn encoding_round_trips() {
        for s in ["", "a b", "100%", "é+&=?#", "line\r\nbreak", "ok-._~"] {
            let e = encode_component(s);
            assert!(e.bytes().all(|b| b.is_ascii_graphic()), "{e}");
            assert_eq!(decode_component(e.as_bytes()).unwrap(), s);
        }
    }

    #[test]
    fn forms_split_into_ordered_pairs() {
        let f = parse_urlencoded(b"title=a+b&&x&properties%5Bk%5D=v=w&title=2").unwrap();
        let pairs: Vec<(&str, &str)> = f.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            pairs,
            vec![
                ("title", "a b"),
                ("x", ""),
                ("properties[k]", "v=w"),
                ("title", "2")
            ]
        );
        assert_eq!(parse_urlencoded(b"").unwrap(), vec![]);
        assert_eq!(parse_urlencoded(b"a=%zz"), Err(InvalidForm::BadEscape));
        assert!(parse_urlencoded("a=1&".repeat(MAX_FIELDS).as_bytes()).is_ok());
        assert_eq!(
            parse_urlencoded("a=1&".repeat(MAX_FIELDS + 1).as_bytes()),
            Err(InvalidForm::TooManyFields { max: MAX_FIELDS })
        );
    }
}
