//! Redeem: ST back into MT through the redeem transaction action, then followed to its
//! end (`follow.rs`): its transaction mined, the redemption record terminal, its MT payout
//! mined, each final on its chain.

use std::collections::BTreeMap;

use alloy_primitives::{Address, U256};
use bridgectl_tx::request::Intent;
use serde::Serialize;

use super::{ActionCall, Approver, Flows, Progress, Submitted};
use crate::Error;
use crate::client::Redemption;
use crate::journal::FlowKind;

/// The outcome of a redeem, as far as it got.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RedeemOutcome {
    /// The submission.
    pub submitted: Submitted,
    /// The last redemption record seen.
    pub redemption: Option<Redemption>,
    /// What was observed of its end: its state (`completed` once final, `confirming`
    /// when waited for to inclusion only, `submitted` when its end cannot be observed
    /// here), the facts it rests on, the MT payout.
    pub followed: super::FlowStatus,
}

impl Flows {
    /// Redeems `amount` ST (base units) of `from` into MT: refused at once when `from`
    /// holds less ST ([`Error::BalanceTooLow`]); else the redeem action (its rawTx
    /// checked against `redeem(amount)` on the ST contract before `approver` is asked),
    /// then the redemption result polled until terminal or the wait times out.
    pub async fn redeem(
        &self,
        from: Address,
        amount: U256,
        approver: &mut impl Approver,
        progress: &mut dyn Progress,
    ) -> Result<RedeemOutcome, Error> {
        self.refuse_over_balance(super::TokenSide::St, from, amount, progress)
            .await?;
        let submitted = self
            .submit_redeem(from, amount, None, approver, progress)
            .await?;
        let followed = self.follow(&submitted.tx_id, progress).await?;
        Ok(RedeemOutcome {
            submitted,
            redemption: followed.redemption.clone(),
            followed,
        })
    }

    /// The redeem up to its submission, as flow `tx_id` (else a fresh one).
    pub(crate) async fn submit_redeem(
        &self,
        from: Address,
        amount: U256,
        tx_id: Option<&str>,
        approver: &mut impl Approver,
        progress: &mut dyn Progress,
    ) -> Result<Submitted, Error> {
        let call = self.redeem_call(from, amount)?;
        let run = self.start(tx_id, FlowKind::Redeem, from, &call.journaled())?;
        Ok(run.sign_action(&call, approver, progress).await?.0)
    }

    /// The redeem action call for `amount` ST of `from`: the intent is `redeem(amount)`
    /// on the ST contract of the bridge description (the trust root). A redeem resumed
    /// at its approval is checked against this, rebuilt, not against the journal's copy.
    pub(crate) fn redeem_call(&self, from: Address, amount: U256) -> Result<ActionCall, Error> {
        let bridge = self.bridge()?;
        let side = &bridge.side;
        // What it pays at the peg, when the profile has the ratio: the operator sees the
        // MT to be paid before signing (the platform's payout is checked on the chain).
        let paid = bridge
            .swap_credit
            .ratio
            .and_then(|r| r.payout_for(amount, bridge.main.decimals, side.decimals))
            .map(|mt| {
                format!(
                    " (pays {} {} at the peg)",
                    bridge.main.tokens(mt),
                    bridge.main.symbol
                )
            })
            .unwrap_or_default();
        let mut inputs = BTreeMap::new();
        inputs.insert("_amount".to_owned(), amount.to_string());
        Ok(ActionCall {
            action: bridge.redeem_action.clone(),
            from,
            inputs,
            intent: Intent::redeem(side.token, side.chain_id, amount)
                .with_token(&side.symbol, side.decimals)
                .described(format!(
                    "redeem {} {} into {}{paid}",
                    side.tokens(amount),
                    side.symbol,
                    bridge.main.symbol
                ))
                // Built from the caller's own amount: the operator's pin of the call.
                .pinned_by_caller(),
        })
    }
}
