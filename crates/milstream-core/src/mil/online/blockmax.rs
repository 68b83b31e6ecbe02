//! The sliding-window maxima (and the sums of mean groups) of one window scorer's
//! hypothesis groups, kept by blocks.
//!
//! A space's subsequences are cut, from the first one on, into blocks of `B` consecutive
//! starts (about a quarter of a window). Per group a scorer keeps, in a ring of fixed size,
//! the maximum (value and where it lies) of the block being filled and of the completed
//! blocks the window still overlaps; a mean group likewise its blocks' exact fixed-point
//! sums. A window's maximum is then the fold, in start order, of: the subsequences of the
//! oldest, partly covered block (recomputed from the kept points by the caller), the
//! completed blocks after it, and the running block; its sum the sum of the same parts
//! (integers: the same bits as the offline scorer's sum, in any order). No subsequence
//! leaving the window is recomputed, as a sliding sum would need.
//!
//! Why not a monotonic deque: it is O(1) amortised, but each step pops a data-dependent
//! number of entries (a mispredicted branch per group and point) and its entries, scattered
//! over an arena, grow with the data. Here a point costs one compare per group on a dense
//! row, the memory per group is fixed (five block maxima of 10 bytes), and a window's
//! maximum costs at most one block's subsequences recomputed when it is read: a window is
//! read once per hop, a point arrives every point.
//!
//! The fold keeps the first maximiser (strict `>`, from minus infinity), as the offline
//! scorer's argmax over the window does, so the two agree bit for bit, ties included.

/// Blocks per window: a window's maximum recomputes at most `window / BLOCKS` subsequences
/// per space (eight at a time, `lanes.rs`), and a group keeps `BLOCKS + 1` block maxima.
/// Four, not eight: the rings are most of a live series' memory (`bench --score`: 6.4 KB of
/// 13.6 KB with eight), and the longer recomputation goes through the lanes.
const BLOCKS: usize = 4;

use std::sync::Arc;

/// One space's blocks: their size and where its rows lie. The same for every scorer of
/// one model and window length, so the scorers share it ([`Layout`]).
#[derive(Debug)]
struct SpaceLayout {
    /// Subsequences per block (B).
    block: u32,
    /// Rows of its ring: the completed blocks a window overlaps at most, and the running one.
    rows: u32,
    /// The space's groups, and of them mean groups.
    groups: u32,
    means: u32,
    /// Where its ring starts in `val`/`off` (`rows` rows of `groups`) and in `sum` (`rows`
    /// rows of `means`): block `k` is row `k % rows`.
    val_at: u32,
    sum_at: u32,
}

/// A scorer's place in one space's blocks (16 bytes).
#[derive(Debug, Clone, Default)]
struct SpaceState {
    /// The block being filled.
    current: u64,
    /// Subsequences in it so far (0 before the space's first subsequence).
    filled: u32,
    /// Completed blocks kept: `current - count .. current`.
    count: u16,
    /// The running block's row (`current % rows`, kept to spare a division a point).
    slot: u16,
}

/// The blocks of a model's used spaces under windows of one length: made once per model
/// and window (the incremental plan keeps it), shared by the scorers of every series.
#[derive(Debug, Default)]
pub(crate) struct Layout {
    spaces: Box<[SpaceLayout]>,
    /// Lengths of `val`/`off` and of `sum`.
    vals: usize,
    sums: usize,
}

impl Layout {
    /// The blocks of spaces of `(groups, mean groups, footprint)` under windows of `window`
    /// points (fewer than 2^31).
    pub fn new(spaces: &[(usize, usize, usize)], window: usize) -> Self {
        let (mut out, mut vals, mut sums) = (Vec::new(), 0, 0);
        for &(groups, means, footprint) in spaces {
            // Subsequences a full window holds.
            let per_window = (window + 1).saturating_sub(footprint).max(1);
            let block = per_window.div_ceil(BLOCKS).clamp(1, u16::MAX as usize + 1);
            // Completed blocks a window overlaps once the oldest it no longer reaches are
            // dropped: the subsequence that starts block k + 1 has its window starting at
            // or after (k + 1) B - (per_window - 1), so blocks from k + 1 - ceil((per_window
            // - 1) / B) on; and the running block. At most BLOCKS + 1, or 2^15 + 1 when a
            // window of up to 2^31 points has blocks of 2^16: a u16 counts them.
            let rows = (per_window - 1).div_ceil(block) + 1;
            assert!(
                rows <= usize::from(u16::MAX),
                "windows are under 2^31 points"
            );
            out.push(SpaceLayout {
                block: block as u32,
                rows: rows as u32,
                groups: groups as u32,
                means: means as u32,
                val_at: vals as u32,
                sum_at: sums as u32,
            });
            vals += rows * groups;
            sums += rows * means;
        }
        Self {
            spaces: out.into(),
            vals,
            sums,
        }
    }
}

/// Layouts made for one model, by window length (a daemon scores with one).
#[derive(Debug, Default)]
pub(crate) struct Layouts(std::sync::Mutex<Vec<(usize, Arc<Layout>)>>);

impl Clone for Layouts {
    /// Derived data: a clone makes its own.
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl Layouts {
    /// The layout for windows of `window` points over the spaces `spaces` gives, made on
    /// first use and kept (for a few lengths; beyond, each caller gets its own).
    pub fn get(
        &self,
        window: usize,
        spaces: impl FnOnce() -> Vec<(usize, usize, usize)>,
    ) -> Arc<Layout> {
        let mut made = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, layout)) = made.iter().find(|(w, _)| *w == window) {
            return Arc::clone(layout);
        }
        let layout = Arc::new(Layout::new(&spaces(), window));
        if made.len() < 8 {
            made.push((window, Arc::clone(&layout)));
        }
        layout
    }
}

/// Per hypothesis group of a scorer: the maxima of the running block and of the completed
/// blocks its window overlaps. Boxed slices: sized once, no spare capacity.
#[derive(Debug, Clone, Default)]
pub(crate) struct BlockMaxima {
    layout: Arc<Layout>,
    spaces: Box<[SpaceState]>,
    /// Per space, `rows` rows of its groups' block maxima and their offsets in the block.
    val: Box<[f64]>,
    off: Box<[u16]>,
    /// Per space, `rows` rows of its mean groups' block sums in fixed point. A value is at
    /// most 1 in magnitude (alpha in the l1 ball, a Gaussian kernel), 2^40 in fixed point,
    /// so a block of at most 2^16 of them stays well inside an i64.
    sum: Box<[i64]>,
}

/// Where a window's maximum in one space comes from: first the subsequences
/// `recompute` (from the kept points), then the kept blocks from `blocks_from` on and the
/// running block (when `blocks_from` is Some).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WindowParts {
    pub recompute: std::ops::Range<u64>,
    pub blocks_from: Option<u64>,
    /// The newest subsequence's start.
    pub last: u64,
}

/// What [`BlockMaxima::enter`] hands out for subsequences entering one block: the first
/// one's offset in the block, how many of them fit in it, and the block's maxima, their
/// offsets and the mean groups' sums, to raise and add to.
pub(crate) struct Entering<'a> {
    pub off: u16,
    pub len: usize,
    pub max: &'a mut [f64],
    pub at: &'a mut [u16],
    pub sums: &'a mut [i64],
}

impl BlockMaxima {
    /// Maxima laid out by `layout`, before any subsequence.
    pub fn new(layout: Arc<Layout>) -> Self {
        Self {
            spaces: vec![SpaceState::default(); layout.spaces.len()].into(),
            val: vec![f64::NEG_INFINITY; layout.vals].into(),
            off: vec![0; layout.vals].into(),
            sum: vec![0; layout.sums].into(),
            layout,
        }
    }

    /// Space `s`'s next subsequences enter, at most `most` of them (their starts are
    /// consecutive from 0): when the running block is full it becomes a completed one
    /// (dropping the blocks that end before `window_start`, the first one's window) and a
    /// new one starts. Hands out as many of them as the running block takes.
    #[inline]
    pub fn enter(&mut self, s: usize, window_start: u64, most: usize) -> Entering<'_> {
        debug_assert!(most > 0, "at least one subsequence enters");
        if self.spaces[s].filled == self.layout.spaces[s].block {
            self.complete(s, window_start);
        }
        let lay = &self.layout.spaces[s];
        let sb = &mut self.spaces[s];
        let len = most.min((lay.block - sb.filled) as usize);
        let slot = usize::from(sb.slot);
        let (g, m) = (lay.groups as usize, lay.means as usize);
        let row = lay.val_at as usize + slot * g;
        let sums = lay.sum_at as usize + slot * m;
        let off = sb.filled as u16;
        sb.filled += len as u32;
        Entering {
            off,
            len,
            max: &mut self.val[row..row + g],
            at: &mut self.off[row..row + g],
            sums: &mut self.sum[sums..sums + m],
        }
    }

    /// Space `s`'s running block is full: it joins the completed ones, a new one starts.
    #[cold]
    fn complete(&mut self, s: usize, window_start: u64) {
        let (lay, sb) = (&self.layout.spaces[s], &mut self.spaces[s]);
        let b = u64::from(lay.block);
        sb.count += 1;
        sb.current += 1;
        sb.filled = 0;
        while sb.count > 0 && (sb.current - u64::from(sb.count) + 1) * b <= window_start {
            sb.count -= 1;
        }
        debug_assert!(
            u32::from(sb.count) < lay.rows,
            "a window overlaps at most `rows - 1` blocks"
        );
        sb.slot = if u32::from(sb.slot) + 1 == lay.rows {
            0
        } else {
            sb.slot + 1
        };
        let slot = usize::from(sb.slot);
        let (g, m) = (lay.groups as usize, lay.means as usize);
        let row = lay.val_at as usize + slot * g;
        self.val[row..row + g].fill(f64::NEG_INFINITY);
        self.off[row..row + g].fill(0);
        let row = lay.sum_at as usize + slot * m;
        self.sum[row..row + m].fill(0);
    }

    /// The start of space `s`'s newest subsequence, None before its first.
    pub fn last_start(&self, s: usize) -> Option<u64> {
        let (lay, sb) = (&self.layout.spaces[s], &self.spaces[s]);
        // A block is completed only as the next subsequence enters: `filled` is 0 only
        // before the first.
        (sb.filled > 0).then(|| sb.current * u64::from(lay.block) + u64::from(sb.filled) - 1)
    }

    /// How the maximum over space `s`'s subsequences starting at `window_start` or later
    /// is made up; None when there are none yet.
    pub fn parts(&self, s: usize, window_start: u64) -> Option<WindowParts> {
        let last = self.last_start(s)?;
        if last < window_start {
            return None;
        }
        let sb = &self.spaces[s];
        let b = u64::from(self.layout.spaces[s].block);
        let k0 = window_start / b;
        if k0 == sb.current {
            // The window starts inside the running block, whose maximum may lie before it.
            return Some(WindowParts {
                recompute: window_start..last + 1,
                blocks_from: None,
                last,
            });
        }
        debug_assert!(
            k0 >= sb.current - u64::from(sb.count),
            "blocks the window overlaps are kept"
        );
        let partial = !window_start.is_multiple_of(b);
        let recompute = if partial {
            window_start..(k0 + 1) * b
        } else {
            window_start..window_start
        };
        Some(WindowParts {
            recompute,
            blocks_from: Some(k0 + u64::from(partial)),
            last,
        })
    }

    /// Folds into `best` (per group of space `s`: value and start) the kept blocks from
    /// `from` on and then the running block, in start order, keeping the first maximiser;
    /// and adds their sums into `sums` (per mean group of the space).
    pub fn fold(&self, s: usize, from: u64, best: &mut [(f64, u64)], sums: &mut [i128]) {
        let (lay, sb) = (&self.layout.spaces[s], &self.spaces[s]);
        let (b, g, m) = (
            u64::from(lay.block),
            lay.groups as usize,
            lay.means as usize,
        );
        for k in from..=sb.current {
            let slot = (k % u64::from(lay.rows)) as usize;
            let row = lay.val_at as usize + slot * g;
            let (vals, offs) = (&self.val[row..row + g], &self.off[row..row + g]);
            for ((bst, &v), &o) in best.iter_mut().zip(vals).zip(offs) {
                if v > bst.0 {
                    *bst = (v, k * b + u64::from(o));
                }
            }
            let row = lay.sum_at as usize + slot * m;
            for (sum, &x) in sums.iter_mut().zip(&self.sum[row..row + m]) {
                *sum += i128::from(x);
            }
        }
    }

    /// Heap bytes: (block maxima the windows overlap now, all the block maxima held, the
    /// block sums); the shared layout aside.
    pub fn heap_bytes(&self) -> (usize, usize, usize) {
        let entry = std::mem::size_of::<f64>() + std::mem::size_of::<u16>();
        let live: usize = self
            .spaces
            .iter()
            .zip(&self.layout.spaces)
            .map(|(sb, lay)| (usize::from(sb.count) + 1) * lay.groups as usize)
            .sum();
        (
            live * entry,
            self.val.len() * entry + std::mem::size_of_val(&*self.spaces),
            std::mem::size_of_val(&*self.sum),
        )
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    /// A value's fixed-point form, as the scorer sums it.
    fn fixed(v: f64) -> i64 {
        if v.is_finite() {
            (v * 1024.0) as i64
        } else {
            7
        }
    }

    fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    /// Block maxima plus recomputed parts give the first maximiser (and block sums the
    /// sum) of every window, over random values with many ties, NaN and minus infinity,
    /// entering one by one and in runs (each run's maximum folded in at once, as the
    /// scorer's lanes do), windows moving by one and jumping (as a duration window's start
    /// does), against a plain scan.
    #[test]
    fn windows_fold_to_the_first_maximiser() {
        let mut rnd = xorshift(0x9e37_79b9_7f4a_7c15);
        for &(window, footprint, groups) in &[
            (20usize, 5usize, 3usize),
            (150, 9, 2),
            (7, 7, 1),
            (5, 9, 2),
            (64, 1, 4),
            (9, 1, 2),
        ] {
            let layout = Layout::new(&[(groups, groups, footprint)], window);
            let mut bm = BlockMaxima::new(Arc::new(layout));
            // values[start][group]
            let mut values: Vec<Vec<f64>> = Vec::new();
            let mut window_start = 0u64;
            let mut n = 0u64;
            while n < 2_000 {
                // A run of subsequences: each with its count window's start.
                let mut run: Vec<(u64, Vec<f64>)> = Vec::new();
                for _ in 0..[1, 1, 3, 8, 13][(rnd() % 5) as usize] {
                    n += 1;
                    if (n as usize) < footprint {
                        continue;
                    }
                    window_start = window_start.max(n.saturating_sub(window as u64));
                    let row: Vec<f64> = (0..groups)
                        .map(|_| match rnd() % 10 {
                            0 => f64::NAN,
                            1 => f64::NEG_INFINITY,
                            r => ((r % 4) as f64) * 0.5,
                        })
                        .collect();
                    run.push((window_start, row));
                }
                let mut j = 0;
                while j < run.len() {
                    let e = bm.enter(0, run[j].0, run.len() - j);
                    assert!(e.len >= 1);
                    for i in 0..groups {
                        let mut top = (f64::NEG_INFINITY, 0);
                        for (q, (_, row)) in run[j..j + e.len].iter().enumerate() {
                            if row[i] > top.0 {
                                top = (row[i], q);
                            }
                            e.sums[i] += fixed(row[i]);
                        }
                        if top.0 > e.max[i] {
                            e.max[i] = top.0;
                            e.at[i] = e.off + top.1 as u16;
                        }
                    }
                    j += e.len;
                }
                values.extend(run.into_iter().map(|(_, row)| row));
                if rnd().is_multiple_of(37) {
                    // A duration window's start jumps forward, never back.
                    window_start = (window_start + rnd() % 5).min(n);
                }
                let Some(parts) = bm.parts(0, window_start) else {
                    assert!(values.len() as u64 <= window_start);
                    continue;
                };
                let start = values.len() as u64 - 1;
                assert_eq!(parts.last, start);
                let mut best = vec![(f64::NEG_INFINITY, window_start); groups];
                let mut total = vec![0i128; groups];
                for x in parts.recompute.clone() {
                    for (i, b) in best.iter_mut().enumerate() {
                        let v = values[x as usize][i];
                        if v > b.0 {
                            *b = (v, x);
                        }
                        total[i] += i128::from(fixed(v));
                    }
                }
                if let Some(from) = parts.blocks_from {
                    bm.fold(0, from, &mut best, &mut total);
                }
                for (i, b) in best.iter().enumerate() {
                    let mut scan = (f64::NEG_INFINITY, window_start);
                    let mut sum = 0i128;
                    for x in window_start..=start {
                        let v = values[x as usize][i];
                        if v > scan.0 {
                            scan = (v, x);
                        }
                        sum += i128::from(fixed(v));
                    }
                    assert_eq!(total[i], sum, "window {window} n {n}");
                    assert_eq!(b.0.to_bits(), scan.0.to_bits(), "window {window} n {n}");
                    assert_eq!(b.1, scan.1, "window {window} n {n}");
                }
            }
        }
    }
}
