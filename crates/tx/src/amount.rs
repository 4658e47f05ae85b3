//! Exact decimal amounts: `"1.5"` at 18 decimals is `1500000000000000000`, never a
//! float and never rounded.
//!
//! ```
//! use bridgectl_tx::amount::{format_units, parse_units};
//! use alloy_primitives::U256;
//!
//! let wei = parse_units("1.5", 18).unwrap();
//! assert_eq!(wei, U256::from(1_500_000_000_000_000_000u128));
//! assert_eq!(format_units(wei, 18).unwrap(), "1.5");
//! assert!(parse_units("1.5", 0).is_err()); // would need rounding
//! ```

use alloy_primitives::U256;

use crate::Error;

/// The largest number of decimals: 10^77 still fits a uint256, 10^78 does not.
pub const MAX_DECIMALS: u8 = 77;

fn amount_err(input: &str, reason: impl Into<String>) -> Error {
    Error::Amount {
        input: crate::error::shorten(input),
        reason: reason.into(),
    }
}

fn check_decimals(input: &str, decimals: u8) -> Result<(), Error> {
    if decimals > MAX_DECIMALS {
        return Err(amount_err(
            input,
            format!("decimals {decimals} is above the maximum of {MAX_DECIMALS}"),
        ));
    }
    Ok(())
}

/// Parses a non-negative decimal quantity into base units: `text * 10^decimals`, exactly.
///
/// Refused (never rounded): empty text, a sign, an exponent, anything but ASCII digits and
/// one `.` with digits on both sides, more fractional digits than `decimals`, a result
/// above uint256, and `decimals` above [`MAX_DECIMALS`].
pub fn parse_units(text: &str, decimals: u8) -> Result<U256, Error> {
    check_decimals(text, decimals)?;
    if text.is_empty() {
        return Err(amount_err(text, "empty"));
    }
    if text.starts_with('-') {
        return Err(amount_err(text, "negative amounts are not allowed"));
    }
    if text.starts_with('+') {
        return Err(amount_err(text, "a sign is not allowed"));
    }
    if text.contains(['e', 'E']) {
        return Err(amount_err(
            text,
            "exponent notation is not allowed: write the number out",
        ));
    }
    let (int, frac) = match text.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (text, None),
    };
    if let Some(bad) = text.chars().find(|c| !c.is_ascii_digit() && *c != '.') {
        return Err(amount_err(text, format!("unexpected character {bad:?}")));
    }
    if int.is_empty() {
        return Err(amount_err(text, "missing digits before the decimal point"));
    }
    let frac = frac.unwrap_or("");
    if text.contains('.') && frac.is_empty() {
        return Err(amount_err(text, "missing digits after the decimal point"));
    }
    if frac.contains('.') {
        return Err(amount_err(text, "more than one decimal point"));
    }
    if frac.len() > usize::from(decimals) {
        return Err(amount_err(
            text,
            format!(
                "{} fractional digits but the token has only {decimals} decimals (no rounding)",
                frac.len()
            ),
        ));
    }
    let mut digits = String::with_capacity(int.len() + usize::from(decimals));
    digits.push_str(int);
    digits.push_str(frac);
    digits.extend(std::iter::repeat_n('0', usize::from(decimals) - frac.len()));
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return Ok(U256::ZERO);
    }
    if digits.len() > 78 {
        return Err(amount_err(text, "does not fit in uint256"));
    }
    U256::from_str_radix(digits, 10).map_err(|_| amount_err(text, "does not fit in uint256"))
}

/// Formats base units as a decimal quantity with `decimals` places, trailing zeros of
/// the fraction removed (`1500000000000000000` at 18 is `"1.5"`, `0` is `"0"`).
pub fn format_units(value: U256, decimals: u8) -> Result<String, Error> {
    let s = value.to_string();
    check_decimals(&s, decimals)?;
    let d = usize::from(decimals);
    if d == 0 {
        return Ok(s);
    }
    let padded = if s.len() <= d {
        format!("{}{s}", "0".repeat(d + 1 - s.len()))
    } else {
        s
    };
    let (int, frac) = padded.split_at(padded.len() - d);
    let frac = frac.trim_end_matches('0');
    Ok(if frac.is_empty() {
        int.to_owned()
    } else {
        format!("{int}.{frac}")
    })
}

/// Parses a native-currency amount for gas caps: a wei integer (`"21000"`) or a decimal
/// with a unit suffix `wei`, `gwei` or `ether` (`"50gwei"`, `"0.01ether"`), exactly.
pub fn parse_native(text: &str) -> Result<U256, Error> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    let (num, decimals) = if let Some(n) = lower.strip_suffix("gwei") {
        (n, 9)
    } else if let Some(n) = lower.strip_suffix("ether") {
        (n, 18)
    } else if let Some(n) = lower.strip_suffix("eth") {
        (n, 18)
    } else if let Some(n) = lower.strip_suffix("wei") {
        (n, 0)
    } else {
        (lower.as_str(), 0)
    };
    parse_units(num.trim_end(), decimals).map_err(|e| match e {
        Error::Amount { reason, .. } => amount_err(
            text,
            format!("{reason} (expected wei, or a number with wei/gwei/ether)"),
        ),
        other => other,
    })
}

/// Formats a wei amount for people: in ether when it is at least 0.001 ether, else in
/// gwei when at least 1 gwei, else in wei; always exact.
pub fn format_native(wei: U256, symbol: &str) -> String {
    let gwei = U256::from(1_000_000_000u64);
    let milli_ether = U256::from(1_000_000_000_000_000u64);
    // `format_units` cannot fail for decimals <= 77.
    let fmt = |d: u8| format_units(wei, d).unwrap_or_else(|_| wei.to_string());
    // Always in the native unit, so a fee reads the same way as a balance; small ones
    // in gwei too, where people compare gas costs.
    if wei >= milli_ether || wei.is_zero() {
        format!("{} {symbol}", fmt(18))
    } else if wei >= gwei {
        format!("{} {symbol} ({} gwei)", fmt(18), fmt(9))
    } else {
        format!("{} {symbol} ({wei} wei)", fmt(18))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn table() {
        let ok: &[(&str, u8, &str)] = &[
            ("1.5", 18, "1500000000000000000"),
            ("0", 18, "0"),
            ("0.0", 1, "0"),
            ("1", 0, "1"),
            ("007", 2, "700"),
            ("0.000000000000000001", 18, "1"),
            ("123456789.123456789", 9, "123456789123456789"),
            (
                "115792089237316195423570985008687907853269984665640564039457584007913129639935",
                0,
                "115792089237316195423570985008687907853269984665640564039457584007913129639935",
            ),
            ("1", 77, &format!("1{}", "0".repeat(77))),
        ];
        for (text, d, want) in ok {
            let got = parse_units(text, *d).unwrap_or_else(|e| panic!("{text}@{d}: {e}"));
            assert_eq!(got.to_string(), *want, "{text}@{d}");
        }
        let bad: &[(&str, u8, &str)] = &[
            ("", 18, "empty"),
            ("-1", 18, "negative"),
            ("+1", 18, "sign"),
            ("1e18", 0, "exponent"),
            ("1E3", 0, "exponent"),
            ("1.5", 0, "fractional digits"),
            ("0.0000000000000000001", 18, "fractional digits"),
            ("1.", 18, "after the decimal point"),
            (".5", 18, "before the decimal point"),
            ("1.2.3", 18, "more than one decimal point"),
            (" 1", 18, "unexpected character"),
            ("1_000", 18, "unexpected character"),
            ("0x10", 0, "unexpected character"),
            (
                "115792089237316195423570985008687907853269984665640564039457584007913129639936",
                0,
                "uint256",
            ),
            ("2", 77, "uint256"),
            ("1", 78, "maximum"),
        ];
        for (text, d, why) in bad {
            let err = parse_units(text, *d).expect_err(text).to_string();
            assert!(err.contains(why), "{text}@{d}: {err:?} lacks {why:?}");
        }
        // "1.2.3" has a dot inside the fraction: reported as such.
        assert!(parse_units("1.2.3", 18).is_err());
    }

    #[test]
    fn format_table() {
        let cases: &[(&str, u8, &str)] = &[
            ("1500000000000000000", 18, "1.5"),
            ("0", 18, "0"),
            ("1", 18, "0.000000000000000001"),
            ("1000", 3, "1"),
            ("1001", 3, "1.001"),
            ("12", 0, "12"),
        ];
        for (v, d, want) in cases {
            let v = U256::from_str_radix(v, 10).expect("test value");
            assert_eq!(format_units(v, *d).expect("format"), *want);
        }
        assert!(format_units(U256::from(1), 78).is_err());
    }

    #[test]
    fn native() {
        assert_eq!(
            parse_native("50gwei").expect("gwei"),
            U256::from(50_000_000_000u64)
        );
        assert_eq!(
            parse_native("0.01ether").expect("eth"),
            U256::from(10_000_000_000_000_000u64)
        );
        assert_eq!(parse_native("21000").expect("wei"), U256::from(21000));
        assert_eq!(parse_native("7 wei").expect("wei"), U256::from(7));
        assert!(parse_native("1.5wei").is_err());
        assert!(parse_native("1.0000000001gwei").is_err());
        assert!(parse_native("fast").is_err());
        assert_eq!(
            format_native(U256::from(420_000_000_000_000u64), "ETH"),
            "0.00042 ETH (420000 gwei)"
        );
        assert_eq!(
            format_native(U256::from(7u64), "ETH"),
            "0.000000000000000007 ETH (7 wei)"
        );
        assert_eq!(format_native(U256::ZERO, "ETH"), "0 ETH");
        assert_eq!(
            format_native(U256::from(1_500_000_000_000_000_000u128), "ETH"),
            "1.5 ETH"
        );
    }

    proptest! {
        #[test]
        fn round_trip(limbs in any::<[u64; 4]>(), decimals in 0u8..=77) {
            let v = U256::from_limbs(limbs);
            let text = format_units(v, decimals).expect("format");
            prop_assert_eq!(parse_units(&text, decimals).expect("parse"), v);
        }

        #[test]
        fn small_round_trip(v in any::<u128>(), decimals in 0u8..=30) {
            let v = U256::from(v);
            let text = format_units(v, decimals).expect("format");
            prop_assert_eq!(parse_units(&text, decimals).expect("parse"), v);
        }
    }
}
