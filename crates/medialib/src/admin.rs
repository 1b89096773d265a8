//! The operator commands that manage users and OAuth clients
//! (`medialib user ...`, `medialib client ...`) and restore deleted objects
//! (`medialib restore`).

use std::io::{BufRead, IsTerminal, Read, Write};

use medialib_adapters_sso::{PasswordError, hash_password};
use medialib_domain::oauth::{Client, ClientId, ClientKind};
use medialib_domain::{MembershipError, ObjectId, PersonName, Secret, UniqueId, User};
use medialib_ports::repos::RestoreObjectError;
use medialib_ports::services::NewUserInput;
use medialib_ports::services::clients::{NewClient, RegisterClientError, RotateSecretError};
use medialib_ports::{CreateUserError, PasswordHash, Services};
use serde_json::json;

use crate::configuration::{Settings, Sso};
use crate::database;

/// How an admin command failed: bad input (exit 2) or a failure while running (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The arguments do not parse into valid values.
    #[error("{0}")]
    Invalid(String),
    /// The command ran and failed.
    #[error("{0}")]
    Failed(String),
}

impl From<std::io::Error> for AdminError {
    fn from(e: std::io::Error) -> Self {
        Self::Failed(e.to_string())
    }
}

impl From<database::DatabaseError> for AdminError {
    fn from(e: database::DatabaseError) -> Self {
        Self::Failed(e.to_string())
    }
}

impl From<medialib_ports::StoreError> for AdminError {
    fn from(e: medialib_ports::StoreError) -> Self {
        Self::Failed(e.to_string())
    }
}

/// Opens (and migrates) the database and wires the use cases.
pub fn services(settings: &Settings) -> Result<Services, AdminError> {
    let db = database::prepare(&settings.database_url, &database::pool_options(settings))?;
    let base = settings.base_url_for(settings.bind);
    crate::startup::services(settings, &base, db).map_err(|e| AdminError::Failed(e.to_string()))
}

/// Reads a password from standard input ([`read_password`]); on a terminal, asks for it on
/// standard error first.
pub fn password_from_stdin() -> Result<Secret, AdminError> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        let mut err = std::io::stderr().lock();
        write!(
            err,
            "Password (the typed text is visible; pipe it in to hide it): "
        )?;
        err.flush()?;
    }
    read_password(&mut stdin.lock())
}

/// Reads one line from `input` as a password: one trailing `\n` or `\r\n` is removed,
/// nothing else. Empty input (no line at all) is an error; the policy is checked later, by
/// the hashing.
pub fn read_password(input: &mut impl BufRead) -> Result<Secret, AdminError> {
    // Enough for the longest password the policy accepts and a line ending; anything longer
    // is refused by the policy without reading unbounded input.
    const LIMIT: u64 = medialib_adapters_sso::local::MAX_PASSWORD_BYTES as u64 + 3;
    let mut line = Vec::new();
    input
        .take(LIMIT)
        .read_until(b'\n', &mut line)
        .map_err(|e| {
            AdminError::Failed(format!("cannot read the password from standard input: {e}"))
        })?;
    if line.is_empty() {
        return Err(AdminError::Invalid(
            "no password on standard input: pipe it in, e.g. `printf '%s\\n' \"$PASSWORD\" | medialib user passwd --unique-id ID --password-stdin`".to_owned(),
        ));
    }
    if line.last() == Some(&b'\n') {
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
    }
    String::from_utf8(line).map(Secret::new).map_err(|_| {
        AdminError::Invalid("the password on standard input is not valid UTF-8".to_owned())
    })
}

/// Hashes a new password for the `local` directory; a policy violation is a usage error.
fn hash(password: &Secret) -> Result<PasswordHash, AdminError> {
    hash_password(password).map_err(|e| match e {
        PasswordError::Policy(m) => AdminError::Invalid(m),
        PasswordError::Hashing(m) => AdminError::Failed(m),
    })
}

/// Tells the operator (on standard error) when the configured sign-in mode will not use a
/// password just set.
pub fn note_unused_password(settings: &Settings) -> Result<(), AdminError> {
    let mode = match settings.sso {
        Sso::Local => return Ok(()),
        Sso::Oidc(_) => "oidc",
        Sso::Header { .. } => "header",
    };
    writeln!(
        std::io::stderr(),
        "note: sso is `{mode}`; passwords are used only when sso = local"
    )?;
    Ok(())
}

/// `medialib user add`; with `password`, the user can sign in to the `local` directory.
pub fn user_add(
    services: &Services,
    unique_id: &str,
    first: &str,
    last: &str,
    org_admin: bool,
    password: Option<&Secret>,
    json: bool,
) -> Result<(), AdminError> {
    let invalid = |e: medialib_domain::InvalidText| AdminError::Invalid(e.to_string());
    let input = NewUserInput {
        unique_id: UniqueId::parse(unique_id).map_err(invalid)?,
        first_name: PersonName::parse(first, "first-name").map_err(invalid)?,
        last_name: PersonName::parse(last, "last-name").map_err(invalid)?,
        org_admin,
    };
    // Hashed before the user exists, so a refused password leaves nothing behind.
    let hash = password.map(hash).transpose()?;
    let user = services.people().create_user(input).map_err(|e| match e {
        CreateUserError::UniqueIdTaken => {
            AdminError::Failed(format!("a user with uniqueId {unique_id:?} already exists"))
        }
        CreateUserError::Store(s) => s.into(),
    })?;
    if let Some(hash) = &hash {
        let set = services
            .people()
            .set_password(&user.unique_id, hash)
            .map_err(|e| {
                AdminError::Failed(format!(
                    "user {unique_id:?} was added ({}) but the password could not be set: {e}; \
                     set it with `medialib user passwd --unique-id {unique_id} --password-stdin`",
                    user.id
                ))
            })?;
        if set.is_none() {
            return Err(AdminError::Failed(format!(
                "user {unique_id:?} vanished before the password could be set"
            )));
        }
    }
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", json!({ "userId": user.id.to_string() }))?;
    } else {
        writeln!(out, "{}", user.id)?;
    }
    Ok(())
}

/// `medialib user passwd`: sets or replaces the `local` password of an existing user.
pub fn user_passwd(
    services: &Services,
    unique_id: &str,
    password: &Secret,
    json: bool,
) -> Result<(), AdminError> {
    let unique = UniqueId::parse(unique_id).map_err(|e| AdminError::Invalid(e.to_string()))?;
    let hash = hash(password)?;
    let user = services
        .people()
        .set_password(&unique, &hash)?
        .ok_or_else(|| AdminError::Failed(format!("no user with uniqueId {unique_id:?}")))?;
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(
            out,
            "{}",
            json!({ "userId": user.id.to_string(), "passwordSet": "true" })
        )?;
    } else {
        writeln!(out, "password set for {unique_id} ({})", user.id)?;
    }
    Ok(())
}

fn user_json(u: &User) -> serde_json::Value {
    json!({
        "userId": u.id.to_string(),
        "uniqueId": u.unique_id.as_str(),
        "firstName": u.first_name.as_str(),
        "lastName": u.last_name.as_str(),
        "orgAdmin": u.org_admin,
    })
}

/// `medialib user list`.
pub fn user_list(services: &Services, json: bool) -> Result<(), AdminError> {
    let users = services.oauth().list_users()?;
    let mut out = std::io::stdout().lock();
    if json {
        let list: Vec<_> = users.iter().map(user_json).collect();
        writeln!(out, "{}", serde_json::Value::Array(list))?;
        return Ok(());
    }
    if users.is_empty() {
        writeln!(out, "no users yet: add one with `medialib user add`")?;
    }
    for u in &users {
        let admin = if u.org_admin { "  (org admin)" } else { "" };
        writeln!(
            out,
            "{}  {}  {} {}{admin}",
            u.id, u.unique_id, u.first_name, u.last_name
        )?;
    }
    Ok(())
}

/// `medialib client add`.
pub fn client_add(
    services: &Services,
    name: &str,
    redirect_uris: Vec<String>,
    public: bool,
    json: bool,
) -> Result<(), AdminError> {
    let (client, secret) = services
        .oauth()
        .register_client(NewClient {
            name: name.to_owned(),
            redirect_uris,
            public,
        })
        .map_err(|e| match e {
            RegisterClientError::Invalid(m) => AdminError::Invalid(m),
            RegisterClientError::Store(s) => s.into(),
        })?;
    let mut out = std::io::stdout().lock();
    let secret = secret.as_ref().map(|s| s.expose().to_owned());
    if json {
        writeln!(
            out,
            "{}",
            json!({ "client_id": client.id().as_str(), "client_secret": secret })
        )?;
    } else {
        writeln!(out, "client_id:     {}", client.id())?;
        match secret {
            Some(s) => {
                writeln!(out, "client_secret: {s}")?;
                writeln!(
                    out,
                    "The secret is shown only now and stored only as a digest: give it to the client's operator."
                )?;
            }
            None => writeln!(out, "public client: no secret; it must use PKCE (S256)")?,
        }
    }
    Ok(())
}

fn client_json(c: &Client) -> serde_json::Value {
    json!({
        "client_id": c.id().as_str(),
        "name": c.name().as_str(),
        "public": matches!(c.kind(), ClientKind::Public),
        "redirect_uris": c.redirect_uris().iter().map(|u| u.as_str()).collect::<Vec<_>>(),
    })
}

/// `medialib client list`.
pub fn client_list(services: &Services, json: bool) -> Result<(), AdminError> {
    let clients = services.oauth().list_clients()?;
    let mut out = std::io::stdout().lock();
    if json {
        let list: Vec<_> = clients.iter().map(client_json).collect();
        writeln!(out, "{}", serde_json::Value::Array(list))?;
        return Ok(());
    }
    if clients.is_empty() {
        writeln!(
            out,
            "no clients yet: register one with `medialib client add`"
        )?;
    }
    for c in &clients {
        let kind = if c.is_public() {
            "public"
        } else {
            "confidential"
        };
        let uris: Vec<&str> = c.redirect_uris().iter().map(|u| u.as_str()).collect();
        writeln!(
            out,
            "{}  {}  ({kind})  {}",
            c.id(),
            c.name().as_str(),
            uris.join(" ")
        )?;
    }
    Ok(())
}

fn client_id(id: &str) -> Result<ClientId, AdminError> {
    ClientId::parse(id).map_err(|e| AdminError::Invalid(e.to_string()))
}

/// `medialib client remove`.
pub fn client_remove(services: &Services, id: &str, json: bool) -> Result<(), AdminError> {
    let id = client_id(id)?;
    if !services.oauth().remove_client(&id)? {
        return Err(AdminError::Failed(format!("no client with id {id}")));
    }
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", json!({ "removed": id.as_str() }))?;
    } else {
        writeln!(out, "removed client {id} and every token issued to it")?;
    }
    Ok(())
}

/// `medialib client rotate-secret`.
pub fn client_rotate(services: &Services, id: &str, json: bool) -> Result<(), AdminError> {
    let id = client_id(id)?;
    let secret = services
        .oauth()
        .rotate_client_secret(&id)
        .map_err(|e| match e {
            RotateSecretError::UnknownClient => {
                AdminError::Failed(format!("no client with id {id}"))
            }
            RotateSecretError::PublicClient => AdminError::Invalid(e.to_string()),
            RotateSecretError::Store(s) => s.into(),
        })?;
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(
            out,
            "{}",
            json!({ "client_id": id.as_str(), "client_secret": secret.expose() })
        )?;
    } else {
        writeln!(out, "client_id:     {id}")?;
        writeln!(out, "client_secret: {}", secret.expose())?;
        writeln!(
            out,
            "The old secret no longer works. The new one is shown only now."
        )?;
    }
    Ok(())
}

/// Parses an object id given on the command line; a malformed one is a usage error.
fn object_id(text: &str, what: &str) -> Result<ObjectId, AdminError> {
    ObjectId::parse(text).map_err(|e| AdminError::Invalid(format!("{what} {text:?}: {e}")))
}

/// `medialib restore UUID [--into COLLECTION]`: brings back an object soft-deleted less than
/// 30 days ago, into the collection it was removed from (or `into`).
pub fn restore(
    services: &Services,
    id: &str,
    into: Option<&str>,
    json: bool,
) -> Result<(), AdminError> {
    let object = object_id(id, "object")?;
    let into = into.map(|c| object_id(c, "collection")).transpose()?;
    let restored = services
        .media()
        .restore_object(object, into)
        .map_err(|e| restore_error(e, object))?;
    let o = &restored.object;
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(
            out,
            "{}",
            json!({
                "uuid": o.id().to_string(),
                "type": o.object_type().as_str(),
                "title": o.fields().title.as_str(),
                "collection": restored.collection.to_string(),
            })
        )?;
    } else {
        writeln!(
            out,
            "restored {} {} ({:?}) into collection {}",
            o.object_type(),
            o.id(),
            o.fields().title.as_str(),
            restored.collection
        )?;
    }
    Ok(())
}

/// The operator's message for a refused restore (all exit 1: the arguments were well formed).
fn restore_error(e: RestoreObjectError, object: ObjectId) -> AdminError {
    let message = match e {
        RestoreObjectError::NotFound => format!("no object with id {object}"),
        RestoreObjectError::NotDeleted => {
            format!("object {object} is not deleted: there is nothing to restore")
        }
        RestoreObjectError::Expired { deleted_at } => format!(
            "object {object} was deleted at {} (epoch seconds), more than 30 days ago, and can no longer be restored",
            deleted_at.epoch_seconds()
        ),
        RestoreObjectError::NoKnownCollection => format!(
            "object {object} was deleted before medialib recorded where from: name the collection to restore it into with --into COLLECTION"
        ),
        RestoreObjectError::CollectionGone(c) => format!(
            "cannot restore {object} into collection {c}: it does not exist or is deleted \
             (restore it first with `medialib restore {c}`, or choose another with --into COLLECTION)"
        ),
        RestoreObjectError::Rule(MembershipError::NotACollection) => {
            format!("cannot restore {object}: the target is not a collection (type catalog)")
        }
        RestoreObjectError::Rule(MembershipError::Cycle) => format!(
            "cannot restore {object} into that collection: it is the object itself or lies inside it"
        ),
        RestoreObjectError::Store(s) => s.to_string(),
    };
    AdminError::Failed(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(input: &[u8]) -> Result<Secret, AdminError> {
        read_password(&mut std::io::Cursor::new(input))
    }

    #[test]
    fn one_line_is_read_and_only_one_line_ending_removed() {
        assert_eq!(read(b"hunter22\n").unwrap().expose(), "hunter22");
        assert_eq!(read(b"hunter22\r\n").unwrap().expose(), "hunter22");
        assert_eq!(read(b"hunter22").unwrap().expose(), "hunter22");
        assert_eq!(read(b" spaced out \n\n").unwrap().expose(), " spaced out ");
        assert_eq!(read(b"first\nsecond\n").unwrap().expose(), "first");
        assert_eq!(read(b"ends in cr\r").unwrap().expose(), "ends in cr\r");
        assert_eq!(
            read(b"\n").unwrap().expose(),
            "",
            "an empty line is for the policy"
        );
    }

    #[test]
    fn empty_or_non_utf8_input_is_a_usage_error() {
        let Err(AdminError::Invalid(message)) = read(b"") else {
            panic!("empty input must be refused")
        };
        assert!(
            message.contains("no password on standard input"),
            "{message}"
        );
        assert!(matches!(read(b"\xff\xfe\n"), Err(AdminError::Invalid(_))));
    }

    #[test]
    fn long_input_is_not_read_without_bound() {
        let long = vec![b'x'; 1 << 20];
        let password = read(&long).unwrap();
        assert!(password.expose().len() <= 1027);
        let Err(AdminError::Invalid(message)) = hash(&password) else {
            panic!("an overlong password must be refused")
        };
        assert!(message.contains("too long"), "{message}");
    }

    #[test]
    fn policy_violations_are_usage_errors() {
        let Err(AdminError::Invalid(message)) = hash(&Secret::new("short")) else {
            panic!("a short password must be refused")
        };
        assert!(message.contains("at least 8 characters"), "{message}");
        assert!(hash(&Secret::new("long enough")).is_ok());
    }
}
