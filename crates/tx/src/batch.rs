//! The air gap at batch scale: the two files that cross it, read strictly.
//!
//! - A **batch request** (`bridgectl-batch-request`), written online by `batch prepare`:
//!   every item's unsigned transaction with its intent, the items of each sender in
//!   nonce order, consecutive. What the offline signer verifies, item by item, against
//!   its own profile (the request's words are claims, as a sign request's are).
//! - A **signed batch** (`bridgectl-signed-batch`), written offline by `bridgectl sign`:
//!   each signed item's bytes with the item it answers, the items refused and why, and
//!   the SHA-256 of the request file it was made from.
//!
//! Both are JSON read with `bridgectl-json` (a duplicate key anywhere, an integer too
//! large to read exactly, an unknown field: refused), bounded ([`MAX_BATCH_DOC_BYTES`],
//! [`MAX_BATCH_ITEMS`], the lengths of ids and reasons) before anything else is looked
//! at, and written the same way every time: the header, then one item a line, so that
//! signing a request again gives the same bytes and a person can `grep` a file.

use std::collections::{BTreeMap, HashSet};

use alloy_primitives::{Address, B256, Bytes};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::Error;
use crate::error::shorten;
use crate::rawtx::{RawTx, reject_unknown};
use crate::request::{Intent, request_hash};

/// The `format` of a batch request file.
pub const BATCH_REQUEST_FORMAT: &str = "bridgectl-batch-request";
/// The batch request version this crate writes and reads.
pub const BATCH_REQUEST_VERSION: u64 = 1;
/// The `format` of a signed batch file.
pub const SIGNED_BATCH_FORMAT: &str = "bridgectl-signed-batch";
/// The signed batch version this crate writes and reads.
pub const SIGNED_BATCH_VERSION: u64 = 1;

/// The most items a batch file holds: ten times the thousand one sitting is made for.
pub const MAX_BATCH_ITEMS: usize = 10_000;
/// The largest batch file read: [`MAX_BATCH_ITEMS`] items of about a kilobyte each, with
/// room to spare; anything larger is not a file bridgectl wrote.
pub const MAX_BATCH_DOC_BYTES: usize = 32 << 20;
/// The longest item id (the operator's, from the batch file).
pub const MAX_ID_CHARS: usize = 256;
/// The longest txId or batch id (a UUID is 36).
pub const MAX_TX_ID_CHARS: usize = 64;
/// The longest refusal reason kept in a signed batch.
pub const MAX_REASON_CHARS: usize = 4096;
/// The longest origin field (a URL, a profile name, a file name).
pub const MAX_ORIGIN_CHARS: usize = 2048;

/// Where a batch request came from: for people, and for `batch submit` to find its batch.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BatchOrigin {
    /// The platform the transactions came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The config profile used online.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The batch file the items were read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// When the request was written (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
}

/// One item of a batch request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchRequestItem {
    /// Its position in the online batch (0-based): the bundle names items by it.
    pub index: usize,
    /// The operator's id of the item (from the batch file).
    pub id: String,
    /// The online flow that prepared it.
    pub tx_id: String,
    /// The transaction to sign.
    pub raw_tx: RawTx,
    /// What was asked for: checked against the rawTx like a sign request's intent.
    pub intent: Intent,
}

/// One sender's items in a batch request: on one chain, `items` transactions with the
/// nonces `first_nonce`, `first_nonce + 1`, ... in file order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SenderRange {
    /// The sender.
    #[serde(serialize_with = "crate::rawtx::ser_address")]
    pub from: Address,
    /// The chain.
    pub chain_id: u64,
    /// The nonce of its first item.
    pub first_nonce: u64,
    /// How many items it sends.
    pub items: usize,
}

impl SenderRange {
    /// The nonce of its last item.
    pub fn last_nonce(&self) -> u64 {
        self.first_nonce + (self.items as u64).saturating_sub(1)
    }
}

/// A batch request, as `batch prepare` writes it and `bridgectl sign` reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchRequest {
    /// The online batch it was prepared for.
    pub batch_id: String,
    /// Where it came from.
    pub origin: BatchOrigin,
    /// Each sender's nonce range, in order of first appearance.
    pub senders: Vec<SenderRange>,
    /// The items, in batch order.
    pub items: Vec<BatchRequestItem>,
    /// SHA-256 of the exact file bytes it was read from (or written as).
    pub request_hash: B256,
}

/// Each sender's range of `items`, checking that its nonces are consecutive in order.
pub fn sender_ranges(items: &[BatchRequestItem]) -> Result<Vec<SenderRange>, Error> {
    let mut senders: Vec<SenderRange> = Vec::new();
    for item in items {
        let tx = &item.raw_tx;
        match senders
            .iter_mut()
            .find(|s| s.from == tx.from && s.chain_id == tx.chain_id)
        {
            Some(s) => {
                let expected = s.first_nonce + s.items as u64;
                if tx.nonce != expected {
                    return Err(Error::InvalidField {
                        context: format!("batch request item {}", item.index),
                        field: "rawTx.nonce".into(),
                        expected: format!(
                            "{expected} (the items of {} on chain {} in nonce order, one \
                             after another)",
                            tx.from, tx.chain_id
                        ),
                        found: tx.nonce.to_string(),
                    });
                }
                s.items += 1;
            }
            None => senders.push(SenderRange {
                from: tx.from,
                chain_id: tx.chain_id,
                first_nonce: tx.nonce,
                items: 1,
            }),
        }
    }
    Ok(senders)
}

impl BatchRequest {
    /// A request for `items` (in batch order), its senders' ranges derived from them.
    pub fn new(
        batch_id: String,
        origin: BatchOrigin,
        items: Vec<BatchRequestItem>,
    ) -> Result<BatchRequest, Error> {
        let senders = sender_ranges(&items)?;
        let mut request = BatchRequest {
            batch_id,
            origin,
            senders,
            items,
            request_hash: B256::ZERO,
        };
        request.request_hash = request_hash(&request.to_bytes());
        Ok(request)
    }

    /// The file's bytes: the header, then one item a line. The same request always gives
    /// the same bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let lines = |v: &[&dyn erased::Line]| v.iter().map(|l| l.line()).collect::<Vec<_>>();
        doc_text(
            BATCH_REQUEST_FORMAT,
            BATCH_REQUEST_VERSION,
            &[
                ("batchId", Value::String(self.batch_id.clone()).to_string()),
                ("origin", erased::Line::line(&self.origin)),
            ],
            &[
                (
                    "senders",
                    lines(&self.senders.iter().map(|s| s as _).collect::<Vec<_>>()),
                ),
                (
                    "items",
                    lines(&self.items.iter().map(|i| i as _).collect::<Vec<_>>()),
                ),
            ],
        )
    }

    /// Parses the exact bytes of a batch request file, strictly (see the module doc).
    pub fn parse(bytes: &[u8]) -> Result<BatchRequest, Error> {
        const CTX: &str = "batch request";
        let v = parse_doc(bytes, CTX, BATCH_REQUEST_FORMAT, BATCH_REQUEST_VERSION)?;
        let obj = v.as_object().expect("checked by parse_doc");
        reject_unknown(
            CTX,
            obj,
            &["format", "version", "batchId", "origin", "senders", "items"],
        )?;
        let batch_id = tx_id_field(obj, CTX, "batchId")?;
        let origin: BatchOrigin = match obj.get("origin") {
            None => BatchOrigin::default(),
            Some(o) => typed(
                o,
                CTX,
                "origin",
                "the origin object of the documented schema",
            )?,
        };
        for (field, text) in [
            ("origin.baseUrl", &origin.base_url),
            ("origin.profile", &origin.profile),
            ("origin.source", &origin.source),
            ("origin.createdAt", &origin.created_at),
        ] {
            if let Some(t) = text {
                bounded(CTX, field, t, MAX_ORIGIN_CHARS)?;
            }
        }
        let raw_items = array_field(obj, CTX, "items")?;
        let mut items = Vec::with_capacity(raw_items.len());
        let (mut ids, mut tx_ids) = (HashSet::new(), HashSet::new());
        for (n, raw) in raw_items.iter().enumerate() {
            let ctx = format!("batch request items[{n}]");
            let item = parse_request_item(raw, &ctx)?;
            if let Some(prev) = items.last().map(|i: &BatchRequestItem| i.index)
                && item.index <= prev
            {
                return Err(invalid(
                    &ctx,
                    "index",
                    "indexes in increasing order",
                    item.index,
                ));
            }
            if !ids.insert(item.id.clone()) {
                return Err(invalid(
                    &ctx,
                    "id",
                    "an id no other item has",
                    format!("{:?}", item.id),
                ));
            }
            if !tx_ids.insert(item.tx_id.to_ascii_lowercase()) {
                return Err(invalid(
                    &ctx,
                    "txId",
                    "a txId no other item has",
                    format!("{:?}", item.tx_id),
                ));
            }
            items.push(item);
        }
        let derived = sender_ranges(&items)?;
        let senders: Vec<SenderRange> = match obj.get("senders") {
            Some(s) => typed(s, CTX, "senders", "an array of sender ranges")?,
            None => {
                return Err(Error::MissingField {
                    context: CTX.into(),
                    field: "senders".into(),
                    hint: None,
                });
            }
        };
        if senders != derived {
            return Err(Error::InvalidField {
                context: CTX.into(),
                field: "senders".into(),
                expected: format!(
                    "the senders its items have: {}",
                    serde_json::to_string(&derived).unwrap_or_default()
                ),
                found: shorten(&serde_json::to_string(&senders).unwrap_or_default()),
            });
        }
        Ok(BatchRequest {
            batch_id,
            origin,
            senders,
            items,
            request_hash: request_hash(bytes),
        })
    }
}

fn parse_request_item(v: &Value, ctx: &str) -> Result<BatchRequestItem, Error> {
    let obj = v.as_object().ok_or_else(|| Error::InvalidField {
        context: ctx.into(),
        field: "(item)".into(),
        expected: "an object".into(),
        found: shorten(&v.to_string()),
    })?;
    reject_unknown(ctx, obj, &["index", "id", "txId", "rawTx", "intent"])?;
    let index = index_field(obj, ctx)?;
    let id = string_field(obj, ctx, "id", MAX_ID_CHARS)?;
    let tx_id = tx_id_field(obj, ctx, "txId")?;
    let raw_tx = RawTx::from_value(required(obj, ctx, "rawTx")?)?;
    let intent: Intent = typed(
        required(obj, ctx, "intent")?,
        ctx,
        "intent",
        "the intent object of the documented schema",
    )?;
    if let Some(t) = &intent.token
        && t.decimals > crate::amount::MAX_DECIMALS
    {
        return Err(invalid(
            ctx,
            "intent.token.decimals",
            &format!("0 to {}", crate::amount::MAX_DECIMALS),
            t.decimals,
        ));
    }
    Ok(BatchRequestItem {
        index,
        id,
        tx_id,
        raw_tx,
        intent,
    })
}

/// One signed item of a signed batch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignedBatchItem {
    /// The item's position in the batch (its request item's `index`).
    pub index: usize,
    /// The item's id.
    pub id: String,
    /// The online flow it answers.
    pub tx_id: String,
    /// The signed transaction, `0x` hex.
    pub signed_tx: Bytes,
    /// Its hash.
    pub tx_hash: B256,
    /// The signer.
    #[serde(serialize_with = "crate::rawtx::ser_address")]
    pub from: Address,
    /// The chain id.
    pub chain_id: u64,
    /// The nonce.
    pub nonce: u64,
}

/// An item the offline signer did not sign, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RefusedBatchItem {
    /// The item's position in the batch.
    pub index: usize,
    /// The item's id.
    pub id: String,
    /// Why it was not signed (escaped text, for people).
    pub reason: String,
}

/// A signed batch, as `bridgectl sign` writes it for a batch request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedBatch {
    /// The batch the request was prepared for.
    pub batch_id: String,
    /// SHA-256 of the exact batch request file it was made from.
    pub request_hash: B256,
    /// The signed items, in batch order.
    pub items: Vec<SignedBatchItem>,
    /// The items not signed, in batch order.
    pub refused: Vec<RefusedBatchItem>,
}

/// The top-level fields of a signed batch, as read (the items checked after).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SignedBatchDoc {
    format: String,
    version: u64,
    batch_id: String,
    request_hash: B256,
    items: Vec<SignedBatchItem>,
    refused: Vec<RefusedBatchItem>,
}

impl SignedBatch {
    /// The file's bytes: the header, then one item a line.
    pub fn to_bytes(&self) -> Vec<u8> {
        let lines = |v: &[&dyn erased::Line]| v.iter().map(|l| l.line()).collect::<Vec<_>>();
        doc_text(
            SIGNED_BATCH_FORMAT,
            SIGNED_BATCH_VERSION,
            &[
                ("batchId", Value::String(self.batch_id.clone()).to_string()),
                ("requestHash", format!("\"{}\"", self.request_hash)),
            ],
            &[
                (
                    "items",
                    lines(&self.items.iter().map(|i| i as _).collect::<Vec<_>>()),
                ),
                (
                    "refused",
                    lines(&self.refused.iter().map(|r| r as _).collect::<Vec<_>>()),
                ),
            ],
        )
    }

    /// Parses a signed batch file strictly: its shape and bounds, indexes in increasing
    /// order and each item signed or refused once. Its items' bytes are checked against
    /// their own claims and the prepared batch by the online half
    /// (`bridgectl_flow::airgap`), not here.
    pub fn parse(bytes: &[u8]) -> Result<SignedBatch, Error> {
        const CTX: &str = "signed batch";
        let v = parse_doc(bytes, CTX, SIGNED_BATCH_FORMAT, SIGNED_BATCH_VERSION)?;
        let doc: SignedBatchDoc = serde_json::from_value(v).map_err(|e| Error::InvalidField {
            context: CTX.into(),
            field: "(document)".into(),
            expected: "the signed batch of the documented schema".into(),
            found: shorten(&e.to_string()),
        })?;
        let _ = (doc.format, doc.version);
        if !is_tx_id(&doc.batch_id) {
            return Err(invalid(
                CTX,
                "batchId",
                "a batch id (hex digits and dashes)",
                format!("{:?}", doc.batch_id),
            ));
        }
        if doc.items.len() + doc.refused.len() > MAX_BATCH_ITEMS {
            return Err(invalid(
                CTX,
                "items",
                &format!("at most {MAX_BATCH_ITEMS} items"),
                doc.items.len() + doc.refused.len(),
            ));
        }
        let mut seen = HashSet::new();
        for (n, item) in doc.items.iter().enumerate() {
            let ctx = format!("{CTX} items[{n}]");
            bounded(&ctx, "id", &item.id, MAX_ID_CHARS)?;
            if !is_tx_id(&item.tx_id) {
                return Err(invalid(
                    &ctx,
                    "txId",
                    "a txId (hex digits and dashes)",
                    format!("{:?}", item.tx_id),
                ));
            }
            if n > 0 && item.index <= doc.items[n - 1].index {
                return Err(invalid(
                    &ctx,
                    "index",
                    "indexes in increasing order",
                    item.index,
                ));
            }
            seen.insert(item.index);
        }
        for (n, r) in doc.refused.iter().enumerate() {
            let ctx = format!("{CTX} refused[{n}]");
            bounded(&ctx, "id", &r.id, MAX_ID_CHARS)?;
            bounded(&ctx, "reason", &r.reason, MAX_REASON_CHARS)?;
            if !seen.insert(r.index) {
                return Err(invalid(
                    &ctx,
                    "index",
                    "an item neither signed nor refused elsewhere in the file",
                    r.index,
                ));
            }
        }
        Ok(SignedBatch {
            batch_id: doc.batch_id,
            request_hash: doc.request_hash,
            items: doc.items,
            refused: doc.refused,
        })
    }

    /// The signed items per sender and chain, each list in nonce order.
    pub fn by_sender(&self) -> BTreeMap<(Address, u64), Vec<&SignedBatchItem>> {
        let mut out: BTreeMap<(Address, u64), Vec<&SignedBatchItem>> = BTreeMap::new();
        for item in &self.items {
            out.entry((item.from, item.chain_id))
                .or_default()
                .push(item);
        }
        for list in out.values_mut() {
            list.sort_by_key(|i| i.nonce);
        }
        out
    }
}

/// Reads the document, bounded, and checks its `format` and `version` first.
fn parse_doc(bytes: &[u8], ctx: &str, format: &str, version: u64) -> Result<Value, Error> {
    if bytes.len() > MAX_BATCH_DOC_BYTES {
        return Err(Error::Refused(format!(
            "{ctx}: {} bytes, more than a batch file may have ({MAX_BATCH_DOC_BYTES})",
            bytes.len()
        )));
    }
    let v = bridgectl_json::from_slice(bytes).map_err(Error::Json)?;
    let obj = v.as_object().ok_or_else(|| Error::InvalidField {
        context: ctx.into(),
        field: "(top level)".into(),
        expected: "a JSON object".into(),
        found: shorten(&v.to_string()),
    })?;
    let found = obj.get("format");
    if found.and_then(Value::as_str) != Some(format) {
        return Err(Error::InvalidField {
            context: ctx.into(),
            field: "format".into(),
            expected: format!("{format:?}"),
            found: shorten(&found.map(Value::to_string).unwrap_or_else(|| "none".into())),
        });
    }
    let found = required(obj, ctx, "version")?;
    if found.as_u64() != Some(version) {
        return Err(Error::InvalidField {
            context: ctx.into(),
            field: "version".into(),
            expected: format!("{version} (this bridgectl reads version {version} only)"),
            found: shorten(&found.to_string()),
        });
    }
    if let Some(items) = obj.get("items").and_then(Value::as_array)
        && items.len() > MAX_BATCH_ITEMS
    {
        return Err(invalid(
            ctx,
            "items",
            &format!("at most {MAX_BATCH_ITEMS} items"),
            items.len(),
        ));
    }
    Ok(v)
}

fn invalid(ctx: &str, field: &str, expected: &str, found: impl std::fmt::Display) -> Error {
    Error::InvalidField {
        context: ctx.into(),
        field: field.into(),
        expected: expected.into(),
        found: shorten(&found.to_string()),
    }
}

fn required<'a>(obj: &'a Map<String, Value>, ctx: &str, field: &str) -> Result<&'a Value, Error> {
    obj.get(field).ok_or_else(|| Error::MissingField {
        context: ctx.into(),
        field: field.into(),
        hint: None,
    })
}

fn typed<T: serde::de::DeserializeOwned>(
    v: &Value,
    ctx: &str,
    field: &str,
    expected: &str,
) -> Result<T, Error> {
    serde_json::from_value(v.clone()).map_err(|e| Error::InvalidField {
        context: ctx.into(),
        field: field.into(),
        expected: expected.into(),
        found: shorten(&e.to_string()),
    })
}

fn array_field<'a>(
    obj: &'a Map<String, Value>,
    ctx: &str,
    field: &str,
) -> Result<&'a Vec<Value>, Error> {
    let v = required(obj, ctx, field)?;
    let items = v.as_array().ok_or_else(|| Error::InvalidField {
        context: ctx.into(),
        field: field.into(),
        expected: "an array".into(),
        found: shorten(&v.to_string()),
    })?;
    if items.is_empty() {
        return Err(invalid(ctx, field, "at least one item", "[]"));
    }
    Ok(items)
}

fn string_field(
    obj: &Map<String, Value>,
    ctx: &str,
    field: &str,
    max: usize,
) -> Result<String, Error> {
    let v = required(obj, ctx, field)?;
    let s = v.as_str().ok_or_else(|| Error::InvalidField {
        context: ctx.into(),
        field: field.into(),
        expected: "a string".into(),
        found: shorten(&v.to_string()),
    })?;
    bounded(ctx, field, s, max)?;
    Ok(s.to_owned())
}

fn bounded(ctx: &str, field: &str, s: &str, max: usize) -> Result<(), Error> {
    let chars = s.chars().count();
    if chars == 0 || chars > max {
        return Err(Error::InvalidField {
            context: ctx.into(),
            field: field.into(),
            expected: format!("1 to {max} characters"),
            found: format!("{chars} characters"),
        });
    }
    Ok(())
}

/// A txId or batch id as bridgectl writes them: hex digits and dashes, bounded.
fn is_tx_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_TX_ID_CHARS
        && s.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

fn tx_id_field(obj: &Map<String, Value>, ctx: &str, field: &str) -> Result<String, Error> {
    let s = string_field(obj, ctx, field, MAX_TX_ID_CHARS)?;
    if !is_tx_id(&s) {
        return Err(invalid(
            ctx,
            field,
            "hex digits and dashes (a UUID)",
            format!("{s:?}"),
        ));
    }
    Ok(s)
}

fn index_field(obj: &Map<String, Value>, ctx: &str) -> Result<usize, Error> {
    let v = required(obj, ctx, "index")?;
    v.as_u64()
        .filter(|n| *n < MAX_BATCH_ITEMS as u64 * 100)
        .map(|n| n as usize)
        .ok_or_else(|| Error::InvalidField {
            context: ctx.into(),
            field: "index".into(),
            expected: "the item's position in its batch (a small integer)".into(),
            found: shorten(&v.to_string()),
        })
}

/// A batch file's text: `format` and `version`, then `fields` (each one line of JSON),
/// then `lists` (arrays of one element a line).
fn doc_text(
    format: &str,
    version: u64,
    fields: &[(&str, String)],
    lists: &[(&str, Vec<String>)],
) -> Vec<u8> {
    let mut out = format!("{{\n  \"format\": \"{format}\",\n  \"version\": {version}");
    for (name, value) in fields {
        out.push_str(&format!(",\n  \"{name}\": {value}"));
    }
    for (name, lines) in lists {
        out.push_str(&format!(",\n  \"{name}\": ["));
        for (i, l) in lines.iter().enumerate() {
            out.push_str(if i == 0 { "\n    " } else { ",\n    " });
            out.push_str(l);
        }
        out.push_str(if lines.is_empty() { "]" } else { "\n  ]" });
    }
    out.push_str("\n}\n");
    out.into_bytes()
}

/// One JSON value as one line of a file.
mod erased {
    pub(super) trait Line {
        fn line(&self) -> String;
    }

    impl<T: serde::Serialize> Line for T {
        fn line(&self) -> String {
            serde_json::to_string(self).unwrap_or_default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::U256;
    use serde_json::json;

    fn raw(from: u8, nonce: u64) -> RawTx {
        RawTx {
            from: Address::repeat_byte(from),
            to: Address::repeat_byte(0x35),
            data: crate::calldata::encode(
                "redeem",
                &[("_amount".to_owned(), "1000".to_owned())].into(),
            )
            .expect("calldata")
            .into(),
            nonce,
            gas_limit: 100_000,
            gas_price: 1_000_000_000,
            chain_id: 31338,
            value: U256::ZERO,
        }
    }

    fn item(index: usize, from: u8, nonce: u64) -> BatchRequestItem {
        BatchRequestItem {
            index,
            id: format!("item-{index}"),
            tx_id: format!("00000000-0000-4000-8000-{index:012}"),
            raw_tx: raw(from, nonce),
            intent: Intent::redeem(Address::repeat_byte(0x35), 31338, U256::from(1000u64)),
        }
    }

    fn request() -> BatchRequest {
        let items = vec![item(0, 1, 5), item(1, 2, 0), item(3, 1, 6), item(4, 1, 7)];
        BatchRequest::new(
            "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d".into(),
            BatchOrigin {
                source: Some("payouts.jsonl".into()),
                ..BatchOrigin::default()
            },
            items,
        )
        .expect("request")
    }

    #[test]
    fn a_request_reads_back_as_written_one_item_a_line() {
        let r = request();
        let bytes = r.to_bytes();
        let text = String::from_utf8(bytes.clone()).expect("utf8");
        assert_eq!(text.lines().filter(|l| l.contains("\"rawTx\"")).count(), 4);
        let back = BatchRequest::parse(&bytes).expect("parses");
        assert_eq!(back, r);
        assert_eq!(back.request_hash, request_hash(&bytes));
        assert_eq!(
            back.senders[0],
            SenderRange {
                from: Address::repeat_byte(1),
                chain_id: 31338,
                first_nonce: 5,
                items: 3
            }
        );
        assert_eq!(back.senders[0].last_nonce(), 7);
        assert_eq!(back.to_bytes(), bytes, "the same request, the same bytes");
    }

    /// Every address of a batch request file (senders, rawTx, intent) is written in
    /// EIP-55 mixed case, as every document of bridgectl spells addresses; it reads back
    /// the same.
    #[test]
    fn a_request_spells_its_addresses_in_eip55() {
        let mut it = item(0, 0xab, 0);
        it.raw_tx.to = Address::repeat_byte(0xcd);
        it.intent.to = Some(Address::repeat_byte(0xcd));
        let r = BatchRequest::new(
            "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d".into(),
            BatchOrigin::default(),
            vec![it],
        )
        .expect("request");
        let text = String::from_utf8(r.to_bytes()).expect("utf8");
        let addresses: Vec<&str> = text
            .match_indices("\"0x")
            .map(|(at, _)| &text[at + 1..])
            .filter(|rest| {
                rest.len() > 43
                    && rest.as_bytes()[42] == b'"'
                    && rest[2..42].bytes().all(|b| b.is_ascii_hexdigit())
            })
            .map(|rest| &rest[..42])
            .collect();
        assert_eq!(addresses.len(), 4, "{text}");
        for a in addresses {
            let parsed: Address = a.parse().expect("address");
            assert_eq!(a, parsed.to_checksum(None), "{text}");
        }
        assert_eq!(BatchRequest::parse(text.as_bytes()).expect("parses"), r);
    }

    #[test]
    fn a_request_is_refused_for_what_could_be_read_two_ways() {
        let good: Value = serde_json::from_slice(&request().to_bytes()).expect("json");
        let mut cases: Vec<(Value, &str)> = Vec::new();
        let mut v = good.clone();
        v["items"][1]["rawTx"]["nonce"] = json!("0x9");
        cases.push((v, "senders"));
        let mut v = good.clone();
        v["items"][2]["rawTx"]["nonce"] = json!("0x7");
        cases.push((v, "in nonce order"));
        let mut v = good.clone();
        v["items"][2]["index"] = json!(0);
        cases.push((v, "increasing order"));
        let mut v = good.clone();
        v["items"][2]["id"] = json!("item-0");
        cases.push((v, "an id no other item has"));
        let mut v = good.clone();
        v["items"][2]["txId"] = v["items"][0]["txId"].clone();
        cases.push((v, "a txId no other item has"));
        let mut v = good.clone();
        v["items"][0]["extra"] = json!(1);
        cases.push((v, "unknown field(s) `extra`"));
        let mut v = good.clone();
        v["version"] = json!(2);
        cases.push((v, "field `version`"));
        let mut v = good.clone();
        v["items"] = json!([]);
        cases.push((v, "at least one item"));
        let mut v = good.clone();
        v["items"][0]["intent"]["fn"] = json!("x");
        cases.push((v, "field `intent`"));
        let mut v = good.clone();
        v["items"][0]["id"] = json!("x".repeat(MAX_ID_CHARS + 1));
        cases.push((v, "1 to 256 characters"));
        let mut v = good;
        v["batchId"] = json!("not a batch id");
        cases.push((v, "field `batchId`"));
        for (v, want) in cases {
            let e = BatchRequest::parse(&serde_json::to_vec(&v).expect("json"))
                .expect_err(want)
                .to_string();
            assert!(e.contains(want), "{e:?} lacks {want:?}");
        }
        let text = String::from_utf8(request().to_bytes()).expect("utf8");
        let twice = text.replacen("\"version\": 1,", "\"version\": 1, \"version\": 1,", 1);
        let e = BatchRequest::parse(twice.as_bytes()).expect_err("duplicate");
        assert!(e.to_string().contains("duplicate key"), "{e}");
        let e = BatchRequest::parse(&vec![b' '; MAX_BATCH_DOC_BYTES + 1]).expect_err("big");
        assert!(e.to_string().contains("more than a batch file"), "{e}");
    }

    fn signed() -> SignedBatch {
        SignedBatch {
            batch_id: "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d".into(),
            request_hash: B256::repeat_byte(7),
            items: vec![SignedBatchItem {
                index: 0,
                id: "item-0".into(),
                tx_id: "00000000-0000-4000-8000-000000000000".into(),
                signed_tx: Bytes::from(vec![0xf8, 0x01]),
                tx_hash: B256::repeat_byte(1),
                from: Address::repeat_byte(1),
                chain_id: 31338,
                nonce: 5,
            }],
            refused: vec![RefusedBatchItem {
                index: 1,
                id: "item-1".into(),
                reason: "policy check failed".into(),
            }],
        }
    }

    #[test]
    fn a_signed_batch_reads_back_and_names_each_item_once() {
        let s = signed();
        let bytes = s.to_bytes();
        assert_eq!(SignedBatch::parse(&bytes).expect("parses"), s);
        let mut twice = s.clone();
        twice.refused[0].index = 0;
        let e = SignedBatch::parse(&twice.to_bytes()).expect_err("twice");
        assert!(e.to_string().contains("neither signed nor refused"), "{e}");
        let text = String::from_utf8(bytes).expect("utf8");
        let e = SignedBatch::parse(text.replace("\"refused\"", "\"refusd\"").as_bytes())
            .expect_err("unknown");
        assert!(e.to_string().contains("refusd"), "{e}");
    }
}
