//! What the store holds: one map per table of the diesel adapter's schema, and the lookups
//! several ports share. Only what some port reads back is kept (the diesel adapter also
//! writes `created_at`/`modified_at` columns that no port reads).

use std::collections::{BTreeMap, BTreeSet};

use medialib_domain::oauth::{
    AccessTokenRecord, Client, ClientId, IssuedCode, NewTokens, RefreshTokenRecord, Revocation,
    ScopeSet, Spent, Successor,
};
use medialib_domain::{
    AccessView, BrowserSession, GrantId, Lifecycle, MediaObject, ObjectId, PermissionLevel,
    StoredObject, Timestamp, TokenDigest, UniqueId, User, UserId,
};
use medialib_ports::{
    BearerRecord, MediaRecord, PasswordHash, StoreError, StoredPendingSignIn, UploadRecord,
};

/// What the diesel adapter reports when the database refuses a write (a primary key, a
/// unique or a foreign key constraint it does not map to a business outcome): the whole
/// transaction is rolled back and the caller gets `StoreError::Unexpected`.
pub(crate) fn constraint(what: &str) -> StoreError {
    StoreError::Unexpected(format!("constraint violated: {what}"))
}

/// An object and, while it is soft-deleted, the collection whose removal deleted it.
#[derive(Debug, Clone)]
pub(crate) struct ObjectRecord {
    pub(crate) object: MediaObject,
    pub(crate) deleted_from: Option<ObjectId>,
}

/// An OAuth grant: one user's approval of one client.
#[derive(Debug, Clone)]
pub(crate) struct GrantRecord {
    pub(crate) client: ClientId,
    pub(crate) user: UserId,
    pub(crate) scope: ScopeSet,
    pub(crate) created_at: Timestamp,
    pub(crate) revoked_at: Option<Timestamp>,
}

/// An issued authorization code; `redeemed_at` is set once it is spent (or burnt).
#[derive(Debug, Clone)]
pub(crate) struct CodeRecord {
    pub(crate) code: IssuedCode,
    pub(crate) redeemed_at: Option<Timestamp>,
    pub(crate) grant: Option<GrantId>,
}

/// An access token.
#[derive(Debug, Clone)]
pub(crate) struct AccessRecord {
    pub(crate) grant: GrantId,
    pub(crate) user: UserId,
    pub(crate) client: ClientId,
    pub(crate) scope: ScopeSet,
    pub(crate) expires_at: Timestamp,
    pub(crate) revoked_at: Option<Timestamp>,
}

/// A refresh token. (The diesel schema also has a `revoked_at` column that nothing ever
/// sets: a refresh token is revoked through its grant.)
#[derive(Debug, Clone)]
pub(crate) struct RefreshRecord {
    pub(crate) grant: GrantId,
    pub(crate) expires_at: Timestamp,
    pub(crate) used_at: Option<Timestamp>,
    /// The refresh and access tokens its rotation gave.
    pub(crate) successor: Option<(TokenDigest, TokenDigest)>,
}

/// A redirect-based sign-in in progress.
#[derive(Debug, Clone)]
pub(crate) struct PendingRecord {
    pub(crate) pending: StoredPendingSignIn,
    pub(crate) expires_at: Timestamp,
}

/// An upload in progress and its write lock: who holds it, until when.
#[derive(Debug, Clone)]
pub(crate) struct UploadEntry {
    pub(crate) record: UploadRecord,
    pub(crate) lock: Option<(String, Timestamp)>,
}

/// Every table. Mutated only under the store's mutex, and only after a method has decided
/// its outcome, so that a method that fails leaves it as it was.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) users: BTreeMap<UserId, User>,
    pub(crate) credentials: BTreeMap<UserId, PasswordHash>,
    pub(crate) objects: BTreeMap<ObjectId, ObjectRecord>,
    /// collection → member → when it was added.
    pub(crate) members: BTreeMap<ObjectId, BTreeMap<ObjectId, Timestamp>>,
    /// member → the collections it is directly in (the same edges as `members`).
    pub(crate) parents: BTreeMap<ObjectId, BTreeSet<ObjectId>>,
    /// collection → user → explicit level.
    pub(crate) permissions: BTreeMap<ObjectId, BTreeMap<UserId, PermissionLevel>>,
    pub(crate) clients: BTreeMap<ClientId, Client>,
    pub(crate) grants: BTreeMap<GrantId, GrantRecord>,
    pub(crate) codes: BTreeMap<TokenDigest, CodeRecord>,
    pub(crate) access_tokens: BTreeMap<TokenDigest, AccessRecord>,
    pub(crate) refresh_tokens: BTreeMap<TokenDigest, RefreshRecord>,
    pub(crate) sessions: BTreeMap<TokenDigest, BrowserSession>,
    pub(crate) pending: BTreeMap<TokenDigest, PendingRecord>,
    pub(crate) uploads: BTreeMap<ObjectId, UploadEntry>,
    pub(crate) media: BTreeMap<ObjectId, MediaRecord>,
    pub(crate) jobs: BTreeMap<ObjectId, crate::jobs::JobEntry>,
    /// LTI 1.1 consumers by key.
    pub(crate) lti_consumers: BTreeMap<String, medialib_ports::LtiConsumer>,
    /// (consumer key, nonce) → until when it is remembered.
    pub(crate) lti_nonces: BTreeMap<(String, String), Timestamp>,
    /// LTI 1.3 platforms by (issuer, client id).
    pub(crate) lti_platforms: BTreeMap<(String, String), medialib_domain::lti::v1p3::Platform>,
    /// Each course's library.
    pub(crate) lti_courses: BTreeMap<medialib_domain::lti::CourseKey, ObjectId>,
    /// medialib's LTI signing keys, in the order they were added.
    pub(crate) lti_keys: Vec<medialib_ports::ToolKey>,
    /// LTI 1.3 logins begun, by state.
    pub(crate) lti_logins: BTreeMap<String, medialib_ports::PendingLogin>,
    /// The organization's `media_signing_key`.
    pub(crate) media_signing_key: Option<Vec<u8>>,
}

impl State {
    /// The user with this uniqueId.
    pub(crate) fn user_by_unique_id(&self, unique_id: &UniqueId) -> Option<&User> {
        self.users.values().find(|u| u.unique_id == *unique_id)
    }

    /// A live object.
    pub(crate) fn live_object(&self, id: ObjectId) -> Option<&MediaObject> {
        self.objects
            .get(&id)
            .map(|r| &r.object)
            .filter(|o| o.lifecycle() == Lifecycle::Live)
    }

    /// Soft-deletes `member` at `now` when it is live, remembering `from` (the collection it
    /// was removed from, for restore). Mirrors adapters-diesel: the soft deletion sets the
    /// modification time to `now` itself (not the later of the two).
    pub(crate) fn soft_delete(&mut self, member: ObjectId, now: Timestamp, from: Option<ObjectId>) {
        if let Some(record) = self
            .objects
            .get_mut(&member)
            .filter(|r| r.object.lifecycle() == Lifecycle::Live)
        {
            record.object = Self::rebuilt(&record.object, now, Lifecycle::SoftDeleted { at: now });
            record.deleted_from = from;
        }
    }

    /// Whether `member` is directly in `collection` (whatever either's lifecycle).
    pub(crate) fn is_member(&self, collection: ObjectId, member: ObjectId) -> bool {
        self.members
            .get(&collection)
            .is_some_and(|m| m.contains_key(&member))
    }

    /// The collections `member` is directly in (whatever their lifecycle).
    pub(crate) fn parents_of(&self, member: ObjectId) -> impl Iterator<Item = ObjectId> + '_ {
        self.parents.get(&member).into_iter().flatten().copied()
    }

    /// Adds the edge `collection` ⊃ `member` (no check: the caller decided).
    pub(crate) fn link(&mut self, collection: ObjectId, member: ObjectId, added_at: Timestamp) {
        self.members
            .entry(collection)
            .or_default()
            .insert(member, added_at);
        self.parents.entry(member).or_default().insert(collection);
    }

    /// Removes the edge `collection` ⊃ `member`, if there is one.
    pub(crate) fn unlink(&mut self, collection: ObjectId, member: ObjectId) {
        if let Some(m) = self.members.get_mut(&collection) {
            m.remove(&member);
            if m.is_empty() {
                self.members.remove(&collection);
            }
        }
        if let Some(p) = self.parents.get_mut(&member) {
            p.remove(&collection);
            if p.is_empty() {
                self.parents.remove(&member);
            }
        }
    }

    /// Walks the membership graph upwards from `starts` (whatever the lifecycles): every
    /// ancestor collection, and the edges `(collection, member)` walked. The walk of the
    /// diesel adapter's `ancestors!`.
    pub(crate) fn ancestors(
        &self,
        starts: &[ObjectId],
    ) -> (BTreeSet<ObjectId>, Vec<(ObjectId, ObjectId)>) {
        let mut seen = BTreeSet::new();
        let mut edges = Vec::new();
        let mut frontier: Vec<ObjectId> = starts.to_vec();
        while !frontier.is_empty() {
            let mut next = Vec::new();
            for member in frontier {
                for collection in self.parents_of(member) {
                    if seen.insert(collection) {
                        next.push(collection);
                    }
                    edges.push((collection, member));
                }
            }
            frontier = next;
        }
        (seen, edges)
    }

    /// `user`'s explicit entries on each of `objects` and their ancestors, with the edges
    /// between them.
    pub(crate) fn access_view(&self, user: UserId, objects: &[ObjectId]) -> AccessView {
        let (mut nodes, edges) = self.ancestors(objects);
        nodes.extend(objects.iter().copied());
        let entries: Vec<(ObjectId, PermissionLevel)> = nodes
            .iter()
            .filter_map(|c| Some((*c, *self.permissions.get(c)?.get(&user)?)))
            .collect();
        AccessView::new(edges, entries)
    }

    /// The object rebuilt with another modification time and lifecycle.
    pub(crate) fn rebuilt(
        object: &MediaObject,
        modified: Timestamp,
        lifecycle: Lifecycle,
    ) -> MediaObject {
        MediaObject::restore(StoredObject {
            id: object.id(),
            object_type: object.object_type(),
            fields: object.fields().clone(),
            owner: object.owner(),
            shortcode: object.shortcode().clone(),
            created: object.created(),
            modified,
            lifecycle,
        })
    }

    /// An access token with its grant's revocation.
    pub(crate) fn access_record(&self, digest: &TokenDigest) -> Option<AccessTokenRecord> {
        let t = self.access_tokens.get(digest)?;
        let grant = self.grants.get(&t.grant)?;
        Some(AccessTokenRecord {
            grant: t.grant,
            user: t.user,
            client: t.client.clone(),
            scope: t.scope,
            expires_at: t.expires_at,
            revoked: Revocation {
                token: t.revoked_at.is_some(),
                grant: grant.revoked_at.is_some(),
            },
        })
    }

    /// An access token and the user it acts for.
    pub(crate) fn bearer_record(&self, digest: &TokenDigest) -> Option<BearerRecord> {
        let token = self.access_record(digest)?;
        let user = self.users.get(&token.user).cloned();
        Some(BearerRecord { token, user })
    }

    /// A refresh token with its grant's client, user and scope (a refresh token is revoked
    /// only with its grant here: RFC 7009 on a refresh token revokes the grant).
    pub(crate) fn refresh_record(&self, digest: &TokenDigest) -> Option<RefreshTokenRecord> {
        let t = self.refresh_tokens.get(digest)?;
        let grant = self.grants.get(&t.grant)?;
        Some(RefreshTokenRecord {
            digest: *digest,
            grant: t.grant,
            client: grant.client.clone(),
            user: grant.user,
            scope: grant.scope,
            expires_at: t.expires_at,
            spent: t.used_at.map(|at| Spent {
                at,
                successor: t.successor.map(|(refresh, access)| Successor {
                    refresh,
                    access,
                    untouched: self
                        .refresh_tokens
                        .get(&refresh)
                        .is_some_and(|s| s.used_at.is_none()),
                }),
            }),
            revoked: Revocation {
                token: false,
                grant: grant.revoked_at.is_some(),
            },
        })
    }

    /// Marks a grant revoked (if it is not already): every token descended from it stops
    /// working.
    pub(crate) fn revoke_grant(&mut self, grant: GrantId, now: Timestamp) {
        if let Some(g) = self.grants.get_mut(&grant) {
            g.revoked_at.get_or_insert(now);
        }
    }

    /// Refuses tokens whose digests are taken, as the tables' primary keys would.
    pub(crate) fn check_new_tokens(&self, tokens: &NewTokens<'_>) -> Result<(), StoreError> {
        if self.access_tokens.contains_key(&tokens.access.digest) {
            return Err(constraint("oauth_access_tokens.digest is the primary key"));
        }
        if let Some(r) = tokens.refresh {
            if self.refresh_tokens.contains_key(&r.digest) {
                return Err(constraint("oauth_refresh_tokens.digest is the primary key"));
            }
        }
        Ok(())
    }

    /// Stores a minted access token and, when there is one, a refresh token of `grant`
    /// (checked by [`check_new_tokens`](Self::check_new_tokens) first).
    pub(crate) fn insert_tokens(&mut self, tokens: &NewTokens<'_>) {
        self.access_tokens.insert(
            tokens.access.digest,
            AccessRecord {
                grant: tokens.grant,
                user: tokens.user,
                client: tokens.client.clone(),
                scope: tokens.scope,
                expires_at: tokens.access.expires_at,
                revoked_at: None,
            },
        );
        if let Some(r) = tokens.refresh {
            self.refresh_tokens.insert(
                r.digest,
                RefreshRecord {
                    grant: tokens.grant,
                    expires_at: r.expires_at,
                    used_at: None,
                    successor: None,
                },
            );
        }
    }
}
