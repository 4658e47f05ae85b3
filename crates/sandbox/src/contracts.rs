//! The compiled contracts (committed artifacts built by `contracts/build.sh`) and the bits
//! of their ABI the sandbox needs.

use std::sync::OnceLock;

use alloy_dyn_abi::DynSolValue;
use alloy_json_abi::JsonAbi;
use alloy_primitives::{B256, Bytes, keccak256};

use serde::Deserialize;

use crate::Error;

/// Which contract an action calls.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
pub enum ContractKind {
    /// The side token (the platform's own case).
    #[serde(rename = "ST")]
    St,
    /// The main-chain ERC-20.
    #[serde(rename = "MT")]
    Mt,
}

/// The ten ST functions of the platform (spec 2.6), in the console's order.
pub const ST_FUNCTIONS: &[&str] = &[
    "allowance",
    "approve",
    "balanceOf",
    "transfer",
    "transferWithFee",
    "redeem",
    "stake",
    "totalSupply",
    "transferFrom",
    "unstake",
];

/// `MainToken.json` as committed.
pub const MAIN_TOKEN_ARTIFACT: &str = include_str!("../contracts/artifacts/MainToken.json");
/// `SideToken.json` as committed.
pub const SIDE_TOKEN_ARTIFACT: &str = include_str!("../contracts/artifacts/SideToken.json");

#[derive(serde::Deserialize)]
struct Artifact {
    abi: JsonAbi,
    bytecode: Bytes,
}

struct Compiled {
    mt: Artifact,
    st: Artifact,
}

fn compiled() -> Result<&'static Compiled, Error> {
    static CELL: OnceLock<Result<Compiled, (&'static str, String)>> = OnceLock::new();
    let parsed = CELL.get_or_init(|| {
        let mt =
            serde_json::from_str(MAIN_TOKEN_ARTIFACT).map_err(|e| ("MainToken", e.to_string()))?;
        let st =
            serde_json::from_str(SIDE_TOKEN_ARTIFACT).map_err(|e| ("SideToken", e.to_string()))?;
        Ok(Compiled { mt, st })
    });
    match parsed {
        Ok(c) => Ok(c),
        Err((name, _)) => {
            // Re-parse to hand back a real serde error as the source.
            let text = if *name == "MainToken" {
                MAIN_TOKEN_ARTIFACT
            } else {
                SIDE_TOKEN_ARTIFACT
            };
            match serde_json::from_str::<Artifact>(text) {
                Err(source) => Err(Error::Artifact { name, source }),
                Ok(_) => Err(Error::Deploy(format!("artifact {name} failed to load"))),
            }
        }
    }
}

/// Checks that both artifacts parse (called once at start so later lookups cannot fail).
pub fn check() -> Result<(), Error> {
    compiled().map(|_| ())
}

static EMPTY: OnceLock<JsonAbi> = OnceLock::new();

/// The ABI of a contract (an empty ABI if the artifacts are broken, which
/// [`check`] reports at start).
pub fn abi(kind: ContractKind) -> &'static JsonAbi {
    match compiled() {
        Ok(c) => match kind {
            ContractKind::Mt => &c.mt.abi,
            ContractKind::St => &c.st.abi,
        },
        Err(_) => EMPTY.get_or_init(JsonAbi::new),
    }
}

/// The creation bytecode of a contract.
pub fn bytecode(kind: ContractKind) -> Result<Bytes, Error> {
    let c = compiled()?;
    Ok(match kind {
        ContractKind::Mt => c.mt.bytecode.clone(),
        ContractKind::St => c.st.bytecode.clone(),
    })
}

/// `Transfer(address,address,uint256)`, shared by both tokens.
pub fn transfer_topic() -> B256 {
    keccak256("Transfer(address,address,uint256)")
}

/// `Redeem(address,uint256)` of the ST contract, read by the relayer.
pub fn redeem_topic() -> B256 {
    keccak256("Redeem(address,uint256)")
}

/// The 4-byte selector of `transfer(address,uint256)`.
pub const TRANSFER_SELECTOR: [u8; 4] = [0xa9, 0x05, 0x9c, 0xbb];
/// The 4-byte selector of `mint(address,uint256)` (the ST contract; the bridge only).
pub const MINT_SELECTOR: [u8; 4] = [0x40, 0xc1, 0x0f, 0x19];
/// The 4-byte selector of `redeem(uint256)`.
pub const REDEEM_SELECTOR: [u8; 4] = [0xdb, 0x00, 0x6a, 0x75];

/// ABI-encoded call data: `selector` then `args`.
pub(crate) fn call(selector: [u8; 4], args: Vec<DynSolValue>) -> Bytes {
    let mut data = selector.to_vec();
    data.extend_from_slice(&DynSolValue::Tuple(args).abi_encode_params());
    data.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The selectors of platform-facts.md, checked against the compiled ABI.
    #[test]
    fn st_abi_has_the_ten_functions_with_the_documented_selectors() {
        let expected = [
            ("allowance", "dd62ed3e"),
            ("approve", "095ea7b3"),
            ("balanceOf", "70a08231"),
            ("transfer", "a9059cbb"),
            ("transferWithFee", "623454cf"),
            ("redeem", "db006a75"),
            ("stake", "a694fc3a"),
            ("totalSupply", "18160ddd"),
            ("transferFrom", "23b872dd"),
            ("unstake", "2e17de78"),
        ];
        check().expect("artifacts parse");
        let abi = abi(ContractKind::St);
        for (name, sel) in expected {
            let f = abi
                .function(name)
                .and_then(|f| f.first())
                .unwrap_or_else(|| panic!("{name} missing"));
            assert_eq!(hex::encode(f.selector()), sel, "{name}");
        }
        assert_eq!(ST_FUNCTIONS.len(), 10);
        assert!(abi.events.contains_key("Redeem"));
        assert_eq!(
            abi.event("Redeem")
                .and_then(|e| e.first())
                .map(|e| e.selector()),
            Some(redeem_topic())
        );
    }

    /// Recompiles the sources with the pinned solc and compares with the committed
    /// artifacts. Needs `make tools` (node and tools/node_modules/solc).
    #[test]
    fn artifacts_match_sources() {
        let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("contracts");
        let out = tempfile::tempdir().expect("temp dir");
        let status = std::process::Command::new(here.join("build.sh"))
            .arg(out.path())
            .status()
            .expect("run contracts/build.sh (needs node; run `make tools`)");
        assert!(status.success(), "contracts/build.sh failed");
        for name in ["MainToken", "SideToken"] {
            let fresh =
                std::fs::read_to_string(out.path().join(format!("{name}.json"))).expect("fresh");
            let committed = std::fs::read_to_string(here.join(format!("artifacts/{name}.json")))
                .expect("committed");
            assert!(
                fresh == committed,
                "{name}.json is stale: run crates/sandbox/contracts/build.sh and commit"
            );
        }
    }
}
