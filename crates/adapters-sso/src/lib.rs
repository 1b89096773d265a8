//! medialib's single sign-on adapters: implementations of
//! [`medialib_ports::SsoProvider`] for the local argon2 directory, OpenID Connect
//! and a trusted reverse-proxy header (DECISIONS.md §6).

pub mod header;
pub mod local;
pub mod oidc;

pub use header::HeaderSso;
pub use local::{LocalDirectory, PasswordError, hash_password};
pub use medialib_ports::{Credentials, SsoError, SsoIdentity, SsoProvider};
pub use oidc::{OidcConfig, OidcConfigError, OidcProvider};
