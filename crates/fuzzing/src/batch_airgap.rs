//! The air gap's batch files: the batch request `batch prepare` writes and the offline
//! signer reads, and the signed batch it answers with, which `batch submit` reads.

use std::collections::HashSet;

use bridgectl_tx::batch::{BatchRequest, SignedBatch, sender_ranges};
use bridgectl_tx::request::request_hash;

/// Input: a batch request file.
///
/// Properties: reading never panics; an accepted request is named by the SHA-256 of the
/// bytes read; its items come in increasing index order with ids and txIds used once;
/// each sender's items have consecutive nonces in file order, and the senders it states
/// are exactly those its items have; written back, it reads as the same request, and
/// writing that again gives the same bytes.
pub fn batch_request(data: &[u8]) {
    let Ok(request) = BatchRequest::parse(data) else {
        return;
    };
    assert_eq!(request.request_hash, request_hash(data));
    assert!(!request.items.is_empty());
    let (mut ids, mut tx_ids) = (HashSet::new(), HashSet::new());
    for pair in request.items.windows(2) {
        assert!(pair[0].index < pair[1].index, "indexes out of order");
    }
    for item in &request.items {
        assert!(ids.insert(item.id.clone()), "id {:?} twice", item.id);
        assert!(tx_ids.insert(item.tx_id.to_ascii_lowercase()), "txId twice");
    }
    assert_eq!(
        sender_ranges(&request.items).expect("accepted"),
        request.senders
    );
    let written = request.to_bytes();
    let again = BatchRequest::parse(&written).expect("a written request reads back");
    assert_eq!(again.items, request.items);
    assert_eq!(again.senders, request.senders);
    assert_eq!(
        (&again.batch_id, &again.origin),
        (&request.batch_id, &request.origin)
    );
    assert_eq!(
        again.to_bytes(),
        written,
        "the same request, the same bytes"
    );
}

/// Input: a signed batch file.
///
/// Properties: reading never panics; an accepted file names each item once (signed or
/// refused), its signed items in increasing index order; per sender they sort by nonce;
/// written back it reads as the same signed batch, and writing that again gives the
/// same bytes.
pub fn signed_batch(data: &[u8]) {
    let Ok(signed) = SignedBatch::parse(data) else {
        return;
    };
    let mut seen = HashSet::new();
    for item in &signed.items {
        assert!(seen.insert(item.index), "item {} twice", item.index);
    }
    for r in &signed.refused {
        assert!(seen.insert(r.index), "item {} twice", r.index);
    }
    for pair in signed.items.windows(2) {
        assert!(pair[0].index < pair[1].index, "indexes out of order");
    }
    for lane in signed.by_sender().values() {
        for pair in lane.windows(2) {
            assert!(
                pair[0].nonce <= pair[1].nonce,
                "a sender's items out of nonce order"
            );
        }
    }
    let written = signed.to_bytes();
    let again = SignedBatch::parse(&written).expect("a written signed batch reads back");
    assert_eq!(again, signed);
    assert_eq!(again.to_bytes(), written);
}

#[cfg(test)]
mod tests {
    /// The committed inputs hold accepted files too, so the properties past the parse
    /// are exercised on stable, not only the refusals.
    #[test]
    fn the_seeds_hold_an_accepted_file_of_each_kind() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions");
        let accepted = |target: &str, parse: &dyn Fn(&[u8]) -> bool| {
            std::fs::read_dir(root.join(target))
                .expect("seeds")
                .filter(|e| parse(&std::fs::read(e.as_ref().expect("entry").path()).expect("read")))
                .count()
        };
        assert!(
            accepted("batch_request", &|b| {
                bridgectl_tx::batch::BatchRequest::parse(b).is_ok()
            }) >= 2
        );
        assert!(
            accepted("signed_batch", &|b| {
                bridgectl_tx::batch::SignedBatch::parse(b).is_ok()
            }) >= 1
        );
    }
}
