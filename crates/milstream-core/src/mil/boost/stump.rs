//! Threshold hypotheses (beyond the paper): h(B) = 1 when a one-hot max or mean hypothesis
//! value of bag B lies on one side of a threshold, else 0. These are decision stumps over
//! the shapelet features, as in classical LPBoost (Demiriz et al., 2002), and the
//! occurrence thresholds of RDST: "some subsequence is at least this close to z", "at
//! least this share of the subsequences are near z". Outputs in {0, 1} keep the scale of the
//! kernel hypotheses (values in [0, 1]); with the bias in the class, the +-1 stump is their
//! affine image. The weak learner is exact over a fixed grid of thresholds per feature (cut
//! points between quantiles of the training bags' values), so a round costs one pass over
//! the bags per feature, like the one-hot pricing of appendix A.3.

use serde::{Deserialize, Serialize};

use crate::mil::boost::weak::WeakHypothesis;
use crate::mil::space::kernel_table::KernelTable;

/// Thresholds tried per feature at most (cut points between quantiles of the bags' values).
const MAX_CUTS: usize = 32;

/// Where a threshold hypothesis says 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    pub at: f64,
    /// 1 for values at or above `at` (true), or below it (false).
    pub above: bool,
    /// Thresholds where the best match lies rather than how close it is: the maximising
    /// subsequence's offset as a share of the bag's subsequences, in [0, 1) (RDST's argmin
    /// feature, relative so series of unequal length compare). False in older artifacts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub position: bool,
}

impl Threshold {
    /// 1 or 0 for a bag whose aggregated value is `value` and whose maximising subsequence
    /// lies at relative position `position`.
    pub fn output(&self, value: f64, position: f64) -> f64 {
        let v = if self.position { position } else { value };
        if (v >= self.at) == self.above {
            1.0
        } else {
            0.0
        }
    }
}

/// The aggregate over a bag's instances of K(z, .) a feature thresholds.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Feature {
    /// max_x K(z, x), the paper's hypothesis with one-hot alpha.
    Max,
    /// mean_x K(z, x), the mean hypothesis with one-hot alpha.
    Mean,
    /// argmax_x K(z, x) / |B|: where in the bag the best match lies.
    Position,
}

/// One feature's cut points and each bag's bin (the number of cuts at or below its value).
struct Binned {
    cuts: Vec<f64>,
    bins: Vec<u8>,
}

/// Every (representative, feature) of one space, binned once per fit.
pub struct ThresholdTable {
    /// The features of every representative, in this order.
    kinds: Vec<Feature>,
    /// Per feature (index z * kinds.len() + kind), its cut points.
    cuts: Vec<Vec<f64>>,
    /// Bag-major (bags x features): each bag's bin of every feature. A bag's row is read in
    /// one sweep that adds to a different histogram per feature, so the adds do not wait
    /// on each other as they would filling one feature's histogram bag after bag.
    bins: Vec<u8>,
    /// Per feature its number of cuts, padded with 0 to a multiple of [`LANES`] features.
    n_cuts: Vec<u8>,
    /// Histogram slots any feature uses: its most cuts plus one.
    slots: usize,
}

impl ThresholdTable {
    /// The max and mean features of every representative, and its best match's position
    /// with `position`.
    pub fn new(table: &KernelTable, position: bool) -> Self {
        let kinds = if position {
            vec![Feature::Max, Feature::Mean, Feature::Position]
        } else {
            vec![Feature::Max, Feature::Mean]
        };
        let (max, _, mean) = table.bag_stats();
        let position = if kinds.contains(&Feature::Position) {
            table.bag_positions()
        } else {
            Vec::new()
        };
        let (k, m) = (table.k, table.n_bags());
        let n_features = k * kinds.len();
        let mut cuts = Vec::with_capacity(n_features);
        let mut bins = vec![0u8; m * n_features];
        for z in 0..k {
            for &f in &kinds {
                let source = match f {
                    Feature::Max => max,
                    Feature::Mean => mean,
                    Feature::Position => &position,
                };
                let values: Vec<f64> = (0..m).map(|i| source[i * k + z]).collect();
                let b = binned(&values);
                let j = cuts.len();
                for (i, &bin) in b.bins.iter().enumerate() {
                    bins[i * n_features + j] = bin;
                }
                cuts.push(b.cuts);
            }
        }
        Self::from_parts(kinds, cuts, bins)
    }

    fn from_parts(kinds: Vec<Feature>, cuts: Vec<Vec<f64>>, bins: Vec<u8>) -> Self {
        let mut n_cuts: Vec<u8> = cuts.iter().map(|c| c.len() as u8).collect();
        n_cuts.resize(cuts.len().next_multiple_of(LANES), 0);
        let slots = n_cuts.iter().map(|&n| n as usize + 1).max().unwrap_or(1);
        Self {
            kinds,
            cuts,
            bins,
            n_cuts,
            slots,
        }
    }

    fn n_features(&self) -> usize {
        self.cuts.len()
    }

    fn bin(&self, bag: usize, feature: usize) -> usize {
        self.bins[bag * self.n_features() + feature] as usize
    }

    /// The outputs on every training bag of the threshold `t` on representative `z`'s max
    /// (or `mean`) feature, as [`best_threshold`] found it: from the bins, so exactly what
    /// the edge counted.
    pub fn outputs(&self, z: usize, mean: bool, t: Threshold) -> Vec<f64> {
        let kind = if t.position {
            Feature::Position
        } else if mean {
            Feature::Mean
        } else {
            Feature::Max
        };
        let f = self
            .kinds
            .iter()
            .position(|&k| k == kind)
            .expect("a threshold of a feature the table has");
        let j = z * self.kinds.len() + f;
        let c = self.cuts[j]
            .iter()
            .position(|&at| at.to_bits() == t.at.to_bits())
            .expect("a threshold at one of the feature's cuts");
        let m = self.bins.len() / self.n_features().max(1);
        (0..m)
            .map(|i| {
                if (self.bin(i, j) > c) == t.above {
                    1.0
                } else {
                    0.0
                }
            })
            .collect()
    }
}

/// Cut points halfway between consecutive distinct values at the quantiles 1/B, 2/B, ...,
/// so no training value sits on a cut.
fn binned(values: &[f64]) -> Binned {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let m = sorted.len();
    let q = MAX_CUTS.min(m);
    let mut cuts: Vec<f64> = Vec::new();
    for j in 1..q {
        let i = j * m / q;
        let (lo, hi) = (sorted[i - 1], sorted[i]);
        let cut = lo + (hi - lo) / 2.0;
        if lo < hi && cuts.last().is_none_or(|&c| cut > c) {
            cuts.push(cut);
        }
    }
    let bins = values
        .iter()
        .map(|&v| cuts.partition_point(|&c| c <= v) as u8)
        .collect();
    Binned { cuts, bins }
}

/// Features whose edge bounds are swept side by side, one per lane.
const LANES: usize = 8;

/// The threshold hypothesis of largest edge sum_i d_i y_i h(B_i) in a space, as (hypothesis
/// with one-hot alpha, mean aggregate?, threshold), or None when no feature has a cut;
/// `active` are the bags of positive weight ([`crate::mil::boost::weak::active_bags`]). Its
/// `outputs` are left empty: every space offers its best each round and few become
/// columns, so the caller asks [`ThresholdTable::outputs`] for those it keeps.
pub fn best_threshold(
    table: &ThresholdTable,
    y: &[f64],
    d: &[f64],
    active: &[usize],
    skip: impl Fn(usize, bool, Threshold) -> bool,
) -> Option<(WeakHypothesis, bool, Threshold)> {
    let nf = table.n_features();
    let width = table.n_cuts.len();
    let total: f64 = active.iter().map(|&i| y[i] * d[i]).sum();
    // Every feature's histogram of y_i d_i over its bins, from one sweep of the active bags;
    // slot-major (slot s of feature j at s * width + j), so [`LANES`] features' slots lie
    // side by side for the bounds below. Each slot sums its bags in bag order.
    let mut hist = vec![0.0f64; table.slots * width];
    for &i in active {
        let yd = y[i] * d[i];
        let row = &table.bins[i * nf..(i + 1) * nf];
        for (j, &bin) in row.iter().enumerate() {
            hist[bin as usize * width + j] += yd;
        }
    }
    // Each feature's best edge regardless of the skip rule, a bound on its best allowed
    // one: most features cannot beat the best so far and are never checked against the rule.
    let bounds = edge_bounds_dispatch(&hist, &table.n_cuts, total);
    // (edge, feature index, cut, above)
    let mut best: Option<(f64, usize, usize, bool)> = None;
    for (j, cuts) in table.cuts.iter().enumerate() {
        let n = cuts.len();
        if n == 0 {
            continue;
        }
        if best.is_some_and(|(e, ..)| bounds[j] <= e) {
            continue;
        }
        // Bags at or above cut c are those in bins c+1..=n, summed from the top: edge
        // `above` for "1 at or above", `total - above` for "1 below".
        let mut above = 0.0;
        for c in (0..n).rev() {
            above += hist[(c + 1) * width + j];
            for (edge, up) in [(above, true), (total - above, false)] {
                let taken = || {
                    let f = table.kinds[j % table.kinds.len()];
                    skip(
                        j / table.kinds.len(),
                        f == Feature::Mean,
                        Threshold {
                            at: cuts[c],
                            above: up,
                            position: f == Feature::Position,
                        },
                    )
                };
                if best.is_none_or(|(e, ..)| edge > e) && !taken() {
                    best = Some((edge, j, c, up));
                }
            }
        }
    }
    let (edge, j, c, up) = best?;
    let f = table.kinds[j % table.kinds.len()];
    let threshold = Threshold {
        at: table.cuts[j][c],
        above: up,
        position: f == Feature::Position,
    };
    Some((
        WeakHypothesis {
            alpha: vec![(j / table.kinds.len(), 1.0)],
            edge,
            outputs: Vec::new(),
            dc_iterations: 0,
            lp_solves: 0,
            rows_generated: 0,
            failure: None,
        },
        f == Feature::Mean,
        threshold,
    ))
}

/// Per feature, max over its cuts c of max(above_c, total - above_c), where above_c sums
/// its slots n..=c+1 from the top (the edges [`best_threshold`] scans, in its order, so the
/// same bits). [`LANES`] features at a time: each lane adds its own feature's slots in the
/// same order as one feature alone would, the lanes' chains of adds do not wait on each
/// other. A lane's slots above its feature's cuts are 0 (no bag's bin is above them), so
/// its sum stays 0.0 until its top slot; its bound counts only cuts it has.
#[inline(always)]
fn edge_bounds(hist: &[f64], n_cuts: &[u8], total: f64) -> Vec<f64> {
    let width = n_cuts.len();
    let mut bounds = vec![f64::NEG_INFINITY; width];
    for (b, (n, out)) in n_cuts
        .chunks_exact(LANES)
        .zip(bounds.chunks_exact_mut(LANES))
        .enumerate()
    {
        let top = n.iter().copied().max().unwrap_or(0) as usize;
        // Locals, stored once: a running bound kept in memory waits each cut on its own
        // masked store.
        let n: [usize; LANES] = std::array::from_fn(|l| n[l] as usize);
        let mut above = [0.0f64; LANES];
        let mut bound = [f64::NEG_INFINITY; LANES];
        for c in (1..=top).rev() {
            let h = &hist[c * width + b * LANES..c * width + (b + 1) * LANES];
            for (((above, &h), bound), &n) in above.iter_mut().zip(h).zip(&mut bound).zip(&n) {
                *above += h;
                let e = if *above > total - *above {
                    *above
                } else {
                    total - *above
                };
                // Branch-free: a cut the lane's feature lacks offers minus infinity.
                let e = if c <= n { e } else { f64::NEG_INFINITY };
                *bound = if e > *bound { e } else { *bound };
            }
        }
        out.copy_from_slice(&bound);
    }
    bounds
}

/// [`edge_bounds`] compiled for AVX-512 or AVX2 when the CPU has them (the same bits: no
/// fused multiply-add, the same operations per lane).
fn edge_bounds_dispatch(hist: &[f64], n_cuts: &[u8], total: f64) -> Vec<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F, checked on the line above.
            return unsafe { edge_bounds_avx512(hist, n_cuts, total) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked on the line above.
            return unsafe { edge_bounds_avx2(hist, n_cuts, total) };
        }
    }
    edge_bounds(hist, n_cuts, total)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn edge_bounds_avx512(hist: &[f64], n_cuts: &[u8], total: f64) -> Vec<f64> {
    edge_bounds(hist, n_cuts, total)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn edge_bounds_avx2(hist: &[f64], n_cuts: &[u8], total: f64) -> Vec<f64> {
    edge_bounds(hist, n_cuts, total)
}

/// A master LP column's identity: space, mean aggregate, threshold and alpha, bit for bit.
pub(crate) type ColumnKey = (usize, bool, Option<(u64, bool, bool)>, Vec<(usize, u64)>);

pub(crate) fn column_key(
    s: usize,
    mean: bool,
    t: Option<Threshold>,
    alpha: &[(usize, f64)],
) -> ColumnKey {
    (
        s,
        mean,
        t.map(|t| (t.at.to_bits(), t.above, t.position)),
        alpha.iter().map(|&(z, a)| (z, a.to_bits())).collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mil::boost::weak::active_bags;

    #[test]
    fn no_training_value_sits_on_a_cut_and_bins_count_the_cuts_below() {
        let values = [0.3, 0.1, 0.1, 0.9, 0.5, 0.7];
        let b = binned(&values);
        assert!(!b.cuts.is_empty());
        assert!(b.cuts.windows(2).all(|w| w[0] < w[1]), "{:?}", b.cuts);
        for (v, &bin) in values.iter().zip(&b.bins) {
            assert!(b.cuts.iter().all(|c| c != v));
            assert_eq!(bin as usize, b.cuts.iter().filter(|&&c| c <= *v).count());
        }
        // Equal values never split; a constant feature has no cut.
        assert!(binned(&[0.4; 5]).cuts.is_empty());
    }

    #[test]
    fn a_threshold_says_one_on_its_side() {
        let up = Threshold {
            at: 0.5,
            above: true,
            position: false,
        };
        let down = Threshold { above: false, ..up };
        assert_eq!((up.output(0.5, 0.0), up.output(0.49, 0.9)), (1.0, 0.0));
        assert_eq!((down.output(0.5, 0.0), down.output(0.49, 0.9)), (0.0, 1.0));
        // A position threshold reads the position and ignores the value.
        let early = Threshold {
            position: true,
            ..down
        };
        assert_eq!((early.output(0.9, 0.2), early.output(0.1, 0.5)), (1.0, 0.0));
    }

    /// A feature that separates the classes at a gap gives the largest edge there, with
    /// outputs equal to the threshold applied to the values (as prediction applies it).
    #[test]
    fn the_best_cut_separates_and_its_outputs_are_the_threshold_applied() {
        let m = 8;
        let values: Vec<f64> = (0..m).map(|i| i as f64 / 10.0).collect();
        let y: Vec<f64> = (0..m).map(|i| if i < 3 { 1.0 } else { -1.0 }).collect();
        let b = binned(&values);
        let table = ThresholdTable::from_parts(vec![Feature::Max], vec![b.cuts], b.bins);
        let d = vec![1.0 / m as f64; m];
        let (h, mean, t) =
            best_threshold(&table, &y, &d, &active_bags(m, &d), |_, _, _| false).unwrap();
        assert!(!mean);
        assert!(!t.above, "positives are the small values");
        assert!(t.at > 0.2 && t.at < 0.3, "{t:?}");
        assert!((h.edge - 3.0 / 8.0).abs() < 1e-12, "{}", h.edge);
        let applied: Vec<f64> = values.iter().map(|&v| t.output(v, 0.0)).collect();
        let outputs = table.outputs(h.alpha[0].0, mean, t);
        assert_eq!(outputs, applied);
        let edge: f64 = (0..m).map(|i| y[i] * d[i] * outputs[i]).sum();
        assert!((edge - h.edge).abs() < 1e-12);
    }

    /// Bags whose best match lies early are positive; the similarity says nothing. The
    /// position feature wins, its threshold is marked as one on the position, and the
    /// outputs are the threshold applied to the positions; with the value feature alone
    /// no cut reaches that edge. A position cut is skipped like any other.
    #[test]
    fn a_separating_position_is_a_position_threshold() {
        let m = 10;
        let value: Vec<f64> = (0..m).map(|i| 0.5 + 0.01 * ((i * 7) % m) as f64).collect();
        let position: Vec<f64> = (0..m).map(|i| i as f64 / m as f64).collect();
        let y: Vec<f64> = (0..m).map(|i| if i < 4 { 1.0 } else { -1.0 }).collect();
        let d = vec![1.0 / m as f64; m];
        let table = |kinds: Vec<Feature>| {
            let binned: Vec<Binned> = kinds
                .iter()
                .map(|k| {
                    binned(if *k == Feature::Position {
                        &position
                    } else {
                        &value
                    })
                })
                .collect();
            let nf = binned.len();
            let mut bins = vec![0u8; m * nf];
            for (j, b) in binned.iter().enumerate() {
                for i in 0..m {
                    bins[i * nf + j] = b.bins[i];
                }
            }
            ThresholdTable::from_parts(kinds, binned.into_iter().map(|b| b.cuts).collect(), bins)
        };
        let both = table(vec![Feature::Max, Feature::Position]);
        let (h, mean, t) =
            best_threshold(&both, &y, &d, &active_bags(m, &d), |_, _, _| false).unwrap();
        assert!(t.position && !t.above && !mean, "{t:?}");
        assert!((h.edge - 0.4).abs() < 1e-12, "{}", h.edge);
        let applied: Vec<f64> = (0..m).map(|i| t.output(value[i], position[i])).collect();
        assert_eq!(both.outputs(h.alpha[0].0, mean, t), applied);
        let (alone, ..) = best_threshold(
            &table(vec![Feature::Max]),
            &y,
            &d,
            &active_bags(m, &d),
            |_, _, _| false,
        )
        .unwrap();
        assert!(alone.edge < h.edge - 1e-9, "{} {}", alone.edge, h.edge);
        // The same cut refused: another one is taken.
        let (_, _, next) =
            best_threshold(&both, &y, &d, &active_bags(m, &d), |_, _, th| th == t).unwrap();
        assert_ne!(next, t);
    }

    /// [`best_threshold`] as it was before the slot-major histogram and the bounds swept
    /// in lanes (feature-major histogram, one feature's bound at a time): the reference.
    fn best_threshold_before(
        table: &ThresholdTable,
        y: &[f64],
        d: &[f64],
        skip: impl Fn(usize, bool, Threshold) -> bool,
    ) -> Option<(WeakHypothesis, bool, Threshold)> {
        const SLOTS: usize = MAX_CUTS + 1;
        let nf = table.n_features();
        let active = active_bags(y.len(), d);
        let total: f64 = active.iter().map(|&i| y[i] * d[i]).sum();
        let mut hist = vec![0.0f64; nf * SLOTS];
        for i in active {
            let yd = y[i] * d[i];
            let row = &table.bins[i * nf..(i + 1) * nf];
            for (j, &bin) in row.iter().enumerate() {
                hist[j * SLOTS + bin as usize] += yd;
            }
        }
        let mut best: Option<(f64, usize, usize, bool)> = None;
        for (j, cuts) in table.cuts.iter().enumerate() {
            let n = cuts.len();
            if n == 0 {
                continue;
            }
            let hist = &hist[j * SLOTS..j * SLOTS + n + 1];
            let mut above = 0.0;
            let mut bound = f64::NEG_INFINITY;
            for h in hist[1..].iter().rev() {
                above += h;
                let e = if above > total - above {
                    above
                } else {
                    total - above
                };
                bound = if e > bound { e } else { bound };
            }
            if best.is_some_and(|(e, ..)| bound <= e) {
                continue;
            }
            let mut above = 0.0;
            for c in (0..n).rev() {
                above += hist[c + 1];
                for (edge, up) in [(above, true), (total - above, false)] {
                    let taken = || {
                        let f = table.kinds[j % table.kinds.len()];
                        skip(
                            j / table.kinds.len(),
                            f == Feature::Mean,
                            Threshold {
                                at: cuts[c],
                                above: up,
                                position: f == Feature::Position,
                            },
                        )
                    };
                    if best.is_none_or(|(e, ..)| edge > e) && !taken() {
                        best = Some((edge, j, c, up));
                    }
                }
            }
        }
        let (edge, j, c, up) = best?;
        let f = table.kinds[j % table.kinds.len()];
        let threshold = Threshold {
            at: table.cuts[j][c],
            above: up,
            position: f == Feature::Position,
        };
        let outputs = (0..y.len())
            .map(|i| {
                if (table.bin(i, j) > c) == up {
                    1.0
                } else {
                    0.0
                }
            })
            .collect();
        Some((
            WeakHypothesis {
                alpha: vec![(j / table.kinds.len(), 1.0)],
                edge,
                outputs,
                dc_iterations: 0,
                lp_solves: 0,
                rows_generated: 0,
                failure: None,
            },
            f == Feature::Mean,
            threshold,
        ))
    }

    /// The same hypothesis, edge and threshold, bit for bit, as the implementation before,
    /// on random tables: features with 0 to 32 cuts (some with none), weights from a few
    /// values with zeros (so edges tie, between cuts and between features, and ties go to
    /// the first), both signs of total, and a skip rule that refuses some cuts.
    #[test]
    fn the_best_threshold_is_the_one_found_before_bit_for_bit() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(26);
        let mut found = 0;
        for case in 0..3000 {
            let m = rng.random_range(1..60usize);
            let kinds = match case % 3 {
                0 => vec![Feature::Max],
                1 => vec![Feature::Max, Feature::Mean],
                _ => vec![Feature::Max, Feature::Mean, Feature::Position],
            };
            let k = rng.random_range(1..12usize);
            let nf = k * kinds.len();
            let mut cuts = Vec::new();
            let mut bins = vec![0u8; m * nf];
            for j in 0..nf {
                let n = match rng.random_range(0..4) {
                    0 => 0,
                    1 => MAX_CUTS - 1,
                    _ => rng.random_range(1..MAX_CUTS),
                };
                let mut at = rng.random_range(-1.0..1.0);
                cuts.push(
                    (0..n)
                        .map(|_| {
                            at += rng.random_range(0.01..0.3);
                            at
                        })
                        .collect::<Vec<f64>>(),
                );
                for i in 0..m {
                    bins[i * nf + j] = rng.random_range(0..=n) as u8;
                }
            }
            let table = ThresholdTable::from_parts(kinds, cuts, bins);
            let y: Vec<f64> = (0..m)
                .map(|_| if rng.random_bool(0.4) { 1.0 } else { -1.0 })
                .collect();
            let levels = [0.0, 0.0, 1e-13, 0.05, 0.1, 0.25, 1.0 / 3.0];
            let d: Vec<f64> = (0..m)
                .map(|_| {
                    if case % 2 == 0 {
                        levels[rng.random_range(0..levels.len())]
                    } else {
                        rng.random_range(0.0..1.0)
                    }
                })
                .collect();
            let refused = rng.random_range(0..4u64);
            let skip = |z: usize, mean: bool, t: Threshold| {
                refused > 0
                    && (t.at.to_bits() ^ z as u64 ^ u64::from(mean) ^ u64::from(t.above)) % 4
                        < refused
            };
            let now = best_threshold(&table, &y, &d, &active_bags(m, &d), skip);
            let before = best_threshold_before(&table, &y, &d, skip);
            match (now, before) {
                (None, None) => {}
                (Some((h, mean, t)), Some((h0, mean0, t0))) => {
                    found += 1;
                    assert_eq!(h.edge.to_bits(), h0.edge.to_bits(), "case {case}");
                    assert_eq!(h.alpha, h0.alpha, "case {case}");
                    assert_eq!(
                        table.outputs(h.alpha[0].0, mean, t),
                        h0.outputs,
                        "case {case}"
                    );
                    assert_eq!(mean, mean0, "case {case}");
                    assert_eq!(
                        (t.at.to_bits(), t.above, t.position),
                        (t0.at.to_bits(), t0.above, t0.position),
                        "case {case}"
                    );
                }
                (now, before) => panic!(
                    "case {case}: now {:?}, before {:?}",
                    now.map(|x| x.2),
                    before.map(|x| x.2)
                ),
            }
        }
        assert!(found > 2000, "too few cases found a threshold: {found}");
    }
}
