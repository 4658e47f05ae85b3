//! The PostgreSQL event store: two or more listener replicas on one database.
//!
//! # What "durable" and "once" mean here
//!
//! A replica answers 200 only after its own `INSERT` has committed (with the server's
//! `synchronous_commit`, on by default: the WAL is flushed before the commit returns).
//! The partial unique indexes make the second copy of an event a no-op whichever replica
//! receives it (`ON CONFLICT DO NOTHING`), so retries and a load balancer that sends the
//! same delivery to two replicas store it once.
//!
//! The hand-off claims events with `FOR UPDATE SKIP LOCKED` and a lease
//! (`lease_owner`, `lease_until_ms`): two replicas never claim the same event at the same
//! time, and the events of a replica that died are claimed by another once the lease has
//! expired.
//!
//! # Batching
//!
//! One writer task per replica takes every queued delivery (up to [`MAX_BATCH`]) into one
//! `INSERT ... SELECT FROM unnest(...)`, a single statement and a single commit, sorted by
//! key so two replicas take row locks in the same order. A deadlock or serialization
//! failure (which the sort makes rare) is retried.
//!
//! # Limits across replicas
//!
//! Each replica starts from the totals in the database and counts what it adds, so with
//! N replicas the bodies kept of strangers are bounded by N × [`Limits`].
//!
//! Tables are prefixed `webhook_` so the database may be shared with other software.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};
use tokio_postgres::{Client, NoTls, Row};

use super::{
    Claim, Counts, EventStore, Gap, HandoffRecord, Incoming, IncomingKind, Kept, Limits, Outcome,
    Pruned, Quarantined, Retention, SigningKey, StoreFuture, StoredEvent, Verification, redact_url,
};
use crate::Error;

/// The most deliveries one statement stores.
pub const MAX_BATCH: usize = 512;

/// How many deliveries may wait for the writer.
const QUEUE: usize = 512;

/// How often a batch is retried after a deadlock or serialization failure.
const RETRIES: usize = 5;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS webhook_events (
    id BIGSERIAL PRIMARY KEY,
    received_at_ms BIGINT NOT NULL,
    subscription_id TEXT NOT NULL,
    sequence_number TEXT NOT NULL,
    event_type TEXT,
    verified BOOLEAN NOT NULL,
    verification TEXT NOT NULL,
    signature TEXT,
    body_sha256 BYTEA NOT NULL,
    body BYTEA NOT NULL,
    body_len BIGINT NOT NULL,
    handed_off SMALLINT NOT NULL DEFAULT 0,
    attempts BIGINT NOT NULL DEFAULT 0,
    next_attempt_ms BIGINT NOT NULL DEFAULT 0,
    last_error TEXT,
    lease_owner TEXT,
    lease_until_ms BIGINT NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX IF NOT EXISTS webhook_events_genuine
    ON webhook_events (subscription_id, sequence_number) WHERE verified;
CREATE UNIQUE INDEX IF NOT EXISTS webhook_events_unverified_body
    ON webhook_events (body_sha256) WHERE NOT verified;
CREATE INDEX IF NOT EXISTS webhook_events_pending
    ON webhook_events (handed_off, next_attempt_ms) WHERE verified;
CREATE TABLE IF NOT EXISTS webhook_quarantine (
    id BIGSERIAL PRIMARY KEY,
    received_at_ms BIGINT NOT NULL,
    reason TEXT NOT NULL,
    signature TEXT,
    body_sha256 BYTEA NOT NULL UNIQUE,
    body BYTEA NOT NULL,
    body_len BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS webhook_gaps (
    id BIGSERIAL PRIMARY KEY,
    subscription_id TEXT NOT NULL,
    replaced_by TEXT NOT NULL,
    cause TEXT NOT NULL,
    from_ms BIGINT NOT NULL,
    to_ms BIGINT NOT NULL,
    last_sequence TEXT
);
CREATE TABLE IF NOT EXISTS webhook_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
";

/// An arbitrary constant: the advisory lock that serialises schema creation, so two
/// replicas starting together do not race on `CREATE ... IF NOT EXISTS`.
const SCHEMA_LOCK: i64 = 0x6272_6964_6765;

const EVENT_COLUMNS: &str = "id, received_at_ms, subscription_id, sequence_number, event_type, \
    verified, verification, handed_off, attempts, last_error, signature, body_len, body";

/// The PostgreSQL store of one replica.
pub struct PgStore {
    location: String,
    client: Arc<Client>,
    writer: Mutex<Option<mpsc::Sender<Pending>>>,
    writer_task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    kept: Mutex<Kept>,
    limits: Limits,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

type Reply = oneshot::Sender<Result<Outcome, Arc<tokio_postgres::Error>>>;

struct Pending {
    incoming: Incoming,
    keep_body: bool,
    reply: Reply,
}

async fn connect(url: &str, location: &str) -> Result<Client, Error> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(|source| Error::Postgres {
            location: location.to_owned(),
            source,
        })?;
    // The connection runs until the client is dropped; its error, if any, surfaces as
    // the error of the next query.
    tokio::spawn(async move {
        let _ = connection.await;
    });
    // The 200 promises the commit is on disk: a server (or a role, or the connection
    // string) that turned `synchronous_commit` off would answer it before the WAL is
    // flushed. Any other level (`local`, `remote_write`, `on`, `remote_apply`) flushes
    // the local WAL first and is kept as the administrator chose it.
    let level = client
        .query_one("SHOW synchronous_commit", &[])
        .await
        .and_then(|row| row.try_get::<_, String>(0))
        .map_err(|source| Error::Postgres {
            location: location.to_owned(),
            source,
        })?;
    if level.eq_ignore_ascii_case("off") {
        client
            .batch_execute("SET synchronous_commit = on")
            .await
            .map_err(|source| Error::Postgres {
                location: location.to_owned(),
                source,
            })?;
    }
    Ok(client)
}

impl PgStore {
    /// Connects, ensures the schema and starts the writer task.
    pub async fn open(url: &str, limits: Limits) -> Result<PgStore, Error> {
        let location = redact_url(url);
        let pg = |source| Error::Postgres {
            location: location.clone(),
            source,
        };
        let mut client = connect(url, &location).await?;
        {
            let tx = client.transaction().await.map_err(pg)?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
                .await
                .map_err(pg)?;
            tx.batch_execute(SCHEMA).await.map_err(pg)?;
            tx.commit().await.map_err(pg)?;
        }
        let kept = kept_so_far(&client).await.map_err(pg)?;
        let writer_client = connect(url, &location).await?;
        let (tx, rx) = mpsc::channel(QUEUE);
        let task = tokio::spawn(writer_loop(writer_client, rx));
        Ok(PgStore {
            location,
            client: Arc::new(client),
            writer: Mutex::new(Some(tx)),
            writer_task: Mutex::new(Some(task)),
            kept: Mutex::new(kept),
            limits,
        })
    }

    /// The `synchronous_commit` this store's connections commit with (each is made the
    /// same way): never `off`, whatever the server, role or connection string says.
    pub async fn synchronous_commit(&self) -> Result<String, Error> {
        let row = self
            .client
            .query_one("SHOW synchronous_commit", &[])
            .await
            .map_err(|e| self.pg(e))?;
        row.try_get(0).map_err(|e| self.pg(e))
    }

    fn pg(&self, source: tokio_postgres::Error) -> Error {
        Error::Postgres {
            location: self.location.clone(),
            source,
        }
    }

    fn gone(&self) -> Error {
        Error::WriterGone {
            path: self.location.clone().into(),
        }
    }
}

async fn kept_so_far(client: &Client) -> Result<Kept, tokio_postgres::Error> {
    let row = client
        .query_one(
            "SELECT
               (SELECT count(*) FROM webhook_events
                  WHERE NOT verified AND length(body) > 0 AND verification <> $1),
               (SELECT coalesce(sum(length(body)), 0)::bigint FROM webhook_events
                  WHERE NOT verified AND length(body) > 0 AND verification <> $1),
               (SELECT count(*) FROM webhook_quarantine WHERE length(body) > 0),
               (SELECT coalesce(sum(length(body)), 0)::bigint FROM webhook_quarantine
                  WHERE length(body) > 0),
               (SELECT count(*) FROM webhook_events
                  WHERE NOT verified AND length(body) > 0 AND verification = $1),
               (SELECT coalesce(sum(length(body)), 0)::bigint FROM webhook_events
                  WHERE NOT verified AND length(body) > 0 AND verification = $1)",
            &[&Verification::NoKey.as_str()],
        )
        .await?;
    let n = |i: usize| u64::try_from(row.get::<_, i64>(i)).unwrap_or(0);
    Ok(Kept {
        unverified_rows: n(0),
        unverified_bytes: n(1),
        quarantine_rows: n(2),
        quarantine_bytes: n(3),
        no_key_rows: n(4),
        no_key_bytes: n(5),
    })
}

async fn writer_loop(client: Client, mut rx: mpsc::Receiver<Pending>) {
    let mut batch: Vec<Pending> = Vec::with_capacity(MAX_BATCH);
    while let Some(first) = rx.recv().await {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(p) => batch.push(p),
                Err(_) => break,
            }
        }
        let (events, quarantine): (Vec<Pending>, Vec<Pending>) = batch
            .drain(..)
            .partition(|p| matches!(p.incoming.kind, IncomingKind::Event { .. }));
        for group in [events, quarantine] {
            if group.is_empty() {
                continue;
            }
            let mut result = store_batch(&client, &group).await;
            for _ in 0..RETRIES {
                match &result {
                    Err(e) if retryable(e) => result = store_batch(&client, &group).await,
                    _ => break,
                }
            }
            match result {
                Ok(outcomes) => {
                    for (p, o) in group.into_iter().zip(outcomes) {
                        let _ = p.reply.send(Ok(o));
                    }
                }
                Err(e) => {
                    let e = Arc::new(e);
                    for p in group {
                        let _ = p.reply.send(Err(e.clone()));
                    }
                }
            }
        }
    }
}

fn retryable(e: &tokio_postgres::Error) -> bool {
    use tokio_postgres::error::SqlState;
    matches!(
        e.code(),
        Some(c) if *c == SqlState::T_R_DEADLOCK_DETECTED || *c == SqlState::T_R_SERIALIZATION_FAILURE
    )
}

/// The key a row is unique by: (subscriptionId, sequenceNumber) when verified, else the
/// body hash.
fn key(incoming: &Incoming) -> (bool, String, String, [u8; 32]) {
    match &incoming.kind {
        IncomingKind::Event {
            subscription_id,
            sequence_number,
            ..
        } if incoming.is_verified() => (
            true,
            subscription_id.clone(),
            sequence_number.clone(),
            [0; 32],
        ),
        _ => (false, String::new(), String::new(), incoming.body_sha256),
    }
}

/// One statement for a group of events (or of quarantine rows): each gets its outcome.
async fn store_batch(
    client: &Client,
    group: &[Pending],
) -> Result<Vec<Outcome>, tokio_postgres::Error> {
    let quarantine = matches!(group[0].incoming.kind, IncomingKind::Quarantine { .. });
    let mut order: Vec<usize> = (0..group.len()).collect();
    order.sort_by_key(|&i| key(&group[i].incoming));
    let rows = &order;
    let at: Vec<i64> = rows
        .iter()
        .map(|&i| group[i].incoming.received_at_ms)
        .collect();
    let sig: Vec<Option<&str>> = rows
        .iter()
        .map(|&i| group[i].incoming.signature.as_deref())
        .collect();
    let hash: Vec<&[u8]> = rows
        .iter()
        .map(|&i| &group[i].incoming.body_sha256[..])
        .collect();
    let body: Vec<&[u8]> = rows
        .iter()
        .map(|&i| {
            let p = &group[i];
            if p.keep_body {
                &p.incoming.body[..]
            } else {
                &[][..]
            }
        })
        .collect();
    let len: Vec<i64> = rows
        .iter()
        .map(|&i| i64::try_from(group[i].incoming.body.len()).unwrap_or(i64::MAX))
        .collect();
    let mut inserted: HashMap<(bool, String, String, [u8; 32]), i64> = HashMap::new();
    if quarantine {
        let reason: Vec<&str> = rows
            .iter()
            .map(|&i| match &group[i].incoming.kind {
                IncomingKind::Quarantine { reason } => reason.as_str(),
                IncomingKind::Event { .. } => "",
            })
            .collect();
        let returned = client
            .query(
                "INSERT INTO webhook_quarantine
                    (received_at_ms, reason, signature, body_sha256, body, body_len)
                 SELECT * FROM unnest($1::int8[], $2::text[], $3::text[], $4::bytea[],
                    $5::bytea[], $6::int8[])
                 ON CONFLICT DO NOTHING RETURNING id, body_sha256",
                &[&at, &reason, &sig, &hash, &body, &len],
            )
            .await?;
        for r in returned {
            let h: Vec<u8> = r.get(1);
            let mut k = [0u8; 32];
            if h.len() == 32 {
                k.copy_from_slice(&h);
            }
            inserted.insert((false, String::new(), String::new(), k), r.get(0));
        }
    } else {
        let mut sub = Vec::new();
        let mut seq = Vec::new();
        let mut event_type = Vec::new();
        let mut verified = Vec::new();
        let mut verification = Vec::new();
        for &i in rows {
            if let IncomingKind::Event {
                subscription_id,
                sequence_number,
                event_type: t,
                verification: v,
            } = &group[i].incoming.kind
            {
                sub.push(subscription_id.as_str());
                seq.push(sequence_number.as_str());
                event_type.push(t.as_deref());
                verified.push(group[i].incoming.is_verified());
                verification.push(v.as_str());
            }
        }
        let returned = client
            .query(
                "INSERT INTO webhook_events (received_at_ms, subscription_id, sequence_number,
                    event_type, verified, verification, signature, body_sha256, body, body_len)
                 SELECT * FROM unnest($1::int8[], $2::text[], $3::text[], $4::text[],
                    $5::bool[], $6::text[], $7::text[], $8::bytea[], $9::bytea[], $10::int8[])
                 ON CONFLICT DO NOTHING
                 RETURNING id, verified, subscription_id, sequence_number, body_sha256",
                &[
                    &at,
                    &sub,
                    &seq,
                    &event_type,
                    &verified,
                    &verification,
                    &sig,
                    &hash,
                    &body,
                    &len,
                ],
            )
            .await?;
        for r in returned {
            let v: bool = r.get(1);
            let k = if v {
                (true, r.get(2), r.get(3), [0; 32])
            } else {
                let h: Vec<u8> = r.get(4);
                let mut k = [0u8; 32];
                if h.len() == 32 {
                    k.copy_from_slice(&h);
                }
                (false, String::new(), String::new(), k)
            };
            inserted.insert(k, r.get(0));
        }
    }
    // The first request of a key that was inserted gets the row; any other is a repeat.
    Ok(group
        .iter()
        .map(|p| match inserted.remove(&key(&p.incoming)) {
            Some(id) if quarantine => Outcome::Quarantined(id),
            Some(id) => Outcome::Stored(id),
            None if quarantine => Outcome::QuarantineDuplicate,
            None => Outcome::Duplicate,
        })
        .collect())
}

fn event_row(r: &Row) -> StoredEvent {
    StoredEvent {
        id: r.get(0),
        received_at_ms: r.get(1),
        subscription_id: r.get(2),
        sequence_number: r.get(3),
        event_type: r.get(4),
        verified: r.get(5),
        verification: r.get(6),
        handed_off: u8::try_from(r.get::<_, i16>(7)).unwrap_or(0),
        attempts: r.get(8),
        last_error: r.get(9),
        signature: r.get(10),
        body_len: r.get(11),
        body: r.get(12),
    }
}

/// `handed_off` values that lack one of `sinks`.
fn missing_bits(sinks: u8) -> Vec<i16> {
    (0i16..4).filter(|h| (*h as u8) & sinks != sinks).collect()
}

fn limit_i64(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

impl EventStore for PgStore {
    fn location(&self) -> &str {
        &self.location
    }

    fn insert(&self, incoming: Incoming) -> StoreFuture<'_, Outcome> {
        Box::pin(async move {
            let sender = self
                .writer
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
                .ok_or_else(|| self.gone())?;
            let (reply, rx) = oneshot::channel();
            let keep_body = self
                .kept
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .admit(&self.limits, &incoming);
            // What to give back if the delivery adds no row: only kept bodies count.
            let refund = (keep_body && !incoming.is_verified())
                .then(|| (incoming.kind.clone(), incoming.body.len()));
            sender
                .send(Pending {
                    incoming,
                    keep_body,
                    reply,
                })
                .await
                .map_err(|_| self.gone())?;
            let answer = rx.await;
            if let (Ok(Ok(Outcome::Duplicate | Outcome::QuarantineDuplicate)), Some((kind, len))) =
                (&answer, refund)
            {
                self.kept.lock().unwrap_or_else(|p| p.into_inner()).refund(
                    &self.limits,
                    &kind,
                    len,
                );
            }
            match answer {
                Ok(Ok(outcome)) => Ok(outcome),
                Ok(Err(source)) => Err(Error::PostgresWrite {
                    location: self.location.clone(),
                    source,
                }),
                Err(_) => Err(self.gone()),
            }
        })
    }

    fn claim(&self, claim: Claim) -> StoreFuture<'_, Vec<StoredEvent>> {
        Box::pin(async move {
            if claim.sinks == 0 {
                return Ok(Vec::new());
            }
            let sql = format!(
                // The oldest due events of the subscriptions none of whose due events
                // another replica holds: one subscription's events go to one replica.
                // Two replicas that pick the same events race on their rows: the second
                // re-checks the lease once the first commits, and skips them.
                "UPDATE webhook_events SET lease_owner = $1, lease_until_ms = $2
                 WHERE id IN (
                    SELECT id FROM (
                        SELECT id, row_number() OVER
                            (PARTITION BY subscription_id ORDER BY id) AS n
                        FROM webhook_events
                        WHERE verified AND handed_off = ANY($3) AND next_attempt_ms <= $4
                          AND subscription_id IN (
                            SELECT subscription_id FROM webhook_events
                            WHERE verified AND handed_off = ANY($3) AND next_attempt_ms <= $4
                              AND NOT (subscription_id = ANY($7))
                            GROUP BY subscription_id
                            HAVING bool_and(lease_until_ms <= $4 OR lease_owner = $1)
                            ORDER BY min(id) LIMIT $5)) lanes
                    WHERE n <= $6)
                   AND (lease_until_ms <= $4 OR lease_owner = $1)
                 RETURNING {EVENT_COLUMNS}"
            );
            let rows = self
                .client
                .query(
                    &sql,
                    &[
                        &claim.owner,
                        &claim.now_ms.saturating_add(claim.lease_ms),
                        &missing_bits(claim.sinks),
                        &claim.now_ms,
                        &limit_i64(claim.limit),
                        &limit_i64(claim.per_subscription),
                        &claim.busy,
                    ],
                )
                .await
                .map_err(|e| self.pg(e))?;
            let mut events: Vec<StoredEvent> = rows.iter().map(event_row).collect();
            events.sort_by_key(|e| e.id);
            Ok(events)
        })
    }

    fn start_attempt(&self, id: i64, owner: &str) -> StoreFuture<'_, Option<i64>> {
        let owner = owner.to_owned();
        Box::pin(async move {
            // One statement is one transaction: committed (durable, under the server's
            // synchronous_commit) before the answer, so before the attempt runs.
            let row = self
                .client
                .query_opt(
                    "UPDATE webhook_events SET attempts = attempts + 1
                     WHERE id = $1 AND lease_owner = $2 RETURNING attempts",
                    &[&id, &owner],
                )
                .await
                .map_err(|e| self.pg(e))?;
            Ok(row.map(|r| r.get(0)))
        })
    }

    fn record_handoff(&self, record: HandoffRecord) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            self.client
                .execute(
                    "UPDATE webhook_events SET handed_off = handed_off | $2,
                        last_error = $3,
                        next_attempt_ms = CASE WHEN $3::text IS NULL THEN next_attempt_ms
                                               ELSE $4 END,
                        lease_owner = CASE WHEN lease_owner = $5 THEN NULL ELSE lease_owner END,
                        lease_until_ms = CASE WHEN lease_owner = $5 THEN 0
                                              ELSE lease_until_ms END
                     WHERE id = $1",
                    &[
                        &record.id,
                        &i16::from(record.done),
                        &record.error,
                        &record.next_attempt_ms,
                        &record.owner,
                    ],
                )
                .await
                .map_err(|e| self.pg(e))?;
            Ok(())
        })
    }

    fn release(&self, owner: &str) -> StoreFuture<'_, ()> {
        let owner = owner.to_owned();
        Box::pin(async move {
            self.client
                .execute(
                    "UPDATE webhook_events SET lease_owner = NULL, lease_until_ms = 0
                     WHERE lease_owner = $1",
                    &[&owner],
                )
                .await
                .map_err(|e| self.pg(e))?;
            Ok(())
        })
    }

    fn renew(&self, owner: &str, ids: Vec<i64>, until_ms: i64) -> StoreFuture<'_, ()> {
        let owner = owner.to_owned();
        Box::pin(async move {
            self.client
                .execute(
                    "UPDATE webhook_events SET lease_until_ms = $3
                     WHERE id = ANY($1) AND lease_owner = $2",
                    &[&ids, &owner, &until_ms],
                )
                .await
                .map_err(|e| self.pg(e))?;
            Ok(())
        })
    }

    fn next_due(&self, sinks: u8) -> StoreFuture<'_, Option<i64>> {
        Box::pin(async move {
            if sinks == 0 {
                return Ok(None);
            }
            let row = self
                .client
                .query_one(
                    "SELECT min(greatest(next_attempt_ms, lease_until_ms)) FROM webhook_events
                     WHERE verified AND handed_off = ANY($1)",
                    &[&missing_bits(sinks)],
                )
                .await
                .map_err(|e| self.pg(e))?;
            Ok(row.get::<_, Option<i64>>(0))
        })
    }

    fn events(&self, after_id: i64, limit: usize) -> StoreFuture<'_, Vec<StoredEvent>> {
        Box::pin(async move {
            let rows = self
                .client
                .query(
                    &format!(
                        "SELECT {EVENT_COLUMNS} FROM webhook_events WHERE id > $1
                         ORDER BY id LIMIT $2"
                    ),
                    &[&after_id, &limit_i64(limit)],
                )
                .await
                .map_err(|e| self.pg(e))?;
            Ok(rows.iter().map(event_row).collect())
        })
    }

    fn quarantined(&self, after_id: i64, limit: usize) -> StoreFuture<'_, Vec<Quarantined>> {
        Box::pin(async move {
            let rows = self
                .client
                .query(
                    "SELECT id, received_at_ms, reason, signature, body_len, body
                     FROM webhook_quarantine WHERE id > $1 ORDER BY id LIMIT $2",
                    &[&after_id, &limit_i64(limit)],
                )
                .await
                .map_err(|e| self.pg(e))?;
            Ok(rows
                .iter()
                .map(|r| Quarantined {
                    id: r.get(0),
                    received_at_ms: r.get(1),
                    reason: r.get(2),
                    signature: r.get(3),
                    body_len: r.get(4),
                    body: r.get(5),
                })
                .collect())
        })
    }

    fn gaps(&self, after_id: i64, limit: usize) -> StoreFuture<'_, Vec<Gap>> {
        Box::pin(async move {
            let rows = self
                .client
                .query(
                    "SELECT id, subscription_id, replaced_by, cause, from_ms, to_ms, last_sequence
                     FROM webhook_gaps WHERE id > $1 ORDER BY id LIMIT $2",
                    &[&after_id, &limit_i64(limit)],
                )
                .await
                .map_err(|e| self.pg(e))?;
            Ok(rows
                .iter()
                .map(|r| Gap {
                    id: r.get(0),
                    subscription_id: r.get(1),
                    replaced_by: r.get(2),
                    cause: r.get(3),
                    from_ms: r.get(4),
                    to_ms: r.get(5),
                    last_sequence: r.get(6),
                })
                .collect())
        })
    }

    fn record_gap(&self, gap: Gap) -> StoreFuture<'_, i64> {
        Box::pin(async move {
            let row = self
                .client
                .query_one(
                    "INSERT INTO webhook_gaps (subscription_id, replaced_by, cause, from_ms,
                        to_ms, last_sequence) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
                    &[
                        &gap.subscription_id,
                        &gap.replaced_by,
                        &gap.cause,
                        &gap.from_ms,
                        &gap.to_ms,
                        &gap.last_sequence,
                    ],
                )
                .await
                .map_err(|e| self.pg(e))?;
            Ok(row.get(0))
        })
    }

    fn last_event(&self, subscription_id: &str) -> StoreFuture<'_, Option<(i64, String)>> {
        let sub = subscription_id.to_owned();
        Box::pin(async move {
            let row = self
                .client
                .query_opt(
                    "SELECT received_at_ms, sequence_number FROM webhook_events
                     WHERE subscription_id = $1 AND verified ORDER BY id DESC LIMIT 1",
                    &[&sub],
                )
                .await
                .map_err(|e| self.pg(e))?;
            Ok(row.map(|r| (r.get(0), r.get(1))))
        })
    }

    fn counts(&self) -> StoreFuture<'_, Counts> {
        Box::pin(async move {
            let r = self
                .client
                .query_one(
                    "SELECT (SELECT count(*) FROM webhook_events),
                            (SELECT count(*) FROM webhook_events WHERE verified),
                            (SELECT count(*) FROM webhook_quarantine),
                            (SELECT count(*) FROM webhook_gaps)",
                    &[],
                )
                .await
                .map_err(|e| self.pg(e))?;
            Ok(Counts {
                events: r.get(0),
                verified: r.get(1),
                quarantined: r.get(2),
                gaps: r.get(3),
            })
        })
    }

    fn setting_or_insert(&self, key: &str, value: &str) -> StoreFuture<'_, String> {
        let (key, value) = (key.to_owned(), value.to_owned());
        Box::pin(async move {
            self.client
                .execute(
                    "INSERT INTO webhook_settings (key, value) VALUES ($1, $2)
                     ON CONFLICT (key) DO NOTHING",
                    &[&key, &value],
                )
                .await
                .map_err(|e| self.pg(e))?;
            let row = self
                .client
                .query_one("SELECT value FROM webhook_settings WHERE key = $1", &[&key])
                .await
                .map_err(|e| self.pg(e))?;
            Ok(row.get(0))
        })
    }

    fn reverify(&self, subscription_id: &str, key: SigningKey) -> StoreFuture<'_, u64> {
        let sub = subscription_id.to_owned();
        Box::pin(async move {
            let rows = self
                .client
                .query(
                    "SELECT id, body, signature FROM webhook_events
                     WHERE subscription_id = $1 AND NOT verified AND verification = $2",
                    &[&sub, &Verification::NoKey.as_str()],
                )
                .await
                .map_err(|e| self.pg(e))?;
            let mut done = 0;
            for r in rows {
                let (id, body, sig): (i64, Vec<u8>, Option<String>) =
                    (r.get(0), r.get(1), r.get(2));
                if let Some(sig) = sig
                    && super::signature_matches(&key, &body, &sig)
                {
                    // A genuine copy stored meanwhile (by any replica) wins: then this
                    // update violates the unique index and the copy stays unverified.
                    if let Ok(n) = self
                        .client
                        .execute(
                            "UPDATE webhook_events SET verified = true, verification = $2
                             WHERE id = $1",
                            &[&id, &Verification::Valid.as_str()],
                        )
                        .await
                    {
                        done += n;
                    }
                }
            }
            Ok(done)
        })
    }

    fn prune(&self, retention: Retention) -> StoreFuture<'_, Pruned> {
        Box::pin(async move {
            let cutoff = super::now_ms()
                .saturating_sub(i64::try_from(retention.max_age.as_millis()).unwrap_or(i64::MAX));
            let keep = i64::try_from(retention.max_rows).unwrap_or(i64::MAX);
            // Inserts go on meanwhile (the writer is not this connection's): the recount
            // below is rebased on what they admitted since.
            let before = *self.kept.lock().unwrap_or_else(|p| p.into_inner());
            let unverified = self
                .client
                .execute(
                    "DELETE FROM webhook_events WHERE NOT verified AND (received_at_ms < $1
                       OR id <= (SELECT id FROM webhook_events WHERE NOT verified
                                 ORDER BY id DESC LIMIT 1 OFFSET $2))",
                    &[&cutoff, &keep],
                )
                .await
                .map_err(|e| self.pg(e))?;
            let quarantined = self
                .client
                .execute(
                    "DELETE FROM webhook_quarantine WHERE received_at_ms < $1
                       OR id <= (SELECT id FROM webhook_quarantine
                                 ORDER BY id DESC LIMIT 1 OFFSET $2)",
                    &[&cutoff, &keep],
                )
                .await
                .map_err(|e| self.pg(e))?;
            // What was freed may be kept again.
            let recount = kept_so_far(&self.client).await.map_err(|e| self.pg(e))?;
            self.kept
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .rebase(before, recount);
            Ok(Pruned {
                unverified,
                quarantined,
            })
        })
    }

    fn close(&self) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            // Dropping the sender lets the writer finish what is queued, then stop.
            self.writer.lock().unwrap_or_else(|p| p.into_inner()).take();
            let task = self
                .writer_task
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
            if let Some(task) = task {
                let _ = task.await;
            }
            Ok(())
        })
    }
}
