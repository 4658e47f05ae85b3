//! [`SandboxInfo`]: where everything of a running sandbox is, as its users see it.

use alloy_primitives::Address;

use crate::config::Ratio;
use crate::secret::Secret;

/// One chain as the sandbox's users see it.
#[derive(Debug, Clone)]
pub struct ChainInfo {
    /// The platform environment id.
    pub environment_id: String,
    /// EIP-155 chain id.
    pub chain_id: u64,
    /// The anvil JSON-RPC URL.
    pub rpc_url: String,
    /// The token's symbol.
    pub symbol: String,
    /// The token's name.
    pub name: String,
    /// The token's decimals.
    pub decimals: u8,
    /// The token contract.
    pub token_address: Address,
    /// The confirmations that make a fact final on this chain, for a client's profile
    /// (as `main_finality` / `side_finality`).
    pub confirmations: u64,
    /// Its interval mining, in milliseconds (0: none on a timer).
    pub block_time_ms: u64,
}

/// The funded development account: MT and ST at start, gas, fee-delegation registered.
/// Its key is anvil's public dev key #1, handed out for tests and for trying things.
#[derive(Debug, Clone)]
pub struct DevAccount {
    /// The address.
    pub address: Address,
    /// The private key, 64 hex digits without 0x.
    pub private_key: Secret,
}

/// Where everything of a running sandbox is.
#[derive(Debug, Clone)]
pub struct SandboxInfo {
    /// `{base_url}` of the platform API, e.g. `http://127.0.0.1:40123`.
    pub base_url: String,
    /// `{web3_url}` of the web3 API (`{base_url}/web3`).
    pub web3_url: String,
    /// A bearer token that is always accepted.
    pub token: Secret,
    /// The access key for `POST /svc/v2/auth-tokens`.
    pub access_key: String,
    /// The main chain and its MT.
    pub main: ChainInfo,
    /// The side chain and its ST.
    pub side: ChainInfo,
    /// The swap ratio: `mt` whole MT are worth `st` whole ST.
    pub ratio: Ratio,
    /// The bridge account (mints ST, pays redemptions from its MT reserve).
    pub bridge_address: Address,
    /// The funded, registered development account.
    pub dev: DevAccount,
    /// Managed accounts created at start (the sandbox holds their keys).
    pub managed_accounts: Vec<Address>,
    /// Process ids of the two anvil nodes (for checks that none is left behind).
    pub anvil_pids: Vec<u32>,
}
