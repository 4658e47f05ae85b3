//! `bridgectl sandbox`: bad config refused; a real start prints JSON, then SIGINT stops it
//! and leaves no anvil behind.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::util::{Dir, TestCommand};

bctest!(
    sandbox_refuses_a_bad_config,
    |dir: Dir, mut cmd: TestCommand| {
        let cfg = dir.write("sb.toml", "[[actions]]\nname = \"r\"\nfunction = \"redeem\"\n[[actions]]\nname = \"r\"\nfunction = \"stake\"\n");
        cmd.args(["sandbox", "--sandbox-config"]).args([&cfg]);
        let err = cmd.fails_with(2);
        assert!(err.contains("duplicate action name \"r\""), "{err}");
        // A file that does not parse: one line, naming the file, the spot and the key.
        let cfg = dir.write("typo.toml", "[main]\nchain_id = \"41337\"\n");
        let err = dir
            .command()
            .args(["sandbox", "--sandbox-config"])
            .args([&cfg])
            .fails_with(2);
        let first = err.lines().next().unwrap_or_default();
        assert!(
            first.starts_with(&format!(
                "error: invalid sandbox config {}: line 2, column 12: invalid type",
                cfg.display()
            )),
            "{err}"
        );
        assert!(!err.contains("\\n"), "a literal \\n: {err}");
        let err = dir
            .command()
            .args(["sandbox", "--sandbox-config", "missing.toml"])
            .fails_with(6);
        assert!(
            err.contains("cannot read sandbox config missing.toml"),
            "{err}"
        );
    }
);

fn gone(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit_once(')')
                .and_then(|(_, r)| r.split_whitespace().next())
                .is_some_and(|st| st == "Z" || st == "X")
        })
        .unwrap_or(true)
}

/// `bridgectl --json sandbox --write-profile profile.toml` started in `dir`: the child,
/// once it printed its info, and the info.
fn start(dir: &Dir) -> (crate::util::KillOnDrop, serde_json::Value) {
    start_with(dir, &[])
}

/// [`start`] with `extra` arguments.
fn start_with(dir: &Dir, extra: &[&str]) -> (crate::util::KillOnDrop, serde_json::Value) {
    let mut cmd = dir.command();
    cmd.env("BRIDGECTL_ANVIL", crate::util::pinned_tool("anvil"));
    cmd.args(["--json", "sandbox", "--write-profile"])
        .args([dir.join("profile.toml")])
        .args(extra);
    let mut child =
        crate::util::KillOnDrop::spawn(cmd.cmd.stdout(Stdio::piped()).stderr(Stdio::null()));
    // A killing timeout, not a duration assertion: a sandbox that never gets ready is
    // SIGKILLed after 120 s, and the read below then fails the test.
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
    let pid = child.id().to_string();
    let watchdog = std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
            ready_rx.recv_timeout(Duration::from_secs(120))
        {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid])
                .status();
        }
    });
    let mut text = String::new();
    let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
    let info: serde_json::Value = loop {
        let mut line = String::new();
        assert!(
            reader.read_line(&mut line).expect("read") > 0,
            "sandbox exited early: {text}"
        );
        text.push_str(&line);
        if line.starts_with('}') {
            break serde_json::from_str(&text).expect("json info");
        }
    };
    let _ = ready_tx.send(());
    watchdog.join().expect("watchdog");
    crate::json::assert_schema("sandbox", &info);
    (child, info)
}

/// SIGINT stops `child` cleanly (as Ctrl-C does).
fn interrupt(child: &mut crate::util::KillOnDrop) {
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    let status = child.wait().expect("wait");
    assert!(status.success(), "Ctrl-C must stop cleanly: {status}");
}

/// SIGINT stops `child` cleanly, and no anvil of its is left running.
fn stop(mut child: crate::util::KillOnDrop) {
    // The anvils are the sandbox's children.
    let children = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", child.id()))
        .unwrap_or_default();
    let pids: Vec<u64> = children
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    assert_eq!(
        pids.len(),
        2,
        "expected two anvil children, found {children:?}"
    );
    interrupt(&mut child);
    let end = Instant::now() + Duration::from_secs(5);
    while !pids.iter().all(|p| gone(*p)) {
        assert!(Instant::now() < end, "anvil left running: {pids:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

bctest!(
    sandbox_starts_prints_json_and_stops_on_sigint,
    |dir: Dir, _cmd: TestCommand| {
        let (first, info) = start(&dir);
        assert!(
            info["baseUrl"]
                .as_str()
                .is_some_and(|u| u.starts_with("http://127.0.0.1:")),
            "{info}"
        );
        assert_eq!(info["main"]["chainId"], 31337);
        assert!(info["devAccount"]["address"].is_string());
        let path = dir.join("profile.toml");
        let profile = std::fs::read_to_string(&path).expect("profile");
        assert!(
            profile.contains("[profiles.sandbox]") && profile.contains("token_file"),
            "{profile}"
        );
        let first_url = info["baseUrl"].as_str().expect("baseUrl").to_owned();
        assert!(profile.contains(&first_url), "{profile}");

        // A person adds a limit to the written profile; a second sandbox (on the same
        // path, while the first runs) updates the profile and keeps the limit.
        let mine = "\n# my caps\n[profiles.sandbox.policy]\nmax-gas-price = 50000000000\n";
        std::fs::write(&path, format!("{profile}{mine}")).expect("edit the profile");
        let (second, info) = start(&dir);
        let second_url = info["baseUrl"].as_str().expect("baseUrl").to_owned();
        let profile = std::fs::read_to_string(&path).expect("profile");
        assert!(
            profile.contains(&second_url) && !profile.contains(&first_url),
            "{profile}"
        );
        assert!(profile.contains(mine.trim()), "{profile}");

        // The second stops: --show still finds the first, which runs on.
        stop(second);
        let mut show = dir.command();
        show.args(["--json", "sandbox", "--show"]);
        let shown = show.json();
        assert_eq!(shown["baseUrl"], first_url.as_str(), "{shown}");
        stop(first);
        dir.command().args(["sandbox", "--show"]).fails_with(6);
    }
);

bctest!(
    demo_funds_swaps_and_redeems_end_to_end,
    |_dir: Dir, mut cmd: TestCommand| {
        // `make demo`, the README's first command: its own sandbox, a throwaway key funded
        // by the sandbox's development key (signed through the same keystore's signing
        // log), a swap and a redeem; the balances must add up.
        cmd.env("BRIDGECTL_ANVIL", crate::util::pinned_tool("anvil"));
        let out = cmd.args(["--json", "demo"]).json();
        crate::json::assert_schema("demo", &out);
        let balance = |at: &str, token: &str| -> u128 {
            out["balances"][at][token]
                .as_str()
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("balances.{at}.{token} in {out}"))
        };
        assert_eq!(out["redeem"]["status"], "completed", "{out}");
        assert!(
            out["fundTx"].as_str().is_some_and(|h| h.len() == 66),
            "{out}"
        );
        let swapped: u128 = out["swap"]["amount"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .expect("swap amount");
        assert!(swapped > 0, "{out}");
        assert_eq!(
            balance("afterSwap", "mt"),
            balance("beforeSwap", "mt") - swapped,
            "{out}"
        );
        assert_eq!(
            out["swap"]["stCredited"].as_str(),
            out["balances"]["afterSwap"]["st"].as_str(),
            "{out}"
        );
        assert_eq!(balance("afterRedeem", "st"), 0, "{out}");
        assert_eq!(
            balance("afterRedeem", "mt"),
            balance("beforeSwap", "mt"),
            "{out}"
        );
    }
);

bctest!(
    a_sandbox_config_of_one_key_keeps_every_other_default,
    |dir: Dir, _cmd: TestCommand| {
        // The file: `[main]` with only its chain id.
        let cfg = dir.write("main-only.toml", "[main]\nchain_id = 41337\n");
        let (child, info) = start_with(&dir, &["--sandbox-config", cfg.to_str().expect("utf8")]);
        assert_eq!(info["main"]["chainId"], 41337, "{info}");
        assert_eq!(info["main"]["environmentId"], "sandbox-main", "{info}");
        assert_eq!(info["main"]["symbol"], "MT", "{info}");
        assert_eq!(info["side"]["chainId"], 31338, "{info}");
        assert_eq!(info["side"]["environmentId"], "sandbox-side", "{info}");
        stop(child);
    }
);

bctest!(
    a_sandbox_with_postgres_state_writes_a_profile_that_shares_it,
    |dir: Dir, _cmd: TestCommand| {
        // `sandbox --state postgres`: its own PostgreSQL server (the pinned one), named by
        // the profile it writes, and stopped with it.
        let (mut child, info) = start_with(&dir, &["--state", "postgres"]);
        let url = info["stateUrl"].as_str().expect("stateUrl").to_owned();
        assert!(url.starts_with("postgres://postgres@127.0.0.1:"), "{info}");
        let profile = std::fs::read_to_string(dir.join("profile.toml")).expect("profile");
        assert!(
            profile.contains(&format!("state_url = \"{url}\"")),
            "{profile}"
        );
        // A command of that profile keeps its journal there: a flow of one host is in
        // the history of another (no file journal, no environment variable).
        let history = |home: &str| -> serde_json::Value {
            let mut c = dir.command();
            c.env("XDG_STATE_HOME", dir.join(home))
                .args(["--json", "--config"])
                .args([dir.join("profile.toml")])
                .args(["--profile", "sandbox", "history"]);
            c.json()
        };
        assert_eq!(history("a"), serde_json::json!([]));
        let mut c = dir.command();
        c.env("XDG_STATE_HOME", dir.join("a"))
            .args(["--config"])
            .args([dir.join("profile.toml")])
            .args(["--profile", "sandbox", "state", "migrate", "--to", &url]);
        let out = c.output();
        // Nothing to migrate on a fresh machine: no journal file, and none was made.
        assert_eq!(
            out.status.code(),
            Some(6),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!dir.join("a/bridgectl/journal.sqlite3").exists());
        // SIGINT stops it, its server too.
        let port = url
            .rsplit_once(':')
            .and_then(|(_, rest)| rest.split('/').next())
            .expect("port")
            .to_owned();
        interrupt(&mut child);
        let end = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(format!("127.0.0.1:{port}")).is_ok() {
            assert!(Instant::now() < end, "postgres left listening on {port}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
);
