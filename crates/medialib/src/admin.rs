//! The operator commands that manage users and OAuth clients
//! (`medialib user ...`, `medialib client ...`).

use std::io::Write;

use medialib_domain::oauth::{Client, ClientId, ClientKind};
use medialib_domain::{PersonName, UniqueId, User};
use medialib_ports::services::NewUserInput;
use medialib_ports::services::clients::{NewClient, RegisterClientError, RotateSecretError};
use medialib_ports::{CreateUserError, Services};
use serde_json::json;

use crate::configuration::Settings;
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
    let db = database::prepare(&settings.database_url)?;
    let base = settings.base_url_for(settings.bind);
    Ok(crate::startup::services(settings, &base, db))
}

/// `medialib user add`.
pub fn user_add(
    services: &Services,
    unique_id: &str,
    first: &str,
    last: &str,
    org_admin: bool,
    json: bool,
) -> Result<(), AdminError> {
    let invalid = |e: medialib_domain::InvalidText| AdminError::Invalid(e.to_string());
    let input = NewUserInput {
        unique_id: UniqueId::parse(unique_id).map_err(invalid)?,
        first_name: PersonName::parse(first, "first-name").map_err(invalid)?,
        last_name: PersonName::parse(last, "last-name").map_err(invalid)?,
        org_admin,
    };
    let user = services.create_user(input).map_err(|e| match e {
        CreateUserError::UniqueIdTaken => {
            AdminError::Failed(format!("a user with uniqueId {unique_id:?} already exists"))
        }
        CreateUserError::Store(s) => s.into(),
    })?;
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", json!({ "userId": user.id.to_string() }))?;
    } else {
        writeln!(out, "{}", user.id)?;
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
    let users = services.list_users()?;
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
    let clients = services.list_clients()?;
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
    if !services.remove_client(&id)? {
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
    let secret = services.rotate_client_secret(&id).map_err(|e| match e {
        RotateSecretError::UnknownClient => AdminError::Failed(format!("no client with id {id}")),
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
