//! Web3 API webhooks: the one network table, and BLOCK_PERIOD deliveries from the main
//! chain's blocks, signed with HMAC-SHA256, retried with backoff, and removed after too many
//! failures in a row.
//!
//! Deliveries come from the sandbox's main chain whatever `{chain}/{network}` the webhook was
//! created under: the path is validated and echoed (uppercase), not simulated.

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::state::{AppState, lock, now};

/// The network table and the event types are `bridgectl-web3`'s: the client checks
/// against the same ones.
pub use bridgectl_web3::EventType;

/// Checks `{chain}/{network}` against the one network table; the error names what is
/// supported.
pub fn check_network(chain: &str, network: &str) -> Result<(), String> {
    bridgectl_web3::networks::check(chain, network)
        .map(|_| ())
        .map_err(|e| format!("path {e}"))
}

/// The `x-signature` of a delivery (`bridgectl-web3` holds the scheme).
pub fn signature(signing_key: &str, body: &[u8]) -> String {
    bridgectl_web3::signature::sign(signing_key.as_bytes(), body)
}

fn snake(key: &str) -> String {
    let mut out = String::new();
    for ch in key.chars() {
        if ch.is_ascii_uppercase() {
            out.push('_');
            out.push(ch.to_ascii_lowercase());
        } else {
            out.push(ch);
        }
    }
    out
}

fn header_message(block: &Value) -> Value {
    let mut m = Map::new();
    if let Some(obj) = block.as_object() {
        for (k, v) in obj {
            if k != "transactions" && k != "uncles" && k != "withdrawals" {
                m.insert(snake(k), v.clone());
            }
        }
    }
    Value::Object(m)
}

/// Starts the delivery task of one BLOCK_PERIOD webhook.
pub(crate) fn spawn_deliverer(state: AppState, id: u64) {
    let handle = tokio::spawn(deliver_loop(state.clone(), id));
    lock(&state.0.tasks).push(handle.abort_handle());
}

/// Marks the deliverer of one webhook stopped when its task ends, however it ends.
struct Running(AppState, u64);

impl Running {
    fn start(state: &AppState, id: u64, block: u64) -> Running {
        lock(&state.0.deliverers).insert(
            id,
            crate::state::DelivererState {
                handled_block: block,
                running: true,
            },
        );
        Running(state.clone(), id)
    }

    fn handled(&self, block: u64) {
        if let Some(d) = lock(&self.0.0.deliverers).get_mut(&self.1) {
            d.handled_block = block;
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(d) = lock(&self.0.0.deliverers).get_mut(&self.1) {
            d.running = false;
        }
    }
}

async fn deliver_loop(state: AppState, id: u64) {
    let cfg = state.0.webhook_config.clone();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_millis(cfg.timeout_ms))
        .build()
        .unwrap_or_default();
    let mut rx = state.0.latest_main_block.subscribe();
    let start = *rx.borrow_and_update();
    let running = Running::start(&state, id, start);
    let mut next = start + 1;
    loop {
        if rx.changed().await.is_err() {
            return;
        }
        let latest = *rx.borrow_and_update();
        while next <= latest {
            let n = next;
            next += 1;
            let Some(hook) = lock(&state.0.webhooks).get(&id).cloned() else {
                return;
            };
            let period = hook
                .condition
                .get("period")
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .max(1);
            if !hook.is_active || !(n - start).is_multiple_of(period) {
                running.handled(n);
                continue;
            }
            let Ok(block) = state.0.main.rpc.block(n).await else {
                running.handled(n);
                continue;
            };
            let body = json!({
                "subscriptionId": id.to_string(),
                "sequenceNumber": hook.sequence + 1,
                "description": hook.description,
                "protocol": hook.chain.to_uppercase(),
                "network": hook.network.to_uppercase(),
                "subscriptionType": "WEBHOOK",
                "notification": hook.notification,
                "eventType": hook.event_type,
                "createdAt": now(),
                "event": {"period": period, "message": header_message(&block)},
            });
            let raw = body.to_string();
            let sig = signature(hook.signing_key.expose_secret(), raw.as_bytes());
            // One delivery: retried with backoff until a 200, a deactivation, or removal.
            loop {
                let Some(current) = lock(&state.0.webhooks).get(&id).cloned() else {
                    return;
                };
                if !current.is_active {
                    break;
                }
                let Some(url) = current.url() else {
                    return;
                };
                let sent = http
                    .post(url)
                    .header("content-type", "application/json")
                    .header("x-signature", &sig)
                    .body(raw.clone())
                    .send()
                    .await;
                let ok = matches!(&sent, Ok(r) if r.status().as_u16() == 200);
                let failures = {
                    let mut hooks = lock(&state.0.webhooks);
                    let Some(w) = hooks.get_mut(&id) else {
                        return;
                    };
                    if ok {
                        w.sequence += 1;
                        w.delivered += 1;
                        w.consecutive_failures = 0;
                        0
                    } else {
                        w.consecutive_failures += 1;
                        let f = w.consecutive_failures;
                        if f >= cfg.remove_after_failures {
                            // Removed without notice, as the platform may do.
                            hooks.remove(&id);
                            return;
                        }
                        f
                    }
                };
                if ok {
                    break;
                }
                let backoff = cfg
                    .retry_base_ms
                    .saturating_mul(1u64 << (failures - 1).min(20))
                    .min(cfg.retry_max_ms);
                tokio::time::sleep(Duration::from_millis(backoff)).await;
            }
            running.handled(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_table_is_checked() {
        assert!(check_network("ethereum", "sepolia").is_ok());
        assert!(check_network("polygon", "mumbai").is_ok());
        let e = check_network("polygon", "sepolia").expect_err("no sepolia on polygon");
        assert!(e.contains("mainnet, mumbai"), "{e}");
        assert!(check_network("bitcoin", "mainnet").is_err());
    }

    #[test]
    fn block_header_keys_become_snake_case() {
        let m = header_message(&json!({"parentHash": "0x1", "number": "0x2", "transactions": []}));
        assert_eq!(m, json!({"parent_hash": "0x1", "number": "0x2"}));
    }
}
