//! Redemption results, by txId or transaction hash.

use alloy_primitives::B256;
use axum::extract::{Path, State};
use serde::Deserialize;
use serde_json::Value;
use uuid::Uuid;

use crate::api::envelope::{ApiError, JsonBody, ok};
use crate::state::{AppState, lock};

use super::common::ApiResult;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RedeemQuery {
    side_environment_id: String,
}

pub(crate) async fn redemption(
    State(state): State<AppState>,
    Path(id): Path<String>,
    JsonBody(req): JsonBody<RedeemQuery>,
) -> ApiResult {
    if req.side_environment_id != state.0.info.side.environment_id {
        return Err(state.env_error("sideEnvironmentId", &req.side_environment_id));
    }
    let hash = if let Ok(uuid) = Uuid::parse_str(&id) {
        let ex = lock(&state.0.executions).get(&uuid).cloned();
        let ex = ex.ok_or_else(|| {
            ApiError::not_found(
                "REDEMPTION_NOT_FOUND",
                format!("no transaction action was executed with txId {uuid}"),
            )
        })?;
        ex.tx_hash.ok_or_else(|| {
            ApiError::not_found(
                "REDEMPTION_NOT_FOUND",
                format!("txId {uuid} is known but its signed transaction was not submitted yet"),
            )
        })?
    } else if id.len() == 66 && id.starts_with("0x") {
        id.parse::<B256>().map_err(|_| {
            ApiError::bad(
                "INVALID_FIELD",
                format!("path: {id:?} is not a transaction hash"),
            )
        })?
    } else {
        return Err(ApiError::bad(
            "INVALID_FIELD",
            format!(
                "path: expected a txId (UUID) or a 0x-prefixed 32-byte transaction hash, found {id:?}"
            ),
        ));
    };
    let rec = state.redemption(hash).ok_or_else(|| {
        ApiError::not_found(
            "REDEMPTION_NOT_FOUND",
            format!("no redemption for transaction {hash}"),
        )
    })?;
    Ok(ok(serde_json::to_value(rec).unwrap_or(Value::Null)))
}
