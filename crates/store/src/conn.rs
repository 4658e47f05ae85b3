//! The interface a caller's statements run on, and what a backend adds to it.

use crate::error::Error;
use crate::value::{FromValue, Row, ToValue};

/// A store's tables, as each backend makes them. Bump `version` when either changes: a
/// store at a lower version has its statements run again (so each is idempotent), and a
/// store at a higher one was made by a newer program and is refused.
#[derive(Debug)]
pub struct Schema {
    /// The version these statements bring a store to (at least 1).
    pub version: i64,
    /// SQLite's statements.
    pub sqlite: &'static str,
    /// Columns added to SQLite tables after they were first made, `(table, column,
    /// declaration)`: added once each, when missing (SQLite has no `ADD COLUMN IF NOT
    /// EXISTS`, and [`Schema::sqlite`] runs again whenever the version goes up).
    pub sqlite_added_columns: &'static [(&'static str, &'static str, &'static str)],
    /// PostgreSQL's statements, run in [`Schema::namespace`].
    pub postgres: &'static str,
    /// The PostgreSQL schema (namespace) the tables live in, so that one database holds
    /// the journal, the signing log and other software's tables side by side.
    pub namespace: &'static str,
}

/// Which backend a connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// SQLite.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

/// A connection, inside a transaction or not: what a caller's closure runs its
/// statements on.
pub trait Conn {
    /// Runs `sql` with `params`; returns how many rows it changed.
    fn execute(&mut self, sql: &str, params: &[&dyn ToValue]) -> Result<usize, Error>;
    /// Runs `sql` with `params` and reads every row it returns.
    fn query(&mut self, sql: &str, params: &[&dyn ToValue]) -> Result<Vec<Row>, Error>;
    /// Which backend this is (for the rare statement with no common spelling).
    fn backend(&self) -> Backend;
    /// Rolls the transaction back when the closure returns, even with `Ok` (a write that
    /// found it must not happen, and says why in its value).
    fn roll_back(&mut self);
}

impl dyn Conn + '_ {
    /// The first row of `sql`, read by `f`; [`Error::NoRow`] when there is none.
    pub fn query_row<T>(
        &mut self,
        sql: &str,
        params: &[&dyn ToValue],
        f: impl FnOnce(&Row) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let rows = self.query(sql, params)?;
        rows.first().map_or(Err(Error::NoRow), f)
    }

    /// The first row of `sql`, read by `f`, if there is one.
    pub fn query_opt<T>(
        &mut self,
        sql: &str,
        params: &[&dyn ToValue],
        f: impl FnOnce(&Row) -> Result<T, Error>,
    ) -> Result<Option<T>, Error> {
        let rows = self.query(sql, params)?;
        rows.first().map(f).transpose()
    }

    /// Every row of `sql`, each read by `f`.
    pub fn query_map<T>(
        &mut self,
        sql: &str,
        params: &[&dyn ToValue],
        f: impl FnMut(&Row) -> Result<T, Error>,
    ) -> Result<Vec<T>, Error> {
        self.query(sql, params)?.iter().map(f).collect()
    }

    /// The value of the first column of the first row.
    pub fn query_value<T: FromValue>(
        &mut self,
        sql: &str,
        params: &[&dyn ToValue],
    ) -> Result<T, Error> {
        self.query_row(sql, params, |r| r.get(0))
    }
}

/// What a backend's connection does besides [`Conn`]: transactions.
pub(crate) trait Backed: Conn {
    fn as_conn(&mut self) -> &mut dyn Conn;
    fn begin(&mut self, durable: bool) -> Result<(), Error>;
    /// Commits (`ok`, and no roll back asked for) or rolls back.
    fn finish(&mut self, ok: bool, durable: bool) -> Result<(), Error>;
}
