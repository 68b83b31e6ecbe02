//! The drift detectors against River 0.26 (`river.drift.ADWIN`, `binary.DDM`,
//! `PageHinkley`) as the oracle: the same seeded sequences go through River (in the test
//! virtual environment) and through `milstream::drift`, and every warning and drift must
//! fall on the same index.

mod common;

use std::io::Write;
use std::process::Stdio;

use milstream::drift::{
    Adwin, AdwinParams, Ddm, DdmParams, Detector, PageHinkley, PageHinkleyMode, PageHinkleyParams,
    Signal,
};
use serde_json::{json, Value};

/// SplitMix64: a seeded generator both sides need not share (the values are sent).
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Box-Muller.
    fn normal(&mut self, mean: f64, sd: f64) -> f64 {
        let u1 = self.uniform().max(1e-300);
        let u2 = self.uniform();
        mean + sd * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
    fn bernoulli(&mut self, p: f64) -> f64 {
        if self.uniform() < p {
            1.0
        } else {
            0.0
        }
    }
}

/// Named sequences: real-valued for ADWIN and Page-Hinkley, 0/1 for all three.
fn sequences() -> Vec<(&'static str, bool, Vec<f64>)> {
    let mut r = Rng(20261127);
    let stationary: Vec<f64> = (0..8000).map(|_| r.normal(0.0, 1.0)).collect();
    let abrupt: Vec<f64> = (0..9000)
        .map(|i| match i / 3000 {
            0 => r.normal(0.0, 1.0),
            1 => r.normal(1.5, 1.0),
            _ => r.normal(-1.0, 0.5),
        })
        .collect();
    let gradual: Vec<f64> = (0..6000)
        .map(|i| {
            let m = ((i as f64 - 2000.0) / 2000.0).clamp(0.0, 1.0) * 2.0;
            r.normal(m, 1.0)
        })
        .collect();
    let margins: Vec<f64> = (0..6000)
        .map(|i| {
            if i < 3000 {
                r.normal(0.8, 0.1)
            } else {
                r.normal(0.3, 0.2)
            }
        })
        .collect();
    let errors_stationary: Vec<f64> = (0..20000).map(|_| r.bernoulli(0.15)).collect();
    let errors_abrupt: Vec<f64> = (0..12000)
        .map(|i| match i / 4000 {
            0 => r.bernoulli(0.05),
            1 => r.bernoulli(0.45),
            _ => r.bernoulli(0.1),
        })
        .collect();
    let errors_gradual: Vec<f64> = (0..8000)
        .map(|i| r.bernoulli(0.1 + 0.4 * ((i as f64 - 3000.0) / 3000.0).clamp(0.0, 1.0)))
        .collect();
    vec![
        ("stationary", false, stationary),
        ("abrupt", false, abrupt),
        ("gradual", false, gradual),
        ("margins", false, margins),
        ("errors_stationary", true, errors_stationary),
        ("errors_abrupt", true, errors_abrupt),
        ("errors_gradual", true, errors_gradual),
    ]
}

/// Detector configurations: a name, River's constructor, ours, and whether it takes 0/1 only.
fn detectors() -> Vec<(&'static str, &'static str, Detector, bool)> {
    let ph_up = PageHinkleyParams {
        threshold: 10.0,
        mode: PageHinkleyMode::Up,
        ..Default::default()
    };
    let ph_down = PageHinkleyParams {
        threshold: 5.0,
        delta: 0.01,
        mode: PageHinkleyMode::Down,
        ..Default::default()
    };
    let adwin_fast = AdwinParams {
        clock: 1,
        delta: 0.01,
        ..Default::default()
    };
    vec![
        (
            "adwin",
            "drift.ADWIN()",
            Detector::Adwin(Adwin::new(AdwinParams::default())),
            false,
        ),
        // The warning level beside the default ADWIN (`drift.warning_delta`).
        (
            "adwin_warning",
            "drift.ADWIN(delta=0.01)",
            Detector::Adwin(Adwin::new(AdwinParams {
                delta: 0.01,
                ..Default::default()
            })),
            false,
        ),
        (
            "adwin_clock1",
            "drift.ADWIN(clock=1, delta=0.01)",
            Detector::Adwin(Adwin::new(adwin_fast)),
            false,
        ),
        (
            "page_hinkley",
            "drift.PageHinkley()",
            Detector::PageHinkley(PageHinkley::new(PageHinkleyParams::default())),
            false,
        ),
        (
            "page_hinkley_up",
            "drift.PageHinkley(threshold=10.0, mode='up')",
            Detector::PageHinkley(PageHinkley::new(ph_up)),
            false,
        ),
        (
            "page_hinkley_down",
            "drift.PageHinkley(threshold=5.0, delta=0.01, mode='down')",
            Detector::PageHinkley(PageHinkley::new(ph_down)),
            false,
        ),
        (
            "ddm",
            "drift.binary.DDM()",
            Detector::Ddm(Ddm::new(DdmParams::default())),
            true,
        ),
        (
            "ddm_tight",
            "drift.binary.DDM(warm_start=100, warning_threshold=1.5, drift_threshold=2.5)",
            Detector::Ddm(Ddm::new(DdmParams {
                warm_start: 100,
                warning_threshold: 1.5,
                drift_threshold: 2.5,
            })),
            true,
        ),
    ]
}

const RIVER: &str = r#"
import json, sys
import river
from river import drift
assert river.__version__.startswith("0.26"), river.__version__
cases = json.load(sys.stdin)
out = {}
for c in cases:
    d = eval(c["ctor"])
    binary = "binary" in c["ctor"]
    events = []
    for i, x in enumerate(c["values"]):
        d.update(bool(x) if binary else x)
        if d.drift_detected:
            events.append([i, "drift"])
        elif getattr(d, "warning_detected", False):
            events.append([i, "warning"])
    out[c["name"]] = events
json.dump(out, sys.stdout)
"#;

#[test]
fn detectors_match_river_0_26_on_the_same_sequences() {
    let mut cases = Vec::new();
    let mut ours = serde_json::Map::new();
    for (seq, is_binary, values) in sequences() {
        for (det, ctor, detector, binary_only) in detectors() {
            if binary_only && !is_binary {
                continue;
            }
            let name = format!("{seq}/{det}");
            let mut d = detector.clone();
            let events: Vec<Value> = values
                .iter()
                .enumerate()
                .filter_map(|(i, &x)| match d.update(x) {
                    Signal::Stable => None,
                    s => Some(json!([i, s.as_str()])),
                })
                .collect();
            ours.insert(name.clone(), Value::Array(events));
            cases.push(json!({"name": name, "ctor": ctor, "values": values}));
        }
    }
    let mut child = common::tools::python_with("river", "river==0.26.1")
        .args(["-c", RIVER])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python starts");
    let input = serde_json::to_vec(&cases).unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "River's run failed");
    let river: serde_json::Map<String, Value> = serde_json::from_slice(&out.stdout).unwrap();
    let mut drifts_seen = 0;
    for (name, ours) in &ours {
        let theirs = &river[name];
        assert_eq!(
            ours, theirs,
            "{name}: milstream (left) and River (right) differ"
        );
        drifts_seen += ours
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e[1] == "drift")
            .count();
        eprintln!("{name}: {} events", ours.as_array().unwrap().len());
    }
    // The sequences must exercise the detectors, not only agree on silence.
    assert!(
        drifts_seen > 10,
        "only {drifts_seen} drifts across all cases"
    );
}

/// A detector's state goes through serde and carries on exactly where it was.
#[test]
fn a_detector_restored_from_its_json_continues_identically() {
    let (_, _, values) = sequences()
        .into_iter()
        .find(|s| s.0 == "errors_abrupt")
        .unwrap();
    for (_, _, detector, _) in detectors() {
        // A fresh detector's state (no value yet) serializes too.
        let fresh: Detector = serde_json::from_str(&serde_json::to_string(&detector).unwrap())
            .expect("a fresh detector's state round-trips through JSON");
        assert_eq!(fresh.seen(), 0);
        let mut straight = detector.clone();
        let mut resumed = detector.clone();
        for &x in &values[..5000] {
            straight.update(x);
            resumed.update(x);
        }
        let json = serde_json::to_string(&resumed).unwrap();
        let mut resumed: Detector = serde_json::from_str(&json).unwrap();
        for &x in &values[5000..] {
            assert_eq!(straight.update(x), resumed.update(x));
        }
    }
}
