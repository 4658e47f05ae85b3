//! Shell completion of the names the journal and the config file hold: flows (their
//! txIds, or the hashes they signed once `0x` is typed), batches, profiles and chain
//! ids. Like the key labels (`accounts::key_labels`), each is read when the shell asks
//! (`COMPLETE=SHELL bridgectl -- ...`), from the files the environment names
//! (`BRIDGECTL_JOURNAL`, `BRIDGECTL_CONFIG`) or the default paths: a completer does not
//! see a `--journal` or `--config` typed on the same line. Nothing is created (a
//! journal that is not there offers nothing), nothing is unlocked, and a file that
//! cannot be read offers nothing rather than an error in the middle of a command line.

use std::collections::BTreeMap;

use bridgectl_flow::Journal;
use bridgectl_flow::profile::ConfigFile;
use clap_complete::engine::{ArgValueCompleter, CompletionCandidate};

/// How many flows and batches are offered at most, the newest of those that start with
/// what is typed (found by the journal among all of them): a completion must answer at
/// once, and a shell shows no more.
const NEWEST: usize = 200;

/// The journal the environment or the default path names, when it exists.
fn journal() -> Option<Journal> {
    let explicit = std::env::var_os("BRIDGECTL_JOURNAL").map(std::path::PathBuf::from);
    let path = crate::paths::journal(explicit.as_deref()).ok()?;
    path.is_file().then(|| Journal::open(&path).ok()).flatten()
}

/// The config file the environment or the default path names, read, when it parses: by
/// the library's reader, as `config::load_file` reads it, but not through `config`,
/// whose loader takes the parsed command line (`GlobalOpts`, which names these
/// completers), and a completer runs before there is one.
fn config() -> Option<ConfigFile> {
    let path = std::env::var_os("BRIDGECTL_CONFIG")
        .map(std::path::PathBuf::from)
        .or_else(crate::paths::config_file)?;
    ConfigFile::read(&path).ok()
}

/// What is typed, as text.
fn typed(current: &std::ffi::OsStr) -> String {
    current.to_string_lossy().into_owned()
}

/// A flow's name (`resume`, `status`, `replace`, `cancel`, `history`): the txIds that
/// start with what is typed (the newest of them, found among all the journal's flows),
/// each with its kind, state and start; once `0x` is typed, the hashes of their signed
/// transactions instead.
pub fn flow_ids() -> ArgValueCompleter {
    ArgValueCompleter::new(|current: &std::ffi::OsStr| {
        let typed = typed(current);
        let Some(flows) = journal().and_then(|j| j.list_prefixed(&typed, NEWEST).ok()) else {
            return Vec::new();
        };
        flows
            .into_iter()
            .filter_map(|f| {
                let name = if typed.starts_with("0x") {
                    f.tx_hash.clone()?
                } else {
                    f.tx_id.clone()
                };
                let help = format!("{} {} {}", f.kind, f.state.as_str(), f.created_at);
                Some(CompletionCandidate::new(name).help(Some(help.into())))
            })
            .collect()
    })
}

/// A batch's id (`batch resume`, `batch status`): the ids that start with what is typed
/// (the newest of them, found among all the journal's batches), each with its file and
/// size.
pub fn batch_ids() -> ArgValueCompleter {
    ArgValueCompleter::new(|current: &std::ffi::OsStr| {
        let typed = typed(current);
        let Some(batches) = journal().and_then(|j| j.list_batches_prefixed(&typed, NEWEST).ok())
        else {
            return Vec::new();
        };
        batches
            .into_iter()
            .map(|b| {
                let help = format!("{} ({} items) {}", b.source, b.items, b.created_at);
                CompletionCandidate::new(b.batch_id).help(Some(help.into()))
            })
            .collect()
    })
}

/// A profile's name (`--profile`): the profiles of the config file.
pub fn profiles() -> ArgValueCompleter {
    ArgValueCompleter::new(|current: &std::ffi::OsStr| {
        let typed = typed(current);
        let Some(file) = config() else {
            return Vec::new();
        };
        file.profiles
            .into_iter()
            .filter(|(name, _)| name.starts_with(&typed))
            .map(|(name, p)| {
                let help = p.base_url.unwrap_or_default();
                CompletionCandidate::new(name).help((!help.is_empty()).then(|| help.into()))
            })
            .collect()
    })
}

/// A chain id (`journal reset-chain`, `--expect-chain-id`): those the config's profiles
/// name (their main and side chains, their `[chains]` names) and those the journal's
/// newest flows were on, each with what names it.
pub fn chain_ids() -> ArgValueCompleter {
    ArgValueCompleter::new(|current: &std::ffi::OsStr| {
        let typed = typed(current);
        let mut found: BTreeMap<u64, Vec<String>> = BTreeMap::new();
        let mut named = |id: u64, by: String| {
            let names = found.entry(id).or_default();
            if !names.contains(&by) {
                names.push(by);
            }
        };
        for (profile, p) in config().map(|c| c.profiles).unwrap_or_default() {
            for (id, which) in [(p.main_chain_id, "main"), (p.side_chain_id, "side")] {
                if let Some(id) = id {
                    named(id, format!("{profile}'s {which} chain"));
                }
            }
            for (id, name) in &p.chains {
                if let Ok(id) = id.parse() {
                    named(id, name.clone());
                }
            }
        }
        for f in journal()
            .and_then(|j| j.list(NEWEST).ok())
            .unwrap_or_default()
        {
            if let Some(id) = f.chain_id {
                named(id, "flows in the journal".into());
            }
        }
        found
            .into_iter()
            .map(|(id, names)| (id.to_string(), names))
            .filter(|(id, _)| id.starts_with(&typed))
            .map(|(id, names)| CompletionCandidate::new(id).help(Some(names.join(", ").into())))
            .collect()
    })
}
