//! The failure every repository operation can have.

/// A storage failure that is not a business outcome.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The database cannot be reached or the pool timed out (503 + Retry-After).
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// The database has no room left for a write (its disk is full): 507, reads go on.
    #[error("the database is out of space")]
    Full,
    /// A stored row does not parse into a domain value.
    #[error("corrupt stored data: {0}")]
    Corrupt(String),
    /// Anything else.
    #[error("unexpected storage error: {0}")]
    Unexpected(String),
}
