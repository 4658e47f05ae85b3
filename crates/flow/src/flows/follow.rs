//! Following a flow to its end: a flow is completed only when its outcome is observed
//! and final on its chain, never because the platform or a node accepted its
//! transaction (acceptance says the bytes arrived, not that anything happened).
//!
//! | flow | ended by | observed through | facts that must be final |
//! |---|---|---|---|
//! | swap | its own ST credit | its MT transfer's receipt, then an ST `Transfer` log that is this swap's alone (see `credit.rs`), claimed by it once per key; never the balance | the transfer's receipt (main), the credit log (side) |
//! | redeem, and an action or bundle whose transaction calls `redeem` on the bridge's ST contract | the redemption record | its transaction's receipt, then operation 5: by txId when the platform built the transaction, else by hash (the platform's word is taken only for a transaction the chain mined) | the receipt (side); the MT payout the record names (main), when it names one and the main chain's node is known |
//! | any other transaction (transfer, action, bundle) | its receipt | the chain's node: mined, and not reverted | the receipt |
//! | a flow replaced at its nonce (`replace`, `cancel`) | whichever of its transactions is mined | the chain's node, then as above (`cancelled` by its cancel) | as above |
//!
//! Every end needs the chain's node: without one nothing here can see the chain, the
//! flow stays where it is, and [`FlowStatus::unobserved`] says why (never completed on a
//! platform's word alone).
//!
//! An end observed moves the flow to [`FlowState::Confirming`] with its facts journaled
//! (block number and hash each, `journal/facts.rs`); it takes its end once every fact is
//! final on its chain (`crate::finality`). Until then each look checks the facts again
//! by block hash. A fact the chain took back is withdrawn: the flow goes back to
//! `submitted`, the reorganisation is journaled, a withdrawn credit's claim is released,
//! and a transaction the chain lost is sent again with its journaled bytes (by
//! [`Flows::follow`], as `resume` would; [`Flows::status`] never sends, it says so). A
//! flow that is over is not polled, but [`Flows::status`] of one still checks its facts
//! (one call each): a reorganisation deeper than finality reopens it.
//!
//! [`Flows::status`] looks once; [`Flows::follow`] waits, the way the call that started
//! the flow would have had it been asked to wait (for a resume, or a flow that waits).

use std::collections::HashMap;
use std::time::Duration;

use alloy_primitives::{Address, B256, U256};
use bridgectl_tx::CreditClaim;
use serde::Serialize;
use serde_json::{Value, json};

use super::credit::SwapFacts;
use super::token_side::TokenSide;
use super::{Flows, Progress, WaitClock};
use crate::Error;
use crate::client::Redemption;
use crate::finality::{ChainTip, Finality, Until, Verdict, chain_tip, verdict};
use crate::journal::{
    Credit, Fact, FactKind, FlowKind, FlowRecord, FlowState, Purpose, Reorg, SignatureRecord,
};
use crate::node::{BlockId, Node};
use crate::rpc::{Receipt, TxPresence};

/// The step a swap journals with the ST balance read before its MT transfer is signed:
/// shown beside the swap, never what decides it (its own credit does, see `credit.rs`).
const ST_BEFORE: &str = "st-before";

/// How long a transaction may stay unmined before a wait says so.
pub const NOT_MINED_AFTER: Duration = Duration::from_secs(10);

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

/// A fact a flow rests on, with what the last look said of it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FactView {
    /// The fact as journaled.
    #[serde(flatten)]
    pub fact: Fact,
    /// Its confirmations at the look (its own block counts), when looked at.
    pub confirmations: Option<u64>,
    /// The confirmations that make it final, when known.
    pub needed: Option<u64>,
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
    /// For a flow that is `confirming`: the state it takes once its facts are final.
    pub ending: Option<FlowState>,
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
    /// The MT payout the redemption record names, when it names one.
    pub payout: Option<B256>,
    /// A swap's ST balance before its transfer (decimal base units); shown, never what
    /// decides (see [`FlowStatus::credit`]).
    pub st_before: Option<String>,
    /// A swap's ST balance now, when read; shown, never what decides.
    pub st_now: Option<String>,
    /// A swap's own ST credit, once claimed: what completed it.
    pub credit: Option<Credit>,
    /// The ST a swap is credited by the peg ratio (decimal base units), when known.
    pub expected_credit: Option<String>,
    /// The chain facts the flow's end rests on, each with its block (number and hash)
    /// and its depth at this look.
    pub facts: Vec<FactView>,
    /// The reorganisations this look found: facts the chain took back, withdrawn.
    pub reorgs: Vec<Reorg>,
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
            ending: None,
            tx_hash,
            chain_id: None,
            ended_by: None,
            receipt: None,
            redemption: None,
            payout: None,
            st_before: None,
            st_now: None,
            credit: None,
            expected_credit: None,
            facts: Vec::new(),
            reorgs: Vec::new(),
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
            ending: rec.ending,
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

    /// What an earlier look of the same round observed, where this one knows nothing of
    /// it (this one read the journal after that one journaled its end).
    fn absorb(&mut self, earlier: FlowStatus) {
        self.receipt = self.receipt.take().or(earlier.receipt);
        self.redemption = self.redemption.take().or(earlier.redemption);
        self.payout = self.payout.or(earlier.payout);
        self.st_before = self.st_before.take().or(earlier.st_before);
        self.st_now = self.st_now.take().or(earlier.st_now);
        self.credit = self.credit.take().or(earlier.credit);
        self.expected_credit = self.expected_credit.take().or(earlier.expected_credit);
        self.ended = self.ended.take().or(earlier.ended);
        self.tx_presence = self.tx_presence.or(earlier.tx_presence);
        self.previous_state = earlier.previous_state;
        let mut reorgs = earlier.reorgs;
        reorgs.append(&mut self.reorgs);
        self.reorgs = reorgs;
    }

    /// The depth of the least confirmed fact not final yet, as "k of n confirmations".
    pub fn confirmations(&self) -> Option<String> {
        self.facts
            .iter()
            .filter(|f| !f.fact.is_final)
            .filter_map(|f| {
                let k = f.confirmations?;
                Some((
                    k,
                    Verdict::Confirming {
                        confirmations: k,
                        needed: f.needed,
                    },
                ))
            })
            .min_by_key(|(k, _)| *k)
            .map(|(_, v)| v.describe())
    }
}

/// A state nothing here changes again (but a reorganisation deeper than finality).
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
    /// `completed`, `failed` or `cancelled` (for a flow still confirming, the state it
    /// takes once final).
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

/// Whether a look may send (following) or only looks (`status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Look,
    Follow,
}

/// What one round of a look found.
enum Round {
    /// Nothing more to wait for here: over, final, or not observable.
    Done(FlowStatus),
    /// Still open: looked at again after the flows' interval.
    Waiting(FlowStatus),
}

/// What the facts of a flow looked like: each with its verdict, and those taken back.
struct FactsLook {
    views: Vec<FactView>,
    withdrawn: Vec<Fact>,
    all_final: bool,
    /// The flow's own receipt, when this look read it.
    receipt: Option<Receipt>,
}

/// One flow followed (or looked at once): what the rounds remember between them.
struct Follower<'f> {
    flows: &'f Flows,
    tx_id: String,
    mode: Mode,
    /// The wait's clock, saying what is waited for now (progress).
    clock: WaitClock,
    /// What held the wait up, as a wait that runs out names it.
    awaited: String,
    /// The redemption status last reported.
    redemption_status: String,
    /// The last transient error of a platform poll.
    last_error: Option<String>,
    /// Where the node had the transaction, the last time it was asked (not mined).
    presence: Option<TxPresence>,
    /// When that was (time into the wait).
    presence_asked: Option<Duration>,
    /// The presence last reported as "not mined".
    presence_reported: Option<TxPresence>,
    /// The depth last reported.
    depth_reported: Option<String>,
    /// The mined transaction last reported.
    mined_reported: Option<B256>,
    /// The payout last reported as not mined yet.
    payout_reported: Option<B256>,
    /// Block timestamps read for the credit search.
    timestamps: HashMap<u64, u64>,
}

impl Flows {
    /// What became of the flow `query` names (its txId, a unique txId prefix, or the
    /// hash of any transaction it signed), looked up once: the node's receipt, and for a
    /// redeem the platform's redemption record (for a swap, its own ST credit), and the
    /// depth of every fact its end rests on. An end observed is journaled (`confirming`
    /// until final, then `completed` or `failed`); a fact the chain took back is
    /// withdrawn and the flow reopened ([`FlowStatus::reorgs`]), nothing is sent. A hash
    /// no flow here holds is still asked of both chains' nodes and of operation 5
    /// ([`FlowStatus::found`] says whether anything knew it).
    pub async fn status(&self, query: &str) -> Result<FlowStatus, Error> {
        // The one resolver: a txId, a unique start of one, or any hash the flow signed
        // (a replaced flow's earlier ones too).
        match (self.journal.find(query), parse_hash(query)) {
            (Ok(rec), _) => self.look(&rec).await,
            (Err(Error::NotInJournal(_)), Some(h)) => self.look_up_hash(h).await,
            (Err(e), _) => Err(e),
        }
    }

    /// Waits until flow `tx_id`'s end is observed and final on its chain (see the module
    /// doc; with [`Until::Included`], observed), journals it, and returns it; or
    /// [`Error::Timeout`] (naming the flow, so that it can be resumed) after the flows'
    /// wait. A transaction the chain takes back meanwhile is sent again with its
    /// journaled bytes. An end that cannot be observed here is not waited for: the flow is
    /// returned as it is, [`FlowStatus::unobserved`] saying why. A reverted transaction
    /// is [`Error::Reverted`] (the flow journaled `failed` once final).
    pub async fn follow(
        &self,
        tx_id: &str,
        progress: &mut dyn Progress,
    ) -> Result<FlowStatus, Error> {
        self.follow_every(tx_id, self.wait.interval, progress).await
    }

    /// [`Flows::follow`], looking every `interval` (a batch polls its many items at a pace
    /// of its own).
    pub(crate) async fn follow_every(
        &self,
        tx_id: &str,
        interval: Duration,
        progress: &mut dyn Progress,
    ) -> Result<FlowStatus, Error> {
        let mut follower = Follower::new(self, tx_id, Mode::Follow);
        let mut last: Option<FlowStatus> = None;
        loop {
            // The whole wait is bounded, one slow round (a node or a platform slow to
            // answer) included: a round cut short is a look that did not finish, and the
            // next one (a resume) takes it up from the journal.
            let remaining = self.wait.timeout.saturating_sub(follower.clock.elapsed());
            let round = match tokio::time::timeout(remaining, follower.round(progress)).await {
                Ok(round) => round?,
                Err(_) => {
                    let status = match last.take() {
                        Some(s) => s,
                        None => FlowStatus::of(&self.journal.get(tx_id)?),
                    };
                    return Err(follower.timed_out(&status).await);
                }
            };
            let status = match round {
                Round::Done(status) => status,
                Round::Waiting(status) => {
                    if follower.clock.elapsed() >= self.wait.timeout {
                        return Err(follower.timed_out(&status).await);
                    }
                    last = Some(status);
                    follower
                        .clock
                        .during(self.timing.sleep(interval), progress)
                        .await;
                    continue;
                }
            };
            let end = match status.state {
                Some(FlowState::Confirming) => status.ending,
                state => state,
            };
            if let (Some(FlowState::Failed), Some(r)) = (end, &status.receipt)
                && !r.success
            {
                return Err(Error::Reverted {
                    tx_hash: r.transaction_hash,
                    block: r.block_number,
                });
            }
            return Ok(status);
        }
    }

    /// One look at flow `rec` (see [`Flows::status`]).
    async fn look(&self, rec: &FlowRecord) -> Result<FlowStatus, Error> {
        let mut follower = Follower::new(self, &rec.tx_id, Mode::Look);
        match follower.round(&mut super::Quiet).await? {
            Round::Done(status) | Round::Waiting(status) => Ok(status),
        }
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
    pub(super) async fn redemption_of(
        &self,
        asked: &str,
        hash: B256,
    ) -> Result<Option<Redemption>, Error> {
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
                let nodes =
                    self.has_node(bridge.main.chain_id) && self.has_node(bridge.side.chain_id);
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
            _ => End::Receipt,
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

    /// What final means on `chain_id` (the bridge's setting for it; `None`: the default).
    pub(crate) fn finality_of(&self, chain_id: u64) -> Option<Finality> {
        self.side_of_chain(chain_id).and_then(|s| s.finality)
    }

    /// The first of flow `rec`'s signatures that `node` has a receipt for (a flow
    /// replaced at its nonce has several; any of them may be the one mined).
    pub(crate) async fn mined_signature_on(
        &self,
        node: &dyn Node,
        rec: &FlowRecord,
    ) -> Result<Option<(SignatureRecord, Receipt)>, Error> {
        for sig in self.journal.signatures(&rec.tx_id)? {
            let Ok(hash) = sig.tx_hash.parse::<B256>() else {
                continue;
            };
            if let Some(receipt) = node.receipt(hash).await? {
                return Ok(Some((sig, receipt)));
            }
        }
        Ok(None)
    }

    /// Looks at `facts` on their chains: each fact not yet final (and with `all`, the
    /// final ones too, by their block alone) against the chain's block at its number,
    /// and its depth against the chain's tip. One look at each chain's tip, one call per
    /// fact.
    async fn look_at_facts(&self, facts: &[Fact], all: bool) -> Result<FactsLook, Error> {
        let mut tips: HashMap<u64, ChainTip> = HashMap::new();
        let mut looked = FactsLook {
            views: Vec::new(),
            withdrawn: Vec::new(),
            all_final: true,
            receipt: None,
        };
        for fact in facts {
            if fact.is_final && !all {
                looked.views.push(FactView {
                    fact: fact.clone(),
                    confirmations: None,
                    needed: None,
                });
                continue;
            }
            let Some(node) = self.node_of_chain(fact.chain_id) else {
                // Its chain's node is gone from the profile: nothing to look at it with.
                looked.all_final &= fact.is_final;
                looked.views.push(FactView {
                    fact: fact.clone(),
                    confirmations: None,
                    needed: None,
                });
                continue;
            };
            let node = node?;
            let (canonical, receipt) = canonical_hash(&*node, fact).await?;
            if fact.kind == FactKind::Receipt {
                looked.receipt = receipt;
            }
            if fact.is_final {
                // Final already: only whether its block is still the chain's.
                if canonical != Some(fact.block_hash) {
                    looked.withdrawn.push(fact.clone());
                } else {
                    looked.views.push(FactView {
                        fact: fact.clone(),
                        confirmations: None,
                        needed: None,
                    });
                }
                continue;
            }
            let setting = self.finality_of(fact.chain_id);
            let tip = match tips.get(&fact.chain_id) {
                Some(tip) => *tip,
                None => {
                    let tip = chain_tip(&*node, setting).await?;
                    tips.insert(fact.chain_id, tip);
                    tip
                }
            };
            match verdict(fact.block, fact.block_hash, canonical, tip, setting) {
                Verdict::Withdrawn => looked.withdrawn.push(fact.clone()),
                Verdict::Final { confirmations } => looked.views.push(FactView {
                    fact: Fact {
                        is_final: true,
                        ..fact.clone()
                    },
                    confirmations: Some(confirmations),
                    needed: None,
                }),
                Verdict::Confirming {
                    confirmations,
                    needed,
                } => {
                    looked.all_final = false;
                    looked.views.push(FactView {
                        fact: fact.clone(),
                        confirmations: Some(confirmations),
                        needed,
                    });
                }
            }
        }
        looked.all_final &= looked.withdrawn.is_empty();
        Ok(looked)
    }

    /// Withdraws `fact` of flow `rec` (the chain took it back): journaled, the flow back
    /// to `submitted`, a credit's claim released here and in the signing log.
    async fn withdraw_fact(&self, rec: &FlowRecord, fact: &Fact) -> Result<Reorg, Error> {
        let reorg = self.journal.withdraw(&rec.tx_id, fact)?;
        if fact.kind == FactKind::Credit
            && let (Some(key), Some(log_index), Some(node)) = (
                rec.from.as_deref().and_then(|f| f.parse::<Address>().ok()),
                fact.log_index,
                self.node_of_chain(fact.chain_id),
            )
        {
            let genesis = self.verify_chain(&*node?, fact.chain_id).await?;
            self.signing_log.release_credit(&CreditClaim {
                key,
                chain_id: fact.chain_id,
                genesis,
                tx_hash: fact.tx_hash,
                log_index,
                claimant: rec.tx_id.clone(),
            })?;
        }
        Ok(reorg)
    }
}

/// The hash the chain now has for the block `fact` is in, as far as the fact goes: for a
/// transaction's receipt, the block its receipt names (`None` when it is no longer
/// mined, or mined in another block), with the receipt; for a log, the chain's block at
/// its number.
async fn canonical_hash(
    node: &dyn Node,
    fact: &Fact,
) -> Result<(Option<B256>, Option<Receipt>), Error> {
    Ok(match fact.kind {
        FactKind::Receipt | FactKind::Payout => {
            let receipt = node.receipt(fact.tx_hash).await?;
            let hash = receipt
                .as_ref()
                .filter(|r| r.block_number == fact.block)
                .map(|r| r.block_hash);
            (hash, receipt)
        }
        FactKind::Credit => (
            node.block(BlockId::Number(fact.block))
                .await?
                .map(|b| b.hash),
            None,
        ),
    })
}

/// The fact of `receipt` of kind `kind` on `chain_id`, not yet final.
pub(super) fn receipt_fact(kind: FactKind, chain_id: u64, receipt: &Receipt) -> Fact {
    Fact {
        kind,
        chain_id,
        tx_hash: receipt.transaction_hash,
        log_index: None,
        block: receipt.block_number,
        block_hash: receipt.block_hash,
        is_final: false,
    }
}

/// The MT payout a redemption record names: a transaction hash under one of the names a
/// platform writes it by (`mainTxHash`, `payoutTxHash`, `mtTxHash`, `withdrawTxHash`).
pub(crate) fn payout_of(record: &Value) -> Option<B256> {
    ["mainTxHash", "payoutTxHash", "mtTxHash", "withdrawTxHash"]
        .iter()
        .find_map(|k| record.get(*k)?.as_str()?.parse().ok())
}

impl<'f> Follower<'f> {
    fn new(flows: &'f Flows, tx_id: &str, mode: Mode) -> Follower<'f> {
        Follower {
            flows,
            tx_id: tx_id.to_owned(),
            mode,
            clock: WaitClock::new(format!("flow {tx_id}"), flows.wait.timeout),
            awaited: format!("flow {tx_id}"),
            redemption_status: String::new(),
            last_error: None,
            presence: None,
            presence_asked: None,
            presence_reported: None,
            depth_reported: None,
            mined_reported: None,
            payout_reported: None,
            timestamps: HashMap::new(),
        }
    }

    /// One look at the flow: its facts checked (withdrawn when taken back, the flow
    /// finished when final), else its end looked for once.
    async fn round(&mut self, progress: &mut dyn Progress) -> Result<Round, Error> {
        let flows = self.flows;
        // An end observed in this round is checked in the same round (a look long after
        // it finds it final at once): at most twice round the loop.
        let mut carried: Option<FlowStatus> = None;
        for _ in 0..3 {
            let rec = flows.journal.get(&self.tx_id)?;
            let mut status = FlowStatus::of(&rec);
            if let Some(earlier) = carried.take() {
                status.absorb(earlier);
            }
            if status.tx_hash.is_none() {
                status
                    .unobserved
                    .push("nothing was signed: there is no transaction to follow".into());
                return Ok(Round::Done(status));
            }
            if rec.state == FlowState::Retired {
                status.unobserved.push(
                    "retired: its chain was reset after it was journaled (`journal \
                     reset-chain`); its transaction belongs to a chain that no longer exists"
                        .into(),
                );
                return Ok(Round::Done(status));
            }
            let chain_id = rec.chain_id.unwrap_or_default();
            let Some(node) = flows.node_of_chain(chain_id) else {
                status.unobserved.push(format!(
                    "its end: every end is observed on the chain, and no node is configured \
                     for chain {} (its rpc_url); the platform's word alone ends nothing",
                    rec.chain_id
                        .map_or_else(|| "(unknown)".into(), |c| c.to_string())
                ));
                if let End::Redemption { by_tx_id } = flows.end_of(&rec)? {
                    self.platform_claim(&rec, by_tx_id, &mut status, progress)
                        .await?;
                }
                return Ok(Round::Done(status));
            };
            let node = node?;
            flows.verify_chain(&*node, chain_id).await?;
            match self.check_facts(&rec, &mut status, progress).await? {
                Some(round) => return Ok(round),
                None if is_over(flows.journal.get(&self.tx_id)?.state) => {
                    return Ok(Round::Done(status));
                }
                None => {}
            }
            if !self.observe_end(&*node, &mut status, progress).await? {
                return Ok(match self.mode {
                    Mode::Look => Round::Done(status),
                    Mode::Follow if status.unobserved.is_empty() => Round::Waiting(status),
                    Mode::Follow => Round::Done(status),
                });
            }
            carried = Some(status);
        }
        Err(Error::JournalCorrupt {
            tx_id: self.tx_id.clone(),
            reason: "its end was journaled and withdrawn in one look, three times".into(),
        })
    }

    /// The journaled facts of the flow looked at. `Some` when the round ends here (the
    /// flow is confirming, final or over); `None` when its end is to be looked for (none
    /// journaled, or one was just withdrawn).
    async fn check_facts(
        &mut self,
        rec: &FlowRecord,
        status: &mut FlowStatus,
        progress: &mut dyn Progress,
    ) -> Result<Option<Round>, Error> {
        let flows = self.flows;
        let facts = flows.journal.facts(&rec.tx_id)?;
        if facts.is_empty() {
            return Ok(None);
        }
        let over = is_over(rec.state);
        let looked = flows
            .look_at_facts(&facts, self.mode == Mode::Look || over)
            .await?;
        for view in &looked.views {
            if view.fact.is_final && !facts.iter().any(|f| f == &view.fact) {
                flows.journal.mark_final(&rec.tx_id, view.fact.kind)?;
            }
        }
        status.facts = looked.views;
        status.receipt = looked.receipt.or(status.receipt.take());
        status.credit = flows.journal.credit_of(&rec.tx_id)?;
        if !looked.withdrawn.is_empty() {
            let mut lost_own = false;
            for fact in &looked.withdrawn {
                let reorg = flows.withdraw_fact(rec, fact).await?;
                lost_own |= fact.kind == FactKind::Receipt;
                progress.step(&reorg_text(&reorg));
                status.reorgs.push(reorg);
            }
            status.state = Some(FlowState::Submitted);
            status.ending = None;
            status.credit = flows.journal.credit_of(&rec.tx_id)?;
            status.facts.retain(|v| !looked.withdrawn.contains(&v.fact));
            if lost_own {
                match self.mode {
                    Mode::Follow => {
                        progress.step("sending its signed bytes again (the same transaction)");
                        flows.resend_signed(&rec.tx_id, progress).await?;
                    }
                    Mode::Look => status.unobserved.push(format!(
                        "its transaction was taken back by a reorganisation of chain {}: \
                         resuming flow {} sends the same signed bytes again",
                        rec.chain_id.unwrap_or_default(),
                        rec.tx_id
                    )),
                }
            }
            return Ok(match self.mode {
                Mode::Look => Some(Round::Done(status.clone())),
                Mode::Follow => None,
            });
        }
        if rec.state != FlowState::Confirming {
            // Over, its facts still the chain's (or an end observed and not yet
            // concluded: looked for again).
            if !over {
                return Ok(None);
            }
            self.fill_end(rec, status).await?;
            return Ok(Some(Round::Done(status.clone())));
        }
        if looked.all_final {
            let state = flows.journal.finalize(&rec.tx_id)?;
            // Not finalized here: another run did it since this round read the flow (a
            // host that took its batch over). It ends as the journal says.
            status.state = match state {
                Some(state) => Some(state),
                None => Some(flows.journal.get(&rec.tx_id)?.state),
            };
            status.ending = None;
            for view in &mut status.facts {
                view.fact.is_final = true;
            }
            if let Some(state) = state {
                progress.step(&format!("final: {}", state.as_str()));
            }
            self.fill_end(rec, status).await?;
            return Ok(Some(Round::Done(status.clone())));
        }
        if let Some(depth) = status.confirmations()
            && self.depth_reported.as_ref() != Some(&depth)
        {
            progress.step(&format!("{}: {depth}", status_ending(status)));
            self.depth_reported = Some(depth.clone());
            self.awaited = format!("flow {} to be final ({depth})", rec.tx_id);
            self.clock.waiting_for(self.awaited.clone());
        }
        self.fill_end(rec, status).await?;
        Ok(Some(match (self.mode, flows.wait.until) {
            (Mode::Follow, Until::Final) => Round::Waiting(status.clone()),
            _ => Round::Done(status.clone()),
        }))
    }

    /// The parts of a status that describe how the flow ended, from the journal: its
    /// receipt, what a swap and a redeem ended on.
    async fn fill_end(&self, rec: &FlowRecord, status: &mut FlowStatus) -> Result<(), Error> {
        let flows = self.flows;
        let end = flows.end_of(rec)?;
        status.ended_by = end.ended_by();
        if let Some(receipt) = status
            .facts
            .iter()
            .find(|v| v.fact.kind == FactKind::Receipt)
        {
            status.tx_hash = Some(receipt.fact.tx_hash);
        }
        if let Some(result) = &rec.result {
            if let Ok(r) = serde_json::from_value::<Receipt>(result.clone())
                && status.receipt.is_none()
            {
                status.receipt = Some(r);
            }
            if matches!(end, End::Redemption { .. }) && result.get("status").is_some() {
                status.redemption = Some(Redemption {
                    status: result["status"]
                        .as_str()
                        .unwrap_or_default()
                        .to_ascii_lowercase(),
                    raw: result.clone(),
                });
                status.payout = payout_of(result);
            }
        }
        if let End::StCredit(facts) = end {
            status.st_before = flows
                .journaled_st_before(&rec.tx_id)?
                .map(|b| b.to_string());
            status.expected_credit = facts.expected.map(|e| e.to_string());
        }
        // A flow replaced at its nonce says which of its transactions ended it.
        let signatures = flows.journal.signatures(&rec.tx_id)?;
        if signatures.len() > 1
            && let Some(mined) = status
                .facts
                .iter()
                .find(|v| v.fact.kind == FactKind::Receipt)
            && let Some(sig) = signatures
                .iter()
                .find(|s| s.tx_hash.parse::<B256>().ok() == Some(mined.fact.tx_hash))
            && let Some(state) = status
                .state
                .filter(|s| *s != FlowState::Confirming)
                .or(status.ending)
        {
            status.ended = Some(Ended {
                state,
                mined: mined.fact.tx_hash,
                purpose: sig.purpose,
                block: mined.fact.block,
                redemption: status.redemption.clone(),
            });
        }
        Ok(())
    }

    /// Looks for the flow's end once: its transaction mined (any of its signatures),
    /// then what ends it. `true` when an end was observed and journaled (the flow is
    /// confirming): the round looks at its facts next.
    async fn observe_end(
        &mut self,
        node: &dyn Node,
        status: &mut FlowStatus,
        progress: &mut dyn Progress,
    ) -> Result<bool, Error> {
        let flows = self.flows;
        let rec = flows.journal.get(&self.tx_id)?;
        let tx_id = rec.tx_id.as_str();
        let chain_id = rec.chain_id.unwrap_or_default();
        let replaced = flows.journal.signatures(tx_id)?.len() > 1;
        let end = flows.end_of(&rec)?;
        status.ended_by = end.ended_by();
        if let End::StCredit(facts) = &end {
            status.st_before = flows.journaled_st_before(tx_id)?.map(|b| b.to_string());
            status.expected_credit = facts.expected.map(|e| e.to_string());
            if self.mode == Mode::Look
                && let Some(owner) = rec.from.as_deref().and_then(|f| f.parse().ok())
            {
                status.st_now = Some(flows.token_balance(TokenSide::St, owner).await?.to_string());
            }
        }
        let Some((sig, receipt)) = self
            .clock
            .during(flows.mined_signature_on(node, &rec), progress)
            .await?
        else {
            let newest = status.tx_hash.unwrap_or_default();
            self.not_mined(node, &rec, newest, status, progress).await?;
            if let End::Redemption { by_tx_id } = end {
                self.platform_claim(&rec, by_tx_id, status, progress)
                    .await?;
            }
            return Ok(false);
        };
        let mined = receipt.transaction_hash;
        status.tx_hash = Some(mined);
        status.receipt = Some(receipt.clone());
        let fact = receipt_fact(FactKind::Receipt, chain_id, &receipt);
        if self.mined_reported != Some(mined) {
            self.mined_reported = Some(mined);
            if flows
                .journal
                .facts(tx_id)?
                .iter()
                .all(|f| f.kind != FactKind::Receipt || f != &fact)
            {
                flows.record_mined(tx_id, &receipt, sig.purpose)?;
                flows.journal.record_fact(tx_id, &fact)?;
            }
            progress.step(&format!(
                "{} mined in block {}",
                match (rec.kind, sig.purpose) {
                    (FlowKind::Swap, Purpose::Original) => "MT transfer".to_owned(),
                    (_, Purpose::Original) => format!("transaction {mined}"),
                    (_, purpose) => format!("{mined} ({})", purpose.as_str()),
                },
                receipt.block_number
            ));
        }
        let ended = |state: FlowState, redemption: Option<Redemption>| {
            replaced.then_some(Ended {
                state,
                mined,
                purpose: sig.purpose,
                block: receipt.block_number,
                redemption,
            })
        };
        let receipt_json = serde_json::to_value(&receipt).unwrap_or_default();
        if sig.purpose == Purpose::Cancel {
            flows.journal.conclude(
                tx_id,
                FlowState::Cancelled,
                "cancelled",
                &json!({"txHash": mined.to_string(), "block": receipt.block_number}),
                &[fact],
            )?;
            status.ended = ended(FlowState::Cancelled, None);
            return Ok(true);
        }
        if !receipt.success {
            flows
                .journal
                .conclude(tx_id, FlowState::Failed, "reverted", &receipt_json, &[fact])?;
            status.ended = ended(FlowState::Failed, None);
            return Ok(true);
        }
        match end {
            End::Receipt => {
                flows.journal.conclude(
                    tx_id,
                    FlowState::Completed,
                    "completed",
                    &receipt_json,
                    &[fact],
                )?;
                status.ended = ended(FlowState::Completed, None);
                Ok(true)
            }
            End::Redemption { by_tx_id } => {
                let by_tx_id = by_tx_id && !replaced;
                let Some(found) = self
                    .redemption(&rec, by_tx_id, mined, status, progress)
                    .await?
                else {
                    return Ok(false);
                };
                let Some(facts) = self.payout_facts(&found, fact, status, progress).await? else {
                    return Ok(false);
                };
                let state = if found.is_success() {
                    FlowState::Completed
                } else {
                    FlowState::Failed
                };
                flows
                    .journal
                    .conclude(tx_id, state, state.as_str(), &found.raw, &facts)?;
                status.ended = ended(state, Some(found));
                Ok(true)
            }
            End::StCredit(facts) => {
                let mined_at = mined_at(node, &receipt).await?;
                let result = json!({"txHash": mined.to_string(), "block": receipt.block_number});
                let what = format!(
                    "swap {tx_id}: its ST credit{}",
                    facts
                        .expected
                        .map(|e| format!(
                            " ({})",
                            flows
                                .side(TokenSide::St)
                                .map_or_else(|_| e.to_string(), |s| s.tokens_text(&e.to_string()))
                        ))
                        .unwrap_or_default()
                );
                self.clock.waiting_for(what.clone());
                self.awaited = what;
                let Follower {
                    clock, timestamps, ..
                } = self;
                let credit = clock
                    .during(
                        flows.claim_own_credit(tx_id, &facts, mined_at, &result, fact, timestamps),
                        progress,
                    )
                    .await?;
                match credit {
                    Some(credit) => {
                        progress.step(&format!(
                            "credited {} by {} (log {}, block {})",
                            flows.side(TokenSide::St)?.tokens_text(&credit.amount),
                            credit.tx_hash,
                            credit.log_index,
                            credit.block
                        ));
                        status.credit = Some(credit);
                        status.ended = ended(FlowState::Completed, None);
                        Ok(true)
                    }
                    None => Ok(false),
                }
            }
            End::Unobservable(why) => {
                status.unobserved.push(why);
                Ok(false)
            }
        }
    }

    /// The flow's transaction is not mined: where the node has it (asked in a look, and
    /// in a wait every [`super::WAIT_REPORT`] once it is late), journaled once when the
    /// node does not know it, reported once per change after [`NOT_MINED_AFTER`].
    async fn not_mined(
        &mut self,
        node: &dyn Node,
        rec: &FlowRecord,
        hash: B256,
        status: &mut FlowStatus,
        progress: &mut dyn Progress,
    ) -> Result<(), Error> {
        let elapsed = self.clock.elapsed();
        let signed = self.flows.journal.signatures(&rec.tx_id)?.len();
        self.awaited = if signed > 1 {
            format!(
                "one of flow {}'s {signed} transactions to be mined",
                rec.tx_id
            )
        } else if rec.kind == FlowKind::Swap {
            format!("the MT transfer {hash} to be mined")
        } else {
            format!("transaction {hash} to be mined")
        };
        self.clock.waiting_for(self.awaited.clone());
        let due = self.mode == Mode::Look
            || (elapsed >= NOT_MINED_AFTER
                && self
                    .presence_asked
                    .is_none_or(|at| elapsed.saturating_sub(at) >= super::WAIT_REPORT));
        if !due {
            status.tx_presence = self.presence;
            return Ok(());
        }
        self.presence_asked = Some(elapsed);
        let presence = self.clock.during(node.presence(hash), progress).await?;
        self.presence = Some(presence);
        status.tx_presence = Some(presence);
        if presence == TxPresence::Unknown && !is_over(rec.state) {
            let noted = self
                .flows
                .journal
                .steps(&rec.tx_id)?
                .iter()
                .any(|s| s.step == "dropped" && s.detail["txHash"] == hash.to_string());
            if !noted {
                self.flows.journal.note(
                    &rec.tx_id,
                    "dropped",
                    &json!({"txHash": hash.to_string()}),
                )?;
            }
        }
        if self.mode == Mode::Follow && self.presence_reported != Some(presence) {
            self.presence_reported = Some(presence);
            let remedy = match rec.kind {
                FlowKind::Redeem => "; the relayer cannot redeem it until it is",
                _ => "",
            };
            progress.step(&format!(
                "transaction {hash} not mined after {} s: {}{remedy} (it can be replaced at a \
                 higher gas price, or cancelled)",
                elapsed.as_secs(),
                presence.describe()
            ));
        }
        Ok(())
    }

    /// Operation 5 for a redeem, the status reported when it changes (and journaled),
    /// a poll that fails for a passing reason noted and waited through. `Some` when the
    /// record is terminal.
    async fn redemption(
        &mut self,
        rec: &FlowRecord,
        by_tx_id: bool,
        hash: B256,
        status: &mut FlowStatus,
        progress: &mut dyn Progress,
    ) -> Result<Option<Redemption>, Error> {
        let flows = self.flows;
        let asked = if by_tx_id {
            rec.tx_id.clone()
        } else {
            hash.to_string()
        };
        self.clock.waiting_for("the relayer");
        let found = match self
            .clock
            .during(flows.redemption_of(&asked, hash), progress)
            .await
        {
            Ok(found) => found,
            // Polling is itself a retry loop: a server error or a lost connection is "no
            // answer this time" until the wait runs out.
            Err(e @ (Error::Http { .. } | Error::Platform { .. }))
                if e.is_transient() && self.mode == Mode::Follow =>
            {
                progress.step(&format!(
                    "no answer this time ({}); polling on",
                    bridgectl_tx::text::printable(&e.to_string())
                ));
                self.last_error = Some(e.to_string());
                None
            }
            Err(e) => return Err(e),
        };
        self.awaited = format!(
            "redemption {} (last status {}{})",
            rec.tx_id,
            if self.redemption_status.is_empty() {
                "none"
            } else {
                &self.redemption_status
            },
            self.last_error
                .as_ref()
                .map(|e| format!(", last error: {e}"))
                .unwrap_or_default()
        );
        let Some(r) = found else {
            return Ok(None);
        };
        status.redemption = Some(r.clone());
        status.payout = payout_of(&r.raw);
        if r.status != self.redemption_status {
            progress.step(&format!(
                "redemption {}",
                bridgectl_tx::text::printable(&r.status)
            ));
            self.redemption_status.clone_from(&r.status);
            self.awaited = format!("redemption {} (last status {})", rec.tx_id, r.status);
            if !r.is_terminal() {
                // One commit per change of status, not per poll.
                flows
                    .journal
                    .observe(&rec.tx_id, None, "redemption", &r.raw)?;
            }
        }
        Ok(r.is_terminal().then_some(r))
    }

    /// What a platform says of a redeem whose transaction this look has not seen mined:
    /// a claim, shown and journaled once per change, never an end.
    async fn platform_claim(
        &mut self,
        rec: &FlowRecord,
        by_tx_id: bool,
        status: &mut FlowStatus,
        progress: &mut dyn Progress,
    ) -> Result<(), Error> {
        let Some(hash) = status.tx_hash else {
            return Ok(());
        };
        let replaced = self.flows.journal.signatures(&rec.tx_id)?.len() > 1;
        let before = self.redemption_status.clone();
        let Some(r) = self
            .redemption(rec, by_tx_id && !replaced, hash, status, progress)
            .await?
        else {
            return Ok(());
        };
        let why = if self.flows.has_node(rec.chain_id.unwrap_or_default()) {
            format!(
                "the redemption: the platform says {}, but the chain's node has not mined its \
                 transaction: a claim the chain does not show yet, looked at again",
                bridgectl_tx::text::printable(&r.status)
            )
        } else {
            format!(
                "the redemption: the platform says {}, and without the chain's node (its \
                 rpc_url) nothing here can see whether its transaction was mined: a claim, \
                 not an end",
                bridgectl_tx::text::printable(&r.status)
            )
        };
        if before != r.status {
            if self.mode == Mode::Follow {
                progress.step(&why);
            }
            self.flows
                .journal
                .observe(&rec.tx_id, None, "redemption-claimed", &r.raw)?;
        }
        // Followed with a node, a claim ahead of the chain is looked at again (its
        // transaction may be mined by the next look: the platform answered after this
        // look's receipt was asked for), not a reason to stop waiting.
        if self.mode == Mode::Look || !self.flows.has_node(rec.chain_id.unwrap_or_default()) {
            status.unobserved.push(why);
        }
        Ok(())
    }

    /// The facts a terminal redemption `r` ends the flow on: its transaction's receipt,
    /// and for a completed one the MT payout it names, once the main chain's node has it
    /// mined and successful. `None` while the payout is not mined yet (reported once).
    async fn payout_facts(
        &mut self,
        r: &Redemption,
        receipt: Fact,
        status: &mut FlowStatus,
        progress: &mut dyn Progress,
    ) -> Result<Option<Vec<Fact>>, Error> {
        let flows = self.flows;
        let main = flows.bridge()?.main.chain_id;
        let (Some(payout), Some(node), true) =
            (payout_of(&r.raw), flows.node_of_chain(main), r.is_success())
        else {
            return Ok(Some(vec![receipt]));
        };
        let node = node?;
        match self.clock.during(node.receipt(payout), progress).await? {
            Some(p) if p.success => Ok(Some(vec![
                receipt,
                receipt_fact(FactKind::Payout, main, &p),
            ])),
            found => {
                let why = match found {
                    Some(_) => format!(
                        "the redemption: the platform says {}, and its MT payout {payout} \
                         reverted on the main chain: a claim the chain contradicts",
                        bridgectl_tx::text::printable(&r.status)
                    ),
                    None => format!("the MT payout {payout}: not mined yet on the main chain"),
                };
                if self.payout_reported != Some(payout) {
                    self.payout_reported = Some(payout);
                    if self.mode == Mode::Follow {
                        progress.step(&why);
                    }
                }
                self.awaited = format!("the MT payout {payout} to be mined");
                self.clock.waiting_for(self.awaited.clone());
                status.unobserved.push(why);
                Ok(None)
            }
        }
    }

    /// The error of a wait that ran out, naming what held it up.
    async fn timed_out(&self, status: &FlowStatus) -> Error {
        let flows = self.flows;
        let not_mined = match (status.receipt.is_none(), status.tx_hash) {
            (true, Some(hash)) => match self.presence {
                Some(p) => Some(p),
                None => match flows.journal.get(&self.tx_id).ok().and_then(|r| r.chain_id) {
                    Some(chain) => match flows.node_of_chain(chain) {
                        Some(Ok(node)) => node.presence(hash).await.ok(),
                        _ => None,
                    },
                    None => None,
                },
            },
            _ => None,
        };
        Error::Timeout {
            what: self.awaited.clone(),
            seconds: flows.wait.timeout.as_secs(),
            flow: Some(self.tx_id.clone()),
            not_mined: not_mined.filter(|p| *p != TxPresence::Mined),
            tx_hash: status.tx_hash,
        }
    }
}

/// "completed once final", the end a confirming flow waits for, for progress.
fn status_ending(status: &FlowStatus) -> String {
    match status.ending {
        Some(state) => format!("{} once final", state.as_str()),
        None => "waiting for finality".into(),
    }
}

/// How a person reads a reorganisation found.
fn reorg_text(reorg: &Reorg) -> String {
    let f = &reorg.fact;
    let what = match f.kind {
        FactKind::Receipt => format!("its transaction {}", f.tx_hash),
        FactKind::Credit => format!(
            "its credit (log {} of {})",
            f.log_index.unwrap_or_default(),
            f.tx_hash
        ),
        FactKind::Payout => format!("the MT payout {}", f.tx_hash),
    };
    format!(
        "reorganisation on chain {}: {what} is no longer in block {} ({}){}; the flow is open \
         again",
        f.chain_id,
        f.block,
        f.block_hash,
        if reorg.deeper_than_final {
            ", deeper than the chain's finality"
        } else {
            ""
        }
    )
}

impl Flows {
    /// Journals that flow `tx_id`'s transaction was mined as `receipt` says (`purpose`:
    /// which of its signatures).
    pub(super) fn record_mined(
        &self,
        tx_id: &str,
        receipt: &Receipt,
        purpose: Purpose,
    ) -> Result<(), Error> {
        self.journal.note(
            tx_id,
            "mined",
            &json!({"txHash": receipt.transaction_hash.to_string(), "block": receipt.block_number,
                    "blockHash": receipt.block_hash.to_string(),
                    "purpose": purpose.as_str(), "success": receipt.success}),
        )
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

#[cfg(test)]
mod tests {
    //! The follower's decisions with a node that answers what a test sets: an end
    //! observed is confirming until its depth, final then, withdrawn when its block
    //! changes (before or after it was final), and what each look costs in calls.

    use std::sync::Arc;

    use alloy_primitives::{Address, B256};
    use bridgectl_tx::SignedTx;

    use super::*;
    use crate::client::{AccessToken, ClientOptions, PlatformClient};
    use crate::journal::Journal;
    use crate::node::fake::FakeNode;
    use crate::{Bridge, ChainSide, GasPriceCap, SwapCredit};

    const SIDE: u64 = 31338;
    const TX: B256 = B256::repeat_byte(0x77);

    /// Flows over a journal holding one transfer flow, signed and submitted (`TX` on the
    /// side chain), whose side chain is `node`, final at `finality`.
    fn transfer_flow(node: &FakeNode, finality: Option<Finality>) -> (Flows, tempfile::TempDir) {
        flow_of(FlowKind::Transfer, "http://127.0.0.1:1", node, finality)
    }

    /// [`transfer_flow`] of another kind, whose platform is `platform`.
    fn flow_of(
        kind: FlowKind,
        platform: &str,
        node: &FakeNode,
        finality: Option<Finality>,
    ) -> (Flows, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("dir");
        let log = bridgectl_signing_log::SigningLogDb::open_in(dir.path(), vec![]).expect("log");
        let journal = Arc::new(Journal::in_memory().expect("journal"));
        let from = Address::repeat_byte(0x01);
        journal
            .begin("t1", kind, Some(&from.to_string()), &json!({}))
            .expect("begin");
        journal
            .record_signed(
                "t1",
                &SignedTx {
                    raw: vec![0xf8, 0x01].into(),
                    hash: TX,
                    from,
                    chain_id: SIDE,
                    nonce: 0,
                },
            )
            .expect("signed");
        let chain = |chain_id, finality| ChainSide {
            environment_id: "env".into(),
            symbol: "ST".into(),
            decimals: 18,
            token: Address::repeat_byte(0x11),
            chain_id,
            rpc_url: None,
            finality,
        };
        let client = PlatformClient::new(platform, AccessToken::new("t"), ClientOptions::default())
            .expect("client");
        let flows = Flows::builder(client, journal, Arc::new(log))
            .bridge(Bridge {
                main: chain(31337, None),
                side: chain(SIDE, finality),
                redeem_action: "redeem".into(),
                swap_credit: SwapCredit::default(),
            })
            .node(SIDE, node.clone())
            .gas_price(GasPriceCap::Max(1))
            .build();
        (flows, dir)
    }

    async fn look(flows: &Flows) -> FlowStatus {
        flows.status("t1").await.expect("status")
    }

    #[tokio::test]
    async fn an_end_is_confirming_until_its_depth_then_final() {
        let node = FakeNode::new(SIDE).with_head(10);
        let (flows, _dir) = transfer_flow(&node, Some(Finality::Confirmations(3)));
        assert_eq!(
            look(&flows).await.state,
            Some(FlowState::Signed),
            "not mined"
        );
        node.mine(TX, 10, true);
        let s = look(&flows).await;
        assert_eq!(
            (s.state, s.ending),
            (Some(FlowState::Confirming), Some(FlowState::Completed))
        );
        assert_eq!(s.confirmations().as_deref(), Some("1 of 3 confirmations"));
        let fact = &s.facts[0];
        assert_eq!((fact.fact.block, fact.fact.block_hash), (10, node_hash(10)));
        node.set_head(11);
        let s = look(&flows).await;
        assert_eq!(s.state, Some(FlowState::Confirming), "one block short");
        node.set_head(12);
        let s = look(&flows).await;
        assert_eq!(s.state, Some(FlowState::Completed));
        assert!(s.facts.iter().all(|f| f.fact.is_final));
    }

    fn node_hash(n: u64) -> B256 {
        crate::node::fake::block_hash(n, 0)
    }

    /// A receipt whose block the chain replaced is withdrawn: the flow is open again,
    /// the reorganisation journaled, and a look says `resume` sends the bytes again
    /// (it sends nothing itself).
    #[tokio::test]
    async fn a_receipt_in_a_replaced_block_is_withdrawn_and_the_flow_reopened() {
        let node = FakeNode::new(SIDE).with_head(10);
        let (flows, _dir) = transfer_flow(&node, Some(Finality::Confirmations(3)));
        node.mine(TX, 10, true);
        assert_eq!(look(&flows).await.state, Some(FlowState::Confirming));
        node.reorganise(10, 1);
        let s = look(&flows).await;
        assert_eq!(s.state, Some(FlowState::Submitted), "{s:#?}");
        assert_eq!(s.reorgs.len(), 1);
        assert!(!s.reorgs[0].deeper_than_final);
        assert!(
            s.unobserved.iter().any(|u| u.contains("resuming flow t1")),
            "{:?}",
            s.unobserved
        );
        assert_eq!(node.calls("send_raw"), 0, "a look never sends");
        assert_eq!(flows.journal.reorgs("t1").expect("reorgs").len(), 1);
        // Mined again (its bytes sent again): observed anew, in the new block.
        node.mine(TX, 10, true);
        let s = look(&flows).await;
        assert_eq!(s.state, Some(FlowState::Confirming));
        assert_eq!(
            s.facts[0].fact.block_hash,
            crate::node::fake::block_hash(10, 1)
        );
    }

    /// A reorganisation deeper than finality after the flow completed: a look at the
    /// completed flow (one call) finds its block gone and reopens it.
    #[tokio::test]
    async fn a_reorganisation_deeper_than_finality_reopens_a_completed_flow() {
        let node = FakeNode::new(SIDE).with_head(10);
        let (flows, _dir) = transfer_flow(&node, Some(Finality::Confirmations(2)));
        node.mine(TX, 9, true);
        assert_eq!(look(&flows).await.state, Some(FlowState::Completed));
        let before = node.total_calls();
        assert_eq!(look(&flows).await.state, Some(FlowState::Completed));
        assert_eq!(
            node.total_calls() - before,
            1,
            "a look at a completed flow: its receipt, one call"
        );
        node.reorganise(8, 2);
        let s = look(&flows).await;
        assert_eq!(s.state, Some(FlowState::Submitted));
        assert!(s.reorgs[0].deeper_than_final, "{s:#?}");
    }

    /// What a flow costs between its inclusion and its finality, look by look: the
    /// receipt and the head with a depth setting; the finalized tag too by default.
    #[tokio::test]
    async fn each_look_between_inclusion_and_finality_costs_two_or_three_calls() {
        for (finality, per_look) in [(Some(Finality::Confirmations(3)), 2), (None, 3)] {
            let node = FakeNode::new(SIDE).with_head(10).with_finalized(Some(8));
            let (flows, _dir) = transfer_flow(&node, finality);
            node.mine(TX, 10, true);
            look(&flows).await;
            let before = node.total_calls();
            assert_eq!(look(&flows).await.state, Some(FlowState::Confirming));
            assert_eq!(node.total_calls() - before, per_look, "{finality:?}");
        }
    }

    /// Without a `finalized` tag and without a setting, the default depth decides; with
    /// the tag asked for explicitly, it is never final (and the status says why).
    #[tokio::test]
    async fn a_node_without_the_finalized_tag_falls_back_to_the_default_depth() {
        let node = FakeNode::new(SIDE).with_head(100).with_finalized(None);
        let (flows, _dir) = transfer_flow(&node, None);
        node.mine(TX, 100, true);
        look(&flows).await;
        node.set_head(100 + crate::finality::DEFAULT_CONFIRMATIONS - 2);
        assert_eq!(look(&flows).await.state, Some(FlowState::Confirming));
        node.set_head(100 + crate::finality::DEFAULT_CONFIRMATIONS - 1);
        assert_eq!(look(&flows).await.state, Some(FlowState::Completed));
    }

    /// A node of another chain is refused before any of its answers is used.
    #[tokio::test]
    async fn a_node_of_another_chain_is_refused() {
        let node = FakeNode::new(31337).with_head(10);
        let (flows, _dir) = transfer_flow(&node, None);
        let e = flows.status("t1").await.expect_err("another chain");
        assert!(
            matches!(
                e,
                Error::NodeOnWrongChain {
                    chain_id: SIDE,
                    found: 31337,
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(node.total_calls(), 1, "only asked which chain it is");
    }

    /// A platform on 127.0.0.1 that answers every request with `data`, in a success
    /// envelope, one request per connection, and counts them.
    fn platform_saying(data: serde_json::Value) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = asked.clone();
        let body = json!({"result": true, "data": data}).to_string();
        let answer = format!(
            "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-type: application/json\r\n\
             content-length: {}\r\n\r\n{body}",
            body.len()
        );
        std::thread::spawn(move || {
            for mut stream in listener.incoming().map_while(Result::ok) {
                // The request's head and its (short) JSON body, read until both are in.
                let mut request = Vec::new();
                let mut chunk = [0u8; 4096];
                while let Ok(n @ 1..) = stream.read(&mut chunk) {
                    request.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&request).to_ascii_lowercase();
                    let Some(head_end) = text.find("\r\n\r\n") else {
                        continue;
                    };
                    let length = text[..head_end]
                        .split("content-length:")
                        .nth(1)
                        .and_then(|rest| rest.lines().next())
                        .and_then(|n| n.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    if request.len() >= head_end + 4 + length {
                        break;
                    }
                }
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let _ = stream.write_all(answer.as_bytes());
            }
        });
        (url, asked)
    }

    /// A platform that says a redemption completed while the node has not mined its
    /// transaction (it answered after the look's receipt was asked for, or it is wrong):
    /// a look reports the claim; a follow shows it once and keeps looking until its wait
    /// runs out (it never stops at a claim, nor ends the flow on it).
    #[tokio::test]
    async fn a_platform_claim_ahead_of_the_chain_is_looked_at_again_not_waited_out() {
        let (platform, asked) = platform_saying(json!({"status": "completed"}));
        let node = FakeNode::new(SIDE).with_head(10);
        let (flows, _dir) = flow_of(FlowKind::Redeem, &platform, &node, None);
        let s = look(&flows).await;
        assert!(
            s.unobserved
                .iter()
                .any(|u| u.contains("a claim the chain does not show yet")),
            "{:?}",
            s.unobserved
        );
        let flows = Flows {
            wait: crate::WaitOptions {
                interval: Duration::from_millis(20),
                timeout: Duration::from_millis(300),
                ..Default::default()
            },
            ..flows
        };
        let before = asked.load(std::sync::atomic::Ordering::SeqCst);
        let e = flows
            .follow("t1", &mut crate::Quiet)
            .await
            .expect_err("kept waiting, then timed out");
        assert!(matches!(e, Error::Timeout { .. }), "{e}");
        assert!(
            asked.load(std::sync::atomic::Ordering::SeqCst) - before > 2,
            "looked at again, round after round"
        );
        assert_eq!(
            flows.journal.get("t1").expect("flow").state,
            FlowState::Signed,
            "the platform's word ends nothing"
        );
    }
}
