//! Model-based property test of the authorization gate (`authz::decide`, DECISIONS.md §3).
//!
//! What is modeled: four users, the last of them an organization admin, any of them
//! sometimes acting through a read-only token (`ScopeSet::parse("read")`), run random
//! sequences of operations over a small world of libraries (collections) and media items:
//! - create a top-level library (anyone; the creator gets an explicit `admin` entry);
//! - create an item or a sub-library in a library (needs `admin` on it);
//! - link an existing library or item into a library (catalog PUT: `admin` on the library
//!   and `admin` on what is linked; the graph stays acyclic; linking again changes nothing);
//! - unlink (catalog DELETE: `admin` on the library; removing an object's last membership
//!   soft-deletes it, and a soft-deleted object is "not found" from then on);
//! - grant a level to a user on a library, or revoke the user's entry (`admin` on it; the
//!   last explicit admin cannot be removed or demoted);
//! - rename a user (the user or an organization admin).
//!
//! Each operation goes to two implementations. [`Sut`] asks the domain for every decision:
//! `authz::decide` on the actor's `AccessView` (built from every edge and the actor's
//! entries), `CollectionGraph::try_add` for cycles and `check_admin_change` for the last
//! admin, and applies the operation only when all of them allow it. [`World`] is a naive
//! reference written from the rules alone (a recursive effective level, no domain function).
//! The checks run in the order of the use cases in `ports::services::media`.
//!
//! After every step the test asserts that both gave the same outcome (the kind of refusal
//! included) and hold the same state, that a refused operation changed nothing, and these
//! invariants of the system under test:
//! 1. a user's effective level on an object rises only through an accepted operation, only
//!    on the objects below what that operation changed, and only when the actor was `admin`
//!    of what it changed (the library of a grant, revocation or creation, the library and
//!    the object of a link) or is an organization admin, or on the actor's own new library;
//! 2. every level the domain resolves equals the naive level computed from the entries that
//!    remain (so removing every entry that reached an object removes access to it); a user
//!    with no entries has level `none` everywhere, an organization admin `admin`;
//! 3. a read through a collection (`Action::Read`, describe GET of a private object)
//!    succeeds exactly when the user has `view` on that collection;
//! 4. the membership graph stays acyclic;
//! 5. a library that ever had an explicit admin keeps at least one.
//!
//! Plain tests replay the four attacks of issue 17 (a viewer re-sharing what it only views
//! into a library of its own, then keeping access after being removed).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use medialib_domain::authz::{self, Action, Caller, Refusal, Subject};
use medialib_domain::oauth::ScopeSet;
use medialib_domain::permission::check_admin_change;
use medialib_domain::{
    AccessView, CollectionGraph, MembershipError, ObjectId, ObjectType, OrgNamespace,
    PermissionLevel, UserId,
};
use proptest::prelude::*;
use proptest::sample::Index;

// ---------------------------------------------------------------------------
// The vocabulary shared by both implementations
// ---------------------------------------------------------------------------

const USERS: usize = 4;
/// The user who administers the whole organization.
const ORG_ADMIN: usize = 3;

/// Users `0..USERS` (made once: deriving an id hashes).
static USER_IDS: LazyLock<[UserId; USERS]> = LazyLock::new(|| {
    let ns = OrgNamespace::from_random([41; 16]);
    std::array::from_fn(|u| UserId::generate(&ns, [u8::try_from(u).unwrap(); 16]))
});

fn user_id(u: usize) -> UserId {
    USER_IDS[u]
}

/// The `n`th object ever created.
fn object_id(n: usize) -> ObjectId {
    let ns = OrgNamespace::from_random([42; 16]);
    let mut random = [0xA5; 16];
    random[..8].copy_from_slice(&u64::try_from(n).unwrap().to_le_bytes());
    ObjectId::generate(&ns, random)
}

/// The model's own level type: `none < view < admin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Lv {
    None,
    View,
    Admin,
}

fn to_domain(l: Lv) -> PermissionLevel {
    match l {
        Lv::None => PermissionLevel::None,
        Lv::View => PermissionLevel::View,
        Lv::Admin => PermissionLevel::Admin,
    }
}

fn from_domain(l: PermissionLevel) -> Lv {
    match l {
        PermissionLevel::None => Lv::None,
        PermissionLevel::View => Lv::View,
        PermissionLevel::Admin => Lv::Admin,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Library,
    Item,
}

/// One operation with concrete objects and users.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Act {
    CreateLibrary {
        new: ObjectId,
    },
    CreateIn {
        lib: ObjectId,
        new: ObjectId,
        kind: Kind,
    },
    Link {
        collection: ObjectId,
        member: ObjectId,
    },
    Unlink {
        collection: ObjectId,
        member: ObjectId,
    },
    Grant {
        lib: ObjectId,
        user: usize,
        level: Lv,
    },
    Revoke {
        lib: ObjectId,
        user: usize,
    },
    Rename {
        user: usize,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Step {
    actor: usize,
    read_only: bool,
    act: Act,
}

/// What a level check was about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum On {
    Collection,
    Linked,
}

/// How an operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Done,
    NotFound,
    ReadOnly,
    Forbidden(On),
    Hidden,
    NotSelf,
    Cycle,
    NotACollection,
    LastAdmin,
}

// ---------------------------------------------------------------------------
// The reference: a naive model of the rules (no domain function decides here)
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
struct Obj {
    id: ObjectId,
    kind: Kind,
    live: bool,
}

/// The whole state: the reference model, and what the system under test exports.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct World {
    /// In creation order.
    objects: Vec<Obj>,
    /// `(collection, member)`.
    edges: BTreeSet<(ObjectId, ObjectId)>,
    /// Explicit entries, by `(library, user)`.
    entries: BTreeMap<(ObjectId, usize), Lv>,
    /// How many times each user's names changed.
    renames: [u32; USERS],
}

impl World {
    fn obj(&self, id: ObjectId) -> &Obj {
        self.objects.iter().find(|o| o.id == id).unwrap()
    }

    fn libraries(&self) -> Vec<ObjectId> {
        self.objects
            .iter()
            .filter(|o| o.kind == Kind::Library)
            .map(|o| o.id)
            .collect()
    }

    fn parents(&self, id: ObjectId) -> impl Iterator<Item = ObjectId> + '_ {
        self.edges
            .iter()
            .filter(move |&&(_, m)| m == id)
            .map(|&(c, _)| c)
    }

    /// `id` and everything below it.
    fn self_and_descendants(&self, id: ObjectId) -> BTreeSet<ObjectId> {
        let mut seen = BTreeSet::from([id]);
        let mut stack = vec![id];
        while let Some(c) = stack.pop() {
            for &(p, m) in &self.edges {
                if p == c && seen.insert(m) {
                    stack.push(m);
                }
            }
        }
        seen
    }

    fn is_acyclic(&self) -> bool {
        // Repeatedly drop objects that hold nothing left; a cycle never empties.
        let mut edges = self.edges.clone();
        loop {
            let holders: BTreeSet<ObjectId> = edges.iter().map(|&(c, _)| c).collect();
            let before = edges.len();
            edges.retain(|&(_, m)| holders.contains(&m));
            if edges.is_empty() {
                return true;
            }
            if edges.len() == before {
                return false;
            }
        }
    }

    /// The explicit entry on `id`, else the best level over its parents, else none.
    fn entry_or_inherited(&self, u: usize, id: ObjectId) -> Lv {
        match self.entries.get(&(id, u)) {
            Some(l) => *l,
            None => self
                .parents(id)
                .map(|p| self.entry_or_inherited(u, p))
                .max()
                .unwrap_or(Lv::None),
        }
    }

    /// The effective level of user `u` on any object.
    fn level(&self, u: usize, id: ObjectId) -> Lv {
        if u == ORG_ADMIN {
            Lv::Admin
        } else {
            self.entry_or_inherited(u, id)
        }
    }

    /// The level that counts for linking `id`: on a library its own level, on another
    /// object the best level over the collections that hold it.
    fn level_on_linked(&self, u: usize, id: ObjectId) -> Lv {
        if u == ORG_ADMIN {
            return Lv::Admin;
        }
        match self.obj(id).kind {
            Kind::Library => self.level(u, id),
            Kind::Item => self
                .parents(id)
                .map(|c| self.level(u, c))
                .max()
                .unwrap_or(Lv::None),
        }
    }

    fn explicit_admins(&self, lib: ObjectId) -> BTreeSet<usize> {
        self.entries
            .iter()
            .filter(|&(&(c, _), &l)| c == lib && l == Lv::Admin)
            .map(|(&(_, u), _)| u)
            .collect()
    }

    fn live(&self, id: ObjectId) -> Result<(), Outcome> {
        if self.obj(id).live {
            Ok(())
        } else {
            Err(Outcome::NotFound)
        }
    }

    fn writable(step: &Step) -> Result<(), Outcome> {
        if step.read_only {
            Err(Outcome::ReadOnly)
        } else {
            Ok(())
        }
    }

    fn admin_on_collection(&self, u: usize, c: ObjectId) -> Result<(), Outcome> {
        if self.level(u, c) == Lv::Admin {
            Ok(())
        } else {
            Err(Outcome::Forbidden(On::Collection))
        }
    }

    fn apply(&mut self, step: &Step) -> Outcome {
        match self.try_apply(step) {
            Ok(()) => Outcome::Done,
            Err(o) => o,
        }
    }

    fn try_apply(&mut self, step: &Step) -> Result<(), Outcome> {
        let actor = step.actor;
        match step.act {
            Act::CreateLibrary { new } => {
                Self::writable(step)?;
                self.objects.push(Obj {
                    id: new,
                    kind: Kind::Library,
                    live: true,
                });
                self.entries.insert((new, actor), Lv::Admin);
            }
            Act::CreateIn { lib, new, kind } => {
                self.live(lib)?;
                Self::writable(step)?;
                self.admin_on_collection(actor, lib)?;
                self.objects.push(Obj {
                    id: new,
                    kind,
                    live: true,
                });
                self.edges.insert((lib, new));
            }
            Act::Link { collection, member } => {
                self.live(collection)?;
                if self.live(member).is_err() {
                    // A caller who may not change the collection learns nothing more.
                    Self::writable(step)?;
                    self.admin_on_collection(actor, collection)?;
                    return Err(Outcome::NotFound);
                }
                Self::writable(step)?;
                self.admin_on_collection(actor, collection)?;
                match self.level_on_linked(actor, member) {
                    Lv::None => return Err(Outcome::Hidden),
                    Lv::View => return Err(Outcome::Forbidden(On::Linked)),
                    Lv::Admin => {}
                }
                if self.edges.contains(&(collection, member)) {
                    return Ok(());
                }
                if self.self_and_descendants(member).contains(&collection) {
                    return Err(Outcome::Cycle);
                }
                self.edges.insert((collection, member));
            }
            Act::Unlink { collection, member } => {
                self.live(collection)?;
                Self::writable(step)?;
                self.admin_on_collection(actor, collection)?;
                if !self.edges.remove(&(collection, member)) {
                    return Err(Outcome::NotFound);
                }
                if self.parents(member).next().is_none() {
                    let i = self.objects.iter().position(|o| o.id == member).unwrap();
                    self.objects[i].live = false;
                }
            }
            Act::Grant { lib, user, level } => self.set_entry(step, lib, user, Some(level))?,
            Act::Revoke { lib, user } => self.set_entry(step, lib, user, None)?,
            Act::Rename { user } => {
                Self::writable(step)?;
                if actor != user && actor != ORG_ADMIN {
                    return Err(Outcome::NotSelf);
                }
                self.renames[user] += 1;
            }
        }
        Ok(())
    }

    fn set_entry(
        &mut self,
        step: &Step,
        lib: ObjectId,
        user: usize,
        level: Option<Lv>,
    ) -> Result<(), Outcome> {
        self.live(lib)?;
        Self::writable(step)?;
        self.admin_on_collection(step.actor, lib)?;
        if level != Some(Lv::Admin) && self.explicit_admins(lib) == BTreeSet::from([user]) {
            return Err(Outcome::LastAdmin);
        }
        match level {
            Some(l) => self.entries.insert((lib, user), l),
            None => self.entries.remove(&(lib, user)),
        };
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// The system under test: every decision is the domain's
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Default)]
struct Sut {
    /// In creation order: id, type, live.
    objects: Vec<(ObjectId, ObjectType, bool)>,
    graph: CollectionGraph,
    entries: BTreeMap<(ObjectId, UserId), PermissionLevel>,
    renames: BTreeMap<UserId, u32>,
}

fn caller(u: usize, read_only: bool) -> Caller {
    let c = Caller::new(user_id(u), u == ORG_ADMIN);
    if read_only {
        c.with_scope(ScopeSet::parse("read").unwrap())
    } else {
        c
    }
}

fn refusal(r: Refusal) -> Outcome {
    match r {
        Refusal::ReadOnly => Outcome::ReadOnly,
        Refusal::Forbidden(f) => Outcome::Forbidden(match f.subject {
            Subject::Collection => On::Collection,
            Subject::Linked => On::Linked,
        }),
        Refusal::Hidden => Outcome::Hidden,
        Refusal::NotSelf => Outcome::NotSelf,
    }
}

impl Sut {
    fn edges(&self) -> Vec<(ObjectId, ObjectId)> {
        self.graph
            .clone()
            .into_parents()
            .flat_map(|(m, ps)| ps.into_iter().map(move |p| (p, m)))
            .collect()
    }

    /// What a repository loads for `user`: here the whole graph and all their entries.
    fn access(&self, user: UserId) -> AccessView {
        AccessView::new(
            self.edges(),
            self.entries
                .iter()
                .filter(|&(&(_, u), _)| u == user)
                .map(|(&(c, _), &l)| (c, l)),
        )
    }

    fn gate(&self, caller: &Caller, action: Action) -> Result<(), Outcome> {
        authz::decide(caller, action, &self.access(caller.user()))
            .map(|_permit| ())
            .map_err(refusal)
    }

    fn object(&self, id: ObjectId) -> (ObjectType, bool) {
        self.objects
            .iter()
            .find(|o| o.0 == id)
            .map(|&(_, t, live)| (t, live))
            .unwrap()
    }

    fn live(&self, id: ObjectId) -> Result<(), Outcome> {
        if self.object(id).1 {
            Ok(())
        } else {
            Err(Outcome::NotFound)
        }
    }

    fn apply(&mut self, step: &Step) -> Outcome {
        match self.try_apply(step) {
            Ok(()) => Outcome::Done,
            Err(o) => o,
        }
    }

    fn try_apply(&mut self, step: &Step) -> Result<(), Outcome> {
        let me = caller(step.actor, step.read_only);
        match step.act {
            Act::CreateLibrary { new } => {
                self.gate(&me, Action::CreateLibrary)?;
                self.objects.push((new, ObjectType::Catalog, true));
                self.entries
                    .insert((new, me.user()), PermissionLevel::Admin);
            }
            Act::CreateIn { lib, new, kind } => {
                self.live(lib)?;
                self.gate(&me, Action::CreateIn { collection: lib })?;
                let t = match kind {
                    Kind::Library => ObjectType::Catalog,
                    Kind::Item => ObjectType::Video,
                };
                self.objects.push((new, t, true));
                self.graph.insert_edge(lib, new);
            }
            Act::Link { collection, member } => {
                self.live(collection)?;
                if self.live(member).is_err() {
                    self.gate(&me, Action::Edit { collection })?;
                    return Err(Outcome::NotFound);
                }
                self.gate(&me, Action::Link { collection, member })?;
                if self.graph.parents_of(member).any(|p| p == collection) {
                    return Ok(());
                }
                let collection_type = self.object(collection).0;
                self.graph
                    .try_add(collection, collection_type, member)
                    .map_err(|e| match e {
                        MembershipError::Cycle => Outcome::Cycle,
                        MembershipError::NotACollection => Outcome::NotACollection,
                    })?;
            }
            Act::Unlink { collection, member } => {
                self.live(collection)?;
                self.gate(&me, Action::Unlink { collection })?;
                if !self.graph.parents_of(member).any(|p| p == collection) {
                    return Err(Outcome::NotFound);
                }
                if self.graph.remove_edge(collection, member) == 0 {
                    let o = self.objects.iter_mut().find(|o| o.0 == member).unwrap();
                    o.2 = false;
                }
            }
            Act::Grant { lib, user, level } => {
                self.set_entry(&me, lib, user_id(user), Some(to_domain(level)))?;
            }
            Act::Revoke { lib, user } => self.set_entry(&me, lib, user_id(user), None)?,
            Act::Rename { user } => {
                let user = user_id(user);
                self.gate(&me, Action::Rename { user })?;
                *self.renames.entry(user).or_default() += 1;
            }
        }
        Ok(())
    }

    fn set_entry(
        &mut self,
        me: &Caller,
        lib: ObjectId,
        user: UserId,
        level: Option<PermissionLevel>,
    ) -> Result<(), Outcome> {
        self.live(lib)?;
        self.gate(me, Action::Grant { collection: lib })?;
        let admins: BTreeSet<UserId> = self
            .entries
            .iter()
            .filter(|&(&(c, _), &l)| c == lib && l == PermissionLevel::Admin)
            .map(|(&(_, u), _)| u)
            .collect();
        check_admin_change(&admins, user, level).map_err(|_| Outcome::LastAdmin)?;
        match level {
            Some(l) => self.entries.insert((lib, user), l),
            None => self.entries.remove(&(lib, user)),
        };
        Ok(())
    }

    /// The state in the model's terms.
    fn export(&self) -> World {
        let index = |user: UserId| (0..USERS).find(|&u| user_id(u) == user).unwrap();
        World {
            objects: self
                .objects
                .iter()
                .map(|&(id, t, live)| Obj {
                    id,
                    kind: if t.is_collection() {
                        Kind::Library
                    } else {
                        Kind::Item
                    },
                    live,
                })
                .collect(),
            edges: self.edges().into_iter().collect(),
            entries: self
                .entries
                .iter()
                .map(|(&(c, u), &l)| ((c, index(u)), from_domain(l)))
                .collect(),
            renames: std::array::from_fn(|u| {
                self.renames.get(&user_id(u)).copied().unwrap_or_default()
            }),
        }
    }
}

// ---------------------------------------------------------------------------
// Invariants of the system under test
// ---------------------------------------------------------------------------

/// Invariant 1: which rises of `user`'s level on `id` the step may cause. `before` and
/// `after` are the states around it.
fn rise_allowed(
    step: &Step,
    outcome: Outcome,
    before: &World,
    after: &World,
    user: usize,
    id: ObjectId,
) -> bool {
    let actor = step.actor;
    let admin_before = |x| before.level(actor, x) == Lv::Admin;
    outcome == Outcome::Done
        && match step.act {
            Act::CreateLibrary { new } => id == new && user == actor,
            Act::CreateIn { lib, new, .. } => id == new && admin_before(lib),
            Act::Link { collection, member } => {
                after.self_and_descendants(member).contains(&id)
                    && admin_before(member)
                    && admin_before(collection)
            }
            Act::Grant {
                lib, user: target, ..
            }
            | Act::Revoke { lib, user: target } => {
                user == target && after.self_and_descendants(lib).contains(&id) && admin_before(lib)
            }
            Act::Unlink { .. } | Act::Rename { .. } => false,
        }
}

/// Every user's effective level on every object, as the domain resolves it.
type Levels = BTreeMap<(usize, ObjectId), PermissionLevel>;

/// Checks invariants 1 to 5 after `step`, which took the state from `before` to `after`
/// (`after` is what `sut` exports); `levels_before` are the domain's levels before it.
/// `ever_admined` gathers the libraries that ever had an explicit admin. Returns the
/// domain's levels after the step.
fn check_invariants(
    step: &Step,
    outcome: Outcome,
    before: &World,
    after: &World,
    levels_before: &Levels,
    sut: &Sut,
    ever_admined: &mut BTreeSet<ObjectId>,
) -> Result<Levels, String> {
    if outcome != Outcome::Done && after != before {
        return Err(format!("refused ({outcome:?}) but the state changed"));
    }
    // 4. Acyclic (checked first: the naive levels below recurse up the graph).
    if !after.is_acyclic() {
        return Err("the membership graph has a cycle".into());
    }
    let access: Vec<AccessView> = (0..USERS).map(|u| sut.access(user_id(u))).collect();
    let mut levels = Levels::new();
    let mut naive = BTreeMap::new();
    for (u, access) in access.iter().enumerate() {
        for o in &after.objects {
            levels.insert((u, o.id), authz::level_on(&caller(u, false), access, o.id));
            naive.insert((u, o.id), after.level(u, o.id));
        }
    }
    // 1. Rises only by an admin of what changed (an org admin's level never changes:
    // it is admin everywhere, which 2 checks).
    for (&(u, id), &now) in &levels {
        let was = levels_before
            .get(&(u, id))
            .copied()
            .unwrap_or(PermissionLevel::None);
        if u != ORG_ADMIN && now > was && !rise_allowed(step, outcome, before, after, u, id) {
            return Err(format!(
                "u{u}'s level on {} rose from {was} to {now}",
                name(after, id)
            ));
        }
    }
    // 2. The domain's levels are the naive levels of the remaining entries.
    for (&(u, id), &got) in &levels {
        let want = to_domain(naive[&(u, id)]);
        if got != want {
            return Err(format!(
                "u{u} on {}: the domain resolves {got}, the entries give {want}",
                name(after, id)
            ));
        }
        let no_entries = !after.entries.keys().any(|&(_, v)| v == u);
        let floor = if u == ORG_ADMIN {
            PermissionLevel::Admin
        } else {
            PermissionLevel::None
        };
        if no_entries && got != floor {
            return Err(format!(
                "u{u} holds no entry but has {got} on {}",
                name(after, id)
            ));
        }
    }
    // 3. Reads through a collection need view on it (what is read through it does not
    // matter to the gate: one check per collection that holds something).
    let mut through: BTreeMap<ObjectId, ObjectId> = BTreeMap::new();
    for &(c, o) in &after.edges {
        if after.obj(c).live && after.obj(o).live {
            through.entry(c).or_insert(o);
        }
    }
    for (&c, &o) in &through {
        for (u, access) in access.iter().enumerate() {
            let may_view = naive[&(u, c)] >= Lv::View;
            for read_only in [false, true] {
                let who = caller(u, read_only);
                let read = authz::decide(&who, Action::Read { collection: c }, access).is_ok();
                let describe = authz::decide_describe(Some(&who), c, false, access).is_ok();
                if read != may_view || describe != may_view {
                    return Err(format!(
                        "u{u} (read-only: {read_only}) reading {} through {}: read {read}, \
                         describe {describe}, but view on it is {may_view}",
                        name(after, o),
                        name(after, c)
                    ));
                }
            }
        }
    }
    // 5. The last explicit admin stays.
    for lib in after.libraries() {
        if !after.explicit_admins(lib).is_empty() {
            ever_admined.insert(lib);
        }
    }
    for &lib in ever_admined.iter() {
        if after.explicit_admins(lib).is_empty() {
            return Err(format!("{} lost its last explicit admin", name(after, lib)));
        }
    }
    Ok(levels)
}

// ---------------------------------------------------------------------------
// Running steps on both implementations
// ---------------------------------------------------------------------------

/// `L3` for the library created fourth, `I5` for an item created sixth.
fn name(w: &World, id: ObjectId) -> String {
    match w.objects.iter().position(|o| o.id == id) {
        Some(i) if w.objects[i].kind == Kind::Library => format!("L{i}"),
        Some(i) => format!("I{i}"),
        None => format!("{id:?}"),
    }
}

fn describe_step(w: &World, s: &Step) -> String {
    let n = |id| name(w, id);
    let act = match s.act {
        Act::CreateLibrary { new } => format!("create library {}", n(new)),
        Act::CreateIn { lib, new, .. } => format!("create {} in {}", n(new), n(lib)),
        Act::Link { collection, member } => format!("link {} into {}", n(member), n(collection)),
        Act::Unlink { collection, member } => {
            format!("unlink {} from {}", n(member), n(collection))
        }
        Act::Grant { lib, user, level } => format!("grant {level:?} to u{user} on {}", n(lib)),
        Act::Revoke { lib, user } => format!("revoke u{user} on {}", n(lib)),
        Act::Rename { user } => format!("rename u{user}"),
    };
    let who = if s.actor == ORG_ADMIN {
        " (org admin)"
    } else {
        ""
    };
    let token = if s.read_only {
        " [read-only token]"
    } else {
        ""
    };
    format!("u{}{who}{token}: {act}", s.actor)
}

/// Both implementations, stepped together.
#[derive(Debug, Default)]
struct Harness {
    sut: Sut,
    model: World,
    /// The domain's levels after the last step.
    levels: Levels,
    ever_admined: BTreeSet<ObjectId>,
    created: usize,
    trace: Vec<(Step, Outcome)>,
}

impl Harness {
    fn new_id(&mut self) -> ObjectId {
        self.created += 1;
        object_id(self.created)
    }

    /// `msg` and the steps so far.
    fn failure(&self, msg: &str) -> String {
        let steps: Vec<String> = self
            .trace
            .iter()
            .map(|(s, o)| format!("{} -> {o:?}", describe_step(&self.model, s)))
            .collect();
        format!("{msg}\nsteps:\n  {}", steps.join("\n  "))
    }

    /// Applies `step` to both, compares them and checks the invariants.
    fn step(&mut self, step: Step) -> Result<Outcome, String> {
        let before = self.model.clone();
        let got = self.sut.apply(&step);
        let want = self.model.apply(&step);
        self.trace.push((step, got));
        if got != want {
            return Err(self.failure(&format!("the gate says {got:?}, the rules say {want:?}")));
        }
        let after = self.sut.export();
        if after != self.model {
            return Err(self.failure(&format!(
                "states differ:\n  sut   {after:?}\n  model {:?}",
                self.model
            )));
        }
        match check_invariants(
            &step,
            got,
            &before,
            &after,
            &self.levels,
            &self.sut,
            &mut self.ever_admined,
        ) {
            Ok(levels) => self.levels = levels,
            Err(msg) => return Err(self.failure(&msg)),
        }
        Ok(got)
    }

    /// A step the test expects to end as `want`.
    fn expect(&mut self, actor: usize, act: Act, want: Outcome) {
        let step = Step {
            actor,
            read_only: false,
            act,
        };
        match self.step(step) {
            Ok(got) => assert_eq!(got, want, "{}", self.failure("unexpected outcome")),
            Err(msg) => panic!("{msg}"),
        }
    }

    fn create_library(&mut self, actor: usize) -> ObjectId {
        let new = self.new_id();
        self.expect(actor, Act::CreateLibrary { new }, Outcome::Done);
        new
    }

    fn create_in(&mut self, actor: usize, lib: ObjectId, kind: Kind) -> ObjectId {
        let new = self.new_id();
        self.expect(actor, Act::CreateIn { lib, new, kind }, Outcome::Done);
        new
    }

    fn level(&self, u: usize, id: ObjectId) -> PermissionLevel {
        let c = caller(u, false);
        authz::level_on(&c, &self.sut.access(c.user()), id)
    }
}

// ---------------------------------------------------------------------------
// Random operation sequences
// ---------------------------------------------------------------------------

/// An operation whose objects are still indices into what exists when it runs.
#[derive(Debug, Clone)]
enum Op {
    CreateLibrary,
    CreateIn {
        lib: Index,
        kind: Kind,
    },
    Link {
        collection: Index,
        member: Index,
        /// With `steer`: link something the actor only views (the issue 17 attack).
        viewed: bool,
    },
    Unlink {
        edge: Index,
    },
    Grant {
        lib: Index,
        user: usize,
        level: Lv,
    },
    Revoke {
        lib: Index,
        user: usize,
    },
    Rename {
        user: usize,
    },
}

#[derive(Debug, Clone)]
struct Attempt {
    actor: usize,
    read_only: bool,
    /// Prefer libraries the actor administers as targets, and as what it links objects it
    /// administers or only views (so that most steps get past the first level check); a
    /// steer only chooses what is tried, it decides nothing.
    steer: bool,
    op: Op,
}

fn lv() -> impl Strategy<Value = Lv> {
    prop_oneof![Just(Lv::None), Just(Lv::View), Just(Lv::Admin)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => Just(Op::CreateLibrary),
        3 => any::<Index>().prop_map(|lib| Op::CreateIn { lib, kind: Kind::Item }),
        2 => any::<Index>().prop_map(|lib| Op::CreateIn { lib, kind: Kind::Library }),
        6 => (any::<Index>(), any::<Index>(), any::<bool>())
            .prop_map(|(collection, member, viewed)| Op::Link { collection, member, viewed }),
        2 => any::<Index>().prop_map(|edge| Op::Unlink { edge }),
        5 => (any::<Index>(), 0..USERS, lv())
            .prop_map(|(lib, user, level)| Op::Grant { lib, user, level }),
        2 => (any::<Index>(), 0..USERS).prop_map(|(lib, user)| Op::Revoke { lib, user }),
        1 => (0..USERS).prop_map(|user| Op::Rename { user }),
    ]
}

fn attempt() -> impl Strategy<Value = Attempt> {
    (
        0..USERS,
        proptest::bool::weighted(0.15),
        proptest::bool::weighted(0.75),
        op(),
    )
        .prop_map(|(actor, read_only, steer, op)| Attempt {
            actor,
            read_only,
            steer,
            op,
        })
}

impl Harness {
    /// The concrete step of `a` in the current world; `None` when it names a library or
    /// a membership and there is none yet.
    fn concretize(&mut self, a: &Attempt) -> Option<Step> {
        let fresh = object_id(self.created + 1);
        let w = &self.model;
        let libraries = w.libraries();
        let administered: Vec<ObjectId> = libraries
            .iter()
            .copied()
            .filter(|&l| w.obj(l).live && w.level(a.actor, l) == Lv::Admin)
            .collect();
        let targets = if a.steer && !administered.is_empty() {
            administered
        } else {
            libraries
        };
        let pick_lib = |i: &Index| (!targets.is_empty()).then(|| *i.get(&targets));
        let pick_member = |i: &Index, collection: ObjectId, viewed: bool| {
            let want = if viewed { Lv::View } else { Lv::Admin };
            let seen: Vec<ObjectId> = w
                .objects
                .iter()
                .filter(|o| o.live && o.id != collection)
                .filter(|o| w.level_on_linked(a.actor, o.id) == want)
                .map(|o| o.id)
                .collect();
            if a.steer && !seen.is_empty() {
                *i.get(&seen)
            } else {
                i.get(&w.objects).id
            }
        };
        let act = match &a.op {
            Op::CreateLibrary => Act::CreateLibrary { new: fresh },
            Op::CreateIn { lib, kind } => {
                let lib = pick_lib(lib)?;
                Act::CreateIn {
                    lib,
                    new: fresh,
                    kind: *kind,
                }
            }
            &Op::Link {
                ref collection,
                ref member,
                viewed,
            } => {
                let collection = pick_lib(collection)?;
                Act::Link {
                    collection,
                    member: pick_member(member, collection, viewed),
                }
            }
            Op::Unlink { edge } => {
                let edges: Vec<_> = w.edges.iter().copied().collect();
                if edges.is_empty() {
                    return None;
                }
                let (collection, member) = *edge.get(&edges);
                Act::Unlink { collection, member }
            }
            &Op::Grant {
                ref lib,
                user,
                level,
            } => Act::Grant {
                lib: pick_lib(lib)?,
                user,
                level,
            },
            &Op::Revoke { ref lib, user } => Act::Revoke {
                lib: pick_lib(lib)?,
                user,
            },
            &Op::Rename { user } => Act::Rename { user },
        };
        if matches!(act, Act::CreateLibrary { .. } | Act::CreateIn { .. }) {
            self.created += 1;
        }
        Some(Step {
            actor: a.actor,
            read_only: a.read_only,
            act,
        })
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The gate agrees with the rules on every step, and invariants 1 to 5 hold.
    #[test]
    fn the_gate_follows_the_rules_and_keeps_the_invariants(
        attempts in proptest::collection::vec(attempt(), 1..40)
    ) {
        let mut h = Harness::default();
        // Every user starts with a library of its own, so that links and grants between
        // users happen early.
        for u in (0..USERS).filter(|&u| u != ORG_ADMIN) {
            h.create_library(u);
        }
        for a in &attempts {
            let Some(step) = h.concretize(a) else { continue };
            if let Err(msg) = h.step(step) {
                return Err(TestCaseError::fail(msg));
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Issue 17: a viewer re-sharing what it only views
// ---------------------------------------------------------------------------

const A_ADMIN: usize = 0;
const VIEWER: usize = 1;

/// User 0 administers library A, which holds sub-library S (holding item J) and the
/// private item I; user 1 has `view` on A and administers its own library VB.
struct Issue17 {
    h: Harness,
    a: ObjectId,
    s: ObjectId,
    i: ObjectId,
    j: ObjectId,
    vb: ObjectId,
}

fn issue_17_world() -> Issue17 {
    let mut h = Harness::default();
    let a = h.create_library(A_ADMIN);
    let s = h.create_in(A_ADMIN, a, Kind::Library);
    let i = h.create_in(A_ADMIN, a, Kind::Item);
    let j = h.create_in(A_ADMIN, s, Kind::Item);
    h.expect(
        A_ADMIN,
        Act::Grant {
            lib: a,
            user: VIEWER,
            level: Lv::View,
        },
        Outcome::Done,
    );
    let vb = h.create_library(VIEWER);
    for x in [a, s, i, j] {
        assert_eq!(h.level(VIEWER, x), PermissionLevel::View);
    }
    Issue17 { h, a, s, i, j, vb }
}

#[test]
fn issue_17_a_a_viewer_cannot_link_a_sub_library_into_its_own_library() {
    let Issue17 {
        mut h, s, j, vb, ..
    } = issue_17_world();
    h.expect(
        VIEWER,
        Act::Link {
            collection: vb,
            member: s,
        },
        Outcome::Forbidden(On::Linked),
    );
    assert_eq!(h.level(VIEWER, s), PermissionLevel::View);
    assert_eq!(h.level(VIEWER, j), PermissionLevel::View);
}

#[test]
fn issue_17_b_a_viewer_cannot_link_a_private_item_into_its_own_library() {
    let Issue17 { mut h, i, vb, .. } = issue_17_world();
    h.expect(
        VIEWER,
        Act::Link {
            collection: vb,
            member: i,
        },
        Outcome::Forbidden(On::Linked),
    );
    assert_eq!(h.level(VIEWER, i), PermissionLevel::View);
}

#[test]
fn issue_17_c_a_viewer_cannot_place_the_library_it_views_under_its_own() {
    let Issue17 { mut h, a, vb, .. } = issue_17_world();
    h.expect(
        VIEWER,
        Act::Link {
            collection: vb,
            member: a,
        },
        Outcome::Forbidden(On::Linked),
    );
    assert_eq!(h.level(VIEWER, a), PermissionLevel::View);
}

#[test]
fn issue_17_d_a_removed_viewer_keeps_no_level() {
    let Issue17 {
        mut h,
        a,
        s,
        i,
        j,
        vb,
    } = issue_17_world();
    for member in [s, i, a] {
        h.expect(
            VIEWER,
            Act::Link {
                collection: vb,
                member,
            },
            Outcome::Forbidden(On::Linked),
        );
    }
    h.expect(
        A_ADMIN,
        Act::Revoke {
            lib: a,
            user: VIEWER,
        },
        Outcome::Done,
    );
    for x in [a, s, i, j] {
        assert_eq!(h.level(VIEWER, x), PermissionLevel::None);
    }
    assert_eq!(h.level(VIEWER, vb), PermissionLevel::Admin);
}

#[test]
fn issue_17_an_admin_of_both_sides_still_links() {
    let Issue17 {
        mut h, s, j, vb, ..
    } = issue_17_world();
    h.expect(
        A_ADMIN,
        Act::Grant {
            lib: s,
            user: VIEWER,
            level: Lv::Admin,
        },
        Outcome::Done,
    );
    h.expect(
        VIEWER,
        Act::Link {
            collection: vb,
            member: s,
        },
        Outcome::Done,
    );
    assert_eq!(h.level(VIEWER, j), PermissionLevel::Admin);
}
