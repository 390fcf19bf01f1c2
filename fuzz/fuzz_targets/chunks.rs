//! BF.LOADCHUNK's decoding (see `filters::fuzzing::chunks` for the input's framing).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| filters::fuzzing::chunks(data));
