#![no_main]
//! See `bridgectl_fuzzing::ur_frames` for the input layout and the properties checked.

libfuzzer_sys::fuzz_target!(|data: &[u8]| bridgectl_fuzzing::ur_frames(data));
