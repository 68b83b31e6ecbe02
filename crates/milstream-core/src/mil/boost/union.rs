//! One class's boosting over the union of hypothesis spaces (the paper, Algorithm 1): each
//! round, every space offers its best hypothesis of each kind (max similarity by the DC step
//! of Algorithm 2, mean similarity, threshold) and the round takes the largest edge, plus the
//! spaces' next best when a round may add more than two columns.

use std::collections::HashSet;

use rayon::prelude::*;

use super::ensemble::{Ensemble, WeightedHypothesis};
use super::lpboost::{lpboost, BoostParams, Boosted};
use super::stump::{best_threshold, column_key, ColumnKey, Threshold, ThresholdTable};
use super::weak::{
    active_bags, best_mean, dc_candidates, weak_learn, WeakHypothesis, WeakParams, WorkingSet,
};
use crate::mil::error::{MilError, Result};
use crate::mil::lp::pricing::Focus;
use crate::mil::params::FitParams;
use crate::mil::space::kernel_table::KernelTable;

/// Weights below this (the master LP's interior-point noise on inactive rows) are dropped
/// from a fitted ensemble; the rest keep their exact values.
pub const LEAN_WEIGHT: f64 = 1e-6;

/// The space index of the constant hypotheses h = +1 and h = -1 (the bias).
pub(crate) const CONSTANT: usize = usize::MAX;

/// The hypothesis spaces boosting draws from: one kernel table per (prepared space, width),
/// and beside each its threshold table when threshold hypotheses are on.
pub(crate) struct UnionOfSpaces<'a> {
    pub tables: Vec<&'a KernelTable<'a>>,
    pub stumps: Option<Vec<ThresholdTable>>,
}

/// A column of the master LP: a hypothesis named by its space, its kind (max or mean
/// similarity, or a threshold on one) and its weights over the space's representatives.
#[derive(Debug, Clone)]
pub(crate) struct Column {
    pub space: usize,
    pub mean: bool,
    pub threshold: Option<Threshold>,
    pub alpha: Vec<(usize, f64)>,
}

/// What solving one class's problem cost, for the training summary.
#[derive(Debug, Clone, Default)]
pub(crate) struct SolverStats {
    pub lp_solves: usize,
    pub max_rows: usize,
    pub weak_failures: usize,
    pub last_failure: Option<String>,
}

/// One class's fit: its ensemble, what solving cost, and each kept hypothesis's outputs on
/// the training bags (the pooled head's features).
pub(crate) struct ClassFit {
    pub ensemble: Ensemble,
    pub stats: SolverStats,
    pub outputs: Vec<Vec<f64>>,
}

/// A space's offer in a round: a hypothesis of one kind, with the space it comes from.
struct Candidate {
    space: usize,
    mean: bool,
    threshold: Option<Threshold>,
    hypothesis: WeakHypothesis,
}

impl Candidate {
    fn new(space: usize, mean: bool, threshold: Option<Threshold>, h: WeakHypothesis) -> Self {
        Self {
            space,
            mean,
            threshold,
            hypothesis: h,
        }
    }

    /// A threshold hypothesis's edge counts less eta, the price of the share cap on them.
    fn gain(&self, eta: f64) -> f64 {
        self.hypothesis.edge - if self.threshold.is_some() { eta } else { 0.0 }
    }

    fn key(&self) -> ColumnKey {
        column_key(
            self.space,
            self.mean,
            self.threshold,
            &self.hypothesis.alpha,
        )
    }
}

/// The columns already in the master. Under a weight cap a column already there is not
/// offered again: its copy would carry a cap of its own.
struct Taken(HashSet<ColumnKey>);

impl Taken {
    fn new(columns: &[Column], capped: bool) -> Self {
        Self(if capped {
            columns
                .iter()
                .map(|c| column_key(c.space, c.mean, c.threshold, &c.alpha))
                .collect()
        } else {
            HashSet::new()
        })
    }

    fn contains(&self, space: usize, mean: bool, t: Option<Threshold>, a: &[(usize, f64)]) -> bool {
        !self.0.is_empty() && self.0.contains(&column_key(space, mean, t, a))
    }
}

/// Each space's best hypothesis of each kind in one round (None: the space was not asked).
struct Offers {
    one_hots: Vec<Option<Result<WeakHypothesis>>>,
    means: Vec<Option<WeakHypothesis>>,
    thresholds: Vec<Option<(WeakHypothesis, bool, Threshold)>>,
}

/// Fits the one-vs-rest problem of class `classes[positive]` (footnote 3): Algorithm 1 whose
/// weak learner is the union's, then the lean ensemble.
pub(crate) fn fit_class(
    spaces: &UnionOfSpaces,
    labels: &[String],
    classes: &[String],
    positive: usize,
    params: &FitParams,
    boost: BoostParams,
    weak: WeakParams,
) -> Result<ClassFit> {
    let y: Vec<f64> = labels
        .iter()
        .map(|l| if *l == classes[positive] { 1.0 } else { -1.0 })
        .collect();
    let m_c = y.iter().filter(|v| **v > 0.0).count().max(1);
    let mut boost = boost;
    let batch;
    (batch, boost.max_weight) = params.round_plan(labels.len(), m_c);
    let mut learner = RoundLearner {
        spaces,
        y: &y,
        params,
        weak,
        batch,
        warm: vec![WorkingSet::default(); spaces.tables.len()],
        focus: Focus::new(params.partial_pricing),
        dc_chosen: Vec::new(),
        stats: SolverStats::default(),
    };
    let boosted = match lpboost(&y, boost, |d, gamma, eta, cols: &[Column]| {
        learner.round(d, gamma, eta, cols)
    }) {
        Ok(b) => b,
        // One-vs-rest: a class with no evidence of its own (no max-similarity hypothesis
        // has a positive edge for it) gets g = 0 and is decided by the other classes'
        // scores. When no class has any, the model is the majority decision (the caller's):
        // legitimate data never stops a fit.
        Err(MilError::Training(reason)) => Boosted::empty(reason),
        Err(e) => return Err(e),
    };
    let (ensemble, outputs) = lean_ensemble(boosted, positive);
    Ok(ClassFit {
        ensemble,
        stats: learner.stats,
        outputs,
    })
}

/// Keeps the hypotheses of weight above [`LEAN_WEIGHT`]; the constant ones become the bias.
fn lean_ensemble(boosted: Boosted<Column>, positive: usize) -> (Ensemble, Vec<Vec<f64>>) {
    let kept = |space: usize, w: f64| space != CONSTANT && w > LEAN_WEIGHT;
    let bias: f64 = boosted
        .hypotheses
        .iter()
        .zip(&boosted.weights)
        .filter(|((c, _), &w)| c.space == CONSTANT && w > LEAN_WEIGHT)
        .map(|((c, _), &w)| w * c.alpha[0].1)
        .sum();
    let (hypotheses, outputs) = boosted
        .hypotheses
        .into_iter()
        .zip(&boosted.weights)
        .filter(|((c, _), &w)| kept(c.space, w))
        .map(|((c, out), &w)| {
            let h = WeightedHypothesis {
                space: c.space,
                weight: w,
                alpha: c.alpha.into_iter().map(|(z, a)| (z as u32, a)).collect(),
                mean: c.mean,
                threshold: c.threshold,
            };
            (h, out)
        })
        .unzip();
    let ensemble = Ensemble {
        positive_class: positive,
        hypotheses,
        bias,
        rounds: boosted.rounds,
        rho: boosted.rho,
        gamma: boosted.gamma,
        stop_reason: boosted.stop_reason,
        master_interior_rounds: boosted.interior_rounds + boosted.master_fallbacks,
        master_fallbacks: boosted.master_fallbacks,
    };
    (ensemble, outputs)
}

/// The union's weak learner, with what it keeps from round to round: each space's working
/// set of the DC step, the partial pricing's focus and the spaces chosen for the DC step.
struct RoundLearner<'a> {
    spaces: &'a UnionOfSpaces<'a>,
    y: &'a [f64],
    params: &'a FitParams,
    weak: WeakParams,
    /// Most columns a round adds.
    batch: usize,
    warm: Vec<WorkingSet>,
    focus: Focus,
    /// The spaces that offer the max hypothesis, ranked at full pricings.
    dc_chosen: Vec<usize>,
    stats: SolverStats,
}

type NewColumn = (Column, Vec<f64>, bool);

impl RoundLearner<'_> {
    /// One round at bag weights `d`: the columns to add, best first, with their outputs and
    /// whether each is a threshold hypothesis.
    fn round(
        &mut self,
        d: &[f64],
        gamma: f64,
        eta: f64,
        cols: &[Column],
    ) -> Result<Vec<NewColumn>> {
        let taken = Taken::new(cols, self.params.max_weight.is_some());
        let offers = self.offers(d, gamma, eta, &taken);
        let chosen = self.choose(offers, d, eta, &taken)?;
        Ok(chosen.into_iter().map(|c| self.column(c)).collect())
    }

    /// Asks the spaces the partial pricing wants for their best of each kind; each returns
    /// its best gain over what it may offer (not a taken column).
    fn offers(&mut self, d: &[f64], gamma: f64, eta: f64, taken: &Taken) -> Offers {
        let Self {
            spaces,
            y,
            params,
            weak,
            warm,
            focus,
            dc_chosen,
            ..
        } = self;
        let (spaces, y, params, weak) = (&**spaces, *y, *params, &*weak);
        let tables = &spaces.tables;
        // The bags of positive weight, which every space's pricing sums over.
        let active = active_bags(y.len(), d);
        let n_spaces = tables.len();
        let mut offers = Offers {
            one_hots: (0..n_spaces).map(|_| None).collect(),
            means: vec![None; n_spaces],
            thresholds: vec![None; n_spaces],
        };
        focus.price(n_spaces, gamma + params.epsilon, |want, full| {
            // The `dc_spaces` best spaces by one-hot edge (all in the paper's form) offer the
            // max hypothesis, ranked at full pricings only (`pricing`); a full call also asks
            // a ranked focus space the call before did not.
            if full {
                *dc_chosen = dc_candidates(tables, y, d, params.spaces.dc_spaces, params.weak);
            }
            let (chosen, asked) = (&*dc_chosen, &offers.one_hots);
            let found: Vec<(usize, Result<_>)> = tables
                .par_iter()
                .zip(warm.par_iter_mut())
                .enumerate()
                .filter(|(s, _)| chosen.contains(s) && (want[*s] || (full && asked[*s].is_none())))
                .map(|(s, (t, w))| (s, weak_learn(t, y, d, weak, w)))
                .collect();
            for (s, h) in found {
                offers.one_hots[s] = Some(h);
            }
            if params.mean_hypotheses {
                let found: Vec<_> = tables
                    .par_iter()
                    .enumerate()
                    .filter(|(s, _)| want[*s])
                    .map(|(s, t)| {
                        let skip = |z, sign| taken.contains(s, true, None, &[(z, sign)]);
                        (s, best_mean(t, y, d, &active, skip))
                    })
                    .collect();
                for (s, h) in found {
                    offers.means[s] = Some(h);
                }
            }
            if let Some(stumps) = &spaces.stumps {
                let found: Vec<_> = stumps
                    .par_iter()
                    .enumerate()
                    .filter(|(s, _)| want[*s])
                    .map(|(s, t)| {
                        let skip = |z, mean, th| taken.contains(s, mean, Some(th), &[(z, 1.0)]);
                        (s, best_threshold(t, y, d, &active, skip))
                    })
                    .collect();
                for (s, f) in found {
                    offers.thresholds[s] = f;
                }
            }
            offers.gains(want, eta, taken)
        });
        offers
    }

    /// The round's columns from the offers: the best by gain (which decides when boosting
    /// stops) and the best threshold, then, when a round adds more than two, the spaces'
    /// best by gain, each column once.
    fn choose(
        &mut self,
        offers: Offers,
        d: &[f64],
        eta: f64,
        taken: &Taken,
    ) -> Result<Vec<Candidate>> {
        let extra = self.batch > 2;
        let mut best: Option<Candidate> = None;
        let beats = |h: &WeakHypothesis, best: &Option<Candidate>| {
            best.as_ref().is_none_or(|b| h.edge > b.gain(eta))
        };
        // Every space's best of each kind (when a round adds more than two).
        let mut others: Vec<Candidate> = Vec::new();
        for (s, h) in offers.means.into_iter().enumerate() {
            let Some(h) = h else { continue };
            if extra {
                others.push(Candidate::new(s, true, None, h.clone()));
            }
            if beats(&h, &best) {
                best = Some(Candidate::new(s, true, None, h));
            }
        }
        // The best threshold is kept apart: when a kernel hypothesis wins the round, the
        // threshold joins it if its edge is above gamma too (two columns per master solve;
        // fewer solves, the same optimum).
        let mut best_stump: Option<Candidate> = None;
        for (s, f) in offers.thresholds.into_iter().enumerate() {
            let Some((h, mean, t)) = f else { continue };
            if extra {
                others.push(Candidate::new(s, mean, Some(t), h.clone()));
            }
            if best_stump
                .as_ref()
                .is_none_or(|b| h.edge - eta > b.gain(eta))
            {
                best_stump = Some(Candidate::new(s, mean, Some(t), h));
            }
        }
        if self.params.bias {
            // The constant hypotheses h = +1 and h = -1 (edges +-sum y d): a bias, which
            // one-vs-rest's unbalanced problems need before any shapelet can have a positive
            // edge.
            let e: f64 = self.y.iter().zip(d).map(|(y, d)| y * d).sum();
            let sign = if e >= 0.0 { 1.0 } else { -1.0 };
            if best.as_ref().is_none_or(|b| e.abs() > b.gain(eta))
                && !taken.contains(CONSTANT, false, None, &[(0, sign)])
            {
                let h = WeakHypothesis::constant(sign, e.abs(), self.y.len());
                best = Some(Candidate::new(CONSTANT, false, None, h));
            }
        }
        let mut last_err = None;
        for (s, c) in offers.one_hots.into_iter().enumerate() {
            match c {
                None => {}
                Some(Err(e)) => last_err = Some(e),
                Some(Ok(h)) => {
                    self.count(&h);
                    let free = !taken.contains(s, false, None, &h.alpha);
                    if extra && free {
                        others.push(Candidate::new(s, false, None, h.clone()));
                    }
                    if beats(&h, &best) && free {
                        best = Some(Candidate::new(s, false, None, h));
                    }
                }
            }
        }
        let mut found: Vec<Candidate> = best.into_iter().chain(best_stump).collect();
        found.sort_by(|a, b| b.gain(eta).total_cmp(&a.gain(eta)));
        if found.is_empty() {
            return Err(last_err.expect("no candidate means some space failed"));
        }
        if extra {
            others.sort_by(|a, b| b.gain(eta).total_cmp(&a.gain(eta)));
            let mut seen: HashSet<ColumnKey> = found.iter().map(Candidate::key).collect();
            for c in others {
                if found.len() >= self.batch {
                    break;
                }
                if seen.insert(c.key()) {
                    found.push(c);
                }
            }
        }
        Ok(found)
    }

    /// Adds a DC step's solver figures to the class's.
    fn count(&mut self, h: &WeakHypothesis) {
        let stats = &mut self.stats;
        stats.lp_solves += h.lp_solves;
        stats.max_rows = stats.max_rows.max(h.rows_generated);
        if let Some(f) = &h.failure {
            stats.weak_failures += 1;
            stats.last_failure = Some(f.clone());
        }
    }

    /// A chosen candidate as a master column with its outputs. Mean and threshold
    /// candidates come without outputs (most are never kept): computed here for those that are.
    fn column(&self, c: Candidate) -> NewColumn {
        let (s, h) = (c.space, c.hypothesis);
        let outputs = match (c.threshold, &self.spaces.stumps) {
            (Some(th), Some(stumps)) => stumps[s].outputs(h.alpha[0].0, c.mean, th),
            _ if c.mean => self.spaces.tables[s].mean_outputs(h.alpha[0].0, h.alpha[0].1),
            _ => h.outputs,
        };
        let column = Column {
            space: s,
            mean: c.mean,
            threshold: c.threshold,
            alpha: h.alpha,
        };
        (column, outputs, c.threshold.is_some())
    }
}

impl Offers {
    /// The best gain each wanted space offers: its max, mean or threshold hypothesis (a
    /// threshold's less eta), a taken max hypothesis not counting.
    fn gains(&self, want: &[bool], eta: f64, taken: &Taken) -> Vec<(usize, f64)> {
        let edge = |h: Option<&WeakHypothesis>| h.map_or(f64::NEG_INFINITY, |h| h.edge);
        (0..want.len())
            .filter(|&s| want[s])
            .map(|s| {
                let one_hot = match &self.one_hots[s] {
                    Some(Ok(h)) if !taken.contains(s, false, None, &h.alpha) => h.edge,
                    _ => f64::NEG_INFINITY,
                };
                let stump = edge(self.thresholds[s].as_ref().map(|t| &t.0)) - eta;
                (s, one_hot.max(edge(self.means[s].as_ref())).max(stump))
            })
            .collect()
    }
}
