//! The parts of the OpenAPI document that the handlers' `#[utoipa::path]` attributes name:
//! the error responses the operations share ([`responses`]) and the documentation-only
//! shapes of forms, path parameters and small records ([`schemas`]).
//!
//! `openapi.rs` assembles the document from the handlers; this module knows none of them,
//! so that the handlers and the document can both name it.

pub(crate) mod media;
pub(crate) mod responses;
pub(crate) mod schemas;
