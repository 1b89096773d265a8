//! Enforces the dependency invariants of docs/ARCHITECTURE.md on the resolved
//! workspace (`cargo metadata`, all features) and the manifest conventions.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};

use cargo_metadata::{CargoOpt, DependencyKind, Metadata, MetadataCommand, Package, PackageId};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits inside the workspace")
        .to_owned()
}

fn metadata() -> Metadata {
    MetadataCommand::new()
        .manifest_path(workspace_root().join("Cargo.toml"))
        .features(CargoOpt::AllFeatures)
        .exec()
        .expect("cargo metadata failed")
}

/// The resolved graph restricted to normal (non-dev, non-build) dependencies.
struct Graph<'a> {
    metadata: &'a Metadata,
    normal_deps: HashMap<&'a PackageId, Vec<&'a PackageId>>,
}

impl<'a> Graph<'a> {
    fn new(metadata: &'a Metadata) -> Self {
        let resolve = metadata
            .resolve
            .as_ref()
            .expect("cargo metadata has no resolve graph");
        let normal_deps = resolve
            .nodes
            .iter()
            .map(|node| {
                let deps = node
                    .deps
                    .iter()
                    .filter(|dep| {
                        dep.dep_kinds
                            .iter()
                            .any(|k| k.kind == DependencyKind::Normal)
                    })
                    .map(|dep| &dep.pkg)
                    .collect();
                (&node.id, deps)
            })
            .collect();
        Self {
            metadata,
            normal_deps,
        }
    }

    fn package(&self, id: &PackageId) -> &'a Package {
        self.metadata
            .packages
            .iter()
            .find(|p| &p.id == id)
            .expect("every resolved id is a package")
    }

    fn workspace_package(&self, name: &str) -> &'a Package {
        self.metadata
            .workspace_packages()
            .into_iter()
            .find(|p| p.name.as_str() == name)
            .unwrap_or_else(|| panic!("workspace package {name} not found"))
    }

    /// Every package `name` depends on through normal dependencies, with one
    /// path from `name` to it (for the failure message).
    fn closure(&self, name: &str, direct_only: bool) -> Vec<(String, Vec<String>)> {
        let root = &self.workspace_package(name).id;
        let mut seen = BTreeSet::new();
        let mut found = Vec::new();
        let mut queue = VecDeque::from([(root, vec![name.to_owned()])]);
        while let Some((id, path)) = queue.pop_front() {
            for dep in self
                .normal_deps
                .get(id)
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                if !seen.insert((*dep).clone()) {
                    continue;
                }
                let dep_name = self.package(dep).name.to_string();
                let mut dep_path = path.clone();
                dep_path.push(dep_name.clone());
                found.push((dep_name, dep_path.clone()));
                if !direct_only {
                    queue.push_back((dep, dep_path));
                }
            }
        }
        found
    }

    /// Asserts that `name` reaches no package accepted by `forbidden`.
    fn assert_no_dependency(&self, invariant: &str, name: &str, forbidden: impl Fn(&str) -> bool) {
        let offending: Vec<String> = self
            .closure(name, false)
            .into_iter()
            .filter(|(dep, _)| forbidden(dep))
            .map(|(_, path)| path.join(" -> "))
            .collect();
        assert!(
            offending.is_empty(),
            "Architecture invariant broken: {invariant}\n  offending dependency paths:\n    {}",
            offending.join("\n    ")
        );
    }
}

/// The names of every workspace package.
fn workspace_member_names(metadata: &Metadata) -> BTreeSet<String> {
    metadata
        .workspace_packages()
        .iter()
        .map(|p| p.name.to_string())
        .collect()
}

#[test]
fn domain_knows_nothing_of_http_sql_async_or_os_randomness() {
    let metadata = metadata();
    let graph = Graph::new(&metadata);
    let banned = [
        "diesel",
        "actix-web",
        "actix-rt",
        "tokio",
        "r2d2",
        "libsqlite3-sys",
        "pq-sys",
        "reqwest",
        "rand",
        "getrandom",
    ];
    graph.assert_no_dependency(
        "medialib-domain must not depend (even transitively) on diesel, actix, tokio, r2d2, \
         SQLite/PostgreSQL drivers, reqwest or OS randomness (rand, getrandom)",
        "medialib-domain",
        |dep| banned.contains(&dep),
    );
}

#[test]
fn domain_depends_on_no_other_workspace_crate() {
    let metadata = metadata();
    let graph = Graph::new(&metadata);
    let members = workspace_member_names(&metadata);
    graph.assert_no_dependency(
        "medialib-domain is the innermost crate: it depends on no other workspace crate",
        "medialib-domain",
        |dep| members.contains(dep),
    );
}

#[test]
fn the_benchmark_ceilings_stand_apart() {
    const CEILINGS: &str = "medialib-bench-hello";
    let metadata = metadata();
    let graph = Graph::new(&metadata);
    let members = workspace_member_names(&metadata);
    assert!(
        members.contains(CEILINGS),
        "{CEILINGS} is no longer a workspace member: update this test and docs/ARCHITECTURE.md"
    );
    graph.assert_no_dependency(
        "the benchmark's ceilings (bench/hello) depend on no medialib crate, so a ceiling \
         never measures medialib's own code",
        CEILINGS,
        |dep| dep != CEILINGS && members.contains(dep),
    );
    for member in members.iter().filter(|m| m.as_str() != CEILINGS) {
        graph.assert_no_dependency(
            "no medialib crate depends on the benchmark's ceilings (bench/hello)",
            member,
            |dep| dep == CEILINGS,
        );
    }
}

/// Crates of SQL, database drivers, HTTP and async runtimes: what the core (ports, the
/// memory store) must not reach, even transitively.
fn is_io_machinery(dep: &str) -> bool {
    const PREFIXES: [&str; 12] = [
        "diesel",
        "actix",
        "tokio",
        "libsqlite3",
        "pq-sys",
        "postgres",
        "sqlx",
        "hyper",
        "reqwest",
        "axum",
        "tower",
        "async-std",
    ];
    PREFIXES.iter().any(|p| dep.starts_with(p))
        || matches!(dep, "r2d2" | "http" | "mio" | "object_store")
}

#[test]
fn ports_know_nothing_of_sql_http_or_async_runtimes() {
    // The predicate recognises what it bans (a predicate that matched nothing would pass).
    for banned in [
        "diesel",
        "actix-web",
        "tokio",
        "hyper",
        "http",
        "reqwest",
        "libsqlite3-sys",
    ] {
        assert!(is_io_machinery(banned), "{banned}");
    }
    assert!(!is_io_machinery("thiserror") && !is_io_machinery("tracing"));
    let metadata = metadata();
    let graph = Graph::new(&metadata);
    graph.assert_no_dependency(
        "medialib-ports must not depend (even transitively) on SQL, database drivers, HTTP \
         or async runtimes",
        "medialib-ports",
        is_io_machinery,
    );
}

#[test]
fn the_memory_store_knows_nothing_of_sql_drivers_or_async_runtimes() {
    let metadata = metadata();
    let graph = Graph::new(&metadata);
    graph.assert_no_dependency(
        "medialib-adapters-memory must not depend (even transitively) on diesel, a database \
         driver, actix, tokio or r2d2: it is the store for tests that need no database",
        "medialib-adapters-memory",
        |dep| is_io_machinery(dep) || dep == "medialib-adapters-diesel",
    );
}

#[test]
fn http_layer_does_not_know_the_storage_adapter() {
    let metadata = metadata();
    let graph = Graph::new(&metadata);
    graph.assert_no_dependency(
        "medialib-api-actix must not depend (even transitively) on medialib-adapters-diesel \
         (or diesel): storage reaches it only through ports and trait objects",
        "medialib-api-actix",
        |dep| dep == "medialib-adapters-diesel" || dep.starts_with("diesel"),
    );
}

#[test]
fn only_the_composition_root_knows_the_media_store() {
    const STORAGE: &str = "medialib-adapters-storage";
    let metadata = metadata();
    let graph = Graph::new(&metadata);
    let members = workspace_member_names(&metadata);
    assert!(
        members.contains(STORAGE),
        "{STORAGE} is no longer a workspace member: update this test and docs/ARCHITECTURE.md"
    );
    // The storage adapter reaches object_store (the guard below would see it if it leaked).
    assert!(
        graph
            .closure(STORAGE, true)
            .iter()
            .any(|(dep, _)| dep == "object_store"),
        "the dependency walk does not see {STORAGE} -> object_store"
    );
    for member in members
        .iter()
        .filter(|m| !matches!(m.as_str(), "medialib" | STORAGE))
    {
        graph.assert_no_dependency(
            "only the composition root (medialib) depends on medialib-adapters-storage: \
             api-actix and the services reach media bytes through the MediaStorage port",
            member,
            |dep| dep == STORAGE,
        );
    }
}

#[test]
fn the_ffmpeg_adapter_knows_only_the_core() {
    const FFMPEG: &str = "medialib-adapters-ffmpeg";
    let metadata = metadata();
    let graph = Graph::new(&metadata);
    let members = workspace_member_names(&metadata);
    assert!(
        members.contains(FFMPEG),
        "{FFMPEG} is no longer a workspace member: update this test and docs/ARCHITECTURE.md"
    );
    let direct: Vec<String> = graph
        .closure(FFMPEG, true)
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    // The walk sees the adapter's own dependencies (else the checks below would pass on nothing).
    assert!(
        direct.iter().any(|d| d == "medialib-ports") && direct.iter().any(|d| d == "serde_json"),
        "the dependency walk does not see {FFMPEG}'s dependencies: {direct:?}"
    );
    let other_members: Vec<&String> = direct
        .iter()
        .filter(|d| {
            members.contains(*d) && !matches!(d.as_str(), "medialib-domain" | "medialib-ports")
        })
        .collect();
    assert!(
        other_members.is_empty(),
        "Architecture invariant broken: {FFMPEG} depends on medialib-domain and medialib-ports \
         only among the workspace's crates; it also depends on {other_members:?}"
    );
    graph.assert_no_dependency(
        "medialib-adapters-ffmpeg runs tools as blocking child processes: no SQL, HTTP or async \
         runtime",
        FFMPEG,
        is_io_machinery,
    );
    for member in members
        .iter()
        .filter(|m| !matches!(m.as_str(), "medialib" | "medialib-tests" | FFMPEG))
    {
        graph.assert_no_dependency(
            "only the composition root (medialib) depends on medialib-adapters-ffmpeg: the \
             services reach processing through the MediaProcessor port",
            member,
            |dep| dep == FFMPEG,
        );
    }
}

#[test]
fn package_names_carry_the_medialib_prefix() {
    let metadata = metadata();
    let bad: Vec<String> = metadata
        .workspace_packages()
        .iter()
        .map(|p| p.name.to_string())
        .filter(|name| name != "medialib" && !name.starts_with("medialib-"))
        .collect();
    assert!(
        bad.is_empty(),
        "Architecture invariant broken: every workspace package is `medialib` or `medialib-*`; \
         these are not: {bad:?}"
    );
}

#[test]
fn every_member_inherits_the_workspace_lints() {
    let metadata = metadata();
    let mut missing = Vec::new();
    for package in metadata.workspace_packages() {
        let text = std::fs::read_to_string(&package.manifest_path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", package.manifest_path));
        let manifest: toml::Table = text
            .parse()
            .unwrap_or_else(|e| panic!("{} is not valid TOML: {e}", package.manifest_path));
        let inherits = manifest
            .get("lints")
            .and_then(|lints| lints.get("workspace"))
            .and_then(toml::Value::as_bool)
            == Some(true);
        if !inherits {
            missing.push(package.manifest_path.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "Architecture invariant broken: every workspace member sets `[lints] workspace = true` \
         (unsafe forbidden, no unwrap/expect/panic outside tests); missing in: {missing:?}"
    );
}

#[test]
fn the_graph_check_sees_known_dependencies() {
    // Guards the guard: if the graph walk silently found nothing, every test above would pass.
    let metadata = metadata();
    let graph = Graph::new(&metadata);
    let medialib: Vec<String> = graph
        .closure("medialib", false)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    for expected in [
        "medialib-adapters-diesel",
        "diesel",
        "actix-web",
        "medialib-domain",
    ] {
        assert!(
            medialib.iter().any(|n| n == expected),
            "medialib should reach {expected}; the dependency walk is broken"
        );
    }
    let direct: Vec<String> = graph
        .closure("medialib-api-actix", true)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert!(direct.iter().any(|n| n == "actix-web"), "{direct:?}");
}

/// Status codes of the error classes (4xx, 5xx) as actix spells them, in
/// `StatusCode::NAME` constants and `HttpResponse::Name()` builders.
const ERROR_STATUS_NAMES: [(&str, &str); 20] = [
    ("BAD_REQUEST", "BadRequest"),
    ("UNAUTHORIZED", "Unauthorized"),
    ("FORBIDDEN", "Forbidden"),
    ("NOT_FOUND", "NotFound"),
    ("METHOD_NOT_ALLOWED", "MethodNotAllowed"),
    ("NOT_ACCEPTABLE", "NotAcceptable"),
    ("REQUEST_TIMEOUT", "RequestTimeout"),
    ("CONFLICT", "Conflict"),
    ("GONE", "Gone"),
    ("PRECONDITION_FAILED", "PreconditionFailed"),
    ("PAYLOAD_TOO_LARGE", "PayloadTooLarge"),
    ("UNSUPPORTED_MEDIA_TYPE", "UnsupportedMediaType"),
    ("UNPROCESSABLE_ENTITY", "UnprocessableEntity"),
    ("TOO_MANY_REQUESTS", "TooManyRequests"),
    ("INTERNAL_SERVER_ERROR", "InternalServerError"),
    ("NOT_IMPLEMENTED", "NotImplemented"),
    ("BAD_GATEWAY", "BadGateway"),
    ("SERVICE_UNAVAILABLE", "ServiceUnavailable"),
    ("GATEWAY_TIMEOUT", "GatewayTimeout"),
    ("LENGTH_REQUIRED", "LengthRequired"),
];

/// The most lines a production source file may have (issue 18): past it, a file holds more
/// than one idea and wants splitting.
const MAX_PRODUCTION_LINES: usize = 800;

/// The lines of production code in a source file: all of it up to its inline test module.
fn production_lines(code: &str) -> usize {
    let end = code.find("#[cfg(test)]\nmod tests {").unwrap_or(code.len());
    code[..end].lines().count()
}

#[test]
fn production_files_stay_under_800_lines() {
    assert_eq!(
        production_lines("a\nb\n#[cfg(test)]\nmod tests {\nc\n}\n"),
        2,
        "the count stops at the inline test module"
    );
    assert_eq!(production_lines("a\nb\nc\n"), 3);
    let mut files = Vec::new();
    rust_files(&workspace_root().join("crates"), &mut files);
    let production: Vec<_> = files
        .iter()
        .filter(|p| {
            p.components().any(|c| c.as_os_str() == "src")
                && p.file_name().is_some_and(|n| n != "tests.rs")
        })
        .collect();
    assert!(production.len() > 100, "{} files", production.len());
    let too_long: Vec<_> = production
        .iter()
        .filter_map(|p| {
            let code = std::fs::read_to_string(p).unwrap();
            let n = production_lines(&code);
            (n > MAX_PRODUCTION_LINES).then(|| format!("{}: {n} lines", p.display()))
        })
        .collect();
    assert!(
        too_long.is_empty(),
        "production files over {MAX_PRODUCTION_LINES} lines (move tests to a tests.rs, or \
         split by idea): {too_long:?}"
    );
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
    {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn errors_map_to_http_in_one_place() {
    // A textual guard: outside `crates/api-actix/src/error.rs` (and outside
    // `#[cfg(test)]` code) no source names an error status, builds an error
    // response or implements `ResponseError`. Handlers return `ApiError`.
    let src = workspace_root().join("crates/api-actix/src");
    let mapping = src.join("error.rs");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut offences = Vec::new();
    for file in files.iter().filter(|f| **f != mapping) {
        let text = std::fs::read_to_string(file).expect("readable source");
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let mut needles = vec![
            "ResponseError for".to_owned(),
            "error::Error".to_owned(),
            "StatusCode::from_u16".to_owned(),
        ];
        for (constant, builder) in ERROR_STATUS_NAMES {
            needles.push(format!("StatusCode::{constant}"));
            needles.push(format!("HttpResponse::{builder}("));
        }
        for needle in needles {
            if code.contains(&needle) {
                offences.push(format!("{}: {needle}", file.display()));
            }
        }
    }
    assert!(
        !files.is_empty() && offences.is_empty(),
        "Architecture invariant broken: errors map to HTTP only in crates/api-actix/src/error.rs \
         (handlers return ApiError); found:\n  {}",
        offences.join("\n  ")
    );
}

/// The top-level modules of the crate whose sources are in `src` (a file `m.rs` or a folder
/// `m/`; `lib.rs` is the root, not a module).
fn top_level_modules(src: &Path) -> BTreeSet<String> {
    std::fs::read_dir(src)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", src.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter_map(|path| {
            let stem = path.file_stem()?.to_str()?.to_owned();
            let module = path.is_dir() || path.extension().is_some_and(|ext| ext == "rs");
            (module && stem != "lib").then_some(stem)
        })
        .collect()
}

/// The names `lib.rs` re-exports (`pub use m::{A, B};`), each with the module `m` it comes from.
fn reexports(lib: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for statement in lib.split(';') {
        let Some(path) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, names)) = path.split_once("::") else {
            continue;
        };
        for name in names.split(|c: char| !c.is_alphanumeric() && c != '_') {
            if !name.is_empty() {
                out.insert(name.to_owned(), module.to_owned());
            }
        }
    }
    out
}

/// The top-level modules that production `code` (what precedes `#[cfg(test)]`, comments left
/// out) names through `crate::`: `crate::m::…`, `crate::{m, …}`, or a name lib.rs re-exports
/// from `m`.
fn modules_named_in(
    code: &str,
    modules: &BTreeSet<String>,
    reexports: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    let code: String = code
        .split("#[cfg(test)]")
        .next()
        .unwrap_or_default()
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut named = BTreeSet::new();
    for (_, rest) in code
        .match_indices("crate::")
        .map(|(i, _)| code.split_at(i + 7))
    {
        // `crate::{a, b::C}` names every item of the group, `crate::a::…` only `a`.
        let items = match rest.strip_prefix('{') {
            Some(group) => group.split('}').next().unwrap_or_default(),
            None => rest
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .next()
                .unwrap_or_default(),
        };
        let heads = items.split(',').map(|item| {
            let item = item.trim_start();
            let end = item
                .find(|c: char| !c.is_alphanumeric() && c != '_')
                .unwrap_or(item.len());
            &item[..end]
        });
        for head in heads {
            if modules.contains(head) {
                named.insert(head.to_owned());
            } else if let Some(module) = reexports.get(head) {
                named.insert(module.clone());
            }
        }
    }
    named
}

/// A cycle in `imports` (module to the modules it names), as the modules along it, first
/// one repeated at the end; `None` when the graph has none.
fn find_cycle(imports: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        module: &str,
        imports: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|m| m == module) {
            let mut cycle = path[start..].to_vec();
            cycle.push(module.to_owned());
            return Some(cycle);
        }
        if done.contains(module) {
            return None;
        }
        path.push(module.to_owned());
        for next in imports.get(module).into_iter().flatten() {
            if let Some(cycle) = visit(next, imports, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(module.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    imports
        .keys()
        .find_map(|module| visit(module, imports, &mut Vec::new(), &mut done))
}

#[test]
fn http_modules_import_each_other_without_cycles() {
    // The checker finds what it looks for (a guard that found nothing would pass vacuously).
    let modules: BTreeSet<String> = ["state", "metrics", "error"].map(String::from).into();
    let lib = reexports("pub use error::ApiError;\npub use state::{AppState, Readiness};");
    assert_eq!(lib.get("Readiness").map(String::as_str), Some("state"));
    assert_eq!(
        modules_named_in(
            "use crate::{ApiError, metrics::Metrics};\n/// [`crate::state`]\nfn f() {}",
            &modules,
            &lib
        ),
        ["error", "metrics"].map(String::from).into()
    );
    let looped: BTreeMap<String, BTreeSet<String>> = [
        ("state", vec!["metrics", "error"]),
        ("metrics", vec!["state"]),
        ("error", vec![]),
    ]
    .into_iter()
    .map(|(m, to)| (m.to_owned(), to.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(
        find_cycle(&looped),
        Some(["metrics", "state", "metrics"].map(String::from).to_vec())
    );

    let src = workspace_root().join("crates/api-actix/src");
    let modules = top_level_modules(&src);
    let lib = reexports(&std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs"));
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut imports: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let relative = file.strip_prefix(&src).expect("inside src");
        let Some(module) = relative.iter().next().and_then(|first| {
            Path::new(first)
                .file_stem()
                .and_then(|stem| stem.to_str())
                .filter(|stem| modules.contains(*stem))
        }) else {
            continue;
        };
        let text = std::fs::read_to_string(file).expect("readable source");
        let named = modules_named_in(&text, &modules, &lib);
        let entry = imports.entry(module.to_owned()).or_default();
        entry.extend(named.into_iter().filter(|m| m != module));
    }
    assert!(
        imports.get("state").is_some_and(|s| s.contains("metrics")),
        "the checker should see state.rs name metrics.rs; it is broken: {imports:?}"
    );
    assert_eq!(
        find_cycle(&imports),
        None,
        "Architecture invariant broken: the top-level modules of api-actix import each other \
         without cycles (the state holds leaf types; what needs the state sits above it)"
    );
}

/// What decides a permission, written anywhere but in the domain's gate: a comparison of
/// levels, the organization-admin flag or the token's write scope read to choose an outcome.
/// Each needle is something a use case, handler or adapter would write to decide for itself.
const PERMISSION_DECISIONS: [&str; 10] = [
    "is_org_admin()",
    "may_write()",
    "contains(Scope::Write)",
    "== PermissionLevel::",
    "!= PermissionLevel::",
    ">= PermissionLevel::",
    "<= PermissionLevel::",
    "> PermissionLevel::",
    "< PermissionLevel::",
    "effective_level(caller",
];

/// Places where a needle is allowed, each with why it decides no permission.
const NOT_DECISIONS: [(&str, &str, &str); 1] = [(
    "crates/api-actix/src/oauth/consent.rs",
    "contains(Scope::Write)",
    "the consent page puts the requested scopes in words",
)];

/// The permission-deciding needles in `code` (production code: what precedes `#[cfg(test)]`).
fn permission_decisions_in(code: &str) -> Vec<&'static str> {
    let code = code.split("#[cfg(test)]").next().unwrap_or_default();
    PERMISSION_DECISIONS
        .into_iter()
        .filter(|needle| code.contains(needle))
        .collect()
}

#[test]
fn permissions_are_decided_only_in_the_domain() {
    // The checker finds what it looks for (a guard that found nothing would pass vacuously).
    assert_eq!(
        permission_decisions_in("if level >= PermissionLevel::View { allow() }"),
        [">= PermissionLevel::"]
    );
    assert_eq!(
        permission_decisions_in("if caller.is_org_admin() { return Ok(()) }"),
        ["is_org_admin()"]
    );
    assert!(permission_decisions_in("#[cfg(test)]\nmod t { x.is_org_admin() }").is_empty());
    // ... and the gate itself is where they are.
    let root = workspace_root();
    let gate = std::fs::read_to_string(root.join("crates/domain/src/authz.rs")).unwrap();
    assert!(!permission_decisions_in(&gate).is_empty());

    let mut files = Vec::new();
    for dir in std::fs::read_dir(root.join("crates")).unwrap() {
        let dir = dir.unwrap().path();
        if dir.file_name().is_some_and(|n| n != "domain") {
            rust_files(&dir.join("src"), &mut files);
        }
    }
    let mut offences = Vec::new();
    for file in &files {
        let relative = file
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(file).expect("readable source");
        for needle in permission_decisions_in(&text) {
            let allowed = NOT_DECISIONS
                .iter()
                .any(|(f, n, _)| *f == relative && *n == needle);
            if !allowed {
                offences.push(format!("{relative}: {needle}"));
            }
        }
    }
    assert!(
        files.len() > 20 && offences.is_empty(),
        "Architecture invariant broken: permissions are decided only by the domain's gate \
         (crates/domain/src/authz.rs); outside it, found:\n  {}",
        offences.join("\n  ")
    );
}

/// What names a rule of the OAuth token lifecycle (a state to branch on, a refusal, a
/// transition): an adapter whose production code names one decides it.
const TOKEN_DECISIONS: [&str; 16] = [
    "RefreshTokenState",
    "RedeemError",
    "RefreshError",
    "ClientAuthError",
    "CodeRefusal",
    "RefreshRefusal",
    ".authenticate(",
    ".redeem(",
    ".rotate(",
    ".check(",
    "is_active(",
    ".is_revoked()",
    "mint_tokens(",
    "decide_code(",
    "decide_refresh(",
    "decide_revocation(",
];

/// The token-deciding needles in the production code of `code` (what precedes
/// `#[cfg(test)]`, comments left out).
fn token_decisions_in(code: &str) -> Vec<&'static str> {
    let code: String = code
        .split("#[cfg(test)]")
        .next()
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    TOKEN_DECISIONS
        .into_iter()
        .filter(|needle| code.contains(needle))
        .collect()
}

#[test]
fn storage_adapters_read_facts_and_write_decisions_but_decide_no_token_rule() {
    // The checker finds what it looks for, and skips comments and tests.
    assert_eq!(
        token_decisions_in("match rec.state() { RefreshTokenState::Used => revoke() }"),
        ["RefreshTokenState"]
    );
    assert_eq!(
        token_decisions_in("if kind.authenticate(secret).is_err() {}"),
        [".authenticate("]
    );
    assert!(token_decisions_in("/// the service calls decide_code(facts)").is_empty());
    assert!(token_decisions_in("#[cfg(test)]\nmod t { code.redeem(&p, now) }").is_empty());
    // ... and the domain is where they are.
    let root = workspace_root();
    let exchange = std::fs::read_to_string(root.join("crates/domain/src/oauth/exchange.rs"))
        .expect("the domain's exchange rules");
    assert!(token_decisions_in(&exchange).len() >= 4);

    let mut files = Vec::new();
    for adapter in ["adapters-diesel", "adapters-memory"] {
        rust_files(&root.join("crates").join(adapter).join("src"), &mut files);
    }
    let mut offences = Vec::new();
    for file in &files {
        // The memory store's test harness drives the services; it is no adapter code.
        if file.ends_with("adapters-memory/src/testing.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("readable source");
        for needle in token_decisions_in(&text) {
            offences.push(format!("{}: {needle}", file.display()));
        }
    }
    assert!(
        files.len() > 10 && offences.is_empty(),
        "Architecture invariant broken: the storage adapters read facts and write the \
         domain's decisions (crates/domain/src/oauth/exchange.rs); they decide no token \
         rule themselves. Found:\n  {}",
        offences.join("\n  ")
    );
}
