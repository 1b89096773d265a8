//! Tracing setup: the `log` filter, JSON or readable lines.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::writer::BoxMakeWriter;

use crate::configuration::LogFormat;

/// Where log lines go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogTarget {
    /// Standard output (the server).
    Stdout,
    /// Standard error (one-shot commands, whose standard output is their result).
    Stderr,
}

/// Why tracing could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The filter does not parse.
    #[error("`{filter}` is not a tracing filter: {source}")]
    Filter {
        /// The filter text.
        filter: String,
        /// The parser's complaint.
        source: tracing_subscriber::filter::ParseError,
    },
    /// A global subscriber is already installed.
    #[error("tracing is already initialised: {0}")]
    AlreadyInitialised(String),
}

/// Installs the global subscriber. With [`LogFormat::Auto`] lines are JSON
/// unless `target` is a terminal.
pub fn init(filter: &str, format: LogFormat, target: LogTarget) -> Result<(), TelemetryError> {
    let env_filter = EnvFilter::try_new(filter).map_err(|source| TelemetryError::Filter {
        filter: filter.to_owned(),
        source,
    })?;
    let is_terminal = match target {
        LogTarget::Stdout => std::io::stdout().is_terminal(),
        LogTarget::Stderr => std::io::stderr().is_terminal(),
    };
    let json = match format {
        LogFormat::Json => true,
        LogFormat::Text => false,
        LogFormat::Auto => !is_terminal,
    };
    let writer = match target {
        LogTarget::Stdout => BoxMakeWriter::new(std::io::stdout),
        LogTarget::Stderr => BoxMakeWriter::new(std::io::stderr),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(env_filter)
        .with_ansi(is_terminal && !json)
        .with_writer(writer);
    let result = if json {
        builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .try_init()
    } else {
        builder.try_init()
    };
    result.map_err(|error| TelemetryError::AlreadyInitialised(error.to_string()))
}
