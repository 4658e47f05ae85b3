//! `bridgectl replace TXID` and `bridgectl cancel TXID`: the ways on for a flow whose
//! signed transaction cannot be mined (no gas for its fees, under-priced after a spike).
//! Each signs once more at the flow's own nonce, deliberately: `replace` the same call at
//! a higher gas price, `cancel` a 0-value transfer to the sender itself. Both are checked
//! by the one verifier and shown before the key is unlocked, are recorded in the signing
//! log with the hash they replace, and wait until one of the flow's transactions is
//! mined: that one decides how the flow ends (`cancelled` when the cancel won).

use anyhow::Context as _;
use bridgectl_flow::{Purpose, Replaced, Repricing, Submitter};
use clap::Args;

use crate::approver::StderrProgress;
use crate::exit::{Code, WithCode, coded};
use crate::global::GlobalOpts;
use crate::opts::FlowOpts;
use crate::session::Session;

// How the new transaction is priced (both commands).
#[derive(Debug, Args)]
#[group(multiple = false)]
pub struct PriceOpts {
    /// The new gas price: wei, or with a unit (`30gwei`). It must be more than the
    /// replaced transaction's.
    #[arg(long, value_name = "PRICE")]
    pub gas_price: Option<String>,
    /// Raise the replaced transaction's gas price by this much (`12.5%`, the default),
    /// or to the node's going price if that is higher.
    #[arg(long, value_name = "PERCENT")]
    pub bump: Option<String>,
}

// Arguments of `bridgectl replace`.
#[derive(Debug, Args)]
pub struct ReplaceArgs {
    /// The stuck flow's txId or a unique prefix (see `bridgectl history`).
    pub tx_id: String,
    /// The new price.
    #[command(flatten)]
    pub price: PriceOpts,
    /// The platform, the key's passphrase, the caps: as for the command that started it.
    #[command(flatten)]
    pub flow: FlowOpts,
}

/// Runs `bridgectl replace` (`cancel: false`) or `bridgectl cancel` (`cancel: true`).
pub fn run(global: &GlobalOpts, args: ReplaceArgs, cancel: bool) -> anyhow::Result<()> {
    let repricing = repricing(&args.price)?;
    let session = Session::new(global, &args.flow)?;
    let flows = session.flows(Submitter::Platform, |_| {})?;
    let mut approver = session.approver();
    let purpose = if cancel {
        Purpose::Cancel
    } else {
        Purpose::Replacement
    };
    let done = session.runtime.block_on(flows.replace(
        &args.tx_id,
        purpose,
        repricing,
        &mut approver,
        &mut StderrProgress,
    ))?;
    report(global, &done)
}

fn report(global: &GlobalOpts, done: &Replaced) -> anyhow::Result<()> {
    if global.json {
        return crate::output::json(done);
    }
    let ended = &done.ended;
    crate::output::line(format_args!(
        "{} {}: {} replaces {} at {} wei per gas; mined {} ({}) in block {}: flow {}{}",
        done.purpose.as_str(),
        done.tx_id,
        done.tx_hash,
        done.replaces,
        done.gas_price,
        ended.mined,
        ended.purpose.as_str(),
        ended.block,
        ended.state.as_str(),
        ended
            .redemption
            .as_ref()
            .map(|r| format!(", redemption {}", r.status))
            .unwrap_or_default()
    ))
}

/// The repricing the flags ask for: an exact price, a raise in percent (up to two
/// decimals), or the default raise.
pub fn repricing(opts: &PriceOpts) -> anyhow::Result<Repricing> {
    if let Some(text) = &opts.gas_price {
        let wei = bridgectl_tx::amount::parse_native(text)
            .context("--gas-price")
            .code(Code::Usage)?;
        let wei = u128::try_from(wei)
            .map_err(|_| coded(Code::Usage, format!("--gas-price {text:?} is above 2^128")))?;
        return Ok(Repricing::GasPrice(wei));
    }
    let Some(text) = &opts.bump else {
        return Ok(Repricing::default());
    };
    parse_percent(text)
        .map(|basis_points| Repricing::Bump { basis_points })
        .ok_or_else(|| {
            coded(
                Code::Usage,
                format!(
                    "--bump {text:?}: expected a percentage above 0 with at most two \
                     decimals, like 12.5% or 20"
                ),
            )
        })
}

/// `12.5%` (or `12.5`) as basis points (1250); `None` for anything else, 0 and over
/// 1000% included.
fn parse_percent(text: &str) -> Option<u32> {
    let number = text.trim().strip_suffix('%').unwrap_or(text.trim());
    let (whole, fraction) = match number.split_once('.') {
        Some((_, "")) => return None,
        Some(parts) => parts,
        None => (number, ""),
    };
    if whole.is_empty()
        || fraction.len() > 2
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
        || whole.len() > 4
    {
        return None;
    }
    let whole: u32 = whole.parse().ok()?;
    let fraction: u32 = format!("{fraction:0<2}").parse().ok()?;
    let bp = whole * 100 + fraction;
    (bp > 0 && bp <= 100_000).then_some(bp)
}

#[cfg(test)]
mod tests {
    use super::parse_percent;

    #[test]
    fn percentages_read_exactly() {
        assert_eq!(parse_percent("12.5%"), Some(1_250));
        assert_eq!(parse_percent("12.5"), Some(1_250));
        assert_eq!(parse_percent("20%"), Some(2_000));
        assert_eq!(parse_percent("0.01%"), Some(1));
        assert_eq!(parse_percent("1000%"), Some(100_000));
        for bad in [
            "", "%", "0", "0%", "-5%", "1e2", "12.555%", "1001%", ".5", "5.", "x", "10000",
        ] {
            assert_eq!(parse_percent(bad), None, "{bad:?}");
        }
    }
}
