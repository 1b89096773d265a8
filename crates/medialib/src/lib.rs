//! medialib's composition root: settings, command line, tracing and the
//! wiring of the storage adapter into the HTTP layer.
//!
//! `main.rs` only calls [`cli::main`]; everything else lives here so that
//! integration tests can build the real application
//! ([`startup::Application`]).

pub mod admin;
pub mod cli;
pub mod configuration;
pub mod database;
pub mod demo;
pub mod demo_media;
pub mod lti_admin;
pub mod malloc;
pub mod media;
pub mod secret;
pub mod startup;
pub mod telemetry;
pub mod tls;
pub mod worker;
pub mod world;
