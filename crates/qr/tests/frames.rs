//! Any message, any fragment size: its frames, read in any order with losses a fountain
//! code makes up for, rebuild it exactly; and each frame's QR code reads back.

use bridgectl_qr::{Assembler, Ur, UrType};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn frames_rebuild_the_message(
        cbor in proptest::collection::vec(any::<u8>(), 1..3000),
        fragment in 10usize..300,
        skip in 0usize..4,
        rotate in 0usize..50,
    ) {
        let ur = Ur { ur_type: UrType::BridgectlDoc, cbor };
        let mut frames = ur.frames(fragment).expect("frames");
        let count = frames.part_count();
        // Every `skip + 2`-th frame lost, the rest read from a rotated start, for as
        // long as a reader would look (ten times the part count).
        let mut texts: Vec<String> = (0..10 * count + 10).map(|_| frames.next_frame()).collect();
        let len = texts.len();
        texts.rotate_left(rotate % len);
        let mut a = Assembler::new();
        for (i, t) in texts.iter().enumerate() {
            if count > 1 && i % (skip + 2) == 0 {
                continue;
            }
            a.receive(t).expect("a frame of the message");
            if a.is_complete() {
                break;
            }
        }
        prop_assert_eq!(a.finish().expect("complete"), ur);
    }
}

#[test]
fn every_frame_of_an_animation_reads_back_from_its_png() {
    let ur = Ur {
        ur_type: UrType::EthSignRequest,
        cbor: (0..700u32).map(|i| (i * 13) as u8).collect(),
    };
    let texts = bridgectl_qr::frames(&ur).expect("frames");
    let codes = bridgectl_qr::draw(&texts).expect("draw");
    let mut a = Assembler::new();
    for code in &codes {
        assert!(code.version() <= 10, "version {}", code.version());
        for text in bridgectl_qr::read(&code.png().expect("png"))
            .expect("read")
            .texts
        {
            a.receive(&text).expect("frame");
        }
    }
    assert_eq!(a.finish().expect("complete"), ur);
}

/// The lines of a fixture file.
fn fixture(name: &str) -> Vec<String> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn frames_the_reference_decodes_and_peeling_does_not_are_decoded() {
    // 11 of the reference encoder's first 14 frames of a 7-part message
    // (tests/fixtures/README.md): the reference decoder completes them, ur 0.5.2's does not.
    let frames = fixture("fountain-7-parts-11-of-14.ur");
    assert_eq!(frames.len(), 11);
    let mut old = ur::Decoder::default();
    for text in &frames {
        old.receive(text).expect("a part");
    }
    assert!(
        !old.complete(),
        "the fixture no longer tells the decoders apart"
    );
    let mut message = Assembler::new();
    message
        .receive(&fixture("fountain-7-parts-message.ur")[0])
        .expect("single part");
    let message = message.finish().expect("message");
    for order in [frames.clone(), frames.iter().rev().cloned().collect()] {
        let mut a = Assembler::new();
        for text in &order {
            a.receive(text).expect("a part");
        }
        let progress = a.progress();
        assert_eq!((progress.solved, progress.needed), (7, 7));
        assert_eq!(a.finish().expect("complete"), message);
    }
}

/// Whether `frames` rebuild `ur` (peeling alone rebuilds them too: `choose.rs`).
fn rebuilds(frames: &[&String], ur: &Ur) -> bool {
    let mut a = Assembler::new();
    for f in frames {
        a.receive(f).expect("a frame");
    }
    a.finish().is_ok_and(|m| &m == ur)
}

#[test]
fn any_frames_up_to_the_bound_lost_from_a_frame_set_and_the_rest_rebuild_it() {
    use bridgectl_qr::MAX_LOST_FRAMES;
    assert_eq!(MAX_LOST_FRAMES, 2);
    // Small messages: every way of losing two frames (and one).
    for len in [50, 121, 250, 600, 1100, 1500] {
        for salt in 0..4u8 {
            let ur = Ur {
                ur_type: UrType::BridgectlDoc,
                cbor: (0..len)
                    .map(|i| (i as u8).wrapping_mul(31) ^ salt)
                    .collect(),
            };
            let set = bridgectl_qr::frame_set(&ur).expect("frames");
            let n = set.len();
            for a in 0..n {
                for b in a..n {
                    let kept: Vec<&String> = (0..n)
                        .filter(|&i| i != a && i != b)
                        .map(|i| &set[i])
                        .collect();
                    assert!(
                        rebuilds(&kept, &ur),
                        "{len}/{salt}: lost {a} and {b} of {n}"
                    );
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Larger messages: any two frames lost, at random.
    #[test]
    fn two_frames_lost_at_random_from_a_large_frame_set(
        cbor in proptest::collection::vec(any::<u8>(), 3000..20000),
        lost in proptest::collection::vec(any::<prop::sample::Index>(), 2),
    ) {
        let ur = Ur { ur_type: UrType::BridgectlDoc, cbor };
        let set = bridgectl_qr::frame_set(&ur).expect("frames");
        let parts = ur.frames(bridgectl_qr::FRAGMENT_LEN).expect("frames").part_count();
        prop_assert!(set.len() <= 2 * parts, "{} frames for {parts} parts", set.len());
        let (a, b) = (lost[0].index(set.len()), lost[1].index(set.len()));
        let kept: Vec<&String> = (0..set.len()).filter(|&i| i != a && i != b).map(|i| &set[i]).collect();
        prop_assert!(rebuilds(&kept, &ur));
    }
}
