//! The blocking HTTP client the adapters reach an identity provider or an LTI platform with.

use std::time::Duration;

/// The longest a request to an identity provider or a platform may take.
const HTTP_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest connecting to one may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A client that follows no redirects (an address given by configuration must not lead
/// elsewhere: SSRF), with bounded timeouts and medialib's user agent. Build it on a blocking
/// thread: reqwest's blocking client must not be made on an async worker.
pub(crate) fn client() -> Result<reqwest::blocking::Client, String> {
    reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(HTTP_TIMEOUT)
        .user_agent(concat!("medialib/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| e.to_string())
}
