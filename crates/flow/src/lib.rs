#![doc = include_str!("../README.md")]
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

pub mod airgap;
pub mod batch_file;
pub mod client;
pub mod clock;
mod error;
pub mod finality;
mod flows;
pub mod journal;
pub mod node;
mod peg;
mod presence;
pub mod profile;
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
pub use bridgectl_secret::{Secret, WrongSecret};
/// The transaction layer the flows' types come from ([`Review`] holds its `Verified`,
/// errors carry its refusals): one dependency for an embedder, the same version.
pub use bridgectl_tx as tx;
/// What [`Flows::builder`] records every signature in: `bridgectl_signing_log::SigningLogDb`
/// (the SQLite log beside a keystore's keys, `SigningLogDb::open_in(keystore.dir(),
/// keystore.signers()?)`) or a log of your own. The store is its own crate so that a
/// wallet that keeps its log elsewhere compiles none of it.
pub use bridgectl_tx::SigningLog;
pub use bridgectl_tx::{Policy, SignedTx, Token, Trusted, Verified};
pub use error::{Awaits, Error, RefusalCause, chain};
pub use finality::Finality;
pub use flows::{
    AbandonedBatch, AccountPlan, AccountSpend, ActionCall, ActionOutcome, ActionResult,
    ApproveFuture, Approver, BatchCheck, BatchCounts, BatchItem, BatchOp, BatchOptions, BatchPlan,
    BatchReview, BatchSigning, BatchStatus, Bridge, BundleCheck, CANCEL_GAS_LIMIT, Cap,
    ChainResetPlan, ChainSide, CheckedBatch, CheckedItem, DEFAULT_BUMP_BASIS_POINTS,
    DEFAULT_COMMIT_EVERY, DEFAULT_MAX_GAS_LIMIT, Ended, EndedBy, FactView, FlowStatus, Flows,
    FlowsBuilder, GAS_PRICE_SANITY_MULTIPLE, GasNeed, GasPriceCap, GasSource, HeldItem, ItemCheck,
    ItemError, ItemResult, ItemState, ItemStatus, ItemView, LimitReview, NOT_MINED_AFTER,
    NoGasPriceCap, NonceSource, OfflineSigner, OfflineSigning, PegRatio, PlanRefusal,
    PreparedBatch, PreparedBundle, PreparedView, Progress, Quiet, RESET_CHECKED_PER_KEY, Recipient,
    RecipientReview, RecipientTotal, RedeemOutcome, RefusedItem, ReleasedNonce, Replaced,
    Repricing, Resumed, RetiredFlow, Review, SenderReview, ShortSender, SignedBatchCheck,
    SigningMode, Submitted, Submitter, SwapCredit, SwapOutcome, SwapSpec, TokenId, TokenSide,
    TokenTotal, TokenTotalReview, Tokens, TransferSpec, Until, WAIT_REPORT, WaitOptions,
    can_resume,
};
pub use journal::{BatchLock, BatchRecord, FlowKind, FlowState, HeldNonce, Journal, Purpose};
pub use profile::{Profile, ProfileError};

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

    /// Each README's list of crates to optimise in debug builds is the workspace's own
    /// (one list: the flow crate's, the keystore's, the transaction crate's): a crate
    /// this workspace optimises for speed is one an embedder's build needs too.
    #[test]
    fn the_readmes_list_every_package_the_workspace_optimises() {
        let workspace = optimised(include_str!("../../../Cargo.toml"));
        assert!(workspace.contains(&"argon2"), "{workspace:?}");
        for (readme, text) in [
            ("flow", include_str!("../README.md")),
            ("keystore", include_str!("../../keystore/README.md")),
            ("tx", include_str!("../../tx/README.md")),
        ] {
            assert_eq!(optimised(text), workspace, "{readme}");
        }
    }
}
