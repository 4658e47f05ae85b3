//! The air gap: the online half writes a sign request, the offline half (`bridgectl
//! sign`) writes a signed bundle, and the online half checks the bundle against its
//! request before anything is submitted.
//!
//! What crosses the gap is a plain JSON file checked on both sides: the offline side
//! verifies the request's rawTx against its intent; this side verifies that the signed
//! bytes are exactly that rawTx, signed by its `from`, and that the bundle names the
//! request file it was made from (SHA-256 of its bytes).
//!
//! An EIP-4527 `eth-signature` (from QR codes) carries no transaction, only `r`, `s`,
//! `v` and the id of the request it answers: [`check_signature`] rebuilds the signed
//! transaction from the request file this side kept, and what comes out is checked as a
//! bundle would be.

use alloy_primitives::U256;
use bridgectl_tx::decode::DecodedTx;
use bridgectl_tx::request::{SignInput, request_hash};
use bridgectl_tx::{RawTx, SignedBundle};

use crate::Error;

/// Checks that `decoded` is exactly `raw` signed by `raw.from`: legacy, EIP-155, every
/// field equal. Used for bundles from the air gap and for managed signatures.
pub fn check_signed_matches(decoded: &DecodedTx, raw: &RawTx) -> Result<(), Error> {
    match bridgectl_tx::signer::first_difference(decoded, raw) {
        None => Ok(()),
        Some(d) => Err(Error::BundleMismatch(format!(
            "{}: the request says {}, the signed transaction has {}",
            d.field, d.expected, d.found
        ))),
    }
}

/// A bundle that passed [`check_bundle`]: what may be submitted.
#[derive(Debug, Clone)]
pub struct CheckedBundle {
    /// The bundle.
    pub bundle: SignedBundle,
    /// The decoded signed transaction.
    pub decoded: DecodedTx,
    /// The request it answers, when given.
    pub request: Option<SignInput>,
}

/// Parses a signed bundle and checks it: its hash is the hash of its bytes, its
/// recovered sender and fields are its own claims, and, when the request file's bytes
/// are given, that it was made from exactly that file and signs exactly its rawTx.
pub fn check_bundle(
    bundle_bytes: &[u8],
    request_bytes: Option<&[u8]>,
) -> Result<CheckedBundle, Error> {
    let bundle: SignedBundle =
        bridgectl_json::from_slice_to(bundle_bytes).map_err(Error::NotBundle)?;
    if bundle.format != bridgectl_tx::sign::BUNDLE_FORMAT {
        return Err(Error::BundleMismatch(format!(
            "format is {:?}, expected {:?}",
            bundle.format,
            bridgectl_tx::sign::BUNDLE_FORMAT
        )));
    }
    if bundle.version != bridgectl_tx::sign::BUNDLE_VERSION {
        return Err(Error::BundleMismatch(format!(
            "version {} is not supported (this bridgectl reads {})",
            bundle.version,
            bridgectl_tx::sign::BUNDLE_VERSION
        )));
    }
    let decoded = bridgectl_tx::decode::decode_signed(&bundle.signed_tx)?;
    let claims = [
        (
            "txHash",
            bundle.tx_hash.to_string(),
            decoded.hash.to_string(),
        ),
        ("from", bundle.from.to_string(), decoded.sender.to_string()),
        (
            "chainId",
            bundle.chain_id.to_string(),
            decoded.chain_id.map_or("none".into(), |c| c.to_string()),
        ),
        ("nonce", bundle.nonce.to_string(), decoded.nonce.to_string()),
        (
            "to",
            bundle.to.to_string(),
            decoded.to.map_or("none".into(), |t| t.to_string()),
        ),
    ];
    for (field, claimed, actual) in claims {
        if claimed != actual {
            return Err(Error::BundleMismatch(format!(
                "{field}: the bundle claims {claimed}, its signed transaction has {actual}"
            )));
        }
    }
    let request = match request_bytes {
        None => None,
        Some(bytes) => {
            let hash = request_hash(bytes);
            if hash != bundle.request_hash {
                return Err(Error::BundleMismatch(format!(
                    "requestHash: the bundle was made from input {}, this request file is {hash}",
                    bundle.request_hash
                )));
            }
            let input = SignInput::parse(bytes)?;
            check_signed_matches(&decoded, &input.raw_tx)?;
            if let (Some(want), Some(got)) = (&input.tx_id, &bundle.tx_id)
                && want != got
            {
                return Err(Error::BundleMismatch(format!(
                    "txId: the request has {want}, the bundle {got}"
                )));
            }
            Some(input)
        }
    };
    Ok(CheckedBundle {
        bundle,
        decoded,
        request,
    })
}

/// Checks an EIP-4527 signature against the sign request file it answers (`request_bytes`,
/// kept on this side): `request_id` must be the request's txId, and the request's rawTx
/// with `r`, `s`, `v` must be a valid EIP-155 transaction recovering to its `from`. The
/// result is the bundle `bridgectl sign` would have written for that request, checked
/// like one.
pub fn check_signature(
    request_bytes: &[u8],
    request_id: &str,
    r: U256,
    s: U256,
    v: u128,
) -> Result<CheckedBundle, Error> {
    let input = SignInput::parse(request_bytes)?;
    match input.tx_id.as_deref() {
        Some(id) if id.eq_ignore_ascii_case(request_id) => {}
        other => {
            return Err(Error::BundleMismatch(format!(
                "requestId: the signature answers request {request_id}, this request file is {}",
                other.unwrap_or("without a txId")
            )));
        }
    }
    let signed = bridgectl_tx::preimage::with_signature(&input.raw_tx, r, s, v)?;
    let decoded = bridgectl_tx::decode::decode_signed(&signed.raw)?;
    check_signed_matches(&decoded, &input.raw_tx)?;
    Ok(CheckedBundle {
        bundle: SignedBundle::new(&signed, &input),
        decoded,
        request: Some(input),
    })
}
