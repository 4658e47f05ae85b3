//! Many flows written together: a batch signed offline records its items' flows and
//! nonce reservations in one commit, and their signed bytes in one durable commit (one
//! fsync for the lot, where one flow's signature pays one of its own), so that a batch of
//! a thousand costs the journal a few fsyncs and a crash leaves each commit whole or
//! absent.

use alloy_primitives::Address;
use serde_json::Value;

use super::flows::{insert_flow, set_raw_tx};
use super::records::FlowKind;
use super::{Journal, insert_step, now};
use crate::Error;

/// One flow of a group reservation ([`Journal::reserve_group`]).
#[derive(Debug, Clone)]
pub(crate) struct GroupFlow<'a> {
    /// The flow's txId: taken up when the journal has it, begun otherwise.
    pub tx_id: &'a str,
    /// Its kind, when it is begun here.
    pub kind: FlowKind,
    /// What was asked, as the journal keeps it, when it is begun here.
    pub intent: Value,
    /// The verified transaction whose nonce it reserves.
    pub raw_tx: &'a bridgectl_tx::RawTx,
}

impl Journal {
    /// Begins each flow of `flows` that the journal does not have (with its transaction,
    /// as [`Journal::begin_reserved`] does) and reserves each one's nonce, in one
    /// `IMMEDIATE` transaction: one commit for a batch instead of one per item. Returns,
    /// per flow, the flow that holds its nonce when another does (that flow is then
    /// neither begun nor reserved); the rest are written.
    pub(crate) fn reserve_group(
        &self,
        flows: &[GroupFlow<'_>],
    ) -> Result<Vec<Option<String>>, Error> {
        self.write_refusing(false, |t| {
            let mut holders = Vec::with_capacity(flows.len());
            for f in flows {
                let tx = f.raw_tx;
                // The holder is looked for before anything of the flow is written: a
                // refused flow is neither begun nor reserved.
                let holder = self.holder_in(t, f.tx_id, tx.from, tx.chain_id, tx.nonce)?;
                if holder.is_some() {
                    holders.push(holder);
                    continue;
                }
                let exists: Option<i64> =
                    t.query_opt("SELECT 1 FROM flows WHERE tx_id = ?1", &[&f.tx_id], |r| {
                        r.get(0)
                    })?;
                if exists.is_none() {
                    let raw = serde_json::to_value(tx).unwrap_or_default();
                    let from = tx.from.to_string();
                    insert_flow(t, &self.host, f.tx_id, f.kind, Some(&from), &f.intent)?;
                    set_raw_tx(t, f.tx_id, &raw)?;
                } else {
                    self.check_fence(t, f.tx_id)?;
                }
                holders.push(self.reserve_in(t, f.tx_id, tx.from, tx.chain_id, tx.nonce)?);
            }
            Ok(holders)
        })
    }

    /// Records the signed bytes of every flow of `signed` (txId, signed transaction) in
    /// one transaction, durable when this returns: only then may any of them leave.
    pub(crate) fn record_signed_group(
        &self,
        signed: &[(&str, &bridgectl_tx::SignedTx)],
    ) -> Result<(), Error> {
        if signed.is_empty() {
            return Ok(());
        }
        let at = now();
        self.write_refusing(true, |t| {
            for (tx_id, s) in signed {
                self.check_fence(t, tx_id)?;
                let hash = s.hash.to_string();
                let n = t.execute(
                    "UPDATE flows SET signed_tx = ?2, tx_hash = ?3, chain_id = ?4, nonce = ?5,
                            state = 'signed', updated_at = ?6 WHERE tx_id = ?1",
                    &[
                        tx_id,
                        &format!("0x{}", hex::encode(&s.raw)),
                        &hash,
                        &(s.chain_id as i64),
                        &s.nonce.to_string(),
                        &at,
                    ],
                )?;
                if n == 0 {
                    return Err(bridgectl_store::Error::NoRow.into());
                }
                let detail = serde_json::json!({"txHash": hash, "chainId": s.chain_id,
                                                "nonce": s.nonce});
                insert_step(t, tx_id, &at, "signed", &detail.to_string())?;
            }
            Ok(())
        })
    }

    /// [`Journal::next_nonce`] with every flow of `except` left out (a batch's own flows,
    /// whose reservations are the ones it is about to sign at).
    pub fn next_nonce_excluding(
        &self,
        address: Address,
        chain_id: u64,
        except: &[&str],
    ) -> Result<Option<u64>, Error> {
        let addr = address.to_string();
        let except = serde_json::to_string(except).unwrap_or_else(|_| "[]".into());
        let highest: Option<i64> = self.with(|c| {
            c.query_value(
                &super::nonces::next_nonce_excluding_sql(),
                &[
                    &addr,
                    &(chain_id as i64),
                    &except,
                    &(super::unix_now() - self.lease_secs),
                ],
            )
        })?;
        Ok(highest.map(|n| n as u64 + 1))
    }
}
