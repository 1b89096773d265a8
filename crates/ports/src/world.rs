//! The clock and the random source: the only ways time and randomness reach the core.

use medialib_domain::Timestamp;

/// Tells the time.
pub trait Clock: Send + Sync {
    /// Now, in epoch seconds.
    fn now(&self) -> Timestamp;
}

/// A clock that tells the time it is set to: for tests of use cases and adapters (the
/// one test clock of the workspace). It reads no real clock.
#[derive(Debug)]
pub struct ManualClock(std::sync::atomic::AtomicI64);

impl ManualClock {
    /// A clock showing `epoch_seconds`.
    pub fn at(epoch_seconds: i64) -> Self {
        Self(std::sync::atomic::AtomicI64::new(epoch_seconds))
    }

    /// Sets the time.
    pub fn set(&self, epoch_seconds: i64) {
        self.0
            .store(epoch_seconds, std::sync::atomic::Ordering::SeqCst);
    }

    /// Moves the time by `seconds` (negative: back).
    pub fn advance(&self, seconds: i64) {
        self.0
            .fetch_add(seconds, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_epoch_seconds(self.0.load(std::sync::atomic::Ordering::SeqCst))
    }
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
    /// `n` random bytes (at most 16) as lower-case hex: names that must not collide, not
    /// secrets.
    fn hex(&self, n: usize) -> String;
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
    fn hex(&self, n: usize) -> String {
        let bytes = self.bytes16();
        medialib_domain::hex::lower(&bytes[..n.min(bytes.len())])
    }
}
