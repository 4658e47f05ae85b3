//! The shared spine of every flow: verify -> approve (unlock) -> sign -> journal ->
//! submit, and `resume` for a flow that was interrupted after signing.
//!
//! Order matters and is the point of this module:
//! 1. the raw transaction is parsed strictly and checked against the intent and the
//!    user's caps; a failure here never reaches the key;
//! 2. only then is the [`Approver`] asked (it shows the summary, confirms, unlocks);
//! 3. the signed bytes are committed to the journal before they are sent;
//! 4. submission failures leave the flow `signed`, so `resume` resends the same bytes.

use std::time::Duration;

use alloy_primitives::{Address, B256, U256};
use alloy_signer_local::PrivateKeySigner;
use bridgectl_tx::request::{Intent, Token};
use bridgectl_tx::{Policy, RawTx, SignedTx};
use serde::Serialize;
use serde_json::{Value, json};

use crate::Error;
use crate::client::PlatformClient;
use crate::journal::{FlowState, Journal, SignedEntry};
use crate::rpc::NodeClient;

/// One side of the bridge: a chain, its environment and its token.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainSide {
    /// The platform's environment id for this chain.
    pub environment_id: String,
    /// The token's symbol.
    pub symbol: String,
    /// The token's decimals.
    pub decimals: u8,
    /// The token contract.
    pub token: Address,
    /// The EIP-155 chain id.
    pub chain_id: u64,
    /// A node RPC URL, for nonces, gas, balances and direct submission.
    pub rpc_url: Option<String>,
}

/// Both sides of the bridge and the action names, as a profile describes them.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Bridge {
    /// The main network (MT).
    pub main: ChainSide,
    /// The side chain (ST).
    pub side: ChainSide,
    /// The transaction action mapped to the ST `redeem` function.
    pub redeem_action: String,
}

/// What the approver is shown: everything has passed the checks already.
#[derive(Debug)]
pub struct Review<'a> {
    /// The flow's txId (its kind and history are in the journal).
    pub tx_id: &'a str,
    /// The verified transaction.
    pub raw_tx: &'a RawTx,
    /// What the user asked for.
    pub intent: &'a Intent,
}

/// The caller's part in signing: show, confirm, unlock. The library never prompts;
/// the CLI implements this with its summary, confirmation prompt and keystore.
pub trait Approver {
    /// Returns the signer for `review.raw_tx.from`, or an error to stop (nothing is
    /// signed). Called only after every check passed.
    fn approve(&mut self, review: &Review<'_>) -> Result<PrivateKeySigner, Error>;
}

/// Progress of a long flow, for the CLI to show on stderr.
pub trait Progress {
    /// One line of progress.
    fn step(&mut self, message: &str);
}

/// Progress that goes nowhere (libraries and tests).
#[derive(Debug, Default)]
pub struct Quiet;

impl Progress for Quiet {
    fn step(&mut self, _message: &str) {}
}

/// Where signed transactions go.
#[derive(Debug, Clone)]
pub enum Submitter {
    /// Operation 3 of the platform.
    Platform,
    /// `eth_sendRawTransaction` on a node, then wait for the receipt.
    Node(NodeClient),
}

/// How long and how often to wait for results.
#[derive(Debug, Clone, Copy)]
pub struct WaitOptions {
    /// Time between polls.
    pub interval: Duration,
    /// Give up after this long (the flow can be resumed).
    pub timeout: Duration,
}

impl Default for WaitOptions {
    fn default() -> Self {
        Self {
            interval: Duration::from_millis(500),
            timeout: Duration::from_secs(120),
        }
    }
}

/// A transaction that was signed and accepted for submission.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Submitted {
    /// The flow's txId.
    pub tx_id: String,
    /// The transaction hash (computed locally; the platform's answer is checked
    /// against it).
    pub tx_hash: B256,
    /// The signer.
    pub from: Address,
    /// Chain id.
    pub chain_id: u64,
    /// Nonce.
    pub nonce: u64,
    /// Whether the submission was answered "already known" (a resend).
    pub already_known: bool,
}

/// The flows, over one platform client, journal and bridge description.
#[derive(Debug)]
pub struct Flows<'a> {
    /// The platform API.
    pub client: &'a PlatformClient,
    /// The journal.
    pub journal: &'a Journal,
    /// The chains and tokens; needed by redeem, swap and transfer, not by a generic
    /// transaction action.
    pub bridge: Option<&'a Bridge>,
    /// The user's own caps and expectations, checked on top of every intent.
    pub policy: Policy,
    /// Where signed transactions go.
    pub submitter: Submitter,
    /// Polling.
    pub wait: WaitOptions,
    /// The highest gas limit signed without question ([`DEFAULT_MAX_GAS_LIMIT`] unless
    /// the user says otherwise).
    pub max_gas_limit: u64,
}

/// Default cap on the gas limit: token calls need well under 100,000; a platform asking
/// for millions is either broken or hostile.
pub const DEFAULT_MAX_GAS_LIMIT: u64 = 1_000_000;

/// Without a gas-price cap from the user, a price above this multiple of the node's
/// quote is refused.
pub const GAS_PRICE_SANITY_MULTIPLE: u128 = 10;

/// Error codes of the platform and of nodes that mean "this exact transaction is already
/// there": a resend succeeded.
fn is_already_known(err: &Error) -> bool {
    match err {
        Error::Platform { error, .. } => {
            let code = error.code.to_ascii_uppercase();
            let msg = error.message.to_ascii_lowercase();
            code.contains("ALREADY_KNOWN")
                || msg.contains("already known")
                || msg.contains("already imported")
        }
        _ => false,
    }
}

impl Flows<'_> {
    /// The bridge description, or an error saying it is needed.
    pub fn bridge(&self) -> Result<&Bridge, Error> {
        self.bridge.ok_or_else(|| {
            Error::BadInput(
                "this flow needs the bridge description (environments, tokens, chains) in \
                 the profile"
                    .into(),
            )
        })
    }

    /// The intent as a policy, plus the user's caps.
    fn checks(&self, intent: &Intent) -> (Policy, &Policy) {
        let from_intent = Policy {
            expect_chain_id: intent.chain_id,
            expect_to: intent.to,
            expect_function: intent.function.clone(),
            expect_args: intent.args.clone(),
            max_gas_price: None,
            max_fee: None,
            // No bridge call sends native value, and an intent names the whole call.
            max_value: Some(U256::ZERO),
            exact_args: intent.function.is_some(),
        };
        (from_intent, &self.policy)
    }

    /// The gas-price cap in force for `chain_id`: the user's, else a sanity multiple
    /// ([`GAS_PRICE_SANITY_MULTIPLE`]) of what the chain's node quotes, when the node is
    /// known. A platform that asks for a thousand times the going price is refused even
    /// when the user set no cap (a gas limit typed into the price field has cost people
    /// whole balances).
    async fn gas_price_cap(&self, chain_id: u64) -> Result<Option<(u128, String)>, Error> {
        if let Some(cap) = self.policy.max_gas_price {
            return Ok(Some((cap, "policy".into())));
        }
        let node_url = self.bridge.and_then(|b| {
            [&b.main, &b.side]
                .into_iter()
                .find(|s| s.chain_id == chain_id)
                .and_then(|s| s.rpc_url.clone())
        });
        let Some(url) = node_url else {
            return Ok(None);
        };
        let quoted = NodeClient::new(&url)?.gas_price().await?;
        let cap = quoted.saturating_mul(GAS_PRICE_SANITY_MULTIPLE).max(1);
        Ok(Some((
            cap,
            format!("{GAS_PRICE_SANITY_MULTIPLE}x the node's gas price {quoted}"),
        )))
    }

    /// Verifies `raw_tx` against `intent` and the caps, records it, and on failure
    /// records the refusal. Nothing is unlocked here.
    pub async fn verify(
        &self,
        tx_id: &str,
        from: Address,
        raw_tx: &RawTx,
        intent: &Intent,
    ) -> Result<(), Error> {
        let (intent_policy, caps) = self.checks(intent);
        let refuse = |field: &str, expected: String, found: String| {
            Err(bridgectl_tx::Error::Policy {
                source_name: "policy",
                field: field.into(),
                expected,
                found,
            })
        };
        // What was asked for first (from, chain, callee, call), then what it may cost.
        let asked = if raw_tx.from != from {
            Err(bridgectl_tx::Error::Policy {
                source_name: "intent",
                field: "from".into(),
                expected: from.to_string(),
                found: raw_tx.from.to_string(),
            })
        } else {
            bridgectl_tx::policy::verify(raw_tx, &intent_policy, "intent")
                .and_then(|()| bridgectl_tx::policy::verify(raw_tx, caps, "policy"))
        };
        let result = match asked {
            Err(e) => Err(e),
            Ok(()) if raw_tx.gas_limit > self.max_gas_limit => refuse(
                "gasLimit",
                format!("at most {}", self.max_gas_limit),
                raw_tx.gas_limit.to_string(),
            ),
            Ok(()) => match self.gas_price_cap(raw_tx.chain_id).await? {
                // A fee cap bounds the price too; with neither, nothing would.
                None if self.policy.max_fee.is_none() => refuse(
                    "gasPrice",
                    "a cap: max-gas-price or max-fee in the profile's policy (or the flags), \
                     or the chain's rpc_url so the going price can be checked"
                        .into(),
                    format!("{} wei with no cap configured", raw_tx.gas_price),
                ),
                Some((cap, why)) if raw_tx.gas_price > cap => refuse(
                    "gasPrice",
                    format!("at most {cap} wei ({why})"),
                    format!("{} wei", raw_tx.gas_price),
                ),
                _ => Ok(()),
            },
        };
        match result {
            Ok(()) => {
                self.journal
                    .step(tx_id, FlowState::Verified, "verified", &json!({}))?;
                Ok(())
            }
            Err(e) => {
                self.journal.step(
                    tx_id,
                    FlowState::Failed,
                    "refused",
                    &json!({"error": e.to_string()}),
                )?;
                Err(e.into())
            }
        }
    }

    /// Verify, approve, sign, journal, submit. The flow must have been begun in the
    /// journal under `tx_id`.
    pub async fn sign_and_submit(
        &self,
        tx_id: &str,
        from: Address,
        raw_tx: &RawTx,
        intent: &Intent,
        approver: &mut dyn Approver,
        progress: &mut dyn Progress,
    ) -> Result<Submitted, Error> {
        self.verify(tx_id, from, raw_tx, intent).await?;
        let signed = self.approve_and_sign(tx_id, raw_tx, intent, approver)?;
        progress.step(&format!("signed {} (nonce {})", signed.hash, signed.nonce));
        self.submit_journaled(
            tx_id,
            &signed.raw,
            signed.hash,
            signed.chain_id,
            signed.nonce,
            signed.from,
            progress,
        )
        .await
    }

    /// Asks the approver for the key, signs, and commits the signed bytes to the journal.
    pub fn approve_and_sign(
        &self,
        tx_id: &str,
        raw_tx: &RawTx,
        intent: &Intent,
        approver: &mut dyn Approver,
    ) -> Result<SignedTx, Error> {
        let review = Review {
            tx_id,
            raw_tx,
            intent,
        };
        let signer = match approver.approve(&review) {
            Ok(s) => s,
            Err(e) => {
                self.journal.step(
                    tx_id,
                    FlowState::Failed,
                    "not-approved",
                    &json!({"error": e.to_string()}),
                )?;
                return Err(e);
            }
        };
        let signed = bridgectl_tx::sign_legacy(raw_tx, &signer)?;
        drop(signer);
        self.journal.record_signed(
            tx_id,
            &SignedEntry {
                raw: &signed.raw,
                hash: signed.hash.to_string(),
                chain_id: signed.chain_id,
                nonce: signed.nonce,
            },
        )?;
        Ok(signed)
    }

    /// Submits bytes that are already in the journal; records the outcome. A failure
    /// leaves the flow `signed` so that `resume` can send the same bytes again.
    #[allow(clippy::too_many_arguments)]
    pub async fn submit_journaled(
        &self,
        tx_id: &str,
        raw: &[u8],
        hash: B256,
        chain_id: u64,
        nonce: u64,
        from: Address,
        progress: &mut dyn Progress,
    ) -> Result<Submitted, Error> {
        progress.step("submitting");
        let result = match &self.submitter {
            Submitter::Platform => self.client.submit_signed(raw).await,
            Submitter::Node(node) => node.send_raw(raw, hash).await,
        };
        let already_known = match result {
            Ok(answered) => {
                if answered != hash {
                    // The platform reports a different hash than the bytes we sent
                    // have: keep ours (it is what is on chain) and say so.
                    self.journal.note(
                        tx_id,
                        "hash-mismatch",
                        &json!({"ours": hash.to_string(), "platform": answered.to_string()}),
                    )?;
                }
                false
            }
            Err(e) if is_already_known(&e) => true,
            Err(e) => {
                self.journal
                    .note(tx_id, "submit-failed", &json!({"error": e.to_string()}))?;
                return Err(e);
            }
        };
        self.journal.step(
            tx_id,
            FlowState::Submitted,
            "submitted",
            &json!({"txHash": hash.to_string(), "alreadyKnown": already_known}),
        )?;
        progress.step(&format!("submitted {hash}"));
        if let Submitter::Node(node) = &self.submitter {
            progress.step("waiting for the receipt");
            let receipt = node
                .wait_receipt(hash, self.wait.interval, self.wait.timeout)
                .await?;
            self.journal
                .record_result(tx_id, &serde_json::to_value(&receipt).unwrap_or_default())?;
            self.journal.note(
                tx_id,
                "mined",
                &json!({"block": receipt.block_number, "success": receipt.success}),
            )?;
            if !receipt.success {
                self.journal
                    .step(tx_id, FlowState::Failed, "reverted", &json!({}))?;
                return Err(Error::BadInput(format!(
                    "transaction {hash} was mined in block {} but reverted",
                    receipt.block_number
                )));
            }
        }
        Ok(Submitted {
            tx_id: tx_id.to_owned(),
            tx_hash: hash,
            from,
            chain_id,
            nonce,
            already_known,
        })
    }

    /// Marks a flow done with its final result.
    pub fn complete(&self, tx_id: &str, result: &Value, ok: bool) -> Result<(), Error> {
        let (state, step) = if ok {
            (FlowState::Completed, "completed")
        } else {
            (FlowState::Failed, "failed")
        };
        self.journal.observe(tx_id, Some(state), step, result)
    }

    /// Finishes an interrupted flow: resends the SAME signed bytes from the journal
    /// (already-known counts as success). Never signs anything. Returns the submission;
    /// the caller then waits for the flow's result as the flow itself would.
    pub async fn resume_submit(
        &self,
        tx_id: &str,
        progress: &mut dyn Progress,
    ) -> Result<(crate::journal::FlowRecord, Submitted), Error> {
        let rec = self.journal.get(tx_id)?;
        let Some(signed_hex) = rec.signed_tx.clone() else {
            return Err(Error::BadInput(format!(
                "flow {tx_id} was never signed (state {}): nothing was sent, so there is \
                 nothing to resume; start it again",
                rec.state.as_str()
            )));
        };
        let raw = hex::decode(signed_hex.trim_start_matches("0x")).map_err(|_| {
            Error::BadInput(format!("journal holds malformed signed bytes for {tx_id}"))
        })?;
        let hash = alloy_primitives::keccak256(&raw);
        if let Some(recorded) = &rec.tx_hash
            && recorded.parse::<B256>().ok() != Some(hash)
        {
            return Err(Error::BadInput(format!(
                "journal for {tx_id} is inconsistent: recorded hash {recorded} is not the \
                 hash of the recorded bytes {hash}"
            )));
        }
        let from: Address = rec
            .from
            .as_deref()
            .and_then(|f| f.parse().ok())
            .unwrap_or(Address::ZERO);
        self.journal.note(
            tx_id,
            "resume",
            &json!({"txHash": hash.to_string(), "fromState": rec.state.as_str()}),
        )?;
        progress.step(&format!("resending the signed transaction {hash}"));
        let submitted = self
            .submit_journaled(
                tx_id,
                &raw,
                hash,
                rec.chain_id.unwrap_or_default(),
                rec.nonce.unwrap_or_default(),
                from,
                progress,
            )
            .await?;
        Ok((rec, submitted))
    }
}

/// The intent of a token transfer call (`transfer(_to, _value)`).
pub fn transfer_intent(side: &ChainSide, to: Address, amount: U256, what: &str) -> Intent {
    let mut args = std::collections::BTreeMap::new();
    args.insert("_to".to_owned(), to.to_string());
    args.insert("_value".to_owned(), amount.to_string());
    Intent {
        function: Some("transfer".into()),
        args,
        to: Some(side.token),
        chain_id: Some(side.chain_id),
        token: Some(Token {
            symbol: side.symbol.clone(),
            decimals: side.decimals,
        }),
        description: Some(what.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::PlatformError;

    #[test]
    fn already_known_is_recognised_in_codes_and_messages() {
        let e = |code: &str, message: &str| Error::Platform {
            operation: "x".into(),
            error: PlatformError {
                status: 400,
                code: code.into(),
                message: message.into(),
            },
        };
        assert!(is_already_known(&e("TX_ALREADY_KNOWN", "x")));
        assert!(is_already_known(&e("RPC_-32000", "already known")));
        assert!(!is_already_known(&e("NONCE_TOO_LOW", "nonce too low")));
    }
}
