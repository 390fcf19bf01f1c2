//! The RDB decoder fed from bytes (see `filters::fuzzing::stored`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| filters::fuzzing::stored(data));
