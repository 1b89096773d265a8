//! `ClientRepository`.

use diesel::prelude::*;
use medialib_domain::oauth::{Client, ClientId, ClientKind, ClientName, RedirectUri};
use medialib_domain::{Timestamp, TokenDigest};
use medialib_ports::{ClientRepository, CreateClientError, StoreError};

use super::facts::{FactRow, need};
use super::rows::{client_id, digest};
use super::{DieselStore, flatten, is_unique_violation};
use crate::error::DbError;
use crate::macros::{with_conn, with_tx, with_write};
use crate::schema::{oauth_client_redirect_uris as uris, oauth_clients as clients};

type ClientRow = (String, String, Option<String>);

fn build(row: ClientRow, redirect_uris: Vec<String>) -> Result<Client, StoreError> {
    let corrupt =
        |what: &str, e: &dyn std::fmt::Display| StoreError::Corrupt(format!("client {what}: {e}"));
    let (id, name, secret) = row;
    let uris = redirect_uris
        .iter()
        .map(|u| RedirectUri::parse(u).map_err(|e| corrupt("redirect_uri", &e)))
        .collect::<Result<Vec<_>, _>>()?;
    let kind = match secret {
        Some(d) => ClientKind::Confidential {
            secret_digest: digest(&d)?,
        },
        None => ClientKind::Public,
    };
    Client::new(
        client_id(&id)?,
        ClientName::parse(&name).map_err(|e| corrupt("name", &e))?,
        uris,
        kind,
    )
    .map_err(|e| corrupt("registration", &e))
}

/// The client of the `k` and `r` rows of a [`ClientAndBearer`](super::facts::ClientAndBearer)
/// read (in any order), `None` without a `k` row; other rows are ignored.
pub(super) fn from_fact_rows(rows: &[FactRow]) -> Result<Option<Client>, StoreError> {
    let Some(k) = rows.iter().find(|r| r.0 == "k") else {
        return Ok(None);
    };
    let row = (
        need(k.1.clone(), "k")?,
        need(k.2.clone(), "k")?,
        k.3.clone(),
    );
    let mut uris: Vec<(i64, String)> = Vec::new();
    for r in rows.iter().filter(|r| r.0 == "r") {
        uris.push((need(r.7, "r")?, need(r.1.clone(), "r")?));
    }
    uris.sort();
    build(row, uris.into_iter().map(|(_, u)| u).collect()).map(Some)
}

impl ClientRepository for DieselStore {
    fn create_client(&self, client: &Client, now: Timestamp) -> Result<(), CreateClientError> {
        let id = client.id().as_str().to_owned();
        let secret = match client.kind() {
            ClientKind::Confidential { secret_digest } => Some(secret_digest.to_hex()),
            ClientKind::Public => None,
        };
        let r: Result<Result<(), CreateClientError>, DbError> = with_tx!(self.db, conn => {
            let taken: i64 = clients::table.filter(clients::id.eq(&id)).count().get_result(conn)?;
            if taken > 0 {
                return Ok(Err(CreateClientError::IdTaken));
            }
            diesel::insert_into(clients::table)
                .values((
                    clients::id.eq(&id),
                    clients::name.eq(client.name().as_str()),
                    clients::secret_digest.eq(&secret),
                    clients::created_at.eq(now.epoch_seconds()),
                ))
                .execute(conn)?;
            for (pos, uri) in client.redirect_uris().iter().enumerate() {
                diesel::insert_into(uris::table)
                    .values((
                        uris::client_id.eq(&id),
                        uris::uri.eq(uri.as_str()),
                        uris::position.eq(i32::try_from(pos).unwrap_or(i32::MAX)),
                    ))
                    .on_conflict_do_nothing()
                    .execute(conn)?;
            }
            Ok(Ok(()))
        });
        match r {
            Err(DbError::Query(e)) if is_unique_violation(&e) => Err(CreateClientError::IdTaken),
            other => flatten(other),
        }
    }

    fn client(&self, id: &ClientId) -> Result<Option<Client>, StoreError> {
        let key = id.as_str();
        let found = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                let row: Option<ClientRow> = clients::table
                    .find(key)
                    .select((clients::id, clients::name, clients::secret_digest))
                    .first(conn)
                    .optional()?;
                let Some(row) = row else { return Ok(None) };
                let list: Vec<String> = uris::table
                    .filter(uris::client_id.eq(key))
                    .order(uris::position.asc())
                    .select(uris::uri)
                    .load(conn)?;
                Ok(Some((row, list)))
            })
        })()?;
        found.map(|(row, list)| build(row, list)).transpose()
    }

    fn list_clients(&self) -> Result<Vec<Client>, StoreError> {
        let (rows, all_uris) = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                let rows: Vec<ClientRow> = clients::table
                    .order((clients::name.asc(), clients::id.asc()))
                    .select((clients::id, clients::name, clients::secret_digest))
                    .load(conn)?;
                let all: Vec<(String, String)> = uris::table
                    .order((uris::client_id.asc(), uris::position.asc()))
                    .select((uris::client_id, uris::uri))
                    .load(conn)?;
                Ok((rows, all))
            })
        })()?;
        rows.into_iter()
            .map(|row| {
                let list = all_uris
                    .iter()
                    .filter(|(c, _)| *c == row.0)
                    .map(|(_, u)| u.clone())
                    .collect();
                build(row, list)
            })
            .collect()
    }

    fn remove_client(&self, id: &ClientId) -> Result<bool, StoreError> {
        let key = id.as_str();
        let n = (|| -> Result<usize, DbError> {
            with_write!(self.db, conn => { Ok(diesel::delete(clients::table.find(key)).execute(conn)?) })
        })()?;
        Ok(n == 1)
    }

    fn set_client_secret(&self, id: &ClientId, digest: &TokenDigest) -> Result<bool, StoreError> {
        let key = id.as_str();
        let hex = digest.to_hex();
        let n = (|| -> Result<usize, DbError> {
            with_write!(self.db, conn => {
                Ok(diesel::update(clients::table.find(key))
                    .filter(clients::secret_digest.is_not_null())
                    .set(clients::secret_digest.eq(Some(&hex)))
                    .execute(conn)?)
            })
        })()?;
        Ok(n == 1)
    }
}
