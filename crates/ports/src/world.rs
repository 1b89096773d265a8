//! The clock and the random source: the only ways time and randomness reach the core.

use medialib_domain::Timestamp;

/// Tells the time.
pub trait Clock: Send + Sync {
    /// Now, in epoch seconds.
    fn now(&self) -> Timestamp;
}

/// A cryptographically secure random source.
pub trait RandomSource: Send + Sync {
    /// Fills `buf` with random bytes.
    fn fill(&self, buf: &mut [u8]);
}

/// Convenience draws on any [`RandomSource`].
pub trait RandomExt {
    /// 16 random bytes (ids, shortcodes).
    fn bytes16(&self) -> [u8; 16];
    /// 32 random bytes (tokens, codes, secrets).
    fn bytes32(&self) -> [u8; 32];
}

impl<R: RandomSource + ?Sized> RandomExt for R {
    fn bytes16(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        self.fill(&mut b);
        b
    }
    fn bytes32(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        self.fill(&mut b);
        b
    }
}
