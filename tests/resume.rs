//! `bridgectl resume` of flows that stopped before signing, against a live sandbox: a
//! redeem whose passphrase was wrong (from a file, or three times at a terminal) is
//! resumed (checked again, shown and asked again, signed, redeemed); a refused one is
//! not, and `history` hides it unless asked; a signed flow is resumed with no
//! passphrase source at all.

use serde_json::Value;

use crate::live::{Faults, Live};

/// The flows of `history --json`, newest first.
fn flows(live: &Live) -> Vec<Value> {
    match live.ok(&["history"]) {
        Value::Array(v) => v,
        other => panic!("history --json is not an array: {other}"),
    }
}

/// `redeem --from dev --amount 1 --yes`, to add to.
fn redeem_one(live: &Live) -> crate::util::TestCommand {
    let mut c = live.cmd();
    c.args(["redeem", "--from", "dev", "--amount", "1", "--yes"]);
    c
}

/// Text `history` (stdout, stderr) with `extra` arguments.
fn history_text(live: &Live, extra: &[&str]) -> (String, String) {
    let mut c = live.cmd();
    c.args(["history"]).args(extra);
    let out = live.run_ok(c);
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_redeem_with_a_wrong_passphrase_is_resumed_with_the_right_one() {
    let live = Live::shared("resume_at_approval");
    let wrong = live.dir.write("wrong-passphrase", "not the passphrase\n");
    let st_before = live.balance(true, live.dev);
    let nonce0 = live.nonce(true, live.dev);

    // The passphrase is wrong: nothing signed, the flow named with how to go on.
    let mut c = redeem_one(&live);
    c.env("BRIDGECTL_PASSPHRASE_FILE", &wrong);
    let out = c.output();
    live.check_secrets(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    let flow = flows(&live)[0].clone();
    let tx_id = flow["txId"].as_str().expect("txId").to_owned();
    // Not over: it stays where it stopped (verified), for `resume`.
    assert_eq!(flow["state"], "verified", "{flow:#}");
    assert!(flow["signedTx"].is_null(), "{flow:#}");
    assert_eq!(executes(&live), 1);
    assert!(
        err.contains(&format!(
            "flow {tx_id} stopped before signing, nothing was sent"
        )),
        "{err}"
    );
    assert!(err.contains("wrong passphrase"), "{err}");
    assert!(
        err.contains(&format!(
            "hint: the transaction is journaled, unsigned: `bridgectl resume {tx_id}`"
        )),
        "{err}"
    );
    // It can be resumed, so `history` shows it, not as failed.
    let (shown, _) = history_text(&live, &[]);
    let row = shown.lines().find(|l| l.contains(&tx_id)).expect("listed");
    assert!(
        row.contains(" verified ") && !row.contains("failed"),
        "{row}"
    );

    // Resumed with the wrong passphrase again: the same stop, still resumable.
    let mut c = live.cmd();
    c.env("BRIDGECTL_PASSPHRASE_FILE", &wrong)
        .args(["resume", &tx_id, "--yes"]);
    let out = c.output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("stopped before signing"), "{err}");

    // With the right one: the summary shown, signed, sent, redeemed.
    let mut c = live.cmd();
    c.args(["resume", &tx_id, "--yes"]);
    let out = c.output();
    live.check_secrets(&out);
    crate::util::assert_success(&c.cmd, &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.starts_with(&format!("resumed redeem {tx_id}: signed and sent tx 0x")),
        "{stdout}"
    );
    assert!(stdout.contains("redemption completed"), "{stdout}");
    assert!(
        stderr.contains("_amount"),
        "the summary was shown: {stderr}"
    );
    assert_eq!(live.nonce(true, live.dev), nonce0 + 1, "one transaction");
    assert!(live.balance(true, live.dev) < st_before, "ST was redeemed");
    let flow = flows(&live)[0].clone();
    assert_eq!(flow["txId"], tx_id.as_str());
    assert_eq!(flow["state"], "completed");
    assert!(live.mined(true, flow["txHash"].as_str().expect("hash")));

    // Resuming it again sends nothing.
    let again = live.ok(&["resume", &tx_id]);
    assert_eq!(again["resent"], false, "{again:#}");
    // The action the first run executed was the one signed: the platform executed one.
    assert_eq!(executes(&live), 1, "a resume executed the action again");
}

/// How many times the platform executed a transaction action for the test's account
/// (the test's requests: `POST /tx/v2.0/transactions/{action}` naming the account).
fn executes(live: &Live) -> usize {
    let account = format!("{:x}", live.dev);
    live.requests()
        .iter()
        .filter(|l| {
            l.starts_with("POST /tx/v2.0/transactions/") && l.to_lowercase().contains(&account)
        })
        .count()
}

#[test]
fn failed_flows_stay_over_and_signed_ones_resume_without_a_passphrase() {
    let live = Live::shared("resume_refused");

    // Refused by the checks (a gas-price cap of 1 wei): not resumable, and hidden from
    // the text history unless asked.
    let mut c = redeem_one(&live);
    let out = c.args(["--max-gas-price", "1"]).output();
    live.check_secrets(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("gasPrice"), "{err}");
    let refused = flows(&live)[0]["txId"].as_str().expect("txId").to_owned();
    let err = live.fails(&["resume", &refused], 1);
    assert!(
        err.contains(&format!(
            "flow {refused} cannot be resumed (state failed): it ended at step `refused` \
             before anything was signed"
        )),
        "{err}"
    );
    let (shown, footer) = history_text(&live, &[]);
    assert!(!shown.contains(&refused), "{shown}");
    assert!(
        footer.contains(
            "1 flow that failed before anything was signed is hidden: `bridgectl history --all` shows it"
        ),
        "{footer}"
    );
    let (all, footer) = history_text(&live, &["--all"]);
    assert!(all.contains(&refused), "{all}");
    assert!(!footer.contains("hidden"), "{footer}");
    assert_eq!(flows(&live)[0]["txId"], refused.as_str(), "--json lists it");

    // Signed, the answer to the submission lost: resumed with no passphrase source at
    // all (and no terminal), none read.
    live.drop_answers("submit");
    let mut c = redeem_one(&live);
    c.env("BRIDGECTL_RETRIES", "0");
    assert_eq!(c.output().status.code(), Some(7));
    live.clear("submit");
    let signed = flows(&live)[0].clone();
    assert_eq!(signed["state"], "signed", "{signed:#}");
    let tx_id = signed["txId"].as_str().expect("txId");
    let mut c = live.cmd();
    c.cmd.env_remove("BRIDGECTL_PASSPHRASE_FILE");
    c.args(["--json", "resume", tx_id]);
    let resumed = live.ok_cmd(c);
    assert_eq!(resumed["signedNow"], false);
    assert_eq!(resumed["status"], "completed");
    assert_eq!(resumed["txHash"], signed["txHash"]);
    // The counted source: never read either.
    let again = live.resume_unsigned(tx_id);
    assert_eq!(again["resent"], false);
}

/// `bridgectl ARGS` on a pseudo-terminal of its own (its controlling terminal), with the
/// test's token and the test's journal, and no passphrase source but the terminal.
fn on_a_terminal(live: &Live, args: &[&str]) -> rexpect::session::PtySession {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_bridgectl"));
    live.dir.confine(&mut cmd);
    cmd.env("BRIDGECTL_ACCESS_TOKEN", live.token())
        .env("BRIDGECTL_JOURNAL", live.dir.join("journal.sqlite3"))
        .args(args);
    rexpect::session::spawn_command(cmd, Some(60_000)).expect("spawn on a pty")
}

/// Confirms the summary on `p` and types `passphrases` at its prompts.
fn confirm_and_type(p: &mut rexpect::session::PtySession, passphrases: &[&str]) {
    p.exp_string("_amount").expect("the summary");
    p.exp_string("sign and submit this transaction? [y/N]")
        .expect("the question");
    p.send_line("y").expect("y");
    for passphrase in passphrases {
        p.exp_string("passphrase for key")
            .expect("the passphrase prompt");
        p.send_line(passphrase).expect("typed");
    }
}

#[test]
fn three_wrong_passphrases_at_the_terminal_then_resume_asks_again_and_redeems() {
    use rexpect::process::WaitStatus;
    let live = Live::shared("resume_tty");
    let nonce0 = live.nonce(true, live.dev);

    let mut p = on_a_terminal(&live, &["redeem", "--from", "dev", "--amount", "1"]);
    confirm_and_type(&mut p, &["wrong 1", "wrong 2", "wrong 3"]);
    let rest = p.exp_eof().expect("eof");
    assert!(
        matches!(p.process().wait(), Ok(WaitStatus::Exited(_, 4))),
        "{rest}"
    );
    let tx_id = flows(&live)[0]["txId"].as_str().expect("txId").to_owned();
    assert!(
        rest.contains(&format!("flow {tx_id} stopped before signing")),
        "{rest}"
    );
    assert!(
        rest.contains(&format!("`bridgectl resume {tx_id}`")),
        "{rest}"
    );

    // Shown and asked the same way again; the right passphrase redeems.
    let mut p = on_a_terminal(&live, &["resume", &tx_id]);
    let right = live.passphrase.clone();
    confirm_and_type(&mut p, &[&right]);
    p.exp_string(&format!("resumed redeem {tx_id}: signed and sent tx 0x"))
        .expect("resumed");
    p.exp_eof().expect("eof");
    assert!(matches!(p.process().wait(), Ok(WaitStatus::Exited(_, 0))));
    assert_eq!(live.nonce(true, live.dev), nonce0 + 1, "one transaction");
    assert_eq!(flows(&live)[0]["state"], "completed");
}

/// The txHash of every entry of the keystore's signing log, oldest first.
fn logged_hashes(live: &Live) -> Vec<String> {
    let entries = live.ok(&["log", "show"]);
    entries
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["entry"]["txHash"].as_str().expect("txHash").to_owned())
        .collect()
}

/// A process stopped at each crash window of a signature (failpoints, debug builds):
/// after the signing-log append and before the journal has the bytes, and after the
/// journal and before anything was sent. `resume` finishes both: the chain shows one
/// transaction, and it is the one the signing log recorded (a second signature at the
/// nonce would be a second entry or a refusal). Without the signing log accepting the
/// very same transaction again, the first resume is refused.
#[test]
fn a_redeem_stopped_in_either_crash_window_is_finished_by_resume_once() {
    let live = Live::shared("crash_windows");
    for (n, window) in ["signed-not-journaled", "journaled-not-sent"]
        .into_iter()
        .enumerate()
    {
        let nonce0 = live.nonce(true, live.dev);
        let mut c = redeem_one(&live);
        c.env("BRIDGECTL_FAILPOINT", window);
        let out = c.output();
        crate::util::assert_aborted(&out, window);
        let flow = flows(&live)[0].clone();
        let tx_id = flow["txId"].as_str().expect("txId").to_owned();
        assert_eq!(
            flow["signedTx"].is_null(),
            window == "signed-not-journaled",
            "{window}: {flow:#}"
        );
        assert_eq!(live.nonce(true, live.dev), nonce0, "{window}: sent");
        assert_eq!(logged_hashes(&live).len(), n + 1, "{window}: logged");

        let mut c = live.cmd();
        c.args(["--json", "resume", &tx_id, "--yes"]);
        let resumed = live.ok_cmd(c);
        assert_eq!(live.nonce(true, live.dev), nonce0 + 1, "{window}: once");
        let logged = logged_hashes(&live);
        assert_eq!(logged.len(), n + 1, "{window}: one entry per signature");
        assert_eq!(
            resumed["txHash"].as_str(),
            logged.last().map(String::as_str),
            "{window}: {resumed:#}"
        );
    }
}

/// `history --limit N` says the journal holds more only when it holds more that the
/// list would show: not with exactly N flows, and (in the text list) not for flows it
/// hides anyway; `--json` lists every flow, so every flow past N counts there.
#[test]
fn history_says_it_holds_more_only_when_it_does() {
    let live = Live::shared("history_limit");
    let more = "the journal holds more";
    let note = |args: &[&str]| {
        let mut c = live.cmd();
        c.args(["history"]).args(args);
        String::from_utf8_lossy(&live.run_ok(c).stderr).into_owned()
    };
    live.ok(&["redeem", "--from", "dev", "--amount", "1", "--yes"]);
    for args in [&["--limit", "1"][..], &["--limit", "1", "--json"][..]] {
        assert!(!note(args).contains(more), "one flow, {args:?}");
    }
    // A refused flow, newer: hidden from the text list, so not "more" there.
    let mut c = redeem_one(&live);
    assert_eq!(
        c.args(["--max-gas-price", "1"]).output().status.code(),
        Some(3)
    );
    let text = note(&["--limit", "1"]);
    assert!(!text.contains(more) && text.contains("is hidden"), "{text}");
    let json = note(&["--limit", "1", "--json"]);
    assert!(
        json.contains("the newest flow is listed; the journal holds more"),
        "{json}"
    );
    assert!(!note(&["--limit", "2", "--json"]).contains(more));
    // A second shown flow: more, in both.
    live.ok(&["redeem", "--from", "dev", "--amount", "1", "--yes"]);
    assert!(note(&["--limit", "1"]).contains(more));
    assert!(!note(&["--limit", "2"]).contains(more));
    live.fails(&["history", "--limit", "0"], 2);
}
