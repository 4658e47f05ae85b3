//! The examples are what a wallet developer copies: each must build and do what its doc
//! says on a real platform (the sandbox over two anvil chains), run as its own process
//! exactly as documented, configured by bridgectl's own profile file.

use std::process::Command;
use std::sync::OnceLock;

use alloy_primitives::{Address, U256};
use bridgectl_sandbox::{AppState, Sandbox, SandboxConfig, SandboxInfo};

use crate::common;

/// The sandbox the examples of this binary share, each with an account of its own: it
/// runs on a thread of its own (its anvils' parent-death signal is tied to that thread)
/// until the process exits.
struct Shared {
    info: SandboxInfo,
    state: AppState,
    runtime: tokio::runtime::Handle,
}

fn shared() -> &'static Shared {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    SHARED.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let sandbox = Sandbox::start(SandboxConfig::default())
                    .await
                    .expect("sandbox");
                let _ = tx.send(Shared {
                    info: sandbox.info().clone(),
                    state: sandbox.state().clone(),
                    runtime: tokio::runtime::Handle::current(),
                });
                std::future::pending::<()>().await;
            });
        });
        rx.recv().expect("the sandbox started")
    })
}

impl Shared {
    /// 100 whole MT and 100 whole ST, in base units.
    fn hundred_each(&self) -> (U256, U256) {
        let hundred = |d: u8| U256::from(100u64) * U256::from(10u64).pow(U256::from(d));
        (
            hundred(self.info.main.decimals),
            hundred(self.info.side.decimals),
        )
    }

    /// Pays `address` 100 MT and 100 ST and registers it for gas (on the sandbox's runtime,
    /// where its node clients live).
    async fn fund(&self, address: Address) {
        let (state, (mt, st)) = (self.state.clone(), self.hundred_each());
        self.runtime
            .spawn(async move { state.fund(address, mt, st).await })
            .await
            .expect("the funding task")
            .expect("funded");
    }

    /// A fresh account with 100 MT, 100 ST and gas: its key and address.
    async fn new_account(&self) -> bridgectl_sandbox::DevAccount {
        let (state, (mt, st)) = (self.state.clone(), self.hundred_each());
        self.runtime
            .spawn(async move { state.fund_new_account(mt, st).await })
            .await
            .expect("the funding task")
            .expect("a funded account")
    }
}

/// Anvil's well-known development key #2 (public test key): unlocked in the sandbox's
/// anvils like the development account (#1), and used by nothing else, so a second
/// external-signer example signs with an account of its own.
const ANVIL_ACCOUNT_2: &str = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";

/// `target/<profile>/examples/<name>`, built by `cargo test` beside this test binary.
fn example_binary(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    profile_dir.join("examples").join(name)
}

/// What a run of an example with a keystore left: its output and its folder (keystore,
/// journal).
struct Run {
    stdout: String,
    stderr: String,
    dir: tempfile::TempDir,
}

/// Runs example `name` against the shared sandbox as its doc says: a fresh funded
/// account's key in a keystore under the label `wallet`, its passphrase in a file,
/// `AMOUNT` as given. Fails the test if the example fails.
async fn run_with_keystore(name: &str, amount: &str) -> Run {
    let example = example_binary(name);
    assert!(
        example.exists(),
        "{} missing: run `cargo test -p bridgectl-flow` (which builds the examples)",
        example.display()
    );
    let sandbox = shared();
    let info = sandbox.info.clone();
    let account = sandbox.new_account().await;
    let dir = tempfile::tempdir().expect("tmp");
    let passphrase = "example passphrase";
    common::keystore_with(dir.path(), account.private_key.expose_secret(), passphrase);
    let profile = common::profile_file(dir.path(), &info);
    let pass_file = dir.path().join("passphrase");
    std::fs::write(&pass_file, format!("{passphrase}\n")).expect("write");

    let out = Command::new(&example)
        .env("PROFILE", &profile)
        .env("PLATFORM_TOKEN", info.token.expose_secret())
        .env("KEYSTORE", dir.path().join("keystore"))
        .env("FROM", "wallet")
        .env("PASSPHRASE_FILE", &pass_file)
        .env("JOURNAL", dir.path().join("journal.sqlite3"))
        .env("AMOUNT", amount)
        .output()
        .expect("run the example");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{name} failed:\n{stdout}\n{stderr}");
    Run {
        stdout,
        stderr,
        dir,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_redeem_example_redeems_on_the_sandbox() {
    let Run {
        stdout,
        stderr,
        dir,
        ..
    } = run_with_keystore("redeem", "1.5").await;
    let mut words = stdout.split_whitespace();
    let hash = words.next().expect("a tx hash");
    assert!(hash.starts_with("0x") && hash.len() == 66, "{stdout}");
    assert_eq!(
        words.next(),
        Some("completed"),
        "redemption status: {stdout}"
    );
    assert!(
        stderr.contains("signing: nonce"),
        "the approver was asked: {stderr}"
    );
    let journal = bridgectl_flow::Journal::open(dir.path().join("journal.sqlite3")).expect("open");
    let flows = journal.list(10).expect("list");
    assert_eq!(flows.len(), 1);
    assert_eq!(flows[0].kind, bridgectl_flow::FlowKind::Redeem);
    assert_eq!(flows[0].tx_hash.as_deref(), Some(hash));
}

/// `examples/wallet.rs`: one `Flows` swaps on the main chain and redeems on the side
/// chain, each under its own chain's policy (its chain id expected), the side chain's
/// node the wallet's own alloy provider, the approver a `Box<dyn Approver>` that signs
/// only what the wallet pinned: both end well, unattended, two signatures in the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wallet_example_swaps_and_redeems_through_one_flows_on_the_sandbox() {
    let run = run_with_keystore("wallet", "2").await;
    let (stdout, stderr) = (&run.stdout, &run.stderr);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(
        lines[0].starts_with("swap 0x") && lines[0].ends_with(" Completed"),
        "{stdout}"
    );
    assert!(
        lines[1].starts_with("redeem 0x") && lines[1].ends_with(" Some(Completed)"),
        "{stdout}"
    );
    assert!(stderr.contains("via the wallet's provider"), "{stderr}");
    assert_eq!(
        stderr.matches("approve: ").count(),
        2,
        "the flows asked twice: {stderr}"
    );
    assert_eq!(logged(run.dir.path()), 2, "two signatures logged");
}

/// `examples/airgap_batch.rs`: three redeems prepared online, checked and signed
/// offline with the keystore's key (three signatures in its log), accepted online and
/// followed to their ends: all completed, each journaled once on each machine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_airgap_batch_example_prepares_signs_offline_and_submits() {
    let run = run_with_keystore("airgap_batch", "1").await;
    let (stdout, stderr) = (&run.stdout, &run.stderr);
    assert!(
        stdout.trim_end().ends_with(" 3 completed"),
        "{stdout}\n{stderr}"
    );
    assert!(stderr.contains("offline: 3 to sign, 0 refused"), "{stderr}");
    assert!(stderr.contains("online: 3 accepted, 0 refused"), "{stderr}");
    assert_eq!(logged(run.dir.path()), 3, "three signatures logged offline");
    let journal = run.dir.path().join("journal.sqlite3");
    for machine in [journal.clone(), journal.with_extension("offline")] {
        let flows = bridgectl_flow::Journal::open(&machine)
            .expect("open")
            .list(10)
            .expect("list");
        assert_eq!(flows.len(), 3, "{}: {flows:?}", machine.display());
        assert!(flows.iter().all(|f| f.signed_tx.is_some()), "{flows:?}");
    }
}

/// The signing log beside `dir/keystore`: how many entries it holds, verified.
fn logged(dir: &std::path::Path) -> u64 {
    let keystore = bridgectl_keystore::Keystore::open(dir.join("keystore")).expect("dir");
    let log = common::signing_log(&keystore);
    log.verify(None).expect("intact").count
}

/// `examples/refusals.rs`: a wrong passphrase (the keystore's error reached by walking
/// `source()`), a "no", a sender short of ST, a gas price over the side chain's cap and
/// a batch the run would refuse, each matched by type; nothing signed, nothing sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_refusals_example_matches_each_refusal_by_type_on_the_sandbox() {
    let run = run_with_keystore("refusals", "1").await;
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "wrong passphrase: true (walked source(): true)",
            "declined: Some(\"the person said no\"), resumable flow: true",
            lines[2],
            "refused: true (gas price: true)",
            "batch refused: payout-1 (gas price: true)",
        ],
        "{}",
        run.stderr
    );
    assert!(
        lines[2].starts_with("balance too low: holds "),
        "{}",
        run.stdout
    );
    assert_eq!(logged(run.dir.path()), 0, "nothing signed");
}

/// `examples/offline.rs`: a redeem's rawTx as the platform would build it, verified
/// against the wallet's own amount and signed by alloy's `PrivateKeySigner` with no
/// network; the signed bytes, sent to the side chain's node by the test, are mined and
/// do not revert, and the signature is in the log beside the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_offline_example_signs_what_the_chain_accepts() {
    let example = example_binary("offline");
    assert!(example.exists(), "{} missing", example.display());
    let sandbox = shared();
    let info = sandbox.info.clone();
    let account = sandbox.new_account().await;
    let dir = tempfile::tempdir().expect("tmp");
    let profile = common::profile_file(dir.path(), &info);
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, account.private_key.expose_secret()).expect("write");
    let node = bridgectl_flow::rpc::NodeClient::new(&info.side.rpc_url).expect("node");
    let nonce = node.pending_nonce(account.address).await.expect("nonce");
    let amount = bridgectl_flow::U256::from(10).pow(bridgectl_flow::U256::from(info.side.decimals));
    let args = std::collections::BTreeMap::from([("_amount".to_owned(), amount.to_string())]);
    let raw = bridgectl_flow::tx::RawTx {
        from: account.address,
        to: info.side.token_address,
        data: bridgectl_flow::tx::calldata::encode("redeem", &args)
            .expect("calldata")
            .into(),
        nonce,
        gas_limit: 200_000,
        gas_price: node.gas_price().await.expect("gas price"),
        chain_id: info.side.chain_id,
        value: bridgectl_flow::U256::ZERO,
    };
    let tx_file = dir.path().join("tx.json");
    std::fs::write(&tx_file, serde_json::to_vec(&raw).expect("json")).expect("write");
    let out = Command::new(&example)
        .env("PROFILE", &profile)
        .env("KEY_FILE", &key_file)
        .env("TX_FILE", &tx_file)
        .env("AMOUNT", "1")
        .env("NONCE", nonce.to_string())
        .env("LOG_DIR", dir.path().join("log"))
        .env("JOURNAL", dir.path().join("journal.sqlite3"))
        .output()
        .expect("run the example");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let signed = alloy_primitives::hex::decode(stdout.trim()).expect("hex");
    let hash = alloy_primitives::keccak256(&signed);
    node.send_raw(&signed, hash)
        .await
        .expect("the node takes it");
    let receipt = node
        .wait_receipt(
            hash,
            std::time::Duration::from_millis(100),
            std::time::Duration::from_secs(30),
            &mut bridgectl_flow::Quiet,
        )
        .await
        .expect("mined");
    assert!(receipt.success, "the redeem did not revert");
    let log =
        bridgectl_signing_log::SigningLogDb::open_in(dir.path().join("log"), vec![account.address])
            .expect("log");
    assert_eq!(log.verify(None).expect("intact").count, 1);
}

/// Runs example `name` against the shared sandbox with an external signer: the
/// sandbox's anvil as the JSON-RPC endpoint, signing as `from` (an account it holds
/// unlocked, which no other test uses), `extra` as more settings. Returns stdout, stderr
/// and the signing log's verified entry count.
async fn run_with_external_signer(
    name: &str,
    from: Address,
    extra: &[(&str, &str)],
) -> (String, String, u64) {
    let example = example_binary(name);
    assert!(example.exists(), "{} missing", example.display());
    let info = shared().info.clone();
    let dir = tempfile::tempdir().expect("tmp");
    let profile = common::profile_file(dir.path(), &info);
    let out = Command::new(&example)
        .env("PROFILE", &profile)
        .env("PLATFORM_TOKEN", info.token.expose_secret())
        .env("SIGNER_URL", &info.side.rpc_url)
        .env("FROM", from.to_string())
        .env("LOG_DIR", dir.path().join("log"))
        .env("JOURNAL", dir.path().join("journal.sqlite3"))
        .envs(extra.iter().copied())
        .output()
        .expect("run the example");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{name} failed:\n{stdout}\n{stderr}");
    let keystore = bridgectl_keystore::Keystore::open(dir.path().join("log")).expect("dir");
    assert!(
        keystore.list().expect("list").is_empty(),
        "no key was kept here"
    );
    let log = common::signing_log(&keystore);
    let head = log.verify(None).expect("intact");
    (stdout, stderr, head.count)
}

/// `examples/external_signer.rs`: the same redeem with the key in a JSON-RPC signing
/// endpoint: no keystore key, the redemption completes, its entry is in the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_external_signer_example_redeems_on_the_sandbox() {
    let dev = shared().info.dev.address;
    let (stdout, stderr, logged) =
        run_with_external_signer("external_signer", dev, &[("AMOUNT", "1")]).await;
    assert!(stdout.trim_end().ends_with(" completed"), "{stdout}");
    assert!(stderr.contains("signing on the device"), "{stderr}");
    assert_eq!(logged, 1, "the signature is in the log");
}

/// `examples/batch_external.rs`: 10 redeems, one approval, each signed by the JSON-RPC
/// endpoint: all completed, 10 signatures in the log, which holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_batch_example_pays_out_ten_through_an_external_signer() {
    let sandbox = shared();
    let account: Address = ANVIL_ACCOUNT_2.parse().expect("address");
    sandbox.fund(account).await;
    let (stdout, stderr, logged) = run_with_external_signer(
        "batch_external",
        account,
        &[("COUNT", "10"), ("AMOUNT", "0.1")],
    )
    .await;
    assert!(stdout.contains(" 10 completed 10 journaled"), "{stdout}");
    assert_eq!(
        stderr.matches("approved:").count(),
        1,
        "one approval: {stderr}"
    );
    assert_eq!(logged, 10, "every signature is in the log");
}

/// The README shows the example itself, not a copy that drifts.
#[test]
fn the_readme_opens_with_the_example() {
    let readme = include_str!("../../README.md");
    let example = include_str!("../../examples/redeem.rs");
    let first_block = readme
        .split("```rust,no_run\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a rust code block");
    assert_eq!(first_block, example);
}
