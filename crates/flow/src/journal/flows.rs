//! Flows and their steps: each step committed before the next runs; the signed bytes
//! committed durably (fsync'd) before they are sent.

use bridgectl_store::Conn;
use serde_json::Value;

use super::records::{
    COLUMNS, FlowKind, FlowRecord, FlowState, Purpose, SignatureRecord, StepRecord, blob,
    row_to_record,
};
use super::{Journal, insert_step, now};
use crate::Error;

/// Inserts flow `tx_id` with its first step.
pub(super) fn insert_flow(
    t: &mut dyn Conn,
    host: &str,
    tx_id: &str,
    kind: FlowKind,
    from: Option<&str>,
    intent: &Value,
) -> Result<(), bridgectl_store::Error> {
    let at = now();
    t.execute(
        "INSERT INTO flows (tx_id, kind, state, from_addr, intent, created_at, updated_at, host)
         VALUES (?1, ?2, 'started', ?3, ?4, ?5, ?5, ?6)",
        &[
            &tx_id,
            &kind.as_str(),
            &from,
            &intent.to_string(),
            &at,
            &host,
        ],
    )?;
    insert_step(t, tx_id, &at, "started", &intent.to_string())
}

/// Records flow `tx_id`'s raw transaction and moves it to `executed`.
pub(super) fn set_raw_tx(
    t: &mut dyn Conn,
    tx_id: &str,
    raw_tx: &Value,
) -> Result<(), bridgectl_store::Error> {
    let at = now();
    t.execute(
        "UPDATE flows SET raw_tx = ?2, state = 'executed', updated_at = ?3 WHERE tx_id = ?1",
        &[&tx_id, &raw_tx.to_string(), &at],
    )?;
    insert_step(t, tx_id, &at, "executed", &raw_tx.to_string())
}

impl Journal {
    /// Records a new flow and its first step.
    pub(crate) fn begin(
        &self,
        tx_id: &str,
        kind: FlowKind,
        from: Option<&str>,
        intent: &Value,
    ) -> Result<(), Error> {
        self.write_refusing(false, |t| {
            self.check_fence(t, tx_id)?;
            Ok(insert_flow(t, &self.host, tx_id, kind, from, intent)?)
        })
    }

    /// [`Journal::begin`], [`Journal::record_raw_tx`] and [`Journal::reserve_nonce`] of
    /// `raw_tx`'s nonce in one commit, for a flow whose transaction is known and
    /// verified when it begins (the offline signer's): one write instead of three.
    pub(crate) fn begin_reserved(
        &self,
        tx_id: &str,
        kind: FlowKind,
        intent: &Value,
        raw_tx: &bridgectl_tx::RawTx,
    ) -> Result<(), Error> {
        let from = raw_tx.from.to_string();
        let raw = serde_json::to_value(raw_tx).unwrap_or_default();
        self.reserve_after(tx_id, raw_tx.from, raw_tx.chain_id, raw_tx.nonce, |t| {
            insert_flow(t, &self.host, tx_id, kind, Some(&from), intent)?;
            set_raw_tx(t, tx_id, &raw)
        })
    }

    /// Records a step and moves the flow to `state`.
    pub(crate) fn step(
        &self,
        tx_id: &str,
        state: FlowState,
        step: &str,
        detail: &Value,
    ) -> Result<(), Error> {
        let at = now();
        self.write(|t| {
            let n = t.execute(
                "UPDATE flows SET state = ?2, updated_at = ?3 WHERE tx_id = ?1",
                &[&tx_id, &state.as_str(), &at],
            )?;
            if n == 0 {
                return Err(bridgectl_store::Error::NoRow);
            }
            insert_step(t, tx_id, &at, step, &blob(detail))
        })
    }

    /// Records a step without changing the state (progress, retries, errors on the way).
    pub(crate) fn note(&self, tx_id: &str, step: &str, detail: &Value) -> Result<(), Error> {
        let at = now();
        self.with(|c| insert_step(c, tx_id, &at, step, &blob(detail)))
    }

    /// Records the raw transaction as received from the platform.
    pub(crate) fn record_raw_tx(&self, tx_id: &str, raw_tx: &Value) -> Result<(), Error> {
        self.write(|t| set_raw_tx(t, tx_id, raw_tx))
    }

    /// Records a result seen on the way (e.g. a redemption record whose status changed)
    /// with a step, in one commit; `state` moves the flow when given.
    pub(crate) fn observe(
        &self,
        tx_id: &str,
        state: Option<FlowState>,
        step: &str,
        result: &Value,
    ) -> Result<(), Error> {
        let at = now();
        self.write(|t| {
            let n = match state {
                Some(s) => t.execute(
                    "UPDATE flows SET result = ?2, state = ?3, updated_at = ?4 WHERE tx_id = ?1",
                    &[&tx_id, &blob(result), &s.as_str(), &at],
                )?,
                None => t.execute(
                    "UPDATE flows SET result = ?2, updated_at = ?3 WHERE tx_id = ?1",
                    &[&tx_id, &blob(result), &at],
                )?,
            };
            if n == 0 {
                return Err(bridgectl_store::Error::NoRow);
            }
            insert_step(t, tx_id, &at, step, &blob(result))
        })
    }

    /// Records the signed transaction. Durable when this returns (the one fsync of the
    /// journal on a signing path): only then may it be submitted.
    pub(crate) fn record_signed(
        &self,
        tx_id: &str,
        signed: &bridgectl_tx::SignedTx,
    ) -> Result<(), Error> {
        self.record_signed_group(&[(tx_id, signed)])
    }

    /// Records a deliberate replacement of flow `tx_id`'s signed transaction at the same
    /// nonce (`purpose`: a re-priced call or a cancel). Both stay known: the earlier
    /// signatures move to the flow's [`Journal::signatures`], the new bytes become the
    /// ones `resume` sends. Durable when this returns, like [`Journal::record_signed`].
    pub(crate) fn record_replacement(
        &self,
        tx_id: &str,
        signed: &bridgectl_tx::SignedTx,
        purpose: Purpose,
    ) -> Result<(), Error> {
        let at = now();
        let hex = format!("0x{}", hex::encode(&signed.raw));
        let hash = signed.hash.to_string();
        self.write_refusing(true, |t| {
            self.check_fence(t, tx_id)?;
            let (replaced, old_tx): (Option<String>, Option<String>) = t.query_row(
                "SELECT tx_hash, signed_tx FROM flows WHERE tx_id = ?1",
                &[&tx_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let (Some(replaced), Some(old_tx)) = (replaced, old_tx) else {
                return Err(bridgectl_store::Error::NoRow.into());
            };
            // The first replacement keeps the original too.
            t.execute(
                "INSERT INTO signatures (tx_hash, tx_id, purpose, signed_tx, at)
                 VALUES (?1, ?2, 'original', ?3, ?4) ON CONFLICT DO NOTHING",
                &[&replaced, &tx_id, &old_tx, &at],
            )?;
            t.execute(
                "INSERT INTO signatures (tx_hash, tx_id, purpose, signed_tx, at)
                 VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
                &[&hash, &tx_id, &purpose.as_str(), &hex, &at],
            )?;
            t.execute(
                "UPDATE flows SET signed_tx = ?2, tx_hash = ?3, state = 'signed', updated_at = ?4
                  WHERE tx_id = ?1",
                &[&tx_id, &hex, &hash, &at],
            )?;
            let detail = serde_json::json!({"txHash": hash, "replaces": replaced,
                                            "nonce": signed.nonce});
            let step = format!("{}-signed", purpose.as_str());
            insert_step(t, tx_id, &at, &step, &detail.to_string())?;
            Ok(())
        })
    }

    /// Every signature of flow `tx_id` that may be mined, oldest first: the original and
    /// each replacement when it was replaced, else its one signed transaction (none
    /// before it signed).
    pub fn signatures(&self, tx_id: &str) -> Result<Vec<SignatureRecord>, Error> {
        let rows: Vec<SignatureRecord> = self.with(|c| {
            c.query_map(
                "SELECT tx_hash, purpose, signed_tx FROM signatures WHERE tx_id = ?1 ORDER BY rowid",
                &[&tx_id],
                |r| {
                    Ok(SignatureRecord {
                        tx_hash: r.get(0)?,
                        purpose: Purpose::parse(&r.get::<String>(1)?),
                        signed_tx: r.get(2)?,
                    })
                },
            )
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

    /// Records the last result seen (e.g. a redemption record).
    pub(crate) fn record_result(&self, tx_id: &str, result: &Value) -> Result<(), Error> {
        self.with(|c| {
            c.execute(
                "UPDATE flows SET result = ?2, updated_at = ?3 WHERE tx_id = ?1",
                &[&tx_id, &blob(result), &now()],
            )
            .map(drop)
        })
    }

    /// One flow.
    pub fn get(&self, tx_id: &str) -> Result<FlowRecord, Error> {
        self.with(|c| {
            c.query_opt(
                &format!("SELECT {COLUMNS} FROM flows WHERE tx_id = ?1"),
                &[&tx_id],
                row_to_record,
            )
        })?
        .ok_or_else(|| Error::NotInJournal(tx_id.to_owned()))
    }

    /// The flow that holds the signed bytes whose hash is `tx_hash`, if one does.
    pub fn signed_with_hash(
        &self,
        tx_hash: alloy_primitives::B256,
    ) -> Result<Option<FlowRecord>, Error> {
        self.with(|c| {
            c.query_opt(
                &format!(
                    "SELECT {COLUMNS} FROM flows WHERE tx_hash = ?1 AND signed_tx IS NOT NULL \
                     ORDER BY created_at LIMIT 1"
                ),
                &[&tx_hash.to_string()],
                row_to_record,
            )
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
                c.query_opt(
                    "SELECT tx_id FROM signatures WHERE tx_hash = ?1",
                    &[&hash.to_string()],
                    |r| r.get(0),
                )
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
            c.query_map(
                &format!(
                    "SELECT {COLUMNS} FROM flows WHERE tx_id LIKE ?1 \
                     ORDER BY created_at LIMIT 3"
                ),
                &[&format!("{prefix}%")],
                row_to_record,
            )
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

    /// The most recent flows, newest first: `limit` rows read through an index, whatever
    /// the journal's size.
    pub fn list(&self, limit: usize) -> Result<Vec<FlowRecord>, Error> {
        self.with(|c| c.query_map(&newest_flows_sql(), &[&(limit as i64)], row_to_record))
    }

    /// The steps of one flow, oldest first.
    pub fn steps(&self, tx_id: &str) -> Result<Vec<StepRecord>, Error> {
        self.with(|c| {
            c.query_map(
                "SELECT at, step, detail FROM steps WHERE tx_id = ?1 ORDER BY id",
                &[&tx_id],
                |r| {
                    let detail: String = r.get(2)?;
                    Ok(StepRecord {
                        at: r.get(0)?,
                        step: r.get(1)?,
                        detail: serde_json::from_str(&detail).unwrap_or(Value::String(detail)),
                    })
                },
            )
        })
    }
}

impl Journal {
    /// The newest flows (at most `limit`, newest first) whose txId starts with `prefix`,
    /// or, for a prefix starting `0x`, whose signed transaction's hash does: what a shell
    /// completes, found among all the journal's flows, not among the newest only. A
    /// prefix with other characters than a txId's or a hash's finds none.
    pub fn list_prefixed(&self, prefix: &str, limit: usize) -> Result<Vec<FlowRecord>, Error> {
        let (column, digits) = match prefix.strip_prefix("0x") {
            Some(rest) => ("tx_hash", rest),
            None => ("tx_id", prefix),
        };
        // Only hex digits (and a txId's dashes) reach LIKE: no `%` or `_` of its own.
        if !digits
            .chars()
            .all(|c| c.is_ascii_hexdigit() || (c == '-' && column == "tx_id"))
        {
            return Ok(Vec::new());
        }
        self.with(|c| {
            c.query_map(
                &format!(
                    "SELECT {COLUMNS} FROM flows WHERE {column} LIKE ?1 \
                     ORDER BY created_at DESC, rowid DESC LIMIT ?2"
                ),
                &[&format!("{prefix}%"), &(limit as i64)],
                row_to_record,
            )
        })
    }
}

/// The newest `?1` flows, newest first: the last entries of the index `flows_by_created`
/// (the rowid breaks ties), so the newest five flows are five rows read, not the whole
/// journal sorted.
pub(super) fn newest_flows_sql() -> String {
    format!("SELECT {COLUMNS} FROM flows ORDER BY created_at DESC, rowid DESC LIMIT ?1")
}
