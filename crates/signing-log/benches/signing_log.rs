//! What the signing log costs:
//! - `sign/sign_legacy`: a signature alone (the baseline);
//! - `sign/sign_and_log`: the same signature plus its log entry (a second signature over
//!   the entry hash, the insert, and the fsync of a `synchronous=FULL` commit) on the
//!   file system of `BENCH_DIR` (default: the temp dir);
//! - `disk/fsync 1 KiB`: what one fsync after a 1 KiB append costs on that file system,
//!   so the two can be read side by side (an entry is one such fsync);
//! - `verify/10000 entries`: `log verify` of an intact log of 10,000 entries (a keccak
//!   and an ecrecover each).
//!
//! `cargo bench -p bridgectl-signing-log --bench signing_log` prints the medians; the
//! numbers are reported, never asserted.

#![allow(missing_docs)]

mod common;

use alloy_signer_local::PrivateKeySigner;
use bridgectl_signing_log::SigningLogDb;
use bridgectl_tx::local_signing::make_entry;
use bridgectl_tx::signing_log::{EntryBody, Head};
use bridgectl_tx::{sign_and_log, sign_legacy};
use common::{key, verified, written};
use criterion::{Criterion, criterion_group, criterion_main};

/// A log of `n` entries, each carrying the key's running totals on.
fn log_of(dir: &std::path::Path, n: u64) -> SigningLogDb {
    let signer: PrivateKeySigner = key();
    let mut head = Head::EMPTY;
    let mut entries = Vec::new();
    for i in 0..n {
        let v = verified(i);
        let signed = sign_legacy(&v, &signer).expect("sign");
        let e = make_entry(head, &v, &signed, 1_800_000_000 + i, &signer).expect("entry");
        let b: EntryBody = serde_json::from_str(&e.body).expect("body");
        head = Head {
            checkpoint: bridgectl_tx::Checkpoint {
                count: e.seq,
                head: e.hash,
            },
            time: b.time,
            running: b.running,
        };
        entries.push(e);
    }
    written(&dir.join("log.sqlite3"), &entries)
}

/// A temp dir on the file system being measured: `BENCH_DIR`, or the system's temp dir.
fn bench_dir() -> tempfile::TempDir {
    match std::env::var_os("BENCH_DIR") {
        Some(d) => tempfile::tempdir_in(d).expect("temp dir in BENCH_DIR"),
        None => tempfile::tempdir().expect("temp dir"),
    }
}

fn disk(c: &mut Criterion) {
    use std::io::Write;
    let dir = bench_dir();
    let mut file = std::fs::File::create(dir.path().join("fsync")).expect("file");
    let page = [0x5a_u8; 1024];
    let mut g = c.benchmark_group("disk");
    g.sample_size(50);
    g.bench_function("fsync 1 KiB", |b| {
        b.iter(|| {
            file.write_all(&page).expect("write");
            file.sync_all().expect("fsync");
        })
    });
    g.finish();
}

fn sign(c: &mut Criterion) {
    let dir = bench_dir();
    let log = SigningLogDb::open(dir.path().join("append.sqlite3")).expect("open");
    let signer = key();
    let v = verified(0);
    let mut g = c.benchmark_group("sign");
    g.sample_size(50);
    g.bench_function("sign_legacy", |b| {
        b.iter(|| sign_legacy(&v, &signer).expect("sign"))
    });
    g.bench_function("sign_and_log", |b| {
        b.iter(|| {
            let signed = sign_and_log(&v, &signer, &log, 1_800_000_000).expect("sign and log");
            // As a long run does between signatures: keeps the WAL at its bound.
            bridgectl_tx::SigningLog::tidy(&log);
            signed
        })
    });
    g.finish();
}

fn verify_10k(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = log_of(dir.path(), 10_000);
    assert_eq!(log.verify(None).expect("intact").count, 10_000);
    let mut g = c.benchmark_group("verify");
    g.sample_size(10);
    g.bench_function("10000 entries", |b| {
        b.iter(|| log.verify(None).expect("intact"))
    });
    g.finish();
}

criterion_group!(benches, disk, sign, verify_10k);
criterion_main!(benches);
