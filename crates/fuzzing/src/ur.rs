//! The QR frames' UR decoder (`bridgectl-qr`): what the CLI's QR reader takes from images or
//! text, from the other side of the air gap.

use bridgectl_qr::{Assembler, Payload};

/// Input: UR texts, one a line, as a reader sees frames (any order, duplicates, frames
/// of other messages, damage). Properties: no line panics the assembler, whatever it
/// accepts is bounded; a completed message is within `bridgectl_qr::MAX_MESSAGE`,
/// its payload (when it reads) writes back to CBOR that reads to the same payload, and
/// its own frames rebuild it; an `eth-sign-request` that gives a transaction gives the
/// one its sign data encodes; an `eth-signature`'s r, s, v are its bytes.
pub fn ur_frames(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut assembler = Assembler::new();
    for line in text.lines() {
        let _ = assembler.receive(line);
        let p = assembler.progress();
        assert!(p.solved <= p.needed, "{p:?}");
        assert!(p.needed <= bridgectl_qr::MAX_FRAGMENTS);
        if assembler.is_complete() {
            break;
        }
    }
    let Ok(ur) = assembler.finish() else {
        return;
    };
    assert!(ur.cbor.len() <= bridgectl_qr::MAX_MESSAGE);
    // Its own frames rebuild it, read backwards.
    if !ur.cbor.is_empty() {
        let frames = bridgectl_qr::frames(&ur).expect("a bounded message has frames");
        let mut again = Assembler::new();
        for f in frames.iter().rev() {
            again.receive(f).expect("its own frame reads");
        }
        assert_eq!(again.finish().expect("its own frames complete it"), ur);
    }
    let Ok(payload) = Payload::from_ur(&ur) else {
        return;
    };
    let written = payload.to_ur();
    assert_eq!(written.ur_type, ur.ur_type);
    assert_eq!(
        Payload::from_ur(&written).expect("what it writes reads back"),
        payload
    );
    match &payload {
        Payload::EthSignRequest(request) => {
            if let Ok(input) = request.sign_input(&ur.cbor) {
                assert_eq!(
                    bridgectl_tx::preimage::encode(&input.raw_tx),
                    request.sign_data,
                    "the transaction is exactly its sign data"
                );
                assert_eq!(Some(input.raw_tx.from), request.address);
                assert_eq!(input.raw_tx.chain_id, request.chain_id);
            }
        }
        Payload::EthSignature(sig) => {
            let (r, s, v) = sig.rsv();
            assert_eq!(r.to_be_bytes::<32>(), sig.signature[..32]);
            assert_eq!(s.to_be_bytes::<32>(), sig.signature[32..64]);
            assert!(v < 1u128 << (8 * (sig.signature.len() - 64)));
        }
        _ => {}
    }
}
