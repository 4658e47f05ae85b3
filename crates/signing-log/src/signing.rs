//! What a signer asks of the log ([`bridgectl_tx::SigningLog`]): appends, one or a
//! group, each inside one `BEGIN IMMEDIATE` with the checks that must see no other
//! writer; and a person's acknowledgement.

use alloy_primitives::{Address, B256, U256};
use bridgectl_tx::CreditClaim;
use bridgectl_tx::limits::{Spent, WindowLimit};
use bridgectl_tx::signing_log::{
    Checkpoint, Entry, EntryBody, Head, WindowQuery, nonce_free, same_signature,
};
use rusqlite::{OptionalExtension, TransactionBehavior, params};

use crate::Error;

use crate::kept::{KeptCheckpoint, carry};
use crate::store::{SigningLogDb, boxed, head, refused, row_entry};

/// A refusal of the log (it does not reach its checkpoint, does not hold, or holds a
/// stranger's entry) is a refusal to sign; anything else is a failure to read it.
fn as_tx(e: Error) -> bridgectl_tx::Error {
    match e {
        Error::Broken { .. }
        | Error::RolledBack { .. }
        | Error::Foreign { .. }
        | Error::Checkpoint { .. } => refused(e),
        other => boxed(other),
    }
}

impl SigningLogDb {
    /// After `entries` (not empty, in order) were committed: their signatures count as
    /// checked in this process, and the kept checkpoint moves to the last of them. It
    /// only moves forward (a concurrent signer may have written a later one); a stale
    /// one is safe, the log still reaches it. Returns the new head.
    fn appended(&self, entries: &[Entry]) -> Result<Checkpoint, bridgectl_tx::Error> {
        let last = entries.last().expect("called with the entries appended");
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(entries.iter().map(|e| e.hash));
        let new = Checkpoint {
            count: last.seq,
            head: last.hash,
        };
        // The kept checkpoint only moves forward (a concurrent signer may have written
        // a later one); a stale one is safe, the log still reaches it. It adds these
        // entries' spending to what it keeps of each key's.
        let kept = self.kept().ok().flatten();
        if kept.as_ref().is_none_or(|k| k.count < new.count) {
            let mut carried = kept.as_ref().map(|k| k.carried.clone()).unwrap_or_default();
            for entry in entries {
                if let Ok(body) = serde_json::from_str::<EntryBody>(&entry.body) {
                    carried = carry(&carried, &body);
                }
            }
            self.advance_kept(&KeptCheckpoint {
                count: new.count,
                head: new.head,
                acknowledged: kept.as_ref().map_or(0, |k| k.acknowledged),
                carried,
            })
            .map_err(boxed)?;
        }
        Ok(new)
    }
}

impl SigningLogDb {
    /// Accepts the log as it stands, by `signer`, a key of the keystore, at `time`:
    /// after `verify` found it whole (links, hashes, signatures, any key), an
    /// acknowledgement entry signed by that key is appended
    /// ([`bridgectl_tx::signing_log::acknowledgement`]), its head becomes the kept checkpoint, and
    /// every entry so far counts as acknowledged (keys that are not in the keystore
    /// included). For a person who knows why the log no longer reaches its checkpoint
    /// (restored from a backup, moved aside) or why a stranger's key signed an entry (a
    /// key removed).
    ///
    /// What is not forgotten: when the log does not reach the kept checkpoint (entries
    /// were lost), the entry carries the checkpoint's record of each key's recent
    /// spending ([`KeptCheckpoint::carried`]), which the spending windows count from then
    /// on as they counted the lost entries. (Spending still in the log is then counted
    /// twice where its hour's sum is carried too: stricter, never looser.) A kept
    /// checkpoint that cannot be read at all carries nothing.
    pub fn acknowledge(
        &self,
        signer: &alloy_signer_local::PrivateKeySigner,
        time: u64,
    ) -> Result<Checkpoint, Error> {
        let head_before = self.verify(None)?;
        let kept = self.kept().ok().flatten();
        let reaches = kept.as_ref().is_none_or(|k| {
            k.count == 0
                || self
                    .with(|c| {
                        c.prepare_cached("SELECT hash FROM entries WHERE seq = ?1")
                            .and_then(|mut s| {
                                s.query_row([i64::try_from(k.count).unwrap_or(i64::MAX)], |r| {
                                    r.get::<_, Vec<u8>>(0)
                                })
                                .optional()
                            })
                            .map_err(self.sql())
                    })
                    .ok()
                    .flatten()
                    .as_deref()
                    == Some(k.head.as_slice())
        });
        let carried = kept.as_ref().map(|k| k.carried.clone()).unwrap_or_default();
        let body = bridgectl_tx::signing_log::acknowledgement(
            head_before,
            signer.address(),
            time,
            kept.as_ref()
                .map_or(Checkpoint::EMPTY, KeptCheckpoint::checkpoint),
            if reaches { Vec::new() } else { carried.clone() },
        );
        let entry = bridgectl_tx::signing_log::seal_entry(&body, signer).map_err(|e| {
            Error::Acknowledgement {
                path: self.path.clone(),
                reason: e.to_string(),
            }
        })?;
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let sql = self.sql();
        bridgectl_local::sqlite::durable(&mut conn, &sql, |conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(&sql)?;
            if head(&tx).map_err(&sql)? != head_before {
                return Err(Error::Acknowledgement {
                    path: self.path.clone(),
                    reason: "another signature was appended meanwhile: acknowledge again".into(),
                });
            }
            Self::insert(&tx, &entry).map_err(&sql)?;
            tx.commit().map_err(&sql)
        })?;
        drop(conn);
        let new = Checkpoint {
            count: entry.seq,
            head: entry.hash,
        };
        self.write_kept(&KeptCheckpoint {
            count: new.count,
            head: new.head,
            acknowledged: new.count,
            carried,
        })?;
        Ok(new)
    }
}

impl bridgectl_tx::SigningLog for SigningLogDb {
    fn append(
        &self,
        key: Address,
        limit: Option<&WindowLimit>,
        make: &mut dyn FnMut(Head) -> Result<Entry, bridgectl_tx::Error>,
    ) -> Result<Checkpoint, bridgectl_tx::Error> {
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let sql = self.sql();
        let entry = bridgectl_local::sqlite::durable(
            &mut conn,
            |e| boxed(sql(e)),
            |conn| {
                let tx = conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .map_err(|e| boxed(sql(e)))?;
                // With the log to ourselves: it reaches its checkpoint, the nonce is
                // still free, and the limit the verifier checked still holds now that
                // no other signer can append.
                let walked = self
                    .window_in(&tx, key, limit.map(|l| &l.query))
                    .map_err(as_tx)?;
                let at = Head {
                    checkpoint: head(&tx).map_err(|e| boxed(sql(e)))?,
                    time: walked.newest_own.unwrap_or(0),
                };
                let entry = make(at)?;
                let body: EntryBody = serde_json::from_str(&entry.body).map_err(|e| {
                    bridgectl_tx::Error::Refused(format!("the new log entry does not read: {e}"))
                })?;
                let prior = if body.signs_transaction() {
                    self.signed_at_nonce_in(&tx, body.key, body.chain_id, body.nonce)
                        .map_err(as_tx)?
                } else {
                    // A chain reset signs no transaction: no nonce to guard.
                    Vec::new()
                };
                if body.signs_transaction() && same_signature(&prior, &body).is_some() {
                    // The very transaction again (the same bytes): recorded once, counted
                    // once.
                    return Ok(None);
                }
                if body.signs_transaction() {
                    nonce_free(
                        &prior,
                        body.key,
                        body.chain_id,
                        body.nonce,
                        body.signing_hash.unwrap_or_default(),
                        body.replaces,
                    )?;
                }
                if let Some(limit) = limit {
                    limit.check(walked.total)?;
                }
                Self::insert(&tx, &entry).map_err(|e| boxed(sql(e)))?;
                tx.commit().map_err(|e| boxed(sql(e)))?;
                Ok(Some(entry))
            },
        )?;
        let Some(entry) = entry else {
            return head(&conn).map_err(|e| boxed(sql(e)));
        };
        drop(conn);
        self.appended(std::slice::from_ref(&entry))
    }

    /// One `BEGIN IMMEDIATE` for the whole group and one durable commit: a batch's
    /// signatures cost the log one fsync, not one each. Inside it, as for one append: the
    /// kept checkpoint is reached, each key's newest entry is read once (walking back
    /// from the head, every entry checked), each window is totalled once and the
    /// group's earlier entries added to it, and each entry's nonce is guarded against
    /// the log and the group's earlier entries. Any refusal rolls the whole group back.
    fn append_group(
        &self,
        group: &mut [bridgectl_tx::signing_log::GroupEntry<'_>],
    ) -> Result<Checkpoint, bridgectl_tx::Error> {
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let sql = self.sql();
        let appended = bridgectl_local::sqlite::durable(
            &mut conn,
            |e| boxed(sql(e)),
            |conn| {
                let tx = conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .map_err(|e| boxed(sql(e)))?;
                let mut checkpoint = head(&tx).map_err(|e| boxed(sql(e)))?;
                let mut own_time: std::collections::HashMap<Address, u64> = Default::default();
                let mut windows: std::collections::HashMap<(Address, u64, Address, u64), U256> =
                    Default::default();
                let mut bodies: Vec<EntryBody> = Vec::new();
                let mut appended: Vec<Entry> = Vec::new();
                for item in group.iter_mut() {
                    let time = match own_time.get(&item.key) {
                        Some(t) => *t,
                        None => {
                            let walked = self.window_in(&tx, item.key, None).map_err(as_tx)?;
                            let t = walked.newest_own.unwrap_or(0);
                            own_time.insert(item.key, t);
                            t
                        }
                    };
                    let entry = (item.make)(Head { checkpoint, time })?;
                    let body: EntryBody = serde_json::from_str(&entry.body).map_err(|e| {
                        bridgectl_tx::Error::Refused(format!(
                            "the new log entry does not read: {e}"
                        ))
                    })?;
                    if body.signs_transaction() {
                        let mut prior = self
                            .signed_at_nonce_in(&tx, body.key, body.chain_id, body.nonce)
                            .map_err(as_tx)?;
                        prior.extend(
                            bodies
                                .iter()
                                .filter(|b| {
                                    b.signs_transaction()
                                        && b.key == body.key
                                        && b.chain_id == body.chain_id
                                        && b.nonce == body.nonce
                                })
                                .cloned(),
                        );
                        if same_signature(&prior, &body).is_some() {
                            // The very transaction again: recorded once, counted once.
                            continue;
                        }
                        nonce_free(
                            &prior,
                            body.key,
                            body.chain_id,
                            body.nonce,
                            body.signing_hash.unwrap_or_default(),
                            body.replaces,
                        )?;
                    }
                    if let Some(limit) = &item.limit {
                        let q = &limit.query;
                        let window = (q.key, q.chain_id, q.contract, q.per);
                        let total = match windows.get(&window) {
                            Some(total) => *total,
                            None => self.window_in(&tx, item.key, Some(q)).map_err(as_tx)?.total,
                        };
                        limit.check(total)?;
                        windows.insert(window, total.saturating_add(limit.amount));
                    }
                    Self::insert(&tx, &entry).map_err(|e| boxed(sql(e)))?;
                    checkpoint = Checkpoint {
                        count: entry.seq,
                        head: entry.hash,
                    };
                    own_time.insert(body.key, body.time.max(time));
                    bodies.push(body);
                    appended.push(entry);
                }
                if !appended.is_empty() {
                    tx.commit().map_err(|e| boxed(sql(e)))?;
                }
                Ok(appended)
            },
        )?;
        if appended.is_empty() {
            return head(&conn).map_err(|e| boxed(sql(e)));
        }
        drop(conn);
        self.appended(&appended)
    }

    /// Copies the log's write-ahead log into the file once it has grown past its
    /// bound (see `bridgectl_local::sqlite::tidy`); also done when the log is dropped.
    fn tidy(&self) {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let _ = bridgectl_local::sqlite::tidy(&conn);
    }

    fn check(&self, key: Address) -> Result<(), bridgectl_tx::Error> {
        self.with(|c| self.window_in(c, key, None)).map_err(as_tx)?;
        Ok(())
    }

    fn signed_at_nonce(
        &self,
        key: Address,
        chain_id: u64,
        nonce: u64,
    ) -> Result<Vec<EntryBody>, bridgectl_tx::Error> {
        self.with(|c| self.signed_at_nonce_in(c, key, chain_id, nonce))
            .map_err(as_tx)
    }

    fn signed_on_chain(
        &self,
        chain_id: u64,
        per_key: usize,
    ) -> Result<Vec<EntryBody>, bridgectl_tx::Error> {
        let keys = self.keys_on_chain(chain_id).map_err(as_tx)?;
        let chain = i64::try_from(chain_id).unwrap_or(i64::MAX);
        self.with(|c| {
            let mut found = Vec::new();
            let mut stmt = c
                .prepare_cached(
                    "SELECT seq, body, hash, sig FROM entries WHERE key = ?1 AND chain_id = ?2 \
                     ORDER BY seq DESC",
                )
                .map_err(self.sql())?;
            for key in keys {
                let mut rows = stmt
                    .query(params![key.to_string(), chain])
                    .map_err(self.sql())?;
                let mut taken = 0;
                while taken < per_key
                    && let Some(row) = rows.next().map_err(self.sql())?
                {
                    let body = self.checked_or_broken(&row_entry(row).map_err(self.sql())?)?;
                    if body.key != key || body.chain_id != chain_id {
                        continue;
                    }
                    if body.chain_reset.is_some() {
                        break;
                    }
                    found.push(body);
                    taken += 1;
                }
            }
            Ok(found)
        })
        .map_err(as_tx)
    }

    fn claim_credit(&self, claim: &CreditClaim) -> Result<Option<String>, bridgectl_tx::Error> {
        let chain = i64::try_from(claim.chain_id).unwrap_or(i64::MAX);
        let index = i64::try_from(claim.log_index).unwrap_or(i64::MAX);
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        self.with(|c| {
            // One statement: the claim is the first writer's, whichever process asks.
            c.prepare_cached(
                "INSERT OR IGNORE INTO credit_claims
                    (chain_id, genesis, tx_hash, log_index, claimant, key, at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    chain,
                    claim.genesis.to_string(),
                    claim.tx_hash.to_string(),
                    index,
                    claim.claimant,
                    claim.key.to_string(),
                    at
                ])
            })
            .map_err(self.sql())?;
            let holder: String = c
                .query_row(
                    "SELECT claimant FROM credit_claims
                      WHERE chain_id = ?1 AND genesis = ?2 AND tx_hash = ?3 AND log_index = ?4",
                    params![
                        chain,
                        claim.genesis.to_string(),
                        claim.tx_hash.to_string(),
                        index
                    ],
                    |r| r.get(0),
                )
                .map_err(self.sql())?;
            Ok((holder != claim.claimant).then_some(holder))
        })
        .map_err(as_tx)
    }

    fn release_credit(&self, claim: &CreditClaim) -> Result<(), bridgectl_tx::Error> {
        let chain = i64::try_from(claim.chain_id).unwrap_or(i64::MAX);
        let index = i64::try_from(claim.log_index).unwrap_or(i64::MAX);
        self.with(|c| {
            c.execute(
                "DELETE FROM credit_claims
                  WHERE chain_id = ?1 AND genesis = ?2 AND tx_hash = ?3 AND log_index = ?4
                    AND claimant = ?5",
                params![
                    chain,
                    claim.genesis.to_string(),
                    claim.tx_hash.to_string(),
                    index,
                    claim.claimant
                ],
            )
            .map(|_| ())
            .map_err(self.sql())
        })
        .map_err(as_tx)
    }

    fn chain_genesis(&self, chain_id: u64) -> Result<Option<B256>, bridgectl_tx::Error> {
        self.with(|c| self.chain_genesis_in(c, chain_id))
            .map_err(as_tx)
    }

    fn window_total(&self, query: &WindowQuery) -> Result<Spent, bridgectl_tx::Error> {
        let walked = self
            .with(|c| self.window_in(c, query.key, Some(query)))
            .map_err(as_tx)?;
        Ok(Spent {
            query: query.clone(),
            total: walked.total,
            since: walked.since,
        })
    }
}
