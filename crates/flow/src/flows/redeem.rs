//! Redeem: ST back into MT through the redeem transaction action, then the redemption
//! record polled until it is terminal.

use std::collections::BTreeMap;

use alloy_primitives::{Address, B256, U256};
use bridgectl_tx::request::Intent;
use serde::Serialize;

use super::{ActionCall, Approver, Flows, Progress, Submitted};
use crate::Error;
use crate::client::Redemption;
use crate::journal::FlowKind;
use crate::node::Node;
use crate::rpc::{Receipt, TxPresence};

/// The outcome of a redeem, as far as it got.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RedeemOutcome {
    /// The submission.
    pub submitted: Submitted,
    /// The last redemption record seen.
    pub redemption: Option<Redemption>,
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
        let redemption = self
            .wait_redemption(
                &submitted.tx_id,
                submitted.tx_hash,
                self.wait.interval,
                true,
                progress,
            )
            .await?;
        Ok(RedeemOutcome {
            submitted,
            redemption: Some(redemption),
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
        let mut inputs = BTreeMap::new();
        inputs.insert("_amount".to_owned(), amount.to_string());
        Ok(ActionCall {
            action: bridge.redeem_action.clone(),
            from,
            inputs,
            intent: Intent::redeem(side.token, side.chain_id, amount)
                .with_token(&side.symbol, side.decimals)
                .described(format!(
                    "redeem {} {} into {}",
                    side.tokens(amount),
                    side.symbol,
                    bridge.main.symbol
                ))
                // Built from the caller's own amount: the operator's pin of the call.
                .pinned_by_caller(),
        })
    }

    /// Polls the redemption record of flow `tx_id` every `interval` until it ends: by
    /// txId, then by hash; by the hash only, without `by_tx_id`: a flow replaced at its
    /// nonce ended by another transaction than the one the platform built for its txId,
    /// and the platform may still answer for that one.
    ///
    /// The platform's word is checked against the chain's node (when the bridge names
    /// one): an end it reports is taken once the node has the transaction mined, and while
    /// the record says nothing final the transaction is looked at every
    /// [`WAIT_REPORT`](super::WAIT_REPORT). One the node has not mined after
    /// [`NOT_MINED_AFTER`] is reported (pending in its pool, or unknown to it), and a
    /// wait that runs out names it ([`Error::Timeout`] with `not_mined`): a relayer
    /// cannot redeem what the chain has not mined, and such a transaction is replaced or
    /// cancelled, not waited for.
    pub(crate) async fn wait_redemption(
        &self,
        tx_id: &str,
        tx_hash: B256,
        interval: std::time::Duration,
        by_tx_id: bool,
        progress: &mut dyn Progress,
    ) -> Result<Redemption, Error> {
        let asked = if by_tx_id {
            tx_id.to_owned()
        } else {
            tx_hash.to_string()
        };
        let mut clock = super::WaitClock::new("the relayer", self.wait.timeout);
        let mut last_status = String::new();
        let side = &self.bridge()?.side;
        let side_env = side.environment_id.clone();
        let node = self.node_of_chain(side.chain_id).transpose()?;
        let mut chain = ChainWatch::default();
        let mut last_error: Option<String> = None;
        let timed_out = |last: &str, error: &Option<String>, chain: &ChainWatch| Error::Timeout {
            what: format!(
                "redemption {tx_id} (last status {}{})",
                if last.is_empty() { "none" } else { last },
                error
                    .as_ref()
                    .map(|e| format!(", last error: {e}"))
                    .unwrap_or_default()
            ),
            seconds: self.wait.timeout.as_secs(),
            flow: Some(tx_id.to_owned()),
            not_mined: chain.receipt.is_none().then_some(chain.presence).flatten(),
            tx_hash: Some(tx_hash),
        };
        loop {
            // The whole wait is bounded, a slow answer included.
            let remaining = self.wait.timeout.saturating_sub(clock.elapsed());
            let poll = tokio::time::timeout(remaining, self.client.redemption(&asked, &side_env));
            let Ok(answer) = clock.during(poll, progress).await else {
                return Err(timed_out(&last_status, &last_error, &chain));
            };
            let found = match answer {
                Ok(r) => Some(r),
                // Not recorded yet (the relayer has not seen the block): keep waiting.
                Err(Error::Platform { error, .. }) if error.status == 404 => self
                    .client
                    .redemption(&tx_hash.to_string(), &side_env)
                    .await
                    .ok(),
                // Polling is itself a retry loop: a server error or a lost connection
                // is "no answer this time" until the wait runs out.
                Err(e @ (Error::Http { .. } | Error::Platform { .. })) if e.is_transient() => {
                    progress.step(&format!(
                        "no answer this time ({}); polling on",
                        bridgectl_tx::text::printable(&e.to_string())
                    ));
                    last_error = Some(e.to_string());
                    None
                }
                Err(e) => return Err(e),
            };
            let terminal = found.as_ref().is_some_and(Redemption::is_terminal);
            if let Some(node) = &node
                && chain.receipt.is_none()
                && (terminal || chain.due(clock.elapsed()))
            {
                let elapsed = clock.elapsed();
                if let Some(report) = clock
                    .during(chain.look(&**node, tx_hash, elapsed), progress)
                    .await?
                {
                    progress.step(&report);
                }
                if let Some(r) = &chain.receipt {
                    self.record_mined(tx_id, r)?;
                }
            }
            if let Some(r) = found {
                let changed = r.status != last_status;
                if changed {
                    progress.step(&format!(
                        "redemption {}",
                        bridgectl_tx::text::printable(&r.status)
                    ));
                    last_status.clone_from(&r.status);
                }
                if terminal {
                    match super::follow::redemption_end(&r, chain.receipt.as_ref(), node.is_some())
                    {
                        Ok((state, step, result)) => {
                            self.journal.observe(tx_id, Some(state), step, &result)?;
                            return Ok(r);
                        }
                        Err(why) if changed => {
                            progress.step(&why);
                            self.journal
                                .observe(tx_id, None, "redemption-claimed", &r.raw)?;
                        }
                        Err(_) => {}
                    }
                } else if changed {
                    // One commit per change of status, not per poll.
                    self.journal.observe(tx_id, None, "redemption", &r.raw)?;
                }
            }
            if clock.elapsed() >= self.wait.timeout {
                return Err(timed_out(&last_status, &last_error, &chain));
            }
            clock.during(self.timing.sleep(interval), progress).await;
        }
    }
}

/// How long a redeem's transaction may stay unmined before the wait says so.
pub const NOT_MINED_AFTER: std::time::Duration = std::time::Duration::from_secs(10);

/// What the chain's node said of a redeem's transaction during its wait.
#[derive(Default)]
struct ChainWatch {
    receipt: Option<Receipt>,
    presence: Option<TxPresence>,
    /// When the node was last asked (time into the wait).
    asked: Option<std::time::Duration>,
    /// Whether "not mined" was reported for `presence` already.
    reported: Option<TxPresence>,
}

impl ChainWatch {
    /// Whether the node is due to be asked again.
    fn due(&self, elapsed: std::time::Duration) -> bool {
        self.asked
            .is_none_or(|at| elapsed.saturating_sub(at) >= super::WAIT_REPORT)
    }

    /// Asks `node` for `hash`'s receipt, and where it has it if not mined; the report of
    /// a transaction not mined after [`NOT_MINED_AFTER`], once per change of where it is.
    async fn look(
        &mut self,
        node: &dyn Node,
        hash: B256,
        elapsed: std::time::Duration,
    ) -> Result<Option<String>, Error> {
        self.asked = Some(elapsed);
        self.receipt = node.receipt(hash).await?;
        if self.receipt.is_some() {
            return Ok(None);
        }
        let presence = node.presence(hash).await?;
        self.presence = Some(presence);
        if elapsed >= NOT_MINED_AFTER && self.reported != Some(presence) {
            self.reported = Some(presence);
            return Ok(Some(format!(
                "transaction {hash} not mined after {} s: {}; the relayer cannot redeem it \
                 until it is (it can be replaced at a higher gas price, or cancelled)",
                elapsed.as_secs(),
                presence.describe()
            )));
        }
        Ok(None)
    }
}
