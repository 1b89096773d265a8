//! The membership graph: objects sit in collections, collections in collections, acyclic.

use std::collections::{BTreeMap, BTreeSet};

use crate::ids::ObjectId;
use crate::object::ObjectType;

/// Why a membership cannot be added.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MembershipError {
    /// Only catalogs hold members.
    #[error("the target is not a collection")]
    NotACollection,
    /// The member is the collection itself or one of its ancestors.
    #[error("a collection cannot be added into itself or into one of its descendants")]
    Cycle,
}

/// Checks that adding `member` into `collection` keeps the graph acyclic.
///
/// `collection_ancestors` holds every collection that (transitively) contains
/// `collection`. Adding `member` would close a cycle exactly when `member` is
/// `collection` itself or one of those ancestors.
pub fn check_add_member(
    collection: ObjectId,
    collection_type: ObjectType,
    member: ObjectId,
    collection_ancestors: &BTreeSet<ObjectId>,
) -> Result<(), MembershipError> {
    if !collection_type.is_collection() {
        return Err(MembershipError::NotACollection);
    }
    if member == collection || collection_ancestors.contains(&member) {
        return Err(MembershipError::Cycle);
    }
    Ok(())
}

/// An in-memory view of (part of) the membership graph: each object's parent collections.
///
/// Adapters build it from rows; tests and the permission resolver walk it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CollectionGraph {
    parents: BTreeMap<ObjectId, BTreeSet<ObjectId>>,
}

impl CollectionGraph {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records an edge that is already stored (no cycle check: stored data was checked on the way in).
    pub fn insert_edge(&mut self, collection: ObjectId, member: ObjectId) {
        self.parents.entry(member).or_default().insert(collection);
    }

    /// Adds an edge after the cycle check.
    pub fn try_add(
        &mut self,
        collection: ObjectId,
        collection_type: ObjectType,
        member: ObjectId,
    ) -> Result<(), MembershipError> {
        let ancestors = self.ancestors(collection);
        check_add_member(collection, collection_type, member, &ancestors)?;
        self.insert_edge(collection, member);
        Ok(())
    }

    /// Removes an edge; returns how many parents the member still has.
    pub fn remove_edge(&mut self, collection: ObjectId, member: ObjectId) -> usize {
        let Some(ps) = self.parents.get_mut(&member) else {
            return 0;
        };
        ps.remove(&collection);
        let left = ps.len();
        if left == 0 {
            self.parents.remove(&member);
        }
        left
    }

    /// Every member with its parent collections, consuming the graph (to list its edges).
    pub fn into_parents(self) -> impl Iterator<Item = (ObjectId, BTreeSet<ObjectId>)> {
        self.parents.into_iter()
    }

    /// The direct parent collections of `id`.
    pub fn parents_of(&self, id: ObjectId) -> impl Iterator<Item = ObjectId> + '_ {
        self.parents.get(&id).into_iter().flatten().copied()
    }

    /// Every collection that transitively contains `id` (not `id` itself unless a cycle was stored).
    pub fn ancestors(&self, id: ObjectId) -> BTreeSet<ObjectId> {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<ObjectId> = self.parents_of(id).collect();
        while let Some(p) = stack.pop() {
            if seen.insert(p) {
                stack.extend(self.parents_of(p));
            }
        }
        seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::OrgNamespace;

    fn ids(n: u8) -> Vec<ObjectId> {
        let ns = OrgNamespace::from_random([9; 16]);
        (0..n).map(|i| ObjectId::generate(&ns, [i; 16])).collect()
    }

    #[test]
    fn self_membership_is_a_cycle() {
        let v = ids(1);
        assert_eq!(
            check_add_member(v[0], ObjectType::Catalog, v[0], &BTreeSet::new()),
            Err(MembershipError::Cycle)
        );
    }

    #[test]
    fn adding_an_ancestor_is_a_cycle() {
        let v = ids(3);
        let mut g = CollectionGraph::new();
        g.try_add(v[0], ObjectType::Catalog, v[1]).unwrap();
        g.try_add(v[1], ObjectType::Catalog, v[2]).unwrap();
        assert_eq!(
            g.try_add(v[2], ObjectType::Catalog, v[0]),
            Err(MembershipError::Cycle)
        );
        assert_eq!(
            g.try_add(v[2], ObjectType::Catalog, v[1]),
            Err(MembershipError::Cycle)
        );
        // A diamond is fine: v2 also directly in v0.
        g.try_add(v[0], ObjectType::Catalog, v[2]).unwrap();
        assert_eq!(g.ancestors(v[2]), [v[0], v[1]].into_iter().collect());
    }

    #[test]
    fn only_catalogs_hold_members() {
        let v = ids(2);
        assert_eq!(
            check_add_member(v[0], ObjectType::Video, v[1], &BTreeSet::new()),
            Err(MembershipError::NotACollection)
        );
    }

    #[test]
    fn remove_edge_counts_remaining_parents() {
        let v = ids(3);
        let mut g = CollectionGraph::new();
        g.insert_edge(v[0], v[2]);
        g.insert_edge(v[1], v[2]);
        assert_eq!(g.remove_edge(v[0], v[2]), 1);
        assert_eq!(g.remove_edge(v[1], v[2]), 0);
        assert_eq!(g.remove_edge(v[1], v[0]), 0);
    }
}
