//! Users: provisioning.

use medialib_domain::{PersonName, UniqueId, User, UserId};

use super::PeopleServices;
use crate::error::StoreError;
use crate::repos::CreateUserError;
use crate::sso::PasswordHash;
use crate::world::RandomExt as _;

/// A user to create.
#[derive(Debug, Clone)]
pub struct NewUserInput {
    /// SSO uniqueId.
    pub unique_id: UniqueId,
    /// First name.
    pub first_name: PersonName,
    /// Last name.
    pub last_name: PersonName,
    /// Administers the whole organization.
    pub org_admin: bool,
}

impl PeopleServices {
    /// Creates a user with a fresh id.
    #[tracing::instrument(skip(self), fields(unique_id = %input.unique_id))]
    pub fn create_user(&self, input: NewUserInput) -> Result<User, CreateUserError> {
        let ns = self.world.namespace()?;
        let user = User {
            id: UserId::generate(&ns, self.world.random.bytes16()),
            unique_id: input.unique_id,
            first_name: input.first_name,
            last_name: input.last_name,
            org_admin: input.org_admin,
        };
        self.users.create_user(&user, self.world.clock.now())?;
        Ok(user)
    }

    /// Finds the user with `unique_id`, provisioning one with blank names if none exists yet
    /// (access can be granted before the first sign-in).
    pub fn provision_user(&self, unique_id: &UniqueId) -> Result<User, CreateUserError> {
        if let Some(u) = self.users.user_by_unique_id(unique_id)? {
            return Ok(u);
        }
        let blank = PersonName::default();
        match self.create_user(NewUserInput {
            unique_id: unique_id.clone(),
            first_name: blank.clone(),
            last_name: blank,
            org_admin: false,
        }) {
            // Lost a race with a concurrent provisioning: use the winner's row.
            Err(CreateUserError::UniqueIdTaken) => self
                .users
                .user_by_unique_id(unique_id)?
                .ok_or(CreateUserError::UniqueIdTaken),
            other => other,
        }
    }

    /// Sets (or replaces) the `local` directory password hash of the user with `unique_id`;
    /// `None` when there is no such user.
    pub fn set_password(
        &self,
        unique_id: &UniqueId,
        hash: &PasswordHash,
    ) -> Result<Option<User>, StoreError> {
        let Some(user) = self.users.user_by_unique_id(unique_id)? else {
            return Ok(None);
        };
        let set = self
            .credentials
            .set_password_hash(user.id, hash, self.world.clock.now())?;
        Ok(set.then_some(user))
    }
}
