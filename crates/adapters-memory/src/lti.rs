//! LTI: consumers, the nonces their launches used, and course libraries.

use medialib_domain::lti::CourseKey;
use medialib_domain::lti::v1p3::Platform;
use medialib_domain::{MediaObject, ObjectId, Timestamp, UserId};
use medialib_ports::{
    AddConsumerError, AddPlatformError, CourseLibrary, CreateObjectError, LtiConsumer,
    LtiRepository, PendingLogin, StoreError, ToolKey, UsedNonce,
};

use crate::MemoryStore;
use crate::state::constraint;

impl LtiRepository for MemoryStore {
    fn add_lti_consumer(&self, consumer: &LtiConsumer) -> Result<(), AddConsumerError> {
        let mut state = self.lock();
        if state.lti_consumers.contains_key(&consumer.key) {
            return Err(AddConsumerError::KeyTaken);
        }
        state
            .lti_consumers
            .insert(consumer.key.clone(), consumer.clone());
        Ok(())
    }

    fn lti_consumer(&self, key: &str) -> Result<Option<LtiConsumer>, StoreError> {
        Ok(self.lock().lti_consumers.get(key).cloned())
    }

    fn lti_consumers(&self) -> Result<Vec<LtiConsumer>, StoreError> {
        Ok(self.lock().lti_consumers.values().cloned().collect())
    }

    fn remove_lti_consumer(&self, key: &str) -> Result<bool, StoreError> {
        let mut state = self.lock();
        state.lti_nonces.retain(|(consumer, _), _| consumer != key);
        Ok(state.lti_consumers.remove(key).is_some())
    }

    fn use_lti_nonce(&self, used: UsedNonce<'_>, now: Timestamp) -> Result<bool, StoreError> {
        let mut state = self.lock();
        if !state.lti_consumers.contains_key(used.consumer) {
            return Err(constraint(
                "lti_nonces.consumer_key references lti_consumers",
            ));
        }
        state
            .lti_nonces
            .retain(|(c, _), until| c != used.consumer || *until >= now);
        let key = (used.consumer.to_owned(), used.nonce.to_owned());
        if state.lti_nonces.contains_key(&key) {
            return Ok(false);
        }
        state.lti_nonces.insert(key, used.kept_until);
        Ok(true)
    }

    fn add_lti_platform(
        &self,
        platform: &Platform,
        _now: Timestamp,
    ) -> Result<(), AddPlatformError> {
        let key = (platform.issuer.clone(), platform.client_id.clone());
        let mut state = self.lock();
        if state.lti_platforms.contains_key(&key) {
            return Err(AddPlatformError::Exists);
        }
        let mut stored = platform.clone();
        stored.deployments.sort();
        stored.deployments.dedup();
        state.lti_platforms.insert(key, stored);
        Ok(())
    }

    fn lti_platforms_of(&self, issuer: &str) -> Result<Vec<Platform>, StoreError> {
        Ok(self
            .lock()
            .lti_platforms
            .values()
            .filter(|p| p.issuer == issuer)
            .cloned()
            .collect())
    }

    fn lti_platforms(&self) -> Result<Vec<Platform>, StoreError> {
        Ok(self.lock().lti_platforms.values().cloned().collect())
    }

    fn remove_lti_platform(&self, issuer: &str, client_id: &str) -> Result<bool, StoreError> {
        let key = (issuer.to_owned(), client_id.to_owned());
        Ok(self.lock().lti_platforms.remove(&key).is_some())
    }

    fn add_lti_key(&self, key: &ToolKey, keep: usize) -> Result<(), StoreError> {
        let mut state = self.lock();
        if state.lti_keys.iter().any(|k| k.kid == key.kid) {
            return Err(constraint("lti_keys.kid is unique"));
        }
        state.lti_keys.push(key.clone());
        state
            .lti_keys
            .sort_by(|a, b| (b.created_at, &b.kid).cmp(&(a.created_at, &a.kid)));
        state.lti_keys.truncate(keep);
        Ok(())
    }

    fn lti_keys(&self) -> Result<Vec<ToolKey>, StoreError> {
        Ok(self.lock().lti_keys.clone())
    }

    fn begin_lti_login(&self, login: &PendingLogin, now: Timestamp) -> Result<(), StoreError> {
        let mut state = self.lock();
        state.lti_logins.retain(|_, l| l.expires_at >= now);
        if state.lti_logins.contains_key(&login.state) {
            return Err(constraint("lti_logins.state is unique"));
        }
        state.lti_logins.insert(login.state.clone(), login.clone());
        Ok(())
    }

    fn take_lti_login(
        &self,
        state: &str,
        now: Timestamp,
    ) -> Result<Option<PendingLogin>, StoreError> {
        Ok(self
            .lock()
            .lti_logins
            .remove(state)
            .filter(|l| l.expires_at >= now))
    }

    fn course_library(&self, course: &CourseKey) -> Result<Option<ObjectId>, StoreError> {
        let state = self.lock();
        Ok(state
            .lti_courses
            .get(course)
            .copied()
            .filter(|id| state.live_object(*id).is_some()))
    }

    fn create_course_library(
        &self,
        course: &CourseKey,
        library: &MediaObject,
        admin: UserId,
    ) -> Result<CourseLibrary, CreateObjectError> {
        let mut state = self.lock();
        if let Some(id) = state.lti_courses.get(course).copied()
            && state.live_object(id).is_some()
        {
            return Ok(CourseLibrary::Existing(id));
        }
        state.create_library(library, admin)?;
        state.lti_courses.insert(course.clone(), library.id());
        Ok(CourseLibrary::Created(library.id()))
    }
}
