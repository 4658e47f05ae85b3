//! The README works as written: its walkthrough block (the fenced `sh walkthrough`) is
//! run by bash on a pseudo-terminal in a fresh home, against a sandbox started with the
//! README's own command, answering each question and passphrase prompt as a person
//! would. A README that drifts from the CLI fails here.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rexpect::process::WaitStatus;
use rexpect::reader::ReadUntil;

use crate::util::{Dir, TestCommand};

const PASS: &str = "walkthrough passphrase";

/// The fenced blocks of `text` whose info string is `sh walkthrough`.
fn walkthrough_blocks(text: &str) -> Vec<String> {
    text.split("```sh walkthrough\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap_or_default().to_owned())
        .collect()
}

/// `bridgectl sandbox --write-profile sandbox.toml`, the first terminal; stopped (with
/// its anvils) when dropped.
struct SandboxProcess(Child);

impl Drop for SandboxProcess {
    fn drop(&mut self) {
        // SIGTERM: the sandbox stops its anvils on the way out.
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

bctest!(
    the_readme_walkthrough_runs_as_written,
    |dir: Dir, _cmd: TestCommand| {
        let readme =
            std::fs::read_to_string(crate::util::repo_root().join("README.md")).expect("README");
        let blocks = walkthrough_blocks(&readme);
        assert_eq!(blocks.len(), 1, "one walkthrough block in the README");
        let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_bridgectl"))
            .parent()
            .expect("bin dir")
            .to_owned();
        let path = format!(
            "{}:{}",
            bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let fresh = |cmd: &mut Command| {
            dir.confine(cmd);
            // A new user has no BRIDGECTL_* settings: the README's exports are all there is.
            cmd.env_remove("BRIDGECTL_KEYSTORE").env("PATH", &path);
        };

        let mut sandbox = Command::new(env!("CARGO_BIN_EXE_bridgectl"));
        sandbox
            .args(["sandbox", "--write-profile", "sandbox.toml"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        fresh(&mut sandbox);
        let _sandbox = SandboxProcess(sandbox.spawn().expect("start the sandbox"));
        let started = Instant::now();
        while !dir.join("sandbox.toml").exists() {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "the sandbox wrote no profile"
            );
            std::thread::sleep(Duration::from_millis(200));
        }

        let mut bash = Command::new("bash");
        bash.args(["-e", "-c", &blocks[0]]);
        fresh(&mut bash);
        let mut p = rexpect::session::spawn_command(bash, Some(180_000)).expect("spawn on a pty");
        let mut answered = Vec::new();
        loop {
            let (_, matched) = p
                .exp_any(vec![
                    ReadUntil::String("passphrase for".into()),
                    ReadUntil::String("new passphrase".into()),
                    ReadUntil::String("repeat it: ".into()),
                    ReadUntil::String("[y/N]".into()),
                    ReadUntil::EOF,
                ])
                .expect("a prompt or the end");
            match matched.as_str() {
                "[y/N]" => {
                    p.send_line("y").expect("y");
                    answered.push("y");
                }
                "" => break,
                m if m.contains("passphrase") || m.contains("repeat") => {
                    if !m.ends_with(": ") {
                        p.exp_string(": ").expect("the rest of the prompt");
                    }
                    p.send_line(PASS).expect("passphrase");
                    answered.push("passphrase");
                }
                _ => break,
            }
        }
        let status = p.process().wait().expect("wait");
        assert!(
            matches!(status, WaitStatus::Exited(_, 0)),
            "the walkthrough failed ({status:?}) after answering {answered:?}"
        );
        // Two signatures (swap, redeem), each confirmed then unlocked; the import set the
        // passphrase (typed twice).
        assert_eq!(
            answered.iter().filter(|a| **a == "y").count(),
            2,
            "{answered:?}"
        );
        let journal = rusqlite::Connection::open(dir.join("xdg/state/bridgectl/journal.sqlite3"))
            .expect("journal");
        let completed: i64 = journal
            .query_row(
                "SELECT count(*) FROM flows WHERE state = 'completed'",
                [],
                |r| r.get(0),
            )
            .expect("count");
        assert_eq!(completed, 2, "the swap and the redeem completed");
    }
);
