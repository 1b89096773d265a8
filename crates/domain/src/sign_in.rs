//! Which way the authorization endpoint signs a browser in (DECISIONS.md §6): for a valid
//! authorization request, whether the proxy's header, a live session or the configured
//! method wins, and which sign-in entry points a method offers.
//!
//! The HTTP layer reads the facts (the configured method, whether the request carries the
//! proxy's sign-in header, whether the browser's session is live) and applies the answer.
//!
//! Signing in on medialib's own pages (`/login?next=…`) ends on a page of this service:
//! [`ReturnPath`] is the only kind of place it sends a browser to, so that a link cannot turn
//! the sign-in into a redirect to another site; [`AfterSignIn`] says where a sign-in at the
//! identity provider resumes.

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

/// A path of this service that a browser is sent to after signing in on medialib's pages: it
/// starts with one `/` and has no scheme, host, backslash, white space or other than printable
/// ASCII (a browser percent-encodes the rest),
/// so that it can only name a page here (never `//other.example/…`, which browsers read as
/// another host). At most 2,048 bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReturnPath(String);

impl ReturnPath {
    /// The longest path kept.
    pub const MAX_LEN: usize = 2048;

    /// The path in `next`, or `None` when it could lead off this service.
    pub fn parse(next: &str) -> Option<Self> {
        let local = next.starts_with('/')
            && !next.starts_with("//")
            && next.len() <= Self::MAX_LEN
            && !next.chars().any(|c| c == '\\' || !c.is_ascii_graphic());
        local.then(|| Self(next.to_owned()))
    }

    /// `next` when it is a path of this service, else the home page.
    pub fn or_home(next: Option<&str>) -> Self {
        next.and_then(Self::parse).unwrap_or_else(Self::home)
    }

    /// The home page, `/`.
    pub fn home() -> Self {
        Self("/".to_owned())
    }

    /// The path.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Where a sign-in at the identity provider resumes once the browser is back: the
/// authorization request it interrupted (its query string), or a page of medialib's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterSignIn {
    /// The authorize page with this query string (the request is validated again there).
    Authorize(String),
    /// A page of this service.
    Page(ReturnPath),
}

impl AfterSignIn {
    /// The prefix of a stored page return: an authorize query never starts with it (it starts
    /// with a parameter name followed by `=`).
    const PAGE: &'static str = "page:";

    /// The text kept with the pending sign-in.
    pub fn encode(&self) -> String {
        match self {
            Self::Authorize(query) => query.clone(),
            Self::Page(path) => format!("{}{}", Self::PAGE, path.as_str()),
        }
    }

    /// Reads what [`encode`](Self::encode) kept; a page return whose path no longer passes
    /// [`ReturnPath::parse`] goes home.
    pub fn decode(kept: &str) -> Self {
        match kept.strip_prefix(Self::PAGE) {
            Some(path) => Self::Page(ReturnPath::or_home(Some(path))),
            None => Self::Authorize(kept.to_owned()),
        }
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

    #[test]
    fn only_paths_of_this_service_are_returned_to() {
        for ok in ["/", "/m/abcDEF1234", "/libraries/x?page=2#top", "/a/b%2F/c"] {
            assert_eq!(
                ReturnPath::parse(ok).map(|p| p.0),
                Some(ok.to_owned()),
                "{ok}"
            );
        }
        let long = format!("/{}", "a".repeat(ReturnPath::MAX_LEN));
        for bad in [
            "",
            "m/abc",
            "//evil.example/",
            "/\\evil.example/",
            "https://evil.example/",
            "javascript:alert(1)",
            "/a b",
            "/a\tb",
            "/a\nLocation: x",
            long.as_str(),
        ] {
            assert_eq!(ReturnPath::parse(bad), None, "{bad:?}");
        }
        assert_eq!(ReturnPath::or_home(Some("//evil.example")).as_str(), "/");
        assert_eq!(ReturnPath::or_home(None).as_str(), "/");
        assert_eq!(ReturnPath::or_home(Some("/x")).as_str(), "/x");
    }

    #[test]
    fn a_sign_in_resumes_where_it_started() {
        let page = AfterSignIn::Page(ReturnPath::parse("/libraries/x").unwrap());
        assert_eq!(page.encode(), "page:/libraries/x");
        assert_eq!(AfterSignIn::decode(&page.encode()), page);
        let authorize = AfterSignIn::Authorize("response_type=code&client_id=c".to_owned());
        assert_eq!(AfterSignIn::decode(&authorize.encode()), authorize);
        // A kept page return that no longer parses goes home, never elsewhere.
        assert_eq!(
            AfterSignIn::decode("page://evil.example"),
            AfterSignIn::Page(ReturnPath::home())
        );
    }
}
