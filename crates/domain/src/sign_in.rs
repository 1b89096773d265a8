//! Which way the authorization endpoint signs a browser in (DECISIONS.md §6): for a valid
//! authorization request, whether the proxy's header, a live session or the configured
//! method wins, and which sign-in entry points a method offers.
//!
//! The HTTP layer reads the facts (the configured method, whether the request carries the
//! proxy's sign-in header, whether the browser's session is live) and applies the answer.

/// How the organization signs people in (the `sso` setting, as the SSO provider reports it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignInMethod {
    /// medialib's own form asks for a username and password (`sso = local`).
    PasswordForm,
    /// The browser signs in at the identity provider and comes back (`sso = oidc`).
    Redirect,
    /// An authenticating reverse proxy names the user in a header (`sso = header`).
    ProxyHeader,
}

/// What to do first with a valid authorization request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Authorize {
    /// Sign in the person the proxy's header names, whatever session the browser holds: a
    /// session left in a shared browser by someone else must not stand in for the person now
    /// signed in at the proxy.
    ByProxyHeader,
    /// Show the consent page to the user of the browser's live session; without one, do what
    /// the [`WithoutSession`] says.
    SessionOr(WithoutSession),
}

/// How a browser without a live session signs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WithoutSession {
    /// Through the proxy's header (absent here, so the person is told to come through the
    /// proxy).
    ByProxyHeader,
    /// At the identity provider (a redirect there).
    AtIdentityProvider,
    /// With medialib's password form.
    PasswordForm,
}

impl SignInMethod {
    /// The first step for a valid authorization request whose browser may or may not carry
    /// the proxy's sign-in header (`carries_proxy_header`, a non-blank value, trusted or not:
    /// the sign-in judges the trust).
    pub fn authorize(self, carries_proxy_header: bool) -> Authorize {
        match self {
            Self::ProxyHeader if carries_proxy_header => Authorize::ByProxyHeader,
            Self::ProxyHeader => Authorize::SessionOr(WithoutSession::ByProxyHeader),
            Self::Redirect => Authorize::SessionOr(WithoutSession::AtIdentityProvider),
            Self::PasswordForm => Authorize::SessionOr(WithoutSession::PasswordForm),
        }
    }

    /// Whether a submitted password form is worth checking: behind the proxy there is no
    /// password form at all (the other methods let the provider judge the credentials).
    pub fn takes_submitted_passwords(self) -> bool {
        self != Self::ProxyHeader
    }

    /// Whether the identity provider's return (`/api/sso/oidc/callback`) has a sign-in to
    /// finish: only when the browser was sent there.
    pub fn returns_from_identity_provider(self) -> bool {
        self == Self::Redirect
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proxy_header_beats_a_session_only_behind_the_proxy() {
        use Authorize::{ByProxyHeader, SessionOr};
        use SignInMethod::{PasswordForm, ProxyHeader, Redirect};
        let table = [
            (ProxyHeader, true, ByProxyHeader),
            (ProxyHeader, false, SessionOr(WithoutSession::ByProxyHeader)),
            (
                Redirect,
                true,
                SessionOr(WithoutSession::AtIdentityProvider),
            ),
            (
                Redirect,
                false,
                SessionOr(WithoutSession::AtIdentityProvider),
            ),
            (PasswordForm, true, SessionOr(WithoutSession::PasswordForm)),
            (PasswordForm, false, SessionOr(WithoutSession::PasswordForm)),
        ];
        for (method, carries, expected) in table {
            assert_eq!(method.authorize(carries), expected, "{method:?}, {carries}");
        }
    }

    #[test]
    fn each_method_offers_its_own_entry_points() {
        use SignInMethod::{PasswordForm, ProxyHeader, Redirect};
        assert!(PasswordForm.takes_submitted_passwords());
        assert!(Redirect.takes_submitted_passwords());
        assert!(!ProxyHeader.takes_submitted_passwords());
        assert!(Redirect.returns_from_identity_provider());
        assert!(!PasswordForm.returns_from_identity_provider());
        assert!(!ProxyHeader.returns_from_identity_provider());
    }
}
