//! The arguments of `bridgectl sign`: one option group for every input, and what only a
//! batch request takes (shared by the single signature, `mod.rs`, and the batch,
//! `batch.rs`).

use std::path::PathBuf;

use bridgectl_flow::DEFAULT_COMMIT_EVERY;
use clap::Args;

use crate::exit::{Code, coded};
use crate::opts::PassphraseOpts;
use crate::trust::ExpectOpts;

// Arguments of `bridgectl sign`.
#[derive(Debug, Args)]
pub struct SignArgs {
    /// The input: a rawTx JSON, an action envelope or a sign-request file; `-` (the
    /// default) reads stdin.
    #[arg(value_name = "FILE|-", default_value = "-", conflicts_with = "from_qr")]
    pub input: String,

    /// Read the input from QR frames instead: image files (PNG, JPEG), UR text files
    /// (one frame a line), directories of them, or `-` for UR text lines on stdin (as
    /// `zbarcam --raw` prints them). Any order, duplicates allowed, until complete. A
    /// `bridgectl-doc` sign request is answered with a signed bundle, an EIP-4527
    /// `eth-sign-request` with an `eth-signature`.
    #[arg(long = "from-qr", value_name = "FILE|DIR|-", num_args = 1.., help_heading = "QR codes")]
    pub from_qr: Vec<PathBuf>,

    /// Show the answer as QR frames too.
    #[command(flatten)]
    pub qr: crate::qr::QrOutOpts,

    /// The key to sign with (address, label or id) [default: the key of rawTx.from].
    /// Its address must equal rawTx.from.
    #[arg(long, value_name = "SELECTOR", add = crate::accounts::key_labels())]
    pub key: Option<String>,

    /// Sign without asking for confirmation. Refused unless you pinned the call:
    /// --expect-function with every argument as --expect-arg, --expect-data, or an
    /// auto-approve rule of the profile that covers it (a request's intent never counts).
    #[arg(long, short = 'y')]
    pub yes: bool,

    /// The sender's next nonce, as you know it: the rawTx must have it. Needed when this
    /// machine's journal has no signature from the sender yet.
    #[arg(long, value_name = "N")]
    pub nonce: Option<u64>,

    /// Print only the signed transaction as 0x hex instead of the bundle JSON.
    #[arg(long, conflicts_with_all = ["qr", "qr_png"])]
    pub raw: bool,

    /// Write the output to FILE (atomically; an existing file is never overwritten).
    /// Needed for a batch request, and with --from-qr and --qr or --qr-png (checked
    /// before any frame is read).
    #[arg(long, short, value_name = "FILE")]
    pub out: Option<PathBuf>,

    #[command(flatten)]
    pub journal: crate::opts::JournalOpt,

    /// Policy checks, run before the key is unlocked.
    #[command(flatten)]
    pub policy: ExpectOpts,

    /// Where the passphrase comes from.
    #[command(flatten)]
    pub passphrase: PassphraseOpts,

    /// Sign through a JSON-RPC signing endpoint on this machine instead of a key of the
    /// keystore: rpc:URL, loopback only (clef, or Frame in front of a hardware key; the
    /// offline signer reaches no network). For a batch request, the endpoint signs for
    /// the senders it lists (eth_accounts) and the keystore's keys for the others.
    #[arg(
        long,
        env = "BRIDGECTL_SIGNER",
        value_name = "rpc:URL",
        hide_env_values = true
    )]
    pub signer: Option<String>,

    /// A batch request: its items in one sitting.
    #[command(flatten)]
    pub batch: BatchSignOpts,
}

// What only a batch request takes (a plain comment: a doc comment on a flattened struct
// would replace the command's own description).
#[derive(Debug, Args, Clone)]
pub struct BatchSignOpts {
    /// A batch request: the next nonce of sender KEY (label or address) as you know it;
    /// its first item must have it. Repeat per sender. A sender not named is checked
    /// against this machine's journal of signatures.
    #[arg(
        long = "nonce-for",
        value_name = "KEY=N",
        help_heading = "Batch requests"
    )]
    pub nonce_for: Vec<String>,

    /// A batch request: read the passphrase of key KEY from the first line of FILE (keep
    /// it 0600); repeat for keys with passphrases of their own. Each file is read once.
    /// Keys not named use --passphrase-file, BRIDGECTL_PASSPHRASE_FILE, BRIDGECTL_PASSPHRASE
    /// or a prompt per key.
    #[arg(
        long = "passphrase-file-for",
        value_name = "KEY=FILE",
        help_heading = "Batch requests"
    )]
    pub passphrase_file_for: Vec<String>,

    /// A batch request: sign every item or none. Without it an item the checks refuse
    /// is reported and left out, with the later items of its sender (their nonces would
    /// be a gap), and the rest are signed.
    #[arg(long, help_heading = "Batch requests")]
    pub all_or_nothing: bool,

    /// A batch request: how many signatures are committed to the signing log and the
    /// journal together (one fsync each per group).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_COMMIT_EVERY as u64,
          value_parser = clap::value_parser!(u64).range(1..), help_heading = "Batch requests")]
    pub commit_every: u64,
}

impl SignArgs {
    /// Refuses, before any input is read, what the answer cannot be written to: an
    /// `--out` file that exists, and QR frames read (`--from-qr`) answered as QR frames
    /// (`--qr`, `--qr-png`) with no `--out`. The answer shown as frames is kept in a
    /// file on this side too: frames on a screen are gone once shown, and a batch
    /// request (which the frames may hold, and only reading them tells) is answered
    /// with a file.
    pub fn check_out(&self) -> anyhow::Result<()> {
        match &self.out {
            Some(out) if out.exists() => Err(coded(
                Code::Exists,
                format!("{} already exists: not overwriting it", out.display()),
            )),
            None if !self.from_qr.is_empty() && self.qr.any() => Err(coded(
                Code::Usage,
                "--from-qr with --qr or --qr-png: give --out FILE too, to keep the answer \
                 on this side (a batch request's answer is a file; frames are gone once \
                 shown)",
            )),
            _ => Ok(()),
        }
    }
}
