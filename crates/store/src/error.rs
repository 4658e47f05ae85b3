//! What a store operation can fail with.

/// A store operation's failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// SQLite failed.
    #[error("sqlite")]
    Sqlite(#[source] rusqlite::Error),

    /// PostgreSQL answered with an error (a constraint, a statement it refused).
    #[cfg(feature = "postgres")]
    #[error("postgresql")]
    Postgres(#[source] tokio_postgres::Error),

    /// The store could not be reached, or its connection was lost (mid-transaction
    /// too: then nothing of that transaction is known to be committed, and its caller
    /// acts on nothing of it).
    #[error("the state store at {location} cannot be reached: {reason}")]
    Unreachable {
        /// Where it is (a URL with any password left out).
        location: String,
        /// What failed.
        reason: String,
    },

    /// A statement that reads one row found none.
    #[error("no row")]
    NoRow,

    /// A column could not be read as the type asked for.
    #[error("column {index}: expected {reason}")]
    Column {
        /// The column (from 0).
        index: usize,
        /// What was expected and what was found.
        reason: String,
    },

    /// A unique or foreign-key constraint refused a write.
    #[error("constraint: {0}")]
    Constraint(String),

    /// The store's tables are of a version this program does not know (made by a newer
    /// one), or could not be made.
    #[error("{0}")]
    Schema(String),

    /// The caller's own refusal inside a transaction, carried out of it (the transaction
    /// is rolled back).
    #[error("{0}")]
    Refused(String),
}

impl Error {
    /// Whether the store itself is unavailable (not reached, or its connection lost):
    /// a retry later may succeed; nothing of the failed operation was acted on.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Error::Unreachable { .. })
    }

    /// Whether a unique or foreign-key constraint refused the write.
    pub fn is_constraint(&self) -> bool {
        match self {
            Error::Constraint(_) => true,
            Error::Sqlite(rusqlite::Error::SqliteFailure(e, _)) => {
                e.code == rusqlite::ErrorCode::ConstraintViolation
            }
            _ => false,
        }
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Error {
        match e {
            rusqlite::Error::QueryReturnedNoRows => Error::NoRow,
            e => Error::Sqlite(e),
        }
    }
}
