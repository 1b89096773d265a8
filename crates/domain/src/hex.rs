//! Lowercase hexadecimal text of bytes: digests as stored, secrets and ids made of random bytes,
//! the SHA-256 of an upload. One table lookup a digit, where `format!("{b:02x}")` went through
//! `core::fmt` for every byte (a token digest's 32 of them on every bearer and session read).

/// The sixteen digits, in order.
const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// `bytes` as lowercase hex, two digits a byte, most significant first.
pub fn lower(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().saturating_mul(2));
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_is_what_the_formatter_writes() {
        let all: Vec<u8> = (0..=u8::MAX).collect();
        let expected: String = all.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(lower(&all), expected);
        assert_eq!(lower(&[]), "");
        assert_eq!(lower(&[0x0f, 0xa0]), "0fa0");
    }
}
