//! The air gap at batch scale against a live sandbox: a batch prepared online into one
//! request file, signed on an "offline machine" (a keystore, profile and journal of its
//! own, no platform) by one `bridgectl sign` process with one question and each key's
//! passphrase read once, then submitted and followed with `batch submit`, every item's
//! redemption checked against the chain's own `Redeem` logs. The offline process is
//! killed mid-batch (at a group commit, by abort and by a real SIGKILL) and run again:
//! each commit is whole or absent, and the bytes are the same. A request item tampered
//! with on its way (another amount) is refused offline and never signed; a signed item
//! whose bytes differ from what was prepared is refused online and never sent.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, U256};
use serde_json::Value;

use crate::batch::{assert_each_item_redeemed_once, parse_results, payers_with_keys, redeem_items};
use crate::live::Live;
use crate::util::{CountingPassphrase, Dir, TestCommand};

/// The offline machine: a keystore holding each of `keys` (label `payer{i}`, hex key)
/// under a passphrase of its own (`pass-{i}`), and a profile that names the side chain's
/// ST contract, a gas-price cap and a standing approval of redeems up to 5 ST (the
/// operator's pin, so that `--yes` may sign them).
fn offline_machine(live: &Live, name: &'static str, keys: &[String]) -> Dir {
    let offline = Dir::new(name);
    let side = &live.sb.info.side;
    offline.write(
        "xdg/config/bridgectl/config.toml",
        format!(
            "[profiles.default]\nside_chain_id = {}\nst_contract = \"{}\"\n\
             side_symbol = \"{}\"\nside_decimals = {}\n\n\
             [profiles.default.policy]\nmax-gas-price = 1000000000000\n\n\
             [profiles.default.policy.limits]\nst = {{ per = \"24h\", max = \"1000\" }}\n\n\
             [[profiles.default.policy.auto-approve]]\nfunction = \"redeem\"\ntoken = \"ST\"\nmax = \"5\"\n",
            side.chain_id, side.token_address, side.symbol, side.decimals
        ),
    );
    for (i, key) in keys.iter().enumerate() {
        let pass = offline.write(format!("pass-{i}"), format!("{}\n", passphrase(live, i)));
        let out = offline
            .command()
            .env("BRIDGECTL_PASSPHRASE_FILE", &pass)
            .args([
                "key",
                "import",
                &format!("payer{i}"),
                "--raw",
                "--unsafe-test-kdf",
            ])
            .output_with_stdin(format!("{key}\n").as_bytes());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    offline
}

/// [`offline_machine`] with the keys of `payers`, and the request `batch prepare` wrote
/// (`requests.json`) carried to it.
fn offline_with_request(
    live: &Live,
    name: &'static str,
    payers: &[(Address, U256, String)],
) -> Dir {
    let keys: Vec<String> = payers.iter().map(|(_, _, k)| k.clone()).collect();
    let offline = offline_machine(live, name, &keys);
    std::fs::copy(
        live.dir.join("requests.json"),
        offline.join("requests.json"),
    )
    .expect("copy");
    offline
}

/// The passphrase of payer `i`'s key on the offline machine: each its own.
fn passphrase(live: &Live, i: usize) -> String {
    format!("{}-offline-{i}", live.passphrase)
}

/// `bridgectl sign REQUEST --out OUT` on the offline machine with a counted passphrase
/// per key (`--passphrase-file-for payerI=FIFO`), each sender's next nonce given:
/// `senders` are (payer index, next nonce).
fn offline_sign(
    live: &Live,
    offline: &Dir,
    senders: &[(usize, u64)],
    request: &str,
    out: &str,
    extra: &[&str],
) -> (TestCommand, Vec<CountingPassphrase>) {
    let fifos: Vec<CountingPassphrase> = senders
        .iter()
        .map(|(i, _)| CountingPassphrase::new(offline, &passphrase(live, *i)))
        .collect();
    let mut c = offline.command();
    c.args([
        "sign",
        request,
        "--out",
        out,
        "--journal",
        "offline-journal.sqlite3",
        "--yes",
    ]);
    for ((i, nonce), fifo) in senders.iter().zip(&fifos) {
        c.args(["--nonce-for", &format!("payer{i}={nonce}")]);
        c.args([
            "--passphrase-file-for",
            &format!("payer{i}={}", fifo.path.display()),
        ]);
    }
    c.args(extra);
    (c, fifos)
}

/// [`offline_sign`] of `request` into `out`, which must succeed, and `out` carried back
/// to the online machine: how often each key's passphrase was read.
fn signed_and_carried(
    live: &Live,
    offline: &Dir,
    senders: &[(usize, u64)],
    request: &str,
    out: &str,
) -> Vec<usize> {
    let (mut c, fifos) = offline_sign(live, offline, senders, request, out, &[]);
    let output = c.output();
    crate::util::assert_success(&c.cmd, &output);
    std::fs::copy(offline.join(out), live.dir.join(out)).expect("copy");
    reads(fifos)
}

/// Each FIFO's reads: how often each key's passphrase was read.
fn reads(fifos: Vec<CountingPassphrase>) -> Vec<usize> {
    fifos.into_iter().map(CountingPassphrase::finish).collect()
}

/// `SELECT count(*) ...` on a database file, read-only (what is on disk).
fn count(db: &Path, sql: &str) -> i64 {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("open read-only");
    c.query_row(sql, [], |r| r.get(0)).expect(sql)
}

/// Entries in the offline machine's signing log, and its journal's signed flows.
fn on_disk(offline: &Dir) -> (i64, i64) {
    let log = offline.keystore().join("signing-log.sqlite3");
    let journal = offline.join("offline-journal.sqlite3");
    (
        if log.exists() {
            count(&log, "SELECT count(*) FROM entries")
        } else {
            0
        },
        if journal.exists() {
            count(
                &journal,
                "SELECT count(*) FROM flows WHERE signed_tx IS NOT NULL",
            )
        } else {
            0
        },
    )
}

/// `batch submit SIGNED --json`: the check line, the items' lines, the summary.
fn submit(live: &Live, signed: &Path, exit: i32) -> (Value, Vec<Value>, Value) {
    let mut c = live.cmd();
    c.args(["--json", "batch", "submit"]).arg_path(signed);
    let out = c.output();
    live.check_secrets(&out);
    assert_eq!(
        out.status.code(),
        Some(exit),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (first, rest) = text.split_once('\n').expect("lines");
    let checked: Value = crate::util::strict_json(first);
    let (items, summary) = parse_results(rest.as_bytes());
    (checked["checked"].clone(), items, summary)
}

trait ArgPath {
    fn arg_path(&mut self, p: &Path) -> &mut Self;
}

impl ArgPath for TestCommand {
    fn arg_path(&mut self, p: &Path) -> &mut Self {
        self.cmd.arg(p);
        self
    }
}

/// `n` funded payers (with their keys) and `per` redeems of each, each of its own
/// amount, written to `payouts.jsonl`: the payers, their MT balances, the items.
#[allow(clippy::type_complexity)]
fn payouts(
    live: &mut Live,
    n: usize,
    per: usize,
) -> (
    Vec<(Address, U256, String)>,
    Vec<(Address, U256)>,
    Vec<(Address, U256)>,
) {
    let payers = payers_with_keys(live, n);
    let balances: Vec<(Address, U256)> = payers.iter().map(|(a, m, _)| (*a, *m)).collect();
    let (text, items) = redeem_items(&balances, per);
    live.dir.write("payouts.jsonl", &text);
    (payers, balances, items)
}

#[test]
fn two_hundred_redeems_cross_the_air_gap_signed_in_one_sitting_and_a_kill_changes_no_byte() {
    let mut live = Live::new("airgap_batch");
    let (payers, balances, items) = payouts(&mut live, 4, 50);

    // Online: one request file, nothing signed, no passphrase read.
    let counter = CountingPassphrase::new(&live.dir, &live.passphrase);
    let mut c = live.cmd();
    c.env("BRIDGECTL_PASSPHRASE_FILE", &counter.path).args([
        "--json",
        "batch",
        "prepare",
        "payouts.jsonl",
        "--out",
        "requests.json",
    ]);
    let prepared = live.ok_cmd(c);
    assert_eq!(counter.finish(), 0, "prepare reads no passphrase");
    assert_eq!(prepared["prepared"], 200, "{prepared:#}");
    let senders = prepared["senders"].as_array().expect("senders");
    assert_eq!(senders.len(), 4);
    let nonces: Vec<(usize, u64)> = payers
        .iter()
        .enumerate()
        .map(|(i, (a, _, _))| (i, live.nonce(true, *a)))
        .collect();
    for s in senders {
        assert_eq!(s["items"], 50, "{s:#}");
        let from: Address = s["from"].as_str().expect("from").parse().expect("address");
        let i = payers
            .iter()
            .position(|(a, _, _)| *a == from)
            .expect("a payer");
        assert_eq!(
            s["firstNonce"], nonces[i].1,
            "each sender from its next nonce: {s:#}"
        );
    }
    assert!(
        live.journal_rows().iter().all(|r| r.2.is_none()),
        "nothing is signed online"
    );
    assert_eq!(live.ok(&["log", "show"]), serde_json::json!([]));

    // The USB stick: the request crosses as a file.
    let offline = offline_with_request(&live, "airgap_batch_offline", &payers);

    // 1. Killed by an abort after the second group's signatures were logged, before the
    //    journal recorded them: the log has two groups, the journal one, no file.
    let (mut c, fifos) = offline_sign(
        &live,
        &offline,
        &nonces,
        "requests.json",
        "signed.json",
        &["--commit-every", "32"],
    );
    c.env("BRIDGECTL_FAILPOINT", "batch-logged-not-journaled:2");
    let out = c.output();
    crate::util::assert_aborted(&out, "the first offline run");
    assert_eq!(
        reads(fifos),
        [1, 1, 1, 1],
        "each key's passphrase read once"
    );
    assert_eq!(on_disk(&offline), (64, 32), "whole groups only");
    assert!(!offline.join("signed.json").exists());
    let journaled_first = crate::util::journal_rows(&offline.join("offline-journal.sqlite3"));

    // 2. Run again, and SIGKILLed while it waits right after its third group's journal
    //    commit (items 32..63 signed again: the same bytes, logged once; 64..79 new).
    let (mut c, fifos) = offline_sign(
        &live,
        &offline,
        &nonces,
        "requests.json",
        "signed.json",
        &["--commit-every", "16"],
    );
    c.env("BRIDGECTL_FAILPOINT", "batch-journaled:3:hang");
    c.cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = crate::util::KillOnDrop::spawn(&mut c.cmd);
    let deadline = Instant::now() + Duration::from_secs(120);
    while on_disk(&offline).1 < 80 {
        assert!(
            Instant::now() < deadline,
            "no third group: {:?}",
            on_disk(&offline)
        );
        assert!(
            child.try_wait().expect("try_wait").is_none(),
            "it ended on its own"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().expect("SIGKILL");
    let status = child.wait().expect("reap");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
    assert_eq!(reads(fifos), [1, 1, 1, 1]);
    assert_eq!(on_disk(&offline), (80, 80), "whole groups only");
    assert!(!offline.join("signed.json").exists());

    // 3. Run to the end.
    let (c, fifos) = offline_sign(
        &live,
        &offline,
        &nonces,
        "requests.json",
        "signed.json",
        &["--commit-every", "64", "--json"],
    );
    let mut c = c;
    let out = c.output();
    crate::util::assert_success(&c.cmd, &out);
    live.check_secrets(&out);
    assert_eq!(
        reads(fifos),
        [1, 1, 1, 1],
        "each key's passphrase read once"
    );
    let summary = crate::util::strict_json(&String::from_utf8_lossy(&out.stdout));
    crate::json::assert_schema("sign-batch", &summary);
    assert_eq!(
        (&summary["signed"], &summary["signedBefore"]),
        (&serde_json::json!(120), &serde_json::json!(80)),
        "{summary:#}"
    );
    assert_eq!(on_disk(&offline), (200, 200));
    let bundle = std::fs::read(offline.join("signed.json")).expect("signed batch");
    let signed = bridgectl_tx::batch::SignedBatch::parse(&bundle).expect("a signed batch");
    assert_eq!((signed.items.len(), signed.refused.len()), (200, 0));

    // The same bytes whatever the kills: what the first run journaled, what the log holds.
    for (tx_id, _, signed_tx) in &journaled_first {
        let Some(hex) = signed_tx else { continue };
        let item = signed
            .items
            .iter()
            .find(|i| i.tx_id == *tx_id)
            .expect("in the bundle");
        assert_eq!(*hex, item.signed_tx.to_string(), "flow {tx_id}");
    }
    let log = rusqlite::Connection::open_with_flags(
        offline.keystore().join("signing-log.sqlite3"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("log");
    let mut logged: Vec<String> = log
        .prepare("SELECT json_extract(body, '$.txHash') FROM entries")
        .expect("query")
        .query_map([], |r| r.get(0))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("hashes");
    let mut hashes: Vec<String> = signed.items.iter().map(|i| i.tx_hash.to_string()).collect();
    logged.sort();
    hashes.sort();
    assert_eq!(
        logged, hashes,
        "one log entry per signature, the bundle's bytes"
    );
    // And again: the same file, byte for byte, with nothing unlocked.
    let (mut c, fifos) = offline_sign(&live, &offline, &nonces, "requests.json", "again.json", &[]);
    let out = c.output();
    crate::util::assert_success(&c.cmd, &out);
    assert_eq!(reads(fifos), [0, 0, 0, 0], "nothing to unlock");
    assert_eq!(
        std::fs::read(offline.join("again.json")).expect("again"),
        bundle
    );
    let verified = offline.command().args(["--json", "log", "verify"]).json();
    assert_eq!(verified["ok"], true, "{verified:#}");

    // Online again: every item checked against what was prepared, then sent and followed.
    std::fs::copy(offline.join("signed.json"), live.dir.join("signed.json")).expect("copy");
    let (checked, results, summary) = submit(&live, &live.dir.join("signed.json"), 0);
    assert_eq!(checked["accepted"], 200, "{checked:#}");
    assert_eq!(checked["requestMatches"], true);
    assert_eq!(results.len(), 200);
    assert_eq!(summary["completed"], 200, "{summary:#}");
    assert_each_item_redeemed_once(&live, &balances, &items);
    // Submitted again: every item reported as it ended, nothing sent twice.
    let (checked, _, summary) = submit(&live, &live.dir.join("signed.json"), 0);
    assert_eq!(checked["acceptedBefore"], 200, "{checked:#}");
    assert_eq!(summary["ran"], 0, "{summary:#}");
    assert_each_item_redeemed_once(&live, &balances, &items);
}

/// The amount of a redeem's calldata replaced by `amount`: another transaction with the
/// same function.
fn with_amount(raw_tx: &mut Value, amount: U256) {
    let data = bridgectl_tx::calldata::encode(
        "redeem",
        &[("_amount".to_owned(), amount.to_string())].into(),
    )
    .expect("calldata");
    raw_tx["data"] = Value::String(format!("0x{}", hex::encode(data)));
}

/// The request file `name` of `dir`, with item `index` changed by `change`.
fn tampered(dir: &Path, name: &str, index: usize, change: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut doc: Value =
        serde_json::from_slice(&std::fs::read(dir.join(name)).expect("request")).expect("json");
    change(&mut doc["items"][index]);
    serde_json::to_vec_pretty(&doc).expect("json")
}

#[test]
fn a_tampered_item_is_refused_offline_and_bytes_other_than_prepared_are_refused_online() {
    let mut live = Live::new("airgap_tamper");
    let (payers, balances, items) = payouts(&mut live, 2, 4);
    live.ok(&[
        "batch",
        "prepare",
        "payouts.jsonl",
        "--out",
        "requests.json",
    ]);
    let keys: Vec<String> = payers.iter().map(|(_, _, k)| k.clone()).collect();
    let offline = offline_machine(&live, "airgap_tamper_offline", &keys);
    let nonces: Vec<(usize, u64)> = balances
        .iter()
        .enumerate()
        .map(|(i, (a, _))| (i, live.nonce(true, *a)))
        .collect();

    // On its way the request's item 2 (payer0's second) asks for another amount; its
    // intent still says the amount asked for.
    let other = U256::from(7u64) * U256::from(10u64).pow(U256::from(15u64));
    let bad = tampered(live.dir.path(), "requests.json", 2, |item| {
        with_amount(&mut item["rawTx"], other)
    });
    offline.write("requests.json", &bad);
    let (mut c, fifos) = offline_sign(
        &live,
        &offline,
        &nonces,
        "requests.json",
        "signed.json",
        &[],
    );
    let out = c.output();
    let err = String::from_utf8_lossy(&out.stderr);
    // The signed batch is written with the rest, and the exit is the batch's partial
    // code: a script on the offline side learns that items were left out.
    assert_eq!(out.status.code(), Some(9), "{err}");
    assert_eq!(reads(fifos), [1, 1]);
    assert!(err.contains("left out (3)"), "{err}");
    assert!(
        err.contains("3 of 8 items left out (`refused` in signed.json says why)"),
        "{err}"
    );
    let signed = bridgectl_tx::batch::SignedBatch::parse(
        &std::fs::read(offline.join("signed.json")).expect("signed"),
    )
    .expect("parse");
    let refused: Vec<usize> = signed.refused.iter().map(|r| r.index).collect();
    // Item 2 and the later items of its sender (their nonces would be a gap).
    assert_eq!(refused, [2, 4, 6], "{:#?}", signed.refused);
    assert!(
        signed.refused[0].reason.contains("_amount"),
        "{:?}",
        signed.refused[0]
    );
    assert!(
        signed.refused[1].reason.contains("gap"),
        "{:?}",
        signed.refused[1]
    );
    assert!(
        !signed
            .items
            .iter()
            .any(|i| bridgectl_tx::decode::decode_signed(&i.signed_tx)
                .is_ok_and(|d| d.input.windows(32).any(|w| U256::from_be_slice(w) == other))),
        "the tampered amount was signed"
    );

    // Online: the signed items are sent; the ones left out are never signed here.
    std::fs::copy(offline.join("signed.json"), live.dir.join("signed.json")).expect("copy");
    let (checked, results, summary) = submit(&live, &live.dir.join("signed.json"), 9);
    assert_eq!(
        checked["requestMatches"], false,
        "the request was altered: {checked:#}"
    );
    assert_eq!(checked["notSigned"].as_array().map(Vec::len), Some(3));
    assert_eq!(summary["completed"], 5, "{summary:#}");
    assert_eq!(summary["unsigned"], 3, "{summary:#}");
    // Each says why: the offline signer's own reason.
    for r in results.iter().filter(|r| r["status"] == "unsigned") {
        assert!(r["txHash"].is_null(), "{r:#}");
        let why = r["error"].as_str().unwrap_or_default();
        assert!(
            why.starts_with("not signed offline: the offline signer left it out: "),
            "{r:#}"
        );
        let own = if r["index"] == 2 { "_amount" } else { "gap" };
        assert!(why.contains(own), "{r:#}");
    }
    let mut done = items.clone();
    for i in [6, 4, 2] {
        done.remove(i);
    }
    assert_each_item_redeemed_once(&live, &balances, &done);
    let sent_before = live.sb.submitted().len();

    // A second batch, its first item altered consistently on its way (rawTx and intent
    // both ask for another amount): the offline side cannot tell, and signs what it is
    // shown; the online side refuses bytes other than those it prepared, and sends
    // nothing of that sender after them.
    live.dir.write(
        "more.jsonl",
        format!(
            "{}\n{}\n",
            serde_json::json!({"op": "redeem", "from": balances[1].0, "amount": "0.003", "id": "m0"}),
            serde_json::json!({"op": "redeem", "from": balances[1].0, "amount": "0.004", "id": "m1"}),
        ),
    );
    let nonce_before = live.nonce(true, balances[1].0);
    live.ok(&["batch", "prepare", "more.jsonl", "--out", "more.json"]);
    let swapped = tampered(live.dir.path(), "more.json", 0, |item| {
        with_amount(&mut item["rawTx"], other);
        item["intent"]["args"]["_amount"] = Value::String(other.to_string());
    });
    offline.write("more.json", &swapped);
    let read = signed_and_carried(
        &live,
        &offline,
        &[(1, nonce_before)],
        "more.json",
        "more-signed.json",
    );
    assert_eq!(read, [1]);
    let (checked, results, summary) = submit(&live, &live.dir.join("more-signed.json"), 9);
    // Each item says why it is unsigned: its signature was refused here, for what.
    for r in &results {
        let why = r["error"].as_str().unwrap_or_default();
        assert!(
            why.contains("its signature was refused here: ")
                && why.contains(if r["id"] == "m0" {
                    "the request says"
                } else {
                    "of the same sender was refused"
                }),
            "{r:#}"
        );
    }
    let refused = checked["refused"].as_array().expect("refused");
    assert_eq!(refused.len(), 2, "{checked:#}");
    assert!(
        refused[0]["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("the request says"),
        "{checked:#}"
    );
    assert_eq!(summary["completed"], 0, "{summary:#}");
    assert_eq!(
        live.sb.submitted().len(),
        sent_before,
        "nothing of it was sent"
    );
    assert_eq!(live.nonce(true, balances[1].0), nonce_before);
}

#[test]
fn an_external_signer_signs_a_batch_offline_and_online_per_address() {
    let live = Live::new("airgap_signer");
    let dev = live.dev;
    live.dir.write(
        "payouts.jsonl",
        (1..=3)
            .map(|i| {
                format!(
                    "{}\n",
                    serde_json::json!({"op": "redeem", "from": dev, "amount": format!("0.00{i}"), "id": format!("s{i}")})
                )
            })
            .collect::<String>(),
    );
    live.ok(&[
        "batch",
        "prepare",
        "payouts.jsonl",
        "--out",
        "requests.json",
    ]);
    // The offline machine holds no key: the loopback endpoint in front of the key signs.
    let offline = offline_machine(&live, "airgap_signer_offline", &[]);
    std::fs::copy(
        live.dir.join("requests.json"),
        offline.join("requests.json"),
    )
    .expect("copy");
    let nonce = live.nonce(true, dev).to_string();
    let endpoint = format!("rpc:{}", live.sb.info.side.rpc_url);
    let out = offline
        .command()
        .args([
            "sign",
            "requests.json",
            "--out",
            "signed.json",
            "--journal",
            "offline-journal.sqlite3",
            "--yes",
            "--nonce-for",
            &format!("{dev}={nonce}"),
            "--signer",
            &endpoint,
        ])
        .output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verified = offline.command().args(["--json", "log", "verify"]).json();
    assert_eq!(
        verified["ok"], true,
        "the endpoint's entries are the log's own: {verified:#}"
    );
    // Not on this machine: refused before anything is read.
    let out = offline
        .command()
        .args([
            "sign",
            "requests.json",
            "--out",
            "x.json",
            "--signer",
            "rpc:http://192.0.2.1:8545",
        ])
        .output();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("reaches no network"));
    std::fs::copy(offline.join("signed.json"), live.dir.join("signed.json")).expect("copy");
    let (_, _, summary) = submit(&live, &live.dir.join("signed.json"), 0);
    assert_eq!(summary["completed"], 3, "{summary:#}");

    // Online, `batch run --signer`: the endpoint signs for the address it holds, and no
    // passphrase is read.
    live.dir.write(
        "online.jsonl",
        format!(
            "{}\n",
            serde_json::json!({"op": "redeem", "from": dev, "amount": "0.005"})
        ),
    );
    let counter = CountingPassphrase::new(&live.dir, &live.passphrase);
    let mut c = live.cmd();
    c.env("BRIDGECTL_PASSPHRASE_FILE", &counter.path)
        .env("BRIDGECTL_SIGNER", &endpoint)
        .args(["--json", "batch", "run", "online.jsonl", "--yes"]);
    let out = live.run_ok(c);
    assert_eq!(counter.finish(), 0, "a passphrase was read");
    let (_, summary) = parse_results(&out.stdout);
    assert_eq!(summary["completed"], 1, "{summary:#}");
}

/// A batch request of `n` redeems of 0.01 ST by the offline test key
/// (`crate::offline::import_key`) on chain 1337, nonces from `first_nonce`: written to
/// `name` in `dir`, as `batch prepare` writes one.
fn request_file(dir: &Dir, name: &str, first_nonce: u64, n: usize) -> std::path::PathBuf {
    let from: Address = "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F"
        .parse()
        .expect("from");
    let amount = U256::from(10u64).pow(U256::from(16u64));
    let items: Vec<_> = (0..n)
        .map(|i| (from, first_nonce + i as u64, amount))
        .collect();
    crate::util::redeem_batch_file(dir, name, &items)
}

/// The offline test key's machine (`crate::offline::import_key`): a profile of chain
/// 1337 with redeems of up to 5 ST pinned, and `bridgectl sign REQUEST --out
/// REQUEST.signed --yes` there with its own journal, the passphrase given or not.
fn offline_sign_request(
    dir: &Dir,
    request: &str,
    extra: &[&str],
    passphrase: bool,
) -> std::process::Output {
    let config = dir.write(
        "offline.toml",
        "[profiles.default]\nside_chain_id = 1337\n\
         st_contract = \"0x5757575757575757575757575757575757575757\"\n\
         side_symbol = \"ST\"\nside_decimals = 18\n\n[profiles.default.policy]\n\
         max-gas-price = 1000000000\n\n[[profiles.default.policy.auto-approve]]\n\
         function = \"redeem\"\ntoken = \"ST\"\nmax = \"5\"\n",
    );
    let mut c = dir.command();
    c.args([
        "sign",
        request,
        "--out",
        &format!("{request}.signed"),
        "--yes",
    ])
    .args([std::path::Path::new("--config"), &config])
    .args(["--journal", "offline.sqlite3"])
    .args(extra);
    if passphrase {
        c.env("BRIDGECTL_PASSPHRASE", crate::offline::PASS);
    }
    c.output()
}

bctest!(
    an_offline_journal_behind_names_the_nonce_flag_once_and_sums_up_what_it_leaves_out,
    |dir: Dir, _cmd: TestCommand| {
        crate::offline::import_key(&dir);
        let sign = |request: &str, extra: &[&str]| offline_sign_request(&dir, request, extra, true);
        // This machine signed nonces 0 to 2; the key then signed 3 to 6 online, and the
        // next batch starts at 7.
        request_file(&dir, "first.json", 0, 3);
        let out = sign("first.json", &["--nonce-for", "k=0"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        request_file(&dir, "second.json", 7, 60);
        let out = sign("second.json", &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert_eq!(err.matches("--nonce-for k=7").count(), 1, "{err}");
        assert!(!err.contains("\n\n") && !err.starts_with('\n'), "{err:?}");
        assert_eq!(err.matches("would be a gap").count(), 1, "{err}");
        assert!(
            err.contains("payout-1 to payout-59 (59 items) from "),
            "{err}"
        );
        // Typed as named, it signs.
        let out = sign("second.json", &["--nonce-for", "k=7"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
);

bctest!(
    an_offline_batch_signer_that_stops_on_its_way_gives_its_nonces_back,
    |dir: Dir, _cmd: TestCommand| {
        crate::offline::import_key(&dir);
        // Checked and its three nonces reserved, then no passphrase to unlock with: the
        // signer stops (exit 4) on its way out of the check.
        request_file(&dir, "first.json", 0, 3);
        let out = offline_sign_request(&dir, "first.json", &["--nonce-for", "k=0"], false);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{err}");
        assert!(err.contains("no passphrase source"), "{err}");
        // Another request of the same key at the same nonces (other flows) signs: the
        // first one's reservations were given back, not left for their lease.
        request_file(&dir, "second.json", 0, 3);
        let out = offline_sign_request(&dir, "second.json", &["--nonce-for", "k=0"], true);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
);

/// A prepared batch holds its nonces however long the air gap takes. With a reservation
/// lease of one second, an online redeem from the batch's sender is still refused at the
/// batch's first nonce long after the lease (exit 3, nothing signed, the chain's nonce
/// unchanged), and `batch status` shows both nonces held. `batch abandon` gives them
/// back and says so; the online redeem then signs at the first of them, and the signed
/// batch that comes back afterwards is refused, nothing of it sent.
#[test]
fn a_prepared_batch_holds_its_nonces_past_the_lease_until_it_is_abandoned() {
    let mut live = Live::shared("airgap_hold");
    let (payers, balances, _) = payouts(&mut live, 1, 2);
    let payer = balances[0].0;
    let with_lease = |args: &[&str]| {
        let mut c = live.cmd();
        // Short, so the test outlives it; long enough for a redeem on a loaded machine
        // to sign within it.
        c.env("BRIDGECTL_RESERVATION_LEASE", "3s").args(args);
        c
    };
    let prepared = live.ok_cmd(with_lease(&[
        "--json",
        "batch",
        "prepare",
        "payouts.jsonl",
        "--out",
        "requests.json",
    ]));
    let batch_id = prepared["batchId"].as_str().expect("batch id").to_owned();
    let nonce0 = live.nonce(true, payer);

    // Offline, the signatures are made while the lease runs out online.
    let offline = offline_with_request(&live, "airgap_hold_offline", &payers);
    signed_and_carried(
        &live,
        &offline,
        &[(0, nonce0)],
        "requests.json",
        "signed.json",
    );
    std::thread::sleep(Duration::from_secs(4));

    let redeem = ["redeem", "--from", "payer0", "--amount", "0.0005", "--yes"];
    let mut c = with_lease(&redeem);
    let out = c.output();
    live.check_secrets(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains(&format!("nonce {nonce0}")), "{err}");
    assert_eq!(live.nonce(true, payer), nonce0, "nothing was sent");
    assert_eq!(
        live.ok(&["log", "show"]),
        serde_json::json!([]),
        "nothing was signed"
    );
    // What a list of `doc` holds in `field`, item by item.
    let each = |doc: &Value, list: &str, field: &str| -> Vec<Value> {
        doc[list]
            .as_array()
            .unwrap_or_else(|| panic!("{list}: {doc:#}"))
            .iter()
            .map(|i| i[field].clone())
            .collect()
    };
    let both = [Value::from(nonce0), Value::from(nonce0 + 1)];
    let status = live.ok_cmd(with_lease(&["--json", "batch", "status", &batch_id]));
    crate::json::assert_schema("batch-status", &status);
    assert_eq!(each(&status, "items", "heldNonce"), both, "{status:#}");
    assert!(status["prepared"]["abandonedAt"].is_null(), "{status:#}");

    let abandoned = live.ok(&["batch", "abandon", &batch_id, "--yes"]);
    crate::json::assert_schema("batch-abandon", &abandoned);
    assert_eq!(each(&abandoned, "released", "nonce"), both, "{abandoned:#}");
    let status = live.ok(&["batch", "status", &batch_id]);
    assert!(status["prepared"]["abandonedAt"].is_string(), "{status:#}");
    for item in status["items"].as_array().expect("items") {
        assert!(item["heldNonce"].is_null(), "{item:#}");
        assert!(
            item["error"]
                .as_str()
                .unwrap_or_default()
                .contains("abandoned"),
            "the journal says why: {item:#}"
        );
    }

    // Given back: the online redeem signs at the batch's first nonce.
    let mut c = with_lease(&redeem);
    c.args(["--json"]);
    let done = live.ok_cmd(c);
    assert_eq!(done["nonce"], nonce0, "{done:#}");
    // The signed batch that comes back afterwards is refused: nothing of it sent.
    let mut c = live.cmd();
    c.args(["batch", "submit", "signed.json"]);
    let out = c.output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!("batch {batch_id} was abandoned")),
        "{err}"
    );
    assert_eq!(
        live.nonce(true, payer),
        nonce0 + 1,
        "only the online redeem"
    );
}
