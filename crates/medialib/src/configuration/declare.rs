//! What a table entry becomes: the [`Key`] that documents it (README.md's configuration table,
//! `--help`) and the `settings!` macro that turns the table in `table.rs` into the key list,
//! the typed [`Settings`](super::Settings) struct and the code that reads every key.

use super::ENV_PREFIX;

/// One configuration key as documented: its name (the TOML key; the environment variable is
/// `MEDIALIB_` + the name in upper case, the flag `--` + the name with dashes), what it means
/// and what it is when unset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub(in crate::configuration) name: &'static str,
    /// The doc comment's lines (Markdown), joined into one sentence by [`Key::meaning`].
    pub(in crate::configuration) doc: &'static [&'static str],
    /// The value used when the key is unset, as text the key's parser accepts; `None` when an
    /// unset key has no value (an `Option` or an empty list).
    pub(in crate::configuration) default: Option<&'static str>,
    /// What README.md shows in the default column (Markdown).
    pub(in crate::configuration) shown_default: &'static str,
    /// Values never echoed in messages.
    pub(in crate::configuration) secret: bool,
}

impl Key {
    /// The key's name, as in the TOML file.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The environment variable that sets the key.
    pub fn env_var(&self) -> String {
        format!("{ENV_PREFIX}{}", self.name.to_ascii_uppercase())
    }

    /// What the key means, as one line of Markdown.
    pub fn meaning(&self) -> String {
        let lines: Vec<&str> = self.doc.iter().map(|line| line.trim()).collect();
        lines.join(" ")
    }

    /// The help of the command-line flag that sets this key: the meaning and the default,
    /// as plain text.
    pub fn help(&self) -> String {
        let meaning = self.meaning().replace('`', "");
        let mut chars = meaning.chars();
        let meaning: String = chars
            .next()
            .map(|first| first.to_uppercase().chain(chars).collect())
            .unwrap_or_default();
        match self.default {
            Some(default) => format!("{meaning} [default: {default}]"),
            None => meaning,
        }
    }

    /// The key's row of README.md's configuration table.
    fn markdown_row(&self) -> String {
        format!(
            "| `{}` | `{}` | {} | {} |",
            self.name,
            self.env_var(),
            self.meaning(),
            self.shown_default
        )
    }
}

/// README.md's configuration table, made from the keys: a test keeps README.md equal to it.
pub fn markdown_table() -> String {
    let mut table = String::from("| key | environment | meaning | default |\n|---|---|---|---|\n");
    for key in super::KEYS {
        table.push_str(&key.markdown_row());
        table.push('\n');
    }
    table
}

/// Turns the table of `table.rs` into code. Each entry reads
///
/// ```text
/// /// meaning (Markdown: README.md's table and the field's rustdoc)
/// field NAME: TYPE = KIND "DEFAULT" ["NOTE"], PARSER;
/// ```
///
/// - `field` makes `NAME` a public field of `Settings`; `part` keeps it for the derived
///   settings only (`tls_cert` becomes part of `tls`).
/// - KIND says what an unset key is: `default` parses "DEFAULT" with the same PARSER (TYPE is
///   the parsed type; README shows `DEFAULT` and the optional NOTE); `unset` is `None`
///   (TYPE is `Option<_>`; README shows "DEFAULT" as written); `list` is a comma-separated
///   list, empty when unset (TYPE is `Vec<_>`); `secret` is like `unset` and its value is
///   never echoed in messages.
/// - PARSER is a `Fn(&str) -> Result<T, String>` given the trimmed text; its message names
///   the bad text.
///
/// After the keys, `derived` lists the `Settings` fields made from several keys by a
/// function `fn(&Values, &mut Check) -> T`, and `checks` the rules between keys,
/// `fn(&Values, &mut Check)`, both run in order after every key is read.
macro_rules! settings {
    (@shown default $shown:literal) => { concat!("`", $shown, "`") };
    (@shown default $shown:literal $note:literal) => { concat!("`", $shown, "` ", $note) };
    (@shown $kind:ident $shown:literal $($note:literal)?) => { concat!($shown $(, " ", $note)?) };

    (@default default $shown:literal) => { Some($shown) };
    (@default $kind:ident $shown:literal) => { None };

    (@secret secret) => { true };
    (@secret $kind:ident) => { false };

    (@read default $check:ident $key:path, $parse:expr) => { $check.or_default(&$key, $parse) };
    (@read unset $check:ident $key:path, $parse:expr) => { Some($check.optional(&$key, $parse)) };
    (@read secret $check:ident $key:path, $parse:expr) => { Some($check.optional(&$key, $parse)) };
    (@read list $check:ident $key:path, $parse:expr) => { Some($check.list(&$key, $parse)) };

    // `Settings`: the `field` entries, then the derived fields.
    (@struct [$($fields:tt)*] [$($derived:tt)*]) => {
        /// The validated settings of one medialib process (see README.md's configuration
        /// table); a value is always usable: every key parsed, every rule between keys held.
        #[derive(Debug, Clone)]
        pub struct Settings {
            $($fields)*
            $($derived)*
        }
    };
    (@struct [$($fields:tt)*] [$($derived:tt)*]
        {$($attr:tt)*} field $name:ident: $ty:ty; $($rest:tt)*) => {
        settings!(@struct [$($fields)* $($attr)* pub $name: $ty,] [$($derived)*] $($rest)*);
    };
    (@struct [$($fields:tt)*] [$($derived:tt)*]
        {$($attr:tt)*} part $name:ident: $ty:ty; $($rest:tt)*) => {
        settings!(@struct [$($fields)*] [$($derived)*] $($rest)*);
    };

    // The struct literal that moves the `field` values into `Settings`.
    (@literal $values:ident [$($derived:ident)*] [$($out:ident)*]) => {
        Settings { $($out: $values.$out,)* $($derived,)* }
    };
    (@literal $values:ident [$($derived:ident)*] [$($out:ident)*] field $name:ident $($rest:tt)*) => {
        settings!(@literal $values [$($derived)*] [$($out)* $name] $($rest)*)
    };
    (@literal $values:ident [$($derived:ident)*] [$($out:ident)*] part $name:ident $($rest:tt)*) => {
        settings!(@literal $values [$($derived)*] [$($out)*] $($rest)*)
    };

    (
        keys {
            $(
                $(#[doc = $doc:literal])*
                $dest:ident $name:ident: $ty:ty = $kind:ident $shown:literal $($note:literal)?, $parse:expr;
            )*
        }
        derived {
            $(
                $(#[doc = $ddoc:literal])*
                $derived:ident: $dty:ty = $compose:path;
            )*
        }
        checks { $($rule:path),* $(,)? }
    ) => {
        /// The configuration keys, one constant each.
        #[allow(non_upper_case_globals)]
        pub mod key {
            $(
                #[doc = concat!("`", stringify!($name), "`")]
                pub const $name: $crate::configuration::Key = $crate::configuration::Key {
                    name: stringify!($name),
                    doc: &[$($doc),*],
                    default: $crate::configuration::declare::settings!(@default $kind $shown),
                    shown_default: $crate::configuration::declare::settings!(@shown $kind $shown $($note)?),
                    secret: $crate::configuration::declare::settings!(@secret $kind),
                };
            )*
        }

        /// Every key, in the order of README.md's configuration table.
        pub const KEYS: &[$crate::configuration::Key] = &[$(key::$name),*];

        /// Every key's value, typed, before the derived settings are made.
        #[derive(Debug)]
        pub(super) struct Values {
            $(pub(super) $name: $ty,)*
        }

        impl Values {
            /// Reads every key; `None` only when a default does not parse (reported).
            pub(super) fn read(check: &mut $crate::configuration::load::Check) -> Option<Self> {
                Some(Self {
                    $($name: settings!(@read $kind check key::$name, $parse)?,)*
                })
            }

            /// Makes the derived settings and checks the rules between keys.
            pub(super) fn settings(self, check: &mut $crate::configuration::load::Check) -> Settings {
                $(let $derived = $compose(&self, check);)*
                $($rule(&self, check);)*
                settings!(@literal self [$($derived)*] [] $($dest $name)*)
            }
        }

        settings!(@struct [] [$($(#[doc = $ddoc])* pub $derived: $dty,)*]
            $({$(#[doc = $doc])*} $dest $name: $ty;)*);
    };
}

pub(super) use settings;
