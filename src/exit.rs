//! Exit codes, documented in the README and stable across releases.
//!
//! Scripts branch on these, so a new failure kind gets a new code rather than
//! changing the meaning of an old one.

use bridgectl_tx::{Expectation, NonceSource};

/// What a non-zero exit means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Code {
    /// Anything not listed below.
    Failure = 1,
    /// Bad usage or configuration: unknown flag, missing argument, a value that does
    /// not parse, an id prefix naming several records, a config file or profile setting
    /// that is missing or does not parse (clap uses 2 as well).
    Usage = 2,
    /// The input was refused: malformed transaction or batch file, failed policy or
    /// intent check, tampered or hostile key file. Nothing was signed.
    Refused = 3,
    /// The passphrase was wrong or could not be obtained.
    Passphrase = 4,
    /// The user declined at the confirmation prompt, or no TTY was there to ask.
    Declined = 5,
    /// A key, file or record that was asked for does not exist (an explicit `--config`
    /// too).
    NotFound = 6,
    /// The platform or a node answered with an error, or could not be reached.
    Remote = 7,
    /// Gave up waiting for a result; the flow is journaled and `resume` continues it.
    Timeout = 8,
    /// A batch ran to its end with items failed or pending: `batch status ID` shows
    /// which, `batch resume ID` runs what can still run.
    Incomplete = 9,
    /// What would be created exists already: a key with that label or address, an output
    /// file. Nothing was overwritten. (Not [`Code::Refused`]: a script that retries a
    /// write wants to know its first attempt got there.)
    Exists = 10,
    /// Another process is running the same batch (a second `batch submit`, `batch
    /// resume` or `batch run` of it at once): nothing was done here; the first run goes
    /// on. (Not [`Code::Refused`]: nothing is wrong with the input, and a script may wait
    /// and look again.)
    Busy = 11,
    /// The shared state store (a journal in PostgreSQL) could not be reached, or was
    /// lost mid-transaction: nothing that it did not commit was signed or sent, and
    /// nothing it committed is lost. Run the command again once it is back (`resume`,
    /// `batch resume`).
    Store = 12,
}

impl Code {
    /// Every code, in order: the README's table lists exactly these.
    #[cfg(test)]
    pub const ALL: [Code; 12] = [
        Code::Failure,
        Code::Usage,
        Code::Refused,
        Code::Passphrase,
        Code::Declined,
        Code::NotFound,
        Code::Remote,
        Code::Timeout,
        Code::Incomplete,
        Code::Exists,
        Code::Busy,
        Code::Store,
    ];

    /// The kind's name in `--json` errors (`{"error": {"code": "not-found", ...}}`):
    /// kebab-case, as stable as the number.
    pub fn name(self) -> &'static str {
        match self {
            Code::Failure => "failure",
            Code::Usage => "usage",
            Code::Refused => "refused",
            Code::Passphrase => "passphrase",
            Code::Declined => "declined",
            Code::NotFound => "not-found",
            Code::Remote => "remote",
            Code::Timeout => "timeout",
            Code::Incomplete => "incomplete",
            Code::Exists => "exists",
            Code::Busy => "busy",
            Code::Store => "store",
        }
    }
}

/// Marks an error with the exit code it must produce.
///
/// Commands wrap a library error in this when its meaning for the exit code is clear
/// at the call site; everything else falls back to [`Code::Failure`].
/// Its message is the wrapped error's whole chain (`{:#}`), and it reports no source of
/// its own, so the chain is printed once. Every library error either prints its source
/// or returns it, never both, so `{:#}` names each cause once.
#[derive(Debug, thiserror::Error)]
#[error("{error:#}")]
pub struct Coded {
    /// The exit code.
    pub code: Code,
    /// The error itself.
    pub error: anyhow::Error,
}

/// Extension to tag a result with an exit code.
pub trait WithCode<T> {
    /// Tags the error, if any, with `code`.
    fn code(self, code: Code) -> anyhow::Result<T>;
}

impl<T, E: Into<anyhow::Error>> WithCode<T> for Result<T, E> {
    fn code(self, code: Code) -> anyhow::Result<T> {
        self.map_err(|e| {
            anyhow::Error::new(Coded {
                code,
                error: e.into(),
            })
        })
    }
}

/// Builds an error with a code from a message.
pub fn coded(code: Code, msg: impl std::fmt::Display) -> anyhow::Error {
    anyhow::Error::new(Coded {
        code,
        error: anyhow::anyhow!("{msg}"),
    })
}

/// A failure whose remedy the command that met it knows (a flag to type, with its
/// value): its code, and the `hint:` line printed under it.
#[derive(Debug, thiserror::Error)]
#[error("{error:#}")]
pub struct Hinted {
    /// The failure, with its exit code.
    pub error: anyhow::Error,
    /// What to do next.
    pub hint: String,
}

/// `error` with the hint `hint` (see [`Hinted`]).
pub fn hinted(error: anyhow::Error, hint: String) -> anyhow::Error {
    anyhow::Error::new(Hinted { error, hint })
}

/// A batch that ran to its end with items not completed: exit 9, and the batch is
/// named as typed data ([`handles`]) so that a script can resume it.
#[derive(Debug, thiserror::Error)]
#[error("batch {batch_id}: {not_completed} of {total} items did not complete")]
pub struct BatchIncomplete {
    /// The batch.
    pub batch_id: String,
    /// How many of its items did not complete.
    pub not_completed: usize,
    /// How many items it has.
    pub total: usize,
    /// How many of them were sent and not seen to end in time (their transactions may
    /// be stuck: not mined, under-priced).
    pub waited_out: usize,
}

/// What a script acts on after a failure, read from the errors' typed fields (never
/// from their messages): the flow the hint's commands take (`resume`, `replace`,
/// `cancel`, `history`), the batch, the transaction. `--json` errors carry them as
/// `txId`, `batchId` and `hash`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Handles {
    /// The flow's txId.
    pub tx_id: Option<String>,
    /// The batch's id.
    pub batch_id: Option<String>,
    /// The transaction's hash (0x and 64 hex digits).
    pub hash: Option<String>,
}

impl Handles {
    /// Takes what `other` knows and `self` does not: the first error of a chain that
    /// names a handle names it.
    fn or(mut self, other: Handles) -> Handles {
        self.tx_id = self.tx_id.or(other.tx_id);
        self.batch_id = self.batch_id.or(other.batch_id);
        self.hash = self.hash.or(other.hash);
        self
    }
}

/// The handles of `err` (see [`Handles`]).
pub fn handles(err: &anyhow::Error) -> Handles {
    err.chain().fold(Handles::default(), |found, cause| {
        // A coded or hinted error reports no source of its own: look inside.
        if let Some(coded) = cause.downcast_ref::<Coded>() {
            return found.or(handles(&coded.error));
        }
        if let Some(hinted) = cause.downcast_ref::<Hinted>() {
            return found.or(handles(&hinted.error));
        }
        if let Some(b) = cause.downcast_ref::<BatchIncomplete>() {
            return found.or(Handles {
                batch_id: Some(b.batch_id.clone()),
                ..Handles::default()
            });
        }
        match cause.downcast_ref::<bridgectl_flow::Error>() {
            Some(flow) => found.or(flow_handles(flow)),
            None => found,
        }
    })
}

/// The handles a flow error carries.
fn flow_handles(err: &bridgectl_flow::Error) -> Handles {
    use bridgectl_flow::Error as F;
    let flow = |tx_id: &str| Some(tx_id.to_owned());
    // A hash field that may say "not signed yet" instead.
    let hash = |text: &str| {
        text.parse::<alloy_primitives::B256>()
            .ok()
            .map(|h| h.to_string())
    };
    let (tx_id, hash) = match err {
        F::Timeout {
            flow: f, tx_hash, ..
        } => (f.clone(), tx_hash.map(|h| h.to_string())),
        F::StoppedAtApproval { tx_id, source } => {
            return Handles {
                tx_id: flow(tx_id),
                ..Handles::default()
            }
            .or(flow_handles(source));
        }
        F::AlreadyCompleted { tx_id, tx_hash, .. } => {
            (flow(tx_id), tx_hash.as_deref().and_then(hash))
        }
        F::NonceHeld { by, tx_hash, .. } => (flow(by), hash(tx_hash)),
        F::NonceReserved { by, .. } => (flow(by), None),
        F::NeedsApproval { tx_id }
        | F::LeaseExpired { tx_id, .. }
        | F::Stale { tx_id, .. }
        | F::JournalCorrupt { tx_id, .. }
        | F::ChangedSinceVerified { tx_id }
        | F::CannotReplace { tx_id, .. }
        | F::NothingToResume { tx_id, .. }
        | F::AlreadySigned { tx_id, .. } => (flow(tx_id), None),
        F::Reverted { tx_hash, .. } => (None, Some(tx_hash.to_string())),
        F::BatchRunning { batch_id, .. } => {
            return Handles {
                batch_id: Some(batch_id.clone()),
                ..Handles::default()
            };
        }
        _ => (None, None),
    };
    Handles {
        tx_id,
        batch_id: None,
        hash,
    }
}

/// What to do next, for errors whose remedy is a command: printed under the error.
pub fn hint(err: &anyhow::Error) -> Option<String> {
    err.chain().find_map(|cause| {
        if let Some(hinted) = cause.downcast_ref::<Hinted>() {
            return Some(hinted.hint.clone());
        }
        // A coded error reports no source of its own: look inside.
        if let Some(coded) = cause.downcast_ref::<Coded>() {
            return hint(&coded.error);
        }
        if let Some(bridgectl_flow::ProfileError::Missing { .. }) =
            cause.downcast_ref::<bridgectl_flow::ProfileError>()
        {
            return Some(
                "--config or BRIDGECTL_CONFIG names another config file, --profile or \
                 BRIDGECTL_PROFILE another profile in it"
                    .into(),
            );
        }
        if let Some(b) = cause.downcast_ref::<BatchIncomplete>() {
            let stuck = match b.waited_out {
                0 => String::new(),
                n => format!(
                    "; {n} sent did not end in time: if their transactions are not mined, \
                     `bridgectl batch resume {} --replace-stuck` signs them again at their \
                     nonces at a higher gas price",
                    b.batch_id
                ),
            };
            return Some(format!(
                "`bridgectl batch status {0}` shows which, `bridgectl batch resume {0}` runs \
                 what can still run{stuck}",
                b.batch_id
            ));
        }
        if let Some(bridgectl_flow::Error::Timeout {
            flow: Some(tx_id),
            not_mined,
            ..
        }) = cause.downcast_ref::<bridgectl_flow::Error>()
        {
            return Some(match not_mined {
                // Not mined: more waiting may never end it. Dropped from the node's pool,
                // resume sends the same bytes again; priced out, only a replacement helps.
                Some(_) => format!(
                    "the transaction is not mined: `bridgectl replace {tx_id}` signs it again \
                     at a higher gas price, `bridgectl cancel {tx_id}` ends the flow; \
                     `bridgectl resume {tx_id}` sends the same bytes again and waits"
                ),
                None => {
                    format!("the flow is journaled: `bridgectl resume {tx_id}` continues waiting")
                }
            });
        }
        if let Some(bridgectl_flow::Error::StoppedAtApproval { tx_id, .. }) =
            cause.downcast_ref::<bridgectl_flow::Error>()
        {
            return Some(format!(
                "the transaction is journaled, unsigned: `bridgectl resume {tx_id}` checks it \
                 again, shows it and asks again"
            ));
        }
        // The checks speak of policy settings and given nonces; the CLI names its flags.
        // Matched on the kind of expectation, never its words.
        let refusal = cause.downcast_ref::<bridgectl_tx::Error>().or_else(|| {
            cause
                .downcast_ref::<bridgectl_flow::Error>()
                .and_then(bridgectl_flow::Error::refusal)
        });
        if let Some(hint) = refusal
            .and_then(bridgectl_tx::Error::refused_expectation)
            .and_then(expectation_hint)
        {
            return Some(hint.into());
        }
        if let Some(bridgectl_flow::Error::PlanRefused(refusal)) =
            cause.downcast_ref::<bridgectl_flow::Error>()
            && let bridgectl_flow::PlanRefusal::AboveMaxTotal { .. } = **refusal
        {
            return Some("`--max-total TOKEN=AMOUNT` sets the most the batch may move".into());
        }
        if let Some(bridgectl_webhook::Error::Invalid { field, .. }) =
            cause.downcast_ref::<bridgectl_webhook::Error>()
        {
            return webhook_flag(field).map(str::to_owned);
        }
        // The flows name what to do in library words; the CLI names its commands.
        match cause.downcast_ref::<bridgectl_flow::Error>() {
            Some(bridgectl_flow::Error::NonceReserved { by, .. }) => {
                return Some(format!("`bridgectl resume {by}` finishes that flow"));
            }
            Some(bridgectl_flow::Error::NonceHeld {
                awaits: Some(bridgectl_flow::Awaits::SignRequest),
                by,
                ..
            }) => {
                return Some(format!(
                    "flow {by} wrote a sign request: `bridgectl sign` it on the offline \
                     machine, then `bridgectl submit` the bundle here (`bridgectl history {by}` \
                     shows it)"
                ));
            }
            Some(bridgectl_flow::Error::NonceHeld {
                awaits: Some(bridgectl_flow::Awaits::PreparedBatch { batch_id }),
                ..
            }) => {
                return Some(format!(
                    "`bridgectl batch submit` its signed batch, or `bridgectl batch abandon \
                     {batch_id}` gives its unsigned nonces back (`bridgectl batch status \
                     {batch_id}` shows them)"
                ));
            }
            Some(bridgectl_flow::Error::NonceHeld { by, .. }) => {
                return Some(format!(
                    "`bridgectl resume {by}` sends it again; `bridgectl replace {by}` signs it \
                     again at a higher gas price; `bridgectl cancel {by}` uses the nonce up"
                ));
            }
            Some(
                bridgectl_flow::Error::ChainReset { chain_id, .. }
                | bridgectl_flow::Error::ChainResetInLog { chain_id, .. },
            ) => {
                return Some(format!(
                    "`bridgectl journal reset-chain {chain_id}` retires those flows and goes on \
                     with the new chain"
                ));
            }
            Some(bridgectl_flow::Error::NothingToResume { tx_id, .. }) => {
                return Some(format!(
                    "`bridgectl history {tx_id}` shows its steps; a sign request is signed with \
                     `bridgectl sign` and its bundle sent with `bridgectl submit`"
                ));
            }
            Some(bridgectl_flow::Error::NodeOnWrongChain {
                chain_id, setting, ..
            }) => {
                return Some(format!(
                    "point {setting} at a node of chain {chain_id} (in the profile, or \
                     BRIDGECTL_{})",
                    setting.to_ascii_uppercase()
                ));
            }
            _ => {}
        }
        if let Some(bridgectl_flow::Error::LeaseExpired { tx_id, .. }) =
            cause.downcast_ref::<bridgectl_flow::Error>()
        {
            return Some(format!(
                "`bridgectl resume {tx_id}` checks the nonce again, shows the transaction and \
                 asks again (BRIDGECTL_RESERVATION_LEASE sets how long a reservation holds)"
            ));
        }
        if let Some(bridgectl_signing_log::Error::Conflict { .. }) =
            cause.downcast_ref::<bridgectl_signing_log::Error>()
        {
            return Some(
                "`bridgectl log export --history --key KEY -o FILE` here, then `bridgectl log \
                 import FILE --key KEY` on a host of that store, carries a key's guard there"
                    .into(),
            );
        }
        if let Some(
            bridgectl_signing_log::Error::RolledBack { .. }
            | bridgectl_signing_log::Error::Foreign { .. }
            | bridgectl_signing_log::Error::Checkpoint { .. },
        ) = cause.downcast_ref::<bridgectl_signing_log::Error>()
        {
            return Some(
                "`bridgectl log verify` checks the log; once you know why, `bridgectl log \
                 acknowledge` accepts it as it stands"
                    .into(),
            );
        }
        match cause.downcast_ref::<reqwest::Error>() {
            Some(e) if e.is_connect() => Some(
                "nothing answered there: is the platform running (for the sandbox: is \
                 `bridgectl sandbox` still up? `bridgectl sandbox --show` prints where it \
                 listens), and is the profile's URL right (`--profile`, BRIDGECTL_CONFIG)?"
                    .into(),
            ),
            Some(e) if e.is_timeout() => Some(
                "no answer in time: the platform or the network is slow or down; a flow that \
                 signed is journaled and `bridgectl resume TXID` finishes it"
                    .into(),
            ),
            _ => None,
        }
    })
}

/// The flags of `webhook create` and `webhook update` that give the webhook field the
/// library names: its errors speak of the condition's parts, not of our flags.
/// The flag that meets a policy refusal's expectation, where one does.
fn expectation_hint(kind: Expectation) -> Option<&'static str> {
    match kind {
        Expectation::NextNonce(NonceSource::Journal) => Some(
            "`--nonce N` gives the sender's next nonce when this journal is behind (the key \
             signed elsewhere since)",
        ),
        Expectation::NoValue => {
            Some("`--allow-value` (or the profile's max-value) allows native value")
        }
        _ => None,
    }
}

fn webhook_flag(field: &str) -> Option<&'static str> {
    use bridgectl_webhook::client;
    Some(match field {
        client::PERIOD => "`--period N` gives BLOCK_PERIOD's blocks per notification",
        client::ADDRESSES => {
            "`--address ADDRESS` gives an address to watch (once per address; exactly one for \
             BELOW_THRESHOLD_BALANCE)"
        }
        client::TOKENS => "`--token ADDRESS` gives a token contract to watch (TOKEN_TRANSFER)",
        client::THRESHOLD => "`--threshold WEI` gives BELOW_THRESHOLD_BALANCE's balance in wei",
        client::CONDITION => {
            "`--condition-json JSON` gives the whole condition, instead of --period, --address, \
             --token and --threshold"
        }
        client::UPDATE => "give --active, --url, --description or a condition flag",
        _ => return None,
    })
}

/// Whether `err` is a write to a closed pipe.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The exit code for an error: the first [`Coded`] in its chain, else a mapping of
/// known library errors, else [`Code::Failure`].
pub fn code_for(err: &anyhow::Error) -> Code {
    // A shared store out of reach (the journal's or the signing log's) is the store's
    // code, however deep the library that met it wrapped it: nothing was acted on, and
    // a retry once it is back may succeed.
    if err.chain().any(|c| {
        c.downcast_ref::<bridgectl_store::Error>()
            .is_some_and(bridgectl_store::Error::is_unavailable)
    }) {
        return Code::Store;
    }
    for cause in err.chain() {
        if let Some(hinted) = cause.downcast_ref::<Hinted>() {
            return code_for(&hinted.error);
        }
        if let Some(coded) = cause.downcast_ref::<Coded>() {
            return coded.code;
        }
        if let Some(profile) = cause.downcast_ref::<bridgectl_flow::ProfileError>() {
            return profile_code(profile);
        }
        if cause.downcast_ref::<BatchIncomplete>().is_some() {
            return Code::Incomplete;
        }
        if let Some(ks) = cause.downcast_ref::<bridgectl_keystore::Error>() {
            return keystore_code(ks);
        }
        if cause
            .downcast_ref::<bridgectl_signing_log::Error>()
            .is_some()
        {
            // A log that cannot be read or trusted, met outside a signature (a
            // signature's refusal comes as a tx error and is Refused).
            return Code::Failure;
        }
        if let Some(flow) = cause.downcast_ref::<bridgectl_flow::Error>() {
            return flow_code(flow);
        }
        if let Some(tx) = cause.downcast_ref::<bridgectl_tx::Error>() {
            return tx_code(tx);
        }
        if let Some(webhook) = cause.downcast_ref::<bridgectl_webhook::Error>() {
            return webhook_code(webhook);
        }
    }
    Code::Failure
}

/// A config file that cannot be found (named by `--config`) is not found; one that
/// cannot be read otherwise is a failure; every other profile error is a usage error.
fn profile_code(err: &bridgectl_flow::ProfileError) -> Code {
    use bridgectl_flow::ProfileError as P;
    match err {
        P::Read { source, .. } if source.kind() == std::io::ErrorKind::NotFound => Code::NotFound,
        P::Read { .. } => Code::Failure,
        P::Client(e) => flow_code(e),
        _ => Code::Usage,
    }
}

fn flow_code(err: &bridgectl_flow::Error) -> Code {
    use bridgectl_flow::Error as F;
    match err {
        F::Tx(e) => tx_code(e),
        F::Unlock(e) => e
            .downcast_ref::<bridgectl_keystore::Error>()
            .map_or(Code::Failure, keystore_code),
        F::Declined(_) => Code::Declined,
        F::StoppedAtApproval { source, .. } => flow_code(source),
        F::Approval(inner) => inner
            .downcast_ref::<Coded>()
            .map_or(Code::Failure, |c| c.code),
        F::BundleMismatch(_)
        | F::NotBundle(_)
        | F::NonceReserved { .. }
        | F::NonceHeld { .. }
        | F::CannotReplace { .. }
        | F::ChainReset { .. }
        | F::ChainResetInLog { .. }
        | F::NodeOnWrongChain { .. }
        | F::NotReset { .. }
        | F::LeaseExpired { .. }
        | F::BatchRefused { .. }
        | F::BatchNotWhole(_)
        | F::NotPrepared(_)
        | F::ItemsHeld(_)
        | F::BatchAbandoned { .. }
        | F::PlanRefused(_)
        | F::BalanceTooLow(_)
        | F::JournalCorrupt { .. }
        | F::ChangedSinceVerified { .. }
        | F::Stale { .. }
        | F::NothingToCheckAgainst
        | F::PlaintextRefused { .. }
        | F::MigrationRefused(_) => Code::Refused,
        F::BatchRunning { .. } | F::ClaimTakenOver { .. } => Code::Busy,
        F::Journal { source, .. } if source.is_unavailable() => Code::Store,
        F::NotInJournal(_) | F::NoSuchBatch(_) => Code::NotFound,
        F::InvalidBatch(_) => Code::Refused,
        F::AmbiguousTxId { .. } | F::SignerUrl { .. } => Code::Usage,
        F::Timeout { .. } => Code::Timeout,
        F::Http { .. } | F::Platform { .. } | F::UnexpectedShape { .. } | F::Body { .. } => {
            Code::Remote
        }
        _ => Code::Failure,
    }
}

/// Exit code for a webhook error (the web3 API, the key file, the listener and its
/// store).
fn webhook_code(err: &bridgectl_webhook::Error) -> Code {
    use bridgectl_webhook::Error as W;
    match err {
        W::NotFound { .. } | W::Api { status: 404, .. } => Code::NotFound,
        // The web3 API answered with an error, or could not be reached: remote, as for
        // the platform.
        W::Http { .. } | W::Body { .. } | W::Api { .. } => Code::Remote,
        W::Network(_)
        | W::EventType(_)
        | W::Invalid { .. }
        | W::Url { .. }
        | W::ListenerConfig { .. }
        | W::Unsupported { .. } => Code::Usage,
        W::InsecureUrl { .. } => Code::Refused,
        _ => Code::Failure,
    }
}

/// Exit code for a tx error: every refusal of the input is [`Code::Refused`].
fn tx_code(err: &bridgectl_tx::Error) -> Code {
    if err.is_refusal() {
        return Code::Refused;
    }
    // A signing endpoint that did not answer, answered with an error or too much: a
    // remote failure like a node's (the endpoint's error is kept inside).
    if let bridgectl_tx::Error::Signer(alloy_signer::Error::Other(inner)) = err
        && let Some(endpoint) = inner.downcast_ref::<bridgectl_flow::Error>()
    {
        return flow_code(endpoint);
    }
    Code::Failure
}

/// Exit code for a keystore error.
fn keystore_code(err: &bridgectl_keystore::Error) -> Code {
    use bridgectl_keystore::Error as K;
    match err {
        K::WrongPassphrase { .. } | K::PassphraseUnavailable { .. } => Code::Passphrase,
        K::NotFound { .. } => Code::NotFound,
        K::AlreadyExists { .. } => Code::Exists,
        K::ExcessiveWork { .. }
        | K::InsecurePermissions { .. }
        | K::Malformed { .. }
        | K::Json { .. }
        | K::UnsupportedVersion { .. }
        | K::Unsupported { .. }
        | K::AddressMismatch { .. }
        | K::WriteCheck { .. }
        | K::InvalidKey { .. }
        | K::Mnemonic { .. } => Code::Refused,
        K::Ambiguous { .. } | K::InvalidLabel { .. } | K::WeakKdf { .. } => Code::Usage,
        _ => Code::Failure,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The README's "Exit codes" table and this enum agree: the same numbers with the
    /// same `--json` names, none missing on either side.
    #[test]
    fn the_readme_table_lists_every_code() {
        let readme = include_str!("../README.md");
        let table = &readme[readme.find("## Exit codes").expect("the section")..];
        let rows: Vec<(u8, String)> = table
            .lines()
            .skip_while(|l| !l.starts_with("| 0 |"))
            .skip(1)
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                (
                    cells[1].parse().expect("a code"),
                    cells[2].trim_matches('`').to_owned(),
                )
            })
            .collect();
        let codes: Vec<(u8, String)> = Code::ALL
            .iter()
            .map(|&c| (c as u8, c.name().to_owned()))
            .collect();
        assert_eq!(rows, codes);
    }

    /// A webhook error maps to its code from anywhere in the chain, as the flows' do.
    #[test]
    fn a_webhook_error_maps_to_its_code() {
        use bridgectl_webhook::Error as W;
        let cases = [
            (
                W::InsecureUrl {
                    host: "example.com".into(),
                },
                Code::Refused,
            ),
            (
                W::NotFound {
                    id: "7".into(),
                    chain: "ethereum".into(),
                    network: "mainnet".into(),
                },
                Code::NotFound,
            ),
            (
                W::Url {
                    url: "ftp://x".into(),
                    reason: "unsupported scheme".into(),
                },
                Code::Usage,
            ),
        ];
        for (error, code) in cases {
            let err = anyhow::Error::new(error).context("webhook get");
            assert_eq!(code_for(&err), code, "{err:#}");
        }
    }

    /// The handles come from the errors' fields, through context and a coded wrapper:
    /// the flow holding a nonce with its transaction (none when it has not signed), and
    /// nothing for an error that names no flow.
    #[test]
    fn the_handles_are_read_from_typed_fields() {
        use bridgectl_flow::Error as F;
        let hash = format!("0x{}", "ab".repeat(32));
        let held = |tx_hash: &str| {
            anyhow::Error::new(F::NonceHeld {
                address: alloy_primitives::Address::ZERO,
                chain_id: 1,
                nonce: 0,
                by: "flow-1".into(),
                state: bridgectl_flow::FlowState::Submitted,
                tx_hash: tx_hash.into(),
                awaits: None,
            })
            .context("redeem")
        };
        assert_eq!(
            handles(&held(&hash)),
            Handles {
                tx_id: Some("flow-1".into()),
                batch_id: None,
                hash: Some(hash.clone()),
            }
        );
        assert_eq!(handles(&held("not signed yet")).hash, None);
        let coded = held(&hash).context("wrapped");
        let coded = anyhow::Error::new(Coded {
            code: Code::Refused,
            error: coded,
        });
        assert_eq!(handles(&coded).tx_id.as_deref(), Some("flow-1"));
        let batch = anyhow::Error::new(BatchIncomplete {
            batch_id: "b-1".into(),
            not_completed: 1,
            total: 2,
            waited_out: 0,
        });
        assert_eq!(handles(&batch).batch_id.as_deref(), Some("b-1"));
        assert_eq!(code_for(&batch), Code::Incomplete);
        assert!(hint(&batch).is_some_and(|h| h.contains("bridgectl batch resume b-1")));
        let none = anyhow::Error::new(F::NotInJournal("x".into()));
        assert_eq!(handles(&none), Handles::default());
    }

    /// A policy refusal's hint comes from the kind of expectation it failed, never from
    /// its words: reworded, wrapped by the flows and given context, it keeps its hint;
    /// near misses (the node's nonce rather than the journal's, a value above a
    /// max-value rather than none allowed) get none.
    #[test]
    fn policy_hints_follow_the_kind_of_expectation_not_its_words() {
        use bridgectl_tx::{CheckedBy, Error as T, Field};
        let refusal = |field: Field, kind: Expectation| T::Policy {
            by: CheckedBy::Policy,
            field,
            kind,
            expected: "words that name no flag".into(),
            found: "1".into(),
        };
        let journal = Expectation::NextNonce(NonceSource::Journal);
        let hinted = |e: T| hint(&anyhow::Error::new(e).context("sign"));
        let flow_hinted =
            |e: T| hint(&anyhow::Error::new(bridgectl_flow::Error::Tx(e)).context("redeem"));
        for hinted in [&hinted as &dyn Fn(T) -> Option<String>, &flow_hinted] {
            let nonce = hinted(refusal(Field::Nonce, journal)).expect("a hint");
            assert!(nonce.contains("`--nonce N`"), "{nonce}");
            let value = hinted(refusal(Field::Value, Expectation::NoValue)).expect("a hint");
            assert!(value.contains("`--allow-value`"), "{value}");
            for near in [
                refusal(Field::Nonce, Expectation::NextNonce(NonceSource::Node)),
                refusal(Field::Nonce, Expectation::AboveJournalFloor),
                refusal(Field::Value, Expectation::AtMost),
            ] {
                assert_eq!(hinted(near), None);
            }
        }
    }

    /// The verifier's own refusals carry the kinds the hints match: native value under a
    /// policy without max-value, and a nonce checked against the journal alone.
    #[test]
    fn the_verifiers_refusals_get_their_hints() {
        use bridgectl_tx::{Nonce, NonceFacts, RawTx, verify};
        let tx = RawTx {
            from: alloy_primitives::Address::repeat_byte(0x11),
            to: alloy_primitives::Address::repeat_byte(0x22),
            data: Default::default(),
            nonce: 5,
            gas_limit: 21_000,
            gas_price: 1,
            chain_id: 1,
            value: alloy_primitives::U256::from(1),
        };
        let (mut policy, context) = verify::exactly(&tx);
        policy.max_value = None;
        let refused = verify(&tx, None, &policy, &context).expect_err("native value");
        let value = hint(&anyhow::Error::new(refused)).expect("a hint");
        assert!(value.contains("`--allow-value`"), "{value}");

        let (policy, mut context) = verify::exactly(&tx);
        context.nonce = Nonce::Next(NonceFacts {
            journal_next: Some(3),
            ..NonceFacts::default()
        });
        let refused = verify(&tx, None, &policy, &context).expect_err("a gap");
        let nonce = hint(&anyhow::Error::new(refused)).expect("a hint");
        assert!(nonce.contains("`--nonce N`"), "{nonce}");
    }

    #[test]
    fn a_coded_error_prints_its_chain_once() {
        let err = anyhow::Error::new(std::io::Error::new(
            std::io::ErrorKind::AddrInUse,
            "Address already in use",
        ))
        .context("binding the sandbox");
        let coded = anyhow::Error::new(Coded {
            code: Code::Remote,
            error: err,
        })
        .context("webhook listen");
        assert_eq!(
            format!("{coded:#}"),
            "webhook listen: binding the sandbox: Address already in use"
        );
        assert_eq!(code_for(&coded), Code::Remote);
    }
}
