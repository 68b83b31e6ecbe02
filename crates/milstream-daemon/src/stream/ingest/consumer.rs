//! The consumer. In: Kafka messages of the subscribed topics. Out: each message, as a
//! plain [`Message`], on the queue of the worker that owns its partition; offset commits.
//! Owns: the `StreamConsumer`, its config, backpressure (pause / resume) and the commit loop.
//!
//! The consumer loop only receives and routes: each partition belongs to one scoring worker
//! (by hash), which processes its messages in offset order. The committer commits a
//! partition's offset only up to the end of its last durable segment, with the segment's
//! replay point in the metadata.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{CommitMode, Consumer, StreamConsumer};
use rdkafka::error::KafkaResult;
use rdkafka::message::{BorrowedMessage, Message as _};
use tracing::{error, info, warn};

use crate::config::Config;
use crate::stream::ingest::assignment::{Assignments, Ctx};
use crate::stream::ingest::registry::prefetch::RegistryInput;
use crate::stream::score::worker::{Message, Work};
use crate::stream::score::worker_pool::WorkerPool;

/// How long the consumer waits on a full worker queue before pausing its partitions.
const PAUSE_AFTER: Duration = Duration::from_millis(100);

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
    // Static membership: a restart with the same id gets its partitions back at once.
    if let Some(id) = cfg.instance_id() {
        c.set("group.instance.id", id);
    }
    for (k, v) in &cfg.kafka.properties {
        c.set(k, v);
    }
    // Commits are ours: only after every sink made the outputs durable.
    c.set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false");
    c
}

/// The group's consumer, with the rebalance callbacks of `ctx`.
pub fn create(cfg: &Config, bootstrap: &str, ctx: Ctx) -> KafkaResult<StreamConsumer<Ctx>> {
    consumer_config(cfg, bootstrap).create_with_context(ctx)
}

/// Which worker owns each partition and the topic's shared name, worked out once per
/// partition: the per-message path neither hashes nor allocates for the route.
#[derive(Default)]
struct Routes {
    /// Per topic (a handful): its name and, by partition, the owning worker.
    topics: Vec<(Arc<str>, Vec<Option<usize>>)>,
}

impl Routes {
    /// The topic's shared name and the index of the worker that owns the partition.
    fn route(&mut self, workers: &WorkerPool, topic: &str, partition: i32) -> (Arc<str>, usize) {
        let t = match self.topics.iter().position(|(t, _)| &**t == topic) {
            Some(t) => t,
            None => {
                self.topics.push((Arc::from(topic), Vec::new()));
                self.topics.len() - 1
            }
        };
        let (name, by_partition) = &mut self.topics[t];
        let p = usize::try_from(partition).unwrap_or(0);
        if by_partition.len() <= p {
            by_partition.resize(p + 1, None);
        }
        let i = *by_partition[p].get_or_insert_with(|| workers.index(topic, partition));
        (name.clone(), i)
    }
}

/// A message as the workers take it: no Kafka types past this point.
fn to_message(m: &BorrowedMessage, topic: Arc<str>) -> Message {
    Message {
        topic,
        partition: m.partition(),
        offset: m.offset(),
        timestamp_ms: m
            .timestamp()
            .to_millis()
            .unwrap_or_else(|| chrono::Utc::now().timestamp_millis()),
        payload: m.payload().unwrap_or(&[]).to_vec(),
    }
}

/// Receives and routes messages until `shutdown` changes.
pub async fn consume(
    state: &Assignments,
    consumer: &StreamConsumer<Ctx>,
    workers: &WorkerPool,
    registry: Option<&RegistryInput>,
    shutdown: &mut tokio::sync::watch::Receiver<bool>,
) {
    let mut routes = Routes::default();
    // One stream for the whole loop: `recv` registers and drops a waker slot per call.
    let mut stream = consumer.stream();
    let batch = workers.batch();
    // Partitions that could not be started are retried from here (see
    // `Assignments::retry_unstarted`), between batches.
    let mut retry = tokio::time::interval(Duration::from_secs(1));
    retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let first = tokio::select! {
            biased;
            _ = shutdown.changed() => break,
            _ = retry.tick() => {
                tokio::task::block_in_place(|| state.retry_unstarted(consumer));
                continue;
            }
            m = stream.next() => m,
        };
        let consumed_at = Instant::now();
        let mut received = 0;
        let mut next = first;
        // The first message, then whatever librdkafka already holds (without waiting), up
        // to a batch: one queue operation and one wake-up per worker per batch. A rebalance
        // callback inside one of these polls queues the staged messages before its own work.
        loop {
            match next {
                Some(Ok(m)) => {
                    let (topic, i) = routes.route(workers, m.topic(), m.partition());
                    let msg = to_message(&m, topic);
                    drop(m);
                    // An Avro or Protobuf message's schema is known before its worker
                    // decodes it.
                    if let Some(registry) = registry {
                        registry.prefetch(&msg.topic, &msg.payload).await;
                    }
                    workers.stage(i, msg);
                    received += 1;
                }
                Some(Err(e)) => warn!(%e, "consumer error"),
                None => {}
            }
            if received >= batch {
                break;
            }
            match stream.next().now_or_never() {
                Some(m) => next = m,
                None => break,
            }
        }
        for (i, msgs) in workers.take_pending() {
            dispatch(state, consumer, workers, i, msgs, consumed_at).await;
        }
    }
}

/// Queues a batch of messages for worker `worker`; when that worker is behind, pauses every
/// assigned partition until the batch is accepted (backpressure instead of memory growth).
async fn dispatch(
    state: &Assignments,
    consumer: &StreamConsumer<Ctx>,
    workers: &WorkerPool,
    worker: usize,
    msgs: Vec<Message>,
    consumed_at: Instant,
) {
    use tokio::sync::mpsc::error::TrySendError as E;
    let tx = workers.queue_of(worker);
    let (room, need) = (workers.room_of(worker), workers.room_for(&msgs));
    // Room for the payloads and a slot in the queue, both now (the usual case)...
    let now = match room.clone().try_acquire_many_owned(need) {
        Ok(r) => match tx.try_reserve() {
            Ok(slot) => Some(Ok((r, slot))),
            Err(E::Full(())) => None,
            Err(E::Closed(())) => Some(Err(())),
        },
        Err(_) => None,
    };
    // ...or waited for: a full queue for a moment is normal at full speed. Only a worker
    // that stays behind (a slow sink) gets the partitions paused, since a pause drops
    // librdkafka's prefetched messages and a resume fetches them again.
    let ready = || async {
        let r = room
            .clone()
            .acquire_many_owned(need)
            .await
            .expect("the pool never closes its budgets");
        tx.reserve().await.map(|slot| (r, slot)).map_err(|_| ())
    };
    let got = match now {
        Some(got) => got,
        None => match tokio::time::timeout(PAUSE_AFTER, ready()).await {
            Ok(got) => got,
            Err(_) => {
                let assignment = state.started(consumer.assignment().unwrap_or_default());
                let _ = consumer.pause(&assignment);
                state.metrics.partition_pauses.inc();
                let got = ready().await;
                let _ = consumer.resume(&assignment);
                got
            }
        },
    };
    match got {
        Ok((room, slot)) => slot.send(Work::Messages {
            msgs,
            consumed_at,
            room,
        }),
        Err(()) => worker_stopped(&msgs),
    }
}

/// Logs messages that could not be queued (cold path: the worker is gone).
fn worker_stopped(msgs: &[Message]) {
    if let Some(msg) = msgs.first() {
        error!(
            topic = &*msg.topic,
            partition = msg.partition,
            offset = msg.offset,
            messages = msgs.len(),
            "a scoring worker has stopped"
        );
    }
}

/// The committer: commits durable offsets every `commit.interval_ms` until `stop` changes.
pub fn spawn_committer(
    state: Arc<Assignments>,
    consumer: Arc<StreamConsumer<Ctx>>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    let every = Duration::from_millis(state.cfg.commit.interval_ms.max(10));
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stop.changed() => break,
            }
            commit_durable(&state, &consumer).await;
        }
    })
}

/// Commits every owned partition's durable offset that moved since the last commit.
pub async fn commit_durable(state: &Assignments, consumer: &Arc<StreamConsumer<Ctx>>) {
    let Some((tpl, marks)) = state.durable.to_commit(None, || state.held()) else {
        // Nothing pending (a failed commit stays pending until it succeeds, unless its
        // partitions went away): nothing is failing.
        state.health.set_commit_failing(false);
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
            if !state.first_commit_logged.swap(true, Ordering::Relaxed) {
                info!(
                    partitions = marks.len(),
                    "first offsets committed since the assignment"
                );
            }
            state.committed(&marks);
            state.metrics.commits.inc();
            state.health.set_commit_failing(false);
        }
        Err(e) => {
            state.metrics.commit_failures.inc();
            state.health.set_commit_failing(true);
            warn!(%e, "commit failed; will retry");
        }
    }
}
