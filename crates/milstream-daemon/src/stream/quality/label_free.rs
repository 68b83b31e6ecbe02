//! The label-free drift detectors on what the served models say. In: each prediction a
//! points or bags partition emits. Out: `drift_events` rows (alerts: a retrain needs
//! labels) and the PSI gauge. Owns: per partition and model, Page-Hinkley on the margins
//! ([`MarginWatch`]) and the PSI test on the class scores ([`ScoreWatch`]), held by the
//! worker that owns the partition: no lock on the scoring path.
//!
//! Why per partition, as the errors' detectors in `quality.rs`: a partition's offset order
//! is the only order of predictions that a restart or a rebalance reproduces. Each
//! `predictions` file carries the partition's detectors after its last prediction (its
//! checkpoint, [`ServedWatch::checkpoint`], in the file's metadata); a new owner restores
//! them from the newest durable file below the committed offset (`sink::served_checkpoint`),
//! and the replay emits, and so observes, only the predictions from that offset on. So the
//! detectors and their `drift_events` rows after a restart are an uninterrupted run's. The
//! cost: a detector sees its partition's share of the predictions, so in time it fires later
//! the more partitions a topic has (in predictions of its partition, not at all).

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tracing::warn;

use crate::config::OnDrift;
use crate::drift::{Detector, PsiTest, Signal};
use crate::stream::ingest::record::PredictionRecord;
use crate::stream::quality::{DriftEventRecord, Quality};

/// Per model: the version it watches and its detector on that version's predictions.
type PerModel<D> = HashMap<String, (String, D)>;

/// A partition's Page-Hinkley detectors on the margins of the predictions it emits, per
/// model.
pub struct MarginWatch {
    quality: Arc<Quality>,
    models: PerModel<Detector>,
}

impl MarginWatch {
    /// None when `drift.margin` (or detection) is off.
    pub fn new(quality: &Arc<Quality>) -> Option<Self> {
        let cfg = quality.config();
        (cfg.margin && cfg.on_drift != OnDrift::Off).then(|| MarginWatch {
            quality: quality.clone(),
            models: HashMap::new(),
        })
    }

    /// Feeds each prediction's margin (top score minus the next; a single score as is);
    /// returns the drifts found.
    pub fn observe(&mut self, preds: &[PredictionRecord]) -> Vec<DriftEventRecord> {
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
            let cfg = self.quality.config();
            // Looked up by &str first: no allocation per prediction once the model is known.
            if !self.models.contains_key(&p.model_name) {
                let fresh = (p.model_version.clone(), cfg.margin_detector());
                self.models.insert(p.model_name.clone(), fresh);
            }
            let (version, detector) = self.models.get_mut(&p.model_name).expect("inserted above");
            if *version != p.model_version {
                (*version, *detector) = (p.model_version.clone(), cfg.margin_detector());
            }
            if detector.update(margin) != Signal::Drift {
                continue;
            }
            let model = p.model_name.as_str();
            warn!(
                model,
                version = %p.model_version,
                partition = p.source_partition,
                observations = detector.seen(),
                "Drift detector on the served margins (label-free) fired."
            );
            events.push(event(p, "margin", detector.kind(), detector.seen()));
        }
        events
    }
}

/// A partition's PSI tests on the class scores of the predictions it emits, per model. The
/// reference is the version's first window on this partition, not the training set: LPBoost
/// puts its training scores on the margin (+-rho), which no served window resembles
/// (`tests/live_quality.rs` measures PSI 3.8-4.4 on a stationary stream against them).
pub struct ScoreWatch {
    quality: Arc<Quality>,
    models: PerModel<PsiTest>,
}

impl ScoreWatch {
    /// None when `drift.scores` (or detection) is off.
    pub fn new(quality: &Arc<Quality>) -> Option<Self> {
        let cfg = quality.config();
        (cfg.scores && cfg.on_drift != OnDrift::Off).then(|| ScoreWatch {
            quality: quality.clone(),
            models: HashMap::new(),
        })
    }

    /// Feeds each prediction's class scores; returns the alarms (PSI above
    /// `psi_threshold` on some class) and sets the PSI gauge when a window closes.
    pub fn observe(&mut self, preds: &[PredictionRecord]) -> Vec<DriftEventRecord> {
        let cfg = self.quality.config();
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
                .metrics()
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
                partition = p.source_partition,
                psi,
                observations,
                "Distribution test on the served class scores (label-free, PSI) fired."
            );
            events.push(event(p, "scores", "psi", observations));
        }
        events
    }
}

/// A label-free detector's drift on `p`'s model (an alert).
fn event(
    p: &PredictionRecord,
    detector: &'static str,
    method: &'static str,
    observations: u64,
) -> DriftEventRecord {
    DriftEventRecord {
        model_name: p.model_name.clone(),
        model_version: p.model_version.clone(),
        detector,
        method,
        signal: "drift",
        observations,
        action: "alert",
        source_topic: p.source_topic.clone(),
        source_partition: p.source_partition,
        source_offset: p.source_offset,
        at_ms: chrono::Utc::now().timestamp_millis(),
    }
}

/// A partition's label-free detectors, those that are on.
pub struct ServedWatch {
    margins: Option<MarginWatch>,
    scores: Option<ScoreWatch>,
}

/// What a checkpoint holds: each detector that was on, and the settings it ran with (a
/// restart with other settings starts that detector over rather than carry on a stream
/// measured by other rules).
#[derive(Serialize, Deserialize)]
struct Checkpoint {
    settings: String,
    margins: Option<PerModel<Detector>>,
    scores: Option<PerModel<PsiTest>>,
}

impl ServedWatch {
    /// A partition's label-free detectors, those that are on (None when none is).
    pub fn new(quality: &Arc<Quality>) -> Option<Self> {
        let (margins, scores) = (MarginWatch::new(quality), ScoreWatch::new(quality));
        (margins.is_some() || scores.is_some()).then_some(ServedWatch { margins, scores })
    }

    /// Feeds the predictions to each detector that is on; returns their events.
    pub fn observe(&mut self, preds: &[PredictionRecord]) -> Vec<DriftEventRecord> {
        let mut events = Vec::new();
        if let Some(m) = &mut self.margins {
            events.extend(m.observe(preds));
        }
        if let Some(s) = &mut self.scores {
            events.extend(s.observe(preds));
        }
        events
    }

    /// The settings a checkpoint is valid for.
    fn settings(&self) -> String {
        let q = self.margins.as_ref().map(|m| &m.quality);
        let cfg = q
            .or(self.scores.as_ref().map(|s| &s.quality))
            .map(|q| q.config());
        cfg.map_or_else(String::new, |c| {
            format!("{:?} {} {}", c.page_hinkley, c.score_window, c.score_bins)
        })
    }

    /// The detectors' state, for the metadata of the `predictions` file that ends with the
    /// last prediction they saw (JSON; floats round-trip exactly).
    pub fn checkpoint(&self) -> String {
        #[derive(Serialize)]
        struct Borrowed<'a> {
            settings: String,
            margins: Option<&'a PerModel<Detector>>,
            scores: Option<&'a PerModel<PsiTest>>,
        }
        serde_json::to_string(&Borrowed {
            settings: self.settings(),
            margins: self.margins.as_ref().map(|m| &m.models),
            scores: self.scores.as_ref().map(|s| &s.models),
        })
        .expect("detector state serializes")
    }

    /// Carries on from a checkpoint: each detector that is on takes its state from it when
    /// the checkpoint was made with the same settings. An error for a checkpoint that does
    /// not parse (the detectors then start over).
    pub fn restore(&mut self, checkpoint: &str) -> serde_json::Result<()> {
        let c: Checkpoint = serde_json::from_str(checkpoint)?;
        if c.settings != self.settings() {
            return Ok(());
        }
        if let (Some(m), Some(models)) = (&mut self.margins, c.margins) {
            m.models = models;
        }
        if let (Some(s), Some(models)) = (&mut self.scores, c.scores) {
            s.models = models;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DriftConfig;
    use crate::metrics::Metrics;

    fn predictions(n: i64) -> Vec<PredictionRecord> {
        (0..n)
            .map(|i| {
                let score = (i % 7) as f64 / 7.0;
                serde_json::from_value(serde_json::json!({
                    "key": "s", "kind": "window", "window_start_ms": null,
                    "window_end_ms": null, "label": "1", "classes": ["1", "2"],
                    "scores": [score, -score], "model_kind": "lpboost",
                    "model_name": "series", "model_version": "v1", "top": [],
                    "source_topic": "points", "source_partition": 0, "source_offset": i,
                    "first_offset": i, "emitted_at_ms": 0,
                }))
                .expect("a prediction row")
            })
            .collect()
    }

    /// A `milstream.served_state` checkpoint whose PSI counts are shorter than its reference's
    /// bins: restored as it was, the next prediction indexed out of bounds (psi.rs, `push`)
    /// and panicked the scoring worker, at every restart. Now the restore is an error (the
    /// caller logs and counts it) and the detectors start over; scoring goes on.
    #[test]
    fn a_served_checkpoint_with_short_counts_is_rejected_and_the_detectors_start_over() {
        let cfg = DriftConfig {
            score_window: 20,
            score_bins: 4,
            ..DriftConfig::default()
        };
        let quality = Quality::new(cfg, Metrics::new());
        let mut watch = ServedWatch::new(&quality).expect("detectors on");
        // The reference window, and no count yet in the next.
        watch.observe(&predictions(20));
        let good = watch.checkpoint();
        let short = good.replace("[0,0,0,0]", "[0]");
        assert_ne!(short, good, "the test must shorten the counts: {good}");

        let mut restored = ServedWatch::new(&quality).unwrap();
        restored.restore(&good).expect("a good checkpoint restores");
        restored.observe(&predictions(30));
        let mut fresh = ServedWatch::new(&quality).unwrap();
        let e = fresh
            .restore(&short)
            .expect_err("short counts are rejected");
        assert!(e.to_string().contains("counts"), "{e}");
        // The detectors it keeps are fresh ones: predictions go through without a panic.
        fresh.observe(&predictions(60));
        assert_eq!(fresh.checkpoint(), {
            let mut w = ServedWatch::new(&quality).unwrap();
            w.observe(&predictions(60));
            w.checkpoint()
        });
    }
}
