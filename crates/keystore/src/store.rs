//! The keystore directory: listing, finding, and atomic, checked, never-overwriting
//! writes under a lock file.

use bridgectl_local::PathError;
use bridgectl_secret::{ExposeSecret, ExposeSecretMut};
use std::fs::{self, File};
use std::path::{Path, PathBuf};

use alloy_primitives::Address;
use alloy_signer_local::PrivateKeySigner;

use crate::files::{TEMP_PREFIX, check_mode, read_small, write_temp};
use crate::format::{self, Meta, ParsedV1};
use crate::kdf::KdfParams;
use crate::key_info::{KdfSummary, KeyInfo, parse_address_selector};
use crate::secret::{Passphrase, PassphraseProvider, PassphraseRequest, Purpose, SecretText};
use crate::secret_storage::{self, Web3Params};
use crate::{Error, signer_from_secret};

/// Extension of key files in the keystore directory.
pub const KEY_EXTENSION: &str = "key";
const LOCK_FILE: &str = ".lock";
/// BIP-44 path of the first Ethereum account, used when none is given.
pub const DEFAULT_DERIVATION_PATH: &str = "m/44'/60'/0'/0/0";

/// A selector as errors may quote it: one that could be a private key or a mnemonic
/// (`key show 0x<private key>` by mistake) is never echoed back.
fn shown_selector(selector: &str) -> String {
    if format::may_be_secret(selector) {
        format!("<redacted: {} characters>", selector.chars().count())
    } else {
        selector.to_owned()
    }
}

fn info_of(path: &Path, parsed: &ParsedV1) -> KeyInfo {
    KeyInfo {
        address: parsed.meta.address,
        label: parsed.meta.label.clone(),
        id: parsed.meta.id,
        created_at: parsed.meta.created_at.clone(),
        path: path.to_owned(),
        version: parsed.file.version,
        kdf: KdfSummary {
            algorithm: "argon2id".into(),
            m_kib: parsed.kdf.m_kib(),
            t: parsed.kdf.t(),
            p: parsed.kdf.p(),
        },
    }
}

/// A key file of any supported kind, parsed and checked, not yet decrypted.
pub(crate) enum AnyFile {
    /// Our own format.
    V1(Box<ParsedV1>),
    /// Web3 Secret Storage v3.
    Web3(Box<secret_storage::ParsedWeb3>),
}

/// Tells the formats apart and parses: every check, including the KDF cap, runs here.
pub(crate) fn parse_any(path: &Path, bytes: &[u8]) -> Result<AnyFile, Error> {
    // Strict: a key file with a field twice (two `ciphertext`s, two `address`es) is not
    // one file but two claims; refused like any other malformed file.
    let value: serde_json::Value =
        bridgectl_json::from_slice(bytes).map_err(|source| Error::Json {
            path: path.to_owned(),
            source,
        })?;
    let obj = value
        .as_object()
        .ok_or_else(|| Error::malformed(path, "not a JSON object"))?;
    if obj.contains_key("format") {
        if obj.get("format").and_then(|f| f.as_str()) == Some(format::FORMAT_NAME) {
            let version = obj.get("version").and_then(|v| v.as_u64());
            if version.is_none_or(|v| !format::READABLE_VERSIONS.iter().any(|&r| u64::from(r) == v))
            {
                return Err(Error::UnsupportedVersion {
                    path: path.to_owned(),
                    found: obj.get("version").map_or("none".into(), |v| v.to_string()),
                    supported: format!("{:?}", format::READABLE_VERSIONS),
                });
            }
        }
        return format::parse(path, value).map(|p| AnyFile::V1(Box::new(p)));
    }
    if obj.contains_key("crypto") || obj.contains_key("Crypto") {
        return secret_storage::parse(path, value).map(|p| AnyFile::Web3(Box::new(p)));
    }
    Err(Error::malformed(
        path,
        "neither a bridgectl key file (no `format`) nor Web3 Secret Storage (no `crypto`)",
    ))
}

/// Reads, checks and decrypts one file of either kind, outside any keystore (no
/// permission check: fixtures and files handed over for import). The request carries
/// the key's metadata for our own files, [`Purpose::ImportFile`] for Web3 files.
pub fn unlock_file(
    path: &Path,
    passphrases: &mut dyn PassphraseProvider,
) -> Result<PrivateKeySigner, Error> {
    let bytes = read_small(path, false)?;
    match parse_any(path, &bytes)? {
        AnyFile::V1(parsed) => {
            let info = info_of(path, &parsed);
            let pass = passphrases.passphrase(&PassphraseRequest {
                purpose: Purpose::Unlock,
                key: Some(&info),
            })?;
            parsed.decrypt(path, &pass)
        }
        AnyFile::Web3(parsed) => {
            let pass = passphrases.passphrase(&PassphraseRequest {
                purpose: Purpose::ImportFile,
                key: None,
            })?;
            parsed.decrypt(path, &pass)
        }
    }
}

/// A directory of key files, one per key, named `<label>.key`. A handle: cloning it is
/// cheap (a path), and every operation reads the directory afresh.
#[derive(Debug, Clone)]
pub struct Keystore {
    dir: PathBuf,
}

/// Holds the keystore's lock file locked; dropping it unlocks.
struct LockGuard(File);

impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

impl Keystore {
    /// Opens the keystore in `dir`, creating it with mode 0700 if missing. A directory
    /// accessible by group or others is refused, with the chmod that fixes it.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Keystore, Error> {
        let dir = dir.into();
        match fs::symlink_metadata(&dir) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                bridgectl_local::files::create_private_dir(&dir)
                    .map_err(PathError::on("cannot create the keystore directory", &dir))?;
            }
            Err(e) => return Err(PathError::on("cannot read", &dir)(e).into()),
        }
        // Follow a symlinked keystore dir (a user's choice), but check what it points to.
        let meta = fs::metadata(&dir).map_err(PathError::on("cannot read", &dir))?;
        if !meta.is_dir() {
            return Err(PathError {
                action: "keystore is not a directory:",
                path: dir,
                source: std::io::Error::from(std::io::ErrorKind::NotADirectory),
            }
            .into());
        }
        check_mode(&dir, &meta, 0o700)?;
        Ok(Keystore { dir })
    }

    /// The keystore directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The keys whose signatures are this keystore's own: its key files' addresses
    /// (files that do not parse are skipped: they cannot sign) and its external signers
    /// ([`Keystore::external_signers`]). The signing log beside the keys
    /// (`bridgectl_signing_log::SigningLogDb::open_in`) refuses an entry signed by any
    /// other key until a person acknowledges it.
    pub fn signers(&self) -> Result<Vec<Address>, Error> {
        let mut known = self.addresses()?;
        known.extend(self.external_signers()?);
        Ok(known)
    }

    /// [`Keystore::signers`] for keys already listed ([`Keystore::list`]): a command that
    /// lists the keys to find one reads each key file once, not once per question.
    pub fn signers_among(&self, keys: &[KeyInfo]) -> Result<Vec<Address>, Error> {
        let mut known: Vec<Address> = keys.iter().map(|k| k.address).collect();
        known.extend(self.external_signers()?);
        Ok(known)
    }

    /// The accounts that sign through a signer outside this keystore (a hardware wallet
    /// behind a JSON-RPC endpoint) and record their signatures in its signing log:
    /// their entries are this keystore's own, not a stranger's. Kept in
    /// [`EXTERNAL_SIGNERS_FILE`] (0600).
    pub fn external_signers(&self) -> Result<Vec<Address>, Error> {
        let path = self.dir.join(EXTERNAL_SIGNERS_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                PathError::on("cannot read", &path)(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    e,
                ))
                .into()
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(PathError::on("cannot read", &path)(e).into()),
        }
    }

    /// Records `address` as an account that signs through an external signer into this
    /// keystore's signing log (see [`Keystore::external_signers`]); written atomically.
    pub fn add_external_signer(&self, address: Address) -> Result<(), Error> {
        let mut known = self.external_signers()?;
        if known.contains(&address) {
            return Ok(());
        }
        known.push(address);
        let path = self.dir.join(EXTERNAL_SIGNERS_FILE);
        let text = serde_json::to_vec_pretty(&known).unwrap_or_default();
        bridgectl_local::files::write_replace_synced(&path, &text).map_err(Error::from)
    }

    /// The addresses of the keys in the directory (files that do not parse are skipped:
    /// they cannot sign).
    fn addresses(&self) -> Result<Vec<Address>, Error> {
        Ok(self
            .key_paths()?
            .iter()
            .filter_map(|p| self.read_key(p).ok().map(|(info, _, _)| info.address))
            .collect())
    }

    fn key_paths(&self) -> Result<Vec<PathBuf>, Error> {
        let mut paths = Vec::new();
        for entry in fs::read_dir(&self.dir).map_err(PathError::on("cannot list", &self.dir))? {
            let entry = entry.map_err(PathError::on("cannot list", &self.dir))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            // Temp files and the lock file start with '.', so they are never keys.
            if name.starts_with('.') {
                continue;
            }
            if Path::new(name).extension().and_then(|e| e.to_str()) == Some(KEY_EXTENSION) {
                paths.push(entry.path());
            }
        }
        paths.sort();
        Ok(paths)
    }

    fn read_key(&self, path: &Path) -> Result<(KeyInfo, ParsedV1, Vec<u8>), Error> {
        let bytes = read_small(path, true)?;
        match parse_any(path, &bytes)? {
            AnyFile::V1(parsed) => Ok((info_of(path, &parsed), *parsed, bytes)),
            AnyFile::Web3(_) => Err(Error::malformed(
                path,
                "a Web3 Secret Storage file in the keystore directory; use `key import` instead",
            )),
        }
    }

    /// All keys, sorted by file name. Needs no passphrase: only plaintext metadata is
    /// read. A file that fails its checks fails the listing, naming the file.
    pub fn list(&self) -> Result<Vec<KeyInfo>, Error> {
        self.key_paths()?
            .iter()
            .map(|p| self.read_key(p).map(|(info, _, _)| info))
            .collect()
    }

    /// The one key matching `selector`: an address (any case, with or without `0x`),
    /// a label, or an id.
    pub fn find(&self, selector: &str) -> Result<KeyInfo, Error> {
        self.find_in(&self.list()?, selector)
    }

    /// [`Keystore::find`] among keys already listed ([`Keystore::list`]).
    pub fn find_in(&self, keys: &[KeyInfo], selector: &str) -> Result<KeyInfo, Error> {
        let address = parse_address_selector(selector);
        let id = uuid::Uuid::parse_str(selector).ok();
        let mut found: Vec<KeyInfo> = keys
            .iter()
            .filter(|k| Some(k.address) == address || k.label == selector || Some(k.id) == id)
            .cloned()
            .collect();
        match found.len() {
            0 => Err(Error::NotFound {
                selector: shown_selector(selector),
                dir: self.dir.clone(),
            }),
            1 => Ok(found.remove(0)),
            _ => Err(Error::Ambiguous {
                selector: shown_selector(selector),
                matches: found
                    .iter()
                    .map(|k| format!("{} {}", k.label, k.address.to_checksum(None)))
                    .collect(),
            }),
        }
    }

    fn load(&self, selector: &str) -> Result<(KeyInfo, ParsedV1, Vec<u8>), Error> {
        let info = self.find(selector)?;
        self.read_key(&info.path)
    }

    /// Decrypts a key. The passphrase is asked for only after every check on the file
    /// (including the KDF cap) has passed.
    pub fn unlock(
        &self,
        selector: &str,
        passphrases: &mut dyn PassphraseProvider,
    ) -> Result<PrivateKeySigner, Error> {
        let (info, parsed, _) = self.load(selector)?;
        Self::decrypt_asking(&info, &parsed, passphrases)
    }

    /// Decrypts the key `info` names (found without a passphrase, by [`Keystore::find`]
    /// or [`Keystore::find_in`]): its file is read again, and refused if it is no longer
    /// that key (same address and id); the directory is not listed again.
    pub fn unlock_key(
        &self,
        info: &KeyInfo,
        passphrases: &mut dyn PassphraseProvider,
    ) -> Result<PrivateKeySigner, Error> {
        let (now, parsed, _) = self.read_key(&info.path)?;
        if now.address != info.address || now.id != info.id {
            return Err(Error::malformed(
                &info.path,
                format!(
                    "no longer key {} ({}): the file changed since it was found",
                    info.id, info.address
                ),
            ));
        }
        Self::decrypt_asking(&now, &parsed, passphrases)
    }

    fn decrypt_asking(
        info: &KeyInfo,
        parsed: &ParsedV1,
        passphrases: &mut dyn PassphraseProvider,
    ) -> Result<PrivateKeySigner, Error> {
        let pass = passphrases.passphrase(&PassphraseRequest {
            purpose: Purpose::Unlock,
            key: Some(info),
        })?;
        parsed.decrypt(&info.path, &pass)
    }

    /// [`Keystore::unlock`] with `passphrase`, on a thread of its own: the key
    /// derivation (Argon2id or scrypt at full cost takes most of a second) never runs on
    /// the caller's async runtime, so a wallet's current-thread runtime keeps serving
    /// while a key is unlocked.
    pub async fn unlock_async(
        &self,
        selector: &str,
        mut passphrase: Passphrase,
    ) -> Result<PrivateKeySigner, Error> {
        let (tx, rx) = futures_channel::oneshot::channel();
        let store = self.clone();
        let selector = selector.to_owned();
        std::thread::Builder::new()
            .name("bridgectl-unlock".into())
            .spawn(move || {
                let _ = tx.send(store.unlock(&selector, &mut passphrase));
            })
            .map_err(PathError::on(
                "cannot start the unlock thread for",
                &self.dir,
            ))?;
        rx.await.map_err(|_| {
            PathError::on("the unlock thread ended without an answer for", &self.dir)(
                std::io::Error::other("unlock thread"),
            )
        })?
    }

    /// Unlocks the key to prove the passphrase and the file are good; returns its
    /// metadata.
    pub fn verify(
        &self,
        selector: &str,
        passphrases: &mut dyn PassphraseProvider,
    ) -> Result<KeyInfo, Error> {
        let (info, parsed, _) = self.load(selector)?;
        let pass = passphrases.passphrase(&PassphraseRequest {
            purpose: Purpose::Unlock,
            key: Some(&info),
        })?;
        parsed.decrypt(&info.path, &pass)?;
        Ok(info)
    }

    /// Creates a new random key. `label` defaults to `key-<first 8 hex digits>`.
    pub fn create(
        &self,
        label: Option<&str>,
        passphrases: &mut dyn PassphraseProvider,
        kdf: &KdfParams,
    ) -> Result<KeyInfo, Error> {
        let mut secret = crate::secret::SecretBytes::default();
        // A random 256-bit string is a valid scalar except with probability ~2^-128.
        let signer = loop {
            format::random(secret.expose_secret_mut())?;
            if let Ok(s) = signer_from_secret(Path::new("<random>"), secret.expose_secret()) {
                break s;
            }
        };
        self.import_signer(&signer, label, passphrases, kdf)
    }

    /// Imports a raw private key given as 64 hex digits (an optional `0x` and
    /// surrounding whitespace are ignored).
    pub fn import_raw(
        &self,
        key_hex: &SecretText,
        label: Option<&str>,
        passphrases: &mut dyn PassphraseProvider,
        kdf: &KdfParams,
    ) -> Result<KeyInfo, Error> {
        let text = key_hex.expose_secret().trim();
        let hex = text.strip_prefix("0x").unwrap_or(text);
        if hex.len() != 64 {
            return Err(Error::InvalidKey {
                reason: format!("expected 64 hex digits, found {} characters", hex.len()),
            });
        }
        let mut secret = crate::secret::SecretBytes::default();
        hex::decode_to_slice(hex, secret.expose_secret_mut()).map_err(|_| Error::InvalidKey {
            reason: "not hexadecimal".into(),
        })?;
        let signer = PrivateKeySigner::from_slice(secret.expose_secret()).map_err(|_| {
            Error::InvalidKey {
                reason: "zero or not below the secp256k1 group order".into(),
            }
        })?;
        self.import_signer(&signer, label, passphrases, kdf)
    }

    /// Imports a Web3 Secret Storage v3 file (geth, cast, ethers v6, eth-account). Its
    /// passphrase is asked with [`Purpose::ImportFile`], the new one with
    /// [`Purpose::Create`].
    pub fn import_web3_file(
        &self,
        path: &Path,
        label: Option<&str>,
        passphrases: &mut dyn PassphraseProvider,
        kdf: &KdfParams,
    ) -> Result<KeyInfo, Error> {
        let bytes = read_small(path, false)?;
        let parsed = match parse_any(path, &bytes)? {
            AnyFile::Web3(p) => p,
            AnyFile::V1(_) => {
                return Err(Error::malformed(
                    path,
                    "this is already a bridgectl key file: copy it into the keystore directory instead",
                ));
            }
        };
        let pass = passphrases.passphrase(&PassphraseRequest {
            purpose: Purpose::ImportFile,
            key: None,
        })?;
        let signer = parsed.decrypt(path, &pass)?;
        self.import_signer(&signer, label, passphrases, kdf)
    }

    /// Imports the key a BIP-39 (English) mnemonic derives at `derivation_path`
    /// (default [`DEFAULT_DERIVATION_PATH`]).
    pub fn import_mnemonic(
        &self,
        phrase: &SecretText,
        derivation_path: Option<&str>,
        label: Option<&str>,
        passphrases: &mut dyn PassphraseProvider,
        kdf: &KdfParams,
    ) -> Result<KeyInfo, Error> {
        let signer = signer_from_mnemonic(phrase, derivation_path)?;
        self.import_signer(&signer, label, passphrases, kdf)
    }

    /// Stores an existing signer's key under a new passphrase ([`Purpose::Create`]).
    pub fn import_signer(
        &self,
        signer: &PrivateKeySigner,
        label: Option<&str>,
        passphrases: &mut dyn PassphraseProvider,
        kdf: &KdfParams,
    ) -> Result<KeyInfo, Error> {
        let address = signer.address();
        let label = match label {
            Some(l) => l.to_owned(),
            None => format!("key-{}", &hex::encode(address)[..8]),
        };
        format::check_label(&label)?;
        let created_at = time::OffsetDateTime::now_utc()
            .replace_nanosecond(0)
            .ok()
            .and_then(|t| {
                t.format(&time::format_description::well_known::Rfc3339)
                    .ok()
            })
            .unwrap_or_else(|| "1970-01-01T00:00:00Z".into());
        let meta = Meta {
            address,
            label,
            id: uuid::Uuid::new_v4(),
            created_at,
        };
        let path = self.dir.join(format!("{}.{KEY_EXTENSION}", meta.label));
        // Refuse duplicates before asking for a passphrase; checked again under the lock.
        self.check_unique(&meta, &path)?;
        let preview = KeyInfo {
            address,
            label: meta.label.clone(),
            id: meta.id,
            created_at: meta.created_at.clone(),
            path: path.clone(),
            version: format::CURRENT_VERSION,
            kdf: KdfSummary {
                algorithm: "argon2id".into(),
                m_kib: kdf.m_kib(),
                t: kdf.t(),
                p: kdf.p(),
            },
        };
        let pass = passphrases.passphrase(&PassphraseRequest {
            purpose: Purpose::Create,
            key: Some(&preview),
        })?;
        let bytes = format::encrypt(&meta, signer, &pass, kdf)?;

        let _lock = self.lock()?;
        self.check_unique(&meta, &path)?;
        let tmp = self.write_checked_temp(&bytes, &pass, address)?;
        bridgectl_local::failpoint::hit("key-temp-written");
        // Never overwrite: link() fails if the name exists, then the temp name goes.
        if let Err(e) = fs::hard_link(&tmp, &path) {
            let _ = fs::remove_file(&tmp);
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                return Err(Error::AlreadyExists {
                    what: format!("labelled '{}'", meta.label),
                    path,
                });
            }
            return Err(PathError::on("cannot create", &path)(e).into());
        }
        bridgectl_local::failpoint::hit("key-linked-temp-left");
        fs::remove_file(&tmp).map_err(PathError::on("cannot remove", &tmp))?;
        bridgectl_local::failpoint::hit("key-not-dir-synced");
        self.sync_dir()?;
        Ok(preview)
    }

    fn check_unique(&self, meta: &Meta, path: &Path) -> Result<(), Error> {
        for k in self.list()? {
            if k.address == meta.address {
                return Err(Error::AlreadyExists {
                    what: format!("with address {}", meta.address.to_checksum(None)),
                    path: k.path,
                });
            }
            if k.label == meta.label {
                return Err(Error::AlreadyExists {
                    what: format!("labelled '{}'", meta.label),
                    path: k.path,
                });
            }
        }
        if fs::symlink_metadata(path).is_ok() {
            return Err(Error::AlreadyExists {
                what: format!("labelled '{}'", meta.label),
                path: path.to_owned(),
            });
        }
        Ok(())
    }

    /// Writes the key's Web3 v3 export (see [`Web3Params`]). The key's passphrase is
    /// asked with [`Purpose::Unlock`], the export file's with [`Purpose::ExportFile`].
    pub fn export_web3(
        &self,
        selector: &str,
        passphrases: &mut dyn PassphraseProvider,
        params: &Web3Params,
    ) -> Result<(KeyInfo, String), Error> {
        let (info, parsed, _) = self.load(selector)?;
        let pass = passphrases.passphrase(&PassphraseRequest {
            purpose: Purpose::Unlock,
            key: Some(&info),
        })?;
        let signer = parsed.decrypt(&info.path, &pass)?;
        let export_pass = passphrases.passphrase(&PassphraseRequest {
            purpose: Purpose::ExportFile,
            key: Some(&info),
        })?;
        let json = secret_storage::encrypt(&signer, &export_pass, params)?;
        Ok((info, json))
    }

    /// Re-encrypts a key under a new passphrase (and `kdf`), replacing its file
    /// atomically: at every moment the file on disk opens with the old or the new
    /// passphrase. Label, id and created-at are kept.
    pub fn change_passphrase(
        &self,
        selector: &str,
        passphrases: &mut dyn PassphraseProvider,
        kdf: &KdfParams,
    ) -> Result<KeyInfo, Error> {
        let (mut info, parsed, bytes) = self.load(selector)?;
        let old = passphrases.passphrase(&PassphraseRequest {
            purpose: Purpose::Unlock,
            key: Some(&info),
        })?;
        let signer = parsed.decrypt(&info.path, &old)?;
        let new = passphrases.passphrase(&PassphraseRequest {
            purpose: Purpose::Create,
            key: Some(&info),
        })?;
        let new_bytes = format::encrypt(&parsed.meta, &signer, &new, kdf)?;

        let _lock = self.lock()?;
        if read_small(&info.path, true)? != bytes {
            return Err(Error::malformed(
                &info.path,
                "the file changed while the passphrase was being changed; nothing was written, try again",
            ));
        }
        let tmp = self.write_checked_temp(&new_bytes, &new, info.address)?;
        bridgectl_local::failpoint::hit("key-temp-written");
        if let Err(e) = fs::rename(&tmp, &info.path) {
            let _ = fs::remove_file(&tmp);
            return Err(PathError::on("cannot replace", &info.path)(e).into());
        }
        bridgectl_local::failpoint::hit("key-not-dir-synced");
        self.sync_dir()?;
        info.kdf = KdfSummary {
            algorithm: "argon2id".into(),
            m_kib: kdf.m_kib(),
            t: kdf.t(),
            p: kdf.p(),
        };
        Ok(info)
    }

    /// Deletes a key file. The CLI asks for confirmation; the library does not.
    pub fn remove(&self, selector: &str) -> Result<KeyInfo, Error> {
        let _lock = self.lock()?;
        let info = self.find(selector)?;
        fs::remove_file(&info.path).map_err(PathError::on("cannot remove", &info.path))?;
        self.sync_dir()?;
        Ok(info)
    }

    fn lock(&self) -> Result<LockGuard, Error> {
        let path = self.dir.join(LOCK_FILE);
        let file = bridgectl_local::files::open_lock_file(&path)
            .map_err(PathError::on("cannot open the lock file", &path))?;
        file.lock().map_err(PathError::on("cannot lock", &path))?;
        let guard = LockGuard(file);
        // Under the lock no other writer is running, so any temp file is a leftover of
        // a crash: remove it.
        if let Ok(entries) = fs::read_dir(&self.dir) {
            for entry in entries.flatten() {
                if entry
                    .file_name()
                    .to_str()
                    .is_some_and(|n| n.starts_with(TEMP_PREFIX))
                {
                    let _ = fs::remove_file(entry.path());
                }
            }
        }
        Ok(guard)
    }

    /// Writes `bytes` to a new temp file in the keystore (0600, exclusive), fsyncs it,
    /// reads it back and decrypts it with `pass`; returns the temp path.
    fn write_checked_temp(
        &self,
        bytes: &[u8],
        pass: &Passphrase,
        address: Address,
    ) -> Result<PathBuf, Error> {
        let tmp = write_temp(&self.dir, bytes, true)?;
        let check = || -> Result<(), Error> {
            let back = read_small(&tmp, true)?;
            if back != bytes {
                return Err(Error::malformed(
                    &tmp,
                    "read back differs from what was written",
                ));
            }
            let AnyFile::V1(parsed) = parse_any(&tmp, &back)? else {
                return Err(Error::malformed(&tmp, "not a v1 key file"));
            };
            let signer = parsed.decrypt(&tmp, pass)?;
            if signer.address() != address {
                return Err(Error::malformed(&tmp, "decrypts to another address"));
            }
            Ok(())
        };
        if let Err(e) = check() {
            let _ = fs::remove_file(&tmp);
            return Err(Error::WriteCheck {
                path: tmp,
                reason: e.to_string(),
            });
        }
        Ok(tmp)
    }

    fn sync_dir(&self) -> Result<(), Error> {
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(PathError::on("cannot sync", &self.dir))?;
        Ok(())
    }
}

/// The file in a keystore directory that lists the accounts signing through external
/// signers ([`Keystore::external_signers`]).
pub const EXTERNAL_SIGNERS_FILE: &str = "external-signers.json";

/// Derives the signer of a BIP-39 (English) mnemonic at `derivation_path`.
/// Errors never quote the phrase.
pub fn signer_from_mnemonic(
    phrase: &SecretText,
    derivation_path: Option<&str>,
) -> Result<PrivateKeySigner, Error> {
    use alloy_signer_local::{MnemonicBuilder, coins_bip39::English};
    let path = derivation_path.unwrap_or(DEFAULT_DERIVATION_PATH);
    let words = phrase.expose_secret().split_whitespace().count();
    if ![12, 15, 18, 21, 24].contains(&words) {
        return Err(Error::Mnemonic {
            reason: format!("expected 12, 15, 18, 21 or 24 words, found {words}"),
        });
    }
    let normalized = zeroize::Zeroizing::new(
        phrase
            .expose_secret()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    );
    let builder = MnemonicBuilder::<English>::default()
        .phrase(normalized.as_str())
        .derivation_path(path)
        .map_err(|_| Error::Mnemonic {
            reason: format!("invalid derivation path '{path}'"),
        })?;
    builder.build().map_err(|_| Error::Mnemonic {
        reason: "not a valid English BIP-39 phrase (unknown word or bad checksum)".into(),
    })
}
