//! Byte-level entry points for the fuzz targets (`fuzz/`) and their replay on stable
//! (`crates/fuzzing`). Behind the `fuzzing` feature; nothing here changes a default, a
//! cap or a check: files are parsed by the same `parse_any` the keystore
//! uses, and re-encryption uses the parsed file's own KDF cost.

use std::path::Path;

use alloy_signer_local::PrivateKeySigner;

use crate::Error;
use crate::format;
use crate::secret::Passphrase;
use crate::store::{AnyFile, parse_any};

const PATH: &str = "<fuzz input>";

/// The KDF work a parsed file asks for (the keystore's own type, under its fuzzing name).
pub use crate::kdf::KdfCost as Cost;

/// A key file of either kind, parsed and checked, not decrypted.
pub struct ParsedKeyFile(AnyFile);

/// Parses key-file bytes exactly as the keystore and `key import` do.
pub fn parse(bytes: &[u8]) -> Result<ParsedKeyFile, Error> {
    parse_any(Path::new(PATH), bytes).map(ParsedKeyFile)
}

impl ParsedKeyFile {
    /// The KDF work the file asks for.
    pub fn cost(&self) -> Cost {
        match &self.0 {
            AnyFile::V1(p) => Cost::Argon2id {
                m_kib: p.kdf.m_kib(),
                t: p.kdf.t(),
                p: p.kdf.p(),
            },
            AnyFile::Web3(p) => p.kdf_cost(),
        }
    }

    /// Derives and decrypts, with every check the keystore makes.
    pub fn decrypt(&self, passphrase: &Passphrase) -> Result<PrivateKeySigner, Error> {
        let path = Path::new(PATH);
        match &self.0 {
            AnyFile::V1(p) => p.decrypt(path, passphrase),
            AnyFile::Web3(p) => p.decrypt(path, passphrase),
        }
    }

    /// Encrypts `signer` into a new file of the same kind, metadata and KDF cost, with a
    /// fresh salt and nonce; `None` for PBKDF2 files, which bridgectl never writes.
    pub fn reencrypt(
        &self,
        signer: &PrivateKeySigner,
        passphrase: &Passphrase,
    ) -> Result<Option<Vec<u8>>, Error> {
        match &self.0 {
            AnyFile::V1(p) => format::encrypt(&p.meta, signer, passphrase, &p.kdf).map(Some),
            AnyFile::Web3(p) => Ok(p.reencrypt(signer, passphrase)?.map(String::into_bytes)),
        }
    }
}
