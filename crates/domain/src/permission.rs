//! Permissions per collection, inherited down the membership graph (DECISIONS.md §3).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::authz::Caller;
use crate::graph::CollectionGraph;
use crate::ids::{ObjectId, UserId};

/// A user's level on a collection: `none < view < admin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PermissionLevel {
    /// No access (an explicit `none` also blocks what would be inherited).
    None,
    /// May read the collection and its members.
    View,
    /// May change the collection, its members and its permissions.
    Admin,
}

/// A level name the service does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("level must be one of none, view, admin")]
pub struct UnknownLevel;

impl PermissionLevel {
    /// The level given when an assignment names none.
    pub const DEFAULT_ASSIGNED: PermissionLevel = PermissionLevel::View;

    /// Parses the wire name.
    pub fn parse(input: &str) -> Result<Self, UnknownLevel> {
        match input {
            "none" => Ok(Self::None),
            "view" => Ok(Self::View),
            "admin" => Ok(Self::Admin),
            _ => Err(UnknownLevel),
        }
    }

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::View => "view",
            Self::Admin => "admin",
        }
    }
}

impl fmt::Display for PermissionLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One user's explicit entries plus the part of the graph above the collections in question.
///
/// Adapters fill it with one query (the ancestors of a collection and the user's
/// entries on them); [`AccessView::effective_level`] resolves it.
#[derive(Debug, Clone, Default)]
pub struct AccessView {
    graph: CollectionGraph,
    explicit: BTreeMap<ObjectId, PermissionLevel>,
}

impl AccessView {
    /// Builds the view from membership edges `(collection, member)` and explicit entries.
    pub fn new(
        edges: impl IntoIterator<Item = (ObjectId, ObjectId)>,
        explicit: impl IntoIterator<Item = (ObjectId, PermissionLevel)>,
    ) -> Self {
        let mut graph = CollectionGraph::new();
        for (c, m) in edges {
            graph.insert_edge(c, m);
        }
        Self {
            graph,
            explicit: explicit.into_iter().collect(),
        }
    }

    /// The caller's effective level on `object`, as the authorization gate sees it
    /// ([`crate::authz::level_on`]: organization admins have `admin` everywhere).
    pub fn effective_level(&self, caller: &Caller, object: ObjectId) -> PermissionLevel {
        crate::authz::level_on(caller, self, object)
    }

    /// The level the entries give on `object`, ignoring who the caller is: the explicit
    /// entry on it if there is one (`none` included), else the highest level over its
    /// parent collections, else `none`. For an object that is not a collection (it holds
    /// no entries) that is the best level over the collections holding it.
    pub fn resolve_level(&self, object: ObjectId) -> PermissionLevel {
        let mut memo = BTreeMap::new();
        let mut visiting = BTreeSet::new();
        self.resolve(object, &mut memo, &mut visiting)
    }

    fn resolve(
        &self,
        id: ObjectId,
        memo: &mut BTreeMap<ObjectId, PermissionLevel>,
        visiting: &mut BTreeSet<ObjectId>,
    ) -> PermissionLevel {
        if let Some(level) = self.explicit.get(&id) {
            return *level;
        }
        if let Some(level) = memo.get(&id) {
            return *level;
        }
        if !visiting.insert(id) {
            // A stored cycle cannot happen (adds are checked); grant nothing through one.
            return PermissionLevel::None;
        }
        let mut best = PermissionLevel::None;
        let parents: Vec<ObjectId> = self.graph.parents_of(id).collect();
        for p in parents {
            best = best.max(self.resolve(p, memo, visiting));
            if best == PermissionLevel::Admin {
                break;
            }
        }
        visiting.remove(&id);
        memo.insert(id, best);
        best
    }
}

/// The entry a user added to a collection by uniqueId gets (user POST with `user_id` 0):
/// `view`, unless the entry they hold already gives `view` or more (an admin is never
/// demoted by being added). `None`: keep the entry as it is.
pub fn level_when_added(current: Option<PermissionLevel>) -> Option<PermissionLevel> {
    match current {
        Some(l) if l >= PermissionLevel::View => None,
        _ => Some(PermissionLevel::View),
    }
}

/// Removing or demoting the last admin of a collection is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the last admin of a collection cannot be removed or demoted")]
pub struct LastAdmin;

/// Checks a change of `target`'s explicit entry on a collection whose explicit admins are `admins`.
///
/// `new_level` is `None` when the entry is removed.
pub fn check_admin_change(
    admins: &BTreeSet<UserId>,
    target: UserId,
    new_level: Option<PermissionLevel>,
) -> Result<(), LastAdmin> {
    let stays_admin = new_level == Some(PermissionLevel::Admin);
    if !stays_admin && admins.len() == 1 && admins.contains(&target) {
        Err(LastAdmin)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::OrgNamespace;

    fn ids(n: u8) -> Vec<ObjectId> {
        let ns = OrgNamespace::from_random([5; 16]);
        (0..n).map(|i| ObjectId::generate(&ns, [i; 16])).collect()
    }

    fn caller(org_admin: bool) -> Caller {
        let ns = OrgNamespace::from_random([6; 16]);
        Caller::new(UserId::generate(&ns, [1; 16]), org_admin)
    }

    #[test]
    fn levels_order_and_parse() {
        assert!(PermissionLevel::None < PermissionLevel::View);
        assert!(PermissionLevel::View < PermissionLevel::Admin);
        for l in [
            PermissionLevel::None,
            PermissionLevel::View,
            PermissionLevel::Admin,
        ] {
            assert_eq!(PermissionLevel::parse(l.as_str()), Ok(l));
        }
        assert!(PermissionLevel::parse("Admin").is_err());
        assert!(PermissionLevel::parse("owner").is_err());
    }

    #[test]
    fn access_flows_down_and_explicit_entries_override() {
        // root -> lib -> sub
        let v = ids(3);
        let (root, lib, sub) = (v[0], v[1], v[2]);
        let edges = [(root, lib), (lib, sub)];
        let c = caller(false);

        let view = AccessView::new(edges, [(root, PermissionLevel::Admin)]);
        assert_eq!(view.effective_level(&c, sub), PermissionLevel::Admin);

        let view = AccessView::new(
            edges,
            [(root, PermissionLevel::Admin), (lib, PermissionLevel::None)],
        );
        assert_eq!(view.effective_level(&c, lib), PermissionLevel::None);
        assert_eq!(
            view.effective_level(&c, sub),
            PermissionLevel::None,
            "none blocks inheritance"
        );

        let view = AccessView::new(
            edges,
            [(root, PermissionLevel::View), (sub, PermissionLevel::Admin)],
        );
        assert_eq!(view.effective_level(&c, lib), PermissionLevel::View);
        assert_eq!(view.effective_level(&c, sub), PermissionLevel::Admin);

        let view = AccessView::new(edges, []);
        assert_eq!(view.effective_level(&c, sub), PermissionLevel::None);
    }

    #[test]
    fn highest_parent_wins() {
        let v = ids(3);
        let edges = [(v[0], v[2]), (v[1], v[2])];
        let view = AccessView::new(
            edges,
            [
                (v[0], PermissionLevel::View),
                (v[1], PermissionLevel::Admin),
            ],
        );
        assert_eq!(
            view.effective_level(&caller(false), v[2]),
            PermissionLevel::Admin
        );
    }

    #[test]
    fn org_admins_are_admin_everywhere() {
        let v = ids(1);
        let view = AccessView::new([], [(v[0], PermissionLevel::None)]);
        assert_eq!(
            view.effective_level(&caller(true), v[0]),
            PermissionLevel::Admin
        );
    }

    #[test]
    fn adding_a_member_never_demotes() {
        use PermissionLevel as L;
        assert_eq!(level_when_added(None), Some(L::View));
        assert_eq!(level_when_added(Some(L::None)), Some(L::View));
        assert_eq!(level_when_added(Some(L::View)), None);
        assert_eq!(level_when_added(Some(L::Admin)), None);
    }

    #[test]
    fn last_admin_is_kept() {
        let ns = OrgNamespace::from_random([7; 16]);
        let a = UserId::generate(&ns, [1; 16]);
        let b = UserId::generate(&ns, [2; 16]);
        let one: BTreeSet<_> = [a].into_iter().collect();
        assert_eq!(check_admin_change(&one, a, None), Err(LastAdmin));
        assert_eq!(
            check_admin_change(&one, a, Some(PermissionLevel::View)),
            Err(LastAdmin)
        );
        assert_eq!(
            check_admin_change(&one, a, Some(PermissionLevel::Admin)),
            Ok(())
        );
        assert_eq!(check_admin_change(&one, b, None), Ok(()));
        let two: BTreeSet<_> = [a, b].into_iter().collect();
        assert_eq!(check_admin_change(&two, a, None), Ok(()));
    }
}
