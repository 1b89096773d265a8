//! Media use cases: objects, memberships, permissions, catalog listing.

use medialib_domain::permission::authorize;
use medialib_domain::projection::describe_view;
use medialib_domain::{
    Action, AfterRemoval, Caller, DescribeRefused, DescribeView, Forbidden, MediaObject,
    MembershipError, NewObject, ObjectId, ObjectPatch, ObjectType, PermissionLevel, ShortCode,
    Since, Timestamp, UpdateError, UserId,
};

use super::Services;
use crate::error::StoreError;
use crate::repos::{
    AddMemberError, AddOutcome, CatalogItem, CreateObjectError, PermissionChangeError,
    PermissionEntry, RemoveMemberError, RestoreObjectError, RestoredObject, UpdateObjectError,
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
    pub fn describe(
        &self,
        caller: Option<&Caller>,
        collection: ObjectId,
        object: ObjectId,
    ) -> Result<(MediaObject, DescribeView), DescribeFailed> {
        if self.live_object(collection)?.is_none() || !self.reachable(collection, object)? {
            return Err(DescribeFailed::NotFound);
        }
        let obj = self.live_object(object)?.ok_or(DescribeFailed::NotFound)?;
        let level = match caller {
            Some(c) => Some(self.effective_level(c, collection)?),
            None => None,
        };
        let view = describe_view(level, obj.is_public())?;
        Ok((obj, view))
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

    /// Lists a collection's members (catalog GET), optionally only those changed since `since`.
    pub fn list_catalog(
        &self,
        caller: &Caller,
        collection: ObjectId,
        since: Option<Since>,
    ) -> Result<CatalogPage, MembershipChangeFailed> {
        let ts = self.clock.now();
        let target = self
            .live_object(collection)?
            .ok_or(MembershipChangeFailed::NotFound)?;
        let level = self
            .require(caller, collection, Action::Read)
            .map_err(RequireError::into_membership)?;
        if !target.object_type().is_collection() {
            return Err(MembershipChangeFailed::NotACollection);
        }
        let items = self.store.list_members(collection, since)?;
        Ok(CatalogPage { ts, level, items })
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
