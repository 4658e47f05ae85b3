//! Where a node has a transaction: what a wait that ran out names (an error) and what
//! `status` shows, apart from the node client so that errors need no client.

/// Where a node has a transaction ([`crate::node::Node::presence`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum TxPresence {
    /// In a block.
    Mined,
    /// In the node's pool, not in a block yet.
    Pending,
    /// The node does not know it: never received, or dropped from its pool.
    Unknown,
}

impl TxPresence {
    /// How a person reads it.
    pub fn describe(self) -> &'static str {
        match self {
            TxPresence::Mined => "mined",
            TxPresence::Pending => "pending in the node's pool",
            TxPresence::Unknown => "unknown to the node (never received, or dropped from its pool)",
        }
    }
}
