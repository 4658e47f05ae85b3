//! QR codes across the air gap, the terminal's and the files' side of it: `--qr` (an
//! animated multi-part UR on the terminal), `--qr-png DIR` (its frames as PNG files) and
//! `--from-qr FILE|DIR|-...` (frames read back from images or UR text, in any order,
//! duplicates allowed, until the fountain code completes). What the frames carry and
//! every check on it is `bridgectl-qr`'s; the commands decide what to do with it.

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use bridgectl_qr::{Assembler, Received, Ur};
use clap::{Args, ValueEnum};

use crate::exit::{Code, WithCode, coded};

/// Frames a second on the terminal: a phone or webcam decodes several QR codes a
/// second; at five, each frame is on screen for 200 ms, long enough for one that needs
/// a second try to focus.
pub const FRAMES_PER_SECOND: u64 = 5;

/// The largest file read as a frame (an image or UR text).
const MAX_FRAME_FILE: u64 = 32 * 1024 * 1024;

/// The most files read from the `--from-qr` arguments (a directory's entries included).
const MAX_FRAME_FILES: usize = 10_000;

// How a command shows what crosses the gap, besides writing it (a plain comment: a doc
// comment on a flattened struct would replace the command's own description).
#[derive(Debug, Args, Clone, Default)]
pub struct QrOutOpts {
    /// Also show it as an animated QR code (a multi-part BC-UR, 5 frames a second) on
    /// this terminal, for the other machine's camera to read; Enter stops it. Needs a
    /// terminal of at least 61 columns and 32 lines.
    #[arg(long, help_heading = "QR codes")]
    pub qr: bool,

    /// Also write its QR frames as PNG files into DIR (frame-001.png, ...; created if
    /// missing, a frame file that exists is never overwritten): show them in a loop,
    /// in order, on a screen the other side's camera reads. Any 2 of the files may be
    /// lost (unreadable, missed): the rest still rebuild it.
    #[arg(long, value_name = "DIR", help_heading = "QR codes")]
    pub qr_png: Option<PathBuf>,
}

impl QrOutOpts {
    /// Whether anything is to be shown.
    pub fn any(&self) -> bool {
        self.qr || self.qr_png.is_some()
    }

    /// Refuses `--qr` without a terminal to draw on, before any work is done.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.qr && !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            return Err(coded(
                Code::Usage,
                "--qr draws on the terminal, and stderr is not one: use --qr-png DIR to write \
                 the frames as images",
            ));
        }
        Ok(())
    }

    /// Writes the PNG frames of `ur` and/or animates them, naming it `what`. The PNG
    /// files are a fixed set ([`bridgectl_qr::frame_set`]: any
    /// [`bridgectl_qr::MAX_LOST_FRAMES`] of them may be lost); the animation loops over
    /// twice the part count ([`bridgectl_qr::frames`]), so a frame missed comes again.
    pub fn show(&self, ur: &Ur, what: &str) -> anyhow::Result<()> {
        if !self.any() {
            return Ok(());
        }
        if let Some(dir) = &self.qr_png {
            let texts = bridgectl_qr::frame_set(ur).code(Code::Refused)?;
            let codes = bridgectl_qr::draw(&texts)?;
            write_pngs(dir, &codes)?;
            let parts = ur
                .frames(bridgectl_qr::FRAGMENT_LEN)
                .code(Code::Refused)?
                .part_count();
            crate::output::note(format_args!(
                "{what} as {} QR frame(s) ({}, {parts} part(s); any {} may be lost) -> {}",
                codes.len(),
                ur.ur_type,
                bridgectl_qr::MAX_LOST_FRAMES,
                dir.join("frame-*.png").display()
            ));
        }
        if self.qr {
            let texts = bridgectl_qr::frames(ur).code(Code::Refused)?;
            animate(&bridgectl_qr::draw(&texts)?, what)?;
        }
        Ok(())
    }
}

/// Which UR type `action exec --out --qr` shows the request as.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum QrType {
    /// EIP-4527 `eth-sign-request`, for any EIP-4527 signer (bridgectl's too): the
    /// transaction, its chain and sender; the answer is an `eth-signature`.
    #[default]
    EthSignRequest,
    /// bridgectl's own `bridgectl-doc`: the sign request file byte for byte, intent and
    /// origin included; the answer is a signed bundle.
    BridgectlDoc,
}

fn write_pngs(dir: &Path, codes: &[bridgectl_qr::Code]) -> anyhow::Result<()> {
    bridgectl_local::files::create_private_dir(dir)
        .with_context(|| format!("cannot create {}", dir.display()))?;
    let digits = codes.len().to_string().len().max(3);
    for (i, code) in codes.iter().enumerate() {
        let path = dir.join(format!("frame-{:0digits$}.png", i + 1));
        crate::files::write_new(&path, &code.png()?)?;
    }
    Ok(())
}

/// Draws `codes` in a loop on stderr until Enter on the terminal (or, with no terminal
/// to read, for three passes).
fn animate(codes: &[bridgectl_qr::Code], what: &str) -> anyhow::Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    let tty = std::fs::File::open("/dev/tty").ok();
    let passes = if tty.is_some() { usize::MAX } else { 3 };
    if let Some(tty) = tty {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = std::io::BufReader::new(tty).read_line(&mut line);
            stop.store(true, Ordering::Relaxed);
        });
    }
    let lines: Vec<Vec<String>> = codes
        .iter()
        .map(bridgectl_qr::Code::terminal_lines)
        .collect();
    let height = lines.first().map_or(0, Vec::len);
    let mut err = std::io::stderr().lock();
    writeln!(
        err,
        "» {what}: {} frame(s), {FRAMES_PER_SECOND} a second: point the other machine's camera \
         at it, press Enter once it has read it",
        codes.len()
    )?;
    let mut first = true;
    'passes: for _ in 0..passes {
        for frame in &lines {
            if !first {
                write!(err, "\x1b[{height}A")?;
            }
            first = false;
            for line in frame {
                writeln!(err, "{line}")?;
            }
            err.flush()?;
            std::thread::sleep(Duration::from_millis(1000 / FRAMES_PER_SECOND));
            if stop.load(Ordering::Relaxed) {
                break 'passes;
            }
        }
    }
    writeln!(err, "» stopped showing {what}")?;
    Ok(())
}

/// What `--from-qr` read: the message and where it came from.
pub struct ReadFrames {
    /// The rebuilt message.
    pub ur: Ur,
    /// How the input is named in messages and the journal (`qr:DIR`).
    pub name: String,
}

/// Reads frames from `inputs` (image files, UR text files, directories of them, `-` for
/// UR text lines on stdin such as `zbarcam --raw` prints) until the message is complete.
pub fn read_frames(inputs: &[PathBuf]) -> anyhow::Result<ReadFrames> {
    let name = format!(
        "qr:{}",
        inputs
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    let mut assembler = Assembler::new();
    let mut files = Vec::new();
    for input in inputs {
        if input.as_os_str() == "-" {
            files.push(input.clone());
        } else if input.is_dir() {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(input)
                .with_context(|| format!("cannot read directory {}", input.display()))
                .code(Code::NotFound)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .take(MAX_FRAME_FILES + 1)
                .collect();
            entries.sort();
            files.extend(entries);
        } else {
            files.push(input.clone());
        }
        if files.len() > MAX_FRAME_FILES {
            return Err(coded(
                Code::Refused,
                format!("more than {MAX_FRAME_FILES} frame files: not the frames of one message"),
            ));
        }
    }
    for file in &files {
        if file.as_os_str() == "-" {
            read_stdin(&mut assembler)?;
        } else {
            read_file(&mut assembler, file)?;
        }
        if assembler.is_complete() {
            break;
        }
    }
    let progress = assembler.progress();
    let ur = assembler
        .finish()
        .with_context(|| format!("frames from {}", &name[3..]))
        .code(Code::Refused)?;
    if progress.needed > 1 {
        crate::output::note(format_args!(
            "» read {} ({} parts) from {}",
            ur.ur_type,
            progress.needed,
            &name[3..]
        ));
    }
    Ok(ReadFrames { ur, name })
}

/// Rebuilds the message in a UR text file's lines (`sign --out` of an eth-signature).
pub fn read_text(bytes: &[u8], name: &str) -> anyhow::Result<Ur> {
    let mut assembler = Assembler::new();
    receive_file(&mut assembler, bytes, name)?;
    assembler
        .finish()
        .with_context(|| format!("UR text {name}"))
        .code(Code::Refused)
}

/// Reads one file's frames (UR text or an image, as [`bridgectl_qr::read`] tells them
/// apart) into `assembler`. A code that is found and does not decode is one lost frame:
/// skipped with a note, like an image with no code, for the fountain code to make up.
fn receive_file(assembler: &mut Assembler, bytes: &[u8], name: &str) -> anyhow::Result<()> {
    let scan = bridgectl_qr::read(bytes)
        .with_context(|| format!("frame {name}"))
        .code(Code::Refused)?;
    for lost in &scan.undecodable {
        crate::output::note(format_args!("» skipped: {lost}, in {name}"));
    }
    if scan.texts.is_empty() && scan.undecodable.is_empty() {
        crate::output::note(format_args!("» no QR code found in {name}: skipped"));
    }
    for text in &scan.texts {
        receive(assembler, text, name)?;
        if assembler.is_complete() {
            break;
        }
    }
    Ok(())
}

fn receive(assembler: &mut Assembler, text: &str, name: &str) -> anyhow::Result<()> {
    let before = assembler.progress();
    let what = assembler
        .receive(text)
        .with_context(|| format!("frame {name}"))
        .code(Code::Refused)?;
    let now = assembler.progress();
    if what == Received::New && now.needed > 1 && now != before {
        crate::output::note(format_args!("» {now} ({name})"));
    }
    Ok(())
}

fn read_file(assembler: &mut Assembler, file: &Path) -> anyhow::Result<()> {
    let name = file.display().to_string();
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .with_context(|| format!("cannot open {name}"))
        .code(Code::NotFound)?
        .take(MAX_FRAME_FILE + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {name}"))?;
    if bytes.len() as u64 > MAX_FRAME_FILE {
        return Err(coded(
            Code::Refused,
            format!("{name} is larger than {MAX_FRAME_FILE} bytes: not a frame"),
        ));
    }
    receive_file(assembler, &bytes, &name)
}

fn read_stdin(assembler: &mut Assembler) -> anyhow::Result<()> {
    let stdin = std::io::stdin();
    if std::io::IsTerminal::is_terminal(&stdin) {
        return Err(coded(
            Code::Usage,
            "--from-qr -: pipe UR text into stdin (`zbarcam --raw`), one frame a line",
        ));
    }
    let mut lines = stdin.lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = (&mut lines)
            .take(bridgectl_qr::MAX_TEXT as u64 + 2)
            .read_until(b'\n', &mut line)
            .context("cannot read stdin")?;
        if n == 0 {
            return Ok(());
        }
        if !line.ends_with(b"\n") && n as u64 > bridgectl_qr::MAX_TEXT as u64 {
            return Err(coded(
                Code::Refused,
                "stdin: a line longer than any UR frame",
            ));
        }
        let text = String::from_utf8_lossy(&line);
        if !text.trim().is_empty() {
            receive(assembler, &text, "stdin")?;
        }
        if assembler.is_complete() {
            return Ok(());
        }
    }
}
