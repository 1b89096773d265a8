//! Byte ranges: the HTTP `Range` header (RFC 9110 §14) resolved against a stored size.

/// A non-empty span of bytes `[start, end)` of an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteSpan {
    start: u64,
    end: u64,
}

impl ByteSpan {
    /// The bytes `[start, start + len)`; `None` when `len` is zero or the end overflows.
    pub fn new(start: u64, len: u64) -> Option<Self> {
        let end = start.checked_add(len)?;
        (len > 0).then_some(Self { start, end })
    }

    /// The first byte.
    pub fn start(self) -> u64 {
        self.start
    }

    /// One past the last byte.
    pub fn end(self) -> u64 {
        self.end
    }

    /// The number of bytes.
    pub fn len(self) -> u64 {
        self.end - self.start
    }

    /// Never true: a span holds at least one byte.
    pub fn is_empty(self) -> bool {
        false
    }

    /// The `Content-Range` value for this span of an object of `size` bytes.
    pub fn content_range(self, size: u64) -> String {
        format!("bytes {}-{}/{size}", self.start, self.end - 1)
    }
}

/// What a request asks of an object of known size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeAnswer {
    /// The whole object (no `Range`, one we ignore, or one covering everything): 200.
    Whole,
    /// One span: 206 with `Content-Range`.
    Part(ByteSpan),
    /// Nothing of the object satisfies the range: 416 with `Content-Range: bytes */size`.
    Unsatisfiable,
}

/// Resolves a `Range` header value against an object of `size` bytes.
///
/// One `bytes=` range is served as asked (`a-b`, `a-`, `-n`). A header we cannot parse, of
/// another unit, or naming several ranges is ignored, as RFC 9110 §14.2 allows, and the whole
/// object is sent: a client always gets its bytes.
pub fn resolve_range(header: Option<&str>, size: u64) -> RangeAnswer {
    let Some(spec) = header.and_then(|h| h.trim().strip_prefix("bytes=")) else {
        return RangeAnswer::Whole;
    };
    if spec.contains(',') {
        return RangeAnswer::Whole;
    }
    let Some((first, last)) = spec.trim().split_once('-') else {
        return RangeAnswer::Whole;
    };
    let (first, last) = (first.trim(), last.trim());
    let number = |s: &str| -> Option<u64> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            None
        } else {
            s.parse().ok()
        }
    };
    let span = match (first.is_empty(), last.is_empty()) {
        // `-n`: the last n bytes.
        (true, false) => {
            let Some(n) = number(last) else {
                return RangeAnswer::Whole;
            };
            if n == 0 || size == 0 {
                return RangeAnswer::Unsatisfiable;
            }
            let n = n.min(size);
            ByteSpan::new(size - n, n)
        }
        // `a-` or `a-b`.
        (false, _) => {
            let Some(a) = number(first) else {
                return RangeAnswer::Whole;
            };
            let b = if last.is_empty() {
                u64::MAX
            } else {
                match number(last) {
                    Some(b) if b >= a => b,
                    _ => return RangeAnswer::Whole,
                }
            };
            if a >= size {
                return RangeAnswer::Unsatisfiable;
            }
            let end = b.min(size - 1);
            ByteSpan::new(a, end - a + 1)
        }
        (true, true) => return RangeAnswer::Whole,
    };
    match span {
        Some(s) if s.start == 0 && s.end == size => RangeAnswer::Whole,
        Some(s) => RangeAnswer::Part(s),
        None => RangeAnswer::Unsatisfiable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(start: u64, len: u64) -> RangeAnswer {
        ByteSpan::new(start, len).map_or(RangeAnswer::Unsatisfiable, RangeAnswer::Part)
    }

    #[test]
    fn single_ranges_resolve_against_the_size() {
        assert_eq!(resolve_range(Some("bytes=0-99"), 1000), part(0, 100));
        assert_eq!(resolve_range(Some("bytes=900-"), 1000), part(900, 100));
        assert_eq!(resolve_range(Some("bytes=900-5000"), 1000), part(900, 100));
        assert_eq!(resolve_range(Some("bytes=-100"), 1000), part(900, 100));
        assert_eq!(resolve_range(Some("bytes=-5000"), 1000), RangeAnswer::Whole);
        assert_eq!(resolve_range(Some("bytes=0-"), 1000), RangeAnswer::Whole);
        assert_eq!(resolve_range(Some("bytes=999-999"), 1000), part(999, 1));
    }

    #[test]
    fn past_the_end_is_unsatisfiable() {
        assert_eq!(
            resolve_range(Some("bytes=1000-"), 1000),
            RangeAnswer::Unsatisfiable
        );
        assert_eq!(
            resolve_range(Some("bytes=-0"), 1000),
            RangeAnswer::Unsatisfiable
        );
        assert_eq!(
            resolve_range(Some("bytes=0-0"), 0),
            RangeAnswer::Unsatisfiable
        );
    }

    #[test]
    fn what_we_do_not_serve_is_ignored_not_refused() {
        for ignored in [
            None,
            Some("items=0-1"),
            Some("bytes=0-1,5-9"),
            Some("bytes=5-1"),
            Some("bytes=a-b"),
            Some("bytes=-"),
            Some("bytes=+1-2"),
            Some("bytes=99999999999999999999999-"),
        ] {
            assert_eq!(
                resolve_range(ignored, 1000),
                RangeAnswer::Whole,
                "{ignored:?}"
            );
        }
    }

    #[test]
    fn content_range_names_the_last_byte() {
        let Some(span) = ByteSpan::new(10, 5) else {
            unreachable!("a five-byte span")
        };
        assert_eq!(span.content_range(100), "bytes 10-14/100");
        assert_eq!(ByteSpan::new(u64::MAX, 2), None);
        assert_eq!(ByteSpan::new(3, 0), None);
    }
}
