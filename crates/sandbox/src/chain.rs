//! One sandbox chain: its node, and sending transactions from keys the sandbox holds
//! (the bridge account, managed accounts) without nonce races.

use alloy_consensus::{SignableTransaction, TxEnvelope, TxLegacy};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, B256, Bytes, TxKind, U256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;

use crate::rpc::{Rpc, RpcError};

/// A legacy transaction to be signed: the platform's rawTx in typed form.
#[derive(Debug, Clone)]
pub struct Unsigned {
    /// EIP-155 chain id.
    pub chain_id: u64,
    /// Sender nonce.
    pub nonce: u64,
    /// Gas price in wei.
    pub gas_price: u128,
    /// Gas limit.
    pub gas_limit: u64,
    /// Recipient; `None` creates a contract.
    pub to: Option<Address>,
    /// Value in wei (always zero for platform transactions).
    pub value: U256,
    /// Call data.
    pub data: Bytes,
}

/// Signs `tx` as a legacy EIP-155 transaction: returns the raw bytes and the hash.
pub fn sign_legacy(
    signer: &PrivateKeySigner,
    tx: &Unsigned,
) -> Result<(Bytes, B256), alloy_signer::Error> {
    sign_as(signer, tx, Some(tx.chain_id))
}

/// Signs `tx` WITHOUT a chain id (a pre-EIP-155 signature, valid on every chain): only
/// the hostile-platform mode does this, to show that clients refuse it.
pub fn sign_pre_eip155(
    signer: &PrivateKeySigner,
    tx: &Unsigned,
) -> Result<(Bytes, B256), alloy_signer::Error> {
    sign_as(signer, tx, None)
}

/// Signs `tx` as an EIP-1559 transaction whose fee cap is its gas price and whose
/// priority fee is all of it: only the hostile-platform mode does this (a client asked
/// for a legacy transaction).
pub fn sign_eip1559(
    signer: &PrivateKeySigner,
    tx: &Unsigned,
) -> Result<(Bytes, B256), alloy_signer::Error> {
    let typed = alloy_consensus::TxEip1559 {
        chain_id: tx.chain_id,
        nonce: tx.nonce,
        gas_limit: tx.gas_limit,
        max_fee_per_gas: tx.gas_price,
        max_priority_fee_per_gas: tx.gas_price,
        to: tx.to.map_or(TxKind::Create, TxKind::Call),
        value: tx.value,
        input: tx.data.clone(),
        access_list: Default::default(),
    };
    let sig = signer.sign_hash_sync(&typed.signature_hash())?;
    let envelope = TxEnvelope::Eip1559(typed.into_signed(sig));
    Ok((Bytes::from(envelope.encoded_2718()), *envelope.tx_hash()))
}

fn sign_as(
    signer: &PrivateKeySigner,
    tx: &Unsigned,
    chain_id: Option<u64>,
) -> Result<(Bytes, B256), alloy_signer::Error> {
    let legacy = TxLegacy {
        chain_id,
        nonce: tx.nonce,
        gas_price: tx.gas_price,
        gas_limit: tx.gas_limit,
        to: tx.to.map_or(TxKind::Create, TxKind::Call),
        value: tx.value,
        input: tx.data.clone(),
    };
    let sig = signer.sign_hash_sync(&legacy.signature_hash())?;
    let envelope = TxEnvelope::Legacy(legacy.into_signed(sig));
    let hash = *envelope.tx_hash();
    Ok((Bytes::from(envelope.encoded_2718()), hash))
}

/// Why a sandbox-held transaction could not be sent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The node refused a call (estimate, nonce, send).
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// Signing failed.
    #[error("signing failed")]
    Sign(#[from] alloy_signer::Error),
}

/// A chain of the sandbox: its node and a lock that serialises the sandbox's own sends,
/// so two relayer payouts never race for one nonce.
#[derive(Debug)]
pub struct Chain {
    /// `main` or `side`.
    pub name: &'static str,
    /// EIP-155 chain id.
    pub chain_id: u64,
    /// The node.
    pub rpc: Rpc,
    send_lock: tokio::sync::Mutex<()>,
}

impl Chain {
    /// A chain over `rpc`.
    pub fn new(name: &'static str, chain_id: u64, rpc: Rpc) -> Chain {
        Chain {
            name,
            chain_id,
            rpc,
            send_lock: tokio::sync::Mutex::new(()),
        }
    }

    /// Signs with `signer` and sends a call (or a creation when `to` is `None`), with gas
    /// estimated from live state plus a margin. Returns the transaction hash.
    pub async fn send(
        &self,
        signer: &PrivateKeySigner,
        to: Option<Address>,
        data: Bytes,
    ) -> Result<B256, SendError> {
        self.send_with_gas(signer, to, data, None).await
    }

    /// [`Chain::send`] with a fixed gas limit (no estimate): for start-up transactions that
    /// depend on a contract not mined yet.
    pub async fn send_with_gas(
        &self,
        signer: &PrivateKeySigner,
        to: Option<Address>,
        data: Bytes,
        gas: Option<u64>,
    ) -> Result<B256, SendError> {
        Ok(self.send_kept(signer, to, data, gas).await?.0)
    }

    /// [`Chain::send_with_gas`], returning the signed bytes too: what a careful sender
    /// keeps to send again if a reorganisation takes its transaction back.
    pub async fn send_kept(
        &self,
        signer: &PrivateKeySigner,
        to: Option<Address>,
        data: Bytes,
        gas: Option<u64>,
    ) -> Result<(B256, Bytes), SendError> {
        let _guard = self.send_lock.lock().await;
        let from = signer.address();
        let gas_limit = match (gas, to) {
            (Some(g), _) => g * 5 / 6,
            (None, Some(to)) => self.rpc.estimate_gas(from, to, &data).await?,
            (None, None) => self.estimate_create(from, &data).await?,
        };
        let tx = Unsigned {
            chain_id: self.chain_id,
            nonce: self.rpc.pending_nonce(from).await?,
            gas_price: self.rpc.gas_price().await?,
            gas_limit: gas_limit.saturating_mul(6) / 5,
            to,
            value: U256::ZERO,
            data,
        };
        let (raw, _) = sign_legacy(signer, &tx)?;
        Ok((self.rpc.send_raw(&raw).await?, raw))
    }

    async fn estimate_create(&self, from: Address, data: &Bytes) -> Result<u64, RpcError> {
        let v: alloy_primitives::U64 = self
            .rpc
            .call(
                "eth_estimateGas",
                serde_json::json!([{"from": from, "data": data}]),
            )
            .await?;
        Ok(v.to())
    }

    /// Waits (polling) until `hash` is mined; returns whether it succeeded.
    pub async fn wait(&self, hash: B256) -> Result<crate::rpc::Receipt, RpcError> {
        loop {
            if let Some(r) = self.rpc.receipt(hash).await? {
                return Ok(r);
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
}

/// A fresh random key for a managed account.
pub fn random_signer() -> Result<PrivateKeySigner, String> {
    loop {
        let mut bytes = zeroize::Zeroizing::new([0u8; 32]);
        getrandom::fill(bytes.as_mut()).map_err(|e| format!("no randomness: {e}"))?;
        if let Ok(s) = PrivateKeySigner::from_slice(bytes.as_ref()) {
            return Ok(s);
        }
    }
}
