//! What the identity provider says about the user: the uniqueId claim and the names, from
//! the ID token first and from userinfo for what it lacks.

use medialib_domain::{PersonName, UniqueId};
use medialib_ports::{SsoError, SsoIdentity};
use openidconnect::core::CoreGenderClaim;
use openidconnect::{IdTokenClaims, UserInfoClaims};

use super::ExtraClaims;

/// What the provider said about the user, from the ID token and then userinfo.
#[derive(Debug, Default)]
pub(super) struct Found {
    pub(super) unique_id: Option<String>,
    pub(super) given_name: Option<String>,
    pub(super) family_name: Option<String>,
}

impl Found {
    pub(super) fn is_incomplete(&self) -> bool {
        self.unique_id.is_none() || self.given_name.is_none() || self.family_name.is_none()
    }

    /// Takes from userinfo what the ID token lacked.
    pub(super) fn fill_from(
        &mut self,
        info: &UserInfoClaims<ExtraClaims, CoreGenderClaim>,
        claim: &str,
    ) {
        let standard = info.standard_claims();
        if self.unique_id.is_none() {
            self.unique_id = match claim {
                "sub" => Some(info.subject().as_str().to_owned()),
                _ => standard_claim(standard, claim)
                    .or_else(|| extra_claim(info.additional_claims(), claim)),
            };
        }
        if self.given_name.is_none() {
            self.given_name = standard
                .given_name()
                .and_then(|n| n.get(None))
                .map(|n| n.as_str().to_owned());
        }
        if self.family_name.is_none() {
            self.family_name = standard
                .family_name()
                .and_then(|n| n.get(None))
                .map(|n| n.as_str().to_owned());
        }
    }
}

/// The identity from what was found: a uniqueId is required; a name that medialib cannot
/// store is left out (and logged).
pub(super) fn identity(found: Found, claim: &str) -> Result<SsoIdentity, SsoError> {
    let Some(raw) = found.unique_id else {
        tracing::warn!(
            claim,
            "neither the ID token nor userinfo carries the uniqueId claim"
        );
        return Err(SsoError::InvalidCredentials);
    };
    let unique_id = UniqueId::parse(&raw).map_err(|e| {
        tracing::warn!(claim, error = %e, "the uniqueId claim is not a valid uniqueId");
        SsoError::InvalidCredentials
    })?;
    let name = |value: Option<String>, field: &'static str| {
        value.and_then(|v| {
            PersonName::parse(&v, field)
                .map_err(
                    |e| tracing::warn!(error = %e, "ignoring a name from the identity provider"),
                )
                .ok()
        })
    };
    Ok(SsoIdentity {
        unique_id,
        first_name: name(found.given_name, "firstName"),
        last_name: name(found.family_name, "lastName"),
    })
}

/// The standard claims a uniqueId may come from (other than `sub`), read from `$claims`
/// (ID token claims and userinfo's standard claims have the same accessors, but no common
/// trait); `$other` for any other name.
macro_rules! named_claim {
    ($claims:expr, $name:expr, $other:expr) => {
        match $name {
            "preferred_username" => $claims.preferred_username().map(|v| v.as_str().to_owned()),
            "email" => $claims.email().map(|v| v.as_str().to_owned()),
            "phone_number" => $claims.phone_number().map(|v| v.as_str().to_owned()),
            "name" => $claims
                .name()
                .and_then(|n| n.get(None))
                .map(|v| v.as_str().to_owned()),
            "nickname" => $claims
                .nickname()
                .and_then(|n| n.get(None))
                .map(|v| v.as_str().to_owned()),
            _ => $other,
        }
    };
}

/// The value of claim `name` in the ID token.
pub(super) fn id_token_claim(
    claims: &IdTokenClaims<ExtraClaims, CoreGenderClaim>,
    name: &str,
) -> Option<String> {
    if name == "sub" {
        return Some(claims.subject().as_str().to_owned());
    }
    named_claim!(claims, name, extra_claim(claims.additional_claims(), name))
}

/// The value of a standard claim (other than `sub`) in userinfo.
fn standard_claim(
    claims: &openidconnect::StandardClaims<CoreGenderClaim>,
    name: &str,
) -> Option<String> {
    named_claim!(claims, name, None)
}

/// A non-standard claim as text: a string, or a number (some directories number employees).
fn extra_claim(claims: &ExtraClaims, name: &str) -> Option<String> {
    match claims.other.get(name)? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

    use super::*;

    #[test]
    fn the_unique_id_comes_from_the_configured_claim_and_names_must_be_storable() {
        let found = Found {
            unique_id: Some("ada".into()),
            given_name: Some("Ada".into()),
            family_name: Some("x".repeat(PersonName::MAX_CHARS + 1)),
        };
        let id = identity(found, "sub").unwrap();
        assert_eq!(id.unique_id.as_str(), "ada");
        assert_eq!(
            id.first_name.map(|n| n.as_str().to_owned()),
            Some("Ada".into())
        );
        assert_eq!(id.last_name, None, "a name too long to store is left out");
        assert_eq!(
            identity(Found::default(), "employee_id"),
            Err(SsoError::InvalidCredentials),
            "no uniqueId, no sign-in"
        );
        let control = Found {
            unique_id: Some("a\u{7}b".into()),
            ..Found::default()
        };
        assert_eq!(identity(control, "sub"), Err(SsoError::InvalidCredentials));
    }

    #[test]
    fn extra_claims_may_be_strings_or_numbers() {
        let claims: ExtraClaims = serde_json::from_value(serde_json::json!({
            "employee_id": 4711,
            "ou": "physics",
            "groups": ["a"],
        }))
        .unwrap();
        assert_eq!(extra_claim(&claims, "employee_id").as_deref(), Some("4711"));
        assert_eq!(extra_claim(&claims, "ou").as_deref(), Some("physics"));
        assert_eq!(extra_claim(&claims, "groups"), None);
        assert_eq!(extra_claim(&claims, "missing"), None);
    }
}
