//! The signing log end to end: `bridgectl sign` records every signature; `log verify`
//! names the entry of each kind of tampering; an export is checked by an independent
//! script (keccak and ecrecover from the pinned `cast`); spending limits and the
//! allowlist refuse before any passphrase is read.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::util::{CountingPassphrase, Dir, TestCommand};

const PASS: &str = "correct horse";
const FROM: &str = "0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f";
const ST: &str = "0x5757575757575757575757575757575757575757";
const ONE_ST: u128 = 1_000_000_000_000_000_000;

/// The offline profile: ST on chain 1337, a gas-price cap, and `policy` lines.
fn config(dir: &Dir, policy: &str) -> PathBuf {
    dir.write(
        "offline.toml",
        format!(
            "[profiles.default]\nside_chain_id = 1337\nst_contract = \"{ST}\"\n\
             side_symbol = \"ST\"\nside_decimals = 18\n\n[profiles.default.policy]\n\
             max-gas-price = 1000000000\n{policy}"
        ),
    )
}

fn import_key(dir: &Dir) {
    crate::offline::import_key(dir);
}

fn raw_tx(nonce: u64, data: String) -> Value {
    json!({
        "from": FROM, "to": ST, "data": data, "nonce": nonce, "gasLimit": 100000,
        "gasPrice": 1000000000u64, "chainId": 1337, "value": "0x0"
    })
}

fn redeem(nonce: u64, amount: u128) -> Value {
    raw_tx(nonce, format!("0xdb006a75{amount:064x}"))
}

fn transfer(nonce: u64, to: &str, amount: u128) -> Value {
    raw_tx(
        nonce,
        format!(
            "0xa9059cbb{:0>64}{amount:064x}",
            to.trim_start_matches("0x")
        ),
    )
}

/// `bridgectl sign` of `tx` with the call pinned (function and every argument, as
/// `NAME=VALUE`), passphrase from a counting FIFO. Returns the output and how often the
/// passphrase was read.
fn sign(
    dir: &Dir,
    config: &Path,
    tx: &Value,
    function: &str,
    args: &[String],
) -> (std::process::Output, usize) {
    sign_with_journal(dir, config, tx, function, args, "journal.sqlite3")
}

/// [`sign`] with the journal `journal`: another journal is another machine's or
/// process's idea of which nonces are taken.
fn sign_with_journal(
    dir: &Dir,
    config: &Path,
    tx: &Value,
    function: &str,
    args: &[String],
    journal: &str,
) -> (std::process::Output, usize) {
    let fifo = CountingPassphrase::new(dir, PASS);
    let nonce = tx["nonce"].as_u64().expect("nonce").to_string();
    let mut cmd = dir.command();
    cmd.args([
        "sign",
        "-",
        "--yes",
        "--expect-function",
        function,
        "--nonce",
        &nonce,
    ])
    .args(args.iter().flat_map(|a| ["--expect-arg", a.as_str()]))
    .args([Path::new("--config"), config])
    .args(["--journal", journal])
    .env("BRIDGECTL_PASSPHRASE_FILE", &fifo.path);
    let out = cmd.output_with_stdin(serde_json::to_string(tx).expect("json").as_bytes());
    (out, fifo.finish())
}

fn sign_redeem(
    dir: &Dir,
    config: &Path,
    nonce: u64,
    amount: u128,
) -> (std::process::Output, usize) {
    let args = [format!("_amount={amount}")];
    sign(dir, config, &redeem(nonce, amount), "redeem", &args)
}

fn sign_transfer(dir: &Dir, config: &Path, to: &str) -> (std::process::Output, usize) {
    let args = [format!("_to={to}"), format!("_value={ONE_ST}")];
    sign(dir, config, &transfer(0, to, ONE_ST), "transfer", &args)
}

fn log_cmd(dir: &Dir, keystore: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = dir.command();
    cmd.args([Path::new("--keystore"), keystore, Path::new("log")])
        .args(args);
    cmd.output()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A keystore whose log holds four redeems of 1..=4 ST, signed by `bridgectl sign`.
fn four_signatures(dir: &Dir) {
    import_key(dir);
    let config = config(dir, "");
    for n in 0..4u64 {
        let (out, reads) = sign_redeem(dir, &config, n, u128::from(n + 1) * ONE_ST);
        crate::util::assert_success(&Command::new("sign"), &out);
        assert_eq!(reads, 1);
    }
}

/// A copy of the keystore's log in a keystore directory of its own, tampered with by
/// `sql`.
fn tampered(dir: &Dir, name: &str, sql: &str) -> PathBuf {
    let ks = dir.join(name);
    std::fs::create_dir_all(&ks).expect("mkdir");
    std::fs::set_permissions(&ks, {
        let mut p = perms(&ks);
        std::os::unix::fs::PermissionsExt::set_mode(&mut p, 0o700);
        p
    })
    .expect("chmod");
    std::fs::copy(
        dir.keystore().join("signing-log.sqlite3"),
        ks.join("signing-log.sqlite3"),
    )
    .expect("copy log");
    // The keys too: `log verify` wants every entry signed by a key of its keystore.
    for entry in std::fs::read_dir(dir.keystore()).expect("keystore") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "key") {
            std::fs::copy(&path, ks.join(path.file_name().expect("name"))).expect("copy key");
        }
    }
    let c = rusqlite::Connection::open(ks.join("signing-log.sqlite3")).expect("open");
    c.execute_batch(sql).expect(sql);
    ks
}

fn perms(p: &Path) -> std::fs::Permissions {
    std::fs::metadata(p).expect("stat").permissions()
}

/// Entry 5 as someone without the key would make it: a copy of entry 4 moved on by
/// one, chained to the real head, signed by another key. With `own_key` the entry also
/// names that other key as its signer (a self-consistent entry of a stranger).
fn forged_entry_sql(dir: &Dir, own_key: bool) -> String {
    let c = rusqlite::Connection::open(dir.keystore().join("signing-log.sqlite3")).expect("open");
    let (body, hash): (String, Vec<u8>) = c
        .query_row("SELECT body, hash FROM entries WHERE seq = 4", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .expect("entry 4");
    let mut v: Value = serde_json::from_str(&body).expect("body");
    v["seq"] = json!(5);
    v["nonce"] = json!(4);
    v["prev"] = json!(format!("0x{}", alloy_primitives::hex::encode(&hash)));
    let forger = alloy_signer_local::PrivateKeySigner::random();
    if own_key {
        v["key"] = json!(forger.address());
    }
    let text = serde_json::to_string(&v).expect("text");
    let h = alloy_primitives::keccak256(text.as_bytes());
    let sig = alloy_signer::SignerSync::sign_message_sync(&forger, h.as_slice()).expect("sig");
    let key_column = if own_key {
        format!("'{}'", forger.address())
    } else {
        "key".into()
    };
    format!(
        "INSERT INTO entries (seq, time, key, chain_id, contract, body, hash, sig) \
         SELECT 5, time, {key_column}, chain_id, contract, '{}', X'{}', X'{}' FROM entries \
         WHERE seq = 4",
        text.replace('\'', "''"),
        alloy_primitives::hex::encode(h),
        alloy_primitives::hex::encode(sig.as_bytes())
    )
}

bctest!(
    log_verify_names_each_tampered_entry,
    |dir: Dir, _cmd: TestCommand| {
        four_signatures(&dir);
        let out = log_cmd(&dir, &dir.keystore(), &["checkpoint"]);
        crate::util::assert_success(&Command::new("log checkpoint"), &out);
        let kept = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        assert!(kept.starts_with("4:0x"), "{kept}");
        let out = log_cmd(&dir, &dir.keystore(), &["verify", "--checkpoint", &kept]);
        crate::util::assert_success(&Command::new("log verify"), &out);

        let cases: Vec<(&str, String, bool, &str)> = vec![
            (
                "edit-amount",
                "UPDATE entries SET body = replace(body, '\"amount\":\"2000000000000000000\"', \
                 '\"amount\":\"200000000000000000\"') WHERE seq = 2"
                    .into(),
                false,
                "entry 2: its contents do not match its hash",
            ),
            (
                "delete-middle",
                "DELETE FROM entries WHERE seq = 2".into(),
                false,
                "entry 2: missing",
            ),
            (
                "reorder",
                "UPDATE entries SET seq = 100 WHERE seq = 2; UPDATE entries SET seq = 2 WHERE \
                 seq = 3; UPDATE entries SET seq = 3 WHERE seq = 100;"
                    .into(),
                false,
                "entry 2: its body says it is entry 3",
            ),
            (
                "truncate-tail",
                "DELETE FROM entries WHERE seq >= 3".into(),
                true,
                "entry 3: missing",
            ),
            (
                "forged-append",
                forged_entry_sql(&dir, false),
                false,
                "entry 5: not signed by its key",
            ),
            (
                "stranger-append",
                forged_entry_sql(&dir, true),
                false,
                "entry 5: signed by 0x",
            ),
        ];
        for (name, sql, with_checkpoint, want) in cases {
            let ks = tampered(&dir, name, &sql);
            let mut args = vec!["verify"];
            if with_checkpoint {
                args.extend(["--checkpoint", &kept]);
            }
            let out = log_cmd(&dir, &ks, &args);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(3), "{name}: {err}");
            assert!(err.contains(want), "{name}: {want:?} not in {err}");
            if name == "stranger-append" {
                assert!(err.contains("not a key of this keystore"), "{err}");
                // A key removed since it signed is the one legitimate stranger.
                let out = log_cmd(&dir, &ks, &["verify", "--any-key"]);
                crate::util::assert_success(&Command::new("log verify --any-key"), &out);
            }
        }
    }
);

bctest!(
    log_show_and_json_list_the_signatures,
    |dir: Dir, _cmd: TestCommand| {
        four_signatures(&dir);
        let out = log_cmd(
            &dir,
            &dir.keystore(),
            &["show", "--key", FROM, "--since", "1h"],
        );
        crate::util::assert_success(&Command::new("log show"), &out);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text.lines().count(), 4, "{text}");
        assert!(text.contains("redeem(uint256)"), "{text}");
        // Without a profile the amounts are base units; with the one that names the
        // token, its units and symbol (as --json keeps base units).
        assert!(
            text.contains("4000000000000000000 base units of ST"),
            "{text}"
        );
        let config = config(&dir, "");
        let mut cmd = dir.command();
        cmd.args([Path::new("--config"), &config])
            .args(["log", "show", "--since", "1h"]);
        let text = cmd.stdout();
        assert!(
            text.contains("redeem(uint256) 4 ST ") && !text.contains("base units"),
            "{text}"
        );
        let mut cmd = dir.command();
        cmd.args(["--json", "log", "show", "--since", "2000-01-01T00:00:00Z"]);
        let out = cmd.output();
        crate::util::assert_success(&Command::new("log show --json"), &out);
        let list: Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(list[3]["entry"]["amount"], "4000000000000000000");
        assert_eq!(list[3]["entry"]["token"], "ST");
        assert_eq!(list[3]["entry"]["args"]["_amount"], "4000000000000000000");
    }
);

bctest!(
    log_export_is_verified_by_an_independent_script,
    |dir: Dir, _cmd: TestCommand| {
        four_signatures(&dir);
        let kept = String::from_utf8_lossy(&log_cmd(&dir, &dir.keystore(), &["checkpoint"]).stdout)
            .trim()
            .to_owned();
        let export = dir.join("export.jsonl");
        let out = log_cmd(
            &dir,
            &dir.keystore(),
            &["export", "--out", export.to_str().expect("utf-8")],
        );
        crate::util::assert_success(&Command::new("log export"), &out);
        let script = crate::util::repo_root().join("scripts/verify-signing-log.py");
        let cast = crate::util::pinned_tool("cast");
        let check = |file: &Path| {
            Command::new("python3")
                .arg(&script)
                .arg(file)
                .args(["--checkpoint", &kept, "--cast"])
                .arg(&cast)
                .output()
                .expect("python3")
        };
        let out = check(&export);
        crate::util::assert_success(&Command::new("verify-signing-log.py"), &out);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(&format!("ok: 4 entries, head {kept}")),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        // The same script catches an edited amount, naming the entry (entry 3's call
        // argument: entry 2's running total is 3 ST too).
        let text = std::fs::read_to_string(&export).expect("read");
        let edited = text.replacen(
            r#"_amount\":\"3000000000000000000"#,
            r#"_amount\":\"300000000000000000"#,
            1,
        );
        assert_ne!(edited, text);
        let bad = dir.write("edited.jsonl", edited);
        let out = check(&bad);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(stderr(&out).contains("entry 3:"), "{}", stderr(&out));
    }
);

bctest!(
    a_redeem_over_the_daily_limit_is_refused_before_the_passphrase,
    |dir: Dir, _cmd: TestCommand| {
        import_key(&dir);
        let config = config(
            &dir,
            "\n[profiles.default.policy.limits]\nst = { per = \"24h\", max = \"2.5\" }\n",
        );
        let (out, reads) = sign_redeem(&dir, &config, 0, 2 * ONE_ST);
        crate::util::assert_success(&Command::new("sign"), &out);
        assert_eq!(reads, 1);
        assert!(
            stderr(&out).contains("limit:     last 24h: 0 ST of 2.5 ST signed by this key"),
            "{}",
            stderr(&out)
        );
        let (out, reads) = sign_redeem(&dir, &config, 1, ONE_ST);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert_eq!(reads, 0, "a refusal never reads the passphrase");
        assert!(
            err.contains(
                "spending limit 2.5 ST per 24h: 2 ST signed already in the window, 1 ST more"
            ),
            "{err}"
        );
        // Half an ST still fits.
        let (out, reads) = sign_redeem(&dir, &config, 1, ONE_ST / 2);
        crate::util::assert_success(&Command::new("sign"), &out);
        assert_eq!(reads, 1);
    }
);

bctest!(
    a_transfer_outside_the_allowlist_is_refused_before_the_passphrase,
    |dir: Dir, _cmd: TestCommand| {
        import_key(&dir);
        let allowed = "0xa1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1";
        let config = config(&dir, &format!("allowed-destinations = [\"{allowed}\"]\n"));
        let elsewhere = "0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
        let (out, reads) = sign_transfer(&dir, &config, elsewhere);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert_eq!(reads, 0);
        assert!(err.contains("destination"), "{err}");
        let (out, reads) = sign_transfer(&dir, &config, allowed);
        crate::util::assert_success(&Command::new("sign"), &out);
        assert_eq!(reads, 1);
    }
);

#[test]
fn an_online_redeem_is_logged_and_the_daily_limit_refuses_before_the_passphrase() {
    let live = crate::live::Live::shared("log_online_limit");
    live.add_to_profile(&format!(
        "\n[profiles.default.policy.limits]\n{} = {{ per = \"24h\", max = \"2\" }}\n",
        live.sb.info.side.symbol.to_lowercase()
    ));
    let dev = live.dev.to_string();
    let out = live.ok(&["redeem", "--from", &dev, "--amount", "1.5", "--yes"]);
    assert_eq!(out["status"], "completed", "{out:#}");
    // The signature is in the log, and the log holds.
    let entries = live.ok(&["log", "show"]);
    assert_eq!(entries.as_array().map(Vec::len), Some(1), "{entries:#}");
    assert_eq!(entries[0]["entry"]["txHash"], out["txHash"]);
    assert_eq!(entries[0]["entry"]["function"], "redeem(uint256)");
    let verified = live.ok(&["log", "verify"]);
    assert_eq!(verified["ok"], true);
    // 1.5 + 1 > 2 within the day: refused before any passphrase read.
    let counter = CountingPassphrase::new(&live.dir, &live.passphrase);
    let mut c = live.cmd();
    c.env("BRIDGECTL_PASSPHRASE_FILE", &counter.path)
        .args(["redeem", "--from", &dev, "--amount", "1", "--yes"]);
    let out = c.output();
    let reads = counter.finish();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert_eq!(reads, 0, "the passphrase was read");
    let sym = &live.sb.info.side.symbol;
    assert!(
        err.contains(&format!(
            "spending limit 2 {sym} per 24h: 1.5 {sym} signed already in the window, 1 {sym} more"
        )),
        "{err}"
    );
}

/// `transferWithFee(_to, 1 ST, _feeCollector, _fee)` from the scenarios' key.
fn transfer_with_fee(nonce: u64, to: &str, collector: &str, fee: u64) -> Value {
    let inputs = std::collections::BTreeMap::from([
        ("_to".to_string(), to.to_string()),
        ("_amount".to_string(), ONE_ST.to_string()),
        ("_feeCollector".to_string(), collector.to_string()),
        ("_fee".to_string(), fee.to_string()),
    ]);
    let data = bridgectl_tx::calldata::encode("transferWithFee", &inputs).expect("calldata");
    raw_tx(nonce, format!("0x{}", alloy_primitives::hex::encode(data)))
}

const ALLOWED: &str = "0xa1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1";
const ATTACKER: &str = "0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee";

/// The reviewed setup of H1: an allowlist, 10 ST a day, 8 ST a transaction.
fn guarded_config(dir: &Dir, allowed: &[&str]) -> PathBuf {
    let list: Vec<String> = allowed.iter().map(|a| format!("\"{a}\"")).collect();
    config(
        dir,
        &format!(
            "allowed-destinations = [{}]\n\n[profiles.default.policy.limits]\n\
             st = {{ per = \"24h\", max = \"10\", max-per-tx = \"8\" }}\n",
            list.join(", ")
        ),
    )
}

bctest!(
    a_fee_to_a_stranger_is_refused_offline_before_the_passphrase,
    |dir: Dir, _cmd: TestCommand| {
        import_key(&dir);
        // H1: 1 ST to an allowed address and a fee of 10000 % (100 ST) to the attacker,
        // pinned on the command line exactly as the request asks, signed with --yes.
        let tx = transfer_with_fee(0, ALLOWED, ATTACKER, 10_000);
        let args = [
            format!("_to={ALLOWED}"),
            format!("_amount={ONE_ST}"),
            format!("_feeCollector={ATTACKER}"),
            "_fee=10000".to_string(),
        ];
        let config = guarded_config(&dir, &[ALLOWED]);
        let (out, reads) = sign(&dir, &config, &tx, "transferWithFee", &args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert_eq!(reads, 0, "refused before the passphrase");
        assert!(
            err.contains("destination (_feeCollector)") && err.to_lowercase().contains(ATTACKER),
            "{err}"
        );
        // With the collector allowed too, the limit counts what moves: 101 ST.
        let config = guarded_config(&dir, &[ALLOWED, ATTACKER]);
        let (out, reads) = sign(&dir, &config, &tx, "transferWithFee", &args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert_eq!(reads, 0);
        assert!(
            err.contains("spending limit 8 ST per transaction") && err.contains("101 ST more"),
            "{err}"
        );
        // A 3 % fee fits: 1.03 ST, shown recipient by recipient, and logged as what moved.
        let tx = transfer_with_fee(0, ALLOWED, ATTACKER, 3);
        let mut args = args.to_vec();
        args[3] = "_fee=3".into();
        let (out, reads) = sign(&dir, &config, &tx, "transferWithFee", &args);
        crate::util::assert_success(&Command::new("sign"), &out);
        assert_eq!(reads, 1);
        let err = stderr(&out).to_lowercase();
        assert!(
            err.contains(&format!("moves:     0.03 st to {ATTACKER} as the fee")),
            "{err}"
        );
        assert!(
            err.contains(&format!("moves:     1 st to {ALLOWED}")),
            "{err}"
        );
        assert!(err.contains("moves:     1.03 st in all"), "{err}");
        let mut cmd = dir.command();
        let entries = cmd.args(["--json", "log", "show"]).json();
        assert_eq!(entries[0]["entry"]["amount"], "1030000000000000000");
    }
);

/// Appends to the keystore's log an entry a stranger made: chained onto the head, dated
/// `time = 1`, signed by a key of their own (H2).
fn append_stranger_entry(dir: &Dir) {
    let path = dir.keystore().join("signing-log.sqlite3");
    let c = rusqlite::Connection::open(&path).expect("open");
    let (seq, body, hash): (i64, String, Vec<u8>) = c
        .query_row(
            "SELECT seq, body, hash FROM entries ORDER BY seq DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("head");
    let stranger = alloy_signer_local::PrivateKeySigner::random();
    let mut v: Value = serde_json::from_str(&body).expect("body");
    v["seq"] = json!(seq + 1);
    v["prev"] = json!(format!("0x{}", alloy_primitives::hex::encode(&hash)));
    v["time"] = json!(1);
    v["key"] = json!(stranger.address());
    let text = serde_json::to_string(&v).expect("text");
    let h = alloy_primitives::keccak256(text.as_bytes());
    let sig = alloy_signer::SignerSync::sign_message_sync(&stranger, h.as_slice()).expect("sig");
    c.execute(
        "INSERT INTO entries (seq, time, key, chain_id, contract, body, hash, sig) \
         SELECT ?1, 1, ?2, chain_id, contract, ?3, ?4, ?5 FROM entries WHERE seq = ?6",
        rusqlite::params![
            seq + 1,
            stranger.address().to_string(),
            text,
            h.as_slice(),
            sig.as_bytes().to_vec(),
            seq
        ],
    )
    .expect("insert");
}

fn daily_limit(dir: &Dir) -> PathBuf {
    config(
        dir,
        "\n[profiles.default.policy.limits]\nst = { per = \"24h\", max = \"10\", max-per-tx = \"8\" }\n",
    )
}

bctest!(
    a_strangers_entry_or_a_rolled_back_log_refuses_before_the_passphrase,
    |dir: Dir, _cmd: TestCommand| {
        import_key(&dir);
        let config = daily_limit(&dir);
        let (out, reads) = sign_redeem(&dir, &config, 0, 8 * ONE_ST);
        crate::util::assert_success(&Command::new("sign"), &out);
        assert_eq!(reads, 1);
        let log = dir.keystore().join("signing-log.sqlite3");
        let backup = dir.join("backup.sqlite3");
        // A backup as a person takes it: SQLite's own copy.
        rusqlite::Connection::open(&log)
            .expect("open")
            .execute_batch(&format!("VACUUM INTO '{}'", backup.display()))
            .expect("backup");
        let refused = |dir: &Dir, nonce: u64, want: &str| {
            let (out, reads) = sign_redeem(dir, &config, nonce, 8 * ONE_ST);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(3), "{want}: {err}");
            assert_eq!(reads, 0, "{want}: the passphrase was read");
            assert!(err.contains(want), "{want:?} not in {err}");
            err
        };
        // H2: one stranger's entry, dated 1970, chained onto the head.
        append_stranger_entry(&dir);
        let err = refused(&dir, 1, "entry 2 is signed by");
        assert!(
            err.contains("log acknowledge"),
            "a hint names the way out: {err}"
        );
        // Acknowledged (an entry signed by a key of the keystore: its passphrase is
        // needed), the stranger's entry no longer refuses, and it resets nothing.
        let acknowledge = |dir: &Dir| {
            let mut cmd = dir.command();
            cmd.args(["log", "acknowledge", "--yes"])
                .env("BRIDGECTL_PASSPHRASE", crate::offline::PASS)
                .stdout();
        };
        let mut keyless = dir.command();
        keyless.args(["log", "acknowledge", "--yes"]).fails_with(4);
        acknowledge(&dir);
        refused(&dir, 1, "8 ST signed already in the window, 8 ST more");
        // The log restored from the backup (one entry where the checkpoint says two).
        let wal = |p: &Path| PathBuf::from(format!("{}-wal", p.display()));
        let shm = |p: &Path| PathBuf::from(format!("{}-shm", p.display()));
        let _ = std::fs::remove_file(wal(&log));
        let _ = std::fs::remove_file(shm(&log));
        std::fs::copy(&backup, &log).expect("restore");
        // (3 entries: the signature, the stranger's, the acknowledgement.)
        refused(&dir, 1, "does not reach its checkpoint 3:");
        // Deleted.
        std::fs::remove_file(&log).expect("delete");
        let err = refused(&dir, 1, "it has 0 entries");
        assert!(err.contains("deleted, truncated or restored"), "{err}");
        // Acknowledged by a person who knows why, it signs again; what the deleted entry
        // spent stays in the window (the checkpoint carried it into the log).
        acknowledge(&dir);
        refused(&dir, 1, "8 ST signed already in the window, 8 ST more");
        let (out, reads) = sign_redeem(&dir, &config, 1, ONE_ST);
        crate::util::assert_success(&Command::new("sign"), &out);
        assert_eq!(reads, 1);
    }
);

bctest!(
    concurrent_signers_never_pass_the_daily_limit_together,
    |dir: Dir, _cmd: TestCommand| {
        import_key(&dir);
        let config = daily_limit(&dir);
        // M1: four `sign --yes` of 3 ST against 10 ST a day, each with its own journal
        // and nonce, started together: exactly three fit.
        let children: Vec<_> = (0..4u64)
            .map(|n| {
                let tx = redeem(n, 3 * ONE_ST);
                let mut cmd = dir.command();
                cmd.args(["sign", "-", "--yes", "--expect-function", "redeem"])
                    .args(["--expect-arg", &format!("_amount={}", 3 * ONE_ST)])
                    .args(["--nonce", &n.to_string()])
                    .args([Path::new("--config"), &config])
                    .args(["--journal", &format!("journal-{n}.sqlite3")])
                    .env("BRIDGECTL_PASSPHRASE", PASS);
                cmd.spawn_with_stdin(tx.to_string().as_bytes())
            })
            .collect();
        let outs: Vec<_> = children.into_iter().map(|c| c.wait_with_output()).collect();
        let signed = outs.iter().filter(|o| o.status.success()).count();
        for o in outs.iter().filter(|o| !o.status.success()) {
            let err = stderr(o);
            assert_eq!(o.status.code(), Some(3), "{err}");
            assert!(err.contains("spending limit 10 ST per 24h"), "{err}");
        }
        assert_eq!(signed, 3, "floor(10 / 3) signatures");
        let mut cmd = dir.command();
        let entries = cmd.args(["--json", "log", "show"]).json();
        assert_eq!(entries.as_array().map(Vec::len), Some(3), "{entries:#}");
    }
);

bctest!(
    a_flow_that_outlived_its_lease_at_the_prompt_signs_nothing,
    |dir: Dir, _cmd: TestCommand| {
        import_key(&dir);
        let config = config(&dir, "");
        // M2: A verifies nonce 0 and waits for its passphrase (a FIFO nobody writes
        // yet) past its 2 s lease; B signs nonce 0 meanwhile; then A gets its answer.
        let fifo = dir.join("held.fifo");
        let st = Command::new("mkfifo")
            .args(["-m", "600"])
            .arg(&fifo)
            .status()
            .expect("mkfifo");
        assert!(st.success());
        let start = |amount: u128, pass_file: &Path| {
            let mut cmd = dir.command();
            cmd.args(["sign", "-", "--yes", "--expect-function", "redeem"])
                .args(["--expect-arg", &format!("_amount={amount}")])
                .args(["--nonce", "0"])
                .args([Path::new("--config"), &config])
                .args(["--journal", "journal.sqlite3"])
                .env("BRIDGECTL_RESERVATION_LEASE", "2s")
                .env("BRIDGECTL_PASSPHRASE_FILE", pass_file);
            cmd.spawn_with_stdin(redeem(0, amount).to_string().as_bytes())
        };
        let a = start(2 * ONE_ST, &fifo);
        // A is parked at the FIFO once it opened it: wait for that, then past the lease.
        let journal = dir.join("journal.sqlite3");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !crate::util::try_journal_rows(&journal).is_ok_and(|rows| !rows.is_empty()) {
            assert!(std::time::Instant::now() < deadline, "A never reserved");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        std::thread::sleep(std::time::Duration::from_millis(3000));
        let pass = dir.write("pass", format!("{PASS}\n"));
        let b = start(ONE_ST, &pass).wait_with_output();
        crate::util::assert_success(&Command::new("sign (B)"), &b);
        // A gets its passphrase now: it must sign nothing.
        let mut w = std::fs::OpenOptions::new()
            .write(true)
            .open(&fifo)
            .expect("fifo");
        std::io::Write::write_all(&mut w, format!("{PASS}\n").as_bytes()).expect("answer");
        drop(w);
        let a = a.wait_with_output();
        let err = stderr(&a);
        assert_eq!(a.status.code(), Some(3), "{err}");
        assert!(a.stdout.is_empty(), "A printed {:?}", a.stdout);
        assert!(err.contains("nonce 0") && err.contains("reserved"), "{err}");
        let mut cmd = dir.command();
        let entries = cmd.args(["--json", "log", "show"]).json();
        assert_eq!(
            entries.as_array().map(Vec::len),
            Some(1),
            "one signature: {entries:#}"
        );
        assert_eq!(entries[0]["entry"]["amount"], ONE_ST.to_string());
    }
);

bctest!(
    a_limit_the_profile_cannot_enforce_refuses_before_the_passphrase,
    |dir: Dir, _cmd: TestCommand| {
        import_key(&dir);
        // L1: a misspelled symbol, and a profile that does not say what ST is.
        let misspelled = config(
            &dir,
            "\n[profiles.default.policy.limits]\nsst = { max-per-tx = \"1\" }\n",
        );
        let (out, reads) = sign_redeem(&dir, &misspelled, 0, 8 * ONE_ST);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert_eq!(reads, 0);
        assert!(
            err.contains("\"sst\" names no token the profile knows (known: ST)"),
            "{err}"
        );
        let no_symbol = dir.write(
            "no-symbol.toml",
            format!(
                "[profiles.default]\nside_chain_id = 1337\nst_contract = \"{ST}\"\n\n\
                 [profiles.default.policy]\nmax-gas-price = 1000000000\n\n\
                 [profiles.default.policy.limits]\nst = {{ max-per-tx = \"1\" }}\n"
            ),
        );
        let (out, reads) = sign_redeem(&dir, &no_symbol, 0, 8 * ONE_ST);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert_eq!(reads, 0);
        assert!(
            err.contains("names no token the profile knows (known: none"),
            "{err}"
        );
    }
);

#[test]
fn a_fee_to_a_stranger_is_refused_online_and_the_stranger_receives_nothing() {
    let live = crate::live::Live::shared("log_online_fee");
    let sym = live.sb.info.side.symbol.clone();
    let allowed = alloy_primitives::Address::repeat_byte(0xa1);
    let attacker = alloy_primitives::Address::repeat_byte(0xee);
    live.add_to_profile(&format!(
        "\n[profiles.default.policy]\nallowed-destinations = [\"{allowed}\"]\n\n\
         [profiles.default.policy.limits]\n{} = {{ per = \"24h\", max = \"10\", max-per-tx = \"8\" }}\n",
        sym.to_lowercase()
    ));
    let one = 10u128.pow(u32::from(live.sb.info.side.decimals));
    let exec = |collector: alloy_primitives::Address, fee: u64| {
        let counter = CountingPassphrase::new(&live.dir, &live.passphrase);
        let mut c = live.cmd();
        c.env("BRIDGECTL_PASSPHRASE_FILE", &counter.path).args([
            "action",
            "exec",
            "transferWithFee",
            "--function",
            "transferWithFee",
            "--from",
            &live.dev.to_string(),
            "--input",
            &format!("_to={allowed}"),
            "--input",
            // Half an ST and a 10000 % fee: 50.5 in all, within the 100 a new account
            // holds (the platform estimates gas, so the call must not revert).
            &format!("_amount={}", one / 2),
            "--input",
            &format!("_feeCollector={collector}"),
            "--input",
            &format!("_fee={fee}"),
            "--yes",
        ]);
        let out = c.output();
        (out, counter.finish())
    };
    // H1 online: the platform builds the call the request names; the profile refuses it.
    let (out, reads) = exec(attacker, 10_000);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert_eq!(reads, 0, "the passphrase was read");
    assert!(err.contains("destination (_feeCollector)"), "{err}");
    // Fee to an allowed collector, but 50.5 over the 8 per transaction.
    let (out, reads) = exec(allowed, 10_000);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert_eq!(reads, 0);
    assert!(
        err.contains(&format!("spending limit 8 {sym} per transaction"))
            && err.contains(&format!("50.5 {sym} more")),
        "{err}"
    );
    // On chain: neither address received anything.
    assert_eq!(live.balance(true, attacker), alloy_primitives::U256::ZERO);
    assert_eq!(live.balance(true, allowed), alloy_primitives::U256::ZERO);
}

bctest!(
    a_second_journal_cannot_sign_a_signed_nonce_again,
    |dir: Dir, _cmd: TestCommand| {
        import_key(&dir);
        let config = config(&dir, "");
        let redeem_in = |amount: u128, journal: &str| {
            let args = [format!("_amount={amount}")];
            sign_with_journal(&dir, &config, &redeem(0, amount), "redeem", &args, journal)
        };
        let (first, reads) = redeem_in(ONE_ST, "a.sqlite3");
        crate::util::assert_success(&Command::new("sign --journal a"), &first);
        assert_eq!(reads, 1);
        // Journal b has never seen nonce 0; the keystore's signing log has: another
        // transaction at it is refused before the passphrase is read (without the check
        // made before unlocking, reads is 1; without any keystore-wide guard, it signs).
        let (out, reads) = redeem_in(2 * ONE_ST, "b.sqlite3");
        assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("at nonce 0 on chain 1337 already"),
            "{}",
            stderr(&out)
        );
        assert_eq!(reads, 0, "refused before the passphrase");
        // The very same transaction through journal b is the same bytes, recorded once.
        let (again, reads) = redeem_in(ONE_ST, "b.sqlite3");
        crate::util::assert_success(&Command::new("sign --journal b, same tx"), &again);
        assert_eq!(reads, 1);
        let signed = |out: &std::process::Output| {
            let bundle: Value = serde_json::from_slice(&out.stdout).expect("bundle");
            bundle["signedTx"].clone()
        };
        assert_eq!(signed(&again), signed(&first));
        let mut cmd = dir.command();
        let entries = cmd.args(["--json", "log", "show"]).json();
        assert_eq!(entries.as_array().expect("list").len(), 1, "{entries}");
    }
);

// The offline signer stopped in each crash window (failpoints, debug builds), then given
// the same request again. After the journal had the bytes: they are written again with
// the passphrase never read (not signed twice). Before the journal had them: once the
// stopped run's reservation has lapsed, it is signed again, which yields the same bytes
// and no second signing-log entry. Either way one signature, one entry. A different
// transaction at that nonce stays refused.
bctest!(
    an_offline_signature_stopped_in_either_crash_window_is_given_again,
    |dir: Dir, _cmd: TestCommand| {
        import_key(&dir);
        let config = config(&dir, "");
        let args = [format!("_amount={ONE_ST}")];
        let sign_once = |nonce: u64, failpoint: Option<&str>| {
            let fifo = CountingPassphrase::new(&dir, PASS);
            let mut cmd = dir.command();
            cmd.args(["sign", "-", "--yes", "--raw", "--expect-function", "redeem"])
                .args(["--expect-arg", &args[0], "--nonce", &nonce.to_string()])
                .args([Path::new("--config"), &config])
                .args(["--journal", "journal.sqlite3"])
                .env("BRIDGECTL_RESERVATION_LEASE", "1s")
                .env("BRIDGECTL_PASSPHRASE_FILE", &fifo.path);
            if let Some(f) = failpoint {
                cmd.env("BRIDGECTL_FAILPOINT", f);
            }
            let tx = redeem(nonce, ONE_ST);
            let out = cmd.output_with_stdin(tx.to_string().as_bytes());
            (out, fifo.finish())
        };
        for (nonce, window, reads_again) in [
            (0u64, "journaled-not-sent", 0),
            (1, "signed-not-journaled", 1),
        ] {
            let (out, _) = sign_once(nonce, Some(window));
            crate::util::assert_aborted(&out, window);
            assert!(
                out.stdout.is_empty(),
                "{window}: output before the failpoint"
            );
            // Past the stopped run's 1 s reservation.
            std::thread::sleep(std::time::Duration::from_millis(1500));
            let (again, reads) = sign_once(nonce, None);
            crate::util::assert_success(&Command::new(window), &again);
            assert_eq!(reads, reads_again, "{window}: passphrase reads");
            let mut cmd = dir.command();
            let entries = cmd.args(["--json", "log", "show"]).json();
            let entries = entries.as_array().expect("entries");
            assert_eq!(entries.len() as u64, nonce + 1, "{window}: one entry");
            let logged = entries.last().expect("entry")["entry"]["txHash"].clone();
            let decoded = alloy_primitives::keccak256(
                alloy_primitives::hex::decode(String::from_utf8_lossy(&again.stdout).trim())
                    .expect("hex"),
            );
            assert_eq!(
                logged,
                decoded.to_string(),
                "{window}: the logged transaction"
            );
        }
        // Another transaction at a nonce signed here is still refused, unread.
        let other = [format!("_amount={}", 2 * ONE_ST)];
        let (out, reads) = sign(&dir, &config, &redeem(0, 2 * ONE_ST), "redeem", &other);
        assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
        assert_eq!(reads, 0);
    }
);

bctest!(
    an_offline_journal_behind_the_key_suggests_the_nonce,
    |dir: Dir, _cmd: TestCommand| {
        import_key(&dir);
        let config = config(&dir, "");
        let (out, _) = sign_redeem(&dir, &config, 0, ONE_ST);
        crate::util::assert_success(&Command::new("sign"), &out);
        // The key signed nonces 1 and 2 elsewhere (online, another machine): this journal
        // knows only 0, so nonce 3 looks like a gap. The refusal says how to go on.
        let fifo = CountingPassphrase::new(&dir, PASS);
        let mut cmd = dir.command();
        cmd.args(["sign", "-", "--yes", "--expect-function", "redeem"])
            .args(["--expect-arg", &format!("_amount={ONE_ST}")])
            .args([Path::new("--config"), &config])
            .args(["--journal", "journal.sqlite3"])
            .env("BRIDGECTL_PASSPHRASE_FILE", &fifo.path);
        let out = cmd.output_with_stdin(redeem(3, ONE_ST).to_string().as_bytes());
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert_eq!(fifo.finish(), 0, "a refusal never reads the passphrase");
        assert!(
            err.contains("expected 1 (the sender's next nonce, from the journal), found 3: a gap by the journal's count")
                && err.contains("give the sender's next nonce")
                && err.contains("hint: `--nonce N` gives the sender's next nonce"),
            "{err}"
        );
    }
);

// `tx decode --json` says `from` as its text does, and gives the call's arguments by
// name, as the signing log and a request's intent do.
bctest!(
    tx_decode_json_names_the_sender_from_and_the_args_by_name,
    |dir: Dir, _cmd: TestCommand| {
        import_key(&dir);
        let config = config(&dir, "");
        let to = "0x1111111111111111111111111111111111111111";
        let (out, _) = sign_transfer(&dir, &config, to);
        crate::util::assert_success(&Command::new("sign"), &out);
        let bundle = dir.write("bundle.json", &out.stdout);
        let mut c = dir.command();
        c.args(["--json", "tx", "decode"]).args([&bundle]);
        let d = c.json();
        let from: alloy_primitives::Address = FROM.parse().expect("address");
        assert_eq!(d["from"], from.to_checksum(None), "{d:#}");
        assert!(d.get("sender").is_none(), "{d:#}");
        assert_eq!(
            d["call"],
            json!({"function": "transfer(address,uint256)",
                   "args": {"_to": to, "_value": ONE_ST.to_string()}}),
            "{d:#}"
        );
    }
);

// README "Setting up the offline machine": a keystore copied whole carries its log (a
// nonce signed before the copy is refused there); a key copied alone, or exported and
// imported, starts a log of its own, so two machines with the same key can each sign the
// same nonce.
bctest!(
    two_machines_with_one_key_each_keep_their_own_log,
    |dir: Dir, _cmd: TestCommand| {
        import_key(&dir);
        let config = config(&dir, "");
        let (out, _) = sign_redeem(&dir, &config, 0, ONE_ST);
        crate::util::assert_success(&Command::new("sign"), &out);
        // Another transaction at nonce 0, on "another machine": keystore `keystore`,
        // journal of its own.
        let sign_elsewhere = |keystore: &str| {
            let mut cmd = dir.command();
            cmd.args(["--keystore", keystore, "sign", "-", "--yes", "--nonce", "0"])
                .args(["--expect-function", "redeem"])
                .args(["--expect-arg", &format!("_amount={}", 2 * ONE_ST)])
                .args([Path::new("--config"), &config])
                .args(["--journal", &format!("{keystore}.sqlite3")])
                .env("BRIDGECTL_PASSPHRASE", PASS);
            cmd.output_with_stdin(redeem(0, 2 * ONE_ST).to_string().as_bytes())
        };
        let copy = |from: &Path, to: &Path, only_keys: bool| {
            std::fs::create_dir_all(to).expect("mkdir");
            for entry in std::fs::read_dir(from).expect("keystore") {
                let path = entry.expect("entry").path();
                if !only_keys || path.extension().is_some_and(|e| e == "key") {
                    std::fs::copy(&path, to.join(path.file_name().expect("name"))).expect("copy");
                }
            }
        };
        use std::os::unix::fs::PermissionsExt;
        let private = |d: &Path| {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700)).expect("chmod")
        };
        // The whole directory: its log knows nonce 0.
        copy(&dir.keystore(), &dir.join("whole"), false);
        private(&dir.join("whole"));
        assert!(dir.join("whole/signing-log.sqlite3.checkpoint").exists());
        let out = sign_elsewhere("whole");
        assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
        assert!(stderr(&out).contains("nonce"), "{}", stderr(&out));
        // The key file alone: a log of its own, which never saw nonce 0.
        copy(&dir.keystore(), &dir.join("keys"), true);
        private(&dir.join("keys"));
        let out = sign_elsewhere("keys");
        crate::util::assert_success(&Command::new("sign"), &out);
        // Exported and imported: the same.
        let mut export = dir.command();
        export
            .args(["key", "export", "k", "--out", "k.json", "--unsafe-test-kdf"])
            .env("BRIDGECTL_PASSPHRASE", PASS);
        export.stdout();
        let mut import = dir.command();
        import
            .args([
                "--keystore",
                "imported",
                "key",
                "import",
                "k",
                "--web3",
                "k.json",
            ])
            .args(["--unsafe-test-kdf"])
            .env("BRIDGECTL_PASSPHRASE", PASS);
        import.stdout();
        let out = sign_elsewhere("imported");
        crate::util::assert_success(&Command::new("sign"), &out);
    }
);

/// A redeem of `amount` at `nonce` signed with `journal`: each journal is another
/// machine's or process's idea of which nonces are taken, so only the keystore's
/// signing log stands between a signed nonce and a second transaction at it.
fn redeem_in(
    dir: &Dir,
    config: &Path,
    nonce: u64,
    amount: u128,
    journal: &str,
) -> (std::process::Output, usize) {
    let args = [format!("_amount={amount}")];
    sign_with_journal(
        dir,
        config,
        &redeem(nonce, amount),
        "redeem",
        &args,
        journal,
    )
}

/// The key imported and a redeem of 1 ST signed at nonce 0 (journal `a.sqlite3`) under
/// a profile without limits, which is returned.
fn nonce_zero_signed(dir: &Dir) -> PathBuf {
    import_key(dir);
    let config = config(dir, "");
    let (out, _) = redeem_in(dir, &config, 0, ONE_ST, "a.sqlite3");
    crate::util::assert_success(&Command::new("sign"), &out);
    config
}

/// Both slots of the checkpoint kept beside `keystore`'s signing log zeroed (a block
/// lost in a power cut, twice).
fn spoil_checkpoint(keystore: &Path) {
    let kept = keystore.join("signing-log.sqlite3.checkpoint");
    let len = std::fs::metadata(&kept).expect("kept").len();
    std::fs::write(&kept, vec![0u8; usize::try_from(len).expect("len")]).expect("spoil");
}

/// Runs `sql` on the keystore's signing log, as anyone who can write the file can.
fn edit_log(dir: &Dir, sql: &str) {
    rusqlite::Connection::open(dir.keystore().join("signing-log.sqlite3"))
        .expect("open")
        .execute_batch(sql)
        .expect(sql);
}

/// Removes the keystore's signing log (its -wal and -shm too), keeping the checkpoint
/// kept beside it.
fn delete_log(dir: &Dir) {
    for f in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(dir.keystore().join(format!("signing-log.sqlite3{f}")));
    }
}

/// `log acknowledge --yes` with the passphrase from a counting FIFO: the output and the
/// reads.
fn acknowledge_counted(dir: &Dir) -> (std::process::Output, usize) {
    let fifo = CountingPassphrase::new(dir, PASS);
    let mut cmd = dir.command();
    cmd.args(["log", "acknowledge", "--yes"])
        .env("BRIDGECTL_PASSPHRASE_FILE", &fifo.path);
    let out = cmd.output();
    (out, fifo.finish())
}

/// Asserts a refusal (exit 3) that read no passphrase and names `want`.
fn assert_refused(out: &(std::process::Output, usize), want: &str) {
    let err = stderr(&out.0);
    assert_eq!(out.0.status.code(), Some(3), "{want}: {err}");
    assert_eq!(out.1, 0, "{want}: the passphrase was read");
    assert!(err.contains(want), "{want:?} not in {err}");
}

// Issue 51, 1: the key column rewritten with SQLite (no key needed). Signing finds a key's
// entries by what the signed bodies say: a different transaction at the signed nonce,
// from a fresh journal, is refused by the entry itself, before the passphrase.
bctest!(
    an_edited_key_column_lets_no_second_transaction_at_a_signed_nonce_be_signed,
    |dir: Dir, _cmd: TestCommand| {
        let config = nonce_zero_signed(&dir);
        edit_log(&dir, "UPDATE entries SET key = lower(key)");
        assert_refused(
            &redeem_in(&dir, &config, 0, 2 * ONE_ST, "b.sqlite3"),
            "signed another transaction at nonce 0 on chain 1337 already (transaction 0x",
        );
        // An edit the columns' check sees (another address) refuses every signature.
        edit_log(
            &dir,
            "UPDATE entries SET key = '0x0000000000000000000000000000000000000001'",
        );
        assert_refused(
            &redeem_in(&dir, &config, 1, ONE_ST, "b.sqlite3"),
            "entry 1: its index columns disagree with its signed body: the row was edited",
        );
    }
);

// Issue 51, 2 and 10a: the log deleted, its checkpoint kept, acknowledged: the nonce it
// signed stays signed (the watermark the checkpoint kept, carried into the log), and the
// prompt says so; the next nonce signs. A log whose entries do not hold is refused by
// `log acknowledge` with exit 3 before the passphrase is read.
bctest!(
    an_acknowledged_lost_log_keeps_its_signed_nonces,
    |dir: Dir, _cmd: TestCommand| {
        let config = nonce_zero_signed(&dir);
        delete_log(&dir);
        assert_refused(
            &redeem_in(&dir, &config, 1, ONE_ST, "b.sqlite3"),
            "does not reach its checkpoint 1:",
        );
        let (out, reads) = acknowledge_counted(&dir);
        crate::util::assert_success(&Command::new("log acknowledge"), &out);
        assert_eq!(reads, 1);
        let err = stderr(&out);
        assert!(
            err.contains(&format!(
                "watermark carried forward: {} on chain 1337: nonces up to 0 signed",
                FROM.parse::<alloy_primitives::Address>().expect("from")
            )),
            "{err}"
        );
        assert_refused(
            &redeem_in(&dir, &config, 0, 2 * ONE_ST, "b.sqlite3"),
            "signed nonce 0 on chain 1337 already (its watermark there is nonce 0)",
        );
        let (out, reads) = redeem_in(&dir, &config, 1, ONE_ST, "b.sqlite3");
        crate::util::assert_success(&Command::new("sign nonce 1"), &out);
        assert_eq!(reads, 1);

        // 10a: an entry's amount edited: nothing to acknowledge, refused unasked.
        edit_log(
            &dir,
            "UPDATE entries SET body = replace(body, '\"amount\":\"1', '\"amount\":\"2') \
             WHERE seq = 2",
        );
        assert_refused(
            &acknowledge_counted(&dir),
            "entry 2: its contents do not match",
        );
    }
);

// Issue 51, 4: both slots of the kept checkpoint spoiled. Signing refuses before the
// passphrase and names the way on; `log verify` says the entries hold but the checkpoint
// cannot be read (exit 3); `log acknowledge` rebuilds it from the log, and the nonce the
// log signed stays signed.
bctest!(
    a_spoiled_checkpoint_is_acknowledged_and_its_nonces_stay_signed,
    |dir: Dir, _cmd: TestCommand| {
        let config = nonce_zero_signed(&dir);
        spoil_checkpoint(&dir.keystore());
        let refused = redeem_in(&dir, &config, 1, ONE_ST, "b.sqlite3");
        assert_refused(&refused, "neither of its two slots holds a checkpoint");
        assert!(
            stderr(&refused.0).contains("hint: `bridgectl log verify` checks the log; once you know why, `bridgectl log acknowledge`"),
            "{}",
            stderr(&refused.0)
        );
        let out = log_cmd(&dir, &dir.keystore(), &["verify"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert!(
            err.contains("its 1 entries hold") && err.contains("cannot be read"),
            "{err}"
        );
        let (out, reads) = acknowledge_counted(&dir);
        crate::util::assert_success(&Command::new("log acknowledge"), &out);
        assert_eq!(reads, 1);
        assert!(stderr(&out).contains("cannot be read"), "{}", stderr(&out));
        let out = log_cmd(&dir, &dir.keystore(), &["verify"]);
        crate::util::assert_success(&Command::new("log verify"), &out);
        assert_refused(
            &redeem_in(&dir, &config, 0, 2 * ONE_ST, "b.sqlite3"),
            "signed another transaction at nonce 0",
        );
        let (out, reads) = redeem_in(&dir, &config, 1, ONE_ST, "b.sqlite3");
        crate::util::assert_success(&Command::new("sign nonce 1"), &out);
        assert_eq!(reads, 1);
    }
);

// Issue 51, 3: a window longer than the checkpoint carries spending for is refused, with
// both lengths named, before the passphrase.
bctest!(
    a_window_longer_than_the_checkpoint_carries_is_refused,
    |dir: Dir, _cmd: TestCommand| {
        import_key(&dir);
        let config = config(
            &dir,
            "\n[profiles.default.policy.limits]\nst = { per = \"60d\", max = \"10\" }\n",
        );
        assert_refused(
            &sign_redeem(&dir, &config, 0, ONE_ST),
            "policy limit st: per = \"60d\" is longer than the signing log carries spending (31d",
        );
    }
);

// Issue 51, 4, online: the log lost and its checkpoint spoiled, the profile's nodes are the
// witnesses an acknowledgement asks: the key's nonce count on each chain becomes a
// watermark carried into the log, so the nonce the chain saw is never signed again.
#[test]
fn an_online_acknowledgement_takes_each_chains_nonce_count_as_a_witness() {
    let live = crate::live::Live::shared("log_ack_chain");
    let dev = live.dev.to_string();
    let out = live.ok(&["redeem", "--from", &dev, "--amount", "0.01", "--yes"]);
    assert_eq!(out["status"], "completed", "{out:#}");
    spoil_checkpoint(&live.dir.keystore());
    delete_log(&live.dir);
    let mut c = live.cmd();
    c.args(["--json", "log", "acknowledge", "--yes"]);
    let out = live.run_ok(c);
    let err = stderr(&out);
    let side = live.sb.info.side.chain_id;
    assert!(
        err.contains(&format!(
            "chain {side}'s node (side_rpc_url): {} sent 1 transaction(s)",
            live.dev
        )),
        "{err}"
    );
    let ack = crate::util::strict_json(&String::from_utf8_lossy(&out.stdout));
    let marks = ack["watermarks"].as_array().expect("watermarks");
    assert!(
        marks.iter().any(|w| w["chainId"] == side
            && w["nonce"] == 0
            && w["key"]
                .as_str()
                .is_some_and(|k| k.eq_ignore_ascii_case(&dev))),
        "{ack:#}"
    );
    // The log holds the acknowledgement, which carries them.
    let entries = live.ok(&["log", "show"]);
    assert_eq!(
        entries[0]["entry"]["watermarks"], ack["watermarks"],
        "{entries:#}"
    );
}

// Issue 51, 9: the offline batch signer's own nonce guard. Key k signed nonce 0 through
// journal a; a batch signed through journal b holds another transaction of k at nonce 0
// and one of key l. k's item is refused before k's passphrase is read, and l's item is
// signed: without the guard in the batch's check, k's key would be unlocked and the
// signing log's append would refuse the whole group, l's item with it.
bctest!(
    a_batch_item_at_a_signed_nonce_is_refused_before_its_key_is_unlocked,
    |dir: Dir, _cmd: TestCommand| {
        let config = nonce_zero_signed(&dir);
        let other = "0x1111111111111111111111111111111111111111111111111111111111111111";
        crate::offline::import_key_as(&dir, "l", other);
        let l =
            alloy_signer_local::PrivateKeySigner::from_bytes(&other.parse().expect("key bytes"))
                .expect("key")
                .address();
        let st = |n: u128| alloy_primitives::U256::from(n * ONE_ST);
        crate::util::redeem_batch_file(
            &dir,
            "batch.json",
            &[(FROM.parse().expect("k"), 0, st(2)), (l, 0, st(1))],
        );
        let fifos = [
            CountingPassphrase::new(&dir, PASS),
            CountingPassphrase::new(&dir, PASS),
        ];
        let auto = dir.write(
            "auto.toml",
            format!(
                "{}\n[[profiles.default.policy.auto-approve]]\nfunction = \"redeem\"\ntoken = \"ST\"\nmax = \"5\"\n",
                std::fs::read_to_string(&config).expect("config")
            ),
        );
        let mut cmd = dir.command();
        cmd.args(["sign", "batch.json", "--out", "signed.json", "--yes"])
            .args([Path::new("--config"), &auto])
            .args(["--journal", "b.sqlite3"])
            .args(["--nonce-for", "k=0", "--nonce-for", "l=0"]);
        for (label, fifo) in ["k", "l"].iter().zip(&fifos) {
            cmd.args([
                "--passphrase-file-for",
                &format!("{label}={}", fifo.path.display()),
            ]);
        }
        let out = cmd.output();
        let [k_reads, l_reads] = fifos.map(CountingPassphrase::finish);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(9), "one item left out: {err}");
        assert_eq!((k_reads, l_reads), (0, 1), "{err}");
        let signed: Value =
            serde_json::from_slice(&std::fs::read(dir.join("signed.json")).expect("signed"))
                .expect("json");
        assert_eq!(
            signed["items"].as_array().map(Vec::len),
            Some(1),
            "{signed:#}"
        );
        assert!(
            signed["refused"][0]["reason"]
                .as_str()
                .is_some_and(|r| r.contains("signed another transaction at nonce 0")),
            "{signed:#}"
        );
    }
);
