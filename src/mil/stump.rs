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

use super::weak::{active_bags, KernelTable, WeakHypothesis};

/// Thresholds tried per feature at most (cut points between quantiles of the bags' values).
const MAX_CUTS: usize = 32;

/// Where a threshold hypothesis says 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    pub at: f64,
    /// 1 for values at or above `at` (true), or below it (false).
    pub above: bool,
}

impl Threshold {
    pub fn output(&self, value: f64) -> f64 {
        if (value >= self.at) == self.above {
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
}

const FEATURES: [Feature; 2] = [Feature::Max, Feature::Mean];

/// One feature's cut points and each bag's bin (the number of cuts at or below its value).
struct Binned {
    cuts: Vec<f64>,
    bins: Vec<u8>,
}

/// Every (representative, feature) of one space, binned once per fit.
pub struct ThresholdTable {
    /// Index z * FEATURES.len() + feature.
    features: Vec<Binned>,
}

impl ThresholdTable {
    pub fn new(table: &KernelTable) -> Self {
        let (max, _, mean) = table.bag_stats();
        let (k, m) = (table.k, table.n_bags());
        let mut features = Vec::with_capacity(k * FEATURES.len());
        for z in 0..k {
            for f in FEATURES {
                let source = match f {
                    Feature::Max => max,
                    Feature::Mean => mean,
                };
                let values: Vec<f64> = (0..m).map(|i| source[i * k + z]).collect();
                features.push(binned(&values));
            }
        }
        Self { features }
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

/// The threshold hypothesis of largest edge sum_i d_i y_i h(B_i) in a space, as (hypothesis
/// with one-hot alpha, mean aggregate?, threshold), or None when no feature has a cut.
pub fn best_threshold(
    table: &ThresholdTable,
    y: &[f64],
    d: &[f64],
    skip: impl Fn(usize, bool, Threshold) -> bool,
) -> Option<(WeakHypothesis, bool, Threshold)> {
    let active = active_bags(y.len(), d);
    let total: f64 = active.iter().map(|&i| y[i] * d[i]).sum();
    // (edge, feature index, cut, above)
    let mut best: Option<(f64, usize, usize, bool)> = None;
    let mut hist = [0.0f64; MAX_CUTS + 1];
    for (j, b) in table.features.iter().enumerate() {
        let n = b.cuts.len();
        if n == 0 {
            continue;
        }
        hist[..=n].iter_mut().for_each(|h| *h = 0.0);
        for &i in &active {
            hist[b.bins[i] as usize] += y[i] * d[i];
        }
        // Bags at or above cut c are those in bins c+1..=n; summed from the top.
        let mut above = 0.0;
        for c in (0..n).rev() {
            above += hist[c + 1];
            for (edge, up) in [(above, true), (total - above, false)] {
                let taken = || {
                    let mean = FEATURES[j % FEATURES.len()] == Feature::Mean;
                    skip(
                        j / FEATURES.len(),
                        mean,
                        Threshold {
                            at: b.cuts[c],
                            above: up,
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
    let b = &table.features[j];
    let threshold = Threshold {
        at: b.cuts[c],
        above: up,
    };
    let outputs = b
        .bins
        .iter()
        .map(|&bin| if (bin as usize > c) == up { 1.0 } else { 0.0 })
        .collect();
    Some((
        WeakHypothesis {
            alpha: vec![(j / FEATURES.len(), 1.0)],
            edge,
            outputs,
            dc_iterations: 0,
            lp_solves: 0,
            rows_generated: 0,
            failure: None,
        },
        FEATURES[j % FEATURES.len()] == Feature::Mean,
        threshold,
    ))
}

/// A master LP column's identity: space, mean aggregate, threshold and alpha, bit for bit.
pub(crate) type ColumnKey = (usize, bool, Option<(u64, bool)>, Vec<(usize, u64)>);

pub(crate) fn column_key(
    s: usize,
    mean: bool,
    t: Option<Threshold>,
    alpha: &[(usize, f64)],
) -> ColumnKey {
    (
        s,
        mean,
        t.map(|t| (t.at.to_bits(), t.above)),
        alpha.iter().map(|&(z, a)| (z, a.to_bits())).collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
        };
        let down = Threshold {
            at: 0.5,
            above: false,
        };
        assert_eq!((up.output(0.5), up.output(0.49)), (1.0, 0.0));
        assert_eq!((down.output(0.5), down.output(0.49)), (0.0, 1.0));
    }

    /// A feature that separates the classes at a gap gives the largest edge there, with
    /// outputs equal to the threshold applied to the values (as prediction applies it).
    #[test]
    fn the_best_cut_separates_and_its_outputs_are_the_threshold_applied() {
        let m = 8;
        let values: Vec<f64> = (0..m).map(|i| i as f64 / 10.0).collect();
        let y: Vec<f64> = (0..m).map(|i| if i < 3 { 1.0 } else { -1.0 }).collect();
        let table = ThresholdTable {
            features: vec![binned(&values)],
        };
        let d = vec![1.0 / m as f64; m];
        let (h, mean, t) = best_threshold(&table, &y, &d, |_, _, _| false).unwrap();
        assert!(!mean);
        assert!(!t.above, "positives are the small values");
        assert!(t.at > 0.2 && t.at < 0.3, "{t:?}");
        assert!((h.edge - 3.0 / 8.0).abs() < 1e-12, "{}", h.edge);
        let applied: Vec<f64> = values.iter().map(|&v| t.output(v)).collect();
        assert_eq!(h.outputs, applied);
        let edge: f64 = (0..m).map(|i| y[i] * d[i] * h.outputs[i]).sum();
        assert!((edge - h.edge).abs() < 1e-12);
    }
}
