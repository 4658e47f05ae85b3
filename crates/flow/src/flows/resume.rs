//! Resume: takes up a journaled flow where it stopped.
//!
//! - A flow that **signed** (the submission failed, its answer was lost, the wait ran
//!   out) is finished by resending the SAME signed bytes from the journal (a node's
//!   "already known" is success), then waiting for the result as the flow would have.
//!   This never signs anything and never picks a new nonce: [`Flows::resume`].
//! - A flow that stopped **at its approval** (declined, every passphrase attempt wrong,
//!   the prompt interrupted) has the raw transaction its action returned in the journal,
//!   unsigned. [`Flows::resume_with_approval`] re-parses it strictly and takes it
//!   through the spine again: the one verifier against the intent (a redeem's rebuilt
//!   from the bridge description) with the current trust root and nonce facts, the nonce
//!   reserved, the approver asked, signed, journaled, submitted, waited for. A
//!   transaction whose nonce is no longer the sender's next one is refused
//!   ([`Error::Stale`]): run the command again.
//! - Any other flow that never signed (refused by the checks, the action failed, a sign
//!   request written for the air gap) is not taken up: [`Error::NothingToResume`] says
//!   why and what to do instead.

use std::collections::BTreeMap;

use alloy_primitives::{Address, B256, U256};
use bridgectl_tx::RawTx;
use bridgectl_tx::request::Intent;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::run::NOT_APPROVED;
use super::{ActionCall, Approver, Flows, Progress, Submitted};
use crate::Error;
use crate::client::Redemption;
use crate::journal::{FlowKind, FlowRecord, FlowState, Journal, Purpose};

/// What [`Flows::resume`] or [`Flows::resume_with_approval`] did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resumed {
    /// What the flow was.
    pub kind: FlowKind,
    /// The (re)submission.
    pub submitted: Submitted,
    /// For a redeem: the redemption record it ended with.
    pub redemption: Option<Redemption>,
    /// Whether this resume signed the flow's journaled transaction (it had stopped at
    /// its approval); `false`: the journal's signed bytes were resent.
    pub signed_now: bool,
    /// For a flow replaced at its nonce (`replace`, `cancel`): which of its
    /// transactions was mined, and how the flow ended by it.
    pub ended: Option<super::Ended>,
    /// For any other flow: what was observed of its end, and the state it left the flow
    /// in (`submitted` still, when its end cannot be observed here).
    pub followed: Option<super::FlowStatus>,
}

/// Where a journaled flow can be taken up.
enum Stage {
    /// Signed: the journal's bytes (0x hex) are resent.
    Signed(String),
    /// Stopped at its approval with this rawTx journaled, unsigned.
    AtApproval(Value),
}

/// What an action flow journaled when it began (see `execute`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JournaledCall {
    action: String,
    inputs: BTreeMap<String, String>,
    intent: Intent,
    /// Whether the operator gave the call's function ([`Intent::caller_pinned`], which a
    /// document never carries): the journal is this machine's own record of it.
    #[serde(default)]
    caller_pinned: bool,
}

impl Flows {
    /// Resends flow `tx_id`'s signed bytes after checking them against the journal's own
    /// record and the trust root, then waits for the flow's observed end
    /// ([`Flows::follow`]): a redeem for its redemption, a swap for its ST credit, any
    /// other transaction for its receipt. Never signs:
    /// [`Error::NeedsApproval`] for a flow that stopped at its approval,
    /// [`Error::AlreadyCompleted`] and [`Error::NothingToResume`] say why nothing was
    /// sent.
    pub async fn resume(&self, tx_id: &str, progress: &mut dyn Progress) -> Result<Resumed, Error> {
        let rec = self.take_up(tx_id).await?;
        if let Some(confirming) = self.still_confirming(&rec, progress).await? {
            return Ok(confirming);
        }
        match stage(&self.journal, &rec)? {
            Stage::Signed(signed_hex) => self.resend(&rec, &signed_hex, progress).await,
            Stage::AtApproval(_) => Err(Error::NeedsApproval {
                tx_id: tx_id.to_owned(),
            }),
        }
    }

    /// [`Flows::resume`], and for a flow that stopped at its approval: its journaled
    /// rawTx re-verified and signed as the original flow would have (see the module
    /// doc), `approver` asked after every check passed. For a signed flow `approver`
    /// is never called.
    pub async fn resume_with_approval(
        &self,
        tx_id: &str,
        approver: &mut impl Approver,
        progress: &mut dyn Progress,
    ) -> Result<Resumed, Error> {
        let rec = self.take_up(tx_id).await?;
        if let Some(confirming) = self.still_confirming(&rec, progress).await? {
            return Ok(confirming);
        }
        match stage(&self.journal, &rec)? {
            Stage::Signed(signed_hex) => self.resend(&rec, &signed_hex, progress).await,
            Stage::AtApproval(raw_tx) => {
                self.sign_journaled(&rec, &raw_tx, approver, progress).await
            }
        }
    }

    /// Flow `tx_id` as a resume finds it: one that is over is looked at first (its facts
    /// checked, one call each), so that a reorganisation deeper than finality reopens it
    /// and its bytes are sent again.
    async fn take_up(&self, tx_id: &str) -> Result<FlowRecord, Error> {
        let rec = self.journal.get(tx_id)?;
        if matches!(
            rec.state,
            FlowState::Completed | FlowState::Cancelled | FlowState::Failed
        ) && !self.journal.facts(tx_id)?.is_empty()
        {
            self.status(tx_id).await?;
            return self.journal.get(tx_id);
        }
        Ok(rec)
    }

    /// A flow whose end was observed and is not final yet is only followed on: its
    /// transaction is mined, nothing is sent.
    async fn still_confirming(
        &self,
        rec: &FlowRecord,
        progress: &mut dyn Progress,
    ) -> Result<Option<Resumed>, Error> {
        if rec.state != FlowState::Confirming {
            return Ok(None);
        }
        let Some(hash) = rec.tx_hash.as_deref().and_then(|h| h.parse::<B256>().ok()) else {
            return Ok(None);
        };
        let submitted = Submitted {
            tx_id: rec.tx_id.clone(),
            tx_hash: hash,
            from: recorded_sender(rec)?,
            chain_id: rec.chain_id.unwrap_or_default(),
            nonce: rec.nonce.unwrap_or_default(),
            already_known: true,
        };
        Ok(Some(
            self.finish(rec.kind, submitted, false, progress).await?,
        ))
    }

    /// `err` of flow `tx_id`'s signing step, as [`Error::StoppedAtApproval`] when the
    /// flow can be taken up at its approval (so the caller learns which flow to resume).
    pub(super) fn stopped_at_approval(&self, tx_id: &str, err: Error) -> Error {
        let at_approval = self
            .journal
            .get(tx_id)
            .is_ok_and(|rec| matches!(stage(&self.journal, &rec), Ok(Stage::AtApproval(_))));
        if at_approval {
            Error::StoppedAtApproval {
                tx_id: tx_id.to_owned(),
                source: Box::new(err),
            }
        } else {
            err
        }
    }

    /// Takes a flow that stopped at its approval through the spine again.
    async fn sign_journaled(
        &self,
        rec: &FlowRecord,
        raw_tx: &Value,
        approver: &mut impl Approver,
        progress: &mut dyn Progress,
    ) -> Result<Resumed, Error> {
        let tx_id = rec.tx_id.as_str();
        let corrupt = |reason: String| corrupt(rec, reason);
        let from = recorded_sender(rec)?;
        // The journal's rawTx is a claim like the platform's answer was: parsed as
        // strictly, and verified below before anything is unlocked.
        let raw = RawTx::from_value(raw_tx)
            .map_err(|e| corrupt(format!("the journaled rawTx does not parse: {e}")))?;
        let call: JournaledCall = serde_json::from_value(rec.intent.clone())
            .map_err(|e| corrupt(format!("the journaled intent does not read: {e}")))?;
        let intent = match rec.kind {
            FlowKind::Redeem => {
                let amount = call
                    .inputs
                    .get("_amount")
                    .and_then(|a| a.parse::<U256>().ok())
                    .ok_or_else(|| corrupt("the redeem's _amount is missing".into()))?;
                self.redeem_call(from, amount)?.full_intent()
            }
            _ => ActionCall {
                action: call.action,
                from,
                inputs: call.inputs,
                intent: Intent {
                    caller_pinned: call.caller_pinned,
                    ..call.intent
                },
            }
            .full_intent(),
        };
        self.journal.note(
            tx_id,
            "resume",
            &json!({"fromState": rec.state.as_str(), "signed": false}),
        )?;
        progress.step("checking the journaled transaction again");
        let submitted = self
            .run_of(tx_id, from)
            .sign_and_submit(&raw, &intent, None, approver, progress)
            .await
            .map_err(|e| stale(tx_id, e))?;
        self.finish(rec.kind, submitted, true, progress).await
    }

    /// Resends a signed flow's bytes once they are checked against the journal's own
    /// record and the trust root.
    async fn resend(
        &self,
        rec: &FlowRecord,
        signed_hex: &str,
        progress: &mut dyn Progress,
    ) -> Result<Resumed, Error> {
        let submitted = self.resend_bytes(rec, signed_hex, progress).await?;
        self.finish(rec.kind, submitted, false, progress).await
    }

    /// The signed bytes of flow `tx_id` sent again (checked as [`Flows::resume`] checks
    /// them), without waiting for their result: a batch awaits all its items together.
    pub(crate) async fn resend_signed(
        &self,
        tx_id: &str,
        progress: &mut dyn Progress,
    ) -> Result<Submitted, Error> {
        let rec = self.journal.get(tx_id)?;
        match stage(&self.journal, &rec)? {
            Stage::Signed(signed_hex) => self.resend_bytes(&rec, &signed_hex, progress).await,
            Stage::AtApproval(_) => Err(Error::NeedsApproval {
                tx_id: tx_id.to_owned(),
            }),
        }
    }

    /// Checks the journal's signed bytes of `rec` against its own record and the trust
    /// root, and submits them.
    async fn resend_bytes(
        &self,
        rec: &FlowRecord,
        signed_hex: &str,
        progress: &mut dyn Progress,
    ) -> Result<Submitted, Error> {
        let tx_id = rec.tx_id.as_str();
        let corrupt = |reason: String| corrupt(rec, reason);
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
        let from = recorded_sender(rec)?;
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
        // A flow replaced at its nonce sends its newest signature: the call re-priced, or
        // its cancel; each is checked against what that purpose allows.
        let purpose = self
            .journal
            .signatures(tx_id)?
            .into_iter()
            .find(|s| s.tx_hash.parse::<B256>().ok() == Some(hash))
            .map_or(Purpose::Original, |s| s.purpose);
        let signed_price = decoded
            .gas_price
            .and_then(|p| u128::try_from(p).ok())
            .unwrap_or_default();
        if let Some(journaled) = &rec.raw_tx {
            let asked = RawTx::from_value(journaled)?;
            let expected = match purpose {
                Purpose::Original => asked,
                Purpose::Replacement => RawTx {
                    gas_price: signed_price,
                    ..asked
                },
                Purpose::Cancel => super::replace::cancel_tx(&asked, signed_price),
            };
            crate::airgap::check_signed_matches(&decoded, &expected)?;
        }
        let unsigned = self
            .check_signed(&decoded, None, purpose)
            .await?
            .raw_tx()
            .clone();
        self.journal.note(
            tx_id,
            "resume",
            &json!({"txHash": hash.to_string(), "fromState": rec.state.as_str()}),
        )?;
        progress.step(&format!("resending the signed transaction {hash}"));
        let signed = bridgectl_tx::SignedTx {
            raw: raw.into(),
            hash,
            from,
            chain_id: unsigned.chain_id,
            nonce: unsigned.nonce,
        };
        self.run_of(tx_id, from).submit(&signed, progress).await
    }

    /// Waits as the flow would have, for its observed end ([`Flows::follow`]): a redeem
    /// for its redemption, a swap for its ST credit, any other transaction for its
    /// receipt; a flow replaced at its nonce for whichever of its transactions is mined.
    async fn finish(
        &self,
        kind: FlowKind,
        submitted: Submitted,
        signed_now: bool,
        progress: &mut dyn Progress,
    ) -> Result<Resumed, Error> {
        let tx_id = submitted.tx_id.as_str();
        let followed = self.follow(tx_id, progress).await?;
        Ok(Resumed {
            kind,
            submitted,
            redemption: followed.redemption.clone(),
            signed_now,
            ended: followed.ended.clone(),
            followed: Some(followed),
        })
    }
}

/// Where `rec` can be taken up, or why it cannot.
fn stage(journal: &Journal, rec: &FlowRecord) -> Result<Stage, Error> {
    let tx_id = &rec.tx_id;
    if matches!(rec.state, FlowState::Completed | FlowState::Cancelled) {
        return Err(Error::AlreadyCompleted {
            tx_id: tx_id.clone(),
            state: rec.state.as_str(),
            tx_hash: rec.tx_hash.clone(),
        });
    }
    let not = |why: String| Error::NothingToResume {
        tx_id: tx_id.clone(),
        state: rec.state.as_str(),
        why,
    };
    if rec.state == FlowState::Retired {
        return Err(not(
            "its chain was reset after it was journaled and its flows retired: what it signed belongs to the old chain and is never sent again; run the \
             command again"
                .into(),
        ));
    }
    if let Some(signed_hex) = &rec.signed_tx {
        return Ok(Stage::Signed(signed_hex.clone()));
    }
    let Some(raw_tx) = &rec.raw_tx else {
        return Err(not(
            "it ended before the platform returned a transaction to sign; nothing was \
             sent: run the command again"
                .into(),
        ));
    };
    if !rec.kind.resumes_at_approval() {
        return Err(not(format!(
            "its transaction was built here for a {} and never signed; nothing was \
             sent: run the command again (it builds one with a fresh nonce and gas price)",
            rec.kind
        )));
    }
    let steps = journal.steps(tx_id)?;
    if steps.iter().any(|s| s.step == "sign-request") {
        return Err(not(
            "it wrote a sign request for the offline signer: sign that offline and send \
             the signed bundle"
                .into(),
        ));
    }
    let last = steps.last().map_or("none", |s| s.step.as_str());
    match rec.state {
        // Stopped at the prompt (declined, every attempt wrong: the flow stays verified;
        // a journal of an earlier version marked it failed), or the process ended there.
        FlowState::Failed if last == NOT_APPROVED => Ok(Stage::AtApproval(raw_tx.clone())),
        FlowState::Executed | FlowState::Verified => Ok(Stage::AtApproval(raw_tx.clone())),
        _ => Err(not(format!(
            "it ended at step `{last}` before anything was signed; nothing was sent: \
             its journal steps say why; then run the command again"
        ))),
    }
}

/// Whether `bridgectl resume` (or [`Flows::resume_with_approval`]) can take flow `rec`
/// up: it signed and is not completed, or it stopped at its approval with its
/// transaction journaled. A flow for which this is `false` and that failed is over.
pub fn can_resume(journal: &Journal, rec: &FlowRecord) -> bool {
    stage(journal, rec).is_ok()
}

/// The journal's record of `rec` contradicts itself, for `reason`.
fn corrupt(rec: &FlowRecord, reason: String) -> Error {
    Error::JournalCorrupt {
        tx_id: rec.tx_id.clone(),
        reason,
    }
}

/// The sender the journal recorded for `rec`.
pub(super) fn recorded_sender(rec: &FlowRecord) -> Result<Address, Error> {
    rec.from
        .as_deref()
        .and_then(|f| f.parse().ok())
        .ok_or_else(|| corrupt(rec, "no sender recorded".into()))
}

/// A nonce refusal of a resumed transaction is [`Error::Stale`]: the chain moved on
/// since it was returned, and only a new one can be signed.
fn stale(tx_id: &str, err: Error) -> Error {
    match err {
        Error::Tx(
            source @ bridgectl_tx::Error::Policy {
                field: bridgectl_tx::Field::Nonce,
                ..
            },
        ) => Error::Stale {
            tx_id: tx_id.to_owned(),
            source,
        },
        other => other,
    }
}
