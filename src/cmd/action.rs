//! `bridgectl action exec NAME --from A --input k=v ...`: executes a transaction action.
//! For an EOA the returned raw transaction is checked against the inputs (and
//! `--function`), then signed and submitted, or written as a sign request for the air
//! gap with `--out`; for a managed account the platform's txId and hash are shown; for
//! a view function, its value.

use std::collections::BTreeMap;
use std::path::PathBuf;

use alloy_primitives::Address;
use bridgectl_flow::action::{ActionCall, ActionOutcome};
use bridgectl_flow::engine::{Flows, Submitter};
use bridgectl_flow::journal::FlowState;
use bridgectl_tx::request::{Intent, Origin, SignRequest};
use clap::{Args, Subcommand};
use serde_json::json;

use crate::cli::GlobalOpts;
use crate::exit::{Code, coded};
use crate::session::{FlowOpts, Session, StderrProgress};

/// Transaction-action commands.
#[derive(Debug, Subcommand)]
pub enum ActionCommand {
    /// Execute a transaction action.
    Exec(ExecArgs),
}

/// Arguments of `bridgectl action exec`.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The action name (the last path segment of the action's URL).
    pub name: String,
    /// The executing account: an address or a key label.
    #[arg(long)]
    pub from: String,
    /// An input of the function, `name=value` (decimal base units or an address);
    /// repeat for each parameter.
    #[arg(long = "input", value_name = "NAME=VALUE")]
    pub inputs: Vec<String>,
    /// The function the action is mapped to (`redeem`, `transfer`, ...): the returned
    /// calldata must call it.
    #[arg(long)]
    pub function: Option<String>,
    /// The contract the transaction must go to [default: the profile's st_contract].
    #[arg(long)]
    pub expect_to: Option<Address>,
    /// The chain the transaction must be for [default: the profile's side_chain_id].
    #[arg(long)]
    pub expect_chain_id: Option<u64>,
    /// Do not sign here: write a sign request for `bridgectl sign` on an offline machine.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Shared options.
    #[command(flatten)]
    pub flow: FlowOpts,
}

/// Runs an action command.
pub fn run(global: &GlobalOpts, cmd: ActionCommand) -> anyhow::Result<()> {
    match cmd {
        ActionCommand::Exec(args) => exec(global, args),
    }
}

fn parse_inputs(inputs: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    let mut map = BTreeMap::new();
    for item in inputs {
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("--input {item:?}: expected NAME=VALUE"))?;
        if map.insert(k.to_owned(), v.to_owned()).is_some() {
            anyhow::bail!("--input {k} given twice");
        }
    }
    Ok(map)
}

fn exec(global: &GlobalOpts, args: ExecArgs) -> anyhow::Result<()> {
    let session = Session::new(global, &args.flow)?;
    let from = session.account(&args.from)?;
    let inputs = parse_inputs(&args.inputs)?;
    // A local key is needed only to sign here; `--out` and managed accounts need none.
    let local_key = args.out.is_none() && session.keystore.find(&from.to_string()).is_ok();
    if (local_key || args.out.is_some()) && args.function.is_none() {
        return Err(coded(
            Code::Usage,
            "pass --function NAME (the contract function the action is mapped to): the \
             returned calldata is checked against it and the inputs before anything is signed",
        ));
    }
    // Actions map ST functions unless told otherwise: the transaction must go to the ST
    // contract on the side chain when the profile names them.
    let p = &session.profile;
    let call = ActionCall {
        action: args.name.clone(),
        from,
        inputs: inputs.clone(),
        intent: Intent {
            function: args.function.clone(),
            args: inputs,
            to: args.expect_to.or(p.st_contract),
            chain_id: args.expect_chain_id.or(p.side_chain_id),
            token: None,
            description: Some(format!("action {}", args.name)),
        },
    };
    if local_key {
        session.check_signer(from)?;
    }
    let mut flows = session.flows(Submitter::Platform)?;
    // What the user typed is trusted like the profile: a contract or chain the profile
    // does not name can be allowed for this one action.
    flows.policy.expect_to = args.expect_to.or(flows.policy.expect_to);
    flows.policy.expect_chain_id = args.expect_chain_id.or(flows.policy.expect_chain_id);
    let (tx_id, outcome) = session.runtime.block_on(flows.execute("action", &call))?;
    let (raw_json, data) = match outcome {
        ActionOutcome::Eoa { raw_tx, data } => (raw_tx, data),
        ActionOutcome::Managed {
            tx_id: their_id,
            tx_hash,
        } => {
            return report(
                global,
                &json!({"kind": "managed", "txId": their_id.unwrap_or(tx_id), "txHash": tx_hash}),
            );
        }
        ActionOutcome::View { value } => {
            return report(global, &json!({"kind": "view", "value": value}));
        }
    };
    let raw = flows.parse_raw_tx(&tx_id, &data)?;
    let intent = Flows::action_intent(&call);
    let verified = session
        .runtime
        .block_on(flows.check_before_signing(&tx_id, from, &raw, &intent))?;
    if let Some(out) = &args.out {
        let request = SignRequest::new(
            raw,
            intent,
            Origin {
                base_url: Some(session.client.base_url().to_string()),
                action: Some(args.name.clone()),
                tx_id: Some(tx_id.clone()),
                profile: Some(global.profile.clone()),
                created_at: Some(now()),
            },
        );
        let bytes = serde_json::to_vec_pretty(&request)?;
        crate::files::write_new(out, &bytes)?;
        session.journal.note(
            &tx_id,
            "sign-request-written",
            &json!({"path": out.display().to_string()}),
        )?;
        return report(
            global,
            &json!({"kind": "sign-request", "txId": tx_id, "out": out}),
        );
    }
    if !local_key {
        session
            .journal
            .step(&tx_id, FlowState::Failed, "no-key", &json!({}))?;
        anyhow::bail!(
            "the platform returned a transaction to sign for {}, but no key for it is in the \
             keystore: import it, or use --out to sign on another machine",
            from
        );
    }
    let mut approver = session.approver();
    let signed = flows.approve_and_sign(&tx_id, &verified, &intent, &mut approver)?;
    let submitted = session.runtime.block_on(flows.submit_journaled(
        &tx_id,
        &signed.raw,
        signed.hash,
        signed.chain_id,
        signed.nonce,
        signed.from,
        &mut StderrProgress,
    ))?;
    report(
        global,
        &json!({"kind": "eoa", "txId": tx_id, "txHash": submitted.tx_hash, "nonce": submitted.nonce,
                "chainId": submitted.chain_id, "rawTx": raw_json}),
    )
}

fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

fn report(global: &GlobalOpts, value: &serde_json::Value) -> anyhow::Result<()> {
    if global.json {
        return crate::output::json(value);
    }
    let get = |k: &str| {
        value
            .get(k)
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
    };
    match value.get("kind").and_then(|k| k.as_str()) {
        Some("managed") => crate::output::line(format_args!(
            "executed by the platform for the managed account: txId {}, tx {}",
            crate::output::untrusted(&get("txId").unwrap_or_default()),
            crate::output::untrusted(&get("txHash").unwrap_or_default())
        )),
        Some("view") => {
            crate::output::line(crate::output::untrusted(&get("value").unwrap_or_default()))
        }
        Some("sign-request") => crate::output::line(format_args!(
            "sign request written to {} (txId {}): sign it offline with `bridgectl sign`, then `bridgectl submit`",
            get("out").unwrap_or_default(),
            get("txId").unwrap_or_default()
        )),
        _ => crate::output::line(format_args!(
            "submitted tx {} (txId {})",
            get("txHash").unwrap_or_default(),
            get("txId").unwrap_or_default()
        )),
    }
}
