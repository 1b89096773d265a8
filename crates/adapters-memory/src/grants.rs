//! `GrantRepository`: codes, grants and tokens, stored by digest only.
//!
//! The two contested operations (spending a code, rotating a refresh token) are units of
//! work under the store's mutex: the service reads the facts, the domain decides
//! (`decide_code`, `decide_refresh`), the unit writes the decision. Of concurrent callers
//! exactly one finds the code unused or the token valid; every other finds it spent, which
//! the domain calls a replay or a reuse. Revocation (RFC 7009) is a unit of work too
//! (`decide_revocation`). What this file still chooses itself (which access tokens sign out
//! revokes) is what the diesel adapter's query selects, marked
//! `Mirrors adapters-diesel grants.rs`.

use medialib_domain::oauth::{
    AccessTokenRecord, Client, ClientId, CodeDecision, CodeFacts, IssuedCode, RefreshDecision,
    RefreshFacts, RefreshTokenRecord, RevocationFacts, RevokeDecision, StoredCode,
};
use medialib_domain::{Timestamp, TokenDigest, UserId};
use medialib_ports::{
    Applied, BearerRecord, CodeContest, Contest, GrantRepository, GrantUnit, RefreshContest,
    RevokeUnit, StoreError,
};

use crate::MemoryStore;
use crate::state::{CodeRecord, GrantRecord, State, constraint};

impl MemoryStore {
    /// Runs a contested grant's work over its unit under the store's mutex.
    fn contest<F, D>(&self, c: Contest<'_, F, D>) -> Result<D, StoreError>
    where
        for<'s> Unit<'s>: GrantUnit<F, D>,
    {
        let mut state = self.lock();
        (c.work)(&mut Unit {
            state: &mut state,
            digest: *c.digest,
            client: Some(c.client),
        })
    }
}

impl GrantRepository for MemoryStore {
    fn store_code(&self, code: &IssuedCode, _now: Timestamp) -> Result<(), StoreError> {
        let mut state = self.lock();
        if state.codes.contains_key(&code.digest) {
            return Err(constraint("oauth_codes.digest is the primary key"));
        }
        if !state.clients.contains_key(&code.client) {
            return Err(constraint("oauth_codes.client_id references oauth_clients"));
        }
        if !state.users.contains_key(&code.user) {
            return Err(constraint("oauth_codes.user_id references users"));
        }
        state.codes.insert(
            code.digest,
            CodeRecord {
                code: code.clone(),
                redeemed_at: None,
                grant: None,
            },
        );
        Ok(())
    }

    fn code_grant(&self, contest: CodeContest<'_>) -> Result<CodeDecision, StoreError> {
        self.contest(contest)
    }

    fn refresh_grant(&self, contest: RefreshContest<'_>) -> Result<RefreshDecision, StoreError> {
        self.contest(contest)
    }

    fn access_token(&self, digest: &TokenDigest) -> Result<Option<AccessTokenRecord>, StoreError> {
        Ok(self.lock().access_record(digest))
    }

    fn bearer(&self, digest: &TokenDigest) -> Result<Option<BearerRecord>, StoreError> {
        Ok(self.lock().bearer_record(digest))
    }

    fn client_and_bearer(
        &self,
        client: &ClientId,
        digest: &TokenDigest,
    ) -> Result<(Option<Client>, Option<BearerRecord>), StoreError> {
        let state = self.lock();
        Ok((
            state.clients.get(client).cloned(),
            state.bearer_record(digest),
        ))
    }

    fn revocation(
        &self,
        digest: &TokenDigest,
        work: &mut dyn FnMut(&mut RevokeUnit<'_>) -> Result<RevokeDecision, StoreError>,
    ) -> Result<RevokeDecision, StoreError> {
        let mut state = self.lock();
        work(&mut Unit {
            state: &mut state,
            digest: *digest,
            client: None,
        })
    }

    fn revoke_user_access_tokens(&self, user: UserId, now: Timestamp) -> Result<u64, StoreError> {
        let mut state = self.lock();
        let mut revoked = 0_u64;
        // Mirrors adapters-diesel grants.rs: only the user's tokens still unexpired and
        // unrevoked (by themselves) are revoked and counted.
        for token in state.access_tokens.values_mut() {
            if token.user == user && token.revoked_at.is_none() && token.expires_at > now {
                token.revoked_at = Some(now);
                revoked = revoked.saturating_add(1);
            }
        }
        Ok(revoked)
    }

    fn refresh_token(
        &self,
        digest: &TokenDigest,
    ) -> Result<Option<RefreshTokenRecord>, StoreError> {
        Ok(self.lock().refresh_record(digest))
    }
}

/// One contested grant's unit of work, under the store's mutex: a read and a write that
/// nothing can come between, so a write never loses. Like the diesel adapter's units, it
/// decides nothing: it reads facts and writes decisions.
struct Unit<'a> {
    state: &'a mut State,
    digest: TokenDigest,
    /// The presented client (none for a revocation, whose client is already authenticated).
    client: Option<&'a ClientId>,
}

impl GrantUnit<CodeFacts, CodeDecision> for Unit<'_> {
    fn facts(&mut self) -> Result<CodeFacts, StoreError> {
        let Some(client) = self.client.and_then(|c| self.state.clients.get(c)) else {
            return Ok(CodeFacts {
                client: None,
                code: None,
            });
        };
        let code = self
            .state
            .codes
            .get(&self.digest)
            .map(|c| match c.redeemed_at {
                None => StoredCode::Unused(c.code.clone()),
                Some(_) => StoredCode::Redeemed { grant: c.grant },
            });
        Ok(CodeFacts {
            client: Some(client.kind().clone()),
            code,
        })
    }

    fn apply(&mut self, decision: &CodeDecision, now: Timestamp) -> Result<Applied, StoreError> {
        match decision {
            CodeDecision::Redeem(r) => {
                let grant = r.grant();
                // Everything the database would refuse (and roll back, the claim included)
                // is checked before the first write.
                if self.state.grants.contains_key(&grant) {
                    return Err(constraint("oauth_grants.id is the primary key"));
                }
                self.state.check_new_tokens(&r.new_tokens())?;
                let Some(code) = self.state.codes.get_mut(&self.digest) else {
                    return Ok(Applied::Lost);
                };
                if code.redeemed_at.is_some() {
                    return Ok(Applied::Lost);
                }
                code.redeemed_at = Some(now);
                code.grant = Some(grant);
                let spec = r.spec();
                self.state.grants.insert(
                    grant,
                    GrantRecord {
                        client: spec.client().clone(),
                        user: spec.user(),
                        scope: spec.scope(),
                        created_at: now,
                        revoked_at: None,
                    },
                );
                self.state.insert_tokens(&r.new_tokens());
            }
            CodeDecision::BurnCode(_) => {
                if let Some(code) = self.state.codes.get_mut(&self.digest) {
                    code.redeemed_at.get_or_insert(now);
                }
            }
            CodeDecision::RevokeGrant(g) => self.state.revoke_grant(*g, now),
            CodeDecision::Refuse(_) => {}
        }
        Ok(Applied::Written)
    }
}

impl GrantUnit<RefreshFacts, RefreshDecision> for Unit<'_> {
    fn facts(&mut self) -> Result<RefreshFacts, StoreError> {
        let Some(client) = self.client.and_then(|c| self.state.clients.get(c)) else {
            return Ok(RefreshFacts {
                client: None,
                token: None,
            });
        };
        Ok(RefreshFacts {
            client: Some(client.kind().clone()),
            token: self.state.refresh_record(&self.digest),
        })
    }

    fn apply(&mut self, decision: &RefreshDecision, now: Timestamp) -> Result<Applied, StoreError> {
        match decision {
            RefreshDecision::Rotate(r) => {
                self.state.check_new_tokens(&r.new_tokens())?;
                let tokens = &mut self.state.refresh_tokens;
                // The conditional write: a first rotation only while the token is unused, a
                // retry only while the pair it gave is.
                let contested = r.supersedes().map_or(self.digest, |old| old.refresh);
                let open = tokens.get(&contested).is_some_and(|t| t.used_at.is_none());
                let Some(spent) = tokens.get_mut(&self.digest).filter(|_| open) else {
                    return Ok(Applied::Lost);
                };
                spent.used_at.get_or_insert(now);
                spent.successor = Some((r.refresh().digest, r.access().digest));
                // A retry takes back the pair it got before: its refresh token is spent (with
                // no pair of its own, presenting it later is reuse), its access token revoked.
                if let Some(old) = r.supersedes() {
                    if let Some(before) = tokens.get_mut(&old.refresh) {
                        before.used_at = Some(now);
                    }
                    if let Some(a) = self.state.access_tokens.get_mut(&old.access) {
                        a.revoked_at.get_or_insert(now);
                    }
                }
                self.state.insert_tokens(&r.new_tokens());
            }
            RefreshDecision::RevokeGrant(g) => self.state.revoke_grant(*g, now),
            RefreshDecision::Refuse(_) => {}
        }
        Ok(Applied::Written)
    }
}

impl GrantUnit<RevocationFacts, RevokeDecision> for Unit<'_> {
    fn facts(&mut self) -> Result<RevocationFacts, StoreError> {
        let state = &*self.state;
        let family = state.refresh_tokens.get(&self.digest).and_then(|t| {
            let grant = state.grants.get(&t.grant)?;
            Some(RevocationFacts::RefreshToken {
                grant: t.grant,
                holder: grant.client.clone(),
            })
        });
        Ok(
            family.unwrap_or_else(|| match state.access_tokens.get(&self.digest) {
                Some(t) => RevocationFacts::AccessToken {
                    holder: t.client.clone(),
                },
                None => RevocationFacts::Unknown,
            }),
        )
    }

    fn apply(&mut self, decision: &RevokeDecision, now: Timestamp) -> Result<Applied, StoreError> {
        match decision {
            RevokeDecision::RevokeGrant(g) => self.state.revoke_grant(*g, now),
            RevokeDecision::RevokeAccessToken => {
                if let Some(t) = self.state.access_tokens.get_mut(&self.digest) {
                    t.revoked_at.get_or_insert(now);
                }
            }
            RevokeDecision::OtherClient | RevokeDecision::Unknown => {}
        }
        Ok(Applied::Written)
    }
}
