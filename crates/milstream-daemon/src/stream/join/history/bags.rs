//! The label-join history's bags: the most recent bags by id, for labels that name a bag.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use prometheus::IntCounter;

use crate::stream::ingest::position::{PartitionKey, Position};

/// A kept bag: dim, row-major instances, and the partition and offset it came from.
type KeptBag = (usize, Vec<f64>, PartitionKey, i64);
/// Bags by id, their arrival order and the bytes they count for (see [`bag_bytes`]).
#[derive(Default)]
struct BagMap {
    bags: HashMap<String, KeptBag>,
    order: VecDeque<String>,
    bytes: usize,
}

/// The most recent bags by id: first in, first out beyond `capacity` bags or `max_bytes`
/// of them (a count alone let 10,000 bags of a mebibyte each hold 10 GiB).
pub struct BagCache {
    inner: Mutex<BagMap>,
    capacity: usize,
    max_bytes: usize,
    /// Bags dropped for either bound.
    evicted: IntCounter,
}

impl BagCache {
    /// A cache of at most `capacity` bags, of any size (see [`Self::bounded_to`]).
    pub fn new(capacity: usize) -> Self {
        Self {
            inner: Mutex::new(BagMap::default()),
            capacity,
            max_bytes: usize::MAX,
            evicted: IntCounter::new("bag_cache_evicted", "bags evicted").expect("a valid name"),
        }
    }

    /// This cache holding at most `max_bytes` of bags (ids and values, see [`bag_bytes`]),
    /// counting what it drops in `evicted`.
    pub fn bounded_to(mut self, max_bytes: usize, evicted: IntCounter) -> Self {
        self.max_bytes = max_bytes;
        self.evicted = evicted;
        self
    }

    /// Keeps a bag from the message at `offset` of `(topic, partition)`; a bag larger than
    /// the whole byte bound is not kept, nor the older bag of its id (its labels go
    /// `unjoined`).
    pub fn insert(
        &self,
        bag_id: &str,
        dim: usize,
        instances: &[f64],
        Position {
            topic,
            partition,
            offset,
        }: Position,
    ) {
        if self.capacity == 0 {
            return;
        }
        let mut g = self.inner.lock().expect("bag cache lock");
        let size = bag_bytes(bag_id, instances.len(), topic);
        if size > self.max_bytes {
            // Checked before the copy: no allocation the bound would not allow.
            // Nor is the older bag of its id kept: it is not the bag now (rare: a linear
            // scan of the order).
            if let Some(old) = g.bags.remove(bag_id) {
                g.bytes -= bag_bytes(bag_id, old.1.len(), &old.2 .0);
                g.order.retain(|id| id != bag_id);
            }
            self.evicted.inc();
            return;
        }
        let kept = (
            dim,
            instances.to_vec(),
            (topic.to_string(), partition),
            offset,
        );
        match g.bags.insert(bag_id.to_string(), kept) {
            Some(old) => g.bytes -= bag_bytes(bag_id, old.1.len(), &old.2 .0),
            None => g.order.push_back(bag_id.to_string()),
        }
        g.bytes += size;
        while g.order.len() > self.capacity || g.bytes > self.max_bytes {
            let Some(old) = g.order.pop_front() else {
                break;
            };
            // An id whose bag was dropped above (too large) is in `order` without one.
            if let Some(b) = g.bags.remove(&old) {
                g.bytes -= bag_bytes(&old, b.1.len(), &b.2 .0);
                self.evicted.inc();
            }
        }
    }

    /// (dim, row-major instances) of a kept bag.
    pub fn get(&self, bag_id: &str) -> Option<(usize, Vec<f64>)> {
        let g = self.inner.lock().expect("bag cache lock");
        g.bags.get(bag_id).map(|b| (b.0, b.1.clone()))
    }

    /// The partition and offset a kept bag came from: where a replay must start to keep it
    /// again.
    pub fn source(&self, bag_id: &str) -> Option<(PartitionKey, i64)> {
        let g = self.inner.lock().expect("bag cache lock");
        g.bags.get(bag_id).map(|b| (b.2.clone(), b.3))
    }

    /// Bytes the kept bags count for (see [`bag_bytes`]).
    pub fn bytes(&self) -> usize {
        self.inner.lock().expect("bag cache lock").bytes
    }
}

/// What a kept bag counts for against `max_bytes`: its values, its id twice (map and
/// order), its topic, and about 96 bytes of entry and allocation overhead.
fn bag_bytes(bag_id: &str, values: usize, topic: &str) -> usize {
    96 + 2 * bag_id.len() + topic.len() + 8 * values
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Finding 3 (the bag cache is bounded by count, not bytes): bags beyond `max_bytes`
    /// go oldest first, counted; a bag larger than the bound is not kept (nor the older bag
    /// of its id). At 593c8e9 all four stayed: a count (10,000) was the only bound.
    #[test]
    fn the_bag_cache_is_bounded_in_bytes() {
        let evicted = IntCounter::new("e", "e").unwrap();
        let c = BagCache::new(10_000).bounded_to(10_000, evicted.clone());
        let bag = vec![0.5; 400]; // 3,200 bytes of values
        for (i, id) in ["a", "b", "c", "d"].iter().enumerate() {
            c.insert(id, 4, &bag, Position::on("bags", 0, i as i64));
        }
        assert!(c.bytes() <= 10_000, "{}", c.bytes());
        assert_eq!(c.get("a"), None, "the oldest went");
        assert!(c.get("d").is_some());
        assert_eq!(evicted.get(), 1);
        c.insert("d", 4, &vec![0.5; 2_000], Position::on("bags", 0, 9));
        assert_eq!(
            c.get("d"),
            None,
            "too large for the bound: not kept, the old one dropped"
        );
        assert_eq!(evicted.get(), 2);
        c.insert("e", 4, &bag, Position::on("bags", 0, 10));
        assert!(c.get("b").is_some() && c.get("c").is_some() && c.get("e").is_some());
        assert!(c.bytes() <= 10_000);
    }

    #[test]
    fn the_bag_cache_forgets_the_oldest() {
        let c = BagCache::new(2);
        c.insert("a", 1, &[1.0], Position::on("bags", 0, 7));
        c.insert("b", 1, &[2.0], Position::on("bags", 0, 8));
        c.insert("c", 1, &[3.0], Position::on("bags", 1, 9));
        assert!(c.get("a").is_none());
        assert_eq!(c.get("c"), Some((1, vec![3.0])));
        assert_eq!(c.source("c"), Some((("bags".into(), 1), 9)));
        assert_eq!(c.source("a"), None);
    }
}
