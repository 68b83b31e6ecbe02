//! A run's new subsequences of one space scored side by side (`WindowScorer::push_points`):
//! `LANES` consecutive subsequences extracted into one dimension-major block, their kernel
//! rows against the space's kept representatives and their groups' values computed lane by
//! lane, each lane doing the IEEE operations of one subsequence in the same order as the
//! point-by-point path (`row_at`, `group_value`, `to_fixed`), so the same bits. Vectorising
//! across subsequences keeps bits where reassociating within one value would not.

use crate::mil::shapelet::to_fixed;
use crate::mil::space::kernel::{gaussian_rows_lanes, Kernel, RepBlocks, LANES};
use crate::mil::space::Extraction;

/// One hypothesis group of a space's plan (`incremental::Plan`): hypotheses with the same
/// space and alpha, bit for bit, share one value per subsequence.
#[derive(Debug, Clone)]
pub(crate) struct GroupPlan {
    pub(crate) group: usize,
    /// Alpha over the kept representatives, in the model's order (the sum's order, hence
    /// its bits).
    pub(crate) alpha: Vec<(u32, f64)>,
    /// Its index among its space's mean groups, when a mean hypothesis is in it.
    pub(crate) mean: Option<usize>,
}

/// A space some hypothesis reads, as the scorer scores it: its extraction, kernel, the
/// representatives some alpha weighs, and its groups.
#[derive(Debug, Clone)]
pub(crate) struct SpacePlan {
    pub(crate) extraction: Extraction,
    pub(crate) footprint: usize,
    pub(crate) dim: usize,
    pub(crate) kernel: Kernel,
    pub(crate) kept: RepBlocks,
    pub(crate) n_kept: usize,
    pub(crate) groups: Vec<GroupPlan>,
    /// The space's mean groups (their sum slots are the space's, in this order).
    pub(crate) n_means: usize,
}

/// A scoring thread's scratch for a run: `LANES` subsequences side by side, their kernel
/// rows, their groups' values and fixed-point values (group g's of lane j at
/// `g * LANES + j`).
#[derive(Default)]
pub(crate) struct LaneScratch {
    pub(crate) subs: Vec<f64>,
    pub(crate) rows: Vec<f64>,
    pub(crate) values: Vec<f64>,
    pub(crate) fixed: Vec<i64>,
}

/// Whether `n` subsequences of `sp` are cheaper side by side (a vector holds `LANES`
/// subsequences against one representative) than one by one (a vector holds eight
/// representatives against one subsequence); the two give the same bits.
pub(crate) fn in_lanes(sp: &SpacePlan, n: usize) -> bool {
    matches!(sp.kernel, Kernel::Gaussian { .. }) && n > 1 && n * sp.n_kept.div_ceil(8) >= sp.n_kept
}

/// The values of `sp`'s groups on its subsequences at `at .. at + n` of `all` (n <= `LANES`),
/// side by side: group g's value on the subsequence at `at + j` into `values[g * LANES + j]`
/// and, for a mean group, its fixed-point value into `fixed`. Each lane does what
/// `row_at`, `group_value` and [`to_fixed`] do for its subsequence, in the same order
/// (the alpha sum folds from -0.0 as `Iterator::sum` does), so their bits. Gaussian spaces
/// only (see [`in_lanes`]).
#[inline(always)]
fn lane_values(sp: &SpacePlan, all: &[&[f64]], at: usize, n: usize, l: &mut LaneScratch) {
    let Kernel::Gaussian { sigma } = sp.kernel else {
        unreachable!("in_lanes admits Gaussian spaces only")
    };
    sp.extraction.extract_lanes(all, at, n, &mut l.subs);
    let rows = &mut l.rows[..sp.n_kept * LANES];
    gaussian_rows_lanes(sigma, &l.subs, &sp.kept, rows);
    for ((g, v), x) in sp
        .groups
        .iter()
        .zip(l.values.chunks_exact_mut(LANES))
        .zip(l.fixed.chunks_exact_mut(LANES))
    {
        let mut acc = [-0.0f64; LANES];
        for &(z, a) in &g.alpha {
            let r = &rows[z as usize * LANES..(z as usize + 1) * LANES];
            for (s, &k) in acc.iter_mut().zip(r) {
                *s += a * k;
            }
        }
        v.copy_from_slice(&acc);
        if g.mean.is_some() {
            for (x, &v) in x.iter_mut().zip(&acc) {
                *x = to_fixed(v);
            }
        }
    }
}

/// [`lane_values`] built for the widest vectors the CPU has: every build does the same IEEE
/// operations per lane (no fused multiply-add), so the bits are the same.
pub(crate) fn lane_values_dispatch(
    sp: &SpacePlan,
    all: &[&[f64]],
    at: usize,
    n: usize,
    l: &mut LaneScratch,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F, checked on the line above.
            return unsafe { lane_values_avx512(sp, all, at, n, l) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked on the line above.
            return unsafe { lane_values_avx2(sp, all, at, n, l) };
        }
    }
    lane_values(sp, all, at, n, l)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn lane_values_avx512(
    sp: &SpacePlan,
    all: &[&[f64]],
    at: usize,
    n: usize,
    l: &mut LaneScratch,
) {
    lane_values(sp, all, at, n, l)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn lane_values_avx2(
    sp: &SpacePlan,
    all: &[&[f64]],
    at: usize,
    n: usize,
    l: &mut LaneScratch,
) {
    lane_values(sp, all, at, n, l)
}
/// The first maximiser of `values` (strict `>` from minus infinity: NaN never wins) and
/// where it is; minus infinity at 0 when none is above it. Raising a running maximum with
/// it (strict `>` again) gives what raising it with each value in turn gives, bits and
/// place.
#[inline]
pub(crate) fn first_max(values: &[f64]) -> (f64, usize) {
    let mut top = (f64::NEG_INFINITY, 0);
    for (k, &v) in values.iter().enumerate() {
        if v > top.0 {
            top = (v, k);
        }
    }
    top
}

/// A scorer's channel buffers as the slices extraction reads (every channel's buffer has
/// the same length): a univariate series' one slice is borrowed without building a list.
pub(crate) enum Channels<'a> {
    One([&'a [f64]; 1]),
    Many(Vec<&'a [f64]>),
}

impl<'a> Channels<'a> {
    pub fn of(recent: &'a [Vec<f64>]) -> Self {
        match recent {
            [one] => Self::One([one.as_slice()]),
            _ => Self::Many(recent.iter().map(Vec::as_slice).collect()),
        }
    }

    pub fn slices(&self) -> &[&'a [f64]] {
        match self {
            Self::One(one) => one,
            Self::Many(many) => many,
        }
    }
}
