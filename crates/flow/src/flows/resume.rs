//! Resume: finishes an interrupted flow by resending the SAME signed bytes from the
//! journal (a node's "already known" is success), then waits for the result as the flow
//! would have. Never signs anything, never picks a new nonce.

use alloy_primitives::{Address, B256};
use bridgectl_tx::RawTx;
use serde::Serialize;
use serde_json::json;

use super::{Flows, Progress, Submitted};
use crate::Error;
use crate::client::Redemption;
use crate::journal::{FlowKind, FlowRecord, FlowState};

/// What [`Flows::resume`] did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resumed {
    /// What the flow was.
    pub kind: FlowKind,
    /// The resubmission.
    pub submitted: Submitted,
    /// For a redeem: the redemption record it ended with.
    pub redemption: Option<Redemption>,
}

impl Flows {
    /// Resends flow `tx_id`'s signed bytes after checking them against the journal's own
    /// record and the trust root, then waits as the flow would: a redeem for its
    /// redemption, any other flow is completed on acceptance.
    /// [`Error::AlreadyCompleted`] and [`Error::NothingToResume`] say why nothing was
    /// sent.
    pub async fn resume(&self, tx_id: &str, progress: &mut dyn Progress) -> Result<Resumed, Error> {
        let (rec, submitted) = self.resend(tx_id, progress).await?;
        let redemption = if rec.kind == FlowKind::Redeem {
            Some(
                self.wait_redemption(tx_id, submitted.tx_hash, progress)
                    .await?,
            )
        } else {
            self.complete(tx_id, &json!({"txHash": submitted.tx_hash}), true)?;
            None
        };
        Ok(Resumed {
            kind: rec.kind,
            submitted,
            redemption,
        })
    }

    /// The first half of [`Flows::resume`]: the journal's signed bytes of flow `tx_id`,
    /// checked, sent again. Returns the flow's record as it was and the submission.
    pub(crate) async fn resend(
        &self,
        tx_id: &str,
        progress: &mut dyn Progress,
    ) -> Result<(FlowRecord, Submitted), Error> {
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
        let signed = bridgectl_tx::SignedTx {
            raw: raw.into(),
            hash,
            from,
            chain_id: unsigned.chain_id,
            nonce: unsigned.nonce,
        };
        let submitted = self.submit_journaled(tx_id, &signed, progress).await?;
        Ok((rec, submitted))
    }
}
