//! Batch claims: which run carries out each sender's items of a batch (its lane), until
//! when, and with which fencing token. Several runs of one batch (processes of one
//! machine, or hosts on one PostgreSQL journal) share its lanes out: each lane is run by
//! one run at a time, its claim renewed while it runs, and taken over by another run
//! once its lease has run out (or at once, when its owner is a process of this host that
//! is gone). A takeover gives the lane the next token; every write of a flow run under
//! a claim (a nonce reserved, a signature recorded, an item bound to a new flow) checks
//! its claim's token in its own transaction, so a run paused past its lease writes
//! nothing after another took over: it is told so ([`Error::ClaimTakenOver`]) and stops
//! that lane.

use std::time::Duration;

use alloy_primitives::Address;
use bridgectl_store::Conn;

use super::{Failure, Fence, Journal};
use crate::Error;

/// Who runs a lane: a host (its label), a process and a run of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// The host's label ([`Journal::with_host`]).
    pub host: String,
    /// The process.
    pub pid: u32,
    /// The run (one process may run a batch twice, one run after the other).
    pub run: String,
}

impl Owner {
    /// This process, for a new run on host `host`.
    pub fn this_run(host: &str) -> Owner {
        Owner {
            host: host.to_owned(),
            pid: std::process::id(),
            run: uuid::Uuid::new_v4().to_string(),
        }
    }

    /// As stored: `host/pid/run`.
    pub fn as_stored(&self) -> String {
        format!("{}/{}/{}", self.host, self.pid, self.run)
    }

    /// From its stored form.
    pub fn parse(stored: &str) -> Option<Owner> {
        let mut parts = stored.rsplitn(3, '/');
        let run = parts.next()?.to_owned();
        let pid = parts.next()?.parse().ok()?;
        let host = parts.next()?.to_owned();
        Some(Owner { host, pid, run })
    }

    /// Whether this owner is a process of host `host` that is gone (then its claim is
    /// taken over at once). An owner of another host is never known gone: its lease
    /// says when it may be.
    fn gone_from(&self, host: &str) -> bool {
        self.host == host
            && self.pid != std::process::id()
            && !std::path::Path::new(&format!("/proc/{}", self.pid)).exists()
    }
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "host {} (process {})", self.host, self.pid)
    }
}

/// A lane this run holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The batch.
    pub batch_id: String,
    /// The sender whose items the lane holds.
    pub sender: Address,
    /// Its fencing token: raised by every new claim and takeover.
    pub fence: i64,
}

/// What [`Journal::claim_lane`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaneClaim {
    /// The lane is this run's.
    Claimed(Claim),
    /// Another run holds it.
    Held {
        /// That run.
        owner: String,
        /// Until when its lease holds (Unix milliseconds), unless renewed.
        until_ms: i64,
    },
}

/// How a lane's claim stands, as `batch status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LaneRecord {
    /// The sender.
    pub sender: String,
    /// The run that holds or held it (`host/pid/run`).
    pub owner: String,
    /// Its fencing token.
    pub fence: i64,
    /// Until when its lease holds (Unix milliseconds); 0 once released.
    pub until_ms: i64,
}

pub(crate) fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn lease_ms(lease: Duration) -> i64 {
    i64::try_from(lease.as_millis()).unwrap_or(i64::MAX).max(1)
}

impl Journal {
    /// Claims the lane of `sender` in batch `batch_id` for `owner`, for `lease`: granted
    /// when nobody holds it, when its holder's lease has run out or it released it, or
    /// when its holder is a process of this host that is gone; renewed (same token) when
    /// `owner` holds it already. A new claim and a takeover raise the token. Read and
    /// written in one serialised transaction: two runs never both get one lane.
    pub fn claim_lane(
        &self,
        batch_id: &str,
        sender: Address,
        owner: &Owner,
        lease: Duration,
    ) -> Result<LaneClaim, Error> {
        let sender_text = sender.to_string();
        let me = owner.as_stored();
        let now = unix_ms();
        let until = now.saturating_add(lease_ms(lease));
        self.write(|c| {
            let held: Option<(String, i64, i64)> = c.query_opt(
                "SELECT owner, fence, until_ms FROM batch_claims
                  WHERE batch_id = ?1 AND sender = ?2",
                &[&batch_id, &sender_text],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?;
            let fence = match held {
                None => {
                    c.execute(
                        "INSERT INTO batch_claims (batch_id, sender, owner, fence, until_ms)
                         VALUES (?1, ?2, ?3, 1, ?4)",
                        &[&batch_id, &sender_text, &me, &until],
                    )?;
                    1
                }
                Some((holder, fence, _)) if holder == me => {
                    c.execute(
                        "UPDATE batch_claims SET until_ms = ?3 WHERE batch_id = ?1 AND sender = ?2",
                        &[&batch_id, &sender_text, &until],
                    )?;
                    fence
                }
                Some((holder, fence, until_ms))
                    if until_ms <= now
                        || Owner::parse(&holder).is_some_and(|o| o.gone_from(&owner.host)) =>
                {
                    c.execute(
                        "UPDATE batch_claims SET owner = ?3, fence = ?4, until_ms = ?5
                          WHERE batch_id = ?1 AND sender = ?2",
                        &[&batch_id, &sender_text, &me, &(fence + 1), &until],
                    )?;
                    fence + 1
                }
                Some((holder, _, until_ms)) => {
                    return Ok(LaneClaim::Held {
                        owner: holder,
                        until_ms,
                    });
                }
            };
            Ok(LaneClaim::Claimed(Claim {
                batch_id: batch_id.to_owned(),
                sender,
                fence,
            }))
        })
    }

    /// Renews `claim` for `lease` from now. `false` when another run took the lane over
    /// (its token moved on): nothing more is written for it by this run.
    pub fn renew_lane(&self, claim: &Claim, lease: Duration) -> Result<bool, Error> {
        let until = unix_ms().saturating_add(lease_ms(lease));
        let n = self.write(|c| {
            c.execute(
                "UPDATE batch_claims SET until_ms = ?4
                  WHERE batch_id = ?1 AND sender = ?2 AND fence = ?3",
                &[
                    &claim.batch_id,
                    &claim.sender.to_string(),
                    &claim.fence,
                    &until,
                ],
            )
        })?;
        Ok(n == 1)
    }

    /// Gives `claim` up (its lease ends now; its owner stays on record), unless another
    /// run took it over meanwhile. The flows fenced by it are forgotten.
    pub fn release_lane(&self, claim: &Claim) -> Result<(), Error> {
        self.fences
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|_, f| !(f.batch_id == claim.batch_id && f.token == claim.fence));
        self.write(|c| {
            c.execute(
                "UPDATE batch_claims SET until_ms = 0
                  WHERE batch_id = ?1 AND sender = ?2 AND fence = ?3",
                &[&claim.batch_id, &claim.sender.to_string(), &claim.fence],
            )
        })
        .map(drop)
    }

    /// The lanes of batch `batch_id` that runs claimed, by sender.
    pub fn lanes(&self, batch_id: &str) -> Result<Vec<LaneRecord>, Error> {
        self.with(|c| {
            c.query_map(
                "SELECT sender, owner, fence, until_ms FROM batch_claims
                  WHERE batch_id = ?1 ORDER BY sender",
                &[&batch_id],
                |r| {
                    Ok(LaneRecord {
                        sender: r.get(0)?,
                        owner: r.get(1)?,
                        fence: r.get(2)?,
                        until_ms: r.get(3)?,
                    })
                },
            )
        })
    }

    /// This run holds `claim` on a whole batch: from now on every write of a flow that is
    /// an item of the batch checks the claim's token.
    pub(crate) fn fence_batch(&self, claim: &Claim) {
        self.fences
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(
                claim.batch_id.clone(),
                Fence {
                    batch_id: claim.batch_id.clone(),
                    sender: claim.sender.to_string(),
                    token: claim.fence,
                    items: Default::default(),
                },
            );
    }

    /// Inside a write of flow `tx_id`: refuses it when the flow is an item of a batch
    /// this run holds a claim on, and the claim's token moved on (another run took the
    /// batch over after this one's lease ran out). Costs nothing when this run holds no
    /// claim (every run on a SQLite journal).
    ///
    /// A flow this run wrote as an item, which another run has since bound the item away
    /// from (it took the batch over, and the flow had not signed), is checked too: this
    /// run, woken, must not go on with it (its nonce is the new flow's).
    pub(super) fn check_fence(&self, c: &mut dyn Conn, tx_id: &str) -> Result<(), Failure> {
        // (batch, sender, token, whether this run wrote `tx_id` as one of its items)
        let fences: Vec<(String, String, i64, bool)> = {
            let held = self.fences.lock().unwrap_or_else(|p| p.into_inner());
            if held.is_empty() {
                return Ok(());
            }
            held.values()
                .map(|f| {
                    let wrote = f.items.contains(tx_id);
                    (f.batch_id.clone(), f.sender.clone(), f.token, wrote)
                })
                .collect()
        };
        let batches: Vec<String> = c.query_map(
            "SELECT batch_id FROM batch_items WHERE tx_id = ?1",
            &[&tx_id],
            |r| r.get(0),
        )?;
        let fenced: Vec<_> = fences
            .into_iter()
            .filter(|(batch_id, .., wrote)| *wrote || batches.contains(batch_id))
            .collect();
        if !fenced.is_empty() {
            let mut held = self.fences.lock().unwrap_or_else(|p| p.into_inner());
            for fence in held.values_mut() {
                if batches.contains(&fence.batch_id) {
                    fence.items.insert(tx_id.to_owned());
                }
            }
        }
        for (batch_id, sender, held_token, _) in fenced {
            let now: Option<(String, i64)> = c.query_opt(
                "SELECT owner, fence FROM batch_claims WHERE batch_id = ?1 AND sender = ?2",
                &[&batch_id, &sender],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            match now {
                Some((_, token)) if token == held_token => {}
                other => {
                    return Err(Failure::Refused(Box::new(Error::ClaimTakenOver {
                        batch_id,
                        by: other.map(|(owner, _)| owner),
                    })));
                }
            }
        }
        Ok(())
    }
}

/// A claim on a whole batch, renewed by a thread of its own (on a connection of its own)
/// while the value lives and released when it is dropped (the lane of
/// [`Address::ZERO`]: every sender's items).
pub(crate) struct Heartbeat {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    claim: Claim,
}

impl std::fmt::Debug for Heartbeat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Heartbeat")
            .field("claim", &self.claim)
            .finish_non_exhaustive()
    }
}

impl Heartbeat {
    /// Claims batch `batch_id` in `journal` for this run, or says who holds it.
    pub(crate) fn start(journal: &Journal, batch_id: &str) -> Result<Heartbeat, Error> {
        let lease = journal.batch_lease;
        let owner = Owner::this_run(&journal.host);
        let claim = match journal.claim_lane(batch_id, Address::ZERO, &owner, lease)? {
            LaneClaim::Claimed(claim) => claim,
            LaneClaim::Held { owner, until_ms } => {
                let left = ((until_ms - unix_ms()).max(0) + 999) / 1000;
                let who = Owner::parse(&owner).map_or(owner, |o| o.to_string());
                return Err(Error::BatchRunning {
                    batch_id: batch_id.to_owned(),
                    lock: format!(
                        "its claim in the shared journal: {who}, for {left} s more unless renewed"
                    ),
                });
            }
        };
        journal.fence_batch(&claim);
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let location = journal.location().clone();
        let renewed = claim.clone();
        let thread = std::thread::Builder::new()
            .name("bridgectl-batch-claim".into())
            .spawn(move || {
                let mut renewing = None;
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(lease / 3)
                {
                    if renewing.is_none() {
                        renewing = Journal::open_at(location.clone()).ok();
                    }
                    let Some(journal) = &renewing else { continue };
                    match journal.renew_lane(&renewed, lease) {
                        Ok(true) => {}
                        // Taken over: the fence refuses this run's writes from now on.
                        Ok(false) => return,
                        // The store unreachable: tried again at the next beat (if the
                        // lease runs out meanwhile, the fence refuses).
                        Err(_) => {}
                    }
                }
                let journal = renewing.or_else(|| Journal::open_at(location).ok());
                if let Some(journal) = journal {
                    let _ = journal.release_lane(&renewed);
                }
            })
            .ok();
        Ok(Heartbeat {
            stop: Some(stop),
            thread,
            claim,
        })
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
