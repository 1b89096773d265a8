//! The real clock and random source, handed to the core as ports.

use std::time::{SystemTime, UNIX_EPOCH};

use medialib_domain::Timestamp;
use medialib_ports::{Clock, RandomSource};
use rand::TryRngCore;
use rand::rngs::OsRng;

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        Timestamp::from_epoch_seconds(secs)
    }
}

/// The operating system's CSPRNG.
#[derive(Debug, Clone, Copy, Default)]
pub struct OsRandom;

impl RandomSource for OsRandom {
    fn fill(&self, buf: &mut [u8]) {
        if let Err(error) = OsRng.try_fill_bytes(buf) {
            // Without randomness no token or id can be minted safely: stop the process
            // rather than hand out predictable values.
            tracing::error!(%error, "the operating system's random source failed");
            std::process::abort();
        }
    }
}
