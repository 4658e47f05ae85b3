//! `bridgectl action list`: the transaction actions the platform defines (name,
//! function, whether it only reads).
//!
//! `bridgectl action exec NAME --from A --input k=v ...`: executes a transaction action.
//! For an EOA the returned raw transaction is checked against the inputs and the
//! action's function (`--function`, else the one the platform lists for it), then
//! signed and submitted, or written as a sign request for the air gap with `--out`; for
//! a managed account the platform's txId and hash are shown; for a view function, its
//! value, with no key, passphrase or confirmation (nothing is signed). With `--wait` a
//! transaction signed here is followed to its observed end (a redeem's redemption, any
//! other call's receipt).

use std::collections::BTreeMap;
use std::path::PathBuf;

use alloy_primitives::Address;
use bridgectl_flow::{ActionCall, ActionResult, FlowStatus, SigningMode, Submitter};
use bridgectl_tx::request::Intent;
use clap::{Args, Subcommand};
use serde_json::json;

use crate::approver::{CliApprover, StderrProgress};
use crate::exit::{Code, WithCode, coded};
use crate::global::GlobalOpts;
use crate::opts::{FlowOpts, PlatformOpts};
use crate::session::Session;

/// Transaction-action commands.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum ActionCommand {
    /// List the transaction actions the platform defines: name, function, view or not.
    List(ListArgs),
    /// Execute a transaction action.
    Exec(Box<ExecArgs>),
}

// Arguments of `bridgectl action list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// The platform.
    #[command(flatten)]
    pub platform: PlatformOpts,
}

// Arguments of `bridgectl action exec`.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The action name (the last path segment of the action's URL).
    pub name: String,
    /// The executing account: an address or a key label. Optional for a view action
    /// (the call is made from the zero address).
    #[arg(long, add = crate::accounts::key_labels())]
    pub from: Option<String>,
    /// An input of the function, `name=value` (decimal base units, or an address or
    /// key label for an input `--function` types `address`); repeat for each parameter.
    #[arg(long = "input", value_name = "NAME=VALUE")]
    pub inputs: Vec<String>,
    /// The function the action is mapped to (`redeem`, `transfer`, ...): the returned
    /// calldata must call it [default: the function the platform lists for the action].
    #[arg(long)]
    pub function: Option<String>,
    /// The contract the transaction must go to [default: the profile's st_contract].
    #[arg(long)]
    pub expect_to: Option<Address>,
    /// The chain the transaction must be for [default: the profile's side_chain_id].
    #[arg(long, add = crate::completers::chain_ids())]
    pub expect_chain_id: Option<u64>,
    /// Do not sign here: write a sign request for `bridgectl sign` on an offline machine.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// With --out, show the request as QR frames too (`--qr`, `--qr-png DIR`).
    #[command(flatten)]
    pub qr: crate::qr::QrOutOpts,
    /// The UR type the QR frames carry: `eth-sign-request` (EIP-4527, for any EIP-4527
    /// signer; answered with an eth-signature) or `bridgectl-doc` (the request file byte
    /// for byte, its intent included; answered with a signed bundle).
    #[arg(
        long,
        value_enum,
        default_value_t,
        value_name = "TYPE",
        help_heading = "QR codes"
    )]
    pub qr_type: crate::qr::QrType,
    /// Wait for the flow's end, for a transaction signed here: for a redeem action, its
    /// redemption (operation 5); for any other, its receipt. `--timeout` bounds the wait
    /// (exit 8; `bridgectl resume TXID` waits again). Without it the flow stays
    /// `submitted` until `bridgectl status TXID` or `resume` observes its end.
    #[arg(long, conflicts_with = "out")]
    pub wait: bool,
    /// Shared options.
    #[command(flatten)]
    pub flow: FlowOpts,
}

/// Runs an action command.
pub fn run(global: &GlobalOpts, cmd: ActionCommand) -> anyhow::Result<()> {
    match cmd {
        ActionCommand::List(args) => list(global, &args),
        ActionCommand::Exec(args) => exec(global, *args),
    }
}

fn list(global: &GlobalOpts, args: &ListArgs) -> anyhow::Result<()> {
    let session = Session::for_sending(global, &args.platform)?;
    let actions = session
        .runtime
        .block_on(session.client().list_actions())
        .map_err(unlisted)?;
    if global.json {
        return crate::output::json(&actions);
    }
    if actions.is_empty() {
        crate::output::note("the platform defines no transaction actions");
        return Ok(());
    }
    let rows: Vec<Vec<String>> = actions
        .iter()
        .map(|a| {
            vec![
                crate::output::untrusted(&a.name).to_string(),
                crate::output::untrusted(&a.function).to_string(),
                if a.view { "view" } else { "sends" }.to_owned(),
                crate::output::untrusted(a.description.as_deref().unwrap_or_default()).to_string(),
            ]
        })
        .collect();
    crate::output::table(&["NAME", "FUNCTION", "KIND", "DESCRIPTION"], &[], &rows)
}

/// A platform without the list operation (it is not in the spec) says 404: say what to
/// do instead.
fn unlisted(e: bridgectl_flow::Error) -> anyhow::Error {
    let missing =
        matches!(&e, bridgectl_flow::Error::Platform { error, .. } if error.status == 404);
    let e = anyhow::Error::new(e);
    if missing {
        e.context(
            "this platform does not list its transaction actions: look them up in its \
             console, and pass --function to `action exec`",
        )
    } else {
        e
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

fn exec(global: &GlobalOpts, mut args: ExecArgs) -> anyhow::Result<()> {
    if args.qr.any() && args.out.is_none() {
        return Err(coded(
            Code::Usage,
            "--qr and --qr-png show a sign request: give --out FILE too (the request this \
             side keeps, for `submit --request`)",
        ));
    }
    args.qr.check()?;
    let session = Session::new(global, &args.flow)?;
    // What the platform says the action is: its function (the default of --function)
    // and whether it only reads. A platform that does not list actions leaves both to
    // the flags.
    let listed = session
        .runtime
        .block_on(session.client().list_actions())
        .ok()
        .and_then(|all| all.into_iter().find(|a| a.name == args.name));
    // Only a function the operator named pins the call; the platform's list does not.
    let function_pinned = args.function.is_some();
    if args.function.is_none() {
        args.function = listed.as_ref().map(|a| a.function.clone());
    }
    let view = listed.as_ref().is_some_and(|a| a.view);
    let from = match (&args.from, view) {
        (Some(from), _) => session.account(from)?,
        (None, true) => Address::ZERO,
        (None, false) => {
            return Err(coded(
                Code::Usage,
                "pass --from ACCOUNT (the account that executes the action)",
            ));
        }
    };
    let mut inputs = parse_inputs(&args.inputs)?;
    crate::accounts::resolve_inputs(&session.keystore, args.function.as_deref(), &mut inputs)?;
    // A local key is needed only to sign here; `--out`, managed accounts and a view
    // (nothing to sign: the platform answers with the function's value) need none.
    let local_key = !view && args.out.is_none() && session.keystore.find(&from.to_string()).is_ok();
    if (local_key || args.out.is_some()) && args.function.is_none() {
        return Err(coded(
            Code::Usage,
            "pass --function NAME (the contract function the action is mapped to; the \
             platform does not list it): the returned calldata is checked against it and \
             the inputs before anything is signed",
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
            caller_pinned: function_pinned,
        },
    };
    if local_key {
        session.check_signer(from)?;
    }
    // What the user typed is trusted like the profile: a contract or chain the profile
    // does not name can be allowed for this one action.
    let flows = session.flows(Submitter::Platform, |policy| {
        policy.expect_to = args.expect_to.or(policy.expect_to);
        policy.expect_chain_id = args.expect_chain_id.or(policy.expect_chain_id);
    })?;
    let mut approver = session.approver();
    let mut progress = StderrProgress;
    let mode: SigningMode<'_, CliApprover<'_>> = match (&args.out, local_key) {
        (Some(_), _) => SigningMode::WriteRequest {
            profile: Some(global.profile.clone()),
        },
        (None, true) => SigningMode::SignHere(&mut approver, &mut progress),
        (None, false) => SigningMode::ExecuteOnly,
    };
    let result = match session.runtime.block_on(flows.run_action(&call, mode)) {
        Err(e @ bridgectl_flow::Error::NoSigner { .. }) => {
            return Err(anyhow::Error::new(e).context(
                "import the key, or use --out to write a sign request and sign on another machine",
            ));
        }
        other => other?,
    };
    if let (ActionResult::SignRequest { request, tx_id }, Some(out)) = (&result, &args.out) {
        let bytes = serde_json::to_vec_pretty(request)?;
        crate::files::write_new(out, &bytes)?;
        if args.qr.any() {
            let ur = match args.qr_type {
                crate::qr::QrType::EthSignRequest => bridgectl_qr::EthSignRequest::legacy(
                    &request.raw_tx,
                    bridgectl_qr::uuid_bytes(tx_id).code(Code::Failure)?,
                    Some("bridgectl".into()),
                )
                .to_ur(),
                crate::qr::QrType::BridgectlDoc => bridgectl_qr::Doc {
                    kind: bridgectl_qr::DocKind::SignRequest,
                    bytes,
                }
                .to_ur(),
            };
            args.qr
                .show(&ur, &format!("the sign request {}", out.display()))?;
        }
    }
    // Only a transaction signed here has an end to wait for: a managed account's and a
    // view's flow is over when the platform answers.
    let observed = match (&result, args.wait) {
        (ActionResult::Eoa { submitted, .. }, true) => Some(
            session
                .runtime
                .block_on(flows.follow(&submitted.tx_id, &mut StderrProgress))?,
        ),
        _ => None,
    };
    report(global, &result, args.out.as_deref(), observed.as_ref())
}

fn report(
    global: &GlobalOpts,
    result: &ActionResult,
    out: Option<&std::path::Path>,
    observed: Option<&FlowStatus>,
) -> anyhow::Result<()> {
    if global.json {
        let mut value = serde_json::to_value(result)?;
        if let Some(out) = out {
            value["out"] = json!(out);
        }
        if let ActionResult::Eoa { .. } = result {
            value["state"] = json!(
                observed
                    .and_then(|o| o.state)
                    .unwrap_or(bridgectl_flow::FlowState::Submitted)
            );
            value["observed"] = json!(observed);
        }
        return crate::output::json(&value);
    }
    match result {
        ActionResult::Managed { tx_id, tx_hash } => crate::output::line(format_args!(
            "executed by the platform for the managed account: txId {}, tx {}",
            crate::output::untrusted(tx_id),
            crate::output::untrusted(tx_hash.as_deref().unwrap_or_default())
        )),
        ActionResult::View { value } => crate::output::line(crate::output::untrusted(
            &value
                .as_str()
                .map_or_else(|| value.to_string(), str::to_owned),
        )),
        ActionResult::SignRequest { tx_id, .. } => crate::output::line(format_args!(
            "sign request written to {} (txId {tx_id}): sign it offline with `bridgectl sign`, \
             then `bridgectl submit`",
            out.map(|p| p.display().to_string()).unwrap_or_default(),
        )),
        ActionResult::Eoa { submitted, .. } => crate::output::line(format_args!(
            "submitted tx {} (txId {}): {}",
            submitted.tx_hash,
            submitted.tx_id,
            observed.map_or_else(
                || format!(
                    "submitted (not waited for: `bridgectl status {}` asks)",
                    submitted.tx_id
                ),
                crate::output::flow_end
            )
        )),
    }
}
