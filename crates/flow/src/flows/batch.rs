//! Batch: many redeems, transfers and swaps in one run, pipelined across addresses and
//! finished from the journal after a crash.
//!
//! The batch is one journal record whose items are each bound to the txId of the flow that
//! carries them out, assigned when the batch is created. So after a crash or Ctrl-C the
//! journal alone says, for every item, whether it was never begun, stopped before it
//! signed (run again under a new txId; the old flow is marked abandoned and frees its
//! nonce), signed (the SAME bytes are sent again) or finished. Nothing runs twice.
//!
//! Every item goes through the same spine as a single flow (execute or build, the one
//! verifier, sign, journal, submit): a batch is never a way around a check. What a batch
//! changes is the order of work:
//! - items of one address run in input order, one at a time, because their nonces are
//!   consecutive: the next item starts as soon as the previous one's signed transaction
//!   is accepted, not when its redemption completes;
//! - addresses run side by side, at most [`BatchOptions::jobs`] at once;
//! - waiting for results (redemptions, receipts) happens for all submitted items
//!   together, off the addresses' paths;
//! - each address's key is given once for the whole batch and dropped (zeroized) as soon
//!   as its last item is signed.

mod abandon;
mod check;
mod items;
mod plan;
mod prepare;
mod refusal;
mod report;
mod run;
mod signed;
mod state;
mod status;

pub use crate::error::RefusedItem;
pub use abandon::{AbandonedBatch, ReleasedNonce};
pub use check::BatchCheck;
pub use items::{BatchItem, BatchOp};
pub use plan::{AccountPlan, AccountSpend, BatchPlan, Cap, Recipient, RecipientTotal, TokenTotal};
pub use prepare::PreparedBatch;
pub use refusal::{GasNeed, HeldItem, PlanRefusal, ShortSender, Tokens};
pub(crate) use refusal::{earlier_items, held_list};
pub use report::{ItemError, ItemResult, ItemStatus};
pub use run::BatchOptions;
pub use signed::SignedBatchCheck;
pub use state::ItemState;
pub use status::{BatchCounts, BatchStatus, ItemView, PreparedView};
