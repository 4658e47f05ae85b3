//! What a signature costs the disk: the fsyncs of `bridgectl sign`, counted by a shim
//! preloaded into the process (it wraps `fsync` and `fdatasync` and writes down the file
//! each was made on). "The signed bytes are durable before they leave" needs one durable
//! write in the keystore's signing log and then one in the journal; every other fsync on
//! that path is a cost without a promise (`bench/fsyncs.sh` prints the same counts for
//! every operation, `crates/local/src/sqlite.rs` says where the others went).

use std::path::PathBuf;
use std::process::Command;

use crate::util::{Dir, TestCommand, assert_success};

const SHIM: &str = r#"
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void note(int fd) {
    const char *log = getenv("SYNC_LOG");
    if (!log) return;
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    path[n < 0 ? 0 : n] = 0;
    int out = open(log, O_WRONLY | O_APPEND | O_CREAT, 0600);
    if (out >= 0) { dprintf(out, "%s\n", path); close(out); }
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    note(fd);
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    note(fd);
    return real(fd);
}
"#;

/// The preloaded counter: built with the C compiler the bundled SQLite needs anyway.
struct SyncCounter {
    lib: PathBuf,
    log: PathBuf,
}

impl SyncCounter {
    fn new(dir: &Dir) -> SyncCounter {
        let source = dir.write("sync-count.c", SHIM);
        let lib = dir.join("sync-count.so");
        let out = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
            .args(["-shared", "-fPIC", "-O2", "-o"])
            .arg(&lib)
            .arg(&source)
            .arg("-ldl")
            .output()
            .expect("run the C compiler");
        assert_success(&Command::new("cc"), &out);
        SyncCounter {
            lib,
            log: dir.join("syncs.txt"),
        }
    }

    /// Runs `cmd` (which must succeed) with the counter; returns the names of the files
    /// synced, in order (a directory by its own name).
    fn syncs(&self, cmd: &mut TestCommand) -> Vec<String> {
        let _ = std::fs::remove_file(&self.log);
        cmd.env("LD_PRELOAD", &self.lib).env("SYNC_LOG", &self.log);
        cmd.stdout();
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|p| p.rsplit('/').next().unwrap_or(p).to_owned())
            .collect()
    }
}

const KEY: &str = "4646464646464646464646464646464646464646464646464646464646464646";
const FROM: &str = "0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f";
const REDEEM_1_5: &str =
    "0xdb006a7500000000000000000000000000000000000000000000000014d1120d7b160000";

/// `bridgectl sign --yes` of a redeem with nonce `nonce`, every field pinned by flags.
fn sign(dir: &Dir, nonce: u64, first: bool) -> TestCommand {
    let raw = dir.write(
        format!("raw-{nonce}.json"),
        format!(
            r#"{{"from":"{FROM}","to":"0x3535353535353535353535353535353535353535","data":"{REDEEM_1_5}","nonce":"{nonce:#x}","gasLimit":"0x186a0","gasPrice":"0x4a817c800","chainId":617317}}"#
        ),
    );
    let mut cmd = dir.command();
    cmd.args(["sign", "--yes", "--raw", "--expect-chain-id", "617317"])
        .args(["--expect-to", "0x3535353535353535353535353535353535353535"])
        .args(["--expect-function", "redeem"])
        .args(["--expect-arg", "_amount=1500000000000000000"])
        .args(["--max-gas-price", "30gwei"])
        .args([&raw])
        .env("BRIDGECTL_PASSPHRASE", "pass");
    if first {
        cmd.args(["--nonce", &nonce.to_string()]);
    }
    cmd
}

#[test]
fn an_offline_signature_costs_one_fsync_in_the_log_and_one_in_the_journal() {
    let dir = Dir::new("sync-count");
    let counter = SyncCounter::new(&dir);
    let out = dir
        .command()
        .args(["key", "import", "k", "--raw", "--unsafe-test-kdf"])
        .env("BRIDGECTL_PASSPHRASE", "pass")
        .output_with_stdin(KEY.as_bytes());
    assert_success(&Command::new("bridgectl key import"), &out);

    // A new signing log and a new journal: each file is synced once as a whole, with its
    // directory, then the two commits.
    let first = counter.syncs(&mut sign(&dir, 0, true));
    let state = "bridgectl".to_string();
    let keystore = dir
        .keystore()
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert_eq!(
        first,
        [
            "journal.sqlite3",
            &state,
            "signing-log.sqlite3",
            &keystore,
            "signing-log.sqlite3-wal",
            "journal.sqlite3-wal"
        ],
        "the first signature"
    );

    // Steady state: the signing log's entry, then the journal's record of the bytes.
    for nonce in 1..4 {
        let steady = counter.syncs(&mut sign(&dir, nonce, false));
        assert_eq!(
            steady,
            ["signing-log.sqlite3-wal", "journal.sqlite3-wal"],
            "signature {nonce}"
        );
    }

    // A new journal beside an existing log (a second machine's journal, a reset one):
    // at most five, as the budget says.
    let journal = dir.join("xdg/state/bridgectl/journal.sqlite3");
    for suffix in ["", "-wal", "-shm"] {
        std::fs::remove_file(format!("{}{suffix}", journal.display())).expect("remove");
    }
    let fresh = counter.syncs(&mut sign(&dir, 4, true));
    assert_eq!(
        fresh,
        [
            "journal.sqlite3",
            &state,
            "signing-log.sqlite3-wal",
            "journal.sqlite3-wal"
        ],
        "a new journal"
    );
}
