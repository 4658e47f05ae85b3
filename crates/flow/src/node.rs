//! What the flows ask of a chain's node, as a small trait of their own: [`Node`].
//!
//! Two implementations ship: the built-in [`crate::rpc::NodeClient`] (made from a
//! [`crate::ChainSide::rpc_url`]; its answers are bounded in size and it refuses plain
//! http off this machine), and, with the `alloy-provider` feature (on by default), any
//! alloy `Provider<Ethereum>`: a wallet passes the provider it already has (its fillers,
//! layers, retries, transport auth) with [`crate::FlowsBuilder::node`]. A provider's
//! transport is the wallet's own, so bounding its answers is too.
//!
//! Nothing a node says is trusted beyond what it is asked for: its nonce and gas price go
//! through the one verifier with the journal's and the signing log's facts, its block 0
//! tells a reset chain, its receipts and logs decide only what the flows document.
//!
//! The trait is dyn-compatible (its futures are boxed, [`NodeFuture`]): the flows hold a
//! node per chain as `Arc<dyn Node>`. What is built from its calls (block 0's hash, a
//! token balance, the wait for a receipt) is written once, on `dyn Node`.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use alloy_primitives::{Address, B256, U256};

use crate::Error;

/// The parts of a receipt the flows look at.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Receipt {
    /// The transaction hash.
    pub transaction_hash: B256,
    /// Block it was mined in.
    pub block_number: u64,
    /// That block's hash: the receipt holds only while this block is the chain's at
    /// `block_number` (a reorganisation that takes the block away takes the receipt).
    pub block_hash: B256,
    /// `true` when the transaction did not revert.
    pub success: bool,
    /// Gas used.
    pub gas_used: u64,
}

pub use crate::presence::TxPresence;

/// One log of `eth_getLogs`, the parts the flows read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Log {
    /// The contract that emitted it.
    pub address: Address,
    /// The block it is in.
    pub block_number: u64,
    /// That block's hash (a reorganisation that replaces the block removes the log).
    pub block_hash: B256,
    /// The transaction that emitted it.
    pub transaction_hash: B256,
    /// Its index in the block.
    pub log_index: u64,
    /// Its topics.
    pub topics: Vec<B256>,
    /// Its data.
    pub data: Vec<u8>,
    /// Set by the node when a reorganisation took the log's block away.
    pub removed: bool,
}

/// The calldata of ERC-20 `balanceOf(owner)`.
pub(crate) fn balance_of_call(owner: Address) -> Vec<u8> {
    // balanceOf(address) = 0x70a08231
    let mut data = vec![0x70, 0xa0, 0x82, 0x31];
    data.extend_from_slice(&[0u8; 12]);
    data.extend_from_slice(owner.as_slice());
    data
}

/// A node's message for a transaction it has already: a resend of the same bytes.
pub(crate) fn is_already_known(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    message.contains("already known") || message.contains("already imported")
}

/// The future a [`Node`] call returns.
pub type NodeFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, Error>> + Send + 'a>>;

/// Which block to ask a node for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockId {
    /// The newest block (`latest`).
    Latest,
    /// The block of this number.
    Number(u64),
    /// The newest block the chain's consensus has finalized (`finalized`): not taken back
    /// without a slashing of a third of its validators. Nodes of chains without such a
    /// notion answer nothing or an error.
    Finalized,
    /// The newest block the node calls `safe` (unlikely to be taken back).
    Safe,
}

impl BlockId {
    /// As `eth_getBlockByNumber` takes it.
    pub fn as_param(self) -> String {
        match self {
            BlockId::Latest => "latest".into(),
            BlockId::Number(n) => format!("0x{n:x}"),
            BlockId::Finalized => "finalized".into(),
            BlockId::Safe => "safe".into(),
        }
    }
}

/// The facts of a block the flows read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BlockFacts {
    /// Its number.
    pub number: u64,
    /// Its hash.
    pub hash: B256,
    /// Its timestamp, in seconds.
    pub timestamp: u64,
}

impl BlockFacts {
    /// A block's facts.
    pub fn new(number: u64, hash: B256, timestamp: u64) -> BlockFacts {
        BlockFacts {
            number,
            hash,
            timestamp,
        }
    }
}

/// A chain's node, as the flows use it: nonces, gas, balances, receipts, logs, block 0,
/// and sending signed bytes. JSON-RPC error answers are [`Error::Platform`] with code
/// `RPC_<code>` (so "already known" and "nonce too low" read the same from every node);
/// a failure to get an answer is [`Error::Http`] or [`Error::Node`].
pub trait Node: Send + Sync {
    /// `eth_chainId`: the chain the node serves. Asked once, before any other answer
    /// of the node is used: a node is believed only for its own chain.
    fn chain_id(&self) -> NodeFuture<'_, u64>;

    /// `eth_blockNumber`: the newest block.
    fn block_number(&self) -> NodeFuture<'_, u64>;

    /// Block `at`; `None` when the node has no such block (a number past its head, a
    /// tag it does not know).
    fn block(&self, at: BlockId) -> NodeFuture<'_, Option<BlockFacts>>;

    /// The next nonce of `address` counting pending transactions
    /// (`eth_getTransactionCount`, `pending`).
    fn pending_nonce(&self, address: Address) -> NodeFuture<'_, u64>;

    /// `eth_gasPrice`.
    fn gas_price(&self) -> NodeFuture<'_, u128>;

    /// The native balance of `address` at `latest`: what pays for gas.
    fn balance(&self, address: Address) -> NodeFuture<'_, U256>;

    /// `eth_call` of `data` to `to` at `latest`: the bytes returned.
    fn call<'a>(&'a self, to: Address, data: &'a [u8]) -> NodeFuture<'a, Vec<u8>>;

    /// `eth_estimateGas` of a call from `from` to `to` with `data`.
    fn estimate_gas<'a>(
        &'a self,
        from: Address,
        to: Address,
        data: &'a [u8],
    ) -> NodeFuture<'a, u64>;

    /// `eth_sendRawTransaction` of `raw` (whose hash is `hash`); "already known" is
    /// success, the same bytes being the same transaction.
    fn send_raw<'a>(&'a self, raw: &'a [u8], hash: B256) -> NodeFuture<'a, B256>;

    /// The receipt of `hash`, or `None` while it is not mined.
    fn receipt(&self, hash: B256) -> NodeFuture<'_, Option<Receipt>>;

    /// Where the node has `hash`: mined, pending in its pool, or unknown to it.
    fn presence(&self, hash: B256) -> NodeFuture<'_, TxPresence>;

    /// `eth_getLogs` of `address` for `topics` (`None` matches anything) over blocks
    /// `from..=to`; the caller bounds the range ([`crate::rpc::MAX_LOG_RANGE`]).
    fn logs<'a>(
        &'a self,
        address: Address,
        topics: &'a [Option<B256>],
        from: u64,
        to: u64,
    ) -> NodeFuture<'a, Vec<Log>>;
}

impl dyn Node + '_ {
    /// The hash of block 0: what tells one chain from another that took its chain id.
    pub async fn genesis_hash(&self) -> Result<B256, Error> {
        Ok(self
            .block(BlockId::Number(0))
            .await?
            .ok_or_else(|| missing("block 0"))?
            .hash)
    }

    /// The timestamp of the newest block: the latest time the chain vouches for.
    pub async fn latest_block_time(&self) -> Result<u64, Error> {
        Ok(self
            .block(BlockId::Latest)
            .await?
            .ok_or_else(|| missing("the newest block"))?
            .timestamp)
    }

    /// The timestamp of block `number`; `None` when the node has no such block.
    pub async fn block_timestamp(&self, number: u64) -> Result<Option<u64>, Error> {
        Ok(self
            .block(BlockId::Number(number))
            .await?
            .map(|b| b.timestamp))
    }

    /// ERC-20 `balanceOf(owner)` on `token`.
    pub async fn token_balance(&self, token: Address, owner: Address) -> Result<U256, Error> {
        let data = balance_of_call(owner);
        let answer = self.call(token, &data).await?;
        if answer.len() != 32 {
            return Err(Error::UnexpectedShape {
                what: "balanceOf result".into(),
                expected: "32 bytes".into(),
                data: serde_json::Value::String(format!("0x{}", hex::encode(&answer))),
            });
        }
        Ok(U256::from_be_slice(&answer))
    }

    /// Polls for the receipt of `hash` every `interval` until `timeout` (the sleeps
    /// counted in `timing`).
    pub async fn wait_receipt(
        &self,
        hash: B256,
        interval: Duration,
        timeout: Duration,
        timing: &crate::timing::Timing,
        progress: &mut dyn crate::Progress,
    ) -> Result<Receipt, Error> {
        let mut clock =
            crate::progress::WaitClock::new(format!("transaction {hash} to be mined"), timeout);
        loop {
            if let Some(r) = clock.during(self.receipt(hash), progress).await? {
                return Ok(r);
            }
            if clock.elapsed() >= timeout {
                return Err(Error::Timeout {
                    what: format!("the receipt of {hash}"),
                    seconds: timeout.as_secs(),
                    flow: None,
                    not_mined: self.presence(hash).await.ok(),
                    tx_hash: Some(hash),
                });
            }
            clock.during(timing.sleep(interval), progress).await;
        }
    }
}

fn missing(what: &str) -> Error {
    Error::UnexpectedShape {
        what: what.into(),
        expected: "a block".into(),
        data: serde_json::Value::Null,
    }
}

/// A node believed only for its own chain: before any answer of it is used, it is asked
/// its `eth_chainId` (once; a failure to answer is asked again next time), and a node of
/// another chain is [`Error::NodeOnWrongChain`], naming where it was set. Every node the
/// flows use goes through this (a profile's `rpc_url`, a wallet's own provider).
pub(crate) struct ChainChecked {
    inner: std::sync::Arc<dyn Node>,
    chain_id: u64,
    setting: String,
    checked: tokio::sync::OnceCell<()>,
}

impl ChainChecked {
    /// `inner`, named for `chain_id` by `setting` (`side_rpc_url`).
    pub(crate) fn new(inner: std::sync::Arc<dyn Node>, chain_id: u64, setting: String) -> Self {
        ChainChecked {
            inner,
            chain_id,
            setting,
            checked: tokio::sync::OnceCell::new(),
        }
    }

    async fn ensure(&self) -> Result<(), Error> {
        self.checked
            .get_or_try_init(|| async {
                let found = self.inner.chain_id().await?;
                if found == self.chain_id {
                    Ok(())
                } else {
                    Err(Error::NodeOnWrongChain {
                        chain_id: self.chain_id,
                        found,
                        setting: self.setting.clone(),
                    })
                }
            })
            .await
            .map(|_| ())
    }
}

impl Node for ChainChecked {
    fn chain_id(&self) -> NodeFuture<'_, u64> {
        Box::pin(async move {
            self.ensure().await?;
            Ok(self.chain_id)
        })
    }

    fn block_number(&self) -> NodeFuture<'_, u64> {
        Box::pin(async move {
            self.ensure().await?;
            self.inner.block_number().await
        })
    }

    fn block(&self, at: BlockId) -> NodeFuture<'_, Option<BlockFacts>> {
        Box::pin(async move {
            self.ensure().await?;
            self.inner.block(at).await
        })
    }

    fn pending_nonce(&self, address: Address) -> NodeFuture<'_, u64> {
        Box::pin(async move {
            self.ensure().await?;
            self.inner.pending_nonce(address).await
        })
    }

    fn gas_price(&self) -> NodeFuture<'_, u128> {
        Box::pin(async move {
            self.ensure().await?;
            self.inner.gas_price().await
        })
    }

    fn balance(&self, address: Address) -> NodeFuture<'_, U256> {
        Box::pin(async move {
            self.ensure().await?;
            self.inner.balance(address).await
        })
    }

    fn call<'a>(&'a self, to: Address, data: &'a [u8]) -> NodeFuture<'a, Vec<u8>> {
        Box::pin(async move {
            self.ensure().await?;
            self.inner.call(to, data).await
        })
    }

    fn estimate_gas<'a>(
        &'a self,
        from: Address,
        to: Address,
        data: &'a [u8],
    ) -> NodeFuture<'a, u64> {
        Box::pin(async move {
            self.ensure().await?;
            self.inner.estimate_gas(from, to, data).await
        })
    }

    fn send_raw<'a>(&'a self, raw: &'a [u8], hash: B256) -> NodeFuture<'a, B256> {
        Box::pin(async move {
            self.ensure().await?;
            self.inner.send_raw(raw, hash).await
        })
    }

    fn receipt(&self, hash: B256) -> NodeFuture<'_, Option<Receipt>> {
        Box::pin(async move {
            self.ensure().await?;
            self.inner.receipt(hash).await
        })
    }

    fn presence(&self, hash: B256) -> NodeFuture<'_, TxPresence> {
        Box::pin(async move {
            self.ensure().await?;
            self.inner.presence(hash).await
        })
    }

    fn logs<'a>(
        &'a self,
        address: Address,
        topics: &'a [Option<B256>],
        from: u64,
        to: u64,
    ) -> NodeFuture<'a, Vec<Log>> {
        Box::pin(async move {
            self.ensure().await?;
            self.inner.logs(address, topics, from, to).await
        })
    }
}

/// The flows' nodes by chain, given by the embedder ([`crate::FlowsBuilder::node`]).
#[derive(Default, Clone)]
pub(crate) struct ChainNodes(pub(crate) std::collections::BTreeMap<u64, std::sync::Arc<dyn Node>>);

impl std::fmt::Debug for ChainNodes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

#[cfg(feature = "alloy-provider")]
mod alloy {
    //! Any alloy `Provider<Ethereum>` as a [`Node`].

    use alloy_primitives::{Address, B256, Bytes, U256};
    use alloy_provider::Provider;
    use alloy_provider::network::{Ethereum, ReceiptResponse, TransactionResponse};
    use alloy_provider::transport::TransportError;
    use alloy_rpc_types_eth::{BlockNumberOrTag, Filter, TransactionRequest};

    use super::{BlockFacts, BlockId, Node, NodeFuture};
    use super::{Log, Receipt, TxPresence};
    use crate::Error;

    /// A JSON-RPC error answer reads as the built-in client's ([`Error::Platform`], code
    /// `RPC_<code>`); no answer is [`Error::Node`].
    fn node_error(method: &str) -> impl FnOnce(TransportError) -> Error + '_ {
        move |e| match e.as_error_resp() {
            Some(payload) => Error::Platform {
                operation: format!("node {method}"),
                error: crate::client::PlatformError {
                    status: 200,
                    code: format!("RPC_{}", payload.code),
                    message: payload.message.to_string(),
                },
            },
            None => Error::Node {
                what: format!("node {method}"),
                source: Box::new(e),
            },
        }
    }

    /// A wallet's alloy provider (over any transport, with its fillers and layers) is a
    /// node of the flows: pass it to [`crate::FlowsBuilder::node`].
    impl<P: Provider<Ethereum>> Node for P {
        fn chain_id(&self) -> NodeFuture<'_, u64> {
            Box::pin(async move { self.get_chain_id().await.map_err(node_error("eth_chainId")) })
        }

        fn block_number(&self) -> NodeFuture<'_, u64> {
            Box::pin(async move {
                self.get_block_number()
                    .await
                    .map_err(node_error("eth_blockNumber"))
            })
        }

        fn block(&self, at: BlockId) -> NodeFuture<'_, Option<BlockFacts>> {
            Box::pin(async move {
                let tag = match at {
                    BlockId::Latest => BlockNumberOrTag::Latest,
                    BlockId::Number(n) => BlockNumberOrTag::Number(n),
                    BlockId::Finalized => BlockNumberOrTag::Finalized,
                    BlockId::Safe => BlockNumberOrTag::Safe,
                };
                let block = self
                    .get_block_by_number(tag)
                    .await
                    .map_err(node_error("eth_getBlockByNumber"))?;
                Ok(block
                    .map(|b| BlockFacts::new(b.header.number, b.header.hash, b.header.timestamp)))
            })
        }

        fn pending_nonce(&self, address: Address) -> NodeFuture<'_, u64> {
            Box::pin(async move {
                self.get_transaction_count(address)
                    .pending()
                    .await
                    .map_err(node_error("eth_getTransactionCount"))
            })
        }

        fn gas_price(&self) -> NodeFuture<'_, u128> {
            Box::pin(async move {
                self.get_gas_price()
                    .await
                    .map_err(node_error("eth_gasPrice"))
            })
        }

        fn balance(&self, address: Address) -> NodeFuture<'_, U256> {
            Box::pin(async move {
                self.get_balance(address)
                    .await
                    .map_err(node_error("eth_getBalance"))
            })
        }

        fn call<'a>(&'a self, to: Address, data: &'a [u8]) -> NodeFuture<'a, Vec<u8>> {
            Box::pin(async move {
                let tx = TransactionRequest::default()
                    .to(to)
                    .input(Bytes::copy_from_slice(data).into());
                let out = Provider::call(self, tx)
                    .await
                    .map_err(node_error("eth_call"))?;
                Ok(out.to_vec())
            })
        }

        fn estimate_gas<'a>(
            &'a self,
            from: Address,
            to: Address,
            data: &'a [u8],
        ) -> NodeFuture<'a, u64> {
            Box::pin(async move {
                let tx = TransactionRequest::default()
                    .from(from)
                    .to(to)
                    .input(Bytes::copy_from_slice(data).into());
                Provider::estimate_gas(self, tx)
                    .await
                    .map_err(node_error("eth_estimateGas"))
            })
        }

        fn send_raw<'a>(&'a self, raw: &'a [u8], hash: B256) -> NodeFuture<'a, B256> {
            Box::pin(async move {
                match self.send_raw_transaction(raw).await {
                    Ok(pending) => Ok(*pending.tx_hash()),
                    Err(e) => match node_error("eth_sendRawTransaction")(e) {
                        Error::Platform { error, .. }
                            if super::is_already_known(&error.message) =>
                        {
                            Ok(hash)
                        }
                        other => Err(other),
                    },
                }
            })
        }

        fn receipt(&self, hash: B256) -> NodeFuture<'_, Option<Receipt>> {
            Box::pin(async move {
                let receipt = self
                    .get_transaction_receipt(hash)
                    .await
                    .map_err(node_error("eth_getTransactionReceipt"))?;
                Ok(receipt.and_then(|r| {
                    Some(Receipt {
                        transaction_hash: hash,
                        block_number: r.block_number()?,
                        block_hash: r.block_hash()?,
                        success: r.status(),
                        gas_used: r.gas_used(),
                    })
                }))
            })
        }

        fn presence(&self, hash: B256) -> NodeFuture<'_, TxPresence> {
            Box::pin(async move {
                let tx = self
                    .get_transaction_by_hash(hash)
                    .await
                    .map_err(node_error("eth_getTransactionByHash"))?;
                Ok(match tx {
                    None => TxPresence::Unknown,
                    Some(t) if t.block_number().is_none() => TxPresence::Pending,
                    Some(_) => TxPresence::Mined,
                })
            })
        }

        fn logs<'a>(
            &'a self,
            address: Address,
            topics: &'a [Option<B256>],
            from: u64,
            to: u64,
        ) -> NodeFuture<'a, Vec<Log>> {
            Box::pin(async move {
                let mut filter = Filter::new().address(address).from_block(from).to_block(to);
                for (slot, topic) in filter.topics.iter_mut().zip(topics) {
                    if let Some(t) = topic {
                        *slot = (*t).into();
                    }
                }
                let logs = self
                    .get_logs(&filter)
                    .await
                    .map_err(node_error("eth_getLogs"))?;
                logs.into_iter()
                    .map(|l| {
                        let shape = |what: &str| Error::UnexpectedShape {
                            what: "a log of eth_getLogs".into(),
                            expected: format!("{what} of a mined log"),
                            data: serde_json::Value::Null,
                        };
                        Ok(Log {
                            address: l.address(),
                            block_number: l.block_number.ok_or_else(|| shape("blockNumber"))?,
                            block_hash: l.block_hash.ok_or_else(|| shape("blockHash"))?,
                            transaction_hash: l
                                .transaction_hash
                                .ok_or_else(|| shape("transactionHash"))?,
                            log_index: l.log_index.ok_or_else(|| shape("logIndex"))?,
                            topics: l.topics().to_vec(),
                            data: l.data().data.to_vec(),
                            removed: l.removed,
                        })
                    })
                    .collect()
            })
        }
    }
}

#[cfg(test)]
pub(crate) mod fake {
    //! A [`Node`] that answers from what a test set: the guards' verdicts (a credit, a
    //! fact's finality, a reorganisation, a reset) are driven with it without a chain.

    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use alloy_primitives::{Address, B256, U256};

    use super::{BlockFacts, BlockId, Log, Node, NodeFuture, Receipt, TxPresence};
    use crate::Error;

    #[derive(Default)]
    struct State {
        head: u64,
        finalized: Option<u64>,
        blocks: BTreeMap<u64, BlockFacts>,
        receipts: BTreeMap<B256, Receipt>,
        logs: Vec<Log>,
        calls: BTreeMap<String, usize>,
    }

    /// A node of chain `chain_id` that answers what the test set (see the module doc).
    /// Clones share one chain: a test keeps one and gives the flows another.
    #[derive(Clone)]
    pub(crate) struct FakeNode {
        chain_id: u64,
        state: std::sync::Arc<Mutex<State>>,
    }

    /// The hash a fake chain gives block `number` (`fork` tells two chains apart).
    pub(crate) fn block_hash(number: u64, fork: u8) -> B256 {
        let mut h = [fork; 32];
        h[24..].copy_from_slice(&number.to_be_bytes());
        B256::from(h)
    }

    impl FakeNode {
        pub(crate) fn new(chain_id: u64) -> FakeNode {
            FakeNode {
                chain_id,
                state: Default::default(),
            }
        }

        fn with(&self, f: impl FnOnce(&mut State)) {
            f(&mut self.state.lock().expect("fake node"));
        }

        /// Blocks 0..=`head` on fork 0, one a second from time 1000.
        pub(crate) fn with_head(self, head: u64) -> FakeNode {
            self.with(|s| {
                s.head = head;
                for n in 0..=head {
                    s.blocks
                        .insert(n, BlockFacts::new(n, block_hash(n, 0), 1000 + n));
                }
            });
            self
        }

        pub(crate) fn with_finalized(self, block: Option<u64>) -> FakeNode {
            self.with(|s| s.finalized = block);
            self
        }

        /// Blocks from `from` on replaced by fork `fork`'s (a reorganisation), with
        /// every receipt and log in them gone.
        pub(crate) fn reorganise(&self, from: u64, fork: u8) {
            self.with(|s| {
                for n in from..=s.head {
                    s.blocks
                        .insert(n, BlockFacts::new(n, block_hash(n, fork), 1000 + n));
                }
                s.receipts.retain(|_, r| r.block_number < from);
                s.logs.retain(|l| l.block_number < from);
            });
        }

        pub(crate) fn set_head(&self, head: u64) {
            self.with(|s| {
                for n in s.head + 1..=head {
                    s.blocks
                        .insert(n, BlockFacts::new(n, block_hash(n, 0), 1000 + n));
                }
                s.head = head;
            });
        }

        /// A receipt of `hash` in block `block` (of the chain as it is now).
        pub(crate) fn mine(&self, hash: B256, block: u64, success: bool) {
            self.with(|s| {
                let block_hash = s.blocks.get(&block).expect("block").hash;
                s.receipts.insert(
                    hash,
                    Receipt {
                        transaction_hash: hash,
                        block_number: block,
                        block_hash,
                        success,
                        gas_used: 21_000,
                    },
                );
            });
        }

        /// A log in block `block` of the chain as it is now.
        pub(crate) fn add_log(&self, mut log: Log) {
            self.with(|s| {
                log.block_hash = s.blocks.get(&log.block_number).expect("block").hash;
                s.logs.push(log);
            });
        }

        /// How many times `what` was asked (`receipt`, `logs`, `block:finalized`,
        /// `block:latest`, `block:number`, `block_number`, `chain_id`).
        pub(crate) fn calls(&self, what: &str) -> usize {
            self.state
                .lock()
                .expect("fake node")
                .calls
                .get(what)
                .copied()
                .unwrap_or(0)
        }

        /// Every call asked so far.
        pub(crate) fn total_calls(&self) -> usize {
            self.state.lock().expect("fake node").calls.values().sum()
        }

        fn count(&self, what: &str) {
            self.with(|s| *s.calls.entry(what.to_owned()).or_default() += 1);
        }

        fn read<T>(&self, what: &str, f: impl FnOnce(&State) -> T) -> T {
            self.count(what);
            self.peek(f)
        }

        fn peek<T>(&self, f: impl FnOnce(&State) -> T) -> T {
            f(&self.state.lock().expect("fake node"))
        }
    }

    fn unsupported<T>(what: &'static str) -> NodeFuture<'static, T>
    where
        T: Send + 'static,
    {
        Box::pin(async move { Err(Error::Config(what)) })
    }

    impl Node for FakeNode {
        fn chain_id(&self) -> NodeFuture<'_, u64> {
            let id = self.read("chain_id", |_| self.chain_id);
            Box::pin(async move { Ok(id) })
        }

        fn block_number(&self) -> NodeFuture<'_, u64> {
            let head = self.read("block_number", |s| s.head);
            Box::pin(async move { Ok(head) })
        }

        fn block(&self, at: BlockId) -> NodeFuture<'_, Option<BlockFacts>> {
            let (what, found) = match at {
                BlockId::Latest => (
                    "block:latest",
                    self.peek(|s| s.blocks.get(&s.head).copied()),
                ),
                BlockId::Number(n) => ("block:number", self.peek(|s| s.blocks.get(&n).copied())),
                BlockId::Finalized | BlockId::Safe => (
                    "block:finalized",
                    self.peek(|s| s.finalized.and_then(|f| s.blocks.get(&f).copied())),
                ),
            };
            self.count(what);
            Box::pin(async move { Ok(found) })
        }

        fn pending_nonce(&self, _address: Address) -> NodeFuture<'_, u64> {
            unsupported("pending_nonce")
        }

        fn gas_price(&self) -> NodeFuture<'_, u128> {
            unsupported("gas_price")
        }

        fn balance(&self, _address: Address) -> NodeFuture<'_, U256> {
            unsupported("balance")
        }

        fn call<'a>(&'a self, _to: Address, _data: &'a [u8]) -> NodeFuture<'a, Vec<u8>> {
            unsupported("call")
        }

        fn estimate_gas<'a>(
            &'a self,
            _from: Address,
            _to: Address,
            _data: &'a [u8],
        ) -> NodeFuture<'a, u64> {
            unsupported("estimate_gas")
        }

        fn send_raw<'a>(&'a self, _raw: &'a [u8], hash: B256) -> NodeFuture<'a, B256> {
            self.count("send_raw");
            Box::pin(async move { Ok(hash) })
        }

        fn receipt(&self, hash: B256) -> NodeFuture<'_, Option<Receipt>> {
            let r = self.read("receipt", |s| s.receipts.get(&hash).cloned());
            Box::pin(async move { Ok(r) })
        }

        fn presence(&self, hash: B256) -> NodeFuture<'_, TxPresence> {
            let mined = self.read("presence", |s| s.receipts.contains_key(&hash));
            Box::pin(async move {
                Ok(if mined {
                    TxPresence::Mined
                } else {
                    TxPresence::Unknown
                })
            })
        }

        fn logs<'a>(
            &'a self,
            address: Address,
            topics: &'a [Option<B256>],
            from: u64,
            to: u64,
        ) -> NodeFuture<'a, Vec<Log>> {
            let logs = self.read("logs", |s| {
                s.logs
                    .iter()
                    .filter(|l| {
                        l.address == address
                            && (from..=to).contains(&l.block_number)
                            && topics
                                .iter()
                                .enumerate()
                                .all(|(i, t)| t.is_none_or(|t| l.topics.get(i) == Some(&t)))
                    })
                    .cloned()
                    .collect::<Vec<_>>()
            });
            Box::pin(async move { Ok(logs) })
        }
    }
}
