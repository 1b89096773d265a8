//! Browser sessions, redirect-based sign-ins in progress, and housekeeping.

use std::collections::{BTreeMap, BTreeSet};

use medialib_domain::{BrowserSession, GrantId, Timestamp, TokenDigest, UserId};
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
        let code_cutoff =
            Timestamp::from_epoch_seconds(now.epoch_seconds().saturating_sub(code_grace.max(0)));
        // Mirrors adapters-diesel sessions.rs: codes, access and refresh tokens go once
        // they expired strictly before the cutoff (a token that expires at `now` is kept
        // one more pass), sessions and pending sign-ins at their expiry (`expires_at <= now`).
        // Codes first: a redeemed code's grant is only considered once its codes are gone.
        let codes = remove_where(&mut state.codes, |_, c| c.code.expires_at < code_cutoff);
        let access_tokens = remove_where(&mut state.access_tokens, |_, t| t.expires_at < now);
        let refresh_tokens = remove_where(&mut state.refresh_tokens, |_, t| t.expires_at < now);
        // Mirrors adapters-diesel sessions.rs: a grant goes when it is older than the code
        // grace and no access token, refresh token or code refers to it any more, whether
        // it was revoked or not.
        let referenced: BTreeSet<GrantId> = state
            .access_tokens
            .values()
            .map(|t| t.grant)
            .chain(state.refresh_tokens.values().map(|t| t.grant))
            .chain(state.codes.values().filter_map(|c| c.grant))
            .collect();
        let grants = remove_where(&mut state.grants, |id, g| {
            g.created_at < code_cutoff && !referenced.contains(id)
        });
        let sessions = remove_where(&mut state.sessions, |_, s| s.expires_at <= now);
        let pending_sign_ins = remove_where(&mut state.pending, |_, p| p.expires_at <= now);
        Ok(PurgeReport {
            codes,
            access_tokens,
            refresh_tokens,
            grants,
            sessions,
            pending_sign_ins,
        })
    }
}
