//! The SQLite backend: one file (or memory) through `bridgectl_local::sqlite` (WAL, one
//! fsync per durable commit), statements cached per connection.

use std::path::Path;

use rusqlite::types::{ToSqlOutput, ValueRef};

use crate::conn::{Backed, Backend, Conn, Schema};
use crate::error::Error;
use crate::value::{Row, ToValue, Value};

/// How many prepared statements a connection keeps (the journal has about a hundred
/// distinct ones; a signature uses a dozen).
const STATEMENT_CACHE: usize = 128;

pub(crate) struct SqliteConn {
    conn: rusqlite::Connection,
    roll_back: bool,
}

impl SqliteConn {
    pub(crate) fn open(path: &Path, schema: &Schema) -> Result<SqliteConn, Error> {
        let mut conn = bridgectl_local::sqlite::open(path, &local_schema(schema))?;
        add_columns(&mut conn, schema.sqlite_added_columns)?;
        Ok(SqliteConn::new(conn))
    }

    pub(crate) fn in_memory(schema: &Schema) -> Result<SqliteConn, Error> {
        let mut conn = bridgectl_local::sqlite::open_in_memory(&local_schema(schema))?;
        add_columns(&mut conn, schema.sqlite_added_columns)?;
        Ok(SqliteConn::new(conn))
    }

    fn new(conn: rusqlite::Connection) -> SqliteConn {
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        SqliteConn {
            conn,
            roll_back: false,
        }
    }

    pub(crate) fn tidy(&self) {
        let _ = bridgectl_local::sqlite::tidy(&self.conn);
    }
}

fn local_schema(schema: &Schema) -> bridgectl_local::sqlite::Schema {
    bridgectl_local::sqlite::Schema {
        version: schema.version,
        sql: schema.sqlite,
    }
}

/// Adds each of `columns` that the file lacks, each in a write transaction that looks
/// again first (another process may be adding it too). A file that has them all costs
/// one read each.
fn add_columns(
    conn: &mut rusqlite::Connection,
    columns: &[(&str, &str, &str)],
) -> rusqlite::Result<()> {
    let missing = |c: &rusqlite::Connection, table: &str, column: &str| -> rusqlite::Result<bool> {
        c.query_row(
            "SELECT COUNT(*) = 0 FROM pragma_table_info(?1) WHERE name = ?2",
            rusqlite::params![table, column],
            |r| r.get(0),
        )
    };
    for (table, column, declared) in columns {
        if !missing(conn, table, column)? {
            continue;
        }
        let t = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        if missing(&t, table, column)? {
            t.execute_batch(&format!(
                "ALTER TABLE {table} ADD COLUMN {column} {declared}"
            ))?;
        }
        t.commit()?;
    }
    Ok(())
}

struct Param(Value);

impl rusqlite::ToSql for Param {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match &self.0 {
            Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Value::Int(i) => ToSqlOutput::Borrowed(ValueRef::Integer(*i)),
            Value::Text(t) => ToSqlOutput::Borrowed(ValueRef::Text(t.as_bytes())),
            Value::Blob(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
        })
    }
}

fn params(values: &[&dyn ToValue]) -> Vec<Param> {
    values.iter().map(|v| Param(v.to_value())).collect()
}

fn value_of(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        // Never written by these tables; read as text rather than lost.
        ValueRef::Real(f) => Value::Text(f.to_string()),
        ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
    }
}

impl Conn for SqliteConn {
    fn execute(&mut self, sql: &str, values: &[&dyn ToValue]) -> Result<usize, Error> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        Ok(stmt.execute(rusqlite::params_from_iter(params(values)))?)
    }

    fn query(&mut self, sql: &str, values: &[&dyn ToValue]) -> Result<Vec<Row>, Error> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        let columns = stmt.column_count();
        let mut rows = stmt.query(rusqlite::params_from_iter(params(values)))?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            let mut values = Vec::with_capacity(columns);
            for i in 0..columns {
                values.push(value_of(r.get_ref(i)?));
            }
            out.push(Row::new(values));
        }
        Ok(out)
    }

    fn backend(&self) -> Backend {
        Backend::Sqlite
    }

    fn roll_back(&mut self) {
        self.roll_back = true;
    }
}

impl Backed for SqliteConn {
    fn as_conn(&mut self) -> &mut dyn Conn {
        self
    }

    fn begin(&mut self, durable: bool) -> Result<(), Error> {
        self.roll_back = false;
        if durable {
            // Set before the transaction (SQLite ignores it inside one): this commit, and
            // every commit before it, is on disk when it returns.
            self.conn.pragma_update(None, "synchronous", "FULL")?;
        }
        // IMMEDIATE: the write lock is taken now, so whatever the transaction reads it
        // reads as the one writer of the file.
        if let Err(e) = self.conn.execute_batch("BEGIN IMMEDIATE") {
            self.normal_again(durable)?;
            return Err(e.into());
        }
        Ok(())
    }

    fn finish(&mut self, ok: bool, durable: bool) -> Result<(), Error> {
        let commit = ok && !std::mem::take(&mut self.roll_back);
        let ended = self
            .conn
            .execute_batch(if commit { "COMMIT" } else { "ROLLBACK" });
        if ended.is_err() && !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        let restored = self.normal_again(durable);
        ended?;
        restored
    }
}

impl SqliteConn {
    fn normal_again(&mut self, durable: bool) -> Result<(), Error> {
        if durable {
            self.conn.pragma_update(None, "synchronous", "NORMAL")?;
        }
        Ok(())
    }
}
