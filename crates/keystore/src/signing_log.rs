//! The signing log beside the keys: [`SigningLogDb`], an SQLite file
//! ([`SIGNING_LOG_FILE`]) in the keystore's directory, storing the entries that
//! `bridgectl_tx::log` defines, hash-chained and each signed by its key.
//!
//! | promise | how |
//! |---|---|
//! | an entry is on disk before the signed bytes leave `sign_and_log` | one transaction per append, WAL with `synchronous=FULL` (an fsync per commit) |
//! | two signers never fork the chain | the head is read and the entry inserted inside one `BEGIN IMMEDIATE` |
//! | limits are not fooled by an edited index column | totals add up the bodies of checked entries, never the columns |
//!
//! The columns besides `body`, `hash` and `sig` (time, key, chain, contract) exist to
//! filter `log show`; [`SigningLogDb::verify`] checks they agree with the bodies.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use alloy_primitives::{Address, B256, U256};
use bridgectl_tx::log::{BadEntry, ChainCheck, Checkpoint, Entry, EntryBody, WindowQuery};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::Error;

/// The log's file name in the keystore directory.
pub const SIGNING_LOG_FILE: &str = "signing-log.sqlite3";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS entries (
    seq      INTEGER PRIMARY KEY,
    time     INTEGER NOT NULL,
    key      TEXT NOT NULL,
    chain_id INTEGER NOT NULL,
    contract TEXT NOT NULL,
    body     TEXT NOT NULL,
    hash     BLOB NOT NULL,
    sig      BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_key_time ON entries(key, time);
";

/// The signing log of one keystore directory.
#[derive(Debug)]
pub struct SigningLogDb {
    path: PathBuf,
    conn: Mutex<Connection>,
}

fn row_entry(row: &rusqlite::Row<'_>) -> rusqlite::Result<Entry> {
    let seq: i64 = row.get("seq")?;
    let hash: Vec<u8> = row.get("hash")?;
    let sig: Vec<u8> = row.get("sig")?;
    Ok(Entry {
        seq: u64::try_from(seq).unwrap_or_default(),
        body: row.get("body")?,
        hash: B256::try_from(hash.as_slice()).unwrap_or_default(),
        sig: sig.into(),
    })
}

impl SigningLogDb {
    /// Opens (creating if needed) the log at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<SigningLogDb, Error> {
        let path = path.as_ref().to_path_buf();
        let sql = |e| Error::SigningLog {
            path: path.clone(),
            source: e,
        };
        let conn = Connection::open(&path).map_err(sql)?;
        // What was signed with which key is the keys' business: readable by their owner
        // only, like the key files (SQLite gives its -wal and -shm files the same mode).
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .map_err(crate::error::Error::io("cannot set the mode of", &path))?;
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;")
            .map_err(sql)?;
        conn.execute_batch(SCHEMA).map_err(sql)?;
        Ok(SigningLogDb {
            path,
            conn: Mutex::new(conn),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn with<T>(&self, f: impl FnOnce(&mut Connection) -> Result<T, Error>) -> Result<T, Error> {
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut conn)
    }

    fn sql(&self) -> impl Fn(rusqlite::Error) -> Error + '_ {
        |e| Error::SigningLog {
            path: self.path.clone(),
            source: e,
        }
    }

    /// The head as stored (not checked: [`SigningLogDb::verify`] checks it).
    pub fn checkpoint(&self) -> Result<Checkpoint, Error> {
        self.with(|c| head(c).map_err(self.sql()))
    }

    /// Checks the whole chain, and against `kept` when given. `Ok(Err(bad))` names the
    /// first entry that does not hold; `Ok(Ok(head))` is the verified head.
    pub fn verify(&self, kept: Option<Checkpoint>) -> Result<Result<Checkpoint, BadEntry>, Error> {
        let mut check = ChainCheck::new();
        let mut seen = None;
        let mut bad = None;
        self.each(|entry, columns| {
            if bad.is_some() {
                return;
            }
            match check.push(&entry) {
                Ok(body) => {
                    if let Err(reason) = columns_agree(&body, &columns) {
                        bad = Some(BadEntry {
                            seq: entry.seq,
                            reason,
                        });
                    }
                    if kept.is_some_and(|k| k.count == entry.seq) {
                        seen = Some(entry.hash);
                    }
                }
                Err(e) => bad = Some(e),
            }
        })?;
        if let Some(bad) = bad {
            return Ok(Err(bad));
        }
        Ok(check.finish(kept, seen).map(|()| check.checkpoint()))
    }

    /// Every entry in order, with its index columns, unchecked (export, show).
    pub fn each(&self, mut f: impl FnMut(Entry, Columns)) -> Result<(), Error> {
        self.with(|c| {
            let mut stmt = c
                .prepare(
                    "SELECT seq, time, key, chain_id, contract, body, hash, sig FROM entries \
                     ORDER BY seq",
                )
                .map_err(self.sql())?;
            let mut rows = stmt.query([]).map_err(self.sql())?;
            while let Some(row) = rows.next().map_err(self.sql())? {
                let entry = row_entry(row).map_err(self.sql())?;
                let columns = Columns {
                    time: row.get("time").map_err(self.sql())?,
                    key: row.get("key").map_err(self.sql())?,
                    chain_id: row.get("chain_id").map_err(self.sql())?,
                    contract: row.get("contract").map_err(self.sql())?,
                };
                f(entry, columns);
            }
            Ok(())
        })
    }

    /// Appends `entry` (already made and signed from the head read in the same
    /// transaction).
    fn insert(tx: &rusqlite::Transaction<'_>, entry: &Entry) -> Result<(), rusqlite::Error> {
        let body: Option<EntryBody> = serde_json::from_str(&entry.body).ok();
        let (time, key, chain, contract) = body.map_or((0, String::new(), 0, String::new()), |b| {
            (b.time, b.key.to_string(), b.chain_id, b.to.to_string())
        });
        tx.execute(
            "INSERT INTO entries (seq, time, key, chain_id, contract, body, hash, sig) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                i64::try_from(entry.seq).unwrap_or(i64::MAX),
                i64::try_from(time).unwrap_or(i64::MAX),
                key,
                i64::try_from(chain).unwrap_or(i64::MAX),
                contract,
                entry.body,
                entry.hash.as_slice(),
                entry.sig.as_ref(),
            ],
        )?;
        Ok(())
    }
}

/// The index columns of a row, as stored.
#[derive(Clone, Debug)]
pub struct Columns {
    /// `time`.
    pub time: i64,
    /// `key`.
    pub key: String,
    /// `chain_id`.
    pub chain_id: i64,
    /// `contract`.
    pub contract: String,
}

fn columns_agree(body: &EntryBody, c: &Columns) -> Result<(), String> {
    let agree = i64::try_from(body.time).ok() == Some(c.time)
        && body.key.to_string() == c.key
        && i64::try_from(body.chain_id).ok() == Some(c.chain_id)
        && body.to.to_string() == c.contract;
    if agree {
        Ok(())
    } else {
        Err(format!(
            "its index columns (time {}, key {}, chain {}, contract {}) disagree with its \
             signed body: the row was edited",
            c.time, c.key, c.chain_id, c.contract
        ))
    }
}

fn head(c: &Connection) -> rusqlite::Result<Checkpoint> {
    let row: Option<(i64, Vec<u8>)> = c
        .query_row(
            "SELECT seq, hash FROM entries ORDER BY seq DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    Ok(match row {
        Some((seq, hash)) => Checkpoint {
            count: u64::try_from(seq).unwrap_or_default(),
            head: B256::try_from(hash.as_slice()).unwrap_or_default(),
        },
        None => Checkpoint::EMPTY,
    })
}

fn boxed(e: Error) -> bridgectl_tx::Error {
    bridgectl_tx::Error::Log(Box::new(e))
}

impl bridgectl_tx::SigningLog for SigningLogDb {
    fn append(
        &self,
        make: &mut dyn FnMut(Checkpoint) -> Result<Entry, bridgectl_tx::Error>,
    ) -> Result<(), bridgectl_tx::Error> {
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let sql = self.sql();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| boxed(sql(e)))?;
        let at = head(&tx).map_err(|e| boxed(sql(e)))?;
        let entry = make(at)?;
        Self::insert(&tx, &entry).map_err(|e| boxed(sql(e)))?;
        tx.commit().map_err(|e| boxed(sql(e)))?;
        Ok(())
    }

    fn window_total(&self, query: &WindowQuery) -> Result<U256, bridgectl_tx::Error> {
        let bad = |b: BadEntry| {
            boxed(Error::SigningLogBroken {
                path: self.path.clone(),
                bad: b,
            })
        };
        // Walk back from the newest entry until one signed before the window (by its
        // body's time, never the column's); then check forward from there.
        let mut slice: Vec<Entry> = Vec::new();
        let mut anchor = None;
        self.with(|c| {
            let mut stmt = c
                .prepare("SELECT seq, body, hash, sig FROM entries ORDER BY seq DESC")
                .map_err(self.sql())?;
            let mut rows = stmt.query([]).map_err(self.sql())?;
            while let Some(row) = rows.next().map_err(self.sql())? {
                let entry = row_entry(row).map_err(self.sql())?;
                let time = serde_json::from_str::<EntryBody>(&entry.body)
                    .map(|b| b.time)
                    .unwrap_or(u64::MAX);
                if time < query.since {
                    anchor = Some(entry);
                    break;
                }
                slice.push(entry);
            }
            Ok(())
        })
        .map_err(boxed)?;
        let mut check = match &anchor {
            Some(a) => {
                ChainCheck::anchor(a).map_err(bad)?;
                ChainCheck::from(Checkpoint {
                    count: a.seq,
                    head: bridgectl_tx::log::entry_hash(&a.body),
                })
            }
            None => ChainCheck::new(),
        };
        let mut total = U256::ZERO;
        for entry in slice.iter().rev() {
            let body = check.push(entry).map_err(bad)?;
            if body.key == query.key
                && body.chain_id == query.chain_id
                && body.to == query.contract
                && body.time >= query.since
            {
                total = total.saturating_add(body.amount.unwrap_or_default());
            }
        }
        Ok(total)
    }
}

/// Filters for [`SigningLogDb::show`].
#[derive(Clone, Debug, Default)]
pub struct ShowFilter {
    /// Only this key's entries.
    pub key: Option<Address>,
    /// Only entries signed at or after this time (Unix seconds).
    pub since: Option<u64>,
}

impl SigningLogDb {
    /// The entries that match `filter`, with their parsed bodies (unchecked: `verify`
    /// is the check). An entry whose body does not parse is returned with `None`.
    pub fn show(&self, filter: &ShowFilter) -> Result<Vec<(Entry, Option<EntryBody>)>, Error> {
        let mut out = Vec::new();
        self.each(|entry, _| {
            let body: Option<EntryBody> = serde_json::from_str(&entry.body).ok();
            let keep = match &body {
                Some(b) => {
                    filter.key.is_none_or(|k| k == b.key)
                        && filter.since.is_none_or(|t| b.time >= t)
                }
                None => true,
            };
            if keep {
                out.push((entry, body));
            }
        })?;
        Ok(out)
    }
}
