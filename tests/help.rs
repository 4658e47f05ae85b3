//! Every command's `--help` reads the same and says only what is true of it: each opens
//! with what its parent says of it; the global options stand under their own heading,
//! in one order, right after the command's own; an environment variable is named, never
//! shown as if set empty (`[env: NAME=]`); every `--yes` has its `-y`; and no flag's
//! help says what its command does not do (the table of words [`UNTRUE`]).

use crate::util::Dir;

/// The global options, in the order every help lists them.
const GLOBAL: [&str; 4] = ["--profile", "--config", "--keystore", "--json"];

/// Words that must not appear in a command's help (`""`: in any command's), each with
/// why: each was once there, and false.
const UNTRUE: &[(&str, &str, &str)] = &[
    (
        "",
        "resume later",
        "said of --timeout where nothing is resumed",
    ),
    (
        "",
        "[env: BRIDGECTL_TOKEN_FILE,",
        "the variable named twice",
    ),
    (
        "balance",
        "--timeout",
        "balance asks once, it waits for nothing",
    ),
    (
        "status",
        "--timeout",
        "status asks once, it waits for nothing",
    ),
    ("action list", "--timeout", "it asks once"),
    (
        "batch plan",
        "--timeout",
        "a plan signs and waits for nothing",
    ),
    ("history", "--timeout", "the journal only"),
    ("replace", "--from", "replace takes the flow's sender"),
    ("cancel", "--from", "cancel takes the flow's sender"),
    ("resume", "--from", "resume takes the flow's sender"),
    ("batch run", "--from", "the items name their senders"),
    ("batch resume", "--from", "the items name their senders"),
    (
        "batch run",
        "`bridgectl resume TXID` waits again",
        "batch resume waits again",
    ),
    (
        "batch resume",
        "`bridgectl resume TXID` waits again",
        "batch resume waits again",
    ),
    (
        "sign",
        "intent naming the function",
        "a request's intent never pins a call",
    ),
    (
        "sandbox",
        "never overwritten",
        "a profile it wrote is updated",
    ),
];

/// What must be in a command's help.
const TRUE: &[(&str, &str)] = &[
    ("journal reset-chain", "-y, --yes"),
    ("key rm", "-y, --yes"),
    ("batch run", "`bridgectl batch resume ID` waits again"),
    ("batch resume", "`bridgectl batch resume ID` waits again"),
    ("redeem", "`bridgectl resume TXID` waits again"),
    ("sandbox", "is updated with this sandbox's settings"),
];

/// Every command's long help, by its words (`""` for the root, `batch run`), from the
/// root down through every level of subcommands.
pub fn every_help(dir: &Dir) -> Vec<(String, String)> {
    let help = |path: &[String]| {
        let mut c = dir.command();
        c.args(path).args(["--help"]);
        c.stdout()
    };
    let mut all = Vec::new();
    let mut todo = vec![Vec::<String>::new()];
    while let Some(path) = todo.pop() {
        let text = help(&path);
        if let Some((_, list)) = text.split_once("Commands:\n") {
            for line in list.lines().take_while(|l| !l.is_empty()) {
                // "  name   description" (wrapped descriptions continue further in).
                let Some(entry) = line.strip_prefix("  ").filter(|l| !l.starts_with(' ')) else {
                    continue;
                };
                let name = entry.split(' ').next().unwrap_or(entry);
                if name != "help" {
                    let mut sub = path.clone();
                    sub.push(name.to_owned());
                    todo.push(sub);
                }
            }
        }
        all.push((path.join(" "), text));
    }
    all.sort();
    all
}

/// The sections of a help text: each heading (`Options`, `Global options`, ...) with the
/// flags listed under it, in order.
fn sections(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines() {
        if let Some(heading) = line.strip_suffix(':').filter(|l| {
            !l.starts_with(' ')
                && !l.is_empty()
                && l.chars().all(|c| c.is_alphanumeric() || c == ' ')
        }) {
            out.push((heading.to_owned(), Vec::new()));
            continue;
        }
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if indent > 0 && indent <= 6 {
            let word = trimmed
                .trim_start_matches("-h, ")
                .trim_start_matches("-V, ")
                .split([' ', ','])
                .find(|w| w.starts_with("--"));
            let word = match (trimmed.split_once(", "), word) {
                (Some((short, rest)), _) if short.len() == 2 && short.starts_with('-') => {
                    rest.split(' ').next().map(str::to_owned)
                }
                (_, Some(w)) if trimmed.starts_with("--") => Some(w.to_owned()),
                _ => None,
            };
            if let (Some(word), Some((_, flags))) = (word, out.last_mut()) {
                flags.push(word);
            }
        }
    }
    out
}

bctest!(
    every_subcommand_help_opens_with_its_description,
    |dir: Dir, _cmd: crate::util::TestCommand| {
        // Subcommands are built late (clap's `defer`): a doc comment on an argument struct
        // would then replace the description the parent lists. Each `--help` must open
        // with what its parent says of it, through every level.
        let helps = every_help(&dir);
        let by_name: std::collections::BTreeMap<&str, &str> = helps
            .iter()
            .map(|(n, t)| (n.as_str(), t.as_str()))
            .collect();
        let mut seen = 0;
        for (path, text) in &helps {
            let Some((_, list)) = text.split_once("Commands:\n") else {
                continue;
            };
            for line in list.lines().take_while(|l| !l.is_empty()) {
                let Some(entry) = line.strip_prefix("  ").filter(|l| !l.starts_with(' ')) else {
                    continue;
                };
                let (name, said) = entry.split_once(' ').unwrap_or((entry, ""));
                if name == "help" {
                    continue;
                }
                let sub = if path.is_empty() {
                    name.to_owned()
                } else {
                    format!("{path} {name}")
                };
                let first = by_name[sub.as_str()].lines().next().unwrap_or_default();
                assert!(
                    !said.trim().is_empty() && first.starts_with(said.trim()),
                    "`{sub}` is listed as {:?} but its help opens with {first:?}",
                    said.trim()
                );
                seen += 1;
            }
        }
        assert!(seen > 30, "only {seen} subcommands met");
    }
);

bctest!(
    every_help_lists_the_global_options_under_their_heading_in_one_order,
    |dir: Dir, _cmd: crate::util::TestCommand| {
        let helps = every_help(&dir);
        assert!(helps.len() > 40, "only {} helps", helps.len());
        for (command, text) in &helps {
            let sections = sections(text);
            let headings: Vec<&str> = sections.iter().map(|(h, _)| h.as_str()).collect();
            // The command's own options, then the global ones, then its option groups.
            let at = headings
                .iter()
                .position(|h| *h == "Global options")
                .unwrap_or_else(|| panic!("`{command}`: no Global options heading: {headings:?}"));
            assert_eq!(
                headings.get(at.wrapping_sub(1)),
                Some(&"Options"),
                "`{command}`: {headings:?}"
            );
            assert_eq!(sections[at].1, GLOBAL, "`{command}`:\n{text}");
            for (heading, flags) in &sections {
                if heading != "Global options" {
                    for g in GLOBAL {
                        assert!(
                            !flags.iter().any(|f| f == g),
                            "`{command}`: {g} under {heading}"
                        );
                    }
                }
            }
            // A variable is named; `NAME=]` reads as if it were set empty.
            let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(!words.contains("=]"), "`{command}`:\n{text}");
            assert!(words.contains("[env: BRIDGECTL_KEYSTORE]"), "`{command}`");
            // Every --yes has its -y.
            let bare = text.lines().find(|l| l.trim_start().starts_with("--yes"));
            assert_eq!(bare, None, "`{command}`: --yes without -y");
        }
    }
);

bctest!(
    every_flag_says_only_what_is_true_of_its_command,
    |dir: Dir, _cmd: crate::util::TestCommand| {
        let helps = every_help(&dir);
        let mut wrong = Vec::new();
        for (command, text) in &helps {
            // Help wraps at the terminal's width: words are compared on one line.
            let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
            for (of, words, why) in UNTRUE {
                if (of.is_empty() || of == command) && text.contains(words) {
                    wrong.push(format!("`{command}` says {words:?}: {why}"));
                }
            }
            for (of, words) in TRUE {
                if of == command && !text.contains(words) {
                    wrong.push(format!("`{command}` does not say {words:?}"));
                }
            }
        }
        for (of, ..) in UNTRUE.iter().filter(|(of, ..)| !of.is_empty()) {
            assert!(
                helps.iter().any(|(c, _)| c == of),
                "no command `{of}`: the table names one that is gone"
            );
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
);
