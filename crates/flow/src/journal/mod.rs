//! The journal: every flow and each of its steps, in SQLite before the next step runs.
//!
//! The rule that matters most: a signed transaction is committed here (fsync'd, so it
//! survives a power cut) **before** it is submitted. That is the journal's one fsync on a
//! signing path; the steps before it commit without one and reach the disk with it. If the
//! process dies or the answer to the submission is lost, `resume` finds the same signed
//! bytes and sends them again; nothing ever signs a second transaction with a new nonce
//! on its own.

mod batches;
mod chains;
mod credits;
mod facts;
mod flows;
mod groups;
mod nonces;
mod records;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::Connection;

use crate::Error;

pub use batches::{BatchLock, HeldNonce};
pub(crate) use batches::{HeldKey, NewBatchItem};
pub use credits::Credit;
pub use facts::{Fact, FactKind, Reorg};
pub(crate) use groups::GroupFlow;
pub use records::{
    BatchItemRecord, BatchRecord, FlowKind, FlowRecord, FlowState, MAX_BLOB_BYTES, Purpose,
    SignatureRecord, StepRecord, blob,
};

/// The journal database. Thread-safe; every write is its own transaction, and the writes
/// that a promise rests on are fsync'd before they return.
#[derive(Debug)]
pub struct Journal {
    conn: Mutex<Connection>,
    path: PathBuf,
    /// How long an unsigned reservation holds, in seconds.
    lease_secs: i64,
    /// Where the time of the flows over this journal goes (its writes counted here).
    timing: crate::timing::Timing,
}

const SCHEMA: bridgectl_local::sqlite::Schema = bridgectl_local::sqlite::Schema {
    version: 8,
    sql: SCHEMA_SQL,
};

const SCHEMA_SQL: &str = "
CREATE TABLE IF NOT EXISTS flows (
    tx_id      TEXT PRIMARY KEY,
    kind       TEXT NOT NULL,
    state      TEXT NOT NULL,
    from_addr  TEXT,
    intent     TEXT NOT NULL,
    raw_tx     TEXT,
    signed_tx  TEXT,
    tx_hash    TEXT,
    chain_id   INTEGER,
    nonce      TEXT,
    result     TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS steps (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    tx_id  TEXT NOT NULL REFERENCES flows(tx_id),
    at     TEXT NOT NULL,
    step   TEXT NOT NULL,
    detail TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS steps_by_flow ON steps(tx_id, id);
CREATE TABLE IF NOT EXISTS nonces (
    address     TEXT NOT NULL,
    chain_id    INTEGER NOT NULL,
    nonce       INTEGER NOT NULL,
    tx_id       TEXT NOT NULL REFERENCES flows(tx_id),
    reserved_at INTEGER NOT NULL,
    PRIMARY KEY (address, chain_id, nonce)
);
CREATE INDEX IF NOT EXISTS flows_by_hash ON flows(tx_hash);
-- next_nonce reads the highest signed nonce of one sender on one chain before every
-- signature: ordered by nonce, that is one index probe. (Version 2's index on sender and
-- chain only still read every flow of the sender: 1 ms per signature at 350 flows.)
DROP INDEX IF EXISTS flows_by_sender;
CREATE INDEX IF NOT EXISTS flows_by_sender_nonce
    ON flows(from_addr COLLATE NOCASE, chain_id, CAST(nonce AS INTEGER));
CREATE TABLE IF NOT EXISTS batches (
    batch_id   TEXT PRIMARY KEY,
    source     TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS batch_items (
    batch_id TEXT NOT NULL REFERENCES batches(batch_id),
    idx      INTEGER NOT NULL,
    item_id  TEXT NOT NULL,
    op       TEXT NOT NULL,
    tx_id    TEXT NOT NULL,
    attempt  INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (batch_id, idx)
);
CREATE INDEX IF NOT EXISTS batch_items_by_tx ON batch_items(tx_id);
-- Every signature of a flow that was replaced at its nonce (re-priced or cancelled),
-- the original included: any of them may be the one mined, so each is kept until the
-- chain decides. A flow never replaced has no rows here (its one signature is in flows).
CREATE TABLE IF NOT EXISTS signatures (
    tx_hash   TEXT PRIMARY KEY,
    tx_id     TEXT NOT NULL REFERENCES flows(tx_id),
    purpose   TEXT NOT NULL,
    signed_tx TEXT NOT NULL,
    at        TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS signatures_by_flow ON signatures(tx_id);
-- The chain the flows of each chain id were journaled on, by its block 0's hash: a node
-- whose block 0 differs is another chain (a reset testnet, a restarted sandbox), on which
-- the journal's nonces mean nothing.
CREATE TABLE IF NOT EXISTS chains (
    chain_id    INTEGER PRIMARY KEY,
    genesis     TEXT NOT NULL,
    recorded_at TEXT NOT NULL
);
-- The ST credit that completed each swap, by the side chain's names for it: a credit
-- completes one swap only (its key), and a swap holds one credit (its index).
CREATE TABLE IF NOT EXISTS credits (
    chain_id  INTEGER NOT NULL,
    tx_hash   TEXT NOT NULL,
    log_index INTEGER NOT NULL,
    block     INTEGER NOT NULL,
    amount    TEXT NOT NULL,
    tx_id     TEXT NOT NULL REFERENCES flows(tx_id),
    at        TEXT NOT NULL,
    PRIMARY KEY (chain_id, tx_hash, log_index)
);
CREATE UNIQUE INDEX IF NOT EXISTS credits_by_flow ON credits(tx_id);
-- Batches prepared for the air gap (`batch prepare`): their items are signed offline,
-- and the request file written for them is named by its SHA-256.
CREATE TABLE IF NOT EXISTS prepared_batches (
    batch_id     TEXT PRIMARY KEY REFERENCES batches(batch_id),
    request_hash TEXT NOT NULL,
    prepared_at  TEXT NOT NULL
);
-- Version 6: the chain facts each flow's end rests on (its receipt, a swap's credit, a
-- redemption's payout), by block number and hash, looked at again until final on their
-- chain; and the state a confirming flow ends in once they are (flows.ending). This
-- file runs once per version, so the column is added once.
CREATE TABLE IF NOT EXISTS facts (
    tx_id      TEXT NOT NULL REFERENCES flows(tx_id),
    kind       TEXT NOT NULL,
    chain_id   INTEGER NOT NULL,
    tx_hash    TEXT NOT NULL,
    log_index  INTEGER,
    block      INTEGER NOT NULL,
    block_hash TEXT NOT NULL,
    final      INTEGER NOT NULL DEFAULT 0,
    seen_at    TEXT NOT NULL,
    PRIMARY KEY (tx_id, kind)
);
-- (flows.ending, added by version 6, is in ADDED_COLUMNS.)
-- Version 7: each batch item's idempotency key (its id; for an item without one, its
-- batch file's SHA-256 and its line), taken in the transaction that records its batch:
-- one key, one item of one batch, so a file run twice, or twice at once, runs each item
-- once. Batches recorded before version 7 give their items' ids as keys (the ids
-- `line-N` of items without one aside: their file is not known).
CREATE TABLE IF NOT EXISTS batch_keys (
    item_key TEXT PRIMARY KEY,
    batch_id TEXT NOT NULL REFERENCES batches(batch_id),
    idx      INTEGER NOT NULL
);
INSERT OR IGNORE INTO batch_keys (item_key, batch_id, idx)
    SELECT item_id, batch_id, idx FROM batch_items
     WHERE item_id NOT GLOB 'line-[0-9]*' ORDER BY rowid;
-- Prepared batches given up (`batch abandon`): until then a prepared batch's
-- reservations hold past their lease, however long the air gap takes; after it they are
-- free, and a signed batch for it is refused.
CREATE TABLE IF NOT EXISTS abandoned_batches (
    batch_id TEXT PRIMARY KEY REFERENCES prepared_batches(batch_id),
    at       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS nonces_by_flow ON nonces(tx_id);
-- Version 8: the newest flows (`history --limit N`, `Journal::list`) are the last N
-- entries of this index, not the whole journal sorted: the same cost at 100,000 flows as
-- at 10. (Its rowid, the tie-break, is in every index entry.)
CREATE INDEX IF NOT EXISTS flows_by_created ON flows(created_at);
";

/// Columns added to a table after it was first made, each with its declaration: added
/// once, when missing. (SQLite has no `ADD COLUMN IF NOT EXISTS`, and [`SCHEMA_SQL`] runs
/// again whenever the version goes up, so an `ALTER` in it would fail the second time.)
const ADDED_COLUMNS: [(&str, &str, &str); 1] = [
    // Version 6: the state a confirming flow ends in once its facts are final.
    ("flows", "ending", "TEXT"),
];

/// Adds each of [`ADDED_COLUMNS`] that `conn`'s file lacks, each in a write transaction
/// that looks again first (another process may be adding it too). A file that has them
/// all costs one read.
fn add_columns(conn: &mut Connection) -> rusqlite::Result<()> {
    let missing = |c: &Connection, table: &str, column: &str| -> rusqlite::Result<bool> {
        c.query_row(
            "SELECT COUNT(*) = 0 FROM pragma_table_info(?1) WHERE name = ?2",
            rusqlite::params![table, column],
            |r| r.get(0),
        )
    };
    for (table, column, declared) in ADDED_COLUMNS {
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

/// How long a reservation of a flow that has not signed holds: long enough for a person
/// to read the summary and type a passphrase, short enough that a flow interrupted at
/// its prompt does not block the address for long. A flow that signed holds its nonce
/// for good.
pub const RESERVATION_LEASE_SECS: i64 = 15 * 60;

impl Journal {
    /// Opens (creating if needed) the journal at `path`: directory 0700, file 0600,
    /// WAL. Steps commit without an fsync (they survive a crash of the process; a power
    /// cut can lose only the last of them, together with everything after); the record
    /// of a signature (its signed bytes) and of a batch are fsync'd before
    /// they return, and carry every earlier step to disk with them (see
    /// `bridgectl_local::sqlite`).
    pub fn open(path: impl AsRef<Path>) -> Result<Journal, Error> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent() {
            bridgectl_local::files::create_private_dir(dir).map_err(|source| {
                Error::JournalDir {
                    path: dir.display().to_string(),
                    source,
                }
            })?;
        }
        let conn = bridgectl_local::sqlite::open(&path, &SCHEMA)
            .and_then(|mut c| add_columns(&mut c).map(|()| c))
            .map_err(|source| Error::Journal {
                path: path.display().to_string(),
                source,
            })?;
        // Best effort: the journal holds signed transactions (public once sent) and
        // intents, no secrets; 0600 keeps other users from reading what you did.
        let _ = bridgectl_local::files::restrict(&path);
        Ok(Journal::new(conn, path))
    }

    /// A journal that lives as long as the value: for tests, and for embedders that
    /// keep their own records (nothing survives a crash, so `resume` has nothing to
    /// find).
    pub fn in_memory() -> Result<Journal, Error> {
        let conn = bridgectl_local::sqlite::open_in_memory(&SCHEMA)
            .and_then(|mut c| add_columns(&mut c).map(|()| c))
            .map_err(|source| Error::Journal {
                path: ":memory:".into(),
                source,
            })?;
        Ok(Journal::new(conn, PathBuf::from(":memory:")))
    }

    fn new(conn: Connection, path: PathBuf) -> Journal {
        Journal {
            conn: Mutex::new(conn),
            path,
            lease_secs: RESERVATION_LEASE_SECS,
            timing: crate::timing::Timing::default(),
        }
    }

    /// The counters of the flows over this journal (its own writes, and the HTTP and
    /// polls of the flows built on it).
    pub fn timing(&self) -> &crate::timing::Timing {
        &self.timing
    }

    /// Keeps the journal's write-ahead log small: copies it into the database once it
    /// has grown past its bound (best effort; see `bridgectl_local::sqlite::tidy`). Runs when
    /// the journal is dropped; a long run (a batch) calls it between items, never
    /// between a signature's record and its submission.
    pub fn tidy(&self) {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let _ = bridgectl_local::sqlite::tidy(&conn);
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How long a reservation of a flow that has not signed holds
    /// [default: [`RESERVATION_LEASE_SECS`]]. Shorter frees an address sooner after a
    /// flow was abandoned at its prompt; a flow that outlives its lease at the prompt is
    /// refused when it is approved, never signed on an expired reservation.
    pub fn with_reservation_lease(mut self, lease: std::time::Duration) -> Journal {
        self.lease_secs = i64::try_from(lease.as_secs()).unwrap_or(i64::MAX).max(1);
        self
    }

    /// The time (Unix seconds) before which an unsigned reservation's lease has run out.
    fn lease_cutoff(&self) -> i64 {
        unix_now() - self.lease_secs
    }

    fn with<T>(&self, f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>) -> Result<T, Error> {
        let started = std::time::Instant::now();
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let result = f(&mut conn);
        self.timing.journal_done(started);
        result.map_err(|source| Error::Journal {
            path: self.path.display().to_string(),
            source,
        })
    }

    /// [`Journal::with`] for a write that a promise rests on: on disk, with every step
    /// before it, when this returns.
    fn with_durable<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> Result<T, Error> {
        self.with(|c| bridgectl_local::sqlite::durable(c, |e| e, f))
    }
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Appends a step to flow `tx_id`'s history. Every step goes through this one statement
/// (the step's name a parameter, not a literal): SQLite compiles it once per process and
/// connection, not once per name.
pub(super) fn insert_step(
    c: &rusqlite::Connection,
    tx_id: &str,
    at: &str,
    step: &str,
    detail: &str,
) -> rusqlite::Result<()> {
    c.prepare_cached("INSERT INTO steps (tx_id, at, step, detail) VALUES (?1, ?2, ?3, ?4)")?
        .execute(rusqlite::params![tx_id, at, step, detail])
        .map(|_| ())
}

/// Now, as the journal writes times (RFC 3339, UTC).
pub(crate) fn now() -> String {
    // Whole seconds: a journal is read by people; nanoseconds only make it wider.
    let now = time::OffsetDateTime::now_utc();
    now.replace_nanosecond(0)
        .unwrap_or(now)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.tidy();
    }
}
