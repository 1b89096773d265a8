//! Keyset pagination of a catalog listing (catalog GET `limit` and `after`).
//!
//! A listing is ordered most recently modified first, ties by uuid (DECISIONS.md). A page is
//! the first `limit` members of that order strictly after a cursor: the `(modified, uuid)` of
//! the last member of the previous page. The next page starts after that position, whatever
//! happened to the members already listed, so a member is never listed twice in one walk.

use std::fmt;

use crate::ids::ObjectId;
use crate::time::Timestamp;

/// How many members one page holds: 1 to [`PageSize::MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PageSize(u16);

/// Why a `limit` value is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("limit must be an integer from 1 to 1000")]
pub struct InvalidPageSize;

impl PageSize {
    /// The largest page.
    pub const MAX: u16 = 1000;

    /// Parses the query value: decimal digits only, 1 to 1000.
    pub fn parse(input: &str) -> Result<Self, InvalidPageSize> {
        if input.is_empty() || input.len() > 4 || !input.bytes().all(|b| b.is_ascii_digit()) {
            return Err(InvalidPageSize);
        }
        match input.parse::<u16>() {
            Ok(n) if (1..=Self::MAX).contains(&n) => Ok(Self(n)),
            _ => Err(InvalidPageSize),
        }
    }

    /// The number of members.
    pub fn get(self) -> usize {
        usize::from(self.0)
    }
}

/// Where the previous page ended: the last member's modification time and uuid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PageCursor {
    modified: Timestamp,
    id: ObjectId,
}

/// Why an `after` value is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("after must be a cursor returned as next by the previous page")]
pub struct InvalidCursor;

impl PageCursor {
    /// The position of a listed member.
    pub fn at(modified: Timestamp, id: ObjectId) -> Self {
        Self { modified, id }
    }

    /// Parses the text [`Display`](fmt::Display) writes: `SECONDS.UUID`.
    pub fn parse(input: &str) -> Result<Self, InvalidCursor> {
        // 19 digits (i64), a dot, 36 characters of uuid: refuse anything longer unread.
        if input.len() > 19 + 1 + 36 {
            return Err(InvalidCursor);
        }
        let (secs, id) = input.split_once('.').ok_or(InvalidCursor)?;
        if secs.is_empty() || !secs.bytes().all(|b| b.is_ascii_digit()) {
            return Err(InvalidCursor);
        }
        let secs: i64 = secs.parse().map_err(|_| InvalidCursor)?;
        let id = ObjectId::parse(id).map_err(|_| InvalidCursor)?;
        Ok(Self::at(Timestamp::from_epoch_seconds(secs), id))
    }

    /// The last member's modification time.
    pub fn modified(self) -> Timestamp {
        self.modified
    }

    /// The last member's uuid.
    pub fn id(self) -> ObjectId {
        self.id
    }
}

/// `SECONDS.UUID`: digits, a dot, hexadecimal and dashes, safe in a query string as is.
impl fmt::Display for PageCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.modified.epoch_seconds(), self.id)
    }
}

/// Why a page request is refused: a cursor came without a page size. A cursor alone does not
/// say how many members to list, and listing everything after it is not a form the listing has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("after needs limit: pass the same limit with the cursor")]
pub struct CursorWithoutLimit;

/// One page of a listing: its size, and where the previous page ended (none: the first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PageRequest {
    size: PageSize,
    after: Option<PageCursor>,
}

impl PageRequest {
    /// A page of `size` members after `after` (the start when `None`).
    pub fn new(size: PageSize, after: Option<PageCursor>) -> Self {
        Self { size, after }
    }

    /// The request made of an optional size and cursor (`limit` and `after`): a page when the
    /// size is given, the whole listing (`None`) when neither is, and [`CursorWithoutLimit`]
    /// for a cursor without a size.
    pub fn from_parts(
        size: Option<PageSize>,
        after: Option<PageCursor>,
    ) -> Result<Option<Self>, CursorWithoutLimit> {
        match (size, after) {
            (Some(size), after) => Ok(Some(Self::new(size, after))),
            (None, None) => Ok(None),
            (None, Some(_)) => Err(CursorWithoutLimit),
        }
    }

    /// How many members the page holds at most.
    pub fn size(self) -> PageSize {
        self.size
    }

    /// Where the previous page ended.
    pub fn after(self) -> Option<PageCursor> {
        self.after
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UUID: &str = "0123456789ab5def8123456789abcdef";

    #[test]
    fn page_sizes_are_1_to_1000() {
        assert_eq!(PageSize::parse("1").unwrap().get(), 1);
        assert_eq!(PageSize::parse("1000").unwrap().get(), 1000);
        assert_eq!(PageSize::parse("0042").unwrap().get(), 42);
        for bad in [
            "",
            "0",
            "0000",
            "1001",
            "65536",
            "99999",
            "-1",
            "+1",
            " 1",
            "1 ",
            "1.0",
            "1e3",
            "abc",
            "١٢",
            "10000000000000000000000",
        ] {
            assert_eq!(PageSize::parse(bad), Err(InvalidPageSize), "{bad:?}");
        }
    }

    #[test]
    fn a_cursor_reads_back_what_it_writes() {
        let id = ObjectId::parse(UUID).unwrap();
        let c = PageCursor::at(Timestamp::from_epoch_seconds(1_732_300_000), id);
        let text = c.to_string();
        assert_eq!(text, "1732300000.01234567-89ab-5def-8123-456789abcdef");
        assert!(
            text.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-'),
            "no escaping needed in a query string"
        );
        assert_eq!(PageCursor::parse(&text), Ok(c));
        assert_eq!(c.modified().epoch_seconds(), 1_732_300_000);
        assert_eq!(c.id(), id);
        // The uuid in any of the forms ids accept.
        assert_eq!(PageCursor::parse(&format!("1732300000.{UUID}")), Ok(c));
        let max = PageCursor::at(Timestamp::from_epoch_seconds(i64::MAX), id);
        assert_eq!(PageCursor::parse(&max.to_string()), Ok(max));
    }

    #[test]
    fn hostile_cursors_are_refused() {
        let long = format!("1.{}", "a".repeat(10_000));
        let many_dots = format!("1.2.{UUID}");
        let overflow = format!("9223372036854775808.{UUID}");
        let negative = format!("-1.{UUID}");
        let plus = format!("+1.{UUID}");
        let spaced = format!(" 1.{UUID}");
        let trailing = format!("1.{UUID} ");
        let no_secs = format!(".{UUID}");
        let unicode = format!("١.{UUID}");
        let not_hex = format!("1.{}", "g".repeat(32));
        for bad in [
            "", ".", "1", "1.", UUID, &long, &many_dots, &overflow, &negative, &plus, &spaced,
            &trailing, &no_secs, &unicode, &not_hex, "1.0", "1\0.x", "%31.%32",
        ] {
            assert_eq!(PageCursor::parse(bad), Err(InvalidCursor), "{bad:?}");
        }
    }

    #[test]
    fn a_page_request_keeps_its_parts() {
        let size = PageSize::parse("10").unwrap();
        let first = PageRequest::new(size, None);
        assert_eq!((first.size(), first.after()), (size, None));
        let c = PageCursor::at(
            Timestamp::from_epoch_seconds(5),
            ObjectId::parse(UUID).unwrap(),
        );
        assert_eq!(PageRequest::new(size, Some(c)).after(), Some(c));
    }

    #[test]
    fn a_cursor_needs_a_size() {
        let size = PageSize::parse("10").unwrap();
        let c = PageCursor::at(
            Timestamp::from_epoch_seconds(5),
            ObjectId::parse(UUID).unwrap(),
        );
        assert_eq!(PageRequest::from_parts(None, None), Ok(None));
        assert_eq!(
            PageRequest::from_parts(Some(size), None),
            Ok(Some(PageRequest::new(size, None)))
        );
        assert_eq!(
            PageRequest::from_parts(Some(size), Some(c)),
            Ok(Some(PageRequest::new(size, Some(c))))
        );
        assert_eq!(
            PageRequest::from_parts(None, Some(c)),
            Err(CursorWithoutLimit)
        );
        assert_eq!(
            CursorWithoutLimit.to_string(),
            "after needs limit: pass the same limit with the cursor"
        );
    }
}
