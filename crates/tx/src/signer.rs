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
        alloy_sign_transaction(&self.0, tx).await
    }

    async fn sign_hash_message(&self, hash: B256) -> Result<Signature, Error> {
        alloy_sign_message(&self.0, hash).await
    }
}

/// `tx` signed by an alloy `TxSigner`, encoded ([`AlloySigner`] and an `Arc<dyn ..>`
/// signer share it).
async fn alloy_sign_transaction<S>(signer: &S, tx: &TxLegacy) -> Result<Bytes, Error>
where
    S: alloy_network::TxSigner<Signature> + Sync + ?Sized,
{
    let mut tx = tx.clone();
    let sig = signer
        .sign_transaction(&mut tx)
        .await
        .map_err(Error::Signer)?;
    Ok(encode_signed(&tx, &sig))
}

/// The EIP-191 signature of an alloy `Signer` over `hash`'s 32 bytes.
async fn alloy_sign_message<S>(signer: &S, hash: B256) -> Result<Signature, Error>
where
    S: alloy_signer::Signer + Sync + ?Sized,
{
    signer
        .sign_message(hash.as_slice())
        .await
        .map_err(Error::Signer)
}

/// A wallet's alloy signer as alloy users hold one, `Arc<dyn FullSigner<Signature>>`
/// (alloy's dyn-compatible `TxSigner + Signer`: a Ledger, a KMS key, a local key chosen at
/// run time), signs as it is: no wrapper. (Alloy implements `Signer` for `Box<dyn ..>`
/// but not for `Arc<dyn ..>`, so [`AlloySigner`] cannot hold one.)
///
/// alloy's `EthereumWallet` holds `TxSigner`s only, and every signature here is logged
/// with a message signature of the same key (the signing-log entry): give the signer
/// you register in it instead, or the wallet's provider as a node.
impl TransactionSigner for std::sync::Arc<dyn alloy_network::FullSigner<Signature> + Send + Sync> {
    fn address(&self) -> Address {
        alloy_signer::Signer::address(&**self)
    }

    async fn sign_transaction(&self, tx: &TxLegacy) -> Result<Bytes, Error> {
        alloy_sign_transaction(&**self, tx).await
    }

    async fn sign_hash_message(&self, hash: B256) -> Result<Signature, Error> {
        alloy_sign_message(&**self, hash).await
    }
}

/// A future a [`BoxedSigner`] returns.
type SignFuture<'a, T> = std::pin::Pin<Box<dyn Future<Output = Result<T, Error>> + Send + 'a>>;

/// [`TransactionSigner`] with its futures boxed: what a [`BoxedSigner`] holds.
/// (Its methods are named apart from [`TransactionSigner`]'s, which every signer also
/// has, so a call never needs the trait spelled out.)
trait DynSigner: Send + Sync {
    fn dyn_address(&self) -> Address;
    fn dyn_sign_transaction<'a>(&'a self, tx: &'a TxLegacy) -> SignFuture<'a, Bytes>;
    fn dyn_sign_hash_message(&self, hash: B256) -> SignFuture<'_, Signature>;
    fn dyn_local_key(&self) -> Option<&PrivateKeySigner>;
}

impl<T: TransactionSigner> DynSigner for T {
    fn dyn_address(&self) -> Address {
        self.address()
    }

    fn dyn_sign_transaction<'a>(&'a self, tx: &'a TxLegacy) -> SignFuture<'a, Bytes> {
        Box::pin(self.sign_transaction(tx))
    }

    fn dyn_sign_hash_message(&self, hash: B256) -> SignFuture<'_, Signature> {
        Box::pin(self.sign_hash_message(hash))
    }

    fn dyn_local_key(&self) -> Option<&PrivateKeySigner> {
        self.local_key()
    }
}

/// Any [`TransactionSigner`] behind one type, chosen at run time: a local key for one
/// sender and a hardware signer for another in one batch (`Vec<BoxedSigner>`), an
/// approver whose `Signer` is not known until it asks. [`TransactionSigner`] itself
/// returns `impl Future` (no box on every signature), so it is not dyn-compatible; this
/// is its boxed form, one allocation per signature. Cheap to clone (shared); its `Debug`
/// shows the address only.
#[derive(Clone)]
pub struct BoxedSigner(std::sync::Arc<dyn DynSigner>);

impl BoxedSigner {
    /// `signer`, boxed.
    pub fn new(signer: impl TransactionSigner + 'static) -> BoxedSigner {
        BoxedSigner(std::sync::Arc::new(signer))
    }
}

impl std::fmt::Debug for BoxedSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("BoxedSigner")
            .field(&self.0.dyn_address())
            .finish()
    }
}

impl TransactionSigner for BoxedSigner {
    fn address(&self) -> Address {
        self.0.dyn_address()
    }

    async fn sign_transaction(&self, tx: &TxLegacy) -> Result<Bytes, Error> {
        self.0.dyn_sign_transaction(tx).await
    }

    async fn sign_hash_message(&self, hash: B256) -> Result<Signature, Error> {
        self.0.dyn_sign_hash_message(hash).await
    }

    fn local_key(&self) -> Option<&PrivateKeySigner> {
        self.0.dyn_local_key()
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::task::{Context, Poll, Waker};

    use alloy_primitives::{TxKind, U256};

    use super::*;

    /// The output of `f`, which a local key gives at once (no runtime needed).
    fn now<F: Future>(f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(out) => out,
            Poll::Pending => panic!("a local key signs at once"),
        }
    }

    fn tx() -> TxLegacy {
        TxLegacy {
            chain_id: Some(1337),
            nonce: 7,
            gas_price: 1_000_000_000,
            gas_limit: 60_000,
            to: TxKind::Call(Address::repeat_byte(0x57)),
            value: U256::ZERO,
            input: Bytes::from_static(&[1, 2, 3, 4]),
        }
    }

    /// A wallet holds its alloy signer as `Arc<dyn FullSigner<Signature>>`: it signs as
    /// the key itself does (RFC 6979: the same bytes), and its log-entry signature
    /// recovers to it. Signers of different types are one type as [`BoxedSigner`]s, in
    /// one list, each still itself.
    #[test]
    fn an_arc_dyn_alloy_signer_and_boxed_signers_sign_as_the_key_does() {
        let key = PrivateKeySigner::random();
        let by_key = now(TransactionSigner::sign_transaction(&key, &tx())).expect("signs");
        let held: Arc<dyn alloy_network::FullSigner<Signature> + Send + Sync> =
            Arc::new(key.clone());
        assert_eq!(TransactionSigner::address(&held), key.address());
        let by_arc = now(TransactionSigner::sign_transaction(&held, &tx())).expect("signs");
        assert_eq!(by_arc, by_key);
        let hash = B256::repeat_byte(9);
        let sig = now(held.sign_hash_message(hash)).expect("signs");
        assert_eq!(
            sig.recover_address_from_msg(hash.as_slice())
                .expect("recovers"),
            key.address()
        );

        let other = PrivateKeySigner::random();
        let signers = [
            BoxedSigner::new(held.clone()),
            BoxedSigner::new(AlloySigner(other.clone())),
            BoxedSigner::new(key.clone()),
        ];
        assert_eq!(
            now(signers[0].sign_transaction(&tx())).expect("signs"),
            by_key
        );
        assert_eq!(signers[1].address(), other.address());
        // A local key behind the box still signs its log entry inside the log's lock.
        assert!(signers[0].local_key().is_none() && signers[2].local_key().is_some());
        assert_eq!(
            format!("{:?}", signers[1]),
            format!("BoxedSigner({:?})", other.address())
        );
    }
}
