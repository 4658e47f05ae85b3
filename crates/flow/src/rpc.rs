//! A small JSON-RPC client for an EVM node: the direct path the spec allows for redeem
//! ("a node RPC endpoint and the contract address"), nonces from `pending`, gas prices,
//! receipts and token balances.
//!
//! Deliberately tiny: a handful of methods, typed results, the same error type as the
//! platform client. Node URLs carry no secret here, but plain http to a non-loopback node
//! is still refused unless it is https, because a lying node can feed a wrong chain id or
//! nonce.

use std::time::Duration;

use alloy_primitives::{Address, B256, U256};
use serde_json::{Value, json};

use crate::Error;
use crate::client::check_url_safe_for_secrets;
use crate::node::{BlockFacts, Node, NodeFuture, balance_of_call, is_already_known};
/// What a node answers, as the flows read it (defined with [`Node`]).
pub use crate::node::{BlockId, Log, Receipt, TxPresence};
use bridgectl_tx::TransactionSigner;

/// A node's JSON-RPC endpoint.
#[derive(Debug, Clone)]
pub struct NodeClient {
    http: reqwest::Client,
    url: reqwest::Url,
    timing: crate::timing::Timing,
    /// What it is called in messages: `node`, or `signing endpoint` for an
    /// [`RpcSigner`]'s (the same protocol, another role).
    role: &'static str,
}

/// The widest block range asked of `eth_getLogs` at once: public nodes refuse wider
/// ranges (many cap them at 1,000 to 10,000 blocks), and a narrow range keeps each answer
/// small.
pub const MAX_LOG_RANGE: u64 = 1_000;

/// One log of an `eth_getLogs` answer, read strictly.
fn parse_log(v: &Value) -> Result<Log, Error> {
    let bad = |expected: &str| Error::UnexpectedShape {
        what: "a log of eth_getLogs".into(),
        expected: expected.into(),
        data: v.clone(),
    };
    let hash = |field: &str| -> Result<B256, Error> {
        v[field]
            .as_str()
            .and_then(|h| h.parse().ok())
            .ok_or_else(|| bad(&format!("{field}: a 32-byte hash")))
    };
    let topics = v["topics"]
        .as_array()
        .ok_or_else(|| bad("topics: an array"))?
        .iter()
        .map(|t| t.as_str().and_then(|h| h.parse().ok()))
        .collect::<Option<Vec<B256>>>()
        .ok_or_else(|| bad("topics: 32-byte hashes"))?;
    let data = v["data"]
        .as_str()
        .and_then(|d| d.strip_prefix("0x"))
        .and_then(|d| hex::decode(d).ok())
        .ok_or_else(|| bad("data: 0x-hex bytes"))?;
    Ok(Log {
        address: v["address"]
            .as_str()
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| bad("address: a 20-byte address"))?,
        block_number: to_u64(parse_quantity(&v["blockNumber"], "log block")?, "log block")?,
        block_hash: hash("blockHash")?,
        transaction_hash: hash("transactionHash")?,
        log_index: to_u64(parse_quantity(&v["logIndex"], "log index")?, "log index")?,
        topics,
        data,
        removed: v["removed"].as_bool().unwrap_or(false),
    })
}

fn parse_quantity(v: &Value, what: &str) -> Result<U256, Error> {
    v.as_str()
        .and_then(|s| s.strip_prefix("0x"))
        .and_then(|h| U256::from_str_radix(h, 16).ok())
        .ok_or_else(|| Error::UnexpectedShape {
            what: what.to_owned(),
            expected: "a 0x-hex quantity".into(),
            data: v.clone(),
        })
}

fn to_u64(v: U256, what: &str) -> Result<u64, Error> {
    u64::try_from(v).map_err(|_| Error::UnexpectedShape {
        what: what.to_owned(),
        expected: "a quantity below 2^64".into(),
        data: Value::String(v.to_string()),
    })
}

impl NodeClient {
    /// This client, counting its HTTP waits and polls in `timing`.
    pub(crate) fn counted_in(mut self, timing: &crate::timing::Timing) -> Self {
        self.timing = timing.clone();
        self
    }

    /// A client for the node at `url`.
    pub fn new(url: &str) -> Result<Self, Error> {
        Self::with_timeout(url, Duration::from_secs(30))
    }

    /// A client for the endpoint at `url` whose calls may take up to `timeout` (a
    /// signing endpoint waits for a person).
    pub fn with_timeout(url: &str, timeout: Duration) -> Result<Self, Error> {
        let url = check_url_safe_for_secrets(url)?;
        let http = crate::http::client_builder(&url)
            .connect_timeout(Duration::from_secs(5))
            .timeout(timeout)
            .build()
            .map_err(|e| Error::Http {
                what: "building the HTTP client".into(),
                source: e.without_url(),
            })?;
        Ok(Self {
            http,
            url,
            timing: crate::timing::Timing::default(),
            role: "node",
        })
    }

    /// One JSON-RPC call; a JSON-RPC error becomes [`Error::Platform`] with code
    /// `RPC_<code>` so node errors read like platform errors.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, Error> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let started = std::time::Instant::now();
        let answer = async {
            let resp = self
                .http
                .post(self.url.clone())
                .json(&body)
                .send()
                .await
                .map_err(|source| Error::Http {
                    what: format!("{} {method}", self.role),
                    // reqwest's text quotes the URL, and node URLs carry API keys.
                    source: source.without_url(),
                })?;
            let status = resp.status().as_u16();
            let bytes = crate::http::read_body(resp)
                .await
                .map_err(|source| Error::Body {
                    what: format!("reading the {}'s answer to {method}", self.role),
                    source,
                })?;
            // Duplicate keys refused (the pending nonce and the gas quote come from here);
            // JSON-RPC quantities are hex strings, so other numbers are only ids.
            let lenient = bridgectl_json::Options {
                lenient_numbers: true,
                ..bridgectl_json::Options::default()
            };
            let v: Value = bridgectl_json::from_slice_with(&bytes, lenient).map_err(|e| {
                Error::UnexpectedShape {
                    what: format!("node answer to {method}"),
                    expected: format!("a JSON-RPC response ({e})"),
                    data: Value::String(
                        String::from_utf8_lossy(&bytes).chars().take(200).collect(),
                    ),
                }
            })?;
            Ok::<_, Error>((status, v))
        }
        .await;
        self.timing.http_done(started);
        let (status, v) = answer?;
        if let Some(err) = v.get("error") {
            return Err(Error::Platform {
                operation: format!("{} {method}", self.role),
                error: crate::client::PlatformError {
                    status,
                    code: format!(
                        "RPC_{}",
                        err.get("code").and_then(Value::as_i64).unwrap_or(0)
                    ),
                    message: err
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("error")
                        .to_owned(),
                },
            });
        }
        Ok(v.get("result").cloned().unwrap_or(Value::Null))
    }

    /// `eth_chainId`.
    pub async fn chain_id(&self) -> Result<u64, Error> {
        let v = self.call("eth_chainId", json!([])).await?;
        to_u64(parse_quantity(&v, "chain id")?, "chain id")
    }

    /// The hash of block 0: what tells one chain from another that took its chain id
    /// (a reset testnet, a restarted local node).
    pub async fn genesis_hash(&self) -> Result<B256, Error> {
        let block = self
            .call("eth_getBlockByNumber", json!(["0x0", false]))
            .await?;
        block
            .get("hash")
            .and_then(Value::as_str)
            .and_then(|h| h.parse().ok())
            .ok_or_else(|| Error::UnexpectedShape {
                what: "block 0".into(),
                expected: "a block with a 32-byte hash".into(),
                data: block.clone(),
            })
    }

    /// The next nonce counting pending transactions (`eth_getTransactionCount`,
    /// `pending`), so a transaction still in the pool is not replaced by accident.
    pub async fn pending_nonce(&self, address: Address) -> Result<u64, Error> {
        let v = self
            .call("eth_getTransactionCount", json!([address, "pending"]))
            .await?;
        to_u64(parse_quantity(&v, "nonce")?, "nonce")
    }

    /// `eth_gasPrice`.
    pub async fn gas_price(&self) -> Result<u128, Error> {
        let v = self.call("eth_gasPrice", json!([])).await?;
        u128::try_from(parse_quantity(&v, "gas price")?).map_err(|_| Error::UnexpectedShape {
            what: "gas price".into(),
            expected: "below 2^128".into(),
            data: v,
        })
    }

    /// The native balance of `address` (`eth_getBalance`, `latest`): what pays for gas.
    pub async fn balance(&self, address: Address) -> Result<U256, Error> {
        let v = self
            .call("eth_getBalance", json!([address, "latest"]))
            .await?;
        parse_quantity(&v, "balance")
    }

    /// `eth_estimateGas` for a call from `from` to `to` with `data`.
    pub async fn estimate_gas(
        &self,
        from: Address,
        to: Address,
        data: &[u8],
    ) -> Result<u64, Error> {
        let v = self
            .call(
                "eth_estimateGas",
                json!([{"from": from, "to": to, "data": format!("0x{}", hex::encode(data))}]),
            )
            .await?;
        to_u64(parse_quantity(&v, "gas estimate")?, "gas estimate")
    }

    /// `eth_sendRawTransaction`; "already known" counts as success, since the same bytes
    /// are the same transaction.
    pub async fn send_raw(&self, raw: &[u8], hash: B256) -> Result<B256, Error> {
        match self
            .call(
                "eth_sendRawTransaction",
                json!([format!("0x{}", hex::encode(raw))]),
            )
            .await
        {
            Ok(v) => {
                v.as_str()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| Error::UnexpectedShape {
                        what: "send result".into(),
                        expected: "a tx hash".into(),
                        data: v,
                    })
            }
            Err(Error::Platform { error, .. }) if is_already_known(&error.message) => Ok(hash),
            Err(e) => Err(e),
        }
    }

    /// The receipt, or `None` while the transaction is not mined.
    pub async fn receipt(&self, hash: B256) -> Result<Option<Receipt>, Error> {
        let v = self
            .call("eth_getTransactionReceipt", json!([hash]))
            .await?;
        if v.is_null() {
            return Ok(None);
        }
        let block_number = to_u64(parse_quantity(&v["blockNumber"], "block number")?, "block")?;
        let block_hash = v["blockHash"]
            .as_str()
            .and_then(|h| h.parse().ok())
            .ok_or_else(|| Error::UnexpectedShape {
                what: "a receipt".into(),
                expected: "blockHash: a 32-byte hash".into(),
                data: v.clone(),
            })?;
        let gas_used = to_u64(parse_quantity(&v["gasUsed"], "gas used")?, "gas used")?;
        let success = parse_quantity(&v["status"], "status")? == U256::from(1);
        Ok(Some(Receipt {
            transaction_hash: hash,
            block_number,
            block_hash,
            success,
            gas_used,
        }))
    }

    /// Polls for the receipt every `interval` until `timeout`.
    pub async fn wait_receipt(
        &self,
        hash: B256,
        interval: Duration,
        timeout: Duration,
        progress: &mut dyn crate::progress::Progress,
    ) -> Result<Receipt, Error> {
        let node: &dyn Node = self;
        node.wait_receipt(hash, interval, timeout, &self.timing, progress)
            .await
    }

    /// `eth_blockNumber`: the newest block.
    pub async fn block_number(&self) -> Result<u64, Error> {
        let v = self.call("eth_blockNumber", json!([])).await?;
        to_u64(parse_quantity(&v, "block number")?, "block number")
    }

    /// The timestamp (seconds) of block `number`; `None` when the node has no such block.
    pub async fn block_timestamp(&self, number: u64) -> Result<Option<u64>, Error> {
        let block = self
            .call(
                "eth_getBlockByNumber",
                json!([format!("0x{number:x}"), false]),
            )
            .await?;
        if block.is_null() {
            return Ok(None);
        }
        let t = parse_quantity(&block["timestamp"], "block timestamp")?;
        Ok(Some(to_u64(t, "block timestamp")?))
    }

    /// The timestamp (seconds) of the node's newest block: the latest time the chain
    /// vouches for.
    pub async fn latest_block_time(&self) -> Result<u64, Error> {
        let block = self
            .call("eth_getBlockByNumber", json!(["latest", false]))
            .await?;
        let t = parse_quantity(&block["timestamp"], "block timestamp")?;
        to_u64(t, "block timestamp")
    }

    /// Where the node has transaction `hash`: mined, waiting in its pool, or nowhere
    /// (never received, or dropped from the pool).
    pub async fn presence(&self, hash: B256) -> Result<TxPresence, Error> {
        let v = self.call("eth_getTransactionByHash", json!([hash])).await?;
        Ok(match v.get("blockNumber") {
            _ if v.is_null() => TxPresence::Unknown,
            None | Some(Value::Null) => TxPresence::Pending,
            Some(_) => TxPresence::Mined,
        })
    }

    /// `eth_getLogs` of `address` for `topics` (each `None` matches anything) over blocks
    /// `from..=to`. The caller bounds the range (see [`MAX_LOG_RANGE`]): a node answers a
    /// wide range slowly, or not at all, and the answer's size is bounded.
    pub async fn logs(
        &self,
        address: Address,
        topics: &[Option<B256>],
        from: u64,
        to: u64,
    ) -> Result<Vec<Log>, Error> {
        let v = self
            .call(
                "eth_getLogs",
                json!([{
                    "address": address,
                    "topics": topics,
                    "fromBlock": format!("0x{from:x}"),
                    "toBlock": format!("0x{to:x}"),
                }]),
            )
            .await?;
        let items = v.as_array().ok_or_else(|| Error::UnexpectedShape {
            what: "eth_getLogs result".into(),
            expected: "an array of logs".into(),
            data: v.clone(),
        })?;
        items.iter().map(parse_log).collect()
    }

    /// The facts of block `at`; `None` when the node has no such block (for a tag:
    /// one it does not answer, as nodes of chains without finality do, with nothing or
    /// with an error).
    pub async fn block_facts(&self, at: BlockId) -> Result<Option<BlockFacts>, Error> {
        let answer = self
            .call("eth_getBlockByNumber", json!([at.as_param(), false]))
            .await;
        let block = match (answer, at) {
            (Ok(block), _) => block,
            // "finalized block not found", "unknown block": a chain without the tag.
            (Err(Error::Platform { .. }), BlockId::Finalized | BlockId::Safe) => return Ok(None),
            (Err(e), _) => return Err(e),
        };
        if block.is_null() {
            return Ok(None);
        }
        let hash = block
            .get("hash")
            .and_then(Value::as_str)
            .and_then(|h| h.parse().ok())
            .ok_or_else(|| Error::UnexpectedShape {
                what: "a block".into(),
                expected: "a block with a 32-byte hash".into(),
                data: block.clone(),
            })?;
        let number = to_u64(parse_quantity(&block["number"], "block number")?, "block")?;
        let t = parse_quantity(&block["timestamp"], "block timestamp")?;
        Ok(Some(BlockFacts::new(
            number,
            hash,
            to_u64(t, "block timestamp")?,
        )))
    }

    /// `eth_call` of `data` to `to` at `latest`: the bytes returned.
    pub async fn eth_call(&self, to: Address, data: &[u8]) -> Result<Vec<u8>, Error> {
        let v = self
            .call(
                "eth_call",
                json!([{"to": to, "data": format!("0x{}", hex::encode(data))}, "latest"]),
            )
            .await?;
        v.as_str()
            .and_then(|s| s.strip_prefix("0x"))
            .and_then(|h| hex::decode(h).ok())
            .ok_or_else(|| Error::UnexpectedShape {
                what: "eth_call result".into(),
                expected: "0x-hex bytes".into(),
                data: v.clone(),
            })
    }

    /// ERC-20 `balanceOf(owner)` on `token` (`eth_call` at `latest`).
    pub async fn token_balance(&self, token: Address, owner: Address) -> Result<U256, Error> {
        let data = balance_of_call(owner);
        let v = self
            .call(
                "eth_call",
                json!([{"to": token, "data": format!("0x{}", hex::encode(&data))}, "latest"]),
            )
            .await?;
        parse_quantity(&v, "balance").or_else(|_| {
            // eth_call returns 32 bytes of data, not a quantity: read it as such.
            v.as_str()
                .and_then(|s| s.strip_prefix("0x"))
                .and_then(|h| hex::decode(h).ok())
                .filter(|b| b.len() == 32)
                .map(|b| U256::from_be_slice(&b))
                .ok_or_else(|| Error::UnexpectedShape {
                    what: "balanceOf result".into(),
                    expected: "32 bytes".into(),
                    data: v.clone(),
                })
        })
    }
}

/// The built-in client is the flows' default [`Node`] (one per `rpc_url`).
impl Node for NodeClient {
    fn chain_id(&self) -> NodeFuture<'_, u64> {
        Box::pin(NodeClient::chain_id(self))
    }

    fn block_number(&self) -> NodeFuture<'_, u64> {
        Box::pin(NodeClient::block_number(self))
    }

    fn block(&self, at: BlockId) -> NodeFuture<'_, Option<BlockFacts>> {
        Box::pin(self.block_facts(at))
    }

    fn pending_nonce(&self, address: Address) -> NodeFuture<'_, u64> {
        Box::pin(NodeClient::pending_nonce(self, address))
    }

    fn gas_price(&self) -> NodeFuture<'_, u128> {
        Box::pin(NodeClient::gas_price(self))
    }

    fn balance(&self, address: Address) -> NodeFuture<'_, U256> {
        Box::pin(NodeClient::balance(self, address))
    }

    fn call<'a>(&'a self, to: Address, data: &'a [u8]) -> NodeFuture<'a, Vec<u8>> {
        Box::pin(self.eth_call(to, data))
    }

    fn estimate_gas<'a>(
        &'a self,
        from: Address,
        to: Address,
        data: &'a [u8],
    ) -> NodeFuture<'a, u64> {
        Box::pin(NodeClient::estimate_gas(self, from, to, data))
    }

    fn send_raw<'a>(&'a self, raw: &'a [u8], hash: B256) -> NodeFuture<'a, B256> {
        Box::pin(NodeClient::send_raw(self, raw, hash))
    }

    fn receipt(&self, hash: B256) -> NodeFuture<'_, Option<Receipt>> {
        Box::pin(NodeClient::receipt(self, hash))
    }

    fn presence(&self, hash: B256) -> NodeFuture<'_, TxPresence> {
        Box::pin(NodeClient::presence(self, hash))
    }

    fn logs<'a>(
        &'a self,
        address: Address,
        topics: &'a [Option<B256>],
        from: u64,
        to: u64,
    ) -> NodeFuture<'a, Vec<Log>> {
        Box::pin(NodeClient::logs(self, address, topics, from, to))
    }
}

/// A JSON-RPC signing endpoint as a [`TransactionSigner`]: `eth_signTransaction` for the
/// transaction and `personal_sign` for its signing-log entry, for one account. Local
/// signing endpoints speak this: Frame (which fronts Ledger, Trezor, Lattice and
/// Keystone), a node with unlocked accounts (anvil, geth's dev mode). The URL follows the
/// node rules: loopback or https only, redacted in errors (it may carry a token). What
/// the endpoint returns is trusted with nothing: `bridgectl_tx::sign_and_log_with`
/// decodes it and accepts exactly the verified transaction.
#[derive(Clone)]
pub struct RpcSigner {
    endpoint: NodeClient,
    address: Address,
}

impl std::fmt::Debug for RpcSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcSigner")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

/// How long a signing endpoint may take to answer: a person confirms on a device.
pub const RPC_SIGNER_TIMEOUT: Duration = Duration::from_secs(300);

impl RpcSigner {
    /// The endpoint at `url`, signing as `address` (answers within
    /// [`RPC_SIGNER_TIMEOUT`]).
    pub fn new(url: &str, address: Address) -> Result<Self, Error> {
        Self::with_timeout(url, address, RPC_SIGNER_TIMEOUT)
    }

    /// [`RpcSigner::new`] for the offline signer, which reaches no network: the
    /// endpoint must be on this machine (a loopback address or `localhost`), in front
    /// of a hardware key or a local signer such as clef.
    pub fn loopback(url: &str, address: Address) -> Result<Self, Error> {
        Self::check_loopback(url)?;
        Self::new(url, address)
    }

    /// Whether `url` may be the offline signer's endpoint: on this machine only
    /// ([`Error::SignerUrl`] otherwise), checked before anything is read.
    pub fn check_loopback(url: &str) -> Result<(), Error> {
        let refuse = |reason: String| Error::SignerUrl {
            url: crate::http::redact_url(url),
            reason,
        };
        let parsed = reqwest::Url::parse(url).map_err(|e| refuse(e.to_string()))?;
        if !crate::http::is_loopback(&parsed) {
            return Err(refuse(
                "the offline signer reaches no network: its signing endpoint must be on this \
                 machine (127.0.0.1, ::1 or localhost)"
                    .into(),
            ));
        }
        Ok(())
    }

    /// The accounts the endpoint at `url` signs for (`eth_accounts`): where a batch
    /// chooses it over a key of the keystore, address by address.
    pub async fn accounts(url: &str) -> Result<Vec<Address>, Error> {
        let answer = NodeClient::with_timeout(url, Duration::from_secs(30))?
            .call("eth_accounts", json!([]))
            .await?;
        answer
            .as_array()
            .and_then(|list| {
                list.iter()
                    .map(|a| a.as_str().and_then(|s| s.parse::<Address>().ok()))
                    .collect::<Option<Vec<_>>>()
            })
            .ok_or_else(|| Error::UnexpectedShape {
                what: "the signer's answer to eth_accounts".into(),
                expected: "an array of addresses".into(),
                data: answer.clone(),
            })
    }

    /// [`RpcSigner::new`] with another answer timeout.
    pub fn with_timeout(url: &str, address: Address, timeout: Duration) -> Result<Self, Error> {
        Self::check_url(url)?;
        let mut endpoint = NodeClient::with_timeout(url, timeout)?;
        endpoint.role = "signing endpoint";
        Ok(Self { endpoint, address })
    }

    /// Whether `url` may be a signing endpoint's, checked before anything is asked of
    /// anyone: https, or plain http on this machine (loopback). Its answers are what is
    /// signed and logged, and its URL may carry a token ([`Error::SignerUrl`]).
    pub fn check_url(url: &str) -> Result<(), Error> {
        match check_url_safe_for_secrets(url) {
            Ok(_) => Ok(()),
            Err(Error::PlaintextRefused { url }) => Err(Error::SignerUrl {
                url,
                reason: "plain http to a host that is not this machine: a signing endpoint \
                         is https, or http on loopback"
                    .into(),
            }),
            Err(Error::BadUrl { url, reason }) => Err(Error::SignerUrl { url, reason }),
            Err(other) => Err(other),
        }
    }

    /// `eth_signTransaction` of `tx`: the signed bytes (a bare hex string, or geth's
    /// `{raw, tx}` object).
    async fn sign_tx(
        &self,
        tx: &alloy_consensus::TxLegacy,
    ) -> Result<alloy_primitives::Bytes, Error> {
        let hex_q = |v: u128| format!("0x{v:x}");
        let to = match tx.to {
            alloy_primitives::TxKind::Call(to) => to,
            alloy_primitives::TxKind::Create => {
                return Err(Error::Config("bridgectl never signs a contract creation"));
            }
        };
        let request = json!({
            "from": self.address,
            "to": to,
            "gas": hex_q(u128::from(tx.gas_limit)),
            "gasPrice": hex_q(tx.gas_price),
            "value": format!("0x{:x}", tx.value),
            "data": tx.input,
            "input": tx.input,
            "nonce": hex_q(u128::from(tx.nonce)),
            "chainId": tx.chain_id.map(|c| hex_q(u128::from(c))),
        });
        let answer = self
            .endpoint
            .call("eth_signTransaction", json!([request]))
            .await?;
        let raw = answer
            .as_str()
            .or_else(|| answer.get("raw").and_then(Value::as_str));
        raw.and_then(|h| hex::decode(h.trim_start_matches("0x")).ok())
            .map(Into::into)
            .ok_or_else(|| Error::UnexpectedShape {
                what: "the signer's answer to eth_signTransaction".into(),
                expected: "the signed transaction as 0x hex (or an object with `raw`)".into(),
                data: answer.clone(),
            })
    }

    /// `personal_sign` of the 32 bytes of `hash`.
    async fn sign_message_hash(&self, hash: B256) -> Result<alloy_primitives::Signature, Error> {
        let answer = self
            .endpoint
            .call("personal_sign", json!([hash, self.address]))
            .await?;
        answer
            .as_str()
            .and_then(|h| hex::decode(h.trim_start_matches("0x")).ok())
            .and_then(|b| alloy_primitives::Signature::try_from(b.as_slice()).ok())
            .ok_or_else(|| Error::UnexpectedShape {
                what: "the signer's answer to personal_sign".into(),
                expected: "a 65-byte signature as 0x hex".into(),
                data: answer.clone(),
            })
    }
}

/// A failure of the signing endpoint, as the signing error it is, the endpoint's error
/// kept whole inside (no answer, an error answer, an answer too large): a caller tells
/// a remote failure from a refusal by it.
fn signer_error(e: Error) -> bridgectl_tx::Error {
    bridgectl_tx::Error::Signer(alloy_signer::Error::other(e))
}

impl TransactionSigner for RpcSigner {
    fn address(&self) -> Address {
        self.address
    }

    async fn sign_transaction(
        &self,
        tx: &alloy_consensus::TxLegacy,
    ) -> Result<alloy_primitives::Bytes, bridgectl_tx::Error> {
        self.sign_tx(tx).await.map_err(signer_error)
    }

    async fn sign_hash_message(
        &self,
        hash: B256,
    ) -> Result<alloy_primitives::Signature, bridgectl_tx::Error> {
        self.sign_message_hash(hash).await.map_err(signer_error)
    }
}
