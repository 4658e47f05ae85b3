//! The conventions the targets share for cutting one fuzz input into parts.

/// Splits `data` at the first `\n`: `(line, rest)`; `rest` is empty when there is none.
pub(crate) fn split_line(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}
