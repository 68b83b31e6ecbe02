//! Which offsets are durable in every sink, and committing them.
//!
//! The writer marks a partition durable up to a segment's end once every sink holds the
//! segment; the committer commits that offset with the segment's replay point in the commit
//! metadata (`milstream:v1 replay_from=<offset>`), so a new owner of the partition can
//! rebuild its windows. We keep the replay point in Kafka's commit metadata (librdkafka's
//! mock cluster and real brokers keep it; brokers cap it at offset.metadata.max.bytes,
//! 4 KiB by default, far above our ~40 bytes) rather than in any local state store.
//!
//! Some Kafka-protocol brokers (Tansu, for one) drop commit metadata. So every output file
//! carries the same replay point in its own metadata, and on assignment
//! [`choose_replay_point`] takes the commit's, the newest durable file's, or the one that
//! replays more when both exist and disagree.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use rdkafka::{Offset, TopicPartitionList};

use super::position::PartitionKey;

/// One ownership of a partition by this process: each assignment starts a new one. A
/// segment carries the generation it was made under, and only the current generation's
/// segments are written or marked durable (see [`DurableOffsets::fence`]).
pub type Generation = u64;

const METADATA_PREFIX: &str = "milstream:v1 replay_from=";

/// Formats the replay point for the commit metadata.
pub fn encode_metadata(replay_from: i64) -> String {
    format!("{METADATA_PREFIX}{replay_from}")
}

/// Reads a replay point written by [`encode_metadata`]; None for anything else (a commit
/// by another tool, or none).
pub fn decode_metadata(metadata: &str) -> Option<i64> {
    metadata.strip_prefix(METADATA_PREFIX)?.trim().parse().ok()
}

/// Where a partition's replay point came from on assignment (the `source` label of
/// `milstream_replay_point_source_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplaySource {
    /// The commit's metadata.
    CommitMetadata,
    /// The newest durable output file's metadata: the commit had none, or the file ends at
    /// the committed offset and its replay point replays more.
    OutputFile,
    /// Neither exists: nothing was output below the committed offset, so the replay starts
    /// at the partition's earliest offset (what a first start would do), emitting from the
    /// committed offset on.
    Earliest,
}

impl ReplaySource {
    pub const ALL: [ReplaySource; 3] = [
        ReplaySource::CommitMetadata,
        ReplaySource::OutputFile,
        ReplaySource::Earliest,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ReplaySource::CommitMetadata => "commit_metadata",
            ReplaySource::OutputFile => "output_file",
            ReplaySource::Earliest => "earliest",
        }
    }
}

/// The replay point of a partition committed at `committed`, from the commit's metadata
/// and/or the newest durable file's (`from_file`: its replay point and the offset after its
/// last). Each is safe: it names the oldest offset a window alive at its position needs,
/// and windows alive later started no earlier. The metadata describes the committed
/// position itself; a file ending below it (segments without output moved the commit on)
/// describes an earlier one, so it only stands in when the metadata is missing. When both
/// describe the committed position and disagree, the one that replays more wins. Without
/// either, nothing durable was output below the commit: replay from offset 0 (the earliest
/// retained offset). Never beyond `committed`.
pub fn choose_replay_point(
    committed: i64,
    from_metadata: Option<i64>,
    from_file: Option<(i64, i64)>,
) -> (i64, ReplaySource) {
    let m = from_metadata.map(|m| m.min(committed));
    match (m, from_file) {
        (Some(m), Some((f, next))) if next == committed && f < m => (f, ReplaySource::OutputFile),
        (Some(m), _) => (m, ReplaySource::CommitMetadata),
        (None, Some((f, _))) => (f.min(committed), ReplaySource::OutputFile),
        (None, None) => (0, ReplaySource::Earliest),
    }
}

#[derive(Debug, Clone, Copy)]
struct PartitionOffsets {
    /// The ownership these offsets belong to.
    generation: Generation,
    /// Next offset whose outputs are not yet durable.
    durable_next: i64,
    /// Replay point that goes with `durable_next`.
    replay_from: i64,
    /// Last committed `durable_next`.
    committed_next: i64,
    /// The replay point the last commit carried (on assignment: the one it started from).
    committed_replay: i64,
}

/// One partition's commit: its next offset and the replay point in its metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub key: PartitionKey,
    pub next: i64,
    pub replay_from: i64,
}

/// Per partition: its latest generation, and the writes under way (of any generation).
#[derive(Default)]
struct Fences {
    /// The newest generation of each partition ever fenced (kept after a revoke, so a
    /// segment of an ownership that ended stays refused).
    latest: HashMap<PartitionKey, Generation>,
    next: Generation,
    in_flight: HashMap<PartitionKey, usize>,
}

/// Durable and committed offsets of the partitions this process owns.
#[derive(Default)]
pub struct DurableOffsets {
    inner: Mutex<HashMap<PartitionKey, PartitionOffsets>>,
    changed: Condvar,
    fences: Mutex<Fences>,
    /// Signalled when a write ends.
    write_ended: Condvar,
    /// Commit without the replay point in the metadata (`commit.metadata = false`): what a
    /// broker that drops commit metadata leaves; recovery then reads the output files.
    omit_metadata: bool,
}

impl DurableOffsets {
    /// Offsets committed with (`true`) or without the replay-point metadata.
    pub fn new(commit_metadata: bool) -> Self {
        Self {
            omit_metadata: !commit_metadata,
            ..Self::default()
        }
    }

    /// Starts a new generation of `key` and waits (at most `timeout`) until no write of an
    /// earlier one is under way: from then on no segment of an earlier ownership reaches the
    /// store, so a sweep after the fence is final. Returns the new generation, or how many
    /// writes were still under way at the timeout (the generation is new all the same).
    pub fn fence(&self, key: &PartitionKey, timeout: Duration) -> Result<Generation, usize> {
        let deadline = Instant::now() + timeout;
        let mut f = self.fences.lock().expect("fences lock");
        f.next += 1;
        let generation = f.next;
        f.latest.insert(key.clone(), generation);
        loop {
            let busy = f.in_flight.get(key).copied().unwrap_or(0);
            if busy == 0 {
                return Ok(generation);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(busy);
            }
            f = self
                .write_ended
                .wait_timeout(f, deadline - now)
                .expect("fences lock")
                .0;
        }
    }

    /// A write of a segment of `key` made under `generation` may begin: None when a later
    /// generation was fenced since (the segment is an earlier ownership's and is dropped).
    /// The fence waits for the returned turn to drop.
    pub fn begin_write(&self, key: &PartitionKey, generation: Generation) -> Option<WriteTurn<'_>> {
        let mut f = self.fences.lock().expect("fences lock");
        if f.latest.get(key) != Some(&generation) {
            return None;
        }
        *f.in_flight.entry(key.clone()).or_default() += 1;
        Some(WriteTurn {
            offsets: self,
            key: key.clone(),
        })
    }

    /// Starts tracking a partition assigned under `generation` (from [`Self::fence`]) whose
    /// committed offset is `committed`.
    pub fn own(&self, key: PartitionKey, generation: Generation, committed: i64, replay_from: i64) {
        let mut m = self.inner.lock().expect("durable offsets lock");
        m.insert(
            key,
            PartitionOffsets {
                generation,
                durable_next: committed,
                replay_from,
                committed_next: committed,
                committed_replay: replay_from,
            },
        );
    }

    /// The lowest offset a new owner of `key` may replay from as things stand: its
    /// committed offset or the replay point committed with it, whichever is lower. None when
    /// this process does not own it.
    pub fn committed_low(&self, key: &PartitionKey) -> Option<i64> {
        let inner = self.inner.lock().expect("durable lock");
        inner
            .get(key)
            .map(|p| p.committed_next.min(p.committed_replay))
    }

    /// Partitions owned.
    pub fn owned(&self) -> usize {
        self.inner.lock().expect("durable offsets lock").len()
    }

    /// The partition was revoked: its offsets are forgotten and its generation ends, so
    /// no segment of it still queued is written (the next owner replays them).
    pub fn disown(&self, key: &PartitionKey) {
        self.inner.lock().expect("durable offsets lock").remove(key);
        let mut f = self.fences.lock().expect("fences lock");
        f.next += 1;
        let ended = f.next;
        f.latest.insert(key.clone(), ended);
    }

    /// Every sink holds the outputs of offsets below `next` (a segment made under
    /// `generation`; one of an earlier ownership is ignored); a replay must start at
    /// `replay_from` to rebuild the windows as they were.
    pub fn mark_durable(
        &self,
        key: &PartitionKey,
        generation: Generation,
        next: i64,
        replay_from: i64,
    ) {
        let mut m = self.inner.lock().expect("durable offsets lock");
        if let Some(p) = m.get_mut(key).filter(|p| p.generation == generation) {
            if next > p.durable_next {
                p.durable_next = next;
                p.replay_from = replay_from;
            } else if replay_from > p.replay_from {
                // A segment of labels resolved late (below the durable offset: the labels came
                // before what they name) says that the labels it resolved need no replay.
                p.replay_from = replay_from.min(p.durable_next);
            }
        }
        self.changed.notify_all();
    }

    /// Waits until each partition in `targets` is durable up to its target offset, or the
    /// timeout passes; returns whether all got there.
    pub fn wait_durable(&self, targets: &[(PartitionKey, i64)], timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut m = self.inner.lock().expect("durable offsets lock");
        loop {
            let done = targets
                .iter()
                .all(|(k, t)| m.get(k).is_none_or(|p| p.durable_next >= *t));
            if done {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            m = self
                .changed
                .wait_timeout(m, deadline - now)
                .expect("durable offsets lock")
                .0;
        }
    }

    /// What is not durable of each owned partition, for the log: `topic/partition` with
    /// the offsets from its durable offset up to its target in `targets` (the offset after
    /// the last message its worker handled), or "from <durable> on" for a partition whose
    /// worker did not report one. Empty when everything owned is durable up to its target.
    pub fn not_durable(&self, targets: &[(PartitionKey, i64)]) -> Vec<String> {
        let m = self.inner.lock().expect("durable offsets lock");
        let mut out: Vec<String> = m
            .iter()
            .filter_map(
                |(k, p)| match targets.iter().find(|(t, _)| t == k).map(|(_, t)| *t) {
                    Some(t) if t <= p.durable_next => None,
                    Some(t) => Some(format!(
                        "{}/{} offsets {}..={}",
                        k.0,
                        k.1,
                        p.durable_next,
                        t - 1
                    )),
                    None => Some(format!("{}/{} from offset {} on", k.0, k.1, p.durable_next)),
                },
            )
            .collect();
        out.sort();
        out
    }

    /// Offsets to commit: owned partitions (or only `only`) whose durable offset moved
    /// since the last commit, or whose replay point `held` moves below the committed one,
    /// with their replay metadata. `held` is asked after the durable offsets are read, for
    /// the partitions' oldest offsets that labels still need (`holds.rs`): whatever is
    /// durable was recorded in the history before, so no need is missed.
    pub fn to_commit(
        &self,
        only: Option<&[PartitionKey]>,
        held: impl FnOnce() -> HashMap<PartitionKey, i64>,
    ) -> Option<(TopicPartitionList, Vec<Mark>)> {
        let owned: Vec<(PartitionKey, PartitionOffsets)> = {
            let m = self.inner.lock().expect("durable offsets lock");
            m.iter()
                .filter(|(k, _)| only.is_none_or(|o| o.contains(k)))
                .map(|(k, p)| (k.clone(), *p))
                .collect()
        };
        if owned.is_empty() {
            return None;
        }
        let held = held();
        let mut tpl = TopicPartitionList::new();
        let mut marks = Vec::new();
        for (k, p) in owned {
            let replay = held
                .get(&k)
                .map_or(p.replay_from, |&h| h.min(p.replay_from))
                .min(p.durable_next);
            // A hold lowers the replay point, and late labels' segments raise it, even when
            // nothing new is durable; without the metadata there is nowhere to put it.
            let moved = !self.omit_metadata && replay != p.committed_replay;
            if p.durable_next <= p.committed_next && !moved {
                continue;
            }
            tpl.add_partition_offset(&k.0, k.1, Offset::Offset(p.durable_next))
                .ok()?;
            if let (Some(mut e), false) = (tpl.find_partition(&k.0, k.1), self.omit_metadata) {
                e.set_metadata(encode_metadata(replay));
            }
            marks.push(Mark {
                key: k,
                next: p.durable_next,
                replay_from: replay,
            });
        }
        (!marks.is_empty()).then_some((tpl, marks))
    }

    /// Records a successful commit.
    pub fn committed(&self, marks: &[Mark]) {
        let mut m = self.inner.lock().expect("durable offsets lock");
        for mark in marks {
            if let Some(p) = m.get_mut(&mark.key) {
                if mark.next >= p.committed_next {
                    p.committed_next = mark.next;
                    p.committed_replay = mark.replay_from;
                }
            }
        }
    }
}

/// A write under way (see [`DurableOffsets::begin_write`]); its end wakes a waiting fence.
pub struct WriteTurn<'a> {
    offsets: &'a DurableOffsets,
    key: PartitionKey,
}

impl Drop for WriteTurn<'_> {
    fn drop(&mut self) {
        let mut f = self.offsets.fences.lock().expect("fences lock");
        if let Some(n) = f.in_flight.get_mut(&self.key) {
            *n = n.saturating_sub(1);
        }
        self.offsets.write_ended.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generation `k` is owned under.
    fn gen(d: &DurableOffsets, k: &PartitionKey) -> Generation {
        d.inner.lock().unwrap()[k].generation
    }

    #[test]
    fn metadata_round_trip() {
        assert_eq!(decode_metadata(&encode_metadata(1234)), Some(1234));
        assert_eq!(decode_metadata(""), None);
        assert_eq!(decode_metadata("something else"), None);
    }

    #[test]
    fn the_replay_point_that_replays_more_wins() {
        use ReplaySource::*;
        assert_eq!(
            choose_replay_point(100, Some(40), None),
            (40, CommitMetadata)
        );
        assert_eq!(
            choose_replay_point(100, None, Some((30, 90))),
            (30, OutputFile)
        );
        let same = choose_replay_point(100, Some(40), Some((40, 100)));
        assert_eq!(same, (40, CommitMetadata));
        let older_file = choose_replay_point(100, Some(40), Some((30, 100)));
        assert_eq!(older_file, (30, OutputFile));
        let newer_file = choose_replay_point(100, Some(30), Some((40, 100)));
        assert_eq!(newer_file, (30, CommitMetadata));
        // A file ending below the commit describes an earlier position: the metadata wins.
        let earlier = choose_replay_point(100, Some(40), Some((30, 90)));
        assert_eq!(earlier, (40, CommitMetadata));
        assert_eq!(choose_replay_point(100, None, None), (0, Earliest));
        assert_eq!(
            choose_replay_point(100, Some(120), None),
            (100, CommitMetadata)
        );
    }

    #[test]
    fn commits_can_leave_the_metadata_out() {
        let d = DurableOffsets::new(false);
        let k: PartitionKey = ("t".into(), 0);
        d.own(k.clone(), d.fence(&k, Duration::ZERO).unwrap(), 10, 5);
        d.mark_durable(&k, gen(&d, &k), 20, 12);
        let (tpl, _) = d.to_commit(None, HashMap::new).unwrap();
        assert_eq!(tpl.find_partition("t", 0).unwrap().metadata(), "");
        // Without metadata a hold has nowhere to go: it commits nothing by itself.
        d.committed(&[Mark {
            key: k.clone(),
            next: 20,
            replay_from: 12,
        }]);
        assert!(d
            .to_commit(None, || HashMap::from([(k.clone(), 3)]))
            .is_none());
    }

    #[test]
    fn only_durable_progress_is_committed() {
        let d = DurableOffsets::default();
        let k: PartitionKey = ("t".into(), 0);
        d.own(k.clone(), d.fence(&k, Duration::ZERO).unwrap(), 10, 5);
        assert!(d.to_commit(None, HashMap::new).is_none());
        d.mark_durable(&k, gen(&d, &k), 20, 12);
        let (tpl, marks) = d.to_commit(None, HashMap::new).unwrap();
        let e = tpl.find_partition("t", 0).unwrap();
        assert_eq!(e.offset(), Offset::Offset(20));
        assert_eq!(decode_metadata(e.metadata()), Some(12));
        d.committed(&marks);
        assert!(d.to_commit(None, HashMap::new).is_none());
        assert!(d.wait_durable(&[(k.clone(), 20)], Duration::from_millis(1)));
        assert!(!d.wait_durable(&[(k.clone(), 21)], Duration::from_millis(10)));
        // What is left unwritten, as the shutdown log names it.
        assert!(d.not_durable(&[(k.clone(), 20)]).is_empty());
        assert_eq!(
            d.not_durable(&[(k.clone(), 31)]),
            vec!["t/0 offsets 20..=30"]
        );
        assert_eq!(d.not_durable(&[]), vec!["t/0 from offset 20 on"]);
    }

    /// A label's hold lowers the committed replay point, with or without new durable
    /// offsets, and the commit after its release raises it again with the next progress.
    #[test]
    fn a_hold_lowers_the_committed_replay_point() {
        let d = DurableOffsets::default();
        let (k, other): (PartitionKey, PartitionKey) = (("t".into(), 0), ("t".into(), 1));
        d.own(k.clone(), d.fence(&k, Duration::ZERO).unwrap(), 10, 5);
        d.own(
            other.clone(),
            d.fence(&other, Duration::ZERO).unwrap(),
            0,
            0,
        );
        let commit = |held: HashMap<PartitionKey, i64>| {
            let (tpl, marks) = d.to_commit(None, || held)?;
            d.committed(&marks);
            let e = tpl.find_partition("t", 0)?;
            Some((e.offset(), decode_metadata(e.metadata())))
        };
        d.mark_durable(&k, gen(&d, &k), 20, 12);
        let hold = |o: i64| HashMap::from([(k.clone(), o)]);
        assert_eq!(commit(hold(8)), Some((Offset::Offset(20), Some(8))));
        // Nothing new durable: a lower hold commits the same offset with the lower point,
        // an equal or higher one commits nothing.
        assert_eq!(commit(hold(3)), Some((Offset::Offset(20), Some(3))));
        assert_eq!(commit(hold(3)), None);
        // Released: back to the segment's replay point.
        assert_eq!(commit(hold(15)), Some((Offset::Offset(20), Some(12))));
        // A late labels' segment below the durable offset raises it.
        d.mark_durable(&k, gen(&d, &k), 18, 16);
        assert_eq!(commit(HashMap::new()), Some((Offset::Offset(20), Some(16))));
        // Released: the next progress commits its own replay point.
        d.mark_durable(&k, gen(&d, &k), 30, 25);
        assert_eq!(commit(HashMap::new()), Some((Offset::Offset(30), Some(25))));
        // Never beyond the durable offset.
        d.mark_durable(&k, gen(&d, &k), 40, 45);
        assert_eq!(commit(HashMap::new()), Some((Offset::Offset(40), Some(40))));
    }

    /// A revoke that timed out with a write under way, and the partition assigned to this
    /// process again (an eager rebalance): the new ownership's fence waits for that write
    /// before its sweep, and the earlier ownership's queued segments are neither written
    /// nor marked durable. (Before generations, such a segment was written after the sweep
    /// and moved the durable offset past a range the replay had not rewritten yet.)
    #[test]
    fn a_new_ownership_fences_the_earlier_ones_writes() {
        let d = DurableOffsets::default();
        let k: PartitionKey = ("t".into(), 0);
        let g1 = d.fence(&k, Duration::ZERO).unwrap();
        d.own(k.clone(), g1, 10, 5);
        let turn = d.begin_write(&k, g1).expect("the owner writes");
        d.disown(&k);
        assert_eq!(d.fence(&k, Duration::from_millis(20)), Err(1));
        drop(turn);
        let g3 = d.fence(&k, Duration::ZERO).unwrap();
        assert!(g3 > g1);
        d.own(k.clone(), g3, 10, 5);
        assert!(d.begin_write(&k, g1).is_none());
        d.mark_durable(&k, g1, 50, 40);
        assert!(d.to_commit(None, HashMap::new).is_none());
        // A fence returns as soon as the write under way ends.
        let turn = d.begin_write(&k, g3).unwrap();
        std::thread::scope(|s| {
            s.spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                drop(turn);
            });
            assert!(d.fence(&k, Duration::from_secs(60)).is_ok());
        });
    }
}
