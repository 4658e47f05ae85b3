//! What an account has: its next nonce, token balances, and a raw MT transfer built for it.

use super::hostile::{tamper, tampered_nonce};
use std::collections::HashMap;

use alloy_dyn_abi::DynSolValue;
use alloy_primitives::{Address, Bytes, U256};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::json;

use crate::api::envelope::{ApiError, JsonBody, ok};
use crate::chain::Chain;
use crate::contracts;
use crate::state::AppState;

use super::common::{ApiResult, parse_address, q};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NonceQuery {
    environment_id: String,
}

pub(crate) async fn nonce(
    State(state): State<AppState>,
    Path(address): Path<String>,
    JsonBody(req): JsonBody<NonceQuery>,
) -> ApiResult {
    let address = parse_address("path address", &address)?;
    let chain = state
        .chain_by_env(&req.environment_id)
        .ok_or_else(|| state.env_error("environmentId", &req.environment_id))?;
    let mut nonce = chain
        .rpc
        .pending_nonce(address)
        .await
        .map_err(ApiError::node)?;
    if let Some(h) = state.hostile() {
        nonce = tampered_nonce(h, nonce);
    }
    Ok(ok(
        json!({"address": address, "environmentId": req.environment_id, "nonce": nonce}),
    ))
}

pub(crate) async fn raw_transfer(
    State(state): State<AppState>,
    Path(symbol): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult {
    let info = &state.0.info;
    if symbol != info.main.symbol {
        return Err(ApiError::not_found(
            "TOKEN_NOT_FOUND",
            format!(
                "path symbol: unknown main token {symbol:?}; expected {:?}",
                info.main.symbol
            ),
        ));
    }
    let get = |k: &str| {
        query
            .get(k)
            .ok_or_else(|| ApiError::bad("INVALID_FIELD", format!("query {k}: missing")))
    };
    let env = get("mainEnvironmentId")?;
    if *env != info.main.environment_id {
        return Err(state.env_error("mainEnvironmentId", env));
    }
    let from = parse_address("query fromAddress", get("fromAddress")?)?;
    let to = parse_address("query toAddress", get("toAddress")?)?;
    let amount = get("amount")?;
    if amount.is_empty() || !amount.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ApiError::bad(
            "INVALID_FIELD",
            format!("query amount: expected a decimal integer of base units, found {amount:?}"),
        ));
    }
    let amount = U256::from_str_radix(amount, 10)
        .map_err(|_| ApiError::bad("INVALID_FIELD", "query amount: overflows uint256"))?;
    let data: Bytes = DynSolValue::Tuple(vec![
        DynSolValue::Address(to),
        DynSolValue::Uint(amount, 256),
    ])
    .abi_encode_params()
    .into();
    let data: Bytes = [contracts::TRANSFER_SELECTOR.as_slice(), data.as_ref()]
        .concat()
        .into();
    let chain = &state.0.main;
    let token = info.main.token_address;
    let gas = chain
        .rpc
        .estimate_gas(from, token, &data)
        .await
        .map_err(ApiError::node)?;
    let nonce = chain
        .rpc
        .pending_nonce(from)
        .await
        .map_err(ApiError::node)?;
    let gas_price = chain.rpc.gas_price().await.map_err(ApiError::node)?;
    let mut raw_tx = json!({
        "from": from,
        "to": token,
        "data": data,
        "nonce": q(nonce),
        "gasLimit": q(gas.saturating_mul(6) / 5),
        "gasPrice": q(gas_price),
        "chainId": chain.chain_id,
    });
    if let Some(h) = state.hostile() {
        tamper(&mut raw_tx, h, &data, gas_price, chain.chain_id);
    }
    Ok(ok(json!({ "rawTx": raw_tx })))
}

pub(crate) async fn token_balance(
    chain: &Chain,
    token: Address,
    owner: Address,
) -> Result<U256, ApiError> {
    let data: Bytes = [
        [0x70u8, 0xa0, 0x82, 0x31].as_slice(),
        DynSolValue::Address(owner).abi_encode().as_slice(),
    ]
    .concat()
    .into();
    let out = chain
        .rpc
        .eth_call(None, token, &data)
        .await
        .map_err(ApiError::node)?;
    if out.len() != 32 {
        return Err(ApiError::new(
            StatusCode::BAD_GATEWAY,
            "NODE_ERROR",
            "balanceOf returned no uint256",
        ));
    }
    Ok(U256::from_be_slice(&out))
}

impl AppState {
    /// MT balance (base units) of `owner` on the main chain.
    pub async fn mt_balance(&self, owner: Address) -> Result<U256, ApiError> {
        token_balance(&self.0.main, self.0.info.main.token_address, owner).await
    }

    /// ST balance (base units) of `owner` on the side chain.
    pub async fn st_balance(&self, owner: Address) -> Result<U256, ApiError> {
        token_balance(&self.0.side, self.0.info.side.token_address, owner).await
    }
}

pub(crate) async fn balance_mt(
    State(state): State<AppState>,
    Path((address, mt)): Path<(String, String)>,
) -> ApiResult {
    let address = parse_address("path address", &address)?;
    check_symbol(&state, "main", &mt)?;
    let b = state.mt_balance(address).await?;
    Ok(ok(
        json!({"address": address, "symbol": mt, "balance": b.to_string()}),
    ))
}

pub(crate) async fn balance_st(
    State(state): State<AppState>,
    Path((address, mt, st)): Path<(String, String, String)>,
) -> ApiResult {
    let address = parse_address("path address", &address)?;
    check_symbol(&state, "main", &mt)?;
    check_symbol(&state, "side", &st)?;
    let b = state.st_balance(address).await?;
    Ok(ok(
        json!({"address": address, "symbol": st, "balance": b.to_string()}),
    ))
}

pub(crate) fn check_symbol(state: &AppState, which: &str, found: &str) -> Result<(), ApiError> {
    let want = if which == "main" {
        &state.0.info.main.symbol
    } else {
        &state.0.info.side.symbol
    };
    if found != want {
        return Err(ApiError::not_found(
            "TOKEN_NOT_FOUND",
            format!("path {which} token symbol: unknown {found:?}; expected {want:?}"),
        ));
    }
    Ok(())
}
