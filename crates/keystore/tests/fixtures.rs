//! Loops over `keystore-fixtures/`: every file unlocks to the address in
//! `manifest.json`, or fails with the error kind it names. Files and manifest must
//! agree both ways, so a fixture cannot be added or dropped silently.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use bridgectl_keystore::{Passphrase, unlock_file};

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../keystore-fixtures")
}

fn passphrase_for(file: &Path) -> Passphrase {
    let path = file.with_extension("passphrase");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{} is missing: {e}", path.display()));
    Passphrase::new(text.strip_suffix('\n').unwrap_or(&text).to_owned())
}

#[test]
fn every_fixture_meets_its_expectation() {
    let dir = fixtures_dir();
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("manifest.json")).expect("read manifest.json"),
    )
    .expect("manifest.json is JSON");
    let manifest = manifest.as_object().expect("manifest is an object");

    let on_disk: BTreeSet<String> = std::fs::read_dir(&dir)
        .expect("read fixtures dir")
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .into_string()
                .expect("utf-8 name")
        })
        .filter(|n| (n.ends_with(".json") || n.ends_with(".key")) && n != "manifest.json")
        .collect();
    let listed: BTreeSet<String> = manifest.keys().cloned().collect();
    assert_eq!(on_disk, listed, "fixture files and manifest.json disagree");

    // Each file's real key derivation (the published vectors cost seconds each) runs on a
    // thread of its own, as many at once as there are cores; the results are read in the
    // manifest's order.
    let entries: Vec<(&String, &serde_json::Value)> = manifest.iter().collect();
    let results = unlock_all(&dir, &entries);
    let mut failures = Vec::new();
    let (mut passed, mut refused) = (0, 0);
    for ((name, expect), result) in entries.into_iter().zip(results) {
        match (
            expect.get("address").and_then(|a| a.as_str()),
            expect.get("error").and_then(|e| e.as_str()),
        ) {
            (Some(address), None) => {
                assert!(
                    !name.starts_with("fail_"),
                    "{name}: fail_ file expected to pass"
                );
                match result {
                    Ok(signer) if signer.address().to_checksum(None) == address => passed += 1,
                    Ok(signer) => {
                        failures.push(format!("{name}: got {}, want {address}", signer.address()))
                    }
                    Err(e) => failures.push(format!("{name}: {e}")),
                }
            }
            (None, Some(kind)) => {
                assert!(
                    name.starts_with("fail_"),
                    "{name}: must-fail files are named fail_*"
                );
                match result {
                    Ok(signer) => failures.push(format!(
                        "{name}: unlocked to {} but must fail",
                        signer.address()
                    )),
                    Err(e) if e.kind() == kind => {
                        let msg = e.to_string();
                        // Clear, lowercase, names the file.
                        assert!(
                            msg.contains(name),
                            "{name}: message does not name the file: {msg}"
                        );
                        assert!(!msg.starts_with(char::is_uppercase), "{name}: {msg}");
                        refused += 1;
                    }
                    Err(e) => failures.push(format!("{name}: want {kind}, got {} ({e})", e.kind())),
                }
            }
            _ => panic!("{name}: manifest entry needs exactly one of address or error"),
        }
    }
    assert!(
        failures.is_empty(),
        "fixture failures:\n{}",
        failures.join("\n")
    );
    assert!(
        passed >= 10 && refused >= 20,
        "too few fixtures ran: {passed} ok, {refused} refused"
    );
}

/// `unlock_file` of every entry's file with its passphrase, the files shared out among as
/// many threads as there are cores; the results in the entries' order.
fn unlock_all(
    dir: &Path,
    entries: &[(&String, &serde_json::Value)],
) -> Vec<Result<alloy_signer_local::PrivateKeySigner, bridgectl_keystore::Error>> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<_>>> = entries.iter().map(|_| Mutex::new(None)).collect();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((name, _)) = entries.get(i) else {
                        return;
                    };
                    let path = dir.join(name);
                    let mut pass = passphrase_for(&path);
                    *results[i].lock().expect("lock") = Some(unlock_file(&path, &mut pass));
                }
            });
        }
    });
    results
        .into_iter()
        .map(|r| r.into_inner().expect("lock").expect("every entry unlocked"))
        .collect()
}
