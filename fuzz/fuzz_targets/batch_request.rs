#![no_main]
//! See `bridgectl_fuzzing::batch_request` for the input layout and the properties checked.

libfuzzer_sys::fuzz_target!(|data: &[u8]| bridgectl_fuzzing::batch_request(data));
