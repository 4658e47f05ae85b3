//! `bridgectl batch run` and `bridgectl batch resume`: the plan confirmed once (a run),
//! each key unlocked once, then the library's batch driven to its end with a line (or a
//! progress bar) per item and a summary; exit 9 unless every item completed.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use alloy_primitives::Address;
use anyhow::Result;
use bridgectl_flow::rpc::RpcSigner;
use bridgectl_flow::{BatchOptions, Flows, HeldItem, ItemResult, ItemState, ItemStatus, Submitter};
use clap::Args;
use futures_util::StreamExt;
use serde_json::json;

use super::plan::{Held, InputOpts, Plan, held_refusal};
use crate::approver::CliSigner;
use crate::exit::{Code, coded};
use crate::global::GlobalOpts;
use crate::opts::{FlowOpts, PriceOpts};
use crate::output::untrusted;
use crate::passphrase::KeyPassphrases;
use crate::session::Session;

// How the batch runs. Its items are waited for one by one: `--timeout` says so.
#[derive(Debug, Args, Clone)]
#[command(mut_arg("timeout", |a| a.help(
    "Give up waiting for an item's end after this many seconds: the item is reported \
     pending, and `bridgectl batch resume ID` waits again"
)))]
pub struct RunOpts {
    /// How many addresses sign and submit at once (items of one address always run in
    /// order).
    #[arg(long, default_value_t = BatchOptions::default().jobs, value_name = "N")]
    pub jobs: usize,
    /// Read the passphrase of key KEY (its label or address) from the first line of
    /// FILE (keep it 0600); repeat for keys with passphrases of their own. Each file is
    /// read once. Keys not named use --passphrase-file, BRIDGECTL_PASSPHRASE_FILE,
    /// BRIDGECTL_PASSPHRASE or a prompt per key.
    #[arg(
        long = "passphrase-file-for",
        value_name = "KEY=FILE",
        help_heading = "Passphrase"
    )]
    pub passphrase_file_for: Vec<String>,
    /// Shared options.
    #[command(flatten)]
    pub flow: FlowOpts,
}

// Arguments of `bridgectl batch run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The input.
    #[command(flatten)]
    pub input: InputOpts,
    /// How it runs.
    #[command(flatten)]
    pub run: RunOpts,
}

// Arguments of `bridgectl batch resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The batch id, or the start of it.
    #[arg(add = crate::completers::batch_ids())]
    pub id: String,
    /// Re-price each item signed in an earlier run whose transaction is still not mined
    /// (under-priced, dropped from the node's pool): signed again at its nonce at a
    /// higher gas price, as `bridgectl replace` does, instead of sending the same bytes;
    /// the keys of their senders are unlocked for it.
    #[arg(long)]
    pub replace_stuck: bool,
    /// The re-pricing (with --replace-stuck).
    #[command(flatten)]
    pub price: PriceOpts,
    /// How it runs.
    #[command(flatten)]
    pub run: RunOpts,
}

/// The accounts of `accounts` that `--signer rpc:URL` signs for (those its endpoint
/// lists), added to the keystore's external signers and the signing log reopened so
/// that their entries are its own. Empty without `--signer`.
fn endpoint_accounts(
    session: &mut Session,
    run: &RunOpts,
    accounts: &[Address],
) -> Result<Vec<Address>> {
    let Some(spec) = &run.flow.signer else {
        return Ok(Vec::new());
    };
    let url = crate::approver::rpc_signer_url(spec)?;
    let listed = session.runtime.block_on(RpcSigner::accounts(url))?;
    let ours: Vec<Address> = accounts
        .iter()
        .copied()
        .filter(|a| listed.contains(a))
        .collect();
    for a in &ours {
        session.keystore.add_external_signer(*a)?;
    }
    session.reopen_signing_log()?;
    Ok(ours)
}

/// The signer of each of `accounts`: the `--signer` endpoint for those in `endpoint`,
/// else its key, unlocked once, from its `--passphrase-file-for` file or else from the
/// command's passphrase source.
fn unlock(
    session: &Session,
    passphrases: &mut KeyPassphrases,
    accounts: &[Address],
    endpoint: &[Address],
    run: &RunOpts,
) -> Result<Vec<CliSigner>> {
    let mut keys = Vec::with_capacity(accounts.len());
    let started = Instant::now();
    for (i, address) in accounts.iter().enumerate() {
        if endpoint.contains(address) {
            let spec = run.flow.signer.as_deref().unwrap_or_default();
            let url = crate::approver::rpc_signer_url(spec)?;
            keys.push(CliSigner::Rpc(RpcSigner::new(url, *address)?));
            continue;
        }
        crate::output::note(format_args!(
            "» unlocking {address} ({} of {})",
            i + 1,
            accounts.len()
        ));
        keys.push(CliSigner::Local(
            passphrases.unlock(&session.keystore, *address)?,
        ));
    }
    crate::output::note(format_args!(
        "» {} keys unlocked in {:.1} s",
        keys.len(),
        started.elapsed().as_secs_f64()
    ));
    Ok(keys)
}

/// The passphrase sources of a run: `--passphrase-file-for` per key, the command's own
/// for the rest.
fn passphrases(session: &Session, run: &RunOpts) -> Result<KeyPassphrases> {
    KeyPassphrases::new(
        &run.flow.passphrase,
        &run.passphrase_file_for,
        &session.keystore,
    )
}

/// Asks once for the whole batch, unless --yes; no terminal and no --yes is a refusal.
fn confirm(opts: &FlowOpts, question: &str) -> Result<()> {
    crate::review::confirm(opts.yes, question)
}

/// Runs `bridgectl batch run`.
///
/// Each item id is run once ([`Flows::create_batch`]): a file whose items a batch recorded
/// before holds, every one as it is, resumes that batch instead (or reports it, when it
/// ended); items held in part, or by several batches, are refused before anything is
/// planned or asked. Two runs of one file at once record it once: the second finds the
/// first's batch when it records its own, and follows it (or is told it is running).
pub fn run(global: &GlobalOpts, args: &RunArgs) -> Result<()> {
    if global.json {
        crate::output::json_stream();
    }
    let (input, run) = (&args.input, &args.run);
    let mut session = Session::new(global, &run.flow)?;
    let flows = session.flows(Submitter::Platform, |_| {})?;
    let items = super::plan::read_items(&session, input)?;
    if let Held::Batch(batch_id) = Held::of(&flows, input, &items)? {
        note_held(input, &batch_id, "resuming it instead");
        drop(flows);
        return resume_batch(global, session, &batch_id, None, run);
    }
    let plan = Plan::make(&session, &flows, input, items)?;
    plan.show(false)?;
    plan.check()?;
    let accounts: Vec<Address> = plan.plan.accounts.iter().map(|a| a.address).collect();
    drop(flows);
    let endpoint = endpoint_accounts(&mut session, run, &accounts)?;
    let flows = session.flows(Submitter::Platform, |_| {})?;
    let keyless: Vec<Address> = plan
        .keyless()
        .into_iter()
        .filter(|a| !endpoint.contains(a))
        .collect();
    if !keyless.is_empty() {
        return Err(coded(
            Code::NotFound,
            format!(
                "no key in the keystore for {}: every sender of a batch signs here",
                keyless
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    let mut passphrases = passphrases(&session, run)?;
    passphrases.ensure_available(&local(&accounts, &endpoint))?;
    confirm(
        &run.flow,
        &format!("run this batch of {} items?", plan.items.len()),
    )?;
    let keys = unlock(&session, &mut passphrases, &accounts, &endpoint, run)?;
    let batch_id = match flows.create_batch(&plan.source, &plan.items) {
        Ok(batch) => {
            crate::output::note(format_args!(
                "» batch {0} recorded: `bridgectl batch resume {0}` finishes it if this run is \
                 interrupted",
                batch.batch_id
            ));
            batch.batch_id
        }
        // Recorded meanwhile by another run of the same file: that batch is followed
        // here (refused as busy while the other run holds it).
        Err(bridgectl_flow::Error::ItemsHeld(held)) => {
            match HeldItem::one_batch(&held, plan.items.len()) {
                Some(batch_id) => {
                    let batch_id = batch_id.to_owned();
                    note_held(
                        input,
                        &batch_id,
                        "recorded by another run just now; following it",
                    );
                    batch_id
                }
                None => {
                    return Err(held_refusal(input, bridgectl_flow::Error::ItemsHeld(held)));
                }
            }
        }
        Err(e) => return Err(e.into()),
    };
    drive(
        global,
        &session,
        &flows,
        &batch_id,
        keys,
        run.options(None, false),
        run.flow.wait.timeout,
    )
}

/// Says that every item of `input`'s file is batch `batch_id`'s, and what happens now.
fn note_held(input: &InputOpts, batch_id: &str, now: &str) {
    crate::output::note(format_args!(
        "» every item of {} is batch {batch_id}'s (an item id is one payout, run once): \
         {now}; `--id-suffix SUFFIX` pays them again as new payouts",
        input.file.display()
    ));
}

/// The accounts of `accounts` that sign with a key of the keystore.
fn local(accounts: &[Address], endpoint: &[Address]) -> Vec<Address> {
    accounts
        .iter()
        .copied()
        .filter(|a| !endpoint.contains(a))
        .collect()
}

impl RunOpts {
    /// The library's options for a run with these flags.
    pub(super) fn options(
        &self,
        replace_stuck: Option<bridgectl_flow::Repricing>,
        air_gapped: bool,
    ) -> BatchOptions {
        BatchOptions {
            jobs: self.jobs.max(1),
            replace_stuck,
            air_gapped,
            ..BatchOptions::default()
        }
    }
}

/// Runs `bridgectl batch resume`.
pub fn resume(global: &GlobalOpts, args: &ResumeArgs) -> Result<()> {
    if global.json {
        crate::output::json_stream();
    }
    let price_given = args.price.gas_price.is_some() || args.price.bump.is_some();
    if price_given && !args.replace_stuck {
        return Err(coded(
            Code::Usage,
            "--gas-price and --bump re-price stuck items: give them with --replace-stuck",
        ));
    }
    let replace_stuck = args
        .replace_stuck
        .then(|| args.price.repricing())
        .transpose()?;
    let session = Session::new(global, &args.run.flow)?;
    resume_batch(global, session, &args.id, replace_stuck, &args.run)
}

/// Finishes batch `id` (or a prefix of it) in `session`: what `batch resume` does, and
/// `batch run` of a file whose items the batch holds.
fn resume_batch(
    global: &GlobalOpts,
    mut session: Session,
    id: &str,
    replace_stuck: Option<bridgectl_flow::Repricing>,
    run: &RunOpts,
) -> Result<()> {
    let flows = session.flows(Submitter::Platform, |_| {})?;
    let status = flows.batch_status(id)?;
    // A batch running in another process is refused before any key is unlocked (the
    // run takes the lock again for itself).
    drop(flows.journal().lock_batch(&status.batch.batch_id)?);
    // A batch prepared for the air gap signs nothing here: its signed items are sent
    // and followed, the rest are signed offline.
    let air_gapped = flows.journal().prepared(&status.batch.batch_id)?.is_some();
    let needed = if air_gapped {
        Vec::new()
    } else {
        status.signers_for(replace_stuck.is_some())
    };
    drop(flows);
    let endpoint = endpoint_accounts(&mut session, run, &needed)?;
    let flows = session.flows(Submitter::Platform, |_| {})?;
    let to_sign = if air_gapped {
        0
    } else {
        status.count(ItemState::NotStarted) + status.count(ItemState::Unsigned)
    };
    let to_send = status.count(ItemState::Signed) + status.count(ItemState::Submitted);
    crate::output::note(format_args!(
        "batch {}: {} items, {} completed, {} failed, {to_send} signed and not finished ({}), \
         {to_sign} not signed yet",
        status.batch.batch_id,
        status.items.len(),
        status.count(ItemState::Completed),
        status.count(ItemState::Failed),
        if replace_stuck.is_some() {
            "each signed again at its nonce at a higher gas price, unless mined meanwhile"
        } else {
            "sent again with the same bytes"
        },
    ));
    let question = match (replace_stuck.is_some(), to_sign) {
        (true, 0) => format!("re-price the {to_send} signed items"),
        (true, n) => format!("re-price the {to_send} signed items and sign the {n} not signed"),
        (false, n) => format!("sign the {n} items still to sign"),
    };
    // Signed items need no key: a resume that only resends reads no passphrase.
    let keys = if needed.is_empty() {
        Vec::new()
    } else {
        for a in local(&needed, &endpoint) {
            session.keystore.find(&a.to_string())?;
        }
        let mut passphrases = passphrases(&session, run)?;
        passphrases.ensure_available(&local(&needed, &endpoint))?;
        confirm(&run.flow, &format!("{question} ({} keys)?", needed.len()))?;
        unlock(&session, &mut passphrases, &needed, &endpoint, run)?
    };
    drive(
        global,
        &session,
        &flows,
        &status.batch.batch_id,
        keys,
        run.options(replace_stuck, air_gapped),
        run.flow.wait.timeout,
    )
}

/// Counts of the results so far.
#[derive(Default)]
struct Tally {
    completed: usize,
    failed: usize,
    unsigned: usize,
    pending: usize,
    /// Items worked on in this run: signed, sent or re-priced by this process (not only
    /// reported as an earlier run left them, nor only awaited after an earlier run sent
    /// them).
    ran: usize,
    /// Items sent whose end did not come in time (their transactions may be stuck).
    waited_out: usize,
    latencies: Vec<Duration>,
}

/// Runs batch `batch_id` with `keys` to its end, reporting each item as it finishes
/// (each waits up to `deadline` seconds) and a summary; exit 9 unless every item
/// completed.
pub(super) fn drive(
    global: &GlobalOpts,
    session: &Session,
    flows: &Flows,
    batch_id: &str,
    keys: Vec<CliSigner>,
    options: BatchOptions,
    deadline: u64,
) -> Result<()> {
    let before = flows.batch_status(batch_id)?;
    let total = before.items.len();
    // Items an earlier run sent: this run resends their bytes and awaits them, which is
    // observing, not running them (unless it re-prices them).
    let sent_before: Vec<usize> = before
        .items
        .iter()
        .filter(|i| i.state == ItemState::Submitted && options.replace_stuck.is_none())
        .map(|i| i.index)
        .collect();
    let bar = (!global.json && std::io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new(total as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:30} {pos}/{len} {msg} {per_sec} {elapsed} ETA {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        // The elapsed time moves while nothing finishes.
        bar.enable_steady_tick(Duration::from_secs(1));
        bar
    });
    let started = Instant::now();
    let mut tally = Tally::default();
    // The shared journal lost, or the batch taken over by another host: what the run
    // exits with instead of "incomplete" (the items left are for a later resume, or
    // the other host's).
    let mut stopped_by: Option<anyhow::Error> = None;
    // Without a progress bar (a log, a CI job), a batch whose last items wait on a slow
    // relayer says every few seconds that it is still going, as a single flow does.
    let say_waiting = !global.json && bar.is_none();
    session.runtime.block_on(async {
        let mut results = flows.batch(batch_id, keys, options)?;
        let mut last = Instant::now();
        loop {
            let r = match tokio::time::timeout(bridgectl_flow::WAIT_REPORT, results.next()).await {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(_) => {
                    if say_waiting {
                        let done = tally.completed + tally.failed + tally.unsigned + tally.pending;
                        crate::output::note(format_args!(
                            "» waiting for {} of {total} items: {} s since the last result \
                             (each waits up to {deadline} s)",
                            total.saturating_sub(done),
                            last.elapsed().as_secs()
                        ));
                    }
                    continue;
                }
            };
            last = Instant::now();
            tally.latencies.push(started.elapsed());
            match r.status {
                ItemStatus::Completed => tally.completed += 1,
                ItemStatus::Failed => tally.failed += 1,
                ItemStatus::Unsigned => tally.unsigned += 1,
                ItemStatus::Pending => tally.pending += 1,
            }
            // An item of an air-gapped batch with no signature here is only reported.
            let not_signed = matches!(
                r.error,
                Some(bridgectl_flow::ItemError::NotSignedOffline { .. })
            );
            tally.ran += usize::from(!r.earlier && !not_signed && !sent_before.contains(&r.index));
            tally.waited_out += usize::from(
                r.status == ItemStatus::Pending
                    && r.tx_hash.is_some()
                    && matches!(&r.error, Some(bridgectl_flow::ItemError::Flow(e))
                        if matches!(**e, bridgectl_flow::Error::Timeout { .. })),
            );
            if stopped_by.is_none()
                && let Some(bridgectl_flow::ItemError::Flow(e)) = &r.error
            {
                stopped_by = run_stopped_by(e);
            }
            report(global, bar.as_ref(), &r)?;
            if let Some(bar) = &bar {
                bar.set_message(format!(
                    "done {} failed {} unsigned {} pending {}",
                    tally.completed, tally.failed, tally.unsigned, tally.pending
                ));
                bar.inc(1);
            }
        }
        Ok::<_, anyhow::Error>(())
    })?;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let seconds = started.elapsed().as_secs_f64();
    // A rate of the items this run worked on: a resume of a finished batch ran none,
    // and has no rate (not thousands of items a second).
    let rate = (tally.ran > 0).then(|| tally.ran as f64 / seconds.max(1e-9));
    if global.json {
        let summary = json!({"summary": {
            "batchId": batch_id,
            "items": total,
            "ran": tally.ran,
            "completed": tally.completed,
            "failed": tally.failed,
            "unsigned": tally.unsigned,
            "pending": tally.pending,
            "seconds": (seconds * 1000.0).round() / 1000.0,
            "itemsPerSecond": rate.map(|r| (r * 10.0).round() / 10.0),
        }});
        crate::output::json_line(&summary)?;
    } else {
        crate::output::line(format_args!(
            "batch {batch_id}: {} completed, {} failed, {} unsigned, {} pending of {total} in \
             {seconds:.1} s{}",
            tally.completed,
            tally.failed,
            tally.unsigned,
            tally.pending,
            rate.map_or_else(
                || " (none ran in this process: each had ended, or been sent, before)".to_owned(),
                |r| format!(" ({r:.1} items/s over the {} that ran)", tally.ran)
            )
        ))?;
    }
    if tally.completed == total {
        return Ok(());
    }
    if let Some(e) = stopped_by {
        return Err(e);
    }
    Err(crate::exit::BatchIncomplete {
        batch_id: batch_id.to_owned(),
        not_completed: total - tally.completed,
        total,
        waited_out: tally.waited_out,
    }
    .into())
}

/// One item's result: a JSON line, a line above the bar (failures only), or a plain
/// line when there is no terminal.
fn report(global: &GlobalOpts, bar: Option<&indicatif::ProgressBar>, r: &ItemResult) -> Result<()> {
    if global.json {
        return crate::output::json_line(&json!({
            "index": r.index,
            "id": r.id,
            "txId": r.tx_id,
            "txHash": r.tx_hash,
            "status": r.status,
            "error": r.error,
            "resent": r.resent,
            "earlier": r.earlier,
            "latencyMs": r.latency_ms,
        }));
    }
    let line = format!(
        "{:<9} {} {}{}",
        match r.status {
            ItemStatus::Completed => "completed",
            ItemStatus::Failed => "FAILED",
            ItemStatus::Unsigned => "UNSIGNED",
            ItemStatus::Pending => "pending",
        },
        untrusted(&r.id),
        r.tx_hash.map_or_else(|| r.tx_id.clone(), |h| h.to_string()),
        r.error
            .as_ref()
            .map(|e| format!(": {}", untrusted(&e.to_string())))
            .unwrap_or_default()
    );
    match bar {
        Some(bar) if r.status != ItemStatus::Completed => {
            bar.println(bridgectl_tx::text::printable_lines(&line));
            Ok(())
        }
        Some(_) => Ok(()),
        None => crate::output::line(line),
    }
}

/// The error a batch run stops on instead of ending "incomplete", when item error `e`
/// is one: the shared journal unreachable (exit 12: nothing that it did not commit was
/// sent; `batch resume` once it is back), or the batch taken over by another host
/// after this run's claim ran out (exit 11: the other host carries it on).
fn run_stopped_by(e: &bridgectl_flow::Error) -> Option<anyhow::Error> {
    use crate::exit::{Code, coded};
    match e {
        bridgectl_flow::Error::Journal { source, .. } if source.is_unavailable() => {
            Some(coded(Code::Store, format_args!("{e}: {source}")))
        }
        bridgectl_flow::Error::ClaimTakenOver { .. } => Some(coded(Code::Busy, e)),
        _ => None,
    }
}
