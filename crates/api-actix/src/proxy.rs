//! Who sent a request: the client's address and scheme, believing forwarded headers only
//! from the configured proxies (`trusted_proxies`, DECISIONS.md §1; SECURITY-CHECKLIST.md
//! line 19; RFC 9700 §4.13).
//!
//! - When the TCP peer is **not** a trusted proxy, `Forwarded`, `X-Forwarded-For`,
//!   `X-Forwarded-Proto` (and `X-Real-IP`, never read at all) are ignored: the client is the
//!   peer, and the scheme is that of the connection itself.
//! - When the peer **is** a trusted proxy, `Forwarded` (RFC 7239) is read if present, else
//!   `X-Forwarded-For` and `X-Forwarded-Proto`. Several lines of one header count as one
//!   comma-separated list, in order.
//! - The address list is walked **from the right**: the last entry was written by the peer,
//!   each entry that is itself a trusted proxy vouches for the entry to its left, and the
//!   first entry that is not a trusted proxy is the client. What a client writes into the
//!   header itself stays to the left of what its proxy appends, so it is never reached. When
//!   every entry is a trusted proxy, the left-most one is the client.
//! - An entry that is not an IP address (`unknown`, an obfuscated identifier such as
//!   `_hidden`, or garbage) stops the walk: the forwarded addresses are ignored and the client
//!   is the peer. Addresses may carry a port (`192.0.2.1:4711`, `"[2001:db8::1]:4711"`),
//!   which is dropped; IPv4-mapped IPv6 addresses count as IPv4.
//! - The scheme: the `proto` of the `Forwarded` element that names the client (the right-most
//!   element's when the walk stopped at the peer), or the right-most `X-Forwarded-Proto`
//!   value. Only `http` and `https` count; anything else leaves the connection's own scheme.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use actix_web::HttpRequest;
use actix_web::http::header::HeaderMap;

/// `Forwarded` (RFC 7239).
const FORWARDED: &str = "forwarded";
/// `X-Forwarded-For`.
const X_FORWARDED_FOR: &str = "x-forwarded-for";
/// `X-Forwarded-Proto`.
const X_FORWARDED_PROTO: &str = "x-forwarded-proto";

/// The proxies whose forwarded headers (and, in `header` sign-in mode, whose SSO header)
/// are believed. The default trusts nobody.
#[derive(Clone, Default)]
pub struct TrustedProxies(Option<Arc<dyn Fn(IpAddr) -> bool + Send + Sync>>);

impl TrustedProxies {
    /// Trusts nobody: every forwarded header is ignored.
    pub fn none() -> Self {
        Self(None)
    }

    /// Trusts the peers for which `is_trusted` holds (the composition root passes the
    /// configured networks). It is asked about canonical addresses only: an IPv4 peer seen
    /// as `::ffff:a.b.c.d` is asked about as `a.b.c.d`.
    pub fn matching(is_trusted: impl Fn(IpAddr) -> bool + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(is_trusted)))
    }

    /// Whether `ip` is a trusted proxy.
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.0.as_ref().is_some_and(|f| f(ip.to_canonical()))
    }
}

impl fmt::Debug for TrustedProxies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrustedProxies")
            .field("configured", &self.0.is_some())
            .finish()
    }
}

/// Who is on the other end of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientInfo {
    /// The client's address: the TCP peer, or what a trusted proxy says.
    pub ip: IpAddr,
    /// Whether the client reached the service over HTTPS (the connection's own scheme, or
    /// what a trusted proxy says).
    pub https: bool,
    /// Whether the TCP peer is a trusted proxy (the SSO header is believed only then).
    pub via_trusted_proxy: bool,
}

impl ClientInfo {
    /// Resolves the client of `req` with the `trusted` proxies. A request without a peer
    /// address (not over TCP) counts as `0.0.0.0`, never trusted.
    pub fn of(req: &HttpRequest, trusted: &TrustedProxies) -> Self {
        Self::resolve(
            req.peer_addr().map(|a| a.ip()),
            req.app_config().secure(),
            req.headers(),
            trusted,
        )
    }

    /// The client of a request that came from `peer` over a connection that is TLS or not,
    /// with `headers`, given the `trusted` proxies (the rules of the module documentation).
    pub fn resolve(
        peer: Option<IpAddr>,
        tls: bool,
        headers: &HeaderMap,
        trusted: &TrustedProxies,
    ) -> Self {
        let peer = peer.map(|ip| ip.to_canonical());
        let Some(proxy) = peer.filter(|ip| trusted.contains(*ip)) else {
            return Self {
                ip: peer.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
                https: tls,
                via_trusted_proxy: false,
            };
        };
        let (ip, https) = if headers.contains_key(FORWARDED) {
            let hops = forwarded_hops(headers);
            walk(&hops, trusted)
        } else {
            let hops = x_forwarded_for_hops(headers);
            (walk(&hops, trusted).0, x_forwarded_proto(headers))
        };
        Self {
            ip: ip.unwrap_or(proxy),
            https: https.unwrap_or(tls),
            via_trusted_proxy: true,
        }
    }
}

/// One entry of a forwarding list: who the proxy that wrote it received the request from
/// (`None` when it is not an IP address) and, for `Forwarded`, the scheme it received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hop {
    node: Option<IpAddr>,
    https: Option<bool>,
}

impl Hop {
    /// An entry that says nothing usable.
    const UNUSABLE: Self = Self {
        node: None,
        https: None,
    };
}

/// Walks `hops` (left to right as in the header) from the right: the client's address and
/// scheme, `None` for what the list does not establish.
fn walk(hops: &[Hop], trusted: &TrustedProxies) -> (Option<IpAddr>, Option<bool>) {
    let rightmost_scheme = hops.last().and_then(|h| h.https);
    for hop in hops.iter().rev() {
        match hop.node {
            Some(ip) if trusted.contains(ip) => {}
            Some(ip) => return (Some(ip), hop.https),
            None => return (None, rightmost_scheme),
        }
    }
    match hops.first() {
        Some(leftmost) => (leftmost.node, leftmost.https),
        None => (None, None),
    }
}

/// The values of every line of header `name`, joined by commas; `None` when one of them
/// is not visible ASCII.
fn joined(headers: &HeaderMap, name: &str) -> Option<String> {
    let mut out = String::new();
    for value in headers.get_all(name) {
        if !out.is_empty() {
            out.push(',');
        }
        out.push_str(value.to_str().ok()?);
    }
    Some(out)
}

/// The entries of `X-Forwarded-For`: addresses, optionally with a port, separated by commas
/// (empty entries are skipped, RFC 9110 §5.6.1). An unreadable header is one unusable entry.
fn x_forwarded_for_hops(headers: &HeaderMap) -> Vec<Hop> {
    let Some(list) = joined(headers, X_FORWARDED_FOR) else {
        return vec![Hop::UNUSABLE];
    };
    list.split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(|entry| Hop {
            node: parse_node(entry),
            https: None,
        })
        .collect()
}

/// The right-most `X-Forwarded-Proto` value, when it is `http` or `https`.
fn x_forwarded_proto(headers: &HeaderMap) -> Option<bool> {
    let list = joined(headers, X_FORWARDED_PROTO)?;
    let last = list.rsplit(',').map(str::trim).find(|v| !v.is_empty())?;
    parse_scheme(last)
}

/// The elements of `Forwarded` (RFC 7239 §4). An element that does not parse, and the
/// whole header when its quoting is broken, are unusable entries.
fn forwarded_hops(headers: &HeaderMap) -> Vec<Hop> {
    let Some(list) = joined(headers, FORWARDED) else {
        return vec![Hop::UNUSABLE];
    };
    let Some(elements) = split_outside_quotes(&list, ',') else {
        return vec![Hop::UNUSABLE];
    };
    elements
        .into_iter()
        .map(str::trim)
        .filter(|element| !element.is_empty())
        .map(|element| parse_element(element).unwrap_or(Hop::UNUSABLE))
        .collect()
}

/// One `Forwarded` element: `pair *( ";" pair )`, each `token=value` with a token or a
/// quoted-string as value. `for` and `proto` are read (each at most once, §4); other
/// parameters (`by`, `host`, extensions) are ignored. `None` when it does not parse.
fn parse_element(element: &str) -> Option<Hop> {
    let mut node = None;
    let mut scheme = None;
    for pair in split_outside_quotes(element, ';')? {
        let pair = pair.trim();
        if pair.is_empty() {
            continue;
        }
        let (name, value) = pair.split_once('=')?;
        if !is_token(name) {
            return None;
        }
        let value = unquote(value)?;
        let slot = match name.to_ascii_lowercase().as_str() {
            "for" => &mut node,
            "proto" => &mut scheme,
            _ => continue,
        };
        if slot.replace(value).is_some() {
            return None;
        }
    }
    Some(Hop {
        node: node.as_deref().and_then(parse_node),
        https: scheme.as_deref().and_then(parse_scheme),
    })
}

/// Splits `text` on `separator` where it is outside a quoted-string (a backslash escapes
/// the next character inside one); `None` when a quoted-string is not closed.
fn split_outside_quotes(text: &str, separator: char) -> Option<Vec<&str>> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if escaped {
            escaped = false;
        } else if quoted && c == '\\' {
            escaped = true;
        } else if c == '"' {
            quoted = !quoted;
        } else if c == separator && !quoted {
            parts.push(text.get(start..i)?);
            start = i + c.len_utf8();
        }
    }
    if quoted || escaped {
        return None;
    }
    parts.push(text.get(start..)?);
    Some(parts)
}

/// A parameter value: a token as is, or a quoted-string without its quotes and escapes.
fn unquote(value: &str) -> Option<String> {
    let Some(inner) = value
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
    else {
        return is_token(value).then(|| value.to_owned());
    };
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?),
            '"' => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

/// An RFC 9110 token: one or more `tchar`s.
fn is_token(text: &str) -> bool {
    !text.is_empty()
        && text.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'!' | b'#'
                        | b'$'
                        | b'%'
                        | b'&'
                        | b'\''
                        | b'*'
                        | b'+'
                        | b'-'
                        | b'.'
                        | b'^'
                        | b'_'
                        | b'`'
                        | b'|'
                        | b'~'
                )
        })
}

/// A node (RFC 7239 §6): `IPv4[:port]`, `"[IPv6]"[:port]`, or a bare IPv6 address as some
/// proxies write in `X-Forwarded-For`. `None` for `unknown`, an obfuscated identifier
/// (`_...`) or anything else.
fn parse_node(node: &str) -> Option<IpAddr> {
    if let Ok(ip) = node.parse::<IpAddr>() {
        return Some(ip.to_canonical());
    }
    if let Some(rest) = node.strip_prefix('[') {
        let (addr, after) = rest.split_once(']')?;
        let ip = addr.parse::<Ipv6Addr>().ok()?;
        let port_ok = after.is_empty() || after.strip_prefix(':').is_some_and(is_port);
        return port_ok.then(|| IpAddr::V6(ip).to_canonical());
    }
    let (addr, port) = node.rsplit_once(':')?;
    let ip = addr.parse::<Ipv4Addr>().ok()?;
    is_port(port).then_some(IpAddr::V4(ip))
}

/// A node's port: a number, or an obfuscated port (`_` and letters, digits, `.`, `_`, `-`).
fn is_port(port: &str) -> bool {
    match port.strip_prefix('_') {
        Some(obfuscated) => {
            !obfuscated.is_empty()
                && obfuscated
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        }
        None => port.bytes().all(|b| b.is_ascii_digit()) && port.parse::<u16>().is_ok(),
    }
}

/// `https` → true, `http` → false (any case); anything else says nothing.
fn parse_scheme(scheme: &str) -> Option<bool> {
    if scheme.eq_ignore_ascii_case("https") {
        Some(true)
    } else if scheme.eq_ignore_ascii_case("http") {
        Some(false)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use actix_web::http::header::{HeaderName, HeaderValue};

    use super::*;

    const PEER: &str = "10.0.0.1";
    const CLIENT: &str = "203.0.113.7";

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    /// Trusts 10.0.0.0/8 and fd00::/8.
    fn proxies() -> TrustedProxies {
        TrustedProxies::matching(|ip| match ip {
            IpAddr::V4(v4) => v4.octets()[0] == 10,
            IpAddr::V6(v6) => v6.octets()[0] == 0xfd,
        })
    }

    fn headers(list: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in list {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    fn client(peer: &str, list: &[(&str, &str)]) -> ClientInfo {
        ClientInfo::resolve(Some(ip(peer)), false, &headers(list), &proxies())
    }

    fn client_ip(peer: &str, list: &[(&str, &str)]) -> IpAddr {
        client(peer, list).ip
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_says() {
        let forged = [
            ("forwarded", "for=198.51.100.1;proto=https"),
            ("x-forwarded-for", "198.51.100.2"),
            ("x-forwarded-proto", "https"),
            ("x-real-ip", "198.51.100.3"),
        ];
        let c = client(CLIENT, &forged);
        assert_eq!(
            c,
            ClientInfo {
                ip: ip(CLIENT),
                https: false,
                via_trusted_proxy: false,
            }
        );
        let nobody = ClientInfo::resolve(
            Some(ip(PEER)),
            true,
            &headers(&forged),
            &TrustedProxies::default(),
        );
        assert_eq!(nobody.ip, ip(PEER), "the default trusts nobody");
        assert!(nobody.https, "the connection's own scheme");
        assert!(!nobody.via_trusted_proxy);
        let none = ClientInfo::resolve(None, false, &headers(&forged), &proxies());
        assert_eq!(none.ip, ip("0.0.0.0"));
        assert!(!none.via_trusted_proxy);
    }

    #[test]
    fn a_trusted_peer_without_forwarded_headers_is_the_client() {
        let c = client(PEER, &[]);
        assert_eq!(c.ip, ip(PEER));
        assert!(c.via_trusted_proxy);
        assert!(!c.https);
        assert!(ClientInfo::resolve(Some(ip(PEER)), true, &HeaderMap::new(), &proxies()).https);
    }

    #[test]
    fn x_forwarded_for_is_walked_from_the_right() {
        let cases: &[(&str, &str)] = &[
            ("203.0.113.7", CLIENT),
            ("203.0.113.7, 10.0.0.2", CLIENT),
            ("203.0.113.7,10.0.0.2,10.9.9.9", CLIENT),
            // A client's forged entries stay to the left of its real address.
            ("1.2.3.4, 203.0.113.7", CLIENT),
            ("1.2.3.4, 10.0.0.5, 203.0.113.7", CLIENT),
            // Every entry a proxy: the left-most is the client.
            ("10.0.0.3, 10.0.0.2", "10.0.0.3"),
            // Empty entries are skipped.
            (" , 203.0.113.7 ,, ", CLIENT),
            // Ports are dropped.
            ("203.0.113.7:4711", CLIENT),
            ("[2001:db8::1]:4711", "2001:db8::1"),
            ("[2001:db8::1]", "2001:db8::1"),
            ("2001:db8::1", "2001:db8::1"),
            ("::ffff:203.0.113.7", CLIENT),
            ("203.0.113.7, fd00::1", CLIENT),
        ];
        for (xff, want) in cases {
            assert_eq!(
                client_ip(PEER, &[("x-forwarded-for", xff)]),
                ip(want),
                "X-Forwarded-For: {xff}"
            );
        }
    }

    #[test]
    fn several_header_lines_are_one_list() {
        let got = client_ip(
            PEER,
            &[
                ("x-forwarded-for", "1.2.3.4"),
                ("x-forwarded-for", "203.0.113.7, 10.0.0.2"),
            ],
        );
        assert_eq!(got, ip(CLIENT));
        let got = client_ip(
            PEER,
            &[
                ("forwarded", "for=1.2.3.4"),
                ("forwarded", "for=203.0.113.7"),
            ],
        );
        assert_eq!(got, ip(CLIENT));
    }

    #[test]
    fn unusable_entries_fall_back_to_the_peer() {
        for xff in [
            "garbage",
            "unknown",
            "_hidden",
            "203.0.113.7, garbage",
            "203.0.113.7, unknown, 10.0.0.2",
            "203.0.113.7:99999",
            "203.0.113.7:",
            "[2001:db8::1",
            "[203.0.113.7]",
            "2001:db8::1:4711:x",
            "203.0.113.7 10.0.0.2",
        ] {
            assert_eq!(
                client_ip(PEER, &[("x-forwarded-for", xff)]),
                ip(PEER),
                "X-Forwarded-For: {xff}"
            );
        }
        // Garbage to the left of the client is never reached.
        assert_eq!(
            client_ip(PEER, &[("x-forwarded-for", "garbage, 203.0.113.7")]),
            ip(CLIENT)
        );
        // A header that is not visible ASCII.
        let mut map = HeaderMap::new();
        map.insert(
            HeaderName::from_static(X_FORWARDED_FOR),
            HeaderValue::from_bytes(b"203.0.113.7\xff").unwrap(),
        );
        let c = ClientInfo::resolve(Some(ip(PEER)), false, &map, &proxies());
        assert_eq!(c.ip, ip(PEER));
    }

    #[test]
    fn forwarded_elements_are_parsed_per_rfc_7239() {
        let cases: &[(&str, &str)] = &[
            ("for=203.0.113.7", CLIENT),
            ("For=203.0.113.7", CLIENT),
            ("for=\"203.0.113.7:4711\"", CLIENT),
            ("for=\"[2001:db8:cafe::17]:4711\"", "2001:db8:cafe::17"),
            ("for=\"[2001:db8:cafe::17]\"", "2001:db8:cafe::17"),
            ("for=\"203.0.113.7:_port\"", CLIENT),
            ("for=203.0.113.7;proto=https;by=10.0.0.2", CLIENT),
            ("by=10.0.0.2; for=203.0.113.7", CLIENT),
            ("for=203.0.113.7;host=\"a;b,c\"", CLIENT),
            ("for=1.2.3.4, for=203.0.113.7", CLIENT),
            ("for=203.0.113.7, for=10.0.0.2;proto=http", CLIENT),
            ("for=\"\\2\\0\\3.0.113.7\"", CLIENT),
            // Unusable: the peer.
            ("for=unknown", PEER),
            ("for=_hidden", PEER),
            ("for=\"_hidden:1\"", PEER),
            ("for=203.0.113.7:4711", PEER),
            ("for=[2001:db8::1]", PEER),
            ("for=garbage", PEER),
            ("proto=https", PEER),
            ("for=203.0.113.7;for=1.2.3.4", PEER),
            ("for=\"203.0.113.7", PEER),
            ("for 203.0.113.7", PEER),
            ("=203.0.113.7", PEER),
            ("for=203.0.113.7, for=unknown", PEER),
            ("", PEER),
        ];
        for (forwarded, want) in cases {
            assert_eq!(
                client_ip(PEER, &[("forwarded", forwarded)]),
                ip(want),
                "Forwarded: {forwarded}"
            );
        }
    }

    #[test]
    fn forwarded_wins_over_x_forwarded_for() {
        let got = client(
            PEER,
            &[
                ("forwarded", "for=203.0.113.7;proto=https"),
                ("x-forwarded-for", "198.51.100.1"),
                ("x-forwarded-proto", "http"),
            ],
        );
        assert_eq!(got.ip, ip(CLIENT));
        assert!(got.https);
    }

    #[test]
    fn the_scheme_comes_from_the_element_naming_the_client() {
        let scheme = |list: &[(&str, &str)]| client(PEER, list).https;
        assert!(scheme(&[("forwarded", "for=203.0.113.7;proto=https")]));
        assert!(scheme(&[(
            "forwarded",
            "for=203.0.113.7;PROTO=HTTPS, for=10.0.0.2;proto=http"
        )]));
        assert!(!scheme(&[("forwarded", "for=203.0.113.7;proto=http")]));
        assert!(scheme(&[("forwarded", "for=unknown;proto=https")]));
        assert!(!scheme(&[("forwarded", "for=203.0.113.7;proto=gopher")]));
        assert!(scheme(&[("x-forwarded-proto", "https")]));
        assert!(scheme(&[
            ("x-forwarded-for", CLIENT),
            ("x-forwarded-proto", "https")
        ]));
        assert!(scheme(&[("x-forwarded-proto", "http, https")]));
        assert!(!scheme(&[("x-forwarded-proto", "https, http")]));
        assert!(!scheme(&[("x-forwarded-proto", "ftp")]));
        let tls = |list: &[(&str, &str)]| {
            ClientInfo::resolve(Some(ip(PEER)), true, &headers(list), &proxies()).https
        };
        assert!(
            tls(&[("x-forwarded-proto", "nonsense")]),
            "falls back to the connection"
        );
        assert!(!tls(&[("x-forwarded-proto", "http")]));
    }

    #[test]
    fn ipv4_mapped_peers_are_matched_as_ipv4() {
        let c = client("::ffff:10.0.0.1", &[("x-forwarded-for", CLIENT)]);
        assert!(c.via_trusted_proxy);
        assert_eq!(c.ip, ip(CLIENT));
        let v6 = client("fd00::1", &[("x-forwarded-for", "2001:db8::7")]);
        assert_eq!(v6.ip, ip("2001:db8::7"));
    }

    #[test]
    fn quoted_strings_split_and_unquote() {
        assert_eq!(
            split_outside_quotes(r#"a="x,y",b"#, ','),
            Some(vec![r#"a="x,y""#, "b"])
        );
        assert_eq!(
            split_outside_quotes(r#"a="x\",y""#, ','),
            Some(vec![r#"a="x\",y""#])
        );
        assert_eq!(split_outside_quotes(r#"a="x"#, ','), None);
        assert_eq!(unquote(r#""a\"b""#).as_deref(), Some("a\"b"));
        assert_eq!(unquote("tok").as_deref(), Some("tok"));
        assert_eq!(unquote("a b"), None);
        assert_eq!(unquote(r#""a"b""#), None);
    }
}
