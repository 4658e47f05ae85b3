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
use bridgectl_tx::{Context, Nonce, NonceFacts, Policy, RawTx, SignedTx, SigningLog, Verified};
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
    /// The verified transaction, with the trusted facts to show it by
    /// ([`Verified::summary_context`]).
    pub verified: &'a Verified,
    /// What the user asked for.
    pub intent: &'a Intent,
}

impl Review<'_> {
    /// The transaction to be signed.
    pub fn raw_tx(&self) -> &RawTx {
        self.verified.raw_tx()
    }
}

/// The caller's part in signing: show, confirm, unlock. The library never prompts;
/// the CLI implements this with its summary, confirmation prompt and keystore.
pub trait Approver {
    /// Returns the signer for `review.raw_tx().from`, or an error to stop (nothing is
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
    /// Where every signature is recorded before its bytes leave the signing step, and
    /// where the spending limits read their totals.
    pub signing_log: &'a dyn SigningLog,
}

pub use bridgectl_tx::policy::{DEFAULT_MAX_GAS_LIMIT, GAS_PRICE_SANITY_MULTIPLE};

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

    /// The policy in force: the user's, with the bridge's chains and contracts (and
    /// their tokens) as trusted facts. The bridge description comes from the same
    /// profile as the policy, never from the platform.
    pub fn trust_root(&self) -> Policy {
        let mut policy = self.policy.clone();
        if let Some(b) = self.bridge {
            for side in [&b.main, &b.side] {
                policy.trusted.contract(
                    side.token,
                    side.chain_id,
                    Some(Token {
                        symbol: side.symbol.clone(),
                        decimals: side.decimals,
                    }),
                );
            }
        }
        policy
    }

    fn side_of_chain(&self, chain_id: u64) -> Option<&ChainSide> {
        self.bridge.and_then(|b| {
            [&b.main, &b.side]
                .into_iter()
                .find(|s| s.chain_id == chain_id)
        })
    }

    /// The node's gas price for `chain_id`, when its node is known.
    pub(crate) async fn gas_price_quote(&self, chain_id: u64) -> Result<Option<u128>, Error> {
        match self
            .side_of_chain(chain_id)
            .and_then(|s| s.rpc_url.as_deref())
        {
            Some(url) => Ok(Some(NodeClient::new(url)?.gas_price().await?)),
            None => Ok(None),
        }
    }

    /// What can be found out about `from` on `chain_id` before signing: the node's gas
    /// price and pending nonce when the chain's node is known, else the platform's next
    /// nonce when its environment is; always the journal's floor.
    async fn signing_context(&self, from: Address, chain_id: u64) -> Result<Context, Error> {
        let side = self.side_of_chain(chain_id);
        let mut facts = NonceFacts {
            journal_next: self.journal.next_nonce(from, chain_id, None)?,
            ..NonceFacts::default()
        };
        let mut gas_price_quote = None;
        match side.and_then(|s| s.rpc_url.as_deref()) {
            Some(url) => {
                let node = NodeClient::new(url)?;
                gas_price_quote = Some(node.gas_price().await?);
                facts.pending = Some(node.pending_nonce(from).await?);
            }
            None => {
                if let Some(s) = side {
                    facts.platform = Some(self.client.next_nonce(from, &s.environment_id).await?);
                }
            }
        }
        Ok(Context {
            signer: from,
            gas_price_quote,
            nonce: Nonce::Next(facts),
            spent: None,
        })
    }

    /// Verifies `raw_tx` against `intent` and the trust root with the verifier of
    /// `bridgectl-tx`, reserves its nonce in the journal, and records the outcome (a
    /// refusal too). Nothing is unlocked here.
    pub async fn check_before_signing(
        &self,
        tx_id: &str,
        from: Address,
        raw_tx: &RawTx,
        intent: &Intent,
    ) -> Result<Verified, Error> {
        let checked = async {
            let policy = self.trust_root();
            let mut context = self.signing_context(from, raw_tx.chain_id).await?;
            context.spent = bridgectl_tx::limits::read_spent(
                &policy,
                raw_tx,
                self.signing_log,
                bridgectl_tx::log::unix_now(),
            )?;
            let verified = bridgectl_tx::verify(raw_tx, Some(intent), &policy, &context)?;
            self.journal
                .reserve_nonce(tx_id, from, raw_tx.chain_id, raw_tx.nonce)?;
            Ok::<_, Error>(verified)
        }
        .await;
        match checked {
            Ok(verified) => {
                self.journal.step(
                    tx_id,
                    FlowState::Verified,
                    "verified",
                    &json!({"nonceFrom": verified.nonce_source()}),
                )?;
                Ok(verified)
            }
            Err(e) => {
                self.journal.step(
                    tx_id,
                    FlowState::Failed,
                    "refused",
                    &json!({"error": e.to_string()}),
                )?;
                Err(e)
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
        let verified = self
            .check_before_signing(tx_id, from, raw_tx, intent)
            .await?;
        let signed = self.approve_and_sign(tx_id, &verified, intent, approver)?;
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
        verified: &Verified,
        intent: &Intent,
        approver: &mut dyn Approver,
    ) -> Result<SignedTx, Error> {
        let review = Review {
            tx_id,
            verified,
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
        let signed = bridgectl_tx::sign_and_log(
            verified,
            &signer,
            self.signing_log,
            bridgectl_tx::log::unix_now(),
        )?;
        drop(signer);
        self.journal
            .record_signed(tx_id, &SignedEntry::from(&signed))?;
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

    /// Checks a transaction signed before (an air-gap bundle, the journal's bytes on
    /// resume) with the one verifier before it is sent: a legacy EIP-155 call from its
    /// recovered signer, to a trusted chain and contract, within the caps, and (when an
    /// intent is known) doing what was asked. The nonce was fixed when it was signed.
    pub async fn check_signed(
        &self,
        decoded: &bridgectl_tx::decode::DecodedTx,
        intent: Option<&Intent>,
    ) -> Result<Verified, Error> {
        let unsigned = decoded.unsigned().ok_or_else(|| {
            bridgectl_tx::Error::Refused(format!(
                "transaction {} is not a legacy EIP-155 call, the only kind bridgectl sends",
                decoded.hash
            ))
        })?;
        let context = Context {
            signer: decoded.sender,
            gas_price_quote: self.gas_price_quote(unsigned.chain_id).await?,
            nonce: Nonce::AlreadySigned,
            spent: None,
        };
        Ok(bridgectl_tx::verify(
            &unsigned,
            intent,
            &self.trust_root(),
            &context,
        )?)
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
        if rec.state == FlowState::Completed {
            return Err(Error::AlreadyCompleted {
                tx_id: tx_id.to_owned(),
                tx_hash: rec.tx_hash.clone(),
            });
        }
        let Some(signed_hex) = rec.signed_tx.clone() else {
            return Err(Error::NothingToResume {
                tx_id: tx_id.to_owned(),
                state: rec.state.as_str(),
            });
        };
        let corrupt = |reason: String| Error::JournalCorrupt {
            tx_id: tx_id.to_owned(),
            reason,
        };
        let raw = hex::decode(signed_hex.trim_start_matches("0x"))
            .map_err(|_| corrupt("the signed bytes are not hex".into()))?;
        // The journal's bytes are a claim like any other: decoded, and checked against
        // what the journal says they are and against the trust root, before being sent.
        let decoded = bridgectl_tx::decode::decode_signed(&raw)
            .map_err(|e| corrupt(format!("the signed bytes do not decode: {e}")))?;
        let hash = decoded.hash;
        let recorded = |field: &str, journal: String, bytes: String| {
            corrupt(format!(
                "{field}: the journal records {journal}, its signed bytes have {bytes}"
            ))
        };
        if let Some(h) = &rec.tx_hash
            && h.parse::<B256>().ok() != Some(hash)
        {
            return Err(recorded("txHash", h.clone(), hash.to_string()));
        }
        let from: Address = rec
            .from
            .as_deref()
            .and_then(|f| f.parse().ok())
            .ok_or_else(|| corrupt("no sender recorded".into()))?;
        if decoded.sender != from {
            return Err(recorded(
                "from (recovered signer)",
                from.to_string(),
                decoded.sender.to_string(),
            ));
        }
        if decoded.chain_id != rec.chain_id {
            return Err(recorded(
                "chainId",
                format!("{:?}", rec.chain_id),
                format!("{:?}", decoded.chain_id),
            ));
        }
        if Some(decoded.nonce) != rec.nonce {
            return Err(recorded(
                "nonce",
                format!("{:?}", rec.nonce),
                decoded.nonce.to_string(),
            ));
        }
        if let Some(journaled) = &rec.raw_tx {
            let asked = RawTx::from_value(journaled)?;
            crate::airgap::check_signed_matches(&decoded, &asked)?;
        }
        let unsigned = self.check_signed(&decoded, None).await?.raw_tx().clone();
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
                unsigned.chain_id,
                unsigned.nonce,
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
