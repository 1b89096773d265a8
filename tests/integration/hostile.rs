//! Hostile input (issue 8): every case gets a 4xx with a JSON `message` (the statuses of
//! DECISIONS.md §4), never a 5xx or a dropped connection, and the server answers normally
//! afterwards. Cases that touch the database run on SQLite and PostgreSQL.
//!
//! reqwest cannot send some of these bytes (raw `0xff` or CR/LF in a request line,
//! unnormalised `..` segments, a dribbled header), so [`raw`] speaks HTTP/1.1 over a
//! plain `TcpStream`. A few of those are refused by actix-http's parser before any route
//! runs: those answers carry the status only, no body, and are marked "protocol level".

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use reqwest::header::CONTENT_TYPE;
use reqwest::{Method, StatusCode, Url};
use serde_json::{Value, json};

use crate::api::{Answer, ApiApp, Backend, REDIRECT, assert_error, register_client};

const FORM: &str = "application/x-www-form-urlencoded";
const JSON: &str = "application/json";
/// The API's body limit (DECISIONS.md §4).
const BODY_LIMIT: usize = 1 << 20;

// ---------------------------------------------------------------------------------------
// Helpers.

/// One answer read off a raw connection.
#[derive(Debug)]
struct Raw {
    /// The status, when a status line came back before the connection ended.
    status: Option<u16>,
    /// The status line and headers.
    head: String,
    body: Vec<u8>,
    /// From connecting to the end of the answer.
    elapsed: Duration,
    /// How reading ended when it was not a clean end of stream (a reset, a timeout).
    read_error: Option<std::io::ErrorKind>,
}

impl Raw {
    fn message(&self) -> Option<String> {
        let v: Value = serde_json::from_slice(&self.body).ok()?;
        v["message"].as_str().map(str::to_owned)
    }

    /// Whether the body contains `needle`.
    fn body_has(&self, needle: &str) -> bool {
        self.body
            .windows(needle.len())
            .any(|w| w == needle.as_bytes())
    }
}

/// `METHOD target HTTP/1.1` with `Host`, `Connection: close`, `headers`, and the body with
/// its `Content-Length` when there is one.
fn request(method: &str, target: &[u8], headers: &[(&str, &[u8])], body: &[u8]) -> Vec<u8> {
    let mut r = format!("{method} ").into_bytes();
    r.extend_from_slice(target);
    r.extend_from_slice(b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    for (name, value) in headers {
        r.extend_from_slice(name.as_bytes());
        r.extend_from_slice(b": ");
        r.extend_from_slice(value);
        r.extend_from_slice(b"\r\n");
    }
    if !body.is_empty() {
        r.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    r.extend_from_slice(b"\r\n");
    r.extend_from_slice(body);
    r
}

/// Sends `bytes` on a new connection and reads until the server closes it (at most 10 s).
fn exchange(port: u16, bytes: &[u8]) -> Raw {
    let start = Instant::now();
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // The server may answer and close before reading everything: keep what it said.
    let _ = s.write_all(bytes);
    read_answer(s, start)
}

fn read_answer(mut s: TcpStream, start: Instant) -> Raw {
    let mut out = Vec::new();
    let read_error = s.read_to_end(&mut out).err().map(|e| e.kind());
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(out.len(), |i| i + 4);
    let head = String::from_utf8_lossy(&out[..split]).into_owned();
    let status = head
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok());
    Raw {
        status,
        head,
        body: out[split..].to_vec(),
        elapsed: start.elapsed(),
        read_error,
    }
}

/// [`exchange`] off the async runtime.
async fn raw(port: u16, bytes: Vec<u8>) -> Raw {
    tokio::task::spawn_blocking(move || exchange(port, &bytes))
        .await
        .unwrap()
}

/// Asserts a refusal: `status`, a JSON `message` containing `needle`, and a message that
/// does not echo a long input back.
fn refused(a: &Answer, status: u16, needle: &str) {
    assert_error(a, status);
    let m = a.json["message"].as_str().unwrap();
    assert!(m.contains(needle), "{needle:?} not in {m:?}");
    assert!(
        m.chars().count() < 200,
        "the message echoes the input: {m:.300}"
    );
}

/// Asserts a raw answer: `status`, in time (no hang), and a JSON `message` when `json`
/// (answers of the HTTP parser, "protocol level", and HTML pages have none).
fn raw_refused(r: &Raw, status: u16, json: bool, what: &str) {
    assert_eq!(r.status, Some(status), "{what}: {r:?}");
    assert!(
        r.elapsed < Duration::from_secs(5),
        "{what}: answered in {:?}",
        r.elapsed
    );
    if json {
        assert!(r.message().is_some(), "{what}: no JSON message in {r:?}");
    }
}

/// Sends `method path` with a raw body of `content_type`.
async fn send_body(
    api: &ApiApp,
    method: Method,
    path: &str,
    token: &str,
    content_type: &str,
    body: impl Into<reqwest::Body>,
) -> Answer {
    let req = api
        .app
        .client
        .request(method, api.app.url(path))
        .bearer_auth(token)
        .header(CONTENT_TYPE, content_type)
        .body(body);
    api.send(req).await
}

/// One part of [`multipart`].
fn part<'a>(name: &'a [u8], value: &'a [u8]) -> (&'a [u8], &'a [u8]) {
    (name, value)
}

/// A `multipart/form-data` body of `parts` and its content type.
fn multipart(parts: &[(&[u8], &[u8])]) -> (String, Vec<u8>) {
    let boundary = "hostileBoundary7";
    let mut body = Vec::new();
    for (name, value) in parts {
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        body.extend_from_slice(b"Content-Disposition: form-data; name=\"");
        body.extend_from_slice(name);
        body.extend_from_slice(b"\"\r\n\r\n");
        body.extend_from_slice(value);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// How many members `lib` lists.
async fn members(api: &ApiApp, token: &str, lib: &str) -> usize {
    let a = api.get(&format!("/api/catalog/o/{lib}"), Some(token)).await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    a.json["list"].as_array().unwrap().len()
}

/// The server still answers normally: health, readiness, and a read and a write of the API.
async fn assert_healthy(api: &ApiApp, token: &str, lib: &str) {
    assert_eq!(api.get("/healthz", None).await.status, StatusCode::OK);
    assert_eq!(api.get("/readyz", None).await.status, StatusCode::OK);
    let a = api
        .get(&format!("/api/describe/c/{lib}/o/{lib}"), Some(token))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    api.object(token, lib, "file", "still writable").await;
}

/// A signed-in admin of a fresh library: (api, token, library uuid).
async fn setup(b: Backend) -> (ApiApp, String, String) {
    let api = ApiApp::start_with(b, |l| l.set("rate_limit_token", "0")).await;
    let (_, t) = api.signed_in("alice");
    let lib = api.library(&t, "Hostile").await;
    (api, t, lib)
}

// ---------------------------------------------------------------------------------------
// UUIDs in every path position.

async fn malformed_and_oversize_uuids_in_every_path_position_are_400(b: Backend) {
    let (api, t, lib) = setup(b).await;
    let v = api.object(&t, &lib, "video", "V").await;
    let hex = lib.replace('-', "");
    let moved_dash = format!("{}-{}", &hex[..9], &lib[9..].replacen('-', "", 1));
    assert_eq!(moved_dash.len(), 36);
    let bad: Vec<String> = vec![
        "xyz".into(),
        "g".repeat(32),
        hex[..31].into(),
        format!("{hex}0"),
        format!("{hex}{hex}"),
        format!("{lib}-"),
        moved_dash,
        format!("{{{lib}}}"),
        format!("urn:uuid:{lib}"),
        format!("{lib}%00"),
        format!("%20{lib}"),
        "00".into(),
        "-0".into(),
        "+0".into(),
        "0x0".into(),
        "0.0".into(),
        "%00".into(),
        "%ff".into(),
        "%2F".into(),
        "٠".repeat(32),
        "ａ".repeat(32),
        "😀".repeat(8),
        "a".repeat(5_000),
    ];
    let templates = [
        format!("/api/describe/c/@/o/{v}"),
        format!("/api/describe/c/{lib}/o/@"),
        "/api/user/c/@/o/0".to_owned(),
        format!("/api/user/c/{lib}/o/@"),
        "/api/permission/c/@/o/0".to_owned(),
        format!("/api/permission/c/{lib}/o/@"),
        format!("/api/info/c/@/o/{v}"),
        format!("/api/info/c/{lib}/o/@"),
        format!("/api/embed/c/@/o/{v}"),
        format!("/api/embed/c/{lib}/o/@"),
        format!("/api/video/c/@/o/{v}"),
        format!("/api/video/c/{lib}/o/@"),
        format!("/api/catalog/c/@/o/{v}"),
        format!("/api/catalog/c/{lib}/o/@"),
        "/api/catalog/o/@".to_owned(),
        "/api/contribute/o/@".to_owned(),
    ];
    // Authentication comes first, then whether the path offers the method, then the ids
    // (DECISIONS.md §4): a bad id is a 400 for every caller who gets that far. All four
    // calls for the first few ids, a GET with a token for the rest.
    let calls = [
        (Method::GET, Some(t.as_str())),
        (Method::GET, None),
        (Method::POST, Some(t.as_str())),
        (Method::DELETE, Some(t.as_str())),
    ];
    let mut made = 0;
    for template in &templates {
        for (i, id) in bad.iter().enumerate() {
            let path = template.replace('@', id);
            let these = if i < 4 { &calls[..] } else { &calls[..1] };
            for (method, token) in these {
                let form: &[(&str, &str)] = if *method == Method::POST {
                    &[("type", "video"), ("uniqueId", "bob")]
                } else {
                    &[]
                };
                let a = api.call(method.clone(), &path, *token, form).await;
                let public = path.starts_with("/api/describe/") && *method == Method::GET;
                // A POST may name another method with `_METHOD`, so it is always read.
                let offered = match *method {
                    Method::GET | Method::POST => true,
                    _ => ["permission", "catalog/c"]
                        .iter()
                        .any(|r| path.starts_with(&format!("/api/{r}/"))),
                };
                if token.is_none() && !public {
                    refused(&a, 401, "authentication required");
                } else if !offered {
                    refused(&a, 501, "method not implemented");
                } else {
                    refused(&a, 400, "must be a UUID");
                }
                made += 1;
            }
        }
    }
    assert_eq!(made, templates.len() * (bad.len() + 4 * 3));
    // 60 000 hex digits in a collection, an object, a user and a short-form position, sent
    // raw (reqwest's unoptimised build parses such URLs slowly): a short 400 all the same.
    let auth = format!("Bearer {t}");
    let huge = "f".repeat(60_000);
    for template in [&templates[0], &templates[3], &templates[14], &templates[15]] {
        let path = template.replace('@', &huge);
        let r = raw(
            api.app.port,
            request(
                "GET",
                path.as_bytes(),
                &[("Authorization", auth.as_bytes())],
                b"",
            ),
        )
        .await;
        raw_refused(&r, 400, true, &path[..40]);
        let m = r.message().unwrap();
        assert!(m.contains("must be a UUID") && m.len() < 200, "{m:.300}");
    }
    assert_healthy(&api, &t, &lib).await;
}

// ---------------------------------------------------------------------------------------
// Titles and other limits counted in characters, in multi-byte UTF-8.

/// `n` Unicode scalar values taken from `unit` in turn.
fn chars(unit: &str, n: usize) -> String {
    unit.chars().cycle().take(n).collect()
}

async fn titles_of_255_characters_are_kept_verbatim_and_256_refused(b: Backend) {
    let (api, t, lib) = setup(b).await;
    let alice = api.get(&format!("/api/user/c/{lib}/o/0"), Some(&t)).await;
    let alice = alice.json["userId"].as_str().unwrap().to_owned();
    let put = format!("/api/describe/c/{lib}/o/0");
    let units = [
        "é",                                                            // 2 bytes
        "€",                                                            // 3 bytes
        "ﷺ",          // 3 bytes, one very wide glyph
        "😀",         // 4 bytes
        "𝄞",          // 4 bytes
        "\u{10FFFF}", // the last scalar value
        "\u{1F469}\u{200D}\u{1F469}\u{200D}\u{1F467}\u{200D}\u{1F466}", // 7 scalars, a family
        "e\u{301}",   // a letter and a combining accent: 2 scalars
        "a😀",        // mixed widths
    ];
    for unit in units {
        let max = chars(unit, 255);
        let over = chars(unit, 256);
        assert_eq!(max.chars().count(), 255);
        // Form body.
        let a = api
            .call(
                Method::PUT,
                &put,
                Some(&t),
                &[("type", "video"), ("title", &max)],
            )
            .await;
        assert_eq!(a.status, StatusCode::CREATED, "{unit}: {a:?}");
        let id = a.json["uuid"].as_str().unwrap().to_owned();
        let path = format!("/api/describe/c/{lib}/o/{id}");
        let got = api.get(&path, Some(&t)).await;
        assert_eq!(
            got.json["title"].as_str(),
            Some(max.as_str()),
            "{unit}: stored verbatim"
        );
        let a = api
            .call(
                Method::PUT,
                &put,
                Some(&t),
                &[("type", "video"), ("title", &over)],
            )
            .await;
        refused(&a, 400, "title is longer than 255 characters");
        // Updates through describe and info are held to the same limit, and change nothing.
        let a = api
            .call(
                Method::POST,
                &path,
                Some(&t),
                &[("type", "video"), ("title", &over)],
            )
            .await;
        refused(&a, 400, "title is longer than 255 characters");
        let info = format!("/api/info/c/{lib}/o/{id}");
        refused(
            &api.call(Method::POST, &info, Some(&t), &[("title", &over)])
                .await,
            400,
            "title is longer than 255 characters",
        );
        assert_eq!(
            api.get(&path, Some(&t)).await.json["title"].as_str(),
            Some(max.as_str())
        );
        let other = chars(&format!("x{unit}"), 255);
        let a = api
            .call(Method::POST, &info, Some(&t), &[("title", &other)])
            .await;
        assert_eq!(a.status, StatusCode::ACCEPTED, "{a:?}");
        assert_eq!(
            api.get(&path, Some(&t)).await.json["title"].as_str(),
            Some(other.as_str())
        );
        // JSON (raw UTF-8) and multipart bodies.
        let a = send_body(
            &api,
            Method::PUT,
            &put,
            &t,
            JSON,
            json!({"type": "audio", "title": max}).to_string(),
        )
        .await;
        assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
        let id = a.json["uuid"].as_str().unwrap();
        let got = api
            .get(&format!("/api/describe/c/{lib}/o/{id}"), Some(&t))
            .await;
        assert_eq!(got.json["title"].as_str(), Some(max.as_str()));
        let a = send_body(
            &api,
            Method::PUT,
            &put,
            &t,
            JSON,
            json!({"type": "audio", "title": over}).to_string(),
        )
        .await;
        refused(&a, 400, "title is longer than 255 characters");
        let (ctype, body) = multipart(&[part(b"type", b"image"), part(b"title", over.as_bytes())]);
        refused(
            &send_body(&api, Method::PUT, &put, &t, &ctype, body).await,
            400,
            "title is longer than 255 characters",
        );
        // Names: the same 255.
        let me = format!("/api/user/c/{lib}/o/{alice}");
        let a = api
            .call(Method::POST, &me, Some(&t), &[("firstName", &max)])
            .await;
        assert_eq!(a.status, StatusCode::ACCEPTED, "{a:?}");
        assert_eq!(
            api.get(&me, Some(&t)).await.json["firstName"].as_str(),
            Some(max.as_str())
        );
        refused(
            &api.call(Method::POST, &me, Some(&t), &[("lastName", &over)])
                .await,
            400,
            "lastName is longer than 255 characters",
        );
    }
    // Surrogate pairs escaped in JSON count as one character each.
    let escaped = |n: usize| {
        format!(
            r#"{{"type":"video","title":"{}"}}"#,
            "\\ud83d\\ude00".repeat(n)
        )
    };
    let a = send_body(&api, Method::PUT, &put, &t, JSON, escaped(255)).await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    let id = a.json["uuid"].as_str().unwrap();
    let got = api
        .get(&format!("/api/describe/c/{lib}/o/{id}"), Some(&t))
        .await;
    assert_eq!(got.json["title"].as_str(), Some("😀".repeat(255).as_str()));
    refused(
        &send_body(&api, Method::PUT, &put, &t, JSON, escaped(256)).await,
        400,
        "title is longer than 255 characters",
    );
    // Property keys (64) and values (4096), in 4-byte characters.
    let key = "😀".repeat(64);
    let value = "𝄞".repeat(4096);
    let a = api
        .call(
            Method::PUT,
            &put,
            Some(&t),
            &[("type", "file"), (&format!("properties[{key}]"), &value)],
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    let id = a.json["uuid"].as_str().unwrap();
    let got = api
        .get(&format!("/api/describe/c/{lib}/o/{id}"), Some(&t))
        .await;
    assert_eq!(
        got.json["properties"],
        json!({ key.clone(): value.clone() })
    );
    let long_key = format!("properties[{key}😀]");
    refused(
        &api.call(
            Method::PUT,
            &put,
            Some(&t),
            &[("type", "file"), (&long_key, "v")],
        )
        .await,
        400,
        "must be 1 to 64 characters",
    );
    let long_value = format!("{value}𝄞");
    refused(
        &api.call(
            Method::PUT,
            &put,
            Some(&t),
            &[("type", "file"), ("properties[k]", &long_value)],
        )
        .await,
        400,
        "longer than 4096 characters",
    );
    assert_healthy(&api, &t, &lib).await;
}

// ---------------------------------------------------------------------------------------
// Invalid UTF-8.

async fn invalid_utf8_in_bodies_queries_paths_and_headers_is_refused(b: Backend) {
    let (api, t, lib) = setup(b).await;
    let put = format!("/api/describe/c/{lib}/o/0");
    let before = members(&api, &t, &lib).await;
    let forms: [&[u8]; 9] = [
        b"type=video&title=%ff",
        b"type=video&title=%C0%AF",      // overlong '/'
        b"type=video&title=%ED%A0%80",   // an encoded surrogate
        b"type=video&title=%e2%82",      // a truncated sequence
        b"type=video&title=\xff\xfe",    // raw bytes
        b"type=video&title=caf\xc3",     // raw, truncated
        b"%ff=1&type=video",             // in a name
        b"type=video&properties[%ff]=1", // in a property key
        b"type=video&properties[k]=\x80",
    ];
    for body in forms {
        let a = send_body(&api, Method::PUT, &put, &t, FORM, body.to_vec()).await;
        refused(&a, 400, "UTF-8");
    }
    let jsons: [&[u8]; 3] = [
        b"{\"type\":\"video\",\"title\":\"\xff\"}",
        b"{\"type\":\"video\",\"title\":\"\xc0\xaf\"}",
        b"{\"type\":\"video\",\"\xed\xa0\x80\":\"x\"}",
    ];
    for body in jsons {
        refused(
            &send_body(&api, Method::PUT, &put, &t, JSON, body.to_vec()).await,
            400,
            "UTF-8",
        );
    }
    for lone in [r#"\ud800"#, r#"\udc00\ud800"#, r#"\ud83dx"#] {
        let body = format!(r#"{{"type":"video","title":"{lone}"}}"#);
        refused(
            &send_body(&api, Method::PUT, &put, &t, JSON, body).await,
            400,
            "malformed JSON",
        );
    }
    let (ctype, body) = multipart(&[part(b"type", b"video"), part(b"title", b"\xff\xfe")]);
    refused(
        &send_body(&api, Method::PUT, &put, &t, &ctype, body).await,
        400,
        "UTF-8",
    );
    let (ctype, body) = multipart(&[part(b"type", b"video"), part(b"ti\xfftle", b"x")]);
    refused(
        &send_body(&api, Method::PUT, &put, &t, &ctype, body).await,
        400,
        "UTF-8",
    );
    assert_eq!(members(&api, &t, &lib).await, before, "nothing was created");
    // Queries and paths, percent-encoded.
    for path in [
        format!("/api/catalog/o/{lib}?ts=%ff"),
        format!("/api/catalog/o/{lib}?%ff=1"),
        format!("/api/describe/c/{lib}/o/{lib}?x=%C0%AF"),
        "/api/oembed?url=%ff".to_owned(),
    ] {
        refused(&api.get(&path, Some(&t)).await, 400, "UTF-8");
    }
    refused(
        &api.get(&format!("/api/describe/c/%ff/o/{lib}"), Some(&t))
            .await,
        400,
        "UUID",
    );
    refused(
        &api.get("/api/%ff%fe", Some(&t)).await,
        404,
        "API method not found",
    );
    assert_error(&api.get("/w/%ff%fe/", None).await, 404);
    // The token endpoint.
    let a = send_body(
        &api,
        Method::POST,
        "/api/oauth/access_token",
        &t,
        FORM,
        b"grant_type=\xff".to_vec(),
    )
    .await;
    refused(&a, 400, "UTF-8");
    assert_eq!(a.json["error"], "invalid_request");
    // Raw bytes in the request line are refused by the HTTP parser (protocol level).
    let port = api.app.port;
    let mut target = format!("/api/describe/c/{lib}/o/").into_bytes();
    target.extend_from_slice(b"\xff\xfe");
    let r = raw(port, request("GET", &target, &[], b"")).await;
    raw_refused(&r, 400, false, "raw 0xff in the path");
    let mut target = format!("/api/catalog/o/{lib}?ts=").into_bytes();
    target.push(0xff);
    let r = raw(port, request("GET", &target, &[], b"")).await;
    raw_refused(&r, 400, false, "raw 0xff in the query");
    // Header values may carry such bytes (obs-text): refused by the service, with JSON.
    let lib_path = format!("/api/describe/c/{lib}/o/{lib}");
    let r = raw(
        port,
        request(
            "GET",
            lib_path.as_bytes(),
            &[("Authorization", b"Bearer mla_\xff\xfe")],
            b"",
        ),
    )
    .await;
    raw_refused(&r, 401, true, "0xff in the token");
    let auth = format!("Bearer {t}");
    let r = raw(
        port,
        request(
            "POST",
            put.as_bytes(),
            &[
                ("Authorization", auth.as_bytes()),
                ("X-HTTP-Method-Override", b"P\xffT"),
                ("Content-Type", FORM.as_bytes()),
            ],
            b"type=video",
        ),
    )
    .await;
    raw_refused(&r, 400, true, "0xff in X-HTTP-Method-Override");
    let r = raw(
        port,
        request(
            "GET",
            b"/api/oauth/authorize?state=x",
            &[("Cookie", b"medialib_session=\xff\xfe")],
            b"",
        ),
    )
    .await;
    raw_refused(&r, 400, false, "0xff in a cookie (an HTML error page)");
    assert_eq!(members(&api, &t, &lib).await, before);
    assert_healthy(&api, &t, &lib).await;
}

// ---------------------------------------------------------------------------------------
// Huge, deep and wide bodies.

async fn huge_deep_and_wide_bodies_are_refused(b: Backend) {
    let (api, t, lib) = setup(b).await;
    let put = format!("/api/describe/c/{lib}/o/0");
    let port = api.app.port;
    let before = members(&api, &t, &lib).await;
    // Exactly the limit is read (and refused for its content); one byte more is a 413.
    let sized = |n: usize| {
        let head = r#"{"type":"video","description":""#;
        let pad = n - head.len() - 2;
        format!("{head}{}\"}}", "x".repeat(pad))
    };
    assert_eq!(sized(BODY_LIMIT).len(), BODY_LIMIT);
    refused(
        &send_body(&api, Method::PUT, &put, &t, JSON, sized(BODY_LIMIT)).await,
        400,
        "description is longer than 65536 characters",
    );
    // One byte more is a 413, answered from the declared length before the body is read (so
    // sent raw: a client still writing the body may see the connection close under it).
    let auth = format!("Bearer {t}");
    let one_more = (BODY_LIMIT + 1).to_string();
    let headers: [(&str, &[u8]); 3] = [
        ("Authorization", auth.as_bytes()),
        ("Content-Type", JSON.as_bytes()),
        ("Content-Length", one_more.as_bytes()),
    ];
    let r = raw(port, request("PUT", put.as_bytes(), &headers, b"")).await;
    raw_refused(&r, 413, true, "1 MiB + 1");
    assert!(
        r.body_has("request body is larger than 1048576 bytes"),
        "{r:?}"
    );
    // A declared length far over the limit likewise.
    let headers: [(&str, &[u8]); 3] = [
        ("Authorization", auth.as_bytes()),
        ("Content-Type", JSON.as_bytes()),
        ("Content-Length", b"104857600"),
    ];
    let r = raw(port, request("PUT", put.as_bytes(), &headers, b"")).await;
    raw_refused(&r, 413, true, "Content-Length: 100 MiB");
    // A chunked body with no declared length is cut at the limit too.
    let mut chunked = request(
        "PUT",
        put.as_bytes(),
        &[
            ("Authorization", auth.as_bytes()),
            ("Content-Type", JSON.as_bytes()),
            ("Transfer-Encoding", b"chunked"),
        ],
        b"",
    );
    chunked.extend_from_slice(format!("{:x}\r\n", BODY_LIMIT + 1).as_bytes());
    chunked.extend_from_slice(sized(BODY_LIMIT + 1).as_bytes());
    let r = raw(port, chunked).await;
    raw_refused(&r, 413, true, "a chunked body over 1 MiB");
    // The sign-in form's smaller limit holds for chunked bodies too (an HTML page).
    let mut chunked = request(
        "POST",
        b"/api/oauth/login",
        &[
            ("Content-Type", FORM.as_bytes()),
            ("Transfer-Encoding", b"chunked"),
        ],
        b"",
    );
    chunked.extend_from_slice(
        format!("{:x}\r\n{}", 64 * 1024 + 1, "x".repeat(64 * 1024 + 1)).as_bytes(),
    );
    let r = raw(port, chunked).await;
    raw_refused(&r, 413, false, "a chunked sign-in form over 64 KiB");
    // A body that cannot be read (a malformed chunk) is a 400, not a 413.
    let mut broken = request(
        "PUT",
        put.as_bytes(),
        &[
            ("Authorization", auth.as_bytes()),
            ("Content-Type", FORM.as_bytes()),
            ("Transfer-Encoding", b"chunked"),
        ],
        b"",
    );
    broken.extend_from_slice(b"5\r\ntype=\r\nzz\r\nvideo\r\n0\r\n\r\n");
    let r = raw(port, broken).await;
    assert_eq!(r.status, Some(400), "a malformed chunk: {r:?}");
    // Deep nesting: refused by the parser's depth limit, no stack overflow.
    let n = 100_000;
    let deep = [
        "[".repeat(n),
        format!("{}{}", "[".repeat(n), "]".repeat(n)),
        "{\"a\":".repeat(n),
        format!(r#"{{"type":"video","title":{}}}"#, "[".repeat(n)),
        format!(
            r#"{{"type":"video","properties":{{"k":{}{}}}}}"#,
            "[".repeat(n),
            "]".repeat(n)
        ),
        format!(
            r#"{{"type":"video","x":{}1{}}}"#,
            "{\"a\":".repeat(n),
            "}".repeat(n)
        ),
    ];
    for body in deep {
        // An error (depth limit, end of input, not a scalar), never a crash.
        refused(
            &send_body(&api, Method::PUT, &put, &t, JSON, body).await,
            400,
            "",
        );
    }
    // Wide: 10 000 fields in every body format and in the query.
    let fields = "at most 1000 form fields";
    let many: String = (0..10_000).map(|i| format!("f{i}=x&")).collect::<String>() + "type=video";
    refused(
        &send_body(&api, Method::PUT, &put, &t, FORM, many).await,
        400,
        fields,
    );
    let props: String = (0..10_000)
        .map(|i| format!("properties[k{i}]=x&"))
        .collect::<String>()
        + "type=video";
    refused(
        &send_body(&api, Method::PUT, &put, &t, FORM, props).await,
        400,
        fields,
    );
    let names: Vec<Vec<u8>> = (0..10_000).map(|i| format!("f{i}").into_bytes()).collect();
    let parts: Vec<(&[u8], &[u8])> = names.iter().map(|n| (n.as_slice(), &b"x"[..])).collect();
    let (ctype, body) = multipart(&parts);
    refused(
        &send_body(&api, Method::PUT, &put, &t, &ctype, body).await,
        400,
        fields,
    );
    let object: serde_json::Map<String, Value> =
        (0..10_000).map(|i| (format!("f{i}"), json!("x"))).collect();
    refused(
        &send_body(
            &api,
            Method::PUT,
            &put,
            &t,
            JSON,
            Value::Object(object.clone()).to_string(),
        )
        .await,
        400,
        fields,
    );
    let nested = json!({"type": "video", "properties": object});
    refused(
        &send_body(&api, Method::PUT, &put, &t, JSON, nested.to_string()).await,
        400,
        fields,
    );
    let query = format!("/api/catalog/o/{lib}?{}", "a&".repeat(10_000));
    refused(&api.get(&query, Some(&t)).await, 400, fields);
    // Under the field limit, the property limit still holds.
    let props: Vec<(String, String)> = (0..65)
        .map(|i| (format!("properties[k{i}]"), "v".into()))
        .collect();
    let mut form: Vec<(&str, &str)> = props
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    form.push(("type", "video"));
    refused(
        &api.call(Method::PUT, &put, Some(&t), &form).await,
        400,
        "at most 64 properties",
    );
    // The token endpoint: the same limits, answered as OAuth errors.
    let token_path = "/api/oauth/access_token";
    let a = send_body(
        &api,
        Method::POST,
        token_path,
        &t,
        JSON,
        "{\"a\":".repeat(n),
    )
    .await;
    refused(&a, 400, "malformed JSON");
    assert_eq!(a.json["error"], "invalid_request");
    let many: String = (0..10_000).map(|i| format!("f{i}=x&")).collect::<String>() + "grant_type=x";
    let a = send_body(&api, Method::POST, token_path, &t, FORM, many).await;
    refused(&a, 400, fields);
    assert_eq!(a.json["error"], "invalid_request");
    let two_mib = (2 * BODY_LIMIT).to_string();
    let headers: [(&str, &[u8]); 2] = [
        ("Content-Type", FORM.as_bytes()),
        ("Content-Length", two_mib.as_bytes()),
    ];
    let r = raw(port, request("POST", token_path.as_bytes(), &headers, b"")).await;
    raw_refused(&r, 413, true, "a 2 MiB token request");
    assert!(r.body_has("request body is larger"), "{r:?}");
    // Too many header fields: refused by the HTTP parser (protocol level).
    let names: Vec<String> = (0..200).map(|i| format!("X-Many-{i}")).collect();
    let headers: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b"1"[..])).collect();
    let r = raw(port, request("GET", b"/healthz", &headers, b"")).await;
    raw_refused(&r, 431, false, "200 header fields");
    assert_eq!(members(&api, &t, &lib).await, before, "nothing was created");
    assert_healthy(&api, &t, &lib).await;
}

// ---------------------------------------------------------------------------------------
// Repeated fields.

async fn a_repeated_field_is_refused_in_every_body_format_and_the_query(b: Backend) {
    let (api, t, lib) = setup(b).await;
    let put = format!("/api/describe/c/{lib}/o/0");
    let before = members(&api, &t, &lib).await;
    let a = api
        .call(
            Method::PUT,
            &put,
            Some(&t),
            &[("type", "video"), ("title", "a"), ("title", "b")],
        )
        .await;
    refused(&a, 400, "title is given more than once");
    let a = api
        .call(
            Method::PUT,
            &put,
            Some(&t),
            &[
                ("type", "video"),
                ("properties[k]", "1"),
                ("properties[k]", "2"),
            ],
        )
        .await;
    refused(&a, 400, "properties[k] is given more than once");
    let (ctype, body) = multipart(&[part(b"type", b"video"), part(b"type", b"catalog")]);
    refused(
        &send_body(&api, Method::PUT, &put, &t, &ctype, body).await,
        400,
        "type is given more than once",
    );
    for (body, name) in [
        (r#"{"type":"video","title":"a","title":"b"}"#, "title"),
        (
            r#"{"type":"video","properties":{"k":"1","k":"2"}}"#,
            "properties[k]",
        ),
        (
            r#"{"type":"video","properties[k]":"1","properties":{"k":"2"}}"#,
            "properties[k]",
        ),
        (r#"{"type":"video","type":"video"}"#, "type"),
    ] {
        let a = send_body(&api, Method::PUT, &put, &t, JSON, body).await;
        refused(&a, 400, &format!("{name} is given more than once"));
    }
    assert_eq!(members(&api, &t, &lib).await, before, "nothing was created");
    refused(
        &api.get(&format!("/api/catalog/o/{lib}?ts=1&ts=2"), Some(&t))
            .await,
        400,
        "ts is given more than once",
    );
    // A grant with two levels changes nothing.
    let perm = format!("/api/permission/c/{lib}/o/0");
    let a = api
        .call(
            Method::PUT,
            &perm,
            Some(&t),
            &[("uniqueId", "bob"), ("level", "view"), ("level", "admin")],
        )
        .await;
    refused(&a, 400, "level is given more than once");
    let entries = api.get(&perm, Some(&t)).await;
    assert_eq!(
        entries.json.as_array().unwrap().len(),
        1,
        "only alice: {entries:?}"
    );
    assert_healthy(&api, &t, &lib).await;
}

// ---------------------------------------------------------------------------------------
// Method overrides.

async fn odd_method_overrides_are_refused(b: Backend) {
    let (api, t, lib) = setup(b).await;
    let create = format!("/api/describe/c/{lib}/o/0");
    let before = members(&api, &t, &lib).await;
    let mut created = 0;
    // Any case of PUT, POST or DELETE is understood.
    for m in ["put", "Put", "PUT"] {
        let a = api
            .call(
                Method::POST,
                &create,
                Some(&t),
                &[("_METHOD", m), ("type", "file")],
            )
            .await;
        assert_eq!(a.status, StatusCode::CREATED, "{m}: {a:?}");
        created += 1;
    }
    let odd = "_METHOD / X-HTTP-Method-Override must be PUT, POST or DELETE";
    let long = "X".repeat(100_000);
    for m in [
        "GET",
        "get",
        "HEAD",
        "OPTIONS",
        "PATCH",
        "TRACE",
        "CONNECT",
        "",
        " PUT",
        "PUT ",
        "PUT\0",
        "PUTT",
        "PUT,DELETE",
        "ＰＵＴ",
        long.as_str(),
    ] {
        let a = api
            .call(
                Method::POST,
                &create,
                Some(&t),
                &[("_METHOD", m), ("type", "file")],
            )
            .await;
        refused(&a, 400, odd);
    }
    // Given twice, even with the same value: ambiguous, refused.
    for (first, second) in [("PUT", "PUT"), ("PUT", "DELETE"), ("DELETE", "PUT")] {
        let a = api
            .call(
                Method::POST,
                &create,
                Some(&t),
                &[("_METHOD", first), ("_METHOD", second), ("type", "file")],
            )
            .await;
        refused(&a, 400, "_METHOD is given more than once");
    }
    let post = |headers: &[(&str, &str)], form: &[(&str, &str)]| {
        let mut req = api
            .app
            .client
            .post(api.app.url(&create))
            .bearer_auth(&t)
            .form(form);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req
    };
    let override_header = "X-HTTP-Method-Override";
    for h in [
        "get",
        "",
        "PATCH",
        "PUT, DELETE",
        "DELETE PUT",
        &"P".repeat(8_000),
    ] {
        let a = api
            .send(post(&[(override_header, h)], &[("type", "file")]))
            .await;
        refused(&a, 400, odd);
    }
    let a = api
        .send(post(
            &[(override_header, "PUT"), (override_header, "PUT")],
            &[("type", "file")],
        ))
        .await;
    refused(&a, 400, "X-HTTP-Method-Override is given more than once");
    let a = api
        .send(post(
            &[(override_header, "PUT")],
            &[("_METHOD", "DELETE"), ("type", "file")],
        ))
        .await;
    refused(&a, 400, "name different methods");
    // The header and the field may both be given when they agree.
    let a = api
        .send(post(
            &[(override_header, "PUT")],
            &[("_METHOD", "put"), ("type", "file")],
        ))
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    created += 1;
    // Only POST is overridden: a PUT stays a PUT, a GET stays a GET.
    let a = api
        .call(
            Method::PUT,
            &create,
            Some(&t),
            &[("_METHOD", "DELETE"), ("type", "file")],
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
    created += 1;
    let read = format!("/api/describe/c/{lib}/o/{lib}?_METHOD=DELETE");
    let req = api
        .app
        .client
        .get(api.app.url(&read))
        .bearer_auth(&t)
        .header(override_header, "DELETE");
    assert_eq!(api.send(req).await.status, StatusCode::OK);
    // A well-formed override to a method the path lacks is the 501 of DECISIONS.md §4.
    let path = format!("/api/describe/c/{lib}/o/{lib}");
    let a = api
        .call(Method::POST, &path, Some(&t), &[("_METHOD", "DELETE")])
        .await;
    assert_error(&a, 501);
    assert_eq!(a.headers["allow"], "GET, HEAD, PUT, POST, OPTIONS");
    assert_eq!(
        members(&api, &t, &lib).await,
        before + created,
        "only the accepted calls created"
    );
    assert_healthy(&api, &t, &lib).await;
}

// ---------------------------------------------------------------------------------------
// Header injection through the authorization endpoint.

/// A page or redirect of the authorization endpoint: status, headers, body text.
async fn authorize(
    api: &ApiApp,
    params: &[(&str, &str)],
) -> (StatusCode, reqwest::header::HeaderMap, String) {
    let url = Url::parse_with_params(&api.app.url("/api/oauth/authorize"), params).unwrap();
    let res = api.app.client.get(url).send().await.unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    (status, headers, res.text().await.unwrap())
}

/// No header value carries CR, LF or NUL, and no header was planted by the input.
fn assert_no_injected_header(headers: &reqwest::header::HeaderMap, what: &str) {
    for (name, value) in headers {
        assert!(
            !value
                .as_bytes()
                .iter()
                .any(|b| matches!(b, b'\r' | b'\n' | 0)),
            "{what}: {name}: {value:?}"
        );
        assert!(!name.as_str().contains("evil"), "{what}: header {name}");
    }
    for cookie in headers.get_all("set-cookie") {
        assert!(
            !cookie.to_str().unwrap().contains("evil"),
            "{what}: {cookie:?}"
        );
    }
}

async fn header_injection_in_redirect_uri_and_state_never_reaches_a_header(b: Backend) {
    let (api, _t, _lib) = setup(b).await;
    let client = register_client(&api.services);
    let id = client.client_id.as_str();
    let base = |redirect: &'static str, state: &'static str| {
        vec![
            ("response_type", "code"),
            ("client_id", id),
            ("redirect_uri", redirect),
            ("state", state),
        ]
    };
    // An unregistered redirect URI (which these all are) gets a 400 page, never a redirect.
    let redirects: Vec<String> = vec![
        format!("{REDIRECT}\r\nSet-Cookie: evil=1"),
        format!("{REDIRECT}%0d%0aSet-Cookie:%20evil=1"),
        format!("{REDIRECT}%250d%250aSet-Cookie:%20evil=1"),
        format!("{REDIRECT}?\r\nLocation: https://evil.example/"),
        "https://evil.example/\r\n".to_owned(),
        format!("{REDIRECT}\n"),
        format!("{REDIRECT}\r"),
        format!("{REDIRECT}\0"),
        format!("{REDIRECT} "),
        format!("{REDIRECT}\u{2028}"),
    ];
    for redirect in &redirects {
        let params = [
            ("response_type", "code"),
            ("client_id", id),
            ("redirect_uri", redirect.as_str()),
            ("state", "s"),
        ];
        let (status, headers, body) = authorize(&api, &params).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{redirect:?}: {body}");
        assert!(
            headers.get("location").is_none(),
            "{redirect:?}: never a redirect"
        );
        assert!(
            headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/html")
        );
        assert_no_injected_header(&headers, redirect);
    }
    // With the registered URI, an invalid state (CR/LF, too long) goes back as
    // invalid_request, and never into a header unescaped.
    let long = "a".repeat(513);
    let long: &'static str = Box::leak(long.into_boxed_str());
    for state in [
        "s\r\nSet-Cookie: evil=1",
        "s\nLocation: https://evil.example/",
        "s\0",
        long,
    ] {
        let (status, headers, body) = authorize(&api, &base(REDIRECT, state)).await;
        assert_eq!(status, StatusCode::FOUND, "{state:?}: {body}");
        let location = headers["location"].to_str().unwrap();
        assert!(location.starts_with(&format!("{REDIRECT}?")), "{location}");
        assert!(location.contains("error=invalid_request"), "{location}");
        assert_no_injected_header(&headers, state);
    }
    // A valid state that looks like an escape comes back as the same text, escaped again.
    let state = "%0d%0aSet-Cookie:%20evil=1";
    let mut params = base(REDIRECT, state);
    params[0].1 = "token";
    let (status, headers, body) = authorize(&api, &params).await;
    assert_eq!(status, StatusCode::FOUND, "{body}");
    assert_no_injected_header(&headers, state);
    let location = Url::parse(headers["location"].to_str().unwrap()).unwrap();
    let back: Vec<(String, String)> = location.query_pairs().into_owned().collect();
    assert!(back.contains(&("state".into(), state.into())), "{location}");
    assert!(
        back.contains(&("error".into(), "unsupported_response_type".into())),
        "{location}"
    );
    // The longest valid state, with markup, is shown escaped on the sign-in page.
    let markup = "\"><script>alert(1)</script>";
    let state: String = format!("{markup}{}", "b".repeat(512 - markup.len()));
    let state: &'static str = Box::leak(state.into_boxed_str());
    let (status, headers, body) = authorize(&api, &base(REDIRECT, state)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(!body.contains("<script>alert(1)"), "{body}");
    assert_no_injected_header(&headers, state);
    // Raw CR/LF in the request line is refused by the HTTP parser; nothing is echoed.
    let target = format!(
        "/api/oauth/authorize?response_type=code&client_id={id}&state=s\r\nSet-Cookie: evil=1\r\nX: "
    );
    let r = raw(api.app.port, request("GET", target.as_bytes(), &[], b"")).await;
    raw_refused(&r, 400, false, "CR/LF in the request line");
    assert!(!r.head.to_ascii_lowercase().contains("evil"), "{r:?}");
}

// ---------------------------------------------------------------------------------------
// SQL metacharacters and NUL.

/// Text that would break a query built by pasting strings (none is: every query binds).
const NASTY: [&str; 14] = [
    "'; DROP TABLE objects; --",
    "Robert'); DROP TABLE users;--",
    "%",
    "_",
    "\\",
    "%_\\%",
    "\\'",
    "' OR '1'='1",
    "\"; DELETE FROM grants; --",
    "$1",
    "?",
    "`x` /* */ -- \t\n",
    "😀'--",
    "a''b\\\\c",
];

async fn sql_metacharacters_are_stored_verbatim_in_every_text_field(b: Backend) {
    let (api, t, lib) = setup(b).await;
    let put = format!("/api/describe/c/{lib}/o/0");
    let before = members(&api, &t, &lib).await;
    let alice = api.get(&format!("/api/user/c/{lib}/o/0"), Some(&t)).await;
    let alice = alice.json["userId"].as_str().unwrap().to_owned();
    for (i, nasty) in NASTY.iter().enumerate() {
        let key = format!("properties[{}]", nasty.trim());
        let a = api
            .call(
                Method::PUT,
                &put,
                Some(&t),
                &[
                    ("type", "video"),
                    ("title", nasty),
                    ("description", nasty),
                    (&key, nasty),
                ],
            )
            .await;
        assert_eq!(a.status, StatusCode::CREATED, "{nasty:?}: {a:?}");
        let id = a.json["uuid"].as_str().unwrap().to_owned();
        let r = api
            .get(&format!("/api/describe/c/{lib}/o/{id}"), Some(&t))
            .await
            .json;
        assert_eq!(r["title"], *nasty);
        assert_eq!(r["description"], *nasty);
        assert_eq!(r["properties"], json!({ nasty.trim(): nasty }));
        // Through info, too.
        let info = format!("/api/info/c/{lib}/o/{id}");
        let swapped = format!("{nasty}{i}");
        let a = api
            .call(
                Method::POST,
                &info,
                Some(&t),
                &[("title", &swapped), ("description", &swapped)],
            )
            .await;
        assert_eq!(a.status, StatusCode::ACCEPTED, "{a:?}");
        let r = api.get(&info, Some(&t)).await.json;
        assert_eq!(
            (r["title"].as_str(), r["description"].as_str()),
            (Some(swapped.as_str()), Some(swapped.as_str()))
        );
        // A uniqueId granted a level (provisioning the user), and one added with names.
        let perm = format!("/api/permission/c/{lib}/o/0");
        let a = api
            .call(
                Method::PUT,
                &perm,
                Some(&t),
                &[("uniqueId", nasty.trim()), ("level", "view")],
            )
            .await;
        assert_eq!(a.status, StatusCode::CREATED, "{nasty:?}: {a:?}");
        let unique = format!("u{i}{}", nasty.trim());
        let users = format!("/api/user/c/{lib}/o/0");
        let a = api
            .call(
                Method::POST,
                &users,
                Some(&t),
                &[
                    ("uniqueId", &unique),
                    ("firstName", nasty.trim()),
                    ("lastName", &swapped.replace(['\t', '\n'], "")),
                ],
            )
            .await;
        assert_eq!(a.status, StatusCode::CREATED, "{nasty:?}: {a:?}");
        let user = a.json["userId"].as_str().unwrap();
        let u = api
            .get(&format!("/api/user/c/{lib}/o/{user}"), Some(&t))
            .await
            .json;
        assert_eq!(u["uniqueId"], unique.as_str());
        assert_eq!(u["firstName"], nasty.trim());
        // The caller's own names.
        let me = format!("/api/user/c/{lib}/o/{alice}");
        let a = api
            .call(Method::POST, &me, Some(&t), &[("lastName", nasty.trim())])
            .await;
        assert_eq!(a.status, StatusCode::ACCEPTED, "{a:?}");
        assert_eq!(api.get(&me, Some(&t)).await.json["lastName"], nasty.trim());
    }
    // Every object and every grant is there.
    assert_eq!(members(&api, &t, &lib).await, before + NASTY.len());
    let entries = api
        .get(&format!("/api/permission/c/{lib}/o/0"), Some(&t))
        .await
        .json;
    let ids: Vec<&str> = entries
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["uniqueId"].as_str().unwrap())
        .collect();
    for nasty in NASTY {
        assert!(ids.contains(&nasty.trim()), "{nasty:?} in {ids:?}");
    }
    // Enumerated and numeric fields refuse them.
    let a = api
        .call(Method::PUT, &put, Some(&t), &[("type", "video'; --")])
        .await;
    refused(&a, 400, "type must be one of");
    let a = api
        .call(
            Method::PUT,
            &format!("/api/permission/c/{lib}/o/0"),
            Some(&t),
            &[("uniqueId", "x"), ("level", "admin'--")],
        )
        .await;
    assert_error(&a, 400);
    for q in ["ts=1'--", "ts=1%20OR%201=1", "completeRecords=1;DROP"] {
        assert_error(
            &api.get(&format!("/api/catalog/o/{lib}?{q}"), Some(&t))
                .await,
            400,
        );
    }
    assert_healthy(&api, &t, &lib).await;
}

async fn nul_is_refused_in_every_text_field(b: Backend) {
    let (api, t, lib) = setup(b).await;
    let put = format!("/api/describe/c/{lib}/o/0");
    let v = api.object(&t, &lib, "video", "kept").await;
    let before = members(&api, &t, &lib).await;
    let alice = api.get(&format!("/api/user/c/{lib}/o/0"), Some(&t)).await;
    let alice = alice.json["userId"].as_str().unwrap().to_owned();
    let nul = "a\0b";
    for (field, needle) in [
        ("title", "title must not contain NUL"),
        ("description", "description must not contain NUL"),
        ("properties[k]", "must not contain NUL"),
        ("properties[a\0]", "control characters"),
    ] {
        let a = api
            .call(
                Method::PUT,
                &put,
                Some(&t),
                &[("type", "video"), (field, nul)],
            )
            .await;
        refused(&a, 400, needle);
        let body = if let Some(key) = field
            .strip_prefix("properties[")
            .and_then(|k| k.strip_suffix(']'))
        {
            json!({"type": "video", "properties": {key: nul}})
        } else {
            json!({"type": "video", field: nul})
        };
        let a = send_body(&api, Method::PUT, &put, &t, JSON, body.to_string()).await;
        refused(&a, 400, needle);
    }
    let described = format!("/api/describe/c/{lib}/o/{v}");
    let a = api
        .call(
            Method::POST,
            &described,
            Some(&t),
            &[("type", "video"), ("title", nul)],
        )
        .await;
    refused(&a, 400, "title must not contain NUL");
    let info = format!("/api/info/c/{lib}/o/{v}");
    for field in ["title", "description"] {
        refused(
            &api.call(Method::POST, &info, Some(&t), &[(field, nul)])
                .await,
            400,
            "NUL",
        );
    }
    assert_eq!(api.get(&described, Some(&t)).await.json["title"], "kept");
    let me = format!("/api/user/c/{lib}/o/{alice}");
    for field in ["firstName", "lastName", "uniqueId"] {
        refused(
            &api.call(Method::POST, &me, Some(&t), &[(field, nul)]).await,
            400,
            "control characters",
        );
    }
    let users = format!("/api/user/c/{lib}/o/0");
    refused(
        &api.call(Method::POST, &users, Some(&t), &[("uniqueId", nul)])
            .await,
        400,
        "control characters",
    );
    let a = api
        .call(
            Method::POST,
            &users,
            Some(&t),
            &[("uniqueId", "carol"), ("firstName", nul)],
        )
        .await;
    refused(&a, 400, "control characters");
    let perm = format!("/api/permission/c/{lib}/o/0");
    refused(
        &api.call(Method::PUT, &perm, Some(&t), &[("uniqueId", nul)])
            .await,
        400,
        "control characters",
    );
    refused(
        &api.call(Method::DELETE, &perm, Some(&t), &[("uniqueId", nul)])
            .await,
        400,
        "control characters",
    );
    for q in ["ts=%00", "completeRecords=%00"] {
        assert_error(
            &api.get(&format!("/api/catalog/o/{lib}?{q}"), Some(&t))
                .await,
            400,
        );
    }
    assert_eq!(members(&api, &t, &lib).await, before, "nothing was created");
    let entries = api.get(&perm, Some(&t)).await;
    assert_eq!(
        entries.json.as_array().unwrap().len(),
        1,
        "no user was provisioned: {entries:?}"
    );
    // The OAuth endpoints look such values up, never store them.
    let client = register_client(&api.services);
    let secret = client.client_secret.as_ref().unwrap().expose().to_owned();
    let id = client.client_id.clone();
    let token_call = |path: &'static str, form: Vec<(&'static str, String)>| {
        let req = api.app.client.post(api.app.url(path)).form(&form);
        api.send(req)
    };
    let creds = |mut form: Vec<(&'static str, String)>| {
        form.push(("client_id", id.clone()));
        form.push(("client_secret", secret.clone()));
        form
    };
    for code in ["mlc_\0", "mlc_'; DROP TABLE codes; --", "\0"] {
        let form = creds(vec![
            ("grant_type", "authorization_code".into()),
            ("code", code.into()),
            ("redirect_uri", REDIRECT.into()),
        ]);
        let a = token_call("/api/oauth/access_token", form).await;
        assert_error(&a, 400);
        assert_eq!(a.json["error"], "invalid_grant", "{a:?}");
    }
    for refresh in ["mlr_\0", "mlr_' OR '1'='1"] {
        let form = creds(vec![
            ("grant_type", "refresh_token".into()),
            ("refresh_token", refresh.into()),
        ]);
        let a = token_call("/api/oauth/access_token", form).await;
        assert_error(&a, 400);
        assert_eq!(a.json["error"], "invalid_grant", "{a:?}");
    }
    for bad_id in ["a\0b", "'; DROP TABLE clients; --", "%"] {
        let form = vec![
            ("grant_type", "authorization_code".into()),
            ("code", "mlc_x".into()),
            ("client_id", bad_id.to_owned()),
            ("client_secret", secret.clone()),
        ];
        let a = token_call("/api/oauth/access_token", form).await;
        assert_error(&a, 401);
        assert_eq!(a.json["error"], "invalid_client", "{a:?}");
    }
    let a = token_call(
        "/api/oauth/revoke",
        creds(vec![("token", "mla_\0'--".into())]),
    )
    .await;
    assert_eq!(
        a.status,
        StatusCode::OK,
        "RFC 7009: an unknown token is fine: {a:?}"
    );
    let a = token_call(
        "/api/oauth/introspect",
        creds(vec![("token", "mla_\0'--".into())]),
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert_eq!(a.json["active"], false);
    assert_healthy(&api, &t, &lib).await;
}

// ---------------------------------------------------------------------------------------
// Path traversal in shortcodes, and files that must never be served.

async fn path_traversal_in_shortcodes_is_not_found(b: Backend) {
    let (api, t, lib) = setup(b).await;
    let v = api.object(&t, &lib, "video", "V").await;
    let a = api
        .call(
            Method::POST,
            &format!("/api/describe/c/{lib}/o/{v}"),
            Some(&t),
            &[("type", "video"), ("public", "true")],
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED);
    let link = api
        .get(&format!("/api/describe/c/{lib}/o/{v}"), Some(&t))
        .await
        .json["permLink"]
        .as_str()
        .unwrap()
        .to_owned();
    let code = link
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    let port = api.app.port;
    // The real code works (a control).
    let r = raw(
        port,
        request("GET", format!("/w/{code}/").as_bytes(), &[], b""),
    )
    .await;
    assert_eq!(r.status, Some(302), "{r:?}");
    let targets: Vec<String> = vec![
        "/w/../../etc/passwd/".into(),
        "/w/../../../../../../etc/passwd".into(),
        "/w/..%2f..%2fetc%2fpasswd/".into(),
        "/w/%2e%2e%2f%2e%2e%2fetc%2fpasswd/".into(),
        "/w/%2e%2e/%2e%2e/etc/passwd".into(),
        "/w/%252e%252e%252fetc%252fpasswd".into(),
        "/w/..%5c..%5cetc%5cpasswd".into(),
        "/w/..\\..\\etc\\passwd".into(),
        "/w/%c0%ae%c0%ae/%c0%ae%c0%ae/etc/passwd".into(),
        "/w/....//....//etc/passwd".into(),
        "/w/..;/etc/passwd".into(),
        "/w/%00".into(),
        "/w/.".into(),
        "/w/..".into(),
        "/w/%2e".into(),
        format!("/w/{code}/../../../etc/passwd"),
        format!("/w/{code}%2f..%2f..%2fetc%2fpasswd"),
        format!("/w/{code}%00"),
        format!("/w/{code}/%2e%2e"),
        "/w//etc/passwd".into(),
        "/w/~/.ssh/id_rsa".into(),
    ];
    for target in &targets {
        let r = raw(port, request("GET", target.as_bytes(), &[], b"")).await;
        raw_refused(&r, 404, true, target);
        assert!(!r.body_has("root:"), "{target}: {r:?}");
    }
    // The pages and the stylesheet routes serve nothing from the file system either.
    for target in [
        "/m/../../etc/passwd",
        "/m/..%2f..%2fetc%2fpasswd",
        "/embed/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "/embed/..%2f..%2fCargo.toml.js",
        "/assets/../../Cargo.toml",
        "/assets/..%2f..%2fCargo.toml",
        "/assets/player.css/../../../etc/passwd",
        "/assets/%2e%2e/%2e%2e/Cargo.toml",
    ] {
        let r = raw(port, request("GET", target.as_bytes(), &[], b"")).await;
        assert_eq!(r.status, Some(404), "{target}: {r:?}");
        assert!(
            !r.body_has("root:") && !r.body_has("[workspace]") && !r.body_has("[package]"),
            "{target}: {r:?}"
        );
    }
    // oEmbed with a traversal URL: not found, JSON.
    let url = format!("{}/w/..%2f..%2fetc%2fpasswd/", api.app.address);
    let a = api
        .get(
            &format!("/api/oembed?url={}&format=json", url.replace('%', "%25")),
            None,
        )
        .await;
    assert!(
        a.status == StatusCode::NOT_FOUND || a.status == StatusCode::BAD_REQUEST,
        "{a:?}"
    );
    assert!(a.json["message"].is_string(), "{a:?}");
    assert_healthy(&api, &t, &lib).await;
}

// ---------------------------------------------------------------------------------------
// Very long paths (no database involved beyond the health check: SQLite only).

#[tokio::test]
async fn very_long_paths_are_refused_quickly() {
    let (api, t, lib) = setup(Backend::Sqlite).await;
    let port = api.app.port;
    let long = "a".repeat(60_000);
    // With a token: a call that is not public is judged for its path only once the caller
    // is known (without one, any of these API calls is a 401 first).
    let auth = format!("Bearer {t}");
    for (target, status) in [
        (format!("/api/{long}"), 404),
        (format!("/api/describe/c/{long}/o/0"), 400),
        (format!("/w/{long}/"), 404),
        (format!("/{long}"), 404),
        (format!("/api/{}", "a/".repeat(20_000)), 404),
        (format!("/api/{}", "../".repeat(15_000)), 404),
        (
            format!("/api/catalog/o/{lib}?ts={}", "9".repeat(60_000)),
            400,
        ),
    ] {
        let headers = [("Authorization", auth.as_bytes())];
        let r = raw(port, request("GET", target.as_bytes(), &headers, b"")).await;
        raw_refused(&r, status, true, &target[..60]);
        assert!(r.message().unwrap().len() < 300, "{:?}", r.message());
    }
    // 64 KiB and more: over the longest URI the HTTP parser takes (protocol level).
    let r = raw(
        port,
        request(
            "GET",
            format!("/api/{}", "a".repeat(64 * 1024)).as_bytes(),
            &[],
            b"",
        ),
    )
    .await;
    raw_refused(&r, 400, false, "a 64 KiB path");
    let r = raw(
        port,
        request(
            "GET",
            format!("/api/{}", "a".repeat(1 << 20)).as_bytes(),
            &[],
            b"",
        ),
    )
    .await;
    match r.status {
        Some(s) => assert!((400..500).contains(&s), "a 1 MiB path: {r:?}"),
        // The server stops reading at its header limit and closes; the reset may beat the 431.
        None => assert_eq!(
            r.read_error,
            Some(std::io::ErrorKind::ConnectionReset),
            "{r:?}"
        ),
    }
    assert!(r.elapsed < Duration::from_secs(5), "{r:?}");
    assert_healthy(&api, &t, &lib).await;
}

// ---------------------------------------------------------------------------------------
// Slow clients (no database involved: SQLite only).

/// The server's client request timeout (startup's `CLIENT_REQUEST_TIMEOUT`).
const CLIENT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the API waits for a request body after the head (`input::BODY_TIMEOUT`).
const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// Sends a request's head one header line a second; returns the answer, read when the
/// server ends the connection.
fn dribble_headers(port: u16) -> Raw {
    let start = Instant::now();
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .unwrap();
    let mut writer = s.try_clone().unwrap();
    std::thread::spawn(move || {
        for i in 0..15 {
            std::thread::sleep(Duration::from_secs(1));
            if writer
                .write_all(format!("X-Slow-{i}: 1\r\n").as_bytes())
                .is_err()
            {
                return;
            }
        }
    });
    read_answer(s, start)
}

/// Opens a connection and sends nothing.
fn idle(port: u16) -> Raw {
    let start = Instant::now();
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    read_answer(s, start)
}

#[tokio::test]
async fn slow_clients_are_cut_off_at_the_client_request_timeout() {
    let (api, t, lib) = setup(Backend::Sqlite).await;
    let port = api.app.port;
    let slow = tokio::task::spawn_blocking(move || dribble_headers(port));
    let quiet = tokio::task::spawn_blocking(move || idle(port));
    // Meanwhile, everyone else is served.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_healthy(&api, &t, &lib).await;
    let (slow, quiet) = (slow.await.unwrap(), quiet.await.unwrap());
    let bounds = CLIENT_REQUEST_TIMEOUT - Duration::from_millis(500)..CLIENT_REQUEST_TIMEOUT * 2;
    assert_eq!(slow.status, Some(408), "{slow:?}");
    assert!(
        bounds.contains(&slow.elapsed),
        "cut off after {:?}",
        slow.elapsed
    );
    assert!(
        slow.read_error.is_none() || slow.read_error == Some(std::io::ErrorKind::ConnectionReset),
        "{slow:?}"
    );
    assert!(quiet.status.is_none_or(|s| s == 408), "{quiet:?}");
    assert!(
        bounds.contains(&quiet.elapsed),
        "idle connection closed after {:?}",
        quiet.elapsed
    );
    assert_healthy(&api, &t, &lib).await;
}

/// A head announcing a body, then `sent` of it, then nothing.
fn stall_body(port: u16, path: &str, sent: &[u8]) -> Raw {
    let start = Instant::now();
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(BODY_TIMEOUT * 2)).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\n"
    )
    .unwrap();
    s.write_all(sent).unwrap();
    read_answer(s, start)
}

#[tokio::test]
async fn a_body_that_never_arrives_is_cut_off_with_408() {
    let (api, t, lib) = setup(Backend::Sqlite).await;
    let port = api.app.port;
    let api_call = format!("/api/describe/c/{lib}/o/0");
    let stalled = [
        tokio::task::spawn_blocking(move || stall_body(port, &api_call, b"title=")),
        tokio::task::spawn_blocking(move || stall_body(port, "/api/oauth/access_token", b"")),
    ];
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_healthy(&api, &t, &lib).await;
    for s in stalled {
        let r = s.await.unwrap();
        assert_eq!(r.status, Some(408), "{r:?}");
        assert!(r.body_has("\"message\""), "{r:?}");
        assert!(
            (BODY_TIMEOUT - Duration::from_secs(1)..BODY_TIMEOUT + Duration::from_secs(10))
                .contains(&r.elapsed),
            "cut off after {:?}",
            r.elapsed
        );
    }
    assert_healthy(&api, &t, &lib).await;
}

medialib_adapters_diesel::backend_tests!(
    async on [sqlite, postgres] with crate::api::run:
    malformed_and_oversize_uuids_in_every_path_position_are_400,
    titles_of_255_characters_are_kept_verbatim_and_256_refused,
    invalid_utf8_in_bodies_queries_paths_and_headers_is_refused,
    huge_deep_and_wide_bodies_are_refused,
    a_repeated_field_is_refused_in_every_body_format_and_the_query,
    odd_method_overrides_are_refused,
    header_injection_in_redirect_uri_and_state_never_reaches_a_header,
    sql_metacharacters_are_stored_verbatim_in_every_text_field,
    nul_is_refused_in_every_text_field,
    path_traversal_in_shortcodes_is_not_found,
);
