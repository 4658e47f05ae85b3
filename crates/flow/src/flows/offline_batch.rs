//! The offline signer at batch scale (`bridgectl sign` of a batch request): a thousand
//! signatures in one sitting, with one review, one question and each key unlocked once,
//! and every item held to exactly what a single offline signature is held to.
//!
//! What holds, item by item, as for one sign request ([`super::OfflineSigner::sign`]):
//! - the one verifier against the offline policy (the trust root) and the item's intent
//!   (a claim, checked against its rawTx);
//! - the nonce: a sender's first item must be its next nonce (given by the operator, or
//!   this machine's journal of signatures: its floor, the batch's own flows left out),
//!   each later item the one after; the signing log's guard (one nonce, one signature per
//!   key) before anything is unlocked and again inside the append;
//! - the spending limits: each window read from the signing log once, the batch's
//!   earlier items counted as signed, checked again inside the append;
//! - an item signed on this machine before (the same request again, a run killed after
//!   its journal commit) gives its journaled bytes again, with nothing unlocked.
//!
//! An item the checks refuse is reported and left out, and so is every later item of its
//! sender (its nonce would be a gap: the chain would never mine them); a caller that
//! wants the whole batch or nothing refuses on [`CheckedBatch::refused`].
//!
//! Durability, by group commit: the signatures of up to
//! [`BatchSigning::commit_every`] items are appended to the signing log in one commit
//! (one fsync), then their signed bytes to the journal in one commit (one more), before
//! the next group is signed; the signed batch file is written by the caller after the
//! last. A crash leaves each commit whole or absent, and a rerun signs what is missing
//! again: deterministic signatures, so the same bytes, recorded once.
//!
//! No network: nothing here constructs an HTTP client (a signer the caller passes may).

use std::collections::{BTreeMap, HashMap};

use alloy_primitives::{Address, U256};
use bridgectl_tx::batch::{BatchRequest, RefusedBatchItem, SignedBatch, SignedBatchItem};
use bridgectl_tx::effects::Effects;
use bridgectl_tx::limits::{Spent, WindowLimit};
use bridgectl_tx::request::{InputKind, SignInput};
use bridgectl_tx::signing_log::WindowQuery;
use bridgectl_tx::{
    Context, Nonce, NonceFacts, SignedTx, TransactionSigner, Verified, text::printable,
};
use serde_json::json;

use super::batch::RefusedItem;
use super::{OfflineSigner, OfflineSigning};
use crate::Error;
use crate::journal::{FlowKind, GroupFlow, Journal};

/// How many signatures are committed together by default: a batch of a thousand is one
/// commit in the signing log and one in the journal. Each group's append walks the
/// spending windows of its keys again (inside its transaction), and each commit is an
/// fsync on a disk that may take milliseconds for one: larger groups cost less, and a
/// crash costs nothing but signing the uncommitted group again (the same bytes).
pub const DEFAULT_COMMIT_EVERY: usize = 1024;

/// A batch request to sign offline.
#[derive(Debug, Clone, Copy)]
pub struct BatchSigning<'a> {
    /// The request, parsed strictly ([`BatchRequest::parse`]).
    pub request: &'a BatchRequest,
    /// Where it came from, for the journal (a file name).
    pub input_name: &'a str,
    /// Each sender's next nonce as the operator knows it: its first item must have it.
    /// A sender not named here is checked against this machine's journal.
    pub nonces: &'a BTreeMap<Address, u64>,
    /// How many signatures are committed together (at least 1).
    pub commit_every: usize,
}

/// What became of one item when it was checked.
#[derive(Debug, Clone)]
pub enum ItemCheck {
    /// Passed every check; signed by [`OfflineSigner::sign_batch`].
    Sign(Box<Verified>),
    /// Signed on this machine before: these bytes again, nothing unlocked.
    SignedBefore(SignedTx),
    /// Left out, and why (escaped text).
    Refused(String),
}

/// One item, checked.
#[derive(Debug, Clone)]
pub struct CheckedItem {
    /// Its position in the batch.
    pub index: usize,
    /// Its id.
    pub id: String,
    /// The online flow it answers (also its flow here).
    pub tx_id: String,
    /// Its sender.
    pub from: Address,
    /// What the checks said.
    pub check: ItemCheck,
    /// The refusal, typed, when the checks refused the item itself (not when it was
    /// left out after an earlier item of its sender): the error a single signature
    /// returns, matched the same way ([`Error::cause`], [`Error::refusal`]).
    pub refusal: Option<std::sync::Arc<Error>>,
}

/// A batch request checked before anything is unlocked: what
/// [`OfflineSigner::sign_batch`] signs and [`CheckedBatch::review`] shows.
///
/// It holds the nonces it reserved in this machine's journal for the items to sign, and
/// gives back those of items that did not sign when it is dropped, however the signer
/// ends (declined, a key that did not unlock, an error on the way): no way out leaves a
/// sender held for the lease. [`CheckedBatch::stopped_by`] says why, for the journal.
#[derive(Debug)]
pub struct CheckedBatch<'j> {
    /// The items, in batch order.
    pub items: Vec<CheckedItem>,
    batch_id: String,
    request_hash: alloy_primitives::B256,
    commit_every: usize,
    /// The windows the batch counts against: what the log held, what the batch adds.
    windows: Vec<(WindowLimit, Spent, U256)>,
    /// The nonces reserved for its items to sign, given back on drop.
    reserved: Reservations<'j>,
}

/// The flows whose nonces a checked batch reserved and that have not signed yet: when
/// dropped, each still unsigned stops at its approval (as a single offline signature's
/// flow does when it is not approved) and its nonce is free. A flow that signed holds its
/// nonce for good and is taken off the list when its signature is journaled.
#[derive(Debug)]
struct Reservations<'j> {
    journal: &'j Journal,
    /// The flows not signed yet.
    unsigned: std::sync::Mutex<Vec<String>>,
    /// Why they stopped, when the caller said.
    why: std::sync::Mutex<Option<String>>,
}

impl Reservations<'_> {
    /// Flows `signed` signed: their nonces are theirs for good.
    fn signed(&self, signed: &[&str]) {
        let mut unsigned = self.unsigned.lock().unwrap_or_else(|p| p.into_inner());
        unsigned.retain(|t| !signed.contains(&t.as_str()));
    }
}

impl Drop for Reservations<'_> {
    fn drop(&mut self) {
        let unsigned = std::mem::take(self.unsigned.get_mut().unwrap_or_else(|p| p.into_inner()));
        if unsigned.is_empty() {
            return;
        }
        let why = self
            .why
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .unwrap_or_else(|| "the batch signer stopped before this item was signed".into());
        let tx_ids: Vec<&str> = unsigned.iter().map(String::as_str).collect();
        // Best effort (a drop cannot fail): a release that cannot be written leaves the
        // reservations to their lease, which refuses nothing that is not refused now.
        let _ =
            self.journal
                .stop_unsigned(&tx_ids, super::run::NOT_APPROVED, &json!({ "error": why }));
    }
}

impl CheckedBatch<'_> {
    /// Says why the items not signed stop (declined, a key that did not unlock): the
    /// journal records it when their nonces are given back, on drop.
    pub fn stopped_by(&self, why: &Error) {
        *self.reserved.why.lock().unwrap_or_else(|p| p.into_inner()) = Some(why.to_string());
    }

    /// The items left out, as a refusal names them.
    pub fn refused(&self) -> Vec<RefusedItem> {
        self.items
            .iter()
            .filter_map(|i| match &i.check {
                ItemCheck::Refused(reason) => Some(match &i.refusal {
                    Some(error) => RefusedItem {
                        index: i.index,
                        id: i.id.clone(),
                        from: i.from,
                        error: error.clone(),
                        reason: reason.clone(),
                    },
                    None => RefusedItem::described(i.index, i.id.clone(), i.from, reason.clone()),
                }),
                _ => None,
            })
            .collect()
    }

    /// The senders whose items will be signed now, in order of first appearance: the
    /// keys to unlock.
    pub fn signers_needed(&self) -> Vec<Address> {
        let mut out = Vec::new();
        for i in &self.items {
            if matches!(i.check, ItemCheck::Sign(_)) && !out.contains(&i.from) {
                out.push(i.from);
            }
        }
        out
    }

    /// What one question for the whole batch shows: counts and totals per token and
    /// per sender, every recipient with the allowlist's verdict, the fees, each sender's
    /// nonce range and the spending limits as they will stand after the batch.
    pub fn review(&self, allowlist: &[Address]) -> BatchReview {
        let mut review = BatchReview {
            signing: 0,
            signed_before: 0,
            refused: self.refused(),
            senders: Vec::new(),
            tokens: Vec::new(),
            recipients: Vec::new(),
            limits: Vec::new(),
        };
        for item in &self.items {
            let verified = match &item.check {
                ItemCheck::Sign(v) => v,
                ItemCheck::SignedBefore(_) => {
                    review.signed_before += 1;
                    continue;
                }
                ItemCheck::Refused(_) => continue,
            };
            review.signing += 1;
            let tx = verified.raw_tx();
            let token = TokenId {
                chain_id: tx.chain_id,
                contract: tx.to,
                symbol: verified.token().map(|t| t.symbol.clone()),
                decimals: verified.token().map(|t| t.decimals),
            };
            let moved = Effects::of_calldata(&tx.data);
            let amount = moved.total().unwrap_or_default();
            let sender = match review
                .senders
                .iter_mut()
                .find(|s| s.from == tx.from && s.chain_id == tx.chain_id)
            {
                Some(s) => s,
                None => {
                    review.senders.push(SenderReview {
                        from: tx.from,
                        chain_id: tx.chain_id,
                        items: 0,
                        first_nonce: tx.nonce,
                        last_nonce: tx.nonce,
                        max_fees: U256::ZERO,
                        moved: Vec::new(),
                    });
                    review.senders.last_mut().expect("pushed")
                }
            };
            sender.items += 1;
            sender.first_nonce = sender.first_nonce.min(tx.nonce);
            sender.last_nonce = sender.last_nonce.max(tx.nonce);
            sender.max_fees = sender
                .max_fees
                .saturating_add(U256::from(tx.gas_limit).saturating_mul(U256::from(tx.gas_price)));
            add_total(&mut sender.moved, &token, amount);
            add_total(&mut review.tokens, &token, amount);
            for m in moved.movements().unwrap_or_default() {
                let allowed = match m.to {
                    Some(to) if !allowlist.is_empty() => Some(allowlist.contains(&to)),
                    _ => None,
                };
                match review
                    .recipients
                    .iter_mut()
                    .find(|r| r.token == token && r.to == m.to && r.kind == m.kind.as_str())
                {
                    Some(r) => {
                        r.items += 1;
                        r.amount = r.amount.saturating_add(m.amount);
                    }
                    None => review.recipients.push(RecipientReview {
                        token: token.clone(),
                        to: m.to,
                        kind: m.kind.as_str(),
                        items: 1,
                        amount: m.amount,
                        allowed,
                    }),
                }
            }
        }
        review.limits = self
            .windows
            .iter()
            .map(|(limit, spent, batch)| LimitReview {
                key: limit.query.key,
                symbol: limit.token.symbol.clone(),
                decimals: limit.token.decimals,
                per_secs: limit.query.per,
                max: limit.max,
                logged: spent.total,
                batch: *batch,
            })
            .collect();
        review
    }
}

fn add_total(totals: &mut Vec<TokenTotalReview>, token: &TokenId, amount: U256) {
    match totals.iter_mut().find(|t| t.token == *token) {
        Some(t) => {
            t.items += 1;
            t.amount = t.amount.saturating_add(amount);
        }
        None => totals.push(TokenTotalReview {
            token: token.clone(),
            items: 1,
            amount,
        }),
    }
}

/// A token as the offline policy names it: its contract on its chain, with its symbol
/// and decimals when the policy knows them (else amounts are base units).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenId {
    /// The chain.
    pub chain_id: u64,
    /// The token contract (the callee).
    pub contract: Address,
    /// Its symbol, from the policy.
    pub symbol: Option<String>,
    /// Its decimals, from the policy.
    pub decimals: Option<u8>,
}

impl TokenId {
    /// `amount` of this token for people: in token units with the symbol, or in base
    /// units when the policy does not describe the token.
    pub fn units(&self, amount: U256) -> String {
        match (&self.symbol, self.decimals) {
            (Some(symbol), Some(d)) => format!(
                "{} {}",
                bridgectl_tx::amount::format_units(amount, d)
                    .unwrap_or_else(|_| amount.to_string()),
                printable(symbol)
            ),
            _ => format!("{amount} base units of {}", self.contract),
        }
    }
}

/// How much of a token the signed items move, in how many items.
#[derive(Debug, Clone)]
pub struct TokenTotalReview {
    /// The token.
    pub token: TokenId,
    /// How many items move it.
    pub items: usize,
    /// In all, in base units (everything the calls move: fees included).
    pub amount: U256,
}

/// What one sender signs in the batch.
#[derive(Debug, Clone)]
pub struct SenderReview {
    /// The sender.
    pub from: Address,
    /// The chain.
    pub chain_id: u64,
    /// How many of its items are signed now.
    pub items: usize,
    /// Its first nonce signed now.
    pub first_nonce: u64,
    /// Its last nonce signed now.
    pub last_nonce: u64,
    /// The most its items can cost in fees (gas limit times gas price, summed), in wei.
    pub max_fees: U256,
    /// Per token, what its items move.
    pub moved: Vec<TokenTotalReview>,
}

/// Where one token goes, grouped by recipient and kind of movement.
#[derive(Debug, Clone)]
pub struct RecipientReview {
    /// The token.
    pub token: TokenId,
    /// The address that receives it; `None` when it stays with the contract (burned by
    /// a redeem, staked).
    pub to: Option<Address>,
    /// How it moves (`transfer`, `fee`, `allowance`, `burned`, `staked`).
    pub kind: &'static str,
    /// In how many items.
    pub items: usize,
    /// In all, in base units.
    pub amount: U256,
    /// The allowlist's verdict: `None` without an allowlist or for tokens that stay with
    /// the contract. A recipient outside it was refused item by item already.
    pub allowed: Option<bool>,
}

/// A spending limit as it will stand after the batch.
#[derive(Debug, Clone)]
pub struct LimitReview {
    /// The key it counts for.
    pub key: Address,
    /// The token's symbol.
    pub symbol: String,
    /// The token's decimals.
    pub decimals: u8,
    /// The window's length, in seconds.
    pub per_secs: u64,
    /// The most the window may hold, in base units.
    pub max: U256,
    /// What the signing log holds in the window now.
    pub logged: U256,
    /// What the batch adds.
    pub batch: U256,
}

/// The review of a checked batch ([`CheckedBatch::review`]).
#[derive(Debug, Clone)]
pub struct BatchReview {
    /// Items signed now.
    pub signing: usize,
    /// Items signed on this machine before: their bytes again.
    pub signed_before: usize,
    /// Items left out, and why.
    pub refused: Vec<RefusedItem>,
    /// Per sender and chain.
    pub senders: Vec<SenderReview>,
    /// Per token.
    pub tokens: Vec<TokenTotalReview>,
    /// Per token, recipient and kind.
    pub recipients: Vec<RecipientReview>,
    /// The spending limits the batch counts against.
    pub limits: Vec<LimitReview>,
}

/// One sender's progress through its items while they are checked.
struct Lane {
    /// The nonce its next item must have, once one of its items passed.
    next: Option<u64>,
    /// Why its remaining items are left out, once one was refused.
    blocked: Option<String>,
    /// This machine's journal floor for the sender, the batch's own flows left out.
    floor: Option<u64>,
}

impl<'j> OfflineSigner<'j> {
    /// Checks every item of a batch request (see the module doc), reserves the nonces
    /// of those that pass in this machine's journal (one commit), and returns what to
    /// review and sign, holding those reservations until it is dropped. Nothing is
    /// unlocked; a refused item is reported in the result, not as an error. An error is
    /// a failure to check at all (the signing log refuses to be signed into, the journal
    /// cannot be read).
    pub fn check_batch(&self, job: &BatchSigning<'_>) -> Result<CheckedBatch<'j>, Error> {
        let request = job.request;
        let batch_tx_ids: Vec<&str> = request.items.iter().map(|i| i.tx_id.as_str()).collect();
        let now = bridgectl_tx::signing_log::unix_now();
        let mut lanes: HashMap<(Address, u64), Lane> = HashMap::new();
        let mut log_checked: Vec<Address> = Vec::new();
        let mut windows = Windows::default();
        let mut items = Vec::with_capacity(request.items.len());
        for item in &request.items {
            let tx = &item.raw_tx;
            if !log_checked.contains(&tx.from) {
                // A log that was rolled back, or holds a stranger's entry, refuses
                // every signature of this key: the whole batch, before anything else.
                self.signing_log.check(tx.from)?;
                log_checked.push(tx.from);
            }
            let input = SignInput {
                kind: InputKind::SignRequest,
                raw_tx: tx.clone(),
                intent: Some(item.intent.clone()),
                origin: None,
                tx_id: Some(item.tx_id.clone()),
                request_hash: request.request_hash,
            };
            let lane = match lanes.entry((tx.from, tx.chain_id)) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => e.insert(Lane {
                    next: None,
                    blocked: None,
                    floor: self.journal.next_nonce_excluding(
                        tx.from,
                        tx.chain_id,
                        &batch_tx_ids,
                    )?,
                }),
            };
            let checked = |check: ItemCheck| CheckedItem {
                index: item.index,
                id: item.id.clone(),
                tx_id: item.tx_id.clone(),
                from: tx.from,
                check,
                refusal: None,
            };
            if let Some(why) = &lane.blocked {
                items.push(checked(ItemCheck::Refused(why.clone())));
                continue;
            }
            let single = OfflineSigning {
                input: &input,
                input_name: job.input_name,
                key: tx.from,
                fixed_nonce: None,
            };
            // The signing log's entries at this nonce, read once: the signature made
            // here before, if any, and the nonce guard.
            let outcome = match self
                .signing_log
                .signed_at_nonce(tx.from, tx.chain_id, tx.nonce)
                .map_err(Error::from)
            {
                Err(e) => Err(e),
                Ok(prior) => {
                    let hash = bridgectl_tx::rawtx::signing_hash(tx);
                    let logged = prior
                        .entries
                        .iter()
                        .find(|b| b.signing_hash == Some(hash))
                        .cloned();
                    let in_log = logged.is_some();
                    match self.signed_before_as(&single, logged) {
                        Ok(Some((signed, _))) => Ok(ItemCheck::SignedBefore(signed)),
                        Ok(None) => self
                            .check_item(
                                &item.tx_id,
                                &input,
                                Facts {
                                    // A sender's first item: the operator's nonce (or the
                                    // journal's floor); each later one: the nonce after
                                    // the one before.
                                    fixed: lane.next.or(job.nonces.get(&tx.from).copied()),
                                    floor: lane.floor,
                                    prior: &prior,
                                    in_log,
                                },
                                now,
                                &mut windows,
                            )
                            .map(|v| ItemCheck::Sign(Box::new(v))),
                        Err(e) => Err(e),
                    }
                }
            };
            match outcome {
                Ok(check) => {
                    lane.next = Some(tx.nonce + 1);
                    items.push(checked(check));
                }
                Err(e) => {
                    let mut reason = printable(&crate::chain(&e)).into_owned();
                    if let Error::Tx(bridgectl_tx::Error::Limit { .. }) = &e {
                        // Which part of "signed already" is this batch's own.
                        reason.push_str(&windows.earlier_items(self.policy, tx, now));
                    }
                    lane.blocked = Some(format!(
                        "not signed: item {:?} of the same sender was refused, and the nonces \
                         after it would be a gap the chain never mines past",
                        printable(&item.id)
                    ));
                    let refusal = e.is_refusal().then(|| std::sync::Arc::new(e));
                    items.push(CheckedItem {
                        refusal,
                        ..checked(ItemCheck::Refused(reason))
                    });
                }
            }
        }
        let mut batch = CheckedBatch {
            items,
            batch_id: request.batch_id.clone(),
            request_hash: request.request_hash,
            commit_every: job.commit_every.max(1),
            windows: windows.counted,
            reserved: Reservations {
                journal: self.journal,
                unsigned: std::sync::Mutex::new(Vec::new()),
                why: std::sync::Mutex::new(None),
            },
        };
        self.reserve(&mut batch, job)?;
        Ok(batch)
    }

    /// One item through the verifier as a single offline signature goes: its nonce
    /// `facts.fixed` when known, the journal's floor under it, the signing log's guard,
    /// and its window with the batch's earlier items.
    fn check_item(
        &self,
        tx_id: &str,
        input: &SignInput,
        facts: Facts<'_>,
        now: u64,
        windows: &mut Windows,
    ) -> Result<Verified, Error> {
        let Windows {
            logged,
            counted: windows,
        } = windows;
        let tx = &input.raw_tx;
        // A txId of this journal names this batch's own flow (the online half on this
        // machine, or a run of this batch before): it must hold exactly this transaction.
        if let Ok(flow) = self.journal.get(tx_id) {
            let same = flow.signed_tx.is_none()
                && flow.from.as_deref().map(str::to_ascii_lowercase)
                    == Some(tx.from.to_string().to_ascii_lowercase())
                && flow
                    .raw_tx
                    .as_ref()
                    .and_then(|v| bridgectl_tx::RawTx::from_value(v).ok())
                    .is_some_and(|raw| raw == *tx);
            if !same {
                return Err(Error::ChangedSinceVerified {
                    tx_id: tx_id.to_owned(),
                });
            }
        }
        let Facts {
            fixed,
            floor: journal_next,
            prior,
            in_log,
        } = facts;
        bridgectl_tx::signing_log::nonce_free(
            prior,
            tx.from,
            tx.chain_id,
            tx.nonce,
            bridgectl_tx::rawtx::signing_hash(tx),
            None,
        )?;
        let spent = match bridgectl_tx::limits::window_query(self.policy, tx, now) {
            None => None,
            Some(query) => {
                let key = window_key(&query);
                let logged_spent = match logged.get(&key) {
                    Some(s) => s.clone(),
                    None => {
                        let s = self.signing_log.window_total(&query)?;
                        logged.insert(key, s.clone());
                        s
                    }
                };
                let batch = windows
                    .iter()
                    .find(|(l, _, _)| window_key(&l.query) == key)
                    .map_or(U256::ZERO, |w| w.2);
                Some(Spent {
                    total: logged_spent.total.saturating_add(batch),
                    ..logged_spent
                })
            }
        };
        let context = Context {
            signer: tx.from,
            gas_price_quote: None,
            nonce: Nonce::Next(NonceFacts {
                fixed,
                journal_next,
                ..NonceFacts::default()
            }),
            spent: spent.map(|mut s| {
                if in_log {
                    // Its own entry is in the window already (signed before a crash):
                    // not counted twice.
                    let own = Effects::of_calldata(&tx.data).total().unwrap_or_default();
                    s.total = s.total.saturating_sub(own);
                }
                s
            }),
        };
        let verified = bridgectl_tx::verify(tx, input.intent.as_ref(), self.policy, &context)?;
        if let Some(limit) = verified.window_limit()
            && !in_log
        {
            let key = window_key(&limit.query);
            match windows
                .iter_mut()
                .find(|(l, _, _)| window_key(&l.query) == key)
            {
                Some(w) => w.2 = w.2.saturating_add(limit.amount),
                None => {
                    let spent = logged.get(&key).cloned().unwrap_or(Spent {
                        query: limit.query.clone(),
                        total: U256::ZERO,
                        since: 0,
                    });
                    windows.push((limit.clone(), spent, limit.amount));
                }
            }
        }
        Ok(verified)
    }

    /// Begins and reserves the flows of the items to sign in one commit; an item whose
    /// nonce another flow of this journal holds is refused, with the rest of its
    /// sender's items.
    fn reserve(&self, batch: &mut CheckedBatch<'_>, job: &BatchSigning<'_>) -> Result<(), Error> {
        let request = job.request;
        let to_reserve: Vec<usize> = (0..batch.items.len())
            .filter(|&i| matches!(batch.items[i].check, ItemCheck::Sign(_)))
            .collect();
        if to_reserve.is_empty() {
            return Ok(());
        }
        let flows: Vec<GroupFlow<'_>> = to_reserve
            .iter()
            .map(|&i| {
                let item = &request.items[i];
                GroupFlow {
                    tx_id: &item.tx_id,
                    kind: FlowKind::Sign,
                    intent: json!({"input": job.input_name, "requestHash": request.request_hash,
                                   "kind": "batch-request", "batchId": request.batch_id,
                                   "index": item.index, "intent": item.intent}),
                    raw_tx: &item.raw_tx,
                }
            })
            .collect();
        let holders = self.journal.reserve_group(&flows)?;
        // Taken by the guard at once: whatever happens next gives them back.
        *batch
            .reserved
            .unsigned
            .get_mut()
            .unwrap_or_else(|p| p.into_inner()) = to_reserve
            .iter()
            .zip(&holders)
            .filter(|(_, holder)| holder.is_none())
            .map(|(&i, _)| request.items[i].tx_id.clone())
            .collect();
        let mut blocked: Vec<(Address, u64)> = Vec::new();
        for (n, &i) in to_reserve.iter().enumerate() {
            let item = &mut batch.items[i];
            let tx = &request.items[i].raw_tx;
            if blocked.contains(&(tx.from, tx.chain_id)) {
                item.check = ItemCheck::Refused(
                    "not signed: an earlier item of the same sender was refused, and the \
                     nonces after it would be a gap the chain never mines past"
                        .into(),
                );
                continue;
            }
            if let Some(by) = &holders[n] {
                let e = Error::NonceReserved {
                    address: tx.from,
                    chain_id: tx.chain_id,
                    nonce: tx.nonce,
                    by: by.clone(),
                };
                item.check = ItemCheck::Refused(printable(&e.to_string()).into_owned());
                blocked.push((tx.from, tx.chain_id));
            }
        }
        Ok(())
    }

    /// Signs the items of `batch` that passed its checks, each with the signer of its
    /// sender among `signers` (local keys, or any [`TransactionSigner`]: a hardware
    /// signer is asked once per transaction and once per log entry), in groups of
    /// [`BatchSigning::commit_every`]: each group's entries appended to the signing log
    /// in one commit, then its signed bytes to the journal in one durable commit. Returns
    /// the signed batch to write; nothing of it may leave before this returns.
    pub async fn sign_batch<S: TransactionSigner>(
        &self,
        batch: &CheckedBatch<'_>,
        signers: &[S],
    ) -> Result<SignedBatch, Error> {
        let to_sign: Vec<&CheckedItem> = batch
            .items
            .iter()
            .filter(|i| matches!(i.check, ItemCheck::Sign(_)))
            .collect();
        // The approval may have taken long: every nonce must still be this batch's.
        for item in &to_sign {
            let ItemCheck::Sign(v) = &item.check else {
                continue;
            };
            let tx = v.raw_tx();
            self.journal
                .hold_reservation(&item.tx_id, tx.from, tx.chain_id, tx.nonce)?;
        }
        let mut signed_now: HashMap<usize, SignedTx> = HashMap::new();
        for group in to_sign.chunks(batch.commit_every) {
            let mut pairs: Vec<(&Verified, &S)> = Vec::with_capacity(group.len());
            for item in group {
                let ItemCheck::Sign(v) = &item.check else {
                    continue;
                };
                let signer = signers
                    .iter()
                    .find(|s| s.address() == item.from)
                    .ok_or(Error::NoSigner { from: item.from })?;
                pairs.push((v, signer));
            }
            let signed = bridgectl_tx::sign_and_log_group(
                &pairs,
                self.signing_log,
                bridgectl_tx::signing_log::unix_now(),
            )
            .await?;
            bridgectl_local::failpoint::hit("batch-logged-not-journaled");
            let records: Vec<(&str, &SignedTx)> = group
                .iter()
                .zip(&signed)
                .map(|(item, s)| (item.tx_id.as_str(), s))
                .collect();
            self.journal.record_signed_group(&records)?;
            batch
                .reserved
                .signed(&records.iter().map(|(t, _)| *t).collect::<Vec<_>>());
            bridgectl_local::failpoint::hit("batch-journaled");
            for (item, s) in group.iter().zip(signed) {
                signed_now.insert(item.index, s);
            }
        }
        let mut out = SignedBatch {
            batch_id: batch.batch_id.clone(),
            request_hash: batch.request_hash,
            items: Vec::new(),
            refused: Vec::new(),
        };
        for item in &batch.items {
            let signed = match &item.check {
                ItemCheck::Sign(_) => signed_now.get(&item.index).cloned(),
                ItemCheck::SignedBefore(s) => Some(s.clone()),
                ItemCheck::Refused(reason) => {
                    out.refused.push(RefusedBatchItem {
                        index: item.index,
                        id: item.id.clone(),
                        reason: reason
                            .chars()
                            .take(bridgectl_tx::batch::MAX_REASON_CHARS)
                            .collect(),
                    });
                    None
                }
            };
            if let Some(s) = signed {
                out.items.push(SignedBatchItem {
                    index: item.index,
                    id: item.id.clone(),
                    tx_id: item.tx_id.clone(),
                    signed_tx: s.raw,
                    tx_hash: s.hash,
                    from: s.from,
                    chain_id: s.chain_id,
                    nonce: s.nonce,
                });
            }
        }
        Ok(out)
    }
}

/// What is known of an item's nonce when it is checked.
struct Facts<'a> {
    /// The nonce it must have, when known (the operator's, or the one after the
    /// sender's previous item).
    fixed: Option<u64>,
    /// This machine's journal floor for its sender.
    floor: Option<u64>,
    /// What the signing log knows of its key's nonce: the entries there, and the
    /// watermark that holds it, if one does.
    prior: &'a bridgectl_tx::signing_log::AtNonce,
    /// Whether one of them is this very transaction (signed before a crash).
    in_log: bool,
}

/// A window of a spending limit: key, chain, contract, length.
type WindowKey = (Address, u64, Address, u64);

/// The windows met while a batch is checked.
#[derive(Default)]
struct Windows {
    /// What the signing log holds in each, read once.
    logged: HashMap<WindowKey, Spent>,
    /// Each window the batch counts against, with the log's total and the batch's.
    counted: Vec<(WindowLimit, Spent, U256)>,
}

impl Windows {
    /// What the batch's earlier items count in `tx`'s window under `policy`, as a
    /// limit's refusal adds it ([`super::earlier_items`]).
    fn earlier_items(
        &self,
        policy: &bridgectl_tx::Policy,
        tx: &bridgectl_tx::RawTx,
        now: u64,
    ) -> String {
        let Some(query) = bridgectl_tx::limits::window_query(policy, tx, now) else {
            return String::new();
        };
        let key = window_key(&query);
        self.counted
            .iter()
            .find(|(l, _, _)| window_key(&l.query) == key)
            .map(|(l, _, batch)| super::earlier_items(*batch, l.token.decimals, &l.token.symbol))
            .unwrap_or_default()
    }
}

fn window_key(q: &WindowQuery) -> WindowKey {
    (q.key, q.chain_id, q.contract, q.per)
}
