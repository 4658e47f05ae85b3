//! The one error type of the crate.

use alloy_primitives::{Address, B256};

/// Everything that can go wrong while parsing, checking, signing or decoding.
///
/// Every variant except [`Error::Signer`] and [`Error::Json`] is a *refusal* of the
/// input: nothing was signed, and a person has to look at what came in. Messages are
/// lowercase and name the field, what was expected and what was found.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A decimal amount could not be read exactly.
    #[error("invalid amount {input:?}: {reason}")]
    Amount {
        /// The text as given.
        input: String,
        /// Why it was refused.
        reason: String,
    },

    /// The input is not JSON, or JSON bridgectl will not read: a duplicate key, an
    /// integer too large to read exactly, nesting too deep.
    #[error("input is not acceptable JSON: {0}")]
    Json(bridgectl_json::Error),

    /// A JSON object has fields this version does not know. A changed platform format
    /// must be looked at by a person, not signed through.
    #[error("{context}: unknown field(s) {}: refusing a format this version does not know", .fields.join(", "))]
    UnknownFields {
        /// Which object (e.g. `rawTx`).
        context: String,
        /// The unknown field names.
        fields: Vec<String>,
    },

    /// A required field is absent.
    #[error("{context}: missing field `{field}`{}", hint_suffix(.hint))]
    MissingField {
        /// Which object.
        context: String,
        /// The missing field.
        field: String,
        /// What to do about it, if anything useful can be said.
        hint: Option<String>,
    },

    /// A field has the wrong type or an unreadable value.
    #[error("{context}: field `{field}`: expected {expected}, found {found}")]
    InvalidField {
        /// Which object.
        context: String,
        /// The field.
        field: String,
        /// What a valid value looks like.
        expected: String,
        /// What was there (shortened when long).
        found: String,
    },

    /// The chain id is 0: no EIP-155 replay protection is possible.
    #[error("rawTx: chainId is 0: refusing to sign without EIP-155 replay protection")]
    ZeroChainId,

    /// The input's shape is recognised but says something bridgectl will not sign.
    #[error("{0}")]
    Refused(String),

    /// `from` of the transaction is not the address of the key chosen to sign it.
    #[error("from mismatch: the transaction is from {tx_from} but the key is {key}")]
    FromMismatch {
        /// `from` in the transaction.
        tx_from: Address,
        /// The signing key's address.
        key: Address,
    },

    /// A policy or intent check failed.
    #[error("{by} check failed: {field}: expected {expected}, found {found}")]
    Policy {
        /// Where the expectation came from.
        by: CheckedBy,
        /// The field that failed (shown as `chainId`, `gasPrice`, `args._amount`, ...).
        field: Field,
        /// What kind of expectation failed: what a caller matches on (a hint, a
        /// wallet's next step), never the words of `expected`.
        kind: Expectation,
        /// The expected value or bound, in words.
        expected: String,
        /// The value found in the transaction.
        found: String,
    },

    /// Calldata could not be built from a function and its inputs.
    #[error("calldata for {function}: {reason}")]
    Calldata {
        /// The function name.
        function: String,
        /// Why.
        reason: String,
    },

    /// A signed transaction's bytes are not a valid transaction.
    #[error("malformed transaction: {reason}")]
    Malformed {
        /// What is wrong, in terms of the encoding.
        reason: String,
        /// The RLP or EIP-2718 decoder error, when there was one.
        #[source]
        source: Option<alloy_eips::eip2718::Eip2718Error>,
    },

    /// A signed transaction's signature is invalid (v, r or s out of range, or no
    /// public key can be recovered).
    #[error("invalid signature: {0}")]
    InvalidSignature(String),

    /// A spending limit of the policy would be crossed: names the limit, what the
    /// window already holds and what this transaction adds.
    #[error(
        "spending limit {limit}: {total} signed already in the window, {attempted} more \
         would cross it"
    )]
    Limit {
        /// The limit, as the policy states it (`10000 ST per 24h`).
        limit: String,
        /// The window's total so far, from the signing log.
        total: String,
        /// This transaction's amount.
        attempted: String,
    },

    /// The key signed a different transaction with this nonce on this chain already (the
    /// signing log says so, whichever journal or process signed it): two signatures for
    /// one nonce would let whoever holds both choose which one the chain runs.
    #[error(
        "nonce: {key} signed another transaction at nonce {nonce} on chain {chain_id} \
         already (transaction {tx_hash}, signing-log entry {seq}); this one would be a \
         replacement, and one nonce gets one signature: send that transaction (resume its \
         flow, or submit its signed bundle), or sign at the next nonce"
    )]
    NonceSigned {
        /// The signing key.
        key: Address,
        /// The chain.
        chain_id: u64,
        /// The nonce.
        nonce: u64,
        /// The transaction signed at it.
        tx_hash: B256,
        /// Its signing-log entry.
        seq: u64,
    },

    /// The key signed this nonce on this chain already as far as its watermark there
    /// says (the highest nonce it signed, kept beside the signing log and carried by
    /// acknowledgements), but the log holds no entry of it: the entry was lost with a log
    /// that was deleted or restored and then acknowledged, or its row was edited. With
    /// no record of which transaction it was, any transaction there would be a second
    /// signature at the nonce.
    #[error(
        "nonce: {key} signed nonce {nonce} on chain {chain_id} already (its watermark there \
         is nonce {watermark}), and the signing log no longer holds the entry of that \
         signature (lost with an acknowledged log, or edited); one nonce gets one \
         signature: sign at a nonce above the watermark, or replace or cancel the \
         transaction a journal holds at this nonce"
    )]
    NonceWatermark {
        /// The signing key.
        key: Address,
        /// The chain.
        chain_id: u64,
        /// The nonce.
        nonce: u64,
        /// The key's watermark on the chain: the highest nonce it signed there.
        watermark: u64,
    },

    /// The signing log could not be read or written; nothing was signed (or, when
    /// appending failed, the signed bytes were not returned).
    #[error("signing log")]
    Log(#[source] Box<dyn std::error::Error + Send + Sync>),

    /// The signing log says no: it does not reach its kept checkpoint (deleted,
    /// truncated, restored from an older copy), an entry does not hold, or an entry was
    /// signed by a key that is not the store's. Nothing was signed (or, when appending,
    /// the signed bytes were not returned); a person has to look at the log.
    #[error("refusing to sign")]
    LogRefused(#[source] Box<dyn std::error::Error + Send + Sync>),

    /// A signer returned something other than what it was asked to sign (other bytes,
    /// another chain id, another sender, a pre-EIP-155 signature, a log-entry signature
    /// that is not the key's): nothing was logged, returned or sent.
    #[error("the signer signed something else than asked: {0}")]
    SignerMismatch(String),

    /// The signing log moved (another signer appended) while a signer signed an entry
    /// outside its lock, each time it was tried.
    #[error(
        "the signing log kept moving while the signer signed its entry; nothing was signed into it"
    )]
    LogMoved,

    /// The signer failed. With a local key this does not happen in practice.
    #[error("signing failed")]
    Signer(#[source] alloy_signer::Error),
}

fn hint_suffix(hint: &Option<String>) -> String {
    match hint {
        Some(h) => format!(" ({h})"),
        None => String::new(),
    }
}

impl Error {
    /// The field a policy or intent check refused, for a wallet to match on; `None` for
    /// every other error.
    pub fn refused_field(&self) -> Option<Field> {
        match self {
            Error::Policy { field, .. } => Some(field.clone()),
            _ => None,
        }
    }

    /// The kind of expectation a policy or intent check refused, for a wallet to match
    /// on; `None` for every other error.
    pub fn refused_expectation(&self) -> Option<Expectation> {
        match self {
            Error::Policy { kind, .. } => Some(*kind),
            _ => None,
        }
    }

    /// Whether the error is a refusal of the input (as opposed to an internal failure).
    /// The CLI maps refusals to their own exit code.
    pub fn is_refusal(&self) -> bool {
        !matches!(self, Error::Signer(_) | Error::Log(_) | Error::LogMoved)
    }
}

/// Shortens a found value for an error message, so a 1 KiB hex blob does not flood it.
pub(crate) fn shorten(s: &str) -> String {
    const MAX: usize = 80;
    if s.chars().count() <= MAX {
        s.to_owned()
    } else {
        let head: String = s.chars().take(MAX).collect();
        format!("{head}... ({} chars)", s.chars().count())
    }
}

/// Who set an expectation that a transaction failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CheckedBy {
    /// The signer's policy (the profile, the flags): the trust root.
    Policy,
    /// What was asked for (the request's or the flow's intent).
    Intent,
}

impl std::fmt::Display for CheckedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CheckedBy::Policy => "policy",
            CheckedBy::Intent => "intent",
        })
    }
}

/// A field of a transaction a check refused ([`Error::refused_field`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Field {
    /// The chain id.
    ChainId,
    /// The callee.
    To,
    /// The function called (its selector).
    Function,
    /// One argument of the call, by its name (`_amount`).
    Arg(String),
    /// The whole calldata.
    Data,
    /// Native value sent along.
    Value,
    /// The gas limit.
    GasLimit,
    /// The gas price.
    GasPrice,
    /// The most the transaction may cost (gas limit times gas price).
    MaxFee,
    /// The nonce.
    Nonce,
    /// The token the request claimed.
    Token,
    /// A destination of what the call moves, outside the allowlist (the argument named).
    Destination(String),
    /// A field this version does not name otherwise (its text).
    Other(String),
}

impl std::fmt::Display for Field {
    /// The field as a refusal shows it (`chainId`, `args._amount`, ...); [`Field::parse`]
    /// reads it back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Field::ChainId => f.write_str("chainId"),
            Field::To => f.write_str("to"),
            Field::Function => f.write_str("function"),
            Field::Arg(name) => write!(f, "args.{name}"),
            Field::Data => f.write_str("data"),
            Field::Value => f.write_str("value"),
            Field::GasLimit => f.write_str("gasLimit"),
            Field::GasPrice => f.write_str("gasPrice"),
            Field::MaxFee => f.write_str("maxFee (gasLimit x gasPrice)"),
            Field::Nonce => f.write_str("nonce"),
            Field::Token => f.write_str("token"),
            Field::Destination(argument) => write!(f, "destination ({argument})"),
            Field::Other(text) => f.write_str(text),
        }
    }
}

impl Field {
    /// The typed field of a refusal's text (`chainId`, `args._amount`, ...), as
    /// [`Field`]'s `Display` writes it.
    pub fn parse(text: &str) -> Field {
        if let Some(name) = text.strip_prefix("args.") {
            return Field::Arg(name.to_owned());
        }
        if let Some(rest) = text.strip_prefix("destination (") {
            return Field::Destination(rest.trim_end_matches(')').to_owned());
        }
        match text {
            "chainId" => Field::ChainId,
            "to" => Field::To,
            "function" => Field::Function,
            "data" => Field::Data,
            "value" => Field::Value,
            "gasLimit" => Field::GasLimit,
            "gasPrice" => Field::GasPrice,
            "nonce" => Field::Nonce,
            "token" => Field::Token,
            t if t.starts_with("maxFee") => Field::MaxFee,
            other => Field::Other(other.to_owned()),
        }
    }
}

/// What kind of expectation a transaction failed ([`Error::Policy`]'s `kind`), whoever
/// set it ([`CheckedBy`]) and whatever the words of `expected`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Expectation {
    /// The value the policy or the intent pins: a chain id, a callee, the calldata, a
    /// function, an argument (or only the arguments asked for).
    Pinned,
    /// What the trust root names: a chain, a contract on it, a contract's token.
    Trusted,
    /// At most a cap: the policy's or the intent's (native value, gas limit, gas price,
    /// fee), or the built-in gas-limit cap.
    AtMost,
    /// No native value, as the policy allows none (it sets no max-value above 0).
    NoValue,
    /// A cap on the gas price (max-gas-price or max-fee, or a node's quote to bound it),
    /// and there was none.
    GasPriceCap,
    /// A destination of the policy's allowlist (allowed-destinations).
    AllowedDestination,
    /// A call whose effects are modelled, as the policy limits spending or keeps an
    /// allowlist (or a selector the policy lists in allow-unmodelled).
    ModelledCall,
    /// The sender's next nonce, as its source says it is.
    NextNonce(NonceSource),
    /// A nonce at or above the journal's floor (nonces below it were signed or reserved
    /// there already).
    AboveJournalFloor,
    /// The nonce of the transaction a replacement replaces.
    ReplacedNonce,
    /// A nonce a block can include (below 2^64-1, EIP-2681).
    IncludableNonce,
    /// A way to check the nonce, and no source named the sender's next one.
    CheckedNonce,
}

/// Where the sender's next nonce was read ([`Expectation::NextNonce`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NonceSource {
    /// Given by the caller.
    Given,
    /// The chain's node (its pending count).
    Node,
    /// The platform's next nonce for the sender.
    Platform,
    /// The journal's count, the only source there was: behind when the key signed
    /// elsewhere since.
    Journal,
}

/// A value written as text that does not read ([`crate::policy::Window`],
/// [`crate::Checkpoint`]): what it was, the text, and the form expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{what} {input:?}: expected {expected}")]
#[non_exhaustive]
pub struct ParseError {
    /// What was being read (`window`, `checkpoint`).
    pub what: &'static str,
    /// The text as given.
    pub input: String,
    /// The form expected.
    pub expected: &'static str,
}
