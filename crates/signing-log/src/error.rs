//! The signing log's error type. A refusal (the log does not hold, does not reach its
//! checkpoint, or holds a stranger's entry) says why its totals cannot be trusted and
//! what a person does about it; the rest are failures to read or write the files.

use std::path::PathBuf;

/// Everything that can go wrong opening, reading, checking or appending to the log.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The signing log file could not be opened, read or written.
    #[error("signing log {}", path.display())]
    Sql {
        /// The log file.
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },

    /// A file beside the log (its kept checkpoint) could not be read or written, or the
    /// log's mode could not be set.
    #[error(transparent)]
    Io(#[from] bridgectl_local::PathError),

    /// The signing log does not hold (an entry altered, removed, reordered or forged),
    /// so its totals cannot be trusted for a spending limit: what
    /// [`crate::SigningLogDb::verify`] returns for a log that does not hold, and why a
    /// signature that would count against its totals is refused.
    #[error("signing log {} does not hold: {bad}; its totals cannot be trusted", path.display())]
    Broken {
        /// The log file.
        path: PathBuf,
        /// The first entry that does not hold.
        bad: bridgectl_tx::signing_log::BadEntry,
    },

    /// The signing log does not reach the checkpoint kept beside it: it was deleted,
    /// truncated or restored from an older copy, so the totals of its spending limits
    /// cannot be trusted.
    #[error(
        "signing log {} does not reach its checkpoint {kept} (kept in {}.checkpoint): it has \
         {found} entries; it was deleted, truncated or restored from an older copy, so the \
         spending limits it holds cannot be trusted; acknowledge the log as it stands once \
         you know why",
        path.display(),
        path.display()
    )]
    RolledBack {
        /// The log file (its checkpoint is kept beside it, with `.checkpoint` added).
        path: PathBuf,
        /// The checkpoint kept beside it.
        kept: bridgectl_tx::Checkpoint,
        /// How many entries the log has.
        found: u64,
    },

    /// An entry of the signing log was signed by a key that is not in the keystore:
    /// appended by someone else, or made by a key removed since. Limits are not read
    /// past it until a person acknowledges the log.
    #[error(
        "signing log {}: entry {seq} is signed by {key}, which is not a key of this \
         keystore (appended by someone else, or a key removed since); refusing to sign \
         against the log until it is acknowledged",
        path.display()
    )]
    Foreign {
        /// The log file.
        path: PathBuf,
        /// The entry.
        seq: u64,
        /// Its key.
        key: alloy_primitives::Address,
    },

    /// An acknowledgement could not be made: its entry could not be signed, or another
    /// signature was appended while it was made.
    #[error("the acknowledgement of signing log {}: {reason}", path.display())]
    Acknowledgement {
        /// The log file.
        path: PathBuf,
        /// What went wrong.
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
