//! Helpers shared by the sandbox tests.

#![allow(dead_code)]

use std::future::Future;
use std::time::{Duration, Instant};

use bridgectl_sandbox::anvil::process_is_gone;
use bridgectl_sandbox::{ChainConfig, Ratio, Sandbox, SandboxConfig};
use serde_json::Value;

/// A fast config: 200 ms main blocks, automine side, MT 18 / ST 6 decimals, 1 MT = 2 ST,
/// a 10 MT reserve, fast relayer and webhook retries.
pub fn fast_config() -> SandboxConfig {
    let mut c = SandboxConfig::default();
    c.main.block_time_ms = 200;
    c.side = ChainConfig {
        decimals: 6,
        ..c.side
    };
    c.ratio = Ratio { mt: 1, st: 2 };
    c.reserve = "10".into();
    c.dev_mt = "100".into();
    c.dev_st = "50".into();
    c.relayer.poll_ms = 50;
    c.webhooks.retry_base_ms = 50;
    c.webhooks.retry_max_ms = 200;
    c.webhooks.remove_after_failures = 3;
    c
}

/// Starts a sandbox with [`fast_config`].
pub async fn start() -> Sandbox {
    Sandbox::start(fast_config()).await.expect("sandbox starts")
}

/// Shuts the sandbox down and checks its anvils are gone.
pub async fn finish(sandbox: Sandbox) {
    let pids = sandbox.info().anvil_pids.clone();
    assert_eq!(pids.len(), 2);
    sandbox.shutdown().await.expect("shutdown");
    for pid in pids {
        assert!(
            process_is_gone(pid),
            "anvil {pid} is still running after shutdown"
        );
    }
}

/// Waits up to `secs` for `f` to return `Some`.
pub async fn eventually<T, F, Fut>(secs: u64, what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < end, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A client of a running sandbox.
pub struct Client {
    pub http: reqwest::Client,
    pub base: String,
    pub token: String,
}

impl Client {
    pub fn new(sandbox: &Sandbox) -> Client {
        Client {
            http: reqwest::Client::new(),
            base: sandbox.info().base_url.clone(),
            token: sandbox.info().token.expose_secret().to_owned(),
        }
    }

    /// Sends and returns (status, body as JSON).
    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self
            .http
            .request(method, format!("{}{}", self.base, path))
            .bearer_auth(&self.token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("request");
        let status = resp.status().as_u16();
        let text = resp.text().await.expect("body");
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.send(reqwest::Method::POST, path, Some(body)).await
    }

    pub async fn get(&self, path: &str, body: Option<Value>) -> (u16, Value) {
        self.send(reqwest::Method::GET, path, body).await
    }

    /// `data.balance` of the balance route, as a decimal string.
    pub async fn balance(&self, path: &str) -> String {
        let (s, b) = self.get(path, None).await;
        assert_eq!(s, 200, "{b}");
        b["data"]["balance"].as_str().expect("balance").to_owned()
    }
}
