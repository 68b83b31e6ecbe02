//! The sliding-window maxima of one window scorer's hypothesis groups, kept by blocks.
//!
//! A space's subsequences are cut, from the first one on, into blocks of `B` consecutive
//! starts (about an eighth of a window). Per group a scorer keeps the running maximum
//! (value and where it lies) of the block being filled, and the maxima of the completed
//! blocks the window still overlaps, in a ring of fixed size. A window's maximum is then
//! the fold, in start order, of: the subsequences of the oldest, partly covered block
//! (recomputed from the kept points by the caller), the completed blocks after it, and the
//! running block.
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
    /// The space's groups.
    groups: u32,
    /// Where its groups' running maxima start in `cur_*`.
    cur_at: u32,
    /// Where its ring starts in `ring_*` (`cap` rows of `groups`).
    ring_at: u32,
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
}

/// Where a window's maximum in one space comes from: first the subsequences
/// `recompute` (from the kept points), then the kept blocks from `blocks_from` on and the
/// running block (when `blocks_from` is Some).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct WindowParts {
    pub recompute: std::ops::Range<u64>,
    pub blocks_from: Option<u64>,
}

impl BlockMaxima {
    /// Maxima for spaces of `(groups, footprint)` under windows of `window` points.
    pub fn new(spaces: &[(usize, usize)], window: usize) -> Self {
        let mut out = Self::default();
        for &(groups, footprint) in spaces {
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
                cur_at: out.cur_val.len() as u32,
                ring_at: out.ring_val.len() as u32,
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
        }
        out.cur_val.shrink_to_fit();
        out.cur_off.shrink_to_fit();
        out.ring_val.shrink_to_fit();
        out.ring_off.shrink_to_fit();
        out
    }

    /// Space `s`'s next subsequence enters (its starts are consecutive from 0): when the
    /// running block is full it is kept in the ring (dropping blocks that end before
    /// `window_start`) and a new one starts. Returns the new subsequence's offset in its
    /// block and the space's running maxima, to be raised where its values exceed them.
    #[inline]
    pub fn enter(&mut self, s: usize, window_start: u64) -> (u16, &mut [f64], &mut [u16]) {
        let sb = &mut self.spaces[s];
        let (at, g) = (sb.cur_at as usize, sb.groups as usize);
        if sb.filled == sb.block {
            Self::complete(
                sb,
                &mut self.cur_val[at..at + g],
                &mut self.cur_off[at..at + g],
                &mut self.ring_val,
                &mut self.ring_off,
                window_start,
            );
        }
        let off = sb.filled as u16;
        sb.filled += 1;
        (
            off,
            &mut self.cur_val[at..at + g],
            &mut self.cur_off[at..at + g],
        )
    }

    /// The running block is full: its row goes to the ring, it starts anew.
    #[cold]
    fn complete(
        sb: &mut SpaceBlocks,
        cur_val: &mut [f64],
        cur_off: &mut [u16],
        ring_val: &mut [f64],
        ring_off: &mut [u16],
        window_start: u64,
    ) {
        let b = u64::from(sb.block);
        while sb.count > 0 && (sb.first + 1) * b <= window_start {
            sb.first += 1;
            sb.count -= 1;
        }
        if sb.count == 0 {
            sb.first = sb.current;
        }
        debug_assert!(sb.count < sb.cap, "a window overlaps at most `cap` blocks");
        let g = sb.groups as usize;
        let row = sb.ring_at as usize + (sb.current % u64::from(sb.cap)) as usize * g;
        ring_val[row..row + g].copy_from_slice(cur_val);
        ring_off[row..row + g].copy_from_slice(cur_off);
        sb.count += 1;
        sb.current += 1;
        sb.filled = 0;
        cur_val.fill(f64::NEG_INFINITY);
        cur_off.fill(0);
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
            });
        }
        debug_assert!(k0 >= sb.first, "blocks the window overlaps are kept");
        let partial = window_start % b != 0;
        let recompute = if partial {
            window_start..(k0 + 1) * b
        } else {
            window_start..window_start
        };
        Some(WindowParts {
            recompute,
            blocks_from: Some(k0 + u64::from(partial)),
        })
    }

    /// Folds into `best` (per group of space `s`: value and start) the kept blocks from
    /// `from` on and then the running block, in start order, keeping the first maximiser.
    pub fn fold(&self, s: usize, from: u64, best: &mut [(f64, u64)]) {
        let sb = &self.spaces[s];
        let (b, g) = (u64::from(sb.block), sb.groups as usize);
        for k in from..sb.current {
            let row = sb.ring_at as usize + (k % u64::from(sb.cap)) as usize * g;
            let (vals, offs) = (&self.ring_val[row..row + g], &self.ring_off[row..row + g]);
            for ((bst, &v), &o) in best.iter_mut().zip(vals).zip(offs) {
                if v > bst.0 {
                    *bst = (v, k * b + u64::from(o));
                }
            }
        }
        let at = sb.cur_at as usize;
        let (vals, offs) = (&self.cur_val[at..at + g], &self.cur_off[at..at + g]);
        for ((bst, &v), &o) in best.iter_mut().zip(vals).zip(offs) {
            if v > bst.0 {
                *bst = (v, sb.current * b + u64::from(o));
            }
        }
    }

    /// Heap bytes: (block maxima the windows overlap now, all the structure holds).
    pub fn heap_bytes(&self) -> (usize, usize) {
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
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    /// Block maxima plus recomputed parts give the first maximiser of every window, over
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
            let mut bm = BlockMaxima::new(&[(groups, footprint)], window);
            // values[start][group]
            let mut values: Vec<Vec<f64>> = Vec::new();
            let mut window_start = 0u64;
            for n in 1..=2_000u64 {
                if (n as usize) < footprint {
                    continue;
                }
                let start = n - footprint as u64;
                window_start = window_start.max(n.saturating_sub(window as u64));
                if rnd() % 37 == 0 {
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
                let (off, cur, offs) = bm.enter(0, window_start);
                for (i, &v) in row.iter().enumerate() {
                    if v > cur[i] {
                        cur[i] = v;
                        offs[i] = off;
                    }
                }
                values.push(row);
                assert_eq!(values.len() as u64, start + 1);
                let Some(parts) = bm.parts(0, window_start) else {
                    assert!(start < window_start);
                    continue;
                };
                let mut best = vec![(f64::NEG_INFINITY, window_start); groups];
                for x in parts.recompute.clone() {
                    for (i, b) in best.iter_mut().enumerate() {
                        let v = values[x as usize][i];
                        if v > b.0 {
                            *b = (v, x);
                        }
                    }
                }
                if let Some(from) = parts.blocks_from {
                    bm.fold(0, from, &mut best);
                }
                for (i, b) in best.iter().enumerate() {
                    let mut scan = (f64::NEG_INFINITY, window_start);
                    for x in window_start..=start {
                        let v = values[x as usize][i];
                        if v > scan.0 {
                            scan = (v, x);
                        }
                    }
                    assert_eq!(b.0.to_bits(), scan.0.to_bits(), "window {window} n {n}");
                    assert_eq!(b.1, scan.1, "window {window} n {n}");
                }
            }
        }
    }
}
