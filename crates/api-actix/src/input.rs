//! Reading an API call: the effective method (with `_METHOD` / `X-HTTP-Method-Override`),
//! the query, and the body as form fields (urlencoded, multipart or JSON), UTF-8 only,
//! at most [`BODY_LIMIT`] bytes.

use actix_web::http::{Method, header};
use actix_web::{HttpRequest, web};

use crate::error::ApiError;

/// Largest accepted API request body (DECISIONS.md §4).
pub const BODY_LIMIT: usize = 1 << 20;

/// Most fields a form may carry.
const MAX_FIELDS: usize = 1000;

/// Form fields in arrival order; a repeated name keeps every value, and [`Form::get`]
/// returns the last one.
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

    /// The `properties[KEY]=VALUE` fields, as `(KEY, VALUE)`.
    pub fn properties(&self) -> Vec<(&str, &str)> {
        self.0
            .iter()
            .filter_map(|(k, v)| {
                let key = k.strip_prefix("properties[")?.strip_suffix(']')?;
                Some((key, v.as_str()))
            })
            .collect()
    }

    /// The first field name that occurs more than once (RFC 6749 §3.1 forbids repeats).
    pub fn repeated_name(&self) -> Option<&str> {
        let mut seen = std::collections::HashSet::new();
        self.0
            .iter()
            .map(|(k, _)| k.as_str())
            .find(|k| !seen.insert(*k))
    }

    /// Whether any `properties[...]` field is present.
    pub fn has_properties(&self) -> bool {
        self.0.iter().any(|(k, _)| k.starts_with("properties["))
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
        let query = parse_urlencoded(req.query_string().as_bytes())?;
        let mut method = req.method().clone();
        let has_body = matches!(method, Method::POST | Method::PUT | Method::DELETE);
        let form = if has_body {
            let body = read_body(req, payload).await?;
            parse_body(req, &body)?
        } else {
            Form::default()
        };
        if method == Method::POST {
            let header_override = req
                .headers()
                .get("x-http-method-override")
                .map(|v| v.to_str().map_err(|_| bad_override()))
                .transpose()?;
            if let Some(m) = header_override.or(form.get("_METHOD")) {
                method = parse_override(m)?;
            }
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
}

fn bad_override() -> ApiError {
    ApiError::BadRequest("_METHOD / X-HTTP-Method-Override must be PUT, POST or DELETE".into())
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
    match payload.to_bytes_limited(BODY_LIMIT).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(_)) => Err(too_large),
        Err(e) => Err(ApiError::BadRequest(format!(
            "cannot read the request body: {e}"
        ))),
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

/// Decodes one `application/x-www-form-urlencoded` component (`+` is a space).
pub(crate) fn percent_decode(input: &[u8]) -> Result<String, ApiError> {
    let mut out = Vec::with_capacity(input.len());
    let mut i = 0;
    while i < input.len() {
        match input[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = input
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| ApiError::BadRequest("malformed percent-encoding".into()))?;
                out.push(hex);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| not_utf8())
}

/// Parses `a=1&b=2` strictly: malformed escapes and non-UTF-8 are errors.
pub fn parse_urlencoded(input: &[u8]) -> Result<Form, ApiError> {
    let mut form = Form::default();
    for pair in input.split(|b| *b == b'&').filter(|p| !p.is_empty()) {
        let (k, v) = match pair.iter().position(|b| *b == b'=') {
            Some(i) => (&pair[..i], &pair[i + 1..]),
            None => (pair, &b""[..]),
        };
        form.push(percent_decode(k)?, percent_decode(v)?)?;
    }
    Ok(form)
}

fn parse_json(body: &[u8]) -> Result<Form, ApiError> {
    let text = std::str::from_utf8(body).map_err(|_| not_utf8())?;
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| ApiError::BadRequest(format!("malformed JSON: {e}")))?;
    let serde_json::Value::Object(map) = value else {
        return Err(ApiError::BadRequest("a JSON body must be an object".into()));
    };
    let scalar = |key: &str, v: &serde_json::Value| -> Result<String, ApiError> {
        match v {
            serde_json::Value::String(s) => Ok(s.clone()),
            serde_json::Value::Number(n) => Ok(n.to_string()),
            serde_json::Value::Bool(b) => Ok(b.to_string()),
            _ => Err(ApiError::BadRequest(format!(
                "field {key} must be a string, number or boolean"
            ))),
        }
    };
    let mut form = Form::default();
    for (k, v) in &map {
        if k == "properties" {
            let serde_json::Value::Object(props) = v else {
                return Err(ApiError::BadRequest("properties must be an object".into()));
            };
            for (pk, pv) in props {
                form.push(format!("properties[{pk}]"), scalar(pk, pv)?)?;
            }
        } else {
            form.push(k.clone(), scalar(k, v)?)?;
        }
    }
    Ok(form)
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

    #[test]
    fn urlencoded_is_strict() {
        let f = parse_urlencoded(b"title=a+b%C3%A9&properties%5Bk%5D=v&x").unwrap();
        assert_eq!(f.get("title"), Some("a bé"));
        assert_eq!(f.properties(), vec![("k", "v")]);
        assert_eq!(f.get("x"), Some(""));
        assert!(parse_urlencoded(b"title=%ff").is_err(), "non-UTF-8");
        assert!(parse_urlencoded(b"title=%f").is_err(), "short escape");
        assert!(parse_urlencoded(b"title=%zz").is_err());
        let many = "a=1&".repeat(1001);
        assert!(parse_urlencoded(many.as_bytes()).is_err());
    }

    #[test]
    fn duplicate_fields_keep_the_last() {
        let f = parse_urlencoded(b"a=1&a=2").unwrap();
        assert_eq!(f.get("a"), Some("2"));
        assert_eq!(f.repeated_name(), Some("a"));
        assert_eq!(parse_urlencoded(b"a=1&b=1").unwrap().repeated_name(), None);
    }

    #[test]
    fn json_objects_flatten() {
        let f = parse_json(br#"{"title":"t","public":true,"duration":5,"properties":{"k":"v"}}"#)
            .unwrap();
        assert_eq!(f.get("public"), Some("true"));
        assert_eq!(f.get("duration"), Some("5"));
        assert_eq!(f.properties(), vec![("k", "v")]);
        assert!(parse_json(b"[1]").is_err());
        assert!(parse_json(br#"{"a":{"b":1}}"#).is_err());
        assert!(parse_json(b"{").is_err());
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(
            parse_json(deep.as_bytes()).is_err(),
            "deep nesting is refused, not a crash"
        );
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
