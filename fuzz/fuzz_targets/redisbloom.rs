//! RedisBloom's RDB layouts fed from bytes (see `bf_filter::fuzzing::redisbloom`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bf_filter::fuzzing::redisbloom(data));
