//! The flows and their shared spine: verify -> approve (unlock) -> sign -> journal ->
//! submit. Each flow (redeem, swap, transfer, action, managed, submit of a bundle,
//! resume, offline signing) lives in its own file and goes down the spine as a `Run`
//! (`run.rs`), which reaches the key only through `sign_verified`, the one place that
//! orders the steps:
//! 1. the raw transaction is parsed strictly and checked against the intent and the
//!    caps by `bridgectl_tx::verify`; a failure here never reaches the key;
//! 2. only then is the [`Approver`] asked (it shows the summary, confirms, unlocks);
//! 3. the signature is recorded in the signing log, re-decoded as a self-check, and the
//!    signed bytes are committed to the journal before they are sent;
//! 4. a submission failure leaves the flow `signed`, so [`Flows::resume`] resends the
//!    same bytes; a flow that stopped at step 2 (declined, a wrong passphrase, an
//!    interrupted prompt) has its raw transaction journaled, and
//!    [`Flows::resume_with_approval`] takes it through steps 1 to 4 again.

mod action;
mod batch;
mod bundle;
mod credit;
mod follow;
mod managed;
mod offline;
mod offline_batch;
mod redeem;
mod replace;
mod reset;
mod resume;
mod run;
mod swap;
mod token_side;
mod transfer;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use alloy_primitives::{Address, B256, U256};
use bridgectl_tx::request::{Intent, Token};
use bridgectl_tx::{Context, Nonce, Policy, RawTx, SigningLog, TransactionSigner, Verified};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::Error;
use crate::client::PlatformClient;
use crate::journal::{FlowState, Journal, Purpose};
use crate::node::{ChainNodes, Node};
use crate::rpc::NodeClient;

pub use crate::finality::Until;
pub use crate::peg::{PegRatio, SwapCredit};
pub(crate) use crate::progress::WaitClock;
pub use crate::progress::{Progress, Quiet, WAIT_REPORT};
pub use action::{ActionCall, ActionOutcome, ActionResult, SigningMode};
pub use batch::{
    AbandonedBatch, AccountPlan, AccountSpend, BatchCheck, BatchCounts, BatchItem, BatchOp,
    BatchOptions, BatchPlan, BatchStatus, Cap, GasNeed, HeldItem, ItemError, ItemResult, ItemState,
    ItemStatus, ItemView, PlanRefusal, PreparedBatch, PreparedView, Recipient, RecipientTotal,
    RefusedItem, ReleasedNonce, ShortSender, SignedBatchCheck, TokenTotal, Tokens,
};
pub(crate) use batch::{earlier_items, held_list};
pub use bundle::{BundleCheck, PreparedBundle};
pub use follow::{Ended, EndedBy, FactView, FlowStatus, NOT_MINED_AFTER};
pub use offline::{OfflineSigner, OfflineSigning};
pub use offline_batch::{
    BatchReview, BatchSigning, CheckedBatch, CheckedItem, DEFAULT_COMMIT_EVERY, ItemCheck,
    LimitReview, RecipientReview, SenderReview, TokenId, TokenTotalReview,
};
pub use redeem::RedeemOutcome;
pub use replace::{CANCEL_GAS_LIMIT, DEFAULT_BUMP_BASIS_POINTS, Replaced, Repricing};
pub use reset::{ChainResetPlan, RESET_CHECKED_PER_KEY, RetiredFlow};
pub use resume::{Resumed, can_resume};
pub use swap::{SwapOutcome, SwapSpec};
pub use token_side::TokenSide;
pub use transfer::{GasSource, NonceSource, TransferSpec};

/// One side of the bridge: a chain, its environment and its token. As JSON (camelCase):
/// `{"environmentId", "symbol", "decimals", "token", "chainId", "rpcUrl", "finality"}`
/// (`rpcUrl` may be `null`, `finality` left out). A profile file gives it with [`crate::Profile::bridge`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainSide {
    /// The platform's environment id for this chain.
    pub environment_id: String,
    /// The token's symbol.
    pub symbol: String,
    /// The token's decimals.
    pub decimals: u8,
    /// The token contract.
    pub token: Address,
    /// The EIP-155 chain id.
    pub chain_id: u64,
    /// A node RPC URL, for nonces, gas, balances and direct submission.
    pub rpc_url: Option<String>,
    /// What final means on this chain ([`crate::finality`]); `None`: the node's
    /// `finalized` block where it answers one, else
    /// [`DEFAULT_CONFIRMATIONS`](crate::finality::DEFAULT_CONFIRMATIONS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finality: Option<crate::Finality>,
}

impl ChainSide {
    /// `base_units` (a decimal string) as a person reads it: `2 ST`; the base units
    /// themselves when they do not parse.
    pub fn tokens_text(&self, base_units: &str) -> String {
        match base_units.parse::<U256>() {
            Ok(amount) => format!("{} {}", self.tokens(amount), self.symbol),
            Err(_) => format!("{base_units} {} base units", self.symbol),
        }
    }

    fn token_info(&self) -> Token {
        Token {
            symbol: self.symbol.clone(),
            decimals: self.decimals,
        }
    }
}

/// Both sides of the bridge and the action names, as a profile describes them
/// ([`crate::Profile::bridge`] reads one from bridgectl's profile file). As JSON
/// (camelCase): `{"main": ChainSide, "side": ChainSide, "redeemAction": "redeem",
/// "swapCredit": {"ratio": "1:1", "source": "0x00..00"}}` (`swapCredit` optional).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bridge {
    /// The main network (MT).
    pub main: ChainSide,
    /// The side chain (ST).
    pub side: ChainSide,
    /// The transaction action mapped to the ST `redeem` function.
    pub redeem_action: String,
    /// How a swap's own ST credit is told apart (the peg ratio, the credit source).
    #[serde(default)]
    pub swap_credit: SwapCredit,
}

/// What the approver is shown: everything has passed the checks already.
#[derive(Debug)]
pub struct Review<'a> {
    /// The flow's txId (its kind and history are in the journal).
    pub tx_id: &'a str,
    /// The verified transaction, with the trusted facts to show it by
    /// ([`Verified::summary_context`]).
    pub verified: &'a Verified,
    /// What the user asked for.
    pub intent: &'a Intent,
}

impl Review<'_> {
    /// The transaction to be signed.
    pub fn raw_tx(&self) -> &RawTx {
        self.verified.raw_tx()
    }
}

/// The future an [`Approver`] returns: boxed, as `async_trait` would write it, so that
/// an approver can be a trait object (`Box<dyn Approver<Signer = S>>`, chosen at run
/// time: a terminal's, a GUI's, an unattended one). Write the body as
/// `Box::pin(async move { ... })`.
pub type ApproveFuture<'a, S> = Pin<Box<dyn Future<Output = Result<S, Error>> + Send + 'a>>;

/// The caller's part in signing: show, confirm, pick the signer. The library never
/// prompts; a CLI shows a summary and reads a passphrase, a GUI wallet opens a dialog, a
/// hardware wallet's own screen is the question. Async, so a wallet waiting for its user
/// does not block the flow's runtime (unlock with `Keystore::unlock_async`, whose key
/// derivation runs off the runtime's threads, not `Keystore::unlock`).
///
/// # What pins a call: when an approver may say yes without asking
///
/// One rule for the CLI and the library: [`Verified::pins_call`] on
/// `review.verified` is true when the operator fixed the whole call in advance, and
/// only then may an approver sign without a person's confirmation:
/// - a flow built from its caller's own arguments pins it: [`Flows::redeem`] (the
///   amount), [`Flows::swap`] and [`Flows::transfer`] (recipient and amount), whose
///   intents are [`Intent::pinned_by_caller`]; so a wallet's unattended approver may
///   approve its own redeem;
/// - the policy's expectations pin it (`expect_data`, or `expect_function` with every
///   argument), and so does a standing approval in [`Policy::auto_approve`] (a
///   function, its destinations and a most it may move);
/// - a request's or the platform's words never do: an action whose function the
///   platform chose, a sign request's intent. Those narrow what is signed; a person (or
///   the operator's policy) approves it.
///
/// Everything in the review passed the checks already; the summary
/// (`bridgectl_tx::summary::Summary::new(review.raw_tx(), &review.verified.summary_context())`)
/// shows a flow's own description as what is signed, a request's as a claim.
pub trait Approver: Send {
    /// What signs for the approved transaction.
    ///
    /// A local key ([`crate::PrivateKeySigner`]), any alloy signer
    /// ([`bridgectl_tx::AlloySigner`]), a JSON-RPC signing endpoint
    /// ([`crate::rpc::RpcSigner`]), or a type of the wallet's own. Whatever it returns is
    /// decoded and must be exactly the verified transaction. (The first line alone is
    /// shown on each implementor's page, where these paths mean nothing: it has no link.)
    type Signer: TransactionSigner;

    /// Returns the signer for `review.raw_tx().from`, or an error to stop (nothing is
    /// signed; [`Error::Declined`] for a "no", [`Error::unlock_failed`] for a key that
    /// would not unlock). Called only after every check passed.
    fn approve<'a>(&'a mut self, review: &'a Review<'_>) -> ApproveFuture<'a, Self::Signer>;
}

/// A boxed approver (`Box<dyn Approver<Signer = S>>`) is one.
impl<A: Approver + ?Sized> Approver for Box<A> {
    type Signer = A::Signer;

    fn approve<'a>(&'a mut self, review: &'a Review<'_>) -> ApproveFuture<'a, Self::Signer> {
        (**self).approve(review)
    }
}

/// Where signed transactions go.
#[derive(Debug, Clone)]
pub enum Submitter {
    /// Operation 3 of the platform.
    Platform,
    /// `eth_sendRawTransaction` on a node, then wait for the receipt.
    Node(NodeClient),
}

/// How long and how often to wait for results.
#[derive(Debug, Clone, Copy)]
pub struct WaitOptions {
    /// Time between polls.
    pub interval: Duration,
    /// Give up after this long (the flow can be resumed).
    pub timeout: Duration,
    /// How far a wait goes: until the flow's end is final on its chain (the default), or
    /// until it is observed ([`Until::Included`]).
    pub until: Until,
}

impl Default for WaitOptions {
    fn default() -> Self {
        Self {
            interval: Duration::from_millis(500),
            timeout: Duration::from_secs(120),
            until: Until::Final,
        }
    }
}

/// The highest gas price a flow signs. There is no default: a gas price is the one
/// field a platform could inflate to drain the sender's native balance in fees, so an
/// embedder decides where the ceiling comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GasPriceCap {
    /// At most this many wei per gas.
    Max(u128),
    /// At most [`GAS_PRICE_SANITY_MULTIPLE`] times what the chain's node quotes (needs
    /// the chain's node, [`FlowsBuilder::node`] or its `rpc_url`; without one, a
    /// transaction on that chain is refused).
    NodeQuote,
}

/// A transaction that was signed and accepted for submission.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Submitted {
    /// The flow's txId.
    pub tx_id: String,
    /// The transaction hash (computed locally; the platform's answer is checked
    /// against it).
    pub tx_hash: B256,
    /// The signer.
    pub from: Address,
    /// Chain id.
    pub chain_id: u64,
    /// Nonce.
    pub nonce: u64,
    /// Whether the submission was answered "already known" (a resend).
    pub already_known: bool,
}

pub use bridgectl_tx::policy::{DEFAULT_MAX_GAS_LIMIT, GAS_PRICE_SANITY_MULTIPLE};

/// The flows over one platform client, journal, signing log and bridge description.
/// Made with [`Flows::builder`].
#[derive(Debug)]
pub struct Flows {
    client: PlatformClient,
    journal: Arc<Journal>,
    signing_log: Arc<dyn SigningLog>,
    bridge: Option<Bridge>,
    policy: Policy,
    /// Each chain's own policy, over `policy` for a transaction on that chain.
    chain_policies: std::collections::BTreeMap<u64, Policy>,
    submitter: Submitter,
    wait: WaitOptions,
    /// One client per node URL, made on first use: a client holds its connections (and
    /// its TLS setup), so a batch of a thousand items does not build a thousand.
    nodes: std::sync::Mutex<std::collections::HashMap<String, NodeClient>>,
    /// The nodes the embedder gave, by chain ([`FlowsBuilder::node`]).
    chain_nodes: ChainNodes,
    /// Each chain's node as the flows use it, asked its chain id before anything else
    /// (see [`Flows::node_of_chain`]).
    checked_nodes: std::sync::Mutex<ChainNodes>,
    /// The chains whose block 0 was checked against the journal's in this process.
    chains_checked: std::sync::Mutex<std::collections::HashMap<u64, B256>>,
    /// The journal's counters, which the platform client and every node client count in.
    timing: crate::timing::Timing,
    /// What time it is (a signature's log entry, a spending window's end).
    clock: Arc<dyn crate::clock::Clock>,
}

/// Builds [`Flows`]. The parts every flow needs are arguments of [`Flows::builder`];
/// the gas-price ceiling must be chosen before [`FlowsBuilder::build`] exists.
#[derive(Debug)]
pub struct FlowsBuilder<G> {
    flows: Flows,
    gas_price: G,
}

/// The state of a [`FlowsBuilder`] before [`FlowsBuilder::gas_price`] was called.
#[derive(Debug)]
pub struct NoGasPriceCap;

impl Flows {
    /// Starts building flows over `client`, recording every flow in `journal` and every
    /// signature in `signing_log` (where the spending limits read their totals too).
    pub fn builder(
        client: PlatformClient,
        journal: Arc<Journal>,
        signing_log: Arc<dyn SigningLog>,
    ) -> FlowsBuilder<NoGasPriceCap> {
        let timing = journal.timing().clone();
        let client = client.counted_in(&timing);
        FlowsBuilder {
            flows: Flows {
                client,
                journal,
                signing_log,
                bridge: None,
                policy: Policy::default(),
                chain_policies: Default::default(),
                submitter: Submitter::Platform,
                wait: WaitOptions::default(),
                nodes: Default::default(),
                chain_nodes: Default::default(),
                checked_nodes: Default::default(),
                chains_checked: Default::default(),
                timing,
                clock: Arc::new(crate::clock::SystemClock),
            },
            gas_price: NoGasPriceCap,
        }
    }
}

impl<G> FlowsBuilder<G> {
    /// The chains and tokens; needed by redeem, swap and transfer, not by a generic
    /// transaction action. Its chains and contracts become trusted facts of the policy.
    pub fn bridge(mut self, bridge: Bridge) -> Self {
        self.flows.bridge = Some(bridge);
        self
    }

    /// The user's own caps and expectations, checked on top of every intent.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.flows.policy = policy;
        self
    }

    /// The policy of transactions on `chain_id`, over the one of [`FlowsBuilder::policy`]
    /// (its unset fields filled from that one, as flags over a profile): chain ids,
    /// contracts and caps belong to the chain a flow runs on, so one [`Flows`] swaps on
    /// the main chain (`expect_chain_id` its id, its gas caps) and redeems on the side
    /// chain (another id, other caps). A transaction on a chain with no policy of its
    /// own meets the general one alone.
    pub fn chain_policy(mut self, chain_id: u64, policy: Policy) -> Self {
        self.flows.chain_policies.insert(chain_id, policy);
        self
    }

    /// The node of `chain_id`: nonces, gas prices, balances, receipts and logs on it
    /// come from `node` rather than from a client of the bridge's `rpc_url` [default:
    /// that client]. Any alloy `Provider<Ethereum>` is one (feature `alloy-provider`),
    /// with its fillers, layers and transport; or a [`Node`] of your own.
    pub fn node(mut self, chain_id: u64, node: impl Node + 'static) -> Self {
        self.flows.chain_nodes.0.insert(chain_id, Arc::new(node));
        self
    }

    /// Where signed transactions go [default: the platform].
    pub fn submitter(mut self, submitter: Submitter) -> Self {
        self.flows.submitter = match submitter {
            Submitter::Node(node) => Submitter::Node(node.counted_in(&self.flows.timing)),
            platform => platform,
        };
        self
    }

    /// The clock signatures are logged by and spending windows end at [default: the
    /// system's]. Online, a window still never ends past the chain's newest block time
    /// (plus a tolerance), whatever this clock says.
    pub fn clock(mut self, clock: Arc<dyn crate::clock::Clock>) -> Self {
        self.flows.clock = clock;
        self
    }

    /// Polling [default: every 500 ms for 120 s].
    pub fn wait(mut self, wait: WaitOptions) -> Self {
        self.flows.wait = wait;
        self
    }

    /// The gas-price ceiling (see [`GasPriceCap`]); a [`Policy`] with its own
    /// `max_gas_price` keeps the lower of the two.
    pub fn gas_price(self, cap: GasPriceCap) -> FlowsBuilder<GasPriceCap> {
        FlowsBuilder {
            flows: self.flows,
            gas_price: cap,
        }
    }
}

impl FlowsBuilder<GasPriceCap> {
    /// The flows.
    pub fn build(mut self) -> Flows {
        if let GasPriceCap::Max(max) = self.gas_price {
            let flows = &mut self.flows;
            for p in std::iter::once(&mut flows.policy).chain(flows.chain_policies.values_mut()) {
                p.max_gas_price = Some(p.max_gas_price.map_or(max, |m| m.min(max)));
            }
        }
        self.flows
    }
}

/// Error codes of the platform and of nodes that mean "this exact transaction is already
/// there": a resend succeeded.
fn is_already_known(err: &Error) -> bool {
    match err {
        Error::Platform { error, .. } => {
            let code = error.code.to_ascii_uppercase();
            let msg = error.message.to_ascii_lowercase();
            code.contains("ALREADY_KNOWN")
                || msg.contains("already known")
                || msg.contains("already imported")
        }
        _ => false,
    }
}

/// The node refused a transaction because its sender's nonce is past it: either this
/// transaction was mined already or another one took the nonce.
fn is_nonce_too_low(err: &Error) -> bool {
    match err {
        Error::Platform { error, .. } => {
            error.code.eq_ignore_ascii_case("NONCE_TOO_LOW")
                || error.message.to_ascii_lowercase().contains("nonce too low")
        }
        _ => false,
    }
}

fn new_tx_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

impl Flows {
    /// The platform client.
    pub fn client(&self) -> &PlatformClient {
        &self.client
    }

    /// Where the time of these flows went so far: HTTP waits, poll sleeps, journal
    /// writes (the journal's counters, shared by its clients).
    pub fn timing(&self) -> crate::timing::Timings {
        self.timing.snapshot()
    }

    /// The journal, to read (history, status, batches): only the flows write it, in
    /// the order their promises need (its writes are not public).
    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    /// The bridge description, or the configuration error saying it is needed.
    pub fn bridge(&self) -> Result<&Bridge, Error> {
        self.bridge.as_ref().ok_or(Error::Config(
            "this flow needs the bridge description (environments, tokens, chains)",
        ))
    }

    /// The policy in force for every chain: the user's, with the bridge's chains and
    /// contracts (and their tokens) as trusted facts. The bridge description comes from
    /// the same place as the policy (the embedder's configuration), never from the
    /// platform. A transaction on a chain is checked against [`Flows::policy_for`].
    pub fn trust_root(&self) -> Policy {
        self.with_bridge(self.policy.clone())
    }

    /// The policy a transaction on `chain_id` is checked against: that chain's own
    /// ([`FlowsBuilder::chain_policy`]) over the general one, with the bridge's chains
    /// and contracts as trusted facts. Where a chain has a policy of its own, the
    /// general one's `expect_chain_id` and `expect_to` do not reach it: which chain and
    /// which contract are that chain's to say.
    pub fn policy_for(&self, chain_id: u64) -> Policy {
        match self.chain_policies.get(&chain_id) {
            Some(own) => {
                let general = Policy {
                    expect_chain_id: None,
                    expect_to: None,
                    ..self.policy.clone()
                };
                self.with_bridge(own.clone().or(&general))
            }
            None => self.trust_root(),
        }
    }

    /// `policy` with the bridge's chains and contracts (and their tokens) trusted.
    fn with_bridge(&self, mut policy: Policy) -> Policy {
        if let Some(b) = &self.bridge {
            for side in [&b.main, &b.side] {
                policy
                    .trusted
                    .contract(side.token, side.chain_id, Some(side.token_info()));
            }
        }
        policy
    }

    fn side_of_chain(&self, chain_id: u64) -> Option<&ChainSide> {
        self.bridge.as_ref().and_then(|b| {
            [&b.main, &b.side]
                .into_iter()
                .find(|s| s.chain_id == chain_id)
        })
    }

    /// The client of the node at `url` (one per URL for the life of the flows).
    fn node_at(&self, url: &str) -> Result<Arc<dyn Node>, Error> {
        let mut nodes = self.nodes.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(node) = nodes.get(url) {
            return Ok(Arc::new(node.clone()));
        }
        let node = NodeClient::new(url)?.counted_in(&self.timing);
        nodes.insert(url.to_owned(), node.clone());
        Ok(Arc::new(node))
    }

    /// `chain_id`'s node: the one given for it ([`FlowsBuilder::node`]), else a client
    /// of the bridge's `rpc_url` for it; `None` when there is neither. It is believed
    /// only for its own chain: its `eth_chainId` is asked once, before any other answer
    /// of it is used, and another chain is [`Error::NodeOnWrongChain`].
    pub(crate) fn node_of_chain(&self, chain_id: u64) -> Option<Result<Arc<dyn Node>, Error>> {
        let mut checked = self.checked_nodes.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(node) = checked.0.get(&chain_id) {
            return Some(Ok(node.clone()));
        }
        let (inner, setting) = match self.chain_nodes.0.get(&chain_id) {
            Some(node) => (node.clone(), format!("the node given for chain {chain_id}")),
            None => {
                let url = self.side_of_chain(chain_id)?.rpc_url.as_deref()?;
                let setting = match &self.bridge {
                    Some(b) if b.main.chain_id == chain_id => "main_rpc_url",
                    _ => "side_rpc_url",
                };
                match self.node_at(url) {
                    Ok(node) => (node, setting.to_owned()),
                    Err(e) => return Some(Err(e)),
                }
            }
        };
        let node: Arc<dyn Node> =
            Arc::new(crate::node::ChainChecked::new(inner, chain_id, setting));
        checked.0.insert(chain_id, node.clone());
        Some(Ok(node))
    }

    /// Every node of the bridge's chains asked which chain it serves (once per process,
    /// see [`Flows::node_of_chain`]): called before anything is signed, so that a node
    /// of the wrong chain is refused then, even one this flow asks only after (a swap's
    /// side chain, a redeem's payout on the main chain).
    pub(crate) async fn check_nodes(&self) -> Result<(), Error> {
        let Some(bridge) = &self.bridge else {
            return Ok(());
        };
        for chain_id in [bridge.main.chain_id, bridge.side.chain_id] {
            if let Some(node) = self.node_of_chain(chain_id) {
                node?.chain_id().await?;
            }
        }
        Ok(())
    }

    /// Whether `chain_id` has a node to ask ([`Flows::node_of_chain`]).
    pub(crate) fn has_node(&self, chain_id: u64) -> bool {
        self.chain_nodes.0.contains_key(&chain_id)
            || self
                .side_of_chain(chain_id)
                .is_some_and(|s| s.rpc_url.is_some())
    }

    /// `node`'s chain is the one the journal's flows of `chain_id` were journaled on, and
    /// the one the keystore's signing log recorded (its block 0, read once per process
    /// and chain): a reset chain is named as such before its stale nonces refuse
    /// anything, or its blocks are taken for a reorganisation ([`Error::ChainReset`],
    /// [`Error::ChainResetInLog`]). Returns that block 0, which a signature records in
    /// the log.
    pub(crate) async fn verify_chain(&self, node: &dyn Node, chain_id: u64) -> Result<B256, Error> {
        let checked = self
            .chains_checked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&chain_id)
            .copied();
        if let Some(genesis) = checked {
            return Ok(genesis);
        }
        let genesis = node.genesis_hash().await?;
        self.journal.check_chain(chain_id, genesis)?;
        if let Some(logged) = self.signing_log.chain_genesis(chain_id)?
            && logged != genesis
        {
            return Err(Error::ChainResetInLog {
                chain_id,
                logged,
                found: genesis,
            });
        }
        self.chains_checked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(chain_id, genesis);
        Ok(genesis)
    }

    /// Whether transaction `hash` on `chain_id` is mined, when the chain's node is known
    /// (unknown counts as no: the caller then reports the node's refusal).
    async fn is_mined(&self, chain_id: u64, hash: B256) -> bool {
        match self.node_of_chain(chain_id) {
            Some(Ok(node)) => matches!(node.receipt(hash).await, Ok(Some(_))),
            _ => false,
        }
    }

    /// The node's gas price for `chain_id`, when its node is known.
    async fn gas_price_quote(&self, chain_id: u64) -> Result<Option<u128>, Error> {
        match self.node_of_chain(chain_id) {
            Some(node) => Ok(Some(node?.gas_price().await?)),
            None => Ok(None),
        }
    }

    /// Checks a transaction signed before (an air-gap bundle, the journal's bytes on
    /// resume) with the one verifier before it is sent: a legacy EIP-155 call from its
    /// recovered signer, to a trusted chain and contract, within the caps, and (when an
    /// intent is known) doing what was asked. The nonce was fixed when it was signed.
    async fn check_signed(
        &self,
        decoded: &bridgectl_tx::decode::DecodedTx,
        intent: Option<&Intent>,
        purpose: Purpose,
    ) -> Result<Verified, Error> {
        let unsigned = decoded.unsigned().ok_or_else(|| {
            bridgectl_tx::Error::Refused(format!(
                "transaction {} is not a legacy EIP-155 call, the only kind bridgectl sends",
                decoded.hash
            ))
        })?;
        let context = Context {
            signer: decoded.sender,
            gas_price_quote: self.gas_price_quote(unsigned.chain_id).await?,
            nonce: Nonce::AlreadySigned,
            spent: None,
        };
        // A cancel is a transfer to the sender itself, never a trusted contract's call.
        let policy = match purpose {
            Purpose::Cancel => self.cancel_policy(&unsigned),
            _ => self.policy_for(unsigned.chain_id),
        };
        Ok(bridgectl_tx::verify(&unsigned, intent, &policy, &context)?)
    }

    /// Marks a flow done with its final result.
    fn complete(&self, tx_id: &str, result: &Value, ok: bool) -> Result<(), Error> {
        let (state, step) = if ok {
            (FlowState::Completed, "completed")
        } else {
            (FlowState::Failed, "failed")
        };
        self.journal.observe(tx_id, Some(state), step, result)
    }

    /// Journals a failure (best effort: the original error is what the caller reports).
    fn fail(&self, tx_id: &str, step: &str, err: &Error) {
        fail(&self.journal, tx_id, step, err);
    }
}

/// Journals a failure of flow `tx_id` at `step` (best effort).
fn fail(journal: &Journal, tx_id: &str, step: &str, err: &Error) {
    let _ = journal.step(
        tx_id,
        FlowState::Failed,
        step,
        &json!({"error": err.to_string()}),
    );
}

/// The intent of a token transfer call (`transfer(_to, _value)`).
/// Built here from the caller's own recipient and amount (a swap's recipient is the
/// address the platform issued for it), so the operator's pin of the call.
fn transfer_intent(side: &ChainSide, to: Address, amount: U256, what: &str) -> Intent {
    Intent::transfer(side.token, side.chain_id, to, amount)
        .with_token(&side.symbol, side.decimals)
        .described(what)
        .pinned_by_caller()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::PlatformError;

    /// One `Flows` for both chains: the side chain's policy expects its own chain id
    /// and caps, the main chain keeps the general policy's, and the general
    /// `expect_chain_id` does not reach a chain with a policy of its own.
    #[test]
    fn each_chain_has_its_own_policy_over_the_general_one() {
        let dir = tempfile::tempdir().expect("dir");
        let log = bridgectl_signing_log::SigningLogDb::open_in(dir.path(), vec![]).expect("log");
        let client = PlatformClient::new(
            "http://127.0.0.1:1",
            crate::client::AccessToken::new("t"),
            crate::client::ClientOptions::default(),
        )
        .expect("client");
        let general = Policy {
            expect_chain_id: Some(31338),
            max_fee: Some(U256::from(7)),
            ..Policy::default()
        };
        let side = Policy {
            expect_chain_id: Some(31338),
            max_gas_price: Some(5),
            ..Policy::default()
        };
        let main = Policy {
            max_gas_price: Some(50),
            ..Policy::default()
        };
        let flows = Flows::builder(
            client,
            Arc::new(Journal::in_memory().expect("j")),
            Arc::new(log),
        )
        .policy(general)
        .chain_policy(31338, side)
        .chain_policy(31337, main)
        .gas_price(GasPriceCap::Max(20))
        .build();
        let on_side = flows.policy_for(31338);
        assert_eq!(on_side.expect_chain_id, Some(31338));
        assert_eq!(
            on_side.max_gas_price,
            Some(5),
            "the lower of its own and the builder's"
        );
        assert_eq!(
            on_side.max_fee,
            Some(U256::from(7)),
            "filled from the general one"
        );
        let on_main = flows.policy_for(31337);
        assert_eq!(
            on_main.expect_chain_id, None,
            "the general chain id is not the main chain's"
        );
        assert_eq!(on_main.max_gas_price, Some(20));
        assert_eq!(
            flows.policy_for(1).expect_chain_id,
            Some(31338),
            "no own policy: the general one"
        );
    }

    #[test]
    fn already_known_is_recognised_in_codes_and_messages() {
        let e = |code: &str, message: &str| Error::Platform {
            operation: "x".into(),
            error: PlatformError {
                status: 400,
                code: code.into(),
                message: message.into(),
            },
        };
        assert!(is_already_known(&e("TX_ALREADY_KNOWN", "x")));
        assert!(is_already_known(&e("RPC_-32000", "already known")));
        assert!(!is_already_known(&e("NONCE_TOO_LOW", "nonce too low")));
    }
}
