//! Media use cases: objects, memberships, permissions, catalog listing.

use medialib_domain::authz;
use medialib_domain::media::derived::DerivedSet;
use medialib_domain::{
    AccessView, Action, AfterRemoval, Caller, DescribeRefused, DescribeView, Lifecycle,
    MediaObject, MembershipError, NewObject, ObjectId, ObjectPatch, ObjectType, PageCursor,
    PageRequest, PermissionLevel, Permit, Refusal, ShortCode, Since, Timestamp, TokenKind,
    UpdateError,
};

use super::{BearerError, MediaServices};
use crate::error::StoreError;
use crate::failures::failures;
use crate::repos::{
    AddMemberError, AddOutcome, CatalogItem, CreateObjectError, Members, ReadFacts, Reader,
    RemoveMemberError, RestoreObjectError, RestoredObject, UpdateObjectError,
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

failures! {
    /// Creating an object failed.
    pub enum CreateObjectFailed {
        /// A top-level object must be a catalog.
        #[error("a new top-level library must have type catalog")]
        LibraryMustBeCatalog,
        CollectionNotFound,
        NotACollection,
        Refused(Refusal),
        Store(StoreError),
    }

    /// Reading an object failed.
    pub enum DescribeFailed {
        NotFound,
        /// The caller may not see it.
        #[error(transparent)]
        Refused(#[from] DescribeRefused),
        Store(StoreError),
    }
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

failures! {
    /// Updating an object failed.
    pub enum UpdateObjectFailed {
        NotFound,
        Refused(Refusal),
        /// A domain rule refused the change (type change: 409).
        #[error(transparent)]
        Rule(#[from] UpdateError),
        Store(StoreError),
    }

    /// Adding a member failed.
    pub enum AddMemberFailed {
        CollectionNotFound,
        /// No such object.
        #[error("object not found")]
        MemberNotFound,
        Refused(Refusal),
        /// Not a collection, or a cycle (409).
        #[error(transparent)]
        Rule(#[from] MembershipError),
        Store(StoreError),
    }

    /// Removing a member or listing a catalog failed.
    pub enum MembershipChangeFailed {
        NotFound,
        NotACollection,
        Refused(Refusal),
        Store(StoreError),
    }
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
/// by member instead of being collected first ([`MediaServices::list_catalog_into`]).
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
    /// The page a listing written to a [`CatalogSink`] makes: `list` is a `…_into` listing
    /// (e.g. [`MediaServices::list_sub_catalog_into`]) given the sink to write to.
    ///
    /// # Errors
    /// Those of `list`.
    pub fn collect<E>(list: impl FnOnce(&mut dyn CatalogSink) -> Result<(), E>) -> Result<Self, E> {
        let mut answer = Self {
            ts: Timestamp::from_epoch_seconds(0),
            level: PermissionLevel::None,
            items: Vec::new(),
            next: None,
        };
        list(&mut answer)?;
        Ok(answer)
    }
}

impl MediaServices {
    /// The facts the gate needs for `action`: the caller's entries and the graph above
    /// every object the action names (nothing to read for an action that names none).
    pub(super) fn access_for(
        &self,
        caller: &Caller,
        action: Action,
    ) -> Result<AccessView, StoreError> {
        let subjects = action.subjects();
        if subjects.is_empty() {
            return Ok(AccessView::default());
        }
        self.media.access_view(caller.user(), &subjects)
    }

    /// Asks the domain's authorization gate whether `caller` may do `action`.
    pub(super) fn gate(
        &self,
        caller: &Caller,
        action: Action,
    ) -> Result<Result<Permit, Refusal>, StoreError> {
        let access = self.access_for(caller, action)?;
        Ok(authz::decide(caller, action, &access))
    }

    /// The caller's effective level on `object` as the gate computes it (a library: its
    /// own; any other object: the best over the collections holding it).
    pub fn effective_level(
        &self,
        caller: &Caller,
        object: ObjectId,
    ) -> Result<PermissionLevel, StoreError> {
        let access = self.media.access_view(caller.user(), &[object])?;
        Ok(authz::level_on(caller, &access, object))
    }

    /// Whether `caller` may do `action` (OPTIONS' `proceed`): the same gate every use case
    /// asks, on the same facts.
    pub fn permits(&self, caller: &Caller, action: Action) -> Result<bool, StoreError> {
        Ok(self.gate(caller, action)?.is_ok())
    }

    fn require(&self, caller: &Caller, action: Action) -> Result<Permit, RequireError> {
        Ok(self.gate(caller, action)??)
    }

    /// A live collection, or `None` when it does not exist or is not a catalog.
    fn live_object(&self, id: ObjectId) -> Result<Option<MediaObject>, StoreError> {
        self.media.object(id)
    }

    /// Whether `object` can be reached through `collection` (a member, or the collection itself).
    pub(super) fn reachable(
        &self,
        collection: ObjectId,
        object: ObjectId,
    ) -> Result<bool, StoreError> {
        Ok(collection == object || self.media.is_member(collection, object)?)
    }

    /// Creates an object (describe PUT).
    #[tracing::instrument(skip(self, new), fields(user = %caller.user()))]
    pub fn create_object(
        &self,
        caller: &Caller,
        placement: Placement,
        new: NewObject,
    ) -> Result<MediaObject, CreateObjectFailed> {
        let now = self.world.clock.now();
        let ns = self.world.namespace()?;
        let object = MediaObject::create(
            ObjectId::generate(&ns, self.world.random.bytes16()),
            new,
            caller.user(),
            ShortCode::from_random(self.world.random.bytes16()),
            now,
        );
        match placement {
            Placement::TopLevel => {
                if object.object_type() != ObjectType::Catalog {
                    return Err(CreateObjectFailed::LibraryMustBeCatalog);
                }
                self.require(caller, Action::CreateLibrary)
                    .map_err(RequireError::into_create)?;
                self.media
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
                self.require(caller, Action::CreateIn { collection })
                    .map_err(RequireError::into_create)?;
                self.media
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
        let facts = self.media.read_facts(reader, collection, object)?;
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
    ) -> Result<Described, DescribeWithTokenFailed> {
        let Some(token) = token else {
            let facts = self
                .media
                .read_facts(Reader::Anonymous, collection, object)
                .map_err(DescribeFailed::Store)?;
            return Ok(Described::decide(facts, None, collection, object)?);
        };
        let digest = TokenKind::Access
            .digest_presented(token)
            .ok_or(BearerError::Unknown)?;
        let mut facts = self
            .media
            .read_facts(Reader::Bearer(&digest), collection, object)
            .map_err(DescribeFailed::Store)?;
        let caller =
            super::oauth::bearer_caller(facts.bearer.take(), self.world.clock.now())?.caller();
        Ok(Described::decide(facts, Some(&caller), collection, object)?)
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
        self.require(caller, Action::Edit { collection })
            .map_err(RequireError::into_update)?;
        self.media
            .update_object(object, patch, self.world.clock.now())
            .map_err(|e| match e {
                UpdateObjectError::NotFound => UpdateObjectFailed::NotFound,
                UpdateObjectError::Rule(r) => UpdateObjectFailed::Rule(r),
                UpdateObjectError::Store(s) => UpdateObjectFailed::Store(s),
            })
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
        // An unknown member and one the caller cannot see are refused alike (`Hidden`).
        self.require(caller, Action::Link { collection, member })
            .map_err(RequireError::into_add)?;
        if !target.object_type().is_collection() {
            return Err(AddMemberFailed::Rule(MembershipError::NotACollection));
        }
        self.media
            .add_member(collection, member, self.world.clock.now())
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
        self.require(caller, Action::Unlink { collection })
            .map_err(RequireError::into_membership)?;
        self.media
            .remove_member(collection, member, self.world.clock.now())
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
        CatalogPage::collect(|sink| self.list_catalog_into(caller, collection, since, page, sink))
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
        let ts = self.world.clock.now();
        let mut facts =
            self.media
                .read_facts(Reader::User(caller.user()), collection, collection)?;
        let target = reached_object(&mut facts, collection, collection)
            .ok_or(MembershipChangeFailed::NotFound)?;
        let level = authz::decide(caller, Action::Read { collection }, &facts.access)?.level();
        if !target.object_type().is_collection() {
            return Err(MembershipChangeFailed::NotACollection);
        }
        sink.start(ts, level);
        let members = Members {
            collection,
            since,
            page,
        };
        self.members_into(members, sink)?;
        Ok(())
    }

    /// Hands the listed members of `collection` to `sink`; for a page, asks the store for
    /// one member more than the page holds, which only tells whether a next page exists.
    pub(super) fn members_into(
        &self,
        members: Members,
        sink: &mut dyn CatalogSink,
    ) -> Result<(), StoreError> {
        let limit = members.page.map_or(usize::MAX, |p| p.size().get());
        let mut given = 0_usize;
        let mut last = None;
        let mut more = false;
        self.media.each_member(members, &mut |item| {
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
}

impl MediaServices {
    /// Brings back an object soft-deleted less than 30 days ago (`medialib restore`, an
    /// operator command: no caller, no permission check). It goes back into `into`, or when
    /// `None` into the collection whose removal deleted it.
    #[tracing::instrument(skip(self))]
    pub fn restore_object(
        &self,
        object: ObjectId,
        into: Option<ObjectId>,
    ) -> Result<RestoredObject, RestoreObjectError> {
        self.media
            .restore_object(object, into, self.world.clock.now())
    }
}

/// A describe GET decided: the object, the record its reader sees, and the files derived from
/// its media (the record's stills come from them), all from the one read.
#[derive(Debug, Clone)]
pub struct Described {
    /// The object.
    pub object: MediaObject,
    /// The complete or the limited record.
    pub view: DescribeView,
    /// The files processing derived from its media; `None` when it has none.
    pub derived: Option<DerivedSet>,
}

impl Described {
    fn decide(
        mut facts: ReadFacts,
        caller: Option<&Caller>,
        collection: ObjectId,
        object: ObjectId,
    ) -> Result<Self, DescribeFailed> {
        let derived = facts.derived.take();
        let (object, view) = decide_describe(facts, caller, collection, object)?;
        Ok(Self {
            object,
            view,
            derived,
        })
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
    let view = authz::decide_describe(caller, collection, obj.is_public(), &facts.access)?;
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

failures! {
    /// A refusal of the gate, before it is folded into the operation's own error.
    pub(super) enum RequireError {
        Refused(Refusal),
        Store(StoreError),
    }
}

macro_rules! fold_require {
    ($name:ident, $target:ident) => {
        fn $name(self) -> $target {
            match self {
                RequireError::Refused(r) => $target::Refused(r),
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
