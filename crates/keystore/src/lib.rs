#![doc = include_str!("../README.md")]
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod error;
mod files;
mod format;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod kdf;
mod key_info;
mod secret;
mod secret_storage;
mod store;

use std::path::Path;

use alloy_signer_local::PrivateKeySigner;

pub use error::Error;
pub use files::check_private_file;
pub use format::{CURRENT_VERSION, FORMAT_NAME, READABLE_VERSIONS};
pub use kdf::{KdfCost, KdfParams, MAX_M_KIB, MAX_P, MAX_T, MIN_M_KIB, MIN_T};
pub use key_info::{KdfSummary, KeyInfo};
pub use secret::{Passphrase, PassphraseProvider, PassphraseRequest, Purpose, Secret, SecretText};
pub use secret_storage::{MAX_PBKDF2_C, MAX_SCRYPT_BYTES, MAX_SCRYPT_P, Web3Params};
pub use store::{
    DEFAULT_DERIVATION_PATH, EXTERNAL_SIGNERS_FILE, KEY_EXTENSION, Keystore, signer_from_mnemonic,
    unlock_file,
};

/// Turns decrypted key bytes (at most 32, left-padded) into a signer, or says the file
/// holds no valid secp256k1 key.
pub(crate) fn signer_from_secret(path: &Path, secret: &[u8]) -> Result<PrivateKeySigner, Error> {
    PrivateKeySigner::from_slice(secret).map_err(|_| {
        Error::malformed(
            path,
            "the decrypted key is not a valid secp256k1 private key",
        )
    })
}
