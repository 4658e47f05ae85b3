//! `bridgectl demo`: the whole job on the embedded sandbox, start to finish. Starts the
//! sandbox in-process (two anvil chains), makes a throwaway key with the TEST KDF cost,
//! funds it with MT from the sandbox's development account, swaps MT into ST, redeems
//! ST back into MT, and prints balances before and after with every transaction hash.
//!
//! Everything runs through the same flows as the real commands: the platform's raw
//! transaction is verified before the key is unlocked, and every signed transaction is
//! journaled before it is submitted. Nothing outside a temp dir is touched.

use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, U256};
use alloy_signer_local::PrivateKeySigner;
use anyhow::{Context, Result};
use bridgectl_flow::client::{AccessToken, ClientOptions, PlatformClient};
use bridgectl_flow::{
    ApproveFuture, Approver, Bridge, ChainSide, Flows, GasPriceCap, GasSource, Journal,
    NonceSource, PegRatio, Review, SwapCredit, SwapSpec, TokenSide, TransferSpec, WaitOptions,
};
use bridgectl_keystore::{KdfParams, Keystore, Passphrase};
use bridgectl_sandbox::{Sandbox, SandboxConfig};
use clap::Args;
use serde_json::json;

use crate::approver::StderrProgress;
use crate::config::Profile;
use crate::global::GlobalOpts;

// Arguments of `bridgectl demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// MT to fund the throwaway key with, in token units.
    #[arg(long, default_value = "10")]
    pub fund: String,
    /// MT to swap into ST, in token units.
    #[arg(long, default_value = "4")]
    pub swap: String,
    /// Keep the temp dir (keystore, journal) for inspection.
    #[arg(long)]
    pub keep: bool,
}

/// Signs with a key given up front: the sandbox's public development key (to fund the
/// throwaway key) or the throwaway key itself. Shows the summary; never asks.
struct DemoApprover<'a> {
    keystore: Option<(&'a Keystore, &'a Passphrase)>,
    dev: Option<PrivateKeySigner>,
    profile: &'a Profile,
}

impl Approver for DemoApprover<'_> {
    type Signer = PrivateKeySigner;

    fn approve<'a>(&'a mut self, review: &'a Review<'_>) -> ApproveFuture<'a, PrivateKeySigner> {
        Box::pin(async move {
            let ctx = crate::review::context(self.profile, review.verified);
            crate::review::show(review.raw_tx(), &ctx);
            crate::output::note("(demo: confirmed automatically)");
            if let Some(dev) = &self.dev {
                return Ok(dev.clone());
            }
            let (ks, pass) = self
                .keystore
                .ok_or_else(|| bridgectl_flow::Error::Declined("no key".into()))?;
            let mut provider = Passphrase::new(pass.expose_secret().to_owned());
            ks.unlock(&review.raw_tx().from.to_string(), &mut provider)
                .map_err(bridgectl_flow::Error::unlock_failed)
        })
    }
}

/// A sandbox chain as the flows describe it (its node URL included).
fn chain_side(info: &bridgectl_sandbox::ChainInfo) -> ChainSide {
    ChainSide {
        environment_id: info.environment_id.clone(),
        symbol: info.symbol.clone(),
        decimals: info.decimals,
        token: info.token_address,
        chain_id: info.chain_id,
        rpc_url: Some(info.rpc_url.clone()),
        finality: Some(bridgectl_flow::Finality::Confirmations(info.confirmations)),
    }
}

/// Runs `bridgectl demo`.
pub fn run(global: &GlobalOpts, args: DemoArgs) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(demo(global, &args))
}

async fn demo(global: &GlobalOpts, args: &DemoArgs) -> Result<()> {
    let started = Instant::now();
    let say = |text: String| crate::output::note(format_args!("== {text}"));
    // The amounts are checked before anything starts: a typo costs no sandbox.
    let config = SandboxConfig::default();
    let fund = crate::opts::parse_amount(&args.fund, config.main.decimals, "--fund")?;
    let swap_amount = crate::opts::parse_amount(&args.swap, config.main.decimals, "--swap")?;
    say("starting the sandbox (two anvil chains, contracts, relayer, platform API)".into());
    let sandbox = Sandbox::start(config).await?;
    let info = sandbox.info().clone();
    say(format!(
        "sandbox ready in {:.1}s at {}",
        started.elapsed().as_secs_f64(),
        info.base_url
    ));

    let work = std::env::temp_dir().join(format!(
        "bridgectl-demo-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let result = run_flows(global, args, (fund, swap_amount), &sandbox, &info, &work).await;
    sandbox.shutdown().await?;
    if args.keep {
        say(format!("kept {}", work.display()));
    } else {
        let _ = std::fs::remove_dir_all(&work);
    }
    let summary = result?;
    if global.json {
        crate::output::json(&summary)?;
    }
    say(format!("done in {:.1}s", started.elapsed().as_secs_f64()));
    Ok(())
}

async fn run_flows(
    global: &GlobalOpts,
    args: &DemoArgs,
    (fund, swap_amount): (U256, U256),
    sandbox: &Sandbox,
    info: &bridgectl_sandbox::SandboxInfo,
    work: &std::path::Path,
) -> Result<serde_json::Value> {
    let say = |text: String| crate::output::note(format_args!("== {text}"));
    let keystore = Keystore::open(work.join("keystore"))?;
    let passphrase = Passphrase::new(format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    ));
    let key = keystore.create(
        Some("demo-throwaway-TEST-KDF"),
        &mut Passphrase::new(passphrase.expose_secret().to_owned()),
        &KdfParams::insecure_for_tests(),
    )?;
    let user = key.address;
    say(format!(
        "made a THROWAWAY key {user} with the insecure TEST KDF cost (never use such a key for real funds)"
    ));
    sandbox
        .state()
        .register_fee_delegation(user)
        .await
        .map_err(|e| anyhow::anyhow!("registering {user} for fee delegation: {e}"))?;

    let bridge = Bridge {
        main: chain_side(&info.main),
        side: chain_side(&info.side),
        redeem_action: "redeem".into(),
        swap_credit: SwapCredit {
            ratio: Some(PegRatio {
                mt: info.ratio.mt,
                st: info.ratio.st,
            }),
            source: Address::ZERO,
        },
    };
    let client = PlatformClient::new(
        &info.base_url,
        AccessToken::new(info.token.expose_secret()),
        ClientOptions::default(),
    )?;
    let journal = Journal::open(work.join("journal.sqlite3"))?;
    // The funding transfer is signed by the sandbox's development key, given up front
    // rather than stored here: its entries in this keystore's signing log are the
    // keystore's own, as an external signer's are (else the log refuses the throwaway
    // key's first signature: "entry 1 is signed by ..., which is not a key of this
    // keystore").
    keystore.add_external_signer(info.dev.address)?;
    let signing_log = crate::session::open_signing_log(&keystore)?;
    let flows = Flows::builder(client, Arc::new(journal), Arc::new(signing_log))
        .bridge(bridge)
        .wait(WaitOptions {
            interval: Duration::from_millis(200),
            timeout: Duration::from_secs(60),
            ..WaitOptions::default()
        })
        .gas_price(GasPriceCap::NodeQuote)
        .build();
    let mut profile = Profile::default();
    profile.labels.insert(user.to_string(), "demo key".into());
    profile
        .chains
        .insert(info.main.chain_id.to_string(), "sandbox main".into());
    profile
        .chains
        .insert(info.side.chain_id.to_string(), "sandbox side".into());
    let mut progress = StderrProgress;

    let dev_key = hex::decode(info.dev.private_key.expose_secret())
        .context("sandbox dev key")
        .map(zeroize::Zeroizing::new)?;
    let dev_signer = PrivateKeySigner::from_slice(&dev_key)?;
    drop(dev_key);

    say(format!(
        "funding the throwaway key with {} {} from the sandbox's development account",
        args.fund, info.main.symbol
    ));
    let mut dev_approver = DemoApprover {
        keystore: None,
        dev: Some(dev_signer),
        profile: &profile,
    };
    let funded = flows
        .transfer(
            &TransferSpec {
                token: TokenSide::Mt,
                from: info.dev.address,
                to: user,
                amount: fund,
                nonce: NonceSource::Node,
                gas: GasSource::Node,
            },
            &mut dev_approver,
            &mut progress,
        )
        .await?;

    let before = balances(&flows, user).await?;
    let mut approver = DemoApprover {
        keystore: Some((&keystore, &passphrase)),
        dev: None,
        profile: &profile,
    };

    say(format!(
        "swap: {} {} -> {}",
        args.swap, info.main.symbol, info.side.symbol
    ));
    let swapped = flows
        .swap(
            &SwapSpec {
                from: user,
                amount: swap_amount,
                nonce: NonceSource::Platform,
                gas: GasSource::Platform,
                wait: true,
            },
            &mut approver,
            &mut progress,
        )
        .await?;
    // The swap's own credit, not a balance difference.
    let credited: U256 = swapped
        .credit
        .as_ref()
        .context("the swap completed without a credit")?
        .amount
        .parse()?;
    let mid = balances(&flows, user).await?;

    say(format!(
        "redeem: {} {} -> {}",
        bridgectl_tx::amount::format_units(credited, info.side.decimals)?,
        info.side.symbol,
        info.main.symbol
    ));
    let redeemed = flows
        .redeem(user, credited, &mut approver, &mut progress)
        .await?;
    let after = balances(&flows, user).await?;

    let fmt_mt =
        |v: U256| bridgectl_tx::amount::format_units(v, info.main.decimals).unwrap_or_default();
    let fmt_st =
        |v: U256| bridgectl_tx::amount::format_units(v, info.side.decimals).unwrap_or_default();
    let status = redeemed
        .redemption
        .as_ref()
        .map(|r| r.status.clone())
        .unwrap_or_default();
    if !global.json {
        let (m, s) = (&info.main.symbol, &info.side.symbol);
        let lines = [
            format!("account      {user} (throwaway, TEST KDF)"),
            format!(
                "fund tx      {} ({} {m} from the dev account)",
                funded.tx_hash, args.fund
            ),
            format!(
                "swap tx      {} -> swap address {}",
                swapped.submitted.tx_hash, swapped.swap_address
            ),
            format!(
                "redeem tx    {} (txId {}, redemption {status})",
                redeemed.submitted.tx_hash, redeemed.submitted.tx_id
            ),
            format!("{:<12} {:>24} {:>24}", "", m, s),
            format!(
                "{:<12} {:>24} {:>24}",
                "before swap",
                fmt_mt(before.0),
                fmt_st(before.1)
            ),
            format!(
                "{:<12} {:>24} {:>24}",
                "after swap",
                fmt_mt(mid.0),
                fmt_st(mid.1)
            ),
            format!(
                "{:<12} {:>24} {:>24}",
                "after redeem",
                fmt_mt(after.0),
                fmt_st(after.1)
            ),
        ];
        for l in lines {
            crate::output::line(l)?;
        }
    }
    Ok(json!({
        "account": user,
        "fundTx": funded.tx_hash,
        "swap": {"txHash": swapped.submitted.tx_hash, "swapAddress": swapped.swap_address,
                 "amount": swap_amount.to_string(), "stCredited": credited.to_string()},
        "redeem": {"txHash": redeemed.submitted.tx_hash, "txId": redeemed.submitted.tx_id,
                   "status": status},
        "balances": {
            "beforeSwap": {"mt": before.0.to_string(), "st": before.1.to_string()},
            "afterSwap": {"mt": mid.0.to_string(), "st": mid.1.to_string()},
            "afterRedeem": {"mt": after.0.to_string(), "st": after.1.to_string()},
        },
    }))
}

async fn balances(flows: &Flows, who: Address) -> Result<(U256, U256)> {
    Ok((
        flows.token_balance(TokenSide::Mt, who).await?,
        flows.token_balance(TokenSide::St, who).await?,
    ))
}
