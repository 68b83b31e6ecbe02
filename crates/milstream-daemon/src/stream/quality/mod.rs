//! The serving models' quality, live. In: each label that joined (with the prediction the
//! model in service makes for the labeled segment or bag, see [`evaluate`]) and each
//! emitted prediction's scores. Out: `evaluations` and `drift_events` rows for the label's
//! (or the prediction's) segment, the accuracy, confusion and drift metrics, and retrain
//! requests for the trainer. Owns: per label partition and model, the windowed accuracy of
//! its version and the detector on its errors ([`PartitionQuality`], held by the worker that
//! owns the partition); per process, the accuracy gauge and the counted offsets
//! ([`Quality`]). The label-free detectors on what the served models say are in
//! `label_free.rs`.
//!
//! Evaluation is prequential (test, then train): the label grades the model that serves when
//! it joins, before any retrain has seen it. Its rows travel in the same segment as the
//! label's example, so a replay rewrites them under the same rule: exactly one row per label
//! and model version.
//!
//! Why the errors' detectors are per label partition, not per model: the only order of
//! labels that a restart or a rebalance reproduces is a partition's offset order (labels
//! resolve in order, see `labels.rs`); the interleaving of several partitions across workers
//! and processes is not reproducible, so a per-model detector could not be restored exactly.
//! A partition's state is a pure function of its graded labels
//! ([`PartitionQuality::grade`]); each `evaluations` file carries it as of its last label
//! (a checkpoint in the file's metadata), and a new owner restores it from the newest
//! durable checkpoint below the replay point (`sink::restore_quality`), so the state after a
//! restart equals an uninterrupted run's, with no label counted twice, and the replayed
//! labels raise the same `drift_events` rows. The cost: a detector sees its partition's
//! share of the labels (a labels topic has few partitions: labels are rare). The counters
//! count a label when its row is durable ([`Quality::count_durable`]), once per label.

pub mod label_free;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tracing::{info, warn};

use crate::config::{DriftConfig, OnDrift};
use crate::drift::{Adwin, Detector, Signal};
use crate::metrics::Metrics;
use crate::stream::ingest::position::PartitionKey;
use crate::stream::output::arrow::examples::Example;
use crate::stream::score::window::ScoringModel;

/// One label graded against the prediction of the model serving when it joined.
#[derive(Debug, Clone, PartialEq)]
pub struct EvaluationRecord {
    /// The series id or bag id.
    pub key: String,
    /// The labeled segment `[start, end]`; None for a bag.
    pub segment: Option<(i64, i64)>,
    pub label: String,
    pub predicted: String,
    pub correct: bool,
    pub classes: Vec<String>,
    pub scores: Vec<f64>,
    pub model_name: String,
    pub model_version: String,
    /// Where the label came from.
    pub source_topic: String,
    pub source_partition: i32,
    pub source_offset: i64,
    pub labeled_at_ms: i64,
}

/// A detector's warning or drift.
#[derive(Debug, Clone, PartialEq)]
pub struct DriftEventRecord {
    pub model_name: String,
    pub model_version: String,
    /// `errors` (labeled), `margin` or `scores` (label-free).
    pub detector: &'static str,
    /// `ddm`, `adwin`, `page_hinkley` or `psi`.
    pub method: &'static str,
    /// `warning` or `drift`.
    pub signal: &'static str,
    /// Values the detector had seen since it (re)started.
    pub observations: u64,
    /// What the daemon does: `retrain`, `alert` (nothing but the event), `candidate` (a
    /// warning that starts a candidate's training) or `none` (a warning, otherwise).
    pub action: &'static str,
    /// The message whose label (or prediction) raised it.
    pub source_topic: String,
    pub source_partition: i32,
    pub source_offset: i64,
    pub at_ms: i64,
}

/// The quality rows a segment carries besides its predictions.
#[derive(Debug, Clone, Default)]
pub struct QualityRows {
    pub evaluations: Vec<EvaluationRecord>,
    pub drift_events: Vec<DriftEventRecord>,
    /// Set when the segment is sealed with evaluations: the offset of its last graded label
    /// and the partition's [`PartitionQuality`] after it (JSON), written into the
    /// `evaluations` file's metadata for `sink::restore_quality`.
    pub checkpoint: Option<(i64, String)>,
}

impl QualityRows {
    pub fn len(&self) -> usize {
        self.evaluations.len() + self.drift_events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn extend(&mut self, other: QualityRows) {
        self.evaluations.extend(other.evaluations);
        self.drift_events.extend(other.drift_events);
    }
}

/// What the serving model predicts for a joined example (the labeled segment as one window,
/// or the bag): the prediction a label is graded against. None when the model cannot score
/// it (another channel count).
pub fn evaluate(served: &ScoringModel, name: &str, e: &Example) -> Option<EvaluationRecord> {
    let p = served.model.predict(&e.sample()?).ok()?;
    Some(EvaluationRecord {
        key: e.key.clone(),
        segment: e.segment,
        label: e.label.clone(),
        correct: p.label == e.label,
        predicted: p.label,
        classes: served.model.classes().to_vec(),
        scores: p.scores,
        model_name: name.to_string(),
        model_version: served.version.clone(),
        source_topic: e.source_topic.clone(),
        source_partition: e.source_partition,
        source_offset: e.source_offset,
        labeled_at_ms: e.labeled_at_ms,
    })
}

/// One model's live figures on one label partition: the accuracy window of its serving
/// version and its errors' detector (started over when the version changes: a new model
/// makes new errors). Serialized into the checkpoint of each `evaluations` file.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct ModelQuality {
    version: String,
    /// The version's last `accuracy_window` labels: right or not, and their label time.
    recent: VecDeque<(bool, i64)>,
    hits: usize,
    errors: Option<Detector>,
    signal: Signal,
    /// When the current warning started (the label time of the label that raised it): as in
    /// DDM's paper, the examples from the warning on are the new concept's, and a retrain on
    /// drift learns from them only.
    since_ms: Option<i64>,
    /// The warning level beside ADWIN on the errors: ADWIN at `drift.warning_delta` on the
    /// same errors. Absent from checkpoints written before it: it starts on the first label
    /// graded after such a restore.
    #[serde(default)]
    warning: Option<Adwin>,
    /// While the warning detector's warning holds: the error rate of the accuracy window
    /// before the warning's change point. The warning clears when the errors since the
    /// warning are no more frequent.
    #[serde(default)]
    baseline: Option<f64>,
}

/// One label partition's live figures, per model: owned by the worker that owns the
/// partition, checkpointed in each `evaluations` file it writes and rebuilt from them when
/// the partition is assigned (`sink::restore_quality`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PartitionQuality {
    models: BTreeMap<String, ModelQuality>,
}

/// What grading one label did to its partition's figures of its model.
pub struct Step {
    /// `warning` (entering the warning zone) or `drift`.
    event: Option<&'static str>,
    /// Where the new concept starts (label time), for a retrain on drift.
    since_ms: i64,
    observations: u64,
    method: &'static str,
    signal: Signal,
    hits: usize,
    window: usize,
    /// A warning ended without a drift: back to stable, or the version changed under it.
    cleared: bool,
}

impl PartitionQuality {
    /// Grades one label: its 0/1 error into the model's accuracy window and detector. Pure:
    /// the same labels in the same order give the same state, which is what makes the
    /// state after a restart equal to an uninterrupted run's.
    pub fn grade(
        &mut self,
        cfg: &DriftConfig,
        (model, version): (&str, &str),
        correct: bool,
        labeled_at_ms: i64,
    ) -> Step {
        let fresh = || ModelQuality {
            version: version.to_string(),
            recent: VecDeque::with_capacity(cfg.accuracy_window + 1),
            hits: 0,
            errors: (cfg.on_drift != OnDrift::Off).then(|| cfg.error_detector()),
            signal: Signal::Stable,
            since_ms: None,
            warning: None,
            baseline: None,
        };
        if !self.models.contains_key(model) {
            self.models.insert(model.to_string(), fresh());
        }
        let q = self.models.get_mut(model).expect("inserted above");
        let mut cleared = false;
        if q.version != version {
            cleared = q.signal == Signal::Warning;
            *q = fresh();
        }
        q.recent.push_back((correct, labeled_at_ms));
        q.hits += usize::from(correct);
        if q.recent.len() > cfg.accuracy_window && q.recent.pop_front().is_some_and(|(h, _)| h) {
            q.hits -= 1;
        }
        let mut step = Step {
            event: None,
            since_ms: labeled_at_ms,
            observations: 0,
            method: "",
            signal: Signal::Stable,
            hits: q.hits,
            window: q.recent.len(),
            cleared,
        };
        let Some(detector) = q.errors.as_mut() else {
            return step;
        };
        let before = q.signal;
        let error = if correct { 0.0 } else { 1.0 };
        q.signal = detector.update(error);
        (step.observations, step.method) = (detector.seen(), detector.kind());
        if matches!(detector, Detector::Adwin(_)) && q.warning.is_none() {
            q.warning = cfg.warning_detector();
        }
        if let Some(w) = q.warning.as_mut() {
            let fired = w.update(error) == Signal::Drift;
            if q.signal == Signal::Drift {
                // As River's adaptive random forest: a drift restarts the warning detector.
                *w = Adwin::new(w.params());
                q.baseline = None;
            } else if let Some(base) = q.baseline {
                // Holding; tested on the detector's clock, so a few errors in a row do not
                // keep it and a few hits do not clear it.
                let tested = w.seen().is_multiple_of(w.params().clock);
                q.signal = if tested && w.estimation() <= base {
                    q.baseline = None;
                    Signal::Stable
                } else {
                    Signal::Warning
                };
            } else if fired {
                // ADWIN fires on any change of the mean: only more errors is a warning.
                let (at, old, new) = split_at_change(&q.recent);
                if new > old {
                    q.baseline = Some(old);
                    q.since_ms = Some(q.recent[at].1);
                    q.signal = Signal::Warning;
                }
            }
        }
        step.signal = q.signal;
        step.cleared |= before == Signal::Warning && q.signal == Signal::Stable;
        match q.signal {
            Signal::Warning => _ = q.since_ms.get_or_insert(labeled_at_ms),
            Signal::Stable => q.since_ms = None,
            Signal::Drift => {}
        }
        // Where the new concept starts: the warning's (DDM's, or the change point of the
        // version's recent errors when the warning ADWIN fired), else (ADWIN without a
        // warning) the change point at the drift.
        step.since_ms = match q.since_ms.take() {
            Some(t) => t,
            None if q.signal == Signal::Drift => change_point(&q.recent),
            None => labeled_at_ms,
        };
        if q.signal == Signal::Warning {
            q.since_ms = Some(step.since_ms);
        }
        // An event: entering the warning zone, or a drift.
        step.event = match (before, q.signal) {
            (_, Signal::Drift) => Some("drift"),
            (b, Signal::Warning) if b != Signal::Warning => Some("warning"),
            _ => None,
        };
        step
    }

    /// The checkpoint written into an `evaluations` file's metadata.
    pub fn checkpoint(&self) -> String {
        serde_json::to_string(self).expect("the quality state serializes")
    }
}

/// A label partition's accuracy window of one model: the version it last graded, its hits
/// and its labels.
type AccuracyWindow = (String, usize, usize);

/// Every model's live figures as this process sees them, shared by the workers and writers.
pub struct Quality {
    cfg: DriftConfig,
    metrics: Arc<Metrics>,
    /// Per model, each owned label partition's accuracy window of the version it last
    /// graded (version, hits, labels): the accuracy gauge sums them per version.
    accuracy: Mutex<HashMap<String, BTreeMap<PartitionKey, AccuracyWindow>>>,
    /// Per label partition, the highest label offset the counters have counted: a label is
    /// counted once, when its row becomes durable (see [`Quality::count_durable`]).
    counted: Mutex<HashMap<PartitionKey, i64>>,
    /// Per model, what its errors' detectors asked of the trainer (`on_drift = "retrain"`)
    /// since it last looked, in order.
    requests: Mutex<BTreeMap<String, Vec<TrainerRequest>>>,
}

/// What the errors' detectors ask of the trainer (`on_drift = "retrain"`). The label times
/// say from when the examples show the new concept (see [`ModelQuality::since_ms`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrainerRequest {
    /// A warning: fit a candidate on the examples labeled since `since_ms` and hold it.
    Warning { since_ms: i64 },
    /// The warning cleared without a drift: drop the held candidate.
    Cleared,
    /// A drift: challenge the champion with the held candidate, else retrain from
    /// `since_ms` now.
    Drift { since_ms: i64 },
}

const POISONED: &str = "the quality state is never poisoned: nothing panics while holding it";

impl Quality {
    pub fn new(cfg: DriftConfig, metrics: Arc<Metrics>) -> Arc<Self> {
        Arc::new(Quality {
            cfg,
            metrics,
            accuracy: Mutex::new(HashMap::new()),
            counted: Mutex::new(HashMap::new()),
            requests: Mutex::new(BTreeMap::new()),
        })
    }

    pub fn config(&self) -> &DriftConfig {
        &self.cfg
    }

    pub fn retrains_on_drift(&self) -> bool {
        self.cfg.on_drift == OnDrift::Retrain
    }

    /// Takes `model`'s requests to the trainer since the last call, oldest first.
    pub fn take_requests(&self, model: &str) -> Vec<TrainerRequest> {
        self.requests
            .lock()
            .expect(POISONED)
            .remove(model)
            .unwrap_or_default()
    }

    fn request(&self, model: &str, r: TrainerRequest) {
        if self.retrains_on_drift() {
            let mut requests = self.requests.lock().expect(POISONED);
            requests.entry(model.to_string()).or_default().push(r);
        }
    }

    /// Grades a label into its partition's `state` (the accuracy gauge follows); returns
    /// the event when the model's detector enters its warning zone or reports a drift. The
    /// counters wait for the row to be durable ([`Quality::count_durable`]).
    pub fn record(
        &self,
        state: &mut PartitionQuality,
        e: &EvaluationRecord,
    ) -> Option<DriftEventRecord> {
        let (model, version) = (e.model_name.as_str(), e.model_version.as_str());
        let step = state.grade(&self.cfg, (model, version), e.correct, e.labeled_at_ms);
        let key = (e.source_topic.clone(), e.source_partition);
        self.show_accuracy(model, version, key, (step.hits, step.window));
        if step.method.is_empty() {
            return None;
        }
        self.metrics
            .drift_state
            .with_label_values(&[model])
            .set(match step.signal {
                Signal::Stable => 0,
                Signal::Warning => 1,
                Signal::Drift => 2,
            });
        if step.cleared {
            self.request(model, TrainerRequest::Cleared);
            info!(
                model,
                version,
                detector = step.method,
                source_partition = e.source_partition,
                source_offset = e.source_offset,
                "Warning on the labeled errors cleared without a drift."
            );
        }
        let signal = step.event?;
        let since_ms = step.since_ms;
        let action = match signal {
            "drift" if self.retrains_on_drift() => "retrain",
            "drift" => "alert",
            _ if self.retrains_on_drift() => "candidate",
            _ => "none",
        };
        match action {
            "retrain" => self.request(model, TrainerRequest::Drift { since_ms }),
            "candidate" => self.request(model, TrainerRequest::Warning { since_ms }),
            _ => {}
        }
        warn!(
            model,
            version,
            detector = step.method,
            signal,
            observations = step.observations,
            action,
            source_partition = e.source_partition,
            source_offset = e.source_offset,
            "Drift detector on the labeled errors fired."
        );
        Some(DriftEventRecord {
            model_name: model.to_string(),
            model_version: version.to_string(),
            detector: "errors",
            method: step.method,
            signal,
            observations: step.observations,
            action,
            source_topic: e.source_topic.clone(),
            source_partition: e.source_partition,
            source_offset: e.source_offset,
            at_ms: chrono::Utc::now().timestamp_millis(),
        })
    }

    /// Sets the accuracy gauge of `model`'s `version`: the hits over the labels of the
    /// windows of every label partition this process owns that last graded that version.
    fn show_accuracy(&self, model: &str, version: &str, key: PartitionKey, window: (usize, usize)) {
        let mut acc = self.accuracy.lock().expect(POISONED);
        let parts = acc.entry(model.to_string()).or_default();
        parts.insert(key, (version.to_string(), window.0, window.1));
        let (hits, n) = parts
            .values()
            .filter(|(v, _, _)| v == version)
            .fold((0, 0), |(h, n), (_, a, b)| (h + a, n + b));
        self.metrics
            .model_accuracy
            .with_label_values(&[model, version])
            .set(hits as f64 / n.max(1) as f64);
    }

    /// A label partition assigned to this process: its figures `state` (rebuilt from the
    /// durable evaluations by `sink::restore_quality`) join the gauge, and the counters go on from the
    /// highest label offset already durable (`durable_through`), which a previous owner
    /// counted.
    pub fn assigned(
        &self,
        key: &PartitionKey,
        state: &PartitionQuality,
        durable_through: Option<i64>,
    ) {
        let mut counted = self.counted.lock().expect(POISONED);
        match durable_through {
            Some(o) => counted.insert(key.clone(), o),
            None => counted.remove(key),
        };
        drop(counted);
        for (model, q) in &state.models {
            self.show_accuracy(model, &q.version, key.clone(), (q.hits, q.recent.len()));
        }
    }

    /// A label partition revoked: its figures leave the gauge (its new owner shows them).
    /// Its counted offset stays until the next assignment sets it: the segments sealed on
    /// revoke are still to be counted when durable.
    pub fn revoked(&self, key: &PartitionKey) {
        let mut acc = self.accuracy.lock().expect(POISONED);
        for parts in acc.values_mut() {
            parts.remove(key);
        }
    }

    /// Counts a durable segment's graded labels (labeled, correct, confusion) and drift
    /// events, each label once: a label partition grades in offset order, so a row at or
    /// below the partition's highest counted offset was counted before (a replay rewrote
    /// it). Label-free events are counted as written (their detectors are not replayed).
    pub fn count_durable(&self, topic: &str, partition: i32, rows: &QualityRows) {
        let m = &self.metrics;
        let mut counted = self.counted.lock().expect(POISONED);
        let mark = counted.get(&(topic.to_string(), partition)).copied();
        let new = |offset: i64| mark.is_none_or(|m| offset > m);
        let mut top = mark;
        for e in rows.evaluations.iter().filter(|e| new(e.source_offset)) {
            let (model, version) = (e.model_name.as_str(), e.model_version.as_str());
            m.labeled_predictions
                .with_label_values(&[model, version])
                .inc();
            if e.correct {
                m.correct_predictions
                    .with_label_values(&[model, version])
                    .inc();
            }
            // Label values stay bounded: a label none of the model's classes is `other`.
            let label = if e.classes.contains(&e.label) {
                e.label.as_str()
            } else {
                "other"
            };
            m.confusion
                .with_label_values(&[model, version, label, &e.predicted])
                .inc();
            top = top.max(Some(e.source_offset));
        }
        for d in &rows.drift_events {
            if d.detector == "errors" && !new(d.source_offset) {
                continue;
            }
            m.drift_events
                .with_label_values(&[&d.model_name, d.detector, d.signal])
                .inc();
        }
        if let Some(t) = top.filter(|_| !rows.evaluations.is_empty()) {
            counted.insert((topic.to_string(), partition), t);
        }
    }

    /// The process's metrics (the label-free detectors set the PSI gauge).
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }
}

/// Where the errors' mean shifted most in the accuracy window (as [`change_point`]): the
/// index of the first label after the change, the error rate before it and from it on.
fn split_at_change(recent: &VecDeque<(bool, i64)>) -> (usize, f64, f64) {
    let at = change_index(recent);
    let errors = |r: std::collections::vec_deque::Iter<'_, (bool, i64)>, n: usize| {
        r.filter(|(hit, _)| !hit).count() as f64 / n.max(1) as f64
    };
    let old = errors(recent.range(..at), at);
    let new = errors(recent.range(at..), recent.len() - at);
    (at, old, new)
}

/// The label time where the errors' mean shifted most: the CUSUM change-point estimate
/// (Hinkley, "Inference about the change-point from cumulative sum tests", Biometrika 1971),
/// argmax_k |S_k - k S_n / n| over the window's 0/1 errors.
fn change_point(recent: &VecDeque<(bool, i64)>) -> i64 {
    recent[change_index(recent)].1
}

/// [`change_point`]'s index in the window.
fn change_index(recent: &VecDeque<(bool, i64)>) -> usize {
    let n = recent.len() as f64;
    let errors = recent.iter().filter(|(hit, _)| !hit).count() as f64;
    let (mut s, mut best, mut at) = (0.0, -1.0, 0);
    for (k, (hit, _)) in recent.iter().enumerate() {
        s += if *hit { 0.0 } else { 1.0 };
        let d = (s - (k + 1) as f64 * errors / n).abs();
        if d > best {
            (best, at) = (d, k + 1);
        }
    }
    // The first label after the change (the newest label if the shift is at the end).
    at.min(recent.len() - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_change_point_is_the_first_label_of_the_new_error_rate() {
        let recent: VecDeque<(bool, i64)> = (0..96).map(|i| (i < 48, 1000 + i)).collect();
        assert_eq!(change_point(&recent), 1048);
        let recent: VecDeque<(bool, i64)> = (0..10).map(|i| (true, i)).collect();
        assert!(change_point(&recent) <= 9);
    }

    /// Grades `errors` (true = wrong) for model `m` version `v1`, label times 1000 + i; the
    /// events and the label index they came at.
    fn grade_all(
        cfg: &DriftConfig,
        state: &mut PartitionQuality,
        errors: impl Iterator<Item = bool>,
    ) -> Vec<(usize, &'static str, i64, bool)> {
        let mut out = Vec::new();
        for (i, wrong) in errors.enumerate() {
            let step = state.grade(cfg, ("m", "v1"), !wrong, 1000 + i as i64);
            if step.event.is_some() || step.cleared {
                out.push((
                    i + 1,
                    step.event.unwrap_or("cleared"),
                    step.since_ms,
                    step.cleared,
                ));
            }
        }
        out
    }

    /// 48 right labels, then wrong ones: the warning ADWIN (delta 0.01) warns at label 64
    /// with the change point (label 49, time 1048) as where the new concept starts; the
    /// drift ADWIN fires at label 96 and learns from the same point.
    #[test]
    fn the_warning_adwin_warns_a_clock_tick_before_the_drift_from_the_change_point() {
        let cfg = DriftConfig::default();
        let mut state = PartitionQuality::default();
        let events = grade_all(&cfg, &mut state, (0..120).map(|i| i >= 48));
        assert_eq!(
            events,
            vec![(64, "warning", 1048, false), (96, "drift", 1048, false)]
        );
        // Without a warning level: the drift alone, at the same label.
        let cfg = DriftConfig {
            warning_delta: 0.0,
            ..DriftConfig::default()
        };
        let mut state = PartitionQuality::default();
        let events = grade_all(&cfg, &mut state, (0..120).map(|i| i >= 48));
        assert_eq!(events, vec![(96, "drift", 1048, false)]);
    }

    /// A warning whose errors go back to the old rate clears (on the detector's clock), and
    /// a stream whose errors fall raises no warning at all (ADWIN fires on any change of the
    /// mean; fewer errors is no warning).
    #[test]
    fn a_warning_clears_when_the_errors_return_and_fewer_errors_is_no_warning() {
        let cfg = DriftConfig::default();
        let mut state = PartitionQuality::default();
        // 48 right, 16 wrong (warning at 64), then right again.
        let events = grade_all(&cfg, &mut state, (0..200).map(|i| (48..64).contains(&i)));
        assert_eq!(events[0], (64, "warning", 1048, false));
        assert_eq!(events[1].1, "cleared", "{events:?}");
        assert!(events[1].0 <= 64 + 32, "{events:?}");
        assert!(events.iter().all(|e| e.1 != "drift"), "{events:?}");
        // 32 wrong: the warning detector, restarted at the warning, cuts the burst off at
        // label 128 and sees no error from 129 to 160: cleared there.
        let mut state = PartitionQuality::default();
        let events = grade_all(&cfg, &mut state, (0..180).map(|i| (48..80).contains(&i)));
        assert_eq!(
            events,
            vec![(64, "warning", 1048, false), (160, "cleared", 1159, true)]
        );
        // All wrong, then right: the detectors fire on the fall, but no warning is raised.
        let mut state = PartitionQuality::default();
        let events = grade_all(&cfg, &mut state, (0..200).map(|i| i < 48));
        assert!(events.iter().all(|e| e.1 != "warning"), "{events:?}");
    }

    /// The warning detector is in the checkpoint (a restored partition warns where an
    /// uninterrupted one does), and a checkpoint from before it still reads.
    #[test]
    fn the_warning_detector_survives_a_checkpoint_and_old_checkpoints_read() {
        let cfg = DriftConfig::default();
        let errors = |r: std::ops::Range<usize>| r.map(|i| i >= 48);
        let mut whole = PartitionQuality::default();
        let all = grade_all(&cfg, &mut whole, errors(0..120));
        let mut first = PartitionQuality::default();
        grade_all(&cfg, &mut first, errors(0..50));
        let mut restored: PartitionQuality =
            serde_json::from_str(&first.checkpoint()).expect("reads its own checkpoint");
        let mut rest = Vec::new();
        for i in 50..120 {
            let step = restored.grade(&cfg, ("m", "v1"), i < 48, 1000 + i as i64);
            if let Some(e) = step.event {
                rest.push((i + 1, e, step.since_ms, step.cleared));
            }
        }
        assert_eq!(rest, all);
        assert_eq!(restored.checkpoint(), whole.checkpoint());
        // A checkpoint written before the warning level: no `warning`, no `baseline`.
        let mut old: serde_json::Value = serde_json::from_str(&first.checkpoint()).unwrap();
        let m = old["models"]["m"].as_object_mut().unwrap();
        assert!(m.remove("warning").is_some() && m.remove("baseline").is_some());
        let mut old: PartitionQuality = serde_json::from_value(old).expect("an old checkpoint");
        let step = old.grade(&cfg, ("m", "v1"), false, 2000);
        assert_eq!(step.method, "adwin");
        assert!(
            old.models["m"].warning.is_some(),
            "the warning level starts"
        );
    }
}
