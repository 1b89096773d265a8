//! The example of README.md ("Testing business rules without a database"): a use case on
//! the in-memory store, in milliseconds, with no database.

#![allow(clippy::unwrap_used, reason = "tests fail by panicking")]

use medialib_adapters_memory::testing::Harness;
use medialib_domain::{ObjectPatch, PermissionLevel, Refusal, Title};
use medialib_ports::services::UpdateObjectFailed;

#[test]
fn a_viewer_cannot_rename_a_library_but_its_admin_can() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let bob = h.user("bob", false);
    let lib = h.library(&alice, "Lectures");
    h.grant(&alice, lib, &bob, PermissionLevel::View);
    let rename = || ObjectPatch {
        title: Some(Title::parse("Renamed").unwrap()),
        ..ObjectPatch::default()
    };
    let media = h.services.media();
    let refused = media.update_object(&bob.as_caller(), lib, lib, rename());
    assert!(matches!(
        refused,
        Err(UpdateObjectFailed::Refused(Refusal::Forbidden(_)))
    ));
    let renamed = media.update_object(&alice.as_caller(), lib, lib, rename());
    assert_eq!(renamed.unwrap().fields().title.as_str(), "Renamed");
}
