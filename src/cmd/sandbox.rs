//! `bridgectl sandbox`: runs the platform locally over two anvil chains until Ctrl-C.
//!
//! The sandbox's own TOML (actions, ratio, decimals, faults, block time) is given with
//! `--sandbox-config`, because the global `--config` already names the CLI's profile file.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use bridgectl_sandbox::{Sandbox, SandboxConfig, SandboxInfo};
use clap::Args;
use serde_json::json;

use crate::global::GlobalOpts;
use crate::output;

// Arguments of `bridgectl sandbox`.
#[derive(Debug, Args)]
pub struct SandboxArgs {
    /// Sandbox settings in TOML (actions, ratio, decimals, faults, block time...): every
    /// key is optional, and a key not given keeps its default (a section given in part
    /// too). See crates/sandbox/README.md.
    #[arg(
        long,
        env = "BRIDGECTL_SANDBOX_CONFIG",
        hide_env_values = true,
        value_name = "FILE"
    )]
    pub sandbox_config: Option<PathBuf>,

    /// Write a ready CLI profile `[profiles.sandbox]` for this sandbox to FILE (mode
    /// 0600; the token goes to FILE.token, named by `token_file`). A file an earlier
    /// `--write-profile` wrote is updated with this sandbox's settings, keeping what you
    /// added (limits, caps, comments, other profiles); any other file is never touched.
    #[arg(long, value_name = "FILE")]
    pub write_profile: Option<PathBuf>,

    /// Do not start one: show the sandbox running on this account (its URLs, token, dev
    /// account), as it printed them when it started.
    #[arg(long, conflicts_with_all = ["sandbox_config", "write_profile"])]
    pub show: bool,

    /// Do not start one: reorganise a chain of the sandbox running on this account (the
    /// newest), `main:N` or `side:N`: its newest N blocks are replaced by as many empty
    /// ones, and the transactions in them are gone, as a real reorganisation takes them
    /// back (`POST /sandbox/v1/chains/{chain}/reorg`).
    #[arg(
        long,
        value_name = "CHAIN:DEPTH",
        conflicts_with_all = ["sandbox_config", "write_profile", "show"]
    )]
    pub reorg: Option<String>,

    /// Where the profile it writes keeps the journal and the signing log: `sqlite` (this
    /// machine's files, the default) or `postgres` (a PostgreSQL server of its own, the
    /// pinned one from `make tools`, on 127.0.0.1, stopped with it): the shared state of
    /// several signer hosts, tried on one machine. Its URL is the profile's `state_url`.
    #[arg(long, value_enum, default_value_t = StateBackend::Sqlite)]
    pub state: StateBackend,
}

/// Where a sandbox's profile keeps the shared state (`--state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StateBackend {
    /// This machine's SQLite files.
    Sqlite,
    /// A PostgreSQL server of the sandbox's own.
    Postgres,
}

/// Where a running sandbox leaves what it printed, for `--show` (0600, removed when it
/// stops): one file per process, so that one sandbox stopping leaves what another
/// running one wrote.
fn running_file(pid: u32) -> anyhow::Result<PathBuf> {
    crate::paths::state_file(None, &format!("sandbox-running-{pid}.json"))
}

/// What the sandboxes still running wrote, oldest first. A file whose process is gone
/// (killed before it could remove it) is removed.
fn running() -> anyhow::Result<Vec<serde_json::Value>> {
    let dir = crate::paths::state_dir()?;
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("sandbox-running-"))
            .and_then(|n| n.strip_suffix(".json"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_file(&path);
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let state: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not what a sandbox wrote", path.display()))?;
        if state["pid"].as_u64() == Some(u64::from(pid)) {
            found.push(state);
        }
    }
    found.sort_by_key(|s| s["startedAt"].as_u64().unwrap_or(0));
    Ok(found)
}

/// `--show`: what the running sandboxes printed (`--json`: the newest one's info).
fn show(global: &GlobalOpts) -> anyhow::Result<()> {
    let all = running()?;
    let Some(newest) = all.last() else {
        return Err(crate::exit::coded(
            crate::exit::Code::NotFound,
            "no sandbox is running on this account: start one with `bridgectl sandbox \
             --write-profile sandbox.toml`",
        ));
    };
    if all.len() > 1 {
        output::note(format!(
            "{} sandboxes are running (pids {}){}",
            all.len(),
            all.iter()
                .map(|s| s["pid"].to_string())
                .collect::<Vec<_>>()
                .join(", "),
            if global.json {
                "; the newest is shown"
            } else {
                ""
            }
        ));
    }
    if global.json {
        return output::json(&newest["info"]);
    }
    for (i, state) in all.iter().enumerate() {
        if i > 0 {
            output::line("")?;
        }
        if all.len() > 1 {
            output::line(format!("pid {}:", state["pid"]))?;
        }
        for line in state["text"].as_array().into_iter().flatten() {
            output::line(line.as_str().unwrap_or_default())?;
        }
    }
    Ok(())
}

/// `--reorg CHAIN:DEPTH`: the newest running sandbox reorganises that chain.
fn reorg(global: &GlobalOpts, what: &str) -> anyhow::Result<()> {
    let usage = || {
        crate::exit::coded(
            crate::exit::Code::Usage,
            format!("--reorg {what:?}: give CHAIN:DEPTH, `main:2` or `side:1`"),
        )
    };
    let (chain, depth) = what.split_once(':').ok_or_else(usage)?;
    let depth: u64 = depth.parse().map_err(|_| usage())?;
    if !matches!(chain, "main" | "side") {
        return Err(usage());
    }
    let all = running()?;
    let Some(newest) = all.last() else {
        return Err(crate::exit::coded(
            crate::exit::Code::NotFound,
            "no sandbox is running on this account: start one with `bridgectl sandbox`",
        ));
    };
    let base = newest["info"]["baseUrl"].as_str().unwrap_or_default();
    let token = newest["info"]["token"].as_str().unwrap_or_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let answer: serde_json::Value = runtime.block_on(async {
        let response = reqwest::Client::new()
            .post(format!("{base}/sandbox/v1/chains/{chain}/reorg"))
            .bearer_auth(token)
            .json(&json!({ "depth": depth }))
            .send()
            .await
            .context("the sandbox did not answer")?;
        response
            .json::<serde_json::Value>()
            .await
            .context("the sandbox's answer is not JSON")
    })?;
    if answer["result"] != json!(true) {
        return Err(crate::exit::coded(
            crate::exit::Code::Usage,
            format!(
                "the sandbox refused: {}",
                bridgectl_flow::tx::text::printable(answer["message"].as_str().unwrap_or("?"))
            ),
        ));
    }
    let data = &answer["data"];
    if global.json {
        return output::json(data);
    }
    output::line(format!(
        "{chain} chain reorganised {depth} deep: head {} -> {}",
        data["head"], data["headAfter"]
    ))
}

/// Runs the sandbox until Ctrl-C.
pub fn run(global: &GlobalOpts, args: SandboxArgs) -> anyhow::Result<()> {
    if args.show {
        return show(global);
    }
    if let Some(what) = &args.reorg {
        return reorg(global, what);
    }
    let config = match &args.sandbox_config {
        // As for the CLI's own config: a file that is not there is not found, one that
        // does not parse or holds a value refused is a usage error.
        Some(path) => SandboxConfig::from_file(path).map_err(|e| {
            let code = match &e {
                bridgectl_sandbox::Error::ReadConfig { source, .. }
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    crate::exit::Code::NotFound
                }
                bridgectl_sandbox::Error::ParseConfig { .. }
                | bridgectl_sandbox::Error::Config(_) => crate::exit::Code::Usage,
                _ => crate::exit::Code::Failure,
            };
            anyhow::Error::new(crate::exit::Coded {
                code,
                error: e.into(),
            })
        })?,
        None => SandboxConfig::default(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // block_on runs on this (the main) thread, which spawns the anvils (and the
    // PostgreSQL server): they die with it.
    runtime.block_on(async {
        let started = Instant::now();
        let state = match args.state {
            StateBackend::Sqlite => None,
            StateBackend::Postgres => Some(SandboxState::start()?),
        };
        let state_url = state.as_ref().map(|s| s.server.url());
        output::note("starting the sandbox: two anvil chains, contracts, relayer, API...");
        let sandbox = Sandbox::start(config)
            .await
            .context("the sandbox did not start")?;
        let ready_ms = started.elapsed().as_millis();
        // Listen for Ctrl-C and SIGTERM before telling anyone the sandbox is ready: a
        // signal that arrives right after the announcement must stop it cleanly, not
        // kill the process with the default action.
        let stop = crate::shutdown::on_signal()?;
        let info = sandbox.info().clone();
        if let Some(path) = &args.write_profile {
            write_profile(path, &info, state_url.as_deref())?;
        }
        let mut text = text_lines(&info, ready_ms);
        let mut shown = info_json(&info, ready_ms);
        if let Some(url) = &state_url {
            text.push(format!(
                "state url:     {url} (journal and signing log, shared by every host)"
            ));
            shown["stateUrl"] = json!(url);
        }
        let running = running_file(std::process::id())?;
        let started_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let record = json!({"pid": std::process::id(), "info": shown,
                            "text": text, "startedAt": started_at});
        crate::files::write_replace(&running, record.to_string().as_bytes())?;
        if global.json {
            output::json(&shown)?;
        } else {
            for l in &text {
                output::line(l)?;
            }
        }
        stop.await;
        let _ = std::fs::remove_file(&running);
        output::note("stopping the sandbox...");
        sandbox.shutdown().await.context("stopping the sandbox")?;
        drop(state);
        output::note("stopped; no anvil left running");
        Ok(())
    })
}

/// The PostgreSQL server of a sandbox started with `--state postgres`, and its data dir
/// in the state dir (one per process; removed when it stops).
struct SandboxState {
    server: bridgectl_sandbox::postgres::PostgresServer,
    dir: PathBuf,
}

impl SandboxState {
    fn start() -> anyhow::Result<SandboxState> {
        output::note("starting its PostgreSQL server (--state postgres)...");
        let dir =
            crate::paths::state_file(None, &format!("sandbox-postgres-{}", std::process::id()))?;
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).with_context(|| format!("cannot make {}", dir.display()))?;
        let server = bridgectl_sandbox::postgres::PostgresServer::start(&dir)
            .context("the sandbox's PostgreSQL server did not start")?;
        Ok(SandboxState { server, dir })
    }
}

impl Drop for SandboxState {
    fn drop(&mut self) {
        self.server.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn info_json(info: &SandboxInfo, ready_ms: u128) -> serde_json::Value {
    let chain = |c: &bridgectl_sandbox::ChainInfo| {
        json!({
            "environmentId": c.environment_id,
            "chainId": c.chain_id,
            "rpcUrl": c.rpc_url,
            "symbol": c.symbol,
            "decimals": c.decimals,
            "tokenAddress": c.token_address,
            "confirmations": c.confirmations,
        })
    };
    json!({
        "baseUrl": info.base_url,
        "web3Url": info.web3_url,
        "token": info.token.expose_secret(),
        "accessKey": info.access_key,
        "main": chain(&info.main),
        "side": chain(&info.side),
        "ratio": info.ratio,
        "bridgeAddress": info.bridge_address,
        "devAccount": {
            "address": info.dev.address,
            "privateKey": info.dev.private_key.expose_secret(),
        },
        "managedAccounts": info.managed_accounts,
        "readyMs": ready_ms,
    })
}

fn text_lines(info: &SandboxInfo, ready_ms: u128) -> Vec<String> {
    let mut lines = vec![
        format!("sandbox ready in {ready_ms} ms (Ctrl-C stops it)"),
        format!("base url:      {}", info.base_url),
        format!("web3 url:      {}", info.web3_url),
        format!("token:         {}", info.token.expose_secret()),
    ];
    for (name, c) in [("main", &info.main), ("side", &info.side)] {
        lines.push(format!(
            "{name}:          env {} chain {} rpc {} token {} {} ({} decimals)",
            c.environment_id, c.chain_id, c.rpc_url, c.symbol, c.token_address, c.decimals
        ));
    }
    lines.push(format!(
        "ratio:         {} MT = {} ST",
        info.ratio.mt, info.ratio.st
    ));
    lines.push(format!(
        "dev account:   {} (funded, fee-delegation registered)",
        info.dev.address
    ));
    lines.push(format!(
        "dev key:       {} (anvil's public test key #1: never use it for real funds)",
        info.dev.private_key.expose_secret()
    ));
    for a in &info.managed_accounts {
        lines.push(format!("managed:       {a}"));
    }
    lines
}

/// The first words of a profile this command writes: how a later run knows it may
/// replace it.
const WRITTEN_BY: &str = "# Written by `bridgectl sandbox`";

fn write_profile(
    path: &std::path::Path,
    info: &SandboxInfo,
    state_url: Option<&str>,
) -> anyhow::Result<()> {
    // Absolute, so the profile works from any directory.
    let path =
        &std::path::absolute(path).with_context(|| format!("cannot resolve {}", path.display()))?;
    let token_path = PathBuf::from(format!("{}.token", path.display()));
    let profile = crate::config::Profile {
        base_url: Some(info.base_url.clone()),
        web3_url: Some(info.web3_url.clone()),
        main_environment_id: Some(info.main.environment_id.clone()),
        side_environment_id: Some(info.side.environment_id.clone()),
        main_symbol: Some(info.main.symbol.clone()),
        side_symbol: Some(info.side.symbol.clone()),
        main_decimals: Some(info.main.decimals),
        side_decimals: Some(info.side.decimals),
        mt_contract: Some(info.main.token_address),
        st_contract: Some(info.side.token_address),
        main_chain_id: Some(info.main.chain_id),
        side_chain_id: Some(info.side.chain_id),
        main_rpc_url: Some(info.main.rpc_url.clone()),
        side_rpc_url: Some(info.side.rpc_url.clone()),
        // Final after a few blocks: the sandbox's chains mine on a timer, so facts get
        // deeper on their own (a real chain's would be `finalized`, or far deeper).
        main_finality: Some(bridgectl_flow::Finality::Confirmations(
            info.main.confirmations,
        )),
        side_finality: Some(bridgectl_flow::Finality::Confirmations(
            info.side.confirmations,
        )),
        redeem_action: Some("redeem".into()),
        peg_ratio: Some(bridgectl_flow::PegRatio {
            mt: info.ratio.mt,
            st: info.ratio.st,
        }),
        credit_source: Some(alloy_primitives::Address::ZERO),
        token_file: Some(token_path.clone()),
        // The sandbox's web3 API takes the platform token and answers for any supported
        // chain and network: with these, `webhook` commands need no flags.
        web3_token_file: Some(token_path.clone()),
        web3_chain: Some("ethereum".into()),
        web3_network: Some("mainnet".into()),
        access_key: Some(info.access_key.clone()),
        state_url: state_url.map(str::to_owned),
        chains: [
            (info.main.chain_id.to_string(), "sandbox main".to_string()),
            (info.side.chain_id.to_string(), "sandbox side".to_string()),
        ]
        .into(),
        ..Default::default()
    };
    let profile = format!(
        "{WRITTEN_BY} for {}; valid while it runs.\n{}",
        info.base_url,
        crate::config::render_profile("sandbox", &profile)?
    );
    // A profile this command wrote for an earlier sandbox is updated (its settings were
    // valid only while that one ran), keeping what a person added to it (limits, caps,
    // comments, other profiles); any other file is never touched.
    let text = match std::fs::read_to_string(path) {
        Ok(existing) if !existing.starts_with(WRITTEN_BY) => {
            return Err(crate::exit::coded(
                crate::exit::Code::Exists,
                format!(
                    "{} exists and was not written by `bridgectl sandbox`: refusing to \
                     overwrite it; choose another path",
                    path.display()
                ),
            ));
        }
        Ok(existing) => merge_profile(&existing, &profile).with_context(|| {
            format!(
                "{} was written by `bridgectl sandbox` but no longer reads as TOML: fix or \
                 remove it",
                path.display()
            )
        })?,
        Err(_) => profile,
    };
    crate::files::write_replace(
        &token_path,
        (info.token.expose_secret().to_owned() + "\n").as_bytes(),
    )?;
    crate::files::write_replace(path, text.as_bytes())?;
    output::note(format!("profile written to {}", path.display()));
    Ok(())
}

/// `ours` (a fresh profile) over `existing` (one written for an earlier sandbox, maybe
/// edited since): every setting of ours replaces the one of the same name, every other
/// line (a person's limits, caps, comments, other profiles) stays as it was; the first
/// line, which names the sandbox, is ours.
fn merge_profile(existing: &str, ours: &str) -> anyhow::Result<String> {
    fn overlay(into: &mut toml_edit::Table, from: &toml_edit::Table) {
        for (key, item) in from.iter() {
            match (into.get_mut(key), item) {
                (Some(toml_edit::Item::Table(mine)), toml_edit::Item::Table(theirs)) => {
                    overlay(mine, theirs);
                }
                (Some(slot), _) => {
                    // Keep the line's comments and spacing, change its value.
                    if let (Some(old), Some(new)) = (slot.as_value_mut(), item.as_value()) {
                        let decor = old.decor().clone();
                        *old = new.clone();
                        *old.decor_mut() = decor;
                    } else {
                        *slot = item.clone();
                    }
                }
                (None, _) => {
                    into.insert(key, item.clone());
                }
            }
        }
    }
    let (first, rest) = ours.split_once('\n').unwrap_or((ours, ""));
    let mut doc: toml_edit::DocumentMut = existing.parse()?;
    let fresh: toml_edit::DocumentMut = rest.parse()?;
    overlay(doc.as_table_mut(), fresh.as_table());
    let merged = doc.to_string();
    // Our first line names the sandbox the profile is for: replace the old one.
    let body = merged
        .split_once('\n')
        .filter(|(line, _)| line.starts_with(WRITTEN_BY))
        .map_or(merged.as_str(), |(_, body)| body);
    Ok(format!("{first}\n{body}"))
}

#[cfg(test)]
mod tests {
    use super::{WRITTEN_BY, merge_profile};

    /// A later sandbox's profile updates our settings and keeps every line a person
    /// added: a limit, a comment, a setting of ours they changed the comment of, another
    /// profile.
    #[test]
    fn a_rewritten_profile_keeps_what_a_person_added() {
        let old = format!(
            "{WRITTEN_BY} for http://127.0.0.1:1; valid while it runs.\n\
             [profiles.sandbox]\n\
             base_url = \"http://127.0.0.1:1\" # the first one\n\
             side_chain_id = 31338\n\n\
             [profiles.sandbox.chains]\n\
             31337 = \"sandbox main\"\n\n\
             # my own caps\n\
             [profiles.sandbox.policy]\n\
             max-gas-price = 50000000000\n\n\
             [profiles.prod]\n\
             base_url = \"https://platform.example\"\n"
        );
        let ours = format!(
            "{WRITTEN_BY} for http://127.0.0.1:2; valid while it runs.\n\
             [profiles.sandbox]\n\
             base_url = \"http://127.0.0.1:2\"\n\
             side_chain_id = 31338\n\
             redeem_action = \"redeem\"\n\n\
             [profiles.sandbox.chains]\n\
             31337 = \"sandbox main\"\n\
             31338 = \"sandbox side\"\n"
        );
        let merged = merge_profile(&old, &ours).expect("merge");
        assert!(
            merged.starts_with(&format!("{WRITTEN_BY} for http://127.0.0.1:2;")),
            "{merged}"
        );
        assert_eq!(merged.matches(WRITTEN_BY).count(), 1, "{merged}");
        for kept in [
            "base_url = \"http://127.0.0.1:2\" # the first one",
            "# my own caps\n[profiles.sandbox.policy]\nmax-gas-price = 50000000000",
            "[profiles.prod]\nbase_url = \"https://platform.example\"",
            "redeem_action = \"redeem\"",
            "31338 = \"sandbox side\"",
        ] {
            assert!(merged.contains(kept), "{kept:?} not in:\n{merged}");
        }
        assert!(!merged.contains("127.0.0.1:1"), "{merged}");
        // What it wrote reads as the CLI's config.
        let file: crate::config::ConfigFile = toml::from_str(&merged).expect("config");
        assert!(file.profiles.contains_key("prod"));
    }
}
