//! The relayer: watches both chains and does what the platform's bridge does.
//!
//! - Swap: an MT `Transfer` to an issued swap address from a fee-delegation-registered
//!   sender mints ST to the swap address's user at the configured ratio. From an
//!   unregistered sender (possible by sending straight to the node, since the submit route
//!   refuses it) nothing is credited and a `failed` swap record says why
//!   (`GET /sandbox/v1/swaps`). The MT stays at the swap address.
//! - Redeem: an ST `Redeem` event moves the redemption to `confirmed`; the relayer pays
//!   MT from the bridge account's reserve at the inverse ratio, and the record goes to
//!   `completed` once the payout is mined, or `failed` (reserve too small, redeem reverted).

use std::time::Duration;

use alloy_dyn_abi::DynSolValue;
use alloy_primitives::{Address, B256, U256};

use crate::amount::{mt_to_st, st_to_mt};
use crate::contracts::{self, call, redeem_topic, transfer_topic};
use crate::state::{AppState, Redemption, SwapRecord, lock, now};

enum Pending {
    Swap(usize, B256),
    Redeem(B256, B256),
}

/// Starts the relayer from the current heads of both chains.
pub(crate) async fn spawn(state: AppState) -> Result<(), crate::Error> {
    let rpc_err = |chain, source| crate::Error::Rpc {
        chain,
        method: "eth_blockNumber",
        source,
    };
    let main_head = state
        .0
        .main
        .rpc
        .block_number()
        .await
        .map_err(|e| rpc_err("main", e))?;
    let side_head = state
        .0
        .side
        .rpc
        .block_number()
        .await
        .map_err(|e| rpc_err("side", e))?;
    state.0.latest_main_block.send_replace(main_head);
    let poll = Duration::from_millis(state.0.poll_ms.max(10));
    let s = state.clone();
    let handle = tokio::spawn(async move {
        let mut r = Relayer {
            state: s,
            main_done: main_head,
            side_done: side_head,
            pending: Vec::new(),
        };
        loop {
            r.tick().await;
            tokio::time::sleep(poll).await;
        }
    });
    lock(&state.0.tasks).push(handle.abort_handle());
    Ok(())
}

struct Relayer {
    state: AppState,
    main_done: u64,
    side_done: u64,
    pending: Vec<Pending>,
}

impl Relayer {
    async fn tick(&mut self) {
        // Errors are transient (node busy); the next tick retries from the same block.
        let _ = self.main().await;
        let _ = self.side().await;
        let _ = self.requested().await;
        let _ = self.payouts().await;
    }

    async fn main(&mut self) -> Result<(), crate::rpc::RpcError> {
        let st = &self.state.0;
        let head = st.main.rpc.block_number().await?;
        if head <= self.main_done {
            return Ok(());
        }
        let logs = st
            .main
            .rpc
            .logs(
                st.info.main.token_address,
                transfer_topic(),
                self.main_done + 1,
                head,
            )
            .await?;
        for log in logs {
            if log.topics.len() < 3 || log.data.len() < 32 {
                continue;
            }
            let from = Address::from_slice(&log.topics[1][12..]);
            let to = Address::from_slice(&log.topics[2][12..]);
            let Some(swap) = lock(&st.swap_addresses).get(&to).cloned() else {
                continue;
            };
            let mt = U256::from_be_slice(&log.data[..32]);
            let st_amount = mt_to_st(mt, st.ratio, st.info.main.decimals, st.info.side.decimals);
            let mut rec = SwapRecord {
                main_tx_hash: log.transaction_hash,
                from,
                swap_address: to,
                user_address: swap.user_address,
                mt_amount: mt.to_string(),
                st_amount: st_amount.map(|a| a.to_string()).unwrap_or_default(),
                status: "failed".into(),
                side_tx_hash: None,
                reason: None,
            };
            if !self.state.is_registered(from) {
                rec.reason = Some(format!(
                    "sender {from} is not registered for fee delegation; nothing was credited"
                ));
            } else {
                match st_amount {
                    None => rec.reason = Some("the converted amount overflows uint256".into()),
                    Some(a) if a.is_zero() => {
                        rec.reason = Some("the amount is worth less than one ST base unit".into())
                    }
                    Some(a) => {
                        let data = call(
                            crate::contracts::MINT_SELECTOR,
                            vec![
                                DynSolValue::Address(swap.user_address),
                                DynSolValue::Uint(a, 256),
                            ],
                        );
                        match st
                            .side
                            .send(&st.bridge, Some(st.info.side.token_address), data)
                            .await
                        {
                            Ok(h) => {
                                rec.status = "minting".into();
                                rec.side_tx_hash = Some(h);
                            }
                            Err(e) => rec.reason = Some(format!("minting ST failed: {e}")),
                        }
                    }
                }
            }
            let mut swaps = lock(&st.swaps);
            if let Some(h) = rec.side_tx_hash {
                self.pending.push(Pending::Swap(swaps.len(), h));
            }
            swaps.push(rec);
        }
        self.main_done = head;
        st.latest_main_block.send_if_modified(|b| {
            let changed = *b != head;
            *b = head;
            changed
        });
        Ok(())
    }

    async fn side(&mut self) -> Result<(), crate::rpc::RpcError> {
        let st = &self.state.0;
        let head = st.side.rpc.block_number().await?;
        if head <= self.side_done {
            return Ok(());
        }
        let logs = st
            .side
            .rpc
            .logs(
                st.info.side.token_address,
                redeem_topic(),
                self.side_done + 1,
                head,
            )
            .await?;
        for log in logs {
            if log.topics.len() < 2 || log.data.len() < 32 {
                continue;
            }
            let redeemer = Address::from_slice(&log.topics[1][12..]);
            let st_amount = U256::from_be_slice(&log.data[..32]);
            let hash = log.transaction_hash;
            self.state.note_redeem(hash, None, redeemer);
            let mt = st_to_mt(
                st_amount,
                st.ratio,
                st.info.main.decimals,
                st.info.side.decimals,
            );
            update(&self.state, hash, |r| {
                r.status = "confirmed".into();
                r.st_amount = Some(st_amount.to_string());
                r.mt_amount = mt.map(|m| m.to_string());
            });
            let outcome = self.pay(redeemer, mt).await;
            match outcome {
                Ok(main_hash) => {
                    update(&self.state, hash, |r| r.main_tx_hash = Some(main_hash));
                    self.pending.push(Pending::Redeem(hash, main_hash));
                }
                Err(reason) => update(&self.state, hash, |r| {
                    r.status = "failed".into();
                    r.reason = Some(reason);
                }),
            }
        }
        self.side_done = head;
        Ok(())
    }

    async fn pay(&self, to: Address, mt: Option<U256>) -> Result<B256, String> {
        let st = &self.state.0;
        let mt = mt.ok_or("the converted amount overflows uint256")?;
        if mt.is_zero() {
            return Err("the amount is worth less than one MT base unit".into());
        }
        let reserve = self
            .state
            .mt_balance(st.bridge.address())
            .await
            .map_err(|e| format!("cannot read the reserve: {}", e.message))?;
        if reserve < mt {
            return Err(format!(
                "the MT reserve is too small: it holds {reserve}, the redemption needs {mt}"
            ));
        }
        let data = call(
            contracts::TRANSFER_SELECTOR,
            vec![DynSolValue::Address(to), DynSolValue::Uint(mt, 256)],
        );
        st.main
            .send(&st.bridge, Some(st.info.main.token_address), data)
            .await
            .map_err(|e| format!("paying MT failed: {e}"))
    }

    /// Redeems submitted through the platform that reverted never emit `Redeem`: fail them.
    async fn requested(&mut self) -> Result<(), crate::rpc::RpcError> {
        let waiting: Vec<B256> = lock(&self.state.0.redemptions)
            .values()
            .filter(|r| r.status == "requested")
            .map(|r| r.tx_hash)
            .collect();
        for hash in waiting {
            if let Some(rcpt) = self.state.0.side.rpc.receipt(hash).await?
                && rcpt.status.to::<u64>() == 0
            {
                update(&self.state, hash, |r| {
                    r.status = "failed".into();
                    r.reason = Some("the redeem transaction reverted on the side chain".into());
                });
            }
        }
        Ok(())
    }

    async fn payouts(&mut self) -> Result<(), crate::rpc::RpcError> {
        let mut still = Vec::new();
        for p in std::mem::take(&mut self.pending) {
            let (chain, hash) = match &p {
                Pending::Swap(_, h) => (&self.state.0.side, *h),
                Pending::Redeem(_, h) => (&self.state.0.main, *h),
            };
            let rcpt = match chain.rpc.receipt(hash).await {
                Ok(Some(r)) => r,
                Ok(None) | Err(_) => {
                    still.push(p);
                    continue;
                }
            };
            let success = rcpt.status.to::<u64>() == 1;
            match p {
                Pending::Swap(i, _) => {
                    if let Some(rec) = lock(&self.state.0.swaps).get_mut(i) {
                        rec.status = if success { "completed" } else { "failed" }.into();
                        if !success {
                            rec.reason = Some("the ST mint reverted".into());
                        }
                    }
                }
                Pending::Redeem(side_hash, _) => update(&self.state, side_hash, |r| {
                    if success {
                        r.status = "completed".into();
                    } else {
                        r.status = "failed".into();
                        r.reason = Some("the MT payout reverted".into());
                    }
                }),
            }
        }
        self.pending = still;
        Ok(())
    }
}

fn update(state: &AppState, hash: B256, f: impl FnOnce(&mut Redemption)) {
    if let Some(r) = lock(&state.0.redemptions).get_mut(&hash) {
        f(r);
        r.updated_at = now();
    }
}
