//! The journal: every flow and each of its steps, in SQLite before the next step runs.
//!
//! The rule that matters most: a signed transaction is committed here (fsync'd, so it
//! survives a power cut) **before** it is submitted. That is the journal's one fsync on a
//! signing path; the steps before it commit without one and reach the disk with it. If the
//! process dies or the answer to the submission is lost, `resume` finds the same signed
//! bytes and sends them again; nothing ever signs a second transaction with a new nonce
//! on its own.

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use alloy_primitives::Address;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::Serialize;
use serde_json::Value;

use crate::Error;

/// The largest step detail or result stored as is: 64 KiB of JSON text. The platform's
/// raw `data` is journaled on every status change, and a server could make each one as
/// large as a response may be ([`crate::http::MAX_BODY_BYTES`]); a larger one is stored
/// as a marker with its size and the start of its text (see [`blob`]).
pub const MAX_BLOB_BYTES: usize = 64 * 1024;

/// How much of an oversized blob's text the marker keeps.
const TRUNCATED_HEAD_CHARS: usize = 1024;

/// `value` as stored: its JSON text, or for text over [`MAX_BLOB_BYTES`] the marker
/// `{"truncated": true, "bytes": <size>, "head": "<first 1024 characters>"}`, which is
/// still JSON, so every reader of the journal keeps working.
pub fn blob(value: &Value) -> String {
    let text = value.to_string();
    if text.len() <= MAX_BLOB_BYTES {
        return text;
    }
    serde_json::json!({
        "truncated": true,
        "bytes": text.len(),
        "head": text.chars().take(TRUNCATED_HEAD_CHARS).collect::<String>(),
    })
    .to_string()
}

/// Where a flow stands. Stored as lowercase text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FlowState {
    /// Recorded; nothing sent yet.
    Started,
    /// A transaction action was executed; its answer is recorded.
    Executed,
    /// The raw transaction passed every check against the intent.
    Verified,
    /// Signed; the signed bytes are in the journal and not yet known to be sent.
    Signed,
    /// The platform (or node) accepted the signed transaction.
    Submitted,
    /// Done: mined, redeemed, credited.
    Completed,
    /// Ended in failure; see the last step.
    Failed,
    /// Ended by its cancel: a 0-value self-transfer at its nonce was mined instead of
    /// its call (see [`Journal::record_replacement`]).
    Cancelled,
    /// Its chain was reset after it was journaled ([`Journal::reset_chain`]): whatever it
    /// signed belongs to a chain that no longer exists, holds no nonce, and is never sent
    /// again.
    Retired,
}

impl FlowState {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            FlowState::Started => "started",
            FlowState::Executed => "executed",
            FlowState::Verified => "verified",
            FlowState::Signed => "signed",
            FlowState::Submitted => "submitted",
            FlowState::Completed => "completed",
            FlowState::Failed => "failed",
            FlowState::Cancelled => "cancelled",
            FlowState::Retired => "retired",
        }
    }

    fn parse(text: &str) -> FlowState {
        match text {
            "started" => FlowState::Started,
            "executed" => FlowState::Executed,
            "verified" => FlowState::Verified,
            "signed" => FlowState::Signed,
            "submitted" => FlowState::Submitted,
            "completed" => FlowState::Completed,
            "cancelled" => FlowState::Cancelled,
            "retired" => FlowState::Retired,
            _ => FlowState::Failed,
        }
    }
}

/// Why a flow has a signature: its own call, or a deliberate replacement of it at the
/// same nonce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Purpose {
    /// The flow's first signature.
    Original,
    /// The same call again at a higher gas price (`bridgectl replace`).
    Replacement,
    /// A 0-value self-transfer that uses the nonce up instead (`bridgectl cancel`).
    Cancel,
}

impl Purpose {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Original => "original",
            Purpose::Replacement => "replacement",
            Purpose::Cancel => "cancel",
        }
    }

    fn parse(text: &str) -> Purpose {
        match text {
            "replacement" => Purpose::Replacement,
            "cancel" => Purpose::Cancel,
            _ => Purpose::Original,
        }
    }
}

/// One signature of a flow ([`Journal::signatures`]).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignatureRecord {
    /// The signed transaction's hash.
    pub tx_hash: String,
    /// Why it was signed.
    pub purpose: Purpose,
    /// The signed bytes, `0x`-hex.
    pub signed_tx: String,
}

/// What a flow is. Stored as kebab-case text; `resume` dispatches on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlowKind {
    /// ST redeemed into MT.
    Redeem,
    /// MT swapped into ST.
    Swap,
    /// A token transfer signed here.
    Transfer,
    /// A token transfer signed by the platform for a managed account.
    ManagedTransfer,
    /// A transaction action.
    Action,
    /// A signed bundle from the air gap, submitted.
    Submit,
    /// A signature made by the offline signer.
    Sign,
}

impl FlowKind {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            FlowKind::Redeem => "redeem",
            FlowKind::Swap => "swap",
            FlowKind::Transfer => "transfer",
            FlowKind::ManagedTransfer => "managed-transfer",
            FlowKind::Action => "action",
            FlowKind::Submit => "submit",
            FlowKind::Sign => "sign",
        }
    }

    fn parse(text: &str) -> Option<FlowKind> {
        [
            FlowKind::Redeem,
            FlowKind::Swap,
            FlowKind::Transfer,
            FlowKind::ManagedTransfer,
            FlowKind::Action,
            FlowKind::Submit,
            FlowKind::Sign,
        ]
        .into_iter()
        .find(|k| k.as_str() == text)
    }
}

impl std::fmt::Display for FlowKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One flow as recorded.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FlowRecord {
    /// The txId (UUID v4) that names the flow.
    pub tx_id: String,
    /// What the flow is.
    pub kind: FlowKind,
    /// Where it stands.
    pub state: FlowState,
    /// The signing account.
    pub from: Option<String>,
    /// What the user asked for.
    pub intent: Value,
    /// The raw transaction as received, if any.
    pub raw_tx: Option<Value>,
    /// The signed transaction, 0x hex, once signed.
    pub signed_tx: Option<String>,
    /// Its hash.
    pub tx_hash: Option<String>,
    /// Chain it is for.
    pub chain_id: Option<u64>,
    /// Its nonce.
    pub nonce: Option<u64>,
    /// The last result seen (e.g. the redemption record).
    pub result: Option<Value>,
    /// When the flow began (RFC 3339, UTC).
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
}

/// One step of a flow.
#[derive(Debug, Clone, Serialize)]
pub struct StepRecord {
    /// When (RFC 3339, UTC).
    pub at: String,
    /// What happened, e.g. `executed`, `verified`, `signed`, `submit-failed`.
    pub step: String,
    /// Details.
    pub detail: Value,
}

/// A batch as recorded: where its items came from and when.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchRecord {
    /// The batch id (UUID v4).
    pub batch_id: String,
    /// Where the items came from (a file name), for people.
    pub source: String,
    /// When it was created (RFC 3339, UTC).
    pub created_at: String,
    /// How many items it has (`itemCount` in JSON: a batch's status lists its `items`).
    #[serde(rename = "itemCount")]
    pub items: usize,
}

/// One item of a batch: what it asks for and the flow that carries it out now.
#[derive(Debug, Clone)]
pub struct BatchItemRecord {
    /// Position in the batch (0-based, the order of the input).
    pub index: usize,
    /// The item's id (from the input, or its line number).
    pub item_id: String,
    /// The operation, as the flows' batch module stores it.
    pub op: Value,
    /// The txId of its current flow: assigned when the batch is created, replaced when a
    /// flow that never signed is run again.
    pub tx_id: String,
    /// How many flows the item has had (1 unless a resume ran it again).
    pub attempt: u32,
    /// Its current flow, once begun.
    pub flow: Option<FlowRecord>,
}

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

const SCHEMA: bridgectl_sqlite::Schema = bridgectl_sqlite::Schema {
    version: 3,
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
";

/// The run lock of one batch (see [`Journal::lock_batch`]): released when dropped, or
/// when the process ends however it ends.
#[derive(Debug)]
pub struct BatchLock {
    _file: Option<std::fs::File>,
}

/// How long a reservation of a flow that has not signed holds: long enough for a person
/// to read the summary and type a passphrase, short enough that a flow interrupted at
/// its prompt does not block the address for long. A flow that signed holds its nonce
/// for good.
pub const RESERVATION_LEASE_SECS: i64 = 15 * 60;

/// The block 0 hash journaled for `chain_id`, read inside `c`.
fn genesis_in(c: &Connection, chain_id: u64) -> rusqlite::Result<Option<String>> {
    c.query_row(
        "SELECT genesis FROM chains WHERE chain_id = ?1",
        params![chain_id as i64],
        |r| r.get(0),
    )
    .optional()
}

/// The highest nonce that holds for sender `?1` on chain `?2`, flow `?3` aside (lease
/// cut-off `?4`): a reservation that holds, or a signed flow. Each side walks its index
/// down from the highest nonce and stops at the first that counts (almost always the
/// first it meets), so a signature costs the same in a journal of ten flows or ten
/// thousand.
fn next_nonce_sql() -> String {
    format!(
        "SELECT MAX(n) FROM (
         SELECT (SELECT r.nonce FROM nonces r JOIN flows f ON f.tx_id = r.tx_id
                  WHERE r.address = ?1 AND r.chain_id = ?2 AND r.tx_id != ?3 AND {}
                  ORDER BY r.nonce DESC LIMIT 1) AS n
         UNION ALL
         SELECT (SELECT CAST(nonce AS INTEGER) FROM flows
                  WHERE from_addr = ?1 COLLATE NOCASE AND chain_id = ?2
                    AND signed_tx IS NOT NULL AND state != 'retired' AND tx_id != ?3
                  ORDER BY CAST(nonce AS INTEGER) DESC LIMIT 1))",
        holds("?4")
    )
}

/// The SQL condition (over `nonces r JOIN flows f`, with the lease cut-off bound as
/// parameter `cutoff`, e.g. `?4`) under which a reservation holds.
fn holds(cutoff: &str) -> String {
    format!(
        "(f.state != 'retired' AND (f.signed_tx IS NOT NULL \
          OR (f.state != 'failed' AND r.reserved_at > {cutoff})))"
    )
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
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

impl Journal {
    /// Opens (creating if needed) the journal at `path`: directory 0700, file 0600,
    /// WAL. Steps commit without an fsync (they survive a crash of the process; a power
    /// cut can lose only the last of them, together with everything after); the record
    /// of a signature ([`Journal::record_signed`]) and of a batch are fsync'd before
    /// they return, and carry every earlier step to disk with them (see
    /// `bridgectl_sqlite`).
    pub fn open(path: impl AsRef<Path>) -> Result<Journal, Error> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent() {
            create_private_dir(dir).map_err(|source| Error::JournalDir {
                path: dir.display().to_string(),
                source,
            })?;
        }
        let conn = bridgectl_sqlite::open(&path, &SCHEMA).map_err(|source| Error::Journal {
            path: path.display().to_string(),
            source,
        })?;
        restrict_file(&path);
        Ok(Journal::new(conn, path))
    }

    /// A journal that lives as long as the value: for tests, and for embedders that
    /// keep their own records (nothing survives a crash, so `resume` has nothing to
    /// find).
    pub fn in_memory() -> Result<Journal, Error> {
        let conn = bridgectl_sqlite::open_in_memory(&SCHEMA).map_err(|source| Error::Journal {
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
    /// has grown past its bound (best effort; see `bridgectl_sqlite::tidy`). Runs when
    /// the journal is dropped; a long run (a batch) calls it between items, never
    /// between a signature's record and its submission.
    pub fn tidy(&self) {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let _ = bridgectl_sqlite::tidy(&conn);
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

    /// Checks, right before flow `tx_id` signs, that it still holds its reservation of
    /// `nonce`: no other flow took it over, and its lease has a tenth of its length
    /// left (so it cannot run out while the signature is made and journaled). A flow
    /// that waited at its prompt past its lease is refused here, whether or not another
    /// flow has signed the nonce meanwhile: its nonce must be checked again.
    pub fn hold_reservation(
        &self,
        tx_id: &str,
        address: Address,
        chain_id: u64,
        nonce: u64,
    ) -> Result<(), Error> {
        let row: Option<(String, i64)> = self.with(|c| {
            c.query_row(
                "SELECT tx_id, reserved_at FROM nonces
                  WHERE address = ?1 AND chain_id = ?2 AND nonce = ?3",
                params![address.to_string(), chain_id as i64, nonce as i64],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
        })?;
        match row {
            Some((holder, reserved_at)) if holder == tx_id => {
                let left = reserved_at + self.lease_secs - unix_now();
                if left <= self.lease_secs / 10 {
                    return Err(Error::LeaseExpired {
                        tx_id: tx_id.to_owned(),
                        nonce,
                        lease_secs: self.lease_secs.unsigned_abs(),
                    });
                }
                Ok(())
            }
            Some((by, _)) => Err(Error::NonceReserved {
                address,
                chain_id,
                nonce,
                by,
            }),
            None => Err(Error::LeaseExpired {
                tx_id: tx_id.to_owned(),
                nonce,
                lease_secs: self.lease_secs.unsigned_abs(),
            }),
        }
    }

    /// Takes the run lock of batch `batch_id`: held while the returned guard lives, by
    /// one process at a time (an OS file lock, so a process that dies releases it). A
    /// second run or resume of a batch that is running is refused, so it cannot take
    /// over the live flows of the first.
    pub fn lock_batch(&self, batch_id: &str) -> Result<BatchLock, Error> {
        if self.path == Path::new(":memory:") {
            return Ok(BatchLock { _file: None });
        }
        let dir = self.path.with_extension("batch-locks");
        create_private_dir(&dir).map_err(|source| Error::JournalDir {
            path: dir.display().to_string(),
            source,
        })?;
        let path = dir.join(format!("{batch_id}.lock"));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(|source| Error::JournalDir {
                path: path.display().to_string(),
                source,
            })?;
        match file.try_lock() {
            Ok(()) => Ok(BatchLock { _file: Some(file) }),
            Err(std::fs::TryLockError::WouldBlock) => Err(Error::BatchRunning {
                batch_id: batch_id.to_owned(),
                lock: path.display().to_string(),
            }),
            Err(std::fs::TryLockError::Error(source)) => Err(Error::JournalDir {
                path: path.display().to_string(),
                source,
            }),
        }
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
        self.with(|c| bridgectl_sqlite::durable(c, |e| e, f))
    }

    /// Records a new flow and its first step.
    pub fn begin(
        &self,
        tx_id: &str,
        kind: FlowKind,
        from: Option<&str>,
        intent: &Value,
    ) -> Result<(), Error> {
        self.with(|c| {
            let t = c.transaction()?;
            insert_flow(&t, tx_id, kind, from, intent)?;
            t.commit()
        })
    }

    /// [`Journal::begin`], [`Journal::record_raw_tx`] and [`Journal::reserve_nonce`] of
    /// `raw_tx`'s nonce in one commit, for a flow whose transaction is known and
    /// verified when it begins (the offline signer's): one write instead of three.
    pub fn begin_reserved(
        &self,
        tx_id: &str,
        kind: FlowKind,
        intent: &Value,
        raw_tx: &bridgectl_tx::RawTx,
    ) -> Result<(), Error> {
        let from = raw_tx.from.to_string();
        let raw = serde_json::to_value(raw_tx).unwrap_or_default();
        self.reserve_after(tx_id, raw_tx.from, raw_tx.chain_id, raw_tx.nonce, |t| {
            insert_flow(t, tx_id, kind, Some(&from), intent)?;
            set_raw_tx(t, tx_id, &raw)
        })
    }

    /// Records a step and moves the flow to `state`.
    pub fn step(
        &self,
        tx_id: &str,
        state: FlowState,
        step: &str,
        detail: &Value,
    ) -> Result<(), Error> {
        let at = now();
        self.with(|c| {
            let t = c.transaction()?;
            let n = t.execute(
                "UPDATE flows SET state = ?2, updated_at = ?3 WHERE tx_id = ?1",
                params![tx_id, state.as_str(), at],
            )?;
            if n == 0 {
                return Err(rusqlite::Error::QueryReturnedNoRows);
            }
            t.execute(
                "INSERT INTO steps (tx_id, at, step, detail) VALUES (?1, ?2, ?3, ?4)",
                params![tx_id, at, step, blob(detail)],
            )?;
            t.commit()
        })
    }

    /// Records a step without changing the state (progress, retries, errors on the way).
    pub fn note(&self, tx_id: &str, step: &str, detail: &Value) -> Result<(), Error> {
        let at = now();
        self.with(|c| {
            c.execute(
                "INSERT INTO steps (tx_id, at, step, detail) VALUES (?1, ?2, ?3, ?4)",
                params![tx_id, at, step, blob(detail)],
            )
            .map(|_| ())
        })
    }

    /// Records the raw transaction as received from the platform.
    pub fn record_raw_tx(&self, tx_id: &str, raw_tx: &Value) -> Result<(), Error> {
        self.with(|c| {
            let t = c.transaction()?;
            set_raw_tx(&t, tx_id, raw_tx)?;
            t.commit()
        })
    }

    /// Records a result seen on the way (e.g. a redemption record whose status changed)
    /// with a step, in one commit; `state` moves the flow when given.
    pub fn observe(
        &self,
        tx_id: &str,
        state: Option<FlowState>,
        step: &str,
        result: &Value,
    ) -> Result<(), Error> {
        let at = now();
        self.with(|c| {
            let t = c.transaction()?;
            let n = match state {
                Some(s) => t.execute(
                    "UPDATE flows SET result = ?2, state = ?3, updated_at = ?4 WHERE tx_id = ?1",
                    params![tx_id, blob(result), s.as_str(), at],
                )?,
                None => t.execute(
                    "UPDATE flows SET result = ?2, updated_at = ?3 WHERE tx_id = ?1",
                    params![tx_id, blob(result), at],
                )?,
            };
            if n == 0 {
                return Err(rusqlite::Error::QueryReturnedNoRows);
            }
            t.execute(
                "INSERT INTO steps (tx_id, at, step, detail) VALUES (?1, ?2, ?3, ?4)",
                params![tx_id, at, step, blob(result)],
            )?;
            t.commit()
        })
    }

    /// Records the signed transaction. Durable when this returns (the one fsync of the
    /// journal on a signing path): only then may it be submitted.
    pub fn record_signed(&self, tx_id: &str, signed: &bridgectl_tx::SignedTx) -> Result<(), Error> {
        let at = now();
        let hex = format!("0x{}", hex::encode(&signed.raw));
        let hash = signed.hash.to_string();
        self.with_durable(|c| {
            let t = c.transaction()?;
            t.execute(
                "UPDATE flows SET signed_tx = ?2, tx_hash = ?3, chain_id = ?4, nonce = ?5,
                        state = 'signed', updated_at = ?6 WHERE tx_id = ?1",
                params![
                    tx_id,
                    hex,
                    hash,
                    signed.chain_id as i64,
                    signed.nonce.to_string(),
                    at
                ],
            )?;
            t.execute(
                "INSERT INTO steps (tx_id, at, step, detail) VALUES (?1, ?2, 'signed', ?3)",
                params![
                    tx_id,
                    at,
                    serde_json::json!({"txHash": hash, "chainId": signed.chain_id,
                                       "nonce": signed.nonce})
                    .to_string()
                ],
            )?;
            t.commit()
        })
    }

    /// Records a deliberate replacement of flow `tx_id`'s signed transaction at the same
    /// nonce (`purpose`: a re-priced call or a cancel). Both stay known: the earlier
    /// signatures move to the flow's [`Journal::signatures`], the new bytes become the
    /// ones `resume` sends. Durable when this returns, like [`Journal::record_signed`].
    pub fn record_replacement(
        &self,
        tx_id: &str,
        signed: &bridgectl_tx::SignedTx,
        purpose: Purpose,
    ) -> Result<(), Error> {
        let at = now();
        let hex = format!("0x{}", hex::encode(&signed.raw));
        let hash = signed.hash.to_string();
        self.with_durable(|c| {
            let t = c.transaction()?;
            let (replaced, old_tx): (Option<String>, Option<String>) = t.query_row(
                "SELECT tx_hash, signed_tx FROM flows WHERE tx_id = ?1",
                params![tx_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let (Some(replaced), Some(old_tx)) = (replaced, old_tx) else {
                return Err(rusqlite::Error::QueryReturnedNoRows);
            };
            // The first replacement keeps the original too.
            t.execute(
                "INSERT OR IGNORE INTO signatures (tx_hash, tx_id, purpose, signed_tx, at)
                 VALUES (?1, ?2, 'original', ?3, ?4)",
                params![replaced, tx_id, old_tx, at],
            )?;
            t.execute(
                "INSERT OR IGNORE INTO signatures (tx_hash, tx_id, purpose, signed_tx, at)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![hash, tx_id, purpose.as_str(), hex, at],
            )?;
            t.execute(
                "UPDATE flows SET signed_tx = ?2, tx_hash = ?3, state = 'signed', updated_at = ?4
                  WHERE tx_id = ?1",
                params![tx_id, hex, hash, at],
            )?;
            t.execute(
                "INSERT INTO steps (tx_id, at, step, detail) VALUES (?1, ?2, ?3, ?4)",
                params![
                    tx_id,
                    at,
                    format!("{}-signed", purpose.as_str()),
                    serde_json::json!({"txHash": hash, "replaces": replaced,
                                       "nonce": signed.nonce})
                    .to_string()
                ],
            )?;
            t.commit()
        })
    }

    /// Every signature of flow `tx_id` that may be mined, oldest first: the original and
    /// each replacement when it was replaced, else its one signed transaction (none
    /// before it signed).
    pub fn signatures(&self, tx_id: &str) -> Result<Vec<SignatureRecord>, Error> {
        let rows: Vec<SignatureRecord> = self.with(|c| {
            let mut stmt = c.prepare(
                "SELECT tx_hash, purpose, signed_tx FROM signatures WHERE tx_id = ?1 ORDER BY rowid",
            )?;
            stmt.query_map(params![tx_id], |r| {
                Ok(SignatureRecord {
                    tx_hash: r.get(0)?,
                    purpose: Purpose::parse(&r.get::<_, String>(1)?),
                    signed_tx: r.get(2)?,
                })
            })?
            .collect()
        })?;
        if !rows.is_empty() {
            return Ok(rows);
        }
        let flow = self.get(tx_id)?;
        Ok(match (flow.tx_hash, flow.signed_tx) {
            (Some(tx_hash), Some(signed_tx)) => vec![SignatureRecord {
                tx_hash,
                purpose: Purpose::Original,
                signed_tx,
            }],
            _ => Vec::new(),
        })
    }

    /// The flow that holds `nonce` of `address` on `chain_id`: the one that signed it, or
    /// the one whose reservation of it still holds. What a refusal of that nonce names,
    /// so the person knows which flow to resume, replace or cancel.
    pub fn nonce_holder(
        &self,
        address: Address,
        chain_id: u64,
        nonce: u64,
    ) -> Result<Option<FlowRecord>, Error> {
        self.with(|c| {
            c.query_row(
                &format!(
                    "SELECT {COLUMNS} FROM flows WHERE tx_id IN (
                     SELECT tx_id FROM flows
                      WHERE from_addr = ?1 COLLATE NOCASE AND chain_id = ?2
                        AND signed_tx IS NOT NULL AND state != 'retired'
                        AND CAST(nonce AS INTEGER) = ?3
                     UNION ALL
                     SELECT r.tx_id FROM nonces r JOIN flows f ON f.tx_id = r.tx_id
                      WHERE r.address = ?1 AND r.chain_id = ?2 AND r.nonce = ?3 AND {})
                     ORDER BY created_at LIMIT 1",
                    holds("?4")
                ),
                params![
                    address.to_string(),
                    chain_id as i64,
                    nonce as i64,
                    unix_now() - self.lease_secs
                ],
                row_to_record,
            )
            .optional()
        })
    }

    /// Checks that chain `chain_id`'s block 0 is `genesis`, the one its flows here were
    /// journaled on; the first time a chain is seen, records it. A different block 0 is
    /// [`Error::ChainReset`]: the chain was reset (or another chain took its id), and
    /// the journal's nonces for it would refuse or misplace every transaction.
    pub fn check_chain(&self, chain_id: u64, genesis: alloy_primitives::B256) -> Result<(), Error> {
        let found = genesis.to_string();
        // Read without a lock: once recorded (every run but a chain's first), nothing is
        // written, and no other writer waits on this.
        let journaled: Option<String> = self.with(|c| match genesis_in(c, chain_id)? {
            Some(j) => Ok(Some(j)),
            None => {
                // Another process may record it at the same time: the first one counts.
                c.execute(
                    "INSERT OR IGNORE INTO chains (chain_id, genesis, recorded_at)
                     VALUES (?1, ?2, ?3)",
                    params![chain_id as i64, found, now()],
                )?;
                genesis_in(c, chain_id)
            }
        })?;
        match journaled {
            Some(j) if !j.eq_ignore_ascii_case(&found) => Err(Error::ChainReset {
                chain_id,
                journaled: j,
                found,
            }),
            _ => Ok(()),
        }
    }

    /// The block 0 hash chain `chain_id`'s flows were journaled on, if recorded.
    pub fn chain_genesis(&self, chain_id: u64) -> Result<Option<String>, Error> {
        self.with(|c| genesis_in(c, chain_id))
    }

    /// The flows on chain `chain_id` that [`Journal::reset_chain`] would retire: every
    /// one not retired already.
    pub fn flows_on_chain(&self, chain_id: u64) -> Result<Vec<FlowRecord>, Error> {
        self.with(|c| {
            let mut stmt = c.prepare(&format!(
                "SELECT {COLUMNS} FROM flows WHERE state != 'retired' AND (chain_id = ?1
                    OR tx_id IN (SELECT tx_id FROM nonces WHERE chain_id = ?1))
                  ORDER BY created_at"
            ))?;
            stmt.query_map(params![chain_id as i64], row_to_record)?
                .collect()
        })
    }

    /// After chain `chain_id` was reset (its block 0 is now `genesis`): retires its flows
    /// (each keeps its record and gets a `chain-reset` step; none holds a nonce or is sent
    /// again), drops their nonce reservations, and records the new block 0, in one
    /// durable transaction. Returns the retired flows' txIds.
    pub fn reset_chain(
        &self,
        chain_id: u64,
        genesis: alloy_primitives::B256,
    ) -> Result<Vec<String>, Error> {
        let at = now();
        let retired = self.flows_on_chain(chain_id)?;
        let ids: Vec<(String, &'static str)> = retired
            .into_iter()
            .map(|f| (f.tx_id, f.state.as_str()))
            .collect();
        self.with_durable(|c| {
            let t = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let before = genesis_in(&t, chain_id)?;
            for (id, state_before) in &ids {
                // How it stood on the old chain (completed there, or not) stays on record.
                let detail = serde_json::json!({"chainId": chain_id, "genesisBefore": before,
                                                "genesis": genesis.to_string(),
                                                "stateBefore": state_before})
                .to_string();
                t.execute(
                    "UPDATE flows SET state = 'retired', updated_at = ?2 WHERE tx_id = ?1",
                    params![id, at],
                )?;
                t.execute(
                    "INSERT INTO steps (tx_id, at, step, detail) VALUES (?1, ?2, 'chain-reset', ?3)",
                    params![id, at, detail],
                )?;
            }
            t.execute("DELETE FROM nonces WHERE chain_id = ?1", params![chain_id as i64])?;
            t.execute(
                "INSERT OR REPLACE INTO chains (chain_id, genesis, recorded_at) VALUES (?1, ?2, ?3)",
                params![chain_id as i64, genesis.to_string(), at],
            )?;
            t.commit()
        })?;
        Ok(ids.into_iter().map(|(id, _)| id).collect())
    }

    /// Records the last result seen (e.g. a redemption record).
    pub fn record_result(&self, tx_id: &str, result: &Value) -> Result<(), Error> {
        self.with(|c| {
            c.execute(
                "UPDATE flows SET result = ?2, updated_at = ?3 WHERE tx_id = ?1",
                params![tx_id, blob(result), now()],
            )
            .map(|_| ())
        })
    }

    /// One past the highest nonce of `address` on `chain_id` that a flow here holds: the
    /// floor under every nonce signed next. `None` when there is none.
    ///
    /// A flow that **signed** holds its nonce for good, whatever became of it later (a
    /// platform that reports a redemption "failed" must not free the nonce of a
    /// transaction that can still be mined: the next flow would sign a second one). A
    /// flow that reserved and has not signed holds it while it is alive: not failed, and
    /// reserved less than [`RESERVATION_LEASE_SECS`] ago (a flow interrupted at its
    /// prompt must not block the address forever). Flows signed before reservations
    /// existed count too. The flow `except` (the one about to sign) does not count
    /// against itself.
    pub fn next_nonce(
        &self,
        address: Address,
        chain_id: u64,
        except: Option<&str>,
    ) -> Result<Option<u64>, Error> {
        let addr = address.to_string();
        let except = except.unwrap_or("");
        let highest: Option<i64> = self.with(|c| {
            c.prepare_cached(&next_nonce_sql())?.query_row(
                params![addr, chain_id as i64, except, unix_now() - self.lease_secs],
                |r| r.get(0),
            )
        })?;
        Ok(highest.map(|n| n as u64 + 1))
    }

    /// Reserves `nonce` of `address` on `chain_id` for flow `tx_id`, so that no other
    /// flow (in this process or another) signs the same nonce. A reservation that no
    /// longer holds (see [`Journal::next_nonce`]: its flow failed before signing, or
    /// never signed within the lease) is taken over; one that holds is a refusal naming
    /// its flow.
    pub fn reserve_nonce(
        &self,
        tx_id: &str,
        address: Address,
        chain_id: u64,
        nonce: u64,
    ) -> Result<(), Error> {
        self.reserve_after(tx_id, address, chain_id, nonce, |_| Ok(()))
    }

    /// One `IMMEDIATE` transaction that runs `first`, then reserves the nonce, and
    /// commits both only if the reservation was granted; otherwise a refusal naming the
    /// flow that holds the nonce, and nothing written.
    fn reserve_after(
        &self,
        tx_id: &str,
        address: Address,
        chain_id: u64,
        nonce: u64,
        first: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<()>,
    ) -> Result<(), Error> {
        let holder = self.with(|c| {
            let t = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            first(&t)?;
            let holder = self.reserve_in(&t, tx_id, address, chain_id, nonce)?;
            if holder.is_none() {
                t.commit()?;
            }
            Ok(holder)
        })?;
        match holder {
            None => Ok(()),
            Some(by) => Err(Error::NonceReserved {
                address,
                chain_id,
                nonce,
                by,
            }),
        }
    }

    /// The reservation inside `t` (which must be `IMMEDIATE`): the flow that holds
    /// the nonce, if another does; otherwise the nonce is reserved for `tx_id`.
    fn reserve_in(
        &self,
        t: &rusqlite::Transaction<'_>,
        tx_id: &str,
        address: Address,
        chain_id: u64,
        nonce: u64,
    ) -> rusqlite::Result<Option<String>> {
        let addr = address.to_string();
        let now = unix_now();
        let holder: Option<String> = t
            .query_row(
                &format!(
                    "SELECT r.tx_id FROM nonces r JOIN flows f ON f.tx_id = r.tx_id
                      WHERE r.address = ?1 AND r.chain_id = ?2 AND r.nonce = ?3
                        AND r.tx_id != ?4 AND {}",
                    holds("?5")
                ),
                params![
                    addr,
                    chain_id as i64,
                    nonce as i64,
                    tx_id,
                    now - self.lease_secs
                ],
                |r| r.get(0),
            )
            .optional()?;
        if holder.is_some() {
            return Ok(holder);
        }
        t.execute(
            "INSERT OR REPLACE INTO nonces (address, chain_id, nonce, tx_id, reserved_at)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![addr, chain_id as i64, nonce as i64, tx_id, now],
        )?;
        t.execute(
            "INSERT INTO steps (tx_id, at, step, detail) VALUES (?1, ?2, 'nonce-reserved', ?3)",
            params![
                tx_id,
                self::now(),
                serde_json::json!({"nonce": nonce, "chainId": chain_id}).to_string()
            ],
        )?;
        Ok(None)
    }

    /// One flow.
    pub fn get(&self, tx_id: &str) -> Result<FlowRecord, Error> {
        self.with(|c| {
            c.query_row(
                &format!("SELECT {COLUMNS} FROM flows WHERE tx_id = ?1"),
                params![tx_id],
                row_to_record,
            )
            .optional()
        })?
        .ok_or_else(|| Error::NotInJournal(tx_id.to_owned()))
    }

    /// The flow that holds the signed bytes whose hash is `tx_hash`, if one does.
    pub fn signed_with_hash(
        &self,
        tx_hash: alloy_primitives::B256,
    ) -> Result<Option<FlowRecord>, Error> {
        self.with(|c| {
            c.query_row(
                &format!(
                    "SELECT {COLUMNS} FROM flows WHERE tx_hash = ?1 AND signed_tx IS NOT NULL \
                     ORDER BY created_at LIMIT 1"
                ),
                params![tx_hash.to_string()],
                row_to_record,
            )
            .optional()
        })
    }

    /// The flow `query` names: its txId, the hash of a transaction it signed (`0x` and
    /// 64 hex digits), or a start of its txId that names one flow only
    /// ([`Error::AmbiguousTxId`] otherwise). The one way a flow is named, so that every
    /// command that takes one takes all three.
    pub fn find(&self, query: &str) -> Result<FlowRecord, Error> {
        if let Ok(rec) = self.get(query) {
            return Ok(rec);
        }
        if let Some(hash) = query
            .strip_prefix("0x")
            .filter(|h| h.len() == 64)
            .and_then(|_| query.parse::<alloy_primitives::B256>().ok())
        {
            if let Some(rec) = self.signed_with_hash(hash)? {
                return Ok(rec);
            }
            // A replaced flow's earlier signatures name it too.
            let tx_id: Option<String> = self.with(|c| {
                c.query_row(
                    "SELECT tx_id FROM signatures WHERE tx_hash = ?1",
                    params![hash.to_string()],
                    |r| r.get(0),
                )
                .optional()
            })?;
            return match tx_id {
                Some(tx_id) => self.get(&tx_id),
                None => Err(Error::NotInJournal(query.to_owned())),
            };
        }
        let prefix = query;
        // Only hex digits and dashes can be part of a txId: nothing else reaches LIKE.
        if prefix.is_empty() || !prefix.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            return Err(Error::NotInJournal(prefix.to_owned()));
        }
        let found: Vec<FlowRecord> = self.with(|c| {
            let mut stmt = c.prepare(&format!(
                "SELECT {COLUMNS} FROM flows WHERE tx_id LIKE ?1 || '%' ORDER BY created_at LIMIT 3"
            ))?;
            stmt.query_map(params![prefix], row_to_record)?.collect()
        })?;
        match found.len() {
            0 => Err(Error::NotInJournal(prefix.to_owned())),
            1 => Ok(found.into_iter().next().expect("one")),
            _ => Err(Error::AmbiguousTxId {
                prefix: prefix.to_owned(),
                matches: found.into_iter().map(|f| f.tx_id).collect(),
            }),
        }
    }

    /// The most recent flows, newest first.
    pub fn list(&self, limit: usize) -> Result<Vec<FlowRecord>, Error> {
        self.with(|c| {
            let mut stmt = c.prepare(&format!(
                "SELECT {COLUMNS} FROM flows ORDER BY created_at DESC, rowid DESC LIMIT ?1"
            ))?;
            let rows = stmt.query_map(params![limit as i64], row_to_record)?;
            rows.collect()
        })
    }

    /// The steps of one flow, oldest first.
    pub fn steps(&self, tx_id: &str) -> Result<Vec<StepRecord>, Error> {
        self.with(|c| {
            let mut stmt =
                c.prepare("SELECT at, step, detail FROM steps WHERE tx_id = ?1 ORDER BY id")?;
            let rows = stmt.query_map(params![tx_id], |r| {
                let detail: String = r.get(2)?;
                Ok(StepRecord {
                    at: r.get(0)?,
                    step: r.get(1)?,
                    detail: serde_json::from_str(&detail).unwrap_or(Value::String(detail)),
                })
            })?;
            rows.collect()
        })
    }
}

/// Batches: one record with its items, each bound to the txId of the flow that carries it
/// out, so that a batch interrupted anywhere can be finished from the journal alone.
impl Journal {
    /// Records batch `batch_id` with its items `(item id, operation, txId)` in one
    /// transaction: either the whole batch is known or none of it. Durable when this
    /// returns (one fsync per batch), so a batch id once printed is never lost.
    pub fn create_batch(
        &self,
        batch_id: &str,
        source: &str,
        items: &[(String, Value, String)],
    ) -> Result<(), Error> {
        let at = now();
        self.with_durable(|c| {
            let t = c.transaction()?;
            t.execute(
                "INSERT INTO batches (batch_id, source, created_at) VALUES (?1, ?2, ?3)",
                params![batch_id, source, at],
            )?;
            {
                let mut insert = t.prepare(
                    "INSERT INTO batch_items (batch_id, idx, item_id, op, tx_id)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )?;
                for (idx, (item_id, op, tx_id)) in items.iter().enumerate() {
                    insert.execute(params![
                        batch_id,
                        idx as i64,
                        item_id,
                        op.to_string(),
                        tx_id
                    ])?;
                }
            }
            t.commit()
        })
    }

    /// The batch whose id is `prefix` or starts with it.
    pub fn find_batch(&self, prefix: &str) -> Result<BatchRecord, Error> {
        if prefix.is_empty() || !prefix.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            return Err(Error::NoSuchBatch(prefix.to_owned()));
        }
        let found: Vec<BatchRecord> = self.with(|c| {
            let mut stmt = c.prepare(
                "SELECT b.batch_id, b.source, b.created_at,
                        (SELECT COUNT(*) FROM batch_items i WHERE i.batch_id = b.batch_id)
                   FROM batches b WHERE b.batch_id LIKE ?1 || '%' ORDER BY b.created_at LIMIT 3",
            )?;
            stmt.query_map(params![prefix], row_to_batch)?.collect()
        })?;
        if let Some(exact) = found.iter().find(|b| b.batch_id == prefix) {
            return Ok(exact.clone());
        }
        match found.len() {
            0 => Err(Error::NoSuchBatch(prefix.to_owned())),
            1 => Ok(found.into_iter().next().expect("one")),
            _ => Err(Error::AmbiguousTxId {
                prefix: prefix.to_owned(),
                matches: found.into_iter().map(|b| b.batch_id).collect(),
            }),
        }
    }

    /// The most recent batches, newest first.
    pub fn list_batches(&self, limit: usize) -> Result<Vec<BatchRecord>, Error> {
        self.with(|c| {
            let mut stmt = c.prepare(
                "SELECT b.batch_id, b.source, b.created_at,
                        (SELECT COUNT(*) FROM batch_items i WHERE i.batch_id = b.batch_id)
                   FROM batches b ORDER BY b.created_at DESC, b.rowid DESC LIMIT ?1",
            )?;
            stmt.query_map(params![limit as i64], row_to_batch)?
                .collect()
        })
    }

    /// The items of batch `batch_id` in input order, each with its current flow.
    pub fn batch_items(&self, batch_id: &str) -> Result<Vec<BatchItemRecord>, Error> {
        let columns = COLUMNS
            .split(", ")
            .map(|c| format!("f.{}", c.trim()))
            .collect::<Vec<_>>()
            .join(", ");
        self.with(|c| {
            let mut stmt = c.prepare(&format!(
                "SELECT i.idx, i.item_id, i.op, i.tx_id, i.attempt, f.tx_id IS NOT NULL, {columns}
                   FROM batch_items i LEFT JOIN flows f ON f.tx_id = i.tx_id
                  WHERE i.batch_id = ?1 ORDER BY i.idx"
            ))?;
            stmt.query_map(params![batch_id], |r| {
                let op: String = r.get(2)?;
                let has_flow: bool = r.get(5)?;
                Ok(BatchItemRecord {
                    index: r.get::<_, i64>(0)? as usize,
                    item_id: r.get(1)?,
                    op: serde_json::from_str(&op).unwrap_or(Value::String(op)),
                    tx_id: r.get(3)?,
                    attempt: r.get::<_, i64>(4)? as u32,
                    flow: if has_flow {
                        Some(row_to_record_at(r, 6)?)
                    } else {
                        None
                    },
                })
            })?
            .collect()
        })
    }

    /// Binds item `index` of batch `batch_id` to a new flow `tx_id` (its next attempt).
    /// The flow it had before must have ended without signing: marked failed here (in
    /// the same transaction) if it had not, which also frees its nonce reservation.
    pub fn retry_batch_item(
        &self,
        batch_id: &str,
        index: usize,
        old_tx_id: &str,
        tx_id: &str,
    ) -> Result<(), Error> {
        let at = now();
        self.with(|c| {
            let t = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let abandoned = t.execute(
                "UPDATE flows SET state = 'failed', updated_at = ?2
                  WHERE tx_id = ?1 AND signed_tx IS NULL AND state NOT IN ('failed', 'completed')",
                params![old_tx_id, at],
            )?;
            if abandoned > 0 {
                t.execute(
                    "INSERT INTO steps (tx_id, at, step, detail) VALUES (?1, ?2, 'abandoned', ?3)",
                    params![
                        old_tx_id,
                        at,
                        serde_json::json!({"reason": "the batch was interrupted before this \
                            flow signed; its item runs again", "next": tx_id})
                        .to_string()
                    ],
                )?;
            }
            t.execute(
                "UPDATE batch_items SET tx_id = ?3, attempt = attempt + 1
                  WHERE batch_id = ?1 AND idx = ?2",
                params![batch_id, index as i64, tx_id],
            )?;
            t.commit()
        })
    }
}

/// Inserts flow `tx_id` with its first step.
fn insert_flow(
    t: &rusqlite::Transaction<'_>,
    tx_id: &str,
    kind: FlowKind,
    from: Option<&str>,
    intent: &Value,
) -> rusqlite::Result<()> {
    let at = now();
    t.execute(
        "INSERT INTO flows (tx_id, kind, state, from_addr, intent, created_at, updated_at)
         VALUES (?1, ?2, 'started', ?3, ?4, ?5, ?5)",
        params![tx_id, kind.as_str(), from, intent.to_string(), at],
    )?;
    t.execute(
        "INSERT INTO steps (tx_id, at, step, detail) VALUES (?1, ?2, 'started', ?3)",
        params![tx_id, at, intent.to_string()],
    )?;
    Ok(())
}

/// Records flow `tx_id`'s raw transaction and moves it to `executed`.
fn set_raw_tx(t: &rusqlite::Transaction<'_>, tx_id: &str, raw_tx: &Value) -> rusqlite::Result<()> {
    let at = now();
    t.execute(
        "UPDATE flows SET raw_tx = ?2, state = 'executed', updated_at = ?3 WHERE tx_id = ?1",
        params![tx_id, raw_tx.to_string(), at],
    )?;
    t.execute(
        "INSERT INTO steps (tx_id, at, step, detail) VALUES (?1, ?2, 'executed', ?3)",
        params![tx_id, at, raw_tx.to_string()],
    )?;
    Ok(())
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.tidy();
    }
}

fn row_to_batch(r: &rusqlite::Row<'_>) -> rusqlite::Result<BatchRecord> {
    Ok(BatchRecord {
        batch_id: r.get(0)?,
        source: r.get(1)?,
        created_at: r.get(2)?,
        items: r.get::<_, i64>(3)? as usize,
    })
}

const COLUMNS: &str = "tx_id, kind, state, from_addr, intent, raw_tx, signed_tx, tx_hash, \
                       chain_id, nonce, result, created_at, updated_at";

fn json_col(text: Option<String>) -> Option<Value> {
    text.map(|t| serde_json::from_str(&t).unwrap_or(Value::String(t)))
}

fn row_to_record(r: &rusqlite::Row<'_>) -> rusqlite::Result<FlowRecord> {
    row_to_record_at(r, 0)
}

/// A flow record from the [`COLUMNS`] of row `r` starting at column `at`.
fn row_to_record_at(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<FlowRecord> {
    let kind: String = r.get(at + 1)?;
    let state: String = r.get(at + 2)?;
    let intent: String = r.get(at + 4)?;
    let nonce: Option<String> = r.get(at + 9)?;
    let chain_id: Option<i64> = r.get(at + 8)?;
    Ok(FlowRecord {
        tx_id: r.get(at)?,
        kind: FlowKind::parse(&kind).ok_or_else(|| {
            rusqlite::Error::FromSqlConversionFailure(
                at + 1,
                rusqlite::types::Type::Text,
                format!("unknown flow kind {kind:?}").into(),
            )
        })?,
        state: FlowState::parse(&state),
        from: r.get(at + 3)?,
        intent: serde_json::from_str(&intent).unwrap_or(Value::String(intent)),
        raw_tx: json_col(r.get(at + 5)?),
        signed_tx: r.get(at + 6)?,
        tx_hash: r.get(at + 7)?,
        chain_id: chain_id.map(|c| c as u64),
        nonce: nonce.and_then(|n| n.parse().ok()),
        result: json_col(r.get(at + 10)?),
        created_at: r.get(at + 11)?,
        updated_at: r.get(at + 12)?,
    })
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

fn restrict_file(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    // Best effort: the journal holds signed transactions (public once sent) and intents,
    // no secrets; 0600 keeps other users from reading what you did.
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn signed_for_test(chain_id: u64, nonce: u64) -> bridgectl_tx::SignedTx {
        bridgectl_tx::SignedTx {
            raw: vec![0xf8, 0x01].into(),
            hash: alloy_primitives::B256::repeat_byte(0xab),
            from: Address::ZERO,
            chain_id,
            nonce,
        }
    }

    #[test]
    fn a_flow_round_trips_with_its_steps() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("j/journal.sqlite3");
        let j = Journal::open(&path).expect("open");
        j.begin(
            "id-1",
            FlowKind::Redeem,
            Some("0xabc"),
            &json!({"amount": "1"}),
        )
        .expect("begin");
        j.record_raw_tx("id-1", &json!({"nonce": "0x1"}))
            .expect("raw");
        j.step("id-1", FlowState::Verified, "verified", &json!({}))
            .expect("verify");
        j.record_signed("id-1", &signed_for_test(31337, u64::MAX))
            .expect("signed");
        drop(j);

        // A new process sees everything that was committed.
        let j = Journal::open(&path).expect("reopen");
        let rec = j.get("id-1").expect("get");
        assert_eq!(rec.state, FlowState::Signed);
        assert_eq!(rec.signed_tx.as_deref(), Some("0xf801"));
        assert_eq!(rec.nonce, Some(u64::MAX));
        assert_eq!(rec.chain_id, Some(31337));
        assert_eq!(rec.raw_tx, Some(json!({"nonce": "0x1"})));
        let steps: Vec<_> = j
            .steps("id-1")
            .expect("steps")
            .into_iter()
            .map(|s| s.step)
            .collect();
        assert_eq!(steps, ["started", "executed", "verified", "signed"]);
        assert_eq!(j.list(10).expect("list").len(), 1);

        // The one flow resolver: txId, a unique start of it, the hash of its signed
        // bytes; a start two flows share names neither.
        for id in ["9a64c6aa-1", "9a64c6bb-2"] {
            j.begin(id, FlowKind::Redeem, None, &json!({}))
                .expect("begin");
        }
        let hash = alloy_primitives::B256::repeat_byte(0xab).to_string();
        for (query, tx_id) in [
            ("id-1", "id-1"),
            (hash.as_str(), "id-1"),
            ("9a64c6aa", "9a64c6aa-1"),
            ("9a64c6bb-2", "9a64c6bb-2"),
        ] {
            assert_eq!(j.find(query).expect(query).tx_id, tx_id, "{query}");
        }
        assert!(matches!(j.find("9a64c6"), Err(Error::AmbiguousTxId { .. })));
        // Replaced: the earlier hash still names the flow.
        let mut again = signed_for_test(31337, u64::MAX);
        again.hash = alloy_primitives::B256::repeat_byte(0xef);
        j.record_replacement("id-1", &again, Purpose::Cancel)
            .expect("replace");
        assert_eq!(j.find(&hash).expect("replaced hash").tx_id, "id-1");
        let unknown = alloy_primitives::B256::repeat_byte(0xcd).to_string();
        assert!(matches!(j.find(&unknown), Err(Error::NotInJournal(_))));

        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    /// `hold_reservation` before signing: the flow's own reservation with lease to spare
    /// holds; another flow's is refused; its own whose lease ran out is refused (the
    /// reservation is dated back past the lease in the file, so no sleep is needed), and
    /// so is its own with less than a tenth of the lease left.
    #[test]
    fn a_reservation_holds_only_for_its_flow_within_its_lease() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("j.sqlite3");
        let addr = Address::repeat_byte(0x22);
        let j = Journal::open(&path).expect("open");
        for id in ["mine", "other"] {
            j.begin(id, FlowKind::Redeem, Some(&addr.to_string()), &json!({}))
                .expect("begin");
        }
        j.reserve_nonce("mine", addr, 7, 3).expect("reserve");
        j.hold_reservation("mine", addr, 7, 3)
            .expect("its own, fresh");
        let e = j
            .hold_reservation("other", addr, 7, 3)
            .expect_err("another flow's");
        assert!(matches!(e, Error::NonceReserved { .. }), "{e}");
        let date_back = |secs: i64| {
            rusqlite::Connection::open(&path)
                .expect("raw")
                .execute(
                    "UPDATE nonces SET reserved_at = ?1 WHERE nonce = 3",
                    rusqlite::params![unix_now() - secs],
                )
                .expect("date back");
        };
        // 100 s of a 900 s lease left: more than a tenth, it holds.
        date_back(RESERVATION_LEASE_SECS - 100);
        j.hold_reservation("mine", addr, 7, 3)
            .expect("a ninth left");
        // 80 s left: less than a tenth, refused.
        date_back(RESERVATION_LEASE_SECS - 80);
        let e = j
            .hold_reservation("mine", addr, 7, 3)
            .expect_err("under a tenth left");
        assert!(matches!(e, Error::LeaseExpired { nonce: 3, .. }), "{e}");
        date_back(RESERVATION_LEASE_SECS + 60);
        let e = j
            .hold_reservation("mine", addr, 7, 3)
            .expect_err("the lease ran out");
        assert!(matches!(e, Error::LeaseExpired { nonce: 3, .. }), "{e}");
    }

    #[test]
    fn two_processes_cannot_reserve_one_nonce() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("j.sqlite3");
        let addr = Address::repeat_byte(0x11);
        // Two journals on one file, as two bridgectl processes would have, racing for
        // the same nonce from eight threads each.
        let journals = [
            Journal::open(&path).expect("open"),
            Journal::open(&path).expect("open"),
        ];
        for i in 0..16 {
            journals[i % 2]
                .begin(
                    &format!("flow-{i}"),
                    FlowKind::Redeem,
                    Some(&addr.to_string()),
                    &json!({}),
                )
                .expect("begin");
        }
        let won: Vec<String> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..16)
                .map(|i| {
                    let j = &journals[i % 2];
                    scope.spawn(move || {
                        let id = format!("flow-{i}");
                        j.reserve_nonce(&id, addr, 7, 5).map(|()| id)
                    })
                })
                .collect();
            handles
                .into_iter()
                .filter_map(|h| h.join().expect("thread").ok())
                .collect()
        });
        assert_eq!(won.len(), 1, "exactly one flow holds nonce 5: {won:?}");
        let holder = &won[0];
        let loser = if holder == "flow-0" {
            "flow-1"
        } else {
            "flow-0"
        };
        match journals[0].reserve_nonce(loser, addr, 7, 5) {
            Err(Error::NonceReserved { nonce: 5, by, .. }) => assert_eq!(&by, holder),
            other => panic!("expected NonceReserved, got {other:?}"),
        }
        assert_eq!(
            journals[0].next_nonce(addr, 7, None).expect("next"),
            Some(6)
        );
        assert_eq!(
            journals[0].next_nonce(addr, 7, Some(holder)).expect("next"),
            None,
            "a flow's own reservation is not a floor under itself"
        );
        assert_eq!(journals[0].next_nonce(addr, 8, None).expect("next"), None);

        // A flow that failed before signing gives its nonce back.
        journals[1]
            .step(holder, FlowState::Failed, "not-approved", &json!({}))
            .expect("fail");
        assert_eq!(journals[0].next_nonce(addr, 7, None).expect("next"), None);
        journals[0]
            .reserve_nonce(loser, addr, 7, 5)
            .expect("taken over from a failed flow");
        assert_eq!(
            journals[0].next_nonce(addr, 7, None).expect("next"),
            Some(6)
        );

        // A flow that signed holds its nonce for good, even once marked failed (a
        // platform reporting "failed" must not free a nonce that can still be mined).
        journals[0]
            .record_signed(loser, &signed_for_test(7, 5))
            .expect("signed");
        journals[0]
            .step(loser, FlowState::Failed, "redemption-failed", &json!({}))
            .expect("failed");
        assert_eq!(
            journals[0].next_nonce(addr, 7, None).expect("next"),
            Some(6)
        );
        // A bystander: neither the race's winner (marked failed above) nor the loser.
        let other = (0..16)
            .map(|i| format!("flow-{i}"))
            .find(|id| id != holder && id != loser)
            .expect("a third flow");
        let other = other.as_str();
        assert!(matches!(
            journals[1].reserve_nonce(other, addr, 7, 5),
            Err(Error::NonceReserved { .. })
        ));

        // An unsigned reservation holds only for its lease: a flow interrupted at its
        // prompt does not block the address for ever.
        journals[1]
            .reserve_nonce(other, addr, 7, 6)
            .expect("next nonce");
        assert_eq!(
            journals[0].next_nonce(addr, 7, None).expect("next"),
            Some(7)
        );
        journals[0]
            .with(|c| c.execute("UPDATE nonces SET reserved_at = 0 WHERE nonce = 6", []))
            .expect("age the lease");
        assert_eq!(
            journals[0].next_nonce(addr, 7, None).expect("next"),
            Some(6)
        );
        journals[0]
            .reserve_nonce("flow-4", addr, 7, 6)
            .expect("an expired lease is taken over");
    }

    /// The nonce floor is read before every signature: its cost must not grow with the
    /// journal. Counted in SQLite's virtual-machine steps (not time), with 10 and with
    /// 2,000 signed flows of the sender.
    #[test]
    fn the_nonce_floor_reads_the_same_rows_whatever_the_journal_size() {
        let addr = Address::repeat_byte(0x11);
        let steps = |flows: u64| {
            let dir = tempfile::tempdir().expect("tmp");
            let j = Journal::open(dir.path().join("journal.sqlite3")).expect("open");
            j.with(|c| {
                let t = c.unchecked_transaction()?;
                for n in 0..flows {
                    let id = format!("flow-{n}");
                    t.execute(
                        "INSERT INTO flows (tx_id, kind, state, from_addr, intent, signed_tx,
                                            chain_id, nonce, created_at, updated_at)
                         VALUES (?1, 'redeem', 'completed', ?2, '{}', '0xf8', 7, ?3, '', '')",
                        params![id, addr.to_string(), n.to_string()],
                    )?;
                    t.execute(
                        "INSERT INTO nonces (address, chain_id, nonce, tx_id, reserved_at)
                         VALUES (?1, 7, ?2, ?3, 0)",
                        params![addr.to_string(), n as i64, id],
                    )?;
                }
                t.commit()
            })
            .expect("fill");
            assert_eq!(j.next_nonce(addr, 7, None).expect("next"), Some(flows));
            j.with(|c| {
                let mut stmt = c.prepare(&next_nonce_sql())?;
                stmt.query_row(params![addr.to_string(), 7, "", 0], |_| Ok(()))?;
                Ok(stmt.get_status(rusqlite::StatementStatus::VmStep))
            })
            .expect("steps")
        };
        let (small, large) = (steps(10), steps(2_000));
        assert!(
            large <= small + 10,
            "the nonce floor took {large} steps at 2,000 flows and {small} at 10"
        );
    }

    #[test]
    fn oversized_blobs_are_stored_as_a_marker() {
        let dir = tempfile::tempdir().expect("tempdir");
        let j = Journal::open(dir.path().join("j.sqlite3")).expect("open");
        j.begin("t1", FlowKind::Redeem, None, &json!({}))
            .expect("begin");
        let huge = json!({"status": "PENDING", "raw": "x".repeat(5 * MAX_BLOB_BYTES)});
        j.observe("t1", None, "status", &huge).expect("observe");
        j.record_result("t1", &huge).expect("result");
        let small = json!({"status": "DONE"});
        j.note("t1", "done", &small).expect("note");
        let steps = j.steps("t1").expect("steps");
        let marker = &steps[steps.len() - 2].detail;
        assert_eq!(marker["truncated"], true, "{marker}");
        assert!(marker["bytes"].as_u64().expect("bytes") > 5 * MAX_BLOB_BYTES as u64);
        assert!(
            marker["head"]
                .as_str()
                .expect("head")
                .starts_with("{\"raw\":\"xxx")
        );
        assert_eq!(steps[steps.len() - 1].detail, small);
        let flow = j.get("t1").expect("get");
        assert_eq!(flow.result.expect("result")["truncated"], true);
    }

    #[test]
    fn unknown_flows_are_reported() {
        let dir = tempfile::tempdir().expect("tmp");
        let j = Journal::open(dir.path().join("j.sqlite3")).expect("open");
        assert!(matches!(j.get("nope"), Err(Error::NotInJournal(_))));
        // A step of an unknown flow updates no row; a reused txId breaks the flows'
        // primary key: both are refused, never silently merged.
        assert!(matches!(
            j.step("nope", FlowState::Failed, "x", &json!({})),
            Err(Error::Journal {
                source: rusqlite::Error::QueryReturnedNoRows,
                ..
            })
        ));
        let constraint = |r: Result<(), Error>| match r {
            Err(Error::Journal {
                source: rusqlite::Error::SqliteFailure(e, _),
                ..
            }) => e.code == rusqlite::ErrorCode::ConstraintViolation,
            _ => false,
        };
        j.begin("a", FlowKind::Swap, None, &json!({}))
            .expect("begin");
        assert!(
            constraint(j.begin("a", FlowKind::Swap, None, &json!({}))),
            "txId reused"
        );
    }

    #[test]
    fn steps_commit_without_fsync_and_signatures_with_one() {
        let dir = tempfile::tempdir().expect("tmp");
        let j = Journal::open(dir.path().join("j.sqlite3")).expect("open");
        let sync = |c: &mut Connection| c.query_row("PRAGMA synchronous", [], |r| r.get(0));
        let mode: String = j
            .with(|c| c.query_row("PRAGMA journal_mode", [], |r| r.get(0)))
            .expect("mode");
        assert_eq!(mode, "wal");
        let step: i64 = j.with(sync).expect("pragma");
        assert_eq!(
            step, 1,
            "synchronous = NORMAL: a step survives a crash, not a power cut"
        );
        let durable: i64 = j.with_durable(sync).expect("pragma");
        assert_eq!(
            durable, 2,
            "synchronous = FULL: a signature survives a power cut"
        );
    }

    #[test]
    fn a_batch_item_run_again_abandons_its_unsigned_flow_and_frees_its_nonce() {
        let j = Journal::in_memory().expect("journal");
        let from = Address::repeat_byte(7);
        let items = vec![
            ("a".to_owned(), json!({"op": "redeem"}), "flow-a".to_owned()),
            ("b".to_owned(), json!({"op": "redeem"}), "flow-b".to_owned()),
        ];
        j.create_batch("ba7c-0001", "payouts.jsonl", &items)
            .expect("create");
        // Item a began, reserved nonce 5 and was interrupted before signing; item b
        // signed nonce 6.
        j.begin(
            "flow-a",
            FlowKind::Redeem,
            Some(&from.to_string()),
            &json!({}),
        )
        .expect("begin a");
        j.reserve_nonce("flow-a", from, 1, 5).expect("reserve a");
        j.begin(
            "flow-b",
            FlowKind::Redeem,
            Some(&from.to_string()),
            &json!({}),
        )
        .expect("begin b");
        j.reserve_nonce("flow-b", from, 1, 6).expect("reserve b");
        j.record_signed("flow-b", &signed_for_test(1, 6))
            .expect("signed b");
        let found = j.batch_items("ba7c-0001").expect("items");
        assert_eq!(found.len(), 2);
        assert_eq!(
            found[0].flow.as_ref().map(|f| f.state),
            Some(FlowState::Started)
        );
        assert!(
            found[1]
                .flow
                .as_ref()
                .is_some_and(|f| f.signed_tx.is_some())
        );

        j.retry_batch_item("ba7c-0001", 0, "flow-a", "flow-a2")
            .expect("retry");
        let a = j.get("flow-a").expect("old flow");
        assert_eq!(
            a.state,
            FlowState::Failed,
            "the interrupted flow is abandoned"
        );
        assert!(
            j.steps("flow-a")
                .expect("steps")
                .iter()
                .any(|s| s.step == "abandoned")
        );
        let found = j.batch_items("ba7c-0001").expect("items");
        assert_eq!(found[0].tx_id, "flow-a2");
        assert_eq!(found[0].attempt, 2);
        assert!(found[0].flow.is_none(), "the new flow has not begun");
        // Nonce 5 is free again for the new attempt; 6 stays taken (it was signed).
        j.begin(
            "flow-a2",
            FlowKind::Redeem,
            Some(&from.to_string()),
            &json!({}),
        )
        .expect("begin a2");
        j.reserve_nonce("flow-a2", from, 1, 5)
            .expect("nonce 5 is free again");
        assert!(matches!(
            j.reserve_nonce("flow-a2", from, 1, 6),
            Err(Error::NonceReserved { nonce: 6, .. })
        ));
        // A signed flow is never abandoned.
        j.retry_batch_item("ba7c-0001", 1, "flow-b", "flow-b2")
            .expect("retry b");
        assert_ne!(j.get("flow-b").expect("b").state, FlowState::Failed);

        assert_eq!(j.find_batch("ba7c").expect("prefix").items, 2);
        assert!(matches!(j.find_batch("zz"), Err(Error::NoSuchBatch(_))));
        assert_eq!(j.list_batches(5).expect("list").len(), 1);
    }
}
