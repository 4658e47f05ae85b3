//! Exact integer amounts: whole-token config values, and the swap [`Ratio`] with the
//! swap/redeem conversion at that ratio.
//!
//! The conversion rounds down (the remainder of a base unit stays with the bridge), and is
//! computed in 512 bits so no intermediate product can overflow.

use alloy_primitives::{U256, U512};
use serde::Deserialize;

/// `mt` whole MT are worth `st` whole ST (both positive integers). Default: 1 and 1,
/// each side too (`[ratio]` with only `st = 2` is 1 MT = 2 ST).
#[derive(Debug, Clone, Copy, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct Ratio {
    /// Whole MT side of the ratio.
    pub mt: u64,
    /// Whole ST side of the ratio.
    pub st: u64,
}

impl Default for Ratio {
    fn default() -> Self {
        Ratio { mt: 1, st: 1 }
    }
}

/// `value` whole tokens (a decimal integer string) in base units of `decimals`.
pub fn whole_tokens(value: &str, decimals: u8) -> Result<U256, String> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "expected a whole number of tokens, found {value:?}"
        ));
    }
    let n = U256::from_str_radix(value, 10).map_err(|_| format!("{value:?} overflows uint256"))?;
    n.checked_mul(pow10(decimals))
        .ok_or_else(|| format!("{value:?} with {decimals} decimals overflows uint256"))
}

fn pow10(decimals: u8) -> U256 {
    U256::from(10u8).pow(U256::from(decimals))
}

/// ST base units for `mt` MT base units: `mt * ratio.st * 10^st_dec / (ratio.mt * 10^mt_dec)`,
/// rounded down. `None` when the result does not fit in uint256.
pub fn mt_to_st(mt: U256, ratio: Ratio, mt_dec: u8, st_dec: u8) -> Option<U256> {
    scale(mt, ratio.st, st_dec, ratio.mt, mt_dec)
}

/// MT base units for `st` ST base units, the inverse of [`mt_to_st`] (rounded down).
pub fn st_to_mt(st: U256, ratio: Ratio, mt_dec: u8, st_dec: u8) -> Option<U256> {
    scale(st, ratio.mt, mt_dec, ratio.st, st_dec)
}

fn scale(x: U256, num: u64, num_dec: u8, den: u64, den_dec: u8) -> Option<U256> {
    let wide = |v: U256| U512::from_limbs_slice(v.as_limbs());
    let n = wide(x) * U512::from(num) * wide(pow10(num_dec));
    let d = U512::from(den) * wide(pow10(den_dec));
    let q = n / d;
    U256::checked_from_limbs_slice(q.as_limbs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> U256 {
        U256::from_str_radix(s, 10).expect("test number")
    }

    #[test]
    fn whole_tokens_are_exact() {
        assert_eq!(whole_tokens("15", 18), Ok(u("15000000000000000000")));
        assert_eq!(whole_tokens("0", 6), Ok(U256::ZERO));
        assert!(whole_tokens("1.5", 18).is_err());
        assert!(whole_tokens("-1", 18).is_err());
        assert!(whole_tokens("", 18).is_err());
        assert!(whole_tokens(&"9".repeat(80), 0).is_err());
        assert!(whole_tokens(&"9".repeat(70), 18).is_err());
    }

    #[test]
    fn conversion_honours_ratio_and_decimals() {
        let r = Ratio { mt: 1, st: 2 };
        // 1.5 MT (18 decimals) -> 3 ST (6 decimals)
        assert_eq!(
            mt_to_st(u("1500000000000000000"), r, 18, 6),
            Some(u("3000000"))
        );
        // and back
        assert_eq!(
            st_to_mt(u("3000000"), r, 18, 6),
            Some(u("1500000000000000000"))
        );
        // rounding down: 1 wei of MT is less than one ST base unit
        assert_eq!(mt_to_st(U256::from(1u8), r, 18, 6), Some(U256::ZERO));
        // 3 MT : 1 ST, same decimals, rounds down
        let r = Ratio { mt: 3, st: 1 };
        assert_eq!(mt_to_st(U256::from(10u8), r, 18, 18), Some(U256::from(3u8)));
        // overflow is reported, not wrapped
        assert_eq!(mt_to_st(U256::MAX, Ratio { mt: 1, st: 2 }, 0, 0), None);
        assert_eq!(
            mt_to_st(U256::MAX, Ratio { mt: 1, st: 1 }, 0, 0),
            Some(U256::MAX)
        );
    }
}
