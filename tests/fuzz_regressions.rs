//! Replays the fuzz targets' inputs kept in the repository through the same entry points
//! (`milstream::fuzzing`): the seeds under `fuzz/seeds/<target>/` and every minimised input
//! a fuzzing run found, under `fuzz/regressions/<target>/`. A panic fails the test. Fuzzing
//! itself: `cargo install cargo-fuzz`, then `cd fuzz && cargo fuzz run -s none <target>`.

use std::path::{Path, PathBuf};

use milstream::fuzzing;
use milstream::stream::ingest::record::RecordKind;

const TARGETS: [&str; 7] = [
    "decode_point",
    "decode_bag",
    "decode_label",
    "config",
    "artifact",
    "dataset",
    "window",
];

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

fn run(target: &str, data: &[u8]) {
    match target {
        "decode_point" => fuzzing::decode(RecordKind::Point, data),
        "decode_bag" => fuzzing::decode(RecordKind::Bag, data),
        "decode_label" => fuzzing::decode(RecordKind::Label, data),
        "config" => fuzzing::config(data),
        "artifact" => fuzzing::artifact(data),
        "dataset" => fuzzing::dataset(data),
        "window" => fuzzing::window(data),
        other => panic!("unknown fuzz target {other}"),
    }
}

#[test]
fn every_kept_fuzz_input_is_handled_without_a_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    for target in TARGETS {
        assert!(
            root.join("fuzz_targets")
                .join(format!("{target}.rs"))
                .is_file(),
            "fuzz target {target} exists"
        );
        let seeds = inputs(&root.join("seeds").join(target));
        assert!(!seeds.is_empty(), "{target} has seeds");
        for path in seeds
            .iter()
            .chain(&inputs(&root.join("regressions").join(target)))
        {
            let data = std::fs::read(path).unwrap();
            let r = std::panic::catch_unwind(|| run(target, &data));
            assert!(r.is_ok(), "{target} panicked on {}", path.display());
        }
    }
}

/// The seeds are valid inputs: they reach past the parsers (a fuzzer starting from them
/// explores the code behind them, not only the error paths).
#[test]
fn the_seeds_are_valid_inputs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join("seeds");
    let limits = milstream::stream::ingest::record::DecodeLimits {
        max_message_bytes: 1 << 20,
        max_bag_instances: 10_000,
        max_id_bytes: 256,
    };
    for (target, kind) in [
        ("decode_point", RecordKind::Point),
        ("decode_bag", RecordKind::Bag),
        ("decode_label", RecordKind::Label),
    ] {
        for p in inputs(&root.join(target)) {
            let data = std::fs::read(&p).unwrap();
            let decoded = milstream::stream::ingest::record::decode(kind, &data, &limits);
            assert!(
                decoded.iter().any(Result::is_ok),
                "{} decodes: {decoded:?}",
                p.display()
            );
        }
    }
    // The window target's seeds: a points message (first byte even) that decodes, or raw
    // 10-byte points (odd).
    for p in inputs(&root.join("window")) {
        let data = std::fs::read(&p).unwrap();
        let (first, rest) = data.split_first().expect("a window seed is not empty");
        if first % 2 == 0 {
            let decoded =
                milstream::stream::ingest::record::decode(RecordKind::Point, rest, &limits);
            assert!(decoded.iter().all(Result::is_ok), "{} decodes", p.display());
        } else {
            assert!(
                !rest.is_empty() && rest.len() % 10 == 0,
                "{}: raw points",
                p.display()
            );
        }
    }
    for p in inputs(&root.join("config")) {
        let text = std::fs::read_to_string(&p).unwrap();
        milstream::config::Config::parse("seed", &text).expect("the config seed parses");
    }
    for p in inputs(&root.join("artifact")) {
        let text = std::fs::read_to_string(&p).unwrap();
        milstream::mil::Model::from_json(&text).expect("the artifact seed loads");
    }
    for p in inputs(&root.join("dataset")) {
        let text = std::fs::read_to_string(&p).unwrap();
        milstream::data::parse_dataset("seed", &text, None)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    }
}
