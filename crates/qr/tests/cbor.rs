//! The EIP-4527 and bridgectl-doc CBOR: a request built by Keystone's reference library
//! (`@keystonehq/bc-ur-registry-eth`, the EIP's reference implementation) reads here
//! field for field, what this crate writes reads back, and every shape the formats do
//! not allow is refused naming the field.

use bridgectl_qr::{
    Assembler, Doc, DocKind, EthSignRequest, EthSignature, MAX_DOCUMENT, Payload, Ur, UrType,
};

#[path = "support/batch.rs"]
mod batch;

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

/// A bridgectl-doc's CBOR with the document under `key` (2 as it is, 3 compressed).
fn doc_cbor(kind: &str, key: u8, bytes: &[u8], trailing: &[u8]) -> Vec<u8> {
    let mut cbor = Vec::new();
    let mut e = minicbor::Encoder::new(&mut cbor);
    e.map(2)
        .and_then(|e| e.u8(1))
        .and_then(|e| e.str(kind))
        .and_then(|e| e.u8(key))
        .and_then(|e| e.bytes(&[bytes, trailing].concat()))
        .expect("cbor");
    cbor
}

/// Reads `ur` back from its frames, the first and every seventh lost, last first.
fn through_frames(ur: &Ur) -> (usize, Ur) {
    let frames = bridgectl_qr::frames(ur).expect("frames");
    let mut a = Assembler::new();
    for (i, f) in frames.iter().enumerate().rev() {
        if i % 7 != 0 {
            a.receive(f).expect("frame");
        }
    }
    (frames.len(), a.finish().expect("complete"))
}

#[test]
fn a_batch_of_a_hundred_redeems_crosses_in_at_most_a_frame_a_redeem_byte_for_byte() {
    for (kind, bytes, most) in [
        (DocKind::BatchRequest, batch::request(100, 1), 100),
        // Signatures and hashes do not compress: about 1.5 parts a redeem.
        (DocKind::SignedBatch, batch::signed(100, 2), 300),
    ] {
        let doc = Doc { kind, bytes };
        let ur = doc.to_ur();
        let plain = doc_cbor(kind.name(), 2, &doc.bytes, &[]);
        let before = Ur {
            ur_type: UrType::BridgectlDoc,
            cbor: plain.clone(),
        };
        let before = bridgectl_qr::frames(&before).expect("frames").len();
        let (after, read) = through_frames(&ur);
        assert!(after <= most, "{kind}: {before} frames -> {after}");
        // The set written as files, any two of which may be lost, is smaller still.
        let files = bridgectl_qr::frame_set(&ur).expect("frames").len();
        assert!(files <= after, "{kind}: {files} files");
        assert!(before > 800, "{kind}: {before} frames uncompressed");
        assert_eq!(
            Payload::from_ur(&read).expect("doc"),
            Payload::Doc(doc.clone())
        );
        // The form as it is (key 2) still reads.
        let plain = Ur {
            ur_type: UrType::BridgectlDoc,
            cbor: plain,
        };
        assert_eq!(Payload::from_ur(&plain).expect("doc"), Payload::Doc(doc));
    }
    // The single documents are written as they are, as every reader so far reads them.
    let small = Doc {
        kind: DocKind::SignRequest,
        bytes: b"{}".to_vec(),
    };
    assert_eq!(small.to_cbor(), doc_cbor("sign-request", 2, b"{}", &[]));
}

#[test]
fn a_compressed_document_that_expands_too_far_or_is_not_whole_is_refused() {
    let deflate = |b: &[u8]| miniz_oxide::deflate::compress_to_vec(b, 10);
    let bomb = deflate(&vec![b' '; MAX_DOCUMENT + 1]);
    assert!(bomb.len() < 2048, "{} bytes", bomb.len());
    let fits = deflate(&vec![b' '; MAX_DOCUMENT]);
    let json = deflate(br#"{"format": "bridgectl-batch-request"}"#);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            doc_cbor("batch-request", 3, &bomb, &[]),
            "expands past 1048576 bytes",
        ),
        (
            doc_cbor("batch-request", 3, &json[..json.len() - 2], &[]),
            "not a whole DEFLATE stream",
        ),
        (
            doc_cbor("batch-request", 3, &json, &[0]),
            "1 byte(s) after the end of its DEFLATE stream",
        ),
        (
            hex::decode("a3016d62617463682d72657175657374024100034100").expect("hex"),
            "one or the other",
        ),
        (
            hex::decode("a1016d62617463682d72657175657374").expect("hex"),
            "missing document (key 2 or 3)",
        ),
    ];
    for (cbor, want) in cases {
        let e = Doc::from_cbor(&cbor).expect_err(want).to_string();
        assert!(e.starts_with("bridgectl-doc: "), "{e}");
        assert!(e.contains(want), "{e:?} lacks {want:?}");
    }
    let doc = Doc::from_cbor(&doc_cbor("signed-batch", 3, &fits, &[])).expect("at the bound");
    assert_eq!(doc.bytes.len(), MAX_DOCUMENT);
}
