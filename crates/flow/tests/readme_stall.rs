//! The README's example (`examples/redeem.rs`, compiled in here as a module) keeps a
//! wallet's runtime serving while it signs: on a current-thread runtime, a task ticking
//! every 2 ms is held up far less during its whole redeem than by the blocking unlock the
//! README used to show, with the key made at the default KDF cost (`unlock_async` runs
//! the derivation on a thread of its own). The sandbox runs on a runtime of its own, so
//! only the wallet's work is on the ticker's. `bench/readme-stall.sh` reports the
//! longest stall over many runs, against a baseline build.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bridgectl_keystore::{KdfParams, Keystore, Passphrase, SecretText};
use bridgectl_sandbox::{Sandbox, SandboxConfig};

#[path = "../examples/redeem.rs"]
#[allow(dead_code)] // its `main` is the example's; the test calls `redeem`
mod readme;

mod common;

const TICK: Duration = Duration::from_millis(2);

#[test]
fn the_readme_example_stalls_a_current_thread_runtime_less_than_20_ms_per_signature() {
    let platform = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("the sandbox's runtime");
    let sandbox = platform
        .block_on(Sandbox::start(SandboxConfig::default()))
        .expect("sandbox");
    let info = sandbox.info().clone();
    let dir = tempfile::tempdir().expect("tmp");
    let keystore = Keystore::open(dir.path().join("keystore")).expect("keystore");
    keystore
        .import_raw(
            &SecretText::new(info.dev.private_key.expose_secret().to_owned()),
            Some("wallet"),
            &mut Passphrase::new("a passphrase"),
            &KdfParams::default(),
        )
        .expect("import at the default cost");
    std::fs::write(dir.path().join("passphrase"), "a passphrase\n").expect("write");
    // The files exist before the wallet starts, as they do in a wallet that ran before.
    let journal = dir.path().join("journal.sqlite3");
    drop(bridgectl_flow::Journal::open(&journal).expect("journal"));
    drop(common::signing_log(&keystore));
    let path = |p: std::path::PathBuf| p.to_string_lossy().into_owned();
    let settings = HashMap::from([
        ("PROFILE", path(common::profile_file(dir.path(), &info))),
        ("PLATFORM_TOKEN", info.token.expose_secret().to_owned()),
        ("KEYSTORE", path(dir.path().join("keystore"))),
        ("FROM", "wallet".to_owned()),
        ("PASSPHRASE_FILE", path(dir.path().join("passphrase"))),
        ("JOURNAL", path(journal)),
        ("AMOUNT", "1".to_owned()),
    ]);
    let env = |name: &str| {
        settings
            .get(name)
            .cloned()
            .ok_or_else(|| format!("set {name}"))
    };

    let wallet = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("the wallet's runtime");
    let (outcome, stall, ticks) = longest_stall(&wallet, readme::redeem(&env));
    // The same key unlocked as the README did before (`Keystore::unlock` in the
    // approver): the runtime waits for the whole key derivation.
    let (_, blocking, _) = longest_stall(&wallet, async {
        keystore.unlock("wallet", &mut Passphrase::new("a passphrase"))
    });
    platform.block_on(sandbox.shutdown()).expect("shutdown");
    let outcome = outcome
        .map_err(|e| e.to_string())
        .expect("the README's redeem");
    assert!(outcome.ends_with(" completed"), "{outcome}");
    report(stall, blocking, ticks);
    assert!(ticks > 100, "the ticker ran {ticks} times");
    // One signature. On an idle machine its stall is under 20 ms (the journal's and the
    // signing log's fsyncs are what is left on the runtime); a loaded one stretches
    // every gap, the blocking unlock's too, so the bound is the blocking unlock's.
    assert!(
        stall * 2 < blocking,
        "the README's redeem stalled the runtime {stall:?}, a blocking unlock {blocking:?}"
    );
}

/// What bench/readme-stall.sh reads (shown with `--nocapture`).
#[allow(clippy::print_stderr)]
fn report(stall: Duration, blocking: Duration, ticks: u64) {
    eprintln!(
        "readme-stall: redeem {:.3} ms, blocking unlock {:.3} ms, {ticks} ticks",
        stall.as_secs_f64() * 1e3,
        blocking.as_secs_f64() * 1e3
    );
}

/// Runs `work` on `runtime` beside a task ticking every [`TICK`]: its outcome, the
/// longest the ticker was held up beyond its tick, and how often it ticked.
fn longest_stall<T>(
    runtime: &tokio::runtime::Runtime,
    work: impl std::future::Future<Output = T>,
) -> (T, Duration, u64) {
    let seen = Arc::new(Mutex::new((Duration::ZERO, 0u64)));
    let out = runtime.block_on(async {
        let ticks = seen.clone();
        let ticker = tokio::spawn(async move {
            let mut last = Instant::now();
            loop {
                tokio::time::sleep(TICK).await;
                let mut seen = ticks.lock().expect("lock");
                seen.0 = seen.0.max(last.elapsed().saturating_sub(TICK));
                seen.1 += 1;
                last = Instant::now();
            }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let out = work.await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        ticker.abort();
        out
    });
    let (stall, ticks) = *seen.lock().expect("lock");
    (out, stall, ticks)
}
