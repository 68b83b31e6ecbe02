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

use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::producer::FutureProducer;
use tracing::{error, info, warn};

use super::ingest::assignment::{Assignments, Ctx};
use super::ingest::commit::DurableOffsets;
use super::ingest::consumer;
use super::ingest::position::PartitionKey;
use super::ingest::record::{DecodeLimits, RecordKind};
use super::ingest::registry::prefetch::RegistryInput;
use super::join::history::{BagCache, SeriesHistory};
use super::join::labels::LabelJoiner;
use super::lifecycle::registry::Registry;
use super::lifecycle::training::TrainingRuntime;
use super::output::sink::kafka::producer_config;
use super::output::sink::roll::FileSizes;
use super::output::store::Store;
use super::output::writer::{GiveUp, WriterEnv, Writers};
use super::quality::Quality;
use super::score::models::{ModelSpec, Models};
use super::score::window::{ScoringModel, WindowParams};
use super::score::worker::{Work, WorkerEnv};
use super::score::worker_pool::{panic_text, seal_check_interval, WorkerPool, WorkerThread};
use super::view::feed::ViewFeed;
use super::{lifecycle::models_topic, lifecycle::registry_poll, lifecycle::trainer};
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
    DecodeLimits::from(&cfg.limits)
}

/// The label joins' history (its blocks on disk unless `training.history_on_disk` is off),
/// when this process trains.
fn history(cfg: &Config, metrics: &Metrics) -> anyhow::Result<SeriesHistory> {
    let t = &cfg.training;
    let errors = |op| metrics.history_io_errors.with_label_values(&[op]);
    let evicted = metrics.label_join_evicted.with_label_values(&["series"]);
    let history = SeriesHistory::new(t.history_ms, t.history_points)
        .max_series(t.history_max_series)
        .counting(errors("read"), errors("write"))
        .counting_evictions(evicted);
    if !t.history_on_disk {
        return Ok(history);
    }
    let dir = t.history_dir();
    history
        .on_disk(&dir, t.history_segment_bytes)
        .map_err(|e| anyhow::anyhow!("creating the label-join history in {}: {e}", dir.display()))
}

/// The label joins' history and the training store, when this process trains.
fn training_runtime(
    cfg: &Config,
    metrics: &Metrics,
) -> anyhow::Result<Option<Arc<TrainingRuntime>>> {
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
        history: history(cfg, metrics)?,
        bags: BagCache::new(cfg.training.bag_cache).bounded_to(
            cfg.training.bag_cache_bytes,
            metrics.label_join_evicted.with_label_values(&["bag"]),
        ),
        holds: Default::default(),
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
    (metrics, health, view): (Arc<Metrics>, Arc<Health>, Option<Arc<ViewFeed>>),
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let parts = (metrics, health.clone(), view);
    let running = Running::start(&cfg, &bootstrap, start, parts, &shutdown)?;
    {
        // Beside the consume loop, until shutdown: a thread that ends before then died.
        let mut watched: Vec<Watched> =
            running.worker_threads.iter().map(Watched::thread).collect();
        watched.extend(running.writer_threads.iter().map(Watched::thread));
        // The committer ends on the shutdown signal itself, maybe before the consume loop
        // does: that end is no death.
        let (stopping, committer) = (shutdown.clone(), &running.committer);
        let committer_died = move || committer.is_finished() && !*stopping.borrow();
        watched.push(Watched::new("committer", committer_died));
        running.lifecycle.watch(&mut watched);
        let (state, consumer, workers) = (&running.state, &running.consumer, &running.workers);
        tokio::select! {
            () = consumer::consume(state, consumer, workers, running.registry.as_ref(), &mut shutdown) => {}
            () = watch_threads(watched, &health) => {}
        }
    }
    running.shut_down(&cfg, &health).await;
    Ok(())
}

/// The pipeline's parts from start-up to shutdown: the consumer and its assignment state,
/// the scoring workers, the writers, the model lifecycle's threads.
struct Running {
    state: Arc<Assignments>,
    consumer: Arc<StreamConsumer<Ctx>>,
    committer: tokio::task::JoinHandle<()>,
    workers: Arc<WorkerPool>,
    worker_threads: Vec<WorkerThread>,
    writers: Arc<Writers>,
    writer_threads: Vec<std::thread::JoinHandle<()>>,
    ticker: tokio::task::JoinHandle<()>,
    lifecycle: Lifecycle,
    durable: Arc<DurableOffsets>,
    give_up: Arc<GiveUp>,
    /// The Avro topics' schema lookups, made before a message goes to its worker.
    registry: Option<RegistryInput>,
}

impl Running {
    /// Starts the stages in the order data flows back to front (writers first: the workers
    /// hand them segments), then subscribes.
    fn start(
        cfg: &Config,
        bootstrap: &str,
        start: Vec<(ModelSpec, Arc<ScoringModel>)>,
        (metrics, health, view): (Arc<Metrics>, Arc<Health>, Option<Arc<ViewFeed>>),
        shutdown: &tokio::sync::watch::Receiver<bool>,
    ) -> anyhow::Result<Self> {
        let kinds = topic_kinds(cfg);
        for t in kinds.keys() {
            metrics.register_topic(t);
        }
        let out_dir = &cfg.output.dir;
        let output = Store::open(out_dir, &cfg.object_store.0)
            .and_then(|s| s.ensure_root().map(|()| s))
            .map_err(|e| anyhow::anyhow!("opening the output {}: {e}", out_dir.display()))?;
        let output = Arc::new(output);
        let training = training_runtime(cfg, &metrics)?;
        let models = Arc::new(Models::new(start, &metrics));
        let durable = Arc::new(DurableOffsets::new(cfg.commit.metadata));

        // Writers first: the workers hand them segments.
        let producer: Option<FutureProducer> =
            if cfg.output.kafka_topic.is_empty() && cfg.output.dead_letter_topic.is_empty() {
                None
            } else {
                Some(producer_config(cfg, bootstrap).create()?)
            };
        let file_sizes = Arc::new(FileSizes::default());
        let give_up = Arc::new(GiveUp::default());
        let quality = cfg
            .drift
            .evaluate
            .then(|| Quality::new(cfg.drift.clone(), metrics.clone()));
        let writer_env = Arc::new(WriterEnv {
            cfg: cfg.clone(),
            metrics: metrics.clone(),
            health: health.clone(),
            durable: durable.clone(),
            output: output.clone(),
            training: training.clone(),
            file_sizes: file_sizes.clone(),
            give_up: give_up.clone(),
            quality: quality.clone(),
        });
        let (writers, writer_threads) =
            Writers::start(writer_env, producer, tokio::runtime::Handle::current())?;
        let writers = Arc::new(writers);

        let labels = training.as_ref().map(|t| {
            LabelJoiner::new(
                t.clone(),
                cfg.training.clone(),
                models.clone(),
                quality.clone(),
            )
        });
        let registry = RegistryInput::new(cfg)?;
        let worker_env = Arc::new(WorkerEnv {
            cfg: cfg.clone(),
            metrics: metrics.clone(),
            models: models.clone(),
            labels,
            quality: quality.clone(),
            limits: decode_limits(cfg),
            file_sizes,
            view,
            registry: registry.as_ref().map(|r| r.registry.clone()),
        });
        let (workers, worker_threads) = WorkerPool::start(
            &worker_env,
            cfg.pipeline.worker_count(),
            (cfg.pipeline.queue_messages, cfg.pipeline.queue_bytes),
            &writers,
        )?;
        let workers = Arc::new(workers);
        let ticker = spawn_ticker(&workers, cfg);

        let lifecycle = Lifecycle::start(cfg, bootstrap, &metrics, &models, &training, &quality)?;

        let state = Arc::new(Assignments::new(
            cfg.clone(),
            metrics.clone(),
            health.clone(),
            durable.clone(),
            kinds.clone(),
            window_params(cfg),
            (output.clone(), training.clone()),
            workers.clone(),
            quality.clone(),
        ));
        let ctx = Ctx::default();
        let consumer = consumer::create(cfg, bootstrap, ctx)?;
        consumer.context().attach(state.clone());
        let consumer = Arc::new(consumer);
        let topics: Vec<&str> = kinds.keys().map(String::as_str).collect();
        consumer.subscribe(&topics)?;
        info!(bootstrap, topics = ?topics, group = cfg.kafka.group_id, "consuming");

        let committer =
            consumer::spawn_committer(state.clone(), consumer.clone(), shutdown.clone());
        Ok(Self {
            state,
            consumer,
            committer,
            workers,
            worker_threads,
            writers,
            writer_threads,
            ticker,
            lifecycle,
            durable,
            give_up,
            registry,
        })
    }

    /// Shutdown: not ready, stop consuming, let the workers finish their queues and seal
    /// everything, let the writers finish, commit; all within the grace period.
    async fn shut_down(self, cfg: &Config, health: &Health) {
        let Running {
            state,
            consumer,
            committer,
            workers,
            worker_threads,
            writers,
            writer_threads,
            ticker,
            lifecycle,
            durable,
            give_up,
            ..
        } = self;
        // A sink that keeps failing (a full disk, an unreachable store) must not hold the exit: at the
        // deadline the writers stop retrying, and the workers and writers still busy then are
        // left behind (the process is ending). What was not durable by then is not committed.
        health.set_ready(false);
        info!("shutting down: finishing queued messages and sealing open segments");
        let deadline = shutdown_deadline(cfg.shutdown.grace_ms);
        give_up.at(deadline);
        let _ = consumer.pause(&consumer.assignment().unwrap_or_default());
        state.detach_workers();
        drop(workers);
        ticker.abort();
        let (targets, workers_left) = join_until(worker_threads, deadline).await;
        let targets: Vec<(PartitionKey, i64)> = targets.into_iter().flatten().collect();
        let all_durable = wait_durable(&durable, &targets, deadline).await;
        if !all_durable || workers_left > 0 {
            // One line naming what is not durable: it is not committed, the next owner of
            // each partition replays it from the committed offset.
            let unwritten = durable.not_durable(&targets).join(", ");
            warn!(
                grace_ms = cfg.shutdown.grace_ms,
                unwritten = %unwritten,
                workers_left,
                "shutdown grace period over before every segment was durable: these offsets \
                 are not committed and will be replayed"
            );
        }
        consumer::commit_durable(&state, &consumer).await;
        committer.abort();
        // Its clone of the consumer goes with it, so the close below is the last one.
        let _ = committer.await;
        lifecycle.stop().await;
        drop(writers);
        // Past the deadline a writer drops what it holds at once; one blocked in a request that
        // does not answer is left behind after a last moment.
        let (_, writers_left) = join_until(
            writer_threads,
            deadline.max(Instant::now() + WRITER_LAST_MOMENT),
        )
        .await;
        if writers_left > 0 {
            warn!(
                writers_left,
                "a writer is still inside a sink request; exiting without it"
            );
        }
        info!("stopped");
        leave_group(consumer, Instant::now() + CLOSE_AT_MOST).await;
    }
}

/// How long leaving the consumer group may take at exit.
const CLOSE_AT_MOST: Duration = Duration::from_secs(5);

/// Leaves the group: the consumer's drop closes it, and librdkafka's close serves the last
/// rebalance through the callbacks. On a thread of its own, waited for until `until`: with
/// a rebalance under way at exit, an assign or commit in those callbacks can wait for an
/// answer that never comes, and that must not hold the exit (what was durable is
/// committed already; the group expires a member that left no word).
async fn leave_group(consumer: Arc<StreamConsumer<Ctx>>, until: Instant) {
    let (left, done) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        drop(consumer);
        let _ = left.send(());
    });
    if tokio::time::timeout_at(until.into(), done).await.is_err() {
        warn!(
            seconds = CLOSE_AT_MOST.as_secs(),
            "leaving the consumer group did not finish in time (a rebalance under way); exiting without it"
        );
    }
}

/// The shutdown's deadline, `grace_ms` from now (a grace too long for the clock is as good
/// as none).
fn shutdown_deadline(grace_ms: u64) -> Instant {
    let now = Instant::now();
    now.checked_add(Duration::from_millis(grace_ms))
        .unwrap_or(now + Duration::from_secs(86_400 * 365))
}

/// Waits until every partition's `targets` offset is durable, or the deadline; whether all
/// were.
async fn wait_durable(
    durable: &Arc<DurableOffsets>,
    targets: &[(PartitionKey, i64)],
    deadline: Instant,
) -> bool {
    let (d, t) = (durable.clone(), targets.to_vec());
    let left = deadline.saturating_duration_since(Instant::now());
    tokio::task::spawn_blocking(move || d.wait_durable(&t, left))
        .await
        .unwrap_or(false)
}

/// The model lifecycle's threads beside the pipeline: the trainer (a trainer's), and for
/// the models with a registry, the models-topic follower and the registry poller (each
/// serves its `current`: polled, and read again at once when the models topic says
/// something was published).
struct Lifecycle {
    trainer: Option<trainer::TrainerHandle>,
    follower: Option<models_topic::Follower>,
    poller: Option<registry_poll::RegistryPoller>,
}

impl Lifecycle {
    fn start(
        cfg: &Config,
        bootstrap: &str,
        metrics: &Arc<Metrics>,
        models: &Arc<Models>,
        training: &Option<Arc<TrainingRuntime>>,
        quality: &Option<Arc<Quality>>,
    ) -> anyhow::Result<Self> {
        let trainer = match training {
            Some(store) => trainer::spawn(trainer::TrainerEnv {
                cfg: cfg.clone(),
                metrics: metrics.clone(),
                models: models.clone(),
                store: store.clone(),
                bootstrap: bootstrap.to_string(),
                quality: quality.clone(),
            })?,
            None => None,
        };
        let with_registry: Vec<_> = models
            .all
            .iter()
            .filter_map(|m| Some((m.spec.registry_dir.clone()?, m.serving.clone())))
            .collect();
        let followed = models
            .all
            .iter()
            .map(|m| {
                let registry = match &m.spec.registry_dir {
                    Some(dir) => Some(Registry::open_with(dir, &cfg.object_store.0)?),
                    None => None,
                };
                Ok((m.serving.clone(), registry))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Self {
            trainer,
            follower: models_topic::follow(cfg, bootstrap, followed)?,
            poller: registry_poll::spawn(cfg, training.is_some(), with_registry)?,
        })
    }

    /// Adds the threads that run until shutdown to `watched`.
    fn watch<'a>(&'a self, watched: &mut Vec<Watched<'a>>) {
        if let Some(t) = &self.trainer {
            watched.push(Watched::new("milstream-trainer", || t.is_finished()));
        }
        if let Some(f) = &self.follower {
            watched.push(Watched::new("milstream-models", || f.is_finished()));
        }
        if let Some(p) = &self.poller {
            watched.push(Watched::new("milstream-registry", || p.is_finished()));
        }
    }

    /// Stops them; a training run in progress finishes first, so the store and registry
    /// stay consistent.
    async fn stop(self) {
        if let Some(f) = self.follower {
            let _ = tokio::task::spawn_blocking(move || f.stop()).await;
        }
        if let Some(p) = self.poller {
            let _ = tokio::task::spawn_blocking(move || p.stop()).await;
        }
        if let Some(t) = self.trainer {
            let _ = tokio::task::spawn_blocking(move || t.stop()).await;
        }
    }
}

/// The age check of idle workers: a tick on every worker's queue, dropped when it is full.
fn spawn_ticker(workers: &WorkerPool, cfg: &Config) -> tokio::task::JoinHandle<()> {
    let txs = workers.queues();
    let every = seal_check_interval(cfg);
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
}

/// How long shutdown waits for the writers after the grace period, at least: long enough
/// to drop what they hold, short against any request timeout.
const WRITER_LAST_MOMENT: Duration = Duration::from_millis(200);

/// Joins the threads that end by `deadline`; returns their results and how many did not
/// end (those are left running: shutdown does not wait past its grace period).
async fn join_until<T>(
    threads: Vec<std::thread::JoinHandle<T>>,
    deadline: Instant,
) -> (Vec<T>, usize) {
    while Instant::now() < deadline && threads.iter().any(|t| !t.is_finished()) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (done, left): (Vec<_>, Vec<_>) = threads.into_iter().partition(|t| t.is_finished());
    let results = done.into_iter().filter_map(joined).collect();
    (results, left.len())
}

/// A finished thread's result; a panic is logged with the thread's name and message (its
/// partitions' next offsets are lost with it: they are not committed, so they replay).
fn joined<T>(thread: std::thread::JoinHandle<T>) -> Option<T> {
    let name = thread.thread().name().unwrap_or("unnamed").to_string();
    thread
        .join()
        .inspect_err(|panic| {
            let panic = panic_text(panic.as_ref());
            error!(thread = name, panic, "a pipeline thread had panicked");
        })
        .ok()
}

/// How often [`watch_threads`] looks.
const WATCH_EVERY: Duration = Duration::from_millis(500);

/// A thread (or task) of the pipeline that runs until shutdown, and how to tell it ended.
pub struct Watched<'a> {
    name: String,
    ended: Box<dyn Fn() -> bool + Send + Sync + 'a>,
}

impl<'a> Watched<'a> {
    pub fn new(name: &str, ended: impl Fn() -> bool + Send + Sync + 'a) -> Self {
        Watched {
            name: name.to_string(),
            ended: Box::new(ended),
        }
    }

    /// A named thread of the pipeline (`milstream-score-0`, `milstream-writer-1`, ...).
    pub fn thread<T: Send>(t: &'a std::thread::JoinHandle<T>) -> Self {
        let name = t.thread().name().unwrap_or("unnamed");
        Self::new(name, || t.is_finished())
    }
}

/// Liveness: marks each watched thread that ends as dead (`/healthz` and `/readyz` then
/// answer 503 naming it) and logs it, once. Nothing restarts a thread in-process (a worker
/// holds its partitions' windows, a writer its queue): the process is restarted instead,
/// and its replay rebuilds what the thread held. Runs until dropped: beside the consume
/// loop, so the threads that end at shutdown are not reported.
pub async fn watch_threads(watched: Vec<Watched<'_>>, health: &Health) {
    let mut reported = vec![false; watched.len()];
    let mut tick = tokio::time::interval(WATCH_EVERY);
    loop {
        tick.tick().await;
        for (w, reported) in watched.iter().zip(&mut reported) {
            if !*reported && (w.ended)() {
                *reported = true;
                error!(
                    thread = w.name,
                    "a pipeline thread ended before shutdown: not alive (/healthz answers 503)"
                );
                health.thread_ended(&w.name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::{watch_threads, Watched};
    use crate::http::{serve, Health};
    use crate::metrics::Metrics;

    /// A GET over HTTP/1.1: the status and the body.
    async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.expect("send");
        let mut raw = String::new();
        stream.read_to_string(&mut raw).await.expect("receive");
        let (head, body) = raw.split_once("\r\n\r\n").expect("head and body");
        let status = head[9..12].parse().expect("a status code");
        (status, body.to_string())
    }

    /// A scoring worker's thread that dies (a panic outside the per-message boundary) fails
    /// liveness: `/healthz` and `/readyz` answer 503 naming it, so Kubernetes restarts the
    /// pod. (Before, both stayed 200 while the dead worker's partitions stalled.)
    #[tokio::test]
    async fn a_dead_worker_thread_fails_liveness_over_http() {
        let health = Arc::new(Health::default());
        health.set_ready(true);
        let pending = std::future::pending();
        let (addr, _server) = serve("127.0.0.1:0", Metrics::new(), health.clone(), pending)
            .await
            .expect("bind");
        let thread = |name: &str, panics: bool| {
            let (go, wait) = std::sync::mpsc::channel::<()>();
            let t = std::thread::Builder::new()
                .name(name.into())
                .spawn(move || {
                    let _ = wait.recv();
                    assert!(!panics, "a worker's invariant broke");
                })
                .expect("spawn");
            (go, t)
        };
        let (kill, worker) = thread("milstream-score-0", true);
        let (stop, writer) = thread("milstream-writer-0", false);
        let probe = async {
            assert_eq!(get(addr, "/healthz").await, (200, "ok".to_string()));
            kill.send(()).unwrap();
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                let (status, body) = get(addr, "/healthz").await;
                if status == 503 {
                    return body;
                }
                assert!(Instant::now() < deadline, "/healthz stayed {status}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        let watched = vec![Watched::thread(&worker), Watched::thread(&writer)];
        let body = tokio::select! {
            body = probe => body,
            () = watch_threads(watched, &health) => unreachable!("it watches until dropped"),
        };
        assert!(
            body.contains("milstream-score-0") && !body.contains("milstream-writer-0"),
            "{body}"
        );
        let (status, body) = get(addr, "/readyz").await;
        assert_eq!(status, 503);
        assert!(body.contains("milstream-score-0"), "{body}");
        assert!(worker.join().is_err(), "the worker panicked");
        stop.send(()).unwrap();
        writer.join().expect("the writer ended normally");
    }
}
