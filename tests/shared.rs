//! Several signer hosts on one journal in PostgreSQL (`BRIDGECTL_STATE_URL`): each host
//! a process with its own XDG dirs and its own copy of the keystore, the journal a real
//! PostgreSQL server (the pinned one) on 127.0.0.1, started and stopped by the test.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, U256};
use serde_json::Value;

use crate::batch::{assert_each_item_redeemed_once, parse_results, payers, redeem_items};
use crate::live::Live;
use crate::util::{KillOnDrop, Postgres, TestCommand};

/// A signer host of the test: its label, and its own state, data (a copy of the test's
/// keystore) and cache dirs.
struct Host {
    label: &'static str,
    url: String,
    /// Whether the shared store is named by the host's own profile (`state_url`) rather
    /// than `BRIDGECTL_STATE_URL`.
    in_profile: bool,
}

impl Host {
    /// Host `label` over the test's keystore as it is now (copied).
    fn new(live: &Live, pg: &Postgres, label: &'static str) -> Host {
        let home = live.dir.join(format!("host-{label}"));
        std::fs::create_dir_all(&home).expect("host dir");
        let keystore = home.join("keystore");
        let st = std::process::Command::new("cp")
            .arg("-a")
            .arg(live.dir.keystore())
            .arg(&keystore)
            .status()
            .expect("cp");
        assert!(st.success(), "copying the keystore");
        Host {
            label,
            url: pg.url(),
            in_profile: false,
        }
    }

    /// [`Host::new`], with a config of its own (the test's, as it is now) whose profile
    /// names the shared store: `state_url`, no environment variable.
    fn configured(live: &Live, pg: &Postgres, label: &'static str) -> Host {
        let host = Host {
            in_profile: true,
            ..Host::new(live, pg, label)
        };
        let config = std::fs::read_to_string(live.dir.join("xdg/config/bridgectl/config.toml"))
            .expect("the test's config");
        let header = "[profiles.default]\n";
        assert!(config.contains(header), "{config}");
        let own = config.replacen(
            header,
            &format!("{header}state_url = \"{}\"\n", host.url),
            1,
        );
        let dir = live.dir.join(format!("host-{label}/config/bridgectl"));
        std::fs::create_dir_all(&dir).expect("config dir");
        std::fs::write(dir.join("config.toml"), own).expect("config");
        host
    }

    /// A command of this host: the shared journal, its own keystore copy and XDG dirs.
    fn cmd(&self, live: &Live) -> TestCommand {
        let home = live.dir.join(format!("host-{}", self.label));
        let mut c = live.cmd();
        c.cmd.env_remove("BRIDGECTL_JOURNAL");
        if self.in_profile {
            c.cmd.env("XDG_CONFIG_HOME", home.join("config"));
        } else {
            c.cmd.env("BRIDGECTL_STATE_URL", &self.url);
        }
        c.cmd
            .env("BRIDGECTL_HOST", self.label)
            .env("BRIDGECTL_KEYSTORE", home.join("keystore"))
            .env("XDG_STATE_HOME", home.join("state"))
            .env("XDG_DATA_HOME", home.join("data"));
        c
    }

    fn spawn(&self, live: &Live, args: &[&str]) -> KillOnDrop {
        let mut c = self.cmd(live);
        c.args(args);
        c.cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        KillOnDrop::spawn(&mut c.cmd)
    }

    fn json(&self, live: &Live, args: &[&str]) -> Value {
        let mut c = self.cmd(live);
        c.args(["--json"]).args(args);
        live.ok_cmd(c)
    }
}

/// Every flow of the shared journal that signed: `(sender, nonce)` of each, as `history`
/// lists them.
fn signed_nonces(live: &Live, host: &Host) -> Vec<(String, String)> {
    let flows = host.json(live, &["history", "--limit", "10000"]);
    flows
        .as_array()
        .expect("flows")
        .iter()
        .filter(|f| f["txHash"].is_string())
        .map(|f| {
            (
                f["from"].as_str().unwrap_or_default().to_lowercase(),
                f["nonce"].to_string(),
            )
        })
        .collect()
}

/// Two hosts given the same payout file (200 items) at once: one batch, each item on
/// chain once, and each host says what it did (one ran it, the other ran it too or was
/// told it runs elsewhere, exit 11). Then both redeem from one key at once: each redeem a nonce of its
/// own, none signed twice (the shared journal's signed nonces are distinct and the chain
/// has exactly the redeems that succeeded). A host refused because the other holds the
/// nonce it was handed (exit 3, the holder named) tries again.
#[test]
fn two_hosts_on_one_postgres_journal_pay_each_item_once_and_sign_each_nonce_once() {
    let pg = Postgres::start();
    let mut live = Live::shared("shared_hosts");
    let payers = payers(&mut live, 2);
    let hosts = [Host::new(&live, &pg, "a"), Host::new(&live, &pg, "b")];
    let (text, items) = redeem_items(&payers, 100);
    live.dir.write("payouts.jsonl", &text);

    let children: Vec<_> = hosts
        .iter()
        .map(|h| h.spawn(&live, &["--json", "batch", "run", "payouts.jsonl", "--yes"]))
        .collect();
    let outs: Vec<_> = children
        .into_iter()
        .map(KillOnDrop::wait_with_output)
        .collect();
    for o in &outs {
        live.check_secrets(o);
    }
    let stderr = || {
        outs.iter()
            .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
            .collect::<Vec<_>>()
            .join("\n---\n")
    };
    let mut codes: Vec<Option<i32>> = outs.iter().map(|o| o.status.code()).collect();
    codes.sort();
    assert!(
        codes == [Some(0), Some(0)] || codes == [Some(0), Some(11)],
        "{codes:?}: {}",
        stderr()
    );
    let summaries: Vec<Value> = outs
        .iter()
        .filter(|o| o.status.success())
        .map(|o| parse_results(&o.stdout).1)
        .collect();
    let batch_ids: Vec<&str> = summaries
        .iter()
        .map(|s| s["batchId"].as_str().expect("batch id"))
        .collect();
    assert!(
        batch_ids.windows(2).all(|w| w[0] == w[1]),
        "one batch: {batch_ids:?}"
    );
    let batches = hosts[1].json(&live, &["batch", "status"]);
    assert_eq!(batches.as_array().map(Vec::len), Some(1), "{batches:#}");
    assert_each_item_redeemed_once(&live, &payers, &items);
    // The flows say which host ran them.
    let hosts_of_flows: BTreeMap<String, usize> = hosts[0]
        .json(&live, &["history", "--limit", "1000"])
        .as_array()
        .expect("flows")
        .iter()
        .fold(BTreeMap::new(), |mut m, f| {
            *m.entry(f["host"].as_str().unwrap_or("none").to_owned())
                .or_default() += 1;
            m
        });
    assert!(
        hosts_of_flows.keys().all(|h| h == "a" || h == "b"),
        "{hosts_of_flows:?}"
    );

    // Both hosts redeem from one key at once.
    let sender = payers[0].0;
    let before = crate::batch::redeems_on_chain(&live)
        .into_iter()
        .filter(|(a, _)| *a == sender)
        .count();
    let per_host = 6;
    std::thread::scope(|s| {
        for host in &hosts {
            let live = &live;
            s.spawn(move || {
                let mut done = 0;
                let deadline = Instant::now() + Duration::from_secs(240);
                while done < per_host {
                    assert!(Instant::now() < deadline, "host {} stalled", host.label);
                    let mut c = host.cmd(live);
                    c.args(["--json", "redeem", "--from", "payer0", "--amount", "0.001"])
                        .args(["--yes"]);
                    let out = c.output();
                    live.check_secrets(&out);
                    match out.status.code() {
                        Some(0) => done += 1,
                        // The nonce the platform handed out is another host's: named, and
                        // tried again.
                        Some(3) => {
                            let err = String::from_utf8_lossy(&out.stderr);
                            assert!(err.contains("nonce"), "{err}");
                        }
                        code => panic!(
                            "host {}: exit {code:?}: {}",
                            host.label,
                            String::from_utf8_lossy(&out.stderr)
                        ),
                    }
                }
            });
        }
    });
    let after = crate::batch::redeems_on_chain(&live)
        .into_iter()
        .filter(|(a, _)| *a == sender)
        .count();
    assert_eq!(
        after - before,
        2 * per_host,
        "the chain has each redeem once"
    );
    let signed = signed_nonces(&live, &hosts[0]);
    let mut seen = std::collections::BTreeSet::new();
    for n in &signed {
        assert!(seen.insert(n), "nonce {n:?} signed twice: {signed:?}");
    }
    drop(pg);
}

/// One spending window and one signing log for every host: with 10 ST a day allowed, two
/// hosts asking 8 ST each at once sign exactly one (the other is refused before its
/// passphrase is read, the window's total named), and the log both hosts wrote holds,
/// seen from either. Each host keeps its own checkpoint of it: a host whose signature
/// was deleted from the shared log by hand refuses to sign against it.
#[test]
fn two_hosts_share_one_spending_window_and_one_signing_log() {
    let pg = Postgres::start();
    let live = Live::shared("shared_limit");
    let sym = live.sb.info.side.symbol.clone();
    live.add_to_profile(&format!(
        "\n[profiles.default.policy.limits]\n{} = {{ per = \"24h\", max = \"10\" }}\n",
        sym.to_lowercase()
    ));
    let hosts = [Host::new(&live, &pg, "a"), Host::new(&live, &pg, "b")];
    let dev = live.dev.to_string();
    // Both at once. A host handed the nonce the other reserved or signed is refused for
    // that first (exit 3, the flow named) and asks again, as an operator would; what
    // ends each host is a signature or the window's refusal.
    let outs: Vec<std::process::Output> = std::thread::scope(|s| {
        let runs: Vec<_> = hosts
            .iter()
            .map(|host| {
                let live = &live;
                let dev = &dev;
                s.spawn(move || {
                    let deadline = Instant::now() + Duration::from_secs(120);
                    loop {
                        let mut c = host.cmd(live);
                        c.args(["--json", "redeem", "--from", dev, "--amount", "8", "--yes"]);
                        let out = c.output();
                        live.check_secrets(&out);
                        let err = String::from_utf8_lossy(&out.stderr);
                        // Refused for the nonce (reserved or signed by the other host's
                        // flow, as the journal or the log says), not for the window.
                        let nonce_taken = out.status.code() == Some(3)
                            && !err.contains("spending limit")
                            && err.contains("nonce");
                        if !nonce_taken || Instant::now() > deadline {
                            return out;
                        }
                        std::thread::sleep(Duration::from_millis(200));
                    }
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().expect("host")).collect()
    });
    let mut codes: Vec<Option<i32>> = outs.iter().map(|o| o.status.code()).collect();
    codes.sort();
    let stderr: Vec<String> = outs
        .iter()
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .collect();
    assert_eq!(codes, [Some(0), Some(3)], "exactly one signed: {stderr:#?}");
    let refused = &stderr[outs.iter().position(|o| !o.status.success()).expect("one")];
    assert!(
        refused.contains(&format!(
            "spending limit 10 {sym} per 24h: 8 {sym} signed already"
        )),
        "{refused}"
    );
    // One log, written by both hosts, read by either: the one signature, and it holds.
    for host in &hosts {
        let entries = host.json(&live, &["log", "show"]);
        assert_eq!(entries.as_array().map(Vec::len), Some(1), "{entries:#}");
        assert_eq!(host.json(&live, &["log", "verify"])["ok"], true);
    }
    // 2 more fit the window, from either host.
    let out = hosts[1].json(&live, &["redeem", "--from", &dev, "--amount", "2", "--yes"]);
    assert_eq!(out["status"], "completed", "{out:#}");
    // The newest entry deleted in the database (and the 2 ST with it): the host that
    // signed it keeps a checkpoint the log no longer reaches, and refuses.
    let deleted = pg.execute("DELETE FROM bridgectl_signing_log.entries WHERE seq > 1");
    assert_eq!(deleted, 1, "the second signature's entry");
    let mut c = hosts[1].cmd(&live);
    c.args(["redeem", "--from", &dev, "--amount", "0.001", "--yes"]);
    let out = c.output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("does not reach its checkpoint"), "{err}");
    drop(pg);
}

/// A key moved from one machine's SQLite log to the shared store keeps its guard:
/// `log export --history` on the machine, `log import` on a host of the shared store,
/// and there the nonce the key signed is refused and its spending counts in the window.
#[test]
fn a_history_exported_from_one_machine_and_imported_into_postgres_keeps_its_guard() {
    let pg = Postgres::start();
    let live = Live::shared("shared_history");
    let sym = live.sb.info.side.symbol.clone();
    live.add_to_profile(&format!(
        "\n[profiles.default.policy.limits]\n{} = {{ per = \"24h\", max = \"2\" }}\n",
        sym.to_lowercase()
    ));
    let dev = live.dev.to_string();
    // On the one machine (its own SQLite log): 1.5 of the 2 a day.
    let out = live.ok(&["redeem", "--from", &dev, "--amount", "1.5", "--yes"]);
    assert_eq!(out["status"], "completed", "{out:#}");
    let nonce = out["nonce"].as_u64().expect("nonce");
    let history = live.dir.join("history.json");
    let mut c = live.cmd();
    c.args(["log", "export", "--history", "--key", &dev, "-o"])
        .args([&history]);
    let o = c.output();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // A host of the shared store, with its fresh log: the history taken in.
    let host = Host::new(&live, &pg, "c");
    let imported = host.json(
        &live,
        &[
            "log",
            "import",
            &history.to_string_lossy(),
            "--yes",
            "--key",
            &dev,
        ],
    );
    assert_eq!(imported["acknowledged"], true, "{imported:#}");
    assert!(
        imported["watermarks"]
            .as_array()
            .expect("watermarks")
            .iter()
            .any(|w| w["nonce"].as_u64() == Some(nonce)),
        "{imported:#}"
    );
    // The signed nonce is refused there (a transfer given it by hand).
    let mut c = host.cmd(&live);
    let to = "0x000000000000000000000000000000000000dEaD";
    c.args(["transfer", "--token", "st", "--from", &dev, "--to", to])
        .args(["--amount", "0.1", "--nonce", &nonce.to_string(), "--yes"]);
    let out = c.output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!("signed nonce {nonce} on chain"))
            && err.contains(&format!("its watermark there is nonce {nonce}")),
        "{err}"
    );
    // And the window counts the 1.5 signed on the other machine: 1 more is over 2.
    let mut c = host.cmd(&live);
    c.args(["redeem", "--from", &dev, "--amount", "1", "--yes"]);
    let out = c.output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!(
            "spending limit 2 {sym} per 24h: 1.5 {sym} signed already"
        )),
        "{err}"
    );
    // A history with a key twice (a later "keys" hiding the first) is refused, as is a
    // file that is not a history, before anything is asked.
    let text = std::fs::read_to_string(&history).expect("history");
    let doubled = text.replacen("\"keys\": [", "\"keys\": [], \"keys\": [", 1);
    assert_ne!(doubled, text, "the history names its keys");
    live.dir.write("doubled.json", &doubled);
    let mut c = host.cmd(&live);
    let doubled_path = live.dir.join("doubled.json");
    c.args(["log", "import", &doubled_path.to_string_lossy()])
        .args(["--yes", "--key", &dev]);
    let out = c.output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("not a signing history"), "{err}");
    // A file that is not a history is refused before anything is asked.
    live.dir.write("not-history.json", "{\"keys\": []}");
    let mut c = host.cmd(&live);
    let not_history = live.dir.join("not-history.json");
    c.args(["log", "import", &not_history.to_string_lossy()])
        .args(["--yes", "--key", &dev]);
    let out = c.output();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(pg);
}

/// A machine with history moves to the shared store: `state migrate` copies its journal
/// and its signing log (the same entries, the same chain), `log verify` holds there, and
/// the nonces it signed stay signed for every host. Run again once a host signed there,
/// it is refused: the shared log holds another history of the key.
#[test]
fn a_machine_migrated_into_postgres_keeps_its_log_and_its_signed_nonces() {
    let pg = Postgres::start();
    let live = Live::shared("shared_migrate");
    let dev = live.dev.to_string();
    let mut nonces = Vec::new();
    for _ in 0..2 {
        let out = live.ok(&["redeem", "--from", &dev, "--amount", "0.01", "--yes"]);
        assert_eq!(out["status"], "completed", "{out:#}");
        nonces.push(out["nonce"].as_u64().expect("nonce"));
    }
    let before = live.ok(&["log", "verify"]);
    let migrated = live.ok(&["state", "migrate", "--to", &pg.url()]);
    crate::json::assert_schema("state-migrate", &migrated);
    assert_eq!(migrated["journal"]["flows"], 2, "{migrated:#}");
    assert_eq!(migrated["signingLog"]["entries"], 2, "{migrated:#}");

    // A host of the shared store (its keystore a copy of this machine's), named by its
    // profile's state_url.
    let host = Host::configured(&live, &pg, "m");
    let verified = host.json(&live, &["log", "verify"]);
    assert_eq!(verified["ok"], true, "{verified:#}");
    assert_eq!(
        verified["checkpoint"], before["checkpoint"],
        "the same chain"
    );
    let flows = host.json(&live, &["history"]);
    assert_eq!(flows.as_array().map(Vec::len), Some(2), "{flows:#}");
    // A nonce signed on the machine is refused on the shared store.
    let mut c = host.cmd(&live);
    let to = "0x000000000000000000000000000000000000dEaD";
    c.args(["transfer", "--token", "st", "--from", &dev, "--to", to])
        .args([
            "--amount",
            "0.01",
            "--nonce",
            &nonces[0].to_string(),
            "--yes",
        ]);
    let out = c.output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains(&format!("nonce {}", nonces[0])), "{err}");
    // And a redeem there signs the key's next nonce, after the machine's.
    let out = host.json(
        &live,
        &["redeem", "--from", &dev, "--amount", "0.01", "--yes"],
    );
    assert_eq!(out["status"], "completed", "{out:#}");
    assert!(
        out["nonce"].as_u64() > nonces.iter().max().copied(),
        "{out:#}"
    );

    let flows_before = host.json(&live, &["history"]);
    // Again: the shared log now holds the host's signature, another history of the
    // key: refused, naming it; nothing changed there.
    let mut c = live.cmd();
    c.args(["state", "migrate", "--to", &pg.url()]);
    let out = c.output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("holds entries of its own") && err.contains(&dev),
        "{err}"
    );
    assert_eq!(host.json(&live, &["history"]), flows_before);
    drop(pg);
}

/// A host killed mid-batch: its claim on the batch holds for its lease (another host's
/// `batch resume` meanwhile exits 11 and names the host), then the other host takes the
/// batch over and finishes it, each item on chain once. The shared journal stopped
/// under a run: the command fails closed (exit 12, the store named, its password not
/// shown), and once it is back `batch resume` finishes, nothing twice.
#[test]
fn a_batch_outlives_its_host_and_its_store_going_away() {
    let mut pg = Postgres::start();
    let mut live = Live::shared("shared_takeover");
    let payers = payers(&mut live, 1);
    let hosts = [Host::new(&live, &pg, "a"), Host::new(&live, &pg, "b")];
    let (text, items) = redeem_items(&payers, 16);
    live.dir.write("payouts.jsonl", &text);

    let mut a = hosts[0].cmd(&live);
    a.env("BRIDGECTL_BATCH_LEASE", "4s")
        .args(["--json", "batch", "run", "payouts.jsonl", "--yes"]);
    a.cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = KillOnDrop::spawn(&mut a.cmd);
    // Killed once a few items are on chain.
    let deadline = Instant::now() + Duration::from_secs(120);
    let batch_id = loop {
        assert!(Instant::now() < deadline, "the batch never got going");
        std::thread::sleep(Duration::from_millis(100));
        let mut c = hosts[1].cmd(&live);
        c.args(["--json", "batch", "status"]);
        let out = c.output();
        let Ok(list) = serde_json::from_slice::<Value>(&out.stdout) else {
            continue;
        };
        let Some(batch) = list.as_array().and_then(|l| l.first()).cloned() else {
            continue;
        };
        let id = batch["batchId"].as_str().expect("id").to_owned();
        let status = hosts[1].json(&live, &["batch", "status", &id]);
        if status["completed"].as_u64().unwrap_or(0) >= 3 {
            break id;
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    // Within its lease the dead host's claim holds.
    let mut c = hosts[1].cmd(&live);
    c.args(["batch", "resume", &batch_id, "--yes"]);
    let err = c.fails_with(11);
    assert!(err.contains("host a"), "{err}");
    std::thread::sleep(Duration::from_secs(5));

    // Host b takes over; the store goes away under it once it has started.
    let mut b = hosts[1].cmd(&live);
    b.args(["--json", "batch", "resume", &batch_id, "--yes"]);
    b.cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let resumed = KillOnDrop::spawn(&mut b.cmd);
    std::thread::sleep(Duration::from_millis(300));
    pg.stop();
    let out = resumed.wait_with_output();
    live.check_secrets(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    // It may have finished before the store went: then there is nothing left to see.
    if !out.status.success() {
        assert_eq!(out.status.code(), Some(12), "{err}");
        assert!(err.contains("postgres://postgres@127.0.0.1"), "{err}");
    }
    let mut c = hosts[1].cmd(&live);
    c.args(["redeem", "--from", "payer0", "--amount", "0.001", "--yes"]);
    let err = c.fails_with(12);
    assert!(err.contains("cannot be reached"), "{err}");
    let submitted = live.submitted().len();
    pg.restart();
    assert_eq!(live.submitted().len(), submitted, "nothing sent meanwhile");

    let mut c = hosts[1].cmd(&live);
    c.args(["--json", "batch", "resume", &batch_id, "--yes"]);
    let out = live.run_ok(c);
    let (_, summary) = parse_results(&out.stdout);
    assert_eq!(summary["failed"], serde_json::json!(0), "{summary:#}");
    assert_each_item_redeemed_once(&live, &payers, &items);
    let _: Vec<(Address, U256)> = items;
}

/// A host paused past its lease (SIGSTOP) while it runs a batch: another host takes the
/// batch over (the next fencing token) and finishes it; woken up, the paused host writes
/// nothing more for it (its next write is refused: exit 11, the batch named), and each
/// item is on chain once.
#[test]
fn a_host_paused_past_its_lease_writes_nothing_after_another_took_over() {
    let pg = Postgres::start();
    let mut live = Live::shared("shared_fenced");
    let payers = payers(&mut live, 1);
    let hosts = [Host::new(&live, &pg, "a"), Host::new(&live, &pg, "b")];
    let (text, items) = redeem_items(&payers, 24);
    live.dir.write("payouts.jsonl", &text);

    let mut a = hosts[0].cmd(&live);
    a.env("BRIDGECTL_BATCH_LEASE", "3s")
        .args(["--json", "batch", "run", "payouts.jsonl", "--yes"]);
    a.cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let paused = KillOnDrop::spawn(&mut a.cmd);
    let pid = paused.id().to_string();
    let deadline = Instant::now() + Duration::from_secs(120);
    let batch_id = loop {
        assert!(Instant::now() < deadline, "the batch never got going");
        std::thread::sleep(Duration::from_millis(50));
        let list = hosts[1].json(&live, &["batch", "status"]);
        let Some(id) = list[0]["batchId"].as_str().map(str::to_owned) else {
            continue;
        };
        if hosts[1].json(&live, &["batch", "status", &id])["completed"]
            .as_u64()
            .unwrap_or(0)
            >= 2
        {
            break id;
        }
    };
    let signal = |sig: &str| {
        let st = std::process::Command::new("kill")
            .args([sig, &pid])
            .status()
            .expect("kill");
        assert!(st.success(), "kill {sig}");
    };
    signal("-STOP");
    std::thread::sleep(Duration::from_secs(4));
    let mut c = hosts[1].cmd(&live);
    c.args(["--json", "batch", "resume", &batch_id, "--yes"]);
    let out = live.run_ok(c);
    let (_, summary) = parse_results(&out.stdout);
    assert_eq!(summary["completed"], serde_json::json!(24), "{summary:#}");
    signal("-CONT");
    let out = paused.wait_with_output();
    live.check_secrets(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    // Woken, it had nothing left to write (its items all ended under the other host),
    // or was refused at its next write (exit 11, the other run named), or, paused inside
    // a write transaction, found that the server had ended its session (exit 12: that
    // transaction's writes are gone, and the others did not wait for it).
    match out.status.code() {
        Some(0) => {}
        Some(11) => assert!(err.contains("was taken over by run b/"), "{err}"),
        Some(12) => assert!(err.contains("cannot be reached"), "{err}"),
        code => panic!(
            "exit {code:?}: {err}\nitems:\n{}",
            String::from_utf8_lossy(&out.stdout)
        ),
    }
    assert_each_item_redeemed_once(&live, &payers, &items);
}
