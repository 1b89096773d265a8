//! Values that must never reach a log line or a `Debug` dump: secrets use the
//! domain's [`Secret`] (redacted `Debug`, no `Display`); URLs lose their password.

pub use medialib_domain::Secret;

/// Replaces the password of a URL's user-info and any `password=` query
/// parameter with `***`; the rest of the URL is kept so logs stay useful.
pub fn redact_url(url: &str) -> String {
    let (before_query, query) = match url.split_once('?') {
        Some((head, query)) => (head, Some(query)),
        None => (url, None),
    };
    let mut out = match before_query.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let (authority, path) = rest.split_at(authority_end);
            let authority = match authority.rsplit_once('@') {
                Some((userinfo, host)) => match userinfo.split_once(':') {
                    Some((user, _password)) => format!("{user}:***@{host}"),
                    None => authority.to_owned(),
                },
                None => authority.to_owned(),
            };
            format!("{scheme}://{authority}{path}")
        }
        None => before_query.to_owned(),
    };
    if let Some(query) = query {
        let redacted: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                _ => pair.to_owned(),
            })
            .collect();
        out.push('?');
        out.push_str(&redacted.join("&"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_debug_is_redacted() {
        let secret = Secret::new("hunter2");
        assert!(!format!("{secret:?}").contains("hunter2"));
        assert_eq!(secret.expose(), "hunter2");
    }

    #[test]
    fn url_passwords_are_redacted() {
        for (url, want) in [
            ("postgres://u:pw@h:5432/db", "postgres://u:***@h:5432/db"),
            ("postgres://u:p@ss@h/db", "postgres://u:***@h/db"),
            ("postgres://u@h/db", "postgres://u@h/db"),
            (
                "postgres://h/db?password=pw&sslmode=require",
                "postgres://h/db?password=***&sslmode=require",
            ),
            ("sqlite://./data/x.db", "sqlite://./data/x.db"),
            ("sqlite::memory:", "sqlite::memory:"),
        ] {
            assert_eq!(redact_url(url), want, "{url}");
        }
    }
}
