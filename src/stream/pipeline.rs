//! The pipeline: builds the stages, runs them, and shuts them down in order.
//!
//! ```text
//! consumer --Work--> worker (xN) --Segment--> writer (x4) --mark_durable--> DurableOffsets
//!    ^  assignment (rebalance callbacks) --Assign/Revoke-->  worker            |
//!    +---------------------------- committer <----------------------------------+
//! trainer / models-topic follower --promote--> ServingModel --load--> worker
//! ```
//!
//! In: the config, the bootstrap list, the start-up models, and a shutdown signal. Out:
//! nothing but side effects (files, commits, metrics). Owns: the threads and tasks of every
//! stage, and the order they stop in: stop consuming, let the workers finish their queues
//! and seal, let the writers finish, commit, then stop the trainer and the follower.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::consumer::Consumer;
use rdkafka::producer::FutureProducer;
use tracing::{info, warn};

use super::assignment::{Assignments, Ctx};
use super::commit::{DurableOffsets, PartitionKey};
use super::consumer;
use super::history::{BagCache, SeriesHistory};
use super::labels::LabelJoiner;
use super::models::{ModelSpec, Models};
use super::record::{DecodeLimits, RecordKind};
use super::sink::kafka::producer_config;
use super::sink::roll::FileSizes;
use super::store::Store;
use super::training::TrainingRuntime;
use super::window::{ScoringModel, WindowParams};
use super::worker::{seal_check_interval, Work, WorkerEnv, WorkerPool};
use super::writer::{WriterEnv, Writers};
use super::{models_topic, registry_poll, trainer};
use crate::config::{Config, Role};
use crate::http::Health;
use crate::metrics::Metrics;

/// The record kind of each topic this process consumes.
fn topic_kinds(cfg: &Config) -> HashMap<String, RecordKind> {
    let mut kinds = HashMap::new();
    kinds.insert(cfg.kafka.points_topic.clone(), RecordKind::Point);
    if !cfg.kafka.bags_topic.is_empty() {
        kinds.insert(cfg.kafka.bags_topic.clone(), RecordKind::Bag);
    }
    // A scorer leaves labels to the trainers.
    if !cfg.kafka.labels_topic.is_empty() && cfg.pipeline.role != Role::Scorer {
        kinds.insert(cfg.kafka.labels_topic.clone(), RecordKind::Label);
    }
    kinds
}

/// The window settings of `[window]`.
pub fn window_params(cfg: &Config) -> WindowParams {
    WindowParams {
        points: cfg.window.points,
        duration_ms: cfg.window.duration_ms,
        hop_ms: cfg.window.hop_ms,
        lateness_ms: cfg.window.lateness_ms,
        idle_timeout_ms: cfg.window.idle_timeout_ms,
        max_series: cfg.window.max_series_per_partition,
    }
}

/// The decode limits of `[limits]`.
pub fn decode_limits(cfg: &Config) -> DecodeLimits {
    DecodeLimits {
        max_message_bytes: cfg.limits.max_message_bytes,
        max_bag_instances: cfg.limits.max_bag_instances,
    }
}

/// The label joins' history and the training store, when this process trains.
fn training_runtime(cfg: &Config) -> anyhow::Result<Option<Arc<TrainingRuntime>>> {
    if !cfg.training.enabled || cfg.pipeline.role == Role::Scorer {
        return Ok(None);
    }
    let store = Store::open(&cfg.training.dir, &cfg.object_store.0)
        .and_then(|s| s.ensure_root().map(|()| s))
        .map_err(|e| {
            anyhow::anyhow!(
                "opening the training store {}: {e}",
                cfg.training.dir.display()
            )
        })?;
    Ok(Some(Arc::new(TrainingRuntime {
        history: SeriesHistory::new(cfg.training.history_ms, cfg.training.history_points),
        bags: BagCache::new(cfg.training.bag_cache),
        store: Arc::new(store),
        examples_durable: Default::default(),
    })))
}

/// Runs the pipeline until `shutdown` resolves: consume, score, write, commit; then seal,
/// flush and commit within the grace period.
pub async fn run_pipeline(
    cfg: Config,
    bootstrap: String,
    start: Vec<(ModelSpec, Arc<ScoringModel>)>,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let kinds = topic_kinds(&cfg);
    for t in kinds.keys() {
        metrics.register_topic(t);
    }
    let out_dir = &cfg.output.dir;
    let output = Store::open(out_dir, &cfg.object_store.0)
        .and_then(|s| s.ensure_root().map(|()| s))
        .map_err(|e| anyhow::anyhow!("opening the output {}: {e}", out_dir.display()))?;
    let output = Arc::new(output);
    let training = training_runtime(&cfg)?;
    let models = Arc::new(Models::new(start, &metrics));
    let durable = Arc::new(DurableOffsets::new(cfg.commit.metadata));

    // Writers first: the workers hand them segments.
    let producer: Option<FutureProducer> =
        if cfg.output.kafka_topic.is_empty() && cfg.output.dead_letter_topic.is_empty() {
            None
        } else {
            Some(producer_config(&cfg, &bootstrap).create()?)
        };
    let file_sizes = Arc::new(FileSizes::default());
    let writer_env = Arc::new(WriterEnv {
        cfg: cfg.clone(),
        metrics: metrics.clone(),
        health: health.clone(),
        durable: durable.clone(),
        output: output.clone(),
        training: training.clone(),
        file_sizes: file_sizes.clone(),
    });
    let (writers, writer_threads) =
        Writers::start(writer_env, producer, tokio::runtime::Handle::current())?;
    let writers = Arc::new(writers);

    let labels = training
        .as_ref()
        .map(|t| LabelJoiner::new(t.clone(), cfg.training.clone(), models.clone()));
    let worker_env = Arc::new(WorkerEnv {
        cfg: cfg.clone(),
        metrics: metrics.clone(),
        models: models.clone(),
        labels,
        limits: decode_limits(&cfg),
        file_sizes,
    });
    let (workers, worker_threads) = WorkerPool::start(
        &worker_env,
        cfg.pipeline.worker_count(),
        cfg.pipeline.queue_messages,
        &writers,
    )?;
    let workers = Arc::new(workers);
    // The age check of idle workers.
    let ticker = {
        let txs = workers.queues();
        let every = seal_check_interval(&cfg);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                for tx in &txs {
                    if let Err(tokio::sync::mpsc::error::TrySendError::Closed(_)) =
                        tx.try_send(Work::Tick)
                    {
                        return;
                    }
                }
            }
        })
    };

    let trainer = match &training {
        Some(store) => trainer::spawn(trainer::TrainerEnv {
            cfg: cfg.clone(),
            metrics: metrics.clone(),
            models: models.clone(),
            store: store.clone(),
            bootstrap: bootstrap.clone(),
        })?,
        None => None,
    };
    let follower = models_topic::follow(&cfg, &bootstrap, models.serving())?;
    // Each series model with a registry is polled for a newer `current` (bag models swap
    // through the models topic).
    let polled: Vec<_> = models
        .all
        .iter()
        .filter(|m| m.spec.input == crate::config::ModelInput::Series)
        .filter_map(|m| Some((m.spec.registry_dir.clone()?, m.serving.clone())))
        .collect();
    let poller = registry_poll::spawn(&cfg, training.is_some(), polled)?;

    let state = Arc::new(Assignments::new(
        cfg.clone(),
        metrics.clone(),
        health.clone(),
        durable.clone(),
        kinds.clone(),
        window_params(&cfg),
        (output.clone(), training.as_ref().map(|t| t.store.clone())),
        workers.clone(),
    ));
    let ctx = Ctx::default();
    let consumer = consumer::create(&cfg, &bootstrap, ctx)?;
    consumer.context().attach(state.clone());
    let consumer = Arc::new(consumer);
    let topics: Vec<&str> = kinds.keys().map(String::as_str).collect();
    consumer.subscribe(&topics)?;
    info!(bootstrap, topics = ?topics, group = cfg.kafka.group_id, "consuming");

    let committer = consumer::spawn_committer(state.clone(), consumer.clone(), shutdown.clone());
    consumer::consume(&state, &consumer, &workers, &mut shutdown).await;

    // Shutdown: not ready, stop consuming, let the workers finish their queues and seal
    // everything, let the writers finish, commit.
    health.set_ready(false);
    info!("shutting down: finishing queued messages and sealing open segments");
    let grace = Duration::from_millis(cfg.shutdown.grace_ms);
    let deadline = Instant::now() + grace;
    let _ = consumer.pause(&consumer.assignment().unwrap_or_default());
    state.detach_workers();
    drop(workers);
    ticker.abort();
    let targets: Vec<(PartitionKey, i64)> = tokio::task::spawn_blocking(move || {
        worker_threads
            .into_iter()
            .filter_map(|t| t.join().ok())
            .flatten()
            .collect()
    })
    .await
    .unwrap_or_default();
    {
        let durable = durable.clone();
        let left = deadline.saturating_duration_since(Instant::now());
        let ok = tokio::task::spawn_blocking(move || durable.wait_durable(&targets, left))
            .await
            .unwrap_or(false);
        if !ok {
            warn!("grace period over before every segment was durable; uncommitted output will be replayed");
        }
    }
    consumer::commit_durable(&state, &consumer).await;
    committer.abort();
    if let Some(f) = follower {
        let _ = tokio::task::spawn_blocking(move || f.stop()).await;
    }
    if let Some(p) = poller {
        let _ = tokio::task::spawn_blocking(move || p.stop()).await;
    }
    if let Some(t) = trainer {
        // A run in progress finishes first; the store and registry stay consistent.
        let _ = tokio::task::spawn_blocking(move || t.stop()).await;
    }
    drop(writers);
    let _ = tokio::task::spawn_blocking(move || {
        for t in writer_threads {
            let _ = t.join();
        }
    })
    .await;
    info!("stopped");
    Ok(())
}
