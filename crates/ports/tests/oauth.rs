//! The OAuth use cases on the in-memory store: the token endpoint's two grants as the
//! domain decides them and the store writes them, bearer authentication, revocation and
//! introspection. No database: `cargo test -p medialib-ports`.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "tests (helpers included) fail by panicking"
)]

use std::sync::mpsc::channel;

use medialib_adapters_memory::testing::{Harness, REDIRECT, refresh_digest};
use medialib_domain::oauth::{
    AccessTokenInvalid, AuthorizeParams, ClientAuthError, ClientId, CodeDecision, CodeExchange,
    CodeFacts, CodePresentation, CodeRefusal, OAuthErrorCode, RedeemError, RefreshDecision,
    RefreshError, RefreshExchange, RefreshFacts, RefreshPresentation, RefreshRefusal, ScopeSet,
    TokenLifetimes, TokenRandomness, decide_code, decide_refresh,
};
use medialib_domain::{GrantId, Secret, Timestamp, TokenDigest, TokenKind};
use medialib_ports::services::{
    BearerError, ClientAuthFailed, ClientCredentials, CodeGrantFailed, Introspection, OAuthFailure,
    RefreshGrantFailed,
};
use medialib_ports::{
    Applied, Contest, GrantUnit, MAX_LOST_WRITES, RandomExt, RevokeOutcome, StoreError,
    decide_and_write,
};

fn refused(r: CodeRefusal) -> Result<(), CodeGrantFailed> {
    Err(CodeGrantFailed::Refused(r))
}

fn exchange(h: &Harness, creds: &ClientCredentials, code: &str) -> Result<(), CodeGrantFailed> {
    h.services
        .oauth()
        .exchange_code(creds, code, Some(REDIRECT), None)
        .map(drop)
}

fn with_secret(creds: &ClientCredentials, secret: Option<&str>) -> ClientCredentials {
    ClientCredentials {
        client_id: creds.client_id.clone(),
        client_secret: secret.map(Secret::new),
    }
}

#[test]
fn the_client_authenticates_before_the_code_is_looked_at() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let creds = h.client();
    let code = h.code(&creds, &alice, true);
    for (creds, want) in [
        (
            with_secret(&creds, None),
            CodeRefusal::Client(ClientAuthError::MissingSecret),
        ),
        (
            with_secret(&creds, Some("mls_wrong")),
            CodeRefusal::Client(ClientAuthError::WrongSecret),
        ),
        (
            ClientCredentials {
                client_id: "someone-else".into(),
                client_secret: creds.client_secret.clone(),
            },
            CodeRefusal::UnknownClient,
        ),
        (
            ClientCredentials {
                client_id: "not a client id!".into(),
                client_secret: None,
            },
            CodeRefusal::UnknownClient,
        ),
    ] {
        assert_eq!(exchange(&h, &creds, &code), refused(want.clone()));
        assert_eq!(want.error_code(), OAuthErrorCode::InvalidClient);
    }
    // The refusals left the code unspent.
    assert_eq!(exchange(&h, &creds, &code), Ok(()));
    // A malformed code still answers the client first.
    assert_eq!(
        exchange(&h, &with_secret(&creds, Some("mls_wrong")), "junk"),
        refused(CodeRefusal::Client(ClientAuthError::WrongSecret))
    );
    assert_eq!(
        exchange(&h, &creds, "junk"),
        refused(CodeRefusal::UnknownCode)
    );
    assert_eq!(
        exchange(&h, &creds, "mlc_unknownunknownunknownunknownunknownunkno"),
        refused(CodeRefusal::UnknownCode)
    );
}

#[test]
fn a_failed_redemption_burns_the_code_and_its_replay_revokes_nothing() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let creds = h.client();
    let other = h.client();
    let code = h.code(&creds, &alice, false);
    // Another (authenticated) client presents it: refused, and the code is burnt.
    assert_eq!(
        exchange(&h, &other, &code),
        refused(CodeRefusal::Code(RedeemError::WrongClient))
    );
    assert_eq!(
        exchange(&h, &creds, &code),
        refused(CodeRefusal::Code(RedeemError::Replayed { grant: None }))
    );
    // A redirect mismatch burns too.
    let code = h.code(&creds, &alice, false);
    let wrong =
        h.services
            .oauth()
            .exchange_code(&creds, &code, Some("https://elsewhere.example/cb"), None);
    assert_eq!(
        wrong.map(drop),
        refused(CodeRefusal::Code(RedeemError::RedirectMismatch))
    );
    assert_eq!(
        exchange(&h, &creds, &code),
        refused(CodeRefusal::Code(RedeemError::Replayed { grant: None }))
    );
    // So does expiry (the code lives 60 s here).
    let code = h.code(&creds, &alice, false);
    h.advance(60);
    assert_eq!(
        exchange(&h, &creds, &code),
        refused(CodeRefusal::Code(RedeemError::Expired))
    );
}

/// Grant ids are the key of the grant and of an index of each token table: they are minted in
/// the order of the exchanges, in the same second too, so each lands on those indexes' last
/// page (`GrantId::ordered`, docs/storage.md).
#[test]
fn each_exchange_mints_a_grant_id_after_the_last_one() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let creds = h.client();
    let grants: Vec<String> = (0..70)
        .map(|_| {
            let code = h.code(&creds, &alice, true);
            let tokens = h
                .services
                .oauth()
                .exchange_code(&creds, &code, Some(REDIRECT), None)
                .unwrap();
            tokens.grant.to_string()
        })
        .collect();
    assert!(
        grants.windows(2).all(|w| w[0] < w[1]),
        "in text order as minted: {grants:?}"
    );
}

#[test]
fn a_replayed_code_revokes_every_token_of_the_grant_it_produced() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let creds = h.client();
    let code = h.code(&creds, &alice, true);
    let first = h
        .services
        .oauth()
        .exchange_code(&creds, &code, Some(REDIRECT), None)
        .unwrap();
    assert!(
        h.services
            .oauth()
            .authenticate_bearer(first.access_token.expose())
            .is_ok()
    );
    let replay = h
        .services
        .oauth()
        .exchange_code(&creds, &code, Some(REDIRECT), None);
    assert_eq!(
        replay,
        Err(CodeGrantFailed::Refused(CodeRefusal::Code(
            RedeemError::Replayed {
                grant: Some(first.grant)
            }
        )))
    );
    assert_eq!(
        h.services
            .oauth()
            .authenticate_bearer(first.access_token.expose())
            .unwrap_err(),
        BearerError::Invalid(AccessTokenInvalid::Revoked)
    );
    let refresh = first.refresh_token.unwrap();
    assert_eq!(
        h.services.oauth().refresh(&creds, refresh.expose(), None),
        Err(RefreshGrantFailed::Refused(RefreshRefusal::Token(
            RefreshError::Revoked
        )))
    );
}

/// The inputs of one code exchange.
/// What a client presents in a code exchange or a refresh, owned, as a grant's work owns what
/// it decides on (`GrantWork`).
struct Presented {
    client: ClientId,
    secret: Option<Secret>,
    now: Timestamp,
    random: TokenRandomness,
    lifetimes: TokenLifetimes,
}

impl Presented {
    fn code(&self) -> CodeExchange<'_> {
        CodeExchange {
            presentation: CodePresentation {
                client: &self.client,
                redirect_uri: Some(REDIRECT),
                verifier: None,
            },
            client_secret: self.secret.as_ref(),
            now: self.now,
            random: self.random,
            lifetimes: self.lifetimes,
        }
    }

    fn refresh(&self) -> RefreshExchange<'_> {
        RefreshExchange {
            presentation: RefreshPresentation {
                client: &self.client,
                scope: None,
            },
            client_secret: self.secret.as_ref(),
            now: self.now,
            random: self.random,
            lifetimes: self.lifetimes,
        }
    }
}

fn presented(h: &Harness, client: &ClientId, secret: Option<&Secret>) -> Presented {
    Presented {
        client: client.clone(),
        secret: secret.cloned(),
        now: h.now(),
        random: TokenRandomness {
            access: h.random.bytes32(),
            refresh: h.random.bytes32(),
        },
        lifetimes: h.services.settings().lifetimes,
    }
}

fn new_grant(h: &Harness) -> GrantId {
    GrantId::generate(&h.store.namespace().unwrap(), h.random.bytes16())
}

/// A unit in which a concurrent caller's decision is written between this caller's read
/// and its write, as happens when two requests present the same code or token at once.
struct Racing<'u, 'b, F, D> {
    inner: &'u mut (dyn GrantUnit<F, D> + 'b),
    /// The concurrent caller's decision: written before this unit's first write.
    rival: Option<Box<dyn FnOnce(F) -> D + 'u>>,
    /// What the rival decided.
    rival_won: Option<D>,
}

impl<F, D: Clone> GrantUnit<F, D> for Racing<'_, '_, F, D> {
    fn facts(&mut self) -> Result<F, StoreError> {
        self.inner.facts()
    }

    fn apply(&mut self, decision: &D, now: Timestamp) -> Result<Applied, StoreError> {
        if let Some(rival) = self.rival.take() {
            let won = rival(self.inner.facts()?);
            assert_eq!(self.inner.apply(&won, now)?, Applied::Written);
            self.rival_won = Some(won);
        }
        self.inner.apply(decision, now)
    }
}

#[test]
fn a_redemption_that_loses_the_race_is_a_replay_and_revokes_the_winner() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let creds = h.client();
    let client = ClientId::parse(&creds.client_id).unwrap();
    let secret = creds.client_secret.as_ref();
    let code = h.code(&creds, &alice, true);
    let digest = TokenKind::Code.digest_presented(&code).unwrap();
    let winner = presented(&h, &client, secret);
    let loser = presented(&h, &client, secret);
    let (winner_grant, loser_grant) = (new_grant(&h), new_grant(&h));
    let (won_tx, won) = channel();
    let now = h.now();
    let decision = h
        .store
        .code_grant(Contest {
            digest: &digest,
            client: &client,
            work: Box::new(move |unit| {
                let mut racing = Racing {
                    inner: unit,
                    rival: Some(Box::new(|facts: CodeFacts| {
                        decide_code(facts, &winner.code(), winner_grant)
                    })),
                    rival_won: None,
                };
                let d = decide_and_write(&mut racing, now, |facts| {
                    decide_code(facts, &loser.code(), loser_grant)
                });
                won_tx.send(racing.rival_won).unwrap();
                d
            }),
        })
        .unwrap();
    let won = won.recv().unwrap();
    let Some(CodeDecision::Redeem(redemption)) = won else {
        panic!("the rival redeemed the code: {won:?}");
    };
    assert_ne!(redemption.grant(), loser_grant);
    // The loser decided again on the facts the winner left: a replay, which revokes the
    // winner's grant.
    assert_eq!(decision, CodeDecision::RevokeGrant(redemption.grant()));
    let access = redemption.new_tokens().access.secret.clone();
    assert_eq!(
        h.services
            .oauth()
            .authenticate_bearer(access.expose())
            .unwrap_err(),
        BearerError::Invalid(AccessTokenInvalid::Revoked)
    );
    // Positive control: without a rival the same unit redeems.
    let code = h.code(&creds, &alice, true);
    let digest = TokenKind::Code.digest_presented(&code).unwrap();
    let (alone, grant) = (presented(&h, &client, secret), new_grant(&h));
    let decision = h
        .store
        .code_grant(Contest {
            digest: &digest,
            client: &client,
            work: Box::new(move |unit| {
                decide_and_write(unit, now, |facts| decide_code(facts, &alone.code(), grant))
            }),
        })
        .unwrap();
    assert!(matches!(decision, CodeDecision::Redeem(_)), "{decision:?}");
}

#[test]
fn a_rotation_that_loses_the_race_is_a_reuse_and_revokes_the_family() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let creds = h.client();
    let client = ClientId::parse(&creds.client_id).unwrap();
    let tokens = h.tokens(&creds, &alice, true);
    let digest = refresh_digest(&tokens);
    let exchange = || presented(&h, &client, creds.client_secret.as_ref());
    let (winner, loser) = (exchange(), exchange());
    let (won_tx, won) = channel();
    let now = h.now();
    let decision = h
        .store
        .refresh_grant(Contest {
            digest: &digest,
            client: &client,
            work: Box::new(move |unit| {
                let mut racing = Racing {
                    inner: unit,
                    rival: Some(Box::new(|facts: RefreshFacts| {
                        decide_refresh(facts, &winner.refresh())
                    })),
                    rival_won: None,
                };
                let d = decide_and_write(&mut racing, now, |f| decide_refresh(f, &loser.refresh()));
                won_tx.send(racing.rival_won).unwrap();
                d
            }),
        })
        .unwrap();
    let won = won.recv().unwrap();
    let Some(RefreshDecision::Rotate(rotation)) = won else {
        panic!("the rival rotated the token: {won:?}");
    };
    assert_eq!(decision, RefreshDecision::RevokeGrant(tokens.grant));
    // The winner's new pair went with the family.
    let access = rotation.access().secret.clone();
    assert_eq!(
        h.services
            .oauth()
            .authenticate_bearer(access.expose())
            .unwrap_err(),
        BearerError::Invalid(AccessTokenInvalid::Revoked)
    );
    assert_eq!(
        h.services
            .oauth()
            .refresh(&creds, rotation.refresh().secret.expose(), None),
        Err(RefreshGrantFailed::Refused(RefreshRefusal::Token(
            RefreshError::Revoked
        )))
    );
}

#[test]
fn a_unit_whose_write_keeps_losing_is_a_store_failure() {
    /// A unit whose conditional write matches only after `0` losses (`u32::MAX`: a broken
    /// store, never).
    struct Losing(u32, u32);
    impl GrantUnit<(), ()> for Losing {
        fn facts(&mut self) -> Result<(), StoreError> {
            Ok(())
        }
        fn apply(&mut self, (): &(), _: Timestamp) -> Result<Applied, StoreError> {
            self.1 += 1;
            Ok(if self.1 > self.0 {
                Applied::Written
            } else {
                Applied::Lost
            })
        }
    }
    let now = Timestamp::from_epoch_seconds(0);
    let mut broken = Losing(u32::MAX, 0);
    assert!(matches!(
        decide_and_write(&mut broken, now, |()| ()),
        Err(StoreError::Unexpected(_))
    ));
    assert_eq!(broken.1, MAX_LOST_WRITES + 1, "it tried, then gave up");
    // Positive controls: losses up to the bound (a chain of concurrent retries), then a
    // write, is a decision made again and written.
    assert_eq!(decide_and_write(&mut Losing(1, 0), now, |()| ()), Ok(()));
    assert_eq!(
        decide_and_write(&mut Losing(MAX_LOST_WRITES, 0), now, |()| ()),
        Ok(())
    );
}

#[test]
fn a_refresh_rotates_once_and_a_reuse_revokes_the_family() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let creds = h.client();
    let first = h.tokens(&creds, &alice, true);
    let old = first.refresh_token.clone().unwrap();
    let second = h
        .services
        .oauth()
        .refresh(&creds, old.expose(), None)
        .unwrap();
    assert_eq!(second.grant, first.grant);
    assert_eq!(second.scope, first.scope);
    let new = second.refresh_token.clone().unwrap();
    assert_ne!(new, old);
    assert!(
        h.services
            .oauth()
            .authenticate_bearer(second.access_token.expose())
            .is_ok()
    );
    // The old token again: a reuse, which revokes the whole family.
    assert_eq!(
        h.services.oauth().refresh(&creds, old.expose(), None),
        Err(RefreshGrantFailed::Refused(RefreshRefusal::Token(
            RefreshError::Reused { grant: first.grant }
        )))
    );
    assert_eq!(
        h.services
            .oauth()
            .authenticate_bearer(second.access_token.expose())
            .unwrap_err(),
        BearerError::Invalid(AccessTokenInvalid::Revoked)
    );
    assert_eq!(
        h.services.oauth().refresh(&creds, new.expose(), None),
        Err(RefreshGrantFailed::Refused(RefreshRefusal::Token(
            RefreshError::Revoked
        )))
    );
}

#[test]
fn a_refresh_may_narrow_the_scope_but_not_widen_it() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let creds = h.client();
    let t = h.tokens(&creds, &alice, true);
    assert_eq!(t.scope, ScopeSet::DEFAULT);
    let refresh = t.refresh_token.unwrap();
    // Unparseable scope: invalid_scope, after the client authenticated, nothing spent.
    let bad = h
        .services
        .oauth()
        .refresh(&creds, refresh.expose(), Some("read fly"));
    assert!(matches!(bad, Err(RefreshGrantFailed::Scope(_))), "{bad:?}");
    assert_eq!(bad.unwrap_err().error_code(), OAuthErrorCode::InvalidScope);
    let unauthenticated = h.services.oauth().refresh(
        &with_secret(&creds, None),
        refresh.expose(),
        Some("read fly"),
    );
    assert_eq!(
        unauthenticated,
        Err(RefreshGrantFailed::Refused(RefreshRefusal::Client(
            ClientAuthError::MissingSecret
        )))
    );
    let narrowed = h
        .services
        .oauth()
        .refresh(&creds, refresh.expose(), Some("read"))
        .unwrap();
    assert_eq!(narrowed.scope, ScopeSet::parse("read").unwrap());
    // RFC 6749 §6: a refresh may ask for any scope "originally granted": the grant's, not
    // the last access token's.
    let again = h
        .services
        .oauth()
        .refresh(
            &creds,
            narrowed.refresh_token.unwrap().expose(),
            Some("read write"),
        )
        .unwrap();
    assert_eq!(again.scope, ScopeSet::DEFAULT);
    // A grant of `read` alone cannot widen to `write`.
    let params = AuthorizeParams {
        response_type: Some("code"),
        client_id: Some(&creds.client_id),
        redirect_uri: Some(REDIRECT),
        scope: Some("read"),
        state: Some("s"),
        access_type: Some("offline"),
        ..AuthorizeParams::default()
    };
    let request = h.services.oauth().start_authorization(&params).unwrap();
    let response = h
        .services
        .oauth()
        .approve_authorization(request, alice.id)
        .unwrap();
    let code = response.param("code").unwrap();
    let read_only = h
        .services
        .oauth()
        .exchange_code(&creds, code, Some(REDIRECT), None)
        .unwrap();
    let wider = h.services.oauth().refresh(
        &creds,
        read_only.refresh_token.unwrap().expose(),
        Some("read write"),
    );
    let refusal = RefreshRefusal::Token(RefreshError::ScopeWidened);
    assert_eq!(refusal.error_code(), OAuthErrorCode::InvalidScope);
    assert_eq!(wider, Err(RefreshGrantFailed::Refused(refusal)));
}

#[test]
fn a_write_the_database_would_refuse_writes_nothing() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let creds = h.client();
    let client = ClientId::parse(&creds.client_id).unwrap();
    let taken = h.tokens(&creds, &alice, false).grant;
    let code = h.code(&creds, &alice, false);
    let digest = TokenKind::Code.digest_presented(&code).unwrap();
    let collide = presented(&h, &client, creds.client_secret.as_ref());
    let now = h.now();
    let r = h.store.code_grant(Contest {
        digest: &digest,
        client: &client,
        work: Box::new(move |unit| {
            decide_and_write(unit, now, |facts| {
                decide_code(facts, &collide.code(), taken)
            })
        }),
    });
    assert!(matches!(r, Err(StoreError::Unexpected(_))), "{r:?}");
    // The code is still unspent.
    assert_eq!(exchange(&h, &creds, &code), Ok(()));
}

#[test]
fn token_failures_name_their_rfc_6749_error_codes() {
    let unavailable = StoreError::Unavailable("down".into());
    let broken = StoreError::Corrupt("row".into());
    let cases: [(&dyn OAuthFailure, OAuthErrorCode, bool); 8] = [
        (
            &ClientAuthFailed::Unknown,
            OAuthErrorCode::InvalidClient,
            false,
        ),
        (
            &ClientAuthFailed::Store(unavailable.clone()),
            OAuthErrorCode::TemporarilyUnavailable,
            true,
        ),
        (
            &CodeGrantFailed::Refused(CodeRefusal::UnknownCode),
            OAuthErrorCode::InvalidGrant,
            false,
        ),
        (
            &CodeGrantFailed::Refused(CodeRefusal::Client(ClientAuthError::UnexpectedSecret)),
            OAuthErrorCode::InvalidClient,
            false,
        ),
        (
            &CodeGrantFailed::Store(broken.clone()),
            OAuthErrorCode::ServerError,
            true,
        ),
        (
            &RefreshGrantFailed::Refused(RefreshRefusal::UnknownToken),
            OAuthErrorCode::InvalidGrant,
            false,
        ),
        (
            &RefreshGrantFailed::Refused(RefreshRefusal::UnknownClient),
            OAuthErrorCode::InvalidClient,
            false,
        ),
        (
            &RefreshGrantFailed::Store(broken),
            OAuthErrorCode::ServerError,
            true,
        ),
    ];
    for (failure, code, store) in cases {
        assert_eq!(failure.error_code(), code, "{failure}");
        assert_eq!(failure.store_failure().is_some(), store, "{failure}");
        assert!(!failure.to_string().is_empty());
    }
    // An unknown client and a wrong secret read the same: the answer names nothing.
    assert_eq!(
        CodeRefusal::UnknownClient.to_string(),
        ClientAuthError::WrongSecret.to_string()
    );
}

#[test]
fn revocation_and_introspection_answer_only_the_holder() {
    let h = Harness::new();
    let alice = h.user("alice", false);
    let creds = h.client();
    let other = h.client();
    let t = h.tokens(&creds, &alice, true);
    let access = t.access_token.expose();
    let refresh = t.refresh_token.as_ref().unwrap().expose();
    // Another client sees the tokens inactive and cannot revoke them.
    assert_eq!(
        h.services.oauth().introspect(&other, access).unwrap(),
        Introspection::Inactive
    );
    assert_eq!(
        h.services.oauth().revoke(&other, access).unwrap(),
        RevokeOutcome::OtherClient
    );
    // Client authentication comes first on both paths (an access token is read together
    // with the client, a refresh token after it): a wrong secret or an unknown client is
    // refused, never told about the token.
    for token in [access, refresh] {
        assert_eq!(
            h.services
                .oauth()
                .introspect(&with_secret(&creds, Some("mls_wrong")), token),
            Err(ClientAuthFailed::Refused(ClientAuthError::WrongSecret))
        );
        let stranger = ClientCredentials {
            client_id: "nobody".to_owned(),
            client_secret: Some(Secret::new("mls_x")),
        };
        assert_eq!(
            h.services.oauth().introspect(&stranger, token),
            Err(ClientAuthFailed::Unknown)
        );
    }
    // The holder sees each token active, acting for alice.
    for (token, expected) in [
        (access, medialib_domain::TokenKind::Access),
        (refresh, medialib_domain::TokenKind::Refresh),
    ] {
        match h.services.oauth().introspect(&creds, token).unwrap() {
            Introspection::Active { kind, user, .. } => {
                assert_eq!((kind, user.id), (expected, alice.id));
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        h.services
            .oauth()
            .revoke(&with_secret(&creds, Some("mls_wrong")), access),
        Err(ClientAuthFailed::Refused(ClientAuthError::WrongSecret))
    );
    // The holder revokes the refresh token: the grant goes, access token included.
    assert_eq!(
        h.services.oauth().revoke(&creds, refresh).unwrap(),
        RevokeOutcome::GrantRevoked
    );
    for token in [access, refresh] {
        assert_eq!(
            h.services.oauth().introspect(&creds, token).unwrap(),
            Introspection::Inactive
        );
    }
    assert_eq!(
        h.services.oauth().revoke(&creds, "mla_nothing").unwrap(),
        RevokeOutcome::Unknown
    );
    // The store's record says why: the grant was revoked, the token itself was not.
    let record = h
        .store
        .refresh_token(&TokenDigest::of(&Secret::new(refresh)))
        .unwrap();
    let record = record.unwrap();
    assert!(record.revoked.grant && !record.revoked.token);
}
