//! The online half after the air gap: a signed bundle from `bridgectl sign` is checked
//! before anything is sent (its hash and recovered signer are its own claims; with the
//! request it answers, that it was made from exactly that file and signs exactly its
//! rawTx; with the flow that wrote the request, that it signs the rawTx verified then),
//! checked again by the one verifier, journaled, and only then submitted.

use alloy_primitives::B256;
use bridgectl_tx::request::Intent;
use bridgectl_tx::{SignedTx, Verified};
use serde::Serialize;
use serde_json::json;

use super::{Flows, Progress, Submitted};
use crate::Error;
use crate::airgap::CheckedBundle;
use crate::journal::FlowKind;

/// What a bundle was checked against, beyond its own claims and the trust root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BundleCheck {
    /// The rawTx the flow that wrote the sign request verified online.
    JournaledFlow,
    /// The sign request file it answers.
    Request,
    /// Nothing: sent as it is, by the caller's explicit choice.
    Unchecked,
}

/// A bundle that passed every check and is journaled under its flow: what
/// [`Flows::send_bundle`] sends.
#[derive(Debug)]
pub struct PreparedBundle {
    /// The flow's txId (the one `run_action` began, or a new `submit` flow).
    pub tx_id: String,
    /// What it was checked against.
    pub checked_against: BundleCheck,
    /// The verified transaction, for a summary.
    pub verified: Verified,
    signed: SignedTx,
}

impl Flows {
    /// Checks `bundle` (see [`crate::airgap::check_bundle`]) against the flow that wrote
    /// its request when this journal has it, else against its request, else (with
    /// `unchecked`) against nothing but the trust root; refuses a flow that already signed
    /// another transaction; reserves the nonce and journals the signed bytes. `origin`
    /// describes where the bundle came from, for the journal.
    pub async fn prepare_bundle(
        &self,
        bundle: CheckedBundle,
        unchecked: bool,
        origin: &str,
    ) -> Result<PreparedBundle, Error> {
        let b = &bundle.bundle;
        let existing = b.tx_id.as_deref().and_then(|id| self.journal.get(id).ok());
        let tx_id = match &existing {
            Some(rec) => rec.tx_id.clone(),
            None => self
                .start(
                    None,
                    FlowKind::Submit,
                    b.from,
                    &json!({"bundle": origin, "theirTxId": b.tx_id}),
                )?
                .tx_id()
                .to_owned(),
        };
        let checked = async {
            let checked_against = match (&existing, &bundle.request) {
                (Some(rec), _) if rec.raw_tx.is_some() => {
                    // A flow begun here holds the rawTx that was verified online: the
                    // bundle must sign exactly that, whatever the request file now says.
                    let journaled = rec.raw_tx.as_ref().expect("checked");
                    let raw = bridgectl_tx::RawTx::from_value(journaled)?;
                    crate::airgap::check_signed_matches(&bundle.decoded, &raw)?;
                    BundleCheck::JournaledFlow
                }
                (_, Some(_)) => BundleCheck::Request,
                (_, None) if unchecked => BundleCheck::Unchecked,
                (_, None) => return Err(Error::NothingToCheckAgainst),
            };
            // What was asked for: the request's intent, or the one the flow journaled.
            let intent: Option<Intent> = match (&bundle.request, &existing) {
                (Some(input), _) => input.intent.clone(),
                (None, Some(rec)) => match rec.intent.get("intent") {
                    None => None,
                    Some(i) => Some(serde_json::from_value(i.clone()).map_err(|e| {
                        Error::JournalCorrupt {
                            tx_id: tx_id.clone(),
                            reason: format!("the journaled intent does not read ({e})"),
                        }
                    })?),
                },
                (None, None) => None,
            };
            let verified = self
                .check_signed(
                    &bundle.decoded,
                    intent.as_ref(),
                    crate::journal::Purpose::Original,
                )
                .await?;
            Ok((checked_against, verified))
        }
        .await;
        let (checked_against, verified) =
            checked.inspect_err(|e| self.fail(&tx_id, "refused", e))?;
        if let Some(prev) = existing.as_ref().and_then(|r| r.tx_hash.as_ref())
            && prev.parse::<B256>().ok() != Some(b.tx_hash)
        {
            return Err(Error::AlreadySigned {
                tx_id,
                signed: prev.clone(),
                offered: b.tx_hash,
            });
        }
        self.journal
            .reserve_nonce(&tx_id, bundle.decoded.sender, b.chain_id, b.nonce)?;
        let signed = SignedTx {
            raw: b.signed_tx.clone(),
            hash: b.tx_hash,
            from: b.from,
            chain_id: b.chain_id,
            nonce: b.nonce,
        };
        self.journal.record_signed(&tx_id, &signed)?;
        Ok(PreparedBundle {
            tx_id,
            checked_against,
            verified,
            signed,
        })
    }

    /// Submits a prepared bundle (already in the journal).
    pub async fn send_bundle(
        &self,
        prepared: &PreparedBundle,
        progress: &mut dyn Progress,
    ) -> Result<Submitted, Error> {
        self.run_of(&prepared.tx_id, prepared.signed.from)
            .submit(&prepared.signed, progress)
            .await
    }
}
