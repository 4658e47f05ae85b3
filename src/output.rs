//! Writing results: text for people on stdout, JSON for scripts, progress on stderr.
//!
//! Everything the CLI prints goes through here so `--json` is honoured in one place.

use std::io::Write;

use serde::Serialize;

/// Prints `value` as pretty JSON followed by a newline on stdout.
pub fn json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}

/// Prints a line of text on stdout.
pub fn line(text: impl std::fmt::Display) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")?;
    Ok(())
}

/// Prints a line on stderr: progress, warnings and prompts that must not pollute stdout.
pub fn note(text: impl std::fmt::Display) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{text}");
}
