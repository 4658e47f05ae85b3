//! The platform's unsigned transaction (`rawTx`), parsed strictly.
//!
//! Shape (see `docs/platform.md`):
//!
//! ```json
//! { "from": "0x..", "to": "0x..", "data": "0x..", "nonce": "0x9",
//!   "gasLimit": "0x5208", "gasPrice": "0x4a817c800", "chainId": 617317 }
//! ```
//!
//! - `nonce`, `gasLimit`, `gasPrice` and the optional `value` are `0x` hex quantities
//!   without leading zeros (`"0x0"` for zero); a JSON number is accepted too.
//! - `chainId` is a JSON number, a `0x` hex quantity or a decimal string; it must be
//!   present and non-zero (EIP-155).
//! - Addresses are `0x` + 40 hex digits; mixed case must be a valid EIP-55 checksum.
//! - `data` is `0x` + an even number of hex digits (`"0x"` for none).
//! - Any other field is refused, naming it.

use alloy_consensus::{SignableTransaction, TxLegacy};
use alloy_primitives::{Address, B256, Bytes, TxKind, U256};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::Error;
use crate::error::shorten;

/// The fields a rawTx may have; anything else is refused.
pub const FIELDS: &[&str] = &[
    "from", "to", "data", "nonce", "gasLimit", "gasPrice", "chainId", "value",
];

/// An unsigned legacy transaction as the platform returns it, after strict parsing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RawTx {
    /// The sender; must be the signing key's address.
    #[serde(serialize_with = "ser_address")]
    pub from: Address,
    /// The callee. Contract creation is never signed, so this is always present.
    #[serde(serialize_with = "ser_address")]
    pub to: Address,
    /// The calldata.
    pub data: Bytes,
    /// The account nonce.
    #[serde(serialize_with = "ser_hex_u64")]
    pub nonce: u64,
    /// The gas limit.
    #[serde(serialize_with = "ser_hex_u64")]
    pub gas_limit: u64,
    /// The gas price in wei.
    #[serde(serialize_with = "ser_hex_u128")]
    pub gas_price: u128,
    /// The EIP-155 chain id, never 0.
    pub chain_id: u64,
    /// Wei sent along; the platform never sets it, so it defaults to zero.
    #[serde(skip_serializing_if = "U256::is_zero", serialize_with = "ser_hex_u256")]
    pub value: U256,
}

/// An address as bridgectl writes it in every document: EIP-55 mixed case (alloy's own
/// serde writes lower case).
pub(crate) fn ser_address<S: serde::Serializer>(a: &Address, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&a.to_checksum(None))
}

/// [`ser_address`] of an address that may be absent (`skip_serializing_if` it).
pub(crate) fn ser_opt_address<S: serde::Serializer>(
    a: &Option<Address>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match a {
        Some(a) => ser_address(a, s),
        None => s.serialize_none(),
    }
}

fn ser_hex_u64<S: serde::Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{v:#x}"))
}
fn ser_hex_u128<S: serde::Serializer>(v: &u128, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{v:#x}"))
}
fn ser_hex_u256<S: serde::Serializer>(v: &U256, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{v:#x}"))
}

const CTX: &str = "rawTx";

fn invalid(field: &str, expected: &str, found: &Value) -> Error {
    let found = match found {
        Value::String(s) => format!("{:?}", shorten(s)),
        other => shorten(&other.to_string()),
    };
    Error::InvalidField {
        context: CTX.into(),
        field: field.into(),
        expected: expected.into(),
        found,
    }
}

impl RawTx {
    /// Parses a rawTx from JSON text, strictly: a duplicate key anywhere is refused.
    pub fn from_json(text: &str) -> Result<RawTx, Error> {
        let v = bridgectl_json::from_slice(text.as_bytes()).map_err(Error::Json)?;
        RawTx::from_value(&v)
    }

    /// Parses a rawTx from a JSON value, strictly (see the module docs).
    pub fn from_value(v: &Value) -> Result<RawTx, Error> {
        let obj = v
            .as_object()
            .ok_or_else(|| invalid("(rawTx)", "a JSON object", v))?;
        reject_unknown(CTX, obj, FIELDS)?;
        let get = |field: &str, hint: Option<&str>| {
            obj.get(field).ok_or_else(|| Error::MissingField {
                context: CTX.into(),
                field: field.into(),
                hint: hint.map(str::to_owned),
            })
        };
        let from = address_field("from", get("from", None)?)?;
        let to_v = get("to", Some("contract creation is never signed by bridgectl"))?;
        if to_v.is_null() {
            return Err(Error::Refused(
                "rawTx: `to` is null: contract creation is never signed by bridgectl".into(),
            ));
        }
        let to = address_field("to", to_v)?;
        let data = data_field("data", get("data", Some("use \"0x\" for no calldata"))?)?;
        let nonce = quantity_field("nonce", get("nonce", None)?, 64)?.to::<u64>();
        let gas_limit = quantity_field("gasLimit", get("gasLimit", None)?, 64)?.to::<u64>();
        let gas_price = quantity_field("gasPrice", get("gasPrice", None)?, 128)?.to::<u128>();
        let chain_v = obj.get("chainId").ok_or_else(|| Error::MissingField {
            context: CTX.into(),
            field: "chainId".into(),
            hint: Some(
                "refusing to sign without EIP-155 replay protection (pre-EIP-155 signatures are never made)"
                    .into(),
            ),
        })?;
        let chain_id = chain_id_field(chain_v)?;
        let value = match obj.get("value") {
            None => U256::ZERO,
            Some(v) => quantity_field("value", v, 256)?,
        };
        Ok(RawTx {
            from,
            to,
            data,
            nonce,
            gas_limit,
            gas_price,
            chain_id,
            value,
        })
    }

    /// The most this transaction can cost in fees: `gasLimit * gasPrice`, in wei
    /// (cannot overflow: 64 + 128 bits).
    pub fn max_fee(&self) -> U256 {
        U256::from(self.gas_limit) * U256::from(self.gas_price)
    }

    /// The largest total the sender can spend: the maximum fee plus `value`.
    pub fn max_cost(&self) -> U256 {
        self.max_fee().saturating_add(self.value)
    }
}

/// Refuses fields of `obj` not in `known`, naming all of them.
pub(crate) fn reject_unknown(
    context: &str,
    obj: &Map<String, Value>,
    known: &[&str],
) -> Result<(), Error> {
    let unknown: Vec<String> = obj
        .keys()
        .filter(|k| !known.contains(&k.as_str()))
        .map(|k| format!("`{}`", shorten(k)))
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(Error::UnknownFields {
            context: context.into(),
            fields: unknown,
        })
    }
}

/// Parses an address: `0x` + 40 hex digits; mixed case must be a valid EIP-55 checksum.
pub fn parse_address(text: &str) -> Result<Address, String> {
    let expected = "an address (0x + 40 hex digits)";
    let hex = text
        .strip_prefix("0x")
        .ok_or_else(|| expected.to_string())?;
    if hex.len() != 40 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(expected.into());
    }
    let addr: Address = text.parse().map_err(|_| expected.to_string())?;
    let has_lower = hex.chars().any(|c| c.is_ascii_lowercase());
    let has_upper = hex.chars().any(|c| c.is_ascii_uppercase());
    if has_lower && has_upper && addr.to_checksum(None) != text {
        return Err(format!(
            "an address with a valid EIP-55 checksum (mixed case; correct is {})",
            addr.to_checksum(None)
        ));
    }
    Ok(addr)
}

fn address_field(field: &str, v: &Value) -> Result<Address, Error> {
    let s = v
        .as_str()
        .ok_or_else(|| invalid(field, "an address string", v))?;
    parse_address(s).map_err(|expected| invalid(field, &expected, v))
}

fn data_field(field: &str, v: &Value) -> Result<Bytes, Error> {
    let expected = "0x followed by an even number of hex digits";
    let s = v.as_str().ok_or_else(|| invalid(field, expected, v))?;
    let hex = s
        .strip_prefix("0x")
        .ok_or_else(|| invalid(field, expected, v))?;
    if hex.len() % 2 != 0 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(invalid(field, expected, v));
    }
    let mut out = vec![0u8; hex.len() / 2];
    for (i, pair) in hex.as_bytes().chunks(2).enumerate() {
        let hi = hex_val(pair[0]);
        let lo = hex_val(pair[1]);
        out[i] = (hi << 4) | lo;
    }
    Ok(Bytes::from(out))
}

fn hex_val(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => 0,
    }
}

/// Parses a `0x` hex quantity (no leading zeros, `0x0` for zero) of at most `bits`
/// bits. A JSON number (non-negative integer) is accepted too.
fn quantity_field(field: &str, v: &Value, bits: usize) -> Result<U256, Error> {
    let expected = format!("a 0x hex quantity without leading zeros, below 2^{bits}");
    let value = match v {
        Value::String(s) => parse_hex_quantity(s).map_err(|e| invalid(field, &e, v))?,
        Value::Number(n) => U256::from(n.as_u64().ok_or_else(|| invalid(field, &expected, v))?),
        _ => return Err(invalid(field, &expected, v)),
    };
    if value.bit_len() > bits {
        return Err(invalid(field, &expected, v));
    }
    Ok(value)
}

/// Parses `0x`-prefixed hex without leading zeros (`0x0` for zero), up to 256 bits.
pub fn parse_hex_quantity(s: &str) -> Result<U256, String> {
    let hex = s
        .strip_prefix("0x")
        .ok_or_else(|| "a 0x hex quantity (missing 0x prefix)".to_string())?;
    if hex.is_empty() {
        return Err("a 0x hex quantity (no digits after 0x; zero is 0x0)".into());
    }
    if !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err("a 0x hex quantity (only hex digits after 0x)".into());
    }
    if hex.len() > 1 && hex.starts_with('0') {
        return Err("a 0x hex quantity without leading zeros".into());
    }
    if hex.len() > 64 {
        return Err("a 0x hex quantity below 2^256".into());
    }
    U256::from_str_radix(hex, 16).map_err(|_| "a 0x hex quantity below 2^256".into())
}

fn chain_id_field(v: &Value) -> Result<u64, Error> {
    let expected = "a chain id: a JSON number, 0x hex or a decimal string, below 2^64";
    let id = match v {
        Value::Number(n) => n.as_u64().ok_or_else(|| invalid("chainId", expected, v))?,
        Value::String(s) if s.starts_with("0x") => {
            let q = parse_hex_quantity(s).map_err(|_| invalid("chainId", expected, v))?;
            if q.bit_len() > 64 {
                return Err(invalid("chainId", expected, v));
            }
            q.to::<u64>()
        }
        Value::String(s) => {
            if s.is_empty()
                || !s.chars().all(|c| c.is_ascii_digit())
                || (s.len() > 1 && s.starts_with('0'))
            {
                return Err(invalid("chainId", expected, v));
            }
            s.parse::<u64>()
                .map_err(|_| invalid("chainId", expected, v))?
        }
        Value::Null => {
            return Err(Error::MissingField {
                context: CTX.into(),
                field: "chainId".into(),
                hint: Some(
                    "chainId is null: refusing to sign without EIP-155 replay protection".into(),
                ),
            });
        }
        _ => return Err(invalid("chainId", expected, v)),
    };
    if id == 0 {
        return Err(Error::ZeroChainId);
    }
    Ok(id)
}

/// The alloy transaction for `tx`, with its chain id set (EIP-155).
pub fn to_legacy(tx: &RawTx) -> TxLegacy {
    TxLegacy {
        chain_id: Some(tx.chain_id),
        nonce: tx.nonce,
        gas_price: tx.gas_price,
        gas_limit: tx.gas_limit,
        to: TxKind::Call(tx.to),
        value: tx.value,
        input: tx.data.clone(),
    }
}

/// The EIP-155 signing hash of `tx`: what the key signs.
pub fn signing_hash(tx: &RawTx) -> B256 {
    to_legacy(tx).signature_hash()
}

/// A signed transaction, ready to submit as `{"signedTx": raw}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedTx {
    /// The signed RLP bytes.
    pub raw: Bytes,
    /// `keccak256(raw)`, the transaction hash.
    pub hash: B256,
    /// The signer.
    pub from: Address,
    /// The EIP-155 chain id signed for.
    pub chain_id: u64,
    /// The nonce.
    pub nonce: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn base() -> Value {
        json!({
            "from": "0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f",
            "to": "0x3535353535353535353535353535353535353535",
            "data": "0x",
            "nonce": "0x9",
            "gasLimit": "0x5208",
            "gasPrice": "0x4a817c800",
            "chainId": 1
        })
    }

    fn with(field: &str, v: Value) -> Value {
        let mut b = base();
        b[field] = v;
        b
    }

    fn without(field: &str) -> Value {
        let mut b = base();
        b.as_object_mut().expect("obj").remove(field);
        b
    }

    #[test]
    fn parses_the_platform_shape() {
        let tx = RawTx::from_value(&base()).expect("parse");
        assert_eq!(tx.nonce, 9);
        assert_eq!(tx.gas_limit, 21000);
        assert_eq!(tx.gas_price, 20_000_000_000);
        assert_eq!(tx.chain_id, 1);
        assert_eq!(tx.value, U256::ZERO);
        assert!(tx.data.is_empty());
        // Round trip through our own serialisation.
        let again = RawTx::from_value(&serde_json::to_value(&tx).expect("ser")).expect("parse");
        assert_eq!(tx, again);
    }

    #[test]
    fn chain_id_forms() {
        for (v, want) in [
            (json!(617317), 617317u64),
            (json!("0x96b65"), 617317),
            (json!("617317"), 617317),
            (json!(u64::MAX), u64::MAX),
        ] {
            assert_eq!(
                RawTx::from_value(&with("chainId", v.clone()))
                    .expect("ok")
                    .chain_id,
                want,
                "{v}"
            );
        }
        for v in [
            json!("0x"),
            json!("01"),
            json!(-1),
            json!(1.5),
            json!("0x10000000000000000"),
            json!(true),
            json!("1e3"),
        ] {
            let e = RawTx::from_value(&with("chainId", v.clone()))
                .expect_err("bad")
                .to_string();
            assert!(e.contains("chainId"), "{v}: {e}");
        }
    }

    #[test]
    fn refusals_name_the_field() {
        let cases: Vec<(Value, &str)> = vec![
            (without("chainId"), "missing field `chainId`"),
            (with("chainId", Value::Null), "chainId is null"),
            (with("chainId", json!(0)), "chainId is 0"),
            (with("chainId", json!("0x0")), "chainId is 0"),
            (with("surprise", json!(1)), "unknown field(s) `surprise`"),
            (
                with("nonce", json!("0x09")),
                "field `nonce`: expected a 0x hex quantity without leading zeros",
            ),
            (with("nonce", json!("9")), "missing 0x prefix"),
            (with("nonce", json!("0x")), "no digits after 0x"),
            (with("nonce", json!("0xg")), "only hex digits"),
            (with("nonce", json!("0x10000000000000000")), "below 2^64"),
            (
                with("gasPrice", json!(format!("{:#x}", U256::from(1) << 128))),
                "below 2^128",
            ),
            (with("data", json!("0x123")), "even number of hex digits"),
            (with("data", json!("12")), "field `data`"),
            (with("to", json!("0x35353535")), "field `to`"),
            (with("to", Value::Null), "contract creation"),
            (without("to"), "missing field `to`"),
            (
                with("from", json!("0x9D8a62f656a8d1615c1294fd71e9cfb3e4855a4f")),
                "EIP-55",
            ),
            (without("gasLimit"), "missing field `gasLimit`"),
        ];
        for (v, want) in cases {
            let e = RawTx::from_value(&v).expect_err(want).to_string();
            assert!(e.contains(want), "{e:?} lacks {want:?}");
        }
        let e = RawTx::from_json("[1]").expect_err("array").to_string();
        assert!(e.contains("a JSON object"), "{e}");
        let e = RawTx::from_json("{").expect_err("json").to_string();
        assert!(e.contains("not valid JSON"), "{e}");
    }

    #[test]
    fn accepts_checksummed_and_value() {
        let mut v = with("from", json!("0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F"));
        v["value"] = json!("0xde0b6b3a7640000");
        let tx = RawTx::from_value(&v).expect("ok");
        assert_eq!(tx.value, U256::from(1_000_000_000_000_000_000u128));
        assert_eq!(tx.max_fee(), U256::from(420_000_000_000_000u64));
    }

    /// The field parsers at their edges: upper-case hex digits, a JSON number, the
    /// widest value each bound allows, and the decimal chain id forms.
    #[test]
    fn field_parsers_at_their_edges() {
        let data = data_field("data", &json!("0xAbCdEF09")).expect("data");
        assert_eq!(data.as_ref(), [0xab, 0xcd, 0xef, 0x09]);
        let q = |v: Value, bits| quantity_field("nonce", &v, bits).ok();
        assert_eq!(q(json!(5), 64), Some(U256::from(5u8)));
        assert_eq!(
            q(json!("0xffffffffffffffff"), 64),
            Some(U256::from(u64::MAX))
        );
        assert_eq!(q(json!("0x10000000000000000"), 64), None);
        let max = format!("0x{}", "f".repeat(64));
        assert_eq!(parse_hex_quantity(&max), Ok(U256::MAX));
        assert!(parse_hex_quantity(&format!("0x1{}", "0".repeat(64))).is_err());
        let id = |v: Value| chain_id_field(&v).ok();
        assert_eq!(id(json!("0xffffffffffffffff")), Some(u64::MAX));
        assert_eq!(id(json!("31337")), Some(31337));
        for bad in ["", "01", "1a", "0x10000000000000000"] {
            assert_eq!(id(json!(bad)), None, "{bad:?}");
        }
    }
}
