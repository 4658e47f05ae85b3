//! Transaction actions (operation 4): execute, read what came back, and for an EOA turn
//! it into a strictly parsed, verified raw transaction that is signed here or written as
//! a sign request for the air gap. Redeem is one such action.

use std::collections::BTreeMap;

use alloy_primitives::Address;
use bridgectl_tx::Verified;
use bridgectl_tx::request::{Intent, Origin, SignRequest};
use serde::Serialize;
use serde_json::{Value, json};

use super::{Approver, Flows, Progress, Submitted};
use crate::Error;
use crate::journal::{FlowKind, FlowState};

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

impl ActionCall {
    /// The intent of the call, with its inputs as expected arguments.
    pub(super) fn full_intent(&self) -> Intent {
        let mut intent = self.intent.clone();
        for (k, v) in &self.inputs {
            intent.args.entry(k.clone()).or_insert_with(|| v.clone());
        }
        intent
    }

    /// What the journal keeps of the call when its flow starts.
    pub(super) fn journaled(&self) -> Value {
        json!({
            "action": self.action,
            "inputs": self.inputs,
            "intent": self.intent,
            "callerPinned": self.intent.caller_pinned,
        })
    }
}

/// What to do with a raw transaction an action returns for an EOA.
pub enum SigningMode<'a, A> {
    /// Verify it, ask `approver`, sign here and submit.
    SignHere(&'a mut A, &'a mut dyn Progress),
    /// Verify it and return a sign request for an offline signer (`bridgectl sign`);
    /// `profile` names the offline profile in the request's origin.
    WriteRequest {
        /// The profile name recorded in the request.
        profile: Option<String>,
    },
    /// No key here: a raw transaction is an error ([`Error::NoSigner`]); managed and
    /// view outcomes are returned.
    ExecuteOnly,
}

/// The result of [`Flows::run_action`].
#[derive(Debug, Clone, Serialize)]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum ActionResult {
    /// Signed here and submitted.
    Eoa {
        /// The submission.
        #[serde(flatten)]
        submitted: Submitted,
        /// The rawTx as received.
        raw_tx: Value,
    },
    /// Verified and turned into a sign request for the air gap.
    SignRequest {
        /// The flow's txId (the request carries it; `submit` continues the flow).
        tx_id: String,
        /// The request to write.
        #[serde(skip)]
        request: Box<SignRequest>,
    },
    /// The platform signed and submitted for a managed account.
    Managed {
        /// The platform's txId, else ours.
        tx_id: String,
        /// The transaction hash, as the platform reported it.
        tx_hash: Option<String>,
    },
    /// A view function's value.
    View {
        /// The value as the platform returned it.
        value: Value,
    },
}

impl Flows {
    /// Executes `call` and handles what comes back: an EOA's raw transaction is parsed
    /// strictly and verified against the call (function, inputs, contract, chain, caps)
    /// and then signed or turned into a sign request, as `mode` says; a managed
    /// account's submission or a view function's value is returned as is.
    pub async fn run_action<A: Approver>(
        &self,
        call: &ActionCall,
        mode: SigningMode<'_, A>,
    ) -> Result<ActionResult, Error> {
        let run = self.start(None, FlowKind::Action, call.from, &call.journaled())?;
        let (raw_json, raw) = match run.execute(call).await? {
            ActionOutcome::Eoa { raw_tx, data } => (raw_tx, run.parse_raw_tx(&data)?),
            ActionOutcome::Managed {
                tx_id: theirs,
                tx_hash,
            } => {
                return Ok(ActionResult::Managed {
                    tx_id: theirs.unwrap_or_else(|| run.tx_id().to_owned()),
                    tx_hash,
                });
            }
            ActionOutcome::View { value } => return Ok(ActionResult::View { value }),
        };
        let intent = call.full_intent();
        match mode {
            SigningMode::SignHere(approver, progress) => {
                let submitted = run
                    .sign_and_submit(&raw, &intent, None, approver, progress)
                    .await?;
                Ok(ActionResult::Eoa {
                    submitted,
                    raw_tx: raw_json,
                })
            }
            SigningMode::WriteRequest { profile } => {
                let verified: Verified = run.verify(&raw, &intent, None).await?;
                let tx_id = run.tx_id().to_owned();
                let request = SignRequest::new(
                    verified.raw_tx().clone(),
                    intent,
                    Origin {
                        base_url: Some(self.client.base_url().to_string()),
                        action: Some(call.action.clone()),
                        tx_id: Some(tx_id.clone()),
                        profile,
                        created_at: Some(crate::journal::now()),
                    },
                );
                self.journal
                    .note(&tx_id, "sign-request", &json!({"requestFor": call.from}))?;
                Ok(ActionResult::SignRequest {
                    tx_id,
                    request: Box::new(request),
                })
            }
            SigningMode::ExecuteOnly => {
                // Verified all the same, so what is reported was checked.
                run.verify(&raw, &intent, None).await?;
                self.journal
                    .step(run.tx_id(), FlowState::Failed, "no-key", &json!({}))?;
                Err(Error::NoSigner { from: call.from })
            }
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
