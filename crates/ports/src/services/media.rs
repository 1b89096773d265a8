//! Media use cases: objects, memberships, permissions, catalog listing.

use medialib_domain::permission::authorize;
use medialib_domain::projection::describe_view;
use medialib_domain::{
    Action, AfterRemoval, Caller, DescribeRefused, DescribeView, Forbidden, Lifecycle, MediaObject,
    MembershipError, NewObject, ObjectId, ObjectPatch, ObjectType, PageCursor, PageRequest,
    PermissionLevel, ShortCode, Since, Timestamp, TokenKind, UpdateError, UserId,
};

use super::{BearerError, Services};
use crate::error::StoreError;
use crate::repos::{
    AddMemberError, AddOutcome, CatalogItem, CreateObjectError, PermissionChangeError,
    PermissionEntry, ReadFacts, Reader, RemoveMemberError, RestoreObjectError, RestoredObject,
    UpdateObjectError,
};
use crate::world::RandomExt as _;

/// Where a new object goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// A new top-level library (`c/0`); the creator becomes its admin.
    TopLevel,
    /// Into an existing collection.
    In(ObjectId),
}

/// Creating an object failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CreateObjectFailed {
    /// A top-level object must be a catalog.
    #[error("a new top-level library must have type catalog")]
    LibraryMustBeCatalog,
    /// No such collection.
    #[error("collection not found")]
    CollectionNotFound,
    /// The target is not a catalog.
    #[error("the target is not a collection")]
    NotACollection,
    /// The caller is not admin of the collection.
    #[error(transparent)]
    Forbidden(#[from] Forbidden),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Reading an object failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DescribeFailed {
    /// No such object in that collection.
    #[error("object not found in this collection")]
    NotFound,
    /// The caller may not see it.
    #[error(transparent)]
    Refused(#[from] DescribeRefused),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Describe GET with a presented bearer token failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DescribeWithTokenFailed {
    /// The token does not authenticate (401).
    #[error(transparent)]
    Bearer(#[from] BearerError),
    /// The read was refused or found nothing, or storage failed.
    #[error(transparent)]
    Describe(#[from] DescribeFailed),
}

/// Updating an object failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpdateObjectFailed {
    /// No such object in that collection.
    #[error("object not found in this collection")]
    NotFound,
    /// The caller is not admin of the collection.
    #[error(transparent)]
    Forbidden(#[from] Forbidden),
    /// A domain rule refused the change (type change: 409).
    #[error(transparent)]
    Rule(#[from] UpdateError),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Adding a member failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddMemberFailed {
    /// No such collection.
    #[error("collection not found")]
    CollectionNotFound,
    /// No such object.
    #[error("object not found")]
    MemberNotFound,
    /// The caller is not admin of the collection.
    #[error(transparent)]
    Forbidden(#[from] Forbidden),
    /// The caller cannot see the object it tries to add.
    #[error("the caller has no access to the object")]
    NoAccessToMember,
    /// Not a collection, or a cycle (409).
    #[error(transparent)]
    Rule(#[from] MembershipError),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Removing a member or listing a catalog failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MembershipChangeFailed {
    /// No such collection, or the object is not in it.
    #[error("object not found in this collection")]
    NotFound,
    /// The target is not a catalog.
    #[error("the target is not a collection")]
    NotACollection,
    /// The caller lacks the level needed.
    #[error(transparent)]
    Forbidden(#[from] Forbidden),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A permission call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PermissionFailed {
    /// No such collection.
    #[error("collection not found")]
    CollectionNotFound,
    /// The caller is not admin of the collection.
    #[error(transparent)]
    Forbidden(#[from] Forbidden),
    /// The change was refused (last admin, unknown user, no entry).
    #[error(transparent)]
    Change(#[from] PermissionChangeError),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One catalog answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogPage {
    /// Server time when the request started: pass it back as `ts` next time.
    pub ts: Timestamp,
    /// The caller's effective level on the listed collection.
    pub level: PermissionLevel,
    /// The members, most recently modified first.
    pub items: Vec<CatalogItem>,
    /// Where the next page starts, when the listing was paged and more members remain.
    pub next: Option<PageCursor>,
}

/// Receives a catalog answer while it is read, so that a large one is written out member
/// by member instead of being collected first ([`Services::list_catalog_into`]).
pub trait CatalogSink {
    /// Called once the listing is allowed, before any member: the answer's `ts` and the
    /// caller's effective level on the listed collection.
    fn start(&mut self, ts: Timestamp, level: PermissionLevel);
    /// Each member, most recently modified first.
    fn member(&mut self, item: CatalogItem);
    /// Called after the last member of a page when more members follow it: the cursor to
    /// ask for the next page with. Never called for an unpaged listing or the last page.
    fn next(&mut self, cursor: PageCursor);
}

impl CatalogSink for CatalogPage {
    fn start(&mut self, ts: Timestamp, level: PermissionLevel) {
        self.ts = ts;
        self.level = level;
    }
    fn member(&mut self, item: CatalogItem) {
        self.items.push(item);
    }
    fn next(&mut self, cursor: PageCursor) {
        self.next = Some(cursor);
    }
}

impl CatalogPage {
    /// An empty page, for [`CatalogSink`] to fill.
    pub(super) fn empty() -> Self {
        Self {
            ts: Timestamp::from_epoch_seconds(0),
            level: PermissionLevel::None,
            items: Vec::new(),
            next: None,
        }
    }
}

impl Services {
    /// The caller's effective level on a collection.
    pub fn effective_level(
        &self,
        caller: &Caller,
        collection: ObjectId,
    ) -> Result<PermissionLevel, StoreError> {
        if caller.is_org_admin() {
            return Ok(PermissionLevel::Admin);
        }
        let view = self.store.access_view(caller.user(), collection)?;
        Ok(view.effective_level(caller, collection))
    }

    fn require(
        &self,
        caller: &Caller,
        collection: ObjectId,
        action: Action,
    ) -> Result<PermissionLevel, RequireError> {
        let level = self.effective_level(caller, collection)?;
        authorize(level, action)?;
        Ok(level)
    }

    /// A live collection, or `None` when it does not exist or is not a catalog.
    fn live_object(&self, id: ObjectId) -> Result<Option<MediaObject>, StoreError> {
        self.store.object(id)
    }

    /// Whether `object` can be reached through `collection` (a member, or the collection itself).
    fn reachable(&self, collection: ObjectId, object: ObjectId) -> Result<bool, StoreError> {
        Ok(collection == object || self.store.is_member(collection, object)?)
    }

    /// Creates an object (describe PUT).
    #[tracing::instrument(skip(self, new), fields(user = %caller.user()))]
    pub fn create_object(
        &self,
        caller: &Caller,
        placement: Placement,
        new: NewObject,
    ) -> Result<MediaObject, CreateObjectFailed> {
        let now = self.clock.now();
        let ns = self.namespace()?;
        let object = MediaObject::create(
            ObjectId::generate(&ns, self.random.bytes16()),
            new,
            caller.user(),
            ShortCode::from_random(self.random.bytes16()),
            now,
        );
        match placement {
            Placement::TopLevel => {
                if object.object_type() != ObjectType::Catalog {
                    return Err(CreateObjectFailed::LibraryMustBeCatalog);
                }
                self.store
                    .create_library(&object, caller.user())
                    .map_err(CreateObjectFailed::from_repo)?;
            }
            Placement::In(collection) => {
                let target = self
                    .live_object(collection)?
                    .ok_or(CreateObjectFailed::CollectionNotFound)?;
                if !target.object_type().is_collection() {
                    return Err(CreateObjectFailed::NotACollection);
                }
                self.require(caller, collection, Action::Write)
                    .map_err(RequireError::into_create)?;
                self.store
                    .create_in_collection(&object, collection)
                    .map_err(CreateObjectFailed::from_repo)?;
            }
        }
        Ok(object)
    }

    /// Reads an object through a collection (describe GET); `caller` is `None` when anonymous.
    /// One store call.
    pub fn describe(
        &self,
        caller: Option<&Caller>,
        collection: ObjectId,
        object: ObjectId,
    ) -> Result<(MediaObject, DescribeView), DescribeFailed> {
        let reader = caller.map_or(Reader::Anonymous, |c| Reader::User(c.user()));
        let facts = self.store.read_facts(reader, collection, object)?;
        decide_describe(facts, caller, collection, object)
    }

    /// Describe GET with the bearer token as presented (`None` when there is none): the
    /// token is checked first (a bad one fails as [`BearerError`] whatever the object),
    /// then the read is decided as [`describe`](Self::describe) does for its holder. The
    /// token, its user, the object and the permission entries come from one store call.
    pub fn describe_with_token(
        &self,
        token: Option<&str>,
        collection: ObjectId,
        object: ObjectId,
    ) -> Result<(MediaObject, DescribeView), DescribeWithTokenFailed> {
        let Some(token) = token else {
            return Ok(self.describe(None, collection, object)?);
        };
        let digest = TokenKind::Access
            .digest_presented(token)
            .ok_or(BearerError::Unknown)?;
        let mut facts = self
            .store
            .read_facts(Reader::Bearer(&digest), collection, object)
            .map_err(DescribeFailed::Store)?;
        let caller = self.bearer_caller(facts.bearer.take())?.user.as_caller();
        Ok(decide_describe(facts, Some(&caller), collection, object)?)
    }

    /// Changes an object (describe POST, info POST).
    #[tracing::instrument(skip(self, patch), fields(user = %caller.user()))]
    pub fn update_object(
        &self,
        caller: &Caller,
        collection: ObjectId,
        object: ObjectId,
        patch: ObjectPatch,
    ) -> Result<MediaObject, UpdateObjectFailed> {
        if self.live_object(collection)?.is_none() || !self.reachable(collection, object)? {
            return Err(UpdateObjectFailed::NotFound);
        }
        self.require(caller, collection, Action::Write)
            .map_err(RequireError::into_update)?;
        self.store
            .update_object(object, patch, self.clock.now())
            .map_err(|e| match e {
                UpdateObjectError::NotFound => UpdateObjectFailed::NotFound,
                UpdateObjectError::Rule(r) => UpdateObjectFailed::Rule(r),
                UpdateObjectError::Store(s) => UpdateObjectFailed::Store(s),
            })
    }

    /// Whether the caller can see `object` through some collection (or, for a catalog, itself).
    fn can_view_object(&self, caller: &Caller, object: &MediaObject) -> Result<bool, StoreError> {
        if caller.is_org_admin() {
            return Ok(true);
        }
        if object.object_type().is_collection()
            && self.effective_level(caller, object.id())? >= PermissionLevel::View
        {
            return Ok(true);
        }
        for c in self.store.collections_of(object.id())? {
            if self.effective_level(caller, c)? >= PermissionLevel::View {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Adds an existing object to a collection (catalog PUT/POST); idempotent.
    #[tracing::instrument(skip(self), fields(user = %caller.user()))]
    pub fn add_member(
        &self,
        caller: &Caller,
        collection: ObjectId,
        member: ObjectId,
    ) -> Result<AddOutcome, AddMemberFailed> {
        let target = self
            .live_object(collection)?
            .ok_or(AddMemberFailed::CollectionNotFound)?;
        self.require(caller, collection, Action::Write)
            .map_err(RequireError::into_add)?;
        if !target.object_type().is_collection() {
            return Err(AddMemberFailed::Rule(MembershipError::NotACollection));
        }
        let obj = self
            .live_object(member)?
            .ok_or(AddMemberFailed::MemberNotFound)?;
        if !self.can_view_object(caller, &obj)? {
            return Err(AddMemberFailed::NoAccessToMember);
        }
        self.store
            .add_member(collection, member, self.clock.now())
            .map_err(|e| match e {
                AddMemberError::CollectionNotFound => AddMemberFailed::CollectionNotFound,
                AddMemberError::MemberNotFound => AddMemberFailed::MemberNotFound,
                AddMemberError::Rule(r) => AddMemberFailed::Rule(r),
                AddMemberError::Store(s) => AddMemberFailed::Store(s),
            })
    }

    /// Removes an object from a collection (catalog DELETE); the last membership soft-deletes it.
    #[tracing::instrument(skip(self), fields(user = %caller.user()))]
    pub fn remove_member(
        &self,
        caller: &Caller,
        collection: ObjectId,
        member: ObjectId,
    ) -> Result<AfterRemoval, MembershipChangeFailed> {
        if self.live_object(collection)?.is_none() {
            return Err(MembershipChangeFailed::NotFound);
        }
        self.require(caller, collection, Action::Write)
            .map_err(RequireError::into_membership)?;
        self.store
            .remove_member(collection, member, self.clock.now())
            .map_err(|e| match e {
                RemoveMemberError::NotAMember => MembershipChangeFailed::NotFound,
                RemoveMemberError::Store(s) => MembershipChangeFailed::Store(s),
            })
    }

    /// Lists a collection's members (catalog GET), optionally only those changed since `since`,
    /// optionally one page of them (all when `page` is `None`).
    pub fn list_catalog(
        &self,
        caller: &Caller,
        collection: ObjectId,
        since: Option<Since>,
        page: Option<PageRequest>,
    ) -> Result<CatalogPage, MembershipChangeFailed> {
        let mut answer = CatalogPage::empty();
        self.list_catalog_into(caller, collection, since, page, &mut answer)?;
        Ok(answer)
    }

    /// [`list_catalog`](Self::list_catalog) into `sink`, each member as it is read. Nothing
    /// reaches the sink when the listing is refused.
    pub fn list_catalog_into(
        &self,
        caller: &Caller,
        collection: ObjectId,
        since: Option<Since>,
        page: Option<PageRequest>,
        sink: &mut dyn CatalogSink,
    ) -> Result<(), MembershipChangeFailed> {
        let ts = self.clock.now();
        let mut facts =
            self.store
                .read_facts(Reader::User(caller.user()), collection, collection)?;
        let target = reached_object(&mut facts, collection, collection)
            .ok_or(MembershipChangeFailed::NotFound)?;
        let level = facts.access.effective_level(caller, collection);
        authorize(level, Action::Read)?;
        if !target.object_type().is_collection() {
            return Err(MembershipChangeFailed::NotACollection);
        }
        sink.start(ts, level);
        self.members_into(collection, since, page, sink)?;
        Ok(())
    }

    /// Hands the listed members of `collection` to `sink`; for a page, asks the store for
    /// one member more than the page holds, which only tells whether a next page exists.
    pub(super) fn members_into(
        &self,
        collection: ObjectId,
        since: Option<Since>,
        page: Option<PageRequest>,
        sink: &mut dyn CatalogSink,
    ) -> Result<(), StoreError> {
        let limit = page.map_or(usize::MAX, |p| p.size().get());
        let mut given = 0_usize;
        let mut last = None;
        let mut more = false;
        self.store
            .each_member(collection, since, page, &mut |item| {
                if given < limit {
                    given += 1;
                    last = Some(PageCursor::at(item.object.modified(), item.object.id()));
                    sink.member(item);
                } else {
                    more = true;
                }
            })?;
        if let (true, Some(cursor)) = (more, last) {
            sink.next(cursor);
        }
        Ok(())
    }

    fn permission_target(
        &self,
        caller: &Caller,
        collection: ObjectId,
    ) -> Result<(), PermissionFailed> {
        if self.live_object(collection)?.is_none() {
            return Err(PermissionFailed::CollectionNotFound);
        }
        self.require(caller, collection, Action::Write)
            .map_err(|e| match e {
                RequireError::Forbidden(f) => PermissionFailed::Forbidden(f),
                RequireError::Store(s) => PermissionFailed::Store(s),
            })?;
        Ok(())
    }

    /// Sets a user's level on a collection (permission PUT/POST).
    #[tracing::instrument(skip(self), fields(user = %caller.user()))]
    pub fn set_permission(
        &self,
        caller: &Caller,
        collection: ObjectId,
        target: UserId,
        level: PermissionLevel,
    ) -> Result<(), PermissionFailed> {
        self.permission_target(caller, collection)?;
        self.store
            .set_permission(collection, target, level, self.clock.now())?;
        Ok(())
    }

    /// Removes a user's entry from a collection (permission DELETE).
    #[tracing::instrument(skip(self), fields(user = %caller.user()))]
    pub fn remove_permission(
        &self,
        caller: &Caller,
        collection: ObjectId,
        target: UserId,
    ) -> Result<(), PermissionFailed> {
        self.permission_target(caller, collection)?;
        self.store.remove_permission(collection, target)?;
        Ok(())
    }

    /// The explicit entries of a collection (permission GET).
    pub fn permission_entries(
        &self,
        caller: &Caller,
        collection: ObjectId,
    ) -> Result<Vec<PermissionEntry>, PermissionFailed> {
        self.permission_target(caller, collection)?;
        Ok(self.store.permission_entries(collection)?)
    }
}

impl Services {
    /// Brings back an object soft-deleted less than 30 days ago (`medialib restore`, an
    /// operator command: no caller, no permission check). It goes back into `into`, or when
    /// `None` into the collection whose removal deleted it.
    #[tracing::instrument(skip(self))]
    pub fn restore_object(
        &self,
        object: ObjectId,
        into: Option<ObjectId>,
    ) -> Result<RestoredObject, RestoreObjectError> {
        self.store.restore_object(object, into, self.clock.now())
    }
}

/// Decides describe GET on the facts read for `caller` (`None`: anonymous): the object must
/// be reachable through a live collection (a direct member, or the collection itself) and
/// live, and the caller's effective level on the collection picks the record.
fn decide_describe(
    mut facts: ReadFacts,
    caller: Option<&Caller>,
    collection: ObjectId,
    object: ObjectId,
) -> Result<(MediaObject, DescribeView), DescribeFailed> {
    let obj = reached_object(&mut facts, collection, object).ok_or(DescribeFailed::NotFound)?;
    let level = caller.map(|c| facts.access.effective_level(c, collection));
    let view = describe_view(level, obj.is_public())?;
    Ok((obj, view))
}

/// Takes the object out of `facts` if it is reached through a live collection (a direct
/// member, or the collection itself) and is live itself.
pub(super) fn reached_object(
    facts: &mut ReadFacts,
    collection: ObjectId,
    object: ObjectId,
) -> Option<MediaObject> {
    let reachable = collection == object || facts.member;
    let live = facts.collection_live;
    facts
        .object
        .take()
        .filter(|o| live && reachable && o.lifecycle() == Lifecycle::Live)
}

/// A failed level check, before it is folded into the operation's own error.
enum RequireError {
    Forbidden(Forbidden),
    Store(StoreError),
}

impl From<Forbidden> for RequireError {
    fn from(f: Forbidden) -> Self {
        Self::Forbidden(f)
    }
}

impl From<StoreError> for RequireError {
    fn from(s: StoreError) -> Self {
        Self::Store(s)
    }
}

macro_rules! fold_require {
    ($name:ident, $target:ident) => {
        fn $name(self) -> $target {
            match self {
                RequireError::Forbidden(f) => $target::Forbidden(f),
                RequireError::Store(s) => $target::Store(s),
            }
        }
    };
}

impl RequireError {
    fold_require!(into_create, CreateObjectFailed);
    fold_require!(into_update, UpdateObjectFailed);
    fold_require!(into_add, AddMemberFailed);
    fold_require!(into_membership, MembershipChangeFailed);
}

impl CreateObjectFailed {
    fn from_repo(e: CreateObjectError) -> Self {
        match e {
            CreateObjectError::CollectionNotFound => Self::CollectionNotFound,
            CreateObjectError::NotACollection => Self::NotACollection,
            CreateObjectError::Store(s) => Self::Store(s),
        }
    }
}
