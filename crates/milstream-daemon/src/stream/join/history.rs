//! Raw history for label joins: the recent points of every series and the recent bags by id.
//!
//! Points and labels arrive on different topics, so the worker that joins a label is in
//! general not the one that owns its series' points; the history is shared, in shards keyed
//! by series so writers rarely meet on a lock.
//!
//! Each kept point and bag remembers the partition and offset it came from, so that
//! the replay holds (`ReplayHolds`, `holds.rs`) can tell from which offset a points (or bags)
//! partition must be replayed to rebuild what a label still needs after a restart.
//!
//! In the daemon a series' closed blocks live on local disk (`history_log.rs`, one log per
//! shard) and memory holds their index only; a join reads the blocks it overlaps. A disk
//! error loses nothing silently: a block that cannot be written stays in memory; a block
//! that cannot be read makes the join of a label over it `Gone` (dead letter `unjoined`,
//! the error in its detail), drops a late point that falls into it, and adds no replay
//! point for it (its label is doomed anyway); each counts in
//! `milstream_history_io_errors_total` and the daemon goes on.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::{Arc, Mutex};

use lru::LruCache;
use prometheus::IntCounter;
use tracing::warn;

use crate::stream::ingest::position::{PartitionKey, Position};
use crate::stream::join::history_blocks::{Block, OpenBlock, Points, BLOCK_POINTS};
use crate::stream::join::history_index::BlockIndex;
use crate::stream::join::history_log::{BlockLog, BlockStore, Closed, Reader, Unreadable, Writer};

mod bags;
pub use bags::BagCache;

const SHARDS: usize = 16;

/// A series' kept points, in event-time order: closed blocks of [`BLOCK_POINTS`] encoded
/// exactly (`history_blocks.rs`), then the newest points uncompressed.
///
/// What a join sees is the *logical* history: the newest `max_points` points, none older
/// than the newest minus `horizon_ms`, exactly as if every point were kept one by one.
/// Memory is released a whole block at a time, once every point of the oldest block is
/// outside that view, so a series holds at most one block more than it shows.
#[derive(Default)]
struct Kept {
    channels: usize,
    /// Oldest first; block i's last event time is before block i + 1's first.
    closed: BlockIndex,
    closed_points: usize,
    /// The points after every closed block, until they fill one (encoded as they come).
    open: OpenBlock,
    /// The newest event time of a dropped block. The logical history is always the newest
    /// part of what arrived, so a point at or before this time would never be seen again:
    /// it is not kept (and that keeps what is kept a suffix of what arrived).
    dropped_to: Option<i64>,
    /// The partitions its points came from: one, unless its producer does not key points by
    /// series.
    sources: Vec<(Arc<str>, i32)>,
    /// Wall-clock ms when its last point arrived (see [`Shard::evict_idle`]).
    arrived_ms: i64,
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
        self.sources.push((Arc::clone(topic), partition));
        Some(i)
    }

    /// Starts the series afresh with `channels` values a point, releasing its blocks.
    fn reset(&mut self, channels: usize, w: &mut Writer) {
        for c in self.closed.iter() {
            w.release(c);
        }
        *self = Kept {
            channels,
            ..Kept::default()
        };
    }

    fn len(&self) -> usize {
        self.closed_points + self.open.len()
    }

    fn newest(&self) -> Option<i64> {
        self.open
            .last_ts()
            .or_else(|| self.closed.back().map(|b| b.last_ts))
    }

    /// The event time of the `k`-th kept point (oldest first).
    fn ts_at(&self, r: &Reader, mut k: usize) -> Result<Option<i64>, Unreadable> {
        for b in self.closed.iter() {
            if k < b.len() {
                return Ok(match k {
                    0 => Some(b.first_ts),
                    k if k + 1 == b.len() => Some(b.last_ts),
                    k => r.times(b)?.get(k).copied(),
                });
            }
            k -= b.len();
        }
        Ok(self.open.times().get(k).copied())
    }

    /// The first kept event time at or after `t`.
    fn first_at_or_after(&self, r: &Reader, t: i64) -> Result<Option<i64>, Unreadable> {
        let i = self.closed.partition_point(|b| b.last_ts < t);
        Ok(match self.closed.get(i) {
            Some(b) if b.first_ts >= t => Some(b.first_ts),
            Some(b) => r.times(b)?.into_iter().find(|&x| x >= t),
            None => self.open.times().into_iter().find(|&x| x >= t),
        })
    }

    /// The last kept event time at or before `t`.
    fn last_at_or_before(&self, r: &Reader, t: i64) -> Result<Option<i64>, Unreadable> {
        if self.open.first_ts().is_some_and(|f| f <= t) {
            return Ok(self.open.times().into_iter().take_while(|&x| x <= t).last());
        }
        let j = self.closed.partition_point(|b| b.first_ts <= t);
        let Some(b) = j.checked_sub(1).and_then(|j| self.closed.get(j)) else {
            return Ok(None);
        };
        Ok(if b.last_ts <= t {
            Some(b.last_ts)
        } else {
            r.times(b)?.into_iter().take_while(|&x| x <= t).last()
        })
    }

    /// The oldest point of the logical history: the newest `max_points`, none before the
    /// newest minus `horizon_ms`.
    fn front_ts(
        &self,
        r: &Reader,
        horizon_ms: i64,
        max_points: usize,
    ) -> Result<Option<i64>, Unreadable> {
        let Some(newest) = self.newest() else {
            return Ok(None);
        };
        let cutoff = newest.saturating_sub(horizon_ms);
        let Some(by_count) = self.ts_at(r, self.len().saturating_sub(max_points))? else {
            return Ok(None);
        };
        if by_count >= cutoff {
            Ok(Some(by_count))
        } else {
            self.first_at_or_after(r, cutoff)
        }
    }

    /// Whether a kept point at `t` is in the logical history (at or after
    /// [`front_ts`](Self::front_ts)). After every record the oldest block holds the logical
    /// front (an older one would have been dropped), so from its last point on no block needs
    /// decoding to tell.
    fn in_view(
        &self,
        r: &Reader,
        t: i64,
        horizon_ms: i64,
        max_points: usize,
    ) -> Result<bool, Unreadable> {
        if self.closed.front().is_some_and(|b| t >= b.last_ts) {
            return Ok(true);
        }
        Ok(self
            .front_ts(r, horizon_ms, max_points)?
            .is_some_and(|f| t >= f))
    }

    /// The kept points with `lo <= ts <= hi`, decoding only the blocks that overlap (and
    /// their offsets only if asked).
    fn points_in(
        &self,
        r: &Reader,
        lo: i64,
        hi: i64,
        offsets: bool,
    ) -> Result<(Points, std::ops::Range<usize>), Unreadable> {
        let mut p = Points::default();
        let i = self.closed.partition_point(|b| b.last_ts < lo);
        for b in self.closed.iter_from(i) {
            if b.first_ts > hi {
                break;
            }
            r.decode_into(b, self.channels, &mut p, offsets)?;
        }
        if self.open.first_ts().is_some_and(|f| f <= hi) {
            self.open.decode_into(&mut p, offsets);
        }
        let from = p.ts.partition_point(|&t| t < lo);
        let to = p.ts.partition_point(|&t| t <= hi);
        Ok((p, from..to.max(from)))
    }

    /// Encodes the open points into a closed block.
    fn close_open(&mut self, w: &mut Writer) {
        self.closed_points += self.open.len();
        let (block, bits) = std::mem::take(&mut self.open).close();
        let closed = w.store(block, bits);
        self.closed.push_back(closed);
    }

    /// Inserts a point into a closed block (a late point): decode, insert, encode again (in
    /// blocks of at most [`BLOCK_POINTS`], written anew; the old bytes become garbage). False
    /// when its event time is kept already.
    fn insert_closed(
        &mut self,
        w: &mut Writer,
        read_errors: &IntCounter,
        ts_ms: i64,
        values: &[f64],
        offset: i64,
        source: u16,
    ) -> Result<bool, Unreadable> {
        let i = self.closed.partition_point(|b| b.last_ts < ts_ms);
        let Some(b) = self.closed.get(i) else {
            return Ok(false);
        };
        let mut p = Points::default();
        w.reader(read_errors)
            .decode_into(b, self.channels, &mut p, true)?;
        if !p.insert(self.channels, ts_ms, values, offset, source) {
            return Ok(false);
        }
        let c = self.channels;
        let mut blocks: Vec<Closed> = Vec::new();
        let mut at = 0;
        while at < p.len() {
            let to = (at + BLOCK_POINTS).min(p.len());
            let (block, bits) = Block::encode(c, &p.slice(c, at..to));
            blocks.push(w.store(block, bits));
            at = to;
        }
        let old = self.closed.replace(i, blocks);
        w.release(&old);
        self.closed_points += 1;
        Ok(true)
    }

    /// Heap bytes held by this series' points (the index, blocks held in memory and the
    /// open points; not the bytes on disk).
    #[cfg(test)]
    fn heap_bytes(&self) -> usize {
        self.closed.heap_bytes() + self.open.heap_bytes()
    }
}

/// A shard of series: id -> kept points, least recently arrived first, and the log their
/// closed blocks are in (None: in memory).
struct Shard {
    series: LruCache<String, Kept>,
    blocks: BlockStore,
}

impl Default for Shard {
    fn default() -> Self {
        Self {
            series: LruCache::unbounded(),
            blocks: BlockStore::default(),
        }
    }
}

impl Shard {
    /// Drops the series none of whose points arrived since `cutoff_ms` (wall clock), with
    /// their blocks; returns how many. By arrival, not event time, so no device clock can
    /// make another series look idle; the LRU's front is the oldest arrival, so this costs
    /// O(1) a call plus one step per series dropped.
    fn evict_idle(&mut self, cutoff_ms: i64, errors: &HistoryErrors) -> u64 {
        let mut w = Writer {
            store: &mut self.blocks,
            errors: &errors.write,
        };
        let mut dropped = 0;
        while self
            .series
            .peek_lru()
            .is_some_and(|(_, k)| k.arrived_ms < cutoff_ms)
        {
            let (_, mut kept) = self.series.pop_lru().expect("peeked above");
            kept.reset(kept.channels, &mut w);
            dropped += 1;
        }
        dropped
    }

    /// Drops the `n` series whose last point arrived longest ago, with their blocks.
    fn evict_oldest(&mut self, n: usize, errors: &HistoryErrors) -> u64 {
        let mut w = Writer {
            store: &mut self.blocks,
            errors: &errors.write,
        };
        let mut dropped = 0;
        for _ in 0..n {
            let Some((_, mut kept)) = self.series.pop_lru() else {
                break;
            };
            kept.reset(kept.channels, &mut w);
            dropped += 1;
        }
        dropped
    }

    /// Once a sealed segment is less than half live, copies the live blocks of such
    /// segments forward and repoints them, so those segments go (the disk bound,
    /// `history_log.rs`). Each segment crosses half once, so this scan of the shard's index
    /// runs about once per segment written.
    fn compact(&mut self, errors: &HistoryErrors) {
        let Some(log) = self.blocks.log.as_mut() else {
            return;
        };
        if !log.take_compact_due() {
            return;
        }
        let sparse = log.sparse();
        if sparse.is_empty() {
            return;
        }
        let mut buf = Vec::new();
        for (_, kept) in self.series.iter_mut() {
            for c in kept.closed.iter_mut() {
                let Some(loc) = c.on_disk() else { continue };
                if !sparse.contains(&loc.segment) {
                    continue;
                }
                match log.read(loc, &mut buf) {
                    Ok(()) => match log.append(&buf) {
                        Ok(new) => {
                            log.release(loc);
                            c.moved_to(new);
                        }
                        Err(e) => {
                            errors.write.inc();
                            warn!(error = %e, "Compacting the label-join history failed; the block stays where it is.");
                        }
                    },
                    Err(e) => {
                        // It stays where it is: its joins will report it.
                        errors.read.inc();
                        warn!(error = %e, "Reading a label-join history block to compact it failed.");
                    }
                }
            }
        }
    }
}

/// What a label's segment found.
#[derive(Debug, Clone, PartialEq)]
pub enum SegmentJoin {
    /// The segment's points in event-time order, `channels` values per point (point by
    /// point, channel by channel).
    Ready { channels: usize, values: Vec<f64> },
    /// The series has no points up to the segment's end yet: try again later.
    NotYet,
    /// The segment starts before the kept history (or holds no points, or a block it needs
    /// cannot be read): it never will join.
    Gone(String),
}

/// Failed reads and writes of history blocks (the metric's two series).
struct HistoryErrors {
    read: IntCounter,
    write: IntCounter,
}

/// Recent points per series: at most `max_points`, none older than the newest minus
/// `horizon_ms`; a series none of whose points arrived for `horizon_ms` of wall-clock time
/// leaves (so unique ids cannot grow the map without bound).
pub struct SeriesHistory {
    shards: Vec<Mutex<Shard>>,
    horizon_ms: i64,
    max_points: usize,
    /// Series a shard keeps at most (the history's bound over the shards).
    max_series_per_shard: usize,
    errors: HistoryErrors,
    /// Series dropped for idleness.
    evicted: IntCounter,
}

fn shard_of(key: &str) -> usize {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    (h.finish() as usize) % SHARDS
}

impl SeriesHistory {
    /// A history whose closed blocks stay in memory.
    pub fn new(horizon_ms: i64, max_points: usize) -> Self {
        let counter = |name: &str| {
            IntCounter::new(name, "history block I/O errors").expect("a valid metric name")
        };
        Self {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            horizon_ms,
            max_points: max_points.max(1),
            max_series_per_shard: usize::MAX,
            errors: HistoryErrors {
                read: counter("history_read_errors"),
                write: counter("history_write_errors"),
            },
            evicted: counter("history_evicted"),
        }
    }

    /// This history with its closed blocks on disk under `dir` (cleared first: a cache of
    /// an earlier run), one log per shard, segments rotating past `segment_bytes`.
    pub fn on_disk(mut self, dir: &Path, segment_bytes: u64) -> std::io::Result<Self> {
        match std::fs::remove_dir_all(dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        for (i, s) in self.shards.iter_mut().enumerate() {
            let shard = s.get_mut().expect("history lock");
            shard.blocks.log = Some(BlockLog::create(
                &dir.join(format!("{i:02}")),
                segment_bytes,
            )?);
        }
        Ok(self)
    }

    /// Writes every shard's buffered blocks (tests that damage the files first).
    #[cfg(test)]
    fn flush_logs(&self) {
        for s in &self.shards {
            if let Some(log) = s.lock().expect("history lock").blocks.log.as_mut() {
                log.flush().expect("the history log writes");
            }
        }
    }

    /// This history counting its failed block reads and writes in these counters.
    pub fn counting(mut self, read: IntCounter, write: IntCounter) -> Self {
        self.errors = HistoryErrors { read, write };
        self
    }

    /// This history keeping about `max_series` series at most (each shard its share):
    /// past it, the series whose last point arrived longest ago leaves.
    pub fn max_series(mut self, max_series: usize) -> Self {
        self.max_series_per_shard = max_series.div_ceil(SHARDS).max(1);
        self
    }

    /// This history counting the series it drops for idleness in `evicted`.
    pub fn counting_evictions(mut self, evicted: IntCounter) -> Self {
        self.evicted = evicted;
        self
    }

    /// Records a point from `source`, one value per channel (any order; a point at a kept
    /// timestamp replaces nothing). A point with another channel count than the kept ones
    /// starts the series afresh: its shape changed, and a segment never mixes shapes.
    pub fn record(&self, series_id: &str, source: Position, ts_ms: i64, values: &[f64]) {
        if let Some((first, rest)) = values.split_first() {
            self.record_parts(series_id, source, ts_ms, *first, rest);
        }
    }

    /// [`record`](Self::record) of a point given as its first channel and the others, as
    /// the decoder holds it (no per-point allocation).
    pub fn record_parts(
        &self,
        series_id: &str,
        source: Position,
        ts_ms: i64,
        first: f64,
        rest: &[f64],
    ) {
        self.record_run(series_id, source, [(ts_ms, first, rest)]);
    }

    /// [`record_parts`](Self::record_parts) of several points of one series from one
    /// source, in order: one lock and one lookup for the run (a 1,000-point message pays
    /// them once, not per point).
    pub fn record_run<'p>(
        &self,
        series_id: &str,
        source: Position,
        points: impl IntoIterator<Item = (i64, f64, &'p [f64])>,
    ) {
        let now = chrono::Utc::now().timestamp_millis();
        self.record_run_at(now, series_id, source, points);
    }

    /// [`record_run`](Self::record_run) at wall-clock time `now_ms`; then the shard's
    /// series idle since `now_ms - horizon_ms` leave.
    fn record_run_at<'p>(
        &self,
        now_ms: i64,
        series_id: &str,
        source: Position,
        points: impl IntoIterator<Item = (i64, f64, &'p [f64])>,
    ) {
        let mut points = points.into_iter().peekable();
        if points.peek().is_none() {
            return;
        }
        let mut guard = self.shards[shard_of(series_id)]
            .lock()
            .expect("history lock");
        let shard = &mut *guard;
        let mut w = Writer {
            store: &mut shard.blocks,
            errors: &self.errors.write,
        };
        if !shard.series.contains(series_id) {
            shard.series.put(series_id.to_string(), Kept::default());
        }
        // `get_mut` makes it the most recently arrived series.
        let kept = shard.series.get_mut(series_id).expect("put above");
        for (ts_ms, first, rest) in points {
            self.record_in(kept, &mut w, source, ts_ms, first, rest);
        }
        // After the points: a change of channels resets the series, this field too.
        kept.arrived_ms = now_ms;
        let cutoff = now_ms.saturating_sub(self.horizon_ms);
        self.evicted.inc_by(shard.evict_idle(cutoff, &self.errors));
        let over = shard.series.len().saturating_sub(self.max_series_per_shard);
        if over > 0 {
            // The series just recorded is the most recent: the oldest arrivals go first.
            self.evicted.inc_by(shard.evict_oldest(over, &self.errors));
        }
        shard.compact(&self.errors);
    }

    fn record_in(
        &self,
        kept: &mut Kept,
        w: &mut Writer,
        Position {
            topic,
            partition,
            offset,
        }: Position,
        ts_ms: i64,
        first: f64,
        rest: &[f64],
    ) {
        let c = 1 + rest.len();
        if kept.channels != c {
            kept.reset(c, w);
        }
        let source = match kept.source_index(topic, partition) {
            Some(i) => i,
            None => {
                // More partitions than an index holds (never in practice): start afresh.
                kept.reset(c, w);
                kept.source_index(topic, partition).expect("a first source")
            }
        };
        if kept.dropped_to.is_some_and(|d| ts_ms <= d) {
            // Older than a dropped block: outside the logical history for good.
            return;
        }
        let mut point = [0.0; 8];
        let spilled: Vec<f64>;
        let values: &[f64] = if c <= point.len() {
            point[0] = first;
            point[1..c].copy_from_slice(rest);
            &point[..c]
        } else {
            spilled = std::iter::once(first).chain(rest.iter().copied()).collect();
            &spilled
        };
        if kept.closed.back().is_none_or(|b| ts_ms > b.last_ts) {
            if !kept.open.insert(c, ts_ms, values, offset, source) {
                return;
            }
            if kept.open.len() >= BLOCK_POINTS {
                kept.close_open(w);
            }
        } else {
            match kept.insert_closed(w, &self.errors.read, ts_ms, values, offset, source) {
                Ok(true) => {}
                // Kept already, or its block is unreadable (counted): a join over that
                // block fails with the read error, so the point is not missed silently.
                Ok(false) | Err(_) => return,
            }
        }
        // Drop the oldest block once none of its points is in the logical history (see
        // `Kept`): all older than the horizon, or the newest `max_points` are after it.
        let cutoff = kept
            .newest()
            .unwrap_or(ts_ms)
            .saturating_sub(self.horizon_ms);
        while let Some(b) = kept.closed.front() {
            if b.last_ts >= cutoff && kept.len() - b.len() < self.max_points {
                break;
            }
            kept.dropped_to = Some(b.last_ts);
            kept.closed_points -= b.len();
            let old = kept.closed.pop_front().expect("the front block above");
            w.release(&old);
        }
    }

    /// Where a replay must start, per source partition, for the kept history to join the
    /// segment `[start_ms, end_ms]` again: the oldest offset among the kept points from the
    /// one at `start_ms` (else the last before it: [`segment`](Self::segment) wants the
    /// history to reach back to the start) up to the first at or after `end_ms` (the one
    /// that says the segment is complete). Empty when none of them is kept yet, or when a
    /// block it needs cannot be read (its label's join fails on that block too).
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
        let Some(kept) = shard.series.peek(series_id) else {
            return;
        };
        let r = Reader::new(&shard.blocks, &self.errors.read);
        let _ = self.replay_from_in(kept, &r, start_ms, end_ms, out);
    }

    fn replay_from_in(
        &self,
        kept: &Kept,
        r: &Reader,
        start_ms: i64,
        end_ms: i64,
        out: &mut HashMap<PartitionKey, i64>,
    ) -> Result<(), Unreadable> {
        let Some(newest) = kept.newest() else {
            return Ok(());
        };
        let (h, m) = (self.horizon_ms, self.max_points);
        let front = || Ok::<_, Unreadable>(kept.front_ts(r, h, m)?.unwrap_or(newest));
        // From the kept point at the start, else the last kept before it, else the oldest.
        let from = match kept.last_at_or_before(r, start_ms)? {
            Some(t) if kept.in_view(r, t, h, m)? => t,
            _ => front()?,
        };
        // To the first kept point at or after the end, else the newest.
        let to = match kept.first_at_or_after(r, end_ms)? {
            Some(t) if kept.in_view(r, t, h, m)? => t,
            Some(_) => front()?,
            None => newest,
        }
        .max(from);
        let (points, range) = kept.points_in(r, from, to, true)?;
        // The oldest offset per source index, then per partition.
        let mut oldest = vec![i64::MAX; kept.sources.len()];
        for i in range {
            let s = points.source(i) as usize;
            oldest[s] = oldest[s].min(points.offsets[i]);
        }
        for ((topic, partition), offset) in kept.sources.iter().zip(oldest) {
            if offset < i64::MAX {
                out.entry((topic.to_string(), *partition))
                    .and_modify(|o| *o = (*o).min(offset))
                    .or_insert(offset);
            }
        }
        Ok(())
    }

    /// The points of `series_id` with `start_ms <= ts <= end_ms`.
    pub fn segment(&self, series_id: &str, start_ms: i64, end_ms: i64) -> SegmentJoin {
        let shard = self.shards[shard_of(series_id)]
            .lock()
            .expect("history lock");
        let Some(kept) = shard.series.peek(series_id) else {
            return SegmentJoin::NotYet;
        };
        let r = Reader::new(&shard.blocks, &self.errors.read);
        self.segment_in(kept, &r, series_id, start_ms, end_ms)
            .unwrap_or_else(|Unreadable(why)| {
                SegmentJoin::Gone(format!("series '{series_id}': {why}"))
            })
    }

    fn segment_in(
        &self,
        kept: &Kept,
        r: &Reader,
        series_id: &str,
        start_ms: i64,
        end_ms: i64,
    ) -> Result<SegmentJoin, Unreadable> {
        let Some(newest) = kept.newest() else {
            return Ok(SegmentJoin::NotYet);
        };
        if newest < end_ms {
            return Ok(SegmentJoin::NotYet);
        }
        if !kept.in_view(r, start_ms, self.horizon_ms, self.max_points)? {
            let oldest = kept
                .front_ts(r, self.horizon_ms, self.max_points)?
                .unwrap_or(newest);
            return Ok(SegmentJoin::Gone(format!(
                "series '{series_id}' is kept from ts {oldest} on (training.history_ms / history_points); the segment starts at {start_ms}"
            )));
        }
        let (points, range) = kept.points_in(r, start_ms, end_ms, false)?;
        if range.is_empty() {
            return Ok(SegmentJoin::Gone(format!(
                "series '{series_id}' has no points in [{start_ms}, {end_ms}]"
            )));
        }
        let c = kept.channels;
        Ok(SegmentJoin::Ready {
            channels: c,
            values: points.values[range.start * c..range.end * c].to_vec(),
        })
    }

    /// Heap bytes held by the kept points of every series (not the maps and ids).
    #[cfg(test)]
    fn points_heap_bytes(&self) -> usize {
        self.shards
            .iter()
            .map(|s| {
                let s = s.lock().expect("history lock");
                s.series.iter().map(|(_, k)| k.heap_bytes()).sum::<usize>()
                    + s.blocks.memory.heap_bytes()
            })
            .sum()
    }

    /// Bytes in the logs' segment files now.
    pub fn disk_bytes(&self) -> u64 {
        self.shards
            .iter()
            .filter_map(|s| {
                s.lock()
                    .expect("history lock")
                    .blocks
                    .log
                    .as_ref()
                    .map(BlockLog::disk_bytes)
            })
            .sum()
    }

    /// Series with kept points.
    pub fn series(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().expect("history lock").series.len())
            .sum()
    }
}

/// The uncompressed store this module kept before its blocks, one point at a time: the
/// reference the blocks must agree with join for join.
#[cfg(test)]
mod reference {
    use std::collections::{HashMap, VecDeque};
    use std::sync::{Arc, Mutex};

    use super::{PartitionKey, Position, SegmentJoin};

    /// A series' kept points: event times in order, their values, `channels` per point (flat,
    /// so a univariate point costs no allocation of its own), and their source offsets.
    #[derive(Default)]
    pub struct Kept {
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
            let same = |s: &(Arc<str>, i32)| {
                s.1 == partition && (Arc::ptr_eq(&s.0, topic) || s.0 == *topic)
            };
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

    impl Kept {
        pub fn heap_bytes(&self) -> usize {
            8 * (self.ts.capacity() + self.values.capacity() + self.offsets.capacity())
                + 2 * self.source_of.capacity()
        }
    }

    pub struct SeriesHistory {
        pub shards: Vec<Mutex<HashMap<String, Kept>>>,
        horizon_ms: i64,
        max_points: usize,
    }

    fn shard_of(_key: &str) -> usize {
        0
    }

    impl SeriesHistory {
        pub fn new(horizon_ms: i64, max_points: usize) -> Self {
            Self {
                shards: vec![Mutex::new(HashMap::new())],
                horizon_ms,
                max_points: max_points.max(1),
            }
        }

        pub fn record_parts(
            &self,
            series_id: &str,
            Position {
                topic,
                partition,
                offset,
            }: Position,
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

    fn at(offset: i64) -> Position<'static> {
        static TOPIC: std::sync::OnceLock<Arc<str>> = std::sync::OnceLock::new();
        Position::new(TOPIC.get_or_init(|| Arc::from("points")), 0, offset)
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

    /// Finding 3 (the label-join history's series map never shrinks): a series none of
    /// whose points arrived for `horizon_ms` of wall-clock time leaves the history, blocks
    /// and all, counted, while a series that goes on stays; a million unique ids therefore
    /// hold only the last `horizon_ms` of them. At 593c8e9 every id stayed for good.
    #[test]
    fn a_new_id_on_every_point_keeps_the_history_within_its_series_bound() {
        let h = SeriesHistory::new(3_600_000, 1_000).max_series(1_600);
        let topic: Arc<str> = Arc::from("points");
        for i in 0..20_000i64 {
            h.record(&format!("u{i}"), Position::new(&topic, 0, i), i, &[1.0]);
        }
        // Each of the 16 shards keeps its share, 100; without the bound, all 20,000 stayed
        // for the whole hour of `history_ms`.
        assert!(h.series() <= 1_600, "{}", h.series());
        assert_eq!(h.segment("u19999", 19_999, 19_999), ready(vec![1.0]));
    }

    #[test]
    fn idle_series_leave_the_history() {
        let h = SeriesHistory::new(60_000, 1_000);
        let topic: Arc<str> = Arc::from("points");
        let src = Position::new(&topic, 0, 0);
        let run = |now: i64, id: &str, n: i64| {
            let pts: Vec<(i64, f64, &[f64])> = (0..n).map(|i| (now + i, 1.0, &[][..])).collect();
            h.record_run_at(now, id, src, pts);
        };
        for k in 0..100 {
            run(k, &format!("once-{k}"), 300);
        }
        // Steady series in every shard (a shard sweeps itself when it records).
        let steady = |now: i64| (0..200).for_each(|k| run(now, &format!("steady-{k}"), 1));
        steady(1_000);
        assert_eq!(h.series(), 300);
        steady(50_000);
        assert_eq!(h.series(), 300, "nothing idle for a minute yet");
        steady(61_000);
        assert_eq!(h.series(), 200, "the hundred one-off ids left");
        assert_eq!(h.evicted.get(), 100);
        let ready = h.segment("steady-7", 61_000, 61_000);
        assert!(matches!(ready, SegmentJoin::Ready { .. }), "{ready:?}");
        assert_eq!(h.segment("once-5", 5, 6), SegmentJoin::NotYet);
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
        h.record("s", Position::new(&other, 1, 100), 60, &[0.0]);
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

    /// A join's outcome with values as bit patterns (NaN payloads compare too).
    fn bits(j: SegmentJoin) -> Result<(usize, Vec<u64>), Option<String>> {
        match j {
            SegmentJoin::Ready { channels, values } => {
                Ok((channels, values.iter().map(|v| v.to_bits()).collect()))
            }
            SegmentJoin::NotYet => Err(None),
            SegmentJoin::Gone(why) => Err(Some(why)),
        }
    }

    /// What a test stream does: record a point, or ask a join (and its replay point).
    #[derive(Debug, Clone)]
    enum Step {
        /// Step from the newest ts (negative: a late point), channel count, partition.
        Point(i64, usize, i32, Vec<u64>),
        Join(i64, i64),
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        prop_oneof![
            30 => (
                prop_oneof![8 => 1i64..30, 1 => Just(0i64), 2 => -400i64..0],
                prop_oneof![40 => Just(1usize), 1 => Just(2usize)],
                prop_oneof![20 => Just(0i32), 1 => Just(1i32)],
                prop::collection::vec(
                    prop_oneof![
                        Just(0u64),
                        Just((-0.0f64).to_bits()),
                        Just(0x7ff8_0000_dead_beef),
                        Just(1.25f64.to_bits()),
                        (0i32..64).prop_map(|k| (f64::from(k) * 0.25).to_bits()),
                        any::<u64>(),
                    ],
                    2,
                ),
            )
                .prop_map(|(d, c, p, v)| Step::Point(d, c, p, v)),
            1 => (-3_000i64..50, 0i64..600).prop_map(|(back, len)| Step::Join(back, len)),
        ]
    }

    /// Plays `steps` into `h` and the uncompressed reference, comparing every join; after
    /// each step, `check` sees the history.
    fn same_joins_as_the_reference(
        h: &SeriesHistory,
        horizon: i64,
        max_points: usize,
        steps: Vec<Step>,
        mut check: impl FnMut(&SeriesHistory) -> Result<(), proptest::test_runner::TestCaseError>,
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        {
            let r = reference::SeriesHistory::new(horizon, max_points);
            let topics: [Arc<str>; 2] = [Arc::from("points"), Arc::from("points")];
            let mut newest = 1_000_000i64;
            // Consecutive points of one partition go to `h` as one run (as a message's
            // array does), each point to the reference on its own; a join flushes the run.
            let mut run: Vec<(i64, Vec<f64>)> = Vec::new();
            let mut run_src: Option<(i32, i64)> = None;
            let flush = |run: &mut Vec<(i64, Vec<f64>)>, src: Option<(i32, i64)>| {
                if let Some((p, offset)) = src {
                    let points = run.iter().map(|(ts, v)| (*ts, v[0], &v[1..]));
                    h.record_run("s", Position::new(&topics[p as usize], p, offset), points);
                }
                run.clear();
            };
            for (offset, s) in steps.into_iter().enumerate() {
                match s {
                    Step::Point(d, c, p, v) => {
                        let ts = newest + d;
                        newest = newest.max(ts);
                        let values: Vec<f64> = v[..c].iter().map(|b| f64::from_bits(*b)).collect();
                        if run_src.is_some_and(|(q, _)| q != p) || offset % 5 == 0 {
                            flush(&mut run, run_src.take());
                        }
                        // A run's points share one message's offset, as in the worker.
                        let (_, at) = *run_src.get_or_insert((p, 1_000 + 3 * offset as i64));
                        r.record_parts(
                            "s",
                            Position::new(&topics[p as usize], p, at),
                            ts,
                            values[0],
                            &values[1..],
                        );
                        run.push((ts, values));
                    }
                    Step::Join(back, len) => {
                        flush(&mut run, run_src.take());
                        let start = newest + back;
                        let end = start + len;
                        proptest::prop_assert_eq!(
                            bits(h.segment("s", start, end)),
                            bits(r.segment("s", start, end)),
                            "segment [{}, {}]",
                            start,
                            end
                        );
                        let (mut a, mut b) = (HashMap::new(), HashMap::new());
                        h.replay_from("s", start, end, &mut a);
                        r.replay_from("s", start, end, &mut b);
                        proptest::prop_assert_eq!(a, b, "replay_from [{}, {}]", start, end);
                    }
                }
                check(h)?;
            }
            flush(&mut run, run_src.take());
            check(h)?;
        }
        Ok(())
    }

    /// A scratch folder for a test's history log.
    fn scratch(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("milstream-history-{name}-{}", std::process::id()))
    }

    /// Bytes in the segment files and bytes the index points to.
    fn disk_and_live(h: &SeriesHistory) -> (u64, u64) {
        h.shards.iter().fold((0, 0), |(d, l), s| {
            let s = s.lock().unwrap();
            let log = s.blocks.log.as_ref().expect("on disk");
            (d + log.disk_bytes(), l + log.live_bytes())
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
        /// Random streams (irregular and late event times, repeats, NaN payloads, -0.0, a
        /// second channel count, a second partition) join exactly as the uncompressed store
        /// did: the same segments bit for bit, the same Gone / NotYet, the same replay points.
        #[test]
        fn blocks_join_exactly_as_the_uncompressed_store(
            horizon in 20i64..6_000,
            max_points in 1usize..700,
            steps in proptest::collection::vec(step(), 1..2_500),
        ) {
            let h = SeriesHistory::new(horizon, max_points);
            same_joins_as_the_reference(&h, horizon, max_points, steps, |_| Ok(()))?;
        }

        /// The same with the blocks on disk in segments of a few blocks each, so late
        /// points rewrite blocks, segments rotate, dead ones go and sparse ones are
        /// compacted under the joins; the files stay within twice the live blocks and a
        /// segment.
        #[test]
        fn blocks_on_disk_join_exactly_as_the_uncompressed_store(
            horizon in 20i64..6_000,
            max_points in 1usize..700,
            segment_bytes in 200u64..3_000,
            steps in proptest::collection::vec(step(), 1..2_500),
        ) {
            let dir = scratch("prop");
            let h = SeriesHistory::new(horizon, max_points).on_disk(&dir, segment_bytes).unwrap();
            same_joins_as_the_reference(&h, horizon, max_points, steps, |h| {
                let (disk, live) = disk_and_live(h);
                // Sealed segments at least half live, the current one up to a segment and a
                // block (a few KB at most here).
                proptest::prop_assert!(
                    disk <= 2 * live + segment_bytes + 8_000,
                    "{} bytes on disk for {} live", disk, live
                );
                Ok(())
            })?;
            proptest::prop_assert_eq!(h.errors.read.get() + h.errors.write.get(), 0);
            drop(h);
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    /// A GunPoint-like stream: its training series end to end, one point every 10 ms, the
    /// series' offsets 64 apart (a partition shared with 63 others).
    fn gunpoint_points(n: usize) -> Vec<(i64, f64, i64)> {
        let data = crate::stream::embedded::gunpoint_train();
        let values = data
            .samples
            .iter()
            .flat_map(|s| match s {
                crate::mil::Sample::Series(v) => v.clone(),
                _ => Vec::new(),
            })
            .cycle();
        values
            .take(n)
            .enumerate()
            .map(|(i, v)| (1_700_000_000_000 + 10 * i as i64, v, 7 + 64 * i as i64))
            .collect()
    }

    /// Random data: uniform values (every mantissa bit random), event times 1 s apart with
    /// up to 50 ms jitter, offsets 1 to 100 apart.
    fn random_points(n: usize) -> Vec<(i64, f64, i64)> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut ts, mut off) = (1_700_000_000_000i64, 0i64);
        (0..n)
            .map(|_| {
                ts += 1_000 + (next() % 101) as i64 - 50;
                off += 1 + (next() % 100) as i64;
                let v = (next() >> 11) as f64 / (1u64 << 53) as f64;
                (ts, v, off)
            })
            .collect()
    }

    /// Measurement, not a check of speed: bytes per kept point and the cost of a label join
    /// and of recording, for the blocks on disk, the blocks in memory and the uncompressed
    /// store, in the same run. Run with
    /// `cargo test --release --lib history::tests::footprint -- --ignored --nocapture`.
    /// Fails only if the blocks stop being smaller than the uncompressed store, or the
    /// blocks on disk stop leaving memory.
    #[test]
    #[ignore]
    fn footprint_and_join_cost() {
        const KEPT: usize = 3_600;
        const SERIES: usize = 50;
        const JOINS: usize = 20_000;
        let topic: Arc<str> = Arc::from("points");
        let dir = scratch("footprint");
        for (name, points) in [
            ("gunpoint-like", gunpoint_points(KEPT + 1_000)),
            ("random", random_points(KEPT + 1_000)),
        ] {
            let d = SeriesHistory::new(i64::MAX / 4, KEPT)
                .on_disk(&dir, 32 << 20)
                .unwrap();
            let h = SeriesHistory::new(i64::MAX / 4, KEPT);
            let r = reference::SeriesHistory::new(i64::MAX / 4, KEPT);
            let per_point = (SERIES * points.len()) as f64;
            let time = |f: &dyn Fn(&str, Position, i64, f64)| {
                let t = std::time::Instant::now();
                for s in 0..SERIES {
                    let id = format!("s{s}");
                    for &(ts, v, off) in &points {
                        f(&id, Position::new(&topic, 0, off), ts, v);
                    }
                }
                t.elapsed().as_nanos() as f64 / per_point
            };
            let record_old = time(&|id, src, ts, v| r.record_parts(id, src, ts, v, &[]));
            let record_mem = time(&|id, src, ts, v| h.record_parts(id, src, ts, v, &[]));
            let record_disk = time(&|id, src, ts, v| d.record_parts(id, src, ts, v, &[]));
            let n_points = (SERIES * KEPT) as f64;
            let mem_bytes = h.points_heap_bytes() as f64 / n_points;
            let disk_heap = d.points_heap_bytes() as f64 / n_points;
            let disk_file = d.disk_bytes() as f64 / n_points;
            let old_bytes = r.shards[0]
                .lock()
                .unwrap()
                .values()
                .map(reference::Kept::heap_bytes)
                .sum::<usize>() as f64
                / n_points;
            // Joins of 150-point segments (a GunPoint window) anywhere in the kept hour.
            let kept = &points[points.len() - KEPT..];
            let segs: Vec<(String, i64, i64)> = (0..JOINS)
                .map(|j| {
                    let at = (j * 7_919) % (KEPT - 150);
                    (format!("s{}", j % SERIES), kept[at].0, kept[at + 149].0)
                })
                .collect();
            let join = |f: &dyn Fn(&str, i64, i64) -> SegmentJoin| {
                let t = std::time::Instant::now();
                let mut total = 0usize;
                for (id, a, b) in &segs {
                    if let SegmentJoin::Ready { values, .. } = f(id, *a, *b) {
                        total += values.len();
                    }
                }
                assert_eq!(total, JOINS * 150, "every join found its 150 points");
                t.elapsed().as_nanos() as f64 / JOINS as f64
            };
            let join_disk = join(&|id, a, b| d.segment(id, a, b));
            let join_mem = join(&|id, a, b| h.segment(id, a, b));
            let join_old = join(&|id, a, b| r.segment(id, a, b));
            println!(
                "{name}: memory {disk_heap:.2} B/point with blocks on disk ({disk_file:.2} B/point \
                 in files), {mem_bytes:.2} with blocks in memory, {old_bytes:.2} uncompressed; \
                 join of 150 points {join_disk:.0} ns on disk, {join_mem:.0} in memory, \
                 {join_old:.0} uncompressed ({:.2}x, {:.2}x); record {record_disk:.0} ns/point \
                 on disk, {record_mem:.0} in memory, {record_old:.0} uncompressed",
                join_disk / join_old,
                join_mem / join_old,
            );
            assert!(mem_bytes < old_bytes, "{name}: blocks are smaller");
            assert!(
                disk_heap < mem_bytes / 2.0,
                "{name}: blocks on disk leave memory"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A disk that fails: a block that cannot be written stays in memory (joins stay
    /// exact); a block that cannot be read makes its joins `Gone` with the error, adds no
    /// replay point, drops a late point into it; each is counted and recording goes on.
    #[test]
    fn disk_errors_are_counted_and_lose_nothing_silently() {
        let dir = scratch("errors");
        let h = SeriesHistory::new(1 << 40, 1 << 20)
            .on_disk(&dir, 1 << 20)
            .unwrap();
        let r = reference::SeriesHistory::new(1 << 40, 1 << 20);
        let topic: Arc<str> = Arc::from("points");
        let both = |ts: i64| {
            h.record("s", Position::new(&topic, 0, ts), ts, &[ts as f64 * 0.5]);
            r.record_parts("s", Position::new(&topic, 0, ts), ts, ts as f64 * 0.5, &[]);
        };
        for ts in 0..300 {
            both(ts * 10);
        }
        // Damage the first block's bytes in its segment file.
        h.flush_logs();
        let shard = shard_of("s");
        let file = dir.join(format!("{shard:02}")).join("00000000.blocks");
        std::fs::write(&file, vec![0u8; 64]).unwrap();
        match h.segment("s", 0, 500) {
            SegmentJoin::Gone(why) => assert!(why.contains("unreadable"), "{why}"),
            other => panic!("a join over a damaged block: {other:?}"),
        }
        let mut out = HashMap::new();
        h.replay_from("s", 0, 500, &mut out);
        assert!(out.is_empty(), "no replay point from an unreadable block");
        // A late point into the damaged block is dropped (counted), not misplaced.
        h.record("s", Position::new(&topic, 0, 9_999), 15, &[1.0]);
        assert!(h.errors.read.get() >= 3);
        // The open points (both blocks were in the damaged file) still join exactly.
        assert_eq!(
            bits(h.segment("s", 2_560, 2_990)),
            bits(r.segment("s", 2_560, 2_990))
        );
        // Writes fail once the folder is gone (the next segment cannot be created, the
        // current one unlinked): blocks stay in memory and join exactly.
        let h = SeriesHistory::new(1 << 40, 1 << 20)
            .on_disk(&dir, 200)
            .unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let r = reference::SeriesHistory::new(1 << 40, 1 << 20);
        for ts in 0..1_000 {
            h.record("s", Position::new(&topic, 0, ts), ts * 10, &[ts as f64]);
            r.record_parts("s", Position::new(&topic, 0, ts), ts * 10, ts as f64, &[]);
        }
        assert!(
            h.errors.write.get() >= 6,
            "{} writes failed",
            h.errors.write.get()
        );
        assert_eq!(h.errors.read.get(), 0);
        for (a, b) in [(0, 9_990), (1_275, 5_000), (2_560, 2_570)] {
            assert_eq!(bits(h.segment("s", a, b)), bits(r.segment("s", a, b)));
        }
    }
}
