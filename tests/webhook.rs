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
use secrecy::SecretString;
use serde_json::Value;

use crate::util::{Dir, TestCommand};

const KEY: &str = "load-test-signing-key";
const PATH: &str = "/hooks/t0ps3cret";

fn write_keys(dir: &Dir) -> PathBuf {
    let path = dir.join("state/keys.json");
    KeyFile::new(&path)
        .insert(
            "41",
            &KeyEntry::new(
                SigningKey::new(SecretString::from(KEY.to_owned())),
                "ethereum",
                "sepolia",
            ),
        )
        .expect("write keys");
    path
}

/// A running `bridgectl webhook listen`.
struct Listening {
    child: Child,
    stdout: BufReader<ChildStdout>,
    addr: SocketAddr,
}

impl Listening {
    fn start(dir: &Dir, bind: &str, store: &Path, keys: &Path, extra: &[&str]) -> Listening {
        let mut cmd = dir.command();
        cmd.args([
            "--json", "webhook", "listen", "--bind", bind, "--path", PATH,
        ])
        .args(["--store".as_ref(), store.as_os_str()])
        .args(["--keys".as_ref(), keys.as_os_str()])
        .args(extra);
        cmd.cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
        let mut child = cmd.cmd.spawn().expect("spawn listener");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("first line");
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("listener's first line is not json ({e}): {line:?}"));
        let addr = v["addr"]
            .as_str()
            .expect("addr")
            .parse()
            .expect("socket addr");
        Listening {
            child,
            stdout,
            addr,
        }
    }

    /// SIGTERM, then the summary line.
    fn stop(mut self) -> Value {
        let pid = self.child.id().to_string();
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill -TERM");
        assert!(status.success());
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("summary");
        let exit = self.child.wait().expect("wait");
        assert!(exit.success(), "listener exited with {exit}");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("summary not json ({e}): {line:?}"))
    }

    fn kill9(mut self) {
        self.child.kill().expect("kill -9");
        let _ = self.child.wait();
    }
}

fn signed(i: usize) -> (Vec<u8>, Option<String>) {
    let body = block_period_delivery("41", i as u64 + 1);
    let sig = sign(KEY.as_bytes(), &body);
    (body, Some(sig))
}

fn stored_events(dir: &Dir, store: &Path) -> Vec<Value> {
    let mut cmd = dir.command();
    cmd.args(["--json", "webhook", "events", "--limit", "100000"])
        .args(["--store".as_ref(), store.as_os_str()]);
    match cmd.json() {
        Value::Array(v) => v,
        other => panic!("events --json is not an array: {other}"),
    }
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
    listen_stores_10000_posts_from_64_connections,
    |dir: Dir, _cmd: TestCommand| {
        let keys = write_keys(&dir);
        let store = dir.join("events.sqlite");
        let listener = Listening::start(&dir, "127.0.0.1:0", &store, &keys, &[]);
        let report = load::run(&spec(listener.addr, 10_000), &signed, None).expect("load");
        let summary = listener.stop();

        assert_eq!(report.io_errors, 0);
        assert_eq!(
            report.statuses,
            BTreeMap::from([(200, 10_000)]),
            "every request acknowledged 200"
        );
        assert_eq!(summary["stopped"]["stored"], 10_000, "{summary}");
        let events = stored_events(&dir, &store);
        assert_eq!(events.len(), 10_000);
        let distinct: BTreeSet<(String, String)> = events
            .iter()
            .map(|e| {
                (
                    e["subscriptionId"].as_str().expect("sub").to_owned(),
                    e["sequenceNumber"].as_str().expect("seq").to_owned(),
                )
            })
            .collect();
        assert_eq!(distinct.len(), 10_000);
        assert!(events.iter().all(|e| e["verified"] == true));
        let want: BTreeSet<(String, String)> = (1..=10_000)
            .map(|i| ("41".to_owned(), i.to_string()))
            .collect();
        assert_eq!(distinct, want);
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
        let addr = listener.addr;
        let progress = Progress::default();
        let report = std::thread::scope(|s| {
            let load = s.spawn(|| load::run(&spec(addr, 10_000), &signed, Some(&progress)));
            let deadline = Instant::now() + Duration::from_secs(120);
            while progress.ok.load(Ordering::Relaxed) < 3_000 {
                assert!(Instant::now() < deadline, "load made no progress");
                std::thread::sleep(Duration::from_millis(2));
            }
            listener.kill9();
            load.join().expect("load thread").expect("load")
        });
        let acked: Vec<usize> = (0..report.requests).filter(|&i| report.acked[i]).collect();
        assert!(acked.len() >= 3_000, "only {} acked", acked.len());
        assert!(
            acked.len() < 10_000,
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

        // The platform retries what was not acknowledged: afterwards all 10,000 are there once.
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
        assert_eq!(stored_events(&dir, &store).len(), 10_000);
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
        .filter(|e| e["subscriptionId"] == sub)
        .map(|e| {
            assert_eq!(e["verified"], true, "unverified delivery: {e}");
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

bctest!(
    block_period_webhooks_against_the_sandbox,
    |dir: Dir, _cmd: TestCommand| {
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
        config.webhooks.retry_max_ms = 400;
        config.webhooks.remove_after_failures = 1_000;
        let sandbox = rt
            .block_on(bridgectl_sandbox::Sandbox::start(config))
            .expect("sandbox starts");
        let info = sandbox.info().clone();

        let keys = dir.join("state/keys.json");
        let store = dir.join("events.sqlite");
        let listener = Listening::start(&dir, "127.0.0.1:0", &store, &keys, &[]);
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
        let mut c = dir.command();
        c.args([
            "--json",
            "webhook",
            "create",
            "--type",
            "BLOCK_PERIOD",
            "--period",
            "1",
        ])
        .args(["--url", &hook_url, "--description", "every block"]);
        web3(&mut c);
        with_token(&mut c);
        let one = c.json();
        let sub1 = one["subscriptionId"].as_str().expect("id").to_owned();
        assert!(one.get("signingKey").is_none() && !one.to_string().contains("signingKey\""));
        assert_eq!(one["network"], "SEPOLIA");
        let mut c = dir.command();
        c.args([
            "--json",
            "webhook",
            "create",
            "--type",
            "BLOCK_PERIOD",
            "--period",
            "2",
        ])
        .args(["--url", &hook_url])
        .env("BRIDGECTL_WEB3_NODE_ID", "node-1")
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
        std::thread::sleep(Duration::from_millis(1200));
        let paused = deliveries(&dir, &store, &sub1).len();

        // delete stops sub2 and removes its key.
        let mut c = dir.command();
        c.args(["--json", "webhook", "delete", &sub2]);
        web3(&mut c);
        with_token(&mut c);
        assert_eq!(c.json()["signingKeyRemoved"], true);
        std::thread::sleep(Duration::from_millis(1200));
        let deleted = deliveries(&dir, &store, &sub2).len();
        let mut c = dir.command();
        c.args(["webhook", "get", &sub2]);
        web3(&mut c);
        with_token(&mut c);
        c.fails_with(6);
        std::thread::sleep(Duration::from_secs(3));
        assert_eq!(
            deliveries(&dir, &store, &sub1).len(),
            paused,
            "inactive webhook delivered"
        );
        assert_eq!(
            deliveries(&dir, &store, &sub2).len(),
            deleted,
            "deleted webhook delivered"
        );

        // A listener that was down gets the retried deliveries after it restarts.
        let mut c = dir.command();
        c.args([
            "--json",
            "webhook",
            "create",
            "--type",
            "BLOCK_PERIOD",
            "--period",
            "1",
        ])
        .args(["--url", &hook_url]);
        web3(&mut c);
        with_token(&mut c);
        let sub3 = c.json()["subscriptionId"].as_str().expect("id").to_owned();
        wait_for("first deliveries of the third webhook", 30, || {
            deliveries(&dir, &store, &sub3).len() >= 2
        });
        let bind = listener.addr.to_string();
        listener.kill9();
        let before = deliveries(&dir, &store, &sub3).len();
        std::thread::sleep(Duration::from_secs(3)); // about six blocks while down
        let listener = Listening::start(&dir, &bind, &store, &keys, &[]);
        wait_for("retried deliveries after the restart", 60, || {
            deliveries(&dir, &store, &sub3).len() >= before + 6
        });
        let d = deliveries(&dir, &store, &sub3);
        for pair in d.windows(2) {
            assert_eq!(pair[1].0, pair[0].0 + 1, "a delivery was lost: {d:?}");
            assert_eq!(pair[1].1, pair[0].1 + 1, "a block was skipped: {d:?}");
        }
        listener.stop();
        rt.block_on(sandbox.shutdown()).expect("sandbox stops");
    }
);
