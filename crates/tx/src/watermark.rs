//! Watermarks: per key and chain, the highest nonce the key signed and the nonces below
//! it that it did not sign (as far as the record reaches). What a store keeps outside
//! its entries, and an acknowledgement carries into the log, so that a nonce stays
//! signed when the entry that recorded it is lost or hidden (see
//! [`crate::signing_log::AtNonce`]).
//!
//! Like the low watermark of a validator's slashing protection, with one difference: a
//! key's transactions are not signed in nonce order (two flows reserve 3 and 4 and sign
//! 4 first; a prepared batch signs its nonces after an online flow signed a later one),
//! so a watermark keeps the gaps below it, and a nonce in a gap is not held. A watermark
//! only ever holds more as signatures are added, never less: merging two is the union of
//! what each holds.

use alloy_primitives::Address;
use serde::{Deserialize, Serialize};

/// The most gaps one watermark keeps. A signature that would make more drops the lowest
/// (oldest) ones: those nonces then count as signed, which refuses more, never less.
pub const MAX_GAPS: usize = 8;

/// What is known of the nonces `key` signed on `chain_id`: every nonce up to `nonce` was
/// signed, but those in `gaps`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Watermark {
    /// The signing key.
    pub key: Address,
    /// The chain.
    pub chain_id: u64,
    /// The highest nonce signed.
    pub nonce: u64,
    /// Nonces below `nonce` not known to be signed, as inclusive ranges `[first, last]`,
    /// lowest first, disjoint and not adjacent; at most [`MAX_GAPS`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<[u64; 2]>,
}

impl Watermark {
    /// The watermark of a key whose first known signature on the chain is at `nonce`:
    /// what came before it is not known to be signed.
    pub fn first(key: Address, chain_id: u64, nonce: u64) -> Watermark {
        Watermark {
            key,
            chain_id,
            nonce,
            gaps: if nonce == 0 {
                Vec::new()
            } else {
                vec![[0, nonce - 1]]
            },
        }
    }

    /// The watermark of a chain's word that `count` transactions of `key` are mined or
    /// pending there (its next nonce): every nonce below `count` is used. `None` for 0.
    pub fn below(key: Address, chain_id: u64, count: u64) -> Option<Watermark> {
        let nonce = count.checked_sub(1)?;
        Some(Watermark {
            key,
            chain_id,
            nonce,
            gaps: Vec::new(),
        })
    }

    /// Whether this watermark says `nonce` was signed.
    pub fn holds(&self, nonce: u64) -> bool {
        nonce <= self.nonce && !self.gaps.iter().any(|[a, b]| *a <= nonce && nonce <= *b)
    }

    /// Records a signature at `nonce`.
    pub fn sign(&mut self, nonce: u64) {
        if nonce > self.nonce {
            if nonce > self.nonce + 1 {
                self.gaps.push([self.nonce + 1, nonce - 1]);
            }
            self.nonce = nonce;
        } else if let Some(i) = self
            .gaps
            .iter()
            .position(|[a, b]| *a <= nonce && nonce <= *b)
        {
            let [a, b] = self.gaps.remove(i);
            let mut split = Vec::with_capacity(2);
            if a < nonce {
                split.push([a, nonce - 1]);
            }
            if nonce < b {
                split.push([nonce + 1, b]);
            }
            self.gaps.splice(i..i, split);
        }
        self.bound();
    }

    /// Adds what `other` (of the same key and chain) holds: the union of both.
    pub fn merge(&mut self, other: &Watermark) {
        let top = self.nonce.max(other.nonce);
        // What each leaves unsigned up to the new top; what both leave stays a gap.
        let open = |w: &Watermark| {
            let mut gaps = w.gaps.clone();
            if w.nonce < top {
                gaps.push([w.nonce + 1, top]);
            }
            gaps
        };
        let (a, b) = (open(self), open(other));
        let mut gaps = Vec::new();
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            let lo = a[i][0].max(b[j][0]);
            let hi = a[i][1].min(b[j][1]);
            if lo <= hi {
                gaps.push([lo, hi]);
            }
            if a[i][1] < b[j][1] {
                i += 1;
            } else {
                j += 1;
            }
        }
        self.nonce = top;
        self.gaps = gaps;
        self.bound();
    }

    /// Drops the lowest gaps past [`MAX_GAPS`]: they count as signed.
    fn bound(&mut self) {
        if self.gaps.len() > MAX_GAPS {
            self.gaps.drain(..self.gaps.len() - MAX_GAPS);
        }
    }
}

/// A set of watermarks, one per key and chain, least recently moved first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Watermarks(pub Vec<Watermark>);

impl Watermarks {
    /// The watermark of `key` on `chain_id`, if any.
    pub fn get(&self, key: Address, chain_id: u64) -> Option<&Watermark> {
        self.0
            .iter()
            .find(|w| w.key == key && w.chain_id == chain_id)
    }

    /// Records a signature of `key` at `nonce` on `chain_id`: its watermark there moves
    /// (made if there is none) and becomes the most recently moved.
    pub fn signed(&mut self, key: Address, chain_id: u64, nonce: u64) {
        let moved = match self
            .0
            .iter()
            .position(|w| w.key == key && w.chain_id == chain_id)
        {
            Some(i) => {
                let mut w = self.0.remove(i);
                w.sign(nonce);
                w
            }
            None => Watermark::first(key, chain_id, nonce),
        };
        self.0.push(moved);
    }

    /// Records `key`'s reset of `chain_id`: the chain started over, its watermark there
    /// is gone.
    pub fn reset(&mut self, key: Address, chain_id: u64) {
        self.0.retain(|w| !(w.key == key && w.chain_id == chain_id));
    }

    /// Adds what `w` holds to its key and chain's watermark (or adds it).
    pub fn merge(&mut self, w: &Watermark) {
        match self
            .0
            .iter_mut()
            .find(|m| m.key == w.key && m.chain_id == w.chain_id)
        {
            Some(m) => m.merge(w),
            None => self.0.push(w.clone()),
        }
    }

    /// Keeps the `most` most recently moved.
    pub fn keep_newest(&mut self, most: usize) {
        if self.0.len() > most {
            self.0.drain(..self.0.len() - most);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const K: Address = Address::repeat_byte(1);

    fn held(w: &Watermark, upto: u64) -> Vec<u64> {
        (0..=upto).filter(|n| w.holds(*n)).collect()
    }

    #[test]
    fn a_watermark_holds_what_was_signed_and_keeps_the_gaps() {
        let mut w = Watermark::first(K, 7, 3);
        assert_eq!(held(&w, 6), [3], "what came before is not known");
        w.sign(4);
        w.sign(7);
        assert_eq!(held(&w, 9), [3, 4, 7]);
        assert_eq!(w.gaps, [[0, 2], [5, 6]]);
        w.sign(5);
        assert_eq!(w.gaps, [[0, 2], [6, 6]]);
        w.sign(6);
        w.sign(0);
        assert_eq!(w.gaps, [[1, 2]]);
        assert!(!w.holds(8), "one above the watermark");
        assert!(w.holds(7), "the watermark itself");
        assert_eq!(Watermark::below(K, 7, 0), None);
        assert_eq!(
            held(&Watermark::below(K, 7, 3).expect("some"), 5),
            [0, 1, 2]
        );
    }

    #[test]
    fn past_max_gaps_the_lowest_count_as_signed() {
        let mut w = Watermark::first(K, 1, 0);
        for n in 1..=(MAX_GAPS as u64 + 2) {
            w.sign(n * 2);
        }
        assert_eq!(w.gaps.len(), MAX_GAPS);
        assert!(
            w.holds(1) && w.holds(3),
            "the two lowest gaps dropped: held"
        );
        assert!(!w.holds(5), "the rest kept");
    }

    #[test]
    fn a_set_moves_by_signatures_and_merges_and_a_reset_starts_a_chain_over() {
        let mut set = Watermarks::default();
        set.signed(K, 7, 2);
        set.signed(K, 8, 0);
        set.signed(K, 7, 5);
        assert_eq!(set.get(K, 7).map(|w| w.nonce), Some(5));
        assert_eq!(
            set.0.last().map(|w| w.chain_id),
            Some(7),
            "most recently moved last"
        );
        set.merge(&Watermark::below(K, 7, 4).expect("some"));
        assert_eq!(set.get(K, 7).map(|w| w.gaps.clone()), Some(vec![[4, 4]]));
        set.keep_newest(1);
        assert_eq!(set.get(K, 8), None, "the least recently moved dropped");
        set.reset(K, 7);
        assert_eq!(set.get(K, 7), None);
    }

    fn watermark() -> impl Strategy<Value = Watermark> {
        (0u64..40, proptest::collection::vec(0u64..40, 0..12)).prop_map(|(first, more)| {
            let mut w = Watermark::first(K, 1, first);
            for n in more {
                w.sign(n);
            }
            w
        })
    }

    proptest! {
        /// Signing holds the nonce and everything held before; merging holds the union
        /// (or more, where the bound on gaps dropped some); gaps stay sorted, disjoint
        /// and below the watermark.
        #[test]
        fn signing_and_merging_never_free_a_nonce(a in watermark(), b in watermark(), n in 0u64..60) {
            let mut signed = a.clone();
            signed.sign(n);
            prop_assert!(signed.holds(n));
            for m in 0..60 {
                prop_assert!(!a.holds(m) || signed.holds(m));
            }
            let mut both = a.clone();
            both.merge(&b);
            for m in 0..60 {
                prop_assert!(!(a.holds(m) || b.holds(m)) || both.holds(m), "{m} freed");
                if both.gaps.len() < MAX_GAPS {
                    prop_assert_eq!(both.holds(m), a.holds(m) || b.holds(m));
                }
            }
            for w in [&signed, &both] {
                prop_assert!(w.gaps.len() <= MAX_GAPS);
                for g in &w.gaps {
                    prop_assert!(g[0] <= g[1] && g[1] < w.nonce);
                }
                for pair in w.gaps.windows(2) {
                    prop_assert!(pair[0][1] + 1 < pair[1][0], "{:?}", w.gaps);
                }
            }
        }
    }
}
