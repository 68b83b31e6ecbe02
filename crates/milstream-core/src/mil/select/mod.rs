//! Model selection: stratified k-fold cross-validation over a grid, run in parallel with
//! rayon and seeded, plus accuracy and AUC.

pub(crate) mod decision;
pub mod folds;
pub(crate) mod subfits;
pub(crate) mod width;

use std::collections::HashMap;

use rayon::prelude::*;

use crate::mil::bag::{Dataset, InputKind, Sample};
use crate::mil::cancel::Cancel;
use crate::mil::error::Result;
use crate::mil::model::{FitParams, KernelSpec, Model, ModelKind, ShapeletLength};
pub use crate::mil::select::folds::stratified_folds;
use crate::mil::select::subfits::sub_fit_count;
use crate::mil::shapelet::{prepare, Prepared, ShapeletModel};

pub fn accuracy(pred: &[String], truth: &[String]) -> f64 {
    let hits = pred.iter().zip(truth).filter(|(p, t)| p == t).count();
    hits as f64 / truth.len().max(1) as f64
}

/// Area under the ROC curve of `scores` for `positive` (Mann-Whitney U, ties count half).
/// None if one class is absent.
pub fn auc(scores: &[f64], positive: &[bool]) -> Option<f64> {
    let mut idx: Vec<usize> = (0..scores.len()).collect();
    idx.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    let n_pos = positive.iter().filter(|&&p| p).count();
    let n_neg = positive.len() - n_pos;
    if n_pos == 0 || n_neg == 0 {
        return None;
    }
    // Average ranks over ties.
    let mut rank_sum_pos = 0.0;
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && scores[idx[j + 1]] == scores[idx[i]] {
            j += 1;
        }
        let avg_rank = (i + j) as f64 / 2.0 + 1.0;
        for &t in &idx[i..=j] {
            if positive[t] {
                rank_sum_pos += avg_rank;
            }
        }
        i = j + 1;
    }
    let u = rank_sum_pos - (n_pos * (n_pos + 1)) as f64 / 2.0;
    Some(u / (n_pos as f64 * n_neg as f64))
}

/// The search grid around `base`, after the paper's section 7, ordered from the simplest
/// model (narrowest kernel, largest nu, shortest shapelet) so ties go to the simplest.
/// Series: l in {0.1, 0.15, ..., 0.4} x L, nu in {0.1, 0.2}, sigma in {0.5, 1, 2} x the
/// median heuristic. Bags: nu in {0.1, 0.15, 0.2, 0.3, 0.5}, sigma in {0.25, 0.5, 1, 2, 4} x
/// the median heuristic. A kernel other than the Gaussian keeps its own parameters.
///
/// The other kinds search their own parameters (their other fields stay `base`'s): MIORDM
/// the paper's lambda in {2^7..2^10} x theta, mu in {0.6, 0.7, 0.8}; MI-SVM and mi-SVM
/// C in {1, 10, 100} x gamma in {0.5, 1, 2} x the median heuristic; the box kernel s in {10, 20} x C in {1, 10, 100, 1000}.
pub fn default_grid(base: &FitParams, input: InputKind) -> Vec<FitParams> {
    let with = |f: &dyn Fn(&mut FitParams)| {
        let mut p = base.clone();
        f(&mut p);
        p
    };
    match base.kind {
        ModelKind::Lpboost => {}
        ModelKind::Miordm => {
            let mut grid = Vec::new();
            for lambda in [128.0, 256.0, 512.0, 1024.0] {
                for theta in [0.6, 0.7, 0.8] {
                    for mu in [0.6, 0.7, 0.8] {
                        grid.push(with(&|p| {
                            p.miordm.lambda = lambda;
                            p.miordm.theta = theta;
                            p.miordm.mu = mu;
                        }));
                    }
                }
            }
            return grid;
        }
        ModelKind::Misvm | ModelKind::MiSvm => {
            let mut grid = Vec::new();
            for scale in [0.5, 1.0, 2.0] {
                for c in [1.0, 10.0, 100.0] {
                    grid.push(with(&|p| {
                        p.svm.c = c;
                        p.svm.gamma = None;
                        p.svm.gamma_scale = scale;
                    }));
                }
            }
            return grid;
        }
        ModelKind::Boxsvm => {
            let mut grid = Vec::new();
            for s in [10, 20] {
                for c in [1.0, 10.0, 100.0, 1000.0] {
                    grid.push(with(&|p| {
                        p.boxkernel.s = s;
                        p.boxkernel.c = c;
                    }));
                }
            }
            return grid;
        }
    }
    let paper_spaces = base.spaces == crate::mil::model::SpaceParams::paper();
    let (lengths, nus, scales): (Vec<Vec<ShapeletLength>>, Vec<f64>, Vec<f64>) = match input {
        // The shape-aware spaces: the defaults first (a search cut short by its budget has
        // tried them), then other lengths, margins and widths around them.
        InputKind::Series | InputKind::Multi { .. } if !paper_spaces => {
            let scale = match base.kernel {
                KernelSpec::Gaussian { scale, .. } => scale,
                _ => 1.0,
            };
            let mut lengths = vec![base.lengths.clone()];
            for l in [7, 11, 15] {
                let l = vec![ShapeletLength::Absolute(l)];
                if !lengths.contains(&l) {
                    lengths.push(l);
                }
            }
            (
                lengths,
                vec![base.nu, base.nu / 2.0, base.nu * 2.0],
                vec![scale, scale / 2.0, scale * 2.0],
            )
        }
        InputKind::Series | InputKind::Multi { .. } => (
            [0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4]
                .iter()
                .map(|&f| vec![ShapeletLength::Fraction(f)])
                .collect(),
            vec![0.2, 0.1],
            vec![0.5, 1.0, 2.0],
        ),
        InputKind::Bag { .. } => (
            vec![base.lengths.clone()],
            vec![0.5, 0.3, 0.2, 0.15, 0.1],
            vec![0.25, 0.5, 1.0, 2.0, 4.0],
        ),
    };
    let scales = match base.kernel {
        KernelSpec::Gaussian { sigma: None, .. } => scales,
        _ => vec![f64::NAN],
    };
    let mut grid = Vec::new();
    // Lengths outermost: a length's preparation (instances, k-means) is shared by its
    // widths and margins and dropped once they are done.
    for l in &lengths {
        for &scale in &scales {
            for &nu in &nus {
                let mut p = base.clone();
                p.nu = nu;
                p.lengths = l.clone();
                if let KernelSpec::Gaussian { sigma: None, .. } = p.kernel {
                    p.kernel = KernelSpec::Gaussian { sigma: None, scale };
                }
                grid.push(p);
            }
        }
    }
    grid
}

/// Mean and spread of a cross-validated estimate.
#[derive(Debug, Clone)]
pub struct CvEstimate {
    pub fold_accuracies: Vec<f64>,
    pub mean: f64,
    pub std: f64,
}

impl CvEstimate {
    fn from_folds(fold_accuracies: Vec<f64>) -> Self {
        let n = fold_accuracies.len().max(1) as f64;
        let mean = fold_accuracies.iter().sum::<f64>() / n;
        let var = fold_accuracies
            .iter()
            .map(|a| (a - mean) * (a - mean))
            .sum::<f64>()
            / n;
        Self {
            fold_accuracies,
            mean,
            std: var.sqrt(),
        }
    }
}

/// Cross-validated accuracy of every grid point, sharing the label-free preparation
/// (instances, k-means) per fold and length set across kernel widths and nu. `tick` is
/// called once per finished (fold, grid point) fit.
pub fn cross_validate_grid(
    ds: &Dataset,
    grid: &[FitParams],
    folds: usize,
    seed: u64,
    tick: &(dyn Fn() + Sync),
) -> Result<Vec<CvEstimate>> {
    Ok(
        cross_validate_grid_until(ds, grid, folds, seed, None, tick)?
            .into_iter()
            .map(|e| e.expect("no deadline: every grid point is estimated"))
            .collect(),
    )
}

/// [`cross_validate_grid`] in grid order until `deadline`: a grid point not started by then
/// is None (the first one always runs). Folds run in parallel.
pub fn cross_validate_grid_until(
    ds: &Dataset,
    grid: &[FitParams],
    folds: usize,
    seed: u64,
    deadline: Option<std::time::Instant>,
    tick: &(dyn Fn() + Sync),
) -> Result<Vec<Option<CvEstimate>>> {
    ds.check_trainable()?;
    let test_folds = stratified_folds(&ds.labels, folds, seed)?;
    let trains: Vec<Dataset> = test_folds
        .iter()
        .map(|test| {
            let train: Vec<usize> = (0..ds.len())
                .filter(|i| test.binary_search(i).is_err())
                .collect();
            ds.subset(&train)
        })
        .collect();
    // Preparation depends on the lengths, spaces, k, stride and seed only.
    let prep_key = |p: &FitParams| {
        format!(
            "{:?}|{:?}|{:?}|{}|{}|{}",
            p.lengths, p.spaces, p.k, p.stride, p.seed, p.standardize
        )
    };
    let mut prepared: HashMap<(usize, String), Prepared> = HashMap::new();
    let mut out = Vec::with_capacity(grid.len());
    let cancel = Cancel::now();
    for (g, p) in grid.iter().enumerate() {
        cancel.check()?;
        if g > 0 && deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            out.push(None);
            continue;
        }
        // Sub-fits draw representatives of their own: no preparation to share.
        let own_preparation =
            p.kind != ModelKind::Lpboost || trains.iter().any(|t| sub_fit_count(t, p) > 1);
        let acc: Vec<f64> = if own_preparation {
            (0..folds)
                .into_par_iter()
                .map(|f| {
                    let o = fit_fold(ds, p, &test_folds[f])?;
                    tick();
                    Ok(o.accuracy)
                })
                .collect::<Result<_>>()?
        } else {
            let key = prep_key(p);
            let missing: Vec<usize> = (0..folds)
                .filter(|&f| !prepared.contains_key(&(f, key.clone())))
                .collect();
            let fresh: Vec<(usize, Prepared)> = missing
                .par_iter()
                .map(|&f| Ok((f, prepare(&trains[f], p)?)))
                .collect::<Result<_>>()?;
            for (f, prep) in fresh {
                prepared.insert((f, key.clone()), prep);
            }
            (0..folds)
                .into_par_iter()
                .map(|f| {
                    let prep = &prepared[&(f, key.clone())];
                    let mut model = ShapeletModel::fit_prepared(prep, &trains[f], p, cancel)?;
                    // As `ShapeletModel::fit` does: the estimate is of the model a fit gives.
                    model.place_decision(prep, &trains[f], p, cancel)?;
                    let mut hits = 0usize;
                    for &i in &test_folds[f] {
                        if model.predict(&ds.samples[i])?.label == ds.labels[i] {
                            hits += 1;
                        }
                    }
                    tick();
                    Ok(hits as f64 / test_folds[f].len().max(1) as f64)
                })
                .collect::<Result<_>>()?
        };
        // Memory: drop preparations no later grid point shares.
        if p.kind == ModelKind::Lpboost {
            let key = prep_key(p);
            if !grid[g + 1..].iter().any(|q| prep_key(q) == key) {
                prepared.retain(|(_, k), _| *k != key);
            }
        }
        out.push(Some(CvEstimate::from_folds(acc)));
    }
    Ok(out)
}

/// One fold of a cross-validation: fit on everything but `test`, score `test`.
pub struct FoldOutcome {
    pub accuracy: f64,
    pub fit_seconds: f64,
    /// Per test example: its scores (aligned with the model's classes) and its label.
    pub scores: Vec<(Vec<f64>, String)>,
    pub classes: Vec<String>,
}

/// Fits on the complement of `test` (sorted indices) and scores `test`. The test fold's
/// samples are passed to the fit as unlabeled bags (only the transductive box kernel
/// looks at them).
pub fn fit_fold(ds: &Dataset, p: &FitParams, test: &[usize]) -> Result<FoldOutcome> {
    let train: Vec<usize> = (0..ds.len())
        .filter(|i| test.binary_search(i).is_err())
        .collect();
    let unlabeled: Vec<Sample> = test.iter().map(|&i| ds.samples[i].clone()).collect();
    let t = std::time::Instant::now();
    let model = Model::fit_with_unlabeled(&ds.subset(&train), p, &unlabeled)?;
    let fit_seconds = t.elapsed().as_secs_f64();
    let mut hits = 0;
    let mut scores = Vec::with_capacity(test.len());
    for &i in test {
        let pred = model.predict(&ds.samples[i])?;
        hits += usize::from(pred.label == ds.labels[i]);
        scores.push((pred.scores, ds.labels[i].clone()));
    }
    Ok(FoldOutcome {
        accuracy: hits as f64 / test.len().max(1) as f64,
        fit_seconds,
        scores,
        classes: model.classes().to_vec(),
    })
}

/// A cross-validated evaluation of one parameter set, for comparing kinds.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CvReport {
    pub kind: String,
    pub folds: usize,
    pub fold_accuracies: Vec<f64>,
    pub accuracy: f64,
    pub accuracy_std: f64,
    /// Over the pooled out-of-fold scores (two classes only).
    pub auc: Option<f64>,
    pub fit_seconds: Vec<f64>,
    pub fit_seconds_mean: f64,
}

/// k-fold CV of `p`, folds one after another so each fold's fit time is its own (a fit
/// may use every core itself). `tick` is called once per fold.
pub fn cross_validate(
    ds: &Dataset,
    p: &FitParams,
    folds: usize,
    seed: u64,
    tick: &(dyn Fn() + Sync),
) -> Result<CvReport> {
    ds.check_trainable()?;
    let test_folds = stratified_folds(&ds.labels, folds, seed)?;
    let mut outcomes = Vec::with_capacity(folds);
    for test in &test_folds {
        outcomes.push(fit_fold(ds, p, test)?);
        tick();
    }
    let est = CvEstimate::from_folds(outcomes.iter().map(|o| o.accuracy).collect());
    let classes = ds.classes();
    let auc = if classes.len() == 2 {
        let mut margin = Vec::new();
        let mut positive = Vec::new();
        for o in &outcomes {
            let pos_index = o.classes.iter().position(|c| *c == classes[1]);
            for (sc, label) in &o.scores {
                if let Some(k) = pos_index {
                    margin.push(sc[k] - sc[1 - k]);
                    positive.push(*label == classes[1]);
                }
            }
        }
        auc(&margin, &positive)
    } else {
        None
    };
    let fit_seconds: Vec<f64> = outcomes.iter().map(|o| o.fit_seconds).collect();
    Ok(CvReport {
        kind: p.kind.name().into(),
        folds,
        fold_accuracies: est.fold_accuracies.clone(),
        accuracy: est.mean,
        accuracy_std: est.std,
        auc,
        fit_seconds_mean: fit_seconds.iter().sum::<f64>() / folds as f64,
        fit_seconds,
    })
}

/// Index of the best grid point: highest mean accuracy, first (simplest) on ties.
pub fn best_index(estimates: &[CvEstimate]) -> usize {
    let mut best = 0;
    for (i, e) in estimates.iter().enumerate() {
        if e.mean > estimates[best].mean + 1e-12 {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_are_stratified_and_cover_everything() {
        let labels: Vec<String> = (0..20)
            .map(|i| if i < 15 { "a".into() } else { "b".into() })
            .collect();
        let folds = stratified_folds(&labels, 5, 3).unwrap();
        let mut all: Vec<usize> = folds.concat();
        all.sort_unstable();
        assert_eq!(all, (0..20).collect::<Vec<_>>());
        for f in &folds {
            assert_eq!(f.len(), 4);
            assert_eq!(f.iter().filter(|&&i| i >= 15).count(), 1);
        }
        assert_eq!(folds, stratified_folds(&labels, 5, 3).unwrap());
    }

    #[test]
    fn each_kind_searches_its_own_grid() {
        let bags = InputKind::Bag { dim: 166 };
        let grid = |kind| {
            default_grid(
                &FitParams {
                    kind,
                    ..FitParams::default()
                },
                bags,
            )
        };
        let miordm = grid(ModelKind::Miordm);
        assert_eq!(miordm.len(), 4 * 3 * 3);
        let mut lambdas: Vec<f64> = miordm.iter().map(|p| p.miordm.lambda).collect();
        lambdas.dedup();
        assert_eq!(
            lambdas,
            [128.0, 256.0, 512.0, 1024.0],
            "the paper's 2^7..2^10"
        );
        assert!(miordm
            .iter()
            .all(|p| [0.6, 0.7, 0.8].contains(&p.miordm.theta) && p.kind == ModelKind::Miordm));
        assert_eq!(grid(ModelKind::Misvm).len(), 9);
        assert_eq!(grid(ModelKind::Boxsvm).len(), 8);
        assert!(grid(ModelKind::Lpboost).len() > 1);
    }

    #[test]
    fn auc_by_hand() {
        assert_eq!(
            auc(&[0.1, 0.4, 0.35, 0.8], &[false, false, true, true]),
            Some(0.75)
        );
        assert_eq!(auc(&[1.0, 1.0], &[false, true]), Some(0.5));
        assert_eq!(auc(&[1.0], &[true]), None);
    }
}
