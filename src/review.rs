//! What the person sees and says before a key is unlocked: the summary of the
//! transaction on stderr, then a confirmation (skipped by `--yes`; refused when there is
//! no terminal to ask on). Shared by `sign` and every online flow.

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal, Write};

use alloy_primitives::Address;
use bridgectl_tx::RawTx;
use bridgectl_tx::request::Intent;
use bridgectl_tx::summary::{Context, Summary};

use crate::config::Profile;
use crate::exit::{Code, coded};

/// The summary context from the profile and the intent.
pub fn context(profile: &Profile, chain_id: u64, intent: Option<&Intent>) -> Context {
    let mut labels: BTreeMap<Address, String> = profile
        .labels
        .iter()
        .filter_map(|(k, v)| k.parse::<Address>().ok().map(|a| (a, v.clone())))
        .collect();
    // The contract the intent names is labelled by its token, unless the config says
    // otherwise: labels are per address, and the same address can be a different
    // contract on another chain.
    if let Some((to, token)) = intent.and_then(|i| Some((i.to?, i.token.as_ref()?))) {
        labels
            .entry(to)
            .or_insert_with(|| format!("{} token", token.symbol));
    }
    Context {
        chain_name: profile.chain_name(chain_id).map(str::to_owned),
        native_symbol: None,
        labels,
        token: intent.and_then(|i| i.token.clone()),
        max_fee: profile.policy.max_fee,
        description: intent.and_then(|i| i.description.clone()),
    }
}

/// Prints the summary of `tx` on stderr.
pub fn show(tx: &RawTx, ctx: &Context) -> Summary {
    let summary = Summary::new(tx, ctx);
    crate::output::note(format_args!("{summary}"));
    summary
}

/// Asks "sign this?" on the terminal unless `yes`. No terminal and no `--yes` is a
/// refusal, never a silent yes.
pub fn confirm(yes: bool, question: &str) -> anyhow::Result<()> {
    if yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        return Err(coded(
            Code::Declined,
            "not confirmed: stdin is not a terminal to ask on; pass --yes to sign without asking",
        ));
    }
    let mut err = std::io::stderr().lock();
    write!(err, "{question} [y/N] ")?;
    err.flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    if matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
        Ok(())
    } else {
        Err(coded(Code::Declined, "declined at the confirmation prompt"))
    }
}
