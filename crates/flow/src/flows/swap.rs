//! Swap: MT into ST. The platform issues a swap address; MT is sent there by a transfer
//! built and signed here; with `wait`, the swap is followed until its own ST credit is on
//! the side chain.
//!
//! A swap is completed only by its own credit (`credit.rs`): its MT transfer mined, then
//! an ST transfer from the credit source to its user, after that, of the amount the peg
//! gives, claimed by no other flow. The side chain's newest block is journaled
//! (`side-from`) before the MT transfer is signed, so that whoever follows the flow later
//! (`resume`, `status`, a batch) looks for its credit from the same block on. Without
//! `wait` the MT transfer's inclusion is awaited and the flow stays `submitted`: its credit
//! was not observed. With it, both facts are awaited until final on their chains (or,
//! with [`crate::Until::Included`], observed).

use alloy_primitives::{Address, U256};
use serde::Serialize;
use serde_json::json;

use super::credit::SIDE_FROM;
use super::{
    Approver, ChainSide, Flows, GasSource, NonceSource, Progress, Submitted, TokenSide,
    TransferSpec, transfer_intent,
};
use crate::Error;
use crate::client::{SwapAddress, SwapAddressRequest};
use crate::journal::{Credit, FactKind, FlowKind, FlowState};
use crate::rpc::Receipt;

/// A swap to run.
#[derive(Debug, Clone, Copy)]
pub struct SwapSpec {
    /// The account that sends MT and receives ST.
    pub from: Address,
    /// MT base units.
    pub amount: U256,
    /// Nonce of the MT transfer.
    pub nonce: NonceSource,
    /// Gas of the MT transfer.
    pub gas: GasSource,
    /// Wait for its own ST credit (else for the MT transfer's inclusion only).
    pub wait: bool,
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
    /// ST balance before the MT transfer, when it could be read: shown, never what
    /// decides (the credit does).
    pub st_before: Option<U256>,
    /// ST balance once the credit was claimed, when waited for: shown, never what decides.
    pub st_after: Option<U256>,
    /// The swap's own ST credit, when waited for.
    pub credit: Option<Credit>,
    /// The ST the peg ratio gives for the MT sent, when the bridge description has it.
    pub expected_credit: Option<U256>,
    /// The flow's state at the end: `completed` once its credit was claimed and final,
    /// `confirming` when awaited to its credit's inclusion only, `submitted` when it was
    /// not awaited.
    pub state: FlowState,
}

impl Flows {
    /// Swaps MT into ST as `spec` says.
    pub async fn swap(
        &self,
        spec: &SwapSpec,
        approver: &mut impl Approver,
        progress: &mut dyn Progress,
    ) -> Result<SwapOutcome, Error> {
        // Nothing asked of the platform for MT the sender does not hold.
        self.refuse_over_balance(TokenSide::Mt, spec.from, spec.amount, progress)
            .await?;
        let (swap, st_before, submitted) = self.submit_swap(spec, None, approver, progress).await?;
        let tx_id = &submitted.tx_id;
        let (credit, st_after, state) = if spec.wait {
            let followed = self.follow(tx_id, progress).await?;
            let after = match followed.credit {
                Some(_) => self.token_balance(TokenSide::St, spec.from).await.ok(),
                None => None,
            };
            (
                followed.credit,
                after,
                followed.state.unwrap_or(FlowState::Submitted),
            )
        } else {
            // Mined is not credited: the flow stays `submitted` until its credit is seen.
            self.await_mined(tx_id, submitted.chain_id, submitted.tx_hash, progress)
                .await?;
            (None, None, FlowState::Submitted)
        };
        let bridge = self.bridge()?;
        let expected_credit = bridge
            .swap_credit
            .ratio
            .and_then(|r| r.credit_for(spec.amount, bridge.main.decimals, bridge.side.decimals));
        Ok(SwapOutcome {
            swap_address: swap.swap_address,
            swap_address_raw: swap.swap_address_raw,
            submitted,
            st_before,
            st_after,
            credit,
            expected_credit,
            state,
        })
    }

    /// The swap of `spec` up to the submission of its MT transfer, as flow `tx_id` (else
    /// a fresh one): [`Flows::start_swap`], then the submission.
    pub(crate) async fn submit_swap(
        &self,
        spec: &SwapSpec,
        tx_id: Option<&str>,
        approver: &mut impl Approver,
        progress: &mut dyn Progress,
    ) -> Result<(SwapAddress, Option<U256>, Submitted), Error> {
        let (run, swap, st_before, raw) = self.start_swap(spec, tx_id, progress).await?;
        let intent = swap_intent(&self.bridge()?.main, swap.swap_address, spec.amount);
        let submitted = run
            .sign_and_submit(&raw, &intent, None, approver, progress)
            .await?;
        Ok((swap, st_before, submitted))
    }

    /// A swap flow up to its MT transfer, built and journaled, not signed: the swap
    /// address, the side chain's newest block (journaled: its credit is looked for from
    /// there; a failure to read it stops the swap only when `spec.wait` needs it), the ST
    /// balance before (shown only), the transfer to the swap address.
    pub(crate) async fn start_swap(
        &self,
        spec: &SwapSpec,
        tx_id: Option<&str>,
        progress: &mut dyn Progress,
    ) -> Result<
        (
            super::run::Run<'_>,
            SwapAddress,
            Option<U256>,
            bridgectl_tx::RawTx,
        ),
        Error,
    > {
        let SwapSpec {
            from,
            amount,
            nonce,
            gas,
            wait,
        } = *spec;
        let bridge = self.bridge()?;
        let (main, side) = (&bridge.main, &bridge.side);
        let run = self.start(
            tx_id,
            FlowKind::Swap,
            from,
            &json!({"amount": amount.to_string(), "mt": main.symbol, "st": side.symbol}),
        )?;
        let tx_id = run.tx_id();
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
            .inspect_err(|e| run.fail("swap-address-failed", e))?;
        self.journal.note(
            tx_id,
            "swap-address",
            &json!({"address": swap.swap_address, "raw": swap.swap_address_raw}),
        )?;
        progress.step(&format!("swap address {}", swap.swap_address));
        let side_head = match self.node_of_chain(side.chain_id) {
            Some(node) => async { node?.block_number().await }.await.map(Some),
            None => Ok(None),
        };
        match side_head {
            Ok(Some(block)) => self
                .journal
                .note(tx_id, SIDE_FROM, &json!({"block": block}))?,
            Ok(None) if wait => {
                let e = Error::Config(
                    "waiting for a swap's ST credit needs the side chain's node (its rpc_url): \
                     the credit is read from its logs",
                );
                run.fail("side-chain-unknown", &e);
                return Err(e);
            }
            // A node of another chain is refused whether or not the credit is awaited.
            Err(e) if wait || matches!(e, Error::NodeOnWrongChain { .. }) => {
                run.fail("side-chain-failed", &e);
                return Err(e);
            }
            // Its credit cannot be told apart later: the flow stays `submitted`.
            Ok(None) | Err(_) => {}
        }
        let st_before = match self.token_balance(TokenSide::St, from).await {
            Ok(before) => {
                self.journal_st_before(tx_id, before)?;
                Some(before)
            }
            Err(_) => None,
        };
        let raw = self
            .build_transfer(&TransferSpec {
                token: TokenSide::Mt,
                from,
                to: swap.swap_address,
                amount,
                nonce,
                gas,
            })
            .await
            .inspect_err(|e| run.fail("build-failed", e))?;
        self.journal
            .record_raw_tx(tx_id, &serde_json::to_value(&raw).unwrap_or_default())?;
        Ok((run, swap, st_before, raw))
    }

    /// Waits until flow `tx_id`'s transaction `hash` on `chain_id` is mined and journals
    /// that (the receipt, a fact of the flow), without ending the flow: a swap not
    /// awaited to its credit. `None` when the chain's node is not known. A revert is
    /// [`Error::Reverted`] (the flow's end: followed later like any other).
    async fn await_mined(
        &self,
        tx_id: &str,
        chain_id: u64,
        hash: alloy_primitives::B256,
        progress: &mut dyn Progress,
    ) -> Result<Option<Receipt>, Error> {
        let Some(node) = self.node_of_chain(chain_id) else {
            return Ok(None);
        };
        progress.step("waiting for the receipt");
        let receipt = node?
            .wait_receipt(
                hash,
                self.wait.interval,
                self.wait.timeout,
                &self.timing,
                progress,
            )
            .await
            .map_err(|e| e.for_flow(tx_id))?;
        self.record_mined(tx_id, &receipt, crate::journal::Purpose::Original)?;
        self.journal.record_fact(
            tx_id,
            &super::follow::receipt_fact(FactKind::Receipt, chain_id, &receipt),
        )?;
        if !receipt.success {
            return Err(Error::Reverted {
                tx_hash: hash,
                block: receipt.block_number,
            });
        }
        Ok(Some(receipt))
    }
}

/// What a swap's MT transfer must do: send `amount` of `main`'s token to the swap
/// address the platform issued (the swap flow's intent, and a batch swap item's).
pub(crate) fn swap_intent(
    main: &ChainSide,
    swap_address: Address,
    amount: U256,
) -> bridgectl_tx::request::Intent {
    transfer_intent(
        main,
        swap_address,
        amount,
        &format!(
            "swap: send {} to the swap address {}",
            main.symbol, swap_address
        ),
    )
}
