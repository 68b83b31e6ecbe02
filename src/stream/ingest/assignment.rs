//! Assignment: the consumer's rebalance callbacks. In: assign / revoke / lost from the group
//! (inside the consumer's poll), and librdkafka's statistics. Out: each new partition's
//! state queued to its worker ahead of its first message, the fetch position set to the
//! partition's replay point, revoked partitions sealed, made durable and committed.
//! Owns: which partitions this process holds (with [`DurableOffsets`]).
//!
//! On assignment the consumer seeks to the replay point, rebuilds windows from the
//! messages below the committed offset without emitting, and emits from the committed
//! offset on; files at or beyond the committed offset are swept first, because the replay
//! rewrites them (under the same names when the segment bounds match, else new ones).
//! The replay point comes from the commit's metadata and/or the newest durable output
//! file's metadata (for brokers that drop commit metadata): see [`recovery`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext};
use rdkafka::types::RDKafkaRespErr;
use rdkafka::{ClientContext, Offset, TopicPartitionList};
use tracing::{error, info, warn};

use crate::config::{Config, Role};
use crate::http::Health;
use crate::metrics::Metrics;
use crate::stream::ingest::commit::{DurableOffsets, Mark, PartitionKey};
use crate::stream::ingest::record::RecordKind;
use crate::stream::lifecycle::training::TrainingRuntime;
use crate::stream::output::store::Store;
use crate::stream::quality::label_free::ServedWatch;
use crate::stream::quality::Quality;
use crate::stream::score::window::{PartitionWindows, WindowParams};
use crate::stream::score::worker::{PartitionState, Work};
use crate::stream::score::worker_pool::WorkerPool;

mod recovery;
use recovery::{Prepared, LIST_ATTEMPTS};

/// The first retry of a partition that could not be started, and the longest pause
/// between two (the pause doubles from the first).
const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(30);
/// A partition still unstarted this long fails liveness (README: Operating).
pub const STALL_AFTER: Duration = Duration::from_secs(300);

/// How long a new assignment waits for the writes of an earlier ownership of the partition
/// still under way (each is one attempt at a segment, bounded by the store client's own
/// timeouts) before it leaves the partition unstarted rather than sweep under them.
const FENCE_TIMEOUT: Duration = Duration::from_secs(30);

/// `topic/partition` of each element, for logs.
fn partition_names(tpl: &TopicPartitionList) -> Vec<String> {
    tpl.elements()
        .iter()
        .map(|e| format!("{}/{}", e.topic(), e.partition()))
        .collect()
}

/// What the rebalance callbacks need; shared with the committer.
pub struct Assignments {
    pub cfg: Config,
    pub metrics: Arc<Metrics>,
    pub health: Arc<Health>,
    pub durable: Arc<DurableOffsets>,
    /// The record kind of each consumed topic.
    pub kinds: HashMap<String, RecordKind>,
    pub window_params: WindowParams,
    /// Where `output.dir` points: swept and searched for the replay point.
    pub output: Arc<Store>,
    /// The training store, swept with the outputs, when training is on.
    pub training_store: Option<Arc<Store>>,
    /// The label joins' history and the replay holds of their labels, when training is on.
    pub training: Option<Arc<TrainingRuntime>>,
    /// Whether the first commit since the last assignment was logged.
    pub first_commit_logged: AtomicBool,
    /// The workers, until shutdown: then assignments are no longer queued.
    workers: Mutex<Option<Arc<WorkerPool>>>,
    /// Live quality (`drift.evaluate`): a label partition's detectors are restored from the
    /// durable evaluations when it is assigned.
    pub quality: Option<Arc<Quality>>,
    /// Assigned partitions that could not be started yet; the lock is held through each
    /// rebalance callback and each retry, so the two never interleave.
    pending: Mutex<Vec<Unstarted>>,
}

/// An assigned partition that could not be started (see [`Assignments::retry_unstarted`]).
struct Unstarted {
    key: PartitionKey,
    since: Instant,
    attempts: u32,
    next_try: Instant,
}

impl Assignments {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        cfg: Config,
        metrics: Arc<Metrics>,
        health: Arc<Health>,
        durable: Arc<DurableOffsets>,
        kinds: HashMap<String, RecordKind>,
        window_params: WindowParams,
        (output, training): (Arc<Store>, Option<Arc<TrainingRuntime>>),
        workers: Arc<WorkerPool>,
        quality: Option<Arc<Quality>>,
    ) -> Self {
        Self {
            cfg,
            metrics,
            health,
            durable,
            kinds,
            window_params,
            output,
            training_store: training.as_ref().map(|t| t.store.clone()),
            training,
            first_commit_logged: AtomicBool::new(false),
            workers: Mutex::new(Some(workers)),
            quality,
            pending: Mutex::new(Vec::new()),
        }
    }

    /// The oldest offset, per partition, that labels in flight still need (see `holds.rs`).
    pub fn held(&self) -> HashMap<PartitionKey, i64> {
        self.training.as_ref().map(|t| t.held()).unwrap_or_default()
    }

    /// Commits succeeded: the replay holds learn the committed replay points.
    pub fn committed(&self, marks: &[Mark]) {
        self.durable.committed(marks);
        if let Some(t) = &self.training {
            t.holds.committed(marks);
        }
    }

    /// Shutdown: later rebalances queue nothing to the workers.
    pub fn detach_workers(&self) {
        *self.workers.lock().expect("workers lock") = None;
    }

    /// Partition assigned: read its committed offset and replay point, sweep outputs the
    /// replay will rewrite, and point the fetch position at the replay point.
    ///
    /// Returns the partitions that could not be started: the caller assigns them paused.
    fn on_assign(
        &self,
        base: &BaseConsumer<Ctx>,
        tpl: &mut TopicPartitionList,
    ) -> TopicPartitionList {
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
        // Held through the callback: a retry of an unstarted partition never interleaves.
        let mut pending = self.pending.lock().expect("pending lock");
        pending.clear();
        let mut seeks: Vec<(String, i32, i64)> = Vec::new();
        let mut not_started: Vec<(String, i32)> = Vec::new();
        for el in tpl.elements() {
            let (topic, partition) = (el.topic().to_string(), el.partition());
            match self.start_partition(&topic, partition, &committed, may_sweep) {
                Ok(Some(replay_from)) => seeks.push((topic, partition, replay_from)),
                Ok(None) => {}
                Err(()) => not_started.push((topic, partition)),
            }
        }
        // The fetch starts at the replay point of each partition that has a commit.
        for (t, p, o) in seeks {
            if let Err(e) = tpl.set_partition_offset(&t, p, Offset::Offset(o)) {
                error!(topic = t, partition = p, %e, "setting the replay offset failed");
            }
        }
        // Partitions not started are assigned paused: nothing of them is scored (their
        // worker holds no state for them, so a message fetched before the pause is
        // skipped) or committed; the consumer's loop retries them (`retry_unstarted`).
        let now = Instant::now();
        pending.extend(not_started.iter().map(|(topic, partition)| Unstarted {
            key: (topic.clone(), *partition),
            since: now,
            attempts: 1,
            next_try: now + RETRY_FIRST,
        }));
        self.health
            .set_partitions_not_started(!not_started.is_empty());
        self.metrics
            .partitions_assigned
            .set(self.durable.owned() as i64);
        let mut unstarted = TopicPartitionList::new();
        for (t, p) in &not_started {
            unstarted.add_partition(t, *p);
        }
        unstarted
    }

    /// Starts one assigned partition whose commit is in `committed`: a new ownership
    /// generation, the replay point, the sweep, the worker's state queued ahead of its first
    /// message. Returns where its fetch starts (None: the reset policy, no commit), or
    /// Err when it cannot start now (the store cannot be listed, or an earlier ownership's
    /// writes are still under way), logged.
    fn start_partition(
        &self,
        topic: &str,
        partition: i32,
        committed: &TopicPartitionList,
        may_sweep: bool,
    ) -> Result<Option<i64>, ()> {
        let Some(&kind) = self.kinds.get(topic) else {
            return Ok(None);
        };
        let (commit, meta) = committed
            .find_partition(topic, partition)
            .map(|e| (e.offset(), e.metadata().to_string()))
            .unwrap_or((Offset::Invalid, String::new()));
        let commit = match commit {
            Offset::Offset(o) => Some(o),
            _ => None,
        };
        // A new ownership: no write of an earlier one of this partition (a revoke that
        // timed out with segments queued) may land after the sweep below.
        let key = (topic.to_string(), partition);
        let generation = self.durable.fence(&key, FENCE_TIMEOUT).map_err(|busy| {
            error!(
                topic,
                partition,
                writes_under_way = busy,
                "an earlier ownership's writes did not end in time: partition not started"
            );
        })?;
        // The replay point and the sweep read the output store. If it cannot be listed,
        // the partition is not started rather than started from a guess: "no file" would
        // replay from the earliest offset, and an unswept partition could keep stale files.
        let prepared = self
            .prepare((topic, partition, kind), commit, &meta, may_sweep)
            .map_err(|e| {
                error!(
                    topic,
                    partition,
                    committed = ?commit,
                    attempts = LIST_ATTEMPTS,
                    %e,
                    "the output store cannot be listed: partition not started (retried with backoff)"
                );
            })?;
        let replay_from = prepared.replay_from;
        info!(topic, partition, committed = ?commit, replay_from = ?replay_from, generation, "partition assigned");
        self.durable.own(
            key.clone(),
            generation,
            commit.unwrap_or(0),
            replay_from.unwrap_or(0),
        );
        if let Some(t) = &self.training {
            t.holds.assigned(&key, replay_from.unwrap_or(0));
        }
        let mut state = self.partition_state((topic, partition, kind), commit, prepared);
        state.generation = generation;
        // Queued ahead of the partition's first message (the fetch starts after the
        // assignment), behind anything of an earlier assignment.
        if let Some(w) = self.workers.lock().expect("workers lock").clone() {
            if !w.send_control(w.index(topic, partition), Work::Assign(key, state)) {
                error!(topic, partition, "a scoring worker has stopped");
            }
        }
        Ok(replay_from)
    }

    /// A started partition's state for its worker, with what was restored for it.
    fn partition_state(
        &self,
        (topic, partition, kind): (&str, i32, RecordKind),
        commit: Option<i64>,
        prepared: Prepared,
    ) -> Box<PartitionState> {
        let key = (topic.to_string(), partition);
        let mut state = Box::new(PartitionState::new(
            &self.metrics,
            topic,
            partition,
            kind,
            commit.unwrap_or(i64::MIN),
            prepared.replay_from.unwrap_or(0),
            // A trainer scores nothing: its point partitions feed the history only.
            (kind == RecordKind::Point && self.cfg.pipeline.role != Role::Trainer)
                .then(|| PartitionWindows::new(self.window_params)),
        ));
        if let Some(why) = prepared
            .restored
            .as_ref()
            .and_then(|r| r.unreadable.as_ref())
        {
            warn!(topic, partition, %why, "the errors' detectors' checkpoint cannot be decoded: they start clean");
            let unreadable = &self.metrics.checkpoints_unreadable;
            unreadable.with_label_values(&["quality_state"]).inc();
        }
        if let (Some(q), Some(r)) = (&self.quality, prepared.restored) {
            q.assigned(&key, &r.state, r.durable_through);
            state.quality = r.state;
        }
        if kind != RecordKind::Label && self.cfg.pipeline.role != Role::Trainer {
            state.served = self.quality.as_ref().and_then(ServedWatch::new);
            if let (Some(w), Some(c)) = (&mut state.served, prepared.served) {
                if let Err(e) = w.restore(&c) {
                    warn!(topic, partition, %e, "the label-free detectors' checkpoint does not parse: they start over");
                    let unreadable = &self.metrics.checkpoints_unreadable;
                    unreadable.with_label_values(&["served_state"]).inc();
                }
            }
        }
        state
    }

    /// Retries the assigned partitions that could not be started, each with its own
    /// backoff (1 s doubling to 30 s): a partition that starts is sought to its replay point
    /// and resumed. One still unstarted after [`STALL_AFTER`] fails liveness: the process
    /// cannot fix it by itself (a restart reads the store afresh and rejoins the group).
    ///
    /// Called from the consumer's loop between two batches: every message received before
    /// is already queued to its worker, behind which the partition's new state goes, and a
    /// rebalance callback (which runs inside that loop's poll) never interleaves.
    pub fn retry_unstarted<C: Consumer<Ctx>>(&self, consumer: &C) {
        let mut pending = self.pending.lock().expect("pending lock");
        if pending.is_empty() {
            return;
        }
        let now = Instant::now();
        let due: Vec<PartitionKey> = pending
            .iter()
            .filter(|u| now >= u.next_try)
            .map(|u| u.key.clone())
            .collect();
        if !due.is_empty() {
            for (key, replay_from) in self.start_due(consumer, &due) {
                resume_at(consumer, &key, replay_from);
                pending.retain(|u| u.key != key);
            }
            for u in pending.iter_mut().filter(|u| due.contains(&u.key)) {
                u.attempts += 1;
                let pause = RETRY_FIRST * 2u32.saturating_pow(u.attempts.min(6) - 1);
                u.next_try = Instant::now() + pause.min(RETRY_MAX);
            }
            self.metrics
                .partitions_assigned
                .set(self.durable.owned() as i64);
        }
        self.health.set_partitions_not_started(!pending.is_empty());
        let stalled = pending.iter().find(|u| u.since.elapsed() >= STALL_AFTER);
        self.health.set_stalled(stalled.map(|u| {
            format!(
                "partition {}/{} could not be started for {} s ({} attempts; see the log)",
                u.key.0,
                u.key.1,
                u.since.elapsed().as_secs(),
                u.attempts
            )
        }));
    }

    /// `assignment` without the partitions not started yet (which stay paused).
    pub fn started(&self, assignment: TopicPartitionList) -> TopicPartitionList {
        let pending = self.pending.lock().expect("pending lock");
        if pending.is_empty() {
            return assignment;
        }
        let mut out = TopicPartitionList::new();
        for e in assignment.elements() {
            if !pending
                .iter()
                .any(|u| u.key.0 == e.topic() && u.key.1 == e.partition())
            {
                out.add_partition(e.topic(), e.partition());
            }
        }
        out
    }

    /// Starts the `due` partitions that can start now; returns them with their replay
    /// points.
    fn start_due<C: Consumer<Ctx>>(
        &self,
        consumer: &C,
        due: &[PartitionKey],
    ) -> Vec<(PartitionKey, Option<i64>)> {
        let mut tpl = TopicPartitionList::new();
        for (t, p) in due {
            tpl.add_partition(t, *p);
        }
        let committed = match consumer.committed_offsets(tpl, Duration::from_secs(10)) {
            Ok(c) => c,
            Err(e) => {
                warn!(%e, "retrying unstarted partitions: reading committed offsets failed");
                return Vec::new();
            }
        };
        due.iter()
            .filter_map(|(t, p)| {
                let r = self.start_partition(t, *p, &committed, true).ok()?;
                Some(((t.clone(), *p), r))
            })
            .collect()
    }

    /// The record kind of a consumed topic (every assigned topic is one).
    fn kind(&self, topic: &str) -> RecordKind {
        self.kinds.get(topic).copied().unwrap_or(RecordKind::Point)
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
        let mut pending = self.pending.lock().expect("pending lock");
        pending.retain(|u| !keys.contains(&u.key));
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
            // The final commit keeps the holds: the next owner replays what labels need.
            if let Some((tpl, marks)) = self.durable.to_commit(Some(&keys), || self.held()) {
                match base.commit(&tpl, CommitMode::Sync) {
                    Ok(()) => {
                        self.committed(&marks);
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
        if let Some(t) = &self.training {
            t.holds.revoked(&keys);
        }
        self.metrics
            .partitions_assigned
            .set(self.durable.owned() as i64);
        self.health.set_partitions_not_started(!pending.is_empty());
        if pending.is_empty() {
            self.health.set_stalled(None);
        }
        info!(partitions = keys.len(), lost, "partitions revoked");
    }
}

/// Points a paused partition's fetch at its replay point (the earliest offset without a
/// commit, as `auto.offset.reset` would) and resumes it. The seek discards whatever was
/// fetched before it, so the partition's first message is the one its new state expects.
fn resume_at<C: Consumer<Ctx>>(consumer: &C, (topic, partition): &PartitionKey, at: Option<i64>) {
    let offset = at.map_or(Offset::Beginning, Offset::Offset);
    if let Err(e) = consumer.seek(topic, *partition, offset, Duration::from_secs(10)) {
        error!(topic, partition, %e, "seeking a started partition to its replay point failed");
    }
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition(topic, *partition);
    match consumer.resume(&tpl) {
        Ok(()) => info!(topic, partition, replay_from = ?at, "an unstarted partition started"),
        Err(e) => error!(topic, partition, %e, "resuming a started partition failed"),
    }
}

/// The consumer context: rebalance with replay, and revoke with a final commit.
#[derive(Default)]
pub struct Ctx {
    state: OnceLock<Arc<Assignments>>,
}

impl Ctx {
    /// Hands the callbacks their state once the pipeline is built (a rebalance before then
    /// is ignored).
    pub fn attach(&self, state: Arc<Assignments>) {
        let _ = self.state.set(state);
    }
}

impl ClientContext for Ctx {
    /// librdkafka's statistics (every `statistics.interval.ms`): the consumer lag per
    /// assigned partition.
    fn stats(&self, statistics: rdkafka::Statistics) {
        let Some(state) = self.state.get() else {
            return;
        };
        // Readiness follows the brokers: none up means nothing is consumed or committed.
        // (Broker entries with node id -1 are the bootstrap addresses, not brokers.)
        let known: Vec<&rdkafka::statistics::Broker> = statistics
            .brokers
            .values()
            .filter(|b| b.nodeid >= 0)
            .collect();
        if !known.is_empty() {
            state
                .health
                .set_brokers_down(!known.iter().any(|b| b.state == "UP"));
        }
        for (topic, t) in &statistics.topics {
            for (partition, p) in &t.partitions {
                // -1 is librdkafka's internal partition; a negative lag is "unknown".
                if *partition >= 0 && p.consumer_lag >= 0 {
                    state
                        .metrics
                        .consumer_lag
                        .with_label_values(&[topic.as_str(), &partition.to_string()])
                        .set(p.consumer_lag);
                }
            }
        }
    }

    /// librdkafka's global errors: all brokers down makes the daemon not ready until the
    /// statistics see a broker up again.
    fn error(&self, error: rdkafka::error::KafkaError, reason: &str) {
        if error.rdkafka_error_code() == Some(rdkafka::types::RDKafkaErrorCode::AllBrokersDown) {
            if let Some(state) = self.state.get() {
                state.health.set_brokers_down(true);
            }
        }
        warn!(%error, reason, "librdkafka error");
    }
}

impl ConsumerContext for Ctx {
    fn rebalance(
        &self,
        base: &BaseConsumer<Self>,
        err: RDKafkaRespErr,
        tpl: &mut TopicPartitionList,
    ) {
        let Some(state) = self.state.get() else {
            warn!("rebalance before the pipeline was ready; ignoring");
            return;
        };
        match err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS => {
                let unstarted = state.on_assign(base, tpl);
                if let Err(e) = base.assign(tpl) {
                    error!(%e, partitions = ?partition_names(tpl), "assign failed");
                }
                // Paused until they start (`retry_unstarted`), so the whole assignment is
                // taken from the group, as the eager protocol wants.
                if unstarted.count() > 0 {
                    if let Err(e) = base.pause(&unstarted) {
                        error!(%e, partitions = ?partition_names(&unstarted), "pausing unstarted partitions failed");
                    }
                }
                state.health.set_ready(true);
            }
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS => {
                state.on_revoke(base, tpl);
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
