//! The offline signer's flow (`bridgectl sign`): no platform, no network. The input's
//! rawTx is verified against its intent and the offline profile's policy, with the nonce
//! checked against what the caller knows (`fixed`) and this machine's journal of
//! signatures; the nonce is reserved there; then the same spine as online: approve,
//! sign (signing log first), self-check, journal.

use alloy_primitives::Address;
use bridgectl_tx::request::SignInput;
use bridgectl_tx::{Nonce, NonceFacts, Policy, SignedTx, SigningLog};
use serde_json::json;

use super::Approver;
use super::run::{Records, sign_verified};
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
    /// not signed (an action's online half on this machine,
    /// which wrote the request) continues that flow, and must be
    /// the transaction it verified; any other txId starts a flow of its own.
    pub async fn sign(
        &self,
        job: &OfflineSigning<'_>,
        approver: &mut impl Approver,
    ) -> Result<SignedTx, Error> {
        if let Some((signed, _)) = self.signed_before(job)? {
            return Ok(signed);
        }
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
                None,
                self.signing_log,
                bridgectl_tx::signing_log::unix_now(),
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
            Records::Borrowed(self.journal, self.signing_log),
            // Offline there is no chain to hold the clock to: see the README.
            &crate::clock::SystemClock,
            super::Review {
                tx_id: &tx_id,
                verified: &verified,
                intent: &intent,
            },
            crate::journal::Purpose::Original,
            approver,
        )
        .await
    }

    /// This very transaction, signed on this machine before: the keystore's signing log
    /// has its signing hash at its key, chain and nonce, and this journal has the signed
    /// bytes (a run stopped after the journal and before its output, or the same request
    /// signed again). Returns those bytes and the flow that holds them, after checking
    /// they are exactly this transaction from this key and that the request and the
    /// profile still allow it; nothing is unlocked and nothing is signed. `None` when it
    /// was not signed here (a run stopped before the journal signs it again: the same
    /// bytes, recorded once).
    pub fn signed_before(
        &self,
        job: &OfflineSigning<'_>,
    ) -> Result<Option<(SignedTx, String)>, Error> {
        let entry =
            bridgectl_tx::signing_log::logged_signature(self.signing_log, &job.input.raw_tx)?;
        self.signed_before_as(job, entry)
    }

    /// [`OfflineSigner::signed_before`], with the signing log's entry of this very
    /// transaction already looked up (`entry`: none when the log has none).
    pub(super) fn signed_before_as(
        &self,
        job: &OfflineSigning<'_>,
        entry: Option<bridgectl_tx::signing_log::EntryBody>,
    ) -> Result<Option<(SignedTx, String)>, Error> {
        let tx = &job.input.raw_tx;
        let Some(entry) = entry else {
            return Ok(None);
        };
        let Some(flow) = self.journal.signed_with_hash(entry.tx_hash)? else {
            return Ok(None);
        };
        let corrupt = |reason: String| Error::JournalCorrupt {
            tx_id: flow.tx_id.clone(),
            reason,
        };
        let raw = flow
            .signed_tx
            .as_deref()
            .and_then(|h| hex::decode(h.trim_start_matches("0x")).ok())
            .ok_or_else(|| corrupt("its signed bytes are not hex".into()))?;
        let decoded = bridgectl_tx::decode::decode_signed(&raw)?;
        if decoded.hash != entry.tx_hash || decoded.sender != job.key {
            return Err(corrupt(format!(
                "its signed bytes are not transaction {} from {}",
                entry.tx_hash, job.key
            )));
        }
        crate::airgap::check_signed_matches(&decoded, tx)?;
        let context = bridgectl_tx::Context {
            signer: job.key,
            gas_price_quote: None,
            nonce: Nonce::AlreadySigned,
            spent: None,
        };
        bridgectl_tx::verify(tx, job.input.intent.as_ref(), self.policy, &context)?;
        self.journal.note(
            &flow.tx_id,
            "signed-before",
            &json!({"input": job.input_name, "requestHash": job.input.request_hash}),
        )?;
        let signed = SignedTx {
            raw: raw.into(),
            hash: decoded.hash,
            from: decoded.sender,
            chain_id: tx.chain_id,
            nonce: tx.nonce,
        };
        Ok(Some((signed, flow.tx_id)))
    }
}
