//! The OAuth 2.0 authorization server's rules: request validation, redirect
//! matching, PKCE, scopes, and the code / access-token / refresh-token lifecycles
//! as state machines whose transitions consume the old state.

mod authorize;
mod client;
mod credentials;
mod error;
mod exchange;
mod pkce;
mod redirect;
mod scope;
mod tokens;

pub use authorize::{
    AuthorizationRequest, AuthorizationResponse, AuthorizeParams, AuthorizeRejection, ErrorPage,
    Issuer, OAuthState, validate_authorization_request,
};
pub use client::{Client, ClientAuthError, ClientId, ClientKind, ClientName, InvalidClientField};
pub use credentials::{Credentials, InvalidCredentials, is_b64token, parse_authorization};
pub use error::OAuthErrorCode;
pub use exchange::{
    CodeDecision, CodeExchange, CodeFacts, CodeRefusal, Exchange, Redemption, RefreshDecision,
    RefreshExchange, RefreshFacts, RefreshRefusal, RevocationFacts, RevokeDecision, decide_code,
    decide_refresh, decide_revocation,
};
pub use pkce::{CodeChallenge, CodeVerifier, InvalidPkce};
pub use redirect::{InvalidRedirectUri, RedirectUri};
pub use scope::{InvalidScope, Scope, ScopeSet};
pub use tokens::{
    AccessTokenInvalid, AccessTokenRecord, ActiveAccess, AuthenticatedCaller, CodePresentation,
    GrantSpec, IssuedCode, IssuedTokens, MintedToken, NewTokens, RedeemError, RefreshError,
    RefreshPresentation, RefreshTokenRecord, RefreshTokenState, Revocation, Rotation, Spent,
    StoredCode, Successor, TokenLifetimes, TokenRandomness, mint_tokens,
};
