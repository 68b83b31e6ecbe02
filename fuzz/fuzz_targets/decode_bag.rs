//! The bag decoder on arbitrary bytes from the wire: no panic, bounded work.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    milstream::fuzzing::decode(milstream::stream::ingest::record::RecordKind::Bag, data);
});
