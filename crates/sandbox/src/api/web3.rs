//! Handlers of the web3 API: access token and webhooks under `/v1/{chain}/{network}`.
//! Success bodies follow the web3 API (no platform envelope); errors use the envelope.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::envelope::{ApiError, JsonBody};
use crate::state::{AppState, Webhook, lock, now};
use crate::webhooks::{EventType, check_network};

type ApiResult = Result<Response, ApiError>;

pub(super) async fn issue_token(State(state): State<AppState>, headers: HeaderMap) -> ApiResult {
    let h = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).unwrap_or("");
    if h("x-key-id") != state.0.access_key
        || h("x-key-secret") != state.0.secret_key.expose_secret()
    {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "INVALID_CREDENTIALS",
            "headers x-key-id / x-key-secret are missing or wrong",
        ));
    }
    let (token, _) = state.issue_token(86_400)?;
    Ok(
        axum::Json(json!({"access_token": token, "token_type": "Bearer", "expires_in": 86_400}))
            .into_response(),
    )
}

fn network(chain: &str, network: &str) -> Result<(), ApiError> {
    check_network(chain, network).map_err(|m| ApiError::not_found("UNSUPPORTED_NETWORK", m))
}

fn validate_url(v: &Value) -> Result<(), ApiError> {
    let url = v
        .get("webhookUrl")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::bad("INVALID_FIELD", "notification.webhookUrl: missing"))?;
    match reqwest::Url::parse(url) {
        Ok(u) if u.scheme() == "http" || u.scheme() == "https" => Ok(()),
        _ => Err(ApiError::bad(
            "INVALID_FIELD",
            format!("notification.webhookUrl: expected an http(s) URL, found {url:?}"),
        )),
    }
}

fn validate_condition(event_type: &str, c: &Value) -> Result<(), ApiError> {
    if event_type == "BLOCK_PERIOD" {
        match c.get("period").and_then(Value::as_u64) {
            Some(p) if p >= 1 => Ok(()),
            _ => Err(ApiError::bad(
                "INVALID_FIELD",
                format!(
                    "condition.period: expected an integer >= 1, found {}",
                    c.get("period").unwrap_or(&Value::Null)
                ),
            )),
        }
    } else if c.is_object() {
        Ok(())
    } else {
        Err(ApiError::bad(
            "INVALID_FIELD",
            "condition: expected an object",
        ))
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct CreateRequest {
    #[serde(default)]
    description: String,
    event_type: String,
    notification: Value,
    condition: Value,
}

pub(super) async fn create(
    State(state): State<AppState>,
    Path((chain, net)): Path<(String, String)>,
    JsonBody(req): JsonBody<CreateRequest>,
) -> ApiResult {
    network(&chain, &net)?;
    if EventType::from_wire(&req.event_type).is_none() {
        return Err(ApiError::bad(
            "INVALID_EVENT_TYPE",
            format!(
                "eventType: expected one of {}, found {:?}",
                EventType::names(),
                req.event_type
            ),
        ));
    }
    validate_url(&req.notification)?;
    validate_condition(&req.event_type, &req.condition)?;
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|_| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL",
            "no randomness",
        )
    })?;
    let id = {
        let mut n = lock(&state.0.next_webhook_id);
        *n += 1;
        *n
    };
    let hook = Webhook {
        id,
        chain,
        network: net,
        event_type: req.event_type,
        description: req.description,
        notification: req.notification,
        condition: req.condition,
        is_active: true,
        signing_key: crate::secret::Secret::new(hex::encode(key)),
        created_at: now(),
        sequence: 0,
        consecutive_failures: 0,
        delivered: 0,
    };
    let body = hook.to_json();
    let deliver = hook.event_type == "BLOCK_PERIOD";
    lock(&state.0.webhooks).insert(id, hook);
    if deliver {
        crate::webhooks::spawn_deliverer(state.clone(), id);
    }
    Ok(axum::Json(body).into_response())
}

fn find(state: &AppState, chain: &str, net: &str, id: &str) -> Result<u64, ApiError> {
    let missing = || {
        ApiError::not_found(
            "WEBHOOK_NOT_FOUND",
            format!("no webhook {id:?} on {chain}/{net}"),
        )
    };
    let n: u64 = id.parse().map_err(|_| missing())?;
    match lock(&state.0.webhooks).get(&n) {
        Some(w) if w.chain == chain && w.network == net => Ok(n),
        _ => Err(missing()),
    }
}

pub(super) async fn list(
    State(state): State<AppState>,
    Path((chain, net)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult {
    network(&chain, &net)?;
    let num = |k: &str, d: usize| -> Result<usize, ApiError> {
        query.get(k).map_or(Ok(d), |v| {
            v.parse::<usize>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                ApiError::bad(
                    "INVALID_FIELD",
                    format!("query {k}: expected an integer >= 1, found {v:?}"),
                )
            })
        })
    };
    let page = num("page", 1)?;
    let rpp = num("rpp", 20)?;
    let only = query.get("subscriptionId");
    let hooks = lock(&state.0.webhooks);
    let all: Vec<Value> = hooks
        .values()
        .filter(|w| w.chain == chain && w.network == net)
        .filter(|w| only.is_none_or(|id| *id == w.id.to_string()))
        .map(Webhook::to_json)
        .collect();
    let total = all.len();
    let items: Vec<Value> = all.into_iter().skip((page - 1) * rpp).take(rpp).collect();
    Ok(
        axum::Json(json!({"total": total, "page": page, "rpp": rpp, "items": items}))
            .into_response(),
    )
}

pub(super) async fn get_one(
    State(state): State<AppState>,
    Path((chain, net, id)): Path<(String, String, String)>,
) -> ApiResult {
    network(&chain, &net)?;
    let n = find(&state, &chain, &net, &id)?;
    let body = lock(&state.0.webhooks)
        .get(&n)
        .map(Webhook::to_json)
        .unwrap_or(Value::Null);
    Ok(axum::Json(body).into_response())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct UpdateRequest {
    notification: Option<Value>,
    description: Option<String>,
    is_active: Option<bool>,
    condition: Option<Value>,
}

pub(super) async fn update(
    State(state): State<AppState>,
    Path((chain, net, id)): Path<(String, String, String)>,
    JsonBody(req): JsonBody<UpdateRequest>,
) -> ApiResult {
    network(&chain, &net)?;
    let n = find(&state, &chain, &net, &id)?;
    if let Some(notification) = &req.notification {
        validate_url(notification)?;
    }
    let mut hooks = lock(&state.0.webhooks);
    let w = hooks
        .get_mut(&n)
        .ok_or_else(|| ApiError::not_found("WEBHOOK_NOT_FOUND", format!("no webhook {id:?}")))?;
    if let Some(c) = &req.condition {
        validate_condition(&w.event_type, c)?;
    }
    if let Some(v) = req.notification {
        w.notification = v;
    }
    if let Some(v) = req.description {
        w.description = v;
    }
    if let Some(v) = req.condition {
        w.condition = v;
    }
    if let Some(v) = req.is_active {
        w.is_active = v;
    }
    Ok(axum::Json(json!({"result": true})).into_response())
}

pub(super) async fn delete(
    State(state): State<AppState>,
    Path((chain, net, id)): Path<(String, String, String)>,
) -> ApiResult {
    network(&chain, &net)?;
    let n = find(&state, &chain, &net, &id)?;
    lock(&state.0.webhooks).remove(&n);
    Ok(axum::Json(json!({"result": true})).into_response())
}
