//! The peg of the two tokens, and where a swap's ST credit comes from: what tells a swap's
//! own credit apart (`flows/credit.rs` uses it), part of the bridge description.

use alloy_primitives::{Address, U256, U512};
use serde::{Deserialize, Serialize};

/// The peg the tokens were fixed at: `mt` whole MT are worth `st` whole ST. Written
/// `"MT:ST"` in whole tokens wherever it is read or written (`"1:2"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PegRatio {
    /// Whole MT.
    pub mt: u64,
    /// Whole ST they are worth.
    pub st: u64,
}

impl PegRatio {
    /// The ST base units a swap of `mt` MT base units is credited: `mt * st * 10^st_dec /
    /// (mt_ratio * 10^mt_dec)`, rounded down. `None` when either side of the ratio is 0 or
    /// the result does not fit in 256 bits.
    pub fn credit_for(&self, mt: U256, mt_decimals: u8, st_decimals: u8) -> Option<U256> {
        if self.mt == 0 || self.st == 0 {
            return None;
        }
        let wide = |v: U256| U512::from_limbs_slice(v.as_limbs());
        let pow10 = |d: u8| wide(U256::from(10u8).pow(U256::from(d)));
        let num = wide(mt) * U512::from(self.st) * pow10(st_decimals);
        let den = U512::from(self.mt) * pow10(mt_decimals);
        U256::checked_from_limbs_slice((num / den).as_limbs())
    }

    /// The MT base units a redeem of `st` ST base units is paid, the other way round:
    /// `st * mt * 10^mt_dec / (st_ratio * 10^st_dec)`, rounded down (a bridge keeps the
    /// remainder). `None` as for [`PegRatio::credit_for`].
    pub fn payout_for(&self, st: U256, mt_decimals: u8, st_decimals: u8) -> Option<U256> {
        PegRatio {
            mt: self.st,
            st: self.mt,
        }
        .credit_for(st, st_decimals, mt_decimals)
    }
}

impl std::str::FromStr for PegRatio {
    type Err = String;

    /// `"MT:ST"` in whole tokens, e.g. `"1:2"`: 1 MT is worth 2 ST.
    fn from_str(text: &str) -> Result<PegRatio, String> {
        let bad = || format!("expected MT:ST in whole tokens (e.g. \"1:2\"), found {text:?}");
        let (mt, st) = text.split_once(':').ok_or_else(bad)?;
        let side = |s: &str| {
            s.trim()
                .parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(bad)
        };
        Ok(PegRatio {
            mt: side(mt)?,
            st: side(st)?,
        })
    }
}

impl TryFrom<String> for PegRatio {
    type Error = String;

    fn try_from(text: String) -> Result<PegRatio, String> {
        text.parse()
    }
}

impl From<PegRatio> for String {
    fn from(ratio: PegRatio) -> String {
        ratio.to_string()
    }
}

impl std::fmt::Display for PegRatio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.mt, self.st)
    }
}

/// How a swap's own credit is told apart (see the module doc).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SwapCredit {
    /// The peg ratio: with it, only a credit of exactly the amount the ratio gives is a
    /// swap's. Without it, the amount is not checked (see the module doc).
    #[serde(default)]
    pub ratio: Option<PegRatio>,
    /// Whom the ST of a swap comes from: the zero address (a mint) by default.
    #[serde(default)]
    pub source: Address,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peg_gives_the_credit_rounded_down() {
        let one = |d: u8| U256::from(10u8).pow(U256::from(d));
        let r: PegRatio = "1:2".parse().expect("ratio");
        // 1.5 MT at 18 decimals is 3 ST at 6 decimals, written out by hand.
        assert_eq!(
            r.credit_for(U256::from(1_500_000_000_000_000_000u128), 18, 6),
            Some(U256::from(3_000_000u64))
        );
        // 3:1 leaves a remainder: 1 MT base unit at equal decimals is 0 ST.
        let r3: PegRatio = "3:1".parse().expect("ratio");
        assert_eq!(r3.credit_for(U256::from(1u8), 6, 6), Some(U256::ZERO));
        assert_eq!(r3.credit_for(one(6) * U256::from(3u8), 6, 6), Some(one(6)));
        assert_eq!(r.to_string(), "1:2");
        for bad in ["", "1", "0:1", "1:0", "1:2:3", "-1:2", "1.5:2", "a:b"] {
            assert!(bad.parse::<PegRatio>().is_err(), "{bad}");
        }
        assert_eq!(r.credit_for(U256::MAX, 0, 18), None, "overflow");
    }
}
