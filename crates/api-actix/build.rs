//! Installs the browser libraries the pages serve (`web/package.json`, pinned by
//! `web/package-lock.json`) with `npm ci` into `OUT_DIR`, where `src/site/assets.rs` (the
//! upload client), `src/pages.rs` (Plyr, the player's controls) and `src/reference.rs` (Swagger UI) compile them into the binary. No
//! third-party code is kept in the repository and no page loads anything from a CDN.
//!
//! `npm ci` runs only when the lockfile differs from the one last installed here (npm's own
//! cache, `~/.npm`, makes a repeat install work offline). Set `NPM` to use another npm.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The files that the crate includes, under `OUT_DIR/web/node_modules`.
const NEEDED: &[&str] = &[
    "tus-js-client/dist/tus.min.js",
    "swagger-ui-dist/swagger-ui-bundle.js",
    "swagger-ui-dist/swagger-ui.css",
    "swagger-ui-dist/oauth2-redirect.js",
    "plyr/dist/plyr.min.js",
    "plyr/dist/plyr.css",
    "plyr/dist/plyr.svg",
];

fn main() {
    if let Err(why) = install() {
        eprintln!(
            "{why}\n\nmedialib's pages serve browser libraries (tus-js-client, plyr, swagger-ui-dist) \
             that the build installs with npm from crates/api-actix/web/package-lock.json: \
             install Node.js and npm (apt-get install nodejs npm), with access to the npm \
             registry on the first build."
        );
        std::process::exit(1);
    }
}

fn install() -> Result<(), String> {
    println!("cargo:rerun-if-changed=web/package.json");
    println!("cargo:rerun-if-changed=web/package-lock.json");
    println!("cargo:rerun-if-env-changed=NPM");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("web");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("cargo set no OUT_DIR")?).join("web");
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let lock = read(&source.join("package-lock.json"))?;
    let installed = std::fs::read(out.join("package-lock.json")).ok();
    let complete = NEEDED
        .iter()
        .all(|f| out.join("node_modules").join(f).is_file());
    if complete && installed.as_deref() == Some(lock.as_slice()) {
        return Ok(());
    }
    for name in ["package.json", "package-lock.json"] {
        let target = out.join(name);
        std::fs::write(&target, read(&source.join(name))?)
            .map_err(|e| format!("cannot write {}: {e}", target.display()))?;
    }
    let npm = std::env::var_os("NPM").unwrap_or_else(|| "npm".into());
    let status = Command::new(&npm)
        .args([
            "ci",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
        ])
        .current_dir(&out)
        .status()
        .map_err(|e| format!("cannot run {npm:?}: {e}"))?;
    if !status.success() {
        return Err(format!("`npm ci` in {} ended with {status}", out.display()));
    }
    match NEEDED
        .iter()
        .find(|f| !out.join("node_modules").join(f).is_file())
    {
        Some(f) => Err(format!("`npm ci` did not install {f}")),
        None => Ok(()),
    }
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}
