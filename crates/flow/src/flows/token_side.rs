//! Which of the bridge's two tokens: a name every flow uses, kept apart so that the
//! flows that name it import nothing else of each other.

use serde::{Deserialize, Serialize};

/// Which token a transfer moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum TokenSide {
    /// The main-network token.
    Mt,
    /// The side-chain token.
    St,
}
