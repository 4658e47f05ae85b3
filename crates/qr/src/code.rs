//! QR codes: drawing a frame's text (for a terminal or as a PNG) and reading the texts
//! of the QR codes in an image (a PNG screenshot, a JPEG from a phone or a webcam).
//!
//! UR text is drawn in upper case, which QR's alphanumeric mode holds in 5.5 bits a
//! character instead of 8, at error correction L (a screen is not a dirty label), and
//! every frame of one animation at the same version, so the code does not change size
//! from frame to frame.

use std::io::Cursor;

use image::{ImageEncoder, ImageReader, Limits};
use qrcode::{Color, EcLevel, QrCode};

use crate::error::Error;

/// The largest image read, per side: a 12-megapixel phone photo (4032 x 3024) fits.
pub const MAX_IMAGE_SIDE: u32 = 4096;

/// The most memory an image decoder may take.
const MAX_IMAGE_ALLOC: u64 = 256 * 1024 * 1024;

/// Pixels per module in a PNG frame.
pub const PNG_SCALE: u32 = 8;

/// Modules of quiet zone around a PNG frame (the standard's four).
const PNG_QUIET: usize = 4;

/// Modules of quiet zone around a frame on a terminal (two: terminal space is short,
/// and a terminal's own background is around it).
const TERMINAL_QUIET: usize = 2;

/// One QR code, as its modules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Code {
    width: usize,
    dark: Vec<bool>,
}

/// The QR codes of `texts` (the frames of one animation), all at the version the
/// longest needs.
pub fn draw(texts: &[String]) -> Result<Vec<Code>, Error> {
    let upper: Vec<String> = texts.iter().map(|t| t.to_ascii_uppercase()).collect();
    let Some(longest) = upper.iter().max_by_key(|t| t.len()) else {
        return Ok(Vec::new());
    };
    let render = |t: &str, e| Error::Render {
        len: t.len(),
        source: e,
    };
    let version = QrCode::with_error_correction_level(longest, EcLevel::L)
        .map_err(|e| render(longest, e))?
        .version();
    upper
        .iter()
        .map(|t| {
            let code = QrCode::with_version(t, version, EcLevel::L).map_err(|e| render(t, e))?;
            Ok(Code {
                width: code.width(),
                dark: code
                    .to_colors()
                    .into_iter()
                    .map(|c| c == Color::Dark)
                    .collect(),
            })
        })
        .collect()
}

impl Code {
    /// Modules per side.
    pub fn width(&self) -> usize {
        self.width
    }

    /// The QR version (1 to 40).
    pub fn version(&self) -> usize {
        (self.width - 17) / 4
    }

    fn dark_at(&self, x: isize, y: isize, quiet: usize) -> bool {
        let (x, y) = (x - quiet as isize, y - quiet as isize);
        x >= 0
            && y >= 0
            && (x as usize) < self.width
            && (y as usize) < self.width
            && self.dark[y as usize * self.width + x as usize]
    }

    /// The code as lines of text for a terminal: two modules a character (upper and
    /// lower half blocks), black on white whatever the terminal's colours, with a
    /// quiet zone of two modules. `width + 4` columns by `(width + 5) / 2` lines.
    pub fn terminal_lines(&self) -> Vec<String> {
        let side = (self.width + 2 * TERMINAL_QUIET) as isize;
        let mut lines = Vec::new();
        let mut y = 0;
        while y < side {
            // Black foreground on a white background.
            let mut line = String::from("\x1b[30;107m");
            for x in 0..side {
                let top = self.dark_at(x, y, TERMINAL_QUIET);
                let bottom = y + 1 < side && self.dark_at(x, y + 1, TERMINAL_QUIET);
                line.push(match (top, bottom) {
                    (true, true) => '█',
                    (true, false) => '▀',
                    (false, true) => '▄',
                    (false, false) => ' ',
                });
            }
            line.push_str("\x1b[0m");
            lines.push(line);
            y += 2;
        }
        lines
    }

    /// The code as a greyscale PNG, [`PNG_SCALE`] pixels a module, with the standard
    /// quiet zone of four modules.
    pub fn png(&self) -> Result<Vec<u8>, Error> {
        let modules = self.width + 2 * PNG_QUIET;
        let side = modules * PNG_SCALE as usize;
        let mut pixels = vec![255u8; side * side];
        for y in 0..side {
            for x in 0..side {
                let (mx, my) = (x / PNG_SCALE as usize, y / PNG_SCALE as usize);
                if self.dark_at(mx as isize, my as isize, PNG_QUIET) {
                    pixels[y * side + x] = 0;
                }
            }
        }
        let mut out = Vec::new();
        image::codecs::png::PngEncoder::new(&mut out)
            .write_image(
                &pixels,
                side as u32,
                side as u32,
                image::ExtendedColorType::L8,
            )
            .map_err(Error::Png)?;
        Ok(out)
    }
}

/// The most rounds of [`codes_in_image`]: each finds at least one more code.
const MAX_ROUNDS: usize = 64;

/// A QR code found in an image whose modules do not decode (a blurred or grainy
/// snapshot, a glare): its corners in pixels and why.
#[derive(Debug)]
pub struct Undecodable {
    /// The corners of the code, in pixels (x, y), as they were found.
    pub corners: [(i32, i32); 4],
    /// Why it does not decode.
    pub error: rqrr::DeQRError,
}

impl std::fmt::Display for Undecodable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (x, y) = self.corners[0];
        write!(
            f,
            "a QR code at ({x}, {y}) does not decode ({})",
            self.error
        )
    }
}

/// The texts of the QR codes in an image (PNG or JPEG), and the codes found that do not
/// decode. Images over [`MAX_IMAGE_SIDE`] pixels a side are refused before they are
/// decoded.
///
/// Several codes side by side (a grid of frames on one screen) can have their finder
/// patterns paired across codes, which gives a grid that does not decode and hides the
/// codes whose patterns it took. So the image is read in rounds: the codes that decode
/// are painted over and the rest is looked at again, until a round decodes nothing new;
/// what still does not decode then is returned as [`Undecodable`].
pub(crate) fn codes_in_image(bytes: &[u8]) -> Result<(Vec<String>, Vec<Undecodable>), Error> {
    let mut reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| Error::Image(image::ImageError::IoError(e)))?;
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_IMAGE_SIDE);
    limits.max_image_height = Some(MAX_IMAGE_SIDE);
    limits.max_alloc = Some(MAX_IMAGE_ALLOC);
    reader.limits(limits);
    let mut luma = reader.decode().map_err(Error::Image)?.into_luma8();
    let (w, h) = (luma.width() as usize, luma.height() as usize);
    let mut texts = Vec::new();
    for _ in 0..MAX_ROUNDS {
        let mut prepared = rqrr::PreparedImage::prepare_from_greyscale(w, h, |x, y| {
            luma.get_pixel(x as u32, y as u32)[0]
        });
        let mut decoded = Vec::new();
        let mut failed = Vec::new();
        for grid in prepared.detect_grids() {
            let corners = grid.bounds.map(|p| (p.x, p.y));
            match grid.decode() {
                Ok((_, text)) => {
                    texts.push(text);
                    decoded.push(corners);
                }
                Err(error) => failed.push(Undecodable { corners, error }),
            }
        }
        if decoded.is_empty() || failed.is_empty() {
            return Ok((texts, failed));
        }
        for corners in &decoded {
            paint_over(&mut luma, corners);
        }
    }
    Ok((texts, Vec::new()))
}

/// Paints the quadrilateral `corners`, grown by a tenth around its centre (the finder
/// patterns' edges and a module around), white.
fn paint_over(luma: &mut image::GrayImage, corners: &[(i32, i32); 4]) {
    let centre = corners.iter().fold((0.0, 0.0), |(x, y), c| {
        (x + f64::from(c.0) / 4.0, y + f64::from(c.1) / 4.0)
    });
    let grown = corners.map(|(x, y)| {
        (
            centre.0 + (f64::from(x) - centre.0) * 1.1,
            centre.1 + (f64::from(y) - centre.1) * 1.1,
        )
    });
    let clamp = |v: f64, max: u32| v.clamp(0.0, f64::from(max.saturating_sub(1))) as u32;
    let xs = grown.map(|p| p.0);
    let ys = grown.map(|p| p.1);
    let (x0, x1) = (
        clamp(xs.iter().copied().fold(f64::MAX, f64::min), luma.width()),
        clamp(xs.iter().copied().fold(f64::MIN, f64::max), luma.width()),
    );
    let (y0, y1) = (
        clamp(ys.iter().copied().fold(f64::MAX, f64::min), luma.height()),
        clamp(ys.iter().copied().fold(f64::MIN, f64::max), luma.height()),
    );
    for y in y0..=y1 {
        for x in x0..=x1 {
            if inside(&grown, f64::from(x), f64::from(y)) {
                luma.put_pixel(x, y, image::Luma([255]));
            }
        }
    }
}

/// Whether (x, y) is inside the convex quadrilateral `q` (corners in order, either way
/// round).
fn inside(q: &[(f64, f64); 4], x: f64, y: f64) -> bool {
    let sides = (0..4).map(|i| {
        let (a, b) = (q[i], q[(i + 1) % 4]);
        (b.0 - a.0) * (y - a.1) - (b.1 - a.1) * (x - a.0)
    });
    let (mut left, mut right) = (false, false);
    for s in sides {
        left |= s > 0.0;
        right |= s < 0.0;
    }
    !(left && right)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drawn_frame_reads_back_from_its_png() {
        let texts = vec![
            "ur:bridgectl-doc/1-3/lpadaxcfaxhdcxplnblyhkptlfhp".to_owned(),
            "ur:bridgectl-doc/2-3/lpaoaxcfaxhdcxplnblyhkptlfhpjywtkgso".to_owned(),
        ];
        let codes = draw(&texts).expect("draw");
        assert_eq!(
            codes[0].width(),
            codes[1].width(),
            "one version for all frames"
        );
        for (code, text) in codes.iter().zip(&texts) {
            let png = code.png().expect("png");
            let (texts, failed) = codes_in_image(&png).expect("read");
            assert_eq!(texts, vec![text.to_ascii_uppercase()]);
            assert!(failed.is_empty());
            let lines = code.terminal_lines();
            assert_eq!(lines.len(), (code.width() + 5) / 2);
        }
        // An image without a code reads as none; bytes that are no image are refused.
        let blank = Code {
            width: 21,
            dark: vec![false; 21 * 21],
        };
        let (texts, failed) = codes_in_image(&blank.png().expect("png")).expect("blank");
        assert!(texts.is_empty() && failed.is_empty());
        assert!(codes_in_image(b"not an image").is_err());
    }
}
