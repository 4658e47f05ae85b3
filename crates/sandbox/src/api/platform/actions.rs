//! Transaction actions: executed into a raw transaction (EOA), a submission (managed) or a
//! value (view), and the sandbox's list of them.

use super::hostile::tamper;
use std::collections::BTreeMap;

use alloy_dyn_abi::{DynSolType, DynSolValue, FunctionExt, JsonAbiExt};
use alloy_json_abi::{Function, StateMutability};
use alloy_primitives::{Address, B256, Bytes};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::api::envelope::{ApiError, JsonBody, ok};
use crate::api::faults::dropped;
use crate::config::ContractKind;
use crate::contracts;
use crate::state::{AppState, Execution, lock};

use super::common::{ApiResult, parse_address, q};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExecuteRequest {
    tx_id: String,
    from: String,
    inputs: BTreeMap<String, Value>,
    #[serde(default)]
    #[allow(dead_code)]
    callback_url: Option<String>,
}

/// Checks and converts the inputs against the function's parameters.
pub(crate) fn encode_inputs(
    function: &Function,
    inputs: &BTreeMap<String, Value>,
) -> Result<Bytes, ApiError> {
    let bad = |m: String| ApiError::bad("INVALID_INPUT", m);
    let names: Vec<&str> = function.inputs.iter().map(|p| p.name.as_str()).collect();
    for key in inputs.keys() {
        if !names.contains(&key.as_str()) {
            return Err(bad(format!(
                "inputs.{key}: {} has no such parameter; expected: {}",
                function.name,
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            )));
        }
    }
    let mut values = Vec::new();
    for p in &function.inputs {
        let v = inputs
            .get(&p.name)
            .ok_or_else(|| bad(format!("inputs.{}: missing ({} {})", p.name, p.ty, p.name)))?;
        let Value::String(s) = v else {
            return Err(bad(format!(
                "inputs.{}: expected a string, found {v}",
                p.name
            )));
        };
        let ty = DynSolType::parse(&p.ty)
            .map_err(|e| bad(format!("inputs.{}: type {}: {e}", p.name, p.ty)))?;
        let well_formed = match &ty {
            DynSolType::Uint(_) => !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()),
            DynSolType::Address => parse_address("", s).is_ok(),
            DynSolType::Bool => s == "true" || s == "false",
            _ => true,
        };
        if !well_formed {
            return Err(bad(format!(
                "inputs.{}: expected {} ({}), found {s:?}",
                p.name,
                p.ty,
                match &ty {
                    DynSolType::Uint(_) => "a decimal integer string",
                    DynSolType::Address => "a 0x-prefixed 20-byte hex address",
                    _ => "true or false",
                }
            )));
        }
        let value = ty.coerce_str(s).map_err(|e| {
            bad(format!(
                "inputs.{}: expected {}, found {s:?}: {e}",
                p.name, p.ty
            ))
        })?;
        values.push(value);
    }
    function
        .abi_encode_input(&values)
        .map(Bytes::from)
        .map_err(|e| bad(format!("inputs: {e}")))
}

pub(crate) fn show(v: &DynSolValue) -> Value {
    match v {
        DynSolValue::Uint(u, _) => Value::String(u.to_string()),
        DynSolValue::Address(a) => Value::String(a.to_checksum(None)),
        DynSolValue::Bool(b) => Value::Bool(*b),
        DynSolValue::String(s) => Value::String(s.clone()),
        other => Value::String(format!("{other:?}")),
    }
}

pub(crate) async fn execute(
    State(state): State<AppState>,
    Path(action): Path<String>,
    JsonBody(req): JsonBody<ExecuteRequest>,
) -> ApiResult {
    let act = state.0.actions.get(&action).cloned().ok_or_else(|| {
        ApiError::not_found(
            "ACTION_NOT_FOUND",
            format!(
                "no transaction action named {action:?}; defined: {}",
                state
                    .0
                    .actions
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    })?;
    let tx_id = Uuid::parse_str(&req.tx_id)
        .ok()
        .filter(|u| u.get_version_num() == 4)
        .ok_or_else(|| {
            ApiError::bad(
                "INVALID_TX_ID",
                format!("txId: expected a UUID v4, found {:?}", req.tx_id),
            )
        })?;
    let from = parse_address("from", &req.from)?;
    let function = contracts::abi(act.contract)
        .function(&act.function)
        .and_then(|f| f.first())
        .cloned()
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "INTERNAL",
                "action maps no function",
            )
        })?;
    let data = encode_inputs(&function, &req.inputs)?;
    if lock(&state.0.executions).contains_key(&tx_id) {
        return Err(reused(tx_id));
    }
    let info = &state.0.info;
    let (chain, to) = match act.contract {
        ContractKind::St => (&state.0.side, info.side.token_address),
        ContractKind::Mt => (&state.0.main, info.main.token_address),
    };
    if reads_only(&function) {
        let out = chain
            .rpc
            .eth_call(Some(from), to, &data)
            .await
            .map_err(ApiError::node)?;
        let values = function.abi_decode_output(&out).map_err(|e| {
            ApiError::new(
                StatusCode::BAD_GATEWAY,
                "NODE_ERROR",
                format!("cannot decode the result: {e}"),
            )
        })?;
        let value = match values.as_slice() {
            [one] => show(one),
            many => Value::Array(many.iter().map(show).collect()),
        };
        remember(
            &state,
            tx_id,
            from,
            chain.chain_id,
            None,
            to,
            data.clone(),
            None,
        )?;
        return Ok(ok(
            json!({"txId": tx_id, "from": from, "function": function.name, "value": value}),
        ));
    }
    let managed = lock(&state.0.managed).get(&from).cloned();
    if let Some(signer) = managed {
        let hash = chain
            .send(&signer, Some(to), data.clone())
            .await
            .map_err(|e| match e {
                crate::chain::SendError::Rpc(r) => ApiError::node(r),
                other => ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "INTERNAL",
                    other.to_string(),
                ),
            })?;
        remember(
            &state,
            tx_id,
            from,
            chain.chain_id,
            None,
            to,
            data.clone(),
            Some(hash),
        )?;
        if act.contract == ContractKind::St && function.name == "redeem" {
            state.note_redeem(hash, Some(tx_id), from);
        }
        if let Some(e) = dropped(&state, "execute") {
            return Err(e);
        }
        return Ok(ok(json!({"txId": tx_id, "from": from, "txHash": hash})));
    }
    // Three reads of the node at once: a batch's items wait on this answer one after
    // another, so its latency is the batch's pace.
    let (gas, nonce, gas_price) = tokio::try_join!(
        chain.rpc.estimate_gas(from, to, &data),
        chain.rpc.pending_nonce(from),
        chain.rpc.gas_price(),
    )
    .map_err(ApiError::node)?;
    let mut raw_tx = json!({
        "from": from,
        "to": to,
        "data": data,
        "nonce": q(nonce),
        "gasLimit": q(gas.saturating_mul(6) / 5),
        "gasPrice": q(gas_price),
        "chainId": chain.chain_id,
    });
    if let Some(h) = state.hostile()
        && state.hostile_targets(&req.inputs)
    {
        tamper(&mut raw_tx, h, &data, gas_price, chain.chain_id);
    }
    remember(
        &state,
        tx_id,
        from,
        chain.chain_id,
        Some(nonce),
        to,
        data,
        None,
    )?;
    if let Some(e) = dropped(&state, "execute") {
        return Err(e);
    }
    let req_ts = time::OffsetDateTime::now_utc().unix_timestamp();
    Ok(ok(
        json!({"txId": tx_id, "from": from, "rawTx": raw_tx, "reqTs": req_ts}),
    ))
}

pub(crate) fn reused(tx_id: Uuid) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "TXID_REUSED",
        format!("txId {tx_id} was already used; send a new UUID v4 for every request"),
    )
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn remember(
    state: &AppState,
    tx_id: Uuid,
    from: Address,
    chain_id: u64,
    nonce: Option<u64>,
    to: Address,
    data: Bytes,
    tx_hash: Option<B256>,
) -> Result<(), ApiError> {
    let mut ex = lock(&state.0.executions);
    if ex.contains_key(&tx_id) {
        return Err(reused(tx_id));
    }
    ex.insert(
        tx_id,
        Execution {
            from,
            chain_id,
            nonce,
            to,
            data,
            tx_hash,
        },
    );
    Ok(())
}

/// Whether a function only reads: executing its action calls it (`eth_call`) and
/// returns its value; nothing is signed.
pub(crate) fn reads_only(f: &Function) -> bool {
    matches!(
        f.state_mutability,
        StateMutability::View | StateMutability::Pure
    )
}

/// The transaction actions defined (the console's list; not an operation of the spec,
/// whose platform defines actions in its console): name, contract, function, whether
/// the function only reads (executing it returns a value, nothing is signed) and the
/// description.
pub(crate) async fn list_actions(State(state): State<AppState>) -> ApiResult {
    let items: Vec<Value> = state
        .0
        .actions
        .values()
        .map(|a| {
            let view = contracts::abi(a.contract)
                .function(&a.function)
                .and_then(|f| f.first())
                .is_some_and(reads_only);
            json!({
                "name": a.name,
                "contract": match a.contract {
                    ContractKind::St => "ST",
                    ContractKind::Mt => "MT",
                },
                "function": a.function,
                "view": view,
                "description": a.description,
            })
        })
        .collect();
    Ok(ok(json!({"total": items.len(), "items": items})))
}
