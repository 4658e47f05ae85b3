//! Exit codes, documented in the README and stable across releases.
//!
//! Scripts branch on these, so a new failure kind gets a new code rather than
//! changing the meaning of an old one.

/// What a non-zero exit means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Code {
    /// Anything not listed below.
    Failure = 1,
    /// Bad usage: unknown flag, missing argument (clap uses 2 as well).
    #[allow(dead_code)]
    Usage = 2,
    /// The input was refused: malformed transaction, failed policy or intent check,
    /// tampered or hostile key file. Nothing was signed.
    Refused = 3,
    /// The passphrase was wrong or could not be obtained.
    Passphrase = 4,
    /// The user declined at the confirmation prompt, or no TTY was there to ask.
    Declined = 5,
    /// A key, file or record that was asked for does not exist.
    NotFound = 6,
    /// The platform or a node answered with an error, or could not be reached.
    Remote = 7,
    /// Gave up waiting for a result; the flow is journaled and `resume` continues it.
    Timeout = 8,
}

/// Marks an error with the exit code it must produce.
///
/// Commands wrap a library error in this when its meaning for the exit code is clear
/// at the call site; everything else falls back to [`Code::Failure`].
/// Its message is the wrapped error's whole chain, and it reports no source of its
/// own, so the chain is printed once.
#[derive(Debug, thiserror::Error)]
#[error("{}", one_line(error))]
pub struct Coded {
    /// The exit code.
    pub code: Code,
    /// The error itself.
    pub error: anyhow::Error,
}

/// The error and its causes on one line, each cause once: what `main` prints. anyhow's
/// `{:#}` would repeat a source that a library error also names in its own message.
pub fn one_line(err: &anyhow::Error) -> String {
    bridgectl_flow::error::one_line(err.as_ref())
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
    for cause in err.chain() {
        if let Some(coded) = cause.downcast_ref::<Coded>() {
            return coded.code;
        }
        if let Some(ks) = cause.downcast_ref::<bridgectl_keystore::Error>() {
            return crate::cmd::key::exit_code_for(ks);
        }
        if let Some(flow) = cause.downcast_ref::<bridgectl_flow::Error>() {
            use bridgectl_flow::Error as F;
            return match flow {
                F::Tx(e) => crate::cmd::sign::exit_code_for(e),
                F::Keystore(e) => crate::cmd::key::exit_code_for(e),
                F::Declined(_) => Code::Declined,
                F::BundleMismatch(_) | F::NonceReserved { .. } | F::JournalCorrupt { .. } => {
                    Code::Refused
                }
                F::NotInJournal(_) => Code::NotFound,
                F::Timeout { .. } => Code::Timeout,
                F::Http { .. } | F::Platform { .. } | F::UnexpectedShape { .. } => Code::Remote,
                F::PlaintextRefused { .. } => Code::Refused,
                _ => Code::Failure,
            };
        }
        if let Some(tx) = cause.downcast_ref::<bridgectl_tx::Error>() {
            return crate::cmd::sign::exit_code_for(tx);
        }
    }
    Code::Failure
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A library error that names its source in its message and also reports it.
    #[derive(Debug, thiserror::Error)]
    #[error("listener on 127.0.0.1:1: {source}")]
    struct Listen {
        #[source]
        source: std::io::Error,
    }

    fn in_use() -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::AddrInUse, "Address already in use")
    }

    #[test]
    fn one_line_names_each_cause_once() {
        let err = anyhow::Error::new(Listen { source: in_use() }).context("webhook listen");
        assert_eq!(
            one_line(&err),
            "webhook listen: listener on 127.0.0.1:1: Address already in use"
        );
        let coded = anyhow::Error::new(Coded {
            code: Code::Remote,
            error: err,
        });
        assert_eq!(
            one_line(&coded),
            "webhook listen: listener on 127.0.0.1:1: Address already in use"
        );
    }

    #[test]
    fn one_line_keeps_causes_that_add_something() {
        let err = anyhow::Error::new(in_use()).context("binding the sandbox");
        assert_eq!(
            one_line(&err),
            "binding the sandbox: Address already in use"
        );
    }
}
