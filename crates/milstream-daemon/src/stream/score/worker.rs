//! The scoring workers: one partition's processing, decode -> window -> score -> segment.
//!
//! In: [`Work`] on the worker's queue, in partition (= offset) order: messages (topic,
//! partition, offset, timestamp, payload; no Kafka types), assignments with the state to
//! start from, revocations, and ticks. Out: sealed [`Segment`]s for the writers, and on a
//! revoke or at shutdown each partition's next offset. Owns: its partitions' windows, open
//! segments and waiting labels ([`PartitionState`]); nothing else writes them.
//!
//! A partition's outputs accumulate in its open segment, which the worker seals (rows,
//! bytes, age, revoke, shutdown) with the replay point a new owner must start from: the
//! oldest offset still inside a live window or a waiting label. Messages below
//! `emit_from` (committed before) only rebuild state.

use std::collections::HashMap;
use std::sync::mpsc::SyncSender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::Guard;

use crate::config::{Config, InputFormat, ModelInput, Role};
use crate::metrics::Metrics;
use crate::mil::{Bag, Sample};
use crate::stream::ingest::commit::Generation;
use crate::stream::ingest::position::{PartitionKey, Position};
use crate::stream::ingest::record::{
    decode, reject_future, BagRecord, DeadLetterRecord, DeadReason, DecodeLimits, Point,
    PredictionRecord, Record, RecordKind, Rejected,
};
use crate::stream::ingest::registry::prefetch::format_of;
use crate::stream::ingest::registry::SchemaRegistry;
use crate::stream::ingest::{avro, protobuf};
use crate::stream::join::labels::{raw_prefix, LabelJoiner, LabelSource, WaitingLabels};
use crate::stream::output::arrow::examples::Example;
use crate::stream::output::sink::roll::FileSizes;
use crate::stream::output::sink::Segment;
use crate::stream::quality::label_free::ServedWatch;
use crate::stream::quality::{PartitionQuality, Quality, QualityRows};
use crate::stream::score::models::{Models, ServedModel};
use crate::stream::score::window::{PartitionWindows, PointOutcome, ScoredWindow, ScoringModel};
use crate::stream::view::feed::ViewFeed;

mod panicked;

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// A consumed message, as a worker sees it.
#[derive(Debug, Clone)]
pub struct Message {
    /// Shared by the messages of a topic (the consumer interns it): no allocation per message.
    pub topic: Arc<str>,
    pub partition: i32,
    pub offset: i64,
    /// The Kafka timestamp (the time it was consumed, for a message without one): names
    /// the date folder of the segment it opens, and is a label's `labeled_at`.
    pub timestamp_ms: i64,
    pub payload: Vec<u8>,
}

/// What a scoring worker is told, in partition order.
pub enum Work {
    /// Messages of this worker's partitions, in the order they were received: whatever the
    /// consumer had ready, up to [`MAX_BATCH`], so one wake-up serves many messages.
    Messages {
        msgs: Vec<Message>,
        /// When the first of them was received.
        consumed_at: Instant,
        /// Their payload bytes' share of the worker's `pipeline.queue_bytes`, given back
        /// when the batch is dropped after processing.
        room: tokio::sync::OwnedSemaphorePermit,
    },
    /// A partition is now ours; its messages follow.
    Assign(PartitionKey, Box<PartitionState>),
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

/// Per assigned partition.
pub struct PartitionState {
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
    /// Labels waiting for their segment's points. They hold the partition's replay point
    /// back, so a crash replays them.
    waiting_labels: WaitingLabels,
    /// A label partition's live figures per model (accuracy window, errors' detector):
    /// restored on assignment, checkpointed into each `evaluations` file (`quality.rs`).
    pub quality: PartitionQuality,
    /// A scored partition's label-free detectors (`drift.margin`, `drift.scores`):
    /// restored on assignment, checkpointed into each `predictions` file (`label_free.rs`).
    pub served: Option<ServedWatch>,
    /// The ownership this state belongs to: stamped on every segment it seals.
    pub generation: Generation,
}

impl PartitionState {
    /// A partition's state before its first message: outputs from `emit_from` on, the next
    /// message expected at `next_offset` (the replay point), `windows` for point
    /// partitions that are scored.
    pub fn new(
        metrics: &Metrics,
        topic: &str,
        partition: i32,
        kind: RecordKind,
        emit_from: i64,
        next_offset: i64,
        windows: Option<PartitionWindows>,
    ) -> Self {
        Self {
            messages: metrics.messages_consumed.with_label_values(&[topic]),
            records: metrics
                .records_consumed
                .with_label_values(&[topic, &partition.to_string()]),
            kind,
            emit_from,
            next_offset,
            windows,
            segment: None,
            live_series: 0,
            topic: topic.to_string(),
            partition,
            waiting_labels: WaitingLabels::default(),
            quality: PartitionQuality::default(),
            served: None,
            generation: 0,
        }
    }
}

/// What every worker reads and none owns.
pub struct WorkerEnv {
    pub cfg: Config,
    pub metrics: Arc<Metrics>,
    /// Every model in service and which ids each takes.
    pub models: Arc<Models>,
    /// Label joins and kept history, when training is on.
    pub labels: Option<LabelJoiner>,
    /// Live accuracy and drift detection (`drift.evaluate`).
    pub quality: Option<Arc<Quality>>,
    pub limits: DecodeLimits,
    /// The writers' measurements, which say where a segment rolls for `roll_bytes` of files.
    pub file_sizes: Arc<FileSizes>,
    /// The live view's feed (`view.enabled` with `http.listen`): each message's predictions.
    pub view: Option<Arc<ViewFeed>>,
    /// The schemas of Avro and Protobuf input (`[input]`): None when every topic is JSON.
    pub registry: Option<Arc<SchemaRegistry>>,
}

impl WorkerEnv {
    /// Decodes a message of a `kind` topic in the topic's format (`[input]`).
    pub fn decode(&self, kind: RecordKind, payload: &[u8]) -> Vec<Result<Record, Rejected>> {
        match (&self.registry, format_of(&self.cfg, kind)) {
            (Some(registry), InputFormat::Avro) => {
                avro::decode(kind, payload, &self.limits, registry)
            }
            (Some(registry), InputFormat::Protobuf) => {
                protobuf::decode(kind, payload, &self.limits, registry)
            }
            _ => decode(kind, payload, &self.limits),
        }
    }

    /// A new segment from `offset`, rolling where the files measured so far predict
    /// `output.roll_bytes` of Parquet.
    fn open_segment(&self, topic: &str, partition: i32, offset: i64, event_ms: i64) -> Segment {
        let mut s = Segment::new(topic, partition, offset, event_ms);
        s.roll_at_bytes = self.file_sizes.roll_at(topic, self.cfg.output.roll_bytes);
        s
    }

    /// Closes a partition's open segment, stamping its replay point.
    fn seal(&self, p: &mut PartitionState) -> Option<Segment> {
        let mut seg = p.segment.take()?;
        seg.generation = p.generation;
        let next = seg.last_offset + 1;
        // Idle series go first: the replay point is what the live series need, so a
        // series whose points are years old pins no segment's replay point.
        if let Some(w) = p.windows.as_mut() {
            w.evict_idle();
        }
        seg.replay_from = p
            .windows
            .as_ref()
            .and_then(|w| w.oldest_offset())
            .into_iter()
            .chain(p.waiting_labels.oldest_offset())
            .fold(next, i64::min);
        // The partition's figures after the segment's last graded label: the checkpoint a
        // new owner restores from (every graded row of the partition goes into its open
        // segment, so nothing graded after that label is missing from it).
        if let Some(last) = seg.quality.evaluations.last() {
            seg.quality.checkpoint = Some((last.source_offset, p.quality.checkpoint()));
        }
        // Likewise the label-free detectors after the segment's last prediction.
        if !seg.predictions.is_empty() {
            seg.served_checkpoint = p.served.as_ref().map(ServedWatch::checkpoint);
        }
        if let Some(w) = p.windows.as_mut() {
            let ev = std::mem::take(&mut w.events);
            let evicted = &self.metrics.series_evicted;
            evicted
                .with_label_values(&["idle"])
                .inc_by(ev.evicted_idle + ev.restarted);
            evicted
                .with_label_values(&["capacity"])
                .inc_by(ev.evicted_capacity);
        }
        Some(seg)
    }
}

/// One scoring worker's partitions.
pub struct Worker {
    env: Arc<WorkerEnv>,
    parts: HashMap<PartitionKey, Box<PartitionState>>,
    /// This worker's share of `output.max_open_bytes`, computed once: the per-message path
    /// must not ask the system how many cores it has (`available_parallelism` reads the
    /// cgroup files on every call, which cost 4-5x the throughput of one point per message).
    open_budget: usize,
    /// The key of the message being processed, reused so a lookup allocates nothing.
    key: PartitionKey,
    /// The points of one series for one model that came in a row in the message being
    /// processed (an array's), windowed together; reused.
    run: SeriesRun,
}

/// A run of points of one series for one model, and their outcomes once windowed. The
/// buffers are reused from message to message.
#[derive(Default)]
struct SeriesRun {
    points: Vec<Point>,
    outcomes: Vec<PointOutcome>,
}

/// The message being processed, as its records see it.
struct Incoming<'m> {
    msg: &'m Message,
    at: Position<'m>,
    /// Past the partition's committed outputs (below, the message only rebuilds state).
    emit: bool,
    /// Its Kafka timestamp, never past the clock: no event or label time may be later.
    arrival: i64,
}

impl Incoming<'_> {
    fn dead_letter(&self, rej: &Rejected) -> DeadLetterRecord {
        let msg = self.msg;
        DeadLetterRecord::new(
            &msg.topic,
            msg.partition,
            msg.offset,
            rej,
            &msg.payload,
            now_ms(),
        )
    }
}

impl Worker {
    /// A worker of a pool of `pipeline.worker_count()` workers (the tests').
    #[cfg(test)]
    pub fn new(env: Arc<WorkerEnv>) -> Self {
        let workers = env.cfg.pipeline.worker_count();
        Self::in_pool(env, workers)
    }

    /// A worker of a pool of `workers`: its share of `max_open_bytes` is fixed here.
    pub fn in_pool(env: Arc<WorkerEnv>, workers: usize) -> Self {
        let open_budget = env.cfg.output.max_open_bytes / workers.max(1);
        Self {
            env,
            parts: HashMap::new(),
            open_budget,
            key: (String::new(), 0),
            run: SeriesRun::default(),
        }
    }

    pub fn assign(&mut self, key: PartitionKey, state: Box<PartitionState>) {
        self.parts.insert(key, state);
    }

    /// Whether the worker holds state for `key`.
    #[cfg(test)]
    pub fn owns(&self, key: &PartitionKey) -> bool {
        self.parts.contains_key(key)
    }

    /// Drops the partitions' state; with `seal`, seals their open segments first. Returns the
    /// sealed segments and, with `seal`, each partition's next offset.
    pub fn revoke(
        &mut self,
        keys: Vec<PartitionKey>,
        seal: bool,
    ) -> (Vec<Segment>, Vec<(PartitionKey, i64)>) {
        let (mut segments, mut targets) = (Vec::new(), Vec::new());
        for k in keys {
            let Some(mut p) = self.parts.remove(&k) else {
                continue;
            };
            self.env.metrics.live_series.sub(p.live_series);
            if let Some(q) = &self.env.quality {
                q.revoked(&k);
            }
            if seal {
                segments.extend(self.env.seal(&mut p));
                targets.push((k, p.next_offset));
            }
        }
        (segments, targets)
    }

    /// Seals every open segment and drops all state (shutdown). Returns the segments and each
    /// partition's next offset for the final commit.
    pub fn finish(mut self) -> (Vec<Segment>, Vec<(PartitionKey, i64)>) {
        let segments = self.seal_aged(true);
        let targets = self
            .parts
            .into_iter()
            .map(|(k, p)| {
                self.env.metrics.live_series.sub(p.live_series);
                (k, p.next_offset)
            })
            .collect();
        (segments, targets)
    }

    /// Retries the waiting labels (on the worker's tick). What they produce goes to the
    /// partition's open segment; a partition with none (its labels came before what they
    /// name, and then no message) gets a sealed [`Segment::late_labels`] segment of them, so
    /// its examples become durable without waiting for the next message.
    pub fn resolve_waiting(&mut self) -> Vec<Segment> {
        let Some(labels) = &self.env.labels else {
            return Vec::new();
        };
        let mut late = Vec::new();
        for p in self.parts.values_mut() {
            if p.waiting_labels.is_empty() {
                continue;
            }
            let (mut examples, mut dead, mut graded) =
                (Vec::new(), Vec::new(), QualityRows::default());
            let src = LabelSource {
                topic: &p.topic,
                partition: p.partition,
                emit_from: p.emit_from,
            };
            let taken = labels.resolve(
                &mut p.waiting_labels,
                &src,
                &mut examples,
                &mut dead,
                (&mut graded, &mut p.quality),
            );
            if examples.is_empty() && dead.is_empty() {
                continue;
            }
            for d in &dead {
                self.env
                    .metrics
                    .dead_letters
                    .with_label_values(&[d.reason.as_str()])
                    .inc();
            }
            let open = p.segment.is_some();
            let seg = p.segment.get_or_insert_with(|| {
                let (offsets, ts) = taken.expect("something was taken off the queue");
                Segment::late_labels(&p.topic, p.partition, offsets, ts)
            });
            seg.dead_letters.extend(dead);
            seg.examples.extend(examples);
            seg.quality.extend(graded);
            if !open {
                late.extend(self.env.seal(p));
            }
        }
        late
    }

    /// Seals segments older than the roll age (also empty ones, so their offsets commit),
    /// or all of them, and refreshes the live-series gauge by this worker's change.
    pub fn seal_aged(&mut self, all: bool) -> Vec<Segment> {
        let age = Duration::from_millis(self.env.cfg.output.roll_age_ms);
        let mut out = Vec::new();
        for p in self.parts.values_mut() {
            if p.segment
                .as_ref()
                .is_some_and(|s| all || s.opened_at.elapsed() >= age)
            {
                if let Some(seg) = self.env.seal(p) {
                    out.push(seg);
                }
            }
            let live = p.windows.as_ref().map_or(0, |w| w.live_series() as i64);
            self.env.metrics.live_series.add(live - p.live_series);
            p.live_series = live;
        }
        out
    }

    /// Processes one message of one of the worker's partitions; returns a segment to hand to
    /// the writer if one was sealed.
    pub fn process(&mut self, msg: &Message, consumed_at: Instant) -> Option<Segment> {
        let Worker {
            env,
            parts,
            open_budget,
            key,
            run,
        } = self;
        let (topic, partition, offset) = (&*msg.topic, msg.partition, msg.offset);
        key.0.clear();
        key.0.push_str(topic);
        key.1 = partition;
        // A message of a partition we no longer own (fetched before a revoke): skip it.
        let p = parts.get_mut(key)?;
        p.messages.inc();
        if offset < p.next_offset {
            // Already processed (a re-fetch after a seek): processing again would double it.
            return None;
        }
        let emit = offset >= p.emit_from;
        if !emit {
            env.metrics.replayed_records.inc();
        }
        let mut results = env.decode(p.kind, &msg.payload);
        p.records.inc_by(results.len() as u64);
        // No event time or label time past the message's arrival: a producer's clock in
        // 2099 must neither hold a series, the replay point and idle eviction (points:
        // `future` beyond the skew) nor keep an example from ever aging out (labels).
        let arrival = msg.timestamp_ms.min(now_ms());
        reject_future(&mut results, arrival, env.cfg.limits.max_future_skew_ms);
        if let Some(w) = p.windows.as_mut() {
            w.arrived(arrival);
        }
        // Dates a segment this message opens: its first point's event time, else (bags,
        // labels, undecodable input) its Kafka timestamp. Decoding is pure, and `future`
        // depends on the message alone (unless its timestamp is past the clock), so a replay
        // of the same offset dates the same folder.
        let event_ms = results
            .iter()
            .find_map(|r| match r {
                Ok(Record::Point(pt)) => Some(pt.ts_ms),
                _ => None,
            })
            .unwrap_or(msg.timestamp_ms);
        let at = Position::new(&msg.topic, partition, offset);
        let src = Incoming {
            msg,
            at,
            emit,
            arrival,
        };
        let mut out = MessageOutputs::default();
        take_records(env, p, key, run, &src, results, &mut out);
        // The tests of the panic boundary: here, the windows hold the message's points.
        #[cfg(test)]
        tests::panic_if_asked(offset);
        // A trainer writes nothing of a points or bags partition (`sink::owned_trees`): the
        // scorers dead-letter its bad records, in their group, under their commits.
        if env.cfg.pipeline.role == Role::Trainer && p.kind != RecordKind::Label {
            out.dead.clear();
        }
        env.window_rows(std::mem::take(&mut out.windows), at, &mut out.preds);
        p.next_offset = offset + 1;
        if let Some(l) = &env.labels {
            let src = LabelSource {
                topic,
                partition,
                emit_from: p.emit_from,
            };
            let graded = (&mut out.graded, &mut p.quality);
            l.resolve(
                &mut p.waiting_labels,
                &src,
                &mut out.examples,
                &mut out.dead,
                graded,
            );
        }
        if !emit {
            env.keep_replayed(p, out, at, event_ms);
            return None;
        }
        match env.append(p, out, at, event_ms, consumed_at) {
            Appended::Rolled(sealed) => return sealed,
            Appended::Unchanged => return None,
            Appended::Grew => {}
        }
        // The bound on what open segments hold across this worker's partitions: over its
        // share of `max_open_bytes`, the largest is sealed early rather than let grow.
        let budget = *open_budget;
        let open = |p: &PartitionState| p.segment.as_ref().map_or(0, |s| s.approx_bytes);
        if parts.values().map(|p| open(p)).sum::<usize>() > budget {
            let largest = parts.values_mut().max_by_key(|p| open(p))?;
            return env.seal(largest);
        }
        None
    }
}

/// Takes a message's records in order: the points of one series for one model that come in
/// a row gather into a run, windowed together (anything else ends the run, so outputs stay
/// in record order); bags are scored; labels queue for their join; bad records dead-letter.
fn take_records<'e>(
    env: &'e WorkerEnv,
    p: &mut PartitionState,
    key: &PartitionKey,
    run: &mut SeriesRun,
    src: &Incoming,
    results: Vec<Result<Record, Rejected>>,
    out: &mut MessageOutputs<'e>,
) {
    // The labels of the message in order (each holds on its own), and the one prefix of
    // the message they share for their dead letters.
    let (mut label_index, mut label_raw) = (0u32, None);
    // The model of the points in `run`.
    let mut run_model: Option<(&ServedModel, Guard<Arc<ScoringModel>>)> = None;
    // A `None` after the last record ends the last run.
    for r in results.into_iter().map(Some).chain([None]) {
        if let (Some(Ok(Record::Point(pt))), Some((served, model))) = (&r, &run_model) {
            if run.continued_by(env, pt, served, model) {
                if let Some(Ok(Record::Point(pt))) = r {
                    run.points.push(pt);
                }
                continue;
            }
        }
        if let Some((served, model)) = run_model.take() {
            let w = p.windows.as_mut().expect("a run is windowed");
            window_run(env, w, src, (served, &model), run, out);
        }
        let Some(r) = r else { break };
        match r {
            // A trainer keeps the raw history only (every channel of each point).
            Ok(Record::Point(pt)) if p.windows.is_none() => {
                if let Some(l) = &env.labels {
                    l.record_point(&pt, src.at);
                }
            }
            Ok(Record::Point(pt)) => match point_model(env, &pt) {
                Ok(model) => {
                    // The first of a run (see above).
                    run.points.push(pt);
                    run_model = Some(model);
                }
                Err(rej) => out.dead.push(src.dead_letter(&rej)),
            },
            Ok(Record::Bag(b)) if env.cfg.pipeline.role == Role::Trainer => {
                if let Some(l) = &env.labels {
                    let model = env
                        .models
                        .route_record(ModelInput::Bags, &b.bag_id, b.model.as_deref())
                        .ok()
                        .map(|m| m.spec.name.as_str());
                    l.keep_bag(&b, model, src.at, src.arrival, &mut out.examples);
                }
            }
            Ok(Record::Bag(b)) => match score_bag(env, b, src.at, src.arrival, &mut out.examples) {
                Ok(row) => out.preds.push(row),
                Err(rej) => out.dead.push(src.dead_letter(&rej)),
            },
            // Labels join their segment (or bag) into a training example; one whose
            // points are still on their way waits, holding the replay point back.
            Ok(Record::Label(l)) => {
                if let Some(labels) = &env.labels {
                    let raw = label_raw.get_or_insert_with(|| raw_prefix(&src.msg.payload));
                    let at = ((src.msg.offset, label_index), src.arrival);
                    labels.queue(&mut p.waiting_labels, key, at, l, raw.clone());
                }
                label_index += 1;
            }
            Err(rej) => out.dead.push(src.dead_letter(&rej)),
        }
    }
}

/// The model that scores point `pt` (and the version it serves now), or why there is none:
/// no route, or a channel count other than the model's.
fn point_model<'e>(
    env: &'e WorkerEnv,
    pt: &Point,
) -> Result<(&'e ServedModel, Guard<Arc<ScoringModel>>), Rejected> {
    let served = env
        .models
        .route_record(ModelInput::Series, &pt.series_id, pt.model.as_deref())
        .map_err(|detail| Rejected {
            reason: DeadReason::NoModel,
            detail,
        })?;
    // A guard, not a clone: no shared reference count is written per point.
    let series_model = served.serving.load();
    // A series has the channel count of the model that scores it.
    let channels = series_model.model.input().channels();
    if pt.channels() != channels.max(1) {
        return Err(Rejected {
            reason: DeadReason::Dimension,
            detail: format!(
                "point of series '{}' has {} values; model {:?} takes {channels} channel(s)",
                pt.series_id,
                pt.channels(),
                served.serving.name,
            ),
        });
    }
    Ok((served, series_model))
}

impl SeriesRun {
    /// Whether `pt` is the next point of this run: the same series, routed to the same
    /// model, which still serves the same version.
    fn continued_by(
        &self,
        env: &WorkerEnv,
        pt: &Point,
        served: &ServedModel,
        model: &Arc<ScoringModel>,
    ) -> bool {
        self.points.first().is_some_and(|first| {
            pt.series_id == first.series_id
                && env
                    .models
                    .route_record(ModelInput::Series, &pt.series_id, pt.model.as_deref())
                    .is_ok_and(|m| std::ptr::eq(m, served))
                && Arc::ptr_eq(model, &served.serving.load())
        })
    }
}

/// A message's outputs, in record order, on their way into its partition's open segment.
#[derive(Default)]
struct MessageOutputs<'e> {
    preds: Vec<PredictionRecord>,
    dead: Vec<DeadLetterRecord>,
    examples: Vec<Example>,
    graded: QualityRows,
    /// The windows its points completed, each with the name of the model that scored it
    /// and that model; they become prediction rows (`window_rows`) before the rest.
    windows: Vec<(ScoredWindow, &'e str, Arc<ScoringModel>)>,
}

/// What appending a message's outputs did to its partition's open segment.
// Returned once per message and matched at once, never kept: no box for the sealed segment.
#[allow(clippy::large_enum_variant)]
enum Appended {
    /// It reached its roll size and was sealed (the segment for the writer).
    Rolled(Option<Segment>),
    Grew,
    /// Nothing was added: the open bytes are what they were.
    Unchanged,
}

impl WorkerEnv {
    /// The prediction rows of a message's scored windows (each with the model that scored
    /// it), handed to the live view too, in one batch.
    fn window_rows(
        &self,
        windows: Vec<(ScoredWindow, &str, Arc<ScoringModel>)>,
        src: Position,
        preds: &mut Vec<PredictionRecord>,
    ) {
        let mut view = self.view.as_ref().map(|v| v.batch());
        for (w, name, series_model) in windows {
            self.metrics.windows_scored.inc();
            let row = series_model.prediction_row(
                (name, w.series_id, "window"),
                Some((w.start_ms, w.end_ms)),
                (&w.explanation, w.points),
                src,
                w.first_offset,
                self.cfg.window.top_contributions,
            );
            if let Some(v) = view.as_mut() {
                v.scored(&row, &w.explanation, &w.values, &series_model.model);
            }
            preds.push(row);
        }
        if let Some(v) = view {
            v.send();
        }
    }

    /// Keeps what a replayed message (below `emit_from`) produced that must still be
    /// written: its examples. The store keeps one per key, and a label that was waiting at
    /// the crash is only joined now.
    fn keep_replayed(
        &self,
        p: &mut PartitionState,
        out: MessageOutputs,
        at: Position,
        event_ms: i64,
    ) {
        if out.examples.is_empty() {
            return;
        }
        let seg = p
            .segment
            .get_or_insert_with(|| self.open_segment(at.topic, at.partition, at.offset, event_ms));
        seg.last_offset = at.offset;
        seg.examples.extend(out.examples);
        seg.quality.extend(out.graded);
    }

    /// Appends an emitted message's outputs to its partition's open segment (opened, dated
    /// `event_ms`, when none is), counting its dead letters and feeding the label-free
    /// detectors its predictions first.
    fn append(
        &self,
        p: &mut PartitionState,
        out: MessageOutputs,
        Position {
            topic,
            partition,
            offset,
        }: Position,
        event_ms: i64,
        consumed_at: Instant,
    ) -> Appended {
        let MessageOutputs {
            preds,
            dead,
            examples,
            graded,
            ..
        } = out;
        for d in &dead {
            self.metrics
                .dead_letters
                .with_label_values(&[d.reason.as_str()])
                .inc();
        }
        if let Some(v) = &self.view {
            v.dead_letters(&dead);
        }
        // Before the segment is touched: a panic in a detector then leaves it as it was (see
        // `panicked`).
        let drift_events = p.served.as_mut().map(|m| m.observe(&preds));
        let seg = p
            .segment
            .get_or_insert_with(|| self.open_segment(topic, partition, offset, event_ms));
        let bytes_before = seg.approx_bytes;
        seg.last_offset = offset;
        seg.approx_bytes += preds.len() * 256
            + dead
                .iter()
                .map(|d| 128 + d.raw_prefix.len() + d.detail.len())
                .sum::<usize>();
        seg.consumed_at
            .extend(std::iter::repeat_n(consumed_at, preds.len()));
        seg.quality
            .drift_events
            .extend(drift_events.into_iter().flatten());
        seg.predictions.extend(preds);
        seg.quality.extend(graded);
        seg.dead_letters.extend(dead);
        seg.approx_bytes += examples
            .iter()
            .map(|e| 64 + 8 * e.values.len())
            .sum::<usize>();
        seg.examples.extend(examples);
        let output = &self.cfg.output;
        if seg.rows() >= output.roll_rows || seg.approx_bytes >= seg.roll_at_bytes {
            return Appended::Rolled(self.seal(p));
        }
        if seg.approx_bytes == bytes_before {
            // Nothing added: the open total is what it was after the last message.
            return Appended::Unchanged;
        }
        Appended::Grew
    }
}

/// Scores one bag with the model its id routes to (keeping it, and its inline label, for the
/// label join): its prediction row, or why it has none (no model; another dimension).
fn score_bag(
    env: &WorkerEnv,
    b: BagRecord,
    at: Position,
    arrival: i64,
    examples: &mut Vec<Example>,
) -> Result<PredictionRecord, Rejected> {
    let served = env
        .models
        .route_record(ModelInput::Bags, &b.bag_id, b.model.as_deref())
        .map_err(|detail| Rejected {
            reason: DeadReason::NoModel,
            detail,
        })?;
    let serving = &served.serving;
    let m = serving.load();
    if let Some(l) = &env.labels {
        let model = Some(served.spec.name.as_str());
        l.keep_bag(&b, model, at, arrival, examples);
    }
    let started = Instant::now();
    let e = Bag::new(b.dim, b.instances)
        .map_err(|e| e.to_string())
        .and_then(|bag| {
            m.model
                .explain(&Sample::Bag(bag))
                .map_err(|e| e.to_string())
        })
        .map_err(|detail| Rejected {
            reason: DeadReason::Dimension,
            detail,
        })?;
    env.metrics
        .scoring_seconds
        .observe(started.elapsed().as_secs_f64());
    env.metrics.bags_scored.inc();
    let row = m.prediction_row(
        (&serving.name, b.bag_id, "bag"),
        None,
        (&e, 0),
        at,
        at.offset,
        env.cfg.window.top_contributions,
    );
    if let Some(v) = &env.view {
        let mut batch = v.batch();
        batch.scored(&row, &e, &[], &m.model);
        batch.send();
    }
    Ok(row)
}

/// Windows a run of points of one series for one model (`run`, emptied) from the message
/// `src`: the windows they complete to `out` with their model, each accepted point to the
/// label-join history, a late one to the dead letters.
fn window_run<'a>(
    env: &WorkerEnv,
    w: &mut PartitionWindows,
    src: &Incoming,
    (served, model): (&'a ServedModel, &Arc<ScoringModel>),
    run: &mut SeriesRun,
    out: &mut MessageOutputs<'a>,
) {
    let mut scored = Vec::new();
    let SeriesRun { points, outcomes } = run;
    outcomes.clear();
    w.on_points(
        points,
        src.msg.offset,
        (&served.serving.name, model),
        src.emit,
        &mut scored,
        outcomes,
    );
    // The windows of this series, scored by its model.
    out.windows.extend(
        scored
            .into_iter()
            .map(|sw| (sw, served.serving.name.as_str(), Arc::clone(model))),
    );
    if let (Some(l), Some(first)) = (&env.labels, points.first()) {
        let accepted = points
            .iter()
            .zip(outcomes.iter())
            .filter(|(_, o)| matches!(o, PointOutcome::Accepted))
            .map(|(pt, _)| pt);
        l.record_points(&first.series_id, accepted, src.at);
    }
    for (pt, outcome) in points.drain(..).zip(outcomes.iter()) {
        match outcome {
            PointOutcome::Accepted => {}
            PointOutcome::Duplicate => env.metrics.duplicates_dropped.inc(),
            PointOutcome::Late => out.dead.push(src.dead_letter(&Rejected {
                reason: DeadReason::Late,
                detail: format!(
                    "point of series '{}' at ts {} arrived after its window moved on",
                    pt.series_id, pt.ts_ms
                ),
            })),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use super::*;
    use crate::mil::Model;
    use crate::stream::score::window::WindowParams;
    use crate::stream::score::worker_pool::{contained, PANICS_IN_A_ROW};

    const W: usize = 60;
    const SPACING_MS: i64 = 10;
    const HOP_MS: i64 = 25 * SPACING_MS;

    fn model() -> &'static Model {
        static MODEL: OnceLock<Model> = OnceLock::new();
        MODEL.get_or_init(|| crate::stream::embedded::train_embedded_model().unwrap())
    }

    fn env() -> (Arc<WorkerEnv>, Arc<Metrics>) {
        env_with(model().clone())
    }

    fn env_with(model: Model) -> (Arc<WorkerEnv>, Arc<Metrics>) {
        let metrics = Metrics::new();
        // The series model alone (specs' first): bags have no model here.
        let cfg = Config::default();
        let series = crate::stream::score::models::specs(&cfg).swap_remove(0);
        let scoring = Arc::new(ScoringModel {
            model,
            version: "test".into(),
            generation: 1,
        });
        let models = Arc::new(Models::new(vec![(series, scoring)], &metrics));
        let env = WorkerEnv {
            cfg,
            metrics: metrics.clone(),
            models,
            labels: None,
            quality: None,
            limits: DecodeLimits {
                max_message_bytes: 1 << 20,
                max_bag_instances: 10_000,
                max_id_bytes: 256,
            },
            file_sizes: Default::default(),
            view: None,
            registry: None,
        };
        (Arc::new(env), metrics)
    }

    fn assign(worker: &mut Worker, metrics: &Metrics, partition: i32, next_offset: i64) {
        let params = WindowParams {
            points: W,
            duration_ms: 0,
            hop_ms: HOP_MS,
            lateness_ms: 0,
            idle_timeout_ms: 600_000,
            max_series: 1_000,
        };
        let state = PartitionState::new(
            metrics,
            "points",
            partition,
            RecordKind::Point,
            0,
            next_offset,
            Some(PartitionWindows::new(params)),
        );
        worker.assign(("points".into(), partition), Box::new(state));
    }

    /// A point of series `id`: (ts, value).
    type Series = Vec<(i64, f64)>;

    /// Two series of two GunPoint series each, 10 ms apart, `b` 5 ms behind `a`.
    fn two_series() -> [(&'static str, Series); 2] {
        let data = crate::stream::embedded::gunpoint_train();
        let series = |k: usize| -> Series {
            data.samples[2 * k..2 * k + 2]
                .iter()
                .flat_map(|s| match s {
                    Sample::Series(v) => v.clone(),
                    Sample::Bag(_) | Sample::Multi(_) => unreachable!("GunPoint holds series"),
                })
                .enumerate()
                .map(|(i, v)| (1_000_000 + i as i64 * SPACING_MS + 5 * k as i64, v))
                .collect()
        };
        [("a", series(0)), ("b", series(1))]
    }

    /// The points of both series in event-time order, one per message.
    fn messages(series: &[(&str, Series)], partition_of: impl Fn(&str) -> i32) -> Vec<Message> {
        let mut points: Vec<(i64, &str, f64)> = series
            .iter()
            .flat_map(|(id, s)| s.iter().map(move |&(ts, v)| (ts, *id, v)))
            .collect();
        points.sort_by_key(|p| (p.0, p.1));
        points
            .into_iter()
            .enumerate()
            .map(|(i, (ts, id, v))| Message {
                topic: "points".into(),
                partition: partition_of(id),
                offset: i as i64,
                timestamp_ms: ts,
                payload: serde_json::json!({"series_id": id, "ts": ts, "value": v})
                    .to_string()
                    .into_bytes(),
            })
            .collect()
    }

    /// A window as offline: series, start, end, label, scores.
    type Row = (String, i64, i64, String, Vec<f64>);

    /// The windows a series yields by the window rule (the last W points before each point
    /// that crosses a hop boundary), each scored by offline `predict`.
    fn offline_windows(id: &str, s: &[(i64, f64)]) -> Vec<Row> {
        let mut out = Vec::new();
        for i in W..s.len() {
            if s[i - 1].0.div_euclid(HOP_MS) < s[i].0.div_euclid(HOP_MS) {
                let window = &s[i - W..i];
                let values = window.iter().map(|p| p.1).collect();
                let p = model().predict(&Sample::Series(values)).unwrap();
                out.push((id.into(), window[0].0, window[W - 1].0, p.label, p.scores));
            }
        }
        out
    }

    fn rows(segments: &[Segment]) -> Vec<Row> {
        let mut rows: Vec<Row> = segments
            .iter()
            .flat_map(|s| &s.predictions)
            .map(|p| {
                (
                    p.key.clone(),
                    p.window_start_ms.unwrap(),
                    p.window_end_ms.unwrap(),
                    p.label.clone(),
                    p.scores.clone(),
                )
            })
            .collect();
        rows.sort_by(|a, b| (&a.0, a.2).cmp(&(&b.0, b.2)));
        rows
    }

    thread_local! {
        /// The offsets `process` panics at, after windowing: no input is known to panic it,
        /// so the panic boundary's tests inject one.
        static PANIC_AT: std::cell::Cell<(i64, i64)> = const { std::cell::Cell::new((0, 0)) };
    }

    pub fn panic_if_asked(offset: i64) {
        let (from, to) = PANIC_AT.with(std::cell::Cell::get);
        if (from..to).contains(&offset) {
            panic!("injected for the test at offset {offset}");
        }
    }

    /// Feeds every message through the worker loop's panic boundary.
    fn feed_contained(worker: &mut Worker, msgs: &[Message]) -> Vec<Segment> {
        let mut in_a_row = 0;
        let mut out: Vec<Segment> = msgs
            .iter()
            .filter_map(|m| contained(worker, m, Instant::now(), &mut in_a_row))
            .collect();
        out.extend(worker.seal_aged(true));
        out
    }

    /// A panic while handling one message makes it one dead letter (`internal`, with the
    /// panic's text), and the worker goes on: the windows that held part of the message are
    /// cleared, so every window after it is one an uninterrupted run emits too, built from
    /// points after the panic only. (Before, the panic ended the worker thread: its
    /// partitions stalled, their messages dropped by the consumer.)
    #[test]
    fn a_panic_dead_letters_its_message_and_the_worker_goes_on() {
        let series = two_series();
        let msgs = messages(&series, |_| 0);
        let (plain_env, plain_metrics) = env();
        let mut plain = Worker::new(plain_env);
        assign(&mut plain, &plain_metrics, 0, 0);
        let uninterrupted = rows(&feed_contained(&mut plain, &msgs));

        let (env, metrics) = env();
        let mut worker = Worker::new(env);
        assign(&mut worker, &metrics, 0, 0);
        const AT: i64 = 200;
        PANIC_AT.with(|p| p.set((AT, AT + 1)));
        let segments = feed_contained(&mut worker, &msgs);
        PANIC_AT.with(|p| p.set((0, 0)));
        let dead: Vec<_> = segments.iter().flat_map(|s| &s.dead_letters).collect();
        assert_eq!(dead.len(), 1, "{dead:?}");
        assert_eq!((dead[0].offset, dead[0].reason.as_str()), (AT, "internal"));
        assert!(
            dead[0].detail.contains("injected for the test"),
            "{}",
            dead[0].detail
        );
        let dead_internal = metrics.dead_letters.with_label_values(&["internal"]);
        assert_eq!(dead_internal.get(), 1);
        let preds: Vec<_> = segments.iter().flat_map(|s| &s.predictions).collect();
        assert!(preds.iter().all(|p| p.source_offset != AT));
        let after: Vec<_> = preds.iter().filter(|p| p.source_offset > AT).collect();
        assert!(
            after.len() >= 4,
            "the worker went on: {} windows",
            after.len()
        );
        assert!(after.iter().all(|p| p.first_offset > AT));
        // Every window is one an uninterrupted run emits (none half-built).
        let got = rows(&segments);
        assert!(got.iter().all(|r| uninterrupted.contains(r)));
        assert!(got.len() < uninterrupted.len());
    }

    /// Every message panicking is the worker's fault, not the messages': after
    /// `PANICS_IN_A_ROW` the panic goes through and ends the thread (liveness then fails).
    #[test]
    fn panics_in_a_row_end_the_worker() {
        let msgs = messages(&two_series(), |_| 0);
        let (env, metrics) = env();
        let mut worker = Worker::new(env);
        assign(&mut worker, &metrics, 0, 0);
        PANIC_AT.with(|p| p.set((0, i64::MAX)));
        let mut in_a_row = 0;
        let mut handled = 0;
        let ended = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            for m in &msgs {
                contained(&mut worker, m, Instant::now(), &mut in_a_row);
                handled += 1;
            }
        }));
        PANIC_AT.with(|p| p.set((0, 0)));
        assert!(ended.is_err());
        assert_eq!(handled, PANICS_IN_A_ROW - 1);
        let dead_internal = metrics.dead_letters.with_label_values(&["internal"]);
        assert_eq!(dead_internal.get(), u64::from(PANICS_IN_A_ROW - 1));
    }

    /// Feeds every message; returns the segments sealed on the way.
    fn feed(worker: &mut Worker, msgs: &[Message]) -> Vec<Segment> {
        msgs.iter()
            .filter_map(|m| worker.process(m, Instant::now()))
            .collect()
    }

    /// Feeds every message; returns every segment sealed on the way and at the end.
    fn run(worker: &mut Worker, msgs: &[Message]) -> Vec<Segment> {
        let mut segments = feed(worker, msgs);
        segments.extend(worker.seal_aged(true));
        segments
    }

    #[test]
    fn two_series_yield_exactly_the_windows_and_predictions_of_offline_predict() {
        let (env, metrics) = env();
        let mut worker = Worker::new(env);
        assign(&mut worker, &metrics, 0, 0);
        let series = two_series();
        let msgs = messages(&series, |_| 0);
        let segments = run(&mut worker, &msgs);
        let mut expected: Vec<Row> = series
            .iter()
            .flat_map(|(id, s)| offline_windows(id, s))
            .collect();
        expected.sort_by(|a, b| (&a.0, a.2).cmp(&(&b.0, b.2)));
        assert!(expected.len() >= 10, "only {} windows", expected.len());
        assert_eq!(rows(&segments), expected);
        // Every row names the message that closed its window and the oldest point in it.
        for p in segments.iter().flat_map(|s| &s.predictions) {
            let closing = &msgs[p.source_offset as usize];
            let oldest = &msgs[p.first_offset as usize];
            assert_eq!(Some(oldest.timestamp_ms), p.window_start_ms);
            assert!(Some(closing.timestamp_ms) > p.window_end_ms);
            assert_eq!(
                (p.kind.as_str(), p.model_version.as_str()),
                ("window", "test")
            );
        }
        assert!(segments.iter().all(|s| s.dead_letters.is_empty()));
        assert_eq!(metrics.windows_scored.get() as usize, expected.len());
    }

    #[test]
    fn a_malformed_record_is_one_dead_letter_and_leaves_its_neighbours_intact() {
        let series = two_series();
        let clean = {
            let (env, metrics) = env();
            let mut worker = Worker::new(env);
            assign(&mut worker, &metrics, 0, 0);
            rows(&run(&mut worker, &messages(&series, |_| 0)))
        };
        let (env, metrics) = env();
        let mut worker = Worker::new(env);
        assign(&mut worker, &metrics, 0, 0);
        let mut msgs = messages(&series, |_| 0);
        let middle = msgs.len() / 2;
        msgs.insert(
            middle,
            Message {
                payload: br#"{"series_id":"a","ts":1000777,"value":"#.to_vec(),
                ..msgs[middle].clone()
            },
        );
        for (i, m) in msgs.iter_mut().enumerate() {
            m.offset = i as i64;
        }
        let segments = run(&mut worker, &msgs);
        let dead: Vec<&DeadLetterRecord> = segments.iter().flat_map(|s| &s.dead_letters).collect();
        assert_eq!(dead.len(), 1, "{dead:?}");
        assert_eq!(
            (dead[0].offset, dead[0].reason.as_str()),
            (middle as i64, DeadReason::Parse.as_str())
        );
        assert_eq!(rows(&segments), clean);
        assert_eq!(metrics.dead_letters.with_label_values(&["parse"]).get(), 1);
    }

    /// Finding 2 (one future timestamp moves the partition's clock), through the worker:
    /// mid-stream, a device 30 minutes ahead of its messages' arrival (within
    /// `limits.max_future_skew_ms`) and one two days ahead, then a seal (idle eviction,
    /// timeout 10 minutes). The two-day point is one `future` dead letter; the series at the
    /// arrival clock lose no window. At 593c8e9 both points were accepted, the seal evicted
    /// `a` and `b` as idle, and their windows restarted (fewer rows than the clean run).
    #[test]
    fn a_device_clock_ahead_costs_the_other_series_no_window() {
        let series = two_series();
        let clean = {
            let (env, metrics) = env();
            let mut worker = Worker::new(env);
            assign(&mut worker, &metrics, 0, 0);
            rows(&run(&mut worker, &messages(&series, |_| 0)))
        };
        let (env, metrics) = env();
        let mut worker = Worker::new(env);
        assign(&mut worker, &metrics, 0, 0);
        let mut msgs = messages(&series, |_| 0);
        let middle = msgs.len() / 2;
        let at = msgs[middle].timestamp_ms;
        for (i, ahead_ms) in [(0, 1_800_000), (1, 2 * 86_400_000)] {
            let body = format!(
                r#"{{"series_id":"dev{i}","ts":{},"value":0.5}}"#,
                at + ahead_ms
            );
            let m = Message {
                payload: body.into_bytes(),
                ..msgs[middle].clone()
            };
            msgs.insert(middle, m);
        }
        for (i, m) in msgs.iter_mut().enumerate() {
            m.offset = i as i64;
        }
        let mut segments = feed(&mut worker, &msgs[..middle + 2]);
        segments.extend(worker.seal_aged(true));
        segments.extend(run(&mut worker, &msgs[middle + 2..]));
        let dead: Vec<&DeadLetterRecord> = segments.iter().flat_map(|s| &s.dead_letters).collect();
        assert_eq!(dead.len(), 1, "{dead:?}");
        assert_eq!(dead[0].reason, "future");
        assert!(dead[0].detail.contains("dev1"), "{}", dead[0].detail);
        assert_eq!(rows(&segments), clean);
        assert_eq!(metrics.series_evicted.with_label_values(&["idle"]).get(), 0);
        assert_eq!(metrics.dead_letters.with_label_values(&["future"]).get(), 1);
        // The replay point: the two-day point (offset `middle`) pins nothing; the accepted
        // one (`middle + 1`) holds it until the arrivals pass it by the idle timeout.
        let last = segments.last().expect("segments");
        assert_eq!(last.replay_from, middle as i64 + 1);
    }

    #[test]
    fn a_revoke_mid_series_drops_that_partitions_state() {
        let (env, metrics) = env();
        let mut worker = Worker::new(env);
        // Series a on partition 0, b on partition 1 (offsets count messages overall, which
        // is all the worker needs: increasing within each partition).
        let (p0, p1): (PartitionKey, PartitionKey) = (("points".into(), 0), ("points".into(), 1));
        assign(&mut worker, &metrics, 0, 0);
        assign(&mut worker, &metrics, 1, 0);
        let series = two_series();
        let msgs = messages(&series, |id| i32::from(id == "b"));
        let (first, rest) = msgs.split_at(msgs.len() / 2);
        let mut segments = feed(&mut worker, first);

        let (sealed, targets) = worker.revoke(vec![p0.clone()], true);
        // The open segment is sealed with the partition's next offset, and its replay
        // point reaches back into the live window of series a.
        let a_next = first.iter().rfind(|m| m.partition == 0).unwrap().offset + 1;
        assert_eq!(targets, vec![(p0.clone(), a_next)]);
        assert_eq!(sealed.len(), 1);
        assert_eq!(
            (sealed[0].partition, sealed[0].last_offset + 1),
            (0, a_next)
        );
        assert!(sealed[0].replay_from < a_next);
        segments.extend(sealed);
        assert!(!worker.owns(&p0));
        assert!(worker.owns(&p1));
        let a_rows_at_revoke = rows(&segments).iter().filter(|r| r.0 == "a").count();
        assert!(a_rows_at_revoke > 0);

        // Messages of the revoked partition fetched before the revoke are skipped.
        let (late, rest) = rest.split_at(2 * W);
        segments.extend(feed(&mut worker, late));
        segments.extend(worker.seal_aged(true));
        assert!(segments
            .iter()
            .all(|s| s.partition == 1 || s.last_offset < a_next));
        let a_rows = |segments: &[Segment]| -> Vec<Row> {
            rows(segments).into_iter().filter(|r| r.0 == "a").collect()
        };
        assert_eq!(a_rows(&segments).len(), a_rows_at_revoke);

        // Assigned again, the partition starts from nothing: each of its new windows holds
        // only points that arrived after the new assignment.
        let resume = rest.iter().find(|m| m.partition == 0).unwrap();
        assign(&mut worker, &metrics, 0, resume.offset);
        segments.extend(run(&mut worker, rest));
        let a_new = &a_rows(&segments)[a_rows_at_revoke..];
        assert!(!a_new.is_empty());
        assert!(a_new.iter().all(|r| r.1 >= resume.timestamp_ms));
        // Partition 1 never noticed: series b's windows are exactly the offline ones.
        let b: Vec<Row> = rows(&segments).into_iter().filter(|r| r.0 == "b").collect();
        assert_eq!(b, offline_windows("b", &series[1].1));
    }

    /// 6-channel points (BasicMotions: accelerometer and gyroscope): every window the
    /// worker scores equals the offline predict of its points, and a point with another
    /// channel count is one `dimension` dead letter naming both counts.
    #[test]
    fn six_channel_points_yield_the_offline_predictions() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/data/BasicMotions_TRAIN.ts");
        let data = crate::data::read_dataset(&path, None).unwrap();
        let params = crate::mil::FitParams {
            k: Some(20),
            max_rounds: 10,
            ..crate::mil::FitParams::default()
        };
        let model6 = Model::fit(&data, &params).unwrap();
        // Two series of two BasicMotions series each (200 steps), `b` 5 ms behind `a`.
        let series = |k: usize| -> Vec<(i64, Vec<f64>)> {
            let mut steps = Vec::new();
            for s in &data.samples[2 * k..2 * k + 2] {
                let Sample::Multi(c) = s else {
                    unreachable!("BasicMotions has 6 channels")
                };
                steps.extend((0..c[0].len()).map(|t| c.iter().map(|v| v[t]).collect::<Vec<_>>()));
            }
            steps
                .into_iter()
                .enumerate()
                .map(|(i, v)| (1_000_000 + i as i64 * SPACING_MS + 5 * k as i64, v))
                .collect()
        };
        let all = [("a", series(0)), ("b", series(1))];
        let mut points: Vec<(i64, &str, &Vec<f64>)> = all
            .iter()
            .flat_map(|(id, s)| s.iter().map(move |(ts, v)| (*ts, *id, v)))
            .collect();
        points.sort_by_key(|p| (p.0, p.1));
        let mut msgs: Vec<Message> = points
            .iter()
            .map(|&(ts, id, v)| Message {
                topic: "points".into(),
                partition: 0,
                offset: 0,
                timestamp_ms: ts,
                payload: serde_json::json!({"series_id": id, "ts": ts, "values": v})
                    .to_string()
                    .into_bytes(),
            })
            .collect();
        let middle = msgs.len() / 2;
        msgs.insert(
            middle,
            Message {
                payload: br#"{"series_id":"a","ts":1,"values":[1,2,3,4,5]}"#.to_vec(),
                ..msgs[middle].clone()
            },
        );
        for (i, m) in msgs.iter_mut().enumerate() {
            m.offset = i as i64;
        }
        let (env, metrics) = env_with(model6.clone());
        let mut worker = Worker::new(env);
        assign(&mut worker, &metrics, 0, 0);
        let segments = run(&mut worker, &msgs);
        let mut expected: Vec<Row> = Vec::new();
        for (id, s) in &all {
            for i in W..s.len() {
                if s[i - 1].0.div_euclid(HOP_MS) < s[i].0.div_euclid(HOP_MS) {
                    let window = &s[i - W..i];
                    let channels = (0..6)
                        .map(|c| window.iter().map(|p| p.1[c]).collect())
                        .collect();
                    let p = model6.predict(&Sample::Multi(channels)).unwrap();
                    expected.push((
                        id.to_string(),
                        window[0].0,
                        window[W - 1].0,
                        p.label,
                        p.scores,
                    ));
                }
            }
        }
        expected.sort_by(|a, b| (&a.0, a.2).cmp(&(&b.0, b.2)));
        assert!(expected.len() >= 10, "only {} windows", expected.len());
        assert_eq!(rows(&segments), expected);
        let dead: Vec<&DeadLetterRecord> = segments.iter().flat_map(|s| &s.dead_letters).collect();
        assert_eq!(dead.len(), 1, "{dead:?}");
        assert_eq!(
            (dead[0].offset, dead[0].reason.as_str()),
            (middle as i64, "dimension")
        );
        assert!(
            dead[0].detail.contains("5 values") && dead[0].detail.contains("6 channel"),
            "{}",
            dead[0].detail
        );
        // Prediction rows name the channel of each top contribution (`.ts`: unnamed).
        for p in segments.iter().flat_map(|s| &s.predictions) {
            assert!(!p.top.is_empty());
            assert!(p.top.iter().all(|t| t
                .channel
                .as_deref()
                .is_some_and(|c| c.starts_with("channel "))));
        }
    }
}
