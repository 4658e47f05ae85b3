//! A machine's journal copied into the store several signer hosts share
//! ([`Journal::copy_into`], `bridgectl state migrate`).

use bridgectl_store::CopiedTable;

use super::Journal;
use crate::Error;

/// The journal's tables, each before the ones that refer to it.
const TABLES: &[CopiedTable] = &[
    CopiedTable {
        name: "flows",
        serial: Some("rowid"),
    },
    CopiedTable {
        name: "steps",
        serial: Some("id"),
    },
    CopiedTable {
        name: "nonces",
        serial: None,
    },
    CopiedTable {
        name: "batches",
        serial: Some("rowid"),
    },
    CopiedTable {
        name: "batch_items",
        serial: None,
    },
    CopiedTable {
        name: "signatures",
        serial: Some("rowid"),
    },
    CopiedTable {
        name: "chains",
        serial: None,
    },
    CopiedTable {
        name: "credits",
        serial: None,
    },
    CopiedTable {
        name: "prepared_batches",
        serial: None,
    },
    CopiedTable {
        name: "facts",
        serial: None,
    },
    CopiedTable {
        name: "batch_keys",
        serial: None,
    },
    CopiedTable {
        name: "abandoned_batches",
        serial: None,
    },
    CopiedTable {
        name: "batch_claims",
        serial: None,
    },
];

impl Journal {
    /// Copies this journal (a SQLite file) into `target` (the store several hosts
    /// share), every table row for row, in one transaction of the target. Refused when
    /// the target holds any flow already: its nonce reservations and batches are another
    /// history, and merging two would hand one nonce to two flows. Returns how many rows
    /// each table had.
    pub fn copy_into(&self, target: &Journal) -> Result<Vec<(&'static str, usize)>, Error> {
        let refusal = std::cell::RefCell::new(None);
        let copied = self.store.copy_into(&target.store, TABLES, |c| {
            let flows: i64 = c.query_value("SELECT COUNT(*) FROM flows", &[])?;
            if flows > 0 {
                *refusal.borrow_mut() = Some(flows);
                return Err(bridgectl_store::Error::Refused(format!(
                    "it holds {flows} flow(s) already"
                )));
            }
            Ok(())
        });
        match (copied, refusal.into_inner()) {
            (Ok(copied), _) => Ok(copied),
            (Err(_), Some(flows)) => Err(Error::MigrationRefused(format!(
                "the journal at {} holds {flows} flow(s) already: a journal is copied into an \
                 empty one only (merging two would hand one nonce to two flows)",
                target.store.location()
            ))),
            (Err(source), None) => Err(target.failed(source)),
        }
    }
}
