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

/// `text` from outside (a delivery, a server's answer) made safe for a terminal:
/// control characters (ESC, CR, ...), and the bidirectional overrides that reorder
/// what is shown, become `\u{..}` escapes, and `\` becomes `\\`, so a forged field can
/// neither move the cursor nor hide the text beside it.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let bidi = matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        if c == '\\' {
            out.push_str("\\\\");
        } else if c.is_control() || bidi {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escape_leaves_nothing_a_terminal_would_act_on() {
        assert_eq!(escape("BLOCK_PERIOD"), "BLOCK_PERIOD");
        assert_eq!(escape("a\u{1b}[2Kb"), "a\\u{1b}[2Kb");
        assert_eq!(escape("x\r\ny\u{7f}"), "x\\u{d}\\u{a}y\\u{7f}");
        assert_eq!(escape("\u{202e}kcatta"), "\\u{202e}kcatta");
        assert_eq!(escape("a\\u{1b}"), "a\\\\u{1b}");
        assert!(!escape("\u{9b}31m").contains('\u{9b}'));
    }
}
