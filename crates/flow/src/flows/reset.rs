//! After a chain was reset (a testnet reset, a restarted local node): the journal's flows
//! on it and the signing log's signatures there hold nonces of a chain that no longer
//! exists, so nothing new could be signed. [`Flows::reset_chain`] retires the flows and
//! has each key record the reset in the signing log.
//!
//! Freeing nonces is a way past the one-nonce-one-signature guard, so a reset is believed
//! only when every witness agrees ([`Flows::plan_chain_reset`]), never on one alone:
//!
//! - the node's block 0 differs from the one the journal recorded **and** from the one
//!   the signing log recorded with the keystore's signatures on the chain (keystore-wide:
//!   a fresh journal knows nothing, the log does);
//! - the node knows none of the transactions journaled or logged for the chain (pending
//!   or mined): a node that knows one is on the chain they were signed for, whatever it
//!   says of block 0;
//! - a second witness that is not the node: a second node (another endpoint), which
//!   reports the same new block 0 and knows none of them either, or the platform, which
//!   has no record of any redemption journaled on the chain (operation 5, by txId and
//!   by hash). Without one (no second node given, and no redemption journaled there for
//!   the platform to deny) the reset is refused: the node alone is one party;
//! - the platform's next nonce of each key agrees with the node's count (checked, not
//!   counted as a witness: a platform may only repeat its node's count).
//!
//! Signed bytes stay valid on any chain with the same chain id: what the plan lists as
//! signed and unmined could still be mined should the old chain come back, or a copy of
//! it be run. The log is written before the journal: a reset journal whose keys still
//! hold the old nonces would refuse every signature; run again, it is all done again
//! harmlessly.

use alloy_primitives::{Address, B256};
use alloy_signer_local::PrivateKeySigner;
use serde::Serialize;

use super::Flows;
use crate::Error;
use crate::journal::{FlowKind, FlowState};
use crate::rpc::{NodeClient, TxPresence};

/// How many of each key's newest signatures on the chain a reset is checked against.
pub const RESET_CHECKED_PER_KEY: usize = 32;

/// A flow a reset retires, as it stands.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RetiredFlow {
    /// Its txId.
    pub tx_id: String,
    /// What it is.
    pub kind: FlowKind,
    /// Its state before the reset.
    pub state: FlowState,
    /// The transactions it signed that no node here has mined: valid bytes on any chain
    /// with this chain id.
    pub unmined: Vec<B256>,
}

/// What a reset of a chain would do, and what was asked to believe it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainResetPlan {
    /// The chain id.
    pub chain_id: u64,
    /// Block 0 as the node reports it now.
    pub genesis: B256,
    /// Block 0 as the journal recorded it.
    pub journaled: Option<String>,
    /// Block 0 as the signing log recorded it.
    pub logged: Option<B256>,
    /// The flows that would be retired.
    pub flows: Vec<RetiredFlow>,
    /// The keys that signed on the chain (the log's, and the flows' senders).
    pub keys: Vec<Address>,
    /// The transactions the node (and the second node) were asked about, none known.
    pub checked_transactions: usize,
    /// What agreed besides the node: a second node, the platform's nonce counts.
    pub witnesses: Vec<String>,
}

/// What the witnesses of a chain reset answered (gathered by
/// [`Flows::plan_chain_reset`], decided by [`reset_verdict`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct ResetEvidence {
    /// The chain's block 0 as its node reports it now.
    pub genesis: B256,
    /// Block 0 as the journal recorded it.
    pub journaled: Option<String>,
    /// Block 0 as the signing log recorded it.
    pub logged: Option<B256>,
    /// The journaled and logged transactions of the chain, and where each witness node
    /// has them: `(who, hash, presence)` for every one a node knows.
    pub known_by_nodes: Vec<(String, B256, TxPresence)>,
    /// How many transactions the nodes were asked about.
    pub asked_nodes: usize,
    /// A second node's block 0, when one was given.
    pub second_genesis: Option<B256>,
    /// The journal's redemptions on the chain the platform was asked about (operation
    /// 5, by txId and by hash), and those it still has a record of.
    pub asked_platform: usize,
    /// Those the platform knows: `(txId, its status)`.
    pub known_by_platform: Vec<(String, String)>,
    /// Each key's next nonce by the platform and by the node, where they differ.
    pub nonce_disagreements: Vec<(Address, u64, u64)>,
    /// The keys whose nonces were compared.
    pub nonces_compared: usize,
}

/// Whether the witnesses in `e` believe the chain was reset: `Ok` with what agreed
/// besides the node, or `Err` with the witness that disagreed (or the one missing).
/// A reset frees nonces, so it needs two witnesses that are not one party: the node,
/// and a second node or the platform's records. The platform's nonce count is no second
/// witness (it may repeat the node's); it is checked, not counted. Pure: what the
/// witnesses answered decides.
pub(crate) fn reset_verdict(e: &ResetEvidence) -> Result<Vec<String>, String> {
    block_zero_verdict(e)?;
    rest_verdict(e)
}

/// The node's block 0 against the journal's and the signing log's: a chain whose block
/// 0 is one of theirs was not reset, whatever else is said.
fn block_zero_verdict(e: &ResetEvidence) -> Result<(), String> {
    let genesis = e.genesis;
    if e.journaled
        .as_deref()
        .is_some_and(|j| j.eq_ignore_ascii_case(&genesis.to_string()))
    {
        return Err(format!(
            "the node's block 0 is {genesis}, the one its flows were journaled on"
        ));
    }
    if e.logged == Some(genesis) {
        return Err(format!(
            "the node's block 0 is {genesis}, the one the signing log recorded with this \
             keystore's signatures on the chain"
        ));
    }
    Ok(())
}

/// The rest of [`reset_verdict`], once block 0 says the chain is another.
fn rest_verdict(e: &ResetEvidence) -> Result<Vec<String>, String> {
    let genesis = e.genesis;
    if let Some((who, hash, presence)) = e.known_by_nodes.first() {
        return Err(format!(
            "{who} has transaction {hash}, signed for this chain, {}: it is still the chain \
             that was signed for",
            presence.describe()
        ));
    }
    if let Some(theirs) = e.second_genesis.filter(|g| *g != genesis) {
        return Err(format!(
            "the second node's block 0 is {theirs}, the node's {genesis}: they are not on one \
             chain"
        ));
    }
    if let Some((tx_id, status)) = e.known_by_platform.first() {
        return Err(format!(
            "the platform still has the redemption of flow {tx_id} ({}), journaled on this \
             chain: its records are of the chain that was signed for",
            bridgectl_tx::text::printable(status)
        ));
    }
    if let Some((key, platform, node)) = e.nonce_disagreements.first() {
        return Err(format!(
            "the platform counts {platform} transactions of {key} on the chain, the node \
             {node}: they disagree"
        ));
    }
    let mut witnesses = Vec::new();
    if let Some(g) = e.second_genesis {
        witnesses.push(format!(
            "a second node reports block 0 {g} and knows none of the {} transactions",
            e.asked_nodes
        ));
    }
    if e.asked_platform > 0 {
        witnesses.push(format!(
            "the platform has no record of the {} redemption(s) journaled on the chain",
            e.asked_platform
        ));
    }
    if witnesses.is_empty() {
        return Err(
            "only the node says so (its block 0, its ignorance of the journaled \
             transactions), and no second witness could be asked: the platform knows \
             nothing of this chain's flows to deny (no redemption is journaled on it); give a \
             second node of the chain as the witness"
                .into(),
        );
    }
    if e.nonces_compared > 0 {
        witnesses.push(format!(
            "the platform's next nonce of {} key(s) agrees with the node's (checked, not \
             counted: it may repeat the node's)",
            e.nonces_compared
        ));
    }
    Ok(witnesses)
}

impl Flows {
    /// Looks at chain `chain_id` (the bridge's main or side chain) before a reset: the
    /// witnesses must agree it was reset (`reset_verdict`: the node and a second one
    /// that is not the node, a second node at `second_node`, or the platform's records
    /// of the chain's redemptions), else [`Error::NotReset`] says which did not or which
    /// is missing. Nothing is changed.
    pub async fn plan_chain_reset(
        &self,
        chain_id: u64,
        second_node: Option<&str>,
    ) -> Result<ChainResetPlan, Error> {
        let not = |why: String| Error::NotReset { chain_id, why };
        let node = self.node_of_chain(chain_id).ok_or(Error::Config(
            "a chain reset is checked against the chain's node: the bridge description names \
             none for it (its rpc_url)",
        ))??;
        let mut e = ResetEvidence {
            genesis: node.genesis_hash().await?,
            journaled: self.journal.chain_genesis(chain_id)?,
            logged: self.signing_log.chain_genesis(chain_id)?,
            ..ResetEvidence::default()
        };
        // The node's own word first: nothing else is asked when it refuses.
        block_zero_verdict(&e).map_err(not)?;
        let signed = self
            .signing_log
            .signed_on_chain(chain_id, RESET_CHECKED_PER_KEY)?;
        let on_chain = self.journal.flows_on_chain(chain_id)?;
        let mut keys: Vec<Address> = signed.iter().map(|b| b.key).collect();
        keys.extend(
            on_chain
                .iter()
                .filter_map(|f| f.from.as_deref().and_then(|a| a.parse::<Address>().ok())),
        );
        keys.sort();
        keys.dedup();
        let mut flows = Vec::new();
        let mut hashes: Vec<B256> = signed.iter().map(|b| b.tx_hash).collect();
        for rec in &on_chain {
            let mut unmined: Vec<B256> = self
                .journal
                .signatures(&rec.tx_id)?
                .iter()
                .filter_map(|s| s.tx_hash.parse().ok())
                .collect();
            unmined.dedup();
            hashes.extend(&unmined);
            flows.push(RetiredFlow {
                tx_id: rec.tx_id.clone(),
                kind: rec.kind,
                state: rec.state,
                unmined,
            });
        }
        hashes.sort();
        hashes.dedup();
        e.asked_nodes = hashes.len();
        let mut nodes = vec![("the node".to_owned(), node.clone())];
        if let Some(url) = second_node {
            let own = self
                .side_of_chain(chain_id)
                .and_then(|s| s.rpc_url.as_deref());
            if own.is_some_and(|u| u.trim_end_matches('/') == url.trim_end_matches('/')) {
                return Err(not(format!(
                    "the witness {} is the node itself: a second node is another endpoint",
                    redact(url)
                )));
            }
            let second: std::sync::Arc<dyn crate::node::Node> =
                std::sync::Arc::new(NodeClient::new(url)?);
            e.second_genesis = Some(second.genesis_hash().await?);
            nodes.push((format!("the second node ({})", redact(url)), second));
        }
        for (who, n) in &nodes {
            for hash in &hashes {
                match n.presence(*hash).await? {
                    TxPresence::Unknown => {}
                    known => e.known_by_nodes.push((who.clone(), *hash, known)),
                }
            }
        }
        // The platform's records of the redemptions journaled on the chain: a platform
        // that still has them is on the chain they were made on.
        if let Some(side) = self.side_of_chain(chain_id) {
            for rec in on_chain
                .iter()
                .filter(|r| matches!(self.end_of(r), Ok(super::follow::End::Redemption { .. })))
            {
                let Some(hash) = rec.tx_hash.as_deref().and_then(|h| h.parse::<B256>().ok()) else {
                    continue;
                };
                e.asked_platform += 1;
                if let Some(r) = self.redemption_of(&rec.tx_id, hash).await? {
                    e.known_by_platform.push((rec.tx_id.clone(), r.status));
                }
            }
            for key in &keys {
                let (platform, counted) = tokio::try_join!(
                    self.client.next_nonce(*key, &side.environment_id),
                    node.pending_nonce(*key)
                )?;
                e.nonces_compared += 1;
                if platform != counted {
                    e.nonce_disagreements.push((*key, platform, counted));
                }
            }
        }
        let witnesses = reset_verdict(&e).map_err(not)?;
        Ok(ChainResetPlan {
            chain_id,
            genesis: e.genesis,
            journaled: e.journaled,
            logged: e.logged,
            flows,
            keys,
            checked_transactions: hashes.len(),
            witnesses,
        })
    }

    /// Carries out `plan` ([`Flows::plan_chain_reset`]): each key of `keys` (those of
    /// `plan.keys` the caller can sign for) records the reset in the signing log with
    /// the signer `unlock` gives for it, then the journal retires the chain's flows and
    /// records the new block 0. Returns the retired flows' txIds.
    pub fn reset_chain(
        &self,
        plan: &ChainResetPlan,
        keys: &[Address],
        mut unlock: impl FnMut(Address) -> Result<PrivateKeySigner, Error>,
    ) -> Result<Vec<String>, Error> {
        for key in keys {
            let signer = unlock(*key)?;
            bridgectl_tx::signing_log::log_chain_reset(
                self.signing_log.as_ref(),
                &signer,
                plan.chain_id,
                plan.genesis,
                self.clock.now(),
            )?;
        }
        self.journal.reset_chain(plan.chain_id, plan.genesis)
    }
}

/// `url` by scheme, host and port only (its path and query may hold a key).
fn redact(url: &str) -> String {
    crate::http::redact_url(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: B256 = B256::repeat_byte(1);
    const NEW: B256 = B256::repeat_byte(2);

    /// A node on a new chain that knows none of 3 journaled transactions, its answer
    /// alone.
    fn node_alone() -> ResetEvidence {
        ResetEvidence {
            genesis: NEW,
            journaled: Some(OLD.to_string()),
            logged: Some(OLD),
            asked_nodes: 3,
            nonces_compared: 1,
            ..ResetEvidence::default()
        }
    }

    /// The node alone is one witness: never enough, however it answers (its repeated
    /// nonce count included).
    #[test]
    fn the_node_alone_resets_nothing() {
        let e = reset_verdict(&node_alone()).expect_err("one witness");
        assert!(e.contains("only the node says so"), "{e}");
    }

    /// A second node, or the platform with no record of the chain's redemptions, is the
    /// second witness; each near miss refuses.
    #[test]
    fn a_second_witness_that_agrees_lets_a_reset_go_ahead_and_each_near_miss_refuses() {
        let second = ResetEvidence {
            second_genesis: Some(NEW),
            ..node_alone()
        };
        let w = reset_verdict(&second).expect("two witnesses");
        assert!(w[0].contains("second node"), "{w:?}");
        let platform = ResetEvidence {
            asked_platform: 2,
            ..node_alone()
        };
        let w = reset_verdict(&platform).expect("two witnesses");
        assert!(w[0].contains("no record of the 2 redemption"), "{w:?}");
        for (what, e, want) in [
            (
                "block 0 the journal's",
                ResetEvidence {
                    genesis: OLD,
                    logged: None,
                    ..second.clone()
                },
                "journaled on",
            ),
            (
                "block 0 the log's",
                ResetEvidence {
                    journaled: None,
                    genesis: OLD,
                    ..second.clone()
                },
                "signing log",
            ),
            (
                "the second node on another chain",
                ResetEvidence {
                    second_genesis: Some(B256::repeat_byte(3)),
                    ..node_alone()
                },
                "not on one chain",
            ),
            (
                "a node knows one transaction",
                ResetEvidence {
                    known_by_nodes: vec![(
                        "the second node".into(),
                        B256::repeat_byte(9),
                        TxPresence::Mined,
                    )],
                    ..second.clone()
                },
                "still the chain",
            ),
            (
                "the platform knows one redemption",
                ResetEvidence {
                    known_by_platform: vec![("t1".into(), "completed".into())],
                    ..platform.clone()
                },
                "still has the redemption of flow t1",
            ),
            (
                "the nonce counts differ",
                ResetEvidence {
                    nonce_disagreements: vec![(Address::ZERO, 4, 0)],
                    ..second.clone()
                },
                "they disagree",
            ),
        ] {
            let why = reset_verdict(&e).expect_err(what);
            assert!(why.contains(want), "{what}: {why}");
        }
    }
}
