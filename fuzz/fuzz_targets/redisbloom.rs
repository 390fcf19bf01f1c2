//! RedisBloom's RDB layouts fed from bytes (see `filters::fuzzing::redisbloom`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| filters::fuzzing::redisbloom(data));
