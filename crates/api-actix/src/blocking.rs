//! Running the synchronous use cases off the async workers, inside the request's span.

use actix_web::web;
use medialib_ports::Services;

use crate::error::ApiError;
use crate::state::AppState;

/// Runs `f` with the services on the blocking thread pool and maps its error; a 503
/// ([`ApiError::Overloaded`]) at once when `max_in_flight` requests are already at it.
pub async fn run<T, E, F>(state: &AppState, f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    E: Into<ApiError> + Send + 'static,
    F: FnOnce(&Services) -> Result<T, E> + Send + 'static,
{
    admitted(state, false, f).await
}

/// [`run`] for a password sign-in: once admitted, it waits (on the async worker, holding no
/// thread) for one of the sign-in slots (two per CPU, `AppState::hashing`), then runs. So a
/// burst of sign-ins never fills the blocking pool, which is sized for the database pool.
pub async fn run_hashing<T, E, F>(state: &AppState, f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    E: Into<ApiError> + Send + 'static,
    F: FnOnce(&Services) -> Result<T, E> + Send + 'static,
{
    admitted(state, true, f).await
}

async fn admitted<T, E, F>(state: &AppState, hashing: bool, f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    E: Into<ApiError> + Send + 'static,
    F: FnOnce(&Services) -> Result<T, E> + Send + 'static,
{
    let services = state.services().clone();
    // Held until the work is done: queued and running requests both count.
    let _slot = state.admission.try_enter().ok_or(ApiError::Overloaded)?;
    // The semaphore is never closed; were it, the work would run ungated.
    let _sign_in = match hashing {
        true => state.hashing.acquire().await.ok(),
        false => None,
    };
    block(services, f).await
}

async fn block<T, E, F>(services: Services, f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    E: Into<ApiError> + Send + 'static,
    F: FnOnce(&Services) -> Result<T, E> + Send + 'static,
{
    let span = tracing::Span::current();
    match web::block(move || span.in_scope(|| f(&services))).await {
        Ok(result) => result.map_err(Into::into),
        Err(e) => {
            tracing::error!(error = %e, "blocking task failed");
            Err(ApiError::Internal)
        }
    }
}
