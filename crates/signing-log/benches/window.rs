//! What one signature under a spending limit costs against the entries in its window
//! (issue 53): the window read from the running totals the key's entries carry
//! (`running`), against the same log written without them, as entries were before the
//! totals were kept (`entry by entry`: every entry of the window checked and added up).
//!
//! Each log is one key's redeems of 1 ST, all inside one 24-hour window, built by the
//! library in one SQLite transaction (building is not what is measured). One signature
//! is what `bridgectl sign` does with a limit: the window read before approval
//! (`read_spent`), the verification, and `sign_and_log` (the window read again under
//! the append's lock, the entry, its fsync, the kept checkpoint). Each is timed with the
//! log opened afresh (`process`: as each `bridgectl sign` opens it, no entry checked
//! yet) and held open (`wallet`: an entry's signature is checked once per process).
//!
//! `cargo bench -p bridgectl-signing-log --bench window` prints a table of medians;
//! `WINDOW_SIZES=8,1000` picks the sizes (default `8,1000,100000`), `BENCH_DIR` the file
//! system (default: the temp dir). The numbers are reported, never asserted.

#![allow(missing_docs, clippy::print_stdout)]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bridgectl_signing_log::SigningLogDb;
use bridgectl_tx::local_signing::make_entry;
use bridgectl_tx::request::Token;
use bridgectl_tx::signing_log::{Checkpoint, EntryBody, Head, seal_entry};
use bridgectl_tx::{Policy, limits, sign_and_log, sign_legacy, verify};
use common::{CHAIN, ST, key, redeem, verified, written};

const T0: u64 = 1_800_000_000;

/// ST on the test chain, at most a trillion ST a day: a limit every signature reads its
/// window for, and none reaches.
fn policy() -> Policy {
    let mut p: Policy = toml::from_str(
        "max-gas-price = 1000000000\n[limits]\nst = { per = \"24h\", max = \"1000000000000\" }\n",
    )
    .expect("policy toml");
    p.trusted.contract(
        ST,
        CHAIN,
        Some(Token {
            symbol: "ST".into(),
            decimals: 18,
        }),
    );
    p
}

/// Two logs of `n` entries each, one with the running totals and one without, in
/// `dir`: entry `i` is the redeem at nonce `i`, signed at `T0 + i / 4` (a hundred
/// thousand fit in seven hours). Returns their paths.
fn logs_of(dir: &Path, n: u64) -> (PathBuf, PathBuf) {
    let signer = key();
    let (mut running, mut bare) = (Vec::new(), Vec::new());
    let (mut head, mut bare_head) = (Head::EMPTY, Checkpoint::EMPTY);
    for i in 0..n {
        let v = verified(i);
        let signed = sign_legacy(&v, &signer).expect("sign");
        let time = T0 + i / 4;
        let e = make_entry(head.clone(), &v, &signed, time, &signer).expect("entry");
        let b: EntryBody = serde_json::from_str(&e.body).expect("body");
        head = Head {
            checkpoint: Checkpoint {
                count: e.seq,
                head: e.hash,
            },
            time,
            running: b.running.clone(),
        };
        running.push(e);
        // The same signature as an entry written before the totals were kept.
        let old = make_entry(
            Head {
                checkpoint: bare_head,
                time,
                running: None,
            },
            &v,
            &signed,
            time,
            &signer,
        )
        .expect("entry");
        let mut b: EntryBody = serde_json::from_str(&old.body).expect("body");
        b.running = None;
        let e = seal_entry(&b, &signer).expect("seal");
        bare_head = Checkpoint {
            count: e.seq,
            head: e.hash,
        };
        bare.push(e);
    }
    let paths = (dir.join("running.sqlite3"), dir.join("bare.sqlite3"));
    written(&paths.0, &running);
    written(&paths.1, &bare);
    paths
}

/// One signature as `bridgectl sign` makes it under the limit: the window read, the
/// verification, the signature and its entry.
fn sign_once(log: &SigningLogDb, policy: &Policy, nonce: u64, now: u64) {
    let tx = redeem(nonce);
    let spent = limits::read_spent(policy, &tx, None, log, now).expect("window read");
    let context = bridgectl_tx::Context {
        signer: tx.from,
        gas_price_quote: None,
        nonce: bridgectl_tx::Nonce::Next(bridgectl_tx::NonceFacts {
            fixed: Some(nonce),
            ..Default::default()
        }),
        spent,
    };
    let v = verify(&tx, None, policy, &context).expect("within the limit");
    sign_and_log(&v, &key(), log, now).expect("sign and log");
}

/// The median of `runs` signatures against the log at `path`, whose entries end at
/// nonce `n`: each with the log opened afresh, as each `bridgectl sign` process opens it
/// (nothing checked yet), or (`warm`) all with one log, as a long-running wallet holds
/// it (entries checked before skip their signature).
fn median(path: &Path, policy: &Policy, n: u64, runs: u64, warm: bool) -> Duration {
    let now = T0 + n / 4 + 60;
    let held = SigningLogDb::open(path).expect("open");
    let mut times: Vec<Duration> = (0..runs)
        .map(|i| {
            let nonce = n + i + if warm { runs } else { 0 };
            let start = Instant::now();
            if warm {
                sign_once(&held, policy, nonce, now);
            } else {
                sign_once(&SigningLogDb::open(path).expect("open"), policy, nonce, now);
            }
            start.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this once, small.
    let quick = !std::env::args().any(|a| a == "--bench");
    let sizes: Vec<u64> = match std::env::var("WINDOW_SIZES") {
        Ok(s) => s
            .split(',')
            .map(|n| n.trim().parse().expect("WINDOW_SIZES: numbers"))
            .collect(),
        Err(_) if quick => vec![8],
        Err(_) => vec![8, 1_000, 100_000],
    };
    let policy = policy();
    println!("one signature under a 24h limit against n entries in its window, median ms:");
    println!("the log opened afresh (process) or held open (wallet: signatures checked once)");
    println!(
        "{:>8} {:>10} {:>10} {:>16} {:>16} {:>8}",
        "n", "running", "running", "entry by entry", "entry by entry", "build"
    );
    println!(
        "{:>8} {:>10} {:>10} {:>16} {:>16} {:>8}",
        "", "process", "wallet", "process", "wallet", "s"
    );
    for n in sizes {
        let dir = match std::env::var_os("BENCH_DIR") {
            Some(d) => tempfile::tempdir_in(d).expect("temp dir in BENCH_DIR"),
            None => tempfile::tempdir().expect("temp dir"),
        };
        let built = Instant::now();
        let (running, bare) = logs_of(dir.path(), n);
        let built = built.elapsed();
        let runs = if quick { 1 } else { 21 };
        // Entry by entry costs about 80 us an entry: fewer runs where that is seconds.
        let bare_runs = if n > 10_000 { 3.min(runs) } else { runs };
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let process = median(&running, &policy, n, runs, false);
        let wallet = median(&running, &policy, n, runs, true);
        let old = median(&bare, &policy, n, bare_runs, false);
        let old_wallet = median(&bare, &policy, n, bare_runs, true);
        println!(
            "{n:>8} {:>10.2} {:>10.2} {:>16.2} {:>16.2} {:>8.1}",
            ms(process),
            ms(wallet),
            ms(old),
            ms(old_wallet),
            built.as_secs_f64()
        );
    }
}
