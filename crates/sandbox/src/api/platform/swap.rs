//! Operation 1: a swap address per account, and the sandbox's list of them.

use alloy_primitives::Address;
use axum::extract::{Path, State};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::envelope::{ApiError, JsonBody, ok};
use crate::state::{AppState, SwapAddress, lock};

use super::common::{ApiResult, parse_address};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SwapRequest {
    main_environment_id: String,
    side_environment_id: String,
    main_token_symbol: String,
    side_token_symbol: String,
}

pub(crate) async fn swap(
    State(state): State<AppState>,
    Path(user): Path<String>,
    JsonBody(req): JsonBody<SwapRequest>,
) -> ApiResult {
    let user = parse_address("path userAddress", &user)?;
    let info = &state.0.info;
    if req.main_environment_id != info.main.environment_id {
        return Err(state.env_error("mainEnvironmentId", &req.main_environment_id));
    }
    if req.side_environment_id != info.side.environment_id {
        return Err(state.env_error("sideEnvironmentId", &req.side_environment_id));
    }
    for (field, found, want) in [
        ("mainTokenSymbol", &req.main_token_symbol, &info.main.symbol),
        ("sideTokenSymbol", &req.side_token_symbol, &info.side.symbol),
    ] {
        if found != want {
            return Err(ApiError::not_found(
                "TOKEN_NOT_FOUND",
                format!("{field}: unknown token {found:?}; expected {want:?}"),
            ));
        }
    }
    let mut rec = SwapAddress {
        swap_address: Address::ZERO,
        user_address: user,
        main_environment_id: req.main_environment_id,
        side_environment_id: req.side_environment_id,
        main_token_symbol: req.main_token_symbol,
        side_token_symbol: req.side_token_symbol,
    };
    rec.swap_address = state.swap_address(&rec);
    lock(&state.0.swap_addresses).insert(rec.swap_address, rec.clone());
    Ok(ok(serde_json::to_value(&rec).unwrap_or(Value::Null)))
}

pub(crate) async fn list_swaps(State(state): State<AppState>) -> ApiResult {
    let items = state.swaps();
    Ok(ok(json!({"total": items.len(), "items": items})))
}
