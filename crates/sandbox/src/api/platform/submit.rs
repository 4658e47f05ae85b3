//! Operation 3: a signed transaction accepted, sent to its chain and linked to the flow
//! that asked for it.

use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Transaction, TxEnvelope};
use alloy_eips::eip2718::Decodable2718;
use alloy_primitives::{Address, B256};
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::envelope::{ApiError, JsonBody, ok};
use crate::api::faults::dropped;
use crate::contracts;
use crate::state::{AppState, lock};

use super::common::ApiResult;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SubmitRequest {
    signed_tx: String,
}

pub(crate) fn map_send_error(e: crate::rpc::RpcError, hash: B256) -> ApiError {
    match e {
        crate::rpc::RpcError::Node { message, .. } => {
            let m = message.to_ascii_lowercase();
            if m.contains("nonce too low") {
                ApiError::bad(
                    "NONCE_TOO_LOW",
                    format!("the node refused {hash}: {message}"),
                )
            } else if m.contains("insufficient funds") || m.contains("lack of funds") {
                ApiError::bad(
                    "INSUFFICIENT_FUNDS",
                    format!("the node refused {hash}: {message}"),
                )
            } else if m.contains("already known") || m.contains("already imported") {
                ApiError::new(
                    StatusCode::CONFLICT,
                    "ALREADY_KNOWN",
                    format!("{hash} is already known: {message}"),
                )
            } else if m.contains("chain") {
                ApiError::bad("WRONG_CHAIN", format!("the node refused {hash}: {message}"))
            } else {
                ApiError::bad("TX_REJECTED", format!("the node refused {hash}: {message}"))
            }
        }
        other => ApiError::new(
            StatusCode::BAD_GATEWAY,
            "NODE_UNAVAILABLE",
            format!("the chain node failed: {other}"),
        ),
    }
}

/// `POST /mx/v2.0/transaction/send/signed-tx`. The work runs in a task of its own, so
/// it finishes whatever the client does: a client that disconnects mid-request drops
/// this future, and a submission cut between the node taking the transaction and its
/// link to the transaction action left a txId whose redemption was never found (the
/// real platform finishes what it started).
pub(crate) async fn submit(
    State(state): State<AppState>,
    JsonBody(req): JsonBody<SubmitRequest>,
) -> ApiResult {
    let scope = crate::scope::current();
    tokio::spawn(crate::scope::in_scope(scope, submit_work(state, req)))
        .await
        .unwrap_or_else(|e| {
            Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "INTERNAL",
                format!("the submission failed: {e}"),
            ))
        })
}

pub(crate) async fn submit_work(state: AppState, req: SubmitRequest) -> ApiResult {
    let bad = |m: String| ApiError::bad("INVALID_SIGNED_TX", m);
    let bytes = req
        .signed_tx
        .strip_prefix("0x")
        .and_then(|h| hex::decode(h).ok())
        .ok_or_else(|| {
            bad(format!(
                "signedTx: expected 0x-prefixed hex, found {} characters that are not",
                req.signed_tx.len()
            ))
        })?;
    let env = TxEnvelope::decode_2718(&mut bytes.as_slice())
        .map_err(|e| bad(format!("signedTx: not a signed transaction: {e}")))?;
    let from = env.recover_signer().map_err(|e| {
        bad(format!(
            "signedTx: the signature does not recover a sender: {e}"
        ))
    })?;
    let hash = *env.tx_hash();
    let chain_id = env.chain_id().ok_or_else(|| {
        ApiError::bad(
            "WRONG_CHAIN",
            "signedTx: no chain id (pre-EIP-155 signature); refused",
        )
    })?;
    let chain = state.chain_by_id(chain_id).ok_or_else(|| {
        ApiError::bad(
            "WRONG_CHAIN",
            format!(
                "signedTx: chain id {chain_id} is neither the main ({}) nor the side ({}) chain",
                state.0.main.chain_id, state.0.side.chain_id
            ),
        )
    })?;
    let to = env.to();
    let input = env.input().clone();
    let info = &state.0.info;
    // A deposit to a swap address needs a fee-delegation-registered sender.
    if chain_id == state.0.main.chain_id
        && to == Some(info.main.token_address)
        && input.len() >= 36
        && input[..4] == contracts::TRANSFER_SELECTOR
    {
        let recipient = Address::from_slice(&input[16..36]);
        let is_swap = lock(&state.0.swap_addresses).contains_key(&recipient);
        if is_swap && !state.is_registered(from) {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "FEE_DELEGATION_NOT_REGISTERED",
                format!(
                    "{from} is not registered for fee delegation, which a transfer to swap address {recipient} requires; register it first (POST /sandbox/v1/fee-delegation/{from})"
                ),
            ));
        }
    }
    let known: Value = chain
        .rpc
        .call("eth_getTransactionByHash", json!([hash]))
        .await
        .map_err(ApiError::node)?;
    if !known.is_null() {
        // A resend of what was sent: linked now if its first submission was not (the
        // link is idempotent), so the txId resolves either way.
        link_submission(&state, &env, from, hash);
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "ALREADY_KNOWN",
            format!("{hash} is already known (pending or mined); nothing was sent again"),
        ));
    }
    chain
        .rpc
        .send_raw(&bytes)
        .await
        .map_err(|e| map_send_error(e, hash))?;
    if let Some(f) = state.fault("submit")
        && f.latency_mid_work_ms > 0
    {
        tokio::time::sleep(std::time::Duration::from_millis(f.latency_mid_work_ms)).await;
    }
    link_submission(&state, &env, from, hash);
    if let Some(e) = dropped(&state, "submit") {
        return Err(e);
    }
    Ok(ok(json!({"txHash": {"txHash": hash}})))
}

/// Links a submitted transaction to the transaction action that produced it (same
/// sender, chain, nonce, target and calldata), if any, and notes a redeem: twice is the
/// same as once.
pub(crate) fn link_submission(state: &AppState, env: &TxEnvelope, from: Address, hash: B256) {
    let chain_id = env.chain_id().unwrap_or_default();
    let to = env.to();
    let input = env.input();
    let nonce = env.nonce();
    let mut tx_id = None;
    for (id, ex) in lock(&state.0.executions).iter_mut() {
        let same = ex.from == from
            && ex.chain_id == chain_id
            && ex.nonce == Some(nonce)
            && Some(ex.to) == to
            && ex.data == *input;
        if same && (ex.tx_hash.is_none() || ex.tx_hash == Some(hash)) {
            ex.tx_hash = Some(hash);
            tx_id = Some(*id);
        }
    }
    if chain_id == state.0.side.chain_id
        && to == Some(state.0.info.side.token_address)
        && input.len() >= 4
        && input[..4] == contracts::REDEEM_SELECTOR
    {
        state.note_redeem(hash, tx_id, from);
    }
}
