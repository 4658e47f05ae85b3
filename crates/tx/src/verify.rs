//! THE verifier: every path that signs (online flows, `bridgectl sign`, batch) and every
//! path that sends bytes signed elsewhere (`submit`, `resume`) checks a transaction here,
//! and [`crate::sign_legacy`] accepts only the [`Verified`] this returns. Nothing is
//! unlocked before it passes.
//!
//! Who is trusted for what:
//! - the [`Policy`] (the profile or the flags) is the trust root: which chains and
//!   contracts, which symbols and decimals, which caps;
//! - the [`Intent`] (what the user asked for, or what a sign request claims was asked)
//!   and the [`RawTx`] are claims: both are checked against the policy, and against each
//!   other;
//! - the [`Context`] carries what the caller could find out (the key's address, the
//!   node's gas price, the next nonce from the node, the platform or the journal).
//!
//! Rules that hold everywhere, whatever the policy leaves unset: the sender is the
//! signing key; the chain is one the policy names; the callee is a contract the policy
//! names (or its `expect_to`); no native value unless the policy allows it; a gas limit
//! of at most [`DEFAULT_MAX_GAS_LIMIT`] unless raised; a gas-price cap must exist (the
//! policy's, or [`GAS_PRICE_SANITY_MULTIPLE`] times the node's quote); and the nonce is
//! the sender's next one (neither a gap nor a replacement). Each refusal names the field,
//! what was expected and what was found.

use alloy_primitives::{Address, B256, U256};

use crate::Error;
use crate::calldata::{self, Decoded, Value};
use crate::error::{CheckedBy, Expectation, Field, NonceSource};
use crate::policy::{DEFAULT_MAX_GAS_LIMIT, GAS_PRICE_SANITY_MULTIPLE, Policy};
use crate::rawtx::RawTx;
use crate::request::{Intent, Token};

/// What the caller knows beyond the policy.
#[derive(Clone, Debug)]
pub struct Context {
    /// The address of the key that will sign (or that signed).
    pub signer: Address,
    /// The gas price the chain's node quotes (`eth_gasPrice`), when a node is known.
    pub gas_price_quote: Option<u128>,
    /// How the nonce is to be checked.
    pub nonce: Nonce,
    /// The signing log's total for the policy's windowed limit on this token
    /// ([`crate::limits::window_query`]), when one applies.
    pub spent: Option<crate::limits::Spent>,
}

/// How the nonce is checked.
#[derive(Clone, Debug)]
pub enum Nonce {
    /// About to sign: the nonce must be the sender's next one.
    Next(NonceFacts),
    /// The bytes were signed before (a bundle from the air gap, the journal on resume):
    /// their nonce was checked when they were signed and is not checked again. A
    /// [`Verified`] made this way cannot be signed.
    AlreadySigned,
    /// A deliberate replacement (a re-priced call or a cancel) of the transaction with
    /// hash `replaces`, which this key signed at `nonce`: the nonce must be exactly that
    /// one. The signing log records the replaced hash with the new entry, and lets this
    /// one signature at a signed nonce through its one-nonce-one-signature guard.
    Replacing {
        /// The nonce of the replaced transaction.
        nonce: u64,
        /// The replaced transaction's hash.
        replaces: B256,
    },
}

/// What is known of the sender's next nonce. The first source present decides: a nonce
/// given by the person, the node's pending count, the platform's next nonce; the journal
/// is a floor under all of them (a nonce signed or reserved here is never signed again).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NonceFacts {
    /// Given by the person, who knows the sender's next nonce better than this
    /// journal (the key signed elsewhere).
    pub fixed: Option<u64>,
    /// `eth_getTransactionCount(from, "pending")` from the chain's node.
    pub pending: Option<u64>,
    /// The platform's next-nonce operation.
    pub platform: Option<u64>,
    /// One past the highest nonce signed or reserved in the journal for this sender and
    /// chain; `None` when the journal has none.
    pub journal_next: Option<u64>,
    /// The hash of the chain's block 0 as the node that gave `pending` reports it: the
    /// chain's identity, recorded with the signature in the signing log (a reset chain
    /// keeps its id, never its block 0).
    pub genesis: Option<B256>,
    /// The timestamp of the chain's newest block as that node reports it: the latest
    /// time the chain vouches for, which a spending window's end is held to
    /// ([`crate::limits::read_spent_within`]).
    pub chain_time: Option<u64>,
}

/// A transaction that passed [`verify()`]: the only thing [`crate::sign_legacy`] signs.
/// It carries the facts to show it by, taken from the policy (never from a request).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    raw: RawTx,
    token: Option<Token>,
    chain_name: Option<String>,
    callee_is_token: bool,
    claimed_description: Option<String>,
    caller_pinned: bool,
    pins_call: bool,
    nonce_source: Option<&'static str>,
    replaces: Option<B256>,
    max_fee_cap: Option<U256>,
    spending: Vec<String>,
    window: Option<crate::limits::WindowLimit>,
    auto_approved: Option<usize>,
    genesis: Option<B256>,
}

impl Verified {
    /// Where the key stands against the policy's limits (`last 24h: 2500 ST of 10000
    /// ST ...`), for the summary.
    pub fn spending(&self) -> &[String] {
        &self.spending
    }

    /// The transaction.
    pub fn raw_tx(&self) -> &RawTx {
        &self.raw
    }

    /// The chain's block 0 as the node the nonce was read from reports it
    /// ([`NonceFacts::genesis`]), when one was asked: recorded in the signing log with
    /// the signature.
    pub fn genesis(&self) -> Option<B256> {
        self.genesis
    }

    /// The callee's token (symbol and decimals) as the policy names it.
    pub fn token(&self) -> Option<&Token> {
        self.token.as_ref()
    }

    /// The chain's name as the policy names it.
    pub fn chain_name(&self) -> Option<&str> {
        self.chain_name.as_deref()
    }

    /// The intent's free text: a claim, shown as such, never checked (unless the intent
    /// was built from its caller's own arguments: see [`Verified::described_by_caller`]).
    pub fn claimed_description(&self) -> Option<&str> {
        self.claimed_description.as_deref()
    }

    /// Whether the intent's description is the words of the code that built it from
    /// its caller's own arguments ([`Intent::pinned_by_caller`]: a flow's "redeem 1.5 ST
    /// into MT"), which the checks pinned: shown as what is signed, not as a claim.
    pub fn described_by_caller(&self) -> bool {
        self.caller_pinned
    }

    /// Whether the operator pinned what the call does in advance, rather than only
    /// bounding it by caps: the policy's expectations (the exact calldata, or a function
    /// with every argument), one of its standing approvals ([`Policy::auto_approve`]),
    /// or an intent built from the caller's own arguments
    /// ([`Intent::pinned_by_caller`]: a redeem's amount, an action's function and
    /// inputs as the operator typed them). Signing without a person's confirmation
    /// needs this, online as offline.
    ///
    /// A request's intent never counts here: it comes from the same (possibly
    /// compromised) place as the transaction, so their agreeing proves nothing. It
    /// narrows what is signed, it does not approve it. Nor does a function the platform
    /// chose (an action's function from the platform's list).
    pub fn pins_call(&self) -> bool {
        self.pins_call
    }

    /// The standing approval of the policy that covers this call (its 1-based position
    /// in [`Policy::auto_approve`]), if one does.
    pub fn auto_approved_by(&self) -> Option<usize> {
        self.auto_approved
    }

    /// The windowed spending limit this signature counts against, with what it adds:
    /// [`crate::sign_and_log`] has the log check it again inside its append.
    pub fn window_limit(&self) -> Option<&crate::limits::WindowLimit> {
        self.window.as_ref()
    }

    /// Where the nonce was checked against (`given`, `node`, `platform`, `journal`);
    /// `None` for bytes signed before.
    pub fn nonce_source(&self) -> Option<&'static str> {
        self.nonce_source
    }

    /// The hash of the transaction this one deliberately replaces ([`Nonce::Replacing`]).
    pub fn replaces(&self) -> Option<B256> {
        self.replaces
    }

    /// The context a [`crate::summary::Summary`] needs, from trusted facts only; the
    /// caller adds its own address labels.
    pub fn summary_context(&self) -> crate::summary::SummaryContext {
        let mut ctx = crate::summary::SummaryContext {
            chain_name: self.chain_name.clone(),
            token: self.token.clone(),
            max_fee: self.max_fee_cap,
            spending: self.spending.clone(),
            description: self.claimed_description.clone(),
            description_by_caller: self.caller_pinned,
            ..crate::summary::SummaryContext::default()
        };
        if let (true, Some(t)) = (self.callee_is_token, &self.token) {
            ctx.labels
                .insert(self.raw.to, format!("{} token", t.symbol));
        }
        ctx
    }
}

fn refuse(
    by: CheckedBy,
    field: Field,
    kind: Expectation,
    expected: String,
    found: String,
) -> Error {
    Error::Policy {
        by,
        field,
        kind,
        expected,
        found,
    }
}

/// Checks `raw` against `intent` and `policy` with what `context` knows. Returns the
/// [`Verified`] transaction, or the first refusal. The checks run in this order, each a
/// function of its own below: who signs, what the policy can enforce, where (the chain,
/// the callee, the intent's claims about both), what it may cost, what it does (the
/// intent's call, then the policy's), how much and to whom (limits and allowlist from the
/// log's totals), when (the nonce); then who pinned it.
pub fn verify(
    raw: &RawTx,
    intent: Option<&Intent>,
    policy: &Policy,
    context: &Context,
) -> Result<Verified, Error> {
    check_signer(raw, context)?;
    // A limit or approval the policy cannot enforce is a refusal, not a silent pass.
    crate::limits::check_enforceable(policy)?;
    check_chain(raw, policy)?;
    let contract = check_callee(raw, policy)?;
    let token = contract.and_then(|c| c.token.clone());
    if let Some(i) = intent {
        check_intent_place(raw, i, token.as_ref())?;
    }
    check_cost(raw, policy, context)?;
    let expected_by_intent = intent.map(Policy::from);
    if let Some(p) = &expected_by_intent {
        check_intent_value(raw, p)?;
        check_call(raw, p, CheckedBy::Intent)?;
    }
    check_call(raw, policy, CheckedBy::Policy)?;
    let checked = crate::limits::check(
        policy,
        raw,
        token.as_ref(),
        context.spent.as_ref(),
        !matches!(context.nonce, Nonce::AlreadySigned),
    )?;
    let (nonce_source, replaces) = check_nonce_of(raw, &context.nonce)?;
    // Only the operator pins a call for signing without a question (see `pins_call`):
    // the policy's expectations, a standing approval, or an intent built from its
    // caller's own arguments (a whole call: a function, every argument checked).
    let caller_pinned = intent.is_some_and(|i| i.caller_pinned && i.function.is_some());
    let pins_call = policy.pins_call() || checked.auto_approved.is_some() || caller_pinned;
    Ok(Verified {
        raw: raw.clone(),
        token,
        chain_name: policy.trusted.chains.get(&raw.chain_id).cloned().flatten(),
        callee_is_token: contract.is_some_and(|c| c.token.is_some()),
        claimed_description: intent.and_then(|i| i.description.clone()),
        caller_pinned,
        pins_call,
        nonce_source,
        replaces,
        max_fee_cap: policy.max_fee,
        spending: checked.lines,
        window: checked.window,
        auto_approved: checked.auto_approved,
        genesis: match &context.nonce {
            Nonce::Next(facts) => facts.genesis,
            _ => None,
        },
    })
}

/// Who signs: the key the caller will sign with is the transaction's `from`, and the
/// transaction names a chain (EIP-155: no signature valid on every chain).
fn check_signer(raw: &RawTx, context: &Context) -> Result<(), Error> {
    if raw.from != context.signer {
        return Err(Error::FromMismatch {
            tx_from: raw.from,
            key: context.signer,
        });
    }
    if raw.chain_id == 0 {
        return Err(Error::ZeroChainId);
    }
    Ok(())
}

/// Where, 1: the chain is the one the policy expects, else one the trust root names.
fn check_chain(raw: &RawTx, policy: &Policy) -> Result<(), Error> {
    let trusted = &policy.trusted;
    match policy.expect_chain_id {
        Some(id) if raw.chain_id != id => {
            return Err(refuse(
                CheckedBy::Policy,
                Field::ChainId,
                Expectation::Pinned,
                id.to_string(),
                raw.chain_id.to_string(),
            ));
        }
        Some(_) => {}
        None if !trusted.chains.contains_key(&raw.chain_id) => {
            return Err(refuse(
                CheckedBy::Policy,
                Field::ChainId,
                Expectation::Trusted,
                known_list(
                    "a chain the profile names (main_chain_id, side_chain_id) or the \
                     policy expects (expect-chain-id)",
                    trusted.chains.keys().map(u64::to_string),
                ),
                raw.chain_id.to_string(),
            ));
        }
        None => {}
    }
    Ok(())
}

/// Where, 2: the callee is the contract the policy expects, else one the trust root
/// names on that chain. Returns what the trust root says of it.
fn check_callee<'p>(
    raw: &RawTx,
    policy: &'p Policy,
) -> Result<Option<&'p crate::policy::TrustedContract>, Error> {
    let trusted = &policy.trusted;
    let contract = trusted.find(raw.to, raw.chain_id);
    match policy.expect_to {
        Some(to) if raw.to != to => {
            return Err(refuse(
                CheckedBy::Policy,
                Field::To,
                Expectation::Pinned,
                to.to_string(),
                raw.to.to_string(),
            ));
        }
        Some(_) => {}
        None if contract.is_none() => {
            return Err(refuse(
                CheckedBy::Policy,
                Field::To,
                Expectation::Trusted,
                known_list(
                    &format!(
                        "a contract the profile names on chain {} (mt_contract, \
                         st_contract) or the policy expects (expect-to)",
                        raw.chain_id
                    ),
                    trusted
                        .contracts
                        .iter()
                        .filter(|c| c.chain_id == raw.chain_id)
                        .map(|c| c.address.to_string()),
                ),
                raw.to.to_string(),
            ));
        }
        None => {}
    }
    Ok(contract)
}

/// Where, 3: the intent's claims about the chain, the callee and its token, against the
/// transaction and the trust root.
fn check_intent_place(raw: &RawTx, i: &Intent, token: Option<&Token>) -> Result<(), Error> {
    if let Some(id) = i.chain_id
        && id != raw.chain_id
    {
        return Err(refuse(
            CheckedBy::Intent,
            Field::ChainId,
            Expectation::Pinned,
            id.to_string(),
            raw.chain_id.to_string(),
        ));
    }
    if let Some(to) = i.to
        && to != raw.to
    {
        return Err(refuse(
            CheckedBy::Intent,
            Field::To,
            Expectation::Pinned,
            to.to_string(),
            raw.to.to_string(),
        ));
    }
    if let Some(claimed) = &i.token {
        match token {
            Some(t) if t != claimed => {
                return Err(refuse(
                    CheckedBy::Intent,
                    Field::Token,
                    Expectation::Trusted,
                    format!(
                        "{} with {} decimals (as the profile names {})",
                        t.symbol, t.decimals, raw.to
                    ),
                    format!(
                        "{} with {} decimals claimed by the request",
                        claimed.symbol, claimed.decimals
                    ),
                ));
            }
            // The profile does not know this contract's token: the claim is not
            // used (amounts are shown in base units).
            _ => {}
        }
    }
    Ok(())
}

/// What it may cost: native value, gas limit, gas price (the policy's cap, else a
/// multiple of the node's quote, else refused), fee.
fn check_cost(raw: &RawTx, policy: &Policy, context: &Context) -> Result<(), Error> {
    let max_value = policy.max_value.unwrap_or(U256::ZERO);
    if raw.value > max_value {
        let (kind, expected) = if max_value.is_zero() {
            (
                Expectation::NoValue,
                "0 wei (no bridge call sends native value; a policy allows more with max-value)"
                    .into(),
            )
        } else {
            (Expectation::AtMost, format!("at most {max_value} wei"))
        };
        return Err(refuse(
            CheckedBy::Policy,
            Field::Value,
            kind,
            expected,
            format!("{} wei", raw.value),
        ));
    }
    let max_gas_limit = policy.max_gas_limit.unwrap_or(DEFAULT_MAX_GAS_LIMIT);
    if raw.gas_limit > max_gas_limit {
        return Err(refuse(
            CheckedBy::Policy,
            Field::GasLimit,
            Expectation::AtMost,
            format!("at most {max_gas_limit}"),
            raw.gas_limit.to_string(),
        ));
    }
    let price_cap = match (policy.max_gas_price, context.gas_price_quote) {
        (Some(cap), _) => Some((cap, "policy".to_string())),
        (None, Some(quoted)) => Some((
            quoted.saturating_mul(GAS_PRICE_SANITY_MULTIPLE).max(1),
            format!("{GAS_PRICE_SANITY_MULTIPLE}x the node's gas price {quoted}"),
        )),
        (None, None) => None,
    };
    match &price_cap {
        // A fee cap bounds the price too; with neither, nothing would.
        None if policy.max_fee.is_none() => {
            return Err(refuse(
                CheckedBy::Policy,
                Field::GasPrice,
                Expectation::GasPriceCap,
                "a cap: max-gas-price or max-fee in the profile's policy or the flags (online, \
                 the chain's rpc_url lets the going price be checked)"
                    .into(),
                format!("{} wei with no cap configured", raw.gas_price),
            ));
        }
        Some((cap, why)) if raw.gas_price > *cap => {
            return Err(refuse(
                CheckedBy::Policy,
                Field::GasPrice,
                Expectation::AtMost,
                format!("at most {cap} wei ({why})"),
                format!("{} wei", raw.gas_price),
            ));
        }
        _ => {}
    }
    if let Some(cap) = policy.max_fee {
        let fee = raw.max_fee();
        if fee > cap {
            return Err(refuse(
                CheckedBy::Policy,
                Field::MaxFee,
                Expectation::AtMost,
                format!("at most {cap} wei"),
                format!("{} x {} = {fee} wei", raw.gas_limit, raw.gas_price),
            ));
        }
    }
    Ok(())
}

/// An intent is a bridge call: it never sends native value, whatever the policy allows
/// for transactions without one.
fn check_intent_value(raw: &RawTx, expected_by_intent: &Policy) -> Result<(), Error> {
    if let Some(cap) = expected_by_intent.max_value
        && raw.value > cap
    {
        return Err(refuse(
            CheckedBy::Intent,
            Field::Value,
            Expectation::AtMost,
            format!("{cap} wei (the call asked for sends no native value)"),
            format!("{} wei", raw.value),
        ));
    }
    Ok(())
}

/// When: the nonce, as the context says it is to be checked. 2^64-1 is never valid
/// (EIP-2681: an account's nonce cannot pass it, so no block includes it), whatever a
/// source says the next nonce is. Returns where the nonce was checked from, and the
/// transaction a replacement replaces.
fn check_nonce_of(
    raw: &RawTx,
    nonce: &Nonce,
) -> Result<(Option<&'static str>, Option<B256>), Error> {
    if raw.nonce == u64::MAX {
        return Err(refuse(
            CheckedBy::Policy,
            Field::Nonce,
            Expectation::IncludableNonce,
            "below 2^64-1 (EIP-2681: no transaction with this nonce can be included)".into(),
            raw.nonce.to_string(),
        ));
    }
    Ok(match nonce {
        Nonce::AlreadySigned => (None, None),
        Nonce::Next(facts) => (Some(check_nonce(raw.nonce, facts)?), None),
        Nonce::Replacing { nonce, replaces } if *nonce == raw.nonce => {
            (Some("replacement"), Some(*replaces))
        }
        Nonce::Replacing { nonce, replaces } => {
            return Err(refuse(
                CheckedBy::Policy,
                Field::Nonce,
                Expectation::ReplacedNonce,
                format!("{nonce} (the nonce of {replaces}, the transaction it replaces)"),
                raw.nonce.to_string(),
            ));
        }
    })
}

/// A policy and context that accept exactly `tx` and nothing else: chain, callee,
/// calldata, value, gas limit, gas price and nonce all pinned to its own values. For a
/// transaction the caller built itself and wants signed as it is (tests, benchmarks,
/// cross-checks against other signers); never for one that came from outside, which is
/// what [`verify()`] with the profile's policy is for.
pub fn exactly(tx: &RawTx) -> (Policy, Context) {
    let mut policy = Policy {
        expect_chain_id: Some(tx.chain_id),
        expect_to: Some(tx.to),
        expect_data: Some(tx.data.clone()),
        max_gas_price: Some(tx.gas_price),
        max_value: Some(tx.value),
        max_gas_limit: Some(tx.gas_limit),
        ..Policy::default()
    };
    policy.trusted.chain(tx.chain_id, None);
    let context = Context {
        signer: tx.from,
        gas_price_quote: None,
        nonce: Nonce::Next(NonceFacts {
            fixed: Some(tx.nonce),
            ..NonceFacts::default()
        }),
        spent: None,
    };
    (policy, context)
}

fn known_list(what: &str, known: impl Iterator<Item = String>) -> String {
    let known: Vec<String> = known.collect();
    if known.is_empty() {
        format!("{what}; the profile names none")
    } else {
        format!("{what}: {}", known.join(", "))
    }
}

fn check_nonce(nonce: u64, facts: &NonceFacts) -> Result<&'static str, Error> {
    let wrong = |expected: u64, source: NonceSource| {
        let what = if nonce > expected && source == NonceSource::Journal {
            "a gap by the journal's count; if this key signed elsewhere since (online, \
             another machine), the journal is behind: give the sender's next nonce"
        } else if nonce > expected {
            "a gap: it would sit unmined until the nonces below it are used"
        } else {
            "a replacement of a transaction already sent or signed"
        };
        let from = match source {
            NonceSource::Given => "the nonce given",
            NonceSource::Node => "the node",
            NonceSource::Platform => "the platform",
            NonceSource::Journal => "the journal",
        };
        refuse(
            CheckedBy::Policy,
            Field::Nonce,
            Expectation::NextNonce(source),
            format!("{expected} (the sender's next nonce, from {from})"),
            format!("{nonce}: {what}"),
        )
    };
    let (next, source) = match (facts.fixed, facts.pending, facts.platform) {
        (Some(n), _, _) => (Some(n), NonceSource::Given),
        (None, Some(n), _) => (Some(n), NonceSource::Node),
        (None, None, Some(n)) => (Some(n), NonceSource::Platform),
        (None, None, None) => (None, NonceSource::Journal),
    };
    // The journal is a floor under every source, a nonce given by a person included:
    // a nonce signed here is never signed again.
    if let Some(floor) = facts.journal_next
        && nonce < floor
    {
        return Err(refuse(
            CheckedBy::Policy,
            Field::Nonce,
            Expectation::AboveJournalFloor,
            format!(
                "{} or above (nonces below it were signed or reserved here already)",
                next.map_or(floor, |n| n.max(floor))
            ),
            format!(
                "{nonce}: a replacement of a transaction already signed or reserved in the \
                 journal; resume that flow instead of signing a second one with the same nonce"
            ),
        ));
    }
    match (next, facts.journal_next) {
        (Some(n), _) if nonce != n => Err(wrong(n, source)),
        (Some(_), _) => Ok(match source {
            NonceSource::Node => "node",
            NonceSource::Platform => "platform",
            _ => "given",
        }),
        (None, Some(floor)) if nonce != floor => Err(wrong(floor, source)),
        (None, Some(_)) => Ok("journal"),
        (None, None) => Err(refuse(
            CheckedBy::Policy,
            Field::Nonce,
            Expectation::CheckedNonce,
            "a way to check it: the chain's node, the platform's next nonce, a journal \
             record for this sender, or a nonce given"
                .into(),
            format!("{nonce}, unchecked"),
        )),
    }
}

/// Checks the call (function and arguments) against the expectations of `policy`.
fn check_call(tx: &RawTx, policy: &Policy, by: CheckedBy) -> Result<(), Error> {
    let fail = |field: Field, expected: String, found: String| {
        refuse(by, field, Expectation::Pinned, expected, found)
    };
    if let Some(want) = &policy.expect_data
        && *want != tx.data
    {
        return Err(fail(
            Field::Data,
            crate::error::shorten(&want.to_string()),
            crate::error::shorten(&tx.data.to_string()),
        ));
    }
    if policy.expect_function.is_none() && policy.expect_args.is_empty() && !policy.exact_args {
        return Ok(());
    }
    let call = match calldata::classify(&tx.data) {
        Decoded::Call(c) => c,
        other => {
            let expected = policy
                .expect_function
                .clone()
                .unwrap_or_else(|| "a known function call".into());
            return Err(fail(Field::Function, expected, describe(&other)));
        }
    };
    if let Some(want) = &policy.expect_function {
        let Some(f) = calldata::function_by_name(want) else {
            return Err(fail(
                Field::Function,
                format!("{want} (not a function bridgectl knows)"),
                call.function.signature.to_owned(),
            ));
        };
        if f.selector != call.function.selector {
            return Err(fail(
                Field::Function,
                f.signature.to_owned(),
                call.function.signature.to_owned(),
            ));
        }
    }
    for (name, want_text) in &policy.expect_args {
        let field = Field::Arg(name.clone());
        let Some(param) = call.function.params.iter().find(|p| p.name == name) else {
            return Err(fail(
                field,
                want_text.clone(),
                format!("no such argument in {}", call.function.signature),
            ));
        };
        let want = Value::parse(param.kind, want_text).map_err(|expected| {
            fail(
                field.clone(),
                expected,
                format!("{want_text:?} in the expectation itself"),
            )
        })?;
        let found = call.arg(name).unwrap_or(Value::Uint(U256::ZERO));
        if want != found {
            return Err(fail(field, want.to_string(), found.to_string()));
        }
    }
    if policy.exact_args
        && let Some((param, value)) = call
            .args
            .iter()
            .find(|(p, _)| !policy.expect_args.contains_key(p.name))
    {
        let names: Vec<&str> = policy.expect_args.keys().map(String::as_str).collect();
        return Err(fail(
            Field::Arg(param.name.to_owned()),
            format!("only the arguments asked for ({})", names.join(", ")),
            format!("{} = {value} in {}", param.name, call.function.signature),
        ));
    }
    Ok(())
}

fn describe(d: &Decoded) -> String {
    match d {
        Decoded::Empty => "no calldata".into(),
        Decoded::Call(c) => c.function.signature.to_owned(),
        Decoded::Malformed { function, reason } => {
            format!("malformed {} call ({reason})", function.signature)
        }
        Decoded::Unknown { selector, .. } => {
            format!(
                "unknown selector 0x{}",
                alloy_primitives::hex::encode(selector)
            )
        }
        Decoded::TooShort { len } => format!("{len} bytes of calldata, not a call"),
    }
}

#[cfg(test)]
mod tests;
