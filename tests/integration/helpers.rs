//! Shared helpers: the real application on port 0 with a fresh SQLite file
//! (zero2prod's `spawn_app`), and an HTTP client to talk to it.

use std::io::BufRead as _;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use medialib::configuration::{LogFormat, SettingsLoader};
use medialib::startup::Application;
use medialib::telemetry::{self, LogTarget};
// Which database a test runs on: a fresh `testing::TestDb` of it (a SQLite file in a temporary
// directory, or a throwaway database on the PostgreSQL server of `MEDIALIB_TEST_PG_URL`).
pub use medialib_adapters_diesel::Backend;
use medialib_adapters_diesel::testing::TestDb;

/// Set `TEST_LOG=1` to see the application's logs (filter from `TEST_LOG_FILTER`, default `debug`).
static TRACING: LazyLock<()> = LazyLock::new(|| {
    if std::env::var_os("TEST_LOG").is_some() {
        let filter = std::env::var("TEST_LOG_FILTER").unwrap_or_else(|_| "debug".to_owned());
        let _ = telemetry::init(&filter, LogFormat::Text, LogTarget::Stderr);
    }
});

/// A running medialib on 127.0.0.1 with its own database.
#[derive(Debug)]
pub struct TestApp {
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub address: String,
    /// The port the server bound.
    pub port: u16,
    /// The database URL the app runs on.
    pub db_url: String,
    /// A client that does not follow redirects.
    pub client: reqwest::Client,
    /// Keeps the database (a SQLite file's directory or a throwaway PostgreSQL
    /// database) alive for the app's lifetime.
    _guard: Box<dyn std::any::Any + Send>,
}

impl TestApp {
    /// The absolute URL of `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }

    /// `GET path`.
    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(self.url(path))
            .send()
            .await
            .expect("GET request failed")
    }
}

/// Spawns the app with the default test settings.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(|loader| loader).await
}

/// Spawns the app; `configure` may add settings (`loader.set("sso", "header")`, ...)
/// on top of the test database and `bind = 127.0.0.1:0`.
pub async fn spawn_app_with(configure: impl FnOnce(SettingsLoader) -> SettingsLoader) -> TestApp {
    spawn_app_for(Backend::Sqlite, configure).await
}

/// Spawns the app on a fresh database of `backend`.
pub async fn spawn_app_for(
    backend: Backend,
    configure: impl FnOnce(SettingsLoader) -> SettingsLoader,
) -> TestApp {
    let db = TestDb::create(backend);
    let url = db.url.clone();
    spawn_app_on(url, Box::new(db), configure).await
}

/// Spawns the app on `db_url`; `guard` is kept alive as long as the app.
pub async fn spawn_app_on(
    db_url: String,
    guard: Box<dyn std::any::Any + Send>,
    configure: impl FnOnce(SettingsLoader) -> SettingsLoader,
) -> TestApp {
    LazyLock::force(&TRACING);
    let media = media_dir();
    let loader = SettingsLoader::new()
        .set("database_url", db_url.clone())
        .set("bind", "127.0.0.1:0")
        .set("storage_url", format!("file://{}", media.path().display()))
        // No processing unless a test asks for it (`workers`): a worker would take the jobs
        // of uploads whose state a test checks.
        .set("workers", "0")
        .set("work_dir", media.path().join("work").display().to_string())
        // Tests run side by side: in the SCHED_IDLE class a busy neighbour would starve
        // their ffmpeg (the class is tested in adapters-ffmpeg).
        .set("processing_priority", "low");
    let settings = configure(loader).load().expect("test settings are invalid");
    let application = Application::build(settings)
        .await
        .expect("the application failed to start");
    let port = application.port();
    tokio::spawn(application.run_until_stopped());
    let client = http_client()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("cannot build the HTTP client");
    TestApp {
        address: format!("http://127.0.0.1:{port}"),
        port,
        db_url,
        client,
        _guard: Box::new((guard, media)),
    }
}

/// How long a test client keeps an idle connection for its next request: well under the
/// 5 s after which medialib (actix-web's default keep-alive) closes an idle connection.
///
/// With reqwest's default (90 s) a request sent on a connection idle for about 5 s can meet
/// the server's close on the way: hyper then fails it with `IncompleteMessage` and, unlike a
/// browser, does not retry it on a new connection. CI saw this when a test spent 5 s making
/// a clip between two requests.
pub const CLIENT_IDLE: Duration = Duration::from_secs(2);

/// A client builder for talking to a medialib: idle connections are dropped after
/// [`CLIENT_IDLE`], before the server would close them.
pub fn http_client() -> reqwest::ClientBuilder {
    reqwest::Client::builder().pool_idle_timeout(CLIENT_IDLE)
}

/// The wall clock in epoch seconds, as the server under test reads it.
pub fn epoch_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .try_into()
        .unwrap()
}

/// A media directory under the system's temporary directory for use cases wired in a test
/// that stores no media (so that none lands in the working directory).
pub fn shared_media_url() -> String {
    format!(
        "file://{}",
        std::env::temp_dir().join("medialib-test-media").display()
    )
}

/// A fresh directory for a test app's media (`storage_url`), removed when dropped.
pub fn media_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("medialib-media-")
        .tempdir()
        .expect("cannot make a media directory")
}

/// `medialib serve` as a child process on `db_url`, bound to a free loopback port, with JSON
/// logs; killed and reaped when dropped.
pub struct ServeProcess {
    /// The process.
    pub child: Child,
    /// Its base URL, `http://127.0.0.1:PORT`.
    pub address: String,
}

impl ServeProcess {
    /// Starts it and waits until it listens.
    pub fn start(db_url: &str) -> Self {
        Self::start_with_env(db_url, &[])
    }

    /// Starts it with extra `MEDIALIB_*` settings (e.g. `("MEDIALIB_RATE_LIMIT_TOKEN", "0")`) and
    /// waits until it listens. Calling it again on the same `db_url` restarts the service on
    /// that database (on a new port).
    pub fn start_with_env(db_url: &str, env: &[(&str, &str)]) -> Self {
        let mut cmd = medialib_command(&["serve", "--bind", "127.0.0.1:0"]);
        // Media next to a SQLite file (kept across restarts on it), else in the temporary
        // directory of this process.
        let media = match db_url
            .strip_prefix("sqlite://")
            .and_then(|p| std::path::Path::new(p).parent())
        {
            Some(dir) => format!("file://{}/media", dir.display()),
            None => format!(
                "file://{}/medialib-media-{}",
                std::env::temp_dir().display(),
                std::process::id()
            ),
        };
        // Processing only when a test asks for it (`MEDIALIB_WORKERS` in `env`), with its work
        // directory beside the media, never in the working directory.
        let work = format!("{}-work", media.trim_start_matches("file://"));
        cmd.envs([
            ("MEDIALIB_DATABASE_URL", db_url),
            ("MEDIALIB_STORAGE_URL", &media),
            ("MEDIALIB_WORKERS", "0"),
            ("MEDIALIB_WORK_DIR", &work),
            ("MEDIALIB_PROCESSING_PRIORITY", "low"),
        ]);
        cmd.envs(env.iter().copied());
        let child = cmd.spawn().expect("cannot start medialib serve");
        // Owned by `Self` from here on, so that `Drop` kills and reaps it on every path.
        let mut this = Self {
            child,
            address: String::new(),
        };
        let out = this.child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut seen = Vec::new();
        while this.address.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = rx.recv_timeout(left) else {
                panic!(
                    "the second server did not listen in 30 s:\n{}",
                    seen.join("\n")
                );
            };
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line)
                && v["message"] == "listening"
            {
                this.address = v["base_url"].as_str().unwrap().to_owned();
            }
            seen.push(line);
        }
        this
    }

    /// `kill -9`: SIGKILL, no chance to finish a request or a transaction; reaps the process
    /// and checks that the signal is what ended it.
    pub fn kill_hard(&mut self) {
        kill_hard(&mut self.child, "server");
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `medialib ARGS` from the built binary, logging JSON lines at `info` on its standard output
/// (piped), its standard input and error closed, and none of this process's `MEDIALIB_*`
/// settings; the caller adds the database, storage and the rest.
fn medialib_command(args: &[&str]) -> Command {
    let mut cmd = Command::new(crate::cli::medialib_bin());
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("MEDIALIB_") {
            cmd.env_remove(name);
        }
    }
    // As a service starts: medialib chooses the malloc arenas (crates/medialib/src/malloc.rs).
    cmd.env_remove("MALLOC_ARENA_MAX")
        .env_remove("GLIBC_TUNABLES");
    cmd.envs([("MEDIALIB_LOG", "info"), ("MEDIALIB_LOG_FORMAT", "json")]);
    cmd
}

/// SIGKILLs `child`, reaps it and checks that the signal is what ended it.
fn kill_hard(child: &mut Child, what: &str) {
    use std::os::unix::process::ExitStatusExt as _;
    child.kill().expect("cannot send SIGKILL");
    let status = child.wait().expect("cannot reap a killed process");
    assert_eq!(
        status.signal(),
        Some(9),
        "the {what} ended otherwise: {status}"
    );
}

/// Sends `signal` (`TERM`, `STOP`, `KILL`, ...) to the process `pid` with kill(1); whether
/// it was sent (not when the process is gone).
pub fn signal(pid: u32, signal: &str) -> bool {
    Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .stderr(Stdio::null())
        .status()
        .expect("kill(1) runs")
        .success()
}

/// The processes whose parent is `pid` and whose command name is `name` (from `/proc`).
pub fn children_named(pid: u32, name: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|child| {
            // `/proc/PID/stat`: `PID (COMM) STATE PPID ...`; COMM may hold spaces, not `)`.
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
                return false;
            };
            let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
                return false;
            };
            let ppid = stat[close + 1..].split_whitespace().nth(1);
            &stat[open + 1..close] == name && ppid == Some(pid.to_string().as_str())
        })
        .collect()
}

/// Whether the process `pid` exists and is no zombie.
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rfind(')')
            .and_then(|close| stat[close + 1..].split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// The JSON lines a child process logs on its standard output, read as they come on a
/// thread of their own (a line that is not JSON is kept as a string).
#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<Vec<serde_json::Value>>>);

impl Logs {
    /// Reads `out` to its end.
    fn follow(out: impl std::io::Read + Send + 'static) -> Self {
        let logs = Self::default();
        let lines = Arc::clone(&logs.0);
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                let v = serde_json::from_str(&line).unwrap_or(serde_json::Value::String(line));
                lines.lock().unwrap().push(v);
            }
        });
        logs
    }

    /// Every line so far.
    pub fn lines(&self) -> Vec<serde_json::Value> {
        self.0.lock().unwrap().clone()
    }

    /// The lines so far whose `message` is `message` and whose `object` is `object`.
    pub fn about(&self, message: &str, object: &str) -> Vec<serde_json::Value> {
        self.lines()
            .into_iter()
            .filter(|l| l["message"] == message && l["object"] == object)
            .collect()
    }

    /// Waits until a line with `message` comes, at most `timeout`.
    pub fn wait_for(&self, message: &str, timeout: Duration) -> serde_json::Value {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(line) = self.lines().into_iter().find(|l| l["message"] == message) {
                return line;
            }
            assert!(
                Instant::now() < deadline,
                "no {message:?} in {timeout:?}; the log:\n{}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The lines so far as text, for failure messages.
    pub fn text(&self) -> String {
        self.lines()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// `medialib worker --jobs 1` as a child process (processing only), with JSON logs kept in
/// `logs`; killed and reaped when dropped.
pub struct WorkerProcess {
    /// The process.
    pub child: Child,
    /// What it logged.
    pub logs: Logs,
}

impl WorkerProcess {
    /// Starts it on `db_url` with `env` (`MEDIALIB_STORAGE_URL`, `MEDIALIB_WORK_DIR`, the job
    /// settings; `PATH` too) and waits until its worker runs. Blocking: call it off the async
    /// workers.
    pub fn start(db_url: &str, env: &[(&str, &str)]) -> Self {
        let mut cmd = medialib_command(&["worker", "--jobs", "1"]);
        cmd.env("MEDIALIB_DATABASE_URL", db_url);
        // As ServeProcess: not the SCHED_IDLE class, which tests running beside would starve.
        cmd.env("MEDIALIB_PROCESSING_PRIORITY", "low");
        cmd.envs(env.iter().copied());
        let mut child = cmd.spawn().expect("cannot start medialib worker");
        let logs = Logs::follow(child.stdout.take().unwrap());
        let this = Self { child, logs };
        this.logs
            .wait_for("processing workers started", Duration::from_secs(30));
        this
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `kill -9`: the worker ends mid-job, without releasing it; reaped.
    pub fn kill_hard(&mut self) {
        kill_hard(&mut self.child, "worker");
    }

    /// SIGTERM, as an operator stops it; waits (at most 30 s) and returns how it exited.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        assert!(signal(self.pid(), "TERM"), "the worker is gone");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().expect("cannot wait for the worker") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the worker did not stop in 30 s after SIGTERM:\n{}",
                self.logs.text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What `sql` answers on `db_url`, through the `sqlite3` or `psql` shell: one line per row,
/// columns separated by `|`, NULL as the empty string.
pub fn sql(db_url: &str, sql: &str) -> String {
    let out = if let Some(path) = db_url.strip_prefix("sqlite://") {
        Command::new("sqlite3")
            .args(["-batch", "-noheader", "-separator", "|", path, sql])
            .output()
            .expect("sqlite3 (the SQLite shell) is needed")
    } else {
        Command::new("psql")
            .args([
                "-X",
                "-q",
                "-A",
                "-t",
                "-F",
                "|",
                "-v",
                "ON_ERROR_STOP=1",
                "-d",
                db_url,
                "-c",
                sql,
            ])
            .output()
            .expect("psql (the PostgreSQL client) is needed")
    };
    assert!(
        out.status.success(),
        "{sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim_end().to_owned()
}
