//! ethereum/tests `TransactionTests` (a committed subset under `tests/vectors/`), run
//! through the decoder: each case's newest fork decides whether the transaction must be
//! accepted (then hash, sender and intrinsic gas must match) or rejected.
//!
//! The whole suite runs too when `BRIDGECTL_ETHEREUM_TESTS` names a checkout's
//! `TransactionTests` folder (cases in files that are not there are skipped).

use std::path::{Path, PathBuf};

use bridgectl_tx::decode::{decode_signed, parse_hex_bytes};

/// Newest first: the expectation of the newest fork a file lists is the one checked.
const FORKS: &[&str] = &[
    "Osaka",
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

/// The chain the cases are filled for: a transaction signed for another one is
/// `INVALID_CHAINID`, a decision of the node, not of the decoder.
const CHAIN_ID: u64 = 1;

/// One case: txbytes and the expectation of the newest fork.
pub struct Case {
    name: String,
    txbytes: String,
    fork: String,
    expect: serde_json::Value,
}

fn cases(root: &Path) -> Vec<Case> {
    let mut paths = Vec::new();
    files(root, &mut paths);
    paths
        .iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(p).expect("read");
            // A checkout may hold a large file as an empty or pointer stub.
            let v: serde_json::Value = serde_json::from_str(&text).ok()?;
            let (name, body) = v.as_object().expect("obj").iter().next().expect("one test");
            let result = body["result"].as_object().expect("result");
            let fork = FORKS
                .iter()
                .find(|f| result.contains_key(**f))
                .unwrap_or_else(|| panic!("{}: no known fork", p.display()));
            Some(Case {
                name: name.clone(),
                txbytes: body["txbytes"].as_str().expect("txbytes").to_owned(),
                fork: (*fork).to_owned(),
                expect: result[*fork].clone(),
            })
        })
        .collect()
}

/// The kind of refusal an ethereum/tests exception calls for: a signature that cannot be
/// valid (v, r, s, recovery, the chain id v encodes), a transaction that decodes but
/// breaks a consensus rule (`invalid`), or bytes that are not a transaction.
fn expected_kind(exception: &str) -> &'static str {
    let signature = ["VRS", "SIGNATURE", "EC_RECOVERY", "CHAINID"];
    let invalid = [
        "GASLIMIT_PRICE_PRODUCT_OVERFLOW",
        "INTRINSIC_GAS_TOO_LOW",
        "NONCE_TOO_BIG",
        "PRIORITY_GREATER_THAN_MAX_FEE",
        "INITCODE_SIZE_EXCEEDED",
    ];
    if exception.contains("RLP") {
        "malformed"
    } else if signature.iter().any(|s| exception.contains(s)) {
        "signature"
    } else if invalid.iter().any(|s| exception.contains(s)) {
        "invalid"
    } else {
        "malformed"
    }
}

/// Decides one case; `Err` says how the decoder disagrees with Ethereum.
fn check(c: &Case) -> Result<&'static str, String> {
    let outcome = parse_hex_bytes(&c.txbytes).and_then(|b| decode_signed(&b));
    if let Some(exception) = c.expect.get("exception") {
        let exception = exception.as_str().unwrap_or_default();
        // The refusal is of the kind the exception names, not any error.
        let kind = match &outcome {
            Err(bridgectl_tx::Error::Malformed { .. }) => "malformed",
            Err(bridgectl_tx::Error::InvalidSignature(_)) => "signature",
            Err(other) => return Err(format!("unexpected error kind: {other}")),
            Ok(d) if d.chain_error(CHAIN_ID).is_some() => "signature",
            Ok(d) if !d.validity_errors().is_empty() => "invalid",
            Ok(d) => {
                return Err(format!(
                    "expected {exception}, but it decoded: sender {} hash {}",
                    d.sender, d.hash
                ));
            }
        };
        let want = expected_kind(exception);
        if kind != want {
            let why = match outcome {
                Err(e) => e.to_string(),
                Ok(d) => d.validity_errors().join("; "),
            };
            return Err(format!("{exception}: refused as {kind}, not {want}: {why}"));
        }
        return Ok("rejected");
    }
    let d = outcome.map_err(|e| e.to_string())?;
    if let Some(e) = d.chain_error(CHAIN_ID) {
        return Err(format!("refused: {e}"));
    }
    if !d.validity_errors().is_empty() {
        return Err(format!("refused: {:?}", d.validity_errors()));
    }
    if d.hash.to_string() != c.expect["hash"] {
        return Err(format!("hash {} != {}", d.hash, c.expect["hash"]));
    }
    if d.sender.to_string().to_lowercase() != c.expect["sender"] {
        return Err(format!("sender {} != {}", d.sender, c.expect["sender"]));
    }
    // Older fills do not list the intrinsic gas; newer ones may pad it ("0x06b618").
    if let Some(want) = c.expect.get("intrinsicGas").and_then(|w| w.as_str()) {
        let want = u64::from_str_radix(want.trim_start_matches("0x"), 16)
            .map_err(|e| format!("intrinsicGas {want:?}: {e}"))?;
        if d.intrinsic_gas != want {
            return Err(format!("intrinsic gas {} != {want}", d.intrinsic_gas));
        }
    }
    Ok("accepted")
}

/// Runs every case under `root`; panics listing each disagreement.
fn run(root: &Path) -> (usize, usize) {
    let (mut accepted, mut rejected) = (0, 0);
    let mut wrong = Vec::new();
    for c in cases(root) {
        match check(&c) {
            Ok("accepted") => accepted += 1,
            Ok(_) => rejected += 1,
            Err(e) => wrong.push(format!("{} ({}): {e}", c.name, c.fork)),
        }
    }
    assert!(
        wrong.is_empty(),
        "{} case(s) decided unlike Ethereum:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    (accepted, rejected)
}

#[test]
fn transaction_tests_subset() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/TransactionTests");
    let (accepted, rejected) = run(&root);
    assert!(
        accepted >= 5 && rejected >= 10,
        "accepted {accepted}, rejected {rejected}"
    );
}

#[test]
fn transaction_tests_full_checkout() {
    let Some(root) = std::env::var_os("BRIDGECTL_ETHEREUM_TESTS") else {
        return;
    };
    let (accepted, rejected) = run(Path::new(&root));
    // A checkout holds all of them: 210 (and two 10 MB files a mirror may leave out).
    assert!(
        accepted >= 40 && rejected >= 150,
        "accepted {accepted}, rejected {rejected}: not a whole TransactionTests folder"
    );
}
