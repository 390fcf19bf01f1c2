//! Older revisions of the stored form (see `bf_filter::fuzzing::older_stored`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bf_filter::fuzzing::older_stored(data));
