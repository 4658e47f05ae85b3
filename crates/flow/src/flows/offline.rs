//! The offline signer's flow (`bridgectl sign`): no platform, no network. The input's
//! rawTx is verified against its intent and the offline profile's policy, with the nonce
//! checked against what the caller knows (`fixed`) and this machine's journal of
//! signatures; the nonce is reserved there; then the same spine as online: approve,
//! sign (signing log first), self-check, journal.

use alloy_primitives::Address;
use bridgectl_tx::request::SignInput;
use bridgectl_tx::{Nonce, NonceFacts, Policy, SignedTx, SigningLog};
use serde_json::json;

use super::{Approver, sign_verified};
use crate::Error;
use crate::journal::{FlowKind, Journal};

/// What an offline signature is checked with and recorded in.
#[derive(Debug, Clone, Copy)]
pub struct OfflineSigner<'a> {
    /// This machine's journal of signatures: its nonce floor, and where each signature
    /// is recorded.
    pub journal: &'a Journal,
    /// The keystore's signing log: the spending limits' totals, and a record of every
    /// signature before its bytes leave.
    pub signing_log: &'a dyn SigningLog,
    /// The offline profile's policy: the trust root.
    pub policy: &'a Policy,
}

/// One signature to make.
#[derive(Debug, Clone, Copy)]
pub struct OfflineSigning<'a> {
    /// The parsed input (bare rawTx, action envelope or sign request).
    pub input: &'a SignInput,
    /// Where it came from, for the journal (a file name, `stdin`).
    pub input_name: &'a str,
    /// The address of the key that will sign (it must be `rawTx.from`).
    pub key: Address,
    /// The sender's next nonce as the caller knows it, if given.
    pub fixed_nonce: Option<u64>,
}

impl OfflineSigner<'_> {
    /// Verifies, reserves the nonce, asks `approver`, signs, journals. A request whose
    /// txId names a flow of this journal that verified a rawTx from this sender and has
    /// not signed (`action exec --out` on this machine) continues that flow, and must be
    /// the transaction it verified; any other txId starts a flow of its own.
    pub async fn sign(
        &self,
        job: &OfflineSigning<'_>,
        approver: &mut impl Approver,
    ) -> Result<SignedTx, Error> {
        let (input, tx) = (job.input, &job.input.raw_tx);
        let local_flow = input
            .tx_id
            .as_ref()
            .and_then(|id| self.journal.get(id).ok())
            .filter(|f| {
                f.raw_tx.is_some()
                    && f.signed_tx.is_none()
                    && f.from.as_deref() == Some(tx.from.to_string().as_str())
            });
        if let Some(f) = &local_flow {
            let verified_online =
                bridgectl_tx::RawTx::from_value(f.raw_tx.as_ref().expect("filtered"))?;
            if verified_online != *tx {
                return Err(Error::ChangedSinceVerified {
                    tx_id: f.tx_id.clone(),
                });
            }
        }
        let context = bridgectl_tx::Context {
            signer: job.key,
            gas_price_quote: None,
            nonce: Nonce::Next(NonceFacts {
                fixed: job.fixed_nonce,
                journal_next: self.journal.next_nonce(
                    job.key,
                    tx.chain_id,
                    local_flow.as_ref().map(|f| f.tx_id.as_str()),
                )?,
                ..NonceFacts::default()
            }),
            spent: bridgectl_tx::limits::read_spent(
                self.policy,
                tx,
                self.signing_log,
                bridgectl_tx::log::unix_now(),
            )?,
        };
        let verified = bridgectl_tx::verify(tx, input.intent.as_ref(), self.policy, &context)?;
        let tx_id = match &local_flow {
            Some(f) => {
                self.journal
                    .reserve_nonce(&f.tx_id, tx.from, tx.chain_id, tx.nonce)?;
                f.tx_id.clone()
            }
            None => {
                let tx_id = super::new_tx_id();
                self.journal.begin_reserved(
                    &tx_id,
                    FlowKind::Sign,
                    &json!({"input": job.input_name, "requestHash": input.request_hash,
                            "kind": input.kind, "intent": input.intent}),
                    tx,
                )?;
                tx_id
            }
        };
        let intent = input.intent.clone().unwrap_or_default();
        sign_verified(
            self.journal,
            self.signing_log,
            &tx_id,
            &verified,
            &intent,
            approver,
        )
        .await
    }
}
