//! ethereum/tests `TransactionTests` (a committed subset under `tests/vectors/`), run
//! through the decoder: each file's latest fork decides whether the transaction must be
//! accepted (then hash, sender and intrinsic gas must match) or rejected.

use std::path::{Path, PathBuf};

use bridgectl_tx::decode::{decode_signed, parse_hex_bytes};

/// Newest first: the expectation of the newest fork a file lists is the one checked.
const FORKS: &[&str] = &[
    "Prague",
    "Cancun",
    "Shanghai",
    "Paris",
    "London",
    "Berlin",
    "Istanbul",
    "ConstantinopleFix",
];

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("vectors dir")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|e| e == "json") {
            out.push(p);
        }
    }
}

/// One case: txbytes and the expectation of the newest fork.
pub struct Case {
    name: String,
    txbytes: String,
    fork: String,
    expect: serde_json::Value,
}

fn cases() -> Vec<Case> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/TransactionTests");
    let mut paths = Vec::new();
    files(&root, &mut paths);
    assert!(paths.len() >= 20, "only {} vector files", paths.len());
    paths
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).expect("read");
            let v: serde_json::Value = serde_json::from_str(&text).expect("json");
            let (name, body) = v.as_object().expect("obj").iter().next().expect("one test");
            let result = body["result"].as_object().expect("result");
            let fork = FORKS
                .iter()
                .find(|f| result.contains_key(**f))
                .unwrap_or_else(|| panic!("{}: no known fork", p.display()));
            Case {
                name: name.clone(),
                txbytes: body["txbytes"].as_str().expect("txbytes").to_owned(),
                fork: (*fork).to_owned(),
                expect: result[*fork].clone(),
            }
        })
        .collect()
}

/// The kind of refusal an ethereum/tests exception calls for: a signature that cannot be
/// valid (v, r, s, recovery, the chain id v encodes), or bytes that are not a transaction.
fn expected_kind(name: &str, exception: &str) -> &'static str {
    // `v = 0` fails the legacy decoder's parity check, before any signature check.
    if name == "ZeroSigTransaction" {
        return "malformed";
    }
    let signature = ["VRS", "SIGNATURE", "EC_RECOVERY", "CHAINID"];
    if signature.iter().any(|s| exception.contains(s)) {
        "signature"
    } else {
        "malformed"
    }
}

#[test]
fn transaction_tests_subset() {
    let mut accepted = 0;
    let mut rejected = 0;
    for c in cases() {
        let outcome = parse_hex_bytes(&c.txbytes).and_then(|b| decode_signed(&b));
        if let Some(exception) = c.expect.get("exception") {
            let exception = exception.as_str().unwrap_or_default();
            match outcome {
                Err(e) => {
                    // The refusal is of the kind the exception names, not any error.
                    let kind = match &e {
                        bridgectl_tx::Error::Malformed { .. } => "malformed",
                        bridgectl_tx::Error::InvalidSignature(_) => "signature",
                        other => panic!("{}: unexpected error kind: {other}", c.name),
                    };
                    assert_eq!(
                        kind,
                        expected_kind(&c.name, exception),
                        "{} ({exception}): {e}",
                        c.name
                    );
                    rejected += 1;
                }
                Ok(d) if !d.validity_errors().is_empty() => rejected += 1,
                Ok(d) => panic!(
                    "{} ({}): expected {exception}, but it decoded: sender {} hash {}",
                    c.name, c.fork, d.sender, d.hash
                ),
            }
        } else {
            let d = outcome.unwrap_or_else(|e| panic!("{} ({}): {e}", c.name, c.fork));
            assert!(
                d.validity_errors().is_empty(),
                "{}: {:?}",
                c.name,
                d.validity_errors()
            );
            assert_eq!(d.hash.to_string(), c.expect["hash"], "{} hash", c.name);
            assert_eq!(
                d.sender.to_string().to_lowercase(),
                c.expect["sender"],
                "{} sender",
                c.name
            );
            // Older fills do not list the intrinsic gas.
            if let Some(want) = c.expect.get("intrinsicGas") {
                assert_eq!(
                    &format!("{:#x}", d.intrinsic_gas),
                    want,
                    "{} intrinsic gas",
                    c.name
                );
            }
            accepted += 1;
        }
    }
    assert!(
        accepted >= 5 && rejected >= 10,
        "accepted {accepted}, rejected {rejected}"
    );
}
