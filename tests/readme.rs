//! The README works as written: its walkthrough block (the fenced `sh walkthrough`), and
//! after it the air gap's blocks (by file at batch scale; by QR frames for one redeem
//! and for a batch), are run by bash on a pseudo-terminal in a fresh home, against a
//! sandbox started with the README's own command, answering each question and
//! passphrase prompt as a person would. A README that drifts from the CLI fails here.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rexpect::process::WaitStatus;
use rexpect::reader::ReadUntil;

use crate::util::{Dir, TestCommand};

const PASS: &str = "walkthrough passphrase";

/// The fenced blocks of `text` whose info string is `sh <name>`.
fn blocks_named(text: &str, name: &str) -> Vec<String> {
    text.split(&format!("```sh {name}\n"))
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap_or_default().to_owned())
        .collect()
}

/// `bridgectl sandbox --write-profile sandbox.toml`, the first terminal; stopped (with
/// its anvils) when dropped.
struct SandboxProcess(Child);

impl Drop for SandboxProcess {
    fn drop(&mut self) {
        // SIGTERM: the sandbox stops its anvils on the way out.
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

bctest!(
    the_readme_walkthrough_runs_as_written,
    |dir: Dir, _cmd: TestCommand| {
        let readme =
            std::fs::read_to_string(crate::util::repo_root().join("README.md")).expect("README");
        let blocks = blocks_named(&readme, "walkthrough");
        assert_eq!(blocks.len(), 1, "one walkthrough block in the README");
        let again = blocks_named(&readme, "after-restart");
        assert_eq!(again.len(), 1, "one after-restart block in the README");
        let path = path_with_bin();
        let fresh = |cmd: &mut Command| fresh(&dir, &path, cmd);
        let start_sandbox = || start_sandbox(&dir, &path);
        let run_block =
            |block: &str, typo_at: Option<usize>| run_block(&dir, &path, block, typo_at);

        let sandbox = start_sandbox();
        // The redeem's unlock is the 4th passphrase prompt (import twice, swap, redeem).
        let answered = run_block(&blocks[0], Some(3));
        assert!(
            answered.contains(&"typo"),
            "the redeem saw a typo: {answered:?}"
        );
        // Two signatures (swap, redeem), each confirmed then unlocked; the import set the
        // passphrase (typed twice).
        assert_eq!(
            answered.iter().filter(|a| **a == "y").count(),
            2,
            "{answered:?}"
        );
        let journal = rusqlite::Connection::open(dir.join("xdg/state/bridgectl/journal.sqlite3"))
            .expect("journal");
        assert_eq!(completed(&journal), 2, "the swap and the redeem completed");

        // Mining stopped, stepped, on an interval and back to a block per transaction,
        // on the side chain's node, as the README shows it (the blocks after it need it
        // back on).
        let mining = blocks_named(&readme, "mining");
        assert_eq!(mining.len(), 1, "one mining block in the README");
        assert!(run_block(&mining[0], None).is_empty());

        // The air gap at batch scale, step by step, after the walkthrough (whose redeem
        // tells this machine's journal the dev key's next nonce on the side chain): one
        // question for the batch, the key's passphrase once, every redeem completed.
        let batch = blocks_named(&readme, "airgap-batch");
        assert_eq!(batch.len(), 1, "one airgap-batch block in the README");
        let answered = run_block(&batch[0], None);
        assert_eq!(answered, ["y", "passphrase"], "{answered:?}");
        assert_eq!(
            completed(&journal),
            5,
            "the batch's three redeems completed"
        );
        let signed = std::fs::read(dir.join("signed.json")).expect("the signed batch");
        let signed = bridgectl_tx::batch::SignedBatch::parse(&signed).expect("a signed batch");
        assert_eq!((signed.items.len(), signed.refused.len()), (3, 0));

        // The same two crossings by QR frames (directories of PNG files standing for a
        // screen and a camera): a redeem's eth-sign-request and eth-signature, then a
        // batch both ways. Each asks once and unlocks once.
        for (name, done) in [("airgap-qr", 6), ("airgap-batch-qr", 9)] {
            let block = blocks_named(&readme, name);
            assert_eq!(block.len(), 1, "one {name} block in the README");
            let answered = run_block(&block[0], None);
            assert_eq!(answered, ["y", "passphrase"], "{name}: {answered:?}");
            assert_eq!(completed(&journal), done, "{name}: its redeems completed");
        }

        // What the sandbox printed, again, while it runs.
        let bridgectl = |args: &[&str]| {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_bridgectl"));
            cmd.args(args);
            fresh(&mut cmd);
            cmd.env("BRIDGECTL_CONFIG", "sandbox.toml")
                .env("BRIDGECTL_PROFILE", "sandbox")
                .env("BRIDGECTL_PASSPHRASE", PASS)
                .output()
                .expect("run bridgectl")
        };
        let profile = std::fs::read_to_string(dir.join("sandbox.toml")).expect("profile");
        let base_url = profile
            .lines()
            .find_map(|l| l.strip_prefix("base_url = \""))
            .and_then(|rest| rest.strip_suffix('"'))
            .expect("base_url in the written profile")
            .to_owned();
        let shown = bridgectl(&["sandbox", "--show"]);
        let text = String::from_utf8_lossy(&shown.stdout);
        assert!(shown.status.success(), "{shown:?}");
        assert!(
            text.contains(&base_url) && text.contains("dev key:"),
            "{text}"
        );

        // Every --json output: camelCase names, amounts as decimal strings.
        let json = |args: &[&str]| -> serde_json::Value {
            let mut all = vec!["--json"];
            all.extend_from_slice(args);
            let out = bridgectl(&all);
            assert!(out.status.success(), "{args:?}: {out:?}");
            serde_json::from_slice(&out.stdout).expect("one JSON document")
        };
        let history = json(&["history"]);
        let signed = history[0]["signedTx"]
            .as_str()
            .expect("signed tx")
            .to_owned();
        let tx_id = history[0]["txId"].as_str().expect("txId").to_owned();
        for (args, doc) in [
            (vec!["history"], history.clone()),
            (vec!["history", &tx_id], json(&["history", &tx_id])),
            (vec!["key", "list"], json(&["key", "list"])),
            (vec!["key", "show", "dev"], json(&["key", "show", "dev"])),
            (vec!["sandbox", "--show"], json(&["sandbox", "--show"])),
            (vec!["tx", "decode"], json(&["tx", "decode", &signed])),
            (vec!["log", "show"], json(&["log", "show"])),
        ] {
            check_json_conventions(&format!("{args:?}"), "$", &doc);
        }

        // Stopped: --show says so (exit 6), and a command that needs the platform names
        // the likely cause (exit 7), for the platform and the web3 API alike.
        drop(sandbox);
        let shown = bridgectl(&["sandbox", "--show"]);
        assert_eq!(shown.status.code(), Some(6), "{shown:?}");
        for args in [
            &["redeem", "--from", "dev", "--amount", "1", "--yes"][..],
            &["webhook", "list"][..],
        ] {
            let out = bridgectl(args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(7), "{args:?}: {err}");
            assert!(
                err.contains("hint: nothing answered there") && err.contains("sandbox --show"),
                "{args:?}: {err}"
            );
        }

        // Started again: new chains under the same ids. The same journal names the reset
        // rather than refusing a nonce, and the README's after-restart block (reset both
        // chains, then the swap and the redeem again) runs as written.
        let _sandbox = start_sandbox();
        let out = bridgectl(&["redeem", "--from", "dev", "--amount", "1", "--yes"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert!(
            err.contains("was reset since its flows were journaled"),
            "{err}"
        );
        let answered = run_block(&again[0], None);
        // Each reset confirmed and signed by the key, then the swap and the redeem.
        assert_eq!(
            (
                answered.iter().filter(|a| **a == "y").count(),
                answered.iter().filter(|a| **a == "passphrase").count()
            ),
            (4, 4),
            "{answered:?}"
        );
        let states: Vec<(String, i64)> = {
            let mut q = journal
                .prepare("SELECT state, count(*) FROM flows GROUP BY state ORDER BY state")
                .expect("query");
            q.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .expect("rows")
                .collect::<Result<_, _>>()
                .expect("row")
        };
        assert_eq!(
            states,
            [
                ("completed".to_owned(), 2),
                ("failed".to_owned(), 2),
                ("retired".to_owned(), 9)
            ],
            "the new chain's swap and redeem completed; the redeem tried with no sandbox \
             and the one refused at the reset failed unsigned; the old chain's nine (the \
             swap, the redeem, the batch's three redeems, the redeem and the three of the \
             batch by QR) retired"
        );
        let failed_signed: i64 = journal
            .query_row(
                "SELECT count(*) FROM flows WHERE state = 'failed' AND signed_tx IS NOT NULL",
                [],
                |r| r.get(0),
            )
            .expect("count");
        assert_eq!(failed_signed, 0, "nothing was signed on the way");
    }
);

/// `PATH` with the built `bridgectl` first, as an installed one would be.
fn path_with_bin() -> String {
    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_bridgectl"))
        .parent()
        .expect("bin dir")
        .to_owned();
    format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Confines `cmd` to `dir` as a new user: no BRIDGECTL_* settings at all (the README's
/// exports are all there is), `bridgectl` on `path`.
fn fresh(dir: &Dir, path: &str, cmd: &mut Command) {
    dir.confine(cmd);
    cmd.env_remove("BRIDGECTL_KEYSTORE").env("PATH", path);
}

/// The README's first terminal: `bridgectl sandbox --write-profile sandbox.toml`, once
/// it wrote the profile.
fn start_sandbox(dir: &Dir, path: &str) -> SandboxProcess {
    let _ = std::fs::remove_file(dir.join("sandbox.toml"));
    let mut sandbox = Command::new(env!("CARGO_BIN_EXE_bridgectl"));
    sandbox
        .args(["sandbox", "--write-profile", "sandbox.toml"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("sandbox.err")).expect("sandbox.err"));
    fresh(dir, path, &mut sandbox);
    let sandbox = SandboxProcess(sandbox.spawn().expect("start the sandbox"));
    let started = Instant::now();
    while !dir.join("sandbox.toml").exists() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the sandbox wrote no profile; its stderr:\n{}",
            std::fs::read_to_string(dir.join("sandbox.err")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    sandbox
}

/// Runs `block` with bash on a pseudo-terminal, answering as a person would; the answer
/// to passphrase prompt number `typo_at` (from 0) is a typo first.
fn run_block(dir: &Dir, path: &str, block: &str, typo_at: Option<usize>) -> Vec<&'static str> {
    let mut bash = Command::new("bash");
    bash.args(["-e", "-c", block]);
    fresh(dir, path, &mut bash);
    let mut p = rexpect::session::spawn_command(bash, Some(180_000)).expect("spawn on a pty");
    let answered = answer_prompts(&mut p, typo_at);
    let status = p.process().wait().expect("wait");
    assert!(
        matches!(status, WaitStatus::Exited(_, 0)),
        "the block failed ({status:?}) after answering {answered:?}:\n{block}"
    );
    answered
}

/// Fields that hold someone else's document verbatim (the platform's answers, rawTx and
/// intent arguments named after Solidity parameters), not bridgectl's own naming.
const VERBATIM: &[&str] = &[
    "intent",
    "rawTx",
    "result",
    "detail",
    "redemption",
    "raw",
    "data",
    "args",
    "inputs",
    "call",
    "condition",
];

/// Amount fields, anywhere in bridgectl's own JSON: decimal strings in base units.
const AMOUNTS: &[&str] = &[
    "amount",
    "value",
    "gasPrice",
    "maxFeePerGas",
    "maxPriorityFeePerGas",
    "stBefore",
    "stAfter",
    "fee",
];

fn check_json_conventions(command: &str, at: &str, v: &serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, child) in map {
                let here = format!("{at}.{k}");
                assert!(
                    k.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                        && k.chars().all(|c| c.is_ascii_alphanumeric()),
                    "{command}: {here} is not camelCase"
                );
                if AMOUNTS.contains(&k.as_str()) && !child.is_null() {
                    let text = child.as_str().unwrap_or_default();
                    assert!(
                        !text.is_empty() && text.chars().all(|c| c.is_ascii_digit()),
                        "{command}: {here} = {child} is not a decimal string"
                    );
                }
                if !VERBATIM.contains(&k.as_str()) {
                    check_json_conventions(command, &here, child);
                }
            }
        }
        serde_json::Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                check_json_conventions(command, &format!("{at}[{i}]"), item);
            }
        }
        _ => {}
    }
}

/// Answers every prompt of session `p` until it ends: `y` to a confirmation, the
/// passphrase to a passphrase prompt (a typo first at passphrase prompt number
/// `typo_at`, from 0, as people make: the command asks again). Returns the answers given.
fn answer_prompts(
    p: &mut rexpect::session::PtySession,
    typo_at: Option<usize>,
) -> Vec<&'static str> {
    let mut answered = Vec::new();
    loop {
        let (_, matched) = p
            .exp_any(vec![
                ReadUntil::String("passphrase for".into()),
                ReadUntil::String("new passphrase".into()),
                ReadUntil::String("repeat it: ".into()),
                ReadUntil::String("[y/N]".into()),
                ReadUntil::EOF,
            ])
            .expect("a prompt or the end");
        match matched.as_str() {
            "[y/N]" => {
                p.send_line("y").expect("y");
                answered.push("y");
            }
            "" => break,
            m if m.contains("passphrase") || m.contains("repeat") => {
                if !m.ends_with(": ") {
                    p.exp_string(": ").expect("the rest of the prompt");
                }
                let asked = answered.iter().filter(|a| **a == "passphrase").count();
                if Some(asked) == typo_at && !answered.contains(&"typo") {
                    p.send_line("not the passphrase").expect("typo");
                    p.exp_string("wrong passphrase, try again (2 of 3)")
                        .expect("a second chance");
                    answered.push("typo");
                    continue;
                }
                p.send_line(PASS).expect("passphrase");
                answered.push("passphrase");
            }
            _ => break,
        }
    }
    answered
}

/// How many flows of `journal` completed.
fn completed(journal: &rusqlite::Connection) -> i64 {
    journal
        .query_row(
            "SELECT count(*) FROM flows WHERE state = 'completed'",
            [],
            |r| r.get(0),
        )
        .expect("count")
}

/// The README's fault tables name every route of the sandbox's config and every key of a
/// route's faults, and nothing else.
#[test]
fn the_readme_names_every_fault_route_and_key() {
    let readme =
        std::fs::read_to_string(crate::util::repo_root().join("README.md")).expect("README");
    let section = &readme[readme
        .find("### Mining, reorganisations and faults")
        .expect("the section")..];
    // The first cell of each table row, in backquotes.
    let rows = |header: &str| -> Vec<String> {
        section[section.find(header).expect(header)..]
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                l.split('|')
                    .nth(1)
                    .unwrap_or_default()
                    .trim()
                    .trim_matches('`')
                    .to_owned()
            })
            .collect()
    };
    let routes = rows("| route |");
    assert_eq!(routes, bridgectl_sandbox::config::FAULT_ROUTES, "routes");
    // FaultConfig's fields, by its Debug.
    let debug = format!("{:?}", bridgectl_sandbox::FaultConfig::default());
    let fields: Vec<String> = debug
        .split(['{', ','])
        .skip(1)
        .filter_map(|f| f.split(':').next())
        .map(|f| f.trim().to_owned())
        .filter(|f| !f.is_empty() && !f.contains('}'))
        .collect();
    let mut keys = rows("| key |");
    keys.sort();
    let mut fields = fields;
    fields.sort();
    assert_eq!(keys, fields, "fault keys ({debug})");
}
