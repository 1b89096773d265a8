//! How glibc's malloc keeps memory in a long-running `medialib` process.
//!
//! glibc's malloc gives threads that allocate at the same time arenas of their own, up to
//! eight per CPU, and keeps what is freed in them for reuse. medialib's stores run on
//! actix-web's blocking pool (many threads), so a burst such as a 10 000-member catalog
//! listing or 256 connections leaves its memory spread over many arenas, resident long after
//! it is freed. Two arenas halve the peak after the catalog scenarios and keep the 256-connection
//! scenario under its target (docs/performance.md).
//!
//! Blocks of at least the mmap threshold are mapped on their own and given back to the system
//! when freed. glibc starts that threshold at 128 KiB but raises it to the size of every mapped
//! block freed (up to 32 MiB), so after the first large answer the next ones (a 10 000-member
//! listing is 5 MiB of JSON, built in a buffer that doubles to 8 MiB) are carved out of the
//! arenas, and what they leave there stays resident: 150 MiB after the 10 000-member listings
//! where the 512-connection listing of 1 000 members alone needs about 100. A fixed threshold
//! of 4 MiB (setting it stops the raising) keeps such buffers out of the arenas, and stays
//! above the 1 MiB buffers that are reused: a media range read whole, an upload's chunks.
//!
//! Setting the mmap threshold also stops glibc from raising its trim threshold with it (to twice
//! the mmap threshold), which then stays at 128 KiB: every free of a 1 MiB block at the top of
//! the heap gave the memory back to the system, and the next request faulted it in again,
//! zeroed. A media range of 1 MiB paid about 100 µs of page faults for it (docs/performance.md,
//! "Range GET"). So the trim threshold is set too, to twice the mmap threshold (8 MiB), the pair
//! glibc's own rule would have made.
//!
//! They can only be set before the process starts (the `MALLOC_ARENA_MAX`,
//! `MALLOC_MMAP_THRESHOLD_` and `MALLOC_TRIM_THRESHOLD_` environment variables; `mallopt` would
//! need `unsafe`), so `medialib serve` and `medialib demo` execute themselves again, in the same
//! process, with them set. An operator who set any of them, or `GLIBC_TUNABLES`, tunes malloc:
//! nothing is changed.

use std::ffi::OsString;

/// The environment variable glibc reads at start-up.
pub const ARENA_MAX_VAR: &str = "MALLOC_ARENA_MAX";

/// The arena limit medialib sets when the environment sets none.
pub const ARENA_MAX: &str = "2";

/// The environment variable for the size (bytes) from which a block is mapped on its own.
pub const MMAP_THRESHOLD_VAR: &str = "MALLOC_MMAP_THRESHOLD_";

/// The mmap threshold medialib sets (4 MiB) when the environment sets none.
pub const MMAP_THRESHOLD: &str = "4194304";

/// The environment variable for how much free memory at the top of the heap is kept.
pub const TRIM_THRESHOLD_VAR: &str = "MALLOC_TRIM_THRESHOLD_";

/// The trim threshold medialib sets (8 MiB, twice [`MMAP_THRESHOLD`]).
pub const TRIM_THRESHOLD: &str = "8388608";

/// Whether a process with this environment should set the three itself: glibc (the only
/// allocator with per-thread arenas here) and no malloc setting chosen by the operator.
pub fn should_bound<'a>(mut env_names: impl Iterator<Item = &'a OsString>) -> bool {
    cfg!(all(target_os = "linux", target_env = "gnu"))
        && !env_names.any(|n| {
            n == ARENA_MAX_VAR
                || n == MMAP_THRESHOLD_VAR
                || n == TRIM_THRESHOLD_VAR
                || n == "GLIBC_TUNABLES"
        })
}

/// Replaces this process (same pid) with the same program and arguments and the arena limit,
/// the mmap threshold and the trim threshold set. Returns only if that fails (then the process
/// goes on with glibc's defaults), with the reason.
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
        .env(MMAP_THRESHOLD_VAR, MMAP_THRESHOLD)
        .env(TRIM_THRESHOLD_VAR, TRIM_THRESHOLD)
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
        assert!(!should_bound(names(&["MALLOC_MMAP_THRESHOLD_"]).iter()));
        assert!(!should_bound(names(&["MALLOC_TRIM_THRESHOLD_"]).iter()));
    }

    #[test]
    fn without_one_glibc_gets_the_limit() {
        let expected = cfg!(all(target_os = "linux", target_env = "gnu"));
        assert_eq!(should_bound(names(&["PATH", "HOME"]).iter()), expected);
    }
}
