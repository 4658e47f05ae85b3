#![doc = include_str!("../README.md")]
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

pub mod airgap;
pub mod batch_file;
pub mod client;
mod error;
mod flows;
pub mod journal;
mod progress;
pub mod rpc;
pub mod timing;

/// Bounded bodies, no proxy on loopback http, redacted URLs: shared with the webhook
/// client.
pub use bridgectl_http as http;

/// Amounts and accounts, as every flow takes them.
pub use alloy_primitives::{Address, U256};
/// The signer an [`Approver`] hands back (alloy's local signer, re-exported so that an
/// embedder needs no alloy dependency of its own to implement one).
pub use alloy_signer_local::PrivateKeySigner;
/// The one secret type of every bridgectl crate: the platform's token
/// ([`client::AccessToken`]), a keystore's passphrase, a web3 token.
pub use bridgectl_secret::Secret;
/// The transaction layer the flows' types come from ([`Review`] holds its `Verified`,
/// errors carry its refusals): one dependency for an embedder, the same version.
pub use bridgectl_tx as tx;
pub use bridgectl_tx::{Policy, SignedTx, Verified};
pub use error::{Error, chain};
pub use flows::{
    AccountPlan, AccountSpend, ActionCall, ActionOutcome, ActionResult, Approver, BatchCheck,
    BatchCounts, BatchItem, BatchOp, BatchOptions, BatchPlan, BatchReview, BatchSigning,
    BatchStatus, Bridge, BundleCheck, CANCEL_GAS_LIMIT, Cap, ChainSide, CheckedBatch, CheckedItem,
    DEFAULT_BUMP_BASIS_POINTS, DEFAULT_COMMIT_EVERY, DEFAULT_MAX_GAS_LIMIT, Ended, EndedBy,
    FlowStatus, Flows, FlowsBuilder, GAS_PRICE_SANITY_MULTIPLE, GasNeed, GasPriceCap, GasSource,
    ItemCheck, ItemError, ItemResult, ItemState, ItemStatus, ItemView, LimitReview, Mode, Moved,
    NoGasPriceCap, NonceSource, OfflineSigner, OfflineSigning, PegRatio, PlanRefusal,
    PreparedBatch, PreparedBundle, Progress, Quiet, Recipient, RecipientReview, RecipientTotal,
    RedeemOutcome, RefusedItem, Replaced, Repricing, Resumed, Review, SenderReview, Short,
    SignedBatchCheck, Submitted, Submitter, SwapCredit, SwapOutcome, SwapSpec, TokenId, TokenTotal,
    TokenTotalReview, Tokens, TransferSpec, WAIT_REPORT, WaitOptions, Which, can_resume,
};
pub use journal::{BatchLock, BatchRecord, FlowKind, FlowState, Journal, Purpose};

#[cfg(test)]
mod readme_tests {
    /// The names under `[profile.dev.package]` in `text`, in order.
    fn optimised(text: &str) -> Vec<&str> {
        text.lines()
            .skip_while(|l| l.trim() != "[profile.dev.package]")
            .skip(1)
            .take_while(|l| !l.trim().is_empty() && !l.starts_with('[') && !l.starts_with("```"))
            .filter_map(|l| l.split_once('=').map(|(name, _)| name.trim()))
            .collect()
    }

    /// The README's list of crates to optimise in debug builds is the workspace's own:
    /// a crate this workspace optimises for speed is one an embedder's build needs too.
    #[test]
    fn the_readme_lists_every_package_the_workspace_optimises() {
        let workspace = optimised(include_str!("../../../Cargo.toml"));
        assert!(workspace.contains(&"argon2"), "{workspace:?}");
        assert_eq!(optimised(include_str!("../README.md")), workspace);
    }
}
