//! Every default location, decided here once. Libraries take paths as parameters; only
//! the CLI knows about XDG directories.

use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow};

/// `$XDG_STATE_HOME/bridgectl` (or the data dir where a system has no state dir): the
/// journal, cached tokens, webhook keys and events.
pub fn state_dir() -> Result<PathBuf> {
    dirs::state_dir()
        .or_else(dirs::data_dir)
        .map(|d| d.join("bridgectl"))
        .ok_or_else(|| anyhow!("no state directory: set XDG_STATE_HOME or HOME, or give the path"))
}

/// The journal: `explicit`, else `<state dir>/journal.sqlite3`.
pub fn journal(explicit: Option<&Path>) -> Result<PathBuf> {
    match explicit {
        Some(p) => Ok(p.to_path_buf()),
        None => Ok(state_dir()?.join("journal.sqlite3")),
    }
}

/// The keystore: `explicit`, else `$XDG_DATA_HOME/bridgectl/keystore`.
pub fn keystore(explicit: Option<&Path>) -> Result<PathBuf> {
    match explicit {
        Some(p) => Ok(p.to_path_buf()),
        None => dirs::data_dir()
            .map(|d| d.join("bridgectl").join("keystore"))
            .ok_or_else(|| anyhow!("no data directory: set XDG_DATA_HOME or HOME, or --keystore")),
    }
}

/// The config file: `$XDG_CONFIG_HOME/bridgectl/config.toml`.
pub fn config_file() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("bridgectl").join("config.toml"))
}

/// Where the token exchanged for an access key is cached (0600), by a digest of the
/// platform URL and the access key.
pub fn token_cache(base_url: &str, access_key: &str) -> Option<PathBuf> {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("{base_url}\n{access_key}").as_bytes());
    state_dir().ok().map(|d| {
        d.join("tokens")
            .join(format!("{}.json", hex::encode(&digest[..8])))
    })
}

/// A file of the state dir, unless `explicit` names one.
pub fn state_file(explicit: Option<&Path>, name: &str) -> Result<PathBuf> {
    match explicit {
        Some(p) => Ok(p.to_path_buf()),
        None => Ok(state_dir()?.join(name)),
    }
}

/// The signing-key file: `explicit`, or the state directory's.
pub fn webhook_keys(explicit: &Option<PathBuf>) -> anyhow::Result<PathBuf> {
    state_file(explicit.as_deref(), "webhook-keys.json")
}

/// The event store: `explicit`, or the SQLite file in the state directory.
pub fn webhook_store(
    explicit: &Option<String>,
) -> anyhow::Result<bridgectl_webhook::store::StoreSpec> {
    match explicit {
        Some(text) => Ok(bridgectl_webhook::store::StoreSpec::parse(text)),
        None => Ok(bridgectl_webhook::store::StoreSpec::Sqlite(state_file(
            None,
            "webhook-events.sqlite",
        )?)),
    }
}
