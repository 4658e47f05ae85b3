//! Secret-holding types and the passphrase callback.
//!
//! Every secret is a [`Secret`] (a `secrecy` box, wiped on drop, the one type every bridgectl
//! crate uses for secrets) or key bytes in a `secrecy` box of their own, has a `Debug` that
//! prints nothing of it, and no `Display` or `Serialize`: the only way to read one is
//! `expose_secret()`, so a grep finds every read.

use crate::Error;
use crate::key_info::KeyInfo;

pub use bridgectl_secret::Secret;

/// A passphrase: the one secret type of every bridgectl crate (wiped from memory on
/// drop, never printed), named for what it holds here.
pub type Passphrase = Secret;

/// Secret text that is not a passphrase: a hex private key or a BIP-39 mnemonic being
/// imported. The same [`Secret`] type.
pub type SecretText = Secret;

/// 32 bytes of key material (a private key or a derived encryption key): `secrecy`'s box,
/// wiped on drop, redacted in `Debug`.
pub(crate) type SecretBytes = bridgectl_secret::KeyBytes;

/// Why a passphrase is wanted, so the caller can word its prompt (and ask for a
/// confirmation when a new passphrase is being set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// To decrypt a key already in the keystore.
    Unlock,
    /// To encrypt a key being created, imported or re-encrypted (a new passphrase).
    Create,
    /// To decrypt a foreign file being imported (Web3 Secret Storage).
    ImportFile,
    /// To encrypt a file being exported (a new passphrase for that file).
    ExportFile,
}

/// One request for a passphrase, handed to a [`PassphraseProvider`].
#[derive(Debug)]
pub struct PassphraseRequest<'a> {
    /// Why the passphrase is wanted.
    pub purpose: Purpose,
    /// The key concerned, when it is known (it is not yet for a file being imported).
    pub key: Option<&'a KeyInfo>,
}

impl PassphraseRequest<'_> {
    /// A prompt text for people, e.g. `passphrase for key 'ops' (0xAbC…1234)`.
    pub fn prompt(&self) -> String {
        let what = match self.purpose {
            Purpose::Unlock => "passphrase for key",
            Purpose::Create => "new passphrase for key",
            Purpose::ImportFile => "passphrase of the file being imported",
            Purpose::ExportFile => "passphrase for the exported file of key",
        };
        match self.key {
            Some(info) => {
                let addr = info.address.to_checksum(None);
                format!(
                    "{what} '{}' ({}…{})",
                    info.label,
                    &addr[..6],
                    &addr[addr.len() - 4..]
                )
            }
            None => what
                .trim_end_matches(" of key")
                .trim_end_matches(" for key")
                .to_owned(),
        }
    }
}

/// Where the library gets passphrases from. The library never prompts: the CLI (or an
/// embedding wallet) implements this, and tests pass a [`Passphrase`] directly.
pub trait PassphraseProvider {
    /// Returns the passphrase for `request`, or [`Error::PassphraseUnavailable`].
    fn passphrase(&mut self, request: &PassphraseRequest<'_>) -> Result<Passphrase, Error>;
}

/// A passphrase given by value answers every request with itself.
impl PassphraseProvider for Passphrase {
    fn passphrase(&mut self, _request: &PassphraseRequest<'_>) -> Result<Passphrase, Error> {
        Ok(Passphrase::new(self.expose_secret().to_owned()))
    }
}
