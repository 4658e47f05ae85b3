//! `bridgectl batch plan|run|resume|status|prepare|submit|abandon`: many redeems, transfers and swaps from one
//! file (JSONL or CSV), with one plan and one confirmation for the whole batch, each key
//! unlocked once, the items pipelined across addresses, and the batch finished from the
//! journal after a crash (`batch resume ID`). The flows library does the work
//! (`Flows::batch` in `bridgectl-flow`); this module reads the file, shows the plan, asks,
//! unlocks and renders the results.
//!
//! One module per job: `plan` reads the file and renders the library's plan (`batch
//! plan`, and the plan `batch run` confirms), `run` runs a batch or finishes one and
//! reports each item, `status` reads the journal; across an air gap, `prepare` writes
//! the batch request the offline signer signs and `submit` checks its answer and runs it;
//! `abandon` gives up a prepared batch whose answer will not come. Each item id is one payout: `plan` finds the items a batch
//! recorded before holds, and `run` resumes that batch or refuses them.

mod abandon;
mod plan;
mod prepare;
mod run;
mod status;
mod submit;

use anyhow::Result;
use clap::Subcommand;

use crate::global::GlobalOpts;

/// `bridgectl batch ...`
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum BatchCommand {
    /// Show what a batch file would do: counts and totals per token and per address
    /// beside each address's token and gas balances, the keys to unlock and the caps.
    /// Refuses (exit 3) what the run would refuse: an address that cannot cover its
    /// items or their gas, an item over a spending limit (counted from the signing log
    /// plus the batch's earlier items) or outside allowed-destinations, a total above a
    /// --max-total. Signs nothing, reads no passphrase.
    Plan(plan::PlanArgs),
    /// Plan (refusing as `batch plan` does, before any passphrase is read), confirm once,
    /// unlock each key once, then run every item: pipelined across addresses, in order
    /// within one. Exit 0 only if every item completed (9 if not).
    Run(run::RunArgs),
    /// Finish an interrupted batch: signed items are sent again with the same bytes,
    /// the rest run; nothing runs twice. Keys are asked for only if an item still signs.
    Resume(run::ResumeArgs),
    /// Where each item of a batch stands (from the journal alone); without ID, the
    /// recent batches.
    Status(status::StatusArgs),
    /// For an air gap: plan (refusing as `batch plan` does), then take every item up to
    /// its verified transaction (the action executed or the transfer built, checked, its
    /// nonce reserved: each sender's items on consecutive nonces) and write them to ONE
    /// batch request file for `bridgectl sign` on the offline machine. Signs nothing,
    /// reads no passphrase. Exit 9 if items were left out (refused, an action failed).
    Prepare(prepare::PrepareArgs),
    /// For an air gap: check the signed batch `bridgectl sign` wrote against the batch
    /// prepared here (every item exactly its prepared transaction, signed by its sender,
    /// verified again), journal it, then submit it pipelined per sender and follow each
    /// item to its end. Again (or `batch resume ID`) finishes an interrupted run. Exit 0
    /// only if every item completed (9 if not).
    Submit(submit::SubmitArgs),
    /// For an air gap: give up a prepared batch whose signed batch will not come back.
    /// Its unsigned items hold their nonces from `batch prepare` on, however long the air
    /// gap takes; this gives them back (other flows of the senders may take them), the
    /// journal records the batch abandoned, and a signed batch for it is refused from
    /// then on. Signed items keep their nonces. Asks first, unless --yes.
    Abandon(abandon::AbandonArgs),
}

/// Runs `bridgectl batch ...`.
pub fn run(global: &GlobalOpts, cmd: BatchCommand) -> Result<()> {
    match cmd {
        BatchCommand::Plan(args) => plan::run(global, &args),
        BatchCommand::Run(args) => run::run(global, &args),
        BatchCommand::Resume(args) => run::resume(global, &args),
        BatchCommand::Status(args) => status::run(global, &args),
        BatchCommand::Prepare(args) => prepare::run(global, &args),
        BatchCommand::Submit(args) => submit::run(global, &args),
        BatchCommand::Abandon(args) => abandon::run(global, &args),
    }
}
