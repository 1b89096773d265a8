//! Settings: an optional TOML file, overridden by `MEDIALIB_*` environment
//! variables, overridden by command-line flags (DECISIONS.md §1).
//!
//! Every value is parsed into a typed field when the settings are loaded, and
//! every problem is reported at once, one line each, naming where the bad
//! value came from. A [`Settings`] value is therefore always usable.
//!
//! - `table.rs`: the one table of keys (name, type, default, validation, doc) from which
//!   come the key list, the typed [`Settings`], the parsing, README.md's configuration
//!   table ([`markdown_table`]) and the flags' help ([`Key::help`]).
//! - `declare.rs`: the `settings!` macro that turns the table into code, and [`Key`].
//! - `load.rs`: the layers ([`SettingsLoader`]) and the per-key checks.
//! - `values.rs`: the typed values and their validators.

mod declare;
mod load;
mod table;
mod values;

#[cfg(test)]
mod tests;

pub use declare::{Key, markdown_table};
pub use load::{ConfigError, SettingsLoader};
pub use table::{KEYS, Settings, key};
pub use values::{
    BaseUrl, Count, DatabaseKind, DatabaseUrl, LogFormat, OidcSettings, PerMinute, Sso,
    StorageSettings, StorageUrl, TlsFiles, TrustedProxy, Ttl,
};

use crate::secret::Secret;
use table::Values;

/// The prefix of every environment variable the settings read.
pub const ENV_PREFIX: &str = "MEDIALIB_";
