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
mod claims;
mod credits;
mod facts;
mod flows;
mod groups;
mod migrate;
mod nonces;
mod records;
#[cfg(test)]
mod tests;

use std::path::Path;

use bridgectl_store::{Conn, Location, Store};

use crate::Error;

pub use batches::{BatchLock, HeldNonce};
pub(crate) use batches::{HeldKey, NewBatchItem};
pub use claims::{Claim, LaneClaim, LaneRecord, Owner};
pub use credits::Credit;
pub use facts::{Fact, FactKind, Reorg};
pub(crate) use groups::GroupFlow;
pub use records::{
    BatchItemRecord, BatchRecord, FlowKind, FlowRecord, FlowState, MAX_BLOB_BYTES, Purpose,
    SignatureRecord, StepRecord, blob,
};

/// The journal database. Thread-safe; every write is its own transaction, and the writes
/// that a promise rests on are fsync'd before they return. In SQLite on this machine, or
/// in PostgreSQL shared by several hosts ([`Journal::open_at`]): the same tables, the
/// same statements, each write serialised with every other host's.
#[derive(Debug)]
pub struct Journal {
    store: Store,
    /// How long an unsigned reservation holds, in seconds.
    lease_secs: i64,
    /// Where the time of the flows over this journal goes (its writes counted here).
    timing: crate::timing::Timing,
    /// The batch claims this process holds, by batch id: a write of a flow that is an
    /// item of such a batch checks its claim's fencing token in its own transaction.
    fences: std::sync::Mutex<std::collections::HashMap<String, Fence>>,
    /// How long a claim on a batch holds unless renewed ([`Journal::with_batch_lease`]).
    batch_lease: std::time::Duration,
    /// This host's label ([`Journal::with_host`]).
    host: String,
}

const SCHEMA: bridgectl_store::Schema = bridgectl_store::Schema {
    version: 9,
    sqlite: SCHEMA_SQL,
    sqlite_added_columns: &ADDED_COLUMNS,
    postgres: POSTGRES_SQL,
    namespace: "bridgectl_journal",
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
INSERT INTO batch_keys (item_key, batch_id, idx)
    SELECT item_id, batch_id, idx FROM batch_items
     WHERE item_id NOT GLOB 'line-[0-9]*' ORDER BY rowid
    ON CONFLICT (item_key) DO NOTHING;
-- Prepared batches given up (`batch abandon`): until then a prepared batch's
-- reservations hold past their lease, however long the air gap takes; after it they are
-- free, and a signed batch for it is refused.
CREATE TABLE IF NOT EXISTS abandoned_batches (
    batch_id TEXT PRIMARY KEY REFERENCES prepared_batches(batch_id),
    at       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS nonces_by_flow ON nonces(tx_id);
-- Version 8: who runs each sender's items of a batch (its lane), until when, and the
-- fencing token of that claim: a run whose claim another run took over (its lease ran
-- out) writes nothing more for those items.
CREATE TABLE IF NOT EXISTS batch_claims (
    batch_id TEXT NOT NULL REFERENCES batches(batch_id),
    sender   TEXT NOT NULL,
    owner    TEXT NOT NULL,
    fence    INTEGER NOT NULL,
    until_ms INTEGER NOT NULL,
    PRIMARY KEY (batch_id, sender)
);
-- Version 9: the newest flows (`Journal::list`) are the last N
-- entries of this index, not the whole journal sorted: the same cost at 100,000 flows as
-- at 10. (Its rowid, the tie-break, is in every index entry.)
CREATE INDEX IF NOT EXISTS flows_by_created ON flows(created_at);
";

/// The same tables in PostgreSQL, at [`SCHEMA`]'s version (a store made there starts at
/// it). Integers are `BIGINT`, and the tables SQLite orders by its implicit `rowid` have
/// one of their own.
const POSTGRES_SQL: &str = "
CREATE TABLE IF NOT EXISTS flows (
    tx_id      TEXT PRIMARY KEY,
    kind       TEXT NOT NULL,
    state      TEXT NOT NULL,
    from_addr  TEXT,
    intent     TEXT NOT NULL,
    raw_tx     TEXT,
    signed_tx  TEXT,
    tx_hash    TEXT,
    chain_id   BIGINT,
    nonce      TEXT,
    result     TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    ending     TEXT,
    host       TEXT,
    rowid      BIGSERIAL
);
CREATE TABLE IF NOT EXISTS steps (
    id     BIGSERIAL PRIMARY KEY,
    tx_id  TEXT NOT NULL REFERENCES flows(tx_id),
    at     TEXT NOT NULL,
    step   TEXT NOT NULL,
    detail TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS steps_by_flow ON steps(tx_id, id);
CREATE INDEX IF NOT EXISTS flows_by_created ON flows(created_at);
CREATE TABLE IF NOT EXISTS nonces (
    address     TEXT NOT NULL,
    chain_id    BIGINT NOT NULL,
    nonce       BIGINT NOT NULL,
    tx_id       TEXT NOT NULL REFERENCES flows(tx_id),
    reserved_at BIGINT NOT NULL,
    PRIMARY KEY (address, chain_id, nonce)
);
CREATE INDEX IF NOT EXISTS nonces_by_flow ON nonces(tx_id);
CREATE INDEX IF NOT EXISTS flows_by_hash ON flows(tx_hash);
CREATE INDEX IF NOT EXISTS flows_by_sender_nonce
    ON flows(from_addr, chain_id, (CAST(nonce AS BIGINT)));
CREATE TABLE IF NOT EXISTS batches (
    batch_id   TEXT PRIMARY KEY,
    source     TEXT NOT NULL,
    created_at TEXT NOT NULL,
    rowid      BIGSERIAL
);
CREATE TABLE IF NOT EXISTS batch_items (
    batch_id TEXT NOT NULL REFERENCES batches(batch_id),
    idx      BIGINT NOT NULL,
    item_id  TEXT NOT NULL,
    op       TEXT NOT NULL,
    tx_id    TEXT NOT NULL,
    attempt  BIGINT NOT NULL DEFAULT 1,
    PRIMARY KEY (batch_id, idx)
);
CREATE INDEX IF NOT EXISTS batch_items_by_tx ON batch_items(tx_id);
CREATE TABLE IF NOT EXISTS signatures (
    tx_hash   TEXT PRIMARY KEY,
    tx_id     TEXT NOT NULL REFERENCES flows(tx_id),
    purpose   TEXT NOT NULL,
    signed_tx TEXT NOT NULL,
    at        TEXT NOT NULL,
    rowid     BIGSERIAL
);
CREATE INDEX IF NOT EXISTS signatures_by_flow ON signatures(tx_id);
CREATE TABLE IF NOT EXISTS chains (
    chain_id    BIGINT PRIMARY KEY,
    genesis     TEXT NOT NULL,
    recorded_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS credits (
    chain_id  BIGINT NOT NULL,
    tx_hash   TEXT NOT NULL,
    log_index BIGINT NOT NULL,
    block     BIGINT NOT NULL,
    amount    TEXT NOT NULL,
    tx_id     TEXT NOT NULL REFERENCES flows(tx_id),
    at        TEXT NOT NULL,
    PRIMARY KEY (chain_id, tx_hash, log_index)
);
CREATE UNIQUE INDEX IF NOT EXISTS credits_by_flow ON credits(tx_id);
CREATE TABLE IF NOT EXISTS prepared_batches (
    batch_id     TEXT PRIMARY KEY REFERENCES batches(batch_id),
    request_hash TEXT NOT NULL,
    prepared_at  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS facts (
    tx_id      TEXT NOT NULL REFERENCES flows(tx_id),
    kind       TEXT NOT NULL,
    chain_id   BIGINT NOT NULL,
    tx_hash    TEXT NOT NULL,
    log_index  BIGINT,
    block      BIGINT NOT NULL,
    block_hash TEXT NOT NULL,
    final      BIGINT NOT NULL DEFAULT 0,
    seen_at    TEXT NOT NULL,
    PRIMARY KEY (tx_id, kind)
);
CREATE TABLE IF NOT EXISTS batch_keys (
    item_key TEXT PRIMARY KEY,
    batch_id TEXT NOT NULL REFERENCES batches(batch_id),
    idx      BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS abandoned_batches (
    batch_id TEXT PRIMARY KEY REFERENCES prepared_batches(batch_id),
    at       TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS batch_claims (
    batch_id TEXT NOT NULL REFERENCES batches(batch_id),
    sender   TEXT NOT NULL,
    owner    TEXT NOT NULL,
    fence    BIGINT NOT NULL,
    until_ms BIGINT NOT NULL,
    PRIMARY KEY (batch_id, sender)
);
";

/// Columns added to a SQLite table after it was first made, each with its declaration:
/// added once, when missing. (SQLite has no `ADD COLUMN IF NOT EXISTS`, and [`SCHEMA_SQL`]
/// runs again whenever the version goes up, so an `ALTER` in it would fail the second
/// time.) PostgreSQL's tables are made with them.
const ADDED_COLUMNS: [(&str, &str, &str); 2] = [
    // Version 6: the state a confirming flow ends in once its facts are final.
    ("flows", "ending", "TEXT"),
    // Version 8: the host that began the flow (on a journal several hosts share).
    ("flows", "host", "TEXT"),
];

/// How long a run's claim on a batch in a shared journal holds unless renewed
/// [default of [`Journal::with_batch_lease`]]: the longest another host waits to take a
/// batch over from a host that died or paused. Renewed every third of it.
pub const BATCH_LEASE: std::time::Duration = std::time::Duration::from_secs(60);

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
        Journal::open_at(Location::File(path.as_ref().to_path_buf()))
    }

    /// Opens (creating its tables if needed) the journal at `location`: a SQLite file
    /// (as [`Journal::open`]), or a PostgreSQL database that several hosts share (with
    /// the `postgres` feature). In PostgreSQL every write transaction is serialised with
    /// every other host's, so a nonce reserved, a batch item claimed or a credit taken
    /// on one host is held on all of them.
    pub fn open_at(location: Location) -> Result<Journal, Error> {
        if let Some(path) = location.file()
            && let Some(dir) = path.parent()
        {
            bridgectl_local::files::create_private_dir(dir).map_err(|source| {
                Error::JournalDir {
                    path: dir.display().to_string(),
                    source,
                }
            })?;
        }
        let store = Store::open(location.clone(), &SCHEMA).map_err(|source| Error::Journal {
            path: location.to_string(),
            source,
        })?;
        if let Some(path) = location.file() {
            // Best effort: the journal holds signed transactions (public once sent) and
            // intents, no secrets; 0600 keeps other users from reading what you did.
            let _ = bridgectl_local::files::restrict(path);
        }
        Ok(Journal::new(store))
    }

    /// A journal that lives as long as the value: for tests, and for embedders that
    /// keep their own records (nothing survives a crash, so `resume` has nothing to
    /// find).
    pub fn in_memory() -> Result<Journal, Error> {
        let store = Store::open(Location::Memory, &SCHEMA).map_err(|source| Error::Journal {
            path: ":memory:".into(),
            source,
        })?;
        Ok(Journal::new(store))
    }

    fn new(store: Store) -> Journal {
        Journal {
            store,
            lease_secs: RESERVATION_LEASE_SECS,
            timing: crate::timing::Timing::default(),
            fences: std::sync::Mutex::default(),
            batch_lease: BATCH_LEASE,
            host: default_host(),
        }
    }

    /// This host's label, recorded with every flow it begins and every batch lane it
    /// claims [default: the machine's host name]: on a journal several hosts share,
    /// what tells them apart in `history`, `batch status` and a held nonce's refusal.
    pub fn with_host(mut self, label: &str) -> Journal {
        if !label.is_empty() {
            self.host = label.to_owned();
        }
        self
    }

    /// This host's label ([`Journal::with_host`]).
    pub fn host(&self) -> &str {
        &self.host
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
        self.store.tidy();
    }

    /// Where the journal is: a file, or a PostgreSQL database (its URL shown without a
    /// password).
    pub fn location(&self) -> &Location {
        self.store.location()
    }

    /// Whether other hosts share it (PostgreSQL).
    pub fn is_shared(&self) -> bool {
        self.store.location().is_shared()
    }

    /// How long a reservation of a flow that has not signed holds
    /// [default: [`RESERVATION_LEASE_SECS`]]. Shorter frees an address sooner after a
    /// flow was abandoned at its prompt; a flow that outlives its lease at the prompt is
    /// refused when it is approved, never signed on an expired reservation.
    pub fn with_reservation_lease(mut self, lease: std::time::Duration) -> Journal {
        self.lease_secs = i64::try_from(lease.as_secs()).unwrap_or(i64::MAX).max(1);
        self
    }

    /// How long a run's claim on a batch in a shared journal holds unless renewed
    /// [default: [`BATCH_LEASE`]]: the longest another host waits before it takes over
    /// a batch whose host died or paused. Renewed every third of it while the run lives.
    pub fn with_batch_lease(mut self, lease: std::time::Duration) -> Journal {
        self.batch_lease = lease.max(std::time::Duration::from_secs(1));
        self
    }

    /// The time (Unix seconds) before which an unsigned reservation's lease has run out.
    fn lease_cutoff(&self) -> i64 {
        unix_now() - self.lease_secs
    }

    /// Runs `f` outside a transaction (reads; single statements).
    fn with<T>(
        &self,
        f: impl FnOnce(&mut dyn Conn) -> Result<T, bridgectl_store::Error>,
    ) -> Result<T, Error> {
        self.timed(|store| store.read(f))
    }

    /// Runs `f` in a write transaction, serialised with every other writer of the
    /// journal (other processes, other hosts): what it reads it reads as the one writer.
    fn write<T>(
        &self,
        f: impl FnOnce(&mut dyn Conn) -> Result<T, bridgectl_store::Error>,
    ) -> Result<T, Error> {
        self.timed(|store| store.write(f))
    }

    /// [`Journal::write`] for a write that a promise rests on: on disk, with every step
    /// before it, when this returns.
    fn write_durable<T>(
        &self,
        f: impl FnOnce(&mut dyn Conn) -> Result<T, bridgectl_store::Error>,
    ) -> Result<T, Error> {
        self.timed(|store| store.write_durable(f))
    }

    /// [`Journal::write`] (or, `durable`, [`Journal::write_durable`]) whose closure may
    /// refuse with a journal error of its own (a fenced claim): the transaction is rolled
    /// back and the refusal returned as it is.
    fn write_refusing<T>(
        &self,
        durable: bool,
        f: impl FnOnce(&mut dyn Conn) -> Result<T, Failure>,
    ) -> Result<T, Error> {
        let started = std::time::Instant::now();
        let result = if durable {
            self.store.write_durable(f)
        } else {
            self.store.write(f)
        };
        self.timing.journal_done(started);
        result.map_err(|failure| match failure {
            Failure::Store(source) => self.failed(source),
            Failure::Refused(e) => *e,
        })
    }

    fn timed<T>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, bridgectl_store::Error>,
    ) -> Result<T, Error> {
        let started = std::time::Instant::now();
        let result = f(&self.store);
        self.timing.journal_done(started);
        result.map_err(|source| self.failed(source))
    }

    fn failed(&self, source: bridgectl_store::Error) -> Error {
        Error::Journal {
            path: self.store.location().to_string(),
            source,
        }
    }
}

/// A claim on a batch this run holds, that the writes of the batch's flows are checked
/// against (see `claims`).
#[derive(Debug, Clone)]
pub(super) struct Fence {
    pub(super) batch_id: String,
    pub(super) sender: String,
    pub(super) token: i64,
    /// The flows this run wrote as the batch's items. One of them may stop being an item
    /// (a run that took the batch over bound the item to a fresh flow): its writes are
    /// still this claim's, and refused once the claim moved on.
    pub(super) items: std::collections::HashSet<String>,
}

/// Why a write that may refuse did not happen: its store failed, or it refused.
pub(super) enum Failure {
    Store(bridgectl_store::Error),
    Refused(Box<Error>),
}

impl From<bridgectl_store::Error> for Failure {
    fn from(e: bridgectl_store::Error) -> Failure {
        Failure::Store(e)
    }
}

/// The machine's host name, or `localhost` when it cannot be read.
fn default_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
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
    c: &mut dyn Conn,
    tx_id: &str,
    at: &str,
    step: &str,
    detail: &str,
) -> Result<(), bridgectl_store::Error> {
    c.execute(
        "INSERT INTO steps (tx_id, at, step, detail) VALUES (?1, ?2, ?3, ?4)",
        &[&tx_id, &at, &step, &detail],
    )
    .map(drop)
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
