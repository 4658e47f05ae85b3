//! Transactions: the platform's rawTx JSON, signed-transaction decoding, sign requests
//! and signed bundles.

use alloy_eips::eip2718::{Decodable2718, Encodable2718};
use alloy_primitives::{B256, keccak256};
use alloy_signer_local::PrivateKeySigner;
use bridgectl_flow::airgap::{check_bundle, check_signed_matches};
use bridgectl_tx::decode::{decode_signed, parse_hex_bytes};
use bridgectl_tx::request::{InputKind, request_hash};
use bridgectl_tx::{RawTx, SignInput, SignRequest, SignedBundle, sign_legacy};

/// EIP-155's example key: a public test key, never a real one.
fn test_signer() -> PrivateKeySigner {
    PrivateKeySigner::from_bytes(&B256::repeat_byte(0x46)).expect("a valid test key")
}

/// Input: rawTx JSON text.
///
/// Properties: a parsed rawTx serialises to JSON that parses to the same rawTx; signed
/// (from the test key), it decodes to a legacy EIP-155 transaction that
/// [`check_signed_matches`] accepts, with the signer recovered.
pub fn rawtx_json(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(tx) = RawTx::from_json(text) else {
        return;
    };
    check_rawtx(tx);
}

fn check_rawtx(mut tx: RawTx) {
    let json = serde_json::to_string(&tx).expect("a rawTx serialises");
    let again = RawTx::from_json(&json).expect("a serialised rawTx parses");
    assert_eq!(again, tx, "rawTx JSON round trip: {json}");
    let signer = test_signer();
    tx.from = signer.address();
    // Pinned to itself: this checks signing and decoding, not the verifier's rules.
    let (policy, context) = bridgectl_tx::verify::exactly(&tx);
    let verified = bridgectl_tx::verify(&tx, None, &policy, &context).expect("pinned to itself");
    let signed = sign_legacy(&verified, &signer).expect("a parsed rawTx signs");
    let decoded = decode_signed(&signed.raw).expect("what we sign decodes");
    assert_eq!(decoded.hash, signed.hash);
    assert!(!decoded.is_pre_eip155());
    check_signed_matches(&decoded, &tx).expect("the signed bytes are the rawTx");
}

/// Input: a signed transaction, as bytes, or as `0x` hex text (what `tx decode` reads).
///
/// Properties: hex text decodes to the bytes it spells; a transaction that decodes is
/// canonical (re-encoding gives the same bytes), its hash is the hash of those bytes, and
/// a legacy EIP-155 one matches the rawTx its own fields describe.
pub fn tx_decode(data: &[u8]) {
    let bytes = if data.starts_with(b"0x") {
        let text = String::from_utf8_lossy(data);
        let Ok(bytes) = parse_hex_bytes(&text) else {
            return;
        };
        let digits = text.trim().trim_start_matches("0x").to_ascii_lowercase();
        assert_eq!(
            hex::encode(&bytes),
            digits,
            "hex text decoded to other bytes"
        );
        bytes
    } else {
        data.to_vec()
    };
    let Ok(decoded) = decode_signed(&bytes) else {
        return;
    };
    assert_eq!(decoded.hash, keccak256(&bytes));
    let mut buf = bytes.as_slice();
    // Legacy transactions with a gas price beyond 2^128 are decoded by bridgectl's own
    // canonical RLP reader; everything else must re-encode to the same bytes.
    if let Ok(envelope) = alloy_consensus::TxEnvelope::decode_2718(&mut buf) {
        assert_eq!(
            envelope.encoded_2718(),
            bytes,
            "a non-canonical encoding was accepted"
        );
    }
    let _ = decoded.validity_errors();
    if decoded.kind == "legacy"
        && let (Some(chain_id), Some(to), Some(gas_price)) =
            (decoded.chain_id, decoded.to, decoded.gas_price)
        && let Ok(gas_price) = u128::try_from(gas_price)
    {
        let raw = RawTx {
            from: decoded.sender,
            to,
            data: decoded.input.clone(),
            nonce: decoded.nonce,
            gas_limit: decoded.gas_limit,
            gas_price,
            chain_id,
            value: decoded.value,
        };
        check_signed_matches(&decoded, &raw).expect("a legacy tx matches its own fields");
    }
}

/// Input: what `bridgectl sign` reads (a bare rawTx, an action envelope or a sign
/// request).
///
/// Properties: the request hash is SHA-256 of the exact bytes; the rawTx round-trips
/// through JSON and signs as in [`rawtx_json`]; a sign request written back from what was
/// parsed reads back the same.
pub fn sign_input(data: &[u8]) {
    let Ok(input) = SignInput::parse(data) else {
        return;
    };
    assert_eq!(input.request_hash, request_hash(data));
    if input.kind == InputKind::SignRequest {
        let intent = input.intent.clone().expect("a sign request has an intent");
        let origin = input.origin.clone().expect("a sign request has an origin");
        // The verifier never panics on what the parser accepted.
        let context = bridgectl_tx::Context {
            signer: input.raw_tx.from,
            gas_price_quote: None,
            nonce: bridgectl_tx::Nonce::Next(bridgectl_tx::NonceFacts::default()),
            spent: None,
        };
        let _ = bridgectl_tx::verify(
            &input.raw_tx,
            Some(&intent),
            &bridgectl_tx::Policy::from(&intent),
            &context,
        );
        let request = SignRequest::new(input.raw_tx.clone(), intent, origin);
        let bytes = serde_json::to_vec(&request).expect("a sign request serialises");
        let again = SignInput::parse(&bytes).expect("a written sign request parses");
        assert_eq!(again.kind, InputKind::SignRequest);
        assert_eq!(again.raw_tx, input.raw_tx);
        assert_eq!(again.intent, input.intent);
        assert_eq!(again.origin, input.origin);
    }
    check_rawtx(input.raw_tx);
}

/// Input: a signed bundle, optionally followed by a NUL byte and the request file it
/// claims to answer (NUL never occurs in JSON text, so the split is unambiguous).
///
/// Properties: a bundle that passes [`check_bundle`] agrees with its own signed bytes
/// (hash, signer), round-trips through JSON, and with a request signs exactly its rawTx.
pub fn signed_bundle(data: &[u8]) {
    let (bundle, request) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], Some(&data[i + 1..])),
        None => (data, None),
    };
    let Ok(checked) = check_bundle(bundle, request) else {
        return;
    };
    assert_eq!(checked.decoded.hash, checked.bundle.tx_hash);
    assert_eq!(checked.decoded.sender, checked.bundle.from);
    assert_eq!(checked.decoded.hash, keccak256(&checked.bundle.signed_tx));
    let json = serde_json::to_vec(&checked.bundle).expect("a bundle serialises");
    let again: SignedBundle = serde_json::from_slice(&json).expect("a bundle parses back");
    assert_eq!(again, checked.bundle);
    if let Some(input) = &checked.request {
        check_signed_matches(&checked.decoded, &input.raw_tx).expect("checked before");
        assert_eq!(input.request_hash, checked.bundle.request_hash);
    }
}
