//! A bounded loopback load generator for listeners: the tests' and the benchmark's one
//! source of load, so both measure the same thing.
//!
//! It opens exactly `connections` keep-alive HTTP/1.1 connections (one thread each), sends
//! `requests` POSTs in total, and records each request's status and latency. It refuses
//! non-loopback addresses and more than [`MAX_REQUESTS`] requests or [`MAX_CONNECTIONS`]
//! connections: it is a measuring tool, not a flood tool. A request whose connection
//! fails counts as an I/O error (never acknowledged) and the connection is reopened.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::Error;

/// The most requests one run may send.
pub const MAX_REQUESTS: usize = 1_000_000;
/// The most connections one run may open.
pub const MAX_CONNECTIONS: usize = 1024;

/// What to send where.
#[derive(Clone, Debug)]
pub struct LoadSpec {
    /// A loopback address.
    pub addr: SocketAddr,
    /// The request path.
    pub path: String,
    /// Requests in total.
    pub requests: usize,
    /// Concurrent keep-alive connections.
    pub connections: usize,
    /// Read/write timeout per request.
    pub timeout: Duration,
}

/// Live counters a caller can watch while a run is going (e.g. to kill a server midway).
#[derive(Debug, Default)]
pub struct Progress {
    /// Requests answered 200 so far.
    pub ok: AtomicUsize,
    /// Requests finished (any outcome) so far.
    pub done: AtomicUsize,
}

/// What a run measured.
#[derive(Clone, Debug)]
pub struct LoadReport {
    /// Requests attempted.
    pub requests: usize,
    /// Count per HTTP status.
    pub statuses: BTreeMap<u16, usize>,
    /// Requests that got no answer (connect, write or read failed).
    pub io_errors: usize,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// Latency of every answered request, sorted.
    pub latencies: Vec<Duration>,
    /// `acked[i]`: request `i` was answered 200.
    pub acked: Vec<bool>,
}

impl LoadReport {
    /// Requests answered 200.
    pub fn ok(&self) -> usize {
        self.statuses.get(&200).copied().unwrap_or(0)
    }

    /// Answered requests per second.
    pub fn rate(&self) -> f64 {
        let answered: usize = self.statuses.values().sum();
        answered as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The latency at percentile `p` (0..=100) of answered requests.
    pub fn percentile(&self, p: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((p / 100.0) * (self.latencies.len() - 1) as f64).round() as usize;
        self.latencies[rank.min(self.latencies.len() - 1)]
    }
}

/// Sends the load. `body(i)` gives request `i`'s body and optional `x-signature`.
pub fn run(
    spec: &LoadSpec,
    body: &(dyn Fn(usize) -> (Vec<u8>, Option<String>) + Sync),
    progress: Option<&Progress>,
) -> Result<LoadReport, Error> {
    if !spec.addr.ip().is_loopback() {
        return Err(Error::Load(format!(
            "{} is not a loopback address",
            spec.addr
        )));
    }
    if spec.requests > MAX_REQUESTS {
        return Err(Error::Load(format!(
            "{} requests is over the limit of {MAX_REQUESTS}",
            spec.requests
        )));
    }
    if spec.connections == 0 || spec.connections > MAX_CONNECTIONS {
        return Err(Error::Load(format!(
            "{} connections: expected 1 to {MAX_CONNECTIONS}",
            spec.connections
        )));
    }
    if !spec.path.starts_with('/') || spec.path.contains([' ', '\r', '\n']) {
        return Err(Error::Load(format!("bad path {:?}", spec.path)));
    }
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<(u16, Duration)>>> = Mutex::new(vec![None; spec.requests]);
    let start = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..spec.connections {
            scope.spawn(|| worker(spec, body, &next, &results, progress));
        }
    });
    let elapsed = start.elapsed();
    let results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut report = LoadReport {
        requests: spec.requests,
        statuses: BTreeMap::new(),
        io_errors: 0,
        elapsed,
        latencies: Vec::with_capacity(spec.requests),
        acked: Vec::with_capacity(spec.requests),
    };
    for r in results {
        match r {
            Some((status, latency)) => {
                *report.statuses.entry(status).or_default() += 1;
                report.latencies.push(latency);
                report.acked.push(status == 200);
            }
            None => {
                report.io_errors += 1;
                report.acked.push(false);
            }
        }
    }
    report.latencies.sort_unstable();
    Ok(report)
}

fn worker(
    spec: &LoadSpec,
    body: &(dyn Fn(usize) -> (Vec<u8>, Option<String>) + Sync),
    next: &AtomicUsize,
    results: &Mutex<Vec<Option<(u16, Duration)>>>,
    progress: Option<&Progress>,
) {
    let mut conn: Option<BufReader<TcpStream>> = None;
    let mut local = Vec::new();
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= spec.requests {
            break;
        }
        let (payload, signature) = body(i);
        let started = Instant::now();
        let outcome = one_request(spec, &mut conn, &payload, signature.as_deref());
        if outcome.is_err() {
            conn = None;
        }
        let result = outcome.ok().map(|status| (status, started.elapsed()));
        if let Some(p) = progress {
            if matches!(result, Some((200, _))) {
                p.ok.fetch_add(1, Ordering::Relaxed);
            }
            p.done.fetch_add(1, Ordering::Relaxed);
        }
        local.push((i, result));
        if local.len() >= 256 {
            flush(results, &mut local);
        }
    }
    flush(results, &mut local);
}

fn flush(
    results: &Mutex<Vec<Option<(u16, Duration)>>>,
    local: &mut Vec<(usize, Option<(u16, Duration)>)>,
) {
    let mut all = results.lock().unwrap_or_else(|p| p.into_inner());
    for (i, r) in local.drain(..) {
        all[i] = r;
    }
}

fn one_request(
    spec: &LoadSpec,
    conn: &mut Option<BufReader<TcpStream>>,
    payload: &[u8],
    signature: Option<&str>,
) -> std::io::Result<u16> {
    if conn.is_none() {
        let stream = TcpStream::connect_timeout(&spec.addr, spec.timeout)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(spec.timeout))?;
        stream.set_write_timeout(Some(spec.timeout))?;
        *conn = Some(BufReader::new(stream));
    }
    let reader = conn
        .as_mut()
        .ok_or_else(|| std::io::Error::other("no connection"))?;
    let mut head = format!(
        "POST {} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        spec.path,
        spec.addr,
        payload.len()
    );
    if let Some(sig) = signature {
        head.push_str("x-signature: ");
        head.push_str(sig);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    let mut request = head.into_bytes();
    request.extend_from_slice(payload);
    reader.get_mut().write_all(&request)?;
    let (status, close) = read_response(reader)?;
    if close {
        // The server will close it: reconnect for the next request.
        *conn = None;
    }
    Ok(status)
}

/// The status, and whether the server will close the connection.
fn read_response(reader: &mut BufReader<TcpStream>) -> std::io::Result<(u16, bool)> {
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned());
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "connection closed",
        ));
    }
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("no status line"))?;
    let mut length = 0usize;
    let mut chunked = false;
    let mut close = false;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Err(bad("eof in headers"));
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            let value = value.trim();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = value.parse().map_err(|_| bad("content-length"))?,
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                "connection" => close = value.eq_ignore_ascii_case("close"),
                _ => {}
            }
        }
    }
    if chunked {
        loop {
            line.clear();
            reader.read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim(), 16).map_err(|_| bad("chunk size"))?;
            let mut skip = vec![0u8; size + 2];
            reader.read_exact(&mut skip)?;
            if size == 0 {
                break;
            }
        }
    } else {
        let mut skip = vec![0u8; length];
        reader.read_exact(&mut skip)?;
    }
    Ok((status, close))
}

/// A realistic BLOCK_PERIOD delivery (about 1.3 KiB) for `subscription_id` and
/// `sequence_number`, shaped like the platform's payload.
pub fn block_period_delivery(subscription_id: &str, sequence_number: u64) -> Vec<u8> {
    let value = serde_json::json!({
        "subscriptionId": subscription_id,
        "sequenceNumber": sequence_number,
        "description": "load test",
        "protocol": "ETHEREUM",
        "network": "SEPOLIA",
        "subscriptionType": "WEBHOOK",
        "notification": {"webhookUrl": "http://127.0.0.1/hooks/load"},
        "eventType": "BLOCK_PERIOD",
        "createdAt": "2024-01-01T00:00:00.000Z",
        "event": {
            "period": 1,
            "message": {
                "number": format!("0x{sequence_number:x}"),
                "hash": format!("0x{:064x}", sequence_number.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
                "parent_hash": format!("0x{:064x}", sequence_number.wrapping_sub(1).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
                "nonce": "0x0000000000000000",
                "sha3_uncles": "0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347",
                "logs_bloom": format!("0x{}", "0".repeat(512)),
                "transactions_root": "0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421",
                "state_root": "0xd7f8974fb5ac78d9ac099b9ad5018bedc2ce0a72dad1827a1709da30580f0544",
                "receipts_root": "0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421",
                "miner": "0x0000000000000000000000000000000000000000",
                "difficulty": "0x0",
                "extra_data": "0x",
                "gas_limit": "0x1c9c380",
                "gas_used": "0x0",
                "timestamp": format!("0x{:x}", 1_700_000_000u64 + sequence_number),
                "base_fee_per_gas": "0x3b9aca00"
            }
        }
    });
    serde_json::to_vec(&value).unwrap_or_default()
}

/// A stranger's post number `i`, `size` bytes (at least 64) and unsigned: even `i` is
/// shaped like an event of subscription 7 (so it is stored as unverified), odd `i` is not
/// JSON (quarantined). Every body is distinct, so none is deduplicated away.
pub fn stranger_post(i: usize, size: usize) -> Vec<u8> {
    let head = if i.is_multiple_of(2) {
        format!("{{\"subscriptionId\":\"7\",\"sequenceNumber\":{i},\"pad\":\"")
    } else {
        format!("garbage {i} ")
    };
    let mut body = head.into_bytes();
    body.resize(size.max(64) - 2, b'a');
    body.extend_from_slice(b"\"}");
    body
}
