//! The consumer: group membership, assignment with replay, the decode -> window -> score loop,
//! segment sealing, backpressure, and the writer thread that makes segments durable.
//!
//! Ordering and commit points, in one place:
//! - The consumer loop only receives and routes: each partition belongs to one scoring
//!   worker thread (by hash), which owns its windows and open segment and processes its
//!   messages in offset order. Assignment and revocation travel down the same queue as the
//!   messages, so a worker sees them in order with the partition's messages.
//! - A partition's outputs accumulate in its open segment, which its worker seals (rows,
//!   bytes, age, revoke, shutdown) and hands to the partition's writer thread, so segments
//!   become durable in order.
//! - The committer commits a partition's offset only up to the end of its last durable
//!   segment, with the segment's replay point in the metadata.
//! - On assignment the consumer seeks to the replay point, rebuilds windows from the
//!   messages below the committed offset without emitting, and emits from the committed
//!   offset on; files at or beyond the committed offset are swept first, because the replay
//!   rewrites them (under the same names when the segment bounds match, else new ones).

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, StreamConsumer};
use rdkafka::error::KafkaResult;
use rdkafka::message::{Message, OwnedMessage};
use rdkafka::producer::FutureProducer;
use rdkafka::types::RDKafkaRespErr;
use rdkafka::{ClientContext, Offset, TopicPartitionList};
use tracing::{error, info, warn};

use super::commit::{decode_metadata, DurableOffsets, PartitionKey};
use super::history::{BagCache, SegmentJoin, SeriesHistory};
use super::record::{
    decode, DeadLetterRecord, DeadReason, DecodeLimits, LabelRecord, PredictionRecord, Record,
    RecordKind, Rejected, TopContribution,
};
use super::sink::{self, Segment};
use super::training::Example;
use super::window::{PartitionWindows, PointOutcome, ScoredWindow, ScoringModel, WindowParams};
use crate::config::{Config, Role};
use crate::http::Health;
use crate::metrics::Metrics;
use crate::mil::{Bag, Explanation, Sample};

/// `topic/partition` of each element, for logs.
fn partition_names(tpl: &TopicPartitionList) -> Vec<String> {
    tpl.elements()
        .iter()
        .map(|e| format!("{}/{}", e.topic(), e.partition()))
        .collect()
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// The writer threads. A partition's segments always go to the same writer, so they become
/// durable in order; different partitions are written in parallel, which overlaps fsyncs.
struct Writers {
    txs: Vec<SyncSender<Segment>>,
}

impl Writers {
    fn route(&self, seg: &Segment) -> &SyncSender<Segment> {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (seg.topic.as_str(), seg.partition).hash(&mut h);
        &self.txs[(h.finish() as usize) % self.txs.len()]
    }
}

/// Writer threads: enough to overlap fsync waits on a small machine.
const WRITER_THREADS: usize = 4;

/// What a scoring worker is told, in partition order.
enum Work {
    Message {
        msg: OwnedMessage,
        consumed_at: Instant,
    },
    /// A partition is now ours; its messages follow.
    Assign(PartitionKey, Box<PartitionRuntime>),
    /// Partitions are no longer ours: seal their segments (unless the assignment was lost)
    /// and drop them; the reply carries each sealed partition's next offset.
    Revoke {
        keys: Vec<PartitionKey>,
        seal: bool,
        reply: SyncSender<Vec<(PartitionKey, i64)>>,
    },
    /// Time to seal segments past the roll age (sent periodically; dropped when the queue
    /// is full, since a busy worker checks ages between messages anyway).
    Tick,
}

/// The scoring workers' queues. A partition always goes to the same worker.
struct Workers {
    txs: Vec<tokio::sync::mpsc::Sender<Work>>,
}

impl Workers {
    fn index(&self, topic: &str, partition: i32) -> usize {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (topic, partition).hash(&mut h);
        (h.finish() as usize) % self.txs.len()
    }

    /// Queues control work from a rebalance callback, which runs inside the consumer's
    /// poll and so may not await: waits in place while the worker's queue is full.
    fn send_control(&self, i: usize, mut work: Work) -> bool {
        use tokio::sync::mpsc::error::TrySendError as E;
        loop {
            match self.txs[i].try_send(work) {
                Ok(()) => return true,
                Err(E::Full(w)) => {
                    work = w;
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(E::Closed(_)) => return false,
            }
        }
    }
}

/// Per assigned partition.
struct PartitionRuntime {
    messages: prometheus::IntCounter,
    records: prometheus::IntCounter,
    kind: RecordKind,
    /// Outputs of offsets below this were committed before: rebuild only.
    emit_from: i64,
    /// Next offset to process.
    next_offset: i64,
    windows: Option<PartitionWindows>,
    segment: Option<Segment>,
    /// This partition's share of the live-series gauge.
    live_series: i64,
    topic: String,
    partition: i32,
    /// Labels waiting for their segment's points, oldest offset first. They hold the
    /// partition's replay point back, so a crash replays them.
    pending_labels: VecDeque<PendingLabel>,
}

struct PendingLabel {
    offset: i64,
    label: LabelRecord,
    labeled_at_ms: i64,
    since: Instant,
    raw: Vec<u8>,
}

/// Label joins and the training store, when `training.enabled`.
pub struct TrainingRuntime {
    pub history: SeriesHistory,
    pub bags: BagCache,
    pub dir: PathBuf,
    /// Examples made durable in the store (the trainer's "after N examples" trigger).
    pub examples_durable: std::sync::atomic::AtomicU64,
}

/// What became of a label.
enum LabelJoin {
    Joined(Example),
    Wait,
    Dead(Rejected),
}

/// State shared by the loop, the rebalance callback, the writer and the committer.
pub struct Shared {
    pub cfg: Config,
    pub metrics: Arc<Metrics>,
    pub health: Arc<Health>,
    pub series_model: ArcSwap<ScoringModel>,
    pub bag_model: Option<Arc<ScoringModel>>,
    pub durable: DurableOffsets,
    pub training: Option<Arc<TrainingRuntime>>,
    /// Whether the first commit since the last assignment was logged.
    first_commit_logged: AtomicBool,
    /// The cluster's bootstrap list (the models topic's producer and follower use it).
    pub bootstrap: String,
    writers: Mutex<Option<Arc<Writers>>>,
    workers: Mutex<Option<Arc<Workers>>>,
    kinds: HashMap<String, RecordKind>,
    window_params: WindowParams,
    limits: DecodeLimits,
    out_dir: PathBuf,
}

/// The consumer context: rebalance with replay, and revoke with a final commit.
pub struct Ctx {
    shared: OnceLock<Arc<Shared>>,
}

impl ClientContext for Ctx {
    /// librdkafka's statistics (every `statistics.interval.ms`): the consumer lag per
    /// assigned partition.
    fn stats(&self, statistics: rdkafka::Statistics) {
        let Some(shared) = self.shared.get() else {
            return;
        };
        for (topic, t) in &statistics.topics {
            for (partition, p) in &t.partitions {
                // -1 is librdkafka's internal partition; a negative lag is "unknown".
                if *partition >= 0 && p.consumer_lag >= 0 {
                    shared
                        .metrics
                        .consumer_lag
                        .with_label_values(&[topic.as_str(), &partition.to_string()])
                        .set(p.consumer_lag);
                }
            }
        }
    }
}

impl ConsumerContext for Ctx {
    fn rebalance(
        &self,
        base: &BaseConsumer<Self>,
        err: RDKafkaRespErr,
        tpl: &mut TopicPartitionList,
    ) {
        let Some(shared) = self.shared.get() else {
            warn!("rebalance before the pipeline was ready; ignoring");
            return;
        };
        match err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS => {
                shared.on_assign(base, tpl);
                if let Err(e) = base.assign(tpl) {
                    error!(%e, partitions = ?partition_names(tpl), "assign failed");
                }
                shared.health.set_ready(true);
            }
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS => {
                shared.on_revoke(base, tpl);
                if let Err(e) = base.unassign() {
                    error!(%e, "unassign failed");
                }
            }
            other => {
                error!(?other, "rebalance error; dropping the assignment");
                let _ = base.unassign();
            }
        }
    }
}

impl Shared {
    /// Partition assigned: read its committed offset and replay point, sweep outputs the
    /// replay will rewrite, and point the fetch position at the replay point.
    fn on_assign(&self, base: &BaseConsumer<Ctx>, tpl: &mut TopicPartitionList) {
        // Without the committed offsets we cannot tell committed output from uncommitted:
        // then sweep nothing and replay from the reset policy (duplicates, never loss).
        let mut committed = None;
        for attempt in 1..=3 {
            match base.committed_offsets(tpl.clone(), Duration::from_secs(10)) {
                Ok(c) => {
                    committed = Some(c);
                    break;
                }
                Err(e) => error!(
                    %e,
                    attempt,
                    partitions = ?partition_names(tpl),
                    "reading committed offsets failed"
                ),
            }
        }
        let may_sweep = committed.is_some();
        if !may_sweep {
            error!("no committed offsets: replaying from the reset policy without sweeping output");
        }
        let committed = committed.unwrap_or_default();
        self.first_commit_logged.store(false, Ordering::Relaxed);
        let workers = self.workers.lock().expect("workers lock").clone();
        let mut seeks: Vec<(String, i32, i64)> = Vec::new();
        for el in tpl.elements() {
            let (topic, partition) = (el.topic().to_string(), el.partition());
            let Some(&kind) = self.kinds.get(&topic) else {
                continue;
            };
            let (commit, meta) = committed
                .find_partition(&topic, partition)
                .map(|e| (e.offset(), e.metadata().to_string()))
                .unwrap_or((Offset::Invalid, String::new()));
            let commit = match commit {
                Offset::Offset(o) => Some(o),
                _ => None,
            };
            let replay_from = commit.map(|c| decode_metadata(&meta).unwrap_or(c).min(c));
            let swept = if may_sweep {
                let from = commit.unwrap_or(0);
                sink::sweep_partition(&self.out_dir, &topic, partition, from).and_then(|n| {
                    match &self.training {
                        Some(t) => Ok(n + sink::sweep_tree(&t.dir, &topic, partition, from)?),
                        None => Ok(n),
                    }
                })
            } else {
                Ok(0)
            };
            match swept {
                Ok(n) if n > 0 => {
                    self.metrics.files_swept.inc_by(n as u64);
                    info!(topic, partition, swept = n, "swept uncommitted output");
                }
                Ok(_) => {}
                Err(e) => error!(topic, partition, %e, "sweeping uncommitted output failed"),
            }
            info!(topic, partition, committed = ?commit, replay_from = ?replay_from, "partition assigned");
            let key = (topic.clone(), partition);
            self.durable
                .own(key.clone(), commit.unwrap_or(0), replay_from.unwrap_or(0));
            if let Some(r) = replay_from {
                seeks.push((topic.clone(), partition, r));
            }
            let runtime = Box::new(PartitionRuntime {
                messages: self
                    .metrics
                    .messages_consumed
                    .with_label_values(&[topic.as_str()]),
                records: self
                    .metrics
                    .records_consumed
                    .with_label_values(&[topic.as_str(), &partition.to_string()]),
                kind,
                emit_from: commit.unwrap_or(i64::MIN),
                next_offset: replay_from.unwrap_or(0),
                // A trainer scores nothing: its point partitions feed the history only.
                windows: (kind == RecordKind::Point && self.cfg.pipeline.role != Role::Trainer)
                    .then(|| PartitionWindows::new(self.window_params)),
                segment: None,
                live_series: 0,
                topic: topic.clone(),
                partition,
                pending_labels: VecDeque::new(),
            });
            // Queued ahead of the partition's first message (the fetch starts after this
            // callback returns), behind anything of an earlier assignment.
            if let Some(w) = &workers {
                if !w.send_control(w.index(&topic, partition), Work::Assign(key, runtime)) {
                    error!(topic, partition, "a scoring worker has stopped");
                }
            }
        }
        // The fetch starts at the replay point of each partition that has a commit.
        for (t, p, o) in seeks {
            if let Err(e) = tpl.set_partition_offset(&t, p, Offset::Offset(o)) {
                error!(topic = t, partition = p, %e, "setting the replay offset failed");
            }
        }
        self.metrics
            .partitions_assigned
            .set(self.durable.owned() as i64);
    }

    /// Partitions revoked: seal their segments, wait (bounded) for the writer, commit, and
    /// drop their windows. A lost assignment is dropped without committing: another
    /// member may already own the partitions.
    fn on_revoke(&self, base: &BaseConsumer<Ctx>, tpl: &TopicPartitionList) {
        let keys: Vec<PartitionKey> = tpl
            .elements()
            .iter()
            .map(|e| (e.topic().to_string(), e.partition()))
            .collect();
        let lost = base.assignment_lost();
        let timeout = Duration::from_millis(self.cfg.shutdown.revoke_timeout_ms);
        let deadline = Instant::now() + timeout;
        // Each worker first finishes the partitions' queued messages (they are ahead in its
        // queue), then seals and hands over their segments.
        let mut targets = Vec::new();
        if let Some(w) = self.workers.lock().expect("workers lock").clone() {
            let mut by_worker: HashMap<usize, Vec<PartitionKey>> = HashMap::new();
            for k in &keys {
                by_worker
                    .entry(w.index(&k.0, k.1))
                    .or_default()
                    .push(k.clone());
            }
            let mut replies = Vec::new();
            for (i, keys) in by_worker {
                let (reply, rx) = sync_channel(1);
                let work = Work::Revoke {
                    keys,
                    seal: !lost,
                    reply,
                };
                if w.send_control(i, work) {
                    replies.push(rx);
                }
            }
            for rx in replies {
                let left = deadline.saturating_duration_since(Instant::now());
                match rx.recv_timeout(left) {
                    Ok(t) => targets.extend(t),
                    Err(_) => warn!(
                        timeout_ms = timeout.as_millis() as u64,
                        "revoke: a worker did not finish its partitions in time"
                    ),
                }
            }
        }
        if !lost {
            let left = deadline.saturating_duration_since(Instant::now());
            if !self.durable.wait_durable(&targets, left) {
                warn!(
                    timeout_ms = timeout.as_millis() as u64,
                    "revoke: not every segment was durable in time"
                );
            }
            if let Some((tpl, marks)) = self.durable.to_commit(Some(&keys)) {
                match base.commit(&tpl, CommitMode::Sync) {
                    Ok(()) => {
                        self.durable.committed(&marks);
                        self.metrics.commits.inc();
                    }
                    Err(e) => {
                        self.metrics.commit_failures.inc();
                        warn!(%e, "commit on revoke failed");
                    }
                }
            }
        } else {
            warn!("assignment lost: dropping partitions without committing");
        }
        for k in &keys {
            self.durable.disown(k);
        }
        self.metrics
            .partitions_assigned
            .set(self.durable.owned() as i64);
        info!(partitions = keys.len(), lost, "partitions revoked");
    }

    /// Closes a partition's open segment, stamping its replay point.
    fn seal(&self, p: &mut PartitionRuntime) -> Option<Segment> {
        let mut seg = p.segment.take()?;
        let next = seg.last_offset + 1;
        seg.replay_from = p
            .windows
            .as_ref()
            .and_then(|w| w.oldest_offset())
            .into_iter()
            .chain(p.pending_labels.front().map(|l| l.offset))
            .fold(next, i64::min);
        if let Some(w) = p.windows.as_mut() {
            w.evict_idle();
            let ev = std::mem::take(&mut w.events);
            self.metrics
                .series_evicted
                .with_label_values(&["idle"])
                .inc_by(ev.evicted_idle + ev.restarted);
            self.metrics
                .series_evicted
                .with_label_values(&["capacity"])
                .inc_by(ev.evicted_capacity);
        }
        Some(seg)
    }

    /// Hands a sealed segment to its writer, waiting while the writer is behind (the
    /// worker's queue then fills and the consumer pauses).
    fn send_blocking(&self, seg: Segment) {
        let writers = self.writers.lock().expect("writer lock").clone();
        if let Some(w) = writers {
            let (topic, partition, first, last) = (
                seg.topic.clone(),
                seg.partition,
                seg.first_offset,
                seg.last_offset,
            );
            if w.route(&seg).send(seg).is_err() {
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

    #[allow(clippy::too_many_arguments)]
    fn to_prediction(
        &self,
        key: String,
        kind: &str,
        window: Option<(i64, i64)>,
        e: &Explanation,
        model: &ScoringModel,
        src: (&str, i32, i64),
        first_offset: i64,
    ) -> PredictionRecord {
        PredictionRecord {
            key,
            kind: kind.to_string(),
            window_start_ms: window.map(|w| w.0),
            window_end_ms: window.map(|w| w.1),
            label: e.prediction.label.clone(),
            classes: model.model.classes().to_vec(),
            scores: e.prediction.scores.clone(),
            model_kind: model.model.kind_name().to_string(),
            model_version: model.version.clone(),
            top: TopContribution::top(e, self.cfg.window.top_contributions),
            source_topic: src.0.to_string(),
            source_partition: src.1,
            source_offset: src.2,
            first_offset,
            emitted_at_ms: now_ms(),
        }
    }

    /// Processes one message of a worker's partition; returns a segment to hand to the
    /// writer if one was sealed.
    fn process(
        &self,
        parts: &mut HashMap<PartitionKey, Box<PartitionRuntime>>,
        msg: &OwnedMessage,
        consumed_at: Instant,
    ) -> Option<Segment> {
        let topic = msg.topic();
        let partition = msg.partition();
        let offset = msg.offset();
        // A message of a partition we no longer own (fetched before a revoke): skip it.
        let p = parts.get_mut(&(topic.to_string(), partition))?;
        p.messages.inc();
        if offset < p.next_offset {
            // Already processed (a re-fetch after a seek): processing again would double it.
            return None;
        }
        let emit = offset >= p.emit_from;
        if !emit {
            self.metrics.replayed_records.inc();
        }
        let ts = msg.timestamp().to_millis().unwrap_or_else(now_ms);
        let payload = msg.payload().unwrap_or(&[]);
        let mut preds: Vec<PredictionRecord> = Vec::new();
        let mut dead: Vec<DeadLetterRecord> = Vec::new();
        let series_model = self.series_model.load();
        let mut windows_out: Vec<ScoredWindow> = Vec::new();
        let mut examples: Vec<Example> = Vec::new();
        let results = decode(p.kind, payload, &self.limits);
        p.records.inc_by(results.len() as u64);
        for r in results {
            match r {
                // A trainer keeps the raw history only.
                Ok(Record::Point(pt)) if p.windows.is_none() => {
                    if let Some(t) = &self.training {
                        t.history.record(&pt.series_id, pt.ts_ms, pt.value);
                    }
                }
                Ok(Record::Point(pt)) => {
                    let w = p.windows.as_mut().expect("checked above");
                    match w.on_point(&pt, offset, &series_model, emit, &mut windows_out) {
                        PointOutcome::Accepted => {
                            if let Some(t) = &self.training {
                                t.history.record(&pt.series_id, pt.ts_ms, pt.value);
                            }
                        }
                        PointOutcome::Duplicate => self.metrics.duplicates_dropped.inc(),
                        PointOutcome::Late => dead.push(DeadLetterRecord::new(
                            topic,
                            partition,
                            offset,
                            &Rejected {
                                reason: DeadReason::Late,
                                detail: format!("point of series '{}' at ts {} arrived after its window moved on", pt.series_id, pt.ts_ms),
                            },
                            payload,
                            now_ms(),
                        )),
                    }
                }
                Ok(Record::Bag(b)) if self.cfg.pipeline.role == Role::Trainer => {
                    self.keep_bag(&b, (topic, partition, offset), ts, &mut examples);
                }
                Ok(Record::Bag(b)) => match &self.bag_model {
                    Some(m) => {
                        self.keep_bag(&b, (topic, partition, offset), ts, &mut examples);
                        let started = Instant::now();
                        let res = Bag::new(b.dim, b.instances)
                            .map_err(|e| e.to_string())
                            .and_then(|bag| {
                                m.model
                                    .explain(&Sample::Bag(bag))
                                    .map_err(|e| e.to_string())
                            });
                        match res {
                            Ok(e) => {
                                self.metrics
                                    .scoring_seconds
                                    .observe(started.elapsed().as_secs_f64());
                                self.metrics.bags_scored.inc();
                                preds.push(self.to_prediction(
                                    b.bag_id,
                                    "bag",
                                    None,
                                    &e,
                                    m,
                                    (topic, partition, offset),
                                    offset,
                                ));
                            }
                            Err(detail) => dead.push(DeadLetterRecord::new(
                                topic,
                                partition,
                                offset,
                                &Rejected {
                                    reason: DeadReason::Dimension,
                                    detail,
                                },
                                payload,
                                now_ms(),
                            )),
                        }
                    }
                    None => dead.push(DeadLetterRecord::new(
                        topic,
                        partition,
                        offset,
                        &Rejected {
                            reason: DeadReason::NoModel,
                            detail: "no bag model is configured (model.bags_path)".into(),
                        },
                        payload,
                        now_ms(),
                    )),
                },
                // Labels join their segment (or bag) into a training example; one whose
                // points are still on their way waits, holding the replay point back.
                Ok(Record::Label(l)) => {
                    if self.training.is_some() {
                        p.pending_labels.push_back(PendingLabel {
                            offset,
                            label: l,
                            labeled_at_ms: ts,
                            since: Instant::now(),
                            raw: payload.to_vec(),
                        });
                    }
                }
                Err(rej) => dead.push(DeadLetterRecord::new(
                    topic,
                    partition,
                    offset,
                    &rej,
                    payload,
                    now_ms(),
                )),
            }
        }
        for w in windows_out {
            self.metrics.windows_scored.inc();
            let first = w.first_offset;
            preds.push(self.to_prediction(
                w.series_id,
                "window",
                Some((w.start_ms, w.end_ms)),
                &w.explanation,
                &series_model,
                (topic, partition, offset),
                first,
            ));
        }
        p.next_offset = offset + 1;
        self.resolve_labels(p, &mut examples, &mut dead);
        if !emit {
            // Examples are written on a replay too: the store keeps one per key, and a label
            // that was waiting at the crash is only joined now.
            if !examples.is_empty() {
                let seg = p
                    .segment
                    .get_or_insert_with(|| Segment::new(topic, partition, offset, ts));
                seg.last_offset = offset;
                seg.examples.extend(examples);
            }
            return None;
        }
        for d in &dead {
            self.metrics
                .dead_letters
                .with_label_values(&[d.reason.as_str()])
                .inc();
        }
        let seg = p
            .segment
            .get_or_insert_with(|| Segment::new(topic, partition, offset, ts));
        seg.last_offset = offset;
        seg.approx_bytes += preds.len() * 256
            + dead
                .iter()
                .map(|d| 128 + d.raw_prefix.len() + d.detail.len())
                .sum::<usize>();
        seg.consumed_at
            .extend(std::iter::repeat_n(consumed_at, preds.len()));
        seg.predictions.extend(preds);
        seg.dead_letters.extend(dead);
        seg.approx_bytes += examples
            .iter()
            .map(|e| 64 + 8 * e.values.len())
            .sum::<usize>();
        seg.examples.extend(examples);
        if seg.rows() >= self.cfg.output.roll_rows || seg.approx_bytes >= self.cfg.output.roll_bytes
        {
            return self.seal(p);
        }
        None
    }

    /// Keeps a bag for labels that name it, and its inline label as an example.
    fn keep_bag(
        &self,
        b: &super::record::BagRecord,
        src: (&str, i32, i64),
        labeled_at_ms: i64,
        examples: &mut Vec<Example>,
    ) {
        let Some(t) = &self.training else {
            return;
        };
        t.bags.insert(&b.bag_id, b.dim, &b.instances);
        if let Some(label) = &b.label {
            examples.push(Example {
                key: b.bag_id.clone(),
                segment: None,
                label: label.clone(),
                dim: b.dim,
                values: b.instances.clone(),
                source_topic: src.0.to_string(),
                source_partition: src.1,
                source_offset: src.2,
                labeled_at_ms,
            });
        }
    }

    /// Joins the partition's waiting labels that can join now, in order; a label that waited
    /// longer than `training.label_wait_ms` (or can never join) becomes a dead letter.
    /// Stops at the first that must keep waiting, so the replay point stays exact.
    fn resolve_labels(
        &self,
        p: &mut PartitionRuntime,
        examples: &mut Vec<Example>,
        dead: &mut Vec<DeadLetterRecord>,
    ) {
        let Some(t) = &self.training else {
            return;
        };
        let wait = Duration::from_millis(self.cfg.training.label_wait_ms);
        while let Some(l) = p.pending_labels.front() {
            let outcome = match self.join_label(t, l) {
                LabelJoin::Wait if l.since.elapsed() < wait => break,
                LabelJoin::Wait => LabelJoin::Dead(Rejected {
                    reason: DeadReason::Unjoined,
                    detail: format!(
                        "the labeled segment's points did not all arrive within training.label_wait_ms = {} ms",
                        wait.as_millis()
                    ),
                }),
                other => other,
            };
            let l = p.pending_labels.pop_front().expect("front seen");
            match outcome {
                LabelJoin::Joined(mut e) => {
                    e.source_topic = p.topic.clone();
                    e.source_partition = p.partition;
                    examples.push(e);
                }
                LabelJoin::Dead(rej) => {
                    if l.offset >= p.emit_from {
                        dead.push(DeadLetterRecord::new(
                            &p.topic,
                            p.partition,
                            l.offset,
                            &rej,
                            &l.raw,
                            now_ms(),
                        ));
                    }
                }
                LabelJoin::Wait => unreachable!("a waiting label stays queued"),
            }
        }
    }

    fn join_label(&self, t: &TrainingRuntime, l: &PendingLabel) -> LabelJoin {
        let (key, label, segment) = match &l.label {
            LabelRecord::Segment {
                series_id,
                start_ms,
                end_ms,
                label,
            } => (series_id, label, Some((*start_ms, *end_ms))),
            LabelRecord::Bag { bag_id, label } => (bag_id, label, None),
        };
        if self.cfg.training.freeze_classes {
            let model = match segment {
                Some(_) => Some(self.series_model.load_full()),
                None => self.bag_model.clone(),
            };
            if let Some(m) = model {
                if !m.model.classes().iter().any(|c| c == label) {
                    return LabelJoin::Dead(Rejected {
                        reason: DeadReason::UnknownClass,
                        detail: format!(
                            "class '{label}' is not one of the model's classes {:?} and training.freeze_classes is set",
                            m.model.classes()
                        ),
                    });
                }
            }
        }
        let (dim, values) = match segment {
            Some((start, end)) => match t.history.segment(key, start, end) {
                SegmentJoin::Ready(v) => (1, v),
                SegmentJoin::NotYet => return LabelJoin::Wait,
                SegmentJoin::Gone(detail) => {
                    return LabelJoin::Dead(Rejected {
                        reason: DeadReason::Unjoined,
                        detail,
                    })
                }
            },
            None => match t.bags.get(key) {
                Some(b) => b,
                None => {
                    return LabelJoin::Dead(Rejected {
                        reason: DeadReason::Unjoined,
                        detail: format!(
                            "bag '{key}' is not among the last {} bags (training.bag_cache)",
                            self.cfg.training.bag_cache
                        ),
                    })
                }
            },
        };
        LabelJoin::Joined(Example {
            key: key.clone(),
            segment,
            label: label.clone(),
            dim,
            values,
            source_topic: String::new(),
            source_partition: 0,
            source_offset: l.offset,
            labeled_at_ms: l.labeled_at_ms,
        })
    }

    /// Retries the waiting labels of partitions with an open segment (on the worker's
    /// tick); what they produce goes to that segment. Without one they wait for the next
    /// message: a segment of no offsets would have no name of its own.
    fn resolve_waiting(&self, parts: &mut HashMap<PartitionKey, Box<PartitionRuntime>>) {
        for p in parts.values_mut() {
            if p.pending_labels.is_empty() || p.segment.is_none() {
                continue;
            }
            let (mut examples, mut dead) = (Vec::new(), Vec::new());
            self.resolve_labels(p, &mut examples, &mut dead);
            if examples.is_empty() && dead.is_empty() {
                continue;
            }
            for d in &dead {
                self.metrics
                    .dead_letters
                    .with_label_values(&[d.reason.as_str()])
                    .inc();
            }
            let seg = p.segment.as_mut().expect("checked above");
            seg.dead_letters.extend(dead);
            seg.examples.extend(examples);
        }
    }

    /// Seals segments older than the roll age (also empty ones, so their offsets commit),
    /// or all of them, and refreshes the live-series gauge by this worker's change.
    fn seal_aged(
        &self,
        parts: &mut HashMap<PartitionKey, Box<PartitionRuntime>>,
        all: bool,
    ) -> Vec<Segment> {
        let age = Duration::from_millis(self.cfg.output.roll_age_ms);
        let mut out = Vec::new();
        for p in parts.values_mut() {
            if p.segment
                .as_ref()
                .is_some_and(|s| all || s.opened_at.elapsed() >= age)
            {
                if let Some(seg) = self.seal(p) {
                    out.push(seg);
                }
            }
            let live = p.windows.as_ref().map_or(0, |w| w.live_series() as i64);
            self.metrics.live_series.add(live - p.live_series);
            p.live_series = live;
        }
        out
    }
}

/// How often open segments are checked against the roll age.
fn seal_check_interval(cfg: &Config) -> Duration {
    Duration::from_millis((cfg.output.roll_age_ms / 4).clamp(10, 250))
}

/// A scoring worker: owns its partitions' windows and open segments, processes their
/// messages in queue (= offset) order, seals by age, and on disconnect seals everything and
/// returns each partition's next offset for the final commit.
fn worker_loop(
    shared: Arc<Shared>,
    mut rx: tokio::sync::mpsc::Receiver<Work>,
) -> Vec<(PartitionKey, i64)> {
    let mut parts: HashMap<PartitionKey, Box<PartitionRuntime>> = HashMap::new();
    let tick = seal_check_interval(&shared.cfg);
    let mut last_tick = Instant::now();
    while let Some(work) = rx.blocking_recv() {
        match work {
            Work::Message { msg, consumed_at } => {
                if let Some(seg) = shared.process(&mut parts, &msg, consumed_at) {
                    shared.send_blocking(seg);
                }
            }
            Work::Assign(key, runtime) => {
                parts.insert(key, runtime);
            }
            Work::Revoke { keys, seal, reply } => {
                let mut targets = Vec::new();
                for k in keys {
                    let Some(mut p) = parts.remove(&k) else {
                        continue;
                    };
                    shared.metrics.live_series.sub(p.live_series);
                    if seal {
                        if let Some(seg) = shared.seal(&mut p) {
                            shared.send_blocking(seg);
                        }
                        targets.push((k, p.next_offset));
                    }
                }
                let _ = reply.send(targets);
            }
            Work::Tick => shared.resolve_waiting(&mut parts),
        }
        if last_tick.elapsed() >= tick {
            last_tick = Instant::now();
            for seg in shared.seal_aged(&mut parts, false) {
                shared.send_blocking(seg);
            }
        }
    }
    for seg in shared.seal_aged(&mut parts, true) {
        shared.send_blocking(seg);
    }
    parts
        .into_iter()
        .map(|(k, p)| {
            shared.metrics.live_series.sub(p.live_series);
            (k, p.next_offset)
        })
        .collect()
}

/// The writer thread: makes each segment durable in every sink, in order, then marks its
/// offsets durable. A failing write is retried (the consumer backs up behind it) rather
/// than skipped, since skipping would lose output.
fn writer_loop(
    shared: Arc<Shared>,
    rx: Receiver<Segment>,
    producer: Option<FutureProducer>,
    rt: tokio::runtime::Handle,
) {
    for seg in rx {
        let key = (seg.topic.clone(), seg.partition);
        if !shared.durable.is_owned(&key) {
            warn!(
                topic = seg.topic,
                partition = seg.partition,
                "dropping a segment of a partition no longer owned"
            );
            continue;
        }
        let mut attempt = 0u32;
        loop {
            let res = (|| -> Result<(), (&'static str, String)> {
                let w = sink::parquet::write_segment(&shared.out_dir, &seg)
                    .map_err(|e| ("parquet", format!("parquet: {e}")))?;
                shared
                    .metrics
                    .files_written
                    .with_label_values(&["parquet"])
                    .inc_by(w.prediction_files);
                shared
                    .metrics
                    .bytes_written
                    .with_label_values(&["parquet"])
                    .inc_by(w.prediction_bytes);
                shared
                    .metrics
                    .files_written
                    .with_label_values(&["dlq"])
                    .inc_by(w.dead_letter_files);
                shared
                    .metrics
                    .bytes_written
                    .with_label_values(&["dlq"])
                    .inc_by(w.dead_letter_bytes);
                if let (Some(t), false) = (&shared.training, seg.examples.is_empty()) {
                    let b = super::training::write_examples(
                        &t.dir,
                        &seg.date_folder(),
                        &seg.file_stem(),
                        &seg.examples,
                    )
                    .map_err(|e| ("training", format!("training store: {e}")))?;
                    shared
                        .metrics
                        .files_written
                        .with_label_values(&["training"])
                        .inc();
                    shared
                        .metrics
                        .bytes_written
                        .with_label_values(&["training"])
                        .inc_by(b);
                }
                if shared.cfg.output.arrow_ipc {
                    let b = sink::ipc::write_segment_ipc(&shared.out_dir, &seg)
                        .map_err(|e| ("ipc", format!("arrow ipc: {e}")))?;
                    if b > 0 {
                        shared
                            .metrics
                            .files_written
                            .with_label_values(&["ipc"])
                            .inc();
                        shared
                            .metrics
                            .bytes_written
                            .with_label_values(&["ipc"])
                            .inc_by(b);
                    }
                }
                if let Some(p) = &producer {
                    rt.block_on(sink::kafka::produce_segment(
                        p,
                        &shared.cfg.output.kafka_topic,
                        &shared.cfg.output.dead_letter_topic,
                        &seg,
                    ))
                    .map_err(|e| ("kafka", e))?;
                }
                Ok(())
            })();
            match res {
                Ok(()) => {
                    if attempt > 0 {
                        shared.health.set_sink_failing(false);
                    }
                    break;
                }
                Err((sink, e)) => {
                    shared.metrics.sink_errors.with_label_values(&[sink]).inc();
                    shared.health.set_sink_failing(true);
                    attempt += 1;
                    error!(
                        topic = seg.topic,
                        partition = seg.partition,
                        attempt,
                        error = e,
                        "writing a segment failed; retrying"
                    );
                    std::thread::sleep(Duration::from_millis(
                        (100 * u64::from(attempt)).min(5_000),
                    ));
                }
            }
        }
        shared
            .metrics
            .predictions_written
            .inc_by(seg.predictions.len() as u64);
        let rows = &shared.metrics.rows_written;
        rows.with_label_values(&["parquet"])
            .inc_by(seg.predictions.len() as u64);
        rows.with_label_values(&["dlq"])
            .inc_by(seg.dead_letters.len() as u64);
        if shared.training.is_some() {
            rows.with_label_values(&["training"])
                .inc_by(seg.examples.len() as u64);
        }
        if shared.cfg.output.arrow_ipc {
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
            shared
                .metrics
                .predictions
                .with_label_values(&[label, version])
                .inc_by(n);
        }
        for t in &seg.consumed_at {
            shared
                .metrics
                .consume_to_durable_seconds
                .observe(t.elapsed().as_secs_f64());
        }
        if let Some(t) = &shared.training {
            t.examples_durable.fetch_add(
                seg.examples.len() as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        shared
            .durable
            .mark_durable(&key, seg.last_offset + 1, seg.replay_from);
    }
}

/// A producer's config: the bootstrap and every `kafka.properties` entry that is not a
/// consumer setting, with acks from all in-sync replicas.
pub fn producer_config(cfg: &Config, bootstrap: &str) -> ClientConfig {
    let mut pc = ClientConfig::new();
    pc.set("bootstrap.servers", bootstrap);
    for (k, v) in &cfg.kafka.properties {
        if !k.starts_with("group.") && !k.starts_with("session.") && !k.starts_with("enable.auto") {
            pc.set(k, v);
        }
    }
    pc.set("acks", "all");
    pc
}

/// Builds the consumer from the config (every `kafka.properties` entry passed through).
fn consumer_config(cfg: &Config, bootstrap: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("group.id", cfg.group_id())
        .set("auto.offset.reset", "earliest")
        .set("enable.partition.eof", "false")
        // Consumer lag per partition comes from librdkafka's statistics.
        .set("statistics.interval.ms", "5000")
        // librdkafka's default (1000 ms) parks a partition's fetcher for a whole second
        // whenever its local queue passes queued.min.messages, which a consumer that keeps
        // up drains in milliseconds and then sits idle: 160k -> 440k points/s in
        // `milstream bench-stream`. Overridable like every property below.
        .set("fetch.queue.backoff.ms", "20");
    for (k, v) in &cfg.kafka.properties {
        c.set(k, v);
    }
    // Commits are ours: only after every sink made the outputs durable.
    c.set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false");
    c
}

/// Runs the pipeline until `shutdown` resolves: consume, score, write, commit; then seal,
/// flush and commit within the grace period.
pub async fn run_pipeline(
    cfg: Config,
    bootstrap: String,
    series_model: Arc<ScoringModel>,
    bag_model: Option<Arc<ScoringModel>>,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let mut kinds = HashMap::new();
    kinds.insert(cfg.kafka.points_topic.clone(), RecordKind::Point);
    if !cfg.kafka.bags_topic.is_empty() {
        kinds.insert(cfg.kafka.bags_topic.clone(), RecordKind::Bag);
    }
    // A scorer leaves labels to the trainers.
    if !cfg.kafka.labels_topic.is_empty() && cfg.pipeline.role != Role::Scorer {
        kinds.insert(cfg.kafka.labels_topic.clone(), RecordKind::Label);
    }
    for t in kinds.keys() {
        metrics.register_topic(t);
    }
    let window_params = WindowParams {
        points: cfg.window.points,
        duration_ms: cfg.window.duration_ms,
        hop_ms: cfg.window.hop_ms,
        lateness_ms: cfg.window.lateness_ms,
        idle_timeout_ms: cfg.window.idle_timeout_ms,
        max_series: cfg.window.max_series_per_partition,
    };
    let limits = DecodeLimits {
        max_message_bytes: cfg.limits.max_message_bytes,
        max_bag_instances: cfg.limits.max_bag_instances,
    };
    let out_dir = cfg.output.dir.clone();
    std::fs::create_dir_all(&out_dir)
        .map_err(|e| anyhow::anyhow!("creating output folder {}: {e}", out_dir.display()))?;
    let training = if cfg.training.enabled && cfg.pipeline.role != Role::Scorer {
        std::fs::create_dir_all(&cfg.training.dir).map_err(|e| {
            anyhow::anyhow!(
                "creating the training store {}: {e}",
                cfg.training.dir.display()
            )
        })?;
        Some(Arc::new(TrainingRuntime {
            history: SeriesHistory::new(cfg.training.history_ms, cfg.training.history_points),
            bags: BagCache::new(cfg.training.bag_cache),
            dir: cfg.training.dir.clone(),
            examples_durable: std::sync::atomic::AtomicU64::new(0),
        }))
    } else {
        None
    };
    metrics.set_model_version(&series_model.version, series_model.model.kind().name());
    let shared = Arc::new(Shared {
        metrics: metrics.clone(),
        health: health.clone(),
        series_model: ArcSwap::new(series_model),
        bag_model,
        durable: DurableOffsets::default(),
        training: training.clone(),
        first_commit_logged: AtomicBool::new(false),
        bootstrap: bootstrap.clone(),
        writers: Mutex::new(None),
        workers: Mutex::new(None),
        kinds: kinds.clone(),
        window_params,
        limits,
        out_dir,
        cfg: cfg.clone(),
    });
    let producer: Option<FutureProducer> =
        if cfg.output.kafka_topic.is_empty() && cfg.output.dead_letter_topic.is_empty() {
            None
        } else {
            Some(producer_config(&cfg, &bootstrap).create()?)
        };
    let rt = tokio::runtime::Handle::current();
    let mut txs = Vec::new();
    let mut writer_threads = Vec::new();
    let per_writer = cfg.output.max_pending_files.div_ceil(WRITER_THREADS).max(1);
    for i in 0..WRITER_THREADS {
        let (tx, rx) = sync_channel::<Segment>(per_writer);
        let (shared, producer, rt) = (shared.clone(), producer.clone(), rt.clone());
        writer_threads.push(
            std::thread::Builder::new()
                .name(format!("milstream-writer-{i}"))
                .spawn(move || writer_loop(shared, rx, producer, rt))?,
        );
        txs.push(tx);
    }
    let writers = Arc::new(Writers { txs });
    *shared.writers.lock().expect("writer lock") = Some(writers.clone());

    let n_workers = cfg.pipeline.worker_count();
    let mut work_txs = Vec::new();
    let mut worker_threads = Vec::new();
    for i in 0..n_workers {
        let (tx, rx) = tokio::sync::mpsc::channel::<Work>(cfg.pipeline.queue_messages);
        let shared = shared.clone();
        worker_threads.push(
            std::thread::Builder::new()
                .name(format!("milstream-score-{i}"))
                .spawn(move || worker_loop(shared, rx))?,
        );
        work_txs.push(tx);
    }
    let workers = Arc::new(Workers { txs: work_txs });
    *shared.workers.lock().expect("workers lock") = Some(workers.clone());
    // The age check of idle workers.
    let ticker = {
        let txs = workers.txs.clone();
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

    let trainer = super::trainer::spawn(shared.clone())?;
    let follower = super::models_topic::follow(shared.clone())?;
    let ctx = Ctx {
        shared: OnceLock::new(),
    };
    let consumer: StreamConsumer<Ctx> =
        consumer_config(&cfg, &bootstrap).create_with_context(ctx)?;
    let _ = consumer.context().shared.set(shared.clone());
    let consumer = Arc::new(consumer);
    let topics: Vec<&str> = kinds.keys().map(String::as_str).collect();
    consumer.subscribe(&topics)?;
    info!(bootstrap, topics = ?topics, group = cfg.kafka.group_id, "consuming");

    // The committer: commits durable offsets every interval.
    let committer = {
        let (shared, consumer) = (shared.clone(), consumer.clone());
        let mut stop = shutdown.clone();
        let every = Duration::from_millis(cfg.commit.interval_ms.max(10));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stop.changed() => break,
                }
                commit_durable(&shared, &consumer).await;
            }
        })
    };

    loop {
        tokio::select! {
            biased;
            _ = shutdown.changed() => break,
            m = consumer.recv() => match m {
                Ok(msg) => dispatch(&shared, &consumer, &workers, msg.detach()).await,
                Err(e) => warn!(%e, "consumer error"),
            },
        }
    }

    // Shutdown: not ready, stop consuming, let the workers finish their queues and seal
    // everything, let the writers finish, commit.
    health.set_ready(false);
    info!("shutting down: finishing queued messages and sealing open segments");
    let grace = Duration::from_millis(cfg.shutdown.grace_ms);
    let deadline = Instant::now() + grace;
    let _ = consumer.pause(&consumer.assignment().unwrap_or_default());
    *shared.workers.lock().expect("workers lock") = None;
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
        let shared = shared.clone();
        let left = deadline.saturating_duration_since(Instant::now());
        let ok = tokio::task::spawn_blocking(move || shared.durable.wait_durable(&targets, left))
            .await
            .unwrap_or(false);
        if !ok {
            warn!("grace period over before every segment was durable; uncommitted output will be replayed");
        }
    }
    commit_durable(&shared, &consumer).await;
    committer.abort();
    if let Some(f) = follower {
        let _ = tokio::task::spawn_blocking(move || f.stop()).await;
    }
    if let Some(t) = trainer {
        // A run in progress finishes first; the store and registry stay consistent.
        let _ = tokio::task::spawn_blocking(move || t.stop()).await;
    }
    *shared.writers.lock().expect("writer lock") = None;
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

/// Queues a message for its partition's worker; when that worker is behind, pauses every
/// assigned partition until the message is accepted (backpressure instead of memory growth).
async fn dispatch(
    shared: &Arc<Shared>,
    consumer: &Arc<StreamConsumer<Ctx>>,
    workers: &Arc<Workers>,
    msg: OwnedMessage,
) {
    use tokio::sync::mpsc::error::TrySendError as E;
    let tx = &workers.txs[workers.index(msg.topic(), msg.partition())];
    let work = Work::Message {
        msg,
        consumed_at: Instant::now(),
    };
    let work = match tx.try_send(work) {
        Ok(()) => return,
        Err(E::Full(w)) => w,
        Err(E::Closed(w)) => return worker_stopped(&w),
    };
    // A full queue for a moment is normal at full speed: wait for room. Only a worker that
    // stays behind (a slow sink) gets the partitions paused, since a pause drops
    // librdkafka's prefetched messages and a resume fetches them again.
    let permit = match tokio::time::timeout(PAUSE_AFTER, tx.reserve()).await {
        Ok(p) => p,
        Err(_) => {
            let assignment = consumer.assignment().unwrap_or_default();
            let _ = consumer.pause(&assignment);
            shared.metrics.partition_pauses.inc();
            let p = tx.reserve().await;
            let _ = consumer.resume(&assignment);
            p
        }
    };
    match permit {
        Ok(p) => p.send(work),
        Err(_) => worker_stopped(&work),
    }
}

/// Logs a message that could not be queued (cold path: the worker is gone).
fn worker_stopped(work: &Work) {
    if let Work::Message { msg, .. } = work {
        error!(
            topic = msg.topic(),
            partition = msg.partition(),
            offset = msg.offset(),
            "a scoring worker has stopped"
        );
    }
}

/// How long the consumer waits on a full worker queue before pausing its partitions.
const PAUSE_AFTER: Duration = Duration::from_millis(100);

async fn commit_durable(shared: &Arc<Shared>, consumer: &Arc<StreamConsumer<Ctx>>) {
    let Some((tpl, marks)) = shared.durable.to_commit(None) else {
        return;
    };
    let c = consumer.clone();
    let res: KafkaResult<()> =
        tokio::task::spawn_blocking(move || c.commit(&tpl, CommitMode::Sync))
            .await
            .unwrap_or_else(|e| {
                Err(rdkafka::error::KafkaError::Canceled)
                    .inspect_err(|_| error!(%e, "commit task failed"))
            });
    match res {
        Ok(()) => {
            if !shared.first_commit_logged.swap(true, Ordering::Relaxed) {
                info!(
                    partitions = marks.len(),
                    "first offsets committed since the assignment"
                );
            }
            shared.durable.committed(&marks);
            shared.metrics.commits.inc();
        }
        Err(e) => {
            shared.metrics.commit_failures.inc();
            warn!(%e, "commit failed; will retry");
        }
    }
}
