//! OAuth client registration (operator commands): register, list, remove, rotate the secret.

use medialib_domain::oauth::{
    Client, ClientId, ClientKind, ClientName, InvalidClientField, RedirectUri,
};
use medialib_domain::{Secret, TokenKind};

use super::OAuthServices;
use crate::error::StoreError;
use crate::failures::failures;
use crate::repos::CreateClientError;
use crate::world::RandomExt as _;

failures! {
    /// Registering a client failed.
    pub enum RegisterClientError {
        /// The name or the redirect URIs do not parse (the message says which).
        #[error("{0}")]
        Invalid(String),
        Store(StoreError),
    }
}

/// A client to register.
#[derive(Debug, Clone)]
pub struct NewClient {
    /// Display name shown on the consent page.
    pub name: String,
    /// Redirect URIs, matched exactly.
    pub redirect_uris: Vec<String>,
    /// A public client has no secret and must use PKCE.
    pub public: bool,
}

failures! {
    /// Rotating a secret failed.
    pub enum RotateSecretError {
        /// No such client.
        #[error("no client with this id")]
        UnknownClient,
        /// Public clients have no secret.
        #[error("a public client has no secret to rotate")]
        PublicClient,
        Store(StoreError),
    }
}

impl OAuthServices {
    /// Registers a client; the secret (confidential clients) is returned once and stored as a digest.
    pub fn register_client(
        &self,
        new: NewClient,
    ) -> Result<(Client, Option<Secret>), RegisterClientError> {
        let invalid = |e: InvalidClientField| RegisterClientError::Invalid(e.to_string());
        let name = ClientName::parse(&new.name).map_err(invalid)?;
        let uris = new
            .redirect_uris
            .iter()
            .map(|u| {
                RedirectUri::parse(u).map_err(|e| RegisterClientError::Invalid(format!("{u}: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let (kind, secret) = if new.public {
            (ClientKind::Public, None)
        } else {
            let (secret, digest) = TokenKind::ClientSecret.mint(self.world.random.bytes32());
            (
                ClientKind::Confidential {
                    secret_digest: digest,
                },
                Some(secret),
            )
        };
        let ns = self.world.namespace()?;
        // A fresh random id collides with negligible probability; retry once to be exact.
        for _ in 0..2 {
            let id = ClientId::generate(&ns, self.world.random.bytes16());
            let client =
                Client::new(id, name.clone(), uris.clone(), kind.clone()).map_err(invalid)?;
            match self.clients.create_client(&client, self.world.clock.now()) {
                Ok(()) => return Ok((client, secret)),
                Err(CreateClientError::IdTaken) => continue,
                Err(CreateClientError::Store(s)) => return Err(s.into()),
            }
        }
        Err(StoreError::Unexpected("could not mint a unique client id".into()).into())
    }

    /// Every registered client.
    pub fn list_clients(&self) -> Result<Vec<Client>, StoreError> {
        self.clients.list_clients()
    }

    /// Removes a client and everything issued to it; `false` when unknown.
    pub fn remove_client(&self, id: &ClientId) -> Result<bool, StoreError> {
        self.clients.remove_client(id)
    }

    /// Replaces a confidential client's secret; the new one is returned once.
    pub fn rotate_client_secret(&self, id: &ClientId) -> Result<Secret, RotateSecretError> {
        let client = self
            .clients
            .client(id)?
            .ok_or(RotateSecretError::UnknownClient)?;
        if client.is_public() {
            return Err(RotateSecretError::PublicClient);
        }
        let (secret, digest) = TokenKind::ClientSecret.mint(self.world.random.bytes32());
        if self.clients.set_client_secret(id, &digest)? {
            Ok(secret)
        } else {
            Err(RotateSecretError::UnknownClient)
        }
    }

    /// Every user, ordered by uniqueId.
    pub fn list_users(&self) -> Result<Vec<medialib_domain::User>, StoreError> {
        self.users.list_users()
    }
}
