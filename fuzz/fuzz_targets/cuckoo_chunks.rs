//! CF.LOADCHUNK's decoding, a header then data chunks (see `filters::fuzzing::cuckoo_chunks`
//! for the input's framing).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| filters::fuzzing::cuckoo_chunks(data));
