//! Running a batch: items of one address in order, addresses side by side, results
//! awaited together, resumed from the journal after a crash (see the module doc of
//! `batch`).

use std::collections::HashMap;
use std::time::Duration;

use alloy_primitives::{Address, U256};
use futures_util::stream::{FuturesUnordered, Stream, StreamExt};
use tokio::sync::{Semaphore, mpsc};

use super::items::{BatchItem, BatchOp, stored_op};
use super::refusal::HeldItem;
use super::report::{ItemError, ItemResult, ItemStatus};
use super::state::ItemState;
use super::status::{BatchStatus, last_error};
use crate::Error;
use crate::flows::swap::swap_intent;
use crate::flows::transfer::plain_transfer_intent;
use crate::flows::{
    Approver, Flows, GasSource, NonceSource, Quiet, Review, Submitted, SwapSpec, TokenSide,
    TransferSpec, new_tx_id,
};
use crate::journal::{
    BatchItemRecord, BatchRecord, FlowRecord, FlowState, HeldKey, NewBatchItem, Purpose,
};
use bridgectl_tx::RawTx;
use bridgectl_tx::TransactionSigner;

/// How a batch runs.
#[derive(Debug, Clone, Copy)]
pub struct BatchOptions {
    /// How many addresses sign and submit at the same time. Each address's items run one
    /// after another whatever this is (their nonces are consecutive). Default: 16 (an
    /// item mostly waits for the platform and the node; more only queues there).
    pub jobs: usize,
    /// How often each submitted item's result is polled. Default: one second.
    pub poll_interval: Duration,
    /// Re-price items signed in an earlier run whose transaction is still not mined
    /// (signed at the same nonce with a higher gas price, like [`Flows::replace`]) instead
    /// of sending their bytes again; their senders' keys must be given. `None` (the
    /// default): send the same bytes again.
    pub replace_stuck: Option<crate::flows::Repricing>,
    /// The batch is signed on the other side of an air gap ([`Flows::prepare_batch`]):
    /// items signed there are sent and followed; an item that still has to sign is
    /// reported `unsigned` and never run here. Default: false.
    pub air_gapped: bool,
}

impl Default for BatchOptions {
    fn default() -> Self {
        // The work of an item is mostly waiting for the platform and the node, so more
        // addresses than cores keep both busy; more than this only queues at the
        // platform.
        Self {
            jobs: 16,
            poll_interval: Duration::from_secs(1),
            replace_stuck: None,
            air_gapped: false,
        }
    }
}

/// What a run does with one item.
enum Plan {
    /// Finished in an earlier run: reported as it ended.
    Report(ItemResult),
    /// Signed before: the same bytes sent again, then awaited.
    Resend,
    /// Run (again): with a fresh txId when its flow stopped before signing.
    Run { fresh_tx_id: bool },
    /// Its flow signed and stopped before the journal recorded the bytes (the signing
    /// log has the signature, the journal does not): its journaled transaction is
    /// verified and signed again as the same flow, which yields the same bytes. A fresh
    /// run would build another transaction for that nonce, which the signing log
    /// refuses (one nonce, one signature).
    SignAgain,
}

struct Planned {
    record: BatchItemRecord,
    op: BatchOp,
    plan: Plan,
}

impl Planned {
    fn result(&self, tx_id: &str, status: ItemStatus, error: Option<ItemError>) -> ItemResult {
        ItemResult {
            index: self.record.index,
            id: self.record.item_id.clone(),
            tx_id: tx_id.to_owned(),
            tx_hash: None,
            status,
            error,
            resent: false,
            earlier: false,
            latency_ms: None,
        }
    }
}

/// A submitted item whose result is awaited.
struct Awaited {
    index: usize,
    id: String,
    submitted: Submitted,
    resent: bool,
    started: std::time::Instant,
}

/// The approver of one address's items: the key given for the batch, handed out only for
/// transactions from that address (each has passed the verifier when it is asked).
struct BatchKey<S> {
    signer: Option<S>,
}

impl<S: TransactionSigner + Clone> Approver for BatchKey<S> {
    type Signer = S;

    fn approve<'a>(&'a mut self, review: &'a Review<'_>) -> crate::flows::ApproveFuture<'a, S> {
        let from = review.raw_tx().from;
        let signer = match &self.signer {
            Some(s) if s.address() == from => Ok(s.clone()),
            _ => Err(Error::NoSigner { from }),
        };
        Box::pin(std::future::ready(signer))
    }
}

impl Flows {
    /// Records a batch of `items` (read from `source`, a name for people) in the journal,
    /// each bound to the txId its flow will have, and returns it. Nothing runs yet:
    /// [`Flows::batch`] runs it, as often as needed until every item is finished.
    ///
    /// Each item's idempotency key ([`BatchItem::key`]) is taken in the same transaction:
    /// when a batch recorded before holds any of them (this file run before, or being
    /// recorded by another process right now), nothing is recorded and the error is
    /// [`Error::ItemsHeld`], naming the batch that holds each.
    pub fn create_batch(&self, source: &str, items: &[BatchItem]) -> Result<BatchRecord, Error> {
        if items.is_empty() {
            return Err(Error::InvalidBatch(
                "a batch needs at least one item".into(),
            ));
        }
        let mut ids = std::collections::HashSet::new();
        let mut keys = std::collections::HashSet::new();
        let mut rows = Vec::with_capacity(items.len());
        for item in items {
            if !ids.insert(item.id.as_str()) || !keys.insert(item.key()) {
                return Err(Error::InvalidBatch(format!(
                    "item id {:?} is used twice",
                    item.id
                )));
            }
            let (_, amount) = item.op.spends();
            if amount.is_zero() {
                return Err(Error::InvalidBatch(format!(
                    "item {:?}: the amount is zero",
                    item.id
                )));
            }
            rows.push(NewBatchItem {
                id: item.id.clone(),
                key: item.key().to_owned(),
                op: serde_json::to_value(&item.op).map_err(Error::Encode)?,
                tx_id: new_tx_id(),
            });
        }
        let batch_id = new_tx_id();
        let held = self.journal.create_batch(&batch_id, source, &rows)?;
        if !held.is_empty() {
            return Err(Error::ItemsHeld(self.held_items_of(items, held)?));
        }
        self.journal.find_batch(&batch_id)
    }

    /// The items of `items` that batches recorded before hold (their keys), each with
    /// the batch and item that holds it: what [`Flows::create_batch`] would refuse, found
    /// without recording anything. Empty when none is held.
    pub fn held_items(&self, items: &[BatchItem]) -> Result<Vec<HeldItem>, Error> {
        let keys: Vec<&str> = items.iter().map(BatchItem::key).collect();
        let held = self.journal.held_keys(&keys)?;
        self.held_items_of(items, held)
    }

    fn held_items_of(
        &self,
        items: &[BatchItem],
        held: Vec<HeldKey>,
    ) -> Result<Vec<HeldItem>, Error> {
        let mut sizes: HashMap<String, usize> = HashMap::new();
        held.into_iter()
            .map(|h| {
                let batch_items = match sizes.get(&h.batch_id) {
                    Some(n) => *n,
                    None => {
                        let n = self.journal.find_batch(&h.batch_id)?.items;
                        sizes.insert(h.batch_id.clone(), n);
                        n
                    }
                };
                let item = &items[h.index];
                Ok(HeldItem {
                    index: h.index,
                    id: item.id.clone(),
                    same: stored_op(&h.held_by).is_ok_and(|op| op == item.op),
                    state: ItemState::of(h.held_by.flow.as_ref()),
                    held_index: h.held_by.index,
                    batch_items,
                    batch_id: h.batch_id,
                })
            })
            .collect()
    }

    /// Where each item of batch `batch_id` (or a prefix of it) stands.
    pub fn batch_status(&self, batch_id: &str) -> Result<BatchStatus, Error> {
        BatchStatus::read(&self.journal, batch_id)
    }

    /// Runs batch `batch_id` until every item has finished or cannot go on in this run,
    /// and returns a stream of the items' results, one per item, as they finish (in no
    /// fixed order). The same call finishes an interrupted batch: finished items are
    /// reported as they ended, signed ones are sent again with the same bytes, the rest
    /// run. `keys` are the signers of the accounts that still sign (see
    /// [`BatchStatus::signers_needed`]): unlocked keys, or any [`TransactionSigner`] (an
    /// external signer per address, asked for each item's signature); the batch as a
    /// whole was approved by the caller before this call. An item whose signer is missing
    /// fails with [`Error::NoSigner`] and runs again on the next call.
    ///
    /// The work happens while the stream is polled; dropping it stops the batch where it
    /// is (as a crash would: the next call finishes it).
    pub fn batch<'a, S: TransactionSigner + Clone + 'a>(
        &'a self,
        batch_id: &str,
        keys: Vec<S>,
        options: BatchOptions,
    ) -> Result<impl Stream<Item = ItemResult> + Unpin + 'a, Error> {
        let batch = self.journal.find_batch(batch_id)?;
        // One run at a time: held until the stream is dropped.
        let lock = self.journal.lock_batch(&batch.batch_id)?;
        let mut planned = Vec::new();
        for record in self.journal.batch_items(&batch.batch_id)? {
            let op = stored_op(&record)?;
            let plan = match self.item_plan(&record) {
                Plan::Run { .. } | Plan::SignAgain if options.air_gapped => Plan::Report(
                    not_signed_offline(&record, last_error(&self.journal, &record.tx_id)),
                ),
                plan => plan,
            };
            planned.push(Planned { record, op, plan });
        }
        let (out, results) = mpsc::unbounded_channel();
        let driver = Box::pin(self.drive(batch.batch_id, planned, keys, options, out));
        Ok(Box::pin(futures_util::stream::unfold(
            (driver, results, false, lock),
            |(mut driver, mut results, mut driven, lock)| async move {
                loop {
                    if driven {
                        let next = results.recv().await?;
                        return Some((next, (driver, results, driven, lock)));
                    }
                    tokio::select! {
                        biased;
                        next = results.recv() => {
                            if let Some(next) = next {
                                return Some((next, (driver, results, driven, lock)));
                            }
                            return None;
                        }
                        () = &mut driver => driven = true,
                    }
                }
            },
        )))
    }

    fn item_plan(&self, record: &BatchItemRecord) -> Plan {
        let flow = record.flow.as_ref();
        let done = |status: ItemStatus, error: Option<ItemError>| {
            Plan::Report(ItemResult {
                index: record.index,
                id: record.item_id.clone(),
                tx_id: record.tx_id.clone(),
                tx_hash: flow.and_then(|f| f.tx_hash.as_deref()?.parse().ok()),
                status,
                error,
                resent: false,
                earlier: true,
                latency_ms: None,
            })
        };
        match ItemState::of(flow) {
            ItemState::NotStarted => Plan::Run { fresh_tx_id: false },
            ItemState::Unsigned if self.signed_in_log(flow) => Plan::SignAgain,
            ItemState::Unsigned => Plan::Run { fresh_tx_id: true },
            // Observed and not final: its bytes are mined (a resend is "already known"),
            // and following it checks its facts again.
            ItemState::Signed | ItemState::Submitted | ItemState::Confirming => Plan::Resend,
            ItemState::Completed => done(ItemStatus::Completed, None),
            ItemState::Failed => done(
                ItemStatus::Failed,
                last_error(&self.journal, &record.tx_id).map(ItemError::Earlier),
            ),
        }
    }

    /// Whether the signing log holds a signature of `flow`'s journaled transaction
    /// (its signing hash at its key, chain and nonce): it was signed and the process
    /// stopped before the journal recorded the bytes.
    fn signed_in_log(&self, flow: Option<&FlowRecord>) -> bool {
        let Some(raw) = flow
            .and_then(|f| f.raw_tx.as_ref())
            .and_then(|v| RawTx::from_value(v).ok())
        else {
            return false;
        };
        bridgectl_tx::signing_log::logged_signature(self.signing_log.as_ref(), &raw)
            .is_ok_and(|entry| entry.is_some())
    }

    /// [`Plan::SignAgain`]: flow `tx_id`'s journaled transaction through the spine again
    /// (verified against the item's intent and the profile, then signed: the same
    /// bytes, recorded once in the signing log), and submitted.
    async fn sign_again_item(
        &self,
        op: &BatchOp,
        tx_id: &str,
        key: &mut BatchKey<impl TransactionSigner + Clone>,
    ) -> Result<Submitted, Error> {
        let rec = self.journal.get(tx_id)?;
        let corrupt = |reason: &str| Error::JournalCorrupt {
            tx_id: tx_id.to_owned(),
            reason: reason.to_owned(),
        };
        let raw = rec
            .raw_tx
            .as_ref()
            .and_then(|v| RawTx::from_value(v).ok())
            .ok_or_else(|| corrupt("the journaled rawTx does not parse"))?;
        let intent = self.item_intent(op, tx_id)?;
        self.journal.note(
            tx_id,
            "resume",
            &serde_json::json!({"fromState": rec.state.as_str(), "signed": false, "inSigningLog": true}),
        )?;
        self.run_of(tx_id, op.from())
            .sign_and_submit(&raw, &intent, None, key, &mut Quiet)
            .await
    }

    /// What item `op`, carried out by flow `tx_id`, must sign: rebuilt from the item
    /// and the bridge description (the trust root), never read back from the journal; a
    /// swap's destination is the address the platform issued to that flow, as journaled.
    pub(super) fn item_intent(
        &self,
        op: &BatchOp,
        tx_id: &str,
    ) -> Result<bridgectl_tx::request::Intent, Error> {
        Ok(match *op {
            BatchOp::Redeem { from, amount } => self.redeem_call(from, amount)?.full_intent(),
            BatchOp::Transfer {
                token, to, amount, ..
            } => plain_transfer_intent(self.side(token)?, to, amount),
            BatchOp::Swap { amount, .. } => {
                let issued = self
                    .journal
                    .steps(tx_id)?
                    .into_iter()
                    .rev()
                    .find(|s| s.step == "swap-address")
                    .and_then(|s| s.detail["address"].as_str()?.parse::<Address>().ok())
                    .ok_or_else(|| Error::JournalCorrupt {
                        tx_id: tx_id.to_owned(),
                        reason: "no swap address journaled".into(),
                    })?;
                swap_intent(&self.bridge()?.main, issued, amount)
            }
        })
    }

    async fn drive<S: TransactionSigner + Clone>(
        &self,
        batch_id: String,
        planned: Vec<Planned>,
        keys: Vec<S>,
        options: BatchOptions,
        out: mpsc::UnboundedSender<ItemResult>,
    ) {
        let mut keys: HashMap<Address, S> = keys.into_iter().map(|k| (k.address(), k)).collect();
        let mut lanes: Vec<(Address, Vec<Planned>)> = Vec::new();
        for p in planned {
            let from = p.op.from();
            match lanes.iter_mut().find(|(a, _)| *a == from) {
                Some((_, items)) => items.push(p),
                None => lanes.push((from, vec![p])),
            }
        }
        let jobs = Semaphore::new(options.jobs.max(1));
        let (awaiting, awaited) = mpsc::unbounded_channel();
        let runs = futures_util::future::join_all(lanes.into_iter().map(|(from, items)| {
            let key = BatchKey {
                signer: keys.remove(&from),
            };
            self.lane(
                &batch_id,
                items,
                key,
                &jobs,
                options.replace_stuck,
                awaiting.clone(),
                &out,
            )
        }));
        // Keys of accounts with no item here are dropped now.
        drop(keys);
        drop(awaiting);
        futures_util::future::join(runs, self.await_results(awaited, options, &out)).await;
    }

    /// The items of one address, in order: each signed and submitted before the next
    /// begins. The key is dropped after the last item that signs.
    #[allow(clippy::too_many_arguments)]
    async fn lane(
        &self,
        batch_id: &str,
        items: Vec<Planned>,
        mut key: BatchKey<impl TransactionSigner + Clone>,
        jobs: &Semaphore,
        replace_stuck: Option<crate::flows::Repricing>,
        awaiting: mpsc::UnboundedSender<Awaited>,
        out: &mpsc::UnboundedSender<ItemResult>,
    ) {
        let last_signing = items.iter().rposition(|p| match p.plan {
            Plan::Run { .. } | Plan::SignAgain => true,
            Plan::Resend => replace_stuck.is_some(),
            Plan::Report(_) => false,
        });
        let mut blocked: Option<ItemError> = None;
        for (position, p) in items.into_iter().enumerate() {
            if let Plan::Report(result) = p.plan {
                let _ = out.send(result);
                continue;
            }
            if let Some(reason) = &blocked {
                let _ =
                    out.send(p.result(&p.record.tx_id, ItemStatus::Pending, Some(reason.clone())));
                continue;
            }
            let resent = matches!(p.plan, Plan::Resend);
            let tx_id = match p.plan {
                Plan::Run { fresh_tx_id: true } => {
                    let fresh = new_tx_id();
                    if let Err(e) = self.journal.retry_batch_item(
                        batch_id,
                        p.record.index,
                        &p.record.tx_id,
                        &fresh,
                    ) {
                        let _ = out.send(p.result(
                            &p.record.tx_id,
                            ItemStatus::Pending,
                            Some(e.into()),
                        ));
                        continue;
                    }
                    fresh
                }
                _ => p.record.tx_id.clone(),
            };
            let permit = jobs.acquire().await;
            let started = std::time::Instant::now();
            let sent = match p.plan {
                Plan::Resend => match replace_stuck {
                    Some(repricing) => self.replace_item(&tx_id, repricing, &mut key).await,
                    None => self.resend_signed(&tx_id, &mut Quiet).await,
                },
                Plan::SignAgain => self.sign_again_item(&p.op, &tx_id, &mut key).await,
                _ => self.submit_item(&p.op, &tx_id, &mut key).await,
            };
            let sent = match sent {
                Err(e) if e.is_transient() && self.signed(&tx_id) => {
                    self.resend_transient(&tx_id).await
                }
                other => other,
            };
            drop(permit);
            if Some(position) == last_signing {
                // Zeroized on drop: the key is not kept past its last signature.
                key.signer = None;
            }
            match sent {
                Ok(submitted) => {
                    let _ = awaiting.send(Awaited {
                        index: p.record.index,
                        id: p.record.item_id.clone(),
                        submitted,
                        resent,
                        started,
                    });
                }
                Err(e) if self.signed(&tx_id) => {
                    // Its nonce is taken by bytes that were not accepted: the address's
                    // next items would be refused. They wait for `batch resume`.
                    blocked = Some(ItemError::Blocked {
                        item: p.record.item_id.clone(),
                        reason: e.to_string(),
                    });
                    let _ = out.send(p.result(&tx_id, ItemStatus::Pending, Some(e.into())));
                }
                Err(e) => {
                    let _ = out.send(p.result(&tx_id, ItemStatus::Unsigned, Some(e.into())));
                }
            }
        }
    }

    /// Whether flow `tx_id` holds signed bytes.
    fn signed(&self, tx_id: &str) -> bool {
        self.journal.get(tx_id).is_ok_and(|f| f.signed_tx.is_some())
    }

    /// Sends the journaled bytes of `tx_id` again after a transient failure: a few
    /// times, further apart each time. The same bytes, never a new signature.
    async fn resend_transient(&self, tx_id: &str) -> Result<Submitted, Error> {
        let mut last = None;
        for attempt in 1..=3u32 {
            self.timing
                .sleep(Duration::from_millis(250) * attempt)
                .await;
            match self.resend_signed(tx_id, &mut Quiet).await {
                Ok(s) => return Ok(s),
                Err(e) if e.is_transient() => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.expect("three attempts"))
    }

    /// A resume that replaces stuck items ([`BatchOptions`]), for an item signed in an earlier run: still not
    /// mined, it is re-priced at its nonce ([`Flows::replace`]'s checks and signing log);
    /// mined meanwhile, nothing is signed and its end is awaited as it is.
    async fn replace_item(
        &self,
        tx_id: &str,
        repricing: crate::flows::Repricing,
        key: &mut BatchKey<impl TransactionSigner + Clone>,
    ) -> Result<Submitted, Error> {
        let rec = self.journal.get(tx_id)?;
        if let Some((_, receipt)) = self.mined_signature(&rec).await? {
            return Ok(Submitted {
                tx_id: tx_id.to_owned(),
                tx_hash: receipt.transaction_hash,
                from: crate::flows::resume::recorded_sender(&rec)?,
                chain_id: rec.chain_id.unwrap_or_default(),
                nonce: rec.nonce.unwrap_or_default(),
                already_known: true,
            });
        }
        self.sign_again(tx_id, Purpose::Replacement, repricing, key, &mut Quiet)
            .await
            .map(|sent| sent.submitted)
    }

    /// Signs and submits one item as flow `tx_id`.
    async fn submit_item(
        &self,
        op: &BatchOp,
        tx_id: &str,
        key: &mut BatchKey<impl TransactionSigner + Clone>,
    ) -> Result<Submitted, Error> {
        let progress = &mut Quiet;
        // Refused at once when the sender holds less, with the single flow's error.
        let (which, amount) = op.spends();
        self.refuse_over_balance(which, op.from(), amount, progress)
            .await?;
        match *op {
            BatchOp::Redeem { from, amount } => {
                self.submit_redeem(from, amount, Some(tx_id), key, progress)
                    .await
            }
            BatchOp::Transfer {
                token,
                from,
                to,
                amount,
            } => {
                let spec = self.transfer_spec(token, from, to, amount, None);
                self.submit_transfer(&spec, Some(tx_id), key, progress)
                    .await
            }
            BatchOp::Swap { from, amount } => {
                let spec = self.swap_spec(from, amount, None);
                self.submit_swap(&spec, Some(tx_id), key, progress)
                    .await
                    .map(|(_, _, s)| s)
            }
        }
    }

    /// The transfer a transfer item builds: at nonce `fixed` when given (a prepared
    /// batch's next), else from the chain's node or the platform, as its gas.
    pub(super) fn transfer_spec(
        &self,
        which: TokenSide,
        from: Address,
        to: Address,
        amount: U256,
        fixed: Option<u64>,
    ) -> TransferSpec {
        let (nonce, gas) = self.local_sources(which);
        TransferSpec {
            token: which,
            from,
            to,
            amount,
            nonce: fixed.map_or(nonce, NonceSource::Fixed),
            gas,
        }
    }

    /// The swap a swap item runs (its MT transfer at nonce `fixed` when given), without
    /// waiting for its credit: a batch awaits every item's end together.
    pub(super) fn swap_spec(&self, from: Address, amount: U256, fixed: Option<u64>) -> SwapSpec {
        let TransferSpec { nonce, gas, .. } =
            self.transfer_spec(TokenSide::Mt, from, from, amount, fixed);
        SwapSpec {
            from,
            amount,
            nonce,
            gas,
            wait: false,
        }
    }

    /// Nonce and gas of a transaction built here: the chain's node when it is known, else
    /// the platform.
    fn local_sources(&self, which: TokenSide) -> (NonceSource, GasSource) {
        let has_node = self.side(which).is_ok_and(|s| self.has_node(s.chain_id));
        if has_node {
            (NonceSource::Node, GasSource::Node)
        } else {
            (NonceSource::Platform, GasSource::Platform)
        }
    }

    /// Waits for the results of every submitted item, all at once, as they come.
    async fn await_results(
        &self,
        mut awaited: mpsc::UnboundedReceiver<Awaited>,
        options: BatchOptions,
        out: &mpsc::UnboundedSender<ItemResult>,
    ) {
        let mut waiting = FuturesUnordered::new();
        let mut open = true;
        while open || !waiting.is_empty() {
            tokio::select! {
                next = awaited.recv(), if open => match next {
                    Some(a) => waiting.push(self.finish_item(a, options.poll_interval)),
                    None => open = false,
                },
                Some(result) = waiting.next(), if !waiting.is_empty() => {
                    let _ = out.send(result);
                }
            }
        }
    }

    /// The end of one submitted item: its redemption, or its receipt.
    async fn finish_item(&self, a: Awaited, interval: Duration) -> ItemResult {
        let tx_id = a.submitted.tx_id.clone();
        // Every item ends as a single flow of its kind ends (`follow.rs`): its own facts,
        // final on their chains; a flow replaced at its nonce by whichever was mined.
        let outcome = self
            .follow_every(&tx_id, interval, &mut Quiet)
            .await
            .map(|s| {
                let replaced_by = s
                    .ended
                    .as_ref()
                    .filter(|e| e.purpose != crate::journal::Purpose::Original)
                    .map(|e| (e.purpose, e.mined));
                match (s.state, &s.redemption) {
                    (Some(FlowState::Completed), _) => None,
                    (Some(FlowState::Failed), Some(r))
                        if !r.is_success() && replaced_by.is_none() =>
                    {
                        Some(ItemError::Redemption {
                            status: r.status.clone(),
                            reason: r
                                .raw
                                .get("reason")
                                .and_then(|v| v.as_str())
                                .map(str::to_owned),
                        })
                    }
                    (Some(state @ (FlowState::Failed | FlowState::Cancelled)), _) => {
                        Some(ItemError::Ended { state, replaced_by })
                    }
                    (Some(FlowState::Confirming), _) => Some(ItemError::Unobserved(format!(
                        "observed, not final yet: {}",
                        s.confirmations().unwrap_or_default()
                    ))),
                    _ => Some(ItemError::Unobserved(s.unobserved.join("; "))),
                }
            });
        let (status, error) = match outcome {
            Ok(None) => (ItemStatus::Completed, None),
            Ok(Some(open @ ItemError::Unobserved(_))) => (ItemStatus::Pending, Some(open)),
            Ok(Some(failed)) => (ItemStatus::Failed, Some(failed)),
            Err(e @ Error::Reverted { .. }) => (ItemStatus::Failed, Some(e.into())),
            // Submitted and not known to have failed: resuming the batch waits again.
            Err(e) => (ItemStatus::Pending, Some(e.into())),
        };
        // Between items, after this one's submission: the place to keep the journal's
        // and the signing log's write-ahead logs small in a long run (nothing to do
        // while they are small).
        self.journal().tidy();
        self.signing_log.tidy();
        ItemResult {
            index: a.index,
            id: a.id,
            tx_id,
            tx_hash: Some(a.submitted.tx_hash),
            status,
            error,
            resent: a.resent,
            earlier: false,
            latency_ms: Some(a.started.elapsed().as_millis() as u64),
        }
    }
}

/// The report of an item of an air-gapped batch that has no signature here: it is
/// signed offline, never run here. `why` is the reason the journal recorded last (the
/// offline signer's, the refusal of its signature here, the abandonment).
fn not_signed_offline(record: &BatchItemRecord, why: Option<String>) -> ItemResult {
    ItemResult {
        index: record.index,
        id: record.item_id.clone(),
        tx_id: record.tx_id.clone(),
        tx_hash: None,
        status: ItemStatus::Unsigned,
        error: Some(ItemError::NotSignedOffline { why }),
        resent: false,
        earlier: false,
        latency_ms: None,
    }
}
