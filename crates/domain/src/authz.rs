//! The one authorization gate of the media API (DECISIONS.md §3, docs/security.md "API
//! authorization").
//!
//! Every use case that may be refused for lack of permission asks [`decide`] (or, for
//! describe GET, [`decide_describe`]) and nothing else decides. Its inputs are the caller
//! (user, organization-admin flag and what its credential allows), the [`Action`], and the
//! facts a repository loaded: the caller's explicit entries and the membership graph above
//! every object the action names, as an [`AccessView`]. Its answer is a [`Permit`] (which
//! only this module can make) or a typed [`Refusal`].
//!
//! The rules, each in one place below:
//! - reading through a collection needs `view` on it;
//! - changing a collection, its members, or anything through it needs `admin` on it;
//! - linking an existing object into a collection needs `admin` on the collection **and**
//!   `admin` on what is linked: on a library, its own effective level; on any other object,
//!   the best level over the collections that hold it (which is what [`AccessView`]
//!   resolves for a non-collection, since entries exist only on collections);
//! - a user's names change only by that user or an organization admin;
//! - an object the caller cannot view (not public, and no `view` through any collection
//!   holding it) is hidden: refused exactly as an unknown one;
//! - every change needs a credential that allows writes (the OAuth `write` scope);
//! - organization admins have `admin` everywhere (scope still applies).

use std::fmt;

use crate::ids::{ObjectId, UserId};
use crate::oauth::{Scope, ScopeSet};
use crate::permission::{AccessView, PermissionLevel};
use crate::projection::{DescribeRefused, DescribeView, describe_view};

/// Who is calling, as far as authorization cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller {
    user: UserId,
    org_admin: bool,
    may_write: bool,
}

impl Caller {
    /// A signed-in user acting for themself (browser session, operator command): every
    /// action their levels allow, writes included.
    pub fn new(user: UserId, org_admin: bool) -> Self {
        Self {
            user,
            org_admin,
            may_write: true,
        }
    }

    /// The same user acting through a token with `scope`: writes only with `write`.
    #[must_use]
    pub fn with_scope(self, scope: ScopeSet) -> Self {
        Self {
            may_write: self.may_write && scope.contains(Scope::Write),
            ..self
        }
    }

    /// The user.
    pub fn user(&self) -> UserId {
        self.user
    }

    /// Whether the user administers the whole organization.
    pub fn is_org_admin(&self) -> bool {
        self.org_admin
    }

    /// Whether the caller's credential allows changes at all.
    pub fn may_write(&self) -> bool {
        self.may_write
    }
}

/// What a caller wants to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Read a collection, or an object or a user through it (describe, info, embed, video,
    /// catalog and user GET).
    Read {
        /// The collection of the path.
        collection: ObjectId,
    },
    /// Read a collection's permission entries (permission GET).
    ReadPermissions {
        /// The collection.
        collection: ObjectId,
    },
    /// Be listed as a library the caller may contribute to (contribute GET).
    Administer {
        /// The library.
        collection: ObjectId,
    },
    /// Change an object reached through a collection (describe POST, info POST).
    Edit {
        /// The collection of the path.
        collection: ObjectId,
    },
    /// Create a new object in a collection (describe PUT into `c/{C}`).
    CreateIn {
        /// The collection.
        collection: ObjectId,
    },
    /// Create a new top-level library (describe PUT into `c/0`).
    CreateLibrary,
    /// Put an existing object into a collection (catalog PUT/POST).
    Link {
        /// The collection it goes into.
        collection: ObjectId,
        /// What is linked (a library or any other object).
        member: ObjectId,
    },
    /// Take an object out of a collection (catalog DELETE).
    Unlink {
        /// The collection.
        collection: ObjectId,
    },
    /// Grant, change or revoke entries on a collection, or add a user to it (permission
    /// PUT/POST/DELETE, user POST with `user_id` 0).
    Grant {
        /// The collection.
        collection: ObjectId,
    },
    /// Change a user's names (they are organization-wide).
    Rename {
        /// Whose names.
        user: UserId,
    },
    /// Learn that an object exists at all (contribute GET).
    See {
        /// The object.
        object: ObjectId,
        /// Whether it is public (its limited record is anyone's to read).
        public: bool,
    },
}

impl Action {
    /// Whether the action changes anything (and so needs a credential that allows writes).
    pub const fn is_write(self) -> bool {
        !matches!(
            self,
            Self::Read { .. }
                | Self::ReadPermissions { .. }
                | Self::Administer { .. }
                | Self::See { .. }
        )
    }

    /// The objects whose ancestors and entries the gate reads: what a repository loads
    /// into the [`AccessView`] handed to [`decide`].
    pub fn subjects(self) -> Vec<ObjectId> {
        match self {
            Self::Read { collection }
            | Self::ReadPermissions { collection }
            | Self::Administer { collection }
            | Self::Edit { collection }
            | Self::CreateIn { collection }
            | Self::Unlink { collection }
            | Self::Grant { collection } => vec![collection],
            Self::Link { collection, member } => vec![collection, member],
            Self::See { object, .. } => vec![object],
            Self::CreateLibrary | Self::Rename { .. } => Vec::new(),
        }
    }
}

/// What a level check was about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// The collection of the call.
    Collection,
    /// The object being linked into it.
    Linked,
}

/// The caller's level is below what the action needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("this call needs {required} on the {subject}; the caller has {actual}")]
pub struct Forbidden {
    /// What the level was checked on.
    pub subject: Subject,
    /// What it needs.
    pub required: PermissionLevel,
    /// What the caller has.
    pub actual: PermissionLevel,
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Collection => "collection",
            Self::Linked => "object being added",
        })
    }
}

/// Why the gate refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The credential does not allow writes (a token without the `write` scope): 403.
    #[error("this token's scope does not allow writes")]
    ReadOnly,
    /// The caller's level is too low: 403.
    #[error(transparent)]
    Forbidden(#[from] Forbidden),
    /// Names are changed only by the user or an organization admin: 403.
    #[error("a user's names can be changed only by that user or an organization admin")]
    NotSelf,
    /// The caller cannot view the object: it must look exactly like an unknown one (404).
    #[error("object not found")]
    Hidden,
}

/// Proof that the gate allowed an action. Only [`decide`] makes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Permit {
    level: PermissionLevel,
}

impl Permit {
    /// The caller's effective level on the action's collection (`admin` for actions that
    /// name none and were allowed).
    pub fn level(&self) -> PermissionLevel {
        self.level
    }
}

/// The caller's effective level on `object`: organization admins have `admin` everywhere;
/// otherwise the explicit entry on it, else the best level over the collections holding it.
pub fn level_on(caller: &Caller, access: &AccessView, object: ObjectId) -> PermissionLevel {
    if caller.is_org_admin() {
        PermissionLevel::Admin
    } else {
        access.resolve_level(object)
    }
}

fn at_least(
    subject: Subject,
    actual: PermissionLevel,
    required: PermissionLevel,
) -> Result<Permit, Refusal> {
    if actual >= required {
        Ok(Permit { level: actual })
    } else {
        Err(Refusal::Forbidden(Forbidden {
            subject,
            required,
            actual,
        }))
    }
}

/// The gate: may `caller` do `action`, given `access` (the caller's entries and the graph
/// above every object in [`Action::subjects`])?
pub fn decide(caller: &Caller, action: Action, access: &AccessView) -> Result<Permit, Refusal> {
    if action.is_write() && !caller.may_write() {
        return Err(Refusal::ReadOnly);
    }
    let level = |id| level_on(caller, access, id);
    use PermissionLevel::{Admin, View};
    match action {
        Action::Read { collection } => at_least(Subject::Collection, level(collection), View),
        Action::ReadPermissions { collection }
        | Action::Administer { collection }
        | Action::Edit { collection }
        | Action::CreateIn { collection }
        | Action::Unlink { collection }
        | Action::Grant { collection } => at_least(Subject::Collection, level(collection), Admin),
        Action::CreateLibrary => Ok(Permit { level: Admin }),
        Action::Link { collection, member } => {
            at_least(Subject::Collection, level(collection), Admin)?;
            match level(member) {
                PermissionLevel::None => Err(Refusal::Hidden),
                on_member => {
                    at_least(Subject::Linked, on_member, Admin).map(|_| Permit { level: Admin })
                }
            }
        }
        Action::Rename { user } => {
            if caller.is_org_admin() || caller.user() == user {
                Ok(Permit { level: Admin })
            } else {
                Err(Refusal::NotSelf)
            }
        }
        Action::See { object, public } => match level(object) {
            PermissionLevel::None if !public => Err(Refusal::Hidden),
            l => Ok(Permit { level: l }),
        },
    }
}

/// Whether `caller` may use the write methods of a call that no permission guards (sign
/// out, the OAuth endpoints): any caller whose credential allows writes. OPTIONS'
/// `proceed` on such paths.
pub fn may_use_unguarded_writes(caller: &Caller) -> bool {
    caller.may_write()
}

/// Where the libraries a caller administers can be (contribute GET): everywhere for an
/// organization admin, otherwise only where the caller holds an explicit entry (a level
/// is inherited only from such an entry). The gate still decides each candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminReach {
    /// Every live library.
    Everywhere,
    /// Libraries on which the caller holds an explicit entry.
    ThroughEntries,
}

/// [`AdminReach`] of `caller`.
pub fn admin_reach(caller: &Caller) -> AdminReach {
    if caller.is_org_admin() {
        AdminReach::Everywhere
    } else {
        AdminReach::ThroughEntries
    }
}

/// Describe GET: what `caller` (`None`: anonymous) sees of an object reached through
/// `collection`: the complete record with `view` on the collection, the limited one of a
/// public object otherwise, else refused (401 anonymous, 403 signed in).
pub fn decide_describe(
    caller: Option<&Caller>,
    collection: ObjectId,
    object_public: bool,
    access: &AccessView,
) -> Result<DescribeView, DescribeRefused> {
    let level = caller.map(|c| level_on(c, access, collection));
    describe_view(level, object_public)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::OrgNamespace;
    use PermissionLevel as L;

    fn ids(n: u8) -> Vec<ObjectId> {
        let ns = OrgNamespace::from_random([3; 16]);
        (0..n).map(|i| ObjectId::generate(&ns, [i; 16])).collect()
    }

    fn user(n: u8) -> UserId {
        UserId::generate(&OrgNamespace::from_random([4; 16]), [n; 16])
    }

    /// Library `a` holds sub-library `s` and video `v`; the caller has `view` on `a` and
    /// `admin` on its own library `vb`.
    fn viewer_world() -> (Caller, AccessView, [ObjectId; 4]) {
        let v = ids(4);
        let (a, s, video, vb) = (v[0], v[1], v[2], v[3]);
        let access = AccessView::new([(a, s), (a, video)], [(a, L::View), (vb, L::Admin)]);
        (Caller::new(user(1), false), access, [a, s, video, vb])
    }

    #[test]
    fn a_viewer_cannot_link_what_it_only_views() {
        let (c, access, [a, s, video, vb]) = viewer_world();
        for member in [s, video, a] {
            assert_eq!(
                decide(
                    &c,
                    Action::Link {
                        collection: vb,
                        member
                    },
                    &access
                ),
                Err(Refusal::Forbidden(Forbidden {
                    subject: Subject::Linked,
                    required: L::Admin,
                    actual: L::View
                }))
            );
        }
    }

    #[test]
    fn an_admin_of_both_sides_links() {
        let (c, _, [a, s, video, vb]) = viewer_world();
        let access = AccessView::new([(a, s), (a, video)], [(a, L::Admin), (vb, L::Admin)]);
        for member in [s, video, a] {
            let action = Action::Link {
                collection: vb,
                member,
            };
            assert!(decide(&c, action, &access).is_ok(), "{member}");
        }
    }

    #[test]
    fn linking_what_the_caller_cannot_see_is_hidden() {
        let (c, access, [_, _, _, vb]) = viewer_world();
        let stranger = ids(9)[8];
        let action = Action::Link {
            collection: vb,
            member: stranger,
        };
        assert_eq!(decide(&c, action, &access), Err(Refusal::Hidden));
        let see = |public| Action::See {
            object: stranger,
            public,
        };
        assert_eq!(decide(&c, see(false), &access), Err(Refusal::Hidden));
        // A public object's existence is no secret: its limited record is anyone's.
        assert!(decide(&c, see(true), &access).is_ok());
    }

    #[test]
    fn linking_into_a_library_the_caller_only_views_is_forbidden_first() {
        let (c, access, [a, _, video, _]) = viewer_world();
        let action = Action::Link {
            collection: a,
            member: video,
        };
        assert_eq!(
            decide(&c, action, &access),
            Err(Refusal::Forbidden(Forbidden {
                subject: Subject::Collection,
                required: L::Admin,
                actual: L::View
            }))
        );
    }

    #[test]
    fn names_change_only_by_their_user_or_an_org_admin() {
        let access = AccessView::default();
        let me = Caller::new(user(1), false);
        let rename = |u| Action::Rename { user: u };
        assert!(decide(&me, rename(user(1)), &access).is_ok());
        assert_eq!(decide(&me, rename(user(2)), &access), Err(Refusal::NotSelf));
        let org = Caller::new(user(3), true);
        assert!(decide(&org, rename(user(2)), &access).is_ok());
    }

    #[test]
    fn a_read_only_token_reads_but_changes_nothing() {
        let (c, access, [a, _, _, vb]) = viewer_world();
        let ro = c.with_scope(ScopeSet::parse("read").unwrap());
        assert!(decide(&ro, Action::Read { collection: a }, &access).is_ok());
        for action in [
            Action::CreateLibrary,
            Action::Edit { collection: vb },
            Action::Rename { user: c.user() },
        ] {
            assert_eq!(decide(&ro, action, &access), Err(Refusal::ReadOnly));
        }
        let org = Caller::new(user(3), true).with_scope(ScopeSet::parse("read").unwrap());
        assert_eq!(
            decide(&org, Action::Grant { collection: a }, &access),
            Err(Refusal::ReadOnly)
        );
        // A full scope keeps writes.
        assert!(c.with_scope(ScopeSet::DEFAULT).may_write());
    }

    #[test]
    fn org_admins_pass_every_level_check() {
        let v = ids(2);
        let org = Caller::new(user(9), true);
        let access = AccessView::new([], [(v[0], L::None)]);
        let action = Action::Link {
            collection: v[0],
            member: v[1],
        };
        assert_eq!(
            decide(&org, action, &access).map(|p| p.level()),
            Ok(L::Admin)
        );
        let see = Action::See {
            object: v[1],
            public: false,
        };
        assert!(decide(&org, see, &access).is_ok());
    }

    #[test]
    fn reads_need_view_and_changes_admin() {
        let (c, access, [a, s, _, vb]) = viewer_world();
        assert_eq!(
            decide(&c, Action::Read { collection: s }, &access).map(|p| p.level()),
            Ok(L::View)
        );
        for action in [
            Action::Edit { collection: a },
            Action::CreateIn { collection: s },
            Action::Unlink { collection: a },
            Action::Grant { collection: s },
            Action::ReadPermissions { collection: a },
            Action::Administer { collection: a },
        ] {
            assert!(
                matches!(decide(&c, action, &access), Err(Refusal::Forbidden(_))),
                "{action:?}"
            );
        }
        assert!(decide(&c, Action::Grant { collection: vb }, &access).is_ok());
        assert!(decide(&c, Action::CreateLibrary, &access).is_ok());
    }

    #[test]
    fn describe_picks_the_record_by_level_on_the_collection() {
        let (c, access, [a, _, _, _]) = viewer_world();
        let other = ids(9)[8];
        assert_eq!(
            decide_describe(Some(&c), a, false, &access),
            Ok(DescribeView::Full)
        );
        assert_eq!(
            decide_describe(Some(&c), other, true, &access),
            Ok(DescribeView::Limited)
        );
        assert_eq!(
            decide_describe(Some(&c), other, false, &access),
            Err(DescribeRefused::Forbidden)
        );
        assert_eq!(
            decide_describe(None, a, false, &access),
            Err(DescribeRefused::AuthenticationRequired)
        );
    }
}
