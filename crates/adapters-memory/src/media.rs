//! `MediaRepository`: objects, the membership graph and permissions.

use std::cmp::Reverse;
use std::collections::BTreeSet;

use medialib_domain::object::{after_membership_removed, purge_due};
use medialib_domain::permission::check_admin_change;
use medialib_domain::{
    AccessView, AfterRemoval, Lifecycle, MediaObject, MembershipError, ObjectId, ObjectPatch,
    ObjectType, PermissionLevel, ShortCode, Since, Timestamp, UserId, check_add_member,
};
use medialib_ports::repos::{RestoreObjectError, RestoredObject};
use medialib_ports::{
    AddMemberError, AddOutcome, CatalogItem, CreateObjectError, MediaRepository, Members,
    PermissionChangeError, PermissionEntry, ReadFacts, Reader, RemoveMemberError, StoreError,
    UpdateObjectError,
};

use crate::MemoryStore;
use crate::state::{ObjectRecord, State, constraint};

/// A catalog listing's order: most recently modified first, ties by id.
fn listing_key(object: &MediaObject) -> (Reverse<Timestamp>, ObjectId) {
    (Reverse(object.modified()), object.id())
}

impl State {
    /// Refuses a new object the `objects` table would refuse: a taken id or shortcode, an
    /// owner that is no user.
    pub(crate) fn check_new_object(&self, object: &MediaObject) -> Result<(), StoreError> {
        if self.objects.contains_key(&object.id()) {
            return Err(constraint("objects.id is the primary key"));
        }
        if self
            .objects
            .values()
            .any(|r| r.object.shortcode() == object.shortcode())
        {
            return Err(constraint("objects.shortcode is unique"));
        }
        if !self.users.contains_key(&object.owner()) {
            return Err(constraint("objects.owner_id references users"));
        }
        Ok(())
    }

    /// Stores `object` as a new member of `collection`, or finds why not (and changes
    /// nothing): the one body of `create_in_collection` and `create_with_media`.
    pub(crate) fn create_member(
        &mut self,
        object: &MediaObject,
        collection: ObjectId,
    ) -> Result<(), CreateObjectError> {
        match self.live_object(collection).map(MediaObject::object_type) {
            None => return Err(CreateObjectError::CollectionNotFound),
            Some(t) if t.is_collection() => {}
            Some(_) => return Err(CreateObjectError::NotACollection),
        }
        self.check_new_object(object)?;
        self.insert_object(object);
        // Mirrors adapters-diesel media.rs: the new membership is added when the object was
        // created.
        self.link(collection, object.id(), object.created());
        Ok(())
    }

    /// Stores a new live object (checked by `check_new_object` first).
    /// Stores a new top-level library with `admin` as its admin, or finds why not.
    pub(crate) fn create_library(
        &mut self,
        library: &MediaObject,
        admin: UserId,
    ) -> Result<(), CreateObjectError> {
        self.check_new_object(library)?;
        if !self.users.contains_key(&admin) {
            return Err(constraint("permissions.user_id references users").into());
        }
        self.insert_object(library);
        self.permissions
            .entry(library.id())
            .or_default()
            .insert(admin, PermissionLevel::Admin);
        Ok(())
    }

    pub(crate) fn insert_object(&mut self, object: &MediaObject) {
        self.objects.insert(
            object.id(),
            ObjectRecord {
                object: object.clone(),
                deleted_from: None,
            },
        );
    }

    /// The members `list_members` lists: live, changed at or after `since` when given, in
    /// the listing's order, and for a page only those after its cursor, at most one more
    /// than its size.
    fn listed_members(&self, members: Members) -> Vec<CatalogItem> {
        let Members {
            collection,
            since,
            page,
        } = members;
        let since = since.map(Since::timestamp);
        let mut listed: Vec<(&MediaObject, Timestamp)> = self
            .members
            .get(&collection)
            .into_iter()
            .flatten()
            .filter_map(|(member, added)| Some((self.live_object(*member)?, *added)))
            // Changed: modified or added at or after `since`.
            .filter(|(o, added)| since.is_none_or(|s| o.modified() >= s || *added >= s))
            .collect();
        listed.sort_by_key(|(o, _)| listing_key(o));
        if let Some(page) = page {
            if let Some(after) = page.after() {
                // Keyset: strictly after the cursor in the listing's order.
                let cursor = (Reverse(after.modified()), after.id());
                listed.retain(|(o, _)| listing_key(o) > cursor);
            }
            listed.truncate(page.size().get().saturating_add(1));
        }
        listed
            .into_iter()
            .map(|(object, added_at)| CatalogItem {
                object: object.clone(),
                added_at,
            })
            .collect()
    }

    /// Sets (`Some`) or removes (`None`) an explicit entry, keeping the last admin.
    fn change_permission(
        &mut self,
        collection: ObjectId,
        user: UserId,
        new_level: Option<PermissionLevel>,
    ) -> Result<(), PermissionChangeError> {
        match self.live_object(collection).map(MediaObject::object_type) {
            None => return Err(PermissionChangeError::CollectionNotFound),
            Some(t) if t.is_collection() => {}
            Some(_) => return Err(PermissionChangeError::NotACollection),
        }
        if !self.users.contains_key(&user) {
            return Err(PermissionChangeError::UserNotFound);
        }
        // The facts `check_admin_change` decides on: the collection's explicit admins (the
        // diesel adapter's `WHERE level = 'admin'`).
        let entries = self.permissions.get(&collection);
        let admins: BTreeSet<UserId> = entries
            .into_iter()
            .flatten()
            .filter(|(_, level)| matches!(level, PermissionLevel::Admin))
            .map(|(u, _)| *u)
            .collect();
        check_admin_change(&admins, user, new_level)?;
        match new_level {
            Some(level) => {
                self.permissions
                    .entry(collection)
                    .or_default()
                    .insert(user, level);
            }
            None => {
                let Some(entries) = self.permissions.get_mut(&collection) else {
                    return Err(PermissionChangeError::NoEntry);
                };
                if entries.remove(&user).is_none() {
                    return Err(PermissionChangeError::NoEntry);
                }
                if entries.is_empty() {
                    self.permissions.remove(&collection);
                }
            }
        }
        Ok(())
    }

    /// The live catalogs among `ids`, in their order.
    fn live_catalogs(&self, ids: impl Iterator<Item = ObjectId>) -> Vec<MediaObject> {
        ids.filter_map(|id| self.live_object(id))
            .filter(|o| o.object_type() == ObjectType::Catalog)
            .cloned()
            .collect()
    }
}

impl MediaRepository for MemoryStore {
    fn read_facts(
        &self,
        reader: Reader<'_>,
        collection: ObjectId,
        object: ObjectId,
    ) -> Result<ReadFacts, StoreError> {
        let state = self.lock();
        let mut facts = ReadFacts {
            bearer: None,
            collection_live: state.live_object(collection).is_some(),
            member: state.is_member(collection, object),
            object: state.objects.get(&object).map(|r| r.object.clone()),
            access: AccessView::default(),
            derived: state.media.get(&object).and_then(|m| m.derived.clone()),
        };
        let holder = match reader {
            Reader::Anonymous => return Ok(facts),
            Reader::User(user) => Some(user),
            Reader::Bearer(digest) => {
                facts.bearer = state.bearer_record(digest);
                facts.bearer.as_ref().map(|b| b.token.user)
            }
        };
        facts.access = match holder {
            // The entries of the holder on the collection and its ancestors, every edge above.
            Some(user) => state.access_view(user, &[collection]),
            // Mirrors adapters-diesel facts.rs: for a token no one holds, the collection's
            // direct parent edges are read all the same, and no entries.
            None => AccessView::new(
                state.parents_of(collection).map(|p| (p, collection)),
                std::iter::empty(),
            ),
        };
        Ok(facts)
    }

    fn create_library(
        &self,
        library: &MediaObject,
        admin: UserId,
    ) -> Result<(), CreateObjectError> {
        self.lock().create_library(library, admin)
    }

    fn create_in_collection(
        &self,
        object: &MediaObject,
        collection: ObjectId,
    ) -> Result<(), CreateObjectError> {
        self.lock().create_member(object, collection)
    }

    fn object(&self, id: ObjectId) -> Result<Option<MediaObject>, StoreError> {
        Ok(self.lock().live_object(id).cloned())
    }

    fn object_any_state(&self, id: ObjectId) -> Result<Option<MediaObject>, StoreError> {
        Ok(self.lock().objects.get(&id).map(|r| r.object.clone()))
    }

    fn object_by_shortcode(&self, code: &ShortCode) -> Result<Option<MediaObject>, StoreError> {
        let state = self.lock();
        Ok(state
            .objects
            .values()
            .map(|r| &r.object)
            .find(|o| o.shortcode() == code && o.lifecycle() == Lifecycle::Live)
            .cloned())
    }

    fn update_object(
        &self,
        id: ObjectId,
        patch: ObjectPatch,
        now: Timestamp,
    ) -> Result<MediaObject, UpdateObjectError> {
        let mut state = self.lock();
        let Some(record) = state
            .objects
            .get_mut(&id)
            .filter(|r| r.object.lifecycle() == Lifecycle::Live)
        else {
            return Err(UpdateObjectError::NotFound);
        };
        let updated = record.object.clone().apply(patch, now)?;
        record.object = updated.clone();
        Ok(updated)
    }

    fn is_member(&self, collection: ObjectId, member: ObjectId) -> Result<bool, StoreError> {
        Ok(self.lock().is_member(collection, member))
    }

    fn collections_of(&self, member: ObjectId) -> Result<Vec<ObjectId>, StoreError> {
        let state = self.lock();
        // Only live collections; the diesel adapter gives no order, these come by id.
        Ok(state
            .parents_of(member)
            .filter(|c| state.live_object(*c).is_some())
            .collect())
    }

    fn add_member(
        &self,
        collection: ObjectId,
        member: ObjectId,
        now: Timestamp,
    ) -> Result<AddOutcome, AddMemberError> {
        let mut state = self.lock();
        let Some(collection_type) = state.live_object(collection).map(MediaObject::object_type)
        else {
            return Err(AddMemberError::CollectionNotFound);
        };
        if state.live_object(member).is_none() {
            return Err(AddMemberError::MemberNotFound);
        }
        // Mirrors adapters-diesel media.rs: an existing membership is reported before the
        // graph rules are checked.
        if state.is_member(collection, member) {
            return Ok(AddOutcome::AlreadyMember);
        }
        let (ancestors, _) = state.ancestors(&[collection]);
        check_add_member(collection, collection_type, member, &ancestors)?;
        state.link(collection, member, now);
        Ok(AddOutcome::Added)
    }

    fn remove_member(
        &self,
        collection: ObjectId,
        member: ObjectId,
        now: Timestamp,
    ) -> Result<AfterRemoval, RemoveMemberError> {
        let mut state = self.lock();
        if !state.is_member(collection, member) {
            return Err(RemoveMemberError::NotAMember);
        }
        // Every other membership counts, in live collections or not.
        let remaining = state.parents_of(member).count().saturating_sub(1);
        let fate = after_membership_removed(remaining);
        state.unlink(collection, member);
        if fate == AfterRemoval::SoftDelete {
            state.soft_delete(member, now, Some(collection));
        }
        Ok(fate)
    }

    fn each_member(
        &self,
        members: Members,
        visit: &mut dyn FnMut(CatalogItem),
    ) -> Result<(), StoreError> {
        // Read in one step; `visit` runs after the lock is released, so that it may call the
        // store itself.
        let items = self.lock().listed_members(members);
        items.into_iter().for_each(visit);
        Ok(())
    }

    fn access_view(&self, user: UserId, objects: &[ObjectId]) -> Result<AccessView, StoreError> {
        Ok(self.lock().access_view(user, objects))
    }

    fn set_permission(
        &self,
        collection: ObjectId,
        user: UserId,
        level: PermissionLevel,
        _now: Timestamp,
    ) -> Result<(), PermissionChangeError> {
        self.lock().change_permission(collection, user, Some(level))
    }

    fn remove_permission(
        &self,
        collection: ObjectId,
        user: UserId,
    ) -> Result<(), PermissionChangeError> {
        self.lock().change_permission(collection, user, None)
    }

    fn permission_entries(&self, collection: ObjectId) -> Result<Vec<PermissionEntry>, StoreError> {
        let state = self.lock();
        let mut entries: Vec<PermissionEntry> = state
            .permissions
            .get(&collection)
            .into_iter()
            .flatten()
            .filter_map(|(user, level)| {
                Some(PermissionEntry {
                    user: state.users.get(user)?.clone(),
                    level: *level,
                })
            })
            .collect();
        // Mirrors adapters-diesel media.rs: `ORDER BY unique_id`, compared byte by byte as
        // SQLite's default collation does.
        entries.sort_by(|a, b| a.user.unique_id.as_str().cmp(b.user.unique_id.as_str()));
        Ok(entries)
    }

    fn explicit_level(
        &self,
        collection: ObjectId,
        user: UserId,
    ) -> Result<Option<PermissionLevel>, StoreError> {
        let state = self.lock();
        Ok(state
            .permissions
            .get(&collection)
            .and_then(|entries| entries.get(&user))
            .copied())
    }

    fn catalogs_with_entries_for(&self, user: UserId) -> Result<Vec<MediaObject>, StoreError> {
        let state = self.lock();
        let held = state
            .permissions
            .iter()
            .filter(|(_, entries)| entries.contains_key(&user))
            .map(|(c, _)| *c);
        Ok(state.live_catalogs(held))
    }

    fn all_catalogs(&self) -> Result<Vec<MediaObject>, StoreError> {
        let state = self.lock();
        Ok(state.live_catalogs(state.objects.keys().copied()))
    }

    fn restore_object(
        &self,
        id: ObjectId,
        into: Option<ObjectId>,
        now: Timestamp,
    ) -> Result<RestoredObject, RestoreObjectError> {
        let mut state = self.lock();
        let Some(record) = state.objects.get(&id) else {
            return Err(RestoreObjectError::NotFound);
        };
        let Lifecycle::SoftDeleted { at } = record.object.lifecycle() else {
            return Err(RestoreObjectError::NotDeleted);
        };
        if purge_due(record.object.lifecycle(), now) {
            return Err(RestoreObjectError::Expired { deleted_at: at });
        }
        let target = match into.or(record.deleted_from) {
            Some(target) => target,
            None => return Err(RestoreObjectError::NoKnownCollection),
        };
        // Mirrors adapters-diesel media.rs: restoring an object into itself is a cycle, refused
        // before the target is looked up.
        if target == id {
            return Err(RestoreObjectError::Rule(MembershipError::Cycle));
        }
        let Some(target_type) = state.live_object(target).map(MediaObject::object_type) else {
            return Err(RestoreObjectError::CollectionGone(target));
        };
        let (ancestors, _) = state.ancestors(&[target]);
        check_add_member(target, target_type, id, &ancestors)?;
        let restored = record.object.clone().restored(now);
        if !state.is_member(target, id) {
            state.link(target, id, now);
        }
        if let Some(record) = state.objects.get_mut(&id) {
            record.object = restored.clone();
            record.deleted_from = None;
        }
        Ok(RestoredObject {
            object: restored,
            collection: target,
        })
    }
}
