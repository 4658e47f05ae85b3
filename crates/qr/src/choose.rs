//! Which fountain parts a fixed set of frames (PNG files) carries, so that any
//! [`MAX_LOST_FRAMES`] of them can be lost and the rest still rebuild the message, for any
//! BC-UR decoder, even one that only peels (uses a part when all its fragments but one are
//! known).
//!
//! The set is every fragment (parts 1 to `count`) and fountain parts chosen among the
//! sequence numbers after them (what each mixes is fixed by its number and the message's
//! checksum, so choosing parts is choosing numbers). Peeling is stuck exactly when some
//! set `S` of unknown fragments has no frame left that mixes exactly one of them. Each
//! fragment's own frame mixes exactly one of `S`, so a set of more than `k` fragments
//! always keeps one after `k` losses; for `k` = 2 what remains to hold is that every
//! fragment is in at least 2 chosen fountain parts (`S` of one: 3 frames in all) and
//! that every two fragments are told apart by at least one chosen part that mixes one
//! and not the other (`S` of two: 3 frames in all). Parts are chosen greedily, the one
//! that mends most of what is still missing first, among the next [`WINDOW`] numbers.

use std::collections::HashMap;

use crate::fountain::indexes;

/// How many frames of a [`crate::frame_set`] may be lost, any of them, with the rest
/// still rebuilding the message.
pub const MAX_LOST_FRAMES: usize = 2;

/// How many sequence numbers are weighed against each other for each part chosen.
const WINDOW: usize = 256;

/// The sequence numbers of the fountain parts to show with the `count` fragments of a
/// message whose checksum is `checksum` (`count` >= 2).
pub(crate) fn fountain_parts(count: usize, checksum: u32) -> Vec<u32> {
    let mut cover = Cover::new(count);
    let mut chosen = Vec::new();
    let mut pool: Vec<(u32, Vec<usize>)> = Vec::with_capacity(WINDOW);
    let mut next = count as u32 + 1;
    while !cover.is_complete() {
        while pool.len() < WINDOW {
            pool.push((next, indexes(next, count, checksum)));
            next += 1;
        }
        let (best, gain) = pool
            .iter()
            .enumerate()
            .map(|(i, (_, mixed))| (i, cover.gain(mixed)))
            .fold((0, 0), |a, b| if b.1 > a.1 { b } else { a });
        if gain == 0 {
            // Nothing in this window mends anything: weigh the next numbers.
            pool.clear();
            continue;
        }
        let (seq, mixed) = pool.swap_remove(best);
        cover.add(&mixed);
        chosen.push(seq);
    }
    chosen.sort_unstable();
    chosen
}

/// What the chosen fountain parts cover: how many mix each fragment, and which
/// fragments no part tells apart yet (those in the same class: mixed by the same parts).
struct Cover {
    parts_with: Vec<usize>,
    class: Vec<usize>,
    class_size: Vec<usize>,
}

impl Cover {
    fn new(count: usize) -> Cover {
        Cover {
            parts_with: vec![0; count],
            class: vec![0; count],
            class_size: vec![count],
        }
    }

    /// How much is still missing: a unit for each part a fragment lacks, and for each two
    /// fragments no part tells apart.
    fn missing(&self) -> usize {
        let lacking: usize = self
            .parts_with
            .iter()
            .map(|&n| MAX_LOST_FRAMES.saturating_sub(n))
            .sum();
        let alike: usize = self
            .class_size
            .iter()
            .map(|&s| s * s.saturating_sub(1) / 2)
            .sum();
        lacking + alike
    }

    fn is_complete(&self) -> bool {
        self.missing() == 0
    }

    /// How much of what is missing a part that mixes `mixed` would mend.
    fn gain(&self, mixed: &[usize]) -> usize {
        let lacking = mixed
            .iter()
            .filter(|&&i| self.parts_with[i] < MAX_LOST_FRAMES)
            .count();
        let mut in_part: HashMap<usize, usize> = HashMap::new();
        for &i in mixed {
            *in_part.entry(self.class[i]).or_default() += 1;
        }
        let split: usize = in_part
            .iter()
            .map(|(&c, &m)| m * (self.class_size[c] - m))
            .sum();
        lacking + split
    }

    fn add(&mut self, mixed: &[usize]) {
        let mut moved: HashMap<usize, usize> = HashMap::new();
        for &i in mixed {
            self.parts_with[i] += 1;
            let old = self.class[i];
            let new = *moved.entry(old).or_insert_with(|| {
                self.class_size.push(0);
                self.class_size.len() - 1
            });
            self.class_size[old] -= 1;
            self.class_size[new] += 1;
            self.class[i] = new;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fountain::peeled;

    /// The fragments each frame of a set mixes: the fragments, then the chosen parts.
    fn set(count: usize, checksum: u32) -> Vec<Vec<usize>> {
        (1..=count as u32)
            .chain(fountain_parts(count, checksum))
            .map(|seq| indexes(seq, count, checksum))
            .collect()
    }

    #[test]
    fn peeling_rebuilds_any_set_with_up_to_two_frames_lost() {
        for count in 2..=24 {
            for checksum in [0, 1, 0x5eed, 0xdead_beef, count as u32 * 7919] {
                let frames = set(count, checksum);
                let n = frames.len();
                for a in 0..n {
                    for b in a..n {
                        let kept: Vec<Vec<usize>> = (0..n)
                            .filter(|&i| i != a && i != b)
                            .map(|i| frames[i].clone())
                            .collect();
                        assert_eq!(
                            peeled(count, &kept),
                            count,
                            "{count}/{checksum:x}: {a}, {b}"
                        );
                    }
                }
            }
        }
        // Larger messages (a batch of 100 redeems is 47 parts, the largest message 547),
        // pairs of frames lost at random.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut random = |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        };
        for (count, checksum) in [(47, 3), (120, 0xfeed), (547, 42)] {
            let frames = set(count, checksum);
            for _ in 0..40 {
                let (a, b) = (random(frames.len()), random(frames.len()));
                let kept: Vec<Vec<usize>> = (0..frames.len())
                    .filter(|&i| i != a && i != b)
                    .map(|i| frames[i].clone())
                    .collect();
                assert_eq!(peeled(count, &kept), count, "{count}: {a}, {b}");
            }
        }
    }

    #[test]
    fn every_fragment_is_in_two_parts_and_every_two_are_told_apart() {
        for (count, checksum) in [(2, 1), (3, 7), (9, 0xdead_beef), (47, 5), (300, 11)] {
            let parts: Vec<Vec<usize>> = fountain_parts(count, checksum)
                .into_iter()
                .map(|seq| {
                    assert!(seq as usize > count);
                    indexes(seq, count, checksum)
                })
                .collect();
            let with = |i: usize| -> Vec<bool> { parts.iter().map(|p| p.contains(&i)).collect() };
            let rows: Vec<Vec<bool>> = (0..count).map(with).collect();
            for (i, row) in rows.iter().enumerate() {
                assert!(row.iter().filter(|b| **b).count() >= 2, "{count}: {i}");
                for other in &rows[i + 1..] {
                    assert_ne!(row, other, "{count}: {i} not told apart");
                }
            }
            assert!(
                parts.len() <= count.max(8),
                "{count}: {} parts",
                parts.len()
            );
        }
    }
}
