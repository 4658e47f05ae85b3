//! The keystore directory: selectors, uniqueness, permissions, passphrase change,
//! removal, leftovers of crashes, imports, and that no secret shows in `Debug`.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use bridgectl_keystore::{
    Error, KdfParams, Keystore, Passphrase, PassphraseProvider, PassphraseRequest, Purpose,
    SecretText, Web3Params, unlock_file,
};

const KEY_4646: &str = "4646464646464646464646464646464646464646464646464646464646464646";
const ADDR_4646: &str = "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F";
const ANVIL_MNEMONIC: &str = "test test test test test test test test test test test junk";

fn test_kdf() -> KdfParams {
    KdfParams::insecure_for_tests()
}

fn pass(s: &str) -> Passphrase {
    Passphrase::new(s.to_owned())
}

fn store() -> (tempfile::TempDir, Keystore) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Keystore::open(dir.path().join("ks")).expect("open");
    (dir, store)
}

fn import_4646(store: &Keystore, label: &str) -> bridgectl_keystore::KeyInfo {
    store
        .import_raw(
            &SecretText::new(format!("0x{KEY_4646}\n")),
            Some(label),
            &mut pass("pw"),
            &test_kdf(),
        )
        .expect("import")
}

/// Answers each purpose with its own passphrase and records what was asked.
struct Scripted {
    asked: Vec<Purpose>,
    unlock: &'static str,
    create: &'static str,
}

impl PassphraseProvider for Scripted {
    fn passphrase(&mut self, request: &PassphraseRequest<'_>) -> Result<Passphrase, Error> {
        self.asked.push(request.purpose);
        Ok(pass(match request.purpose {
            Purpose::Create | Purpose::ExportFile => self.create,
            Purpose::Unlock | Purpose::ImportFile => self.unlock,
        }))
    }
}

#[test]
fn creates_dir_0700_and_files_0600() {
    let (_d, store) = store();
    let mode = std::fs::metadata(store.dir())
        .expect("dir")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    let info = store
        .create(Some("ops"), &mut pass("pw"), &test_kdf())
        .expect("create");
    assert_eq!(info.path, store.dir().join("ops.key"));
    let mode = std::fs::metadata(&info.path)
        .expect("file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let signer = store.unlock("ops", &mut pass("pw")).expect("unlock");
    assert_eq!(signer.address(), info.address);
}

#[test]
fn selectors_address_any_case_label_and_id() {
    let (_d, store) = store();
    let info = import_4646(&store, "ops");
    let lower = ADDR_4646.to_lowercase();
    for sel in [
        ADDR_4646.to_owned(),
        lower.clone(),
        lower.trim_start_matches("0x").to_owned(),
        ADDR_4646.to_uppercase().replacen("0X", "0x", 1),
        "ops".to_owned(),
        info.id.to_string(),
    ] {
        assert_eq!(
            store.find(&sel).expect(&sel).address.to_checksum(None),
            ADDR_4646
        );
    }
    let err = store.find("nobody").expect_err("missing");
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    assert!(err.to_string().contains("'nobody'"), "{err}");
}

#[test]
fn ambiguous_selector_is_an_error() {
    let (_d, store) = store();
    let info = import_4646(&store, "ops");
    // A copy under another name (as a careless backup would make) has the same label.
    std::fs::copy(&info.path, store.dir().join("ops-copy.key")).expect("copy");
    let err = store.find("ops").expect_err("two files say 'ops'");
    assert!(matches!(err, Error::Ambiguous { .. }), "{err}");
}

#[test]
fn never_overwrites_label_or_address() {
    let (_d, store) = store();
    let first = import_4646(&store, "ops");
    let before = std::fs::read(&first.path).expect("read");
    let err = store
        .create(Some("ops"), &mut pass("other"), &test_kdf())
        .expect_err("same label");
    assert!(matches!(err, Error::AlreadyExists { .. }), "{err}");
    let err = store
        .import_raw(
            &SecretText::new(KEY_4646),
            Some("again"),
            &mut pass("x"),
            &test_kdf(),
        )
        .expect_err("same address");
    assert!(matches!(err, Error::AlreadyExists { .. }), "{err}");
    assert_eq!(
        std::fs::read(&first.path).expect("read"),
        before,
        "file changed"
    );
    assert_eq!(store.list().expect("list").len(), 1);
}

/// Modes that give group or others some access to a file of the owner's (0600 plus one
/// bit, and the usual umask results): each must be refused, the group's alone as much as
/// the others'.
const OPEN_FILE_MODES: &[u32] = &[
    0o640, 0o620, 0o610, 0o660, 0o604, 0o602, 0o601, 0o644, 0o666, 0o670, 0o607,
];

#[test]
fn group_or_world_access_is_refused_with_a_fix() {
    let (_d, store) = store();
    let info = import_4646(&store, "ops");
    for &mode in OPEN_FILE_MODES {
        std::fs::set_permissions(&info.path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        let err = store
            .unlock("ops", &mut pass("pw"))
            .expect_err("a key file open to group or others");
        assert!(
            matches!(err, Error::InsecurePermissions { mode: m, .. } if m == mode),
            "{mode:o}: {err}"
        );
        assert!(err.to_string().contains("chmod 600"), "{mode:o}: {err}");
    }
    // The owner's own bits, whatever they are, are not the check's business.
    for mode in [0o600, 0o400, 0o700] {
        std::fs::set_permissions(&info.path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        store
            .unlock("ops", &mut pass("pw"))
            .unwrap_or_else(|e| panic!("{mode:o} refused: {e}"));
    }
    std::fs::set_permissions(&info.path, std::fs::Permissions::from_mode(0o600)).expect("chmod");

    for mode in [0o750, 0o770, 0o710, 0o705, 0o701, 0o755] {
        std::fs::set_permissions(store.dir(), std::fs::Permissions::from_mode(mode))
            .expect("chmod");
        let err = Keystore::open(store.dir()).expect_err("a keystore dir open to others");
        assert!(err.to_string().contains("chmod 700"), "{mode:o}: {err}");
    }
    std::fs::set_permissions(store.dir(), std::fs::Permissions::from_mode(0o700)).expect("chmod");
}

#[test]
fn symlinked_key_file_is_refused() {
    let (d, store) = store();
    let info = import_4646(&store, "ops");
    let outside = d.path().join("outside.key");
    std::fs::rename(&info.path, &outside).expect("move out");
    std::os::unix::fs::symlink(&outside, &info.path).expect("symlink");
    let err = store.list().expect_err("symlink");
    assert!(err.to_string().contains("not a regular file"), "{err}");
}

#[test]
fn change_passphrase_keeps_identity_and_replaces_file() {
    let (_d, store) = store();
    let info = import_4646(&store, "ops");
    let mut p = Scripted {
        asked: vec![],
        unlock: "pw",
        create: "new pw",
    };
    let after = store
        .change_passphrase("ops", &mut p, &test_kdf())
        .expect("passwd");
    assert_eq!(p.asked, [Purpose::Unlock, Purpose::Create]);
    assert_eq!(
        (after.id, &after.created_at, &after.label),
        (info.id, &info.created_at, &info.label)
    );
    let err = store
        .unlock("ops", &mut pass("pw"))
        .expect_err("old passphrase");
    assert!(matches!(err, Error::WrongPassphrase { .. }), "{err}");
    assert_eq!(
        store
            .unlock("ops", &mut pass("new pw"))
            .expect("new")
            .address(),
        info.address
    );

    // A wrong current passphrase changes nothing.
    let before = std::fs::read(&info.path).expect("read");
    let mut p = Scripted {
        asked: vec![],
        unlock: "wrong",
        create: "x",
    };
    let err = store
        .change_passphrase("ops", &mut p, &test_kdf())
        .expect_err("wrong");
    assert!(matches!(err, Error::WrongPassphrase { .. }), "{err}");
    assert_eq!(
        p.asked,
        [Purpose::Unlock],
        "must not ask for a new passphrase"
    );
    assert_eq!(std::fs::read(&info.path).expect("read"), before);
}

#[test]
fn remove_deletes_only_that_key() {
    let (_d, store) = store();
    import_4646(&store, "ops");
    store
        .create(Some("other"), &mut pass("pw"), &test_kdf())
        .expect("create");
    let gone = store.remove("ops").expect("rm");
    assert!(!gone.path.exists());
    let left: Vec<_> = store
        .list()
        .expect("list")
        .into_iter()
        .map(|k| k.label)
        .collect();
    assert_eq!(left, ["other"]);
}

#[test]
fn crash_leftovers_are_never_keys_and_get_cleaned() {
    let (_d, store) = store();
    let info = import_4646(&store, "ops");
    // What a writer killed before its rename leaves behind.
    let tmp = store.dir().join(".tmp-0123456789abcdef");
    std::fs::copy(&info.path, &tmp).expect("copy");
    assert_eq!(store.list().expect("list").len(), 1);
    store
        .create(Some("next"), &mut pass("pw"), &test_kdf())
        .expect("create");
    assert!(!tmp.exists(), "the next writer removes stale temp files");
}

#[test]
fn kdf_floor_and_defaults() {
    let err = KdfParams::new(16 * 1024, 3, 1).expect_err("below OWASP");
    assert!(matches!(err, Error::WeakKdf { .. }), "{err}");
    let (_d, store) = store();
    let info = store
        .create(Some("def"), &mut pass("pw"), &KdfParams::default())
        .expect("create");
    assert_eq!((info.kdf.m_kib, info.kdf.t, info.kdf.p), (65536, 3, 4));
}

#[test]
fn kdf_caps_are_inclusive_and_parameters_argon2_refuses_are_refused() {
    use bridgectl_keystore::{MAX_M_KIB, MAX_P, MAX_T, MIN_M_KIB, MIN_T};
    // Exactly at every cap: allowed (nothing is derived here, only checked).
    KdfParams::new(MAX_M_KIB, MAX_T, MAX_P).expect("at the caps");
    for (m, t, p) in [
        (MAX_M_KIB + 1, MIN_T, 1),
        (MIN_M_KIB, MAX_T + 1, 1),
        (MIN_M_KIB, MIN_T, MAX_P + 1),
    ] {
        let err = KdfParams::new(m, t, p).expect_err("over a cap");
        assert!(
            matches!(err, Error::ExcessiveWork { .. }),
            "{m} {t} {p}: {err}"
        );
    }
    // Within the caps but not valid Argon2id (no lane): refused before any use.
    let err = KdfParams::new(MIN_M_KIB, MIN_T, 0).expect_err("p = 0");
    assert!(matches!(err, Error::WeakKdf { .. }), "{err}");
}

#[test]
fn raw_import_rejects_bad_keys_without_echoing_them() {
    let (_d, store) = store();
    for (bad, why) in [
        ("12", "64 hex digits"),
        (&"zz".repeat(32)[..], "not hexadecimal"),
        (&"00".repeat(32)[..], "group order"),
        (&"ff".repeat(32)[..], "group order"),
    ] {
        let err = store
            .import_raw(&SecretText::new(bad), None, &mut pass("pw"), &test_kdf())
            .expect_err(bad);
        assert!(err.to_string().contains(why), "{err}");
        assert!(
            bad.len() < 8 || !err.to_string().contains(bad),
            "key echoed: {err}"
        );
    }
}

#[test]
fn mnemonic_import_with_default_and_explicit_path() {
    let (_d, store) = store();
    let phrase = SecretText::new(format!("  {ANVIL_MNEMONIC} \n"));
    let a = store
        .import_mnemonic(&phrase, None, Some("a0"), &mut pass("pw"), &test_kdf())
        .expect("m/44'/60'/0'/0/0");
    assert_eq!(
        a.address.to_checksum(None),
        "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
    );
    let b = store
        .import_mnemonic(
            &phrase,
            Some("m/44'/60'/0'/0/1"),
            Some("a1"),
            &mut pass("pw"),
            &test_kdf(),
        )
        .expect("index 1");
    assert_eq!(
        b.address.to_checksum(None),
        "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
    );

    let typo = SecretText::new(ANVIL_MNEMONIC.replace("junk", "junkk"));
    let err = store
        .import_mnemonic(&typo, None, None, &mut pass("pw"), &test_kdf())
        .expect_err("bad word");
    assert!(!err.to_string().contains("junk"), "phrase echoed: {err}");
    let err = store
        .import_mnemonic(&phrase, Some("m/44'/x"), None, &mut pass("pw"), &test_kdf())
        .expect_err("bad path");
    assert!(err.to_string().contains("derivation path"), "{err}");
}

#[test]
fn web3_import_asks_file_passphrase_then_new_one() {
    let (_d, store) = store();
    let vector = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../keystore-fixtures/web3_pbkdf2_vector.json");
    let mut p = Scripted {
        asked: vec![],
        unlock: "testpassword",
        create: "mine",
    };
    let info = store
        .import_web3_file(&vector, Some("vec"), &mut p, &test_kdf())
        .expect("import");
    assert_eq!(p.asked, [Purpose::ImportFile, Purpose::Create]);
    assert_eq!(
        info.address.to_checksum(None),
        "0x008AeEda4D805471dF9b2A5B0f38A0C3bCBA786b"
    );
    assert_eq!(
        store
            .unlock("vec", &mut pass("mine"))
            .expect("unlock")
            .address(),
        info.address
    );
}

#[test]
fn export_round_trips_through_web3() {
    let (d, store) = store();
    let info = import_4646(&store, "ops");
    let mut p = Scripted {
        asked: vec![],
        unlock: "pw",
        create: "export pw",
    };
    let (_, json) = store
        .export_web3("ops", &mut p, &Web3Params::insecure_for_tests())
        .expect("export");
    assert_eq!(p.asked, [Purpose::Unlock, Purpose::ExportFile]);
    let file = d.path().join("export.json");
    std::fs::write(&file, &json).expect("write");
    let signer = unlock_file(&file, &mut pass("export pw")).expect("unlock export");
    assert_eq!(signer.address(), info.address);
    assert_eq!(hex::encode(signer.to_bytes()), KEY_4646);
}

#[test]
fn passphrase_is_asked_only_after_the_file_checks() {
    let (_d, store) = store();
    let info = import_4646(&store, "ops");
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&info.path).expect("read")).expect("json");
    v["kdf"]["m_kib"] = (4u32 * 1024 * 1024).into();
    std::fs::write(&info.path, serde_json::to_vec(&v).expect("json")).expect("write");
    let mut p = Scripted {
        asked: vec![],
        unlock: "pw",
        create: "x",
    };
    // list must fail too: the file is hostile.
    let err = store.unlock(ADDR_4646, &mut p).expect_err("excessive");
    assert!(matches!(err, Error::ExcessiveWork { .. }), "{err}");
    assert!(p.asked.is_empty(), "asked for a passphrase before refusing");
}

/// `Debug` of every secret-holding type (ours and the alloy signer we return) shows no
/// key material and no passphrase.
#[test]
fn debug_output_has_no_secrets() {
    let (_d, store) = store();
    let secret_hex = KEY_4646;
    let passphrase = "correct horse battery staple";
    let info = store
        .import_raw(
            &SecretText::new(secret_hex),
            Some("ops"),
            &mut pass(passphrase),
            &test_kdf(),
        )
        .expect("import");
    let signer = store.unlock("ops", &mut pass(passphrase)).expect("unlock");
    let wrong = store.unlock("ops", &mut pass("nope")).expect_err("wrong");
    let key_bytes = signer.to_bytes();
    let request = PassphraseRequest {
        purpose: Purpose::Unlock,
        key: Some(&info),
    };
    let debugs = [
        format!("{:?}", pass(passphrase)),
        format!("{:#?}", pass(passphrase)),
        format!("{:?}", SecretText::new(secret_hex)),
        format!("{:?}", SecretText::new(ANVIL_MNEMONIC)),
        format!("{signer:?}"),
        format!("{signer:#?}"),
        format!("{:?}", signer.credential()),
        format!("{store:?}"),
        format!("{info:?}"),
        format!("{request:?}"),
        format!("{wrong:?}"),
        format!("{:?}", KdfParams::default()),
        format!("{:?}", Web3Params::default()),
    ];
    let needles = [
        secret_hex.to_owned(),
        secret_hex.to_uppercase(),
        format!("{:?}", key_bytes.0),       // [70, 70, ...]
        format!("{:?}", &key_bytes.0[..8]), // [70, 70, 70, ...
        passphrase.to_owned(),
        "test test".to_owned(),
    ];
    for d in &debugs {
        for n in &needles {
            assert!(
                !d.contains(n.trim_end_matches(']')),
                "secret in Debug output: {d}"
            );
        }
    }
}

#[test]
fn concurrent_writers_are_serialised() {
    let (_d, store) = store();
    let store = std::sync::Arc::new(store);
    // Distinct labels: all land. The same label from several threads: exactly one wins.
    let handles: Vec<_> = (0..12)
        .map(|i| {
            let store = store.clone();
            std::thread::spawn(move || {
                let label = if i < 8 {
                    format!("k{i}")
                } else {
                    "same".to_owned()
                };
                store.create(Some(&label), &mut pass("pw"), &test_kdf())
            })
        })
        .collect();
    let results: Vec<_> = handles
        .into_iter()
        .map(|h| h.join().expect("thread"))
        .collect();
    assert!(results[..8].iter().all(|r| r.is_ok()), "{results:?}");
    let same_ok = results[8..].iter().filter(|r| r.is_ok()).count();
    assert_eq!(same_ok, 1, "{results:?}");
    for r in &results[8..] {
        if let Err(e) = r {
            assert!(matches!(e, Error::AlreadyExists { .. }), "{e}");
        }
    }
    let keys = store.list().expect("list");
    assert_eq!(keys.len(), 9);
    for k in keys {
        store
            .unlock(&k.label, &mut pass("pw"))
            .expect("every key unlocks");
    }
}

/// `key show 0x<private key>` by mistake: the "not found" error must not print the key
/// back, nor a mnemonic; an address or label that matches nothing is still named.
#[test]
fn selector_that_looks_like_key_material_is_never_echoed() {
    let (_dir, store) = store();
    import_4646(&store, "ops");
    let other_key = "5c".repeat(32);
    for selector in [
        format!("0x{other_key}"),
        other_key.clone(),
        ANVIL_MNEMONIC.to_owned(),
    ] {
        let err = store.find(&selector).expect_err("no such key");
        let text = err.to_string();
        assert!(!text.contains(&other_key), "key echoed: {text}");
        assert!(!text.contains("test test test"), "mnemonic echoed: {text}");
        assert!(text.contains("<redacted"), "{text}");
    }
    let addr = "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23";
    assert!(
        store
            .find(addr)
            .expect_err("absent")
            .to_string()
            .contains(addr)
    );
    assert!(
        store
            .find("nope")
            .expect_err("absent")
            .to_string()
            .contains("nope")
    );
}

/// Token and passphrase files get the key files' rule and message.
#[test]
fn private_files_open_to_others_are_refused_like_key_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("token");
    std::fs::write(&path, "t\n").expect("write");
    for &mode in OPEN_FILE_MODES {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        let err = bridgectl_keystore::check_private_file(&path).expect_err("refused");
        assert_eq!(err.kind(), "insecure_permissions", "{mode:o}");
        assert!(err.to_string().contains("are too open"), "{mode:o}: {err}");
        assert!(err.to_string().contains("chmod 600"), "{mode:o}: {err}");
    }
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    bridgectl_keystore::check_private_file(&path).expect("0600 accepted");
}

#[test]
fn labels_are_1_to_64_characters_and_a_refused_one_is_quoted_only_when_safe() {
    let (_dir, store) = store();
    let invalid = |label: &str| match store.import_raw(
        &SecretText::new(format!("0x{KEY_4646}\n")),
        Some(label),
        &mut pass("pw"),
        &test_kdf(),
    ) {
        Err(Error::InvalidLabel { label, reason }) => (label, reason),
        other => panic!("{label:?}: expected InvalidLabel, got {other:?}"),
    };
    // 65 characters: refused, and shown by its length only.
    let (shown, reason) = invalid(&"k".repeat(65));
    assert_eq!(shown, "<65 characters>");
    assert!(reason.contains("1 to 64"), "{reason}");
    // Characters outside the safe alphabet (a terminal escape): never echoed.
    let (shown, _) = invalid("a\u{1b}[2Kb");
    assert_eq!(shown, "<6 characters>");
    // A safe, short label refused for another rule is quoted as it is.
    let (shown, reason) = invalid(".hidden");
    assert_eq!(shown, ".hidden");
    assert!(reason.contains("must not start with"), "{reason}");
    // 64 characters is allowed.
    assert_eq!(import_4646(&store, &"k".repeat(64)).label, "k".repeat(64));
}

/// A command that lists the keys once finds its key among them and unlocks it as found,
/// reading its file again but not the directory; a file that is no longer that key (moved
/// over by another key) is refused, naming it, before any passphrase is asked.
#[test]
fn a_key_found_in_a_listing_unlocks_as_found_and_only_as_found() {
    let (_d, store) = store();
    let first = import_4646(&store, "first");
    let keys = store.list().expect("list");
    let found = store.find_in(&keys, "first").expect("find_in");
    assert_eq!(found.path, first.path);
    assert_eq!(
        store.signers_among(&keys).expect("signers"),
        store.signers().expect("signers")
    );
    let signer = store
        .unlock_key(&found, &mut pass("pw"))
        .expect("unlock_key");
    assert_eq!(signer.address().to_string(), ADDR_4646);

    // Another key's file put in its place since the listing.
    let other = store
        .import_raw(
            &SecretText::new(format!("0x{}\n", "47".repeat(32))),
            Some("other"),
            &mut pass("pw"),
            &test_kdf(),
        )
        .expect("import other");
    std::fs::rename(&other.path, &found.path).expect("move over");
    let mut asked = Scripted {
        asked: Vec::new(),
        unlock: "pw",
        create: "pw",
    };
    let err = store
        .unlock_key(&found, &mut asked)
        .expect_err("no longer the key found")
        .to_string();
    assert!(err.contains("the file changed since it was found"), "{err}");
    assert!(
        asked.asked.is_empty(),
        "no passphrase asked: {:?}",
        asked.asked
    );

    // Another key's file under the found key's id: the id alone does not make it that
    // key. Its address is not the one found, and it is refused as such, before any
    // passphrase is asked (the decryption would refuse it later: its id is bound to it).
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&found.path).expect("read")).expect("json");
    v["id"] = found.id.to_string().into();
    let other_path = store.dir().join("other-under-the-found-id");
    std::fs::write(&other_path, serde_json::to_vec(&v).expect("json")).expect("write");
    std::fs::set_permissions(&other_path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    std::fs::rename(&other_path, &found.path).expect("move over");
    let mut asked = Scripted {
        asked: Vec::new(),
        unlock: "pw",
        create: "pw",
    };
    let err = store
        .unlock_key(&found, &mut asked)
        .expect_err("another address under the found id");
    assert_eq!(err.kind(), "malformed", "{err}");
    assert!(
        err.to_string()
            .contains(&format!("no longer key {} ({})", found.id, found.address)),
        "{err}"
    );
    assert!(
        asked.asked.is_empty(),
        "no passphrase asked: {:?}",
        asked.asked
    );
}
