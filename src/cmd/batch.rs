//! `bridgectl batch plan|run|resume|status`: many redeems, transfers and swaps from one
//! file (JSONL or CSV), with one plan and one confirmation for the whole batch, each key
//! unlocked once, the items pipelined across addresses, and the batch finished from the
//! journal after a crash (`batch resume ID`). The flows library does the work
//! ([`bridgectl_flow::Flows::batch`]); this module reads the file, shows the plan, asks,
//! unlocks and renders the results.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, U256};
use anyhow::{Context, Result, anyhow};
use bridgectl_flow::batch_file::{self, BatchFormat, MAX_BATCH_FILE_BYTES};
use bridgectl_flow::{
    BatchCheck, BatchItem, BatchOp, BatchOptions, BatchStatus, Bridge, Flows, ItemResult,
    ItemState, ItemStatus, PrivateKeySigner, Submitter, Which,
};
use bridgectl_tx::amount::format_units;
use clap::{Args, Subcommand, ValueEnum};
use futures_util::StreamExt;
use serde_json::{Value, json};

use crate::cli::GlobalOpts;
use crate::exit::{Code, WithCode, coded};
use crate::opts::{FlowOpts, PlatformOpts, parse_amount};
use crate::output::untrusted;
use crate::passphrase::KeyPassphrases;
use crate::session::Session;

/// `bridgectl batch ...`
#[derive(Debug, Subcommand)]
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

/// The input file and what limits the batch.
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

/// Arguments of `bridgectl batch plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The input.
    #[command(flatten)]
    pub input: InputOpts,
    /// The platform.
    #[command(flatten)]
    pub platform: PlatformOpts,
}

/// How the batch runs.
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

/// Arguments of `bridgectl batch run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The input.
    #[command(flatten)]
    pub input: InputOpts,
    /// How it runs.
    #[command(flatten)]
    pub run: RunOpts,
}

/// Arguments of `bridgectl batch resume`.
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

/// Arguments of `bridgectl batch status`.
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
        BatchCommand::Run(args) => run_batch(global, &args.input, &args.run),
        BatchCommand::Resume(args) => resume_batch(global, &args),
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

/// What one address does in the batch, beside what it holds.
struct AccountPlan {
    address: Address,
    label: Option<String>,
    items: usize,
    spends: BTreeMap<Which, U256>,
    balances: BTreeMap<Which, U256>,
}

/// The whole batch before it runs.
struct Plan {
    source: String,
    items: Vec<BatchItem>,
    ops: BTreeMap<&'static str, usize>,
    totals: BTreeMap<Which, (usize, U256)>,
    accounts: Vec<AccountPlan>,
    max_totals: BTreeMap<Which, U256>,
    bridge: Bridge,
    caps: Vec<String>,
    /// Where the tokens go, grouped: one hostile line among a thousand shows here.
    recipients: BTreeMap<(Which, Recipient), (usize, U256)>,
    /// The profile's allowed destinations (empty: no allowlist).
    allowlist: Vec<Address>,
    /// Labels of the keystore's keys, to name recipients by.
    labels: BTreeMap<Address, String>,
    /// What the run's checks would say of each item, and each sender's gas.
    preflight: BatchCheck,
}

/// Where an item's tokens go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Recipient {
    /// A transfer's recipient.
    Address(Address),
    /// Burned by a redeem: paid out in MT to the sender on the main chain.
    Redeemed,
    /// The swap address the platform issues when the item runs.
    SwapAddress,
}

impl Plan {
    /// Whether `to` may receive under the profile's allowlist (no allowlist: yes).
    fn allowed(&self, to: &Recipient) -> Option<bool> {
        match to {
            Recipient::Address(a) if !self.allowlist.is_empty() => Some(self.allowlist.contains(a)),
            _ => None,
        }
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
}

fn symbol(bridge: &Bridge, which: Which) -> &str {
    match which {
        Which::Mt => &bridge.main.symbol,
        Which::St => &bridge.side.symbol,
    }
}

fn units(bridge: &Bridge, which: Which, amount: U256) -> String {
    let decimals = match which {
        Which::Mt => bridge.main.decimals,
        Which::St => bridge.side.decimals,
    };
    format_units(amount, decimals).unwrap_or_else(|_| amount.to_string())
}

impl Plan {
    fn make(session: &Session, flows: &Flows, input: &InputOpts) -> Result<Plan> {
        let bridge = session.bridge()?.clone();
        let items = read_items(session, &bridge, input)?;
        let mut max_totals = BTreeMap::new();
        for spec in &input.max_total {
            let (token, amount) = spec.split_once('=').ok_or_else(|| {
                coded(
                    Code::Usage,
                    format!("--max-total {spec:?}: expected TOKEN=AMOUNT"),
                )
            })?;
            let which = if token.eq_ignore_ascii_case(&bridge.main.symbol)
                || token.eq_ignore_ascii_case("mt")
            {
                Which::Mt
            } else if token.eq_ignore_ascii_case(&bridge.side.symbol)
                || token.eq_ignore_ascii_case("st")
            {
                Which::St
            } else {
                return Err(coded(
                    Code::Usage,
                    format!(
                        "--max-total {spec:?}: the token is {} or {}",
                        bridge.main.symbol, bridge.side.symbol
                    ),
                ));
            };
            let decimals = match which {
                Which::Mt => bridge.main.decimals,
                Which::St => bridge.side.decimals,
            };
            max_totals.insert(which, parse_amount(amount, decimals, "--max-total")?);
        }
        let mut ops = BTreeMap::new();
        let mut totals: BTreeMap<Which, (usize, U256)> = BTreeMap::new();
        let mut accounts: Vec<AccountPlan> = Vec::new();
        let mut recipients: BTreeMap<(Which, Recipient), (usize, U256)> = BTreeMap::new();
        for item in &items {
            let to = match &item.op {
                BatchOp::Transfer { to, .. } => Recipient::Address(*to),
                BatchOp::Redeem { .. } => Recipient::Redeemed,
                BatchOp::Swap { .. } => Recipient::SwapAddress,
            };
            let (which, amount) = item.op.spends();
            let r = recipients.entry((which, to)).or_insert((0, U256::ZERO));
            r.0 += 1;
            r.1 = r.1.saturating_add(amount);
            *ops.entry(item.op.name()).or_insert(0) += 1;
            let (which, amount) = item.op.spends();
            let total = totals.entry(which).or_insert((0, U256::ZERO));
            total.0 += 1;
            total.1 = total
                .1
                .checked_add(amount)
                .ok_or_else(|| anyhow!("the batch total overflows"))?;
            let from = item.op.from();
            let idx = match accounts.iter().position(|a| a.address == from) {
                Some(i) => i,
                None => {
                    accounts.push(AccountPlan {
                        address: from,
                        label: session
                            .keystore
                            .find(&from.to_string())
                            .ok()
                            .map(|k| k.label),
                        items: 0,
                        spends: BTreeMap::new(),
                        balances: BTreeMap::new(),
                    });
                    accounts.len() - 1
                }
            };
            let a = &mut accounts[idx];
            a.items += 1;
            let spent = a.spends.entry(which).or_insert(U256::ZERO);
            *spent = spent.saturating_add(amount);
        }
        session.runtime.block_on(async {
            for a in &mut accounts {
                for which in a.spends.keys().copied().collect::<Vec<_>>() {
                    a.balances
                        .insert(which, flows.token_balance(which, a.address).await?);
                }
            }
            Ok::<_, bridgectl_flow::Error>(())
        })?;
        let preflight = session.runtime.block_on(flows.check_batch(&items))?;
        let policy = flows.trust_root();
        let mut caps = vec![match policy.max_gas_price {
            Some(wei) => format!("gas price at most {wei} wei"),
            None => format!(
                "gas price at most {}x the node's quote",
                bridgectl_flow::GAS_PRICE_SANITY_MULTIPLE
            ),
        }];
        caps.push(format!(
            "gas limit at most {}",
            policy
                .max_gas_limit
                .unwrap_or(bridgectl_flow::DEFAULT_MAX_GAS_LIMIT)
        ));
        if let Some(fee) = policy.max_fee {
            caps.push(format!("fee at most {fee} wei"));
        }
        for token in policy.limits.keys() {
            caps.push(format!("spending limit on {token} (from the profile)"));
        }
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
            ops,
            totals,
            accounts,
            max_totals,
            bridge,
            caps,
            recipients,
            allowlist: policy.allowed_destinations.clone(),
            labels,
            preflight,
        })
    }

    /// Refusals: a total above its --max-total, a recipient outside the allowlist, an
    /// address that cannot cover its items, then what the run's own checks would refuse
    /// ([`BatchCheck::verdict`]: limits, caps, gas).
    fn check(&self) -> Result<()> {
        let b = &self.bridge;
        let outside: Vec<String> = self
            .recipients
            .iter()
            .filter(|((_, to), _)| self.allowed(to) == Some(false))
            .map(|((which, to), (n, total))| {
                format!(
                    "{} ({} {} in {n} items)",
                    self.recipient_text(to),
                    units(b, *which, *total),
                    symbol(b, *which)
                )
            })
            .collect();
        if !outside.is_empty() {
            return Err(coded(
                Code::Refused,
                format!(
                    "the batch sends to addresses outside allowed-destinations: {}",
                    outside.join("; ")
                ),
            ));
        }
        for (which, max) in &self.max_totals {
            let total = self.totals.get(which).map_or(U256::ZERO, |t| t.1);
            if total > *max {
                return Err(coded(
                    Code::Refused,
                    format!(
                        "the batch moves {} {} in all, above --max-total {} {}",
                        units(b, *which, total),
                        symbol(b, *which),
                        units(b, *which, *max),
                        symbol(b, *which)
                    ),
                ));
            }
        }
        let short: Vec<String> = self
            .accounts
            .iter()
            .flat_map(|a| {
                a.spends.iter().filter_map(move |(which, spent)| {
                    let have = a.balances.get(which).copied().unwrap_or_default();
                    (*spent > have).then(|| {
                        format!(
                            "{} needs {} {} and holds {}",
                            a.address,
                            units(b, *which, *spent),
                            symbol(b, *which),
                            units(b, *which, have)
                        )
                    })
                })
            })
            .collect();
        if !short.is_empty() {
            return Err(coded(
                Code::Refused,
                format!("the batch cannot be covered: {}", short.join("; ")),
            ));
        }
        Ok(self.preflight.verdict()?)
    }

    fn show(&self, as_json: bool) -> Result<()> {
        let b = &self.bridge;
        let amount = |which: Which, v: U256| units(b, which, v);
        if as_json {
            let totals: Vec<Value> = self
                .totals
                .iter()
                .map(|(w, (n, total))| {
                    json!({"token": symbol(b, *w), "items": n, "amount": amount(*w, *total),
                           "baseUnits": total.to_string()})
                })
                .collect();
            let accounts: Vec<Value> = self
                .accounts
                .iter()
                .map(|a| {
                    let tokens: Vec<Value> = a
                        .spends
                        .iter()
                        .map(|(w, spent)| {
                            let have = a.balances.get(w).copied().unwrap_or_default();
                            json!({"token": symbol(b, *w), "amount": amount(*w, *spent),
                                   "balance": amount(*w, have), "covered": *spent <= have})
                        })
                        .collect();
                    let gas: Vec<Value> = self
                        .preflight
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
                    json!({"address": a.address, "label": a.label, "items": a.items,
                           "hasKey": a.label.is_some(), "tokens": tokens, "gas": gas})
                })
                .collect();
            let recipients: Vec<Value> = self
                .recipients
                .iter()
                .map(|((w, to), (n, total))| {
                    let (kind, address) = match to {
                        Recipient::Address(a) => ("address", Some(*a)),
                        Recipient::Redeemed => ("redeemed", None),
                        Recipient::SwapAddress => ("swapAddress", None),
                    };
                    json!({"token": symbol(b, *w), "kind": kind, "address": address,
                           "label": address.and_then(|a| self.labels.get(&a)),
                           "items": n, "amount": amount(*w, *total),
                           "baseUnits": total.to_string(), "allowed": self.allowed(to)})
                })
                .collect();
            return crate::output::json(&json!({
                "source": self.source,
                "items": self.items.len(),
                "operations": self.ops,
                "totals": totals,
                "recipients": recipients,
                "accounts": accounts,
                "caps": self.caps,
                "refusedItems": self.preflight.refused.iter().map(|r| json!({
                    "index": r.index, "id": r.id, "from": r.from, "reason": r.reason,
                })).collect::<Vec<_>>(),
                "refused": self.check().err().map(|e| format!("{e:#}")),
            }));
        }
        let ops: Vec<String> = self.ops.iter().map(|(op, n)| format!("{n} {op}")).collect();
        let mut out = vec![format!(
            "batch {}: {} items ({})",
            self.source,
            self.items.len(),
            ops.join(", ")
        )];
        for (w, (n, total)) in &self.totals {
            out.push(format!(
                "  {} out: {} {} in {n} items{}",
                symbol(b, *w),
                amount(*w, *total),
                symbol(b, *w),
                self.max_totals
                    .get(w)
                    .map(|m| format!(" (--max-total {})", amount(*w, *m)))
                    .unwrap_or_default()
            ));
        }
        out.push(format!(
            "accounts ({}), each key unlocked once:",
            self.accounts.len()
        ));
        for a in &self.accounts {
            let tokens: Vec<String> = a
                .spends
                .iter()
                .map(|(w, spent)| {
                    let have = a.balances.get(w).copied().unwrap_or_default();
                    format!(
                        "{} {} of {} held{}",
                        amount(*w, *spent),
                        symbol(b, *w),
                        amount(*w, have),
                        if *spent > have { "  SHORT" } else { "" }
                    )
                })
                .collect();
            out.push(format!(
                "  {} {:<12} {:>5} items  {}",
                a.address,
                a.label
                    .as_deref()
                    .map_or_else(|| "(no key)".into(), untrusted),
                a.items,
                tokens.join(", ")
            ));
            for g in self.preflight.gas.iter().filter(|g| g.from == a.address) {
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
        if !self.preflight.refused.is_empty() {
            out.push(format!(
                "refused by the checks every item meets when it runs ({}):",
                self.preflight.refused.len()
            ));
            for r in &self.preflight.refused {
                out.push(format!(
                    "  {} from {}: {}",
                    untrusted(&r.id),
                    r.from,
                    untrusted(&r.reason)
                ));
            }
        }
        out.push(format!(
            "recipients ({}){}:",
            self.recipients.len(),
            if self.allowlist.is_empty() {
                ""
            } else {
                ", against allowed-destinations"
            }
        ));
        for ((w, to), (n, total)) in &self.recipients {
            out.push(format!(
                "  {:<62} {:>5} items  {} {}{}",
                self.recipient_text(to),
                n,
                amount(*w, *total),
                symbol(b, *w),
                match self.allowed(to) {
                    Some(true) => "  allowed",
                    Some(false) => "  NOT ALLOWED",
                    None => "",
                }
            ));
        }
        out.push(format!("caps on every item: {}", self.caps.join("; ")));
        // The plan is what the person confirms: on stderr, like a transaction's summary.
        for line in out {
            crate::output::note(line);
        }
        Ok(())
    }

    /// The accounts of the plan that have no key here.
    fn keyless(&self) -> Vec<Address> {
        self.accounts
            .iter()
            .filter(|a| a.label.is_none())
            .map(|a| a.address)
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
    let accounts: Vec<Address> = plan.accounts.iter().map(|a| a.address).collect();
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
    pending: usize,
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
                "{bar:30} {pos}/{len} {msg} {per_sec} ETA {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let started = Instant::now();
    let mut tally = Tally::default();
    session.runtime.block_on(async {
        let mut results = flows.batch(batch_id, keys, options)?;
        while let Some(r) = results.next().await {
            tally.latencies.push(started.elapsed());
            match r.status {
                ItemStatus::Completed => tally.completed += 1,
                ItemStatus::Failed => tally.failed += 1,
                ItemStatus::Pending => tally.pending += 1,
            }
            report(global, bar.as_ref(), &r)?;
            if let Some(bar) = &bar {
                bar.set_message(format!(
                    "done {} failed {} pending {}",
                    tally.completed, tally.failed, tally.pending
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
    let rate = total as f64 / seconds.max(1e-9);
    if global.json {
        let summary = json!({"summary": {
            "batchId": batch_id,
            "items": total,
            "completed": tally.completed,
            "failed": tally.failed,
            "pending": tally.pending,
            "seconds": (seconds * 1000.0).round() / 1000.0,
            "itemsPerSecond": (rate * 10.0).round() / 10.0,
        }});
        crate::output::json_line(&summary)?;
    } else {
        crate::output::line(format_args!(
            "batch {batch_id}: {} completed, {} failed, {} pending of {total} in {seconds:.1} s \
             ({rate:.1} items/s)",
            tally.completed, tally.failed, tally.pending
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
        let batches = journal.list_batches(20)?;
        if global.json {
            return crate::output::json(&batches);
        }
        if batches.is_empty() {
            crate::output::note("no batches in the journal");
        }
        for b in batches {
            let s = BatchStatus::read(&journal, &b.batch_id)?;
            crate::output::line(format_args!(
                "{}  {}  {:>5} items  {} completed, {} failed, {} open  {}",
                b.batch_id,
                b.created_at,
                b.items,
                s.count(ItemState::Completed),
                s.count(ItemState::Failed),
                b.items - s.count(ItemState::Completed) - s.count(ItemState::Failed),
                untrusted(&b.source)
            ))?;
        }
        return Ok(());
    };
    let s = BatchStatus::read(&journal, id)?;
    if global.json {
        return crate::output::json(&s);
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
    let open = s.items.len() - s.count(ItemState::Completed) - s.count(ItemState::Failed);
    crate::output::line(format_args!(
        "{} completed, {} failed, {open} open{}",
        s.count(ItemState::Completed),
        s.count(ItemState::Failed),
        if open > 0 {
            format!(
                ": `bridgectl batch resume {}` finishes them",
                s.batch.batch_id
            )
        } else {
            String::new()
        }
    ))
}
