//! The whole OAuth flow driven by independent, real clients against the running app, on
//! SQLite and PostgreSQL:
//!
//! - `authlib_flow`: Python's authlib (`tests/e2e/authlib_flow.py`): discovery, PKCE, the
//!   sign-in and consent forms, code exchange, refresh rotation with `client_secret_basic`
//!   and `client_secret_post`, reuse detection, introspection, revocation, code replay and
//!   denial.
//! - `browser_flow`: a real headless Chromium driven by playwright-core
//!   (`tests/e2e/browser_flow.mjs`): sign in, approve, land on a loopback callback.
//!
//! The tools come from `scripts/test`, which installs them: `MEDIALIB_TEST_PYTHON` (a
//! venv's python with `tests/e2e/requirements.txt`), `tests/e2e/node_modules` (`npm ci`),
//! and Debian's `/usr/bin/chromium` (or `CHROMIUM`). Without them the tests fail and say
//! so; `MEDIALIB_TEST_SKIP_E2E=1` skips them explicitly.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Backend, OAuthApp, PASSWORD};

/// Longest a script may run before it is killed and the test fails.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(120);

/// The fewest checks each script must report as passed: a script that stops early (or
/// whose runs were cut) cannot pass by printing a summary with nothing in it.
const AUTHLIB_MIN_CHECKS: u64 = 42;
const BROWSER_MIN_CHECKS: u64 = 9;

const SKIP_ENV: &str = "MEDIALIB_TEST_SKIP_E2E";
const PYTHON_ENV: &str = "MEDIALIB_TEST_PYTHON";
const HOW_TO_FIX: &str =
    "run scripts/test (it installs the e2e tools) or set MEDIALIB_TEST_SKIP_E2E=1";

const USERNAME: &str = "e2e-user";

medialib_adapters_diesel::backend_tests!(
    async on [sqlite, postgres] with crate::api::run:
    authlib_flow,
    browser_flow,
);

/// authlib signs in, approves, exchanges, refreshes, revokes and is denied.
async fn authlib_flow(b: Backend) {
    if skipped("authlib_flow") {
        return;
    }
    let python = required_tool(
        PYTHON_ENV,
        "a venv's python with tests/e2e/requirements.txt",
    );
    // No refresh retry grace: the script presents the previous refresh token right after its
    // successor was issued and expects reuse detection (the grace has its tests in
    // endpoints.rs).
    let app = OAuthApp::start_with(b, |l| l.set("refresh_token_retry_grace", "0")).await;
    let redirect_uri = "https://client.example/callback";
    let client = app.register("Authlib E2E Client", &[redirect_uri], false);
    app.user_with_password(USERNAME, PASSWORD);

    let run = Script {
        program: python.into(),
        script: "authlib_flow.py",
        env: vec![
            ("MEDIALIB_E2E_BASE", app.base().to_owned()),
            ("MEDIALIB_E2E_CLIENT_ID", client.client_id.clone()),
            ("MEDIALIB_E2E_CLIENT_SECRET", secret(&client)),
            ("MEDIALIB_E2E_REDIRECT_URI", redirect_uri.to_owned()),
            ("MEDIALIB_E2E_USERNAME", USERNAME.to_owned()),
            ("MEDIALIB_E2E_PASSWORD", PASSWORD.to_owned()),
        ],
    }
    .run()
    .await;
    run.assert_passed(AUTHLIB_MIN_CHECKS);
}

/// Chromium signs in on the page, approves, and lands on a loopback callback with any port.
async fn browser_flow(b: Backend) {
    if skipped("browser_flow") {
        return;
    }
    let node = std::env::var_os("MEDIALIB_TEST_NODE").unwrap_or_else(|| "node".into());
    let playwright = e2e_dir().join("node_modules/playwright-core/package.json");
    assert!(
        playwright.is_file(),
        "{} is missing (npm ci in tests/e2e): {HOW_TO_FIX}",
        playwright.display()
    );
    let chromium =
        std::env::var_os("CHROMIUM").map_or_else(|| "/usr/bin/chromium".into(), PathBuf::from);
    assert!(
        chromium.is_file(),
        "no Chromium at {} (apt-get install chromium, or point CHROMIUM at one): {HOW_TO_FIX}",
        chromium.display()
    );
    let app = OAuthApp::start(b).await;
    let name = "Browser E2E Client";
    // No port: the script's callback server picks a free one (RFC 8252 §7.3).
    let client = app.register(name, &["http://127.0.0.1/callback"], false);
    app.user_with_password(USERNAME, PASSWORD);

    let run = Script {
        program: node,
        script: "browser_flow.mjs",
        env: vec![
            ("MEDIALIB_E2E_BASE", app.base().to_owned()),
            ("MEDIALIB_E2E_CLIENT_ID", client.client_id.clone()),
            ("MEDIALIB_E2E_CLIENT_SECRET", secret(&client)),
            ("MEDIALIB_E2E_CLIENT_NAME", name.to_owned()),
            ("MEDIALIB_E2E_USERNAME", USERNAME.to_owned()),
            ("MEDIALIB_E2E_PASSWORD", PASSWORD.to_owned()),
            ("CHROMIUM", chromium.display().to_string()),
        ],
    }
    .run()
    .await;
    run.assert_passed(BROWSER_MIN_CHECKS);
}

/// `true` (after a note) when `MEDIALIB_TEST_SKIP_E2E=1`.
fn skipped(test: &str) -> bool {
    let skip = std::env::var(SKIP_ENV).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"));
    if skip {
        eprintln!("{SKIP_ENV}=1: skipping the end-to-end test {test}");
    }
    skip
}

/// The path in `var`, which must name an existing file.
fn required_tool(var: &str, what: &str) -> PathBuf {
    let Some(path) = std::env::var_os(var).filter(|v| !v.is_empty()) else {
        panic!("{var} is not set (it names {what}): {HOW_TO_FIX}");
    };
    let path = PathBuf::from(path);
    assert!(
        path.is_file(),
        "{var}={} does not exist (it names {what}): {HOW_TO_FIX}",
        path.display()
    );
    path
}

/// `tests/e2e` (the tests crate's manifest is `tests/Cargo.toml`).
fn e2e_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("e2e")
}

fn secret(client: &medialib_ports::services::ClientCredentials) -> String {
    client
        .client_secret
        .as_ref()
        .expect("a confidential client has a secret")
        .expose()
        .to_owned()
}

/// One script of `tests/e2e` run by `program` with `env`, from that folder.
struct Script {
    program: OsString,
    script: &'static str,
    env: Vec<(&'static str, String)>,
}

/// What a finished script did.
struct Finished {
    what: String,
    status: ExitStatus,
    stdout: String,
    stderr: String,
    elapsed: Duration,
    /// The script's directory for screenshots (`MEDIALIB_E2E_FILES`): removed after a
    /// pass, kept after a failure.
    files: tempfile::TempDir,
}

impl Script {
    /// Runs the script on the blocking pool (the app serves on this test's runtime, which
    /// must keep running), killing it after [`SCRIPT_TIMEOUT`].
    async fn run(self) -> Finished {
        tokio::task::spawn_blocking(move || self.run_blocking())
            .await
            .expect("the script runner panicked")
    }

    fn run_blocking(self) -> Finished {
        let what = format!("{} {}", self.program.to_string_lossy(), self.script);
        let out = tempfile::tempfile().expect("cannot create a temporary file");
        let err = tempfile::tempfile().expect("cannot create a temporary file");
        let files = tempfile::Builder::new()
            .prefix("medialib-e2e-")
            .tempdir()
            .expect("cannot create a temporary directory");
        let mut command = Command::new(&self.program);
        command
            .arg(self.script)
            .current_dir(e2e_dir())
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("cannot duplicate a file handle"))
            .stderr(err.try_clone().expect("cannot duplicate a file handle"))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("PYTHONUNBUFFERED", "1")
            .env("MEDIALIB_E2E_FILES", files.path());
        for (k, v) in &self.env {
            command.env(k, v);
        }
        let started = Instant::now();
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}: {HOW_TO_FIX}"));
        let status = loop {
            if let Some(status) = child.try_wait().expect("cannot wait for the script") {
                break status;
            }
            if started.elapsed() > SCRIPT_TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{what} did not finish within {}s and was killed (its files are in {})\n\
                     --- stdout:\n{}--- stderr:\n{}---",
                    SCRIPT_TIMEOUT.as_secs(),
                    files.keep().display(),
                    read_all(out),
                    read_all(err),
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        Finished {
            what,
            status,
            stdout: read_all(out),
            stderr: read_all(err),
            elapsed: started.elapsed(),
            files,
        }
    }
}

fn read_all(mut file: std::fs::File) -> String {
    use std::io::{Read, Seek};
    let mut text = String::new();
    file.rewind().expect("cannot rewind a temporary file");
    file.read_to_string(&mut text)
        .expect("the script's output is not UTF-8");
    text
}

impl Finished {
    /// Asserts exit 0 and a summary line with no failure and at least `min_checks` passed.
    fn assert_passed(self, min_checks: u64) {
        let summary = self.stdout.lines().rev().find_map(|l| {
            serde_json::from_str::<Value>(l)
                .ok()
                .filter(|v| v["summary"] == true)
        });
        let passed = summary
            .as_ref()
            .and_then(|s| s["passed"].as_u64())
            .unwrap_or(0);
        let verdict = if !self.status.success() {
            Err(format!("failed ({})", self.status))
        } else if let Some(summary) = &summary {
            if summary["failed"] == 0 && passed >= min_checks {
                Ok(())
            } else {
                Err(format!(
                    "reported {passed} checks passed (at least {min_checks} expected) and {} failed",
                    summary["failed"]
                ))
            }
        } else {
            Err("printed no summary line".to_owned())
        };
        if let Err(why) = verdict {
            panic!(
                "{} {why} after {:.1}s (its files are in {})\n--- stdout:\n{}--- stderr:\n{}---",
                self.what,
                self.elapsed.as_secs_f64(),
                self.files.keep().display(),
                self.stdout,
                self.stderr,
            );
        }
        // Shown with --no-capture (or nextest's --success-output): every check's line.
        eprintln!(
            "{}{}: {passed} checks passed in {:.1}s",
            self.stdout,
            self.what,
            self.elapsed.as_secs_f64()
        );
    }
}
