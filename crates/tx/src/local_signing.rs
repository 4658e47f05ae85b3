//! Legacy EIP-155 signing: the only kind bridgectl makes.
//!
//! The preimage and the signed encoding both come from alloy-consensus `TxLegacy`
//! (no hand-written RLP); the signature from a synchronous local signer.

use alloy_consensus::transaction::RlpEcdsaEncodableTx;
use alloy_consensus::{SignableTransaction, TxLegacy};
use alloy_primitives::{Address, B256, Bytes, Signature, keccak256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::request::SignInput;
use crate::signing_log::{
    ENTRY_VERSION, Entry, EntryBody, GroupEntry, Head, Running, SigningLog, call_facts, seal,
    unsigned,
};
use crate::verify::Verified;

// Published here first.
#[doc(no_inline)]
pub use crate::rawtx::{signing_hash, to_legacy};

/// The `format` value of a signed bundle.
pub const BUNDLE_FORMAT: &str = "bridgectl-signed-bundle";
/// The signed-bundle version this crate writes.
pub const BUNDLE_VERSION: u64 = 1;

pub use crate::rawtx::SignedTx;

/// Signs a [`Verified`] transaction with `signer` as a legacy EIP-155 transaction,
/// without recording it. The flows and `bridgectl sign` sign through
/// [`crate::sign_and_log`], which calls this and appends the signing-log entry before
/// it returns the bytes; calling this directly is for tests, benchmarks and
/// cross-checks against other signers.
///
/// Only a [`Verified`] can be signed: a type, not a habit. Refuses when the key is not
/// the transaction's `from`, and when the transaction was verified as bytes signed
/// before (its nonce was not checked as the next one). The chain id is non-zero by
/// construction of [`RawTx`](crate::RawTx), and checked again here because a
/// pre-EIP-155 signature must never be made.
pub fn sign_legacy(verified: &Verified, signer: &PrivateKeySigner) -> Result<SignedTx, Error> {
    let tx = verified.raw_tx();
    let key = signer.address();
    check_signable(verified, key)?;
    let legacy = to_legacy(tx);
    let sig = signer
        .sign_hash_sync(&legacy.signature_hash())
        .map_err(Error::Signer)?;
    let raw = encode_signed(&legacy, &sig);
    let hash = keccak256(&raw);
    Ok(SignedTx {
        raw,
        hash,
        from: key,
        chain_id: tx.chain_id,
        nonce: tx.nonce,
    })
}

/// The signed RLP encoding of `tx` with `sig`.
pub fn encode_signed(tx: &TxLegacy, sig: &Signature) -> Bytes {
    let mut raw = Vec::with_capacity(tx.rlp_encoded_length_with_signature(sig));
    tx.rlp_encode_signed(sig, &mut raw);
    raw.into()
}

/// Whether `verified` may be signed by `key`: verified for signing (its nonce checked as
/// the next one, not as bytes signed before), a non-zero chain id (never a pre-EIP-155
/// signature), and `key` its sender.
pub(crate) fn check_signable(verified: &Verified, key: Address) -> Result<(), Error> {
    let tx = verified.raw_tx();
    if verified.nonce_source().is_none() {
        return Err(Error::Refused(
            "this transaction was verified as already signed (its nonce was not checked as \
             the next one): refusing to sign it again"
                .into(),
        ));
    }
    if tx.chain_id == 0 {
        return Err(Error::ZeroChainId);
    }
    if tx.from != key {
        return Err(Error::FromMismatch {
            tx_from: tx.from,
            key,
        });
    }
    Ok(())
}

/// Signs `verified` with `signer` and appends the entry to `log` before the signed bytes
/// are returned: if the log cannot be written, or the windowed limit the verifier
/// checked no longer holds once the append has the log to itself (another signer got
/// there first), nothing signed leaves this function. `time` is the entry's time (Unix
/// seconds, usually [`unix_now`](crate::signing_log::unix_now)).
pub fn sign_and_log(
    verified: &Verified,
    signer: &PrivateKeySigner,
    log: &dyn SigningLog,
    time: u64,
) -> Result<SignedTx, Error> {
    let signed = sign_legacy(verified, signer)?;
    // The decode self-check every signer's answer passes, a local key's too: the bytes
    // decode to exactly the verified transaction, from its sender, before the log
    // records them.
    crate::decode::check_signed_by(&signed.raw, verified.raw_tx())?;
    let limit = verified.window_limit().map(|l| l.at(time));
    log.append(signed.from, limit.as_ref(), &mut |head| {
        make_entry(head, verified, &signed, time, signer)
    })?;
    Ok(signed)
}

/// [`sign_and_log`] for many transactions with local keys: each signed and checked as
/// one, then all their entries appended as one group ([`SigningLog::append_group`]:
/// one durable commit where the store can), each entry signed by its key inside the
/// log's lock. Nothing signed is returned unless every entry is in the log; one refusal
/// (a nonce signed before, a limit the group crosses) refuses all. A transaction whose
/// very signature the log holds already gives the same bytes and is not logged again.
pub fn sign_and_log_keys(
    items: &[(&Verified, &PrivateKeySigner)],
    log: &dyn SigningLog,
    time: u64,
) -> Result<Vec<SignedTx>, Error> {
    let mut signed = Vec::with_capacity(items.len());
    for (verified, key) in items {
        let s = sign_legacy(verified, key)?;
        crate::decode::check_signed_by(&s.raw, verified.raw_tx())?;
        signed.push(s);
    }
    if items.is_empty() {
        return Ok(signed);
    }
    let mut group: Vec<GroupEntry<'_>> = items
        .iter()
        .zip(&signed)
        .map(|((verified, key), s)| {
            let (verified, key): (&Verified, &PrivateKeySigner) = (verified, key);
            GroupEntry {
                key: s.from,
                limit: verified.window_limit().map(|l| l.at(time)),
                make: Box::new(move |head| make_entry(head, verified, s, time, key)),
            }
        })
        .collect();
    log.append_group(&mut group)?;
    drop(group);
    Ok(signed)
}

/// Builds and signs the entry for `signed` after `head`, at `time` (or the head's time,
/// if later: entries never go back in time).
pub fn make_entry(
    head: Head,
    verified: &Verified,
    signed: &SignedTx,
    time: u64,
    signer: &PrivateKeySigner,
) -> Result<Entry, Error> {
    seal(&entry_body(head, verified, signed, time), signer)
}

/// The entry for `signed` after `head`, at `time` (or the head's time, if later), with
/// its body and hash and no signature yet: what a signer that is not a local key is
/// asked to sign ([`crate::signer::sign_and_log_with`]).
pub fn unsigned_entry(
    head: Head,
    verified: &Verified,
    signed: &SignedTx,
    time: u64,
) -> Result<Entry, Error> {
    unsigned(&entry_body(head, verified, signed, time))
}

/// The body of the entry for `signed` after `head`.
fn entry_body(head: Head, verified: &Verified, signed: &SignedTx, time: u64) -> EntryBody {
    let tx = verified.raw_tx();
    let facts = call_facts(&tx.data);
    let mut body = EntryBody {
        v: ENTRY_VERSION,
        seq: head.checkpoint.count + 1,
        prev: head.checkpoint.head,
        time: time.max(head.time),
        key: signed.from,
        chain_id: signed.chain_id,
        nonce: signed.nonce,
        to: tx.to,
        function: facts.function,
        args: facts.args,
        token: verified.token().map(|t| t.symbol.clone()),
        amount: facts.amount.filter(|a| !a.is_zero()),
        value: tx.value,
        tx_hash: signed.hash,
        signing_hash: Some(signing_hash(tx)),
        replaces: verified.replaces(),
        chain_reset: None,
        genesis: verified.genesis(),
        acknowledges: None,
        carried: Vec::new(),
        watermarks: Vec::new(),
        running: None,
    };
    body.running = Some(Running::after(head.running.as_ref(), &body));
    body
}

/// The output of `bridgectl sign`: the signed transaction plus what it was made from.
/// Schema in the crate README.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignedBundle {
    /// Always [`BUNDLE_FORMAT`].
    pub format: String,
    /// Always [`BUNDLE_VERSION`].
    pub version: u64,
    /// The signed transaction, `0x` hex: the platform's submit body is
    /// `{"signedTx": <this>}`.
    pub signed_tx: Bytes,
    /// Its hash.
    pub tx_hash: B256,
    /// The signer.
    pub from: Address,
    /// The callee.
    pub to: Address,
    /// The chain id.
    pub chain_id: u64,
    /// The nonce.
    pub nonce: u64,
    /// SHA-256 of the exact input bytes (`sha256sum` of the request file).
    pub request_hash: B256,
    /// The shape of the input (`raw-tx`, `envelope`, `sign-request`).
    pub request_kind: String,
    /// The transaction action's `txId`, when the input carried one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_id: Option<String>,
}

impl SignedBundle {
    /// The bundle for `signed`, made from `input`.
    pub fn new(signed: &SignedTx, input: &SignInput) -> Self {
        let kind = serde_json::to_value(input.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        Self {
            format: BUNDLE_FORMAT.into(),
            version: BUNDLE_VERSION,
            signed_tx: signed.raw.clone(),
            tx_hash: signed.hash,
            from: signed.from,
            to: input.raw_tx.to,
            chain_id: signed.chain_id,
            nonce: signed.nonce,
            request_hash: input.request_hash,
            request_kind: kind,
            tx_id: input.tx_id.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::U256;

    use crate::rawtx::RawTx;

    fn signer(hex_key: &str) -> PrivateKeySigner {
        hex_key.parse().expect("key")
    }

    /// `tx` verified against a policy that pins every field of it.
    fn pinned(tx: &RawTx) -> Verified {
        let (policy, context) = crate::verify::exactly(tx);
        crate::verify(tx, None, &policy, &context).expect("pinned")
    }

    /// EIP-155's own example (ethereum/EIPs `EIPS/eip-155.md`), pinned.
    #[test]
    fn eip155_example() {
        let key = signer("4646464646464646464646464646464646464646464646464646464646464646");
        let tx = RawTx {
            from: key.address(),
            to: "0x3535353535353535353535353535353535353535"
                .parse()
                .expect("to"),
            data: Bytes::new(),
            nonce: 9,
            gas_limit: 21000,
            gas_price: 20_000_000_000,
            chain_id: 1,
            value: U256::from(1_000_000_000_000_000_000u128),
        };
        let mut preimage = Vec::new();
        to_legacy(&tx).encode_for_signing(&mut preimage);
        assert_eq!(
            hex::encode(&preimage),
            "ec098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a764000080018080"
        );
        assert_eq!(
            signing_hash(&tx).to_string(),
            "0xdaf5a779ae972f972197303d7b574746c7ef83eadac0f2791ad23db92e4c8e53"
        );
        let s = sign_legacy(&pinned(&tx), &key).expect("sign");
        assert_eq!(
            s.raw.to_string(),
            "0xf86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83"
        );
        assert_eq!(
            s.hash.to_string(),
            "0x33469b22e9f636356c4160a87eb19df52b7412e8eac32a4a55ffe88ea8350788"
        );
        assert_eq!(
            s.from.to_checksum(None),
            "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F"
        );
        let d = crate::decode::decode_signed(&s.raw).expect("decode");
        assert_eq!(d.sender, s.from);
        assert_eq!(d.hash, s.hash);
    }

    /// The web3.js / alloy-signer-local `signs_tx` vector.
    #[test]
    fn second_legacy_vector() {
        let key = signer("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318");
        assert_eq!(
            key.address().to_checksum(None),
            "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23"
        );
        let tx = RawTx {
            from: key.address(),
            to: "0xF0109fC8DF283027b6285cc889F5aA624EaC1F55"
                .parse()
                .expect("to"),
            data: Bytes::new(),
            nonce: 0,
            gas_limit: 2_000_000,
            gas_price: 21_000_000_000,
            chain_id: 1,
            value: U256::from(1_000_000_000u64),
        };
        assert_eq!(
            signing_hash(&tx).to_string(),
            "0x88cfbd7e51c7a40540b233cf68b62ad1df3e92462f1c6018d6d67eae0f3b08f5"
        );
        let s = sign_legacy(&pinned(&tx), &key).expect("sign");
        assert_eq!(
            s.raw.to_string(),
            "0xf869808504e3b29200831e848094f0109fc8df283027b6285cc889f5aa624eac1f55843b9aca008025a0c9cf86333bcb065d140032ecaab5d9281bde80f21b9687b3e94161de42d51895a0727a108a0b8d101465414033c3f705a9c7b826e596766046ee1183dbc8aeaa68"
        );
        assert_eq!(
            s.hash.to_string(),
            "0xde8db924885b0803d2edc335f745b2b8750c8848744905684c20b987443a9593"
        );
    }

    #[test]
    fn refuses_other_from_and_zero_chain() {
        let key = signer("4646464646464646464646464646464646464646464646464646464646464646");
        let mut tx = RawTx {
            from: Address::repeat_byte(1),
            to: Address::repeat_byte(2),
            data: Bytes::new(),
            nonce: 0,
            gas_limit: 21000,
            gas_price: 1,
            chain_id: 1,
            value: U256::ZERO,
        };
        let e = sign_legacy(&pinned(&tx), &key)
            .expect_err("from")
            .to_string();
        assert!(e.contains("from mismatch"), "{e}");
        tx.from = key.address();
        tx.chain_id = 0;
        let (policy, context) = crate::verify::exactly(&tx);
        assert!(matches!(
            crate::verify(&tx, None, &policy, &context),
            Err(Error::ZeroChainId)
        ));
        tx.chain_id = 1;
        let (policy, mut context) = crate::verify::exactly(&tx);
        context.nonce = crate::verify::Nonce::AlreadySigned;
        let resent = crate::verify(&tx, None, &policy, &context).expect("verified as signed");
        let e = sign_legacy(&resent, &key).expect_err("never re-signed");
        assert!(e.to_string().contains("refusing to sign it again"), "{e}");
    }
}
