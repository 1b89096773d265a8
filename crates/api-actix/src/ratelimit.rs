//! Request rate limits per key (client id, remote address): a fixed window of one minute
//! per key, kept in this process's memory (DECISIONS.md §5; RFC 6819 §5.1.4.2.3).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::ApiError;

/// Requests allowed per minute, per kind of key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimitConfig {
    /// Token, revoke and introspect calls per client id and per remote address.
    pub token_per_minute: u32,
    /// Sign-in form submissions per remote address.
    pub login_per_minute: u32,
}

impl Default for RateLimitConfig {
    fn default() -> Self {
        Self {
            token_per_minute: 300,
            login_per_minute: 30,
        }
    }
}

/// One limit: at most `limit` hits per key in each window.
#[derive(Debug)]
pub struct RateLimiter {
    limit: u32,
    window: Duration,
    hits: Mutex<HashMap<String, (Instant, u32)>>,
}

impl RateLimiter {
    /// Keys remembered before expired windows are swept.
    const SWEEP_AT: usize = 10_000;

    /// At most `limit` hits per key per `window` (0 turns the limit off).
    pub fn new(limit: u32, window: Duration) -> Self {
        Self {
            limit,
            window,
            hits: Mutex::new(HashMap::new()),
        }
    }

    /// Counts a hit for `key`: `Err(429)` with the seconds until its window ends when over.
    pub fn hit(&self, key: &str) -> Result<(), ApiError> {
        if self.limit == 0 {
            return Ok(());
        }
        let now = Instant::now();
        let mut hits = self.hits.lock().unwrap_or_else(|p| p.into_inner());
        if hits.len() >= Self::SWEEP_AT {
            hits.retain(|_, (start, _)| now.duration_since(*start) < self.window);
        }
        let entry = hits.entry(key.to_owned()).or_insert((now, 0));
        if now.duration_since(entry.0) >= self.window {
            *entry = (now, 0);
        }
        if entry.1 >= self.limit {
            let left = self.window.saturating_sub(now.duration_since(entry.0));
            let retry_after = u32::try_from(left.as_secs()).unwrap_or(u32::MAX).max(1);
            return Err(ApiError::TooManyRequests { retry_after });
        }
        entry.1 += 1;
        Ok(())
    }
}

/// The limiters of one server.
#[derive(Debug)]
pub struct RateLimits {
    /// Token-endpoint calls per client id.
    pub token_per_client: RateLimiter,
    /// Token-endpoint calls per remote address.
    pub token_per_addr: RateLimiter,
    /// Sign-in submissions per remote address.
    pub login_per_addr: RateLimiter,
}

impl RateLimits {
    /// Limiters with one-minute windows.
    pub fn new(config: RateLimitConfig) -> Self {
        let minute = Duration::from_secs(60);
        Self {
            token_per_client: RateLimiter::new(config.token_per_minute, minute),
            token_per_addr: RateLimiter::new(config.token_per_minute, minute),
            login_per_addr: RateLimiter::new(config.login_per_minute, minute),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_over_its_limit_is_refused_until_the_window_ends() {
        let l = RateLimiter::new(2, Duration::from_secs(60));
        assert!(l.hit("a").is_ok());
        assert!(l.hit("a").is_ok());
        match l.hit("a") {
            Err(ApiError::TooManyRequests { retry_after }) => {
                assert!((1..=60).contains(&retry_after))
            }
            other => panic!("expected 429, got {other:?}"),
        }
        assert!(l.hit("b").is_ok(), "keys are independent");
        let short = RateLimiter::new(1, Duration::from_millis(20));
        assert!(short.hit("a").is_ok());
        assert!(short.hit("a").is_err());
        std::thread::sleep(Duration::from_millis(30));
        assert!(short.hit("a").is_ok(), "a new window starts");
    }

    #[test]
    fn zero_turns_the_limit_off() {
        let l = RateLimiter::new(0, Duration::from_secs(60));
        for _ in 0..1000 {
            assert!(l.hit("a").is_ok());
        }
    }
}
