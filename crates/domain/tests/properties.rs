//! Property tests of the domain: permission resolution against a naive
//! reference, the acyclicity of the collection graph, the single-use token
//! state machines, identifier parsing and the text / redirect URI parsers.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};

use medialib_domain::oauth::{
    ClientId, CodeChallenge, CodePresentation, CodeVerifier, IssuedCode, RedeemError, RedirectUri,
    RefreshError, RefreshPresentation, RefreshTokenRecord, RefreshTokenState, Revocation, ScopeSet,
    Spent, StoredCode, TokenLifetimes, TokenRandomness,
};
use medialib_domain::{
    AccessView, Caller, CollectionGraph, GrantId, Lifetime, MembershipError, ObjectId, ObjectType,
    OrgNamespace, PermissionLevel, Timestamp, Title, TokenDigest, TokenKind, UserId,
};
use proptest::prelude::*;
use proptest::sample::Index;

// ---------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------

const MAX_COLLECTIONS: usize = 12;

/// `n` distinct collection ids. `seed` shuffles how id order relates to index
/// order, so the resolver cannot lean on ids being sorted topologically.
fn ids(n: usize, seed: u8) -> Vec<ObjectId> {
    let ns = OrgNamespace::from_random([seed; 16]);
    (0..n)
        .map(|i| {
            let mut r = [seed; 16];
            r[0] = u8::try_from(i).unwrap();
            ObjectId::generate(&ns, r)
        })
        .collect()
}

fn caller(org_admin: bool) -> Caller {
    let ns = OrgNamespace::from_random([77; 16]);
    Caller::new(UserId::generate(&ns, [1; 16]), org_admin)
}

fn level() -> impl Strategy<Value = PermissionLevel> {
    prop_oneof![
        Just(PermissionLevel::None),
        Just(PermissionLevel::View),
        Just(PermissionLevel::Admin),
    ]
}

// ---------------------------------------------------------------------------
// Permission resolution over random DAGs
// ---------------------------------------------------------------------------

/// A random acyclic collection graph: edges `(collection, member)` only go from
/// a lower to a higher index, so index order is a topological order.
#[derive(Debug, Clone)]
struct World {
    n: usize,
    seed: u8,
    edges: Vec<(usize, usize)>,
    explicit: Vec<Option<PermissionLevel>>,
}

fn world() -> impl Strategy<Value = World> {
    (1..=MAX_COLLECTIONS, any::<u8>())
        .prop_flat_map(|(n, seed)| {
            let pairs: Vec<(usize, usize)> = (0..n)
                .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
                .collect();
            let m = pairs.len();
            (
                Just(n),
                Just(seed),
                Just(pairs),
                proptest::collection::vec(proptest::bool::weighted(0.3), m),
                proptest::collection::vec(proptest::option::weighted(0.35, level()), n),
            )
        })
        .prop_map(|(n, seed, pairs, mask, explicit)| World {
            n,
            seed,
            edges: pairs
                .into_iter()
                .zip(mask)
                .filter_map(|(p, keep)| keep.then_some(p))
                .collect(),
            explicit,
        })
}

impl World {
    fn ids(&self) -> Vec<ObjectId> {
        ids(self.n, self.seed)
    }

    fn view(&self) -> AccessView {
        let ids = self.ids();
        AccessView::new(
            self.edges.iter().map(|&(c, m)| (ids[c], ids[m])),
            self.explicit
                .iter()
                .enumerate()
                .filter_map(|(i, l)| l.map(|l| (ids[i], l))),
        )
    }

    /// What `AccessView` answers for every collection, by index.
    fn resolved(&self, org_admin: bool) -> Vec<PermissionLevel> {
        let view = self.view();
        let c = caller(org_admin);
        self.ids()
            .into_iter()
            .map(|id| view.effective_level(&c, id))
            .collect()
    }

    /// The naive reference (DECISIONS.md §3): the explicit entry if any, else
    /// the max over the parents, else none. Index order is topological.
    fn reference(&self) -> Vec<PermissionLevel> {
        let mut out: Vec<PermissionLevel> = Vec::with_capacity(self.n);
        for j in 0..self.n {
            let level = self.explicit[j].unwrap_or_else(|| {
                self.edges
                    .iter()
                    .filter(|&&(_, m)| m == j)
                    .map(|&(c, _)| out[c])
                    .max()
                    .unwrap_or(PermissionLevel::None)
            });
            out.push(level);
        }
        out
    }

    /// `x` and everything below it.
    fn self_and_descendants(&self, x: usize) -> BTreeSet<usize> {
        let mut seen = BTreeSet::from([x]);
        let mut stack = vec![x];
        while let Some(c) = stack.pop() {
            for &(p, m) in &self.edges {
                if p == c && seen.insert(m) {
                    stack.push(m);
                }
            }
        }
        seen
    }

    fn with_entry(&self, x: usize, l: Option<PermissionLevel>) -> World {
        let mut w = self.clone();
        w.explicit[x] = l;
        w
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn effective_level_matches_the_reference(w in world()) {
        prop_assert_eq!(w.resolved(false), w.reference());
    }

    #[test]
    fn org_admins_are_admin_everywhere(w in world()) {
        prop_assert!(w.resolved(true).iter().all(|l| *l == PermissionLevel::Admin));
        // Also on a collection the view knows nothing about.
        let stranger = ids(1, w.seed.wrapping_add(1))[0];
        prop_assert_eq!(w.view().effective_level(&caller(true), stranger), PermissionLevel::Admin);
        prop_assert_eq!(w.view().effective_level(&caller(false), stranger), PermissionLevel::None);
    }

    #[test]
    fn an_explicit_entry_only_affects_its_collection_and_descendants(
        w in world(),
        x in any::<Index>(),
        l in level(),
    ) {
        let x = x.index(w.n);
        let before = w.resolved(false);
        let after = w.with_entry(x, Some(l)).resolved(false);
        prop_assert_eq!(after[x], l, "the explicit entry is the level on X itself");
        let affected = w.self_and_descendants(x);
        for k in 0..w.n {
            if !affected.contains(&k) {
                prop_assert_eq!(before[k], after[k], "collection {} is not below {}", k, x);
            }
        }
    }

    #[test]
    fn raising_an_entry_never_lowers_any_level(
        w in world(),
        x in any::<Index>(),
        a in level(),
        b in level(),
    ) {
        let x = x.index(w.n);
        let (lo, hi) = (a.min(b), a.max(b));
        let low = w.with_entry(x, Some(lo)).resolved(false);
        let high = w.with_entry(x, Some(hi)).resolved(false);
        for k in 0..w.n {
            prop_assert!(high[k] >= low[k], "collection {}: {:?} < {:?}", k, high[k], low[k]);
        }
    }

    #[test]
    fn without_entries_below_descendants_inherit_at_least_the_ancestors_level(
        w in world(),
        x in any::<Index>(),
        a in level(),
        b in level(),
    ) {
        let x = x.index(w.n);
        let below = w.self_and_descendants(x);
        let mut w = w;
        for &d in &below {
            w.explicit[d] = None;
        }
        let (lo, hi) = (a.min(b), a.max(b));
        let low = w.with_entry(x, Some(lo)).resolved(false);
        let high = w.with_entry(x, Some(hi)).resolved(false);
        for &d in &below {
            prop_assert!(high[d] >= low[d], "descendant {} lowered", d);
            prop_assert!(high[d] >= hi, "descendant {} below its ancestor's {:?}", d, hi);
            prop_assert!(low[d] >= lo, "descendant {} below its ancestor's {:?}", d, lo);
        }
    }
}

// ---------------------------------------------------------------------------
// CollectionGraph::try_add keeps the graph acyclic
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum GraphOp {
    Add {
        collection: usize,
        member: usize,
        collection_type: ObjectType,
    },
    Remove {
        collection: usize,
        member: usize,
    },
}

const GRAPH_NODES: usize = 8;

fn object_type() -> impl Strategy<Value = ObjectType> {
    prop_oneof![
        8 => Just(ObjectType::Catalog),
        1 => proptest::sample::select(ObjectType::ALL.to_vec()),
    ]
}

fn graph_op() -> impl Strategy<Value = GraphOp> {
    let node = 0..GRAPH_NODES;
    prop_oneof![
        8 => (node.clone(), node.clone(), object_type()).prop_map(|(c, m, t)| GraphOp::Add {
            collection: c,
            member: m,
            collection_type: t,
        }),
        1 => (node.clone(), node).prop_map(|(c, m)| GraphOp::Remove { collection: c, member: m }),
    ]
}

/// Whether `to` is reachable from `from` going down (collection → member), `from` included.
fn reaches_down(edges: &BTreeSet<(usize, usize)>, from: usize, to: usize) -> bool {
    let mut seen = BTreeSet::from([from]);
    let mut stack = vec![from];
    while let Some(c) = stack.pop() {
        if c == to {
            return true;
        }
        for &(p, m) in edges {
            if p == c && seen.insert(m) {
                stack.push(m);
            }
        }
    }
    false
}

/// A three-colour DFS: whether the edge set has a cycle.
fn has_cycle(edges: &BTreeSet<(usize, usize)>, n: usize) -> bool {
    fn visit(v: usize, edges: &BTreeSet<(usize, usize)>, colour: &mut [u8]) -> bool {
        colour[v] = 1;
        for &(p, m) in edges {
            if p != v {
                continue;
            }
            if colour[m] == 1 || (colour[m] == 0 && visit(m, edges, colour)) {
                return true;
            }
        }
        colour[v] = 2;
        false
    }
    let mut colour = vec![0u8; n];
    (0..n).any(|v| colour[v] == 0 && visit(v, edges, &mut colour))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn try_add_never_closes_a_cycle_and_refuses_only_cycles(
        ops in proptest::collection::vec(graph_op(), 1..48),
        seed in any::<u8>(),
    ) {
        let ids = ids(GRAPH_NODES, seed);
        let mut g = CollectionGraph::new();
        let mut mirror: BTreeSet<(usize, usize)> = BTreeSet::new();
        for op in ops {
            match op {
                GraphOp::Add { collection: c, member: m, collection_type } => {
                    // member == collection, or member is an ancestor of collection.
                    let would_cycle = reaches_down(&mirror, m, c);
                    match g.try_add(ids[c], collection_type, ids[m]) {
                        Ok(()) => {
                            prop_assert!(collection_type.is_collection());
                            prop_assert!(!would_cycle, "accepted {} -> {} closes a cycle", c, m);
                            mirror.insert((c, m));
                        }
                        Err(MembershipError::NotACollection) => {
                            prop_assert!(!collection_type.is_collection());
                        }
                        Err(MembershipError::Cycle) => {
                            prop_assert!(collection_type.is_collection());
                            prop_assert!(would_cycle, "refused {} -> {} that closes no cycle", c, m);
                        }
                    }
                }
                GraphOp::Remove { collection: c, member: m } => {
                    mirror.remove(&(c, m));
                    let left = mirror.iter().filter(|&&(_, mm)| mm == m).count();
                    prop_assert_eq!(g.remove_edge(ids[c], ids[m]), left);
                }
            }
            prop_assert!(!has_cycle(&mirror, GRAPH_NODES));
            // The graph holds exactly the mirror's edges and no node is its own ancestor.
            for (k, &id) in ids.iter().enumerate() {
                let parents: BTreeSet<ObjectId> = g.parents_of(id).collect();
                let want: BTreeSet<ObjectId> =
                    mirror.iter().filter(|&&(_, m)| m == k).map(|&(c, _)| ids[c]).collect();
                prop_assert_eq!(parents, want);
                let ancestors = g.ancestors(id);
                prop_assert!(!ancestors.contains(&id), "{} is its own ancestor", k);
                let want: BTreeSet<ObjectId> = (0..GRAPH_NODES)
                    .filter(|&a| a != k && reaches_down(&mirror, a, k))
                    .map(|a| ids[a])
                    .collect();
                prop_assert_eq!(ancestors, want);
            }
        }
    }
}

/// Two graphs with the same edges should compare equal, whatever their history.
#[test]
fn graph_equality_ignores_history() {
    let v = ids(2, 1);
    let mut g = CollectionGraph::new();
    g.insert_edge(v[0], v[1]);
    assert_eq!(g.remove_edge(v[0], v[1]), 0);
    assert_eq!(g.parents_of(v[1]).count(), 0);
    assert_eq!(g, CollectionGraph::new(), "no edges on either side");
}

// ---------------------------------------------------------------------------
// Token state machines
// ---------------------------------------------------------------------------

const NOW: i64 = 1_700_000_000;

fn lifetimes() -> TokenLifetimes {
    TokenLifetimes {
        access: Lifetime::from_seconds(3600).unwrap(),
        refresh: Lifetime::from_seconds(86_400).unwrap(),
        // The rule these properties check is the strict one: a spent token presented again
        // is reuse (the retry grace has tests of its own, in oauth_flow.rs).
        retry_grace: None,
    }
}

/// Distinct randomness for the `k`-th minting.
fn randomness(k: u32) -> TokenRandomness {
    let mut access = [0xAA; 32];
    let mut refresh = [0x55; 32];
    access[..4].copy_from_slice(&k.to_le_bytes());
    refresh[..4].copy_from_slice(&k.to_le_bytes());
    TokenRandomness { access, refresh }
}

fn client() -> ClientId {
    ClientId::parse("lms").unwrap()
}

fn the_user() -> UserId {
    UserId::generate(&OrgNamespace::from_random([3; 16]), [4; 16])
}

fn the_grant() -> GrantId {
    GrantId::parse("0123456789abcdef0123456789abcdef").unwrap()
}

#[derive(Debug, Clone, Copy)]
enum FamilyOp {
    /// Present the newest refresh token.
    RotateCurrent,
    /// Present any token of the family (often an old, spent one).
    Present(Index),
}

fn family_op() -> impl Strategy<Value = FamilyOp> {
    prop_oneof![
        3 => Just(FamilyOp::RotateCurrent),
        2 => any::<Index>().prop_map(FamilyOp::Present),
    ]
}

/// An in-memory refresh-token store doing what the adapter does around `rotate`.
#[derive(Debug)]
struct Family {
    store: BTreeMap<TokenDigest, RefreshTokenRecord>,
    /// Every refresh token of the family, oldest first.
    order: Vec<TokenDigest>,
    minted: u32,
}

impl Family {
    fn new() -> Self {
        let (_, digest) = TokenKind::Refresh.mint(randomness(0).refresh);
        let rec = RefreshTokenRecord {
            digest,
            grant: the_grant(),
            client: client(),
            user: the_user(),
            scope: ScopeSet::DEFAULT,
            expires_at: Timestamp::from_epoch_seconds(NOW).plus(lifetimes().refresh),
            spent: None,
            revoked: Revocation::NONE,
        };
        Self {
            store: BTreeMap::from([(digest, rec)]),
            order: vec![digest],
            minted: 1,
        }
    }

    /// Presents `digest`; on success the old token is spent and the new one stored.
    /// On reuse, with `revoke_on_reuse`, every still-valid token of the grant is revoked.
    fn present(
        &mut self,
        digest: TokenDigest,
        now: i64,
        revoke_on_reuse: bool,
    ) -> Result<TokenDigest, RefreshError> {
        let rec = self.store[&digest].clone();
        let p = RefreshPresentation {
            client: &client(),
            scope: None,
        };
        let random = randomness(self.minted);
        self.minted += 1;
        match rec
            .clone()
            .rotate(&p, random, Timestamp::from_epoch_seconds(now), lifetimes())
        {
            Ok(rot) => {
                assert_eq!(rot.spent(), digest);
                assert_eq!(rot.grant(), the_grant());
                let new = rot.refresh().clone();
                assert!(!self.store.contains_key(&new.digest), "a fresh digest");
                self.store.get_mut(&digest).unwrap().spent = Some(Spent {
                    at: Timestamp::from_epoch_seconds(now),
                    successor: None,
                });
                self.store.insert(
                    new.digest,
                    RefreshTokenRecord {
                        digest: new.digest,
                        expires_at: new.expires_at,
                        spent: None,
                        revoked: Revocation::NONE,
                        ..rec
                    },
                );
                self.order.push(new.digest);
                Ok(new.digest)
            }
            Err(e) => {
                if matches!(e, RefreshError::Reused { .. }) && revoke_on_reuse {
                    for r in self.store.values_mut() {
                        if r.state() == RefreshTokenState::Valid {
                            r.revoked.grant = true;
                        }
                    }
                }
                Err(e)
            }
        }
    }
}

/// How a code redemption attempt is made.
#[derive(Debug, Clone, Copy)]
struct Attempt {
    right_client: bool,
    right_redirect: bool,
    /// 0: the right verifier (or none without a challenge), 1: none, 2: a wrong one.
    verifier: u8,
    seconds_later: i64,
}

fn attempt() -> impl Strategy<Value = Attempt> {
    (
        proptest::bool::weighted(0.8),
        proptest::bool::weighted(0.8),
        prop_oneof![6 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8)],
        0i64..90,
    )
        .prop_map(
            |(right_client, right_redirect, verifier, seconds_later)| Attempt {
                right_client,
                right_redirect,
                verifier,
                seconds_later,
            },
        )
}

const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CODE_TTL: i64 = 60;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn each_refresh_token_works_exactly_once(
        ops in proptest::collection::vec(family_op(), 1..40),
        revoke_on_reuse in any::<bool>(),
    ) {
        let mut fam = Family::new();
        let mut succeeded: BTreeSet<TokenDigest> = BTreeSet::new();
        let mut presentations: BTreeMap<TokenDigest, usize> = BTreeMap::new();
        let mut revoked = false;
        for (step, op) in ops.into_iter().enumerate() {
            let target = match op {
                FamilyOp::RotateCurrent => *fam.order.last().unwrap(),
                FamilyOp::Present(i) => fam.order[i.index(fam.order.len())],
            };
            let now = NOW + i64::try_from(step).unwrap();
            let seen_before = presentations.get(&target).copied().unwrap_or(0);
            let got = fam.present(target, now, revoke_on_reuse);
            *presentations.entry(target).or_default() += 1;
            if succeeded.contains(&target) {
                // Any presentation after the successful one is reuse, naming the family.
                prop_assert_eq!(got, Err(RefreshError::Reused { grant: the_grant() }));
                revoked |= revoke_on_reuse;
            } else if revoked {
                // Only the newest token is unspent; the reuse revoked it with its grant.
                prop_assert_eq!(target, *fam.order.last().unwrap());
                prop_assert_eq!(got, Err(RefreshError::Revoked));
            } else {
                prop_assert_eq!(seen_before, 0, "a token succeeds on its first presentation only");
                prop_assert!(got.is_ok(), "first presentation of a live token: {:?}", got);
                succeeded.insert(target);
            }
        }
        // Every token but the newest was spent exactly once.
        prop_assert_eq!(succeeded.len(), fam.order.len() - 1);
        prop_assert!(!succeeded.contains(fam.order.last().unwrap()));
    }

    #[test]
    fn a_code_is_redeemed_at_most_once(
        with_challenge in any::<bool>(),
        offline in any::<bool>(),
        attempts in proptest::collection::vec(attempt(), 1..8),
    ) {
        let redirect = RedirectUri::parse("https://lms.example.edu/cb").unwrap();
        let verifier = CodeVerifier::parse(VERIFIER).unwrap();
        let (_, digest) = TokenKind::Code.mint([8; 32]);
        let issued = IssuedCode {
            digest,
            client: client(),
            redirect_uri: redirect.clone(),
            user: the_user(),
            scope: ScopeSet::DEFAULT,
            offline,
            challenge: with_challenge.then(|| CodeChallenge::of(&verifier)),
            expires_at: Timestamp::from_epoch_seconds(NOW + CODE_TTL),
        };
        let other = ClientId::parse("other").unwrap();
        let wrong_verifier = "b".repeat(43);
        let mut stored = StoredCode::Unused(issued);
        let mut successes = 0;
        let mut first_outcome: Option<Option<GrantId>> = None;
        for (i, a) in attempts.iter().enumerate() {
            let v = match (a.verifier, with_challenge) {
                (0, true) => Some(VERIFIER),
                (0, false) | (1, _) => None,
                _ => Some(wrong_verifier.as_str()),
            };
            let p = CodePresentation {
                client: if a.right_client { &client() } else { &other },
                redirect_uri: if a.right_redirect { Some(redirect.as_str()) } else { Some("https://evil.example/cb") },
                verifier: v,
            };
            let all_right = a.right_client
                && a.right_redirect
                && (a.verifier == 0 || (a.verifier == 1 && !with_challenge))
                && a.seconds_later < CODE_TTL;
            let got = stored.clone().redeem(&p, Timestamp::from_epoch_seconds(NOW + a.seconds_later));
            match &first_outcome {
                None => {
                    // The first attempt decides; the adapter spends the code either way.
                    prop_assert_eq!(got.is_ok(), all_right, "attempt {:?}: {:?}", a, got);
                    let grant = match &got {
                        Ok(spec) => {
                            prop_assert_eq!(spec.client(), &client());
                            prop_assert_eq!(spec.user(), the_user());
                            prop_assert_eq!(spec.offline(), offline);
                            successes += 1;
                            Some(the_grant())
                        }
                        Err(_) => None,
                    };
                    first_outcome = Some(grant);
                    stored = StoredCode::Redeemed { grant };
                }
                Some(grant) => {
                    prop_assert_eq!(got, Err(RedeemError::Replayed { grant: *grant }), "attempt {}", i);
                }
            }
        }
        prop_assert!(successes <= 1);
    }
}

// ---------------------------------------------------------------------------
// UUIDs
// ---------------------------------------------------------------------------

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn generated_ids_round_trip(ns in any::<[u8; 16]>(), random in any::<[u8; 16]>(), mask in any::<u32>()) {
        let namespace = OrgNamespace::from_random(ns);
        prop_assert_eq!(OrgNamespace::parse(&namespace.to_string()), Ok(namespace));
        let id = ObjectId::generate(&namespace, random);
        let text = id.to_string();
        prop_assert_eq!(text.len(), 36);
        prop_assert_eq!(&text[14..15], "5", "version 5");
        prop_assert_eq!(text.to_lowercase(), text.clone());
        prop_assert_eq!(ObjectId::parse(&text), Ok(id));
        prop_assert_eq!(text.parse::<ObjectId>(), Ok(id));
        prop_assert_eq!(ObjectId::parse(&text.replace('-', "")), Ok(id));
        prop_assert_eq!(ObjectId::parse(&text.to_uppercase()), Ok(id));
        prop_assert_eq!(ObjectId::parse(&text.to_uppercase().replace('-', "")), Ok(id));
        let mixed: String = text
            .chars()
            .enumerate()
            .map(|(i, c)| if mask >> (i % 32) & 1 == 1 { c.to_ascii_uppercase() } else { c })
            .collect();
        prop_assert_eq!(ObjectId::parse(&mixed), Ok(id));
    }

    #[test]
    fn any_sixteen_bytes_round_trip(bytes in any::<[u8; 16]>()) {
        let plain = hex(&bytes);
        let id = ObjectId::parse(&plain).unwrap();
        prop_assert_eq!(id.as_bytes(), &bytes);
        let text = id.to_string();
        prop_assert_eq!(text.replace('-', ""), plain.clone());
        prop_assert_eq!(ObjectId::parse(&text), Ok(id));
        prop_assert_eq!(ObjectId::parse(&plain.to_uppercase()), Ok(id));
        prop_assert_eq!(UserId::parse(&text).map(|u| *u.as_bytes()), Ok(bytes));
        prop_assert_eq!(GrantId::parse(&text).map(|g| *g.as_bytes()), Ok(bytes));
    }

    #[test]
    fn misplaced_dashes_are_refused(bytes in any::<[u8; 16]>(), pos in 0usize..35) {
        let text = ObjectId::parse(&hex(&bytes)).unwrap().to_string();
        let mut b = text.clone().into_bytes();
        if (b[pos] == b'-') != (b[pos + 1] == b'-') {
            b.swap(pos, pos + 1);
            let moved = String::from_utf8(b).unwrap();
            prop_assert!(ObjectId::parse(&moved).is_err(), "{}", moved);
        }
        // A dash in place of a digit (still 36 characters) is refused too.
        let mut b = text.into_bytes();
        if b[pos] != b'-' {
            b[pos] = b'-';
            let extra = String::from_utf8(b).unwrap();
            prop_assert!(ObjectId::parse(&extra).is_err(), "{}", extra);
        }
    }

    #[test]
    fn uuid_parsing_never_panics(
        s in prop_oneof![
            any::<String>(),
            "[0-9a-fA-F-]{30,38}",
            "[0-9a-fé{}:-]{32,36}",
            "(urn:uuid:)?\\{?[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\\}?",
        ],
    ) {
        if let Ok(id) = ObjectId::parse(&s) {
            prop_assert!(s.len() == 32 || s.len() == 36, "{:?}", s);
            prop_assert_eq!(id.to_string().replace('-', ""), s.to_ascii_lowercase().replace('-', ""));
        }
        let _ = OrgNamespace::parse(&s);
    }
}

// ---------------------------------------------------------------------------
// Title and RedirectUri
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn title_accepts_exactly_up_to_255_chars(
        chars in prop_oneof![
            proptest::collection::vec(any::<char>(), 0..320),
            proptest::collection::vec(any::<char>(), 250..=260),
            (250usize..=260, any::<char>()).prop_map(|(n, c)| vec![c; n]),
        ],
    ) {
        let s: String = chars.iter().collect();
        match Title::parse(&s) {
            Ok(t) => {
                prop_assert!(chars.len() <= 255, "{} chars accepted", chars.len());
                prop_assert!(!chars.contains(&'\0'), "a NUL was accepted");
                prop_assert_eq!(t.as_str(), s.as_str());
            }
            Err(_) => prop_assert!(
                chars.len() > 255 || chars.contains(&'\0'),
                "{} chars without NUL refused",
                chars.len()
            ),
        }
    }

    #[test]
    fn redirect_uri_parsing_never_panics_and_parsed_uris_match_themselves(
        s in prop_oneof![
            any::<String>(),
            "(https?://)?(127\\.0\\.0\\.1|\\[::1\\]|localhost|[a-zA-Z0-9.@:\\[\\]é]{0,10})(:[0-9]{0,7})?[/?#a-z:@\\[\\] %-]{0,12}",
        ],
    ) {
        if let Ok(u) = RedirectUri::parse(&s) {
            prop_assert_eq!(u.as_str(), s.as_str());
            prop_assert!(u.matches(&u));
            prop_assert!(u.matches(&u.clone()));
            prop_assert!(s.starts_with("https://") || s.starts_with("http://"));
            prop_assert!(!s.contains('#'));
            let authority = s.split_once("://").unwrap().1.split(['/', '?']).next().unwrap();
            prop_assert!(!authority.is_empty() && !authority.contains('@'), "{:?}", s);
            prop_assert!(s.bytes().all(|b| b > b' ' && b < 0x7f), "{:?}", s);
            prop_assert!(s.len() <= RedirectUri::MAX_LEN);
            prop_assert_eq!(RedirectUri::parse(u.as_str()), Ok(u.clone()));
        }
    }

    #[test]
    fn redirect_matching_is_exact_except_loopback_ports(
        a in "https?://(127\\.0\\.0\\.1|\\[::1\\]|localhost|a\\.example)(:[0-9]{1,5})?(/cb|/x)?",
        b in "https?://(127\\.0\\.0\\.1|\\[::1\\]|localhost|a\\.example)(:[0-9]{1,5})?(/cb|/x)?",
    ) {
        if let (Ok(ra), Ok(rb)) = (RedirectUri::parse(&a), RedirectUri::parse(&b)) {
            prop_assert_eq!(ra.matches(&rb), rb.matches(&ra), "symmetric");
            if ra.matches(&rb) && a != b {
                prop_assert!(a.starts_with("http://") && b.starts_with("http://"), "{} ~ {}", a, b);
                let ha = host_of(&a);
                prop_assert!(ha == "127.0.0.1" || ha == "[::1]", "{} ~ {}", a, b);
                prop_assert_eq!(ha, host_of(&b));
            }
        }
    }
}

/// The host of an `http://` URI generated by the strategies above.
fn host_of(uri: &str) -> String {
    let rest = uri.strip_prefix("http://").unwrap_or("");
    let authority = rest.split('/').next().unwrap_or("");
    match authority.find(']') {
        Some(close) => authority[..=close].to_owned(),
        None => authority.split(':').next().unwrap_or("").to_owned(),
    }
}

/// `Timestamp::seconds_until` should answer for any pair of timestamps.
#[test]
fn seconds_until_never_overflows() {
    let early = Timestamp::from_epoch_seconds(i64::MIN);
    let late = Timestamp::from_epoch_seconds(1);
    assert_eq!(early.seconds_until(late), i64::MAX);
}
