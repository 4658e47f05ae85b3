//! What a batch is made of: its operations and items, as given and as stored.

use alloy_primitives::{Address, U256};
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::flows::TokenSide;
use crate::journal::BatchItemRecord;

/// One operation of a batch. Amounts are base units (stored as decimal strings).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum BatchOp {
    /// Redeem `amount` ST of `from` into MT (the redeem transaction action).
    Redeem {
        /// The account that holds the ST.
        from: Address,
        /// ST base units.
        #[serde(with = "decimal")]
        amount: U256,
    },
    /// Transfer `amount` of `token` from `from` to `to` (built and signed here).
    Transfer {
        /// MT or ST.
        token: TokenSide,
        /// The sender.
        from: Address,
        /// The recipient.
        to: Address,
        /// Base units of `token`.
        #[serde(with = "decimal")]
        amount: U256,
    },
    /// Swap `amount` MT of `from` into ST (a transfer to the issued swap address).
    Swap {
        /// The account that sends the MT.
        from: Address,
        /// MT base units.
        #[serde(with = "decimal")]
        amount: U256,
    },
}

impl BatchOp {
    /// The account that signs it.
    pub fn from(&self) -> Address {
        match self {
            BatchOp::Redeem { from, .. }
            | BatchOp::Transfer { from, .. }
            | BatchOp::Swap { from, .. } => *from,
        }
    }

    /// The token that leaves `from`, and how much of it.
    pub fn spends(&self) -> (TokenSide, U256) {
        match self {
            BatchOp::Redeem { amount, .. } => (TokenSide::St, *amount),
            BatchOp::Transfer { token, amount, .. } => (*token, *amount),
            BatchOp::Swap { amount, .. } => (TokenSide::Mt, *amount),
        }
    }

    /// The operation's name (`redeem`, `transfer`, `swap`).
    pub fn name(&self) -> &'static str {
        match self {
            BatchOp::Redeem { .. } => "redeem",
            BatchOp::Transfer { .. } => "transfer",
            BatchOp::Swap { .. } => "swap",
        }
    }
}

/// Serde for amounts as decimal strings of base units: what the README promises for
/// every amount bridgectl writes.
mod decimal {
    use alloy_primitives::U256;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &U256, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&value.to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<U256, D::Error> {
        let text = String::deserialize(d)?;
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(serde::de::Error::custom(format!(
                "amount {text:?} is not a decimal integer of base units"
            )));
        }
        U256::from_str_radix(&text, 10).map_err(serde::de::Error::custom)
    }
}

/// One item of a batch: an id for people and scripts, and what to do.
///
/// Its idempotency key ([`BatchItem::key`]) is held in the journal by the first batch
/// that records it, for good: a batch with an item whose key another batch holds is not
/// recorded ([`crate::Error::ItemsHeld`]), so one item is one payout however often its
/// file is run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchItem {
    /// The item's id, unique in the batch (from the input, or its line number).
    pub id: String,
    /// What to do.
    pub op: BatchOp,
    /// Its idempotency key when that is not its id: for an item of a file without an id
    /// of its own, the file's SHA-256 and the item's line ([`crate::batch_file`]), since
    /// two equal lines may be two payouts. `None`: the id is the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

impl BatchItem {
    /// An item whose id is its idempotency key.
    pub fn new(id: impl Into<String>, op: BatchOp) -> BatchItem {
        BatchItem {
            id: id.into(),
            op,
            key: None,
        }
    }

    /// Its idempotency key: [`BatchItem::key`], else its id.
    pub fn key(&self) -> &str {
        self.key.as_deref().unwrap_or(&self.id)
    }

    /// The same payout as a new item: `suffix` appended to its id and to its key, so that
    /// no batch holds it yet. What running an item again on purpose takes (a new suffix
    /// each time).
    pub fn suffixed(self, suffix: &str) -> BatchItem {
        BatchItem {
            id: format!("{}{suffix}", self.id),
            key: self.key.map(|k| format!("{k}{suffix}")),
            op: self.op,
        }
    }
}

/// The operation of a batch item as stored.
pub(super) fn stored_op(record: &BatchItemRecord) -> Result<BatchOp, Error> {
    serde_json::from_value(record.op.clone()).map_err(|e| Error::JournalCorrupt {
        tx_id: record.tx_id.clone(),
        reason: format!(
            "batch item {}: the stored operation does not parse: {e}",
            record.index
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn operations_are_stored_with_decimal_amounts_and_read_back() {
        let op = BatchOp::Transfer {
            token: TokenSide::St,
            from: Address::repeat_byte(1),
            to: Address::repeat_byte(2),
            amount: U256::from(10).pow(U256::from(30)),
        };
        let stored = serde_json::to_value(&op).expect("encode");
        assert_eq!(stored["op"], json!("transfer"));
        assert_eq!(stored["token"], json!("ST"));
        assert_eq!(stored["amount"], json!("1000000000000000000000000000000"));
        assert_eq!(
            serde_json::from_value::<BatchOp>(stored).expect("decode"),
            op
        );
        for bad in ["0x10", "-1", "1.5", ""] {
            let v = json!({"op": "redeem", "from": Address::ZERO, "amount": bad});
            assert!(
                serde_json::from_value::<BatchOp>(v).is_err(),
                "{bad:?} must not be read as an amount"
            );
        }
    }
}
