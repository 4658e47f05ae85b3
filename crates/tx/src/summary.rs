//! What the person sees before signing: every field that matters, in words, with
//! warnings for what deserves a second look.

use std::collections::BTreeMap;
use std::fmt;

use alloy_primitives::{Address, U256};
use serde::Serialize;

use crate::amount::{format_native, format_units};
use crate::calldata::{self, Decoded, ParamKind, Value};
use crate::effects::{Effects, MoveKind};
use crate::rawtx::RawTx;
use crate::request::Token;
use crate::text::printable;

/// Facts from the config and the sign request that make a summary readable. (Not
/// [`crate::Context`], which is what the verifier knows about the signer.)
#[derive(Clone, Debug, Default)]
pub struct SummaryContext {
    /// The chain's name (`side`, `sepolia`), when configured.
    pub chain_name: Option<String>,
    /// The native currency symbol; `ETH` when unset.
    pub native_symbol: Option<String>,
    /// Known addresses and their labels.
    pub labels: BTreeMap<Address, String>,
    /// The token the call is about, to format amounts.
    pub token: Option<Token>,
    /// The fee cap, to warn when the maximum fee is above it.
    pub max_fee: Option<U256>,
    /// A line from the request's intent.
    pub description: Option<String>,
    /// Whether `description` was written by the code that built the intent from its
    /// caller's own arguments (a flow's "redeem 1.5 ST into MT"), not by a request: then
    /// it says what was checked, and is not shown as a claim.
    pub description_by_caller: bool,
    /// Where the key stands against the policy's spending limits.
    pub spending: Vec<String>,
    /// The gas price, in wei, of the transaction this one signs again at its nonce (a
    /// replacement or a cancel): shown as old -> new.
    pub previous_gas_price: Option<u128>,
}

/// One decoded argument, ready to print.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Arg {
    /// The parameter name.
    pub name: String,
    /// The exact value (decimal base units or address).
    pub value: String,
    /// The value for people: an amount in token units, or an address with its label.
    pub display: String,
}

/// The summary of one unsigned transaction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// The chain id.
    pub chain_id: u64,
    /// Its configured name.
    pub chain_name: Option<String>,
    /// The sender.
    pub from: Address,
    /// The sender's label.
    pub from_label: Option<String>,
    /// The callee.
    pub to: Address,
    /// The callee's label.
    pub to_label: Option<String>,
    /// The function's signature, or a description of what the calldata is.
    pub function: String,
    /// The decoded arguments.
    pub args: Vec<Arg>,
    /// The wei sent along.
    pub value: U256,
    /// The nonce.
    pub nonce: u64,
    /// The gas limit.
    pub gas_limit: u64,
    /// The gas price in wei.
    pub gas_price: u128,
    /// The gas price of the transaction this one replaces at its nonce, in wei
    /// ([`SummaryContext::previous_gas_price`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_gas_price: Option<u128>,
    /// `gasLimit * gasPrice` in wei.
    pub max_fee: U256,
    /// The same in the native unit, for people.
    pub max_fee_display: String,
    /// From the request's intent.
    pub description: Option<String>,
    /// Whether the description is the caller's own ([`SummaryContext::description_by_caller`]).
    #[serde(skip)]
    pub description_by_caller: bool,
    /// Where the key stands against the policy's spending limits.
    pub spending: Vec<String>,
    /// Every amount the call moves and where it goes ([`crate::effects`]), in words:
    /// each recipient with what it receives, fees and allowances included.
    pub moves: Vec<String>,
    /// What deserves a second look.
    pub warnings: Vec<String>,
}

impl Summary {
    /// Summarises `tx` in `ctx`.
    pub fn new(tx: &RawTx, ctx: &SummaryContext) -> Summary {
        let native = ctx.native_symbol.clone().unwrap_or_else(|| "ETH".into());
        let label = |a: &Address| ctx.labels.get(a).cloned();
        let mut warnings = Vec::new();
        if tx.to == Address::ZERO {
            warnings.push("to is the zero address: anything sent there is lost".into());
        }
        let mut args = Vec::new();
        let function = match calldata::classify(&tx.data) {
            Decoded::Empty => "(no calldata: plain transfer)".into(),
            Decoded::Call(call) => {
                for (p, v) in &call.args {
                    let display = match (v, p.kind) {
                        // The ST contract reads `_fee` as a percentage of `_amount`.
                        (Value::Uint(u), _) if p.name == "_fee" => {
                            format!("{u} (percent of _amount)")
                        }
                        (Value::Uint(u), ParamKind::Uint256) if p.is_amount => match &ctx.token {
                            Some(t) => match format_units(*u, t.decimals) {
                                Ok(s) => format!("{s} {}", t.symbol),
                                Err(_) => u.to_string(),
                            },
                            None => format!("{u} (base units; decimals unknown)"),
                        },
                        (Value::Address(a), _) => {
                            if *a == Address::ZERO {
                                warnings.push(format!("argument {} is the zero address", p.name));
                            }
                            with_label(a, &label(a))
                        }
                        (v, _) => v.to_string(),
                    };
                    args.push(Arg {
                        name: p.name.into(),
                        value: v.to_string(),
                        display,
                    });
                }
                call.function.signature.to_owned()
            }
            Decoded::Malformed { function, reason } => {
                warnings.push(format!(
                    "calldata does not decode as {}: {reason}",
                    function.signature
                ));
                format!("malformed {}", function.signature)
            }
            Decoded::Unknown { selector, len } => {
                let sel = alloy_primitives::hex::encode(selector);
                warnings.push(format!(
                    "unknown function selector 0x{sel}: bridgectl cannot tell what this call does"
                ));
                format!("unknown selector 0x{sel} ({len} bytes of calldata)")
            }
            Decoded::TooShort { len } => {
                warnings.push(format!("{len} bytes of calldata: not a function call"));
                format!("{len} bytes of calldata")
            }
        };
        if !tx.value.is_zero() {
            warnings.push(format!(
                "sends {} along (the platform never sets value)",
                format_native(tx.value, &native)
            ));
        }
        let max_fee = tx.max_fee();
        if let Some(cap) = ctx.max_fee
            && max_fee > cap
        {
            warnings.push(format!(
                "maximum fee {} is above the cap {}",
                format_native(max_fee, &native),
                format_native(cap, &native)
            ));
        }
        let moves = moves(tx, ctx, &label, &mut warnings);
        Summary {
            chain_id: tx.chain_id,
            chain_name: ctx.chain_name.clone(),
            from: tx.from,
            from_label: label(&tx.from),
            to: tx.to,
            to_label: label(&tx.to),
            function,
            args,
            value: tx.value,
            nonce: tx.nonce,
            gas_limit: tx.gas_limit,
            gas_price: tx.gas_price,
            previous_gas_price: ctx.previous_gas_price,
            max_fee,
            max_fee_display: format_native(max_fee, &native),
            description: ctx.description.clone(),
            description_by_caller: ctx.description_by_caller,
            spending: ctx.spending.clone(),
            moves,
            warnings,
        }
    }
}

/// The movements of [`crate::effects`] in words, with their total when there are
/// several.
fn moves(
    tx: &RawTx,
    ctx: &SummaryContext,
    label: &dyn Fn(&Address) -> Option<String>,
    warnings: &mut Vec<String>,
) -> Vec<String> {
    let amount = |v: U256| match &ctx.token {
        Some(t) => t.units(v),
        None => format!("{v} base units"),
    };
    let effects = Effects::of_calldata(&tx.data);
    let Some(movements) = effects.movements() else {
        return Vec::new();
    };
    let mut lines: Vec<String> = movements
        .iter()
        .map(|m| {
            let to = m.to.map(|a| with_label(&a, &label(&a))).unwrap_or_default();
            match m.kind {
                MoveKind::Transfer => format!("{} to {to}", amount(m.amount)),
                MoveKind::Fee => format!("{} to {to} as the fee", amount(m.amount)),
                MoveKind::Allowance => format!("{to} may take up to {}", amount(m.amount)),
                MoveKind::Burn => format!("{} burned (redeemed)", amount(m.amount)),
                MoveKind::Stake => format!("{} staked", amount(m.amount)),
            }
        })
        .collect();
    if movements.len() > 1
        && let Some(total) = effects.total()
    {
        lines.push(format!("{} in all", amount(total)));
        let fee = movements
            .iter()
            .find(|m| m.kind == MoveKind::Fee)
            .map(|m| m.amount);
        let sent = movements
            .iter()
            .find(|m| m.kind == MoveKind::Transfer)
            .map(|m| m.amount);
        if let (Some(fee), Some(sent)) = (fee, sent)
            && fee > sent
        {
            warnings.push(format!(
                "the fee ({}) is more than the amount sent ({})",
                amount(fee),
                amount(sent)
            ));
        }
    }
    lines
}

/// `wei` in gwei, exactly (`1.25`).
fn gwei(wei: u128) -> String {
    format_units(U256::from(wei), 9).unwrap_or_else(|_| wei.to_string())
}

fn with_label(a: &Address, l: &Option<String>) -> String {
    match l {
        Some(l) => format!("{a} ({})", printable(l)),
        None => a.to_string(),
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.description {
            // The flow's own words for the call it built from its caller's arguments:
            // they say what the checks below pinned.
            Some(d) if self.description_by_caller => writeln!(f, "what:      {}", printable(d))?,
            // Free text from a request: a claim, never checked, and escaped so it cannot
            // move the cursor or fake a line of this summary.
            Some(d) => writeln!(
                f,
                "claimed:   \"{}\" (the request's description, not checked)",
                printable(d)
            )?,
            None => {}
        }
        match &self.chain_name {
            Some(n) => writeln!(f, "chain:     {} ({n})", self.chain_id)?,
            None => writeln!(f, "chain:     {}", self.chain_id)?,
        }
        writeln!(f, "from:      {}", with_label(&self.from, &self.from_label))?;
        writeln!(f, "to:        {}", with_label(&self.to, &self.to_label))?;
        writeln!(f, "call:      {}", self.function)?;
        for a in &self.args {
            writeln!(f, "  {:<12} {}", a.name, a.display)?;
        }
        if !self.value.is_zero() {
            writeln!(f, "value:     {} wei", self.value)?;
        }
        writeln!(f, "nonce:     {}", self.nonce)?;
        if let Some(old) = self.previous_gas_price {
            writeln!(
                f,
                "gas price: {old} -> {} wei ({} -> {} gwei), in place of the transaction \
                 signed at this nonce",
                self.gas_price,
                gwei(old),
                gwei(self.gas_price)
            )?;
        }
        writeln!(
            f,
            "max fee:   {} gas x {} wei = {} wei = {}",
            self.gas_limit, self.gas_price, self.max_fee, self.max_fee_display
        )?;
        for m in &self.moves {
            writeln!(f, "moves:     {m}")?;
        }
        for l in &self.spending {
            writeln!(f, "limit:     {l}")?;
        }
        for w in &self.warnings {
            writeln!(f, "WARNING:   {w}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::Bytes;

    fn tx(data: Vec<u8>, to: Address) -> RawTx {
        RawTx {
            from: Address::repeat_byte(0x11),
            to,
            data: Bytes::from(data),
            nonce: 7,
            gas_limit: 100_000,
            gas_price: 50_000_000_000,
            chain_id: 617317,
            value: U256::ZERO,
        }
    }

    /// A request's description is a claim; the words a flow wrote for the call it built
    /// from its caller's arguments are shown as what is signed.
    #[test]
    fn a_description_is_a_claim_unless_the_caller_wrote_it() {
        let data = calldata::encode(
            "redeem",
            &BTreeMap::from([("_amount".to_string(), "1".to_string())]),
        )
        .expect("encode");
        let mut ctx = SummaryContext {
            description: Some("redeem 1 ST into MT".into()),
            ..SummaryContext::default()
        };
        let claimed = Summary::new(&tx(data.clone(), Address::ZERO), &ctx).to_string();
        assert!(
            claimed.contains(
                "claimed:   \"redeem 1 ST into MT\" (the request's description, not checked)"
            ),
            "{claimed}"
        );
        ctx.description_by_caller = true;
        let own = Summary::new(&tx(data, Address::ZERO), &ctx).to_string();
        assert!(own.starts_with("what:      redeem 1 ST into MT\n"), "{own}");
        assert!(!own.contains("not checked"), "{own}");
    }

    /// A replacement's summary says the price it replaces and the new one.
    #[test]
    fn a_replacement_shows_the_old_and_the_new_gas_price() {
        let ctx = SummaryContext {
            description: Some("replace flow f at a higher gas price".into()),
            description_by_caller: true,
            previous_gas_price: Some(40_000_000_000),
            ..SummaryContext::default()
        };
        let text = Summary::new(&tx(Vec::new(), Address::repeat_byte(0x22)), &ctx).to_string();
        assert!(
            text.contains(
                "gas price: 40000000000 -> 50000000000 wei (40 -> 50 gwei), in place of the \
                 transaction signed at this nonce"
            ) && text.starts_with("what:      replace flow f")
                && !text.contains("not checked"),
            "{text}"
        );
    }

    #[test]
    fn redeem_with_token_and_labels() {
        let data = calldata::encode(
            "redeem",
            &BTreeMap::from([("_amount".to_string(), "1500000000000000000".to_string())]),
        )
        .expect("encode");
        let st = Address::repeat_byte(0x35);
        let ctx = SummaryContext {
            chain_name: Some("side".into()),
            labels: BTreeMap::from([(st, "ST token".to_string())]),
            token: Some(Token {
                symbol: "ST".into(),
                decimals: 18,
            }),
            max_fee: Some(U256::from(1u64)),
            ..SummaryContext::default()
        };
        let s = Summary::new(&tx(data, st), &ctx);
        let text = s.to_string();
        assert!(text.contains("chain:     617317 (side)"), "{text}");
        assert!(text.contains("(ST token)"), "{text}");
        assert!(text.contains("call:      redeem(uint256)"), "{text}");
        assert!(text.contains("_amount      1.5 ST"), "{text}");
        assert!(
            text.contains("100000 gas x 50000000000 wei = 5000000000000000 wei = 0.005 ETH"),
            "{text}"
        );
        assert!(
            text.contains(
                "WARNING:   maximum fee 0.005 ETH is above the cap 0.000000000000000001 ETH (1 wei)"
            ),
            "{text}"
        );
    }

    #[test]
    fn warnings_for_zero_address_and_unknown_selector() {
        let s = Summary::new(
            &tx(vec![0xde, 0xad, 0xbe, 0xef], Address::ZERO),
            &SummaryContext::default(),
        );
        let text = s.to_string();
        assert!(text.contains("to is the zero address"), "{text}");
        assert!(
            text.contains("unknown function selector 0xdeadbeef"),
            "{text}"
        );
        let data = calldata::erc20_transfer(Address::ZERO, U256::from(5));
        let s = Summary::new(
            &tx(data, Address::repeat_byte(1)),
            &SummaryContext::default(),
        );
        assert!(
            s.warnings
                .iter()
                .any(|w| w.contains("argument _to is the zero address"))
        );
        assert!(s.to_string().contains("5 (base units; decimals unknown)"));
    }

    #[test]
    fn every_recipient_is_shown_with_what_it_receives() {
        let attacker = Address::repeat_byte(0xee);
        let data = calldata::encode(
            "transferWithFee",
            &BTreeMap::from([
                ("_to".to_string(), Address::repeat_byte(0xa1).to_string()),
                ("_amount".to_string(), "1000000000000000000".to_string()),
                ("_feeCollector".to_string(), attacker.to_string()),
                ("_fee".to_string(), "10000".to_string()),
            ]),
        )
        .expect("encode");
        let ctx = SummaryContext {
            token: Some(Token {
                symbol: "ST".into(),
                decimals: 18,
            }),
            ..SummaryContext::default()
        };
        let text = Summary::new(&tx(data, Address::repeat_byte(0x35)), &ctx).to_string();
        assert!(
            text.contains("_fee         10000 (percent of _amount)"),
            "{text}"
        );
        assert!(
            text.contains(&format!("moves:     100 ST to {attacker} as the fee")),
            "{text}"
        );
        assert!(text.contains("moves:     101 ST in all"), "{text}");
        assert!(
            text.contains("WARNING:   the fee (100 ST) is more than"),
            "{text}"
        );
    }
}
