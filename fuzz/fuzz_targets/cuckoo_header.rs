//! CF.LOADCHUNK's header chunk (see `filters::fuzzing::cuckoo_header`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| filters::fuzzing::cuckoo_header(data));
