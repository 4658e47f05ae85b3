//! What the journal holds, as the flows and the CLI read it: flow, step, signature and
//! batch records, their stored spellings, and the rows they are read from.

use bridgectl_store::{Error as StoreError, Row};
use serde::Serialize;
use serde_json::Value;

/// The largest step detail or result stored as is: 64 KiB of JSON text. The platform's
/// raw `data` is journaled on every status change, and a server could make each one as
/// large as a response may be ([`bridgectl_http::MAX_BODY_BYTES`]); a larger one is stored
/// as a marker with its size and the start of its text (see [`blob`]).
pub const MAX_BLOB_BYTES: usize = 64 * 1024;

/// How much of an oversized blob's text the marker keeps.
pub(super) const TRUNCATED_HEAD_CHARS: usize = 1024;

/// `value` as stored: its JSON text, or for text over [`MAX_BLOB_BYTES`] the marker
/// `{"truncated": true, "bytes": <size>, "head": "<first 1024 characters>"}`, which is
/// still JSON, so every reader of the journal keeps working.
pub fn blob(value: &Value) -> String {
    let text = value.to_string();
    if text.len() <= MAX_BLOB_BYTES {
        return text;
    }
    serde_json::json!({
        "truncated": true,
        "bytes": text.len(),
        "head": text.chars().take(TRUNCATED_HEAD_CHARS).collect::<String>(),
    })
    .to_string()
}

/// Where a flow stands. Stored as lowercase text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FlowState {
    /// Recorded; nothing sent yet.
    Started,
    /// A transaction action was executed; its answer is recorded.
    Executed,
    /// The raw transaction passed every check against the intent.
    Verified,
    /// Signed; the signed bytes are in the journal and not yet known to be sent.
    Signed,
    /// The platform (or node) accepted the signed transaction.
    Submitted,
    /// What ends the flow was observed (its receipt, its redemption, its credit), and
    /// the chain may still take it back: the flow is [`FlowRecord::ending`] once every
    /// fact it rests on is final on its chain (see `crate::finality`).
    Confirming,
    /// Done: mined, redeemed, credited, and final on its chain.
    Completed,
    /// Ended in failure; see the last step.
    Failed,
    /// Ended by its cancel: a 0-value self-transfer at its nonce was mined instead of
    /// its call (see [`Flows::replace`](crate::Flows::replace)).
    Cancelled,
    /// Its chain was reset after it was journaled ([`Flows::reset_chain`](crate::Flows::reset_chain)): whatever it
    /// signed belongs to a chain that no longer exists, holds no nonce, and is never sent
    /// again.
    Retired,
}

impl FlowState {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            FlowState::Started => "started",
            FlowState::Executed => "executed",
            FlowState::Verified => "verified",
            FlowState::Signed => "signed",
            FlowState::Submitted => "submitted",
            FlowState::Confirming => "confirming",
            FlowState::Completed => "completed",
            FlowState::Failed => "failed",
            FlowState::Cancelled => "cancelled",
            FlowState::Retired => "retired",
        }
    }

    pub(super) fn parse(text: &str) -> FlowState {
        match text {
            "started" => FlowState::Started,
            "executed" => FlowState::Executed,
            "verified" => FlowState::Verified,
            "signed" => FlowState::Signed,
            "submitted" => FlowState::Submitted,
            "confirming" => FlowState::Confirming,
            "completed" => FlowState::Completed,
            "cancelled" => FlowState::Cancelled,
            "retired" => FlowState::Retired,
            _ => FlowState::Failed,
        }
    }
}

/// Why a flow has a signature: its own call, or a deliberate replacement of it at the
/// same nonce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Purpose {
    /// The flow's first signature.
    Original,
    /// The same call again at a higher gas price (`bridgectl replace`).
    Replacement,
    /// A 0-value self-transfer that uses the nonce up instead (`bridgectl cancel`).
    Cancel,
}

impl Purpose {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Original => "original",
            Purpose::Replacement => "replacement",
            Purpose::Cancel => "cancel",
        }
    }

    pub(super) fn parse(text: &str) -> Purpose {
        match text {
            "replacement" => Purpose::Replacement,
            "cancel" => Purpose::Cancel,
            _ => Purpose::Original,
        }
    }
}

/// One signature of a flow ([`Journal::signatures`](super::Journal::signatures)).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignatureRecord {
    /// The signed transaction's hash.
    pub tx_hash: String,
    /// Why it was signed.
    pub purpose: Purpose,
    /// The signed bytes, `0x`-hex.
    pub signed_tx: String,
}

/// What a flow is. Stored as kebab-case text; `resume` dispatches on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlowKind {
    /// ST redeemed into MT.
    Redeem,
    /// MT swapped into ST.
    Swap,
    /// A token transfer signed here.
    Transfer,
    /// A token transfer signed by the platform for a managed account.
    ManagedTransfer,
    /// A transaction action.
    Action,
    /// A signed bundle from the air gap, submitted.
    Submit,
    /// A signature made by the offline signer.
    Sign,
}

impl FlowKind {
    /// Whether a flow of this kind that stopped at its approval (declined, a wrong
    /// passphrase, none to be had) is taken up there, its journaled transaction checked
    /// again as it is: the platform built it (a redeem, an action). A transaction built
    /// here (a swap, a transfer) is built anew, with a fresh nonce and gas price, by
    /// running the command again.
    pub fn resumes_at_approval(self) -> bool {
        matches!(self, FlowKind::Redeem | FlowKind::Action)
    }

    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            FlowKind::Redeem => "redeem",
            FlowKind::Swap => "swap",
            FlowKind::Transfer => "transfer",
            FlowKind::ManagedTransfer => "managed-transfer",
            FlowKind::Action => "action",
            FlowKind::Submit => "submit",
            FlowKind::Sign => "sign",
        }
    }

    pub(super) fn parse(text: &str) -> Option<FlowKind> {
        [
            FlowKind::Redeem,
            FlowKind::Swap,
            FlowKind::Transfer,
            FlowKind::ManagedTransfer,
            FlowKind::Action,
            FlowKind::Submit,
            FlowKind::Sign,
        ]
        .into_iter()
        .find(|k| k.as_str() == text)
    }
}

impl std::fmt::Display for FlowKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One flow as recorded.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FlowRecord {
    /// The txId (UUID v4) that names the flow.
    pub tx_id: String,
    /// What the flow is.
    pub kind: FlowKind,
    /// Where it stands.
    pub state: FlowState,
    /// The signing account.
    pub from: Option<String>,
    /// What the user asked for.
    pub intent: Value,
    /// The raw transaction as received, if any.
    pub raw_tx: Option<Value>,
    /// The signed transaction, 0x hex, once signed.
    pub signed_tx: Option<String>,
    /// Its hash.
    pub tx_hash: Option<String>,
    /// Chain it is for.
    pub chain_id: Option<u64>,
    /// Its nonce.
    pub nonce: Option<u64>,
    /// The last result seen (e.g. the redemption record).
    pub result: Option<Value>,
    /// When the flow began (RFC 3339, UTC).
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
    /// For a flow that is [`FlowState::Confirming`]: the state it ends in once its facts
    /// are final (`completed`, `failed`, `cancelled`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ending: Option<FlowState>,
    /// The host that began it ([`Journal::with_host`](super::Journal::with_host)); none
    /// for flows journaled before hosts were recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// One step of a flow.
#[derive(Debug, Clone, Serialize)]
pub struct StepRecord {
    /// When (RFC 3339, UTC).
    pub at: String,
    /// What happened, e.g. `executed`, `verified`, `signed`, `submit-failed`.
    pub step: String,
    /// Details.
    pub detail: Value,
}

/// A batch as recorded: where its items came from and when.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchRecord {
    /// The batch id (UUID v4).
    pub batch_id: String,
    /// Where the items came from (a file name), for people.
    pub source: String,
    /// When it was created (RFC 3339, UTC).
    pub created_at: String,
    /// How many items it has (`itemCount` in JSON: a batch's status lists its `items`).
    #[serde(rename = "itemCount")]
    pub items: usize,
}

/// One item of a batch: what it asks for and the flow that carries it out now.
#[derive(Debug, Clone)]
pub struct BatchItemRecord {
    /// Position in the batch (0-based, the order of the input).
    pub index: usize,
    /// The item's id (from the input, or its line number).
    pub item_id: String,
    /// The operation, as the flows' batch module stores it.
    pub op: Value,
    /// The txId of its current flow: assigned when the batch is created, replaced when a
    /// flow that never signed is run again.
    pub tx_id: String,
    /// How many flows the item has had (1 unless a resume ran it again).
    pub attempt: u32,
    /// Its current flow, once begun.
    pub flow: Option<FlowRecord>,
}

pub(super) const COLUMNS: &str = "tx_id, kind, state, from_addr, intent, raw_tx, signed_tx, tx_hash, \
                       chain_id, nonce, result, created_at, updated_at, ending, host";

pub(super) fn json_col(text: Option<String>) -> Option<Value> {
    text.map(|t| serde_json::from_str(&t).unwrap_or(Value::String(t)))
}

pub(super) fn row_to_record(r: &Row) -> Result<FlowRecord, StoreError> {
    row_to_record_at(r, 0)
}

/// A flow record from the [`COLUMNS`] of row `r` starting at column `at`.
pub(super) fn row_to_record_at(r: &Row, at: usize) -> Result<FlowRecord, StoreError> {
    let kind: String = r.get(at + 1)?;
    let state: String = r.get(at + 2)?;
    let intent: String = r.get(at + 4)?;
    let nonce: Option<String> = r.get(at + 9)?;
    let chain_id: Option<u64> = r.get(at + 8)?;
    Ok(FlowRecord {
        tx_id: r.get(at)?,
        kind: FlowKind::parse(&kind).ok_or_else(|| StoreError::Column {
            index: at + 1,
            reason: format!("a flow kind, found {kind:?}"),
        })?,
        state: FlowState::parse(&state),
        from: r.get(at + 3)?,
        intent: serde_json::from_str(&intent).unwrap_or(Value::String(intent)),
        raw_tx: json_col(r.get(at + 5)?),
        signed_tx: r.get(at + 6)?,
        tx_hash: r.get(at + 7)?,
        chain_id,
        nonce: nonce.and_then(|n| n.parse().ok()),
        result: json_col(r.get(at + 10)?),
        created_at: r.get(at + 11)?,
        updated_at: r.get(at + 12)?,
        ending: r
            .get::<Option<String>>(at + 13)?
            .map(|e| FlowState::parse(&e)),
        host: r.get(at + 14)?,
    })
}

pub(super) fn row_to_batch(r: &Row) -> Result<BatchRecord, StoreError> {
    Ok(BatchRecord {
        batch_id: r.get(0)?,
        source: r.get(1)?,
        created_at: r.get(2)?,
        items: r.get(3)?,
    })
}
