//! The command line: parsing (clap), loading the settings, running a command
//! and turning its outcome into an exit code (0 ok, 1 runtime failure,
//! 2 usage or configuration error).

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::admin;
use crate::configuration::{LogFormat, Settings, SettingsLoader, key};
use crate::database::{self, DatabaseError};
use crate::demo;
use crate::lti_admin;
use crate::startup::{Application, StartupError};
use crate::telemetry::{self, LogTarget};
use crate::world::OsRandom;

const AFTER_HELP: &str = "\
Configuration is read from the --config file, then from MEDIALIB_* environment
variables (MEDIALIB_DATABASE_URL, MEDIALIB_BIND, MEDIALIB_LOG, ...), then from
flags; later sources win. See README.md for every key.

Exit status: 0 on success, 1 when the command failed, 2 for a usage or
configuration error.";

/// medialib: media libraries with single sign-on and OAuth 2.0 for third-party apps.
#[derive(Debug, Parser)]
#[command(name = "medialib", version, after_help = AFTER_HELP)]
pub struct Cli {
    /// Read settings from this TOML file (overridden by MEDIALIB_* variables and flags)
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,

    // The help comes from the configuration table, like README.md's.
    #[arg(long, global = true, value_name = "URL", help = key::database_url.help())]
    database_url: Option<String>,

    /// Print machine-readable JSON on standard output (for `serve`: JSON log lines)
    #[arg(long, global = true)]
    json: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Apply pending migrations, then serve HTTP until Ctrl-C or SIGTERM
    ///
    /// In-flight requests get 30 seconds to finish after the signal.
    Serve(ServeArgs),
    /// Apply pending database migrations and exit
    ///
    /// Prints each migration as it is applied and a summary; with --json prints
    /// {"applied": [VERSION, ...]}.
    Migrate,
    /// Manage users (add, passwd, list)
    #[command(subcommand)]
    User(UserCommand),
    /// Manage OAuth clients (add, list, remove, rotate-secret)
    #[command(subcommand)]
    Client(ClientCommand),
    /// LMS integration: the LTI 1.1 consumers and LTI 1.3 platforms that may launch medialib
    ///
    /// See docs/lti.md for each LMS's settings.
    #[command(subcommand)]
    Lti(LtiCommand),
    /// Restore an object deleted less than 30 days ago
    ///
    /// Removing an object's last membership deletes it; it is kept 30 days. This puts it back
    /// into the collection it was removed from (or the one given with --into) with its
    /// permLink, fields and, for a library, its members. Prints what was restored; with
    /// --json {"uuid": ..., "type": ..., "title": ..., "collection": ...}.
    Restore {
        /// The object's UUID
        #[arg(value_name = "UUID")]
        uuid: String,
        /// Restore into this collection instead of the one it was removed from
        #[arg(long, value_name = "COLLECTION")]
        into: Option<String>,
    },
    /// Serve a demo organization to try medialib on this computer
    ///
    /// Applies the migrations and makes sure the demo data exists (reused on later runs): the
    /// user `demo`, a library with a video, an audio recording, an image, a file and a
    /// sub-library, and a confidential OAuth client with the redirect URI
    /// http://127.0.0.1/callback. The user gets a new random password and the client a new
    /// secret at every start. Then serves like `serve` (loopback addresses only) and prints
    /// how to sign in, a ready-to-paste authorization URL and the curl commands that finish
    /// the OAuth flow; with --json, one JSON object with the same information. Progress
    /// and logs go to standard error (MEDIALIB_LOG, default warn).
    Demo(DemoArgs),
    /// Process media only: run processing jobs until Ctrl-C or SIGTERM (no HTTP)
    ///
    /// For processing on other machines than the servers: point it at the same database
    /// and media storage as `medialib serve` (whose own `workers` can then be 0). Runs
    /// --jobs jobs at once (default: `workers`, at least 1). On Ctrl-C or SIGTERM a job in
    /// progress is handed back to the queue, uncounted, and taken again by the next worker.
    /// Needs Debian's `ffmpeg` and `ffprobe` on the PATH.
    Worker(WorkerArgs),
    /// Check the media storage (storage check)
    #[command(subcommand)]
    Storage(StorageCommand),
}

#[derive(Debug, Subcommand)]
enum StorageCommand {
    /// Check that the configured media storage works end to end
    ///
    /// Writes a 256 KiB test object under `.medialib-check/`, reads it back whole and in
    /// part, lists it, deletes it and checks that it is gone. Prints each step with ok or
    /// the error (with --json, {"location": ..., "steps": [{"step", "ok", "error"}]}); exits
    /// 1 when a step failed. Needs no database.
    Check,
}

#[derive(Debug, Args)]
struct DemoArgs {
    /// Listen address, a loopback one (127.0.0.1:PORT or [::1]:PORT) [default: 127.0.0.1:8080]
    #[arg(long, value_name = "ADDR")]
    bind: Option<String>,
}

#[derive(Debug, Subcommand)]
enum UserCommand {
    /// Add a user and print its userId ({"userId": ...} with --json)
    Add {
        /// The user's SSO unique identifier (their username)
        #[arg(long, value_name = "ID")]
        unique_id: String,
        /// First name
        #[arg(long, value_name = "NAME", default_value = "")]
        first_name: String,
        /// Last name
        #[arg(long, value_name = "NAME", default_value = "")]
        last_name: String,
        /// Make the user an organization admin (admin on every library)
        #[arg(long)]
        org_admin: bool,
        /// Read a password for the `local` sign-in directory from standard input (one line);
        /// passwords are never taken from the command line
        #[arg(long)]
        password_stdin: bool,
    },
    /// Set or replace a user's password for the `local` sign-in directory
    ///
    /// The password is read from standard input (one line; one trailing newline is
    /// removed), e.g. `printf '%s\n' "$PASSWORD" | medialib user passwd --unique-id alice
    /// --password-stdin`. At least 8 characters, at most 1024 bytes. With --json prints
    /// {"userId": ..., "passwordSet": "true"}.
    Passwd {
        /// The user's uniqueId (their username)
        #[arg(long, value_name = "ID")]
        unique_id: String,
        /// Read the password from standard input (required: passwords are never taken from
        /// the command line)
        #[arg(long, required = true)]
        password_stdin: bool,
    },
    /// List users
    List,
}

#[derive(Debug, Subcommand)]
enum ClientCommand {
    /// Register an OAuth client; prints its client_id and, once only, its client_secret
    Add {
        /// Name shown to users on the consent page
        #[arg(long)]
        name: String,
        /// A redirect URI (exact match; http only for loopback hosts); repeat for several
        #[arg(long = "redirect-uri", value_name = "URI", required = true)]
        redirect_uris: Vec<String>,
        /// A public client (mobile or single-page app): no secret, PKCE required
        #[arg(long)]
        public: bool,
    },
    /// List registered clients
    List,
    /// Remove a client and revoke everything issued to it
    Remove {
        /// The client's id
        #[arg(value_name = "CLIENT_ID")]
        client_id: String,
    },
    /// Replace a confidential client's secret; prints the new one once
    RotateSecret {
        /// The client's id
        #[arg(value_name = "CLIENT_ID")]
        client_id: String,
    },
}

#[derive(Debug, Subcommand)]
enum LtiCommand {
    /// Manage LTI 1.1 consumers (add, list, remove)
    #[command(subcommand)]
    Consumer(ConsumerCommand),
    /// Manage LTI 1.3 platforms (add, list, remove)
    #[command(subcommand)]
    Platform(PlatformCommand),
    /// Manage medialib's LTI 1.3 signing key (rotate)
    #[command(subcommand)]
    Key(KeyCommand),
}

#[derive(Debug, Subcommand)]
enum KeyCommand {
    /// Make a new signing key
    ///
    /// The new key signs from now on. The key before it stays published at /api/lti/jwks (a
    /// platform may have cached the key set); older keys are deleted. Prints the new key's
    /// id; with --json {"kid": ..., "jwks_url": ...}.
    Rotate,
}

#[derive(Debug, Subcommand)]
enum PlatformCommand {
    /// Register an LTI 1.3 platform with the values it shows for medialib
    Add(lti_admin::PlatformOptions),
    /// List registered platforms
    List,
    /// Remove a platform (its course libraries stay)
    Remove {
        /// The platform's issuer
        #[arg(long)]
        issuer: String,
        /// The client id it gave medialib
        #[arg(long = "client-id")]
        client_id: String,
    },
}

#[derive(Debug, Subcommand)]
enum ConsumerCommand {
    /// Register an LMS; prints its consumer key, once only its shared secret, and the
    /// launch URLs to enter in the LMS
    Add {
        /// The operator's name for it (1 to 100 characters)
        #[arg(long)]
        name: String,
    },
    /// List registered consumers
    List,
    /// Remove a consumer: its launches are refused from now on (course libraries stay)
    Remove {
        /// The consumer key
        #[arg(value_name = "KEY")]
        key: String,
    },
}

#[derive(Debug, Args)]
struct WorkerArgs {
    /// Jobs to run at once (1 to 64) [default: `workers`, at least 1]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    jobs: Option<u32>,
}

#[derive(Debug, Args)]
struct ServeArgs {
    #[arg(long, value_name = "ADDR", help = key::bind.help())]
    bind: Option<String>,
}

/// How a command failed.
#[derive(Debug, thiserror::Error)]
enum Failure {
    /// The operator asked for something that cannot work: exit code 2.
    #[error("{0}")]
    Usage(String),
    /// The command ran and failed: exit code 1.
    #[error("{0}")]
    Runtime(String),
}

impl Failure {
    fn exit_code(&self) -> ExitCode {
        match self {
            Failure::Usage(_) => ExitCode::from(2),
            Failure::Runtime(_) => ExitCode::from(1),
        }
    }
}

impl From<DatabaseError> for Failure {
    fn from(error: DatabaseError) -> Self {
        Failure::Runtime(error.to_string())
    }
}

impl From<StartupError> for Failure {
    fn from(error: StartupError) -> Self {
        if error.is_configuration_error() {
            Failure::Usage(error.to_string())
        } else {
            Failure::Runtime(error.to_string())
        }
    }
}

impl From<std::io::Error> for Failure {
    fn from(error: std::io::Error) -> Self {
        Failure::Runtime(error.to_string())
    }
}

/// Runs medialib with the process's arguments and environment.
pub fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    #[cfg(unix)]
    if is_server(&args) {
        let env: Vec<OsString> = std::env::vars_os().map(|(name, _)| name).collect();
        if crate::malloc::should_bound(env.iter()) {
            let error = crate::malloc::reexec_bounded(&args);
            let _ = writeln!(
                std::io::stderr().lock(),
                "medialib: cannot set {}, {} and {} (going on without them): {error}",
                crate::malloc::ARENA_MAX_VAR,
                crate::malloc::MMAP_THRESHOLD_VAR,
                crate::malloc::TRIM_THRESHOLD_VAR
            );
        }
    }
    run(args, std::env::vars_os())
}

/// Whether these arguments start a long-running server (`serve`, `demo`).
fn is_server(args: &[OsString]) -> bool {
    matches!(
        Cli::try_parse_from(args).map(|cli| cli.command),
        Ok(Command::Serve(_) | Command::Demo(_) | Command::Worker(_))
    )
}

/// Runs medialib with these arguments (the first is the program name) and environment.
pub fn run<A, E>(args: A, env: E) -> ExitCode
where
    A: IntoIterator,
    A::Item: Into<OsString> + Clone,
    E: IntoIterator<Item = (OsString, OsString)>,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(error) => {
            // Help and version go to stdout with status 0; usage errors to stderr with 2.
            let _ = error.print();
            return ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2));
        }
    };
    let mut loader = SettingsLoader::new().env_vars(env);
    if let Some(file) = &cli.config {
        loader = loader.file(file);
    }
    if let Some(url) = &cli.database_url {
        loader = loader.set(key::database_url.name(), url.clone());
    }
    if let Command::Demo(DemoArgs { bind: Some(bind) }) = &cli.command {
        loader = loader.set(key::bind.name(), bind.clone());
    }
    if let Command::Serve(ServeArgs { bind: Some(bind) }) = &cli.command {
        loader = loader.set(key::bind.name(), bind.clone());
    }
    let settings = match loader.load() {
        Ok(settings) => settings,
        Err(error) => {
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(stderr, "medialib: the configuration is invalid:");
            for problem in error.problems() {
                let _ = writeln!(stderr, "  {problem}");
            }
            return ExitCode::from(2);
        }
    };
    let outcome = match cli.command {
        Command::Serve(_) => serve(settings, cli.json),
        Command::Worker(WorkerArgs { jobs }) => worker(settings, jobs, cli.json),
        Command::Migrate => migrate(&settings, cli.json),
        Command::User(cmd) => admin_command(&settings, |s| match cmd {
            UserCommand::Add {
                unique_id,
                first_name,
                last_name,
                org_admin,
                password_stdin,
            } => {
                let password = password_stdin
                    .then(admin::password_from_stdin)
                    .transpose()?;
                admin::user_add(
                    s,
                    &unique_id,
                    &first_name,
                    &last_name,
                    org_admin,
                    password.as_ref(),
                    cli.json,
                )?;
                if password.is_some() {
                    admin::note_unused_password(&settings)?;
                }
                Ok(())
            }
            UserCommand::Passwd {
                unique_id,
                password_stdin: _,
            } => {
                let password = admin::password_from_stdin()?;
                admin::user_passwd(s, &unique_id, &password, cli.json)?;
                admin::note_unused_password(&settings)
            }
            UserCommand::List => admin::user_list(s, cli.json),
        }),
        Command::Restore { uuid, into } => admin_command(&settings, |s| {
            admin::restore(s, &uuid, into.as_deref(), cli.json)
        }),
        Command::Demo(_) => demo(settings, cli.json),
        Command::Storage(StorageCommand::Check) => storage_check(&settings, cli.json),
        Command::Lti(LtiCommand::Consumer(cmd)) => admin_command(&settings, |s| match cmd {
            ConsumerCommand::Add { name } => lti_admin::consumer_add(s, &name, cli.json),
            ConsumerCommand::List => lti_admin::consumer_list(s, cli.json),
            ConsumerCommand::Remove { key } => lti_admin::consumer_remove(s, &key, cli.json),
        }),
        Command::Lti(LtiCommand::Platform(cmd)) => admin_command(&settings, |s| match cmd {
            PlatformCommand::Add(options) => lti_admin::platform_add(s, options, cli.json),
            PlatformCommand::List => lti_admin::platform_list(s, cli.json),
            PlatformCommand::Remove { issuer, client_id } => {
                lti_admin::platform_remove(s, &issuer, &client_id, cli.json)
            }
        }),
        Command::Lti(LtiCommand::Key(KeyCommand::Rotate)) => {
            admin_command(&settings, |s| lti_admin::key_rotate(s, cli.json))
        }
        Command::Client(cmd) => admin_command(&settings, |s| match cmd {
            ClientCommand::Add {
                name,
                redirect_uris,
                public,
            } => admin::client_add(s, &name, redirect_uris, public, cli.json),
            ClientCommand::List => admin::client_list(s, cli.json),
            ClientCommand::Remove { client_id } => admin::client_remove(s, &client_id, cli.json),
            ClientCommand::RotateSecret { client_id } => {
                admin::client_rotate(s, &client_id, cli.json)
            }
        }),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            let _ = writeln!(std::io::stderr(), "medialib: error: {failure}");
            failure.exit_code()
        }
    }
}

/// `medialib serve`.
fn serve(mut settings: Settings, json: bool) -> Result<(), Failure> {
    if json {
        settings.log_format = LogFormat::Json;
    }
    let filter = settings.log.clone().unwrap_or_else(|| "info".to_owned());
    telemetry::init(&filter, settings.log_format, LogTarget::Stdout)
        .map_err(|error| Failure::Usage(error.to_string()))?;
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        database = %settings.database_url,
        "starting medialib"
    );
    actix_web::rt::System::new().block_on(async move {
        let application = Application::build(settings).await.inspect_err(|error| {
            tracing::error!(%error, "medialib cannot start");
        })?;
        application.run_until_stopped().await?;
        tracing::info!("medialib stopped");
        Ok(())
    })
}

/// `medialib worker`.
fn worker(mut settings: Settings, jobs: Option<u32>, json: bool) -> Result<(), Failure> {
    if json {
        settings.log_format = LogFormat::Json;
    }
    let filter = settings.log.clone().unwrap_or_else(|| "info".to_owned());
    telemetry::init(&filter, settings.log_format, LogTarget::Stdout)
        .map_err(|error| Failure::Usage(error.to_string()))?;
    let count = jobs.unwrap_or(settings.workers.max(1));
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        database = %settings.database_url,
        jobs = count,
        "starting medialib worker"
    );
    let services = admin::services(&settings).map_err(admin_failure)?;
    let workers = crate::worker::Workers::start(&services, &settings, count)
        .map_err(|error| Failure::Usage(error.to_string()))?;
    actix_web::rt::System::new().block_on(crate::startup::shutdown_signal());
    tracing::info!("stopping: jobs in progress go back to the queue");
    workers.stop();
    tracing::info!("medialib worker stopped");
    Ok(())
}

/// `medialib demo`.
fn demo(settings: Settings, json: bool) -> Result<(), Failure> {
    demo::check_settings(&settings).map_err(admin_failure)?;
    init_command_logging(&settings)?;
    let progress = |line: &str| {
        let _ = writeln!(std::io::stderr(), "demo: {line}");
    };
    progress(&format!("preparing the database {}", settings.database_url));
    let services = admin::services(&settings).map_err(admin_failure)?;
    let data = demo::prepare(&services, &settings, &OsRandom, &mut |line| progress(line))
        .map_err(admin_failure)?;
    let mut settings = settings;
    if settings.docs_client_id.is_none() {
        settings.docs_client_id = Some(data.docs_client_id.to_string());
    }
    let processes = settings.workers > 0;
    let code_ttl = settings.code_ttl.seconds();
    actix_web::rt::System::new().block_on(async move {
        let application = Application::build(settings).await?;
        let instructions =
            demo::Instructions::new(application.base_url(), &data, &OsRandom, code_ttl);
        let run = application.run_until_stopped();
        let mut run = std::pin::pin!(run);
        // One poll starts the server and installs its Ctrl-C and SIGTERM handlers; only then
        // are the instructions printed, so whoever reads them can stop the demo gracefully.
        let early = std::future::poll_fn(|cx| match run.as_mut().poll(cx) {
            std::task::Poll::Ready(result) => std::task::Poll::Ready(Some(result)),
            std::task::Poll::Pending => std::task::Poll::Ready(None),
        })
        .await;
        if early.is_none() && processes && !data.media.is_empty() {
            // The server (and its worker) runs meanwhile: the media is processed by it.
            let (user, library, media) = (data.user.clone(), data.library, data.media.clone());
            let waited = actix_web::rt::task::spawn_blocking(move || {
                crate::demo_media::wait_until_processed(
                    &services,
                    &user,
                    library,
                    &media,
                    crate::demo_media::PROCESSING_WAIT,
                    &mut |line| progress(line),
                )
            })
            .await;
            if let Ok(true) = waited {
                progress("the demo media is ready");
            }
        }
        if early.is_none() {
            let mut stdout = std::io::stdout().lock();
            if json {
                writeln!(stdout, "{}", instructions.to_json())?;
            } else {
                write!(stdout, "{}", instructions.to_text())?;
            }
            stdout.flush()?;
            drop(stdout);
            progress("serving; Ctrl-C or SIGTERM stops");
        }
        match early {
            Some(result) => result?,
            None => run.await?,
        }
        progress("stopped");
        Ok(())
    })
}

/// `medialib storage check`.
fn storage_check(settings: &Settings, json: bool) -> Result<(), Failure> {
    init_command_logging(settings)?;
    let storage =
        crate::media::open_storage(&settings.storage).map_err(|e| Failure::Usage(e.to_string()))?;
    let steps = crate::media::check_storage(storage.as_ref());
    let failed = steps.iter().any(|s| s.outcome.is_err());
    let mut stdout = std::io::stdout().lock();
    if json {
        let steps: Vec<_> = steps
            .iter()
            .map(|s| {
                serde_json::json!({
                    "step": s.step,
                    "ok": s.outcome.is_ok(),
                    "error": s.outcome.as_ref().err(),
                })
            })
            .collect();
        writeln!(
            stdout,
            "{}",
            serde_json::json!({ "location": storage.location(), "steps": steps })
        )?;
    } else {
        writeln!(stdout, "media storage: {}", storage.location())?;
        for s in &steps {
            match &s.outcome {
                Ok(()) => writeln!(stdout, "  ok    {}", s.step)?,
                Err(e) => writeln!(stdout, "  FAIL  {}: {e}", s.step)?,
            }
        }
    }
    if failed {
        return Err(Failure::Runtime("the media storage check failed".into()));
    }
    Ok(())
}

/// Logging for one-shot commands: standard error, quiet unless `log` is set.
fn init_command_logging(settings: &Settings) -> Result<(), Failure> {
    let filter = settings.log.as_deref().unwrap_or("warn");
    let format = match settings.log_format {
        LogFormat::Json => LogFormat::Json,
        LogFormat::Auto | LogFormat::Text => LogFormat::Text,
    };
    telemetry::init(filter, format, LogTarget::Stderr)
        .map_err(|error| Failure::Usage(error.to_string()))
}

/// Runs a user/client command against the configured database.
fn admin_command(
    settings: &Settings,
    command: impl FnOnce(&medialib_ports::Services) -> Result<(), admin::AdminError>,
) -> Result<(), Failure> {
    init_command_logging(settings)?;
    let services = admin::services(settings).map_err(admin_failure)?;
    command(&services).map_err(admin_failure)
}

fn admin_failure(e: admin::AdminError) -> Failure {
    match e {
        admin::AdminError::Invalid(m) => Failure::Usage(m),
        admin::AdminError::Failed(m) => Failure::Runtime(m),
    }
}

/// `medialib migrate`.
fn migrate(settings: &Settings, json: bool) -> Result<(), Failure> {
    init_command_logging(settings)?;
    let database = database::connect(&settings.database_url, &database::pool_options(settings))?;
    let mut write_error = None;
    let applied = database::migrate(&database, &mut |version| {
        // With --json, standard output carries only the JSON document.
        let result = if json {
            writeln!(std::io::stderr(), "applying {version}")
        } else {
            writeln!(std::io::stdout(), "applying {version}")
        };
        if let Err(error) = result {
            write_error.get_or_insert(error);
        }
    })?;
    if let Some(error) = write_error {
        return Err(error.into());
    }
    database::ensure_namespace(&database)?;
    let mut stdout = std::io::stdout().lock();
    if json {
        writeln!(stdout, "{}", serde_json::json!({ "applied": applied }))?;
    } else if applied.is_empty() {
        writeln!(stdout, "database is up to date")?;
    } else {
        let n = applied.len();
        let plural = if n == 1 { "" } else { "s" };
        writeln!(stdout, "{n} migration{plural} applied")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn global_flags_work_after_the_subcommand() {
        let cli = Cli::try_parse_from([
            "medialib",
            "migrate",
            "--database-url",
            "sqlite::memory:",
            "--json",
        ])
        .unwrap();
        assert!(cli.json);
        assert_eq!(cli.database_url.as_deref(), Some("sqlite::memory:"));
    }

    #[test]
    fn configuration_errors_exit_with_2() {
        let code = run(
            ["medialib", "migrate", "--database-url", "mysql://x"],
            Vec::new(),
        );
        assert_eq!(code, ExitCode::from(2));
        let code = run(["medialib", "frobnicate"], Vec::new());
        assert_eq!(code, ExitCode::from(2));
    }
}
