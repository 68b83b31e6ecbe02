//! Sub-fits (`FitParams::sub_fits`, an option, off by default): a small univariate series
//! set fitted twice, each fit on half the representatives of a k-means++ draw of its own,
//! and the two fits' class scores averaged.
//!
//! Why: on small sets which representatives a fit draws (the seed) moves accuracy more than
//! any default does (GunPoint at twelve series a class: 0.886 to 1.000 on one draw), and
//! LPBoost's sparse solution keeps that chance. Averaging two sparse solutions over
//! different representatives removes part of it; more representatives in one fit do not
//! (docs/VARIANTS.md, "Two sub-fits"). Two fits of k / 2 cost about 1.35 x one fit of k
//! (the tables are the same size in all; the rounds are twice as many, each half as dear).
//! Not the default: over the development sets and variants the gain was a few thousandths,
//! within what three seeds resolve, and the averaged model has about twice the hypotheses,
//! which the daemon scores at every point (its throughput 5-27 % lower on GunPoint).
//!
//! The average is one model, exactly: every score is linear in the hypotheses' outputs, so
//! the second fit's representatives joining the first's spaces, each ensemble's hypotheses
//! at half their weight and the biases, heads and decision offsets averaged score every
//! series as the mean of the two fits' scores.

use std::time::Instant;

use rayon::prelude::*;

use crate::mil::bag::{Dataset, InputKind};
use crate::mil::boost::ensemble::Ensemble;
use crate::mil::boost::head::PooledHead;
use crate::mil::error::Result;
use crate::mil::params::FitParams;
use crate::mil::shapelet::ShapeletModel;
use crate::mil::space::ShapeletSpace;

/// The fewest representatives a space of a sub-fit draws: at 33 (three sub-fits of 100)
/// and 12 (two of a 12-channel set's 25) the average lost to one fit (docs/VARIANTS.md).
const MIN_SUB_FIT_K: usize = 50;

/// Sets of this many examples and more are fitted once: their fits cost most and draw
/// their representatives from the most subsequences, where the seed moves least.
const SUB_FIT_MAX_SET: usize = 200;

impl ShapeletModel {
    /// Fits on `ds` with `params`: once, or as the average of sub-fits.
    pub fn fit(ds: &Dataset, params: &FitParams) -> Result<Self> {
        let start = Instant::now();
        let n = sub_fit_count(ds, params);
        let mut m = if n > 1 {
            let fits: Vec<Self> = (0..n)
                .into_par_iter()
                .map(|e| Self::fit_once(ds, &sub_fit_params(params, n, e)))
                .collect::<Result<_>>()?;
            average(fits, params)
        } else {
            Self::fit_once(ds, params)?
        };
        // The explanations' baseline and shown shares (findings/baseline.rs): one pass over
        // the training set.
        m.record_training_baseline(ds)?;
        m.summary.train_seconds = start.elapsed().as_secs_f64();
        Ok(m)
    }
}

/// How many sub-fits `params` ask of `ds`: `params.sub_fits` for a univariate series set of
/// fewer than [`SUB_FIT_MAX_SET`] examples, as many as keep [`MIN_SUB_FIT_K`]
/// representatives a space; else 1.
pub(crate) fn sub_fit_count(ds: &Dataset, params: &FitParams) -> usize {
    if params.sub_fits < 2 || ds.len() >= SUB_FIT_MAX_SET {
        return 1;
    }
    if !matches!(ds.input_kind(), Ok(InputKind::Series)) {
        return 1;
    }
    let Some(k) = params.k else {
        return 1; // every instance a representative: no draw to average over
    };
    params.sub_fits.min(k / MIN_SUB_FIT_K).max(1)
}

/// The parameters of sub-fit `e` of `n`: k / n representatives a space of a draw of its
/// own; the seed, so the widths and spaces, the fit's.
fn sub_fit_params(params: &FitParams, n: usize, e: usize) -> FitParams {
    FitParams {
        k: params.k.map(|k| (k / n).max(1)),
        draw: e as u64,
        sub_fits: 1,
        ..params.clone()
    }
}

/// One model whose every score is the mean of `fits`' scores (see the module's text).
/// `fits` were fitted on one training set (the same classes, in the same order).
fn average(fits: Vec<ShapeletModel>, params: &FitParams) -> ShapeletModel {
    let n = fits.len();
    assert!(n > 0, "at least one sub-fit");
    let share = 1.0 / n as f64;
    let mut fits = fits.into_iter();
    let mut out = fits.next().expect("at least one sub-fit");
    let rest: Vec<ShapeletModel> = fits.collect();
    if rest.is_empty() {
        return out;
    }
    let all: Vec<&ShapeletModel> = std::iter::once(&out).chain(&rest).collect();
    let head = average_heads(&all, share);
    let decision_offset = all.iter().map(|m| m.decision_offset).sum::<f64>() * share;
    let classes = out.classes.len();
    let class_offsets = if all.iter().all(|m| m.class_offsets.is_empty()) {
        Vec::new()
    } else {
        (0..classes)
            .map(|c| {
                all.iter()
                    .map(|m| m.class_offsets.get(c).copied().unwrap_or(0.0))
                    .sum::<f64>()
                    * share
            })
            .collect()
    };
    // The scores are the fits' mean: their calibrations' mean scale (an approximation).
    let calibration = all
        .iter()
        .map(|m| m.calibration)
        .collect::<Option<Vec<_>>>()
        .map(|c| crate::mil::calibration::Calibration {
            scale: c.iter().map(|c| c.scale).sum::<f64>() * share,
            held_out: c[0].held_out,
        });
    for ensemble in &mut out.ensembles {
        scale(ensemble, share);
    }
    for m in rest {
        // The sub-fits share their spaces (one seed, so the same widths): each of theirs
        // joins ours, its representatives after ours; else (never, by construction) its
        // spaces follow ours.
        let shared = out.spaces.len() == m.spaces.len()
            && out
                .spaces
                .iter()
                .zip(&m.spaces)
                .all(|(a, b)| same_space(a, b));
        let space_offset = if shared { 0 } else { out.spaces.len() };
        let rep_offset: Vec<u32> = if shared {
            out.spaces.iter().map(|s| s.count as u32).collect()
        } else {
            vec![0; m.spaces.len()]
        };
        for (mine, theirs) in out.ensembles.iter_mut().zip(m.ensembles) {
            debug_assert_eq!(mine.positive_class, theirs.positive_class);
            let mut theirs = theirs;
            scale(&mut theirs, share);
            mine.bias += theirs.bias;
            mine.rounds += theirs.rounds;
            mine.rho = mine.rho.min(theirs.rho);
            mine.gamma = mine.gamma.max(theirs.gamma);
            mine.master_interior_rounds += theirs.master_interior_rounds;
            mine.master_fallbacks += theirs.master_fallbacks;
            if mine.stop_reason != theirs.stop_reason {
                mine.stop_reason = format!("{}; {}", mine.stop_reason, theirs.stop_reason);
            }
            mine.hypotheses
                .extend(theirs.hypotheses.into_iter().map(|mut h| {
                    for (z, _) in &mut h.alpha {
                        *z += rep_offset[h.space];
                    }
                    h.space += space_offset;
                    h
                }));
        }
        if shared {
            for (mine, theirs) in out.spaces.iter_mut().zip(m.spaces) {
                mine.count += theirs.count;
                mine.representatives.extend(theirs.representatives);
                mine.blocked = Default::default(); // laid out again on first use
            }
        } else {
            out.spaces.extend(m.spaces);
            out.summary
                .instances_per_space
                .extend_from_slice(&m.summary.instances_per_space);
        }
        let s = &mut out.summary;
        s.rounds += m.summary.rounds;
        s.rho = s.rho.min(m.summary.rho);
        s.sparsity += m.summary.sparsity;
        s.lp_solves += m.summary.lp_solves;
        s.max_generated_rows = s.max_generated_rows.max(m.summary.max_generated_rows);
        s.weak_failures += m.summary.weak_failures;
        if m.summary.last_weak_failure.is_some() {
            s.last_weak_failure = m.summary.last_weak_failure;
        }
    }
    debug_assert_eq!(out.summary.instances_per_space.len(), out.spaces.len());
    out.summary.sparsity *= share;
    out.head = head;
    out.decision_offset = decision_offset;
    out.class_offsets = class_offsets;
    out.calibration = calibration;
    out.params = params.clone();
    out.incremental = Default::default(); // the scorer's plan, for the merged spaces
    out
}

/// Two spaces that read the same subsequences under the same kernel.
fn same_space(a: &ShapeletSpace, b: &ShapeletSpace) -> bool {
    (
        a.length, a.view, a.dilation, a.znorm, a.channel, a.block, a.unit_exp,
    ) == (
        b.length, b.view, b.dilation, b.znorm, b.channel, b.block, b.unit_exp,
    ) && a.kernel == b.kernel
}

/// Halves (for two fits) an ensemble's vote: its weights and bias times `share`.
fn scale(e: &mut Ensemble, share: f64) {
    e.bias *= share;
    for h in &mut e.hypotheses {
        h.weight *= share;
    }
}

/// The head of the averaged model when some fit has one: per class, each fit's weights on
/// its own hypotheses (a fit without a head scores class c by ensemble c alone: weights
/// its ensemble's on its hypotheses, 0 elsewhere), in the merged model's order (ensemble
/// by ensemble, each fit's hypotheses of that ensemble in fit order), times `share`.
fn average_heads(fits: &[&ShapeletModel], share: f64) -> Option<PooledHead> {
    if fits.iter().all(|m| m.head.is_none()) {
        return None;
    }
    let classes = fits[0].classes.len();
    let ensembles = fits[0].ensembles.len();
    // Per fit, per class: the weights over that fit's hypotheses in its model order.
    let per_fit: Vec<Vec<Vec<f64>>> = fits
        .iter()
        .map(|m| match &m.head {
            Some(h) => h.weights.clone(),
            None => (0..classes)
                .map(|c| {
                    m.ensembles
                        .iter()
                        .flat_map(|e| {
                            let own = e.positive_class == c;
                            e.hypotheses
                                .iter()
                                .map(move |h| if own { h.weight } else { 0.0 })
                        })
                        .collect()
                })
                .collect(),
        })
        .collect();
    let bias: Vec<f64> = (0..classes)
        .map(|c| {
            fits.iter()
                .map(|m| match &m.head {
                    Some(h) => h.bias[c],
                    None => m
                        .ensembles
                        .iter()
                        .find(|e| e.positive_class == c)
                        .map_or(0.0, |e| e.bias),
                })
                .sum::<f64>()
                * share
        })
        .collect();
    let weights: Vec<Vec<f64>> = (0..classes)
        .map(|c| {
            let mut row = Vec::new();
            for e in 0..ensembles {
                for (m, w) in fits.iter().zip(&per_fit) {
                    let start: usize = m.ensembles[..e].iter().map(|x| x.hypotheses.len()).sum();
                    let len = m.ensembles[e].hypotheses.len();
                    row.extend(w[c][start..start + len].iter().map(|v| v * share));
                }
            }
            row
        })
        .collect();
    let alpha = fits
        .iter()
        .filter_map(|m| m.head.as_ref().map(|h| h.alpha))
        .sum::<f64>()
        / fits.iter().filter(|m| m.head.is_some()).count() as f64;
    Some(PooledHead {
        weights,
        bias,
        alpha,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mil::bag::Sample;

    /// `classes` classes of `per_class` series of 60 points: sines of a frequency a class,
    /// each series at a phase and with a ripple of its own.
    fn series_set(classes: usize, per_class: usize) -> Dataset {
        let mut ds = Dataset::default();
        for c in 0..classes {
            for i in 0..per_class {
                let v: Vec<f64> = (0..60)
                    .map(|t| {
                        let t = t as f64;
                        (t * 0.15 * (c + 1) as f64 + i as f64).sin()
                            + ((t as usize * 7 + i * 3) % 5) as f64 * 0.1
                    })
                    .collect();
                ds.ids.push(format!("s{c}-{i}"));
                ds.labels.push(format!("class-{c}"));
                ds.samples.push(Sample::Series(v));
            }
        }
        ds
    }

    /// The averaged model scores every series as the mean of its two fits' scores, with a
    /// pooled head (three classes) and without (two), and is a valid model.
    #[test]
    fn two_sub_fits_score_as_the_mean_of_their_fits() {
        for classes in [2, 3] {
            let ds = series_set(classes, 8);
            let params = FitParams {
                sub_fits: 2,
                ..FitParams::default()
            };
            assert_eq!(sub_fit_count(&ds, &params), 2);
            let merged = ShapeletModel::fit(&ds, &params).unwrap();
            merged.validate().unwrap();
            assert_eq!(merged.params.sub_fits, 2);
            let one = ShapeletModel::fit(&ds, &sub_fit_params(&params, 2, 0)).unwrap();
            let two = ShapeletModel::fit(&ds, &sub_fit_params(&params, 2, 1)).unwrap();
            // One space set: the second fit's representatives join the first's spaces.
            assert_eq!(merged.spaces.len(), one.spaces.len());
            assert!(merged
                .spaces
                .iter()
                .zip(&one.spaces)
                .zip(&two.spaces)
                .all(|((m, a), b)| m.count == a.count + b.count && m.kernel == a.kernel));
            assert_eq!(merged.head.is_some(), classes > 2);
            let probe = series_set(classes, 10);
            for s in &probe.samples {
                let (m, a, b) = (
                    merged.predict(s).unwrap(),
                    one.predict(s).unwrap(),
                    two.predict(s).unwrap(),
                );
                for ((m, a), b) in m.scores.iter().zip(&a.scores).zip(&b.scores) {
                    assert!((m - (a + b) / 2.0).abs() < 1e-9, "{m} against {a} and {b}");
                }
            }
        }
    }

    /// Sub-fits only where they apply: univariate series, fewer than 200 examples, at
    /// least 50 representatives a sub-fit.
    #[test]
    fn sub_fits_apply_to_small_univariate_sets_only() {
        assert_eq!(sub_fit_count(&series_set(2, 8), &FitParams::default()), 1);
        let params = FitParams {
            sub_fits: 2,
            ..FitParams::default()
        };
        assert_eq!(sub_fit_count(&series_set(2, 8), &params), 2);
        assert_eq!(sub_fit_count(&series_set(2, 100), &params), 1);
        let few_reps = FitParams {
            k: Some(60),
            ..params.clone()
        };
        assert_eq!(sub_fit_count(&series_set(2, 8), &few_reps), 1);
        let one = FitParams {
            sub_fits: 1,
            ..params
        };
        assert_eq!(sub_fit_count(&series_set(2, 8), &one), 1);
        let bags = FitParams {
            sub_fits: 2,
            ..FitParams::for_bags()
        };
        assert_eq!(sub_fit_count(&series_set(2, 8), &bags), 1); // every instance: no draw
    }
}
