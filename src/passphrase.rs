//! Where the CLI gets passphrases from, in the documented order:
//!
//! 1. `--passphrase-file FILE`
//! 2. `BRIDGECTL_PASSPHRASE_FILE`
//! 3. `BRIDGECTL_PASSPHRASE` (for CI; the value never appears in argv)
//! 4. an interactive hidden prompt on the terminal, with confirmation when creating.
//!
//! With no TTY and none of the above, it fails at once rather than hang. Passphrases
//! are never taken from argv. The keystore library never prompts: it calls back into
//! [`CliPassphrases`] through [`PassphraseProvider`].
//!
//! A command that unlocks several keys (a batch) can name a file per key with
//! `--passphrase-file-for KEY=FILE` ([`KeyPassphrases`]); the keys not named use the
//! order above.

use std::path::{Path, PathBuf};

use bridgectl_keystore::{Passphrase, PassphraseProvider, PassphraseRequest, Purpose};
use zeroize::Zeroizing;

use crate::opts::PassphraseOpts;

/// Environment variable naming a file that holds the passphrase.
pub const ENV_FILE: &str = "BRIDGECTL_PASSPHRASE_FILE";
/// Environment variable holding the passphrase itself (CI only).
pub const ENV_VALUE: &str = "BRIDGECTL_PASSPHRASE";

/// The resolved source of passphrases for one command.
#[derive(Debug, Clone)]
pub enum Source {
    /// First line of a file.
    File(PathBuf),
    /// An environment variable's value, read when needed.
    Env,
    /// The terminal.
    Prompt,
}

impl Source {
    /// Picks the source in the documented order, without reading anything yet: a
    /// command that fails its checks must never touch the passphrase.
    pub fn resolve(opts: &PassphraseOpts) -> Source {
        if let Some(path) = &opts.passphrase_file {
            return Source::File(path.clone());
        }
        if let Some(path) = std::env::var_os(ENV_FILE).filter(|v| !v.is_empty()) {
            return Source::File(PathBuf::from(path));
        }
        if std::env::var_os(ENV_VALUE).is_some() {
            return Source::Env;
        }
        Source::Prompt
    }
}

/// Answers the keystore's passphrase requests from one [`Source`].
#[derive(Debug)]
pub struct CliPassphrases {
    source: Source,
    /// The flag of a second passphrase (`--new-passphrase-file`), named when there is
    /// no source: telling the user to set `--passphrase-file` for it would be wrong.
    second_flag: Option<&'static str>,
    /// Whether the order above (`--passphrase-file` and the environment) was read.
    usual_order: bool,
}

impl CliPassphrases {
    /// A provider reading from the source `opts` resolve to.
    pub fn new(opts: &PassphraseOpts) -> Self {
        Self {
            source: Source::resolve(opts),
            second_flag: None,
            usual_order: true,
        }
    }

    /// A provider for a command's second passphrase (a Web3 file's, a new one): from
    /// `file`, the value of `flag`, else from `usual` resolved in the documented order,
    /// else (`None`: `key passwd`, where the environment would set the old passphrase
    /// again) only from a prompt.
    pub fn second(
        file: Option<&PathBuf>,
        flag: &'static str,
        usual: Option<&PassphraseOpts>,
    ) -> Self {
        let source = match (file, usual) {
            (Some(path), _) => Source::File(path.clone()),
            (None, Some(opts)) => Source::resolve(opts),
            (None, None) => Source::Prompt,
        };
        Self {
            source,
            second_flag: Some(flag),
            usual_order: usual.is_some(),
        }
    }

    /// Fails early, before any expensive work, when the passphrase could only come
    /// from a prompt and there is no terminal to prompt on.
    pub fn ensure_available(&self) -> anyhow::Result<()> {
        if matches!(self.source, Source::Prompt) && crate::review::terminal().is_none() {
            return Err(crate::exit::coded(
                crate::exit::Code::Passphrase,
                self.no_source(),
            ));
        }
        Ok(())
    }

    /// Why there is no passphrase, naming the flags that would give one.
    fn no_source(&self) -> String {
        let usual = format!("--passphrase-file, {ENV_FILE} or {ENV_VALUE}");
        match (self.second_flag, self.usual_order) {
            (None, _) => format!(
                "no passphrase source: there is no terminal to ask on and none of {usual} is set"
            ),
            (Some(flag), true) => format!(
                "no passphrase source: there is no terminal to ask on and none of {flag}, \
                 {usual} is set"
            ),
            (Some(flag), false) => format!(
                "no source for the new passphrase: there is no terminal to ask on and \
                 {flag} is not given (the environment is never read for it: it would set \
                 the current passphrase again)"
            ),
        }
    }
}

/// Passphrases for a command that unlocks several keys (a batch), where the keys may
/// have different passphrases: a file per key (`--passphrase-file-for KEY=FILE`, KEY a
/// label or address), each file read once however many keys it serves, and the
/// command's own source ([`CliPassphrases`]) for every key not named. Only paths come
/// from argv; what a file holds is kept zeroizing until this is dropped, and Debug
/// shows the paths alone.
#[derive(Debug)]
pub struct KeyPassphrases {
    /// The keys named, with their files.
    named: Vec<(alloy_primitives::Address, PathBuf)>,
    /// What each named file held, once read.
    read: Vec<(PathBuf, Passphrase)>,
    /// The source for every other key.
    fallback: CliPassphrases,
}

impl KeyPassphrases {
    /// The sources `opts` and `named` (`KEY=FILE` each) give, with each KEY found in
    /// `store` now: a typo is refused before anything else happens.
    pub fn new(
        opts: &PassphraseOpts,
        named: &[String],
        store: &bridgectl_keystore::Keystore,
    ) -> anyhow::Result<Self> {
        use crate::exit::{Code, WithCode, coded};
        let mut keys: Vec<(alloy_primitives::Address, PathBuf)> = Vec::new();
        for spec in named {
            let (key, path) = spec.split_once('=').ok_or_else(|| {
                coded(
                    Code::Usage,
                    format!(
                        "--passphrase-file-for {spec:?}: expected KEY=FILE (a key's label or \
                         address, and the file that holds its passphrase)"
                    ),
                )
            })?;
            let address = store.find(key).code(Code::NotFound)?.address;
            let path = PathBuf::from(path);
            match keys.iter().find(|(a, _)| *a == address) {
                Some((_, other)) if *other != path => {
                    return Err(coded(
                        Code::Usage,
                        format!(
                            "--passphrase-file-for names two files for {address}: {} and {}",
                            other.display(),
                            path.display()
                        ),
                    ));
                }
                Some(_) => {}
                None => keys.push((address, path)),
            }
        }
        Ok(Self {
            named: keys,
            read: Vec::new(),
            fallback: CliPassphrases::new(opts),
        })
    }

    /// Fails early, like [`CliPassphrases::ensure_available`], when a key of `accounts`
    /// that has no file of its own could only be asked for on a missing terminal.
    pub fn ensure_available(&self, accounts: &[alloy_primitives::Address]) -> anyhow::Result<()> {
        if accounts
            .iter()
            .any(|a| !self.named.iter().any(|(n, _)| n == a))
        {
            self.fallback.ensure_available()?;
        }
        Ok(())
    }

    /// Unlocks the key of `address` in `store`: from its own file (read on first use,
    /// asked once: the same wrong value would only come back), else from the command's
    /// source.
    pub fn unlock(
        &mut self,
        store: &bridgectl_keystore::Keystore,
        address: alloy_primitives::Address,
    ) -> Result<alloy_signer_local::PrivateKeySigner, bridgectl_keystore::Error> {
        let selector = address.to_string();
        let Some((_, path)) = self.named.iter().find(|(a, _)| *a == address) else {
            return self.fallback.unlock(store, &selector);
        };
        let i = match self.read.iter().position(|(p, _)| p == path) {
            Some(i) => i,
            None => {
                self.read.push((path.clone(), read_file(path)?));
                self.read.len() - 1
            }
        };
        store.unlock(&selector, &mut self.read[i].1)
    }
}

/// How many passphrases a person may type at the terminal before an unlock gives up.
pub const PROMPT_ATTEMPTS: usize = 3;

impl CliPassphrases {
    /// Unlocks the key `selector` of `store`. A passphrase typed at the terminal may be
    /// mistyped: up to [`PROMPT_ATTEMPTS`] tries; a file or the environment is asked once
    /// (the same wrong value would only come back).
    pub fn unlock(
        &mut self,
        store: &bridgectl_keystore::Keystore,
        selector: &str,
    ) -> Result<alloy_signer_local::PrivateKeySigner, bridgectl_keystore::Error> {
        self.attempts(|p| store.unlock(selector, p))
    }

    /// [`CliPassphrases::unlock`] of a key found already (`Keystore::unlock_key`).
    pub fn unlock_key(
        &mut self,
        store: &bridgectl_keystore::Keystore,
        key: &bridgectl_keystore::KeyInfo,
    ) -> Result<alloy_signer_local::PrivateKeySigner, bridgectl_keystore::Error> {
        self.attempts(|p| store.unlock_key(key, p))
    }

    fn attempts(
        &mut self,
        mut unlock: impl FnMut(
            &mut Self,
        ) -> Result<
            alloy_signer_local::PrivateKeySigner,
            bridgectl_keystore::Error,
        >,
    ) -> Result<alloy_signer_local::PrivateKeySigner, bridgectl_keystore::Error> {
        let attempts = match self.source {
            Source::Prompt => PROMPT_ATTEMPTS,
            Source::File(_) | Source::Env => 1,
        };
        let mut attempt = 1;
        loop {
            match unlock(self) {
                Err(bridgectl_keystore::Error::WrongPassphrase { .. }) if attempt < attempts => {
                    attempt += 1;
                    crate::output::note(format_args!(
                        "wrong passphrase, try again ({attempt} of {attempts})"
                    ));
                }
                other => return other,
            }
        }
    }
}

fn read_file(path: &Path) -> Result<Passphrase, bridgectl_keystore::Error> {
    // The key files' rule: a passphrase others can read protects nothing.
    bridgectl_keystore::check_private_file(path)?;
    let raw = Zeroizing::new(std::fs::read(path).map_err(|source| {
        bridgectl_keystore::Error::PassphraseUnavailable {
            reason: format!("cannot read passphrase file {}: {source}", path.display()),
        }
    })?);
    let text = std::str::from_utf8(&raw).map_err(|_| {
        bridgectl_keystore::Error::PassphraseUnavailable {
            reason: format!("passphrase file {} is not UTF-8", path.display()),
        }
    })?;
    // The first line, without its line ending: `echo secret > file` must work.
    let first = text.split(['\n', '\r']).next().unwrap_or("");
    Ok(Passphrase::new(first.to_owned()))
}

impl PassphraseProvider for CliPassphrases {
    fn passphrase(
        &mut self,
        request: &PassphraseRequest<'_>,
    ) -> Result<Passphrase, bridgectl_keystore::Error> {
        let passphrase = match &self.source {
            Source::File(path) => read_file(path),
            Source::Env => std::env::var(ENV_VALUE).map(Passphrase::new).map_err(|_| {
                bridgectl_keystore::Error::PassphraseUnavailable {
                    reason: format!("{ENV_VALUE} is not valid UTF-8"),
                }
            }),
            Source::Prompt => prompt(request, || self.no_source()),
        }?;
        // Allowed (a throwaway key may want none), never silently.
        if matches!(request.purpose, Purpose::Create | Purpose::ExportFile)
            && passphrase.expose_secret().is_empty()
        {
            crate::output::note(
                "warning: the passphrase is empty: anyone who copies the key file has the key",
            );
        }
        Ok(passphrase)
    }
}

/// Asks on the terminal; `no_source` says why there is none to ask on.
fn prompt(
    request: &PassphraseRequest<'_>,
    no_source: impl FnOnce() -> String,
) -> Result<Passphrase, bridgectl_keystore::Error> {
    // rpassword asks on /dev/tty whatever stdin is, so piped input and a typed
    // passphrase go together.
    if crate::review::terminal().is_none() {
        return Err(bridgectl_keystore::Error::PassphraseUnavailable {
            reason: no_source(),
        });
    }
    let unavailable = |e: std::io::Error| bridgectl_keystore::Error::PassphraseUnavailable {
        reason: format!("cannot read from the terminal: {e}"),
    };
    let first = Zeroizing::new(
        rpassword::prompt_password(format!("{}: ", request.prompt())).map_err(unavailable)?,
    );
    if matches!(request.purpose, Purpose::Create | Purpose::ExportFile) {
        let again = Zeroizing::new(rpassword::prompt_password("repeat it: ").map_err(unavailable)?);
        if *first != *again {
            return Err(bridgectl_keystore::Error::PassphraseUnavailable {
                reason: "the two passphrases differ".into(),
            });
        }
    }
    Ok(Passphrase::new(first.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_debug_of_key_passphrases_shows_paths_not_passphrases() {
        let sources = KeyPassphrases {
            named: vec![(alloy_primitives::Address::repeat_byte(1), "a.pass".into())],
            read: vec![("a.pass".into(), Passphrase::new("hunter2-secret"))],
            fallback: CliPassphrases::second(None, "--new-passphrase-file", None),
        };
        let shown = format!("{sources:?}");
        assert!(shown.contains("a.pass"), "{shown}");
        assert!(!shown.contains("hunter2"), "{shown}");
    }
}
