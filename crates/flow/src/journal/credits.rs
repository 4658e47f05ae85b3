//! Swap credits: the ST credit that completed each swap, by the side chain's own names
//! for it (its transaction hash and log index). A credit completes one swap, once: the
//! claim and the swap's completion are one commit, and the credit's key refuses a second
//! claim, from this process or another one on the same journal.

use serde::Serialize;

use super::facts::{Fact, conclude_in, put_fact};
use super::records::FlowState;
use super::{Journal, insert_step, now};
use crate::Error;

/// An ST credit on the side chain, as claimed by a swap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Credit {
    /// The side chain.
    pub chain_id: u64,
    /// The transaction that credited the ST.
    pub tx_hash: String,
    /// The `Transfer` log's index in its block.
    pub log_index: u64,
    /// Its block.
    pub block: u64,
    /// ST base units credited (decimal).
    pub amount: String,
}

impl Journal {
    /// Claims `credit` for swap `tx_id` and concludes the swap with `result`, in one
    /// commit: it is `confirming`, ending `completed` once `facts` (its transfer's receipt
    /// and the credit) are final. `false` (nothing written) when another flow of this
    /// journal claimed that credit first; a swap that holds a credit already is not given
    /// a second one.
    pub(crate) fn conclude_with_credit(
        &self,
        tx_id: &str,
        credit: &Credit,
        result: &serde_json::Value,
        facts: &[Fact],
    ) -> Result<bool, Error> {
        let at = now();
        let detail = serde_json::to_string(credit).unwrap_or_default();
        let result = super::blob(result);
        self.write(|t| {
            let inserted = t.execute(
                "INSERT INTO credits (chain_id, tx_hash, log_index, block, amount, tx_id, at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING",
                &[
                    &(credit.chain_id as i64),
                    &credit.tx_hash,
                    &(credit.log_index as i64),
                    &(credit.block as i64),
                    &credit.amount,
                    &tx_id,
                    &at,
                ],
            )?;
            if inserted == 0 {
                return Ok(false);
            }
            insert_step(t, tx_id, &at, "credited", &detail)?;
            for fact in facts {
                put_fact(t, tx_id, fact)?;
            }
            conclude_in(
                t,
                tx_id,
                FlowState::Completed,
                "credit-observed",
                &result,
                &at,
            )?;
            Ok(true)
        })
    }

    /// The credit swap `tx_id` claimed, if it did.
    pub fn credit_of(&self, tx_id: &str) -> Result<Option<Credit>, Error> {
        self.with(|c| {
            c.query_opt(
                "SELECT chain_id, tx_hash, log_index, block, amount FROM credits WHERE tx_id = ?1",
                &[&tx_id],
                |r| {
                    Ok(Credit {
                        chain_id: r.get::<i64>(0)? as u64,
                        tx_hash: r.get(1)?,
                        log_index: r.get::<i64>(2)? as u64,
                        block: r.get::<i64>(3)? as u64,
                        amount: r.get(4)?,
                    })
                },
            )
        })
    }

    /// The flow that claimed the credit at (`chain_id`, `tx_hash`, `log_index`), if one did.
    pub fn credit_claimed_by(
        &self,
        chain_id: u64,
        tx_hash: &str,
        log_index: u64,
    ) -> Result<Option<String>, Error> {
        self.with(|c| {
            c.query_opt(
                "SELECT tx_id FROM credits WHERE chain_id = ?1 AND tx_hash = ?2 AND log_index = ?3",
                &[&(chain_id as i64), &tx_hash, &(log_index as i64)],
                |r| r.get(0),
            )
        })
    }
}
