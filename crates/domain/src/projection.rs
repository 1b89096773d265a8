//! Which fields a caller sees: full vs limited describe records, user-record visibility.

use crate::permission::PermissionLevel;

/// The fields of a describe record a caller gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DescribeView {
    /// Every field of the record.
    Full,
    /// Only `type, title, description, images, public, uuid, permLink, authenticated`.
    Limited,
}

/// Why a describe call is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DescribeRefused {
    /// Not signed in and the object is not public (401).
    #[error("authentication required")]
    AuthenticationRequired,
    /// Signed in without `view` and the object is not public (403).
    #[error("the caller has no access to this object")]
    Forbidden,
}

/// Decides what a caller sees of an object reached through a collection.
///
/// `level` is the caller's effective level on that collection, `None` when the
/// caller is anonymous.
pub fn describe_view(
    level: Option<PermissionLevel>,
    object_public: bool,
) -> Result<DescribeView, DescribeRefused> {
    match level {
        Some(l) if l >= PermissionLevel::View => Ok(DescribeView::Full),
        _ if object_public => Ok(DescribeView::Limited),
        None => Err(DescribeRefused::AuthenticationRequired),
        Some(_) => Err(DescribeRefused::Forbidden),
    }
}

/// How the caller relates to the user being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserRelation {
    /// The caller reads itself.
    SelfUser,
    /// The caller administers the collection the user is read through.
    CollectionAdmin,
    /// Anyone else allowed to read the collection.
    Other,
}

impl UserRelation {
    /// How a caller with `level` on the collection relates to the user it reads.
    pub fn of(is_self: bool, level: PermissionLevel) -> Self {
        if is_self {
            Self::SelfUser
        } else if level == PermissionLevel::Admin {
            Self::CollectionAdmin
        } else {
            Self::Other
        }
    }
}

/// The user-record fields a relation may see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserFieldVisibility {
    /// `firstName` and `lastName`.
    pub names: bool,
    /// `userId`, `uniqueId` and stored parameters.
    pub identifiers: bool,
}

/// Field visibility for a relation (spec §2.3).
pub fn user_fields(relation: UserRelation) -> UserFieldVisibility {
    UserFieldVisibility {
        names: true,
        identifiers: matches!(
            relation,
            UserRelation::SelfUser | UserRelation::CollectionAdmin
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PermissionLevel as L;

    #[test]
    fn describe_matrix() {
        let cases = [
            (None, true, Ok(DescribeView::Limited)),
            (None, false, Err(DescribeRefused::AuthenticationRequired)),
            (Some(L::None), true, Ok(DescribeView::Limited)),
            (Some(L::None), false, Err(DescribeRefused::Forbidden)),
            (Some(L::View), false, Ok(DescribeView::Full)),
            (Some(L::View), true, Ok(DescribeView::Full)),
            (Some(L::Admin), false, Ok(DescribeView::Full)),
        ];
        for (level, public, expected) in cases {
            assert_eq!(
                describe_view(level, public),
                expected,
                "{level:?} public={public}"
            );
        }
    }

    #[test]
    fn identifiers_only_for_self_and_admins() {
        assert!(user_fields(UserRelation::SelfUser).identifiers);
        assert!(user_fields(UserRelation::CollectionAdmin).identifiers);
        assert!(!user_fields(UserRelation::Other).identifiers);
        assert!(user_fields(UserRelation::Other).names);
    }
}
