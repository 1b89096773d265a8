//! `UserRepository`.

use diesel::prelude::*;
use medialib_domain::{PersonName, Timestamp, UniqueId, User, UserId};
use medialib_ports::{CreateUserError, StoreError, UserRepository};

use super::rows::UserRow;
use super::{DieselStore, is_unique_violation};
use crate::error::DbError;
use crate::macros::{with_conn, with_write};
use crate::schema::users;

impl UserRepository for DieselStore {
    fn create_user(&self, user: &User, now: Timestamp) -> Result<(), CreateUserError> {
        let row = UserRow::from_domain(user, now);
        let r = (|| -> Result<usize, DbError> {
            with_write!(self.db, conn => {
                Ok(diesel::insert_into(users::table).values(&row).execute(conn)?)
            })
        })();
        match r {
            Ok(_) => Ok(()),
            Err(DbError::Query(e)) if is_unique_violation(&e) => {
                Err(CreateUserError::UniqueIdTaken)
            }
            Err(e) => Err(CreateUserError::Store(e.into())),
        }
    }

    fn user(&self, id: UserId) -> Result<Option<User>, StoreError> {
        let id = id.to_string();
        let row: Option<UserRow> = with_conn!(self.db, conn => {
            users::table.find(&id).select(UserRow::as_select()).first(conn).optional().map_err(DbError::from)
        })?;
        row.map(UserRow::into_domain).transpose()
    }

    fn user_by_unique_id(&self, unique_id: &UniqueId) -> Result<Option<User>, StoreError> {
        let row: Option<UserRow> = with_conn!(self.db, conn => {
            users::table
                .filter(users::unique_id.eq(unique_id.as_str()))
                .select(UserRow::as_select())
                .first(conn)
                .optional()
                .map_err(DbError::from)
        })?;
        row.map(UserRow::into_domain).transpose()
    }

    fn update_user_names(
        &self,
        id: UserId,
        first: &PersonName,
        last: &PersonName,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let id = id.to_string();
        let n: usize = with_write!(self.db, conn => {
            diesel::update(users::table.find(&id))
                .set((
                    users::first_name.eq(first.as_str()),
                    users::last_name.eq(last.as_str()),
                    users::modified_at.eq(now.epoch_seconds()),
                ))
                .execute(conn)
                .map_err(DbError::from)
        })?;
        Ok(n == 1)
    }

    fn list_users(&self) -> Result<Vec<User>, StoreError> {
        let rows: Vec<UserRow> = with_conn!(self.db, conn => {
            users::table
                .order(users::unique_id.asc())
                .select(UserRow::as_select())
                .load(conn)
                .map_err(DbError::from)
        })?;
        rows.into_iter().map(UserRow::into_domain).collect()
    }
}
