//! The store itself: its namespace, clones sharing the data. (Users, credentials, sessions,
//! pending sign-ins and housekeeping are the contract suite's, `contract::memory::*`.)

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "tests (helpers included) fail by panicking"
)]

use std::sync::Arc;

use medialib_adapters_memory::MemoryStore;
use medialib_adapters_memory::testing::{CountingRandom, Harness};
use medialib_domain::OrgNamespace;
use medialib_ports::{OrgRepository, Store};

#[test]
fn the_namespace_is_made_as_the_diesel_adapter_makes_it() {
    let store = MemoryStore::new([0xAB; 16]);
    let ns = store.namespace().unwrap();
    // `Database::ensure_namespace([0xAB; 16])` stores exactly this (its own unit test).
    assert_eq!(ns.to_string(), "abababab-abab-4bab-abab-abababababab");
    let fixed = OrgNamespace::from_random([1; 16]);
    assert_eq!(
        MemoryStore::with_namespace(fixed).namespace().unwrap(),
        fixed
    );
    // Clones share the data; a `Store` trait object is what the services take.
    let store = MemoryStore::new([7; 16]);
    let h = Harness::with_store(Arc::new(store.clone()), Arc::new(CountingRandom::default()));
    let alice = h.user("alice", false);
    let clone: Arc<dyn Store> = Arc::new(store.clone());
    assert_eq!(clone.user(alice.id).unwrap(), Some(alice));
    assert!(format!("{store:?}").contains("users: 1"));
}
