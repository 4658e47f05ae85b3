//! bridgectl's state store: the journal's tables, in SQLite on one machine (the default:
//! one file, one fsync per promise) or in PostgreSQL, shared by several signer hosts
//! (feature `postgres`, a `postgres://` location).
//!
//! One interface, one SQL text: a caller writes each statement once, in SQLite's
//! spelling (`?1` parameters, `COLLATE NOCASE`, `json_each`, `ON CONFLICT … DO
//! NOTHING`), and the PostgreSQL side rewrites the few words that differ (the private
//! `dialect` module lists them, with a test for each); it binds
//! [`Value`]s and reads [`Row`]s. The difference that matters is kept here, in
//! [`Store::write`]: a write transaction is **serialised** on both backends (SQLite's
//! `BEGIN IMMEDIATE`, one writer per file; PostgreSQL's transaction-scoped advisory lock
//! of the store's namespace, one writer across every host), so a check made inside it
//! and the write that depends on it are one step: the guards a caller builds from
//! "read, then write if free" hold across processes and hosts alike.
//!
//! A PostgreSQL store fails closed: a connection that cannot be made or is lost makes
//! every operation an [`Error::Unreachable`] (mid-transaction too: nothing of it is
//! acted on), and the next operation connects again.

mod conn;
mod copy;
#[cfg(feature = "postgres")]
mod dialect;
mod error;
#[cfg(feature = "postgres")]
mod postgres;
mod sqlite;
mod value;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use conn::Backed;
pub use conn::{Backend, Conn, Schema};
pub use copy::CopiedTable;
pub use error::Error;
pub use value::{FromValue, Row, ToValue, Value};

/// Where a store lives.
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file on this machine.
    File(PathBuf),
    /// A SQLite database in memory (tests, and embedders that keep no records).
    Memory,
    /// A PostgreSQL database (`postgres://user:password@host:port/db`), shared.
    Postgres(String),
}

impl Location {
    /// A location from its text: a `postgres://` or `postgresql://` URL, or a file path.
    pub fn parse(text: &str) -> Location {
        if is_postgres_url(text) {
            Location::Postgres(text.to_owned())
        } else {
            Location::File(PathBuf::from(text))
        }
    }

    /// Whether other hosts may share it (PostgreSQL).
    pub fn is_shared(&self) -> bool {
        matches!(self, Location::Postgres(_))
    }

    /// The file, for a SQLite file.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Location::File(p) => Some(p),
            _ => None,
        }
    }
}

/// Whether `text` names a PostgreSQL database.
pub fn is_postgres_url(text: &str) -> bool {
    text.starts_with("postgres://") || text.starts_with("postgresql://")
}

/// Shown with any password in a URL left out: a location is printed in errors and
/// status lines.
impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::File(p) => write!(f, "{}", p.display()),
            Location::Memory => f.write_str(":memory:"),
            Location::Postgres(url) => f.write_str(&redact_url(url)),
        }
    }
}

/// As [`Display`](std::fmt::Display): the password never reaches a debug print either.
impl std::fmt::Debug for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Location({self})")
    }
}

/// `url` with the password of its user part, and any `password=` parameter, replaced by
/// `***`.
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{name}:***@{host}"),
            None => format!("{user}@{host}"),
        },
        None => authority.to_owned(),
    };
    let tail = tail
        .split('&')
        .map(|p| match p.find("password=") {
            Some(i) => format!("{}password=***", &p[..i]),
            None => p.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&");
    if scheme.is_empty() {
        format!("{authority}{tail}")
    } else {
        format!("{scheme}://{authority}{tail}")
    }
}

enum Open {
    Sqlite(sqlite::SqliteConn),
    #[cfg(feature = "postgres")]
    Postgres(Option<postgres::PgConn>),
}

/// A store: one connection, used by one operation at a time (operations of several
/// threads wait for each other here; processes and hosts, in the database).
pub struct Store {
    open: Mutex<Open>,
    location: Location,
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    schema: &'static Schema,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

/// How a write commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Commit {
    /// Atomic and safe from a crash of the process (SQLite's `NORMAL`: a power cut can
    /// lose it, only together with every commit after it).
    Normal,
    /// On disk when it returns, with every commit before it.
    Durable,
}

impl Store {
    /// Opens (creating its tables if needed) the store at `location`. A SQLite file is
    /// made private (0600) in a directory the caller made; PostgreSQL needs the
    /// `postgres` feature.
    pub fn open(location: Location, schema: &'static Schema) -> Result<Store, Error> {
        let open = match &location {
            Location::File(path) => Open::Sqlite(sqlite::SqliteConn::open(path, schema)?),
            Location::Memory => Open::Sqlite(sqlite::SqliteConn::in_memory(schema)?),
            #[cfg(feature = "postgres")]
            Location::Postgres(url) => Open::Postgres(Some(postgres::PgConn::connect(
                url,
                &location.to_string(),
                schema,
            )?)),
            #[cfg(not(feature = "postgres"))]
            Location::Postgres(_) => {
                return Err(Error::Unreachable {
                    location: location.to_string(),
                    reason: "this build has no PostgreSQL support (the `postgres` feature of \
                             bridgectl-store)"
                        .into(),
                });
            }
        };
        Ok(Store {
            open: Mutex::new(open),
            location,
            schema,
        })
    }

    /// Where it is.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Which backend it is.
    pub fn backend(&self) -> Backend {
        if self.location.is_shared() {
            Backend::Postgres
        } else {
            Backend::Sqlite
        }
    }

    /// Runs `f` outside a transaction: each statement on its own (reads, and single
    /// statements that are atomic by themselves).
    pub fn read<T, E: From<Error>>(
        &self,
        f: impl FnOnce(&mut dyn Conn) -> Result<T, E>,
    ) -> Result<T, E> {
        self.with_conn(|conn| f(conn))
    }

    /// Runs `f` in a write transaction, serialised with every other write transaction of
    /// the store (see the crate's doc), and commits it when `f` returns `Ok` (unless it
    /// called [`Conn::roll_back`]); rolls it back otherwise.
    pub fn write<T, E: From<Error>>(
        &self,
        f: impl FnOnce(&mut dyn Conn) -> Result<T, E>,
    ) -> Result<T, E> {
        self.transaction(Commit::Normal, f)
    }

    /// [`Store::write`] for what a promise rests on: on disk, with every commit before
    /// it, when it returns (SQLite: one fsync; PostgreSQL's commits are so by default).
    pub fn write_durable<T, E: From<Error>>(
        &self,
        f: impl FnOnce(&mut dyn Conn) -> Result<T, E>,
    ) -> Result<T, E> {
        self.transaction(Commit::Durable, f)
    }

    /// Keeps a SQLite file's write-ahead log small (see `bridgectl_local::sqlite::tidy`);
    /// nothing for PostgreSQL.
    pub fn tidy(&self) {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        match &*open {
            Open::Sqlite(c) => c.tidy(),
            #[cfg(feature = "postgres")]
            Open::Postgres(_) => {}
        }
    }

    fn transaction<T, E: From<Error>>(
        &self,
        commit: Commit,
        f: impl FnOnce(&mut dyn Conn) -> Result<T, E>,
    ) -> Result<T, E> {
        self.with_conn(|conn| {
            conn.begin(commit == Commit::Durable)?;
            let result = f(conn.as_conn());
            conn.finish(result.is_ok(), commit == Commit::Durable)?;
            result
        })
    }

    fn with_conn<T, E: From<Error>>(
        &self,
        f: impl FnOnce(&mut dyn Backed) -> Result<T, E>,
    ) -> Result<T, E> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        match &mut *open {
            Open::Sqlite(c) => f(c),
            #[cfg(feature = "postgres")]
            Open::Postgres(slot) => {
                let Location::Postgres(url) = &self.location else {
                    unreachable!("a PostgreSQL connection has a PostgreSQL location")
                };
                if slot.is_none() {
                    *slot = Some(postgres::PgConn::connect(
                        url,
                        &self.location.to_string(),
                        self.schema,
                    )?);
                }
                let conn = slot.as_mut().expect("connected above");
                let result = f(conn);
                if conn.is_lost() {
                    // Connected again by the next operation.
                    *slot = None;
                }
                result
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_left_out_of_locations() {
        assert_eq!(
            redact_url("postgres://desk:s3cret@127.0.0.1:5432/state"),
            "postgres://desk:***@127.0.0.1:5432/state"
        );
        assert_eq!(
            redact_url("postgresql://127.0.0.1/state?user=a&password=s3cret"),
            "postgresql://127.0.0.1/state?user=a&password=***"
        );
        let l = Location::parse("postgres://u:pw@h/db");
        assert!(!format!("{l} {l:?}").contains("pw"));
        assert_eq!(
            Location::parse("/var/j.sqlite3").file(),
            Some(Path::new("/var/j.sqlite3"))
        );
    }
}
