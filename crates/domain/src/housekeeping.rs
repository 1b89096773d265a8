//! What a housekeeping pass deletes (docs/storage.md, "Housekeeping"): the instant each kind
//! of record is judged against. The stores apply it, in SQL or over their maps; the rule is
//! written once, here.

use crate::time::Timestamp;

/// The cutoffs of one housekeeping pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PurgeCutoffs {
    now: Timestamp,
    codes: Timestamp,
}

impl PurgeCutoffs {
    /// The pass at `now` that keeps codes `code_grace` seconds past their expiry, so that a
    /// late replay is still told apart from an unknown code and revokes the tokens issued
    /// from it (a negative grace counts as none).
    pub fn at(now: Timestamp, code_grace: i64) -> Self {
        let codes = now.epoch_seconds().saturating_sub(code_grace.max(0));
        Self {
            now,
            codes: Timestamp::from_epoch_seconds(codes),
        }
    }

    /// A code goes when it expired strictly before this: `now` less the grace.
    pub fn codes_expired_before(self) -> Timestamp {
        self.codes
    }

    /// An access or refresh token goes when it expired strictly before this, `now` (one
    /// that expires at `now` is kept one more pass).
    pub fn tokens_expired_before(self) -> Timestamp {
        self.now
    }

    /// A grant that nothing refers to any more goes when it was created strictly before
    /// this: the codes' cutoff, so a grant is kept while the code that made it may still be
    /// replayed.
    pub fn grants_created_before(self) -> Timestamp {
        self.codes
    }

    /// A browser session or a pending sign-in goes when it expired at or before this, `now`
    /// (each is live while `now < expires_at`).
    pub fn sessions_expired_by(self) -> Timestamp {
        self.now
    }

    /// Whether a code that expires at `expires_at` goes.
    pub fn code_expired(self, expires_at: Timestamp) -> bool {
        expires_at < self.codes_expired_before()
    }

    /// Whether an access or refresh token that expires at `expires_at` goes.
    pub fn token_expired(self, expires_at: Timestamp) -> bool {
        expires_at < self.tokens_expired_before()
    }

    /// Whether a grant created at `created_at` is old enough to go once nothing refers to it.
    pub fn grant_aged(self, created_at: Timestamp) -> bool {
        created_at < self.grants_created_before()
    }

    /// Whether a session or pending sign-in that expires at `expires_at` goes.
    pub fn session_expired(self, expires_at: Timestamp) -> bool {
        expires_at <= self.sessions_expired_by()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_epoch_seconds(secs)
    }

    #[test]
    fn codes_and_grants_are_kept_for_the_grace_and_tokens_until_after_their_expiry() {
        let pass = PurgeCutoffs::at(at(1_000), 100);
        assert!(pass.code_expired(at(899)));
        assert!(!pass.code_expired(at(900)));
        assert!(pass.grant_aged(at(899)));
        assert!(!pass.grant_aged(at(900)));
        assert!(pass.token_expired(at(999)));
        assert!(
            !pass.token_expired(at(1_000)),
            "a token expiring now is kept one more pass"
        );
        assert!(
            pass.session_expired(at(1_000)),
            "a session expiring now is no longer live"
        );
        assert!(!pass.session_expired(at(1_001)));
    }

    #[test]
    fn a_negative_grace_counts_as_none_and_the_cutoff_saturates() {
        assert_eq!(
            PurgeCutoffs::at(at(1_000), -5).codes_expired_before(),
            at(1_000)
        );
        assert_eq!(
            PurgeCutoffs::at(at(i64::MIN), 10).codes_expired_before(),
            at(i64::MIN)
        );
    }
}
