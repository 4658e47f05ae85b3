//! Transaction actions (operation 4): execute, read what came back, and for an EOA turn
//! it into a strictly parsed, verified raw transaction. Redeem is one such action.

use std::collections::BTreeMap;

use alloy_primitives::{Address, B256, U256};
use bridgectl_tx::RawTx;
use bridgectl_tx::request::{Intent, Token};
use serde::Serialize;
use serde_json::{Value, json};

use crate::Error;
use crate::client::{ExecuteRequest, Redemption};
use crate::engine::{Approver, Flows, Progress, Submitted};
use crate::journal::FlowState;

/// What executing an action produced, by the kind of sender.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ActionOutcome {
    /// An EOA sender: an unsigned transaction for us to check, sign and submit.
    Eoa {
        /// The rawTx exactly as received (it is parsed strictly by the caller).
        raw_tx: Value,
        /// The whole `data` object, whose claims (`from`) are checked with the rawTx.
        #[serde(skip)]
        data: serde_json::Map<String, Value>,
    },
    /// A managed account: the platform signed and submitted.
    Managed {
        /// The platform's txId.
        tx_id: Option<String>,
        /// The transaction hash.
        tx_hash: Option<String>,
    },
    /// A view function: its value.
    View {
        /// The value as the platform returned it.
        value: Value,
    },
}

impl ActionOutcome {
    /// Reads `data` of an execute answer.
    pub fn classify(data: &Value) -> ActionOutcome {
        if let Some(raw) = data.get("rawTx") {
            return ActionOutcome::Eoa {
                raw_tx: raw.clone(),
                data: data.as_object().cloned().unwrap_or_default(),
            };
        }
        let hash = data
            .get("txHash")
            .and_then(|h| {
                h.as_str()
                    .or_else(|| h.get("txHash").and_then(Value::as_str))
            })
            .map(str::to_owned);
        if hash.is_some() {
            return ActionOutcome::Managed {
                tx_id: data.get("txId").and_then(Value::as_str).map(str::to_owned),
                tx_hash: hash,
            };
        }
        let value = ["result", "value", "output"]
            .iter()
            .find_map(|k| data.get(*k).cloned())
            .unwrap_or_else(|| data.clone());
        ActionOutcome::View { value }
    }
}

/// A transaction action to run.
#[derive(Debug, Clone)]
pub struct ActionCall {
    /// The action name (last path segment).
    pub action: String,
    /// The executing account.
    pub from: Address,
    /// Inputs: parameter name -> decimal string or address.
    pub inputs: BTreeMap<String, String>,
    /// What the result must be, when known (always for redeem). The arguments are
    /// checked against `inputs` in any case.
    pub intent: Intent,
}

/// The result of an EOA action that was signed and submitted.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionSigned {
    /// The submission.
    pub submitted: Submitted,
    /// The rawTx as received, for `--json`.
    pub raw_tx: Value,
}

/// The outcome of a redeem, as far as it got.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RedeemOutcome {
    /// The submission.
    pub submitted: Submitted,
    /// The last redemption record seen.
    pub redemption: Option<Redemption>,
}

impl Flows<'_> {
    /// Executes `call` with a fresh txId and records the answer. Returns the txId and
    /// the classified outcome. Nothing is signed here.
    pub async fn execute(
        &self,
        kind: &str,
        call: &ActionCall,
    ) -> Result<(String, ActionOutcome), Error> {
        let tx_id = uuid::Uuid::new_v4().to_string();
        let intent_json = json!({
            "action": call.action,
            "inputs": call.inputs,
            "intent": call.intent,
        });
        self.journal
            .begin(&tx_id, kind, Some(&call.from.to_string()), &intent_json)?;
        let request = ExecuteRequest {
            tx_id: tx_id.clone(),
            from: call.from,
            inputs: call
                .inputs
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        };
        let data = match self.client.execute_action(&call.action, &request).await {
            Ok(d) => d,
            Err(e) => {
                self.journal.step(
                    &tx_id,
                    FlowState::Failed,
                    "execute-failed",
                    &json!({"error": e.to_string()}),
                )?;
                return Err(e);
            }
        };
        let outcome = ActionOutcome::classify(&data);
        match &outcome {
            ActionOutcome::Eoa { raw_tx, .. } => self.journal.record_raw_tx(&tx_id, raw_tx)?,
            ActionOutcome::Managed { .. } | ActionOutcome::View { .. } => {
                self.complete(&tx_id, &data, true)?;
            }
        }
        Ok((tx_id, outcome))
    }

    /// Parses the rawTx of an EOA outcome strictly, with the same rules as an envelope
    /// given to `bridgectl sign` (`data.from` must be `rawTx.from`); a refusal is
    /// journaled.
    pub fn parse_raw_tx(
        &self,
        tx_id: &str,
        data: &serde_json::Map<String, Value>,
    ) -> Result<RawTx, Error> {
        bridgectl_tx::request::parse_action_data(data)
            .map(|(raw, _)| raw)
            .map_err(|e| {
                let _ = self.journal.step(
                    tx_id,
                    FlowState::Failed,
                    "refused",
                    &json!({"error": e.to_string()}),
                );
                Error::Tx(e)
            })
    }

    /// The intent of `call`, with its inputs as expected arguments.
    pub fn action_intent(call: &ActionCall) -> Intent {
        let mut intent = call.intent.clone();
        for (k, v) in &call.inputs {
            intent.args.entry(k.clone()).or_insert_with(|| v.clone());
        }
        intent
    }

    /// Runs an EOA action end to end: execute, parse, verify, approve, sign, journal,
    /// submit. A managed or view outcome is an error here (use [`Flows::execute`]).
    pub async fn run_eoa_action(
        &self,
        kind: &str,
        call: &ActionCall,
        approver: &mut dyn Approver,
        progress: &mut dyn Progress,
    ) -> Result<ActionSigned, Error> {
        progress.step(&format!("executing action {}", call.action));
        let (tx_id, outcome) = self.execute(kind, call).await?;
        let ActionOutcome::Eoa { raw_tx, data } = outcome else {
            return Err(Error::UnexpectedShape {
                what: format!("answer to action {}", call.action),
                expected: format!(
                    "a rawTx for the externally owned account {} (the platform answered as \
                     for a managed account or a view function)",
                    call.from
                ),
                data: serde_json::to_value(&outcome).unwrap_or_default(),
            });
        };
        let raw = self.parse_raw_tx(&tx_id, &data)?;
        let intent = Self::action_intent(call);
        let submitted = self
            .sign_and_submit(&tx_id, call.from, &raw, &intent, approver, progress)
            .await?;
        Ok(ActionSigned { submitted, raw_tx })
    }

    /// Redeems `amount` ST (base units) of `from` into MT: the redeem action, then the
    /// redemption result polled until terminal or the wait times out.
    pub async fn redeem(
        &self,
        from: Address,
        amount: U256,
        approver: &mut dyn Approver,
        progress: &mut dyn Progress,
    ) -> Result<RedeemOutcome, Error> {
        let bridge = self.bridge()?;
        let side = &bridge.side;
        let mut inputs = BTreeMap::new();
        inputs.insert("_amount".to_owned(), amount.to_string());
        let call = ActionCall {
            action: bridge.redeem_action.clone(),
            from,
            inputs: inputs.clone(),
            intent: Intent {
                function: Some("redeem".into()),
                args: inputs,
                to: Some(side.token),
                chain_id: Some(side.chain_id),
                token: Some(Token {
                    symbol: side.symbol.clone(),
                    decimals: side.decimals,
                }),
                description: Some(format!(
                    "redeem {} {} into {}",
                    bridgectl_tx::amount::format_units(amount, side.decimals)
                        .unwrap_or_else(|_| amount.to_string()),
                    side.symbol,
                    bridge.main.symbol
                )),
            },
        };
        let signed = self
            .run_eoa_action("redeem", &call, approver, progress)
            .await?;
        let redemption = self
            .wait_redemption(&signed.submitted.tx_id, signed.submitted.tx_hash, progress)
            .await?;
        Ok(RedeemOutcome {
            submitted: signed.submitted,
            redemption: Some(redemption),
        })
    }

    /// Polls the redemption record (by txId, then by hash) until it is terminal.
    pub async fn wait_redemption(
        &self,
        tx_id: &str,
        tx_hash: B256,
        progress: &mut dyn Progress,
    ) -> Result<Redemption, Error> {
        let start = std::time::Instant::now();
        let mut last_status = String::new();
        let side_env = self.bridge()?.side.environment_id.clone();
        let mut last_error: Option<String> = None;
        let timed_out = |last: &str, error: &Option<String>| Error::Timeout {
            what: format!(
                "redemption {tx_id} (last status {}{}); `bridgectl resume {tx_id}` continues \
                 waiting",
                if last.is_empty() { "none" } else { last },
                error
                    .as_ref()
                    .map(|e| format!(", last error: {e}"))
                    .unwrap_or_default()
            ),
            seconds: self.wait.timeout.as_secs(),
        };
        loop {
            // The whole wait is bounded, a slow answer included.
            let remaining = self.wait.timeout.saturating_sub(start.elapsed());
            let Ok(answer) =
                tokio::time::timeout(remaining, self.client.redemption(tx_id, &side_env)).await
            else {
                return Err(timed_out(&last_status, &last_error));
            };
            let found = match answer {
                Ok(r) => Some(r),
                // Not recorded yet (the relayer has not seen the block): keep waiting.
                Err(Error::Platform { error, .. }) if error.status == 404 => self
                    .client
                    .redemption(&tx_hash.to_string(), &side_env)
                    .await
                    .ok(),
                // Polling is itself a retry loop: a server error or a lost connection
                // is "no answer this time" until the wait runs out.
                Err(e @ (Error::Http { .. } | Error::Platform { .. })) if e.is_transient() => {
                    progress.step(&format!(
                        "no answer this time ({}); polling on",
                        bridgectl_tx::text::printable(&e.to_string())
                    ));
                    last_error = Some(e.to_string());
                    None
                }
                Err(e) => return Err(e),
            };
            if let Some(r) = found {
                let changed = r.status != last_status;
                if changed {
                    progress.step(&format!(
                        "redemption {}",
                        bridgectl_tx::text::printable(&r.status)
                    ));
                    last_status.clone_from(&r.status);
                }
                if r.is_terminal() {
                    self.complete(tx_id, &r.raw, r.is_success())?;
                    return Ok(r);
                }
                if changed {
                    // One commit per change of status, not per poll.
                    self.journal.observe(tx_id, None, "redemption", &r.raw)?;
                }
            }
            if start.elapsed() >= self.wait.timeout {
                return Err(timed_out(&last_status, &last_error));
            }
            crate::timing::sleep(self.wait.interval).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_are_classified() {
        let eoa = ActionOutcome::classify(&json!({"from": "0x1", "rawTx": {"nonce": "0x0"}}));
        assert!(matches!(eoa, ActionOutcome::Eoa { .. }));
        let managed = ActionOutcome::classify(&json!({"txId": "a", "txHash": "0xab"}));
        assert!(matches!(managed, ActionOutcome::Managed { tx_hash: Some(h), .. } if h == "0xab"));
        let nested = ActionOutcome::classify(&json!({"txHash": {"txHash": "0xcd"}}));
        assert!(matches!(nested, ActionOutcome::Managed { tx_hash: Some(h), .. } if h == "0xcd"));
        let view = ActionOutcome::classify(&json!({"result": "42"}));
        assert!(matches!(view, ActionOutcome::View { value } if value == json!("42")));
    }
}
