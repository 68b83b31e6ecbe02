//! `[drift]`: prequential evaluation of the serving models on the stream's labels, drift
//! detection on their errors and on their margins, and what a drift does.

use serde::{Deserialize, Serialize};

use crate::drift::{Adwin, AdwinParams, Ddm, DdmParams, Detector, PageHinkley, PageHinkleyParams};

/// What a detected drift of a model's errors does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum OnDrift {
    /// Retrain the model now; the candidate is promoted by the usual champion/challenger
    /// rule (`training.tolerance` on the newest labeled examples), else the champion keeps
    /// serving and the run counts as `rejected`.
    #[default]
    Retrain,
    /// Record the event (log line, metric, `drift_events` row) and nothing else.
    Alert,
    /// No drift detection (the evaluations and accuracy metrics stay).
    Off,
}

/// The detector on the 0/1 errors of labeled predictions.
///
/// ADWIN is the default because it keeps the promise of no false alarm on a stationary
/// stream: with River's defaults it raised none on 80 seeded streams of 20,000 labels (error
/// rates 0.01 to 0.3), where DDM (River's defaults) raised a drift on 5 to 9 of 20 of them,
/// mostly within its first few hundred labels (docs/DRIFT.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ErrorDetector {
    /// ADWIN on the error rate, River's defaults in `[drift.adwin]`.
    #[default]
    Adwin,
    /// DDM (warning and drift levels), River's defaults in `[drift.ddm]`.
    Ddm,
}

/// Live accuracy on the stream's labels and drift detection.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DriftConfig {
    /// Compare each joined label with the serving model's prediction for its segment or bag:
    /// the `evaluations` output, the accuracy and confusion metrics, the detectors.
    pub evaluate: bool,
    /// What a drift of the errors does: "retrain" (default), "alert" or "off".
    pub on_drift: OnDrift,
    /// Labels in the windowed accuracy gauge (`milstream_model_accuracy`), per model version.
    pub accuracy_window: usize,
    /// The detector on the errors: "adwin" (default) or "ddm".
    pub errors: ErrorDetector,
    /// DDM's parameters (River 0.26 defaults: warm_start 30, thresholds 2 and 3).
    pub ddm: DdmParams,
    /// ADWIN's parameters (River 0.26 defaults: delta 0.002, clock 32, max_buckets 5,
    /// min_window_length 5, grace_period 10).
    pub adwin: AdwinParams,
    /// The warning level beside ADWIN on the errors: a second ADWIN on the same errors at
    /// this larger delta (River's adaptive random forest pairs ADWIN(delta=0.01) as warning
    /// with ADWIN(delta=0.001) as drift), the rest of `[drift.adwin]` shared. A warning
    /// starts a candidate's training in the background (`on_drift = "retrain"`), challenged
    /// at the drift. 0 = no warning level. DDM has its own warning level and ignores it.
    pub warning_delta: f64,
    /// The label-free detector: Page-Hinkley on each served prediction's margin (its top
    /// score minus the next), per model and scoring worker. Alerts only: a retrain needs
    /// labels, which the errors' detector sees.
    pub margin: bool,
    /// Page-Hinkley's parameters on the margin (River 0.26 defaults but the threshold:
    /// min_instances 30, delta 0.005, alpha 0.9999, mode "both", threshold 50).
    pub page_hinkley: PageHinkleyParams,
    /// The label-free distribution test: the Population Stability Index of each class's
    /// served scores, per model and scoring worker, in tumbling windows of `score_window`
    /// predictions against the quantile bins of the version's first window there. Alerts
    /// only. (Not against the training scores: LPBoost puts those on the margin, see
    /// `tests/live_quality.rs`.)
    pub scores: bool,
    /// Predictions per window of the PSI test (the first one is the reference).
    pub score_window: usize,
    /// Quantile bins of the reference window (deciles by default).
    pub score_bins: usize,
    /// An alarm when the largest PSI over the classes exceeds it (0.25: the usual
    /// "significant shift" rule).
    pub psi_threshold: f64,
}

impl Default for DriftConfig {
    fn default() -> Self {
        Self {
            evaluate: true,
            on_drift: OnDrift::default(),
            accuracy_window: 500,
            errors: ErrorDetector::default(),
            ddm: DdmParams::default(),
            adwin: AdwinParams::default(),
            warning_delta: 0.01,
            margin: true,
            page_hinkley: PageHinkleyParams::default(),
            scores: true,
            score_window: 1_000,
            score_bins: 10,
            psi_threshold: 0.25,
        }
    }
}

impl DriftConfig {
    /// A fresh detector on a model's errors.
    pub fn error_detector(&self) -> Detector {
        match self.errors {
            ErrorDetector::Ddm => Detector::Ddm(Ddm::new(self.ddm)),
            ErrorDetector::Adwin => Detector::Adwin(Adwin::new(self.adwin)),
        }
    }

    /// A fresh warning detector on a model's errors: ADWIN at `warning_delta` beside the
    /// ADWIN on them; None with DDM (its own warning level) or `warning_delta = 0`.
    pub fn warning_detector(&self) -> Option<Adwin> {
        (self.errors == ErrorDetector::Adwin && self.warning_delta > 0.0).then(|| {
            Adwin::new(AdwinParams {
                delta: self.warning_delta,
                ..self.adwin
            })
        })
    }

    /// A fresh label-free detector on a model's margins.
    pub fn margin_detector(&self) -> Detector {
        Detector::PageHinkley(PageHinkley::new(self.page_hinkley))
    }

    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.accuracy_window == 0 {
            return Err(("drift.accuracy_window", "must be at least 1".into()));
        }
        if self.score_bins < 2 {
            return Err(("drift.score_bins", "must be at least 2".into()));
        }
        if self.score_window < self.score_bins {
            return Err((
                "drift.score_window",
                "must be at least drift.score_bins".into(),
            ));
        }
        if !(self.psi_threshold > 0.0 && self.psi_threshold.is_finite()) {
            return Err(("drift.psi_threshold", "must be a positive number".into()));
        }
        if self.adwin.clock == 0 {
            return Err(("drift.adwin.clock", "must be at least 1".into()));
        }
        if !(self.adwin.delta > 0.0 && self.adwin.delta < 1.0) {
            return Err(("drift.adwin.delta", "must be in (0, 1)".into()));
        }
        // A warning tighter than the drift's delta would come after the drift, never before.
        let w = self.warning_delta;
        if w != 0.0 && !(w > self.adwin.delta && w < 1.0) {
            return Err((
                "drift.warning_delta",
                format!(
                    "must be 0 (no warning) or in (drift.adwin.delta = {}, 1), got {w}",
                    self.adwin.delta
                ),
            ));
        }
        Ok(())
    }
}
