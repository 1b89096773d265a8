//! `GET /metrics` over real HTTP, on SQLite and PostgreSQL: the exposition parses as the
//! Prometheus text format, and the requests, token refusals and grants, sign-ins and the
//! database pool that a test causes show up in it.

use std::collections::BTreeMap;

use medialib_domain::oauth::AuthorizeParams;
use reqwest::StatusCode;

use crate::api::REDIRECT;
use crate::oauth::{Backend, OAuthApp, PASSWORD};

const TOKEN: &str = "/api/oauth/access_token";

/// One sample: metric name and its labels, sorted.
type Series = (String, Vec<(String, String)>);

/// A parsed exposition: every sample's value, and each metric family's `# TYPE`.
#[derive(Debug, Default)]
struct Exposition {
    samples: BTreeMap<Series, f64>,
    types: BTreeMap<String, String>,
}

impl Exposition {
    /// The value of `name{labels}`; 0 when the series does not exist (yet).
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let mut labels: Vec<(String, String)> = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        labels.sort();
        self.samples
            .get(&(name.to_owned(), labels))
            .copied()
            .unwrap_or(0.0)
    }

    /// Every series of metric `name`.
    fn series(&self, name: &str) -> impl Iterator<Item = (&Vec<(String, String)>, f64)> {
        self.samples
            .iter()
            .filter(move |((n, _), _)| n == name)
            .map(|((_, labels), value)| (labels, *value))
    }
}

/// A strict reader of the text format (version 0.0.4) as far as medialib uses it: `# HELP`
/// and `# TYPE` lines, then samples `name{label="value",...} number` of a declared family
/// (histograms add `_bucket`, `_sum` and `_count`), label values with `\\`, `\"` and `\n`
/// escapes, no duplicate series. Panics naming the offending line.
fn parse(text: &str) -> Exposition {
    let mut exposition = Exposition::default();
    assert!(text.ends_with('\n'), "the exposition ends with a line feed");
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            let mut words = rest.splitn(3, ' ');
            let (keyword, name, tail) = (
                words.next().unwrap(),
                words
                    .next()
                    .unwrap_or_else(|| panic!("bad comment: {line}")),
                words
                    .next()
                    .unwrap_or_else(|| panic!("bad comment: {line}")),
            );
            assert!(is_metric_name(name), "bad metric name: {line}");
            match keyword {
                "HELP" => assert!(!tail.is_empty(), "empty help: {line}"),
                "TYPE" => {
                    assert!(
                        ["counter", "gauge", "histogram", "summary", "untyped"].contains(&tail),
                        "bad type: {line}"
                    );
                    let before = exposition.types.insert(name.to_owned(), tail.to_owned());
                    assert!(before.is_none(), "family declared twice: {line}");
                }
                _ => panic!("unknown comment: {line}"),
            }
            continue;
        }
        assert!(!line.is_empty(), "blank line in the exposition");
        let name_end = line
            .find(['{', ' '])
            .unwrap_or_else(|| panic!("no value: {line}"));
        let name = &line[..name_end];
        assert!(is_metric_name(name), "bad metric name: {line}");
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|suffix| {
                let base = name.strip_suffix(suffix)?;
                (exposition.types.get(base).map(String::as_str) == Some("histogram"))
                    .then_some(base)
            })
            .unwrap_or(name);
        assert!(
            exposition.types.contains_key(family),
            "sample before its # TYPE: {line}"
        );
        let mut rest = &line[name_end..];
        let mut labels = Vec::new();
        if let Some(inner) = rest.strip_prefix('{') {
            rest = inner;
            loop {
                let eq = rest
                    .find("=\"")
                    .unwrap_or_else(|| panic!("bad label: {line}"));
                let label = &rest[..eq];
                assert!(
                    !label.is_empty()
                        && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                    "bad label name: {line}"
                );
                rest = &rest[eq + 2..];
                let mut value = String::new();
                let mut chars = rest.char_indices();
                let end = loop {
                    match chars.next() {
                        Some((i, '"')) => break i,
                        Some((_, '\\')) => match chars.next() {
                            Some((_, '\\')) => value.push('\\'),
                            Some((_, '"')) => value.push('"'),
                            Some((_, 'n')) => value.push('\n'),
                            _ => panic!("bad escape: {line}"),
                        },
                        Some((_, c)) => value.push(c),
                        None => panic!("unterminated label value: {line}"),
                    }
                };
                labels.push((label.to_owned(), value));
                rest = &rest[end + 1..];
                if let Some(more) = rest.strip_prefix(',') {
                    rest = more;
                } else if let Some(done) = rest.strip_prefix('}') {
                    rest = done;
                    break;
                } else {
                    panic!("bad label list: {line}");
                }
            }
        }
        let value = rest
            .strip_prefix(' ')
            .unwrap_or_else(|| panic!("no space before the value: {line}"));
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            "NaN" => f64::NAN,
            v => v.parse().unwrap_or_else(|_| panic!("bad value: {line}")),
        };
        labels.sort();
        let before = exposition.samples.insert((name.to_owned(), labels), value);
        assert!(before.is_none(), "duplicate series: {line}");
    }
    exposition
}

fn is_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

#[test]
fn the_parser_refuses_what_prometheus_would() {
    let ok = "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"q\\\"\\\\\\n\"} 3\n";
    let parsed = parse(ok);
    assert_eq!(parsed.value("a_total", &[("x", "q\"\\\n")]), 3.0);
    for bad in [
        "a_total 3\n",                                      // no # TYPE
        "# TYPE a_total counter\na_total{x=\"q} 3\n",       // unterminated value
        "# TYPE a_total counter\na_total{x=\"q\"}3\n",      // no space
        "# TYPE a_total counter\na_total{x=\"q\"} three\n", // not a number
        "# TYPE a_total counter\na_total 1\na_total 2\n",   // duplicate
        "# TYPE a_total counter\na_total{x=\"\\t\"} 1\n",   // bad escape
        "# TYPE a_total counter\na_total 1",                // no final line feed
    ] {
        assert!(
            std::panic::catch_unwind(|| parse(bad)).is_err(),
            "accepted: {bad:?}"
        );
    }
}

/// `GET /metrics`: 200, the text format's content type, parsed.
async fn scrape(app: &OAuthApp) -> Exposition {
    scrape_app(&app.api.app).await
}

/// [`scrape`] of any test app.
async fn scrape_app(app: &crate::helpers::TestApp) -> Exposition {
    let res = app.get("/metrics").await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    parse(&res.text().await.unwrap())
}

const REQUESTS: &str = "medialib_http_requests_total";
const BUCKET: &str = "medialib_http_request_duration_seconds_bucket";
const COUNT: &str = "medialib_http_request_duration_seconds_count";
const SUM: &str = "medialib_http_request_duration_seconds_sum";
const TOKENS: &str = "medialib_oauth_token_requests_total";
const SIGN_INS: &str = "medialib_sign_ins_total";

/// Requests by route and status, and their latency histogram.
async fn requests_are_counted_by_route_pattern_method_and_status(b: Backend) {
    let app = OAuthApp::start(b).await;
    let before = scrape(&app).await;
    assert_eq!(before.types[REQUESTS], "counter");
    assert_eq!(
        before.types["medialib_http_request_duration_seconds"],
        "histogram"
    );
    for path in [
        "/healthz",
        "/healthz/",
        "/no/such/page",
        "/api/describe/c/x/o/y",
    ] {
        app.api.app.get(path).await;
    }
    let after = scrape(&app).await;
    let delta = |name: &str, labels: &[(&str, &str)]| {
        after.value(name, labels) - before.value(name, labels)
    };
    let healthz = [("route", "/healthz"), ("method", "GET")];
    assert_eq!(
        delta(
            REQUESTS,
            &[("route", "/healthz"), ("method", "GET"), ("status", "200")]
        ),
        2.0,
        "with and without the trailing slash, one route"
    );
    assert_eq!(
        delta(
            REQUESTS,
            &[("route", "other"), ("method", "GET"), ("status", "404")]
        ),
        1.0,
        "an unmatched path is `other`, not its own series"
    );
    assert_eq!(
        delta(
            REQUESTS,
            &[
                ("route", "/api/describe/c/{c}/o/{o}"),
                ("method", "GET"),
                ("status", "400")
            ]
        ),
        1.0,
        "the route pattern, not the path"
    );
    assert!(
        after
            .series(REQUESTS)
            .all(|(labels, _)| !labels.iter().any(|(_, v)| v.contains("no/such"))),
        "no path leaks into a label"
    );
    // The histogram: +Inf bucket equals the count, buckets never decrease, sum is positive.
    assert_eq!(delta(COUNT, &healthz), 2.0);
    let inf = [("route", "/healthz"), ("method", "GET"), ("le", "+Inf")];
    assert_eq!(delta(BUCKET, &inf), 2.0);
    assert!(after.value(SUM, &healthz) > before.value(SUM, &healthz));
    let mut buckets: Vec<(f64, f64)> = after
        .series(BUCKET)
        .filter(|(labels, _)| {
            labels.contains(&("route".into(), "/healthz".into()))
                && labels.contains(&("method".into(), "GET".into()))
        })
        .map(|(labels, value)| {
            let le = &labels.iter().find(|(k, _)| k == "le").unwrap().1;
            let bound = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().unwrap()
            };
            (bound, value)
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(buckets.len() > 5, "{buckets:?}");
    assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1), "{buckets:?}");
    // Scrapes count too (documented): the second scrape saw the first.
    assert!(
        after.value(
            REQUESTS,
            &[("route", "/metrics"), ("method", "GET"), ("status", "200")]
        ) >= 1.0
    );
}

/// The pool gauges describe the real pool.
async fn the_database_pool_is_reported(b: Backend) {
    let app = OAuthApp::start(b).await;
    app.api.app.get("/readyz").await;
    let m = scrape(&app).await;
    assert_eq!(m.types["medialib_db_pool_connections"], "gauge");
    let idle = m.value("medialib_db_pool_connections", &[("state", "idle")]);
    let in_use = m.value("medialib_db_pool_connections", &[("state", "in_use")]);
    let max = m.value("medialib_db_pool_max_connections", &[]);
    assert!(max >= 1.0, "max {max}");
    assert!(
        idle >= 1.0,
        "the readiness probe left a connection in the pool: {idle}"
    );
    assert!(
        idle + in_use <= max,
        "idle {idle} + in use {in_use} <= max {max}"
    );
}

/// Token requests by grant type and outcome; sign-ins by outcome.
async fn token_outcomes_and_sign_ins_are_counted(b: Backend) {
    let app = OAuthApp::start(b).await;
    let client = app.register("LMS", &[REDIRECT], false);
    let user = app.user_with_password("ada", PASSWORD);
    let post = |form: Vec<(&'static str, String)>| {
        let req = app.api.app.client.post(app.url(TOKEN)).form(&form);
        async move { req.send().await.unwrap().status() }
    };
    let before = scrape(&app).await;

    // An unknown client: invalid_client (401), the grant type was read.
    let status = post(vec![
        ("grant_type", "authorization_code".into()),
        ("code", "mlc_nope".into()),
        ("client_id", "no-such-client".into()),
        ("client_secret", "wrong".into()),
    ])
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // No client authentication at all: refused before the grant type is read.
    let status = post(vec![("grant_type", "authorization_code".into())]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let secret = client.client_secret.as_ref().unwrap().expose().to_owned();
    let creds = |mut form: Vec<(&'static str, String)>| {
        form.push(("client_id", client.client_id.clone()));
        form.push(("client_secret", secret.clone()));
        form
    };
    // A grant type medialib does not offer.
    let status = post(creds(vec![("grant_type", "password".into())])).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // A real code: issued; the same code again: invalid_grant.
    let params = AuthorizeParams {
        response_type: Some("code"),
        client_id: Some(&client.client_id),
        redirect_uri: Some(REDIRECT),
        state: Some("st"),
        ..AuthorizeParams::default()
    };
    let services = &app.api.services;
    let request = services.oauth().start_authorization(&params).unwrap();
    let code = services
        .oauth()
        .approve_authorization(request, user.id)
        .unwrap()
        .param("code")
        .unwrap()
        .to_owned();
    let exchange = creds(vec![
        ("grant_type", "authorization_code".into()),
        ("code", code),
        ("redirect_uri", REDIRECT.into()),
    ]);
    assert_eq!(post(exchange.clone()).await, StatusCode::OK);
    assert_eq!(post(exchange).await, StatusCode::BAD_REQUEST);

    // Sign-ins through the form: a wrong password, then the right one.
    let authorize = format!(
        "/api/oauth/authorize?response_type=code&client_id={}&redirect_uri={}&state=st",
        client.client_id, "https%3A%2F%2Flms.example.edu%2Fcallback"
    );
    let page = app.api.app.get(&authorize).await;
    assert_eq!(page.status(), StatusCode::OK);
    let cookie = page
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_owned())
        .find(|c| c.starts_with("medialib_login="))
        .expect("the sign-in page sets its form cookie");
    let hidden = hidden_fields(&page.text().await.unwrap());
    for (password, expected) in [
        ("not it", StatusCode::UNAUTHORIZED),
        (PASSWORD, StatusCode::SEE_OTHER),
    ] {
        let mut form = hidden.clone();
        form.push(("username".into(), "ada".into()));
        form.push(("password".into(), password.into()));
        let res = app
            .api
            .app
            .client
            .post(app.url("/api/oauth/login"))
            .header("cookie", &cookie)
            .form(&form)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), expected);
    }

    let after = scrape(&app).await;
    assert_eq!(after.types[TOKENS], "counter");
    assert_eq!(after.types[SIGN_INS], "counter");
    let tokens = |grant_type: &str, outcome: &str| {
        let labels = [("grant_type", grant_type), ("outcome", outcome)];
        after.value(TOKENS, &labels) - before.value(TOKENS, &labels)
    };
    assert_eq!(tokens("authorization_code", "invalid_client"), 1.0);
    assert_eq!(tokens("none", "invalid_client"), 1.0);
    assert_eq!(tokens("unsupported", "unsupported_grant_type"), 1.0);
    assert_eq!(tokens("authorization_code", "issued"), 1.0);
    assert_eq!(tokens("authorization_code", "invalid_grant"), 1.0);
    let total: f64 = after.series(TOKENS).map(|(_, v)| v).sum();
    assert_eq!(total, 5.0, "one count per token request");
    let sign_ins = |outcome: &str| {
        after.value(SIGN_INS, &[("outcome", outcome)])
            - before.value(SIGN_INS, &[("outcome", outcome)])
    };
    assert_eq!(sign_ins("invalid_credentials"), 1.0);
    assert_eq!(sign_ins("success"), 1.0);
    // The token endpoint's requests are in the request counter too.
    assert_eq!(
        after.value(
            REQUESTS,
            &[("route", TOKEN), ("method", "POST"), ("status", "401")]
        ),
        2.0
    );
}

/// The hidden fields of a page's forms (askama escapes `&<>"'` in values).
fn hidden_fields(html: &str) -> Vec<(String, String)> {
    let attribute = |tag: &str, name: &str| -> Option<String> {
        let needle = format!(" {name}=\"");
        let start = tag.find(&needle)? + needle.len();
        let len = tag[start..].find('"')?;
        let raw = &tag[start..start + len];
        Some(
            raw.replace("&#34;", "\"")
                .replace("&#39;", "'")
                .replace("&#60;", "<")
                .replace("&#62;", ">")
                .replace("&#38;", "&")
                .replace("&quot;", "\"")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&"),
        )
    };
    html.split('<')
        .filter(|t| t.starts_with("input "))
        .filter_map(|t| t.split('>').next())
        .filter(|t| attribute(t, "type").as_deref() == Some("hidden"))
        .filter_map(|t| {
            Some((
                attribute(t, "name")?,
                attribute(t, "value").unwrap_or_default(),
            ))
        })
        .collect()
}

/// `/metrics` answers GET and HEAD only.
#[tokio::test]
async fn other_methods_on_metrics_are_501() {
    let app = crate::helpers::spawn_app().await;
    let res = app.client.post(app.url("/metrics")).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::NOT_IMPLEMENTED);
    assert_eq!(res.headers()["allow"], "GET, HEAD");
    let res = app.client.head(app.url("/metrics")).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
}

/// The metric names a Markdown text documents: each `` `medialib_…` `` in it.
fn documented(doc: &str) -> std::collections::BTreeSet<String> {
    doc.split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| w.starts_with("medialib_") && is_metric_name(w))
        .map(str::to_owned)
        .collect()
}

/// Every metric family `/metrics` declares is in docs/metrics.md's table (a counter under its
/// samples' name, `…_total`), so an operator finds what each one counts.
#[tokio::test]
async fn every_metric_is_documented() {
    let app = OAuthApp::start(Backend::Sqlite).await;
    let m = scrape(&app).await;
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/metrics.md"),
    )
    .unwrap();
    let names = documented(&doc);
    let missing: Vec<&String> = m
        .types
        .keys()
        .filter(|name| !names.contains(*name) && !names.contains(&format!("{name}_total")))
        .collect();
    assert!(m.types.len() >= 10, "{:?}", m.types);
    assert!(
        missing.is_empty(),
        "docs/metrics.md does not describe {missing:?}"
    );
    // Positive control: a family the text does not name is found missing.
    assert!(!documented("| `medialib_a_total` | counter |").contains("medialib_b_total"));
    assert!(documented("| `medialib_a_total` | counter |").contains("medialib_a_total"));
}

/// Describe GETs count where they ran. On SQLite: the first describe of a processed video
/// makes the key that signs its URLs, a write, so its attempt on the async worker is refused
/// and it runs on the blocking pool; the next ones run on the worker. On PostgreSQL every
/// read runs on the pool. Each answer shows the stills either way. An info GET with a token
/// makes two reads that may run on the worker: the token's check and the info.
async fn reads_are_counted_by_where_they_ran(b: Backend) {
    use crate::api::records::{MediaApp, video_files};
    let m = MediaApp::start(b).await;
    let video = m.processed("lecture.mp4", "0a", &video_files()).await;
    let describe = format!("/api/describe/c/{}/o/{video}", m.app.lib);
    let before = scrape_app(&m.app.api.app).await;
    for _ in 0..3 {
        let a = m.get(&describe).await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        assert_eq!(
            a.json["images"].as_object().map(|o| o.len()),
            Some(3),
            "{a:?}"
        );
    }
    // An info GET with a token: the token's check and the info read, two reads more.
    let info = m.get(&format!("/api/info/c/{}/o/{video}", m.app.lib)).await;
    assert_eq!(info.status, StatusCode::OK, "{info:?}");
    let after = scrape_app(&m.app.api.app).await;
    assert_eq!(after.types["medialib_db_reads_total"], "counter");
    let ran = |place: &str| {
        let labels = [("place", place)];
        after.value("medialib_db_reads_total", &labels)
            - before.value("medialib_db_reads_total", &labels)
    };
    let expected = match b {
        Backend::Sqlite => (4.0, 1.0),
        Backend::Postgres => (0.0, 5.0),
    };
    assert_eq!((ran("worker"), ran("pool")), expected);
}

medialib_adapters_diesel::backend_tests!(
    async on [sqlite, postgres] with crate::api::run:
    reads_are_counted_by_where_they_ran,
    requests_are_counted_by_route_pattern_method_and_status,
    the_database_pool_is_reported,
    token_outcomes_and_sign_ins_are_counted,
);
