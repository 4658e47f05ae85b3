#![no_main]
//! See `bridgectl_fuzzing::json` for the properties checked.

libfuzzer_sys::fuzz_target!(|data: &[u8]| bridgectl_fuzzing::json(data));
