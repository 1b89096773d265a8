//! Makes cargo rebuild the crate (re-embedding the SQL) whenever a migration file changes.

fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
