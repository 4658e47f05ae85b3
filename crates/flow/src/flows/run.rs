//! One flow in progress: a [`Run`] is made once, when the flow starts in the journal,
//! with its txId fixed, and takes the flow down the spine in order:
//!
//! `start` → (`execute`, for a transaction action) → `verify` → `sign` → `submit`
//!
//! and the flow's own file waits for its end (a redemption, a credit, a receipt). Every
//! flow that signs here reads top to bottom in its own file as those calls; the steps
//! are written once, here, and none of them calls back into a flow's file.
//!
//! The order is the promise: nothing reaches the key before the one verifier passed and
//! the nonce is reserved; the signature is in the signing log before its bytes leave the
//! signing step, and in the journal (fsync'd) before the first byte is sent.

use std::sync::Arc;

use alloy_primitives::Address;
use bridgectl_tx::request::Intent;
use bridgectl_tx::{
    Context, Nonce, NonceFacts, RawTx, SignedTx, SigningLog, TransactionSigner, Verified,
};
use serde_json::{Value, json};

use super::action::{ActionCall, ActionOutcome};
use super::{Approver, Flows, Progress, Review, Submitted, Submitter};
use super::{fail, is_already_known, is_nonce_too_low, new_tx_id};
use crate::Error;
use crate::client::ExecuteRequest;
use crate::journal::{FlowKind, FlowState, Journal, Purpose};

/// A flow of the journal on its way down the spine: its txId and its sender, fixed.
pub(crate) struct Run<'f> {
    flows: &'f Flows,
    tx_id: String,
    from: Address,
}

/// The step a flow that stopped at its approval ends at (see `sign_verified`).
pub(super) const NOT_APPROVED: &str = "not-approved";

impl Flows {
    /// Starts a flow of `kind` from `from` in the journal, recording `intent` (what was
    /// asked, as the journal keeps it), under `tx_id` when a batch assigned and recorded
    /// one first, else under a fresh txId.
    pub(crate) fn start(
        &self,
        tx_id: Option<&str>,
        kind: FlowKind,
        from: Address,
        intent: &Value,
    ) -> Result<Run<'_>, Error> {
        let tx_id = tx_id.map_or_else(new_tx_id, str::to_owned);
        self.journal
            .begin(&tx_id, kind, Some(&from.to_string()), intent)?;
        Ok(Run {
            flows: self,
            tx_id,
            from,
        })
    }

    /// Takes up flow `tx_id` of the journal, from `from` (a resumed, replaced or
    /// submitted flow).
    pub(crate) fn run_of(&self, tx_id: &str, from: Address) -> Run<'_> {
        Run {
            flows: self,
            tx_id: tx_id.to_owned(),
            from,
        }
    }
}

impl Run<'_> {
    /// The flow's txId.
    pub(crate) fn tx_id(&self) -> &str {
        &self.tx_id
    }

    /// Executes `call` and records the answer (a managed account's submission and a
    /// view's value end the flow). Nothing is signed here.
    pub(crate) async fn execute(&self, call: &ActionCall) -> Result<ActionOutcome, Error> {
        let flows = self.flows;
        let request = ExecuteRequest {
            tx_id: self.tx_id.clone(),
            from: call.from,
            inputs: call
                .inputs
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        };
        let data = flows
            .client
            .execute_action(&call.action, &request)
            .await
            .inspect_err(|e| self.fail("execute-failed", e))?;
        let outcome = ActionOutcome::classify(&data);
        match &outcome {
            ActionOutcome::Eoa { raw_tx, .. } => {
                flows.journal.record_raw_tx(&self.tx_id, raw_tx)?
            }
            ActionOutcome::Managed { .. } | ActionOutcome::View { .. } => {
                flows.complete(&self.tx_id, &data, true)?;
            }
        }
        Ok(outcome)
    }

    /// Parses the rawTx of an EOA outcome strictly, with the same rules as an envelope
    /// given to the offline signer (`data.from` must be `rawTx.from`); a refusal is
    /// journaled.
    pub(crate) fn parse_raw_tx(
        &self,
        data: &serde_json::Map<String, Value>,
    ) -> Result<RawTx, Error> {
        bridgectl_tx::request::parse_action_data(data)
            .map(|(raw, _)| raw)
            .map_err(Error::Tx)
            .inspect_err(|e| self.fail("refused", e))
    }

    /// Executes `call`, then verifies, signs and submits the EOA transaction it
    /// returns; any other outcome is an error. Returns the submission and the rawTx as
    /// the platform sent it.
    pub(crate) async fn sign_action(
        &self,
        call: &ActionCall,
        approver: &mut impl Approver,
        progress: &mut dyn Progress,
    ) -> Result<(Submitted, Value), Error> {
        progress.step(&format!("executing action {}", call.action));
        // What the verifier needs from the node (its gas price, the sender's pending
        // nonce) is read while the platform answers, not after: a batch's items of one
        // address wait on each other, so this round trip was on their path. Read
        // before the rawTx exists, it is the same reading: the sender's previous
        // transaction was accepted before this action was asked for.
        let prefetch = async {
            let chain_id = call.intent.chain_id?;
            self.context(chain_id).await.ok().map(|c| (chain_id, c))
        };
        let (outcome, prefetched) = tokio::join!(self.execute(call), prefetch);
        let outcome = outcome?;
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
        let raw = self.parse_raw_tx(&data)?;
        let submitted = self
            .sign_and_submit(&raw, &call.full_intent(), prefetched, approver, progress)
            .await?;
        Ok((submitted, raw_tx))
    }

    /// What can be found out about the sender on `chain_id` before signing: the node's
    /// gas price and pending nonce when the chain's node is known, else the platform's
    /// next nonce when its environment is; always the journal's floor, under which this
    /// flow's own reservation does not count (a flow resumed at its approval holds the
    /// nonce it is about to sign).
    pub(crate) async fn context(&self, chain_id: u64) -> Result<Context, Error> {
        let (flows, from) = (self.flows, self.from);
        let side = flows.side_of_chain(chain_id);
        let mut facts = NonceFacts {
            journal_next: flows
                .journal
                .next_nonce(from, chain_id, Some(&self.tx_id))?,
            ..NonceFacts::default()
        };
        let mut gas_price_quote = None;
        flows.check_nodes().await?;
        match flows.node_of_chain(chain_id) {
            Some(node) => {
                let node = node?;
                let (price, pending, genesis, chain_time) = tokio::try_join!(
                    node.gas_price(),
                    node.pending_nonce(from),
                    self.flows.verify_chain(&*node, chain_id),
                    node.latest_block_time()
                )?;
                gas_price_quote = Some(price);
                facts.pending = Some(pending);
                facts.genesis = Some(genesis);
                facts.chain_time = Some(chain_time);
            }
            None => {
                if let Some(s) = side {
                    facts.platform = Some(flows.client.next_nonce(from, &s.environment_id).await?);
                    // No node to give the chain's time: the platform's clock (its answer's
                    // `Date`) is the second witness a spending window's end is held to.
                    facts.chain_time = flows.client.server_time();
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
    /// refusal too). The signing context is `prefetched` when it was read before the
    /// raw transaction arrived and is for its chain; else it is read now. Nothing is
    /// unlocked here.
    pub(crate) async fn verify(
        &self,
        raw_tx: &RawTx,
        intent: &Intent,
        prefetched: Option<(u64, Context)>,
    ) -> Result<Verified, Error> {
        let flows = self.flows;
        let checked = async {
            let policy = flows.policy_for(raw_tx.chain_id);
            let mut context = match prefetched {
                Some((chain_id, context)) if chain_id == raw_tx.chain_id => context,
                _ => self.context(raw_tx.chain_id).await?,
            };
            self.refuse_held_nonce(raw_tx, &context)?;
            // The window ends at this machine's clock, but never past what the chain
            // vouches for: its newest block time, plus a tolerance.
            let ceiling = match &context.nonce {
                Nonce::Next(facts) => facts
                    .chain_time
                    .map(|t| t.saturating_add(bridgectl_tx::limits::CLOCK_TOLERANCE)),
                _ => None,
            };
            context.spent = bridgectl_tx::limits::read_spent_within(
                &policy,
                raw_tx,
                None,
                flows.signing_log.as_ref(),
                flows.clock.now(),
                ceiling,
            )?;
            // Online, a window's end has a second witness of time (the chain's newest
            // block, else the platform's clock); without either, this machine's clock
            // alone could move what was signed out of the window.
            if context.spent.is_some() && ceiling.is_none() {
                return Err(bridgectl_tx::Error::Refused(format!(
                    "a spending limit on chain {} is held online to a second clock, and \
                     none answered: set the chain's node (main_rpc_url or side_rpc_url), or \
                     use a platform that sends a Date header",
                    raw_tx.chain_id
                ))
                .into());
            }
            let verified = bridgectl_tx::verify(raw_tx, Some(intent), &policy, &context)?;
            flows
                .journal
                .reserve_nonce(&self.tx_id, self.from, raw_tx.chain_id, raw_tx.nonce)?;
            Ok::<_, Error>(verified)
        }
        .await;
        match checked {
            Ok(verified) => {
                flows.journal.step(
                    &self.tx_id,
                    FlowState::Verified,
                    "verified",
                    &json!({"nonceFrom": verified.nonce_source()}),
                )?;
                Ok(verified)
            }
            Err(e) => {
                self.fail("refused", &e);
                Err(e)
            }
        }
    }

    /// Asks `approver`, signs `verified` and journals it ([`sign_verified`]), as the
    /// flow's transaction or, for another `purpose`, as its replacement. An original
    /// signature that stops at the approval says which flow to resume
    /// ([`Error::StoppedAtApproval`]).
    pub(crate) async fn sign(
        &self,
        verified: &Verified,
        intent: &Intent,
        purpose: Purpose,
        approver: &mut impl Approver,
    ) -> Result<SignedTx, Error> {
        let flows = self.flows;
        let signed = sign_verified(
            Records::Shared(&flows.journal, &flows.signing_log),
            flows.clock.as_ref(),
            Review {
                tx_id: &self.tx_id,
                verified,
                intent,
            },
            purpose,
            approver,
        )
        .await;
        match purpose {
            Purpose::Original => signed.map_err(|e| flows.stopped_at_approval(&self.tx_id, e)),
            _ => signed,
        }
    }

    /// Verify, sign, submit: the spine of every flow that signs here.
    pub(crate) async fn sign_and_submit(
        &self,
        raw_tx: &RawTx,
        intent: &Intent,
        prefetched: Option<(u64, Context)>,
        approver: &mut impl Approver,
        progress: &mut dyn Progress,
    ) -> Result<Submitted, Error> {
        let verified = self.verify(raw_tx, intent, prefetched).await?;
        let signed = self
            .sign(&verified, intent, Purpose::Original, approver)
            .await?;
        progress.step(&format!("signed {} (nonce {})", signed.hash, signed.nonce));
        self.submit(&signed, progress).await
    }

    /// Submits bytes that are already in the journal; records the outcome. A failure
    /// leaves the flow `signed` so that `resume` can send the same bytes again.
    pub(crate) async fn submit(
        &self,
        signed: &SignedTx,
        progress: &mut dyn Progress,
    ) -> Result<Submitted, Error> {
        let (flows, tx_id) = (self.flows, self.tx_id.as_str());
        progress.step("submitting");
        let hash = signed.hash;
        let result = match &flows.submitter {
            Submitter::Platform => flows.client.submit_signed(&signed.raw).await,
            Submitter::Node(node) => node.send_raw(&signed.raw, hash).await,
        };
        let already_known = match result {
            Ok(answered) => {
                if answered != hash {
                    // The platform reports a different hash than the bytes we sent
                    // have: keep ours (it is what is on chain) and say so.
                    flows.journal.note(
                        tx_id,
                        "hash-mismatch",
                        &json!({"ours": hash.to_string(), "platform": answered.to_string()}),
                    )?;
                }
                false
            }
            Err(e) if is_already_known(&e) => true,
            // A resend of bytes that were mined meanwhile: "nonce too low" for the very
            // transaction that used the nonce is success, not a conflict.
            Err(e) if is_nonce_too_low(&e) && flows.is_mined(signed.chain_id, hash).await => true,
            Err(e) => {
                flows
                    .journal
                    .note(tx_id, "submit-failed", &json!({"error": e.to_string()}))?;
                return Err(e);
            }
        };
        flows.journal.step(
            tx_id,
            FlowState::Submitted,
            "submitted",
            &json!({"txHash": hash.to_string(), "alreadyKnown": already_known}),
        )?;
        progress.step(&format!("submitted {hash}"));
        if let Submitter::Node(node) = &flows.submitter {
            progress.step("waiting for the receipt");
            let receipt = node
                .wait_receipt(hash, flows.wait.interval, flows.wait.timeout, progress)
                .await?;
            flows
                .journal
                .record_result(tx_id, &serde_json::to_value(&receipt).unwrap_or_default())?;
            flows.journal.note(
                tx_id,
                "mined",
                &json!({"block": receipt.block_number, "success": receipt.success}),
            )?;
            if !receipt.success {
                flows
                    .journal
                    .step(tx_id, FlowState::Failed, "reverted", &json!({}))?;
                return Err(Error::Reverted {
                    tx_hash: hash,
                    block: receipt.block_number,
                });
            }
        }
        Ok(Submitted {
            tx_id: tx_id.to_owned(),
            tx_hash: hash,
            from: signed.from,
            chain_id: signed.chain_id,
            nonce: signed.nonce,
            already_known,
        })
    }

    /// The chain's next nonce (the node's or the platform's count) is one a flow here
    /// signed or holds: its transaction never reached the chain, or fell out of the
    /// node's pool, and the address is stuck behind it. The refusal names that flow and
    /// the ways on (resume it, replace it, cancel it) rather than only the number the
    /// verifier would give. A nonce the chain is already past is left to the verifier: a
    /// replacement of something mined or pending, from a platform that should not ask.
    fn refuse_held_nonce(&self, raw_tx: &RawTx, context: &Context) -> Result<(), Error> {
        let Nonce::Next(NonceFacts {
            journal_next: Some(floor),
            pending,
            platform,
            ..
        }) = &context.nonce
        else {
            return Ok(());
        };
        let chain_next = pending.or(*platform);
        if raw_tx.nonce >= *floor || chain_next.is_some_and(|next| raw_tx.nonce < next) {
            return Ok(());
        }
        match self
            .flows
            .nonce_held(raw_tx.from, raw_tx.chain_id, raw_tx.nonce)?
        {
            Some(held) => Err(held),
            None => Ok(()),
        }
    }

    /// Journals a failure at `step` (best effort: the original error is what the
    /// caller reports).
    pub(crate) fn fail(&self, step: &str, err: &Error) {
        fail(&self.flows.journal, &self.tx_id, step, err);
    }
}

/// Asks the approver for the key, signs (the bytes decoded as a self-check and recorded
/// in the signing log before they leave `bridgectl-tx`), and commits the signed bytes to the
/// journal (a replacement of the flow's signed transaction, for a `purpose` other than
/// its original signature). The only function of the crate that reaches a key; online
/// flows (through [`Run::sign`]), the offline signer and replace/cancel all come
/// through here.
pub(super) async fn sign_verified(
    records: Records<'_>,
    clock: &dyn crate::clock::Clock,
    review: Review<'_>,
    purpose: Purpose,
    approver: &mut impl Approver,
) -> Result<SignedTx, Error> {
    let (tx_id, verified) = (review.tx_id, review.verified);
    let journal = records.journal();
    // A replacement that stops leaves the flow as it was: signed, its first transaction
    // still able to be mined.
    let fail = |step: &str, e: &Error| match purpose {
        Purpose::Original => fail(journal, tx_id, step, e),
        _ => {
            let _ = journal.note(
                tx_id,
                &format!("{}-{step}", purpose.as_str()),
                &json!({"error": e.to_string()}),
            );
        }
    };
    // An original signature that stops here leaves a flow that resumes at its approval
    // open (see `Journal::stop_at_approval`).
    let signer = approver
        .approve(&review)
        .await
        .inspect_err(|e| match purpose {
            Purpose::Original => {
                let detail = json!({"error": e.to_string()});
                let _ = journal.stop_at_approval(tx_id, NOT_APPROVED, &detail);
            }
            _ => fail(NOT_APPROVED, e),
        })?;
    // The approval may have taken long: the nonce must still be this flow's, with lease
    // to spare, or another flow may have signed it meanwhile.
    let tx = verified.raw_tx();
    journal
        .hold_reservation(tx_id, tx.from, tx.chain_id, tx.nonce)
        .inspect_err(|e| fail("not-signed", e))?;
    let time = clock.now();
    let signed = match (records, signer.local_key()) {
        // A key of this process: signed, logged and journaled on the blocking pool, so
        // neither store's commit (an fsync on SQLite, round trips on PostgreSQL) holds
        // up the caller's runtime.
        (Records::Shared(journal, log), Some(key)) => {
            let (journal, log) = (Arc::clone(journal), Arc::clone(log));
            let (key, verified, tx_id) = (key.clone(), verified.clone(), tx_id.to_owned());
            drop(signer);
            let task = tokio::task::spawn_blocking(move || {
                let signed = bridgectl_tx::sign_and_log(&verified, &key, log.as_ref(), time);
                drop(key);
                record(&journal, &tx_id, signed, purpose)
            });
            match task.await {
                Ok(done) => done,
                // A panic of the signer or a store is this caller's panic.
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                // The runtime shut down before the task started (a blocking task that
                // runs is never cancelled): nothing was signed. Shutting a runtime down
                // under a flow is the embedder's mistake.
                Err(_) => Err(Stopped::NotSigned(Error::Config(
                    "the async runtime shut down before the signature was made",
                ))),
            }
        }
        (records, _) => {
            let signed =
                bridgectl_tx::sign_and_log_with(verified, &signer, records.log(), time).await;
            drop(signer);
            record(journal, tx_id, signed, purpose)
        }
    };
    match signed {
        Ok(signed) => Ok(signed),
        Err(Stopped::NotSigned(e)) => {
            fail("not-signed", &e);
            Err(e)
        }
        // Signed and logged; the flow stays as the failed journal left it.
        Err(Stopped::NotJournaled(e)) => Err(e),
    }
}

/// Why a signature did not come back from [`record`].
enum Stopped {
    /// It was not made, or not logged (a refusal inside the log's append).
    NotSigned(Error),
    /// It was made and logged, and journaling it failed.
    NotJournaled(Error),
}

/// Records what `signed` made in `journal`, as flow `tx_id`'s transaction (or, for
/// another `purpose`, as its replacement), durably: only then may the bytes be sent.
fn record(
    journal: &Journal,
    tx_id: &str,
    signed: Result<SignedTx, bridgectl_tx::Error>,
    purpose: Purpose,
) -> Result<SignedTx, Stopped> {
    let signed = signed.map_err(|e| Stopped::NotSigned(e.into()))?;
    bridgectl_local::failpoint::hit("signed-not-journaled");
    match purpose {
        Purpose::Original => journal.record_signed(tx_id, &signed),
        _ => journal.record_replacement(tx_id, &signed, purpose),
    }
    .map_err(Stopped::NotJournaled)?;
    bridgectl_local::failpoint::hit("journaled-not-sent");
    Ok(signed)
}

/// The stores a signature is recorded in: the flows' own, shared, whose commits run off
/// the caller's runtime, or those a caller lends (the offline signer), committed in place.
pub(super) enum Records<'a> {
    /// [`Flows`]'s journal and signing log.
    Shared(&'a Arc<Journal>, &'a Arc<dyn SigningLog>),
    /// A caller's.
    Borrowed(&'a Journal, &'a dyn SigningLog),
}

impl<'a> Records<'a> {
    fn journal(&self) -> &'a Journal {
        match *self {
            Records::Shared(journal, _) => journal,
            Records::Borrowed(journal, _) => journal,
        }
    }

    fn log(&self) -> &'a dyn SigningLog {
        match *self {
            Records::Shared(_, log) => log.as_ref(),
            Records::Borrowed(_, log) => log,
        }
    }
}

impl Flows {
    /// The refusal of `nonce` of `from` on `chain_id` when a flow here holds it
    /// ([`Error::NonceHeld`], naming the flow and what it awaits), `None` when none does:
    /// what a flow about to sign it, and a batch's check, are refused with.
    pub(crate) fn nonce_held(
        &self,
        from: Address,
        chain_id: u64,
        nonce: u64,
    ) -> Result<Option<Error>, Error> {
        let Some(holder) = self.journal.nonce_holder(from, chain_id, nonce)? else {
            return Ok(None);
        };
        let awaits = match holder.signed_tx {
            Some(_) => None,
            None => self.journal.awaited_offline(&holder.tx_id)?,
        };
        Ok(Some(Error::NonceHeld {
            address: from,
            chain_id,
            nonce,
            state: holder.state,
            tx_hash: holder.tx_hash.unwrap_or_else(|| "not signed yet".into()),
            by: holder.tx_id,
            awaits,
        }))
    }
}
