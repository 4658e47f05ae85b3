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
    if bundle.format != bridgectl_tx::local_signing::BUNDLE_FORMAT {
        return Err(Error::BundleMismatch(format!(
            "format is {:?}, expected {:?}",
            bundle.format,
            bridgectl_tx::local_signing::BUNDLE_FORMAT
        )));
    }
    if bundle.version != bridgectl_tx::local_signing::BUNDLE_VERSION {
        return Err(Error::BundleMismatch(format!(
            "version {} is not supported (this bridgectl reads {})",
            bundle.version,
            bridgectl_tx::local_signing::BUNDLE_VERSION
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

#[cfg(test)]
mod tests {
    use bridgectl_tx::request::{Intent, Origin};
    use bridgectl_tx::{RawTx, SignRequest};

    use super::*;

    const ID: &str = "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d";

    /// A sign request for the EIP-155 example, as the online half writes one.
    fn request() -> Vec<u8> {
        let raw = RawTx::from_value(&serde_json::json!({
            "from": "0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f",
            "to": "0x3535353535353535353535353535353535353535", "data": "0x",
            "nonce": "0x9", "gasLimit": "0x5208", "gasPrice": "0x4a817c800", "chainId": 1,
            "value": "0xde0b6b3a7640000"
        }))
        .expect("rawTx");
        let origin = Origin {
            tx_id: Some(ID.into()),
            ..Origin::default()
        };
        serde_json::to_vec_pretty(&SignRequest::new(raw, Intent::default(), origin)).expect("json")
    }

    #[test]
    fn a_signature_is_checked_as_the_bundle_of_its_request() {
        let r: U256 = "0x28ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276"
            .parse()
            .expect("r");
        let s: U256 = "0x67cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83"
            .parse()
            .expect("s");
        let req = request();
        let checked = check_signature(&req, &ID.to_uppercase(), r, s, 37).expect("checked");
        assert_eq!(
            checked.bundle.tx_hash.to_string(),
            "0x33469b22e9f636356c4160a87eb19df52b7412e8eac32a4a55ffe88ea8350788"
        );
        assert_eq!(checked.bundle.request_hash, request_hash(&req));
        assert_eq!(checked.bundle.tx_id.as_deref(), Some(ID));
        // The same bundle passes the bundle check against the same request.
        let bundle = serde_json::to_vec(&checked.bundle).expect("json");
        check_bundle(&bundle, Some(&req)).expect("a bundle of its request");

        let other = "00000000-3b7d-4bad-9bdd-2b0d7b3dcb6d";
        let e = check_signature(&req, other, r, s, 37).expect_err("another request");
        assert!(e.to_string().contains("requestId"), "{e}");
        // The other parity recovers to another key: not this request's sender.
        let e = check_signature(&req, ID, r, s, 38).expect_err("another signer");
        assert!(e.to_string().contains("from"), "{e}");
    }
}
