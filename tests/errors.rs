//! How a command fails, for a script: with `--json`, one JSON object on stdout,
//! `{"error": {"code", "message", "exit"}}`, beside the text on stderr; and the exit
//! code the README's table gives its kind.

use std::process::Output;

use serde_json::json;

use crate::util::{Dir, TestCommand, strict_json};

/// Runs `cmd`, asserts exit `exit`, and that stdout is exactly the error object of kind
/// `code` whose message is what stderr says after `error: `. Returns that message.
fn json_error(cmd: &mut TestCommand, code: &str, exit: i32) -> String {
    let out: Output = cmd.output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(exit), "{code}: {stderr}");
    let v = strict_json(&String::from_utf8_lossy(&out.stdout));
    let message = v["error"]["message"].as_str().expect("message").to_owned();
    assert_eq!(
        v,
        json!({"error": {"code": code, "message": message, "exit": exit}}),
        "{code}"
    );
    let first = stderr.lines().next().expect("a line on stderr");
    assert_eq!(first, format!("error: {message}"), "{code}");
    message
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
    let mut c = run(&[
        "action",
        "exec",
        "stake",
        "--from",
        "0x0000000000000000000000000000000000000001",
        "--input",
        "_amount=1",
    ]);
    c.env("BRIDGECTL_BASE_URL", "http://127.0.0.1:1")
        .env("BRIDGECTL_ACCESS_TOKEN", "not-a-real-token");
    let m = json_error(&mut c, "remote", 7);
    assert!(m.contains("Connection refused"), "{m}");
});
