//! `UserRepository` and `CredentialRepository`.

use medialib_domain::{PersonName, Timestamp, UniqueId, User, UserId};
use medialib_ports::{
    CreateUserError, CredentialRepository, PasswordHash, StoreError, UserRepository,
};

use crate::MemoryStore;

impl UserRepository for MemoryStore {
    fn create_user(&self, user: &User, _now: Timestamp) -> Result<(), CreateUserError> {
        let mut state = self.lock();
        // Mirrors adapters-diesel users.rs: every unique violation of the insert is reported
        // as `UniqueIdTaken`, a taken id (the primary key) included.
        if state.users.contains_key(&user.id) || state.user_by_unique_id(&user.unique_id).is_some()
        {
            return Err(CreateUserError::UniqueIdTaken);
        }
        state.users.insert(user.id, user.clone());
        Ok(())
    }

    fn user(&self, id: UserId) -> Result<Option<User>, StoreError> {
        Ok(self.lock().users.get(&id).cloned())
    }

    fn user_by_unique_id(&self, unique_id: &UniqueId) -> Result<Option<User>, StoreError> {
        Ok(self.lock().user_by_unique_id(unique_id).cloned())
    }

    fn update_user_names(
        &self,
        id: UserId,
        first: &PersonName,
        last: &PersonName,
        _now: Timestamp,
    ) -> Result<bool, StoreError> {
        let mut state = self.lock();
        let Some(user) = state.users.get_mut(&id) else {
            return Ok(false);
        };
        user.first_name = first.clone();
        user.last_name = last.clone();
        Ok(true)
    }

    fn list_users(&self) -> Result<Vec<User>, StoreError> {
        let mut users: Vec<User> = self.lock().users.values().cloned().collect();
        // Mirrors adapters-diesel users.rs: `ORDER BY unique_id`, compared byte by byte as
        // SQLite's default collation does.
        users.sort_by(|a, b| a.unique_id.as_str().cmp(b.unique_id.as_str()));
        Ok(users)
    }
}

impl CredentialRepository for MemoryStore {
    fn set_password_hash(
        &self,
        user: UserId,
        hash: &PasswordHash,
        _now: Timestamp,
    ) -> Result<bool, StoreError> {
        let mut state = self.lock();
        if !state.users.contains_key(&user) {
            return Ok(false);
        }
        state.credentials.insert(user, hash.clone());
        Ok(true)
    }

    fn password_hash(
        &self,
        unique_id: &UniqueId,
    ) -> Result<Option<(User, PasswordHash)>, StoreError> {
        let state = self.lock();
        Ok(state.user_by_unique_id(unique_id).and_then(|user| {
            let hash = state.credentials.get(&user.id)?;
            Some((user.clone(), hash.clone()))
        }))
    }
}
