//! The cuckoo filter's RDB decoder fed from bytes (see `bf_filter::fuzzing::cuckoo_stored`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bf_filter::fuzzing::cuckoo_stored(data));
