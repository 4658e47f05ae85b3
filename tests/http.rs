//! What the HTTP clients do against hostile or careless servers, with stub servers on
//! loopback (no sandbox): a body without end is refused after the cap, a proxy from
//! `HTTP_PROXY` never sees the plain-http loopback requests (they carry the token), and a
//! node URL's API key never reaches the terminal or the journal.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::util::{Dir, TestCommand};

const KEY_4646: &str = "4646464646464646464646464646464646464646464646464646464646464646";
const ADDR_4646: &str = "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F";
const TOKEN: &str = "stub-token-never-to-a-proxy";
const NODE_KEY: &str = "NODE-API-KEY-abc123";

/// What a stub answers to each request.
#[derive(Clone, Copy)]
enum Answer {
    /// A platform error envelope, 400.
    Refusal,
    /// 200 with no length and 512 MiB of body (or until the client hangs up).
    Endless,
}

/// A stub HTTP server on 127.0.0.1: records each request head, answers `answer`.
struct Stub {
    url: String,
    heads: Arc<Mutex<Vec<String>>>,
    connections: Arc<AtomicUsize>,
}

impl Stub {
    fn start(answer: Answer) -> Stub {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind stub");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let (h, c) = (heads.clone(), connections.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                c.fetch_add(1, Ordering::SeqCst);
                let h = h.clone();
                std::thread::spawn(move || serve(stream, answer, &h));
            }
        });
        Stub {
            url,
            heads,
            connections,
        }
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().expect("heads").clone()
    }
}

fn serve(mut stream: TcpStream, answer: Answer, heads: &Mutex<Vec<String>>) {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") && buf.len() < 64 * 1024 {
        match stream.read(&mut byte) {
            Ok(1) => buf.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let length = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
        })
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    let _ = stream.read_exact(&mut body);
    heads.lock().expect("heads").push(head);
    match answer {
        Answer::Refusal => {
            let body = r#"{"result":false,"status":400,"code":"STUB","message":"stub refusal"}"#;
            let _ = write!(
                stream,
                "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
        Answer::Endless => {
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{\"data\":\"",
            );
            let chunk = vec![b'a'; 64 * 1024];
            for _ in 0..(512 * 1024 * 1024 / chunk.len()) {
                if stream.write_all(&chunk).is_err() {
                    return;
                }
            }
        }
    }
}

/// A complete profile for the stubs: platform at `base_url`, the side chain's node at
/// `side_rpc_url`.
fn write_profile(dir: &Dir, base_url: &str, side_rpc_url: &str) {
    dir.write(
        "xdg/config/bridgectl/config.toml",
        format!(
            r#"[profiles.default]
base_url = "{base_url}"
main_environment_id = "main-env"
side_environment_id = "side-env"
main_symbol = "MT"
side_symbol = "ST"
main_decimals = 18
side_decimals = 18
mt_contract = "0x3535353535353535353535353535353535353535"
st_contract = "0x3636363636363636363636363636363636363636"
main_chain_id = 31337
side_chain_id = 31338
side_rpc_url = "{side_rpc_url}"
redeem_action = "redeem"
"#
        ),
    );
}

/// Imports the 0x46… key (test KDF) and returns a command with the token and
/// passphrase set and the journal in `dir`.
fn ready(dir: &Dir) -> TestCommand {
    let pw = dir.write("pw", "pw\n");
    let out = dir
        .command()
        .args(["key", "import", "k", "--raw", "--unsafe-test-kdf"])
        .args([Path::new("--passphrase-file"), &pw])
        .output_with_stdin(format!("0x{KEY_4646}\n").as_bytes());
    crate::util::assert_success(&Command::new("bridgectl key import"), &out);
    let mut cmd = dir.command();
    cmd.env("BRIDGECTL_ACCESS_TOKEN", TOKEN)
        .env("BRIDGECTL_PASSPHRASE_FILE", &pw)
        .env("BRIDGECTL_JOURNAL", dir.join("journal.sqlite3"))
        .env("BRIDGECTL_RETRIES", "0");
    cmd
}

// A 512 MiB answer to the action call: refused once the first MiB is read, with an error
// that says so (bench/bounded-body.sh measures the peak RSS of the same case).
bctest!(
    endless_answer_is_refused_after_the_cap,
    |dir: Dir, _cmd: TestCommand| {
        let platform = Stub::start(Answer::Endless);
        write_profile(&dir, &platform.url, "http://127.0.0.1:9");
        let mut cmd = ready(&dir);
        cmd.args(["redeem", "--from", ADDR_4646, "--amount", "1", "--yes"]);
        let started = std::time::Instant::now();
        let out = cmd.output();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{err}");
        assert!(
            err.contains("larger than 1048576 bytes"),
            "no clear refusal: {err}"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "the body was read far past the cap"
        );
    }
);

// HTTP_PROXY (and friends) set, base_url plain http on loopback: the request carrying the
// bearer token goes straight to the platform; the proxy stub sees no connection at all.
bctest!(
    loopback_http_never_goes_through_a_proxy,
    |dir: Dir, _cmd: TestCommand| {
        let platform = Stub::start(Answer::Refusal);
        let proxy = Stub::start(Answer::Refusal);
        write_profile(&dir, &platform.url, "http://127.0.0.1:9");
        let mut cmd = ready(&dir);
        for var in [
            "HTTP_PROXY",
            "http_proxy",
            "HTTPS_PROXY",
            "https_proxy",
            "ALL_PROXY",
            "all_proxy",
        ] {
            cmd.env(var, &proxy.url);
        }
        cmd.args(["redeem", "--from", ADDR_4646, "--amount", "1", "--yes"]);
        let out = cmd.output();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains("stub refusal"),
            "{err}"
        );
        assert_eq!(
            proxy.connections.load(Ordering::SeqCst),
            0,
            "the proxy saw: {:?}",
            proxy.heads()
        );
        let heads = platform.heads();
        assert!(
            heads
                .iter()
                .any(|h| h.to_ascii_lowercase().contains("authorization: bearer")),
            "{heads:?}"
        );
    }
);

// A node URL with an API key in its path (`https://host/v3/KEY`): the failure to reach
// the node is reported, but neither stderr, stdout, `history` nor the journal file
// holds the key.
bctest!(
    node_url_api_key_stays_out_of_output_and_journal,
    |dir: Dir, _cmd: TestCommand| {
        let platform = Stub::start(Answer::Refusal);
        // Port 9 (discard) is closed on loopback: the connection is refused.
        let node = format!("http://127.0.0.1:9/v3/{NODE_KEY}?apikey={NODE_KEY}");
        write_profile(&dir, &platform.url, &node);
        let mut cmd = ready(&dir);
        cmd.args([
            "transfer", "--token", "st", "--from", ADDR_4646, "--to", ADDR_4646, "--amount", "1",
            "--yes",
        ]);
        let out = cmd.output();
        assert!(!out.status.success());
        let mut texts = vec![
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ];
        // The node is asked which chain it is first of all (it is believed for its own only).
        assert!(texts[1].contains("eth_chainId"), "{}", texts[1]);
        let history = dir
            .command()
            .env("BRIDGECTL_JOURNAL", dir.join("journal.sqlite3"))
            .args(["--json", "history"])
            .output();
        texts.push(String::from_utf8_lossy(&history.stdout).into_owned());
        // The journal on disk is the file and its write-ahead log (kept between runs).
        let mut journal = std::fs::read(dir.join("journal.sqlite3")).expect("journal");
        journal.extend(std::fs::read(dir.join("journal.sqlite3-wal")).unwrap_or_default());
        texts.push(String::from_utf8_lossy(&journal).into_owned());
        for text in &texts {
            assert!(
                !text.contains(NODE_KEY),
                "the node's API key leaked:\n{text}"
            );
            assert!(!text.contains(KEY_4646), "the private key leaked:\n{text}");
            assert!(!text.contains(TOKEN), "the token leaked:\n{text}");
        }
        assert!(
            texts[3].contains("build-failed"),
            "the failure is journaled"
        );
    }
);
