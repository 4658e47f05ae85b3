//! What signs: any signer that can make a legacy EIP-155 transaction for its address and
//! an EIP-191 signature over a signing-log entry's hash, not only a key unlocked here.
//!
//! [`TransactionSigner`] is the one interface every path that signs goes through (the
//! flows, batches, resume, the offline signer, the signing log). A local key
//! ([`PrivateKeySigner`]) is one implementation; [`AlloySigner`] wraps any alloy signer
//! (Ledger, Trezor, AWS/GCP KMS, YubiHSM: whatever implements alloy's `TxSigner` and
//! `Signer`), and `bridgectl_flow::rpc::RpcSigner` asks a JSON-RPC signing endpoint
//! (Frame, clef, a node with unlocked accounts).
//!
//! A signer is trusted with nothing: [`sign_and_log_with`] decodes what it returns and
//! accepts only exactly the verified transaction, from the verified sender, with the
//! EIP-155 chain id (anything else is [`Error::SignerMismatch`], and nothing is logged
//! or returned), and accepts a log-entry signature only if it recovers to the key.

use std::future::Future;

use alloy_consensus::SignableTransaction;
/// The transaction a [`TransactionSigner`] is asked to sign (alloy's, re-exported so an
/// implementation needs no alloy dependency of its own).
pub use alloy_consensus::TxLegacy;
use alloy_primitives::{Address, B256, Bytes, Signature};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;

use crate::Error;
pub use crate::decode::{Difference, check_signed_by, first_difference};
use crate::rawtx::SignedTx;
use crate::rawtx::to_legacy;
use crate::signing_log::{GroupEntry, Head, SigningLog};
use crate::verify::Verified;

// Published here first.
#[doc(no_inline)]
pub use crate::local_signing::encode_signed;

/// A signer for one address (see the module doc).
pub trait TransactionSigner: Send + Sync {
    /// The address it signs for.
    fn address(&self) -> Address;

    /// The signed RLP bytes of `tx`, a legacy transaction whose `chain_id` is set
    /// (EIP-155). What comes back is decoded and must be exactly `tx`, from
    /// [`TransactionSigner::address`].
    fn sign_transaction(&self, tx: &TxLegacy) -> impl Future<Output = Result<Bytes, Error>> + Send;

    /// An EIP-191 `personal_sign` signature over the 32 bytes of `hash` (a signing-log
    /// entry's hash, [`crate::signing_log`]).
    fn sign_hash_message(
        &self,
        hash: B256,
    ) -> impl Future<Output = Result<Signature, Error>> + Send;

    /// The key itself, when it is a local key that signs at once: then the log entry is
    /// signed inside the log's lock ([`crate::sign_and_log`]), with no second round.
    fn local_key(&self) -> Option<&PrivateKeySigner> {
        None
    }
}

impl TransactionSigner for PrivateKeySigner {
    fn address(&self) -> Address {
        alloy_signer::Signer::address(self)
    }

    fn sign_transaction(&self, tx: &TxLegacy) -> impl Future<Output = Result<Bytes, Error>> + Send {
        let signed = self
            .sign_hash_sync(&tx.signature_hash())
            .map(|sig| encode_signed(tx, &sig))
            .map_err(Error::Signer);
        std::future::ready(signed)
    }

    fn sign_hash_message(
        &self,
        hash: B256,
    ) -> impl Future<Output = Result<Signature, Error>> + Send {
        std::future::ready(
            self.sign_message_sync(hash.as_slice())
                .map_err(Error::Signer),
        )
    }

    fn local_key(&self) -> Option<&PrivateKeySigner> {
        Some(self)
    }
}

/// Any alloy signer that signs transactions and messages (alloy's `TxSigner` and
/// `Signer`: hardware wallets, cloud KMS, HSMs), as a [`TransactionSigner`].
#[derive(Debug, Clone)]
pub struct AlloySigner<S>(pub S);

impl<S> TransactionSigner for AlloySigner<S>
where
    S: alloy_network::TxSigner<Signature> + alloy_signer::Signer + Send + Sync,
{
    fn address(&self) -> Address {
        alloy_signer::Signer::address(&self.0)
    }

    async fn sign_transaction(&self, tx: &TxLegacy) -> Result<Bytes, Error> {
        let mut tx = tx.clone();
        let sig = alloy_network::TxSigner::sign_transaction(&self.0, &mut tx)
            .await
            .map_err(Error::Signer)?;
        Ok(encode_signed(&tx, &sig))
    }

    async fn sign_hash_message(&self, hash: B256) -> Result<Signature, Error> {
        alloy_signer::Signer::sign_message(&self.0, hash.as_slice())
            .await
            .map_err(Error::Signer)
    }
}

/// How often a log entry is signed again when another signer appended first while the
/// signer signed it (each time is one more question on a hardware signer).
const LOG_ATTEMPTS: usize = 3;

/// Signs `verified` with `signer` and appends its signing-log entry (signed by `signer`
/// too) before the signed bytes are returned, as [`crate::sign_and_log`] does for a local
/// key, for any [`TransactionSigner`]. What the signer returns is checked first: exactly
/// the verified transaction, from its sender, with its EIP-155 chain id
/// ([`Error::SignerMismatch`] otherwise); the entry's signature must recover to the key.
/// The entry is signed outside the log's lock (a person may be asked on a device), then
/// appended only if the log has not moved meanwhile, else signed again.
pub async fn sign_and_log_with<S: TransactionSigner>(
    verified: &Verified,
    signer: &S,
    log: &dyn SigningLog,
    time: u64,
) -> Result<SignedTx, Error> {
    if let Some(key) = signer.local_key() {
        return crate::sign_and_log(verified, key, log, time);
    }
    let tx = verified.raw_tx();
    crate::local_signing::check_signable(verified, signer.address())?;
    let raw = signer.sign_transaction(&to_legacy(tx)).await?;
    let signed = check_signed_by(&raw, tx)?;
    let limit = verified.window_limit().map(|l| l.at(time));
    for _ in 0..LOG_ATTEMPTS {
        let head = log.head(signed.from)?;
        let mut entry =
            crate::local_signing::unsigned_entry(head.clone(), verified, &signed, time)?;
        let sig = signer.sign_hash_message(entry.hash).await?;
        if crate::recover::signer_of_message(&sig, entry.hash.as_slice()) != Some(signed.from) {
            return Err(Error::SignerMismatch(format!(
                "the signing-log entry's signature does not recover to {}",
                signed.from
            )));
        }
        entry.sig = sig.as_bytes().to_vec().into();
        let appended = log.append(signed.from, limit.as_ref(), &mut |now: Head| {
            if now == head {
                Ok(entry.clone())
            } else {
                Err(Error::LogMoved)
            }
        });
        match appended {
            Ok(_) => return Ok(signed),
            Err(Error::LogMoved) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(Error::LogMoved)
}

/// Signs each verified transaction of `items` with its signer and appends all their
/// signing-log entries as one group ([`SigningLog::append_group`]: one durable commit
/// for the lot where the store can) before any signed bytes are returned: a batch's
/// signatures at the price of one. Every check of [`sign_and_log_with`] holds for each
/// item: what a signer returns must be exactly its verified transaction from its
/// sender, each entry's signature must recover to its key, the nonce guard and the
/// windowed limits are checked inside the append (the group's earlier entries counted).
/// One failure fails the whole group, and nothing is logged or returned.
///
/// Local keys sign their entries inside the log's lock. Any other signer signs them
/// first, chained from the log's head as it is now; if another writer appended
/// meanwhile, they are signed again (at most a few times). An item whose very signature
/// the log holds already (made again after a crash: the same bytes) is not logged again.
pub async fn sign_and_log_group<S: TransactionSigner>(
    items: &[(&Verified, &S)],
    log: &dyn SigningLog,
    time: u64,
) -> Result<Vec<SignedTx>, Error> {
    let keys: Option<Vec<(&Verified, &PrivateKeySigner)>> = items
        .iter()
        .map(|(v, s)| s.local_key().map(|k| (*v, k)))
        .collect();
    if let Some(keys) = keys {
        return crate::local_signing::sign_and_log_keys(&keys, log, time);
    }
    let mut signed = Vec::with_capacity(items.len());
    for (verified, signer) in items {
        let tx = verified.raw_tx();
        crate::local_signing::check_signable(verified, signer.address())?;
        signed.push(check_signed_by(
            &signer.sign_transaction(&to_legacy(tx)).await?,
            tx,
        )?);
    }
    let limit = |v: &Verified| v.window_limit().map(|l| l.at(time));
    for _ in 0..LOG_ATTEMPTS {
        // The entries to sign now: those of signatures the log does not hold yet.
        let mut fresh = Vec::new();
        for (i, (verified, _)) in items.iter().enumerate() {
            if crate::signing_log::logged_signature(log, verified.raw_tx())?.is_none() {
                fresh.push(i);
            }
        }
        if fresh.is_empty() {
            return Ok(signed);
        }
        let mut heads: Vec<(Address, Head)> = Vec::new();
        for &i in &fresh {
            let key = signed[i].from;
            if !heads.iter().any(|(k, _)| *k == key) {
                heads.push((key, log.head(key)?));
            }
        }
        let checkpoint = heads[0].1.checkpoint;
        if heads.iter().any(|(_, h)| h.checkpoint != checkpoint) {
            // Another writer appended between two reads of the head.
            continue;
        }
        let mut at = checkpoint;
        let mut entries: Vec<(usize, Head, crate::signing_log::Entry)> =
            Vec::with_capacity(fresh.len());
        for &i in &fresh {
            let (verified, signer) = items[i];
            let key = signed[i].from;
            let own = heads
                .iter_mut()
                .find(|(k, _)| *k == key)
                .expect("every key's head was read");
            let head = Head {
                checkpoint: at,
                time: own.1.time,
                running: own.1.running.clone(),
            };
            let mut entry =
                crate::local_signing::unsigned_entry(head.clone(), verified, &signed[i], time)?;
            let sig = signer.sign_hash_message(entry.hash).await?;
            if crate::recover::signer_of_message(&sig, entry.hash.as_slice()) != Some(key) {
                return Err(Error::SignerMismatch(format!(
                    "the signing-log entry's signature does not recover to {key}"
                )));
            }
            entry.sig = sig.as_bytes().to_vec().into();
            at = crate::signing_log::Checkpoint {
                count: entry.seq,
                head: entry.hash,
            };
            own.1.time = time.max(head.time);
            // The key's next entry in the group carries this one's totals on.
            own.1.running = serde_json::from_str::<crate::signing_log::EntryBody>(&entry.body)
                .ok()
                .and_then(|b| b.running);
            entries.push((i, head, entry));
        }
        let mut group: Vec<GroupEntry<'_>> = entries
            .iter()
            .map(|(i, head, entry)| {
                let head = head.clone();
                GroupEntry {
                    key: signed[*i].from,
                    limit: limit(items[*i].0),
                    make: Box::new(move |now| {
                        if now == head {
                            Ok(entry.clone())
                        } else {
                            Err(Error::LogMoved)
                        }
                    }),
                }
            })
            .collect();
        let appended = log.append_group(&mut group);
        drop(group);
        match appended {
            Ok(_) => return Ok(signed),
            Err(Error::LogMoved) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(Error::LogMoved)
}
