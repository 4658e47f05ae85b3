//! The flood benchmark's client (loopback only, bounded): a stranger's flood of unsigned
//! 255 KiB posts (half of them event-shaped, half not JSON, every body distinct) over N
//! keep-alive connections, and meanwhile one genuine signed delivery every interval, each
//! on a connection of its own as the platform would send it. What matters is the genuine
//! deliveries' latency while the flood runs: the platform removes a webhook whose listener
//! stops answering.
//!
//! Usage: `webhook_flood ADDR PATH POSTS CONNECTIONS SUBSCRIPTION_ID [INTERVAL_MS=100]`, with
//! the signing key in `BENCH_SIGNING_KEY`. Prints one JSON line.

#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use bridgectl_webhook::load::{self, LoadSpec, block_period_delivery};
use bridgectl_webhook::signature::sign;

/// The flood's body size: just under the listener's default body limit (256 KiB).
const FLOOD_BODY: usize = 255 * 1024;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [addr, path, posts, connections, sub, rest @ ..] = args.as_slice() else {
        return Err(
            "usage: webhook_flood ADDR PATH POSTS CONNECTIONS SUBSCRIPTION_ID [INTERVAL_MS]".into(),
        );
    };
    let interval =
        Duration::from_millis(rest.first().map(|s| s.parse()).transpose()?.unwrap_or(100));
    let key = std::env::var("BENCH_SIGNING_KEY").unwrap_or_default();
    let flood = LoadSpec {
        addr: addr.parse()?,
        path: path.clone(),
        requests: posts.parse()?,
        connections: connections.parse()?,
        timeout: Duration::from_secs(60),
    };
    let genuine_spec = LoadSpec {
        requests: 1,
        connections: 1,
        timeout: Duration::from_secs(60),
        ..flood.clone()
    };
    let (flood_report, genuine) = std::thread::scope(|scope| {
        let flooding = scope.spawn(|| {
            load::run(
                &flood,
                &|i| (load::stranger_post(i, FLOOD_BODY), None),
                None,
            )
        });
        let mut genuine: Vec<Option<Duration>> = Vec::new();
        // A short head start, so the first genuine delivery meets the flood in full.
        std::thread::sleep(interval);
        while !flooding.is_finished() {
            let seq = genuine.len() as u64 + 1;
            let body = block_period_delivery(sub, seq);
            let sig = sign(key.as_bytes(), &body);
            let started = Instant::now();
            let answered = load::run(&genuine_spec, &|_| (body.clone(), Some(sig.clone())), None)
                .ok()
                .filter(|r| r.ok() == 1)
                .map(|_| started.elapsed());
            genuine.push(answered);
            std::thread::sleep(interval.saturating_sub(started.elapsed()));
        }
        (flooding.join(), genuine)
    });
    let flood_report = flood_report.map_err(|_| "the flood thread panicked")??;
    let mut latencies: Vec<Duration> = genuine.iter().flatten().copied().collect();
    latencies.sort_unstable();
    let at = |p: f64| {
        latencies
            .get(((p / 100.0) * latencies.len().saturating_sub(1) as f64).round() as usize)
            .map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
    };
    println!(
        "{{\"flood_posts\": {}, \"flood_ok\": {}, \"flood_statuses\": \"{:?}\", \"flood_io_errors\": {}, \"flood_seconds\": {:.3}, \"flood_rps\": {:.0}, \"flood_mib_per_s\": {:.1}, \"genuine_sent\": {}, \"genuine_ok\": {}, \"genuine_p50_ms\": {:.1}, \"genuine_p99_ms\": {:.1}, \"genuine_max_ms\": {:.1}}}",
        flood_report.requests,
        flood_report.ok(),
        flood_report.statuses,
        flood_report.io_errors,
        flood_report.elapsed.as_secs_f64(),
        flood_report.rate(),
        flood_report.rate() * FLOOD_BODY as f64 / (1024.0 * 1024.0),
        genuine.len(),
        latencies.len(),
        at(50.0),
        at(99.0),
        at(100.0),
    );
    Ok(())
}
