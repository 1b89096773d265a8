//! Use cases: catalog (see the module list in `services/mod.rs`).

#[allow(unused_imports, reason = "filled in by the API issue")]
use super::Services;
