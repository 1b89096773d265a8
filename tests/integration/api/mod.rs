//! The media REST API over real HTTP against the real app, on SQLite and on
//! PostgreSQL. Every test is written once as `async fn NAME(b: Backend)` and
//! instantiated for both backends by `medialib_adapters_diesel::backend_tests!`
//! with the runner [`run`].
//!
//! Tokens come from the real OAuth machinery (a registered client, an approved
//! authorization, a code exchange) through the application services on the
//! same database: the real token store, not a bypass of the authorization check.

mod authz_holes;
mod authz_walk;
mod catalog;
mod contribute;
mod describe;
mod info;
mod media;
mod openapi;
mod pages;
mod permission;
pub mod records;
mod user;

use std::sync::Arc;

use medialib::configuration::SettingsLoader;
use medialib::startup;
use medialib_adapters_diesel::testing::TestBackend;
use medialib_adapters_diesel::{Database, PoolOptions};
use medialib_domain::oauth::{
    AuthorizeParams, Client, ClientId, ClientKind, ClientName, RedirectUri,
};
use medialib_domain::{PersonName, TokenKind, UniqueId, User};
use medialib_ports::Services;
use medialib_ports::services::{ClientCredentials, NewUserInput};
use reqwest::{Method, StatusCode};
use serde_json::Value;

pub use crate::helpers::Backend;
use crate::helpers::{TestApp, spawn_app_for};

pub const REDIRECT: &str = "https://lms.example.edu/callback";

/// The runner of `backend_tests!` for tests written as `async fn NAME(b: Backend)`.
pub async fn run<F: Future<Output = ()>>(backend: TestBackend, test: fn(Backend) -> F) {
    test(backend.database().expect("the app runs on a database")).await;
}

/// A running app plus the services on its database (to make users and tokens).
pub struct ApiApp {
    /// The running app.
    pub app: TestApp,
    /// Use cases on the same database.
    pub services: Services,
    client: ClientCredentials,
}

/// One HTTP answer.
#[derive(Debug)]
pub struct Answer {
    /// Status.
    pub status: StatusCode,
    /// Headers.
    pub headers: reqwest::header::HeaderMap,
    /// The JSON body (`Null` when empty).
    pub json: Value,
}

impl ApiApp {
    /// Starts the app on `backend`.
    pub async fn start(backend: Backend) -> Self {
        Self::start_with(backend, |l| l).await
    }

    /// Starts the app on `backend` with extra settings.
    pub async fn start_with(
        backend: Backend,
        configure: impl FnOnce(SettingsLoader) -> SettingsLoader,
    ) -> Self {
        Self::around(spawn_app_for(backend, configure).await)
    }

    /// Starts the app on `db_url` (kept alive by `guard`) with extra settings.
    pub async fn start_on(
        db_url: String,
        guard: Box<dyn std::any::Any + Send>,
        configure: impl FnOnce(SettingsLoader) -> SettingsLoader,
    ) -> Self {
        Self::around(crate::helpers::spawn_app_on(db_url, guard, configure).await)
    }

    /// Wraps a running app with use cases on its database and a registered client.
    fn around(app: TestApp) -> Self {
        let settings = medialib::configuration::SettingsLoader::new()
            .set("storage_url", crate::helpers::shared_media_url())
            .set("database_url", app.db_url.clone())
            .load()
            .unwrap();
        let db = Database::connect(&app.db_url, &PoolOptions::default()).unwrap();
        let base = medialib::configuration::BaseUrl::parse(&app.address).unwrap();
        let services =
            startup::services(&settings, &base, db).expect("the use cases could not be wired");
        let client = register_client(&services);
        Self {
            app,
            services,
            client,
        }
    }

    /// Creates a user.
    pub fn user(&self, unique_id: &str, org_admin: bool) -> User {
        self.services
            .people()
            .create_user(NewUserInput {
                unique_id: UniqueId::parse(unique_id).unwrap(),
                first_name: PersonName::parse("Ada", "firstName").unwrap(),
                last_name: PersonName::parse(unique_id, "lastName").unwrap(),
                org_admin,
            })
            .unwrap()
    }

    /// An access token for `user` with `scope` (`"read write"`, `"read"`), from a real code exchange.
    pub fn token(&self, user: &User, scope: &str) -> String {
        mint_token(&self.services, &self.client, user, scope)
    }

    /// A user with a read-write token.
    pub fn signed_in(&self, unique_id: &str) -> (User, String) {
        let u = self.user(unique_id, false);
        let t = self.token(&u, "read write");
        (u, t)
    }

    /// Sends `method path` with an optional bearer token and urlencoded form fields.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        form: &[(&str, &str)],
    ) -> Answer {
        let mut req = self.app.client.request(method, self.app.url(path));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if !form.is_empty() {
            req = req.form(form);
        }
        answer(req.send().await.unwrap()).await
    }

    /// Sends a prepared request.
    pub async fn send(&self, req: reqwest::RequestBuilder) -> Answer {
        answer(req.send().await.unwrap()).await
    }

    /// `GET path`.
    pub async fn get(&self, path: &str, token: Option<&str>) -> Answer {
        self.call(Method::GET, path, token, &[]).await
    }

    /// Creates a top-level library via the API; returns its uuid.
    pub async fn library(&self, token: &str, title: &str) -> String {
        let a = self
            .call(
                Method::PUT,
                "/api/describe/c/0/o/0/",
                Some(token),
                &[("type", "catalog"), ("title", title)],
            )
            .await;
        assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
        a.json["uuid"].as_str().unwrap().to_owned()
    }

    /// Creates an object of `kind` in `collection` via the API; returns its uuid.
    pub async fn object(&self, token: &str, collection: &str, kind: &str, title: &str) -> String {
        let a = self
            .call(
                Method::PUT,
                &format!("/api/describe/c/{collection}/o/0"),
                Some(token),
                &[("type", kind), ("title", title)],
            )
            .await;
        assert_eq!(a.status, StatusCode::CREATED, "{a:?}");
        a.json["uuid"].as_str().unwrap().to_owned()
    }
}

async fn answer(res: reqwest::Response) -> Answer {
    let status = res.status();
    let headers = res.headers().clone();
    let bytes = res.bytes().await.unwrap();
    let json = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {}",
                String::from_utf8_lossy(&bytes)
            )
        })
    };
    Answer {
        status,
        headers,
        json,
    }
}

/// An access token for `user` with `scope`, from a real authorization and code exchange
/// through `services` for `client`.
pub fn mint_token(
    services: &Services,
    client: &ClientCredentials,
    user: &User,
    scope: &str,
) -> String {
    let params = AuthorizeParams {
        response_type: Some("code"),
        client_id: Some(&client.client_id),
        redirect_uri: Some(REDIRECT),
        state: Some("s"),
        scope: Some(scope),
        ..AuthorizeParams::default()
    };
    let request = services.oauth().start_authorization(&params).unwrap();
    let response = services
        .oauth()
        .approve_authorization(request, user.id)
        .unwrap();
    let code = response.param("code").unwrap().to_owned();
    let tokens = services
        .oauth()
        .exchange_code(client, &code, Some(REDIRECT), None)
        .unwrap();
    tokens.access_token.expose().to_owned()
}

pub fn register_client(services: &Services) -> ClientCredentials {
    let store: &Arc<dyn medialib_ports::Store> = services.store();
    let ns = store.namespace().unwrap();
    let id = ClientId::generate(&ns, rand::random());
    let (secret, digest) = TokenKind::ClientSecret.mint(rand::random());
    let client = Client::new(
        id.clone(),
        ClientName::parse("Test LMS").unwrap(),
        vec![RedirectUri::parse(REDIRECT).unwrap()],
        ClientKind::Confidential {
            secret_digest: digest,
        },
    )
    .unwrap();
    store
        .create_client(&client, medialib_domain::Timestamp::from_epoch_seconds(0))
        .unwrap();
    ClientCredentials {
        client_id: id.as_str().to_owned(),
        client_secret: Some(secret),
    }
}

/// The sorted keys of a JSON object.
pub fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

/// The fields of the complete describe record, sorted.
pub const COMPLETE_RECORD: [&str; 13] = [
    "authenticated",
    "created",
    "description",
    "images",
    "metadata",
    "modified",
    "permLink",
    "properties",
    "public",
    "title",
    "type",
    "userId",
    "uuid",
];

/// The fields of the limited describe record, sorted.
pub const LIMITED_RECORD: [&str; 8] = [
    "authenticated",
    "description",
    "images",
    "permLink",
    "public",
    "title",
    "type",
    "uuid",
];

/// Asserts the status and that the body is a JSON error with a `message`.
pub fn assert_error(a: &Answer, status: u16) {
    assert_eq!(a.status.as_u16(), status, "{a:?}");
    assert!(
        a.json["message"].is_string(),
        "error body has a message: {a:?}"
    );
}
