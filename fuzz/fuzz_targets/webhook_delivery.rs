#![no_main]
//! See `bridgectl_fuzzing::webhook_delivery` for the input layout and the properties checked.

libfuzzer_sys::fuzz_target!(|data: &[u8]| bridgectl_fuzzing::webhook_delivery(data));
