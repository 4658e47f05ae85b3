//! The checkpoint kept beside the log (`<log>.checkpoint`): what it holds (the head as
//! last written, how far a person acknowledged, each key's recent spending, each key's
//! watermark on each chain) and how it is written in place, two slots, so that a write
//! cut short leaves the one before.

use alloy_primitives::B256;
use bridgectl_tx::signing_log::{Carried, Checkpoint, EntryBody, Watermark, Watermarks};

/// The checkpoint kept beside the log (`<log>.checkpoint`): the head as this store last
/// wrote it, how far a person acknowledged the log as it stands, and what an
/// acknowledgement of a log that lost entries carries forward.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeptCheckpoint {
    /// Entries in the log when it was written.
    pub count: u64,
    /// The hash of entry `count`.
    pub head: B256,
    /// Entries up to this one were acknowledged by a person: a key that is not in the
    /// keystore any more (or never was) is accepted there.
    pub acknowledged: u64,
    /// Each key's recent spending per token (the last [`CARRY_SECS`], by the hour, at
    /// most [`MAX_CARRIED`] sums): what an acknowledgement of a log that lost entries
    /// carries over, so that accepting it forgets nothing of the windows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub carried: Vec<Carried>,
    /// Each key's watermark on each chain (the highest nonce it signed there, and the
    /// gaps below it), least recently moved first, at most [`MAX_WATERMARKS`]: what the
    /// nonce guard holds a nonce by when the log has no entry of it, and what an
    /// acknowledgement carries into the log.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub watermarks: Vec<Watermark>,
}

/// How far back the kept checkpoint keeps each key's spending: the longest spending
/// window it protects through an acknowledgement, and so the longest a limit may have
/// ([`bridgectl_tx::signing_log::MAX_WINDOW_SECS`]).
pub const CARRY_SECS: u64 = bridgectl_tx::signing_log::MAX_WINDOW_SECS;

/// The most keys x chains the kept checkpoint keeps a watermark of. Past it, the least
/// recently moved one is dropped (and, should the slot not hold them all with their
/// gaps, the least recently moved go first): that key's nonces on that chain are then
/// held by the log's entries and its acknowledgements alone, as before the checkpoint
/// kept watermarks.
pub const MAX_WATERMARKS: usize = 128;

/// `watermarks` with `entry` taken into account ([`EntryBody::mark`]), at most
/// [`MAX_WATERMARKS`].
pub(crate) fn mark(watermarks: Vec<Watermark>, entry: &EntryBody) -> Vec<Watermark> {
    let mut set = Watermarks(watermarks);
    entry.mark(&mut set);
    set.keep_newest(MAX_WATERMARKS);
    set.0
}

/// The sum `c` is one of: its key, chain, token and hour (spending is summed by the
/// hour).
pub(crate) fn hour_of(
    c: &Carried,
) -> (
    alloy_primitives::Address,
    u64,
    alloy_primitives::Address,
    u64,
) {
    (c.key, c.chain_id, c.contract, c.time / 3600)
}

/// The most spending sums the kept checkpoint holds: older sums of a key and token are
/// merged (dated by the newer, so counted at least as long) to stay within it.
pub const MAX_CARRIED: usize = 64;

/// `carried` with `entry`'s amount added (its hour's sum, or a new one), sums older than
/// [`CARRY_SECS`] before it dropped, and merged down to [`MAX_CARRIED`].
pub(crate) fn carry(carried: &[Carried], entry: &EntryBody) -> Vec<Carried> {
    let mut out: Vec<Carried> = carried
        .iter()
        .filter(|c| c.time.saturating_add(CARRY_SECS) >= entry.time)
        .cloned()
        .collect();
    if let (Some(amount), true) = (entry.amount, entry.signs_transaction()) {
        let hour = (entry.key, entry.chain_id, entry.to, entry.time / 3600);
        match out.iter_mut().find(|c| hour_of(c) == hour) {
            Some(c) => {
                c.amount = c.amount.saturating_add(amount);
                c.time = c.time.max(entry.time);
            }
            None => out.push(Carried {
                key: entry.key,
                chain_id: entry.chain_id,
                contract: entry.to,
                time: entry.time,
                amount,
            }),
        }
    }
    merge_down(out)
}

/// Merges the two oldest sums of one key and token until at most [`MAX_CARRIED`] are
/// left: the merged sum is dated by the newer of the two.
pub(crate) fn merge_down(out: Vec<Carried>) -> Vec<Carried> {
    merge_down_to(out, MAX_CARRIED)
}

/// [`merge_down`] to at most `most` sums, as far as merging sums of one key and token
/// goes (one each at least).
pub(crate) fn merge_down_to(mut out: Vec<Carried>, most: usize) -> Vec<Carried> {
    while out.len() > most {
        out.sort_by_key(|c| (c.key, c.chain_id, c.contract, c.time));
        let Some(i) = (1..out.len())
            .filter(|&i| {
                let (a, b) = (&out[i - 1], &out[i]);
                (a.key, a.chain_id, a.contract) == (b.key, b.chain_id, b.contract)
            })
            .min_by_key(|&i| out[i - 1].time)
        else {
            break;
        };
        let older = out.remove(i - 1);
        let newer = &mut out[i - 1];
        newer.amount = newer.amount.saturating_add(older.amount);
    }
    out
}

impl KeptCheckpoint {
    /// The checkpoint part.
    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            count: self.count,
            head: self.head,
        }
    }
}

/// The kept checkpoint's file is two slots of this many bytes, written in place in
/// turn: checkpoint `count` goes to slot `count % 2`, so the other slot always holds the
/// one before it. Each slot is one line, a JSON object with a check of its own
/// (the first 8 bytes of the keccak-256 of its count, head, acknowledged count and
/// carried spending), padded with spaces.
///
/// Why not a temp file and a rename, as for the other private files: this one is
/// rewritten after every signature, and a rename over it costs a directory update and,
/// on ext4, a forced write-back of the file it replaces, every time. Written in place it
/// costs one `pwrite`. A write cut short (a crash, or a reader in another process at
/// that moment) spoils at most the slot being written, whose check then fails: the
/// reader takes the other slot, a checkpoint one signature older, which is safe (the
/// log still reaches it: it only ever grows past it). Both slots spoiled is refused like
/// any unreadable checkpoint, until a person acknowledges the log.
///
/// 64 KiB holds [`MAX_CARRIED`] spending sums and [`MAX_WATERMARKS`] watermarks without
/// gaps, of the largest values; files of the earlier 256-byte and 32 KiB slots are read
/// as they were and rewritten at this size.
pub const CHECKPOINT_SLOT_BYTES: usize = 64 * 1024;

/// The slots of files written before spending was carried (count, head, acknowledged),
/// and before watermarks were kept.
pub(crate) const LEGACY_SLOT_BYTES: [usize; 2] = [256, 32 * 1024];

/// The largest kept checkpoint's file read: its two slots.
pub(crate) const MAX_CHECKPOINT_FILE_BYTES: u64 = 2 * CHECKPOINT_SLOT_BYTES as u64;

/// One slot of the kept checkpoint's file.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Slot {
    count: u64,
    head: B256,
    acknowledged: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    carried: Vec<Carried>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    watermarks: Vec<Watermark>,
    /// [`slot_check`] of the fields above.
    check: String,
}

/// The first 8 bytes of the keccak-256 of a slot's fields (count and acknowledged as
/// 8 bytes big-endian, the head's 32, when spending is carried the keccak-256 of its
/// JSON, and when watermarks are kept the keccak-256 of theirs): a slot half overwritten
/// does not match it.
pub(crate) fn slot_check(kept: &KeptCheckpoint) -> String {
    let mut bytes = Vec::with_capacity(112);
    bytes.extend_from_slice(&kept.count.to_be_bytes());
    bytes.extend_from_slice(kept.head.as_slice());
    bytes.extend_from_slice(&kept.acknowledged.to_be_bytes());
    if !kept.carried.is_empty() {
        let json = serde_json::to_vec(&kept.carried).unwrap_or_default();
        bytes.extend_from_slice(alloy_primitives::keccak256(json).as_slice());
    }
    if !kept.watermarks.is_empty() {
        let json = serde_json::to_vec(&kept.watermarks).unwrap_or_default();
        bytes.extend_from_slice(alloy_primitives::keccak256(json).as_slice());
    }
    alloy_primitives::hex::encode(&alloy_primitives::keccak256(bytes)[..8])
}

pub(crate) fn encode_slot(kept: &KeptCheckpoint) -> Vec<u8> {
    let mut kept = kept.clone();
    loop {
        let slot = Slot {
            count: kept.count,
            head: kept.head,
            acknowledged: kept.acknowledged,
            carried: kept.carried.clone(),
            watermarks: kept.watermarks.clone(),
            check: slot_check(&kept),
        };
        let json = serde_json::to_vec(&slot).unwrap_or_default();
        if json.len() < CHECKPOINT_SLOT_BYTES
            || (kept.carried.is_empty() && kept.watermarks.is_empty())
        {
            let mut out = vec![b' '; CHECKPOINT_SLOT_BYTES];
            let len = json.len().min(CHECKPOINT_SLOT_BYTES - 1);
            out[..len].copy_from_slice(&json[..len]);
            out[CHECKPOINT_SLOT_BYTES - 1] = b'\n';
            return out;
        }
        // More keys and tokens than the slot holds sums of: merge (that loses nothing);
        // then drop the least recently moved watermarks; past one sum per key and token,
        // drop the oldest sums.
        let fewer = merge_down_to(kept.carried.clone(), kept.carried.len() * 3 / 4);
        if fewer.len() < kept.carried.len() {
            kept.carried = fewer;
        } else if !kept.watermarks.is_empty() {
            let drop = kept.watermarks.len().div_ceil(4);
            kept.watermarks.drain(..drop);
        } else {
            let mut by_age = fewer;
            by_age.sort_by_key(|c| std::cmp::Reverse(c.time));
            by_age.truncate(by_age.len() * 3 / 4);
            kept.carried = by_age;
        }
    }
}

pub(crate) fn decode_slot(bytes: &[u8]) -> Option<KeptCheckpoint> {
    // A slot is padded with spaces to its fixed size: the JSON is usually a few hundred
    // bytes of 64 KiB, and the parser would read the rest a byte at a time (6.6% of an
    // offline signature's CPU here).
    let slot: Slot = serde_json::from_slice(bytes.trim_ascii_end()).ok()?;
    let kept = KeptCheckpoint {
        count: slot.count,
        head: slot.head,
        acknowledged: slot.acknowledged,
        carried: slot.carried,
        watermarks: slot.watermarks,
    };
    (slot.check == slot_check(&kept)).then_some(kept)
}

/// The checkpoint a kept checkpoint's file holds: the newer valid slot (of any slot size
/// written so far), or, for a file an older version wrote (one JSON object), that object.
pub(crate) fn read_kept(bytes: &[u8]) -> Result<KeptCheckpoint, String> {
    let slot = match bytes.len() {
        n if n == 2 * CHECKPOINT_SLOT_BYTES => CHECKPOINT_SLOT_BYTES,
        n if LEGACY_SLOT_BYTES.iter().any(|l| n == 2 * l) => n / 2,
        _ => return serde_json::from_slice(bytes).map_err(|e| e.to_string()),
    };
    let (a, b) = bytes.split_at(slot);
    match (decode_slot(a), decode_slot(b)) {
        (Some(a), Some(b)) => Ok(if (b.count, b.acknowledged) > (a.count, a.acknowledged) {
            b
        } else {
            a
        }),
        (Some(one), None) | (None, Some(one)) => Ok(one),
        (None, None) => Err("neither of its two slots holds a checkpoint".into()),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use alloy_primitives::{Address, U256};
    use bridgectl_tx::signing_log::Checkpoint;

    pub(crate) fn kept(count: u64, acknowledged: u64) -> KeptCheckpoint {
        KeptCheckpoint {
            count,
            head: B256::repeat_byte(u8::try_from(count % 251).expect("small")),
            acknowledged,
            carried: Vec::new(),
            watermarks: Vec::new(),
        }
    }

    fn file(a: &KeptCheckpoint, b: &KeptCheckpoint) -> Vec<u8> {
        [encode_slot(a), encode_slot(b)].concat()
    }

    #[test]
    fn a_slot_is_one_line_and_reads_back() {
        let big = KeptCheckpoint {
            count: u64::MAX,
            head: B256::repeat_byte(0xff),
            acknowledged: u64::MAX,
            carried: Vec::new(),
            watermarks: Vec::new(),
        };
        let slot = encode_slot(&big);
        assert_eq!(slot[CHECKPOINT_SLOT_BYTES - 1], b'\n');
        assert!(!slot[..CHECKPOINT_SLOT_BYTES - 1].contains(&b'\n'));
        assert_eq!(decode_slot(&slot), Some(big), "the largest values fit");
        // And as many spending sums as it keeps, the largest amounts.
        let full = KeptCheckpoint {
            carried: (0..MAX_CARRIED as u64)
                .map(|i| Carried {
                    key: Address::repeat_byte(u8::try_from(i % 250).expect("small")),
                    chain_id: u64::MAX,
                    contract: Address::repeat_byte(0xee),
                    time: u64::MAX - i,
                    amount: U256::MAX,
                })
                .collect(),
            ..kept(5, 5)
        };
        assert_eq!(
            decode_slot(&encode_slot(&full)),
            Some(full.clone()),
            "the sums fit"
        );
        // And as many watermarks as it keeps besides, the largest values.
        let fuller = KeptCheckpoint {
            watermarks: (0..MAX_WATERMARKS as u64)
                .map(|i| Watermark {
                    key: Address::repeat_byte(u8::try_from(i % 250).expect("small")),
                    chain_id: u64::MAX - i,
                    nonce: u64::MAX,
                    gaps: Vec::new(),
                })
                .collect(),
            ..full
        };
        assert_eq!(
            decode_slot(&encode_slot(&fuller)),
            Some(fuller.clone()),
            "the watermarks fit"
        );
        // With many gaps each they do not all fit: the least recently moved go first.
        let gapped = KeptCheckpoint {
            watermarks: fuller
                .watermarks
                .iter()
                .map(|w| Watermark {
                    gaps: (0..bridgectl_tx::watermark::MAX_GAPS as u64)
                        .map(|g| [u64::MAX - 100 + 2 * g, u64::MAX - 100 + 2 * g])
                        .collect(),
                    ..w.clone()
                })
                .collect(),
            ..fuller
        };
        let shed = decode_slot(&encode_slot(&gapped)).expect("reads back");
        assert!(shed.watermarks.len() < MAX_WATERMARKS, "some dropped");
        assert_eq!(shed.carried, gapped.carried, "the sums kept");
        assert_eq!(
            shed.watermarks.last(),
            gapped.watermarks.last(),
            "the most recently moved kept"
        );
        assert_eq!(read_kept(&file(&kept(7, 3), &kept(8, 3))), Ok(kept(8, 3)));
        assert_eq!(read_kept(&file(&kept(9, 3), &kept(8, 3))), Ok(kept(9, 3)));
        assert_eq!(read_kept(&file(&kept(8, 2), &kept(8, 5))), Ok(kept(8, 5)));
    }

    #[test]
    fn a_spoiled_slot_leaves_the_other() {
        let (older, newer) = (kept(10, 0), kept(11, 0));
        // A write cut short: the new slot half written over the old one.
        let mut torn = file(&older, &older);
        torn[CHECKPOINT_SLOT_BYTES..CHECKPOINT_SLOT_BYTES + 40]
            .copy_from_slice(&encode_slot(&newer)[..40]);
        assert_eq!(read_kept(&torn), Ok(older.clone()));
        // Parses, but a digit changed: the check refuses it.
        let mut edited = file(&older, &newer);
        let text = String::from_utf8(edited[CHECKPOINT_SLOT_BYTES..].to_vec()).expect("text");
        let changed = text.replacen("\"count\":11", "\"count\":12", 1);
        assert_ne!(changed, text);
        edited[CHECKPOINT_SLOT_BYTES..].copy_from_slice(changed.as_bytes());
        assert_eq!(read_kept(&edited), Ok(older.clone()));
        // Zeroes (a block lost in a power cut) in one slot, then in both.
        let mut zeroed = file(&older, &newer);
        zeroed[..CHECKPOINT_SLOT_BYTES].fill(0);
        assert_eq!(read_kept(&zeroed), Ok(newer));
        zeroed.fill(0);
        assert!(read_kept(&zeroed).is_err());
    }

    #[test]
    fn any_bytes_read_as_a_checkpoint_or_a_refusal_never_a_panic() {
        let good = file(&kept(3, 1), &kept(4, 1));
        for i in 0u64..2000 {
            let noise = alloy_primitives::keccak256(i.to_be_bytes());
            let mut bytes = good.clone();
            // Overwrite a stretch of a valid file, or take a prefix of it, or pure noise.
            let at = usize::from(noise[0]) * 2;
            let len = usize::from(noise[1] % 40);
            for (k, b) in bytes.iter_mut().skip(at).take(len).enumerate() {
                *b = noise[k % 32];
            }
            let cut = match i % 3 {
                0 => bytes.len(),
                1 => usize::from(noise[2]) * 2,
                _ => 0,
            };
            let input = if i % 3 == 2 {
                noise.to_vec()
            } else {
                bytes[..cut].to_vec()
            };
            if let Ok(k) = read_kept(&input) {
                assert!(k == kept(3, 1) || k == kept(4, 1) || input.len() != good.len());
            }
        }
    }

    #[test]
    fn a_file_of_the_older_version_reads_as_it_did() {
        let old = serde_json::to_vec(&kept(4, 2)).expect("json");
        assert_eq!(read_kept(&old), Ok(kept(4, 2)));
        assert!(read_kept(b"{\"count\":").is_err());
        // Two 256-byte slots, as written before spending was carried.
        let legacy = |k: &KeptCheckpoint| {
            let mut out = vec![b' '; LEGACY_SLOT_BYTES[0]];
            let json = serde_json::to_vec(&serde_json::json!({
                "count": k.count, "head": k.head, "acknowledged": k.acknowledged,
                "check": slot_check(k),
            }))
            .expect("json");
            out[..json.len()].copy_from_slice(&json);
            out[LEGACY_SLOT_BYTES[0] - 1] = b'\n';
            out
        };
        let file = [legacy(&kept(6, 1)), legacy(&kept(7, 1))].concat();
        assert_eq!(read_kept(&file), Ok(kept(7, 1)));
        // Two 32 KiB slots, as written before watermarks were kept.
        let slot = |k: &KeptCheckpoint| {
            let mut out = encode_slot(k);
            out.truncate(LEGACY_SLOT_BYTES[1]);
            out[LEGACY_SLOT_BYTES[1] - 1] = b'\n';
            out
        };
        let file = [slot(&kept(9, 1)), slot(&kept(8, 1))].concat();
        assert_eq!(read_kept(&file), Ok(kept(9, 1)));
    }

    fn spent(key: u8, time: u64, amount: u64) -> EntryBody {
        let body = bridgectl_tx::signing_log::acknowledgement(
            Checkpoint::EMPTY,
            Address::repeat_byte(key),
            time,
            Checkpoint::EMPTY,
            Vec::new(),
            Vec::new(),
        );
        EntryBody {
            chain_id: 7,
            to: Address::repeat_byte(0xcc),
            amount: Some(U256::from(amount)),
            acknowledges: None,
            ..body
        }
    }

    /// Each key's spending is kept by the hour for a month, merged (dated by the newer)
    /// past [`MAX_CARRIED`] sums: never less than was spent in any window it reaches.
    #[test]
    fn spending_is_carried_by_the_hour_for_a_month_and_merged_never_lost() {
        let hour = 3600;
        let mut carried = carry(&[], &spent(1, 10 * hour, 5));
        carried = carry(&carried, &spent(1, 10 * hour + 60, 2));
        assert_eq!(carried.len(), 1, "one hour, one sum");
        assert_eq!(carried[0].amount, U256::from(7u8));
        assert_eq!(carried[0].time, 10 * hour + 60, "dated by the newest");
        carried = carry(&carried, &spent(2, 11 * hour, 3));
        assert_eq!(carried.len(), 2, "another key");
        // A month later the old sums are gone.
        carried = carry(&carried, &spent(1, 12 * hour + CARRY_SECS, 1));
        assert_eq!(carried.len(), 1);
        // Past MAX_CARRIED sums, the oldest of a key merge into the next.
        let mut many = Vec::new();
        for h in 0..(MAX_CARRIED as u64 + 10) {
            many = carry(&many, &spent(1, h * hour, 1));
        }
        assert_eq!(many.len(), MAX_CARRIED);
        let total: U256 = many.iter().map(|c| c.amount).sum();
        assert_eq!(total, U256::from(MAX_CARRIED as u64 + 10), "nothing lost");
    }
}
