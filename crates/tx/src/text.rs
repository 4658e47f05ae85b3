//! Text from outside on a terminal. A platform message, a sign request's description, a
//! label or a webhook id can carry escape sequences (`ESC [ 2 K` erases a line, `ESC ]`
//! retitles the window, a bare `\r` overwrites what came before) and a newline can fake a
//! line of the summary. [`printable`] is the one helper every such string goes through
//! before it reaches a terminal.

use std::borrow::Cow;
use std::fmt::Write;

/// `s` with every control character (C0, DEL, C1), and the Unicode bidirectional and
/// line/paragraph separators, replaced by a visible `\u{..}` escape (`\n`, `\r`, `\t`
/// as themselves in backslash form), and a backslash doubled, so that text which spells
/// an escape (`\u{1b}` typed out) cannot pass for one. Ordinary text, non-ASCII letters
/// included, is returned unchanged and unallocated.
pub fn printable(s: &str) -> Cow<'_, str> {
    escaped(s, true)
}

/// [`printable`], with backslashes doubled or (for text already escaped) kept.
fn escaped(s: &str, backslash: bool) -> Cow<'_, str> {
    let needs = |c: char| (backslash && c == '\\') || needs_escape(c);
    if !s.chars().any(needs) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\\' if backslash => out.push_str("\\\\"),
            c if needs_escape(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Like [`printable`] but keeps line breaks, tabs and backslashes: for the CLI's own
/// multi-line output, as a last guard against escape sequences that slipped into it.
pub fn printable_lines(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| needs_escape(c) && c != '\n' && c != '\t') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for line in s.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        for part in body.split('\t').enumerate() {
            if part.0 > 0 {
                out.push('\t');
            }
            // The CLI's own text may hold escapes made earlier: kept, not doubled.
            out.push_str(&escaped(part.1, false));
        }
        out.push_str(end);
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_a_terminal_would_act_on() {
        assert!(matches!(printable("redeem 1.5 ST → ü"), Cow::Borrowed(_)));
        assert_eq!(
            printable("ok\u{1b}[2K\rUNVERIFIED\u{7}"),
            "ok\\u{1b}[2K\\rUNVERIFIED\\u{7}"
        );
        assert_eq!(printable("a\nWARNING: none"), "a\\nWARNING: none");
        assert_eq!(printable("\u{9b}31m\u{202e}txt"), "\\u{9b}31m\\u{202e}txt");
        // Typed-out escapes stay visibly text.
        assert_eq!(printable("a\\u{1b}"), "a\\\\u{1b}");
        assert_eq!(
            printable_lines("line\tone\n\u{1b}]0;title\u{7}\n"),
            "line\tone\n\\u{1b}]0;title\\u{7}\n"
        );
    }
}
