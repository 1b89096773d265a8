//! A real S3 server for tests: a single-node [Garage](https://garagehq.deuxfleurs.fr/) started
//! from its binary in a temporary directory, with one bucket and one key, killed on drop.
//!
//! The binary is `$MEDIALIB_GARAGE`, else `garage` on the `PATH`, else
//! `$HOME/.cargo/bin/garage` (`cargo install garage@2.5.0 --locked`; .ci/run installs it).
//! Garage is AGPL and is never linked into medialib: it is a program the tests run.

use std::fmt;
use std::fs::{self, File};
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use medialib_domain::Secret;
use medialib_domain::media::StorageKey;
use medialib_ports::MediaStorage as _;

use crate::{S3Config, S3Storage};

/// How to install the binary, for the message of a test that cannot find it.
pub const INSTALL: &str = "cargo install garage@2.5.0 --locked";

/// The region Garage answers as.
pub const REGION: &str = "garage";

/// A running single-node Garage; killed when dropped.
pub struct Garage {
    dir: tempfile::TempDir,
    binary: PathBuf,
    child: Option<Child>,
    api_port: u16,
    access_key_id: String,
    secret_access_key: String,
    bucket: String,
}

impl fmt::Debug for Garage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Garage")
            .field("dir", &self.dir.path())
            .field("endpoint", &self.endpoint())
            .field("bucket", &self.bucket)
            .field("running", &self.child.is_some())
            .finish_non_exhaustive()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Where Garage's ports are drawn from: below Linux's ephemeral range (32768–60999), from
/// which the kernel hands out every port nobody chose (another test's listener on port 0, an
/// outgoing connection's local port). A test that stops Garage and starts it again on the
/// same ports must not find one of them taken in between: with ports from the ephemeral
/// range, it once did (the restarted server never answered S3 again).
const PORTS: std::ops::Range<u16> = 20_000..32_000;

/// A port of [`PORTS`] that is free now on 127.0.0.1 and is not `other`.
fn free_port(other: Option<u16>) -> Result<u16, String> {
    for _ in 0..500 {
        let port = rand::random_range(PORTS);
        if Some(port) != other && TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
            return Ok(port);
        }
    }
    Err(format!("no free port in {PORTS:?} after 500 draws"))
}

/// The `garage` binary: `$MEDIALIB_GARAGE`, `garage` on the `PATH`, `~/.cargo/bin/garage`.
pub fn garage_binary() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("MEDIALIB_GARAGE") {
        let path = PathBuf::from(path);
        return match path.is_file() {
            true => Ok(path),
            false => Err(format!(
                "MEDIALIB_GARAGE={} is no file; install Garage with `{INSTALL}`",
                path.display()
            )),
        };
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("garage"));
    let in_cargo = std::env::var_os("HOME").map(|home| Path::new(&home).join(".cargo/bin/garage"));
    on_path
        .chain(in_cargo)
        .find(|path| path.is_file())
        .ok_or_else(|| {
            format!(
                "the Garage binary (an S3 server the storage tests run) is not installed: \
                 install it with `{INSTALL}` (about 20 minutes), or set MEDIALIB_GARAGE to \
                 its path"
            )
        })
}

impl Garage {
    /// Starts a Garage in a new temporary directory and waits until its S3 API answers.
    pub fn start() -> Result<Self, String> {
        let binary = garage_binary()?;
        let dir = tempfile::Builder::new()
            .prefix("medialib-garage-")
            .tempdir()
            .map_err(|e| format!("a temporary directory: {e}"))?;
        let api_port = free_port(None)?;
        let rpc_port = free_port(Some(api_port))?;
        let config = format!(
            "metadata_dir = \"{meta}\"\n\
             data_dir = \"{data}\"\n\
             db_engine = \"sqlite\"\n\
             replication_factor = 1\n\
             rpc_bind_addr = \"127.0.0.1:{rpc_port}\"\n\
             rpc_public_addr = \"127.0.0.1:{rpc_port}\"\n\
             rpc_secret = \"{secret}\"\n\
             \n\
             [s3_api]\n\
             s3_region = \"{REGION}\"\n\
             api_bind_addr = \"127.0.0.1:{api_port}\"\n",
            meta = dir.path().join("meta").display(),
            data = dir.path().join("data").display(),
            secret = hex(&rand::random::<[u8; 32]>()),
        );
        fs::write(dir.path().join("garage.toml"), config)
            .map_err(|e| format!("writing garage.toml: {e}"))?;
        let mut garage = Self {
            dir,
            binary,
            child: None,
            api_port,
            access_key_id: format!("GK{}", hex(&rand::random::<[u8; 12]>())),
            secret_access_key: hex(&rand::random::<[u8; 32]>()),
            bucket: "media".to_owned(),
        };
        garage.restart()?;
        Ok(garage)
    }

    /// `http://127.0.0.1:PORT`, its S3 endpoint.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.api_port)
    }

    /// The bucket made at start.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The access key id allowed on the bucket.
    pub fn access_key_id(&self) -> &str {
        &self.access_key_id
    }

    /// Its secret key.
    pub fn secret_access_key(&self) -> &str {
        &self.secret_access_key
    }

    /// The configuration of a store on the bucket, under `prefix`.
    pub fn config(&self, prefix: &str) -> S3Config {
        S3Config {
            bucket: self.bucket.clone(),
            prefix: prefix.to_owned(),
            endpoint: Some(self.endpoint()),
            region: REGION.to_owned(),
            access_key_id: self.access_key_id.clone(),
            secret_access_key: Secret::new(self.secret_access_key.clone()),
            allow_http: true,
        }
    }

    /// A store on the bucket, under `prefix`.
    pub fn storage(&self, prefix: &str) -> Result<S3Storage, String> {
        S3Storage::open(self.config(prefix)).map_err(|e| e.to_string())
    }

    /// Kills the server (its data stays).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same data and port (stopping it first if it runs),
    /// and waits until its S3 API answers.
    pub fn restart(&mut self) -> Result<(), String> {
        self.stop();
        let log = File::options()
            .create(true)
            .append(true)
            .open(self.log_path())
            .map_err(|e| format!("the Garage log: {e}"))?;
        let log_err = log
            .try_clone()
            .map_err(|e| format!("the Garage log: {e}"))?;
        let child = Command::new(&self.binary)
            .arg("-c")
            .arg(self.dir.path().join("garage.toml"))
            .args(["server", "--single-node", "--default-bucket"])
            .env("GARAGE_DEFAULT_ACCESS_KEY", &self.access_key_id)
            .env("GARAGE_DEFAULT_SECRET_KEY", &self.secret_access_key)
            .env("GARAGE_DEFAULT_BUCKET", &self.bucket)
            .env("RUST_LOG", "garage=warn")
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(|e| format!("starting {}: {e}", self.binary.display()))?;
        self.child = Some(child);
        self.wait_ready()
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("garage.log")
    }

    /// The end of the server's log, for failure messages, with runs of one message (after
    /// its timestamp) told once with their count, so that a flood does not hide what came
    /// before it.
    pub fn log_tail(&self) -> String {
        let log = fs::read_to_string(self.log_path()).unwrap_or_default();
        let message = |line: &str| line.split_once(' ').map_or(line, |(_, m)| m).to_owned();
        let mut out: Vec<(String, String, usize)> = Vec::new();
        for line in log.lines() {
            match out.last_mut() {
                Some((_, last, n)) if *last == message(line) => *n += 1,
                _ => out.push((line.to_owned(), message(line), 1)),
            }
        }
        let text: String = out
            .iter()
            .map(|(line, _, n)| match n {
                1 => format!("{line}\n"),
                n => format!("{line}\n  ({} more like it)\n", n - 1),
            })
            .collect();
        let start = text.len().saturating_sub(4000);
        let start = (start..text.len())
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(text.len());
        text[start..].to_owned()
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let probe = self.storage("readiness")?;
        let key = StorageKey::parse("probe").map_err(|e| e.to_string())?;
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut last = String::new();
        while Instant::now() < deadline {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                return Err(format!(
                    "Garage exited ({status}) while starting; its log:\n{}",
                    self.log_tail()
                ));
            }
            match probe.list(&key) {
                Ok(_) => return Ok(()),
                Err(e) => last = e.to_string(),
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Err(format!(
            "Garage did not answer S3 within 60 s ({last}); its log:\n{}",
            self.log_tail()
        ))
    }
}

impl Drop for Garage {
    fn drop(&mut self) {
        self.stop();
    }
}
