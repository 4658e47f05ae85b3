//! Handlers of the platform API (`/svc`, `/mx`, `/tx`) and the sandbox-only routes.

use std::collections::{BTreeMap, HashMap};

use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Transaction, TxEnvelope};
use alloy_dyn_abi::{DynSolType, DynSolValue, FunctionExt, JsonAbiExt};
use alloy_eips::eip2718::Decodable2718;
use alloy_json_abi::{Function, StateMutability};
use alloy_primitives::{Address, B256, Bytes, U256};
use alloy_signer_local::PrivateKeySigner;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::envelope::{ApiError, JsonBody, ok};
use super::faults::dropped;
use crate::chain::{Chain, Unsigned, sign_legacy};
use crate::config::ContractKind;
use crate::contracts;
use crate::state::{AppState, Execution, Redemption, SwapAddress, lock, now};

type ApiResult = Result<Response, ApiError>;

/// Parses an address from a request, naming the field on failure.
pub(crate) fn parse_address(field: &str, value: &str) -> Result<Address, ApiError> {
    let hex = value
        .strip_prefix("0x")
        .or_else(|| value.strip_prefix("0X"));
    match hex {
        Some(h) if h.len() == 40 && h.bytes().all(|b| b.is_ascii_hexdigit()) => {
            value.parse().map_err(|_| {
                ApiError::bad(
                    "INVALID_ADDRESS",
                    format!("{field}: invalid address {value:?}"),
                )
            })
        }
        _ => Err(ApiError::bad(
            "INVALID_ADDRESS",
            format!("{field}: expected a 0x-prefixed 20-byte hex address, found {value:?}"),
        )),
    }
}

fn hex_quantity(field: &str, v: &str) -> Result<u128, ApiError> {
    let h = v.strip_prefix("0x").ok_or_else(|| {
        ApiError::bad(
            "INVALID_RAW_TX",
            format!("{field}: expected a 0x-prefixed hex quantity, found {v:?}"),
        )
    })?;
    if h.is_empty() || h.len() > 32 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ApiError::bad(
            "INVALID_RAW_TX",
            format!("{field}: expected a 0x-prefixed hex quantity, found {v:?}"),
        ));
    }
    u128::from_str_radix(h, 16)
        .map_err(|_| ApiError::bad("INVALID_RAW_TX", format!("{field}: {v:?} is out of range")))
}

fn q(n: impl Into<u128>) -> String {
    format!("{:#x}", n.into())
}

impl AppState {
    fn chain_by_env(&self, env: &str) -> Option<&Chain> {
        if env == self.0.info.main.environment_id {
            Some(&self.0.main)
        } else if env == self.0.info.side.environment_id {
            Some(&self.0.side)
        } else {
            None
        }
    }

    fn chain_by_id(&self, id: u64) -> Option<&Chain> {
        [&self.0.main, &self.0.side]
            .into_iter()
            .find(|c| c.chain_id == id)
    }

    fn env_error(&self, field: &str, found: &str) -> ApiError {
        ApiError::not_found(
            "ENVIRONMENT_NOT_FOUND",
            format!(
                "{field}: unknown environment {found:?}; this sandbox has {:?} (main) and {:?} (side)",
                self.0.info.main.environment_id, self.0.info.side.environment_id
            ),
        )
    }

    /// Records a submitted ST redeem so it can be looked up before the relayer sees it.
    pub(crate) fn note_redeem(&self, hash: B256, tx_id: Option<Uuid>, redeemer: Address) {
        let info = &self.0.info;
        let t = now();
        lock(&self.0.redemptions)
            .entry(hash)
            // Noted before its link was known (a resend links it): linked now.
            .and_modify(|r| {
                if r.tx_id.is_none() {
                    r.tx_id = tx_id;
                }
            })
            .or_insert_with(|| Redemption {
                tx_id,
                tx_hash: hash,
                status: "requested".into(),
                side_environment_id: info.side.environment_id.clone(),
                main_environment_id: info.main.environment_id.clone(),
                redeemer,
                st_amount: None,
                mt_amount: None,
                main_tx_hash: None,
                reason: None,
                created_at: t.clone(),
                updated_at: t,
            });
    }
}

// ---------------------------------------------------------------- auth

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct TokenRequest {
    access_key: String,
    secret_key: String,
    expires_in: Option<i64>,
}

pub(super) async fn issue_token(
    State(state): State<AppState>,
    JsonBody(req): JsonBody<TokenRequest>,
) -> ApiResult {
    let expires_in = req.expires_in.unwrap_or(604_800);
    if !(1..=31_536_000).contains(&expires_in) {
        return Err(ApiError::bad(
            "INVALID_FIELD",
            format!("expiresIn: expected 1..=31536000 seconds, found {expires_in}"),
        ));
    }
    if req.access_key != state.0.access_key || req.secret_key != state.0.secret_key.expose_secret()
    {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "INVALID_CREDENTIALS",
            "accessKey or secretKey is wrong",
        ));
    }
    let (token, expiry) = state.issue_token(expires_in)?;
    Ok(ok(
        json!({"authToken": {"token": token, "expiryAt": expiry}}),
    ))
}

impl AppState {
    /// Issues a random bearer token valid for `seconds`; returns it and its ISO-8601 expiry.
    pub(crate) fn issue_token(&self, seconds: i64) -> Result<(String, String), ApiError> {
        let mut b = [0u8; 32];
        getrandom::fill(&mut b).map_err(|_| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "INTERNAL",
                "no randomness",
            )
        })?;
        let token = hex::encode(b);
        let expiry = time::OffsetDateTime::now_utc() + time::Duration::seconds(seconds);
        lock(&self.0.tokens).insert(token.clone(), Some(expiry.unix_timestamp()));
        let iso = expiry
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        Ok((token, iso))
    }
}

// ---------------------------------------------------------------- swap

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SwapRequest {
    main_environment_id: String,
    side_environment_id: String,
    main_token_symbol: String,
    side_token_symbol: String,
}

pub(super) async fn swap(
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

pub(super) async fn list_swaps(State(state): State<AppState>) -> ApiResult {
    let items = state.swaps();
    Ok(ok(json!({"total": items.len(), "items": items})))
}

// ---------------------------------------------------------------- managed signing

/// The rawTx object of the platform, as sent to op 2.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawTxIn {
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

fn parse_raw_tx(raw: Value) -> Result<(Option<Address>, Unsigned), ApiError> {
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
pub(super) struct SignRequest {
    raw_tx: Value,
}

pub(super) async fn sign(
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
fn sign_tampered(
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

// ---------------------------------------------------------------- submit

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SubmitRequest {
    signed_tx: String,
}

fn map_send_error(e: crate::rpc::RpcError, hash: B256) -> ApiError {
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
pub(super) async fn submit(
    State(state): State<AppState>,
    JsonBody(req): JsonBody<SubmitRequest>,
) -> ApiResult {
    tokio::spawn(submit_work(state, req))
        .await
        .unwrap_or_else(|e| {
            Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "INTERNAL",
                format!("the submission failed: {e}"),
            ))
        })
}

async fn submit_work(state: AppState, req: SubmitRequest) -> ApiResult {
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
fn link_submission(state: &AppState, env: &TxEnvelope, from: Address, hash: B256) {
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

// ---------------------------------------------------------------- execute

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ExecuteRequest {
    tx_id: String,
    from: String,
    inputs: BTreeMap<String, Value>,
    #[serde(default)]
    #[allow(dead_code)]
    callback_url: Option<String>,
}

/// Checks and converts the inputs against the function's parameters.
fn encode_inputs(function: &Function, inputs: &BTreeMap<String, Value>) -> Result<Bytes, ApiError> {
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

fn show(v: &DynSolValue) -> Value {
    match v {
        DynSolValue::Uint(u, _) => Value::String(u.to_string()),
        DynSolValue::Address(a) => Value::String(a.to_checksum(None)),
        DynSolValue::Bool(b) => Value::Bool(*b),
        DynSolValue::String(s) => Value::String(s.clone()),
        other => Value::String(format!("{other:?}")),
    }
}

pub(super) async fn execute(
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

fn reused(tx_id: Uuid) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "TXID_REUSED",
        format!("txId {tx_id} was already used; send a new UUID v4 for every request"),
    )
}

#[allow(clippy::too_many_arguments)]
fn remember(
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

// ---------------------------------------------------------------- redemption result

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RedeemQuery {
    side_environment_id: String,
}

pub(super) async fn redemption(
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

// ---------------------------------------------------------------- nonce, raw transfer, balance

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct NonceQuery {
    environment_id: String,
}

pub(super) async fn nonce(
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

pub(super) async fn raw_transfer(
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

async fn token_balance(chain: &Chain, token: Address, owner: Address) -> Result<U256, ApiError> {
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

pub(super) async fn balance_mt(
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

pub(super) async fn balance_st(
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

fn check_symbol(state: &AppState, which: &str, found: &str) -> Result<(), ApiError> {
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

// ---------------------------------------------------------------- sandbox-only

pub(super) async fn register(
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
pub(super) struct FundRequest {
    #[serde(default)]
    mt: Option<String>,
    #[serde(default)]
    st: Option<String>,
}

pub(super) async fn fund(
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

/// Body of `POST /sandbox/v1/hostile`: hostile mode on (`kind`, optionally only for
/// actions with an input of value `input`) or off (`kind` null).
#[derive(Deserialize)]
pub(super) struct HostileRequest {
    kind: Option<crate::config::Hostile>,
    #[serde(default)]
    input: Option<String>,
}

pub(super) async fn hostile(
    State(state): State<AppState>,
    JsonBody(req): JsonBody<HostileRequest>,
) -> ApiResult {
    match (req.kind, &req.input) {
        (Some(kind), Some(input)) => state.set_hostile_for_input(kind, input),
        (kind, _) => state.set_hostile(kind),
    }
    Ok(ok(json!({"kind": req.kind, "input": req.input})))
}

pub(super) async fn registration(
    State(state): State<AppState>,
    Path(address): Path<String>,
) -> ApiResult {
    let address = parse_address("path address", &address)?;
    Ok(ok(
        json!({"address": address, "registered": state.is_registered(address)}),
    ))
}

pub(super) async fn create_managed(State(state): State<AppState>) -> ApiResult {
    let signer = crate::chain::random_signer()
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", e))?;
    let address = state.add_managed(signer).await.map_err(ApiError::node)?;
    Ok(ok(json!({"address": address})))
}

/// Whether a function only reads: executing its action calls it (`eth_call`) and
/// returns its value; nothing is signed.
fn reads_only(f: &Function) -> bool {
    matches!(
        f.state_mutability,
        StateMutability::View | StateMutability::Pure
    )
}

/// The transaction actions defined (the console's list; not an operation of the spec,
/// whose platform defines actions in its console): name, contract, function, whether
/// the function only reads (executing it returns a value, nothing is signed) and the
/// description.
pub(super) async fn list_actions(State(state): State<AppState>) -> ApiResult {
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

pub(super) async fn list_managed(State(state): State<AppState>) -> ApiResult {
    let mut items: Vec<Address> = lock(&state.0.managed).keys().copied().collect();
    items.sort();
    Ok(ok(json!({"total": items.len(), "items": items})))
}

/// Hostile-platform mode: changes `raw_tx` the way `h` says (see [`Hostile`]).
fn tamper(
    raw_tx: &mut Value,
    h: crate::config::Hostile,
    data: &Bytes,
    gas_price: u128,
    chain_id: u64,
) {
    use crate::config::Hostile as H;
    let other = Address::repeat_byte(0x66);
    match h {
        H::OtherFrom => raw_tx["from"] = json!(other),
        H::OtherChainId => raw_tx["chainId"] = json!(chain_id + 1),
        H::OtherContract => raw_tx["to"] = json!(other),
        H::OtherSelector | H::OtherAmount => raw_tx["data"] = json!(tampered_data(h, data)),
        H::InflatedGasPrice => raw_tx["gasPrice"] = json!(q(gas_price.saturating_mul(1000))),
        H::InflatedGasLimit => raw_tx["gasLimit"] = json!(q(HOSTILE_GAS_LIMIT)),
        H::MissingChainId => {
            if let Some(o) = raw_tx.as_object_mut() {
                o.remove("chainId");
            }
        }
        H::ExtraField => raw_tx["maxFeePerGas"] = json!("0x1"),
        H::NonceGap | H::NonceReplacement => {
            let nonce = raw_tx["nonce"]
                .as_str()
                .and_then(|n| u64::from_str_radix(n.trim_start_matches("0x"), 16).ok())
                .unwrap_or_default();
            raw_tx["nonce"] = json!(q(tampered_nonce(h, nonce)));
        }
    }
}

/// The gas limit a hostile platform asks for.
const HOSTILE_GAS_LIMIT: u64 = 30_000_000;

/// The nonce a hostile platform hands out instead of `nonce` (the next one): 1000 above
/// for [`Hostile::NonceGap`], one below for [`Hostile::NonceReplacement`], else `nonce`.
///
/// [`Hostile::NonceGap`]: crate::config::Hostile::NonceGap
/// [`Hostile::NonceReplacement`]: crate::config::Hostile::NonceReplacement
fn tampered_nonce(h: crate::config::Hostile, nonce: u64) -> u64 {
    use crate::config::Hostile as H;
    match h {
        H::NonceGap => nonce + 1000,
        H::NonceReplacement => nonce.saturating_sub(1),
        _ => nonce,
    }
}

/// The calldata a hostile platform puts in place of `data`: another function with the
/// same argument layout (`stake` for `redeem`, `redeem` otherwise) for
/// [`Hostile::OtherSelector`], the last word plus one for [`Hostile::OtherAmount`].
///
/// [`Hostile::OtherSelector`]: crate::config::Hostile::OtherSelector
/// [`Hostile::OtherAmount`]: crate::config::Hostile::OtherAmount
fn tampered_data(h: crate::config::Hostile, data: &Bytes) -> Bytes {
    use crate::config::Hostile as H;
    let mut d = data.to_vec();
    match h {
        H::OtherSelector if d.len() >= 4 => {
            // redeem(uint256) 0xdb006a75 <-> stake(uint256) 0xa694fc3a
            let swap_to: [u8; 4] = if d[..4] == contracts::REDEEM_SELECTOR {
                [0xa6, 0x94, 0xfc, 0x3a]
            } else {
                contracts::REDEEM_SELECTOR
            };
            d[..4].copy_from_slice(&swap_to);
        }
        H::OtherAmount if d.len() >= 36 => {
            let n = d.len();
            let word = U256::from_be_slice(&d[n - 32..]).wrapping_add(U256::from(1u8));
            d[n - 32..].copy_from_slice(&word.to_be_bytes::<32>());
        }
        _ => {}
    }
    Bytes::from(d)
}
