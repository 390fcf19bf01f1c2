//! CF.LOADCHUNK's header chunk (see `bf_filter::fuzzing::cuckoo_header`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bf_filter::fuzzing::cuckoo_header(data));
