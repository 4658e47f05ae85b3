//! The shared state behind the API, the relayer and the webhook deliverer.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use alloy_signer_local::PrivateKeySigner;
use serde::Serialize;
use uuid::Uuid;

use crate::chain::Chain;
use crate::config::{ActionConfig, FaultConfig, Ratio, WebhookConfig};
use crate::info::SandboxInfo;
use crate::secret::Secret;

/// Everything the routes and background tasks share. Cheap to clone.
#[derive(Clone)]
pub struct AppState(pub(crate) Arc<Inner>);

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("base_url", &self.0.info.base_url)
            .finish_non_exhaustive()
    }
}

/// How many requests the request log keeps.
pub const REQUEST_LOG_CAP: usize = 100_000;

pub(crate) struct Inner {
    pub info: SandboxInfo,
    pub main: Chain,
    pub side: Chain,
    pub ratio: Ratio,
    pub poll_ms: u64,
    /// The relayer's confirmation depth (see `RelayerConfig::confirmations`).
    pub relayer_confirmations: u64,
    pub bridge: PrivateKeySigner,
    pub actions: BTreeMap<String, ActionConfig>,
    pub webhook_config: WebhookConfig,
    pub access_key: String,
    pub secret_key: Secret,
    /// accepted bearer tokens -> expiry (unix seconds; None never expires)
    pub tokens: Mutex<HashMap<String, Option<i64>>>,
    pub faults: RwLock<BTreeMap<String, FaultConfig>>,
    /// Woken whenever a fault changes, so held requests look again.
    pub faults_changed: tokio::sync::Notify,
    pub hostile: RwLock<Option<crate::config::Hostile>>,
    /// With hostile mode on: tamper only with actions that have an input of this value
    /// (one item of a batch); `None` tampers with every action.
    pub hostile_input: RwLock<Option<String>>,
    /// Faults and hostile modes of one caller (see `scope.rs`).
    pub scopes: crate::scope::Scopes,
    /// Every request seen (see `api::log_request`), oldest first, capped.
    pub request_log: Mutex<Vec<LoggedRequest>>,
    pub managed: Mutex<HashMap<Address, PrivateKeySigner>>,
    /// accounts made by [`AppState::fund_new_account`] (their keys are handed out)
    pub funded: Mutex<Vec<PrivateKeySigner>>,
    pub registered: Mutex<HashSet<Address>>,
    /// swap address -> its record
    pub swap_addresses: Mutex<HashMap<Address, SwapAddress>>,
    pub swaps: Mutex<Vec<SwapRecord>>,
    pub executions: Mutex<HashMap<Uuid, Execution>>,
    /// side-chain tx hash -> redemption
    pub redemptions: Mutex<HashMap<B256, Redemption>>,
    pub webhooks: Mutex<BTreeMap<u64, Webhook>>,
    /// webhook id -> what its deliverer has done (kept after the webhook is gone)
    pub deliverers: Mutex<HashMap<u64, DelivererState>>,
    pub next_webhook_id: Mutex<u64>,
    pub latest_main_block: tokio::sync::watch::Sender<u64>,
    pub swap_salt: B256,
    /// background tasks (relayer, deliverers, mining timers), aborted at shutdown
    pub tasks: Mutex<Vec<tokio::task::AbortHandle>>,
    /// The chains' mining timers: main, side.
    pub tickers: [Arc<crate::mining::Ticker>; 2],
}

/// What the delivery task of one webhook has done, as it reports it: tests wait for this
/// state instead of sleeping and hoping nothing happens meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DelivererState {
    /// The last main-chain block it has finished with: delivered (acknowledged), skipped
    /// (inactive, not in the period) or abandoned (deactivated while retrying).
    pub handled_block: u64,
    /// False once it has stopped for good (webhook deleted or removed): from then on it
    /// sends nothing, and every POST it made has been answered or has timed out.
    pub running: bool,
}

/// One entry of the request log.
#[derive(Debug, Clone)]
pub struct LoggedRequest {
    /// `METHOD /path?query body`.
    pub line: String,
    /// Every header, `name: value` one per line, with the credentials the API accepts at
    /// their own place shown as a placeholder (see `api::log_request`).
    pub headers: String,
    /// The scope of the token it was made with (see
    /// [`AppState::issue_scoped_token`]), if that token has one.
    pub scope: Option<String>,
}

/// Locks a std mutex, recovering from poisoning (a panicked holder leaves plain data).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// An issued swap address.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SwapAddress {
    /// The address MT is sent to.
    pub swap_address: Address,
    /// Who receives the ST.
    pub user_address: Address,
    /// Main environment id.
    pub main_environment_id: String,
    /// Side environment id.
    pub side_environment_id: String,
    /// MT symbol.
    pub main_token_symbol: String,
    /// ST symbol.
    pub side_token_symbol: String,
}

/// One MT deposit seen at a swap address, and what the relayer did with it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SwapRecord {
    /// The MT transfer on the main chain.
    pub main_tx_hash: B256,
    /// Who sent the MT.
    pub from: Address,
    /// The swap address it went to.
    pub swap_address: Address,
    /// Who gets the ST.
    pub user_address: Address,
    /// MT base units received.
    pub mt_amount: String,
    /// ST base units credited (or that would have been).
    pub st_amount: String,
    /// `minting`, `completed` or `failed`.
    pub status: String,
    /// The ST mint on the side chain.
    pub side_tx_hash: Option<B256>,
    /// Why it failed.
    pub reason: Option<String>,
}

/// A transaction action call, remembered so its txId is never reused and so the redemption
/// it leads to can be found by txId.
#[derive(Debug, Clone)]
pub struct Execution {
    /// The sender.
    pub from: Address,
    /// Chain of the rawTx.
    pub chain_id: u64,
    /// Nonce of the rawTx (EOA case).
    pub nonce: Option<u64>,
    /// Contract called.
    pub to: Address,
    /// Call data.
    pub data: Bytes,
    /// Hash once known (managed: at once; EOA: when the signed tx is submitted).
    pub tx_hash: Option<B256>,
}

/// A redemption of ST into MT.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Redemption {
    /// The execute txId, when the redeem came through a transaction action.
    pub tx_id: Option<Uuid>,
    /// The ST `redeem` transaction on the side chain.
    pub tx_hash: B256,
    /// `requested`, `confirmed`, `completed` or `failed`.
    pub status: String,
    /// Side environment id.
    pub side_environment_id: String,
    /// Main environment id.
    pub main_environment_id: String,
    /// Who redeemed (and receives the MT).
    pub redeemer: Address,
    /// ST base units redeemed (known once confirmed).
    pub st_amount: Option<String>,
    /// MT base units paid (known once confirmed).
    pub mt_amount: Option<String>,
    /// The MT payout on the main chain.
    pub main_tx_hash: Option<B256>,
    /// Why it failed.
    pub reason: Option<String>,
    /// When the sandbox first saw it (ISO-8601).
    pub created_at: String,
    /// Last status change (ISO-8601).
    pub updated_at: String,
}

/// A webhook subscription.
#[derive(Debug, Clone)]
pub struct Webhook {
    /// Numeric id.
    pub id: u64,
    /// Lowercase chain path segment it was created under.
    pub chain: String,
    /// Lowercase network path segment.
    pub network: String,
    /// Event type.
    pub event_type: String,
    /// Free text.
    pub description: String,
    /// `{webhookUrl}`.
    pub notification: serde_json::Value,
    /// Event-type specific filter.
    pub condition: serde_json::Value,
    /// Deliveries on or off.
    pub is_active: bool,
    /// HMAC key for `x-signature`.
    pub signing_key: Secret,
    /// ISO-8601 creation time.
    pub created_at: String,
    /// Deliveries made so far (the next sequenceNumber is this + 1).
    pub sequence: u64,
    /// Failed POSTs in a row.
    pub consecutive_failures: u32,
    /// Successful deliveries (for tests and the list).
    pub delivered: u64,
}

impl Webhook {
    /// The listener URL.
    pub fn url(&self) -> Option<String> {
        self.notification
            .get("webhookUrl")?
            .as_str()
            .map(str::to_owned)
    }

    /// The record as the web3 API shows it (with the signing key, as the successor API does).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "subscriptionId": self.id.to_string(),
            "description": self.description,
            "protocol": self.chain.to_uppercase(),
            "network": self.network.to_uppercase(),
            "subscriptionType": "WEBHOOK",
            "eventType": self.event_type,
            "notification": self.notification,
            "condition": self.condition,
            "isActive": self.is_active,
            "signingKey": self.signing_key.expose_secret(),
            "createdAt": self.created_at,
        })
    }
}

/// Now as ISO-8601 UTC.
pub(crate) fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

impl AppState {
    /// What the sandbox tells its users (URLs, ids, accounts).
    pub fn info(&self) -> &SandboxInfo {
        &self.0.info
    }

    /// Sets (or clears, with the default) the fault knobs of one route at run time.
    pub fn set_fault(&self, route: &str, fault: FaultConfig) {
        let mut f = self
            .0
            .faults
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if fault == FaultConfig::default() {
            f.remove(route);
        } else {
            f.insert(route.to_owned(), fault);
        }
        drop(f);
        self.0.faults_changed.notify_waiters();
    }

    /// Waits while `route` is held (see [`FaultConfig::hold`]).
    pub(crate) async fn wait_while_held(&self, route: &str) {
        loop {
            let changed = self.0.faults_changed.notified();
            let mut changed = std::pin::pin!(changed);
            // Registered before the check, so a release in between is not missed.
            changed.as_mut().enable();
            if !self.fault(route).is_some_and(|f| f.hold) {
                return;
            }
            changed.await;
        }
    }

    /// Every request the API has seen: `METHOD /path?query body`, without the
    /// `Authorization` header. Capped at 100,000 entries.
    pub fn request_log(&self) -> Vec<String> {
        lock(&self.0.request_log)
            .iter()
            .map(|r| r.line.clone())
            .collect()
    }

    /// The request log with every header of every request (see [`LoggedRequest`]).
    pub fn request_log_with_headers(&self) -> Vec<LoggedRequest> {
        lock(&self.0.request_log).clone()
    }

    pub(crate) fn log_request(&self, entry: LoggedRequest) {
        let mut log = lock(&self.0.request_log);
        if log.len() < REQUEST_LOG_CAP {
            log.push(entry);
        }
    }

    /// Whether `token` is a bearer token this sandbox issued (expired or not).
    pub(crate) fn is_issued_token(&self, token: &str) -> bool {
        lock(&self.0.tokens).contains_key(token)
    }

    /// Every secret this sandbox holds or has handed out, for leak scans: the access and
    /// secret keys, every issued token, every webhook signing key, and the private keys of the dev
    /// account, the managed accounts and the bridge.
    pub fn secrets(&self) -> Vec<String> {
        let key = |s: &PrivateKeySigner| hex::encode(s.credential().to_bytes());
        let mut all = vec![
            self.0.access_key.clone(),
            self.0.secret_key.expose_secret().to_owned(),
            self.0.info.dev.private_key.expose_secret().to_owned(),
            key(&self.0.bridge),
        ];
        all.extend(lock(&self.0.tokens).keys().cloned());
        all.extend(
            lock(&self.0.webhooks)
                .values()
                .map(|w| w.signing_key.expose_secret().to_owned()),
        );
        all.extend(lock(&self.0.managed).values().map(key));
        all.extend(lock(&self.0.funded).iter().map(key));
        all
    }

    /// Turns hostile-platform mode on (with one kind of tampering, for every action) or
    /// off.
    pub fn set_hostile(&self, hostile: Option<crate::config::Hostile>) {
        *self
            .0
            .hostile_input
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        self.set_hostile_kind(hostile);
    }

    fn set_hostile_kind(&self, hostile: Option<crate::config::Hostile>) {
        *self
            .0
            .hostile
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = hostile;
    }

    /// Hostile mode for the actions with an input equal to `input` only (e.g. the one
    /// amount of a batch's item 500), so a test can prove one tampered item among many
    /// is refused without stopping or weakening the others.
    pub fn set_hostile_for_input(&self, hostile: crate::config::Hostile, input: &str) {
        *self
            .0
            .hostile_input
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(input.to_owned());
        self.set_hostile_kind(Some(hostile));
    }

    /// Whether hostile mode (when on) applies to an action with `inputs`: always when
    /// it is the request's scope's own.
    pub(crate) fn hostile_targets(&self, inputs: &BTreeMap<String, serde_json::Value>) -> bool {
        if self.scoped_hostile().is_some() {
            return true;
        }
        let only = self
            .0
            .hostile_input
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        only.is_none_or(|v| inputs.values().any(|i| i.as_str() == Some(v.as_str())))
    }

    /// Funds `address` for tests and benchmarks: registered for fee delegation (gas on
    /// both chains), `mt` MT paid and `st` ST minted by the bridge (a zero amount is
    /// skipped), both mined before this returns.
    pub async fn fund(&self, address: Address, mt: U256, st: U256) -> Result<(), crate::Error> {
        let rpc_err = |chain, method| {
            move |source| crate::Error::Rpc {
                chain,
                method,
                source,
            }
        };
        self.register_fee_delegation(address)
            .await
            .map_err(rpc_err("main", "anvil_setBalance"))?;
        let inner = &self.0;
        let pay = |selector: [u8; 4], v: U256| {
            use alloy_dyn_abi::DynSolValue;
            crate::contracts::call(
                selector,
                vec![DynSolValue::Address(address), DynSolValue::Uint(v, 256)],
            )
        };
        let payments = [
            (
                &inner.main,
                inner.info.main.token_address,
                mt,
                pay(crate::contracts::TRANSFER_SELECTOR, mt),
            ),
            (
                &inner.side,
                inner.info.side.token_address,
                st,
                pay(crate::contracts::MINT_SELECTOR, st),
            ),
        ];
        for (chain, token, amount, data) in payments {
            if amount.is_zero() {
                continue;
            }
            let hash = chain
                .send(&inner.bridge, Some(token), data)
                .await
                .map_err(|source| crate::Error::Setup {
                    what: format!("paying {address} on the {} chain", chain.name),
                    source,
                })?;
            let receipt = chain
                .wait(hash)
                .await
                .map_err(rpc_err(chain.name, "eth_getTransactionReceipt"))?;
            if receipt.status.to::<u64>() != 1 {
                return Err(crate::Error::Deploy(format!(
                    "{} chain: paying {address} reverted ({hash})",
                    chain.name
                )));
            }
        }
        Ok(())
    }

    /// The hostile mode the current request meets: its scope's, else the sandbox's.
    pub(crate) fn hostile(&self) -> Option<crate::config::Hostile> {
        if let Some(h) = self.scoped_hostile() {
            return Some(h);
        }
        *self
            .0
            .hostile
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The fault knobs of `route` the current request meets: its scope's, else the
    /// sandbox's.
    pub(crate) fn fault(&self, route: &str) -> Option<FaultConfig> {
        if let Some(f) = self.scoped_fault(route) {
            return Some(f);
        }
        self.0
            .faults
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(route)
            .cloned()
    }

    /// The deposits seen at swap addresses, in order.
    pub fn swaps(&self) -> Vec<SwapRecord> {
        lock(&self.0.swaps).clone()
    }

    /// A redemption by its side-chain tx hash.
    pub fn redemption(&self, hash: B256) -> Option<Redemption> {
        lock(&self.0.redemptions).get(&hash).cloned()
    }

    /// A platform that claims what the chain does not show: the redemption of `hash`
    /// says `status` (with `reason`) whatever its transaction's fate, until the relayer
    /// sees that transaction mined and moves it on. `false` when no redemption of `hash`
    /// was requested.
    pub fn claim_redemption_status(&self, hash: B256, status: &str, reason: &str) -> bool {
        match lock(&self.0.redemptions).get_mut(&hash) {
            Some(r) => {
                r.status = status.to_owned();
                r.reason = Some(reason.to_owned());
                r.updated_at = now();
                true
            }
            None => false,
        }
    }

    /// What the deliverer of webhook `id` has done, if one was ever started.
    pub fn deliverer(&self, id: u64) -> Option<DelivererState> {
        lock(&self.0.deliverers).get(&id).copied()
    }

    /// Webhooks currently registered: (id, active, delivered, consecutive failures).
    pub fn webhook_status(&self) -> Vec<(u64, bool, u64, u32)> {
        lock(&self.0.webhooks)
            .values()
            .map(|w| (w.id, w.is_active, w.delivered, w.consecutive_failures))
            .collect()
    }

    /// Whether `address` is registered for fee delegation.
    pub fn is_registered(&self, address: Address) -> bool {
        lock(&self.0.registered).contains(&address)
    }

    /// Registers `address` for fee delegation: the sandbox models the delegated gas by
    /// topping the account up to 100 ETH on both chains.
    pub async fn register_fee_delegation(
        &self,
        address: Address,
    ) -> Result<(), crate::rpc::RpcError> {
        let floor = U256::from(100u64) * U256::from(10u64).pow(U256::from(18u64));
        for chain in [&self.0.main, &self.0.side] {
            if chain.rpc.balance(address).await? < floor {
                chain.rpc.set_balance(address, floor).await?;
            }
        }
        lock(&self.0.registered).insert(address);
        Ok(())
    }

    /// Adds a managed account (the sandbox holds its key), registered and funded.
    pub async fn add_managed(
        &self,
        signer: PrivateKeySigner,
    ) -> Result<Address, crate::rpc::RpcError> {
        let address = signer.address();
        self.register_fee_delegation(address).await?;
        lock(&self.0.managed).insert(address, signer);
        Ok(address)
    }

    /// A new account like the development one, with a fresh random key: `mt` and `st`
    /// (base units) paid by the bridge, gas, fee delegation registered. Returns when the
    /// payments are mined. Tests that share one sandbox each take their own account, so
    /// that no test's nonces or balances move under another's feet.
    pub async fn fund_new_account(
        &self,
        mt: U256,
        st: U256,
    ) -> Result<crate::info::DevAccount, crate::Error> {
        let signer = crate::chain::random_signer().map_err(crate::Error::Deploy)?;
        self.fund(signer.address(), mt, st).await?;
        let address = signer.address();
        let key = hex::encode(signer.credential().to_bytes());
        lock(&self.0.funded).push(signer);
        Ok(crate::info::DevAccount {
            address,
            private_key: Secret::new(key),
        })
    }

    /// The swap address for one (user, environments, symbols): derived, so the same on
    /// every call, and unique per sandbox (salted).
    pub(crate) fn swap_address(&self, rec: &SwapAddress) -> Address {
        let mut pre = Vec::new();
        pre.extend_from_slice(b"bridgectl-sandbox swap address");
        pre.extend_from_slice(self.0.swap_salt.as_slice());
        pre.extend_from_slice(rec.user_address.as_slice());
        for s in [
            &rec.main_environment_id,
            &rec.side_environment_id,
            &rec.main_token_symbol,
            &rec.side_token_symbol,
        ] {
            pre.extend_from_slice(&(s.len() as u64).to_be_bytes());
            pre.extend_from_slice(s.as_bytes());
        }
        Address::from_slice(&keccak256(&pre)[12..])
    }
}

/// Why a chain could not be reorganised.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReorgError {
    /// Not `main` or `side`.
    #[error("no chain {0:?}: `main` or `side`")]
    NoSuchChain(String),
    /// Deeper than the chain (or 0).
    #[error("depth {depth} on a chain of {blocks} blocks: 1 to {max}", max = blocks.saturating_sub(1))]
    Depth {
        /// Asked.
        depth: u64,
        /// The chain's blocks (its head plus one).
        blocks: u64,
    },
    /// The node refused.
    #[error("the node refused: {0}")]
    Node(#[from] crate::rpc::RpcError),
}

impl AppState {
    /// The chain named `main` or `side`, with its mining timer.
    fn chain_named(
        &self,
        chain: &str,
    ) -> Result<(&crate::chain::Chain, &crate::mining::Ticker), ReorgError> {
        match chain {
            "main" => Ok((&self.0.main, &self.0.tickers[0])),
            "side" => Ok((&self.0.side, &self.0.tickers[1])),
            other => Err(ReorgError::NoSuchChain(other.to_owned())),
        }
    }

    /// Sets how chain `chain` (`main` or `side`) mines: a block for every transaction as
    /// it arrives (`automine`), and one every `interval_ms` besides (0: none on a timer).
    /// Both off, transactions wait in the node's pool until a block is mined
    /// (`evm_mine`) or mining starts again.
    pub async fn set_mining(
        &self,
        chain: &str,
        automine: bool,
        interval_ms: u64,
    ) -> Result<(), ReorgError> {
        let (chain, ticker) = self.chain_named(chain)?;
        chain
            .rpc
            .call::<serde_json::Value>("evm_setAutomine", serde_json::json!([automine]))
            .await?;
        ticker.set(interval_ms);
        Ok(())
    }

    /// Reorganises chain `chain` (`main` or `side`) `depth` blocks deep: its newest
    /// `depth` blocks are replaced by as many empty ones (anvil's `anvil_reorg`), and
    /// the transactions in them are gone (a careful sender sends them again; the
    /// relayer does, for its own). Returns the head before and after.
    pub async fn reorg(&self, chain: &str, depth: u64) -> Result<(u64, u64), ReorgError> {
        let (chain, _) = self.chain_named(chain)?;
        let head = chain.rpc.block_number().await?;
        if depth == 0 || depth > head {
            return Err(ReorgError::Depth {
                depth,
                blocks: head + 1,
            });
        }
        chain.rpc.reorg(depth).await?;
        Ok((head, chain.rpc.block_number().await?))
    }
}

impl AppState {
    /// Issues a bearer token that never expires and whose requests are in `scope`: the
    /// faults and hostile mode set for `scope` apply to them (and to no other request),
    /// and the request log marks them with `scope`. Tokens of one scope share it. So
    /// tests that run side by side against one sandbox can each meet faults of their own
    /// and tell their requests from everyone else's; the chains, the relayer and the
    /// webhook deliverer stay the whole sandbox's.
    pub fn issue_scoped_token(&self, scope: &str) -> Result<Secret, crate::Error> {
        let mut b = [0u8; 32];
        getrandom::fill(&mut b).map_err(|e| crate::Error::Deploy(format!("no randomness: {e}")))?;
        let token = hex::encode(b);
        lock(&self.0.tokens).insert(token.clone(), None);
        self.0.scopes.add_token(token.clone(), scope);
        Ok(Secret::new(token))
    }

    /// Sets (or clears, with the default) the fault knobs of `route` for the requests of
    /// `scope` only. They take the place of the route's sandbox-wide knobs for those
    /// requests.
    pub fn set_scoped_fault(&self, scope: &str, route: &str, fault: FaultConfig) {
        self.0.scopes.set_fault(scope, route, fault);
        self.0.faults_changed.notify_waiters();
    }

    /// Turns hostile mode on (one kind of tampering, for every action, signature and
    /// platform-built transaction) or off for the requests of `scope` only.
    pub fn set_scoped_hostile(&self, scope: &str, hostile: Option<crate::config::Hostile>) {
        self.0.scopes.set_hostile(scope, hostile);
    }

    /// The fault knobs `route` has for the current request's scope, if it has any.
    pub(crate) fn scoped_fault(&self, route: &str) -> Option<FaultConfig> {
        self.0.scopes.fault(route)
    }

    /// The hostile mode of the current request's scope, if it has one.
    pub(crate) fn scoped_hostile(&self) -> Option<crate::config::Hostile> {
        self.0.scopes.hostile()
    }

    /// The request log's lines (as [`AppState::request_log`]) of the requests in `scope`
    /// only, oldest first.
    pub fn request_log_of(&self, scope: &str) -> Vec<String> {
        lock(&self.0.request_log)
            .iter()
            .filter(|r| r.scope.as_deref() == Some(scope))
            .map(|r| r.line.clone())
            .collect()
    }
}
