//! The authorize parameters (RFC 6749 §4.1.1, PKCE) as the browser pages carry them: read from
//! a query string or an urlencoded form, each at most once, and written back as hidden form
//! fields or a query string.

use actix_web::http::header;
use actix_web::{HttpRequest, web};
use medialib_domain::oauth::AuthorizeParams;

use crate::browser::query_escape;
use crate::error::ApiError;
use crate::input::parse_urlencoded;

/// Largest accepted form body: the forms carry a few short fields.
const FORM_LIMIT: usize = 64 * 1024;

/// The authorize parameters of one request, each at most once.
#[derive(Debug, Clone, Default)]
pub(super) struct Params {
    response_type: Option<String>,
    client_id: Option<String>,
    pub(super) redirect_uri: Option<String>,
    pub(super) state: Option<String>,
    scope: Option<String>,
    access_type: Option<String>,
    code_challenge: Option<String>,
    code_challenge_method: Option<String>,
}

impl Params {
    /// The parameter called `name` (and its `'static` name), if it is one.
    fn slot(&mut self, name: &str) -> Option<(&'static str, &mut Option<String>)> {
        Some(match name {
            "response_type" => ("response_type", &mut self.response_type),
            "client_id" => ("client_id", &mut self.client_id),
            "redirect_uri" => ("redirect_uri", &mut self.redirect_uri),
            "state" => ("state", &mut self.state),
            "scope" => ("scope", &mut self.scope),
            "access_type" => ("access_type", &mut self.access_type),
            "code_challenge" => ("code_challenge", &mut self.code_challenge),
            "code_challenge_method" => ("code_challenge_method", &mut self.code_challenge_method),
            _ => return None,
        })
    }

    /// Every parameter, present or not, in a fixed order.
    fn entries(&self) -> [(&'static str, Option<&str>); 8] {
        [
            ("response_type", self.response_type.as_deref()),
            ("client_id", self.client_id.as_deref()),
            ("redirect_uri", self.redirect_uri.as_deref()),
            ("state", self.state.as_deref()),
            ("scope", self.scope.as_deref()),
            ("access_type", self.access_type.as_deref()),
            ("code_challenge", self.code_challenge.as_deref()),
            (
                "code_challenge_method",
                self.code_challenge_method.as_deref(),
            ),
        ]
    }

    pub(super) fn authorize(&self) -> AuthorizeParams<'_> {
        AuthorizeParams {
            response_type: self.response_type.as_deref(),
            client_id: self.client_id.as_deref(),
            redirect_uri: self.redirect_uri.as_deref(),
            state: self.state.as_deref(),
            scope: self.scope.as_deref(),
            access_type: self.access_type.as_deref(),
            code_challenge: self.code_challenge.as_deref(),
            code_challenge_method: self.code_challenge_method.as_deref(),
            repeated: None,
        }
    }

    /// The present parameters as hidden form fields.
    pub(super) fn hidden(&self) -> Vec<Hidden<'_>> {
        self.entries()
            .into_iter()
            .filter_map(|(name, value)| {
                Some(Hidden {
                    name,
                    value: value?,
                })
            })
            .collect()
    }

    /// The present parameters as a query string.
    pub(super) fn query(&self) -> String {
        self.entries()
            .into_iter()
            .filter_map(|(name, value)| Some(format!("{name}={}", query_escape(value?))))
            .collect::<Vec<_>>()
            .join("&")
    }
}

/// The authorize parameters of a query or form, and the first one that was repeated.
#[derive(Debug, Clone, Default)]
pub(super) struct Parsed {
    pub(super) params: Params,
    pub(super) repeated: Option<&'static str>,
}

impl Parsed {
    /// Picks the authorize parameters out of `fields`; others are ignored (RFC 6749 §3.1),
    /// as are empty values ("treated as if they were omitted").
    pub(super) fn from_fields(fields: &[(String, String)]) -> Self {
        let mut parsed = Self::default();
        for (k, v) in fields.iter().filter(|(_, v)| !v.is_empty()) {
            let Some((name, slot)) = parsed.params.slot(k) else {
                continue;
            };
            if slot.is_some() {
                parsed.repeated.get_or_insert(name);
            } else {
                *slot = Some(v.clone());
            }
        }
        parsed
    }
}

/// Urlencoded fields in order, decoded strictly (a malformed escape or non-UTF-8 is a 400).
pub(crate) fn fields(raw: &[u8]) -> Result<Vec<(String, String)>, ApiError> {
    // The strict parser refuses what the lenient one would quietly repair.
    parse_urlencoded(raw)?;
    let text =
        std::str::from_utf8(raw).map_err(|_| ApiError::BadRequest("input must be UTF-8".into()))?;
    web::Query::<Vec<(String, String)>>::from_query(text)
        .map(web::Query::into_inner)
        .map_err(|e| ApiError::BadRequest(format!("malformed form: {e}")))
}

/// The last value of a form field.
pub(crate) fn field<'a>(form: &'a [(String, String)], name: &str) -> Option<&'a str> {
    form.iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Reads an urlencoded form body (what browsers send for these forms).
pub(crate) async fn read_form(
    req: &HttpRequest,
    payload: web::Payload,
) -> Result<Vec<(String, String)>, ApiError> {
    let essence = req
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap_or_default())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        });
    if essence.is_some_and(|e| e != "application/x-www-form-urlencoded") {
        return Err(ApiError::BadRequest(
            "send the form as application/x-www-form-urlencoded".into(),
        ));
    }
    fields(&crate::input::body_within(payload, FORM_LIMIT).await?)
}

/// A hidden form field carrying an authorize parameter.
#[derive(Debug)]
pub(super) struct Hidden<'a> {
    pub(super) name: &'static str,
    pub(super) value: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn repeated_and_empty_parameters() {
        let p = Parsed::from_fields(&pairs(&[
            ("state", "a"),
            ("scope", ""),
            ("scope", "read"),
            ("other", "x"),
            ("other", "y"),
        ]));
        assert_eq!(
            p.repeated, None,
            "empty values count as absent, unknown ones are ignored"
        );
        assert_eq!(p.params.scope.as_deref(), Some("read"));
        let p = Parsed::from_fields(&pairs(&[("state", "a"), ("state", "b")]));
        assert_eq!(p.repeated, Some("state"));
        assert_eq!(p.params.state.as_deref(), Some("a"));
    }

    #[test]
    fn the_query_is_re_encoded() {
        let p = Parsed::from_fields(&pairs(&[
            ("scope", "read write"),
            ("state", "a&b=c"),
            ("client_id", "x"),
        ]))
        .params;
        assert_eq!(p.query(), "client_id=x&state=a%26b%3Dc&scope=read%20write");
    }

    #[test]
    fn fields_are_decoded_strictly() {
        assert_eq!(
            fields(b"a=b+c&d=%C3%A9").ok(),
            Some(pairs(&[("a", "b c"), ("d", "é")]))
        );
        assert!(fields(b"a=%zz").is_err());
        assert!(fields(b"a=%ff").is_err());
    }
}
