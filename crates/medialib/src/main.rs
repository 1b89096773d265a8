//! The `medialib` binary. All behaviour lives in the library (`medialib::cli`).

use std::process::ExitCode;

fn main() -> ExitCode {
    medialib::cli::main()
}
