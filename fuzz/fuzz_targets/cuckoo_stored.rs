//! The cuckoo filter's RDB decoder fed from bytes (see `filters::fuzzing::cuckoo_stored`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| filters::fuzzing::cuckoo_stored(data));
