//! The local file of webhook signing keys.
//!
//! `create` returns a `signingKey` once; the listener needs it to verify `x-signature`. It
//! is kept in a JSON file, mode 0600 in a 0700 directory, written atomically (temp file,
//! fsync, rename, fsync of the directory) under an exclusive lock so two `create`s cannot
//! lose each other's key. The CLI's default location is
//! `$XDG_STATE_HOME/bridgectl/webhook-keys.json`. A file readable by group or others is
//! refused rather than trusted.
//!
//! Format: `{"version": 1, "keys": {"<subscriptionId>": {"signingKey": "...", "chain": "...",
//! "network": "...", "webhookUrl": "...", "createdAt": "..."}}}`.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bridgectl_secret::Secret;
use serde::{Deserialize, Serialize};
use zeroize::{Zeroize, Zeroizing};

use super::Error;

/// A webhook's signing key. Never printed: `Debug` shows only that it is there.
#[derive(Clone)]
pub struct SigningKey(Arc<Secret>);

impl SigningKey {
    /// Wraps a key received from the web3 API.
    pub fn new(key: Secret) -> Self {
        SigningKey(Arc::new(key))
    }

    /// The key text; every read of the secret goes through here.
    pub fn expose_secret(&self) -> &str {
        self.0.expose_secret()
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningKey(..)")
    }
}

/// What the file keeps for one webhook.
#[derive(Clone, Debug)]
pub struct KeyEntry {
    /// The HMAC key.
    pub signing_key: SigningKey,
    /// The chain segment the webhook was created on.
    pub chain: String,
    /// The network segment.
    pub network: String,
    /// The listener URL it was created with, if known.
    pub webhook_url: Option<String>,
    /// `createdAt` as the API returned it, if known.
    pub created_at: Option<String>,
    /// The event type it was created with: with `condition`, what the self-healing check
    /// needs to re-create it once the platform removed it.
    pub event_type: Option<String>,
    /// The condition object it was created with.
    pub condition: Option<serde_json::Value>,
    /// The description it was created with.
    pub description: Option<String>,
    /// The subscription that replaced this one after the platform removed it: the key is
    /// kept for deliveries still in flight, but the self-healing check skips it.
    pub replaced_by: Option<String>,
}

impl KeyEntry {
    /// An entry with the key and where it lives; the rest unknown.
    pub fn new(signing_key: SigningKey, chain: &str, network: &str) -> KeyEntry {
        KeyEntry {
            signing_key,
            chain: chain.to_owned(),
            network: network.to_owned(),
            webhook_url: None,
            created_at: None,
            event_type: None,
            condition: None,
            description: None,
            replaced_by: None,
        }
    }
}

/// The keys, by subscription id.
#[derive(Clone, Debug, Default)]
pub struct Keys {
    map: HashMap<String, KeyEntry>,
}

impl Keys {
    /// The key of a subscription.
    pub fn get(&self, subscription_id: &str) -> Option<&KeyEntry> {
        self.map.get(subscription_id)
    }

    /// How many keys there are.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Every entry, by subscription id.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &KeyEntry)> {
        self.map.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Adds or replaces a key (in memory only; see [`KeyFile::insert`] for the file).
    pub fn insert(&mut self, subscription_id: String, entry: KeyEntry) {
        self.map.insert(subscription_id, entry);
    }
}

#[derive(Serialize, Deserialize, Default)]
struct DiskFile {
    version: u32,
    keys: BTreeMap<String, DiskEntry>,
}

#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct DiskEntry {
    signing_key: String,
    chain: String,
    network: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    webhook_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    event_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    condition: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replaced_by: Option<String>,
}

impl Drop for DiskEntry {
    fn drop(&mut self) {
        self.signing_key.zeroize();
    }
}

/// The signing-key file at a path.
#[derive(Clone, Debug)]
pub struct KeyFile {
    path: PathBuf,
}

impl KeyFile {
    /// The file at `path` (it need not exist yet).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        KeyFile { path: path.into() }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads all keys. A missing file is an empty set: no webhook was created yet.
    pub fn load(&self) -> Result<Keys, Error> {
        let disk = self.read_disk()?;
        let mut keys = Keys::default();
        for (id, mut entry) in disk.keys {
            keys.insert(
                id,
                KeyEntry {
                    signing_key: SigningKey::new(Secret::new(std::mem::take(
                        &mut entry.signing_key,
                    ))),
                    chain: std::mem::take(&mut entry.chain),
                    network: std::mem::take(&mut entry.network),
                    webhook_url: entry.webhook_url.take(),
                    created_at: entry.created_at.take(),
                    event_type: entry.event_type.take(),
                    condition: entry.condition.take(),
                    description: entry.description.take(),
                    replaced_by: entry.replaced_by.take(),
                },
            );
        }
        Ok(keys)
    }

    /// Adds (or replaces) the key of `subscription_id`, atomically.
    pub fn insert(&self, subscription_id: &str, entry: &KeyEntry) -> Result<(), Error> {
        self.update(|disk| {
            disk.keys.insert(
                subscription_id.to_owned(),
                DiskEntry {
                    signing_key: entry.signing_key.expose_secret().to_owned(),
                    chain: entry.chain.clone(),
                    network: entry.network.clone(),
                    webhook_url: entry.webhook_url.clone(),
                    created_at: entry.created_at.clone(),
                    event_type: entry.event_type.clone(),
                    condition: entry.condition.clone(),
                    description: entry.description.clone(),
                    replaced_by: entry.replaced_by.clone(),
                },
            );
        })
    }

    /// Removes the key of `subscription_id`; returns whether there was one.
    pub fn remove(&self, subscription_id: &str) -> Result<bool, Error> {
        let mut removed = false;
        self.update(|disk| removed = disk.keys.remove(subscription_id).is_some())?;
        Ok(removed)
    }

    fn io(&self, source: std::io::Error) -> Error {
        Error::KeyFile {
            path: self.path.clone(),
            source,
        }
    }

    fn read_disk(&self) -> Result<DiskFile, Error> {
        let mut file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(DiskFile {
                    version: 1,
                    ..DiskFile::default()
                });
            }
            Err(e) => return Err(self.io(e)),
        };
        let mode = file
            .metadata()
            .map_err(|e| self.io(e))?
            .permissions()
            .mode()
            & 0o777;
        if mode & 0o077 != 0 {
            return Err(Error::KeyFileFormat {
                path: self.path.clone(),
                reason: format!(
                    "mode is {mode:o}, expected 600: it holds secrets; fix with chmod 600"
                ),
            });
        }
        let mut text = Zeroizing::new(String::new());
        file.read_to_string(&mut text).map_err(|e| self.io(e))?;
        let disk: DiskFile = serde_json::from_str(&text).map_err(|e| Error::KeyFileFormat {
            path: self.path.clone(),
            reason: format!("not a signing-key file: {e}"),
        })?;
        if disk.version != 1 {
            return Err(Error::KeyFileFormat {
                path: self.path.clone(),
                reason: format!("version {} is not supported (expected 1)", disk.version),
            });
        }
        Ok(disk)
    }

    /// Read-modify-write under an exclusive lock on a sibling `.lock` file.
    fn update(&self, change: impl FnOnce(&mut DiskFile)) -> Result<(), Error> {
        let dir = match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        bridgectl_local::files::create_private_dir(&dir).map_err(|e| self.io(e))?;
        let lock_path = with_suffix(&self.path, ".lock");
        let lock = bridgectl_local::files::open_lock_file(&lock_path).map_err(|e| self.io(e))?;
        lock.lock().map_err(|e| self.io(e))?;

        let mut disk = self.read_disk()?;
        change(&mut disk);
        let mut text = Zeroizing::new(serde_json::to_string_pretty(&disk).map_err(|e| {
            Error::KeyFileFormat {
                path: self.path.clone(),
                reason: format!("could not encode: {e}"),
            }
        })?);
        text.push('\n');
        bridgectl_local::files::write_replace_synced(&self.path, text.as_bytes())
            .map_err(|e| self.io(e.source))
    }
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    fn entry(key: &str) -> KeyEntry {
        KeyEntry {
            webhook_url: Some("http://127.0.0.1:1/h".into()),
            ..KeyEntry::new(SigningKey::new(Secret::new(key)), "ethereum", "sepolia")
        }
    }

    #[test]
    fn insert_load_remove_round_trip_with_mode_600() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = KeyFile::new(dir.path().join("state/keys.json"));
        assert!(file.load().expect("empty").is_empty());
        file.insert("17", &entry("secret-one")).expect("insert");
        file.insert("18", &entry("secret-two")).expect("insert");
        let keys = file.load().expect("load");
        assert_eq!(keys.len(), 2);
        assert_eq!(
            keys.get("17").map(|e| e.signing_key.expose_secret()),
            Some("secret-one")
        );
        let mode = fs::metadata(file.path())
            .expect("meta")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        assert!(file.remove("17").expect("remove"));
        assert!(!file.remove("17").expect("remove again"));
        assert!(file.load().expect("load").get("17").is_none());
    }

    #[test]
    fn refuses_a_world_readable_file_and_hides_keys_in_debug() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("keys.json");
        let file = KeyFile::new(&path);
        file.insert("1", &entry("do-not-print")).expect("insert");
        let dbg = format!("{:?}", file.load().expect("load"));
        assert!(!dbg.contains("do-not-print"), "{dbg}");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod");
        let err = file
            .load()
            .map(|_| ())
            .expect_err("a 0644 key file is refused")
            .to_string();
        assert!(err.contains("644"), "{err}");
    }
}
