//! The keystore's error type. Messages are lowercase, name the file or key concerned,
//! and never contain secret material.

use std::path::PathBuf;

/// Everything that can go wrong reading, writing or unlocking a key.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No passphrase could be obtained (no terminal, unreadable file, user aborted).
    #[error("no passphrase: {reason}")]
    PassphraseUnavailable {
        /// Why, for the user.
        reason: String,
    },

    /// Decryption failed: the passphrase is wrong, or the file was modified after it was
    /// written (the authentication tag covers the metadata too, so the two cannot be told
    /// apart without the right passphrase).
    #[error(
        "wrong passphrase, or {} was modified after it was written",
        path.display()
    )]
    WrongPassphrase {
        /// The key file.
        path: PathBuf,
        /// The marker a caller finds by walking `source()` from any error that wraps
        /// this one (`bridgectl_secret::is_wrong_secret`).
        #[source]
        source: bridgectl_secret::WrongSecret,
    },

    /// The file asks for more KDF work than the documented cap. Refused before any
    /// derivation, so a hostile file cannot exhaust memory or time.
    #[error("refusing {}: excessive kdf work: {found} exceeds the cap {cap}", path.display())]
    ExcessiveWork {
        /// The file.
        path: PathBuf,
        /// The offending parameters.
        found: String,
        /// The cap they exceed.
        cap: String,
    },

    /// KDF parameters for a new file are weaker than the minimum, or outside what the
    /// algorithm accepts.
    #[error("kdf parameters {found} refused: {reason}")]
    WeakKdf {
        /// The parameters asked for.
        found: String,
        /// The rule they break.
        reason: String,
    },

    /// No key matches the selector.
    #[error("no key matches '{selector}' in {}", dir.display())]
    NotFound {
        /// The address, label or id asked for.
        selector: String,
        /// The keystore directory searched.
        dir: PathBuf,
    },

    /// More than one key matches the selector.
    #[error("'{selector}' matches more than one key ({}); use the address or id", matches.join(", "))]
    Ambiguous {
        /// The address, label or id asked for.
        selector: String,
        /// The labels and addresses that match.
        matches: Vec<String>,
    },

    /// A key with this label or address is already in the keystore. Key files are never
    /// overwritten.
    #[error("a key {what} already exists in the keystore: {}", path.display())]
    AlreadyExists {
        /// What collides, e.g. `labelled 'ops'` or `with address 0x…`.
        what: String,
        /// The existing file.
        path: PathBuf,
    },

    /// The file or directory is readable or writable by group or others (as ssh, we
    /// refuse to use it).
    #[error(
        "permissions {mode:04o} for {} are too open: it must not be accessible by group or others; fix with: {fix}",
        path.display()
    )]
    InsecurePermissions {
        /// The file or directory.
        path: PathBuf,
        /// Its mode bits.
        mode: u32,
        /// The command that fixes it.
        fix: String,
    },

    /// The file is not a key file we can read: bad JSON, missing or malformed fields,
    /// truncated, not a regular file.
    #[error("{} is not a valid key file: {reason}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the field.
        reason: String,
    },

    /// The file's JSON could not be parsed.
    #[error("{} is not a valid key file", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The parser's error (positions and key names only, no values).
        #[source]
        source: bridgectl_json::Error,
    },

    /// The file's format version is not one this build reads.
    #[error("{} has format version {found}, which this build does not read (supported: {supported})", path.display())]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// The version found.
        found: String,
        /// The versions this build reads.
        supported: String,
    },

    /// The file names an algorithm (KDF, cipher, PRF) this build does not implement.
    #[error("{} uses {what}, which is not supported (expected {expected})", path.display())]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// The algorithm found.
        what: String,
        /// What is supported.
        expected: String,
    },

    /// After decryption, the key's address differs from the one stored in the file.
    #[error("{} decrypts to address {derived} but says {stored}: refusing it", path.display())]
    AddressMismatch {
        /// The file.
        path: PathBuf,
        /// The address written in the file.
        stored: String,
        /// The address of the decrypted key.
        derived: String,
    },

    /// The secret given to import is not a valid private key (bad hex, wrong length,
    /// zero or above the curve order).
    #[error("invalid private key: {reason}")]
    InvalidKey {
        /// What is wrong (never the key itself).
        reason: String,
    },

    /// A label that cannot be used (it names the file, so it is restricted).
    #[error("invalid label '{label}': {reason}")]
    InvalidLabel {
        /// The label.
        label: String,
        /// The rule it breaks.
        reason: String,
    },

    /// The mnemonic or derivation path was refused.
    #[error("cannot derive a key from the mnemonic: {reason}")]
    Mnemonic {
        /// What is wrong (never the phrase).
        reason: String,
    },

    /// The written file did not read back and decrypt to the same key; nothing was
    /// replaced.
    #[error("write check failed for {}: {reason}; the keystore was not changed", path.display())]
    WriteCheck {
        /// The temporary file that failed the check.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },

    /// An I/O error on a path.
    #[error(transparent)]
    Io(#[from] bridgectl_local::PathError),

    /// A KDF or cipher failed for a reason other than the passphrase (out of memory,
    /// invalid parameters that passed our checks).
    #[error("{} : key derivation failed: {reason}", path.display())]
    Crypto {
        /// The file.
        path: PathBuf,
        /// The library's reason.
        reason: String,
    },
}

impl Error {
    pub(crate) fn malformed(path: impl Into<PathBuf>, reason: impl Into<String>) -> Error {
        Error::Malformed {
            path: path.into(),
            reason: reason.into(),
        }
    }

    /// Whether the passphrase was wrong (or the file was modified): asking again may
    /// help, nothing else will.
    pub fn is_wrong_passphrase(&self) -> bool {
        matches!(self, Error::WrongPassphrase { .. })
    }

    /// A short, stable name of the variant (`"wrong_passphrase"`, `"excessive_work"`,
    /// …), for JSON output and for fixture manifests.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::PassphraseUnavailable { .. } => "passphrase_unavailable",
            Error::WrongPassphrase { .. } => "wrong_passphrase",
            Error::ExcessiveWork { .. } => "excessive_work",
            Error::WeakKdf { .. } => "weak_kdf",
            Error::NotFound { .. } => "not_found",
            Error::Ambiguous { .. } => "ambiguous",
            Error::AlreadyExists { .. } => "already_exists",
            Error::InsecurePermissions { .. } => "insecure_permissions",
            Error::Malformed { .. } | Error::Json { .. } => "malformed",
            Error::UnsupportedVersion { .. } => "unsupported_version",
            Error::Unsupported { .. } => "unsupported",
            Error::AddressMismatch { .. } => "address_mismatch",
            Error::InvalidKey { .. } => "invalid_key",
            Error::InvalidLabel { .. } => "invalid_label",
            Error::Mnemonic { .. } => "mnemonic",
            Error::WriteCheck { .. } => "write_check",
            Error::Io(_) => "io",
            Error::Crypto { .. } => "crypto",
        }
    }
}
