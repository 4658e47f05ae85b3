//! Managed-account transfers: the platform signs (operation 2) the transaction built
//! here, the signature is checked to be exactly that transaction, then it is submitted
//! (operation 3). No key is unlocked here, but the caps are ours all the same: the
//! nonce and gas may have come from the platform.

use super::{Flows, Progress, Submitted, TransferSpec, transfer_intent};
use crate::Error;
use crate::journal::FlowKind;

impl Flows {
    /// A managed-account transfer of `spec`, waited for like [`Flows::transfer`].
    pub async fn managed_transfer(
        &self,
        spec: &TransferSpec,
        progress: &mut dyn Progress,
    ) -> Result<Submitted, Error> {
        let (which, from) = (spec.token, spec.from);
        let side = self.side(which)?;
        let intent = transfer_intent(
            side,
            spec.to,
            spec.amount,
            &format!("managed transfer of {} to {}", side.symbol, spec.to),
        );
        let (run, raw) = self
            .start_transfer(FlowKind::ManagedTransfer, spec, None)
            .await?;
        run.verify(&raw, &intent, None).await?;
        let raw_json = serde_json::to_value(&raw).unwrap_or_default();
        progress.step("asking the platform to sign for the managed account");
        let signed_bytes = self
            .client
            .sign_managed(from, &raw_json)
            .await
            .inspect_err(|e| run.fail("sign-failed", e))?;
        let signed = bridgectl_tx::decode::decode_signed(&signed_bytes)
            .map_err(Error::Tx)
            .and_then(|decoded| {
                crate::airgap::check_signed_matches(&decoded, &raw)?;
                Ok(bridgectl_tx::SignedTx {
                    raw: signed_bytes.into(),
                    hash: decoded.hash,
                    from,
                    chain_id: raw.chain_id,
                    nonce: raw.nonce,
                })
            })
            .inspect_err(|e| run.fail("refused", e))?;
        self.journal.record_signed(run.tx_id(), &signed)?;
        bridgectl_local::failpoint::hit("journaled-not-sent");
        let submitted = run.submit(&signed, progress).await?;
        self.await_inclusion(&submitted, progress).await?;
        Ok(submitted)
    }
}
