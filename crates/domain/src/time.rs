//! Time as a value: the core never reads a clock, it is handed a [`Timestamp`].

use std::fmt;

/// A point in time, in whole seconds since the Unix epoch (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    /// Wraps epoch seconds.
    pub const fn from_epoch_seconds(secs: i64) -> Self {
        Self(secs)
    }

    /// Epoch seconds.
    pub const fn epoch_seconds(self) -> i64 {
        self.0
    }

    /// This instant plus a lifetime (saturating).
    pub const fn plus(self, d: Lifetime) -> Self {
        Self(self.0.saturating_add(d.0))
    }

    /// This instant plus `d`, rounded up to a whole second (saturating).
    pub fn plus_secs(self, d: std::time::Duration) -> Self {
        let secs = d.as_secs().saturating_add(u64::from(d.subsec_nanos() > 0));
        Self(
            self.0
                .saturating_add(i64::try_from(secs).unwrap_or(i64::MAX)),
        )
    }

    /// Seconds from `self` until `later`, zero when `later` is not after `self`.
    pub fn seconds_until(self, later: Timestamp) -> i64 {
        later.0.saturating_sub(self.0).max(0)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A positive span of seconds (token and code lifetimes, durations).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Lifetime(i64);

/// A lifetime of zero or less seconds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a lifetime must be a positive number of seconds")]
pub struct InvalidLifetime;

impl Lifetime {
    /// A lifetime of `secs` seconds; must be positive.
    pub fn from_seconds(secs: i64) -> Result<Self, InvalidLifetime> {
        if secs > 0 {
            Ok(Self(secs))
        } else {
            Err(InvalidLifetime)
        }
    }

    /// A lifetime that is positive by construction.
    pub const fn from_nonzero(secs: std::num::NonZeroU32) -> Self {
        Self(secs.get() as i64)
    }

    /// Seconds.
    pub const fn seconds(self) -> i64 {
        self.0
    }
}

/// The catalog's `ts` filter: a positive epoch timestamp (`0`, negative or non-integer is refused).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Since(Timestamp);

/// Why a `ts` value is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ts must be a positive integer epoch timestamp")]
pub struct InvalidSince;

impl Since {
    /// Parses the query value.
    pub fn parse(input: &str) -> Result<Self, InvalidSince> {
        let secs: i64 = input.parse().map_err(|_| InvalidSince)?;
        if secs > 0 {
            Ok(Self(Timestamp(secs)))
        } else {
            Err(InvalidSince)
        }
    }

    /// The instant; members changed at or after it are returned.
    pub fn timestamp(self) -> Timestamp {
        self.0
    }
}

/// A media duration in whole seconds (zero allowed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DurationSecs(u32);

/// Why a duration is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("duration must be a whole number of seconds between 0 and 4294967295")]
pub struct InvalidDuration;

impl DurationSecs {
    /// Parses form input.
    pub fn parse(input: &str) -> Result<Self, InvalidDuration> {
        input.trim().parse().map(Self).map_err(|_| InvalidDuration)
    }

    /// From a stored value.
    pub fn from_seconds(secs: i64) -> Result<Self, InvalidDuration> {
        u32::try_from(secs).map(Self).map_err(|_| InvalidDuration)
    }

    /// Seconds.
    pub const fn seconds(self) -> u32 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_refuses_zero_negative_and_non_integers() {
        for bad in ["0", "-1", "1.5", "", "abc", "99999999999999999999"] {
            assert_eq!(Since::parse(bad), Err(InvalidSince), "{bad:?}");
        }
        assert_eq!(Since::parse("17").unwrap().timestamp(), Timestamp(17));
    }

    #[test]
    fn lifetimes_are_positive() {
        assert!(Lifetime::from_seconds(0).is_err());
        assert!(Lifetime::from_seconds(-5).is_err());
        let l = Lifetime::from_seconds(60).unwrap();
        assert_eq!(Timestamp(100).plus(l), Timestamp(160));
        assert_eq!(Timestamp(i64::MAX).plus(l), Timestamp(i64::MAX));
        assert_eq!(Timestamp(100).seconds_until(Timestamp(90)), 0);
    }

    #[test]
    fn durations() {
        assert_eq!(DurationSecs::parse(" 42 ").unwrap().seconds(), 42);
        assert!(DurationSecs::parse("-1").is_err());
        assert!(DurationSecs::parse("1e3").is_err());
        assert!(DurationSecs::from_seconds(-1).is_err());
    }
}
