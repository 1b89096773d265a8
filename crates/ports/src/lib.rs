//! medialib's ports: what the core needs from the world, and the use cases.
//!
//! Repository traits are coarse and atomic ("rotate this refresh token", not
//! "update row"); adapters implement them as one transaction or conditional
//! update. Time and randomness arrive through [`Clock`] and [`RandomSource`].

pub mod error;
pub mod repos;
pub mod services;
pub mod sso;
pub mod world;

pub use error::StoreError;
pub use repos::{
    AddMemberError, AddOutcome, BearerRecord, CatalogItem, ClientRepository, CodeExchange,
    CreateClientError, CreateObjectError, CreateUserError, CredentialRepository, ExchangeError,
    GrantRepository, Housekeeping, MediaRepository, OrgRepository, PendingSignInRepository,
    PermissionChangeError, PermissionEntry, PurgeReport, ReadFacts, Reader, RefreshExchange,
    RemoveMemberError, RevokeOutcome, RotateError, SessionRepository, Store, StoredPendingSignIn,
    UpdateObjectError, UserRepository,
};
pub use services::{ServiceSettings, Services};
pub use sso::{
    Credentials, NoSso, PasswordHash, PendingSignIn, RedirectCallback, RedirectStart, SignInMethod,
    SsoError, SsoIdentity, SsoProvider,
};
pub use world::{Clock, ManualClock, RandomExt, RandomSource};
