//! Browser sessions after SSO sign-in, the CSRF tokens bound to them, and the
//! failed-login slowdown policy (DECISIONS.md §5).

use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use crate::secret::{Secret, b64url};
use crate::time::{Lifetime, Timestamp};
use crate::{DurationSecs, UserId};

/// A signed-in browser (stored server-side under the digest of its cookie value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrowserSession {
    /// Who signed in.
    pub user: UserId,
    /// When.
    pub created_at: Timestamp,
    /// Absolute end: the browser must sign in again after it.
    pub expires_at: Timestamp,
}

impl BrowserSession {
    /// A session that starts at `now` and lasts `lifetime`.
    pub fn start(user: UserId, now: Timestamp, lifetime: Lifetime) -> Self {
        Self {
            user,
            created_at: now,
            expires_at: now.plus(lifetime),
        }
    }

    /// Whether the session still signs the browser in at `now`.
    pub fn is_active(&self, now: Timestamp) -> bool {
        now < self.expires_at
    }
}

/// The CSRF token for forms served to the holder of `cookie` (a session or login-form cookie):
/// base64url(SHA-256("medialib-csrf-v1\0" ‖ cookie)). A cross-site page cannot read the
/// HttpOnly cookie, so it cannot compute the token.
pub fn csrf_token(cookie: &Secret) -> String {
    let mut h = Sha256::new();
    h.update(b"medialib-csrf-v1\0");
    h.update(cookie.expose().as_bytes());
    b64url(&h.finalize())
}

/// Whether `presented` is the CSRF token for `cookie` (constant time).
pub fn csrf_matches(cookie: &Secret, presented: &str) -> bool {
    let expected = csrf_token(cookie);
    expected.len() == presented.len() && bool::from(expected.as_bytes().ct_eq(presented.as_bytes()))
}

/// Failed sign-ins of one account: a few are free, then each further attempt must wait
/// twice as long as the last, up to a cap; the account is never locked for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailedLogins {
    count: u32,
    last: Timestamp,
}

impl FailedLogins {
    /// Failures allowed without any wait.
    pub const FREE_ATTEMPTS: u32 = 5;
    /// The longest wait, seconds.
    pub const MAX_WAIT: i64 = 300;
    /// Failures older than this (seconds) are forgotten.
    pub const FORGET_AFTER: i64 = 900;

    /// The first failure.
    pub fn first(now: Timestamp) -> Self {
        Self {
            count: 1,
            last: now,
        }
    }

    /// One more failure at `now` (a stale record starts over).
    #[must_use]
    pub fn record_failure(self, now: Timestamp) -> Self {
        if self.is_stale(now) {
            Self::first(now)
        } else {
            Self {
                count: self.count.saturating_add(1),
                last: now,
            }
        }
    }

    /// Failures counted so far.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Whether this record no longer matters at `now` (it can be dropped).
    pub fn is_stale(&self, now: Timestamp) -> bool {
        self.last.seconds_until(now) >= Self::FORGET_AFTER
    }

    /// How long the account must wait before the next attempt, if at all.
    pub fn retry_after(&self, now: Timestamp) -> Option<DurationSecs> {
        if self.count < Self::FREE_ATTEMPTS || self.is_stale(now) {
            return None;
        }
        let exponent = (self.count - Self::FREE_ATTEMPTS).min(16);
        let wait = (1i64 << exponent).min(Self::MAX_WAIT);
        let remaining = wait - self.last.seconds_until(now);
        (remaining > 0)
            .then(|| DurationSecs::from_seconds(remaining).ok())
            .flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OrgNamespace;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_epoch_seconds(s)
    }

    #[test]
    fn sessions_end_at_their_lifetime() {
        let user = UserId::generate(&OrgNamespace::from_random([1; 16]), [2; 16]);
        let s = BrowserSession::start(user, t(100), Lifetime::from_seconds(10).unwrap());
        assert!(s.is_active(t(109)));
        assert!(!s.is_active(t(110)));
    }

    #[test]
    fn csrf_tokens_are_bound_to_the_cookie() {
        let a = Secret::new("mlb_a");
        let b = Secret::new("mlb_b");
        let token = csrf_token(&a);
        assert!(csrf_matches(&a, &token));
        assert!(!csrf_matches(&b, &token));
        assert!(!csrf_matches(&a, ""));
        assert!(!csrf_matches(&a, &token[1..]));
    }

    #[test]
    fn failed_logins_slow_down_then_are_forgotten() {
        let mut f = FailedLogins::first(t(0));
        for i in 1..FailedLogins::FREE_ATTEMPTS {
            assert_eq!(f.retry_after(t(i64::from(i))), None, "free attempt {i}");
            f = f.record_failure(t(i64::from(i)));
        }
        // Five failures: the sixth attempt waits 1 s, then 2 s, 4 s, ...
        assert_eq!(f.count(), 5);
        assert_eq!(f.retry_after(t(4)).map(DurationSecs::seconds), Some(1));
        assert_eq!(f.retry_after(t(5)), None);
        f = f.record_failure(t(5));
        assert_eq!(f.retry_after(t(5)).map(DurationSecs::seconds), Some(2));
        for i in 0..20 {
            f = f.record_failure(t(6 + i));
        }
        assert_eq!(
            f.retry_after(t(25)).map(DurationSecs::seconds),
            Some(FailedLogins::MAX_WAIT as u32)
        );
        // Never locked for good: after the wait, or once stale, it may try again.
        assert_eq!(f.retry_after(t(25 + FailedLogins::MAX_WAIT)), None);
        assert!(f.is_stale(t(25 + FailedLogins::FORGET_AFTER)));
        assert_eq!(f.record_failure(t(2000)).count(), 1);
    }
}
