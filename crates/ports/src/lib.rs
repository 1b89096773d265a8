//! medialib's ports: what the core needs from the world, and the use cases.
//!
//! Repository traits are coarse and atomic ("rotate this refresh token", not
//! "update row"); adapters implement them as one transaction or conditional
//! update. Time and randomness arrive through [`Clock`] and [`RandomSource`].

pub mod error;
mod failures;
pub mod jobs;
pub mod lti;
pub mod no_wait;
pub mod processing;
pub mod repos;
pub mod services;
pub mod sso;
pub mod storage;
pub mod uploads;
pub mod world;

pub use error::StoreError;
pub use jobs::{ClaimRequest, ClaimedJob, JobCounts, JobEnd, JobEnded, JobRepository, JobTicket};
pub use lti::{
    AddConsumerError, AddPlatformError, CourseLibrary, IdTokenRefusal, KeyError, LtiConsumer,
    LtiRepository, LtiTokens, NoLtiTokens, PendingLogin, PublicJwk, ToolKey, UsedNonce,
};
pub use processing::{MediaProcessor, ProbeError, ProcessError, ProgressSink, ToolFailure};
pub use repos::{
    AddMemberError, AddOutcome, Applied, BearerRecord, CatalogItem, ClientRepository, CodeContest,
    Contest, CreateClientError, CreateObjectError, CreateUserError, CredentialRepository,
    GrantRepository, GrantUnit, Housekeeping, MAX_LOST_WRITES, MediaRepository, Members,
    OrgRepository, PendingSignInRepository, PermissionChangeError, PermissionEntry, PurgeReport,
    ReadFacts, Reader, RefreshContest, RemoveMemberError, RevokeOutcome, RevokeUnit,
    SessionRepository, Store, StoredPendingSignIn, UpdateObjectError, UserRepository,
    decide_and_write,
};
pub use services::{
    MediaServices, OAuthServices, PeopleServices, ServiceSettings, Services, SessionServices, World,
};
pub use sso::{
    Credentials, NoSso, PasswordHash, PendingSignIn, RedirectCallback, RedirectStart, SignInMethod,
    SsoError, SsoIdentity, SsoProvider,
};
pub use storage::{
    Append, AppendStop, Appended, Checkpoint, MediaStorage, NoStorage, ObjectInfo, Reading,
    Staging, StorageError,
};
pub use uploads::{
    Finish, LockRequest, MediaRecord, NewMedia, Progress, SourceFile, UploadLock, UploadRecord,
    UploadRepository,
};
pub use world::{Clock, ManualClock, RandomExt, RandomSource};
