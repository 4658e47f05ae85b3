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

/// A sandbox chain as the flows describe it (its node URL included).
fn side(info: &ChainInfo) -> ChainSide {
    ChainSide {
        environment_id: info.environment_id.clone(),
        symbol: info.symbol.clone(),
        decimals: info.decimals,
        token: info.token_address,
        chain_id: info.chain_id,
        rpc_url: Some(info.rpc_url.clone()),
    }
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
    let client = PlatformClient::new(
        &info.base_url,
        AccessToken::new(info.token.expose_secret()),
        ClientOptions::default(),
    )
    .expect("client");
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
