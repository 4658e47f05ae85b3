//! `bridgectl webhook`: the real listener process under load and kill -9, the client's
//! input checks, and the whole loop against the sandbox's web3 API.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bridgectl_webhook::keys::{KeyEntry, KeyFile, SigningKey};
use bridgectl_webhook::load::{self, LoadSpec, Progress, block_period_delivery};
use bridgectl_webhook::signature::sign;

/// An address for conditions that are refused before anything is sent.
const ADDR: &str = "0x000000000000000000000000000000000000dEaD";
use bridgectl_secret::Secret;
use serde_json::Value;

use crate::util::{Dir, TestCommand};

const KEY: &str = "load-test-signing-key";
const PATH: &str = "/hooks/t0ps3cret";

fn write_keys(dir: &Dir) -> PathBuf {
    let path = dir.join("state/keys.json");
    add_key(&path, "41", KEY);
    path
}

/// Writes `key` for `subscription` into the key file at `path`, as `webhook create` does.
fn add_key(path: &Path, subscription: &str, key: &str) {
    KeyFile::new(path)
        .insert(
            subscription,
            &KeyEntry::new(SigningKey::new(Secret::new(key)), "ethereum", "sepolia"),
        )
        .expect("write keys");
}

/// A running `bridgectl webhook listen`, killed on drop. Its stderr goes to a file, and
/// that file and the event store are scanned for secrets (the signing key, and every
/// secret given in its environment) when it is stopped or killed.
struct Listening {
    child: Child,
    stdout: BufReader<ChildStdout>,
    addr: SocketAddr,
    /// Secrets that must appear in none of its output or files.
    scan: crate::secrets::Secrets,
    /// A sandbox whose secrets (signing keys, tokens) are scanned for too.
    sandbox: Option<bridgectl_sandbox::AppState>,
    stderr: PathBuf,
    store: PathBuf,
}

impl Listening {
    fn start(
        dir: &Dir,
        bind: &str,
        store: impl AsRef<std::ffi::OsStr>,
        keys: &Path,
        extra: &[&str],
    ) -> Listening {
        Listening::start_env(dir, bind, store, keys, extra, &[])
    }

    fn start_env(
        dir: &Dir,
        bind: &str,
        store: impl AsRef<std::ffi::OsStr>,
        keys: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Listening {
        let mut cmd = dir.command();
        cmd.args([
            "--json", "webhook", "listen", "--bind", bind, "--path", PATH,
        ])
        .args(["--store".as_ref(), store.as_ref()])
        .args(["--keys".as_ref(), keys.as_os_str()])
        .args(extra);
        let mut scan = crate::secrets::Secrets::new();
        scan.add("the webhook signing key", KEY);
        for (k, v) in env {
            cmd.env(k, v);
            scan.add(k, v);
        }
        let stderr = (0..)
            .map(|n| dir.join(format!("listener-{n}.stderr")))
            .find(|p| !p.exists())
            .expect("a free name");
        cmd.cmd
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).expect("stderr file"));
        let mut child = cmd.cmd.spawn().expect("spawn listener");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("first line");
        let v = crate::util::strict_json(&line);
        crate::json::assert_schema("webhook-listen", &v);
        assert_eq!(one_key(&v), "listening", "{v}");
        let addr = v["listening"]["addr"]
            .as_str()
            .expect("addr")
            .parse()
            .expect("socket addr");
        Listening {
            child,
            stdout,
            addr,
            scan,
            sandbox: None,
            stderr,
            store: PathBuf::from(store.as_ref()),
        }
    }

    /// Scans for the secrets of `sandbox` too, as they are when it stops.
    fn with_sandbox(mut self, sandbox: &bridgectl_sandbox::Sandbox) -> Listening {
        self.sandbox = Some(sandbox.state().clone());
        self
    }

    /// Scans its stderr and (a file store) the event store with its WAL.
    fn scan_leftovers(&self) {
        let mut scan = self.scan.clone();
        if let Some(state) = &self.sandbox {
            scan.add_sandbox(state);
        }
        scan.scan_file(&self.stderr);
        if self.store.is_file() {
            scan.scan_file(&self.store);
        }
    }

    /// SIGTERM, then the summary line (the last line; the ones before it, one per
    /// delivery, are skipped).
    fn stop(self) -> Value {
        self.stop_with_lines().0
    }

    /// SIGTERM, then the summary line and every line printed before it.
    fn stop_with_lines(mut self) -> (Value, Vec<Value>) {
        let pid = self.child.id().to_string();
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill -TERM");
        assert!(status.success());
        let mut before = Vec::new();
        let mut line = String::new();
        loop {
            line.clear();
            assert_ne!(
                self.stdout.read_line(&mut line).expect("summary"),
                0,
                "no summary"
            );
            let v = crate::util::strict_json(&line);
            crate::json::assert_schema("webhook-listen", &v);
            if one_key(&v) == "stopped" {
                break;
            }
            assert_eq!(one_key(&v), "delivery", "{v}");
            before.push(v);
        }
        let exit = self.child.wait().expect("wait");
        assert!(
            exit.success(),
            "listener exited with {exit}:\n{}",
            std::fs::read_to_string(&self.stderr).unwrap_or_default()
        );
        self.scan_leftovers();
        let summary = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("summary not json ({e}): {line:?}"));
        (summary, before)
    }

    /// `signal` (TERM, INT) without reading stdout meanwhile; fails unless it exits 0
    /// within `bound`.
    /// Returns what it printed after the first line, each line strict JSON.
    fn terminate_within(mut self, signal: &str, bound: Duration) -> Vec<Value> {
        let pid = self.child.id().to_string();
        let sent = Instant::now();
        let status = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .expect("kill");
        assert!(status.success());
        let exit = loop {
            if let Some(exit) = self.child.try_wait().expect("try_wait") {
                break exit;
            }
            assert!(
                sent.elapsed() < bound,
                "still running {bound:?} after SIGTERM:\n{}",
                std::fs::read_to_string(&self.stderr).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(exit.success(), "listener exited with {exit}");
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.stdout, &mut rest).expect("read stdout");
        self.scan_leftovers();
        rest.lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("torn line ({e}): {l:?}")))
            .collect()
    }

    fn kill9(mut self) {
        self.child.kill().expect("kill -9");
        let _ = self.child.wait();
        self.scan_leftovers();
    }
}

impl Drop for Listening {
    /// A test that fails leaves no listener behind.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn signed(i: usize) -> (Vec<u8>, Option<String>) {
    let body = block_period_delivery("41", i as u64 + 1);
    let sig = sign(KEY.as_bytes(), &body);
    (body, Some(sig))
}

fn stored_events(dir: &Dir, store: impl AsRef<std::ffi::OsStr>) -> Vec<Value> {
    let mut cmd = dir.command();
    cmd.args(["--json", "webhook", "events", "--limit", "100000"])
        .args(["--store".as_ref(), store.as_ref()]);
    let events = cmd.json();
    crate::json::assert_schema("webhook-events", &events);
    match events {
        Value::Array(v) => v,
        other => panic!("events --json is not an array: {other}"),
    }
}

/// Posts `requests` signed deliveries to `addr` from 64 connections and runs `then` once
/// `acked` of them are answered 200, while the rest are still being sent.
fn load_until<T>(
    addr: SocketAddr,
    requests: usize,
    acked: usize,
    then: impl FnOnce() -> T,
) -> (load::LoadReport, T) {
    let progress = Progress::default();
    std::thread::scope(|s| {
        let load = s.spawn(|| load::run(&spec(addr, requests), &signed, Some(&progress)));
        let deadline = Instant::now() + Duration::from_secs(120);
        while progress.ok.load(Ordering::Relaxed) < acked {
            assert!(Instant::now() < deadline, "load made no progress");
            std::thread::sleep(Duration::from_millis(2));
        }
        let after = then();
        (load.join().expect("load thread").expect("load"), after)
    })
}

fn spec(addr: SocketAddr, requests: usize) -> LoadSpec {
    LoadSpec {
        addr,
        path: PATH.into(),
        requests,
        connections: 64,
        timeout: Duration::from_secs(30),
    }
}

bctest!(
    the_listener_verifies_exactly_the_known_answers,
    |dir: Dir, _cmd: TestCommand| {
        // Body, key and header computed by OpenSSL (scripts/x-signature-fixtures.sh); a
        // `fail_` header must be stored as unverified.
        let fixtures = crate::util::repo_root().join("crates/webhook/tests/fixtures/x-signature");
        let mut cases: Vec<(String, Vec<u8>, String, String)> = Vec::new();
        let keys = dir.join("state/keys.json");
        for entry in std::fs::read_dir(&fixtures).expect("fixtures") {
            let path = entry.expect("entry").path();
            if path.extension().is_none_or(|e| e != "key") {
                continue;
            }
            let name = path
                .file_stem()
                .expect("stem")
                .to_string_lossy()
                .into_owned();
            let read = |ext: &str| std::fs::read(path.with_extension(ext)).expect(ext);
            let body = read("body");
            let header = String::from_utf8(read("x-signature")).expect("utf-8");
            let key = String::from_utf8(read("key")).expect("a signingKey is text");
            let sub = serde_json::from_slice::<Value>(&body).expect("json")["subscriptionId"]
                .as_str()
                .expect("subscriptionId")
                .to_owned();
            KeyFile::new(&keys)
                .insert(
                    &sub,
                    &KeyEntry::new(SigningKey::new(Secret::new(key)), "ethereum", "sepolia"),
                )
                .expect("write keys");
            cases.push((name, body, header.trim().to_owned(), sub));
        }
        assert!(cases.len() >= 6, "{} cases", cases.len());
        let store = dir.join("events.sqlite");
        let listener = Listening::start(&dir, "127.0.0.1:0", &store, &keys, &[]);
        let report = load::run(
            &spec(listener.addr, cases.len()),
            &|i| (cases[i].1.clone(), Some(cases[i].2.clone())),
            None,
        )
        .expect("load");
        assert_eq!(report.ok(), cases.len());
        listener.stop();
        let events = stored_events(&dir, &store);
        for (name, _, _, sub) in &cases {
            let stored: Vec<_> = events
                .iter()
                .filter(|e| e["subscriptionId"] == sub.as_str())
                .collect();
            assert_eq!(stored.len(), 1, "{name}: {stored:?}");
            assert_eq!(
                stored[0]["verified"],
                !name.starts_with("fail_"),
                "{name}: {:?}",
                stored[0]
            );
        }
    }
);

bctest!(
    listen_stores_1000_posts_from_64_connections,
    |dir: Dir, _cmd: TestCommand| {
        // A thousand posts keep 64 connections busy at once, about 16 each: every one
        // answered 200 and stored exactly once (bench/webhook-listener.sh measures how
        // many a second).
        const POSTS: usize = 1_000;
        let keys = write_keys(&dir);
        let store = dir.join("events.sqlite");
        let listener = Listening::start(&dir, "127.0.0.1:0", &store, &keys, &[]);
        let report = load::run(&spec(listener.addr, POSTS), &signed, None).expect("load");
        let summary = listener.stop();

        assert_eq!(report.io_errors, 0);
        assert_eq!(
            report.statuses,
            BTreeMap::from([(200, POSTS)]),
            "every request acknowledged 200"
        );
        assert_eq!(summary["stopped"]["stored"], POSTS, "{summary}");
        let events = stored_events(&dir, &store);
        assert_eq!(events.len(), POSTS);
        let distinct: BTreeSet<(String, String)> = events
            .iter()
            .map(|e| {
                (
                    e["subscriptionId"].as_str().expect("sub").to_owned(),
                    e["sequenceNumber"].as_str().expect("seq").to_owned(),
                )
            })
            .collect();
        assert_eq!(distinct.len(), POSTS);
        assert!(events.iter().all(|e| e["verified"] == true));
        let want: BTreeSet<(String, String)> = (1..=POSTS as u64)
            .map(|i| ("41".to_owned(), i.to_string()))
            .collect();
        assert_eq!(distinct, want);
    }
);

bctest!(
    listen_prints_a_line_per_delivery_as_it_is_stored,
    |dir: Dir, _cmd: TestCommand| {
        let keys = write_keys(&dir);
        let store = dir.join("events.sqlite");
        // A delivery, the same again, a forged one whose fields try to drive the
        // terminal, and one that is not an event.
        let forged = br#"{"subscriptionId":"41\u001b[2J","sequenceNumber":9,"eventType":"BLOCK_PERIOD\u001b]0;verified\u0007"}"#;
        let posts = [
            signed(0),
            signed(0),
            (forged.to_vec(), Some("0xbad".to_owned())),
            (b"[1]".to_vec(), None),
        ];
        let listener = Listening::start(&dir, "127.0.0.1:0", &store, &keys, &[]);
        let one = LoadSpec {
            connections: 1,
            ..spec(listener.addr, posts.len())
        };
        let report = load::run(&one, &|i| posts[i].clone(), None).expect("load");
        assert_eq!(report.ok(), posts.len());
        let (summary, lines) = listener.stop_with_lines();
        assert_eq!(summary["stopped"]["notPrinted"], 0, "{summary}");
        let shown: Vec<&Value> = lines.iter().map(|l| &l["delivery"]).collect();
        assert_eq!(shown.len(), 4, "{lines:?}");
        for d in &shown {
            assert!(
                d["receivedAt"].as_str().is_some_and(|t| t.ends_with('Z')),
                "{d}"
            );
            for text in d
                .as_object()
                .expect("object")
                .values()
                .filter_map(Value::as_str)
            {
                assert!(!text.chars().any(char::is_control), "{text:?}");
            }
        }
        assert_eq!(shown[0]["subscriptionId"], "41");
        assert_eq!(shown[0]["sequenceNumber"], "1");
        assert_eq!(shown[0]["eventType"], "BLOCK_PERIOD");
        assert_eq!(shown[0]["verified"], true);
        assert_eq!(shown[0]["duplicate"], false);
        assert_eq!(shown[1]["duplicate"], true);
        assert_eq!(shown[2]["verified"], false);
        assert_eq!(shown[2]["subscriptionId"], "41\\u{1b}[2J");
        assert_eq!(shown[3]["quarantined"], true);

        // --quiet: the summary is the first line after the address.
        let listener = Listening::start(&dir, "127.0.0.1:0", &store, &keys, &["--quiet"]);
        let report = load::run(&spec(listener.addr, 1), &|_| signed(1), None).expect("load");
        assert_eq!(report.ok(), 1);
        let (summary, lines) = listener.stop_with_lines();
        assert!(lines.is_empty(), "--quiet printed {lines:?}");
        assert_eq!(summary["stopped"]["stored"], 1, "{summary}");
    }
);

/// Its line per delivery goes to a pipe nobody reads: 5,000 lines are far more than the
/// pipe (64 KiB) and the printing queue hold, so the printer is stuck in a write when
/// `signal` comes, mid-load. Waiting for stdout on the way out (joining the printer, or
/// writing the summary unbounded) fails this.
fn stops_within_seconds_whatever_stdout_does(dir: &Dir, signal: &str) {
    let keys = write_keys(dir);
    let store = dir.join("events.sqlite");
    let listener = Listening::start(dir, "127.0.0.1:0", &store, &keys, &[]);
    let (report, lines) = load_until(listener.addr, 5_000, 4_000, || {
        listener.terminate_within(signal, Duration::from_secs(5))
    });
    // Whatever reached the pipe is whole lines; a summary, if it got through, counts the
    // lines dropped.
    if let Some(summary) = lines.iter().find(|l| l.get("stopped").is_some()) {
        assert!(
            summary["stopped"]["notPrinted"].as_u64() > Some(0),
            "{summary}"
        );
    }
    let acked: Vec<usize> = (0..report.requests).filter(|&i| report.acked[i]).collect();
    assert!(acked.len() >= 4_000, "only {} acked", acked.len());
    let seqs: BTreeSet<String> = stored_events(dir, &store)
        .iter()
        .map(|e| e["sequenceNumber"].as_str().expect("seq").to_owned())
        .collect();
    let lost: Vec<usize> = acked
        .iter()
        .copied()
        .filter(|&i| !seqs.contains(&(i + 1).to_string()))
        .collect();
    assert!(
        lost.is_empty(),
        "{} answered 200 but not stored: {lost:?}",
        lost.len()
    );
}

bctest!(
    sigterm_stops_a_listener_whose_stdout_nobody_reads,
    |dir: Dir, _cmd: TestCommand| {
        stops_within_seconds_whatever_stdout_does(&dir, "TERM");
    }
);

bctest!(
    sigint_stops_a_listener_whose_stdout_nobody_reads,
    |dir: Dir, _cmd: TestCommand| {
        stops_within_seconds_whatever_stdout_does(&dir, "INT");
    }
);

bctest!(
    a_condition_error_speaks_of_the_condition_and_the_hint_names_the_flag,
    |dir: Dir, _cmd: TestCommand| {
        // The library names the condition's part; the CLI's hint names the flag that
        // gives it. Both fail before anything is sent (no web3 URL is even given).
        for (args, said, flag) in [
            (
                &["--type", "BLOCK_PERIOD"][..],
                "BLOCK_PERIOD needs a period in blocks",
                "hint: `--period N`",
            ),
            (
                &["--type", "TOKEN_TRANSFER", "--period", "3"][..],
                "condition.period: does not apply to TOKEN_TRANSFER",
                "hint: `--period N`",
            ),
            (
                &["--type", "BELOW_THRESHOLD_BALANCE", "--address", ADDR][..],
                "needs a threshold in wei",
                "hint: `--threshold WEI`",
            ),
            (
                &["--type", "LOG"][..],
                "not modelled here: give the whole condition object",
                "hint: `--condition-json JSON`",
            ),
        ] {
            let mut cmd = dir.command();
            cmd.args(["webhook", "create", "--url", "http://127.0.0.1:9/h"])
                .args(args);
            let stderr = cmd.fails_with(2);
            let (message, hint) = stderr.split_once("\nhint: ").expect("a hint line");
            assert!(message.contains(said), "{args:?}: {stderr}");
            assert!(
                !message.contains("--"),
                "a flag in the library's words: {stderr}"
            );
            assert!(
                format!("hint: {hint}").starts_with(flag),
                "{args:?}: {stderr}"
            );
        }
    }
);

bctest!(
    listen_on_a_busy_port_says_why_once,
    |dir: Dir, mut cmd: TestCommand| {
        let keys = write_keys(&dir);
        let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = taken.local_addr().expect("addr").to_string();
        cmd.args(["webhook", "listen", "--bind", &addr, "--path", PATH])
            .args(["--store".as_ref(), dir.join("events.sqlite").as_os_str()])
            .args(["--keys".as_ref(), keys.as_os_str()]);
        let stderr = cmd.fails_with(1);
        assert!(stderr.contains(&addr), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        // The OS reason once, not once from the message and again from its source.
        assert_eq!(stderr.matches("(os error").count(), 1, "{stderr}");
    }
);

bctest!(
    kill_9_midway_loses_no_acknowledged_event,
    |dir: Dir, _cmd: TestCommand| {
        let keys = write_keys(&dir);
        let store = dir.join("events.sqlite");
        let listener = Listening::start(&dir, "127.0.0.1:0", &store, &keys, &[]);
        // Killed once 600 of 2,000 posts are acknowledged: mid-load, with 64 requests in
        // flight.
        const POSTS: usize = 2_000;
        let (report, ()) = load_until(listener.addr, POSTS, 600, || listener.kill9());
        let acked: Vec<usize> = (0..report.requests).filter(|&i| report.acked[i]).collect();
        assert!(acked.len() >= 600, "only {} acked", acked.len());
        assert!(
            acked.len() < POSTS,
            "the kill came too late to test anything"
        );

        // Restart on the same store: every acknowledged event is there.
        let listener = Listening::start(&dir, "127.0.0.1:0", &store, &keys, &[]);
        let events = stored_events(&dir, &store);
        let seqs: BTreeSet<u64> = events
            .iter()
            .map(|e| {
                e["sequenceNumber"]
                    .as_str()
                    .expect("seq")
                    .parse()
                    .expect("number")
            })
            .collect();
        assert_eq!(seqs.len(), events.len(), "no event stored twice");
        let lost: Vec<usize> = acked
            .iter()
            .copied()
            .filter(|&i| !seqs.contains(&(i as u64 + 1)))
            .collect();
        assert!(
            lost.is_empty(),
            "{} acknowledged events lost, e.g. {:?}",
            lost.len(),
            &lost[..lost.len().min(5)]
        );

        // The platform retries what was not acknowledged: afterwards all are there once.
        let unacked: Vec<usize> = (0..report.requests).filter(|&i| !report.acked[i]).collect();
        let retry = load::run(
            &LoadSpec {
                requests: unacked.len(),
                ..spec(listener.addr, 0)
            },
            &|j| signed(unacked[j]),
            None,
        )
        .expect("retry load");
        assert_eq!(retry.ok(), unacked.len());
        listener.stop();
        assert_eq!(stored_events(&dir, &store).len(), POSTS);
    }
);

bctest!(
    a_killed_replicas_exec_child_dies_with_it_and_the_event_reruns_marked,
    |dir: Dir, _cmd: TestCommand| {
        let keys = write_keys(&dir);
        let store = dir.join("events.sqlite");
        let runs = dir.join("runs.txt");
        let pids = dir.join("pids.txt");
        // Each run records (sequence, rerun, bytes on stdin); A's runs then start a
        // grandchild that sleeps, and wait for it.
        let record = format!(
            "n=$(wc -c); echo \"$BRIDGECTL_SEQUENCE_NUMBER $BRIDGECTL_RERUN $n\" >> {}",
            runs.display()
        );
        let sleeping = format!(
            "{record}; sleep 30 & echo \"$$ $!\" >> {}; wait",
            pids.display()
        );
        let a = Listening::start(&dir, "127.0.0.1:0", &store, &keys, &["--exec", &sleeping]);
        let report = load::run(&spec(a.addr, 1), &signed, None).expect("load");
        assert_eq!(report.ok(), 1);
        let running = || -> Vec<u32> {
            std::fs::read_to_string(&pids)
                .unwrap_or_default()
                .split_whitespace()
                .map(|p| p.parse().expect("pid"))
                .collect()
        };
        wait_for("the --exec child to run", 30, || running().len() == 2);
        a.kill9();
        let killed = Instant::now();
        // The command's shell and the sleep it started: gone within a second.
        while !running()
            .into_iter()
            .all(bridgectl_sandbox::anvil::process_is_gone)
        {
            assert!(
                killed.elapsed() < Duration::from_secs(1),
                "orphans still running after the replica's SIGKILL: {:?}",
                running()
            );
            std::thread::sleep(Duration::from_millis(20));
        }

        // The restart takes the event over once A's lease ends, and runs it marked.
        let b = Listening::start(&dir, "127.0.0.1:0", &store, &keys, &["--exec", &record]);
        let body_len = signed(0).0.len();
        let lines = || -> Vec<String> {
            std::fs::read_to_string(&runs)
                .unwrap_or_default()
                .lines()
                .map(str::to_owned)
                .collect()
        };
        wait_for("the marked re-run", 30, || lines().len() >= 2);
        b.stop();
        assert_eq!(
            lines(),
            [format!("1 0 {body_len}"), format!("1 1 {body_len}")],
            "one unmarked run, then one marked re-run, each with the whole body"
        );
    }
);

bctest!(
    client_checks_input_before_any_request,
    |dir: Dir, mut cmd: TestCommand| {
        // Nothing listens on port 9: a request would fail differently.
        cmd.args([
            "webhook",
            "list",
            "--chain",
            "bitcoin",
            "--network",
            "mainnet",
        ])
        .args(["--web3-url", "http://127.0.0.1:9"])
        .env("BRIDGECTL_WEB3_TOKEN", "t");
        let err = cmd.fails_with(2);
        assert!(err.contains("unsupported chain \"bitcoin\""), "{err}");
        assert!(err.contains("ethereum, polygon"), "{err}");

        let err = dir
            .command()
            .args([
                "webhook",
                "list",
                "--chain",
                "polygon",
                "--network",
                "sepolia",
            ])
            .args(["--web3-url", "http://127.0.0.1:9"])
            .env("BRIDGECTL_WEB3_TOKEN", "t")
            .fails_with(2);
        assert!(err.contains("mainnet, mumbai"), "{err}");

        let err = dir
            .command()
            .args([
                "webhook",
                "list",
                "--chain",
                "ethereum",
                "--network",
                "sepolia",
            ])
            .args(["--web3-url", "http://web3.example.com"])
            .env("BRIDGECTL_WEB3_TOKEN", "super-secret-token")
            .fails_with(3);
        assert!(err.contains("plain http"), "{err}");
        assert!(!err.contains("super-secret-token"), "{err}");

        let err = dir
            .command()
            .args([
                "webhook",
                "create",
                "--type",
                "BLOCK_PERIOD",
                "--period",
                "0",
            ])
            .args([
                "--url",
                "http://127.0.0.1:1/h",
                "--chain",
                "ethereum",
                "--network",
                "sepolia",
            ])
            .args(["--web3-url", "http://127.0.0.1:9"])
            .env("BRIDGECTL_WEB3_TOKEN", "t")
            .fails_with(2);
        assert!(err.contains("condition.period"), "{err}");

        let err = dir
            .command()
            .args([
                "webhook",
                "list",
                "--chain",
                "ethereum",
                "--network",
                "sepolia",
            ])
            .args(["--web3-url", "http://127.0.0.1:9"])
            .fails_with(2);
        assert!(err.contains("no web3 token"), "{err}");

        let err = dir
            .command()
            .args(["webhook", "events", "--store"])
            .arg_path(&dir.join("none.sqlite"))
            .fails_with(6);
        assert!(err.contains("no event store"), "{err}");
    }
);

trait ArgPath {
    fn arg_path(&mut self, p: &Path) -> &mut Self;
}

impl ArgPath for TestCommand {
    fn arg_path(&mut self, p: &Path) -> &mut Self {
        self.cmd.arg(p);
        self
    }
}

/// Events of one subscription in the store: (sequenceNumber, block number).
fn deliveries(dir: &Dir, store: &Path, sub: &str) -> Vec<(u64, u64)> {
    stored_events(dir, store)
        .iter()
        // A delivery that raced `create`'s writing of the key is unverified until the
        // next one re-verifies it; a missing one shows as a hole in the sequence.
        .filter(|e| e["subscriptionId"] == sub && e["verified"] == true)
        .map(|e| {
            let seq = e["sequenceNumber"]
                .as_str()
                .expect("seq")
                .parse()
                .expect("seq");
            let number = &e["event"]["event"]["message"]["number"];
            let block = match number {
                Value::String(s) => {
                    u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex block number")
                }
                Value::Number(n) => n.as_u64().expect("block number"),
                other => panic!("no block number in {other}"),
            };
            (seq, block)
        })
        .collect()
}

fn wait_for(what: &str, secs: u64, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A sandbox with a block every 500 ms whose deliveries are retried from 100 ms up to
/// `retry_max_ms`, and whose webhooks are removed after `remove_after` failures in a row.
fn sandbox(
    retry_max_ms: u64,
    remove_after: u32,
) -> (tokio::runtime::Runtime, bridgectl_sandbox::Sandbox) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut config = bridgectl_sandbox::SandboxConfig {
        anvil: Some(crate::util::pinned_tool("anvil")),
        ..Default::default()
    };
    config.main.block_time_ms = 500;
    config.webhooks.retry_base_ms = 100;
    config.webhooks.retry_max_ms = retry_max_ms;
    config.webhooks.remove_after_failures = remove_after;
    let sandbox = rt
        .block_on(bridgectl_sandbox::Sandbox::start(config))
        .expect("sandbox starts");
    (rt, sandbox)
}

bctest!(
    block_period_webhooks_against_the_sandbox,
    |dir: Dir, _cmd: TestCommand| {
        let (rt, sandbox) = sandbox(400, 1_000);
        let info = sandbox.info().clone();

        let keys = dir.join("state/keys.json");
        let store = dir.join("events.sqlite");
        let listener =
            Listening::start(&dir, "127.0.0.1:0", &store, &keys, &[]).with_sandbox(&sandbox);
        let hook_url = format!("http://{}{PATH}", listener.addr);
        let web3 = |cmd: &mut TestCommand| {
            cmd.args(["--chain", "ethereum", "--network", "sepolia"])
                .args(["--web3-url", &info.web3_url])
                .args(["--keys".as_ref(), keys.as_os_str()]);
        };
        let with_token = |cmd: &mut TestCommand| {
            cmd.env("BRIDGECTL_WEB3_TOKEN", info.token.expose_secret());
        };

        // Period 1 with the token from the environment; period 2 by key exchange.
        let mut c = create_block_period(&dir, "1", &hook_url);
        c.args(["--description", "every block"]);
        web3(&mut c);
        with_token(&mut c);
        let one = c.json();
        let sub1 = one["subscriptionId"].as_str().expect("id").to_owned();
        assert!(one.get("signingKey").is_none() && !one.to_string().contains("signingKey\""));
        assert_eq!(one["network"], "SEPOLIA");
        let mut c = create_block_period(&dir, "2", &hook_url);
        c.env("BRIDGECTL_WEB3_NODE_ID", "node-1")
            .env("BRIDGECTL_WEB3_KEY_ID", &info.access_key)
            .env("BRIDGECTL_WEB3_KEY_SECRET", "sandbox-secret-key");
        web3(&mut c);
        let two = c.json();
        let sub2 = two["subscriptionId"].as_str().expect("id").to_owned();
        let stored_keys = KeyFile::new(&keys).load().expect("keys");
        assert!(stored_keys.get(&sub1).is_some() && stored_keys.get(&sub2).is_some());

        // Deliveries arrive, verified, one per block and one per two blocks, in sequence.
        wait_for("deliveries of both webhooks", 60, || {
            deliveries(&dir, &store, &sub1).len() >= 6 && deliveries(&dir, &store, &sub2).len() >= 3
        });
        for (sub, period) in [(&sub1, 1), (&sub2, 2)] {
            let d = deliveries(&dir, &store, sub);
            for (i, pair) in d.windows(2).enumerate() {
                assert_eq!(pair[1].0, pair[0].0 + 1, "sequence of {sub} at {i}: {d:?}");
                assert_eq!(
                    pair[1].1,
                    pair[0].1 + period,
                    "block spacing of {sub}: {d:?}"
                );
            }
        }

        // list and get show both, active.
        let mut c = dir.command();
        c.args(["--json", "webhook", "list"]);
        web3(&mut c);
        with_token(&mut c);
        let listed = c.json();
        let ids: BTreeSet<&str> = listed["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|w| w["subscriptionId"].as_str().expect("id"))
            .collect();
        assert!(
            ids.contains(sub1.as_str()) && ids.contains(sub2.as_str()),
            "{listed}"
        );
        assert!(!listed.to_string().contains("signingKey"));
        // The text is a table: a header, then each webhook under it.
        let mut c = dir.command();
        c.args(["webhook", "list"]);
        web3(&mut c);
        with_token(&mut c);
        let text = c.stdout();
        let lines: Vec<&str> = text.lines().collect();
        let header = lines[0];
        assert!(header.starts_with("ID "), "{text}");
        let state = header.find("STATE").expect("STATE");
        let kind = header.find("EVENT TYPE").expect("EVENT TYPE");
        for sub in [&sub1, &sub2] {
            let row = lines
                .iter()
                .find(|l| l.starts_with(&format!("{sub} ")))
                .unwrap_or_else(|| panic!("{sub} not listed: {text}"));
            assert!(row[state..].starts_with("active "), "{text}");
            assert!(row[kind..].starts_with("BLOCK_PERIOD "), "{text}");
        }

        // isActive=false stops sub1.
        let mut c = dir.command();
        c.args(["webhook", "update", &sub1, "--active", "false"]);
        web3(&mut c);
        with_token(&mut c);
        c.stdout();
        let mut c = dir.command();
        c.args(["--json", "webhook", "get", &sub1]);
        web3(&mut c);
        with_token(&mut c);
        assert_eq!(c.json()["isActive"], false);
        // The deliverer reports the blocks it has finished with. Once it is past the one
        // it may have been delivering when the pause came, every later block is read as
        // paused: three of them handled with nothing sent proves the pause, no sleep.
        let state = sandbox.state();
        let id1: u64 = sub1.parse().expect("numeric id");
        let handled = |id: u64| state.deliverer(id).expect("a deliverer").handled_block;
        let h0 = handled(id1);
        wait_for("the block in hand when paused", 30, || handled(id1) > h0);
        let stored = |sub: &str| {
            stored_events(&dir, &store)
                .iter()
                .filter(|e| e["subscriptionId"] == sub)
                .count()
        };
        let delivered = |id: u64| {
            state
                .webhook_status()
                .iter()
                .find(|w| w.0 == id)
                .map(|w| w.2)
        };
        let (paused, paused_sent) = (stored(&sub1), delivered(id1));
        wait_for("three blocks handled while paused", 30, || {
            handled(id1) >= h0 + 4
        });
        assert_eq!(delivered(id1), paused_sent, "the sandbox sent while paused");
        assert_eq!(stored(&sub1), paused, "inactive webhook delivered");

        // delete stops sub2 for good (its deliverer ends) and removes its key.
        let mut c = dir.command();
        c.args(["--json", "webhook", "delete", &sub2]);
        web3(&mut c);
        with_token(&mut c);
        assert_eq!(c.json()["signingKeyRemoved"], true);
        let id2: u64 = sub2.parse().expect("numeric id");
        wait_for("the deleted webhook's deliverer to end", 30, || {
            !state.deliverer(id2).expect("a deliverer").running
        });
        let deleted = stored(&sub2);
        let mut c = dir.command();
        c.args(["webhook", "get", &sub2]);
        web3(&mut c);
        with_token(&mut c);
        c.fails_with(6);

        // A listener that was down gets the retried deliveries after it restarts.
        let mut c = create_block_period(&dir, "1", &hook_url);
        web3(&mut c);
        with_token(&mut c);
        let sub3 = c.json()["subscriptionId"].as_str().expect("id").to_owned();
        wait_for("first deliveries of the third webhook", 30, || {
            deliveries(&dir, &store, &sub3).len() >= 2
        });
        let bind = listener.addr.to_string();
        listener.kill9();
        let before = deliveries(&dir, &store, &sub3).len();
        // Down until the sandbox reports failed attempts: there is something to retry.
        let id3: u64 = sub3.parse().expect("numeric id");
        wait_for("failed deliveries while the listener is down", 30, || {
            state
                .webhook_status()
                .iter()
                .any(|w| w.0 == id3 && w.3 >= 2)
        });
        let listener = Listening::start(&dir, &bind, &store, &keys, &[]).with_sandbox(&sandbox);
        wait_for("retried deliveries after the restart", 60, || {
            deliveries(&dir, &store, &sub3).len() >= before + 6
        });
        let d = deliveries(&dir, &store, &sub3);
        for pair in d.windows(2) {
            assert_eq!(pair[1].0, pair[0].0 + 1, "a delivery was lost: {d:?}");
            assert_eq!(pair[1].1, pair[0].1 + 1, "a block was skipped: {d:?}");
        }
        listener.stop();
        assert_eq!(stored(&sub2), deleted, "deleted webhook delivered");
        rt.block_on(sandbox.shutdown()).expect("sandbox stops");
    }
);

bctest!(
    exec_children_see_no_secret_and_forged_fields_print_escaped,
    |dir: Dir, _cmd: TestCommand| {
        let keys = write_keys(&dir);
        let store = dir.join("events.sqlite");
        let env_out = dir.join("env.txt");
        let exec = format!("env > {}", env_out.display());
        let secrets = [
            ("BRIDGECTL_PASSPHRASE", "pass-phrase-1"),
            ("BRIDGECTL_ACCESS_TOKEN", "access-token-2"),
            ("BRIDGECTL_WEB3_TOKEN", "web3-token-3"),
            ("BRIDGECTL_WEB3_KEY_SECRET", "web3-key-secret-4"),
            ("AWS_SECRET_ACCESS_KEY", "cloud-secret-5"),
        ];
        let listener = Listening::start_env(
            &dir,
            "127.0.0.1:0",
            &store,
            &keys,
            &["--exec", &exec],
            &secrets,
        );
        let report = load::run(&spec(listener.addr, 1), &signed, None).expect("load");
        assert_eq!(report.ok(), 1);
        wait_for("the exec child", 30, || {
            std::fs::read_to_string(&env_out).is_ok_and(|t| t.contains("BRIDGECTL_EVENT_ID="))
        });
        let env = std::fs::read_to_string(&env_out).expect("env");
        // Every secret of the listener's environment, and the webhook signing key it
        // verifies with (from the key file), in any form the scan knows.
        let mut scan = crate::secrets::Secrets::new();
        scan.add("the webhook signing key", KEY);
        for (name, value) in secrets {
            scan.add(name, value);
        }
        scan.scan("the exec child's environment", env.as_bytes());
        assert!(env.contains("BRIDGECTL_SEQUENCE_NUMBER=1"), "{env}");
        assert!(env.contains("PATH="), "{env}");

        // A forged delivery whose fields carry terminal escapes: shown escaped, and the
        // UNVERIFIED marker stays visible.
        let forged = br#"{"subscriptionId":"41\u001b[2K\u001b[1G","sequenceNumber":"9\u001b]0;x\u0007","eventType":"\u001b[8mBLOCK_PERIOD"}"#;
        let report = load::run(
            &spec(listener.addr, 1),
            &|_| (forged.to_vec(), Some("00".into())),
            None,
        )
        .expect("load");
        assert_eq!(report.ok(), 1);
        listener.stop();
        let mut cmd = dir.command();
        cmd.args(["webhook", "events", "--store"]).arg_path(&store);
        let text = cmd.stdout();
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{text:?}"
        );
        let line = text
            .lines()
            .find(|l| l.contains("UNVERIFIED"))
            .unwrap_or_else(|| panic!("no UNVERIFIED line in {text:?}"));
        assert!(line.contains("sub=41\\u{1b}[2K"), "{line}");
    }
);

/// A TCP front for a listener that can be switched to failing: what the platform sees when
/// the listener is down, without stopping it. Runs until dropped; loopback only.
struct Front {
    addr: SocketAddr,
    /// Where it forwards to, set once the listener behind it has bound its port
    /// ([`Front::forward_to`]); until then a client's connection is closed.
    backend: std::sync::Arc<std::sync::OnceLock<SocketAddr>>,
    failing: std::sync::Arc<std::sync::atomic::AtomicBool>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Front {
    fn new() -> Front {
        use std::sync::atomic::AtomicBool;
        use std::sync::{Arc, OnceLock};
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").expect("bind front");
        tcp.set_nonblocking(true).expect("nonblocking");
        let addr = tcp.local_addr().expect("addr");
        let failing = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let backend = Arc::new(OnceLock::new());
        let (f, s, b) = (failing.clone(), stop.clone(), backend.clone());
        std::thread::spawn(move || {
            // Open pairs, cut when failing starts: a keep-alive connection must fail too.
            let mut live: Vec<std::net::TcpStream> = Vec::new();
            while !s.load(Ordering::Relaxed) {
                if f.load(Ordering::Relaxed) {
                    for c in live.drain(..) {
                        let _ = c.shutdown(std::net::Shutdown::Both);
                    }
                }
                let Ok((client, _)) = tcp.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                let _ = client.set_nonblocking(false);
                if f.load(Ordering::Relaxed) {
                    use std::io::Write;
                    let mut client = client;
                    let _ = client.write_all(
                        b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    );
                    continue;
                }
                let Some(server) = b.get().and_then(|a| std::net::TcpStream::connect(a).ok())
                else {
                    continue;
                };
                let pump = |mut from: std::net::TcpStream, mut to: std::net::TcpStream| {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Write);
                    });
                };
                if let (Ok(c2), Ok(s2), Ok(c3), Ok(s3)) = (
                    client.try_clone(),
                    server.try_clone(),
                    client.try_clone(),
                    server.try_clone(),
                ) {
                    live.push(c3);
                    live.push(s3);
                    pump(client, server);
                    pump(s2, c2);
                }
            }
        });
        Front {
            addr,
            backend,
            failing,
            stop,
        }
    }

    /// Forwards to `backend` from now on.
    fn forward_to(&self, backend: SocketAddr) {
        self.backend.set(backend).expect("the backend is set once");
    }
}

impl Drop for Front {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

bctest!(
    ensure_restores_a_webhook_the_platform_removed_and_records_the_gap,
    |dir: Dir, _cmd: TestCommand| {
        let (rt, sandbox) = sandbox(200, 3);
        let info = sandbox.info().clone();
        let token = info.token.expose_secret().to_owned();

        let keys = dir.join("state/keys.json");
        let store = dir.join("events.sqlite");
        // The listener behind a front the test can make fail, as a load balancer would
        // when the listener is down. The listener binds a port of its own (a port probed
        // and freed first could be taken by another test before the listener binds it).
        let front = Front::new();
        let hook_url = format!("http://{}{PATH}", front.addr);
        const INTERVAL: f64 = 2.0;
        let interval = INTERVAL.to_string();
        let listener = Listening::start_env(
            &dir,
            "127.0.0.1:0",
            &store,
            &keys,
            &[
                "--ensure",
                "--ensure-interval",
                &interval,
                "--url",
                &hook_url,
                "--web3-url",
                &info.web3_url,
            ],
            &[("BRIDGECTL_WEB3_TOKEN", &token)],
        );
        front.forward_to(listener.addr);
        let web3 = |cmd: &mut TestCommand| {
            cmd.args(["--chain", "ethereum", "--network", "sepolia"])
                .args(["--web3-url", &info.web3_url])
                .args(["--keys".as_ref(), keys.as_os_str()])
                .env("BRIDGECTL_WEB3_TOKEN", &token);
        };
        let mut c = create_block_period(&dir, "1", &hook_url);
        web3(&mut c);
        let sub1 = c.json()["subscriptionId"].as_str().expect("id").to_owned();
        wait_for("first deliveries", 30, || {
            deliveries(&dir, &store, &sub1).len() >= 2
        });
        let listed = || -> Vec<Value> {
            let mut c = dir.command();
            c.args(["--json", "webhook", "list"]);
            web3(&mut c);
            c.json()["items"].as_array().cloned().unwrap_or_default()
        };

        // Fail until the platform removes the webhook (3 failures in a row).
        front.failing.store(true, Ordering::Relaxed);
        wait_for("the platform to remove the failing webhook", 30, || {
            !listed()
                .iter()
                .any(|w| w["subscriptionId"] == sub1.as_str())
        });
        let removed_at = Instant::now();
        front.failing.store(false, Ordering::Relaxed);

        // A webhook with our URL comes back, under a new id (within one check interval
        // on an idle machine: the time is printed below).
        let mut restored = None;
        wait_for("the webhook to be restored", 30, || {
            restored = listed()
                .into_iter()
                .find(|w| w["webhookUrl"] == hook_url.as_str() && w["isActive"] != false)
                .and_then(|w| w["subscriptionId"].as_str().map(str::to_owned));
            restored.is_some()
        });
        let healed_in = removed_at.elapsed();
        let sub2 = restored.expect("restored");
        assert_ne!(sub2, sub1);
        // How long it took is reported, not asserted: a loaded 2-core machine must not
        // fail the test (the 30 s above is a deadline on presence).
        #[allow(clippy::print_stderr)]
        {
            eprintln!(
                "time to heal: {:.2} s (check interval {INTERVAL} s)",
                healed_in.as_secs_f64()
            );
        }
        // Its deliveries verify with the new key the check stored (one that raced the
        // key file's update may be unverified: the platform can deliver before `create`
        // has returned the key).
        wait_for("verified deliveries of the restored webhook", 30, || {
            stored_events(&dir, &store)
                .iter()
                .filter(|e| e["subscriptionId"] == sub2.as_str() && e["verified"] == true)
                .count()
                >= 2
        });

        // The gap is recorded and shown.
        let mut c = dir.command();
        c.args(["--json", "webhook", "events", "--gaps", "--store"])
            .arg_path(&store);
        let gaps = c.json();
        let gaps = gaps.as_array().expect("array");
        assert_eq!(gaps.len(), 1, "{gaps:?}");
        assert_eq!(gaps[0]["subscriptionId"], sub1.as_str());
        assert_eq!(gaps[0]["replacedBy"], sub2.as_str());
        assert_eq!(gaps[0]["cause"], "removed");
        assert!(gaps[0]["fromMs"].as_i64() <= gaps[0]["toMs"].as_i64());
        let mut c = dir.command();
        c.args(["webhook", "events", "--store"]).arg_path(&store);
        let text = c.stdout();
        assert!(
            text.lines()
                .any(|l| l.starts_with("GAP") && l.contains(&sub1)),
            "{text}"
        );

        // Deactivated (by hand, or by the platform): re-activated, with a gap too.
        let mut c = dir.command();
        c.args(["webhook", "update", &sub2, "--active", "false"]);
        web3(&mut c);
        c.stdout();
        let paused_at = Instant::now();
        wait_for("the webhook to be re-activated", 30, || {
            listed()
                .iter()
                .any(|w| w["subscriptionId"] == sub2.as_str() && w["isActive"] == true)
        });
        #[allow(clippy::print_stderr)]
        {
            eprintln!(
                "time to re-activate: {:.2} s (check interval {INTERVAL} s)",
                paused_at.elapsed().as_secs_f64()
            );
        }
        // The gap is stored right after the re-activation.
        let mut gaps = Vec::new();
        wait_for("the second gap", 10, || {
            let mut c = dir.command();
            c.args(["--json", "webhook", "events", "--gaps", "--store"])
                .arg_path(&store);
            gaps = c.json().as_array().cloned().unwrap_or_default();
            gaps.len() == 2
        });
        assert_eq!(gaps[1]["subscriptionId"], sub2.as_str());
        assert_eq!(gaps[1]["replacedBy"], sub2.as_str());
        assert_eq!(gaps[1]["cause"], "inactive");
        listener.stop();
        rt.block_on(sandbox.shutdown()).expect("sandbox stops");
    }
);

bctest!(
    two_replicas_on_postgres_store_once_and_hand_off_once_with_one_killed,
    |dir: Dir, _cmd: TestCommand| {
        let pg = crate::util::Postgres::start();
        let url = pg.url();
        let keys = write_keys(&dir);
        let handed = dir.join("handed.txt");
        // Appends are atomic for a short line, whichever replica runs it.
        let exec = format!(
            "echo \"$BRIDGECTL_SEQUENCE_NUMBER $BRIDGECTL_ATTEMPT $BRIDGECTL_RERUN\" >> {}",
            handed.display()
        );
        let extra = [
            "--exec",
            exec.as_str(),
            "--exec-timeout",
            "5",
            "--lease",
            "6",
        ];
        let a = Listening::start(&dir, "127.0.0.1:0", &url, &keys, &extra);
        let b = Listening::start(&dir, "127.0.0.1:0", &url, &keys, &extra);
        // 1,200 deliveries, each handed to a process of its own; A is killed once a
        // quarter of its half is acknowledged.
        const HALF: usize = 600;
        const KILL_AT: usize = HALF / 4;
        let half = |addr| LoadSpec {
            connections: 32,
            ..spec(addr, HALF)
        };
        let progress = Progress::default();
        let (a_addr, b_addr) = (a.addr, b.addr);
        let (report_a, report_b) = std::thread::scope(|s| {
            let load_a = s.spawn(|| load::run(&half(a_addr), &signed, Some(&progress)));
            let load_b = s.spawn(|| load::run(&half(b_addr), &|i| signed(HALF + i), None));
            let deadline = Instant::now() + Duration::from_secs(120);
            while progress.ok.load(Ordering::Relaxed) < KILL_AT {
                assert!(Instant::now() < deadline, "load made no progress");
                std::thread::sleep(Duration::from_millis(2));
            }
            a.kill9();
            (
                load_a.join().expect("load a").expect("load"),
                load_b.join().expect("load b").expect("load"),
            )
        });
        assert_eq!(report_b.ok(), HALF, "{:?}", report_b.statuses);
        let acked_a: Vec<usize> = (0..HALF).filter(|&i| report_a.acked[i]).collect();
        assert!(
            acked_a.len() >= KILL_AT && acked_a.len() < HALF,
            "{}",
            acked_a.len()
        );

        // Every delivery that got 200 is stored, exactly once.
        let events = stored_events(&dir, &url);
        let seqs: BTreeSet<u64> = events
            .iter()
            .map(|e| {
                e["sequenceNumber"]
                    .as_str()
                    .expect("seq")
                    .parse()
                    .expect("n")
            })
            .collect();
        assert_eq!(seqs.len(), events.len(), "an event was stored twice");
        for &i in &acked_a {
            assert!(seqs.contains(&(i as u64 + 1)), "acked event {i} lost");
        }
        assert!((HALF as u64 + 1..=2 * HALF as u64).all(|s| seqs.contains(&s)));

        // The platform retries what replica A never acknowledged; the balancer sends it to B.
        let unacked: Vec<usize> = (0..HALF).filter(|&i| !report_a.acked[i]).collect();
        let retry = load::run(
            &LoadSpec {
                requests: unacked.len(),
                ..half(b.addr)
            },
            &|j| signed(unacked[j]),
            None,
        )
        .expect("retry");
        assert_eq!(retry.ok(), unacked.len());
        let events = stored_events(&dir, &url);
        assert_eq!(events.len(), 2 * HALF, "every delivery stored once");

        // The hand-off: B finishes everything, A's leased events included once the lease ends.
        // (sequence number, attempt, marked as a re-run)
        let lines = || -> Vec<(u64, u64, bool)> {
            std::fs::read_to_string(&handed)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| {
                    let mut f = l.split(' ');
                    let seq = f.next()?.parse().ok()?;
                    let attempt = f.next()?.parse().ok()?;
                    let rerun = match f.next()? {
                        "0" => false,
                        "1" => true,
                        _ => return None,
                    };
                    Some((seq, attempt, rerun))
                })
                .collect()
        };
        let deadline = Instant::now() + Duration::from_secs(400);
        loop {
            let done = lines().iter().map(|l| l.0).collect::<BTreeSet<_>>().len();
            if done == 2 * HALF {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "only {done} of {} events handed on",
                2 * HALF
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        // Final, not "quiet for a while": A is dead and B is stopped, so nothing can run
        // an event again after this.
        b.stop();
        let seen = lines();
        let mut count: BTreeMap<u64, usize> = BTreeMap::new();
        let mut unmarked: BTreeMap<u64, usize> = BTreeMap::new();
        for &(seq, attempt, rerun) in &seen {
            *count.entry(seq).or_default() += 1;
            // The marker and the attempt number agree: attempt 1 is the only unmarked one.
            assert_eq!(
                rerun,
                attempt > 1,
                "event {seq}: attempt {attempt}, rerun {rerun}"
            );
            if !rerun {
                *unmarked.entry(seq).or_default() += 1;
            }
        }
        let twice: Vec<u64> = count.iter().filter(|c| *c.1 > 1).map(|c| *c.0).collect();
        let unmarked_runs: usize = unmarked.values().sum();
        #[allow(clippy::print_stderr)]
        {
            eprintln!(
                "replica A acked {} of {HALF} before SIGKILL; exec runs: {} for {} events \
                 ({unmarked_runs} not marked as re-runs); run twice: {twice:?}",
                acked_a.len(),
                seen.len(),
                count.len()
            );
        }
        // At most the one event A was running when it was killed may run again (its
        // success was never recorded); every other event ran exactly once.
        assert!(twice.len() <= 1, "events run more than once: {twice:?}");
        assert!(count.values().all(|&n| n <= 2));
        // A consumer that checks its own records only for runs marked BRIDGECTL_RERUN=1
        // acts on each event once: no event has two unmarked runs, and every event has
        // one, unless A died between counting an attempt and starting its child (then
        // that event's only run is marked, which is why marked runs are checked, not
        // dropped).
        assert!(
            unmarked.values().all(|&n| n == 1),
            "an event ran twice unmarked: {unmarked:?}"
        );
        assert!(
            unmarked_runs == 2 * HALF || (unmarked_runs == 2 * HALF - 1 && twice.is_empty()),
            "{unmarked_runs} unmarked runs for {} events",
            2 * HALF
        );
        drop(pg);
    }
);

/// `bridgectl --json webhook create --type BLOCK_PERIOD --period N --url URL`, without
/// the web3 settings (each test adds its own).
fn create_block_period(dir: &Dir, period: &str, hook_url: &str) -> TestCommand {
    let mut c = dir.command();
    c.args([
        "--json",
        "webhook",
        "create",
        "--type",
        "BLOCK_PERIOD",
        "--period",
        period,
        "--url",
        hook_url,
    ]);
    c
}

/// `create` keeps the signing key itself (the library's create, not the CLI): a key
/// file that cannot be read refuses before a webhook exists whose deliveries could
/// never be verified.
#[test]
fn create_with_an_unusable_key_file_creates_nothing() {
    let sb = crate::live::LiveSandbox::shared();
    let info = sb.info.clone();
    let dir = Dir::new("webhook_create_unusable_keys");
    dir.write("not-a-dir", "a file where the key file's folder should be");
    let web3 = |c: &mut TestCommand| {
        c.args(["--chain", "ethereum", "--network", "sepolia"])
            .args(["--web3-url", &info.web3_url])
            .env("BRIDGECTL_WEB3_TOKEN", info.token.expose_secret());
    };
    // The sandbox is shared with tests that create webhooks: this one looks for its own
    // listener URL only.
    let url = "http://127.0.0.1:9/hooks/unusable-key-file";
    let count = || {
        let mut c = dir.command();
        c.args(["--json", "webhook", "list"]);
        web3(&mut c);
        let items = c.json()["items"].clone();
        let items = items.as_array().expect("items");
        items.iter().filter(|w| w["webhookUrl"] == url).count()
    };
    let mut c = create_block_period(&dir, "5", url);
    web3(&mut c);
    c.args([
        "--keys".as_ref(),
        dir.join("not-a-dir/keys.json").as_os_str(),
    ]);
    let stderr = c.fails_with(1);
    assert!(stderr.contains("not-a-dir"), "{stderr}");
    assert!(
        !stderr.contains("was created"),
        "refused before creating: {stderr}"
    );
    assert_eq!(count(), 0, "nothing was created: {stderr}");
}

#[test]
fn webhook_commands_print_no_secret() {
    // `create` stores the signing key (0600) and never prints it; no command shows the
    // token, the access key's secret or any signing key, in text or JSON, on stdout or
    // stderr. The sandbox only serves the web3 API here, so the shared one does.
    let sb = crate::live::LiveSandbox::shared();
    let info = sb.info.clone();
    let dir = Dir::new("webhook_crud_secrets");
    let keys = dir.join("state/keys.json");
    let mut scan = crate::secrets::Secrets::new();
    scan.add("the web3 token", info.token.expose_secret())
        .add("the access key's secret", "sandbox-secret-key");
    let mut outputs = Vec::new();
    // Token from the environment, or a key exchange (access key id and secret).
    let mut run = |args: &[&str], exchange: bool| -> String {
        let mut c = dir.command();
        c.args(args)
            .args(["--chain", "ethereum", "--network", "sepolia"])
            .args(["--web3-url", &info.web3_url])
            .args(["--keys".as_ref(), keys.as_os_str()]);
        if exchange {
            c.env("BRIDGECTL_WEB3_NODE_ID", "node-1")
                .env("BRIDGECTL_WEB3_KEY_ID", &info.access_key)
                .env("BRIDGECTL_WEB3_KEY_SECRET", "sandbox-secret-key");
        } else {
            c.env("BRIDGECTL_WEB3_TOKEN", info.token.expose_secret());
        }
        let out = c.output();
        crate::util::assert_success(&c.cmd, &out);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        outputs.push((args.join(" "), out));
        stdout
    };
    // Deliveries go nowhere (a closed port): only the commands' outputs matter.
    let create = |json: bool| {
        let mut a = vec![
            "webhook",
            "create",
            "--type",
            "BLOCK_PERIOD",
            "--period",
            "5",
        ];
        a.extend([
            "--url",
            "http://127.0.0.1:9/hooks/nowhere",
            "--description",
            "d",
        ]);
        if json {
            a.insert(0, "--json");
        }
        a
    };
    let created: Value = serde_json::from_str(&run(&create(true), false)).expect("json");
    let one = created["subscriptionId"].as_str().expect("id").to_owned();
    let text = run(&create(false), true);
    let two = text
        .strip_prefix("created webhook ")
        .and_then(|t| t.split(':').next())
        .expect("created webhook ID: ...")
        .to_owned();
    // The keys the commands stored, read before `delete` removes them.
    let stored = KeyFile::new(&keys).load().expect("keys");
    for id in [&one, &two] {
        let key = stored.get(id).expect("a stored signing key");
        scan.add("a webhook signing key", key.signing_key.expose_secret());
    }
    for json in [true, false] {
        let j: &[&str] = if json { &["--json"] } else { &[] };
        run(&[j, &["webhook", "list"][..]].concat(), json);
        run(&[j, &["webhook", "get", &one][..]].concat(), !json);
        let update = ["webhook", "update", &one, "--description", "e"];
        run(&[j, &update[..]].concat(), json);
    }
    run(&["--json", "webhook", "delete", &one], false);
    run(&["webhook", "delete", &two], true);
    // Every secret the sandbox holds or issued (tokens from the exchanges included).
    scan.add_sandbox(&sb.state);
    for (args, out) in &outputs {
        scan.scan_output(args, out);
    }
    assert_eq!(outputs.len(), 10);
}

/// After strangers filled the unverified quota (1,000 forged deliveries, and each again:
/// a repeat spends nothing), a forged and a genuine delivery for a subscription whose
/// signing key is not written yet (they raced `webhook create`), then the key, then one
/// more genuine delivery: the genuine ones are verified and handed off, the forged one
/// is never verified and never handed off. Removing the signature check from the store's
/// re-verification (`reverify` in `store/sqlite.rs` or `store/postgres.rs`), or the
/// "no signing key" quota of its own, fails this on that store.
fn forged_before_the_key_is_never_verified(dir: &Dir, store: &str) {
    const NEW_KEY: &str = "key-of-subscription-8";
    let keys = write_keys(dir);
    let handed = dir.join("handed-8.txt");
    let exec = format!(
        "echo \"$BRIDGECTL_SUBSCRIPTION_ID $BRIDGECTL_SEQUENCE_NUMBER\" >> {}",
        handed.display()
    );
    let listener = Listening::start(dir, "127.0.0.1:0", store, &keys, &["--exec", &exec]);
    let delivery = |seq: u64, key: &str| {
        let body = block_period_delivery("8", seq);
        let sig = sign(key.as_bytes(), &body);
        (body, Some(sig))
    };
    let post = |deliveries: Vec<(Vec<u8>, Option<String>)>| {
        let report = load::run(
            &LoadSpec {
                connections: 1,
                ..spec(listener.addr, deliveries.len())
            },
            &|i| deliveries[i].clone(),
            None,
        )
        .expect("post");
        assert_eq!(report.ok(), deliveries.len(), "{:?}", report.statuses);
    };
    // The strangers' flood: forged deliveries of subscription 41, each twice.
    let flood = load::run(
        &spec(listener.addr, 2_000),
        &|i| {
            let body = block_period_delivery("41", (i % 1_000) as u64 + 1);
            (body, Some("0xforged".to_owned()))
        },
        None,
    )
    .expect("flood");
    assert_eq!(flood.ok(), 2_000, "{:?}", flood.statuses);
    // Seq 1 forged (signed with another key), seq 2 genuine: both stored, unverified.
    post(vec![delivery(1, "not-the-key"), delivery(2, NEW_KEY)]);
    add_key(&keys, "8", NEW_KEY);
    let sequences = |verified: bool| -> BTreeSet<String> {
        stored_events(dir, store)
            .iter()
            .filter(|e| e["subscriptionId"] == "8" && e["verified"] == verified)
            .map(|e| e["sequenceNumber"].as_str().expect("seq").to_owned())
            .collect()
    };
    // The listener re-reads the key file at most every few hundred ms: genuine
    // deliveries until one is verified on arrival (the earlier ones are re-verified).
    let mut last = 2;
    let deadline = Instant::now() + Duration::from_secs(60);
    while !sequences(true).contains(&last.to_string()) {
        assert!(Instant::now() < deadline, "the new key was never used");
        last += 1;
        post(vec![delivery(last, NEW_KEY)]);
        std::thread::sleep(Duration::from_millis(100));
    }
    let genuine: BTreeSet<String> = (2..=last).map(|s| s.to_string()).collect();
    let handed_lines = || -> BTreeSet<String> {
        std::fs::read_to_string(&handed)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    wait_for("the genuine deliveries verified and handed off", 60, || {
        sequences(true).is_superset(&genuine) && handed_lines().len() >= genuine.len()
    });
    // Stopped, so nothing more can be handed off: the forged one never was.
    listener.stop();
    assert_eq!(sequences(true), genuine, "only the genuine ones verified");
    assert_eq!(sequences(false), BTreeSet::from(["1".to_owned()]));
    assert_eq!(
        handed_lines(),
        genuine
            .iter()
            .map(|s| format!("8 {s}"))
            .collect::<BTreeSet<_>>()
    );
}

bctest!(
    a_forged_delivery_before_the_key_is_never_verified_on_sqlite,
    |dir: Dir, _cmd: TestCommand| {
        let store = dir.join("state/events.sqlite3");
        forged_before_the_key_is_never_verified(&dir, store.to_str().expect("utf-8"));
    }
);

bctest!(
    a_forged_delivery_before_the_key_is_never_verified_on_postgres,
    |dir: Dir, _cmd: TestCommand| {
        let pg = crate::util::Postgres::start();
        forged_before_the_key_is_never_verified(&dir, &pg.url());
    }
);

bctest!(
    the_postgres_store_never_commits_with_synchronous_commit_off,
    |_dir: Dir, _cmd: TestCommand| {
        let pg = crate::util::Postgres::start();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            use bridgectl_webhook::store::postgres::PgStore;
            // The server's default, then a connection string that turns it off: the
            // store's connections still flush the WAL before a commit returns.
            let plain = PgStore::open(&pg.url(), Default::default())
                .await
                .expect("open");
            assert_eq!(plain.synchronous_commit().await.expect("show"), "on");
            let off = format!("{}?options=-c%20synchronous_commit%3Doff", pg.url());
            let store = PgStore::open(&off, Default::default()).await.expect("open");
            assert_eq!(store.synchronous_commit().await.expect("show"), "on");
        });
    }
);

/// The one key a line of `webhook listen --json` is wrapped in (`listening`, `delivery`,
/// `stopped`): every line reads the same way, one object under one key.
fn one_key(line: &Value) -> &str {
    match line.as_object() {
        Some(o) if o.len() == 1 => o.keys().next().map_or("", String::as_str),
        _ => panic!("not one object under one key: {line}"),
    }
}
