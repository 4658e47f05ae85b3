//! The one writer thread of a SQLite event store: requests queued from every connection
//! are applied in batches of up to [`MAX_BATCH`], each batch one transaction and one
//! commit (one fsync), and a checkpointer keeps the WAL bounded beside it.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::{mpsc, oneshot};

use crate::Error;
use crate::store::{
    Claim, Gap, HandoffRecord, Incoming, IncomingKind, Kept, Limits, Outcome, Pruned, Retention,
    SigningKey, StoredEvent, Verification,
};

#[cfg(feature = "bench")]
use super::bench_stats;
use super::rows::{EVENT_COLUMNS, event_row, kept_so_far, limit_i64, missing_bits, query};

/// The most requests committed in one transaction.
pub const MAX_BATCH: usize = 1024;

/// How often the checkpoint thread folds the WAL into the database.
pub(super) const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

pub(super) enum OpKind {
    Insert(Incoming),
    Claim(Claim),
    Start(i64, String),
    Handoff(HandoffRecord),
    Gap(Gap),
    Setting(String, String),
    Reverify(String, SigningKey),
    Release(String),
    Renew(String, Vec<i64>, i64),
    Prune(Retention),
    Stop,
}

pub(super) enum Reply {
    Outcome(Outcome),
    Events(Vec<StoredEvent>),
    Id(i64),
    Text(String),
    Pruned(Pruned),
    Done,
}

type ReplyTx = oneshot::Sender<Result<Reply, Arc<rusqlite::Error>>>;

pub(super) struct Op {
    pub(super) kind: OpKind,
    pub(super) reply: Option<ReplyTx>,
}

/// A handle to the writer thread: cheap to clone.
#[derive(Clone, Debug)]
pub(super) struct Writer {
    pub(super) tx: mpsc::Sender<Op>,
    pub(super) path: Arc<PathBuf>,
}

/// The writer thread.
#[derive(Debug)]
pub(super) struct WriterThread {
    pub(super) handle: std::thread::JoinHandle<()>,
}

impl WriterThread {
    /// Blocks until the writer has committed everything queued and closed the database.
    pub(super) fn join(self) {
        let _ = self.handle.join();
    }
}

impl Writer {
    pub(super) async fn send(&self, kind: OpKind) -> Result<Reply, Error> {
        let gone = || Error::WriterGone {
            path: (*self.path).clone(),
        };
        let (tx, rx) = oneshot::channel();
        self.tx
            .send(Op {
                kind,
                reply: Some(tx),
            })
            .await
            .map_err(|_| gone())?;
        match rx.await {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(source)) => Err(Error::StoreWrite {
                path: (*self.path).clone(),
                source,
            }),
            Err(_) => Err(gone()),
        }
    }
}

pub(super) fn writer_loop(
    mut conn: Connection,
    mut rx: mpsc::Receiver<Op>,
    limits: Limits,
    mut kept: Kept,
    commits: &AtomicU64,
) {
    let mut batch: Vec<Op> = Vec::with_capacity(MAX_BATCH);
    let mut stop = false;
    while !stop && let Some(first) = rx.blocking_recv() {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(op) => batch.push(op),
                Err(_) => break,
            }
        }
        stop = batch.iter().any(|op| matches!(op.kind, OpKind::Stop));
        let before = kept;
        let results = commit_batch(&mut conn, &batch, &limits, &mut kept, commits);
        if results.first().is_some_and(Result::is_err) {
            // Nothing of the batch was committed: the bodies are not kept either.
            kept = before;
        }
        for (op, result) in batch.drain(..).zip(results) {
            // The requester may have gone (client hung up): the row is stored regardless.
            if let Some(reply) = op.reply {
                let _ = reply.send(result);
            }
        }
    }
    // Every sender is gone: fold the WAL back so the file is complete on its own.
    let _ = conn.pragma_update(None, "wal_checkpoint", "TRUNCATE");
}

/// PASSIVE checkpoints on a second connection: they copy committed pages into the
/// database without blocking the writer, so a commit never waits for a checkpoint (with
/// SQLite's default, every ~1000 pages one unlucky commit does the whole checkpoint and its
/// fsyncs while a batch of requests waits). Stops when the writer thread ends.
pub(super) fn checkpoint_loop(conn: Connection, stop: std::sync::mpsc::Receiver<()>) {
    while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(CHECKPOINT_EVERY)
    {
        let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
    }
}

/// One transaction for the whole batch; per-op results, all failed if the commit fails.
/// A commit that succeeds is counted in `commits`.
pub(super) fn commit_batch(
    conn: &mut Connection,
    batch: &[Op],
    limits: &Limits,
    kept: &mut Kept,
    commits: &AtomicU64,
) -> Vec<Result<Reply, Arc<rusqlite::Error>>> {
    let tx = match conn.transaction() {
        Ok(tx) => tx,
        Err(e) => {
            let e = Arc::new(e);
            return batch.iter().map(|_| Err(e.clone())).collect();
        }
    };
    #[cfg(feature = "bench")]
    let timer = bench_stats::Timer::start();
    let mut results: Vec<Result<Reply, Arc<rusqlite::Error>>> = batch
        .iter()
        .map(|op| apply(&tx, &op.kind, limits, kept).map_err(Arc::new))
        .collect();
    #[cfg(feature = "bench")]
    let timer = timer.applied(batch.len());
    let committed = tx.commit();
    #[cfg(feature = "bench")]
    timer.committed();
    match committed {
        Ok(()) => {
            commits.fetch_add(1, Ordering::Relaxed);
        }
        Err(e) => {
            let e = Arc::new(e);
            for r in &mut results {
                *r = Err(e.clone());
            }
        }
    }
    results
}

pub(super) fn apply(
    tx: &rusqlite::Transaction<'_>,
    op: &OpKind,
    limits: &Limits,
    kept: &mut Kept,
) -> rusqlite::Result<Reply> {
    match op {
        OpKind::Insert(incoming) => insert(tx, incoming, limits, kept).map(Reply::Outcome),
        OpKind::Claim(claim) => {
            // The oldest due events of the subscriptions none of whose due events
            // another claimant holds: one subscription's events go to one claimant.
            let due = format!(
                "verified = 1 AND handed_off IN ({}) AND next_attempt_ms <= ?1",
                missing_bits(claim.sinks)
            );
            let sql = format!(
                "SELECT {EVENT_COLUMNS} FROM events WHERE id IN (
                    SELECT id FROM (
                        SELECT id, row_number() OVER
                            (PARTITION BY subscription_id ORDER BY id) AS n
                        FROM events
                        WHERE {due} AND subscription_id IN (
                            SELECT subscription_id FROM events WHERE {due}
                              AND subscription_id NOT IN (SELECT value FROM json_each(?5))
                            GROUP BY subscription_id
                            HAVING sum(lease_until_ms > ?1 AND lease_owner IS NOT ?2) = 0
                            ORDER BY min(id) LIMIT ?3))
                    WHERE n <= ?4)
                 ORDER BY id"
            );
            let events = query(
                tx,
                &sql,
                params![
                    claim.now_ms,
                    claim.owner,
                    limit_i64(claim.limit),
                    limit_i64(claim.per_subscription),
                    serde_json::to_string(&claim.busy).unwrap_or_else(|_| "[]".into())
                ],
                event_row,
            )?;
            let mut lease = tx.prepare_cached(
                "UPDATE events SET lease_owner = ?2, lease_until_ms = ?3 WHERE id = ?1",
            )?;
            for e in &events {
                lease.execute(params![
                    e.id,
                    claim.owner,
                    claim.now_ms.saturating_add(claim.lease_ms)
                ])?;
            }
            Ok(Reply::Events(events))
        }
        OpKind::Start(id, owner) => {
            let mut stmt = tx.prepare_cached(
                "UPDATE events SET attempts = attempts + 1 WHERE id = ?1 AND lease_owner = ?2
                 RETURNING attempts",
            )?;
            let attempt = stmt
                .query_row(params![id, owner], |r| r.get::<_, i64>(0))
                .optional()?;
            Ok(attempt.map_or(Reply::Done, Reply::Id))
        }
        OpKind::Handoff(record) => {
            let mut stmt = tx.prepare_cached(
                "UPDATE events SET handed_off = handed_off | ?2,
                    last_error = ?3,
                    next_attempt_ms = CASE WHEN ?3 IS NULL THEN next_attempt_ms ELSE ?4 END,
                    lease_owner = CASE WHEN lease_owner = ?5 THEN NULL ELSE lease_owner END,
                    lease_until_ms = CASE WHEN lease_owner = ?5 THEN 0 ELSE lease_until_ms END
                 WHERE id = ?1",
            )?;
            stmt.execute(params![
                record.id,
                i64::from(record.done),
                record.error,
                record.next_attempt_ms,
                record.owner,
            ])?;
            Ok(Reply::Done)
        }
        OpKind::Gap(gap) => {
            tx.execute(
                "INSERT INTO gaps (subscription_id, replaced_by, cause, from_ms, to_ms,
                    last_sequence) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    gap.subscription_id,
                    gap.replaced_by,
                    gap.cause,
                    gap.from_ms,
                    gap.to_ms,
                    gap.last_sequence
                ],
            )?;
            Ok(Reply::Id(tx.last_insert_rowid()))
        }
        OpKind::Setting(key, value) => {
            tx.execute(
                "INSERT OR IGNORE INTO settings (key, value) VALUES (?1, ?2)",
                params![key, value],
            )?;
            tx.query_row(
                "SELECT value FROM settings WHERE key = ?1",
                params![key],
                |r| r.get(0),
            )
            .map(Reply::Text)
        }
        OpKind::Reverify(sub, key) => {
            let rows = query(
                tx,
                "SELECT id, body, signature FROM events
                 WHERE subscription_id = ?1 AND verified = 0 AND verification = ?2",
                params![sub, Verification::NoKey.as_str()],
                |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, Vec<u8>>(1)?,
                        r.get::<_, Option<String>>(2)?,
                    ))
                },
            )?;
            let mut done = 0;
            for (id, body, sig) in rows {
                if let Some(sig) = sig
                    && crate::store::signature_matches(key, &body, &sig)
                {
                    // OR IGNORE: if the genuine event is stored already, this copy stays.
                    done += tx.execute(
                        "UPDATE OR IGNORE events SET verified = 1, verification = ?2 WHERE id = ?1",
                        params![id, Verification::Valid.as_str()],
                    )?;
                }
            }
            Ok(Reply::Id(i64::try_from(done).unwrap_or(0)))
        }
        OpKind::Release(owner) => {
            tx.execute(
                "UPDATE events SET lease_owner = NULL, lease_until_ms = 0 WHERE lease_owner = ?1",
                params![owner],
            )?;
            Ok(Reply::Done)
        }
        OpKind::Renew(owner, ids, until_ms) => {
            let mut stmt = tx.prepare_cached(
                "UPDATE events SET lease_until_ms = ?3 WHERE id = ?1 AND lease_owner = ?2",
            )?;
            for id in ids {
                stmt.execute(params![id, owner, until_ms])?;
            }
            Ok(Reply::Done)
        }
        OpKind::Prune(retention) => {
            let cutoff = crate::store::now_ms()
                .saturating_sub(i64::try_from(retention.max_age.as_millis()).unwrap_or(i64::MAX));
            let keep = i64::try_from(retention.max_rows).unwrap_or(i64::MAX);
            let unverified = tx.execute(
                "DELETE FROM events WHERE verified = 0 AND (received_at_ms < ?1 OR id <=
                   (SELECT id FROM events WHERE verified = 0 ORDER BY id DESC
                    LIMIT 1 OFFSET ?2))",
                params![cutoff, keep],
            )?;
            let quarantined = tx.execute(
                "DELETE FROM quarantine WHERE received_at_ms < ?1 OR id <=
                   (SELECT id FROM quarantine ORDER BY id DESC LIMIT 1 OFFSET ?2)",
                params![cutoff, keep],
            )?;
            // What was freed may be kept again.
            *kept = kept_so_far(tx)?;
            Ok(Reply::Pruned(Pruned {
                unverified: unverified as u64,
                quarantined: quarantined as u64,
            }))
        }
        OpKind::Stop => Ok(Reply::Done),
    }
}

pub(super) fn insert(
    tx: &rusqlite::Transaction<'_>,
    incoming: &Incoming,
    limits: &Limits,
    kept: &mut Kept,
) -> rusqlite::Result<Outcome> {
    // Past the limits a stranger's row keeps its hash and headers, not its body; a
    // delivery that adds no row gives back what it was counted.
    let admitted = kept.admit(limits, incoming);
    let body: &[u8] = if admitted { &incoming.body } else { &[] };
    let outcome = insert_row(tx, incoming, body)?;
    if admitted && matches!(outcome, Outcome::Duplicate | Outcome::QuarantineDuplicate) {
        kept.refund(limits, &incoming.kind, incoming.body.len());
    }
    Ok(outcome)
}

pub(super) fn insert_row(
    tx: &rusqlite::Transaction<'_>,
    incoming: &Incoming,
    body: &[u8],
) -> rusqlite::Result<Outcome> {
    let body_len = i64::try_from(incoming.body.len()).unwrap_or(i64::MAX);
    match &incoming.kind {
        IncomingKind::Event {
            subscription_id,
            sequence_number,
            event_type,
            verification,
        } => {
            let mut stmt = tx.prepare_cached(
                "INSERT OR IGNORE INTO events (received_at_ms, subscription_id,
                    sequence_number, event_type, verified, verification, signature,
                    body_sha256, body, body_len)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
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
                body,
                body_len,
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
                    body_sha256, body, body_len)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            let n = stmt.execute(params![
                incoming.received_at_ms,
                reason,
                incoming.signature,
                &incoming.body_sha256[..],
                body,
                body_len,
            ])?;
            Ok(if n == 1 {
                Outcome::Quarantined(tx.last_insert_rowid())
            } else {
                Outcome::QuarantineDuplicate
            })
        }
    }
}
