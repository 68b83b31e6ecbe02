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
//! file's metadata (for brokers that drop commit metadata): see [`choose_replay_point`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext};
use rdkafka::types::RDKafkaRespErr;
use rdkafka::{ClientContext, Offset, TopicPartitionList};
use tracing::{error, info, warn};

use super::commit::{choose_replay_point, decode_metadata, DurableOffsets, Mark, PartitionKey};
use super::label_free::ServedWatch;
use super::quality::Quality;
use super::record::RecordKind;
use super::sink;
use super::store::Store;
use super::training::TrainingRuntime;
use super::window::{PartitionWindows, WindowParams};
use super::worker::{PartitionState, Work};
use super::worker_pool::WorkerPool;
use crate::config::{Config, Role};
use crate::http::Health;
use crate::metrics::Metrics;

/// Attempts at listing the output store for a newly assigned partition before it is left
/// unstarted, and the pause after the first failure (doubling after each): a blip passes,
/// a store that stays down costs seconds (each attempt has the store client's own retries).
const LIST_ATTEMPTS: u32 = 4;
const LIST_BACKOFF: Duration = Duration::from_millis(250);

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
}

/// What [`Assignments::prepare`] read for a partition from the output store.
struct Prepared {
    /// The replay point (None without a commit).
    replay_from: Option<i64>,
    /// A label partition's detectors, from its durable evaluations.
    restored: Option<sink::Restored>,
    /// A scored partition's label-free detectors, from its newest durable predictions file.
    served: Option<String>,
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
    /// Returns the partitions to assign when that is not all of `tpl` (some were not
    /// started).
    fn on_assign(
        &self,
        base: &BaseConsumer<Ctx>,
        tpl: &mut TopicPartitionList,
    ) -> Option<TopicPartitionList> {
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
        let mut not_started: Vec<(String, i32)> = Vec::new();
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
            // The replay point and the sweep read the output store. If it cannot be listed,
            // the partition is not started (not assigned to the consumer, and the process
            // not ready) rather than started from a guess: "no file" would replay from the
            // earliest offset, and an unswept partition could keep stale files.
            let prepared = self.prepare((&topic, partition, kind), commit, &meta, may_sweep);
            let Prepared {
                replay_from,
                restored,
                served,
            } = match prepared {
                Ok(r) => r,
                Err(e) => {
                    error!(
                        topic,
                        partition,
                        committed = ?commit,
                        attempts = LIST_ATTEMPTS,
                        %e,
                        "the output store cannot be listed: partition not started (not ready; \
                         the next rebalance or a restart tries again)"
                    );
                    not_started.push((topic, partition));
                    continue;
                }
            };
            info!(topic, partition, committed = ?commit, replay_from = ?replay_from, "partition assigned");
            let key = (topic.clone(), partition);
            self.durable
                .own(key.clone(), commit.unwrap_or(0), replay_from.unwrap_or(0));
            if let Some(t) = &self.training {
                t.holds.assigned(&key, replay_from.unwrap_or(0));
            }
            if let Some(r) = replay_from {
                seeks.push((topic.clone(), partition, r));
            }
            let mut state = Box::new(PartitionState::new(
                &self.metrics,
                &topic,
                partition,
                kind,
                commit.unwrap_or(i64::MIN),
                replay_from.unwrap_or(0),
                // A trainer scores nothing: its point partitions feed the history only.
                (kind == RecordKind::Point && self.cfg.pipeline.role != Role::Trainer)
                    .then(|| PartitionWindows::new(self.window_params)),
            ));
            if let Some(why) = restored.as_ref().and_then(|r| r.unreadable.as_ref()) {
                warn!(topic, partition, %why, "the errors' detectors' checkpoint cannot be decoded: they start clean");
                let unreadable = &self.metrics.checkpoints_unreadable;
                unreadable.with_label_values(&["quality_state"]).inc();
            }
            if let (Some(q), Some(r)) = (&self.quality, restored) {
                q.assigned(&key, &r.state, r.durable_through);
                state.quality = r.state;
            }
            if kind != RecordKind::Label && self.cfg.pipeline.role != Role::Trainer {
                state.served = self.quality.as_ref().and_then(ServedWatch::new);
                if let (Some(w), Some(c)) = (&mut state.served, served) {
                    if let Err(e) = w.restore(&c) {
                        warn!(topic, partition, %e, "the label-free detectors' checkpoint does not parse: they start over");
                        let unreadable = &self.metrics.checkpoints_unreadable;
                        unreadable.with_label_values(&["served_state"]).inc();
                    }
                }
            }
            // Queued ahead of the partition's first message (the fetch starts after this
            // callback returns), behind anything of an earlier assignment.
            if let Some(w) = &workers {
                if !w.send_control(w.index(&topic, partition), Work::Assign(key, state)) {
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
        // Partitions not started are left out of the consumer's assignment: nothing of
        // them is fetched, scored or committed (the group still counts them as ours).
        self.health
            .set_partitions_not_started(!not_started.is_empty());
        self.metrics
            .partitions_assigned
            .set(self.durable.owned() as i64);
        if not_started.is_empty() {
            return None;
        }
        let mut started = TopicPartitionList::new();
        for el in tpl.elements() {
            if !not_started.contains(&(el.topic().to_string(), el.partition())) {
                let _ = started.add_partition_offset(el.topic(), el.partition(), el.offset());
            }
        }
        Some(started)
    }

    /// A partition's replay point (with a commit) and the sweep of what the replay rewrites
    /// (`may_sweep`), then, for a label partition, its detectors restored from the durable
    /// evaluations (see `sink::restore_quality`); retried with backoff while the output store
    /// cannot be listed or read; the error of the last attempt when it never could.
    fn prepare(
        &self,
        (topic, partition, kind): (&str, i32, RecordKind),
        commit: Option<i64>,
        meta: &str,
        may_sweep: bool,
    ) -> std::io::Result<Prepared> {
        // Found once, kept across attempts (it is logged and counted when found).
        let mut found: Option<Option<i64>> = None;
        let mut counted: Option<Option<i64>> = None;
        let mut attempt = 1;
        loop {
            let r = match found {
                Some(r) => Ok(r),
                None => commit
                    .map(|c| self.replay_point(topic, partition, c, meta))
                    .transpose(),
            };
            let r = r.and_then(|r| {
                found = Some(r);
                let quality = self.quality.as_ref().filter(|_| kind == RecordKind::Label);
                // The highest label already counted: read before the sweep removes the
                // durable rows beyond the commit, which the replay writes (and would count)
                // again. Found once, kept across attempts (a failed sweep may remove some).
                if quality.is_some() && counted.is_none() {
                    counted = Some(sink::newest_quality_through(
                        &self.output,
                        topic,
                        partition,
                    )?);
                }
                if may_sweep {
                    self.sweep(topic, partition, commit.unwrap_or(0))?;
                }
                // A scored partition's label-free detectors, as its newest durable predictions
                // file left them (after the sweep: the replay emits from the commit on).
                let scored = kind != RecordKind::Label && self.cfg.pipeline.role != Role::Trainer;
                let served = match (commit, &self.quality) {
                    (Some(c), Some(_)) if scored && may_sweep => {
                        sink::served_checkpoint(&self.output, topic, partition, c)?
                    }
                    _ => None,
                };
                let restored = match quality {
                    Some(q) => {
                        let mut restored = sink::restore_quality(
                            &self.output,
                            q.config(),
                            topic,
                            partition,
                            r.filter(|_| may_sweep),
                        )?;
                        restored.durable_through = restored.durable_through.max(counted.flatten());
                        Some(restored)
                    }
                    None => None,
                };
                Ok(Prepared {
                    replay_from: r,
                    restored,
                    served,
                })
            });
            match r {
                Err(e) if attempt < LIST_ATTEMPTS => {
                    warn!(topic, partition, attempt, %e, "listing the output store failed; retrying");
                    std::thread::sleep(LIST_BACKOFF * 2u32.pow(attempt - 1));
                    attempt += 1;
                }
                r => return r,
            }
        }
    }

    /// The replay point of a partition committed at `committed` with commit metadata `meta`:
    /// from the metadata, the newest durable output file, or both (the one that replays more),
    /// logged and counted by source. An error when the output cannot be listed.
    fn replay_point(
        &self,
        topic: &str,
        partition: i32,
        committed: i64,
        meta: &str,
    ) -> std::io::Result<i64> {
        let from_meta = decode_metadata(meta);
        let dirs = [sink::PREDICTIONS_DIR, sink::DEAD_LETTERS_DIR];
        let mut from_file =
            sink::replay_point_from_files(&self.output, &dirs, topic, partition, committed)?;
        if let Some(t) = &self.training_store {
            // The training store's files carry the replay point too; the newest file wins.
            let from_store = sink::replay_point_from_files(t, &[""], topic, partition, committed)?
                .map(|(r, next, rel)| (r, next, format!("{}/{rel}", t.display())));
            if from_store.as_ref().map(|f| f.1) > from_file.as_ref().map(|f| f.1) {
                from_file = from_store;
            }
        }
        let (replay_from, source) =
            choose_replay_point(committed, from_meta, from_file.as_ref().map(|f| (f.0, f.1)));
        let file = from_file.as_ref().map(|f| f.2.clone());
        info!(
            topic,
            partition,
            committed,
            replay_from,
            source = source.as_str(),
            commit_metadata = ?from_meta,
            file_replay_from = ?from_file.as_ref().map(|f| f.0),
            file,
            "replay point"
        );
        self.metrics
            .replay_point_source
            .with_label_values(&[source.as_str()])
            .inc();
        Ok(replay_from)
    }

    /// Deletes the partition's outputs (and training-store files) from `from` on: the replay
    /// rewrites them. An error when the store cannot be listed or a file not deleted.
    fn sweep(&self, topic: &str, partition: i32, from: i64) -> std::io::Result<()> {
        let mut n = sink::sweep_partition(&self.output, topic, partition, from)?;
        if let Some(t) = &self.training_store {
            n += sink::sweep_tree(t, "", topic, partition, from)?;
        }
        if n > 0 {
            self.metrics.files_swept.inc_by(n as u64);
            info!(topic, partition, swept = n, "swept uncommitted output");
        }
        Ok(())
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
        info!(partitions = keys.len(), lost, "partitions revoked");
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
                // The list is librdkafka's: a subset goes in a list of our own.
                let subset = state.on_assign(base, tpl);
                let assigned = subset.as_ref().unwrap_or(tpl);
                if let Err(e) = base.assign(assigned) {
                    error!(%e, partitions = ?partition_names(assigned), "assign failed");
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
