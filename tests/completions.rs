//! Completion of the names the journal and the config hold, through the protocol the
//! shell speaks (`COMPLETE=fish bridgectl -- bridgectl WORDS...`: one candidate a line,
//! its help after a tab), read when the shell asks, as the key labels are: a flow by a
//! start of its txId or of a hash it signed, for every command that names a flow; a
//! batch by a start of its id; a profile; a chain id from the config and the journal.

use crate::live::Live;

/// What the shell is offered for the last word of `line`, run as `c` (the candidates,
/// without their help).
fn candidates(mut c: crate::util::TestCommand, line: &[&str]) -> Vec<String> {
    c.env("COMPLETE", "fish")
        .args(["--", "bridgectl"])
        .args(line);
    c.stdout()
        .lines()
        .map(|l| l.split('\t').next().unwrap_or_default().to_owned())
        .collect()
}

/// The values (not the flags) offered for the last word of `line` in `live`'s setting.
fn offered(live: &Live, line: &[&str]) -> Vec<String> {
    let mut all = candidates(live.cmd(), line);
    all.retain(|w| !w.starts_with('-'));
    all
}

bctest!(
    completions_cover_the_commands_and_offer_key_labels,
    |dir: crate::util::Dir, mut cmd: crate::util::TestCommand| {
        // The script calls back into bridgectl for every completion.
        let script = cmd.args(["completions", "bash"]).stdout();
        assert!(
            script.contains("COMPLETE=\"bash\"") && script.contains("bridgectl"),
            "{script}"
        );
        // What the shell is offered (fish's protocol: one candidate a line, help after
        // a tab): the commands, and for an account option the keystore's labels.
        let offered = |line: &[&str]| candidates(dir.command(), line);
        let commands = offered(&[""]);
        for word in [
            "redeem", "swap", "transfer", "resume", "history", "sign", "key",
        ] {
            assert!(
                commands.iter().any(|c| c == word),
                "no {word} in {commands:?}"
            );
        }
        // Subcommands' arguments are built only when needed (clap's `defer`): they are
        // still offered, nested ones too.
        for (line, flag) in [
            (&["sign", "-", "--expect-ch"][..], "--expect-chain-id"),
            (
                &["sign", "-", "--passphrase-file-f"][..],
                "--passphrase-file-for",
            ),
            (
                &["batch", "resume", "x", "--replace-st"][..],
                "--replace-stuck",
            ),
        ] {
            assert_eq!(offered(line), [flag], "{line:?}");
        }
        for (label, key) in [
            (
                "dev",
                "4646464646464646464646464646464646464646464646464646464646464646",
            ),
            (
                "deploy",
                "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318",
            ),
            (
                "alice",
                "0123456789012345678901234567890123456789012345678901234567890123",
            ),
        ] {
            let out = dir
                .command()
                .args(["key", "import", label, "--raw", "--unsafe-test-kdf"])
                .env("BRIDGECTL_PASSPHRASE", "pw")
                .output_with_stdin(key.as_bytes());
            crate::util::assert_success(&std::process::Command::new("key import"), &out);
        }
        for line in [
            &["redeem", "--from", "de"][..],
            &["transfer", "--to", "de"][..],
            &["action", "exec", "stake", "--from", "de"][..],
            &["sign", "-", "--key", "de"][..],
            &["log", "show", "--key", "de"][..],
        ] {
            assert_eq!(offered(line), ["deploy", "dev"], "{line:?}");
        }
        assert_eq!(offered(&["swap", "--from", ""]), ["alice", "deploy", "dev"]);
    }
);

#[test]
fn flows_batches_profiles_and_chain_ids_are_completed_from_the_journal_and_the_config() {
    let live = Live::shared("completions");
    let redeemed = live.ok(&["redeem", "--from", "dev", "--amount", "1", "--yes"]);
    let tx_id = redeemed["txId"].as_str().expect("txId").to_owned();
    let hash = redeemed["txHash"].as_str().expect("txHash").to_owned();
    live.dir.write("one.csv", "op,from,amount\nredeem,dev,1\n");
    let mut c = live.cmd();
    c.args(["--json", "batch", "run", "one.csv", "--yes"]);
    let out = live.run_ok(c);
    let last = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .map(crate::util::strict_json)
        .expect("a summary line");
    let batch_id = last["summary"]["batchId"]
        .as_str()
        .expect("batchId")
        .to_owned();
    // The batch's item is a flow of the journal too: the redeem is told apart by more of
    // its txId.
    let start = &tx_id[..8];
    for command in [
        &["resume"][..],
        &["status"],
        &["replace"],
        &["cancel"],
        &["history"],
    ] {
        let line = [command, &[start]].concat();
        assert_eq!(offered(&live, &line), [tx_id.as_str()], "{line:?}");
    }
    assert_eq!(offered(&live, &["status", &hash[..10]]), [hash.as_str()]);
    for command in [&["batch", "resume"][..], &["batch", "status"]] {
        let line = [command, &[&batch_id[..6]]].concat();
        assert_eq!(offered(&live, &line), [batch_id.as_str()], "{line:?}");
    }
    // Profiles: the test's file has `default`; another one is offered once it is there.
    assert_eq!(offered(&live, &["history", "--profile", ""]), ["default"]);
    live.add_to_profile("\n[profiles.spare]\nbase_url = \"http://127.0.0.1:1\"\n");
    assert_eq!(
        offered(&live, &["history", "--profile", ""]),
        ["default", "spare"]
    );
    // Chain ids: the profile's main and side chains (the journal's flows are on them).
    let (main, side) = (
        live.sb.info.main.chain_id.to_string(),
        live.sb.info.side.chain_id.to_string(),
    );
    let mut chains = vec![main.clone(), side.clone()];
    chains.sort();
    assert_eq!(offered(&live, &["journal", "reset-chain", ""]), chains);
    assert_eq!(
        offered(&live, &["tx", "decode", "0x00", "--expect-chain-id", &side]),
        [side.as_str()]
    );
    // No journal where the environment points: nothing is offered, and none is made.
    let mut c = live.cmd();
    let missing = live.dir.join("no-journal.sqlite3");
    c.env("BRIDGECTL_JOURNAL", &missing)
        .env("COMPLETE", "fish")
        .args(["--", "bridgectl", "resume", start]);
    assert_eq!(c.stdout().trim(), "");
    assert!(!missing.exists());
}

bctest!(
    a_flow_older_than_the_newest_200_completes_by_its_prefix,
    |dir: crate::util::Dir, _cmd: crate::util::TestCommand| {
        // A journal of 251 flows and batches: the oldest first, then 250 newer ones (a
        // day of payouts). Typed by its start, the oldest is still offered.
        let path = dir.join("xdg/state/bridgectl/journal.sqlite3");
        std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
        drop(bridgectl_flow::Journal::open(&path).expect("journal"));
        let db = rusqlite::Connection::open(&path).expect("open");
        let id = |i: u32| format!("{i:08x}-0000-4000-8000-{i:012x}");
        for i in 0..251u32 {
            let at = format!("2026-01-01T{:02}:{:02}:00Z", i / 60, i % 60);
            let hash = format!("0x{i:04x}{}", "ab".repeat(30));
            db.execute(
                "INSERT INTO flows (tx_id, kind, state, intent, tx_hash, created_at, updated_at)
                 VALUES (?1, 'redeem', 'completed', '{}', ?2, ?3, ?3)",
                rusqlite::params![id(i), hash, at],
            )
            .expect("flow");
            db.execute(
                "INSERT INTO batches (batch_id, source, created_at) VALUES (?1, 'payouts.csv', ?2)",
                rusqlite::params![format!("b{}", &id(i)[1..]), at],
            )
            .expect("batch");
        }
        drop(db);
        let offered = |line: &[&str]| {
            let mut all = candidates(dir.command(), line);
            all.retain(|w| !w.starts_with('-'));
            all
        };
        let oldest = id(0);
        assert_eq!(offered(&["history", &oldest[..9]]), [oldest.as_str()]);
        let hash = format!("0x0000{}", "ab".repeat(30));
        assert_eq!(offered(&["status", &hash[..8]]), [hash.as_str()]);
        let batch = format!("b{}", &oldest[1..]);
        assert_eq!(offered(&["batch", "status", &batch[..9]]), [batch.as_str()]);
        // With nothing typed, the newest 200 are offered, newest first.
        let all = offered(&["history", ""]);
        assert_eq!(all.len(), 200);
        assert_eq!(all[0], id(250));
    }
);
