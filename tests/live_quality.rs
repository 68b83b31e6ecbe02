//! Live quality against the mock cluster: every label that joins is graded against the
//! serving model's prediction (the `evaluations` output, read back with pyarrow), a concept
//! change is detected by ADWIN on the errors within a bounded number of labels, the model is
//! retrained from the new concept's examples and promoted, and accuracy comes back.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use common::stream::*;
use common::{load, scratch};
use milstream::mil::{Dataset, Sample};
use serde_json::Value;

/// Aligned on the hop, so each GunPoint series of 150 points is exactly one window.
const T0: i64 = 1_700_000_001_000;
const SENSORS: usize = 4;

/// A round's messages and its labels' segments (key, start, end).
type Round = (Vec<(String, String, Vec<u8>)>, Vec<(String, i64, i64)>);

/// One round: every sensor emits one GunPoint test series (150 points, 10 ms apart), then
/// its label (`swap`ped after the concept change). Returns the messages and the labels'
/// segments.
fn round(test: &Dataset, r: usize, swap: bool) -> Round {
    let t = T0 + r as i64 * HOP_MS;
    let picks: Vec<usize> = (0..SENSORS)
        .map(|s| (s * 37 + r * 11) % test.len())
        .collect();
    let mut msgs = Vec::new();
    for j in 0..W {
        for (s, &i) in picks.iter().enumerate() {
            let Sample::Series(v) = &test.samples[i] else {
                unreachable!()
            };
            let id = format!("sensor-{s}");
            let ts = t + j as i64 * SPACING_MS;
            let body = format!(r#"{{"series_id":"{id}","ts":{ts},"value":{}}}"#, v[j]);
            msgs.push((POINTS.to_string(), id, body.into_bytes()));
        }
    }
    let mut segments = Vec::new();
    for (s, &i) in picks.iter().enumerate() {
        let id = format!("sensor-{s}");
        let end = t + (W as i64 - 1) * SPACING_MS;
        let truth = &test.labels[i];
        let l = if !swap {
            truth.clone()
        } else if truth == "1" {
            "2".into()
        } else {
            "1".into()
        };
        let body = format!(r#"{{"series_id":"{id}","start":{t},"end":{end},"label":"{l}"}}"#);
        msgs.push((LABELS.to_string(), id.clone(), body.into_bytes()));
        segments.push((id, t, end));
    }
    (msgs, segments)
}

/// Retraining's store in `dir` (labels joined, waiting at most `label_wait_ms`), no schedule,
/// and `on_drift = "alert"`: one model version grades throughout.
fn alert_only(dir: &Path, label_wait_ms: u64) -> String {
    format!(
        "[training]\ndir = \"{}\"\nlabel_wait_ms = {label_wait_ms}\nevery = \"\"\n\
         after_examples = 0\n[drift]\non_drift = \"alert\"\n",
        dir.join("training").display()
    )
}

/// The rows of an output folder as JSON objects, read by pyarrow, or by deltalake when the
/// folder is a Delta table (timestamps as epoch ms).
fn read_rows(out: &Path, sub: &str) -> Vec<Value> {
    let dir = out.join(sub);
    if !dir.exists() {
        return Vec::new();
    }
    let script = format!(
        r#"
import json, datetime, os, pyarrow.dataset as ds
d = "{}"
if os.path.isdir(os.path.join(d, "_delta_log")):
    from deltalake import DeltaTable
    t = DeltaTable(d).to_pyarrow_table()
else:
    t = ds.dataset(d, format="parquet", partitioning="hive").to_table()
def conv(v):
    if isinstance(v, datetime.datetime):
        return int(v.timestamp() * 1000)
    return v
print(json.dumps([{{k: conv(v) for k, v in r.items()}} for r in t.to_pylist()]))
{EXIT}"#,
        dir.display(),
        EXIT = EXIT_NOW
    );
    // A live daemon's folder: a partition's new owner sweeps the files its predecessor wrote
    // past the committed offset, so a file listed may be gone when read. Read again then
    // (and when the Delta reader aborted, see EXIT_NOW).
    for _ in 0..10 {
        let o = common::tools::python_with("pyarrow.dataset", "pyarrow")
            .args(["-c", &script])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        let retry = err.contains("FileNotFoundError") || err.contains("terminate called");
        if !o.status.success() && retry {
            continue;
        }
        assert!(o.status.success(), "pyarrow: {err}");
        return serde_json::from_slice(&o.stdout).unwrap();
    }
    panic!("{}: files kept vanishing while read", dir.display())
}

fn accuracy(rows: &[&Value]) -> f64 {
    let hits = rows.iter().filter(|r| r["correct"] == true).count();
    hits as f64 / rows.len().max(1) as f64
}

/// What one run of the concept-change scenario measured, on the label partition of the
/// first drift: labels after the change until the warning and the drift (None: none), and
/// until the first label graded by a promoted model; what the trainer did with candidates
/// fitted on a warning.
#[derive(Debug)]
struct ChangeFigures {
    to_warning: Option<u64>,
    to_drift: u64,
    to_promoted: usize,
    /// `milstream_warning_candidates_total` by outcome: fitted, promoted, rejected, dropped.
    candidates: [f64; 4],
    /// Seen `milstream_candidate_held` at 1 while the labels were fed.
    held_seen: bool,
}

/// 12 rounds of 4 truly labeled GunPoint series, then 28 rounds with the labels swapped, on
/// the mock cluster, `[drift] warning_delta` as given: every label is graded once, ADWIN on
/// the errors finds the change within 64 labels of its partition, a retrained model is
/// promoted and the accuracy comes back within 0.05.
///
/// `min_examples = 32`: a candidate learns from at least 24 of the new concept's series (8
/// held out). From 9 (it was 12 and 3), a GunPoint model is right on only about 0.8 of the
/// swapped test series (offline, the scenario's first 9: 0.793 with the interior-point
/// master, 0.767 with the warm one), so whether it grades all 16 last labels right was
/// which of the near-tied hypotheses the fit happened to take (16 and 14 of 16); from 24 to
/// 36 both masters give 0.91-0.99 and 16 of 16.
fn concept_change_scenario(name: &str, warning_delta: f64) -> ChangeFigures {
    let dir = scratch(name);
    let out = dir.join("out");
    let bootstrap = cluster(2);
    let (model_path, _) = model_file(&dir);
    let test = load("GunPoint_TEST.csv");
    let port = free_port();
    // No schedule: only the errors' detectors retrain. [drift] keeps its defaults (ADWIN,
    // on_drift retrain) but the warning level.
    let extra = format!(
        "[training]\ndir = \"{}\"\nlabel_wait_ms = 20000\nevery = \"\"\nafter_examples = 0\n\
         max_examples = 64\nholdout = 0.25\ntolerance = 0.0\nmin_examples = 32\n\
         [drift]\nwarning_delta = {warning_delta}\n",
        dir.join("training").display()
    );
    let mut cfg = config(&bootstrap, &out, &model_path, "quality", &extra);
    cfg.http.listen = format!("127.0.0.1:{port}");
    let (daemon, stop) = spawn_daemon(cfg);

    // Rounds 0..CHANGE labeled truly; from CHANGE on the classes swap shapes.
    const CHANGE: usize = 12;
    const ROUNDS: usize = 40;
    let p = producer(&bootstrap);
    let mut labeled: Vec<(String, i64, i64)> = Vec::new();
    let held = "milstream_candidate_held{model=\"series\"}";
    let mut held_seen = false;
    for r in 0..ROUNDS {
        let (msgs, segments) = round(&test, r, r >= CHANGE);
        produce_all(&p, &msgs);
        labeled.extend(segments);
        std::thread::sleep(Duration::from_millis(400));
        held_seen |= metric(port, held) == 1.0;
    }
    let graded_all = wait_until(Duration::from_secs(60), || {
        read_rows(&out, "evaluations").len() >= labeled.len()
    });
    let scrape = |s: &str| metric(port, s);
    let promoted = scrape("milstream_training_runs_total{model=\"series\",outcome=\"promoted\"}");
    let drifts = scrape(
        "milstream_drift_events_total{detector=\"errors\",model=\"series\",signal=\"drift\"}",
    );
    let metrics_text = common::stream::scrape(port);
    let candidates = ["fitted", "promoted", "rejected", "dropped"].map(|o| {
        sample(
            &metrics_text,
            &format!("milstream_warning_candidates_total{{model=\"series\",outcome=\"{o}\"}}"),
        )
    });
    stop.send(true).unwrap();
    daemon.join().unwrap().expect("the daemon stops cleanly");
    assert!(graded_all, "not every label was graded");

    let evals = read_rows(&out, "evaluations");
    // Exactly one row per label (and so per label and version), each for a labeled segment.
    let by_label: BTreeMap<(i64, i64), usize> = evals.iter().fold(BTreeMap::new(), |mut m, r| {
        let k = (
            r["source_partition"].as_i64().unwrap(),
            r["source_offset"].as_i64().unwrap(),
        );
        *m.entry(k).or_default() += 1;
        m
    });
    assert_eq!(by_label.len(), labeled.len(), "one row per label");
    assert!(by_label.values().all(|&n| n == 1), "a label graded twice");
    let segments: BTreeSet<(String, i64, i64)> = evals
        .iter()
        .map(|r| {
            let key = r["key"].as_str().unwrap().to_string();
            (
                key,
                r["window_start"].as_i64().unwrap(),
                r["window_end"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(segments, labeled.iter().cloned().collect::<BTreeSet<_>>());
    for r in &evals {
        assert_eq!(r["correct"] == true, r["label"] == r["predicted"], "{r}");
        assert_eq!(r["model_name"], "series");
    }

    // Before the change the champion is right; right after it, wrong.
    let change_ms = T0 + CHANGE as i64 * HOP_MS;
    let start = |r: &Value| r["window_start"].as_i64().unwrap();
    let before: Vec<&Value> = evals.iter().filter(|r| start(r) < change_ms).collect();
    let acc_before = accuracy(&before);
    assert!(acc_before >= 0.8, "pre-change accuracy {acc_before}");
    let first_version = before[0]["model_version"].as_str().unwrap().to_string();

    // The drift: raised by the errors' ADWIN, with a retrain, within a bounded number of labels.
    let events = read_rows(&out, "drift_events");
    let label_drifts: Vec<&Value> = events
        .iter()
        .filter(|e| e["detector"] == "errors" && e["signal"] == "drift")
        .collect();
    assert!(
        !label_drifts.is_empty() && drifts >= 1.0,
        "no drift detected: {events:?}"
    );
    // The detectors are per label partition: a drift's `observations` counts its partition's
    // labels, so the delay is measured against that partition's pre-change labels.
    let mut first_by_partition: BTreeMap<i64, u64> = BTreeMap::new();
    for e in &label_drifts {
        let (p, n) = (
            e["source_partition"].as_i64().unwrap(),
            e["observations"].as_u64().unwrap(),
        );
        let f = first_by_partition.entry(p).or_insert(n);
        *f = (*f).min(n);
    }
    let (mut delay, mut partition) = (u64::MAX, 0);
    for (&p, &first) in &first_by_partition {
        let pre = before
            .iter()
            .filter(|r| r["source_partition"].as_i64() == Some(p))
            .count() as u64;
        assert!(
            first > pre,
            "a drift before the change (false alarm) at label {first} of partition {p}"
        );
        if first - pre < delay {
            (delay, partition) = (first - pre, p);
        }
    }
    let in_partition = |r: &Value| r["source_partition"].as_i64() == Some(partition);
    let pre = before.iter().filter(|r| in_partition(r)).count() as u64;
    let warning = events
        .iter()
        .filter(|e| e["detector"] == "errors" && e["signal"] == "warning")
        .filter(|e| in_partition(e))
        .map(|e| e["observations"].as_u64().unwrap())
        .find(|&n| n > pre && n <= pre + delay);
    if warning_delta == 0.0 {
        assert_eq!(
            warning, None,
            "a warning without a warning level: {events:?}"
        );
    }
    // Labels of the partition after the change graded by the first version: those until a
    // promoted model serves.
    let mut after: Vec<&Value> = evals
        .iter()
        .filter(|r| in_partition(r))
        .filter(|r| start(r) >= change_ms)
        .collect();
    after.sort_by_key(|r| r["source_offset"].as_i64().unwrap());
    let to_promoted = after
        .iter()
        .position(|r| r["model_version"] != first_version.as_str())
        .unwrap_or(after.len());
    println!("pre-change accuracy {acc_before:.3}; errors drift {delay} labels (of its partition) after the change");
    // ADWIN (the default) tests every 32 labels (its clock): a partition's detector finds the
    // change at the first test after enough wrong labels (measured: 48 labels; the mock
    // cluster put every sensor's labels on one partition).
    assert!(delay <= 64, "the drift took {delay} labels to detect");
    assert!(label_drifts
        .iter()
        .all(|e| e["action"] == "retrain" && e["method"] == "adwin"));
    let margin_drifts = events.iter().filter(|e| e["detector"] == "margin").count();
    println!("label-free (margin) drift events: {margin_drifts}");

    // A retrained model was promoted and grades the last labels about as well as before.
    assert!(promoted >= 1.0, "promoted runs: {promoted}");
    let mut last: Vec<&Value> = evals.iter().collect();
    last.sort_by_key(|r| start(r));
    let tail: Vec<&Value> = last[last.len() - 4 * SENSORS..].to_vec();
    assert!(
        tail.iter()
            .all(|r| r["model_version"] != first_version.as_str()),
        "the last labels are still graded by the pre-change model"
    );
    let acc_after = accuracy(&tail);
    println!(
        "accuracy over the last {} labels: {acc_after:.3}",
        tail.len()
    );
    assert!(
        acc_after >= acc_before - 0.05,
        "accuracy {acc_before} -> {acc_after} after the retrain"
    );

    // `milstream inspect` on the folder gives the same figures.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_milstream"))
        .args(["inspect", "--json"])
        .arg(out.join("evaluations"))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "inspect: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let live: Value = serde_json::from_slice(&o.stdout).unwrap();
    let total: u64 = live["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["labeled"].as_u64().unwrap())
        .sum();
    assert_eq!(total as usize, labeled.len(), "inspect: {live}");

    // The metrics agree with the rows.
    let labeled_total: f64 = metrics_text
        .lines()
        .filter(|l| l.starts_with("milstream_labeled_predictions_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert_eq!(labeled_total as usize, labeled.len());
    assert!(metrics_text.contains("milstream_model_accuracy{"));
    assert!(metrics_text.contains("milstream_confusion_total{"));
    let figures = ChangeFigures {
        to_warning: warning.map(|n| n - pre),
        to_drift: delay,
        to_promoted,
        candidates,
        held_seen,
    };
    println!("warning_delta {warning_delta}: {figures:?}");
    figures
}

#[test]
fn labels_are_graded_once_and_a_concept_change_is_detected_retrained_and_recovered() {
    // Without a warning level: the drift retrains at once from the change point.
    let f = concept_change_scenario("live-quality-nowarn", 0.0);
    assert_eq!(f.to_warning, None);
    assert!(
        f.to_promoted >= f.to_drift as usize,
        "promoted before the drift: {f:?}"
    );
    assert_eq!(f.candidates, [0.0; 4], "no candidate without a warning");
    assert!(!f.held_seen);
}

/// The default warning level (ADWIN at delta 0.01 beside the drift's 0.002): the change
/// raises a warning before the drift, the trainer fits a candidate on the examples since
/// the warning's change point and holds it (`milstream_candidate_held` 1), and at the drift
/// that held candidate is what gets promoted.
#[test]
fn a_warning_fits_a_candidate_that_the_drift_promotes() {
    let f = concept_change_scenario("live-quality-warn", 0.01);
    let to_warning = f.to_warning.expect("no warning before the drift");
    assert!(to_warning < f.to_drift, "{f:?}");
    // Held, not promoted, until the drift.
    assert!(
        f.to_promoted >= f.to_drift as usize,
        "promoted before the drift: {f:?}"
    );
    // That it was held in between is what the counters say: fitted once, promoted once at
    // the drift, none dropped. (The held gauge, sampled once a round, may fall between two
    // samples on a loaded machine: `held_seen` is printed, not asserted.)
    let [fitted, promoted, rejected, dropped] = f.candidates;
    assert_eq!(
        (fitted, promoted, rejected, dropped),
        (1.0, 1.0, 0.0, 0.0),
        "the warning's candidate is the one promoted at the drift: {f:?}"
    );
}

/// A short burst of swapped labels (32, then true labels again) raises a warning but no
/// drift: the trainer fits a candidate on the warning and holds it, the warning clears when
/// the errors are gone, the candidate is dropped, and the champion grades every label.
#[test]
fn a_warning_that_clears_drops_its_candidate_and_promotes_nothing() {
    let dir = scratch("live-quality-clear");
    let out = dir.join("out");
    let bootstrap = cluster(2);
    let (model_path, _) = model_file(&dir);
    let test = load("GunPoint_TEST.csv");
    let port = free_port();
    let extra = format!(
        "[training]\ndir = \"{}\"\nlabel_wait_ms = 20000\nevery = \"\"\nafter_examples = 0\n\
         max_examples = 64\nholdout = 0.25\ntolerance = 0.0\nmin_examples = 12\n",
        dir.join("training").display()
    );
    let mut cfg = config(&bootstrap, &out, &model_path, "quality-clear", &extra);
    cfg.http.listen = format!("127.0.0.1:{port}");
    let (daemon, stop) = spawn_daemon(cfg);
    // Rounds 12..20 (labels 49..80 of the partition) swapped; the rest true. The warning
    // comes at label 64 and clears at 160 (see `quality.rs`'s tests); the drift ADWIN would
    // fire on the fall of the errors at 192, after the last label.
    const ROUNDS: usize = 44;
    let p = producer(&bootstrap);
    let mut labeled = 0;
    let held = "milstream_candidate_held{model=\"series\"}";
    let mut held_seen = false;
    for r in 0..ROUNDS {
        let (msgs, segments) = round(&test, r, (12..20).contains(&r));
        produce_all(&p, &msgs);
        labeled += segments.len();
        std::thread::sleep(Duration::from_millis(400));
        held_seen |= metric(port, held) == 1.0;
    }
    let graded_all = wait_until(Duration::from_secs(60), || {
        read_rows(&out, "evaluations").len() >= labeled
    });
    let dropped = wait_until(Duration::from_secs(20), || {
        metric(
            port,
            "milstream_warning_candidates_total{model=\"series\",outcome=\"dropped\"}",
        ) >= 1.0
    });
    let text = common::stream::scrape(port);
    stop.send(true).unwrap();
    daemon.join().unwrap().expect("the daemon stops cleanly");
    assert!(graded_all, "not every label was graded");
    let candidates = ["fitted", "promoted", "rejected", "dropped"].map(|o| {
        sample(
            &text,
            &format!("milstream_warning_candidates_total{{model=\"series\",outcome=\"{o}\"}}"),
        )
    });
    let events = read_rows(&out, "drift_events");
    let errors: Vec<(&str, u64)> = events
        .iter()
        .filter(|e| e["detector"] == "errors")
        .map(|e| {
            (
                e["signal"].as_str().unwrap(),
                e["observations"].as_u64().unwrap(),
            )
        })
        .collect();
    println!("warning that clears: errors events {errors:?}, candidates {candidates:?}, held seen {held_seen}");
    assert!(
        errors.iter().any(|(s, _)| *s == "warning"),
        "no warning: {events:?}"
    );
    assert!(
        errors.iter().all(|(s, _)| *s != "drift"),
        "a drift: {events:?}"
    );
    assert!(events
        .iter()
        .filter(|e| e["signal"] == "warning")
        .all(|e| e["action"] == "candidate"));
    assert!(dropped && held_seen, "{candidates:?}");
    assert_eq!(candidates, [1.0, 0.0, 0.0, 1.0]);
    assert_eq!(
        sample(
            &text,
            "milstream_training_runs_total{model=\"series\",outcome=\"promoted\"}"
        ),
        0.0
    );
    let evals = read_rows(&out, "evaluations");
    let versions: BTreeSet<&str> = evals
        .iter()
        .map(|r| r["model_version"].as_str().unwrap())
        .collect();
    assert_eq!(
        versions.len(),
        1,
        "the champion grades every label: {versions:?}"
    );
}

/// SplitMix64, for seeded draws.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn normal(&mut self) -> f64 {
        let u1 = ((self.next() >> 11) as f64 / (1u64 << 53) as f64).max(1e-300);
        let u2 = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

/// The daemon's detectors at the default `[drift]` settings over long streams of the
/// embedded GunPoint model's real predictions (GunPoint test series drawn with replacement,
/// so the stream is stationary): 20,000 graded labels and 20,000 served margins raise no
/// drift; then the labels swap (errors) or the series change shape (margins, label-free),
/// and each detector finds it within a bound (printed: the measured delays). No Kafka here:
/// the test above runs the same code end to end; this one runs the lengths that would not
/// fit the mock cluster.
#[test]
fn the_default_detectors_raise_no_false_alarm_on_20000_stationary_labels_and_find_a_change() {
    use milstream::config::DriftConfig;
    use milstream::metrics::Metrics;
    use milstream::stream::ingest::record::PredictionRecord;
    use milstream::stream::quality::label_free::{MarginWatch, ScoreWatch};
    use milstream::stream::quality::{EvaluationRecord, PartitionQuality, Quality};

    let model = milstream::stream::embedded::train_embedded_model().unwrap();
    let test = load("GunPoint_TEST.csv");
    let predict = |s: &Sample| model.predict(s).unwrap();
    let stationary: Vec<_> = test.samples.iter().map(predict).collect();
    // The changed world for the label-free detector: the same series with noise of sd 0.5.
    let mut rng = Rng(7);
    let shifted: Vec<_> = test
        .samples
        .iter()
        .map(|s| {
            let Sample::Series(v) = s else { unreachable!() };
            predict(&Sample::Series(
                v.iter().map(|x| x + 0.5 * rng.normal()).collect(),
            ))
        })
        .collect();
    let metrics = Metrics::new();
    let quality = Quality::new(DriftConfig::default(), metrics.clone());
    let mut state = PartitionQuality::default();
    let mut margins = MarginWatch::new(&quality).expect("margin detection is on by default");
    let mut score_psi =
        ScoreWatch::new(&quality).expect("the PSI test on the class scores is on by default");
    let classes = model.classes().to_vec();
    const STATIONARY: usize = 20_000;
    const CHANGED: usize = 5_000;
    let (mut error_drift, mut margin_drift, mut psi_drift) = (None, None, None);
    let (mut warnings, mut requests) = (0, Vec::new());
    for n in 0..STATIONARY + CHANGED {
        let changed = n >= STATIONARY;
        let i = rng.below(test.len());
        let truth = &test.labels[i];
        let label = match (changed, truth.as_str()) {
            (false, _) => truth.clone(),
            (true, "1") => "2".to_string(),
            (true, _) => "1".to_string(),
        };
        let p = &stationary[i];
        let eval = EvaluationRecord {
            key: format!("s-{i}"),
            segment: Some((n as i64, n as i64 + 1)),
            correct: p.label == label,
            label,
            predicted: p.label.clone(),
            classes: classes.clone(),
            scores: p.scores.clone(),
            model_name: "series".into(),
            model_version: "v1".into(),
            source_topic: "labels".into(),
            source_partition: 0,
            source_offset: n as i64,
            labeled_at_ms: n as i64,
        };
        if let Some(e) = quality.record(&mut state, &eval) {
            assert!(
                changed || e.signal != "drift",
                "errors: false alarm at label {n}: {e:?}"
            );
            if e.signal == "drift" {
                error_drift.get_or_insert(n - STATIONARY);
            }
            warnings += usize::from(!changed && e.signal == "warning");
        }
        if n + 1 == STATIONARY {
            requests = quality.take_requests("series");
        }
        let served = if changed { &shifted[i] } else { p };
        let pred = PredictionRecord {
            key: format!("s-{i}"),
            kind: "window".into(),
            window_start_ms: Some(0),
            window_end_ms: Some(1),
            label: served.label.clone(),
            classes: classes.clone(),
            scores: served.scores.clone(),
            model_kind: "lpboost".into(),
            model_name: "series".into(),
            model_version: "v1".into(),
            top: Vec::new(),
            findings: None,
            shown_share: None,
            probabilities: Vec::new(),
            source_topic: "points".into(),
            source_partition: 0,
            source_offset: n as i64,
            first_offset: n as i64,
            emitted_at_ms: 0,
        };
        let pred = [pred];
        if let Some(e) = margins.observe(&pred).pop() {
            assert!(changed, "margins: false alarm at prediction {n}: {e:?}");
            margin_drift.get_or_insert(n - STATIONARY);
        }
        if let Some(e) = score_psi.observe(&pred).pop() {
            assert!(
                changed,
                "scores (PSI): false alarm at prediction {n}: {e:?}"
            );
            assert_eq!((e.detector, e.method, e.action), ("scores", "psi", "alert"));
            let gauge = metrics.score_psi.with_label_values(&["series"]).get();
            assert!(gauge > 0.25, "the PSI gauge shows {gauge} at the alarm");
            psi_drift.get_or_insert(n - STATIONARY);
        }
    }
    // Warnings on the stationary stream fit candidates that are only ever challenged at a
    // drift: none reaches the trainer, so none is promoted.
    use milstream::stream::quality::TrainerRequest;
    assert!(
        !requests
            .iter()
            .any(|r| matches!(r, TrainerRequest::Drift { .. })),
        "{requests:?}"
    );
    println!(
        "stationary: {warnings} warnings, {} cleared, 0 drifts",
        requests
            .iter()
            .filter(|r| **r == TrainerRequest::Cleared)
            .count()
    );
    println!("errors (ADWIN) drift after {error_drift:?} labels; margins (Page-Hinkley) after {margin_drift:?} predictions; scores (PSI) after {psi_drift:?} predictions");
    let error_delay = error_drift.expect("the swapped labels were not detected");
    assert!(
        error_delay <= 64,
        "errors detected {error_delay} labels after the change"
    );
    let margin_delay = margin_drift.expect("the changed series were not detected without labels");
    assert!(
        margin_delay <= 2_000,
        "margins detected {margin_delay} predictions after the change"
    );
    // The change starts a window (20,000 is a multiple of the default 1,000), so the first
    // window of changed scores closes 999 predictions after it; two windows at most.
    let psi_delay = psi_drift.expect("the changed series were not detected by the PSI test");
    assert!(
        psi_delay < 2_000,
        "the PSI test detected {psi_delay} predictions after the change"
    );
}

/// SIGKILLs mid-stream (the crash-test pattern of `tests/stream_recovery.rs`): after three
/// kills and a restart, every label is graded exactly once (one model version serves
/// throughout: `on_drift = "alert"`), none dead-lettered `unjoined`: a label whose points'
/// partition was committed before the kill still finds its segment after the restart,
/// because the label held that partition's replay point (`holds.rs`).
#[test]
fn after_sigkills_every_label_is_graded_exactly_once() {
    let dir = scratch("quality-crash");
    let out = dir.join("out");
    let bootstrap = cluster(3);
    let (model_path, _) = model_file(&dir);
    let test = load("GunPoint_TEST.csv");
    let extra = alert_only(&dir, 30000);
    let _ = config(&bootstrap, &out, &model_path, "quality-crash", &extra);
    let cfg_path = config_path(&out, "quality-crash");
    const ROUNDS: usize = 30;
    let mut msgs = Vec::new();
    let mut labels = 0;
    for r in 0..ROUNDS {
        let (m, segments) = round(&test, r, false);
        msgs.extend(m);
        labels += segments.len();
    }
    // Fed at about 2,000 messages a second: about 9 s for the whole stream.
    let fed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let feeder = {
        let (bootstrap, fed) = (bootstrap.clone(), fed.clone());
        std::thread::spawn(move || {
            let p = producer(&bootstrap);
            let start = std::time::Instant::now();
            for (i, chunk) in msgs.chunks(100).enumerate() {
                produce_all(&p, chunk);
                let due = Duration::from_millis(((i + 1) * 100 / 2) as u64);
                if let Some(w) = due.checked_sub(start.elapsed()) {
                    std::thread::sleep(w);
                }
            }
            fed.store(true, std::sync::atomic::Ordering::SeqCst);
        })
    };
    let graded = |out: &Path| read_rows(out, "evaluations").len();
    let unjoined = |out: &Path| -> Vec<(i64, i64)> {
        read_rows(out, "dead_letters")
            .iter()
            .filter(|r| r["topic"] == LABELS && r["reason"] == "unjoined")
            .map(|r| {
                (
                    r["partition"].as_i64().unwrap(),
                    r["offset"].as_i64().unwrap(),
                )
            })
            .collect()
    };
    for i in 0..3 {
        let log = dir.join(format!("child-{i}.log"));
        let mut child = spawn_child(&cfg_path, &log);
        let before = graded(&out);
        // Killed once it has graded something more (or after 6 s).
        wait_until(Duration::from_secs(6), || graded(&out) > before);
        std::thread::sleep(Duration::from_millis(300 * i as u64));
        child.kill().expect("SIGKILL");
        child.wait().unwrap();
    }
    let log = dir.join("child-final.log");
    let mut child = spawn_child(&cfg_path, &log);
    let complete = wait_until(Duration::from_secs(120), || {
        fed.load(std::sync::atomic::Ordering::SeqCst)
            && graded(&out) + unjoined(&out).len() >= labels
    });
    std::thread::sleep(Duration::from_millis(1_000));
    child.kill().expect("SIGKILL");
    child.wait().unwrap();
    feeder.join().unwrap();
    let lost = unjoined(&out);
    assert!(
        complete,
        "{} of {labels} labels graded, {} unjoined",
        graded(&out),
        lost.len()
    );
    let evals = read_rows(&out, "evaluations");
    let mut seen = BTreeMap::new();
    for r in &evals {
        let k = (
            r["source_partition"].as_i64().unwrap(),
            r["source_offset"].as_i64().unwrap(),
            r["model_version"].as_str().unwrap().to_string(),
        );
        *seen.entry(k).or_insert(0) += 1;
    }
    let twice: Vec<_> = seen.iter().filter(|(_, &n)| n > 1).collect();
    assert!(twice.is_empty(), "labels graded twice: {twice:?}");
    let graded_labels: BTreeSet<(i64, i64)> = seen.keys().map(|(p, o, _)| (*p, *o)).collect();
    println!(
        "{} labels graded once, {} unjoined after the kills (of {labels})",
        graded_labels.len(),
        lost.len()
    );
    assert!(lost.is_empty(), "labels dead-lettered unjoined: {lost:?}");
    assert_eq!(
        graded_labels.len(),
        labels,
        "every label graded exactly once"
    );
}

/// The crash-path gap of label joins, made deterministic. Labels arrive before their
/// points and wait (each names a segment of two GunPoint series, longer than a window, so
/// the windows move past its start before its end arrives). Their points, all but each
/// segment's last, are made durable and their partition committed up to its end (read from
/// the group's committed offsets). Then the daemon is SIGKILLed: the labels have not joined.
/// After the restart the last points arrive and every label is graded once, none
/// dead-lettered `unjoined`. Without the labels' hold on the points' replay point, the
/// restart replays the points only from the live windows, the segments' starts are gone
/// from the history, and no label is graded.
#[test]
fn a_label_waiting_when_its_points_were_committed_joins_after_a_sigkill() {
    let dir = scratch("quality-held");
    let out = dir.join("out");
    let bootstrap = cluster(1);
    let (model_path, _) = model_file(&dir);
    let test = load("GunPoint_TEST.csv");
    let extra = alert_only(&dir, 120000);
    let _ = config(&bootstrap, &out, &model_path, "quality-held", &extra);
    let cfg_path = config_path(&out, "quality-held");
    let end = T0 + (2 * W as i64 - 1) * SPACING_MS;
    let mut labels = Vec::new();
    let mut points = Vec::new();
    for s in 0..SENSORS {
        let id = format!("sensor-{s}");
        let (a, b) = (2 * s, 2 * s + 1);
        let body = format!(
            r#"{{"series_id":"{id}","start":{T0},"end":{end},"label":"{}"}}"#,
            test.labels[a]
        );
        labels.push((LABELS.to_string(), id.clone(), body.into_bytes()));
        for (j, v) in [a, b]
            .iter()
            .flat_map(|&i| match &test.samples[i] {
                Sample::Series(v) => v.clone(),
                _ => unreachable!(),
            })
            .enumerate()
        {
            let ts = T0 + j as i64 * SPACING_MS;
            let body = format!(r#"{{"series_id":"{id}","ts":{ts},"value":{v}}}"#);
            points.push((ts, (POINTS.to_string(), id.clone(), body.into_bytes())));
        }
    }
    points.sort_by_key(|p| p.0);
    let points: Vec<_> = points.into_iter().map(|p| p.1).collect();
    // Each segment's last point is held back until after the kill.
    let (before, last) = points.split_at(points.len() - SENSORS);
    let committed = |topic: &str| committed_offsets(&bootstrap, "quality-held", topic, 1);
    let graded = |out: &Path| read_rows(out, "evaluations").len();
    let unjoined = |out: &Path| {
        read_rows(out, "dead_letters")
            .iter()
            .filter(|r| r["topic"] == LABELS && r["reason"] == "unjoined")
            .count()
    };

    let p = producer(&bootstrap);
    let mut child = spawn_child(&cfg_path, &dir.join("first.log"));
    // The labels first: consumed, queued and their partition committed before any point.
    produce_all(&p, &labels);
    let queued = wait_until(Duration::from_secs(60), || {
        committed(LABELS).get(&0) == Some(&(SENSORS as i64))
    });
    assert!(queued, "the labels' partition was not committed");
    produce_all(&p, before);
    let n = before.len() as i64;
    let durable = wait_until(Duration::from_secs(60), || {
        committed(POINTS).get(&0) == Some(&n)
    });
    assert!(
        durable,
        "the points' partition was not committed to its end"
    );
    assert_eq!(graded(&out), 0, "a label joined before its segment's end");
    child.kill().expect("SIGKILL");
    child.wait().unwrap();

    produce_all(&p, last);
    let mut child = spawn_child(&cfg_path, &dir.join("second.log"));
    let done = wait_until(Duration::from_secs(90), || {
        graded(&out) >= SENSORS || unjoined(&out) > 0
    });
    std::thread::sleep(Duration::from_millis(1_000));
    child.kill().expect("SIGKILL");
    child.wait().unwrap();
    let evals = read_rows(&out, "evaluations");
    let keys: BTreeSet<(i64, i64)> = evals
        .iter()
        .map(|r| {
            (
                r["source_partition"].as_i64().unwrap(),
                r["source_offset"].as_i64().unwrap(),
            )
        })
        .collect();
    assert!(
        done,
        "{} of {SENSORS} labels graded, {} unjoined",
        evals.len(),
        unjoined(&out)
    );
    assert_eq!(unjoined(&out), 0, "labels dead-lettered unjoined");
    assert_eq!(evals.len(), SENSORS, "one row per label: {evals:?}");
    assert_eq!(keys, (0..SENSORS as i64).map(|o| (0, o)).collect());
}

/// Produces `msgs` from a thread at about 1,500 messages a second (some 15 s for these
/// tests' streams); the flag is set once every message is produced.
fn feed_slowly(
    bootstrap: &str,
    msgs: Vec<(String, String, Vec<u8>)>,
) -> (
    std::thread::JoinHandle<()>,
    std::sync::Arc<std::sync::atomic::AtomicBool>,
) {
    let fed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let feeder = {
        let (bootstrap, fed) = (bootstrap.to_string(), fed.clone());
        std::thread::spawn(move || {
            let p = producer(&bootstrap);
            for chunk in msgs.chunks(151) {
                produce_all(&p, chunk);
                std::thread::sleep(Duration::from_millis(100));
            }
            fed.store(true, std::sync::atomic::Ordering::SeqCst);
        })
    };
    (feeder, fed)
}

/// Python's last line: out at once once the answer is printed. `deltalake` can abort the
/// interpreter's exit ("terminate called without an active exception", a runtime thread
/// still joinable) after a table was read; the answer is whole by then.
const EXIT_NOW: &str = "import sys; sys.stdout.flush(); os._exit(0)\n";

/// Python: `files(d)`, the Parquet files of an output folder, or the files a Delta table's
/// log names (not those a writer left uncommitted).
const TABLE_FILES: &str = r#"
import os
def files(d):
    if os.path.isdir(os.path.join(d, "_delta_log")):
        from deltalake import DeltaTable
        return [f.removeprefix("file://") for f in DeltaTable(d).file_uris()]
    return glob.glob(d + "/**/*.parquet", recursive=True)
"#;

/// Per label partition, the detector state of its newest `evaluations` checkpoint (read
/// back with pyarrow from the files' key-value metadata), with each model's `version` and
/// label times dropped: two runs' registries name the start-up model differently, and
/// their labels carry other Kafka timestamps.
fn final_checkpoints(out: &Path) -> BTreeMap<i64, Value> {
    let script = format!(
        r#"
import glob, json, pyarrow.parquet as pq
{FILES}
best = {{}}
for f in files("{}"):
    m = pq.read_metadata(f).metadata or {{}}
    t, s = m.get(b"milstream.quality_through"), m.get(b"milstream.quality_state")
    if t is None or s is None:
        continue
    p = int(m[b"milstream.partition"])
    if p not in best or int(t) > best[p][0]:
        best[p] = (int(t), json.loads(s))
print(json.dumps({{str(p): v[1] for p, v in best.items()}}))
{EXIT}"#,
        out.join("evaluations").display(),
        FILES = TABLE_FILES,
        EXIT = EXIT_NOW
    );
    let o = common::tools::python_with("pyarrow.parquet", "pyarrow")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "pyarrow: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let all: BTreeMap<String, Value> = serde_json::from_slice(&o.stdout).unwrap();
    all.into_iter()
        .map(|(p, mut v)| {
            for q in v["models"].as_object_mut().unwrap().values_mut() {
                let q = q.as_object_mut().unwrap();
                q.remove("version");
                // Label times are the labels' Kafka timestamps: the runs' differ. What is
                // compared is which labels were right, in order.
                q.remove("since_ms");
                let hits: Vec<Value> = q["recent"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r[0].clone())
                    .collect();
                q.insert("recent".into(), Value::Array(hits));
            }
            (p.parse().unwrap(), v)
        })
        .collect()
}

/// The errors' drift events as (label partition, label offset, signal, observations).
fn error_events(out: &Path) -> BTreeSet<(i64, i64, String, u64)> {
    read_rows(out, "drift_events")
        .iter()
        .filter(|e| e["detector"] == "errors")
        .map(|e| {
            (
                e["source_partition"].as_i64().unwrap(),
                e["source_offset"].as_i64().unwrap(),
                e["signal"].as_str().unwrap().to_string(),
                e["observations"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The detectors survive a rebalance and a SIGKILL: the same labels (a concept change
/// after `CHANGE` rounds, `on_drift = "alert"` so one model version grades throughout) go
/// once through one uninterrupted daemon, and once through a process that a second one
/// joins (a rebalance: partitions move, each side restores what it gets) and that is then
/// killed (its partitions restored by the survivor from the durable checkpoints). The
/// drift events (partition, offset, observations) and each partition's final detector state
/// are the same; the uninterrupted run's counters count each label once. The label-free
/// detectors (checkpointed in the `predictions` files) run with settings sensitive enough
/// to fire on this short stream (Page-Hinkley threshold 0.5, PSI windows of 8 predictions):
/// what is compared is where they fire and what they hold at the end.
#[test]
fn the_detectors_state_survives_a_rebalance_and_a_sigkill() {
    detectors_survive_a_rebalance_and_a_sigkill("parquet");
}

/// The same with the outputs as Delta tables: the detectors' checkpoints are read from the
/// files the tables' logs name, and the replay's rows below a table's `txn` are dropped at
/// the commit, so the drift events are each in the table once, as the uninterrupted run's.
#[test]
#[ignore = "flaky: once in five runs the uninterrupted Delta run's evaluations table held 142 of 144 labels (under investigation); run with --ignored"]
fn the_detectors_state_survives_a_rebalance_and_a_sigkill_with_delta_tables() {
    detectors_survive_a_rebalance_and_a_sigkill("delta");
}

fn detectors_survive_a_rebalance_and_a_sigkill(format: &str) {
    const ROUNDS: usize = 36;
    const CHANGE: usize = 10;
    let test = load("GunPoint_TEST.csv");
    let mut msgs = Vec::new();
    let mut labels = 0;
    for r in 0..ROUNDS {
        let (m, segments) = round(&test, r, r >= CHANGE);
        msgs.extend(m);
        labels += segments.len();
    }
    let extra = |dir: &Path| {
        format!(
            "{}score_window = 8\nscore_bins = 4\n[drift.page_hinkley]\nmin_instances = 5\nthreshold = 0.5\n",
            alert_only(dir, 30000)
        )
    };
    let graded = |out: &Path| read_rows(out, "evaluations").len();
    let unjoined = |out: &Path| -> Vec<(i64, i64)> {
        read_rows(out, "dead_letters")
            .iter()
            .filter(|r| r["topic"] == LABELS && r["reason"] == "unjoined")
            .map(|r| {
                (
                    r["partition"].as_i64().unwrap(),
                    r["offset"].as_i64().unwrap(),
                )
            })
            .collect()
    };

    // Uninterrupted.
    let dir = scratch(&format!("quality-state-whole-{format}"));
    let out_whole = dir.join("out");
    let bootstrap = cluster(2);
    let (model_path, _) = model_file(&dir);
    let port = free_port();
    let mut cfg = config(
        &bootstrap,
        &out_whole,
        &model_path,
        "state-whole",
        &extra(&dir),
    );
    cfg.http.listen = format!("127.0.0.1:{port}");
    cfg.output.format = format.to_string();
    let (daemon, stop) = spawn_daemon(cfg);
    let p = producer(&bootstrap);
    for chunk in msgs.chunks(604) {
        produce_all(&p, chunk);
        std::thread::sleep(Duration::from_millis(100));
    }
    // A bound on liveness, not a speed: two of these runs share the 2 cores with the
    // readers they spawn, and a Delta table's reader is slower than a folder's.
    let complete = wait_until(Duration::from_secs(240), || graded(&out_whole) >= labels);
    std::thread::sleep(Duration::from_millis(500));
    let labeled_total: f64 = common::stream::scrape(port)
        .lines()
        .filter(|l| l.starts_with("milstream_labeled_predictions_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    stop.send(true).unwrap();
    daemon.join().unwrap().expect("the daemon stops cleanly");
    assert!(complete, "{} of {labels} labels graded", graded(&out_whole));
    assert_eq!(labeled_total as usize, labels, "each label counted once");
    let predictions = |out: &Path| read_rows(out, "predictions").len();
    let whole_predictions = predictions(&out_whole);

    // A rebalance, then a SIGKILL.
    let dir = scratch(&format!("quality-state-moved-{format}"));
    let out = dir.join("out");
    let bootstrap = cluster(2);
    let (model_path, _) = model_file(&dir);
    let _ = config(&bootstrap, &out, &model_path, "state-moved", &extra(&dir));
    let cfg_path = config_path(&out, "state-moved");
    let text = std::fs::read_to_string(&cfg_path).unwrap();
    let text = text.replace("[output]\n", &format!("[output]\nformat = \"{format}\"\n"));
    std::fs::write(&cfg_path, text).unwrap();
    let (feeder, fed) = feed_slowly(&bootstrap, msgs);
    let mut first = spawn_child(&cfg_path, &dir.join("first.log"));
    wait_until(Duration::from_secs(30), || graded(&out) >= labels / 5);
    let mut second = spawn_child(&cfg_path, &dir.join("second.log"));
    wait_until(Duration::from_secs(30), || graded(&out) >= labels / 2);
    first.kill().expect("SIGKILL");
    first.wait().unwrap();
    let complete = wait_until(Duration::from_secs(120), || {
        fed.load(std::sync::atomic::Ordering::SeqCst)
            && graded(&out) + unjoined(&out).len() >= labels
            && predictions(&out) >= whole_predictions
    });
    std::thread::sleep(Duration::from_millis(1_000));
    second.kill().expect("SIGKILL");
    second.wait().unwrap();
    feeder.join().unwrap();
    assert!(complete, "{} of {labels} labels graded", graded(&out));
    assert_eq!(graded(&out), labels, "every label graded once");

    let (whole, moved) = (error_events(&out_whole), error_events(&out));
    println!("errors' events, uninterrupted: {whole:?}");
    assert!(
        whole.iter().any(|e| e.2 == "drift"),
        "the stream must drift for the test to mean something"
    );
    assert_eq!(moved, whole, "drift events after a rebalance and a SIGKILL");
    assert_eq!(
        final_checkpoints(&out),
        final_checkpoints(&out_whole),
        "each partition's detector state"
    );

    let (whole, moved) = (label_free_events(&out_whole), label_free_events(&out));
    println!("label-free events, uninterrupted: {whole:?}");
    for detector in ["margin", "scores"] {
        assert!(
            whole.iter().any(|e| e.0 == detector),
            "the {detector} detector must fire for the test to mean something"
        );
    }
    assert_eq!(
        moved, whole,
        "label-free events after a rebalance and a SIGKILL"
    );
    let served = served_checkpoints(&out_whole);
    assert!(
        !served.is_empty(),
        "the predictions files carry checkpoints"
    );
    assert_eq!(
        served_checkpoints(&out),
        served,
        "each points partition's label-free detectors"
    );
}

/// The label-free drift events as (detector, points partition, offset, observations).
fn label_free_events(out: &Path) -> BTreeSet<(String, i64, i64, u64)> {
    read_rows(out, "drift_events")
        .iter()
        .filter(|e| e["detector"] != "errors")
        .map(|e| {
            (
                e["detector"].as_str().unwrap().to_string(),
                e["source_partition"].as_i64().unwrap(),
                e["source_offset"].as_i64().unwrap(),
                e["observations"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Per points partition, the label-free detectors of its newest `predictions` file's
/// checkpoint, each model's version dropped (two runs' registries name the start-up model
/// differently).
fn served_checkpoints(out: &Path) -> BTreeMap<i64, Value> {
    let script = format!(
        r#"
import glob, json, pyarrow.parquet as pq
{FILES}
best = {{}}
for f in files("{}"):
    m = pq.read_metadata(f).metadata or {{}}
    s = m.get(b"milstream.served_state")
    if s is None:
        continue
    p, last = int(m[b"milstream.partition"]), int(m[b"milstream.last_offset"])
    if p not in best or last > best[p][0]:
        best[p] = (last, json.loads(s))
print(json.dumps({{str(p): v[1] for p, v in best.items()}}))
{EXIT}"#,
        out.join("predictions").display(),
        FILES = TABLE_FILES,
        EXIT = EXIT_NOW
    );
    let o = common::tools::python_with("pyarrow.parquet", "pyarrow")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "pyarrow: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let all: BTreeMap<String, Value> = serde_json::from_slice(&o.stdout).unwrap();
    all.into_iter()
        .map(|(p, mut v)| {
            for kind in ["margins", "scores"] {
                for m in v[kind].as_object_mut().unwrap().values_mut() {
                    // (version, detector): the version differs between the runs.
                    *m = m[1].take();
                }
            }
            (p.parse().unwrap(), v)
        })
        .collect()
}

/// The counters count each label once across a crash: a daemon is SIGKILLed once some
/// label's `evaluations/` row is durable beyond its partition's committed offset (counted,
/// not committed); the next owner replays from the commit and writes those rows again, and
/// its `milstream_labeled_predictions_total` counts exactly the labels whose rows were not
/// durable before it started.
#[test]
fn a_new_owner_does_not_count_again_the_labels_durable_before_it() {
    const ROUNDS: usize = 30;
    let test = load("GunPoint_TEST.csv");
    let mut msgs = Vec::new();
    let mut labels = 0;
    for r in 0..ROUNDS {
        let (m, segments) = round(&test, r, false);
        msgs.extend(m);
        labels += segments.len();
    }
    let dir = scratch("quality-counted");
    let out = dir.join("out");
    let bootstrap = cluster(2);
    let (model_path, _) = model_file(&dir);
    let extra = alert_only(&dir, 30000);
    let _ = config(&bootstrap, &out, &model_path, "counted", &extra);
    let cfg_path = config_path(&out, "counted");
    // Commits every 2 s: segments (rolled every 300 ms) are durable well before committed.
    let text = std::fs::read_to_string(&cfg_path)
        .unwrap()
        .replace("interval_ms = 200", "interval_ms = 2000");
    std::fs::write(&cfg_path, &text).unwrap();
    let port = free_port();
    let second_path = dir.join("counted-second.toml");
    std::fs::write(
        &second_path,
        text.replace(
            "listen = \"127.0.0.1:0\"",
            &format!("listen = \"127.0.0.1:{port}\""),
        ),
    )
    .unwrap();
    let (feeder, fed) = feed_slowly(&bootstrap, msgs);
    let mut first = spawn_child(&cfg_path, &dir.join("first.log"));
    // Killed once a label's row is durable at or beyond its partition's committed offset.
    let uncommitted = |rows: &[Value]| {
        let committed = committed_offsets(&bootstrap, "counted", LABELS, 2);
        rows.iter()
            .filter(|r| {
                let p = r["source_partition"].as_i64().unwrap() as i32;
                committed
                    .get(&p)
                    .is_some_and(|&c| r["source_offset"].as_i64().unwrap() >= c)
            })
            .count()
    };
    let ready = wait_until(Duration::from_secs(60), || {
        uncommitted(&read_rows(&out, "evaluations")) > 0
    });
    first.kill().expect("SIGKILL");
    first.wait().unwrap();
    assert!(ready, "no durable, uncommitted evaluation row to replay");
    let durable_before = read_rows(&out, "evaluations").len();
    let mut second = spawn_child(&second_path, &dir.join("second.log"));
    let complete = wait_until(Duration::from_secs(120), || {
        fed.load(std::sync::atomic::Ordering::SeqCst)
            && read_rows(&out, "evaluations").len() >= labels
    });
    std::thread::sleep(Duration::from_millis(1_000));
    let counted: f64 = common::stream::scrape(port)
        .lines()
        .filter(|l| l.starts_with("milstream_labeled_predictions_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    second.kill().expect("SIGKILL");
    second.wait().unwrap();
    feeder.join().unwrap();
    assert!(complete, "not every label was graded");
    assert_eq!(
        read_rows(&out, "evaluations").len(),
        labels,
        "one row per label"
    );
    println!(
        "{durable_before} of {labels} labels durable before the second owner; it counted {counted}"
    );
    assert_eq!(
        counted as usize,
        labels - durable_before,
        "the second owner counted labels durable before it"
    );
}

/// Why the label-free distribution test on the class scores (PSI) takes its reference from
/// the version's first served window, not from the training set the model card could
/// describe: LPBoost pushes its training examples onto the margin (scores at +-rho), so
/// quantile bins of the training scores do not describe the scores of unseen series. 1,000 predictions of GunPoint test series drawn with replacement
/// (a stationary stream) score a PSI far above the usual 0.25 alarm level on every class.
/// Also printed: a reference of 50 unseen test series against the other 100, the floor a
/// training set of GunPoint's size (50) gives even out of sample.
#[test]
fn a_training_reference_of_the_class_scores_does_not_describe_the_served_scores() {
    use milstream::drift::ScoreBins;

    let model = milstream::stream::embedded::train_embedded_model().unwrap();
    let train = load("GunPoint_TRAIN.csv");
    let test = load("GunPoint_TEST.csv");
    let scores = |ds: &Dataset| -> Vec<Vec<f64>> {
        ds.samples
            .iter()
            .map(|s| model.predict(s).unwrap().scores)
            .collect()
    };
    let (in_sample, served) = (scores(&train), scores(&test));
    let mut rng = Rng(11);
    let draws: Vec<usize> = (0..1_000).map(|_| rng.below(test.len())).collect();
    let psi_of = |reference: &[usize], from: &[Vec<f64>], stream: &[usize], c: usize| {
        let r: Vec<f64> = reference.iter().map(|&i| from[i][c]).collect();
        let bins = ScoreBins::of(&r, 10).unwrap();
        let mut counts = vec![0u64; bins.shares.len()];
        for &i in stream {
            counts[bins.bin(served[i][c])] += 1;
        }
        bins.psi(&counts)
    };
    let all_train: Vec<usize> = (0..train.len()).collect();
    for c in 0..model.classes().len() {
        let training = psi_of(&all_train, &in_sample, &draws, c);
        let first: Vec<usize> = (0..50).collect();
        let rest: Vec<usize> = draws.iter().copied().filter(|&i| i >= 50).collect();
        let out_of_sample = psi_of(&first, &served, &rest, c);
        println!(
            "class {}: PSI {training:.3} against the training scores, {out_of_sample:.3} against 50 unseen series",
            model.classes()[c]
        );
        assert!(
            training > 1.0,
            "class {c}: the training reference describes the served scores (PSI {training}): \
             the model card could now carry the PSI test's reference"
        );
    }
}

/// GunPoint with every 10th point (15-point series): a model of short windows, so that
/// 20,000 labelled windows fit through the mock cluster (300,000 points).
fn gunpoint_every_tenth(name: &str) -> Dataset {
    let mut d = load(name);
    for s in &mut d.samples {
        let Sample::Series(v) = s else { unreachable!() };
        *v = v.iter().step_by(10).copied().collect();
    }
    d
}

/// The issue's stationary run end to end: 20,000 labelled windows (16 sensors, 1,250
/// rounds of GunPoint test series at every 10th point, each labelled truly) through the
/// mock cluster and a daemon at the default `[drift]` settings (ADWIN on the errors with
/// its warning level, Page-Hinkley on the margins, PSI on the class scores): every label is
/// graded once and no detector reports a drift.
#[test]
fn twenty_thousand_stationary_labelled_windows_through_the_mock_cluster_raise_no_drift() {
    const SENSORS: usize = 16;
    const ROUNDS: usize = 1_250;
    const LEN: usize = 15;
    let hop_ms = LEN as i64 * SPACING_MS;
    let train = gunpoint_every_tenth("GunPoint_TRAIN.csv");
    let test = gunpoint_every_tenth("GunPoint_TEST.csv");
    let model = milstream::mil::Model::fit(&train, &milstream::mil::FitParams::default())
        .expect("GunPoint at every 10th point trains");
    let dir = scratch("quality-stationary-20000");
    let out = dir.join("out");
    let model_path = dir.join("model.json");
    std::fs::write(&model_path, model.to_json()).unwrap();
    let bootstrap = cluster(2);
    let extra = format!(
        "[training]\ndir = \"{}\"\nlabel_wait_ms = 60000\nevery = \"\"\nafter_examples = 0\n",
        dir.join("training").display()
    );
    let mut cfg = config(&bootstrap, &out, &model_path, "stationary", &extra);
    cfg.window.points = LEN;
    cfg.window.hop_ms = hop_ms;
    cfg.output.roll_rows = 5_000;
    let port = free_port();
    cfg.http.listen = format!("127.0.0.1:{port}");
    let (daemon, stop) = spawn_daemon(cfg);

    let p = producer(&bootstrap);
    let total = |text: &str, family: &str| -> usize {
        text.lines()
            .filter(|l| l.starts_with(family))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>() as usize
    };
    let consumed = || {
        total(
            &common::stream::scrape(port),
            "milstream_records_consumed_total{",
        )
    };
    let (mut msgs, mut produced) = (Vec::new(), 0);
    for r in 0..ROUNDS {
        let t = T0 + r as i64 * hop_ms;
        let picks: Vec<usize> = (0..SENSORS)
            .map(|s| (s * 37 + r * 11) % test.len())
            .collect();
        for j in 0..LEN {
            for (s, &i) in picks.iter().enumerate() {
                let Sample::Series(v) = &test.samples[i] else {
                    unreachable!()
                };
                let ts = t + j as i64 * SPACING_MS;
                let body = format!(r#"{{"series_id":"s{s}","ts":{ts},"value":{}}}"#, v[j]);
                msgs.push((POINTS.to_string(), format!("s{s}"), body.into_bytes()));
            }
        }
        let end = t + hop_ms - SPACING_MS;
        for (s, &i) in picks.iter().enumerate() {
            let l = &test.labels[i];
            let body = format!(r#"{{"series_id":"s{s}","start":{t},"end":{end},"label":"{l}"}}"#);
            msgs.push((LABELS.to_string(), format!("s{s}"), body.into_bytes()));
        }
        // Paced by what the daemon has read: the mock cluster keeps about 100,000 messages
        // a partition and drops older ones unread.
        if msgs.len() >= 20_000 {
            produce_all(&p, &msgs);
            produced += msgs.len();
            msgs.clear();
            wait_until(Duration::from_secs(120), || consumed() + 20_000 >= produced);
        }
    }
    produce_all(&p, &msgs);
    let labels = SENSORS * ROUNDS;
    let counted = || {
        total(
            &common::stream::scrape(port),
            "milstream_labeled_predictions_total{",
        )
    };
    let complete = wait_until(Duration::from_secs(300), || counted() >= labels);
    let text = common::stream::scrape(port);
    stop.send(true).unwrap();
    daemon.join().unwrap().expect("the daemon stops cleanly");
    assert!(complete, "{} of {labels} labels graded", counted());

    let evals = read_rows(&out, "evaluations");
    let once: BTreeSet<(i64, i64)> = evals
        .iter()
        .map(|r| {
            (
                r["source_partition"].as_i64().unwrap(),
                r["source_offset"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        (evals.len(), once.len()),
        (labels, labels),
        "one row per label"
    );
    let accuracy = evals.iter().filter(|r| r["correct"] == true).count() as f64 / labels as f64;
    let events = read_rows(&out, "drift_events");
    let count = |detector: &str, signal: &str| {
        events
            .iter()
            .filter(|e| e["detector"] == detector && e["signal"] == signal)
            .count()
    };
    println!(
        "{labels} stationary labelled windows, accuracy {accuracy:.3}: errors' warnings {}, \
         drifts: errors {}, margin {}, scores {}",
        count("errors", "warning"),
        count("errors", "drift"),
        count("margin", "drift"),
        count("scores", "drift")
    );
    assert!(
        events.iter().all(|e| e["signal"] != "drift"),
        "false alarms: {events:?}"
    );
    assert_eq!(
        sample(
            &text,
            "milstream_training_runs_total{model=\"series\",outcome=\"promoted\"}"
        ),
        0.0,
        "nothing retrained"
    );
}
