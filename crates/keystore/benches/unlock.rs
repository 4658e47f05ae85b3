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
    let mut pass = Passphrase::new("bench passphrase");
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
    // The KDF alone at the same parameters: what an unlock cannot be faster than. The
    // difference is reading and checking the file, AES-GCM and building the signer.
    let defaults = KdfParams::default();
    let params = argon2::Params::new(defaults.m_kib(), defaults.t(), defaults.p(), Some(32))
        .expect("params");
    let kdf = argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
    group.bench_function("bare argon2id m=64MiB t=3 p=4", |b| {
        b.iter(|| {
            let mut out = [0u8; 32];
            kdf.hash_password_into(b"bench passphrase", &[7u8; 16], &mut out)
                .expect("argon2");
            out
        })
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
