//! Copying a SQLite store's rows into a PostgreSQL one (`bridgectl state migrate`): the
//! same tables, row for row, in one write transaction of the target.

use crate::conn::Conn;
use crate::error::Error;
use crate::value::{ToValue, Value};
use crate::{Backend, Store};

/// A table copied by [`Store::copy_into`].
#[derive(Debug, Clone, Copy)]
pub struct CopiedTable {
    /// Its name (the same in both stores).
    pub name: &'static str,
    /// The column PostgreSQL numbers itself (`BIGSERIAL`), if any: copied from SQLite's
    /// own (`rowid`, or an `INTEGER PRIMARY KEY`) so that the order rows were written in
    /// is kept, and its sequence is moved past the copied rows.
    pub serial: Option<&'static str>,
}

impl Store {
    /// Copies every row of `tables` (in that order: a table before the ones that refer
    /// to it) from this store, a SQLite one, into `target`, inside one write transaction
    /// of the target (nothing of it is seen until all of it is). Returns how many rows
    /// each table had.
    ///
    /// `check` runs first in that transaction, on the target, and may refuse (a target
    /// that holds a history of its own).
    pub fn copy_into(
        &self,
        target: &Store,
        tables: &[CopiedTable],
        check: impl FnOnce(&mut dyn Conn) -> Result<(), Error>,
    ) -> Result<Vec<(&'static str, usize)>, Error> {
        if self.backend() != Backend::Sqlite {
            return Err(Error::Refused(format!(
                "{} is not a SQLite store: only a machine's SQLite state is copied",
                self.location()
            )));
        }
        // Read first, outside the target's transaction: a journal is small next to the
        // time the target's lock should be held.
        let mut read = Vec::with_capacity(tables.len());
        for table in tables {
            let (columns, rows) = self.read(|c| {
                let mut columns: Vec<String> = c.query_map(
                    "SELECT name FROM pragma_table_info(?1) ORDER BY cid",
                    &[&table.name],
                    |r| r.get(0),
                )?;
                let mut select = columns.join(", ");
                if let Some(serial) = table.serial
                    && !columns.iter().any(|c| c == serial)
                {
                    select.push_str(", rowid");
                    columns.push(serial.to_owned());
                }
                let rows = c.query(
                    &format!("SELECT {select} FROM {} ORDER BY rowid", table.name),
                    &[],
                )?;
                Ok::<_, Error>((columns, rows))
            })?;
            read.push((table, columns, rows));
        }
        target.write(|c| {
            check(c)?;
            let mut counts = Vec::with_capacity(read.len());
            for (table, columns, rows) in &read {
                let marks: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
                let insert = format!(
                    "INSERT INTO {} ({}) VALUES ({})",
                    table.name,
                    columns.join(", "),
                    marks.join(", ")
                );
                for row in rows {
                    let values: Vec<Value> = (0..columns.len())
                        .map(|i| row.get(i))
                        .collect::<Result<_, _>>()?;
                    let params: Vec<&dyn ToValue> =
                        values.iter().map(|v| v as &dyn ToValue).collect();
                    c.execute(&insert, &params)?;
                }
                if let Some(serial) = table.serial
                    && c.backend() == Backend::Postgres
                {
                    c.query(
                        &format!(
                            "SELECT setval(pg_get_serial_sequence('{0}', '{serial}'), \
                             (SELECT COALESCE(MAX({serial}), 0) + 1 FROM {0}), false)",
                            table.name
                        ),
                        &[],
                    )?;
                }
                counts.push((table.name, rows.len()));
            }
            Ok(counts)
        })
    }
}
