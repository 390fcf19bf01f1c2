//! Older revisions of the stored form (see `filters::fuzzing::older_stored`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| filters::fuzzing::older_stored(data));
