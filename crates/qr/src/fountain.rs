//! The fountain code of BCR-2020-005, both ways: a message split into fragments and the
//! part of any sequence number ([`Split`]), and the rebuilding of a message from any
//! parts ([`Solver`]).
//!
//! Part `seq` of a message of `count` fragments carries fragment `seq - 1` for `seq <=
//! count`, and above that the XOR of the fragments [`indexes`] names: a choice seeded by
//! `seq` and the message's CRC-32, the same in every implementation.
//!
//! Blockchain Commons' decoder reduces a mixed part by the fragments already known and by
//! the other mixed parts whose fragments are a subset of its own. [`Solver`] goes the
//! whole way: each part is a linear equation over GF(2) (which fragments it XORs), kept in
//! reduced row echelon form, so a message is rebuilt as soon as the parts read determine
//! it, which includes every set of parts the reference decoder completes. What it holds is
//! bounded by the message, not by the parts read: at most `count` rows of `count` bits
//! and one fragment each.

/// A message split for the fountain code: its fragments (the last one zero-padded) and
/// what every part of it announces.
pub(crate) struct Split {
    fragments: Vec<Vec<u8>>,
    length: usize,
    checksum: u32,
}

impl Split {
    /// `message` (not empty) in fragments of at most `max_fragment_len` (not 0) bytes,
    /// all of one length, as BCR-2020-005 splits it.
    pub(crate) fn new(message: &[u8], max_fragment_len: usize) -> Split {
        let count = message.len().div_ceil(max_fragment_len);
        let fragment_len = message.len().div_ceil(count);
        let fragments = message
            .chunks(fragment_len)
            .map(|c| {
                let mut f = c.to_vec();
                f.resize(fragment_len, 0);
                f
            })
            .collect();
        Split {
            fragments,
            length: message.len(),
            checksum: crc32fast::hash(message),
        }
    }

    /// How many fragments.
    pub(crate) fn count(&self) -> usize {
        self.fragments.len()
    }

    /// The message's CRC-32, which seeds the choice of fragments of each part.
    pub(crate) fn checksum(&self) -> u32 {
        self.checksum
    }

    /// The CBOR of part `seq` (1 or more): `[seq, count, length, checksum, data]`.
    pub(crate) fn part(&self, seq: u32) -> Vec<u8> {
        let mut data = vec![0; self.fragments[0].len()];
        for i in indexes(seq, self.count(), self.checksum) {
            xor(&mut data, &self.fragments[i]);
        }
        part_cbor(seq, self.count(), self.length, self.checksum, &data)
    }
}

fn part_cbor(seq: u32, count: usize, length: usize, checksum: u32, data: &[u8]) -> Vec<u8> {
    crate::cbor::write(|e| {
        e.array(5)?
            .u32(seq)?
            .u32(count as u32)?
            .u32(length as u32)?
            .u32(checksum)?
            .bytes(data)?;
        Ok(())
    })
}

/// The fragments part `seq` of a message of `count` fragments XORs (`seq` >= 1, `count`
/// >= 1, at most [`crate::MAX_FRAGMENTS`]).
pub(crate) fn indexes(seq: u32, count: usize, checksum: u32) -> Vec<usize> {
    if seq as usize <= count {
        return vec![seq as usize - 1];
    }
    // The `ur` crate computes BCR-2020-005's choice (xoshiro256** seeded by the SHA-256 of
    // `seq` and the checksum, a degree weighted 1/d, a shuffle) for a part it reads from
    // CBOR, and only for one: so a one-byte part of that number is written for it.
    let cbor = part_cbor(seq, count, 1, checksum, &[0]);
    minicbor::decode::<ur::fountain::Part>(&cbor)
        .expect("a part written by part_cbor reads back")
        .indexes()
}

fn xor(into: &mut [u8], from: &[u8]) {
    for (a, b) in into.iter_mut().zip(from) {
        *a ^= b;
    }
}

/// One equation: the fragments `bits` names, XORed, are `data`.
#[derive(Clone)]
struct Row {
    bits: Vec<u64>,
    data: Vec<u8>,
}

impl Row {
    fn has(&self, i: usize) -> bool {
        self.bits[i / 64] & (1 << (i % 64)) != 0
    }

    fn add(&mut self, other: &Row) {
        for (a, b) in self.bits.iter_mut().zip(&other.bits) {
            *a ^= b;
        }
        xor(&mut self.data, &other.data);
    }

    fn ones(&self) -> u32 {
        self.bits.iter().map(|w| w.count_ones()).sum()
    }

    fn lowest(&self) -> Option<usize> {
        self.bits
            .iter()
            .enumerate()
            .find(|(_, w)| **w != 0)
            .map(|(i, w)| i * 64 + w.trailing_zeros() as usize)
    }
}

/// What one part did to a [`Solver`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Added {
    /// It told something new.
    New,
    /// The parts before it imply it already.
    Implied,
    /// Its fragments are those of parts before it, its data is not: a part of another
    /// message with the same checksum, or a damaged one.
    Contradicts,
}

/// Rebuilds a message of `count` fragments from parts, in any order, in GF(2) reduced
/// row echelon form: `rows[c]`, when there, is the only row with a bit in column `c`, and
/// its lowest.
pub(crate) struct Solver {
    count: usize,
    fragment_len: usize,
    rows: Vec<Option<Row>>,
    pivots: Vec<u64>,
    rank: usize,
    solved: usize,
}

impl Solver {
    /// For a message of `count` fragments of `fragment_len` bytes.
    pub(crate) fn new(count: usize, fragment_len: usize) -> Solver {
        let words = count.div_ceil(64);
        Solver {
            count,
            fragment_len,
            rows: vec![None; count],
            pivots: vec![0; words],
            rank: 0,
            solved: 0,
        }
    }

    /// Adds the part that XORs the fragments `indexes` (each below `count`) into `data`
    /// (`fragment_len` bytes).
    pub(crate) fn add(&mut self, indexes: &[usize], data: &[u8]) -> Added {
        debug_assert_eq!(data.len(), self.fragment_len);
        let mut row = Row {
            bits: vec![0; self.pivots.len()],
            data: data.to_vec(),
        };
        for &i in indexes {
            row.bits[i / 64] ^= 1 << (i % 64);
        }
        // Clear every column that has a row: a pivot row has no other pivot column, so
        // the columns to clear are known before any is.
        let clear: Vec<u64> = row
            .bits
            .iter()
            .zip(&self.pivots)
            .map(|(a, b)| a & b)
            .collect();
        for (w, bits) in clear.iter().enumerate() {
            let mut bits = *bits;
            while bits != 0 {
                let c = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                row.add(self.rows[c].as_ref().expect("a pivot column has its row"));
            }
        }
        let Some(pivot) = row.lowest() else {
            return if row.data.iter().all(|b| *b == 0) {
                Added::Implied
            } else {
                Added::Contradicts
            };
        };
        // Clear the new pivot column from the other rows.
        for other in self.rows.iter_mut().flatten() {
            if other.has(pivot) {
                let was = other.ones();
                other.add(&row);
                if was > 1 && other.ones() == 1 {
                    self.solved += 1;
                }
            }
        }
        if row.ones() == 1 {
            self.solved += 1;
        }
        self.rows[pivot] = Some(row);
        self.pivots[pivot / 64] |= 1 << (pivot % 64);
        self.rank += 1;
        Added::New
    }

    /// How many fragments the parts added determine.
    pub(crate) fn solved(&self) -> usize {
        self.solved
    }

    /// Whether every fragment is determined.
    pub(crate) fn is_complete(&self) -> bool {
        self.rank == self.count
    }

    /// The message of `length` bytes, once complete.
    pub(crate) fn message(&self, length: usize) -> Option<Vec<u8>> {
        if !self.is_complete() {
            return None;
        }
        let mut out: Vec<u8> = self
            .rows
            .iter()
            .flatten()
            .flat_map(|r| r.data.iter().copied())
            .collect();
        out.truncate(length);
        Some(out)
    }
}

/// What peeling solves (the least a BC-UR decoder does; Blockchain Commons' does more):
/// a part whose fragments are all known but one gives that one. For tests.
#[cfg(test)]
pub(crate) fn peeled(count: usize, parts: &[Vec<usize>]) -> usize {
    let mut known = vec![false; count];
    let mut changed = true;
    while changed {
        changed = false;
        for p in parts {
            let unknown: Vec<usize> = p.iter().copied().filter(|&i| !known[i]).collect();
            if let [i] = unknown[..] {
                known[i] = true;
                changed = true;
            }
        }
    }
    known.iter().filter(|k| **k).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// BCR-2020-005's published multi-part vector (`testMultipartUR` in Blockchain
    /// Commons' bc-ur, and every port of it): the CBOR of 256 bytes of `Wolf` data, in
    /// fragments of at most 30 bytes, parts 1 to 20.
    const WOLF_PARTS: [&str; 20] = [
        "ur:bytes/1-9/lpadascfadaxcywenbpljkhdcahkadaemejtswhhylkepmykhhtsytsnoyoyaxaedsuttydmmhhpktpmsrjtdkgslpgh",
        "ur:bytes/2-9/lpaoascfadaxcywenbpljkhdcagwdpfnsboxgwlbaawzuefywkdplrsrjynbvygabwjldapfcsgmghhkhstlrdcxaefz",
        "ur:bytes/3-9/lpaxascfadaxcywenbpljkhdcahelbknlkuejnbadmssfhfrdpsbiegecpasvssovlgeykssjykklronvsjksopdzmol",
        "ur:bytes/4-9/lpaaascfadaxcywenbpljkhdcasotkhemthydawydtaxneurlkosgwcekonertkbrlwmplssjtammdplolsbrdzcrtas",
        "ur:bytes/5-9/lpahascfadaxcywenbpljkhdcatbbdfmssrkzmcwnezelennjpfzbgmuktrhtejscktelgfpdlrkfyfwdajldejokbwf",
        "ur:bytes/6-9/lpamascfadaxcywenbpljkhdcackjlhkhybssklbwefectpfnbbectrljectpavyrolkzczcpkmwidmwoxkilghdsowp",
        "ur:bytes/7-9/lpatascfadaxcywenbpljkhdcavszmwnjkwtclrtvaynhpahrtoxmwvwatmedibkaegdosftvandiodagdhthtrlnnhy",
        "ur:bytes/8-9/lpayascfadaxcywenbpljkhdcadmsponkkbbhgsoltjntegepmttmoonftnbuoiyrehfrtsabzsttorodklubbuyaetk",
        "ur:bytes/9-9/lpasascfadaxcywenbpljkhdcajskecpmdckihdyhphfotjojtfmlnwmadspaxrkytbztpbauotbgtgtaeaevtgavtny",
        "ur:bytes/10-9/lpbkascfadaxcywenbpljkhdcahkadaemejtswhhylkepmykhhtsytsnoyoyaxaedsuttydmmhhpktpmsrjtwdkiplzs",
        "ur:bytes/11-9/lpbdascfadaxcywenbpljkhdcahelbknlkuejnbadmssfhfrdpsbiegecpasvssovlgeykssjykklronvsjkvetiiapk",
        "ur:bytes/12-9/lpbnascfadaxcywenbpljkhdcarllaluzmdmgstospeyiefmwejlwtpedamktksrvlcygmzemovovllarodtmtbnptrs",
        "ur:bytes/13-9/lpbtascfadaxcywenbpljkhdcamtkgtpknghchchyketwsvwgwfdhpgmgtylctotzopdrpayoschcmhplffziachrfgd",
        "ur:bytes/14-9/lpbaascfadaxcywenbpljkhdcapazewnvonnvdnsbyleynwtnsjkjndeoldydkbkdslgjkbbkortbelomueekgvstegt",
        "ur:bytes/15-9/lpbsascfadaxcywenbpljkhdcaynmhpddpzmversbdqdfyrehnqzlugmjzmnmtwmrouohtstgsbsahpawkditkckynwt",
        "ur:bytes/16-9/lpbeascfadaxcywenbpljkhdcawygekobamwtlihsnpalnsghenskkiynthdzotsimtojetprsttmukirlrsbtamjtpd",
        "ur:bytes/17-9/lpbyascfadaxcywenbpljkhdcamklgftaxykpewyrtqzhydntpnytyisincxmhtbceaykolduortotiaiaiafhiaoyce",
        "ur:bytes/18-9/lpbgascfadaxcywenbpljkhdcahkadaemejtswhhylkepmykhhtsytsnoyoyaxaedsuttydmmhhpktpmsrjtntwkbkwy",
        "ur:bytes/19-9/lpbwascfadaxcywenbpljkhdcadekicpaajootjzpsdrbalpeywllbdsnbinaerkurspbncxgslgftvtsrjtksplcpeo",
        "ur:bytes/20-9/lpbbascfadaxcywenbpljkhdcayapmrleeleaxpasfrtrdkncffwjyjzgyetdmlewtkpktgllepfrltataztksmhkbot",
    ];

    /// A part's sequence number, fragment indexes and data, as read from its text.
    fn read_part(text: &str) -> (u32, Vec<usize>, Vec<u8>) {
        let body = text.rsplit('/').next().expect("body");
        let cbor = ur::bytewords::decode(body, ur::bytewords::Style::Minimal).expect("bytewords");
        let mut d = minicbor::Decoder::new(&cbor);
        d.array().expect("array");
        let (seq, count, _, checksum) = (
            d.u32().expect("seq"),
            d.u32().expect("count") as usize,
            d.u32().expect("length"),
            d.u32().expect("checksum"),
        );
        let data = d.bytes().expect("data").to_vec();
        (seq, indexes(seq, count, checksum), data)
    }

    fn wolf() -> Vec<u8> {
        // The first 9 parts are the fragments as they are.
        let mut message: Vec<u8> = WOLF_PARTS[..9]
            .iter()
            .flat_map(|t| read_part(t).2)
            .collect();
        message.truncate(259);
        message
    }

    #[test]
    fn the_published_parts_are_written_and_read() {
        let message = wolf();
        assert_eq!(
            &message[..3],
            &[0x59, 0x01, 0x00],
            "a 256-byte CBOR byte string"
        );
        let split = Split::new(&message, 30);
        assert_eq!(split.count(), 9);
        for (seq, text) in (1..).zip(WOLF_PARTS) {
            let body = ur::bytewords::encode(&split.part(seq), ur::bytewords::Style::Minimal);
            assert_eq!(format!("ur:bytes/{seq}-9/{body}"), text);
        }
        // Without the first three fragments, last first: the fountain parts make up
        // for them.
        let mut solver = Solver::new(9, 29);
        for text in WOLF_PARTS[3..].iter().rev() {
            let (_, indexes, data) = read_part(text);
            assert_ne!(solver.add(&indexes, &data), Added::Contradicts);
        }
        assert_eq!(solver.message(259), Some(message));
    }

    #[test]
    fn fragments_are_chosen_as_published() {
        // `testChooseFragments`: 1024 bytes of `Wolf` data (CRC-32 2f19f3bb) in 11
        // fragments, parts 1 to 30.
        let expected: [&[usize]; 30] = [
            &[0],
            &[1],
            &[2],
            &[3],
            &[4],
            &[5],
            &[6],
            &[7],
            &[8],
            &[9],
            &[10],
            &[9],
            &[2, 5, 6, 8, 9, 10],
            &[8],
            &[1, 5],
            &[1],
            &[0, 2, 4, 5, 8, 10],
            &[5],
            &[2],
            &[2],
            &[0, 1, 3, 4, 5, 7, 9, 10],
            &[0, 1, 2, 3, 5, 6, 8, 9, 10],
            &[0, 2, 4, 5, 7, 8, 9, 10],
            &[3, 5],
            &[4],
            &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
            &[0, 1, 3, 4, 5, 6, 7, 9, 10],
            &[6],
            &[5, 6],
            &[7],
        ];
        for (seq, want) in (1..).zip(expected) {
            let mut got = indexes(seq, 11, 0x2f19_f3bb);
            got.sort_unstable();
            assert_eq!(got, want, "part {seq}");
        }
    }

    /// The rank of the parts' fragment sets over GF(2), by plain elimination on rows of
    /// booleans: the oracle [`Solver`] is held to.
    fn rank(count: usize, parts: &[Vec<usize>]) -> usize {
        let mut rows: Vec<Vec<bool>> = parts
            .iter()
            .map(|p| {
                let mut r = vec![false; count];
                for &i in p {
                    r[i] ^= true;
                }
                r
            })
            .collect();
        let mut rank = 0;
        for c in 0..count {
            let Some(p) = (rank..rows.len()).find(|&r| rows[r][c]) else {
                continue;
            };
            rows.swap(rank, p);
            let pivot = rows[rank].clone();
            for (r, row) in rows.iter_mut().enumerate() {
                if r != rank && row[c] {
                    for (a, b) in row.iter_mut().zip(&pivot) {
                        *a ^= b;
                    }
                }
            }
            rank += 1;
        }
        rank
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Any parts, in any order: the message is rebuilt exactly when the parts
        /// determine it (full rank), so whenever peeling (or the reference's subset
        /// reduction, which does no more than elimination) completes; never wrongly.
        #[test]
        fn a_message_is_rebuilt_exactly_when_the_parts_determine_it(
            message in proptest::collection::vec(any::<u8>(), 2..400),
            fragment in 1usize..40,
            seqs in proptest::collection::vec(1u32..60, 0..40),
        ) {
            let split = Split::new(&message, fragment);
            let count = split.count();
            let mut solver = Solver::new(count, message.len().div_ceil(count));
            let mut parts = Vec::new();
            for &seq in &seqs {
                let cbor = split.part(seq);
                let mut d = minicbor::Decoder::new(&cbor);
                d.array().expect("array");
                for _ in 0..4 {
                    d.u32().expect("field");
                }
                let data = d.bytes().expect("data");
                let p = indexes(seq, count, crc32fast::hash(&message));
                prop_assert_ne!(solver.add(&p, data), Added::Contradicts);
                parts.push(p);
                let rank = rank(count, &parts);
                prop_assert_eq!(solver.is_complete(), rank == count);
                prop_assert!(solver.solved() >= peeled(count, &parts));
                prop_assert!(solver.solved() <= rank);
            }
            if solver.is_complete() {
                prop_assert_eq!(solver.message(message.len()), Some(message));
            }
        }
    }

    #[test]
    fn a_part_that_disagrees_is_told_apart_from_one_implied() {
        let mut solver = Solver::new(3, 2);
        assert_eq!(solver.add(&[0, 1], &[1, 2]), Added::New);
        assert_eq!(solver.add(&[1], &[3, 4]), Added::New);
        assert_eq!(solver.solved(), 2);
        assert_eq!(solver.add(&[0], &[2, 6]), Added::Implied);
        assert_eq!(solver.add(&[0], &[2, 7]), Added::Contradicts);
        assert!(!solver.is_complete());
        assert_eq!(solver.add(&[2, 0], &[0, 0]), Added::New);
        assert_eq!(solver.message(5), Some(vec![2, 6, 3, 4, 2]));
    }
}
