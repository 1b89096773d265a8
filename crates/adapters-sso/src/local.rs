//! The `local` directory: users' argon2id password hashes in medialib's own database.

use std::sync::Arc;

use medialib_domain::{Secret, Timestamp};
use medialib_ports::{
    CredentialRepository, Credentials, PasswordHash, SsoError, SsoIdentity, SsoProvider,
};

/// A password the directory refuses to store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PasswordError {
    /// Too short or too long.
    #[error("{0}")]
    Policy(String),
    /// The hash could not be computed.
    #[error("password hashing failed: {0}")]
    Hashing(String),
}

/// Hashes a new password with argon2id (a fresh random salt, OWASP parameters).
pub fn hash_password(_password: &Secret) -> Result<PasswordHash, PasswordError> {
    Err(PasswordError::Hashing("not implemented yet".into()))
}

/// The `local` SSO provider.
pub struct LocalDirectory {
    store: Arc<dyn CredentialRepository>,
}

impl LocalDirectory {
    /// A directory over `store`.
    pub fn new(store: Arc<dyn CredentialRepository>) -> Self {
        Self { store }
    }
}

impl std::fmt::Debug for LocalDirectory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalDirectory").finish_non_exhaustive()
    }
}

impl SsoProvider for LocalDirectory {
    fn authenticate(
        &self,
        _credentials: Credentials<'_>,
        _now: Timestamp,
    ) -> Result<SsoIdentity, SsoError> {
        let _ = &self.store;
        Err(SsoError::Unsupported)
    }
}
