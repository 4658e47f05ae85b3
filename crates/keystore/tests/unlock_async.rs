//! `Keystore::unlock_async` keeps the key derivation off the caller's runtime: on a
//! current-thread runtime, a ticker keeps ticking while a key made at the default KDF
//! cost (most of a second) is unlocked. The blocking `unlock` called there instead
//! would stall it for the whole derivation.

use std::time::{Duration, Instant};

use bridgectl_keystore::{KdfParams, Keystore, Passphrase, SecretText};

const KEY: &str = "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";

#[test]
fn unlocking_does_not_stall_a_current_thread_runtime() {
    let dir = tempfile::tempdir().expect("tmp");
    let keystore = Keystore::open(dir.path().join("keystore")).expect("keystore");
    keystore
        .import_raw(
            &SecretText::new(KEY.to_owned()),
            Some("wallet"),
            &mut Passphrase::new("a passphrase".to_owned()),
            &KdfParams::default(),
        )
        .expect("import at the default cost");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let (longest_gap, took) = runtime.block_on(async {
        let ticker = tokio::spawn(async {
            let mut longest = Duration::ZERO;
            let mut last = Instant::now();
            loop {
                tokio::time::sleep(Duration::from_millis(5)).await;
                longest = longest.max(last.elapsed());
                last = Instant::now();
                if longest > Duration::from_secs(60) {
                    return longest;
                }
                tokio::task::yield_now().await;
                if STOP.load(std::sync::atomic::Ordering::Relaxed) {
                    return longest;
                }
            }
        });
        // The ticker is running before the unlock starts.
        tokio::time::sleep(Duration::from_millis(30)).await;
        let started = Instant::now();
        let signer = keystore
            .unlock_async("wallet", Passphrase::new("a passphrase".to_owned()))
            .await
            .expect("unlock");
        let took = started.elapsed();
        assert_eq!(
            format!("{:x}", signer.address()),
            "70997970c51812dc3a010c7d01b50e0d17dc79c8"
        );
        STOP.store(true, std::sync::atomic::Ordering::Relaxed);
        (ticker.await.expect("ticker"), took)
    });
    // The derivation takes far longer than a tick; the ticker never waited for it.
    assert!(
        took > Duration::from_millis(20),
        "the default cost took {took:?}"
    );
    // Blocking, the longest gap is the whole unlock; a margin for a loaded machine.
    assert!(
        longest_gap < took * 3 / 4,
        "the runtime stalled for {longest_gap:?} of an unlock that took {took:?}"
    );
}

static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
