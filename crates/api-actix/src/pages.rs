//! Server-rendered pages outside `/api/`: permLinks, the landing/player page, embeds, oEmbed.

use actix_web::web;

/// Registers the page routes.
pub fn configure(_cfg: &mut web::ServiceConfig) {}
