//! The shapelet model: hypotheses h(B) = max_{x in B} sum_z alpha_z K(z, x) (Theorem 1)
//! combined as g(B) = sum_j w_j h_j(B) (eq. 2), trained by LPBoost (Algorithm 1) with the DC
//! weak learner (Algorithm 2), one-vs-rest for more than two classes (footnote 3).

use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::bag::{Dataset, InputKind, Standardizer};
use super::boost::ensemble::majority_fallback;
pub use super::boost::ensemble::{Ensemble, WeightedHypothesis};
use super::boost::head::PooledHead;
use super::boost::lpboost::BoostParams;
pub use super::boost::stump::Threshold;
use super::boost::stump::ThresholdTable;
pub use super::boost::union::LEAN_WEIGHT;
use super::boost::union::{fit_class, ClassFit, SolverStats, UnionOfSpaces};
use super::boost::weak::WeakParams;
use super::cancel::Cancel;
use super::error::{MilError, Result};
use super::params::{BinaryMode, FitParams, KernelSpec, WidthChoice};
use super::space::kernel::Kernel;
use super::space::kernel_table::KernelTable;
use super::space::prepare::prepare_lean;
pub use super::space::prepare::{
    median_heuristic_sigma, prepare, resolve_kernel, resolve_lengths, Prepared, PreparedSpace,
};

pub use super::space::{BlockedReps, ShapeletSpace};

/// What a fit did, kept in the artifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainingSummary {
    pub n_train: usize,
    pub train_seconds: f64,
    /// Boosting rounds, summed over the binary problems.
    pub rounds: usize,
    /// Smallest final margin rho over the binary problems.
    pub rho: f64,
    /// Share of non-zero alpha coefficients over the kept hypotheses.
    pub sparsity: f64,
    pub lp_solves: usize,
    /// Most constraint rows one weak-learner subproblem generated.
    pub max_generated_rows: usize,
    /// Training instances per space (before k-means).
    pub instances_per_space: Vec<usize>,
    /// Weak-learner calls whose DC loop stopped on a solver failure (the hypothesis from
    /// before the failure was used); the last failure's message.
    #[serde(default)]
    pub weak_failures: usize,
    #[serde(default)]
    pub last_weak_failure: Option<String>,
    /// The share of the decision margin the top findings carry on the training set
    /// (`findings::record_shown_shares`); absent when not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shown_shares: Option<super::prediction::ShownShares>,
    /// With the width chosen by inner cross-validation: each scale and its accuracy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub width_accuracies: Vec<(f64, f64)>,
}

/// A trained LPBoost shapelet model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShapeletModel {
    pub input: InputKind,
    pub classes: Vec<String>,
    pub standardizer: Option<Standardizer>,
    pub spaces: Vec<ShapeletSpace>,
    pub ensembles: Vec<Ensemble>,
    pub params: FitParams,
    pub summary: TrainingSummary,
    /// Channel names of a multichannel model, from the training data's header (empty:
    /// unnamed or univariate; not written then).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub channel_names: Vec<String>,
    /// Class scores refit over every class's hypotheses (more than two classes, with
    /// `FitParams::pooled_head`); None: each ensemble's own g. Absent in older artifacts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<PooledHead>,
    /// Two classes: the first is decided when s_0 - s_1 exceeds this (see `decision.rs`;
    /// 0 in older artifacts and on classes of about equal size).
    #[serde(default, skip_serializing_if = "super::space::is_default")]
    pub decision_offset: f64,
    /// More than two classes: added to the class scores before the largest is taken (see
    /// `decision.rs`; empty in older artifacts and on classes of about equal size).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub class_offsets: Vec<f64>,
    /// The scale of the decided class scores into probabilities, fitted on held-out folds
    /// (`calibration.rs`); None in older artifacts: the softmax of the scores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<super::calibration::Calibration>,
    /// Each hypothesis's mean output over the training set, in model order: the baseline
    /// explanations are read against (`findings/baseline.rs`); empty in older artifacts (a
    /// zero baseline).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hypothesis_means: Vec<f64>,
    /// What the incremental scorer derives from the model (each used space's kept
    /// representatives, its hypotheses), made on first use and shared by every series.
    #[serde(skip)]
    pub incremental: super::online::derived::Derived,
}

/// Mean hypotheses sum their per-subsequence values in fixed point (units of 2^-40), which
/// is exact: the incremental scorer adds and removes values as the window slides and gets
/// the same bits as this from-scratch sum.
const MEAN_SCALE: f64 = (1u64 << 40) as f64;

/// `(v * 2^40).round() as i64` (half away from zero, saturating; NaN to 0), without the
/// libm call `round` is on baseline x86-64: the scorer takes it once per mean group a point.
#[inline]
pub(crate) fn to_fixed(v: f64) -> i64 {
    let y = v * MEAN_SCALE;
    let t = y as i64;
    // Exact: below 2^52 `t` is representable and `y - t` is y's fraction; above, y is
    // an integer (or saturates `t`, and the saturating steps keep the bound).
    let frac = y - t as f64;
    t.saturating_add(i64::from(frac >= 0.5))
        .saturating_sub(i64::from(frac <= -0.5))
}

#[inline]
pub(crate) fn fixed_mean(sum: i128, n: usize) -> f64 {
    sum as f64 / MEAN_SCALE / n.max(1) as f64
}

impl ShapeletModel {
    /// One fit on `ds` (`ShapeletModel::fit`, in `subfits`, may average several).
    pub(super) fn fit_once(ds: &Dataset, params: &FitParams) -> Result<Self> {
        let start = Instant::now();
        let cancel = Cancel::now();
        // With no DC step and no inner cross-validation of the width, the instances serve
        // only to build the tables: each space drops its own once they stand.
        let inner_cv = matches!(&params.widths, Some(w) if w.choice != WidthChoice::Spaces);
        let prepared = if params.dc_max_iters == 0 && !inner_cv {
            prepare_lean(ds, params)?
        } else {
            prepare(ds, params)?
        };
        let mut m = Self::fit_prepared(&prepared, ds, params, cancel)?;
        m.place_and_calibrate(&prepared, ds, params, cancel)?;
        m.summary.train_seconds = start.elapsed().as_secs_f64();
        Ok(m)
    }

    /// Fits on the prepared spaces (see [`prepare`]) of the training set `train`; the
    /// kernel, nu and the weak learner come from `params` (its lengths, k and seed were used
    /// by `prepare`). With [`WidthChoice::InnerCv`] the Gaussian width is chosen first by
    /// `width.rs`. Stops with `MilError::Cancelled` once `cancel` is.
    pub fn fit_prepared(
        prepared: &Prepared,
        train: &Dataset,
        params: &FitParams,
        cancel: Cancel,
    ) -> Result<Self> {
        let inner_cv = params.widths.as_ref().and_then(|w| match w.choice {
            WidthChoice::InnerCv { folds } => w.kernels(&params.kernel).map(|_| (w, folds)),
            WidthChoice::Spaces => None,
        });
        let Some((widths, folds)) = inner_cv else {
            return Self::fit_labelled(prepared, &train.labels, params, cancel);
        };
        let (scale, accuracies) =
            Self::width_by_inner_cv(prepared, train, &widths.scales, folds, params, cancel)?;
        let chosen = FitParams {
            kernel: KernelSpec::Gaussian { sigma: None, scale },
            ..params.clone()
        };
        let mut m = Self::fit_labelled(prepared, &train.labels, &chosen, cancel)?;
        m.summary.width_accuracies = accuracies;
        Ok(m)
    }

    /// Fits on prepared spaces with labels `labels`, at `params.kernel` (or at every width
    /// of [`WidthChoice::Spaces`], each a space of its own).
    pub(super) fn fit_labelled(
        prepared: &Prepared,
        labels: &[String],
        params: &FitParams,
        cancel: Cancel,
    ) -> Result<Self> {
        let start = Instant::now();
        cancel.check()?;
        params.validate()?;
        let classes = classes_of(labels)?;
        // A lean preparation built its tables already; the others are built here.
        let built: Vec<Vec<(Kernel, KernelTable)>> = prepared
            .spaces
            .iter()
            .map(|space| space.tables_at(params, prepared.input))
            .collect::<Result<_>>()?;
        let (union, layout, kernels) = union_of_spaces(prepared, &built, params, labels, &classes);
        // One-vs-rest (footnote 3); two classes in the paper's single form pose one problem
        // with classes[1] positive.
        let positives: Vec<usize> = if classes.len() == 2 && params.binary == BinaryMode::Single {
            vec![1]
        } else {
            (0..classes.len()).collect()
        };
        let (boost, weak) = (boost_params(params, cancel), weak_params(params));
        let fits: Vec<ClassFit> = positives
            .par_iter()
            .map(|&pos| fit_class(&union, labels, &classes, pos, params, boost, weak))
            .collect::<Result<_>>()?;
        let mut ensembles = Vec::with_capacity(fits.len());
        let mut stats = Vec::with_capacity(fits.len());
        let mut outputs = Vec::with_capacity(fits.len());
        for fit in fits {
            ensembles.push(fit.ensemble);
            stats.push(fit.stats);
            outputs.push(fit.outputs);
        }
        majority_fallback(&mut ensembles, &mut outputs, labels, &classes);
        let mut summary = training_summary(&ensembles, &stats, &union.tables, labels.len());
        summary.instances_per_space = layout
            .iter()
            .map(|&p| prepared.spaces[p].n_instances)
            .collect();
        let spaces = kept_representatives(prepared, &layout, &kernels, &mut ensembles);
        let head = (params.pooled_head && ensembles.len() > 2)
            .then(|| pooled_head(&outputs, labels, &classes))
            .flatten();
        summary.train_seconds = start.elapsed().as_secs_f64();
        Ok(Self {
            input: prepared.input,
            classes,
            standardizer: prepared.standardizer.clone(),
            spaces,
            ensembles,
            params: params.clone(),
            summary,
            channel_names: prepared.channel_names.clone(),
            head,
            decision_offset: 0.0,
            class_offsets: Vec::new(),
            calibration: None,
            hypothesis_means: Vec::new(),
            incremental: Default::default(),
        })
    }

    /// Checks the shapes of a loaded model; the message says what is wrong.
    // Long on purpose: a flat list of independent checks, one per field.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(MilError::Artifact(m));
        if self.classes.len() < 2 {
            return bad(format!(
                "needs at least two classes, has {:?}",
                self.classes
            ));
        }
        let n = self.ensembles.len();
        if !(n == self.classes.len() || (n == 1 && self.classes.len() == 2)) {
            return bad(format!(
                "{} classes need {} ensembles, found {n}",
                self.classes.len(),
                self.classes.len()
            ));
        }
        if n == 1 && self.ensembles[0].positive_class != 1 {
            return bad("a single binary ensemble must have class 1 as its positive class".into());
        }
        // Channels a space may read: a multichannel model's, one for a univariate series,
        // none (channel 0, no block) for bags.
        let channels = match self.input {
            InputKind::Multi { channels } => channels,
            _ => 1,
        };
        for (s, sp) in self.spaces.iter().enumerate() {
            if sp.dilation == 0 {
                return bad(format!("space {s} has dilation 0"));
            }
            if sp.channel >= channels || (sp.block != 0 && sp.block != channels) {
                return bad(format!(
                    "space {s} reads channel {} (block {}) of a {channels}-channel input",
                    sp.channel, sp.block
                ));
            }
            // Sizes an artifact may claim: the footprint and the representatives' values
            // must be countable (a forged artifact must not overflow them).
            let values = sp
                .length
                .checked_mul(sp.block.max(1))
                .and_then(|d| d.checked_mul(sp.count));
            let footprint = (sp.length.max(1) - 1).checked_mul(sp.dilation);
            if values.is_none() || footprint.is_none_or(|f| f > 1 << 40) {
                return bad(format!(
                    "space {s}: length {}, dilation {} and {} representatives are out of range",
                    sp.length, sp.dilation, sp.count
                ));
            }
            if sp.length == 0 || sp.representatives.len() != sp.count * sp.extraction().dim() {
                return bad(format!(
                    "space {s}: {} representative values for {} representatives of length {}",
                    sp.representatives.len(),
                    sp.count,
                    sp.length
                ));
            }
            if let InputKind::Bag { dim } = self.input {
                if sp.length != dim {
                    return bad(format!(
                        "space {s} has length {} but bags have dimension {dim}",
                        sp.length
                    ));
                }
            }
            sp.kernel
                .validate()
                .map_err(|e| MilError::Artifact(format!("space {s}: {e}")))?;
        }
        if let (InputKind::Bag { dim }, Some(st)) = (self.input, &self.standardizer) {
            if st.mean.len() != dim || st.scale.len() != dim {
                return bad(format!(
                    "standardizer has {} features, bags have {dim}",
                    st.mean.len()
                ));
            }
        }
        for (e, ens) in self.ensembles.iter().enumerate() {
            if ens.positive_class >= self.classes.len() {
                return bad(format!(
                    "ensemble {e} names class {} of {}",
                    ens.positive_class,
                    self.classes.len()
                ));
            }
            for (j, h) in ens.hypotheses.iter().enumerate() {
                let Some(sp) = self.spaces.get(h.space) else {
                    return bad(format!(
                        "ensemble {e} hypothesis {j} names space {} of {}",
                        h.space,
                        self.spaces.len()
                    ));
                };
                if let Some(&(z, _)) = h.alpha.iter().find(|(z, _)| *z as usize >= sp.count) {
                    return bad(format!(
                        "ensemble {e} hypothesis {j} uses representative {z} of {} in space {}",
                        sp.count, h.space
                    ));
                }
                if !h.weight.is_finite() || h.alpha.iter().any(|(_, a)| !a.is_finite()) {
                    return bad(format!(
                        "ensemble {e} hypothesis {j} has a non-finite weight or alpha"
                    ));
                }
            }
        }
        if let Some(head) = &self.head {
            let hyps: usize = self.ensembles.iter().map(|e| e.hypotheses.len()).sum();
            if n < 3 || head.weights.len() != n || head.bias.len() != n {
                return bad(format!(
                    "the pooled head scores {} classes with {} biases; the model has {n} ensembles",
                    head.weights.len(),
                    head.bias.len()
                ));
            }
            if let Some((c, w)) = head
                .weights
                .iter()
                .enumerate()
                .find(|(_, w)| w.len() != hyps)
            {
                return bad(format!(
                    "the pooled head has {} weights for class {c}; the model has {hyps} hypotheses",
                    w.len()
                ));
            }
            if head
                .weights
                .iter()
                .flatten()
                .chain(&head.bias)
                .any(|v| !v.is_finite())
            {
                return bad("the pooled head has a non-finite weight or bias".to_string());
            }
        }
        Ok(())
    }
}

/// The sorted classes of `labels`: at least two.
fn classes_of(labels: &[String]) -> Result<Vec<String>> {
    let mut classes: Vec<String> = labels.to_vec();
    classes.sort();
    classes.dedup();
    if classes.len() < 2 {
        return Err(MilError::InvalidData(format!(
            "a training set needs at least two classes, found {classes:?}"
        )));
    }
    Ok(classes)
}

/// The hypothesis spaces: each prepared space at each width of `WidthChoice::Spaces` (their
/// union is the class, as over lengths: Algorithm 1 takes the largest edge), else at the
/// kernel's own. Returns them with, per table, its prepared space (`layout`) and kernel.
fn union_of_spaces<'a>(
    prepared: &'a Prepared,
    built: &'a [Vec<(Kernel, KernelTable<'a>)>],
    params: &FitParams,
    labels: &[String],
    classes: &[String],
) -> (UnionOfSpaces<'a>, Vec<usize>, Vec<Kernel>) {
    let mut layout: Vec<usize> = Vec::new();
    let mut kernels: Vec<Kernel> = Vec::new();
    let mut tables: Vec<&KernelTable> = Vec::new();
    for (p, (space, own)) in prepared.spaces.iter().zip(built).enumerate() {
        let pairs: &[(Kernel, KernelTable)] = if space.tables.is_empty() {
            own
        } else {
            &space.tables
        };
        for (kernel, table) in pairs {
            layout.push(p);
            kernels.push(*kernel);
            tables.push(table);
        }
    }
    // Position thresholds need enough examples of every class to place a cut.
    let fewest = classes
        .iter()
        .map(|c| labels.iter().filter(|l| *l == c).count())
        .min()
        .unwrap_or(0);
    let positions = params.position_thresholds && fewest >= params.position_min_examples;
    let stumps: Option<Vec<ThresholdTable>> = params.threshold_hypotheses.then(|| {
        tables
            .iter()
            .map(|t| ThresholdTable::new(t, positions))
            .collect()
    });
    (UnionOfSpaces { tables, stumps }, layout, kernels)
}

/// Algorithm 1's options from the fit's.
fn boost_params(params: &FitParams, cancel: Cancel) -> BoostParams {
    BoostParams {
        nu: params.nu,
        epsilon: params.epsilon,
        max_rounds: params.max_rounds,
        balanced: params.balanced,
        max_weight: params.max_weight,
        group_share: params
            .threshold_hypotheses
            .then_some(params.threshold_share),
        warm_master: params.warm_master,
        cancel,
    }
}

/// Algorithm 2's options from the fit's.
fn weak_params(params: &FitParams) -> WeakParams {
    WeakParams {
        kind: params.weak,
        epsilon: params.epsilon,
        max_dc_iters: params.dc_max_iters,
        starts: params.starts,
        generation_rounds: params.dc_generation_rounds,
    }
}

/// The fit's figures over its classes' ensembles (the caller fills in the spaces' sizes and
/// the time).
fn training_summary(
    ensembles: &[Ensemble],
    stats: &[SolverStats],
    tables: &[&KernelTable],
    n_train: usize,
) -> TrainingSummary {
    let hypotheses = || ensembles.iter().flat_map(|e| &e.hypotheses);
    let n_alpha: usize = hypotheses().map(|h| tables[h.space].k).sum();
    let nnz: usize = hypotheses().map(|h| h.alpha.len()).sum();
    TrainingSummary {
        n_train,
        train_seconds: 0.0,
        rounds: ensembles.iter().map(|e| e.rounds).sum(),
        rho: ensembles
            .iter()
            .filter(|e| !e.hypotheses.is_empty())
            .map(|e| e.rho)
            .reduce(f64::min)
            .unwrap_or(0.0),
        sparsity: if n_alpha == 0 {
            0.0
        } else {
            nnz as f64 / n_alpha as f64
        },
        lp_solves: stats.iter().map(|s| s.lp_solves).sum(),
        max_generated_rows: stats.iter().map(|s| s.max_rows).max().unwrap_or(0),
        instances_per_space: Vec::new(),
        weak_failures: stats.iter().map(|s| s.weak_failures).sum(),
        last_weak_failure: stats.iter().rev().find_map(|s| s.last_failure.clone()),
        shown_shares: None,
        width_accuracies: Vec::new(),
    }
}

/// The model's spaces, each keeping only the representatives some kept hypothesis uses
/// (prediction cost and artifact size then scale with the support, not with k); the
/// hypotheses' indices are renumbered to match.
fn kept_representatives(
    prepared: &Prepared,
    layout: &[usize],
    kernels: &[Kernel],
    ensembles: &mut [Ensemble],
) -> Vec<ShapeletSpace> {
    let mut spaces = Vec::with_capacity(layout.len());
    for (s, &p) in layout.iter().enumerate() {
        let space = &prepared.spaces[p];
        let mut used: Vec<u32> = ensembles
            .iter()
            .flat_map(|e| &e.hypotheses)
            .filter(|h| h.space == s)
            .flat_map(|h| h.alpha.iter().map(|&(z, _)| z))
            .collect();
        used.sort_unstable();
        used.dedup();
        let dim = space.dim;
        let reps: Vec<f64> = used
            .iter()
            .flat_map(|&z| {
                space.reps[z as usize * dim..(z as usize + 1) * dim]
                    .iter()
                    .copied()
            })
            .collect();
        for h in ensembles
            .iter_mut()
            .flat_map(|e| &mut e.hypotheses)
            .filter(|h| h.space == s)
        {
            for (z, _) in &mut h.alpha {
                *z = used
                    .binary_search(z)
                    .expect("every used index was collected") as u32;
            }
        }
        let e = space.extraction;
        spaces.push(ShapeletSpace {
            length: e.length,
            kernel: kernels[s],
            count: used.len(),
            representatives: reps,
            view: e.view,
            dilation: e.dilation,
            znorm: e.znorm,
            channel: e.channel,
            block: e.block,
            unit_exp: e.unit_exp,
            blocked: BlockedReps::default(),
        });
    }
    spaces
}

/// The pooled head over more than two classes: one row per training bag, every kept
/// hypothesis's output in model order.
fn pooled_head(
    outputs: &[Vec<Vec<f64>>],
    labels: &[String],
    classes: &[String],
) -> Option<PooledHead> {
    let rows: Vec<Vec<f64>> = (0..labels.len())
        .map(|i| {
            outputs
                .iter()
                .flat_map(|outs| outs.iter().map(move |o| o[i]))
                .collect()
        })
        .collect();
    let y: Vec<usize> = labels
        .iter()
        .map(|l| {
            classes
                .binary_search(l)
                .expect("classes come from the labels")
        })
        .collect();
    PooledHead::fit(&rows, &y, classes.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mil::bag::{Bag, Sample};
    use crate::mil::params::LEVEL_SCALE;
    use crate::mil::space::View;

    /// The inline rounding is `round() as i64` bit for bit: halves, just below halves,
    /// negatives, huge, infinite and NaN values, and a million random ones.
    #[test]
    fn to_fixed_is_round_as_i64() {
        let reference = |v: f64| (v * MEAN_SCALE).round() as i64;
        let half = 0.5 / MEAN_SCALE;
        let mut cases = vec![
            0.0,
            -0.0,
            half,
            -half,
            3.0 * half,
            -3.0 * half,
            1.0,
            -1.0,
            1e-300,
            2e6,
            8.4e6,
            9e6,
            1e12,
            -1e12,
            1e300,
            -1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
        ];
        for c in cases.clone() {
            cases.push(f64::from_bits(c.to_bits().wrapping_add(1)));
            cases.push(f64::from_bits(c.to_bits().wrapping_sub(1)));
        }
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..1_000_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let scale = 2f64.powi((state >> 58) as i32 - 40);
            cases.push((state as f64 / u64::MAX as f64 - 0.5) * scale);
        }
        for v in cases {
            assert_eq!(to_fixed(v), reference(v), "{v:e}");
        }
    }

    /// Three classes over 1-d bags, linear kernel, one representative z = 1 and one
    /// hypothesis per class with alpha = 1, -1, 0.5: h_c(B) = max_x alpha_c x.
    fn three_class_model() -> ShapeletModel {
        let hyp = |a: f64| WeightedHypothesis {
            space: 0,
            weight: 1.0,
            alpha: vec![(0, a)],
            mean: false,
            threshold: None,
        };
        let ens = |c: usize, a: f64| Ensemble {
            positive_class: c,
            bias: 0.0,
            hypotheses: vec![hyp(a)],
            rounds: 1,
            rho: 0.0,
            gamma: 0.0,
            stop_reason: String::new(),
            master_interior_rounds: 0,
            master_fallbacks: 0,
        };
        ShapeletModel {
            input: InputKind::Bag { dim: 1 },
            classes: vec!["a".into(), "b".into(), "c".into()],
            standardizer: None,
            spaces: vec![ShapeletSpace {
                length: 1,
                kernel: Kernel::Linear,
                count: 1,
                representatives: vec![1.0],
                view: View::Raw,
                dilation: 1,
                znorm: false,
                channel: 0,
                block: 0,
                unit_exp: 0,
                blocked: BlockedReps::default(),
            }],
            ensembles: vec![ens(0, 1.0), ens(1, -1.0), ens(2, 0.5)],
            params: FitParams::default(),
            summary: TrainingSummary {
                n_train: 0,
                train_seconds: 0.0,
                rounds: 3,
                rho: 0.0,
                sparsity: 1.0,
                lp_solves: 0,
                max_generated_rows: 0,
                instances_per_space: vec![0],
                weak_failures: 0,
                last_weak_failure: None,
                shown_shares: None,
                width_accuracies: Vec::new(),
            },
            channel_names: Vec::new(),
            head: None,
            decision_offset: 0.0,
            class_offsets: Vec::new(),
            calibration: None,
            hypothesis_means: Vec::new(),
            incremental: Default::default(),
        }
    }

    #[test]
    fn one_vs_rest_takes_the_largest_score() {
        let m = three_class_model();
        m.validate().unwrap();
        let bag = |xs: &[f64]| Sample::Bag(Bag::new(1, xs.to_vec()).unwrap());
        // Instances {2, -1}: h_a = 2, h_b = max(-2, 1) = 1, h_c = 1  ->  "a".
        let p = m.predict(&bag(&[2.0, -1.0])).unwrap();
        assert_eq!(p.scores, vec![2.0, 1.0, 1.0]);
        assert_eq!(p.label, "a");
        // Instances {-3, -1}: h_a = -1, h_b = 3, h_c = -0.5  ->  "b".
        let p = m.predict(&bag(&[-3.0, -1.0])).unwrap();
        assert_eq!((p.label.as_str(), p.class_index), ("b", 1));
        // explain: contributions name the class and the maximising instance.
        let (_, contrib) = m.explain(&bag(&[-3.0, -1.0])).unwrap();
        assert_eq!(contrib[0].class, "b");
        assert_eq!(contrib[0].offset, 0);
        assert_eq!(contrib[0].contribution, 3.0);
    }

    /// With a pooled head the class scores are the head's, and the explanation's
    /// contributions are the predicted class's weights times the outputs.
    #[test]
    fn a_pooled_head_decides_and_explains() {
        let mut m = three_class_model();
        // Hypothesis outputs (h_a, h_b, h_c); the head scores a = -h_a, b = h_b + h_c,
        // c = 0.5 + 2 h_a.
        m.head = Some(PooledHead {
            weights: vec![
                vec![-1.0, 0.0, 0.0],
                vec![0.0, 1.0, 1.0],
                vec![2.0, 0.0, 0.0],
            ],
            bias: vec![0.0, 0.0, 0.5],
            alpha: 1.0,
        });
        m.validate().unwrap();
        let bag = |xs: &[f64]| Sample::Bag(Bag::new(1, xs.to_vec()).unwrap());
        // Instances {2, -1}: (h_a, h_b, h_c) = (2, 1, 1): scores (-2, 2, 4.5)  ->  "c",
        // where the ensembles alone would say "a".
        let p = m.predict(&bag(&[2.0, -1.0])).unwrap();
        assert_eq!(p.scores, vec![-2.0, 2.0, 4.5]);
        assert_eq!(p.label, "c");
        let (e, contrib) = m.explain(&bag(&[2.0, -1.0])).unwrap();
        assert_eq!(e, p);
        assert_eq!(contrib[0].class, "c");
        assert_eq!((contrib[0].weight, contrib[0].contribution), (2.0, 4.0));
        let total: f64 = contrib.iter().map(|c| c.contribution).sum();
        assert_eq!(total + 0.5, p.scores[2]);
        // A head of the wrong shape is named.
        m.head.as_mut().unwrap().weights[1].pop();
        let err = m.validate().unwrap_err().to_string();
        assert!(err.contains("2 weights for class 1"), "{err}");
    }

    #[test]
    fn validate_names_the_broken_shape() {
        let mut m = three_class_model();
        m.spaces[0].representatives.push(2.0);
        let e = m.validate().unwrap_err().to_string();
        assert!(
            e.contains("2 representative values for 1 representatives"),
            "{e}"
        );
        let mut m = three_class_model();
        m.ensembles[2].hypotheses[0].alpha[0].0 = 5;
        let e = m.validate().unwrap_err().to_string();
        assert!(e.contains("uses representative 5"), "{e}");
        let mut m = three_class_model();
        m.ensembles.pop();
        assert!(m
            .validate()
            .unwrap_err()
            .to_string()
            .contains("need 3 ensembles"));
    }

    #[test]
    fn wrong_input_is_an_error_not_a_panic() {
        let m = three_class_model();
        assert!(m.predict(&Sample::Series(vec![1.0, 2.0])).is_err());
        let two_d = Sample::Bag(Bag::new(2, vec![1.0, 2.0]).unwrap());
        assert!(m
            .predict(&two_d)
            .unwrap_err()
            .to_string()
            .contains("dimension 2"));
    }

    /// Two series per class: with `few_examples` 5 every class's hypotheses weigh at most
    /// 2 / 5 of `max_weight` (its vote rests on more of them); with 0 some weighs more.
    #[test]
    fn a_class_of_few_examples_spreads_its_vote() {
        let mut ds = Dataset::default();
        for c in 0..3 {
            for i in 0..2 {
                let v: Vec<f64> = (0..40)
                    .map(|t| {
                        let t = t as f64;
                        (t * 0.2 * (c + 1) as f64).sin() * (1.0 + 0.1 * i as f64)
                            + ((t as usize * 7 + i * 3) % 5) as f64 * 0.05
                    })
                    .collect();
                ds.ids.push(format!("s{c}-{i}"));
                ds.labels.push(format!("class-{c}"));
                ds.samples.push(Sample::Series(v));
            }
        }
        let fit = |few: usize| {
            let params = FitParams {
                k: Some(10),
                few_examples: few,
                cap_examples: 0,
                ..FitParams::default()
            };
            ShapeletModel::fit(&ds, &params).unwrap()
        };
        let heaviest = |m: &ShapeletModel| {
            m.ensembles
                .iter()
                .flat_map(|e| &e.hypotheses)
                .map(|h| h.weight)
                .fold(0.0, f64::max)
        };
        let cap = 0.05 * 2.0 / 5.0;
        let spread = fit(5);
        assert!(heaviest(&spread) <= cap + 1e-6, "{}", heaviest(&spread));
        assert!(spread.ensembles.iter().all(|e| e.hypotheses.len() >= 20));
        assert!(heaviest(&fit(0)) > cap + 1e-6);
        for (s, label) in ds.samples.iter().zip(&ds.labels) {
            assert_eq!(&spread.predict(s).unwrap().label, label);
        }
    }

    /// More columns a round reach the same master optimum (column generation over the
    /// finite pool of one-hot, mean and threshold hypotheses, Algorithm 1) in fewer rounds:
    /// each class's margin rho agrees with two columns a round.
    #[test]
    fn more_columns_a_round_reach_the_same_margin_in_fewer_rounds() {
        let mut ds = Dataset::default();
        for c in 0..2 {
            for i in 0..12 {
                let v: Vec<f64> = (0..30)
                    .map(|t| {
                        let t = t as f64;
                        (t * 0.3 * (c + 1) as f64 + i as f64).sin()
                            + ((t as usize * 7 + i * 3) % 5) as f64 * 0.2
                    })
                    .collect();
                ds.ids.push(format!("s{c}-{i}"));
                ds.labels.push(format!("class-{c}"));
                ds.samples.push(Sample::Series(v));
            }
        }
        let fit = |columns: usize| {
            let params = FitParams {
                k: Some(10),
                columns_per_round: columns,
                ..FitParams::default()
            };
            ShapeletModel::fit(&ds, &params).unwrap()
        };
        let (two, six) = (fit(2), fit(6));
        let rounds = |m: &ShapeletModel| m.ensembles.iter().map(|e| e.rounds).sum::<usize>();
        assert!(
            rounds(&six) < rounds(&two),
            "{} against {}",
            rounds(&six),
            rounds(&two)
        );
        for (a, b) in two.ensembles.iter().zip(&six.ensembles) {
            assert!(a.stop_reason.starts_with("edge"), "{}", a.stop_reason);
            assert!(b.stop_reason.starts_with("edge"), "{}", b.stop_reason);
            assert!(
                (a.rho - b.rho).abs() < 1e-4,
                "rho {} against {}",
                a.rho,
                b.rho
            );
        }
    }

    /// Each channel's level space takes the median heuristic at `LEVEL_SCALE`, every
    /// subsequence space at the kernel's own scale, and the classes that differ only in
    /// where their values lie are told apart.
    #[test]
    fn a_level_space_has_its_own_width() {
        let mut ds = Dataset::default();
        for c in 0..2 {
            for i in 0..8 {
                // Both channels the same shapes in both classes; the second channel's
                // level differs by class.
                let wave = |phase: f64| -> Vec<f64> {
                    (0..24)
                        .map(|t| {
                            (t as f64 * 0.7 + phase).sin() + ((t * 7 + i * 3) % 5) as f64 * 0.1
                        })
                        .collect()
                };
                let level = 3.0 * c as f64 + 0.2 * i as f64;
                let second = wave(i as f64).iter().map(|v| v + level).collect();
                ds.ids.push(format!("s{c}-{i}"));
                ds.labels.push(format!("class-{c}"));
                ds.samples
                    .push(Sample::Multi(vec![wave(0.5 * i as f64), second]));
            }
        }
        let params = FitParams::default();
        let prepared = prepare(&ds, &params).unwrap();
        let m = ShapeletModel::fit(&ds, &params).unwrap();
        assert_eq!(m.spaces.len(), prepared.spaces.len());
        let mut levels = 0;
        for (space, p) in m.spaces.iter().zip(&prepared.spaces) {
            assert_eq!(space.extraction(), p.extraction);
            let scale = if p.extraction.is_level() {
                levels += 1;
                LEVEL_SCALE
            } else {
                4.0
            };
            let set = p.instances.as_ref().expect("a full preparation keeps them");
            let want = scale * median_heuristic_sigma(set, params.seed);
            let Kernel::Gaussian { sigma } = space.kernel else {
                panic!("{:?}", space.kernel)
            };
            assert!(
                (sigma - want).abs() <= 1e-12 * want,
                "{sigma} against {want}"
            );
        }
        assert_eq!(levels, 2);
        for (s, label) in ds.samples.iter().zip(&ds.labels) {
            assert_eq!(&m.predict(s).unwrap().label, label);
        }
    }

    /// A lean preparation (a space's instances dropped once its tables stand, as `fit`
    /// prepares with no DC step) fits the model a full preparation fits, bit for bit: three
    /// classes of series with two widths as spaces (the pooled head, the level spaces) and
    /// two classes of bags.
    #[test]
    fn a_lean_preparation_fits_the_same_model() {
        let mut series = Dataset::default();
        for c in 0..3 {
            for i in 0..10 {
                let v: Vec<f64> = (0..40)
                    .map(|t| {
                        let t = t as f64;
                        (t * 0.25 * (c + 1) as f64 + i as f64).sin()
                            + 0.1 * c as f64
                            + ((t as usize * 7 + i * 3) % 5) as f64 * 0.2
                    })
                    .collect();
                series.ids.push(format!("s{c}-{i}"));
                series.labels.push(format!("class-{c}"));
                series.samples.push(Sample::Series(v));
            }
        }
        let mut bags = Dataset::default();
        for i in 0..24 {
            let positive = i % 3 == 0;
            let data: Vec<f64> = (0..5 * 3)
                .map(|j| ((i * 13 + j * 7) % 11) as f64 * 0.1)
                .chain(if positive {
                    vec![2.0, 2.0, 2.0]
                } else {
                    vec![]
                })
                .collect();
            bags.ids.push(format!("b{i}"));
            bags.labels
                .push(if positive { "pos" } else { "neg" }.into());
            bags.samples.push(Sample::Bag(Bag::new(3, data).unwrap()));
        }
        let two_widths = FitParams {
            k: Some(12),
            widths: Some(crate::mil::params::Widths {
                scales: vec![4.0, 1.0],
                choice: WidthChoice::Spaces,
            }),
            ..FitParams::default()
        };
        for (ds, params) in [(&series, two_widths), (&bags, FitParams::default())] {
            let lean = prepare_lean(ds, &params).unwrap();
            assert!(lean
                .spaces
                .iter()
                .all(|s| s.instances.is_none() && !s.tables.is_empty()));
            let full = prepare(ds, &params).unwrap();
            assert!(full.spaces.iter().all(|s| s.tables.is_empty()));
            let fit = |p: &Prepared| {
                let mut m = ShapeletModel::fit_prepared(p, ds, &params, Cancel::now()).unwrap();
                m.summary.train_seconds = 0.0;
                m
            };
            let (a, b) = (fit(&lean), fit(&full));
            assert!(!a.ensembles.iter().all(|e| e.hypotheses.is_empty()));
            assert_eq!(a, b);
        }
    }
}
