//! BF.LOADCHUNK's decoding (see `bf_filter::fuzzing::chunks` for the input's framing).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bf_filter::fuzzing::chunks(data));
