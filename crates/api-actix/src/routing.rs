//! How a route is registered: every resource carries its pattern for the metrics
//! ([`resource`]), and a read-only one answers GET and HEAD, other methods a 501
//! ([`read_only`]).

use actix_web::{HttpResponse, web};

use crate::error::ApiError;

/// A resource's route pattern, attached to it as app data by [`resource`], so that the
/// metrics middleware names the route without matching the path against the routing table a
/// second time (`HttpRequest::match_pattern` runs the patterns' regular expressions again).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RoutePattern(pub(crate) &'static str);

/// `web::resource(pattern)`, labelled for the metrics with its pattern. Every route is
/// registered through this; one that is not is still labelled, at the cost of a lookup.
pub fn resource(pattern: &'static str) -> actix_web::Resource {
    web::resource(pattern).app_data(RoutePattern(pattern))
}

/// A resource whose handler answers GET and HEAD; other methods are a 501.
pub fn read_only<F, Args>(path: &'static str, handler: F) -> actix_web::Resource
where
    F: actix_web::Handler<Args> + Clone,
    Args: actix_web::FromRequest + 'static,
    F::Output: actix_web::Responder + 'static,
{
    resource(path)
        .route(web::get().to(handler.clone()))
        .route(web::head().to(handler))
        .default_service(web::to(get_only))
}

/// Any method but GET or HEAD on a read-only path.
async fn get_only() -> Result<HttpResponse, ApiError> {
    Err(ApiError::MethodNotImplemented { allow: "GET, HEAD" })
}
