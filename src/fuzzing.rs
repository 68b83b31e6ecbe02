//! The bodies of the fuzz targets (`fuzz/`, run with `cargo fuzz run -s none TARGET`): every
//! byte sequence that arrives from outside, the wire's point, bag and label records, the
//! config file, a model artifact and the dataset files, goes through the same entry point
//! as in the daemon and CLI. `tests/fuzz_regressions.rs` replays the inputs kept under
//! `fuzz/regressions/` through these functions in `cargo test`.
//!
//! Each returns normally on any input: errors are fine, a panic is the bug.

use crate::mil::{Bag, Model, Sample};
use crate::stream::record::{decode as decode_records, DecodeLimits, RecordKind};

/// One Kafka payload of `kind`, with the daemon's default limits.
pub fn decode(kind: RecordKind, data: &[u8]) {
    let cfg = crate::config::Config::default();
    let limits = DecodeLimits {
        max_message_bytes: cfg.limits.max_message_bytes,
        max_bag_instances: cfg.limits.max_bag_instances,
    };
    for r in decode_records(kind, data, &limits) {
        // Whatever decodes keeps the decoder's promises.
        if let Ok(crate::stream::record::Record::Bag(b)) = r {
            assert!(b.dim >= 1 && !b.instances.is_empty());
            assert_eq!(b.instances.len() % b.dim, 0);
            assert!(b.instances.len() / b.dim <= limits.max_bag_instances);
            assert!(b.instances.iter().all(|v| v.is_finite()));
        }
    }
}

/// A config file's text.
pub fn config(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = crate::config::Config::parse("fuzz.toml", text);
    }
}

/// A model artifact; one that loads also predicts and explains a short series and a bag
/// of its input kind (loading validated it, so neither may panic).
pub fn artifact(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(model) = Model::from_json(text) else {
        return;
    };
    let series: Vec<f64> = (0..64).map(|i| (i as f64 * 0.3).sin()).collect();
    let sample = match model.input() {
        crate::mil::InputKind::Series => Sample::Series(series),
        crate::mil::InputKind::Multi { channels } if channels <= 64 => {
            Sample::Multi(vec![series; channels])
        }
        crate::mil::InputKind::Bag { dim } if dim <= 4096 => {
            match Bag::new(dim, (0..3 * dim).map(|i| (i % 7) as f64).collect()) {
                Ok(b) => Sample::Bag(b),
                Err(_) => return,
            }
        }
        _ => return,
    };
    let _ = model.predict(&sample);
    let _ = model.explain(&sample);
}

/// A dataset file's text, in the format detected from it.
pub fn dataset(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = crate::data::parse_dataset("fuzz.csv", text, None);
    }
}
