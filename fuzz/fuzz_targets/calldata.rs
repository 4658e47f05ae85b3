#![no_main]
//! See `bridgectl_fuzzing::calldata` for the input layout and the properties checked.

libfuzzer_sys::fuzz_target!(|data: &[u8]| bridgectl_fuzzing::calldata(data));
