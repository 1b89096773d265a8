//! Reading an API call: the effective method (with `_METHOD` / `X-HTTP-Method-Override`),
//! the query, and the body as form fields (urlencoded, multipart or JSON), UTF-8 only,
//! at most [`BODY_LIMIT`] bytes. A field may appear once in the query and once in the body:
//! a repeat (JSON keys and `properties[KEY]` included) is a 400, and so is a method override
//! given twice or two overrides that disagree.

use actix_web::http::{Method, header};
use actix_web::{HttpRequest, web};

use medialib_domain::form::{self, MAX_FIELDS};

use crate::error::ApiError;

/// Largest accepted API request body (DECISIONS.md §4).
pub const BODY_LIMIT: usize = 1 << 20;

/// Form fields in arrival order; a repeated name keeps every value (so that
/// [`Form::repeated_name`] can refuse it), and [`Form::get`] returns the last one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Form(Vec<(String, String)>);

impl Form {
    /// The last value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The value of `name` parsed by `parse`, `None` when absent.
    pub fn parse<T, E: std::fmt::Display>(
        &self,
        name: &str,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> Result<Option<T>, ApiError> {
        self.get(name)
            .map(|v| parse(v).map_err(|e| ApiError::BadRequest(e.to_string())))
            .transpose()
    }

    /// Every field, in arrival order.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.0
    }

    /// The first field name that occurs more than once (RFC 6749 §3.1 forbids repeats).
    pub fn repeated_name(&self) -> Option<&str> {
        let mut seen = std::collections::HashSet::new();
        self.0
            .iter()
            .map(|(k, _)| k.as_str())
            .find(|k| !seen.insert(*k))
    }

    fn push(&mut self, k: String, v: String) -> Result<(), ApiError> {
        if self.0.len() >= MAX_FIELDS {
            return Err(ApiError::BadRequest(format!(
                "at most {MAX_FIELDS} form fields are accepted"
            )));
        }
        self.0.push((k, v));
        Ok(())
    }
}

/// One API call, read.
#[derive(Debug)]
pub struct ApiCall {
    /// The method after overrides.
    pub method: Method,
    /// The query string's fields.
    pub query: Form,
    /// The body's fields.
    pub form: Form,
}

impl ApiCall {
    /// Reads the request; only PUT/POST/DELETE bodies are parsed.
    pub async fn read(req: &HttpRequest, payload: web::Payload) -> Result<Self, ApiError> {
        let body = Self::body(req, payload).await?;
        Self::parse(req, body)
    }

    /// The first step of reading a call: its body, bounded, read before anything can be
    /// refused so that a client still sending it gets the answer rather than a reset
    /// connection (`None` for methods without a body). Nothing is judged yet.
    pub async fn body(
        req: &HttpRequest,
        payload: web::Payload,
    ) -> Result<Option<web::Bytes>, ApiError> {
        if matches!(*req.method(), Method::POST | Method::PUT | Method::DELETE) {
            Ok(Some(read_body(req, payload).await?))
        } else {
            Ok(None)
        }
    }

    /// The second step: the query and `body` as fields (a repeat is a 400), and the
    /// effective method (overrides applied).
    pub fn parse(req: &HttpRequest, body: Option<web::Bytes>) -> Result<Self, ApiError> {
        let mut method = req.method().clone();
        let query = parse_urlencoded(req.query_string().as_bytes())?;
        let form = match body {
            Some(body) => parse_body(req, &body)?,
            None => Form::default(),
        };
        if let Some(name) = query.repeated_name().or_else(|| form.repeated_name()) {
            return Err(ApiError::BadRequest(format!(
                "{name} is given more than once"
            )));
        }
        if method == Method::POST
            && let Some(m) = method_override(req, &form)?
        {
            method = m;
        }
        Ok(Self {
            method,
            query,
            form,
        })
    }

    /// A field from the body, or else the query.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.form.get(name).or_else(|| self.query.get(name))
    }

    /// Refuses a field (in the query or the body) that the call does not know, naming it
    /// (DECISIONS.md §4), so that a typo never silently leaves a field out. `known` lists
    /// the call's fields; a name ending in `[` admits every `name[KEY]` (`properties[`);
    /// `_METHOD` is always known.
    pub fn only(&self, known: &[&str]) -> Result<(), ApiError> {
        let is_known = |name: &str| {
            name == "_METHOD"
                || known.iter().any(|k| match k.strip_suffix('[') {
                    Some(prefix) => name
                        .strip_prefix(prefix)
                        .and_then(|rest| rest.strip_prefix('['))
                        .is_some_and(|rest| rest.ends_with(']')),
                    None => name == *k,
                })
        };
        match self
            .query
            .pairs()
            .iter()
            .chain(self.form.pairs())
            .find(|(k, _)| !is_known(k))
        {
            Some((name, _)) => Err(ApiError::BadRequest(format!("unknown field: {name}"))),
            None => Ok(()),
        }
    }
}

fn bad_override() -> ApiError {
    ApiError::BadRequest("_METHOD / X-HTTP-Method-Override must be PUT, POST or DELETE".into())
}

/// The method a POST asks for with `X-HTTP-Method-Override` or `_METHOD`: each at most
/// once, and the same method when both are given.
fn method_override(req: &HttpRequest, form: &Form) -> Result<Option<Method>, ApiError> {
    let mut headers = req.headers().get_all("x-http-method-override");
    let header = headers.next();
    if headers.next().is_some() {
        return Err(ApiError::BadRequest(
            "X-HTTP-Method-Override is given more than once".into(),
        ));
    }
    let header = header
        .map(|v| v.to_str().map_err(|_| bad_override()))
        .transpose()?
        .map(parse_override)
        .transpose()?;
    let field = form.get("_METHOD").map(parse_override).transpose()?;
    match (header, field) {
        (Some(h), Some(f)) if h != f => Err(ApiError::BadRequest(
            "_METHOD and X-HTTP-Method-Override name different methods".into(),
        )),
        (h, f) => Ok(h.or(f)),
    }
}

fn parse_override(m: &str) -> Result<Method, ApiError> {
    match m.to_ascii_uppercase().as_str() {
        "PUT" => Ok(Method::PUT),
        "POST" => Ok(Method::POST),
        "DELETE" => Ok(Method::DELETE),
        _ => Err(bad_override()),
    }
}

async fn read_body(req: &HttpRequest, payload: web::Payload) -> Result<web::Bytes, ApiError> {
    let too_large = ApiError::PayloadTooLarge { limit: BODY_LIMIT };
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > BODY_LIMIT as u64) {
        return Err(too_large);
    }
    body_within(payload, BODY_LIMIT).await
}

/// How long a client may take to send a request body once its head has arrived (actix's
/// `client_request_timeout` covers only the head).
const BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The whole body, at most `limit` bytes (else 413; a chunked body has no declared length to
/// check first), arriving within [`BODY_TIMEOUT`] (else 408, so a client that announces a body
/// and never sends it cannot hold a connection and a worker's attention for ever); a body
/// that cannot be read (a malformed chunk, a client gone) is a 400.
pub(crate) async fn body_within(
    payload: web::Payload,
    limit: usize,
) -> Result<web::Bytes, ApiError> {
    match actix_web::rt::time::timeout(BODY_TIMEOUT, payload.to_bytes_limited(limit)).await {
        Ok(Ok(Ok(bytes))) => Ok(bytes),
        Ok(Ok(Err(e))) => Err(ApiError::BadRequest(format!(
            "cannot read the request body: {e}"
        ))),
        Ok(Err(_)) => Err(ApiError::PayloadTooLarge { limit }),
        Err(_) => Err(ApiError::RequestTimeout),
    }
}

fn parse_body(req: &HttpRequest, body: &[u8]) -> Result<Form, ApiError> {
    if body.is_empty() {
        return Ok(Form::default());
    }
    let ctype = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/x-www-form-urlencoded");
    let essence = ctype
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match essence.as_str() {
        "application/x-www-form-urlencoded" => parse_urlencoded(body),
        "multipart/form-data" => parse_multipart(ctype, body),
        "application/json" => parse_json(body),
        other => Err(ApiError::BadRequest(format!(
            "unsupported content type {other:?}: send application/x-www-form-urlencoded, multipart/form-data or application/json"
        ))),
    }
}

fn not_utf8() -> ApiError {
    ApiError::BadRequest("input must be UTF-8".into())
}

/// Parses `a=1&b=2` strictly (the domain's decoder): malformed escapes, non-UTF-8 and
/// more than [`MAX_FIELDS`] fields are errors.
pub fn parse_urlencoded(input: &[u8]) -> Result<Form, ApiError> {
    form::parse_urlencoded(input)
        .map(Form)
        .map_err(|e| ApiError::BadRequest(e.to_string()))
}

fn parse_json(body: &[u8]) -> Result<Form, ApiError> {
    let text = std::str::from_utf8(body).map_err(|_| not_utf8())?;
    let value: Json = serde_json::from_str(text)
        .map_err(|e| ApiError::BadRequest(format!("malformed JSON: {e}")))?;
    let Json::Object(members) = value else {
        return Err(ApiError::BadRequest("a JSON body must be an object".into()));
    };
    let scalar = |key: &str, v: Json| -> Result<String, ApiError> {
        match v {
            Json::Scalar(s) => Ok(s),
            Json::Object(_) | Json::Other => Err(ApiError::BadRequest(format!(
                "field {key} must be a string, number or boolean"
            ))),
        }
    };
    let mut form = Form::default();
    for (k, v) in members {
        if k == "properties" {
            let Json::Object(props) = v else {
                return Err(ApiError::BadRequest("properties must be an object".into()));
            };
            for (pk, pv) in props {
                let value = scalar(&pk, pv)?;
                form.push(format!("properties[{pk}]"), value)?;
            }
        } else {
            let value = scalar(&k, v)?;
            form.push(k, value)?;
        }
    }
    Ok(form)
}

/// A JSON value as a form field sees it. Objects keep every member in order, repeated keys
/// included (a map would silently keep only the last), so that a repeat can be refused.
enum Json {
    /// A string, number or boolean, as text.
    Scalar(String),
    /// An object's members, in order.
    Object(Vec<(String, Json)>),
    /// `null` or an array (skipped without building it).
    Other,
}

impl<'de> serde::Deserialize<'de> for Json {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> serde::de::Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Scalar(v.to_string()))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Scalar(v.to_string()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Scalar(v.to_string()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
        // serde_json's own spelling of the number (`1.0`, `1e300`).
        Ok(serde_json::Number::from_f64(v).map_or(Json::Other, |n| Json::Scalar(n.to_string())))
    }

    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::Scalar(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::Scalar(v))
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Other)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(Json::Other)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut members = Vec::new();
        while let Some(member) = map.next_entry::<String, Json>()? {
            members.push(member);
        }
        Ok(Json::Object(members))
    }
}

fn parse_multipart(ctype: &str, body: &[u8]) -> Result<Form, ApiError> {
    let bad = |m: &str| ApiError::BadRequest(format!("malformed multipart body: {m}"));
    let boundary = ctype
        .split(';')
        .filter_map(|p| p.trim().strip_prefix("boundary="))
        .next()
        .map(|b| b.trim_matches('"'))
        .filter(|b| !b.is_empty() && b.len() <= 70)
        .ok_or_else(|| bad("no boundary"))?;
    let delimiter = format!("--{boundary}");
    let delim = delimiter.as_bytes();
    let mut form = Form::default();
    let mut rest = body;
    // Skip the preamble up to the first delimiter.
    let start = find(rest, delim).ok_or_else(|| bad("no opening boundary"))?;
    rest = &rest[start + delim.len()..];
    loop {
        if rest.starts_with(b"--") {
            return Ok(form);
        }
        rest = rest
            .strip_prefix(b"\r\n")
            .ok_or_else(|| bad("boundary line"))?;
        let head_end = find(rest, b"\r\n\r\n").ok_or_else(|| bad("part headers"))?;
        let headers = std::str::from_utf8(&rest[..head_end]).map_err(|_| not_utf8())?;
        let content = &rest[head_end + 4..];
        let mut end_marker = b"\r\n".to_vec();
        end_marker.extend_from_slice(delim);
        let end = find(content, &end_marker).ok_or_else(|| bad("unterminated part"))?;
        let value = std::str::from_utf8(&content[..end]).map_err(|_| not_utf8())?;
        let name = headers
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("content-disposition:"))
            .and_then(|l| {
                l.split(';')
                    .filter_map(|p| p.trim().strip_prefix("name="))
                    .next()
            })
            .map(|n| n.trim_matches('"'))
            .ok_or_else(|| bad("part without a name"))?;
        form.push(name.to_owned(), value.to_owned())?;
        rest = &content[end + end_marker.len()..];
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(query: &str, body: &str) -> ApiCall {
        ApiCall {
            method: Method::POST,
            query: parse_urlencoded(query.as_bytes()).unwrap(),
            form: parse_urlencoded(body.as_bytes()).unwrap(),
        }
    }

    #[test]
    fn unknown_fields_are_named() {
        let known = ["type", "title", "properties["];
        assert_eq!(call("", "type=video&title=x").only(&known), Ok(()));
        assert_eq!(
            call("", "_METHOD=PUT&properties[color]=red&properties[a]b]=c").only(&known),
            Ok(())
        );
        for (query, body, unknown) in [
            ("", "type=video&titel=Intro", "titel"),
            ("titel=Intro", "", "titel"),
            ("", "properties=x", "properties"),
            ("", "properties[x", "properties[x"),
            ("", "propertiesX[a]=b", "propertiesX[a]"),
            ("", "Type=video", "Type"),
        ] {
            assert_eq!(
                call(query, body).only(&known),
                Err(ApiError::BadRequest(format!("unknown field: {unknown}"))),
                "{query} {body}"
            );
        }
        assert!(call("", "type=x").only(&[]).is_err());
    }

    #[test]
    fn urlencoded_is_strict() {
        let f = parse_urlencoded(b"title=a+b%C3%A9&properties%5Bk%5D=v&x").unwrap();
        assert_eq!(f.get("title"), Some("a bé"));
        assert_eq!(f.get("properties[k]"), Some("v"));
        assert_eq!(f.get("x"), Some(""));
        assert!(parse_urlencoded(b"title=%ff").is_err(), "non-UTF-8");
        assert!(parse_urlencoded(b"title=%f").is_err(), "short escape");
        assert!(parse_urlencoded(b"title=%zz").is_err());
        assert!(
            parse_urlencoded(b"title=%+A").is_err(),
            "a sign is no hex digit"
        );
        let many = "a=1&".repeat(1001);
        assert!(parse_urlencoded(many.as_bytes()).is_err());
    }

    #[test]
    fn duplicate_fields_are_kept_for_refusal() {
        let f = parse_urlencoded(b"a=1&a=2").unwrap();
        assert_eq!(f.get("a"), Some("2"));
        assert_eq!(f.repeated_name(), Some("a"));
        assert_eq!(parse_urlencoded(b"a=1&b=1").unwrap().repeated_name(), None);
        let json = |b: &[u8]| parse_json(b).unwrap().repeated_name().map(str::to_owned);
        assert_eq!(json(br#"{"a":1,"a":2}"#).as_deref(), Some("a"));
        assert_eq!(
            json(br#"{"properties":{"k":"1","k":"2"}}"#).as_deref(),
            Some("properties[k]")
        );
        assert_eq!(
            json(br#"{"properties[k]":"1","properties":{"k":"2"}}"#).as_deref(),
            Some("properties[k]")
        );
        assert_eq!(json(br#"{"a":1,"b":2}"#), None);
    }

    #[test]
    fn json_objects_flatten() {
        let f = parse_json(br#"{"title":"t","public":true,"duration":5,"properties":{"k":"v"}}"#)
            .unwrap();
        assert_eq!(f.get("public"), Some("true"));
        assert_eq!(f.get("duration"), Some("5"));
        assert_eq!(f.get("properties[k]"), Some("v"));
        assert!(parse_json(b"[1]").is_err());
        assert!(parse_json(br#"{"a":{"b":1}}"#).is_err());
        assert!(parse_json(b"{").is_err());
        assert!(parse_json(br#"{"a":null}"#).is_err());
        assert!(parse_json(br#"{"a":[1]}"#).is_err());
        assert_eq!(
            parse_json(br#"{"a":1.5,"b":-2,"c":1e2}"#).unwrap(),
            parse_urlencoded(b"a=1.5&b=-2&c=100.0").unwrap()
        );
        for deep in [
            format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)),
            format!("{{\"a\":{}{}}}", "[".repeat(10_000), "]".repeat(10_000)),
            format!("{}1{}", "{\"a\":".repeat(10_000), "}".repeat(10_000)),
        ] {
            assert!(
                parse_json(deep.as_bytes()).is_err(),
                "deep nesting is refused, not a crash"
            );
        }
    }

    #[test]
    fn multipart_fields() {
        let body = b"--XyZ\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nHello\r\n--XyZ\r\nContent-Disposition: form-data; name=\"type\"\r\n\r\nvideo\r\n--XyZ--\r\n";
        let f = parse_multipart("multipart/form-data; boundary=XyZ", body).unwrap();
        assert_eq!(f.get("title"), Some("Hello"));
        assert_eq!(f.get("type"), Some("video"));
        assert!(parse_multipart("multipart/form-data", body).is_err());
        assert!(parse_multipart("multipart/form-data; boundary=XyZ", b"--XyZ\r\nbroken").is_err());
    }

    #[test]
    fn overrides() {
        assert_eq!(parse_override("put").unwrap(), Method::PUT);
        assert_eq!(parse_override("DELETE").unwrap(), Method::DELETE);
        assert!(parse_override("GET").is_err());
        assert!(parse_override("TRACE").is_err());
    }
}
