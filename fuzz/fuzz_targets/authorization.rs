#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| medialib_fuzz::authorization::check(data));
