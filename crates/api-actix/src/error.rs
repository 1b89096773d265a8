//! The one place where errors become HTTP status codes, headers and bodies.
//!
//! Handlers return [`ApiError`]; the `From` impls below fold every use case's
//! error enum into it, and nothing else in the service picks a status.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpResponse, ResponseError};
use medialib_domain::oauth::OAuthErrorCode;
use medialib_domain::{DescribeRefused, MembershipError, Refusal, UpdateError};
use medialib_ports::services::people::{
    AddUserFailed, ContributeFailed, GrantPermissionFailed, InfoFailed, ListPermissionsFailed,
    ReadUserFailed, RevokePermissionFailed, UpdateUserFailed,
};
use medialib_ports::services::{
    AddMemberFailed, BearerError, ClientAuthFailed, CodeGrantFailed, CreateObjectFailed,
    DescribeFailed, MembershipChangeFailed, OAuthFailure, RefreshGrantFailed, SignInError,
    UpdateObjectFailed,
};
use medialib_ports::{CreateUserError, StoreError, no_wait};
use serde::Serialize;

/// Every failure an HTTP handler can answer with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// Invalid input (400); the message names the field.
    #[error("{0}")]
    BadRequest(String),
    /// No token on a call that needs one (401).
    #[error("authentication required")]
    AuthenticationRequired,
    /// An unknown, expired or revoked token (401 `invalid_token`).
    #[error("invalid or expired credentials")]
    InvalidToken,
    /// The caller lacks the level or scope the call needs (403).
    #[error("{0}")]
    Forbidden(String),
    /// An unknown path under `/api/`.
    #[error("API method not found")]
    ApiMethodNotFound,
    /// An unknown path outside the API.
    #[error("not found")]
    NotFound,
    /// A resource that does not exist where the path says (404).
    #[error("{0}")]
    Missing(String),
    /// The request conflicts with the stored state (409).
    #[error("{0}")]
    Conflict(String),
    /// A request body over the limit (413).
    #[error("request body is larger than {limit} bytes")]
    PayloadTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// A known path called with a method it does not implement.
    #[error("method not implemented for this path")]
    MethodNotImplemented {
        /// The methods the path does implement, for the `Allow` header.
        allow: &'static str,
    },
    /// A feature of a known path that the service does not offer (501, no `Allow`).
    #[error("{0}")]
    NotImplemented(String),
    /// Too many requests from this client, address or account (429 + `Retry-After`).
    #[error("too many requests; try again in {retry_after} seconds")]
    TooManyRequests {
        /// Seconds to wait.
        retry_after: u32,
    },
    /// An OAuth token-endpoint error (RFC 6749 §5.2): `error`, `error_description` and
    /// `message` in the body; 401 for `invalid_client`, else 400 (503/500 for outages).
    #[error("{description}")]
    OAuth {
        /// The RFC 6749 error code.
        code: OAuthErrorCode,
        /// Human-readable detail.
        description: String,
    },
    /// The database cannot be reached (or its pool is exhausted).
    #[error("database unavailable")]
    DatabaseUnavailable,
    /// The request body did not arrive in time (408; the connection is closed).
    #[error("the request body did not arrive in time")]
    RequestTimeout,
    /// `max_in_flight` requests are already doing blocking work: shed at once (503).
    #[error("the server is busy; try again shortly")]
    Overloaded,
    /// The organization's identity provider cannot be reached or answers nonsense (503).
    #[error("the identity provider is unavailable")]
    IdentityProviderUnavailable,
    /// Anything unexpected (500): the body carries only the request id.
    #[error("internal error")]
    Internal,
    /// The media storage cannot be reached now (503 + `Retry-After`).
    #[error("the media storage is unavailable; try again shortly")]
    StorageUnavailable,
    /// The server is out of space (507).
    #[error(
        "the server is out of storage space; nothing of this request was kept beyond what it reports"
    )]
    InsufficientStorage,
    /// The database is out of space: this write was refused whole (507); reads go on.
    #[error(
        "the server's database is out of space: nothing of this request was stored; reading still works"
    )]
    DatabaseFull,
    /// A media link (`/m/…`) that has expired or was altered (403); a browser gets a page
    /// that says to open the item's page again.
    #[error("{0}")]
    LinkRefused(String),
    /// What the request names is gone for good (410).
    #[error("{0}")]
    Gone(String),
    /// The request body has the wrong `Content-Type` (415).
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// A request too large for a limit other than the body limit (413, message given).
    #[error("{0}")]
    TooLarge(String),
    /// A tus `Upload-Checksum` did not match the body (460, tus checksum extension).
    #[error("{0}")]
    ChecksumMismatch(String),
    /// A tus request without `Tus-Resumable: 1.0.0` (412).
    #[error("this server speaks tus 1.0.0: send Tus-Resumable: 1.0.0")]
    TusVersion,
}

/// Seconds a client should wait before retrying a 503.
const RETRY_AFTER_SECONDS: &str = "5";

#[derive(Serialize)]
struct ErrorBody<'a> {
    message: &'a str,
}

impl ApiError {
    /// A response with the status and headers (`WWW-Authenticate`, `Retry-After`, `Allow`,
    /// `Cache-Control`) this error answers with, but no body: for an HTML page that shows the
    /// error to a browser (the JSON body's content type and length are left out).
    pub(crate) fn page_builder(&self) -> actix_web::HttpResponseBuilder {
        let json = self.error_response();
        let mut builder = HttpResponse::build(json.status());
        for (name, value) in json.headers() {
            if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
                builder.append_header((name.clone(), value.clone()));
            }
        }
        builder
    }
}

/// Whether an answer with `status` is the service's failure, logged at ERROR: a 5xx, except
/// 501, which answers a client asking for a method a path does not offer.
pub(crate) fn is_service_failure(status: StatusCode) -> bool {
    status.is_server_error() && status != StatusCode::NOT_IMPLEMENTED
}

#[derive(Serialize)]
struct OAuthErrorBody<'a> {
    error: &'a str,
    error_description: &'a str,
    message: &'a str,
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::AuthenticationRequired | Self::InvalidToken => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) | Self::LinkRefused(_) => StatusCode::FORBIDDEN,
            Self::ApiMethodNotFound | Self::NotFound | Self::Missing(_) => StatusCode::NOT_FOUND,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            Self::MethodNotImplemented { .. } | Self::NotImplemented(_) => {
                StatusCode::NOT_IMPLEMENTED
            }
            Self::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::OAuth { code, .. } => match code {
                OAuthErrorCode::InvalidClient => StatusCode::UNAUTHORIZED,
                OAuthErrorCode::TemporarilyUnavailable => StatusCode::SERVICE_UNAVAILABLE,
                OAuthErrorCode::ServerError => StatusCode::INTERNAL_SERVER_ERROR,
                _ => StatusCode::BAD_REQUEST,
            },
            Self::DatabaseUnavailable | Self::IdentityProviderUnavailable | Self::Overloaded => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            Self::StorageUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            Self::InsufficientStorage | Self::DatabaseFull => StatusCode::INSUFFICIENT_STORAGE,
            Self::Gone(_) => StatusCode::GONE,
            Self::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::ChecksumMismatch(_) => {
                StatusCode::from_u16(460).unwrap_or(StatusCode::BAD_REQUEST)
            }
            Self::TusVersion => StatusCode::PRECONDITION_FAILED,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let mut builder = HttpResponse::build(self.status_code());
        match self {
            Self::MethodNotImplemented { allow } => {
                builder.insert_header((header::ALLOW, *allow));
            }
            Self::DatabaseUnavailable
            | Self::IdentityProviderUnavailable
            | Self::StorageUnavailable => {
                builder.insert_header((header::RETRY_AFTER, RETRY_AFTER_SECONDS));
            }
            Self::TusVersion => {
                builder.insert_header(("Tus-Version", "1.0.0"));
            }
            Self::Overloaded => {
                // Work in flight ends within milliseconds: come back soon.
                builder.insert_header((header::RETRY_AFTER, "1"));
            }
            Self::AuthenticationRequired => {
                builder.insert_header((header::WWW_AUTHENTICATE, "Bearer"));
            }
            Self::PayloadTooLarge { .. } | Self::RequestTimeout => {
                // The rest of the body is never read: tell the client not to reuse the
                // connection (RFC 9110 §15.5.14) rather than let it fail on the next request.
                builder.force_close();
            }
            Self::InvalidToken => {
                builder
                    .insert_header((header::WWW_AUTHENTICATE, r#"Bearer error="invalid_token""#));
            }
            Self::TooManyRequests { retry_after } => {
                builder.insert_header((header::RETRY_AFTER, retry_after.to_string()));
            }
            Self::OAuth { code, description } => {
                if *code == OAuthErrorCode::InvalidClient {
                    builder.insert_header((header::WWW_AUTHENTICATE, r#"Basic realm="medialib""#));
                }
                if *code == OAuthErrorCode::TemporarilyUnavailable {
                    builder.insert_header((header::RETRY_AFTER, RETRY_AFTER_SECONDS));
                }
                return builder
                    .insert_header((header::CACHE_CONTROL, "no-store"))
                    .insert_header((header::PRAGMA, "no-cache"))
                    .json(OAuthErrorBody {
                        error: code.as_str(),
                        error_description: description,
                        message: description,
                    });
            }
            _ => {}
        }
        let message = self.to_string();
        // A 500 body names only the request id (added by the request-span middleware).
        builder
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .json(ErrorBody { message: &message })
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Unavailable(reason) => {
                // A read on the async worker that found no idle connection is run again on
                // the blocking pool (`blocking::run_read`): nothing was unavailable, and under
                // load this warning would otherwise be logged for every such read.
                if !no_wait::refused() {
                    tracing::warn!(%reason, "storage unavailable");
                }
                Self::DatabaseUnavailable
            }
            StoreError::Full => Self::DatabaseFull,
            StoreError::Corrupt(reason) | StoreError::Unexpected(reason) => {
                tracing::error!(%reason, "storage failure");
                Self::Internal
            }
        }
    }
}

impl ApiError {
    /// A token, revocation or introspection failure (RFC 6749 §5.2); a storage failure's
    /// own words stay in the log.
    fn oauth(e: &impl OAuthFailure) -> Self {
        let description = match e.store_failure() {
            Some(s) => {
                // Not when the read is to be run again on the blocking pool (above).
                if !no_wait::refused() {
                    tracing::warn!(reason = %s, "token endpoint storage failure");
                }
                "the service cannot answer now; try again later".to_owned()
            }
            None => e.to_string(),
        };
        Self::OAuth {
            code: e.error_code(),
            description,
        }
    }
}

impl From<ClientAuthFailed> for ApiError {
    fn from(e: ClientAuthFailed) -> Self {
        Self::oauth(&e)
    }
}

impl From<CodeGrantFailed> for ApiError {
    fn from(e: CodeGrantFailed) -> Self {
        Self::oauth(&e)
    }
}

impl From<RefreshGrantFailed> for ApiError {
    fn from(e: RefreshGrantFailed) -> Self {
        Self::oauth(&e)
    }
}

impl From<SignInError> for ApiError {
    fn from(e: SignInError) -> Self {
        match e {
            SignInError::InvalidCredentials => Self::AuthenticationRequired,
            SignInError::SlowDown(wait) => Self::TooManyRequests {
                retry_after: wait.seconds(),
            },
            SignInError::Unsupported => {
                Self::NotImplemented("this sign-in method is not enabled".into())
            }
            SignInError::Unavailable(why) => {
                tracing::warn!(%why, "identity provider unavailable");
                Self::IdentityProviderUnavailable
            }
            SignInError::Store(s) => s.into(),
        }
    }
}

impl From<Refusal> for ApiError {
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::ReadOnly | Refusal::NotSelf | Refusal::Forbidden(_) => {
                Self::Forbidden(r.to_string())
            }
            // Exactly what an unknown object answers (no existence oracle).
            Refusal::Hidden => Self::Missing("object not found".into()),
        }
    }
}

impl From<BearerError> for ApiError {
    fn from(e: BearerError) -> Self {
        match e {
            BearerError::Unknown | BearerError::Invalid(_) => Self::InvalidToken,
            BearerError::Store(s) => s.into(),
        }
    }
}

impl From<CreateUserError> for ApiError {
    fn from(e: CreateUserError) -> Self {
        match e {
            CreateUserError::UniqueIdTaken => Self::Conflict(e.to_string()),
            CreateUserError::Store(s) => s.into(),
        }
    }
}

fn not_in_collection() -> ApiError {
    ApiError::Missing("object not found in this collection".into())
}

impl From<DescribeFailed> for ApiError {
    fn from(e: DescribeFailed) -> Self {
        match e {
            DescribeFailed::NotFound => not_in_collection(),
            DescribeFailed::Refused(DescribeRefused::AuthenticationRequired) => {
                Self::AuthenticationRequired
            }
            DescribeFailed::Refused(DescribeRefused::Forbidden) => {
                Self::Forbidden("the caller has no access to this object".into())
            }
            DescribeFailed::Store(s) => s.into(),
        }
    }
}

impl From<CreateObjectFailed> for ApiError {
    fn from(e: CreateObjectFailed) -> Self {
        match e {
            CreateObjectFailed::LibraryMustBeCatalog | CreateObjectFailed::NotACollection => {
                Self::BadRequest(e.to_string())
            }
            CreateObjectFailed::CollectionNotFound => Self::Missing(e.to_string()),
            CreateObjectFailed::Refused(r) => r.into(),
            CreateObjectFailed::Store(s) => s.into(),
        }
    }
}

impl From<UpdateObjectFailed> for ApiError {
    fn from(e: UpdateObjectFailed) -> Self {
        match e {
            UpdateObjectFailed::NotFound => not_in_collection(),
            UpdateObjectFailed::Refused(r) => r.into(),
            UpdateObjectFailed::Rule(r @ UpdateError::TypeChange { .. }) => {
                Self::Conflict(r.to_string())
            }
            UpdateObjectFailed::Rule(r @ UpdateError::Properties(_)) => {
                Self::BadRequest(r.to_string())
            }
            UpdateObjectFailed::Store(s) => s.into(),
        }
    }
}

impl From<AddMemberFailed> for ApiError {
    fn from(e: AddMemberFailed) -> Self {
        match e {
            AddMemberFailed::CollectionNotFound | AddMemberFailed::MemberNotFound => {
                Self::Missing(e.to_string())
            }
            AddMemberFailed::Refused(r) => r.into(),
            AddMemberFailed::Rule(MembershipError::NotACollection) => {
                Self::BadRequest(e.to_string())
            }
            AddMemberFailed::Rule(MembershipError::Cycle) => Self::Conflict(e.to_string()),
            AddMemberFailed::Store(s) => s.into(),
        }
    }
}

impl From<MembershipChangeFailed> for ApiError {
    fn from(e: MembershipChangeFailed) -> Self {
        match e {
            MembershipChangeFailed::NotFound => not_in_collection(),
            MembershipChangeFailed::NotACollection => Self::BadRequest(e.to_string()),
            MembershipChangeFailed::Refused(r) => r.into(),
            MembershipChangeFailed::Store(s) => s.into(),
        }
    }
}

/// Permission GET/PUT/POST/DELETE failures: 404 for what is missing, 400 for a target that
/// is not a collection, 409 for the last admin.
macro_rules! permission_failures {
    ($($failed:ident { $($missing:ident),* } $(last_admin: $last:ident)?;)*) => {$(
        impl From<$failed> for ApiError {
            fn from(e: $failed) -> Self {
                match e {
                    $($failed::$missing)|* => Self::Missing(e.to_string()),
                    $failed::NotACollection => Self::BadRequest(e.to_string()),
                    $($failed::$last(_) => Self::Conflict(e.to_string()),)?
                    $failed::Refused(r) => r.into(),
                    $failed::Store(s) => s.into(),
                }
            }
        }
    )*};
}
permission_failures! {
    ListPermissionsFailed { CollectionNotFound };
    GrantPermissionFailed { CollectionNotFound, UserNotFound } last_admin: LastAdmin;
    RevokePermissionFailed { CollectionNotFound, UserNotFound, NoEntry } last_admin: LastAdmin;
}

impl From<ReadUserFailed> for ApiError {
    fn from(e: ReadUserFailed) -> Self {
        match e {
            ReadUserFailed::CollectionNotFound | ReadUserFailed::NotFound => {
                Self::Missing(e.to_string())
            }
            ReadUserFailed::NotACollection => Self::BadRequest(e.to_string()),
            ReadUserFailed::Store(s) => s.into(),
        }
    }
}

impl From<UpdateUserFailed> for ApiError {
    fn from(e: UpdateUserFailed) -> Self {
        match e {
            UpdateUserFailed::CollectionNotFound | UpdateUserFailed::UserNotFound => {
                Self::Missing(e.to_string())
            }
            UpdateUserFailed::NotACollection => Self::BadRequest(e.to_string()),
            UpdateUserFailed::Refused(r) => r.into(),
            UpdateUserFailed::UniqueIdFixed => Self::Conflict(e.to_string()),
            UpdateUserFailed::Store(s) => s.into(),
        }
    }
}

impl From<AddUserFailed> for ApiError {
    fn from(e: AddUserFailed) -> Self {
        match e {
            AddUserFailed::CollectionNotFound => Self::Missing(e.to_string()),
            AddUserFailed::NotACollection => Self::BadRequest(e.to_string()),
            AddUserFailed::Refused(r) => r.into(),
            AddUserFailed::Store(s) => s.into(),
        }
    }
}

impl From<InfoFailed> for ApiError {
    fn from(e: InfoFailed) -> Self {
        match e {
            InfoFailed::NotFound => not_in_collection(),
            InfoFailed::Forbidden => Self::Forbidden(e.to_string()),
            InfoFailed::Store(s) => s.into(),
        }
    }
}

impl From<ContributeFailed> for ApiError {
    fn from(e: ContributeFailed) -> Self {
        match e {
            ContributeFailed::NotFound => Self::Missing(e.to_string()),
            ContributeFailed::Store(s) => s.into(),
        }
    }
}

impl From<medialib_ports::services::catalog::SubCatalogFailed> for ApiError {
    fn from(e: medialib_ports::services::catalog::SubCatalogFailed) -> Self {
        use medialib_ports::services::catalog::SubCatalogFailed as F;
        match e {
            F::NotFound => not_in_collection(),
            F::NotACollection => Self::BadRequest(e.to_string()),
            F::Refused(r) => r.into(),
            F::Store(s) => s.into(),
        }
    }
}

impl From<medialib_ports::services::catalog::ViewObjectFailed> for ApiError {
    fn from(e: medialib_ports::services::catalog::ViewObjectFailed) -> Self {
        use medialib_ports::services::catalog::ViewObjectFailed as F;
        match e {
            F::NotFound => not_in_collection(),
            F::Refused(r) => r.into(),
            F::Store(s) => s.into(),
        }
    }
}

impl From<medialib_ports::services::catalog::VideoFailed> for ApiError {
    fn from(e: medialib_ports::services::catalog::VideoFailed) -> Self {
        use medialib_ports::services::catalog::VideoFailed as F;
        match e {
            F::NotFound => not_in_collection(),
            F::Refused(r) => r.into(),
            F::NotPlayable(_) => Self::BadRequest(e.to_string()),
            F::Store(s) => s.into(),
        }
    }
}

impl From<medialib_ports::services::catalog::PermLinkFailed> for ApiError {
    fn from(e: medialib_ports::services::catalog::PermLinkFailed) -> Self {
        use medialib_ports::services::catalog::PermLinkFailed as F;
        match e {
            F::NotFound => Self::Missing(e.to_string()),
            F::Store(s) => s.into(),
        }
    }
}

impl From<medialib_ports::services::catalog::PublicObjectFailed> for ApiError {
    fn from(e: medialib_ports::services::catalog::PublicObjectFailed) -> Self {
        use medialib_ports::services::catalog::PublicObjectFailed as F;
        match e {
            F::NotFound => Self::Missing(e.to_string()),
            F::SignInRequired => Self::AuthenticationRequired,
            F::Store(s) => s.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Level, Metadata, Subscriber};

    use super::*;

    /// Counts the warnings and errors logged while it is the default subscriber.
    #[derive(Clone, Default)]
    struct Warnings(Arc<AtomicUsize>);

    impl Subscriber for Warnings {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &Event<'_>) {
            if *event.metadata().level() <= Level::WARN {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    /// The warnings logged by turning an unavailable store into an answer, inside `scope`.
    fn warnings_of(scope: impl FnOnce(&dyn Fn() -> ApiError)) -> usize {
        let warnings = Warnings::default();
        let count = Arc::clone(&warnings.0);
        tracing::subscriber::with_default(warnings, || {
            scope(&|| StoreError::Unavailable("no connection".into()).into());
        });
        count.load(Ordering::SeqCst)
    }

    #[test]
    fn a_read_to_be_run_again_logs_no_storage_warning() {
        // The control: an unavailable store is a warning, outside a no-wait read and inside
        // one that no store has refused (a real failure there).
        assert_eq!(warnings_of(|answer| drop(answer())), 1);
        assert_eq!(
            warnings_of(|answer| {
                let ran = no_wait::without_waiting(|| drop(answer()));
                assert_eq!(ran, no_wait::Inline::Done(()));
            }),
            1
        );
        // Once a store has refused to wait, the read's outcome is dropped and it runs again
        // where it may wait: no warning, and still the same answer.
        assert_eq!(
            warnings_of(|answer| {
                let ran = no_wait::without_waiting(|| {
                    no_wait::refuse();
                    assert!(matches!(answer(), ApiError::DatabaseUnavailable));
                });
                assert_eq!(ran, no_wait::Inline::WouldWait);
            }),
            0
        );
    }

    #[test]
    fn a_501_is_the_clients_doing_not_a_service_failure() {
        assert!(is_service_failure(StatusCode::INTERNAL_SERVER_ERROR));
        assert!(is_service_failure(StatusCode::SERVICE_UNAVAILABLE));
        assert!(!is_service_failure(StatusCode::NOT_IMPLEMENTED));
        assert!(!is_service_failure(StatusCode::NOT_FOUND));
        let unimplemented = ApiError::MethodNotImplemented { allow: "GET" };
        assert!(!is_service_failure(unimplemented.status_code()));
        assert!(is_service_failure(ApiError::Internal.status_code()));
    }

    #[test]
    fn a_page_carries_the_errors_headers_without_its_json_type() {
        let page = ApiError::MethodNotImplemented { allow: "GET, HEAD" }
            .page_builder()
            .finish();
        assert_eq!(page.status(), StatusCode::NOT_IMPLEMENTED);
        assert_eq!(page.headers().get(header::ALLOW).unwrap(), "GET, HEAD");
        assert!(page.headers().get(header::CONTENT_TYPE).is_none());
    }
}
