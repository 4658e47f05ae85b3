//! Unlock cost at the default KDF (RFC 9106 second option) and at the test-only cost.
//!
//! `cargo bench -p bridgectl-keystore` prints the medians; the README of the crate
//! documents the default's cost.

#![allow(missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};

use bridgectl_keystore::{KdfParams, Keystore, Passphrase};

fn unlock(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Keystore::open(dir.path().join("ks")).expect("open keystore");
    let mut pass = Passphrase::new("bench passphrase".into());
    store
        .create(Some("default-cost"), &mut pass, &KdfParams::default())
        .expect("create default-cost key");
    store
        .create(
            Some("test-cost"),
            &mut pass,
            &KdfParams::insecure_for_tests(),
        )
        .expect("create test-cost key");

    let mut group = c.benchmark_group("unlock");
    group.sample_size(10);
    group.bench_function("default argon2id m=64MiB t=3 p=4", |b| {
        b.iter(|| store.unlock("default-cost", &mut pass).expect("unlock"))
    });
    group.finish();

    let mut group = c.benchmark_group("unlock");
    group.bench_function("test argon2id m=64KiB t=1 p=1", |b| {
        b.iter(|| store.unlock("test-cost", &mut pass).expect("unlock"))
    });
    group.finish();
}

criterion_group!(benches, unlock);
criterion_main!(benches);
