//! The online flows end to end: the CLI binary against a live sandbox over real anvil
//! chains. Every output is checked for secrets (see `live.rs`).

use alloy_primitives::U256;
use serde_json::Value;

use crate::live::{Faults, Live};

/// `n` whole tokens of `decimals` in base units.
pub fn units(n: u64, decimals: u8) -> U256 {
    U256::from(n) * U256::from(10u64).pow(U256::from(decimals))
}

fn steps(live: &Live, tx_id: &str) -> Vec<String> {
    let h = live.ok(&["history", tx_id]);
    h["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s["step"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn redeem_end_to_end_journals_every_step() {
    let live = Live::shared("redeem_e2e");
    let dev = live.dev.to_string();
    let st_dec = live.sb.info.side.decimals;
    let mt_dec = live.sb.info.main.decimals;
    let (st0, mt0) = (live.balance(true, live.dev), live.balance(false, live.dev));
    // Amounts that move nothing or less than nothing are refused before any request.
    let err = live.fails(&["redeem", "--from", &dev, "--amount", "0", "--yes"], 2);
    assert!(err.contains("must be more than zero"), "{err}");
    let err = live.fails(&["redeem", "--from", &dev, "--amount", "-1", "--yes"], 2);
    assert!(err.contains("invalid amount \"-1\""), "{err}");
    // `--from` takes the key's label as well as its address.
    let out = live.ok(&["redeem", "--from", "dev", "--amount", "1.5", "--yes"]);
    assert_eq!(out["status"], "completed", "{out:#}");
    let amount = units(15, st_dec) / U256::from(10);
    assert_eq!(out["amount"], amount.to_string());
    assert!(live.mined(true, out["txHash"].as_str().expect("hash")));
    // ST burned exactly; MT paid at the inverse ratio.
    assert_eq!(live.balance(true, live.dev), st0 - amount);
    let ratio = &live.sb.info.ratio;
    let mt_paid = live.balance(false, live.dev) - mt0;
    let expected = amount * units(ratio.mt, mt_dec) / units(ratio.st, st_dec);
    assert_eq!(mt_paid, expected, "ratio {ratio:?}");
    let tx_id = out["txId"].as_str().expect("txId");
    let s = steps(&live, tx_id);
    let order = [
        "started",
        "executed",
        "verified",
        "signed",
        "submitted",
        "completed",
    ];
    let mut last = 0;
    for want in order {
        let at = s
            .iter()
            .position(|x| x == want)
            .unwrap_or_else(|| panic!("step {want} missing in {s:?}"));
        assert!(at >= last, "step {want} out of order in {s:?}");
        last = at;
    }
}

#[test]
fn swap_with_wait_credits_st_at_the_ratio() {
    let live = Live::shared("swap_e2e");
    let dev = live.dev.to_string();
    let out = live.ok(&["swap", "--from", &dev, "--amount", "2", "--wait", "--yes"]);
    let before: U256 = out["stBefore"]
        .as_str()
        .expect("before")
        .parse()
        .expect("u256");
    let after: U256 = out["stAfter"]
        .as_str()
        .expect("after")
        .parse()
        .expect("u256");
    let info = &live.sb.info;
    let mt = units(2, info.main.decimals);
    let expected =
        mt * units(info.ratio.st, info.side.decimals) / units(info.ratio.mt, info.main.decimals);
    assert_eq!(after - before, expected);
    assert!(live.mined(false, out["txHash"].as_str().expect("hash")));
    // The same swap address on a repeat call.
    let again = live.ok(&["swap", "--from", &dev, "--amount", "1", "--yes"]);
    assert_eq!(again["swapAddress"], out["swapAddress"]);
}

#[test]
fn amounts_are_exact_at_18_and_6_decimals_and_a_1_to_2_ratio() {
    // Expected values written out by hand, not computed by the code under test.
    let mut config = bridgectl_sandbox::SandboxConfig::default();
    config.side.decimals = 6;
    config.ratio = bridgectl_sandbox::Ratio { mt: 1, st: 2 };
    let live = Live::with_config("decimals_18_6", config);
    let dev = live.dev;
    let (mt0, st0) = (live.balance(false, dev), live.balance(true, dev));
    // 1.5 MT (18 decimals) swapped at 1:2 is 3 ST (6 decimals).
    live.ok(&[
        "swap", "--from", "dev", "--amount", "1.5", "--wait", "--yes",
    ]);
    let mt1 = live.balance(false, dev);
    assert_eq!(mt0 - mt1, U256::from(1_500_000_000_000_000_000u128));
    let st1 = live.balance(true, dev);
    assert_eq!(st1 - st0, U256::from(3_000_000u64));
    // 1.25 ST redeemed at 1:2 is 0.625 MT.
    let out = live.ok(&["redeem", "--from", "dev", "--amount", "1.25", "--yes"]);
    assert_eq!(out["status"], "completed", "{out:#}");
    assert_eq!(out["amount"], "1250000");
    assert_eq!(st1 - live.balance(true, dev), U256::from(1_250_000u64));
    assert_eq!(
        live.balance(false, dev) - mt1,
        U256::from(625_000_000_000_000_000u128)
    );
    // A seventh fractional digit of ST is refused, not rounded.
    let err = live.fails(
        &["redeem", "--from", "dev", "--amount", "0.0000001", "--yes"],
        2,
    );
    assert!(err.contains("7 fractional digits"), "{err}");
}

#[test]
fn transfers_of_mt_and_st_and_a_managed_transfer() {
    let live = Live::shared("transfer_e2e");
    let dev = live.dev.to_string();
    // A managed account of its own: its nonces are counted.
    let managed = live.sb.new_managed();
    let m = managed.to_string();
    let mt0 = live.balance(false, managed);
    live.ok(&[
        "transfer", "--token", "mt", "--from", &dev, "--to", &m, "--amount", "3", "--yes",
    ]);
    assert_eq!(
        live.balance(false, managed) - mt0,
        units(3, live.sb.info.main.decimals)
    );
    let st0 = live.balance(true, managed);
    let out = live.ok(&[
        "transfer", "--token", "st", "--from", &dev, "--to", &m, "--amount", "0.25", "--yes",
        "--direct",
    ]);
    assert!(live.mined(true, out["txHash"].as_str().expect("hash")));
    assert_eq!(
        live.balance(true, managed) - st0,
        units(25, live.sb.info.side.decimals) / U256::from(100)
    );
    // The managed account has no key here: the platform signs (op 2), we check and
    // submit (op 3).
    managed_transfer_of_one(&live, &m, &[]);
    // Stopped with the platform's signature journaled and nothing sent (failpoint, debug
    // builds): `resume` sends those bytes, and the account pays exactly once.
    let (dev0, nonce0) = (live.balance(false, live.dev), live.nonce(false, managed));
    let mut c = live.cmd();
    c.args(managed_transfer(&m, &dev))
        .env("BRIDGECTL_FAILPOINT", "journaled-not-sent");
    crate::util::assert_aborted(&c.output(), "managed transfer");
    assert_eq!(
        live.nonce(false, managed),
        nonce0,
        "nothing sent before the stop"
    );
    let flow = live.ok(&["history"])[0].clone();
    let tx_id = flow["txId"].as_str().expect("txId");
    let resumed = live.ok(&["resume", tx_id]);
    assert_eq!(resumed["txHash"], flow["txHash"], "{resumed:#}");
    assert_eq!(live.nonce(false, managed), nonce0 + 1, "sent once");
    let hash = resumed["txHash"].as_str().expect("txHash");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !live.mined(false, hash) {
        assert!(std::time::Instant::now() < deadline, "{hash} never mined");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        live.balance(false, live.dev) - dev0,
        units(1, live.sb.info.main.decimals)
    );
}

/// `transfer --token mt --managed --from M --to DEV --amount 1`.
fn managed_transfer<'a>(m: &'a str, dev: &'a str) -> [&'a str; 10] {
    [
        "transfer",
        "--token",
        "mt",
        "--managed",
        "--from",
        m,
        "--to",
        dev,
        "--amount",
        "1",
    ]
}

/// [`managed_transfer`] from `m` to the test's account, with `extra` arguments: it goes
/// through, and the account is paid exactly one MT.
fn managed_transfer_of_one(live: &Live, m: &str, extra: &[&str]) {
    let dev = live.dev.to_string();
    let dev0 = live.balance(false, live.dev);
    let mut c = live.cmd();
    c.args(managed_transfer(m, &dev))
        .args(extra)
        .args(["--json"]);
    live.ok_cmd(c);
    assert_eq!(
        live.balance(false, live.dev) - dev0,
        units(1, live.sb.info.main.decimals)
    );
}

/// `action exec balanceOf --input _owner=OWNER` by the sandbox's first managed account (a
/// view: no signature), with `extra` arguments: the value it shows.
pub fn view_balance_of(live: &Live, owner: &str, extra: &[&str]) -> String {
    let managed = live.sb.info.managed_accounts[0].to_string();
    let input = format!("_owner={owner}");
    let mut c = live.cmd();
    c.args(["--json", "action", "exec", "balanceOf", "--from", &managed])
        .args(["--input", &input])
        .args(extra);
    let view = live.ok_cmd(c);
    assert_eq!(view["kind"], "view", "{view:#}");
    view["value"]
        .as_str()
        .map_or_else(|| view["value"].to_string(), str::to_owned)
        .trim_matches('"')
        .to_owned()
}

#[test]
fn action_exec_for_eoa_managed_and_view() {
    let live = Live::shared("action_e2e");
    let dev = live.dev.to_string();
    let amount = units(1, live.sb.info.side.decimals).to_string();
    let input = format!("_amount={amount}");
    let eoa = live.ok(&[
        "action",
        "exec",
        "stake",
        "--from",
        &dev,
        "--input",
        &input,
        "--function",
        "stake",
        "--yes",
    ]);
    assert_eq!(eoa["kind"], "eoa");
    // Without --wait the flow ends at its submission: mined by the node soon after (on
    // a loaded machine, not always before the command returns).
    assert!(live.mined_soon(true, eoa["txHash"].as_str().expect("hash")));

    let managed = live.sb.info.managed_accounts[0].to_string();
    assert_eq!(
        view_balance_of(&live, &dev, &[]),
        live.balance(true, live.dev).to_string()
    );

    let to = format!("_to={dev}");
    let m = live.ok(&[
        "action", "exec", "transfer", "--from", &managed, "--input", &to, "--input", "_value=0",
    ]);
    assert_eq!(m["kind"], "managed", "{m:#}");
    // The platform answers once its node accepted the transaction, not once it is mined.
    assert!(live.mined_soon(true, m["txHash"].as_str().expect("hash")));
}

#[test]
fn air_gap_round_trip_through_files() {
    let live = Live::shared("airgap_e2e");
    let dev = live.dev.to_string();
    let amount = units(1, live.sb.info.side.decimals).to_string();
    let input = format!("_amount={amount}");
    let req = live.dir.join("request.json");
    let req_s = req.to_str().expect("utf8").to_owned();
    let out = live.ok(&[
        "action",
        "exec",
        "redeem",
        "--from",
        &dev,
        "--input",
        &input,
        "--function",
        "redeem",
        "--out",
        &req_s,
    ]);
    assert_eq!(out["kind"], "sign-request");

    let offline = offline_signer(&live, "airgap_offline");
    let signed = live.dir.join("signed.json");
    let nonce = live.nonce(true, live.dev).to_string();
    let mut sign = offline.command();
    sign.env("BRIDGECTL_PASSPHRASE_FILE", offline.join("pass"))
        .args([
            "sign",
            &req_s,
            "--yes",
            "--nonce",
            &nonce,
            "--out",
            signed.to_str().expect("utf8"),
        ]);
    let o = sign.output();
    live.check_secrets(&o);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // A request edited after signing is caught before anything is sent.
    let tampered = live.dir.join("tampered.json");
    let text = std::fs::read_to_string(&req).expect("req");
    std::fs::write(&tampered, text.replace("redeem", "redeem ")).expect("write");
    let nonce0 = live.nonce(true, live.dev);
    let err = live.fails(
        &[
            "submit",
            signed.to_str().expect("utf8"),
            "--request",
            tampered.to_str().expect("utf8"),
        ],
        3,
    );
    assert!(err.contains("requestHash"), "{err}");
    assert_eq!(live.nonce(true, live.dev), nonce0, "nothing was sent");

    let sub = live.ok(&[
        "submit",
        signed.to_str().expect("utf8"),
        "--request",
        &req_s,
    ]);
    assert_eq!(sub["checkedAgainstRequest"], true);
    // Without --wait: mined soon after the submission (see the action above).
    assert!(live.mined_soon(true, sub["txHash"].as_str().expect("hash")));
    // The flow `action exec --out` began is the one that was completed.
    assert_eq!(sub["txId"], out["txId"]);
}

/// The offline side of the air gap: its own keystore with the dev key, and an offline
/// profile that names only what a signer must know (the side chain, the ST contract
/// with its symbol and decimals, a gas-price cap) and a standing approval of redeems up
/// to 5 ST, which is what lets `sign --yes` sign a request (its intent approves
/// nothing): no platform, no token, no node.
pub fn offline_signer(live: &Live, name: &'static str) -> crate::util::Dir {
    let offline = crate::util::Dir::new(name);
    let key = live.dev_key.expose_secret().to_owned();
    offline.write("pass", format!("{}\n", live.passphrase));
    let side = &live.sb.info.side;
    offline.write(
        "xdg/config/bridgectl/config.toml",
        format!(
            "[profiles.default]\nside_chain_id = {}\nst_contract = \"{}\"\n\
             side_symbol = \"{}\"\nside_decimals = {}\n\n\
             [profiles.default.policy]\nmax-gas-price = 1000000000000\n\n\
             [[profiles.default.policy.auto-approve]]\nfunction = \"redeem\"\ntoken = \"ST\"\nmax = \"5\"\n",
            side.chain_id, side.token_address, side.symbol, side.decimals
        ),
    );
    let mut import = offline.command();
    import
        .env("BRIDGECTL_PASSPHRASE_FILE", offline.join("pass"))
        .args(["key", "import", "--raw", "--unsafe-test-kdf"]);
    let o = import.output_with_stdin(format!("{key}\n").as_bytes());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    offline
}

#[test]
fn dropped_submit_response_is_resumed_with_the_same_hash() {
    let live = Live::shared("resume_dropped");
    let dev = live.dev.to_string();
    live.drop_answers("submit");
    let nonce0 = live.nonce(true, live.dev);
    let mut c = live.cmd();
    c.env("BRIDGECTL_RETRIES", "0")
        .args(["redeem", "--from", &dev, "--amount", "1", "--yes", "--json"]);
    let out = c.output();
    live.check_secrets(&out);
    assert_eq!(
        out.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let flows = live.ok(&["history"]);
    let flow = &flows[0];
    assert_eq!(flow["state"], "signed", "{flow:#}");
    let tx_id = flow["txId"].as_str().expect("txId").to_owned();
    let hash = flow["txHash"].as_str().expect("hash").to_owned();
    assert!(steps(&live, &tx_id).contains(&"submit-failed".to_owned()));

    live.clear("submit");
    // The journal's bytes are a claim too: a record whose hash, sender or chain does not
    // match its signed bytes is refused, and nothing is sent.
    let journal = live.dir.join("journal.sqlite3");
    let db = rusqlite::Connection::open(&journal).expect("journal");
    let edit = |sql: &str| {
        db.execute(sql, rusqlite::params![tx_id])
            .expect("edit journal");
    };
    for (tamper, undo, want) in [
        (
            "UPDATE flows SET tx_hash = '0x' || substr(tx_hash, 3, 62) || 'ff' WHERE tx_id = ?1",
            "",
            "txHash: the journal records",
        ),
        (
            "UPDATE flows SET chain_id = chain_id + 1 WHERE tx_id = ?1",
            "UPDATE flows SET chain_id = chain_id - 1 WHERE tx_id = ?1",
            "chainId: the journal records",
        ),
        (
            "UPDATE flows SET from_addr = '0x6666666666666666666666666666666666666666' \
             WHERE tx_id = ?1",
            "",
            "from (recovered signer): the journal records",
        ),
    ] {
        let (from_before, hash_before): (String, String) = db
            .query_row(
                "SELECT from_addr, tx_hash FROM flows WHERE tx_id = ?1",
                rusqlite::params![tx_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("row");
        edit(tamper);
        let err = live.fails(&["resume", &tx_id], 3);
        assert!(err.contains(want), "{err}");
        assert!(err.contains("inconsistent, nothing sent"), "{err}");
        if undo.is_empty() {
            db.execute(
                "UPDATE flows SET from_addr = ?2, tx_hash = ?3 WHERE tx_id = ?1",
                rusqlite::params![tx_id, from_before, hash_before],
            )
            .expect("restore");
        } else {
            edit(undo);
        }
    }
    assert_eq!(
        live.nonce(true, live.dev),
        nonce0 + 1,
        "only the first send"
    );
    // Resume never signs: a passphrase source that counts reads is never read.
    let resumed = live.resume_unsigned(&tx_id);
    assert_eq!(resumed["txHash"], hash.as_str());
    assert_eq!(
        resumed["alreadyKnown"], true,
        "the first send had reached the chain"
    );
    assert_eq!(resumed["status"], "completed");
    assert_eq!(
        live.nonce(true, live.dev),
        nonce0 + 1,
        "exactly one transaction"
    );
    // Resuming a completed flow says so and sends nothing.
    let again = live.ok(&["resume", &tx_id]);
    assert_eq!(again["resent"], false, "{again:#}");
    let requests = live.requests().len();
    live.ok(&["resume", &tx_id]);
    let sent_again = live.requests()[requests..]
        .iter()
        .any(|l| l.contains("/transaction/send/signed-tx"));
    assert!(!sent_again, "a completed flow was resent");
}

#[test]
fn a_dropped_submit_response_is_retried_safely() {
    let live = Live::shared("retry_dropped");
    let dev = live.dev.to_string();
    live.drop_answers("submit");
    let nonce0 = live.nonce(true, live.dev);
    let out = live.ok(&["redeem", "--from", &dev, "--amount", "1", "--yes"]);
    assert_eq!(out["status"], "completed");
    assert_eq!(
        live.nonce(true, live.dev),
        nonce0 + 1,
        "the retry resent the same bytes"
    );
}

#[test]
fn server_errors_are_retried_on_reads_and_reported_on_execute() {
    let live = Live::shared("faults_5xx");
    let dev = live.dev.to_string();
    // Execute is never retried: a 503 is a clear error and nothing is signed.
    live.fail_share("execute", 1.0);
    let nonce0 = live.nonce(true, live.dev);
    let err = live.fails(&["redeem", "--from", &dev, "--amount", "1", "--yes"], 7);
    assert!(
        err.contains("SERVICE_UNAVAILABLE") && err.contains("HTTP 503"),
        "{err}"
    );
    live.clear("execute");
    assert_eq!(live.nonce(true, live.dev), nonce0);
    // Half of the redemption-result reads fail: the retries carry the flow through.
    live.fail_share("redeems", 0.5);
    let out = live.ok(&["redeem", "--from", &dev, "--amount", "1", "--yes"]);
    assert_eq!(out["status"], "completed");
}

/// `redeem` of one token by `dev`, waiting at most `timeout` seconds.
fn redeem_one<'a>(dev: &'a str, timeout: &'a str) -> [&'a str; 8] {
    [
        "redeem",
        "--from",
        dev,
        "--amount",
        "1",
        "--yes",
        "--timeout",
        timeout,
    ]
}

#[test]
fn a_timeout_is_exit_8_and_resume_finishes() {
    let live = Live::shared("faults_timeout");
    let dev = live.dev.to_string();
    // Every status read fails: polling carries on until the wait runs out (exit 8),
    // and the message says what the last answer was.
    live.fail_share("redeems", 1.0);
    let mut c = live.cmd();
    c.env("BRIDGECTL_RETRIES", "0").args(redeem_one(&dev, "1"));
    let out = c.output();
    live.check_secrets(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(8), "{err}");
    assert!(
        err.contains("SERVICE_UNAVAILABLE") && err.contains("resume"),
        "{err}"
    );
    live.clear("redeems");
    // A status that does not come in time is a timeout too: the whole wait is bounded.
    live.delay("redeems", 1500);
    let err = live.fails(&redeem_one(&dev, "1"), 8);
    assert!(err.contains("resume"), "{err}");
    live.clear("redeems");
    let flows = live.ok(&["history"]);
    for f in flows.as_array().expect("flows") {
        assert_eq!(f["state"], "submitted", "{f:#}");
        let tx_id = f["txId"].as_str().expect("txId").to_owned();
        let resumed = live.ok(&["resume", &tx_id]);
        assert_eq!(resumed["status"], "completed");
        assert_eq!(resumed["txHash"], f["txHash"]);
    }
}

#[test]
fn the_signed_bytes_are_journaled_before_the_platform_sees_them() {
    let live = Live::shared("kill_resume");
    let dev = live.dev.to_string();
    // The submission is held at the platform, logged and before any work: the client is
    // killed at the moment its POST has arrived.
    live.hold("submit");
    let nonce0 = live.nonce(true, live.dev);
    let mut c = live.cmd();
    c.args(["redeem", "--from", &dev, "--amount", "1", "--yes"]);
    let mut child = crate::util::KillOnDrop::spawn(
        c.cmd
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    let line = live.wait_for_request(0, crate::live::SUBMIT);
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    let sent = crate::live::signed_tx_of(&line).expect("signedTx in the POST");
    // What the crash left on disk: the bytes the platform was sent, already journaled.
    let rows = live.journal_rows();
    let journaled: Vec<_> = rows.iter().filter_map(|r| r.2.clone()).collect();
    assert_eq!(
        journaled,
        vec![sent.clone()],
        "the platform saw signed bytes the journal does not hold: {rows:?}"
    );
    let (tx_id, state, _) = rows[0].clone();
    assert_eq!(state, "signed");

    live.clear("submit");
    // Resume sends those bytes again without a passphrase: the counting source is never
    // read, and the resent POST carries exactly the journal's bytes.
    let requests = live.requests().len();
    let resumed = live.resume_unsigned(&tx_id);
    let resent = crate::live::signed_tx_of(&live.wait_for_request(requests, crate::live::SUBMIT));
    assert_eq!(
        resent,
        Some(sent),
        "resume sent other bytes than the journal's"
    );
    assert_eq!(resumed["status"], "completed");
    assert_eq!(
        live.nonce(true, live.dev),
        nonce0 + 1,
        "exactly one transaction"
    );
}

#[test]
fn a_wrong_passphrase_signs_sends_and_prints_nothing() {
    let live = Live::shared("redeem_wrong_passphrase");
    let dev = live.dev.to_string();
    let wrong = format!("wrong-{}", uuid::Uuid::new_v4().simple());
    let wrong_file = live.dir.write("wrong-passphrase", format!("{wrong}\n"));
    let nonce0 = live.nonce(true, live.dev);
    let mut c = live.cmd();
    c.env("BRIDGECTL_PASSPHRASE_FILE", &wrong_file)
        .args(["--json", "redeem", "--from", &dev, "--amount", "1", "--yes"]);
    let out = c.output();
    let mut scan = live.scan();
    scan.add("the wrong passphrase", &wrong);
    crate::util::assert_wrong_passphrase(&scan, "redeem", &out);
    // Nothing signed, journaled as signed or sent.
    let rows = live.journal_rows();
    assert!(rows.iter().all(|r| r.2.is_none()), "{rows:?}");
    assert!(live.submitted().is_empty(), "a submission was sent");
    assert_eq!(live.nonce(true, live.dev), nonce0);
    scan.scan_file(&live.dir.join("journal.sqlite3"));
}

#[test]
fn history_lists_flows_and_unknown_flows_are_not_found() {
    let live = Live::shared("history");
    let dev = live.dev.to_string();
    live.ok(&["redeem", "--from", &dev, "--amount", "1", "--yes"]);
    let list = live.ok(&["history"]);
    assert_eq!(list.as_array().map(Vec::len), Some(1));
    assert_eq!(list[0]["kind"], "redeem");
    assert_eq!(list[0]["state"], "completed");
    live.fails(&["history", "00000000-0000-4000-8000-000000000000"], 6);
    // A list cut at its limit says so on stderr, JSON or not; stdout stays the list.
    live.fails(
        &[
            "action",
            "exec",
            "nosuch",
            "--from",
            "dev",
            "--function",
            "stake",
            "--input",
            "_amount=1",
            "--yes",
        ],
        7,
    );
    let more = "the newest flow is listed; the journal holds more";
    for (args, cut) in [
        (&["--json", "history", "--limit", "1"][..], true),
        (&["--json", "history", "--limit", "2"][..], false),
        (&["history", "--all", "--limit", "1"][..], true),
    ] {
        let mut c = live.cmd();
        c.args(args);
        let out = live.run_ok(c);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.contains(more), cut, "{args:?}: {stderr}");
    }
    let two = live.ok(&["history", "--limit", "2"]);
    assert_eq!(two.as_array().map(Vec::len), Some(2), "{two:#}");

    // Balances from the chains, exact, for a key label.
    let b = live.ok(&["balance", "dev"]);
    assert_eq!(
        b[0]["address"],
        dev.parse::<alloy_primitives::Address>()
            .map(|a| serde_json::json!(a.to_checksum(None)))
            .expect("address")
    );
    assert_eq!(
        b[0]["st"]["balance"],
        live.balance(true, live.dev).to_string()
    );
    assert_eq!(
        b[0]["mt"]["balance"],
        live.balance(false, live.dev).to_string()
    );
    assert_eq!(b[0]["label"], "dev");
    let gas = |side: bool| {
        crate::live::block_on(live.sb.node(side).balance(live.dev))
            .expect("native balance")
            .to_string()
    };
    assert_eq!(b[0]["gas"]["side"], gas(true), "{b:#}");
    assert_eq!(b[0]["gas"]["main"], gas(false), "{b:#}");
    // The text is a table: a header naming the tokens and the gas coin, amounts
    // right-aligned under their names.
    let mut c = live.cmd();
    c.args(["balance", "dev"]);
    let text = String::from_utf8(live.run_ok(c).stdout).expect("utf8");
    let lines: Vec<&str> = text.lines().collect();
    let header = lines[0];
    assert!(header.starts_with("ADDRESS"), "{text}");
    let side_gas =
        bridgectl_tx::amount::format_units(gas(true).parse().expect("wei"), 18).expect("units");
    assert!(
        header.contains("GAS (main, ETH)") && header.ends_with("GAS (side, ETH)"),
        "{text}"
    );
    assert!(lines[1].ends_with(&format!(" {side_gas}")), "{text}");
    assert_eq!(
        header.len(),
        lines[1].len(),
        "right-aligned last column: {text}"
    );
    let st_at = header
        .find(&format!("  {}  ", live.sb.info.side.symbol))
        .expect("ST column");
    assert!(
        lines[1][..st_at + 2 + live.sb.info.side.symbol.len()]
            .trim_end()
            .ends_with(
                &bridgectl_tx::amount::format_units(
                    live.balance(true, live.dev),
                    live.sb.info.side.decimals
                )
                .expect("units")
            ),
        "{text}"
    );

    // A unique prefix names the flow; times are whole seconds.
    let tx_id = list[0]["txId"].as_str().expect("txId");
    let one = live.ok(&["history", &tx_id[..8]]);
    assert_eq!(one["flow"]["txId"], tx_id);
    let created = list[0]["createdAt"].as_str().expect("createdAt");
    assert!(!created.contains('.'), "{created}");

    // The table: a header, then rows whose cells sit under their column names, the
    // amount in token units with its symbol, right-aligned; base units when asked.
    let table = |extra: &[&str]| {
        let mut c = live.cmd();
        c.args(["history"]).args(extra);
        String::from_utf8(live.run_ok(c).stdout).expect("utf8")
    };
    let text = table(&[]);
    let lines: Vec<&str> = text.lines().collect();
    let (header, row) = (lines[0], lines[1]);
    assert!(header.starts_with("CREATED (UTC)"), "{text}");
    let at = |col: &str| header.find(col).unwrap_or_else(|| panic!("{col}: {text}"));
    let symbol = &live.sb.info.side.symbol;
    for (col, cell) in [
        ("TXID", tx_id),
        ("KIND", "redeem "),
        ("STATE", "completed"),
        ("TOKEN", symbol.as_str()),
    ] {
        assert!(row[at(col)..].starts_with(cell), "{col}: {text}");
    }
    let amount_end = at("AMOUNT") + "AMOUNT".len();
    assert!(
        row[..amount_end].ends_with(" 1"),
        "amount under AMOUNT: {text}"
    );
    let base = table(&["--base-units"]);
    let row = base.lines().nth(1).expect("a row");
    assert!(
        row.contains(&format!(
            " {}  (base units)",
            units(1, live.sb.info.side.decimals)
        )),
        "{base}"
    );
}

#[test]
fn a_hostile_platform_is_refused_before_the_passphrase_is_read() {
    use bridgectl_sandbox::Hostile;
    let live = Live::shared("hostile");
    let dev = live.dev.to_string();
    // One honest redeem first, so that a nonce below the next one is a real replacement.
    let out = live.ok(&["redeem", "--from", &dev, "--amount", "1", "--yes"]);
    assert_eq!(out["status"], "completed");
    let nonce0 = live.nonce(true, live.dev);
    assert!(nonce0 > 0);
    for kind in Hostile::ALL {
        live.hostile(Some(kind));
        let counter = crate::util::CountingPassphrase::new(&live.dir, &live.passphrase);
        let mut c = live.cmd();
        c.env("BRIDGECTL_PASSPHRASE_FILE", &counter.path)
            .args(["redeem", "--from", &dev, "--amount", "1", "--yes"]);
        let out = c.output();
        let reads = counter.finish();
        live.check_secrets(&out);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{kind:?} not refused:\n{err}");
        assert_eq!(reads, 0, "{kind:?}: the passphrase was read");
        // The refusal names the field.
        let field = match kind {
            Hostile::OtherFrom => "from",
            Hostile::OtherChainId | Hostile::MissingChainId => "chainId",
            Hostile::OtherContract => "to",
            Hostile::OtherSelector => "function",
            Hostile::OtherAmount => "_amount",
            Hostile::InflatedGasPrice => "gasPrice",
            Hostile::InflatedGasLimit => "gasLimit",
            Hostile::ExtraField => "maxFeePerGas",
            Hostile::NonceGap => "nonce: expected",
            Hostile::NonceReplacement => "a replacement",
        };
        assert!(err.contains(field), "{kind:?}: {err}");
        if kind == Hostile::NonceGap {
            assert!(err.contains("a gap"), "{err}");
        }
    }
    assert_eq!(live.nonce(true, live.dev), nonce0, "nothing was submitted");
    let flows = live.ok(&["history"]);
    let flows = flows.as_array().expect("flows");
    assert_eq!(flows.len(), Hostile::ALL.len() + 1);
    // Newest first: every hostile flow failed unsigned; the oldest is the honest one.
    for f in &flows[..Hostile::ALL.len()] {
        assert_eq!(f["state"], "failed", "{f:#}");
        assert!(f["signedTx"].is_null());
    }
    // The same platform, honest again: the flow goes through.
    live.hostile(None);
    let out = live.ok(&["redeem", "--from", &dev, "--amount", "1", "--yes"]);
    assert_eq!(out["status"], "completed");
}

#[test]
fn access_key_exchange_caches_the_token_and_plain_http_is_refused_off_loopback() {
    let live = Live::shared("token_exchange");
    let dev = live.dev.to_string();
    let profile = live.dir.join("xdg/config/bridgectl/config.toml");
    let text = std::fs::read_to_string(&profile).expect("profile");
    std::fs::write(
        &profile,
        format!("{text}access_key = \"{}\"\n", live.sb.info.access_key),
    )
    .expect("write");
    let exchange = |live: &Live| {
        let mut c = live.dir.command();
        c.env("BRIDGECTL_SECRET_KEY", "sandbox-secret-key")
            .env("BRIDGECTL_PASSPHRASE_FILE", live.dir.join("passphrase"))
            .env("BRIDGECTL_JOURNAL", live.dir.join("journal.sqlite3"))
            .args(["redeem", "--from", &dev, "--amount", "1", "--yes", "--json"]);
        live.ok_cmd(c)
    };
    assert_eq!(exchange(&live)["status"], "completed");
    assert_eq!(exchange(&live)["status"], "completed");
    let exchanges = live
        .sb
        .state
        .request_log()
        .iter()
        .filter(|l| l.contains("/svc/v2/auth-tokens"))
        .count();
    assert_eq!(exchanges, 1, "the second run used the cached token");
    let cache_dir = live.dir.join("xdg/state/bridgectl/tokens");
    let entry = std::fs::read_dir(&cache_dir)
        .expect("token cache dir")
        .next()
        .expect("a cached token")
        .expect("entry");
    use std::os::unix::fs::PermissionsExt;
    let mode = entry.metadata().expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    // A token never goes over plain http to another machine.
    let mut c = live.cmd();
    c.env("BRIDGECTL_BASE_URL", "http://platform.example.com")
        .args(["redeem", "--from", &dev, "--amount", "1", "--yes"]);
    let out = c.output();
    live.check_secrets(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("plain http"), "{err}");
}

#[test]
fn redeem_through_the_node_directly() {
    let live = Live::shared("redeem_direct");
    let dev = live.dev.to_string();
    let out = live.ok(&[
        "redeem", "--from", &dev, "--amount", "2", "--yes", "--direct",
    ]);
    assert_eq!(out["status"], "completed");
    assert!(live.mined(true, out["txHash"].as_str().expect("hash")));
    // It never went through the platform's submit operation: no submission the shared
    // sandbox has seen carries this transaction.
    let hash = out["txHash"].as_str().expect("hash");
    let through_platform = live.submitted().iter().any(|raw| {
        let bytes = alloy_primitives::hex::decode(raw).expect("hex");
        alloy_primitives::keccak256(bytes).to_string() == hash
    });
    assert!(
        !through_platform,
        "{hash} was submitted through the platform"
    );
    // It went to the side chain's node, through the logging stub whose every request is
    // scanned for secrets when the test ends: the stub saw the raw transaction, with the
    // profile's node API key in the URL (the node's own secret) and nothing else.
    let sent = live.node_taps[1].requests();
    assert!(
        sent.iter().any(|r| r.contains("eth_sendRawTransaction")
            && r.contains(&format!("apikey={}", live.node_key()))),
        "{sent:#?}"
    );
}

#[test]
fn two_concurrent_redeems_of_one_address_never_sign_one_nonce_twice() {
    let live = Live::shared("concurrent_nonce");
    let dev = live.dev.to_string();
    // The first flow signs and is held at the submission; the platform hands the second
    // the same nonce (the node has not seen the first transaction yet).
    live.hold("submit");
    let nonce0 = live.nonce(true, live.dev);
    let mut first = live.cmd();
    first.args(["--json", "redeem", "--from", &dev, "--amount", "1", "--yes"]);
    let first = crate::util::KillOnDrop::spawn(
        first
            .cmd
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped()),
    );
    live.wait_for_request(0, crate::live::SUBMIT);
    let counter = crate::util::CountingPassphrase::new(&live.dir, &live.passphrase);
    let mut second = live.cmd();
    second
        .env("BRIDGECTL_PASSPHRASE_FILE", &counter.path)
        .args(["redeem", "--from", &dev, "--amount", "1", "--yes"]);
    let out = second.output();
    assert_eq!(counter.finish(), 0, "the second flow read a passphrase");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    // The first flow holds the nonce (signed, its submission held): named, with the
    // ways on.
    assert!(
        err.contains(&format!("nonce {nonce0} of")) && err.contains("is held by flow"),
        "{err}"
    );
    live.clear("submit");
    let first = first.wait_with_output();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert_eq!(
        live.nonce(true, live.dev),
        nonce0 + 1,
        "exactly one transaction"
    );
}

/// Spawns `redeem --from dev --amount 1 --yes` with its passphrase from `pass_file`
/// and the reservation lease `lease`, output piped.
fn spawn_redeem(live: &Live, pass_file: &std::path::Path, lease: &str) -> crate::util::KillOnDrop {
    let dev = live.dev.to_string();
    let mut c = live.cmd();
    c.env("BRIDGECTL_PASSPHRASE_FILE", pass_file)
        .env("BRIDGECTL_RESERVATION_LEASE", lease)
        .args(["redeem", "--from", &dev, "--amount", "1", "--yes"]);
    crate::util::KillOnDrop::spawn(
        c.cmd
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped()),
    )
}

/// Two redeems of one address started together: the platform's `execute` is held
/// until both have asked, so both get a rawTx with the same nonce, and both go on to
/// verify at once. The journal's reservation lets one of them on to the passphrase and
/// refuses the other before it reads one. Deleting `reserve_nonce` in `flows/mod.rs`
/// fails this test: both read the passphrase (the signing log then still refuses the
/// second signature, so the chain alone would not show it).
#[test]
fn two_redeems_released_together_read_one_passphrase_and_sign_once() {
    let live = Live::shared("released_together");
    let nonce0 = live.nonce(true, live.dev);
    live.hold("execute");
    let counter = crate::util::CountingPassphrase::new(&live.dir, &live.passphrase);
    let (a, b) = (
        spawn_redeem(&live, &counter.path, "15m"),
        spawn_redeem(&live, &counter.path, "15m"),
    );
    let asked = "POST /tx/v2.0/transactions/redeem";
    let first = live.wait_for_request(0, asked);
    let skip = live
        .requests()
        .iter()
        .position(|l| *l == first)
        .expect("logged");
    live.wait_for_request(skip + 1, asked);
    live.clear("execute");
    let outs = [a.wait_with_output(), b.wait_with_output()];
    let reads = counter.finish();
    let signed: Vec<_> = outs.iter().filter(|o| o.status.success()).collect();
    assert_eq!(signed.len(), 1, "one of two signs");
    let refused = outs
        .iter()
        .find(|o| !o.status.success())
        .expect("one refused");
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(3), "{err}");
    // Refused for that nonce before its passphrase: by the other flow's reservation,
    // or (a machine slow enough that it read the chain after the other's submission)
    // by the verifier, the node's count already past it.
    assert!(
        err.contains(&format!("nonce {nonce0}")) || err.contains(&format!("found {nonce0}")),
        "{err}"
    );
    assert_eq!(reads, 1, "the refused flow read a passphrase");
    assert_eq!(live.nonce(true, live.dev), nonce0 + 1, "one transaction");
    let entries = live.ok(&["log", "show"]);
    assert_eq!(entries.as_array().map(Vec::len), Some(1), "{entries:#}");
}

/// A redeem whose reservation expired while it waited for its passphrase (a 1 s lease,
/// the flow parked at a FIFO nobody answers yet) does not sign once another redeem took
/// the nonce meanwhile, whether the journal or the keystore's signing log notices
/// first: the chain shows one transaction and the log one signature.
#[test]
fn a_redeem_past_its_lease_signs_nothing_after_another_took_the_nonce() {
    let live = Live::shared("lease_expired_online");
    let nonce0 = live.nonce(true, live.dev);
    let fifo = live.dir.join("held.fifo");
    let made = std::process::Command::new("mkfifo")
        .args(["-m", "600"])
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let parked = spawn_redeem(&live, &fifo, "1s");
    // Parked once it opened the FIFO to read (a writer's non-blocking open succeeds
    // only then); the writer stays open, so the reader waits for its line.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut writer = loop {
        use std::os::unix::fs::OpenOptionsExt;
        const O_NONBLOCK: i32 = 0o4000;
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(O_NONBLOCK)
            .open(&fifo)
        {
            Ok(w) => break w,
            Err(_) => {
                assert!(std::time::Instant::now() < deadline, "never parked");
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    };
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let mut other = live.cmd();
    other
        .env("BRIDGECTL_RESERVATION_LEASE", "1s")
        .args(["redeem", "--from", &live.dev.to_string(), "--amount", "1"])
        .args(["--yes", "--json"]);
    let done = live.ok_cmd(other);
    assert_eq!(done["nonce"], nonce0, "{done:#}");
    std::io::Write::write_all(&mut writer, format!("{}\n", live.passphrase).as_bytes())
        .expect("answer");
    drop(writer);
    let out = parked.wait_with_output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains(&format!("nonce {nonce0}")), "{err}");
    assert_eq!(live.nonce(true, live.dev), nonce0 + 1, "one transaction");
    let entries = live.ok(&["log", "show"]);
    assert_eq!(entries.as_array().map(Vec::len), Some(1), "{entries:#}");
}

bctest!(
    a_missing_profile_names_the_ones_the_file_has,
    |dir: crate::util::Dir, mut cmd: crate::util::TestCommand| {
        let cfg = dir.write(
            "sandbox.toml",
            "[profiles.sandbox]\nbase_url = \"http://127.0.0.1:1\"\n",
        );
        cmd.args(["--config"]).args([&cfg]).args([
            "redeem",
            "--from",
            "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
            "--amount",
            "1",
        ]);
        // A profile the file does not have is a usage error (exit 2), named with the
        // ones it has.
        let err = cmd.fails_with(2);
        assert!(
            err.contains("no profile \"default\" in") && err.contains("(profiles: sandbox)"),
            "{err}"
        );
    }
);

bctest!(
    a_missing_setting_names_the_file_looked_for_and_how_to_name_another,
    |dir: crate::util::Dir, mut cmd: crate::util::TestCommand| {
        // No config file at all: the file looked for, and the ways to name another.
        cmd.args(["balance", "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"]);
        let err = cmd.fails_with(2);
        let looked = dir.join("xdg/config/bridgectl/config.toml");
        assert!(
            err.contains(&format!(
                "profile setting `base_url` is missing: there is no config file at {}",
                looked.display()
            )),
            "{err}"
        );
        for named in [
            "--config",
            "BRIDGECTL_CONFIG",
            "--profile",
            "BRIDGECTL_PROFILE",
        ] {
            assert!(err.contains(named), "{named}: {err}");
        }
        assert!(err.contains("BRIDGECTL_BASE_URL"), "{err}");
        // A file whose profile lacks it: that file and that profile.
        let cfg = dir.write(
            "mine.toml",
            "[profiles.work]\nweb3_url = \"http://127.0.0.1:1\"\n",
        );
        let err = dir
            .command()
            .args(["--config"])
            .args([&cfg])
            .args([
                "--profile",
                "work",
                "balance",
                "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
            ])
            .fails_with(2);
        assert!(
            err.contains(&format!(
                "profile setting `base_url` is missing: profile \"work\" of {} does not set it",
                cfg.display()
            )) && err.contains("[profiles.work] base_url = ..."),
            "{err}"
        );
        // A file that does not parse: one line naming the spot.
        let bad = dir.write("bad.toml", "[profiles.work]\nbase_url = 7\n");
        let err = dir
            .command()
            .args(["--config"])
            .args([&bad])
            .args(["balance"])
            .fails_with(2);
        assert!(
            err.starts_with(&format!(
                "error: config file {} is not valid: line 2, column 12: invalid type",
                bad.display()
            )),
            "{err}"
        );
        assert!(!err.contains("\\n"), "a literal \\n: {err}");
    }
);

bctest!(
    a_closed_reader_ends_the_process_quietly,
    |dir: crate::util::Dir, _cmd: crate::util::TestCommand| {
        for args in [&["completions", "bash"][..], &["--json", "history"][..]] {
            let mut c = dir.command();
            c.args(args);
            c.cmd
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            let mut child = crate::util::KillOnDrop::spawn(&mut c.cmd);
            // The reader is gone before anything is written.
            drop(child.stdout.take());
            let out = child.wait_with_output();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
            assert!(stderr.is_empty(), "{args:?}: {stderr}");
        }
    }
);

#[test]
fn a_request_rewritten_in_transit_is_caught_against_the_journal() {
    let live = Live::shared("airgap_rewritten");
    let dev = live.dev.to_string();
    let amount = units(1, live.sb.info.side.decimals);
    let input = format!("_amount={amount}");
    let req = live.dir.join("request.json");
    let req_s = req.to_str().expect("utf8").to_owned();
    live.ok(&[
        "action",
        "exec",
        "redeem",
        "--from",
        &dev,
        "--input",
        &input,
        "--function",
        "redeem",
        "--out",
        &req_s,
    ]);
    // Rewrite the request consistently (calldata and intent agree, txId kept): the
    // offline side's own checks pass, but it is not what was verified online.
    let mut v: Value = serde_json::from_slice(&std::fs::read(&req).expect("req")).expect("json");
    let bigger = (amount * U256::from(5)).to_string();
    let data = v["rawTx"]["data"].as_str().expect("data").to_owned();
    let word = format!("{:064x}", amount * U256::from(5));
    v["rawTx"]["data"] = Value::String(format!("{}{word}", &data[..data.len() - 64]));
    v["intent"]["args"]["_amount"] = Value::String(bigger);
    let rewritten = live.dir.join("rewritten.json");
    std::fs::write(&rewritten, serde_json::to_vec_pretty(&v).expect("ser")).expect("write");
    // On this (online) machine the rewrite is caught at once: its journal holds what
    // was verified.
    let err = live.fails(&["sign", rewritten.to_str().expect("utf8"), "--yes"], 3);
    assert!(err.contains("changed after it was written"), "{err}");
    // An offline machine has no such record: its own checks pass, and submit catches it.
    let offline = offline_signer(&live, "airgap_rewritten_offline");
    let signed = live.dir.join("signed.json");
    let nonce = live.nonce(true, live.dev).to_string();
    let mut sign = offline.command();
    sign.env("BRIDGECTL_PASSPHRASE_FILE", offline.join("pass"))
        .args([
            "sign",
            rewritten.to_str().expect("utf8"),
            "--yes",
            "--nonce",
            &nonce,
            "--out",
            signed.to_str().expect("utf8"),
        ]);
    let o = sign.output();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let nonce0 = live.nonce(true, live.dev);
    // The journal's flow is the reference, with or without the (rewritten) request: the
    // refusal is that comparison's, naming the calldata verified online and the one
    // signed offline.
    let refusal = format!(
        "error: signed bundle does not match its request: data: the request says {data}, \
         the signed transaction has {}",
        v["rawTx"]["data"].as_str().expect("data")
    );
    // Without the request, the flow named by the bundle's txId is the reference.
    let err = live.fails(&["submit", signed.to_str().expect("utf8")], 3);
    assert_eq!(err.lines().next(), Some(refusal.as_str()), "{err}");
    let err = live.fails(
        &[
            "submit",
            signed.to_str().expect("utf8"),
            "--request",
            rewritten.to_str().expect("utf8"),
        ],
        3,
    );
    assert_eq!(err.lines().next(), Some(refusal.as_str()), "{err}");
    assert_eq!(live.nonce(true, live.dev), nonce0, "nothing was sent");
}

#[test]
fn no_gas_price_cap_means_no_signature_and_actions_need_their_function() {
    let live = Live::shared("no_gas_cap");
    let dev = live.dev.to_string();
    // Without the node URLs nothing can say what a sane gas price is.
    let profile = live.dir.join("xdg/config/bridgectl/config.toml");
    let text = std::fs::read_to_string(&profile).expect("profile");
    let stripped: String = text
        .lines()
        .filter(|l| !l.contains("rpc_url"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&profile, stripped).expect("write");
    let counter = crate::util::CountingPassphrase::new(&live.dir, &live.passphrase);
    let mut c = live.cmd();
    c.env("BRIDGECTL_PASSPHRASE_FILE", &counter.path)
        .args(["redeem", "--from", &dev, "--amount", "1", "--yes"]);
    let out = c.output();
    assert_eq!(counter.finish(), 0, "the passphrase was read");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("gasPrice") && err.contains("cap"), "{err}");
    // With a fee cap it goes through.
    let out = live.ok(&[
        "redeem",
        "--from",
        &dev,
        "--amount",
        "1",
        "--yes",
        "--max-fee",
        "0.01eth",
    ]);
    // Without a node nothing here sees the chain: the redeem stays open, whatever the
    // platform says (`ends::a_redeem_without_a_node_is_never_completed_by_the_platforms_word`).
    assert_eq!(out["state"], "submitted", "{out:#}");
    // An action signed here must say which function it calls: the platform lists
    // no function for an action it does not list.
    let err = live.fails(
        &[
            "action",
            "exec",
            "unlisted",
            "--from",
            &dev,
            "--input",
            "_amount=1",
            "--yes",
        ],
        2,
    );
    assert!(err.contains("--function"), "{err}");
}

/// Runs `args` with a passphrase source that counts its reads; returns the output and
/// the count.
fn counted(live: &Live, args: &[&str]) -> (std::process::Output, usize) {
    let counter = crate::util::CountingPassphrase::new(&live.dir, &live.passphrase);
    let mut c = live.cmd();
    c.env("BRIDGECTL_PASSPHRASE_FILE", &counter.path).args(args);
    let out = c.output();
    let reads = counter.finish();
    live.check_secrets(&out);
    (out, reads)
}

#[test]
fn a_hostile_platform_cannot_change_a_transfer_or_a_swap() {
    use bridgectl_sandbox::Hostile;
    let live = Live::shared("hostile_transfer");
    // A payee no other test of the shared sandbox pays.
    let payee =
        alloy_primitives::Address::from_slice(&alloy_primitives::keccak256(&live.scope)[12..]);
    let one = units(1, live.sb.info.main.decimals);
    // Nonce and gas from the platform: its next-nonce and raw MT transfer operations are
    // the only parts of these transactions it has a say in.
    let payee_s = payee.to_string();
    let tail = [
        "--amount",
        "1",
        "--yes",
        "--nonce-from",
        "platform",
        "--gas-from",
        "platform",
    ];
    let transfer = [
        &[
            "transfer", "--token", "mt", "--from", "dev", "--to", &payee_s,
        ][..],
        &tail[..],
    ]
    .concat();
    let swap = [&["swap", "--from", "dev"][..], &tail[..]].concat();
    for kind in Hostile::ALL {
        live.hostile(Some(kind));
        // What the client takes from the platform, tampered: refused before the
        // passphrase is read, naming the field.
        let refused = match kind {
            Hostile::InflatedGasPrice => Some("gasPrice"),
            Hostile::InflatedGasLimit => Some("gasLimit"),
            Hostile::MissingChainId => Some("chainId"),
            Hostile::ExtraField => Some("maxFeePerGas"),
            Hostile::NonceGap => Some("a gap"),
            Hostile::NonceReplacement => Some("a replacement"),
            // Fields of the platform's rawTx the client never takes: the transaction
            // it signs is still exactly the one asked for.
            Hostile::OtherFrom
            | Hostile::OtherChainId
            | Hostile::OtherContract
            | Hostile::OtherSelector
            | Hostile::OtherAmount => None,
        };
        for args in [&transfer[..], &swap[..]] {
            let (nonce0, mt0, payee0) = (
                live.nonce(false, live.dev),
                live.balance(false, live.dev),
                live.balance(false, payee),
            );
            let (out, reads) = counted(&live, args);
            let err = String::from_utf8_lossy(&out.stderr);
            let what = format!("{kind:?} on {}", args[0]);
            match refused {
                Some(field) => {
                    assert_eq!(out.status.code(), Some(3), "{what} not refused:\n{err}");
                    assert_eq!(reads, 0, "{what}: the passphrase was read");
                    assert!(err.contains(field), "{what}: {err}");
                    assert_eq!(live.nonce(false, live.dev), nonce0, "{what}: sent");
                }
                None => {
                    assert!(out.status.success(), "{what}:\n{err}");
                    assert_eq!(reads, 1, "{what}");
                    // One MT left the account (gas is paid in ETH), to the payee when
                    // it was a transfer.
                    assert_eq!(mt0 - live.balance(false, live.dev), one, "{what}");
                    let paid = live.balance(false, payee) - payee0;
                    let want = if args[0] == "transfer" {
                        one
                    } else {
                        U256::ZERO
                    };
                    assert_eq!(paid, want, "{what}");
                }
            }
        }
    }
    // Every refused flow failed unsigned.
    let rows = live.journal_rows();
    let refused = rows.iter().filter(|r| r.1 == "failed").count();
    assert_eq!(refused, 2 * 6, "{rows:?}");
    assert!(
        rows.iter()
            .filter(|r| r.1 == "failed")
            .all(|r| r.2.is_none()),
        "{rows:?}"
    );
}

#[test]
fn a_managed_signature_of_something_else_is_never_submitted() {
    use bridgectl_sandbox::Hostile;
    let live = Live::shared("hostile_managed");
    // A managed account of its own: its nonces are counted.
    let managed = live.sb.new_managed();
    let (m, dev) = (managed.to_string(), live.dev.to_string());
    // Nonce and gas from the node: only operation 2 (the platform signs for the managed
    // account) is hostile.
    let from_node = ["--nonce-from", "node", "--gas-from", "node"];
    let args = [&managed_transfer(&m, &dev)[..], &from_node[..]].concat();
    // The managed account starts with no MT: an honest transfer from the dev account;
    // then one honest managed transfer, so that a nonce below the next one is a real
    // replacement.
    live.ok(&[
        "transfer", "--token", "mt", "--from", &dev, "--to", &m, "--amount", "5", "--yes",
    ]);
    managed_transfer_of_one(&live, &m, &from_node);
    let submits0 = live.submitted().len();
    let nonce0 = live.nonce(false, managed);
    for kind in Hostile::ALL {
        live.hostile(Some(kind));
        // A managed account has no local key, so no passphrase to count: what holds is
        // that nothing the platform signed was submitted or sent (after the loop).
        let (out, _) = counted(&live, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{kind:?} not refused:\n{err}");
        let field = match kind {
            Hostile::OtherFrom => "from (recovered signer)",
            Hostile::OtherChainId => "chainId",
            Hostile::MissingChainId => "none (a pre-EIP-155 signature",
            Hostile::OtherContract => "to:",
            Hostile::OtherSelector | Hostile::OtherAmount => "data:",
            Hostile::InflatedGasPrice => "gasPrice",
            Hostile::InflatedGasLimit => "gasLimit",
            Hostile::ExtraField => "type: the request says legacy",
            Hostile::NonceGap | Hostile::NonceReplacement => "nonce:",
        };
        assert!(err.contains(field), "{kind:?}: {err}");
    }
    assert_eq!(
        live.submitted().len(),
        submits0,
        "a signature was submitted"
    );
    assert_eq!(live.nonce(false, managed), nonce0, "a transaction was sent");
    // Every hostile flow failed with nothing signed journaled (the transfer to the
    // managed account and the honest managed one completed).
    let rows = live.journal_rows();
    let failed: Vec<_> = rows.iter().filter(|r| r.1 == "failed").collect();
    assert_eq!(failed.len(), Hostile::ALL.len(), "{rows:?}");
    assert!(failed.iter().all(|r| r.2.is_none()), "{rows:?}");
    assert_eq!(rows.len(), Hostile::ALL.len() + 2, "{rows:?}");
    // Honest again: the same transfer goes through.
    live.hostile(None);
    managed_transfer_of_one(&live, &m, &from_node);
}

/// `action list` shows what the platform defines; `action exec` takes an action's
/// function from it when `--function` is not given, and runs a view action with no key,
/// passphrase or confirmation.
#[test]
fn action_list_defaults_the_function_and_views_need_no_key() {
    let live = Live::shared("action_list");
    let list = live.ok(&["action", "list"]);
    let find = |name: &str| {
        list.as_array()
            .expect("items")
            .iter()
            .find(|a| a["name"] == name)
            .unwrap_or_else(|| panic!("{name} not in {list:#}"))
            .clone()
    };
    assert_eq!(find("redeem")["function"], "redeem");
    assert_eq!(find("redeem")["view"], false);
    assert_eq!(find("balanceOf")["view"], true);
    // The text is a table: a header, and every row's columns under its names.
    let mut c = live.cmd();
    c.args(["action", "list"]);
    let text = String::from_utf8(live.run_ok(c).stdout).expect("utf8");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("NAME"), "{text}");
    let at = lines[0].find("FUNCTION").expect("FUNCTION header");
    let kind = lines[0].find("KIND").expect("KIND header");
    let row = lines
        .iter()
        .find(|l| l.starts_with("balanceOf "))
        .expect("balanceOf row");
    assert_eq!(&row[at..at + "balanceOf".len()], "balanceOf", "{text}");
    assert_eq!(&row[kind..kind + 4], "view", "{text}");

    // A view by a key of this keystore: no --function, no --from needed even, no
    // passphrase read, no --yes.
    let fifo = crate::util::CountingPassphrase::new(&live.dir, "wrong");
    let view_from = |from: &[&str]| {
        let mut c = live.cmd();
        c.env("BRIDGECTL_PASSPHRASE_FILE", &fifo.path)
            .args([
                "--json",
                "action",
                "exec",
                "balanceOf",
                "--input",
                "_owner=dev",
            ])
            .args(from);
        live.ok_cmd(c)
    };
    let view = view_from(&["--from", "dev"]);
    let keyless = view_from(&[]);
    assert_eq!(fifo.finish(), 0, "a view read the passphrase");
    assert_eq!(view["kind"], "view", "{view:#}");
    let st = live.balance(true, live.dev).to_string();
    assert_eq!(view["value"], st.as_str(), "{view:#}");
    assert_eq!(keyless["value"], st.as_str(), "{keyless:#}");

    // A sending action without --function is checked against the function the platform
    // lists, but that is the platform's choice, not a pin: --yes is refused before the
    // passphrase is read (a platform mapping `redeem` to `stake` signs nothing unasked).
    let amount = units(1, live.sb.info.side.decimals).to_string();
    let input = format!("_amount={amount}");
    let dev = live.dev.to_string();
    let counted = crate::util::CountingPassphrase::new(&live.dir, &live.passphrase);
    let mut c = live.cmd();
    c.env("BRIDGECTL_PASSPHRASE_FILE", &counted.path).args([
        "action", "exec", "stake", "--from", &dev, "--input", &input, "--yes",
    ]);
    let err = c.fails_with(3);
    assert!(
        err.contains("signing blind: --yes needs the call pinned by you")
            && err.contains("a function the platform's action list chose does not count"),
        "{err}"
    );
    assert_eq!(counted.finish(), 0, "the passphrase was read");
    // The operator's --function with every argument pins it.
    let eoa = live.ok(&[
        "action",
        "exec",
        "stake",
        "--function",
        "stake",
        "--from",
        &dev,
        "--input",
        &input,
        "--yes",
    ]);
    assert_eq!(eoa["kind"], "eoa", "{eoa:#}");
}

/// A redeem whose redemption answers slowly says that it is still waiting, with the
/// time spent and the deadline, while the one slow answer is awaited.
#[test]
fn a_slow_relayer_is_reported_while_waited_for() {
    let live = Live::shared("slow_relayer");
    let dev = live.dev.to_string();
    live.delay("redeems", 6_000);
    let mut c = live.cmd();
    c.args(redeem_one(&dev, "60"));
    let out = live.run_ok(c);
    live.clear("redeems");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("» waiting for the relayer: 5 s of 60 s"),
        "{err}"
    );
}

/// More than the sender holds is refused before anything reaches the platform: a redeem
/// (no action executed), a swap (no swap address issued), an ST and an MT transfer
/// (nothing built or sent), each exit 3 naming the balance, with no passphrase read and
/// no flow journaled.
#[test]
fn an_amount_above_the_balance_is_refused_before_anything_is_executed() {
    let live = Live::shared("over_balance");
    live.node_only();
    let dev = live.dev.to_string();
    let account = format!("{:x}", live.dev);
    let nonces = (live.nonce(false, live.dev), live.nonce(true, live.dev));
    let cases: [(&[&str], &str); 4] = [
        (&["redeem", "--from", "dev", "--amount", "100000"], "ST"),
        (&["swap", "--from", "dev", "--amount", "100000"], "MT"),
        (
            &["transfer", "--token", "st", "--from", "dev", "--to", "dev"],
            "ST",
        ),
        (
            &["transfer", "--token", "mt", "--from", "dev", "--to", "dev"],
            "MT",
        ),
    ];
    for (args, symbol) in cases {
        let mut args = args.to_vec();
        if args[0] == "transfer" {
            args.extend(["--amount", "100000"]);
        }
        args.extend(["--yes", "--json"]);
        let (out, reads) = counted(&live, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {err}");
        assert!(
            err.contains(&format!(
                "{dev} holds 100 {symbol}, less than the 100000 {symbol} asked for"
            )),
            "{args:?}: {err}"
        );
        let v = crate::util::strict_json(&String::from_utf8_lossy(&out.stdout));
        assert_eq!(v["error"]["code"], "refused", "{v}");
        assert_eq!(reads, 0, "{args:?}: the passphrase was read");
    }
    let asked: Vec<String> = live
        .sb
        .state
        .request_log()
        .into_iter()
        .filter(|l| l.to_lowercase().contains(&account))
        .collect();
    assert!(asked.is_empty(), "the platform was asked: {asked:#?}");
    assert_eq!(
        (live.nonce(false, live.dev), live.nonce(true, live.dev)),
        nonces
    );
    assert!(live.journal_rows().is_empty(), "{:?}", live.journal_rows());
}
