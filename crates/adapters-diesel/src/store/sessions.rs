//! Browser sessions, the local directory's password hashes, and housekeeping.

use medialib_domain::{BrowserSession, Timestamp, TokenDigest, UniqueId, User, UserId};
use medialib_ports::{
    CredentialRepository, Housekeeping, PasswordHash, PurgeReport, SessionRepository, StoreError,
};

use super::DieselStore;

fn todo_err<T>() -> Result<T, StoreError> {
    Err(StoreError::Unexpected("not implemented yet".into()))
}

impl SessionRepository for DieselStore {
    fn create_session(
        &self,
        _digest: &TokenDigest,
        _session: &BrowserSession,
    ) -> Result<(), StoreError> {
        todo_err()
    }
    fn session(&self, _digest: &TokenDigest) -> Result<Option<BrowserSession>, StoreError> {
        todo_err()
    }
    fn end_session(&self, _digest: &TokenDigest) -> Result<bool, StoreError> {
        todo_err()
    }
    fn end_user_sessions(&self, _user: UserId) -> Result<u64, StoreError> {
        todo_err()
    }
}

impl CredentialRepository for DieselStore {
    fn set_password_hash(
        &self,
        _user: UserId,
        _hash: &PasswordHash,
        _now: Timestamp,
    ) -> Result<bool, StoreError> {
        todo_err()
    }
    fn password_hash(
        &self,
        _unique_id: &UniqueId,
    ) -> Result<Option<(User, PasswordHash)>, StoreError> {
        todo_err()
    }
}

impl Housekeeping for DieselStore {
    fn purge_expired(&self, _now: Timestamp, _code_grace: i64) -> Result<PurgeReport, StoreError> {
        todo_err()
    }
}
