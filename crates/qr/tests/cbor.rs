//! The EIP-4527 and bridgectl-doc CBOR: a request built by Keystone's reference library
//! (`@keystonehq/bc-ur-registry-eth`, the EIP's reference implementation) reads here
//! field for field, what this crate writes reads back, and every shape the formats do
//! not allow is refused naming the field.

use bridgectl_qr::{Doc, DocKind, EthSignRequest, EthSignature, Payload, Ur, UrType};

/// The EIP-155 example as `EthSignRequest.constructETHRequest(rlp, 1,
/// "m/44'/60'/0'/0/0", "12345678", "9b1deb4d-…", 1, address, "interop test")
/// .toCBOR()` writes it (tests/interop/ur.mjs, @keystonehq/bc-ur-registry-eth 0.22.1).
const KEYSTONE: &str = "a701d825509b1deb4d3b7d4bad9bdd2b0d7b3dcb6d02582dec098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a7640000800180800301040105d90130a2018a182cf5183cf500f500f400f4021a12345678\
    06549d8a62f656a8d1615c1294fd71e9cfb3e4855a4f076c696e7465726f702074657374";

fn keystone() -> Vec<u8> {
    hex::decode(KEYSTONE).expect("hex")
}

#[test]
fn a_keystone_request_reads_field_for_field_and_gives_its_transaction() {
    let cbor = keystone();
    let req = EthSignRequest::from_cbor(&cbor).expect("reads");
    assert_eq!(
        bridgectl_qr::uuid_text(req.request_id.expect("id")),
        "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d"
    );
    assert_eq!(req.data_type, 1);
    assert_eq!(req.chain_id, 1);
    assert_eq!(req.derivation_path.display(), "m/44'/60'/0'/0/0");
    assert_eq!(req.derivation_path.source_fingerprint, Some(0x1234_5678));
    assert_eq!(req.origin.as_deref(), Some("interop test"));
    // It writes back to the very bytes (same key order, same encodings).
    assert_eq!(req.to_cbor(), cbor);
    let input = req.sign_input(&cbor).expect("a transaction");
    assert_eq!(input.raw_tx.nonce, 9);
    assert_eq!(input.raw_tx.gas_price, 20_000_000_000);
    assert_eq!(
        input.raw_tx.from.to_string(),
        "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F"
    );
    assert_eq!(
        input.tx_id.as_deref(),
        Some("9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d")
    );
    assert_eq!(
        input.request_hash,
        bridgectl_tx::request::request_hash(&cbor)
    );
}

#[test]
fn what_bridgectl_writes_reads_back() {
    let req = EthSignRequest::from_cbor(&keystone()).expect("reads");
    let input = req.sign_input(&keystone()).expect("tx");
    let ours = EthSignRequest::legacy(&input.raw_tx, [9; 16], Some("bridgectl".into()));
    assert_eq!(ours.sign_data, req.sign_data);
    assert!(ours.derivation_path.components.is_empty());
    assert_eq!(
        EthSignRequest::from_cbor(&ours.to_cbor()).expect("reads"),
        ours
    );
    let signed = hex::decode("f86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83").expect("hex");
    let sig = EthSignature::for_signed([9; 16], &signed, None).expect("sig");
    assert_eq!(sig.signature.len(), 65);
    assert_eq!(sig.signature[64], 37);
    assert_eq!(EthSignature::from_cbor(&sig.to_cbor()).expect("reads"), sig);
    let (r, s, v) = sig.rsv();
    let again = bridgectl_tx::preimage::with_signature(&input.raw_tx, r, s, v).expect("rebuilt");
    assert_eq!(again.raw.to_vec(), signed);
    let doc = Doc {
        kind: DocKind::SignedBundle,
        bytes: b"{}".to_vec(),
    };
    assert_eq!(
        Payload::from_ur(&doc.to_ur()).expect("doc"),
        Payload::Doc(doc)
    );
}

/// `KEYSTONE` with its hex edited: `from` -> `to` once.
fn edited(from: &str, to: &str) -> Vec<u8> {
    assert!(KEYSTONE.contains(from), "{from}");
    hex::decode(KEYSTONE.replacen(from, to, 1)).expect("hex")
}

#[test]
fn shapes_the_formats_do_not_allow_are_refused_naming_the_field() {
    let mut trailing = keystone();
    trailing.push(0);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        // key 7 (origin) becomes a second key 1
        (edited("076c", "016c"), "key 1 given twice"),
        (edited("076c", "086c"), "unknown key 8"),
        (edited("a701", "bf01"), "indefinite-length map"),
        (edited("a701", "a801"), "more than its 7 keys"),
        (trailing, "1 byte(s) after the document"),
        (
            edited("01d82550", "01d82650"),
            "request-id: tag 38, expected 37",
        ),
        (edited("0301", "0305"), "data-type 5"),
        (edited("05d90130", "05d90131"), "derivation-path: tag 305"),
        (edited("0654", "0653"), "address"),
        (edited("a2018a", "a2048a"), "derivation-path: unknown key 4"),
    ];
    for (cbor, want) in cases {
        let e = EthSignRequest::from_cbor(&cbor)
            .map(|_| ())
            .expect_err(want)
            .to_string();
        assert!(e.contains(want), "{e:?} lacks {want:?}");
        assert!(e.starts_with("eth-sign-request: "), "{e}");
    }
    // A request of another data type, or without an address, gives no transaction.
    let mut message = EthSignRequest::from_cbor(&keystone()).expect("reads");
    message.data_type = 2;
    let e = message
        .sign_input(&keystone())
        .expect_err("typed data")
        .to_string();
    assert!(e.contains("EIP-712 typed data"), "{e}");
    let mut anonymous = EthSignRequest::from_cbor(&keystone()).expect("reads");
    anonymous.address = None;
    let e = anonymous
        .sign_input(&keystone())
        .expect_err("no address")
        .to_string();
    assert!(e.contains("finds the signing key by address"), "{e}");
    // An eth-signature names its request; a signature is r || s || v.
    let no_id = hex::decode(format!("a10241{}", "00")).expect("hex");
    let e = EthSignature::from_cbor(&no_id)
        .expect_err("short")
        .to_string();
    assert!(e.contains("signature: 1 bytes"), "{e}");
    let sig = EthSignature {
        request_id: [1; 16],
        signature: vec![1; 65],
        origin: None,
    };
    let cbor = sig.to_cbor();
    let e = EthSignature::from_cbor(&cbor[..cbor.len() - 1])
        .expect_err("cut")
        .to_string();
    assert!(e.starts_with("eth-signature: signature"), "{e}");
    let doc = Ur {
        ur_type: UrType::BridgectlDoc,
        cbor: hex::decode("a201656261746368024100").expect("hex"),
    };
    let e = Payload::from_ur(&doc).expect_err("kind").to_string();
    assert!(
        e.contains(
            "kind batch is not one this bridgectl reads (sign-request, signed-bundle, \
             batch-request, signed-batch)"
        ),
        "{e}"
    );
}
