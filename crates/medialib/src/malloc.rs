//! How many malloc arenas a long-running `medialib` process may use.
//!
//! glibc's malloc gives threads that allocate at the same time arenas of their own, up to
//! eight per CPU, and keeps what is freed in them for reuse. medialib's stores run on
//! actix-web's blocking pool (many threads), so a burst such as a 10 000-member catalog
//! listing or 256 connections leaves its memory spread over many arenas, resident long after
//! it is freed. Two arenas halve the peak after the catalog scenarios and keep the 256-connection
//! scenario under its target (docs/performance.md). The limit can only be set before the
//! process starts (the `MALLOC_ARENA_MAX` environment variable; `mallopt` would need
//! `unsafe`), so `medialib serve` and `medialib demo` execute themselves again, in the same
//! process, with it set. An operator's own `MALLOC_ARENA_MAX` or `GLIBC_TUNABLES` is kept.

use std::ffi::OsString;

/// The environment variable glibc reads at start-up.
pub const ARENA_MAX_VAR: &str = "MALLOC_ARENA_MAX";

/// The arena limit medialib sets when the environment sets none.
pub const ARENA_MAX: &str = "2";

/// Whether a process with this environment should set the limit itself: glibc (the only
/// allocator with per-thread arenas here) and no limit or tunables chosen by the operator.
pub fn should_bound<'a>(mut env_names: impl Iterator<Item = &'a OsString>) -> bool {
    cfg!(all(target_os = "linux", target_env = "gnu"))
        && !env_names.any(|n| n == ARENA_MAX_VAR || n == "GLIBC_TUNABLES")
}

/// Replaces this process (same pid) with the same program and arguments and the arena limit
/// set. Returns only if that fails (then the process goes on with glibc's default), with the
/// reason.
#[cfg(unix)]
pub fn reexec_bounded(args: &[OsString]) -> std::io::Error {
    use std::os::unix::process::CommandExt as _;
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return e,
    };
    let mut cmd = std::process::Command::new(exe);
    if let Some(arg0) = args.first() {
        cmd.arg0(arg0);
    }
    cmd.args(args.iter().skip(1))
        .env(ARENA_MAX_VAR, ARENA_MAX)
        .exec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn an_operators_choice_is_kept() {
        assert!(!should_bound(names(&["PATH", "MALLOC_ARENA_MAX"]).iter()));
        assert!(!should_bound(names(&["GLIBC_TUNABLES", "HOME"]).iter()));
    }

    #[test]
    fn without_one_glibc_gets_the_limit() {
        let expected = cfg!(all(target_os = "linux", target_env = "gnu"));
        assert_eq!(should_bound(names(&["PATH", "HOME"]).iter()), expected);
    }
}
