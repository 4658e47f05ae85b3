//! `bridgectl sign` and `bridgectl tx decode` end to end.
//!
//! - published vectors (EIP-155 example, a second legacy vector) through `sign`;
//! - the committed ethereum/tests subset through `tx decode`;
//! - random transactions (250, or `BRIDGECTL_SIGN_VS_CAST_TXS`) signed by `bridgectl sign`
//!   and by `cast mktx --legacy`, byte for byte;
//! - every refusal, with the passphrase source (a FIFO) counting reads: a refusal must
//!   never read it.

use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::util::{CountingPassphrase, Dir, TestCommand};

const PASS: &str = "correct horse";
const EIP155_KEY: &str = "4646464646464646464646464646464646464646464646464646464646464646";
const EIP155_FROM: &str = "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F";
const OTHER_KEY: &str = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318";
const OTHER_FROM: &str = "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23";

/// Imports a raw key with the test-only KDF, passphrase from the environment.
fn import(dir: &Dir, label: &str, hex_key: &str) {
    let out = dir
        .command()
        .args(["key", "import", label, "--raw", "--unsafe-test-kdf"])
        .env("BRIDGECTL_PASSPHRASE", PASS)
        .output_with_stdin(hex_key.as_bytes());
    crate::util::assert_success(&Command::new("bridgectl key import"), &out);
}

/// The EIP-155 example as the platform would return it.
fn eip155_raw() -> Value {
    json!({
        "from": EIP155_FROM.to_lowercase(),
        "to": "0x3535353535353535353535353535353535353535",
        "data": "0x",
        "nonce": "0x9",
        "gasLimit": "0x5208",
        "gasPrice": "0x4a817c800",
        "chainId": 1,
        "value": "0xde0b6b3a7640000"
    })
}

const EIP155_SIGNED: &str = "0xf86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83";
const EIP155_HASH: &str = "0x33469b22e9f636356c4160a87eb19df52b7412e8eac32a4a55ffe88ea8350788";

/// The flags that pin every field of the EIP-155 example (a plain value transfer on
/// chain 1, which no profile names): what a person signing it offline must state.
const EIP155_PINNED: &[(&str, &str)] = &[
    ("--expect-chain-id", "1"),
    ("--expect-to", "0x3535353535353535353535353535353535353535"),
    ("--expect-data", "0x"),
    ("--allow-value", "1ether"),
    ("--max-gas-price", "20gwei"),
    ("--nonce", "9"),
];

/// `--yes` and the pinned flags, with `overrides` replacing (or, with an empty value,
/// removing) some of them.
fn pinned(overrides: &[(&str, &str)]) -> Vec<String> {
    let mut flags = Vec::new();
    if !overrides.contains(&("--yes", "")) {
        flags.push("--yes".to_string());
    }
    for (flag, value) in EIP155_PINNED {
        match overrides.iter().find(|(f, _)| f == flag) {
            Some((_, "")) => {}
            Some((f, v)) => flags.extend([f.to_string(), v.to_string()]),
            None => flags.extend([flag.to_string(), value.to_string()]),
        }
    }
    for (f, v) in overrides {
        if *f != "--yes" && !EIP155_PINNED.iter().any(|(p, _)| p == f) {
            flags.push(f.to_string());
            if !v.is_empty() {
                flags.push(v.to_string());
            }
        }
    }
    flags
}

/// `bridgectl sign` reading `input` on stdin, passphrase from the counting FIFO.
fn sign_cmd<S: AsRef<std::ffi::OsStr>>(
    dir: &Dir,
    fifo: &CountingPassphrase,
    extra: &[S],
) -> TestCommand {
    let mut cmd = dir.command();
    cmd.args(["sign", "-"]).args(extra);
    cmd.env("BRIDGECTL_PASSPHRASE_FILE", &fifo.path);
    cmd
}

fn run_stdin(cmd: &mut TestCommand, input: &Value) -> std::process::Output {
    cmd.output_with_stdin(serde_json::to_string(input).expect("json").as_bytes())
}

bctest!(
    sign_eip155_example_reads_passphrase_once,
    |dir: Dir, _cmd: TestCommand| {
        import(&dir, "k1", EIP155_KEY);
        let fifo = CountingPassphrase::new(&dir, PASS);
        let out = run_stdin(&mut sign_cmd(&dir, &fifo, &pinned(&[])), &eip155_raw());
        let reads = fifo.finish();
        crate::util::assert_success(&Command::new("bridgectl sign"), &out);
        assert_eq!(
            reads, 1,
            "a successful sign reads the passphrase exactly once"
        );
        let bundle: Value = serde_json::from_slice(&out.stdout).expect("bundle json");
        assert_eq!(bundle["format"], "bridgectl-signed-bundle");
        assert_eq!(bundle["signedTx"], EIP155_SIGNED);
        assert_eq!(bundle["txHash"], EIP155_HASH);
        assert_eq!(bundle["chainId"], 1);
        assert_eq!(bundle["nonce"], 9);
        assert_eq!(
            bundle["from"].as_str().expect("from").to_lowercase(),
            EIP155_FROM.to_lowercase()
        );
        // requestHash is sha256 of the exact input bytes.
        let input = serde_json::to_string(&eip155_raw()).expect("json");
        let want = Command::new("sha256sum")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().expect("stdin").write_all(input.as_bytes())?;
                c.wait_with_output()
            })
            .expect("sha256sum");
        let want = String::from_utf8_lossy(&want.stdout);
        assert_eq!(
            bundle["requestHash"],
            format!("0x{}", want.split_whitespace().next().expect("hash"))
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("max fee:   21000 gas x 20000000000 wei"),
            "{stderr}"
        );
    }
);

bctest!(
    sign_second_vector_raw_and_out_file,
    |dir: Dir, _cmd: TestCommand| {
        import(&dir, "web3js", OTHER_KEY);
        let raw = json!({
            "from": OTHER_FROM, "to": "0xF0109fC8DF283027b6285cc889F5aA624EaC1F55",
            "data": "0x", "nonce": "0x0", "gasLimit": "0x1e8480", "gasPrice": "0x4e3b29200",
            "chainId": "0x1", "value": "0x3b9aca00"
        });
        let input = dir.write("req.json", serde_json::to_vec(&raw).expect("json"));
        let out_path = dir.join("signed.hex");
        let second_vector = [
            "--expect-chain-id",
            "1",
            "--expect-to",
            "0xF0109fC8DF283027b6285cc889F5aA624EaC1F55",
            "--expect-data",
            "0x",
            "--allow-value",
            "1gwei",
            "--max-gas-price",
            "21gwei",
            "--max-gas-limit",
            "2000000",
            "--nonce",
            "0",
        ];
        let mut cmd = dir.command();
        cmd.args([
            "sign",
            input.to_str().expect("p"),
            "--yes",
            "--raw",
            "--out",
        ]);
        cmd.args([&out_path]).args(second_vector);
        cmd.env("BRIDGECTL_PASSPHRASE", PASS);
        cmd.stdout();
        let text = std::fs::read_to_string(&out_path).expect("out file");
        assert_eq!(
            text.trim(),
            "0xf869808504e3b29200831e848094f0109fc8df283027b6285cc889f5aa624eac1f55843b9aca008025a0c9cf86333bcb065d140032ecaab5d9281bde80f21b9687b3e94161de42d51895a0727a108a0b8d101465414033c3f705a9c7b826e596766046ee1183dbc8aeaa68"
        );
        // Never overwrites: a second run refuses and the file keeps its content.
        let mut again = dir.command();
        again.args([
            "sign",
            input.to_str().expect("p"),
            "--yes",
            "--raw",
            "--out",
        ]);
        again.args([&out_path]).args(second_vector);
        again.env("BRIDGECTL_PASSPHRASE", PASS);
        // The existing file is never overwritten, and that needs no input: refused before
        // the input is read (nothing checked, nothing unlocked).
        let err = again.fails_with(10);
        assert!(
            err.contains("already exists") && !err.contains("signed on this machine before"),
            "{err}"
        );
        // Another journal may sign the very same transaction (the keystore's signing log
        // refuses only a different one at a signed nonce: tests/log.rs), and the
        // existing file is still never overwritten.
        let mut other = dir.command();
        other
            .args([
                "sign",
                input.to_str().expect("p"),
                "--yes",
                "--raw",
                "--out",
            ])
            .args([&out_path])
            .args(second_vector)
            .args(["--journal", "other-journal.sqlite3"])
            .env("BRIDGECTL_PASSPHRASE", PASS);
        let err = other.fails_with(10);
        assert!(err.contains("already exists"), "{err}");
        assert_eq!(
            std::fs::read_to_string(&out_path).expect("out").trim(),
            text.trim()
        );
    }
);

bctest!(
    sign_accepts_envelope_and_sign_request,
    |dir: Dir, _cmd: TestCommand| {
        import(&dir, "k1", EIP155_KEY);
        let st = "0x3535353535353535353535353535353535353535";
        // redeem(1.5 ST) as the platform returns it inside an action envelope.
        let data = "0xdb006a7500000000000000000000000000000000000000000000000014d1120d7b160000";
        let mut raw = eip155_raw();
        raw["data"] = json!(data);
        raw.as_object_mut().expect("obj").remove("value");
        let envelope = json!({"result": true, "status": 200, "code": "OK",
        "data": {"from": EIP155_FROM, "rawTx": raw, "txId": "6f1c1f0e-0000-4000-8000-000000000001"}});
        // The envelope carries no intent: the person pins the call and the chain.
        let mut cmd = dir.command();
        cmd.args(["sign"])
            .args(pinned(&[
                ("--expect-function", "redeem"),
                ("--expect-arg", "_amount=1500000000000000000"),
                ("--expect-data", ""),
                ("--allow-value", ""),
            ]))
            .env("BRIDGECTL_PASSPHRASE", PASS);
        let out = run_stdin(&mut cmd, &envelope);
        crate::util::assert_success(&Command::new("sign envelope"), &out);
        let bundle: Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(bundle["requestKind"], "envelope");
        assert_eq!(bundle["txId"], "6f1c1f0e-0000-4000-8000-000000000001");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("call:      redeem(uint256)"), "{stderr}");

        let request = json!({
            "format": "bridgectl-sign-request", "version": 1, "rawTx": raw,
            "intent": {"function": "redeem", "args": {"_amount": "1500000000000000000"},
                       "to": st, "chainId": 1, "token": {"symbol": "ST", "decimals": 18},
                       "description": "redeem 1.5 ST"},
            "origin": {"baseUrl": "https://platform.example", "action": "redeem", "txId": "t-1"}
        });
        // A request names the call; the profile names the chain and the ST contract with
        // its decimals (the request's own token claim must agree with it), and approves
        // redeems of up to 2 ST in advance (the request's intent approves nothing). Nonce
        // 9 was signed above (the envelope): this machine's journal now expects 10.
        let cfg = dir.write(
            "config.toml",
            format!(
                "[profiles.default]\nside_chain_id = 1\nst_contract = \"{st}\"\n\
                 side_symbol = \"ST\"\nside_decimals = 18\n\n\
                 [profiles.default.policy]\nmax-gas-price = 20000000000\n\n\
                 [[profiles.default.policy.auto-approve]]\nfunction = \"redeem\"\ntoken = \"ST\"\nmax = \"2\"\n"
            ),
        );
        let mut request10 = request.clone();
        request10["rawTx"]["nonce"] = json!("0xa");
        let mut cmd = dir.command();
        cmd.args(["sign", "--yes", "--config"])
            .args([&cfg])
            .env("BRIDGECTL_PASSPHRASE", PASS);
        let out = run_stdin(&mut cmd, &request10);
        crate::util::assert_success(&Command::new("sign request"), &out);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("_amount      1.5 ST"), "{stderr}");
        assert!(
            stderr
                .contains("claimed:   \"redeem 1.5 ST\" (the request's description, not checked)"),
            "{stderr}"
        );
        assert!(stderr.contains("(ST token)"), "{stderr}");
        let bundle: Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(bundle["requestKind"], "sign-request");
        assert_eq!(bundle["txId"], "t-1");
    }
);

/// Runs `sign` on `input` with `extra` flags, asserts exit `code`, a message containing
/// `want`, and that the passphrase was never read.
fn refuses<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(
    dir: &Dir,
    input: &Value,
    extra: &[S],
    code: i32,
    want: &str,
) {
    let fifo = CountingPassphrase::new(dir, PASS);
    let out = run_stdin(&mut sign_cmd(dir, &fifo, extra), input);
    let reads = fifo.finish();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{extra:?} {want}: {stderr}");
    assert!(stderr.contains(want), "{want:?} not in: {stderr}");
    assert!(out.stdout.is_empty(), "nothing signed, nothing printed");
    assert_eq!(
        reads, 0,
        "passphrase read although the check failed ({want})"
    );
}

fn with(field: &str, v: Value) -> Value {
    let mut r = eip155_raw();
    r[field] = v;
    r
}

fn without(field: &str) -> Value {
    let mut r = eip155_raw();
    r.as_object_mut().expect("obj").remove(field);
    r
}

bctest!(
    sign_refusals_never_read_the_passphrase,
    |dir: Dir, _cmd: TestCommand| {
        import(&dir, "k1", EIP155_KEY);
        import(&dir, "k2", OTHER_KEY);
        let y = &pinned(&[]);
        let with_flags = |o: &[(&str, &str)]| pinned(o);
        refuses(&dir, &without("chainId"), y, 3, "missing field `chainId`");
        refuses(&dir, &with("chainId", json!(0)), y, 3, "chainId is 0");
        refuses(
            &dir,
            &eip155_raw(),
            &with_flags(&[("--key", "k2")]),
            3,
            "from mismatch",
        );
        refuses(
            &dir,
            &with("from", json!("0x1111111111111111111111111111111111111111")),
            y,
            6,
            "no usable key",
        );
        refuses(
            &dir,
            &with("gasPriceX", json!("0x1")),
            y,
            3,
            "unknown field(s) `gasPriceX`",
        );
        refuses(&dir, &with("nonce", json!("0xzz")), y, 3, "field `nonce`");
        refuses(&dir, &with("data", json!("0xabc")), y, 3, "field `data`");
        refuses(&dir, &with("nonce", json!("0x09")), y, 3, "leading zeros");
        // EIP-2681: 2^64-1 is never a valid nonce, even the one given.
        refuses(
            &dir,
            &with("nonce", json!("0xffffffffffffffff")),
            &with_flags(&[("--nonce", "18446744073709551615")]),
            3,
            "nonce: expected below 2^64-1 (EIP-2681",
        );
        refuses(
            &dir,
            &eip155_raw(),
            &with_flags(&[("--expect-chain-id", "5")]),
            3,
            "chainId: expected 5, found 1",
        );
        refuses(
            &dir,
            &eip155_raw(),
            &with_flags(&[("--expect-to", "0x3636363636363636363636363636363636363636")]),
            3,
            "to: expected 0x3636",
        );
        refuses(
            &dir,
            &eip155_raw(),
            &with_flags(&[("--expect-function", "redeem")]),
            3,
            "function: expected redeem, found no calldata",
        );
        refuses(
            &dir,
            &eip155_raw(),
            &with_flags(&[("--expect-arg", "_amount=1")]),
            3,
            "found no calldata",
        );
        refuses(
            &dir,
            &eip155_raw(),
            &with_flags(&[("--max-gas-price", "19gwei")]),
            3,
            "gasPrice: expected at most 19000000000 wei",
        );
        refuses(
            &dir,
            &eip155_raw(),
            &with_flags(&[("--max-fee", "0.0001ether")]),
            3,
            "maxFee",
        );
        refuses(
            &dir,
            &eip155_raw(),
            &with_flags(&[("--nonce", "8")]),
            3,
            "nonce: expected 8 (the sender's next nonce, from the nonce given), found 9: a gap",
        );
        // A function alone does not pin the call (transfer to anyone, any amount): --yes
        // is signing blind.
        let mut transfer = with(
            "data",
            json!(format!("0xa9059cbb{:0>64}{:0>64}", "66".repeat(20), "ff")),
        );
        transfer.as_object_mut().expect("obj").remove("value");
        refuses(
            &dir,
            &transfer,
            &with_flags(&[
                ("--expect-function", "transfer"),
                ("--expect-data", ""),
                ("--allow-value", ""),
            ]),
            3,
            "signing blind",
        );
        // No terminal and no --yes: declined, after the summary, before the passphrase.
        refuses(
            &dir,
            &eip155_raw(),
            &with_flags(&[("--yes", "")]),
            5,
            "no terminal to ask on",
        );
        // Malformed JSON.
        let fifo = CountingPassphrase::new(&dir, PASS);
        let out = sign_cmd(&dir, &fifo, y).output_with_stdin(b"{\"from\": ");
        assert_eq!(fifo.finish(), 0);
        assert_eq!(
            out.status.code(),
            Some(3),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
);

bctest!(
    sign_function_and_args_checked_on_calldata,
    |dir: Dir, _cmd: TestCommand| {
        import(&dir, "k1", EIP155_KEY);
        let mut raw = without("value");
        raw["data"] =
            json!("0xdb006a7500000000000000000000000000000000000000000000000014d1120d7b160000");
        refuses(
            &dir,
            &raw,
            &pinned(&[
                ("--expect-function", "stake"),
                ("--expect-data", ""),
                ("--allow-value", ""),
            ]),
            3,
            "function: expected stake(uint256), found redeem(uint256)",
        );
        refuses(
            &dir,
            &raw,
            &pinned(&[
                ("--expect-arg", "_amount=1"),
                ("--expect-data", ""),
                ("--allow-value", ""),
            ]),
            3,
            "args._amount: expected 1, found 1500000000000000000",
        );
        let mut cmd = dir.command();
        cmd.args([
            "sign",
            "--yes",
            "--expect-function",
            "redeem",
            "--expect-arg",
            "_amount=1500000000000000000",
            "--expect-chain-id",
            "1",
            "--expect-to",
            "0x3535353535353535353535353535353535353535",
            "--max-gas-price",
            "20gwei",
            "--max-fee",
            "420000gwei",
            "--nonce",
            "9",
        ])
        .env("BRIDGECTL_PASSPHRASE", PASS);
        let out = run_stdin(&mut cmd, &raw);
        crate::util::assert_success(&Command::new("sign with passing policy"), &out);
    }
);

bctest!(
    sign_profile_policy_applies,
    |dir: Dir, _cmd: TestCommand| {
        import(&dir, "k1", EIP155_KEY);
        let cfg = dir.write(
            "config.toml",
            "[profiles.strict.policy]\nexpect-chain-id = 617317\nmax-gas-price = 1000\n\n\
         [profiles.strict.chains]\n1 = \"mainnet\"\n",
        );
        let cfg = cfg.to_str().expect("path");
        refuses(
            &dir,
            &eip155_raw(),
            &pinned(&[
                ("--expect-chain-id", ""),
                ("--max-gas-price", ""),
                ("--config", cfg),
                ("--profile", "strict"),
            ]),
            3,
            "chainId: expected 617317",
        );
        // A flag overrides the profile's value; the profile's gas cap still applies.
        refuses(
            &dir,
            &eip155_raw(),
            &pinned(&[
                ("--max-gas-price", ""),
                ("--config", cfg),
                ("--profile", "strict"),
            ]),
            3,
            "gasPrice: expected at most 1000 wei",
        );
    }
);

bctest!(
    tx_decode_ethereum_tests_subset,
    |dir: Dir, _cmd: TestCommand| {
        // The committed subset, or a whole checkout's `TransactionTests` folder.
        let root = std::env::var_os("BRIDGECTL_ETHEREUM_TESTS").map_or_else(
            || crate::util::repo_root().join("crates/tx/tests/vectors/TransactionTests"),
            std::path::PathBuf::from,
        );
        let mut files = Vec::new();
        for group in std::fs::read_dir(&root).expect("vectors") {
            for f in std::fs::read_dir(group.expect("group").path()).expect("group dir") {
                files.push(f.expect("file").path());
            }
        }
        files.sort();
        assert!(files.len() >= 20, "{} vector files", files.len());
        // Newest first: the newest fork a case lists decides it.
        let forks = [
            "Osaka", "Prague", "Cancun", "Shanghai", "Paris", "London", "Berlin",
        ];
        let (mut ok, mut bad) = (0, 0);
        for path in &files {
            // A checkout may hold a large file as an empty stub.
            let Ok(v) =
                serde_json::from_str::<Value>(&std::fs::read_to_string(path).expect("read"))
            else {
                continue;
            };
            let (name, body) = v.as_object().expect("obj").iter().next().expect("case");
            let result = &body["result"];
            let fork = forks
                .iter()
                .find(|f| result.get(**f).is_some())
                .expect("fork");
            let expect = &result[*fork];
            let mut cmd = dir.command();
            // The cases are filled for chain 1: one signed for another chain is invalid.
            cmd.args([
                "--json",
                "tx",
                "decode",
                "--expect-chain-id",
                "1",
                body["txbytes"].as_str().expect("txbytes"),
            ]);
            let out = cmd.output();
            if expect.get("exception").is_some() {
                assert_eq!(
                    out.status.code(),
                    Some(3),
                    "{name}: expected a refusal ({})",
                    expect["exception"]
                );
                assert!(
                    !String::from_utf8_lossy(&out.stderr).trim().is_empty(),
                    "{name}: no message"
                );
                bad += 1;
            } else {
                crate::util::assert_success(&Command::new(format!("tx decode {name}")), &out);
                let d: Value = serde_json::from_slice(&out.stdout).expect("decode json");
                assert_eq!(d["hash"], expect["hash"], "{name}");
                assert_eq!(
                    d["from"].as_str().expect("from").to_lowercase(),
                    expect["sender"],
                    "{name}"
                );
                ok += 1;
            }
        }
        assert!(ok >= 5 && bad >= 10, "ok {ok} bad {bad}");
        // The EIP-155 example decodes with its sender; a bundle file works as input too.
        let bundle = dir.write("b.json", json!({"signedTx": EIP155_SIGNED}).to_string());
        let mut cmd = dir.command();
        cmd.args(["tx", "decode"]).args([&bundle]);
        let text = cmd.stdout();
        assert!(text.contains(EIP155_FROM), "{text}");
        assert!(text.contains(EIP155_HASH), "{text}");
        let mut cmd = dir.command();
        cmd.args(["tx", "decode", "0xf86c09"]);
        let err = cmd.fails_with(3);
        assert!(err.contains("malformed transaction"), "{err}");
        // The chain is judged only when asked: the EIP-155 example is for chain 1.
        let mut cmd = dir.command();
        cmd.args(["tx", "decode", "--expect-chain-id", "5", EIP155_SIGNED]);
        let err = cmd.fails_with(3);
        assert!(err.contains("signed for chain id 1, not 5"), "{err}");
    }
);

/// splitmix64: a tiny deterministic generator, so failures reproduce.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
    /// A random value of a random bit length up to `bits` (so small and huge values
    /// both show up), with the extremes now and then.
    fn uint(&mut self, bits: u32) -> u128 {
        match self.below(10) {
            0 => 0,
            1 => {
                if bits == 128 {
                    u128::MAX
                } else {
                    (1u128 << bits) - 1
                }
            }
            _ => {
                let v = (u128::from(self.next()) << 64) | u128::from(self.next());
                let keep = 1 + self.below(u64::from(bits)) as u32;
                if keep >= 128 {
                    v
                } else {
                    v & ((1u128 << keep) - 1)
                }
            }
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

// Random legacy transactions: `bridgectl sign` and `cast mktx --legacy` must give the
// same bytes. 100 random keys (a keystore of 1000 would only test listing speed). 250
// transactions by default, which meet every class of field many times over (empty, short
// and long calldata across the RLP length forms, zero, small, huge and extreme integers,
// chain ids up to 2^53); BRIDGECTL_SIGN_VS_CAST_TXS=N runs N (the first 250 are the
// same for any N: one seed). The transactions are drawn first, in order (a failure names
// its number and reproduces); the processes then run four at a time, as many of them
// wait on the disk.
bctest!(
    sign_matches_cast_mktx_on_random_txs,
    |dir: Dir, _cmd: TestCommand| {
        let n: usize = std::env::var("BRIDGECTL_SIGN_VS_CAST_TXS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(250);
        const KEYS: usize = 100;
        const AT_ONCE: usize = 4;
        let cast = crate::util::pinned_tool("cast");
        let mut rng = Rng(0x6272_6964_6765_6374); // "bridgect"
        let mut keys = Vec::new();
        for _ in 0..KEYS {
            let k = loop {
                let k = rng.bytes(32);
                // Valid secp256k1 scalars: non-zero and below n (the top byte test is enough
                // to stay below n with overwhelming probability; cast and we agree anyway).
                if k.iter().any(|b| *b != 0) && k[0] < 0xff {
                    break k;
                }
            };
            let from = alloy_signer_local::PrivateKeySigner::from_slice(&k)
                .expect("a valid key")
                .address()
                .to_string();
            keys.push((hex(&k), from));
        }
        let txs: Vec<RandomTx> = (0..n).map(|_| RandomTx::draw(&mut rng, KEYS)).collect();
        each_at_once(KEYS, AT_ONCE, |i| {
            import(&dir, &format!("r{i}"), &keys[i].0);
        });
        each_at_once(n, AT_ONCE, |i| {
            let tx = &txs[i];
            let (key, from) = &keys[tx.key];
            let (to, data) = (&tx.to, format!("0x{}", hex(&tx.data)));
            let (nonce, gas_price, gas_limit, chain_id, value) =
                (tx.nonce, tx.gas_price, tx.gas_limit, tx.chain_id, tx.value);
            let mut raw = json!({
                "from": from, "to": to, "data": data,
                "nonce": format!("{nonce:#x}"), "gasLimit": format!("{gas_limit:#x}"),
                "gasPrice": format!("{gas_price:#x}"), "chainId": chain_id
            });
            if value != 0 {
                raw["value"] = json!(format!("{value:#x}"));
            }
            // Every field pinned by the person: the chain and callee are no profile's.
            let mut cmd = dir.command();
            cmd.args(["sign", "--yes", "--raw"])
                .args([
                    "--expect-chain-id",
                    &chain_id.to_string(),
                    "--expect-to",
                    to,
                ])
                .args(["--expect-data", &data])
                .args(["--allow-value", &value.to_string()])
                .args(["--max-gas-price", &gas_price.to_string()])
                .args(["--max-gas-limit", &gas_limit.to_string()])
                .args(["--nonce", &nonce.to_string()])
                .env("BRIDGECTL_PASSPHRASE", PASS);
            let ours = run_stdin(&mut cmd, &raw);
            crate::util::assert_success(&Command::new(format!("sign #{i}")), &ours);
            let theirs = Command::new(&cast)
                .args(["mktx", "--legacy", "--private-key", &format!("0x{key}")])
                .args(["--nonce", &nonce.to_string()])
                .args(["--gas-price", &gas_price.to_string()])
                .args(["--gas-limit", &gas_limit.to_string()])
                .args(["--chain", &chain_id.to_string()])
                .args(["--value", &value.to_string(), to, &data])
                .env_remove("ETH_RPC_URL")
                .output()
                .expect("run cast");
            assert!(
                theirs.status.success(),
                "cast #{i}: {}",
                String::from_utf8_lossy(&theirs.stderr)
            );
            assert_eq!(
                String::from_utf8_lossy(&ours.stdout).trim(),
                String::from_utf8_lossy(&theirs.stdout).trim(),
                "tx #{i} differs: {raw}"
            );
        });
    }
);

/// One random legacy transaction of [`sign_matches_cast_mktx_on_random_txs`].
struct RandomTx {
    /// Which of the keys signs it.
    key: usize,
    nonce: u64,
    gas_price: u128,
    gas_limit: u64,
    chain_id: u64,
    data: Vec<u8>,
    value: u128,
    to: String,
}

impl RandomTx {
    fn draw(rng: &mut Rng, keys: usize) -> RandomTx {
        let key = rng.below(keys as u64) as usize;
        // 2^64-1 is never valid (EIP-2681, refused before signing): the highest
        // nonce signed is 2^64-2.
        let nonce = (rng.uint(64) as u64).min(u64::MAX - 1);
        let gas_price = rng.uint(128);
        let gas_limit = rng.uint(64) as u64;
        let chain_id = 1 + rng.below(1u64 << 53);
        let data = {
            let n = rng.below(1025) as usize;
            rng.bytes(n)
        };
        let value = if rng.below(4) == 0 { rng.uint(128) } else { 0 };
        let to = format!("0x{}", hex(&rng.bytes(20)));
        RandomTx {
            key,
            nonce,
            gas_price,
            gas_limit,
            chain_id,
            data,
            value,
            to,
        }
    }
}

/// Runs `f(0) .. f(n - 1)`, `at_once` at a time; a panic in any fails the caller.
fn each_at_once(n: usize, at_once: usize, f: impl Fn(usize) + Sync) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..at_once {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        return;
                    }
                    f(i);
                }
            });
        }
    });
}
