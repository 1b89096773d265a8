//! Database URL parsing and redaction (no password ever leaves this crate in a message).

use std::path::PathBuf;

/// What a database URL designates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// A SQLite database file.
    SqliteFile(PathBuf),
    /// A private in-memory SQLite database.
    SqliteMemory,
    /// A PostgreSQL connection URL, passed to libpq unchanged.
    Postgres(String),
}

/// Parses `sqlite://PATH`, `sqlite:PATH`, `sqlite::memory:`, `postgres://…` and `postgresql://…`.
///
/// Returns `None` for anything else (including an empty SQLite path).
pub(crate) fn parse(url: &str) -> Option<Target> {
    let url = url.trim();
    if let Some(rest) = url.strip_prefix("sqlite:") {
        let path = rest.strip_prefix("//").unwrap_or(rest);
        return match path {
            "" => None,
            ":memory:" => Some(Target::SqliteMemory),
            path => Some(Target::SqliteFile(PathBuf::from(path))),
        };
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Some(Target::Postgres(url.to_owned()));
    }
    None
}

/// The password in a URL's user-info (`scheme://user:PASSWORD@host/…`) or in a `password=` query
/// parameter, if any.
pub(crate) fn password(url: &str) -> Option<&str> {
    if let Some((_, authority)) = split_authority(url) {
        if let Some((userinfo, _)) = authority.rsplit_once('@') {
            if let Some((_, pw)) = userinfo.split_once(':') {
                if !pw.is_empty() {
                    return Some(pw);
                }
            }
        }
    }
    query_password(url)
}

/// `url` with the password (user-info or `password=` query parameter) replaced by `***`.
pub(crate) fn redact(url: &str) -> String {
    let mut out = match split_authority(url) {
        Some((start, authority)) => match authority.rsplit_once('@') {
            Some((userinfo, _)) => match userinfo.split_once(':') {
                Some((user, _)) => {
                    let pw_start = start + user.len() + 1;
                    let pw_end = start + userinfo.len();
                    format!("{}***{}", &url[..pw_start], &url[pw_end..])
                }
                None => url.to_owned(),
            },
            None => url.to_owned(),
        },
        None => url.to_owned(),
    };
    if let Some(pw) = query_password(&out) {
        let pw = pw.to_owned();
        out = out.replace(&format!("password={pw}"), "password=***");
    }
    out
}

/// Replaces every occurrence of the URL's password (if it has one of at least 4 characters) in
/// `message` by `***`. A defence in depth for driver messages; libpq does not echo passwords.
pub(crate) fn scrub(message: &str, url: &str) -> String {
    match password(url) {
        Some(pw) if pw.len() >= 4 => message.replace(pw, "***"),
        _ => message.to_owned(),
    }
}

/// The byte offset where the authority starts and the authority itself (`user:pw@host:port`).
fn split_authority(url: &str) -> Option<(usize, &str)> {
    let start = url.find("://")? + 3;
    let rest = &url[start..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    Some((start, &rest[..end]))
}

/// Whether every host the URL names is this machine's loopback (`localhost`, `127.0.0.0/8`,
/// `[::1]`), so that its connections never leave the machine. A URL that names no host (a Unix
/// socket, or `PGHOST`), or that sets `host` or `hostaddr` among its parameters, is not.
pub(crate) fn only_loopback_hosts(url: &str) -> bool {
    let Some((_, authority)) = split_authority(url) else {
        return false;
    };
    let hosts = authority
        .rsplit_once('@')
        .map_or(authority, |(_, hosts)| hosts);
    let named_elsewhere = has_parameter(url, "host") || has_parameter(url, "hostaddr");
    !hosts.is_empty() && !named_elsewhere && hosts.split(',').all(loopback_host)
}

/// Whether the URL's query sets the parameter `name` (to anything, even nothing).
pub(crate) fn has_parameter(url: &str, name: &str) -> bool {
    let query = url.split_once('?').map_or("", |(_, q)| q);
    query
        .split('&')
        .any(|pair| pair.split('=').next() == Some(name))
}

/// Whether one `host[:port]` of a URL's authority is a loopback name or address.
fn loopback_host(host: &str) -> bool {
    if let Some(bracketed) = host.strip_prefix('[') {
        return bracketed
            .split_once(']')
            .and_then(|(ip, _)| ip.parse::<std::net::Ipv6Addr>().ok())
            .is_some_and(|ip| ip.is_loopback());
    }
    let name = host.split(':').next().unwrap_or("");
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The value of a `password=` query parameter.
fn query_password(url: &str) -> Option<&str> {
    let (_, query) = url.split_once('?')?;
    let query = query.split('#').next().unwrap_or(query);
    query
        .split('&')
        .filter_map(|pair| pair.strip_prefix("password="))
        .find(|pw| !pw.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_every_host_on_this_machine_and_nothing_else() {
        for url in [
            "postgres://127.0.0.1/db",
            "postgres://u:p@127.0.0.1:5432/db?sslmode=x",
            "postgresql://localhost",
            "postgres://LOCALHOST:5433/db",
            "postgres://u@[::1]:5432/db",
            "postgres://127.0.0.2,localhost:5433/db",
        ] {
            assert!(only_loopback_hosts(url), "{url}");
        }
        for url in [
            "postgres://db.internal/db",
            "postgres://10.0.0.1/db",
            "postgres://127.0.0.1,db.internal/db",
            "postgres://[2001:db8::1]:5432/db",
            "postgres:///db",
            "postgres://u@/db",
            "postgres://127.0.0.1/db?host=db.internal",
            "postgres://localhost/db?hostaddr=10.0.0.1",
            "postgres://127.0.0.1.evil.example/db",
            "postgres://localhost.evil.example/db",
            "host=127.0.0.1 dbname=db",
        ] {
            assert!(!only_loopback_hosts(url), "{url}");
        }
    }

    #[test]
    fn parses_sqlite_forms() {
        assert_eq!(
            parse("sqlite://./data/m.db"),
            Some(Target::SqliteFile(PathBuf::from("./data/m.db")))
        );
        assert_eq!(
            parse("sqlite:///var/lib/m.db"),
            Some(Target::SqliteFile(PathBuf::from("/var/lib/m.db")))
        );
        assert_eq!(
            parse("sqlite:m.db"),
            Some(Target::SqliteFile(PathBuf::from("m.db")))
        );
        assert_eq!(parse("sqlite::memory:"), Some(Target::SqliteMemory));
        assert_eq!(parse("sqlite://:memory:"), Some(Target::SqliteMemory));
        assert_eq!(parse("sqlite://"), None);
        assert_eq!(parse("sqlite:"), None);
    }

    #[test]
    fn parses_postgres_forms() {
        for url in [
            "postgres://u@h/db",
            "postgresql://u:p@h:5433/db?sslmode=disable",
        ] {
            assert_eq!(parse(url), Some(Target::Postgres(url.to_owned())));
        }
        assert_eq!(parse("mysql://u@h/db"), None);
        assert_eq!(parse("/tmp/x.db"), None);
        assert_eq!(parse(""), None);
    }

    #[test]
    fn redacts_passwords() {
        assert_eq!(
            redact("postgres://alice:s3cret@db:5432/m"),
            "postgres://alice:***@db:5432/m"
        );
        assert_eq!(redact("postgres://alice@db/m"), "postgres://alice@db/m");
        assert_eq!(
            redact("postgresql://db/m?user=a&password=s3cret&sslmode=require"),
            "postgresql://db/m?user=a&password=***&sslmode=require"
        );
        assert_eq!(redact("mysql://a:b@c/d"), "mysql://a:***@c/d");
        assert_eq!(redact("nonsense"), "nonsense");
        assert_eq!(password("postgres://a:pw@h/d"), Some("pw"));
        assert_eq!(password("postgres://a@h/d?password=x"), Some("x"));
        assert_eq!(password("postgres://a@h/d"), None);
        assert_eq!(
            scrub("failed for s3cret", "postgres://a:s3cret@h/d"),
            "failed for ***"
        );
    }
}
