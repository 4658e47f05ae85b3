//! The one error type of the sandbox library.

use std::path::PathBuf;

/// What can go wrong while loading, starting or stopping a sandbox.
///
/// Request-level failures never show up here: the API answers them with an error envelope
/// (see the crate README for the codes).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The config file could not be read.
    #[error("cannot read sandbox config {}", path.display())]
    ReadConfig {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The config file is not valid TOML for [`crate::SandboxConfig`]. One line: where,
    /// and what the TOML parser said (its own text draws a caret over several lines).
    #[error(
        "invalid sandbox config {}: {}{message}",
        path.display(),
        at.map(|(line, column)| format!("line {line}, column {column}: ")).unwrap_or_default()
    )]
    ParseConfig {
        /// The file (or `<string>`).
        path: PathBuf,
        /// Line and column (from 1) of the spot, when the parser names one.
        at: Option<(usize, usize)>,
        /// What the TOML parser said: the field and what is wrong with it.
        message: String,
    },
    /// The config parsed but a value is not acceptable.
    #[error("invalid sandbox config: {0}")]
    Config(String),
    /// No anvil binary was found anywhere we looked.
    #[error(
        "anvil not found (looked at: {tried}); run `make tools` in the repository, or set \
         BRIDGECTL_ANVIL to the anvil binary"
    )]
    AnvilNotFound {
        /// Every place that was tried, in order.
        tried: String,
    },
    /// The pinned PostgreSQL server (a sandbox's shared state) could not be found or started.
    #[error("postgresql: {reason}")]
    Postgres {
        /// What went wrong.
        reason: String,
    },
    /// The anvil process could not be spawned.
    #[error("cannot start anvil {}", path.display())]
    AnvilSpawn {
        /// The binary.
        path: PathBuf,
        /// Why the spawn failed.
        #[source]
        source: std::io::Error,
    },
    /// Anvil started but never said where it listens.
    #[error("anvil {} did not become ready: {reason}", path.display())]
    AnvilStart {
        /// The binary.
        path: PathBuf,
        /// What was seen instead.
        reason: String,
    },
    /// A JSON-RPC call to one of the chains failed during start-up.
    #[error("{chain} chain: rpc {method} failed")]
    Rpc {
        /// `main` or `side`.
        chain: &'static str,
        /// The JSON-RPC method.
        method: &'static str,
        /// The node's answer or the transport failure.
        #[source]
        source: crate::rpc::RpcError,
    },
    /// A contract could not be deployed or funded.
    #[error("setting up the contracts failed: {0}")]
    Deploy(String),
    /// A setup transaction (deploying, funding, minting) was not accepted.
    #[error("setting up the contracts failed: {what}")]
    Setup {
        /// The step.
        what: String,
        /// The node's refusal.
        #[source]
        source: crate::chain::SendError,
    },
    /// A committed contract artifact does not parse.
    #[error("contract artifact {name} is invalid")]
    Artifact {
        /// The contract name.
        name: &'static str,
        /// The parser's message.
        #[source]
        source: serde_json::Error,
    },
    /// The API listener could not be bound on 127.0.0.1.
    #[error("cannot listen on 127.0.0.1")]
    Bind(#[source] std::io::Error),
    /// Signing a sandbox-held transaction failed.
    #[error("signing failed")]
    Sign(#[source] alloy_signer::Error),
}
