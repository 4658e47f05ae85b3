//! How the command line names an account: an address, or the label or id of a key in
//! the keystore.
//!
//! One resolver for every option and input that names an account (`--from`, `--to`,
//! `log show --key`, `balance`, batch files, action inputs typed `address`), so that a
//! name that works in one place works in all of them. An address need not be a key
//! here (a recipient, a removed key's log entries); a label or id must be.

use alloy_primitives::Address;
use anyhow::{Context, Result};
use bridgectl_keystore::Keystore;
use clap_complete::engine::{ArgValueCompleter, CompletionCandidate};

/// The shell completion of an option that names an account (`--from`, `--to`,
/// `--key`): the labels of the keystore's keys that start with what is typed, each
/// with its address as help. The keystore is the one `BRIDGECTL_KEYSTORE` or the
/// default path names (a completer does not see a `--keystore` typed on the same
/// line); nothing is created, and no key is unlocked.
pub fn key_labels() -> ArgValueCompleter {
    ArgValueCompleter::new(|current: &std::ffi::OsStr| {
        let typed = current.to_string_lossy();
        let explicit = std::env::var_os("BRIDGECTL_KEYSTORE").map(std::path::PathBuf::from);
        let Ok(dir) = crate::paths::keystore(explicit.as_deref()) else {
            return Vec::new();
        };
        if !dir.is_dir() {
            return Vec::new();
        }
        let Ok(keys) = Keystore::open(dir).and_then(|k| k.list()) else {
            return Vec::new();
        };
        keys.into_iter()
            .filter(|k| k.label.starts_with(typed.as_ref()))
            .map(|k| CompletionCandidate::new(k.label).help(Some(k.address.to_string().into())))
            .collect()
    })
}

/// The account `text` names in `keystore`: an address (`0x` + 40 hex digits, EIP-55
/// checked when mixed case), else a key's label or id.
///
/// Text that starts with `0x` is taken as an address and its own fault is named (a
/// wrong checksum, a digit missing): a typo in an address must not turn into "no key
/// with that label".
pub fn resolve(keystore: &Keystore, text: &str) -> Result<Address> {
    match bridgectl_tx::rawtx::parse_address(text) {
        Ok(address) => return Ok(address),
        Err(expected) if text.starts_with("0x") => {
            return Err(crate::exit::coded(
                crate::exit::Code::Usage,
                format!("{text:?}: expected {expected}"),
            ));
        }
        Err(_) => {}
    }
    let info = keystore.find(text).with_context(|| {
        format!("{text:?} is neither an address (0x + 40 hex digits) nor a key in the keystore")
    })?;
    Ok(info.address)
}

/// The values of `inputs` that the function `function` types `address`, each resolved
/// as [`resolve`] does, so that `--input _owner=alice` sends alice's address. Without a
/// known function the types are unknown and the inputs go as typed.
pub fn resolve_inputs(
    keystore: &Keystore,
    function: Option<&str>,
    inputs: &mut std::collections::BTreeMap<String, String>,
) -> Result<()> {
    let Some(f) = function.and_then(bridgectl_tx::calldata::function_by_name) else {
        return Ok(());
    };
    for param in f.params {
        if param.kind != bridgectl_tx::calldata::ParamKind::Address {
            continue;
        }
        if let Some(value) = inputs.get_mut(param.name) {
            let address =
                resolve(keystore, value).with_context(|| format!("--input {}", param.name))?;
            *value = address.to_string();
        }
    }
    Ok(())
}
