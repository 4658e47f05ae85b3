#![no_main]
//! See `bridgectl_fuzzing::signed_batch` for the input layout and the properties checked.

libfuzzer_sys::fuzz_target!(|data: &[u8]| bridgectl_fuzzing::signed_batch(data));
