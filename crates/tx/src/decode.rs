//! Decoding signed transactions: legacy (what bridgectl signs) and, for display only,
//! typed EIP-2718 transactions. Strict: malformed RLP, trailing bytes, an invalid `v`,
//! `r` or `s` (including a high `s`, EIP-2) are errors; the sender is recovered.

use alloy_consensus::transaction::{RlpEcdsaDecodableTx, to_eip155_value};
use alloy_consensus::{Transaction, TxEnvelope, TxLegacy};
use alloy_eips::eip2718::Decodable2718;
use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use serde::Serialize;

use crate::Error;
use crate::rawtx::{RawTx, SignedTx};
use crate::recover::SECP256K1N;

/// The largest contract creation code a transaction may carry (EIP-3860, Shanghai).
pub const MAX_INITCODE_SIZE: usize = 49_152;

/// Amounts in JSON are decimal strings in base units (as the README promises for all JSON
/// output): exact, and readable without knowing the field is hex.
fn decimal<S: serde::Serializer>(v: &U256, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

fn decimal_option<S: serde::Serializer, T: std::fmt::Display>(
    v: &Option<T>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => s.collect_str(v),
        None => s.serialize_none(),
    }
}

/// A decoded, signature-checked transaction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DecodedTx {
    /// `legacy`, `eip2930`, `eip1559`, `eip4844` or `eip7702`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The chain id; `None` for a pre-EIP-155 legacy signature.
    pub chain_id: Option<u64>,
    /// The nonce.
    pub nonce: u64,
    /// The gas limit.
    pub gas_limit: u64,
    /// Legacy and EIP-2930 gas price (a legacy one may exceed 2^128: valid on chain,
    /// though alloy's `TxLegacy` cannot hold it).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "decimal_option"
    )]
    pub gas_price: Option<U256>,
    /// EIP-1559 style fee cap (up to 2^256, as for the legacy gas price).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "decimal_option"
    )]
    pub max_fee_per_gas: Option<U256>,
    /// EIP-1559 style priority fee.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "decimal_option"
    )]
    pub max_priority_fee_per_gas: Option<U256>,
    /// The callee, `None` for contract creation.
    pub to: Option<Address>,
    /// Wei sent along.
    #[serde(serialize_with = "decimal")]
    pub value: U256,
    /// Calldata.
    pub input: Bytes,
    /// `v` as encoded (legacy) or the y-parity (typed).
    pub v: u128,
    /// Signature `r`.
    pub r: U256,
    /// Signature `s`.
    pub s: U256,
    /// The hash that was signed.
    pub signing_hash: B256,
    /// The transaction hash.
    pub hash: B256,
    /// The recovered sender. `from` in JSON, the word every other output (the text of
    /// `tx decode`, a rawTx, a flow) uses for it.
    #[serde(rename = "from")]
    pub sender: Address,
    /// The intrinsic gas under current (Shanghai/Cancun) rules.
    pub intrinsic_gas: u64,
}

impl DecodedTx {
    /// The unsigned transaction these bytes sign, as bridgectl would have received it:
    /// `None` unless it is a legacy EIP-155 call (the only kind bridgectl signs), so that
    /// bytes from outside can go through [`crate::verify()`] like any rawTx.
    pub fn unsigned(&self) -> Option<RawTx> {
        if self.kind != "legacy" {
            return None;
        }
        Some(RawTx {
            from: self.sender,
            to: self.to?,
            data: self.input.clone(),
            nonce: self.nonce,
            gas_limit: self.gas_limit,
            gas_price: self.gas_price?.try_into().ok()?,
            chain_id: self.chain_id?,
            value: self.value,
        })
    }
}

impl DecodedTx {
    /// Consensus rules this transaction breaks although it decodes: it could never be
    /// included in a block. Empty for a valid transaction.
    ///
    /// These are the rules of the newest fork that need no chain state (ethereum/tests
    /// `TransactionTests` decides each case by them); see [`DecodedTx::chain_error`] for
    /// the chain a transaction is valid on.
    pub fn validity_errors(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.gas_limit < self.intrinsic_gas {
            out.push(format!(
                "gas limit {} is below the intrinsic gas {}",
                self.gas_limit, self.intrinsic_gas
            ));
        }
        if self.nonce == u64::MAX {
            out.push("nonce 2^64-1 is not allowed (EIP-2681)".into());
        }
        // What the sender must be able to pay: a product a node cannot even compute is
        // refused before any balance is looked at.
        let (fee, name) = match (self.gas_price, self.max_fee_per_gas) {
            (Some(p), _) => (p, "gas price"),
            (None, Some(f)) => (f, "max fee per gas"),
            (None, None) => (U256::ZERO, ""),
        };
        if U256::from(self.gas_limit).checked_mul(fee).is_none() {
            out.push(format!(
                "gas limit {} x {name} {fee} overflows 2^256",
                self.gas_limit
            ));
        }
        if let (Some(cap), Some(tip)) = (self.max_fee_per_gas, self.max_priority_fee_per_gas)
            && tip > cap
        {
            out.push(format!(
                "priority fee {tip} is above the max fee per gas {cap} (EIP-1559)"
            ));
        }
        if self.to.is_none() && self.input.len() > MAX_INITCODE_SIZE {
            out.push(format!(
                "init code of {} bytes is above the limit of {MAX_INITCODE_SIZE} (EIP-3860)",
                self.input.len()
            ));
        }
        out
    }

    /// Why a node on chain `chain_id` would refuse this transaction, if it would: it
    /// was signed for another chain (EIP-155). A pre-EIP-155 signature names no chain
    /// and is valid on every one (see [`DecodedTx::is_pre_eip155`]).
    pub fn chain_error(&self, chain_id: u64) -> Option<String> {
        match self.chain_id {
            Some(c) if c != chain_id => Some(format!("signed for chain id {c}, not {chain_id}")),
            _ => None,
        }
    }

    /// Whether this is a legacy transaction signed without a chain id (pre-EIP-155,
    /// replayable on every chain). bridgectl never makes one.
    pub fn is_pre_eip155(&self) -> bool {
        self.kind == "legacy" && self.chain_id.is_none()
    }
}

fn malformed(
    reason: impl Into<String>,
    source: Option<alloy_eips::eip2718::Eip2718Error>,
) -> Error {
    Error::Malformed {
        reason: reason.into(),
        source,
    }
}

/// Parses `0x` hex (or bare hex) text into bytes, for `tx decode`.
pub fn parse_hex_bytes(text: &str) -> Result<Vec<u8>, Error> {
    let t = text.trim();
    let h = t.strip_prefix("0x").unwrap_or(t);
    if h.is_empty() {
        return Err(malformed("empty input", None));
    }
    if !h.len().is_multiple_of(2) {
        return Err(malformed("odd number of hex digits", None));
    }
    if let Some((i, c)) = h.char_indices().find(|(_, c)| !c.is_ascii_hexdigit()) {
        return Err(malformed(
            format!("non-hex character {c:?} at offset {i}"),
            None,
        ));
    }
    alloy_primitives::hex::decode(h).map_err(|e| malformed(format!("bad hex: {e}"), None))
}

/// Decodes a signed transaction and recovers its sender.
pub fn decode_signed(bytes: &[u8]) -> Result<DecodedTx, Error> {
    let Some(first) = bytes.first() else {
        return Err(malformed("empty input", None));
    };
    if *first >= 0x80 && *first < 0xc0 {
        return Err(malformed(
            "an RLP string, not a transaction (a legacy transaction is an RLP list, a typed one starts with its type byte)",
            None,
        ));
    }
    let mut buf = bytes;
    let env = match TxEnvelope::decode_2718(&mut buf) {
        Ok(env) => env,
        Err(e) => {
            if let Some(fields) = wide::decode(bytes) {
                return fields.finish(bytes);
            }
            // An RLP list is a legacy transaction: alloy's envelope decoder, having failed
            // on it, reports the typed path's "unexpected type flag"; the legacy decoder's
            // own error says what is wrong (a leading zero, a list where a string belongs).
            if *first >= 0xc0 {
                let mut legacy = bytes;
                if let Err(rlp) = TxLegacy::rlp_decode_signed(&mut legacy) {
                    return Err(malformed(
                        format!("cannot decode as a legacy transaction: {rlp}"),
                        Some(alloy_eips::eip2718::Eip2718Error::RlpError(rlp)),
                    ));
                }
            }
            return Err(malformed(format!("cannot decode: {e}"), Some(e)));
        }
    };
    if !buf.is_empty() {
        return Err(malformed(
            format!("{} trailing byte(s) after the transaction", buf.len()),
            None,
        ));
    }
    let sig = *env.signature();
    let (r, s) = (sig.r(), sig.s());
    check_rs(r, s)?;
    let (kind, v) = match &env {
        TxEnvelope::Legacy(t) => {
            if t.tx().chain_id == Some(0) {
                return Err(Error::InvalidSignature(
                    "v encodes EIP-155 chain id 0, which is not a valid chain".into(),
                ));
            }
            ("legacy", to_eip155_value(sig.v(), t.tx().chain_id))
        }
        TxEnvelope::Eip2930(_) => ("eip2930", u128::from(sig.v())),
        TxEnvelope::Eip1559(_) => ("eip1559", u128::from(sig.v())),
        TxEnvelope::Eip4844(_) => ("eip4844", u128::from(sig.v())),
        TxEnvelope::Eip7702(_) => ("eip7702", u128::from(sig.v())),
    };
    let signing_hash = env.signature_hash();
    let sender = crate::recover::signer_of_prehash(&sig, &signing_hash).ok_or_else(no_key)?;
    let is_legacy = kind == "legacy";
    let input = env.input().clone();
    let create = env.to().is_none();
    let access_list_gas = env.access_list().map_or(0u64, |al| {
        al.iter()
            .map(|i| 2400 + 1900 * i.storage_keys.len() as u64)
            .sum()
    });
    let auth_gas = env
        .authorization_list()
        .map_or(0u64, |a| 25_000 * a.len() as u64);
    Ok(DecodedTx {
        kind,
        chain_id: env.chain_id(),
        nonce: env.nonce(),
        gas_limit: env.gas_limit(),
        gas_price: env.gas_price().map(U256::from),
        max_fee_per_gas: (!is_legacy && kind != "eip2930")
            .then(|| U256::from(env.max_fee_per_gas())),
        max_priority_fee_per_gas: env.max_priority_fee_per_gas().map(U256::from),
        to: env.to(),
        value: env.value(),
        intrinsic_gas: intrinsic_gas(&input, create)
            .saturating_add(access_list_gas)
            .saturating_add(auth_gas),
        input,
        v,
        r,
        s,
        signing_hash,
        hash: keccak256(bytes),
        sender,
    })
}

/// `r` and `s` in range, `s` in the lower half (EIP-2).
/// No public key recovers from a signature whose scalars are in range: its `r` is not
/// the x of a point on the curve (or the key would be the point at infinity).
fn no_key() -> Error {
    Error::InvalidSignature("no public key can be recovered from r, s and v".into())
}

fn check_rs(r: U256, s: U256) -> Result<(), Error> {
    if r.is_zero() || r >= SECP256K1N {
        return Err(Error::InvalidSignature(format!("r {r:#x} is out of range")));
    }
    if s.is_zero() || s >= SECP256K1N {
        return Err(Error::InvalidSignature(format!("s {s:#x} is out of range")));
    }
    if s > SECP256K1N >> 1 {
        return Err(Error::InvalidSignature(format!(
            "s {s:#x} is in the upper half of the curve order (EIP-2 allows only low s)"
        )));
    }
    Ok(())
}

/// Transactions alloy's types cannot hold, read field by field with alloy-rlp's
/// canonical decoding (no leading zeros, exact lengths, nothing trailing), so that they
/// are decided as Ethereum decides them rather than refused as "overflow":
///
/// - a fee above 2^128 (alloy keeps fees in a `u128`): a legacy gas price or an EIP-1559
///   fee cap of up to 2^256 is valid RLP, and whether `gasLimit x fee` overflows 2^256 is
///   a consensus rule (ethereum/tests `TransactionWithHighGasPrice`,
///   `GasLimitPriceProductOverflowtMinusOne`), checked by [`DecodedTx::validity_errors`];
/// - a legacy signature whose `v` is neither 27/28 nor an EIP-155 value, or whose `r`
///   or `s` is longer than 32 bytes: well-formed bytes with an invalid signature, refused
///   as such ([`Error::InvalidSignature`]), as Ethereum does.
///
/// Used only after alloy could not decode, so every other malformation keeps alloy's
/// error.
mod wide {
    use alloy_eips::eip2930::AccessList;
    use alloy_primitives::{Address, B256, Bytes, Signature, U256, keccak256};
    use alloy_rlp::{Decodable, Encodable, Header};

    use super::{DecodedTx, check_rs, intrinsic_gas, no_key};
    use crate::Error;

    /// What only an EIP-1559 transaction has.
    struct Eip1559 {
        chain_id: u64,
        max_priority_fee_per_gas: U256,
        access_list: AccessList,
    }

    pub(super) struct Fields {
        /// `None` for a legacy transaction.
        eip1559: Option<Eip1559>,
        nonce: u64,
        /// The legacy gas price, or the EIP-1559 fee cap.
        fee: U256,
        gas_limit: u64,
        to: Bytes,
        value: U256,
        data: Bytes,
        /// Legacy `v`, or the EIP-1559 y-parity (any width, so that one too wide for a
        /// chain id is refused as a signature, not as bytes).
        v: U256,
        r: Bytes,
        s: Bytes,
        /// The RLP of the fields before the signature (without their list header).
        unsigned: Vec<u8>,
    }

    /// `r` or `s`: a canonical big-endian string (no leading zero; longer than 32 bytes
    /// is left to the signature check).
    fn scalar(buf: &mut &[u8]) -> Option<Bytes> {
        let b = Bytes::decode(buf).ok()?;
        (b.first() != Some(&0)).then_some(b)
    }

    /// The fields of a legacy (`0xc0..`) or EIP-1559 (`0x02`) transaction, when they
    /// are all well formed; `None` leaves the bytes to alloy's error.
    pub(super) fn decode(bytes: &[u8]) -> Option<Fields> {
        let typed = bytes.first() == Some(&0x02);
        let mut buf = if typed { &bytes[1..] } else { bytes };
        let header = Header::decode(&mut buf).ok()?;
        if !header.list || header.payload_length != buf.len() {
            return None;
        }
        let start = buf;
        let mut eip1559 = None;
        let (nonce, fee, gas_limit, to, value, data);
        if typed {
            let chain_id = u64::decode(&mut buf).ok()?;
            nonce = u64::decode(&mut buf).ok()?;
            let max_priority_fee_per_gas = U256::decode(&mut buf).ok()?;
            fee = U256::decode(&mut buf).ok()?;
            gas_limit = u64::decode(&mut buf).ok()?;
            to = Bytes::decode(&mut buf).ok()?;
            value = U256::decode(&mut buf).ok()?;
            data = Bytes::decode(&mut buf).ok()?;
            let access_list = AccessList::decode(&mut buf).ok()?;
            // Only what alloy cannot hold comes this way: a fee above 2^128.
            let max = U256::from(u128::MAX);
            if fee <= max && max_priority_fee_per_gas <= max {
                return None;
            }
            eip1559 = Some(Eip1559 {
                chain_id,
                max_priority_fee_per_gas,
                access_list,
            });
        } else {
            nonce = u64::decode(&mut buf).ok()?;
            fee = U256::decode(&mut buf).ok()?;
            gas_limit = u64::decode(&mut buf).ok()?;
            to = Bytes::decode(&mut buf).ok()?;
            value = U256::decode(&mut buf).ok()?;
            data = Bytes::decode(&mut buf).ok()?;
        }
        let unsigned = start[..start.len() - buf.len()].to_vec();
        let f = Fields {
            eip1559,
            nonce,
            fee,
            gas_limit,
            to,
            value,
            data,
            v: U256::decode(&mut buf).ok()?,
            r: scalar(&mut buf)?,
            s: scalar(&mut buf)?,
            unsigned,
        };
        (buf.is_empty() && (f.to.is_empty() || f.to.len() == 20)).then_some(f)
    }

    fn signature_scalar(name: &str, b: &Bytes) -> Result<U256, Error> {
        U256::try_from_be_slice(b).ok_or_else(|| {
            Error::InvalidSignature(format!(
                "{name} is {} bytes long, longer than any curve scalar (32)",
                b.len()
            ))
        })
    }

    impl Fields {
        /// Checks the signature, recovers the sender and describes the transaction.
        pub(super) fn finish(self, bytes: &[u8]) -> Result<DecodedTx, Error> {
            let v = u64::try_from(self.v).map_err(|_| {
                Error::InvalidSignature(format!(
                    "v {:#x} encodes a chain id above 2^64, which no chain has",
                    self.v
                ))
            })?;
            let (chain_id, parity) = match (&self.eip1559, v) {
                (Some(t), 0 | 1) => (Some(t.chain_id), v == 1),
                (Some(_), v) => {
                    return Err(Error::InvalidSignature(format!(
                        "y-parity {v} is neither 0 nor 1"
                    )));
                }
                (None, 27 | 28) => (None, v == 28),
                (None, v) if v >= 35 => (Some((v - 35) / 2), (v - 35) % 2 == 1),
                (None, v) => {
                    return Err(Error::InvalidSignature(format!(
                        "v {v} is neither 27/28 nor an EIP-155 value"
                    )));
                }
            };
            if self.eip1559.is_none() && chain_id == Some(0) {
                return Err(Error::InvalidSignature(
                    "v encodes EIP-155 chain id 0, which is not a valid chain".into(),
                ));
            }
            let (r, s) = (
                signature_scalar("r", &self.r)?,
                signature_scalar("s", &self.s)?,
            );
            check_rs(r, s)?;
            let signing_hash = self.signing_hash(chain_id);
            let sender =
                crate::recover::signer_of_prehash(&Signature::new(r, s, parity), &signing_hash)
                    .ok_or_else(no_key)?;
            let to = (!self.to.is_empty()).then(|| Address::from_slice(&self.to));
            let access_list_gas = self.eip1559.as_ref().map_or(0, |t| {
                t.access_list
                    .iter()
                    .map(|i| 2400 + 1900 * i.storage_keys.len() as u64)
                    .sum()
            });
            let typed = self.eip1559.is_some();
            Ok(DecodedTx {
                kind: if typed { "eip1559" } else { "legacy" },
                chain_id,
                nonce: self.nonce,
                gas_limit: self.gas_limit,
                gas_price: (!typed).then_some(self.fee),
                max_fee_per_gas: typed.then_some(self.fee),
                max_priority_fee_per_gas: self.eip1559.map(|t| t.max_priority_fee_per_gas),
                to,
                value: self.value,
                intrinsic_gas: intrinsic_gas(&self.data, to.is_none())
                    .saturating_add(access_list_gas),
                input: self.data,
                v: u128::from(v),
                r,
                s,
                signing_hash,
                hash: keccak256(bytes),
                sender,
            })
        }

        /// keccak of rlp([nonce, gasPrice, gasLimit, to, value, data(, chainId, 0, 0)])
        /// for a legacy transaction, of `0x02 || rlp([chainId, ..., accessList])` for an
        /// EIP-1559 one.
        fn signing_hash(&self, chain_id: Option<u64>) -> B256 {
            let mut tail = Vec::new();
            if self.eip1559.is_none()
                && let Some(c) = chain_id
            {
                c.encode(&mut tail);
                0u8.encode(&mut tail);
                0u8.encode(&mut tail);
            }
            let payload_length = self.unsigned.len() + tail.len();
            let mut out = Vec::with_capacity(payload_length + 10);
            if self.eip1559.is_some() {
                out.push(0x02);
            }
            Header {
                list: true,
                payload_length,
            }
            .encode(&mut out);
            out.extend_from_slice(&self.unsigned);
            out.extend_from_slice(&tail);
            keccak256(out)
        }
    }
}

/// Intrinsic gas (Shanghai rules): 21000, plus 4 per zero and 16 per non-zero calldata
/// byte, plus 32000 and 2 per init-code word for contract creation.
pub fn intrinsic_gas(input: &[u8], create: bool) -> u64 {
    let zeros = input.iter().filter(|b| **b == 0).count() as u64;
    let nonzeros = input.len() as u64 - zeros;
    let mut gas = 21_000 + 4 * zeros + 16 * nonzeros;
    if create {
        gas += 32_000 + 2 * (input.len() as u64).div_ceil(32);
    }
    gas
}

/// The signed transaction in `raw` if it is exactly `tx`: legacy, EIP-155 with `tx`'s
/// chain id, recovered to `tx.from`, every field equal.
pub fn check_signed_by(raw: &[u8], tx: &RawTx) -> Result<SignedTx, Error> {
    let mismatch = |what: String| Error::SignerMismatch(what);
    let decoded = decode_signed(raw)
        .map_err(|e| mismatch(format!("what it returned is not a signed transaction: {e}")))?;
    if let Some(d) = first_difference(&decoded, tx) {
        return Err(mismatch(format!(
            "{}: asked {}, signed {}",
            d.field,
            crate::error::shorten(&d.expected),
            crate::error::shorten(&d.found)
        )));
    }
    Ok(SignedTx {
        raw: raw.to_vec().into(),
        hash: keccak256(raw),
        from: tx.from,
        chain_id: tx.chain_id,
        nonce: tx.nonce,
    })
}

/// A field in which signed bytes are not the transaction they were meant to sign.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The field (`chainId`, `from (recovered signer)`, `data`, ...).
    pub field: &'static str,
    /// What the transaction has.
    pub expected: String,
    /// What the signed bytes have.
    pub found: String,
}

/// The first field in which `decoded` is not exactly `tx` signed by `tx.from` (legacy,
/// EIP-155 with `tx`'s chain id, every field equal); `None` when it is. The one
/// comparison behind a signer's answer, a bundle from the air gap and a managed
/// signature.
pub fn first_difference(decoded: &DecodedTx, tx: &RawTx) -> Option<Difference> {
    let field = |field: &'static str, expected: String, found: String| {
        Some(Difference {
            field,
            expected,
            found,
        })
    };
    if decoded.kind != "legacy" {
        return field("type", "legacy".into(), decoded.kind.into());
    }
    if decoded.chain_id != Some(tx.chain_id) {
        return field(
            "chainId",
            tx.chain_id.to_string(),
            decoded.chain_id.map_or(
                "none (a pre-EIP-155 signature, valid on every chain)".into(),
                |c| c.to_string(),
            ),
        );
    }
    if decoded.sender != tx.from {
        return field(
            "from (recovered signer)",
            tx.from.to_string(),
            decoded.sender.to_string(),
        );
    }
    if decoded.to != Some(tx.to) {
        return field(
            "to",
            tx.to.to_string(),
            decoded
                .to
                .map_or("contract creation".into(), |t| t.to_string()),
        );
    }
    if decoded.nonce != tx.nonce {
        return field("nonce", tx.nonce.to_string(), decoded.nonce.to_string());
    }
    if decoded.gas_limit != tx.gas_limit {
        return field(
            "gasLimit",
            tx.gas_limit.to_string(),
            decoded.gas_limit.to_string(),
        );
    }
    if decoded.gas_price != Some(alloy_primitives::U256::from(tx.gas_price)) {
        return field(
            "gasPrice",
            tx.gas_price.to_string(),
            decoded.gas_price.map_or("none".into(), |p| p.to_string()),
        );
    }
    if decoded.value != tx.value {
        return field("value", tx.value.to_string(), decoded.value.to_string());
    }
    if decoded.input != tx.data {
        return field("data", tx.data.to_string(), decoded.input.to_string());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_inputs_are_clear_errors() {
        let cases: &[(&str, &str)] = &[
            ("", "empty input"),
            ("0x", "empty input"),
            ("0x123", "odd number"),
            ("0xzz", "non-hex character"),
            ("0x80", "an RLP string"),
            ("0xc0", "cannot decode"),
            ("0xf86c09", "cannot decode"),
            ("0x05c0", "cannot decode"),
        ];
        for (text, want) in cases {
            let e = parse_hex_bytes(text)
                .and_then(|b| decode_signed(&b))
                .expect_err(text)
                .to_string();
            assert!(e.contains(want), "{text}: {e:?} lacks {want:?}");
        }
    }

    #[test]
    fn eip155_example_decodes() {
        let raw = parse_hex_bytes("0xf86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83").expect("hex");
        let d = decode_signed(&raw).expect("decode");
        assert_eq!(d.kind, "legacy");
        assert_eq!(d.chain_id, Some(1));
        assert_eq!(d.v, 37);
        assert_eq!(d.nonce, 9);
        assert_eq!(
            d.signing_hash.to_string(),
            "0xdaf5a779ae972f972197303d7b574746c7ef83eadac0f2791ad23db92e4c8e53"
        );
        assert_eq!(
            d.hash.to_string(),
            "0x33469b22e9f636356c4160a87eb19df52b7412e8eac32a4a55ffe88ea8350788"
        );
        assert_eq!(
            d.sender.to_checksum(None),
            "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F"
        );
        assert!(d.validity_errors().is_empty());
        // One trailing byte is refused.
        let mut long = raw.clone();
        long.push(0);
        let e = decode_signed(&long).expect_err("trailing").to_string();
        assert!(e.contains("trailing"), "{e}");
    }

    /// Only a legacy EIP-155 call has an unsigned form to verify (what resume and
    /// submit check signed bytes with): the EIP-155 example gives every field back;
    /// the same call signed without a chain id, as EIP-2930 or as EIP-1559 gives none.
    #[test]
    fn only_a_legacy_eip155_call_has_an_unsigned_form() {
        use alloy_consensus::{SignableTransaction, TxEip1559, TxEip2930, TxEnvelope, TxLegacy};
        use alloy_eips::eip2718::Encodable2718;
        use alloy_primitives::{TxKind, U256};
        use alloy_signer::SignerSync;

        let raw = parse_hex_bytes("0xf86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83").expect("hex");
        let d = decode_signed(&raw).expect("decode");
        assert!(!d.is_pre_eip155());
        let to = Address::repeat_byte(0x35);
        let value = U256::from(10u64).pow(U256::from(18u64));
        let want = RawTx {
            from: d.sender,
            to,
            data: Default::default(),
            nonce: 9,
            gas_limit: 21_000,
            gas_price: 20_000_000_000,
            chain_id: 1,
            value,
        };
        assert_eq!(d.unsigned(), Some(want));

        let key = alloy_signer_local::PrivateKeySigner::from_bytes(&B256::repeat_byte(0x46))
            .expect("key");
        let sign = |tx: &dyn SignableTransaction<alloy_primitives::Signature>| {
            key.sign_hash_sync(&tx.signature_hash()).expect("sign")
        };
        // One call, three encodings of it that bridgectl never sends.
        let eip2930 = TxEip2930 {
            chain_id: 1,
            nonce: 9,
            gas_price: 20_000_000_000,
            gas_limit: 21_000,
            to: TxKind::Call(to),
            value,
            ..Default::default()
        };
        let legacy = TxLegacy {
            chain_id: None,
            nonce: eip2930.nonce,
            gas_price: eip2930.gas_price,
            gas_limit: eip2930.gas_limit,
            to: eip2930.to,
            value,
            ..Default::default()
        };
        let eip1559 = TxEip1559 {
            chain_id: eip2930.chain_id,
            nonce: eip2930.nonce,
            max_fee_per_gas: eip2930.gas_price,
            max_priority_fee_per_gas: eip2930.gas_price,
            gas_limit: eip2930.gas_limit,
            to: eip2930.to,
            value,
            ..Default::default()
        };
        let others = [
            ("pre-EIP-155", {
                let sig = sign(&legacy);
                TxEnvelope::Legacy(legacy.into_signed(sig))
            }),
            ("EIP-2930", {
                let sig = sign(&eip2930);
                TxEnvelope::Eip2930(eip2930.into_signed(sig))
            }),
            ("EIP-1559", {
                let sig = sign(&eip1559);
                TxEnvelope::Eip1559(eip1559.into_signed(sig))
            }),
        ];
        for (what, envelope) in others {
            let d = decode_signed(&envelope.encoded_2718()).expect(what);
            assert_eq!(d.unsigned(), None, "{what}");
            assert_eq!(d.is_pre_eip155(), what == "pre-EIP-155", "{what}");
        }
    }

    /// A signature whose r or s is zero or not below the curve order is refused by our
    /// range check, naming the value, before any recovery is tried.
    #[test]
    fn r_and_s_out_of_range_are_refused() {
        use alloy_consensus::{SignableTransaction, TxEnvelope, TxLegacy};
        use alloy_eips::eip2718::Encodable2718;
        use alloy_primitives::{Signature, U256};

        let tx = TxLegacy {
            chain_id: Some(1),
            nonce: 9,
            gas_price: 20_000_000_000,
            gas_limit: 21_000,
            to: alloy_primitives::TxKind::Call(Address::repeat_byte(0x35)),
            ..Default::default()
        };
        let fine = U256::from(7u8);
        for (r, s, want) in [
            (U256::ZERO, fine, "r 0x0 is out of range"),
            (SECP256K1N, fine, "r 0xffff"),
            (fine, U256::ZERO, "s 0x0 is out of range"),
            (fine, SECP256K1N, "s 0xffff"),
        ] {
            let signed = tx.clone().into_signed(Signature::new(r, s, false));
            let bytes = TxEnvelope::Legacy(signed).encoded_2718();
            let e = decode_signed(&bytes).expect_err(want).to_string();
            assert!(e.contains(want) && e.contains("out of range"), "{e}");
        }
        // In range but in the upper half (the lowest such s): the malleable twin of a
        // low-s signature.
        let high_s = (SECP256K1N >> 1) + U256::from(1u8);
        let high = tx.into_signed(Signature::new(fine, high_s, false));
        let e = decode_signed(&TxEnvelope::Legacy(high).encoded_2718())
            .expect_err("high s")
            .to_string();
        assert!(e.contains("upper half"), "{e}");
    }
    /// EIP-3860: contract creation code of 49152 bytes is valid, one byte more is not
    /// (ethereum/tests `DataTestInitCodeLimit`/`TooBig`, 100 kB each, not committed).
    #[test]
    fn init_code_above_the_eip3860_limit_is_invalid() {
        use alloy_consensus::{SignableTransaction, TxEnvelope, TxLegacy};
        use alloy_eips::eip2718::Encodable2718;
        use alloy_signer::SignerSync;

        let key = alloy_signer_local::PrivateKeySigner::from_bytes(&B256::repeat_byte(0x46))
            .expect("key");
        for (len, valid) in [(MAX_INITCODE_SIZE, true), (MAX_INITCODE_SIZE + 1, false)] {
            let tx = TxLegacy {
                chain_id: Some(1),
                gas_limit: 30_000_000,
                gas_price: 1,
                to: alloy_primitives::TxKind::Create,
                input: vec![1u8; len].into(),
                ..Default::default()
            };
            let sig = key.sign_hash_sync(&tx.signature_hash()).expect("sign");
            let bytes = TxEnvelope::Legacy(tx.into_signed(sig)).encoded_2718();
            let errors = decode_signed(&bytes).expect("decodes").validity_errors();
            assert_eq!(errors.is_empty(), valid, "{len}: {errors:?}");
            if !valid {
                assert!(errors[0].contains("EIP-3860"), "{errors:?}");
            }
        }
    }
}
