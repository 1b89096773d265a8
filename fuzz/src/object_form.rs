//! Target `object_form`: request fields into the describe command ([`ObjectPatch`]) and
//! its application to a stored object.
//!
//! The first byte picks how the rest becomes `(name, value)` fields:
//! - even: an `application/x-www-form-urlencoded` body, through the domain's decoder;
//! - odd: structured fields (the shape a JSON or multipart body flattens into: any
//!   strings, no escaping), built by `arbitrary`.
//!
//! Properties: the decoder agrees with an independent one (strict: a `%` takes exactly
//! two hexadecimal digits) and is lossless (a canonical re-encoding decodes to the same
//! fields); the patch holds exactly
//! the last value of each named field; a refused form is refused for the first bad field
//! in the documented order; applying the patch changes the named fields and nothing else,
//! never the type, and never exceeds the property limit.

use std::collections::BTreeMap;

use arbitrary::{Arbitrary, Unstructured};
use medialib_domain::form::{self, InvalidForm, MAX_FIELDS};
use medialib_domain::object::{InvalidField, parse_bool};
use medialib_domain::text::InvalidProperties;
use medialib_domain::{
    Description, DurationSecs, MediaObject, NewObject, ObjectFields, ObjectId, ObjectPatch,
    ObjectType, OrgNamespace, Properties, ShortCode, Timestamp, Title, UpdateError, UserId,
};

/// A field name: mostly the ones the command reads, sometimes anything.
#[derive(Debug, Arbitrary)]
enum Name {
    Type,
    Title,
    Description,
    Public,
    Duration,
    Property(String),
    Other(String),
}

impl Name {
    fn into_string(self) -> String {
        match self {
            Self::Type => "type".into(),
            Self::Title => "title".into(),
            Self::Description => "description".into(),
            Self::Public => "public".into(),
            Self::Duration => "duration".into(),
            Self::Property(key) => format!("properties[{key}]"),
            Self::Other(name) => name,
        }
    }
}

/// Checks one input.
pub fn check(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let fields = if mode % 2 == 0 {
        match urlencoded(rest) {
            Some(fields) => fields,
            None => return,
        }
    } else {
        let mut u = Unstructured::new(rest);
        let Ok(raw) = Vec::<(Name, String)>::arbitrary(&mut u) else {
            return;
        };
        raw.into_iter().map(|(n, v)| (n.into_string(), v)).collect()
    };
    let patch = ObjectPatch::from_fields(&fields);
    match expected_patch(&fields) {
        Ok(expected) => {
            let Ok(patch) = patch else {
                panic!("refused a valid form: {patch:?}");
            };
            assert_eq!(patch.object_type, expected.object_type);
            assert_eq!(patch.title, expected.title);
            assert_eq!(patch.description, expected.description);
            assert_eq!(patch.public, expected.public);
            assert_eq!(patch.duration, expected.duration);
            assert_eq!(
                patch.properties.as_ref().map(pairs),
                expected.properties.as_ref().map(pairs)
            );
            applies_to_named_fields_only(patch);
        }
        Err(first_bad) => assert_eq!(patch.err(), Some(first_bad)),
    }
}

/// Decodes a body; checks it against the oracle and for losslessness; `None` when refused.
fn urlencoded(body: &[u8]) -> Option<Vec<(String, String)>> {
    let decoded = form::parse_urlencoded(body);
    assert_eq!(decoded, oracle_urlencoded(body), "{body:?}");
    let fields = decoded.ok()?;
    let canonical: Vec<String> = fields
        .iter()
        .map(|(k, v)| {
            format!(
                "{}={}",
                form::encode_component(k),
                form::encode_component(v)
            )
        })
        .collect();
    let again = form::parse_urlencoded(canonical.join("&").as_bytes());
    assert_eq!(
        again.as_ref(),
        Ok(&fields),
        "canonical re-encoding round trips"
    );
    Some(fields)
}

/// The form encoding read independently: pieces between `&` (empty ones skipped), at
/// most [`MAX_FIELDS`], split at the first `=`, each side decoded on its own; the first
/// piece that fails gives the error.
fn oracle_urlencoded(body: &[u8]) -> Result<Vec<(String, String)>, InvalidForm> {
    let mut fields = Vec::new();
    for (i, piece) in body
        .split(|b| *b == b'&')
        .filter(|p| !p.is_empty())
        .enumerate()
    {
        if i == MAX_FIELDS {
            return Err(InvalidForm::TooManyFields { max: MAX_FIELDS });
        }
        let mut halves = piece.splitn(2, |b| *b == b'=');
        let name = crate::oracle_component(halves.next().unwrap_or_default())?;
        let value = crate::oracle_component(halves.next().unwrap_or_default())?;
        fields.push((name, value));
    }
    Ok(fields)
}

fn pairs(p: &Properties) -> Vec<(String, String)> {
    p.iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// The oracle: the documented reading of an object form, field by field.
fn expected_patch(fields: &[(String, String)]) -> Result<ObjectPatch, InvalidField> {
    let last = |name: &str| {
        fields
            .iter()
            .rfind(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let properties = if fields.iter().any(|(k, _)| k.starts_with("properties[")) {
        let mut map = BTreeMap::new();
        for (k, v) in fields {
            let Some(key) = k
                .strip_prefix("properties[")
                .and_then(|r| r.strip_suffix(']'))
            else {
                continue;
            };
            let key_chars = key.chars().count();
            if key_chars == 0 || key_chars > 64 || key.chars().any(char::is_control) {
                return Err(InvalidProperties::BadKey {
                    key: key.chars().take(80).collect(),
                }
                .into());
            }
            if v.chars().count() > 4096 {
                return Err(InvalidProperties::ValueTooLong { key: key.into() }.into());
            }
            if v.contains('\0') {
                return Err(InvalidProperties::ValueNul { key: key.into() }.into());
            }
            map.insert(key.to_owned(), v.clone());
            if map.len() > 64 {
                return Err(InvalidProperties::TooMany { max: 64 }.into());
            }
        }
        match Properties::parse(&map) {
            Ok(props) => Some(props),
            Err(e) => panic!("the oracle's properties must parse: {map:?}: {e}"),
        }
    } else {
        None
    };
    let object_type = last("type").map(ObjectType::parse).transpose()?;
    let title = last("title").map(Title::parse).transpose()?;
    let description = last("description").map(Description::parse).transpose()?;
    let public = last("public")
        .map(|v| parse_bool(v, "public"))
        .transpose()?;
    let duration = last("duration").map(DurationSecs::parse).transpose()?;
    Ok(ObjectPatch {
        object_type,
        title,
        description,
        public,
        duration,
        properties,
    })
}

/// Applies the patch to a stored video and checks what changed.
fn applies_to_named_fields_only(patch: ObjectPatch) {
    let ns = OrgNamespace::from_random([1; 16]);
    let Ok(stored_props) = Properties::parse([("keep", "1"), ("over", "old")]) else {
        panic!("fixed properties parse");
    };
    let Ok(title) = Title::parse("stored title") else {
        panic!("fixed title parses");
    };
    let before = MediaObject::create(
        ObjectId::generate(&ns, [2; 16]),
        NewObject {
            object_type: ObjectType::Video,
            fields: ObjectFields {
                title,
                description: Description::default(),
                public: false,
                duration: None,
                properties: stored_props,
            },
        },
        UserId::generate(&ns, [3; 16]),
        ShortCode::from_random([4; 16]),
        Timestamp::from_epoch_seconds(1_000),
    );
    let now = Timestamp::from_epoch_seconds(900 + i64::from(patch.public == Some(true)) * 200);
    let mut merged: BTreeMap<String, String> =
        pairs(&before.fields().properties).into_iter().collect();
    if let Some(p) = &patch.properties {
        merged.extend(pairs(p));
    }
    let expected_type = patch.object_type;
    let result = before.clone().apply(patch.clone(), now);
    if let Some(t) = expected_type.filter(|t| *t != ObjectType::Video) {
        assert_eq!(
            result,
            Err(UpdateError::TypeChange {
                stored: ObjectType::Video,
                requested: t
            })
        );
        return;
    }
    if merged.len() > Properties::MAX_KEYS {
        assert_eq!(
            result,
            Err(UpdateError::Properties(InvalidProperties::TooMany {
                max: 64
            }))
        );
        return;
    }
    let Ok(after) = result else {
        panic!("a valid patch must apply: {result:?}");
    };
    let (b, a) = (before.fields(), after.fields());
    assert_eq!(after.object_type(), ObjectType::Video);
    assert_eq!(after.id(), before.id());
    assert_eq!(after.owner(), before.owner());
    assert_eq!(after.shortcode(), before.shortcode());
    assert_eq!(after.created(), before.created());
    assert_eq!(after.modified(), before.modified().max(now));
    assert_eq!(a.title, patch.title.unwrap_or_else(|| b.title.clone()));
    assert_eq!(
        a.description,
        patch.description.unwrap_or_else(|| b.description.clone())
    );
    assert_eq!(a.public, patch.public.unwrap_or(b.public));
    assert_eq!(a.duration, patch.duration.or(b.duration));
    assert_eq!(pairs(&a.properties), merged.into_iter().collect::<Vec<_>>());
}
