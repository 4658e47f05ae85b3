//! The offline signer against a hostile online machine: every scenario of
//! `crates/tx/tests/hostile-offline/` through `bridgectl sign`, with the scenario's
//! profile as the offline config. A `fail_` case exits 3 naming the field, prints nothing
//! on stdout and never reads the passphrase; an `ok_` case signs, reading it once.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use crate::util::{CountingPassphrase, Dir, TestCommand};

pub const PASS: &str = "correct horse";
const KEY: &str = "4646464646464646464646464646464646464646464646464646464646464646";

pub fn cases() -> Vec<(String, Value)> {
    let dir = crate::util::repo_root().join("crates/tx/tests/hostile-offline");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("cases")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p.file_stem().expect("stem").to_string_lossy().into_owned();
            let v = serde_json::from_slice(&std::fs::read(&p).expect("read")).expect("json");
            (name, v)
        })
        .collect()
}

/// The scenario's profile as the offline config file.
pub fn config(dir: &Dir, name: &str, profile: &Value) -> PathBuf {
    let mut text = format!(
        "[profiles.default]\nside_chain_id = {}\nst_contract = \"{}\"\nside_symbol = \"{}\"\n\
         side_decimals = {}\n",
        profile["sideChainId"],
        profile["stContract"].as_str().expect("st"),
        profile["sideSymbol"].as_str().expect("symbol"),
        profile["sideDecimals"]
    );
    if let Some(cap) = profile["maxGasPrice"].as_str() {
        text.push_str(&format!(
            "\n[profiles.default.policy]\nmax-gas-price = {cap}\n"
        ));
    }
    for rule in profile["autoApprove"].as_array().into_iter().flatten() {
        text.push_str(&format!(
            "\n[[profiles.default.policy.auto-approve]]\nfunction = {}\ntoken = {}\nmax = {}\ndestinations = {}\n",
            rule["function"],
            rule["token"],
            rule["max"],
            rule.get("destinations").unwrap_or(&json!([]))
        ));
    }
    dir.write(format!("{name}.toml"), text)
}

/// Imports the scenarios' key (the EIP-155 example key) as `k`.
pub fn import_key(dir: &Dir) {
    import_key_as(dir, "k", KEY);
}

/// Imports the raw key `hex` as `label`, under [`PASS`].
pub fn import_key_as(dir: &Dir, label: &str, hex: &str) {
    let out = dir
        .command()
        .args(["key", "import", label, "--raw", "--unsafe-test-kdf"])
        .env("BRIDGECTL_PASSPHRASE", PASS)
        .output_with_stdin(hex.as_bytes());
    crate::util::assert_success(&Command::new("key import"), &out);
}

/// `bridgectl sign -` for one scenario: its config, its own journal, its flags.
fn sign(dir: &Dir, name: &str, case: &Value, fifo: &CountingPassphrase) -> TestCommand {
    let mut cmd = dir.command();
    cmd.args(["sign", "-", "--config"])
        .args([config(dir, name, &case["profile"])])
        .args(["--journal", &format!("{name}.sqlite3")])
        .env("BRIDGECTL_PASSPHRASE_FILE", &fifo.path);
    if case["yes"] == true {
        cmd.args(["--yes"]);
    }
    if let Some(n) = case["nonce"].as_u64() {
        cmd.args(["--nonce", &n.to_string()]);
    }
    cmd
}

pub fn input_bytes(case: &Value) -> Vec<u8> {
    match case.get("inputText") {
        Some(t) => t.as_str().expect("text").as_bytes().to_vec(),
        None => serde_json::to_vec(&case["input"]).expect("input"),
    }
}

bctest!(
    hostile_offline_inputs_are_refused_before_the_passphrase,
    |dir: Dir, _cmd: TestCommand| {
        import_key(&dir);
        let cases = cases();
        assert!(cases.len() >= 15, "{} cases", cases.len());
        for (name, case) in cases {
            let fifo = CountingPassphrase::new(&dir, PASS);
            let out = sign(&dir, &name, &case, &fifo).output_with_stdin(&input_bytes(&case));
            let reads = fifo.finish();
            let stderr = String::from_utf8_lossy(&out.stderr);
            if name.starts_with("ok_") {
                crate::util::assert_success(&Command::new(&name), &out);
                assert_eq!(reads, 1, "{name}: one passphrase read");
                let bundle: Value = serde_json::from_slice(&out.stdout).expect("bundle");
                assert_eq!(bundle["format"], "bridgectl-signed-bundle", "{name}");
                continue;
            }
            let want = case["refused"].as_str().expect("refused");
            assert_eq!(out.status.code(), Some(3), "{name}: {stderr}");
            assert!(stderr.contains(want), "{name}: {want:?} not in {stderr}");
            assert!(out.stdout.is_empty(), "{name}: printed {:?}", out.stdout);
            assert_eq!(reads, 0, "{name}: the passphrase was read");
        }
    }
);

bctest!(
    a_wrong_passphrase_signs_writes_and_prints_nothing,
    |dir: Dir, _cmd: TestCommand| {
        import_key(&dir);
        let (name, case) = cases()
            .into_iter()
            .find(|(n, _)| n == "ok_redeem_request")
            .expect("ok case");
        let wrong = "not the passphrase of k";
        let fifo = CountingPassphrase::new(&dir, wrong);
        let out = sign(&dir, &name, &case, &fifo).output_with_stdin(&input_bytes(&case));
        assert_eq!(fifo.finish(), 1, "the passphrase is read once");
        let mut scan = crate::secrets::Secrets::new();
        scan.add_key("the signing key", KEY)
            .add("the passphrase", PASS)
            .add("the wrong passphrase", wrong);
        crate::util::assert_wrong_passphrase(&scan, "sign", &out);
        // The offline journal holds no signed bytes, and no secret.
        let journal = dir.join(format!("{name}.sqlite3"));
        if journal.exists() {
            scan.scan_file(&journal);
            let rows = crate::util::journal_rows(&journal);
            assert!(rows.iter().all(|r| r.2.is_none()), "{rows:?}");
        }
    }
);

bctest!(
    request_text_reaches_the_terminal_escaped_and_as_a_claim,
    |dir: Dir, _cmd: TestCommand| {
        import_key(&dir);
        let (name, mut case) = cases()
            .into_iter()
            .find(|(n, _)| n == "ok_redeem_request")
            .expect("ok case");
        case["input"]["intent"]["description"] =
            json!("redeem 1 ST\u{1b}[2K\rWARNING:   none\nchain:     1 (mainnet)");
        case["yes"] = json!(false);
        let fifo = CountingPassphrase::new(&dir, PASS);
        let out = sign(&dir, &name, &case, &fifo).output_with_stdin(&input_bytes(&case));
        assert_eq!(fifo.finish(), 0);
        // No terminal to ask on: declined after the summary, before the passphrase.
        assert_eq!(out.status.code(), Some(5));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains('\u{1b}'),
            "raw ESC reached the terminal: {stderr:?}"
        );
        assert!(
            stderr.contains(
                "claimed:   \"redeem 1 ST\\u{1b}[2K\\rWARNING:   none\\nchain:     1 (mainnet)\" \
                 (the request's description, not checked)"
            ),
            "{stderr}"
        );
        assert!(
            !stderr.lines().any(|l| l.starts_with("chain:     1 ")),
            "a faked line: {stderr}"
        );
        // Amounts in the profile's decimals, the callee labelled from the profile.
        assert!(stderr.contains("_amount      1 ST"), "{stderr}");
        assert!(stderr.contains("(ST token)"), "{stderr}");
    }
);
