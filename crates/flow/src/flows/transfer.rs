//! Token transfers bridgectl builds itself (a plain MT or ST transfer, and the MT leg of
//! a swap). The calldata is built here, never taken from outside; the nonce and gas come
//! from the node (`pending`), the platform or the caller, and are still checked against
//! the caps like any other raw transaction.

use alloy_primitives::{Address, U256};
use bridgectl_tx::RawTx;
use serde_json::json;

use super::run::Run;
use super::{Approver, ChainSide, Flows, Progress, Submitted, transfer_intent};
use crate::Error;
use crate::journal::FlowKind;
use crate::node::Node;

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

pub use super::token_side::TokenSide;

/// A token transfer to build: what, from whom, to whom, how much, and where its nonce
/// and gas come from.
#[derive(Debug, Clone, Copy)]
pub struct TransferSpec {
    /// MT or ST.
    pub token: TokenSide,
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

impl Flows {
    pub(crate) fn side(&self, which: TokenSide) -> Result<&ChainSide, Error> {
        Ok(self.bridge()?.side(which))
    }

    fn node(&self, which: TokenSide) -> Result<std::sync::Arc<dyn Node>, Error> {
        let side = self.side(which)?;
        self.node_of_chain(side.chain_id).ok_or(Error::Config(
            "this step needs the chain's node (FlowsBuilder::node, or its rpc_url)",
        ))?
    }

    /// Builds the unsigned `transfer(to, amount)` of `spec`.
    pub(crate) async fn build_transfer(&self, spec: &TransferSpec) -> Result<RawTx, Error> {
        let TransferSpec {
            token: which,
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
                if which != TokenSide::Mt {
                    return Err(Error::Config(
                        "the platform's raw-transfer operation builds MT transfers only; \
                         take ST gas from the node or give it",
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

    /// Starts a transfer flow of `kind` in the journal and builds its transaction.
    pub(crate) async fn start_transfer(
        &self,
        kind: FlowKind,
        spec: &TransferSpec,
        tx_id: Option<&str>,
    ) -> Result<(Run<'_>, RawTx), Error> {
        let side = self.side(spec.token)?;
        let run = self.start(
            tx_id,
            kind,
            spec.from,
            &json!({"token": side.symbol, "to": spec.to, "amount": spec.amount.to_string()}),
        )?;
        let raw = self
            .build_transfer(spec)
            .await
            .inspect_err(|e| run.fail("build-failed", e))?;
        self.journal
            .record_raw_tx(run.tx_id(), &serde_json::to_value(&raw).unwrap_or_default())?;
        Ok((run, raw))
    }

    /// Transfers MT or ST as `spec` says, signed here, and waits for inclusion when the
    /// chain's node is known.
    pub async fn transfer(
        &self,
        spec: &TransferSpec,
        approver: &mut impl Approver,
        progress: &mut dyn Progress,
    ) -> Result<Submitted, Error> {
        self.refuse_over_balance(spec.token, spec.from, spec.amount, progress)
            .await?;
        let submitted = self.submit_transfer(spec, None, approver, progress).await?;
        self.await_inclusion(&submitted, progress).await?;
        Ok(submitted)
    }

    /// The transfer of `spec` up to its submission, as flow `tx_id` (else a fresh one).
    pub(crate) async fn submit_transfer(
        &self,
        spec: &TransferSpec,
        tx_id: Option<&str>,
        approver: &mut impl Approver,
        progress: &mut dyn Progress,
    ) -> Result<Submitted, Error> {
        let intent = plain_transfer_intent(self.side(spec.token)?, spec.to, spec.amount);
        let (run, raw) = self.start_transfer(FlowKind::Transfer, spec, tx_id).await?;
        run.sign_and_submit(&raw, &intent, None, approver, progress)
            .await
    }

    /// Follows a submitted transaction to its end ([`Flows::follow`]): mined and final
    /// when the chain's node is known; a revert is an error. Without a node nothing can
    /// be observed here, and the flow stays `submitted` (its status says why).
    pub(crate) async fn await_inclusion(
        &self,
        submitted: &Submitted,
        progress: &mut dyn Progress,
    ) -> Result<super::follow::FlowStatus, Error> {
        self.follow(&submitted.tx_id, progress).await
    }

    /// The native coin balance (what pays for gas) on `which`'s chain, in wei: from its
    /// node; `None` when the profile names no node for it (the platform has no such
    /// operation).
    pub async fn gas_balance(
        &self,
        which: TokenSide,
        owner: Address,
    ) -> Result<Option<U256>, Error> {
        if !self.has_node(self.side(which)?.chain_id) {
            return Ok(None);
        }
        Ok(Some(self.node(which)?.balance(owner).await?))
    }

    /// Refuses a flow that would move `amount` of `which` from `from` while `from`
    /// holds less ([`Error::BalanceTooLow`], naming the balance): asked before anything
    /// is executed, built or signed, so that nothing reaches the platform that the chain
    /// would revert. A balance that cannot be read (no node, the platform's balance
    /// operation failing) refuses nothing: the checks after it still stand, and the
    /// progress says so.
    pub(crate) async fn refuse_over_balance(
        &self,
        which: TokenSide,
        from: Address,
        amount: U256,
        progress: &mut dyn Progress,
    ) -> Result<(), Error> {
        let side = self.side(which)?;
        let tokens = |amount| super::Tokens {
            amount,
            symbol: side.symbol.clone(),
            decimals: side.decimals,
        };
        match self.token_balance(which, from).await {
            Ok(holds) if holds < amount => {
                Err(Error::BalanceTooLow(Box::new(super::ShortSender {
                    from,
                    needs: tokens(amount),
                    holds: tokens(holds),
                })))
            }
            Ok(_) => Ok(()),
            Err(e) => {
                progress.step(&format!(
                    "the {} balance of {from} could not be read ({}); going on",
                    side.symbol,
                    crate::error::chain(&e)
                ));
                Ok(())
            }
        }
    }

    /// A token balance: from the node if configured, else the platform's balance
    /// operation.
    pub async fn token_balance(&self, which: TokenSide, owner: Address) -> Result<U256, Error> {
        let side = self.side(which)?;
        if self.has_node(side.chain_id) {
            return self.node(which)?.token_balance(side.token, owner).await;
        }
        match which {
            TokenSide::Mt => self.client.balance(owner, &side.symbol, None).await,
            TokenSide::St => {
                self.client
                    .balance(owner, &self.bridge()?.main.symbol, Some(&side.symbol))
                    .await
            }
        }
    }
}

/// What a transfer of `amount` of `side`'s token to `to` must do: the one intent of the
/// `transfer` flow and of a batch's transfer item.
pub(crate) fn plain_transfer_intent(
    side: &ChainSide,
    to: Address,
    amount: U256,
) -> bridgectl_tx::request::Intent {
    transfer_intent(
        side,
        to,
        amount,
        &format!("transfer {} to {}", side.symbol, to),
    )
}
