//! Points through the windowing path (decoded from a message, or raw with any i64
//! timestamp): no panic, no overflow, windows that start no later than they end.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    milstream::fuzzing::window(data);
});
