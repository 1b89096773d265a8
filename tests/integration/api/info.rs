//! `info` over HTTP (filled in by the API issue).
