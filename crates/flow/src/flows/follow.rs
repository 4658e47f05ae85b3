//! Following a flow to its end: a flow is completed only when its outcome is observed,
//! never because the platform or a node accepted its transaction (acceptance says the
//! bytes arrived, not that anything happened).
//!
//! | flow | ended by | observed through |
//! |---|---|---|
//! | swap | its own ST credit | its MT transfer's receipt, then an ST `Transfer` log that is this swap's alone (see `credit.rs`), claimed by it in the journal; never the balance |
//! | redeem, and an action or bundle whose transaction calls `redeem` on the bridge's ST contract | the redemption record | operation 5: by txId when the platform built the transaction, else by hash; an end the platform reports is taken once the chain's node has the transaction mined (a `failed` for a transaction the chain has not mined is a claim, looked at again) |
//! | any other transaction (transfer, action, bundle) | its receipt | the chain's node: mined, and not reverted |
//! | a flow replaced at its nonce (`replace`, `cancel`) | whichever of its transactions is mined | the chain's node (see `replace.rs`), then as above |
//!
//! What cannot be observed (no node for the chain, a swap journaled without its side-chain
//! block) leaves the flow where it is, and [`FlowStatus::unobserved`] says why: a flow is never
//! called completed on a guess. States only move forward: a flow that is completed,
//! failed or cancelled is never changed here.
//!
//! [`Flows::status`] looks once; [`Flows::follow`] waits, the way the call that started
//! the flow would have had it been asked to wait (for a resume, or a flow that waits).

use alloy_primitives::{Address, B256, U256};
use serde::Serialize;
use serde_json::{Value, json};

use super::credit::SwapFacts;
use super::{Flows, Progress, TokenSide};
use crate::Error;
use crate::client::Redemption;
use crate::journal::{Credit, FlowKind, FlowRecord, FlowState, Purpose};
use crate::node::Node;
use crate::rpc::{Receipt, TxPresence};

/// The step a swap journals with the ST balance read before its MT transfer is signed:
/// shown beside the swap, never what decides it (its own credit does, see `credit.rs`).
const ST_BEFORE: &str = "st-before";

/// What ends a flow (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum EndedBy {
    /// The transaction's receipt.
    Receipt,
    /// The platform's redemption record (operation 5).
    Redemption,
    /// The ST credit of a swap.
    StCredit,
}

/// What is known of a flow (or of a transaction hash no flow here holds): the journal's
/// state after this look, and what the node and the platform said.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FlowStatus {
    /// The flow's txId; `None` for a hash the journal does not know.
    pub tx_id: Option<String>,
    /// What the flow is.
    pub kind: Option<FlowKind>,
    /// The journal's state after this look.
    pub state: Option<FlowState>,
    /// The journal's state before it (equal to `state` when nothing changed).
    pub previous_state: Option<FlowState>,
    /// The transaction looked at: the flow's (for a replaced flow, the one mined).
    pub tx_hash: Option<B256>,
    /// Its chain, when known.
    pub chain_id: Option<u64>,
    /// What ends the flow.
    pub ended_by: Option<EndedBy>,
    /// The node's receipt, once mined.
    pub receipt: Option<Receipt>,
    /// The platform's redemption record, for a redeem (or any hash it knows).
    pub redemption: Option<Redemption>,
    /// A swap's ST balance before its transfer (decimal base units); shown, never what
    /// decides (see [`FlowStatus::credit`]).
    pub st_before: Option<String>,
    /// A swap's ST balance now, when read; shown, never what decides.
    pub st_now: Option<String>,
    /// A swap's own ST credit, once claimed: what completed it.
    pub credit: Option<Credit>,
    /// The ST a swap is credited by the peg ratio (decimal base units), when known.
    pub expected_credit: Option<String>,
    /// Where the chain's node has the transaction looked at, when it is not known to be
    /// mined (`pending`, or `unknown`: dropped from the node's pool or never received).
    pub tx_presence: Option<TxPresence>,
    /// What could not be asked, and why (the flow's state is left as it was).
    pub unobserved: Vec<String>,
    /// For a flow replaced at its nonce: which of its transactions was mined, and how the
    /// flow ended by it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended: Option<Ended>,
}

impl FlowStatus {
    /// Nothing known yet of transaction `tx_hash`, if any, and of no flow.
    fn unknown(tx_hash: Option<B256>) -> FlowStatus {
        FlowStatus {
            tx_id: None,
            kind: None,
            state: None,
            previous_state: None,
            tx_hash,
            chain_id: None,
            ended_by: None,
            receipt: None,
            redemption: None,
            st_before: None,
            st_now: None,
            credit: None,
            expected_credit: None,
            tx_presence: None,
            unobserved: Vec::new(),
            ended: None,
        }
    }

    /// Flow `rec` as the journal has it, before anything is asked.
    fn of(rec: &FlowRecord) -> FlowStatus {
        FlowStatus {
            tx_id: Some(rec.tx_id.clone()),
            kind: Some(rec.kind),
            state: Some(rec.state),
            previous_state: Some(rec.state),
            chain_id: rec.chain_id,
            ..FlowStatus::unknown(rec.tx_hash.as_deref().and_then(|h| h.parse().ok()))
        }
    }

    /// Whether the flow has ended (completed, failed or cancelled).
    pub fn is_over(&self) -> bool {
        self.state.is_some_and(is_over)
    }

    /// Whether anything answered for it: the journal, the node or the platform.
    pub fn found(&self) -> bool {
        self.tx_id.is_some() || self.receipt.is_some() || self.redemption.is_some()
    }
}

/// A state nothing here changes again.
fn is_over(state: FlowState) -> bool {
    matches!(
        state,
        FlowState::Completed | FlowState::Failed | FlowState::Cancelled | FlowState::Retired
    )
}

/// What ends one flow, with what is needed to observe it.
pub(super) enum End {
    Receipt,
    Redemption {
        by_tx_id: bool,
    },
    StCredit(SwapFacts),
    /// It cannot be observed here, for this reason.
    Unobservable(String),
}

impl End {
    fn ended_by(&self) -> Option<EndedBy> {
        match self {
            End::Receipt => Some(EndedBy::Receipt),
            End::Redemption { .. } => Some(EndedBy::Redemption),
            End::StCredit(_) => Some(EndedBy::StCredit),
            End::Unobservable(_) => None,
        }
    }
}

/// How a flow with more than one signature at its nonce ended: which one the chain mined.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ended {
    /// `completed`, `failed` or `cancelled`.
    pub state: FlowState,
    /// The transaction that was mined.
    pub mined: B256,
    /// Why that one was signed.
    pub purpose: Purpose,
    /// The block it was mined in.
    pub block: u64,
    /// For a redeem whose call was mined: the redemption record it ended with.
    pub redemption: Option<Redemption>,
}

impl Flows {
    /// What became of the flow `query` names (its txId, a unique txId prefix, or the
    /// hash of any transaction it signed), looked up once: the node's receipt, and for a
    /// redeem the platform's redemption record (for a swap, its own ST credit). A flow whose
    /// end is observed is journaled `completed` or `failed`; one that is over is never
    /// changed. A hash no flow here holds is still asked of both chains' nodes and of
    /// operation 5 ([`FlowStatus::found`] says whether anything knew it).
    pub async fn status(&self, query: &str) -> Result<FlowStatus, Error> {
        // The one resolver: a txId, a unique start of one, or any hash the flow signed
        // (a replaced flow's earlier ones too).
        match (self.journal.find(query), parse_hash(query)) {
            (Ok(rec), _) => self.look(&rec).await,
            (Err(Error::NotInJournal(_)), Some(h)) => self.look_up_hash(h).await,
            (Err(e), _) => Err(e),
        }
    }

    /// Waits until flow `tx_id`'s end is observed (see the module doc) and journals it,
    /// or [`Error::Timeout`] (naming the flow, so that it can be resumed) after the
    /// flows' wait. An end that cannot be observed here is not waited for: the flow is
    /// returned as it is, [`FlowStatus::unobserved`] saying why. A reverted transaction is
    /// [`Error::Reverted`], the flow journaled `failed`.
    pub async fn follow(
        &self,
        tx_id: &str,
        progress: &mut dyn Progress,
    ) -> Result<FlowStatus, Error> {
        let rec = self.journal.get(tx_id)?;
        let mut status = FlowStatus::of(&rec);
        let Some(hash) = status.tx_hash else {
            status
                .unobserved
                .push("nothing was signed: there is no transaction to follow".into());
            return Ok(status);
        };
        if is_over(rec.state) {
            return self.look(&rec).await;
        }
        if self.journal.signatures(tx_id)?.len() > 1 {
            let ended = self.follow_replaced(&rec, progress).await?;
            status.tx_hash = Some(ended.mined);
            status.redemption = ended.redemption.clone();
            status.state = Some(ended.state);
            status.ended = Some(ended);
            return Ok(status);
        }
        let end = self.end_of(&rec)?;
        status.ended_by = end.ended_by();
        match end {
            End::Redemption { by_tx_id } => {
                let r = self
                    .wait_redemption(tx_id, hash, self.wait.interval, by_tx_id, progress)
                    .await?;
                status.redemption = Some(r);
            }
            End::StCredit(facts) => {
                status.st_before = self.journaled_st_before(tx_id)?.map(|b| b.to_string());
                status.expected_credit = facts.expected.map(|e| e.to_string());
                let credit = self
                    .wait_swap_credit(tx_id, hash, &facts, None, progress)
                    .await?;
                status.credit = Some(credit);
            }
            End::Receipt => {
                let chain_id = rec.chain_id.unwrap_or_default();
                let receipt = self.await_mined(tx_id, chain_id, hash, progress).await?;
                if let Some(r) = &receipt {
                    self.complete(tx_id, &serde_json::to_value(r).unwrap_or_default(), true)?;
                }
                status.receipt = receipt;
            }
            End::Unobservable(why) => status.unobserved.push(why),
        }
        status.state = Some(self.journal.get(tx_id)?.state);
        Ok(status)
    }

    /// Waits until `hash` (flow `tx_id`'s transaction on `chain_id`) is mined, journals
    /// that, and returns its receipt without ending the flow; a revert ends it `failed`
    /// ([`Error::Reverted`]). `None` when the chain's node is not known: nothing here can
    /// see the chain.
    pub(crate) async fn await_mined(
        &self,
        tx_id: &str,
        chain_id: u64,
        hash: B256,
        progress: &mut dyn Progress,
    ) -> Result<Option<Receipt>, Error> {
        let Some(node) = self.node_of_chain(chain_id) else {
            return Ok(None);
        };
        progress.step("waiting for the receipt");
        let receipt = node?
            .wait_receipt(
                hash,
                self.wait.interval,
                self.wait.timeout,
                &self.timing,
                progress,
            )
            .await
            .map_err(|e| match e {
                Error::Timeout {
                    what,
                    seconds,
                    not_mined,
                    tx_hash,
                    ..
                } => Error::Timeout {
                    what,
                    seconds,
                    flow: Some(tx_id.to_owned()),
                    not_mined,
                    tx_hash,
                },
                other => other,
            })?;
        self.record_mined(tx_id, &receipt)?;
        Ok(Some(receipt))
    }

    /// Journals that flow `tx_id`'s transaction was mined as `receipt` says; a revert
    /// ends the flow `failed` ([`Error::Reverted`]).
    pub(super) fn record_mined(&self, tx_id: &str, receipt: &Receipt) -> Result<(), Error> {
        let hash = receipt.transaction_hash;
        self.journal.note(
            tx_id,
            "mined",
            &json!({"txHash": hash.to_string(), "block": receipt.block_number,
                    "success": receipt.success}),
        )?;
        if receipt.success {
            return Ok(());
        }
        self.journal.observe(
            tx_id,
            Some(FlowState::Failed),
            "reverted",
            &serde_json::to_value(receipt).unwrap_or_default(),
        )?;
        Err(Error::Reverted {
            tx_hash: hash,
            block: receipt.block_number,
        })
    }

    /// One look at flow `rec` (see [`Flows::status`]).
    async fn look(&self, rec: &FlowRecord) -> Result<FlowStatus, Error> {
        let mut status = FlowStatus::of(rec);
        let Some(mut hash) = status.tx_hash else {
            status
                .unobserved
                .push("nothing was signed: there is no transaction to look for".into());
            return Ok(status);
        };
        let tx_id = rec.tx_id.as_str();
        if rec.state == FlowState::Retired {
            status.unobserved.push(
                "retired: its chain was reset after it was journaled (`journal reset-chain`); \
                 its transaction belongs to a chain that no longer exists"
                    .into(),
            );
            return Ok(status);
        }
        // A flow replaced at its nonce is decided by whichever of its transactions was
        // mined; the platform knows a replacement by its hash only.
        let mut purpose = Purpose::Original;
        let replaced = self.journal.signatures(tx_id)?.len() > 1;
        let node = match rec.chain_id.and_then(|c| self.node_of_chain(c)) {
            Some(node) => Some(node?),
            None => {
                status.unobserved.push(format!(
                    "the receipt: no node is configured for chain {}",
                    rec.chain_id
                        .map_or_else(|| "(unknown)".into(), |c| c.to_string())
                ));
                None
            }
        };
        let receipt = match (&node, replaced) {
            (Some(_), true) => self.mined_signature(rec).await?.map(|(sig, receipt)| {
                purpose = sig.purpose;
                hash = receipt.transaction_hash;
                receipt
            }),
            (Some(node), false) => node.receipt(hash).await?,
            (None, _) => None,
        };
        status.tx_hash = Some(hash);
        status.receipt = receipt.clone();
        if let (Some(node), None) = (&node, &receipt) {
            status.tx_presence = Some(self.presence_of(&**node, rec, hash).await?);
        }
        let end = if purpose == Purpose::Cancel {
            End::Receipt
        } else {
            self.end_of(rec)?
        };
        status.ended_by = end.ended_by();
        // The end observed: (the state it moves the flow to, its step, the result).
        let ended: Option<(FlowState, &str, Value)> = match (&receipt, end) {
            (Some(r), _) if !r.success => Some((
                FlowState::Failed,
                "reverted",
                serde_json::to_value(r).unwrap_or_default(),
            )),
            (Some(r), _) if purpose == Purpose::Cancel => Some((
                FlowState::Cancelled,
                "cancelled",
                json!({"txHash": hash.to_string(), "block": r.block_number}),
            )),
            (Some(r), End::Receipt) => Some((
                FlowState::Completed,
                "completed",
                serde_json::to_value(r).unwrap_or_default(),
            )),
            (_, End::Redemption { by_tx_id }) => {
                let asked = if by_tx_id && !replaced {
                    tx_id.to_owned()
                } else {
                    hash.to_string()
                };
                let found = self.redemption_of(&asked, hash).await?;
                status.redemption.clone_from(&found);
                match found.filter(Redemption::is_terminal) {
                    Some(r) => match redemption_end(&r, receipt.as_ref(), node.is_some()) {
                        Ok(end) => Some(end),
                        Err(why) => {
                            status.unobserved.push(why);
                            None
                        }
                    },
                    None => None,
                }
            }
            (_, End::StCredit(facts)) => {
                status.st_before = self.journaled_st_before(tx_id)?.map(|b| b.to_string());
                status.expected_credit = facts.expected.map(|e| e.to_string());
                if let Some(owner) = rec.from.as_deref().and_then(|f| f.parse().ok()) {
                    status.st_now =
                        Some(self.token_balance(TokenSide::St, owner).await?.to_string());
                }
                if let (Some(r), Some(node)) = (&receipt, &node) {
                    let mined_at = mined_at(&**node, r).await?;
                    let result = json!({"txHash": hash.to_string(), "block": r.block_number});
                    status.credit = self
                        .claim_own_credit(tx_id, &facts, mined_at, &result)
                        .await?;
                    if status.credit.is_some() {
                        status.state = Some(FlowState::Completed);
                    }
                }
                // A swap that was over before this look keeps the credit it was
                // completed by; one completed now was journaled with its claim.
                None
            }
            (_, End::Unobservable(why)) => {
                status.unobserved.push(why);
                None
            }
            (None, End::Receipt) => None,
        };
        if let Some((state, step, result)) = ended
            && !is_over(rec.state)
        {
            self.journal.observe(tx_id, Some(state), step, &result)?;
            status.state = Some(state);
        }
        Ok(status)
    }

    /// Where `node` has flow `rec`'s transaction `hash` (not mined). A transaction the
    /// node no longer knows is journaled once as `dropped`: it will not be mined unless
    /// it is sent again (`resume` does) or replaced.
    async fn presence_of(
        &self,
        node: &dyn Node,
        rec: &FlowRecord,
        hash: B256,
    ) -> Result<TxPresence, Error> {
        let presence = node.presence(hash).await?;
        if presence == TxPresence::Unknown && !is_over(rec.state) {
            let noted = self
                .journal
                .steps(&rec.tx_id)?
                .iter()
                .any(|s| s.step == "dropped" && s.detail["txHash"] == hash.to_string());
            if !noted {
                self.journal
                    .note(&rec.tx_id, "dropped", &json!({"txHash": hash.to_string()}))?;
            }
        }
        Ok(presence)
    }

    /// A hash no flow here holds: asked of both chains' nodes and of operation 5.
    async fn look_up_hash(&self, hash: B256) -> Result<FlowStatus, Error> {
        let mut status = FlowStatus::unknown(Some(hash));
        for which in [TokenSide::Mt, TokenSide::St] {
            let side = self.side(which)?;
            let Some(node) = self.node_of_chain(side.chain_id) else {
                status.unobserved.push(format!(
                    "the receipt on chain {}: no node is configured for it",
                    side.chain_id
                ));
                continue;
            };
            if let Some(r) = node?.receipt(hash).await? {
                status.chain_id = Some(side.chain_id);
                status.receipt = Some(r);
                break;
            }
        }
        status.redemption = self.redemption_of(&hash.to_string(), hash).await?;
        Ok(status)
    }

    /// Operation 5 for `asked` (a txId or a hash), then by `hash` when the platform does
    /// not know that txId; `None` when it knows neither.
    async fn redemption_of(&self, asked: &str, hash: B256) -> Result<Option<Redemption>, Error> {
        let side_env = &self.bridge()?.side.environment_id;
        match self.client.redemption(asked, side_env).await {
            Ok(r) => Ok(Some(r)),
            Err(Error::Platform { error, .. }) if error.status == 404 => {
                if asked == hash.to_string() {
                    return Ok(None);
                }
                match self.client.redemption(&hash.to_string(), side_env).await {
                    Ok(r) => Ok(Some(r)),
                    Err(Error::Platform { error, .. }) if error.status == 404 => Ok(None),
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        }
    }

    /// What ends flow `rec` (see the module doc).
    pub(super) fn end_of(&self, rec: &FlowRecord) -> Result<End, Error> {
        Ok(match rec.kind {
            FlowKind::Swap => {
                let owner = rec.from.as_deref().and_then(|f| f.parse::<Address>().ok());
                let bridge = self.bridge()?;
                let nodes = self.node_of_chain(bridge.main.chain_id).is_some()
                    && self.node_of_chain(bridge.side.chain_id).is_some();
                let facts = match owner {
                    Some(owner) => self.swap_facts(&rec.tx_id, owner, &rec.intent)?,
                    None => None,
                };
                match facts {
                    Some(facts) if nodes => End::StCredit(facts),
                    Some(_) => End::Unobservable(
                        "the ST credit: a swap is ended by its MT transfer's receipt and its \
                         own ST credit, read from both chains' nodes (main and side rpc_url)"
                            .into(),
                    ),
                    None => End::Unobservable(
                        "the ST credit: the side chain's block was not journaled when the swap \
                         began (a swap begun by an older bridgectl, or without the side \
                         chain's node), so its own credit cannot be told apart from others; \
                         check the side chain's ST transfers to its sender"
                            .into(),
                    ),
                }
            }
            FlowKind::Redeem => End::Redemption { by_tx_id: true },
            // The platform built the transaction of an action for this txId; a bundle
            // submitted under a txId of ours is known to it by hash only.
            FlowKind::Action | FlowKind::Submit if self.calls_redeem(rec) => End::Redemption {
                by_tx_id: rec.kind == FlowKind::Action,
            },
            _ => match rec.chain_id.map(|c| self.node_of_chain(c)) {
                Some(Some(_)) => End::Receipt,
                _ => End::Unobservable(format!(
                    "the receipt: no node is configured for chain {}",
                    rec.chain_id
                        .map_or_else(|| "(unknown)".into(), |c| c.to_string())
                )),
            },
        })
    }

    /// Whether `rec`'s signed transaction calls `redeem` on the bridge's ST contract: a
    /// redemption, whatever command sent it.
    fn calls_redeem(&self, rec: &FlowRecord) -> bool {
        let (Some(bridge), Some(signed)) = (&self.bridge, &rec.signed_tx) else {
            return false;
        };
        let Some(redeem) = bridgectl_tx::calldata::function_by_name("redeem") else {
            return false;
        };
        hex::decode(signed.trim_start_matches("0x"))
            .ok()
            .and_then(|raw| bridgectl_tx::decode::decode_signed(&raw).ok())
            .is_some_and(|tx| {
                tx.chain_id == Some(bridge.side.chain_id)
                    && tx.to == Some(bridge.side.token)
                    && tx.input.get(..4) == Some(&redeem.selector[..])
            })
    }

    /// Journals `before`, swap `tx_id`'s ST balance read before its transfer is signed
    /// (shown beside the swap; its credit decides).
    pub(crate) fn journal_st_before(&self, tx_id: &str, before: U256) -> Result<(), Error> {
        self.journal
            .note(tx_id, ST_BEFORE, &json!({"stBefore": before.to_string()}))
    }

    /// The ST balance swap `tx_id` journaled before its transfer, if it did.
    fn journaled_st_before(&self, tx_id: &str) -> Result<Option<U256>, Error> {
        Ok(self
            .journal
            .steps(tx_id)?
            .iter()
            .rev()
            .find(|s| s.step == ST_BEFORE)
            .and_then(|s| s.detail.get("stBefore")?.as_str()?.parse().ok()))
    }
}

/// The end the platform reports for a redemption, `r` (terminal), as the journal takes
/// it: once the chain's node has the transaction mined (`receipt`). A `failed` for a
/// transaction the chain has not mined is the platform's claim, not an end: the flow
/// stays open and is looked at again (`Err` says why). Without a node for the chain a
/// reported success is taken as it is; a reported failure is not.
pub(super) fn redemption_end(
    r: &Redemption,
    receipt: Option<&Receipt>,
    node_known: bool,
) -> Result<(FlowState, &'static str, Value), String> {
    let (state, step) = if r.is_success() {
        (FlowState::Completed, "completed")
    } else {
        (FlowState::Failed, "failed")
    };
    match receipt {
        Some(_) => Ok((state, step, r.raw.clone())),
        None if r.is_success() && !node_known => Ok((state, step, r.raw.clone())),
        None if node_known => Err(format!(
            "the redemption: the platform says {}, but the chain's node has not mined its \
             transaction: a claim the chain does not show yet, looked at again",
            bridgectl_tx::text::printable(&r.status)
        )),
        None => Err(format!(
            "the redemption: the platform says {}, and without the chain's node (its \
             rpc_url) nothing here can see whether its transaction was mined",
            bridgectl_tx::text::printable(&r.status)
        )),
    }
}

/// The timestamp of the block receipt `r` is in (its transaction was mined no later).
pub(super) async fn mined_at(node: &dyn Node, r: &Receipt) -> Result<u64, Error> {
    node.block_timestamp(r.block_number)
        .await?
        .ok_or_else(|| Error::UnexpectedShape {
            what: format!(
                "block {} of the receipt of {}",
                r.block_number, r.transaction_hash
            ),
            expected: "the block the node has the receipt in".into(),
            data: Value::Null,
        })
}

/// `text` as a transaction hash (`0x` and 64 hex digits), else `None` (a txId).
fn parse_hash(text: &str) -> Option<B256> {
    (text.len() == 66 && text.starts_with("0x"))
        .then(|| text.parse().ok())
        .flatten()
}
