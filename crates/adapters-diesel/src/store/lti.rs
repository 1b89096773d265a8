//! LTI: consumers, the nonces their launches used, and course libraries.

use diesel::prelude::*;
use medialib_domain::lti::CourseKey;
use medialib_domain::lti::v1p3::{Platform, UniqueIdClaim};
use medialib_domain::{MediaObject, ObjectId, Secret, Timestamp, UserId};
use medialib_ports::{
    AddConsumerError, AddPlatformError, CourseLibrary, CreateObjectError, LtiConsumer,
    LtiRepository, PendingLogin, StoreError, ToolKey, UsedNonce,
};

use super::media::insert_library;
use super::{DieselStore, Locks as _, is_unique_violation};
use crate::error::DbError;
use crate::macros::{with_conn, with_tx, with_write};
use crate::schema::objects;
use crate::schema::{lti_consumers as consumers, lti_courses as courses, lti_nonces as nonces};
use crate::schema::{lti_deployments as deployments, lti_platforms as platforms};
use crate::schema::{lti_keys as keys, lti_logins as logins};

/// A login row: state, nonce, issuer, client_id, expires_at.
type LoginRow = (String, String, String, String, i64);

/// A consumer row: key, name, secret, created_at.
type ConsumerRow = (String, String, String, i64);

fn consumer_of((key, name, secret, created_at): ConsumerRow) -> LtiConsumer {
    LtiConsumer {
        key,
        name,
        secret: Secret::new(secret),
        created_at: Timestamp::from_epoch_seconds(created_at),
    }
}

/// A platform row: issuer, client_id, auth_url, token_url, jwks_url, unique_id_claim.
type PlatformRow = (String, String, String, String, String, String);

/// The platforms of `rows` with their deployments (`(issuer, client_id, deployment_id)`).
fn platforms_of(
    rows: Vec<PlatformRow>,
    deployed: &[(String, String, String)],
) -> Result<Vec<Platform>, StoreError> {
    rows.into_iter()
        .map(
            |(issuer, client_id, auth_url, token_url, jwks_url, claim)| {
                let unique_id_claim = UniqueIdClaim::parse(&claim).ok_or_else(|| {
                    StoreError::Corrupt(format!("lti_platforms.unique_id_claim: {claim:?}"))
                })?;
                let deployments = deployed
                    .iter()
                    .filter(|(i, c, _)| *i == issuer && *c == client_id)
                    .map(|(_, _, d)| d.clone())
                    .collect();
                Ok(Platform {
                    issuer,
                    client_id,
                    deployments,
                    auth_url,
                    token_url,
                    jwks_url,
                    unique_id_claim,
                })
            },
        )
        .collect()
}

/// The stored id of a course's library, parsed.
fn library_id(text: &str) -> Result<ObjectId, StoreError> {
    ObjectId::parse(text).map_err(|e| StoreError::Corrupt(format!("lti_courses.library_id: {e}")))
}

impl DieselStore {
    /// The platforms (of `issuer`, or all), by issuer and client id, with their deployments.
    fn read_platforms(&self, issuer: Option<&str>) -> Result<Vec<Platform>, StoreError> {
        let (rows, deployed) = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                let mut rows = platforms::table
                    .order((platforms::issuer, platforms::client_id))
                    .select((
                        platforms::issuer,
                        platforms::client_id,
                        platforms::auth_url,
                        platforms::token_url,
                        platforms::jwks_url,
                        platforms::unique_id_claim,
                    ))
                    .into_boxed();
                let mut deployed = deployments::table
                    .order(deployments::deployment_id)
                    .into_boxed();
                if let Some(issuer) = issuer {
                    rows = rows.filter(platforms::issuer.eq(issuer));
                    deployed = deployed.filter(deployments::issuer.eq(issuer));
                }
                let rows: Vec<PlatformRow> = rows.load(conn)?;
                let deployed: Vec<(String, String, String)> = deployed.load(conn)?;
                Ok((rows, deployed))
            })
        })()?;
        platforms_of(rows, &deployed)
    }
}

impl LtiRepository for DieselStore {
    fn add_lti_consumer(&self, consumer: &LtiConsumer) -> Result<(), AddConsumerError> {
        let row = (
            consumers::consumer_key.eq(&consumer.key),
            consumers::name.eq(&consumer.name),
            consumers::secret.eq(consumer.secret.expose()),
            consumers::created_at.eq(consumer.created_at.epoch_seconds()),
        );
        let r = (|| -> Result<usize, DbError> {
            with_write!(self.db, conn => {
                Ok(diesel::insert_into(consumers::table).values(&row).execute(conn)?)
            })
        })();
        match r {
            Ok(_) => Ok(()),
            Err(DbError::Query(e)) if is_unique_violation(&e) => Err(AddConsumerError::KeyTaken),
            Err(e) => Err(AddConsumerError::Store(e.into())),
        }
    }

    fn lti_consumer(&self, key: &str) -> Result<Option<LtiConsumer>, StoreError> {
        let row: Option<ConsumerRow> = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                Ok(consumers::table.find(key).first(conn).optional()?)
            })
        })()?;
        Ok(row.map(consumer_of))
    }

    fn lti_consumers(&self) -> Result<Vec<LtiConsumer>, StoreError> {
        let rows: Vec<ConsumerRow> = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                Ok(consumers::table.order(consumers::consumer_key).load(conn)?)
            })
        })()?;
        Ok(rows.into_iter().map(consumer_of).collect())
    }

    fn remove_lti_consumer(&self, key: &str) -> Result<bool, StoreError> {
        let n = (|| -> Result<usize, DbError> {
            with_write!(self.db, conn => {
                Ok(diesel::delete(consumers::table.find(key)).execute(conn)?)
            })
        })()?;
        Ok(n > 0)
    }

    fn use_lti_nonce(&self, used: UsedNonce<'_>, now: Timestamp) -> Result<bool, StoreError> {
        let inserted = (|| -> Result<usize, DbError> {
            with_write!(self.db, conn => {
                diesel::delete(
                    nonces::table
                        .filter(nonces::consumer_key.eq(used.consumer))
                        .filter(nonces::kept_until.lt(now.epoch_seconds())),
                )
                .execute(conn)?;
                // One statement decides: of two launches with the same pair, the database
                // lets one row in.
                Ok(diesel::insert_into(nonces::table)
                    .values((
                        nonces::consumer_key.eq(used.consumer),
                        nonces::nonce.eq(used.nonce),
                        nonces::kept_until.eq(used.kept_until.epoch_seconds()),
                    ))
                    .on_conflict_do_nothing()
                    .execute(conn)?)
            })
        })()?;
        Ok(inserted == 1)
    }

    fn add_lti_platform(
        &self,
        platform: &Platform,
        now: Timestamp,
    ) -> Result<(), AddPlatformError> {
        let key = (platform.issuer.as_str(), platform.client_id.as_str());
        let r: Result<(), DbError> = with_tx!(self.db, conn => {
            diesel::insert_into(platforms::table)
                .values((
                    platforms::issuer.eq(key.0),
                    platforms::client_id.eq(key.1),
                    platforms::auth_url.eq(&platform.auth_url),
                    platforms::token_url.eq(&platform.token_url),
                    platforms::jwks_url.eq(&platform.jwks_url),
                    platforms::unique_id_claim.eq(platform.unique_id_claim.as_str()),
                    platforms::created_at.eq(now.epoch_seconds()),
                ))
                .execute(conn)?;
            for deployment in &platform.deployments {
                diesel::insert_into(deployments::table)
                    .values((
                        deployments::issuer.eq(key.0),
                        deployments::client_id.eq(key.1),
                        deployments::deployment_id.eq(deployment),
                    ))
                    .on_conflict_do_nothing()
                    .execute(conn)?;
            }
            Ok(())
        });
        match r {
            Ok(()) => Ok(()),
            Err(DbError::Query(e)) if is_unique_violation(&e) => Err(AddPlatformError::Exists),
            Err(e) => Err(AddPlatformError::Store(e.into())),
        }
    }

    fn lti_platforms_of(&self, issuer: &str) -> Result<Vec<Platform>, StoreError> {
        self.read_platforms(Some(issuer))
    }

    fn lti_platforms(&self) -> Result<Vec<Platform>, StoreError> {
        self.read_platforms(None)
    }

    fn remove_lti_platform(&self, issuer: &str, client_id: &str) -> Result<bool, StoreError> {
        let n = (|| -> Result<usize, DbError> {
            with_write!(self.db, conn => {
                Ok(diesel::delete(platforms::table.find((issuer, client_id))).execute(conn)?)
            })
        })()?;
        Ok(n > 0)
    }

    fn add_lti_key(&self, key: &ToolKey, keep: usize) -> Result<(), StoreError> {
        let r: Result<(), DbError> = with_tx!(self.db, conn => {
            diesel::insert_into(keys::table)
                .values((
                    keys::kid.eq(&key.kid),
                    keys::private_key.eq(key.private_key.expose()),
                    keys::created_at.eq(key.created_at.epoch_seconds()),
                ))
                .execute(conn)?;
            let kept: Vec<String> = keys::table
                .order((keys::created_at.desc(), keys::kid.desc()))
                .select(keys::kid)
                .limit(i64::try_from(keep).unwrap_or(i64::MAX))
                .load(conn)?;
            diesel::delete(keys::table.filter(keys::kid.ne_all(kept))).execute(conn)?;
            Ok(())
        });
        Ok(r?)
    }

    fn lti_keys(&self) -> Result<Vec<ToolKey>, StoreError> {
        let rows: Vec<(String, String, i64)> = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                Ok(keys::table
                    .order((keys::created_at.desc(), keys::kid.desc()))
                    .load(conn)?)
            })
        })()?;
        Ok(rows
            .into_iter()
            .map(|(kid, private_key, created_at)| ToolKey {
                kid,
                private_key: Secret::new(private_key),
                created_at: Timestamp::from_epoch_seconds(created_at),
            })
            .collect())
    }

    fn begin_lti_login(&self, login: &PendingLogin, now: Timestamp) -> Result<(), StoreError> {
        let r = (|| -> Result<usize, DbError> {
            with_write!(self.db, conn => {
                diesel::delete(logins::table.filter(logins::expires_at.lt(now.epoch_seconds())))
                    .execute(conn)?;
                Ok(diesel::insert_into(logins::table)
                    .values((
                        logins::state.eq(&login.state),
                        logins::nonce.eq(&login.nonce),
                        logins::issuer.eq(&login.issuer),
                        logins::client_id.eq(&login.client_id),
                        logins::expires_at.eq(login.expires_at.epoch_seconds()),
                    ))
                    .execute(conn)?)
            })
        })();
        r.map(|_| ()).map_err(Into::into)
    }

    fn take_lti_login(
        &self,
        state: &str,
        now: Timestamp,
    ) -> Result<Option<PendingLogin>, StoreError> {
        let row: Option<LoginRow> = (|| -> Result<_, DbError> {
            with_write!(self.db, conn => {
                // One statement takes the row: of two launches with one state, one gets it.
                Ok(diesel::delete(logins::table.find(state))
                    .returning((
                        logins::state,
                        logins::nonce,
                        logins::issuer,
                        logins::client_id,
                        logins::expires_at,
                    ))
                    .get_result(conn)
                    .optional()?)
            })
        })()?;
        Ok(row
            .filter(|(.., expires_at)| *expires_at >= now.epoch_seconds())
            .map(
                |(state, nonce, issuer, client_id, expires_at)| PendingLogin {
                    state,
                    nonce,
                    issuer,
                    client_id,
                    expires_at: Timestamp::from_epoch_seconds(expires_at),
                },
            ))
    }

    fn course_library(&self, course: &CourseKey) -> Result<Option<ObjectId>, StoreError> {
        let id: Option<String> = (|| -> Result<_, DbError> {
            with_conn!(self.db, conn => {
                Ok(courses::table
                    .inner_join(objects::table)
                    .filter(courses::platform.eq(course.platform()))
                    .filter(courses::context_id.eq(course.context()))
                    .filter(objects::deleted_at.is_null())
                    .select(courses::library_id)
                    .first(conn)
                    .optional()?)
            })
        })()?;
        id.as_deref().map(library_id).transpose()
    }

    fn create_course_library(
        &self,
        course: &CourseKey,
        library: &MediaObject,
        admin: UserId,
    ) -> Result<CourseLibrary, CreateObjectError> {
        let now = library.created().epoch_seconds();
        let key = (course.platform(), course.context());
        let r: Result<Option<String>, DbError> = with_tx!(self.db, conn => {
            // Rare (once a course) and read-then-write: serialized like graph changes.
            conn.lock_graph()?;
            let found: Option<(String, Option<i64>)> = courses::table
                .inner_join(objects::table)
                .filter(courses::platform.eq(key.0))
                .filter(courses::context_id.eq(key.1))
                .select((courses::library_id, objects::deleted_at))
                .first(conn)
                .optional()?;
            if let Some((id, None)) = found {
                return Ok(Some(id));
            }
            insert_library!(conn, library, admin);
            // A course whose library was deleted gets the new one.
            diesel::delete(courses::table.find(key)).execute(conn)?;
            diesel::insert_into(courses::table)
                .values((
                    courses::platform.eq(key.0),
                    courses::context_id.eq(key.1),
                    courses::library_id.eq(library.id().to_string()),
                    courses::created_at.eq(now),
                ))
                .execute(conn)?;
            Ok(None)
        });
        match r.map_err(|e| CreateObjectError::Store(e.into()))? {
            Some(existing) => Ok(CourseLibrary::Existing(library_id(&existing)?)),
            None => Ok(CourseLibrary::Created(library.id())),
        }
    }
}
