//! Raw history for label joins: the recent points of every series and the recent bags by id.
//!
//! Points and labels arrive on different topics, so the worker that joins a label is in
//! general not the one that owns its series' points; the history is shared, in shards keyed
//! by series so writers rarely meet on a lock.
//!
//! Each kept point and bag remembers the partition and offset it came from, so that
//! the replay holds (`ReplayHolds`, `holds.rs`) can tell from which offset a points (or bags)
//! partition must be replayed to rebuild what a label still needs after a restart.

use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use super::commit::PartitionKey;

const SHARDS: usize = 16;

/// Where a point or bag came from: its topic (the consumer's interned name), partition and
/// offset.
pub type Source<'a> = (&'a Arc<str>, i32, i64);

/// A series' kept points: event times in order, their values, `channels` per point (flat,
/// so a univariate point costs no allocation of its own), and their source offsets.
#[derive(Default)]
struct Kept {
    channels: usize,
    ts: VecDeque<i64>,
    values: VecDeque<f64>,
    /// The offset of each point's message, in step with `ts`.
    offsets: VecDeque<i64>,
    /// The partitions its points came from: one, unless its producer does not key points by
    /// series.
    sources: Vec<(Arc<str>, i32)>,
    /// Each point's index in `sources`, in step with `ts`; empty (nothing per point) while
    /// there is one source.
    source_of: VecDeque<u16>,
}

impl Kept {
    /// The index of `(topic, partition)` in `sources`, added if new; None when a series has
    /// come from more partitions than an index holds.
    fn source_index(&mut self, topic: &Arc<str>, partition: i32) -> Option<u16> {
        let same =
            |s: &(Arc<str>, i32)| s.1 == partition && (Arc::ptr_eq(&s.0, topic) || s.0 == *topic);
        if let Some(i) = self.sources.iter().position(same) {
            return Some(i as u16);
        }
        let i = u16::try_from(self.sources.len()).ok()?;
        if i == 1 {
            // A second source: from now on each point says which.
            self.source_of = std::iter::repeat_n(0, self.ts.len()).collect();
        }
        self.sources.push((Arc::clone(topic), partition));
        Some(i)
    }

    fn pop_front(&mut self) {
        self.ts.pop_front();
        self.values.drain(..self.channels);
        self.offsets.pop_front();
        self.source_of.pop_front();
    }
}

/// A shard of series: id -> kept points.
type SeriesShard = Mutex<HashMap<String, Kept>>;
/// A kept bag: dim, row-major instances, and the partition and offset it came from.
type KeptBag = (usize, Vec<f64>, PartitionKey, i64);
/// Bags by id, and their arrival order.
type BagMap = (HashMap<String, KeptBag>, VecDeque<String>);

/// What a label's segment found.
#[derive(Debug, Clone, PartialEq)]
pub enum SegmentJoin {
    /// The segment's points in event-time order, `channels` values per point (point by
    /// point, channel by channel).
    Ready { channels: usize, values: Vec<f64> },
    /// The series has no points up to the segment's end yet: try again later.
    NotYet,
    /// The segment starts before the kept history (or holds no points): it never will join.
    Gone(String),
}

/// Recent points per series: at most `max_points`, none older than the newest minus
/// `horizon_ms`.
pub struct SeriesHistory {
    shards: Vec<SeriesShard>,
    horizon_ms: i64,
    max_points: usize,
}

fn shard_of(key: &str) -> usize {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    (h.finish() as usize) % SHARDS
}

impl SeriesHistory {
    pub fn new(horizon_ms: i64, max_points: usize) -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            horizon_ms,
            max_points: max_points.max(1),
        }
    }

    /// Records a point from `source`, one value per channel (any order; a point at a kept
    /// timestamp replaces nothing). A point with another channel count than the kept ones
    /// starts the series afresh: its shape changed, and a segment never mixes shapes.
    pub fn record(&self, series_id: &str, source: Source, ts_ms: i64, values: &[f64]) {
        if let Some((first, rest)) = values.split_first() {
            self.record_parts(series_id, source, ts_ms, *first, rest);
        }
    }

    /// [`record`](Self::record) of a point given as its first channel and the others, as
    /// the decoder holds it (no per-point allocation).
    pub fn record_parts(
        &self,
        series_id: &str,
        (topic, partition, offset): Source,
        ts_ms: i64,
        first: f64,
        rest: &[f64],
    ) {
        let values = || std::iter::once(first).chain(rest.iter().copied());
        let mut shard = self.shards[shard_of(series_id)]
            .lock()
            .expect("history lock");
        let kept = match shard.get_mut(series_id) {
            Some(p) => p,
            None => shard.entry(series_id.to_string()).or_default(),
        };
        let c = 1 + rest.len();
        if kept.channels != c {
            *kept = Kept {
                channels: c,
                ..Kept::default()
            };
        }
        let source = match kept.source_index(topic, partition) {
            Some(i) => i,
            None => {
                // More partitions than an index holds (never in practice): start afresh.
                *kept = Kept {
                    channels: c,
                    ..Kept::default()
                };
                kept.source_index(topic, partition).expect("a first source")
            }
        };
        if kept.ts.len() == kept.ts.capacity() {
            // A quarter more at a time, not twice: a daemon keeps the history of every
            // live series, and doubling would leave up to half of each unused.
            let more = kept.ts.len() / 4 + 16;
            kept.ts.reserve_exact(more);
            kept.values.reserve_exact(more * c);
            kept.offsets.reserve_exact(more);
        }
        match kept.ts.back() {
            Some(&last) if ts_ms < last => {
                let at = kept.ts.partition_point(|&t| t < ts_ms);
                if kept.ts.get(at) == Some(&ts_ms) {
                    return;
                }
                kept.ts.insert(at, ts_ms);
                for (i, v) in values().enumerate() {
                    kept.values.insert(at * c + i, v);
                }
                kept.offsets.insert(at, offset);
                if kept.sources.len() > 1 {
                    kept.source_of.insert(at, source);
                }
            }
            Some(&last) if ts_ms == last => return,
            _ => {
                kept.ts.push_back(ts_ms);
                kept.values.extend(values());
                kept.offsets.push_back(offset);
                if kept.sources.len() > 1 {
                    kept.source_of.push_back(source);
                }
            }
        }
        let newest = kept.ts.back().copied().unwrap_or(ts_ms);
        let cutoff = newest.saturating_sub(self.horizon_ms);
        while kept.ts.len() > self.max_points || kept.ts.front().is_some_and(|&t| t < cutoff) {
            kept.pop_front();
        }
    }

    /// Where a replay must start, per source partition, for the kept history to join the
    /// segment `[start_ms, end_ms]` again: the oldest offset among the kept points from the
    /// one at `start_ms` (else the last before it: [`segment`](Self::segment) wants the
    /// history to reach back to the start) up to the first at or after `end_ms` (the one
    /// that says the segment is complete). Empty when none of them is kept yet.
    pub fn replay_from(
        &self,
        series_id: &str,
        start_ms: i64,
        end_ms: i64,
        out: &mut HashMap<PartitionKey, i64>,
    ) {
        let shard = self.shards[shard_of(series_id)]
            .lock()
            .expect("history lock");
        let Some(kept) = shard.get(series_id) else {
            return;
        };
        let n = kept.ts.len();
        if n == 0 {
            return;
        }
        let mut from = kept.ts.partition_point(|&t| t < start_ms);
        if from > 0 && kept.ts.get(from) != Some(&start_ms) {
            from -= 1;
        }
        let to = kept.ts.partition_point(|&t| t < end_ms).min(n - 1);
        // The oldest offset per source index, then per partition.
        let mut oldest = vec![i64::MAX; kept.sources.len()];
        for i in from..=to.max(from) {
            let s = kept.source_of.get(i).map_or(0, |&s| s as usize);
            oldest[s] = oldest[s].min(kept.offsets[i]);
        }
        for ((topic, partition), offset) in kept.sources.iter().zip(oldest) {
            if offset < i64::MAX {
                out.entry((topic.to_string(), *partition))
                    .and_modify(|o| *o = (*o).min(offset))
                    .or_insert(offset);
            }
        }
    }

    /// The points of `series_id` with `start_ms <= ts <= end_ms`.
    pub fn segment(&self, series_id: &str, start_ms: i64, end_ms: i64) -> SegmentJoin {
        let shard = self.shards[shard_of(series_id)]
            .lock()
            .expect("history lock");
        let Some(kept) = shard.get(series_id) else {
            return SegmentJoin::NotYet;
        };
        let (Some(&oldest), Some(&newest)) = (kept.ts.front(), kept.ts.back()) else {
            return SegmentJoin::NotYet;
        };
        if newest < end_ms {
            return SegmentJoin::NotYet;
        }
        if oldest > start_ms {
            return SegmentJoin::Gone(format!(
                "series '{series_id}' is kept from ts {oldest} on (training.history_ms / history_points); the segment starts at {start_ms}"
            ));
        }
        let from = kept.ts.partition_point(|&t| t < start_ms);
        let to = kept.ts.partition_point(|&t| t <= end_ms);
        if to <= from {
            return SegmentJoin::Gone(format!(
                "series '{series_id}' has no points in [{start_ms}, {end_ms}]"
            ));
        }
        let c = kept.channels;
        SegmentJoin::Ready {
            channels: c,
            values: kept.values.range(from * c..to * c).copied().collect(),
        }
    }

    /// Series with kept points.
    pub fn series(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().expect("history lock").len())
            .sum()
    }
}

/// The most recent bags by id (first in, first out beyond `capacity`).
pub struct BagCache {
    inner: Mutex<BagMap>,
    capacity: usize,
}

impl BagCache {
    pub fn new(capacity: usize) -> Self {
        Self {
            inner: Mutex::new((HashMap::new(), VecDeque::new())),
            capacity,
        }
    }

    /// Keeps a bag from the message at `offset` of `(topic, partition)`.
    pub fn insert(
        &self,
        bag_id: &str,
        dim: usize,
        instances: &[f64],
        (topic, partition, offset): (&str, i32, i64),
    ) {
        if self.capacity == 0 {
            return;
        }
        let mut g = self.inner.lock().expect("bag cache lock");
        let (map, order) = &mut *g;
        let kept = (
            dim,
            instances.to_vec(),
            (topic.to_string(), partition),
            offset,
        );
        if map.insert(bag_id.to_string(), kept).is_none() {
            order.push_back(bag_id.to_string());
        }
        while order.len() > self.capacity {
            if let Some(old) = order.pop_front() {
                map.remove(&old);
            }
        }
    }

    /// (dim, row-major instances) of a kept bag.
    pub fn get(&self, bag_id: &str) -> Option<(usize, Vec<f64>)> {
        let g = self.inner.lock().expect("bag cache lock");
        g.0.get(bag_id).map(|b| (b.0, b.1.clone()))
    }

    /// The partition and offset a kept bag came from: where a replay must start to keep it
    /// again.
    pub fn source(&self, bag_id: &str) -> Option<(PartitionKey, i64)> {
        let g = self.inner.lock().expect("bag cache lock");
        g.0.get(bag_id).map(|b| (b.2.clone(), b.3))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(values: Vec<f64>) -> SegmentJoin {
        SegmentJoin::Ready {
            channels: 1,
            values,
        }
    }

    fn at(offset: i64) -> Source<'static> {
        static TOPIC: std::sync::OnceLock<Arc<str>> = std::sync::OnceLock::new();
        (TOPIC.get_or_init(|| Arc::from("points")), 0, offset)
    }

    #[test]
    fn segments_join_wait_or_are_gone() {
        let h = SeriesHistory::new(100, 1_000);
        for ts in [10, 20, 40, 30, 50, 30] {
            h.record("s", at(ts), ts, &[ts as f64]);
        }
        assert_eq!(h.segment("s", 20, 40), ready(vec![20.0, 30.0, 40.0]));
        assert_eq!(h.segment("s", 20, 60), SegmentJoin::NotYet);
        assert_eq!(h.segment("other", 0, 1), SegmentJoin::NotYet);
        // The horizon drops points older than newest - 100.
        h.record("s", at(125), 125, &[0.0]);
        assert!(matches!(h.segment("s", 10, 40), SegmentJoin::Gone(_)));
        assert_eq!(h.segment("s", 30, 50), ready(vec![30.0, 40.0, 50.0]));
        assert!(matches!(h.segment("s", 51, 60), SegmentJoin::Gone(_)));
    }

    #[test]
    fn multichannel_points_keep_every_channel_in_time_order() {
        let h = SeriesHistory::new(1_000, 3);
        for ts in [10, 30, 20, 40] {
            let t = ts as f64;
            h.record("imu", at(ts), ts, &[t, -t]);
        }
        // At most 3 points: 10 is gone; 20 came late and sits in order.
        assert_eq!(
            h.segment("imu", 20, 40),
            SegmentJoin::Ready {
                channels: 2,
                values: vec![20.0, -20.0, 30.0, -30.0, 40.0, -40.0]
            }
        );
        assert!(matches!(h.segment("imu", 10, 40), SegmentJoin::Gone(_)));
        // Another channel count starts the series afresh.
        h.record("imu", at(50), 50, &[1.0, 2.0, 3.0]);
        assert_eq!(
            h.segment("imu", 50, 50),
            SegmentJoin::Ready {
                channels: 3,
                values: vec![1.0, 2.0, 3.0]
            }
        );
    }

    #[test]
    fn the_bag_cache_forgets_the_oldest() {
        let c = BagCache::new(2);
        c.insert("a", 1, &[1.0], ("bags", 0, 7));
        c.insert("b", 1, &[2.0], ("bags", 0, 8));
        c.insert("c", 1, &[3.0], ("bags", 1, 9));
        assert!(c.get("a").is_none());
        assert_eq!(c.get("c"), Some((1, vec![3.0])));
        assert_eq!(c.source("c"), Some((("bags".into(), 1), 9)));
        assert_eq!(c.source("a"), None);
    }

    /// The replay point of a segment: the oldest offset, per partition, from its first point
    /// (or the last before its start) to the first point at or after its end.
    #[test]
    fn a_segment_names_the_offsets_a_replay_must_start_from() {
        let h = SeriesHistory::new(10_000, 1_000);
        let other: Arc<str> = Arc::from("points");
        // Offsets follow arrival; ts 30 comes late (offset 7), ts 60 from partition 1.
        for (ts, offset) in [
            (10, 1),
            (20, 2),
            (40, 3),
            (50, 4),
            (70, 5),
            (80, 6),
            (30, 7),
        ] {
            h.record("s", at(offset), ts, &[0.0]);
        }
        h.record("s", (&other, 1, 100), 60, &[0.0]);
        let from = |start, end| {
            let mut out = HashMap::new();
            h.replay_from("s", start, end, &mut out);
            let mut v: Vec<(i32, i64)> = out.into_iter().map(|((_, p), o)| (p, o)).collect();
            v.sort();
            v
        };
        // [20, 40]: points 20, 30, 40 (offsets 2, 7, 3).
        assert_eq!(from(20, 40), vec![(0, 2)]);
        // [25, 40]: no point at 25, so the one before it (20) too.
        assert_eq!(from(25, 40), vec![(0, 2)]);
        // [40, 65]: 40, 50, 60 (partition 1), and 70, the first past the end.
        assert_eq!(from(40, 65), vec![(0, 3), (1, 100)]);
        // [75, 90]: 70 (before the start) and 80, the newest (the end is not here yet).
        assert_eq!(from(75, 90), vec![(0, 5)]);
        assert_eq!(from(0, 5), vec![(0, 1)]);
        let mut none = HashMap::new();
        h.replay_from("unknown", 0, 10, &mut none);
        assert!(none.is_empty());
        // The series kept its points' values and order through the second source.
        assert!(
            matches!(h.segment("s", 10, 80), SegmentJoin::Ready { ref values, .. } if values.len() == 8)
        );
    }
}
