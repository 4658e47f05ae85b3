//! `bridgectl batch plan`, and the plan `batch run` shows before it asks: the file read
//! into items, the library's plan of them ([`Flows::plan`], which also decides what is
//! refused: [`BatchPlan::verdict`]), rendered for a person or as JSON. Nothing is computed
//! here that the library computes; what this module adds is what only this machine knows
//! (the file's name, the keystore's labels) and the flag syntax of `--max-total`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use alloy_primitives::{Address, U256};
use anyhow::{Context, Result};
use bridgectl_flow::batch_file::{self, BatchFormat, MAX_BATCH_FILE_BYTES};
use bridgectl_flow::{
    BatchItem, BatchPlan, Bridge, Flows, HeldItem, Recipient, Submitter, TokenSide,
};
use clap::{Args, ValueEnum};
use serde_json::{Value, json};

use crate::exit::{Code, WithCode, coded};
use crate::global::GlobalOpts;
use crate::opts::{PlatformOpts, parse_amount};
use crate::output::untrusted;
use crate::session::Session;

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
    /// Pay the file's items again, as new payouts: SUFFIX is appended to every item's id
    /// (and to the key of an item without one). An item id is run once, by whichever
    /// batch records it first; without this flag items run before are not run again. A
    /// new SUFFIX for every deliberate rerun (`--id-suffix=-again-1`).
    #[arg(long, value_name = "SUFFIX", allow_hyphen_values = true)]
    pub id_suffix: Option<String>,
}

/// The longest `--id-suffix`.
const MAX_ID_SUFFIX: usize = 64;

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

/// Runs `bridgectl batch plan`: shows the plan, then refuses (exit 3) what the run would.
pub fn run(global: &GlobalOpts, args: &PlanArgs) -> Result<()> {
    let session = Session::for_sending(global, &args.platform)?;
    let flows = session.flows(Submitter::Platform, |_| {})?;
    let items = read_items(&session, &args.input)?;
    refuse_held(
        &flows,
        &args.input,
        &items,
        "`bridgectl batch run` of it resumes that batch instead",
    )?;
    let plan = Plan::make(&session, &flows, &args.input, items)?;
    plan.show(global.json)?;
    plan.check()
}

/// The items of the file (read by [`batch_file`]), with accounts resolved (labels of
/// keys), amounts parsed exactly with each token's decimals, and `--id-suffix` appended.
pub(super) fn read_items(session: &Session, input: &InputOpts) -> Result<Vec<BatchItem>> {
    let suffix = match input.id_suffix.as_deref() {
        None => None,
        Some(s)
            if s.is_empty()
                || s.chars().count() > MAX_ID_SUFFIX
                || s.chars().any(char::is_control) =>
        {
            return Err(coded(
                Code::Usage,
                format!(
                    "--id-suffix {:?}: 1 to {MAX_ID_SUFFIX} printable characters",
                    untrusted(s)
                ),
            ));
        }
        Some(s) => Some(s),
    };
    let items = read_file_items(session, session.bridge()?, input)?;
    Ok(match suffix {
        Some(suffix) => items.into_iter().map(|i| i.suffixed(suffix)).collect(),
        None => items,
    })
}

/// The items of the file as written.
fn read_file_items(
    session: &Session,
    bridge: &Bridge,
    input: &InputOpts,
) -> Result<Vec<BatchItem>> {
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
    let decimals = |which: TokenSide| bridge.side(which).decimals;
    batch_file::read_items(&text, format, &account, &decimals).map_err(|e| {
        let place = match e.line {
            0 => path.display().to_string(),
            line => format!("{}:{line}", path.display()),
        };
        coded(Code::Refused, format!("{place}: {}", e.reason))
    })
}

/// The batch before it runs: the library's plan ([`Flows::plan`]) and what only this
/// machine knows (the file it came from, the keystore's labels), rendered for a person
/// or as JSON.
pub(super) struct Plan {
    pub(super) source: String,
    pub(super) items: Vec<BatchItem>,
    pub(super) plan: BatchPlan,
    /// Labels of the keystore's keys, to name senders and recipients by.
    labels: BTreeMap<Address, String>,
}

/// Parses `--max-total TOKEN=AMOUNT` (repeated) into the plan's maxima.
fn max_totals(bridge: &Bridge, specs: &[String]) -> Result<BTreeMap<TokenSide, U256>> {
    let mut max_totals = BTreeMap::new();
    for spec in specs {
        let (token, amount) = spec.split_once('=').ok_or_else(|| {
            coded(
                Code::Usage,
                format!("--max-total {spec:?}: expected TOKEN=AMOUNT"),
            )
        })?;
        let which = bridge.token_named(token).ok_or_else(|| {
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

/// What the journal holds of a file's items: each item id is run once, by the batch that
/// records it first ([`Flows::create_batch`]).
pub(super) enum Held {
    /// None of them: a new batch.
    None,
    /// Every item, as it is, by this batch and no other: the same file recorded before.
    Batch(String),
}

impl Held {
    /// What the journal holds of `items` (from `input`). Items held in part, by several
    /// batches or as other payouts under the same ids are refused here (exit 3), each
    /// named with the batch that holds it, before anything is planned or asked.
    pub(super) fn of(flows: &Flows, input: &InputOpts, items: &[BatchItem]) -> Result<Held> {
        let held = flows.held_items(items)?;
        if held.is_empty() {
            return Ok(Held::None);
        }
        match HeldItem::one_batch(&held, items.len()) {
            Some(batch_id) => Ok(Held::Batch(batch_id.to_owned())),
            None => Err(held_refusal(input, bridgectl_flow::Error::ItemsHeld(held))),
        }
    }
}

/// Refuses (exit 3) a file whose items a batch recorded before holds, in whole or in
/// part: a command that makes no batch to run (`batch plan`, `batch prepare`).
/// `whole` says what goes on when one batch holds them all.
pub(super) fn refuse_held(
    flows: &Flows,
    input: &InputOpts,
    items: &[BatchItem],
    whole: &str,
) -> Result<()> {
    match Held::of(flows, input, items)? {
        Held::None => Ok(()),
        Held::Batch(batch_id) => Err(crate::exit::hinted(
            coded(
                Code::Refused,
                format!(
                    "{}: every item of it is batch {batch_id}'s, recorded before (an item id \
                     is one payout, run once)",
                    input.file.display()
                ),
            ),
            format!(
                "`bridgectl batch status {batch_id}` shows where its items stand; {whole}; \
                 to pay them again on purpose, as new payouts, give `--id-suffix SUFFIX`"
            ),
        )),
    }
}

/// The refusal of items held by batches recorded before (the library's
/// [`bridgectl_flow::Error::ItemsHeld`]), with the commands that go on from there.
pub(super) fn held_refusal(input: &InputOpts, error: bridgectl_flow::Error) -> anyhow::Error {
    let batches: Vec<String> = match &error {
        bridgectl_flow::Error::ItemsHeld(held) => {
            let mut ids: Vec<String> = held.iter().map(|h| h.batch_id.clone()).collect();
            ids.dedup();
            ids
        }
        _ => Vec::new(),
    };
    let status = match batches.as_slice() {
        [one] => format!("`bridgectl batch status {one}` shows where its items stand"),
        _ => "`bridgectl batch status ID` shows where each batch's items stand".into(),
    };
    crate::exit::hinted(
        anyhow::Error::new(error).context(format!("{}", input.file.display())),
        format!(
            "{status} and `bridgectl batch resume ID` finishes one; to pay these items again \
             on purpose, as new payouts, run with `--id-suffix SUFFIX` (appended to every \
             item's id)"
        ),
    )
}

impl Plan {
    pub(super) fn make(
        session: &Session,
        flows: &Flows,
        input: &InputOpts,
        items: Vec<BatchItem>,
    ) -> Result<Plan> {
        let bridge = session.bridge()?.clone();
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
    pub(super) fn check(&self) -> Result<()> {
        self.plan.verdict().code(Code::Refused)
    }

    fn symbol(&self, which: TokenSide) -> &str {
        &self.plan.bridge().side(which).symbol
    }

    fn tokens(&self, which: TokenSide, amount: U256) -> String {
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

    pub(super) fn show(&self, as_json: bool) -> Result<()> {
        if as_json {
            return crate::output::json(&self.json());
        }
        let p = &self.plan;
        let amount = |which: TokenSide, v: U256| self.tokens(which, v);
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
            // In ETH, as the signing summary shows a fee, with the wei beside it.
            let eth = |wei: U256| {
                let units =
                    bridgectl_tx::amount::format_units(wei, 18).unwrap_or_else(|_| wei.to_string());
                format!("{units} ETH")
            };
            for g in p.check.gas.iter().filter(|g| g.from == a.address) {
                out.push(format!(
                    "      gas on chain {}: up to {} ({} wei: {} gas at {} wei) of {}{}",
                    g.chain_id,
                    eth(g.needed),
                    g.needed,
                    g.gas,
                    g.gas_price,
                    g.balance.map_or_else(
                        || "an unknown balance (no node)".into(),
                        |b| format!("{} ({b} wei) held", eth(b))
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
    pub(super) fn keyless(&self) -> Vec<Address> {
        self.plan
            .accounts
            .iter()
            .map(|a| a.address)
            .filter(|a| !self.labels.contains_key(a))
            .collect()
    }
}
