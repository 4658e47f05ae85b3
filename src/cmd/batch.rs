//! `bridgectl batch plan|run|resume|status`: many redeems, transfers and swaps from one
//! file (JSONL or CSV), with one plan and one confirmation for the whole batch, each key
//! unlocked once, the items pipelined across addresses, and the batch finished from the
//! journal after a crash (`batch resume ID`). The flows library does the work
//! (`Flows::batch` in `bridgectl-flow`); this module reads the file, shows the plan, asks,
//! unlocks and renders the results.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, U256};
use anyhow::{Context, Result};
use bridgectl_flow::batch_file::{self, BatchFormat, MAX_BATCH_FILE_BYTES};
use bridgectl_flow::{
    BatchItem, BatchOptions, BatchPlan, BatchStatus, Bridge, Flows, ItemResult, ItemState,
    ItemStatus, PrivateKeySigner, Recipient, Submitter, Which,
};
use clap::{Args, Subcommand, ValueEnum};
use futures_util::StreamExt;
use serde_json::{Value, json};

use crate::exit::{Code, WithCode, coded};
use crate::global::GlobalOpts;
use crate::opts::{FlowOpts, PlatformOpts, parse_amount};
use crate::output::untrusted;
use crate::passphrase::KeyPassphrases;
use crate::session::Session;

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
    Plan(PlanArgs),
    /// Plan (refusing as `batch plan` does, before any passphrase is read), confirm once,
    /// unlock each key once, then run every item: pipelined across addresses, in order
    /// within one. Exit 0 only if every item completed (9 if not).
    Run(RunArgs),
    /// Finish an interrupted batch: signed items are sent again with the same bytes,
    /// the rest run; nothing runs twice. Keys are asked for only if an item still signs.
    Resume(ResumeArgs),
    /// Where each item of a batch stands (from the journal alone); without ID, the
    /// recent batches.
    Status(StatusArgs),
}

// The input file and what limits the batch.
#[derive(Debug, Args, Clone)]
pub struct InputOpts {
    /// The items: JSONL (one object per line) or CSV with a header line. Fields: `op`
    /// (redeem | transfer | swap), `from` (address or key label), `amount` (token units,
    /// exact, as a string in JSONL), `to` and `token` (mt | st; transfer only), `id`
    /// (optional, unique; default: the line number).
    pub file: PathBuf,
    /// The file's format [default: from the extension: .csv is CSV, anything else JSONL].
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Refuse the batch if it moves more than AMOUNT of TOKEN in all (`ST=1000`,
    /// `MT=250.5`); repeat for both tokens.
    #[arg(long = "max-total", value_name = "TOKEN=AMOUNT")]
    pub max_total: Vec<String>,
}

/// The input formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// One JSON object per line.
    Jsonl,
    /// Comma-separated, with a header line; no quoting.
    Csv,
}

// Arguments of `bridgectl batch plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The input.
    #[command(flatten)]
    pub input: InputOpts,
    /// The platform.
    #[command(flatten)]
    pub platform: PlatformOpts,
}

// How the batch runs.
#[derive(Debug, Args, Clone)]
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
    pub id: String,
    /// Re-price each item signed in an earlier run whose transaction is still not mined
    /// (under-priced, dropped from the node's pool): signed again at its nonce at a
    /// higher gas price, as `bridgectl replace` does, instead of sending the same bytes;
    /// the keys of their senders are unlocked for it.
    #[arg(long)]
    pub replace_stuck: bool,
    /// The re-pricing (with --replace-stuck).
    #[command(flatten)]
    pub price: crate::cmd::replace::PriceOpts,
    /// How it runs.
    #[command(flatten)]
    pub run: RunOpts,
}

// Arguments of `bridgectl batch status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The batch id, or the start of it [default: list the recent batches].
    pub id: Option<String>,
    /// Journal database [default: $XDG_STATE_HOME/bridgectl/journal.sqlite3].
    #[arg(long, env = "BRIDGECTL_JOURNAL", value_name = "FILE")]
    pub journal: Option<PathBuf>,
}

/// Runs `bridgectl batch ...`.
pub fn run(global: &GlobalOpts, cmd: BatchCommand) -> Result<()> {
    match cmd {
        BatchCommand::Plan(args) => {
            let session = Session::for_sending(global, &args.platform)?;
            let flows = session.flows(Submitter::Platform, |_| {})?;
            let plan = Plan::make(&session, &flows, &args.input)?;
            plan.show(global.json)?;
            plan.check()
        }
        BatchCommand::Run(args) => {
            if global.json {
                crate::output::json_stream();
            }
            run_batch(global, &args.input, &args.run)
        }
        BatchCommand::Resume(args) => {
            if global.json {
                crate::output::json_stream();
            }
            resume_batch(global, &args)
        }
        BatchCommand::Status(args) => status(global, &args),
    }
}

// ------------------------------------------------------------------ reading the file

/// The items of the file (read by [`batch_file`]), with accounts resolved (labels of
/// keys) and amounts parsed exactly with each token's decimals.
fn read_items(session: &Session, bridge: &Bridge, input: &InputOpts) -> Result<Vec<BatchItem>> {
    let path = &input.file;
    let size = std::fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))
        .code(Code::NotFound)?
        .len();
    // A batch file is input like a sign request: what is wrong with it is refused (3).
    if size > MAX_BATCH_FILE_BYTES {
        return Err(coded(
            Code::Refused,
            format!(
                "{}: {size} bytes, more than a batch file may have ({MAX_BATCH_FILE_BYTES}); \
                 split it",
                path.display()
            ),
        ));
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read {}", path.display()))
        .code(Code::NotFound)?;
    let format = match input.format {
        Some(Format::Jsonl) => BatchFormat::Jsonl,
        Some(Format::Csv) => BatchFormat::Csv,
        None => BatchFormat::for_path(path),
    };
    let account = |text: &str| session.account(text).map_err(|e| format!("{e:#}"));
    let decimals = |which: Which| match which {
        Which::Mt => bridge.main.decimals,
        Which::St => bridge.side.decimals,
    };
    batch_file::read_items(&text, format, &account, &decimals).map_err(|e| {
        let place = match e.line {
            0 => path.display().to_string(),
            line => format!("{}:{line}", path.display()),
        };
        coded(Code::Refused, format!("{place}: {}", e.reason))
    })
}

// ------------------------------------------------------------------ the plan

/// The batch before it runs: the library's plan ([`Flows::plan`]) and what only this
/// machine knows (the file it came from, the keystore's labels), rendered for a person
/// or as JSON.
struct Plan {
    source: String,
    items: Vec<BatchItem>,
    plan: BatchPlan,
    /// Labels of the keystore's keys, to name senders and recipients by.
    labels: BTreeMap<Address, String>,
}

/// Parses `--max-total TOKEN=AMOUNT` (repeated) into the plan's maxima.
fn max_totals(bridge: &Bridge, specs: &[String]) -> Result<BTreeMap<Which, U256>> {
    let mut max_totals = BTreeMap::new();
    for spec in specs {
        let (token, amount) = spec.split_once('=').ok_or_else(|| {
            coded(
                Code::Usage,
                format!("--max-total {spec:?}: expected TOKEN=AMOUNT"),
            )
        })?;
        let which = [Which::Mt, Which::St]
            .into_iter()
            .find(|w| {
                token.eq_ignore_ascii_case(&bridge.side(*w).symbol)
                    || token.eq_ignore_ascii_case(match w {
                        Which::Mt => "mt",
                        Which::St => "st",
                    })
            })
            .ok_or_else(|| {
                coded(
                    Code::Usage,
                    format!(
                        "--max-total {spec:?}: the token is {} or {}",
                        bridge.main.symbol, bridge.side.symbol
                    ),
                )
            })?;
        let decimals = bridge.side(which).decimals;
        max_totals.insert(which, parse_amount(amount, decimals, "--max-total")?);
    }
    Ok(max_totals)
}

impl Plan {
    fn make(session: &Session, flows: &Flows, input: &InputOpts) -> Result<Plan> {
        let bridge = session.bridge()?.clone();
        let items = read_items(session, &bridge, input)?;
        let max_totals = max_totals(&bridge, &input.max_total)?;
        let plan = session.runtime.block_on(flows.plan(&items, &max_totals))?;
        let labels = session
            .keystore
            .list()
            .unwrap_or_default()
            .into_iter()
            .map(|k| (k.address, k.label))
            .collect();
        Ok(Plan {
            source: input.file.display().to_string(),
            items,
            plan,
            labels,
        })
    }

    /// The refusal the run would meet ([`BatchPlan::verdict`]), coded as refused.
    fn check(&self) -> Result<()> {
        self.plan.verdict().code(Code::Refused)
    }

    fn symbol(&self, which: Which) -> &str {
        &self.plan.bridge().side(which).symbol
    }

    fn tokens(&self, which: Which, amount: U256) -> String {
        self.plan.bridge().side(which).tokens(amount)
    }

    fn recipient_text(&self, to: &Recipient) -> String {
        match to {
            Recipient::Address(a) => match self.labels.get(a) {
                Some(l) => format!("{a} ({})", untrusted(l)),
                None => a.to_string(),
            },
            Recipient::Redeemed => "redeemed (MT to each sender)".into(),
            Recipient::SwapAddress => "swap address (issued by the platform)".into(),
        }
    }

    /// The plan as `--json` prints it: every amount a decimal string in base units
    /// (`amount`, `balance`), its token units beside it (`amountTokens`,
    /// `balanceTokens`).
    fn json(&self) -> Value {
        let p = &self.plan;
        let totals: Vec<Value> = p
            .totals
            .iter()
            .map(|t| {
                json!({"token": self.symbol(t.token), "items": t.items,
                       "amount": t.amount.to_string(),
                       "amountTokens": self.tokens(t.token, t.amount)})
            })
            .collect();
        let accounts: Vec<Value> = p
            .accounts
            .iter()
            .map(|a| {
                let tokens: Vec<Value> = a
                    .tokens
                    .iter()
                    .map(|t| {
                        json!({"token": self.symbol(t.token),
                               "amount": t.amount.to_string(),
                               "amountTokens": self.tokens(t.token, t.amount),
                               "balance": t.balance.to_string(),
                               "balanceTokens": self.tokens(t.token, t.balance),
                               "covered": t.covered()})
                    })
                    .collect();
                let gas: Vec<Value> = p
                    .check
                    .gas
                    .iter()
                    .filter(|g| g.from == a.address)
                    .map(|g| {
                        json!({"chainId": g.chain_id, "items": g.items, "gas": g.gas,
                               "gasPrice": g.gas_price.to_string(),
                               "needed": g.needed.to_string(),
                               "balance": g.balance.map(|b| b.to_string()),
                               "covered": g.balance.map(|_| !g.short())})
                    })
                    .collect();
                let label = self.labels.get(&a.address);
                json!({"address": a.address, "label": label, "items": a.items,
                       "hasKey": label.is_some(), "tokens": tokens, "gas": gas})
            })
            .collect();
        let recipients: Vec<Value> = p
            .recipients
            .iter()
            .map(|r| {
                let (kind, address) = match r.to {
                    Recipient::Address(a) => ("address", Some(a)),
                    Recipient::Redeemed => ("redeemed", None),
                    Recipient::SwapAddress => ("swapAddress", None),
                };
                json!({"token": self.symbol(r.token), "kind": kind, "address": address,
                       "label": address.and_then(|a| self.labels.get(&a)),
                       "items": r.items, "amount": r.amount.to_string(),
                       "amountTokens": self.tokens(r.token, r.amount), "allowed": r.allowed})
            })
            .collect();
        json!({
            "source": self.source,
            "items": p.items,
            "operations": p.operations,
            "totals": totals,
            "recipients": recipients,
            "accounts": accounts,
            "caps": p.caps.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "refusedItems": p.check.refused.iter().map(|r| json!({
                "index": r.index, "id": r.id, "from": r.from, "reason": r.reason,
            })).collect::<Vec<_>>(),
            "refused": self.check().err().map(|e| format!("{e:#}")),
        })
    }

    fn show(&self, as_json: bool) -> Result<()> {
        if as_json {
            return crate::output::json(&self.json());
        }
        let p = &self.plan;
        let amount = |which: Which, v: U256| self.tokens(which, v);
        let ops: Vec<String> = p
            .operations
            .iter()
            .map(|(op, n)| format!("{n} {op}"))
            .collect();
        let mut out = vec![format!(
            "batch {}: {} items ({})",
            self.source,
            p.items,
            ops.join(", ")
        )];
        for t in &p.totals {
            out.push(format!(
                "  {} out: {} {} in {} items{}",
                self.symbol(t.token),
                amount(t.token, t.amount),
                self.symbol(t.token),
                t.items,
                p.max_totals
                    .get(&t.token)
                    .map(|m| format!(" (--max-total {})", amount(t.token, *m)))
                    .unwrap_or_default()
            ));
        }
        out.push(format!(
            "accounts ({}), each key unlocked once:",
            p.accounts.len()
        ));
        for a in &p.accounts {
            let tokens: Vec<String> = a
                .tokens
                .iter()
                .map(|t| {
                    format!(
                        "{} {} of {} held{}",
                        amount(t.token, t.amount),
                        self.symbol(t.token),
                        amount(t.token, t.balance),
                        if t.covered() { "" } else { "  SHORT" }
                    )
                })
                .collect();
            out.push(format!(
                "  {} {:<12} {:>5} items  {}",
                a.address,
                self.labels
                    .get(&a.address)
                    .map_or_else(|| "(no key)".into(), |l| untrusted(l)),
                a.items,
                tokens.join(", ")
            ));
            for g in p.check.gas.iter().filter(|g| g.from == a.address) {
                out.push(format!(
                    "      gas on chain {}: up to {} wei ({} gas at {} wei) of {}{}",
                    g.chain_id,
                    g.needed,
                    g.gas,
                    g.gas_price,
                    g.balance.map_or_else(
                        || "an unknown balance (no node)".into(),
                        |b| format!("{b} wei held")
                    ),
                    if g.short() { "  SHORT" } else { "" }
                ));
            }
        }
        if !p.check.refused.is_empty() {
            out.push(format!(
                "refused by the checks every item meets when it runs ({}):",
                p.check.refused.len()
            ));
            for r in &p.check.refused {
                out.push(format!(
                    "  {} from {}: {}",
                    untrusted(&r.id),
                    r.from,
                    untrusted(&r.reason)
                ));
            }
        }
        let allowlist = p.recipients.iter().any(|r| r.allowed.is_some());
        out.push(format!(
            "recipients ({}){}:",
            p.recipients.len(),
            if allowlist {
                ", against allowed-destinations"
            } else {
                ""
            }
        ));
        for r in &p.recipients {
            out.push(format!(
                "  {:<62} {:>5} items  {} {}{}",
                self.recipient_text(&r.to),
                r.items,
                amount(r.token, r.amount),
                self.symbol(r.token),
                match r.allowed {
                    Some(true) => "  allowed",
                    Some(false) => "  NOT ALLOWED",
                    None => "",
                }
            ));
        }
        let caps: Vec<String> = p.caps.iter().map(ToString::to_string).collect();
        out.push(format!("caps on every item: {}", caps.join("; ")));
        // The plan is what the person confirms: on stderr, like a transaction's summary.
        for line in out {
            crate::output::note(line);
        }
        Ok(())
    }

    /// The senders of the plan that have no key here.
    fn keyless(&self) -> Vec<Address> {
        self.plan
            .accounts
            .iter()
            .map(|a| a.address)
            .filter(|a| !self.labels.contains_key(a))
            .collect()
    }
}

// ------------------------------------------------------------------ running

/// Unlocks each of `accounts` once, each from its `--passphrase-file-for` file or else
/// from the command's passphrase source.
fn unlock(
    session: &Session,
    passphrases: &mut KeyPassphrases,
    accounts: &[Address],
) -> Result<Vec<PrivateKeySigner>> {
    let mut keys = Vec::with_capacity(accounts.len());
    let started = Instant::now();
    for (i, address) in accounts.iter().enumerate() {
        crate::output::note(format_args!(
            "» unlocking {address} ({} of {})",
            i + 1,
            accounts.len()
        ));
        keys.push(passphrases.unlock(&session.keystore, *address)?);
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

fn run_batch(global: &GlobalOpts, input: &InputOpts, run: &RunOpts) -> Result<()> {
    let session = Session::new(global, &run.flow)?;
    let flows = session.flows(Submitter::Platform, |_| {})?;
    let plan = Plan::make(&session, &flows, input)?;
    plan.show(false)?;
    plan.check()?;
    let keyless = plan.keyless();
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
    let accounts: Vec<Address> = plan.plan.accounts.iter().map(|a| a.address).collect();
    let mut passphrases = passphrases(&session, run)?;
    passphrases.ensure_available(&accounts)?;
    confirm(
        &run.flow,
        &format!("run this batch of {} items?", plan.items.len()),
    )?;
    let keys = unlock(&session, &mut passphrases, &accounts)?;
    let batch = flows.create_batch(&plan.source, &plan.items)?;
    crate::output::note(format_args!(
        "» batch {} recorded: `bridgectl batch resume {}` finishes it if this run is interrupted",
        batch.batch_id, batch.batch_id
    ));
    drive(global, &session, &flows, &batch.batch_id, keys, run, None)
}

fn resume_batch(global: &GlobalOpts, args: &ResumeArgs) -> Result<()> {
    let (id, run) = (&args.id, &args.run);
    let price_given = args.price.gas_price.is_some() || args.price.bump.is_some();
    if price_given && !args.replace_stuck {
        return Err(crate::exit::coded(
            crate::exit::Code::Usage,
            "--gas-price and --bump re-price stuck items: give them with --replace-stuck",
        ));
    }
    let replace_stuck = args
        .replace_stuck
        .then(|| crate::cmd::replace::repricing(&args.price))
        .transpose()?;
    let session = Session::new(global, &run.flow)?;
    let flows = session.flows(Submitter::Platform, |_| {})?;
    let status = flows.batch_status(id)?;
    // A batch running in another process is refused before any key is unlocked (the
    // run takes the lock again for itself).
    drop(flows.journal().lock_batch(&status.batch.batch_id)?);
    let needed = status.signers_for(replace_stuck.is_some());
    let mut to_sign = status.count(ItemState::NotStarted) + status.count(ItemState::Unsigned);
    let to_send = status.count(ItemState::Signed) + status.count(ItemState::Submitted);
    if replace_stuck.is_some() {
        to_sign += to_send;
    }
    crate::output::note(format_args!(
        "batch {}: {} items, {} completed, {} failed, {to_send} signed ({}), {to_sign} to sign",
        status.batch.batch_id,
        status.items.len(),
        status.count(ItemState::Completed),
        status.count(ItemState::Failed),
        if replace_stuck.is_some() {
            "re-priced at their nonces unless mined"
        } else {
            "sent again with the same bytes"
        },
    ));
    // Signed items need no key: a resume that only resends reads no passphrase.
    let keys = if needed.is_empty() {
        Vec::new()
    } else {
        for a in &needed {
            session.keystore.find(&a.to_string())?;
        }
        let mut passphrases = passphrases(&session, run)?;
        passphrases.ensure_available(&needed)?;
        confirm(
            &run.flow,
            &format!(
                "sign the {to_sign} items still to sign ({} keys)?",
                needed.len()
            ),
        )?;
        unlock(&session, &mut passphrases, &needed)?
    };
    drive(
        global,
        &session,
        &flows,
        &status.batch.batch_id,
        keys,
        run,
        replace_stuck,
    )
}

/// Counts of the results so far.
#[derive(Default)]
struct Tally {
    completed: usize,
    failed: usize,
    unsigned: usize,
    pending: usize,
    /// Items worked on in this run (not only reported as an earlier run left them).
    ran: usize,
    latencies: Vec<Duration>,
}

fn drive(
    global: &GlobalOpts,
    session: &Session,
    flows: &Flows,
    batch_id: &str,
    keys: Vec<PrivateKeySigner>,
    run: &RunOpts,
    replace_stuck: Option<bridgectl_flow::Repricing>,
) -> Result<()> {
    let total = flows.batch_status(batch_id)?.items.len();
    let options = BatchOptions {
        jobs: run.jobs.max(1),
        replace_stuck,
        ..BatchOptions::default()
    };
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
    // Without a progress bar (a log, a CI job), a batch whose last items wait on a slow
    // relayer says every few seconds that it is still going, as a single flow does.
    let say_waiting = !global.json && bar.is_none();
    let deadline = run.flow.platform.timeout;
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
            tally.ran += usize::from(!r.earlier);
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
                || " (none ran: every item had finished before)".to_owned(),
                |r| format!(" ({r:.1} items/s over the {} that ran)", tally.ran)
            )
        ))?;
    }
    if tally.completed == total {
        return Ok(());
    }
    Err(coded(
        Code::Incomplete,
        format!(
            "batch {batch_id}: {} of {total} items did not complete; `bridgectl batch status \
             {batch_id}` shows which, `bridgectl batch resume {batch_id}` runs what can still run",
            total - tally.completed
        ),
    ))
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

fn status(global: &GlobalOpts, args: &StatusArgs) -> Result<()> {
    let journal = crate::session::open_journal(args.journal.as_deref())?;
    let Some(id) = &args.id else {
        let batches = journal
            .list_batches(20)?
            .iter()
            .map(|b| BatchStatus::read(&journal, &b.batch_id))
            .collect::<Result<Vec<_>, _>>()?;
        if global.json {
            let list: Vec<Value> = batches.iter().map(counted).collect();
            return crate::output::json(&list);
        }
        if batches.is_empty() {
            crate::output::note("no batches in the journal");
        }
        for s in batches {
            let (b, n) = (&s.batch, s.counts());
            crate::output::line(format_args!(
                "{}  {}  {:>5} items  {} completed, {} failed, {} open  {}",
                b.batch_id,
                b.created_at,
                b.items,
                n.completed,
                n.failed,
                n.open,
                untrusted(&b.source)
            ))?;
        }
        return Ok(());
    };
    let s = BatchStatus::read(&journal, id)?;
    if global.json {
        let mut one = counted(&s);
        one["items"] = serde_json::to_value(&s.items)?;
        return crate::output::json(&one);
    }
    crate::output::line(format_args!(
        "batch {} ({}, {}): {} items",
        s.batch.batch_id,
        untrusted(&s.batch.source),
        s.batch.created_at,
        s.items.len()
    ))?;
    for i in &s.items {
        let state = serde_json::to_value(i.state)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        crate::output::line(format_args!(
            "{:>5} {:<16} {:<9} {:<12} {}{}",
            i.index,
            untrusted(&i.id),
            i.op.name(),
            state,
            i.tx_hash.as_deref().unwrap_or(&i.tx_id),
            i.error
                .as_deref()
                .map(|e| format!(": {}", untrusted(e)))
                .unwrap_or_default()
        ))?;
    }
    let n = s.counts();
    crate::output::line(format_args!(
        "{} completed, {} failed, {} open{}",
        n.completed,
        n.failed,
        n.open,
        if n.open > 0 {
            format!(
                ": `bridgectl batch resume {}` finishes them",
                s.batch.batch_id
            )
        } else {
            String::new()
        }
    ))
}

/// A batch as `batch status --json` lists it: its record (`batchId, source, createdAt,
/// itemCount`) and its counts (`completed, failed, open`).
fn counted(s: &BatchStatus) -> Value {
    let mut v = json!(s.batch);
    let n = s.counts();
    v["completed"] = json!(n.completed);
    v["failed"] = json!(n.failed);
    v["open"] = json!(n.open);
    v
}
