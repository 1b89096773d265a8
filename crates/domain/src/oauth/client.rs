//! Registered OAuth clients and their authentication.

use std::fmt;

use crate::ids::OrgNamespace;
use crate::oauth::redirect::RedirectUri;
use crate::secret::{Secret, TokenDigest};

/// A client identifier: 1..=128 characters of `A-Z a-z 0-9 - . _ ~`.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientId(String);

/// A display name for a client: 1..=200 characters, no control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientName(String);

/// A client field that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidClientField {
    /// Bad client_id.
    #[error("client_id must be 1 to 128 characters of letters, digits, '-', '.', '_' or '~'")]
    Id,
    /// Bad name.
    #[error("a client name must be 1 to 200 characters without control characters")]
    Name,
    /// No redirect URI registered.
    #[error("a client needs at least one redirect URI")]
    NoRedirectUri,
}

impl ClientId {
    /// Mints a client id (a version-5 UUID in the organization's namespace).
    pub fn generate(ns: &OrgNamespace, random: [u8; 16]) -> Self {
        Self(crate::ids::ObjectId::generate(ns, random).to_string())
    }

    /// Parses a presented or stored client id.
    pub fn parse(input: &str) -> Result<Self, InvalidClientField> {
        let ok = (1..=128).contains(&input.len())
            && input
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
        if ok {
            Ok(Self(input.to_owned()))
        } else {
            Err(InvalidClientField::Id)
        }
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ClientId({})", self.0)
    }
}

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl ClientName {
    /// Parses a name.
    pub fn parse(input: &str) -> Result<Self, InvalidClientField> {
        let n = input.chars().count();
        if (1..=200).contains(&n) && !input.chars().any(char::is_control) {
            Ok(Self(input.to_owned()))
        } else {
            Err(InvalidClientField::Name)
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// How a client authenticates at the token endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientKind {
    /// Holds a secret (stored as a digest); PKCE optional.
    Confidential {
        /// SHA-256 of the client secret.
        secret_digest: TokenDigest,
    },
    /// Cannot keep a secret (mobile, single-page apps); PKCE required.
    Public,
}

/// Client authentication failed (`invalid_client`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientAuthError {
    /// A confidential client presented no secret.
    #[error("client authentication required")]
    MissingSecret,
    /// The secret does not match.
    #[error("client authentication failed")]
    WrongSecret,
    /// A public client presented a secret it cannot have.
    #[error("a public client has no secret")]
    UnexpectedSecret,
    /// A public client asked for what only a client with a secret may do (introspection).
    #[error("only a confidential client may introspect tokens")]
    PublicClient,
}

/// A registered client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    id: ClientId,
    name: ClientName,
    redirect_uris: Vec<RedirectUri>,
    kind: ClientKind,
}

impl Client {
    /// Builds a client; it must have at least one redirect URI.
    pub fn new(
        id: ClientId,
        name: ClientName,
        redirect_uris: Vec<RedirectUri>,
        kind: ClientKind,
    ) -> Result<Self, InvalidClientField> {
        if redirect_uris.is_empty() {
            return Err(InvalidClientField::NoRedirectUri);
        }
        Ok(Self {
            id,
            name,
            redirect_uris,
            kind,
        })
    }

    /// Id.
    pub fn id(&self) -> &ClientId {
        &self.id
    }
    /// Name.
    pub fn name(&self) -> &ClientName {
        &self.name
    }
    /// Registered redirect URIs, in registration order.
    pub fn redirect_uris(&self) -> &[RedirectUri] {
        &self.redirect_uris
    }
    /// Confidential or public.
    pub fn kind(&self) -> &ClientKind {
        &self.kind
    }
    /// Whether the client is public (PKCE required).
    pub fn is_public(&self) -> bool {
        matches!(self.kind, ClientKind::Public)
    }

    /// The registered URI that a requested one matches, if any.
    pub fn registered_redirect(&self, requested: &RedirectUri) -> Option<&RedirectUri> {
        self.redirect_uris.iter().find(|r| r.matches(requested))
    }

    /// Authenticates the client at the token endpoint (secret compared in constant time).
    pub fn authenticate(&self, presented: Option<&Secret>) -> Result<(), ClientAuthError> {
        self.kind.authenticate(presented)
    }

    /// Whether the (authenticated) client may introspect tokens: only a confidential one.
    /// RFC 7662 §2.1 asks the endpoint for authorization, and a public client's id, which
    /// anyone can read, is none (DECISIONS.md §5: introspection is client-authenticated).
    pub fn may_introspect(&self) -> Result<(), ClientAuthError> {
        match self.kind {
            ClientKind::Confidential { .. } => Ok(()),
            ClientKind::Public => Err(ClientAuthError::PublicClient),
        }
    }
}

impl ClientKind {
    /// Authenticates a client of this kind with what it presented at the token endpoint
    /// (secret compared in constant time). The one rule behind [`Client::authenticate`], for
    /// callers that read only the client's kind.
    pub fn authenticate(&self, presented: Option<&Secret>) -> Result<(), ClientAuthError> {
        match (self, presented) {
            (ClientKind::Confidential { .. }, None) => Err(ClientAuthError::MissingSecret),
            (ClientKind::Confidential { secret_digest }, Some(s)) => {
                if secret_digest.ct_eq(&TokenDigest::of(s)) {
                    Ok(())
                } else {
                    Err(ClientAuthError::WrongSecret)
                }
            }
            (ClientKind::Public, None) => Ok(()),
            (ClientKind::Public, Some(_)) => Err(ClientAuthError::UnexpectedSecret),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::TokenKind;

    fn client(kind: ClientKind) -> Client {
        Client::new(
            ClientId::parse("lms").unwrap(),
            ClientName::parse("LMS plugin").unwrap(),
            vec![RedirectUri::parse("https://lms.example.edu/cb").unwrap()],
            kind,
        )
        .unwrap()
    }

    #[test]
    fn confidential_clients_need_their_secret() {
        let (secret, digest) = TokenKind::ClientSecret.mint([1; 32]);
        let c = client(ClientKind::Confidential {
            secret_digest: digest,
        });
        assert_eq!(c.authenticate(Some(&secret)), Ok(()));
        assert_eq!(c.authenticate(None), Err(ClientAuthError::MissingSecret));
        assert_eq!(
            c.authenticate(Some(&Secret::new("nope"))),
            Err(ClientAuthError::WrongSecret)
        );
    }

    #[test]
    fn only_confidential_clients_introspect() {
        let (_, digest) = TokenKind::ClientSecret.mint([2; 32]);
        let confidential = client(ClientKind::Confidential {
            secret_digest: digest,
        });
        assert_eq!(confidential.may_introspect(), Ok(()));
        assert_eq!(
            client(ClientKind::Public).may_introspect(),
            Err(ClientAuthError::PublicClient)
        );
    }

    #[test]
    fn public_clients_present_no_secret() {
        let c = client(ClientKind::Public);
        assert!(c.is_public());
        assert_eq!(c.authenticate(None), Ok(()));
        assert_eq!(
            c.authenticate(Some(&Secret::new("x"))),
            Err(ClientAuthError::UnexpectedSecret)
        );
    }

    #[test]
    fn field_rules() {
        assert!(ClientId::parse("").is_err());
        assert!(ClientId::parse("a b").is_err());
        assert!(ClientId::parse(&"a".repeat(129)).is_err());
        assert!(ClientName::parse("").is_err());
        assert!(ClientName::parse("x\ny").is_err());
        assert_eq!(
            Client::new(
                ClientId::parse("a").unwrap(),
                ClientName::parse("A").unwrap(),
                vec![],
                ClientKind::Public
            ),
            Err(InvalidClientField::NoRedirectUri)
        );
        let ns = OrgNamespace::from_random([1; 16]);
        assert_eq!(ClientId::generate(&ns, [2; 16]).as_str().len(), 36);
    }
}
