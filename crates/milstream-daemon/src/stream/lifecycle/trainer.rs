//! Scheduled retraining: on a schedule and/or after N new labeled examples, read the training
//! store, fit a candidate on all but the newest examples, compare it with the serving model
//! (the champion) on those newest examples, and promote it (registry + atomic swap) unless it
//! is worse by more than the tolerance. Each model learns from its own examples (the series
//! model from labeled segments, the bag model from labeled bags), with its own registry and
//! name on the models topic. Runs on its own thread: ingestion never waits on it.
//!
//! On the errors' detectors (`drift.on_drift = "retrain"`): a warning fits a candidate on the
//! examples labeled since the warning's change point and holds it (not promoted); a cleared
//! warning drops it; a drift challenges the champion with it on the examples labeled since
//! that it did not train on, by the same rule, and when it loses (or none is held) retrains
//! at once from the change point, as a scheduled run but on the new concept's examples only;
//! when that loses too, the champion keeps serving and the trainer alerts.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::{info, warn};

use crate::config::ModelInput;
use crate::config::{parse_duration_ms, Config};
use crate::metrics::Metrics;
use crate::mil::{FitParams, Model};
use crate::stream::lifecycle::registry::{model_hash, ModelCard, Registry};
use crate::stream::lifecycle::training::{self, TrainingRuntime};
use crate::stream::output::arrow::examples::Example;
use crate::stream::quality::{Quality, TrainerRequest};
use crate::stream::score::models::{Models, ServedModel};

/// What the trainer gets from the pipeline: its settings, the store it reads, and the
/// serving models it compares with and swaps.
pub struct TrainerEnv {
    pub cfg: Config,
    pub metrics: Arc<Metrics>,
    /// The models it retrains, each from the examples whose id routes to it, on its own
    /// schedule (`[training]` with the model's own settings over it).
    pub models: Arc<Models>,
    pub store: Arc<TrainingRuntime>,
    /// The cluster's bootstrap list, for publishing to the models topic.
    pub bootstrap: String,
    /// Retrain requests of models whose errors drifted (`drift.on_drift = "retrain"`).
    pub quality: Option<Arc<Quality>>,
}

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
    /// `reason` is one of [`crate::metrics::TRAINING_FAILURE_REASONS`].
    Failed {
        reason: &'static str,
        detail: String,
    },
}

fn failed(reason: &'static str, detail: impl Into<String>) -> RunOutcome {
    RunOutcome::Failed {
        reason,
        detail: detail.into(),
    }
}

/// The trainer thread; stops (after a run in progress) when stopped.
pub type TrainerHandle = super::StoppableThread;

/// Starts the trainer when a schedule or an example count is set.
pub fn spawn(env: TrainerEnv) -> anyhow::Result<Option<TrainerHandle>> {
    let mut schedules = Vec::new();
    for m in &env.models.all {
        let cfg = &m.spec.training;
        let every = parse_duration_ms(&cfg.every).map_err(anyhow::Error::msg)?;
        schedules.push(Schedule {
            every: every.map(Duration::from_millis),
            after: cfg.after_examples,
            last_run: Instant::now(),
            seen: 0,
            drift: None,
            warning: None,
            held: None,
        });
    }
    let on_drift = env.quality.as_ref().is_some_and(|q| q.retrains_on_drift());
    if !on_drift && schedules.iter().all(|s| s.every.is_none() && s.after == 0) {
        return Ok(None);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("milstream-trainer".into())
            .spawn(move || trainer_loop(&env, schedules, stop))?
    };
    Ok(Some(TrainerHandle::new(stop, thread)))
}

/// When one model is due: every `every`, and/or after `after` new durable examples of its
/// own (another model's never count).
struct Schedule {
    every: Option<Duration>,
    after: u64,
    last_run: Instant,
    seen: u64,
    /// A retrain on drift not done yet: from which label time it learns, and the durable
    /// example count at its last attempt (it waits for new examples to try again).
    drift: Option<(i64, Option<u64>)>,
    /// A warning holds: from which label time its candidate learns, and the durable example
    /// count at its last failed fit (too few examples: it waits for new ones).
    warning: Option<(i64, Option<u64>)>,
    /// The candidate fitted on the warning, held for the drift.
    held: Option<Candidate>,
}

impl Schedule {
    fn drop_held(&mut self, env: &TrainerEnv, model: &str, why: &str) {
        if self.held.take().is_some() {
            held_outcome(env, model, "dropped", false);
            info!(model, why, "held candidate dropped");
        }
    }
}

/// Counts a held candidate's fate (`milstream_warning_candidates_total`) and shows whether
/// one is held (`milstream_candidate_held`).
fn held_outcome(env: &TrainerEnv, model: &str, outcome: &str, held: bool) {
    env.metrics
        .warning_candidates
        .with_label_values(&[model, outcome])
        .inc();
    env.metrics
        .candidate_held
        .with_label_values(&[model])
        .set(i64::from(held));
}

fn trainer_loop(env: &TrainerEnv, mut schedules: Vec<Schedule>, stop: Arc<AtomicBool>) {
    let t = &env.store;
    for (m, s) in env.models.all.iter().zip(&mut schedules) {
        s.seen = t.examples_durable.of(&m.spec.name);
    }
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
        for (m, s) in env.models.all.iter().zip(&mut schedules) {
            tend(env, m, s, &stop);
        }
    }
}

/// One model at one of the trainer's checks: its detectors' requests, the warning's
/// candidate, the drift's answer, and its schedule.
fn tend(env: &TrainerEnv, m: &ServedModel, s: &mut Schedule, stop: &AtomicBool) {
    let t = &env.store;
    let name = m.spec.name.as_str();
    let durable = t.examples_durable.of(name);
    apply_requests(env, name, s);
    if stop.load(Ordering::SeqCst) {
        return;
    }
    let drift_due = s
        .drift
        .is_some_and(|(_, tried)| tried.is_none_or(|n| durable > n));
    if drift_due {
        if let Some(c) = s.held.take() {
            let since = s.drift.map_or(i64::MIN, |(since, _)| since);
            let started = Instant::now();
            let outcome = challenge(env, m, c, since);
            env.metrics
                .training_seconds
                .observe(started.elapsed().as_secs_f64());
            let promoted = matches!(outcome, RunOutcome::Promoted { .. });
            let label = if promoted { "promoted" } else { "rejected" };
            held_outcome(env, name, label, false);
            info!(
                model = name,
                outcome = label,
                "held candidate challenged at the drift"
            );
            record(env, m, &outcome);
            if promoted {
                (s.drift, s.warning) = (None, None);
                (s.last_run, s.seen) = (Instant::now(), durable);
                return;
            }
        }
    } else if s.drift.is_none() && s.held.is_none() {
        // A warning holds: fit its candidate in the background of the champion.
        if let Some((since, _)) = s
            .warning
            .filter(|(_, tried)| tried.is_none_or(|n| durable > n))
        {
            let started = Instant::now();
            match fit(env, m, Some(since)) {
                Ok(c) => {
                    info!(
                        model = name,
                        examples = c.per_class.values().sum::<usize>(),
                        holdout_accuracy = c.accuracy,
                        champion = ?c.champion_accuracy,
                        "candidate fitted on the warning, held until a drift"
                    );
                    s.held = Some(c);
                    held_outcome(env, name, "fitted", true);
                }
                Err(outcome) => {
                    // Too few of the new concept's examples yet: wait for more.
                    if let RunOutcome::Failed { reason, detail } = &outcome {
                        info!(
                            model = name,
                            reason, detail, "no candidate on the warning yet"
                        );
                    }
                    s.warning = Some((since, Some(durable)));
                }
            }
            env.metrics
                .training_seconds
                .observe(started.elapsed().as_secs_f64());
        }
    }
    let due = drift_due
        || s.every.is_some_and(|e| s.last_run.elapsed() >= e)
        || (s.after > 0 && durable.saturating_sub(s.seen) >= s.after);
    if !due || stop.load(Ordering::SeqCst) {
        return;
    }
    s.last_run = Instant::now();
    s.seen = durable;
    let started = Instant::now();
    let since = s.drift.map(|(since, _)| since);
    let outcome = run_since(env, m, since);
    // Too few of the new concept's examples yet: try again when more are durable.
    s.drift = match (&outcome, since) {
        (RunOutcome::Failed { reason, .. }, Some(since))
            if matches!(*reason, "too_few_examples" | "one_class") =>
        {
            Some((since, Some(durable)))
        }
        _ => None,
    };
    if since.is_some() && s.drift.is_none() {
        // The drift is answered: its warning with it.
        s.warning = None;
        s.drop_held(env, name, "the drift was answered");
    }
    env.metrics
        .training_seconds
        .observe(started.elapsed().as_secs_f64());
    record(env, m, &outcome);
    if since.is_some() && !matches!(outcome, RunOutcome::Promoted { .. }) {
        if matches!(outcome, RunOutcome::Rejected { .. }) {
            env.metrics
                .drift_no_better_candidate
                .with_label_values(&[name])
                .inc();
        }
        if s.drift.is_none() {
            warn!(
                model = name,
                "drift detected, no better candidate: the champion keeps serving"
            );
        }
    }
}

/// The model's detectors' requests since the last check, into its schedule.
fn apply_requests(env: &TrainerEnv, name: &str, s: &mut Schedule) {
    let requests = env.quality.as_ref().map(|q| q.take_requests(name));
    for r in requests.into_iter().flatten() {
        match r {
            // A new warning (another label partition's, or after a clear) starts
            // its candidate over, as River's adaptive random forest does.
            TrainerRequest::Warning { since_ms } => {
                s.drop_held(env, name, "a new warning");
                s.warning = Some((since_ms, None));
            }
            TrainerRequest::Cleared => {
                s.drop_held(env, name, "the warning cleared");
                s.warning = None;
            }
            // A drift of its errors makes a model due at once, trained on the
            // examples from the detector's warning on (the new concept's).
            TrainerRequest::Drift { since_ms } => s.drift = Some((since_ms, None)),
        }
    }
}

fn record(env: &TrainerEnv, served: &ServedModel, outcome: &RunOutcome) {
    let model = served.serving.name.as_str();
    let label = match outcome {
        RunOutcome::Promoted { .. } => "promoted",
        RunOutcome::Rejected { .. } => "rejected",
        RunOutcome::Failed { .. } => "failed",
    };
    env.metrics
        .training_runs
        .with_label_values(&[model, label])
        .inc();
    match outcome {
        RunOutcome::Promoted {
            version,
            accuracy,
            champion,
        } => {
            env.metrics
                .model_holdout_accuracy
                .with_label_values(&[model])
                .set(*accuracy);
            info!(model, version, accuracy, champion = ?champion, "retrained model promoted");
        }
        RunOutcome::Rejected { accuracy, champion } => {
            env.metrics
                .model_holdout_accuracy
                .with_label_values(&[model])
                .set(*champion);
            warn!(
                model,
                accuracy,
                champion,
                tolerance = served.spec.training.tolerance,
                "candidate rejected: worse than the champion on the newest examples by more than the tolerance"
            );
        }
        RunOutcome::Failed { reason, detail } => {
            env.metrics
                .training_failures
                .with_label_values(&[model, reason])
                .inc();
            warn!(
                model,
                reason, detail, "training run failed; the champion keeps scoring"
            )
        }
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

/// One training run of `trained` against the store; promotes into its serving model on
/// success.
pub fn run_once(env: &TrainerEnv, trained: &ServedModel) -> RunOutcome {
    run_since(env, trained, None)
}

/// [`run_once`] on the examples labeled at or after `since_ms` only (a retrain on drift).
fn run_since(env: &TrainerEnv, trained: &ServedModel, since_ms: Option<i64>) -> RunOutcome {
    match fit(env, trained, since_ms) {
        Ok(c) => promote(env, trained, c),
        Err(outcome) => outcome,
    }
}

/// The examples of `trained` in the store labeled at or after `since_ms` (and within
/// `training.max_age`), oldest first, after the store's retention.
fn load_examples(
    env: &TrainerEnv,
    trained: &ServedModel,
    since_ms: Option<i64>,
) -> Result<Vec<Example>, RunOutcome> {
    let cfg = &trained.spec.training;
    let t = &env.store;
    let now = chrono::Utc::now().timestamp_millis();
    let not_before = parse_duration_ms(&cfg.max_age)
        .ok()
        .flatten()
        .map(|age| now - age as i64);
    if let Some(nb) = not_before {
        let removed = training::apply_retention(&t.store, nb);
        if removed > 0 {
            info!(
                removed,
                "training store: files past training.max_age removed"
            );
        }
    }
    // A model learns from its own examples only: those the label joins attributed to it
    // (older rows without a model go by the id routes). Another model's labels share the
    // store's files but never its training set.
    let own = |e: &Example| {
        let input = match e.segment {
            Some(_) => ModelInput::Series,
            None => ModelInput::Bags,
        };
        env.models
            .owns_example(&trained.spec.name, input, &e.key, e.model.as_deref())
    };
    let newer = not_before.max(since_ms);
    let examples = training::load_store_where(&t.store, cfg.max_examples, newer, &own)
        .map_err(|e| failed("store", format!("reading the training store: {e}")))?;
    // Retention by count: files holding only this model's examples, all older than the
    // oldest kept one, go.
    if examples.len() >= cfg.max_examples {
        if let Some(oldest) = examples.first() {
            training::apply_retention_where(&t.store, oldest.labeled_at_ms, &own);
        }
    }
    env.metrics
        .training_examples
        .with_label_values(&[&trained.serving.name])
        .set(examples.len() as i64);
    Ok(examples)
}

/// Fits a candidate on `trained`'s examples labeled since `since_ms` (all but the newest
/// `training.holdout`) and scores it and the champion on the newest; promotes nothing.
fn fit(
    env: &TrainerEnv,
    trained: &ServedModel,
    since_ms: Option<i64>,
) -> Result<Candidate, RunOutcome> {
    let cfg = &trained.spec.training;
    let examples = load_examples(env, trained, since_ms)?;
    let champion = trained.serving.load_full();
    let search = cfg.search.then(|| {
        parse_duration_ms(&cfg.search_budget)
            .ok()
            .flatten()
            .map_or(Duration::from_secs(300), Duration::from_millis)
    });
    train_candidate(
        &examples,
        cfg.holdout,
        cfg.min_examples,
        Some(&champion.model),
        trained.spec.params.as_ref(),
        search,
    )
    .map_err(|(reason, detail)| failed(reason, detail))
}

/// A candidate held since a warning, at the drift: it and the current champion are scored
/// on the examples labeled since `since_ms` that the candidate did not train on (its held-out
/// newest and every one labeled since it was fitted), then [`promote`]'s rule decides.
fn challenge(env: &TrainerEnv, trained: &ServedModel, c: Candidate, since_ms: i64) -> RunOutcome {
    let examples = match load_examples(env, trained, Some(since_ms)) {
        Ok(e) => e,
        Err(outcome) => return outcome,
    };
    let unseen: Vec<Example> = examples
        .into_iter()
        .filter(|e| e.labeled_at_ms > c.trained_through_ms)
        .collect();
    let champion = trained.serving.load_full();
    let c = if unseen.is_empty() {
        c
    } else {
        Candidate {
            accuracy: accuracy(&c.model, &unseen),
            champion_accuracy: Some(accuracy(&champion.model, &unseen)),
            n_holdout: unseen.len(),
            ..c
        }
    };
    promote(env, trained, c)
}

/// The champion/challenger rule: promotes `c` (registry, models topic, atomic swap) unless
/// it does not fit the window or is worse than the champion on the held-out newest examples
/// by more than `training.tolerance`.
fn promote(env: &TrainerEnv, trained: &ServedModel, c: Candidate) -> RunOutcome {
    let cfg = &trained.spec.training;
    let name = trained.serving.name.as_str();
    if let Err(e) = trained.serving.accepts(&c.model, env.cfg.window.points) {
        return failed("window", format!("the candidate cannot serve here: {e}"));
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
    card.cv_accuracy = c.cv_accuracy;
    let version = match &trained.spec.registry_dir {
        Some(dir) => match Registry::open_with(dir, &env.cfg.object_store.0)
            .and_then(|r| r.publish(&c.model, &card))
        {
            Ok(v) => v,
            Err(e) => return failed("registry", format!("publishing to the registry: {e}")),
        },
        None => format!("trained-{}", model_hash(&c.model)),
    };
    if let Err(e) = crate::stream::lifecycle::models_topic::publish(
        &env.cfg,
        &env.bootstrap,
        name,
        &version,
        &c.model,
        &card,
    ) {
        // Promoted here all the same; scorers pick up the next published version.
        warn!(%e, version, "publishing to the models topic failed");
    }
    trained.serving.promote(c.model, version.clone());
    RunOutcome::Promoted {
        version,
        accuracy: c.accuracy,
        champion: c.champion_accuracy,
    }
}

/// A fitted candidate and how it and the champion did on the held-out newest examples.
pub struct Candidate {
    pub model: Model,
    pub accuracy: f64,
    pub champion_accuracy: Option<f64>,
    pub n_holdout: usize,
    pub per_class: BTreeMap<String, usize>,
    /// Inner cross-validated accuracy of the chosen grid point, when searched.
    pub cv_accuracy: Option<f64>,
    /// The label time of the newest example it trained on.
    pub trained_through_ms: i64,
}

/// Fits a candidate on all but the newest `holdout` fraction of `examples` (oldest first),
/// with the model's configured parameters (`[models.params]`), else the champion's when there
/// is one (or the best of the default grid around them by cross-validation within `search`'s
/// budget), and scores both on the newest.
pub fn train_candidate(
    examples: &[Example],
    holdout: f64,
    min_examples: usize,
    champion: Option<&Model>,
    configured: Option<&FitParams>,
    search: Option<Duration>,
) -> Result<Candidate, (&'static str, String)> {
    let n = examples.len();
    if n < min_examples {
        return Err((
            "too_few_examples",
            format!(
                "{n} labeled examples in the store, fewer than training.min_examples = {min_examples}"
            ),
        ));
    }
    let n_holdout = ((n as f64 * holdout).round() as usize).min(n - 2);
    let (train, test) = examples.split_at(n - n_holdout);
    let mut per_class: BTreeMap<String, usize> = BTreeMap::new();
    for e in train {
        *per_class.entry(e.label.clone()).or_default() += 1;
    }
    if per_class.len() < 2 {
        return Err((
            "one_class",
            format!(
                "the training slice has one class only ({:?})",
                per_class.keys().collect::<Vec<_>>()
            ),
        ));
    }
    let mut ds = training::to_dataset(train);
    // A retrain keeps the champion's channel names (the stream carries none).
    ds.channels = champion.map_or_else(Vec::new, |m| m.channel_names().to_vec());
    let mut params = match (configured, champion) {
        (Some(p), _) => p.clone(),
        (None, Some(m)) => m.params().clone(),
        (None, None) => FitParams::default(),
    };
    let mut cv_accuracy = None;
    if let Some(budget) = search {
        let (p, acc) = search_params(&ds, &params, budget).map_err(|e| ("fit", e))?;
        params = p;
        cv_accuracy = Some(acc);
    }
    let mut model =
        Model::fit(&ds, &params).map_err(|e| ("fit", format!("fitting the candidate: {e}")))?;
    crate::mil::findings::record_shown_shares(&mut model, &ds);
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
        cv_accuracy,
        trained_through_ms: train.last().map_or(i64::MIN, |e| e.labeled_at_ms),
    })
}

/// The default grid's best point by stratified cross-validation, evaluated a few points at a
/// time until the budget is spent (at least one batch). Ties go to the earlier, simpler point.
fn search_params(
    ds: &crate::mil::Dataset,
    base: &FitParams,
    budget: Duration,
) -> Result<(FitParams, f64), String> {
    use crate::mil::select::{best_index, cross_validate_grid, default_grid};
    let input = ds.check_trainable().map_err(|e| e.to_string())?;
    let grid = default_grid(base, input);
    let mut per_class: BTreeMap<&str, usize> = BTreeMap::new();
    for l in &ds.labels {
        *per_class.entry(l).or_default() += 1;
    }
    let folds = 5.min(per_class.values().copied().min().unwrap_or(0));
    if folds < 2 {
        return Err("too few examples per class to cross-validate".into());
    }
    let started = Instant::now();
    let mut estimates = Vec::new();
    for chunk in grid.chunks(4) {
        if !estimates.is_empty() && started.elapsed() >= budget {
            break;
        }
        estimates
            .extend(cross_validate_grid(ds, chunk, folds, 0, &|| {}).map_err(|e| e.to_string())?);
    }
    let best = best_index(&estimates);
    info!(
        evaluated = estimates.len(),
        of = grid.len(),
        accuracy = estimates[best].mean,
        "training search"
    );
    Ok((grid[best].clone(), estimates[best].mean))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mil::Sample;

    fn examples(n: usize, one_class: bool) -> Vec<Example> {
        let data = crate::stream::embedded::gunpoint_train();
        (0..n)
            .map(|i| {
                let Sample::Series(v) = &data.samples[i] else {
                    unreachable!()
                };
                Example {
                    key: format!("s{i}"),
                    segment: Some((i as i64 * 1500, i as i64 * 1500 + 1490)),
                    label: if one_class {
                        "1".into()
                    } else {
                        data.labels[i].clone()
                    },
                    dim: 1,
                    values: v.clone(),
                    source_topic: "labels".into(),
                    source_partition: 0,
                    source_offset: i as i64,
                    labeled_at_ms: i as i64,
                    model: Some("series".into()),
                }
            })
            .collect()
    }

    #[test]
    fn runs_fail_on_too_few_examples_or_one_class() {
        let few = train_candidate(&examples(5, false), 0.2, 10, None, None, None);
        assert_eq!(few.err().unwrap().0, "too_few_examples");
        let one = train_candidate(&examples(20, true), 0.2, 10, None, None, None);
        assert_eq!(one.err().unwrap().0, "one_class");
    }

    #[test]
    fn a_retrain_keeps_the_champions_kind() {
        let champion = train_candidate(&examples(30, false), 0.2, 10, None, None, None)
            .expect("trains")
            .model;
        let miordm = Model::fit(
            &training::to_dataset(&examples(30, false)),
            &FitParams {
                kind: crate::mil::model::ModelKind::Miordm,
                ..champion.params().clone()
            },
        )
        .unwrap();
        let c = train_candidate(&examples(30, false), 0.2, 10, Some(&miordm), None, None)
            .expect("trains");
        assert_eq!(c.model.kind_name(), "miordm");
        assert_eq!(c.model.params(), miordm.params());
    }

    #[test]
    fn configured_params_win_over_the_champions() {
        let champion = train_candidate(&examples(30, false), 0.2, 10, None, None, None)
            .expect("trains")
            .model;
        let own = champion
            .params()
            .overlaid(&serde_json::json!({"nu": 0.37, "seed": 99}))
            .unwrap();
        assert_ne!(champion.params(), &own);
        let c = train_candidate(
            &examples(30, false),
            0.2,
            10,
            Some(&champion),
            Some(&own),
            None,
        )
        .expect("trains");
        assert_eq!(c.model.params(), &own);
        assert_eq!((c.model.params().nu, c.model.params().seed), (0.37, 99));
    }

    #[test]
    fn a_searched_candidate_reports_its_cross_validated_accuracy() {
        let c = train_candidate(
            &examples(30, false),
            0.2,
            10,
            None,
            None,
            Some(Duration::ZERO),
        )
        .expect("trains");
        assert_eq!(c.n_holdout, 6);
        assert_eq!(c.per_class.values().sum::<usize>(), 24);
        let cv = c.cv_accuracy.expect("searched");
        assert!((0.0..=1.0).contains(&cv));
        assert!(c.accuracy >= 0.5, "held-out accuracy {}", c.accuracy);
    }

    /// GunPoint training series from `from`, labeled by `label` (index, truth), label times
    /// `base + i`.
    fn labeled(
        from: usize,
        n: usize,
        base: i64,
        label: impl Fn(usize, &str) -> String,
    ) -> Vec<Example> {
        let mut v = examples(from + n, false).split_off(from);
        for (k, e) in v.iter_mut().enumerate() {
            let i = from + k;
            e.label = label(i, &e.label);
            e.labeled_at_ms = base + i as i64;
            e.key = format!("s{i}");
        }
        v
    }

    /// A drift whose held candidate and retrain both lose keeps the champion serving and
    /// moves `milstream_drift_no_better_candidate_total` (what the
    /// `MilstreamDriftNoBetterCandidate` alert watches). The store (a real one, in a
    /// temporary folder) holds 34 examples with labels drawn at random, then 16 truly
    /// labeled ones (the newest, on which the champion is right): the candidate held since
    /// the warning learned the noise, and so does the retrain at the drift.
    #[test]
    fn a_drift_with_no_better_candidate_keeps_the_champion_and_alerts() {
        use crate::stream::join::history::{BagCache, SeriesHistory};
        use crate::stream::output::store::Store;
        use crate::stream::score::models::{specs, Models};
        use crate::stream::score::window::ScoringModel;

        let dir = std::env::temp_dir().join(format!("milstream-nobetter-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut cfg = Config::default();
        cfg.kafka.models_topic = String::new();
        cfg.model.registry_dir = Some(dir.join("registry"));
        cfg.training.min_examples = 12;
        cfg.training.holdout = 0.25;
        cfg.training.tolerance = 0.0;
        let metrics = Metrics::new();
        let truth = examples(30, false);
        let champion = train_candidate(&truth, 0.0, 10, None, None, None)
            .expect("trains")
            .model;
        let spec = specs(&cfg).remove(0);
        let served = Arc::new(ScoringModel {
            model: champion.clone(),
            version: "v1".into(),
            generation: 0,
        });
        let models = Arc::new(Models::new(vec![(spec, served)], &metrics));
        let store = Store::Local(dir.join("training"));
        store.ensure_root().unwrap();
        let base = chrono::Utc::now().timestamp_millis() - 60_000;
        let noise = |i: usize, _: &str| {
            if (i * 7919).is_multiple_of(2) {
                "1"
            } else {
                "2"
            }
            .to_string()
        };
        let mut rows = labeled(0, 34, base, noise);
        rows.extend(labeled(34, 16, base, |_, l| l.to_string()));
        crate::stream::output::sink::parquet::write_parquet(
            &store,
            "p0/examples.parquet",
            &crate::stream::output::arrow::examples::example_batch(&rows),
            &[],
        )
        .unwrap();
        let env = TrainerEnv {
            cfg: cfg.clone(),
            metrics: metrics.clone(),
            models: models.clone(),
            store: Arc::new(TrainingRuntime {
                history: SeriesHistory::new(1_000, 1_000),
                bags: BagCache::new(16),
                store: Arc::new(store),
                examples_durable: Default::default(),
                holds: Default::default(),
            }),
            bootstrap: String::new(),
            quality: None,
        };
        // The candidate fitted on the warning: on the first 24 noisy examples.
        let held =
            train_candidate(&rows[..24], 0.25, 12, Some(&champion), None, None).expect("trains");
        let mut s = Schedule {
            every: None,
            after: 0,
            last_run: Instant::now(),
            seen: 0,
            drift: Some((base, None)),
            warning: Some((base, None)),
            held: Some(held),
        };
        let m = &models.all[0];
        tend(&env, m, &mut s, &AtomicBool::new(false));
        let runs = |o: &str| {
            metrics
                .training_runs
                .with_label_values(&["series", o])
                .get()
        };
        let held_outcome = |o: &str| {
            metrics
                .warning_candidates
                .with_label_values(&["series", o])
                .get()
        };
        assert_eq!((runs("rejected"), runs("promoted")), (2, 0));
        assert_eq!((held_outcome("rejected"), held_outcome("promoted")), (1, 0));
        assert_eq!(
            metrics
                .drift_no_better_candidate
                .with_label_values(&["series"])
                .get(),
            1
        );
        assert_eq!(m.serving.load_full().version, "v1", "the champion serves");
        assert!(s.drift.is_none() && s.warning.is_none() && s.held.is_none());
        assert_eq!(
            metrics.candidate_held.with_label_values(&["series"]).get(),
            0
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
