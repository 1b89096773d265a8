//! The `header` mode: an authenticating reverse proxy (Shibboleth, mod_auth_mellon,
//! oauth2-proxy, ...) signs the person in and names them in a request header
//! (`sso_header`, `Remote-User` by default); medialib believes the header only when the
//! request came from one of the configured proxies (DECISIONS.md §6).
//!
//! Which header to read and whether the request came from a trusted proxy are HTTP
//! questions that the web layer answers; this provider decides what such a header is
//! worth: the trimmed value is the user's uniqueId. The proxy says nothing about names, so
//! a first sign-in provisions the user with empty names (they can be set through the API
//! or by an administrator) and later sign-ins leave them alone.

use medialib_domain::{Timestamp, UniqueId};
use medialib_ports::{Credentials, SignInMethod, SsoError, SsoIdentity, SsoProvider};

/// The `header` SSO provider: trusts a uniqueId named by a configured reverse proxy.
#[derive(Debug, Clone, Copy, Default)]
pub struct HeaderSso;

impl HeaderSso {
    /// The provider (it has no settings: the header name and the proxies are the web
    /// layer's).
    pub fn new() -> Self {
        Self
    }
}

impl SsoProvider for HeaderSso {
    fn method(&self) -> SignInMethod {
        SignInMethod::ProxyHeader
    }

    fn authenticate(
        &self,
        credentials: Credentials<'_>,
        _now: Timestamp,
    ) -> Result<SsoIdentity, SsoError> {
        let Credentials::ProxyHeader {
            value,
            from_trusted_proxy,
        } = credentials
        else {
            return Err(SsoError::Unsupported);
        };
        if !from_trusted_proxy {
            tracing::warn!(
                "refused a sign-in header that did not come from a trusted proxy (someone may be forging it)"
            );
            return Err(SsoError::InvalidCredentials);
        }
        match UniqueId::parse(value.trim()) {
            Ok(unique_id) => Ok(SsoIdentity {
                unique_id,
                first_name: None,
                last_name: None,
            }),
            Err(error) => {
                tracing::warn!(%error, "the trusted proxy's sign-in header is not a valid uniqueId");
                Err(SsoError::InvalidCredentials)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use medialib_domain::Secret;

    use super::*;

    fn from_proxy(value: &str) -> Result<SsoIdentity, SsoError> {
        HeaderSso::new().authenticate(
            Credentials::ProxyHeader {
                value,
                from_trusted_proxy: true,
            },
            Timestamp::from_epoch_seconds(0),
        )
    }

    #[test]
    fn signs_in_with_the_proxy_header() {
        assert_eq!(HeaderSso::new().method(), SignInMethod::ProxyHeader);
        let identity = from_proxy("alice@uni.example").unwrap();
        assert_eq!(identity.unique_id.as_str(), "alice@uni.example");
        assert_eq!(identity.first_name, None, "the header carries no names");
        assert_eq!(identity.last_name, None);
        assert_eq!(
            from_proxy("  bob \t").unwrap().unique_id.as_str(),
            "bob",
            "surrounding white space is trimmed"
        );
    }

    #[test]
    fn an_untrusted_header_is_refused() {
        let r = HeaderSso::new().authenticate(
            Credentials::ProxyHeader {
                value: "alice",
                from_trusted_proxy: false,
            },
            Timestamp::from_epoch_seconds(0),
        );
        assert_eq!(r, Err(SsoError::InvalidCredentials));
    }

    #[test]
    fn an_empty_or_invalid_value_is_refused() {
        for value in ["", "   ", "al\u{0}ice", "a\nb", &"x".repeat(256)] {
            assert_eq!(
                from_proxy(value),
                Err(SsoError::InvalidCredentials),
                "{value:?}"
            );
        }
        assert!(from_proxy(&"x".repeat(255)).is_ok());
    }

    #[test]
    fn passwords_are_not_taken() {
        let password = Secret::new("correct horse battery staple");
        let r = HeaderSso::new().authenticate(
            Credentials::Password {
                username: "alice",
                password: &password,
            },
            Timestamp::from_epoch_seconds(0),
        );
        assert_eq!(r, Err(SsoError::Unsupported));
    }
}
