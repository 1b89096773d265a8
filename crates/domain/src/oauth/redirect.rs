//! Redirect URIs: parsed strictly, matched by exact string.

use std::fmt;

/// A redirect URI a client registered or requested.
///
/// `https` with any host, or `http` only for loopback hosts (`127.0.0.1`, `[::1]`,
/// `localhost`). No fragment, no user info, no white space or control characters,
/// at most 2 048 bytes.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RedirectUri {
    raw: String,
    loopback_ip: bool,
    /// Byte range of `:port` in `raw` (empty when there is no port).
    port_span: (usize, usize),
}

/// Why a redirect URI is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidRedirectUri {
    /// Not `https://` or `http://`, or malformed.
    #[error("redirect_uri must be an absolute https URL (http only for loopback hosts)")]
    Malformed,
    /// `http` with a host that is not loopback.
    #[error("http redirect URIs are allowed only for loopback hosts")]
    InsecureHttp,
    /// Has a fragment.
    #[error("redirect_uri must not contain a fragment")]
    Fragment,
}

impl RedirectUri {
    /// Longest accepted URI in bytes.
    pub const MAX_LEN: usize = 2048;

    /// Parses a URI.
    pub fn parse(input: &str) -> Result<Self, InvalidRedirectUri> {
        use InvalidRedirectUri::*;
        if input.len() > Self::MAX_LEN || input.bytes().any(|b| b <= b' ' || b == 0x7f || b >= 0x80)
        {
            return Err(Malformed);
        }
        if input.contains('#') {
            return Err(Fragment);
        }
        let (https, rest) = if let Some(r) = input.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = input.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(Malformed);
        };
        let scheme_len = input.len() - rest.len();
        let auth_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let authority = &rest[..auth_end];
        if authority.is_empty() || authority.contains('@') {
            return Err(Malformed);
        }
        let (host, port) = split_host_port(authority).ok_or(Malformed)?;
        if host.is_empty() {
            return Err(Malformed);
        }
        let host_lc = host.to_ascii_lowercase();
        let loopback_ip = host_lc == "127.0.0.1" || host_lc == "[::1]";
        let loopback = loopback_ip || host_lc == "localhost";
        if !https && !loopback {
            return Err(InsecureHttp);
        }
        let port_span = match port {
            Some(p) => {
                let end = scheme_len + authority.len();
                (end - p.len() - 1, end)
            }
            None => (scheme_len + authority.len(), scheme_len + authority.len()),
        };
        Ok(Self {
            raw: input.to_owned(),
            loopback_ip: loopback_ip && !https,
            port_span,
        })
    }

    /// The URI as given.
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// Whether a requested URI matches this registered one: the exact same
    /// string, except that for an `http` loopback IP literal the port may differ
    /// (native apps listen on an ephemeral port, RFC 8252 §7.3).
    pub fn matches(&self, requested: &RedirectUri) -> bool {
        if self.raw == requested.raw {
            return true;
        }
        self.loopback_ip && requested.loopback_ip && self.without_port() == requested.without_port()
    }

    fn without_port(&self) -> (&str, &str) {
        (&self.raw[..self.port_span.0], &self.raw[self.port_span.1..])
    }
}

fn split_host_port(authority: &str) -> Option<(&str, Option<&str>)> {
    let (host, port) = if authority.starts_with('[') {
        let close = authority.find(']')?;
        let host = &authority[..=close];
        match &authority[close + 1..] {
            "" => (host, None),
            p => (host, Some(p.strip_prefix(':')?)),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if let Some(p) = port {
        if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
    }
    if host.contains(':') && !host.starts_with('[') {
        return None;
    }
    Some((host, port))
}

impl fmt::Debug for RedirectUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RedirectUri({:?})", self.raw)
    }
}

impl fmt::Display for RedirectUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> RedirectUri {
        RedirectUri::parse(s).unwrap()
    }

    #[test]
    fn accepts_https_and_loopback_http() {
        for ok in [
            "https://lms.example.edu/cb",
            "https://lms.example.edu:8443/cb?x=1",
            "http://127.0.0.1:9000/cb",
            "http://[::1]/cb",
            "http://localhost:3000/callback",
        ] {
            assert!(RedirectUri::parse(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn refuses_the_rest() {
        use InvalidRedirectUri::*;
        let cases = [
            ("http://lms.example.edu/cb", InsecureHttp),
            ("http://127.0.0.1.evil.example/cb", InsecureHttp),
            ("https://lms.example.edu/cb#frag", Fragment),
            ("ftp://x/cb", Malformed),
            ("https:///cb", Malformed),
            ("https://user@lms.example.edu/cb", Malformed),
            ("https://lms.example.edu/c b", Malformed),
            ("https://lms.example.edu/cb\r\nSet-Cookie: x", Malformed),
            ("https://lms.example.edu:99999999/cb", Malformed),
            ("https://lms.example.edu:/cb", Malformed),
            ("javascript:alert(1)", Malformed),
            ("/relative", Malformed),
        ];
        for (input, err) in cases {
            assert_eq!(RedirectUri::parse(input), Err(err), "{input}");
        }
        assert!(RedirectUri::parse(&format!("https://a.example/{}", "x".repeat(2048))).is_err());
    }

    #[test]
    fn exact_match_only() {
        let reg = p("https://lms.example.edu/cb");
        assert!(reg.matches(&p("https://lms.example.edu/cb")));
        for other in [
            "https://lms.example.edu/cb/",
            "https://lms.example.edu/cb?x=1",
            "https://LMS.example.edu/cb",
            "https://lms.example.edu:443/cb",
            "https://lms.example.edu/CB",
        ] {
            assert!(!reg.matches(&p(other)), "{other}");
        }
    }

    #[test]
    fn loopback_ip_literals_may_vary_the_port() {
        let reg = p("http://127.0.0.1/cb");
        assert!(reg.matches(&p("http://127.0.0.1:51234/cb")));
        assert!(!reg.matches(&p("http://127.0.0.1:51234/other")));
        let reg6 = p("http://[::1]:8080/cb");
        assert!(reg6.matches(&p("http://[::1]:9/cb")));
        // `localhost` is exact (RFC 8252 recommends IP literals), and https is exact.
        assert!(!p("http://localhost:1/cb").matches(&p("http://localhost:2/cb")));
        assert!(!p("https://127.0.0.1:1/cb").matches(&p("https://127.0.0.1:2/cb")));
    }
}
