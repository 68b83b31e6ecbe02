//! The scoring workers' threads and queues. In: received messages (staged per worker,
//! then queued in batches) and control work from the rebalance callbacks. Out: each worker
//! thread runs [`Worker`]'s processing in queue (= offset) order and hands sealed segments
//! to the writers; at shutdown it returns its partitions' next offsets. Owns: the queues and
//! the messages staged but not queued yet. A partition always goes to the same worker.

use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::error;

use crate::config::Config;
use crate::stream::ingest::position::PartitionKey;
use crate::stream::output::sink::Segment;
use crate::stream::output::writer::Writers;
use crate::stream::score::worker::{Message, Work, Worker, WorkerEnv};

/// How often open segments are checked against the roll age.
pub fn seal_check_interval(cfg: &Config) -> Duration {
    Duration::from_millis((cfg.output.roll_age_ms / 4).clamp(10, 250))
}

/// A scoring worker's loop: processes its partitions' messages in queue (= offset) order,
/// seals by age, hands sealed segments to the writers, and on disconnect seals everything
/// and returns each partition's next offset for the final commit.
fn worker_loop(
    mut worker: Worker,
    mut rx: tokio::sync::mpsc::Receiver<Work>,
    writers: Arc<Writers>,
    tick: Duration,
) -> Vec<(PartitionKey, i64)> {
    let mut last_tick = Instant::now();
    let mut in_a_row = 0;
    while let Some(work) = rx.blocking_recv() {
        match work {
            Work::Messages {
                msgs,
                consumed_at,
                room: _room,
            } => {
                for msg in &msgs {
                    if let Some(seg) = contained(&mut worker, msg, consumed_at, &mut in_a_row) {
                        writers.send(seg);
                    }
                }
            }
            Work::Assign(key, state) => worker.assign(key, state),
            Work::Revoke { keys, seal, reply } => {
                let (segments, targets) = worker.revoke(keys, seal);
                for seg in segments {
                    writers.send(seg);
                }
                let _ = reply.send(targets);
            }
            Work::Tick => {
                for seg in worker.resolve_waiting() {
                    writers.send(seg);
                }
            }
        }
        if last_tick.elapsed() >= tick {
            last_tick = Instant::now();
            for seg in worker.seal_aged(false) {
                writers.send(seg);
            }
        }
    }
    let (segments, targets) = worker.finish();
    for seg in segments {
        writers.send(seg);
    }
    targets
}

/// Messages in a row whose handling panicked after which the worker stops catching: one
/// bad message is contained, but when every message panics the fault is the worker's (a
/// lock poisoned by an earlier panic, a broken invariant), not the messages'. The panic
/// then ends the thread, liveness fails (`/healthz` names it) and the pod restarts, rather
/// than the whole stream going to the dead letters.
pub const PANICS_IN_A_ROW: u32 = 64;

/// [`Worker::process`] inside a panic boundary: a panic while handling `msg` makes it a
/// dead letter (`internal`, with the panic's text; see [`Worker::panicked`] for what state
/// survives and why) and the worker goes on with the next message. `in_a_row` counts the
/// consecutive panics; at [`PANICS_IN_A_ROW`] the panic is let through.
pub fn contained(
    worker: &mut Worker,
    msg: &Message,
    consumed_at: Instant,
    in_a_row: &mut u32,
) -> Option<Segment> {
    // AssertUnwindSafe: what the panic may leave half-updated is `worker`'s partition
    // state, which `Worker::panicked` clears or explains.
    let panic = match catch_unwind(AssertUnwindSafe(|| worker.process(msg, consumed_at))) {
        Ok(seg) => {
            *in_a_row = 0;
            return seg;
        }
        Err(panic) => panic,
    };
    *in_a_row += 1;
    let why = panic_text(panic.as_ref());
    error!(
        topic = &*msg.topic,
        partition = msg.partition,
        offset = msg.offset,
        panic = why,
        in_a_row = *in_a_row,
        "Handling a message panicked: dead-lettered as `internal`."
    );
    if *in_a_row >= PANICS_IN_A_ROW {
        resume_unwind(panic);
    }
    worker.panicked(msg, why)
}

/// The message of a panic's payload (`panic!` with a literal or with format arguments).
pub fn panic_text(panic: &(dyn Any + Send)) -> &str {
    if let Some(s) = panic.downcast_ref::<&str>() {
        s
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s
    } else {
        "a panic without a message"
    }
}

/// A worker thread; it returns each of its partitions' next offset when its queue closes.
pub type WorkerThread = std::thread::JoinHandle<Vec<(PartitionKey, i64)>>;

/// Most messages handed to the workers in one go (one [`Work::Messages`] each at most):
/// a channel send and a wake-up per message cost more than decoding and scoring one point.
pub const MAX_BATCH: usize = 64;

/// The scoring workers' queues. A partition always goes to the same worker.
pub struct WorkerPool {
    txs: Vec<tokio::sync::mpsc::Sender<Work>>,
    /// Messages the consumer received and has not queued yet, per worker. A rebalance
    /// callback runs inside the consumer's poll, between two receives of one batch: it
    /// queues these before its own control work ([`send_control`](Self::send_control)),
    /// so a worker still sees every message received before an assign or revoke first.
    pending: std::sync::Mutex<Vec<Vec<Message>>>,
    /// Messages per [`Work::Messages`] at most.
    batch: usize,
    /// Per worker, `pipeline.queue_bytes` in KiB permits: a batch holds its payloads'
    /// share until processed, so a queue of 1,000-point arrays stays as bounded in memory
    /// as one of single points, whose bound is the message count.
    room: Vec<Arc<tokio::sync::Semaphore>>,
    room_kib: u32,
    owners: std::sync::Mutex<Owners>,
}

/// Which worker owns each partition. A partition seen for the first time (at its
/// assignment) goes to the worker with the fewest partitions and stays there for the life
/// of the pool, so routes cached by the consumer never go stale. A hash of the partition
/// gave one of two workers 3 of 4 partitions (`bench-stream --partitions 4`): that worker
/// was the whole pipeline's limit while the other idled.
#[derive(Debug, Default)]
pub struct Owners {
    /// Per topic: its name and, by partition, the owning worker.
    topics: Vec<(String, Vec<Option<usize>>)>,
    /// Partitions per worker.
    counts: Vec<usize>,
}

impl Owners {
    pub fn new(workers: usize) -> Self {
        Self {
            topics: Vec::new(),
            counts: vec![0; workers.max(1)],
        }
    }

    /// The partition's worker, chosen on first sight.
    pub fn owner(&mut self, topic: &str, partition: i32) -> usize {
        let t = match self.topics.iter().position(|(t, _)| t == topic) {
            Some(t) => t,
            None => {
                self.topics.push((topic.to_string(), Vec::new()));
                self.topics.len() - 1
            }
        };
        let by_partition = &mut self.topics[t].1;
        let p = usize::try_from(partition).unwrap_or(0);
        if by_partition.len() <= p {
            by_partition.resize(p + 1, None);
        }
        if let Some(i) = by_partition[p] {
            return i;
        }
        // The first of the least loaded: the order partitions are assigned in fills the
        // workers in turn.
        let (i, _) = self
            .counts
            .iter()
            .enumerate()
            .min_by_key(|&(i, &c)| (c, i))
            .expect("at least one worker");
        self.counts[i] += 1;
        by_partition[p] = Some(i);
        i
    }
}

impl WorkerPool {
    /// Starts `n` worker threads, each with a queue of about `queue` messages (in batches of
    /// at most [`MAX_BATCH`]) and at most `queue_bytes` of payload; their handles return each
    /// partition's next offset when the pool is dropped.
    pub fn start(
        env: &Arc<WorkerEnv>,
        n: usize,
        (queue, queue_bytes): (usize, usize),
        writers: &Arc<Writers>,
    ) -> std::io::Result<(Self, Vec<WorkerThread>)> {
        let n = n.max(1);
        let batch = MAX_BATCH.min(queue).max(1);
        // The bound stays `queue` messages: full batches fill the queue at `queue`.
        let depth = queue.div_ceil(batch).max(1);
        let tick = seal_check_interval(&env.cfg);
        let mut txs = Vec::new();
        let mut threads = Vec::new();
        for i in 0..n {
            let (tx, rx) = tokio::sync::mpsc::channel::<Work>(depth);
            let (worker, writers) = (Worker::in_pool(env.clone(), n), writers.clone());
            threads.push(
                std::thread::Builder::new()
                    .name(format!("milstream-score-{i}"))
                    .spawn(move || worker_loop(worker, rx, writers, tick))?,
            );
            txs.push(tx);
        }
        let pending = std::sync::Mutex::new(vec![Vec::new(); n]);
        let room_kib = u32::try_from(queue_bytes / 1024)
            .unwrap_or(u32::MAX >> 4)
            .max(1);
        let room = (0..n)
            .map(|_| Arc::new(tokio::sync::Semaphore::new(room_kib as usize)))
            .collect();
        Ok((
            Self {
                txs,
                pending,
                batch,
                room,
                room_kib,
                owners: std::sync::Mutex::new(Owners::new(n)),
            },
            threads,
        ))
    }

    /// Messages per [`Work::Messages`] at most.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Holds a received message for worker `i` until [`take_pending`](Self::take_pending).
    pub fn stage(&self, i: usize, msg: Message) {
        self.pending.lock().expect("pending lock")[i].push(msg);
    }

    /// The staged messages, per worker (cheap when there are none).
    pub fn take_pending(&self) -> Vec<(usize, Vec<Message>)> {
        let mut pending = self.pending.lock().expect("pending lock");
        pending
            .iter_mut()
            .enumerate()
            .filter(|(_, b)| !b.is_empty())
            .map(|(i, b)| (i, std::mem::take(b)))
            .collect()
    }

    /// The worker that owns `topic`/`partition` (see [`Owners`]).
    pub fn index(&self, topic: &str, partition: i32) -> usize {
        self.owners
            .lock()
            .expect("owners lock")
            .owner(topic, partition)
    }

    /// The queue of worker `i` (an [`index`](Self::index)).
    pub fn queue_of(&self, i: usize) -> &tokio::sync::mpsc::Sender<Work> {
        &self.txs[i]
    }

    /// Worker `i`'s payload budget (see [`room_for`](Self::room_for)).
    pub fn room_of(&self, i: usize) -> &Arc<tokio::sync::Semaphore> {
        &self.room[i]
    }

    /// The permits of [`room_of`](Self::room_of) a batch takes: its payload in KiB, at least
    /// one, at most the whole budget (a batch larger than it still goes, alone).
    pub fn room_for(&self, msgs: &[Message]) -> u32 {
        kib_of(msgs, self.room_kib)
    }

    /// Every worker's queue (for the ticker).
    pub fn queues(&self) -> Vec<tokio::sync::mpsc::Sender<Work>> {
        self.txs.clone()
    }

    /// Queues control work from a rebalance callback, which runs inside the consumer's
    /// poll and so may not await: waits in place while the worker's queue is full.
    pub fn send_control(&self, i: usize, work: Work) -> bool {
        // Messages received before this callback go first (see `pending`).
        for (w, msgs) in self.take_pending() {
            let need = self.room_for(&msgs);
            let room = loop {
                match self.room[w].clone().try_acquire_many_owned(need) {
                    Ok(room) => break room,
                    Err(_) => std::thread::sleep(Duration::from_millis(1)),
                }
            };
            let work = Work::Messages {
                msgs,
                consumed_at: Instant::now(),
                room,
            };
            self.send_waiting(w, work);
        }
        self.send_waiting(i, work)
    }

    /// Queues `work` to worker `i`, waiting in place while its queue is full; false when the
    /// worker has stopped.
    fn send_waiting(&self, i: usize, mut work: Work) -> bool {
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

/// `msgs`' payload in KiB, at least 1 and at most `budget`.
fn kib_of(msgs: &[Message], budget: u32) -> u32 {
    let bytes: usize = msgs.iter().map(|m| m.payload.len()).sum();
    u32::try_from(bytes.div_ceil(1024))
        .unwrap_or(u32::MAX)
        .clamp(1, budget)
}

#[cfg(test)]
mod tests {
    use super::{kib_of, Message, Owners};

    #[test]
    fn a_batch_takes_its_payload_in_kib_within_the_budget() {
        let msg = |bytes: usize| Message {
            topic: "points".into(),
            partition: 0,
            offset: 0,
            timestamp_ms: 0,
            payload: vec![b' '; bytes],
        };
        assert_eq!(kib_of(&[], 16), 1, "an empty batch still takes a permit");
        assert_eq!(kib_of(&[msg(40)], 16), 1);
        assert_eq!(kib_of(&[msg(1024), msg(1)], 16), 2);
        assert_eq!(kib_of(&vec![msg(45_000); 3], 1 << 14), 132);
        // Larger than the whole budget: it takes all of it and goes alone.
        assert_eq!(kib_of(&[msg(40 << 20)], 16), 16);
    }

    #[test]
    fn partitions_spread_evenly_and_stay_with_their_worker() {
        let mut o = Owners::new(2);
        let first: Vec<usize> = (0..4).map(|p| o.owner("points", p)).collect();
        assert_eq!(first, [0, 1, 0, 1]);
        // Asked again (the consumer's route, a revoke, a later assignment): the same worker.
        let again: Vec<usize> = (0..4).rev().map(|p| o.owner("points", p)).collect();
        assert_eq!(again, [1, 0, 1, 0]);
        // Another topic's partitions fill the workers on from there.
        assert_eq!(o.owner("bags", 0), 0);
        assert_eq!(o.owner("bags", 7), 1);
        let mut o = Owners::new(3);
        let owners: Vec<usize> = (0..16).map(|p| o.owner("points", p)).collect();
        for w in 0..3 {
            let n = owners.iter().filter(|&&i| i == w).count();
            assert!((5..=6).contains(&n), "worker {w} owns {n} of 16");
        }
    }
}
