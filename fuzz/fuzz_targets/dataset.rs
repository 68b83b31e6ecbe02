//! The dataset readers (UCR/MIL CSV, long CSV, .ts) on arbitrary text.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    milstream::fuzzing::dataset(data);
});
