//! Chains: each chain's block 0 as first seen, so that a reset chain (a new devnet at
//! the same chain id) is named as such before its stale nonces refuse anything.

use bridgectl_store::Conn;

use super::records::{COLUMNS, FlowRecord, row_to_record};
use super::{Journal, insert_step, now};
use crate::Error;

/// The block 0 hash journaled for `chain_id`, read inside `c`.
pub(super) fn genesis_in(
    c: &mut dyn Conn,
    chain_id: u64,
) -> Result<Option<String>, bridgectl_store::Error> {
    c.query_opt(
        "SELECT genesis FROM chains WHERE chain_id = ?1",
        &[&(chain_id as i64)],
        |r| r.get(0),
    )
}

impl Journal {
    /// Checks that chain `chain_id`'s block 0 is `genesis`, the one its flows here were
    /// journaled on; the first time a chain is seen, records it. A different block 0 is
    /// [`Error::ChainReset`]: the chain was reset (or another chain took its id), and
    /// the journal's nonces for it would refuse or misplace every transaction.
    pub(crate) fn check_chain(
        &self,
        chain_id: u64,
        genesis: alloy_primitives::B256,
    ) -> Result<(), Error> {
        let found = genesis.to_string();
        // Read without a lock: once recorded (every run but a chain's first), nothing is
        // written, and no other writer waits on this.
        let journaled: Option<String> = self.with(|c| match genesis_in(c, chain_id)? {
            Some(j) => Ok(Some(j)),
            None => {
                // Another process may record it at the same time: the first one counts.
                c.execute(
                    "INSERT INTO chains (chain_id, genesis, recorded_at)
                     VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
                    &[&(chain_id as i64), &found, &now()],
                )?;
                genesis_in(c, chain_id)
            }
        })?;
        match journaled {
            Some(j) if !j.eq_ignore_ascii_case(&found) => Err(Error::ChainReset {
                chain_id,
                journaled: j,
                found,
            }),
            _ => Ok(()),
        }
    }

    /// The block 0 hash chain `chain_id`'s flows were journaled on, if recorded.
    pub fn chain_genesis(&self, chain_id: u64) -> Result<Option<String>, Error> {
        self.with(|c| genesis_in(c, chain_id))
    }

    /// The flows on chain `chain_id` that a reset of it would retire
    /// ([`Flows::reset_chain`](crate::Flows::reset_chain)): every
    /// one not retired already.
    pub fn flows_on_chain(&self, chain_id: u64) -> Result<Vec<FlowRecord>, Error> {
        self.with(|c| {
            c.query_map(
                &format!(
                    "SELECT {COLUMNS} FROM flows WHERE state != 'retired' AND (chain_id = ?1
                        OR tx_id IN (SELECT tx_id FROM nonces WHERE chain_id = ?1))
                      ORDER BY created_at"
                ),
                &[&(chain_id as i64)],
                row_to_record,
            )
        })
    }

    /// After chain `chain_id` was reset (its block 0 is now `genesis`): retires its flows
    /// (each keeps its record and gets a `chain-reset` step; none holds a nonce or is sent
    /// again), drops their nonce reservations and the swap credits claimed on it, and
    /// records the new block 0, in one durable transaction. Returns the retired flows'
    /// txIds.
    pub(crate) fn reset_chain(
        &self,
        chain_id: u64,
        genesis: alloy_primitives::B256,
    ) -> Result<Vec<String>, Error> {
        let at = now();
        let retired = self.flows_on_chain(chain_id)?;
        let ids: Vec<(String, &'static str)> = retired
            .into_iter()
            .map(|f| (f.tx_id, f.state.as_str()))
            .collect();
        self.write_durable(|t| {
            let before = genesis_in(t, chain_id)?;
            for (id, state_before) in &ids {
                // How it stood on the old chain (completed there, or not) stays on record.
                let detail = serde_json::json!({"chainId": chain_id, "genesisBefore": before,
                                                "genesis": genesis.to_string(),
                                                "stateBefore": state_before})
                .to_string();
                t.execute(
                    "UPDATE flows SET state = 'retired', updated_at = ?2 WHERE tx_id = ?1",
                    &[id, &at],
                )?;
                insert_step(t, id, &at, "chain-reset", &detail)?;
            }
            t.execute(
                "DELETE FROM nonces WHERE chain_id = ?1",
                &[&(chain_id as i64)],
            )?;
            // Credits are named by the chain's transaction hashes, which a new chain can
            // repeat (the same account sending the same call from the same nonce): the old
            // chain's claims must not hide the new chain's credits. Each swap's
            // `credited` step keeps what completed it.
            t.execute(
                "DELETE FROM credits WHERE chain_id = ?1",
                &[&(chain_id as i64)],
            )?;
            t.execute(
                "INSERT INTO chains (chain_id, genesis, recorded_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (chain_id) DO UPDATE SET genesis = excluded.genesis,
                    recorded_at = excluded.recorded_at",
                &[&(chain_id as i64), &genesis.to_string(), &at],
            )?;
            Ok(())
        })?;
        Ok(ids.into_iter().map(|(id, _)| id).collect())
    }
}
