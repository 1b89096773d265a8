//! The settings' unit tests: layering, defaults, and one line per problem.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use super::*;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn toml_file(text: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(text.as_bytes()).unwrap();
    file
}

#[test]
fn defaults_match_the_operator_contract() {
    let s = SettingsLoader::new().load().unwrap();
    assert_eq!(
        s.database_url.expose(),
        "sqlite://./medialib-data/medialib.db"
    );
    assert_eq!(s.bind.to_string(), "127.0.0.1:8080");
    assert_eq!(s.base_url_for(s.bind).as_str(), "http://127.0.0.1:8080");
    assert_eq!(s.access_token_ttl.seconds(), 3600);
    assert_eq!(s.refresh_token_ttl.seconds(), 2_592_000);
    assert_eq!(s.code_ttl.seconds(), 60);
    assert_eq!(s.session_ttl.seconds(), 28_800);
    assert_eq!(s.purge_interval.seconds(), 300);
    assert_eq!(s.rate_limit_token.get(), 300);
    assert_eq!(s.rate_limit_login.get(), 30);
    assert_eq!(s.sso, Sso::Local);
    assert_eq!(s.tls, None);
    assert!(s.cors_origins.is_empty() && s.trusted_proxies.is_empty());
    assert_eq!(s.log, None);
    assert_eq!(
        s.database_url.kind(),
        DatabaseKind::SqliteFile(PathBuf::from("./medialib-data/medialib.db"))
    );
}

#[test]
fn file_is_overridden_by_env_which_is_overridden_by_flags() {
    let file = toml_file(
        "bind = \"127.0.0.1:1000\"\ncode_ttl = 30\naccess_token_ttl = 100\nrefresh_token_ttl = 200\ncors_origins = [\"https://a.example\", \"https://b.example\"]\n",
    );
    let s = SettingsLoader::new()
        .file(file.path())
        .env_vars(env(&[
            ("MEDIALIB_BIND", "127.0.0.1:2000"),
            ("MEDIALIB_ACCESS_TOKEN_TTL", "101"),
            ("OTHER_BIND", "127.0.0.1:9"),
            ("MEDIALIB_UNRELATED", "x"),
        ]))
        .set("bind", "127.0.0.1:3000")
        .load()
        .unwrap();
    assert_eq!(s.bind.port(), 3000, "flag wins over env and file");
    assert_eq!(s.access_token_ttl.seconds(), 101, "env wins over file");
    assert_eq!(s.code_ttl.seconds(), 30, "file wins over default");
    assert_eq!(s.refresh_token_ttl.seconds(), 200);
    assert_eq!(
        s.cors_origins,
        vec!["https://a.example", "https://b.example"]
    );
    assert_eq!(s.base_url_for(s.bind).as_str(), "http://127.0.0.1:3000");
}

#[test]
fn env_names_must_match_exactly() {
    let s = SettingsLoader::new()
        .env_vars(env(&[("MEDIALIB_bind", "127.0.0.1:1")]))
        .load()
        .unwrap();
    assert_eq!(s.bind.port(), 8080);
}

#[test]
fn an_empty_value_falls_back_to_the_default() {
    let s = SettingsLoader::new()
        .env_vars(env(&[("MEDIALIB_CODE_TTL", ""), ("MEDIALIB_LOG", " ")]))
        .load()
        .unwrap();
    assert_eq!(s.code_ttl.seconds(), 60);
    assert_eq!(s.log, None);
}

#[test]
fn every_problem_is_reported_on_its_own_line() {
    let err = SettingsLoader::new()
        .env_vars(env(&[
            ("MEDIALIB_ACCESS_TOKEN_TTL", "abc"),
            ("MEDIALIB_REFRESH_TOKEN_TTL", "0"),
            ("MEDIALIB_CODE_TTL", "-5"),
            ("MEDIALIB_BIND", "localhost"),
            ("MEDIALIB_TLS_CERT", "/nonexistent/cert.pem"),
            ("MEDIALIB_SSO", "oidc"),
            ("MEDIALIB_DATABASE_URL", "mysql://u:secretpw@h/db"),
            ("MEDIALIB_CORS_ORIGINS", "https://ok.example,ftp://bad"),
            ("MEDIALIB_TRUSTED_PROXIES", "10.0.0.0/33"),
            ("MEDIALIB_LOG_FORMAT", "xml"),
        ]))
        .load()
        .unwrap_err();
    let text = err.to_string();
    let lines: Vec<&str> = text.lines().collect();
    for needle in [
        "access_token_ttl (from MEDIALIB_ACCESS_TOKEN_TTL): `abc` is not a positive integer",
        "refresh_token_ttl (from MEDIALIB_REFRESH_TOKEN_TTL): `0` is not a positive integer",
        "code_ttl (from MEDIALIB_CODE_TTL): `-5` is not a positive integer",
        "bind (from MEDIALIB_BIND): `localhost` is not an IP address with a port",
        "tls_cert (from MEDIALIB_TLS_CERT): cannot read /nonexistent/cert.pem",
        "sso = oidc needs oidc_issuer",
        "sso = oidc needs oidc_client_id",
        "database_url (from MEDIALIB_DATABASE_URL): `mysql://u:***@h/db` is not a supported database URL",
        "cors_origins (from MEDIALIB_CORS_ORIGINS): `ftp://bad` is not an origin",
        "trusted_proxies (from MEDIALIB_TRUSTED_PROXIES): `10.0.0.0/33` is not an IP address",
        "log_format (from MEDIALIB_LOG_FORMAT): `xml` is not one of",
    ] {
        assert_eq!(
            lines.iter().filter(|l| l.contains(needle)).count(),
            1,
            "want one line with {needle:?} in:\n{text}"
        );
    }
    assert_eq!(lines.len(), err.problems().len());
    assert!(!text.contains("secretpw"), "passwords never appear: {text}");
}

#[test]
fn housekeeping_and_rate_limits_are_configurable() {
    let file = toml_file("purge_interval = 60\nrate_limit_token = 10\n");
    let s = SettingsLoader::new()
        .file(file.path())
        .env_vars(env(&[
            ("MEDIALIB_RATE_LIMIT_LOGIN", "0"),
            ("MEDIALIB_SESSION_TTL", "900"),
        ]))
        .load()
        .unwrap();
    assert_eq!(s.purge_interval.seconds(), 60);
    assert_eq!(s.rate_limit_token.get(), 10);
    assert_eq!(s.rate_limit_login.get(), 0, "0 turns the limit off");
    assert_eq!(s.session_ttl.seconds(), 900);

    let err = SettingsLoader::new()
        .env_vars(env(&[
            ("MEDIALIB_PURGE_INTERVAL", "0"),
            ("MEDIALIB_RATE_LIMIT_TOKEN", "-1"),
            ("MEDIALIB_RATE_LIMIT_LOGIN", "2000000"),
            ("MEDIALIB_SESSION_TTL", "forever"),
        ]))
        .load()
        .unwrap_err();
    assert_eq!(
        err.problems(),
        [
            "session_ttl (from MEDIALIB_SESSION_TTL): `forever` is not a positive integer number of seconds",
            "purge_interval (from MEDIALIB_PURGE_INTERVAL): `0` is not a positive integer number of seconds",
            "rate_limit_token (from MEDIALIB_RATE_LIMIT_TOKEN): `-1` is not a number of requests per minute (a non-negative integer; 0 turns the limit off)",
            "rate_limit_login (from MEDIALIB_RATE_LIMIT_LOGIN): `2000000` is more than 1000000 requests per minute (0 turns the limit off)",
        ]
    );
}

#[test]
fn database_waits_and_load_shedding_are_configurable() {
    let d = SettingsLoader::new().load().unwrap();
    assert_eq!(
        (
            d.db_pool_size.get(),
            d.db_timeout.seconds(),
            d.max_in_flight.get(),
            d.shed_queue_delay
        ),
        (8, 5, 4096, 200)
    );
    let s = SettingsLoader::new()
        .file(toml_file("db_pool_size = 16\n").path())
        .env_vars(env(&[
            ("MEDIALIB_DB_TIMEOUT", "2"),
            ("MEDIALIB_MAX_IN_FLIGHT", "64"),
            ("MEDIALIB_SHED_QUEUE_DELAY", "0"),
        ]))
        .load()
        .unwrap();
    assert_eq!(
        (
            s.db_pool_size.get(),
            s.db_timeout.seconds(),
            s.max_in_flight.get(),
            s.shed_queue_delay
        ),
        (16, 2, 64, 0)
    );
    let err = SettingsLoader::new()
        .env_vars(env(&[
            ("MEDIALIB_DB_POOL_SIZE", "0"),
            ("MEDIALIB_DB_TIMEOUT", "301"),
            ("MEDIALIB_MAX_IN_FLIGHT", "lots"),
            ("MEDIALIB_SHED_QUEUE_DELAY", "1s"),
        ]))
        .load()
        .unwrap_err();
    assert_eq!(
        err.problems(),
        [
            "db_pool_size (from MEDIALIB_DB_POOL_SIZE): `0` is not an integer from 1 to 1000",
            "db_timeout (from MEDIALIB_DB_TIMEOUT): `301` seconds is more than 300: clients would wait that long for a 503",
            "max_in_flight (from MEDIALIB_MAX_IN_FLIGHT): `lots` is not an integer from 1 to 100000",
            "shed_queue_delay (from MEDIALIB_SHED_QUEUE_DELAY): `1s` is not a number of milliseconds from 0 to 60000",
        ]
    );
}

#[test]
fn tls_needs_both_files() {
    let cert = toml_file("cert");
    let cert_path = cert.path().to_str().unwrap();
    let err = SettingsLoader::new()
        .set("tls_cert", cert_path)
        .load()
        .unwrap_err();
    assert_eq!(
        err.problems(),
        ["tls_cert (from --tls-cert): tls_cert is set but tls_key is not: HTTPS needs both"]
    );
    let key = toml_file("key");
    let s = SettingsLoader::new()
        .set("tls_cert", cert_path)
        .set("tls_key", key.path().to_str().unwrap())
        .load()
        .unwrap();
    assert_eq!(s.tls.unwrap().key, key.path());
}

#[test]
fn the_base_url_defaults_to_https_under_tls() {
    let (cert, key) = (toml_file("cert"), toml_file("key"));
    let s = SettingsLoader::new()
        .set("tls_cert", cert.path().to_str().unwrap())
        .set("tls_key", key.path().to_str().unwrap())
        .set("bind", "127.0.0.1:8443")
        .load()
        .unwrap();
    assert_eq!(s.base_url_for(s.bind).as_str(), "https://127.0.0.1:8443");
    let bound = "127.0.0.1:40000".parse().unwrap();
    assert_eq!(s.base_url_for(bound).as_str(), "https://127.0.0.1:40000");
}

#[test]
fn loopback_binds_may_serve_plain_http() {
    for bind in [
        "127.0.0.1:8080",
        "127.8.9.10:1",
        "[::1]:8080",
        "[::ffff:127.0.0.1]:80",
    ] {
        let s = SettingsLoader::new().set("bind", bind).load();
        assert!(s.is_ok(), "{bind}: {:?}", s.err());
    }
}

#[test]
fn a_non_loopback_bind_without_tls_refuses_to_start() {
    for bind in [
        "0.0.0.0:8080",
        "[::]:8080",
        "192.0.2.10:80",
        "[2001:db8::1]:443",
    ] {
        let err = SettingsLoader::new()
            .env_vars(env(&[("MEDIALIB_BIND", bind)]))
            .load()
            .unwrap_err();
        assert_eq!(err.problems().len(), 1, "one clear message: {err}");
        let problem = &err.problems()[0];
        assert!(
            problem.starts_with(&format!(
                "bind (from MEDIALIB_BIND): {} is reachable from other machines, and medialib would answer it in plain HTTP: set tls_cert and tls_key",
                bind.parse::<SocketAddr>().unwrap()
            )),
            "{problem}"
        );
        assert!(
            problem.contains("or set base_url to the https:// URL"),
            "{problem}"
        );
    }
    // An http:// base URL declares no TLS anywhere: still refused.
    let err = SettingsLoader::new()
        .set("bind", "0.0.0.0:8080")
        .set("base_url", "http://media.example.edu")
        .load()
        .unwrap_err();
    assert!(err.problems()[0].starts_with("bind (from --bind)"), "{err}");
}

#[test]
fn a_non_loopback_bind_is_allowed_with_tls_or_behind_an_https_proxy() {
    let (cert, key) = (toml_file("cert"), toml_file("key"));
    let s = SettingsLoader::new()
        .set("bind", "0.0.0.0:8443")
        .set("tls_cert", cert.path().to_str().unwrap())
        .set("tls_key", key.path().to_str().unwrap())
        .load()
        .unwrap();
    assert!(s.tls.is_some());
    let file = toml_file("bind = \"0.0.0.0:8080\"\nbase_url = \"https://media.example.edu\"\n");
    let s = SettingsLoader::new().file(file.path()).load().unwrap();
    assert_eq!(s.bind.to_string(), "0.0.0.0:8080");
    assert_eq!(s.base_url_for(s.bind).as_str(), "https://media.example.edu");
}

#[test]
fn the_bind_check_stays_quiet_while_tls_or_base_url_is_itself_wrong() {
    // Only the real problem is reported, not a second, derived one about the bind.
    let cert = toml_file("cert");
    let err = SettingsLoader::new()
        .set("bind", "0.0.0.0:8443")
        .set("tls_cert", cert.path().to_str().unwrap())
        .load()
        .unwrap_err();
    assert_eq!(err.problems().len(), 1, "{err}");
    assert!(err.problems()[0].starts_with("tls_cert"), "{err}");
    let err = SettingsLoader::new()
        .set("bind", "0.0.0.0:8080")
        .set("base_url", "media.example.edu")
        .load()
        .unwrap_err();
    assert_eq!(err.problems().len(), 1, "{err}");
    assert!(err.problems()[0].starts_with("base_url"), "{err}");
}

#[test]
fn sso_modes() {
    let s = SettingsLoader::new()
        .env_vars(env(&[
            ("MEDIALIB_SSO", "oidc"),
            ("MEDIALIB_OIDC_ISSUER", "https://idp.example/realms/uni"),
            ("MEDIALIB_OIDC_CLIENT_ID", "medialib"),
            ("MEDIALIB_OIDC_CLIENT_SECRET", "s3cr3t-value"),
            ("MEDIALIB_OIDC_UNIQUE_ID_CLAIM", "eppn"),
        ]))
        .load()
        .unwrap();
    let Sso::Oidc(oidc) = &s.sso else {
        panic!("oidc expected")
    };
    assert_eq!(oidc.issuer, "https://idp.example/realms/uni");
    assert_eq!(oidc.unique_id_claim, "eppn");
    assert_eq!(oidc.clock_skew_seconds, 60, "the default skew");
    assert_eq!(
        oidc.client_secret.as_ref().unwrap().expose(),
        "s3cr3t-value"
    );
    let debug = format!("{s:?}");
    assert!(
        !debug.contains("s3cr3t-value"),
        "secret leaked into Debug: {debug}"
    );

    let err = SettingsLoader::new()
        .set("sso", "header")
        .load()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("sso = header needs trusted_proxies"),
        "{err}"
    );
    let s = SettingsLoader::new()
        .set("sso", "header")
        .set("trusted_proxies", "127.0.0.1, 10.0.0.0/8, ::1")
        .set("sso_header", "X-Remote-User")
        .load()
        .unwrap();
    assert_eq!(
        s.sso,
        Sso::Header {
            header: "X-Remote-User".to_owned()
        }
    );
    assert_eq!(s.trusted_proxies.len(), 3);

    let oidc = |skew: &str| {
        SettingsLoader::new()
            .set("sso", "oidc")
            .set("oidc_issuer", "https://idp.example/realms/uni")
            .set("oidc_client_id", "medialib")
            .env_vars(env(&[("MEDIALIB_OIDC_CLOCK_SKEW", skew)]))
            .load()
    };
    let Sso::Oidc(o) = oidc("0").unwrap().sso else {
        panic!("oidc expected")
    };
    assert_eq!(o.clock_skew_seconds, 0);
    assert_eq!(o.client_secret, None, "a public client");
    for bad in ["-1", "601", "1m"] {
        let err = oidc(bad).unwrap_err();
        assert_eq!(
            err.problems(),
            [format!(
                "oidc_clock_skew (from MEDIALIB_OIDC_CLOCK_SKEW): `{bad}` is not a number of seconds from 0 to 600"
            )]
        );
    }

    let err = SettingsLoader::new().set("sso", "saml").load().unwrap_err();
    assert_eq!(
        err.problems(),
        ["sso (from --sso): `saml` is not one of local, oidc, header"]
    );
}

#[test]
fn database_passwords_never_reach_debug_output() {
    let s = SettingsLoader::new()
        .set(
            "database_url",
            "postgres://medialib:pa55word@db.example/medialib",
        )
        .load()
        .unwrap();
    assert_eq!(s.database_url.kind(), DatabaseKind::Postgres);
    let debug = format!("{s:?}");
    assert!(!debug.contains("pa55word"), "{debug}");
    assert!(
        debug.contains("postgres://medialib:***@db.example/medialib"),
        "{debug}"
    );
    assert_eq!(
        s.database_url.to_string(),
        "postgres://medialib:***@db.example/medialib"
    );
}

#[test]
fn file_problems_are_reported() {
    let file = toml_file("bind = \"127.0.0.1:1\"\nbogus = 1\ncode_ttl = { a = 1 }\n");
    let err = SettingsLoader::new().file(file.path()).load().unwrap_err();
    let text = err.to_string();
    assert!(text.contains("unknown key `bogus`"), "{text}");
    assert!(text.contains("`code_ttl` must be a string"), "{text}");

    let file = toml_file("bind = \n");
    let err = SettingsLoader::new().file(file.path()).load().unwrap_err();
    assert!(err.to_string().contains("line 1: not valid TOML"), "{err}");

    let err = SettingsLoader::new()
        .file("/nonexistent/medialib.toml")
        .load()
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("cannot read the configuration file /nonexistent/medialib.toml"),
        "{err}"
    );
}

#[test]
fn secret_values_are_not_echoed_and_base_url_is_normalised() {
    let s = SettingsLoader::new()
        .set("base_url", "https://media.example.edu/")
        .load()
        .unwrap();
    assert_eq!(s.base_url.unwrap().as_str(), "https://media.example.edu");
    let err = SettingsLoader::new()
        .set("base_url", "media.example.edu")
        .load()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("not an absolute http:// or https:// URL")
    );
    let err = SettingsLoader::new()
        .set("log", "info,[[")
        .load()
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("log (from --log): `info,[[` is not a tracing filter"),
        "{err}"
    );
}

#[test]
fn trusted_proxies_match_networks() {
    let net = TrustedProxy::parse("10.1.0.0/16").unwrap();
    assert!(net.contains("10.1.2.3".parse().unwrap()));
    assert!(!net.contains("10.2.0.1".parse().unwrap()));
    let any = TrustedProxy::parse("0.0.0.0/0").unwrap();
    assert!(any.contains("192.0.2.1".parse().unwrap()));
    let v6 = TrustedProxy::parse("fd00::/8").unwrap();
    assert!(v6.contains("fd12::1".parse().unwrap()));
    assert!(!v6.contains("10.1.2.3".parse().unwrap()));
}

#[test]
fn every_key_has_one_name_a_meaning_and_a_default() {
    let names: std::collections::BTreeSet<&str> = KEYS.iter().map(Key::name).collect();
    assert_eq!(names.len(), KEYS.len(), "a key is listed twice");
    for key in KEYS {
        let meaning = key.meaning();
        assert!(!meaning.is_empty(), "{} has no doc comment", key.name());
        assert!(
            !meaning.contains('|'),
            "{}: a `|` breaks the table",
            key.name()
        );
        assert!(key.env_var().starts_with(ENV_PREFIX));
    }
    // Every default parses: an empty loader uses them all.
    assert!(SettingsLoader::new().load().is_ok());
}

#[test]
fn flag_help_comes_from_the_table() {
    assert_eq!(
        key::bind.help(),
        "Listen address (IP and port), e.g. 127.0.0.1:8080 or [::]:8080 [default: 127.0.0.1:8080]"
    );
    assert_eq!(
        key::base_url.help(),
        "Public base URL used in permLinks, embeds and as OAuth issuer"
    );
}
