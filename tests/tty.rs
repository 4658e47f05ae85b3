//! The prompts under a real pseudo-terminal: the request comes on stdin (piped from a
//! file, as on an air-gapped machine) while the confirmation and the passphrase are
//! asked on the terminal. y with a mistyped passphrase then the right one signs; N
//! declines without asking for the passphrase; Ctrl-C at the question ends the process
//! and nothing is written.

use std::path::{Path, PathBuf};
use std::process::Command;

use rexpect::process::{Signal, WaitStatus};
use rexpect::session::PtySession;
use serde_json::Value;

use crate::util::{Dir, TestCommand};

const PASS: &str = "correct horse";
const KEY: &str = "4646464646464646464646464646464646464646464646464646464646464646";
const PROMPT: &str = "sign this transaction? [y/N]";

/// The good request of the hostile-offline cases and its offline profile.
fn request(dir: &Dir) -> (PathBuf, PathBuf) {
    let path =
        crate::util::repo_root().join("crates/tx/tests/hostile-offline/ok_redeem_request.json");
    let case: Value = serde_json::from_slice(&std::fs::read(path).expect("case")).expect("json");
    let config = crate::offline::config(dir, "offline", &case["profile"]);
    let input = dir.write(
        "request.json",
        serde_json::to_vec_pretty(&case["input"]).expect("input"),
    );
    (input, config)
}

/// `bridgectl sign - < INPUT` on a fresh pseudo-terminal (its controlling terminal),
/// writing the bundle to `out`, with its own journal.
fn spawn_sign(dir: &Dir, input: &Path, config: &Path, out: &str) -> PtySession {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", r#"f=$1; shift; exec "$@" < "$f""#, "sh"])
        .arg(input)
        .arg(env!("CARGO_BIN_EXE_bridgectl"))
        .args(["sign", "-", "--nonce", "4", "--config"])
        .arg(config)
        .args(["--journal", &format!("{out}.sqlite3"), "--out", out]);
    dir.confine(&mut cmd);
    // A test run from a background job (an asynchronous list of a non-interactive shell,
    // as CI scripts often start one) inherits SIGINT ignored, and an ignored signal stays
    // ignored across exec: ^C at this pty must reach the program as it would at a
    // person's terminal, so its default action is restored in the child.
    // SAFETY: signal(2) is async-signal-safe; nothing else runs between fork and exec.
    #[allow(unsafe_code)]
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    rexpect::session::spawn_command(cmd, Some(30_000)).expect("spawn on a pty")
}

fn exit_code(p: &PtySession) -> WaitStatus {
    p.process().wait().expect("wait")
}

bctest!(
    prompts_on_the_terminal_while_the_request_is_piped,
    |dir: Dir, _cmd: TestCommand| {
        crate::offline::import_key(&dir);
        let (input, config) = request(&dir);

        // y, a mistyped passphrase, then the right one: signed.
        let mut p = spawn_sign(&dir, &input, &config, "yes.json");
        p.exp_string("_amount      1 ST").expect("summary");
        p.exp_string(PROMPT).expect("question");
        p.send_line("y").expect("y");
        p.exp_string("passphrase for key 'k'")
            .expect("passphrase prompt");
        p.send_line("not the passphrase").expect("wrong");
        p.exp_string("wrong passphrase, try again (2 of 3)")
            .expect("second chance");
        p.exp_string("passphrase for key 'k'").expect("asked again");
        p.send_line(PASS).expect("right");
        p.exp_string("signed 0x").expect("signed");
        p.exp_eof().expect("eof");
        assert!(
            matches!(exit_code(&p), WaitStatus::Exited(_, 0)),
            "y then the right passphrase signs"
        );
        let bundle: Value =
            serde_json::from_slice(&std::fs::read(dir.join("yes.json")).expect("bundle"))
                .expect("json");
        assert_eq!(bundle["requestKind"], "sign-request");

        // N: declined, the passphrase never asked for, nothing written.
        let mut p = spawn_sign(&dir, &input, &config, "no.json");
        p.exp_string(PROMPT).expect("question");
        p.send_line("N").expect("N");
        let rest = p.exp_eof().expect("eof");
        assert!(
            rest.contains("declined at the confirmation prompt"),
            "{rest}"
        );
        assert!(!rest.contains("passphrase for key"), "{rest}");
        assert!(matches!(exit_code(&p), WaitStatus::Exited(_, 5)));
        assert!(!dir.join("no.json").exists());

        // Ctrl-C at the question: the process ends by SIGINT, nothing written.
        let mut p = spawn_sign(&dir, &input, &config, "interrupted.json");
        p.exp_string(PROMPT).expect("question");
        // Polled rather than read to EOF: on a loaded machine the terminal's output can
        // lag the process's end. ^C is typed again every two seconds, as a person would.
        let mut ended = None;
        for tick in 0..300 {
            if tick % 20 == 0 {
                p.send_control('c').expect("ctrl-c");
            }
            match p.process().status() {
                Some(WaitStatus::StillAlive) | None => {
                    std::thread::sleep(std::time::Duration::from_millis(100))
                }
                Some(status) => {
                    ended = Some(status);
                    break;
                }
            }
        }
        assert!(
            matches!(ended, Some(WaitStatus::Signaled(_, Signal::SIGINT, _))),
            "Ctrl-C ends it: {ended:?}"
        );
        assert!(!dir.join("interrupted.json").exists());
    }
);

bctest!(
    a_piped_key_import_asks_for_the_passphrase_on_the_terminal,
    |dir: Dir, _cmd: TestCommand| {
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            r#"echo "$1" | "$2" key import dev --raw --unsafe-test-kdf"#,
            "sh",
        ])
        .arg(KEY)
        .arg(env!("CARGO_BIN_EXE_bridgectl"));
        dir.confine(&mut cmd);
        let mut p = rexpect::session::spawn_command(cmd, Some(30_000)).expect("spawn");
        p.exp_string("new passphrase for key").expect("prompt");
        p.send_line(PASS).expect("pass");
        p.exp_string("repeat it").expect("repeat");
        p.send_line(PASS).expect("again");
        p.exp_eof().expect("eof");
        assert!(matches!(exit_code(&p), WaitStatus::Exited(_, 0)));
        let shown = dir.command().args(["--json", "key", "show", "dev"]).json();
        assert_eq!(
            shown["address"].as_str().expect("address").to_lowercase(),
            "0x9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f"
        );
    }
);
