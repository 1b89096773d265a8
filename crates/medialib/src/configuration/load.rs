//! The layers: an optional TOML file, overridden by `MEDIALIB_*` environment variables,
//! overridden by command-line flags (DECISIONS.md §1); and [`Check`], which parses the merged
//! raw values key by key and collects every problem, one line each, naming where the bad value
//! came from.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use super::{ENV_PREFIX, KEYS, Key, Settings, Values};

/// Where a raw value came from, for error messages.
#[derive(Debug, Clone)]
enum Origin {
    File(PathBuf),
    Env(String),
    Flag(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File(path) => write!(f, "{}", path.display()),
            Origin::Env(var) => f.write_str(var),
            Origin::Flag(flag) => f.write_str(flag),
        }
    }
}

#[derive(Debug, Clone)]
struct Raw {
    value: String,
    origin: Origin,
}

/// Every problem found while loading the settings, one line each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    problems: Vec<String>,
}

impl ConfigError {
    /// The problems, each a complete sentence-like line.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.problems.join("\n"))
    }
}

impl std::error::Error for ConfigError {}

/// Collects the layers (file, environment, flags) and turns them into [`Settings`].
#[derive(Debug, Default)]
pub struct SettingsLoader {
    file: Option<PathBuf>,
    env: Vec<(OsString, OsString)>,
    flags: Vec<(String, String)>,
}

impl SettingsLoader {
    /// An empty loader: without layers it yields the defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads this TOML file first (keys as in README.md's configuration table, flat).
    pub fn file(mut self, path: impl Into<PathBuf>) -> Self {
        self.file = Some(path.into());
        self
    }

    /// Takes environment variables (only `MEDIALIB_*` names that are keys are read;
    /// others are ignored). Pass `std::env::vars_os()` for the process environment.
    pub fn env_vars<K, V>(mut self, vars: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<OsString>,
        V: Into<OsString>,
    {
        self.env
            .extend(vars.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// Sets a key at the highest layer (a command-line flag), e.g. `set("bind", "127.0.0.1:0")`.
    pub fn set(mut self, key: &str, value: impl Into<String>) -> Self {
        self.flags.push((key.to_owned(), value.into()));
        self
    }

    /// Merges the layers and parses every key, reporting all problems together.
    pub fn load(&self) -> Result<Settings, ConfigError> {
        let mut check = Check::default();
        if let Some(path) = &self.file {
            check.read_file(path);
        }
        for (name, value) in &self.env {
            let Some(name) = name.to_str() else { continue };
            let Some(key) = name
                .strip_prefix(ENV_PREFIX)
                .and_then(|rest| key_named(&rest.to_ascii_lowercase()))
                .filter(|key| key.env_var() == name)
            else {
                continue;
            };
            match value.to_str() {
                Some(value) => check.set(key, value.to_owned(), Origin::Env(name.to_owned())),
                None => check.problem(format!("{name}: the value is not valid UTF-8")),
            }
        }
        for (name, value) in &self.flags {
            match key_named(name) {
                Some(key) => {
                    let flag = format!("--{}", name.replace('_', "-"));
                    check.set(key, value.clone(), Origin::Flag(flag));
                }
                None => check.problem(format!("unknown setting `{name}`")),
            }
        }
        let settings = Values::read(&mut check).map(|values| values.settings(&mut check));
        match settings {
            Some(settings) if check.problems.is_empty() => Ok(settings),
            _ => Err(ConfigError {
                problems: check.problems,
            }),
        }
    }
}

fn key_named(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|key| key.name == name)
}

/// The merged raw values, turned into typed ones key by key; collects the problems.
#[derive(Debug, Default)]
pub(in crate::configuration) struct Check {
    values: BTreeMap<&'static str, Raw>,
    problems: Vec<String>,
}

impl Check {
    fn set(&mut self, key: &Key, value: String, origin: Origin) {
        self.values.insert(key.name, Raw { value, origin });
    }

    fn problem(&mut self, line: String) {
        self.problems.push(line);
    }

    fn read_file(&mut self, path: &Path) {
        let shown = path.display();
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) => {
                return self.problem(format!(
                    "cannot read the configuration file {shown}: {error}"
                ));
            }
        };
        let table: toml::Table = match text.parse() {
            Ok(table) => table,
            Err(error) => {
                let line = error
                    .span()
                    .map(|span| text[..span.start.min(text.len())].lines().count().max(1));
                let at = line.map(|l| format!(", line {l}")).unwrap_or_default();
                return self.problem(format!(
                    "{shown}{at}: not valid TOML: {}",
                    error.message().trim()
                ));
            }
        };
        for (name, value) in table {
            let Some(key) = key_named(&name) else {
                self.problem(format!("{shown}: unknown key `{name}`"));
                continue;
            };
            match toml_text(value) {
                Some(value) => self.set(key, value, Origin::File(path.to_owned())),
                None => self.problem(format!(
                    "{shown}: `{name}` must be a string, an integer or a list of strings"
                )),
            }
        }
    }

    /// The trimmed value of `key`; an empty value counts as unset.
    fn text(&self, key: &Key) -> Option<String> {
        self.values
            .get(key.name)
            .map(|raw| raw.value.trim())
            .filter(|value| !value.is_empty())
            .map(str::to_owned)
    }

    /// Whether `key` has a value (valid or not).
    pub(in crate::configuration) fn is_set(&self, key: &Key) -> bool {
        self.text(key).is_some()
    }

    /// Reports a problem with `key`, naming where its value came from.
    pub(in crate::configuration) fn complain(&mut self, key: &Key, message: &str) {
        let line = match self.values.get(key.name) {
            Some(raw) => format!("{} (from {}): {message}", key.name, raw.origin),
            None => format!("{}: {message}", key.name),
        };
        self.problem(line);
    }

    /// The parsed value of `key`, `None` when unset or invalid (reported).
    pub(in crate::configuration) fn optional<T>(
        &mut self,
        key: &Key,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Option<T> {
        let value = self.text(key)?;
        match parse(&value) {
            Ok(parsed) => Some(parsed),
            Err(_) if key.secret => {
                self.complain(key, "invalid value");
                None
            }
            Err(message) => {
                self.complain(key, &message);
                None
            }
        }
    }

    /// The parsed value of `key`, else its default; `None` only when the default itself does
    /// not parse (reported: a mistake in the table).
    pub(in crate::configuration) fn or_default<T>(
        &mut self,
        key: &Key,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Option<T> {
        if let Some(value) = self.optional(key, &parse) {
            return Some(value);
        }
        match key.default.map(&parse) {
            Some(Ok(value)) => Some(value),
            Some(Err(message)) => {
                self.problem(format!("{}: the default is invalid: {message}", key.name));
                None
            }
            None => {
                self.problem(format!("{}: no default", key.name));
                None
            }
        }
    }

    /// The comma-separated items of `key`, each parsed; empty when unset.
    pub(in crate::configuration) fn list<T>(
        &mut self,
        key: &Key,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Vec<T> {
        let Some(text) = self.text(key) else {
            return Vec::new();
        };
        let mut items = Vec::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match parse(item) {
                Ok(parsed) => items.push(parsed),
                Err(message) => self.complain(key, &message),
            }
        }
        items
    }
}

/// A TOML value as the text an environment variable would hold (a list joined with commas).
fn toml_text(value: toml::Value) -> Option<String> {
    match value {
        toml::Value::String(s) => Some(s),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        toml::Value::Array(items) => items
            .into_iter()
            .map(|item| match item {
                toml::Value::String(s) => Some(s),
                _ => None,
            })
            .collect::<Option<Vec<String>>>()
            .map(|items| items.join(",")),
        _ => None,
    }
}
