//! medialib's single sign-on adapters: implementations of
//! [`medialib_ports::SsoProvider`] for the local argon2 directory, OpenID Connect
//! and a trusted reverse-proxy header (DECISIONS.md §6).
//!
//! Empty for now: the adapters arrive with the SSO issue. The crate exists so the
//! workspace layout and its dependency invariants are in place from the start.

pub use medialib_ports::{Credentials, SsoError, SsoIdentity, SsoProvider};
