//! Scopes: `read` and `write`.

use std::fmt;

/// One scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Read calls (GET).
    Read,
    /// Write calls (PUT, POST, DELETE).
    Write,
}

/// A scope string with an unknown or empty entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("scope must be a space-separated list of read and write")]
pub struct InvalidScope;

/// A non-empty set of scopes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ScopeSet {
    read: bool,
    write: bool,
}

impl ScopeSet {
    /// `read write`: what a request that names no scope gets.
    pub const DEFAULT: ScopeSet = ScopeSet {
        read: true,
        write: true,
    };

    /// Parses a space-separated scope parameter (RFC 6749 §3.3); repeats are fine, empty is not.
    pub fn parse(input: &str) -> Result<Self, InvalidScope> {
        let mut set = ScopeSet {
            read: false,
            write: false,
        };
        for word in input.split(' ') {
            match word {
                "read" => set.read = true,
                "write" => set.write = true,
                _ => return Err(InvalidScope),
            }
        }
        Ok(set)
    }

    /// The requested scope, or the default when none is named.
    pub fn parse_or_default(input: Option<&str>) -> Result<Self, InvalidScope> {
        input.map_or(Ok(Self::DEFAULT), Self::parse)
    }

    /// Whether the set holds `scope`.
    pub fn contains(self, scope: Scope) -> bool {
        match scope {
            Scope::Read => self.read,
            Scope::Write => self.write,
        }
    }

    /// Whether every scope of `self` is in `other`.
    pub fn is_subset_of(self, other: ScopeSet) -> bool {
        (!self.read || other.read) && (!self.write || other.write)
    }
}

impl fmt::Display for ScopeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.read, self.write) {
            (true, true) => f.write_str("read write"),
            (true, false) => f.write_str("read"),
            (false, true) => f.write_str("write"),
            (false, false) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        assert_eq!(ScopeSet::parse("read write").unwrap(), ScopeSet::DEFAULT);
        assert_eq!(
            ScopeSet::parse("write read").unwrap().to_string(),
            "read write"
        );
        let r = ScopeSet::parse("read").unwrap();
        assert!(r.contains(Scope::Read) && !r.contains(Scope::Write));
        assert_eq!(r.to_string(), "read");
        assert_eq!(ScopeSet::parse("read read").unwrap(), r);
        for bad in ["", " ", "read  write", "admin", "READ", "read,write"] {
            assert!(ScopeSet::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(ScopeSet::parse_or_default(None).unwrap(), ScopeSet::DEFAULT);
    }

    #[test]
    fn subsets() {
        let r = ScopeSet::parse("read").unwrap();
        assert!(r.is_subset_of(ScopeSet::DEFAULT));
        assert!(!ScopeSet::DEFAULT.is_subset_of(r));
    }
}
