//! Nonces: a flow reserves its nonce before it signs, and the journal's floor (the
//! highest nonce that holds, per sender and chain) is what the verifier checks the next
//! one against. One nonce, one flow: a second reservation of a held nonce is refused.

use alloy_primitives::Address;
use bridgectl_store::Conn;

use serde_json::Value;

use super::records::{COLUMNS, FlowKind, FlowRecord, FlowState, blob, row_to_record};
use super::{Journal, insert_step, now, unix_now};
use crate::Error;

/// The highest nonce that holds for sender `?1` on chain `?2`, flow `?3` aside (lease
/// cut-off `?4`): a reservation that holds, or a signed flow. Each side walks its index
/// down from the highest nonce and stops at the first that counts (almost always the
/// first it meets), so a signature costs the same in a journal of ten flows or ten
/// thousand.
pub(super) fn next_nonce_sql() -> String {
    format!(
        "SELECT MAX(n) FROM (
         SELECT (SELECT r.nonce FROM nonces r JOIN flows f ON f.tx_id = r.tx_id
                  WHERE r.address = ?1 AND r.chain_id = ?2 AND r.tx_id != ?3 AND {}
                  ORDER BY r.nonce DESC LIMIT 1) AS n
         UNION ALL
         SELECT (SELECT CAST(nonce AS INTEGER) FROM flows
                  WHERE from_addr = ?1 COLLATE NOCASE AND chain_id = ?2
                    AND signed_tx IS NOT NULL AND state != 'retired' AND tx_id != ?3
                  ORDER BY CAST(nonce AS INTEGER) DESC LIMIT 1))",
        holds("?4")
    )
}

/// [`next_nonce_sql`] with the flows of the JSON array `?3` left out.
pub(super) fn next_nonce_excluding_sql() -> String {
    next_nonce_sql().replace(
        "tx_id != ?3",
        "tx_id NOT IN (SELECT value FROM json_each(?3))",
    )
}

/// The SQL condition (over `nonces r JOIN flows f`, with the lease cut-off bound as
/// parameter `cutoff`, e.g. `?4`) under which a reservation holds: its flow signed, or it
/// is alive and within its lease, or it is an item of a batch prepared for the air gap
/// ([`PREPARED_HOLDS`]).
pub(super) fn holds(cutoff: &str) -> String {
    format!(
        "(f.state != 'retired' AND (f.signed_tx IS NOT NULL \
          OR (f.state != 'failed' AND (r.reserved_at > {cutoff} OR {PREPARED_HOLDS}))))"
    )
}

/// The SQL condition (over `nonces r`) under which an unsigned reservation holds past its
/// lease: its flow carries an item of a batch prepared for the air gap that was not
/// abandoned. The signatures come back when they come back (a walk to the vault, a
/// second approver); until then, or until `batch abandon`, no other flow of this journal
/// takes those nonces.
pub(super) const PREPARED_HOLDS: &str = "EXISTS (SELECT 1 FROM batch_items i \
     JOIN prepared_batches p ON p.batch_id = i.batch_id \
     WHERE i.tx_id = r.tx_id \
       AND NOT EXISTS (SELECT 1 FROM abandoned_batches a WHERE a.batch_id = i.batch_id))";

/// [`Journal::stop_at_approval`] of flow `tx_id` inside `t`, at time `at`.
fn stop_in(
    t: &mut dyn Conn,
    tx_id: &str,
    at: &str,
    step: &str,
    detail: &Value,
) -> Result<(), bridgectl_store::Error> {
    let kind: String = t.query_value("SELECT kind FROM flows WHERE tx_id = ?1", &[&tx_id])?;
    if FlowKind::parse(&kind).is_some_and(FlowKind::resumes_at_approval) {
        t.execute(
            "UPDATE flows SET updated_at = ?2 WHERE tx_id = ?1",
            &[&tx_id, &at],
        )?;
        t.execute(
            "UPDATE nonces SET reserved_at = 0 WHERE tx_id = ?1",
            &[&tx_id],
        )?;
    } else {
        t.execute(
            "UPDATE flows SET state = ?2, updated_at = ?3 WHERE tx_id = ?1",
            &[&tx_id, &FlowState::Failed.as_str(), &at],
        )?;
    }
    insert_step(t, tx_id, at, step, &blob(detail))
}

impl Journal {
    /// Checks, right before flow `tx_id` signs, that it still holds its reservation of
    /// `nonce`: no other flow took it over, and its lease has a tenth of its length
    /// left (so it cannot run out while the signature is made and journaled). A flow
    /// that waited at its prompt past its lease is refused here, whether or not another
    /// flow has signed the nonce meanwhile: its nonce must be checked again.
    pub(crate) fn hold_reservation(
        &self,
        tx_id: &str,
        address: Address,
        chain_id: u64,
        nonce: u64,
    ) -> Result<(), Error> {
        let row: Option<(String, i64)> = self.with(|c| {
            c.query_opt(
                "SELECT tx_id, reserved_at FROM nonces
                  WHERE address = ?1 AND chain_id = ?2 AND nonce = ?3",
                &[&address.to_string(), &(chain_id as i64), &(nonce as i64)],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })?;
        match row {
            Some((holder, reserved_at)) if holder == tx_id => {
                let left = reserved_at + self.lease_secs - unix_now();
                if left <= self.lease_secs / 10 {
                    return Err(Error::LeaseExpired {
                        tx_id: tx_id.to_owned(),
                        nonce,
                        lease_secs: self.lease_secs.unsigned_abs(),
                    });
                }
                Ok(())
            }
            Some((by, _)) => Err(Error::NonceReserved {
                address,
                chain_id,
                nonce,
                by,
            }),
            None => Err(Error::LeaseExpired {
                tx_id: tx_id.to_owned(),
                nonce,
                lease_secs: self.lease_secs.unsigned_abs(),
            }),
        }
    }

    /// Records that flow `tx_id` stopped at its approval (`step`, `detail`) before it
    /// signed. A flow that resumes there ([`FlowKind::resumes_at_approval`]) stays
    /// open, in the state it reached (verified): it is not over, and resuming it checks
    /// its transaction again. Its nonce reservation is given back all the same (the
    /// lease ends now), so that the address is not held by a transaction nobody
    /// approved; resuming reserves the nonce again, if it is still free and next. A flow
    /// of another kind is over: failed.
    ///
    /// [`FlowKind::resumes_at_approval`]: super::FlowKind::resumes_at_approval
    pub(crate) fn stop_at_approval(
        &self,
        tx_id: &str,
        step: &str,
        detail: &Value,
    ) -> Result<(), Error> {
        let at = now();
        self.write(|t| stop_in(t, tx_id, &at, step, detail))
    }

    /// [`Journal::stop_at_approval`] for each of the flows `tx_ids` that has not signed
    /// and is still open, in one transaction (flows that signed keep their nonces for
    /// good; those over are left as they are). Returns how many it stopped.
    pub(crate) fn stop_unsigned(
        &self,
        tx_ids: &[&str],
        step: &str,
        detail: &Value,
    ) -> Result<usize, Error> {
        let at = now();
        self.write(|t| {
            let mut stopped = 0;
            for tx_id in tx_ids {
                let open: Option<i64> = t.query_opt(
                    "SELECT 1 FROM flows WHERE tx_id = ?1 AND signed_tx IS NULL
                        AND state NOT IN ('failed', 'completed', 'retired')",
                    &[tx_id],
                    |r| r.get(0),
                )?;
                if open.is_some() {
                    stop_in(t, tx_id, &at, step, detail)?;
                    stopped += 1;
                }
            }
            Ok(stopped)
        })
    }

    /// The flow that holds `nonce` of `address` on `chain_id`: the one that signed it, or
    /// the one whose reservation of it still holds. What a refusal of that nonce names,
    /// so the person knows which flow to resume, replace or cancel.
    pub fn nonce_holder(
        &self,
        address: Address,
        chain_id: u64,
        nonce: u64,
    ) -> Result<Option<FlowRecord>, Error> {
        self.with(|c| {
            c.query_opt(
                &format!(
                    "SELECT {COLUMNS} FROM flows WHERE tx_id IN (
                     SELECT tx_id FROM flows
                      WHERE from_addr = ?1 COLLATE NOCASE AND chain_id = ?2
                        AND signed_tx IS NOT NULL AND state != 'retired'
                        AND CAST(nonce AS INTEGER) = ?3
                     UNION ALL
                     SELECT r.tx_id FROM nonces r JOIN flows f ON f.tx_id = r.tx_id
                      WHERE r.address = ?1 AND r.chain_id = ?2 AND r.nonce = ?3 AND {})
                     ORDER BY created_at LIMIT 1",
                    holds("?4")
                ),
                &[
                    &address.to_string(),
                    &(chain_id as i64),
                    &(nonce as i64),
                    &(unix_now() - self.lease_secs),
                ],
                row_to_record,
            )
        })
    }

    /// One past the highest nonce of `address` on `chain_id` that a flow here holds: the
    /// floor under every nonce signed next. `None` when there is none.
    ///
    /// A flow that **signed** holds its nonce for good, whatever became of it later (a
    /// platform that reports a redemption "failed" must not free the nonce of a
    /// transaction that can still be mined: the next flow would sign a second one). A
    /// flow that reserved and has not signed holds it while it is alive: not failed, and
    /// reserved less than [`RESERVATION_LEASE_SECS`](super::RESERVATION_LEASE_SECS) ago (a flow interrupted at its
    /// prompt must not block the address forever), or, an item of a batch prepared for
    /// the air gap, until the batch is abandoned. Flows signed
    /// before reservations existed count too. The flow `except` (the one about to sign) does not count
    /// against itself.
    pub fn next_nonce(
        &self,
        address: Address,
        chain_id: u64,
        except: Option<&str>,
    ) -> Result<Option<u64>, Error> {
        let addr = address.to_string();
        let except = except.unwrap_or("");
        let highest: Option<i64> = self.with(|c| {
            c.query_value(
                &next_nonce_sql(),
                &[
                    &addr,
                    &(chain_id as i64),
                    &except,
                    &(unix_now() - self.lease_secs),
                ],
            )
        })?;
        Ok(highest.map(|n| n as u64 + 1))
    }

    /// Reserves `nonce` of `address` on `chain_id` for flow `tx_id`, so that no other
    /// flow (in this process or another) signs the same nonce. A reservation that no
    /// longer holds (see [`Journal::next_nonce`]: its flow failed before signing, or
    /// never signed within the lease) is taken over; one that holds is a refusal naming
    /// its flow.
    pub(crate) fn reserve_nonce(
        &self,
        tx_id: &str,
        address: Address,
        chain_id: u64,
        nonce: u64,
    ) -> Result<(), Error> {
        self.reserve_after(tx_id, address, chain_id, nonce, |_| Ok(()))
    }

    /// One `IMMEDIATE` transaction that runs `first`, then reserves the nonce, and
    /// commits both only if the reservation was granted; otherwise a refusal naming the
    /// flow that holds the nonce, and nothing written.
    pub(super) fn reserve_after(
        &self,
        tx_id: &str,
        address: Address,
        chain_id: u64,
        nonce: u64,
        first: impl FnOnce(&mut dyn Conn) -> Result<(), bridgectl_store::Error>,
    ) -> Result<(), Error> {
        let holder = self.write_refusing(false, |t| {
            self.check_fence(t, tx_id)?;
            first(t)?;
            let holder = self.reserve_in(t, tx_id, address, chain_id, nonce)?;
            if holder.is_some() {
                t.roll_back();
            }
            Ok(holder)
        })?;
        match holder {
            None => Ok(()),
            Some(by) => Err(Error::NonceReserved {
                address,
                chain_id,
                nonce,
                by,
            }),
        }
    }

    /// The reservation inside write transaction `t`: the flow that holds the nonce, if
    /// another does; otherwise the nonce is reserved for `tx_id`. (The read and the
    /// write are one step: write transactions are serialised, on every host.)
    pub(super) fn reserve_in(
        &self,
        t: &mut dyn Conn,
        tx_id: &str,
        address: Address,
        chain_id: u64,
        nonce: u64,
    ) -> Result<Option<String>, bridgectl_store::Error> {
        let holder = self.holder_in(t, tx_id, address, chain_id, nonce)?;
        if holder.is_some() {
            return Ok(holder);
        }
        let addr = address.to_string();
        let now = unix_now();
        t.execute(
            "INSERT INTO nonces (address, chain_id, nonce, tx_id, reserved_at)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (address, chain_id, nonce)
             DO UPDATE SET tx_id = excluded.tx_id, reserved_at = excluded.reserved_at",
            &[&addr, &(chain_id as i64), &(nonce as i64), &tx_id, &now],
        )?;
        let detail = serde_json::json!({"nonce": nonce, "chainId": chain_id});
        insert_step(
            t,
            tx_id,
            &super::now(),
            "nonce-reserved",
            &detail.to_string(),
        )?;
        Ok(None)
    }

    /// The flow other than `tx_id` whose reservation of `nonce` holds, read inside `t`.
    pub(super) fn holder_in(
        &self,
        t: &mut dyn Conn,
        tx_id: &str,
        address: Address,
        chain_id: u64,
        nonce: u64,
    ) -> Result<Option<String>, bridgectl_store::Error> {
        t.query_opt(
            &format!(
                "SELECT r.tx_id FROM nonces r JOIN flows f ON f.tx_id = r.tx_id
                      WHERE r.address = ?1 AND r.chain_id = ?2 AND r.nonce = ?3
                        AND r.tx_id != ?4 AND {}",
                holds("?5")
            ),
            &[
                &address.to_string(),
                &(chain_id as i64),
                &(nonce as i64),
                &tx_id,
                &(unix_now() - self.lease_secs),
            ],
            |r| r.get(0),
        )
    }
}
