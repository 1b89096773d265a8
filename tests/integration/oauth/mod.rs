//! The OAuth 2.0 authorization server over real HTTP, on SQLite and PostgreSQL:
//! the JSON endpoints ([`endpoints`]), the sign-in and consent pages ([`pages`]),
//! and the whole flow driven by independent clients: Python's authlib and a real
//! headless Chromium ([`e2e`]).

mod e2e;
mod endpoints;
mod header;
mod oidc;
pub(crate) mod pages;
mod security;

use medialib::configuration::SettingsLoader;
use medialib_adapters_sso::hash_password;
use medialib_domain::oauth::{Client, ClientId, ClientKind, ClientName, RedirectUri};
use medialib_domain::{Secret, Timestamp, TokenKind, User};
use medialib_ports::services::ClientCredentials;

pub use crate::api::{Answer, ApiApp, Backend};

/// The password every test user gets.
pub const PASSWORD: &str = "correct horse battery staple";

/// An app for OAuth tests: the API app plus helpers for clients and local-directory users.
pub struct OAuthApp {
    /// The running app and its services.
    pub api: ApiApp,
}

impl OAuthApp {
    /// Starts the app on `backend`.
    pub async fn start(backend: Backend) -> Self {
        Self::start_with(backend, |l| l).await
    }

    /// Starts the app on `backend` with extra settings (e.g. low rate limits).
    pub async fn start_with(
        backend: Backend,
        configure: impl FnOnce(SettingsLoader) -> SettingsLoader,
    ) -> Self {
        Self {
            api: ApiApp::start_with(backend, configure).await,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base(&self) -> &str {
        &self.api.app.address
    }

    /// A URL on the app.
    pub fn url(&self, path: &str) -> String {
        self.api.app.url(path)
    }

    /// Registers a client with `redirect_uris`; public clients get no secret.
    pub fn register(&self, name: &str, redirect_uris: &[&str], public: bool) -> ClientCredentials {
        let store = self.api.services.store();
        let ns = store.namespace().unwrap();
        let id = ClientId::generate(&ns, rand::random());
        let (secret, kind) = if public {
            (None, ClientKind::Public)
        } else {
            let (secret, digest) = TokenKind::ClientSecret.mint(rand::random());
            (
                Some(secret),
                ClientKind::Confidential {
                    secret_digest: digest,
                },
            )
        };
        let uris = redirect_uris
            .iter()
            .map(|u| RedirectUri::parse(u).unwrap())
            .collect();
        let client = Client::new(id.clone(), ClientName::parse(name).unwrap(), uris, kind).unwrap();
        store
            .create_client(&client, Timestamp::from_epoch_seconds(0))
            .unwrap();
        ClientCredentials {
            client_id: id.as_str().to_owned(),
            client_secret: secret,
        }
    }

    /// A user of the `local` directory whose password is `password`.
    pub fn user_with_password(&self, unique_id: &str, password: &str) -> User {
        let user = self.api.user(unique_id, false);
        let hash = hash_password(&Secret::new(password)).unwrap();
        assert!(
            self.api
                .services
                .store()
                .set_password_hash(user.id, &hash, Timestamp::from_epoch_seconds(0))
                .unwrap()
        );
        user
    }
}
