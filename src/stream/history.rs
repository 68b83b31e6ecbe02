//! Raw history for label joins: the recent points of every series and the recent bags by id.
//!
//! Points and labels arrive on different topics, so the worker that joins a label is in
//! general not the one that owns its series' points; the history is shared, in shards keyed
//! by series so writers rarely meet on a lock.

use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

const SHARDS: usize = 16;

/// A series' kept points: event times in order, and their values, `channels` per point
/// (flat, so a univariate point costs no allocation of its own).
#[derive(Default)]
struct Kept {
    channels: usize,
    ts: VecDeque<i64>,
    values: VecDeque<f64>,
}

/// A shard of series: id -> kept points.
type SeriesShard = Mutex<HashMap<String, Kept>>;
/// Bags by id (dim, row-major instances), and their arrival order.
type BagMap = (HashMap<String, (usize, Vec<f64>)>, VecDeque<String>);

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

    /// Records a point, one value per channel (any order; a point at a kept timestamp
    /// replaces nothing). A point with another channel count than the kept ones starts the
    /// series afresh: its shape changed, and a segment never mixes shapes.
    pub fn record(&self, series_id: &str, ts_ms: i64, values: &[f64]) {
        if let Some((first, rest)) = values.split_first() {
            self.record_parts(series_id, ts_ms, *first, rest);
        }
    }

    /// [`record`](Self::record) of a point given as its first channel and the others, as
    /// the decoder holds it (no per-point allocation).
    pub fn record_parts(&self, series_id: &str, ts_ms: i64, first: f64, rest: &[f64]) {
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
        if kept.ts.len() == kept.ts.capacity() {
            // A quarter more at a time, not twice: a daemon keeps the history of every
            // live series, and doubling would leave up to half of each unused.
            let more = kept.ts.len() / 4 + 16;
            kept.ts.reserve_exact(more);
            kept.values.reserve_exact(more * c);
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
            }
            Some(&last) if ts_ms == last => return,
            _ => {
                kept.ts.push_back(ts_ms);
                kept.values.extend(values());
            }
        }
        let newest = kept.ts.back().copied().unwrap_or(ts_ms);
        let cutoff = newest.saturating_sub(self.horizon_ms);
        while kept.ts.len() > self.max_points || kept.ts.front().is_some_and(|&t| t < cutoff) {
            kept.ts.pop_front();
            kept.values.drain(..c);
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

    pub fn insert(&self, bag_id: &str, dim: usize, instances: &[f64]) {
        if self.capacity == 0 {
            return;
        }
        let mut g = self.inner.lock().expect("bag cache lock");
        let (map, order) = &mut *g;
        if map
            .insert(bag_id.to_string(), (dim, instances.to_vec()))
            .is_none()
        {
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
        self.inner
            .lock()
            .expect("bag cache lock")
            .0
            .get(bag_id)
            .cloned()
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

    #[test]
    fn segments_join_wait_or_are_gone() {
        let h = SeriesHistory::new(100, 1_000);
        for ts in [10, 20, 40, 30, 50, 30] {
            h.record("s", ts, &[ts as f64]);
        }
        assert_eq!(h.segment("s", 20, 40), ready(vec![20.0, 30.0, 40.0]));
        assert_eq!(h.segment("s", 20, 60), SegmentJoin::NotYet);
        assert_eq!(h.segment("other", 0, 1), SegmentJoin::NotYet);
        // The horizon drops points older than newest - 100.
        h.record("s", 125, &[0.0]);
        assert!(matches!(h.segment("s", 10, 40), SegmentJoin::Gone(_)));
        assert_eq!(h.segment("s", 30, 50), ready(vec![30.0, 40.0, 50.0]));
        assert!(matches!(h.segment("s", 51, 60), SegmentJoin::Gone(_)));
    }

    #[test]
    fn multichannel_points_keep_every_channel_in_time_order() {
        let h = SeriesHistory::new(1_000, 3);
        for ts in [10, 30, 20, 40] {
            let t = ts as f64;
            h.record("imu", ts, &[t, -t]);
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
        h.record("imu", 50, &[1.0, 2.0, 3.0]);
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
        c.insert("a", 1, &[1.0]);
        c.insert("b", 1, &[2.0]);
        c.insert("c", 1, &[3.0]);
        assert!(c.get("a").is_none());
        assert_eq!(c.get("c"), Some((1, vec![3.0])));
    }
}
