//! Repository ports. Each operation is coarse and atomic: the adapter runs it as
//! one transaction or conditional update, so concurrent callers never both win.

use medialib_domain::media::derived::DerivedSet;
use medialib_domain::oauth::{
    AccessTokenRecord, Client, ClientId, CodeDecision, CodeFacts, IssuedCode, RefreshDecision,
    RefreshFacts, RefreshTokenRecord, RevocationFacts, RevokeDecision,
};
use medialib_domain::{
    AccessView, AfterRemoval, BrowserSession, MediaObject, MembershipError, ObjectId, ObjectPatch,
    OrgNamespace, PageRequest, PermissionLevel, PersonName, Secret, ShortCode, Since, Timestamp,
    TokenDigest, UniqueId, UpdateError, User, UserId,
};

use crate::error::StoreError;
use crate::failures::failures;
use crate::jobs::JobRepository;
use crate::lti::LtiRepository;
use crate::sso::PasswordHash;
use crate::uploads::UploadRepository;

/// The organization's one-time settings.
pub trait OrgRepository: Send + Sync {
    /// The namespace every id is minted in (created at first migration).
    fn namespace(&self) -> Result<OrgNamespace, StoreError>;
}

failures! {
    /// Creating a user failed.
    pub enum CreateUserError {
        /// Another user has this uniqueId.
        #[error("a user with this uniqueId already exists")]
        UniqueIdTaken,
        Store(StoreError),
    }
}

/// Users of the organization.
pub trait UserRepository: Send + Sync {
    /// Stores a new user.
    fn create_user(&self, user: &User, now: Timestamp) -> Result<(), CreateUserError>;
    /// A user by id.
    fn user(&self, id: UserId) -> Result<Option<User>, StoreError>;
    /// A user by SSO uniqueId.
    fn user_by_unique_id(&self, unique_id: &UniqueId) -> Result<Option<User>, StoreError>;
    /// Changes a user's names; `false` when there is no such user.
    fn update_user_names(
        &self,
        id: UserId,
        first: &PersonName,
        last: &PersonName,
        now: Timestamp,
    ) -> Result<bool, StoreError>;
    /// Every user, ordered by uniqueId.
    fn list_users(&self) -> Result<Vec<User>, StoreError>;
}

failures! {
    /// Creating an object failed.
    pub enum CreateObjectError {
        CollectionNotFound,
        NotACollection,
        Store(StoreError),
    }

    /// Updating an object failed.
    pub enum UpdateObjectError {
        /// No such live object.
        #[error("object not found")]
        NotFound,
        /// A domain rule refused it.
        #[error(transparent)]
        Rule(#[from] UpdateError),
        Store(StoreError),
    }
}

/// Whether an add created a membership.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddOutcome {
    /// A new membership.
    Added,
    /// It was already a member (adding is idempotent).
    AlreadyMember,
}

failures! {
    /// Adding a member failed.
    pub enum AddMemberError {
        CollectionNotFound,
        /// The member does not exist.
        #[error("object not found")]
        MemberNotFound,
        /// The graph rules refused it (not a collection, cycle).
        #[error(transparent)]
        Rule(#[from] MembershipError),
        Store(StoreError),
    }

    /// Removing a member failed.
    pub enum RemoveMemberError {
        /// It is not a member of that collection.
        #[error("the object is not a member of this collection")]
        NotAMember,
        Store(StoreError),
    }
}

/// One member of a collection, as listed by the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogItem {
    /// The member.
    pub object: MediaObject,
    /// When it joined this collection.
    pub added_at: Timestamp,
}

/// An explicit permission entry on a collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionEntry {
    /// The user.
    pub user: User,
    /// The level.
    pub level: PermissionLevel,
}

failures! {
    /// Changing a permission entry failed.
    pub enum PermissionChangeError {
        CollectionNotFound,
        NotACollection,
        /// No such user.
        #[error("user not found")]
        UserNotFound,
        /// The user holds no entry there (removal).
        #[error("the user holds no entry on this collection")]
        NoEntry,
        /// It would remove or demote the last admin.
        #[error(transparent)]
        LastAdmin(#[from] medialib_domain::LastAdmin),
        Store(StoreError),
    }
}

/// A soft-deleted object brought back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoredObject {
    /// The object, live again.
    pub object: MediaObject,
    /// The collection it is a member of again.
    pub collection: ObjectId,
}

failures! {
    /// Restoring a soft-deleted object failed.
    pub enum RestoreObjectError {
        /// No object has this id (never existed, or already purged).
        #[error("no object with this id")]
        NotFound,
        /// The object is live: there is nothing to restore.
        #[error("the object is not deleted")]
        NotDeleted,
        /// It was deleted longer ago than the retention period; it is waiting to be purged.
        #[error("the object was deleted more than 30 days ago and can no longer be restored")]
        Expired {
            /// When it was deleted.
            deleted_at: Timestamp,
        },
        /// No collection was named and the one it was removed from is not recorded.
        #[error("the collection it was removed from is not known; name one")]
        NoKnownCollection,
        /// The collection to restore into is deleted or does not exist.
        #[error("collection {0} does not exist or is deleted")]
        CollectionGone(ObjectId),
        /// The graph rules refused it (not a collection, or a cycle).
        #[error(transparent)]
        Rule(#[from] MembershipError),
        Store(StoreError),
    }
}

/// Whose permission entries a read fetches along with what it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader<'a> {
    /// Nobody signed in: no entries are read.
    Anonymous,
    /// A known user.
    User(UserId),
    /// Whoever holds the access token with this digest: the token and its user are read
    /// too, and the entries are that user's.
    Bearer(&'a TokenDigest),
}

/// An access token and the user it acts for, read together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BearerRecord {
    /// The token (revocation of its grant included).
    pub token: AccessTokenRecord,
    /// Its user; `None` when that user no longer exists.
    pub user: Option<User>,
}

/// What reading `object` through `collection` is decided on, read in one step
/// ([`MediaRepository::read_facts`]). The services decide; these are only the facts.
#[derive(Debug, Clone, Default)]
pub struct ReadFacts {
    /// For [`Reader::Bearer`]: the token and its user; `None` when no token has that digest.
    pub bearer: Option<BearerRecord>,
    /// Whether the collection exists and is live.
    pub collection_live: bool,
    /// Whether the object is a direct member of the collection.
    pub member: bool,
    /// The object, whatever its lifecycle; `None` when no object has that id.
    pub object: Option<MediaObject>,
    /// The reader's explicit entries on the collection and its ancestors, with the edges
    /// between them (empty for [`Reader::Anonymous`] and for an unknown token).
    pub access: AccessView,
    /// The files processing derived from the object's media (its record's stills come from
    /// them); `None` for an object without media or whose media has none yet.
    pub derived: Option<DerivedSet>,
}

/// Objects, the membership graph and permissions.
pub trait MediaRepository: Send + Sync {
    /// Everything reading `object` through `collection` is decided on, in one step (one
    /// connection; one statement where the backend allows): see [`ReadFacts`].
    fn read_facts(
        &self,
        reader: Reader<'_>,
        collection: ObjectId,
        object: ObjectId,
    ) -> Result<ReadFacts, StoreError>;
    /// Stores a new top-level library and makes `admin` its admin, in one step.
    fn create_library(&self, library: &MediaObject, admin: UserId)
    -> Result<(), CreateObjectError>;
    /// Stores a new object as a member of `collection`, in one step.
    fn create_in_collection(
        &self,
        object: &MediaObject,
        collection: ObjectId,
    ) -> Result<(), CreateObjectError>;
    /// A live object by id.
    fn object(&self, id: ObjectId) -> Result<Option<MediaObject>, StoreError>;
    /// An object by id whatever its lifecycle (restore, purge).
    fn object_any_state(&self, id: ObjectId) -> Result<Option<MediaObject>, StoreError>;
    /// A live object by permLink shortcode.
    fn object_by_shortcode(&self, code: &ShortCode) -> Result<Option<MediaObject>, StoreError>;
    /// Applies a patch through the domain's rules, in one step.
    fn update_object(
        &self,
        id: ObjectId,
        patch: ObjectPatch,
        now: Timestamp,
    ) -> Result<MediaObject, UpdateObjectError>;
    /// Whether `member` is in `collection`.
    fn is_member(&self, collection: ObjectId, member: ObjectId) -> Result<bool, StoreError>;
    /// The collections `member` is directly in.
    fn collections_of(&self, member: ObjectId) -> Result<Vec<ObjectId>, StoreError>;
    /// Adds a membership after the cycle check, atomically with respect to other adds.
    fn add_member(
        &self,
        collection: ObjectId,
        member: ObjectId,
        now: Timestamp,
    ) -> Result<AddOutcome, AddMemberError>;
    /// Removes a membership; the last one soft-deletes the member.
    fn remove_member(
        &self,
        collection: ObjectId,
        member: ObjectId,
        now: Timestamp,
    ) -> Result<AfterRemoval, RemoveMemberError>;
    /// Live members of the listing's `collection`, changed (modified or added) at or
    /// after its `since` when given; most recently modified first, ties by id. With `page`, only the members
    /// after its cursor, at most one more than its size (the extra one tells the caller
    /// that another page follows).
    fn list_members(&self, members: Members) -> Result<Vec<CatalogItem>, StoreError> {
        let mut items = Vec::new();
        self.each_member(members, &mut |item| items.push(item))?;
        Ok(items)
    }
    /// The members [`list_members`](Self::list_members) lists, in the same order, handed to
    /// `visit` one at a time as they are read: a large collection is never held whole.
    fn each_member(
        &self,
        members: Members,
        visit: &mut dyn FnMut(CatalogItem),
    ) -> Result<(), StoreError>;
    /// `user`'s explicit entries on each of `objects` and their ancestors, with the edges
    /// between them: the facts the authorization gate decides on.
    fn access_view(&self, user: UserId, objects: &[ObjectId]) -> Result<AccessView, StoreError>;
    /// Sets `user`'s explicit level on `collection`, refusing to demote the last admin.
    fn set_permission(
        &self,
        collection: ObjectId,
        user: UserId,
        level: PermissionLevel,
        now: Timestamp,
    ) -> Result<(), PermissionChangeError>;
    /// Removes `user`'s explicit entry, refusing to remove the last admin.
    fn remove_permission(
        &self,
        collection: ObjectId,
        user: UserId,
    ) -> Result<(), PermissionChangeError>;
    /// The explicit entries on `collection`, ordered by uniqueId.
    fn permission_entries(&self, collection: ObjectId) -> Result<Vec<PermissionEntry>, StoreError>;
    /// `user`'s explicit level on `collection`, `None` when it holds no entry there.
    fn explicit_level(
        &self,
        collection: ObjectId,
        user: UserId,
    ) -> Result<Option<PermissionLevel>, StoreError>;
    /// The live catalogs on which `user` holds an explicit entry (any level), ordered by id.
    fn catalogs_with_entries_for(&self, user: UserId) -> Result<Vec<MediaObject>, StoreError>;
    /// Every live catalog, ordered by id.
    fn all_catalogs(&self) -> Result<Vec<MediaObject>, StoreError>;
    /// Brings a soft-deleted object back, in one step: it becomes live and a member of `into`,
    /// or, when `into` is `None`, of the collection whose removal deleted it. Refused when
    /// the object is live, or deleted longer ago than the retention period at `now`
    /// (`medialib_domain::object::purge_due`), or when the target is not a live catalog or
    /// the membership would make a cycle.
    fn restore_object(
        &self,
        id: ObjectId,
        into: Option<ObjectId>,
        now: Timestamp,
    ) -> Result<RestoredObject, RestoreObjectError>;
}

failures! {
    /// Registering a client failed.
    pub enum CreateClientError {
        /// The id is taken.
        #[error("a client with this id already exists")]
        IdTaken,
        Store(StoreError),
    }
}

/// Registered OAuth clients.
pub trait ClientRepository: Send + Sync {
    /// Registers a client.
    fn create_client(&self, client: &Client, now: Timestamp) -> Result<(), CreateClientError>;
    /// A client by id.
    fn client(&self, id: &ClientId) -> Result<Option<Client>, StoreError>;
    /// Every client, ordered by name.
    fn list_clients(&self) -> Result<Vec<Client>, StoreError>;
    /// Removes a client and everything issued to it; `false` when unknown.
    fn remove_client(&self, id: &ClientId) -> Result<bool, StoreError>;
    /// Replaces a confidential client's secret digest; `false` when unknown.
    fn set_client_secret(&self, id: &ClientId, digest: &TokenDigest) -> Result<bool, StoreError>;
}

/// Whether a grant unit's write took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// Written as decided.
    Written,
    /// Between the unit's read and its write a concurrent caller claimed the code (spent the
    /// token): nothing was written, and the facts have changed.
    Lost,
}

/// One contested grant (a code exchange, a refresh) inside a store transaction: the
/// service reads the facts, the domain decides, the unit writes the decision. The unit
/// decides nothing; its one judgement is whether a conditional write still matched
/// ([`Applied::Lost`] when it did not).
pub trait GrantUnit<F, D> {
    /// The facts of the presentation, read in the unit's transaction.
    fn facts(&mut self) -> Result<F, StoreError>;
    /// Writes what `decision` says, at `now`.
    fn apply(&mut self, decision: &D, now: Timestamp) -> Result<Applied, StoreError>;
}

/// How many times one contested grant may lose its conditional write before the store counts
/// as broken. A code or a first rotation loses at most once (the facts then say "replay" or
/// "reuse", which writes unconditionally); a refresh retry within the grace loses once to
/// each concurrent retry of the same token that took the pair before it, so the bound is
/// well above any real fan-out of one client's retries.
pub const MAX_LOST_WRITES: u32 = 32;

/// Reads, decides and writes one contested grant in its unit, the one way a service runs
/// one: if the write lost to a concurrent caller, the facts have changed and `decide` runs
/// again on them (they then say "replay" or "reuse", which revokes what the winner got, or
/// for a retry within the grace, take back what the winner got). More than
/// [`MAX_LOST_WRITES`] losses would mean the store's conditional write is broken.
pub fn decide_and_write<F, D>(
    unit: &mut (dyn GrantUnit<F, D> + '_),
    now: Timestamp,
    decide: impl Fn(F) -> D,
) -> Result<D, StoreError> {
    for _ in 0..=MAX_LOST_WRITES {
        let decision = decide(unit.facts()?);
        if unit.apply(&decision, now)? == Applied::Written {
            return Ok(decision);
        }
    }
    Err(StoreError::Unexpected(format!(
        "a grant's conditional write lost more than {MAX_LOST_WRITES} times in one transaction"
    )))
}

/// The unit of a revocation.
pub type RevokeUnit<'a> = dyn GrantUnit<RevocationFacts, RevokeDecision> + 'a;

/// One contested grant for a store to run: the code or refresh token with `digest`
/// presented by `client`, and the `work` to run in its unit, in one transaction.
pub struct Contest<'a, F, D> {
    /// The digest of the code or refresh token presented.
    pub digest: &'a TokenDigest,
    /// The client that presents it.
    pub client: &'a ClientId,
    /// Reads, decides and writes in the unit (usually through [`decide_and_write`]).
    pub work: Box<GrantWork<F, D>>,
}

/// What a contested grant runs in its unit: reads, decides, writes. It owns what it needs
/// (`'static`, `Send`) so that a store may run it on another thread than its caller's: the
/// SQLite store's write gate runs the grants queued behind the one writing in that writer's
/// thread, one after another, instead of waking each grant's own thread in turn.
pub type GrantWork<F, D> =
    dyn FnOnce(&mut (dyn GrantUnit<F, D> + '_)) -> Result<D, StoreError> + Send + 'static;

impl<F, D> std::fmt::Debug for Contest<'_, F, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Contest")
            .field("digest", self.digest)
            .field("client", self.client)
            .finish_non_exhaustive()
    }
}
/// The contest of a code exchange.
pub type CodeContest<'a> = Contest<'a, CodeFacts, CodeDecision>;
/// The contest of a refresh.
pub type RefreshContest<'a> = Contest<'a, RefreshFacts, RefreshDecision>;

/// What a revocation request did (RFC 7009).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RevokeOutcome {
    /// An access token was revoked.
    AccessTokenRevoked,
    /// A refresh token was revoked, and with it its whole grant.
    GrantRevoked,
    /// No such token (answered 200 all the same).
    Unknown,
    /// The token belongs to another client: nothing was revoked.
    OtherClient,
}

impl From<RevokeDecision> for RevokeOutcome {
    fn from(d: RevokeDecision) -> Self {
        match d {
            RevokeDecision::RevokeGrant(_) => Self::GrantRevoked,
            RevokeDecision::RevokeAccessToken => Self::AccessTokenRevoked,
            RevokeDecision::OtherClient => Self::OtherClient,
            RevokeDecision::Unknown => Self::Unknown,
        }
    }
}

/// Which members of a collection a listing asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Members {
    /// The collection.
    pub collection: ObjectId,
    /// Only members changed (modified or added) at or after this; `None`: all.
    pub since: Option<Since>,
    /// One page; `None`: every member.
    pub page: Option<PageRequest>,
}

impl Members {
    /// Every live member of `collection`.
    pub fn all(collection: ObjectId) -> Self {
        Self {
            collection,
            since: None,
            page: None,
        }
    }
}

/// Codes, grants, access and refresh tokens: stored by digest only.
pub trait GrantRepository: Send + Sync {
    /// Stores an issued code.
    fn store_code(&self, code: &IssuedCode, now: Timestamp) -> Result<(), StoreError>;
    /// Runs the contest's `work` in one transaction over the code with its `digest`
    /// presented by its `client`: an `Err` from `work` rolls back, an `Ok` commits. Of
    /// concurrent units that decide to
    /// redeem the same code exactly one writes; the others' writes are [`Applied::Lost`].
    fn code_grant(&self, contest: CodeContest<'_>) -> Result<CodeDecision, StoreError>;
    /// Runs the work over the refresh token presented, as [`code_grant`](Self::code_grant)
    /// does for a code.
    fn refresh_grant(&self, contest: RefreshContest<'_>) -> Result<RefreshDecision, StoreError>;
    /// An access token by digest (revocation of its grant included).
    fn access_token(&self, digest: &TokenDigest) -> Result<Option<AccessTokenRecord>, StoreError>;
    /// An access token by digest with the user it acts for, in one step.
    fn bearer(&self, digest: &TokenDigest) -> Result<Option<BearerRecord>, StoreError>;
    /// The registered client `client` (as `ClientRepository::client` reads it) and the access
    /// token with `digest` with its user (as [`bearer`](Self::bearer) reads it), in one step:
    /// introspection needs both, and on PostgreSQL each step is a round trip.
    fn client_and_bearer(
        &self,
        client: &ClientId,
        digest: &TokenDigest,
    ) -> Result<(Option<Client>, Option<BearerRecord>), StoreError>;
    /// Runs `work` in one transaction over the token with `digest` presented for revocation
    /// (RFC 7009), as [`code_grant`](Self::code_grant) does for a code.
    fn revocation(
        &self,
        digest: &TokenDigest,
        work: &mut dyn FnMut(&mut RevokeUnit<'_>) -> Result<RevokeDecision, StoreError>,
    ) -> Result<RevokeDecision, StoreError>;
    /// Revokes every access token of `user` (sign out); refresh tokens survive.
    fn revoke_user_access_tokens(&self, user: UserId, now: Timestamp) -> Result<u64, StoreError>;
    /// A refresh token by digest, with its grant (for introspection).
    fn refresh_token(&self, digest: &TokenDigest)
    -> Result<Option<RefreshTokenRecord>, StoreError>;
}

/// Server-side browser sessions, stored under the digest of the cookie value.
pub trait SessionRepository: Send + Sync {
    /// Stores a new session.
    fn create_session(
        &self,
        digest: &TokenDigest,
        session: &BrowserSession,
    ) -> Result<(), StoreError>;
    /// The session stored under `digest`, expired or not (the caller checks `is_active`).
    fn session(&self, digest: &TokenDigest) -> Result<Option<BrowserSession>, StoreError>;
    /// Ends one session; `false` when there was none.
    fn end_session(&self, digest: &TokenDigest) -> Result<bool, StoreError>;
    /// Ends every session of `user`; returns how many.
    fn end_user_sessions(&self, user: UserId) -> Result<u64, StoreError>;
}

/// What a redirect-based sign-in (OpenID Connect) keeps server-side while the browser is at
/// the identity provider, stored under the digest of its `state`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredPendingSignIn {
    /// The OpenID Connect `nonce` the ID token must carry.
    pub nonce: Secret,
    /// The PKCE code verifier for the provider's token endpoint.
    pub pkce_verifier: Secret,
    /// The authorization request to resume afterwards (the authorize query string).
    pub return_to: String,
}

/// Redirect-based sign-ins in progress, shared by every server process on the database.
/// Each is short-lived and single use.
pub trait PendingSignInRepository: Send + Sync {
    /// Stores a pending sign-in under the digest of its `state` until `expires_at`.
    fn put_pending_sign_in(
        &self,
        state_digest: &TokenDigest,
        pending: &StoredPendingSignIn,
        expires_at: Timestamp,
    ) -> Result<(), StoreError>;
    /// Takes (deletes and returns) the pending sign-in stored under `state_digest`, if it is
    /// still live at `now`; an expired one is deleted and not returned. Of concurrent takers
    /// of the same record, exactly one gets it.
    fn take_pending_sign_in(
        &self,
        state_digest: &TokenDigest,
        now: Timestamp,
    ) -> Result<Option<StoredPendingSignIn>, StoreError>;
}

/// The `local` SSO directory's password hashes (argon2id PHC strings, made in `adapters-sso`).
pub trait CredentialRepository: Send + Sync {
    /// Sets (or replaces) the password hash of `user`; `false` when no such user exists.
    fn set_password_hash(
        &self,
        user: UserId,
        hash: &PasswordHash,
        now: Timestamp,
    ) -> Result<bool, StoreError>;
    /// The user with `unique_id` and their password hash, when both exist.
    fn password_hash(
        &self,
        unique_id: &UniqueId,
    ) -> Result<Option<(User, PasswordHash)>, StoreError>;
}

/// What one housekeeping pass deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PurgeReport {
    /// Authorization codes.
    pub codes: u64,
    /// Access tokens.
    pub access_tokens: u64,
    /// Refresh tokens.
    pub refresh_tokens: u64,
    /// Grants left with no token and no code.
    pub grants: u64,
    /// Browser sessions.
    pub sessions: u64,
    /// Redirect-based sign-ins that were never finished.
    pub pending_sign_ins: u64,
}

/// Deletes what can no longer be used, in small batches so requests are never blocked long.
pub trait Housekeeping: Send + Sync {
    /// Deletes codes expired before `now - code_grace` (kept that long so a late replay still
    /// revokes the tokens issued from the code), access tokens expired before `now`, refresh
    /// tokens expired before `now`, revoked grants with nothing left, expired sessions and
    /// expired pending sign-ins.
    fn purge_expired(&self, now: Timestamp, code_grace: i64) -> Result<PurgeReport, StoreError>;
}

/// Declares [`Store`] as the sum of the repository traits and implements it for every type
/// that implements them all, so that the list is written once.
macro_rules! store {
    ($first:ident $(, $rest:ident)* $(,)?) => {
        /// Everything the application services need from storage.
        pub trait Store: $first $(+ $rest)* {}

        impl<T: $first $(+ $rest)*> Store for T {}
    };
}

store!(
    OrgRepository,
    UserRepository,
    MediaRepository,
    ClientRepository,
    GrantRepository,
    SessionRepository,
    CredentialRepository,
    PendingSignInRepository,
    Housekeeping,
    UploadRepository,
    JobRepository,
    LtiRepository,
);
