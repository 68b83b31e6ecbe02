//! Incremental scoring of a sliding window over one series: per hypothesis group the maxima
//! of blocks of the window's subsequences are kept (`blockmax.rs`), so a new point costs the
//! kernel work of one new subsequence per space (O(support x l)) and one compare per group,
//! not the whole window; reading a window recomputes at most one block per space. Every space's
//! new subsequence is a strided read of the last points (dilation), of their differences
//! (the difference view), z-normalised where the space says so: O(l) on top of the kernel
//! row's O(support x l), by the same code the offline scorer runs, so the values agree.
//!
//! The scores equal [`Model::predict`] on the window's points bit for bit: the kernel rows
//! and the alpha sums are computed by the same code in the same order, and ties keep the
//! earliest subsequence as the from-scratch argmax does.

use crate::mil::error::{MilError, Result};
use crate::mil::model::{Explanation, Model};
use crate::mil::online::blockmax::{BlockMaxima, Layout, Layouts};
use crate::mil::online::lanes::{
    first_max, in_lanes, lane_values_dispatch, Channels, GroupPlan, LaneScratch, SpacePlan,
};
use crate::mil::shapelet::{fixed_mean, to_fixed, ShapeletModel};
use crate::mil::space::kernel::{RepBlocks, LANES};
use crate::mil::space::kernel_table::position;

/// What a new point costs, worked out once per model: the spaces some hypothesis reads,
/// each with only the representatives its hypotheses weigh (alpha_z != 0 somewhere), laid
/// out for [`Kernel::row_blocked`]. A representative's kernel value is the same IEEE
/// operations in the same order wherever it sits in a block, so the kept rows give the
/// bits of the full rows: the floor of a point is one kernel row against these per space.
///
/// Hypotheses with the same space and alpha (bit for bit) have the same value on every
/// subsequence, so they share one group: one value, one running maximum, one sliding sum per point.
#[derive(Debug, Clone)]
pub struct Plan {
    spaces: Vec<SpacePlan>,
    /// The most representatives one space keeps (the kernel row scratch).
    max_kept: usize,
    /// The longest subsequence of a used space (the extraction scratch).
    max_dim: usize,
    /// The most hypothesis groups one space has (the lanes' value scratch).
    max_groups: usize,
    /// Per hypothesis (flat, ensemble by ensemble): its group (the offline scorer's too).
    pub(crate) group_of: Vec<usize>,
    pub(crate) n_groups: usize,
    /// Per group: whether a member is a mean hypothesis (the offline scorer sums only these).
    pub(crate) group_is_mean: Vec<bool>,
    /// The block maxima's layout by window length, shared by the scorers of every series.
    layouts: Layouts,
}

impl Plan {
    fn new(m: &ShapeletModel) -> Self {
        type Key = (usize, Vec<(u32, u64)>);
        let hyps: Vec<&crate::mil::shapelet::WeightedHypothesis> =
            m.ensembles.iter().flat_map(|e| &e.hypotheses).collect();
        // Groups in order of first appearance; a group is mean if any member is.
        let mut keys: Vec<Key> = Vec::new();
        let mut group_of = Vec::with_capacity(hyps.len());
        let mut is_mean: Vec<bool> = Vec::new();
        for h in &hyps {
            let key = (
                h.space,
                h.alpha.iter().map(|&(z, a)| (z, a.to_bits())).collect(),
            );
            let g = match keys.iter().position(|k| *k == key) {
                Some(g) => g,
                None => {
                    keys.push(key);
                    is_mean.push(false);
                    keys.len() - 1
                }
            };
            is_mean[g] |= h.mean;
            group_of.push(g);
        }
        let n_groups = keys.len();
        let mut mean_of = vec![None; n_groups];
        let mut n_means = 0;
        let mut spaces = Vec::new();
        for (s, space) in m.spaces.iter().enumerate() {
            let groups: Vec<usize> = (0..n_groups).filter(|&g| keys[g].0 == s).collect();
            if space.count == 0 || groups.is_empty() {
                continue;
            }
            let alpha_of = |g: usize| -> Vec<(u32, f64)> {
                keys[g]
                    .1
                    .iter()
                    .map(|&(z, a)| (z, f64::from_bits(a)))
                    .collect()
            };
            let e = space.extraction();
            let dim = e.dim();
            // The representatives some alpha of `gs` weighs, laid out for the kernel rows,
            // and each group's alpha over them.
            let layout = |gs: &[usize]| -> (RepBlocks, usize, Vec<Vec<(u32, f64)>>) {
                let mut kept: Vec<u32> = gs
                    .iter()
                    .flat_map(|&g| alpha_of(g))
                    .map(|(z, _)| z)
                    .filter(|&z| (z as usize) < space.count)
                    .collect();
                kept.sort_unstable();
                kept.dedup();
                let reps: Vec<f64> = kept
                    .iter()
                    .flat_map(|&z| &space.representatives[z as usize * dim..(z as usize + 1) * dim])
                    .copied()
                    .collect();
                let index = |z: u32| kept.binary_search(&z).map_or(u32::MAX, |i| i as u32);
                let alphas = gs
                    .iter()
                    .map(|&g| {
                        alpha_of(g)
                            .into_iter()
                            .map(|(z, a)| (index(z), a))
                            .collect()
                    })
                    .collect();
                (RepBlocks::new(&reps, dim), kept.len(), alphas)
            };
            let (kept, n_kept, alphas) = layout(&groups);
            let means = groups.iter().filter(|&&g| is_mean[g]).count();
            let first_mean = n_means;
            for &g in groups.iter().filter(|&&g| is_mean[g]) {
                mean_of[g] = Some(n_means);
                n_means += 1;
            }
            spaces.push(SpacePlan {
                extraction: e,
                footprint: e.footprint(),
                dim,
                kernel: space.kernel,
                kept,
                n_kept,
                groups: groups
                    .iter()
                    .zip(alphas)
                    .map(|(&g, alpha)| GroupPlan {
                        group: g,
                        alpha,
                        mean: mean_of[g].map(|slot| slot - first_mean),
                    })
                    .collect(),
                n_means: means,
            });
        }
        let max_kept = spaces.iter().map(|s| s.n_kept).max().unwrap_or(0);
        let max_dim = spaces.iter().map(|s| s.dim).max().unwrap_or(0);
        let max_groups = spaces.iter().map(|s| s.groups.len()).max().unwrap_or(0);
        Self {
            spaces,
            max_kept,
            max_dim,
            max_groups,
            group_of,
            n_groups,
            group_is_mean: is_mean,
            layouts: Layouts::default(),
        }
    }

    /// The block maxima's layout for windows of `window` points, made once per length.
    fn layout(&self, window: usize) -> std::sync::Arc<Layout> {
        self.layouts.get(window, || {
            self.spaces
                .iter()
                .map(|sp| (sp.groups.len(), sp.n_means, sp.footprint))
                .collect()
        })
    }

    /// Spaces a point is scored in, representatives kept over them, and hypothesis groups
    /// (for `bench --score`).
    pub fn shape(&self) -> (usize, usize, usize) {
        (
            self.spaces.len(),
            self.spaces.iter().map(|s| s.n_kept).sum(),
            self.n_groups,
        )
    }

    /// The floor of one point in each used space: its new subsequence extracted and its
    /// kernel row against the kept representatives, nothing else; `sub` and `row` are
    /// scratch. For `bench --score`, to measure against.
    pub fn floor_point(&self, points: &[&[f64]], sub: &mut Vec<f64>, row: &mut Vec<f64>) -> f64 {
        let live = points[0].len();
        let mut acc = 0.0;
        for sp in &self.spaces {
            if live < sp.footprint {
                continue;
            }
            sub.resize(sp.dim, 0.0);
            row.resize(sp.n_kept, 0.0);
            sp.extraction
                .extract_channels(points, live - sp.footprint, sub);
            sp.kernel.row_blocked(sub, &sp.kept, row);
            acc += row.first().copied().unwrap_or(0.0);
        }
        acc
    }
}

/// The model's incremental plan, made on first use (the model's spaces and hypotheses do
/// not change after a fit) and kept in the model's derived cache.
pub fn plan(m: &ShapeletModel) -> &Plan {
    m.incremental.get_or_init(|| Plan::new(m))
}

/// Sliding-window state of one series under one model. Holds no reference to the model, so
/// it can live in a map next to the model handle; every call takes the model it was built for.
///
/// The window is the last `window` points ([`explain`](Self::explain)), or any shorter
/// suffix whose start never moves back ([`explain_last`](Self::explain_last)), as a
/// duration window's does.
#[derive(Debug, Clone)]
pub struct WindowScorer {
    window: usize,
    /// Subsequences starting before this point index have left every window.
    window_start: u64,
    /// Points pushed so far.
    n: u64,
    /// Recent points, one buffer per channel (one for a univariate model): the window (what
    /// its oldest block is recomputed from), compacted when `keep + slack(keep)`.
    recent: Vec<Vec<f64>>,
    /// Points `recent` keeps.
    keep: usize,
    /// The longest subsequence length: shorter windows have no prediction. A window
    /// shorter than a space's footprint has that space's one subsequence with the last
    /// point repeated, as the offline scorer reads it (computed when explained).
    min_window: usize,
    /// Per hypothesis group (see [`Plan`]): the running and completed block maxima of its
    /// values (see [`BlockMaxima`]).
    maxima: BlockMaxima,
    /// False for the kinds that take bags (MIORDM, the SVMs): their window score is not a
    /// max of per-subsequence terms block maxima can maintain for every kind, so each window
    /// is scored from its points (`recent` keeps the last `window`).
    incremental: bool,
}

/// A hypothesis group's values over a window: where its first maximiser starts, the
/// maximum, and (for a mean group) the mean.
#[derive(Debug, Clone, Copy)]
struct WindowValue {
    start: u64,
    max: f64,
    mean: Option<f64>,
}

/// A scoring thread's scratch: a space's new subsequence and its kernel row; for a run of
/// points, `LANES` subsequences side by side, their kernel rows, and their groups' values
/// and fixed-point values.
#[derive(Default)]
struct Scratch {
    sub: Vec<f64>,
    row: Vec<f64>,
    lanes: LaneScratch,
}

thread_local! {
    /// Per scoring thread (shared by the thread's scorers rather than held by each series).
    static SCRATCH: std::cell::Cell<Scratch> = std::cell::Cell::new(Scratch::default());
}

/// The thread's scratch, long enough for `plan`; give it back with [`put_scratch`].
fn take_scratch(plan: &Plan) -> Scratch {
    let mut s = SCRATCH.with(std::cell::Cell::take);
    if s.sub.len() < plan.max_dim {
        s.sub.resize(plan.max_dim, 0.0);
    }
    if s.row.len() < plan.max_kept {
        s.row.resize(plan.max_kept, 0.0);
    }
    let l = &mut s.lanes;
    if l.subs.len() < plan.max_dim * LANES {
        l.subs.resize(plan.max_dim * LANES, 0.0);
    }
    if l.rows.len() < plan.max_kept * LANES {
        l.rows.resize(plan.max_kept * LANES, 0.0);
    }
    if l.values.len() < plan.max_groups * LANES {
        l.values.resize(plan.max_groups * LANES, 0.0);
        l.fixed.resize(plan.max_groups * LANES, 0);
    }
    s
}

fn put_scratch(scratch: Scratch) {
    SCRATCH.with(|c| c.set(scratch));
}

/// Points `recent` holds beyond its `keep` before it is compacted (one move of `keep` values
/// every `slack` points), and the most a run scores at a time: an eighth of `keep` in whole
/// lane batches, 2 to `MAX_SLACK / LANES` of them. Not a fixed 64: a 150-point window's
/// buffer is 1.4 KB rather than 1.7 KB (memory per live series), for 6 values moved a point.
fn slack(keep: usize) -> usize {
    (keep / 8)
        .next_multiple_of(LANES)
        .clamp(2 * LANES, MAX_SLACK)
}

const MAX_SLACK: usize = 64;

/// The kernel row of `space`'s subsequence at `at` in `all`, into `row`.
fn row_at(sp: &SpacePlan, all: &[&[f64]], at: usize, sub: &mut [f64], row: &mut [f64]) {
    let sub = &mut sub[..sp.dim];
    sp.extraction.extract_channels(all, at, sub);
    sp.kernel.row_blocked(sub, &sp.kept, &mut row[..sp.n_kept]);
}

/// A group's value: sum_z alpha_z K(z, x) over its kept representatives, in the model's
/// order (hence its bits).
fn group_value(alpha: &[(u32, f64)], row: &[f64]) -> f64 {
    alpha.iter().map(|&(z, a)| a * row[z as usize]).sum()
}

/// `sp`'s group values on its subsequences `at .. at + n` (n <= `LANES`) into the lanes'
/// scratch, as `lane_values` lays them out: side by side where the lanes pay, else one by
/// one; the same bits either way.
fn values_at(sp: &SpacePlan, all: &[&[f64]], at: usize, n: usize, scratch: &mut Scratch) {
    if in_lanes(sp, n) {
        return lane_values_dispatch(sp, all, at, n, &mut scratch.lanes);
    }
    for j in 0..n {
        row_at(sp, all, at + j, &mut scratch.sub, &mut scratch.row);
        for ((g, v), x) in sp
            .groups
            .iter()
            .zip(scratch.lanes.values.chunks_exact_mut(LANES))
            .zip(scratch.lanes.fixed.chunks_exact_mut(LANES))
        {
            v[j] = group_value(&g.alpha, &scratch.row);
            if g.mean.is_some() {
                x[j] = to_fixed(v[j]);
            }
        }
    }
}

fn shapelet(model: &Model) -> Result<&ShapeletModel> {
    match model {
        Model::LpboostShapelet(m) if m.input.is_series() => Ok(m),
        _ => Err(MilError::InvalidParameter(
            "incremental scoring needs a series shapelet model".into(),
        )),
    }
}

impl WindowScorer {
    /// A scorer for windows of `window` points; an error if the model does not score series
    /// or its longest shapelet does not fit in the window.
    pub fn new(model: &Model, window: usize) -> Result<Self> {
        if !model.input().is_series() {
            return Err(MilError::InvalidParameter(
                "window scoring needs a model of series".into(),
            ));
        }
        if let Model::Miordm(crate::mil::model::BagModel {
            series: Some(sb), ..
        })
        | Model::MiSvm(crate::mil::model::BagModel {
            series: Some(sb), ..
        })
        | Model::BoxSvm(crate::mil::model::BagModel {
            series: Some(sb), ..
        }) = model
        {
            if window < sb.length {
                return Err(MilError::InvalidParameter(format!(
                    "a window of {window} points is shorter than the model's subsequences ({})",
                    sb.length
                )));
            }
            return Ok(Self {
                window,
                window_start: 0,
                n: 0,
                recent: vec![Vec::with_capacity(2 * window); sb.channels.max(1)],
                keep: window,
                min_window: sb.length,
                maxima: BlockMaxima::default(),
                incremental: false,
            });
        }
        let m = shapelet(model)?;
        let min_window = m.spaces.iter().map(|s| s.length).max().unwrap_or(1);
        if window < min_window {
            return Err(MilError::InvalidParameter(format!(
                "a window of {window} points is shorter than the model's longest shapelet ({min_window})"
            )));
        }
        let p = plan(m);
        // The window: a window's oldest block is recomputed from its own points.
        let keep = window;
        if keep >= 1 << 31 {
            return Err(MilError::InvalidParameter(format!(
                "a window of {window} points is longer than incremental scoring takes (2^31)"
            )));
        }
        Ok(Self {
            window,
            window_start: 0,
            n: 0,
            recent: vec![Vec::with_capacity(keep + slack(keep)); m.input.channels()],
            keep,
            min_window,
            maxima: BlockMaxima::new(p.layout(window)),
            incremental: true,
        })
    }

    /// Points pushed so far.
    pub fn len(&self) -> u64 {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// True once the window holds `window` points.
    pub fn is_full(&self) -> bool {
        self.n >= self.window as u64
    }

    /// Heap bytes this scorer holds, by part: block maxima the window overlaps, all the
    /// block maxima held, recent points, block sums. For `bench --score`.
    pub fn heap_bytes(&self) -> [usize; 4] {
        let (live, maxima, sums) = self.maxima.heap_bytes();
        [
            live,
            maxima,
            self.recent.iter().map(|r| r.capacity() * 8 + 24).sum(),
            sums,
        ]
    }

    /// The last `len` values of the first channel (at most what the scorer keeps, which
    /// is at least its window), oldest first: what a scorer for another model is fed.
    pub fn last_values(&self, len: usize) -> &[f64] {
        let r = &self.recent[0];
        &r[r.len() - len.min(r.len())..]
    }

    /// Values per point this scorer takes (the model's channels).
    pub fn channels(&self) -> usize {
        self.recent.len()
    }

    /// Adds the next point of a univariate series.
    pub fn push(&mut self, model: &Model, x: f64) -> Result<()> {
        self.push_point(model, std::slice::from_ref(&x))
    }

    /// Adds the next point, one value per channel: one new subsequence per space enters the
    /// window. An error (and nothing added) if the count is not the model's.
    pub fn push_point(&mut self, model: &Model, x: &[f64]) -> Result<()> {
        if x.len() != self.recent.len() {
            return Err(MilError::InvalidData(format!(
                "a point of {} values for a model of {} channels",
                x.len(),
                self.recent.len()
            )));
        }
        if !self.incremental {
            return self.push_points(model, x);
        }
        let m = shapelet(model)?;
        let plan = plan(m);
        let mut scratch = take_scratch(plan);
        for (r, &v) in self.recent.iter_mut().zip(x) {
            if r.len() >= self.keep + slack(self.keep) {
                r.drain(..r.len() - self.keep);
            }
            r.push(v);
        }
        self.n += 1;
        self.window_start = self
            .window_start
            .max(self.n.saturating_sub(self.window as u64));
        let window_start = self.window_start;
        let channels = Channels::of(&self.recent);
        let all = channels.slices();
        let live = all[0].len();
        // One new subsequence per space: scored alone, a vector holding eight
        // representatives (`push_points` scores a run's side by side, with these bits).
        for (s, sp) in plan.spaces.iter().enumerate() {
            let f = sp.footprint;
            if f > self.window || (self.n as usize) < f {
                // Longer than any window: see `score_new`.
                continue;
            }
            row_at(sp, all, live - f, &mut scratch.sub, &mut scratch.row);
            let e = self.maxima.enter(s, window_start, 1);
            for ((g, best), at) in sp.groups.iter().zip(e.max).zip(e.at) {
                let v = group_value(&g.alpha, &scratch.row);
                // Strict: an equal earlier value keeps its place, as the offline argmax
                // keeps the first maximiser.
                if v > *best {
                    *best = v;
                    *at = e.off;
                }
                if let Some(j) = g.mean {
                    e.sums[j] = e.sums[j].wrapping_add(to_fixed(v));
                }
            }
        }
        put_scratch(scratch);
        Ok(())
    }

    /// Adds a run of points (`channels()` values each, point after point), with the state
    /// and bits `push_point` on each in turn gives; an error (and nothing added) if the
    /// values are not a whole number of points. Space by space rather than point by point:
    /// a space's representatives, scratch and blocks stay in cache over the run, and its
    /// new subsequences are extracted and scored `LANES` at a time side by side (each lane
    /// the operations of one subsequence, so the same bits).
    pub fn push_points(&mut self, model: &Model, run: &[f64]) -> Result<()> {
        let c = self.recent.len();
        if run.is_empty() || !run.len().is_multiple_of(c) {
            return if run.is_empty() {
                Ok(())
            } else {
                Err(MilError::InvalidData(format!(
                    "{} values are no whole number of points of {c} channels",
                    run.len()
                )))
            };
        }
        if !self.incremental {
            for x in run.chunks_exact(c) {
                for (r, &v) in self.recent.iter_mut().zip(x) {
                    if r.len() >= 2 * self.window {
                        r.drain(..r.len() - self.window);
                    }
                    r.push(v);
                }
                self.n += 1;
            }
            return Ok(());
        }
        // A run too short to fill half the lanes (one point per message, most often) costs
        // less point by point: `bench-stream --points 200000` fell from ~345k to ~300k
        // points/s when single points went through the lanes.
        if run.len() / c < LANES / 2 {
            return run
                .chunks_exact(c)
                .try_for_each(|x| self.push_point(model, x));
        }
        let m = shapelet(model)?;
        let plan = plan(m);
        let mut scratch = take_scratch(plan);
        // At most `slack` points at a time, so `recent` never outgrows `keep + slack`.
        let slack = slack(self.keep);
        for part in run.chunks(slack * c) {
            let k = part.len() / c;
            for (ch, r) in self.recent.iter_mut().enumerate() {
                if r.len() + k > self.keep + slack {
                    r.drain(..r.len().saturating_sub(self.keep));
                }
                r.extend(part.iter().skip(ch).step_by(c));
            }
            let before = self.n;
            self.n += k as u64;
            self.score_new(plan, before, &mut scratch);
        }
        put_scratch(scratch);
        Ok(())
    }

    /// Scores, space by space, the subsequences that entered with the points after the
    /// first `before` (all in `recent`): each raises its groups' running block maxima and
    /// adds to their block sums, in start order.
    fn score_new(&mut self, plan: &Plan, before: u64, scratch: &mut Scratch) {
        let window = self.window as u64;
        let start_before = self.window_start;
        self.window_start = self.window_start.max(self.n.saturating_sub(window));
        let channels = Channels::of(&self.recent);
        let all = channels.slices();
        // The point index of `recent`'s first point.
        let base = self.n - all[0].len() as u64;
        // Only the spaces some hypothesis reads, and in each only the representatives some
        // alpha weighs (the plan): the values are the full rows' bits (see `Plan`).
        for (s, sp) in plan.spaces.iter().enumerate() {
            let f = sp.footprint as u64;
            if f > window {
                // No window is that long: it reads the space's one padded subsequence
                // (`padded_value`), never its maxima, and `recent` may not hold a footprint.
                continue;
            }
            // The point that completes the subsequence at `start` is point `start + f`
            // (counting from 1): the new ones start from here to the last.
            let first = before.max(f - 1) + 1 - f;
            let Some(count) = (self.n + 1).checked_sub(f + first).filter(|&c| c > 0) else {
                continue;
            };
            let mut start = first;
            let end = first + count;
            while start < end {
                let n = ((end - start) as usize).min(LANES);
                values_at(sp, all, (start - base) as usize, n, scratch);
                let (values, fixed) = (&scratch.lanes.values, &scratch.lanes.fixed);
                // The batch goes into the blocks it falls in, a block's part at once.
                let mut j = 0;
                while j < n {
                    let x = start + j as u64;
                    // The window when the part's first subsequence entered (its point's
                    // count window).
                    let window_start = start_before.max((x + f).saturating_sub(window));
                    let e = self.maxima.enter(s, window_start, n - j);
                    let part = j..j + e.len;
                    for (i, ((g, best), at)) in sp.groups.iter().zip(e.max).zip(e.at).enumerate() {
                        let (v, k) = first_max(&values[i * LANES..][part.clone()]);
                        // Strict: an equal earlier value keeps its place, as the offline
                        // argmax keeps the first maximiser.
                        if v > *best {
                            *best = v;
                            *at = e.off + k as u16;
                        }
                        if let Some(q) = g.mean {
                            e.sums[q] = fixed[i * LANES..][part.clone()]
                                .iter()
                                .fold(e.sums[q], |a, &x| a.wrapping_add(x));
                        }
                    }
                    j += e.len;
                }
                start += n as u64;
            }
        }
    }

    /// Like [`explain`](Self::explain) for the window of the last `len` points (at most the
    /// scorer's window). The start of the window must not move back between calls: what
    /// left the window is dropped for good. None while `len` is shorter than the longest
    /// shapelet or more points than were pushed.
    pub fn explain_last(&mut self, model: &Model, len: usize) -> Result<Option<Explanation>> {
        let len = len.min(self.window);
        if len < self.min_window || (len as u64) > self.n {
            return Ok(None);
        }
        if !self.incremental {
            return self.explain_recomputed(model, len);
        }
        let start = self.n - len as u64;
        self.window_start = self.window_start.max(start);
        self.explain_from(model, self.window_start)
    }

    /// The prediction for the current window (the last `window` points) with every
    /// hypothesis's maximising subsequence (offset within the window) and contribution,
    /// largest |contribution| first; None until the window is full.
    pub fn explain(&self, model: &Model) -> Result<Option<Explanation>> {
        if !self.is_full() {
            return Ok(None);
        }
        if !self.incremental {
            return self.explain_recomputed(model, self.window);
        }
        // A duration window's `explain_last` may have moved the start past the count
        // window's (the blocks before it are gone).
        let start = (self.n - self.window as u64).max(self.window_start);
        self.explain_from(model, start)
    }

    /// The model's explanation of the last `len` points, scored from scratch.
    fn explain_recomputed(&self, model: &Model, len: usize) -> Result<Option<Explanation>> {
        let last = |r: &Vec<f64>| r[r.len() - len..].to_vec();
        let sample = if self.recent.len() == 1 {
            crate::mil::Sample::Series(last(&self.recent[0]))
        } else {
            crate::mil::Sample::Multi(self.recent.iter().map(last).collect())
        };
        model.explain(&sample).map(Some)
    }

    /// Per hypothesis group: (start, value) of the first maximiser among its space's
    /// subsequences from `window_start` to the last, and for a mean group the mean of
    /// their values (the exact fixed-point sum over the count); None for a space whose
    /// footprint the window is shorter than. The partly covered oldest block of each space
    /// is recomputed from the kept points, by the operations that scored it when it
    /// entered.
    fn window_maxima(&self, plan: &Plan, window_start: u64) -> Vec<Option<WindowValue>> {
        let mut out = vec![None; plan.n_groups];
        let channels = Channels::of(&self.recent);
        let all = channels.slices();
        let base = self.n - all[0].len() as u64;
        let mut scratch = take_scratch(plan);
        let (mut best, mut sums) = (Vec::new(), Vec::new());
        for (s, sp) in plan.spaces.iter().enumerate() {
            let Some(parts) = self.maxima.parts(s, window_start) else {
                continue;
            };
            best.clear();
            best.resize(sp.groups.len(), (f64::NEG_INFINITY, window_start));
            sums.clear();
            sums.resize(sp.n_means, 0i128);
            // The oldest block's covered part, `LANES` subsequences at a time.
            let (mut x, end) = (parts.recompute.start, parts.recompute.end);
            while x < end {
                let n = ((end - x) as usize).min(LANES);
                values_at(sp, all, (x - base) as usize, n, &mut scratch);
                let (values, fixed) = (&scratch.lanes.values, &scratch.lanes.fixed);
                for (i, (g, b)) in sp.groups.iter().zip(best.iter_mut()).enumerate() {
                    let (v, k) = first_max(&values[i * LANES..][..n]);
                    if v > b.0 {
                        *b = (v, x + k as u64);
                    }
                    if let Some(j) = g.mean {
                        sums[j] += fixed[i * LANES..][..n]
                            .iter()
                            .map(|&f| i128::from(f))
                            .sum::<i128>();
                    }
                }
                x += n as u64;
            }
            if let Some(from) = parts.blocks_from {
                self.maxima.fold(s, from, &mut best, &mut sums);
            }
            let count = (parts.last + 1 - window_start) as usize;
            for (g, &(max, start)) in sp.groups.iter().zip(&best) {
                out[g.group] = Some(WindowValue {
                    start,
                    max,
                    mean: g.mean.map(|j| fixed_mean(sums[j], count)),
                });
            }
        }
        put_scratch(scratch);
        out
    }

    /// The explanation of the window from point `window_start` (at or after
    /// `self.window_start`) to the last point.
    fn explain_from(&self, model: &Model, window_start: u64) -> Result<Option<Explanation>> {
        let m = shapelet(model)?;
        let plan = plan(m);
        let maxima = self.window_maxima(plan, window_start);
        // Each hypothesis's value and maximising offset, ensemble by ensemble.
        let mut values: Vec<Vec<f64>> = Vec::with_capacity(m.ensembles.len());
        let mut offsets: Vec<Vec<usize>> = Vec::with_capacity(m.ensembles.len());
        // Only a window shorter than a footprint reads its points here; `recent` then holds
        // them (it keeps the longest footprint).
        let len = (self.n - window_start) as usize;
        let points =
            || -> Vec<&[f64]> { self.recent.iter().map(|r| &r[r.len() - len..]).collect() };
        let mut q = 0;
        for e in &m.ensembles {
            let (mut ve, mut oe) = (Vec::new(), Vec::new());
            for h in &e.hypotheses {
                let g = plan.group_of[q];
                let (start, v) = match maxima[g] {
                    Some(w) => (
                        w.start,
                        match w.mean {
                            Some(mean) if h.mean => mean,
                            _ => w.max,
                        },
                    ),
                    // The window is shorter than this space's footprint: its one
                    // subsequence reads the last point repeated (as `Extraction::extract`).
                    None => {
                        let v = padded_value(&m.spaces[h.space], h, &points());
                        let v = if h.mean {
                            fixed_mean(i128::from(to_fixed(v)), 1)
                        } else {
                            v
                        };
                        (window_start, v)
                    }
                };
                let sp = &m.spaces[h.space];
                // The window's subsequences in this space (one, read padded, when shorter
                // than the footprint), as the offline scorer counts them.
                let count = (len + 1).saturating_sub(sp.extraction().footprint()).max(1);
                let v = h.output(v, position((start - window_start) as usize, count));
                ve.push(v);
                oe.push((start - window_start) as usize);
                q += 1;
            }
            values.push(ve);
            offsets.push(oe);
        }
        let (prediction, contributions) = m.explanation(&values, &offsets);
        Ok(Some(Explanation {
            prediction,
            contributions,
        }))
    }
}

/// sum_z alpha_z K(z, x) for the one subsequence x of `points` in `space`, at offset 0.
fn padded_value(
    space: &crate::mil::shapelet::ShapeletSpace,
    h: &crate::mil::shapelet::WeightedHypothesis,
    points: &[&[f64]],
) -> f64 {
    let e = space.extraction();
    let mut sub = vec![0.0; e.dim()];
    e.extract_channels(points, 0, &mut sub);
    let mut krow = vec![0.0; space.count];
    space.kernel_row(&sub, &mut krow);
    h.alpha.iter().map(|&(z, a)| a * krow[z as usize]).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mil::{Dataset, FitParams, Sample, ShapeletLength};

    fn toy_model() -> Model {
        let mut ds = Dataset::default();
        for i in 0..12 {
            let up = i % 2 == 0;
            let v: Vec<f64> = (0..30)
                .map(|t| {
                    let bump = if up && (t + i) % 30 >= 10 && (t + i) % 30 < 15 {
                        2.0
                    } else {
                        0.0
                    };
                    bump + ((t * 7 + i * 3) % 5) as f64 * 0.1
                })
                .collect();
            ds.ids.push(format!("s{i}"));
            ds.labels.push(if up { "up".into() } else { "flat".into() });
            ds.samples.push(Sample::Series(v));
        }
        // The default spaces (views, z-normalisation, dilations up to footprints longer
        // than the 20-point test window), mean hypotheses and the bias.
        let params = FitParams {
            lengths: vec![ShapeletLength::Absolute(5), ShapeletLength::Absolute(8)],
            k: Some(15),
            max_rounds: 15,
            ..FitParams::default()
        };
        Model::fit(&ds, &params).unwrap()
    }

    /// Runs of points (`push_points`, eight subsequences side by side) leave the scorer
    /// where point by point does: every window after a run equals offline predict.
    #[test]
    fn runs_of_points_score_exactly() {
        let model = toy_model();
        let stream: Vec<f64> = (0..400)
            .map(|t| ((t * 13 % 17) as f64 * 0.2).sin() * 2.0 + if t % 40 < 6 { 2.0 } else { 0.0 })
            .collect();
        for w in [8, 12, 20, 150] {
            exact_runs(&model, &[&stream], w, &format!("w={w}"));
        }
    }

    #[test]
    fn incremental_equals_from_scratch_on_every_window() {
        let model = toy_model();
        let w = 20;
        let stream: Vec<f64> = (0..200)
            .map(|t| ((t * 13 % 17) as f64 * 0.2).sin() * 2.0 + if t % 40 < 6 { 2.0 } else { 0.0 })
            .collect();
        let mut sc = WindowScorer::new(&model, w).unwrap();
        for (t, &x) in stream.iter().enumerate() {
            sc.push(&model, x).unwrap();
            let inc = sc.explain(&model).unwrap();
            if t + 1 < w {
                assert!(inc.is_none());
                continue;
            }
            let inc = inc.unwrap();
            let scratch = model
                .explain(&Sample::Series(stream[t + 1 - w..=t].to_vec()))
                .unwrap();
            assert_eq!(inc.prediction, scratch.prediction, "window ending at {t}");
            assert_eq!(
                inc.contributions, scratch.contributions,
                "window ending at {t}"
            );
        }
    }

    /// Streams `stream` through a scorer of `w`-point windows and asserts that every full
    /// window's incremental explanation equals the offline one, bit for bit; returns them.
    fn exact_windows(model: &Model, stream: &[f64], w: usize, what: &str) -> Vec<Explanation> {
        let mut sc = WindowScorer::new(model, w).unwrap();
        let mut out = Vec::new();
        for (t, &x) in stream.iter().enumerate() {
            sc.push(model, x).unwrap();
            let Some(inc) = sc.explain(model).unwrap() else {
                continue;
            };
            let scratch = model
                .explain(&Sample::Series(stream[t + 1 - w..=t].to_vec()))
                .unwrap();
            assert_eq!(inc, scratch, "{what} window ending at {t}");
            out.push(inc);
        }
        exact_runs(model, &[stream], w, what);
        out
    }

    /// Streams `channels` (one buffer per channel) through a scorer of `w`-point windows in
    /// runs of irregular lengths (1 to beyond `MAX_SLACK`, not multiples of `LANES`) and asserts
    /// that the window after each run is explained as offline predict explains its points,
    /// bit for bit.
    fn exact_runs(model: &Model, channels: &[&[f64]], w: usize, what: &str) {
        let mut sc = WindowScorer::new(model, w).unwrap();
        let (n, c) = (channels[0].len(), channels.len());
        let (mut t, mut k, mut checked) = (0, 0, 0);
        while t < n {
            let len = [1, 7, 8, 9, 2, 64, 65, 130, 3, 17][k % 10].min(n - t);
            k += 1;
            let run: Vec<f64> = (t..t + len)
                .flat_map(|i| channels.iter().map(move |ch| ch[i]))
                .collect();
            sc.push_points(model, &run).unwrap();
            t += len;
            let Some(inc) = sc.explain(model).unwrap() else {
                continue;
            };
            let window: Vec<Vec<f64>> = channels.iter().map(|ch| ch[t - w..t].to_vec()).collect();
            let sample = if c == 1 {
                Sample::Series(window.into_iter().next().unwrap())
            } else {
                Sample::Multi(window)
            };
            assert_eq!(
                inc,
                model.explain(&sample).unwrap(),
                "{what} run ending at {t}"
            );
            checked += 1;
        }
        assert!(checked >= 2, "{what}: only {checked} windows after runs");
        if c > 1 {
            assert!(sc.push_points(model, &vec![0.0; c + 1]).is_err());
        }
    }

    /// Three classes: the pooled head scores the window, and every incremental prediction
    /// and explanation equals the offline one, bit for bit.
    #[test]
    fn a_pooled_head_scores_exactly() {
        let mut ds = Dataset::default();
        for i in 0..24 {
            let class = i % 3;
            let v: Vec<f64> = (0..40)
                .map(|t| {
                    let x = (t + i) as f64;
                    let signal = match class {
                        0 => (x * 0.7).sin(),
                        1 => f64::from(u8::from((t + i) % 13 < 2)) * 2.0,
                        _ => 0.0,
                    };
                    signal + ((t * 7 + i * 3) % 5) as f64 * 0.2
                })
                .collect();
            ds.ids.push(format!("s{i}"));
            ds.labels.push(["wave", "spike", "noise"][class].into());
            ds.samples.push(Sample::Series(v));
        }
        let params = FitParams {
            lengths: vec![ShapeletLength::Absolute(6)],
            k: Some(10),
            max_rounds: 10,
            ..FitParams::default()
        };
        let model = Model::fit(&ds, &params).unwrap();
        let Model::LpboostShapelet(m) = &model else {
            unreachable!()
        };
        assert!(m.head.is_some());
        let stream: Vec<f64> = (0..150)
            .map(|t| match t / 50 {
                0 => (t as f64 * 0.7).sin(),
                1 => f64::from(u8::from(t % 13 < 2)) * 2.0,
                _ => 0.0,
            } + (t % 5) as f64 * 0.2)
            .collect();
        let labels: std::collections::BTreeSet<String> = exact_windows(&model, &stream, 30, "")
            .into_iter()
            .map(|e| e.prediction.label)
            .collect();
        assert!(labels.len() >= 2, "{labels:?}");
    }

    /// Each space on its own (a view, a normalisation, dilations, max and mean hypotheses):
    /// every window's incremental prediction equals the offline one, bit for bit.
    #[test]
    fn every_space_scores_exactly() {
        use crate::mil::{SpaceParams, View};
        let base = toy_model();
        let Model::LpboostShapelet(m) = &base else {
            unreachable!()
        };
        assert!(m
            .ensembles
            .iter()
            .flat_map(|e| &e.hypotheses)
            .any(|h| h.mean));
        // Threshold hypotheses of both aggregates and of position, over the spaces below.
        let (mut max_thresholds, mut mean_thresholds, mut positions) = (0, 0, 0);
        let mut ds = Dataset::default();
        for i in 0..16 {
            let up = i % 2 == 0;
            let v: Vec<f64> = (0..40)
                .map(|t| {
                    let wave = if up {
                        ((t + i) as f64 * 0.7).sin()
                    } else {
                        0.0
                    };
                    wave * (1.0 + i as f64 * 0.1) + ((t * 7 + i * 3) % 5) as f64 * 0.2
                })
                .collect();
            ds.ids.push(format!("s{i}"));
            ds.labels
                .push(if up { "wave".into() } else { "noise".into() });
            ds.samples.push(Sample::Series(v));
        }
        let stream: Vec<f64> = (0..160)
            .map(|t| if t % 60 < 30 { (t as f64 * 0.7).sin() } else { 0.0 } + (t % 3) as f64 * 0.1)
            .collect();
        for view in [View::Raw, View::Diff, View::Centred, View::Lag] {
            for znorm in [false, true] {
                if view == View::Centred && znorm {
                    continue; // not a space: the raw view's z space
                }
                let params = FitParams {
                    lengths: vec![ShapeletLength::Absolute(6)],
                    k: Some(10),
                    max_rounds: 10,
                    // Position thresholds whatever the class sizes: their exactness is tested.
                    position_min_examples: 0,
                    spaces: SpaceParams {
                        views: vec![view],
                        znorm: vec![znorm],
                        dilations: 3,
                        ..SpaceParams::default()
                    },
                    ..FitParams::default()
                };
                let model = Model::fit(&ds, &params).unwrap();
                let Model::LpboostShapelet(m) = &model else {
                    unreachable!()
                };
                // The view's spaces, and the level space (scored exactly too).
                let (levels, others): (Vec<_>, Vec<_>) =
                    m.spaces.iter().partition(|s| s.extraction().is_level());
                assert!(others.iter().all(|s| s.view == view && s.znorm == znorm));
                assert_eq!(levels.len(), 1);
                assert!(m.spaces.iter().any(|s| s.dilation == 4), "{:?}", m.spaces);
                for h in m.ensembles.iter().flat_map(|e| &e.hypotheses) {
                    if h.threshold.is_some_and(|t| t.position) {
                        positions += 1;
                    } else if h.threshold.is_some() {
                        *if h.mean {
                            &mut mean_thresholds
                        } else {
                            &mut max_thresholds
                        } += 1;
                    }
                }
                // Windows of 12 points: shorter than the d = 4 footprint (21 or 22 points).
                for w in [12, 30] {
                    exact_windows(&model, &stream, w, &format!("{view:?} z={znorm} w={w}"));
                }
            }
        }
        assert!(
            max_thresholds > 0 && mean_thresholds > 0 && positions > 0,
            "threshold hypotheses: {max_thresholds} on the max, {mean_thresholds} on the mean, {positions} on the position"
        );
    }

    /// Three channels, dependent and independent spaces (each view, normalisation and
    /// dilation, max and mean hypotheses): every window's incremental explanation equals
    /// the offline one of the same points, bit for bit, including windows shorter than a
    /// footprint; a point with another channel count is refused.
    #[test]
    fn multichannel_spaces_score_exactly() {
        use crate::mil::{ChannelMode, SpaceParams};
        let channel = |i: usize, c: usize, t: usize| -> f64 {
            let up = i.is_multiple_of(2);
            let wave = if up && c == 1 {
                ((t + i) as f64 * 0.7).sin()
            } else {
                0.0
            };
            wave + ((t * 7 + i * 3 + c * 5) % 5) as f64 * 0.2 + c as f64
        };
        let mut ds = Dataset::default();
        for i in 0..16usize {
            ds.ids.push(format!("s{i}"));
            ds.labels.push(if i.is_multiple_of(2) {
                "wave".into()
            } else {
                "noise".into()
            });
            ds.samples.push(Sample::Multi(
                (0..3)
                    .map(|c| (0..40).map(|t| channel(i, c, t)).collect())
                    .collect(),
            ));
        }
        let stream: Vec<Vec<f64>> = (0..120)
            .map(|t| (0..3).map(|c| channel(t / 30, c, t)).collect())
            .collect();
        for mode in [ChannelMode::Independent, ChannelMode::Dependent] {
            let params = FitParams {
                lengths: vec![ShapeletLength::Absolute(5)],
                k: Some(10),
                max_rounds: 12,
                spaces: SpaceParams {
                    dilations: 3,
                    channels: mode,
                    ..SpaceParams::default()
                },
                ..FitParams::default()
            };
            let model = Model::fit(&ds, &params).unwrap();
            let Model::LpboostShapelet(m) = &model else {
                unreachable!()
            };
            match mode {
                ChannelMode::Independent => assert!(m.spaces.iter().any(|s| s.channel == 2)),
                ChannelMode::Dependent => assert!(m.spaces.iter().all(|s| s.block == 3)),
            }
            for w in [10, 25] {
                let mut sc = WindowScorer::new(&model, w).unwrap();
                assert_eq!(sc.channels(), 3);
                assert!(sc.push_point(&model, &[1.0, 2.0]).is_err());
                let mut checked = 0;
                for (t, x) in stream.iter().enumerate() {
                    sc.push_point(&model, x).unwrap();
                    let Some(inc) = sc.explain(&model).unwrap() else {
                        continue;
                    };
                    let window = Sample::Multi(
                        (0..3)
                            .map(|c| stream[t + 1 - w..=t].iter().map(|p| p[c]).collect())
                            .collect(),
                    );
                    let scratch = model.explain(&window).unwrap();
                    assert_eq!(inc, scratch, "{mode:?} w={w} ending at {t}");
                    checked += 1;
                }
                assert_eq!(checked, stream.len() + 1 - w);
                let channels: Vec<Vec<f64>> = (0..3)
                    .map(|c| stream.iter().map(|p| p[c]).collect())
                    .collect();
                let channels: Vec<&[f64]> = channels.iter().map(Vec::as_slice).collect();
                exact_runs(&model, &channels, w, &format!("{mode:?} w={w}"));
            }
        }
    }

    /// Duration windows: a window whose length varies but whose start never moves back.
    #[test]
    fn variable_windows_with_a_forward_moving_start_equal_from_scratch() {
        let model = toy_model();
        let cap = 40;
        let stream: Vec<f64> = (0..300)
            .map(|t| ((t * 7 % 23) as f64 * 0.3).cos() * 1.5 + if t % 50 < 5 { 2.0 } else { 0.0 })
            .collect();
        let mut sc = WindowScorer::new(&model, cap).unwrap();
        let mut start = 0usize;
        let mut checked = 0;
        for (t, &x) in stream.iter().enumerate() {
            sc.push(&model, x).unwrap();
            let n = t + 1;
            // The start jumps ahead irregularly, and is pulled up when the cap forces it.
            if t % 7 == 3 {
                start += (t * 5) % 9;
            }
            start = start.max(n.saturating_sub(cap)).min(n);
            if t % 3 != 0 {
                continue;
            }
            let len = n - start;
            let inc = sc.explain_last(&model, len).unwrap();
            if len < 8 {
                assert!(
                    inc.is_none(),
                    "a window of {len} points has no 8-point shapelet"
                );
                continue;
            }
            let inc = inc.unwrap();
            let scratch = model
                .explain(&Sample::Series(stream[start..n].to_vec()))
                .unwrap();
            assert_eq!(inc.prediction, scratch.prediction, "window {start}..{n}");
            assert_eq!(
                inc.contributions, scratch.contributions,
                "window {start}..{n}"
            );
            checked += 1;
        }
        assert!(checked > 50, "only {checked} windows compared");
    }

    #[test]
    fn window_shorter_than_a_shapelet_is_an_error() {
        let model = toy_model();
        assert!(WindowScorer::new(&model, 6)
            .unwrap_err()
            .to_string()
            .contains("longest shapelet (8)"));
    }
}
