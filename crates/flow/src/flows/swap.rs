//! Swap: MT into ST. The platform issues a swap address; MT is sent there by a transfer
//! built and signed here; with `wait`, the ST balance is polled until it moves.
//!
//! A swap is completed only when its ST credit is seen. The ST balance is read and
//! journaled (`st-before`) before the MT transfer is signed, so that whoever follows the
//! flow later (`resume`, `status`) measures the credit against the same baseline as
//! a swap that waits. Without `wait` the MT transfer's inclusion is awaited and the flow
//! stays `submitted`: its credit was not observed.

use std::time::Duration;

use alloy_primitives::{Address, U256};
use serde::Serialize;
use serde_json::json;

use super::{
    Approver, ChainSide, Flows, GasSource, NonceSource, Progress, Submitted, TransferSpec,
    WaitClock, Which, transfer_intent,
};
use crate::Error;
use crate::client::{SwapAddress, SwapAddressRequest};
use crate::journal::{FlowKind, FlowState};

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
    /// Wait for the ST credit (else for the MT transfer's inclusion only).
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
    /// ST balance before the MT transfer, when it could be read (always with `wait`).
    pub st_before: Option<U256>,
    /// ST balance after the credit, when waited for.
    pub st_after: Option<U256>,
    /// The flow's state at the end: `completed` once the credit was seen, `submitted`
    /// when it was not awaited.
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
        self.refuse_over_balance(Which::Mt, spec.from, spec.amount, progress)
            .await?;
        let (swap, st_before, submitted) = self.submit_swap(spec, None, approver, progress).await?;
        let tx_id = &submitted.tx_id;
        let (st_after, state) = if spec.wait {
            let followed = self.follow(tx_id, progress).await?;
            let after = followed.st_now.as_deref().and_then(|a| a.parse().ok());
            (after, followed.state.unwrap_or(FlowState::Submitted))
        } else {
            // Mined is not credited: the flow stays `submitted` until its credit is seen.
            self.await_mined(tx_id, submitted.chain_id, submitted.tx_hash, progress)
                .await?;
            (None, FlowState::Submitted)
        };
        Ok(SwapOutcome {
            swap_address: swap.address,
            swap_address_raw: swap.raw,
            submitted,
            st_before,
            st_after,
            state,
        })
    }

    /// The swap of `spec` up to the submission of its MT transfer, as flow `tx_id` (else
    /// a fresh one): the swap address, the ST balance before (journaled; a failure to
    /// read it stops the swap only when `spec.wait` needs it), the submission.
    pub(crate) async fn submit_swap(
        &self,
        spec: &SwapSpec,
        tx_id: Option<&str>,
        approver: &mut impl Approver,
        progress: &mut dyn Progress,
    ) -> Result<(SwapAddress, Option<U256>, Submitted), Error> {
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
            &json!({"address": swap.address, "raw": swap.raw}),
        )?;
        progress.step(&format!("swap address {}", swap.address));
        let st_before = match self.token_balance(Which::St, from).await {
            Ok(before) => {
                self.journal_st_before(tx_id, before)?;
                Some(before)
            }
            Err(e) if wait => {
                run.fail("balance-failed", &e);
                return Err(e);
            }
            // Only a later `resume` or `status` would have measured the credit by it.
            Err(_) => None,
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
            .inspect_err(|e| run.fail("build-failed", e))?;
        self.journal
            .record_raw_tx(tx_id, &serde_json::to_value(&raw).unwrap_or_default())?;
        let intent = swap_intent(main, swap.address, amount);
        let submitted = run
            .sign_and_submit(&raw, &intent, None, approver, progress)
            .await?;
        Ok((swap, st_before, submitted))
    }

    /// Polls `owner`'s ST balance until it is above `before` (the credit of swap
    /// `tx_id`), journaled as `credited`; [`Error::Timeout`] after the flows' wait.
    pub(crate) async fn wait_st_credit(
        &self,
        tx_id: &str,
        owner: Address,
        before: U256,
        progress: &mut dyn Progress,
    ) -> Result<U256, Error> {
        progress.step("waiting for the ST credit");
        let mut clock = WaitClock::new("the ST credit", self.wait.timeout);
        loop {
            let now = clock
                .during(self.token_balance(Which::St, owner), progress)
                .await?;
            if now > before {
                self.journal.note(
                    tx_id,
                    "credited",
                    &json!({"before": before.to_string(), "after": now.to_string()}),
                )?;
                return Ok(now);
            }
            if clock.elapsed() >= self.wait.timeout {
                return Err(Error::Timeout {
                    what: format!("the ST credit of swap {tx_id}"),
                    seconds: self.wait.timeout.as_secs(),
                    flow: Some(tx_id.to_owned()),
                    tx_hash: None,
                });
            }
            clock
                .during(
                    self.timing
                        .sleep(self.wait.interval.min(Duration::from_secs(2))),
                    progress,
                )
                .await;
        }
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
