//! JSON that scripts can trust: every `--json` output, of a success and of a failure, read
//! as strictly as bridgectl reads its own inputs (a duplicate key fails) and validated
//! against its schema in `docs/json/`.
//!
//! The commands run in groups (the keystore, the flows and the signing log, actions and
//! the air gap, batches, webhooks), each group a test of its own against the shared
//! sandbox with an account of its own, so the groups run side by side; each reports
//! every drift of its group at once. [`every_schema_and_every_command_has_its_cases`]
//! checks, over a dry run of every group, that each schema is met and each command has a
//! success and a failure. The outputs that
//! need a sandbox of their own or a long-running process (`replace`/`cancel` of a stuck
//! flow, `journal reset-chain` after a reset, `sandbox`, `demo`, `webhook listen|events`) are
//! checked by [`assert_schema`] in the tests that already produce them; their failures
//! are here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::Value;

use crate::live::Live;

/// Cases whose output does not match its schema yet, by `schema:args`: each is still run,
/// and must still fail (so this list is emptied when it is fixed, not forgotten).
const EXPECTED_TO_BE_FIXED: &[&str] = &[];

/// Where the schemas live, and the base of their `$id`s.
const BASE: &str = "https://example.invalid/bridgectl/docs/json/";

/// The schema files of `docs/json/`, by name (`history` for `history.schema.json`).
fn schema_files() -> BTreeMap<String, Value> {
    let dir = crate::util::repo_root().join("docs/json");
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("docs/json") {
        let path: PathBuf = entry.expect("entry").path();
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".schema.json"))
        else {
            continue;
        };
        let text = std::fs::read_to_string(&path).expect("read schema");
        let schema = crate::util::strict_json(&text);
        assert_eq!(
            schema["$id"],
            format!("{BASE}{name}.schema.json"),
            "{}: $id",
            path.display()
        );
        out.insert(name.to_owned(), schema);
    }
    out
}

/// Every schema, compiled once, each able to refer to the others (`common.schema.json`).
fn validators() -> &'static BTreeMap<String, jsonschema::Validator> {
    static VALIDATORS: OnceLock<BTreeMap<String, jsonschema::Validator>> = OnceLock::new();
    VALIDATORS.get_or_init(|| {
        let files = schema_files();
        let mut registry = jsonschema::Registry::new();
        for (name, schema) in &files {
            registry = registry
                .add(format!("{BASE}{name}.schema.json"), schema.clone())
                .unwrap_or_else(|e| panic!("{name}.schema.json: {e}"));
        }
        let registry = registry.prepare().expect("the schemas refer to each other");
        files
            .iter()
            .map(|(name, schema)| {
                let v = jsonschema::options()
                    .with_registry(&registry)
                    .build(schema)
                    .unwrap_or_else(|e| panic!("{name}.schema.json is not a schema: {e}"));
                (name.clone(), v)
            })
            .collect()
    })
}

/// What is wrong with `value` as an output of schema `name`, if anything.
pub fn schema_errors(name: &str, value: &Value) -> Option<String> {
    let Some(v) = validators().get(name) else {
        return Some(format!("no docs/json/{name}.schema.json"));
    };
    let mut errors: Vec<String> = v
        .iter_errors(value)
        .map(|e| format!("  at {}: {e}", e.instance_path()))
        .collect();
    unchecksummed(value, "", &mut errors);
    (!errors.is_empty()).then(|| {
        format!(
            "{name}.schema.json refuses:\n{}\n{value:#}",
            errors.join("\n")
        )
    })
}

/// One spelling of an address in every document: EIP-55 mixed case (a schema cannot say
/// it; this walks the document).
fn unchecksummed(value: &Value, at: &str, errors: &mut Vec<String>) {
    match value {
        Value::String(s) if s.len() == 42 && s.starts_with("0x") => {
            if let Ok(a) = s.parse::<alloy_primitives::Address>()
                && a.to_checksum(None) != *s
            {
                errors.push(format!("  at {at}: {s} is not in EIP-55 mixed case"));
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                unchecksummed(v, &format!("{at}/{i}"), errors);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                unchecksummed(v, &format!("{at}/{k}"), errors);
            }
        }
        _ => {}
    }
}

/// Panics unless `value` matches schema `name`: for the tests that produce an output this
/// module's test cannot (see the module doc).
pub fn assert_schema(name: &str, value: &Value) {
    if let Some(e) = schema_errors(name, value) {
        panic!("{e}");
    }
}

/// The documents a `--json` run printed: one, or one a line for a stream.
fn documents(stdout: &[u8], stream: bool) -> Vec<Value> {
    let text = String::from_utf8_lossy(stdout);
    if stream {
        text.lines().map(crate::util::strict_json).collect()
    } else {
        vec![crate::util::strict_json(&text)]
    }
}

/// The values the cases are made of: a live test's, or placeholders for a dry run.
struct Ctx {
    dev: String,
    one_st: String,
    side_chain_id: String,
    managed: String,
    web3_url: String,
    web3_token: String,
    dir: PathBuf,
}

impl Ctx {
    fn of(live: &Live) -> Ctx {
        let side = &live.sb.info.side;
        Ctx {
            dev: live.dev.to_string(),
            one_st: crate::flow::units(1, side.decimals).to_string(),
            side_chain_id: side.chain_id.to_string(),
            managed: live.sb.info.managed_accounts[0].to_string(),
            web3_url: live.sb.info.web3_url.clone(),
            web3_token: live.token().to_owned(),
            dir: live.dir.path().to_owned(),
        }
    }

    fn dry() -> Ctx {
        let placeholder = |what: &str| format!("<{what}>");
        Ctx {
            dev: placeholder("dev"),
            one_st: placeholder("one ST"),
            side_chain_id: placeholder("side chain id"),
            managed: placeholder("managed"),
            web3_url: placeholder("web3 url"),
            web3_token: placeholder("web3 token"),
            dir: PathBuf::from("/nonexistent/bridgectl-json-dry-run"),
        }
    }

    /// A file of the test's dir.
    fn path(&self, name: &str) -> String {
        self.dir.join(name).to_str().expect("utf8").to_owned()
    }
}

/// The run of a group of cases: what drifted, and which command met which schema how.
struct Cases<'a> {
    /// The test's sandbox; `None` in a dry run, which runs nothing and only records the
    /// cases (see [`every_schema_and_every_command_has_its_cases`]).
    live: Option<&'a Live>,
    failures: Vec<String>,
    /// `(command, schema, exit)` of every case, for the coverage check and the report.
    seen: Vec<(String, String, i32)>,
}

impl<'a> Cases<'a> {
    fn new(live: Option<&'a Live>) -> Self {
        Cases {
            live,
            failures: Vec::new(),
            seen: Vec::new(),
        }
    }

    /// Runs `bridgectl --json ARGS` (with `env`), expects exit `exit`, and checks every
    /// document on stdout against `schema` (an error's against `error`); returns them.
    fn run_env(
        &mut self,
        schema: &str,
        args: &[&str],
        exit: i32,
        env: &[(&str, &str)],
        stdin: Option<&str>,
    ) -> Vec<Value> {
        let command = command_name(args);
        let Some(live) = self.live else {
            self.seen.push((command, schema.to_owned(), exit));
            return Vec::new();
        };
        let mut c = live.cmd();
        c.arg_json().args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        let out = match stdin {
            Some(input) => c.output_with_stdin(input.as_bytes()),
            None => c.output(),
        };
        live.check_secrets(&out);
        let label = format!("{schema}:{}", args.join(" "));
        if out.status.code() != Some(exit) {
            self.failures.push(format!(
                "{label}: exit {:?}, expected {exit}\nstdout:\n{}\nstderr:\n{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
            return Vec::new();
        }
        let stream = matches!(schema, "batch-run" | "batch-submit" | "webhook-listen");
        let docs = documents(&out.stdout, stream);

        let mut wrong = Vec::new();
        for doc in &docs {
            let name = if is_error(doc) && schema != "error" {
                "error"
            } else {
                schema
            };
            wrong.extend(schema_errors(name, doc));
        }
        if exit != 0 && !docs.iter().any(is_error) && schema == "error" {
            wrong.push("no error object on stdout".into());
        }
        let expected_to_fail = EXPECTED_TO_BE_FIXED.contains(&label.as_str());
        match (wrong.is_empty(), expected_to_fail) {
            (false, false) => self
                .failures
                .push(format!("{label}:\n{}", wrong.join("\n"))),
            (true, true) => self.failures.push(format!(
                "{label} matches its schema now: take it off EXPECTED_TO_BE_FIXED"
            )),
            _ => {}
        }
        self.seen.push((command, schema.to_owned(), exit));
        docs
    }

    fn run(&mut self, schema: &str, args: &[&str], exit: i32) -> Vec<Value> {
        self.run_env(schema, args, exit, &[], None)
    }

    /// A success: its one document.
    fn ok(&mut self, schema: &str, args: &[&str]) -> Value {
        self.run(schema, args, 0)
            .into_iter()
            .next()
            .unwrap_or(Value::Null)
    }

    /// A failure with exit `exit` whose stdout is the error object.
    fn fails(&mut self, args: &[&str], exit: i32) {
        self.run("error", args, exit);
    }

    /// Writes `contents` to `name` in the test's dir (nothing in a dry run); its path.
    fn write(&self, ctx: &Ctx, name: &str, contents: &str) -> String {
        if let Some(live) = self.live {
            live.dir.write(name, contents);
        }
        ctx.path(name)
    }

    /// Ends a live group: every drift it found, at once.
    fn finish(self) {
        assert!(
            self.failures.is_empty(),
            "{} outputs drifted from docs/json:\n\n{}",
            self.failures.len(),
            self.failures.join("\n\n")
        );
    }
}

/// The subcommand of `args` (`key show`, `history`): its words before the first argument.
fn command_name(args: &[&str]) -> String {
    const GROUPS: &[&str] = &[
        "key", "tx", "log", "action", "batch", "journal", "webhook", "state",
    ];
    let words: Vec<&str> = args
        .iter()
        .copied()
        .filter(|a| !a.starts_with('-'))
        .collect();
    match words.as_slice() {
        [group, sub, ..] if GROUPS.contains(group) => format!("{group} {sub}"),
        [one, ..] => (*one).to_owned(),
        [] => String::new(),
    }
}

/// Whether `doc` is the error object (`{"error": {...}}`), not a document with an
/// `error` field of its own (a batch item's, null when it has none).
fn is_error(doc: &Value) -> bool {
    doc.get("error").is_some_and(Value::is_object)
}

/// 32 random bytes as 64 hex digits: a key, or a hash nothing knows.
fn random_hex() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

trait JsonArg {
    fn arg_json(&mut self) -> &mut Self;
}

impl JsonArg for crate::util::TestCommand {
    fn arg_json(&mut self) -> &mut Self {
        self.args(["--json"])
    }
}

/// A group of cases, run against a live test or recorded in a dry run.
type Group = fn(&mut Cases<'_>, &Ctx);

/// Every group, for the coverage check. Each is also a test of its own (below), so the
/// groups run side by side, each with an account of its own in the shared sandbox.
const GROUPS: &[Group] = &[
    keystore_cases,
    flow_and_log_cases,
    action_and_air_gap_cases,
    batch_cases,
    webhook_cases,
];

/// Runs `group` against `live`'s sandbox; fails on any drift.
fn run_live(live: &Live, group: Group) {
    let ctx = Ctx::of(live);
    let mut t = Cases::new(Some(live));
    group(&mut t, &ctx);
    t.finish();
}

#[test]
fn keystore_outputs_match_their_schemas() {
    // The keystore's commands ask no platform anything.
    let live = Live::shared("json_keystore");
    live.node_only();
    run_live(&live, keystore_cases);
}

#[test]
fn flow_and_signing_log_outputs_match_their_schemas() {
    run_live(&Live::shared("json_flows"), flow_and_log_cases);
}

#[test]
fn action_and_air_gap_outputs_match_their_schemas() {
    run_live(&Live::shared("json_actions"), action_and_air_gap_cases);
}

#[test]
fn batch_outputs_match_their_schemas() {
    run_live(&Live::shared("json_batches"), batch_cases);
}

#[test]
fn webhook_outputs_match_their_schemas() {
    run_live(&Live::shared("json_webhooks"), webhook_cases);
}

/// Usage errors clap finds, one of ours, and the keystore.
fn keystore_cases(t: &mut Cases<'_>, c: &Ctx) {
    let wrong_pass = t.write(c, "wrong-passphrase", "not the passphrase\n");
    let new_pass = t.write(c, "new-passphrase", "another passphrase\n");
    let new_pass = new_pass.as_str();
    let not_a_dir = c.path("wrong-passphrase");

    t.fails(&["no-such-command"], 2);
    t.fails(&["completions", "no-such-shell"], 2);

    t.ok("key-list", &["key", "list"]);
    let no_keystore = [("BRIDGECTL_KEYSTORE", not_a_dir.as_str())];
    t.run_env("error", &["key", "list"], 1, &no_keystore, None);
    t.ok("key-show", &["key", "show", "dev"]);
    t.fails(&["key", "show", "nobody"], 6);
    t.ok("key-new", &["key", "new", "spare", "--unsafe-test-kdf"]);
    t.fails(&["key", "new", "spare", "--unsafe-test-kdf"], 10);
    t.ok("key-verify", &["key", "verify", "spare"]);
    t.run_env(
        "error",
        &["key", "verify", "spare"],
        4,
        &[("BRIDGECTL_PASSPHRASE_FILE", wrong_pass.as_str())],
        None,
    );
    t.ok(
        "key-passwd",
        &[
            "key",
            "passwd",
            "spare",
            "--new-passphrase-file",
            new_pass,
            "--unsafe-test-kdf",
        ],
    );
    t.fails(
        &["key", "passwd", "nobody", "--new-passphrase-file", new_pass],
        6,
    );
    let exported = c.path("spare-web3.json");
    let export = [
        "key",
        "export",
        "spare",
        "--out",
        &exported,
        "--web3-passphrase-file",
        new_pass,
        "--unsafe-test-kdf",
    ];
    t.run_env(
        "key-export",
        &export,
        0,
        &[("BRIDGECTL_PASSPHRASE_FILE", new_pass)],
        None,
    );
    t.run_env(
        "error",
        &export,
        10,
        &[("BRIDGECTL_PASSPHRASE_FILE", new_pass)],
        None,
    );
    let imported = random_hex();
    let import = ["key", "import", "imported", "--raw", "--unsafe-test-kdf"];
    t.run_env("key-import", &import, 0, &[], Some(&imported));
    t.run_env("error", &import, 10, &[], Some(&imported));
    t.ok("key-rm", &["key", "rm", "spare", "--yes"]);
    t.fails(&["key", "rm", "nobody", "--yes"], 6);
}

/// Balances, the single flows, what is asked of a flow, and the signing log they wrote.
fn flow_and_log_cases(t: &mut Cases<'_>, c: &Ctx) {
    let nobody = "0x000000000000000000000000000000000000dEaD";
    t.ok("balance", &["balance", "dev", nobody]);
    t.fails(&["balance", "nobody"], 6);
    t.ok(
        "transfer",
        &[
            "transfer", "--token", "st", "--from", "dev", "--to", nobody, "--amount", "0.5",
            "--yes",
        ],
    );
    t.fails(
        &[
            "transfer", "--token", "st", "--from", "dev", "--to", nobody, "--amount", "1.2.3",
            "--yes",
        ],
        2,
    );
    let redeemed = t.ok(
        "redeem",
        &["redeem", "--from", "dev", "--amount", "1", "--yes"],
    );
    t.fails(
        &[
            "redeem",
            "--from",
            "dev",
            "--amount",
            "0.0000000000000000001",
            "--yes",
        ],
        2,
    );
    t.ok("swap", &["swap", "--from", "dev", "--amount", "1", "--yes"]);
    t.fails(&["swap", "--from", "dev", "--amount", "-1", "--yes"], 2);

    // A flow and what is asked of it.
    let tx_id = redeemed["txId"].as_str().unwrap_or_default().to_owned();
    t.ok("status", &["status", &tx_id]);
    t.fails(&["status", "ffffffff"], 6);
    // A hash nothing knows: the status document, and exit 6.
    let unknown = format!("0x{}", random_hex());
    t.run("status", &["status", &unknown], 6);
    t.ok("resume", &["resume", &tx_id]);
    t.fails(&["resume", "ffffffff"], 6);
    t.ok("history", &["history"]);
    let flow = t.ok("history", &["history", &tx_id]);
    t.fails(&["history", "ffffffff"], 6);
    t.fails(&["replace", &tx_id, "--yes"], 3);
    t.fails(&["cancel", &tx_id, "--yes"], 3);
    t.fails(&["journal", "reset-chain", &c.side_chain_id, "--yes"], 3);
    let signed_tx = flow["flow"]["signedTx"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    t.ok("tx-decode", &["tx", "decode", &signed_tx]);
    t.fails(&["tx", "decode", "0xzz"], 3);

    // The signing log of those signatures.
    let not_a_dir = t.write(c, "not-a-keystore", "a file, not a directory\n");
    let no_keystore = [("BRIDGECTL_KEYSTORE", not_a_dir.as_str())];
    t.ok("log-checkpoint", &["log", "checkpoint"]);
    t.run_env("error", &["log", "checkpoint"], 1, &no_keystore, None);
    t.ok("log-verify", &["log", "verify"]);
    t.fails(&["log", "verify", "--checkpoint", "nonsense"], 2);
    t.ok("log-show", &["log", "show", "--key", "dev"]);
    t.fails(&["log", "show", "--since", "nonsense"], 2);
    t.ok(
        "log-acknowledge",
        &["log", "acknowledge", "--yes", "--key", "dev"],
    );
    t.fails(&["log", "acknowledge", "--key", "dev"], 5);
    // A signing history taken in: its output is an acknowledgement's.
    let zero = format!("0x{}", "0".repeat(64));
    let history = t.write(
        c,
        "history.json",
        &format!(
            "{{\"metadata\": {{\"interchangeFormatVersion\": 1, \"exportedAt\": 0, \
             \"logHead\": {{\"count\": 0, \"head\": \"{zero}\"}}}}, \"keys\": []}}\n"
        ),
    );
    t.ok(
        "log-acknowledge",
        &["log", "import", &history, "--yes", "--key", "dev"],
    );
    t.fails(&["log", "import", &not_a_dir, "--yes", "--key", "dev"], 3);
    // Its success needs a PostgreSQL server: tests/shared.rs checks it.
    t.fails(&["state", "migrate", "--to", "not-a-url"], 2);
}

/// Transaction actions, and the air gap's halves.
fn action_and_air_gap_cases(t: &mut Cases<'_>, c: &Ctx) {
    let owner = format!("_owner={}", c.dev);
    t.ok(
        "action-exec",
        &[
            "action",
            "exec",
            "balanceOf",
            "--from",
            &c.managed,
            "--input",
            &owner,
        ],
    );
    t.ok("action-list", &["action", "list"]);
    t.fails(&["action", "list", "--profile", "no-such-profile"], 2);
    let to = format!("_to={}", c.dev);
    t.ok(
        "action-exec",
        &[
            "action", "exec", "transfer", "--from", &c.managed, "--input", &to, "--input",
            "_value=0",
        ],
    );
    let amount = format!("_amount={}", c.one_st);
    let redeem_call = [
        "action",
        "exec",
        "redeem",
        "--from",
        &c.dev,
        "--input",
        &amount,
        "--function",
        "redeem",
    ];
    t.ok(
        "action-exec",
        &[&redeem_call[..], &["--yes", "--wait"]].concat(),
    );
    let request = c.path("request.json");
    let asked = [&redeem_call[..], &["--out", &request]].concat();
    t.ok("action-exec", &asked);
    t.fails(
        &[
            "action",
            "exec",
            "no-such-action",
            "--from",
            &c.dev,
            "--function",
            "redeem",
            "--yes",
        ],
        7,
    );
    let bundle = c.path("signed.json");
    if let Some(live) = t.live {
        let offline = crate::flow::offline_signer(live, "json_schemas_offline");
        let nonce = live.nonce(true, live.dev).to_string();
        let mut sign = offline.command();
        sign.env("BRIDGECTL_PASSPHRASE_FILE", offline.join("pass"))
            .args(["--json", "sign", &request, "--yes", "--nonce", &nonce]);
        let signed = live.ok_cmd(sign);
        if let Some(e) = schema_errors("sign", &signed) {
            t.failures.push(format!("sign: {e}"));
        }
        std::fs::write(&bundle, signed.to_string()).expect("write the bundle");
        // With --out the bundle goes to the file, and stdout says what was signed (here
        // the same request again: the same bytes, nothing unlocked).
        let mut sign = offline.command();
        sign.env("BRIDGECTL_PASSPHRASE_FILE", offline.join("pass"))
            .args([
                "--json",
                "sign",
                &request,
                "--yes",
                "--out",
                &c.path("signed-again.json"),
            ]);
        let written = live.ok_cmd(sign);
        if let Some(e) = schema_errors("sign-out", &written) {
            t.failures.push(format!("sign --out: {e}"));
        }
        if written["txHash"] != signed["txHash"] {
            t.failures
                .push(format!("sign --out: {written} is not {signed}"));
        }
        let mut sign = offline.command();
        sign.args(["--json", "sign", &c.path("no-such-request.json"), "--yes"]);
        let out = sign.output();
        match (out.status.code(), documents(&out.stdout, false).first()) {
            (Some(6), Some(doc)) => t.failures.extend(schema_errors("error", doc)),
            _ => t.failures.push(format!("sign of no file: {out:?}")),
        }
    }
    t.seen.push(("sign".into(), "sign".into(), 0));
    t.seen.push(("sign".into(), "sign-out".into(), 0));
    t.seen.push(("sign".into(), "error".into(), 6));
    t.ok(
        "submit",
        &["submit", &bundle, "--request", &request, "--wait"],
    );
    t.fails(&["submit", &c.path("no-such-bundle.json")], 6);
}

/// Batches: planned, run, shown, resumed when over.
fn batch_cases(t: &mut Cases<'_>, c: &Ctx) {
    let items: String = (0..3)
        .map(|i| {
            format!(
                "{{\"op\": \"redeem\", \"from\": \"dev\", \"amount\": \"1\", \"id\": \"i{i}\"}}\n"
            )
        })
        .collect();
    t.write(c, "payouts.jsonl", &items);
    t.run("batch-plan", &["batch", "plan", "payouts.jsonl"], 0);
    t.fails(&["batch", "plan", "no-such-file.jsonl"], 6);
    let lines = t.run("batch-run", &["batch", "run", "payouts.jsonl", "--yes"], 0);
    t.run(
        "batch-run",
        &[
            "batch",
            "run",
            "payouts.jsonl",
            "--max-total",
            "ST=1",
            "--id-suffix=-capped",
            "--yes",
        ],
        3,
    );
    let batch_id = lines
        .last()
        .and_then(|l| l["summary"]["batchId"].as_str())
        .unwrap_or_default()
        .to_owned();
    t.ok("batch-status", &["batch", "status"]);
    t.ok("batch-status", &["batch", "status", &batch_id]);
    t.fails(&["batch", "status", "ffffffff"], 6);
    let again = t.run("batch-run", &["batch", "resume", &batch_id, "--yes"], 0);
    // A batch over: nothing ran, so no rate (not thousands of items a second).
    let summary = again
        .last()
        .map(|l| l["summary"].clone())
        .unwrap_or_default();
    if t.live.is_some() && (summary["ran"] != 0 || !summary["itemsPerSecond"].is_null()) {
        t.failures.push(format!(
            "the resume of a finished batch ran nothing: {summary:#}"
        ));
    }
    t.fails(&["batch", "resume", "ffffffff", "--yes"], 6);

    // The air gap at batch scale: prepared here, signed on the offline machine,
    // submitted and followed here.
    let requests = c.path("requests.json");
    let prepared = t.ok(
        "batch-prepare",
        &[
            "batch",
            "prepare",
            "payouts.jsonl",
            "--id-suffix=-air-gap",
            "--out",
            &requests,
        ],
    );
    t.fails(
        &[
            "batch",
            "prepare",
            "no-such-file.jsonl",
            "--out",
            &c.path("r.json"),
        ],
        6,
    );
    let signed_batch = c.path("signed-batch.json");
    if let Some(live) = t.live {
        let offline = crate::flow::offline_signer(live, "json_schemas_batch_offline");
        let next = live.nonce(true, live.dev).to_string();
        let mut sign = offline.command();
        sign.env("BRIDGECTL_PASSPHRASE_FILE", offline.join("pass"))
            .args(["--json", "sign", &requests, "--yes", "--out", &signed_batch])
            .args(["--nonce-for", &format!("{}={next}", c.dev)]);
        let signed = live.ok_cmd(sign);
        if let Some(e) = schema_errors("sign-batch", &signed) {
            t.failures.push(format!("sign of a batch request: {e}"));
        }
    }
    t.seen.push(("sign".into(), "sign-batch".into(), 0));
    t.run("batch-submit", &["batch", "submit", &signed_batch], 0);
    t.fails(
        &["batch", "submit", &c.path("no-such-signed-batch.json")],
        6,
    );
    // Given up once submitted: nothing held to give back, and its signed batch is refused
    // from then on.
    let prepared_id = prepared["batchId"].as_str().unwrap_or_default().to_owned();
    t.ok(
        "batch-abandon",
        &["batch", "abandon", &prepared_id, "--yes"],
    );
    t.fails(&["batch", "abandon", "ffffffff", "--yes"], 6);
}

/// Webhooks on the web3 API (deliveries go nowhere: a closed port), and the failures of
/// the commands whose successes other tests check.
fn webhook_cases(t: &mut Cases<'_>, c: &Ctx) {
    let keys = c.path("webhook-keys.json");
    let web3 = |args: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        a.extend(
            [
                "--chain",
                "ethereum",
                "--network",
                "sepolia",
                "--web3-url",
                &c.web3_url,
                "--keys",
                &keys,
            ]
            .map(str::to_owned),
        );
        a
    };
    let env = [("BRIDGECTL_WEB3_TOKEN", c.web3_token.as_str())];
    let webhook = |t: &mut Cases<'_>, schema: &str, args: &[&str], exit: i32| {
        let a = web3(args);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        t.run_env(schema, &a, exit, &env, None)
    };
    let created = webhook(
        t,
        "webhook-create",
        &[
            "webhook",
            "create",
            "--type",
            "BLOCK_PERIOD",
            "--period",
            "5",
            "--url",
            "http://127.0.0.1:9/hooks/nowhere",
        ],
        0,
    );
    webhook(
        t,
        "error",
        &[
            "webhook",
            "create",
            "--type",
            "NO_SUCH_TYPE",
            "--url",
            "http://127.0.0.1:9/x",
        ],
        2,
    );
    let sub = created
        .first()
        .and_then(|c| c["subscriptionId"].as_str())
        .unwrap_or_default()
        .to_owned();
    webhook(t, "webhook-list", &["webhook", "list"], 0);
    webhook(t, "error", &["webhook", "list", "--limit", "0"], 2);
    webhook(t, "webhook-get", &["webhook", "get", &sub], 0);
    webhook(t, "error", &["webhook", "get", "999999999"], 6);
    webhook(
        t,
        "webhook-update",
        &["webhook", "update", &sub, "--active", "false"],
        0,
    );
    webhook(
        t,
        "error",
        &["webhook", "update", "999999999", "--active", "false"],
        6,
    );
    webhook(t, "webhook-delete", &["webhook", "delete", &sub], 0);
    webhook(t, "error", &["webhook", "delete", &sub], 6);
    let store = c.path("no-such-dir/events.sqlite");
    t.fails(&["webhook", "events", "--store", &store], 6);
    let listen_store = c.path("events.sqlite");
    t.fails(
        &[
            "webhook",
            "listen",
            "--bind",
            "127.0.0.1:0",
            "--store",
            &listen_store,
            "--keys",
            &keys,
            "--header-timeout",
            "-1",
        ],
        2,
    );
    t.fails(&["sandbox", "--show"], 6);
    t.fails(&["demo", "--fund", "1.2.3"], 2);
}

/// Every schema is met by a success, and every command by a failure too (and a success,
/// unless another test has it): checked over the cases of every group, recorded in a dry
/// run (nothing runs; the live groups above run the same cases).
#[test]
fn every_schema_and_every_command_has_its_cases() {
    let ctx = Ctx::dry();
    let mut t = Cases::new(None);
    for group in GROUPS {
        group(&mut t, &ctx);
    }
    let schemas: BTreeSet<String> = schema_files().into_keys().collect();
    let met: BTreeSet<String> = t
        .seen
        .iter()
        .filter(|(_, _, exit)| *exit == 0)
        .map(|(_, s, _)| s.clone())
        .chain(OTHER_TESTS.iter().map(|s| (*s).to_owned()))
        .chain(["error".to_owned(), "common".to_owned()])
        .collect();
    for s in schemas.difference(&met) {
        t.failures
            .push(format!("docs/json/{s}.schema.json: no case produces it"));
    }
    let commands: BTreeSet<&str> = t.seen.iter().map(|(c, _, _)| c.as_str()).collect();
    for c in &commands {
        let ok = t.seen.iter().any(|(cc, _, e)| cc == c && *e == 0);
        let failed = t.seen.iter().any(|(cc, _, e)| cc == c && *e != 0);
        if !failed || (!ok && !ONLY_FAILS.contains(c)) {
            t.failures.push(format!(
                "{c}: needs a success and a failure case (has success {ok}, failure {failed})"
            ));
        }
    }
    assert!(
        t.failures.is_empty(),
        "{} gaps in the cases:\n\n{}",
        t.failures.len(),
        t.failures.join("\n\n")
    );
}

/// Schemas whose success output another test checks with [`assert_schema`]: they need
/// a sandbox of their own, a stuck transaction or a long-running process.
const OTHER_TESTS: &[&str] = &[
    "demo",
    "replace",
    "journal-reset-chain",
    "state-migrate",
    "sandbox",
    "webhook-listen",
    "webhook-events",
];

/// Commands this test meets only failing (their success is in [`OTHER_TESTS`], or they
/// have no output of their own).
const ONLY_FAILS: &[&str] = &[
    "demo",
    "no-such-command",
    "completions",
    "sandbox",
    "webhook listen",
    "webhook events",
    "replace",
    "cancel",
    "journal reset-chain",
    "state migrate",
];

#[test]
fn a_drifted_output_is_refused() {
    // The schemas are strict: a field renamed, an amount as a number, a field of more.
    let good = serde_json::json!({"error": {"code": "not-found", "message": "m", "exit": 6}});
    assert_eq!(schema_errors("error", &good), None);
    let handles = serde_json::json!({"error": {"code": "timeout", "message": "m", "exit": 8,
        "txId": "0f5c6e2a-1b3d-4c5e-8f70-112233445566", "hash": format!("0x{}", "ab".repeat(32)),
        "batchId": "b", "hint": "h"}});
    assert_eq!(schema_errors("error", &handles), None);
    for bad in [
        serde_json::json!({"error": {"code": "timeout", "message": "m", "exit": 8, "txId": 7}}),
        serde_json::json!({"error": {"code": "timeout", "message": "m", "exit": 8, "hash": "0x1"}}),
        serde_json::json!({"error": {"code": "not-found", "message": "m", "exitCode": 6}}),
        serde_json::json!({"error": {"code": "lost", "message": "m", "exit": 6}}),
        serde_json::json!({"error": {"code": "not-found", "message": "m", "exit": 6}, "x": 1}),
    ] {
        assert!(schema_errors("error", &bad).is_some(), "{bad} passed");
    }
}
