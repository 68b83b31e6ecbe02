//! The bodies of the fuzz targets (`fuzz/`, run with `cargo fuzz run -s none TARGET`): every
//! byte sequence that arrives from outside, the wire's point, bag and label records, the
//! config file, a model artifact and the dataset files, goes through the same entry point
//! as in the daemon and CLI. `tests/fuzz_regressions.rs` replays the inputs kept under
//! `fuzz/regressions/` through these functions in `cargo test`.
//!
//! Each returns normally on any input: errors are fine, a panic is the bug.

use crate::mil::{Bag, Model, Sample};
use crate::stream::ingest::record::{decode as decode_records, DecodeLimits, RecordKind};

/// One Kafka payload of `kind`, with the daemon's default limits.
pub fn decode(kind: RecordKind, data: &[u8]) {
    let cfg = crate::config::Config::default();
    let limits = DecodeLimits::from(&cfg.limits);
    for r in decode_records(kind, data, &limits) {
        // Whatever decodes keeps the decoder's promises.
        if let Ok(crate::stream::ingest::record::Record::Bag(b)) = r {
            assert!(b.dim >= 1 && !b.instances.is_empty());
            assert_eq!(b.instances.len() % b.dim, 0);
            assert!(b.instances.len() / b.dim <= limits.max_bag_instances);
            assert!(b.instances.iter().all(|v| v.is_finite()));
        }
    }
}

/// Points through the windowing path (`stream::score::window`), as the worker feeds it: the
/// first byte picks the window settings and the form of the rest. Even first byte: the rest
/// is a points message, decoded as the daemon decodes it, and what decodes is windowed.
/// Odd: the rest is raw points of 10 bytes each (series, value, `ts` as i64 little-endian),
/// any i64 timestamp included, which the decoder would reject: the window arithmetic must
/// hold for those too. Every emitted window must start no later than it ends.
pub fn window(data: &[u8]) {
    use crate::stream::ingest::record::{Point, Record};
    use crate::stream::score::window::{PartitionWindows, ScoringModel, WindowParams};
    use std::sync::{Arc, OnceLock};

    static MODEL: OnceLock<Arc<ScoringModel>> = OnceLock::new();
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let model = MODEL.get_or_init(|| {
        Arc::new(ScoringModel {
            model: crate::stream::embedded::train_embedded_model()
                .expect("the embedded model trains"),
            version: "fuzz".into(),
            generation: 1,
        })
    });
    let settings = [
        (0, 1_000, 0),
        (1_200, 700, 0),
        (0, 3, 50),
        (i64::MAX, 1, i64::MAX),
    ];
    let (duration_ms, hop_ms, lateness_ms) = settings[usize::from(first >> 1) % settings.len()];
    let params = WindowParams {
        points: 40,
        duration_ms,
        hop_ms,
        lateness_ms,
        idle_timeout_ms: 60_000,
        max_series: 4,
    };
    let points: Vec<Point> = if first & 1 == 0 {
        let cfg = crate::config::Config::default();
        let limits = DecodeLimits::from(&cfg.limits);
        decode_records(RecordKind::Point, rest, &limits)
            .into_iter()
            .filter_map(|r| match r {
                // The worker dead-letters points of another channel count than the model's.
                Ok(Record::Point(p)) if p.channels() == 1 => Some(p),
                _ => None,
            })
            .collect()
    } else {
        rest.chunks_exact(10)
            .map(|c| Point {
                series_id: format!("s{}", c[0] % 8).into(),
                ts_ms: i64::from_le_bytes(c[2..10].try_into().expect("a 10-byte chunk")),
                value: f64::from(c[1]) / 16.0,
                rest: Vec::new(),
                model: None,
            })
            .collect()
    };
    let mut windows = PartitionWindows::new(params);
    let mut out = Vec::new();
    for (offset, p) in points.iter().take(4_096).enumerate() {
        // Now and then a point names another model: its series starts over.
        let name = if offset % 7 == 6 { "n" } else { "m" };
        windows.on_point(p, offset as i64, (name, model), true, &mut out);
    }
    windows.evict_idle();
    let _ = windows.oldest_offset();
    for w in &out {
        assert!(w.start_ms <= w.end_ms, "a window ends before it starts");
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
