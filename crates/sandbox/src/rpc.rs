//! A small JSON-RPC client for the two anvil nodes: only the calls the sandbox makes, with
//! the node's error code and message kept so they can be mapped to platform errors.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use alloy_primitives::{Address, B256, Bytes, U64, U256};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// A failed JSON-RPC call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RpcError {
    /// The node could not be reached or answered something that is not JSON-RPC.
    #[error("node unreachable")]
    Transport(#[source] reqwest::Error),
    /// The node answered with a JSON-RPC error.
    #[error("node error {code}: {message}")]
    Node {
        /// JSON-RPC error code.
        code: i64,
        /// The node's message (e.g. "nonce too low").
        message: String,
    },
    /// The result did not have the expected shape.
    #[error("unexpected result: {0}")]
    Decode(String),
    /// The result of a method did not deserialize.
    #[error("unexpected result of {method}")]
    Result {
        /// The method.
        method: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
}

/// A log entry, as much of it as the relayer reads.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Log {
    /// The emitting contract.
    pub address: Address,
    /// Indexed topics.
    pub topics: Vec<B256>,
    /// Non-indexed data.
    pub data: Bytes,
    /// The block it is in.
    pub block_number: U64,
    /// The transaction that emitted it.
    pub transaction_hash: B256,
    /// Its index in the block.
    #[serde(default)]
    pub log_index: U64,
}

/// A transaction receipt, as much of it as the sandbox reads.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Receipt {
    /// 1 success, 0 reverted.
    pub status: U64,
    /// The block it is in.
    pub block_number: U64,
    /// The sender.
    pub from: Address,
    /// Set for contract creations.
    #[serde(default)]
    pub contract_address: Option<Address>,
    /// Logs emitted.
    pub logs: Vec<Log>,
}

/// A JSON-RPC endpoint.
#[derive(Clone, Debug)]
pub struct Rpc {
    url: String,
    http: reqwest::Client,
    id: Arc<AtomicU64>,
}

impl Rpc {
    /// A client for `url`.
    pub fn new(url: String) -> Rpc {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap_or_default();
        Rpc {
            url,
            http,
            id: Arc::new(AtomicU64::new(1)),
        }
    }

    /// The node's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// One call.
    pub async fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Value,
    ) -> Result<T, RpcError> {
        let id = self.id.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let resp: Value = self
            .http
            .post(&self.url)
            .json(&body)
            .send()
            .await
            .map_err(RpcError::Transport)?
            .json()
            .await
            .map_err(RpcError::Transport)?;
        if let Some(err) = resp.get("error") {
            return Err(RpcError::Node {
                code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: err
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("(no message)")
                    .to_owned(),
            });
        }
        let result = resp.get("result").cloned().unwrap_or(Value::Null);
        serde_json::from_value(result).map_err(|source| RpcError::Result {
            method: method.to_owned(),
            source,
        })
    }

    /// `request` (a JSON-RPC request as a client sent it) passed to the node, and its
    /// answer as the node gave it: the chain's second RPC endpoint
    /// (`/sandbox/v1/chains/{chain}/rpc`).
    pub async fn forward(&self, request: &Value) -> Result<Value, RpcError> {
        self.http
            .post(&self.url)
            .json(request)
            .send()
            .await
            .map_err(RpcError::Transport)?
            .json()
            .await
            .map_err(RpcError::Transport)
    }

    /// `eth_chainId`.
    pub async fn chain_id(&self) -> Result<u64, RpcError> {
        Ok(self.call::<U64>("eth_chainId", json!([])).await?.to())
    }

    /// `eth_blockNumber`.
    pub async fn block_number(&self) -> Result<u64, RpcError> {
        Ok(self.call::<U64>("eth_blockNumber", json!([])).await?.to())
    }

    /// `eth_getTransactionCount(address, "pending")`: the next usable nonce.
    pub async fn pending_nonce(&self, address: Address) -> Result<u64, RpcError> {
        Ok(self
            .call::<U64>("eth_getTransactionCount", json!([address, "pending"]))
            .await?
            .to())
    }

    /// `eth_gasPrice`.
    pub async fn gas_price(&self) -> Result<u128, RpcError> {
        let p: U256 = self.call("eth_gasPrice", json!([])).await?;
        u128::try_from(p).map_err(|_| RpcError::Decode("gas price overflows u128".into()))
    }

    /// `eth_estimateGas` of a call from `from` to `to` with `data`.
    pub async fn estimate_gas(
        &self,
        from: Address,
        to: Address,
        data: &Bytes,
    ) -> Result<u64, RpcError> {
        Ok(self
            .call::<U64>(
                "eth_estimateGas",
                json!([{"from": from, "to": to, "data": data}]),
            )
            .await?
            .to())
    }

    /// `eth_call` at the latest block.
    pub async fn eth_call(
        &self,
        from: Option<Address>,
        to: Address,
        data: &Bytes,
    ) -> Result<Bytes, RpcError> {
        let mut tx = json!({"to": to, "data": data});
        if let Some(from) = from {
            tx["from"] = json!(from);
        }
        self.call("eth_call", json!([tx, "latest"])).await
    }

    /// `eth_sendRawTransaction`.
    pub async fn send_raw(&self, raw: &[u8]) -> Result<B256, RpcError> {
        self.call(
            "eth_sendRawTransaction",
            json!([Bytes::copy_from_slice(raw)]),
        )
        .await
    }

    /// `eth_getTransactionReceipt` (`None` while pending).
    pub async fn receipt(&self, hash: B256) -> Result<Option<Receipt>, RpcError> {
        self.call("eth_getTransactionReceipt", json!([hash])).await
    }

    /// `eth_getLogs` over `from..=to` for one contract and one event topic.
    pub async fn logs(
        &self,
        address: Address,
        topic0: B256,
        from: u64,
        to: u64,
    ) -> Result<Vec<Log>, RpcError> {
        self.call(
            "eth_getLogs",
            json!([{
                "address": address,
                "topics": [topic0],
                "fromBlock": U64::from(from),
                "toBlock": U64::from(to),
            }]),
        )
        .await
    }

    /// `eth_getBlockByNumber(n, false)` as raw JSON.
    pub async fn block(&self, number: u64) -> Result<Value, RpcError> {
        self.call("eth_getBlockByNumber", json!([U64::from(number), false]))
            .await
    }

    /// `eth_getBalance` at the latest block.
    pub async fn balance(&self, address: Address) -> Result<U256, RpcError> {
        self.call("eth_getBalance", json!([address, "latest"]))
            .await
    }

    /// Whether the node knows transaction `hash` at all (mined or in its pool):
    /// `eth_getTransactionByHash` answers it.
    pub async fn knows(&self, hash: B256) -> Result<bool, RpcError> {
        let v: Value = self.call("eth_getTransactionByHash", json!([hash])).await?;
        Ok(!v.is_null())
    }

    /// `anvil_reorg(depth, [])`: the newest `depth` blocks replaced by as many empty ones;
    /// the transactions in them are gone (not back in the pool), as after a real
    /// reorganisation that the rest of the network never saw them in.
    ///
    /// anvil gives the replacing blocks the old ones' times and runs its clock on from
    /// there, behind the wall clock; a real chain's next blocks carry the time they are
    /// made, so the node's clock is set to now after the reorganisation (else a credit
    /// made again after it would seem older than the transfer it pays for).
    pub async fn reorg(&self, depth: u64) -> Result<(), RpcError> {
        self.call::<Value>("anvil_reorg", json!([depth, []]))
            .await?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.call::<Value>("anvil_setTime", json!([now]))
            .await
            .map(|_| ())
    }

    /// `anvil_setBalance`: how the sandbox pays gas for fee-delegation-registered accounts.
    pub async fn set_balance(&self, address: Address, wei: U256) -> Result<(), RpcError> {
        self.call::<Value>("anvil_setBalance", json!([address, wei]))
            .await
            .map(|_| ())
    }
}
