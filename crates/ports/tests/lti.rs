//! The LTI use cases on the in-memory store: consumers, and LTI 1.1 launches (signature,
//! nonce, sign-in, course library, levels). No database: `cargo test -p medialib-ports`.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "tests (helpers included) fail by panicking"
)]

use medialib_adapters_memory::testing::Harness;
use medialib_domain::lti::CourseRole;
use medialib_domain::lti::oauth1::{OAuth1Refusal, sign};
use medialib_domain::lti::v1p1::LaunchRefusal;
use medialib_domain::{ObjectType, PermissionLevel, Timestamp, UniqueId};
use medialib_ports::LtiConsumer;
use medialib_ports::services::lti::{AddConsumerFailed, LaunchNext, Lti11LaunchFailed, LtiLaunch};

const URL: &str = "https://media.example.edu/api/lti/";
const RETURN: &str = "https://moodle.example.edu/local/warpwire/html/warpwire.html";

/// A harness with one registered consumer.
fn with_consumer() -> (Harness, LtiConsumer) {
    let h = Harness::new();
    let consumer = h.services.lti().add_consumer("Moodle").unwrap();
    (h, consumer)
}

/// The parameters of a launch by `user` with `roles` in course `c-1`.
fn params(message: &str, user: &str, roles: &str) -> Vec<(String, String)> {
    [
        ("lti_version", "LTI-1p0"),
        ("lti_message_type", message),
        ("user_id", user),
        ("ext_user_username", user),
        ("lis_person_name_given", "Ada"),
        ("lis_person_name_family", "Lovelace"),
        ("roles", roles),
        ("context_id", "c-1"),
        ("context_label", "BIO101"),
        ("launch_presentation_return_url", RETURN),
    ]
    .iter()
    .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
    .collect()
}

/// `params` signed by `consumer` now, with nonce `nonce`.
fn signed(
    h: &Harness,
    consumer: &LtiConsumer,
    params: Vec<(String, String)>,
    nonce: &str,
) -> Vec<(String, String)> {
    sign(URL, params, &consumer.key, &consumer.secret, nonce, h.now()).unwrap()
}

fn launch(h: &Harness, params: Vec<(String, String)>) -> Result<LtiLaunch, Lti11LaunchFailed> {
    h.services.lti().launch_v1p1(URL, params)
}

fn pick_as(h: &Harness, c: &LtiConsumer, user: &str, nonce: &str) -> LtiLaunch {
    launch(
        h,
        signed(
            h,
            c,
            params("ContentItemSelectionRequest", user, "Instructor"),
            nonce,
        ),
    )
    .unwrap()
}

fn view_as(
    h: &Harness,
    c: &LtiConsumer,
    user: &str,
    nonce: &str,
) -> Result<LtiLaunch, Lti11LaunchFailed> {
    launch(
        h,
        signed(
            h,
            c,
            params("basic-lti-launch-request", user, "Learner"),
            nonce,
        ),
    )
}

#[test]
fn a_teachers_first_launch_signs_in_and_makes_the_course_library() {
    let (h, c) = with_consumer();
    let l = pick_as(&h, &c, "teacher", "n1");
    assert_eq!(
        l.session.user.unique_id,
        UniqueId::parse("teacher").unwrap()
    );
    assert_eq!(l.session.user.first_name.as_str(), "Ada");
    assert_eq!(l.role, CourseRole::Teacher);
    let LaunchNext::Pick(pick) = &l.next else {
        panic!("{:?}", l.next)
    };
    assert_eq!(pick.return_url, RETURN);
    let library = l
        .course_library
        .expect("a teacher's launch makes the library");
    let object = h.store.object(library).unwrap().unwrap();
    assert_eq!(object.object_type(), ObjectType::Catalog);
    assert_eq!(object.fields().title.as_str(), "BIO101");
    assert_eq!(h.level(&l.session.user, library), PermissionLevel::Admin);
    // The session is live.
    let cookie = l.session.cookie.expose();
    assert_eq!(
        h.services
            .sessions()
            .session_user(cookie)
            .unwrap()
            .unwrap()
            .id,
        l.session.user.id
    );
    // A second teacher joins the same library as an admin.
    let other = pick_as(&h, &c, "assistant", "n2");
    assert_eq!(other.course_library, Some(library));
    assert_eq!(
        h.level(&other.session.user, library),
        PermissionLevel::Admin
    );
}

#[test]
fn a_learner_views_the_course_library_once_a_teacher_made_it() {
    let (h, c) = with_consumer();
    let before = view_as(&h, &c, "student", "n1").unwrap();
    assert_eq!(
        before.course_library, None,
        "a learner's launch makes no library"
    );
    assert_eq!(before.next, LaunchNext::Library);
    let library = pick_as(&h, &c, "teacher", "n2").course_library.unwrap();
    let after = view_as(&h, &c, "student", "n3").unwrap();
    assert_eq!(after.course_library, Some(library));
    assert_eq!(h.level(&after.session.user, library), PermissionLevel::View);
    // With the custom parameter `media`, the launch leads to that player.
    let media = h.object_in(
        &pick_as(&h, &c, "teacher", "n4").session.user,
        library,
        ObjectType::Video,
        "Cells",
    );
    let mut p = params("basic-lti-launch-request", "student", "Learner");
    p.push(("custom_media".into(), media.to_string()));
    assert_eq!(
        launch(&h, signed(&h, &c, p, "n5")).unwrap().next,
        LaunchNext::Player(media)
    );
}

#[test]
fn a_launch_raises_a_level_and_never_lowers_one() {
    let (h, c) = with_consumer();
    let teacher = pick_as(&h, &c, "teacher", "n1");
    let library = teacher.course_library.unwrap();
    // The teacher launches again as a learner (a role changed in the LMS): still admin.
    let again = view_as(&h, &c, "teacher", "n2").unwrap();
    assert_eq!(
        h.level(&again.session.user, library),
        PermissionLevel::Admin
    );
    // An explicit `none` set by the library's admin is not undone by a launch.
    let student = view_as(&h, &c, "student", "n3").unwrap().session.user;
    h.grant(
        &teacher.session.user,
        library,
        &student,
        PermissionLevel::None,
    );
    view_as(&h, &c, "student", "n4").unwrap();
    assert_eq!(
        h.store.explicit_level(library, student.id).unwrap(),
        Some(PermissionLevel::None)
    );
}

#[test]
fn a_nonce_is_single_use_but_a_refused_launch_does_not_spend_it() {
    let (h, c) = with_consumer();
    let p = signed(
        &h,
        &c,
        params("basic-lti-launch-request", "s", "Learner"),
        "once",
    );
    launch(&h, p.clone()).unwrap();
    assert_eq!(launch(&h, p).unwrap_err(), Lti11LaunchFailed::Replay);
    // Another consumer's launch may use the same nonce.
    let other = h.services.lti().add_consumer("Canvas").unwrap();
    launch(
        &h,
        signed(
            &h,
            &other,
            params("basic-lti-launch-request", "s", "Learner"),
            "once",
        ),
    )
    .unwrap();
    // A learner's refused pick leaves its nonce for a fixed retry.
    let refused = signed(
        &h,
        &c,
        params("ContentItemSelectionRequest", "s", "Learner"),
        "fresh",
    );
    assert_eq!(
        launch(&h, refused).unwrap_err(),
        Lti11LaunchFailed::LearnerMayNotPick
    );
    launch(
        &h,
        signed(
            &h,
            &c,
            params("basic-lti-launch-request", "s", "Learner"),
            "fresh",
        ),
    )
    .unwrap();
}

#[test]
fn a_nonce_is_forgotten_once_its_timestamp_left_the_window() {
    let (h, c) = with_consumer();
    let p = signed(
        &h,
        &c,
        params("basic-lti-launch-request", "s", "Learner"),
        "n",
    );
    launch(&h, p.clone()).unwrap();
    h.advance(901);
    // Past the window the timestamp refuses the replay; the nonce store was pruned.
    assert!(matches!(
        launch(&h, p).unwrap_err(),
        Lti11LaunchFailed::Signature(OAuth1Refusal::Stale { .. })
    ));
    launch(
        &h,
        signed(
            &h,
            &c,
            params("basic-lti-launch-request", "s", "Learner"),
            "n",
        ),
    )
    .unwrap();
}

#[test]
fn forged_stale_and_unknown_launches_are_refused_with_their_reason() {
    let (h, c) = with_consumer();
    let mut tampered = signed(
        &h,
        &c,
        params("basic-lti-launch-request", "s", "Learner"),
        "a",
    );
    for (n, v) in &mut tampered {
        if n == "roles" {
            *v = "Instructor".into();
        }
    }
    assert_eq!(
        launch(&h, tampered).unwrap_err(),
        Lti11LaunchFailed::Signature(OAuth1Refusal::BadSignature)
    );
    let stranger = LtiConsumer {
        key: "nobody".into(),
        ..c.clone()
    };
    assert_eq!(
        launch(
            &h,
            signed(
                &h,
                &stranger,
                params("basic-lti-launch-request", "s", "Learner"),
                "b"
            )
        )
        .unwrap_err(),
        Lti11LaunchFailed::UnknownConsumer
    );
    let mut early = params("basic-lti-launch-request", "s", "Learner");
    early.retain(|(n, _)| n != "lti_version");
    let hour_ago = Timestamp::from_epoch_seconds(h.now().epoch_seconds() - 3600);
    let stale = sign(
        URL,
        params("basic-lti-launch-request", "s", "Learner"),
        &c.key,
        &c.secret,
        "c",
        hour_ago,
    )
    .unwrap();
    assert_eq!(
        launch(&h, stale).unwrap_err(),
        Lti11LaunchFailed::Signature(OAuth1Refusal::Stale { skew: -3600 })
    );
    assert_eq!(
        launch(&h, signed(&h, &c, early, "d")).unwrap_err(),
        Lti11LaunchFailed::Launch(LaunchRefusal::Version)
    );
    assert!(h.services.lti().remove_consumer(&c.key).unwrap());
    assert_eq!(
        view_as(&h, &c, "s", "e").unwrap_err(),
        Lti11LaunchFailed::UnknownConsumer
    );
}

#[test]
fn consumers_get_fresh_keys_and_secrets_and_a_valid_name() {
    let h = Harness::new();
    let lti = h.services.lti();
    let a = lti.add_consumer(" Moodle ").unwrap();
    let b = lti.add_consumer("Moodle").unwrap();
    assert_eq!(a.name, "Moodle");
    assert_ne!(a.key, b.key);
    assert_ne!(a.secret, b.secret);
    assert!(a.key.starts_with("ml-") && a.key.len() == 27, "{}", a.key);
    assert_eq!(a.secret.expose().len(), 64);
    assert_eq!(lti.consumers().unwrap().len(), 2);
    for bad in ["", "  ", "a\nb"] {
        assert_eq!(
            lti.add_consumer(bad).unwrap_err(),
            AddConsumerFailed::BadName,
            "{bad:?}"
        );
    }
    assert_eq!(
        lti.add_consumer(&"x".repeat(101)).unwrap_err(),
        AddConsumerFailed::BadName
    );
    assert!(lti.remove_consumer(&a.key).unwrap());
    assert!(!lti.remove_consumer(&a.key).unwrap());
    assert_eq!(lti.consumers().unwrap(), vec![b]);
}

#[test]
fn a_return_context_of_ours_leads_there_for_everyone_and_another_sites_is_ignored() {
    let (h, c) = with_consumer();
    let mut p = params("ContentItemSelectionRequest", "student", "Learner");
    p.push((
        "returnContext".into(),
        "https://media.example.edu/w/abc123".into(),
    ));
    let l = launch(&h, signed(&h, &c, p, "n1")).unwrap();
    assert_eq!(l.next, LaunchNext::Page("/w/abc123".into()));
    let mut p = params("ContentItemSelectionRequest", "teacher", "Instructor");
    p.push((
        "returnContext".into(),
        "https://media.example.edu/m/xyz".into(),
    ));
    assert_eq!(
        launch(&h, signed(&h, &c, p, "n2")).unwrap().next,
        LaunchNext::Page("/m/xyz".into())
    );
    // Another site's address is no reason to let a learner in, nor a place to send anyone.
    let mut p = params("ContentItemSelectionRequest", "student", "Learner");
    p.push((
        "returnContext".into(),
        "https://evil.example/w/abc123".into(),
    ));
    assert_eq!(
        launch(&h, signed(&h, &c, p, "n3")).unwrap_err(),
        Lti11LaunchFailed::LearnerMayNotPick
    );
    let mut p = params("ContentItemSelectionRequest", "teacher", "Instructor");
    p.push((
        "returnContext".into(),
        "https://evil.example/w/abc123".into(),
    ));
    assert!(matches!(
        launch(&h, signed(&h, &c, p, "n4")).unwrap().next,
        LaunchNext::Pick(_)
    ));
}

#[test]
fn platforms_are_registered_checked_and_once() {
    use medialib_domain::lti::v1p3::{Platform, UniqueIdClaim};
    use medialib_ports::services::lti::AddPlatformFailed;
    let h = Harness::new();
    let lti = h.services.lti();
    let platform = Platform {
        issuer: "https://moodle.example.edu".into(),
        client_id: "c1".into(),
        deployments: vec!["2".into(), "1".into(), "2".into()],
        auth_url: "https://moodle.example.edu/auth".into(),
        token_url: "https://moodle.example.edu/token".into(),
        jwks_url: "https://moodle.example.edu/jwks".into(),
        unique_id_claim: UniqueIdClaim::Subject,
    };
    let added = lti.add_platform(platform.clone()).unwrap();
    assert_eq!(added.deployments, ["1", "2"], "sorted, once each");
    assert_eq!(lti.platforms().unwrap(), [added]);
    assert_eq!(
        lti.add_platform(platform.clone()).unwrap_err(),
        AddPlatformFailed::Exists
    );
    let unchecked = Platform {
        client_id: "c2".into(),
        jwks_url: "not a url".into(),
        ..platform
    };
    assert!(matches!(
        lti.add_platform(unchecked).unwrap_err(),
        AddPlatformFailed::Invalid(e) if e.field == "--jwks-url"
    ));
    assert_eq!(
        lti.platforms().unwrap().len(),
        1,
        "nothing of a refused one is kept"
    );
    assert!(
        lti.remove_platform("https://moodle.example.edu", "c1")
            .unwrap()
    );
    assert!(lti.platforms().unwrap().is_empty());
}
