//! The listener's per-event CPU work outside HTTP and the store, stage by stage, on one
//! thread: parsing a BLOCK_PERIOD delivery (strict JSON), hashing its body, checking its
//! signature, and the whole classification as the listener does it. What the bench's
//! "parse+verify" figure is made of.
//!
//! Usage: `webhook_stages [ITERATIONS=20000]`; prints one JSON line, µs per event by stage.

#![allow(clippy::print_stdout)]

use std::hint::black_box;
use std::time::Instant;

use bridgectl_webhook::listener::parse_delivery;
use bridgectl_webhook::load::block_period_delivery;
use bridgectl_webhook::signature::{sign, verify};
use sha2::{Digest, Sha256};

/// This thread's CPU time so far, ns (`/proc/thread-self/schedstat`): on a loaded machine
/// wall-clock time would count other processes' turns too.
fn cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// CPU µs per call of `f` over `n` calls (after as many warm-up calls); wall-clock time
/// where the kernel does not report CPU time.
fn per_call(n: usize, mut f: impl FnMut(usize)) -> f64 {
    for i in 0..n {
        f(i);
    }
    let (start, cpu) = (Instant::now(), cpu_ns());
    for i in 0..n {
        f(i);
    }
    match (cpu, cpu_ns()) {
        (Some(a), Some(b)) => (b - a) as f64 / 1e3 / n as f64,
        _ => start.elapsed().as_secs_f64() * 1e6 / n as f64,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(20_000);
    let key = b"bench-signing-key";
    let bodies: Vec<(Vec<u8>, String)> = (0..256)
        .map(|i| {
            let body = block_period_delivery("77", i + 1);
            let sig = sign(key, &body);
            (body, sig)
        })
        .collect();
    let body = |i: usize| &bodies[i % bodies.len()];
    let parse = per_call(n, |i| {
        black_box(parse_delivery(black_box(&body(i).0)).is_ok());
    });
    let sha = per_call(n, |i| {
        let digest: [u8; 32] = Sha256::digest(black_box(&body(i).0)).into();
        black_box(digest);
    });
    let hmac = per_call(n, |i| {
        let (b, s) = body(i);
        black_box(verify(key, black_box(b), s));
    });
    println!(
        "{{\"body_bytes\": {}, \"parse_us\": {parse:.2}, \"sha256_us\": {sha:.2}, \"hmac_verify_us\": {hmac:.2}, \"total_us\": {:.2}}}",
        bodies[0].0.len(),
        parse + sha + hmac
    );
    Ok(())
}
