//! `bridgectl key ...`: create, import, export, list, show, re-encrypt, remove and verify
//! keys in the encrypted keystore (`bridgectl-keystore`).
//!
//! Secrets never come from argv: passphrases through [`crate::passphrase`], raw keys and
//! mnemonics from stdin or a hidden prompt.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use bridgectl_keystore::{
    Error as KsError, KdfParams, KeyInfo, Keystore, Passphrase, PassphraseProvider,
    PassphraseRequest, Purpose, SecretText, Web3Params,
};
use clap::{Args, Subcommand};
use serde::Serialize;
use zeroize::Zeroizing;

use crate::exit::{Code, coded};
use crate::global::GlobalOpts;
use crate::opts::PassphraseOpts;
use crate::output;
use crate::passphrase::CliPassphrases;

/// Key management commands.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum KeyCommand {
    /// Create a new random key.
    New(NewArgs),
    /// Import a key: a raw hex key (from stdin or a hidden prompt), a Web3 Secret
    /// Storage v3 file (geth, cast, ethers, eth-account) or a BIP-39 mnemonic.
    Import(ImportArgs),
    /// Export a key as a Web3 Secret Storage v3 file (or, unsafely, as raw hex).
    Export(ExportArgs),
    /// List keys (no passphrase needed).
    List,
    /// Show one key's metadata (no passphrase needed).
    Show(SelectArgs),
    /// Change a key's passphrase; the file is replaced atomically.
    Passwd(PasswdArgs),
    /// Remove a key file.
    Rm(RmArgs),
    /// Decrypt a key to check its passphrase and file, without using it.
    Verify(VerifyArgs),
}

// The test-only KDF switch shared by the commands that write key files.
#[derive(Debug, Args, Clone, Default)]
pub struct TestKdfOpts {
    /// TESTS ONLY: encrypt with a trivially cheap KDF. A key written with this can be
    /// brute-forced in seconds.
    #[arg(long, hide = true)]
    pub unsafe_test_kdf: bool,
}

impl TestKdfOpts {
    fn kdf(&self) -> KdfParams {
        if self.unsafe_test_kdf {
            KdfParams::insecure_for_tests()
        } else {
            KdfParams::default()
        }
    }
}

// Arguments of `key new`.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// Label for the key (letters, digits, '-', '_', '.') [default: "key-" and the first address digits].
    pub label: Option<String>,
    #[command(flatten)]
    pub passphrase: PassphraseOpts,
    #[command(flatten)]
    pub test_kdf: TestKdfOpts,
}

// Arguments of `key import`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["raw", "web3", "mnemonic"])))]
pub struct ImportArgs {
    /// Label for the key [default: "key-" and the first address digits].
    pub label: Option<String>,
    /// Read a raw hex private key from stdin (or a hidden prompt on a terminal).
    #[arg(long)]
    pub raw: bool,
    /// Import this Web3 Secret Storage v3 JSON file.
    #[arg(long, value_name = "FILE")]
    pub web3: Option<PathBuf>,
    /// Read a BIP-39 mnemonic from stdin (or a hidden prompt on a terminal).
    #[arg(long)]
    pub mnemonic: bool,
    /// Derivation path for --mnemonic.
    #[arg(long, default_value = bridgectl_keystore::DEFAULT_DERIVATION_PATH, requires = "mnemonic")]
    pub derivation_path: String,
    /// Passphrase of the --web3 file, first line of FILE [default: the --passphrase-file
    /// source].
    // `--file-passphrase-file`, its old name, kept hidden for scripts.
    #[arg(
        long,
        alias = "file-passphrase-file",
        value_name = "FILE",
        requires = "web3",
        help_heading = "Passphrase"
    )]
    pub web3_passphrase_file: Option<PathBuf>,
    #[command(flatten)]
    pub passphrase: PassphraseOpts,
    #[command(flatten)]
    pub test_kdf: TestKdfOpts,
}

// Arguments of `key export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The key: address, label or id.
    pub key: String,
    /// Write the file here (created 0600, never overwritten) instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Passphrase of the exported Web3 file, first line of FILE [default: the key's own
    /// passphrase source].
    // `--export-passphrase-file`, its old name, kept hidden for scripts.
    #[arg(
        long,
        alias = "export-passphrase-file",
        value_name = "FILE",
        help_heading = "Passphrase"
    )]
    pub web3_passphrase_file: Option<PathBuf>,
    /// Print the raw private key in hex instead. Anyone who sees it owns the funds.
    #[arg(long, conflicts_with_all = ["web3_passphrase_file", "unsafe_test_kdf"])]
    pub unsafe_raw: bool,
    #[command(flatten)]
    pub passphrase: PassphraseOpts,
    /// TESTS ONLY: export with scrypt n=2^10 instead of n=2^18.
    #[arg(long, hide = true)]
    pub unsafe_test_kdf: bool,
}

// A key selector.
#[derive(Debug, Args)]
pub struct SelectArgs {
    /// The key: address (any case, with or without 0x), label or id.
    pub key: String,
}

// Arguments of `key passwd`.
#[derive(Debug, Args)]
pub struct PasswdArgs {
    /// The key: address, label or id.
    pub key: String,
    /// The new passphrase, first line of FILE [default: a prompt, with confirmation].
    #[arg(long, value_name = "FILE", help_heading = "Passphrase")]
    pub new_passphrase_file: Option<PathBuf>,
    /// The current passphrase's source.
    #[command(flatten)]
    pub passphrase: PassphraseOpts,
    #[command(flatten)]
    pub test_kdf: TestKdfOpts,
}

// Arguments of `key rm`.
#[derive(Debug, Args)]
pub struct RmArgs {
    /// The key: address, label or id.
    pub key: String,
    /// Remove without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

// Arguments of `key verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The key: address, label or id.
    pub key: String,
    #[command(flatten)]
    pub passphrase: PassphraseOpts,
}

/// Answers some purposes from a second source (the new passphrase of `passwd`, the
/// foreign file's of `import`, the exported file's of `export`), the rest from the main
/// one.
struct Routed {
    main: CliPassphrases,
    second: CliPassphrases,
    second_for: Purpose,
}

impl Routed {
    fn new(main: CliPassphrases, second: CliPassphrases, second_for: Purpose) -> Self {
        Self {
            main,
            second,
            second_for,
        }
    }

    fn ensure_available(&self) -> anyhow::Result<()> {
        self.main.ensure_available()?;
        self.second.ensure_available()
    }
}

impl PassphraseProvider for Routed {
    fn passphrase(&mut self, request: &PassphraseRequest<'_>) -> Result<Passphrase, KsError> {
        if request.purpose == self.second_for {
            self.second.passphrase(request)
        } else {
            self.main.passphrase(request)
        }
    }
}

/// The main source, or `file` for the second purpose when given.
fn routed(opts: &PassphraseOpts, web3_file: Option<&PathBuf>, second_for: Purpose) -> Routed {
    let second = CliPassphrases::second(web3_file, "--web3-passphrase-file", Some(opts));
    Routed::new(CliPassphrases::new(opts), second, second_for)
}

/// Runs a key command.
pub fn run(global: &GlobalOpts, cmd: KeyCommand) -> anyhow::Result<()> {
    let store = crate::session::open_keystore(global)?;
    match cmd {
        KeyCommand::New(args) => {
            let mut pass = CliPassphrases::new(&args.passphrase);
            pass.ensure_available()?;
            let info = store.create(args.label.as_deref(), &mut pass, &args.test_kdf.kdf())?;
            report_key(global, "created", &info)
        }
        KeyCommand::Import(args) => import(global, &store, args),
        KeyCommand::Export(args) => export(global, &store, args),
        KeyCommand::List => {
            let keys = store.list()?;
            if global.json {
                return output::json(&keys);
            }
            if keys.is_empty() {
                output::note(format!("no keys in {}", store.dir().display()));
            }
            for k in &keys {
                output::line(format!(
                    "{:<20} {} {}",
                    k.label,
                    k.address.to_checksum(None),
                    k.created_at
                ))?;
            }
            Ok(())
        }
        KeyCommand::Show(args) => {
            let info = store.find(&args.key)?;
            if global.json {
                return output::json(&info);
            }
            print_info(&info)
        }
        KeyCommand::Passwd(args) => {
            // Never from the environment: that would set the same passphrase again.
            let second = CliPassphrases::second(
                args.new_passphrase_file.as_ref(),
                "--new-passphrase-file",
                None,
            );
            let mut pass = Routed::new(
                CliPassphrases::new(&args.passphrase),
                second,
                Purpose::Create,
            );
            pass.ensure_available()?;
            let info = store.change_passphrase(&args.key, &mut pass, &args.test_kdf.kdf())?;
            report_key(global, "passphrase changed for", &info)
        }
        KeyCommand::Rm(args) => {
            let info = store.find(&args.key)?;
            if !args.yes {
                confirm_removal(&info)?;
            }
            let info = store.remove(&info.id.to_string())?;
            if global.json {
                return output::json(&serde_json::json!({ "removed": info }));
            }
            output::line(format!(
                "removed {} ({})",
                info.label,
                info.address.to_checksum(None)
            ))
        }
        KeyCommand::Verify(args) => {
            let mut pass = CliPassphrases::new(&args.passphrase);
            pass.ensure_available()?;
            let info = store.verify(&args.key, &mut pass)?;
            if global.json {
                return output::json(&serde_json::json!({ "ok": true, "key": info }));
            }
            output::line(format!(
                "ok: {} decrypts to {}",
                info.label,
                info.address.to_checksum(None)
            ))
        }
    }
}

fn import(global: &GlobalOpts, store: &Keystore, args: ImportArgs) -> anyhow::Result<()> {
    let label = args.label.as_deref();
    let kdf = args.test_kdf.kdf();
    let info = if let Some(path) = &args.web3 {
        let mut pass = routed(
            &args.passphrase,
            args.web3_passphrase_file.as_ref(),
            Purpose::ImportFile,
        );
        pass.ensure_available()?;
        store.import_web3_file(path, label, &mut pass, &kdf)?
    } else {
        let secret = if args.raw {
            read_secret_input("private key (hex)")?
        } else {
            read_secret_input("mnemonic phrase")?
        };
        let mut pass = CliPassphrases::new(&args.passphrase);
        pass.ensure_available()?;
        if args.raw {
            store.import_raw(&secret, label, &mut pass, &kdf)?
        } else {
            store.import_mnemonic(&secret, Some(&args.derivation_path), label, &mut pass, &kdf)?
        }
    };
    report_key(global, "imported", &info)
}

fn export(global: &GlobalOpts, store: &Keystore, args: ExportArgs) -> anyhow::Result<()> {
    if args.unsafe_raw {
        let mut pass = CliPassphrases::new(&args.passphrase);
        pass.ensure_available()?;
        let signer = store.unlock(&args.key, &mut pass)?;
        let hex_key = Zeroizing::new(format!(
            "0x{}",
            hex::encode(*Zeroizing::new(signer.to_bytes().0))
        ));
        output::note("warning: this is the raw private key; anyone who sees it owns the funds");
        let text = if global.json {
            // Written out by hand: a serde_json::Value would hold a copy of the key that
            // is never zeroized. Both values are plain hex, so nothing needs escaping.
            Zeroizing::new(format!(
                "{{\n  \"address\": \"{}\",\n  \"private_key\": \"{}\"\n}}",
                signer.address().to_checksum(None),
                hex_key.as_str()
            ))
        } else {
            hex_key
        };
        return write_output(args.out.as_deref(), text.as_bytes());
    }
    let params = if args.unsafe_test_kdf {
        Web3Params::insecure_for_tests()
    } else {
        Web3Params::default()
    };
    let mut pass = routed(
        &args.passphrase,
        args.web3_passphrase_file.as_ref(),
        Purpose::ExportFile,
    );
    pass.ensure_available()?;
    let (info, json) = store.export_web3(&args.key, &mut pass, &params)?;
    match &args.out {
        None => write_output(None, json.as_bytes()),
        Some(path) => {
            write_output(Some(path), json.as_bytes())?;
            if global.json {
                return output::json(&Exported {
                    key: &info,
                    path,
                    format: "web3-secret-storage-v3",
                });
            }
            output::line(format!(
                "exported {} ({}) to {}",
                info.label,
                info.address.to_checksum(None),
                path.display()
            ))
        }
    }
}

#[derive(Serialize)]
struct Exported<'a> {
    key: &'a KeyInfo,
    path: &'a Path,
    format: &'static str,
}

/// Writes to a new 0600 file (atomically, never overwriting) or to stdout.
fn write_output(out: Option<&Path>, bytes: &[u8]) -> anyhow::Result<()> {
    match out {
        Some(path) => {
            let mut with_newline = Zeroizing::new(Vec::with_capacity(bytes.len() + 1));
            with_newline.extend_from_slice(bytes);
            with_newline.push(b'\n');
            crate::files::write_new(path, &with_newline)
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(bytes)?;
            stdout.write_all(b"\n")?;
            Ok(())
        }
    }
}

/// Reads a secret from stdin (piped) or a hidden prompt (terminal); never from argv.
fn read_secret_input(what: &str) -> anyhow::Result<SecretText> {
    if std::io::stdin().is_terminal() {
        let text = rpassword::prompt_password(format!("{what}: "))
            .with_context(|| format!("cannot read the {what} from the terminal"))?;
        return Ok(SecretText::new(text));
    }
    let mut text = Zeroizing::new(String::new());
    std::io::stdin()
        .take(64 * 1024)
        .read_to_string(&mut text)
        .with_context(|| format!("cannot read the {what} from stdin"))?;
    if text.trim().is_empty() {
        return Err(coded(
            Code::Usage,
            format!("no {what} on stdin: pipe it in, or run on a terminal to be prompted"),
        ));
    }
    Ok(SecretText::new(std::mem::take(&mut *text)))
}

fn confirm_removal(info: &KeyInfo) -> anyhow::Result<()> {
    if !std::io::stdin().is_terminal() {
        return Err(coded(
            Code::Declined,
            format!(
                "refusing to remove key '{}' without --yes (no terminal to confirm on)",
                info.label
            ),
        ));
    }
    output::note(format!(
        "remove key '{}' ({}) at {}? this cannot be undone unless you have a backup [y/N]",
        info.label,
        info.address.to_checksum(None),
        info.path.display()
    ));
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .context("cannot read the answer")?;
    if matches!(answer.trim(), "y" | "Y" | "yes") {
        Ok(())
    } else {
        Err(coded(Code::Declined, "not removed"))
    }
}

fn report_key(global: &GlobalOpts, what: &str, info: &KeyInfo) -> anyhow::Result<()> {
    if global.json {
        return output::json(info);
    }
    output::line(format!(
        "{what} {} {} ({})",
        info.label,
        info.address.to_checksum(None),
        info.path.display()
    ))
}

fn print_info(info: &KeyInfo) -> anyhow::Result<()> {
    output::line(format!("label:      {}", info.label))?;
    output::line(format!("address:    {}", info.address.to_checksum(None)))?;
    output::line(format!("id:         {}", info.id))?;
    output::line(format!("created at: {}", info.created_at))?;
    output::line(format!(
        "file:       {} (format v{})",
        info.path.display(),
        info.version
    ))?;
    output::line(format!(
        "kdf:        {} m={} KiB t={} p={}",
        info.kdf.algorithm, info.kdf.m_kib, info.kdf.t, info.kdf.p
    ))
}
