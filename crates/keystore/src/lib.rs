//! bridgectl-keystore (stub being written).
use std::fmt;

/// A passphrase (stub).
pub struct Passphrase(zeroize::Zeroizing<String>);
impl Passphrase {
    /// Wraps a passphrase.
    pub fn new(s: String) -> Self {
        Self(zeroize::Zeroizing::new(s))
    }
}
/// Why a passphrase is wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Unlock.
    Unlock,
    /// Create.
    Create,
}
/// A passphrase request.
#[derive(Debug)]
pub struct PassphraseRequest<'a> {
    /// Purpose.
    pub purpose: Purpose,
    /// Label.
    pub label: &'a str,
}
impl PassphraseRequest<'_> {
    /// Prompt text.
    pub fn prompt(&self) -> String {
        self.label.to_string()
    }
}
/// Callback.
pub trait PassphraseProvider {
    /// Gets one.
    fn passphrase(&mut self, request: &PassphraseRequest<'_>) -> Result<Passphrase, Error>;
}
/// Errors.
#[derive(Debug)]
pub enum Error {
    /// No passphrase.
    PassphraseUnavailable {
        /// Why.
        reason: String,
    },
}
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "stub")
    }
}
impl std::error::Error for Error {}
