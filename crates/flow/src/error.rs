//! The one error type of the flows.

use serde_json::Value;

use crate::client::PlatformError;

/// An error and its causes on one line, "what failed: why", each cause once.
///
/// Some errors name their source in their own message (so that `to_string()` alone says
/// why) and also report it as `source()`; walking the chain naively would print that
/// source twice ("listener on ...: Address already in use: Address already in use"), so a
/// cause the text already ends with is skipped.
pub fn one_line(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = String::new();
    let mut next = Some(err);
    while let Some(cause) = next {
        let part = cause.to_string();
        if !text.ends_with(&part) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&part);
        }
        next = cause.source();
    }
    text
}

/// What can go wrong talking to the platform, checking what it returned, or keeping the
/// journal.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A URL could not be used.
    #[error("invalid url {url:?}: {reason}")]
    BadUrl {
        /// The URL as given, without its path and query.
        url: String,
        /// Why.
        reason: String,
    },

    /// A secret would have gone over plain http to another machine.
    #[error(
        "refusing to send the access token over plain http to {url}: use https (plain http \
         is allowed only to 127.0.0.1/localhost)"
    )]
    PlaintextRefused {
        /// The URL.
        url: String,
    },

    /// The request did not get an answer (connection refused, timeout, reset).
    #[error("{what}: {source}")]
    Http {
        /// What was being done.
        what: String,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },

    /// An answer's body could not be read: over the size cap, or the connection failed
    /// mid-body.
    #[error("{what}")]
    Body {
        /// What was being read.
        what: String,
        /// Why.
        #[source]
        source: crate::http::BodyError,
    },

    /// The platform answered with an error envelope or an HTTP error.
    #[error("{operation}: {error}")]
    Platform {
        /// Method and path.
        operation: String,
        /// Status, code and message.
        error: PlatformError,
    },

    /// The answer is not in any shape this client knows.
    #[error("unexpected {what} from the platform: expected {expected}, got {data}")]
    UnexpectedShape {
        /// What was being read.
        what: String,
        /// The shape(s) looked for.
        expected: String,
        /// What came (may be shortened).
        data: Value,
    },

    /// A request body could not be encoded.
    #[error("cannot encode the request: {0}")]
    Encode(#[source] serde_json::Error),

    /// An argument given by the user or the config is unusable.
    #[error("{0}")]
    BadInput(String),

    /// The raw transaction failed parsing or the checks against the intent; nothing was
    /// signed.
    #[error(transparent)]
    Tx(#[from] bridgectl_tx::Error),

    /// Unlocking the key failed.
    #[error(transparent)]
    Keystore(#[from] bridgectl_keystore::Error),

    /// The journal database failed.
    #[error("journal {path}: {source}")]
    Journal {
        /// The database file.
        path: String,
        /// The SQLite error.
        #[source]
        source: rusqlite::Error,
    },

    /// Another flow holds the nonce: signing it again would make two transactions that
    /// can both be mined.
    #[error(
        "nonce {nonce} of {address} on chain {chain_id} is reserved by flow {by}: finish it \
         with `bridgectl resume {by}` instead of signing a second transaction"
    )]
    NonceReserved {
        /// The sender.
        address: alloy_primitives::Address,
        /// The chain.
        chain_id: u64,
        /// The nonce.
        nonce: u64,
        /// The flow holding it.
        by: String,
    },

    /// `resume` of a flow that already completed: there is nothing to resend.
    #[error(
        "flow {tx_id} already completed{}: nothing to resend",
        .tx_hash.as_ref().map(|h| format!(" (tx {h})")).unwrap_or_default()
    )]
    AlreadyCompleted {
        /// The flow.
        tx_id: String,
        /// Its transaction, if it had one.
        tx_hash: Option<String>,
    },

    /// `resume` of a flow that never signed anything: nothing was sent.
    #[error(
        "flow {tx_id} was never signed (state {state}): nothing was sent, so there is \
         nothing to resume; start it again"
    )]
    NothingToResume {
        /// The flow.
        tx_id: String,
        /// Where it stands.
        state: &'static str,
    },

    /// The journal's record of a flow contradicts itself; nothing is sent from it.
    #[error("journal record of flow {tx_id} is inconsistent, nothing sent: {reason}")]
    JournalCorrupt {
        /// The flow.
        tx_id: String,
        /// What does not hold.
        reason: String,
    },

    /// A record asked for is not in the journal.
    #[error("no flow with txId {0} in the journal")]
    NotInJournal(String),

    /// The signed bundle does not match the request it claims to answer.
    #[error("signed bundle does not match its request: {0}")]
    BundleMismatch(String),

    /// Waiting ran out of time; the flow can be finished later with `resume`.
    #[error("gave up waiting after {seconds}s for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long.
        seconds: u64,
    },

    /// The user (through the approval callback) declined.
    #[error("declined: {0}")]
    Declined(String),
}

impl Error {
    /// 5xx from the platform: the request may be retried if it is retry-safe.
    pub fn is_server_error(&self) -> bool {
        matches!(self, Error::Platform { error, .. } if error.status >= 500)
    }

    /// A failure that may go away by itself: a 5xx, a timeout, a refused or reset
    /// connection.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Platform { error, .. } => error.status >= 500,
            Error::Http { .. } => true,
            Error::Body { source, .. } => matches!(source, crate::http::BodyError::Read(_)),
            _ => false,
        }
    }

    /// The platform's error code, if this is an error envelope.
    pub fn platform_code(&self) -> Option<&str> {
        match self {
            Error::Platform { error, .. } => Some(&error.code),
            _ => None,
        }
    }
}
