//! A live sandbox (two real anvil chains and the platform API on 127.0.0.1) for the
//! end-to-end tests, with a test dir whose profile points at it and a keystore holding
//! the sandbox's development key.
//!
//! Every command run through [`Live`] has its stdout and stderr checked for the private
//! key, the passphrase and the access token: none may ever appear.
//!
//! Two kinds of test: [`Live::shared`] joins the one sandbox of this test binary (started
//! by the first test that asks, kept until the process exits) with an account of its own,
//! fresh and funded, so that no other test moves its nonces or balances; [`Live::new`]
//! starts a sandbox of its own, for tests that need what only a whole sandbox has (a
//! config of their own, mining stopped, a chain reset, anvil's development account).
//! Either way the test has its own dir, keystore and journal, and a bearer token of its
//! own whose scope ([`Live::scope`]) holds the faults, holds and hostile modes it sets
//! ([`Faults`], [`Live::hostile`]) and names its requests in the platform's log
//! ([`Live::requests`]): what it sets meets its own requests only.

#![allow(dead_code)]

use std::path::Path;
use std::process::Output;
use std::sync::{Arc, OnceLock, mpsc};
use std::time::Duration;

use alloy_primitives::{Address, B256, U256};
use bridgectl_flow::rpc::NodeClient;
use bridgectl_sandbox::{
    AppState, DevAccount, FaultConfig, Hostile, Sandbox, SandboxConfig, SandboxInfo,
};

use crate::util::{Dir, TestCommand};

/// A sandbox running on its own thread and runtime until dropped.
pub struct LiveSandbox {
    /// Where everything is.
    pub info: SandboxInfo,
    /// The API's state, to set faults.
    pub state: AppState,
    runtime: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The sandbox's secrets in every form the scan looks for, and which secrets they are
    /// made of: made once each (a shared sandbox holds hundreds, and every command's
    /// output is scanned for them).
    secrets: std::sync::Mutex<(std::collections::HashSet<String>, crate::secrets::Secrets)>,
}

/// The sandbox [`Live::shared`] tests run against. Never dropped: its thread lives as long
/// as the process, and its anvils are started with a parent-death signal tied to that
/// thread (see `bridgectl_sandbox::anvil`), so they die when the test binary exits.
static SHARED: OnceLock<Arc<LiveSandbox>> = OnceLock::new();

impl LiveSandbox {
    /// The one shared sandbox (default config), started on first use.
    pub fn shared() -> Arc<LiveSandbox> {
        SHARED
            .get_or_init(|| Arc::new(LiveSandbox::start(SandboxConfig::default())))
            .clone()
    }

    /// A new account with 100 whole MT, 100 whole ST and gas, its key handed out.
    pub fn new_account(&self) -> DevAccount {
        let whole = |d: u8| U256::from(100u64) * U256::from(10u64).pow(U256::from(d));
        let (mt, st) = (
            whole(self.info.main.decimals),
            whole(self.info.side.decimals),
        );
        let state = self.state.clone();
        // The sandbox's runtime does the sends (the node clients live there).
        self.run(async move { state.fund_new_account(mt, st).await })
            .unwrap_or_else(|e| panic!("funding a new account: {e}"))
    }

    /// A new managed account (the sandbox holds its key), registered for gas, with no
    /// tokens: a test that counts a managed account's nonces takes one of its own.
    pub fn new_managed(&self) -> Address {
        let state = self.state.clone();
        self.run(async move {
            let signer = bridgectl_sandbox::chain::random_signer()?;
            state.add_managed(signer).await.map_err(|e| e.to_string())
        })
        .unwrap_or_else(|e| panic!("adding a managed account: {e}"))
    }

    /// Stops (`false`) or starts (`true`) mining on the side chain (`side`) or the main
    /// chain: stopped, transactions wait in the node's pool and no block comes on a
    /// timer either. Started, a block for every transaction, and the chain's timer again,
    /// so that facts get deeper. Starting does not mine what waited:
    /// [`LiveSandbox::mine`] does.
    pub fn set_mining(&self, side: bool, on: bool) {
        let (name, chain) = if side {
            ("side", &self.info.side)
        } else {
            ("main", &self.info.main)
        };
        let interval = if on { chain.block_time_ms } else { 0 };
        let state = self.state.clone();
        self.run(async move { state.set_mining(name, on, interval).await })
            .unwrap_or_else(|e| panic!("setting {name} chain mining: {e}"));
    }

    /// How the side chain (`side`) or the main chain mines from now on: a block for every
    /// transaction (`automine`), and one every `interval_ms` besides (0: none on a timer,
    /// so a fact in it gets no deeper until something is mined).
    pub fn mining(&self, side: bool, automine: bool, interval_ms: u64) {
        let name = if side { "side" } else { "main" };
        let state = self.state.clone();
        self.run(async move { state.set_mining(name, automine, interval_ms).await })
            .unwrap_or_else(|e| panic!("setting {name} chain mining: {e}"));
    }

    /// Reorganises the side chain (`side`) or the main chain `depth` blocks deep
    /// (anvil's `anvil_reorg`, through the sandbox): the newest `depth` blocks replaced by
    /// empty ones, their transactions gone. Returns the head before and after.
    pub fn reorg(&self, side: bool, depth: u64) -> (u64, u64) {
        let name = if side { "side" } else { "main" };
        let state = self.state.clone();
        self.run(async move { state.reorg(name, depth).await })
            .unwrap_or_else(|e| panic!("reorganising the {name} chain: {e}"))
    }

    /// Mines one block on the side chain (`side`) or the main chain.
    pub fn mine(&self, side: bool) {
        block_on(self.node(side).call("evm_mine", serde_json::json!([]))).expect("evm_mine");
    }

    /// Mints `st` ST base units to `to` from the sandbox's bridge account: a credit from
    /// the zero address that no swap paid for.
    pub fn mint_st(&self, to: Address, st: U256) {
        let state = self.state.clone();
        self.run(async move { state.fund(to, U256::ZERO, st).await })
            .unwrap_or_else(|e| panic!("minting ST: {e}"))
    }

    /// Starts a sandbox with `config`.
    pub fn start(config: SandboxConfig) -> LiveSandbox {
        let (info_tx, info_rx) = mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let sandbox = match Sandbox::start(config).await {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = info_tx.send(Err(e.to_string()));
                        return;
                    }
                };
                let _ = info_tx.send(Ok((
                    sandbox.info().clone(),
                    sandbox.state().clone(),
                    tokio::runtime::Handle::current(),
                )));
                let _ = stop_rx.await;
                sandbox.shutdown().await.expect("sandbox shutdown");
            });
        });
        let (info, state, runtime) = info_rx
            .recv_timeout(Duration::from_secs(120))
            .expect("sandbox did not start in time")
            .unwrap_or_else(|e| panic!("sandbox failed to start: {e}"));
        LiveSandbox {
            info,
            state,
            runtime,
            stop: Some(stop_tx),
            thread: Some(thread),
            secrets: Default::default(),
        }
    }

    /// Every secret the sandbox holds or has handed out so far, in every form the scan
    /// looks for (see [`crate::secrets::Secrets::add_sandbox`]).
    pub fn secrets(&self) -> crate::secrets::Secrets {
        let mut cache = self
            .secrets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (known, forms) = &mut *cache;
        for secret in self.state.secrets() {
            if known.insert(secret.clone()) {
                forms.add_sandbox_secret(&secret);
            }
        }
        forms.clone()
    }

    /// Runs `f` to completion on the sandbox's runtime (where its node clients live).
    fn run<T: Send + 'static>(
        &self,
        f: impl std::future::Future<Output = T> + Send + 'static,
    ) -> T {
        self.runtime
            .block_on(self.runtime.spawn(f))
            .expect("a task on the sandbox's runtime")
    }

    /// Waits until the request log has a line starting with `prefix` (method and path)
    /// after the first `skip` lines, and returns that line (see [`wait_for_line`]).
    pub fn wait_for_request(&self, skip: usize, prefix: &str) -> String {
        wait_for_line(|| self.state.request_log(), skip, prefix)
    }

    /// The `signedTx` of every submission in the request log, oldest first.
    pub fn submitted(&self) -> Vec<String> {
        submissions(&self.state.request_log())
    }

    /// A node client for the side (`true`) or main chain.
    pub fn node(&self, side: bool) -> NodeClient {
        let url = if side {
            &self.info.side.rpc_url
        } else {
            &self.info.main.rpc_url
        };
        NodeClient::new(url).expect("node client")
    }
}

impl Drop for Live {
    /// The platform must never have been sent a secret (its request log is scanned with
    /// every header), and the journal and the signing log must hold none.
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        // The scan below proves something only if this test's commands reached the
        // platform: in the shared sandbox other tests' requests do not count, so one made
        // with this test's token, or naming an account of its keystore, is looked for.
        let accounts: Vec<String> = bridgectl_keystore::Keystore::open(self.dir.keystore())
            .and_then(|k| k.list())
            .expect("the test keystore")
            .iter()
            .map(|k| format!("{:x}", k.address))
            .collect();
        let uses_platform = self
            .uses_platform
            .load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            !uses_platform
                || !self.requests().is_empty()
                || self.sb.state.request_log().iter().any(|l| {
                    let l = l.to_lowercase();
                    accounts.iter().any(|a| l.contains(a.as_str()))
                }),
            "the sandbox saw no request of this test (accounts {accounts:?})"
        );
        // This test's requests (its token's scope), and those of no scope (made with the
        // sandbox's own token or an exchanged one, which any test may have made): every
        // other test of the shared sandbox scans its own.
        let scan = self.scan();
        let requests: Vec<_> = self
            .sb
            .state
            .request_log_with_headers()
            .into_iter()
            .filter(|r| r.scope.as_deref().is_none_or(|s| s == self.scope))
            .collect();
        scan.scan_requests(&requests);
        // What the nodes were sent: every secret but the node API key, which is theirs.
        let node_scan = scan.without("the node API key");
        for tap in &self.node_taps {
            for request in tap.requests() {
                node_scan.scan("a request to a node", request.as_bytes());
            }
        }
        // The journal and the keystore's signing log (every signature's record): each
        // with its WAL.
        for file in [
            self.dir.join("journal.sqlite3"),
            self.dir.keystore().join("signing-log.sqlite3"),
        ] {
            if file.exists() {
                scan.scan_file(&file);
            }
        }
    }
}

impl Drop for LiveSandbox {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The request-log line of a submission, `POST <path> {"signedTx": ...}`.
pub const SUBMIT: &str = "POST /mx/v2.0/transaction/send/signed-tx ";

/// The `signedTx` a request-log line of a submission carries.
pub fn signed_tx_of(line: &str) -> Option<String> {
    let body: serde_json::Value = serde_json::from_str(line.strip_prefix(SUBMIT)?).ok()?;
    body["signedTx"].as_str().map(str::to_owned)
}

/// The `signedTx` of every submission among request-log `lines`, oldest first.
fn submissions(lines: &[String]) -> Vec<String> {
    lines.iter().filter_map(|l| signed_tx_of(l)).collect()
}

/// Waits until `log()` has a line starting with `prefix` (method and path) after its
/// first `skip` lines, and returns that line. Waiting for a request that never comes
/// ends the test after 60 s: a deadline on presence, never a proof of absence.
fn wait_for_line(log: impl Fn() -> Vec<String>, skip: usize, prefix: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(line) = log().into_iter().skip(skip).find(|l| l.starts_with(prefix)) {
            return line;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no request {prefix} reached the sandbox in 60 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The fault knobs a test sets: on the whole of a sandbox of its own ([`LiveSandbox`]),
/// or on its own requests only ([`Live`]: its scope, in the shared sandbox as in its own).
pub trait Faults {
    /// Sets the fault knobs of `route` (see the sandbox README for route names).
    fn fault(&self, route: &str, fault: FaultConfig);

    /// Clears the faults of `route`.
    fn clear(&self, route: &str) {
        self.fault(route, FaultConfig::default());
    }

    /// `route` does its work, then its answer is replaced by a 502.
    fn drop_answers(&self, route: &str) {
        self.fault(
            route,
            FaultConfig {
                drop_after_work: 1.0,
                ..Default::default()
            },
        );
    }

    /// A share `rate` of `route`'s requests get a 503 before any work.
    fn fail_share(&self, route: &str, rate: f64) {
        self.fault(
            route,
            FaultConfig {
                error_rate: rate,
                ..Default::default()
            },
        );
    }

    /// `route` answers `ms` milliseconds late.
    fn delay(&self, route: &str, ms: u64) {
        self.fault(
            route,
            FaultConfig {
                latency_ms: ms,
                ..Default::default()
            },
        );
    }

    /// `route`'s requests wait, already in the request log and before any work, until
    /// [`Faults::clear`] lifts the hold.
    fn hold(&self, route: &str) {
        self.fault(
            route,
            FaultConfig {
                hold: true,
                ..Default::default()
            },
        );
    }
}

impl Faults for LiveSandbox {
    /// For every client of the sandbox.
    fn fault(&self, route: &str, fault: FaultConfig) {
        self.state.set_fault(route, fault);
    }
}

impl Faults for Live {
    /// For this test's requests only.
    fn fault(&self, route: &str, fault: FaultConfig) {
        self.sb.state.set_scoped_fault(&self.scope, route, fault);
    }
}

/// Runs a future to completion on a small runtime (for node queries in assertions).
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}

/// A logging stub in front of a node: every request bridgectl sends it (path and query,
/// headers, body) is kept, then forwarded to the node, whose answer goes back unchanged.
/// What a node provider would see is scanned for secrets like everything else.
pub struct NodeTap {
    /// Where bridgectl is pointed instead of the node.
    pub url: String,
    requests: Arc<std::sync::Mutex<Vec<String>>>,
    /// When set, the hash block 0 is said to have, and whether every transaction is
    /// denied too: a node that lies about its chain.
    lie_about_block_zero: Arc<std::sync::Mutex<Option<(String, bool)>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl NodeTap {
    /// Starts a stub that forwards to `upstream` (a node's URL).
    pub fn start(upstream: &str) -> NodeTap {
        use axum::body::{Body, to_bytes};
        use axum::http::{Request, StatusCode};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the node tap");
        listener.set_nonblocking(true).expect("nonblocking");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let requests: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
        let lie: Arc<std::sync::Mutex<Option<(String, bool)>>> = Arc::default();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (kept, upstream) = (requests.clone(), upstream.trim_end_matches('/').to_owned());
        let lying = lie.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let client = reqwest::Client::new();
                let forward = move |request: Request<Body>| {
                    let (client, kept, upstream) = (client.clone(), kept.clone(), upstream.clone());
                    let lie = lying.lock().unwrap_or_else(|p| p.into_inner()).clone();
                    async move {
                        let target = request
                            .uri()
                            .path_and_query()
                            .map_or("/".to_owned(), |p| p.to_string());
                        let headers = format!("{:?}", request.headers());
                        let body = to_bytes(request.into_body(), 64 << 20)
                            .await
                            .unwrap_or_default();
                        let (asks_block_zero, asks_a_transaction) = {
                            let text = String::from_utf8_lossy(&body);
                            (
                                text.contains("eth_getBlockByNumber") && text.contains("\"0x0\""),
                                text.contains("eth_getTransactionByHash")
                                    || text.contains("eth_getTransactionReceipt"),
                            )
                        };
                        kept.lock().unwrap_or_else(|p| p.into_inner()).push(format!(
                            "POST {target}\n{headers}\n{}",
                            String::from_utf8_lossy(&body)
                        ));
                        let answer = client
                            .post(format!("{upstream}{target}"))
                            .header("content-type", "application/json")
                            .body(body)
                            .send()
                            .await;
                        match answer {
                            Ok(a) => {
                                let status = StatusCode::from_u16(a.status().as_u16())
                                    .unwrap_or(StatusCode::BAD_GATEWAY);
                                let mut bytes = a.bytes().await.unwrap_or_default().to_vec();
                                let (zero, deny) = match &lie {
                                    Some((hash, deny)) => (Some(hash), *deny),
                                    None => (None, false),
                                };
                                if ((zero.is_some() && asks_block_zero)
                                    || (deny && asks_a_transaction))
                                    && let Ok(mut v) =
                                        serde_json::from_slice::<serde_json::Value>(&bytes)
                                {
                                    // Another block 0; with `deny`, no transaction of the
                                    // old chain either.
                                    match zero {
                                        Some(hash) if asks_block_zero => {
                                            v["result"]["hash"] =
                                                serde_json::Value::String(hash.clone());
                                        }
                                        _ => v["result"] = serde_json::Value::Null,
                                    }
                                    bytes = serde_json::to_vec(&v).unwrap_or_default();
                                }
                                (status, bytes)
                            }
                            Err(_) => (StatusCode::BAD_GATEWAY, Vec::new()),
                        }
                    }
                };
                let app = axum::Router::new().fallback(forward);
                let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await;
            });
        });
        NodeTap {
            url,
            requests,
            lie_about_block_zero: lie,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// From now on, says block 0's hash is `hash` (everything else is the node's own).
    pub fn lie_about_block_zero(&self, hash: &str) {
        *self
            .lie_about_block_zero
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some((hash.to_owned(), false));
    }

    /// From now on, says block 0's hash is `hash` and knows no transaction (no receipt,
    /// none pending): a node that lies about its chain as a whole, its nonce counts
    /// passed through.
    pub fn lie_about_the_chain(&self, hash: &str) {
        *self
            .lie_about_block_zero
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some((hash.to_owned(), true));
    }

    /// Every request so far: `POST /path?query`, the headers, the body.
    pub fn requests(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for NodeTap {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `url` with an API key in its query, as node providers hand them out (anvil ignores
/// the query).
fn with_api_key(url: &str, key: &str) -> String {
    format!("{}/?apikey={key}", url.trim_end_matches('/'))
}

/// The test profile's path in its dir.
const PROFILE: &str = "xdg/config/bridgectl/config.toml";

/// The profile of a test over sandbox `info`, its nodes reached through `node_taps` with
/// `node_key` in their URLs.
fn profile_text(info: &SandboxInfo, node_taps: &[NodeTap; 2], node_key: &str) -> String {
    format!(
        r#"[profiles.default]
base_url = "{base}"
web3_url = "{web3}"
main_environment_id = "{menv}"
side_environment_id = "{senv}"
main_symbol = "{msym}"
side_symbol = "{ssym}"
main_decimals = {mdec}
side_decimals = {sdec}
mt_contract = "{mt}"
st_contract = "{st}"
main_chain_id = {mcid}
side_chain_id = {scid}
main_rpc_url = "{mrpc}"
side_rpc_url = "{srpc}"
main_finality = {mfin}
side_finality = {sfin}
redeem_action = "redeem"
"#,
        base = info.base_url,
        web3 = info.web3_url,
        menv = info.main.environment_id,
        senv = info.side.environment_id,
        msym = info.main.symbol,
        ssym = info.side.symbol,
        mdec = info.main.decimals,
        sdec = info.side.decimals,
        mt = info.main.token_address,
        st = info.side.token_address,
        mcid = info.main.chain_id,
        scid = info.side.chain_id,
        mrpc = with_api_key(&node_taps[0].url, node_key),
        srpc = with_api_key(&node_taps[1].url, node_key),
        mfin = info.main.confirmations,
        sfin = info.side.confirmations,
    )
}

/// A test dir wired to a live sandbox: profile, token, keystore with the dev key.
pub struct Live {
    /// The test dir.
    pub dir: Dir,
    /// The sandbox: this test's own, or the shared one.
    pub sb: Arc<LiveSandbox>,
    /// The passphrase of every key in the test keystore.
    pub passphrase: String,
    /// Secrets that must never appear in any output (the sandbox's own are added at each
    /// scan: tokens and signing keys are issued as the test runs).
    pub secrets: crate::secrets::Secrets,
    /// The test's account (label `dev` in its keystore): the sandbox's development account
    /// in a sandbox of its own, a fresh funded one in the shared sandbox.
    pub dev: Address,
    /// Its private key (hex, no 0x).
    pub dev_key: bridgectl_sandbox::Secret,
    /// Whether the test's commands talk to the platform (see [`Live::node_only`]).
    uses_platform: std::sync::atomic::AtomicBool,
    /// The stubs the profile points at instead of the main and side nodes.
    pub node_taps: [NodeTap; 2],
    /// The node API key in the profile's node URLs: the one secret a node is sent.
    node_key: String,
    /// This test's scope in the sandbox (see the module doc).
    pub scope: String,
    /// The bearer token of that scope, which the test's commands use.
    token: bridgectl_sandbox::Secret,
}

impl Live {
    /// Starts a default sandbox for the test named `name`.
    pub fn new(name: &'static str) -> Live {
        Live::with_config(name, SandboxConfig::default())
    }

    /// Starts a sandbox with `config`.
    pub fn with_config(name: &'static str, config: SandboxConfig) -> Live {
        let sb = Arc::new(LiveSandbox::start(config));
        let dev = sb.info.dev.clone();
        Live::over(name, sb, dev)
    }

    /// Joins the shared sandbox with a fresh funded account: faults, holds and hostile
    /// modes go through [`Faults`] and [`Live::hostile`] (this test's scope), the
    /// platform's requests are read through [`Live::requests`], and a managed account
    /// whose nonces are counted is one of the test's own ([`LiveSandbox::new_managed`]).
    pub fn shared(name: &'static str) -> Live {
        let sb = LiveSandbox::shared();
        let dev = sb.new_account();
        Live::over(name, sb, dev)
    }

    /// Joins the shared sandbox as its development account, the one its nodes hold
    /// unlocked (anvil's): for the one test that has a node sign for it. No other test of
    /// the shared sandbox uses that account (each takes a fresh one), and only one may
    /// take it (a second panics), so its nonces and balances are still the test's own.
    pub fn shared_dev(name: &'static str) -> Live {
        static TAKEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        assert!(
            !TAKEN.swap(true, std::sync::atomic::Ordering::SeqCst),
            "{name}: the shared sandbox's development account is another test's"
        );
        let sb = LiveSandbox::shared();
        let dev = sb.info.dev.clone();
        Live::over(name, sb, dev)
    }

    /// A test dir over `sb` whose keystore holds `dev` as `dev`.
    fn over(name: &'static str, sb: Arc<LiveSandbox>, dev: DevAccount) -> Live {
        let dir = Dir::new(name);
        let passphrase = format!("pass-{}", uuid::Uuid::new_v4().simple());
        // Node URLs of real providers carry an API key; every output is scanned for it.
        let node_key = format!("NODE-API-KEY-{}", uuid::Uuid::new_v4().simple());
        dir.write("passphrase", format!("{passphrase}\n"));
        let info = &sb.info;
        let node_taps = [
            NodeTap::start(&info.main.rpc_url),
            NodeTap::start(&info.side.rpc_url),
        ];
        dir.write(PROFILE, profile_text(info, &node_taps, &node_key));
        let scope = format!("{name}-{}", uuid::Uuid::new_v4().simple());
        let token = sb
            .state
            .issue_scoped_token(&scope)
            .unwrap_or_else(|e| panic!("a token for {scope}: {e}"));
        let mut secrets = crate::secrets::Secrets::new();
        secrets
            .add("the passphrase", &passphrase)
            .add("the access token", info.token.expose_secret())
            .add("the test's access token", token.expose_secret())
            .add("the node API key", &node_key);
        secrets.add_key("the test account's key", dev.private_key.expose_secret());
        let live = Live {
            dir,
            sb,
            passphrase,
            secrets,
            dev: dev.address,
            dev_key: dev.private_key,
            uses_platform: std::sync::atomic::AtomicBool::new(true),
            node_taps,
            node_key,
            scope,
            token,
        };
        live.import_key(live.dev_key.expose_secret(), "dev");
        live
    }

    /// Appends `toml` to the test's profile file (policy lines, limits).
    pub fn add_to_profile(&self, toml: &str) {
        let mut profile = std::fs::read_to_string(self.dir.join(PROFILE)).expect("config");
        profile.push_str(toml);
        self.dir.write(PROFILE, profile);
    }

    /// Stops this test's own sandbox and starts a new one in its place: new anvils with
    /// the same chain ids and a new block 0 (a chain reset, as a restarted sandbox or a
    /// reset testnet is), the profile pointed at it; the keystore, the journal and the
    /// signing log stay. The dev account is anvil's, funded again on the new chains.
    pub fn restart_sandbox(&mut self) {
        assert_eq!(
            Arc::strong_count(&self.sb),
            1,
            "only a test's own sandbox is restarted"
        );
        let old = std::mem::replace(
            &mut self.sb,
            Arc::new(LiveSandbox::start(SandboxConfig::default())),
        );
        drop(old);
        assert_eq!(
            self.sb.info.dev.address, self.dev,
            "anvil's dev account again"
        );
        self.node_taps = [
            NodeTap::start(&self.sb.info.main.rpc_url),
            NodeTap::start(&self.sb.info.side.rpc_url),
        ];
        self.dir.write(
            PROFILE,
            profile_text(&self.sb.info, &self.node_taps, &self.node_key),
        );
        // The new sandbox knows none of the old one's tokens: one of the same scope.
        self.token = self
            .sb
            .state
            .issue_scoped_token(&self.scope)
            .unwrap_or_else(|e| panic!("a token for {}: {e}", self.scope));
        self.secrets
            .add("the test's access token", self.token.expose_secret());
    }

    /// The node API key in the profile's node URLs.
    pub fn node_key(&self) -> &str {
        &self.node_key
    }

    /// The bearer token the test's commands use (its scope's).
    pub fn token(&self) -> &str {
        self.token.expose_secret()
    }

    /// Turns hostile mode on (one kind of tampering) or off for this test's requests.
    pub fn hostile(&self, hostile: Option<Hostile>) {
        self.sb.state.set_scoped_hostile(&self.scope, hostile);
    }

    /// The request-log lines of this test's requests to the platform, oldest first.
    pub fn requests(&self) -> Vec<String> {
        self.sb.state.request_log_of(&self.scope)
    }

    /// Waits until this test's requests have one starting with `prefix` after the first
    /// `skip`, and returns it (see [`wait_for_line`]).
    pub fn wait_for_request(&self, skip: usize, prefix: &str) -> String {
        wait_for_line(|| self.requests(), skip, prefix)
    }

    /// The `signedTx` of every submission this test made to the platform, oldest first.
    pub fn submitted(&self) -> Vec<String> {
        submissions(&self.requests())
    }

    /// Says that this test's commands talk to the nodes only (a local transfer, a plan):
    /// the check that the platform saw one of its requests is skipped.
    pub fn node_only(&self) {
        self.uses_platform
            .store(false, std::sync::atomic::Ordering::Relaxed);
    }

    /// Imports a raw key into the test keystore with the test KDF cost.
    pub fn import_key(&self, key_hex: &str, label: &str) {
        self.import_key_with(key_hex, label, &self.dir.join("passphrase"));
    }

    /// [`Live::import_key`] under the passphrase in `passphrase_file` (a key of its own).
    pub fn import_key_with(&self, key_hex: &str, label: &str, passphrase_file: &Path) {
        let out = self
            .cmd()
            .env("BRIDGECTL_PASSPHRASE_FILE", passphrase_file)
            .args(["key", "import", label, "--raw", "--unsafe-test-kdf"])
            .output_with_stdin(format!("{key_hex}\n").as_bytes());
        self.check_secrets(&out);
        assert!(
            out.status.success(),
            "key import failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A command with the token and passphrase sources set.
    pub fn cmd(&self) -> TestCommand {
        let mut c = self.dir.command();
        c.env("BRIDGECTL_ACCESS_TOKEN", self.token.expose_secret())
            .env("BRIDGECTL_PASSPHRASE_FILE", self.dir.join("passphrase"))
            .env("BRIDGECTL_JOURNAL", self.dir.join("journal.sqlite3"));
        c
    }

    /// The scanner: the test's secrets and every secret the sandbox holds or handed out.
    pub fn scan(&self) -> crate::secrets::Secrets {
        let mut scan = self.secrets.clone();
        scan.extend(&self.sb.secrets());
        scan
    }

    /// Fails the test if any secret is in the output.
    pub fn check_secrets(&self, out: &Output) {
        self.scan().scan_output("a bridgectl command", out);
    }

    /// Runs `args`, checks secrets, asserts success, parses stdout as JSON.
    pub fn ok(&self, args: &[&str]) -> serde_json::Value {
        let mut c = self.cmd();
        c.args(args).args(["--json"]);
        self.ok_cmd(c)
    }

    /// Runs a prepared command, checks secrets, asserts success, returns its output.
    pub fn run_ok(&self, mut c: TestCommand) -> Output {
        let out = c.output();
        self.check_secrets(&out);
        crate::util::assert_success(&c.cmd, &out);
        out
    }

    /// Runs a prepared command, checks secrets, asserts success, parses JSON.
    pub fn ok_cmd(&self, c: TestCommand) -> serde_json::Value {
        let out = self.run_ok(c);
        let text = String::from_utf8_lossy(&out.stdout);
        crate::util::strict_json(&text)
    }

    /// Waits for a command started with `spawn_with_stdin`, checks secrets, asserts
    /// success, parses stdout as JSON.
    pub fn finished_ok(&self, child: crate::util::KillOnDrop) -> serde_json::Value {
        let out = child.wait_with_output();
        self.check_secrets(&out);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        crate::util::strict_json(&stdout)
    }

    /// Waits for `child`, checks secrets, asserts success, returns its stdout.
    pub fn finished_stdout(&self, child: crate::util::KillOnDrop) -> String {
        let out = child.wait_with_output();
        self.check_secrets(&out);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    /// Runs `args`, checks secrets, asserts exit `code`, returns stderr.
    pub fn fails(&self, args: &[&str], code: i32) -> String {
        let mut c = self.cmd();
        c.args(args);
        let out = c.output();
        self.check_secrets(&out);
        assert_eq!(
            out.status.code(),
            Some(code),
            "expected exit {code} from {args:?}\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// The ST (side) or MT balance of `who`, from the node.
    pub fn balance(&self, side: bool, who: Address) -> U256 {
        let token = if side {
            self.sb.info.side.token_address
        } else {
            self.sb.info.main.token_address
        };
        block_on(self.sb.node(side).token_balance(token, who)).expect("balance")
    }

    /// `resume <tx_id>` with a passphrase source that counts its reads; asserts it was
    /// never read (resume sends the journal's bytes, it never signs) and returns the JSON.
    pub fn resume_unsigned(&self, tx_id: &str) -> serde_json::Value {
        let counter = crate::util::CountingPassphrase::new(&self.dir, &self.passphrase);
        let mut c = self.cmd();
        c.env("BRIDGECTL_PASSPHRASE_FILE", &counter.path)
            .args(["--json", "resume", tx_id]);
        let resumed = self.ok_cmd(c);
        assert_eq!(counter.finish(), 0, "resume read a passphrase");
        resumed
    }

    /// `(tx_id, state, signed_tx)` of every flow in the test's journal, as on disk.
    pub fn journal_rows(&self) -> Vec<(String, String, Option<String>)> {
        crate::util::journal_rows(&self.dir.join("journal.sqlite3"))
    }

    /// The `pending` nonce of `who`.
    pub fn nonce(&self, side: bool, who: Address) -> u64 {
        block_on(self.sb.node(side).pending_nonce(who)).expect("nonce")
    }

    /// Whether `hash` is mined within 30 s: for a transaction the platform sent (a managed
    /// account's), which its answer does not wait for.
    pub fn mined_soon(&self, side: bool, hash: &str) -> bool {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::time::Instant::now() < deadline {
            if self.mined(side, hash) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// Whether `hash` is a mined transaction.
    pub fn mined(&self, side: bool, hash: &str) -> bool {
        let hash: B256 = hash.parse().expect("hash");
        block_on(self.sb.node(side).receipt(hash))
            .expect("receipt")
            .is_some_and(|r| r.success)
    }
}
