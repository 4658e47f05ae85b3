//! The chain facts a flow's end rests on, each with the block it is in (number and
//! hash), and what happens to a flow when the chain takes one back.
//!
//! | fact | chain | ends |
//! |---|---|---|
//! | `receipt` | the flow's | its mined transaction (of its signatures, the one mined) |
//! | `credit` | side | a swap: its own ST credit (the `Transfer` log it claimed) |
//! | `payout` | main | a redeem: the MT payout the redemption record names |
//!
//! A flow whose end was observed is [`FlowState::Confirming`] with the state it ends in
//! ([`FlowRecord::ending`](super::FlowRecord::ending)); once every fact is final on its
//! chain it takes that state. A fact whose block is no longer the chain's is withdrawn
//! ([`Journal::withdraw`]): the flow goes back to `submitted`, the reorganisation is a
//! step of its own (`reorg`: the fact, its old block and hash, when it was seen gone),
//! and a withdrawn credit's claim here is released in the same commit.

use alloy_primitives::B256;
use bridgectl_store::{Conn, Row};
use serde::Serialize;

use super::records::FlowState;
use super::{Journal, insert_step, now};
use crate::Error;

/// What a fact is (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FactKind {
    /// The flow's own transaction, mined.
    Receipt,
    /// A swap's ST credit on the side chain.
    Credit,
    /// A redemption's MT payout on the main chain.
    Payout,
}

impl FactKind {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            FactKind::Receipt => "receipt",
            FactKind::Credit => "credit",
            FactKind::Payout => "payout",
        }
    }

    fn parse(text: &str) -> Option<FactKind> {
        [FactKind::Receipt, FactKind::Credit, FactKind::Payout]
            .into_iter()
            .find(|k| k.as_str() == text)
    }
}

/// One chain fact a flow's end rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Fact {
    /// What it is.
    pub kind: FactKind,
    /// Its chain.
    pub chain_id: u64,
    /// The transaction (the flow's own, the credit's, the payout's).
    pub tx_hash: B256,
    /// For a credit: the log's index in its block.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_index: Option<u64>,
    /// The block it is in.
    pub block: u64,
    /// That block's hash when the fact was seen: the fact holds while the chain's block
    /// at `block` has this hash.
    pub block_hash: B256,
    /// Whether it was found final on its chain (then it is not polled again; `status`
    /// still looks once).
    #[serde(rename = "final")]
    pub is_final: bool,
}

/// A fact the chain took back, as the journal records it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reorg {
    /// The fact withdrawn, as it was.
    pub fact: Fact,
    /// Whether it had been found final: a reorganisation deeper than the chain's
    /// finality (the flow was over and is reopened).
    pub deeper_than_final: bool,
    /// When it was seen gone (RFC 3339, UTC).
    pub seen_at: String,
}

fn row_to_fact(r: &Row) -> Result<Fact, bridgectl_store::Error> {
    let bad = |index: usize, what: &str| bridgectl_store::Error::Column {
        index,
        reason: format!("not a {what}"),
    };
    let kind: String = r.get(0)?;
    let tx_hash: String = r.get(2)?;
    let block_hash: String = r.get(5)?;
    Ok(Fact {
        kind: FactKind::parse(&kind).ok_or_else(|| bad(0, "fact kind"))?,
        chain_id: r.get::<i64>(1)? as u64,
        tx_hash: tx_hash.parse().map_err(|_| bad(2, "hash"))?,
        log_index: r.get::<Option<i64>>(3)?.map(|i| i as u64),
        block: r.get::<i64>(4)? as u64,
        block_hash: block_hash.parse().map_err(|_| bad(5, "hash"))?,
        is_final: r.get(6)?,
    })
}

/// Inserts (or replaces) `fact` of flow `tx_id`.
pub(super) fn put_fact(
    t: &mut dyn Conn,
    tx_id: &str,
    fact: &Fact,
) -> Result<(), bridgectl_store::Error> {
    t.execute(
        "INSERT INTO facts
            (tx_id, kind, chain_id, tx_hash, log_index, block, block_hash, final, seen_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
         ON CONFLICT (tx_id, kind) DO UPDATE SET chain_id = excluded.chain_id,
            tx_hash = excluded.tx_hash, log_index = excluded.log_index,
            block = excluded.block, block_hash = excluded.block_hash,
            final = excluded.final, seen_at = excluded.seen_at",
        &[
            &tx_id,
            &fact.kind.as_str(),
            &(fact.chain_id as i64),
            &fact.tx_hash.to_string(),
            &fact.log_index.map(|i| i as i64),
            &(fact.block as i64),
            &fact.block_hash.to_string(),
            &fact.is_final,
            &now(),
        ],
    )
    .map(drop)
}

impl Journal {
    /// The facts flow `tx_id` rests on, receipt first.
    pub fn facts(&self, tx_id: &str) -> Result<Vec<Fact>, Error> {
        self.with(|c| {
            c.query_map(
                "SELECT kind, chain_id, tx_hash, log_index, block, block_hash, final
                   FROM facts WHERE tx_id = ?1
                  ORDER BY CASE kind WHEN 'receipt' THEN 0 WHEN 'credit' THEN 1 ELSE 2 END",
                &[&tx_id],
                row_to_fact,
            )
        })
    }

    /// Records `fact` of flow `tx_id` (its transaction seen mined, a payout seen), the
    /// flow's state unchanged.
    pub(crate) fn record_fact(&self, tx_id: &str, fact: &Fact) -> Result<(), Error> {
        self.with(|c| put_fact(c, tx_id, fact))
    }

    /// Marks flow `tx_id`'s fact of `kind` final (it is not polled again).
    pub(crate) fn mark_final(&self, tx_id: &str, kind: FactKind) -> Result<(), Error> {
        self.with(|c| {
            c.execute(
                "UPDATE facts SET final = 1 WHERE tx_id = ?1 AND kind = ?2",
                &[&tx_id, &kind.as_str()],
            )
            .map(drop)
        })
    }

    /// Flow `tx_id`'s end observed: it ends `ending` once its facts are final, and is
    /// [`FlowState::Confirming`] until then. `facts` are recorded with it and `result`
    /// (what was observed) is its result, in one commit.
    pub(crate) fn conclude(
        &self,
        tx_id: &str,
        ending: FlowState,
        step: &str,
        result: &serde_json::Value,
        facts: &[Fact],
    ) -> Result<(), Error> {
        let at = now();
        let result = super::blob(result);
        self.write(|t| {
            for fact in facts {
                put_fact(t, tx_id, fact)?;
            }
            conclude_in(t, tx_id, ending, step, &result, &at)
        })
    }

    /// Flow `tx_id`, confirming, takes the state it was concluded with: every fact it
    /// rests on is final. A flow that is not confirming is left as it is.
    pub(crate) fn finalize(&self, tx_id: &str) -> Result<Option<FlowState>, Error> {
        let at = now();
        self.write(|t| {
            let ending: Option<Option<String>> = t.query_opt(
                "SELECT ending FROM flows WHERE tx_id = ?1 AND state = 'confirming'",
                &[&tx_id],
                |r| r.get(0),
            )?;
            let Some(Some(ending)) = ending else {
                return Ok(None);
            };
            t.execute("UPDATE facts SET final = 1 WHERE tx_id = ?1", &[&tx_id])?;
            t.execute(
                "UPDATE flows SET state = ?2, ending = NULL, updated_at = ?3 WHERE tx_id = ?1",
                &[&tx_id, &ending, &at],
            )?;
            insert_step(t, tx_id, &at, "final", "{}")?;
            Ok(Some(FlowState::parse(&ending)))
        })
    }

    /// The chain took `fact` of flow `tx_id` back (its block is no longer the chain's):
    /// the fact is withdrawn, the flow goes back to `submitted` (waiting for its end
    /// again), the reorganisation is journaled, and for a credit its claim here is
    /// released, in one commit. A flow that was over is reopened so: the facts it ended
    /// on are gone.
    pub(crate) fn withdraw(&self, tx_id: &str, fact: &Fact) -> Result<Reorg, Error> {
        let seen_at = now();
        let reorg = Reorg {
            fact: fact.clone(),
            deeper_than_final: fact.is_final,
            seen_at: seen_at.clone(),
        };
        let detail = serde_json::to_string(&reorg).unwrap_or_default();
        self.write(|t| {
            t.execute(
                "DELETE FROM facts WHERE tx_id = ?1 AND kind = ?2",
                &[&tx_id, &fact.kind.as_str()],
            )?;
            if fact.kind == FactKind::Credit {
                t.execute("DELETE FROM credits WHERE tx_id = ?1", &[&tx_id])?;
            }
            t.execute(
                "UPDATE flows SET state = 'submitted', ending = NULL, updated_at = ?2
                  WHERE tx_id = ?1 AND state IN ('confirming', 'completed', 'failed', 'cancelled')",
                &[&tx_id, &seen_at],
            )?;
            insert_step(t, tx_id, &seen_at, "reorg", &detail)
        })?;
        Ok(reorg)
    }

    /// The reorganisations flow `tx_id` went through, oldest first.
    pub fn reorgs(&self, tx_id: &str) -> Result<Vec<serde_json::Value>, Error> {
        Ok(self
            .steps(tx_id)?
            .into_iter()
            .filter(|s| s.step == "reorg")
            .map(|s| s.detail)
            .collect())
    }
}

/// Moves flow `tx_id` to `confirming`, ending `ending`, with `result` and a step.
pub(super) fn conclude_in(
    t: &mut dyn Conn,
    tx_id: &str,
    ending: FlowState,
    step: &str,
    result: &str,
    at: &str,
) -> Result<(), bridgectl_store::Error> {
    let n = t.execute(
        "UPDATE flows SET result = ?2, state = 'confirming', ending = ?3, updated_at = ?4
          WHERE tx_id = ?1",
        &[&tx_id, &result, &ending.as_str(), &at],
    )?;
    if n == 0 {
        return Err(bridgectl_store::Error::NoRow);
    }
    insert_step(t, tx_id, at, step, result)
}
