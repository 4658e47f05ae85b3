//! What the person sees and says before a key is unlocked: the summary of the
//! transaction on stderr, then a confirmation on the terminal (skipped by `--yes`;
//! refused when there is no terminal to ask on). Shared by `sign` and every online flow.
//!
//! The question is asked on `/dev/tty`, not stdin: `bridgectl sign - < request.json`
//! reads the request from stdin and can still be confirmed by the person at the
//! terminal.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};

use alloy_primitives::Address;
use bridgectl_tx::summary::{Summary, SummaryContext};
use bridgectl_tx::{RawTx, Verified};

use crate::config::Profile;
use crate::exit::{Code, coded};

/// The summary context: the verified transaction's trusted facts (chain name, token,
/// the callee's label) and the profile's address labels.
pub fn context(profile: &Profile, verified: &Verified) -> SummaryContext {
    let mut ctx = verified.summary_context();
    if ctx.chain_name.is_none() {
        ctx.chain_name = profile
            .chain_name(verified.raw_tx().chain_id)
            .map(str::to_owned);
    }
    let labels: BTreeMap<Address, String> = profile
        .labels
        .iter()
        .filter_map(|(k, v)| k.parse::<Address>().ok().map(|a| (a, v.clone())))
        .collect();
    // The profile's own labels win over the generated "ST token".
    ctx.labels.extend(labels);
    ctx
}

/// Prints the summary of `tx` on stderr.
pub fn show(tx: &RawTx, ctx: &SummaryContext) -> Summary {
    let summary = Summary::new(tx, ctx);
    crate::output::note(format_args!("{summary}"));
    summary
}

/// The controlling terminal, for questions: whatever stdin is.
pub fn terminal() -> Option<std::fs::File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .ok()
}

/// Asks "sign this?" on the terminal unless `yes`. No terminal and no `--yes` is a
/// refusal, never a silent yes.
pub fn confirm(yes: bool, question: &str) -> anyhow::Result<()> {
    if yes {
        return Ok(());
    }
    let Some(tty) = terminal() else {
        return Err(coded(
            Code::Declined,
            "not confirmed: there is no terminal to ask on; pass --yes to sign without asking",
        ));
    };
    let mut out = &tty;
    write!(out, "{question} [y/N] ")?;
    out.flush()?;
    let mut answer = String::new();
    BufReader::new(&tty).read_line(&mut answer)?;
    if matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
        Ok(())
    } else {
        Err(coded(Code::Declined, "declined at the confirmation prompt"))
    }
}
