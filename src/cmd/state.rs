//! `bridgectl state migrate --to postgres://…`: a machine's state (its journal and its
//! keystore's signing log, both SQLite files) copied into the PostgreSQL database that
//! several signer hosts share (`BRIDGECTL_STATE_URL`). The signing log's entries are
//! copied as they are, so their chain and their signatures hold there (`log verify`), and
//! every nonce they signed stays signed; this host's checkpoint of the shared log starts
//! where the file's was. A target that holds a history of its own is refused (exit 3):
//! the journal is copied into an empty one only, and the log into one that holds none
//! but its own first entries (a copy made before, run again). Nothing needs a key.

use clap::{Args, Subcommand};
use serde_json::json;

use crate::exit::{Code, WithCode, coded};
use crate::global::GlobalOpts;
use crate::opts::JournalOpt;

/// `bridgectl state ...`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum StateCommand {
    /// Copy this machine's journal and signing log into the PostgreSQL database that
    /// several signer hosts share, keeping the signing log's chain.
    Migrate(MigrateArgs),
}

// Arguments of `bridgectl state migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The shared database (`postgres://user@host:port/db`; a password is better given
    /// by PGPASSWORD-style means than in the shell's history).
    #[arg(long, value_name = "URL")]
    pub to: String,
    /// The journal copied [default: this machine's file].
    #[command(flatten)]
    pub journal: JournalOpt,
}

/// Runs `bridgectl state`.
pub fn run(global: &GlobalOpts, cmd: StateCommand) -> anyhow::Result<()> {
    match cmd {
        StateCommand::Migrate(args) => migrate(global, args),
    }
}

fn migrate(global: &GlobalOpts, args: MigrateArgs) -> anyhow::Result<()> {
    if !bridgectl_store::is_postgres_url(&args.to) {
        return Err(coded(
            Code::Usage,
            "--to: not a postgres:// or postgresql:// URL",
        ));
    }
    let shared = bridgectl_store::Location::Postgres(args.to.clone());
    let file = crate::paths::journal(args.journal.journal.as_deref())?;
    if !file.exists() {
        return Err(coded(
            Code::NotFound,
            format!("no journal at {}: nothing to migrate", file.display()),
        ));
    }
    let keystore = crate::session::open_keystore(global)?;
    let signers = keystore.signers()?;
    // The log first: it is what the guards rest on, and a conflict there stops both.
    let log = bridgectl_signing_log::SigningLogDb::open_in(keystore.dir(), signers.clone())?;
    let target_log = bridgectl_signing_log::SigningLogDb::open_at(shared.clone(), keystore.dir())?
        .with_known_keys(signers);
    let copied_log = match log.copy_into(&target_log) {
        Err(
            e @ (bridgectl_signing_log::Error::Conflict { .. }
            | bridgectl_signing_log::Error::Broken { .. }),
        ) => return Err(anyhow::Error::new(e)).code(Code::Refused),
        other => other?,
    };
    let journal = bridgectl_flow::Journal::open_at(bridgectl_store::Location::File(file.clone()))?;
    let target_journal = bridgectl_flow::Journal::open_at(shared.clone())?;
    let tables = journal.copy_into(&target_journal)?;
    let rows: usize = tables.iter().map(|(_, n)| n).sum();
    let flows = tables
        .iter()
        .find(|(t, _)| *t == "flows")
        .map_or(0, |(_, n)| *n);
    if global.json {
        return crate::output::json(&json!({
            "to": shared.to_string(),
            "journal": {
                "from": file.display().to_string(),
                "flows": flows,
                "rows": rows,
            },
            "signingLog": {
                "from": log.location().to_string(),
                "present": copied_log.present,
                "entries": copied_log.entries,
                "creditClaims": copied_log.credit_claims,
            },
        }));
    }
    crate::output::line(format_args!(
        "migrated to {shared}: journal {} ({flows} flows, {rows} rows); signing log {} \
         ({} entries copied, {} there already, {} credit claims)",
        file.display(),
        log.location(),
        copied_log.entries,
        copied_log.present,
        copied_log.credit_claims
    ))
}
