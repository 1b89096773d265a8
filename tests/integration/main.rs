//! medialib's integration tests: one binary, one module per area.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "integration tests (helpers included) fail by panicking"
)]

mod helpers;

mod architecture;
mod cli;
mod http_health;
mod metrics;
mod readme;
mod shutdown;
mod tls;

mod api;
mod authz_matrix;
mod contract;
mod hostile;
mod jobs_contract;
mod lti;
mod lti13;
mod lti_contract;
mod oauth;
mod processing;
mod processing_faults;
mod purge_contract;
mod reference;
mod reliability;
mod site;
mod uploads;
mod uploads_contract;
