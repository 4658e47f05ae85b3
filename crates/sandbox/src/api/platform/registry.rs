//! Sandbox-only routes: registering accounts, funding them, managed accounts, and the
//! hostile switches tests turn on.

use alloy_primitives::{Address, U256};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::json;

use crate::api::envelope::{ApiError, JsonBody, ok};
use crate::state::{AppState, lock};

use super::common::{ApiResult, parse_address};

pub(crate) async fn register(
    State(state): State<AppState>,
    Path(address): Path<String>,
) -> ApiResult {
    let address = parse_address("path address", &address)?;
    state
        .register_fee_delegation(address)
        .await
        .map_err(ApiError::node)?;
    Ok(ok(json!({"address": address, "registered": true})))
}

/// Body of `POST /sandbox/v1/fund/{address}`: base units, decimal strings.
#[derive(Deserialize)]
pub(crate) struct FundRequest {
    #[serde(default)]
    mt: Option<String>,
    #[serde(default)]
    st: Option<String>,
}

pub(crate) async fn fund(
    State(state): State<AppState>,
    Path(address): Path<String>,
    JsonBody(req): JsonBody<FundRequest>,
) -> ApiResult {
    let address = parse_address("path address", &address)?;
    let amount = |field: &str, v: &Option<String>| {
        v.as_deref().map_or(Ok(U256::ZERO), |t| {
            U256::from_str_radix(t, 10).map_err(|_| {
                ApiError::bad("INVALID_AMOUNT", format!("{field}: not a decimal integer"))
            })
        })
    };
    let (mt, st) = (amount("mt", &req.mt)?, amount("st", &req.st)?);
    state
        .fund(address, mt, st)
        .await
        .map_err(|e| ApiError::new(StatusCode::BAD_GATEWAY, "NODE_ERROR", e.to_string()))?;
    Ok(ok(
        json!({"address": address, "mt": mt.to_string(), "st": st.to_string()}),
    ))
}

/// Body of `POST /sandbox/v1/chains/{chain}/reorg`: how many of the newest blocks to
/// replace.
#[derive(Deserialize)]
pub(crate) struct ReorgRequest {
    depth: u64,
}

/// `POST /sandbox/v1/chains/{main|side}/reorg` `{"depth": n}`: the chain's newest `n`
/// blocks are replaced by as many empty ones (anvil's `anvil_reorg`); the transactions
/// in them are gone, as a real reorganisation takes them back. Answers the chain's head
/// before and after.
pub(crate) async fn reorg(
    State(state): State<AppState>,
    Path(chain): Path<String>,
    JsonBody(req): JsonBody<ReorgRequest>,
) -> ApiResult {
    let (head, after) = state.reorg(&chain, req.depth).await.map_err(|e| match e {
        crate::state::ReorgError::Node(e) => ApiError::node(e),
        other => ApiError::bad("INVALID_REORG", other.to_string()),
    })?;
    Ok(ok(
        json!({"chain": chain, "depth": req.depth, "head": head, "headAfter": after}),
    ))
}

/// `POST /sandbox/v1/chains/{main|side}/rpc`: the chain's JSON-RPC, a second endpoint
/// beside the node's own URL (a second witness for a chain reset, the way a second
/// node would be). Its answers are the node's, unwrapped: a JSON-RPC client reads them.
pub(crate) async fn chain_rpc(
    State(state): State<AppState>,
    Path(chain): Path<String>,
    axum::Json(request): axum::Json<serde_json::Value>,
) -> Result<axum::Json<serde_json::Value>, ApiError> {
    let rpc = match chain.as_str() {
        "main" => &state.0.main.rpc,
        "side" => &state.0.side.rpc,
        other => {
            return Err(ApiError::bad(
                "INVALID_CHAIN",
                format!("no chain {other:?}: `main` or `side`"),
            ));
        }
    };
    rpc.forward(&request)
        .await
        .map(axum::Json)
        .map_err(ApiError::node)
}

/// Body of `POST /sandbox/v1/chains/{chain}/mining`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct MiningRequest {
    automine: bool,
    interval_ms: u64,
}

/// `POST /sandbox/v1/chains/{main|side}/mining` `{"automine": bool, "intervalMs": n}`:
/// a block for every transaction as it arrives, and one every `intervalMs` besides (0:
/// none on a timer). Both off, transactions wait in the node's pool.
pub(crate) async fn mining(
    State(state): State<AppState>,
    Path(chain): Path<String>,
    JsonBody(req): JsonBody<MiningRequest>,
) -> ApiResult {
    state
        .set_mining(&chain, req.automine, req.interval_ms)
        .await
        .map_err(|e| match e {
            crate::state::ReorgError::Node(e) => ApiError::node(e),
            other => ApiError::bad("INVALID_CHAIN", other.to_string()),
        })?;
    Ok(ok(
        json!({"chain": chain, "automine": req.automine, "intervalMs": req.interval_ms}),
    ))
}

/// Body of `POST /sandbox/v1/hostile`: hostile mode on (`kind`, optionally only for
/// actions with an input of value `input`) or off (`kind` null).
#[derive(Deserialize)]
pub(crate) struct HostileRequest {
    kind: Option<crate::config::Hostile>,
    #[serde(default)]
    input: Option<String>,
}

pub(crate) async fn hostile(
    State(state): State<AppState>,
    JsonBody(req): JsonBody<HostileRequest>,
) -> ApiResult {
    match (req.kind, &req.input) {
        (Some(kind), Some(input)) => state.set_hostile_for_input(kind, input),
        (kind, _) => state.set_hostile(kind),
    }
    Ok(ok(json!({"kind": req.kind, "input": req.input})))
}

pub(crate) async fn registration(
    State(state): State<AppState>,
    Path(address): Path<String>,
) -> ApiResult {
    let address = parse_address("path address", &address)?;
    Ok(ok(
        json!({"address": address, "registered": state.is_registered(address)}),
    ))
}

pub(crate) async fn create_managed(State(state): State<AppState>) -> ApiResult {
    let signer = crate::chain::random_signer()
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", e))?;
    let address = state.add_managed(signer).await.map_err(ApiError::node)?;
    Ok(ok(json!({"address": address})))
}

pub(crate) async fn list_managed(State(state): State<AppState>) -> ApiResult {
    let mut items: Vec<Address> = lock(&state.0.managed).keys().copied().collect();
    items.sort();
    Ok(ok(json!({"total": items.len(), "items": items})))
}
