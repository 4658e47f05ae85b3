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

use std::collections::BTreeMap;

use alloy_primitives::{Address, Bytes, U256};
use alloy_signer_local::PrivateKeySigner;
use bridgectl_signing_log::SigningLogDb;
use bridgectl_tx::local_signing::make_entry;
use bridgectl_tx::signing_log::{Checkpoint, EntryBody, Head};
use bridgectl_tx::{RawTx, Verified, sign_and_log, sign_legacy, verify};
use criterion::{Criterion, criterion_group, criterion_main};

fn key() -> PrivateKeySigner {
    "4646464646464646464646464646464646464646464646464646464646464646"
        .parse()
        .expect("key")
}

fn verified(nonce: u64) -> Verified {
    let data = bridgectl_tx::calldata::encode(
        "redeem",
        &BTreeMap::from([("_amount".to_string(), "1000000000000000000".to_string())]),
    )
    .expect("calldata");
    let tx = RawTx {
        from: key().address(),
        to: Address::repeat_byte(0x57),
        data: Bytes::from(data),
        nonce,
        gas_limit: 100_000,
        gas_price: 1_000_000_000,
        chain_id: 1337,
        value: U256::ZERO,
    };
    let (policy, context) = bridgectl_tx::verify::exactly(&tx);
    verify(&tx, None, &policy, &context).expect("verified")
}

/// A log of `n` entries, written in one transaction (building it is not what is
/// measured).
fn log_of(dir: &std::path::Path, n: u64) -> SigningLogDb {
    let path = dir.join("log.sqlite3");
    let log = SigningLogDb::open(&path).expect("open");
    let signer = key();
    let mut conn = rusqlite::Connection::open(&path).expect("raw");
    let tx = conn.transaction().expect("tx");
    let mut head = Checkpoint::EMPTY;
    for i in 0..n {
        let v = verified(i);
        let signed = sign_legacy(&v, &signer).expect("sign");
        let at = Head {
            checkpoint: head,
            time: 0,
        };
        let e = make_entry(at, &v, &signed, 1_800_000_000 + i, &signer).expect("entry");
        let b: EntryBody = serde_json::from_str(&e.body).expect("body");
        tx.execute(
            "INSERT INTO entries (seq, time, key, chain_id, contract, body, hash, sig) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            rusqlite::params![
                e.seq as i64,
                b.time as i64,
                b.key.to_string(),
                b.chain_id as i64,
                b.to.to_string(),
                e.body,
                e.hash.as_slice(),
                e.sig.as_ref()
            ],
        )
        .expect("insert");
        head = Checkpoint {
            count: e.seq,
            head: e.hash,
        };
    }
    tx.commit().expect("commit");
    log
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
