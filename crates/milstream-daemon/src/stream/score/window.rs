//! Per-series event-time windows over one partition, scored incrementally.
//!
//! Points of a series are put in event-time order (up to `lateness_ms`), kept as the last W
//! points, and scored by a [`WindowScorer`] as they are released. A window is emitted when a
//! released point crosses a multiple of `hop_ms`: the window ending at the point before it,
//! which is its last W points (count windows) or its points of the last `duration_ms`
//! (duration windows, at most W).
//! Everything here is a function of the points' order within the partition, so replaying a
//! partition from the oldest offset still inside a live window rebuilds the same state and
//! re-emits the same windows (see `oldest_offset`). Two things are not replay-exact, by
//! design: a series evicted for capacity (the LRU bound) and the model in force.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use lru::LruCache;

use crate::mil::online::incremental::WindowScorer;
use crate::mil::{Explanation, Model};

use crate::stream::ingest::position::Position;
use crate::stream::ingest::record::{FindingSummary, Point, PredictionRecord, TopContribution};

/// A model in service, as the scorers see it.
pub struct ScoringModel {
    pub model: Model,
    /// Shown in every prediction (`model_version`).
    pub version: String,
    /// Changes with every swap; series built under another generation are rebuilt.
    pub generation: u64,
}

impl ScoringModel {
    /// The row of a window or bag this model scored (model name, key, `window` or `bag`),
    /// with its top `top_k` contributions and findings (`points`: the window's length, 0 for
    /// a bag).
    pub fn prediction_row(
        &self,
        (name, key, kind): (&str, String, &str),
        window: Option<(i64, i64)>,
        (e, points): (&Explanation, usize),
        src: Position,
        first_offset: i64,
        top_k: usize,
    ) -> PredictionRecord {
        let (findings, shown_share) = FindingSummary::of(e, points, top_k, &self.model);
        PredictionRecord {
            key,
            kind: kind.to_string(),
            window_start_ms: window.map(|w| w.0),
            window_end_ms: window.map(|w| w.1),
            label: e.prediction.label.clone(),
            classes: self.model.classes().to_vec(),
            scores: e.prediction.scores.clone(),
            model_kind: self.model.kind_name().to_string(),
            model_name: name.to_string(),
            model_version: self.version.clone(),
            top: TopContribution::top_named(e, top_k, &self.model),
            findings,
            shown_share,
            probabilities: self.model.probabilities(&e.prediction),
            source_topic: src.topic.to_string(),
            source_partition: src.partition,
            source_offset: src.offset,
            first_offset,
            emitted_at_ms: chrono::Utc::now().timestamp_millis(),
        }
    }
}

/// Window settings (from `[window]` in the config).
#[derive(Debug, Clone, Copy)]
pub struct WindowParams {
    /// Count windows: the last `points` points. Duration windows: at most this many.
    pub points: usize,
    /// Duration windows when > 0: the points within this many ms of the window's end.
    pub duration_ms: i64,
    pub hop_ms: i64,
    pub lateness_ms: i64,
    pub idle_timeout_ms: i64,
    pub max_series: usize,
}

/// A scored window of one series.
#[derive(Debug, Clone)]
pub struct ScoredWindow {
    pub series_id: String,
    pub start_ms: i64,
    pub end_ms: i64,
    /// Oldest source offset among the window's points.
    pub first_offset: i64,
    /// The points scored (its findings' positions count from its first).
    pub points: usize,
    pub explanation: Explanation,
    /// The window's values (its first channel), oldest first: what the live view draws.
    pub values: Vec<f64>,
}

/// Heap bytes of a partition's live series by part (see [`PartitionWindows::memory`]).
#[derive(Debug, Default, Clone, Copy)]
pub struct WindowMemory {
    pub series: usize,
    /// The map's buckets (each series' state inline), the ids and the model names.
    pub map: usize,
    /// Released points (event time, value, offset) and their other channels.
    pub points: usize,
    /// Reorder buffers (about 64 bytes a held point).
    pub pending: usize,
    /// The scorers: block maxima the windows overlap, all block maxima held (those
    /// included), recent points, sliding sums (see [`WindowScorer::heap_bytes`]).
    pub scorer: [usize; 4],
}

/// What became of a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointOutcome {
    Accepted,
    /// Older than a point already released for its series.
    Late,
    /// Same series and timestamp as a point already seen.
    Duplicate,
}

/// Counters the caller turns into metrics.
#[derive(Debug, Default, Clone, Copy)]
pub struct WindowEvents {
    pub evicted_idle: u64,
    pub evicted_capacity: u64,
    /// Windows restarted by a gap over the idle timeout (reported as idle evictions).
    pub restarted: u64,
}

/// The event times and source offsets of a window's released points, oldest first (their
/// values are in the series' scorer, or `values`), in 8 bytes a point rather than 16: the
/// oldest and the newest point in full, each point after the oldest as its difference from
/// the one before (times rise; offsets mostly rise, and fall where the reorder buffer
/// releases a point of an older message). A difference that does not fit (an hour-long
/// gap between two points is 3.6e6 ms, a u32 holds 4.3e9) goes whole to `wide`.
#[derive(Debug, Default)]
struct Released {
    len: u32,
    /// How many steps have a falling offset: none (every window without a reorder buffer)
    /// and the oldest point has the oldest offset, which the seal asks of every live series.
    descents: u32,
    /// (event time, offset) of the oldest and of the newest point.
    front: (i64, i64),
    back: (i64, i64),
    /// Per point after the oldest: its (time, offset) less the previous point's, or
    /// `WIDE` in the time when that is in `wide`.
    steps: VecDeque<(u32, i32)>,
    /// The differences that did not fit, in order. Boxed: a deque's 32-byte header would sit
    /// in every live series' map entry, where None is 8 bytes and a wide step is rare.
    #[allow(clippy::box_collection)]
    wide: Option<Box<VecDeque<(i64, i64)>>>,
}

impl Released {
    /// A step that is in `wide`.
    const WIDE: u32 = u32::MAX;

    fn with_capacity(points: usize) -> Self {
        Self {
            steps: VecDeque::with_capacity(points),
            ..Self::default()
        }
    }

    fn len(&self) -> usize {
        self.len as usize
    }

    /// The oldest and the newest point's event time.
    fn front_ts(&self) -> Option<i64> {
        (self.len > 0).then_some(self.front.0)
    }

    fn back_ts(&self) -> Option<i64> {
        (self.len > 0).then_some(self.back.0)
    }

    fn push_back(&mut self, ts: i64, offset: i64) {
        if self.len == 0 {
            self.front = (ts, offset);
        } else {
            let dt = ts
                .checked_sub(self.back.0)
                .and_then(|d| u32::try_from(d).ok());
            let doff = offset
                .checked_sub(self.back.1)
                .and_then(|d| i32::try_from(d).ok());
            match (dt, doff) {
                (Some(dt), Some(doff)) if dt != Self::WIDE => {
                    self.descents += u32::from(doff < 0);
                    self.steps.push_back((dt, doff));
                }
                _ => {
                    // Wrapping: differences of any two i64, undone by the wrapping adds below.
                    let d = (
                        ts.wrapping_sub(self.back.0),
                        offset.wrapping_sub(self.back.1),
                    );
                    self.descents += u32::from(offset < self.back.1);
                    self.wide.get_or_insert_default().push_back(d);
                    self.steps.push_back((Self::WIDE, 0));
                }
            }
        }
        self.back = (ts, offset);
        self.len += 1;
    }

    /// The difference `step` stands for; `wide` yields the wide ones in order.
    fn step((dt, doff): (u32, i32), wide: &mut impl Iterator<Item = (i64, i64)>) -> (i64, i64) {
        if dt == Self::WIDE {
            wide.next().expect("a wide step for each WIDE mark")
        } else {
            (i64::from(dt), i64::from(doff))
        }
    }

    fn pop_front(&mut self) {
        match self.len {
            0 => {}
            1 => self.clear(),
            _ => {
                let step = self
                    .steps
                    .pop_front()
                    .expect("a step per point after the oldest");
                let mut wide = std::iter::from_fn(|| self.wide.as_mut()?.pop_front());
                let (dt, doff) = Self::step(step, &mut wide);
                let next = (
                    self.front.0.wrapping_add(dt),
                    self.front.1.wrapping_add(doff),
                );
                self.descents -= u32::from(next.1 < self.front.1);
                self.front = next;
                self.len -= 1;
                if self.wide.as_ref().is_some_and(|w| w.is_empty()) {
                    self.wide = None;
                }
            }
        }
    }

    fn clear(&mut self) {
        self.len = 0;
        self.descents = 0;
        self.steps.clear();
        self.wide = None;
    }

    /// The points' offsets, oldest first.
    fn offsets(&self) -> impl Iterator<Item = i64> + '_ {
        let mut wide = self.wide.iter().flat_map(|w| w.iter().copied());
        let mut at = self.front.1;
        (self.len > 0)
            .then_some(at)
            .into_iter()
            .chain(self.steps.iter().map(move |&step| {
                at = at.wrapping_add(Self::step(step, &mut wide).1);
                at
            }))
    }

    /// The smallest offset: the oldest point's unless an offset fell somewhere.
    fn min_offset(&self) -> Option<i64> {
        match (self.len, self.descents) {
            (0, _) => None,
            (_, 0) => Some(self.front.1),
            _ => self.offsets().min(),
        }
    }

    fn heap_bytes(&self) -> usize {
        self.steps.capacity() * std::mem::size_of::<(u32, i32)>()
            + self.wide.as_ref().map_or(0, |w| {
                std::mem::size_of_val(&**w) + w.capacity() * std::mem::size_of::<(i64, i64)>()
            })
    }
}

struct SeriesWindow {
    /// Reorder buffer: ts -> (value, offset), released once older than max_ts - lateness.
    pending: BTreeMap<i64, (f64, Vec<f64>, i64)>,
    max_ts: i64,
    last_released: Option<i64>,
    /// The last W released points' event times and offsets (8 bytes each).
    points: Released,
    /// Their values while the series has no scorer (until its first window, after a model
    /// swap, or when the model cannot score its windows), in step with `points`; empty
    /// otherwise, as the scorer keeps at least the window's values.
    values: VecDeque<f64>,
    /// The other channels' values of each point in `points`, in step with it once a point
    /// of several channels came; empty (no 24-byte entry per point) while none did.
    rest: VecDeque<Vec<f64>>,
    scorer: Option<WindowScorer>,
    generation: u64,
    /// The partition's arrival clock when its last point came (see `evict_idle`).
    arrived_ms: i64,
    /// The model its points named (or their id routed to): a point of another model starts
    /// the series over, so no window mixes two models' points.
    model: String,
}

/// All live series of one partition.
pub struct PartitionWindows {
    params: WindowParams,
    /// Least recently updated first: the series evicted at `max_series` is its front, in O(1).
    series: LruCache<String, SeriesWindow>,
    /// The newest arrival time of the partition's messages (see [`Self::arrived`]); i64::MAX
    /// until one is told, so that idle eviction goes by event time alone then.
    arrival_ms: i64,
    pub events: WindowEvents,
    /// Values (point after point, every channel) a series released in order and its scorer
    /// has not taken yet: they go in together (`WindowScorer::push_points`, space by space)
    /// before the scorer is read (a window, a restart) and when the series' run of points
    /// ends, so a window sees exactly the points before it. Empty between calls.
    run: Vec<f64>,
}

fn floor_div(a: i64, b: i64) -> i64 {
    a.div_euclid(b)
}

impl PartitionWindows {
    pub fn new(params: WindowParams) -> Self {
        Self {
            params,
            series: LruCache::unbounded(),
            arrival_ms: i64::MAX,
            events: WindowEvents::default(),
            run: Vec::new(),
        }
    }

    pub fn live_series(&self) -> usize {
        self.series.len()
    }

    /// No live series, the same settings: what a worker keeps of a partition whose message
    /// panicked mid-window (`Worker::panicked`).
    pub fn cleared(&self) -> Self {
        Self::new(self.params)
    }

    /// Heap bytes the live series hold, by part, from capacities (malloc's own overhead
    /// aside): what a live series costs, for `bench --score`.
    pub fn memory(&self) -> WindowMemory {
        // An LRU entry: a node (key, value, two links) behind a pointer in the map's buckets.
        let entry =
            std::mem::size_of::<(String, SeriesWindow)>() + 4 * std::mem::size_of::<usize>();
        let mut m = WindowMemory {
            series: self.series.len(),
            map: self.series.len() * (entry + 1),
            ..WindowMemory::default()
        };
        for (id, s) in self.series.iter() {
            m.map += id.capacity() + s.model.capacity();
            m.points += s.points.heap_bytes()
                + s.values.capacity() * 8
                + s.rest.capacity() * std::mem::size_of::<Vec<f64>>()
                + s.rest.iter().map(|r| r.capacity() * 8).sum::<usize>();
            m.pending += s.pending.len() * 64;
            if let Some(sc) = &s.scorer {
                for (total, part) in m.scorer.iter_mut().zip(sc.heap_bytes()) {
                    *total += part;
                }
            }
        }
        m
    }

    /// Takes one point (from the message at `offset`) for the model named `model_name`;
    /// windows it completes are pushed to `out` when `emit` (a replay rebuilds state with
    /// `emit = false`). A point for another model than its series' earlier points drops
    /// what the series kept (window and reorder buffer) and starts it over under the new
    /// model (counted as a restart); its earlier points are never scored by the new model.
    pub fn on_point(
        &mut self,
        p: &Point,
        offset: i64,
        model: (&str, &Arc<ScoringModel>),
        emit: bool,
        out: &mut Vec<ScoredWindow>,
    ) -> PointOutcome {
        let mut outcome = PointOutcome::Accepted;
        self.series_run(std::slice::from_ref(p), offset, model, emit, out, |o| {
            outcome = o
        });
        outcome
    }

    /// [`on_point`](Self::on_point) for each of `points` (from the message at `offset`) in
    /// turn, with the same outcomes (pushed to `outcomes`) and windows; a series' points in
    /// a row are looked up once and the ones it releases in order are scored as runs
    /// (`WindowScorer::push_points`) between its window reads.
    pub fn on_points(
        &mut self,
        points: &[Point],
        offset: i64,
        model: (&str, &Arc<ScoringModel>),
        emit: bool,
        out: &mut Vec<ScoredWindow>,
        outcomes: &mut Vec<PointOutcome>,
    ) {
        let mut rest = points;
        while let Some(first) = rest.first() {
            let same = rest
                .iter()
                .position(|p| p.series_id != first.series_id)
                .unwrap_or(rest.len());
            let (run, next) = rest.split_at(same);
            self.series_run(run, offset, model, emit, out, |o| outcomes.push(o));
            rest = next;
        }
    }

    /// Points of one series, in turn; each one's outcome to `outcome`.
    fn series_run(
        &mut self,
        points: &[Point],
        offset: i64,
        (model_name, model): (&str, &Arc<ScoringModel>),
        emit: bool,
        out: &mut Vec<ScoredWindow>,
        mut outcome: impl FnMut(PointOutcome),
    ) {
        let Some(first) = points.first() else {
            return;
        };
        let id: &str = &first.series_id;
        debug_assert!(points.iter().all(|p| &*p.series_id == id), "one series");
        if self.series.peek(id).is_some_and(|s| s.model != model_name) {
            self.series.pop(id);
            self.events.restarted += 1;
        }
        if !self.series.contains(id) {
            if self.series.len() >= self.params.max_series {
                // The least recently updated series goes: the LRU's front, O(1).
                if self.series.pop_lru().is_some() {
                    self.events.evicted_capacity += 1;
                }
            }
            self.series.put(
                id.to_string(),
                SeriesWindow {
                    pending: BTreeMap::new(),
                    max_ts: i64::MIN,
                    last_released: None,
                    points: Released::with_capacity(self.params.points),
                    values: VecDeque::with_capacity(self.params.points + 1),
                    rest: VecDeque::new(),
                    scorer: None,
                    generation: u64::MAX,
                    arrived_ms: self.arrival_ms,
                    model: model_name.to_string(),
                },
            );
        }
        let params = self.params;
        // `get_mut` makes it the most recently updated series.
        let s = self.series.get_mut(id).expect("inserted above");
        s.arrived_ms = self.arrival_ms;
        let run = &mut self.run;
        debug_assert!(run.is_empty(), "runs end with their call");
        let mut restarted = 0u64;
        for p in points {
            if let Some(last) = s.last_released {
                if p.ts_ms == last {
                    outcome(PointOutcome::Duplicate);
                    continue;
                }
                if p.ts_ms < last {
                    outcome(PointOutcome::Late);
                    continue;
                }
            }
            // In-order point with nothing held back: release it straight away (the common
            // case, and the only one with lateness 0), without the reorder buffer.
            if s.pending.is_empty() && p.ts_ms >= s.max_ts && params.lateness_ms == 0 {
                s.max_ts = p.ts_ms;
                let released = (p.ts_ms, p.value, p.rest.as_slice(), offset);
                restarted += u64::from(release(s, id, released, &params, model, emit, out, run));
                outcome(PointOutcome::Accepted);
                continue;
            }
            if s.pending.contains_key(&p.ts_ms) {
                outcome(PointOutcome::Duplicate);
                continue;
            }
            s.pending.insert(p.ts_ms, (p.value, p.rest.clone(), offset));
            s.max_ts = s.max_ts.max(p.ts_ms);
            let horizon = s.max_ts.saturating_sub(params.lateness_ms);
            while let Some((&ts, _)) = s.pending.first_key_value() {
                if ts > horizon {
                    break;
                }
                let (_, (v, rest, off)) = s.pending.pop_first().expect("just seen");
                let released = (ts, v, rest.as_slice(), off);
                restarted += u64::from(release(s, id, released, &params, model, emit, out, run));
            }
            outcome(PointOutcome::Accepted);
        }
        flush_run(s, run, &model.model);
        self.events.restarted += restarted;
    }

    /// The oldest source offset any live series still needs (its window and reorder
    /// buffer): replaying the partition from here rebuilds every live window. None when no
    /// series is live.
    pub fn oldest_offset(&self) -> Option<i64> {
        self.series
            .iter()
            .flat_map(|(_, s)| {
                s.points
                    .min_offset()
                    .into_iter()
                    .chain(s.pending.values().map(|p| p.2))
            })
            .min()
    }

    /// Tells the windows when a message of the partition arrived (its Kafka timestamp, no
    /// later than the wall clock): idle eviction never looks past the newest such time.
    pub fn arrived(&mut self, at_ms: i64) {
        self.arrival_ms = match self.arrival_ms {
            i64::MAX => at_ms,
            a => a.max(at_ms),
        };
    }

    /// Drops series whose newest point is older than the partition's newest minus the idle
    /// timeout and, once arrivals are told, to which no point came for the idle timeout of
    /// the arrival clock. Output-neutral: such a series' next point would restart its
    /// window anyway.
    pub fn evict_idle(&mut self) {
        // Capped at the arrival clock: a device clock ahead (accepted up to
        // limits.max_future_skew_ms) must not make every other series look idle.
        let watermark = self
            .series
            .iter()
            .map(|(_, s)| s.max_ts)
            .max()
            .unwrap_or(i64::MIN)
            .min(self.arrival_ms);
        let cutoff = watermark.saturating_sub(self.params.idle_timeout_ms);
        // And by arrival too: a series whose points still come (a backfill behind the
        // others' event time) is not idle, whatever its clock says.
        let arrived_cutoff = (self.arrival_ms != i64::MAX)
            .then(|| self.arrival_ms.saturating_sub(self.params.idle_timeout_ms));
        let before = self.series.len();
        self.series
            .retain(|_, s| s.max_ts >= cutoff || arrived_cutoff.is_some_and(|c| s.arrived_ms >= c));
        self.events.evicted_idle += (before - self.series.len()) as u64;
    }
}

/// Pushes the values `run` holds into the series' scorer, whose they are, and empties it.
fn flush_run(s: &mut SeriesWindow, run: &mut Vec<f64>, model: &Model) {
    if run.is_empty() {
        return;
    }
    // Scoring errors cannot happen for a model the scorer was built for (the worker
    // dead-letters points of another channel count).
    if let Some(sc) = s.scorer.as_mut() {
        let _ = sc.push_points(model, run);
    }
    run.clear();
}

/// Releases one point (event time, value, other channels' values, offset) into its series'
/// window, in event-time order; its values wait in `run` for the series' scorer (see
/// [`PartitionWindows`]). Returns true if the window restarted (a gap over the idle
/// timeout).
#[allow(clippy::too_many_arguments)]
fn release(
    s: &mut SeriesWindow,
    series_id: &str,
    (ts, v, rest, off): (i64, f64, &[f64], i64),
    params: &WindowParams,
    model: &Arc<ScoringModel>,
    emit: bool,
    out: &mut Vec<ScoredWindow>,
    run: &mut Vec<f64>,
) -> bool {
    let mut restarted = false;
    if let Some(prev_ts) = s.points.back_ts() {
        // Saturating: the decoder bounds `ts` to years 0000..=9999 (record::MAX_TS_MS),
        // where no difference overflows, but this must hold for any i64 a caller passes.
        if ts.saturating_sub(prev_ts) > params.idle_timeout_ms {
            s.points.clear();
            s.values.clear();
            s.rest.clear();
            s.scorer = None;
            // The run's points were the dropped window's.
            run.clear();
            restarted = true;
        } else if floor_div(prev_ts, params.hop_ms) < floor_div(ts, params.hop_ms) {
            // The point crosses a hop boundary: the window ending at the previous point closes.
            let duration = params.duration_ms > 0;
            if duration {
                // Later windows end later still: what is out of this one is out for good.
                // Checked: a horizon below i64::MIN is below every point (none goes).
                if let Some(horizon) = prev_ts.checked_sub(params.duration_ms) {
                    while s.points.front_ts().is_some_and(|ts| ts <= horizon) {
                        s.points.pop_front();
                        s.values.pop_front();
                        s.rest.pop_front();
                    }
                }
            }
            // The window reads the scorer: it takes every point before this one first.
            flush_run(s, run, &model.model);
            let len = s.points.len();
            if emit && (duration || len >= params.points) {
                if let Some(sc) = ensure_scorer(s, model, params) {
                    let explained = if duration {
                        sc.explain_last(&model.model, len)
                    } else {
                        sc.explain(&model.model)
                    };
                    if let Ok(Some(explanation)) = explained {
                        let points = if duration { len } else { params.points };
                        let values = sc.last_values(points).to_vec();
                        out.push(ScoredWindow {
                            series_id: series_id.to_string(),
                            start_ms: s.points.front_ts().expect("full window"),
                            end_ms: prev_ts,
                            first_offset: s.points.min_offset().expect("full window"),
                            points,
                            explanation,
                            values,
                        });
                    }
                }
            }
        }
    }
    // A run's values went to a scorer of this model (a call has one model), so a swap
    // never strands them in a stale one.
    debug_assert!(run.is_empty() || s.generation == model.generation);
    drop_stale_scorer(s, model);
    if s.scorer.is_some() {
        run.push(v);
        run.extend_from_slice(rest);
    } else {
        s.values.push_back(v);
    }
    if !rest.is_empty() && s.rest.len() < s.points.len() {
        // The first point of several channels: the earlier ones had none besides.
        s.rest.resize(s.points.len(), Vec::new());
    }
    if !s.rest.is_empty() || !rest.is_empty() {
        s.rest.push_back(rest.to_vec());
    }
    s.points.push_back(ts, off);
    if s.points.len() > params.points {
        s.points.pop_front();
        s.values.pop_front();
        s.rest.pop_front();
    }
    s.last_released = Some(ts);
    restarted
}

/// One point into a scorer: the univariate form without building a slice of channels.
fn push(
    sc: &mut WindowScorer,
    model: &Model,
    v: f64,
    rest: &[f64],
) -> crate::mil::error::Result<()> {
    if rest.is_empty() {
        sc.push(model, v)
    } else {
        let mut x = Vec::with_capacity(1 + rest.len());
        x.push(v);
        x.extend_from_slice(rest);
        sc.push_point(model, &x)
    }
}

/// Drops a scorer built for another model generation, keeping the window's values (its
/// last ones: it was given every point of the window and keeps at least W) for the next.
fn drop_stale_scorer(s: &mut SeriesWindow, model: &Arc<ScoringModel>) {
    if s.generation != model.generation {
        if let Some(old) = s.scorer.take() {
            s.values = old.last_values(s.points.len()).iter().copied().collect();
        }
    }
}

/// The series' scorer for the current model, built at its first window after a start or a
/// swap from the window's values (the same values in the same order, so it holds what one
/// fed from the start would); the values then live in it alone.
fn ensure_scorer<'a>(
    s: &'a mut SeriesWindow,
    model: &Arc<ScoringModel>,
    params: &WindowParams,
) -> Option<&'a mut WindowScorer> {
    drop_stale_scorer(s, model);
    if s.scorer.is_none() {
        debug_assert_eq!(s.values.len(), s.points.len(), "values in step with points");
        let mut sc = WindowScorer::new(&model.model, params.points).ok()?;
        for (i, &v) in s.values.iter().enumerate() {
            let rest = s.rest.get(i).map_or(&[][..], Vec::as_slice);
            push(&mut sc, &model.model, v, rest).ok()?;
        }
        s.values = VecDeque::new();
        s.scorer = Some(sc);
        s.generation = model.generation;
    }
    s.scorer.as_mut()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mil::Sample;

    fn model() -> Arc<ScoringModel> {
        Arc::new(ScoringModel {
            model: crate::stream::embedded::train_embedded_model().unwrap(),
            version: "test".into(),
            generation: 1,
        })
    }

    /// Irregularly spaced points of two interleaved series.
    fn stream() -> Vec<Point> {
        let data = crate::stream::embedded::gunpoint_train();
        let mut out = Vec::new();
        for (k, id) in ["a", "b"].iter().enumerate() {
            let mut ts = 1_000_000 + k as i64 * 3;
            for (i, sample) in data.samples.iter().take(6).enumerate() {
                let Sample::Series(v) = sample else {
                    unreachable!()
                };
                for (j, &x) in v.iter().enumerate() {
                    ts += 5 + ((i * 31 + j * 17 + k) % 11) as i64;
                    out.push(Point {
                        series_id: (*id).into(),
                        ts_ms: ts,
                        value: x,
                        rest: Vec::new(),
                        model: None,
                    });
                }
            }
        }
        out.sort_by_key(|p| (p.ts_ms, p.series_id.clone()));
        out
    }

    /// Released points hold the times and offsets pushed, oldest first, through pops and
    /// clears, with differences that fit in a step and ones that do not (long gaps, offsets
    /// far apart or falling, the ends of i64), against a plain deque.
    #[test]
    fn released_points_keep_every_time_and_offset() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut packed = Released::with_capacity(16);
        let capacity = packed.steps.capacity();
        let mut plain: VecDeque<(i64, i64)> = VecDeque::new();
        let (mut ts, mut off) = (0i64, 0i64);
        for i in 0..20_000 {
            match rnd() % 40 {
                0 => {
                    packed.clear();
                    plain.clear();
                }
                1..=12 => {
                    packed.pop_front();
                    plain.pop_front();
                }
                r => {
                    ts = match r % 9 {
                        0 => ts.wrapping_add(1 << 33),
                        1 => i64::MIN + (rnd() % 1000) as i64,
                        2 => i64::MAX - (rnd() % 1000) as i64,
                        3 => ts.wrapping_add(u32::MAX as i64),
                        _ => ts.wrapping_add((rnd() % 5_000) as i64),
                    };
                    off = match r % 7 {
                        0 => off.wrapping_add(1 << 40),
                        1 => off.wrapping_sub((rnd() % 100) as i64),
                        2 => i64::MIN,
                        3 => off.wrapping_sub(1 << 31),
                        _ => off.wrapping_add((rnd() % 300) as i64),
                    };
                    packed.push_back(ts, off);
                    plain.push_back((ts, off));
                    if plain.len() > 16 {
                        packed.pop_front();
                        plain.pop_front();
                    }
                }
            }
            assert_eq!(packed.len(), plain.len(), "step {i}");
            assert_eq!(packed.front_ts(), plain.front().map(|p| p.0), "step {i}");
            assert_eq!(packed.back_ts(), plain.back().map(|p| p.0), "step {i}");
            let offsets: Vec<i64> = packed.offsets().collect();
            let expected: Vec<i64> = plain.iter().map(|p| p.1).collect();
            assert_eq!(offsets, expected, "step {i}");
            assert_eq!(
                packed.min_offset(),
                expected.iter().copied().min(),
                "step {i}"
            );
        }
        // A window of 16 points never grows the steps past what they were made with.
        assert_eq!(packed.steps.capacity(), capacity);
    }

    fn point(id: &str, ts_ms: i64) -> Point {
        Point {
            series_id: id.into(),
            ts_ms,
            value: 0.5,
            rest: Vec::new(),
            model: None,
        }
    }

    fn params(max_series: usize) -> WindowParams {
        WindowParams {
            points: 4,
            duration_ms: 0,
            hop_ms: 1_000,
            lateness_ms: 0,
            idle_timeout_ms: 600_000,
            max_series,
        }
    }

    /// At `max_series` the least recently *updated* series goes (a point of an older series
    /// renews it), counted as a capacity eviction, as before the LRU.
    #[test]
    fn capacity_evicts_the_least_recently_updated_series() {
        let model = model();
        let mut w = PartitionWindows::new(params(2));
        let mut out = Vec::new();
        for (off, (id, ts)) in [("a", 1), ("b", 1), ("a", 2), ("c", 1)].iter().enumerate() {
            w.on_point(&point(id, *ts), off as i64, ("m", &model), true, &mut out);
        }
        assert_eq!(w.live_series(), 2);
        assert_eq!(w.events.evicted_capacity, 1);
        assert!(w.series.contains("a") && w.series.contains("c"), "b went");
    }

    /// Finding 3 (eviction at `max_series` scanned every series): a new series at capacity
    /// (one eviction each) costs about the same with 100,000 live series as with 1,000.
    /// At 593c8e9 each eviction scanned every live series: 17 ms against 1.9 s here (114x).
    #[test]
    fn eviction_at_capacity_costs_the_same_at_any_series_count() {
        const NEW: usize = 5_000;
        let model = model();
        let evicting = |live: usize| {
            let mut w = PartitionWindows::new(params(live));
            let mut out = Vec::new();
            let mut add = |i: usize| {
                let p = point(&format!("s{i}"), 1);
                w.on_point(&p, i as i64, ("m", &model), true, &mut out);
            };
            (0..live).for_each(&mut add);
            // The fastest of three rounds: a round the machine interrupted does not count.
            let took = (1..=3)
                .map(|round| {
                    let t = std::time::Instant::now();
                    (live + (round - 1) * NEW..live + round * NEW).for_each(&mut add);
                    t.elapsed()
                })
                .min()
                .expect("three rounds");
            assert_eq!(w.live_series(), live);
            assert_eq!(w.events.evicted_capacity, 3 * NEW as u64);
            took
        };
        let small = evicting(1_000);
        let large = evicting(100_000);
        eprintln!("{NEW} evictions: {small:?} at 1,000 live series, {large:?} at 100,000");
        // Measured about 2x (cache misses over 100,000 series); a scan per eviction, 114x.
        assert!(large < small * 25, "{large:?} against {small:?}");
    }

    /// Finding 2 (one future timestamp moves the partition's clock): with messages
    /// arriving at T, a series whose clock runs 30 minutes ahead (within the accepted skew)
    /// does not make eight series at T look idle (timeout 10 minutes), nor does a backfill
    /// (points a day old, arriving now) go; a series whose last point came 20 minutes ago
    /// still goes. At 593c8e9 the watermark was the newest `ts` of any series, and all but
    /// the one ahead were evicted.
    #[test]
    fn a_clock_ahead_does_not_make_the_others_idle() {
        const T: i64 = 1_800_000_000_000;
        let model = model();
        let mut w = PartitionWindows::new(params(100));
        let mut out = Vec::new();
        let mut put = |w: &mut PartitionWindows, id: &str, ts: i64, off: i64| {
            w.on_point(&point(id, ts), off, ("m", &model), true, &mut out);
        };
        w.arrived(T - 1_200_000);
        put(&mut w, "stale", T - 1_200_000, 0);
        w.arrived(T);
        for k in 0..8 {
            put(&mut w, &format!("s{k}"), T - k, 1 + k);
        }
        put(&mut w, "ahead", T + 1_800_000, 9);
        put(&mut w, "backfill", T - 86_400_000, 10);
        w.evict_idle();
        assert_eq!(w.events.evicted_idle, 1, "only the stale series");
        assert_eq!(w.live_series(), 10);
        assert!(!w.series.contains("stale"));
    }

    /// A series whose points name another model starts over: the first model's points are
    /// never in a window of the second, and the second's first window is its own points.
    #[test]
    fn a_change_of_model_starts_the_series_over() {
        let model = model();
        let params = WindowParams {
            points: 118,
            duration_ms: 0,
            hop_ms: 1_000,
            lateness_ms: 0,
            idle_timeout_ms: 60_000,
            max_series: 10,
        };
        let a: Vec<Point> = stream()
            .into_iter()
            .filter(|p| &*p.series_id == "a")
            .collect();
        let mut w = PartitionWindows::new(params);
        let mut out = Vec::new();
        let half = a.len() / 2;
        for (off, p) in a.iter().enumerate().take(half) {
            w.on_point(p, off as i64, ("first", &model), true, &mut out);
        }
        let before = out.len();
        assert!(before > 0, "the first model scored windows");
        assert_eq!(w.events.restarted, 0);
        for (off, p) in a.iter().enumerate().skip(half) {
            w.on_point(p, off as i64, ("second", &model), true, &mut out);
        }
        assert_eq!(w.events.restarted, 1);
        assert!(out.len() > before, "the second model scored windows");
        for sw in &out[before..] {
            assert!(
                sw.first_offset >= half as i64,
                "a window of the second model holds a point of the first: {}",
                sw.first_offset
            );
        }
    }

    /// Timestamps at the ends of i64 (the decoder rejects them, but the windows must not
    /// depend on that): a gap wider than i64::MAX still restarts the series (it wrapped to a
    /// negative gap, or panicked in a debug build), and a duration window near i64::MIN
    /// keeps its points (its horizon wrapped to a huge value and emptied it).
    #[test]
    fn extreme_timestamps_do_not_overflow_the_window_arithmetic() {
        let model = model();
        let point = |ts_ms: i64, value: f64| Point {
            series_id: "a".into(),
            ts_ms,
            value,
            rest: Vec::new(),
            model: None,
        };
        let values: Vec<f64> = stream().iter().map(|p| p.value).take(400).collect();
        let count = WindowParams {
            points: 118,
            duration_ms: 0,
            hop_ms: 1_000,
            lateness_ms: 0,
            idle_timeout_ms: 60_000,
            max_series: 10,
        };
        let mut w = PartitionWindows::new(count);
        let mut out = Vec::new();
        for (off, ts) in [-5_000_000_000_000_000_000, 5_000_000_000_000_000_000]
            .into_iter()
            .enumerate()
        {
            w.on_point(&point(ts, 0.5), off as i64, ("m", &model), true, &mut out);
        }
        assert_eq!(
            w.events.restarted, 1,
            "a gap beyond i64::MAX restarts the series"
        );

        // Points every 5 ms from i64::MIN; the first hop boundary (a multiple of 1000) is
        // 808 ms in, so the first window ends at MIN + 805 with all 162 points since MIN.
        let duration = WindowParams {
            points: 200,
            duration_ms: 1_200,
            hop_ms: 1_000,
            ..count
        };
        let mut w = PartitionWindows::new(duration);
        let mut out = Vec::new();
        for (off, &v) in values.iter().enumerate() {
            let ts = i64::MIN + 5 * off as i64;
            w.on_point(&point(ts, v), off as i64, ("m", &model), true, &mut out);
        }
        let first = out.first().expect("windows near i64::MIN are emitted");
        assert_eq!(
            (first.start_ms, first.end_ms),
            (i64::MIN, i64::MIN + 805),
            "the first window holds its points since i64::MIN"
        );
        // And at the other end, a gap from near i64::MIN to i64::MAX restarts the series.
        w.on_point(&point(i64::MAX, 0.5), 400, ("m", &model), true, &mut out);
        assert_eq!(w.events.restarted, 1);
    }

    /// A model swap mid-stream: the new generation's scorer is fed the window's values
    /// from the old scorer (the window keeps no values of its own), and every window
    /// after the swap equals the offline prediction of its points.
    #[test]
    fn a_swapped_model_scores_from_the_old_scorers_values() {
        let first = model();
        let second = Arc::new(ScoringModel {
            model: first.model.clone(),
            version: "swapped".into(),
            generation: 2,
        });
        let params = WindowParams {
            points: 118,
            duration_ms: 0,
            hop_ms: 700,
            lateness_ms: 0,
            idle_timeout_ms: 60_000,
            max_series: 10,
        };
        let points = stream();
        let mut w = PartitionWindows::new(params);
        let mut out = Vec::new();
        let half = points.len() / 2;
        for (off, p) in points.iter().enumerate() {
            let m = if off < half { &first } else { &second };
            w.on_point(p, off as i64, ("m", m), true, &mut out);
        }
        let after: Vec<&ScoredWindow> = out
            .iter()
            .filter(|sw| sw.first_offset < half as i64 && sw.end_ms >= points[half].ts_ms)
            .collect();
        assert!(!after.is_empty(), "windows spanning the swap");
        for sw in &out {
            let mine: Vec<f64> = points
                .iter()
                .filter(|p| *p.series_id == *sw.series_id && p.ts_ms <= sw.end_ms)
                .map(|p| p.value)
                .collect();
            let values = mine[mine.len() - params.points..].to_vec();
            let offline = first.model.explain(&Sample::Series(values)).unwrap();
            assert_eq!(
                sw.explanation, offline,
                "{} ending {}",
                sw.series_id, sw.end_ms
            );
        }
    }

    /// Arrays of points (each series' points in a row, as an array message of one series
    /// holds them) through `on_points`: the same outcomes and windows as point by point,
    /// each equal to the offline prediction of its points, though the scorer took them as
    /// runs between window reads.
    #[test]
    fn arrays_of_points_window_as_points_one_by_one() {
        let model = model();
        let params = WindowParams {
            points: 118,
            duration_ms: 0,
            hop_ms: 400,
            lateness_ms: 0,
            idle_timeout_ms: 60_000,
            max_series: 10,
        };
        let mut points = stream();
        points.sort_by_key(|p| (p.series_id.clone(), p.ts_ms));
        // A duplicate and a late point inside an array.
        points.insert(300, points[299].clone());
        points.insert(500, points[100].clone());
        let (mut one, mut arrays) = (PartitionWindows::new(params), PartitionWindows::new(params));
        let (mut out_one, mut out_arrays) = (Vec::new(), Vec::new());
        let (mut outcomes_one, mut outcomes_arrays) = (Vec::new(), Vec::new());
        for (m, chunk) in points.chunks(250).enumerate() {
            for p in chunk {
                outcomes_one.push(one.on_point(p, m as i64, ("m", &model), true, &mut out_one));
            }
            arrays.on_points(
                chunk,
                m as i64,
                ("m", &model),
                true,
                &mut out_arrays,
                &mut outcomes_arrays,
            );
        }
        assert_eq!(outcomes_one, outcomes_arrays);
        assert!(outcomes_one.contains(&PointOutcome::Duplicate));
        assert!(outcomes_one.contains(&PointOutcome::Late));
        assert!(out_one.len() > 10, "only {} windows", out_one.len());
        assert_eq!(out_one.len(), out_arrays.len());
        for (a, b) in out_one.iter().zip(&out_arrays) {
            assert_eq!(
                (&a.series_id, a.end_ms, &a.explanation),
                (&b.series_id, b.end_ms, &b.explanation)
            );
        }
        for sw in &out_arrays {
            let mut seen = std::collections::BTreeMap::new();
            for p in points
                .iter()
                .filter(|p| *p.series_id == *sw.series_id && p.ts_ms <= sw.end_ms)
            {
                seen.entry(p.ts_ms).or_insert(p.value);
            }
            let mine: Vec<f64> = seen.into_values().collect();
            let values = mine[mine.len() - params.points..].to_vec();
            let offline = model.model.explain(&Sample::Series(values)).unwrap();
            assert_eq!(
                sw.explanation, offline,
                "{} ending {}",
                sw.series_id, sw.end_ms
            );
        }
    }

    #[test]
    fn duration_windows_equal_the_offline_prediction_of_their_points() {
        let model = model();
        let params = WindowParams {
            points: 118,
            duration_ms: 1_200,
            hop_ms: 700,
            lateness_ms: 0,
            idle_timeout_ms: 60_000,
            max_series: 10,
        };
        let points = stream();
        let mut w = PartitionWindows::new(params);
        let mut out = Vec::new();
        for (off, p) in points.iter().enumerate() {
            assert_eq!(
                w.on_point(p, off as i64, ("m", &model), true, &mut out),
                PointOutcome::Accepted
            );
        }
        assert!(out.len() > 20, "only {} windows", out.len());
        let mut capped = 0;
        for sw in &out {
            let mine: Vec<&Point> = points
                .iter()
                .filter(|p| {
                    *p.series_id == *sw.series_id
                        && p.ts_ms > sw.end_ms - params.duration_ms
                        && p.ts_ms <= sw.end_ms
                })
                .collect();
            let mine = &mine[mine.len().saturating_sub(params.points)..];
            capped += usize::from(mine.len() == params.points);
            assert_eq!(
                sw.start_ms, mine[0].ts_ms,
                "{} ending {}",
                sw.series_id, sw.end_ms
            );
            // The window ends at the last point before a hop boundary.
            assert_eq!(sw.end_ms.div_euclid(params.hop_ms) + 1, {
                let next = points
                    .iter()
                    .find(|p| *p.series_id == *sw.series_id && p.ts_ms > sw.end_ms)
                    .expect("a later point closed the window");
                next.ts_ms.div_euclid(params.hop_ms)
            });
            let values: Vec<f64> = mine.iter().map(|p| p.value).collect();
            let offline = model.model.explain(&Sample::Series(values)).unwrap();
            assert_eq!(sw.explanation.prediction, offline.prediction);
            assert_eq!(sw.explanation.contributions, offline.contributions);
        }
        // Both regimes occur: windows bounded by the duration and by the point cap.
        assert!(
            capped > 0 && capped < out.len(),
            "capped {capped} of {}",
            out.len()
        );
    }
}
