//! What the sandbox tests of the flows share: a keystore holding the sandbox's funded
//! development key, and the bridge the sandbox describes.

use bridgectl_flow::{Bridge, ChainSide};
use bridgectl_keystore::{KdfParams, Keystore, Passphrase, SecretText};
use bridgectl_sandbox::SandboxInfo;

/// A keystore in `dir/keystore` with the sandbox's development key, labelled `wallet`,
/// under `passphrase` (the test KDF cost).
pub fn dev_keystore(dir: &std::path::Path, info: &SandboxInfo, passphrase: &str) -> Keystore {
    let keystore = Keystore::open(dir.join("keystore")).expect("keystore");
    keystore
        .import_raw(
            &SecretText::new(info.dev.private_key.expose_secret().to_owned()),
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
        main: ChainSide::from(&info.main),
        side: ChainSide::from(&info.side),
        redeem_action: "redeem".into(),
    }
}
