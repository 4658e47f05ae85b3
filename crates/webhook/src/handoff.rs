//! Handing stored events on: an exec sink (a command run per event) and a forward sink (a URL
//! each event is POSTed to), once per event across
//! every listener that shares the store, as long as none dies mid-attempt.
//!
//! The dispatcher never takes events from the request path: it claims them from the store
//! (verified events whose `handed_off` bits lack a configured sink), so whatever was
//! acknowledged survives a crash and is handed on after the restart. A claim is a lease:
//! while it runs no other listener on the same store takes the event, and when the
//! claimant dies the lease expires and another takes it over. Unverified events are never
//! handed on.
//!
//! # Re-runs are marked
//!
//! A sink's success can only be recorded after it happened, so a listener killed between
//! the two (or a sink that failed half-way) leaves an event that runs again. Exactly once
//! is therefore the consumer's part, and this module makes it possible: every attempt is
//! counted in the store, durably, *before* its child starts or its POST is sent
//! ([`EventStore::start_attempt`]), so the next runner, on this replica or another, sees
//! `BRIDGECTL_ATTEMPT` above 1 and `BRIDGECTL_RERUN=1`. A run with `BRIDGECTL_RERUN=0`
//! is the first attempt anywhere; each event gets at most one. Consumers that must never
//! act twice either dedupe on (subscriptionId, sequenceNumber), which the environment of
//! an exec run and the headers of a forward POST carry, or check their own records only when
//! the run is marked as a re-run. (A runner that dies after counting the attempt but
//! before starting it leaves an event whose only run is marked: a marked run means "may
//! have run before", never "has", so it is checked, never dropped.)
//!
//! - exec: `sh -c CMD`, the raw body on stdin, `BRIDGECTL_EVENT_ID`,
//!   `BRIDGECTL_SUBSCRIPTION_ID`, `BRIDGECTL_SEQUENCE_NUMBER`, `BRIDGECTL_EVENT_TYPE`,
//!   `BRIDGECTL_ATTEMPT` and `BRIDGECTL_RERUN` (`0` or `1`) in an environment scrubbed of
//!   everything else but [`EXEC_ENV`] (no passphrase, access token or web3 key reaches
//!   it); success is exit status 0 within the exec timeout ([`EXEC_TIMEOUT`] unless set).
//!   The body is written in full (to an unlinked temporary file that is the command's
//!   stdin) before the command starts, so no run ever sees a partial or empty body. The
//!   command runs in a process group of its own that dies with it: on a timeout, when the
//!   listener stops past its grace, and when the listener is killed (SIGKILL included, by
//!   the parent-death signal, Linux): an orphan never runs on, and a command whose
//!   listener died while it was being started never runs at all.
//! - forward: `POST URL` with the raw body, `content-type: application/json`, the original
//!   `x-signature`, `x-bridgectl-event-id`, `x-bridgectl-subscription-id`,
//!   `x-bridgectl-sequence-number`, `x-bridgectl-attempt` and `x-bridgectl-rerun`; success
//!   is any 2xx within [`FORWARD_TIMEOUT`]. A redirect is a failure, never followed; no
//!   proxy sees a plain-http forward; errors (and `last_error` in the store) name the
//!   target by scheme, host and port only.
//!
//! A failed attempt is retried with exponential backoff from 1 s, capped at
//! [`MAX_BACKOFF`]; a failing event does not hold back later ones.
//!
//! # In parallel, in order per subscription
//!
//! Up to [`HandoffOptions::exec_jobs`] commands and [`HandoffOptions::forward_jobs`]
//! POSTs run at once, for different subscriptions: the events of one subscription are
//! handed on one at a time, in the order they were stored, across every listener on the
//! store ([`EventStore::claim`] gives each claimant only the oldest due event of a
//! subscription nobody else is handing on). That is the order that matters: one webhook's
//! notifications (block periods, a token's transfers) follow each other; different
//! webhooks are independent. A failed event waits for its retry while the later ones of
//! its subscription go on, so order is the order of first attempts, not of successes.
//!
//! # Leases and takeover
//!
//! A claim is a lease of [`HandoffOptions::lease`] (five [`HEARTBEAT`]s by default),
//! renewed every heartbeat while the attempt runs, however long that is. A listener that
//! dies stops renewing, and another takes its events over within a lease: seconds. A
//! listener cut off from its store for longer than a lease may see its events taken over
//! while its attempt still runs: the other's run is then marked as a re-run.

use std::collections::{HashMap, HashSet};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, Semaphore, watch};
use tokio::task::JoinSet;

use super::Error;
use super::store::{self, Claim, EventStore, HandoffRecord, SINK_EXEC, SINK_FORWARD, StoredEvent};
use crate::http::redact_url;

/// How long a stopping listener gives what is in flight (requests being stored, a
/// hand-off attempt) before it drops it: short enough that SIGTERM stops it within a
/// few seconds whatever its peers do, long enough for a commit and most runs. A request
/// dropped unanswered is retried by the platform; a hand-off dropped mid-run runs again,
/// marked, after the restart.
pub const STOP_GRACE: Duration = Duration::from_secs(3);

/// How long one exec run may take before it is killed and counted as failed.
pub const EXEC_TIMEOUT: Duration = Duration::from_secs(60);

/// The only variables of the listener's environment an exec child inherits: enough
/// for a shell to find programs and speak the user's language, nothing that could be a
/// secret.
pub const EXEC_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "TMPDIR",
];

/// How often a listener renews the leases of the events it is handing on.
pub const HEARTBEAT: Duration = Duration::from_secs(1);

/// The lease, in heartbeats, unless set: a claimant that misses this many renewals in a
/// row is taken for dead and its events are taken over, so a dead replica holds its
/// events for seconds, whatever the exec timeout.
const LEASE_HEARTBEATS: u32 = 5;

/// How the dispatcher runs.
#[derive(Clone, Debug)]
pub struct HandoffOptions {
    /// How long one exec run may take.
    pub exec_timeout: Duration,
    /// How long a claim holds an event against other listeners on the same store without
    /// a renewal; past it a dead claimant's events are taken over. Renewed every
    /// [`HandoffOptions::heartbeat`] while the attempt runs, so it must only outlast a
    /// few missed heartbeats, not an attempt.
    pub lease: Duration,
    /// How often the leases of running attempts are renewed.
    pub heartbeat: Duration,
    /// exec commands run at once.
    pub exec_jobs: usize,
    /// forward POSTs sent at once.
    pub forward_jobs: usize,
    /// This listener's name in leases: unique per process.
    pub owner: String,
}

impl HandoffOptions {
    /// Options for an exec timeout: the lease is five heartbeats (5 s), the
    /// jobs [`default_jobs`], and the owner is this process.
    pub fn new(exec_timeout: Duration) -> Self {
        let (exec_jobs, forward_jobs) = default_jobs();
        HandoffOptions {
            exec_timeout,
            lease: HEARTBEAT * LEASE_HEARTBEATS,
            heartbeat: HEARTBEAT,
            exec_jobs,
            forward_jobs,
            owner: default_owner(),
        }
    }

    /// Checks the jobs and that the lease outlasts two heartbeats.
    pub fn validate(&self) -> Result<(), Error> {
        if self.exec_jobs == 0 || self.forward_jobs == 0 {
            return Err(Error::ListenerConfig {
                field: "jobs",
                reason: "must be at least 1".into(),
            });
        }
        if self.heartbeat.is_zero() || self.lease < self.heartbeat * 2 {
            return Err(Error::ListenerConfig {
                field: "lease",
                reason: format!(
                    "{}s must be at least two heartbeats ({}s each), or a live listener \
                     loses its events to another",
                    self.lease.as_secs_f64(),
                    self.heartbeat.as_secs_f64()
                ),
            });
        }
        Ok(())
    }
}

impl Default for HandoffOptions {
    fn default() -> Self {
        HandoffOptions::new(EXEC_TIMEOUT)
    }
}

/// `(exec, forward)` jobs unless set: two exec runs per core (a run is a process
/// that mostly waits: on its own I/O, or on what it calls), four forward POSTs per
/// core (they only wait on the network). 4 and 8 on two cores.
pub fn default_jobs() -> (usize, usize) {
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    (2 * cores, 4 * cores)
}

/// `host:pid:random`, so two processes never share a lease.
pub fn default_owner() -> String {
    let mut bits = [0u8; 4];
    let _ = getrandom::fill(&mut bits);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    format!(
        "{}:{}:{}",
        host.trim(),
        std::process::id(),
        hex::encode(bits)
    )
}
/// How long one forward POST may take.
pub const FORWARD_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest wait between two attempts for one event.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Where events go after they are stored.
#[derive(Clone, Debug, Default)]
pub struct Sinks {
    /// A shell command that gets each event on stdin.
    pub exec: Option<String>,
    /// A URL each event is POSTed to.
    pub forward: Option<String>,
}

impl Sinks {
    /// The `handed_off` bits these sinks need.
    pub fn bits(&self) -> u8 {
        let mut bits = 0;
        if self.exec.is_some() {
            bits |= SINK_EXEC;
        }
        if self.forward.is_some() {
            bits |= SINK_FORWARD;
        }
        bits
    }

    /// Checks the forward URL before the listener starts.
    pub fn validate(&self) -> Result<(), Error> {
        if let Some(url) = &self.forward {
            let parsed = reqwest::Url::parse(url).map_err(|e| Error::Url {
                url: redact_url(url),
                reason: e.to_string(),
            })?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(Error::Url {
                    url: redact_url(url),
                    reason: format!("scheme {} is not http or https", parsed.scheme()),
                });
            }
        }
        if let Some(cmd) = &self.exec
            && cmd.trim().is_empty()
        {
            return Err(Error::ListenerConfig {
                field: "exec",
                reason: "the command is empty".into(),
            });
        }
        Ok(())
    }
}

/// The backoff after `attempts` failed attempts.
pub fn backoff(attempts: i64) -> Duration {
    let exp = u32::try_from(attempts.clamp(0, 16)).unwrap_or(16);
    Duration::from_secs(1u64 << exp).min(MAX_BACKOFF)
}

/// Runs until `stop` turns true: hands every pending event to every sink; then ends the
/// leases this listener still holds.
pub(crate) async fn run(
    store: Arc<dyn EventStore>,
    sinks: Sinks,
    options: HandoffOptions,
    wake: Arc<Notify>,
    stop: watch::Receiver<bool>,
) {
    if sinks.bits() == 0 {
        return;
    }
    let owner = options.owner.clone();
    dispatch(
        store.clone(),
        Arc::new(sinks),
        Arc::new(options),
        &wake,
        stop,
    )
    .await;
    let _ = store.release(&owner).await;
}

/// What every attempt shares.
struct Shared {
    store: Arc<dyn EventStore>,
    sinks: Arc<Sinks>,
    options: Arc<HandoffOptions>,
    http: Result<reqwest::Client, String>,
    exec_slots: Semaphore,
    forward_slots: Semaphore,
}

/// Events one claim leases per subscription, run in order by one lane.
const LANE_BATCH: usize = 16;

/// How long a claim that started nothing waits before a stored event may trigger the
/// next.
const CLAIM_PAUSE: Duration = Duration::from_millis(100);

/// The event ids of the running lanes, whose leases the heartbeat renews.
type Leased = Arc<std::sync::Mutex<HashSet<i64>>>;

/// Claims events and runs them in lanes side by side, one lane per subscription (its
/// events one after the other, in order), at most `exec_jobs` commands and
/// `forward_jobs` POSTs at once, while a heartbeat renews the leases of the lanes'
/// events.
async fn dispatch(
    store: Arc<dyn EventStore>,
    sinks: Arc<Sinks>,
    options: Arc<HandoffOptions>,
    wake: &Notify,
    mut stop: watch::Receiver<bool>,
) {
    let bits = sinks.bits();
    let lease_ms = millis(options.lease);
    let mut lanes_max = 0;
    if sinks.exec.is_some() {
        lanes_max += options.exec_jobs;
    }
    if sinks.forward.is_some() {
        lanes_max += options.forward_jobs;
    }
    let shared = Arc::new(Shared {
        http: forward_client(&sinks),
        exec_slots: Semaphore::new(options.exec_jobs),
        forward_slots: Semaphore::new(options.forward_jobs),
        store: store.clone(),
        sinks,
        options: options.clone(),
    });
    let leased: Leased = Arc::default();
    let heartbeat = tokio::spawn(renew_every(store.clone(), options.clone(), leased.clone()));
    let mut lanes: JoinSet<()> = JoinSet::new();
    let mut busy: HashMap<tokio::task::Id, String> = HashMap::new();
    loop {
        while let Some(done) = lanes.try_join_next_with_id() {
            busy.remove(&done.map_or_else(|e| e.id(), |(id, ())| id));
        }
        if *stop.borrow() {
            break;
        }
        let mut started = 0;
        if lanes.len() < lanes_max {
            let claim = Claim {
                owner: options.owner.clone(),
                sinks: bits,
                now_ms: store::now_ms(),
                lease_ms,
                limit: lanes_max - lanes.len(),
                per_subscription: LANE_BATCH,
                busy: busy.values().cloned().collect(),
            };
            for (subscription, events) in
                by_subscription(store.claim(claim).await.unwrap_or_default())
            {
                if lanes.len() >= lanes_max {
                    break;
                }
                // Its lane is still running: these wait for the next claim.
                if busy.values().any(|s| *s == subscription) {
                    continue;
                }
                let lane = Lane::new(&leased, &events);
                let task = lanes.spawn(run_lane(shared.clone(), lane, events, stop.clone()));
                busy.insert(task.id(), subscription);
                started += 1;
            }
        }
        if started > 0 && lanes.len() < lanes_max {
            // Room left: claim again at once (more subscriptions may be due).
            continue;
        }
        let wait = if started > 0 {
            Duration::from_secs(1)
        } else {
            match store.next_due(bits).await.ok().flatten() {
                Some(at) => Duration::from_millis(
                    u64::try_from(at.saturating_sub(store::now_ms())).unwrap_or(0),
                )
                .clamp(Duration::from_millis(10), Duration::from_secs(1)),
                None => Duration::from_secs(1),
            }
        };
        // A claim that found nothing to start is not retried on every stored event
        // (hundreds a second while busy lanes hold every due subscription): a new event
        // waits at most CLAIM_PAUSE, an ended lane not at all.
        let woken = async {
            wake.notified().await;
            if started == 0 {
                tokio::time::sleep(CLAIM_PAUSE).await;
            }
        };
        tokio::select! {
            Some(done) = lanes.join_next_with_id(), if !lanes.is_empty() => {
                busy.remove(&done.map_or_else(|e| e.id(), |(id, ())| id));
            }
            () = woken => {}
            _ = tokio::time::sleep(wait) => {}
            _ = stop.changed() => {}
        }
    }
    // A stop lets the running attempts finish within the grace (no lane starts another);
    // past it they are dropped (their commands killed), nothing is recorded, and the
    // events run again, marked, after the restart.
    let _ = tokio::time::timeout(STOP_GRACE, async {
        while lanes.join_next().await.is_some() {}
    })
    .await;
    lanes.shutdown().await;
    heartbeat.abort();
}

/// Claimed events grouped by subscription, each group in stored order, the groups in the
/// order of their oldest event.
fn by_subscription(events: Vec<StoredEvent>) -> Vec<(String, Vec<StoredEvent>)> {
    let mut groups: Vec<(String, Vec<StoredEvent>)> = Vec::new();
    for event in events {
        match groups.iter_mut().find(|(s, _)| *s == event.subscription_id) {
            Some((_, group)) => group.push(event),
            None => groups.push((event.subscription_id.clone(), vec![event])),
        }
    }
    groups
}

/// A lane's events in the heartbeat's set, for as long as the lane lives (aborted
/// included).
struct Lane {
    leased: Leased,
    ids: Vec<i64>,
}

impl Lane {
    fn new(leased: &Leased, events: &[StoredEvent]) -> Lane {
        let ids: Vec<i64> = events.iter().map(|e| e.id).collect();
        leased
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(ids.iter().copied());
        Lane {
            leased: leased.clone(),
            ids,
        }
    }

    /// Event `id` is done: its lease is no longer renewed.
    fn done(&self, id: i64) {
        self.leased
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        let mut leased = self.leased.lock().unwrap_or_else(|p| p.into_inner());
        for id in &self.ids {
            leased.remove(id);
        }
    }
}

/// Runs one subscription's claimed events one after the other, each attempt counted
/// before it starts; stops at a stop, or when a lease turns out lost (the rest are
/// another claimant's to run, in order).
async fn run_lane(
    shared: Arc<Shared>,
    lane: Lane,
    events: Vec<StoredEvent>,
    stop: watch::Receiver<bool>,
) {
    for event in events {
        if *stop.borrow() {
            return;
        }
        // Counted before anything runs: if this process dies mid-attempt, the next
        // runner knows its run is a re-run.
        let attempt = match shared
            .store
            .start_attempt(event.id, &shared.options.owner)
            .await
        {
            Ok(Some(n)) => Attempt(n),
            // The lease went to another claimant (or the store is gone: nothing can be
            // counted, so nothing runs).
            Ok(None) | Err(_) => return,
        };
        let id = event.id;
        run_attempt(&shared, event, attempt).await;
        lane.done(id);
    }
}

/// Every heartbeat, extends the leases of the running lanes' events by a lease.
async fn renew_every(store: Arc<dyn EventStore>, options: Arc<HandoffOptions>, running: Leased) {
    let lease_ms = millis(options.lease);
    loop {
        tokio::time::sleep(options.heartbeat).await;
        let ids: Vec<i64> = running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .copied()
            .collect();
        if !ids.is_empty() {
            let until = store::now_ms().saturating_add(lease_ms);
            let _ = store.renew(&options.owner, ids, until).await;
        }
    }
}

/// One attempt of one event, recorded (which ends its lease).
async fn run_attempt(shared: &Shared, event: StoredEvent, attempt: Attempt) {
    let (done, error) = hand_off(shared, &event, attempt).await;
    let record = HandoffRecord {
        id: event.id,
        owner: shared.options.owner.clone(),
        done,
        next_attempt_ms: store::now_ms().saturating_add(millis(backoff(event.attempts))),
        error,
    };
    // A store that is gone records nothing: the event is retried after the restart.
    let _ = shared.store.record_handoff(record).await;
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// One attempt at every sink the event still lacks, each within its sink's jobs: the
/// bits that succeeded and the failures.
async fn hand_off(shared: &Shared, event: &StoredEvent, attempt: Attempt) -> (u8, Option<String>) {
    let mut done = 0;
    let mut errors = Vec::new();
    let missing = shared.sinks.bits() & !event.handed_off;
    if missing & SINK_EXEC != 0
        && let Some(cmd) = &shared.sinks.exec
    {
        let _slot = shared.exec_slots.acquire().await;
        match exec(cmd, event, attempt, shared.options.exec_timeout).await {
            Ok(()) => done |= SINK_EXEC,
            Err(e) => errors.push(format!("exec: {e}")),
        }
    }
    if missing & SINK_FORWARD != 0
        && let Some(url) = &shared.sinks.forward
    {
        let _slot = shared.forward_slots.acquire().await;
        match forward(&shared.http, url, event, attempt).await {
            Ok(()) => done |= SINK_FORWARD,
            Err(e) => errors.push(format!("forward: {e}")),
        }
    }
    let error = (!errors.is_empty()).then(|| errors.join("; "));
    (done, error)
}

/// The number of an attempt, as counted in the store before it ran.
#[derive(Clone, Copy, Debug)]
struct Attempt(i64);

impl Attempt {
    /// `BRIDGECTL_ATTEMPT` / `x-bridgectl-attempt`.
    fn number(self) -> String {
        self.0.to_string()
    }

    /// `BRIDGECTL_RERUN` / `x-bridgectl-rerun`: `1` when an earlier attempt was started
    /// (so the event may have been handled already), else `0`.
    fn rerun(self) -> &'static str {
        if self.0 > 1 { "1" } else { "0" }
    }
}

/// The shell that runs an exec command (`$1`) as its child, with the event's body
/// on stdin, and takes the child's whole process group down with it when it gets
/// SIGTERM: the parent-death signal it is given (`bridgectl_local::child`). A plain
/// `sh -c CMD` would die alone and leave what CMD started (a pipeline, `sleep`, a
/// worker) running as an orphan. fd 3 carries stdin past the rule that gives a
/// background command /dev/null; `wait` returns at once when the trapped signal comes.
const EXEC_WRAPPER: &str = "exec 3<&0; trap 'kill -KILL 0' TERM; \
                            sh -c \"$1\" <&3 3<&- & exec 3<&-; wait $!";

async fn exec(
    cmd: &str,
    event: &StoredEvent,
    attempt: Attempt,
    timeout: Duration,
) -> Result<(), String> {
    // The body is written in full before anything starts, so no run can see a partial
    // or empty stdin, whenever this process dies.
    let stdin = body_file(event.body.clone())
        .await
        .map_err(|e| format!("could not write the body for the command's stdin: {e}"))?;
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(EXEC_WRAPPER)
        .arg("bridgectl-exec")
        .arg(cmd)
        .env_clear();
    for name in EXEC_ENV {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command
        .env("BRIDGECTL_EVENT_ID", event.id.to_string())
        .env("BRIDGECTL_SUBSCRIPTION_ID", &event.subscription_id)
        .env("BRIDGECTL_SEQUENCE_NUMBER", &event.sequence_number)
        .env(
            "BRIDGECTL_EVENT_TYPE",
            event.event_type.as_deref().unwrap_or(""),
        )
        .env("BRIDGECTL_ATTEMPT", attempt.number())
        .env("BRIDGECTL_RERUN", attempt.rerun())
        .stdin(Stdio::from(stdin))
        // Its own group, so a timeout or a stop kills everything it started.
        .process_group(0);
    // SIGTERM when the listener dies (this process killed, SIGKILL included): the exec
    // wrapper then kills its group. A child whose listener died first never runs.
    bridgectl_local::child::die_with_parent(
        command.as_std_mut(),
        bridgectl_local::child::Signal::Term,
    );
    let child = command
        .spawn()
        .map_err(|e| format!("could not start sh: {e}"))?;
    let mut group = Group(child);
    match tokio::time::timeout(timeout, group.0.wait()).await {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => Err(format!("command exited with {status}")),
        Ok(Err(e)) => Err(format!("waiting for the command: {e}")),
        Err(_) => Err(format!(
            "command timed out after {}s",
            timeout.as_secs_f64()
        )),
    }
    // `group` is dropped here: whatever the command left running in its group dies.
}

/// An unlinked temporary file holding `body`, read from the start: the command's stdin.
async fn body_file(body: Vec<u8>) -> std::io::Result<std::fs::File> {
    tokio::task::spawn_blocking(move || {
        use std::io::{Seek, Write};
        let mut file = tempfile::tempfile()?;
        file.write_all(&body)?;
        file.rewind()?;
        Ok(file)
    })
    .await
    .map_err(std::io::Error::other)?
}

/// A running exec child, the leader of its own process group: dropping it (the run
/// ended, timed out, or the listener stops past its grace) kills the whole group.
struct Group(tokio::process::Child);

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(pid) = self.0.id().and_then(|p| i32::try_from(p).ok()) {
            kill_group(pid);
        }
        let _ = self.0.start_kill();
    }
}

/// SIGKILL to every process of group `pgid`.
fn kill_group(pgid: i32) {
    // SAFETY: kill(2) takes plain integers and touches no memory of ours; a negative pid
    // names the group, which is the child's own (it leads it), never ours.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

/// The forward client, under the rules of every client of the project
/// ([`bridgectl_http::client_builder`]): redirects are not followed (a redirect would
/// send the event, signature included, wherever the target points), and no proxy from
/// the environment sees a plain-http request. The error, if it cannot be built, is each
/// attempt's.
fn forward_client(sinks: &Sinks) -> Result<reqwest::Client, String> {
    let Some(url) = &sinks.forward else {
        return Err("no forward URL".into());
    };
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("{}: {e}", redact_url(url)))?;
    crate::http::client_builder(&parsed)
        .timeout(FORWARD_TIMEOUT)
        .build()
        .map_err(|e| format!("no http client: {e}"))
}

async fn forward(
    http: &Result<reqwest::Client, String>,
    url: &str,
    event: &StoredEvent,
    attempt: Attempt,
) -> Result<(), String> {
    let http = http.as_ref().map_err(Clone::clone)?;
    // Errors and the store name the target by scheme, host and port only: its path,
    // query and user info may carry a credential.
    let target = redact_url(url);
    let mut req = http
        .post(url)
        .header("content-type", "application/json")
        .header("x-bridgectl-event-id", event.id.to_string())
        .header("x-bridgectl-subscription-id", &event.subscription_id)
        .header("x-bridgectl-sequence-number", &event.sequence_number)
        .header("x-bridgectl-attempt", attempt.number())
        .header("x-bridgectl-rerun", attempt.rerun())
        .body(event.body.clone());
    if let Some(sig) = &event.signature {
        req = req.header("x-signature", sig);
    }
    match req.send().await {
        Ok(resp) if resp.status().is_success() => Ok(()),
        Ok(resp) if resp.status().is_redirection() => Err(format!(
            "{target} answered {} (redirects are not followed: forward to the final URL)",
            resp.status()
        )),
        Ok(resp) => Err(format!("{target} answered {}", resp.status())),
        Err(e) => {
            // reqwest's message quotes the whole URL: dropped. It leaves the cause
            // (refused, timed out) to its sources, which carry no URL.
            let e = e.without_url();
            let mut text = format!("{target}: {e}");
            let mut cause = std::error::Error::source(&e);
            while let Some(c) = cause {
                text.push_str(&format!(": {c}"));
                cause = c.source();
            }
            Err(text)
        }
    }
}
