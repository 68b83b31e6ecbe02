//! The sliding-window maxima (and the sums of mean groups) of one window scorer's
//! hypothesis groups, kept by blocks.
//!
//! A space's subsequences are cut, from the first one on, into blocks of `B` consecutive
//! starts (about an eighth of a window). Per group a scorer keeps the running maximum
//! (value and where it lies) of the block being filled, and the maxima of the completed
//! blocks the window still overlaps, in a ring of fixed size; a mean group likewise its
//! blocks' exact fixed-point sums. A window's maximum is then the fold, in start order, of:
//! the subsequences of the oldest, partly covered block (recomputed from the kept points by
//! the caller), the completed blocks after it, and the running block; its sum the sum of
//! the same parts (integers: the same bits as the offline scorer's sum, in any order). No
//! subsequence leaving the window is recomputed, as a sliding sum would need.
//!
//! Why not a monotonic deque: it is O(1) amortised, but each step pops a data-dependent
//! number of entries (a mispredicted branch per group and point) and its entries, scattered
//! over an arena, grow with the data. Here a point costs one compare per group on a dense
//! row, the memory per group is fixed (about ten block maxima), and a window's maximum costs
//! at most one block's subsequences recomputed when it is read: a window is read once per
//! hop, a point arrives every point.
//!
//! The fold keeps the first maximiser (strict `>`, from minus infinity), as the offline
//! scorer's argmax over the window does, so the two agree bit for bit, ties included.

/// Blocks per window: a window's maximum recomputes at most `window / BLOCKS` subsequences
/// per space, and a group keeps about `BLOCKS + 1` block maxima.
const BLOCKS: usize = 8;

/// One space's blocks.
#[derive(Debug, Clone)]
struct SpaceBlocks {
    /// Subsequences per block (B).
    block: u32,
    /// Completed blocks the ring holds at most.
    cap: u32,
    /// The space's groups, and of them mean groups.
    groups: u32,
    means: u32,
    /// Where its groups' running maxima start in `cur_*`.
    cur_at: u32,
    /// Where its ring starts in `ring_*` (`cap` rows of `groups`).
    ring_at: u32,
    /// Where its mean groups' running sums start in `cur_sum`, and their ring in
    /// `ring_sum` (`cap` rows of `means`).
    sum_at: u32,
    ring_sum_at: u32,
    /// The block being filled.
    current: u64,
    /// Subsequences in it so far (0 before the space's first subsequence).
    filled: u32,
    /// The oldest completed block kept, and how many are kept (blocks `first..first+count`).
    first: u64,
    count: u32,
}

/// Per hypothesis group of a scorer: its running block maximum and the maxima of the
/// completed blocks its window overlaps.
#[derive(Debug, Clone, Default)]
pub(super) struct BlockMaxima {
    spaces: Vec<SpaceBlocks>,
    /// Per group (space by space, in the plan's order): the running maximum of the block
    /// being filled and its offset in the block.
    cur_val: Vec<f64>,
    cur_off: Vec<u16>,
    /// Per space, `cap` rows of its groups' completed-block maxima (row `k % cap` for block
    /// `k`) and their offsets in the block.
    ring_val: Vec<f64>,
    ring_off: Vec<u16>,
    /// Per mean group: the fixed-point sum of the running block's values, and per space
    /// `cap` rows of its mean groups' completed-block sums. A value is at most 1 in
    /// magnitude (alpha in the l1 ball, a Gaussian kernel), 2^40 in fixed point, so a
    /// block of at most 2^16 of them stays well inside an i64.
    cur_sum: Vec<i64>,
    ring_sum: Vec<i64>,
}

/// Where a window's maximum in one space comes from: first the subsequences
/// `recompute` (from the kept points), then the kept blocks from `blocks_from` on and the
/// running block (when `blocks_from` is Some).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct WindowParts {
    pub recompute: std::ops::Range<u64>,
    pub blocks_from: Option<u64>,
    /// The newest subsequence's start.
    pub last: u64,
}

impl BlockMaxima {
    /// Maxima for spaces of `(groups, mean groups, footprint)` under windows of `window`
    /// points.
    pub fn new(spaces: &[(usize, usize, usize)], window: usize) -> Self {
        let mut out = Self::default();
        for &(groups, means, footprint) in spaces {
            // Subsequences a full window holds.
            let per_window = (window + 1).saturating_sub(footprint).max(1);
            let block = per_window.div_ceil(BLOCKS).clamp(1, u16::MAX as usize + 1);
            // Completed blocks a window overlaps: at most ceil((per_window - 1) / block),
            // and one more while the oldest is evicted only when the next block starts.
            let cap = per_window.div_ceil(block) + 1;
            out.spaces.push(SpaceBlocks {
                block: block as u32,
                cap: cap as u32,
                groups: groups as u32,
                means: means as u32,
                cur_at: out.cur_val.len() as u32,
                ring_at: out.ring_val.len() as u32,
                sum_at: out.cur_sum.len() as u32,
                ring_sum_at: out.ring_sum.len() as u32,
                current: 0,
                filled: 0,
                first: 0,
                count: 0,
            });
            out.cur_val
                .extend(std::iter::repeat_n(f64::NEG_INFINITY, groups));
            out.cur_off.extend(std::iter::repeat_n(0, groups));
            out.ring_val.extend(std::iter::repeat_n(0.0, cap * groups));
            out.ring_off.extend(std::iter::repeat_n(0, cap * groups));
            out.cur_sum.extend(std::iter::repeat_n(0, means));
            out.ring_sum.extend(std::iter::repeat_n(0, cap * means));
        }
        out.cur_sum.shrink_to_fit();
        out.ring_sum.shrink_to_fit();
        out.cur_val.shrink_to_fit();
        out.cur_off.shrink_to_fit();
        out.ring_val.shrink_to_fit();
        out.ring_off.shrink_to_fit();
        out
    }

    /// Space `s`'s next subsequence enters (its starts are consecutive from 0): when the
    /// running block is full it is kept in the ring (dropping blocks that end before
    /// `window_start`) and a new one starts. Returns the new subsequence's offset in its
    /// block, the space's running maxima and their offsets, to be raised where its values
    /// exceed them, and its mean groups' running sums, to add its fixed-point values to.
    #[inline]
    #[allow(clippy::type_complexity)]
    pub fn enter(
        &mut self,
        s: usize,
        window_start: u64,
    ) -> (u16, &mut [f64], &mut [u16], &mut [i64]) {
        if self.spaces[s].filled == self.spaces[s].block {
            self.complete(s, window_start);
        }
        let sb = &mut self.spaces[s];
        let (at, g) = (sb.cur_at as usize, sb.groups as usize);
        let (sum_at, m) = (sb.sum_at as usize, sb.means as usize);
        let off = sb.filled as u16;
        sb.filled += 1;
        (
            off,
            &mut self.cur_val[at..at + g],
            &mut self.cur_off[at..at + g],
            &mut self.cur_sum[sum_at..sum_at + m],
        )
    }

    /// Space `s`'s running block is full: its row goes to the ring, it starts anew.
    #[cold]
    fn complete(&mut self, s: usize, window_start: u64) {
        let sb = &mut self.spaces[s];
        let b = u64::from(sb.block);
        while sb.count > 0 && (sb.first + 1) * b <= window_start {
            sb.first += 1;
            sb.count -= 1;
        }
        if sb.count == 0 {
            sb.first = sb.current;
        }
        debug_assert!(sb.count < sb.cap, "a window overlaps at most `cap` blocks");
        let slot = (sb.current % u64::from(sb.cap)) as usize;
        let (at, g) = (sb.cur_at as usize, sb.groups as usize);
        let row = sb.ring_at as usize + slot * g;
        self.ring_val[row..row + g].copy_from_slice(&self.cur_val[at..at + g]);
        self.ring_off[row..row + g].copy_from_slice(&self.cur_off[at..at + g]);
        self.cur_val[at..at + g].fill(f64::NEG_INFINITY);
        self.cur_off[at..at + g].fill(0);
        let (at, m) = (sb.sum_at as usize, sb.means as usize);
        let row = sb.ring_sum_at as usize + slot * m;
        self.ring_sum[row..row + m].copy_from_slice(&self.cur_sum[at..at + m]);
        self.cur_sum[at..at + m].fill(0);
        sb.count += 1;
        sb.current += 1;
        sb.filled = 0;
    }

    /// The start of space `s`'s newest subsequence, None before its first.
    pub fn last_start(&self, s: usize) -> Option<u64> {
        let sb = &self.spaces[s];
        (sb.filled > 0).then(|| sb.current * u64::from(sb.block) + u64::from(sb.filled) - 1)
    }

    /// How the maximum over space `s`'s subsequences starting at `window_start` or later
    /// is made up; None when there are none yet.
    pub fn parts(&self, s: usize, window_start: u64) -> Option<WindowParts> {
        let last = self.last_start(s)?;
        if last < window_start {
            return None;
        }
        let sb = &self.spaces[s];
        let b = u64::from(sb.block);
        let k0 = window_start / b;
        if k0 == sb.current {
            // The window starts inside the running block, whose maximum may lie before it.
            return Some(WindowParts {
                recompute: window_start..last + 1,
                blocks_from: None,
                last,
            });
        }
        debug_assert!(k0 >= sb.first, "blocks the window overlaps are kept");
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
        let sb = &self.spaces[s];
        let (b, g, m) = (u64::from(sb.block), sb.groups as usize, sb.means as usize);
        for k in from..sb.current {
            let slot = (k % u64::from(sb.cap)) as usize;
            let row = sb.ring_at as usize + slot * g;
            let (vals, offs) = (&self.ring_val[row..row + g], &self.ring_off[row..row + g]);
            for ((bst, &v), &o) in best.iter_mut().zip(vals).zip(offs) {
                if v > bst.0 {
                    *bst = (v, k * b + u64::from(o));
                }
            }
            let row = sb.ring_sum_at as usize + slot * m;
            for (sum, &x) in sums.iter_mut().zip(&self.ring_sum[row..row + m]) {
                *sum += i128::from(x);
            }
        }
        let at = sb.sum_at as usize;
        for (sum, &x) in sums.iter_mut().zip(&self.cur_sum[at..at + m]) {
            *sum += i128::from(x);
        }
        let at = sb.cur_at as usize;
        let (vals, offs) = (&self.cur_val[at..at + g], &self.cur_off[at..at + g]);
        for ((bst, &v), &o) in best.iter_mut().zip(vals).zip(offs) {
            if v > bst.0 {
                *bst = (v, sb.current * b + u64::from(o));
            }
        }
    }

    /// Heap bytes: (block maxima the windows overlap now, all the block maxima held, the
    /// block sums).
    pub fn heap_bytes(&self) -> (usize, usize, usize) {
        let entry = std::mem::size_of::<f64>() + std::mem::size_of::<u16>();
        let live: usize = self
            .spaces
            .iter()
            .map(|sb| (sb.count as usize + 1) * sb.groups as usize)
            .sum();
        (
            live * entry,
            (self.cur_val.capacity() + self.ring_val.capacity()) * 8
                + (self.cur_off.capacity() + self.ring_off.capacity()) * 2
                + self.spaces.capacity() * std::mem::size_of::<SpaceBlocks>(),
            (self.cur_sum.capacity() + self.ring_sum.capacity()) * 8,
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
    /// sum) of every window, over
    /// random values with many ties, windows moving by one and jumping (as a duration
    /// window's start does), against a plain scan.
    #[test]
    fn windows_fold_to_the_first_maximiser() {
        let mut rnd = xorshift(0x9e37_79b9_7f4a_7c15);
        for &(window, footprint, groups) in &[
            (20usize, 5usize, 3usize),
            (150, 9, 2),
            (7, 7, 1),
            (5, 9, 2),
            (64, 1, 4),
        ] {
            let mut bm = BlockMaxima::new(&[(groups, groups, footprint)], window);
            // values[start][group]
            let mut values: Vec<Vec<f64>> = Vec::new();
            let mut window_start = 0u64;
            for n in 1..=2_000u64 {
                if (n as usize) < footprint {
                    continue;
                }
                let start = n - footprint as u64;
                window_start = window_start.max(n.saturating_sub(window as u64));
                if rnd().is_multiple_of(37) {
                    // A duration window's start jumps forward, never back.
                    window_start = (window_start + rnd() % 5).min(n);
                }
                let row: Vec<f64> = (0..groups)
                    .map(|_| match rnd() % 10 {
                        0 => f64::NAN,
                        1 => f64::NEG_INFINITY,
                        r => ((r % 4) as f64) * 0.5,
                    })
                    .collect();
                let (off, cur, offs, sums) = bm.enter(0, window_start);
                for (i, &v) in row.iter().enumerate() {
                    if v > cur[i] {
                        cur[i] = v;
                        offs[i] = off;
                    }
                    sums[i] += fixed(v);
                }
                values.push(row);
                assert_eq!(values.len() as u64, start + 1);
                let Some(parts) = bm.parts(0, window_start) else {
                    assert!(start < window_start);
                    continue;
                };
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
