//! Scheduled retraining: on a schedule and/or after N new labeled examples, read the training
//! store, fit a candidate on all but the newest examples, compare it with the serving model
//! (the champion) on those newest examples, and promote it (registry + atomic swap) unless it
//! is worse by more than the tolerance. Runs on its own thread: ingestion never waits on it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tracing::{info, warn};

use super::registry::{ModelCard, Registry};
use super::source::Shared;
use super::training::{self, Example};
use super::window::ScoringModel;
use crate::config::parse_duration_ms;
use crate::mil::{FitParams, Model};

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RunOutcome {
    Promoted {
        version: String,
        accuracy: f64,
        champion: Option<f64>,
    },
    Rejected {
        accuracy: f64,
        champion: f64,
    },
    Failed(String),
}

/// The trainer thread; stops (after a run in progress) when dropped or stopped.
pub struct TrainerHandle {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl TrainerHandle {
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts the trainer when training is on and a schedule or an example count is set.
pub fn spawn(shared: Arc<Shared>) -> anyhow::Result<Option<TrainerHandle>> {
    let cfg = &shared.cfg.training;
    let every = parse_duration_ms(&cfg.every).map_err(anyhow::Error::msg)?;
    if shared.training.is_none() || (every.is_none() && cfg.after_examples == 0) {
        return Ok(None);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("milstream-trainer".into())
            .spawn(move || trainer_loop(shared, every.map(Duration::from_millis), stop))?
    };
    Ok(Some(TrainerHandle {
        stop,
        thread: Some(thread),
    }))
}

fn trainer_loop(shared: Arc<Shared>, every: Option<Duration>, stop: Arc<AtomicBool>) {
    let t = shared.training.clone().expect("spawned with training on");
    let after = shared.cfg.training.after_examples;
    let mut last_run = Instant::now();
    let mut seen = t.examples_durable.load(Ordering::Relaxed);
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
        let durable = t.examples_durable.load(Ordering::Relaxed);
        let due = every.is_some_and(|e| last_run.elapsed() >= e)
            || (after > 0 && durable.saturating_sub(seen) >= after);
        if !due {
            continue;
        }
        last_run = Instant::now();
        seen = durable;
        let outcome = run_once(&shared);
        record(&shared, &outcome);
    }
}

fn record(shared: &Shared, outcome: &RunOutcome) {
    let label = match outcome {
        RunOutcome::Promoted { .. } => "promoted",
        RunOutcome::Rejected { .. } => "rejected",
        RunOutcome::Failed(_) => "failed",
    };
    shared
        .metrics
        .training_runs
        .with_label_values(&[label])
        .inc();
    match outcome {
        RunOutcome::Promoted {
            version,
            accuracy,
            champion,
        } => {
            shared.metrics.model_holdout_accuracy.set(*accuracy);
            info!(version, accuracy, champion = ?champion, "retrained model promoted");
        }
        RunOutcome::Rejected { accuracy, champion } => {
            shared.metrics.model_holdout_accuracy.set(*champion);
            warn!(
                accuracy,
                champion,
                tolerance = shared.cfg.training.tolerance,
                "candidate rejected: worse than the champion on the newest examples by more than the tolerance"
            );
        }
        RunOutcome::Failed(why) => warn!(why, "training run failed; the champion keeps scoring"),
    }
}

fn accuracy(model: &Model, examples: &[Example]) -> f64 {
    let hits = examples
        .iter()
        .filter(|e| {
            e.sample()
                .and_then(|s| model.predict(&s).ok())
                .is_some_and(|p| p.label == e.label)
        })
        .count();
    hits as f64 / examples.len().max(1) as f64
}

/// One training run against the store; promotes into `shared` on success.
pub fn run_once(shared: &Shared) -> RunOutcome {
    let cfg = &shared.cfg.training;
    let Some(t) = &shared.training else {
        return RunOutcome::Failed("training is off".into());
    };
    let now = chrono::Utc::now().timestamp_millis();
    let not_before = parse_duration_ms(&cfg.max_age)
        .ok()
        .flatten()
        .map(|age| now - age as i64);
    if let Some(nb) = not_before {
        let removed = training::apply_retention(&t.dir, nb);
        if removed > 0 {
            info!(
                removed,
                "training store: files past training.max_age removed"
            );
        }
    }
    let examples = match training::load_store(&t.dir, cfg.max_examples, not_before) {
        Ok(e) => e,
        Err(e) => return RunOutcome::Failed(format!("reading the training store: {e}")),
    };
    // The series model learns from segments; bag examples wait for a bag trainer.
    let examples: Vec<Example> = examples
        .into_iter()
        .filter(|e| e.segment.is_some())
        .collect();
    shared.metrics.training_examples.set(examples.len() as i64);
    let champion = shared.series_model.load_full();
    match train_candidate(
        &examples,
        cfg.holdout,
        cfg.min_examples,
        Some(&champion.model),
    ) {
        Err(why) => RunOutcome::Failed(why),
        Ok(c) => {
            if let Err(e) =
                crate::mil::incremental::WindowScorer::new(&c.model, shared.cfg.window.points)
            {
                return RunOutcome::Failed(format!("the candidate does not fit the window: {e}"));
            }
            if c.champion_accuracy
                .is_some_and(|ch| c.accuracy + cfg.tolerance < ch)
            {
                return RunOutcome::Rejected {
                    accuracy: c.accuracy,
                    champion: c.champion_accuracy.unwrap_or(0.0),
                };
            }
            let mut card = ModelCard::describe(&c.model, "trainer");
            card.per_class = c.per_class.clone();
            card.holdout_accuracy = Some(c.accuracy);
            card.champion_holdout_accuracy = c.champion_accuracy;
            card.n_holdout = c.n_holdout;
            let version = match shared.cfg.registry_dir() {
                Some(dir) => match Registry::open(&dir).and_then(|r| r.publish(&c.model, &card)) {
                    Ok(v) => v,
                    Err(e) => {
                        return RunOutcome::Failed(format!("publishing to the registry: {e}"))
                    }
                },
                None => format!("trained-{}", super::short_hash(&c.model.to_json())),
            };
            if let Err(e) = super::models_topic::publish(shared, &version, &c.model, &card) {
                // Promoted here all the same; scorers pick up the next published version.
                warn!(%e, version, "publishing to the models topic failed");
            }
            promote(shared, c.model, version.clone());
            RunOutcome::Promoted {
                version,
                accuracy: c.accuracy,
                champion: c.champion_accuracy,
            }
        }
    }
}

/// Swaps the serving model; series rebuild their scorers from their kept points at their
/// next window, so no window is dropped.
pub fn promote(shared: &Shared, model: Model, version: String) {
    let old = shared.series_model.load_full();
    shared.series_model.store(Arc::new(ScoringModel {
        model,
        version,
        generation: old.generation + 1,
    }));
    shared.metrics.model_swaps.inc();
}

/// A fitted candidate and how it and the champion did on the held-out newest examples.
pub struct Candidate {
    pub model: Model,
    pub accuracy: f64,
    pub champion_accuracy: Option<f64>,
    pub n_holdout: usize,
    pub per_class: BTreeMap<String, usize>,
}

/// Fits a candidate on all but the newest `holdout` fraction of `examples` (oldest first),
/// with the champion's hyperparameters when there is one, and scores both on the newest.
pub fn train_candidate(
    examples: &[Example],
    holdout: f64,
    min_examples: usize,
    champion: Option<&Model>,
) -> Result<Candidate, String> {
    let n = examples.len();
    if n < min_examples {
        return Err(format!(
            "{n} labeled examples in the store, fewer than training.min_examples = {min_examples}"
        ));
    }
    let n_holdout = ((n as f64 * holdout).round() as usize).min(n - 2);
    let (train, test) = examples.split_at(n - n_holdout);
    let mut per_class: BTreeMap<String, usize> = BTreeMap::new();
    for e in train {
        *per_class.entry(e.label.clone()).or_default() += 1;
    }
    if per_class.len() < 2 {
        return Err(format!(
            "the training slice has one class only ({:?})",
            per_class.keys().collect::<Vec<_>>()
        ));
    }
    let ds = training::to_dataset(train);
    let params = match champion {
        Some(Model::LpboostShapelet(m)) => m.params.clone(),
        None => FitParams::default(),
    };
    let model = Model::fit(&ds, &params).map_err(|e| format!("fitting the candidate: {e}"))?;
    let (accuracy, champion_accuracy) = if test.is_empty() {
        (1.0, None)
    } else {
        (accuracy(&model, test), champion.map(|c| accuracy(c, test)))
    };
    Ok(Candidate {
        model,
        accuracy,
        champion_accuracy,
        n_holdout,
        per_class,
    })
}
