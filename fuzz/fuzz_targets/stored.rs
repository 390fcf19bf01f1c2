//! The RDB decoder fed from bytes (see `bf_filter::fuzzing::stored`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bf_filter::fuzzing::stored(data));
