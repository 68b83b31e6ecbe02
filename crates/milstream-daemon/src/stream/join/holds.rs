//! Replay holds: the points (and bags) a label still needs, kept replayable until the
//! label's outcome is committed. In: the labels a worker queues and resolves, the committer's
//! commits. Out: per points or bags partition, the oldest offset a restart must replay from
//! (taken into its committed replay point), and whether a label may join yet. Owns: each
//! label partition's needs, and the replay point last committed per partition (one mutex,
//! taken once per label and once per commit, never per point).
//!
//! Why: a label and its points travel on different topics. The history a label joins is a
//! cache of this process ([`SeriesHistory`], its blocks in a local log cleared at start;
//! [`BagCache`]) and a restart rebuilds it only from each points
//! partition's replay point, which follows the live windows. A label whose outcome is not
//! committed yet is replayed after a crash and must find its segment again, so the points
//! partition's committed replay point must not pass the segment while the label's offset is
//! at or beyond its label partition's committed replay point. Two rules keep that:
//!
//! 1. a label's need is registered when it is queued and released when its label partition
//!    commits a replay point past it (its example and evaluation row are then durable and
//!    never replayed), or when it is dead-lettered (a replay dead-letters it again); each
//!    commit of a points partition takes the min of its replay point and the offsets the
//!    needs map to ([`ReplayHolds::held`]), even when nothing new is durable;
//! 2. a label joins only once each points partition it reads from has committed a replay
//!    point at or below the points it reads ([`ReplayHolds::covered`]): a label that
//!    arrives after its points were committed past (a late label) waits one commit.
//!    A label still waiting for that at `training.label_wait_ms` joins anyway.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use crate::stream::ingest::commit::Mark;
use crate::stream::ingest::position::PartitionKey;
use crate::stream::join::history::{BagCache, SeriesHistory};

/// What a queued label needs from the history.
#[derive(Debug, Clone, PartialEq)]
pub enum Need {
    /// The points of `series` in `[start, end]`.
    Segment {
        series: String,
        start: i64,
        end: i64,
    },
    /// The bag `id`.
    Bag { id: String },
}

/// A label's place: the offset of its message and its index among the message's labels
/// (a message may hold an array of labels, each with its own need).
pub type LabelAt = (i64, u32);

#[derive(Default)]
struct Inner {
    /// Per label partition: each label in flight -> what it needs.
    needs: HashMap<PartitionKey, BTreeMap<LabelAt, Need>>,
    /// Per owned partition: the replay point its last commit carried (on assignment: the
    /// one it started from).
    committed: HashMap<PartitionKey, i64>,
}

/// The labels' needs and the committed replay points (see the module's doc).
#[derive(Default)]
pub struct ReplayHolds {
    inner: Mutex<Inner>,
}

impl ReplayHolds {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().expect("replay holds lock")
    }

    /// The label `at` of `labels` is queued: its need holds from now on.
    pub fn need(&self, labels: &PartitionKey, at: LabelAt, need: Need) {
        let mut g = self.lock();
        if let Some(n) = g.needs.get_mut(labels) {
            n.insert(at, need);
        } else {
            g.needs.entry(labels.clone()).or_default().insert(at, need);
        }
    }

    /// The label `at` of `labels` was dead-lettered: it holds nothing any more (its
    /// siblings in the same message still do).
    pub fn release(&self, labels: &PartitionKey, at: LabelAt) {
        if let Some(n) = self.lock().needs.get_mut(labels) {
            n.remove(&at);
        }
    }

    /// The partition `key` starts from `replay_from` (on assignment).
    pub fn assigned(&self, key: &PartitionKey, replay_from: i64) {
        self.lock().committed.insert(key.clone(), replay_from);
    }

    /// The partitions were revoked: their needs and commits are the next owner's.
    pub fn revoked(&self, keys: &[PartitionKey]) {
        let mut g = self.lock();
        for k in keys {
            g.needs.remove(k);
            g.committed.remove(k);
        }
    }

    /// Commits succeeded: each partition's replay point is recorded, and the labels below a
    /// label partition's committed replay point are released (never replayed again).
    pub fn committed(&self, marks: &[Mark]) {
        let mut g = self.lock();
        for m in marks {
            if let Some(n) = g.needs.get_mut(&m.key) {
                *n = n.split_off(&(m.replay_from, 0));
            }
            if let Some(c) = g.committed.get_mut(&m.key) {
                *c = m.replay_from;
            }
        }
    }

    /// Per points or bags partition, the oldest offset that a queued (or joined but not
    /// committed) label's segment or bag was read from: the partition's commit must not
    /// carry a replay point beyond it. Once per commit; the cost is the labels in flight
    /// times their segments' points.
    pub fn held(&self, history: &SeriesHistory, bags: &BagCache) -> HashMap<PartitionKey, i64> {
        let mut out = HashMap::new();
        let g = self.lock();
        for need in g.needs.values().flat_map(|n| n.values()) {
            sources(need, history, bags, &mut out);
        }
        out
    }

    /// Whether every partition that `need`'s kept points (or bag) came from has committed a
    /// replay point at or below them, so that a restart replays them (rule 2). A partition
    /// this process does not own (it was revoked) cannot be waited for.
    pub fn covered(&self, need: &Need, history: &SeriesHistory, bags: &BagCache) -> bool {
        let mut from = HashMap::new();
        sources(need, history, bags, &mut from);
        let g = self.lock();
        from.iter()
            .all(|(k, o)| g.committed.get(k).is_none_or(|c| c <= o))
    }

    /// Labels held, over every label partition (for tests and logs).
    pub fn len(&self) -> usize {
        self.lock().needs.values().map(BTreeMap::len).sum()
    }
}

/// Where a replay must start, per partition, to rebuild what `need` reads.
fn sources(
    need: &Need,
    history: &SeriesHistory,
    bags: &BagCache,
    out: &mut HashMap<PartitionKey, i64>,
) {
    match need {
        Need::Segment { series, start, end } => history.replay_from(series, *start, *end, out),
        Need::Bag { id } => {
            if let Some((k, o)) = bags.source(id) {
                let e = out.entry(k).or_insert(o);
                *e = (*e).min(o);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::stream::ingest::position::Position;

    fn key(topic: &str, p: i32) -> PartitionKey {
        (topic.to_string(), p)
    }

    fn mark(k: &PartitionKey, next: i64, replay_from: i64) -> Mark {
        Mark {
            key: k.clone(),
            next,
            replay_from,
        }
    }

    /// A label queued before its points holds their partition from the first point that
    /// arrives; the hold lasts through the join until the label's partition commits past it,
    /// and the join waits until the points partition's commit covers the segment.
    #[test]
    fn a_label_holds_its_points_until_its_partition_commits_past_it() {
        let (history, bags) = (SeriesHistory::new(1_000_000, 10_000), BagCache::new(10));
        let holds = ReplayHolds::default();
        let (points, labels) = (key("points", 0), key("labels", 0));
        let topic: Arc<str> = Arc::from("points");
        holds.assigned(&points, 0);
        holds.assigned(&labels, 0);
        let need = Need::Segment {
            series: "s".into(),
            start: 100,
            end: 200,
        };
        holds.need(&labels, (5, 0), need.clone());
        // No point yet: nothing to hold.
        assert!(holds.held(&history, &bags).is_empty());
        for (i, ts) in (50..=250).step_by(10).enumerate() {
            history.record("s", Position::new(&topic, 0, 1_000 + i as i64), ts, &[0.0]);
        }
        // The point at ts 100 is the 6th (offset 1005).
        assert_eq!(
            holds.held(&history, &bags),
            HashMap::from([(points.clone(), 1005)])
        );
        assert!(holds.covered(&need, &history, &bags));
        // The points partition committed past the segment (a late label's case): the join
        // waits for a commit that carries the hold.
        holds.committed(&[mark(&points, 1021, 1010)]);
        assert!(!holds.covered(&need, &history, &bags));
        holds.committed(&[mark(&points, 1021, 1005)]);
        assert!(holds.covered(&need, &history, &bags));
        // Joined, not yet committed: still held; committed past it: released.
        holds.committed(&[mark(&labels, 6, 5)]);
        assert_eq!(holds.len(), 1);
        holds.committed(&[mark(&labels, 7, 6)]);
        assert_eq!(holds.len(), 0);
        assert!(holds.held(&history, &bags).is_empty());
    }

    /// One message with an array of labels: each label holds its own need, and a sibling
    /// dead-lettered releases only its own (keyed by offset alone, the second label's need
    /// replaced the first's and one release dropped both).
    #[test]
    fn labels_of_one_message_hold_each_their_own_need() {
        let (history, bags) = (SeriesHistory::new(1_000, 100), BagCache::new(10));
        let holds = ReplayHolds::default();
        let labels = key("labels", 0);
        holds.need(&labels, (7, 0), Need::Bag { id: "a".into() });
        holds.need(&labels, (7, 1), Need::Bag { id: "b".into() });
        holds.need(&labels, (7, 2), Need::Bag { id: "c".into() });
        bags.insert("a", 1, &[1.0], Position::on("bags", 0, 10));
        bags.insert("b", 1, &[1.0], Position::on("bags", 0, 20));
        bags.insert("c", 1, &[1.0], Position::on("bags", 1, 30));
        assert_eq!(holds.len(), 3);
        assert_eq!(
            holds.held(&history, &bags),
            HashMap::from([(key("bags", 0), 10), (key("bags", 1), 30)])
        );
        // The third label is dead-lettered: the first two still hold.
        holds.release(&labels, (7, 2));
        assert_eq!(
            holds.held(&history, &bags),
            HashMap::from([(key("bags", 0), 10)])
        );
        // A commit of the label partition at the message releases all of them only past it.
        holds.committed(&[mark(&labels, 7, 7)]);
        assert_eq!(holds.len(), 2);
        holds.committed(&[mark(&labels, 8, 8)]);
        assert_eq!(holds.len(), 0);
    }

    #[test]
    fn bags_are_held_and_dead_letters_and_revokes_release() {
        let (history, bags) = (SeriesHistory::new(1_000, 100), BagCache::new(10));
        let holds = ReplayHolds::default();
        let labels = key("labels", 1);
        holds.need(&labels, (3, 0), Need::Bag { id: "b".into() });
        holds.need(&labels, (4, 0), Need::Bag { id: "c".into() });
        bags.insert("b", 1, &[1.0], Position::on("bags", 2, 40));
        bags.insert("c", 1, &[1.0], Position::on("bags", 2, 41));
        assert_eq!(
            holds.held(&history, &bags),
            HashMap::from([(key("bags", 2), 40)])
        );
        holds.release(&labels, (3, 0));
        assert_eq!(
            holds.held(&history, &bags),
            HashMap::from([(key("bags", 2), 41)])
        );
        holds.revoked(std::slice::from_ref(&labels));
        assert!(holds.held(&history, &bags).is_empty());
    }
}
