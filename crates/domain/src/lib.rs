//! medialib's domain: the pure core of the service.
//!
//! Media objects and collections, the membership graph, permissions and their
//! inheritance, what each caller may see, and the OAuth 2.0 lifecycle (requests,
//! codes, access and refresh tokens) as state machines. No I/O, no clock, no
//! randomness: time and random bytes are arguments.

pub mod authz;
pub mod catalog_page;
pub mod form;
pub mod graph;
pub mod hex;
pub mod housekeeping;
pub mod ids;
pub mod lti;
pub mod media;
pub mod oauth;
pub mod object;
pub mod permission;
pub mod player;
pub mod projection;
pub mod secret;
pub mod session;
pub mod sign_in;
pub mod text;
pub mod time;

pub use authz::{Action, Caller, Forbidden, Permit, Refusal, Subject};
pub use catalog_page::{
    CursorWithoutLimit, InvalidCursor, InvalidPageSize, PageCursor, PageRequest, PageSize,
};
pub use graph::{CollectionGraph, MembershipError, check_add_member};
pub use housekeeping::PurgeCutoffs;
pub use ids::{GrantId, IdOrZero, InvalidUuid, ObjectId, OrgNamespace, UUID_TEXT_LEN, UserId};
pub use object::{
    AfterRemoval, Lifecycle, MediaObject, NewObject, ObjectFields, ObjectPatch, ObjectType,
    ShortCode, StoredObject, TypeRequired, UpdateError,
};
pub use permission::{AccessView, LastAdmin, PermissionLevel};
pub use projection::{DescribeRefused, DescribeView, UserRelation};
pub use secret::{Secret, TokenDigest, TokenKind};
pub use session::{BrowserSession, FailedLogins, csrf_matches, csrf_token};
pub use text::{Description, InvalidText, PersonName, Properties, Title, UniqueId};
pub use time::{DurationSecs, Lifetime, Since, Timestamp};

/// A user of the organization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// Id.
    pub id: UserId,
    /// SSO unique identifier.
    pub unique_id: UniqueId,
    /// First name.
    pub first_name: PersonName,
    /// Last name.
    pub last_name: PersonName,
    /// Administers the whole organization.
    pub org_admin: bool,
}

impl User {
    /// The user as a permission caller.
    pub fn as_caller(&self) -> Caller {
        Caller::new(self.id, self.org_admin)
    }

    /// The name pages show: first and last name, or the uniqueId when both are blank.
    pub fn display_name(&self) -> String {
        let names = format!("{} {}", self.first_name.as_str(), self.last_name.as_str());
        match names.trim() {
            "" => self.unique_id.as_str().to_owned(),
            names => names.to_owned(),
        }
    }

    /// Whether setting the given names (`None`: left as is) would change this user's names:
    /// only then is it a rename, which the authorization gate allows to the user itself and
    /// organization admins alone.
    pub fn would_rename(&self, first: Option<&PersonName>, last: Option<&PersonName>) -> bool {
        first.is_some_and(|f| *f != self.first_name) || last.is_some_and(|l| *l != self.last_name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_show_a_users_names_or_else_the_unique_id() {
        let ns = OrgNamespace::from_random([1; 16]);
        let user = |first: &str, last: &str| User {
            id: UserId::generate(&ns, [2; 16]),
            unique_id: UniqueId::parse("ada@uni.example").unwrap(),
            first_name: PersonName::parse(first, "firstName").unwrap(),
            last_name: PersonName::parse(last, "lastName").unwrap(),
            org_admin: false,
        };
        assert_eq!(user("Ada", "Lovelace").display_name(), "Ada Lovelace");
        assert_eq!(user("", "Lovelace").display_name(), "Lovelace");
        assert_eq!(user("", " ").display_name(), "ada@uni.example");
    }
}
