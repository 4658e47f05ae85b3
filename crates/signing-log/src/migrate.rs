//! A machine's signing log copied into the store several signer hosts share
//! ([`SigningLogDb::copy_into`], `bridgectl state migrate`): the same entries, the same
//! chain, so `log verify` holds there and every nonce signed stays signed.

use bridgectl_store::{Row, ToValue, Value};
use bridgectl_tx::signing_log::Entry;

use crate::store::head;
use crate::{Error, SigningLogDb};

/// What [`SigningLogDb::copy_into`] copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopiedLog {
    /// Entries the target had already (the same ones: a copy made before).
    pub present: u64,
    /// Entries copied.
    pub entries: u64,
    /// Swap credit claims copied (a claim the target holds already is kept).
    pub credit_claims: usize,
}

impl SigningLogDb {
    /// Copies this log (verified whole first: a log that does not hold is not copied)
    /// into `target`, entry for entry, keeping its chain, with its credit claims, in one
    /// write of the target; then this log's kept checkpoint becomes this host's
    /// checkpoint of the target (the entries are the same). A target that holds entries
    /// of its own (any other than this log's first ones, as a copy made before leaves)
    /// is refused, naming their keys: its guard is another history, and
    /// [`SigningLogDb::plan_import`] is how a key's history joins one.
    pub fn copy_into(&self, target: &SigningLogDb) -> Result<CopiedLog, Error> {
        let ours = self.verify(None)?;
        let mut entries: Vec<Entry> = Vec::new();
        self.each(|entry, _| entries.push(entry))?;
        let claims: Vec<Row> = self.with(|c| {
            Ok(c.query(
                "SELECT chain_id, genesis, tx_hash, log_index, claimant, key, at \
                 FROM credit_claims",
                &[],
            )?)
        })?;
        let conflict = |keys: Vec<String>| Error::Conflict {
            log: target.log.clone(),
            keys,
        };
        let copied = target
            .store
            .write_durable(|c| {
                let there = head(c)?;
                if there.count > 0 {
                    let held: Vec<(i64, Vec<u8>, String)> = c.query_map(
                        "SELECT seq, hash, key FROM entries ORDER BY seq",
                        &[],
                        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                    )?;
                    let differ: Vec<String> = held
                        .iter()
                        .filter(|(seq, hash, _)| {
                            usize::try_from(*seq)
                                .ok()
                                .and_then(|s| s.checked_sub(1))
                                .and_then(|i| entries.get(i))
                                .is_none_or(|e| e.hash.as_slice() != hash.as_slice())
                        })
                        .map(|(_, _, key)| key.clone())
                        .collect();
                    if !differ.is_empty() {
                        let mut keys = differ;
                        keys.sort();
                        keys.dedup();
                        return Err(conflict(keys));
                    }
                }
                let mut copied = 0u64;
                for entry in entries.iter().filter(|e| e.seq > there.count) {
                    SigningLogDb::insert(c, entry)?;
                    copied += 1;
                }
                for claim in &claims {
                    let values: Vec<Value> =
                        (0..7).map(|i| claim.get(i)).collect::<Result<_, _>>()?;
                    let params: Vec<&dyn ToValue> =
                        values.iter().map(|v| v as &dyn ToValue).collect();
                    c.execute(
                        "INSERT INTO credit_claims
                            (chain_id, genesis, tx_hash, log_index, claimant, key, at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING",
                        &params,
                    )?;
                }
                Ok(CopiedLog {
                    present: there.count,
                    entries: copied,
                    credit_claims: claims.len(),
                })
            })
            .map_err(|e| target.named(e))?;
        if let Some(kept) = self.kept()?
            && target
                .kept()
                .ok()
                .flatten()
                .is_none_or(|k| k.count <= ours.count)
        {
            target.write_kept(&kept)?;
        }
        Ok(copied)
    }
}
