//! Reading the files a camera or a person hands over: images with several codes, images
//! whose code does not decode, UR text as editors save it. Fixtures made by independent
//! tools (segno, the reference BC-UR encoder) are in `fixtures/` (README.md there).

use bridgectl_qr::{Assembler, Ur};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn lines(name: &str) -> Vec<String> {
    String::from_utf8(fixture(name))
        .expect("utf8")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The 7-part message of the fountain fixtures.
fn message() -> Ur {
    let mut a = Assembler::new();
    a.receive(&lines("fountain-7-parts-message.ur")[0])
        .expect("single part");
    a.finish().expect("message")
}

#[test]
fn every_code_of_a_grid_of_frames_is_read() {
    // Four frames drawn by segno in a 2x2 grid, quiet zone against quiet zone (zbarimg
    // reads 4): their finder patterns line up across codes.
    let scan = bridgectl_qr::read(&fixture("grid-2x2.png")).expect("image");
    assert!(scan.undecodable.is_empty(), "{:?}", scan.undecodable);
    let mut found = scan.texts.clone();
    found.sort();
    let mut drawn: Vec<String> = lines("fountain-7-parts-11-of-14.ur")[..4]
        .iter()
        .map(|t| t.to_ascii_uppercase())
        .collect();
    drawn.sort();
    assert_eq!(found, drawn);
}

#[test]
fn a_code_that_does_not_decode_is_skipped_and_the_read_goes_on() {
    // A grainy snapshot: its code is found, its modules do not decode.
    let grainy = fixture("grainy-frame.png");
    let scan = bridgectl_qr::read(&grainy).expect("an image, not an error");
    assert!(scan.texts.is_empty());
    assert_eq!(scan.undecodable.len(), 1, "{:?}", scan.undecodable);
    assert!(
        scan.undecodable[0]
            .to_string()
            .starts_with("a QR code at ("),
        "{}",
        scan.undecodable[0]
    );
    // A directory's worth of images: the grainy snapshot second, among clean frames.
    let ur = message();
    let texts = bridgectl_qr::frames(&ur).expect("frames");
    let mut images: Vec<Vec<u8>> = bridgectl_qr::draw(&texts)
        .expect("draw")
        .iter()
        .map(|c| c.png().expect("png"))
        .collect();
    images.insert(1, grainy);
    let (mut a, mut notes) = (Assembler::new(), Vec::new());
    for image in &images {
        let scan = bridgectl_qr::read(image).expect("image");
        notes.extend(scan.undecodable.iter().map(ToString::to_string));
        for text in &scan.texts {
            a.receive(text).expect("a frame of the message");
        }
        if a.is_complete() {
            break;
        }
    }
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(a.finish().expect("complete"), ur);
}

#[test]
fn ur_text_with_a_byte_order_mark_crlf_and_upper_case_reads() {
    let frames = lines("fountain-7-parts-11-of-14.ur");
    let text = format!(
        "\u{feff}{}\r\n\r\n",
        frames.join("\r\n").to_ascii_uppercase()
    );
    assert!(bridgectl_qr::is_ur_text(text.as_bytes()));
    let scan = bridgectl_qr::read(text.as_bytes()).expect("text");
    assert_eq!(scan.texts.len(), 11);
    let mut a = Assembler::new();
    for t in &scan.texts {
        a.receive(t).expect("frame");
    }
    assert_eq!(a.finish().expect("complete"), message());
    let e = bridgectl_qr::read(b"\xef\xbb\xbfur:bridgectl-doc/\xff").expect_err("not utf-8");
    assert!(e.to_string().contains("not UTF-8"), "{e}");
}
