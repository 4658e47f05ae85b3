//! Library words in library crates: an error or doc of `crates/*/src` names what a
//! caller of the library gives (a policy setting, a condition's period), never a flag of
//! our CLI, because a wallet that embeds the crate has no such flag. The CLI adds its
//! flags in `hint:` lines (src/exit.rs). This is the issue's check,
//! `grep -rn -- "--[a-z]" crates/*/src`, with the few places that describe the CLI or
//! another program's command line listed below.

use std::path::{Path, PathBuf};

/// `(file, text on the line)`: the only lines of `crates/*/src` that may hold `--x`.
/// Each says why; an entry that no longer matches fails the test, so the list stays
/// as small as what it allows.
const ALLOWED: &[(&str, &str)] = &[
    // anvil's own command line, which the sandbox starts: not our flags.
    (
        "crates/sandbox/src/anvil.rs",
        r#"cmd.args(["--host", "127.0.0.1""#,
    ),
    ("crates/sandbox/src/anvil.rs", r#".args(["--chain-id""#),
    (
        "crates/sandbox/src/anvil.rs",
        r#".args(["--slots-in-an-epoch""#,
    ),
    ("crates/sandbox/src/anvil.rs", r#"cmd.arg("--no-mining")"#),
    // initdb's and setpriv's command lines, which the sandbox's PostgreSQL server runs.
    (
        "crates/sandbox/src/postgres.rs",
        r#".args(["-U", "postgres", "--auth=trust""#,
    ),
    (
        "crates/sandbox/src/postgres.rs",
        r#"format!("--reuid={NOBODY}")"#,
    ),
    (
        "crates/sandbox/src/postgres.rs",
        r#"format!("--regid={NOBODY}")"#,
    ),
    (
        "crates/sandbox/src/postgres.rs",
        r#""--clear-groups".to_owned()"#,
    ),
    (
        "crates/sandbox/src/postgres.rs",
        r#"c.args(["--pdeathsig", "KILL"])"#,
    ),
    // The sandbox config's module doc describes the CLI command that loads it.
    (
        "crates/sandbox/src/config.rs",
        "(`bridgectl sandbox --sandbox-config FILE`)",
    ),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Whether `line` holds `--` followed by a lowercase letter, as the issue's grep does.
fn names_a_flag(line: &str) -> bool {
    line.as_bytes()
        .windows(3)
        .any(|w| w[0] == b'-' && w[1] == b'-' && w[2].is_ascii_lowercase())
}

/// Every Rust file of `crates/*/src`, sorted.
fn library_sources(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for krate in std::fs::read_dir(root.join("crates")).expect("crates/") {
        let src = krate.expect("crate dir").path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    files.sort();
    files
}

/// Every `(file, line number, line)` of `crates/*/src` that holds `--x`.
fn flag_lines(root: &Path) -> Vec<(String, usize, String)> {
    let mut found = Vec::new();
    for file in library_sources(root) {
        let rel = file
            .strip_prefix(root)
            .expect("under the root")
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(&file).expect("read source");
        for (i, line) in text.lines().enumerate() {
            if names_a_flag(line) {
                found.push((rel.clone(), i + 1, line.to_owned()));
            }
        }
    }
    found
}

#[test]
fn no_cli_flag_in_library_messages_or_docs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let found = flag_lines(root);
    let stray: Vec<String> = found
        .iter()
        .filter(|(file, _, line)| {
            !ALLOWED
                .iter()
                .any(|(f, text)| f == file && line.contains(text))
        })
        .map(|(file, n, line)| format!("{file}:{n}: {}", line.trim()))
        .collect();
    assert!(
        stray.is_empty(),
        "library crates name CLI flags (say it in library words; the CLI adds its flag in \
         a hint):\n{}",
        stray.join("\n")
    );
    let stale: Vec<_> = ALLOWED
        .iter()
        .filter(|(f, text)| {
            !found
                .iter()
                .any(|(file, _, line)| file == f && line.contains(text))
        })
        .collect();
    assert!(
        stale.is_empty(),
        "allow-list entries that match nothing: {stale:?}"
    );
}

#[test]
fn the_check_sees_a_flag() {
    assert!(names_a_flag("/// `--period`: blocks per notification"));
    assert!(!names_a_flag("a -- b, x-y, --, ---"));
}

/// The same for the CLI's commands: no library message (a line of code, not a comment)
/// tells the reader to run `bridgectl <command>`; the CLI's hint does (`src/exit.rs`).
#[test]
fn no_cli_command_in_library_messages() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for file in library_sources(root) {
        let text = std::fs::read_to_string(&file).expect("read source");
        for (i, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if !code.starts_with("//") && names_a_command(code) {
                found.push(format!("{}:{}: {}", file.display(), i + 1, code));
            }
        }
    }
    assert!(
        found.is_empty(),
        "library messages name CLI commands:\n{}",
        found.join("\n")
    );
}

/// Whether `line` holds `` `bridgectl `` followed by a lowercase word.
fn names_a_command(line: &str) -> bool {
    line.match_indices("`bridgectl ").any(|(i, m)| {
        line[i + m.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase())
    })
}

#[test]
fn the_command_check_sees_a_command() {
    assert!(names_a_command(
        r#""finish it with `bridgectl resume {by}`""#
    ));
    assert!(!names_a_command("the `bridgectl` binary"));
}
