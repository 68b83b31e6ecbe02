//! The config loader on arbitrary text: an error naming the key, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    milstream::fuzzing::config(data);
});
