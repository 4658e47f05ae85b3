//! The relayer: watches both chains and does what the platform's bridge does, as a
//! careful bridge does it.
//!
//! - Swap: an MT `Transfer` to an issued swap address from a fee-delegation-registered
//!   sender mints ST to the swap address's user at the configured ratio. From an
//!   unregistered sender (possible by sending straight to the node, since the submit route
//!   refuses it) nothing is credited and a `failed` swap record says why
//!   (`GET /sandbox/v1/swaps`). The MT stays at the swap address.
//! - Redeem: an ST `Redeem` event moves the redemption to `confirmed`; the relayer pays
//!   MT from the bridge account's reserve at the inverse ratio, and the record goes to
//!   `completed` once the payout is mined, or `failed` (reserve too small, redeem reverted).
//!
//! Careful, as a bridge on a chain that reorganises must be:
//! - it acts on a transfer or a `Redeem` only once its block has the relayer's
//!   confirmations (`RelayerConfig::confirmations`): a reorganisation shallower than
//!   that takes back nothing it acted on;
//! - its own credits and payouts are watched to the same depth, and one a
//!   reorganisation took back is sent again (its very bytes; a new transaction if another
//!   took its nonce meanwhile); a swap's record is `completed` and a redemption's payout
//!   reported only once their transaction is that deep.
//!
//! A reorganisation deeper than the relayer's depth can take back a transfer it has
//! credited already; the sandbox does not claw the credit back (neither would a bridge
//! that trusted that depth).

use std::collections::HashSet;
use std::time::Duration;

use alloy_dyn_abi::DynSolValue;
use alloy_primitives::{Address, B256, Bytes, U256};

use crate::amount::{mt_to_st, st_to_mt};
use crate::chain::Chain;
use crate::contracts::{self, call, redeem_topic, transfer_topic};
use crate::state::{AppState, Redemption, SwapRecord, lock, now};

/// What one of the relayer's own transactions is for.
#[derive(Clone, Copy)]
enum Purpose {
    /// The mint of swap record `.0`.
    Credit(usize),
    /// The MT payout of the redemption of side-chain transaction `.0`.
    Payout(B256),
}

/// One of the relayer's own transactions, watched until its confirmations.
struct Own {
    purpose: Purpose,
    /// Its call: what is sent anew if its bytes cannot be.
    to: Address,
    data: Bytes,
    hash: B256,
    raw: Bytes,
    /// Whether it was seen mined (and so, if gone now, taken back).
    seen_mined: bool,
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
            acted: HashSet::new(),
            own: Vec::new(),
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
    /// The newest block of each chain acted on (deep enough).
    main_done: u64,
    side_done: u64,
    /// The logs acted on (transaction, log index): a block looked at again after a
    /// reorganisation does not credit or pay twice.
    acted: HashSet<(B256, u64)>,
    own: Vec<Own>,
}

impl Relayer {
    async fn tick(&mut self) {
        // Errors are transient (node busy); the next tick retries from the same block.
        let _ = self.main().await;
        let _ = self.side().await;
        let _ = self.requested().await;
        let _ = self.watch_own().await;
        let head = self.state.0.main.rpc.block_number().await.unwrap_or(0);
        self.state.0.latest_main_block.send_if_modified(|b| {
            let changed = *b != head && head > 0;
            if changed {
                *b = head;
            }
            changed
        });
    }

    /// The newest block of `chain` with the relayer's confirmations.
    async fn deep_head(&self, chain: &Chain) -> Result<u64, crate::rpc::RpcError> {
        let head = chain.rpc.block_number().await?;
        Ok((head + 1).saturating_sub(self.state.0.relayer_confirmations))
    }

    async fn main(&mut self) -> Result<(), crate::rpc::RpcError> {
        let st = &self.state.0;
        let deep = self.deep_head(&st.main).await?;
        if deep <= self.main_done {
            return Ok(());
        }
        let logs = st
            .main
            .rpc
            .logs(
                st.info.main.token_address,
                transfer_topic(),
                self.main_done + 1,
                deep,
            )
            .await?;
        for log in logs {
            if log.topics.len() < 3
                || log.data.len() < 32
                || !self
                    .acted
                    .insert((log.transaction_hash, log.log_index.to()))
            {
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
            let mut sent = None;
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
                        let token = st.info.side.token_address;
                        match st
                            .side
                            .send_kept(&st.bridge, Some(token), data.clone(), None)
                            .await
                        {
                            Ok((h, raw)) => {
                                rec.status = "minting".into();
                                rec.side_tx_hash = Some(h);
                                sent = Some((token, data, h, raw));
                            }
                            Err(e) => rec.reason = Some(format!("minting ST failed: {e}")),
                        }
                    }
                }
            }
            let mut swaps = lock(&st.swaps);
            if let Some((to, data, hash, raw)) = sent {
                self.own.push(Own {
                    purpose: Purpose::Credit(swaps.len()),
                    to,
                    data,
                    hash,
                    raw,
                    seen_mined: false,
                });
            }
            swaps.push(rec);
        }
        self.main_done = deep;
        Ok(())
    }

    async fn side(&mut self) -> Result<(), crate::rpc::RpcError> {
        let st = &self.state.0;
        let deep = self.deep_head(&st.side).await?;
        if deep <= self.side_done {
            return Ok(());
        }
        let logs = st
            .side
            .rpc
            .logs(
                st.info.side.token_address,
                redeem_topic(),
                self.side_done + 1,
                deep,
            )
            .await?;
        for log in logs {
            if log.topics.len() < 2
                || log.data.len() < 32
                || !self
                    .acted
                    .insert((log.transaction_hash, log.log_index.to()))
            {
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
            match self.pay(redeemer, mt).await {
                Ok((to, data, main_hash, raw)) => {
                    update(&self.state, hash, |r| r.main_tx_hash = Some(main_hash));
                    self.own.push(Own {
                        purpose: Purpose::Payout(hash),
                        to,
                        data,
                        hash: main_hash,
                        raw,
                        seen_mined: false,
                    });
                }
                Err(reason) => update(&self.state, hash, |r| {
                    r.status = "failed".into();
                    r.reason = Some(reason);
                }),
            }
        }
        self.side_done = deep;
        Ok(())
    }

    async fn pay(
        &self,
        to: Address,
        mt: Option<U256>,
    ) -> Result<(Address, Bytes, B256, Bytes), String> {
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
        let token = st.info.main.token_address;
        st.main
            .send_kept(&st.bridge, Some(token), data.clone(), None)
            .await
            .map(|(hash, raw)| (token, data, hash, raw))
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

    /// The relayer's own credits and payouts: each done once it has the relayer's
    /// confirmations, and sent again when a reorganisation took it back.
    async fn watch_own(&mut self) -> Result<(), crate::rpc::RpcError> {
        let depth = self.state.0.relayer_confirmations;
        let mut still = Vec::new();
        for mut own in std::mem::take(&mut self.own) {
            let chain = match own.purpose {
                Purpose::Credit(_) => &self.state.0.side,
                Purpose::Payout(_) => &self.state.0.main,
            };
            let receipt = match chain.rpc.receipt(own.hash).await {
                Ok(r) => r,
                Err(_) => {
                    still.push(own);
                    continue;
                }
            };
            let Some(rcpt) = receipt else {
                // Not mined: in the pool still, or taken back (gone from the pool too).
                if own.seen_mined || !chain.rpc.knows(own.hash).await.unwrap_or(true) {
                    self.send_again(chain, &mut own).await;
                }
                still.push(own);
                continue;
            };
            own.seen_mined = true;
            let head = chain.rpc.block_number().await.unwrap_or(0);
            if head + 1 < rcpt.block_number.to::<u64>() + depth {
                still.push(own);
                continue;
            }
            let success = rcpt.status.to::<u64>() == 1;
            match own.purpose {
                Purpose::Credit(i) => {
                    if let Some(rec) = lock(&self.state.0.swaps).get_mut(i) {
                        rec.status = if success { "completed" } else { "failed" }.into();
                        if !success {
                            rec.reason = Some("the ST mint reverted".into());
                        }
                    }
                }
                Purpose::Payout(side_hash) => update(&self.state, side_hash, |r| {
                    if success {
                        r.status = "completed".into();
                    } else {
                        r.status = "failed".into();
                        r.reason = Some("the MT payout reverted".into());
                    }
                }),
            }
        }
        self.own = still;
        Ok(())
    }

    /// Sends `own` again after a reorganisation took it back: its very bytes, else (its
    /// nonce taken meanwhile) the same call as a new transaction, whose hash the records
    /// then name.
    async fn send_again(&self, chain: &Chain, own: &mut Own) {
        own.seen_mined = false;
        if chain.rpc.send_raw(&own.raw).await.is_ok() {
            return;
        }
        let st = &self.state.0;
        if let Ok((hash, raw)) = chain
            .send_kept(&st.bridge, Some(own.to), own.data.clone(), None)
            .await
        {
            own.hash = hash;
            own.raw = raw;
            match own.purpose {
                Purpose::Credit(i) => {
                    if let Some(rec) = lock(&st.swaps).get_mut(i) {
                        rec.side_tx_hash = Some(hash);
                    }
                }
                Purpose::Payout(side_hash) => {
                    update(&self.state, side_hash, |r| r.main_tx_hash = Some(hash))
                }
            }
        }
    }
}

fn update(state: &AppState, hash: B256, f: impl FnOnce(&mut Redemption)) {
    if let Some(r) = lock(&state.0.redemptions).get_mut(&hash) {
        f(r);
        r.updated_at = now();
    }
}
