//! [`StoreSpec`]: which store a listener or a reader opens, from what the user wrote.

#[cfg(feature = "postgres")]
use super::postgres;
use super::sqlite::SqliteStore;
use super::{EventStore, Limits, redact_url};
use crate::Error;

/// Which store: an SQLite file or a PostgreSQL URL (see [`StoreSpec::parse`]).
#[derive(Clone, PartialEq, Eq)]
pub enum StoreSpec {
    /// An SQLite file.
    Sqlite(std::path::PathBuf),
    /// A PostgreSQL connection string (`postgres://` or `postgresql://`).
    Postgres(String),
}

impl std::fmt::Debug for StoreSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreSpec::Sqlite(p) => write!(f, "Sqlite({})", p.display()),
            // The connection string may hold a password.
            StoreSpec::Postgres(url) => write!(f, "Postgres({})", redact_url(url)),
        }
    }
}

impl StoreSpec {
    /// `sqlite:PATH`, `postgres://...`/`postgresql://...`, or a plain path (SQLite).
    pub fn parse(text: &str) -> StoreSpec {
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            StoreSpec::Postgres(text.to_owned())
        } else {
            StoreSpec::Sqlite(text.strip_prefix("sqlite:").unwrap_or(text).into())
        }
    }

    /// The store for messages, with any password hidden.
    pub fn display(&self) -> String {
        match self {
            StoreSpec::Sqlite(p) => p.display().to_string(),
            StoreSpec::Postgres(url) => redact_url(url),
        }
    }

    /// Opens (creating the schema if needed) the store for writing.
    pub async fn open(&self, limits: Limits) -> Result<Box<dyn EventStore>, Error> {
        match self {
            StoreSpec::Sqlite(path) => {
                let path = path.clone();
                let store = tokio::task::spawn_blocking(move || SqliteStore::open(path, limits))
                    .await
                    .map_err(|_| Error::WorkerGone)??;
                Ok(Box::new(store))
            }
            #[cfg(feature = "postgres")]
            StoreSpec::Postgres(url) => Ok(Box::new(postgres::PgStore::open(url, limits).await?)),
            #[cfg(not(feature = "postgres"))]
            StoreSpec::Postgres(url) => Err(Error::Unsupported {
                what: format!(
                    "store {}: this build has no PostgreSQL support (feature `postgres`)",
                    redact_url(url)
                ),
            }),
        }
    }

    /// Opens an existing store for reading: a missing SQLite file is an error that says so.
    pub async fn open_existing(&self) -> Result<Box<dyn EventStore>, Error> {
        match self {
            StoreSpec::Sqlite(path) => {
                let path = path.clone();
                let store = tokio::task::spawn_blocking(move || SqliteStore::open_existing(path))
                    .await
                    .map_err(|_| Error::WorkerGone)??;
                Ok(Box::new(store))
            }
            _ => self.open(Limits::default()).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_hide_passwords() {
        assert_eq!(
            StoreSpec::parse("sqlite:/x/e.sqlite"),
            StoreSpec::Sqlite("/x/e.sqlite".into())
        );
        assert_eq!(
            StoreSpec::parse("e.sqlite"),
            StoreSpec::Sqlite("e.sqlite".into())
        );
        let pg = StoreSpec::parse("postgres://u:hunter2@127.0.0.1:5432/db");
        assert!(matches!(pg, StoreSpec::Postgres(_)));
        assert!(!format!("{pg:?}").contains("hunter2"));
        assert!(!pg.display().contains("hunter2"));
    }
}
