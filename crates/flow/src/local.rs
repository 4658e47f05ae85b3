//! Transactions bridgectl builds itself: token transfers (the MT transfer of a swap, a
//! plain MT or ST transfer) and managed-account signing (operation 2, then 3).
//!
//! The calldata is built here, never taken from outside. The nonce and gas come from
//! the node (`pending`) or the platform, and are still checked against the caps.

use std::time::{Duration, Instant};

use alloy_primitives::{Address, U256};
use bridgectl_tx::RawTx;
use serde::Serialize;
use serde_json::json;

use crate::Error;
use crate::client::SwapAddressRequest;
use crate::engine::{Approver, ChainSide, Flows, Progress, Submitted, transfer_intent};
use crate::journal::FlowState;
use crate::rpc::NodeClient;

/// Where a locally built transaction's nonce comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonceSource {
    /// The platform's next-nonce operation.
    Platform,
    /// The node's `pending` transaction count.
    Node,
    /// Given by the user.
    Fixed(u64),
}

/// Where a locally built transaction's gas limit and price come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GasSource {
    /// The node: `eth_estimateGas` (+20% headroom) and `eth_gasPrice`.
    Node,
    /// The platform's raw MT transfer operation (MT only).
    Platform,
    /// Given by the user.
    Fixed {
        /// Gas limit.
        limit: u64,
        /// Gas price in wei.
        price: u128,
    },
}

/// Which token a transfer moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Which {
    /// The main-network token.
    Mt,
    /// The side-chain token.
    St,
}

/// A token transfer to build: what, from whom, to whom, how much, and where its nonce
/// and gas come from.
#[derive(Debug, Clone, Copy)]
pub struct TransferSpec {
    /// MT or ST.
    pub which: Which,
    /// The sender.
    pub from: Address,
    /// The recipient.
    pub to: Address,
    /// Base units.
    pub amount: U256,
    /// Nonce source.
    pub nonce: NonceSource,
    /// Gas source.
    pub gas: GasSource,
}

/// The outcome of a swap.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SwapOutcome {
    /// The swap address MT was sent to.
    pub swap_address: Address,
    /// `data` of the swap-address answer, unchanged.
    pub swap_address_raw: serde_json::Value,
    /// The MT transfer.
    pub submitted: Submitted,
    /// ST balance before, when waited for.
    pub st_before: Option<U256>,
    /// ST balance after the credit, when waited for.
    pub st_after: Option<U256>,
}

impl Flows<'_> {
    fn side(&self, which: Which) -> Result<&ChainSide, Error> {
        let bridge = self.bridge()?;
        Ok(match which {
            Which::Mt => &bridge.main,
            Which::St => &bridge.side,
        })
    }

    fn node(&self, which: Which) -> Result<NodeClient, Error> {
        let side = self.side(which)?;
        let url = side.rpc_url.as_deref().ok_or_else(|| {
            Error::BadInput(format!(
                "no node URL configured for the {} chain (set rpc_url in the profile)",
                side.symbol
            ))
        })?;
        NodeClient::new(url)
    }

    /// Builds the unsigned `transfer(to, amount)` of `spec`.
    pub async fn build_transfer(&self, spec: &TransferSpec) -> Result<RawTx, Error> {
        let TransferSpec {
            which,
            from,
            to,
            amount,
            nonce,
            gas,
        } = *spec;
        let side = self.side(which)?;
        let data = bridgectl_tx::calldata::erc20_transfer(to, amount);
        let nonce = match nonce {
            NonceSource::Fixed(n) => n,
            NonceSource::Platform => self.client.next_nonce(from, &side.environment_id).await?,
            NonceSource::Node => self.node(which)?.pending_nonce(from).await?,
        };
        let (gas_limit, gas_price) = match gas {
            GasSource::Fixed { limit, price } => (limit, price),
            GasSource::Node => {
                let node = self.node(which)?;
                let estimate = node.estimate_gas(from, side.token, &data).await?;
                // Headroom: state can change between estimate and inclusion.
                (
                    estimate.saturating_add(estimate / 5),
                    node.gas_price().await?,
                )
            }
            GasSource::Platform => {
                if which != Which::Mt {
                    return Err(Error::BadInput(
                        "the platform's raw-transfer operation builds MT transfers only; use \
                         the node or fixed gas for ST"
                            .into(),
                    ));
                }
                let raw = self
                    .client
                    .raw_mt_transfer(&side.symbol, &side.environment_id, from, to, amount)
                    .await?;
                let theirs = RawTx::from_value(&raw)?;
                (theirs.gas_limit, theirs.gas_price)
            }
        };
        Ok(RawTx {
            from,
            to: side.token,
            data: data.into(),
            nonce,
            gas_limit,
            gas_price,
            chain_id: side.chain_id,
            value: U256::ZERO,
        })
    }

    /// Begins a transfer flow of `kind` in the journal and builds its transaction.
    async fn begin_transfer(
        &self,
        kind: &str,
        spec: &TransferSpec,
    ) -> Result<(String, RawTx), Error> {
        let side = self.side(spec.which)?;
        let tx_id = uuid::Uuid::new_v4().to_string();
        self.journal.begin(
            &tx_id,
            kind,
            Some(&spec.from.to_string()),
            &json!({"token": side.symbol, "to": spec.to, "amount": spec.amount.to_string()}),
        )?;
        let raw = self
            .build_transfer(spec)
            .await
            .inspect_err(|e| self.fail(&tx_id, "build-failed", e))?;
        self.journal
            .record_raw_tx(&tx_id, &serde_json::to_value(&raw).unwrap_or_default())?;
        Ok((tx_id, raw))
    }

    /// Transfers MT or ST as `spec` says, signed locally, and waits for inclusion when
    /// the chain's node is known.
    pub async fn transfer(
        &self,
        spec: &TransferSpec,
        approver: &mut dyn Approver,
        progress: &mut dyn Progress,
    ) -> Result<Submitted, Error> {
        let side = self.side(spec.which)?;
        let intent = transfer_intent(
            side,
            spec.to,
            spec.amount,
            &format!("transfer {} to {}", side.symbol, spec.to),
        );
        let (tx_id, raw) = self.begin_transfer("transfer", spec).await?;
        let submitted = self
            .sign_and_submit(&tx_id, spec.from, &raw, &intent, approver, progress)
            .await?;
        self.await_inclusion(spec.which, &submitted, progress)
            .await?;
        Ok(submitted)
    }

    /// Waits until a submitted transaction is mined when the chain's node is known, and
    /// completes the flow; a revert is an error. Without a node there is nothing to ask,
    /// and the flow is completed on the platform's acceptance.
    pub async fn await_inclusion(
        &self,
        which: Which,
        submitted: &Submitted,
        progress: &mut dyn Progress,
    ) -> Result<(), Error> {
        let node = match (&self.submitter, self.node(which)) {
            // The node submitter already waited for the receipt.
            (crate::engine::Submitter::Node(_), _) | (_, Err(_)) => {
                return self.complete(
                    &submitted.tx_id,
                    &json!({"txHash": submitted.tx_hash}),
                    true,
                );
            }
            (_, Ok(node)) => node,
        };
        progress.step("waiting for the receipt");
        let receipt = node
            .wait_receipt(submitted.tx_hash, self.wait.interval, self.wait.timeout)
            .await?;
        let result = serde_json::to_value(&receipt).unwrap_or_default();
        if receipt.success {
            self.complete(&submitted.tx_id, &result, true)
        } else {
            self.complete(&submitted.tx_id, &result, false)?;
            Err(Error::BadInput(format!(
                "transaction {} was mined in block {} but reverted",
                submitted.tx_hash, receipt.block_number
            )))
        }
    }

    /// Swaps MT into ST: issue the swap address, send MT there, and with `wait` poll
    /// the ST balance until it moves.
    #[allow(clippy::too_many_arguments)]
    pub async fn swap(
        &self,
        from: Address,
        amount: U256,
        nonce: NonceSource,
        gas: GasSource,
        wait: bool,
        approver: &mut dyn Approver,
        progress: &mut dyn Progress,
    ) -> Result<SwapOutcome, Error> {
        let bridge = self.bridge()?;
        let (main, side) = (&bridge.main, &bridge.side);
        let tx_id = uuid::Uuid::new_v4().to_string();
        self.journal.begin(
            &tx_id,
            "swap",
            Some(&from.to_string()),
            &json!({"amount": amount.to_string(), "mt": main.symbol, "st": side.symbol}),
        )?;
        progress.step("issuing the swap address");
        let swap = self
            .client
            .swap_address(
                from,
                &SwapAddressRequest {
                    main_environment_id: main.environment_id.clone(),
                    side_environment_id: side.environment_id.clone(),
                    main_token_symbol: main.symbol.clone(),
                    side_token_symbol: side.symbol.clone(),
                },
            )
            .await
            .inspect_err(|e| self.fail(&tx_id, "swap-address-failed", e))?;
        self.journal.note(
            &tx_id,
            "swap-address",
            &json!({"address": swap.address, "raw": swap.raw}),
        )?;
        progress.step(&format!("swap address {}", swap.address));
        let st_before = if wait {
            Some(self.st_balance(from).await?)
        } else {
            None
        };
        let raw = self
            .build_transfer(&TransferSpec {
                which: Which::Mt,
                from,
                to: swap.address,
                amount,
                nonce,
                gas,
            })
            .await
            .inspect_err(|e| self.fail(&tx_id, "build-failed", e))?;
        self.journal
            .record_raw_tx(&tx_id, &serde_json::to_value(&raw).unwrap_or_default())?;
        let intent = transfer_intent(
            main,
            swap.address,
            amount,
            &format!(
                "swap: send {} to the swap address {}",
                main.symbol, swap.address
            ),
        );
        let submitted = self
            .sign_and_submit(&tx_id, from, &raw, &intent, approver, progress)
            .await?;
        let st_after = match st_before {
            Some(before) => Some(self.wait_st_credit(&tx_id, from, before, progress).await?),
            None => {
                self.await_inclusion(Which::Mt, &submitted, progress)
                    .await?;
                None
            }
        };
        if wait {
            self.complete(
                &tx_id,
                &json!({"stBefore": st_before.map(|b| b.to_string()),
                        "stAfter": st_after.map(|a| a.to_string())}),
                true,
            )?;
        }
        Ok(SwapOutcome {
            swap_address: swap.address,
            swap_address_raw: swap.raw,
            submitted,
            st_before,
            st_after,
        })
    }

    /// The ST balance of `owner`: from the side node if configured, else the platform.
    pub async fn st_balance(&self, owner: Address) -> Result<U256, Error> {
        self.token_balance(Which::St, owner).await
    }

    /// A token balance: from the node if configured, else the platform's balance
    /// operation.
    pub async fn token_balance(&self, which: Which, owner: Address) -> Result<U256, Error> {
        let side = self.side(which)?;
        if side.rpc_url.is_some() {
            return self.node(which)?.token_balance(side.token, owner).await;
        }
        match which {
            Which::Mt => self.client.balance(owner, &side.symbol, None).await,
            Which::St => {
                self.client
                    .balance(owner, &self.bridge()?.main.symbol, Some(&side.symbol))
                    .await
            }
        }
    }

    async fn wait_st_credit(
        &self,
        tx_id: &str,
        owner: Address,
        before: U256,
        progress: &mut dyn Progress,
    ) -> Result<U256, Error> {
        progress.step("waiting for the ST credit");
        let start = Instant::now();
        loop {
            let now = self.st_balance(owner).await?;
            if now > before {
                self.journal.note(
                    tx_id,
                    "credited",
                    &json!({"before": before.to_string(), "after": now.to_string()}),
                )?;
                return Ok(now);
            }
            if start.elapsed() >= self.wait.timeout {
                return Err(Error::Timeout {
                    what: format!("the ST credit of swap {tx_id}"),
                    seconds: self.wait.timeout.as_secs(),
                });
            }
            crate::timing::sleep(self.wait.interval.min(Duration::from_secs(2))).await;
        }
    }

    /// A managed-account transfer: the platform signs (operation 2) the transaction we
    /// built, we check that what it signed is exactly that, then submit (operation 3).
    pub async fn managed_transfer(
        &self,
        spec: &TransferSpec,
        progress: &mut dyn Progress,
    ) -> Result<Submitted, Error> {
        let (which, from) = (spec.which, spec.from);
        let side = self.side(which)?;
        let intent = transfer_intent(
            side,
            spec.to,
            spec.amount,
            &format!("managed transfer of {} to {}", side.symbol, spec.to),
        );
        let (tx_id, raw) = self.begin_transfer("managed-transfer", spec).await?;
        // The platform signs, but the caps are ours: nonce and gas may have come from it.
        self.check_before_signing(&tx_id, from, &raw, &intent)
            .await?;
        let raw_json = serde_json::to_value(&raw).unwrap_or_default();
        progress.step("asking the platform to sign for the managed account");
        let signed = self
            .client
            .sign_managed(from, &raw_json)
            .await
            .inspect_err(|e| self.fail(&tx_id, "sign-failed", e))?;
        let decoded = bridgectl_tx::decode::decode_signed(&signed)
            .map_err(Error::Tx)
            .inspect_err(|e| self.fail(&tx_id, "refused", e))?;
        crate::airgap::check_signed_matches(&decoded, &raw)
            .inspect_err(|e| self.fail(&tx_id, "refused", e))?;
        self.journal.record_signed(
            &tx_id,
            &crate::journal::SignedEntry {
                raw: &signed,
                hash: decoded.hash.to_string(),
                chain_id: raw.chain_id,
                nonce: raw.nonce,
            },
        )?;
        let submitted = self
            .submit_journaled(
                &tx_id,
                &signed,
                decoded.hash,
                raw.chain_id,
                raw.nonce,
                from,
                progress,
            )
            .await?;
        self.await_inclusion(which, &submitted, progress).await?;
        Ok(submitted)
    }

    /// Journals a failure (best effort: the original error is what the caller reports).
    pub(crate) fn fail(&self, tx_id: &str, step: &str, err: &Error) {
        let _ = self.journal.step(
            tx_id,
            FlowState::Failed,
            step,
            &json!({"error": err.to_string()}),
        );
    }
}
