//! `ClientRepository`.

use std::collections::BTreeSet;

use medialib_domain::oauth::{Client, ClientId, ClientKind, RedirectUri};
use medialib_domain::{GrantId, Timestamp, TokenDigest};
use medialib_ports::{ClientRepository, CreateClientError, StoreError};

use crate::MemoryStore;

impl ClientRepository for MemoryStore {
    fn create_client(&self, client: &Client, _now: Timestamp) -> Result<(), CreateClientError> {
        // Mirrors adapters-diesel clients.rs: a redirect URI registered twice is stored once,
        // at its first position (the `(client_id, uri)` key, inserted `ON CONFLICT DO NOTHING`).
        let mut uris: Vec<RedirectUri> = Vec::with_capacity(client.redirect_uris().len());
        for uri in client.redirect_uris() {
            if !uris.iter().any(|u| u.as_str() == uri.as_str()) {
                uris.push(uri.clone());
            }
        }
        let stored = Client::new(
            client.id().clone(),
            client.name().clone(),
            uris,
            client.kind().clone(),
        )
        .map_err(|e| StoreError::Unexpected(format!("client registration: {e}")))?;
        let mut state = self.lock();
        if state.clients.contains_key(client.id()) {
            return Err(CreateClientError::IdTaken);
        }
        state.clients.insert(client.id().clone(), stored);
        Ok(())
    }

    fn client(&self, id: &ClientId) -> Result<Option<Client>, StoreError> {
        Ok(self.lock().clients.get(id).cloned())
    }

    fn list_clients(&self) -> Result<Vec<Client>, StoreError> {
        let mut clients: Vec<Client> = self.lock().clients.values().cloned().collect();
        // Mirrors adapters-diesel clients.rs: `ORDER BY name, id`, compared byte by byte as
        // SQLite's default collation does.
        clients.sort_by(|a, b| {
            (a.name().as_str(), a.id().as_str()).cmp(&(b.name().as_str(), b.id().as_str()))
        });
        Ok(clients)
    }

    fn remove_client(&self, id: &ClientId) -> Result<bool, StoreError> {
        let mut state = self.lock();
        if state.clients.remove(id).is_none() {
            return Ok(false);
        }
        // What the schema's `ON DELETE CASCADE` takes with the client: its codes and grants,
        // and with the grants their access and refresh tokens (`ON DELETE SET NULL` clears
        // any other code's link to those grants).
        state.codes.retain(|_, c| c.code.client != *id);
        let grants: BTreeSet<GrantId> = state
            .grants
            .iter()
            .filter(|(_, g)| g.client == *id)
            .map(|(g, _)| *g)
            .collect();
        state.grants.retain(|g, _| !grants.contains(g));
        state
            .access_tokens
            .retain(|_, t| !grants.contains(&t.grant));
        state
            .refresh_tokens
            .retain(|_, t| !grants.contains(&t.grant));
        for code in state.codes.values_mut() {
            if code.grant.is_some_and(|g| grants.contains(&g)) {
                code.grant = None;
            }
        }
        Ok(true)
    }

    fn set_client_secret(&self, id: &ClientId, digest: &TokenDigest) -> Result<bool, StoreError> {
        let mut state = self.lock();
        let Some(client) = state.clients.get(id) else {
            return Ok(false);
        };
        // Mirrors adapters-diesel clients.rs: only a confidential client's secret is replaced
        // (`WHERE secret_digest IS NOT NULL`); a public client stays public and gets `false`.
        if !matches!(client.kind(), ClientKind::Confidential { .. }) {
            return Ok(false);
        }
        let replaced = Client::new(
            client.id().clone(),
            client.name().clone(),
            client.redirect_uris().to_vec(),
            ClientKind::Confidential {
                secret_digest: *digest,
            },
        )
        .map_err(|e| StoreError::Unexpected(format!("client registration: {e}")))?;
        state.clients.insert(id.clone(), replaced);
        Ok(true)
    }
}
