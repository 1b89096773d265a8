//! Browser sessions, redirect-based sign-ins in progress, and housekeeping.

use std::collections::{BTreeMap, BTreeSet};

use medialib_domain::{BrowserSession, GrantId, PurgeCutoffs, Timestamp, TokenDigest, UserId};
use medialib_ports::{
    Housekeeping, PendingSignInRepository, PurgeReport, SessionRepository, StoreError,
    StoredPendingSignIn,
};

use crate::MemoryStore;
use crate::state::{PendingRecord, constraint};

/// Removes the entries `doomed` picks; returns how many.
fn remove_where<K: Ord, V>(
    map: &mut BTreeMap<K, V>,
    mut doomed: impl FnMut(&K, &V) -> bool,
) -> u64 {
    let before = map.len();
    map.retain(|k, v| !doomed(k, v));
    u64::try_from(before.saturating_sub(map.len())).unwrap_or(u64::MAX)
}

impl SessionRepository for MemoryStore {
    fn create_session(
        &self,
        digest: &TokenDigest,
        session: &BrowserSession,
    ) -> Result<(), StoreError> {
        let mut state = self.lock();
        if state.sessions.contains_key(digest) {
            return Err(constraint("browser_sessions.digest is the primary key"));
        }
        if !state.users.contains_key(&session.user) {
            return Err(constraint("browser_sessions.user_id references users"));
        }
        state.sessions.insert(*digest, *session);
        Ok(())
    }

    fn session(&self, digest: &TokenDigest) -> Result<Option<BrowserSession>, StoreError> {
        Ok(self.lock().sessions.get(digest).copied())
    }

    fn end_session(&self, digest: &TokenDigest) -> Result<bool, StoreError> {
        Ok(self.lock().sessions.remove(digest).is_some())
    }

    fn end_user_sessions(&self, user: UserId) -> Result<u64, StoreError> {
        Ok(remove_where(&mut self.lock().sessions, |_, s| {
            s.user == user
        }))
    }
}

impl PendingSignInRepository for MemoryStore {
    fn put_pending_sign_in(
        &self,
        state_digest: &TokenDigest,
        pending: &StoredPendingSignIn,
        expires_at: Timestamp,
    ) -> Result<(), StoreError> {
        let mut state = self.lock();
        if state.pending.contains_key(state_digest) {
            return Err(constraint(
                "pending_sign_ins.state_digest is the primary key",
            ));
        }
        state.pending.insert(
            *state_digest,
            PendingRecord {
                pending: pending.clone(),
                expires_at,
            },
        );
        Ok(())
    }

    fn take_pending_sign_in(
        &self,
        state_digest: &TokenDigest,
        now: Timestamp,
    ) -> Result<Option<StoredPendingSignIn>, StoreError> {
        // Taken whether it is live or not: an expired one is deleted and not returned.
        let taken = self.lock().pending.remove(state_digest);
        Ok(taken.filter(|p| now < p.expires_at).map(|p| p.pending))
    }
}

impl Housekeeping for MemoryStore {
    fn purge_expired(&self, now: Timestamp, code_grace: i64) -> Result<PurgeReport, StoreError> {
        let mut state = self.lock();
        let pass = PurgeCutoffs::at(now, code_grace);
        // Codes first: a redeemed code's grant is only considered once its codes are gone.
        let codes = remove_where(&mut state.codes, |_, c| {
            pass.code_expired(c.code.expires_at)
        });
        let access_tokens = remove_where(&mut state.access_tokens, |_, t| {
            pass.token_expired(t.expires_at)
        });
        let refresh_tokens = remove_where(&mut state.refresh_tokens, |_, t| {
            pass.token_expired(t.expires_at)
        });
        // Mirrors adapters-diesel sessions.rs: a grant goes when no access token, refresh
        // token or code refers to it any more, whether it was revoked or not.
        let referenced: BTreeSet<GrantId> = state
            .access_tokens
            .values()
            .map(|t| t.grant)
            .chain(state.refresh_tokens.values().map(|t| t.grant))
            .chain(state.codes.values().filter_map(|c| c.grant))
            .collect();
        let grants = remove_where(&mut state.grants, |id, g| {
            pass.grant_aged(g.created_at) && !referenced.contains(id)
        });
        Ok(PurgeReport {
            codes,
            access_tokens,
            refresh_tokens,
            grants,
            sessions: remove_where(&mut state.sessions, |_, s| {
                pass.session_expired(s.expires_at)
            }),
            pending_sign_ins: remove_where(&mut state.pending, |_, p| {
                pass.session_expired(p.expires_at)
            }),
        })
    }
}
