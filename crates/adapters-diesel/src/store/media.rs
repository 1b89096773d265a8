//! `MediaRepository`: objects, the membership graph and permissions.

use std::collections::{BTreeMap, BTreeSet};

use diesel::prelude::*;
use medialib_domain::permission::check_admin_change;
use medialib_domain::{
    AccessView, AfterRemoval, Lifecycle, MediaObject, MembershipError, ObjectId, ObjectPatch,
    ObjectType, PermissionLevel, ShortCode, Timestamp, UserId, check_add_member,
    object::after_membership_removed, object::purge_due,
};
use medialib_ports::repos::{RestoreObjectError, RestoredObject};
use medialib_ports::{
    AddMemberError, AddOutcome, CatalogItem, CreateObjectError, MediaRepository, Members,
    PermissionChangeError, PermissionEntry, ReadFacts, Reader, RemoveMemberError, StoreError,
    UpdateObjectError,
};

use super::facts::level;
use super::rows::{ObjectRow, UserRow, object_id, user_id};
use super::{DieselStore, Locks as _, facts, flatten, listing};
use crate::error::DbError;
use crate::macros::{with_conn, with_tx};
use crate::schema::{memberships, object_properties, objects, permissions, users};

/// Loads one object (any lifecycle) with its properties, as the domain's value: `None` when
/// there is no such row, `Some(Err(Corrupt))` when it does not parse.
macro_rules! load_object {
    ($conn:ident, $id:expr) => {{
        let row: Option<ObjectRow> = objects::table
            .find($id)
            .select(ObjectRow::as_select())
            .first($conn)
            .optional()?;
        match row {
            None => None,
            Some(row) => {
                let props: Vec<(String, String)> = object_properties::table
                    .filter(object_properties::object_id.eq($id))
                    .order(object_properties::key.asc())
                    .select((object_properties::key, object_properties::value))
                    .load($conn)?;
                Some(row.into_domain(props))
            }
        }
    }};
}

/// Walks the membership graph upwards from `$start`: every ancestor and the edges between them.
macro_rules! ancestors {
    ($conn:ident, $start:expr) => {{
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut edges: Vec<(String, String)> = Vec::new();
        let mut frontier: Vec<String> = $start;
        while !frontier.is_empty() {
            let rows: Vec<(String, String)> = memberships::table
                .filter(memberships::member_id.eq_any(&frontier))
                .select((memberships::collection_id, memberships::member_id))
                .load($conn)?;
            frontier.clear();
            for (c, m) in rows {
                if seen.insert(c.clone()) {
                    frontier.push(c.clone());
                }
                edges.push((c, m));
            }
        }
        (seen, edges)
    }};
}

/// Whether `member` may join `collection`, whose stored type is `ctype`: the domain's rule
/// (`check_add_member`) on the collection's ancestors, read in `$conn`'s transaction. The
/// error is the caller's: `$rule` wraps the rule's refusal; a row that does not parse is a
/// `StoreError::Corrupt`, converted.
macro_rules! may_join {
    ($conn:ident, $collection:expr, $ctype:expr, $member:expr, $rule:path) => {{
        let (ancestor_ids, _) = ancestors!($conn, vec![$collection.to_string()]);
        let ancestors: Result<BTreeSet<ObjectId>, StoreError> =
            ancestor_ids.iter().map(|a| object_id(a)).collect();
        ObjectType::parse($ctype)
            .map_err(|e| StoreError::Corrupt(format!("type: {e}")))
            .and_then(|ctype| Ok((ctype, ancestors?)))
            .map_err(Into::into)
            .and_then(|(ctype, ancestors)| {
                check_add_member($collection, ctype, $member, &ancestors).map_err($rule)
            })
    }};
}

/// Writes an object's row and properties (insert). Paths are spelled out: `create_member!`
/// expands it in other modules.
macro_rules! insert_object {
    ($conn:ident, $obj:expr) => {{
        use $crate::schema::{object_properties, objects};
        let row = $crate::store::rows::ObjectRow::from_domain($obj);
        diesel::insert_into(objects::table)
            .values(&row)
            .execute($conn)?;
        let id = $obj.id().to_string();
        let props: Vec<_> = $obj
            .fields()
            .properties
            .iter()
            .map(|(k, v)| {
                (
                    object_properties::object_id.eq(id.clone()),
                    object_properties::key.eq(k),
                    object_properties::value.eq(v),
                )
            })
            .collect();
        if !props.is_empty() {
            diesel::insert_into(object_properties::table)
                .values(&props)
                .execute($conn)?;
        }
    }};
}

/// A live catalog, looked up inside a transaction.
macro_rules! live_type {
    ($conn:ident, $id:expr) => {{
        use $crate::schema::objects;
        let t: Option<String> = objects::table
            .find($id)
            .filter(objects::deleted_at.is_null())
            .select(objects::object_type)
            .first($conn)
            .optional()?;
        t
    }};
}

/// Inside a transaction, stores `$object` as a new member of the collection `$collection`
/// (its id as text), or finds why not: evaluates to the business outcome,
/// `Result<(), CreateObjectError>` (database errors leave by `?`). The one body of
/// `create_in_collection` and of `UploadRepository::create_with_media`.
macro_rules! create_member {
    ($conn:ident, $object:expr, $collection:expr) => {{
        use medialib_domain::ObjectType;
        use medialib_ports::{CreateObjectError, StoreError};
        use $crate::schema::memberships;
        let outcome: Result<(), CreateObjectError> =
            match $crate::store::media::live_type!($conn, $collection)
                .as_deref()
                .map(ObjectType::parse)
            {
                None => Err(CreateObjectError::CollectionNotFound),
                Some(Ok(t)) if t.is_collection() => Ok(()),
                Some(Ok(_)) => Err(CreateObjectError::NotACollection),
                Some(Err(e)) => Err(StoreError::Corrupt(format!("type: {e}")).into()),
            };
        if outcome.is_ok() {
            $crate::store::media::insert_object!($conn, $object);
            diesel::insert_into(memberships::table)
                .values((
                    memberships::collection_id.eq($collection),
                    memberships::member_id.eq($object.id().to_string()),
                    memberships::added_at.eq($object.created().epoch_seconds()),
                    memberships::member_modified_at.eq($object.modified().epoch_seconds()),
                ))
                .execute($conn)?;
        }
        outcome
    }};
}

/// Inside a transaction, stores `$library` as a new top-level library with `$admin` as its
/// admin (database errors leave by `?`). The one body of `create_library` and of
/// `LtiRepository::create_course_library`.
macro_rules! insert_library {
    ($conn:ident, $library:expr, $admin:expr) => {{
        use medialib_domain::PermissionLevel;
        use $crate::schema::permissions;
        $crate::store::media::insert_object!($conn, $library);
        diesel::insert_into(permissions::table)
            .values((
                permissions::collection_id.eq($library.id().to_string()),
                permissions::user_id.eq($admin.to_string()),
                permissions::level.eq(PermissionLevel::Admin.as_str()),
                permissions::granted_at.eq($library.created().epoch_seconds()),
            ))
            .execute($conn)?;
    }};
}

pub(crate) use {create_member, insert_library, insert_object, live_type};

/// Copies an object's new `modified_at` onto its memberships' `member_modified_at` (the
/// column catalog pages are ordered and walked by): every write that changes
/// `objects.modified_at` runs this in the same transaction, after the update of the object's
/// row (which locks it: see `Locks::lock_object`).
macro_rules! follow_modified {
    ($conn:ident, $member:expr, $modified:expr) => {{
        diesel::update(memberships::table.filter(memberships::member_id.eq($member)))
            .set(memberships::member_modified_at.eq($modified))
            .execute($conn)?;
    }};
}

impl MediaRepository for DieselStore {
    fn read_facts(
        &self,
        reader: Reader<'_>,
        collection: ObjectId,
        object: ObjectId,
    ) -> Result<ReadFacts, StoreError> {
        let (c, o) = (collection.to_string(), object.to_string());
        let rows = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => { Ok(facts::read_facts(conn, reader, &c, &o)?) })
        })()?;
        facts::into_facts(rows)
    }

    fn create_library(
        &self,
        library: &MediaObject,
        admin: UserId,
    ) -> Result<(), CreateObjectError> {
        let r: Result<(), DbError> = with_tx!(self.db, conn => {
            insert_library!(conn, library, admin);
            Ok(())
        });
        r.map_err(|e| CreateObjectError::Store(e.into()))
    }

    fn create_in_collection(
        &self,
        object: &MediaObject,
        collection: ObjectId,
    ) -> Result<(), CreateObjectError> {
        let c = collection.to_string();
        let r: Result<Result<(), CreateObjectError>, DbError> = with_tx!(self.db, conn => {
            Ok(create_member!(conn, object, &c))
        });
        flatten(r)
    }

    fn object(&self, id: ObjectId) -> Result<Option<MediaObject>, StoreError> {
        Ok(self
            .object_any_state(id)?
            .filter(|o| o.lifecycle() == medialib_domain::Lifecycle::Live))
    }

    fn object_any_state(&self, id: ObjectId) -> Result<Option<MediaObject>, StoreError> {
        let id = id.to_string();
        let found = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => { Ok(load_object!(conn, &id)) })
        })()?;
        found.transpose()
    }

    fn object_by_shortcode(&self, code: &ShortCode) -> Result<Option<MediaObject>, StoreError> {
        let id: Option<String> = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                Ok(objects::table
                    .filter(objects::shortcode.eq(code.as_str()))
                    .filter(objects::deleted_at.is_null())
                    .select(objects::id)
                    .first(conn)
                    .optional()?)
            })
        })()?;
        match id {
            Some(id) => self.object(object_id(&id)?),
            None => Ok(None),
        }
    }

    fn update_object(
        &self,
        id: ObjectId,
        patch: ObjectPatch,
        now: Timestamp,
    ) -> Result<MediaObject, UpdateObjectError> {
        let key = id.to_string();
        let r: Result<Result<MediaObject, UpdateObjectError>, DbError> = with_tx!(self.db, conn => {
            let current = match load_object!(conn, &key) {
                Some(Ok(o)) if o.lifecycle() == Lifecycle::Live => o,
                Some(Err(e)) => return Ok(Err(e.into())),
                _ => return Ok(Err(UpdateObjectError::NotFound)),
            };
            let updated = match current.apply(patch.clone(), now) {
                Ok(o) => o,
                Err(e) => return Ok(Err(e.into())),
            };
            let f = updated.fields();
            diesel::update(objects::table.find(&key))
                .set((
                    objects::title.eq(f.title.as_str()),
                    objects::description.eq(f.description.as_str()),
                    objects::public.eq(f.public),
                    objects::duration.eq(f.duration.map(|d| i64::from(d.seconds()))),
                    objects::modified_at.eq(updated.modified().epoch_seconds()),
                ))
                .execute(conn)?;
            follow_modified!(conn, &key, updated.modified().epoch_seconds());
            if let Some(p) = &patch.properties {
                for (k, v) in p.iter() {
                    diesel::delete(object_properties::table.find((&key, k))).execute(conn)?;
                    diesel::insert_into(object_properties::table)
                        .values((
                            object_properties::object_id.eq(&key),
                            object_properties::key.eq(k),
                            object_properties::value.eq(v),
                        ))
                        .execute(conn)?;
                }
            }
            Ok(Ok(updated))
        });
        flatten(r)
    }

    fn is_member(&self, collection: ObjectId, member: ObjectId) -> Result<bool, StoreError> {
        let (c, m) = (collection.to_string(), member.to_string());
        let n: i64 = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                Ok(memberships::table
                    .filter(memberships::collection_id.eq(&c))
                    .filter(memberships::member_id.eq(&m))
                    .count()
                    .get_result(conn)?)
            })
        })()?;
        Ok(n > 0)
    }

    fn collections_of(&self, member: ObjectId) -> Result<Vec<ObjectId>, StoreError> {
        let m = member.to_string();
        let ids: Vec<String> = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                Ok(memberships::table
                    .inner_join(objects::table.on(objects::id.eq(memberships::collection_id)))
                    .filter(memberships::member_id.eq(&m))
                    .filter(objects::deleted_at.is_null())
                    .select(memberships::collection_id)
                    .load(conn)?)
            })
        })()?;
        ids.iter().map(|s| object_id(s)).collect()
    }

    fn add_member(
        &self,
        collection: ObjectId,
        member: ObjectId,
        now: Timestamp,
    ) -> Result<AddOutcome, AddMemberError> {
        let (c, m) = (collection.to_string(), member.to_string());
        let r: Result<Result<AddOutcome, AddMemberError>, DbError> = with_tx!(self.db, conn => {
            conn.lock_graph()?;
            let Some(ctype) = live_type!(conn, &c) else {
                return Ok(Err(AddMemberError::CollectionNotFound));
            };
            // The live member's modification time, copied onto the new membership; its row
            // stays locked so that no update of the member commits in between.
            conn.lock_object(&m)?;
            let member_modified: Option<i64> = objects::table
                .find(&m)
                .filter(objects::deleted_at.is_null())
                .select(objects::modified_at)
                .first(conn)
                .optional()?;
            let Some(member_modified) = member_modified else {
                return Ok(Err(AddMemberError::MemberNotFound));
            };
            let exists: i64 = memberships::table
                .filter(memberships::collection_id.eq(&c))
                .filter(memberships::member_id.eq(&m))
                .count()
                .get_result(conn)?;
            if exists > 0 {
                return Ok(Ok(AddOutcome::AlreadyMember));
            }
            if let Err(e) = may_join!(conn, collection, &ctype, member, AddMemberError::Rule) {
                return Ok(Err(e));
            }
            diesel::insert_into(memberships::table)
                .values((
                    memberships::collection_id.eq(&c),
                    memberships::member_id.eq(&m),
                    memberships::added_at.eq(now.epoch_seconds()),
                    memberships::member_modified_at.eq(member_modified),
                ))
                .execute(conn)?;
            Ok(Ok(AddOutcome::Added))
        });
        flatten(r)
    }

    fn remove_member(
        &self,
        collection: ObjectId,
        member: ObjectId,
        now: Timestamp,
    ) -> Result<AfterRemoval, RemoveMemberError> {
        let (c, m) = (collection.to_string(), member.to_string());
        let r: Result<Result<AfterRemoval, RemoveMemberError>, DbError> = with_tx!(self.db, conn => {
            conn.lock_graph()?;
            conn.lock_object(&m)?;
            let n = diesel::delete(memberships::table.find((&c, &m))).execute(conn)?;
            if n == 0 {
                return Ok(Err(RemoveMemberError::NotAMember));
            }
            let remaining: i64 = memberships::table
                .filter(memberships::member_id.eq(&m))
                .count()
                .get_result(conn)?;
            let remaining = usize::try_from(remaining).unwrap_or(usize::MAX);
            let fate = after_membership_removed(remaining);
            if fate == AfterRemoval::SoftDelete {
                diesel::update(objects::table.find(&m))
                    .filter(objects::deleted_at.is_null())
                    .set((
                        objects::deleted_at.eq(Some(now.epoch_seconds())),
                        objects::deleted_from.eq(Some(&c)),
                        objects::modified_at.eq(now.epoch_seconds()),
                    ))
                    .execute(conn)?;
                // None is left (hence the soft deletion): kept so that the copy's rule holds
                // wherever `modified_at` changes.
                follow_modified!(conn, &m, now.epoch_seconds());
            }
            Ok(Ok(fate))
        });
        flatten(r)
    }

    fn each_member(
        &self,
        members: Members,
        visit: &mut dyn FnMut(CatalogItem),
    ) -> Result<(), StoreError> {
        listing::each_member(self, members, visit)
    }

    fn access_view(&self, user: UserId, objects: &[ObjectId]) -> Result<AccessView, StoreError> {
        let u = user.to_string();
        let starts: Vec<String> = objects.iter().map(ToString::to_string).collect();
        let (edges, entries) = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                let (mut nodes, edges) = ancestors!(conn, starts.clone());
                nodes.extend(starts.iter().cloned());
                let entries: Vec<(String, String)> = permissions::table
                    .filter(permissions::user_id.eq(&u))
                    .filter(permissions::collection_id.eq_any(&nodes))
                    .select((permissions::collection_id, permissions::level))
                    .load(conn)?;
                Ok((edges, entries))
            })
        })()?;
        let edges = edges
            .iter()
            .map(|(c, m)| Ok((object_id(c)?, object_id(m)?)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        let entries = entries
            .iter()
            .map(|(c, l)| Ok((object_id(c)?, level(l)?)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(AccessView::new(edges, entries))
    }

    fn set_permission(
        &self,
        collection: ObjectId,
        user: UserId,
        new_level: PermissionLevel,
        now: Timestamp,
    ) -> Result<(), PermissionChangeError> {
        self.change_permission(collection, user, Some(new_level), now)
    }

    fn remove_permission(
        &self,
        collection: ObjectId,
        user: UserId,
    ) -> Result<(), PermissionChangeError> {
        self.change_permission(collection, user, None, Timestamp::from_epoch_seconds(0))
    }

    fn permission_entries(&self, collection: ObjectId) -> Result<Vec<PermissionEntry>, StoreError> {
        let c = collection.to_string();
        let rows: Vec<(UserRow, String)> = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                Ok(permissions::table
                    .inner_join(users::table)
                    .filter(permissions::collection_id.eq(&c))
                    .order(users::unique_id.asc())
                    .select((UserRow::as_select(), permissions::level))
                    .load(conn)?)
            })
        })()?;
        rows.into_iter()
            .map(|(u, l)| {
                Ok(PermissionEntry {
                    user: u.into_domain()?,
                    level: level(&l)?,
                })
            })
            .collect()
    }

    fn explicit_level(
        &self,
        collection: ObjectId,
        user: UserId,
    ) -> Result<Option<PermissionLevel>, StoreError> {
        let (c, u) = (collection.to_string(), user.to_string());
        let found: Option<String> = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                Ok(permissions::table
                    .find((&c, &u))
                    .select(permissions::level)
                    .first(conn)
                    .optional()?)
            })
        })()?;
        found.as_deref().map(level).transpose()
    }

    fn catalogs_with_entries_for(&self, user: UserId) -> Result<Vec<MediaObject>, StoreError> {
        let u = user.to_string();
        let catalog = ObjectType::Catalog.as_str();
        let (rows, props) = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                let rows: Vec<ObjectRow> = permissions::table
                    .inner_join(objects::table)
                    .filter(permissions::user_id.eq(&u))
                    .filter(objects::object_type.eq(catalog))
                    .filter(objects::deleted_at.is_null())
                    .order(objects::id.asc())
                    .select(ObjectRow::as_select())
                    .load(conn)?;
                let props: Vec<(String, String, String)> = object_properties::table
                    .inner_join(
                        permissions::table
                            .on(permissions::collection_id.eq(object_properties::object_id)),
                    )
                    .filter(permissions::user_id.eq(&u))
                    .select((object_properties::object_id, object_properties::key, object_properties::value))
                    .load(conn)?;
                Ok((rows, props))
            })
        })()?;
        with_properties(rows, props)
    }

    fn all_catalogs(&self) -> Result<Vec<MediaObject>, StoreError> {
        let catalog = ObjectType::Catalog.as_str();
        let (rows, props) = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                let rows: Vec<ObjectRow> = objects::table
                    .filter(objects::object_type.eq(catalog))
                    .filter(objects::deleted_at.is_null())
                    .order(objects::id.asc())
                    .select(ObjectRow::as_select())
                    .load(conn)?;
                let props: Vec<(String, String, String)> = object_properties::table
                    .inner_join(objects::table)
                    .filter(objects::object_type.eq(catalog))
                    .filter(objects::deleted_at.is_null())
                    .select((object_properties::object_id, object_properties::key, object_properties::value))
                    .load(conn)?;
                Ok((rows, props))
            })
        })()?;
        with_properties(rows, props)
    }

    fn restore_object(
        &self,
        id: ObjectId,
        into: Option<ObjectId>,
        now: Timestamp,
    ) -> Result<RestoredObject, RestoreObjectError> {
        let key = id.to_string();
        let r: Result<Result<RestoredObject, RestoreObjectError>, DbError> = with_tx!(self.db, conn => {
            conn.lock_graph()?;
            conn.lock_object(&key)?;
            let object = match load_object!(conn, &key) {
                Some(Ok(o)) => o,
                Some(Err(e)) => return Ok(Err(e.into())),
                None => return Ok(Err(RestoreObjectError::NotFound)),
            };
            let Lifecycle::SoftDeleted { at } = object.lifecycle() else {
                return Ok(Err(RestoreObjectError::NotDeleted));
            };
            if purge_due(object.lifecycle(), now) {
                return Ok(Err(RestoreObjectError::Expired { deleted_at: at }));
            }
            let target = match into {
                Some(c) => c,
                None => {
                    let recorded: Option<String> = objects::table
                        .find(&key)
                        .select(objects::deleted_from)
                        .first(conn)?;
                    let Some(recorded) = recorded else {
                        return Ok(Err(RestoreObjectError::NoKnownCollection));
                    };
                    match object_id(&recorded) {
                        Ok(c) => c,
                        Err(e) => return Ok(Err(e.into())),
                    }
                }
            };
            if target == id {
                return Ok(Err(RestoreObjectError::Rule(MembershipError::Cycle)));
            }
            let c = target.to_string();
            let Some(ctype) = live_type!(conn, &c) else {
                return Ok(Err(RestoreObjectError::CollectionGone(target)));
            };
            if let Err(e) = may_join!(conn, target, &ctype, id, RestoreObjectError::Rule) {
                return Ok(Err(e));
            }
            let restored = object.restored(now);
            diesel::insert_into(memberships::table)
                .values((
                    memberships::collection_id.eq(&c),
                    memberships::member_id.eq(&key),
                    memberships::added_at.eq(now.epoch_seconds()),
                    memberships::member_modified_at.eq(restored.modified().epoch_seconds()),
                ))
                .on_conflict_do_nothing()
                .execute(conn)?;
            diesel::update(objects::table.find(&key))
                .set((
                    objects::deleted_at.eq(None::<i64>),
                    objects::deleted_from.eq(None::<String>),
                    objects::modified_at.eq(restored.modified().epoch_seconds()),
                ))
                .execute(conn)?;
            // Also a membership the insert left as it was (it already existed).
            follow_modified!(conn, &key, restored.modified().epoch_seconds());
            Ok(Ok(RestoredObject {
                object: restored,
                collection: target,
            }))
        });
        flatten(r)
    }
}

/// Rebuilds objects from their rows and `(object_id, key, value)` property rows.
fn with_properties(
    rows: Vec<ObjectRow>,
    props: Vec<(String, String, String)>,
) -> Result<Vec<MediaObject>, StoreError> {
    let mut by_object: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for (id, k, v) in props {
        by_object.entry(id).or_default().push((k, v));
    }
    rows.into_iter()
        .map(|row| {
            let p = by_object.remove(&row.id).unwrap_or_default();
            row.into_domain(p)
        })
        .collect()
}

impl DieselStore {
    /// Sets (`Some`) or removes (`None`) an explicit entry, keeping the last admin.
    fn change_permission(
        &self,
        collection: ObjectId,
        user: UserId,
        new_level: Option<PermissionLevel>,
        now: Timestamp,
    ) -> Result<(), PermissionChangeError> {
        let (c, u) = (collection.to_string(), user.to_string());
        let r: Result<Result<(), PermissionChangeError>, DbError> = with_tx!(self.db, conn => {
            conn.lock_collection(&c)?;
            match live_type!(conn, &c).as_deref().map(ObjectType::parse) {
                None => return Ok(Err(PermissionChangeError::CollectionNotFound)),
                Some(Ok(t)) if t.is_collection() => {}
                Some(Ok(_)) => return Ok(Err(PermissionChangeError::NotACollection)),
                Some(Err(e)) => {
                    return Ok(Err(StoreError::Corrupt(format!("type: {e}")).into()));
                }
            }
            let user_exists: i64 = users::table.filter(users::id.eq(&u)).count().get_result(conn)?;
            if user_exists == 0 {
                return Ok(Err(PermissionChangeError::UserNotFound));
            }
            let admin_ids: Vec<String> = permissions::table
                .filter(permissions::collection_id.eq(&c))
                .filter(permissions::level.eq(PermissionLevel::Admin.as_str()))
                .select(permissions::user_id)
                .load(conn)?;
            let mut admins = BTreeSet::new();
            for a in &admin_ids {
                match user_id(a) {
                    Ok(id) => admins.insert(id),
                    Err(e) => return Ok(Err(e.into())),
                };
            }
            if let Err(e) = check_admin_change(&admins, user, new_level) {
                return Ok(Err(e.into()));
            }
            match new_level {
                Some(l) => {
                    diesel::insert_into(permissions::table)
                        .values((
                            permissions::collection_id.eq(&c),
                            permissions::user_id.eq(&u),
                            permissions::level.eq(l.as_str()),
                            permissions::granted_at.eq(now.epoch_seconds()),
                        ))
                        .on_conflict((permissions::collection_id, permissions::user_id))
                        .do_update()
                        .set((
                            permissions::level.eq(l.as_str()),
                            permissions::granted_at.eq(now.epoch_seconds()),
                        ))
                        .execute(conn)?;
                }
                None => {
                    let n = diesel::delete(permissions::table.find((&c, &u))).execute(conn)?;
                    if n == 0 {
                        return Ok(Err(PermissionChangeError::NoEntry));
                    }
                }
            }
            Ok(Ok(()))
        });
        flatten(r)
    }
}
