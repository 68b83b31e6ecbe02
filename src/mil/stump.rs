//! Threshold hypotheses (beyond the paper): h(B) = +1 when a one-hot max or mean hypothesis
//! value of bag B lies on one side of a threshold, -1 on the other: decision stumps over
//! the shapelet features, as in classical LPBoost (Demiriz et al., 2002). The weak learner
//! is exact over a fixed grid of thresholds per feature (cut points between the training
//! bags' quantiles), so a round costs one pass over the bags per feature, like the one-hot
//! pricing of appendix A.3.

use serde::{Deserialize, Serialize};

use super::weak::{active_bags, KernelTable, WeakHypothesis};

/// Thresholds tried per feature at most (cut points between quantiles of the bags' values).
const MAX_CUTS: usize = 32;

/// Where a threshold hypothesis says +1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    pub at: f64,
    /// +1 for values at or above `at` (true), or below it (false).
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

/// The aggregate a feature takes over a bag, with alpha's one-hot sign.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Feature {
    /// max_x K(z, x): alpha = +1, the max hypothesis.
    Max,
    /// max_x -K(z, x) = -min_x K(z, x): alpha = -1, the max hypothesis.
    NegMin,
    /// mean_x K(z, x): alpha = +1, the mean hypothesis.
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
    k: usize,
    /// Index z * 3 + feature.
    features: Vec<Binned>,
}

impl ThresholdTable {
    pub fn new(table: &KernelTable) -> Self {
        let (max, min, mean) = table.bag_stats();
        let (k, m) = (table.k, table.n_bags());
        let mut features = Vec::with_capacity(k * FEATURES.len());
        for z in 0..k {
            for f in FEATURES {
                let values: Vec<f64> = (0..m)
                    .map(|i| match f {
                        Feature::Max => max[i * k + z],
                        Feature::NegMin => -min[i * k + z],
                        Feature::Mean => mean[i * k + z],
                    })
                    .collect();
                features.push(binned(&values));
            }
        }
        Self { k, features }
    }
}

/// Cut points halfway between consecutive distinct values at the quantiles 1/B, ..., so no
/// training value sits on a cut.
fn binned(values: &[f64]) -> Binned {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let m = sorted.len();
    let mut cuts: Vec<f64> = Vec::new();
    for q in 1..MAX_CUTS.min(m) {
        let i = q * m / MAX_CUTS.min(m);
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
/// with one-hot alpha, mean aggregate?, threshold), or None when the space has no cut.
pub fn best_threshold(
    table: &ThresholdTable,
    y: &[f64],
    d: &[f64],
) -> Option<(WeakHypothesis, bool, Threshold)> {
    let m = y.len();
    let active = active_bags(m, d);
    let total: f64 = active.iter().map(|&i| y[i] * d[i]).sum();
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
        // Bags at or above cut c are those in bins c+1..=n: their weighted sum, from the top.
        let mut above = 0.0;
        for c in (0..n).rev() {
            above += hist[c + 1];
            for (edge, up) in [(above, true), (total - above, false)] {
                if best.is_none_or(|(e, ..)| edge > e) {
                    best = Some((edge, j, c, up));
                }
            }
        }
    }
    let (edge, j, c, up) = best?;
    let (z, f) = (j / FEATURES.len(), FEATURES[j % FEATURES.len()]);
    let b = &table.features[j];
    let threshold = Threshold {
        at: b.cuts[c],
        above: up,
    };
    let sign = if f == Feature::NegMin { -1.0 } else { 1.0 };
    let outputs = b
        .bins
        .iter()
        .map(|&bin| if (bin as usize > c) == up { 1.0 } else { 0.0 })
        .collect();
    debug_assert!(z < table.k);
    Some((
        WeakHypothesis {
            alpha: vec![(z, sign)],
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

