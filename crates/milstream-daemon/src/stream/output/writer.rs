//! The writers: making segments durable. In: sealed [`Segment`]s from the workers. Out:
//! files (Parquet predictions and dead letters, training-store examples, optional Arrow
//! IPC) and Kafka records, then the segment's end marked durable in [`DurableOffsets`] for
//! the committer. Owns: the writer threads and the order of each partition's segments.
//!
//! A partition's segments always go to the same writer thread, so they become durable in
//! order; different partitions are written in parallel, which overlaps fsyncs. A failing
//! write is retried (the consumer backs up behind it) rather than skipped, since skipping
//! would lose output. Only shutdown ends the retries: once its grace period is over
//! ([`GiveUp`]) a writer drops what it has not written, unmarked, so nothing is committed
//! past what is durable and the next start replays the rest.

use std::collections::HashMap;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rdkafka::producer::FutureProducer;
use tracing::{debug, error, warn};

use crate::config::Config;
use crate::http::Health;
use crate::metrics::Metrics;
use crate::stream::ingest::commit::DurableOffsets;
use crate::stream::lifecycle::training::TrainingRuntime;
use crate::stream::output::delta::DeltaTables;
use crate::stream::output::sink::folders::WriterLogs;
use crate::stream::output::sink::roll::FileSizes;
use crate::stream::output::sink::{self, Segment};
use crate::stream::output::store::Store;
use crate::stream::quality::Quality;

/// Writer threads: enough to overlap fsync waits on a small machine.
const WRITER_THREADS: usize = 4;

/// What every writer reads.
pub struct WriterEnv {
    pub cfg: Config,
    pub metrics: Arc<Metrics>,
    pub health: Arc<Health>,
    pub durable: Arc<DurableOffsets>,
    /// Where `output.dir` points: a folder or an object store.
    pub output: Arc<Store>,
    /// The training store, when training is on.
    pub training: Option<Arc<TrainingRuntime>>,
    /// Where each segment's Parquet files are measured, for the workers' rolling.
    pub file_sizes: Arc<FileSizes>,
    /// The end of shutdown's grace period, once shutdown begins.
    pub give_up: Arc<GiveUp>,
    /// Live quality: its counters count a graded label when its row is durable.
    pub quality: Option<Arc<Quality>>,
}

/// When the writers stop retrying: the end of shutdown's grace period (`shutdown.grace_ms`),
/// set when shutdown begins. Until then a failing segment is retried for as long as it
/// takes; from then on a writer makes no new attempt and drops the segments it holds
/// without marking them durable. That keeps the order the commit relies on: a partition's
/// segments are written in order, and once one is dropped every later one is too (the
/// deadline only passes once), so the durable offset never skips a dropped segment.
#[derive(Debug, Default)]
pub struct GiveUp {
    at: Mutex<Option<Instant>>,
    changed: Condvar,
}

impl GiveUp {
    /// Retries end at `deadline` (wakes a writer sleeping between attempts).
    pub fn at(&self, deadline: Instant) {
        *self.at.lock().expect("give-up lock") = Some(deadline);
        self.changed.notify_all();
    }

    /// Whether the grace period is over.
    pub fn passed(&self) -> bool {
        self.at
            .lock()
            .expect("give-up lock")
            .is_some_and(|at| Instant::now() >= at)
    }

    /// Sleeps `pause` between two attempts, or less when the grace period ends first.
    fn pause(&self, pause: Duration) {
        let until = Instant::now() + pause;
        let mut at = self.at.lock().expect("give-up lock");
        loop {
            let now = Instant::now();
            let end = at.map_or(until, |a| a.min(until));
            if now >= end {
                return;
            }
            at = self
                .changed
                .wait_timeout(at, end - now)
                .expect("give-up lock")
                .0;
        }
    }
}

/// The writer threads' queues.
pub struct Writers {
    txs: Vec<SyncSender<Segment>>,
}

impl Writers {
    /// Starts the writer threads; they end when every `Writers` handle is dropped.
    pub fn start(
        env: Arc<WriterEnv>,
        producer: Option<FutureProducer>,
        rt: tokio::runtime::Handle,
    ) -> std::io::Result<(Self, Vec<JoinHandle<()>>)> {
        let mut txs = Vec::new();
        let mut threads = Vec::new();
        let per_writer = env
            .cfg
            .output
            .max_pending_files
            .div_ceil(WRITER_THREADS)
            .max(1);
        for i in 0..WRITER_THREADS {
            let (tx, rx) = sync_channel::<Segment>(per_writer);
            let (env, producer, rt) = (env.clone(), producer.clone(), rt.clone());
            threads.push(
                std::thread::Builder::new()
                    .name(format!("milstream-writer-{i}"))
                    .spawn(move || writer_loop(&env, rx, producer, rt))?,
            );
            txs.push(tx);
        }
        Ok((Self { txs }, threads))
    }

    fn route(&self, seg: &Segment) -> &SyncSender<Segment> {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (seg.topic.as_str(), seg.partition).hash(&mut h);
        &self.txs[(h.finish() as usize) % self.txs.len()]
    }

    /// Hands a sealed segment to its writer, waiting while the writer is behind (the
    /// worker's queue then fills and the consumer pauses).
    pub fn send(&self, seg: Segment) {
        let (topic, partition, first, last) = (
            seg.topic.clone(),
            seg.partition,
            seg.first_offset,
            seg.last_offset,
        );
        if self.route(&seg).send(seg).is_err() {
            error!(
                topic,
                partition,
                first_offset = first,
                last_offset = last,
                "the writer has stopped; a segment was not written (it will be replayed)"
            );
        }
    }
}

/// The writer thread: makes each segment durable in every sink, in order, then marks its
/// offsets durable.
fn writer_loop(
    env: &WriterEnv,
    rx: Receiver<Segment>,
    producer: Option<FutureProducer>,
    rt: tokio::runtime::Handle,
) {
    let mut logs = WriterLogs::default();
    for seg in rx {
        let key = (seg.topic.clone(), seg.partition);
        let mut attempt = 0u32;
        let written = loop {
            // Past the grace period: no new attempt (the pipeline names what is left).
            if env.give_up.passed() {
                break false;
            }
            // Each attempt is a turn of the segment's ownership: once the partition was
            // revoked or assigned again, none begins, and a new assignment's sweep waits for
            // the one under way.
            let Some(turn) = env.durable.begin_write(&key, seg.generation) else {
                warn!(
                    topic = seg.topic,
                    partition = seg.partition,
                    first_offset = seg.first_offset,
                    last_offset = seg.last_offset,
                    "dropping a segment of an earlier ownership of the partition"
                );
                break false;
            };
            let result = write_segment(env, &seg, &mut logs, producer.as_ref(), &rt);
            if result.is_ok() {
                count_durable(env, &seg);
                env.durable.mark_durable(
                    &key,
                    seg.generation,
                    seg.last_offset + 1,
                    seg.replay_from,
                );
            }
            drop(turn);
            match result {
                Ok(()) => {
                    if attempt > 0 {
                        env.health.set_sink_failing(false);
                    }
                    break true;
                }
                Err(SinkError {
                    sink,
                    text,
                    refused,
                }) => {
                    env.metrics.sink_errors.with_label_values(&[sink]).inc();
                    if refused {
                        env.health.set_sink_refused();
                    } else {
                        env.health.set_sink_failing(true);
                    }
                    attempt += 1;
                    error!(
                        topic = seg.topic,
                        partition = seg.partition,
                        attempt,
                        error = text,
                        refused,
                        "writing a segment failed; retrying"
                    );
                    env.give_up
                        .pause(Duration::from_millis((100 * u64::from(attempt)).min(5_000)));
                }
            }
        };
        if !written {
            // Not durable, so not marked: the commit stays below it and a restart replays it.
            debug!(
                topic = seg.topic,
                partition = seg.partition,
                first_offset = seg.first_offset,
                last_offset = seg.last_offset,
                "segment dropped unwritten (shutdown's grace period over, or ownership ended)"
            );
        }
    }
}

/// Why a sink did not take a segment.
struct SinkError {
    sink: &'static str,
    text: String,
    /// The store refused the request (permission, authentication): only a change of its
    /// configuration heals it. Other errors (a store or broker away, a timeout) heal by
    /// themselves. Both are retried: a segment is never dropped, since its offsets would be
    /// committed past output that does not exist. What a single row could make permanent
    /// (an id or a detail too large for a topic) is bounded or shrunk before it gets here.
    refused: bool,
}

impl SinkError {
    fn io(sink: &'static str, what: &'static str) -> impl FnOnce(std::io::Error) -> Self {
        move |e| SinkError {
            sink,
            refused: e.kind() == std::io::ErrorKind::PermissionDenied,
            text: format!("{what}: {e}"),
        }
    }
}

/// One attempt at writing a segment to every sink; the error names the sink that failed.
fn write_segment(
    env: &WriterEnv,
    seg: &Segment,
    logs: &mut WriterLogs,
    producer: Option<&FutureProducer>,
    rt: &tokio::runtime::Handle,
) -> Result<(), SinkError> {
    // A sink's files and bytes, counted as each is written.
    let count = |sink: &str, n_files: u64, n_bytes: u64| {
        let m = &env.metrics;
        m.files_written.with_label_values(&[sink]).inc_by(n_files);
        m.bytes_written.with_label_values(&[sink]).inc_by(n_bytes);
    };
    let out = env.output.as_ref();
    let by_hour = env.cfg.output.partition_by == "hour";
    // The folder goes into the partition's log before any file goes into the folder.
    let key = (seg.topic.clone(), seg.partition);
    let low = env.durable.committed_low(&key);
    let folder = seg.partition_folder(by_hour);
    logs.record(out, env.cfg.pipeline.role, seg, &folder, low)
        .map_err(SinkError::io("parquet", "folder log"))?;
    let w = match DeltaTables::for_output(&env.cfg, out) {
        Some(tables) => tables
            .write_segment(out, seg, by_hour)
            .map_err(SinkError::io("delta", "delta table"))?,
        None => sink::parquet::write_segment(out, seg, by_hour)
            .map_err(SinkError::io("parquet", "parquet"))?,
    };
    count("parquet", w.prediction_files, w.prediction_bytes);
    count("dlq", w.dead_letter_files, w.dead_letter_bytes);
    let mut parquet = w.parquet;
    if let (Some(t), false) = (&env.training, seg.examples.is_empty()) {
        let b = sink::parquet::write_examples(&t.store, seg, by_hour)
            .map_err(SinkError::io("training", "training store"))?;
        count("training", 1, b.total);
        parquet = parquet + b;
    }
    if env.cfg.output.arrow_ipc {
        let b = sink::ipc::write_segment_ipc(out, seg, by_hour)
            .map_err(SinkError::io("ipc", "arrow ipc"))?;
        if b > 0 {
            count("ipc", 1, b);
        }
    }
    if let Some(p) = producer {
        let dropped = rt
            .block_on(sink::kafka::produce_segment(
                p,
                &env.cfg.output.kafka_topic,
                &env.cfg.output.dead_letter_topic,
                seg,
            ))
            .map_err(|text| SinkError {
                sink: "kafka",
                text,
                refused: false,
            })?;
        let refused = &env.metrics.sink_rows_refused;
        refused
            .with_label_values(&["kafka", "shrunk"])
            .inc_by(dropped.shrunk);
        refused
            .with_label_values(&["kafka", "left_out"])
            .inc_by(dropped.left_out);
    }
    // Measured once the segment is in every sink (a retry writes the same files again).
    env.file_sizes.record(&seg.topic, seg.approx_bytes, parquet);
    Ok(())
}

/// The metrics of a segment that became durable in every sink.
fn count_durable(env: &WriterEnv, seg: &Segment) {
    let metrics = &env.metrics;
    metrics
        .predictions_written
        .inc_by(seg.predictions.len() as u64);
    let rows = &metrics.rows_written;
    rows.with_label_values(&["parquet"])
        .inc_by(seg.predictions.len() as u64);
    rows.with_label_values(&["dlq"])
        .inc_by(seg.dead_letters.len() as u64);
    if env.training.is_some() {
        rows.with_label_values(&["training"])
            .inc_by(seg.examples.len() as u64);
    }
    if env.cfg.output.arrow_ipc {
        rows.with_label_values(&["ipc"])
            .inc_by(seg.predictions.len() as u64);
    }
    let mut by_label: HashMap<(&str, &str), u64> = HashMap::new();
    for p in &seg.predictions {
        *by_label
            .entry((p.label.as_str(), p.model_version.as_str()))
            .or_default() += 1;
    }
    for ((label, version), n) in by_label {
        metrics
            .predictions
            .with_label_values(&[label, version])
            .inc_by(n);
    }
    for t in &seg.consumed_at {
        metrics
            .consume_to_durable_seconds
            .observe(t.elapsed().as_secs_f64());
    }
    if let Some(t) = &env.training {
        t.examples_durable.add(&seg.examples);
    }
    if let Some(q) = &env.quality {
        q.count_durable(&seg.topic, seg.partition, &seg.quality);
    }
}
