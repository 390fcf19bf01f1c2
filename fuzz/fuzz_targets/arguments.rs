//! Command lines and module load arguments: the parsers must answer every input without
//! panicking. Input: arguments separated by 0xFF bytes (which no parser gives meaning to).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let args: Vec<&[u8]> = data.split(|&b| b == 0xff).collect();
    redis_bf::fuzzing::parse_command(&args);
    redis_bf::fuzzing::parse_load_arguments(&args);
});
