//! `bridgectl swap`: MT into ST. Issues the swap address, builds the MT transfer to it
//! locally (calldata never comes from outside), signs, submits, and with `--wait`
//! waits for the ST credit.

use bridgectl_flow::engine::Submitter;
use bridgectl_flow::local::{GasSource, NonceSource};
use clap::{Args, ValueEnum};
use serde_json::json;

use crate::cli::GlobalOpts;
use crate::session::{FlowOpts, Session, StderrProgress, parse_amount};

/// Where nonces come from.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum NonceFrom {
    /// The node's `pending` count (profile rpc url).
    Node,
    /// The platform's next-nonce operation.
    Platform,
}

/// Where gas limit and price come from.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum GasFrom {
    /// The node: estimate + 20%, and its gas price.
    Node,
    /// The platform's raw-transfer operation (MT only).
    Platform,
}

/// Nonce and gas options shared by the commands that build transactions locally.
#[derive(Debug, Args, Clone)]
pub struct BuildOpts {
    /// Nonce source [default: node when an rpc url is configured, else platform].
    #[arg(long, value_enum)]
    pub nonce_from: Option<NonceFrom>,
    /// Use this nonce (offline entry).
    #[arg(long, conflicts_with = "nonce_from")]
    pub nonce: Option<u64>,
    /// Gas source [default: node when an rpc url is configured, else platform].
    #[arg(long, value_enum)]
    pub gas_from: Option<GasFrom>,
    /// Gas limit and price as LIMIT:PRICE_WEI (offline entry).
    #[arg(long, value_name = "LIMIT:PRICE", conflicts_with = "gas_from")]
    pub gas: Option<String>,
}

impl BuildOpts {
    /// The sources, defaulting to the node when `has_node`.
    pub fn sources(&self, has_node: bool) -> anyhow::Result<(NonceSource, GasSource)> {
        let nonce = match (self.nonce, self.nonce_from) {
            (Some(n), _) => NonceSource::Fixed(n),
            (None, Some(NonceFrom::Node)) => NonceSource::Node,
            (None, Some(NonceFrom::Platform)) => NonceSource::Platform,
            (None, None) if has_node => NonceSource::Node,
            (None, None) => NonceSource::Platform,
        };
        let gas = match (&self.gas, self.gas_from) {
            (Some(spec), _) => {
                let (l, p) = spec
                    .split_once(':')
                    .ok_or_else(|| anyhow::anyhow!("--gas {spec:?}: expected LIMIT:PRICE_WEI"))?;
                GasSource::Fixed {
                    limit: l
                        .parse()
                        .map_err(|_| anyhow::anyhow!("--gas: bad limit {l:?}"))?,
                    price: p
                        .parse()
                        .map_err(|_| anyhow::anyhow!("--gas: bad price {p:?}"))?,
                }
            }
            (None, Some(GasFrom::Node)) => GasSource::Node,
            (None, Some(GasFrom::Platform)) => GasSource::Platform,
            (None, None) if has_node => GasSource::Node,
            (None, None) => GasSource::Platform,
        };
        Ok((nonce, gas))
    }
}

/// Arguments of `bridgectl swap`.
#[derive(Debug, Args)]
pub struct SwapArgs {
    /// The account sending MT and receiving ST: an address or a key label.
    #[arg(long)]
    pub from: String,
    /// How much MT, in token units.
    #[arg(long, allow_hyphen_values = true)]
    pub amount: String,
    /// Wait until the ST balance moves.
    #[arg(long)]
    pub wait: bool,
    /// Nonce and gas.
    #[command(flatten)]
    pub build: BuildOpts,
    /// Shared options.
    #[command(flatten)]
    pub flow: FlowOpts,
}

/// Runs `bridgectl swap`.
pub fn run(global: &GlobalOpts, args: SwapArgs) -> anyhow::Result<()> {
    let session = Session::new(global, &args.flow)?;
    let from = session.account(&args.from)?;
    let bridge = session.bridge()?;
    let amount = parse_amount(&args.amount, bridge.main.decimals, "--amount")?;
    let (nonce, gas) = args.build.sources(bridge.main.rpc_url.is_some())?;
    session.check_signer(from)?;
    let flows = session.flows(Submitter::Platform)?;
    let mut approver = session.approver();
    let out = session.runtime.block_on(flows.swap(
        from,
        amount,
        nonce,
        gas,
        args.wait,
        &mut approver,
        &mut StderrProgress,
    ))?;
    if global.json {
        crate::output::json(&json!({
            "txId": out.submitted.tx_id,
            "txHash": out.submitted.tx_hash,
            "swapAddress": out.swap_address,
            "swapAddressData": out.swap_address_raw,
            "amount": amount.to_string(),
            "stBefore": out.st_before.map(|v| v.to_string()),
            "stAfter": out.st_after.map(|v| v.to_string()),
        }))?;
    } else {
        crate::output::line(format_args!(
            "sent {} {} to swap address {}: tx {} (txId {})",
            args.amount,
            bridge.main.symbol,
            out.swap_address,
            out.submitted.tx_hash,
            out.submitted.tx_id
        ))?;
        if let (Some(b), Some(a)) = (out.st_before, out.st_after) {
            crate::output::line(format_args!(
                "{} balance {} -> {}",
                bridge.side.symbol,
                bridgectl_tx::amount::format_units(b, bridge.side.decimals)?,
                bridgectl_tx::amount::format_units(a, bridge.side.decimals)?
            ))?;
        }
    }
    Ok(())
}
