//! What a signer asks of the log ([`bridgectl_tx::SigningLog`]): appends, one or a
//! group, each inside one `BEGIN IMMEDIATE` with the checks that must see no other
//! writer; and a person's acknowledgement.

use alloy_primitives::{Address, B256, U256};
use bridgectl_store::Conn;
use bridgectl_tx::CreditClaim;
use bridgectl_tx::limits::{Spent, WindowLimit};
use bridgectl_tx::signing_log::{
    AtNonce, Carried, Checkpoint, Entry, EntryBody, Head, Running, Watermark, Watermarks,
    WindowQuery, nonce_free, same_signature,
};

use crate::Error;

use crate::kept::{KeptCheckpoint, MAX_WATERMARKS, carry, mark};
use crate::store::{
    FROM_HEAD, SigningLogDb, body_text, boxed, head, paged, refused, row_entry, scan,
};

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

/// A failure inside an append's transaction: of the log (its store, or a refusal of
/// what it holds), or the signer's own refusal. Either rolls the append back.
enum Failed {
    Log(Error),
    Tx(bridgectl_tx::Error),
}

impl From<bridgectl_store::Error> for Failed {
    fn from(e: bridgectl_store::Error) -> Failed {
        Failed::Log(e.into())
    }
}

impl From<Error> for Failed {
    fn from(e: Error) -> Failed {
        Failed::Log(e)
    }
}

impl From<bridgectl_tx::Error> for Failed {
    fn from(e: bridgectl_tx::Error) -> Failed {
        Failed::Tx(e)
    }
}

impl SigningLogDb {
    /// `failed` as the signer's error, a store failure naming this log.
    fn failed(&self, failed: Failed) -> bridgectl_tx::Error {
        match failed {
            Failed::Log(e) => as_tx(self.named(e)),
            Failed::Tx(e) => e,
        }
    }

    /// `e` as the signer's error, a store failure naming this log.
    fn as_tx(&self, e: Error) -> bridgectl_tx::Error {
        as_tx(self.named(e))
    }
}

impl SigningLogDb {
    /// After `entries` (not empty, in order) were committed: their signatures count as
    /// checked in this process, and the kept checkpoint moves to the last of them. It
    /// only moves forward (a concurrent signer may have written a later one); a stale
    /// one is safe, the log still reaches it. It adds to what it keeps (each key's
    /// spending, each key's watermarks) every entry since the one it was written at:
    /// these, and any a concurrent signer appended before them whose own checkpoint
    /// this one overtakes. Returns the new head.
    fn appended(&self, entries: &[Entry]) -> Result<Checkpoint, bridgectl_tx::Error> {
        let last = entries.last().expect("called with the entries appended");
        let before = self
            .appends
            .fetch_add(entries.len() as u64, std::sync::atomic::Ordering::Relaxed);
        if before / crate::store::STATISTICS_EVERY
            != (before + entries.len() as u64) / crate::store::STATISTICS_EVERY
        {
            // Best effort: a failure to look is no failure of the append.
            let _ = self.keep_statistics();
        }
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(entries.iter().map(|e| e.hash));
        let new = Checkpoint {
            count: last.seq,
            head: last.hash,
        };
        let kept = self.kept().ok().flatten();
        if kept.as_ref().is_none_or(|k| k.count < new.count) {
            let since = match &kept {
                Some(k) => self.bodies_between(k.count, new.count).map_err(boxed)?,
                None => entries
                    .iter()
                    .filter_map(|e| serde_json::from_str(&e.body).ok())
                    .collect(),
            };
            let (mut carried, mut watermarks) = kept
                .as_ref()
                .map(|k| (k.carried.clone(), k.watermarks.clone()))
                .unwrap_or_default();
            for body in &since {
                carried = carry(&carried, body);
                watermarks = mark(watermarks, body);
            }
            self.advance_kept(&KeptCheckpoint {
                count: new.count,
                head: new.head,
                acknowledged: kept.as_ref().map_or(0, |k| k.acknowledged),
                carried,
                watermarks,
            })
            .map_err(boxed)?;
        }
        Ok(new)
    }

    /// The bodies of the entries after `after` up to `upto`, in order, each checked on
    /// its own (one that does not hold is left out: the walks refuse it).
    fn bodies_between(&self, after: u64, upto: u64) -> Result<Vec<EntryBody>, Error> {
        self.with(|c| {
            let mut bodies = Vec::new();
            scan(
                c,
                paged!(
                    "SELECT seq, body, hash, sig FROM entries WHERE seq <= ?1 AND seq > ?2 \
                     ORDER BY seq"
                ),
                &[&i64::try_from(upto).unwrap_or(i64::MAX)],
                i64::try_from(after).unwrap_or(i64::MAX),
                |row| {
                    if let Ok(body) = self.checked_body(&row_entry(row)?) {
                        bodies.push(body);
                    }
                    Ok(true)
                },
            )?;
            Ok(bodies)
        })
    }
}

/// What an acknowledgement of the log as it stands accepts and carries forward
/// ([`SigningLogDb::plan_acknowledgement`]): for a person to read before the key is
/// unlocked, then [`SigningLogDb::acknowledge_plan`].
#[derive(Clone, Debug)]
pub struct AcknowledgementPlan {
    /// The log's head, the whole chain verified (links, hashes, signatures by any key).
    pub head: Checkpoint,
    /// The checkpoint kept beside the log: `Ok(None)` when there is none, `Err(why)`
    /// when its file holds none that can be read (both slots spoiled).
    pub kept: Result<Option<KeptCheckpoint>, String>,
    /// Whether the log reaches the kept checkpoint (`false` when it has none that can be
    /// read).
    pub reaches: bool,
    /// The spending carried into the log: the kept checkpoint's record of it, when the
    /// log does not reach the checkpoint (it lost entries); else none.
    pub carried: Vec<Carried>,
    /// The watermarks carried forward, the union of the kept checkpoint's (when it can
    /// be read), the log's own (rebuilt from its entries and earlier acknowledgements)
    /// and the ones witnessed ([`AcknowledgementPlan::witnessed`]): every nonce one
    /// holds stays signed.
    pub watermarks: Vec<Watermark>,
    /// The spending the new kept checkpoint keeps: the kept checkpoint's, or, without
    /// one that can be read, the log's own of the last [`crate::CARRY_SECS`].
    keep_carried: Vec<Carried>,
}

impl AcknowledgementPlan {
    /// The spending the acknowledgement's kept checkpoint keeps (each key's of the last
    /// [`crate::CARRY_SECS`], by the hour): the kept checkpoint's, or, without one that
    /// can be read, the log's own.
    pub fn spending(&self) -> &[Carried] {
        &self.keep_carried
    }

    /// The plan with `spending` carried into the log too (an imported history's): counted
    /// in the windows from then on, and kept by the new checkpoint.
    pub fn carrying(mut self, spending: &[Carried]) -> AcknowledgementPlan {
        self.carried.extend_from_slice(spending);
        self.keep_carried.extend_from_slice(spending);
        self
    }

    /// The plan with what a chain witnessed added to its watermarks: the nonce counts
    /// of keys there, as [`Watermark::below`] makes them (every nonce below a count was
    /// used on that chain).
    pub fn witnessed(mut self, witnessed: &[Watermark]) -> AcknowledgementPlan {
        let mut marks = Watermarks(std::mem::take(&mut self.watermarks));
        for w in witnessed {
            marks.merge(w);
        }
        self.watermarks = marks.0;
        self
    }
}

impl SigningLogDb {
    /// What acknowledging the log as it stands would accept and carry forward. The
    /// whole log is verified first: one that does not hold is [`Error::Broken`], nothing
    /// to acknowledge. Reads only (no key, nothing written, no network).
    ///
    /// The watermarks are rebuilt from the whole log (each signature, each key's chain
    /// resets, each earlier acknowledgement's) and united with the kept checkpoint's
    /// (but those of a key and chain the log records a reset of after the checkpoint
    /// was written: the chain started over); [`AcknowledgementPlan::witnessed`] adds a
    /// chain's word. This is also the way on from a kept checkpoint whose file holds
    /// none that can be read (both slots spoiled): the log and the chains are then the
    /// witnesses of what was signed, and spending the log lost with it, if it lost any,
    /// cannot be known.
    pub fn plan_acknowledgement(&self) -> Result<AcknowledgementPlan, Error> {
        let kept = match self.kept() {
            Ok(kept) => Ok(kept),
            Err(Error::Checkpoint { reason, .. }) => Err(reason),
            Err(e) => return Err(e),
        };
        let mut marks = Watermarks::default();
        let mut own_carried = Vec::new();
        let mut resets = Vec::new();
        let head = self.verify_each(None, |body| {
            body.mark(&mut marks);
            own_carried = carry(&own_carried, body);
            if body.chain_reset.is_some() {
                resets.push((body.key, body.chain_id, body.seq));
            }
        })?;
        let readable = kept.as_ref().ok().and_then(Option::as_ref);
        if let Some(k) = readable {
            for w in &k.watermarks {
                let reset_since = resets.iter().any(|(key, chain, seq)| {
                    (*key, *chain) == (w.key, w.chain_id) && *seq > k.count
                });
                if !reset_since {
                    marks.merge(w);
                }
            }
        }
        let reaches = match &kept {
            Ok(None) => true,
            Ok(Some(k)) => k.count == 0 || self.with(|c| self.hash_at(c, k.count))? == Some(k.head),
            Err(_) => false,
        };
        Ok(AcknowledgementPlan {
            head,
            reaches,
            carried: match readable {
                Some(k) if !reaches => k.carried.clone(),
                _ => Vec::new(),
            },
            watermarks: marks.0,
            keep_carried: readable.map_or(own_carried, |k| k.carried.clone()),
            kept,
        })
    }

    /// Appends the acknowledgement `plan` describes, signed by `signer`, a key of the
    /// keystore, at `time` ([`bridgectl_tx::signing_log::acknowledgement`]): its head
    /// becomes the kept checkpoint (written whole, both slots), every entry so far
    /// counts as acknowledged (keys that are not in the keystore included), and what
    /// the plan carries counts from then on as the lost entries did: their spending in
    /// the windows (spending still in the log is then counted twice where its hour's sum
    /// is carried too: stricter, never looser), their nonces by the watermarks. Refused
    /// when a signature was appended since the plan was made.
    pub fn acknowledge_plan(
        &self,
        plan: &AcknowledgementPlan,
        signer: &alloy_signer_local::PrivateKeySigner,
        time: u64,
    ) -> Result<Checkpoint, Error> {
        let failed = |reason: String| Error::Acknowledgement {
            log: self.log.clone(),
            reason,
        };
        // The signer's newest entry (whose running totals the acknowledgement carries on,
        // and which it is not older than): the log as it stands, which the plan verified.
        let newest =
            self.with(|c| self.own_newest(c, signer.address(), plan.head.count.saturating_add(1)))?;
        let mut body = bridgectl_tx::signing_log::acknowledgement(
            plan.head,
            signer.address(),
            newest.as_ref().map_or(time, |n| time.max(n.time)),
            match &plan.kept {
                Ok(Some(k)) => k.checkpoint(),
                _ => Checkpoint::EMPTY,
            },
            plan.carried.clone(),
            plan.watermarks.clone(),
        );
        body.running = Some(Running::after(
            newest.as_ref().and_then(|n| n.running.as_ref()),
            &body,
        ));
        let entry = bridgectl_tx::signing_log::seal_entry(&body, signer)
            .map_err(|e| failed(e.to_string()))?;
        self.store
            .write_durable(|c| {
                if head(c)? != plan.head {
                    return Err(failed(
                        "another signature was appended meanwhile: acknowledge again".into(),
                    ));
                }
                Ok(Self::insert(c, &entry)?)
            })
            .map_err(|e| self.named(e))?;
        let new = Checkpoint {
            count: entry.seq,
            head: entry.hash,
        };
        let mut watermarks = Watermarks(plan.watermarks.clone());
        watermarks.keep_newest(MAX_WATERMARKS);
        self.write_kept(&KeptCheckpoint {
            count: new.count,
            head: new.head,
            acknowledged: new.count,
            carried: plan.keep_carried.clone(),
            watermarks: watermarks.0,
        })?;
        Ok(new)
    }

    /// Accepts the log as it stands, by `signer`, at `time`:
    /// [`SigningLogDb::plan_acknowledgement`], then
    /// [`SigningLogDb::acknowledge_plan`]. For a person who knows why the log no longer
    /// reaches its checkpoint (restored from a backup, moved aside), why a stranger's
    /// key signed an entry (a key removed), or why the checkpoint cannot be read.
    pub fn acknowledge(
        &self,
        signer: &alloy_signer_local::PrivateKeySigner,
        time: u64,
    ) -> Result<Checkpoint, Error> {
        let plan = self.plan_acknowledgement()?;
        self.acknowledge_plan(&plan, signer, time)
    }
}

impl SigningLogDb {
    /// The nonce guard inside an append, for the new entry `body` after `earlier` (a
    /// group's entries before it, not committed yet): `true` when it is the very
    /// transaction the log (or the group) holds already, to be recorded once; a refusal
    /// when the nonce holds another ([`nonce_free`]). An entry that signs no transaction
    /// (a chain reset) has no nonce to guard.
    fn signed_again(
        &self,
        c: &mut dyn Conn,
        body: &EntryBody,
        earlier: &[EntryBody],
    ) -> Result<bool, bridgectl_tx::Error> {
        if !body.signs_transaction() {
            return Ok(false);
        }
        let mut prior = self
            .signed_at_nonce_in(c, body.key, body.chain_id, body.nonce)
            .map_err(|e| self.as_tx(e))?;
        prior.entries.extend(
            earlier
                .iter()
                .filter(|b| {
                    b.signs_transaction()
                        && b.key == body.key
                        && b.chain_id == body.chain_id
                        && b.nonce == body.nonce
                })
                .cloned(),
        );
        if same_signature(&prior.entries, body).is_some() {
            return Ok(true);
        }
        nonce_free(
            &prior,
            body.key,
            body.chain_id,
            body.nonce,
            body.signing_hash.unwrap_or_default(),
            body.replaces,
        )?;
        Ok(false)
    }
}

/// The entry `make` built from `head`, with its body: refused when the body does not
/// read, or carries running totals other than the key's newest entry's carried on by
/// its own amount (or a run it starts).
fn made(head: &Head, entry: Entry) -> Result<(Entry, EntryBody), bridgectl_tx::Error> {
    let body: EntryBody = serde_json::from_str(&entry.body).map_err(|e| {
        bridgectl_tx::Error::Refused(format!("the new log entry does not read: {e}"))
    })?;
    if let Some(running) = &body.running
        && *running != Running::after(head.running.as_ref(), &body)
        && *running != Running::after(None, &body)
    {
        return Err(bridgectl_tx::Error::Refused(
            "the new log entry's running totals are not the key's newest entry's carried on \
             by its own amount"
                .into(),
        ));
    }
    Ok((entry, body))
}

impl bridgectl_tx::SigningLog for SigningLogDb {
    fn append(
        &self,
        key: Address,
        limit: Option<&WindowLimit>,
        make: &mut dyn FnMut(Head) -> Result<Entry, bridgectl_tx::Error>,
    ) -> Result<Checkpoint, bridgectl_tx::Error> {
        let entry = self
            .store
            .write_durable(|c| -> Result<Option<Entry>, Failed> {
                // With the log to ourselves (every other writer of the store, on this
                // host or another, waits): it reaches its checkpoint, the nonce is still
                // free, and the limit the verifier checked still holds.
                let walked = self.window_in(c, key, limit.map(|l| &l.query))?;
                let at = Head {
                    checkpoint: head(c)?,
                    time: walked.newest_own.unwrap_or(0),
                    running: walked.running,
                };
                let (entry, body) = made(&at, make(at.clone())?)?;
                if self.signed_again(c, &body, &[])? {
                    // The very transaction again (the same bytes): recorded once, counted
                    // once.
                    return Ok(None);
                }
                if let Some(limit) = limit {
                    limit.check(walked.total)?;
                }
                Self::insert(c, &entry)?;
                Ok(Some(entry))
            })
            .map_err(|e| self.failed(e))?;
        let Some(entry) = entry else {
            return self.with(|c| head(c)).map_err(|e| self.as_tx(e));
        };
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
        let appended = self
            .store
            .write_durable(|c| -> Result<Vec<Entry>, Failed> {
                let mut checkpoint = head(c)?;
                // Each key's newest entry's time and running totals, the group's own
                // entries included.
                let mut own: std::collections::HashMap<Address, (u64, Option<Running>)> =
                    Default::default();
                let mut windows: std::collections::HashMap<(Address, u64, Address, u64), U256> =
                    Default::default();
                let mut bodies: Vec<EntryBody> = Vec::new();
                let mut appended: Vec<Entry> = Vec::new();
                for item in group.iter_mut() {
                    let (time, running) = match own.get(&item.key) {
                        Some(newest) => newest.clone(),
                        None => {
                            let walked = self.window_in(c, item.key, None)?;
                            let newest = (walked.newest_own.unwrap_or(0), walked.running);
                            own.insert(item.key, newest.clone());
                            newest
                        }
                    };
                    let at = Head {
                        checkpoint,
                        time,
                        running,
                    };
                    let (entry, body) = made(&at, (item.make)(at.clone())?)?;
                    if self.signed_again(c, &body, &bodies)? {
                        // The very transaction again: recorded once, counted once.
                        continue;
                    }
                    if let Some(limit) = &item.limit {
                        let q = &limit.query;
                        let window = (q.key, q.chain_id, q.contract, q.per);
                        let total = match windows.get(&window) {
                            Some(total) => *total,
                            None => self.window_in(c, item.key, Some(q))?.total,
                        };
                        limit.check(total)?;
                        windows.insert(window, total.saturating_add(limit.amount));
                    }
                    Self::insert(c, &entry)?;
                    checkpoint = Checkpoint {
                        count: entry.seq,
                        head: entry.hash,
                    };
                    own.insert(body.key, (body.time.max(time), body.running.clone()));
                    bodies.push(body);
                    appended.push(entry);
                }
                Ok(appended)
            })
            .map_err(|e| self.failed(e))?;
        if appended.is_empty() {
            return self.with(|c| head(c)).map_err(|e| self.as_tx(e));
        }
        self.appended(&appended)
    }

    /// Copies the log's write-ahead log into the file once it has grown past its
    /// bound (see `bridgectl_local::sqlite::tidy`); also done when the log is dropped.
    fn tidy(&self) {
        self.store.tidy();
    }

    fn check(&self, key: Address) -> Result<(), bridgectl_tx::Error> {
        self.with(|c| self.window_in(c, key, None))
            .map_err(|e| self.as_tx(e))?;
        Ok(())
    }

    fn signed_at_nonce(
        &self,
        key: Address,
        chain_id: u64,
        nonce: u64,
    ) -> Result<AtNonce, bridgectl_tx::Error> {
        self.with(|c| self.signed_at_nonce_in(c, key, chain_id, nonce))
            .map_err(|e| self.as_tx(e))
    }

    fn signed_on_chain(
        &self,
        chain_id: u64,
        per_key: usize,
    ) -> Result<Vec<EntryBody>, bridgectl_tx::Error> {
        let keys = self.keys_on_chain(chain_id).map_err(|e| self.as_tx(e))?;
        let chain = i64::try_from(chain_id).unwrap_or(i64::MAX);
        self.with(|c| {
            let mut found = Vec::new();
            for key in keys {
                let mut taken = 0;
                scan(
                    c,
                    paged!(
                        "SELECT seq, body, hash, sig FROM entries \
                         WHERE json_extract(body, '$.key') = ?1 \
                           AND json_extract(body, '$.chainId') = ?2 \
                           AND seq < ?3 ORDER BY seq DESC"
                    ),
                    &[&body_text(key), &chain],
                    FROM_HEAD,
                    |row| {
                        if taken >= per_key {
                            return Ok(false);
                        }
                        let body = self.checked_or_broken(&row_entry(row)?)?;
                        if body.key != key || body.chain_id != chain_id {
                            return Ok(true);
                        }
                        if body.chain_reset.is_some() {
                            return Ok(false);
                        }
                        found.push(body);
                        taken += 1;
                        Ok(true)
                    },
                )?;
            }
            Ok(found)
        })
        .map_err(|e| self.as_tx(e))
    }

    fn claim_credit(&self, claim: &CreditClaim) -> Result<Option<String>, bridgectl_tx::Error> {
        let chain = i64::try_from(claim.chain_id).unwrap_or(i64::MAX);
        let index = i64::try_from(claim.log_index).unwrap_or(i64::MAX);
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let (genesis, tx_hash) = (claim.genesis.to_string(), claim.tx_hash.to_string());
        self.with(|c| {
            // One statement: the claim is the first writer's, whichever process or host
            // asks.
            c.execute(
                "INSERT INTO credit_claims
                    (chain_id, genesis, tx_hash, log_index, claimant, key, at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING",
                &[
                    &chain,
                    &genesis,
                    &tx_hash,
                    &index,
                    &claim.claimant,
                    &claim.key.to_string(),
                    &at,
                ],
            )?;
            let holder: String = c.query_value(
                "SELECT claimant FROM credit_claims
                  WHERE chain_id = ?1 AND genesis = ?2 AND tx_hash = ?3 AND log_index = ?4",
                &[&chain, &genesis, &tx_hash, &index],
            )?;
            Ok((holder != claim.claimant).then_some(holder))
        })
        .map_err(|e| self.as_tx(e))
    }

    fn release_credit(&self, claim: &CreditClaim) -> Result<(), bridgectl_tx::Error> {
        let chain = i64::try_from(claim.chain_id).unwrap_or(i64::MAX);
        let index = i64::try_from(claim.log_index).unwrap_or(i64::MAX);
        self.with(|c| {
            c.execute(
                "DELETE FROM credit_claims
                  WHERE chain_id = ?1 AND genesis = ?2 AND tx_hash = ?3 AND log_index = ?4
                    AND claimant = ?5",
                &[
                    &chain,
                    &claim.genesis.to_string(),
                    &claim.tx_hash.to_string(),
                    &index,
                    &claim.claimant,
                ],
            )?;
            Ok(())
        })
        .map_err(|e| self.as_tx(e))
    }

    fn chain_genesis(&self, chain_id: u64) -> Result<Option<B256>, bridgectl_tx::Error> {
        self.with(|c| self.chain_genesis_in(c, chain_id))
            .map_err(|e| self.as_tx(e))
    }

    fn window_total(&self, query: &WindowQuery) -> Result<Spent, bridgectl_tx::Error> {
        let walked = self
            .with(|c| self.window_in(c, query.key, Some(query)))
            .map_err(|e| self.as_tx(e))?;
        Ok(Spent {
            query: query.clone(),
            total: walked.total,
            since: walked.since,
        })
    }
}
