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
//! - a second node, when one is given, reports the same new block 0 and knows none of
//!   them either;
//! - the platform's next nonce of each key agrees with the node's count.
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

impl Flows {
    /// Looks at chain `chain_id` (the bridge's main or side chain) before a reset: every
    /// witness must agree it was reset (see the module doc), else [`Error::NotReset`]
    /// says which did not. `second_node` is another RPC URL for the chain. Nothing is
    /// changed.
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
        let genesis = node.genesis_hash().await?;
        let journaled = self.journal.chain_genesis(chain_id)?;
        if journaled
            .as_deref()
            .is_some_and(|j| j.eq_ignore_ascii_case(&genesis.to_string()))
        {
            return Err(not(format!(
                "the node's block 0 is {genesis}, the one its flows were journaled on"
            )));
        }
        let logged = self.signing_log.chain_genesis(chain_id)?;
        if logged == Some(genesis) {
            return Err(not(format!(
                "the node's block 0 is {genesis}, the one the signing log recorded with this \
                 keystore's signatures on the chain"
            )));
        }
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
        let mut nodes = vec![("the node", node.clone())];
        let mut witnesses = Vec::new();
        if let Some(url) = second_node {
            let second: std::sync::Arc<dyn crate::node::Node> =
                std::sync::Arc::new(NodeClient::new(url)?);
            let theirs = second.genesis_hash().await?;
            if theirs != genesis {
                return Err(not(format!(
                    "the second node's block 0 is {theirs}, the node's {genesis}: they are not \
                     on one chain"
                )));
            }
            witnesses.push(format!(
                "a second node ({}) reports block 0 {theirs}",
                redact(url)
            ));
            nodes.push(("the second node", second));
        }
        for (who, n) in &nodes {
            for hash in &hashes {
                match n.presence(*hash).await? {
                    TxPresence::Unknown => {}
                    known => {
                        return Err(not(format!(
                            "{who} has transaction {hash}, signed for this chain, {}: it is \
                             still the chain that was signed for",
                            known.describe()
                        )));
                    }
                }
            }
        }
        // The platform counts each key's transactions on its own: it must agree with
        // the node that the chain starts over.
        if let Some(side) = self.side_of_chain(chain_id) {
            for key in &keys {
                let (platform, counted) = tokio::try_join!(
                    self.client.next_nonce(*key, &side.environment_id),
                    node.pending_nonce(*key)
                )?;
                if platform != counted {
                    return Err(not(format!(
                        "the platform counts {platform} transactions of {key} on the chain, the \
                         node {counted}: they disagree"
                    )));
                }
            }
            if !keys.is_empty() {
                witnesses.push(format!(
                    "the platform's next nonce of {} key(s) agrees with the node's",
                    keys.len()
                ));
            }
        }
        Ok(ChainResetPlan {
            chain_id,
            genesis,
            journaled,
            logged,
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
