//! The SQLite event store: one file that one listener writes and everything else reads.
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
//!   `lease_owner`/`lease_until_ms` hold a claim (one listener per file, so a lease only
//!   matters if two listeners are pointed at one file by mistake). `body_len` is the length
//!   as received; `body` is empty past the [`Limits`] for unverified rows.
//! - `quarantine`: everything else (not JSON, not an object, no ids), unique by body hash;
//!   bodies past the [`Limits`] are not kept either.
//! - `gaps`: what the self-healing check found missed (see [`Gap`]).
//! - `settings`: values every reader shares, e.g. a generated listener path.

#[cfg(feature = "bench")]
pub mod bench_stats;
mod rows;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use tokio::sync::mpsc;

use super::{
    Claim, Counts, EventStore, Gap, HandoffRecord, Incoming, Limits, Outcome, Pruned, Quarantined,
    Retention, SigningKey, StoreFuture, StoredEvent,
};
use crate::Error;

pub use writer::MAX_BATCH;

use rows::{EVENT_COLUMNS, event_row, kept_so_far, known_len, limit_i64, missing_bits, query};
use writer::{Op, OpKind, Reply, Writer, WriterThread, checkpoint_loop, writer_loop};

/// The writer's own checkpoint threshold, in pages (64 MiB of WAL): a backstop only.
const WRITER_AUTOCHECKPOINT_PAGES: i64 = 16_384;

/// How many requests may wait for the writer before senders are held back. Each holds a
/// body, so this bounds memory too: 512 × the body limit (256 KiB) is 128 MiB at worst,
/// and the listener's connection limit keeps it well under that.
const QUEUE: usize = 512;

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
CREATE TABLE IF NOT EXISTS gaps (
    id INTEGER PRIMARY KEY,
    subscription_id TEXT NOT NULL,
    replaced_by TEXT NOT NULL,
    cause TEXT NOT NULL,
    from_ms INTEGER NOT NULL,
    to_ms INTEGER NOT NULL,
    last_sequence TEXT
);
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
";

/// Columns added after the first release: (table, column, definition). Stores made
/// before them get them on open; the defaults describe the old rows truthfully.
const ADDED_COLUMNS: &[(&str, &str, &str)] = &[
    ("events", "lease_owner", "TEXT"),
    ("events", "lease_until_ms", "INTEGER NOT NULL DEFAULT 0"),
    ("events", "body_len", "INTEGER NOT NULL DEFAULT -1"),
    ("quarantine", "body_len", "INTEGER NOT NULL DEFAULT -1"),
];

/// The SQLite store: a file, and (when opened for writing) its one writer thread.
pub struct SqliteStore {
    path: PathBuf,
    location: String,
    writer: Option<Writer>,
    /// Transactions the writer has committed.
    commits: Arc<AtomicU64>,
    thread: Mutex<Option<WriterThread>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating if needed, mode 0600) the store at `path`, ensures its schema and
    /// starts the writer thread. Blocks: call it from a blocking context.
    pub fn open(path: impl Into<PathBuf>, limits: Limits) -> Result<SqliteStore, Error> {
        let path = path.into();
        let files = Files { path: path.clone() };
        files.create()?;
        let conn = files.connect(true)?;
        conn.execute_batch(SCHEMA).map_err(|e| files.sql(e))?;
        migrate(&conn).map_err(|e| files.sql(e))?;
        // One listener writes a file: a lease found now is a dead process's, and its
        // events are this one's to hand on at once, not after the lease.
        conn.execute(
            "UPDATE events SET lease_owner = NULL, lease_until_ms = 0 WHERE lease_owner IS NOT NULL",
            [],
        )
        .map_err(|e| files.sql(e))?;
        drop(conn);
        let commits = Arc::new(AtomicU64::new(0));
        let (writer, thread) = files.spawn_writer(limits, commits.clone())?;
        Ok(SqliteStore {
            location: path.display().to_string(),
            path,
            writer: Some(writer),
            commits,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Opens an existing store for reading; a missing file is an error that says so.
    pub fn open_existing(path: impl Into<PathBuf>) -> Result<SqliteStore, Error> {
        let path = path.into();
        Files { path: path.clone() }.connect(false)?;
        Ok(SqliteStore {
            location: path.display().to_string(),
            path,
            writer: None,
            commits: Arc::default(),
            thread: Mutex::new(None),
        })
    }

    /// The SQLite file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn files(&self) -> Files {
        Files {
            path: self.path.clone(),
        }
    }

    /// Events with `id > after_id`, oldest first, at most `limit` (blocking).
    pub fn events_blocking(&self, after_id: i64, limit: usize) -> Result<Vec<StoredEvent>, Error> {
        let files = self.files();
        let conn = files.connect(false)?;
        let sql = format!("SELECT {EVENT_COLUMNS} FROM events WHERE id > ?1 ORDER BY id LIMIT ?2");
        query(&conn, &sql, params![after_id, limit_i64(limit)], event_row).map_err(|e| files.sql(e))
    }

    /// Row counts (blocking).
    pub fn counts_blocking(&self) -> Result<Counts, Error> {
        let files = self.files();
        let conn = files.connect(false)?;
        let one = |sql: &str| -> Result<i64, Error> {
            conn.query_row(sql, [], |r| r.get(0))
                .map_err(|e| files.sql(e))
        };
        Ok(Counts {
            events: one("SELECT count(*) FROM events")?,
            verified: one("SELECT count(*) FROM events WHERE verified = 1")?,
            quarantined: one("SELECT count(*) FROM quarantine")?,
            gaps: one("SELECT count(*) FROM gaps")?,
        })
    }

    /// Runs a read on a fresh connection in a blocking task.
    fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> StoreFuture<'_, T> {
        let files = self.files();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let conn = files.connect(false)?;
                f(&conn).map_err(|e| files.sql(e))
            })
            .await
            .map_err(|_| Error::WorkerGone)?
        })
    }

    fn write(&self, op: OpKind) -> StoreFuture<'_, Reply> {
        Box::pin(async move {
            match &self.writer {
                Some(w) => w.send(op).await,
                None => Err(Error::WriterGone {
                    path: self.path.clone(),
                }),
            }
        })
    }
}

impl EventStore for SqliteStore {
    fn location(&self) -> &str {
        &self.location
    }

    fn insert(&self, incoming: Incoming) -> StoreFuture<'_, Outcome> {
        Box::pin(async move {
            match self.write(OpKind::Insert(incoming)).await? {
                Reply::Outcome(o) => Ok(o),
                _ => Ok(Outcome::Duplicate),
            }
        })
    }

    fn claim(&self, claim: Claim) -> StoreFuture<'_, Vec<StoredEvent>> {
        Box::pin(async move {
            if claim.sinks == 0 {
                return Ok(Vec::new());
            }
            match self.write(OpKind::Claim(claim)).await? {
                Reply::Events(e) => Ok(e),
                _ => Ok(Vec::new()),
            }
        })
    }

    fn start_attempt(&self, id: i64, owner: &str) -> StoreFuture<'_, Option<i64>> {
        let owner = owner.to_owned();
        Box::pin(async move {
            match self.write(OpKind::Start(id, owner)).await? {
                Reply::Id(n) => Ok(Some(n)),
                _ => Ok(None),
            }
        })
    }

    fn record_handoff(&self, record: HandoffRecord) -> StoreFuture<'_, ()> {
        Box::pin(async move { self.write(OpKind::Handoff(record)).await.map(|_| ()) })
    }

    fn release(&self, owner: &str) -> StoreFuture<'_, ()> {
        let owner = owner.to_owned();
        Box::pin(async move { self.write(OpKind::Release(owner)).await.map(|_| ()) })
    }

    fn renew(&self, owner: &str, ids: Vec<i64>, until_ms: i64) -> StoreFuture<'_, ()> {
        let owner = owner.to_owned();
        Box::pin(async move {
            self.write(OpKind::Renew(owner, ids, until_ms))
                .await
                .map(|_| ())
        })
    }

    fn next_due(&self, sinks: u8) -> StoreFuture<'_, Option<i64>> {
        if sinks == 0 {
            return Box::pin(async { Ok(None) });
        }
        let sql = format!(
            "SELECT min(max(next_attempt_ms, lease_until_ms)) FROM events
             WHERE verified = 1 AND handed_off IN ({})",
            missing_bits(sinks)
        );
        self.read(move |conn| {
            conn.query_row(&sql, [], |r| r.get::<_, Option<i64>>(0))
                .optional()
                .map(Option::flatten)
        })
    }

    fn events(&self, after_id: i64, limit: usize) -> StoreFuture<'_, Vec<StoredEvent>> {
        let sql = format!("SELECT {EVENT_COLUMNS} FROM events WHERE id > ?1 ORDER BY id LIMIT ?2");
        self.read(move |conn| query(conn, &sql, params![after_id, limit_i64(limit)], event_row))
    }

    fn quarantined(&self, after_id: i64, limit: usize) -> StoreFuture<'_, Vec<Quarantined>> {
        self.read(move |conn| {
            query(
                conn,
                "SELECT id, received_at_ms, reason, signature, body_len, body FROM quarantine
                 WHERE id > ?1 ORDER BY id LIMIT ?2",
                params![after_id, limit_i64(limit)],
                |r| {
                    let body: Vec<u8> = r.get(5)?;
                    Ok(Quarantined {
                        id: r.get(0)?,
                        received_at_ms: r.get(1)?,
                        reason: r.get(2)?,
                        signature: r.get(3)?,
                        body_len: known_len(r.get(4)?, &body),
                        body,
                    })
                },
            )
        })
    }

    fn gaps(&self, after_id: i64, limit: usize) -> StoreFuture<'_, Vec<Gap>> {
        self.read(move |conn| {
            query(
                conn,
                "SELECT id, subscription_id, replaced_by, cause, from_ms, to_ms, last_sequence
                 FROM gaps WHERE id > ?1 ORDER BY id LIMIT ?2",
                params![after_id, limit_i64(limit)],
                |r| {
                    Ok(Gap {
                        id: r.get(0)?,
                        subscription_id: r.get(1)?,
                        replaced_by: r.get(2)?,
                        cause: r.get(3)?,
                        from_ms: r.get(4)?,
                        to_ms: r.get(5)?,
                        last_sequence: r.get(6)?,
                    })
                },
            )
        })
    }

    fn record_gap(&self, gap: Gap) -> StoreFuture<'_, i64> {
        Box::pin(async move {
            match self.write(OpKind::Gap(gap)).await? {
                Reply::Id(id) => Ok(id),
                _ => Ok(0),
            }
        })
    }

    fn last_event(&self, subscription_id: &str) -> StoreFuture<'_, Option<(i64, String)>> {
        let sub = subscription_id.to_owned();
        self.read(move |conn| {
            conn.query_row(
                "SELECT received_at_ms, sequence_number FROM events
                 WHERE subscription_id = ?1 AND verified = 1 ORDER BY id DESC LIMIT 1",
                params![sub],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
        })
    }

    fn counts(&self) -> StoreFuture<'_, Counts> {
        Box::pin(async move {
            let me = SqliteStore::open_existing(self.path.clone())?;
            tokio::task::spawn_blocking(move || me.counts_blocking())
                .await
                .map_err(|_| Error::WorkerGone)?
        })
    }

    fn setting_or_insert(&self, key: &str, value: &str) -> StoreFuture<'_, String> {
        let (key, value) = (key.to_owned(), value.to_owned());
        Box::pin(async move {
            match self.write(OpKind::Setting(key, value)).await? {
                Reply::Text(t) => Ok(t),
                _ => Err(Error::WorkerGone),
            }
        })
    }

    fn reverify(&self, subscription_id: &str, key: SigningKey) -> StoreFuture<'_, u64> {
        let sub = subscription_id.to_owned();
        Box::pin(async move {
            match self.write(OpKind::Reverify(sub, key)).await? {
                Reply::Id(n) => Ok(u64::try_from(n).unwrap_or(0)),
                _ => Ok(0),
            }
        })
    }

    fn prune(&self, retention: Retention) -> StoreFuture<'_, Pruned> {
        Box::pin(async move {
            match self.write(OpKind::Prune(retention)).await? {
                Reply::Pruned(p) => Ok(p),
                _ => Ok(Pruned::default()),
            }
        })
    }

    fn commits(&self) -> Option<u64> {
        Some(self.commits.load(Ordering::Relaxed))
    }

    fn close(&self) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let thread = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(thread) = thread {
                // The writer stops once every sender is gone; ours is the last one the
                // store holds, so ask it to stop explicitly.
                if let Some(w) = &self.writer {
                    let _ =
                        w.tx.send(Op {
                            kind: OpKind::Stop,
                            reply: None,
                        })
                        .await;
                }
                let _ = tokio::task::spawn_blocking(move || thread.join()).await;
            }
            Ok(())
        })
    }
}

/// Paths and connections of one store file.
struct Files {
    path: PathBuf,
}

impl Files {
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

    fn create(&self) -> Result<(), Error> {
        if let Some(dir) = self.path.parent() {
            bridgectl_local::files::create_private_dir(dir).map_err(|e| self.io(e))?;
        }
        // The file and its WAL private, their directory entry durable (SQLite is built
        // without its own directory fsync: see `bridgectl_local::sqlite::prepare_files`).
        bridgectl_local::sqlite::prepare_files(&self.path).map_err(|e| self.sql(e))
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

    /// Starts the writer thread and its checkpoint thread.
    fn spawn_writer(
        &self,
        limits: Limits,
        commits: Arc<AtomicU64>,
    ) -> Result<(Writer, WriterThread), Error> {
        let conn = self.connect(true)?;
        // Checkpoints run beside the writer (see `checkpoint_loop`), not inside its commits;
        // this bound only matters if that thread falls behind.
        conn.pragma_update(None, "wal_autocheckpoint", WRITER_AUTOCHECKPOINT_PAGES)
            .map_err(|e| self.sql(e))?;
        #[cfg(feature = "bench")]
        bench_stats::install(&conn, WRITER_AUTOCHECKPOINT_PAGES).map_err(|e| self.sql(e))?;
        let kept = kept_so_far(&conn).map_err(|e| self.sql(e))?;
        let checkpointer = self.connect(false)?;
        let (stop_checkpoints, stopped) = std::sync::mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("webhook-store-checkpoint".into())
            .spawn(move || checkpoint_loop(checkpointer, stopped))
            .map_err(|e| self.io(e))?;
        let (tx, rx) = mpsc::channel(QUEUE);
        let handle = std::thread::Builder::new()
            .name("webhook-store-writer".into())
            .spawn(move || {
                writer_loop(conn, rx, limits, kept, &commits);
                drop(stop_checkpoints);
            })
            .map_err(|e| self.io(e))?;
        Ok((
            Writer {
                tx,
                path: Arc::new(self.path.clone()),
            },
            WriterThread { handle },
        ))
    }
}

fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    for (table, column, definition) in ADDED_COLUMNS {
        let present: i64 = conn.query_row(
            &format!("SELECT count(*) FROM pragma_table_info('{table}') WHERE name = ?1"),
            params![column],
            |r| r.get(0),
        )?;
        if present == 0 {
            conn.execute_batch(&format!(
                "ALTER TABLE {table} ADD COLUMN {column} {definition}"
            ))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{IncomingKind, Verification};

    /// The writer and the checkpointer connect through `Files::connect`: WAL, and
    /// `synchronous = FULL` (2), so a 200 means the delivery's commit is on disk.
    /// `NORMAL` (1) would survive a killed process but not a power cut.
    #[test]
    fn every_writing_connection_commits_at_full_durability() {
        let dir = tempfile::tempdir().expect("tempdir");
        let files = Files {
            path: dir.path().join("events.sqlite"),
        };
        let conn = files.connect(true).expect("connect");
        let synchronous: i64 = conn
            .pragma_query_value(None, "synchronous", |r| r.get(0))
            .expect("synchronous");
        assert_eq!(synchronous, 2, "synchronous = FULL");
        let mode: String = conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .expect("journal_mode");
        assert_eq!(mode, "wal");
    }

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
        let store = SqliteStore::open(&path, Limits::default()).expect("store");
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
            let outcome = store
                .insert(event(body, seq, verification))
                .await
                .expect("insert");
            assert_eq!(
                matches!(outcome, Outcome::Stored(_)),
                new,
                "case {i}: {outcome:?}"
            );
        }
        store.close().await.expect("close");
        let counts = store.counts_blocking().expect("counts");
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
