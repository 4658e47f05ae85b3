//! What "final" means on a chain, and the verdict on one fact.
//!
//! A fact that ends a flow (its receipt, a swap's credit log, a redemption's payout)
//! counts only once it is final: until then a reorganisation can take its block away,
//! and with it the fact. Each chain says what final means ([`Finality`], a profile's
//! `main_finality` / `side_finality`):
//!
//! | setting | final when |
//! |---|---|
//! | `"finalized"` | the node's `finalized` block is at or past the fact's block (Ethereum: about two epochs, 64 to 95 blocks) |
//! | `"safe"` | the node's `safe` block is at or past it |
//! | a number `n` | the fact's block has `n` confirmations: it and `n - 1` blocks on top |
//! | nothing | `finalized` where the node answers it, else [`DEFAULT_CONFIRMATIONS`] |
//!
//! A fact is looked at by its block's hash: the chain's block at the fact's number must
//! still be the one it was seen in, else the fact is withdrawn ([`Verdict::Withdrawn`]).
//! [`verdict`] decides from what the node answered; the flows ask the node
//! ([`chain_tip`], and a fact's own block or receipt) and act on the verdict.

use alloy_primitives::B256;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::node::{BlockId, Node};

/// Confirmations that make a fact final on a chain whose node answers no `finalized`
/// block and whose profile says nothing: 64, two Ethereum epochs' worth of blocks, deeper
/// than any reorganisation a proof-of-stake chain has had without a finality failure,
/// and a conservative depth for side chains and L2s that say nothing of their own.
pub const DEFAULT_CONFIRMATIONS: u64 = 64;

/// What final means on one chain (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finality {
    /// The node's `finalized` block tag.
    Finalized,
    /// The node's `safe` block tag.
    Safe,
    /// This many confirmations (at least 1: the fact's own block).
    Confirmations(u64),
}

impl std::str::FromStr for Finality {
    type Err = String;

    fn from_str(text: &str) -> Result<Finality, String> {
        match text.trim() {
            "finalized" => Ok(Finality::Finalized),
            "safe" => Ok(Finality::Safe),
            n => match n.parse::<u64>() {
                Ok(0) => Err("0 confirmations: a fact is in a block, so at least 1".into()),
                Ok(n) => Ok(Finality::Confirmations(n)),
                Err(_) => Err(format!(
                    "{n:?} is not a finality: \"finalized\", \"safe\" or a number of \
                     confirmations"
                )),
            },
        }
    }
}

impl std::fmt::Display for Finality {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Finality::Finalized => f.write_str("finalized"),
            Finality::Safe => f.write_str("safe"),
            Finality::Confirmations(n) => write!(f, "{n}"),
        }
    }
}

/// As a profile writes it: `"finalized"`, `"safe"`, or a number (`12` or `"12"`).
impl<'de> Deserialize<'de> for Finality {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Finality, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Number(u64),
            Text(String),
        }
        match Written::deserialize(d)? {
            Written::Number(n) => n.to_string().parse(),
            Written::Text(t) => t.parse(),
        }
        .map_err(serde::de::Error::custom)
    }
}

impl Serialize for Finality {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Finality::Confirmations(n) => s.serialize_u64(*n),
            tag => s.serialize_str(&tag.to_string()),
        }
    }
}

impl Finality {
    /// The tag a node is asked for under `setting` (`None`: the default): none for a
    /// number of confirmations.
    fn tag(setting: Option<Finality>) -> Option<BlockId> {
        match setting {
            Some(Finality::Confirmations(_)) => None,
            Some(Finality::Safe) => Some(BlockId::Safe),
            Some(Finality::Finalized) | None => Some(BlockId::Finalized),
        }
    }
}

/// How far a wait goes ([`crate::WaitOptions::until`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Until {
    /// Until the flow's end is final on its chain [the default].
    #[default]
    Final,
    /// Until its end is observed (included in a block): the flow is left `confirming`,
    /// and `status` or `resume` finish it later.
    Included,
}

/// What a chain's node said of its tip in one look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainTip {
    /// Its newest block.
    pub head: u64,
    /// The block its finality tag names (`finalized`, `safe`), when asked and answered.
    pub tagged: Option<u64>,
}

/// What is known of one fact after a look.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "verdict")]
pub enum Verdict {
    /// Its block is the chain's and final.
    Final {
        /// Its confirmations now.
        confirmations: u64,
    },
    /// Its block is the chain's, not final yet.
    Confirming {
        /// Its confirmations now (its own block counts as the first).
        confirmations: u64,
        /// The confirmations that make it final, when known: the setting's number, or
        /// for a tag how far the tagged block is behind the head now. `None`: the node
        /// answers no such tag, and the setting asks for it (never final so).
        needed: Option<u64>,
    },
    /// Its block is no longer the chain's (or its transaction no longer mined there):
    /// the chain took it back.
    Withdrawn,
}

impl Verdict {
    /// Whether the fact is final.
    pub fn is_final(self) -> bool {
        matches!(self, Verdict::Final { .. })
    }

    /// "2 of 3 confirmations", "5 confirmations, final once the node's finalized block
    /// reaches it", for progress and status.
    pub fn describe(self) -> String {
        match self {
            Verdict::Final { confirmations } => format!("final ({confirmations} confirmations)"),
            Verdict::Confirming {
                confirmations,
                needed: Some(n),
            } => format!("{confirmations} of {n} confirmations"),
            Verdict::Confirming {
                confirmations,
                needed: None,
            } => format!(
                "{confirmations} confirmations; the node answers no finality tag, so it is \
                 never final by one: set a number of confirmations for the chain"
            ),
            Verdict::Withdrawn => "taken back by a reorganisation".into(),
        }
    }
}

/// The verdict on a fact in block `block` seen with hash `seen`, when the chain's block
/// at that number now has hash `canonical` (`None`: no such block, or the fact's
/// transaction is no longer mined in it) and its tip is `tip`, under `setting` (`None`:
/// the default of the module doc). Pure: what the node answered decides.
pub fn verdict(
    block: u64,
    seen: B256,
    canonical: Option<B256>,
    tip: ChainTip,
    setting: Option<Finality>,
) -> Verdict {
    if canonical != Some(seen) {
        return Verdict::Withdrawn;
    }
    let confirmations = (tip.head + 1).saturating_sub(block);
    let by_depth = |n: u64| {
        if confirmations >= n {
            Verdict::Final { confirmations }
        } else {
            Verdict::Confirming {
                confirmations,
                needed: Some(n),
            }
        }
    };
    let by_tag = |tagged: u64| {
        if tagged >= block {
            Verdict::Final { confirmations }
        } else {
            Verdict::Confirming {
                confirmations,
                needed: Some((tip.head + 1).saturating_sub(tagged)),
            }
        }
    };
    match (setting, tip.tagged) {
        (Some(Finality::Confirmations(n)), _) => by_depth(n),
        (_, Some(tagged)) => by_tag(tagged),
        (None, None) => by_depth(DEFAULT_CONFIRMATIONS),
        (Some(_), None) => Verdict::Confirming {
            confirmations,
            needed: None,
        },
    }
}

/// One look at `node`'s tip as `setting` needs it: its head, and its finality tag's
/// block unless the setting is a number of confirmations (one call, or two).
pub async fn chain_tip(node: &dyn Node, setting: Option<Finality>) -> Result<ChainTip, Error> {
    let head = node.block_number().await?;
    let tagged = match Finality::tag(setting) {
        Some(tag) => node.block(tag).await?.map(|b| b.number),
        None => None,
    };
    Ok(ChainTip { head, tagged })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::fake::FakeNode;

    const SEEN: B256 = B256::repeat_byte(0xaa);
    const OTHER: B256 = B256::repeat_byte(0xbb);

    fn tip(head: u64, tagged: Option<u64>) -> ChainTip {
        ChainTip { head, tagged }
    }

    /// Near misses decide: one block short of the depth, the tagged block one short of
    /// the fact, a hash that changed.
    #[test]
    fn a_fact_is_final_at_its_depth_and_not_one_block_before() {
        let three = Some(Finality::Confirmations(3));
        assert_eq!(
            verdict(10, SEEN, Some(SEEN), tip(11, None), three),
            Verdict::Confirming {
                confirmations: 2,
                needed: Some(3)
            },
            "one block short"
        );
        assert_eq!(
            verdict(10, SEEN, Some(SEEN), tip(12, None), three),
            Verdict::Final { confirmations: 3 }
        );
        assert_eq!(
            verdict(10, SEEN, Some(OTHER), tip(50, None), three),
            Verdict::Withdrawn,
            "another block at its number, however deep"
        );
        assert_eq!(
            verdict(10, SEEN, None, tip(50, None), three),
            Verdict::Withdrawn,
            "no block at its number (the chain is shorter now), or its transaction unmined"
        );
        assert_eq!(
            verdict(10, SEEN, Some(SEEN), tip(9, None), three),
            Verdict::Confirming {
                confirmations: 0,
                needed: Some(3)
            },
            "a node behind the fact's block gives it no confirmations"
        );
    }

    #[test]
    fn a_tag_is_final_once_it_reaches_the_block() {
        let finalized = Some(Finality::Finalized);
        assert_eq!(
            verdict(10, SEEN, Some(SEEN), tip(40, Some(9)), finalized),
            Verdict::Confirming {
                confirmations: 31,
                needed: Some(32)
            },
            "the finalized block one short of the fact"
        );
        assert!(verdict(10, SEEN, Some(SEEN), tip(40, Some(10)), finalized).is_final());
        assert!(
            verdict(10, SEEN, Some(SEEN), tip(40, Some(10)), None).is_final(),
            "the default takes the tag where the node answers it"
        );
    }

    #[test]
    fn a_node_that_answers_no_tag_falls_back_to_the_default_depth_unless_a_tag_was_asked_for() {
        let at = |head| verdict(100, SEEN, Some(SEEN), tip(head, None), None);
        assert_eq!(
            at(100 + DEFAULT_CONFIRMATIONS - 2),
            Verdict::Confirming {
                confirmations: DEFAULT_CONFIRMATIONS - 1,
                needed: Some(DEFAULT_CONFIRMATIONS)
            }
        );
        assert!(at(100 + DEFAULT_CONFIRMATIONS - 1).is_final());
        // Asked for explicitly, a tag the node does not answer never makes it final.
        let asked = verdict(
            100,
            SEEN,
            Some(SEEN),
            tip(10_000, None),
            Some(Finality::Safe),
        );
        assert_eq!(
            asked,
            Verdict::Confirming {
                confirmations: 9901,
                needed: None
            }
        );
        assert!(asked.describe().contains("answers no finality tag"));
    }

    #[test]
    fn finality_reads_as_a_profile_writes_it() {
        #[derive(Deserialize)]
        struct P {
            f: Finality,
        }
        for (text, want) in [
            ("f = \"finalized\"", Finality::Finalized),
            ("f = \"safe\"", Finality::Safe),
            ("f = 12", Finality::Confirmations(12)),
            ("f = \"3\"", Finality::Confirmations(3)),
        ] {
            assert_eq!(toml::from_str::<P>(text).expect(text).f, want, "{text}");
        }
        for bad in ["f = 0", "f = \"latest\"", "f = -1"] {
            assert!(toml::from_str::<P>(bad).is_err(), "{bad}");
        }
    }

    /// The tip is asked as the setting needs it: a number of confirmations asks no tag;
    /// a node without the tag answers `None`.
    #[tokio::test]
    async fn the_tip_asks_the_tag_only_when_the_setting_needs_it() {
        let node = FakeNode::new(31338).with_head(20).with_finalized(Some(18));
        let got = chain_tip(&node, Some(Finality::Confirmations(2)))
            .await
            .expect("tip");
        assert_eq!(got, tip(20, None));
        assert_eq!(node.calls("block:finalized"), 0);
        let got = chain_tip(&node, None).await.expect("tip");
        assert_eq!(got, tip(20, Some(18)));
        let bare = FakeNode::new(31338).with_head(20).with_finalized(None);
        assert_eq!(chain_tip(&bare, None).await.expect("tip"), tip(20, None));
    }
}
