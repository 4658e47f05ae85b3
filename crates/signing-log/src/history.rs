//! A key's signing history as one store hands it to another: [`History`], written by
//! [`SigningLogDb::export_history`] and taken in by [`SigningLogDb::plan_import`], so
//! that a key moved to another machine or store keeps its guard. Like EIP-3076's
//! interchange format for validators' slashing protection: each key's watermarks (the
//! highest nonce it signed on each chain, and the gaps below), its recent spending (the
//! sums its windows count) and its own entries, signed by it.
//!
//! An import can only make the guard stricter: what a file claims is carried into the
//! log by an acknowledgement the key signs (more nonces held, more spending counted),
//! never used to forget anything the log holds. The file's entries are checked (hash,
//! signature by the key they belong to) and their own watermarks and spending are added
//! to what the file claims, so a file edited down to fewer watermarks still holds every
//! nonce its entries signed.

use alloy_primitives::Address;
use bridgectl_tx::signing_log::{Carried, ChainCheck, Checkpoint, Entry, Watermark, Watermarks};
use serde::{Deserialize, Serialize};

use crate::kept::{carry, hour_of, mark};
use crate::{AcknowledgementPlan, Error, SigningLogDb};

/// The interchange format's version: [`HistoryMetadata::interchange_format_version`].
pub const HISTORY_FORMAT_VERSION: u32 = 1;

/// Keys' signing histories, as [`SigningLogDb::export_history`] makes them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct History {
    /// What the file is.
    pub metadata: HistoryMetadata,
    /// One history per key.
    pub keys: Vec<KeyHistory>,
}

/// What a [`History`] file is and where it came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HistoryMetadata {
    /// [`HISTORY_FORMAT_VERSION`]; a file of another version is refused.
    pub interchange_format_version: u32,
    /// When it was written (Unix seconds).
    pub exported_at: u64,
    /// The head of the log it was written from, verified.
    pub log_head: Checkpoint,
}

/// One key's signing history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeyHistory {
    /// The key.
    pub key: Address,
    /// Its watermark on each chain: no nonce a watermark holds is signed again but by a
    /// replacement.
    pub watermarks: Vec<Watermark>,
    /// Its spending of the last [`crate::CARRY_SECS`], summed by the hour per chain and
    /// token: what its spending windows count.
    pub spending: Vec<Carried>,
    /// Its own entries of the log, in order, each signed by it.
    pub entries: Vec<Entry>,
}

impl SigningLogDb {
    /// The signing history of `keys` (every key with entries when empty), from the log
    /// verified whole: each key's watermarks (from its entries, the log's
    /// acknowledgements and the kept checkpoint), its recent spending and its entries.
    /// Reads only.
    pub fn export_history(&self, keys: &[Address], now: u64) -> Result<History, Error> {
        let plan = self.plan_acknowledgement()?;
        let mut entries: Vec<(Address, Entry)> = Vec::new();
        self.each(|entry, columns| {
            if let Ok(key) = columns.key.parse::<Address>() {
                entries.push((key, entry));
            }
        })?;
        let mut wanted: Vec<Address> = keys.to_vec();
        if wanted.is_empty() {
            for (key, _) in &entries {
                if !wanted.contains(key) {
                    wanted.push(*key);
                }
            }
            for w in &plan.watermarks {
                if !wanted.contains(&w.key) {
                    wanted.push(w.key);
                }
            }
        }
        let keys = wanted
            .into_iter()
            .map(|key| KeyHistory {
                key,
                watermarks: plan
                    .watermarks
                    .iter()
                    .filter(|w| w.key == key)
                    .cloned()
                    .collect(),
                spending: plan
                    .spending()
                    .iter()
                    .filter(|c| c.key == key)
                    .cloned()
                    .collect(),
                // The index column is checked against the body by the verification
                // above (plan_acknowledgement verifies the whole log).
                entries: entries
                    .iter()
                    .filter(|(k, _)| *k == key)
                    .map(|(_, e)| e.clone())
                    .collect(),
            })
            .collect();
        Ok(History {
            metadata: HistoryMetadata {
                interchange_format_version: HISTORY_FORMAT_VERSION,
                exported_at: now,
                log_head: plan.head,
            },
            keys,
        })
    }

    /// What importing `history` carries into the log: the acknowledgement of the log as
    /// it stands ([`SigningLogDb::plan_acknowledgement`]) with the file's watermarks and
    /// spending added, each key's entries' own included; for a person to read, then
    /// [`SigningLogDb::acknowledge_plan`] signed by a key of the keystore. A file of
    /// another version, or with an entry that does not hold or is not its key's, is
    /// [`Error::History`].
    pub fn plan_import(&self, history: &History) -> Result<AcknowledgementPlan, Error> {
        let refused = |reason: String| Error::History { reason };
        if history.metadata.interchange_format_version != HISTORY_FORMAT_VERSION {
            return Err(refused(format!(
                "interchange format version {} (this program reads version \
                 {HISTORY_FORMAT_VERSION})",
                history.metadata.interchange_format_version
            )));
        }
        let mut marks = Watermarks::default();
        let mut spending: Vec<Carried> = Vec::new();
        for k in &history.keys {
            let mut from_entries: Vec<Carried> = Vec::new();
            for entry in &k.entries {
                let body = ChainCheck::anchor(entry).map_err(|bad| {
                    refused(format!("{}'s entry {}: {}", k.key, bad.seq, bad.reason))
                })?;
                if body.key != k.key {
                    return Err(refused(format!(
                        "entry {} under key {} is signed by {}",
                        entry.seq, k.key, body.key
                    )));
                }
                marks = Watermarks(mark(marks.0, &body));
                from_entries = carry(&from_entries, &body);
            }
            for w in &k.watermarks {
                if w.key != k.key {
                    return Err(refused(format!(
                        "a watermark of {} under key {}",
                        w.key, k.key
                    )));
                }
                marks.merge(w);
            }
            for c in k.spending.iter().chain(&from_entries) {
                if c.key != k.key {
                    return Err(refused(format!(
                        "spending of {} under key {}",
                        c.key, k.key
                    )));
                }
                add_spending(&mut spending, c);
            }
        }
        Ok(self
            .plan_acknowledgement()?
            .witnessed(&marks.0)
            .carrying(&spending))
    }
}

/// `c` added to `sums` as the larger of the two where `sums` has its hour already (the
/// file's sums and its entries' say the same spending twice): never less than either.
fn add_spending(sums: &mut Vec<Carried>, c: &Carried) {
    match sums.iter_mut().find(|s| hour_of(s) == hour_of(c)) {
        Some(s) => {
            s.amount = s.amount.max(c.amount);
            s.time = s.time.max(c.time);
        }
        None => sums.push(c.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::U256;

    #[test]
    fn the_same_hour_twice_counts_once_at_the_larger_sum() {
        let key = Address::repeat_byte(1);
        let c = |time, amount: u64| Carried {
            key,
            chain_id: 1,
            contract: Address::repeat_byte(2),
            time,
            amount: U256::from(amount),
        };
        let mut sums = Vec::new();
        add_spending(&mut sums, &c(3600, 5));
        add_spending(&mut sums, &c(3700, 7));
        add_spending(&mut sums, &c(7200, 1));
        assert_eq!(sums, vec![c(3700, 7), c(7200, 1)]);
    }
}
