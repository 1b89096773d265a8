//! Two processes, one database (issue 8; DECISIONS.md §5): two `medialib serve` processes on
//! their own ports share one SQLite file or one PostgreSQL database, and the same refresh token
//! (or authorization code) reaches both at the same moment, [`TRIALS`] × `soak_scale()` times.
//! Each trial must have exactly one winner, every loser gets `invalid_grant`, and the loser's
//! presentation counts as a reuse (a replay for a code): the whole grant is revoked, so what
//! the winner just received, its new access token and its new refresh token, no longer works.
//!
//! The requests go out together: every copy is prepared on a kept-alive connection opened
//! beforehand, and all of them wait on one barrier before sending. Every tenth trial sends four
//! copies to each process (eight racing requests) instead of one.

use std::sync::Arc;
use std::time::{Duration, Instant};

use medialib_domain::User;
use medialib_domain::oauth::AuthorizeParams;
use medialib_ports::services::ClientCredentials;
use reqwest::StatusCode;
use serde_json::Value;
use tokio::sync::Barrier;
use tokio::task::JoinSet;

use super::soak_scale;
use crate::api::REDIRECT;
use crate::helpers::ServeProcess;
use crate::oauth::{Backend, OAuthApp};

medialib_adapters_diesel::backend_tests!(
    async on [sqlite, postgres] with crate::api::run:
    one_refresh_token_at_two_processes_has_one_winner_and_the_grant_dies,
    one_code_at_two_processes_has_one_winner_and_its_tokens_die,
);

/// Trials in the CI form (times `soak_scale()`).
const TRIALS: usize = 100;
/// Every `FAN_OUT_EVERY`-th trial sends [`FAN_OUT`] copies to each process instead of one.
const FAN_OUT_EVERY: usize = 10;
/// Copies per process in a fan-out trial.
const FAN_OUT: usize = 4;
const TOKEN: &str = "/api/oauth/access_token";
/// Token info: 200 for a live access token, 401 otherwise.
const TOKEN_INFO: &str = "/api/oauth/authorize/";

/// One of the two `medialib serve` processes, and a client with connections kept open to it.
struct Server {
    base: String,
    http: reqwest::Client,
}

/// The shared database (with the in-test app's use cases to mint codes) and the two processes.
struct Race {
    app: OAuthApp,
    servers: [Server; 2],
    client: ClientCredentials,
    user: User,
    _processes: [ServeProcess; 2],
}

/// What one racing request got back.
#[derive(Debug)]
struct Reply {
    server: usize,
    status: StatusCode,
    body: Value,
}

impl Race {
    async fn start(b: Backend) -> Self {
        let app = OAuthApp::start(b).await;
        // No rate limit: a trial count above the per-minute limit must not turn into 429s. No
        // refresh retry grace: the race checks the strict rule, where every loser is a reuse
        // (with the grace, a loser is a retry and takes the winner's untouched pair back).
        let env = [
            ("MEDIALIB_RATE_LIMIT_TOKEN", "0"),
            ("MEDIALIB_REFRESH_TOKEN_RETRY_GRACE", "0"),
        ];
        let db_url = app.api.app.db_url.clone();
        let processes = [
            ServeProcess::start_with_env(&db_url, &env),
            ServeProcess::start_with_env(&db_url, &env),
        ];
        assert_ne!(processes[0].address, processes[1].address);
        let servers = processes.each_ref().map(|p| Server {
            base: p.address.clone(),
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(FAN_OUT)
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap(),
        });
        // Open the connections now, so that no racing request waits for a TCP handshake.
        let mut warm = JoinSet::new();
        for s in &servers {
            for _ in 0..FAN_OUT {
                let req = s.http.get(format!("{}/healthz", s.base));
                warm.spawn(async move { req.send().await.unwrap().status() });
            }
        }
        for status in warm.join_all().await {
            assert_eq!(status, StatusCode::OK);
        }
        let client = app.register("Race LMS", &[REDIRECT], false);
        let user = app.api.user("racer", false);
        Self {
            app,
            servers,
            client,
            user,
            _processes: processes,
        }
    }

    /// A fresh code for the user, approved with offline access (through the use cases).
    fn code(&self) -> String {
        let s = &self.app.api.services;
        let params = AuthorizeParams {
            response_type: Some("code"),
            client_id: Some(&self.client.client_id),
            redirect_uri: Some(REDIRECT),
            state: Some("race"),
            access_type: Some("offline"),
            ..AuthorizeParams::default()
        };
        let request = s.oauth().start_authorization(&params).unwrap();
        s.oauth()
            .approve_authorization(request, self.user.id)
            .unwrap()
            .param("code")
            .unwrap()
            .to_owned()
    }

    /// A fresh grant's access and refresh tokens (the code exchanged through the use cases).
    fn grant(&self) -> (String, String) {
        let tokens = self
            .app
            .api
            .services
            .oauth()
            .exchange_code(&self.client, &self.code(), Some(REDIRECT), None)
            .unwrap();
        (
            tokens.access_token.expose().to_owned(),
            tokens.refresh_token.unwrap().expose().to_owned(),
        )
    }

    /// A token-endpoint form: `fields` plus the client's credentials.
    fn form(&self, fields: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
        let mut form: Vec<_> = fields.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
        form.push(("client_id", self.client.client_id.clone()));
        let secret = self.client.client_secret.as_ref().unwrap();
        form.push(("client_secret", secret.expose().to_owned()));
        form
    }

    /// Sends `form` to the token endpoint of both processes at once, `copies` times to each.
    async fn race(&self, form: &[(&'static str, String)], copies: usize) -> Vec<Reply> {
        let n = 2 * copies;
        let barrier = Arc::new(Barrier::new(n));
        let mut set = JoinSet::new();
        for i in 0..n {
            let server = i % 2;
            let s = &self.servers[server];
            let req = s.http.post(format!("{}{TOKEN}", s.base)).form(form);
            let barrier = Arc::clone(&barrier);
            set.spawn(async move {
                barrier.wait().await;
                let res = req.send().await.unwrap();
                let status = res.status();
                let body = res.json::<Value>().await.unwrap();
                Reply {
                    server,
                    status,
                    body,
                }
            });
        }
        set.join_all().await
    }

    /// `GET /api/oauth/authorize/` with `token` on process `server`: its status.
    async fn token_info(&self, server: usize, token: &str) -> StatusCode {
        let s = &self.servers[server];
        s.http
            .get(format!("{}{TOKEN_INFO}", s.base))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
            .status()
    }

    /// Refreshes with `refresh` on process `server`: the status and body.
    async fn refresh(&self, server: usize, refresh: &str) -> (StatusCode, Value) {
        let s = &self.servers[server];
        let form = self.form(&[("grant_type", "refresh_token"), ("refresh_token", refresh)]);
        let res = s
            .http
            .post(format!("{}{TOKEN}", s.base))
            .form(&form)
            .send()
            .await
            .unwrap();
        let status = res.status();
        (status, res.json().await.unwrap())
    }

    /// Asserts that the grant behind `access` and `refresh` is revoked, asking both processes.
    async fn assert_dead(&self, trial: usize, what: &str, access: &str, refresh: &str) {
        for server in 0..2 {
            assert_eq!(
                self.token_info(server, access).await,
                StatusCode::UNAUTHORIZED,
                "trial {trial}: the {what} access token still works at process {server}"
            );
        }
        let (status, body) = self.refresh(trial % 2, refresh).await;
        assert_eq!(
            (status, &body["error"]),
            (StatusCode::BAD_REQUEST, &Value::from("invalid_grant")),
            "trial {trial}: the {what} refresh token still works: {body}"
        );
    }
}

/// Exactly one 200 among `replies`, every other one a 400 `invalid_grant`: the winner.
fn one_winner(trial: usize, replies: &[Reply]) -> &Reply {
    let winners: Vec<_> = replies
        .iter()
        .filter(|r| r.status == StatusCode::OK)
        .collect();
    assert_eq!(winners.len(), 1, "trial {trial}: {replies:?}");
    for r in replies.iter().filter(|r| r.status != StatusCode::OK) {
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "trial {trial}: {r:?}");
        assert_eq!(r.body["error"], "invalid_grant", "trial {trial}: {r:?}");
    }
    winners[0]
}

fn str_field<'a>(trial: usize, body: &'a Value, name: &str) -> &'a str {
    body[name]
        .as_str()
        .unwrap_or_else(|| panic!("trial {trial}: no {name} in {body}"))
}

/// How many copies trial `trial` sends to each process.
fn copies(trial: usize) -> usize {
    if trial % FAN_OUT_EVERY == FAN_OUT_EVERY - 1 {
        FAN_OUT
    } else {
        1
    }
}

fn report(b: Backend, what: &str, trials: usize, wins: [usize; 2], started: Instant) {
    let fan_outs = (0..trials).filter(|&t| copies(t) > 1).count();
    println!(
        "race [{b:?}] {what}: {trials} trials ({fan_outs} of them with {} racing requests, \
         the rest with 2) in {:.1?}; wins by process: {} / {}",
        2 * FAN_OUT,
        started.elapsed(),
        wins[0],
        wins[1],
    );
}

/// The same refresh token at both processes at once: one rotation, the rest `invalid_grant`,
/// and the loser's reuse revokes the grant, the winner's fresh tokens included.
async fn one_refresh_token_at_two_processes_has_one_winner_and_the_grant_dies(b: Backend) {
    let race = Race::start(b).await;
    let trials = TRIALS * soak_scale();
    let mut wins = [0; 2];
    let started = Instant::now();
    for trial in 0..trials {
        let (access, refresh) = race.grant();
        // The check below can tell a live token from a dead one.
        assert_eq!(race.token_info(trial % 2, &access).await, StatusCode::OK);
        let form = race.form(&[("grant_type", "refresh_token"), ("refresh_token", &refresh)]);
        let replies = race.race(&form, copies(trial)).await;
        let winner = one_winner(trial, &replies);
        wins[winner.server] += 1;
        let new_access = str_field(trial, &winner.body, "access_token");
        let new_refresh = str_field(trial, &winner.body, "refresh_token");
        assert_ne!(
            new_refresh, refresh,
            "trial {trial}: the refresh token was not rotated"
        );
        race.assert_dead(trial, "winner's new", new_access, new_refresh)
            .await;
        race.assert_dead(trial, "original", &access, &refresh).await;
    }
    report(b, "refresh token", trials, wins, started);
}

/// The same authorization code at both processes at once: one exchange, the rest
/// `invalid_grant`, and the loser's replay revokes the tokens issued from the code.
async fn one_code_at_two_processes_has_one_winner_and_its_tokens_die(b: Backend) {
    let race = Race::start(b).await;
    // Control: without a race, the tokens a code gives work at both processes.
    let form = race.form(&[
        ("grant_type", "authorization_code"),
        ("code", &race.code()),
        ("redirect_uri", REDIRECT),
    ]);
    let res = race.servers[0]
        .http
        .post(format!("{}{TOKEN}", race.servers[0].base))
        .form(&form)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let body: Value = res.json().await.unwrap();
    let access = str_field(0, &body, "access_token");
    assert_eq!(race.token_info(1, access).await, StatusCode::OK);
    let (status, _) = race.refresh(1, str_field(0, &body, "refresh_token")).await;
    assert_eq!(status, StatusCode::OK);

    let trials = TRIALS * soak_scale();
    let mut wins = [0; 2];
    let started = Instant::now();
    for trial in 0..trials {
        let code = race.code();
        let form = race.form(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", REDIRECT),
        ]);
        let replies = race.race(&form, copies(trial)).await;
        let winner = one_winner(trial, &replies);
        wins[winner.server] += 1;
        let access = str_field(trial, &winner.body, "access_token");
        let refresh = str_field(trial, &winner.body, "refresh_token");
        race.assert_dead(trial, "code's", access, refresh).await;
    }
    report(b, "authorization code", trials, wins, started);
}
