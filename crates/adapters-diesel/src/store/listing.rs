//! The catalog listing (`MediaRepository::each_member`): one query, properties joined, the
//! members handed on one at a time while the rows are read, so that a large listing is never
//! collected in memory; keyset pages walk an index from the cursor.

use diesel::connection::DefaultLoadingMode;
use diesel::prelude::*;
use medialib_ports::{CatalogItem, Members, StoreError};

use super::DieselStore;
use super::rows::{ObjectRow, ts};
use crate::error::DbError;
use crate::macros::with_conn;
use crate::schema::{memberships, object_properties, objects};

/// Reads the live members a listing asks for (of its collection, modified or added since
/// its `since`, one page when its `page` says so), most recently modified first, and hands each to `visit`.
pub(super) fn each_member(
    store: &DieselStore,
    members: Members,
    visit: &mut dyn FnMut(CatalogItem),
) -> Result<(), StoreError> {
    let Members {
        collection,
        since,
        page,
    } = members;
    let c = collection.to_string();
    let since = since.map(|s| s.timestamp().epoch_seconds());
    // A page is one member more than its size (the caller learns that more follow).
    let page = page.map(|p| {
        let fetch = i64::try_from(p.size().get().saturating_add(1)).unwrap_or(i64::MAX);
        let after = p
            .after()
            .map(|a| (a.modified().epoch_seconds(), a.id().to_string()));
        (fetch, after)
    });
    (|| -> Result<_, DbError> {
        with_conn!(store.db, conn => {
            // One query, properties joined: a member comes as one row per property (or
            // one row), and its rows are adjacent because the order ends with the id.
            // Ordered by `objects` (equal to the membership copy): a page sorts only its own
            // rows, and the whole listing reads faster through the primary key than by the
            // copy's index, which would need a table lookup per member for `added_at`.
            let mut q = memberships::table
                .inner_join(objects::table.on(objects::id.eq(memberships::member_id)))
                .left_join(
                    object_properties::table.on(object_properties::object_id.eq(objects::id)),
                )
                .filter(memberships::collection_id.eq(&c))
                .filter(objects::deleted_at.is_null())
                .select((
                    ObjectRow::as_select(),
                    memberships::added_at,
                    object_properties::key.nullable(),
                    object_properties::value.nullable(),
                ))
                .order((objects::modified_at.desc(), objects::id.asc()))
                .into_boxed();
            if let Some(s) = since {
                q = q.filter(objects::modified_at.ge(s).or(memberships::added_at.ge(s)));
            }
            if let Some((fetch, after)) = &page {
                // The page's ids first (keyset: strictly after the cursor in the listing's
                // order, `fetch` of them), so only that page's properties are joined. They
                // come from `memberships` alone, in the order of its index on
                // `(collection_id, member_modified_at DESC, member_id)` (the copy of the
                // members' `modified_at`): a walk from the cursor that stops after `fetch`
                // rows, not a sort of the whole library. The object is only probed by its
                // key for `deleted_at`, in `EXISTS` rather than a join so that no planner
                // can start from `objects` (SQLite does after `ANALYZE`, by the index on
                // `deleted_at`).
                let live = diesel::dsl::exists(
                    objects::table
                        .filter(objects::id.eq(memberships::member_id))
                        .filter(objects::deleted_at.is_null())
                        .select(objects::id),
                );
                let mut ids = memberships::table
                    .filter(memberships::collection_id.eq(&c))
                    .filter(live)
                    .select(memberships::member_id)
                    .order((
                        memberships::member_modified_at.desc(),
                        memberships::member_id.asc(),
                    ))
                    .limit(*fetch)
                    .into_boxed();
                if let Some(s) = since {
                    ids = ids.filter(
                        memberships::member_modified_at
                            .ge(s)
                            .or(memberships::added_at.ge(s)),
                    );
                }
                if let Some((m, id)) = after {
                    // `member_modified_at <= m` is implied by the condition after it, but
                    // as a range of its own it makes the index walk start at the cursor.
                    let at = memberships::member_modified_at;
                    ids = ids.filter(at.le(*m)).filter(
                        at.lt(*m).or(at.eq(*m).and(memberships::member_id.gt(id))),
                    );
                }
                q = q.filter(objects::id.eq_any(ids));
            }
            let mut members = MemberRows::new(visit);
            for row in q.load_iter::<MemberRow, DefaultLoadingMode>(conn)? {
                if let Err(e) = members.push(row?) {
                    return Ok(Err(e));
                }
            }
            Ok(members.finish())
        })
    })()?
}

/// A member's row with its `added_at` and one of its properties (if it has any).
type MemberRow = (ObjectRow, i64, Option<String>, Option<String>);

/// Catalog items built while their rows are read and handed on one at a time.
struct MemberRows<'v> {
    visit: &'v mut dyn FnMut(CatalogItem),
    current: Option<PendingMember>,
}

/// The member whose rows are being read: its row, when it was added, its properties so far.
struct PendingMember {
    row: ObjectRow,
    added: i64,
    properties: Vec<(String, String)>,
}

impl<'v> MemberRows<'v> {
    fn new(visit: &'v mut dyn FnMut(CatalogItem)) -> Self {
        Self {
            visit,
            current: None,
        }
    }

    fn push(&mut self, (row, added, key, value): MemberRow) -> Result<(), StoreError> {
        if self.current.as_ref().is_some_and(|m| m.row.id != row.id) {
            self.flush()?;
        }
        let member = self.current.get_or_insert_with(|| PendingMember {
            row,
            added,
            properties: Vec::new(),
        });
        if let (Some(k), Some(v)) = (key, value) {
            member.properties.push((k, v));
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        if let Some(m) = self.current.take() {
            (self.visit)(CatalogItem {
                object: m.row.into_domain(m.properties)?,
                added_at: ts(m.added),
            });
        }
        Ok(())
    }

    fn finish(mut self) -> Result<(), StoreError> {
        self.flush()
    }
}
