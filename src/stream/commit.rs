//! Which offsets are durable in every sink, and committing them.
//!
//! The writer marks a partition durable up to a segment's end once every sink holds the
//! segment; the committer commits that offset with the segment's replay point in the commit
//! metadata (`milstream:v1 replay_from=<offset>`), so a new owner of the partition can
//! rebuild its windows. We keep the replay point in Kafka's commit metadata (librdkafka's
//! mock cluster and real brokers keep it; brokers cap it at offset.metadata.max.bytes,
//! 4 KiB by default, far above our ~40 bytes) rather than in any local state store.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use rdkafka::{Offset, TopicPartitionList};

pub type PartitionKey = (String, i32);

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

#[derive(Debug, Clone, Copy)]
struct PartitionOffsets {
    /// Next offset whose outputs are not yet durable.
    durable_next: i64,
    /// Replay point that goes with `durable_next`.
    replay_from: i64,
    /// Last committed `durable_next`.
    committed_next: i64,
}

/// Durable and committed offsets of the partitions this process owns.
#[derive(Default)]
pub struct DurableOffsets {
    inner: Mutex<HashMap<PartitionKey, PartitionOffsets>>,
    changed: Condvar,
}

impl DurableOffsets {
    /// Starts tracking an assigned partition whose committed offset is `committed`.
    pub fn own(&self, key: PartitionKey, committed: i64, replay_from: i64) {
        let mut m = self.inner.lock().expect("durable offsets lock");
        m.insert(
            key,
            PartitionOffsets {
                durable_next: committed,
                replay_from,
                committed_next: committed,
            },
        );
    }

    /// Partitions owned.
    pub fn owned(&self) -> usize {
        self.inner.lock().expect("durable offsets lock").len()
    }

    pub fn disown(&self, key: &PartitionKey) {
        self.inner.lock().expect("durable offsets lock").remove(key);
    }

    pub fn is_owned(&self, key: &PartitionKey) -> bool {
        self.inner
            .lock()
            .expect("durable offsets lock")
            .contains_key(key)
    }

    /// Every sink holds the outputs of offsets below `next`; a replay must start at
    /// `replay_from` to rebuild the windows as they were.
    pub fn mark_durable(&self, key: &PartitionKey, next: i64, replay_from: i64) {
        let mut m = self.inner.lock().expect("durable offsets lock");
        if let Some(p) = m.get_mut(key) {
            if next > p.durable_next {
                p.durable_next = next;
                p.replay_from = replay_from;
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

    /// Offsets to commit: owned partitions (or only `only`) whose durable offset moved
    /// since the last commit, with their replay metadata.
    pub fn to_commit(
        &self,
        only: Option<&[PartitionKey]>,
    ) -> Option<(TopicPartitionList, Vec<(PartitionKey, i64)>)> {
        let m = self.inner.lock().expect("durable offsets lock");
        let mut tpl = TopicPartitionList::new();
        let mut marks = Vec::new();
        for (k, p) in m.iter() {
            if only.is_some_and(|o| !o.contains(k)) || p.durable_next <= p.committed_next {
                continue;
            }
            tpl.add_partition_offset(&k.0, k.1, Offset::Offset(p.durable_next))
                .ok()?;
            if let Some(mut e) = tpl.find_partition(&k.0, k.1) {
                e.set_metadata(encode_metadata(p.replay_from.min(p.durable_next)));
            }
            marks.push((k.clone(), p.durable_next));
        }
        (!marks.is_empty()).then_some((tpl, marks))
    }

    /// Records a successful commit.
    pub fn committed(&self, marks: &[(PartitionKey, i64)]) {
        let mut m = self.inner.lock().expect("durable offsets lock");
        for (k, next) in marks {
            if let Some(p) = m.get_mut(k) {
                p.committed_next = p.committed_next.max(*next);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_round_trip() {
        assert_eq!(decode_metadata(&encode_metadata(1234)), Some(1234));
        assert_eq!(decode_metadata(""), None);
        assert_eq!(decode_metadata("something else"), None);
    }

    #[test]
    fn only_durable_progress_is_committed() {
        let d = DurableOffsets::default();
        let k: PartitionKey = ("t".into(), 0);
        d.own(k.clone(), 10, 5);
        assert!(d.to_commit(None).is_none());
        d.mark_durable(&k, 20, 12);
        let (tpl, marks) = d.to_commit(None).unwrap();
        let e = tpl.find_partition("t", 0).unwrap();
        assert_eq!(e.offset(), Offset::Offset(20));
        assert_eq!(decode_metadata(e.metadata()), Some(12));
        d.committed(&marks);
        assert!(d.to_commit(None).is_none());
        assert!(d.wait_durable(&[(k.clone(), 20)], Duration::from_millis(1)));
        assert!(!d.wait_durable(&[(k, 21)], Duration::from_millis(10)));
    }
}
