//! `bridgectl key ...` end to end.

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{Dir, TestCommand, pinned_tool, repo_root};

const KEY_4646: &str = "4646464646464646464646464646464646464646464646464646464646464646";
const ADDR_4646: &str = "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F";

/// Exit codes from src/exit.rs.
const EXIT_REFUSED: i32 = 3;
const EXIT_EXISTS: i32 = 10;
use crate::util::EXIT_PASSPHRASE;
const EXIT_DECLINED: i32 = 5;
const EXIT_NOT_FOUND: i32 = 6;

fn passfile(dir: &Dir, name: &str, passphrase: &str) -> PathBuf {
    dir.write(name, format!("{passphrase}\n"))
}

/// `key import --raw` of the 0x46… key with the test KDF, passphrase `pw`.
fn import_4646(dir: &Dir, label: &str) -> serde_json::Value {
    let pw = passfile(dir, "pw", "pw");
    let out = dir
        .command()
        .args([
            "--json",
            "key",
            "import",
            label,
            "--raw",
            "--unsafe-test-kdf",
        ])
        .args([Path::new("--passphrase-file"), &pw])
        .output_with_stdin(format!("0x{KEY_4646}\n").as_bytes());
    crate::util::assert_success(&Command::new("bridgectl key import"), &out);
    serde_json::from_slice(&out.stdout).expect("json")
}

bctest!(new_list_show_json, |dir: Dir, mut cmd: TestCommand| {
    let pw = passfile(&dir, "pw", "pw");
    let created = cmd
        .args(["--json", "key", "new", "ops", "--unsafe-test-kdf"])
        .args([Path::new("--passphrase-file"), &pw])
        .json();
    assert_eq!(created["label"], "ops");
    let address = created["address"].as_str().expect("address").to_owned();
    assert_eq!(address.len(), 42);

    // list and show need no passphrase at all (none is configured here).
    let list = dir.command().args(["--json", "key", "list"]).json();
    assert_eq!(list.as_array().expect("array").len(), 1);
    assert_eq!(list[0]["address"], address.as_str());
    assert_eq!(list[0]["kdf"]["algorithm"], "argon2id");
    let show = dir
        .command()
        .args(["--json", "key", "show", &address.to_lowercase()])
        .json();
    assert_eq!(show["id"], created["id"]);
    let text = dir.command().args(["key", "list"]).stdout();
    assert!(text.contains("ops") && text.contains(&address), "{text}");

    let mode = std::fs::metadata(dir.keystore().join("ops.key"))
        .expect("key file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
});

bctest!(
    no_tty_and_no_source_fails_at_once,
    |_dir: Dir, mut cmd: TestCommand| {
        // Stdin held open and never written: a command that waited for input instead of
        // failing would hang, and is killed (not timed: a slow machine must not fail it).
        cmd.args(["key", "new", "ops"]);
        cmd.cmd
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = crate::util::KillOnDrop::spawn(&mut cmd.cmd);
        let stdin = child.stdin.take();
        let deadline = Instant::now() + Duration::from_secs(60);
        while child.try_wait().expect("wait").is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("key new waited for input with no terminal and no passphrase source");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(stdin);
        let out = child.wait_with_output();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(EXIT_PASSPHRASE), "{err}");
        assert!(err.contains("no passphrase source"), "{err}");
        assert!(err.contains("--passphrase-file"), "{err}");
    }
);

bctest!(env_passphrase_for_ci, |dir: Dir, mut cmd: TestCommand| {
    cmd.args(["--json", "key", "new", "ci", "--unsafe-test-kdf"])
        .env("BRIDGECTL_PASSPHRASE", "from-env");
    cmd.json();
    let pw = passfile(&dir, "p", "from-env");
    dir.command()
        .args(["key", "verify", "ci"])
        .args([Path::new("--passphrase-file"), &pw])
        .stdout();
    dir.command()
        .args(["key", "verify", "ci"])
        .env("BRIDGECTL_PASSPHRASE", "wrong")
        .fails_with(EXIT_PASSPHRASE);
});

bctest!(
    raw_import_from_stdin_only,
    |dir: Dir, mut cmd: TestCommand| {
        let info = import_4646(&dir, "eip155");
        assert_eq!(info["address"], ADDR_4646);
        // A key given as an argument lands in the label slot and is refused unechoed.
        let pw = passfile(&dir, "pw2", "pw");
        let out = cmd
            .args(["key", "import", KEY_4646, "--raw", "--unsafe-test-kdf"])
            .args([Path::new("--passphrase-file"), &pw])
            .output_with_stdin(format!("{KEY_4646}\n").as_bytes());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("looks like a private key"), "{err}");
        assert!(!err.contains(KEY_4646), "key echoed: {err}");
        // With 0x (66 characters, past the length limit) and as a mnemonic: same.
        let hex = KEY_4646.trim_start_matches("0x");
        let mnemonic = "test test test test test test test test test test test junk";
        for secret in [format!("0x{hex}"), mnemonic.to_string()] {
            let out = dir
                .command()
                .args(["key", "new", &secret, "--unsafe-test-kdf"])
                .args([Path::new("--passphrase-file"), &pw])
                .output();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert!(
                !err.contains(hex) && !err.contains("test test"),
                "echoed: {err}"
            );
        }
        // Empty stdin is a clear error.
        let out = dir
            .command()
            .args(["key", "import", "x", "--raw", "--unsafe-test-kdf"])
            .args([Path::new("--passphrase-file"), &pw])
            .output_with_stdin(b"");
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("no private key (hex) on stdin"));
    }
);

bctest!(mnemonic_import, |dir: Dir, mut cmd: TestCommand| {
    let pw = passfile(&dir, "pw", "pw");
    let out = cmd
        .args(["--json", "key", "import", "anvil1", "--mnemonic"])
        .args(["--derivation-path", "m/44'/60'/0'/0/1", "--unsafe-test-kdf"])
        .args([Path::new("--passphrase-file"), &pw])
        .output_with_stdin(b"test test test test test test test test test test test junk\n");
    crate::util::assert_success(&cmd.cmd, &out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["address"], "0x70997970C51812dc3A010C7d01b50e0d17dc79C8");
});

// Every command that makes or re-encrypts a key leaves no secret behind: `key new`,
// `key import` (`--mnemonic`, `--raw`, `--web3`), `key passwd` (right and wrong old
// passphrase). Their output,
// and every file they left (key files, the keystore's other files, the working
// directory), are scanned for the keys, the passphrases and the mnemonic in every form
// the scan knows (hex, raw, base64, decimal, byte arrays).
bctest!(
    key_producing_commands_leave_no_secret,
    |dir: Dir, _cmd: TestCommand| {
        const PASS1: &str = "first passphrase 1";
        const PASS2: &str = "second passphrase 2";
        const MNEMONIC: &str = "test test test test test test test test test test test junk";
        // m/44'/60'/0'/0/1 of MNEMONIC (anvil's second account).
        const MNEMONIC_KEY: &str =
            "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
        let p1 = passfile(&dir, "p1", PASS1);
        let p2 = passfile(&dir, "p2", PASS2);
        let with_pass = |args: &[&str], pass: &Path| {
            let mut cmd = dir.command();
            cmd.args(args).args([Path::new("--passphrase-file"), pass]);
            cmd
        };
        let mut runs = vec![(
            "key new",
            with_pass(&["--json", "key", "new", "fresh", "--unsafe-test-kdf"], &p1).output(),
            true,
        )];
        let mnemonic = with_pass(&["--json", "key", "import", "anvil1", "--mnemonic"], &p1)
            .args(["--derivation-path", "m/44'/60'/0'/0/1", "--unsafe-test-kdf"])
            .output_with_stdin(format!("{MNEMONIC}\n").as_bytes());
        runs.push(("key import --mnemonic", mnemonic, true));
        let raw = with_pass(&["--json", "key", "import", "raw", "--raw"], &p1)
            .args(["--unsafe-test-kdf"])
            .output_with_stdin(format!("0x{KEY_4646}\n").as_bytes());
        runs.push(("key import --raw", raw, true));
        // The Web3 Secret Storage vector (its published key), under its own passphrase.
        let vector = repo_root().join("keystore-fixtures/web3_pbkdf2_vector.json");
        let vector_pass = dir.write("vector.passphrase", "testpassword\n");
        let web3 = with_pass(
            &["--json", "key", "import", "web3", "--unsafe-test-kdf"],
            &p2,
        )
        .args([Path::new("--web3"), &vector])
        .args([Path::new("--web3-passphrase-file"), &vector_pass])
        .output();
        runs.push(("key import --web3", web3, true));
        let mut passwd = with_pass(&["key", "passwd", "fresh", "--unsafe-test-kdf"], &p1);
        passwd.args([Path::new("--new-passphrase-file"), &p2]);
        runs.push(("key passwd", passwd.output(), true));
        let mut wrong = with_pass(&["key", "passwd", "anvil1", "--unsafe-test-kdf"], &p2);
        wrong.args([Path::new("--new-passphrase-file"), &p1]);
        runs.push(("key passwd (wrong passphrase)", wrong.output(), false));
        // The new key, learned only now: `export --unsafe-raw` prints it by design.
        let fresh = with_pass(&["key", "export", "fresh", "--unsafe-raw"], &p2).stdout();
        let mut scan = crate::secrets::Secrets::new();
        scan.add_key("the new key", fresh.trim())
            .add_key("the mnemonic's key", MNEMONIC_KEY)
            .add_key("the raw-imported key", KEY_4646)
            .add_key(
                "the Web3 vector's key",
                "7a28b5ba57c53603b0b07b56bba752f7784bf506fa95edc395f5cf6c7514fe9d",
            )
            .add("the Web3 vector's passphrase", "testpassword")
            .add("the first passphrase", PASS1)
            .add("the second passphrase", PASS2)
            .add("the mnemonic", MNEMONIC);
        for (what, out, succeeds) in &runs {
            assert_eq!(
                out.status.success(),
                *succeeds,
                "{what}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            scan.scan_output(what, out);
        }
        // Every file left behind but the two passphrase files this test wrote.
        let mut files = 0;
        let mut pending = vec![dir.path().to_path_buf()];
        while let Some(d) = pending.pop() {
            for entry in std::fs::read_dir(&d).expect("read dir") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    pending.push(path);
                } else if path.is_file() && ![&p1, &p2, &vector_pass].contains(&&path) {
                    scan.scan_file(&path);
                    files += 1;
                }
            }
        }
        assert!(files >= 2, "the two key files at least: {files}");
    }
);

bctest!(
    passwd_new_passphrase_from_file,
    |dir: Dir, mut cmd: TestCommand| {
        import_4646(&dir, "ops");
        let old = passfile(&dir, "old", "pw");
        let new = passfile(&dir, "new", "new passphrase");
        cmd.args(["key", "passwd", "ops", "--unsafe-test-kdf"])
            .args([Path::new("--passphrase-file"), &old])
            .args([Path::new("--new-passphrase-file"), &new]);
        cmd.stdout();
        dir.command()
            .args(["key", "verify", "ops"])
            .args([Path::new("--passphrase-file"), &new])
            .stdout();
        let err = dir
            .command()
            .args(["key", "verify", "ops"])
            .args([Path::new("--passphrase-file"), &old])
            .fails_with(EXIT_PASSPHRASE);
        assert!(err.contains("wrong passphrase"), "{err}");
        // Without --new-passphrase-file and no terminal: refused, even with the env var
        // set, naming the flag that gives the new passphrase (not --passphrase-file, which
        // gives the current one).
        let err = dir
            .command()
            .args(["key", "passwd", "ops"])
            .env("BRIDGECTL_PASSPHRASE", "new passphrase")
            .fails_with(EXIT_PASSPHRASE);
        assert_eq!(
            err.lines().next().expect("a line"),
            "error: no source for the new passphrase: there is no terminal to ask on and \
             --new-passphrase-file is not given (the environment is never read for it: it \
             would set the current passphrase again)"
        );
    }
);

bctest!(
    rm_needs_yes_without_tty,
    |dir: Dir, mut cmd: TestCommand| {
        import_4646(&dir, "ops");
        let err = cmd.args(["key", "rm", "ops"]).fails_with(EXIT_DECLINED);
        assert!(err.contains("--yes"), "{err}");
        assert!(dir.keystore().join("ops.key").exists());
        let v = dir
            .command()
            .args(["--json", "key", "rm", ADDR_4646, "--yes"])
            .json();
        assert_eq!(v["removed"]["label"], "ops");
        assert!(!dir.keystore().join("ops.key").exists());
        dir.command()
            .args(["key", "show", "ops"])
            .fails_with(EXIT_NOT_FOUND);
    }
);

bctest!(
    export_unsafe_raw_with_a_wrong_passphrase_prints_nothing,
    |dir: Dir, mut cmd: TestCommand| {
        import_4646(&dir, "ops");
        let listing = || {
            let mut names: Vec<_> = std::fs::read_dir(dir.keystore())
                .expect("keystore")
                .map(|e| e.expect("entry").file_name())
                .collect();
            names.sort();
            names
        };
        let before = listing();
        let wrong = "not the passphrase of ops";
        let pw = passfile(&dir, "wrong", wrong);
        let out = cmd
            .args(["key", "export", "ops", "--unsafe-raw"])
            .args([Path::new("--passphrase-file"), &pw])
            .output();
        let mut scan = crate::secrets::Secrets::new();
        scan.add_key("the key of ops", KEY_4646)
            .add("the wrong passphrase", wrong);
        crate::util::assert_wrong_passphrase(&scan, "key export --unsafe-raw", &out);
        assert_eq!(listing(), before, "nothing written into the keystore");
    }
);

bctest!(
    export_unsafe_raw_and_never_overwrite,
    |dir: Dir, mut cmd: TestCommand| {
        import_4646(&dir, "ops");
        let pw = passfile(&dir, "pw3", "pw");
        let raw = cmd
            .args(["key", "export", "ops", "--unsafe-raw"])
            .args([Path::new("--passphrase-file"), &pw])
            .stdout();
        assert_eq!(raw.trim(), format!("0x{KEY_4646}"));
        let out = dir.join("exported.json");
        let v = dir
            .command()
            .args(["--json", "key", "export", "ops", "--unsafe-test-kdf"])
            .args([Path::new("--passphrase-file"), &pw])
            .args([Path::new("--out"), &out])
            .json();
        assert_eq!(v["format"], "web3-secret-storage-v3");
        let mode = std::fs::metadata(&out).expect("out").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let before = std::fs::read(&out).expect("read");
        dir.command()
            .args(["key", "export", "ops", "--unsafe-test-kdf"])
            .args([Path::new("--passphrase-file"), &pw])
            .args([Path::new("--out"), &out])
            .fails_with(EXIT_EXISTS);
        assert_eq!(std::fs::read(&out).expect("read"), before);
    }
);

bctest!(
    insecure_permissions_refused_with_fix,
    |dir: Dir, _cmd: TestCommand| {
        let info = import_4646(&dir, "ops");
        let path = PathBuf::from(info["path"].as_str().expect("path"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        let err = dir.command().args(["key", "list"]).fails_with(EXIT_REFUSED);
        assert!(err.contains("chmod 600"), "{err}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        std::fs::set_permissions(dir.keystore(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        let err = dir.command().args(["key", "list"]).fails_with(EXIT_REFUSED);
        assert!(err.contains("chmod 700"), "{err}");
    }
);

// The tamper and hostile-file matrix through the CLI: each fixture dropped into a
// keystore is refused with a clear message and the documented exit code, never a panic,
// and where it can be: before the KDF. "Before" is observable without a clock: `key list`
// reads every file with no passphrase at all (no KDF can run), so a fixture it refuses
// was refused before any derivation; a fixture it lists is refused only by `key verify`,
// after the KDF, by the AEAD.
bctest!(tamper_matrix_through_cli, |dir: Dir, _cmd: TestCommand| {
    /// Where a tampered file is refused.
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum At {
        /// Parsing: a field's shape, length or range, the format, an algorithm, a cost
        /// cap. Everything that can be seen without the key is checked here.
        BeforeKdf,
        /// The AEAD: a same-length edit of a field bound as associated data (or of the
        /// ciphertext) is a well-formed file; only the derived key can tell it was
        /// changed, so it is seen after the KDF, as a wrong passphrase would be.
        AfterKdf,
    }
    use At::{AfterKdf, BeforeKdf};
    let fixtures = repo_root().join("keystore-fixtures");
    let cases = [
        ("fail_v1_tampered_address.key", AfterKdf, "was modified"),
        ("fail_v1_tampered_label.key", AfterKdf, "was modified"),
        ("fail_v1_tampered_kdf_m.key", AfterKdf, "was modified"),
        ("fail_v1_tampered_id.key", AfterKdf, "was modified"),
        ("fail_v1_tampered_created_at.key", AfterKdf, "was modified"),
        ("fail_v1_tampered_kdf_salt.key", AfterKdf, "was modified"),
        (
            "fail_v1_tampered_cipher_nonce.key",
            AfterKdf,
            "was modified",
        ),
        ("fail_v1_flipped_ciphertext.key", AfterKdf, "was modified"),
        ("fail_v1_unknown_version.key", BeforeKdf, "format version 2"),
        (
            "fail_v1_excessive_memory.key",
            BeforeKdf,
            "excessive kdf work",
        ),
        ("fail_v1_truncated.key", BeforeKdf, "not a valid key file"),
        (
            "fail_v1_unknown_field.key",
            BeforeKdf,
            "unknown field `comment`",
        ),
        ("fail_v1_tampered_kdf_algorithm.key", BeforeKdf, "argon2i"),
        ("fail_v1_short_ciphertext.key", BeforeKdf, "ciphertext"),
        ("fail_v1_short_salt.key", BeforeKdf, "kdf.salt"),
        ("fail_v1_long_nonce.key", BeforeKdf, "cipher.nonce"),
        ("fail_v1_zero_passes.key", BeforeKdf, "kdf"),
        ("fail_v1_tampered_address_case.key", BeforeKdf, "EIP-55"),
    ];
    // A private copy: passphrase files readable by others are refused, and git checks
    // the fixtures out 0644.
    let pass = dir.write(
        "fixture.passphrase",
        std::fs::read(fixtures.join("v1_test_cost.passphrase")).expect("passphrase"),
    );
    for (name, at, needle) in cases {
        let selector = if name.contains("tampered_label") {
            "fixture-renamed"
        } else {
            "fixture-test-cost"
        };
        let ks = dir.join(name);
        std::fs::create_dir(&ks).expect("mkdir");
        std::fs::set_permissions(&ks, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        let target = ks.join("fixture.key");
        std::fs::copy(fixtures.join(name), &target).expect("copy");
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        // No passphrase source at all: whatever is refused here never reached a KDF.
        let mut list = dir.command();
        list.env("BRIDGECTL_KEYSTORE", &ks).args(["key", "list"]);
        list.cmd
            .env_remove("BRIDGECTL_PASSPHRASE")
            .env_remove("BRIDGECTL_PASSPHRASE_FILE");
        let listed = list.output();
        let list_err = String::from_utf8_lossy(&listed.stderr);
        let out = dir
            .command()
            .env("BRIDGECTL_KEYSTORE", &ks)
            .args(["key", "verify", selector])
            .args([Path::new("--passphrase-file"), &pass])
            .output();
        let err = String::from_utf8_lossy(&out.stderr);
        match at {
            BeforeKdf => {
                assert_eq!(
                    listed.status.code(),
                    Some(EXIT_REFUSED),
                    "{name}: {list_err}"
                );
                assert!(list_err.contains(needle), "{name}: {list_err}");
                assert_eq!(out.status.code(), Some(EXIT_REFUSED), "{name}: {err}");
            }
            AfterKdf => {
                assert!(
                    listed.status.success(),
                    "{name} refused before the KDF: {list_err}"
                );
                assert_eq!(out.status.code(), Some(EXIT_PASSPHRASE), "{name}: {err}");
            }
        }
        assert!(err.contains(needle), "{name}: {err}");
        assert!(err.starts_with("error: "), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
    }
});

// Web3 files from cast, ethers v6 and eth-account import through the CLI with the
// file's own passphrase and a new one.
bctest!(import_web3_fixtures, |dir: Dir, _cmd: TestCommand| {
    let fixtures = repo_root().join("keystore-fixtures");
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures.join("manifest.json")).expect("manifest"),
    )
    .expect("json");
    let new = passfile(&dir, "new", "new pw");
    for name in [
        "cast_wallet_new.json",
        "ethers_v6.json",
        "geth_31_byte_key.json",
        "web3_pbkdf2_vector.json",
    ] {
        let file = fixtures.join(name);
        let label = name.trim_end_matches(".json").replace('_', "-");
        let file_pass = dir.write(
            format!("{label}.passphrase"),
            std::fs::read(file.with_extension("passphrase")).expect("passphrase"),
        );
        let v = dir
            .command()
            .args(["--json", "key", "import", &label, "--unsafe-test-kdf"])
            .args([Path::new("--web3"), &file])
            .args([Path::new("--web3-passphrase-file"), &file_pass])
            .args([Path::new("--passphrase-file"), &new])
            .json();
        assert_eq!(v["address"], manifest[name]["address"], "{name}");
    }
    let v = dir.command().args(["--json", "key", "list"]).json();
    assert_eq!(v.as_array().expect("array").len(), 4);
});

fn cast() -> Command {
    Command::new(pinned_tool("cast"))
}

// `cast wallet new` -> `bridgectl key import --web3` gives the same address.
bctest!(
    cast_new_imports_with_same_address,
    |dir: Dir, _cmd: TestCommand| {
        let casts = dir.join("cast-keystores");
        std::fs::create_dir_all(&casts).expect("mkdir");
        let out = cast()
            .args(["wallet", "new"])
            .arg(&casts)
            .arg("fromcast")
            .env("HOME", dir.path())
            // The cast password goes through its env var, only in this test.
            .env("CAST_PASSWORD", "cast pw")
            .stdin(Stdio::null())
            .output()
            .expect("run cast");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "cast failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let cast_address = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("Address:"))
            .map(|a| a.trim().to_owned())
            .unwrap_or_else(|| panic!("no address in cast output:\n{text}"));
        let file_pw = passfile(&dir, "castpw", "cast pw");
        let new_pw = passfile(&dir, "newpw", "mine");
        let v = dir
            .command()
            .args(["--json", "key", "import", "fromcast", "--unsafe-test-kdf"])
            .args([Path::new("--web3"), &casts.join("fromcast")])
            .args([Path::new("--web3-passphrase-file"), &file_pw])
            .args([Path::new("--passphrase-file"), &new_pw])
            .json();
        assert_eq!(v["address"], cast_address.as_str());
    }
);

// `bridgectl key export` (default scrypt n=2^18, r=8, p=1) -> `cast wallet
// decrypt-keystore` gives back the same private key.
bctest!(export_decrypts_with_cast, |dir: Dir, _cmd: TestCommand| {
    import_4646(&dir, "ops");
    let pw = passfile(&dir, "pw-e", "pw");
    let export_pw = passfile(&dir, "export-pw", "exported pw");
    let exports = dir.join("exports");
    std::fs::create_dir_all(&exports).expect("mkdir");
    let file = exports.join("ops.json");
    dir.command()
        .args(["key", "export", "ops"])
        .args([Path::new("--passphrase-file"), &pw])
        .args([Path::new("--web3-passphrase-file"), &export_pw])
        .args([Path::new("--out"), &file])
        .stdout();
    let exported: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).expect("read")).expect("json");
    assert_eq!(exported["crypto"]["kdfparams"]["n"], 262144);
    assert_eq!(exported["crypto"]["kdfparams"]["r"], 8);
    assert_eq!(exported["crypto"]["kdfparams"]["p"], 1);
    assert_eq!(exported["address"], ADDR_4646[2..].to_lowercase());
    let out = cast()
        .args(["wallet", "decrypt-keystore", "ops.json", "-k"])
        .arg(&exports)
        .env("HOME", dir.path())
        .env("CAST_UNSAFE_PASSWORD", "exported pw")
        .stdin(Stdio::null())
        .output()
        .expect("run cast");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "cast failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!("0x{KEY_4646}")),
        "cast printed: {text}"
    );
});

/// Small deterministic generator for kill delays; the seed is printed so a failure can
/// be replayed with BRIDGECTL_CRASH_SEED.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// True when a writer's temp file is in the keystore (a kill landed mid-write).
fn has_temp_file(dir: &Dir) -> bool {
    std::fs::read_dir(dir.keystore())
        .expect("read keystore")
        .any(|e| {
            e.expect("entry")
                .file_name()
                .to_string_lossy()
                .starts_with(".tmp-")
        })
}

/// The labels `key list` shows.
fn listed_labels(dir: &Dir) -> BTreeSet<String> {
    let listed = dir.command().args(["--json", "key", "list"]).json();
    listed
        .as_array()
        .expect("array")
        .iter()
        .map(|k| k["label"].as_str().expect("label").to_owned())
        .collect()
}

// Each crash window of a key write, reached on purpose (failpoints, debug builds): the
// process is aborted there, and what it leaves is checked. `key new` stopped with its
// file complete under the temp name: the label is not taken, the leftover is never
// listed, the next `key new` makes it. Stopped with the name linked, or before the
// directory sync: the key is there and decrypts. `key passwd` stopped before its rename:
// the old passphrase still opens the key; after it: the new one does. Never both lost.
bctest!(
    key_writes_stopped_in_each_crash_window_leave_a_usable_keystore,
    |dir: Dir, _cmd: TestCommand| {
        let pa = passfile(&dir, "pa", "alpha");
        let pb = passfile(&dir, "pb", "beta");
        let key_cmd = |args: &[&str], pass: &Path, failpoint: Option<&str>| {
            let mut c = dir.command();
            c.args(["key"]).args(args).args(["--unsafe-test-kdf"]);
            c.args([Path::new("--passphrase-file"), pass]);
            if let Some(f) = failpoint {
                c.env("BRIDGECTL_FAILPOINT", f);
            }
            c.output()
        };
        let aborted = crate::util::assert_aborted;
        for (n, window, made) in [
            (0, "key-temp-written", false),
            (1, "key-linked-temp-left", true),
            (2, "key-not-dir-synced", true),
        ] {
            let label = format!("new{n}");
            aborted(&key_cmd(&["new", &label], &pa, Some(window)), window);
            assert_eq!(
                has_temp_file(&dir),
                window != "key-not-dir-synced",
                "{window}: the temp file is left until the next write"
            );
            assert_eq!(listed_labels(&dir).contains(&label), made, "{window}");
            if made {
                assert!(verifies(&dir, &label, &pa), "{window}: the key decrypts");
            } else {
                let again = key_cmd(&["new", &label], &pa, None);
                assert!(again.status.success(), "{window}: the label is free");
            }
        }
        assert!(
            !has_temp_file(&dir),
            "the next write, under the keystore's lock, removed the leftovers"
        );
        assert_eq!(
            listed_labels(&dir),
            BTreeSet::from(["new0".into(), "new1".into(), "new2".into()])
        );
        // passwd, stopped before and after its rename.
        let passwd = |failpoint: &str, from: &Path, to: &Path| {
            let mut c = dir.command();
            c.args(["key", "passwd", "new0", "--unsafe-test-kdf"])
                .args([Path::new("--passphrase-file"), from])
                .args([Path::new("--new-passphrase-file"), to])
                .env("BRIDGECTL_FAILPOINT", failpoint);
            aborted(&c.output(), failpoint);
        };
        passwd("key-temp-written", &pa, &pb);
        assert!(
            verifies(&dir, "new0", &pa),
            "before the rename: the old passphrase"
        );
        passwd("key-not-dir-synced", &pa, &pb);
        assert!(
            verifies(&dir, "new0", &pb),
            "after the rename: the new passphrase"
        );
        assert!(!verifies(&dir, "new0", &pa));
    }
);

/// Runs `verify` on `label` with the passphrase in `pw`; true when it decrypts.
fn verifies(dir: &Dir, label: &str, pw: &Path) -> bool {
    let out = dir
        .command()
        .args(["key", "verify", label])
        .args([Path::new("--passphrase-file"), pw])
        .output();
    match out.status.code() {
        Some(0) => true,
        Some(EXIT_PASSPHRASE) => false,
        _ => panic!(
            "verify {label} failed unexpectedly: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// Where a SIGKILL landed in a key write, told from what the child left on disk.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Landed {
    /// Killed with nothing of its write on disk yet (starting, reading the passphrase,
    /// encrypting, waiting for the lock).
    Before,
    /// Killed with its write begun: a temp file, a link, a rename or a removal shows.
    During,
    /// It had exited on its own.
    After,
}

/// When to kill one kind of write: a delay that moves toward the moment it writes,
/// longer after a kill that landed before the write, shorter after one that landed once
/// the child had exited, by a step that halves each time the direction turns (the
/// delay is across the write) and doubles when it holds (the write moved away).
struct KillDelay {
    us: f64,
    step: f64,
    last: Landed,
}

impl KillDelay {
    fn new(us: f64) -> KillDelay {
        KillDelay {
            us,
            step: 0.25,
            last: Landed::During,
        }
    }

    /// The delay, give or take a tenth at random.
    fn next(&self, rng: &mut XorShift) -> Duration {
        let jitter = 0.9 + 0.2 * (rng.next() % 1000) as f64 / 1000.0;
        Duration::from_micros((self.us * jitter) as u64)
    }

    fn learn(&mut self, landed: Landed) {
        if landed == Landed::During {
            return;
        }
        if self.last != Landed::During {
            let factor = if landed == self.last { 2.0 } else { 0.5 };
            self.step = (self.step * factor).clamp(0.01, 0.5);
        }
        self.last = landed;
        self.us = if landed == Landed::Before {
            self.us * (1.0 + self.step)
        } else {
            (self.us / (1.0 + self.step)).max(100.0)
        };
    }
}

/// The files of `dirs`, each with its inode: a write shows as a name added or gone, or a
/// name on another inode (a rename over it).
fn disk_state(dirs: &[PathBuf]) -> BTreeSet<(PathBuf, u64)> {
    use std::os::unix::fs::MetadataExt;
    dirs.iter()
        .flat_map(|d| std::fs::read_dir(d).expect("read dir"))
        .map(|e| {
            let e = e.expect("entry");
            (e.path(), e.metadata().expect("metadata").ino())
        })
        .collect()
}

// Child processes writing keys (`key new`, `passwd`, `import`, `export`, `rm`) are
// SIGKILLed at random moments, a fixed number of runs (150 here; `BRIDGECTL_CRASH_RUNS`,
// e.g. 2000 from bench/crash-keys.sh), so the test lasts as long as what it proves,
// whatever the machine. Each kind of write has its own kill delay that moves toward its
// writes: longer after a kill that landed before the write showed on disk, shorter after
// one that landed once the child had exited; at least a fifth of the runs must be killed
// with their write begun. After each passwd kill the key opens with the old or the new
// passphrase; after an rm kill the key is intact or gone; an export never leaves a
// partial file; at the end no key that was reported created is lost, no removed key
// comes back, every listed key decrypts, and leftover temp files are never listed. The
// count of kills before, during and after the writes is printed.
bctest!(
    crash_test_sigkill_during_writes,
    |dir: Dir, _cmd: TestCommand| {
        let runs: usize = std::env::var("BRIDGECTL_CRASH_RUNS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(150);
        let seed = std::env::var("BRIDGECTL_CRASH_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(1)
                    | 1
            });
        #[allow(clippy::print_stderr)]
        {
            eprintln!("crash test seed: BRIDGECTL_CRASH_SEED={seed}");
        }
        let mut rng = XorShift(seed);
        let pa = passfile(&dir, "pa", "alpha");
        let pb = passfile(&dir, "pb", "beta");
        let exports = dir.join("exports");
        std::fs::create_dir(&exports).expect("mkdir exports");
        let spawn = |args: &[&std::ffi::OsStr], stdin: Option<String>| {
            let mut c = dir.command();
            c.args(args);
            c.cmd.stdout(Stdio::null()).stderr(Stdio::null());
            if stdin.is_some() {
                c.cmd.stdin(Stdio::piped());
            }
            let mut child = crate::util::KillOnDrop::spawn(&mut c.cmd);
            if let (Some(text), Some(mut input)) = (stdin, child.stdin.take()) {
                use std::io::Write;
                let _ = input.write_all(text.as_bytes());
            }
            child
        };
        let os = |s: &str| std::ffi::OsString::from(s);
        let test_kdf = os("--unsafe-test-kdf");
        let pass_flag = os("--passphrase-file");

        // Base keys for passwd and export, and a calibration of how long one write takes.
        let bases = ["base0", "base1", "base2"];
        let mut longest = Duration::ZERO;
        for b in bases {
            let start = Instant::now();
            let args = [
                os("key"),
                os("new"),
                os(b),
                test_kdf.clone(),
                pass_flag.clone(),
            ];
            let mut args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
            args.push(pa.as_os_str());
            let status = spawn(&args, None).wait().expect("wait");
            assert!(status.success(), "creating {b}");
            longest = longest.max(start.elapsed());
        }
        // Every kind of write starts from three quarters of the longest `key new`: its
        // writes come last, after the start, the passphrase and the encryption.
        let start_us = (longest.as_micros() as f64 * 0.75).max(1000.0);
        let mut delays: [KillDelay; 5] = std::array::from_fn(|_| KillDelay::new(start_us));
        let watched = [dir.keystore(), exports.clone()];

        let mut created: BTreeSet<String> = bases.iter().map(|s| s.to_string()).collect();
        let mut maybe: BTreeSet<String> = BTreeSet::new();
        let mut removed: BTreeSet<String> = BTreeSet::new();
        // Reported, not asserted: how many kills land in the temp-file window depends
        // on the machine. Each window is reached on purpose, and asserted, by
        // `key_writes_stopped_in_each_crash_window_leave_a_usable_keystore`.
        let mut killed_with_temp = 0usize;
        // [before, during, after] for new, passwd, import, export and rm.
        let mut landed_by_op = [[0usize; 3]; 5];
        for i in 0..runs {
            // new, passwd, import, export, rm in turn; rm needs a non-base key.
            let removable = created
                .iter()
                .find(|l| !bases.contains(&l.as_str()))
                .cloned();
            let op = match (i % 5, &removable) {
                (4, None) => 0,
                (op, _) => op,
            };
            let mut stdin = None;
            let (label, args): (String, Vec<std::ffi::OsString>) = match op {
                0 => {
                    let label = format!("crash{i}");
                    let a = vec![
                        os("key"),
                        os("new"),
                        os(&label),
                        test_kdf.clone(),
                        pass_flag.clone(),
                        pa.clone().into(),
                    ];
                    (label, a)
                }
                1 => {
                    let label = bases[(i / 5) % bases.len()].to_owned();
                    let (cur, next) = if verifies(&dir, &label, &pa) {
                        (&pa, &pb)
                    } else {
                        (&pb, &pa)
                    };
                    let a = vec![
                        os("key"),
                        os("passwd"),
                        os(&label),
                        test_kdf.clone(),
                        pass_flag.clone(),
                        cur.clone().into(),
                        os("--new-passphrase-file"),
                        next.clone().into(),
                    ];
                    (label, a)
                }
                2 => {
                    let label = format!("imp{i}");
                    let key: String = (0..4).map(|_| format!("{:016x}", rng.next())).collect();
                    stdin = Some(format!("0x{key}\n"));
                    let a = vec![
                        os("key"),
                        os("import"),
                        os(&label),
                        os("--raw"),
                        test_kdf.clone(),
                        pass_flag.clone(),
                        pa.clone().into(),
                    ];
                    (label, a)
                }
                3 => {
                    let label = bases[(i / 5) % bases.len()].to_owned();
                    let cur = if verifies(&dir, &label, &pa) {
                        &pa
                    } else {
                        &pb
                    };
                    let a = vec![
                        os("key"),
                        os("export"),
                        os(&label),
                        test_kdf.clone(),
                        pass_flag.clone(),
                        cur.clone().into(),
                        os("--out"),
                        exports.join(format!("{i}.json")).into(),
                    ];
                    (label, a)
                }
                _ => {
                    let label = removable.clone().unwrap_or_default();
                    (
                        label.clone(),
                        vec![os("key"), os("rm"), os(&label), os("--yes")],
                    )
                }
            };
            let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
            let before = disk_state(&watched);
            let mut child = spawn(&args, stdin);
            std::thread::sleep(delays[op].next(&mut rng));
            let _ = child.kill();
            let status = child.wait().expect("wait");
            let killed = status.signal() == Some(9);
            let landed = match (killed, disk_state(&watched) == before) {
                (false, _) => Landed::After,
                (true, true) => Landed::Before,
                (true, false) => Landed::During,
            };
            landed_by_op[op][landed as usize] += 1;
            delays[op].learn(landed);
            if killed {
                if has_temp_file(&dir) {
                    killed_with_temp += 1;
                    let listed = dir.command().args(["--json", "key", "list"]).json();
                    let names: Vec<&str> = listed
                        .as_array()
                        .expect("array")
                        .iter()
                        .map(|k| k["path"].as_str().expect("path"))
                        .collect();
                    assert!(
                        names
                            .iter()
                            .all(|p| p.ends_with(".key") && !p.contains("/.tmp-")),
                        "a temp file was listed as a key: {names:?}"
                    );
                }
            } else {
                assert!(
                    status.success(),
                    "run {i} ({label}, op {op}) failed on its own: {status}"
                );
            }
            match (op, killed) {
                (0 | 2, true) => {
                    maybe.insert(label.clone());
                }
                (0 | 2, false) => {
                    created.insert(label.clone());
                }
                (4, true) => {
                    // Intact or gone, never half: decided at the end.
                    created.remove(&label);
                    maybe.insert(label.clone());
                }
                (4, false) => {
                    created.remove(&label);
                    removed.insert(label.clone());
                }
                _ => {}
            }
            if op == 1 || op == 3 {
                // Intact with exactly one of the two passphrases.
                let (a, b) = (verifies(&dir, &label, &pa), verifies(&dir, &label, &pb));
                assert!(
                    a ^ b,
                    "{label} after run {i}: opens with alpha={a}, beta={b}"
                );
            }
            if op == 3 {
                // An export is complete or absent.
                let out = exports.join(format!("{i}.json"));
                if let Ok(text) = std::fs::read_to_string(&out) {
                    let v: serde_json::Value = serde_json::from_str(&text)
                        .unwrap_or_else(|e| panic!("partial export {}: {e}", out.display()));
                    assert!(v.get("crypto").is_some(), "{text}");
                }
            }
        }

        let listed: BTreeSet<String> = dir
            .command()
            .args(["--json", "key", "list"])
            .json()
            .as_array()
            .expect("array")
            .iter()
            .map(|k| k["label"].as_str().expect("label").to_owned())
            .collect();
        let lost: Vec<_> = created.difference(&listed).collect();
        assert!(lost.is_empty(), "keys lost: {lost:?}");
        let unexpected: Vec<_> = listed
            .iter()
            .filter(|l| !created.contains(*l) && !maybe.contains(*l))
            .collect();
        assert!(unexpected.is_empty(), "keys nobody created: {unexpected:?}");
        let back: Vec<_> = removed.intersection(&listed).collect();
        assert!(back.is_empty(), "removed keys came back: {back:?}");
        for label in &listed {
            let ok = if bases.contains(&label.as_str()) {
                verifies(&dir, label, &pa) || verifies(&dir, label, &pb)
            } else {
                verifies(&dir, label, &pa)
            };
            assert!(ok, "{label} does not decrypt");
        }
        let entries: Vec<String> = std::fs::read_dir(dir.keystore())
            .expect("read keystore")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        let key_files = entries.iter().filter(|n| n.ends_with(".key")).count();
        assert_eq!(key_files, listed.len(), "key files vs listed: {entries:?}");
        let temps = entries.iter().filter(|n| n.starts_with(".tmp-")).count();
        let total = |w: Landed| landed_by_op.iter().map(|o| o[w as usize]).sum::<usize>();
        let (before, during, after) = (
            total(Landed::Before),
            total(Landed::During),
            total(Landed::After),
        );
        #[allow(clippy::print_stderr)]
        {
            let by_op: Vec<String> = ["new", "passwd", "import", "export", "rm"]
                .iter()
                .zip(landed_by_op)
                .zip(&delays)
                .map(|((op, [b, d, a]), k)| format!("{op} {b}/{d}/{a} at {:.1} ms", k.us / 1e3))
                .collect();
            eprintln!(
                "crash test: {runs} runs, SIGKILLs before/during/after the writes: \
                 {before}/{during}/{after} ({}), {killed_with_temp} kills left a temp \
                 file, {} keys at the end ({} of them from killed new/import/rm runs), {} \
                 removed, 0 lost, {temps} temp files left",
                by_op.join(", "),
                listed.len(),
                listed.intersection(&maybe).count(),
                removed.len()
            );
        }
        assert!(
            during >= runs / 5,
            "only {during} of {runs} kills landed during the writes \
             ({before} before, {after} after)"
        );
    }
);

// `key show 0x<private key>` (a key pasted where a selector goes): not found, and the
// key is not printed back; the same for a mnemonic.
bctest!(
    selector_that_is_a_private_key_is_not_echoed,
    |dir: Dir, _cmd: TestCommand| {
        import_4646(&dir, "ops");
        let other = "5c".repeat(32);
        for selector in [
            format!("0x{other}"),
            "test test test test test test test test test test test junk".to_owned(),
        ] {
            for sub in ["show", "verify", "rm"] {
                let out = dir
                    .command()
                    .env("BRIDGECTL_PASSPHRASE", "pw")
                    .args(["key", sub, &selector])
                    .output();
                let text = format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
                assert_eq!(out.status.code(), Some(EXIT_NOT_FOUND), "{sub}: {text}");
                assert!(!text.contains(&other), "{sub} echoed the key: {text}");
                assert!(
                    !text.contains("test test test"),
                    "{sub} echoed the mnemonic: {text}"
                );
            }
        }
    }
);

// One vocabulary for a second passphrase: `--web3-passphrase-file` for a Web3 file's, on
// import and export alike (`--new-passphrase-file` for `key passwd`'s); the old
// spellings still work, out of sight.
bctest!(
    the_web3_passphrase_flag_and_its_old_spellings,
    |dir: Dir, _cmd: TestCommand| {
        import_4646(&dir, "ops");
        let pw = passfile(&dir, "pw", "pw");
        let file_pw = passfile(&dir, "file-pw", "file pw");
        for (export_flag, import_flag, out, keystore) in [
            (
                "--web3-passphrase-file",
                "--web3-passphrase-file",
                "a.json",
                "ks-a",
            ),
            (
                "--export-passphrase-file",
                "--file-passphrase-file",
                "b.json",
                "ks-b",
            ),
        ] {
            dir.command()
                .args(["key", "export", "ops", "--unsafe-test-kdf", "--out", out])
                .args([Path::new("--passphrase-file"), &pw])
                .args([Path::new(export_flag), &file_pw])
                .stdout();
            let v = dir
                .command()
                .args(["--json", "--keystore", keystore, "key", "import", "ops"])
                .args(["--unsafe-test-kdf", "--web3", out])
                .args([Path::new(import_flag), &file_pw])
                .args([Path::new("--passphrase-file"), &pw])
                .json();
            assert_eq!(v["address"], ADDR_4646, "{export_flag} {import_flag}");
        }
        for sub in ["export", "import"] {
            let help = dir.command().args(["key", sub, "--help"]).stdout();
            assert!(help.contains("--web3-passphrase-file"), "{help}");
            assert!(
                !help.contains("--export-passphrase-file") && !help.contains("--file-passphrase"),
                "{help}"
            );
        }
    }
);
