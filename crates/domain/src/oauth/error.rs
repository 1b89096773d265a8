//! RFC 6749 error codes.

use std::fmt;

/// An OAuth 2.0 error code (RFC 6749 §4.1.2.1, §5.2; RFC 7009).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OAuthErrorCode {
    /// Malformed or missing parameter.
    InvalidRequest,
    /// Client authentication failed.
    InvalidClient,
    /// Code or refresh token invalid, expired, revoked, used, or bound elsewhere.
    InvalidGrant,
    /// The client may not use this grant or response type.
    UnauthorizedClient,
    /// The grant type is not supported.
    UnsupportedGrantType,
    /// The scope is unknown or wider than allowed.
    InvalidScope,
    /// The user or server refused.
    AccessDenied,
    /// Only `code` is supported.
    UnsupportedResponseType,
    /// Unexpected condition.
    ServerError,
    /// Overloaded or in maintenance.
    TemporarilyUnavailable,
}

impl OAuthErrorCode {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRequest => "invalid_request",
            Self::InvalidClient => "invalid_client",
            Self::InvalidGrant => "invalid_grant",
            Self::UnauthorizedClient => "unauthorized_client",
            Self::UnsupportedGrantType => "unsupported_grant_type",
            Self::InvalidScope => "invalid_scope",
            Self::AccessDenied => "access_denied",
            Self::UnsupportedResponseType => "unsupported_response_type",
            Self::ServerError => "server_error",
            Self::TemporarilyUnavailable => "temporarily_unavailable",
        }
    }
}

impl fmt::Display for OAuthErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
