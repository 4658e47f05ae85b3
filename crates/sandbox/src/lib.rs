//! bridgectl-sandbox: the token-bridge platform of `docs/platform.md`, running locally
//! over two real anvil chains, for users who want to try the whole flow and as the real
//! counterpart of every end-to-end test of bridgectl.
//!
//! [`Sandbox::start`] spawns two anvil nodes (main and side), deploys the MT ERC-20 and the
//! ST contract (Solidity in `contracts/`), funds a development account, starts the relayer
//! (swaps and redemptions), the webhook deliverer and the HTTP API (axum) on
//! `127.0.0.1:<random port>`. [`SandboxInfo`] says where everything is.
//!
//! ```no_run
//! # async fn demo() -> Result<(), bridgectl_sandbox::Error> {
//! let sandbox = bridgectl_sandbox::Sandbox::start(Default::default()).await?;
//! let info = sandbox.info();
//! println!("{} {}", info.base_url, info.dev.address);
//! sandbox.shutdown().await?;
//! # Ok(()) }
//! ```
//!
//! See the crate README for routes, error codes, the fault knobs and how "drop" looks.
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

pub mod amount;
pub mod anvil;
mod api;
pub mod chain;
pub mod config;
pub mod contracts;
mod error;
mod info;
mod mining;
pub mod postgres;
mod relayer;
pub mod rpc;
mod scope;
mod secret;
mod state;
pub mod webhooks;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use alloy_dyn_abi::DynSolValue;
use alloy_primitives::{Address, B256, Bytes, U256};
use alloy_signer_local::PrivateKeySigner;

pub use api::{ApiError, app};
pub use config::{
    ActionConfig, ChainConfig, ContractKind, FaultConfig, Hostile, Ratio, SandboxConfig,
};
pub use error::Error;
pub use info::{ChainInfo, DevAccount, SandboxInfo};
pub use secret::Secret;
pub use state::{
    AppState, DelivererState, LoggedRequest, Redemption, ReorgError, SwapAddress, SwapRecord,
};

use crate::anvil::Anvil;
use crate::chain::Chain;
use crate::config::ContractKind as Kind;
use crate::rpc::Rpc;
use crate::state::{Inner, lock};

/// Anvil's well-known dev key #0 (public test key): the bridge account that deploys,
/// mints ST, and holds the MT reserve.
const BRIDGE_KEY: &str = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
/// Anvil's well-known dev key #1 (public test key): the development account.
const DEV_KEY: &str = "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";

/// A running sandbox. Dropping it kills the anvil nodes; [`Sandbox::shutdown`] also waits
/// for them and for the HTTP server to stop.
pub struct Sandbox {
    state: AppState,
    anvils: Vec<Anvil>,
    server: Option<tokio::task::JoinHandle<()>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("info", self.info())
            .finish_non_exhaustive()
    }
}

fn signer(hex_key: &str) -> Result<PrivateKeySigner, Error> {
    let bytes = zeroize::Zeroizing::new(
        hex::decode(hex_key).map_err(|e| Error::Deploy(format!("bad built-in key: {e}")))?,
    );
    PrivateKeySigner::from_slice(&bytes)
        .map_err(|e| Error::Deploy(format!("bad built-in key: {e}")))
}

fn deploy_err(what: &str) -> impl Fn(chain::SendError) -> Error + '_ {
    move |source| Error::Setup {
        what: what.to_owned(),
        source,
    }
}

impl Sandbox {
    /// Starts everything; returns when the API answers and the contracts are mined.
    ///
    /// Call it from a thread that lives as long as the sandbox (see [`anvil`] on why).
    pub async fn start(config: SandboxConfig) -> Result<Sandbox, Error> {
        config.validate()?;
        contracts::check()?;
        let binary = anvil::find_anvil(config.anvil.as_deref())?;
        let (main_node, side_node) = tokio::join!(
            Anvil::spawn(&binary, config.main.chain_id, config.main.automine),
            Anvil::spawn(&binary, config.side.chain_id, config.side.automine),
        );
        let anvils = vec![main_node?, side_node?];
        let main = Chain::new(
            "main",
            config.main.chain_id,
            Rpc::new(anvils[0].url().to_owned()),
        );
        let side = Chain::new(
            "side",
            config.side.chain_id,
            Rpc::new(anvils[1].url().to_owned()),
        );
        // Blocks on a timer from the start: the set-up transactions of a chain without
        // automine are mined by them.
        let tickers = [
            mining::Ticker::new(config.main.block_time_ms),
            mining::Ticker::new(config.side.block_time_ms),
        ];
        let ticking = vec![
            mining::spawn(main.rpc.clone(), tickers[0].clone()),
            mining::spawn(side.rpc.clone(), tickers[1].clone()),
        ];
        for chain in [&main, &side] {
            let id = chain.rpc.chain_id().await.map_err(|source| Error::Rpc {
                chain: chain.name,
                method: "eth_chainId",
                source,
            })?;
            if id != chain.chain_id {
                return Err(Error::Deploy(format!(
                    "{} anvil reports chain id {id}, expected {}",
                    chain.name, chain.chain_id
                )));
            }
        }
        let bridge = signer(BRIDGE_KEY)?;
        let dev = signer(DEV_KEY)?;

        // Contracts and funding, sent back to back with fixed gas, then awaited together.
        let mt_dec = config.main.decimals;
        let st_dec = config.side.decimals;
        let amount = |v: &str, d: u8| amount::whole_tokens(v, d).map_err(Error::Config);
        let reserve = amount(&config.reserve, mt_dec)?;
        let dev_mt = amount(&config.dev_mt, mt_dec)?;
        let dev_st = amount(&config.dev_st, st_dec)?;
        let supply = reserve
            .checked_add(dev_mt)
            .ok_or_else(|| Error::Config("reserve + dev_mt overflows uint256".into()))?;
        let ctor = |kind: Kind, args: Vec<DynSolValue>| -> Result<Bytes, Error> {
            let mut code = contracts::bytecode(kind)?.to_vec();
            code.extend_from_slice(&DynSolValue::Tuple(args).abi_encode_params());
            Ok(code.into())
        };
        let main_nonce = main
            .rpc
            .pending_nonce(bridge.address())
            .await
            .map_err(|source| Error::Rpc {
                chain: "main",
                method: "eth_getTransactionCount",
                source,
            })?;
        let side_nonce = side
            .rpc
            .pending_nonce(bridge.address())
            .await
            .map_err(|source| Error::Rpc {
                chain: "side",
                method: "eth_getTransactionCount",
                source,
            })?;
        let mt_address = bridge.address().create(main_nonce);
        let st_address = bridge.address().create(side_nonce);
        let mt_code = ctor(
            Kind::Mt,
            vec![
                DynSolValue::String(config.main.name.clone()),
                DynSolValue::String(config.main.symbol.clone()),
                DynSolValue::Uint(U256::from(mt_dec), 8),
                DynSolValue::Uint(supply, 256),
            ],
        )?;
        let st_code = ctor(
            Kind::St,
            vec![
                DynSolValue::String(config.side.name.clone()),
                DynSolValue::String(config.side.symbol.clone()),
                DynSolValue::Uint(U256::from(st_dec), 8),
                DynSolValue::Address(bridge.address()),
            ],
        )?;
        let transfer = |to: Address, v: U256| -> Bytes {
            let mut d = contracts::TRANSFER_SELECTOR.to_vec();
            d.extend_from_slice(
                &DynSolValue::Tuple(vec![DynSolValue::Address(to), DynSolValue::Uint(v, 256)])
                    .abi_encode_params(),
            );
            d.into()
        };
        let mut mint = transfer(dev.address(), dev_st).to_vec();
        mint[..4].copy_from_slice(&contracts::MINT_SELECTOR);
        let mut waits: Vec<(&Chain, B256)> = Vec::new();
        let h = main
            .send_with_gas(&bridge, None, mt_code, Some(3_000_000))
            .await
            .map_err(deploy_err("deploying MT"))?;
        waits.push((&main, h));
        let h = side
            .send_with_gas(&bridge, None, st_code, Some(3_000_000))
            .await
            .map_err(deploy_err("deploying ST"))?;
        waits.push((&side, h));
        if !dev_mt.is_zero() {
            let h = main
                .send_with_gas(
                    &bridge,
                    Some(mt_address),
                    transfer(dev.address(), dev_mt),
                    Some(100_000),
                )
                .await
                .map_err(deploy_err("funding the dev account with MT"))?;
            waits.push((&main, h));
        }
        if !dev_st.is_zero() {
            let h = side
                .send_with_gas(&bridge, Some(st_address), mint.into(), Some(150_000))
                .await
                .map_err(deploy_err("minting ST to the dev account"))?;
            waits.push((&side, h));
        }
        for (chain, hash) in waits {
            let r = tokio::time::timeout(Duration::from_secs(60), chain.wait(hash))
                .await
                .map_err(|_| {
                    Error::Deploy(format!(
                        "{} chain: {hash} not mined within 60 s",
                        chain.name
                    ))
                })?
                .map_err(|source| Error::Rpc {
                    chain: chain.name,
                    method: "eth_getTransactionReceipt",
                    source,
                })?;
            if r.status.to::<u64>() != 1 {
                return Err(Error::Deploy(format!(
                    "{} chain: set-up transaction {hash} reverted",
                    chain.name
                )));
            }
        }

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(Error::Bind)?;
        let port = listener.local_addr().map_err(Error::Bind)?.port();
        let base_url = format!("http://127.0.0.1:{port}");
        let chain_info = |c: &ChainConfig, rpc: &Chain, token: Address| ChainInfo {
            environment_id: c.environment_id.clone(),
            chain_id: c.chain_id,
            rpc_url: rpc.rpc.url().to_owned(),
            symbol: c.symbol.clone(),
            name: c.name.clone(),
            decimals: c.decimals,
            token_address: token,
            confirmations: c.confirmations,
            block_time_ms: c.block_time_ms,
        };
        let info = SandboxInfo {
            web3_url: format!("{base_url}/web3"),
            base_url,
            token: config.token.clone(),
            access_key: config.access_key.clone(),
            main: chain_info(&config.main, &main, mt_address),
            side: chain_info(&config.side, &side, st_address),
            ratio: config.ratio,
            bridge_address: bridge.address(),
            dev: DevAccount {
                address: dev.address(),
                private_key: Secret::new(DEV_KEY),
            },
            managed_accounts: Vec::new(),
            anvil_pids: anvils.iter().map(Anvil::pid).collect(),
        };
        let mut salt = [0u8; 32];
        getrandom::fill(&mut salt).map_err(|e| Error::Deploy(format!("no randomness: {e}")))?;
        let mut tokens = HashMap::new();
        tokens.insert(config.token.expose_secret().to_owned(), None);
        let mut inner = Inner {
            info,
            main,
            side,
            ratio: config.ratio,
            poll_ms: config.relayer.poll_ms,
            relayer_confirmations: config.relayer.confirmations.max(1),
            bridge,
            actions: config
                .effective_actions()
                .into_iter()
                .map(|a| (a.name.clone(), a))
                .collect::<BTreeMap<_, _>>(),
            webhook_config: config.webhooks.clone(),
            access_key: config.access_key.clone(),
            secret_key: config.secret_key.clone(),
            tokens: Mutex::new(tokens),
            faults: RwLock::new(config.faults.clone()),
            faults_changed: tokio::sync::Notify::new(),
            hostile: RwLock::new(config.hostile),
            hostile_input: RwLock::new(None),
            scopes: Default::default(),
            request_log: Mutex::new(Vec::new()),
            managed: Mutex::new(HashMap::new()),
            funded: Mutex::new(Vec::new()),
            registered: Mutex::new(HashSet::new()),
            swap_addresses: Mutex::new(HashMap::new()),
            swaps: Mutex::new(Vec::new()),
            executions: Mutex::new(HashMap::new()),
            redemptions: Mutex::new(HashMap::new()),
            webhooks: Mutex::new(BTreeMap::new()),
            deliverers: Mutex::new(HashMap::new()),
            next_webhook_id: Mutex::new(0),
            latest_main_block: tokio::sync::watch::channel(0).0,
            swap_salt: B256::from(salt),
            tasks: Mutex::new(ticking),
            tickers,
        };
        // Managed accounts need the info's list filled before the state is shared.
        let mut managed = Vec::new();
        for _ in 0..config.managed_accounts {
            managed.push(chain::random_signer().map_err(Error::Deploy)?);
        }
        inner.info.managed_accounts = managed.iter().map(PrivateKeySigner::address).collect();
        let state = AppState(Arc::new(inner));
        let rpc_err = |source| Error::Rpc {
            chain: "main",
            method: "anvil_setBalance",
            source,
        };
        state
            .register_fee_delegation(dev.address())
            .await
            .map_err(rpc_err)?;
        for s in managed {
            state.add_managed(s).await.map_err(rpc_err)?;
        }
        relayer::spawn(state.clone()).await?;

        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let router = app(state.clone());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, router)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Sandbox {
            state,
            anvils,
            server: Some(server),
            stop: Some(stop),
        })
    }

    /// Where everything is.
    pub fn info(&self) -> &SandboxInfo {
        self.state.info()
    }

    /// The shared state, e.g. to build another router with [`app`] for in-process tests,
    /// or to change fault knobs at run time ([`AppState::set_fault`]).
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Stops the API, the relayer and the deliverers, then kills and reaps both anvils.
    pub async fn shutdown(mut self) -> Result<(), Error> {
        self.abort_tasks();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            // Open keep-alive connections may hold graceful shutdown; do not wait forever.
            if tokio::time::timeout(Duration::from_secs(2), &mut *Box::pin(server))
                .await
                .is_err()
            {
                // The task is detached and dies with the runtime.
            }
        }
        for a in std::mem::take(&mut self.anvils) {
            a.stop().await;
        }
        Ok(())
    }

    fn abort_tasks(&self) {
        for t in lock(&self.state.0.tasks).drain(..) {
            t.abort();
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.abort_tasks();
        if let Some(server) = self.server.take() {
            server.abort();
        }
        // Dropping the anvils kills them.
        self.anvils.clear();
    }
}
