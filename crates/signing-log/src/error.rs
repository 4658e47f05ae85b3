//! The signing log's error type. A refusal (the log does not hold, does not reach its
//! checkpoint, or holds a stranger's entry) says why its totals cannot be trusted and
//! what a person does about it; the rest are failures to read or write the files.

use std::path::PathBuf;

/// Everything that can go wrong opening, reading, checking or appending to the log.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The signing log could not be opened, read or written: its SQLite file, or the
    /// PostgreSQL database several hosts share (unreachable, or its connection lost:
    /// [`Error::is_unavailable`]; nothing of the failed operation was acted on).
    #[error("signing log {log}")]
    Store {
        /// Where the log is (a file, or a URL with any password left out).
        log: String,
        /// What the store said.
        #[source]
        source: bridgectl_store::Error,
    },

    /// A file beside the log (its kept checkpoint) could not be read or written, or the
    /// log's mode could not be set.
    #[error(transparent)]
    Io(#[from] bridgectl_local::PathError),

    /// The signing log does not hold (an entry altered, removed, reordered or forged),
    /// so its totals cannot be trusted for a spending limit: what
    /// [`crate::SigningLogDb::verify`] returns for a log that does not hold, and why a
    /// signature that would count against its totals is refused.
    #[error("signing log {log} does not hold: {bad}; its totals cannot be trusted")]
    Broken {
        /// Where the log is.
        log: String,
        /// The first entry that does not hold.
        bad: bridgectl_tx::signing_log::BadEntry,
    },

    /// The signing log does not reach the checkpoint kept beside it: it was deleted,
    /// truncated or restored from an older copy, so the totals of its spending limits
    /// cannot be trusted.
    #[error(
        "signing log {log} does not reach its checkpoint {kept} (kept in {}): it has \
         {found} entries; it was deleted, truncated or restored from an older copy, so the \
         spending limits it holds cannot be trusted; acknowledge the log as it stands once \
         you know why",
        checkpoint.display()
    )]
    RolledBack {
        /// Where the log is.
        log: String,
        /// The file this host keeps its checkpoint in.
        checkpoint: PathBuf,
        /// The checkpoint kept beside it.
        kept: bridgectl_tx::Checkpoint,
        /// How many entries the log has.
        found: u64,
    },

    /// An entry of the signing log was signed by a key that is not in the keystore:
    /// appended by someone else, or made by a key removed since. Limits are not read
    /// past it until a person acknowledges the log.
    #[error(
        "signing log {log}: entry {seq} is signed by {key}, which is not a key of this \
         keystore (appended by someone else, or a key removed since); refusing to sign \
         against the log until it is acknowledged"
    )]
    Foreign {
        /// Where the log is.
        log: String,
        /// The entry.
        seq: u64,
        /// Its key.
        key: alloy_primitives::Address,
    },

    /// An acknowledgement could not be made: its entry could not be signed, or another
    /// signature was appended while it was made.
    #[error("the acknowledgement of signing log {log}: {reason}")]
    Acknowledgement {
        /// Where the log is.
        log: String,
        /// What went wrong.
        reason: String,
    },

    /// A log not copied into another store ([`crate::SigningLogDb::copy_into`]): the
    /// target holds entries of its own, another history of the keys named.
    #[error(
        "signing log {log} holds entries of its own (by {}): a log is copied into an empty \
         one, or one that holds its first entries only (a copy made before); a key's \
         history joins another log by an export of its history and an import there",
        keys.join(", ")
    )]
    Conflict {
        /// The target.
        log: String,
        /// The keys of its entries that are not this log's.
        keys: Vec<String>,
    },

    /// A signing history (`bridgectl log import`'s file) that is not taken in: of
    /// another format version, or with an entry that does not hold or is not its key's.
    #[error("the signing history is refused: {reason}")]
    History {
        /// Why.
        reason: String,
    },

    /// The signing log's kept checkpoint file cannot be read (both of its slots
    /// spoiled, or not a checkpoint at all): a rollback of the log cannot be ruled out,
    /// and the watermarks and spending it kept are not known. Acknowledging the log
    /// ([`crate::SigningLogDb::plan_acknowledgement`]) rebuilds it from the log's
    /// entries, and from a chain's nonce count where one is asked.
    #[error(
        "signing log checkpoint {}: {reason}; a rollback of the log cannot be ruled out \
         without it, so nothing is signed against the log until it is acknowledged, which \
         rebuilds the checkpoint from the log's entries (and, online, the chains' nonce \
         counts)",
        path.display()
    )]
    Checkpoint {
        /// The checkpoint file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

impl Error {
    /// Whether the log's store is unavailable (a PostgreSQL server not reached, or its
    /// connection lost): nothing of the failed operation was acted on, and a retry later
    /// may succeed.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Error::Store { source, .. } if source.is_unavailable())
    }
}

/// A store error inside the log's own code, named by [`crate::SigningLogDb`] on its way
/// out (the store does not know which log it is).
impl From<bridgectl_store::Error> for Error {
    fn from(source: bridgectl_store::Error) -> Error {
        Error::Store {
            log: String::new(),
            source,
        }
    }
}
