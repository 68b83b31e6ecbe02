//! The model artifact loader on arbitrary text; what loads must predict without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    milstream::fuzzing::artifact(data);
});
