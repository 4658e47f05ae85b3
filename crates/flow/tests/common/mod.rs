//! What the sandbox tests of the flows share: a keystore holding the sandbox's funded
//! development key, and the bridge the sandbox describes.

use std::sync::Arc;

use bridgectl_flow::client::{AccessToken, ClientOptions, PlatformClient};
use bridgectl_flow::{
    Address, Bridge, ChainSide, Flows, GasPriceCap, Journal, PegRatio, SwapCredit, WaitOptions,
};
use bridgectl_keystore::{KdfParams, Keystore, Passphrase, SecretText};
use bridgectl_sandbox::{ChainInfo, SandboxInfo};

/// A keystore in `dir/keystore` with the sandbox's development key, labelled `wallet`,
/// under `passphrase` (the test KDF cost).
// Not every test binary that shares this module has the development account's key.
#[allow(dead_code)]
pub fn dev_keystore(dir: &std::path::Path, info: &SandboxInfo, passphrase: &str) -> Keystore {
    keystore_with(dir, info.dev.private_key.expose_secret(), passphrase)
}

/// The signing log beside `keystore`, over its signers (key files and external
/// signers), as the CLI opens it.
#[allow(dead_code)]
pub fn signing_log(keystore: &Keystore) -> bridgectl_signing_log::SigningLogDb {
    bridgectl_signing_log::SigningLogDb::open_in(keystore.dir(), keystore.signers().expect("keys"))
        .expect("log")
}

/// A keystore in `dir/keystore` with key `key_hex`, labelled `wallet`, under `passphrase`
/// (the test KDF cost).
pub fn keystore_with(dir: &std::path::Path, key_hex: &str, passphrase: &str) -> Keystore {
    let keystore = Keystore::open(dir.join("keystore")).expect("keystore");
    keystore
        .import_raw(
            &SecretText::new(key_hex.to_owned()),
            Some("wallet"),
            &mut Passphrase::new(passphrase.to_owned()),
            &KdfParams::insecure_for_tests(),
        )
        .expect("import");
    keystore
}

/// Both sandbox chains, and its redeem action.
pub fn bridge(info: &SandboxInfo) -> Bridge {
    Bridge {
        main: side(&info.main),
        side: side(&info.side),
        redeem_action: "redeem".into(),
        swap_credit: SwapCredit {
            ratio: Some(PegRatio {
                mt: info.ratio.mt,
                st: info.ratio.st,
            }),
            source: Address::ZERO,
        },
    }
}

/// The sandbox as bridgectl's profile file describes it (what `bridgectl sandbox
/// --write-profile` writes: its `sandbox` profile), written to `dir/profile.toml`.
// Not every test binary that shares this module runs an example.
#[allow(dead_code)]
pub fn profile_file(dir: &std::path::Path, info: &SandboxInfo) -> std::path::PathBuf {
    let b = bridge(info);
    let profile = bridgectl_flow::Profile {
        base_url: Some(info.base_url.clone()),
        main_environment_id: Some(b.main.environment_id),
        side_environment_id: Some(b.side.environment_id),
        main_symbol: Some(b.main.symbol),
        side_symbol: Some(b.side.symbol),
        main_decimals: Some(b.main.decimals),
        side_decimals: Some(b.side.decimals),
        mt_contract: Some(b.main.token),
        st_contract: Some(b.side.token),
        main_chain_id: Some(b.main.chain_id),
        side_chain_id: Some(b.side.chain_id),
        main_rpc_url: b.main.rpc_url,
        side_rpc_url: b.side.rpc_url,
        redeem_action: Some(b.redeem_action),
        peg_ratio: b.swap_credit.ratio,
        ..bridgectl_flow::Profile::default()
    };
    let mut file = bridgectl_flow::profile::ConfigFile::default();
    file.profiles.insert("sandbox".into(), profile);
    let path = dir.join("profile.toml");
    std::fs::write(&path, file.to_toml().expect("toml")).expect("write the profile");
    path
}

/// A sandbox chain as the flows describe it (its node URL included).
fn side(info: &ChainInfo) -> ChainSide {
    ChainSide {
        environment_id: info.environment_id.clone(),
        symbol: info.symbol.clone(),
        decimals: info.decimals,
        token: info.token_address,
        chain_id: info.chain_id,
        rpc_url: Some(info.rpc_url.clone()),
        finality: Some(bridgectl_flow::Finality::Confirmations(info.confirmations)),
    }
}

/// A platform client of the sandbox `info`, with its token.
// Not every test binary that shares this module builds flows itself.
#[allow(dead_code)]
pub fn client(info: &SandboxInfo) -> PlatformClient {
    PlatformClient::new(
        &info.base_url,
        AccessToken::new(info.token.expose_secret()),
        ClientOptions::default(),
    )
    .expect("client")
}

/// Flows over the sandbox `info` with a journal in `dir` and the signing log `log`,
/// polling every 200 ms, the gas price capped by the node's quote; and their journal.
// Not every test binary that shares this module builds flows itself.
#[allow(dead_code)]
pub fn flows(
    info: &SandboxInfo,
    dir: &std::path::Path,
    log: Arc<dyn bridgectl_tx::SigningLog>,
) -> (Flows, Arc<Journal>) {
    let client = client(info);
    let journal = Arc::new(Journal::open(dir.join("journal.sqlite3")).expect("journal"));
    let flows = Flows::builder(client, journal.clone(), log)
        .bridge(bridge(info))
        .wait(WaitOptions {
            interval: std::time::Duration::from_millis(200),
            ..WaitOptions::default()
        })
        .gas_price(GasPriceCap::NodeQuote)
        .build();
    (flows, journal)
}
