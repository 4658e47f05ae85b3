//! The benchmark's load generator (loopback only, bounded): signed BLOCK_PERIOD deliveries
//! with distinct sequence numbers over N keep-alive connections; prints one JSON line with
//! throughput and latency percentiles.
//!
//! Usage: `webhook_load ADDR PATH REQUESTS CONNECTIONS SUBSCRIPTION_ID [FIRST_SEQ]`, with the
//! signing key in `BENCH_SIGNING_KEY` (so it stays out of argv).

#![allow(clippy::print_stdout)]

use std::time::Duration;

use bridgectl_webhook::load::{self, LoadSpec, block_period_delivery};
use bridgectl_webhook::signature::sign;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [addr, path, requests, connections, sub, rest @ ..] = args.as_slice() else {
        return Err(
            "usage: webhook_load ADDR PATH REQUESTS CONNECTIONS SUBSCRIPTION_ID [FIRST_SEQ]".into(),
        );
    };
    let first: u64 = rest.first().map(|s| s.parse()).transpose()?.unwrap_or(1);
    let key = std::env::var("BENCH_SIGNING_KEY").unwrap_or_default();
    let spec = LoadSpec {
        addr: addr.parse()?,
        path: path.clone(),
        requests: requests.parse()?,
        connections: connections.parse()?,
        timeout: Duration::from_secs(30),
    };
    // Bodies are built up front so the generator's own work is not in the latencies.
    let bodies: Vec<(Vec<u8>, Option<String>)> = (0..spec.requests)
        .map(|i| {
            let body = block_period_delivery(sub, first + i as u64);
            let sig = sign(key.as_bytes(), &body);
            (body, Some(sig))
        })
        .collect();
    let report = load::run(&spec, &|i| bodies[i].clone(), None)?;
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{{\"requests\": {}, \"ok\": {}, \"io_errors\": {}, \"statuses\": {:?}, \"seconds\": {:.3}, \"rps\": {:.0}, \"p50_ms\": {:.3}, \"p99_ms\": {:.3}, \"max_ms\": {:.3}}}",
        report.requests,
        report.ok(),
        report.io_errors,
        format!("{:?}", report.statuses),
        report.elapsed.as_secs_f64(),
        report.rate(),
        ms(report.percentile(50.0)),
        ms(report.percentile(99.0)),
        ms(report.percentile(100.0)),
    );
    Ok(())
}
