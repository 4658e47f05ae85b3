//! Operation 2: the platform signs a managed account's raw transaction (tampered as the
//! hostile settings ask).

use super::hostile::{HOSTILE_GAS_LIMIT, tampered_data, tampered_nonce};

use alloy_primitives::{Address, B256, Bytes, U256};
use alloy_signer_local::PrivateKeySigner;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::envelope::{ApiError, JsonBody, ok};
use crate::chain::{Unsigned, sign_legacy};
use crate::state::{AppState, lock};

use super::common::{ApiResult, hex_quantity, parse_address};

/// The rawTx object of the platform, as sent to op 2.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawTxIn {
    from: Option<String>,
    to: String,
    data: String,
    nonce: String,
    gas_limit: String,
    gas_price: String,
    chain_id: Value,
    #[serde(default)]
    value: Option<String>,
}

pub(crate) fn parse_raw_tx(raw: Value) -> Result<(Option<Address>, Unsigned), ApiError> {
    // The spec calls it a string holding the object; the known clients send the object.
    let raw = match raw {
        Value::String(s) => serde_json::from_str(&s).map_err(|e| {
            ApiError::bad("INVALID_RAW_TX", format!("rawTx: not a JSON object: {e}"))
        })?,
        other => other,
    };
    let r: RawTxIn = serde_json::from_value(raw)
        .map_err(|e| ApiError::bad("INVALID_RAW_TX", format!("rawTx: {e}")))?;
    let from = r
        .from
        .as_deref()
        .map(|f| parse_address("rawTx.from", f))
        .transpose()?;
    let to = parse_address("rawTx.to", &r.to)?;
    let data: Bytes = r.data.parse().map_err(|_| {
        ApiError::bad(
            "INVALID_RAW_TX",
            format!("rawTx.data: expected 0x hex, found {:?}", r.data),
        )
    })?;
    let chain_id = match &r.chain_id {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s
            .strip_prefix("0x")
            .map_or_else(|| s.parse().ok(), |h| u64::from_str_radix(h, 16).ok()),
        _ => None,
    }
    .ok_or_else(|| {
        ApiError::bad(
            "INVALID_RAW_TX",
            format!("rawTx.chainId: expected an integer, found {}", r.chain_id),
        )
    })?;
    let value = match r.value.as_deref() {
        None => U256::ZERO,
        Some(v) => U256::from(hex_quantity("rawTx.value", v)?),
    };
    let nonce = u64::try_from(hex_quantity("rawTx.nonce", &r.nonce)?)
        .map_err(|_| ApiError::bad("INVALID_RAW_TX", "rawTx.nonce: out of range"))?;
    let gas_limit = u64::try_from(hex_quantity("rawTx.gasLimit", &r.gas_limit)?)
        .map_err(|_| ApiError::bad("INVALID_RAW_TX", "rawTx.gasLimit: out of range"))?;
    let tx = Unsigned {
        chain_id,
        nonce,
        gas_price: hex_quantity("rawTx.gasPrice", &r.gas_price)?,
        gas_limit,
        to: Some(to),
        value,
        data,
    };
    Ok((from, tx))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SignRequest {
    raw_tx: Value,
}

pub(crate) async fn sign(
    State(state): State<AppState>,
    Path(address): Path<String>,
    JsonBody(req): JsonBody<SignRequest>,
) -> ApiResult {
    let address = parse_address("path address", &address)?;
    let signer = lock(&state.0.managed)
        .get(&address)
        .cloned()
        .ok_or_else(|| {
            ApiError::not_found(
                "ACCOUNT_NOT_MANAGED",
                format!(
                    "{address} is not a managed account of this sandbox; sign it yourself (EOA)"
                ),
            )
        })?;
    let (from, tx) = parse_raw_tx(req.raw_tx)?;
    if let Some(from) = from
        && from != address
    {
        return Err(ApiError::bad(
            "INVALID_RAW_TX",
            format!("rawTx.from: expected {address} (the path address), found {from}"),
        ));
    }
    if state.chain_by_id(tx.chain_id).is_none() {
        return Err(ApiError::bad(
            "WRONG_CHAIN",
            format!(
                "rawTx.chainId: expected {} or {}, found {}",
                state.0.main.chain_id, state.0.side.chain_id, tx.chain_id
            ),
        ));
    }
    let signed = match state.hostile() {
        None => sign_legacy(&signer, &tx),
        Some(h) => sign_tampered(&signer, tx, h),
    };
    let (raw, hash) = signed.map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL",
            format!("signing failed: {e}"),
        )
    })?;
    Ok(ok(json!({"signedTx": raw, "txHash": hash})))
}

/// Hostile-platform mode for operation 2: signs something other than `tx`, the way `h`
/// says (see [`crate::config::Hostile`]): another signer, another field, a signature
/// without a chain id, or an EIP-1559 transaction where a legacy one was asked for.
pub(crate) fn sign_tampered(
    signer: &PrivateKeySigner,
    mut tx: Unsigned,
    h: crate::config::Hostile,
) -> Result<(Bytes, B256), alloy_signer::Error> {
    use crate::config::Hostile as H;
    match h {
        H::OtherFrom => {
            let other = crate::chain::random_signer().map_err(alloy_signer::Error::other)?;
            return sign_legacy(&other, &tx);
        }
        H::MissingChainId => return crate::chain::sign_pre_eip155(signer, &tx),
        H::ExtraField => return crate::chain::sign_eip1559(signer, &tx),
        H::OtherChainId => tx.chain_id += 1,
        H::OtherContract => tx.to = Some(Address::repeat_byte(0x66)),
        H::OtherSelector | H::OtherAmount => tx.data = tampered_data(h, &tx.data),
        H::InflatedGasPrice => tx.gas_price = tx.gas_price.saturating_mul(1000),
        H::InflatedGasLimit => tx.gas_limit = HOSTILE_GAS_LIMIT,
        H::NonceGap | H::NonceReplacement => tx.nonce = tampered_nonce(h, tx.nonce),
    }
    sign_legacy(signer, &tx)
}
