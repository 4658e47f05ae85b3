//! `examples/redeem.rs` is what a wallet developer copies: it must build and redeem on
//! a real platform (the sandbox over two anvil chains), run as its own process exactly
//! as documented.

use std::process::Command;
use std::sync::OnceLock;

use alloy_primitives::{Address, U256};
use bridgectl_sandbox::{AppState, Sandbox, SandboxConfig, SandboxInfo};

mod common;

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

/// What a run of an example with a keystore left: its output, its folder (keystore,
/// journal) and the development account's next nonce on the side chain afterwards.
struct Run {
    stdout: String,
    stderr: String,
    dir: tempfile::TempDir,
    side_nonce: u64,
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
    let bridge = common::bridge(&info);
    let bridge_file = dir.path().join("bridge.json");
    std::fs::write(&bridge_file, serde_json::to_vec(&bridge).expect("json")).expect("write");
    let pass_file = dir.path().join("passphrase");
    std::fs::write(&pass_file, format!("{passphrase}\n")).expect("write");

    let out = Command::new(&example)
        .env("PLATFORM_URL", &info.base_url)
        .env("PLATFORM_TOKEN", info.token.expose_secret())
        .env("BRIDGE_FILE", &bridge_file)
        .env("KEYSTORE", dir.path().join("keystore"))
        .env("FROM", "wallet")
        .env("PASSPHRASE_FILE", &pass_file)
        .env("JOURNAL", dir.path().join("journal.sqlite3"))
        .env("AMOUNT", amount)
        .output()
        .expect("run the example");
    let node = bridgectl_flow::rpc::NodeClient::new(&info.side.rpc_url).expect("node");
    let side_nonce = node.pending_nonce(account.address).await.expect("nonce");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{name} failed:\n{stdout}\n{stderr}");
    Run {
        stdout,
        stderr,
        dir,
        side_nonce,
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

/// `examples/wallet.rs`, the program of issue 26 written against the library as it is
/// now: a redeem and a swap through the flows, then an offline signature through the
/// signing log. Each ends well, the offline one is in the log and was never sent, and
/// the log holds all three.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wallet_example_redeems_swaps_and_signs_offline_on_the_sandbox() {
    let run = run_with_keystore("wallet", "2").await;
    let (stdout, stderr) = (&run.stdout, &run.stderr);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert!(
        lines[0].starts_with("redeem 0x") && lines[0].ends_with(" Some(Completed)"),
        "{stdout}"
    );
    assert!(
        lines[1].starts_with("swap 0x") && lines[1].ends_with(" Completed"),
        "{stdout}"
    );
    assert!(lines[2].ends_with(" in the log, not sent"), "{stdout}");
    assert_eq!(
        stderr.matches("approve: ").count(),
        2,
        "the flows asked twice: {stderr}"
    );
    let keystore =
        bridgectl_keystore::Keystore::open(run.dir.path().join("keystore")).expect("dir");
    let log = bridgectl_signing_log::SigningLogDb::open_in(
        keystore.dir(),
        keystore.signers().expect("keys"),
    )
    .expect("log");
    assert_eq!(
        log.verify(None).expect("intact").count,
        3,
        "three signatures logged"
    );
    // The offline signature took the side chain's next nonce and was never sent.
    let journal =
        bridgectl_flow::Journal::open(run.dir.path().join("journal.sqlite3")).expect("open");
    let redeem = journal
        .list(10)
        .expect("list")
        .into_iter()
        .find(|f| f.kind == bridgectl_flow::FlowKind::Redeem)
        .expect("the redeem");
    assert_eq!(
        run.side_nonce,
        redeem.nonce.expect("nonce") + 1,
        "nothing more was sent on the side chain"
    );
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
    let bridge_file = dir.path().join("bridge.json");
    let bridge = serde_json::to_vec(&common::bridge(&info)).expect("json");
    std::fs::write(&bridge_file, bridge).expect("write");
    let out = Command::new(&example)
        .env("PLATFORM_URL", &info.base_url)
        .env("PLATFORM_TOKEN", info.token.expose_secret())
        .env("BRIDGE_FILE", &bridge_file)
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
    let log = bridgectl_signing_log::SigningLogDb::open_in(
        keystore.dir(),
        keystore.signers().expect("keys"),
    )
    .expect("log");
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

/// `examples/batch_external.rs`: 20 redeems, one approval, each signed by the JSON-RPC
/// endpoint: all completed, 20 signatures in the log, which holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_batch_example_pays_out_twenty_through_an_external_signer() {
    let sandbox = shared();
    let account: Address = ANVIL_ACCOUNT_2.parse().expect("address");
    sandbox.fund(account).await;
    let (stdout, stderr, logged) = run_with_external_signer(
        "batch_external",
        account,
        &[("COUNT", "20"), ("AMOUNT", "0.1")],
    )
    .await;
    assert!(stdout.contains(" 20 completed 20 journaled"), "{stdout}");
    assert_eq!(
        stderr.matches("approved:").count(),
        1,
        "one approval: {stderr}"
    );
    assert_eq!(logged, 20, "every signature is in the log");
}

/// The README shows the example itself, not a copy that drifts.
#[test]
fn the_readme_opens_with_the_example() {
    let readme = include_str!("../README.md");
    let example = include_str!("../examples/redeem.rs");
    let first_block = readme
        .split("```rust,no_run\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a rust code block");
    assert_eq!(first_block, example);
}
