//! How a command fails, for a script: with `--json`, one JSON object on stdout,
//! `{"error": {"code", "message", "exit"}}` (with `txId`, `batchId`, `hash` and `hint`
//! where the failure names them), beside the text on stderr; and the exit code the
//! README's table gives its kind.

use std::process::Output;

use serde_json::json;

use crate::util::{Dir, TestCommand, strict_json};

/// Runs `cmd`, asserts exit `exit`, and that stdout is exactly the error object of kind
/// `code` whose message is what stderr says after `error: ` and whose `hint` is what
/// stderr's `hint:` line says (both or neither), with no handle (`txId`, `batchId`,
/// `hash`: these cases name none). Returns that message.
fn json_error(cmd: &mut TestCommand, code: &str, exit: i32) -> String {
    let (message, handles) = json_error_with_handles(cmd, code, exit);
    assert_eq!(handles, json!({}), "{code}: no handle expected");
    message
}

/// [`json_error`] of a failure that may name handles: returns the message and the
/// handles the object carries (`txId`, `batchId`, `hash`, as an object of those keys).
fn json_error_with_handles(
    cmd: &mut TestCommand,
    code: &str,
    exit: i32,
) -> (String, serde_json::Value) {
    let out: Output = cmd.output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(exit), "{code}: {stderr}");
    let v = strict_json(&String::from_utf8_lossy(&out.stdout));
    crate::json::assert_schema("error", &v);
    let message = v["error"]["message"].as_str().expect("message").to_owned();
    let hint = stderr
        .lines()
        .find_map(|l| l.strip_prefix("hint: "))
        .map(str::to_owned);
    let mut expected = json!({"code": code, "message": message, "exit": exit});
    if let Some(hint) = &hint {
        expected["hint"] = hint.as_str().into();
    }
    let mut handles = json!({});
    for key in ["txId", "batchId", "hash"] {
        if let Some(h) = v["error"].get(key) {
            expected[key] = h.clone();
            handles[key] = h.clone();
        }
    }
    assert_eq!(v, json!({ "error": expected }), "{code}");
    // Progress lines may come first; the error's own line is the one the JSON quotes.
    let line = stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .expect("an error line on stderr");
    assert_eq!(line, format!("error: {message}"), "{code}");
    (message, handles)
}

/// `c` running an action for `from` on a platform where nothing listens.
fn at_a_closed_port(mut c: TestCommand, from: &str) -> TestCommand {
    c.env("BRIDGECTL_BASE_URL", "http://127.0.0.1:1")
        .env("BRIDGECTL_ACCESS_TOKEN", "not-a-real-token")
        .args(["action", "exec", "stake", "--from", from])
        .args(["--input", "_amount=1", "--function", "stake", "--yes"]);
    c
}

bctest!(json_errors_are_one_object_on_stdout, |dir: Dir, _cmd| {
    let run = |args: &[&str]| {
        let mut c = dir.command();
        c.env("BRIDGECTL_JOURNAL", dir.join("journal.sqlite3"))
            .args(["--json"])
            .args(args);
        c
    };
    // Usage, as clap finds it: stderr keeps clap's text, the JSON its first lines.
    let mut c = run(&["transfer", "--token", "xx"]);
    let out = c.output();
    assert_eq!(out.status.code(), Some(2));
    let v = strict_json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        v,
        json!({"error": {"code": "usage", "exit": 2,
            "message": "invalid value 'xx' for '--token <TOKEN>' [possible values: mt, st]"}})
    );
    // clap's tip is kept, as the JSON's hint.
    let mut c = run(&["history", "--limt", "3"]);
    let out = c.output();
    assert_eq!(out.status.code(), Some(2));
    let v = strict_json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        v["error"]["hint"], "a similar argument exists: '--limit'",
        "{v:#}"
    );
    assert_eq!(v["error"]["message"], "unexpected argument '--limt' found");
    // `--help` is no error: no JSON object.
    let help = run(&["history", "--help"]).output();
    assert_eq!(help.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&help.stdout).contains("\"error\""));
    // Usage, as a command finds it.
    let m = json_error(&mut run(&["log", "show", "--since", "soon"]), "usage", 2);
    assert!(m.starts_with("--since \"soon\": expected RFC 3339"), "{m}");
    // Not found.
    let m = json_error(&mut run(&["history", "deadbeef"]), "not-found", 6);
    assert_eq!(m, "no flow deadbeef in the journal");
    // Refused.
    let m = json_error(&mut run(&["tx", "decode", "0xzz"]), "refused", 3);
    assert!(m.starts_with("malformed transaction"), "{m}");
    // Remote: nothing listens where the platform should be.
    let mut c = at_a_closed_port(run(&[]), "0x0000000000000000000000000000000000000001");
    let m = json_error(&mut c, "remote", 7);
    assert!(m.contains("Connection refused"), "{m}");
});

/// Every exit code of the README's table, produced by a real case (the table itself is
/// checked against `src/exit.rs` by a unit test there).
#[test]
fn each_documented_exit_code_has_a_real_case() {
    let live = crate::live::Live::shared("exit_codes");
    let dev = live.dev.to_string();
    let run = |args: &[&str], code: i32| live.fails(args, code);
    // 1: anything else, here the keystore is not a directory.
    let err = run(&["--keystore", "/dev/null/ks", "key", "list"], 1);
    assert!(err.contains("Not a directory"), "{err}");
    // 2: usage, from clap, from a command, and from the config.
    run(&["transfer", "--token", "xx"], 2);
    run(&["log", "show", "--since", "soon"], 2);
    live.dir.write("broken.toml", "[profiles.default\n");
    let err = run(&["--config", "broken.toml", "status", "abc"], 2);
    assert!(
        err.contains("config file broken.toml is not valid"),
        "{err}"
    );
    let err = run(&["--profile", "nope", "status", "abc"], 2);
    assert!(err.contains("no profile \"nope\""), "{err}");
    // 3: refused input, a transaction and a batch file alike.
    run(&["tx", "decode", "0xzz"], 3);
    live.dir.write("bad.csv", "op,from,amount\nredeem,dev\n");
    let err = run(&["batch", "plan", "bad.csv"], 3);
    assert!(err.contains("bad.csv:2:"), "{err}");
    // 4: no passphrase to be had.
    let mut c = live.dir.command();
    c.args(["key", "new", "nobody", "--unsafe-test-kdf"]);
    c.fails_with(4);
    // 5: nobody to confirm on.
    run(&["log", "acknowledge"], 5);
    // 6: not found: a journal record, a config file named.
    run(&["history", "deadbeef"], 6);
    let err = run(&["--config", "missing.toml", "status", "abc"], 6);
    assert!(
        err.contains("cannot read config file missing.toml"),
        "{err}"
    );
    // 7: the platform cannot be reached.
    let mut c = at_a_closed_port(live.cmd(), &dev);
    c.fails_with(7);
    // 8: no time to wait for the redemption; 9: nor for a batch's items.
    let err = run(
        &[
            "redeem",
            "--from",
            "dev",
            "--amount",
            "1",
            "--yes",
            "--timeout",
            "0",
        ],
        8,
    );
    assert!(err.contains("bridgectl resume"), "{err}");
    live.dir.write("one.csv", "op,from,amount\nredeem,dev,1\n");
    run(&["batch", "run", "one.csv", "--yes", "--timeout", "0"], 9);
    // 10: exists already: a key's label, an output file.
    let err = run(&["key", "new", "dev", "--unsafe-test-kdf"], 10);
    assert!(err.contains("already exists"), "{err}");
    live.dir.write("taken.jsonl", "");
    let err = run(&["log", "export", "--out", "taken.jsonl"], 10);
    assert!(err.contains("already exists: not overwriting it"), "{err}");
}

/// A failure that names a flow or a batch carries it as a field a script uses as it is
/// (no cutting it out of the message), and the hint as the `hint:` line says it: a
/// redeem that timed out (its txId and transaction hash), one stopped by a wrong
/// passphrase (its txId), a batch with items left (its id). Each handle works: the
/// flow's `history` and the batch's `batch status` find them.
#[test]
fn json_errors_carry_the_handles_a_script_acts_on() {
    let live = crate::live::Live::shared("error_handles");
    let run = |args: &[&str]| {
        let mut c = live.cmd();
        c.args(["--json"]).args(args);
        c
    };
    // A timeout: the flow, and the transaction it waits for.
    let redeem = ["redeem", "--from", "dev", "--amount", "1", "--yes"];
    let mut c = run(&redeem);
    c.args(["--timeout", "0"]);
    let (message, handles) = json_error_with_handles(&mut c, "timeout", 8);
    let tx_id = handles["txId"].as_str().expect("a txId").to_owned();
    assert!(message.contains(&tx_id), "{message}");
    let flow = live.ok(&["history", &tx_id]);
    assert_eq!(handles["hash"], flow["flow"]["txHash"], "{handles}");
    assert!(handles.get("batchId").is_none(), "{handles}");
    // A wrong passphrase: the flow that stopped before signing.
    let wrong = live.dir.write("wrong-passphrase", "not it\n");
    let mut c = run(&redeem);
    c.env("BRIDGECTL_PASSPHRASE_FILE", &wrong);
    let (_, handles) = json_error_with_handles(&mut c, "passphrase", 4);
    let stopped = handles["txId"].as_str().expect("a txId");
    assert_ne!(stopped, tx_id);
    assert_eq!(live.ok(&["history", stopped])["flow"]["txId"], stopped);
    assert!(
        handles.get("hash").is_none(),
        "nothing was signed: {handles}"
    );
    // A batch with an item left pending: the batch.
    live.dir.write("one.csv", "op,from,amount\nredeem,dev,1\n");
    let mut c = run(&["batch", "run", "one.csv", "--yes", "--timeout", "0"]);
    let out = c.output();
    assert_eq!(out.status.code(), Some(9));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = strict_json(stdout.lines().last().expect("a last line"));
    crate::json::assert_schema("error", &last);
    let batch_id = last["error"]["batchId"].as_str().expect("a batchId");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let hint = stderr.lines().find_map(|l| l.strip_prefix("hint: "));
    assert_eq!(last["error"]["hint"].as_str(), hint, "{stderr}");
    assert!(
        hint.is_some_and(|h| h.contains(&format!("bridgectl batch resume {batch_id}"))),
        "{stderr}"
    );
    assert_eq!(live.ok(&["batch", "status", batch_id])["batchId"], batch_id);
}
