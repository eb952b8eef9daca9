#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| moot::testkit::fuzz::session_log(data));
