//! `parse_units` and `format_units` against a reference written separately: schoolbook
//! arithmetic on base-2^32 limbs, digit by digit, with the uint256 bound as 2^256 computed
//! by doubling. Nothing of it is shared with `amount.rs` (which concatenates digit strings
//! and calls `U256::from_str_radix`), and nothing goes through `U256`'s own decimal
//! parsing or printing.
//!
//! Both directions, on arbitrary text (leading and trailing zeros, up to 160 digits, runs
//! of zeros that scale by powers of ten, stray characters) and every `decimals` 0..=77:
//! the two must agree on what is accepted, and on the exact value.

use alloy_primitives::U256;
use bridgectl_tx::amount::{format_units, parse_units};
use proptest::prelude::*;

/// A non-negative integer as little-endian base-2^32 limbs, no high zero limbs.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Big(Vec<u32>);

impl Big {
    fn zero() -> Big {
        Big(Vec::new())
    }

    /// `self * m + a`.
    fn mul_add(&self, m: u32, a: u32) -> Big {
        let mut out = Vec::with_capacity(self.0.len() + 1);
        let mut carry = u64::from(a);
        for &limb in &self.0 {
            let t = u64::from(limb) * u64::from(m) + carry;
            out.push(t as u32);
            carry = t >> 32;
        }
        if carry > 0 {
            out.push(carry as u32);
        }
        while out.last() == Some(&0) {
            out.pop();
        }
        Big(out)
    }

    /// `(self / d, self % d)`.
    fn div_rem(&self, d: u32) -> (Big, u32) {
        let mut q = vec![0u32; self.0.len()];
        let mut rem = 0u64;
        for i in (0..self.0.len()).rev() {
            let cur = (rem << 32) | u64::from(self.0[i]);
            q[i] = (cur / u64::from(d)) as u32;
            rem = cur % u64::from(d);
        }
        while q.last() == Some(&0) {
            q.pop();
        }
        (Big(q), rem as u32)
    }

    fn cmp_value(&self, other: &Big) -> std::cmp::Ordering {
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
    }

    /// 2^256, by doubling one 256 times.
    fn two_pow_256() -> Big {
        (0..256).fold(Big(vec![1]), |b, _| b.mul_add(2, 0))
    }

    fn from_u256(v: U256) -> Big {
        let mut limbs = Vec::new();
        for l in v.as_limbs() {
            limbs.push(*l as u32);
            limbs.push((*l >> 32) as u32);
        }
        while limbs.last() == Some(&0) {
            limbs.pop();
        }
        Big(limbs)
    }

    fn to_u256(&self) -> U256 {
        let mut limbs = [0u64; 4];
        for (i, l) in self.0.iter().enumerate() {
            limbs[i / 2] |= u64::from(*l) << (32 * (i % 2));
        }
        U256::from_limbs(limbs)
    }

    /// Decimal digits, most significant first, by repeated division by ten.
    fn decimal(&self) -> String {
        let mut digits = Vec::new();
        let mut cur = self.clone();
        while !cur.0.is_empty() {
            let (q, r) = cur.div_rem(10);
            digits.push(char::from(b'0' + r as u8));
            cur = q;
        }
        if digits.is_empty() {
            digits.push('0');
        }
        digits.iter().rev().collect()
    }
}

/// The reference parse: `Some(value)` when `text` is `digits[.digits]` with at most
/// `decimals` fractional digits and a value below 2^256, else `None`.
fn reference_parse(text: &str, decimals: u8) -> Option<U256> {
    let (int, frac) = match text.split_once('.') {
        Some((i, f)) => (i, f),
        None => (text, ""),
    };
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !all_digits(int) || !all_digits(frac) {
        return None;
    }
    if text.contains('.') && frac.is_empty() {
        return None;
    }
    if frac.len() > usize::from(decimals) {
        return None;
    }
    let mut v = Big::zero();
    for b in int.bytes().chain(frac.bytes()) {
        v = v.mul_add(10, u32::from(b - b'0'));
    }
    for _ in frac.len()..usize::from(decimals) {
        v = v.mul_add(10, 0);
    }
    (v.cmp_value(&Big::two_pow_256()) == std::cmp::Ordering::Less).then(|| v.to_u256())
}

/// The reference format: the decimal digits with the point `decimals` from the right,
/// the fraction's trailing zeros removed, and no point when nothing is left of it.
fn reference_format(v: U256, decimals: u8) -> String {
    let digits = Big::from_u256(v).decimal();
    let d = usize::from(decimals);
    let padded = format!(
        "{}{digits}",
        "0".repeat((d + 1).saturating_sub(digits.len()))
    );
    let point = padded.len() - d;
    let frac = padded[point..].trim_end_matches('0');
    if frac.is_empty() {
        padded[..point].to_owned()
    } else {
        format!("{}.{frac}", &padded[..point])
    }
}

/// Decimal text: leading zeros, up to 80 digits on each side, runs of zeros that scale
/// it by powers of ten, and now and then something that is not a number at all.
fn decimal_text() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => ("0{0,4}[0-9]{1,80}", proptest::option::of("[0-9]{0,40}0{0,40}"))
            .prop_map(|(i, f)| match f {
                Some(f) => format!("{i}.{f}"),
                None => i,
            }),
        2 => ("[1-9]", "0{0,90}").prop_map(|(a, z)| format!("{a}{z}")),
        2 => "0\\.0{0,80}[1-9]",
        1 => "[0-9.eE+\\- _]{0,12}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn parse_agrees_with_the_reference(text in decimal_text(), decimals in 0u8..=77) {
        let got = parse_units(&text, decimals).ok();
        prop_assert_eq!(got, reference_parse(&text, decimals), "{:?} at {}", text, decimals);
    }

    #[test]
    fn format_agrees_with_the_reference(limbs in any::<[u64; 4]>(), shift in 0u32..256, decimals in 0u8..=77) {
        // Small values too: shifting right makes every magnitude likely.
        let v = U256::from_limbs(limbs) >> shift;
        prop_assert_eq!(format_units(v, decimals).expect("format"), reference_format(v, decimals));
    }
}

#[test]
fn the_reference_knows_the_edges() {
    let max = "115792089237316195423570985008687907853269984665640564039457584007913129639935";
    assert_eq!(reference_parse(max, 0), Some(U256::MAX));
    assert_eq!(
        reference_parse(
            "115792089237316195423570985008687907853269984665640564039457584007913129639936",
            0
        ),
        None
    );
    assert_eq!(reference_format(U256::MAX, 0), max);
    assert_eq!(
        reference_parse("1.5", 18),
        Some(U256::from(1_500_000_000_000_000_000u128))
    );
    assert_eq!(reference_format(U256::from(1_500_000u64), 6), "1.5");
    assert_eq!(reference_format(U256::ZERO, 77), "0");
    assert_eq!(reference_parse("1.", 18), None);
    assert_eq!(reference_parse(".5", 18), None);
    assert_eq!(reference_parse("0.10", 1), None);
}
