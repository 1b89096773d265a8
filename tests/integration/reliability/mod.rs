//! Reliability under faults and load (issue 8): races across two server processes, `kill -9`
//! during writes, a database outage, overload, a full disk under the database, a half-open partition to PostgreSQL. Each test runs a short form in the normal suite;
//! `scripts/soak` runs the long form by raising [`soak_scale`].

mod crash;
mod full_disk;
mod outage;
mod overload;
mod partition;
mod race;

/// How many times longer than the CI form a soak test runs: `MEDIALIB_SOAK_SCALE` (default 1,
/// the short form the normal suite runs; `scripts/soak` sets 10).
pub fn soak_scale() -> usize {
    std::env::var("MEDIALIB_SOAK_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n >= 1)
        .unwrap_or(1)
}
