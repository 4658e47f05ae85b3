//! The amount parser against an exact decimal reference.

use bridgectl_tx::amount::{MAX_DECIMALS, format_units, parse_native, parse_units};

/// Input: one byte of decimals (taken mod 80, so 78 and 79 are out of range), then the
/// text.
///
/// Properties: [`parse_units`] accepts exactly what [`reference`] accepts and yields the
/// same number; what it yields formats back to text that parses to the same number;
/// [`parse_native`] never panics.
pub fn amount(data: &[u8]) {
    let Some((&d, text)) = data.split_first() else {
        return;
    };
    let decimals = d % 80;
    let text = String::from_utf8_lossy(text);
    let got = parse_units(&text, decimals).ok();
    let want = reference(&text, decimals);
    assert_eq!(
        got.map(|v| v.into_limbs()),
        want,
        "parse_units({text:?}, {decimals}) disagrees with the reference"
    );
    if let Some(v) = got {
        let back = format_units(v, decimals).expect("a parsed amount formats");
        assert_eq!(
            parse_units(&back, decimals).ok(),
            Some(v),
            "{text:?} -> {v} -> {back:?} does not parse back"
        );
    }
    let _ = parse_native(&text);
}

/// An exact decimal reference, written apart from the parser: a grammar check by a
/// small state machine, then schoolbook `value * 10 + digit` on 320-bit limbs, refusing
/// as soon as the value leaves 256 bits. Returns the uint256 limbs (little endian).
pub fn reference(text: &str, decimals: u8) -> Option<[u64; 4]> {
    if decimals > MAX_DECIMALS {
        return None;
    }
    // States: 0 = start, 1 = integer digits, 2 = just after '.', 3 = fraction digits.
    let mut state = 0u8;
    let mut fraction_digits = 0usize;
    let mut value = [0u64; 5];
    for c in text.chars() {
        let digit = c.to_digit(10).filter(|_| c.is_ascii_digit());
        state = match (state, digit, c) {
            (0 | 1, Some(_), _) => 1,
            (1, None, '.') => 2,
            (2 | 3, Some(_), _) => {
                fraction_digits += 1;
                3
            }
            _ => return None,
        };
        if let Some(d) = digit {
            mul_add(&mut value, u64::from(d))?;
        }
    }
    if state != 1 && state != 3 {
        return None;
    }
    if fraction_digits > usize::from(decimals) {
        return None;
    }
    for _ in fraction_digits..usize::from(decimals) {
        mul_add(&mut value, 0)?;
    }
    Some([value[0], value[1], value[2], value[3]])
}

/// `value = value * 10 + digit`; `None` once the value no longer fits 256 bits.
fn mul_add(value: &mut [u64; 5], digit: u64) -> Option<()> {
    let mut carry = u128::from(digit);
    for limb in value.iter_mut() {
        let x = u128::from(*limb) * 10 + carry;
        *limb = x as u64;
        carry = x >> 64;
    }
    (carry == 0 && value[4] == 0).then_some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::U256;

    #[test]
    fn reference_agrees_on_the_edges() {
        let max = U256::MAX.to_string();
        assert_eq!(reference(&max, 0), Some(U256::MAX.into_limbs()));
        let over = "115792089237316195423570985008687907853269984665640564039457584007913129639936";
        assert_eq!(reference(over, 0), None);
        assert_eq!(
            reference("1.5", 18),
            Some(U256::from(15u64 * 10u64.pow(17)).into_limbs())
        );
        for bad in ["", ".", "1.", ".5", "1..2", "-1", "+1", "1e3", "١", " 1"] {
            assert_eq!(reference(bad, 18), None, "{bad:?}");
            amount(&[18, b'x']);
        }
        for text in [
            "0",
            "007",
            "0.000000000000000001",
            "1.2",
            "9".repeat(80).as_str(),
        ] {
            let mut input = vec![18u8];
            input.extend_from_slice(text.as_bytes());
            amount(&input);
        }
    }
}
