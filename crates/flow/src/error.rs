//! The one error type of the flows.

use alloy_primitives::Address;
use serde::Serialize;
use serde_json::Value;

/// `err` and its causes on one line, "what failed: why: why". Every error of the crate
/// either prints its source or returns it from `source()`, never both, so each cause
/// appears once. For journal entries and progress lines; a CLI prints the same chain
/// with anyhow's `{:#}`.
pub fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut next = err.source();
    while let Some(cause) = next {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        next = cause.source();
    }
    text
}

/// What can go wrong talking to the platform, checking what it returned, or keeping the
/// journal.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A URL could not be used.
    #[error("invalid url {url:?}: {reason}")]
    BadUrl {
        /// The URL as given, without its path and query.
        url: String,
        /// Why.
        reason: String,
    },

    /// A secret would have gone over plain http to another machine.
    #[error(
        "refusing to send the access token over plain http to {url}: use https (plain http \
         is allowed only to 127.0.0.1/localhost)"
    )]
    PlaintextRefused {
        /// The URL.
        url: String,
    },

    /// A signing endpoint's URL ([`crate::rpc::RpcSigner`]) that cannot be used: checked before
    /// anything is asked of the platform or the endpoint.
    #[error("signing endpoint {url}: {reason}")]
    SignerUrl {
        /// The URL, without its path and query.
        url: String,
        /// What is wrong with it.
        reason: String,
    },

    /// The request did not get an answer (connection refused, timeout, reset).
    #[error("{what}")]
    Http {
        /// What was being done.
        what: String,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },

    /// A node given to the flows ([`crate::FlowsBuilder::node`], an alloy provider)
    /// gave no answer: its transport failed (its error kept whole).
    #[error("{what}")]
    Node {
        /// The call.
        what: String,
        /// The transport's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// An answer's body could not be read: over the size cap, or the connection failed
    /// mid-body.
    #[error("{what}")]
    Body {
        /// What was being read.
        what: String,
        /// Why.
        #[source]
        source: crate::http::BodyError,
    },

    /// The platform answered with an error envelope or an HTTP error.
    #[error("{operation}: {error}")]
    Platform {
        /// Method and path.
        operation: String,
        /// Status, code and message.
        error: PlatformError,
    },

    /// The answer is not in any shape this client knows.
    #[error("unexpected {what} from the platform: expected {expected}, got {data}")]
    UnexpectedShape {
        /// What was being read.
        what: String,
        /// The shape(s) looked for.
        expected: String,
        /// What came (may be shortened).
        data: Value,
    },

    /// A request body could not be encoded.
    #[error("cannot encode the request")]
    Encode(#[source] serde_json::Error),

    /// The flows were put together without something this flow needs (the bridge
    /// description, a chain's node URL): a configuration mistake, not a refusal.
    #[error("configuration: {0}")]
    Config(&'static str),

    /// A name that goes into a URL path has characters that could walk the path.
    #[error("invalid {what} {value:?}: only letters, digits, '-', '_' and '.' are allowed")]
    InvalidName {
        /// What it names.
        what: String,
        /// The name as given.
        value: String,
    },

    /// The journal directory could not be made.
    #[error("cannot create the journal directory {path}")]
    JournalDir {
        /// The directory.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },

    /// A transaction was mined and reverted.
    #[error("transaction {tx_hash} was mined in block {block} but reverted")]
    Reverted {
        /// Its hash.
        tx_hash: alloy_primitives::B256,
        /// The block.
        block: u64,
    },

    /// An action returned a transaction to sign, and the call was made without a signer.
    #[error(
        "the platform returned a transaction for {from} to sign, and there is no key for it here"
    )]
    NoSigner {
        /// The sender the transaction is for.
        from: alloy_primitives::Address,
    },

    /// A signed bundle with neither its sign request nor the flow that wrote it known.
    #[error(
        "nothing to check the signed bundle against: neither the sign request it answers nor the flow that wrote it is known"
    )]
    NothingToCheckAgainst,

    /// A flow that signed one transaction was offered another.
    #[error(
        "flow {tx_id} already signed another transaction ({signed}); refusing to send a second one for it (offered {offered})"
    )]
    AlreadySigned {
        /// The flow.
        tx_id: String,
        /// What it signed.
        signed: String,
        /// What was offered.
        offered: alloy_primitives::B256,
    },

    /// A sign request names a flow of this journal but carries another rawTx than the
    /// one that flow verified.
    #[error(
        "the request's rawTx is not the one flow {tx_id} verified here: it was changed after it was written"
    )]
    ChangedSinceVerified {
        /// The flow.
        tx_id: String,
    },

    /// The approver could not produce a signer (no passphrase source, a failed prompt).
    /// [`Error::Declined`] is a "no"; this is a failure of the caller's own.
    #[error(transparent)]
    Approval(Box<dyn std::error::Error + Send + Sync + 'static>),

    /// A file given as a signed bundle is not one.
    #[error("not a signed bundle (bridgectl sign output)")]
    NotBundle(#[source] bridgectl_json::Error),

    /// The raw transaction failed parsing or the checks against the intent; nothing was
    /// signed.
    #[error(transparent)]
    Tx(#[from] bridgectl_tx::Error),

    /// The approver could not hand over a signer: unlocking the key failed (a wrong
    /// passphrase, none given, a key file refused). The approver's own error is the
    /// `source()`, kept whole: a caller finds it with [`Error::unlock`] (or by walking
    /// `source()`) and downcasts it to its keystore's type;
    /// [`Error::is_wrong_passphrase`] needs no downcast.
    #[error("the key could not be unlocked")]
    Unlock(#[source] Box<dyn std::error::Error + Send + Sync>),

    /// The journal database failed (its store: a SQLite file, or PostgreSQL, which
    /// [`bridgectl_store::Error::is_unavailable`] says could not be reached).
    #[error("journal {path}")]
    Journal {
        /// The database: its file, or its URL without a password.
        path: String,
        /// The store's error.
        #[source]
        source: bridgectl_store::Error,
    },

    /// A journal not copied into another store (`Journal::copy_into`): the target holds
    /// a history of its own.
    #[error("not migrated: {0}")]
    MigrationRefused(String),

    /// Another run took over a batch this run was running (this run's claim ran out: it
    /// was paused, or cut off from the shared journal, past its lease): nothing more is
    /// written for its items here; the other run carries them on.
    #[error(
        "batch {batch_id} was taken over by {} (this run's claim on it ran out); nothing \
         more is written for its items here",
        by.as_deref().map_or_else(|| "another run".to_owned(), |o| format!("run {o}"))
    )]
    ClaimTakenOver {
        /// The batch.
        batch_id: String,
        /// The run that holds the lane now (`host/pid/run`), when known.
        by: Option<String>,
    },

    /// Another flow holds the nonce: signing it again would make two transactions that
    /// can both be mined.
    #[error(
        "nonce {nonce} of {address} on chain {chain_id} is reserved by flow {by}: resume that \
         flow instead of signing a second transaction"
    )]
    NonceReserved {
        /// The sender.
        address: alloy_primitives::Address,
        /// The chain.
        chain_id: u64,
        /// The nonce.
        nonce: u64,
        /// The flow holding it.
        by: String,
    },

    /// A flow here signed (or holds) the nonce the new transaction has: a second
    /// transaction at it could be mined instead of the first. The message names the flow
    /// and the ways on: for a signed flow the three ([`crate::Flows::resume`],
    /// [`crate::Flows::replace`] with a replacement or a cancel); for one that waits for
    /// the offline signer (`awaits`), that signature.
    #[error("{}", held_text(*nonce, address, *chain_id, by, *state, tx_hash, awaits.as_ref()))]
    NonceHeld {
        /// The sender.
        address: alloy_primitives::Address,
        /// The chain.
        chain_id: u64,
        /// The nonce.
        nonce: u64,
        /// The flow holding it.
        by: String,
        /// Where that flow stands.
        state: crate::FlowState,
        /// Its transaction's hash, when it signed.
        tx_hash: String,
        /// What that flow waits for, when it is the offline signer (nothing to resume,
        /// replace or cancel here).
        awaits: Option<Awaits>,
    },

    /// The node's chain is not the one this journal's flows of that chain id were
    /// journaled on (block 0 differs): a reset testnet, a restarted sandbox.
    #[error(
        "chain {chain_id} was reset since its flows were journaled (its block 0 was {journaled}, \
         the node's is {found}): the journal's nonces for it belong to the old chain; \
         retiring those flows in the journal goes on with the new chain"
    )]
    ChainReset {
        /// The chain id.
        chain_id: u64,
        /// Block 0's hash as journaled.
        journaled: String,
        /// Block 0's hash as the node reports it.
        found: String,
    },

    /// The keystore's signing log recorded another block 0 for this chain than the
    /// node's (with its keys' signatures, or their record of a reset): the chain was reset
    /// since, whatever this journal says, and the keys' nonces there belong to the old
    /// chain until each key records the reset.
    #[error(
        "chain {chain_id} was reset since this keystore's keys signed on it (the signing \
         log recorded block 0 {logged}, the node's is {found}): each key records the reset \
         in the signing log before it signs there again"
    )]
    ChainResetInLog {
        /// The chain id.
        chain_id: u64,
        /// Block 0 as the signing log recorded it.
        logged: alloy_primitives::B256,
        /// Block 0 as the node reports it.
        found: alloy_primitives::B256,
    },

    /// A node answered for another chain than the one it is named for (its `eth_chainId`):
    /// a profile whose side-chain URL is the main chain's node, a wallet's provider for
    /// the wrong network. Refused before any answer of it is used, so before anything
    /// is signed.
    #[error(
        "the node named for chain {chain_id} ({setting}) serves chain {found}: a node is \
         believed only for its own chain; nothing was signed"
    )]
    NodeOnWrongChain {
        /// The chain it is named for.
        chain_id: u64,
        /// The chain its `eth_chainId` names.
        found: u64,
        /// Where it is named: the profile setting (`side_rpc_url`), or the embedder's
        /// node.
        setting: String,
    },

    /// A chain reset was not believed: a witness says the chain is still the one the
    /// journal's flows and the log's signatures are for (nothing was changed).
    #[error("chain {chain_id} was not reset: {why}; nothing was changed")]
    NotReset {
        /// The chain id.
        chain_id: u64,
        /// Which witness disagreed, and what it said.
        why: String,
    },

    /// `replace` or `cancel` of a flow that has nothing to replace (never signed,
    /// completed, its transaction mined) or at a price that cannot replace it.
    #[error("flow {tx_id} cannot be replaced or cancelled: {why}")]
    CannotReplace {
        /// The flow.
        tx_id: String,
        /// Why, and what to do instead.
        why: String,
    },

    /// A flow waited for its approval past its nonce reservation's lease: the nonce may
    /// have been taken since, so nothing was signed; running it again checks the nonce
    /// again.
    #[error(
        "the reservation of nonce {nonce} for flow {tx_id} ran out ({lease_secs} s) while \
         it waited for approval: nothing was signed; its nonce must be checked again"
    )]
    LeaseExpired {
        /// The flow.
        tx_id: String,
        /// The nonce it had reserved.
        nonce: u64,
        /// The lease, in seconds.
        lease_secs: u64,
    },

    /// Another process is running this batch (it holds the batch's run lock).
    #[error(
        "batch {batch_id} is running in another process (it holds {lock}): a second run \
         would take over its live flows; wait for it to end or stop it first"
    )]
    BatchRunning {
        /// The batch.
        batch_id: String,
        /// The lock file.
        lock: String,
    },

    /// `resume` of a flow that already ended well (completed, or cancelled by its own
    /// cancel): there is nothing to resend.
    #[error(
        "flow {tx_id} already {state}{}: nothing to resend",
        .tx_hash.as_ref().map(|h| format!(" (tx {h})")).unwrap_or_default()
    )]
    AlreadyCompleted {
        /// The flow.
        tx_id: String,
        /// `completed` or `cancelled`.
        state: &'static str,
        /// Its transaction, if it had one.
        tx_hash: Option<String>,
    },

    /// `resume` of a flow that never signed anything and did not stop at its approval
    /// (refused by the checks, the action failed, nothing to sign yet): nothing was
    /// sent, and nothing can be taken up again.
    #[error("flow {tx_id} cannot be resumed (state {state}): {why}")]
    NothingToResume {
        /// The flow.
        tx_id: String,
        /// Where it stands.
        state: &'static str,
        /// Why, and what to do instead.
        why: String,
    },

    /// A flow stopped at its approval (declined, a wrong passphrase, no passphrase
    /// source) with its transaction journaled, unsigned: nothing was sent, and
    /// [`crate::Flows::resume_with_approval`] can check it again and ask again.
    #[error("flow {tx_id} stopped before signing, nothing was sent")]
    StoppedAtApproval {
        /// The flow.
        tx_id: String,
        /// What the approver said.
        #[source]
        source: Box<Error>,
    },

    /// [`crate::Flows::resume`] (which never signs) of a flow that stopped at its
    /// approval: its transaction is journaled but unsigned, and only
    /// [`crate::Flows::resume_with_approval`] can ask for the key again.
    #[error(
        "flow {tx_id} stopped before its transaction was signed: resuming it needs the \
         approver asked again"
    )]
    NeedsApproval {
        /// The flow.
        tx_id: String,
    },

    /// `resume` of a flow that stopped at its approval, whose journaled transaction
    /// no longer has the sender's next nonce (another transaction took it): it is not
    /// signed, and the flow is over.
    #[error(
        "the journaled transaction of flow {tx_id} is out of date and was not signed; \
         run the command again for a new one"
    )]
    Stale {
        /// The flow.
        tx_id: String,
        /// The verifier's refusal.
        #[source]
        source: bridgectl_tx::Error,
    },

    /// The journal's record of a flow contradicts itself; nothing is sent from it.
    #[error("journal record of flow {tx_id} is inconsistent, nothing sent: {reason}")]
    JournalCorrupt {
        /// The flow.
        tx_id: String,
        /// What does not hold.
        reason: String,
    },

    /// A txId prefix that names more than one flow.
    #[error("txId prefix {prefix} names several flows ({}, ...): give more of it", .matches.join(", "))]
    AmbiguousTxId {
        /// The prefix.
        prefix: String,
        /// Some of the flows it names.
        matches: Vec<String>,
    },

    /// A batch that cannot be recorded as given.
    #[error("invalid batch: {0}")]
    InvalidBatch(String),

    /// A batch to be signed whole or not at all had items the checks refused
    /// ([`crate::CheckedBatch::refused`]): nothing was signed.
    #[error("the batch is signed whole or not at all, and its checks refuse {}", batch_refusal(.0, &[]))]
    BatchNotWhole(Vec<RefusedItem>),

    /// A signed batch answers a batch this journal did not prepare for the air gap: there
    /// are no prepared transactions to check it against.
    #[error(
        "batch {0} was not prepared for the air gap in this journal: a signed batch is \
         submitted where its request was prepared"
    )]
    NotPrepared(String),

    /// Items of a batch to record are held by batches recorded before: their ids are
    /// idempotency keys, each run once ([`crate::BatchItem::key`]). Nothing was
    /// recorded. [`crate::HeldItem::one_batch`] names the batch when it holds them all,
    /// as they are.
    #[error(
        "{} of the batch's items were run already, by a batch recorded before (an item id \
         is one payout, run once): {}",
        .0.len(),
        crate::flows::held_list(.0)
    )]
    ItemsHeld(Vec<crate::flows::HeldItem>),

    /// A signed batch (or a step of it) for a prepared batch that was abandoned: its
    /// nonces were given back, and nothing of it is taken in.
    #[error(
        "batch {batch_id} was abandoned at {at}: its nonces were given back, and nothing \
         signed for it is taken in"
    )]
    BatchAbandoned {
        /// The batch.
        batch_id: String,
        /// When it was abandoned (RFC 3339, UTC).
        at: String,
    },

    /// A batch the run would refuse, found before any key is unlocked
    /// ([`crate::Flows::check_batch`]): items the run would refuse (a token balance, a
    /// held nonce, a spending limit, the allowlist, a cap), each with the error a single
    /// flow returns, and senders without the native balance their items' gas needs.
    #[error("the batch would be refused when it runs: {}", batch_refusal(.refused, .short))]
    BatchRefused {
        /// The items the run would refuse.
        refused: Vec<RefusedItem>,
        /// The senders whose native balance is below their items' gas.
        short: Vec<crate::flows::GasNeed>,
    },

    /// The batch's plan is refused before anything runs: a recipient outside the
    /// allowlist, a total above its maximum, a sender short of tokens
    /// ([`crate::BatchPlan::verdict`]).
    #[error(transparent)]
    PlanRefused(Box<crate::flows::PlanRefusal>),

    /// The sender holds less of the token than the flow would move: refused before
    /// anything was executed, built or signed (the chain would revert it).
    #[error(
        "{} holds {}, less than the {} asked for: nothing was executed or signed",
        .0.from, .0.holds, .0.needs
    )]
    BalanceTooLow(Box<crate::flows::ShortSender>),

    /// No batch with this id (or id prefix) in the journal.
    #[error("no batch {0} in the journal")]
    NoSuchBatch(String),

    /// No flow in the journal has this txId, a txId starting with it, or a signed
    /// transaction with this hash.
    #[error("no flow {0} in the journal")]
    NotInJournal(String),

    /// The signed bundle does not match the request it claims to answer.
    #[error("signed bundle does not match its request: {0}")]
    BundleMismatch(String),

    /// Waiting ran out of time; the flow can be finished later with `resume`.
    #[error("gave up waiting after {seconds}s for {what}{}", not_mined_text(*tx_hash, *not_mined))]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long.
        seconds: u64,
        /// The flow that can be resumed, when the wait belonged to one.
        flow: Option<String>,
        /// Where the chain's node has `tx_hash` when what held the wait up is that it is
        /// not mined: then the way on may be a replacement at a higher gas price, or a
        /// cancel, rather than more waiting.
        not_mined: Option<crate::presence::TxPresence>,
        /// The transaction awaited, when the wait was for one (a receipt, a
        /// redemption): what a script looks up on the chain meanwhile.
        tx_hash: Option<alloy_primitives::B256>,
    },

    /// The user (through the approval callback) declined.
    #[error("declined: {0}")]
    Declined(String),
}

/// Why nothing was signed, by cause: the same on every path, so a wallet matches a
/// refusal once whatever path met it ([`Error::cause`]): a single flow's error, a batch
/// check's or plan's refused item ([`Error::refused_items`],
/// [`crate::BatchCheck::refused`]), a batch run item's error
/// ([`crate::ItemError::flow`]), an offline batch's refused item. Each cause is one
/// error of the crate, whatever the path: [`Error::BalanceTooLow`] for the balance,
/// the verifier's [`Error::Tx`] for a limit, the allowlist and the caps,
/// [`Error::NonceHeld`] (or the verifier's nonce refusal) for the nonce,
/// [`Error::Declined`] and [`Error::Unlock`] for the approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RefusalCause {
    /// The sender holds less of the token than it moves ([`Error::BalanceTooLow`]).
    Balance,
    /// A spending limit of the policy ([`bridgectl_tx::Error::Limit`]).
    Limit,
    /// A destination outside the policy's allowlist
    /// ([`bridgectl_tx::Field::Destination`]).
    Allowlist,
    /// A gas cap: the gas price, the gas limit or the fee ([`bridgectl_tx::Field::GasPrice`],
    /// [`bridgectl_tx::Field::GasLimit`], [`bridgectl_tx::Field::MaxFee`]).
    GasCap,
    /// The nonce: held by another flow here ([`Error::NonceHeld`],
    /// [`Error::NonceReserved`]), signed already or not the next one (the verifier's
    /// and the signing log's refusals of it).
    Nonce,
    /// No approval: the approver declined ([`Error::Declined`]), its key did not unlock
    /// ([`Error::Unlock`]), it failed ([`Error::Approval`]), or no key was given for the
    /// sender ([`Error::NoSigner`]).
    Approval,
    /// Any other check of what would be signed (its contract, function, arguments,
    /// chain, value) or guard of the flows (a chain reset, a bundle that is not its
    /// request).
    Other,
}

/// An item the run would refuse. It carries the crate's [`Error`] and
/// [`Error::BatchRefused`] carries it, so it is defined beside the error (no module of the
/// batch reaches back into the error's).
#[derive(Debug, Clone)]
pub struct RefusedItem {
    /// Its position in the batch (0-based).
    pub index: usize,
    /// Its id.
    pub id: String,
    /// Its sender.
    pub from: Address,
    /// The refusal, typed: the very error a single flow returns for the same cause
    /// ([`Error::BalanceTooLow`], [`Error::NonceHeld`], the verifier's
    /// [`Error::Tx`] for a limit, the allowlist or a cap), matched the same way
    /// ([`Error::cause`], [`Error::refusal`]). Shared, so the refusal can
    /// be cloned with the plan.
    pub error: std::sync::Arc<Error>,
    /// The same refusal as a report line (with what the batch's earlier items count
    /// toward a limit), like [`crate::ItemResult::error`].
    pub reason: String,
}

impl RefusedItem {
    /// An item refused with `error`, its reason the error's chain.
    pub fn new(index: usize, id: String, from: Address, error: Error) -> RefusedItem {
        RefusedItem {
            index,
            id,
            from,
            reason: chain(&error),
            error: std::sync::Arc::new(error),
        }
    }

    /// An item refused for `reason`, a refusal known only by its words (an offline
    /// signer's, a check of signed bytes): typed as a plain refusal.
    pub fn described(index: usize, id: String, from: Address, reason: String) -> RefusedItem {
        RefusedItem {
            index,
            id,
            from,
            error: std::sync::Arc::new(Error::Tx(bridgectl_tx::Error::Refused(reason.clone()))),
            reason,
        }
    }
}

/// What a flow that holds a nonce unsigned waits for ([`Error::NonceHeld`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Awaits {
    /// The signed bundle of the sign request it wrote for the offline signer.
    SignRequest,
    /// The signed batch of the batch `batch_id` prepared for the offline signer, which
    /// holds its nonces until it is submitted or abandoned.
    PreparedBatch {
        /// The batch.
        batch_id: String,
    },
}

fn held_text(
    nonce: u64,
    address: &alloy_primitives::Address,
    chain_id: u64,
    by: &str,
    state: crate::FlowState,
    tx_hash: &str,
    awaits: Option<&Awaits>,
) -> String {
    let held = format!("nonce {nonce} of {address} on chain {chain_id} is held by flow {by}");
    match awaits {
        Some(Awaits::SignRequest) => format!(
            "{held}, whose sign request waits for the offline signer: signing it offline and \
             submitting its bundle uses the nonce; a request that is never signed frees it \
             when its reservation's lease runs out"
        ),
        Some(Awaits::PreparedBatch { batch_id }) => format!(
            "{held}, an item of batch {batch_id} prepared for the offline signer: the batch \
             holds its nonces until its signed batch is submitted, or it is abandoned"
        ),
        None => {
            format!(
                "{held} ({}, transaction {tx_hash}): resuming it sends it again; if it \
             cannot be mined (no gas for fees, under-priced), replacing it signs it again at \
             a higher gas price, or cancelling it uses the nonce up with a 0-value transfer \
             to itself",
                state.as_str()
            )
        }
    }
}

fn not_mined_text(
    tx_hash: Option<alloy_primitives::B256>,
    not_mined: Option<crate::presence::TxPresence>,
) -> String {
    match (tx_hash, not_mined) {
        (Some(hash), Some(presence)) => format!(
            ": transaction {hash} is not mined ({})",
            presence.describe()
        ),
        _ => String::new(),
    }
}

impl From<crate::flows::PlanRefusal> for Error {
    fn from(refusal: crate::flows::PlanRefusal) -> Self {
        Error::PlanRefused(Box::new(refusal))
    }
}

/// How many refused items [`Error::BatchRefused`] names; the rest are counted.
const REFUSED_ITEMS_NAMED: usize = 5;

fn batch_refusal(refused: &[RefusedItem], short: &[crate::flows::GasNeed]) -> String {
    let mut parts: Vec<String> = refused
        .iter()
        .take(REFUSED_ITEMS_NAMED)
        .map(|r| format!("item {:?} from {}: {}", r.id, r.from, r.reason))
        .collect();
    if refused.len() > REFUSED_ITEMS_NAMED {
        parts.push(format!(
            "{} more items refused",
            refused.len() - REFUSED_ITEMS_NAMED
        ));
    }
    parts.extend(short.iter().map(|g| {
        format!(
            "{} has {} wei for gas on chain {} and its {} items need up to {} wei ({} gas at \
             {} wei); fund it with the chain's native coin",
            g.from,
            g.balance.unwrap_or_default(),
            g.chain_id,
            g.items,
            g.needed,
            g.gas,
            g.gas_price
        )
    }));
    parts.join("; ")
}

/// The cause of a refusal of the transaction layer, `None` for a failure that is none.
fn tx_cause(e: &bridgectl_tx::Error) -> Option<RefusalCause> {
    use bridgectl_tx::Field;
    if !e.is_refusal() {
        return None;
    }
    Some(match e {
        bridgectl_tx::Error::Limit { .. } => RefusalCause::Limit,
        bridgectl_tx::Error::NonceSigned { .. } | bridgectl_tx::Error::NonceWatermark { .. } => {
            RefusalCause::Nonce
        }
        _ => match e.refused_field() {
            Some(Field::Destination(_)) => RefusalCause::Allowlist,
            Some(Field::GasPrice | Field::GasLimit | Field::MaxFee) => RefusalCause::GasCap,
            Some(Field::Nonce) => RefusalCause::Nonce,
            _ => RefusalCause::Other,
        },
    })
}

impl Error {
    /// Why nothing was signed, by cause ([`RefusalCause`]), seeing through a flow
    /// stopped at its approval and a stale resumed transaction: the one match a wallet
    /// writes for every path. `None` for an error that is no refusal (a network
    /// failure, a timeout, a batch refused as a whole: see [`Error::refused_items`]).
    pub fn cause(&self) -> Option<RefusalCause> {
        match self {
            Error::BalanceTooLow(_) => Some(RefusalCause::Balance),
            Error::NonceReserved { .. } | Error::NonceHeld { .. } => Some(RefusalCause::Nonce),
            Error::Declined(_) | Error::Unlock(_) | Error::Approval(_) | Error::NoSigner { .. } => {
                Some(RefusalCause::Approval)
            }
            Error::StoppedAtApproval { source, .. } => source.cause(),
            Error::Tx(e) | Error::Stale { source: e, .. } => tx_cause(e),
            Error::BatchRefused { .. } | Error::BatchNotWhole(_) | Error::PlanRefused(_) => None,
            e if e.is_refusal() => Some(RefusalCause::Other),
            _ => None,
        }
    }

    /// The refused items of a batch refused before anything ran ([`Error::BatchRefused`],
    /// [`Error::BatchNotWhole`]), each with the error a single flow returns for its
    /// cause ([`crate::RefusedItem::error`]); empty for every other error.
    pub fn refused_items(&self) -> &[RefusedItem] {
        match self {
            Error::BatchRefused { refused, .. } | Error::BatchNotWhole(refused) => refused,
            _ => &[],
        }
    }

    /// An approver's failure to unlock its key ([`Error::Unlock`]), e.g.
    /// `keystore.unlock_async(..).await.map_err(Error::unlock_failed)?`.
    pub fn unlock_failed(err: impl std::error::Error + Send + Sync + 'static) -> Error {
        Error::Unlock(Box::new(err))
    }

    /// The approver's own error when it could not unlock its key ([`Error::Unlock`]),
    /// seeing through a flow stopped at its approval: downcast it to the keystore's
    /// error type (`bridgectl_keystore::Error`). `None` for every other error.
    pub fn unlock(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        match self {
            Error::Unlock(e) => Some(e.as_ref()),
            Error::StoppedAtApproval { source, .. } => source.unlock(),
            _ => None,
        }
    }

    /// Whether the key could not be unlocked because the passphrase was wrong (or its
    /// file was modified): the keystore's error carries [`crate::WrongSecret`] in its
    /// `source()` chain. Nothing was signed; asking for the passphrase again and
    /// [`crate::Flows::resume_with_approval`] takes the flow up where it stopped.
    ///
    /// Only bridgectl's keystore says so this way. A key unlocked by alloy's own
    /// keystore support (`LocalSigner::decrypt_keystore`) fails a wrong password with
    /// alloy's error, which carries no [`crate::WrongSecret`]: walk `source()` from this
    /// error and downcast each cause to `alloy_signer_local::LocalSignerError` (a MAC
    /// mismatch of its keystore error is the wrong password).
    pub fn is_wrong_passphrase(&self) -> bool {
        self.unlock()
            .is_some_and(|e| bridgectl_secret::is_wrong_secret(e))
    }

    /// What the approver said when it declined ([`Error::Declined`]), seeing through a
    /// flow stopped at its approval. `None` for every other error.
    pub fn declined(&self) -> Option<&str> {
        match self {
            Error::Declined(why) => Some(why),
            Error::StoppedAtApproval { source, .. } => source.declined(),
            _ => None,
        }
    }

    /// The flow that stopped at its approval (declined, a key not unlocked), unsigned,
    /// its transaction journaled: the txId [`crate::Flows::resume_with_approval`] takes.
    pub fn stopped_flow(&self) -> Option<&str> {
        match self {
            Error::StoppedAtApproval { tx_id, .. } => Some(tx_id),
            _ => None,
        }
    }

    /// This error, naming flow `tx_id` where it is a wait that ran out without naming one
    /// (so that it says which flow to resume).
    pub fn for_flow(self, tx_id: &str) -> Error {
        match self {
            Error::Timeout {
                what,
                seconds,
                flow: None,
                not_mined,
                tx_hash,
            } => Error::Timeout {
                what,
                seconds,
                flow: Some(tx_id.to_owned()),
                not_mined,
                tx_hash,
            },
            other => other,
        }
    }

    /// 5xx from the platform: the request may be retried if it is retry-safe.
    pub fn is_server_error(&self) -> bool {
        matches!(self, Error::Platform { error, .. } if error.status >= 500)
    }

    /// A failure that may go away by itself: a 5xx, a timeout, a refused or reset
    /// connection.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Platform { error, .. } => error.status >= 500,
            Error::Http { .. } | Error::Node { .. } => true,
            Error::Body { source, .. } => matches!(source, crate::http::BodyError::Read(_)),
            _ => false,
        }
    }

    /// The refusal of the transaction's checks inside this error, seeing through the
    /// flow's wrappers (a flow stopped at its approval, a stale resumed transaction):
    /// what a wallet matches on (with [`bridgectl_tx::Error::refused_field`]). `None`
    /// when nothing was refused (a network failure, a timeout, a declined approval).
    pub fn refusal(&self) -> Option<&bridgectl_tx::Error> {
        match self {
            Error::Tx(e) | Error::Stale { source: e, .. } if e.is_refusal() => Some(e),
            Error::StoppedAtApproval { source, .. } => source.refusal(),
            _ => None,
        }
    }

    /// Whether the transaction was refused by the checks (see [`Error::refusal`]), or
    /// by a guard of the flows (a nonce held by another flow, a chain reset, a bundle
    /// that is not its request): nothing was signed, and trying again unchanged is
    /// refused again.
    pub fn is_refusal(&self) -> bool {
        self.refusal().is_some()
            || matches!(
                self,
                Error::NonceReserved { .. }
                    | Error::NonceHeld { .. }
                    | Error::ChainReset { .. }
                    | Error::ChainResetInLog { .. }
                    | Error::NodeOnWrongChain { .. }
                    | Error::NotReset { .. }
                    | Error::BundleMismatch(_)
                    | Error::BatchRefused { .. }
                    | Error::BatchNotWhole(_)
                    | Error::NotPrepared(_)
                    | Error::ItemsHeld(_)
                    | Error::BatchAbandoned { .. }
                    | Error::CannotReplace { .. }
                    | Error::BalanceTooLow(_)
                    | Error::PlanRefused(_)
            )
    }

    /// The platform's error code, if this is an error envelope.
    pub fn platform_code(&self) -> Option<&str> {
        match self {
            Error::Platform { error, .. } => Some(&error.code),
            _ => None,
        }
    }
}

/// An answer the platform gave that is an error envelope (or an HTTP error without one).
#[derive(Debug, Clone, Serialize)]
pub struct PlatformError {
    /// HTTP status.
    pub status: u16,
    /// The platform's string code, e.g. `NONCE_TOO_LOW`; `HTTP_<status>` when the body
    /// was not an envelope.
    pub code: String,
    /// The platform's message.
    pub message: String,
}

impl std::fmt::Display for PlatformError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} (HTTP {})", self.code, self.message, self.status)
    }
}

#[cfg(test)]
mod refusal_tests {
    use super::Error;
    use bridgectl_tx::{CheckedBy, Field};

    /// A wallet matches the refused field through the flow's wrappers.
    #[test]
    fn the_refused_field_is_typed_and_seen_through_wrappers() {
        let policy = |field: &str| bridgectl_tx::Error::Policy {
            by: CheckedBy::Intent,
            field: Field::parse(field),
            kind: bridgectl_tx::Expectation::Pinned,
            expected: "x".into(),
            found: "y".into(),
        };
        let wrapped = Error::StoppedAtApproval {
            tx_id: "t".into(),
            source: Box::new(Error::Tx(policy("args._amount"))),
        };
        match wrapped
            .refusal()
            .and_then(bridgectl_tx::Error::refused_field)
        {
            Some(Field::Arg(name)) => assert_eq!(name, "_amount"),
            other => panic!("expected the _amount argument, got {other:?}"),
        }
        assert!(wrapped.is_refusal());
        let stale = Error::Stale {
            tx_id: "t".into(),
            source: policy("nonce"),
        };
        assert_eq!(
            stale.refusal().and_then(bridgectl_tx::Error::refused_field),
            Some(Field::Nonce)
        );
        for (text, field) in [
            ("chainId", Field::ChainId),
            ("maxFee (gasLimit x gasPrice)", Field::MaxFee),
            ("destination (_to)", Field::Destination("_to".into())),
            ("something new", Field::Other("something new".into())),
        ] {
            assert_eq!(Field::parse(text), field);
            assert_eq!(field.to_string(), text, "shown as it reads back");
        }
        let timeout = Error::Timeout {
            what: "x".into(),
            seconds: 1,
            flow: None,
            not_mined: None,
            tx_hash: None,
        };
        assert!(timeout.refusal().is_none() && !timeout.is_refusal());
    }

    /// What a wallet matches: every refusal kind the flows return, named by a match
    /// on the variant (a new kind makes this test name it), each a refusal and none
    /// declined or a failed unlock.
    #[test]
    fn every_refusal_kind_is_matched_and_is_a_refusal() {
        use crate::flows::{GasNeed, PlanRefusal, RefusedItem, ShortSender, Tokens};
        use alloy_primitives::{Address, B256, U256};
        let limit = || bridgectl_tx::Error::Limit {
            limit: "10 ST per 24h".into(),
            total: "9".into(),
            attempted: "2".into(),
        };
        let tokens = |n: u64| Tokens {
            amount: U256::from(n),
            symbol: "ST".into(),
            decimals: 0,
        };
        let refusals = vec![
            Error::Tx(limit()),
            Error::NonceReserved {
                address: Address::ZERO,
                chain_id: 1,
                nonce: 0,
                by: "t".into(),
            },
            Error::NonceHeld {
                address: Address::ZERO,
                chain_id: 1,
                nonce: 0,
                by: "t".into(),
                state: crate::FlowState::Signed,
                tx_hash: "0x".into(),
                awaits: None,
            },
            Error::ChainReset {
                chain_id: 1,
                journaled: "a".into(),
                found: "b".into(),
            },
            Error::ChainResetInLog {
                chain_id: 1,
                logged: B256::ZERO,
                found: B256::ZERO,
            },
            Error::NotReset {
                chain_id: 1,
                why: "x".into(),
            },
            Error::NodeOnWrongChain {
                chain_id: 2,
                found: 1,
                setting: "side_rpc_url".into(),
            },
            Error::BundleMismatch("x".into()),
            Error::BatchRefused {
                refused: vec![RefusedItem {
                    index: 0,
                    id: "a".into(),
                    from: Address::ZERO,
                    error: std::sync::Arc::new(Error::Tx(limit())),
                    reason: limit().to_string(),
                }],
                short: Vec::<GasNeed>::new(),
            },
            Error::CannotReplace {
                tx_id: "t".into(),
                why: "x".into(),
            },
            Error::BalanceTooLow(Box::new(ShortSender {
                from: Address::ZERO,
                needs: tokens(2),
                holds: tokens(1),
            })),
            PlanRefusal::AboveMaxTotal {
                total: tokens(2),
                max: tokens(1),
            }
            .into(),
        ];
        for e in &refusals {
            let kind = match e {
                Error::Tx(bridgectl_tx::Error::Limit { .. }) => "limit",
                Error::NonceReserved { .. } | Error::NonceHeld { .. } => "nonce",
                Error::ChainReset { .. } | Error::ChainResetInLog { .. } => "reset",
                Error::NotReset { .. } => "not reset",
                Error::NodeOnWrongChain { .. } => "wrong node",
                Error::BundleMismatch(_) => "bundle",
                Error::BatchRefused { refused, .. } => {
                    // The item's refusal is typed, not only text.
                    assert!(matches!(
                        *refused[0].error,
                        Error::Tx(bridgectl_tx::Error::Limit { .. })
                    ));
                    assert_eq!(refused[0].error.cause(), Some(super::RefusalCause::Limit));
                    "batch"
                }
                Error::CannotReplace { .. } => "replace",
                Error::BalanceTooLow(short) => {
                    assert!(short.holds.amount < short.needs.amount);
                    "balance"
                }
                Error::PlanRefused(plan) => match **plan {
                    PlanRefusal::AboveMaxTotal { .. } => "plan",
                },
                other => panic!("not a refusal kind: {other:?}"),
            };
            assert!(e.is_refusal(), "{kind}: {e}");
            assert!(e.declined().is_none() && e.unlock().is_none(), "{kind}");
            assert!(!e.is_wrong_passphrase(), "{kind}");
        }
    }

    /// A wrong passphrase is found three ways through a flow stopped at its approval:
    /// [`Error::is_wrong_passphrase`], [`Error::unlock`] downcast to the keystore's
    /// error, and a walk of `source()` that downcasts each cause.
    #[test]
    fn a_wrong_passphrase_is_found_by_walking_the_source_chain() {
        let keystore = bridgectl_keystore::Error::WrongPassphrase {
            path: "key.json".into(),
            source: bridgectl_secret::WrongSecret,
        };
        let err = Error::StoppedAtApproval {
            tx_id: "t".into(),
            source: Box::new(Error::unlock_failed(keystore)),
        };
        assert!(err.is_wrong_passphrase());
        assert_eq!(err.stopped_flow(), Some("t"));
        assert!(
            err.unlock()
                .and_then(|e| e.downcast_ref::<bridgectl_keystore::Error>())
                .is_some_and(bridgectl_keystore::Error::is_wrong_passphrase)
        );
        let mut found = None;
        let mut next: Option<&(dyn std::error::Error + 'static)> = Some(&err);
        while let Some(cause) = next {
            found = found.or(cause.downcast_ref::<bridgectl_keystore::Error>());
            next = cause.source();
        }
        assert!(found.is_some_and(bridgectl_keystore::Error::is_wrong_passphrase));
        // Each cause once: the flow, the unlock, the keystore's words, the marker.
        let text = super::chain(&err);
        assert_eq!(text.matches("wrong passphrase").count(), 1, "{text}");
        assert!(!err.is_refusal() && err.declined().is_none());

        let declined = Error::StoppedAtApproval {
            tx_id: "t".into(),
            source: Box::new(Error::Declined("no".into())),
        };
        assert_eq!(declined.declined(), Some("no"));
        assert!(declined.unlock().is_none() && !declined.is_wrong_passphrase());
        let other = Error::unlock_failed(std::io::Error::other("no terminal"));
        assert!(other.unlock().is_some() && !other.is_wrong_passphrase());
    }
}
