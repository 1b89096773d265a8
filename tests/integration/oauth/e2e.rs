//! Placeholder: filled in by the OAuth work.
