//! `GrantRepository`: codes, grants and tokens, stored by digest only.
//!
//! The two contested operations (spending a code, rotating a refresh token) are one step
//! under the store's mutex: of concurrent callers exactly one finds the code unused or the
//! token valid; every other finds it spent, which the domain calls a replay or a reuse.
//! The domain decides (`ClientKind::authenticate`, `StoredCode::redeem`,
//! `RefreshTokenRecord::rotate`); what this file decides itself is what the diesel adapter
//! decides in its `store/grants.rs`, marked `Mirrors adapters-diesel grants.rs`.

use medialib_domain::oauth::{
    AccessTokenRecord, ClientId, IssuedCode, IssuedTokens, RedeemError, RefreshError,
    RefreshTokenRecord, RefreshTokenState, Rotation, StoredCode, mint_tokens,
};
use medialib_domain::{GrantId, Timestamp, TokenDigest, UserId};
use medialib_ports::{
    BearerRecord, CodeExchange, ExchangeError, GrantRepository, RefreshExchange, RevokeOutcome,
    RotateError, StoreError,
};

use crate::MemoryStore;
use crate::state::{CodeRecord, GrantRecord, constraint};

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

    fn exchange_code(
        &self,
        req: CodeExchange<'_>,
    ) -> Result<(GrantId, IssuedTokens), ExchangeError> {
        let mut state = self.lock();
        let Some(client) = state.clients.get(req.presentation.client) else {
            return Err(ExchangeError::UnknownClient);
        };
        // The client authenticates before the code is touched.
        client
            .kind()
            .authenticate(req.client_secret)
            .map_err(ExchangeError::ClientRefused)?;
        let Some(record) = state.codes.get(&req.digest) else {
            return Err(ExchangeError::UnknownCode);
        };
        let stored = match record.redeemed_at {
            None => StoredCode::Unused(record.code.clone()),
            Some(_) => StoredCode::Redeemed {
                grant: record.grant,
            },
        };
        let spec = match stored.redeem(&req.presentation, req.now) {
            Ok(spec) => spec,
            Err(RedeemError::Replayed { grant }) => {
                // Mirrors adapters-diesel grants.rs: a replayed code revokes the grant it
                // produced (every access and refresh token issued from it); a code burnt by
                // a failed redemption produced none, and its replay revokes nothing.
                if let Some(g) = grant {
                    state.revoke_grant(g, req.now);
                }
                return Err(RedeemError::Replayed { grant }.into());
            }
            Err(e) => {
                // Mirrors adapters-diesel grants.rs: a failed redemption (expired, another
                // client, redirect or PKCE mismatch) burns the code: it stays spent.
                if let Some(code) = state.codes.get_mut(&req.digest) {
                    code.redeemed_at.get_or_insert(req.now);
                }
                return Err(e.into());
            }
        };
        let tokens = mint_tokens(&spec, req.random, req.now, req.lifetimes);
        // Everything the database would refuse (and roll back, code claim included) is
        // checked before the first write.
        if state.grants.contains_key(&req.grant_id) {
            return Err(constraint("oauth_grants.id is the primary key").into());
        }
        state.check_new_tokens(&tokens)?;
        if let Some(code) = state.codes.get_mut(&req.digest) {
            code.redeemed_at = Some(req.now);
            code.grant = Some(req.grant_id);
        }
        state.grants.insert(
            req.grant_id,
            GrantRecord {
                client: spec.client.clone(),
                user: spec.user,
                scope: tokens.scope,
                created_at: req.now,
                revoked_at: None,
            },
        );
        state.insert_tokens(req.grant_id, spec.user, &spec.client, &tokens);
        Ok((req.grant_id, tokens))
    }

    fn rotate_refresh_token(&self, req: RefreshExchange<'_>) -> Result<Rotation, RotateError> {
        let mut state = self.lock();
        let Some(client) = state.clients.get(req.presentation.client) else {
            return Err(RotateError::UnknownClient);
        };
        // The client authenticates before the token is touched.
        client
            .kind()
            .authenticate(req.client_secret)
            .map_err(RotateError::ClientRefused)?;
        let Some(record) = state.refresh_record(&req.digest) else {
            return Err(RotateError::UnknownToken);
        };
        let (user, client) = (record.user, record.client.clone());
        let rotation = match record.rotate(&req.presentation, req.random, req.now, req.lifetimes) {
            Ok(rotation) => rotation,
            Err(RefreshError::Reused { grant }) => {
                // Mirrors adapters-diesel grants.rs: a used refresh token presented again
                // (a concurrent loser's included) revokes its whole grant family.
                state.revoke_grant(grant, req.now);
                return Err(RefreshError::Reused { grant }.into());
            }
            Err(e) => return Err(e.into()),
        };
        state.check_new_tokens(&rotation.tokens)?;
        // The record was read `Valid` under this same lock, so the token is unused: this
        // caller is the one that spends it.
        if let Some(spent) = state.refresh_tokens.get_mut(&req.digest) {
            spent.used_at = Some(req.now);
        }
        state.insert_tokens(rotation.grant, user, &client, &rotation.tokens);
        Ok(rotation)
    }

    fn access_token(&self, digest: &TokenDigest) -> Result<Option<AccessTokenRecord>, StoreError> {
        Ok(self.lock().access_record(digest))
    }

    fn bearer(&self, digest: &TokenDigest) -> Result<Option<BearerRecord>, StoreError> {
        Ok(self.lock().bearer_record(digest))
    }

    fn revoke_token(
        &self,
        digest: &TokenDigest,
        client: &ClientId,
        now: Timestamp,
    ) -> Result<RevokeOutcome, StoreError> {
        let mut state = self.lock();
        // Mirrors adapters-diesel grants.rs: a refresh token is looked for first; it is
        // another client's when its grant's client differs, and revoking it revokes the grant.
        let family = state.refresh_tokens.get(digest).and_then(|t| {
            let grant = state.grants.get(&t.grant)?;
            Some((t.grant, grant.client.clone()))
        });
        if let Some((grant, owner)) = family {
            if owner != *client {
                return Ok(RevokeOutcome::OtherClient);
            }
            state.revoke_grant(grant, now);
            return Ok(RevokeOutcome::GrantRevoked);
        }
        // Mirrors adapters-diesel grants.rs: an access token is another client's when its
        // own `client_id` differs; revoking it revokes only the token.
        let Some(token) = state.access_tokens.get_mut(digest) else {
            return Ok(RevokeOutcome::Unknown);
        };
        if token.client != *client {
            return Ok(RevokeOutcome::OtherClient);
        }
        token.revoked_at.get_or_insert(now);
        Ok(RevokeOutcome::AccessTokenRevoked)
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
        let state = self.lock();
        let Some(mut record) = state.refresh_record(digest) else {
            return Ok(None);
        };
        // Mirrors adapters-diesel grants.rs: for introspection a revocation outranks use (a
        // used token of a revoked grant is reported `Revoked`).
        if state
            .refresh_tokens
            .get(digest)
            .and_then(|t| state.grants.get(&t.grant))
            .is_some_and(|g| g.revoked_at.is_some())
        {
            record.state = RefreshTokenState::Revoked;
        }
        Ok(Some(record))
    }
}
