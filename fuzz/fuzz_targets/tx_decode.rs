#![no_main]
//! See `bridgectl_fuzzing::tx_decode` for the input layout and the properties checked.

libfuzzer_sys::fuzz_target!(|data: &[u8]| bridgectl_fuzzing::tx_decode(data));
