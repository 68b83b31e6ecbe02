//! How much of the decision margin an explanation's top findings carry: measured on a
//! training set when a shapelet model is fitted, reported by the model card.

use crate::mil::prediction::{Explanation, ShownShares};
use crate::mil::shapelet::ShapeletModel;
use crate::mil::{Dataset, Model, Sample};

/// Findings an explanation shows by default (`explain --top`).
pub const TOP_FINDINGS: usize = 5;

/// The share of the decision margin the top `top` findings carry for each sample of `ds`
/// that `m` explains, as `explain --out` and the prediction rows report it.
pub fn shown_shares(m: &ShapeletModel, ds: &Dataset, top: usize) -> Vec<f64> {
    ds.samples
        .iter()
        .filter_map(|s| Some(shown_share(m, s, &m.hypothesis_outputs(s).ok()?, top)))
        .collect()
}

/// The share of the decision margin the top `top` findings carry for sample `s`, from its
/// hypotheses' outputs `outs` (`hypothesis_outputs`).
pub(crate) fn shown_share(
    m: &ShapeletModel,
    s: &Sample,
    outs: &[Vec<(f64, usize)>],
    top: usize,
) -> f64 {
    let (prediction, contributions) = m.explain_outputs(outs);
    let points = match s {
        Sample::Series(v) => v.len(),
        Sample::Multi(c) => c.first().map_or(0, Vec::len),
        Sample::Bag(_) => 0,
    };
    let e = Explanation {
        prediction,
        contributions,
    };
    super::explanation_findings(m, &e, points, top).2
}

/// The quartiles of `shares` (None when empty), by linear interpolation.
pub fn quartiles(shares: &[f64], top: usize) -> Option<ShownShares> {
    let mut v: Vec<f64> = shares.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let q = |p: f64| {
        let at = p * (v.len() - 1) as f64;
        let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
        v[lo] + (v[hi] - v[lo]) * (at - lo as f64)
    };
    Some(ShownShares {
        top,
        n: v.len(),
        q1: q(0.25),
        median: q(0.5),
        q3: q(0.75),
    })
}

/// Records in a freshly trained shapelet model how much of the decision margin its
/// explanations' top findings carry on its training set `ds` (the card reports it). A
/// model from `ShapeletModel::fit` has them already (`record_training_baseline`, one
/// scoring pass for them and the baseline): kept as they are.
pub fn record_shown_shares(model: &mut Model, ds: &Dataset) {
    if let Model::LpboostShapelet(m) = model {
        if m.summary.shown_shares.is_some() {
            return;
        }
        let shares = shown_shares(m, ds, TOP_FINDINGS);
        m.summary.shown_shares = quartiles(&shares, TOP_FINDINGS);
    }
}
