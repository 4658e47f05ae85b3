//! The air gap by QR codes (`--qr`, `--qr-png`, `--from-qr`; `crates/qr`, `docs/qr.md`):
//!
//! - interop with an independent implementation (`tests/interop/ur.mjs` over the npm
//!   packages `@ngraveio/bc-ur`, `@keystonehq/bc-ur-registry-eth`, `@ethereumjs/tx` and
//!   `jsqr`, pinned in `tools/`): an `eth-sign-request` built there, multi-part, is signed
//!   by `bridgectl sign --from-qr` and its `eth-signature` recovers there to the key; a
//!   multi-part `bridgectl-doc` written by `--qr-png` decodes there byte for byte, with
//!   any two of its frames lost too;
//! - frames read back in any order, duplicated, with some lost; a frame of another
//!   request, a truncated UR, a request over the size bound, an incomplete set and the
//!   wrong kind of message refused cleanly, before any passphrase is read;
//! - what a camera gives: a snapshot whose code does not decode skipped as a lost frame,
//!   a UR text file with a byte order mark and CRLF, a grid of frames in one image, the
//!   frames only a decoder as strong as the reference's completes;
//! - `--qr` animating on a terminal until Enter;
//! - the whole air gap on the sandbox by QR images only, both UR kinds, and a batch of
//!   100 redeems as at most 100 request frames, byte for byte.

use std::path::{Path, PathBuf};
use std::process::Command;

use bridgectl_qr::{Doc, DocKind, EthSignRequest};
use serde_json::{Value, json};

use crate::flow::units;
use crate::live::Live;
use crate::util::{CountingPassphrase, Dir, TestCommand};

const PASS: &str = "correct horse";
const EIP155_FROM: &str = "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F";
const EIP155_SIGNED: &str = "0xf86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83";
const UUID: &str = "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d";

/// The EIP-155 example transaction, for the npm side.
fn eip155_tx() -> String {
    json!({"nonce": "0x9", "gasPrice": "0x4a817c800", "gasLimit": "0x5208",
        "to": "0x3535353535353535353535353535353535353535", "value": "0xde0b6b3a7640000",
        "data": "0x", "chainId": 1, "from": EIP155_FROM})
    .to_string()
}

/// The flags that pin every field of the EIP-155 example (as in `tests/sign.rs`).
const EIP155_PINNED: &[&str] = &[
    "--yes",
    "--expect-chain-id",
    "1",
    "--expect-to",
    "0x3535353535353535353535353535353535353535",
    "--expect-data",
    "0x",
    "--allow-value",
    "1ether",
    "--max-gas-price",
    "20gwei",
    "--nonce",
    "9",
];

/// `node tests/interop/ur.mjs ARGS`: its stdout. Panics with the fix when the pinned
/// npm packages are missing.
fn node(args: &[&str]) -> String {
    let root = crate::util::repo_root();
    assert!(
        root.join("tools/node_modules/@ngraveio/bc-ur").exists()
            && root.join("tools/node_modules/jsqr").exists(),
        "the interop packages are missing: run `make tools` (installs tools/package.json)"
    );
    let out = Command::new("node")
        .arg(root.join("tests/interop/ur.mjs"))
        .args(args)
        .output()
        .expect("run node (Node.js is needed, as for `make tools`)");
    assert!(
        out.status.success(),
        "node ur.mjs {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf8")
}

/// The files of `dir`, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut f: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .collect();
    f.sort();
    f
}

/// Copies the frames of `src` into `dst` in another order (their names permuted), with
/// the frames at `lost` left out and the one at `dup` twice.
fn shuffled(src: &Path, dst: &Path, lost: &[usize], dup: usize) -> usize {
    std::fs::create_dir_all(dst).expect("mkdir");
    let frames = files(src);
    let mut copied = 0;
    for (i, f) in frames.iter().enumerate() {
        if lost.contains(&i) {
            continue;
        }
        let name = format!("{:04}.png", (i * 37 + 11) % 1009);
        std::fs::copy(f, dst.join(name)).expect("copy");
        copied += 1;
    }
    std::fs::copy(&frames[dup], dst.join("0000-again.png")).expect("copy");
    copied + 1
}

/// Two frames of the second pass (fountain parts) to leave out of `count` frames, when
/// there are enough. A live message (a random txId) differs each run, and which lost
/// fragment its fountain parts recover depends on its checksum: losing first-pass
/// fragments would fail by chance. Lost fragments are tested on fixed messages
/// (`request_frames_read_in_any_order_…` and the qr crate's own tests).
fn second_pass_lost(count: usize) -> Vec<usize> {
    if count >= 8 {
        vec![count / 2, count / 2 + 2]
    } else {
        Vec::new()
    }
}

/// Writes `texts` (frames of one message) as PNG files in `dir`, as `--qr-png` does.
fn write_pngs(dir: &Path, texts: &[String]) {
    std::fs::create_dir_all(dir).expect("mkdir");
    for (i, code) in bridgectl_qr::draw(texts).expect("draw").iter().enumerate() {
        std::fs::write(dir.join(format!("f{i:03}.png")), code.png().expect("png")).expect("png");
    }
}

bctest!(
    an_eth_sign_request_from_the_npm_stack_is_signed_from_qr_and_recovers_there,
    |dir: Dir, _cmd: TestCommand| {
        crate::offline::import_key(&dir);
        // Built there: the EIP-155 example, 4 parts of 40 bytes, 8 frames; read here
        // in reverse, the first fragment lost (frames 5 and 8 carry it again, this
        // message's fountain parts being single fragments), one twice.
        let parts: Vec<String> = node(&["request", &eip155_tx(), UUID, "40"])
            .lines()
            .map(str::to_owned)
            .collect();
        assert_eq!(parts.len(), 8, "{parts:?}");
        assert!(
            parts[0].starts_with("ur:eth-sign-request/1-4/"),
            "{}",
            parts[0]
        );
        let mut lines: Vec<&str> = parts.iter().rev().map(String::as_str).collect();
        lines.remove(7);
        lines.push(&parts[7]);
        dir.write("request.ur", lines.join("\n"));
        let fifo = CountingPassphrase::new(&dir, PASS);
        let mut sign = dir.command();
        sign.args(["sign", "--from-qr", "request.ur", "--out", "answer.ur"])
            .args(["--qr-png", "answer"])
            .args(EIP155_PINNED)
            .env("BRIDGECTL_PASSPHRASE_FILE", &fifo.path);
        let out = sign.output();
        let reads = fifo.finish();
        crate::util::assert_success(&sign.cmd, &out);
        assert_eq!(reads, 1);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("» 4 of 4 parts"), "{stderr}");
        assert!(
            stderr.contains("(from \"interop test\", as it claims) (eth-sign-request input"),
            "{stderr}"
        );
        // The answer, read there from the PNG frame (jsQR, bc-ur, the EIP-4527 registry)
        // and from the UR text file: the request's id, and r || s || v of the published
        // EIP-155 signature.
        let text = std::fs::read_to_string(dir.join("answer.ur")).expect("answer");
        assert!(text.starts_with("ur:eth-signature/"), "{text}");
        let pngs: Vec<String> = files(&dir.join("answer"))
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(
            pngs.len(),
            1 + bridgectl_qr::MAX_LOST_FRAMES,
            "an eth-signature fits one frame, written so that any {} files may be lost",
            bridgectl_qr::MAX_LOST_FRAMES
        );
        for source in [pngs[0].clone(), dir.join("answer.ur").display().to_string()] {
            let read: Value = serde_json::from_str(&node(&["decode", &source])).expect("json");
            assert_eq!(read["type"], "eth-signature", "{read}");
            assert_eq!(read["requestId"], UUID, "{read}");
            assert_eq!(read["origin"], "bridgectl", "{read}");
            let sig = read["signature"].as_str().expect("sig");
            assert_eq!(sig.len(), 130, "65 bytes on chain 1");
            assert_eq!(
                &sig[..64],
                &EIP155_SIGNED[EIP155_SIGNED.len() - 130..][..64]
            );
            assert!(sig.ends_with("25"), "v = 37 (EIP-155, chain 1): {sig}");
            let recovered: Value =
                serde_json::from_str(&node(&["recover", &eip155_tx(), sig])).expect("json");
            assert_eq!(
                recovered["sender"].as_str().expect("sender").to_lowercase(),
                EIP155_FROM.to_lowercase()
            );
            assert_eq!(recovered["valid"], true);
            assert_eq!(recovered["raw"], EIP155_SIGNED);
        }
    }
);

/// The hostile-offline cases' good redeem request (its exact bytes) and its config.
fn redeem_request(dir: &Dir) -> (Vec<u8>, PathBuf) {
    let path =
        crate::util::repo_root().join("crates/tx/tests/hostile-offline/ok_redeem_request.json");
    let case: Value = serde_json::from_slice(&std::fs::read(path).expect("case")).expect("json");
    let config = crate::offline::config(dir, "offline", &case["profile"]);
    let bytes = serde_json::to_vec_pretty(&case["input"]).expect("input");
    (bytes, config)
}

/// The offline side of [`redeem_request`], its key imported: the request, its config
/// and the request as a `bridgectl-doc` UR.
fn offline_request(dir: &Dir) -> (Vec<u8>, PathBuf, bridgectl_qr::Ur) {
    crate::offline::import_key(dir);
    let (request, config) = redeem_request(dir);
    let doc = Doc {
        kind: DocKind::SignRequest,
        bytes: request.clone(),
    };
    (request, config, doc.to_ur())
}

fn sign_cmd(dir: &Dir, config: &Path, fifo: &CountingPassphrase) -> TestCommand {
    let mut cmd = dir.command();
    cmd.args([
        "sign",
        "--yes",
        "--nonce",
        "4",
        "--journal",
        "offline.sqlite3",
        "--config",
    ])
    .args([config])
    .env("BRIDGECTL_PASSPHRASE_FILE", &fifo.path);
    cmd
}

bctest!(
    request_frames_read_in_any_order_sign_the_very_file_and_strangers_are_refused,
    |dir: Dir, _cmd: TestCommand| {
        let (request, config, ur) = offline_request(&dir);
        let texts = bridgectl_qr::frames(&ur).expect("frames");
        let parts = texts.len() / 2;
        assert!(parts >= 3, "{parts} parts");
        write_pngs(&dir.join("request"), &texts);
        // Shuffled, one twice, two fragments lost: the fountain parts make up for them.
        let n = shuffled(&dir.join("request"), &dir.join("shuffled"), &[1, 3], 5);
        assert_eq!(n, texts.len() - 1);
        let fifo = CountingPassphrase::new(&dir, PASS);
        let bundle = sign_cmd(&dir, &config, &fifo)
            .args(["--from-qr", "shuffled"])
            .json();
        assert_eq!(fifo.finish(), 1);
        // The very file: its SHA-256 is the bundle's request hash.
        assert_eq!(
            bundle["requestHash"],
            format!("{}", bridgectl_tx::request::request_hash(&request))
        );
        assert_eq!(bundle["requestKind"], "sign-request");

        // Refused before any passphrase is read, naming why (exit 3, nothing on stdout).
        let other = Doc {
            kind: DocKind::SignRequest,
            bytes: [&request[..], b" "].concat(),
        };
        let stranger = bridgectl_qr::frames(&other.to_ur()).expect("frames");
        write_pngs(&dir.join("mixed"), &texts[..2]);
        write_pngs(&dir.join("mixed/z"), &stranger[2..3]);
        let truncated = &texts[2][..texts[2].len() - 7];
        dir.write(
            "truncated.ur",
            format!("{}\n{}\n{truncated}\n", texts[0], texts[1]),
        );
        dir.write("incomplete.ur", format!("{}\n{}\n", texts[0], texts[1]));
        let huge = vec![b'x'; bridgectl_qr::MAX_MESSAGE + 1];
        let mut over = ur::Encoder::new(&huge, 120, "bridgectl-doc").expect("encoder");
        dir.write("over.ur", over.next_part().expect("part"));
        dir.write(
            "over-single.ur",
            ur::ur::encode(&huge, &ur::Type::Custom("bridgectl-doc")),
        );
        let signature = bridgectl_qr::EthSignature {
            request_id: [7; 16],
            signature: vec![1; 65],
            origin: None,
        };
        dir.write("signature.ur", signature.to_ur().single_part());
        let mut message = EthSignRequest::from_cbor(
            &EthSignRequest::legacy(
                &bridgectl_tx::RawTx::from_value(
                    &serde_json::from_slice::<Value>(&request).expect("json")["rawTx"],
                )
                .expect("rawTx"),
                [1; 16],
                None,
            )
            .to_cbor(),
        )
        .expect("round trip");
        message.data_type = 3;
        dir.write("message.ur", message.to_ur().single_part());
        dir.write("noise.png", b"\x89PNG\r\n\x1a\n not really");
        let cases: &[(&[&str], &str)] = &[
            (
                &["mixed", "mixed/z"],
                "a frame of another message: checksum",
            ),
            (&["truncated.ur"], "malformed UR: bytewords"),
            (
                &["incomplete.ur"],
                &format!("incomplete: 2 of {parts} parts"),
            ),
            (
                &["over.ur"],
                "the announced message length is 65537, over the limit of 65536",
            ),
            (
                &["over-single.ur"],
                "the message is 65537, over the limit of 65536",
            ),
            (
                &["signature.ur"],
                "it holds an eth-signature, and `sign` reads a sign request",
            ),
            (&["message.ur"], "data-type 3 (a personal message)"),
            (&["noise.png"], "not a readable PNG or JPEG image"),
        ];
        for (inputs, want) in cases {
            let fifo = CountingPassphrase::new(&dir, PASS);
            let mut cmd = sign_cmd(&dir, &config, &fifo);
            cmd.args(["--from-qr"]).args(*inputs);
            let err = cmd.fails_with(3);
            assert_eq!(fifo.finish(), 0, "{inputs:?}: the passphrase was read");
            assert!(err.contains(want), "{inputs:?}: {want:?} not in {err}");
        }
    }
);

bctest!(
    qr_animates_on_the_terminal_until_enter,
    |dir: Dir, _cmd: TestCommand| {
        crate::offline::import_key(&dir);
        let (request, config) = redeem_request(&dir);
        let input = dir.write("request.json", &request);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_bridgectl"));
        cmd.arg("sign")
            .arg(&input)
            .args([
                "--yes",
                "--nonce",
                "4",
                "--journal",
                "tty.sqlite3",
                "--qr",
                "--out",
            ])
            .arg(dir.join("bundle.json"))
            .arg("--config")
            .arg(&config);
        dir.confine(&mut cmd);
        cmd.env("BRIDGECTL_PASSPHRASE", PASS);
        let mut p = rexpect::session::spawn_command(cmd, Some(30_000)).expect("spawn on a pty");
        p.exp_string("point the other machine's camera at it")
            .expect("the animation starts");
        // Black on white half blocks, then the cursor back up for the next frame.
        p.exp_string("\x1b[30;107m").expect("a frame");
        p.exp_string("\x1b[").expect("another frame");
        p.send_line("").expect("Enter");
        p.exp_string("stopped showing the answer to")
            .expect("stops");
        p.exp_eof().expect("exits");
        assert!(dir.join("bundle.json").exists());
        // Without a terminal, --qr is refused before anything is done.
        let mut plain = dir.command();
        plain
            .args(["sign", input.to_str().expect("utf8"), "--qr", "--config"])
            .args([&config]);
        let err = plain.fails_with(2);
        assert!(err.contains("--qr draws on the terminal"), "{err}");
    }
);

/// `action exec redeem --out FILE` for 1 ST with QR flags `qr`: (txId, request path).
fn request_by_qr(live: &Live, name: &str, qr: &[&str]) -> (String, String) {
    let amount = units(1, live.sb.info.side.decimals).to_string();
    let req = live.dir.join(format!("{name}.json"));
    let req = req.to_str().expect("utf8").to_owned();
    let dev = live.dev.to_string();
    let input = format!("_amount={amount}");
    let mut args = vec![
        "action",
        "exec",
        "redeem",
        "--from",
        &dev,
        "--input",
        &input,
        "--function",
        "redeem",
        "--out",
        &req,
    ];
    args.extend_from_slice(qr);
    let out = live.ok(&args);
    assert_eq!(out["kind"], "sign-request", "{out:#}");
    (out["txId"].as_str().expect("txId").to_owned(), req)
}

#[test]
fn the_whole_air_gap_by_qr_images_only() {
    let live = Live::shared("qr_airgap");
    let offline = crate::flow::offline_signer(&live, "qr_offline");
    let path = |p: &str| live.dir.join(p).to_str().expect("utf8").to_owned();

    for (kind, answer) in [
        ("eth-sign-request", "eth-signature"),
        ("bridgectl-doc", "bridgectl-doc"),
    ] {
        // Online: the request as frames (the file stays here, for submit).
        let (tx_id, req) = request_by_qr(
            &live,
            kind,
            &["--qr-type", kind, "--qr-png", &path(&format!("{kind}-out"))],
        );
        let frames = files(&live.dir.join(format!("{kind}-out")));
        assert!(!frames.is_empty());
        // Offline: signed from the frames alone, read in another order, one twice and
        // (when there are enough) two of the second pass lost; the answer as frames.
        let lost = second_pass_lost(frames.len());
        shuffled(
            &live.dir.join(format!("{kind}-out")),
            &offline.join(format!("{kind}-in")),
            &lost,
            0,
        );
        let nonce = live.nonce(true, live.dev).to_string();
        let mut sign = offline.command();
        sign.env("BRIDGECTL_PASSPHRASE_FILE", offline.join("pass"))
            .args([
                "sign",
                "--from-qr",
                &format!("{kind}-in"),
                "--yes",
                "--nonce",
                &nonce,
            ])
            .args(["--qr-png", &format!("{kind}-answer")])
            .args(["--out", &format!("{kind}-answer.txt")]);
        sign.args(["--json"]);
        let o = sign.output();
        live.check_secrets(&o);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains(&format!("({answer},")), "{stderr}");
        // stdout: what was signed (the answer is in its file, and its frames).
        let printed = crate::util::strict_json(&String::from_utf8_lossy(&o.stdout));
        crate::json::assert_schema("sign-out", &printed);
        assert_eq!(printed["out"], format!("{kind}-answer.txt"), "{printed:#}");
        let kept = std::fs::read_to_string(offline.join(format!("{kind}-answer.txt")))
            .expect("the answer file");
        if answer == "eth-signature" {
            let ur = printed["ethSignature"].as_str().expect("ur");
            assert!(ur.starts_with("ur:eth-signature/"), "{ur}");
            assert_eq!(kept.trim(), ur);
        } else {
            assert!(kept.contains("\"bridgectl-signed-bundle\""), "{kept}");
        }
        // Online again: the answer from its frames, shuffled; checked against the
        // request kept here and the flow that wrote it; submitted; completed.
        let answer_frames = offline.join(format!("{kind}-answer"));
        let back = live.dir.join(format!("{kind}-back"));
        let lost = second_pass_lost(files(&answer_frames).len());
        shuffled(&answer_frames, &back, &lost, 0);
        let sub = live.ok(&[
            "submit",
            "--from-qr",
            back.to_str().expect("utf8"),
            "--request",
            &req,
            "--wait",
        ]);
        assert_eq!(sub["txId"], tx_id.as_str(), "{sub:#}");
        assert_eq!(sub["checkedAgainstRequest"], true, "{sub:#}");
        assert_eq!(sub["state"], "completed", "{sub:#}");
        assert!(live.mined(true, sub["txHash"].as_str().expect("hash")));
        // A person's history: a redeem (by way of an action) of 1 ST, not an action of
        // base units; its steps spell addresses as every document does.
        let mut c = live.cmd();
        c.args(["history"]);
        let text = String::from_utf8(live.run_ok(c).stdout).expect("utf8");
        let row = text
            .lines()
            .find(|l| l.contains(&tx_id))
            .unwrap_or_else(|| panic!("{tx_id} in {text}"));
        let symbol = &live.sb.info.side.symbol;
        assert!(
            row.contains("redeem (action)") && row.contains(&format!(" 1  {symbol} ")),
            "{text}"
        );
        let mut c = live.cmd();
        c.args(["history", &tx_id]);
        let one = String::from_utf8(live.run_ok(c).stdout).expect("utf8");
        assert!(
            one.contains(&format!(
                "redeem (action) completed 1 {symbol} from {}",
                live.dev
            )),
            "{one}"
        );
        let dev_lower = format!("{:?}", live.dev).to_lowercase();
        assert!(!one.contains(&dev_lower[2..]), "{one}");
    }

    // An eth-signature without the request it answers says what to give.
    let err = live.fails(&["submit", "--from-qr", &path("eth-sign-request-back")], 2);
    assert!(err.contains("give --request FILE"), "{err}");
}

bctest!(
    a_request_read_from_qr_codes_meets_the_refusals_of_a_file,
    |dir: Dir, _cmd: TestCommand| {
        // Every hostile-offline scenario that QR codes can carry: a sign request as a
        // bridgectl-doc (byte for byte), a bare rawTx as an eth-sign-request. Each must
        // end as it ends from a file (crate::offline): refused with the same words
        // before the passphrase, or signed reading it once.
        use bridgectl_tx::request::{InputKind, SignInput};
        crate::offline::import_key(&dir);
        let (mut via_doc, mut via_eth) = (0, 0);
        for (i, (name, case)) in crate::offline::cases().into_iter().enumerate() {
            let bytes = crate::offline::input_bytes(&case);
            let parsed = SignInput::parse(&bytes);
            let ur = match &parsed {
                Ok(input) if input.kind == InputKind::RawTx => {
                    via_eth += 1;
                    EthSignRequest::legacy(&input.raw_tx, [i as u8 + 1; 16], None).to_ur()
                }
                Ok(input) if input.kind != InputKind::SignRequest => continue,
                Err(_) if !String::from_utf8_lossy(&bytes).contains("\"format\"") => continue,
                _ => {
                    via_doc += 1;
                    Doc {
                        kind: DocKind::SignRequest,
                        bytes: bytes.clone(),
                    }
                    .to_ur()
                }
            };
            let frames = bridgectl_qr::frames(&ur).expect("frames");
            dir.write(format!("{name}.ur"), frames.join("\n"));
            let fifo = CountingPassphrase::new(&dir, PASS);
            let mut cmd = dir.command();
            cmd.args(["sign", "--from-qr", &format!("{name}.ur"), "--config"])
                .args([crate::offline::config(&dir, &name, &case["profile"])])
                .args(["--journal", &format!("{name}.sqlite3")])
                .env("BRIDGECTL_PASSPHRASE_FILE", &fifo.path);
            if case["yes"] == true {
                cmd.args(["--yes"]);
            }
            if let Some(n) = case["nonce"].as_u64() {
                cmd.args(["--nonce", &n.to_string()]);
            }
            let out = cmd.output();
            let reads = fifo.finish();
            let stderr = String::from_utf8_lossy(&out.stderr);
            if name.starts_with("ok_") {
                crate::util::assert_success(&cmd.cmd, &out);
                assert_eq!(reads, 1, "{name}: one passphrase read");
                continue;
            }
            let want = case["refused"].as_str().expect("refused");
            assert_eq!(out.status.code(), Some(3), "{name}: {stderr}");
            assert!(stderr.contains(want), "{name}: {want:?} not in {stderr}");
            assert!(out.stdout.is_empty(), "{name}: printed {:?}", out.stdout);
            assert_eq!(reads, 0, "{name}: the passphrase was read");
        }
        assert!(via_doc >= 5 && via_eth >= 8, "doc {via_doc}, eth {via_eth}");
    }
);

/// Online: `batch prepare` of redeems from the test's account, one line per amount of
/// `amounts`, with `--out requests.json --qr-png request-frames`: its frames. Its `next:`
/// line is for the QR way across.
fn prepare_by_qr(live: &Live, amounts: impl Iterator<Item = String>) -> Vec<PathBuf> {
    let dev = live.dev.to_string();
    let lines: Vec<String> = amounts
        .enumerate()
        .map(|(i, amount)| {
            format!(
                "{{\"op\": \"redeem\", \"from\": \"{dev}\", \"amount\": \"{amount}\", \
                 \"id\": \"payout-{i}\"}}\n"
            )
        })
        .collect();
    live.dir.write("payouts.jsonl", lines.concat());
    let path = |p: &str| live.dir.join(p).to_str().expect("utf8").to_owned();
    let mut prepare = live.cmd();
    prepare.args([
        "batch",
        "prepare",
        "payouts.jsonl",
        "--out",
        &path("requests.json"),
        "--qr-png",
        &path("request-frames/"),
    ]);
    let out = live.run_ok(prepare);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let n = lines.len();
    assert!(
        stdout.contains(&format!(": {n} of {n} items prepared")),
        "{stdout}"
    );
    assert!(
        stderr.contains("next: offline, read its frames")
            && stderr.contains("bridgectl sign --from-qr SNAPSHOTS/ --out signed.json")
            && stderr.contains("request-frames/frame-*.png")
            && !stderr.contains("//"),
        "{stderr}"
    );
    files(&live.dir.join("request-frames"))
}

/// Offline: `sign --from-qr batch-in --out signed.json --yes` with the account's next
/// nonce, and `extra` flags; the signed batch, checked to answer the very request file
/// (its SHA-256).
fn sign_batch_by_qr(
    live: &Live,
    offline: &Dir,
    extra: &[&str],
) -> bridgectl_tx::batch::SignedBatch {
    let nonce = live.nonce(true, live.dev).to_string();
    let mut sign = offline.command();
    sign.env("BRIDGECTL_PASSPHRASE_FILE", offline.join("pass"))
        .args([
            "sign",
            "--from-qr",
            "batch-in",
            "--out",
            "signed.json",
            "--yes",
        ])
        .args(["--nonce-for", &format!("{}={nonce}", live.dev)])
        .args(extra);
    let o = sign.output();
    live.check_secrets(&o);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let signed = bridgectl_tx::batch::SignedBatch::parse(
        &std::fs::read(offline.join("signed.json")).expect("signed"),
    )
    .expect("a signed batch");
    let request = std::fs::read(live.dir.join("requests.json")).expect("request");
    assert_eq!(
        signed.request_hash.to_string(),
        format!("{}", bridgectl_tx::request::request_hash(&request))
    );
    signed
}

#[test]
fn a_small_batch_crosses_the_air_gap_as_qr_frames_both_ways() {
    let live = Live::shared("qr_batch");
    let offline = crate::flow::offline_signer(&live, "qr_batch_offline");
    let path = |p: &str| live.dir.join(p).to_str().expect("utf8").to_owned();
    // Online: the batch request as frames (the file stays here too).
    let frames = prepare_by_qr(&live, (1..=3).map(|i| i.to_string()));
    shuffled(
        &live.dir.join("request-frames"),
        &offline.join("batch-in"),
        &second_pass_lost(frames.len()),
        0,
    );
    // Offline: read from the frames alone, signed, answered as frames; the request read
    // from frames is the very file.
    let signed = sign_batch_by_qr(&live, &offline, &["--qr-png", "answer"]);
    // Online again: the signed batch from its frames, shuffled.
    shuffled(
        &offline.join("answer"),
        &live.dir.join("answer-back"),
        &[],
        0,
    );
    // A second submit while one runs (here: while another process holds the batch's run
    // lock) says so, with a code of its own.
    let locks = live.dir.join("journal.batch-locks");
    std::fs::create_dir_all(&locks).expect("mkdir");
    let held =
        std::fs::File::create(locks.join(format!("{}.lock", signed.batch_id))).expect("lock file");
    held.try_lock().expect("lock");
    let submit = || {
        let mut c = live.cmd();
        c.args([
            "--json",
            "batch",
            "submit",
            "--from-qr",
            &path("answer-back"),
        ]);
        c
    };
    let err = submit().fails_with(11);
    assert!(err.contains("is running in another process"), "{err}");
    drop(held);
    let out = live.run_ok(submit());
    let text = String::from_utf8_lossy(&out.stdout);
    let (first, rest) = text.split_once('\n').expect("lines");
    let checked = crate::util::strict_json(first);
    assert_eq!(checked["checked"]["requestMatches"], true, "{checked:#}");
    let (_, summary) = crate::batch::parse_results(rest.as_bytes());
    assert_eq!(summary["completed"], 3, "{summary:#}");
}

/// A fixture of the qr crate (drawn or written by independent tools).
fn qr_fixture(name: &str) -> PathBuf {
    crate::util::repo_root()
        .join("crates/qr/tests/fixtures")
        .join(name)
}

bctest!(
    what_a_camera_gives_reads_an_undecodable_snapshot_skipped_a_bom_file_a_grid_of_frames,
    |dir: Dir, _cmd: TestCommand| {
        let (request, config, ur) = offline_request(&dir);
        let texts = bridgectl_qr::frame_set(&ur).expect("frames");
        // The frames plus a grainy snapshot, read first: its code is found and does not
        // decode, so it is skipped with a note, as a lost frame, and the set completes.
        write_pngs(&dir.join("snapshots"), &texts);
        std::fs::copy(
            qr_fixture("grainy-frame.png"),
            dir.join("snapshots/000-grainy.png"),
        )
        .expect("copy");
        let fifo = CountingPassphrase::new(&dir, PASS);
        let mut sign = sign_cmd(&dir, &config, &fifo);
        sign.args(["--from-qr", "snapshots", "--out", "bundle.json"]);
        let out = sign.output();
        assert_eq!(fifo.finish(), 1);
        crate::util::assert_success(&sign.cmd, &out);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("» skipped: a QR code at (")
                && stderr.contains("does not decode")
                && stderr.contains("000-grainy.png"),
            "{stderr}"
        );
        let hash = format!("{}", bridgectl_tx::request::request_hash(&request));
        let bundle: Value =
            serde_json::from_slice(&std::fs::read(dir.join("bundle.json")).expect("bundle"))
                .expect("json");
        assert_eq!(bundle["requestHash"], hash.as_str());

        // A UR text file as a Windows editor saves it: a byte order mark, CRLF, upper
        // case. The same request: its bytes again from this journal, nothing unlocked.
        let text = texts
            .iter()
            .map(|t| t.to_ascii_uppercase())
            .collect::<Vec<_>>()
            .join("\r\n");
        dir.write("bom.ur", format!("\u{feff}{text}\r\n"));
        let fifo = CountingPassphrase::new(&dir, PASS);
        let again = sign_cmd(&dir, &config, &fifo)
            .args(["--from-qr", "bom.ur"])
            .json();
        fifo.finish();
        assert_eq!(again["requestHash"], hash.as_str(), "{again:#}");

        // A 2x2 grid of frames on one screen (drawn by segno): four frames read from the
        // one image, three of which rqrr alone would hide.
        let fifo = CountingPassphrase::new(&dir, PASS);
        let mut grid = sign_cmd(&dir, &config, &fifo);
        grid.args(["--from-qr"]).args([qr_fixture("grid-2x2.png")]);
        let err = grid.fails_with(3);
        assert_eq!(fifo.finish(), 0);
        assert!(err.contains("of 7 parts, from 4 frames"), "{err}");
        // 11 of 14 frames the reference decoder completes (and ur 0.5.2 does not): the
        // message is rebuilt, then refused for what it is (no sign request).
        let fifo = CountingPassphrase::new(&dir, PASS);
        let mut eleven = sign_cmd(&dir, &config, &fifo);
        eleven
            .args(["--from-qr"])
            .args([qr_fixture("fountain-7-parts-11-of-14.ur")]);
        let err = eleven.fails_with(3);
        assert_eq!(fifo.finish(), 0);
        assert!(
            err.contains("» read bridgectl-doc (7 parts)") && !err.contains("incomplete"),
            "{err}"
        );
    }
);

bctest!(
    a_qr_png_frame_set_decodes_there_byte_for_byte_and_with_any_two_frames_lost,
    |dir: Dir, _cmd: TestCommand| {
        crate::offline::import_key(&dir);
        let (request, config) = redeem_request(&dir);
        dir.write("request.json", &request);
        let fifo = CountingPassphrase::new(&dir, PASS);
        let mut sign = sign_cmd(&dir, &config, &fifo);
        sign.args([
            "request.json",
            "--out",
            "bundle.json",
            "--qr-png",
            "frames/",
        ]);
        let out = sign.output();
        fifo.finish();
        crate::util::assert_success(&sign.cmd, &out);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("any 2 may be lost) -> frames/frame-*.png"),
            "{stderr}"
        );
        let pngs = files(&dir.join("frames"));
        let texts: Vec<String> = pngs
            .iter()
            .map(|p| {
                let scan = bridgectl_qr::read(&std::fs::read(p).expect("png")).expect("read");
                assert_eq!(scan.texts.len(), 1, "{}", p.display());
                scan.texts[0].clone()
            })
            .collect();
        let parts: usize = texts[0]
            .split('/')
            .nth(1)
            .and_then(|i| i.split_once('-'))
            .and_then(|(_, n)| n.parse().ok())
            .expect("a multi-part UR");
        assert!(
            parts >= 3 && pngs.len() < 3 * parts,
            "{parts} parts, {} frames",
            pngs.len()
        );
        let bundle = std::fs::read(dir.join("bundle.json")).expect("bundle");
        // Read there (jsQR, @ngraveio/bc-ur), backwards: the very file.
        let mut args = vec!["decode".to_owned()];
        args.extend(pngs.iter().rev().map(|p| p.display().to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let read: Value = serde_json::from_str(&node(&args)).expect("json");
        assert_eq!(read["type"], "bridgectl-doc", "{read}");
        assert_eq!(read["kind"], "signed-bundle", "{read}");
        assert_eq!(read["document"].as_str(), std::str::from_utf8(&bundle).ok());
        // Every way of losing two frames: bridgectl's decoder rebuilds the bundle...
        let mut sets = 0;
        for a in 0..texts.len() {
            for b in a + 1..texts.len() {
                let mut assembler = bridgectl_qr::Assembler::new();
                for (i, t) in texts.iter().enumerate() {
                    if i != a && i != b {
                        assembler.receive(t).expect("a frame");
                    }
                }
                let ur = assembler
                    .finish()
                    .unwrap_or_else(|e| panic!("frames {a} and {b} lost: {e}"));
                let bridgectl_qr::Payload::Doc(doc) =
                    bridgectl_qr::Payload::from_ur(&ur).expect("payload")
                else {
                    panic!("a bridgectl-doc")
                };
                assert_eq!(doc.bytes, bundle, "frames {a} and {b} lost");
                sets += 1;
            }
        }
        assert_eq!(sets, texts.len() * (texts.len() - 1) / 2);
        // ... and so does the reference's (@ngraveio/bc-ur, reading the PNGs by jsQR).
        let mut args = vec!["lose".to_owned(), "2".to_owned()];
        args.extend(pngs.iter().map(|p| p.display().to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let lost: Value = serde_json::from_str(&node(&args)).expect("json");
        assert_eq!(lost["sets"], sets, "{lost}");
        assert_eq!(lost["failed"], json!([]), "{lost}");
    }
);

#[test]
fn a_batch_of_100_redeems_crosses_as_at_most_100_frames_byte_for_byte() {
    let live = Live::shared("qr_batch_100");
    let offline = crate::flow::offline_signer(&live, "qr_batch_100_offline");
    let frames = prepare_by_qr(&live, (1..=100).map(|i| format!("0.{i:03}")));
    assert!(
        frames.len() <= 100,
        "{} frames for 100 redeems",
        frames.len()
    );
    // Read offline from the frames alone, in another order, two of them lost: the
    // signed batch answers the very request file.
    shuffled(
        &live.dir.join("request-frames"),
        &offline.join("batch-in"),
        &[3, frames.len() / 2],
        0,
    );
    let signed = sign_batch_by_qr(&live, &offline, &[]);
    assert_eq!(signed.items.len(), 100);
}

bctest!(
    what_needs_no_frames_is_refused_before_any_frame_is_read,
    |dir: Dir, _cmd: TestCommand| {
        let (_, config, _) = offline_request(&dir);
        // A batch request's frames, a few dozen (what is in them is never read here).
        let mut x = 7u64;
        let noise: String = (0..3000)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                char::from(b"0123456789abcdef"[(x >> 60) as usize])
            })
            .collect();
        let doc = Doc {
            kind: DocKind::BatchRequest,
            bytes: format!("{{\"format\": \"bridgectl-batch-request\", \"x\": \"{noise}\"}}\n")
                .into_bytes(),
        };
        write_pngs(
            &dir.join("camera"),
            &bridgectl_qr::frame_set(&doc.to_ur()).expect("frames"),
        );
        dir.write("taken.json", "{}");
        let cases: &[(&[&str], i32, &str)] = &[
            (
                &["--qr-png", "answer"],
                2,
                "--from-qr with --qr or --qr-png: give --out FILE too",
            ),
            (
                &["--out", "taken.json", "--qr-png", "answer"],
                10,
                "taken.json already exists",
            ),
            (&["--out", "taken.json"], 10, "taken.json already exists"),
        ];
        for (flags, code, want) in cases {
            let fifo = CountingPassphrase::new(&dir, PASS);
            let mut sign = sign_cmd(&dir, &config, &fifo);
            sign.args(["--from-qr", "camera"]).args(*flags);
            let err = sign.fails_with(*code);
            assert_eq!(fifo.finish(), 0);
            assert!(err.contains(want), "{flags:?}: {want:?} not in {err}");
            assert!(!err.contains('»'), "{flags:?}: frames were read: {err}");
            assert!(!dir.join("answer").exists());
        }
        // With --out, the frames are read (and this one refused for what it holds).
        let fifo = CountingPassphrase::new(&dir, PASS);
        let mut sign = sign_cmd(&dir, &config, &fifo);
        sign.args([
            "--from-qr",
            "camera",
            "--out",
            "signed.json",
            "--qr-png",
            "answer",
        ]);
        let err = sign.fails_with(3);
        assert_eq!(fifo.finish(), 0);
        assert!(err.contains("» read bridgectl-doc"), "{err}");
    }
);
