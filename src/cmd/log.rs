//! `bridgectl log`: the keystore's signing log (every signature made with its keys,
//! hash-chained, each entry signed by its key). `checkpoint` prints the head to keep
//! elsewhere; `verify` checks the chain (and against a kept checkpoint, which catches a
//! removed tail; without one, the checkpoint kept beside the log); `acknowledge` accepts a
//! log that signing refuses (rolled back, holding a removed key's entries, or beside a
//! checkpoint that cannot be read), carrying its spending and watermarks forward; `show`
//! lists entries; `export` writes JSONL an auditor checks with
//! keccak and ecrecover alone (`scripts/verify-signing-log.py`).

use std::io::Write;
use std::path::PathBuf;

use bridgectl_signing_log::{AcknowledgementPlan, ShowFilter, SigningLogDb};
use bridgectl_tx::Checkpoint;
use bridgectl_tx::signing_log::Watermark;
use clap::{Args, Subcommand};
use serde_json::json;

use crate::exit::{Code, WithCode, coded};
use crate::global::GlobalOpts;
use crate::output::untrusted;

/// `bridgectl log ...`
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum LogCommand {
    /// Print the head of the log (COUNT:HASH), for the operator to keep elsewhere.
    Checkpoint,
    /// Check every entry: hash, link to the previous one, signature by its key. Exit 0
    /// when the chain holds; 3 naming the first bad entry otherwise.
    Verify(VerifyArgs),
    /// List entries.
    Show(ShowArgs),
    /// Write every entry as JSON lines, for an auditor; with `--history`, the keys'
    /// signing history for another machine or store (`log import`).
    Export(ExportArgs),
    /// Take in a signing history that `log export --history` wrote (a key moved from
    /// another machine or store): its watermarks and its recent spending are carried
    /// into this log by an acknowledgement a key of the keystore signs, so no nonce the
    /// key signed there is signed again here and its spending windows count what it
    /// spent there. The file's entries are checked (hash, signature by their key) and
    /// count too. Only ever stricter: nothing the log holds is forgotten.
    Import(ImportArgs),
    /// Accept the log as it stands when signing refuses it: it no longer reaches the
    /// checkpoint kept beside it (deleted, truncated, restored from a backup), holds an
    /// entry signed by a key that is not in the keystore (a key removed since), or the
    /// checkpoint cannot be read. The chain must still hold. Nothing is forgotten: the
    /// lost entries' spending is carried into the log, and so is each key's watermark
    /// on each chain (the highest nonce it signed, from the checkpoint, the log and the
    /// profile's nodes), at or below which no nonce is signed again but by `replace` or
    /// `cancel`.
    Acknowledge(AcknowledgeArgs),
}

// Arguments of `bridgectl log acknowledge`.
#[derive(Debug, Args)]
pub struct AcknowledgeArgs {
    /// Do not ask for confirmation.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// The key that signs the acknowledgement (an entry of the log, like every other):
    /// its address, label or id [default: the keystore's one key].
    #[arg(long, value_name = "KEY", add = crate::accounts::key_labels())]
    pub key: Option<String>,
    /// The key's passphrase.
    #[command(flatten)]
    pub passphrase: crate::opts::PassphraseOpts,
}

// Arguments of `bridgectl log verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// A checkpoint kept earlier (COUNT:HASH): the log must still reach it and hold it,
    /// which catches entries removed from the end.
    #[arg(long, value_name = "COUNT:HASH")]
    pub checkpoint: Option<String>,
    /// Accept entries signed by keys that are not in this keystore (keys removed since
    /// they signed). Without it such an entry is a failure: someone who can write the
    /// file could append entries signed with a key of their own.
    #[arg(long)]
    pub any_key: bool,
}

// Arguments of `bridgectl log show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Only this key's entries: its address, label or id (an address also for a key
    /// removed since it signed).
    #[arg(long, value_name = "KEY", add = crate::accounts::key_labels())]
    pub key: Option<String>,
    /// Only entries since T: RFC 3339 (`2026-11-23T00:00:00Z`), Unix seconds, or a
    /// duration back from now (`24h`, `7d`).
    #[arg(long, value_name = "T")]
    pub since: Option<String>,
}

// Arguments of `bridgectl log export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Write to FILE (never overwritten) instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Write the keys' signing history instead (docs/signing-history.md: each key's
    /// watermarks, recent spending and entries, one JSON document), for `log import` on
    /// another machine or store.
    #[arg(long)]
    pub history: bool,
    /// With `--history`: only this key's (address, label or id) [default: every key
    /// with entries].
    #[arg(long, value_name = "KEY", requires = "history", add = crate::accounts::key_labels())]
    pub key: Option<String>,
}

// Arguments of `bridgectl log import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The signing history (`log export --history`'s file), or `-` for stdin.
    #[arg(value_name = "FILE")]
    pub file: String,
    /// How the acknowledgement that carries it in is signed.
    #[command(flatten)]
    pub sign: AcknowledgeArgs,
}

fn open(global: &GlobalOpts) -> anyhow::Result<SigningLogDb> {
    let store = crate::session::open_keystore(global)?;
    crate::session::open_signing_log(&store)
}

/// Runs `bridgectl log`.
pub fn run(global: &GlobalOpts, cmd: LogCommand) -> anyhow::Result<()> {
    let log = open(global)?;
    match cmd {
        LogCommand::Checkpoint => checkpoint(&log, global),
        LogCommand::Acknowledge(args) => acknowledge(&log, global, args),
        LogCommand::Verify(args) => verify(&log, global, args),
        LogCommand::Show(args) => show(&log, global, args),
        LogCommand::Export(args) if args.history => export_history(&log, global, args),
        LogCommand::Export(args) => export(&log, args),
        LogCommand::Import(args) => import(&log, global, args),
    }
}

/// `log checkpoint`: the head, to keep elsewhere.
fn checkpoint(log: &SigningLogDb, global: &GlobalOpts) -> anyhow::Result<()> {
    let head = log.checkpoint()?;
    if global.json {
        return crate::output::json(&json!({
            "count": head.count, "head": head.head, "checkpoint": head.to_string()
        }));
    }
    crate::output::line(head)
}

/// `log acknowledge`: the log accepted as it stands, signed by a key of the keystore.
/// Everything that needs no key comes first: the key named, the log verified (a log
/// that does not hold is refused, exit 3), what the acknowledgement carries forward
/// shown; then the question, then the passphrase.
fn acknowledge(
    log: &SigningLogDb,
    global: &GlobalOpts,
    args: AcknowledgeArgs,
) -> anyhow::Result<()> {
    let store = crate::session::open_keystore(global)?;
    let key = acknowledging_key(&store, &args)?;
    let plan = match log.plan_acknowledgement() {
        Err(e @ bridgectl_signing_log::Error::Broken { .. }) => {
            return Err(anyhow::Error::new(e).context(
                "nothing to acknowledge: an acknowledgement accepts a log whose entries hold",
            ))
            .code(Code::Refused);
        }
        other => other?,
    }
    .witnessed(&chain_nonces(global, &store.signers()?));
    sign_acknowledgement(
        log,
        global,
        &store,
        &key,
        &plan,
        &args,
        &format!(
            "accept the log as it stands, signed by {}? Spending limits count from what it \
             holds and what it carries; no nonce a watermark holds is signed again but by \
             a replacement",
            key.address
        ),
    )
}

/// The key that signs an acknowledgement: `--key`, or the keystore's one key.
fn acknowledging_key(
    store: &bridgectl_keystore::Keystore,
    args: &AcknowledgeArgs,
) -> anyhow::Result<bridgectl_keystore::KeyInfo> {
    let keys = store.list()?;
    match (&args.key, keys.as_slice()) {
        (Some(k), _) => Ok(store.find(k)?),
        (None, [one]) => Ok(one.clone()),
        (None, _) => Err(coded(
            Code::Usage,
            format!(
                "an acknowledgement is signed by a key of the keystore: name it with --key \
                 (the keystore has {} keys)",
                keys.len()
            ),
        )),
    }
}

/// Shows `plan`, asks `question`, unlocks `key` and appends the acknowledgement: what
/// `log acknowledge` and `log import` end with. Nothing before the question reads a
/// passphrase.
fn sign_acknowledgement(
    log: &SigningLogDb,
    global: &GlobalOpts,
    store: &bridgectl_keystore::Keystore,
    key: &bridgectl_keystore::KeyInfo,
    plan: &AcknowledgementPlan,
    args: &AcknowledgeArgs,
    question: &str,
) -> anyhow::Result<()> {
    show_plan(log, plan);
    crate::review::confirm(args.yes, question).code(Code::Declined)?;
    let mut passphrases = crate::passphrase::CliPassphrases::new(&args.passphrase);
    passphrases.ensure_available()?;
    let signer = passphrases.unlock_key(store, key)?;
    let head = log.acknowledge_plan(plan, &signer, bridgectl_tx::signing_log::unix_now())?;
    if global.json {
        return crate::output::json(&json!({
            "acknowledged": true, "count": head.count, "head": head.head,
            "checkpoint": head.to_string(), "carried": plan.carried.len(),
            "watermarks": plan.watermarks,
        }));
    }
    crate::output::line(format_args!(
        "acknowledged: {} entries, head {head}",
        head.count
    ))
}

/// The most a signing history file may be: far more than any key's history (a million
/// entries), and a bound on what a stray file costs to read.
const MAX_HISTORY_BYTES: u64 = 1 << 30;

/// `log import`: a signing history carried into the log by an acknowledgement.
fn import(log: &SigningLogDb, global: &GlobalOpts, args: ImportArgs) -> anyhow::Result<()> {
    let name = crate::files::input_name(&args.file);
    let text = crate::files::read_input_bounded(&args.file, MAX_HISTORY_BYTES)?;
    if text.len() as u64 > MAX_HISTORY_BYTES {
        return Err(coded(
            Code::Refused,
            format!("{name} is larger than any signing history ({MAX_HISTORY_BYTES} bytes)"),
        ));
    }
    // Read as strictly as every file from outside (bridgectl-json: a key twice refused at
    // any depth, integers exact), then checked entry by entry by the library.
    let history: bridgectl_signing_log::History =
        bridgectl_json::from_slice_to(&text).map_err(|e| {
            coded(
                Code::Refused,
                format!("{name} is not a signing history (`log export --history` writes one): {e}"),
            )
        })?;
    let plan = match log.plan_import(&history) {
        Err(
            e @ (bridgectl_signing_log::Error::History { .. }
            | bridgectl_signing_log::Error::Broken { .. }),
        ) => return Err(anyhow::Error::new(e)).code(Code::Refused),
        other => other?,
    };
    let store = crate::session::open_keystore(global)?;
    let key = acknowledging_key(&store, &args.sign)?;
    let entries: usize = history.keys.iter().map(|k| k.entries.len()).sum();
    crate::output::note(format_args!(
        "signing history {name}: {} key(s), {entries} entries, from a log at {}",
        history.keys.len(),
        history.metadata.log_head
    ));
    sign_acknowledgement(
        log,
        global,
        &store,
        &key,
        &plan,
        &args.sign,
        &format!(
            "carry this history into the log, signed by {}? No nonce its watermarks hold is \
             signed again but by a replacement, and its spending counts in the windows",
            key.address
        ),
    )
}

/// `log export --history`: the keys' signing history, one JSON document.
fn export_history(log: &SigningLogDb, global: &GlobalOpts, args: ExportArgs) -> anyhow::Result<()> {
    let keys = match &args.key {
        Some(k) => vec![crate::session::open_keystore(global)?.find(k)?.address],
        None => Vec::new(),
    };
    let history = match log.export_history(&keys, bridgectl_tx::signing_log::unix_now()) {
        Err(e @ bridgectl_signing_log::Error::Broken { .. }) => {
            return Err(anyhow::Error::new(e)).code(Code::Refused);
        }
        other => other?,
    };
    let mut text = serde_json::to_vec_pretty(&history)?;
    text.push(b'\n');
    match &args.out {
        Some(path) => {
            crate::files::write_new(path, &text)?;
            crate::output::note(format_args!(
                "signing history of {} key(s) -> {}",
                history.keys.len(),
                path.display()
            ));
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(&text)?;
            out.flush()?;
        }
    }
    Ok(())
}

/// What an acknowledgement accepts and carries forward, on stderr, before it is asked.
fn show_plan(log: &SigningLogDb, plan: &AcknowledgementPlan) {
    let kept = match &plan.kept {
        Ok(None) => "none".to_owned(),
        Ok(Some(k)) if plan.reaches => format!("{} (the log reaches it)", k.checkpoint()),
        Ok(Some(k)) => format!(
            "{} (the log does not reach it: it lost entries; their spending, {} sum(s), is \
             carried into the log)",
            k.checkpoint(),
            plan.carried.len()
        ),
        Err(why) => format!(
            "cannot be read ({why}): its watermarks are rebuilt from the log and the chains \
             asked, and spending the log may have lost with it cannot be known"
        ),
    };
    crate::output::note(format_args!(
        "signing log {}: {} entries, head {}; checkpoint kept beside it: {kept}",
        log.location(),
        plan.head.count,
        plan.head
    ));
    if plan.watermarks.is_empty() {
        crate::output::note("watermarks carried forward: none (no nonce signed)");
    }
    for w in &plan.watermarks {
        let gaps: Vec<String> = w
            .gaps
            .iter()
            .map(|[a, b]| {
                if a == b {
                    a.to_string()
                } else {
                    format!("{a}-{b}")
                }
            })
            .collect();
        crate::output::note(format_args!(
            "watermark carried forward: {} on chain {}: nonces up to {} signed{}",
            w.key,
            w.chain_id,
            w.nonce,
            if gaps.is_empty() {
                String::new()
            } else {
                format!(" but {}", gaps.join(", "))
            }
        ));
    }
}

/// The chains' word on how many transactions each of `keys` sent (mined or pending),
/// from the profile's nodes, as watermarks: every nonce below a key's count was used on
/// that chain. A node that cannot be asked, or serves another chain, is named and left
/// out (the acknowledgement then rests on the log and its checkpoint).
fn chain_nonces(global: &GlobalOpts, keys: &[alloy_primitives::Address]) -> Vec<Watermark> {
    let profile = match crate::config::load_profile(global) {
        Ok(p) => p,
        Err(e) => {
            crate::output::note(format_args!(
                "the profile could not be read ({e:#}): no chain's node is asked"
            ));
            return Vec::new();
        }
    };
    let nodes = [
        (profile.main_chain_id, profile.main_rpc_url, "main_rpc_url"),
        (profile.side_chain_id, profile.side_rpc_url, "side_rpc_url"),
    ];
    let mut marks = Vec::new();
    for (chain_id, url, setting) in nodes {
        let (Some(chain_id), Some(url)) = (chain_id, url) else {
            continue;
        };
        let asked = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(anyhow::Error::from)
            .and_then(|runtime| {
                let node = bridgectl_flow::rpc::NodeClient::new(&url)?;
                runtime.block_on(async {
                    let serves = node.chain_id().await?;
                    if serves != chain_id {
                        anyhow::bail!("it serves chain {serves}");
                    }
                    let mut counts = Vec::with_capacity(keys.len());
                    for key in keys {
                        counts.push((*key, node.pending_nonce(*key).await?));
                    }
                    Ok(counts)
                })
            });
        match asked {
            Ok(counts) => {
                for (key, count) in counts {
                    crate::output::note(format_args!(
                        "chain {chain_id}'s node ({setting}): {key} sent {count} transaction(s)"
                    ));
                    marks.extend(Watermark::below(key, chain_id, count));
                }
            }
            Err(e) => crate::output::note(format_args!(
                "chain {chain_id}'s node ({setting}) could not be asked ({e:#}): its nonce \
                 counts are not among the witnesses"
            )),
        }
    }
    marks
}

/// `log verify`: the chain of entries, up to a checkpoint, every entry signed by a key
/// of this keystore unless `--any-key`.
fn verify(log: &SigningLogDb, global: &GlobalOpts, args: VerifyArgs) -> anyhow::Result<()> {
    let mut spoiled = None;
    let kept = match args.checkpoint.as_deref() {
        Some(t) => Some(t.parse::<Checkpoint>().map_err(|_| {
            coded(
                Code::Usage,
                format!(
                    "--checkpoint {t:?}: expected COUNT:0xHASH, as `bridgectl log \
                     checkpoint` prints it"
                ),
            )
        })?),
        // Without one given, the checkpoint kept beside the log; one that cannot be
        // read is reported once the chain is checked (it still tells whether the
        // entries hold).
        None => match log.kept() {
            Ok(kept) => kept.map(|k| k.checkpoint()),
            Err(e @ bridgectl_signing_log::Error::Checkpoint { .. }) => {
                spoiled = Some(e);
                None
            }
            Err(e) => return Err(e.into()),
        },
    };
    let mut outcome = match log.verify(kept) {
        Ok(head) => Ok(head),
        Err(bridgectl_signing_log::Error::Broken { bad, .. }) => Err(bad),
        Err(e) => return Err(e.into()),
    };
    if outcome.is_ok() && !args.any_key {
        // The chain holds; every entry must also be signed by a key of this
        // keystore (its key files and its external signers' accounts, whose
        // entries are its own), or a self-signed entry appended by a stranger
        // would pass.
        let known: Vec<String> = crate::session::open_keystore(global)?
            .signers()?
            .iter()
            .map(ToString::to_string)
            .collect();
        let mut stranger = None;
        log.each(|entry, columns| {
            if stranger.is_none() && !known.contains(&columns.key) {
                stranger = Some(bridgectl_tx::signing_log::BadEntry {
                    seq: entry.seq,
                    reason: format!(
                        "signed by {}, which is not a key of this keystore (a key \
                         removed since: pass --any-key; else an entry someone else \
                         appended)",
                        columns.key
                    ),
                });
            }
        })?;
        if let Some(bad) = stranger {
            outcome = Err(bad);
        }
    }
    match outcome {
        Ok(head) if spoiled.is_some() => {
            if global.json {
                crate::output::json(&json!({
                    "ok": false, "count": head.count, "head": head.head,
                    "checkpoint": head.to_string(), "reason": "the kept checkpoint cannot be read"
                }))?;
            }
            Err(
                anyhow::Error::new(spoiled.expect("just matched")).context(format!(
                    "signing log {}: its {} entries hold (head {head}), but its kept \
                     checkpoint cannot be read",
                    log.location(),
                    head.count
                )),
            )
            .code(Code::Refused)
        }
        Ok(head) => {
            if global.json {
                crate::output::json(&json!({
                    "ok": true, "count": head.count, "head": head.head,
                    "checkpoint": head.to_string()
                }))?;
            } else {
                crate::output::line(format_args!(
                    "ok: {} entries, head {head}{}",
                    head.count,
                    if kept.is_some() {
                        " (reaches the kept checkpoint)"
                    } else {
                        ""
                    }
                ))?;
            }
            Ok(())
        }
        Err(bad) => {
            if global.json {
                crate::output::json(&json!({
                    "ok": false, "entry": bad.seq, "reason": bad.reason
                }))?;
            }
            Err(coded(
                Code::Refused,
                format!("signing log {} does not hold: {bad}", log.location()),
            ))
        }
    }
}

/// `log show`: the entries, one line each.
fn show(log: &SigningLogDb, global: &GlobalOpts, args: ShowArgs) -> anyhow::Result<()> {
    let key = match args.key.as_deref() {
        Some(k) => Some(crate::accounts::resolve(
            &crate::session::open_keystore(global)?,
            k,
        )?),
        None => None,
    };
    let since = args.since.as_deref().map(parse_since).transpose()?;
    let entries = log.show(&ShowFilter { key, since })?;
    // Amounts in the units of the tokens the profile names (base units without one).
    let tokens = if global.json {
        Vec::new()
    } else {
        crate::output::profile_tokens(global)
    };
    if global.json {
        let list: Vec<_> = entries
            .iter()
            .map(|(e, b)| json!({"seq": e.seq, "hash": e.hash, "entry": b}))
            .collect();
        return crate::output::json(&list);
    }
    for (e, body) in entries {
        match body {
            // A reset is the key's record, not a signature: no call, no nonce.
            Some(b) if b.chain_reset.is_some() => crate::output::line(format_args!(
                "{:>6}  {}  {}  chain {} reset: its block 0 is now {}",
                e.seq,
                format_time(b.time),
                b.key,
                b.chain_id,
                b.chain_reset.unwrap_or_default()
            ))?,
            // An acknowledgement is a person's, signed by a key: what it accepted
            // and what spending it carried over.
            Some(b) if b.acknowledges.is_some() => crate::output::line(format_args!(
                "{:>6}  {}  {}  acknowledged the log (its kept checkpoint {}){}{}",
                e.seq,
                format_time(b.time),
                b.key,
                b.acknowledges.unwrap_or(Checkpoint::EMPTY),
                if b.carried.is_empty() {
                    String::new()
                } else {
                    format!(
                        ", carrying {} spending sum(s) of entries it lost",
                        b.carried.len()
                    )
                },
                if b.watermarks.is_empty() {
                    String::new()
                } else {
                    format!(", and {} watermark(s)", b.watermarks.len())
                }
            ))?,
            Some(b) => crate::output::line(format_args!(
                "{:>6}  {}  {}  chain {} nonce {}  {} {}  {}{}",
                e.seq,
                format_time(b.time),
                b.key,
                b.chain_id,
                b.nonce,
                b.function.as_deref().unwrap_or("(unknown call)"),
                match (&b.amount, &b.token) {
                    (Some(a), t) => crate::output::token_units(&tokens, b.chain_id, b.to, *a)
                        .unwrap_or_else(|| match t {
                            Some(t) => format!("{a} base units of {}", untrusted(t)),
                            None => format!("{a} base units"),
                        }),
                    _ => String::new(),
                },
                b.tx_hash,
                b.replaces
                    .map(|r| format!(" (replaces {r})"))
                    .unwrap_or_default()
            ))?,
            None => crate::output::line(format_args!(
                "{:>6}  (unreadable entry: run `bridgectl log verify`)",
                e.seq
            ))?,
        }
    }
    Ok(())
}

/// `log export`: every entry as a JSON line.
fn export(log: &SigningLogDb, args: ExportArgs) -> anyhow::Result<()> {
    let mut text = Vec::new();
    let mut failed = None;
    log.each(|entry, _| {
        if failed.is_none() {
            match serde_json::to_writer(&mut text, &entry) {
                Ok(()) => text.push(b'\n'),
                Err(e) => failed = Some(e),
            }
        }
    })?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    match &args.out {
        Some(path) => {
            crate::files::write_new(path, &text)?;
            crate::output::note(format_args!("exported -> {}", path.display()));
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(&text)?;
            out.flush()?;
        }
    }
    Ok(())
}

fn format_time(t: u64) -> String {
    i64::try_from(t)
        .ok()
        .and_then(|t| time::OffsetDateTime::from_unix_timestamp(t).ok())
        .and_then(|d| {
            d.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| t.to_string())
}

fn parse_since(text: &str) -> anyhow::Result<u64> {
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(secs);
    }
    if let Ok(w) = text.parse::<bridgectl_tx::limits::Window>() {
        return Ok(bridgectl_tx::signing_log::unix_now().saturating_sub(w.0));
    }
    // The parse error once: it prints its cause and also returns it as its source.
    let d = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .map_err(|e| {
            coded(
                Code::Usage,
                format!(
                    "--since {text:?}: expected RFC 3339, Unix seconds or a duration (`24h`): {e}"
                ),
            )
        })?;
    Ok(u64::try_from(d.unix_timestamp()).unwrap_or_default())
}
