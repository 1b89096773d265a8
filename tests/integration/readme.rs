//! README.md's newcomer path, run as written: the command under "Start it" starts the demo,
//! which this test probes over HTTP (readiness, then the whole OAuth flow with the printed
//! credentials, authorization URL and commands, up to an authorized API call) and stops with
//! SIGTERM; the command under "Run the tests" is `scripts/test`.
//!
//! The start command runs in the workspace root, like a newcomer's after `git clone`, but with
//! `MEDIALIB_DATABASE_URL` pointing into a temporary directory (so no `./medialib-data` is left
//! in the work tree) and `MEDIALIB_BIND=127.0.0.1:0` (any free port: the demo prints its URL).
//! It inherits `CARGO_TARGET_DIR` from the test's environment, so it reuses the build.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use reqwest::{StatusCode, Url};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .to_path_buf()
}

fn readme() -> String {
    std::fs::read_to_string(workspace_root().join("README.md")).expect("cannot read README.md")
}

/// The one command in the first fenced `sh` block under the `## {heading}` heading (before the
/// next `## ` heading). Panics when the README is no longer shaped like that.
fn command_under(readme: &str, heading: &str) -> String {
    let title = format!("## {heading}");
    let mut lines = readme.lines().skip_while(|l| l.trim_end() != title);
    assert!(
        lines.next().is_some(),
        "README.md has no `{title}` heading: the newcomer path moved; update tests/integration/readme.rs"
    );
    let section: Vec<&str> = lines.take_while(|l| !l.starts_with("## ")).collect();
    let start = section
        .iter()
        .position(|l| l.trim_end() == "```sh")
        .unwrap_or_else(|| panic!("no ```sh block under `{title}` in README.md"));
    let block: Vec<&str> = section[start + 1..]
        .iter()
        .take_while(|l| l.trim_end() != "```")
        .copied()
        .collect();
    assert!(
        start + 1 + block.len() < section.len(),
        "the ```sh block under `{title}` is not closed"
    );
    let commands: Vec<&str> = block
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert_eq!(
        commands.len(),
        1,
        "the block under `{title}` must hold exactly one command: {block:?}"
    );
    commands[0].to_owned()
}

#[test]
fn the_newcomer_commands_are_where_the_readme_says() {
    let readme = readme();
    assert_eq!(command_under(&readme, "Run the tests"), "scripts/test");
    let script = workspace_root().join("scripts/test");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&script)
            .expect("scripts/test exists")
            .permissions()
            .mode();
        assert!(mode & 0o111 != 0, "scripts/test is not executable");
    }
    assert!(script.is_file());
    let start = command_under(&readme, "Start it");
    assert!(
        start.contains(" demo"),
        "the first command starts the demo (service with demo data): {start}"
    );
}

/// The targets of a Markdown text's links and images that are paths in the repository (no
/// scheme, not a bare `#anchor`), without their anchors.
fn local_links(text: &str) -> Vec<String> {
    text.split("](")
        .skip(1)
        .filter_map(|rest| rest.split_once(')').map(|(target, _)| target))
        .filter(|t| !t.contains("://") && !t.starts_with('#') && !t.starts_with("mailto:"))
        .map(|t| t.split('#').next().unwrap_or_default().to_owned())
        .collect()
}

/// Every file the README links to or shows (the screenshots among them) is in the repository.
#[test]
fn the_readme_links_and_pictures_name_files_that_exist() {
    let root = workspace_root();
    let links = local_links(&readme());
    assert!(
        links.iter().any(|l| l == "docs/screenshots/player.jpg"),
        "{links:?}"
    );
    let missing: Vec<&String> = links.iter().filter(|l| !root.join(l).is_file()).collect();
    assert!(
        missing.is_empty(),
        "README.md names missing files: {missing:?}"
    );
    // Positive control: a link to a file that is not there is found and reported.
    let made_up = "see ![a](docs/screenshots/nowhere.jpg) and [b](docs/api.md#uploads) and [c](https://x.example/a)";
    assert_eq!(
        local_links(made_up),
        ["docs/screenshots/nowhere.jpg", "docs/api.md"]
    );
    assert!(!root.join("docs/screenshots/nowhere.jpg").is_file());
}

#[test]
fn the_command_parser_notices_a_changed_readme() {
    let good =
        "# x\n\n## Start it\n\n```sh\ncargo run -p medialib -- demo\n```\n\nmore\n\n## Next\n";
    assert_eq!(
        command_under(good, "Start it"),
        "cargo run -p medialib -- demo"
    );
    for bad in [
        "## Start\n\n```sh\ncargo run\n```\n",
        "## Start it\n\nno block\n\n## Next\n\n```sh\ncargo run\n```\n",
        "## Start it\n\n```sh\ncargo run\ncargo test\n```\n",
        "## Start it\n\n```sh\ncargo run\n",
    ] {
        let outcome = std::panic::catch_unwind(|| command_under(bad, "Start it"));
        assert!(outcome.is_err(), "accepted {bad:?}");
    }
}

/// What the demo printed.
#[derive(Debug, Default)]
struct Printed {
    url: String,
    username: String,
    password: String,
    authorization_url: String,
    token_command: String,
    api_command: String,
    upload_command: String,
    media_command: String,
}

impl Printed {
    fn parse(lines: &[String]) -> Self {
        let mut p = Printed::default();
        for line in lines {
            let t = line.trim();
            if let Some(url) = t.strip_prefix("medialib demo is running at ") {
                p.url = url.to_owned();
            } else if let Some(v) = t.strip_prefix("username:") {
                p.username = v.trim().to_owned();
            } else if let Some(v) = t.strip_prefix("password:") {
                p.password = v.trim().to_owned();
            } else if t.starts_with("http") && t.contains("/api/oauth/authorize?") {
                p.authorization_url = t.to_owned();
            } else if t.starts_with("curl -s -X POST ") {
                p.token_command = t.to_owned();
            } else if t.starts_with("curl -s -X PUT ") {
                p.upload_command = t.to_owned();
            } else if t.starts_with("curl -s -H ") && p.api_command.is_empty() {
                p.api_command = t.to_owned();
            } else if t.starts_with("curl -s -H ") {
                p.media_command = t.to_owned();
            }
        }
        p
    }
}

/// A minimal browser: keeps cookies, follows no redirect.
struct Browser {
    cookies: Vec<(String, String)>,
}

/// One answer.
struct Page {
    status: StatusCode,
    location: Option<String>,
    body: String,
}

impl Browser {
    async fn send(&mut self, mut req: reqwest::RequestBuilder) -> Page {
        if !self.cookies.is_empty() {
            let header: Vec<String> = self
                .cookies
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            req = req.header("Cookie", header.join("; "));
        }
        let res = req.send().await.expect("request to the demo failed");
        for set in res.headers().get_all("set-cookie") {
            let set = set.to_str().unwrap();
            let (pair, attributes) = set.split_once(';').unwrap_or((set, ""));
            let (name, value) = pair.split_once('=').unwrap();
            self.cookies.retain(|(k, _)| k != name);
            if !attributes.to_ascii_lowercase().contains("max-age=0") {
                self.cookies.push((name.to_owned(), value.to_owned()));
            }
        }
        Page {
            status: res.status(),
            location: res
                .headers()
                .get("location")
                .map(|v| v.to_str().unwrap().to_owned()),
            body: res.text().await.unwrap(),
        }
    }
}

/// The hidden fields of a page's forms (askama escapes only what these tests never see).
fn hidden_fields(body: &str) -> Vec<(String, String)> {
    let attribute = |tag: &str, name: &str| -> Option<String> {
        let needle = format!(" {name}=\"");
        let start = tag.find(&needle)? + needle.len();
        let len = tag[start..].find('"')?;
        Some(
            tag[start..start + len]
                .replace("&#34;", "\"")
                .replace("&#38;", "&")
                .replace("&amp;", "&"),
        )
    };
    body.split('<')
        .filter(|t| t.starts_with("input "))
        .map(|t| t.split('>').next().unwrap())
        .filter(|t| attribute(t, "type").as_deref() == Some("hidden"))
        .map(|t| {
            (
                attribute(t, "name").unwrap(),
                attribute(t, "value").unwrap_or_default(),
            )
        })
        .collect()
}

/// The `-d key=value` fields and the URL of a printed `curl -X POST` command.
fn curl_form(command: &str) -> (String, Vec<(String, String)>) {
    let words: Vec<&str> = command.split_whitespace().collect();
    let url = words
        .iter()
        .find(|w| w.starts_with("http"))
        .expect("no URL in the token command")
        .to_string();
    let form = words
        .windows(2)
        .filter(|w| w[0] == "-d")
        .map(|w| {
            let (k, v) = w[1].split_once('=').unwrap();
            let decode = |s: &str| -> String {
                Url::parse(&format!("http://x/?v={s}"))
                    .unwrap()
                    .query_pairs()
                    .next()
                    .map(|(_, v)| v.into_owned())
                    .unwrap_or_default()
            };
            (k.to_owned(), decode(v))
        })
        .collect();
    (url, form)
}

/// Drives the printed OAuth flow: authorize, sign in, approve, exchange, call the API.
async fn follow_the_printed_flow(printed: &Printed) {
    let client = crate::helpers::http_client()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let url = printed.url.trim_end_matches('/');

    let ready = client.get(format!("{url}/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), StatusCode::OK);

    // 1. The authorization URL shows the sign-in page.
    let mut browser = Browser {
        cookies: Vec::new(),
    };
    let page = browser.send(client.get(&printed.authorization_url)).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(
        page.body.contains(r#"type="password""#),
        "not the sign-in page: {}",
        page.body
    );
    let mut form = hidden_fields(&page.body);
    form.push(("username".into(), printed.username.clone()));
    form.push(("password".into(), printed.password.clone()));
    let signed_in = browser
        .send(client.post(format!("{url}/api/oauth/login")).form(&form))
        .await;
    assert_eq!(
        signed_in.status,
        StatusCode::SEE_OTHER,
        "{}",
        signed_in.body
    );
    let back = signed_in.location.unwrap();
    let consent = browser
        .send(client.get(Url::parse(url).unwrap().join(&back).unwrap()))
        .await;
    assert_eq!(consent.status, StatusCode::OK, "{}", consent.body);
    assert!(
        consent.body.contains("medialib demo client"),
        "{}",
        consent.body
    );
    let mut form = hidden_fields(&consent.body);
    form.push(("decision".into(), "approve".into()));
    let approved = browser
        .send(
            client
                .post(format!("{url}/api/oauth/authorize"))
                .form(&form),
        )
        .await;
    assert_eq!(approved.status, StatusCode::SEE_OTHER, "{}", approved.body);
    let redirect = Url::parse(&approved.location.unwrap()).unwrap();
    assert_eq!(
        redirect.as_str().split('?').next(),
        Some("http://127.0.0.1/callback")
    );
    let code = redirect
        .query_pairs()
        .find(|(k, _)| k == "code")
        .map(|(_, v)| v.into_owned())
        .expect("no code in the redirect");

    // 2. The printed token command, with the code pasted in.
    assert!(printed.token_command.contains("PASTE_THE_CODE_HERE"));
    let (token_url, mut form) = curl_form(&printed.token_command);
    for (k, v) in &mut form {
        if k == "code" {
            *v = code.clone();
        }
    }
    let tokens = client.post(&token_url).form(&form).send().await.unwrap();
    assert_eq!(tokens.status(), StatusCode::OK);
    let tokens: serde_json::Value = tokens.json().await.unwrap();
    let access = tokens["access_token"].as_str().expect("no access_token");
    assert!(
        tokens["refresh_token"].is_string(),
        "offline access was asked for: {tokens}"
    );

    // 3. The printed API call, with the access token pasted in.
    let api_url = printed
        .api_command
        .split_whitespace()
        .last()
        .expect("no URL in the API command");
    assert!(
        printed
            .api_command
            .contains("\"Authorization: Bearer PASTE_THE_ACCESS_TOKEN_HERE\""),
        "{}",
        printed.api_command
    );
    let listed = client
        .get(api_url)
        .bearer_auth(access)
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status(), StatusCode::OK);
    let listed: serde_json::Value = listed.json().await.unwrap();
    let text = listed.to_string();
    for title in ["Welcome to medialib", "Seminar materials", "Syllabus"] {
        assert!(text.contains(title), "{title} is not listed: {listed}");
    }

    // 4. The printed upload, run by curl with a file, and the download its record offers.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lecture notes.pdf");
    let bytes: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&file, &bytes).unwrap();
    let upload = printed
        .upload_command
        .replace("PASTE_THE_ACCESS_TOKEN_HERE", access)
        .replace("PATH_OF_A_FILE", "lecture_notes.pdf");
    std::fs::copy(&file, dir.path().join("lecture_notes.pdf")).unwrap();
    let out = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(&upload)
        .current_dir(dir.path())
        .output()
        .await
        .unwrap();
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    let uuid = answer["uuid"].as_str().expect("the upload names its uuid");
    let media_url = printed
        .media_command
        .split_whitespace()
        .last()
        .unwrap()
        .replace("PASTE_THE_UUID_HERE", uuid);
    let media: serde_json::Value = client
        .get(&media_url)
        .bearer_auth(access)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let download = media["files"][0]["url"].as_str().expect("a download URL");
    let got = client
        .get(download)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert!(
        got.as_ref() == bytes.as_slice(),
        "the download differs from the upload"
    );
}

/// Kills the process if the test ends (or panics) while it still runs.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_start_command_serves_the_demo_until_sigterm() {
    let command = command_under(&readme(), "Start it");
    // Run as a shell would: plain words only, so splitting on blanks is what sh does.
    assert!(
        command
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " -_./:=".contains(c)),
        "the start command is no longer a plain command: {command}"
    );
    let words: Vec<&str> = command.split_whitespace().collect();
    let data = tempfile::tempdir().unwrap();
    let db_url = format!("sqlite://{}/medialib.db", data.path().display());
    let mut cmd = Command::new(words[0]);
    cmd.args(&words[1..])
        .current_dir(workspace_root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("MEDIALIB_") {
            cmd.env_remove(name);
        }
    }
    cmd.env("MEDIALIB_DATABASE_URL", &db_url)
        .env(
            "MEDIALIB_STORAGE_URL",
            format!("file://{}/media", data.path().display()),
        )
        .env("MEDIALIB_BIND", "127.0.0.1:0")
        .env(
            "MEDIALIB_WORK_DIR",
            format!("{}/work", data.path().display()),
        );
    let before = workspace_root().join("medialib-data").exists();
    let mut child = KillOnDrop(cmd.spawn().expect("cannot run the README's start command"));
    let child = &mut child.0;

    let (tx, lines) = mpsc::channel::<String>();
    let out = child.stdout.take().unwrap();
    let stdout_reader = std::thread::spawn({
        let tx = tx.clone();
        move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        }
    });
    let err = child.stderr.take().unwrap();
    let stderr_reader = std::thread::spawn(move || {
        std::io::BufReader::new(err)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
    });
    drop(tx);

    // The first start may compile medialib: allow for it.
    let deadline = Instant::now() + Duration::from_secs(900);
    let mut printed_lines = Vec::new();
    while !printed_lines
        .iter()
        .any(|l: &String| l.starts_with("docs/api.md explains it."))
    {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => printed_lines.push(line),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "the demo printed no instructions:\n{}\nstderr:\n{}",
                    printed_lines.join("\n"),
                    stderr_reader.join().unwrap().join("\n")
                );
            }
        }
    }
    let printed = Printed::parse(&printed_lines);
    assert!(
        printed.url.starts_with("http://127.0.0.1:") && !printed.url.ends_with(":0/"),
        "{printed:?}"
    );

    let probe =
        tokio::time::timeout(Duration::from_secs(120), follow_the_printed_flow(&printed)).await;

    let pid = child.id().to_string();
    let signalled = Instant::now();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if signalled.elapsed() > Duration::from_secs(40) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the demo still runs 40 s after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    stdout_reader.join().unwrap();
    let stderr = stderr_reader.join().unwrap().join("\n");
    probe.expect("probing the demo took longer than 2 minutes");
    assert!(status.success(), "{status:?}\nstderr:\n{stderr}");
    assert!(stderr.contains("demo: stopped"), "{stderr}");
    assert!(
        data.path().join("medialib.db").is_file(),
        "the demo did not use MEDIALIB_DATABASE_URL"
    );
    assert_eq!(
        workspace_root().join("medialib-data").exists(),
        before,
        "the demo wrote ./medialib-data into the work tree"
    );
}

/// The `MEDIALIB_*` names in `text`.
fn setting_names(text: &str) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("MEDIALIB_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        // `MEDIALIB_*` is the prefix, not a name.
        if end > "MEDIALIB_".len() {
            names.insert(tail[..end].to_owned());
        }
        rest = &tail[end..];
    }
    names
}

/// The `KEY=VALUE` pairs of the Dockerfile's `ENV` instructions (continuation lines included).
fn dockerfile_env(dockerfile: &str) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let mut in_env = false;
    for line in dockerfile.lines() {
        let line = line.trim();
        let body = match line.strip_prefix("ENV ") {
            Some(body) => body,
            None if in_env => line,
            None => continue,
        };
        in_env = body.ends_with('\\');
        for word in body.trim_end_matches('\\').split_whitespace() {
            let (k, v) = word.split_once('=').expect("ENV KEY=VALUE");
            pairs.push((k.to_owned(), v.to_owned()));
        }
    }
    pairs
}

/// The Dockerfile, the systemd unit and docs/operations.md name settings, paths and commands
/// that exist, and the container's settings load (cannot build the image here: no Docker).
#[test]
fn the_deployment_examples_name_what_exists() {
    let root = workspace_root();
    let read = |path: &str| {
        std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let dockerfile = read("Dockerfile");
    let dockerignore = read(".dockerignore");
    let unit = read("deploy/medialib.service");
    let operations = read("docs/operations.md");

    // Every setting named is one README.md's configuration table documents.
    let readme = readme();
    let table = &readme[readme
        .find("| key | environment |")
        .expect("README.md's configuration table")..];
    let table = &table[..table.find("\n\n").unwrap_or(table.len())];
    let known = setting_names(table);
    assert!(known.contains("MEDIALIB_DATABASE_URL"), "{known:?}");
    for (file, text) in [
        ("Dockerfile", &dockerfile),
        ("deploy/medialib.service", &unit),
        ("docs/operations.md", &operations),
    ] {
        for name in setting_names(text) {
            assert!(
                known.contains(&name),
                "{file} names {name}, which README.md's configuration table does not list"
            );
        }
    }

    // The build: the package and binary exist, and the context keeps what the build needs.
    assert!(dockerfile.contains("cargo build --release --locked -p medialib --bin medialib"));
    let manifest = read("crates/medialib/Cargo.toml");
    assert!(manifest.contains("name = \"medialib\"\n"), "{manifest}");
    assert!(
        manifest.contains("[[bin]]\nname = \"medialib\""),
        "{manifest}"
    );
    let ignored: Vec<&str> = dockerignore
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    for needed in ["Cargo.toml", "Cargo.lock", "crates", "migrations", "tests"] {
        assert!(root.join(needed).exists(), "{needed}");
        assert!(
            !ignored.contains(&needed),
            ".dockerignore drops {needed}, which the build needs"
        );
    }
    let builder = dockerfile
        .lines()
        .find(|l| l.starts_with("FROM ") && l.contains(" AS build"))
        .unwrap();
    let runtime = dockerfile
        .lines()
        .rfind(|l| l.starts_with("FROM "))
        .unwrap();
    assert!(
        builder.contains("bookworm") && runtime.contains("bookworm"),
        "build and run on the same Debian release (glibc, libpq): {builder} / {runtime}"
    );

    // The container's settings: refused without TLS or a base URL (the documented start-up
    // check), accepted with an https base URL; the database sits in the volume.
    let env = dockerfile_env(&dockerfile);
    let database = &env
        .iter()
        .find(|(k, _)| k == "MEDIALIB_DATABASE_URL")
        .unwrap()
        .1;
    assert!(
        database.starts_with("sqlite:///var/lib/medialib/"),
        "{database}"
    );
    assert!(dockerfile.contains("VOLUME [\"/var/lib/medialib\"]"));
    let err = medialib::configuration::SettingsLoader::new()
        .env_vars(env.clone())
        .load()
        .unwrap_err();
    assert!(err.to_string().contains("bind"), "{err}");
    let mut with_proxy = env;
    with_proxy.push((
        "MEDIALIB_BASE_URL".into(),
        "https://media.example.edu".into(),
    ));
    let settings = medialib::configuration::SettingsLoader::new()
        .env_vars(with_proxy)
        .load()
        .unwrap();
    assert_eq!(settings.bind.to_string(), "0.0.0.0:8080");

    // The unit runs the real subcommand with its state where the default database is.
    assert!(unit.contains("\nExecStart=/usr/local/bin/medialib serve\n"));
    assert!(unit.contains("\nStateDirectory=medialib\n"));
    assert!(unit.contains("\nEnvironmentFile=/etc/medialib/medialib.env\n"));
    assert!(
        unit.contains(
            "\nEnvironment=MEDIALIB_DATABASE_URL=sqlite:///var/lib/medialib/medialib.db\n"
        )
    );
    for args in [&["serve", "--help"][..], &["user", "list", "--help"][..]] {
        let argv = std::iter::once("medialib").chain(args.iter().copied());
        assert_eq!(
            medialib::cli::run(argv, Vec::new()),
            std::process::ExitCode::SUCCESS,
            "{args:?}"
        );
    }

    // operations.md links what it promises.
    for link in ["metrics.md", "../Dockerfile", "../deploy/medialib.service"] {
        assert!(operations.contains(&format!("]({link}")), "{link}");
    }
}

/// README.md's configuration table is the one the code makes from its table of keys
/// (`crates/medialib/src/configuration/table.rs`): a key added there shows up here.
#[test]
fn the_configuration_table_is_made_from_the_code() {
    let readme = readme();
    let expected = medialib::configuration::markdown_table();
    let start = readme
        .find("| key | environment |")
        .expect("README.md's configuration table");
    let end = readme[start..]
        .find("\n\n")
        .map_or(readme.len(), |end| start + end + 1);
    assert!(
        readme[start..end] == expected,
        "README.md's configuration table differs from the code's; replace it with:\n\n{expected}"
    );
}

#[test]
fn the_use_case_example_is_the_test_that_runs() {
    let readme = readme();
    let section = readme
        .split("## Testing business rules without a database")
        .nth(1)
        .expect("README.md's section on testing without a database");
    let shown = section
        .split("```rust\n")
        .nth(1)
        .and_then(|s| s.split("\n```").next())
        .expect("a rust block in the section");
    let file = std::fs::read_to_string(workspace_root().join("crates/ports/tests/example.rs"))
        .expect("crates/ports/tests/example.rs");
    assert!(
        shown.starts_with("use ") && file.contains(shown),
        "README.md's example differs from crates/ports/tests/example.rs, which `cargo test -p \
         medialib-ports` runs: copy the file's code (from its first `use`) into the README"
    );
}
