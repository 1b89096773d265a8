//! medialib's single sign-on adapters: implementations of
//! [`medialib_ports::SsoProvider`] for the local argon2 directory, OpenID Connect
//! and a trusted reverse-proxy header (DECISIONS.md §6); and LTI 1.3's sign-in tokens
//! ([`LtiCrypto`], DECISIONS.md §8).

pub mod header;
mod http;
pub mod local;
pub mod lti;
pub mod oidc;

pub use header::HeaderSso;
pub use local::{LocalDirectory, PasswordError, hash_password};
pub use lti::LtiCrypto;
pub use medialib_ports::{Credentials, SsoError, SsoIdentity, SsoProvider};
pub use oidc::{OidcConfig, OidcConfigError, OidcProvider};
