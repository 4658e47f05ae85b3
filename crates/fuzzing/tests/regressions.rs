//! Replays every committed fuzz input on stable, so a fixed crash stays fixed without
//! nightly or cargo-fuzz. `fuzz/regressions/<target>/*` holds every crash the target's
//! campaigns found (`crash-<sha1>`, kept unconditionally) and a coverage-minimised seed
//! set: the campaigns' corpora merged by `cargo fuzz cmin` (libFuzzer `-merge=1`, which
//! keeps a subset that reaches every edge and hit-count bucket of the whole), named by
//! SHA-1. `bench/fuzz-cmin.sh` re-minimises it after a campaign (`bench/fuzz.sh`).

use std::path::Path;

#[test]
fn every_committed_input_holds_its_properties() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions");
    let mut total = 0;
    for (name, target) in bridgectl_fuzzing::TARGETS {
        let dir = root.join(name);
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("dir entry").path())
            .collect();
        entries.sort();
        assert!(!entries.is_empty(), "{}: no inputs", dir.display());
        for path in entries {
            let data = std::fs::read(&path).expect("read input");
            let outcome = std::panic::catch_unwind(|| target(&data));
            assert!(outcome.is_ok(), "{name}: {} fails", path.display());
            total += 1;
        }
    }
    assert!(total > 0);
}
