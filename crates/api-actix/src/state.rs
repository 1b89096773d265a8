//! What the handlers share: trait objects supplied by the composition root.

use std::fmt;
use std::sync::Arc;

/// Tells whether the service can do useful work (for `GET /readyz`).
///
/// Implementations may block (a database round trip); handlers call them
/// through `web::block`.
pub trait Readiness: Send + Sync + 'static {
    /// `Ok` when ready; otherwise a reason for the log (never shown to clients).
    fn ready(&self) -> Result<(), String>;
}

/// The application state every handler can reach.
#[derive(Clone)]
pub struct AppState {
    readiness: Arc<dyn Readiness>,
}

impl AppState {
    /// Bundles the collaborators the HTTP layer needs.
    pub fn new(readiness: Arc<dyn Readiness>) -> Self {
        Self { readiness }
    }

    /// The readiness probe.
    pub(crate) fn readiness(&self) -> Arc<dyn Readiness> {
        Arc::clone(&self.readiness)
    }
}

impl fmt::Debug for AppState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppState").finish_non_exhaustive()
    }
}
