//! The event store: one SQLite file that the listener writes and everything else reads.
//!
//! # What "durable" means here
//!
//! The listener answers 200 only after the transaction holding the event has committed
//! with `journal_mode=WAL` and `synchronous=FULL`: SQLite fsyncs the write-ahead log before
//! the commit returns, so an acknowledged event survives a crash of the listener (kill -9),
//! of the operating system, and a power cut (as far as the disk honours fsync).
//! `synchronous=NORMAL` would survive only the first of these, so it is not used.
//!
//! # Batching
//!
//! One writer thread owns the only writing connection. Requests queue on a channel; the
//! writer takes everything queued (up to [`MAX_BATCH`]) into one transaction and commits once,
//! then answers every request of the batch. A burst of N concurrent deliveries therefore
//! costs about one fsync per batch rather than N, while a lone delivery still commits at
//! once (no timer-based delay).
//!
//! # Tables
//!
//! - `events`: deliveries that parsed as a JSON object with `subscriptionId` and
//!   `sequenceNumber`. `verified` is 1 only when `x-signature` matched a stored signing key.
//!   A verified event is unique by (subscriptionId, sequenceNumber) and by body hash; an
//!   unverified one only by body hash, so a forged delivery can never shadow the genuine
//!   one with the same sequence number. Both ids are read from the body, so two verified
//!   rows with the same body would share them: the (subscriptionId, sequenceNumber) index
//!   already makes verified bodies unique, and the body-hash index covers only unverified
//!   rows (a rare few), so a commit does not rewrite a random page of a big hash index for
//!   every event. `handed_off` is a bit set of the sinks that took
//!   the event (1 = exec, 2 = forward); `attempts`, `next_attempt_ms` and `last_error`
//!   drive the retries.
//! - `quarantine`: everything else (not JSON, not an object, no ids), unique by body hash.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use tokio::sync::{mpsc, oneshot};

use super::Error;

/// The most requests committed in one transaction.
pub const MAX_BATCH: usize = 1024;

/// The writer's own checkpoint threshold, in pages (64 MiB of WAL): a backstop only.
const WRITER_AUTOCHECKPOINT_PAGES: i64 = 16_384;

/// How often the checkpoint thread folds the WAL into the database.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// How many requests may wait for the writer before senders are held back.
const QUEUE: usize = 8192;

/// Bit of the `--exec` sink in `handed_off`.
pub const SINK_EXEC: u8 = 1;
/// Bit of the `--forward` sink in `handed_off`.
pub const SINK_FORWARD: u8 = 2;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    received_at_ms INTEGER NOT NULL,
    subscription_id TEXT NOT NULL,
    sequence_number TEXT NOT NULL,
    event_type TEXT,
    verified INTEGER NOT NULL,
    verification TEXT NOT NULL,
    signature TEXT,
    body_sha256 BLOB NOT NULL,
    body BLOB NOT NULL,
    handed_off INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_ms INTEGER NOT NULL DEFAULT 0,
    last_error TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS events_genuine_seq
    ON events (subscription_id, sequence_number) WHERE verified = 1;
DROP INDEX IF EXISTS events_body;
CREATE UNIQUE INDEX IF NOT EXISTS events_unverified_body
    ON events (body_sha256) WHERE verified = 0;
CREATE INDEX IF NOT EXISTS events_pending ON events (verified, handed_off, next_attempt_ms);
CREATE TABLE IF NOT EXISTS quarantine (
    id INTEGER PRIMARY KEY,
    received_at_ms INTEGER NOT NULL,
    reason TEXT NOT NULL,
    signature TEXT,
    body_sha256 BLOB NOT NULL UNIQUE,
    body BLOB NOT NULL
);
";

/// Milliseconds since the Unix epoch, for the store's timestamps.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The outcome of checking `x-signature`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verification {
    /// The signature matched the subscription's stored key.
    Valid,
    /// No `x-signature` header.
    Missing,
    /// A signature that does not match the stored key: forged or corrupted.
    Mismatch,
    /// No signing key is stored for the subscription.
    NoKey,
}

impl Verification {
    /// The word stored in the `verification` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Verification::Valid => "valid",
            Verification::Missing => "missing signature",
            Verification::Mismatch => "signature mismatch",
            Verification::NoKey => "no signing key for subscription",
        }
    }
}

/// A delivery as the listener classified it, ready to store.
#[derive(Clone, Debug)]
pub struct Incoming {
    /// When it arrived.
    pub received_at_ms: i64,
    /// The raw body, byte for byte.
    pub body: Vec<u8>,
    /// SHA-256 of the body.
    pub body_sha256: [u8; 32],
    /// `x-signature` as received.
    pub signature: Option<String>,
    /// Event or quarantine.
    pub kind: IncomingKind,
}

/// Where a delivery goes.
#[derive(Clone, Debug)]
pub enum IncomingKind {
    /// A well-formed event.
    Event {
        /// `subscriptionId`, as a string.
        subscription_id: String,
        /// `sequenceNumber`, as a decimal string.
        sequence_number: String,
        /// `eventType`, if present.
        event_type: Option<String>,
        /// The signature check.
        verification: Verification,
    },
    /// Not an event: kept for inspection.
    Quarantine {
        /// Why it was not accepted as an event.
        reason: String,
    },
}

/// What storing a delivery did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// A new event row.
    Stored(i64),
    /// An event already stored (a retried delivery): nothing written.
    Duplicate,
    /// A new quarantine row.
    Quarantined(i64),
    /// A body already in quarantine: nothing written.
    QuarantineDuplicate,
}

/// An event row.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredEvent {
    /// Row id: increasing in arrival order.
    pub id: i64,
    /// When it arrived, Unix milliseconds.
    pub received_at_ms: i64,
    /// `subscriptionId`.
    pub subscription_id: String,
    /// `sequenceNumber`.
    pub sequence_number: String,
    /// `eventType`.
    pub event_type: Option<String>,
    /// Whether the signature matched a stored key.
    pub verified: bool,
    /// The signature check in words.
    pub verification: String,
    /// Sinks that took it (bit 1 exec, bit 2 forward).
    pub handed_off: u8,
    /// Hand-off attempts so far.
    pub attempts: i64,
    /// The last hand-off error.
    pub last_error: Option<String>,
    /// `x-signature` as received.
    pub signature: Option<String>,
    /// The body, byte for byte.
    #[serde(skip)]
    pub body: Vec<u8>,
}

/// A quarantined delivery.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Quarantined {
    /// Row id.
    pub id: i64,
    /// When it arrived, Unix milliseconds.
    pub received_at_ms: i64,
    /// Why it is here.
    pub reason: String,
    /// `x-signature` as received.
    pub signature: Option<String>,
    /// The body, byte for byte.
    #[serde(skip)]
    pub body: Vec<u8>,
}

/// Counts over the store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    /// Event rows.
    pub events: i64,
    /// Of which verified.
    pub verified: i64,
    /// Quarantine rows.
    pub quarantined: i64,
}

/// The store file.
#[derive(Clone, Debug)]
pub struct Store {
    path: PathBuf,
}

impl Store {
    /// Opens (creating if needed, mode 0600) the store at `path` and ensures its schema.
    pub fn open(path: impl Into<PathBuf>) -> Result<Store, Error> {
        let store = Store { path: path.into() };
        if let Some(dir) = store.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            use std::os::unix::fs::DirBuilderExt;
            if !dir.exists() {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)
                    .map_err(|e| store.io(e))?;
            }
        }
        if !store.path.exists() {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(&store.path)
                .map_err(|e| store.io(e))?;
        }
        let conn = store.connect(true)?;
        conn.execute_batch(SCHEMA).map_err(|e| store.sql(e))?;
        Ok(store)
    }

    /// Opens an existing store for reading; a missing file is an error that says so.
    pub fn open_existing(path: impl Into<PathBuf>) -> Result<Store, Error> {
        let store = Store { path: path.into() };
        store.connect(false)?;
        Ok(store)
    }

    /// The SQLite file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql(&self, source: rusqlite::Error) -> Error {
        Error::Store {
            path: self.path.clone(),
            source,
        }
    }

    fn io(&self, source: std::io::Error) -> Error {
        Error::StoreIo {
            path: self.path.clone(),
            source,
        }
    }

    fn connect(&self, create: bool) -> Result<Connection, Error> {
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let conn = Connection::open_with_flags(&self.path, flags).map_err(|e| self.sql(e))?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(|e| self.sql(e))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| self.sql(e))?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(|e| self.sql(e))?;
        Ok(conn)
    }

    /// Starts the writer thread. Every [`Writer`] clone feeds it; it stops when the last
    /// is dropped, after committing what was queued.
    pub fn spawn_writer(&self) -> Result<(Writer, WriterThread), Error> {
        let conn = self.connect(true)?;
        // Checkpoints run beside the writer (see `checkpoint_loop`), not inside its commits;
        // this bound only matters if that thread falls behind.
        conn.pragma_update(None, "wal_autocheckpoint", WRITER_AUTOCHECKPOINT_PAGES)
            .map_err(|e| self.sql(e))?;
        let checkpointer = self.connect(false)?;
        let (stop_checkpoints, stopped) = std::sync::mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("webhook-store-checkpoint".into())
            .spawn(move || checkpoint_loop(checkpointer, stopped))
            .map_err(|e| self.io(e))?;
        let (tx, rx) = mpsc::channel(QUEUE);
        let path = Arc::new(self.path.clone());
        let thread_path = path.clone();
        let handle = std::thread::Builder::new()
            .name("webhook-store-writer".into())
            .spawn(move || {
                writer_loop(conn, rx, &thread_path);
                drop(stop_checkpoints);
            })
            .map_err(|e| self.io(e))?;
        Ok((Writer { tx, path }, WriterThread { handle }))
    }

    /// Events with `id > after_id`, oldest first, at most `limit`.
    pub fn events(&self, after_id: i64, limit: usize) -> Result<Vec<StoredEvent>, Error> {
        let conn = self.connect(false)?;
        let mut stmt = conn
            .prepare(&format!(
                "SELECT {EVENT_COLUMNS} FROM events WHERE id > ?1 ORDER BY id LIMIT ?2"
            ))
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map(params![after_id, limit_i64(limit)], event_row)
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// Quarantined deliveries with `id > after_id`, oldest first, at most `limit`.
    pub fn quarantined(&self, after_id: i64, limit: usize) -> Result<Vec<Quarantined>, Error> {
        let conn = self.connect(false)?;
        let mut stmt = conn
            .prepare(
                "SELECT id, received_at_ms, reason, signature, body FROM quarantine
                 WHERE id > ?1 ORDER BY id LIMIT ?2",
            )
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map(params![after_id, limit_i64(limit)], |r| {
                Ok(Quarantined {
                    id: r.get(0)?,
                    received_at_ms: r.get(1)?,
                    reason: r.get(2)?,
                    signature: r.get(3)?,
                    body: r.get(4)?,
                })
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// Row counts.
    pub fn counts(&self) -> Result<Counts, Error> {
        let conn = self.connect(false)?;
        let one = |sql: &str| -> Result<i64, Error> {
            conn.query_row(sql, [], |r| r.get(0))
                .map_err(|e| self.sql(e))
        };
        Ok(Counts {
            events: one("SELECT count(*) FROM events")?,
            verified: one("SELECT count(*) FROM events WHERE verified = 1")?,
            quarantined: one("SELECT count(*) FROM quarantine")?,
        })
    }

    /// Verified events that still lack one of the sinks in `sinks` and are due at `now_ms`,
    /// oldest first. Unverified events are never returned: they are not handed on.
    pub fn pending(&self, sinks: u8, now_ms: i64, limit: usize) -> Result<Vec<StoredEvent>, Error> {
        if sinks == 0 {
            return Ok(Vec::new());
        }
        // `handed_off & sinks != sinks`, spelled as an IN list so the index serves it.
        let missing: Vec<String> = (0u8..4)
            .filter(|h| h & sinks != sinks)
            .map(|h| h.to_string())
            .collect();
        let sql = format!(
            "SELECT {EVENT_COLUMNS} FROM events
             WHERE verified = 1 AND handed_off IN ({missing}) AND next_attempt_ms <= ?1
             ORDER BY id LIMIT ?2",
            missing = missing.join(",")
        );
        let conn = self.connect(false)?;
        let mut stmt = conn.prepare(&sql).map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map(params![now_ms, limit_i64(limit)], event_row)
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// The earliest `next_attempt_ms` of a pending event, if any: when to look again.
    pub fn next_due(&self, sinks: u8) -> Result<Option<i64>, Error> {
        if sinks == 0 {
            return Ok(None);
        }
        let missing: Vec<String> = (0u8..4)
            .filter(|h| h & sinks != sinks)
            .map(|h| h.to_string())
            .collect();
        let sql = format!(
            "SELECT min(next_attempt_ms) FROM events WHERE verified = 1 AND handed_off IN ({})",
            missing.join(",")
        );
        let conn = self.connect(false)?;
        conn.query_row(&sql, [], |r| r.get::<_, Option<i64>>(0))
            .optional()
            .map(Option::flatten)
            .map_err(|e| self.sql(e))
    }
}

const EVENT_COLUMNS: &str = "id, received_at_ms, subscription_id, sequence_number, event_type, \
    verified, verification, handed_off, attempts, last_error, signature, body";

fn event_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredEvent> {
    Ok(StoredEvent {
        id: r.get(0)?,
        received_at_ms: r.get(1)?,
        subscription_id: r.get(2)?,
        sequence_number: r.get(3)?,
        event_type: r.get(4)?,
        verified: r.get::<_, i64>(5)? == 1,
        verification: r.get(6)?,
        handed_off: u8::try_from(r.get::<_, i64>(7)?).unwrap_or(0),
        attempts: r.get(8)?,
        last_error: r.get(9)?,
        signature: r.get(10)?,
        body: r.get(11)?,
    })
}

fn limit_i64(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// A hand-off result to record.
#[derive(Clone, Debug)]
pub struct HandoffRecord {
    /// The event.
    pub id: i64,
    /// Sink bits that succeeded in this attempt.
    pub done: u8,
    /// The failure, when a sink failed.
    pub error: Option<String>,
    /// When to try again (ignored when nothing failed).
    pub next_attempt_ms: i64,
}

enum Op {
    Insert(
        Incoming,
        oneshot::Sender<Result<Outcome, Arc<rusqlite::Error>>>,
    ),
    Handoff(
        HandoffRecord,
        oneshot::Sender<Result<Outcome, Arc<rusqlite::Error>>>,
    ),
}

/// A handle to the writer thread: cheap to clone, one per task.
#[derive(Clone, Debug)]
pub struct Writer {
    tx: mpsc::Sender<Op>,
    path: Arc<PathBuf>,
}

/// The writer thread; [`WriterThread::join`] waits for it after every [`Writer`] is gone.
#[derive(Debug)]
pub struct WriterThread {
    handle: std::thread::JoinHandle<()>,
}

impl WriterThread {
    /// Blocks until the writer has committed everything queued and closed the database.
    pub fn join(self) {
        let _ = self.handle.join();
    }
}

impl Writer {
    /// Stores a delivery; returns once it is committed (durable), or the error.
    pub async fn insert(&self, incoming: Incoming) -> Result<Outcome, Error> {
        let (tx, rx) = oneshot::channel();
        self.send(Op::Insert(incoming, tx), rx).await
    }

    /// Records a hand-off attempt.
    pub async fn record_handoff(&self, record: HandoffRecord) -> Result<(), Error> {
        let (tx, rx) = oneshot::channel();
        self.send(Op::Handoff(record, tx), rx).await.map(|_| ())
    }

    async fn send(
        &self,
        op: Op,
        rx: oneshot::Receiver<Result<Outcome, Arc<rusqlite::Error>>>,
    ) -> Result<Outcome, Error> {
        let gone = || Error::WriterGone {
            path: (*self.path).clone(),
        };
        self.tx.send(op).await.map_err(|_| gone())?;
        match rx.await {
            Ok(Ok(outcome)) => Ok(outcome),
            Ok(Err(source)) => Err(Error::StoreWrite {
                path: (*self.path).clone(),
                source,
            }),
            Err(_) => Err(gone()),
        }
    }
}

fn writer_loop(mut conn: Connection, mut rx: mpsc::Receiver<Op>, _path: &Path) {
    let mut batch: Vec<Op> = Vec::with_capacity(MAX_BATCH);
    while let Some(first) = rx.blocking_recv() {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(op) => batch.push(op),
                Err(_) => break,
            }
        }
        let results = commit_batch(&mut conn, &batch);
        for (op, result) in batch.drain(..).zip(results) {
            let reply = match op {
                Op::Insert(_, reply) | Op::Handoff(_, reply) => reply,
            };
            // The requester may have gone (client hung up): the row is stored regardless.
            let _ = reply.send(result);
        }
    }
    // Every sender is gone: fold the WAL back so the file is complete on its own.
    let _ = conn.pragma_update(None, "wal_checkpoint", "TRUNCATE");
}

/// PASSIVE checkpoints on a second connection: they copy committed pages into the
/// database without blocking the writer, so a commit never waits for a checkpoint (with
/// SQLite's default, every ~1000 pages one unlucky commit does the whole checkpoint and its
/// fsyncs while a batch of requests waits). Stops when the writer thread ends.
fn checkpoint_loop(conn: Connection, stop: std::sync::mpsc::Receiver<()>) {
    while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(CHECKPOINT_EVERY)
    {
        let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
    }
}

/// One transaction for the whole batch; per-op results, all failed if the commit fails.
fn commit_batch(conn: &mut Connection, batch: &[Op]) -> Vec<Result<Outcome, Arc<rusqlite::Error>>> {
    let tx = match conn.transaction() {
        Ok(tx) => tx,
        Err(e) => {
            let e = Arc::new(e);
            return batch.iter().map(|_| Err(e.clone())).collect();
        }
    };
    let mut results: Vec<Result<Outcome, Arc<rusqlite::Error>>> = batch
        .iter()
        .map(|op| apply(&tx, op).map_err(Arc::new))
        .collect();
    if let Err(e) = tx.commit() {
        let e = Arc::new(e);
        for r in &mut results {
            *r = Err(e.clone());
        }
    }
    results
}

fn apply(tx: &rusqlite::Transaction<'_>, op: &Op) -> rusqlite::Result<Outcome> {
    match op {
        Op::Insert(incoming, _) => match &incoming.kind {
            IncomingKind::Event {
                subscription_id,
                sequence_number,
                event_type,
                verification,
            } => {
                let mut stmt = tx.prepare_cached(
                    "INSERT OR IGNORE INTO events (received_at_ms, subscription_id,
                        sequence_number, event_type, verified, verification, signature,
                        body_sha256, body)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                )?;
                let n = stmt.execute(params![
                    incoming.received_at_ms,
                    subscription_id,
                    sequence_number,
                    event_type,
                    i64::from(*verification == Verification::Valid),
                    verification.as_str(),
                    incoming.signature,
                    &incoming.body_sha256[..],
                    incoming.body,
                ])?;
                Ok(if n == 1 {
                    Outcome::Stored(tx.last_insert_rowid())
                } else {
                    Outcome::Duplicate
                })
            }
            IncomingKind::Quarantine { reason } => {
                let mut stmt = tx.prepare_cached(
                    "INSERT OR IGNORE INTO quarantine (received_at_ms, reason, signature,
                        body_sha256, body)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )?;
                let n = stmt.execute(params![
                    incoming.received_at_ms,
                    reason,
                    incoming.signature,
                    &incoming.body_sha256[..],
                    incoming.body,
                ])?;
                Ok(if n == 1 {
                    Outcome::Quarantined(tx.last_insert_rowid())
                } else {
                    Outcome::QuarantineDuplicate
                })
            }
        },
        Op::Handoff(record, _) => {
            let mut stmt = tx.prepare_cached(
                "UPDATE events SET handed_off = handed_off | ?2,
                    attempts = attempts + 1,
                    last_error = ?3,
                    next_attempt_ms = CASE WHEN ?3 IS NULL THEN next_attempt_ms ELSE ?4 END
                 WHERE id = ?1",
            )?;
            stmt.execute(params![
                record.id,
                i64::from(record.done),
                record.error,
                record.next_attempt_ms
            ])?;
            Ok(Outcome::Duplicate)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(body: &[u8], seq: &str, verification: Verification) -> Incoming {
        use sha2::Digest;
        Incoming {
            received_at_ms: 1,
            body: body.to_vec(),
            body_sha256: sha2::Sha256::digest(body).into(),
            signature: Some("00".into()),
            kind: IncomingKind::Event {
                subscription_id: "7".into(),
                sequence_number: seq.into(),
                event_type: None,
                verification,
            },
        }
    }

    /// The body-hash index covers only unverified rows; verified ones stay unique through
    /// (subscriptionId, sequenceNumber). Every case of the old (body, verified) index must
    /// keep its outcome, also on a store created with that old index.
    #[tokio::test]
    async fn dedupe_by_ids_and_body_and_old_stores_migrate() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("events.sqlite");
        {
            let conn = Connection::open(&path).expect("open");
            conn.execute_batch(
                "CREATE TABLE events (id INTEGER PRIMARY KEY, received_at_ms INTEGER NOT NULL,
                    subscription_id TEXT NOT NULL, sequence_number TEXT NOT NULL,
                    event_type TEXT, verified INTEGER NOT NULL, verification TEXT NOT NULL,
                    signature TEXT, body_sha256 BLOB NOT NULL, body BLOB NOT NULL,
                    handed_off INTEGER NOT NULL DEFAULT 0,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    next_attempt_ms INTEGER NOT NULL DEFAULT 0, last_error TEXT);
                 CREATE UNIQUE INDEX events_body ON events (body_sha256, verified);",
            )
            .expect("old schema");
        }
        let store = Store::open(&path).expect("store");
        let (writer, thread) = store.spawn_writer().expect("writer");
        let valid = Verification::Valid;
        let forged = Verification::Mismatch;
        let a = br#"{"subscriptionId":"7","sequenceNumber":1}"#;
        let a2 = br#"{"subscriptionId":"7","sequenceNumber":"1"}"#;
        let b = br#"{"subscriptionId":"7","sequenceNumber":2}"#;
        let cases: [(&[u8], &str, Verification, bool); 7] = [
            (a, "1", valid, true),
            (a, "1", valid, false),  // same body again
            (a2, "1", valid, false), // same ids, other body
            (a, "1", forged, true),  // a forgery never shadows the genuine row
            (a, "1", forged, false), // the same forgery again
            (b, "2", forged, true),  // a forgery first ...
            (b, "2", valid, true),   // ... does not keep out the genuine one
        ];
        for (i, (body, seq, verification, new)) in cases.into_iter().enumerate() {
            let outcome = writer
                .insert(event(body, seq, verification))
                .await
                .expect("insert");
            assert_eq!(
                matches!(outcome, Outcome::Stored(_)),
                new,
                "case {i}: {outcome:?}"
            );
        }
        drop(writer);
        thread.join();
        let counts = store.counts().expect("counts");
        assert_eq!((counts.events, counts.verified), (4, 2));
        let conn = Connection::open(&path).expect("open");
        let old: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name = 'events_body'",
                [],
                |r| r.get(0),
            )
            .expect("schema");
        assert_eq!(old, 0, "the old index is gone");
    }
}
