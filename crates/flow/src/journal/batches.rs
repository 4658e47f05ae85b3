//! Batches: one record with its items, each bound to the txId of the flow that carries it
//! out, so that a batch interrupted anywhere can be finished from the journal alone.

use bridgectl_store::{Conn, Row};
use serde_json::Value;

use super::records::{BatchItemRecord, BatchRecord, COLUMNS, row_to_batch, row_to_record_at};
use super::{Journal, insert_step, now};
use crate::Error;

/// The run lock of one batch (see [`Journal::lock_batch`]): released when dropped, or
/// when the process ends however it ends.
#[derive(Debug)]
pub struct BatchLock {
    _held: Held,
}

#[derive(Debug)]
enum Held {
    /// Nothing to hold (a journal in memory is this process's alone).
    Nothing,
    /// An OS lock on a file beside the SQLite journal: the OS releases it when the
    /// process ends.
    File(#[allow(dead_code)] std::fs::File),
    /// A claim in the shared journal, renewed while it is held (see
    /// [`super::claims::Heartbeat`]).
    Claim(#[allow(dead_code)] super::claims::Heartbeat),
}

impl Journal {
    /// Takes the run lock of batch `batch_id`: held while the returned guard lives, by
    /// one run at a time. A second run or resume of a batch that is running is refused
    /// ([`Error::BatchRunning`]), so it cannot take over the live flows of the first.
    ///
    /// On a SQLite journal it is an OS file lock (a process that dies releases it). On
    /// a journal several hosts share it is a claim in the journal with a lease, renewed
    /// while the guard lives, and a fencing token: another host takes it over once the
    /// lease ran out (its holder died, or paused), and from then on every write the
    /// paused holder makes for the batch's flows is refused ([`Error::ClaimTakenOver`]).
    pub fn lock_batch(&self, batch_id: &str) -> Result<BatchLock, Error> {
        let path = match self.store.location() {
            bridgectl_store::Location::Memory => {
                return Ok(BatchLock {
                    _held: Held::Nothing,
                });
            }
            bridgectl_store::Location::Postgres(_) => {
                return super::claims::Heartbeat::start(self, batch_id).map(|h| BatchLock {
                    _held: Held::Claim(h),
                });
            }
            bridgectl_store::Location::File(path) => path,
        };
        let dir = path.with_extension("batch-locks");
        bridgectl_local::files::create_private_dir(&dir).map_err(|source| Error::JournalDir {
            path: dir.display().to_string(),
            source,
        })?;
        let path = dir.join(format!("{batch_id}.lock"));
        let file =
            bridgectl_local::files::open_lock_file(&path).map_err(|source| Error::JournalDir {
                path: path.display().to_string(),
                source,
            })?;
        match file.try_lock() {
            Ok(()) => Ok(BatchLock {
                _held: Held::File(file),
            }),
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

    /// Records batch `batch_id` with its items in one transaction: either the whole batch
    /// is known or none of it. Each item takes its idempotency key ([`NewBatchItem::key`])
    /// in the same transaction, by the key's uniqueness in the database: when another
    /// batch holds any of the keys, nothing is written and the items it holds are
    /// returned (so two processes recording one file at once record it once). Durable
    /// when this returns (one fsync per batch), so a batch id once printed is never lost.
    pub(crate) fn create_batch(
        &self,
        batch_id: &str,
        source: &str,
        items: &[NewBatchItem],
    ) -> Result<Vec<HeldKey>, Error> {
        let at = now();
        self.write_durable(|t| {
            t.execute(
                "INSERT INTO batches (batch_id, source, created_at) VALUES (?1, ?2, ?3)",
                &[&batch_id, &source, &at],
            )?;
            let mut held = Vec::new();
            for (idx, item) in items.iter().enumerate() {
                t.execute(
                    "INSERT INTO batch_items (batch_id, idx, item_id, op, tx_id)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    &[
                        &batch_id,
                        &(idx as i64),
                        &item.id,
                        &item.op.to_string(),
                        &item.tx_id,
                    ],
                )?;
                let taken = t.execute(
                    "INSERT INTO batch_keys (item_key, batch_id, idx) VALUES (?1, ?2, ?3)
                     ON CONFLICT (item_key) DO NOTHING",
                    &[&item.key, &batch_id, &(idx as i64)],
                )?;
                if taken == 0 {
                    held.extend(holder_of(t, idx, &item.key)?);
                }
            }
            if !held.is_empty() {
                t.roll_back();
            }
            Ok(held)
        })
    }

    /// The items of `keys` (idempotency keys, in the order of a batch's items) that a
    /// batch in the journal holds already: what [`Journal::create_batch`] would refuse,
    /// read without writing.
    pub(crate) fn held_keys(&self, keys: &[&str]) -> Result<Vec<HeldKey>, Error> {
        self.with(|c| {
            let mut held = Vec::new();
            for (idx, key) in keys.iter().enumerate() {
                held.extend(holder_of(c, idx, key)?);
            }
            Ok(held)
        })
    }

    /// Records that batch `batch_id` was prepared for the air gap and that the request
    /// file written for it has SHA-256 `request_hash`. Durable when this returns: the
    /// file is written after it.
    pub(crate) fn record_prepared(
        &self,
        batch_id: &str,
        request_hash: alloy_primitives::B256,
    ) -> Result<(), Error> {
        let at = now();
        self.write_durable(|c| {
            c.execute(
                "INSERT INTO prepared_batches (batch_id, request_hash, prepared_at)
                 VALUES (?1, ?2, ?3)",
                &[&batch_id, &request_hash.to_string(), &at],
            )
            .map(drop)
        })
    }

    /// Records that prepared batch `batch_id` is abandoned and gives back the nonces its
    /// items hold unsigned: each flow of it that did not sign ends failed (step
    /// `abandoned`, with `reason`), in one durable transaction. Returns when it was
    /// abandoned, whether that was now (not by an earlier call) and what was given back.
    /// Signed items keep their nonces: their bytes can still be mined. `None` when the
    /// batch was not prepared for the air gap.
    pub(crate) fn abandon_prepared(
        &self,
        batch_id: &str,
        reason: &str,
    ) -> Result<Option<(String, bool, Vec<HeldNonce>)>, Error> {
        let at = now();
        self.write_durable(|t| {
            let prepared: Option<i64> = t.query_opt(
                "SELECT 1 FROM prepared_batches WHERE batch_id = ?1",
                &[&batch_id],
                |r| r.get(0),
            )?;
            if prepared.is_none() {
                return Ok(None);
            }
            if let Some(before) = abandoned_at(t, batch_id)? {
                return Ok(Some((before, false, Vec::new())));
            }
            let released: Vec<HeldNonce> = held_nonces_in(t, batch_id, self.lease_cutoff())?
                .into_iter()
                .filter(|h| !h.signed)
                .collect();
            t.execute(
                "INSERT INTO abandoned_batches (batch_id, at) VALUES (?1, ?2)",
                &[&batch_id, &at],
            )?;
            let unsigned: Vec<String> = t.query_map(
                "SELECT f.tx_id FROM batch_items i JOIN flows f ON f.tx_id = i.tx_id
                  WHERE i.batch_id = ?1 AND f.signed_tx IS NULL
                    AND f.state NOT IN ('failed', 'completed', 'retired')",
                &[&batch_id],
                |r| r.get(0),
            )?;
            let detail = serde_json::json!({"reason": reason, "batchId": batch_id}).to_string();
            for tx_id in &unsigned {
                t.execute(
                    "UPDATE flows SET state = 'failed', updated_at = ?2 WHERE tx_id = ?1",
                    &[tx_id, &at],
                )?;
                insert_step(t, tx_id, &at, "abandoned", &detail)?;
            }
            Ok(Some((at.clone(), true, released)))
        })
    }

    /// When prepared batch `batch_id` was abandoned, if it was.
    pub fn abandoned(&self, batch_id: &str) -> Result<Option<String>, Error> {
        self.with(|c| abandoned_at(c, batch_id))
    }

    /// The nonce each item of batch `batch_id` holds in this journal, in item order: the
    /// one its flow signed, or a reservation that holds (see [`Journal::next_nonce`]).
    /// Items that hold none are left out.
    pub fn held_nonces(&self, batch_id: &str) -> Result<Vec<HeldNonce>, Error> {
        self.with(|c| held_nonces_in(c, batch_id, self.lease_cutoff()))
    }

    /// The SHA-256 of the request file batch `batch_id` was prepared with, when it was
    /// prepared for the air gap.
    pub fn prepared(&self, batch_id: &str) -> Result<Option<alloy_primitives::B256>, Error> {
        let hash: Option<String> = self.with(|c| {
            c.query_opt(
                "SELECT request_hash FROM prepared_batches WHERE batch_id = ?1",
                &[&batch_id],
                |r| r.get(0),
            )
        })?;
        Ok(hash.and_then(|h| h.parse().ok()))
    }

    /// The batch whose id is `prefix` or starts with it.
    pub fn find_batch(&self, prefix: &str) -> Result<BatchRecord, Error> {
        if prefix.is_empty() || !prefix.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            return Err(Error::NoSuchBatch(prefix.to_owned()));
        }
        let found: Vec<BatchRecord> = self.with(|c| {
            c.query_map(
                "SELECT b.batch_id, b.source, b.created_at,
                        (SELECT COUNT(*) FROM batch_items i WHERE i.batch_id = b.batch_id)
                   FROM batches b WHERE b.batch_id LIKE ?1 ORDER BY b.created_at LIMIT 3",
                &[&format!("{prefix}%")],
                row_to_batch,
            )
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
            c.query_map(
                "SELECT b.batch_id, b.source, b.created_at,
                        (SELECT COUNT(*) FROM batch_items i WHERE i.batch_id = b.batch_id)
                   FROM batches b ORDER BY b.created_at DESC, b.rowid DESC LIMIT ?1",
                &[&(limit as i64)],
                row_to_batch,
            )
        })
    }

    /// The items of batch `batch_id` in input order, each with its current flow.
    pub fn batch_items(&self, batch_id: &str) -> Result<Vec<BatchItemRecord>, Error> {
        let columns = flow_columns();
        self.with(|c| {
            c.query_map(
                &format!(
                    "SELECT i.idx, i.item_id, i.op, i.tx_id, i.attempt, f.tx_id IS NOT NULL, \
                            {columns}
                       FROM batch_items i LEFT JOIN flows f ON f.tx_id = i.tx_id
                      WHERE i.batch_id = ?1 ORDER BY i.idx"
                ),
                &[&batch_id],
                |r| row_to_item(r, 0),
            )
        })
    }

    /// Binds item `index` of batch `batch_id` to a new flow `tx_id` (its next attempt).
    /// The flow it had before must have ended without signing: marked failed here (in
    /// the same transaction) if it had not, which also frees its nonce reservation.
    pub(crate) fn retry_batch_item(
        &self,
        batch_id: &str,
        index: usize,
        old_tx_id: &str,
        tx_id: &str,
    ) -> Result<(), Error> {
        let at = now();
        self.write_refusing(false, |t| {
            self.check_fence(t, old_tx_id)?;
            let abandoned = t.execute(
                "UPDATE flows SET state = 'failed', updated_at = ?2
                  WHERE tx_id = ?1 AND signed_tx IS NULL AND state NOT IN ('failed', 'completed')",
                &[&old_tx_id, &at],
            )?;
            if abandoned > 0 {
                let detail = serde_json::json!({"reason": "the batch was interrupted before \
                    this flow signed; its item runs again", "next": tx_id});
                insert_step(t, old_tx_id, &at, "abandoned", &detail.to_string())?;
            }
            t.execute(
                "UPDATE batch_items SET tx_id = ?3, attempt = attempt + 1
                  WHERE batch_id = ?1 AND idx = ?2",
                &[&batch_id, &(index as i64), &tx_id],
            )?;
            Ok(())
        })
    }
}

/// A nonce an item of a batch holds ([`Journal::held_nonces`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldNonce {
    /// The item's position in its batch.
    pub index: usize,
    /// The txId of the item's flow.
    pub tx_id: String,
    /// The sender.
    pub address: alloy_primitives::Address,
    /// The chain.
    pub chain_id: u64,
    /// The nonce.
    pub nonce: u64,
    /// Whether the flow signed at it (held for good); otherwise it is a reservation.
    pub signed: bool,
}

/// When batch `batch_id` was abandoned, if it was.
fn abandoned_at(
    c: &mut dyn Conn,
    batch_id: &str,
) -> Result<Option<String>, bridgectl_store::Error> {
    c.query_opt(
        "SELECT at FROM abandoned_batches WHERE batch_id = ?1",
        &[&batch_id],
        |r| r.get(0),
    )
}

/// [`Journal::held_nonces`] inside `c`, with the lease cut-off `cutoff`.
fn held_nonces_in(
    c: &mut dyn Conn,
    batch_id: &str,
    cutoff: i64,
) -> Result<Vec<HeldNonce>, bridgectl_store::Error> {
    let sql = format!(
        "SELECT i.idx, f.tx_id, f.from_addr, CAST(f.nonce AS INTEGER), f.chain_id, 1
           FROM batch_items i JOIN flows f ON f.tx_id = i.tx_id
          WHERE i.batch_id = ?1 AND f.signed_tx IS NOT NULL AND f.state != 'retired'
         UNION ALL
         SELECT i.idx, r.tx_id, r.address, r.nonce, r.chain_id, 0
           FROM batch_items i JOIN nonces r ON r.tx_id = i.tx_id
           JOIN flows f ON f.tx_id = r.tx_id
          WHERE i.batch_id = ?1 AND f.signed_tx IS NULL AND {}
          ORDER BY 1",
        super::nonces::holds("?2")
    );
    c.query_map(&sql, &[&batch_id, &cutoff], |r| {
        let address: String = r.get(2)?;
        Ok(HeldNonce {
            index: r.get::<i64>(0)? as usize,
            tx_id: r.get(1)?,
            address: address.parse().unwrap_or_default(),
            nonce: r.get::<i64>(3)? as u64,
            chain_id: r.get::<i64>(4)? as u64,
            signed: r.get(5)?,
        })
    })
}

/// One item of a batch to record ([`Journal::create_batch`]).
#[derive(Debug, Clone)]
pub(crate) struct NewBatchItem {
    /// Its id, for people and scripts.
    pub id: String,
    /// Its idempotency key: the id given in the input, or for an item without one its
    /// file's hash and line. A key is held by one item of one batch, for good.
    pub key: String,
    /// The operation, as the flows' batch module stores it.
    pub op: Value,
    /// The txId its flow will have.
    pub tx_id: String,
}

/// An item whose idempotency key a batch of the journal holds already.
#[derive(Debug, Clone)]
pub(crate) struct HeldKey {
    /// The item's position in the batch being recorded.
    pub index: usize,
    /// The batch that holds it.
    pub batch_id: String,
    /// The item of that batch that holds it.
    pub held_by: BatchItemRecord,
}

/// The item that holds `key`, if one does: reported as item `idx` of the batch being
/// recorded.
fn holder_of(
    c: &mut dyn Conn,
    idx: usize,
    key: &str,
) -> Result<Option<HeldKey>, bridgectl_store::Error> {
    let columns = flow_columns();
    let sql = format!(
        "SELECT k.batch_id, i.idx, i.item_id, i.op, i.tx_id, i.attempt, f.tx_id IS NOT NULL, {columns}
           FROM batch_keys k JOIN batch_items i ON i.batch_id = k.batch_id AND i.idx = k.idx
           LEFT JOIN flows f ON f.tx_id = i.tx_id
          WHERE k.item_key = ?1"
    );
    c.query_opt(&sql, &[&key], |r| {
        Ok(HeldKey {
            index: idx,
            batch_id: r.get(0)?,
            held_by: row_to_item(r, 1)?,
        })
    })
}

/// The journal's flow columns, each prefixed `f.` (a flow joined to its batch item).
fn flow_columns() -> String {
    COLUMNS
        .split(", ")
        .map(|c| format!("f.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A batch item from the row's columns at `at`: `idx, item_id, op, tx_id, attempt,
/// has_flow`, then the flow's [`COLUMNS`].
fn row_to_item(r: &Row, at: usize) -> Result<BatchItemRecord, bridgectl_store::Error> {
    let op: String = r.get(at + 2)?;
    let has_flow: bool = r.get(at + 5)?;
    Ok(BatchItemRecord {
        index: r.get::<i64>(at)? as usize,
        item_id: r.get(at + 1)?,
        op: serde_json::from_str(&op).unwrap_or(Value::String(op)),
        tx_id: r.get(at + 3)?,
        attempt: r.get::<i64>(at + 4)? as u32,
        flow: if has_flow {
            Some(row_to_record_at(r, at + 6)?)
        } else {
            None
        },
    })
}

impl Journal {
    /// The newest batches (at most `limit`, newest first) whose id starts with `prefix`:
    /// what a shell completes, found among all the journal's batches. A prefix with other
    /// characters than a batch id's finds none.
    pub fn list_batches_prefixed(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<BatchRecord>, Error> {
        if !prefix.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            return Ok(Vec::new());
        }
        self.with(|c| {
            c.query_map(
                "SELECT b.batch_id, b.source, b.created_at,
                        (SELECT COUNT(*) FROM batch_items i WHERE i.batch_id = b.batch_id)
                   FROM batches b WHERE b.batch_id LIKE ?1
                   ORDER BY b.created_at DESC, b.rowid DESC LIMIT ?2",
                &[&format!("{prefix}%"), &(limit as i64)],
                row_to_batch,
            )
        })
    }
}

impl Journal {
    /// What unsigned flow `tx_id` waits for, when it is the offline signer: the signed
    /// batch of the prepared batch it is an item of, or the bundle of the sign request it
    /// wrote.
    pub(crate) fn awaited_offline(&self, tx_id: &str) -> Result<Option<crate::Awaits>, Error> {
        let batch: Option<String> = self.with(|c| {
            c.query_opt(
                "SELECT i.batch_id FROM batch_items i JOIN prepared_batches p
                   ON p.batch_id = i.batch_id WHERE i.tx_id = ?1",
                &[&tx_id],
                |r| r.get(0),
            )
        })?;
        if let Some(batch_id) = batch {
            return Ok(Some(crate::Awaits::PreparedBatch { batch_id }));
        }
        let request = self.steps(tx_id)?.iter().any(|s| s.step == "sign-request");
        Ok(request.then_some(crate::Awaits::SignRequest))
    }
}
