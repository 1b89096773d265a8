//! A scripted walk through the permission rules (DECISIONS.md §3, revised 2026-11-24), over
//! HTTP, by several users: `owner`, `alice`, `bob` and the organization admin `root`.
//!
//! [`script`] is a table of steps: who acts, what request, the status the rules require, and
//! exactly how the observable state must change. After every step the walk reads the state
//! back through the API ([`Snapshot`]: every user's access to every library, memberships,
//! names, the video's title) and checks
//!
//! - the table: the status, and that the snapshot changed exactly as written (no more, no less);
//! - (a) a user's access to a library only rises through an act of someone who administered
//!   that library before the step, or of an org admin (or by creating it);
//! - (b) access is what the rule makes of the entries and memberships an org admin reads
//!   (an explicit entry decides, else the best over the parents, else none), so a user
//!   whose every entry reaching a library is gone has no access to it;
//! - (c) adding a library into itself or a descendant is a 409, and (d) removing or demoting
//!   the last admin is a 409 (both are steps of the table, with no change).
//!
//! Every deviation is collected and the test fails at the end with all of them, in order.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use medialib_domain::User;
use reqwest::{Method, StatusCode};

use super::{Answer, ApiApp, Backend};

/// A user's effective level on a library, as the API shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    None,
    View,
    Admin,
}

use Level::{Admin, View};

impl Level {
    fn parse(s: &str) -> Self {
        match s {
            "none" => Self::None,
            "view" => View,
            "admin" => Admin,
            other => panic!("unknown level {other}"),
        }
    }
}

/// The users whose access is snapshotted. `root` (org admin) is admin everywhere.
const PEOPLE: [&str; 3] = ["owner", "alice", "bob"];
const ROOT: &str = "root";

/// Each person's own library, made before the script (their names are read through it).
const HOMES: [(&str, &str); 3] = [("owner", "A"), ("alice", "AL"), ("bob", "BL")];

/// One request of the script. Labels name libraries (`A`, `S`, ...), media (`V`) and users.
#[derive(Debug, Clone, Copy)]
enum Act {
    /// `PUT /api/describe/c/{parent or 0}/o/0` with `type`, `title`.
    Create {
        label: &'static str,
        kind: &'static str,
        parent: Option<&'static str>,
    },
    /// `PUT /api/permission/c/{lib}/o/{user}` with `level`.
    Grant {
        lib: &'static str,
        user: &'static str,
        level: &'static str,
    },
    /// `DELETE /api/permission/c/{lib}/o/{user}`.
    Revoke {
        lib: &'static str,
        user: &'static str,
    },
    /// `PUT /api/catalog/c/{into}/o/{item}`.
    Link {
        into: &'static str,
        item: &'static str,
    },
    /// `DELETE /api/catalog/c/{from}/o/{item}`.
    Unlink {
        from: &'static str,
        item: &'static str,
    },
    /// `POST /api/user/c/{via}/o/{user}` with `firstName`.
    Rename {
        via: &'static str,
        user: &'static str,
        first: &'static str,
    },
    /// `POST /api/user/c/{lib}/o/0` with `uniqueId` = user and `firstName`.
    AddByUniqueId {
        lib: &'static str,
        user: &'static str,
        first: &'static str,
    },
    /// `POST /api/describe/c/{via}/o/{item}` with `type=video`, `public=true`, `title`.
    Publish {
        via: &'static str,
        item: &'static str,
        title: &'static str,
    },
}

/// One observable change of the state.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Change {
    /// `user`'s access to `lib` is now `Level`.
    Access(&'static str, &'static str, Level),
    /// `child` is now (`true`) or no longer (`false`) a member of `parent`.
    Member(&'static str, &'static str, bool),
    /// `user`'s first name is now this.
    Name(&'static str, String),
    /// The medium's "title, public" is now this.
    Media(&'static str, String),
}

use Change::{Access, Member};

fn name(user: &'static str, first: &str) -> Change {
    Change::Name(user, first.to_owned())
}

fn media(item: &'static str, title: &str, public: bool) -> Change {
    Change::Media(item, format!("{title}, public={public}"))
}

/// One row of the table.
#[derive(Debug)]
struct Step {
    actor: &'static str,
    act: Act,
    status: u16,
    changes: Vec<Change>,
    why: &'static str,
}

fn step(
    actor: &'static str,
    act: Act,
    status: u16,
    changes: Vec<Change>,
    why: &'static str,
) -> Step {
    Step {
        actor,
        act,
        status,
        changes,
        why,
    }
}

fn create(label: &'static str, kind: &'static str, parent: &'static str) -> Act {
    Act::Create {
        label,
        kind,
        parent: Some(parent),
    }
}
fn library(label: &'static str) -> Act {
    Act::Create {
        label,
        kind: "catalog",
        parent: None,
    }
}
fn grant(lib: &'static str, user: &'static str, level: &'static str) -> Act {
    Act::Grant { lib, user, level }
}
fn revoke(lib: &'static str, user: &'static str) -> Act {
    Act::Revoke { lib, user }
}
fn link(item: &'static str, into: &'static str) -> Act {
    Act::Link { into, item }
}
fn unlink(item: &'static str, from: &'static str) -> Act {
    Act::Unlink { from, item }
}
fn rename(user: &'static str, via: &'static str, first: &'static str) -> Act {
    Act::Rename { via, user, first }
}
fn add_by_unique_id(user: &'static str, lib: &'static str, first: &'static str) -> Act {
    Act::AddByUniqueId { lib, user, first }
}
fn publish(item: &'static str, via: &'static str, title: &'static str) -> Act {
    Act::Publish { via, item, title }
}

/// The script. Before it: `owner` has library A, `alice` AL, `bob` BL (each admin of their
/// own only), everyone's first name is "Ada".
#[rustfmt::skip]
fn script() -> Vec<Step> {
    vec![
        step("owner", create("S", "catalog", "A"), 201,
            vec![Member("A", "S", true), Access("owner", "S", Admin)],
            "a sub-library: its creator administers it through A"),
        step("owner", create("V", "video", "A"), 201,
            vec![Member("A", "V", true), media("V", "V", false)],
            "a private video in A"),
        step("owner", grant("A", "alice", "view"), 201,
            vec![Access("alice", "A", View), Access("alice", "S", View)],
            "view flows down from A to S"),
        step("alice", link("S", "AL"), 403, vec![],
            "hole 1: a viewer of S cannot place it under her own library (she would be admin of S)"),
        step("alice", link("V", "AL"), 403, vec![],
            "hole 1: a viewer cannot re-share media into her own library"),
        step("alice", publish("V", "AL", "Pwned"), 404, vec![],
            "hole 1: V is not in AL, so it cannot be edited through AL"),
        step("alice", link("A", "AL"), 403, vec![],
            "hole 1: a viewer cannot place A under a library she administers"),
        step("alice", grant("AL", "bob", "admin"), 201,
            vec![Access("bob", "AL", Admin)],
            "a second admin of AL gets AL only, nothing of A"),
        step("bob", add_by_unique_id("alice", "BL", "Evil"), 403, vec![],
            "hole 2: adding an existing user by uniqueId cannot rename her"),
        step("bob", grant("BL", "alice", "none"), 201, vec![],
            "an explicit `none` entry: no access either way"),
        step("bob", rename("alice", "BL", "Evil"), 403, vec![],
            "hole 2: listing someone on one's library gives no right to rename them"),
        step("alice", rename("alice", "AL", "Alicia"), 202,
            vec![name("alice", "Alicia")],
            "a user renames herself"),
        step(ROOT, rename("bob", "AL", "Robert"), 202,
            vec![name("bob", "Robert")],
            "an org admin renames anyone"),
        step("owner", link("A", "S"), 409, vec![],
            "(c) A into its own descendant S: the graph stays acyclic"),
        step("owner", link("S", "S"), 409, vec![],
            "(c) S into itself"),
        step("owner", revoke("A", "owner"), 409, vec![],
            "(d) the last admin of A cannot be removed"),
        step("owner", grant("A", "owner", "view"), 409, vec![],
            "(d) nor demoted"),
        step("owner", grant("A", "alice", "admin"), 201,
            vec![Access("alice", "A", Admin), Access("alice", "S", Admin)],
            "admin flows down from A to S"),
        step("alice", link("S", "AL"), 201,
            vec![Member("AL", "S", true), Access("bob", "S", Admin)],
            "an admin of S and AL may link: AL's other admin now administers S"),
        step("alice", link("V", "AL"), 201,
            vec![Member("AL", "V", true)],
            "an admin of a library holding V may share V"),
        step("owner", revoke("A", "alice"), 200,
            vec![Access("alice", "A", Level::None)],
            "(b) her entry on AL still reaches S, so S stays hers"),
        step("alice", unlink("S", "AL"), 200,
            vec![Member("AL", "S", false), Access("alice", "S", Level::None), Access("bob", "S", Level::None)],
            "(b) no entry of alice or bob reaches S any more"),
        step("alice", link("S", "AL"), 404, vec![],
            "she can no longer even see S: answered like an unknown uuid"),
        step(ROOT, link("S", "BL"), 201,
            vec![Member("BL", "S", true), Access("bob", "S", Admin)],
            "an org admin links anything; alice's explicit `none` on BL keeps her out"),
        step("bob", grant("S", "alice", "view"), 201,
            vec![Access("alice", "S", View)],
            "bob administers S through BL, so he may grant on it"),
        step("owner", grant("S", "bob", "none"), 201,
            vec![Access("bob", "S", Level::None)],
            "an explicit `none` overrides what BL gives"),
        step("alice", library("N"), 201,
            vec![Access("alice", "N", Admin)],
            "any user creates a top-level library and administers it"),
        step("owner", link("N", "S"), 404, vec![],
            "owner administers S but cannot see N"),
        step("alice", grant("N", "owner", "view"), 201,
            vec![Access("owner", "N", View)],
            "owner may now see N"),
        step("owner", link("N", "S"), 403, vec![],
            "view on N is not enough to share it"),
    ]
}

/// What the API shows, read after each step.
#[derive(Debug, Clone, Default)]
struct Snapshot {
    /// (user, library) → the user's access, from their own calls.
    access: BTreeMap<(&'static str, &'static str), Level>,
    /// (parent, child) memberships among the tracked objects, as `root` lists them.
    members: BTreeSet<(&'static str, &'static str)>,
    /// (library, user) → explicit level, as `root` reads the permission entries.
    entries: BTreeMap<(&'static str, &'static str), Level>,
    /// user → first name, as the user reads itself.
    names: BTreeMap<&'static str, String>,
    /// medium → "title, public=…", as `root` reads it through a library holding it.
    media: BTreeMap<&'static str, String>,
}

impl Snapshot {
    fn level(&self, user: &str, lib: &str) -> Level {
        self.access
            .iter()
            .find(|((u, l), _)| *u == user && *l == lib)
            .map_or(Level::None, |(_, level)| *level)
    }

    /// The changes from `self` to `after` (a library or medium new in `after` starts from
    /// no access and no title).
    fn diff(&self, after: &Self) -> Vec<Change> {
        let mut out = Vec::new();
        for (&(user, lib), &level) in &after.access {
            if self.level(user, lib) != level {
                out.push(Access(user, lib, level));
            }
        }
        for &(p, c) in after.members.difference(&self.members) {
            out.push(Member(p, c, true));
        }
        for &(p, c) in self.members.difference(&after.members) {
            out.push(Member(p, c, false));
        }
        for (&user, first) in &after.names {
            if self.names.get(user) != Some(first) {
                out.push(Change::Name(user, first.clone()));
            }
        }
        for (&item, now) in &after.media {
            if self.media.get(item) != Some(now) {
                out.push(Change::Media(item, now.clone()));
            }
        }
        out.sort();
        out
    }

    /// Rule (b): the level the entries and memberships give `user` on `lib`.
    fn by_the_rule(&self, user: &'static str, lib: &'static str, depth: usize) -> Level {
        assert!(
            depth < 32,
            "the membership graph has a cycle: {:?}",
            self.members
        );
        if let Some(level) = self.entries.get(&(lib, user)) {
            return *level;
        }
        self.members
            .iter()
            .filter(|(_, c)| *c == lib)
            .map(|&(p, _)| self.by_the_rule(user, p, depth + 1))
            .max()
            .unwrap_or(Level::None)
    }
}

/// The running app, the people and the labels of everything made so far.
struct Walk {
    api: ApiApp,
    users: HashMap<&'static str, (User, String)>,
    ids: HashMap<&'static str, String>,
    labels: HashMap<String, &'static str>,
    libraries: Vec<&'static str>,
    media: Vec<&'static str>,
}

impl fmt::Debug for Walk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Walk")
            .field("ids", &self.ids)
            .finish_non_exhaustive()
    }
}

impl Walk {
    fn token(&self, who: &str) -> &str {
        &self.users[who].1
    }

    fn user_id(&self, who: &str) -> String {
        self.users[who].0.id.to_string()
    }

    fn id(&self, label: &str) -> &str {
        self.ids
            .get(label)
            .unwrap_or_else(|| panic!("{label} was never created"))
    }

    fn register(&mut self, label: &'static str, kind: &str, uuid: String) {
        self.labels.insert(uuid.clone(), label);
        self.ids.insert(label, uuid);
        if kind == "catalog" {
            self.libraries.push(label);
        } else {
            self.media.push(label);
        }
    }

    async fn perform(&mut self, actor: &'static str, act: Act) -> Answer {
        let token = self.token(actor).to_owned();
        let t = Some(token.as_str());
        let api = &self.api;
        match act {
            Act::Create {
                label,
                kind,
                parent,
            } => {
                let c = parent.map_or("0", |p| self.id(p)).to_owned();
                let a = api
                    .call(
                        Method::PUT,
                        &format!("/api/describe/c/{c}/o/0"),
                        t,
                        &[("type", kind), ("title", label)],
                    )
                    .await;
                if a.status == StatusCode::CREATED {
                    let uuid = a.json["uuid"].as_str().unwrap().to_owned();
                    self.register(label, kind, uuid);
                }
                a
            }
            Act::Grant { lib, user, level } => {
                let path = format!(
                    "/api/permission/c/{}/o/{}",
                    self.id(lib),
                    self.user_id(user)
                );
                api.call(Method::PUT, &path, t, &[("level", level)]).await
            }
            Act::Revoke { lib, user } => {
                let path = format!(
                    "/api/permission/c/{}/o/{}",
                    self.id(lib),
                    self.user_id(user)
                );
                api.call(Method::DELETE, &path, t, &[]).await
            }
            Act::Link { into, item } => {
                let path = format!("/api/catalog/c/{}/o/{}", self.id(into), self.id(item));
                api.call(Method::PUT, &path, t, &[]).await
            }
            Act::Unlink { from, item } => {
                let path = format!("/api/catalog/c/{}/o/{}", self.id(from), self.id(item));
                api.call(Method::DELETE, &path, t, &[]).await
            }
            Act::Rename { via, user, first } => {
                let path = format!("/api/user/c/{}/o/{}", self.id(via), self.user_id(user));
                api.call(Method::POST, &path, t, &[("firstName", first)])
                    .await
            }
            Act::AddByUniqueId { lib, user, first } => {
                let path = format!("/api/user/c/{}/o/0", self.id(lib));
                api.call(
                    Method::POST,
                    &path,
                    t,
                    &[("uniqueId", user), ("firstName", first)],
                )
                .await
            }
            Act::Publish { via, item, title } => {
                let path = format!("/api/describe/c/{}/o/{}", self.id(via), self.id(item));
                let form = [("type", "video"), ("public", "true"), ("title", title)];
                api.call(Method::POST, &path, t, &form).await
            }
        }
    }

    /// `who`'s access to `lib`: admin if it may read the permission entries, else view if it
    /// may list the library, else none.
    async fn access(&self, who: &str, lib: &str) -> Level {
        let id = self.id(lib);
        let token = Some(self.token(who));
        let p = self
            .api
            .get(&format!("/api/permission/c/{id}/o/0"), token)
            .await;
        match p.status.as_u16() {
            200 => return Admin,
            403 => {}
            _ => panic!("{who} reading the entries of {lib}: {p:?}"),
        }
        let c = self
            .api
            .get(&format!("/api/catalog/c/{id}/o/0"), token)
            .await;
        match c.status.as_u16() {
            200 => View,
            403 => Level::None,
            _ => panic!("{who} listing {lib}: {c:?}"),
        }
    }

    async fn snapshot(&self, problems: &mut Vec<String>) -> Snapshot {
        let mut s = Snapshot::default();
        let root = Some(self.token(ROOT));
        for &lib in &self.libraries {
            for who in PEOPLE {
                s.access.insert((who, lib), self.access(who, lib).await);
            }
            let id = self.id(lib);
            let list = self
                .api
                .get(&format!("/api/catalog/c/{id}/o/0"), root)
                .await;
            assert_eq!(list.status, StatusCode::OK, "root lists {lib}: {list:?}");
            for r in list.json["list"].as_array().unwrap() {
                let uuid = r["uuid"].as_str().unwrap();
                match self.labels.get(uuid) {
                    Some(&child) => {
                        s.members.insert((lib, child));
                    }
                    None => problems.push(format!("{lib} holds an object no step made: {r}")),
                }
            }
            let entries = self
                .api
                .get(&format!("/api/permission/c/{id}/o/0"), root)
                .await;
            assert_eq!(
                entries.status,
                StatusCode::OK,
                "root reads {lib}'s entries: {entries:?}"
            );
            for e in entries.json.as_array().unwrap() {
                let unique_id = e["uniqueId"].as_str().unwrap();
                let Some(&who) = PEOPLE.iter().chain([&ROOT]).find(|p| **p == unique_id) else {
                    problems.push(format!("{lib} has an entry for a stranger: {e}"));
                    continue;
                };
                s.entries
                    .insert((lib, who), Level::parse(e["level"].as_str().unwrap()));
            }
        }
        for (who, home) in HOMES {
            let a = self
                .api
                .get(
                    &format!("/api/user/c/{}/o/0", self.id(home)),
                    Some(self.token(who)),
                )
                .await;
            assert_eq!(a.status, StatusCode::OK, "{who} reads itself: {a:?}");
            s.names
                .insert(who, a.json["firstName"].as_str().unwrap().to_owned());
        }
        for &item in &self.media {
            let Some(&(lib, _)) = s.members.iter().find(|(_, c)| *c == item) else {
                problems.push(format!("{item} is in no library"));
                continue;
            };
            let path = format!("/api/describe/c/{}/o/{}", self.id(lib), self.id(item));
            let a = self.api.get(&path, root).await;
            assert_eq!(a.status, StatusCode::OK, "root describes {item}: {a:?}");
            s.media.insert(
                item,
                format!(
                    "{}, public={}",
                    a.json["title"].as_str().unwrap(),
                    a.json["public"].as_str().unwrap()
                ),
            );
        }
        s
    }
}

/// Invariant (a): every rise of access is the act of someone who administered that library.
fn rises_by_admins_only(before: &Snapshot, after: &Snapshot, actor: &str, act: Act) -> Vec<String> {
    let created = match act {
        Act::Create { label, .. } => Some(label),
        _ => None,
    };
    let mut out = Vec::new();
    for (&(user, lib), &now) in &after.access {
        let was = before.level(user, lib);
        let allowed = actor == ROOT || before.level(actor, lib) == Admin || created == Some(lib);
        if now > was && !allowed {
            out.push(format!(
                "(a) {user}'s access to {lib} rose from {was:?} to {now:?} by {actor}, who was not admin of {lib}"
            ));
        }
    }
    out
}

/// Invariant (b): the access every user has is what the entries and memberships give.
fn access_follows_the_rule(s: &Snapshot) -> Vec<String> {
    let mut out = Vec::new();
    for (&(user, lib), &level) in &s.access {
        let rule = s.by_the_rule(user, lib, 0);
        if level != rule {
            out.push(format!(
                "(b) {user} has {level:?} on {lib}, but the entries {:?} and memberships {:?} give {rule:?}",
                s.entries, s.members
            ));
        }
    }
    out
}

async fn the_permission_rules_hold_at_every_step(b: Backend) {
    let api = ApiApp::start(b).await;
    let mut users = HashMap::new();
    for who in PEOPLE {
        users.insert(who, api.signed_in(who));
    }
    let root = api.user(ROOT, true);
    let root_token = api.token(&root, "read write");
    users.insert(ROOT, (root, root_token));
    let mut walk = Walk {
        api,
        users,
        ids: HashMap::new(),
        labels: HashMap::new(),
        libraries: Vec::new(),
        media: Vec::new(),
    };
    for (who, home) in HOMES {
        let uuid = walk.api.library(walk.token(who), home).await;
        walk.register(home, "catalog", uuid);
    }

    let mut problems = Vec::new();
    let mut before = walk.snapshot(&mut problems).await;
    for (who, home) in HOMES {
        for &lib in &walk.libraries {
            let want = if lib == home { Admin } else { Level::None };
            assert_eq!(
                before.level(who, lib),
                want,
                "before the script: {who} on {lib}"
            );
        }
    }
    assert!(problems.is_empty(), "{problems:?}");

    for (n, st) in script().into_iter().enumerate() {
        let n = n + 1;
        let a = walk.perform(st.actor, st.act).await;
        let after = walk.snapshot(&mut problems).await;
        let mut here = Vec::new();
        if a.status.as_u16() != st.status {
            here.push(format!(
                "answered {} {}, the rules say {}",
                a.status, a.json, st.status
            ));
        }
        let mut want = st.changes.clone();
        want.sort();
        let got = before.diff(&after);
        if got != want {
            here.push(format!("changed {got:?}, the table says {want:?}"));
        }
        here.extend(rises_by_admins_only(&before, &after, st.actor, st.act));
        here.extend(access_follows_the_rule(&after));
        let line = format!("step {n}: {} {:?} ({})", st.actor, st.act, st.why);
        eprintln!(
            "{line}: {}",
            if here.is_empty() { "ok" } else { "DEVIATES" }
        );
        problems.extend(here.into_iter().map(|p| format!("{line}\n    {p}")));
        before = after;
    }
    assert!(
        problems.is_empty(),
        "{} deviation(s) from the rules:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

medialib_adapters_diesel::backend_tests!(
    async on [sqlite, postgres] with crate::api::run:
    the_permission_rules_hold_at_every_step,
);
