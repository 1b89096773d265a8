//! `read_facts` (the one-step read of describe and catalog GET) against the fine-grained
//! repository reads it stands for, on a `MemoryStore`.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "tests (helpers included) fail by panicking"
)]

use std::collections::BTreeSet;

use medialib_adapters_memory::testing::Harness;
use medialib_domain::{Caller, ObjectId, ObjectType, PermissionLevel, TokenDigest};
use medialib_ports::Reader;

/// `read_facts` gives what the fine-grained reads give (a port of the diesel adapter's
/// `facts.rs` test): a graph with inherited, blocked and admin entries, a soft-deleted
/// object, and the readers anonymous, each user, and tokens live, revoked and unknown.
#[test]
fn read_facts_agree_with_the_fine_grained_reads() {
    let h = Harness::new();
    let owner = h.user("owner", true);
    let u0 = h.user("u0", false);
    let oc = owner.as_caller();
    let a = h.library(&owner, "A");
    let b = h.library(&owner, "B");
    let s = h.object_in(&owner, a, ObjectType::Catalog, "S");
    h.services.media().add_member(&oc, b, s).unwrap();
    let v = h.object_in(&owner, s, ObjectType::Video, "V");
    let i = h.object_in(&owner, b, ObjectType::Image, "I");
    h.services.media().remove_member(&oc, b, i).unwrap();
    let t = h.object_in(&owner, a, ObjectType::Catalog, "T");
    let x = h.object_in(&owner, t, ObjectType::Video, "X");
    for (coll, level) in [
        (a, PermissionLevel::View),
        (s, PermissionLevel::None),
        (b, PermissionLevel::Admin),
    ] {
        h.services
            .people()
            .grant_permission(
                &oc,
                coll,
                medialib_ports::services::people::Grantee::Id(u0.id),
                level,
            )
            .unwrap();
    }
    let creds = h.client();
    let live = h.tokens(&creds, &u0, false);
    let revoked = h.tokens(&creds, &u0, false);
    h.services
        .oauth()
        .revoke(&creds, revoked.access_token.expose())
        .unwrap();
    let digests = [
        TokenDigest::of(&live.access_token),
        TokenDigest::of(&revoked.access_token),
        h.session_cookie().1,
    ];
    let objects = [
        a,
        b,
        s,
        v,
        i,
        t,
        x,
        ObjectId::parse(&"f".repeat(32)).unwrap(),
    ];
    let mut readers = vec![
        Reader::Anonymous,
        Reader::User(owner.id),
        Reader::User(u0.id),
    ];
    readers.extend(digests.iter().map(Reader::Bearer));
    let mut seen = BTreeSet::new();
    for reader in &readers {
        for &coll in &objects {
            for &o in &objects {
                let facts = h.store.read_facts(*reader, coll, o).unwrap();
                let what = format!("{reader:?} c={coll} o={o}");
                assert_eq!(
                    facts.collection_live,
                    h.store.object(coll).unwrap().is_some(),
                    "{what}"
                );
                assert_eq!(facts.member, h.store.is_member(coll, o).unwrap(), "{what}");
                assert_eq!(facts.object, h.store.object_any_state(o).unwrap(), "{what}");
                let bearer = match reader {
                    Reader::Bearer(d) => h.store.bearer(d).unwrap(),
                    _ => None,
                };
                assert_eq!(facts.bearer, bearer, "{what}");
                let holder = match reader {
                    Reader::Anonymous => None,
                    Reader::User(u) => Some(*u),
                    Reader::Bearer(d) => h.store.access_token(d).unwrap().map(|t| t.user),
                };
                if let Some(u) = holder {
                    let caller = Caller::new(u, false);
                    let expected = h
                        .store
                        .access_view(u, &[coll])
                        .unwrap()
                        .effective_level(&caller, coll);
                    assert_eq!(
                        facts.access.effective_level(&caller, coll),
                        expected,
                        "{what}"
                    );
                    seen.insert(expected);
                }
            }
        }
    }
    assert_eq!(seen.len(), 3, "none, view and admin are all exercised");
    // Inherited through T from A; blocked on S by the explicit none.
    let caller = u0.as_caller();
    let f = h.store.read_facts(Reader::User(u0.id), x, x).unwrap();
    assert_eq!(f.access.effective_level(&caller, x), PermissionLevel::View);
    let f = h
        .store
        .read_facts(Reader::Bearer(&digests[0]), s, v)
        .unwrap();
    assert!(f.collection_live && f.member);
    assert_eq!(f.access.effective_level(&caller, s), PermissionLevel::None);
    assert!(!f.bearer.unwrap().token.revoked.is_revoked());
    let f = h
        .store
        .read_facts(Reader::Bearer(&digests[1]), s, v)
        .unwrap();
    assert!(f.bearer.unwrap().token.revoked.is_revoked());
    assert_eq!(
        h.store
            .read_facts(Reader::Bearer(&digests[2]), s, v)
            .unwrap()
            .bearer,
        None
    );
}
