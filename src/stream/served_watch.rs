//! The serving models' quality without labels. In: each prediction a scoring worker emits.
//! Out: `drift_events` rows (detector `margin` or `scores`) and the PSI gauge. Owns: per
//! scoring worker and model, Page-Hinkley on the predictions' margins ([`MarginWatch`]) and
//! the PSI tests on their class scores' distribution ([`ScoreWatch`]); no lock on the
//! scoring path. They alert only (a retrain needs labels, see `quality.rs`), and start over
//! on a restart or a rebalance: their rows are not replay-exact.

use std::collections::HashMap;
use std::sync::Arc;

use tracing::warn;

use super::quality::{DriftEventRecord, Quality};
use crate::config::OnDrift;
use crate::drift::{Detector, PsiTest, Signal};

impl Quality {
    /// A scoring worker's label-free detectors (None when off).
    pub fn margin_watch(self: &Arc<Self>) -> Option<MarginWatch> {
        (self.cfg.margin && self.cfg.on_drift != OnDrift::Off).then(|| MarginWatch {
            quality: self.clone(),
            models: HashMap::new(),
        })
    }

    /// A scoring worker's label-free detectors, those that are on (None when none is).
    pub fn served_watch(self: &Arc<Self>) -> Option<ServedWatch> {
        let w = ServedWatch {
            margins: self.margin_watch(),
            scores: self.score_watch(),
        };
        (w.margins.is_some() || w.scores.is_some()).then_some(w)
    }

    /// A scoring worker's label-free distribution tests on the class scores (None when off).
    pub fn score_watch(self: &Arc<Self>) -> Option<ScoreWatch> {
        (self.cfg.scores && self.cfg.on_drift != OnDrift::Off).then(|| ScoreWatch {
            quality: self.clone(),
            models: HashMap::new(),
        })
    }
}

/// One scoring worker's Page-Hinkley detectors on the margins of the predictions it emits,
/// per model: no lock on the scoring path (a worker sees its partitions' series; a drift on
/// any worker is the model's).
pub struct MarginWatch {
    quality: Arc<Quality>,
    models: HashMap<String, (String, Detector)>,
}

impl MarginWatch {
    /// Feeds each prediction's margin (top score minus the next; a single score as is);
    /// returns the drifts found.
    pub fn observe(&mut self, preds: &[super::record::PredictionRecord]) -> Vec<DriftEventRecord> {
        let mut events = Vec::new();
        for p in preds {
            let (mut top, mut next) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
            for &s in &p.scores {
                if s > top {
                    (top, next) = (s, top);
                } else if s > next {
                    next = s;
                }
            }
            let margin = if p.scores.len() > 1 { top - next } else { top };
            if !margin.is_finite() {
                continue;
            }
            let q = &self.quality;
            // Looked up by &str first: no allocation per prediction once the model is known.
            if !self.models.contains_key(&p.model_name) {
                let fresh = (p.model_version.clone(), q.cfg.margin_detector());
                self.models.insert(p.model_name.clone(), fresh);
            }
            let (version, detector) = self.models.get_mut(&p.model_name).expect("inserted above");
            if *version != p.model_version {
                (*version, *detector) = (p.model_version.clone(), q.cfg.margin_detector());
            }
            if detector.update(margin) != Signal::Drift {
                continue;
            }
            let model = p.model_name.as_str();
            warn!(
                model,
                version = %p.model_version,
                observations = detector.seen(),
                "Drift detector on the served margins (label-free) fired."
            );
            events.push(DriftEventRecord {
                model_name: model.to_string(),
                model_version: p.model_version.clone(),
                detector: "margin",
                method: detector.kind(),
                signal: "drift",
                observations: detector.seen(),
                action: "alert",
                source_topic: p.source_topic.clone(),
                source_partition: p.source_partition,
                source_offset: p.source_offset,
                at_ms: chrono::Utc::now().timestamp_millis(),
            });
        }
        events
    }
}

/// A scoring worker's label-free detectors on the predictions it emits.
pub struct ServedWatch {
    margins: Option<MarginWatch>,
    scores: Option<ScoreWatch>,
}

impl ServedWatch {
    /// Feeds the predictions to each detector that is on; returns their events.
    pub fn observe(&mut self, preds: &[super::record::PredictionRecord]) -> Vec<DriftEventRecord> {
        let mut events = Vec::new();
        if let Some(m) = &mut self.margins {
            events.extend(m.observe(preds));
        }
        if let Some(s) = &mut self.scores {
            events.extend(s.observe(preds));
        }
        events
    }
}

/// One scoring worker's PSI tests on the class scores of the predictions it emits, per
/// model: no lock on the scoring path. The reference is the version's first window on this
/// worker, not the training set: LPBoost puts its training scores on the margin (+-rho),
/// which no served window resembles (`tests/live_quality.rs` measures PSI 3.8-4.4 on a
/// stationary stream against them). Deterministic for a given order of predictions.
pub struct ScoreWatch {
    quality: Arc<Quality>,
    models: HashMap<String, (String, PsiTest)>,
}

impl ScoreWatch {
    /// Feeds each prediction's class scores; returns the alarms (PSI above
    /// `psi_threshold` on some class) and sets the PSI gauge when a window closes.
    pub fn observe(&mut self, preds: &[super::record::PredictionRecord]) -> Vec<DriftEventRecord> {
        let cfg = &self.quality.cfg;
        let mut events = Vec::new();
        for p in preds {
            if p.scores.is_empty() || p.scores.iter().any(|s| !s.is_finite()) {
                continue;
            }
            // Looked up by &str first: no allocation per prediction once the model is known.
            if !self.models.contains_key(&p.model_name) {
                let fresh = (p.model_version.clone(), PsiTest::new(p.scores.len()));
                self.models.insert(p.model_name.clone(), fresh);
            }
            let (version, t) = self.models.get_mut(&p.model_name).expect("inserted above");
            if *version != p.model_version || t.classes() != p.scores.len() {
                (*version, *t) = (p.model_version.clone(), PsiTest::new(p.scores.len()));
            }
            let Some(psi) = t.push(&p.scores, cfg.score_window, cfg.score_bins) else {
                continue;
            };
            let model = p.model_name.as_str();
            self.quality
                .metrics
                .score_psi
                .with_label_values(&[model])
                .set(psi);
            if psi <= cfg.psi_threshold {
                continue;
            }
            let observations = t.seen();
            // Started over, as River's detectors after a drift: the next window is the
            // new reference.
            *t = PsiTest::new(p.scores.len());
            warn!(
                model,
                version = %p.model_version,
                psi,
                observations,
                "Distribution test on the served class scores (label-free, PSI) fired."
            );
            events.push(DriftEventRecord {
                model_name: model.to_string(),
                model_version: p.model_version.clone(),
                detector: "scores",
                method: "psi",
                signal: "drift",
                observations,
                action: "alert",
                source_topic: p.source_topic.clone(),
                source_partition: p.source_partition,
                source_offset: p.source_offset,
                at_ms: chrono::Utc::now().timestamp_millis(),
            });
        }
        events
    }
}
