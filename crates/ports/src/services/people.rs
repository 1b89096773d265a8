//! People use cases: user records read and written through a collection (user GET/POST),
//! permission grants that may name a user by uniqueId (permission PUT/POST/DELETE/GET),
//! the info record with its owner (info GET), and the libraries a caller may contribute
//! an object to (contribute GET).

use medialib_domain::authz::{AdminReach, admin_reach};
use medialib_domain::permission::level_when_added;
use medialib_domain::projection::{UserFieldVisibility, user_fields};
use medialib_domain::{
    Action, Caller, DescribeRefused, DescribeView, IdOrZero, LastAdmin, MediaObject, ObjectId,
    PermissionLevel, PersonName, UniqueId, User, UserId, UserRelation,
};

use super::{DescribeFailed, PeopleServices};
use crate::error::StoreError;
use crate::failures::failures;
use crate::repos::{CreateUserError, PermissionChangeError, PermissionEntry};

/// A user as read through a collection, with the fields the caller may see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserView {
    /// The user.
    pub user: User,
    /// Which of the user's fields the caller may see (spec §2.3).
    pub visibility: UserFieldVisibility,
}

failures! {
    /// Reading a user through a collection failed.
    pub enum ReadUserFailed {
        CollectionNotFound,
        NotACollection,
        /// The caller lacks `view` on the collection, or the user holds no entry there
        /// (and is not the caller): both answer alike (DECISIONS.md §3).
        #[error("user not found in this collection")]
        NotFound,
        Store(StoreError),
    }
}

/// A change of a user's names (user POST); absent fields stay as they are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserPatch {
    /// New first name.
    pub first_name: Option<PersonName>,
    /// New last name.
    pub last_name: Option<PersonName>,
    /// The uniqueId the caller names; it must equal the stored one (it cannot change).
    pub unique_id: Option<UniqueId>,
}

failures! {
    /// Updating a user failed.
    pub enum UpdateUserFailed {
        CollectionNotFound,
        NotACollection,
        Refused(Refusal),
        /// No such user, or the user holds no entry on the collection.
        #[error("user not found in this collection")]
        UserNotFound,
        /// The request names another uniqueId: it is fixed (it is the SSO identity).
        #[error("uniqueId is the user's SSO identity and cannot be changed")]
        UniqueIdFixed,
        Store(StoreError),
    }
}

/// A user to add to a collection (user POST with `user_id` 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddUserInput {
    /// SSO uniqueId: an existing user is reused, an unknown one provisioned.
    pub unique_id: UniqueId,
    /// First name to set, if given.
    pub first_name: Option<PersonName>,
    /// Last name to set, if given.
    pub last_name: Option<PersonName>,
}

failures! {
    /// Adding a user to a collection failed.
    pub enum AddUserFailed {
        CollectionNotFound,
        NotACollection,
        Refused(Refusal),
        Store(StoreError),
    }
}

impl From<CreateUserError> for AddUserFailed {
    fn from(e: CreateUserError) -> Self {
        match e {
            CreateUserError::Store(s) => Self::Store(s),
            // Provisioning retries a lost race once; losing twice is a store inconsistency.
            CreateUserError::UniqueIdTaken => {
                Self::Store(StoreError::Unexpected(format!("provisioning: {e}")))
            }
        }
    }
}

impl From<PermissionChangeError> for AddUserFailed {
    fn from(e: PermissionChangeError) -> Self {
        match e {
            PermissionChangeError::CollectionNotFound => Self::CollectionNotFound,
            PermissionChangeError::NotACollection => Self::NotACollection,
            PermissionChangeError::Store(s) => Self::Store(s),
            PermissionChangeError::UserNotFound
            | PermissionChangeError::NoEntry
            | PermissionChangeError::LastAdmin(_) => Self::Store(inconsistent("add user", &e)),
        }
    }
}

/// Whom a permission call is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grantee {
    /// A user by id (the path names one).
    Id(UserId),
    /// A user by SSO uniqueId (path `0`).
    UniqueId(UniqueId),
}

/// An object with its owner, for the info record (spec §2.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    /// The object.
    pub object: MediaObject,
    /// Its owner; `None` only if the owner's row is gone.
    pub owner: Option<User>,
}

failures! {
    /// Reading an info record failed.
    pub enum InfoFailed {
        NotFound,
        /// The caller lacks `view` on the collection.
        #[error("the caller has no access to this object")]
        Forbidden,
        Store(StoreError),
    }
}

/// A library the caller administers, for the contribute list (spec §2.10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContributeLibrary {
    /// The library (a live catalog).
    pub library: MediaObject,
    /// Whether the object is a direct member of it.
    pub member: bool,
}

failures! {
    /// Listing the contribute libraries failed.
    pub enum ContributeFailed {
        /// No such object.
        #[error("object not found")]
        NotFound,
        Store(StoreError),
    }
}

failures! {
    /// Why a collection cannot be the target of a people call, before it is folded into
    /// the operation's own error.
    enum TargetError {
        CollectionNotFound,
        NotACollection,
        Refused(Refusal),
        Store(StoreError),
    }


    /// Reading a collection's permission entries failed (permission GET).
    pub enum ListPermissionsFailed {
        CollectionNotFound,
        NotACollection,
        Refused(Refusal),
        Store(StoreError),
    }

    /// Granting a level on a collection failed (permission PUT/POST).
    pub enum GrantPermissionFailed {
        CollectionNotFound,
        NotACollection,
        Refused(Refusal),
        /// No user has the id.
        #[error("user not found")]
        UserNotFound,
        /// It would demote the last admin.
        #[error(transparent)]
        LastAdmin(#[from] LastAdmin),
        Store(StoreError),
    }

    /// Removing a user's entry from a collection failed (permission DELETE).
    pub enum RevokePermissionFailed {
        CollectionNotFound,
        NotACollection,
        Refused(Refusal),
        /// No user has the id or uniqueId.
        #[error("user not found")]
        UserNotFound,
        /// The user holds no entry on the collection.
        #[error("the user holds no entry on this collection")]
        NoEntry,
        /// It would remove the last admin.
        #[error(transparent)]
        LastAdmin(#[from] LastAdmin),
        Store(StoreError),
    }
}

/// Folds the target check into each permission operation's own error.
macro_rules! target_failure {
    ($($failed:ident),*) => {$(
        impl From<TargetError> for $failed {
            fn from(e: TargetError) -> Self {
                match e {
                    TargetError::CollectionNotFound => Self::CollectionNotFound,
                    TargetError::NotACollection => Self::NotACollection,
                    TargetError::Refused(r) => Self::Refused(r),
                    TargetError::Store(s) => Self::Store(s),
                }
            }
        }
    )*};
}
target_failure!(
    UpdateUserFailed,
    AddUserFailed,
    ListPermissionsFailed,
    GrantPermissionFailed,
    RevokePermissionFailed
);

/// A refusal of the repository that the operation cannot meet (the gate or the target
/// check ruled it out): the store contradicts itself.
fn inconsistent(op: &str, e: &PermissionChangeError) -> StoreError {
    StoreError::Unexpected(format!("{op}: {e}"))
}

impl From<PermissionChangeError> for GrantPermissionFailed {
    fn from(e: PermissionChangeError) -> Self {
        match e {
            PermissionChangeError::CollectionNotFound => Self::CollectionNotFound,
            PermissionChangeError::NotACollection => Self::NotACollection,
            PermissionChangeError::UserNotFound => Self::UserNotFound,
            PermissionChangeError::LastAdmin(l) => Self::LastAdmin(l),
            PermissionChangeError::Store(s) => Self::Store(s),
            PermissionChangeError::NoEntry => Self::Store(inconsistent("grant", &e)),
        }
    }
}

impl From<PermissionChangeError> for RevokePermissionFailed {
    fn from(e: PermissionChangeError) -> Self {
        match e {
            PermissionChangeError::CollectionNotFound => Self::CollectionNotFound,
            PermissionChangeError::NotACollection => Self::NotACollection,
            PermissionChangeError::UserNotFound => Self::UserNotFound,
            PermissionChangeError::NoEntry => Self::NoEntry,
            PermissionChangeError::LastAdmin(l) => Self::LastAdmin(l),
            PermissionChangeError::Store(s) => Self::Store(s),
        }
    }
}

impl PeopleServices {
    /// Asks the gate for `action` on the live catalog `collection`; the permit carries the
    /// caller's effective level there.
    fn on_collection(
        &self,
        caller: &Caller,
        collection: ObjectId,
        action: Action,
    ) -> Result<medialib_domain::Permit, TargetError> {
        let target = self
            .media
            .object(collection)?
            .ok_or(TargetError::CollectionNotFound)?;
        if !target.object_type().is_collection() {
            return Err(TargetError::NotACollection);
        }
        Ok(self.objects.gate(caller, action)??)
    }

    /// Whether `user` holds an explicit entry (any level) on `collection`.
    fn holds_entry(&self, collection: ObjectId, user: UserId) -> Result<bool, StoreError> {
        Ok(self.media.explicit_level(collection, user)?.is_some())
    }

    /// Reads a user through a collection (user GET); `0` is the caller.
    ///
    /// The caller needs `view` on the collection, and the user must be the caller or hold
    /// an explicit entry there; otherwise [`ReadUserFailed::NotFound`]. Identifiers are
    /// visible to the user itself and to admins of the collection.
    pub fn read_user(
        &self,
        caller: &Caller,
        collection: ObjectId,
        target: IdOrZero<UserId>,
    ) -> Result<UserView, ReadUserFailed> {
        let level = self
            .on_collection(caller, collection, Action::Read { collection })
            .map_err(|e| match e {
                TargetError::CollectionNotFound => ReadUserFailed::CollectionNotFound,
                TargetError::NotACollection => ReadUserFailed::NotACollection,
                // Without `view`, the user is not found (DECISIONS.md §3).
                TargetError::Refused(_) => ReadUserFailed::NotFound,
                TargetError::Store(s) => ReadUserFailed::Store(s),
            })?
            .level();
        let target = match target {
            IdOrZero::Zero => caller.user(),
            IdOrZero::Id(id) => id,
        };
        let is_self = target == caller.user();
        if !is_self && !self.holds_entry(collection, target)? {
            return Err(ReadUserFailed::NotFound);
        }
        let user = self.users.user(target)?.ok_or(ReadUserFailed::NotFound)?;
        let relation = UserRelation::of(is_self, level);
        Ok(UserView {
            user,
            visibility: user_fields(relation),
        })
    }

    /// Changes a user's names through a collection (user POST with a user id).
    ///
    /// The user itself needs `view` on the collection; anyone else needs `admin` there and
    /// the user must hold an entry on it. Names are organization-wide, so the gate lets only
    /// the user itself and organization admins change them: anyone else naming different
    /// names is refused and nothing changes (naming the same names, or none, changes
    /// nothing and is allowed).
    #[tracing::instrument(skip(self, patch), fields(user = %caller.user()))]
    pub fn update_user(
        &self,
        caller: &Caller,
        collection: ObjectId,
        target: UserId,
        patch: UserPatch,
    ) -> Result<User, UpdateUserFailed> {
        let is_self = target == caller.user();
        let addressing = if is_self {
            Action::Read { collection }
        } else {
            Action::Grant { collection }
        };
        self.on_collection(caller, collection, addressing)?;
        if !is_self && !self.holds_entry(collection, target)? {
            return Err(UpdateUserFailed::UserNotFound);
        }
        let user = self
            .users
            .user(target)?
            .ok_or(UpdateUserFailed::UserNotFound)?;
        if patch
            .unique_id
            .as_ref()
            .is_some_and(|u| *u != user.unique_id)
        {
            return Err(UpdateUserFailed::UniqueIdFixed);
        }
        if is_self || user.would_rename(patch.first_name.as_ref(), patch.last_name.as_ref()) {
            self.objects
                .gate(caller, Action::Rename { user: target })??;
        }
        self.apply_names(user, patch.first_name, patch.last_name)
            .map_err(|e| match e {
                NamesError::Gone => UpdateUserFailed::UserNotFound,
                NamesError::Store(s) => UpdateUserFailed::Store(s),
            })
    }

    /// Sets the names that are given; nothing is written when none is.
    fn apply_names(
        &self,
        user: User,
        first: Option<PersonName>,
        last: Option<PersonName>,
    ) -> Result<User, NamesError> {
        if first.is_none() && last.is_none() {
            return Ok(user);
        }
        let first = first.unwrap_or(user.first_name);
        let last = last.unwrap_or(user.last_name);
        if !self
            .users
            .update_user_names(user.id, &first, &last, self.world.clock.now())?
        {
            return Err(NamesError::Gone);
        }
        Ok(User {
            first_name: first,
            last_name: last,
            ..user
        })
    }

    /// Adds a user to a collection by uniqueId (user POST with `user_id` 0): admin only.
    ///
    /// An unknown uniqueId is provisioned with the given names. An existing user keeps its
    /// names unless the gate allows the caller to rename it (itself, or an organization
    /// admin): naming different names for someone else is refused before anything is
    /// written. The user gets `view` unless it already holds `view` or `admin` there (an
    /// admin is never demoted).
    #[tracing::instrument(skip(self, input), fields(user = %caller.user()))]
    pub fn add_user(
        &self,
        caller: &Caller,
        collection: ObjectId,
        input: AddUserInput,
    ) -> Result<User, AddUserFailed> {
        self.on_collection(caller, collection, Action::Grant { collection })?;
        let names = (input.first_name.as_ref(), input.last_name.as_ref());
        if let Some(existing) = self.users.user_by_unique_id(&input.unique_id)?
            && existing.would_rename(names.0, names.1)
        {
            self.objects
                .gate(caller, Action::Rename { user: existing.id })??;
        }
        let user = self.provision_user(&input.unique_id)?;
        let user = self
            .apply_names(user, input.first_name, input.last_name)
            .map_err(|e| match e {
                NamesError::Gone => AddUserFailed::Store(StoreError::Unexpected(
                    "a provisioned user vanished".into(),
                )),
                NamesError::Store(s) => AddUserFailed::Store(s),
            })?;
        let current = self.media.explicit_level(collection, user.id)?;
        if let Some(level) = level_when_added(current) {
            self.media
                .set_permission(collection, user.id, level, self.world.clock.now())?;
        }
        Ok(user)
    }

    /// Checks that the caller administers the live catalog `collection`.
    fn permission_admin(
        &self,
        caller: &Caller,
        collection: ObjectId,
        action: Action,
    ) -> Result<(), TargetError> {
        self.on_collection(caller, collection, action).map(drop)
    }

    /// The explicit entries of a collection, all or only `only`'s (permission GET): admin only.
    pub fn list_permissions(
        &self,
        caller: &Caller,
        collection: ObjectId,
        only: Option<UserId>,
    ) -> Result<Vec<PermissionEntry>, ListPermissionsFailed> {
        self.permission_admin(caller, collection, Action::ReadPermissions { collection })?;
        match only {
            None => Ok(self.media.permission_entries(collection)?),
            Some(id) => {
                let Some(level) = self.media.explicit_level(collection, id)? else {
                    return Ok(Vec::new());
                };
                Ok(self
                    .users
                    .user(id)?
                    .map(|user| PermissionEntry { user, level })
                    .into_iter()
                    .collect())
            }
        }
    }

    /// Sets a user's level on a collection (permission PUT/POST): admin only. A uniqueId
    /// no user has yet provisions that user, so access can be granted before the first
    /// sign-in; provisioning happens only after the caller's level is checked.
    #[tracing::instrument(skip(self), fields(user = %caller.user()))]
    pub fn grant_permission(
        &self,
        caller: &Caller,
        collection: ObjectId,
        grantee: Grantee,
        level: PermissionLevel,
    ) -> Result<UserId, GrantPermissionFailed> {
        self.permission_admin(caller, collection, Action::Grant { collection })?;
        let target = match grantee {
            Grantee::Id(id) => id,
            Grantee::UniqueId(u) => {
                self.provision_user(&u)
                    .map_err(|e| match e {
                        CreateUserError::Store(s) => GrantPermissionFailed::Store(s),
                        CreateUserError::UniqueIdTaken => GrantPermissionFailed::Store(
                            StoreError::Unexpected("provisioning lost a race twice".into()),
                        ),
                    })?
                    .id
            }
        };
        self.media
            .set_permission(collection, target, level, self.world.clock.now())?;
        Ok(target)
    }

    /// Removes a user's entry from a collection (permission DELETE): admin only.
    /// An unknown user (by id or uniqueId) or a missing entry is
    /// [`PermissionChangeError::UserNotFound`] / [`PermissionChangeError::NoEntry`].
    #[tracing::instrument(skip(self), fields(user = %caller.user()))]
    pub fn revoke_permission(
        &self,
        caller: &Caller,
        collection: ObjectId,
        grantee: Grantee,
    ) -> Result<(), RevokePermissionFailed> {
        self.permission_admin(caller, collection, Action::Grant { collection })?;
        let target = match grantee {
            Grantee::Id(id) => id,
            Grantee::UniqueId(u) => {
                self.users
                    .user_by_unique_id(&u)?
                    .ok_or(RevokePermissionFailed::UserNotFound)?
                    .id
            }
        };
        self.media.remove_permission(collection, target)?;
        Ok(())
    }

    /// Reads an object and its owner through a collection (info GET): needs `view`.
    pub fn object_info(
        &self,
        caller: &Caller,
        collection: ObjectId,
        object: ObjectId,
    ) -> Result<ObjectInfo, InfoFailed> {
        let (object, view) = self
            .objects
            .describe(Some(caller), collection, object)
            .map_err(|e| match e {
                DescribeFailed::NotFound => InfoFailed::NotFound,
                DescribeFailed::Refused(
                    DescribeRefused::Forbidden | DescribeRefused::AuthenticationRequired,
                ) => InfoFailed::Forbidden,
                DescribeFailed::Store(s) => InfoFailed::Store(s),
            })?;
        if view != DescribeView::Full {
            // The limited record of a public object is all a caller without `view` gets.
            return Err(InfoFailed::Forbidden);
        }
        let owner = self.users.user(object.owner())?;
        Ok(ObjectInfo { object, owner })
    }

    /// The libraries the caller administers, for contributing `object` (contribute GET).
    ///
    /// `object` must be one the caller can see (the gate's `See`): an object it cannot see
    /// is refused exactly as an unknown one. Candidates are the live catalogs on which the
    /// caller holds an explicit entry (any level) and, for organization admins, every live
    /// catalog; kept when the gate lets the caller administer it; ordered by title (Unicode
    /// code points), then uuid.
    pub fn contribute_libraries(
        &self,
        caller: &Caller,
        object: ObjectId,
    ) -> Result<Vec<ContributeLibrary>, ContributeFailed> {
        let Some(found) = self.media.object(object)? else {
            return Err(ContributeFailed::NotFound);
        };
        let see = Action::See {
            object,
            public: found.is_public(),
        };
        if self.objects.gate(caller, see)?.is_err() {
            return Err(ContributeFailed::NotFound);
        }
        let candidates = match admin_reach(caller) {
            AdminReach::Everywhere => self.media.all_catalogs()?,
            AdminReach::ThroughEntries => self.media.catalogs_with_entries_for(caller.user())?,
        };
        let parents = self.media.collections_of(object)?;
        let mut out = Vec::new();
        for library in candidates {
            let action = Action::Administer {
                collection: library.id(),
            };
            if self.objects.permits(caller, action)? {
                let member = parents.contains(&library.id());
                out.push(ContributeLibrary { library, member });
            }
        }
        out.sort_by(|a, b| MediaObject::by_title(&a.library, &b.library));
        Ok(out)
    }
}

/// Writing names failed.
enum NamesError {
    /// The user row is gone.
    Gone,
    Store(StoreError),
}

impl From<StoreError> for NamesError {
    fn from(s: StoreError) -> Self {
        Self::Store(s)
    }
}
