//! medialib's in-memory store: every repository port of `medialib-ports` on plain maps
//! behind one mutex, so that use cases can be tested without a database.
//!
//! [`MemoryStore`] behaves as the diesel adapter's `DieselStore` does, method by method:
//! the same outcomes, error variants and orderings (the contract suite in
//! `tests/integration/contract.rs`, `uploads_contract.rs` and `jobs_contract.rs` is the specification). Every method takes the mutex once
//! and decides its outcome before it changes anything, so a method that returns an error
//! leaves the store as it was, except where the outcome itself is a change (a replayed code
//! revokes its grant, a failed redemption burns the code, a reused refresh token revokes its
//! family), as it is in the diesel adapter's committed transactions. Rules come from
//! `medialib-domain`; where the diesel adapter decides something itself, this crate does the
//! same and says so in a comment starting `Mirrors adapters-diesel <file>:`.
//!
//! Writes that the databases' constraints refuse (a taken primary key or shortcode, an
//! unknown user or client behind a foreign key) fail with `StoreError::Unexpected`, as they
//! do there, and write nothing.

mod clients;
mod grants;
mod jobs;
mod lti;
mod media;
mod sessions;
mod state;
pub mod storage;
#[cfg(feature = "testing")]
pub mod testing;
mod uploads;
mod users;

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use medialib_domain::OrgNamespace;
use medialib_ports::{OrgRepository, StoreError};

use crate::state::State;

/// medialib's store in memory: every repository port (hence `medialib_ports::Store`).
///
/// Cheap to clone: clones share the same data (an `Arc<Mutex<_>>`), like clones of a
/// database handle share the database.
#[derive(Clone)]
pub struct MemoryStore {
    /// The organization's namespace: fixed when the store is made, as the diesel adapter's
    /// is once the organization row exists.
    namespace: OrgNamespace,
    state: Arc<Mutex<State>>,
}

impl MemoryStore {
    /// An empty store whose organization namespace is made from 16 random bytes, as the
    /// diesel adapter's `Database::ensure_namespace` makes it on first use (a version-4 UUID
    /// shaped from the bytes): pass fresh random bytes.
    pub fn new(random: [u8; 16]) -> Self {
        Self::with_namespace(OrgNamespace::from_random(random))
    }

    /// An empty store for the organization with this namespace.
    pub fn with_namespace(namespace: OrgNamespace) -> Self {
        Self {
            namespace,
            state: Arc::new(Mutex::new(State::default())),
        }
    }

    /// The data, for one method's single atomic step.
    ///
    /// A poisoned mutex (a thread panicked while holding it) is recovered: every method
    /// decides before it writes, so a panic cannot have left a change half made.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("MemoryStore")
            .field("namespace", &self.namespace.to_string())
            .field("users", &state.users.len())
            .field("objects", &state.objects.len())
            .field("clients", &state.clients.len())
            .field("grants", &state.grants.len())
            .field("sessions", &state.sessions.len())
            .finish_non_exhaustive()
    }
}

impl OrgRepository for MemoryStore {
    fn namespace(&self) -> Result<OrgNamespace, StoreError> {
        Ok(self.namespace)
    }
}
