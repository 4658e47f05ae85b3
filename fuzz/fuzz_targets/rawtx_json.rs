#![no_main]
//! See `bridgectl_fuzzing::rawtx_json` for the input layout and the properties checked.

libfuzzer_sys::fuzz_target!(|data: &[u8]| bridgectl_fuzzing::rawtx_json(data));
