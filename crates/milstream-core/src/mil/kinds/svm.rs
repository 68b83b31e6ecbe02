//! The soft-margin kernel SVM shared by the box-counting kernel model and the MI-SVM / mi-SVM
//! baselines (Andrews, Tsochantaridis and Hofmann, "Support Vector Machines for
//! Multiple-Instance Learning", NIPS 2002; the comparison rows of the papers' tables).
//!
//! The SVM is solved through its dual QP with Clarabel, like every other program here:
//! min ½ a'(Y K Y) a - 1'a  s.t.  y'a = 0,  0 <= a_i <= C_i. An interior-point method
//! factorises the dense Gram, cubic in the examples, so large problems are solved by
//! chunking (Vapnik; Osuna et al. 1997): the same QP on a working set of the support
//! vectors and the worst margin violators, until no example outside it violates the KKT
//! conditions, which makes the working-set solution the solution of the whole QP.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::mil::bag::{Bag, Dataset, Sample};
use crate::mil::error::{MilError, Result};
use crate::mil::lp::solver::ConicProgram;

/// A solved dual: the expansion f(x) = sum_i coef_i K(x_i, x) + bias, coef_i = a_i y_i.
#[derive(Debug, Clone, PartialEq)]
pub struct SvmDual {
    pub coef: Vec<f64>,
    pub bias: f64,
    /// Indices with a_i > 0 (the support vectors).
    pub support: Vec<usize>,
}

/// Solves the SVM dual for the Gram matrix `gram` (n x n, row-major), labels `y` in {-1, +1}
/// and per-example box bounds `c`.
pub fn fit_dual(gram: &[f64], y: &[f64], c: &[f64]) -> Result<SvmDual> {
    let n = y.len();
    assert_eq!(gram.len(), n * n, "the Gram matrix must be n x n");
    assert_eq!(c.len(), n, "one bound per example");
    if !y.iter().any(|v| *v > 0.0) || !y.iter().any(|v| *v < 0.0) {
        return Err(MilError::Training(
            "the SVM needs examples of both signs".into(),
        ));
    }
    // Q = Y K Y, with a tiny ridge so the interior-point method sees a strictly convex QP
    // when K is rank deficient (duplicated instances are common in MIL data).
    let mut q = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            q[i * n + j] = y[i] * y[j] * gram[i * n + j];
        }
        q[i * n + i] += 1e-9;
    }
    let mut qp = ConicProgram::new(n);
    qp.set_objective(vec![-1.0; n]);
    qp.set_quadratic_dense(&q);
    qp.add_eq((0..n).map(|i| (i, y[i])).collect(), 0.0);
    for (i, &ci) in c.iter().enumerate() {
        qp.add_le(vec![(i, -1.0)], 0.0);
        qp.add_le(vec![(i, 1.0)], ci);
    }
    let sol = qp.solve("the SVM dual")?;
    let a: Vec<f64> = sol
        .x
        .iter()
        .zip(c)
        .map(|(v, ci)| v.clamp(0.0, *ci))
        .collect();
    let coef: Vec<f64> = a.iter().zip(y).map(|(ai, yi)| ai * yi).collect();
    let decision = |i: usize| -> f64 { (0..n).map(|j| coef[j] * gram[i * n + j]).sum() };
    // KKT: a free support vector (0 < a_i < C_i) sits on the margin, y_i f(x_i) = 1; the
    // bias is their average. With none free, the bias lies between the bounded ones'.
    let tol = 1e-6;
    let free: Vec<usize> = (0..n)
        .filter(|&i| a[i] > tol * c[i] && a[i] < (1.0 - tol) * c[i])
        .collect();
    let bias = if free.is_empty() {
        let (mut lo, mut hi) = (f64::NEG_INFINITY, f64::INFINITY);
        for i in 0..n {
            let r = y[i] - decision(i);
            // y_i = +1 at a_i = 0 and y_i = -1 at a_i = C need b >= r; the others b <= r.
            let at_zero = a[i] <= tol * c[i];
            if (y[i] > 0.0) == at_zero {
                lo = lo.max(r);
            } else {
                hi = hi.min(r);
            }
        }
        match (lo.is_finite(), hi.is_finite()) {
            (true, true) => 0.5 * (lo + hi),
            (true, false) => lo,
            (false, true) => hi,
            (false, false) => 0.0,
        }
    } else {
        free.iter().map(|&i| y[i] - decision(i)).sum::<f64>() / free.len() as f64
    };
    let support = (0..n).filter(|&i| a[i] > tol * c[i]).collect();
    Ok(SvmDual {
        coef,
        bias,
        support,
    })
}

/// Examples above which [`fit_dual_chunked`] works on a working set: Clarabel solves a
/// dense 600-example dual in a fraction of a second, a 1,250-example one in about 3.5 s.
pub const SVM_CHUNK: usize = 600;

/// The SVM dual of `n` examples with kernel `kernel(i, j)`, by chunking when n exceeds
/// `chunk`; equal to [`fit_dual`] on the full Gram up to the KKT tolerance.
pub fn fit_dual_chunked(
    n: usize,
    kernel: &(dyn Fn(usize, usize) -> f64 + Sync),
    y: &[f64],
    c: &[f64],
    chunk: usize,
) -> Result<SvmDual> {
    let gram_of = |set: &[usize]| -> Vec<f64> {
        set.par_iter()
            .flat_map_iter(|&i| set.iter().map(move |&j| kernel(i, j)))
            .collect()
    };
    if n <= chunk {
        let all: Vec<usize> = (0..n).collect();
        return fit_dual(&gram_of(&all), y, c);
    }
    // Start from evenly spread examples of each class, half the chunk each at most.
    let mut working: Vec<usize> = Vec::new();
    for sign in [1.0, -1.0] {
        let class: Vec<usize> = (0..n).filter(|&i| y[i] == sign).collect();
        let take = class.len().min(chunk / 2).max(1);
        working.extend((0..take).map(|k| class[k * class.len() / take]));
    }
    working.sort_unstable();
    working.dedup();
    // Violations smaller than this (in margin units) are the QP's own tolerance.
    let tol = 1e-3;
    for _ in 0..100 {
        let sub_y: Vec<f64> = working.iter().map(|&i| y[i]).collect();
        let sub_c: Vec<f64> = working.iter().map(|&i| c[i]).collect();
        let d = fit_dual(&gram_of(&working), &sub_y, &sub_c)?;
        let support: Vec<usize> = d.support.iter().map(|&k| working[k]).collect();
        let support_coef: Vec<f64> = d.support.iter().map(|&k| d.coef[k]).collect();
        let in_working = {
            let mut m = vec![false; n];
            for &i in &working {
                m[i] = true;
            }
            m
        };
        // Outside the working set a_i = 0, which the KKT conditions allow iff y_i f_i >= 1.
        let mut violators: Vec<(f64, usize)> = (0..n)
            .into_par_iter()
            .filter(|&i| !in_working[i])
            .filter_map(|i| {
                let f: f64 = support
                    .iter()
                    .zip(&support_coef)
                    .map(|(&s, a)| a * kernel(s, i))
                    .sum::<f64>()
                    + d.bias;
                let margin = y[i] * f;
                (margin < 1.0 - tol).then_some((margin, i))
            })
            .collect();
        if violators.is_empty() {
            let mut coef = vec![0.0; n];
            for (&s, &a) in support.iter().zip(&support_coef) {
                coef[s] = a;
            }
            return Ok(SvmDual {
                coef,
                bias: d.bias,
                support,
            });
        }
        violators.sort_by(|a, b| a.0.total_cmp(&b.0));
        working = support;
        let room = chunk.saturating_sub(working.len()).max(chunk / 4);
        working.extend(violators.iter().take(room).map(|&(_, i)| i));
        working.sort_unstable();
    }
    Err(MilError::Training(
        "the SVM's working set did not settle in 100 chunks".into(),
    ))
}

/// Per-feature min-max scaling to [0, 1] with the training instances' ranges (constant
/// features keep range 1), stored in the artifact so prediction applies the same map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RangeScaler {
    pub min: Vec<f64>,
    pub range: Vec<f64>,
}

impl RangeScaler {
    pub fn fit(bags: &[&Bag]) -> Self {
        let dim = bags.first().map_or(0, |b| b.dim());
        let mut min = vec![f64::INFINITY; dim];
        let mut max = vec![f64::NEG_INFINITY; dim];
        for b in bags {
            for x in b.instances() {
                for f in 0..dim {
                    min[f] = min[f].min(x[f]);
                    max[f] = max[f].max(x[f]);
                }
            }
        }
        let range = min
            .iter()
            .zip(&max)
            .map(|(lo, hi)| if hi > lo { hi - lo } else { 1.0 })
            .collect();
        Self { min, range }
    }

    pub fn apply(&self, x: &[f64]) -> Vec<f64> {
        x.iter()
            .enumerate()
            .map(|(f, v)| (v - self.min[f]) / self.range[f])
            .collect()
    }
}

pub fn rbf(gamma: f64, x: &[f64], z: &[f64]) -> f64 {
    let d2: f64 = x.iter().zip(z).map(|(a, b)| (a - b) * (a - b)).sum();
    (-gamma * d2).exp()
}

/// The two training regimes of Andrews et al.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MiSvmVariant {
    /// MI-SVM: one witness per positive bag (its highest-scoring instance), every negative
    /// instance; the bag margin.
    Bag,
    /// mi-SVM: every instance with an imputed label; a positive bag keeps at least one
    /// positive instance.
    Instance,
}

/// Hyperparameters of the SVM kinds (MI-SVM, mi-SVM, and the box-kernel SVM's C).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SvmParams {
    /// Soft-margin bound C.
    pub c: f64,
    /// RBF width gamma in exp(-gamma |x - z|^2) on [0, 1]-scaled features; None = the
    /// median heuristic (1 / median squared distance between training instances) times
    /// `gamma_scale`.
    pub gamma: Option<f64>,
    pub gamma_scale: f64,
    /// Label / witness re-assignment rounds at most (MI-SVM, mi-SVM).
    pub max_rounds: usize,
}

impl Default for SvmParams {
    fn default() -> Self {
        Self {
            c: 10.0,
            gamma: None,
            gamma_scale: 1.0,
            max_rounds: 20,
        }
    }
}

impl SvmParams {
    pub fn validate(&self) -> Result<()> {
        if !(self.c > 0.0 && self.c.is_finite()) {
            return Err(MilError::InvalidParameter(format!(
                "C must be > 0, got {}",
                self.c
            )));
        }
        if self.gamma.is_some_and(|g| !(g > 0.0 && g.is_finite())) {
            return Err(MilError::InvalidParameter(format!(
                "gamma must be > 0, got {:?}",
                self.gamma
            )));
        }
        if !(self.gamma_scale > 0.0 && self.gamma_scale.is_finite()) {
            return Err(MilError::InvalidParameter(format!(
                "gamma scale must be > 0, got {}",
                self.gamma_scale
            )));
        }
        if self.max_rounds == 0 {
            return Err(MilError::InvalidParameter("SVM rounds must be >= 1".into()));
        }
        Ok(())
    }
}

/// A fitted MI-SVM or mi-SVM: an RBF SVM over instances; a bag scores max_x f(x).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MiSvmModel {
    pub variant: MiSvmVariant,
    /// [negative, positive] (sorted; the second is positive).
    pub classes: [String; 2],
    pub dim: usize,
    pub scaler: RangeScaler,
    pub gamma: f64,
    /// Support vectors (scaled), row-major.
    pub support: Vec<f64>,
    pub coef: Vec<f64>,
    pub bias: f64,
    pub rounds: usize,
    pub converged: bool,
}

/// The bags of a binary bag dataset, its sorted classes and y in {-1, +1}.
pub fn binary_bags<'a>(
    ds: &'a Dataset,
    what: &str,
) -> Result<(Vec<&'a Bag>, [String; 2], Vec<f64>)> {
    let classes = ds.classes();
    if classes.len() != 2 {
        return Err(MilError::InvalidParameter(format!(
            "{what} is a binary machine: the data has {} classes {:?} (Model::fit runs one per class for more)",
            classes.len(),
            classes
        )));
    }
    let bags = ds
        .samples
        .iter()
        .map(|s| match s {
            Sample::Bag(b) => Ok(b),
            Sample::Series(_) | Sample::Multi(_) => Err(MilError::InvalidParameter(format!(
                "{what} takes bags; series must be bagged into subsequences first"
            ))),
        })
        .collect::<Result<Vec<_>>>()?;
    let y = ds
        .labels
        .iter()
        .map(|l| if *l == classes[1] { 1.0 } else { -1.0 })
        .collect();
    Ok((bags, [classes[0].clone(), classes[1].clone()], y))
}

/// One round's training set (Andrews et al.): MI-SVM takes each positive bag's witness and
/// every instance of a negative bag; mi-SVM every instance with its current label.
fn training_points(
    variant: MiSvmVariant,
    scaled: &[Vec<Vec<f64>>],
    y: &[f64],
    witness: &[Vec<f64>],
    instance_label: &[Vec<f64>],
) -> (Vec<Vec<f64>>, Vec<f64>) {
    let (mut points, mut labels) = (Vec::new(), Vec::new());
    for (i, inst) in scaled.iter().enumerate() {
        match variant {
            MiSvmVariant::Bag if y[i] > 0.0 => {
                points.push(witness[i].clone());
                labels.push(1.0);
            }
            MiSvmVariant::Bag => {
                for x in inst {
                    points.push(x.clone());
                    labels.push(-1.0);
                }
            }
            MiSvmVariant::Instance => {
                for (x, l) in inst.iter().zip(&instance_label[i]) {
                    points.push(x.clone());
                    labels.push(*l);
                }
            }
        }
    }
    (points, labels)
}

impl MiSvmModel {
    pub fn fit(ds: &Dataset, p: &SvmParams, variant: MiSvmVariant) -> Result<Self> {
        p.validate()?;
        let what = match variant {
            MiSvmVariant::Bag => "MI-SVM",
            MiSvmVariant::Instance => "mi-SVM",
        };
        let (bags, classes, y) = binary_bags(ds, what)?;
        let dim = bags[0].dim();
        let scaler = RangeScaler::fit(&bags);
        let scaled: Vec<Vec<Vec<f64>>> = bags
            .iter()
            .map(|b| b.instances().map(|x| scaler.apply(x)).collect())
            .collect();
        let gamma = p.gamma.unwrap_or_else(|| {
            let all: Vec<&[f64]> = scaled.iter().flatten().map(Vec::as_slice).collect();
            p.gamma_scale * median_heuristic_gamma(&all)
        });
        // Training instances are (bag, instance) pairs with a label; MI-SVM's positive bags
        // enter through one witness each, which starts as the bag's mean (Andrews et al.).
        let mean = |inst: &[Vec<f64>]| -> Vec<f64> {
            let mut m = vec![0.0; dim];
            for x in inst {
                for f in 0..dim {
                    m[f] += x[f] / inst.len() as f64;
                }
            }
            m
        };
        let mut witness: Vec<Vec<f64>> = scaled.iter().map(|inst| mean(inst)).collect();
        let mut instance_label: Vec<Vec<f64>> = scaled
            .iter()
            .zip(&y)
            .map(|(inst, yi)| vec![*yi; inst.len()])
            .collect();
        let mut rounds = 0;
        let mut converged = false;
        let (mut points, mut labels);
        let mut dual;
        loop {
            rounds += 1;
            (points, labels) = training_points(variant, &scaled, &y, &witness, &instance_label);
            let n = points.len();
            let kernel = |a: usize, b: usize| rbf(gamma, &points[a], &points[b]);
            dual = fit_dual_chunked(n, &kernel, &labels, &vec![p.c; n], SVM_CHUNK)?;
            let f = |x: &[f64]| -> f64 {
                dual.support
                    .iter()
                    .map(|&s| dual.coef[s] * rbf(gamma, &points[s], x))
                    .sum::<f64>()
                    + dual.bias
            };
            let mut changed = false;
            for (i, inst) in scaled.iter().enumerate() {
                if y[i] < 0.0 {
                    continue;
                }
                let scores: Vec<f64> = inst.iter().map(|x| f(x)).collect();
                let best = argmax(&scores);
                match variant {
                    MiSvmVariant::Bag => {
                        if inst[best] != witness[i] {
                            witness[i] = inst[best].clone();
                            changed = true;
                        }
                    }
                    MiSvmVariant::Instance => {
                        let mut next: Vec<f64> = scores
                            .iter()
                            .map(|s| if *s > 0.0 { 1.0 } else { -1.0 })
                            .collect();
                        // A positive bag holds at least one positive instance.
                        next[best] = 1.0;
                        if next != instance_label[i] {
                            instance_label[i] = next;
                            changed = true;
                        }
                    }
                }
            }
            if !changed {
                converged = true;
                break;
            }
            if rounds >= p.max_rounds {
                break;
            }
        }
        let support: Vec<f64> = dual
            .support
            .iter()
            .flat_map(|&s| points[s].iter().copied())
            .collect();
        let coef = dual.support.iter().map(|&s| dual.coef[s]).collect();
        Ok(Self {
            variant,
            classes,
            dim,
            scaler,
            gamma,
            support,
            coef,
            bias: dual.bias,
            rounds,
            converged,
        })
    }

    /// Per instance f(x) = sum_s coef_s K(sv_s, x) + b.
    pub fn instance_scores(&self, bag: &Bag) -> Vec<f64> {
        bag.instances()
            .map(|x| {
                let s = self.scaler.apply(x);
                self.support
                    .chunks_exact(self.dim)
                    .zip(&self.coef)
                    .map(|(sv, c)| c * rbf(self.gamma, sv, &s))
                    .sum::<f64>()
                    + self.bias
            })
            .collect()
    }

    pub fn validate(&self) -> Result<()> {
        let ok = self.dim > 0
            && self.support.len() == self.coef.len() * self.dim
            && self.scaler.min.len() == self.dim
            && self.scaler.range.len() == self.dim
            && self.gamma > 0.0;
        if ok {
            Ok(())
        } else {
            Err(MilError::Artifact(
                "MI-SVM support vectors, coefficients and scaler disagree in shape".into(),
            ))
        }
    }
}

/// 1 / the median squared distance between instances, over a fixed spread of at most 4096
/// pairs (deterministic, no RNG); 1 when every pair coincides.
pub fn median_heuristic_gamma(instances: &[&[f64]]) -> f64 {
    let n = instances.len();
    if n < 2 {
        return 1.0;
    }
    let mut d2: Vec<f64> = (0..4096.min(n * (n - 1) / 2))
        .filter_map(|k| {
            let i = (k * 7919) % n;
            let j = (k * 104_729 + 1 + i) % n;
            (i != j).then(|| {
                instances[i]
                    .iter()
                    .zip(instances[j])
                    .map(|(a, b)| (a - b) * (a - b))
                    .sum::<f64>()
            })
        })
        .filter(|v| *v > 0.0)
        .collect();
    if d2.is_empty() {
        return 1.0;
    }
    let mid = d2.len() / 2;
    let (_, m, _) = d2.select_nth_unstable_by(mid, f64::total_cmp);
    1.0 / *m
}

/// Index of the largest value, the first on ties.
pub fn argmax(v: &[f64]) -> usize {
    let mut best = 0;
    for (i, x) in v.iter().enumerate() {
        if *x > v[best] {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// On a separable 1-D problem the hard-margin answer is known: support vectors at the
    /// two closest points, the boundary halfway between them.
    #[test]
    fn linear_svm_by_hand() {
        let x = [-3.0, -1.0, 1.0, 3.0];
        let y = [-1.0, -1.0, 1.0, 1.0];
        let gram: Vec<f64> = (0..4)
            .flat_map(|i| (0..4).map(move |j| x[i] * x[j]))
            .collect();
        let d = fit_dual(&gram, &y, &[1e3; 4]).unwrap();
        let w: f64 = (0..4).map(|i| d.coef[i] * x[i]).sum();
        assert!((w - 1.0).abs() < 1e-5, "w = {w}");
        assert!(d.bias.abs() < 1e-5, "b = {}", d.bias);
        assert_eq!(d.support, vec![1, 2]);
    }

    /// The dual's solution satisfies the KKT conditions on random soft-margin problems.
    #[test]
    fn dual_solution_is_kkt() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for _ in 0..4 {
            let n = 30;
            let pts: Vec<[f64; 2]> = (0..n).map(|_| [rng.random(), rng.random()]).collect();
            let y: Vec<f64> = pts
                .iter()
                .map(|p| {
                    if p[0] + 0.3 * rng.random::<f64>() > 0.6 {
                        1.0
                    } else {
                        -1.0
                    }
                })
                .collect();
            let gram: Vec<f64> = (0..n)
                .flat_map(|i| {
                    (0..n)
                        .map(|j| rbf(2.0, &pts[i], &pts[j]))
                        .collect::<Vec<_>>()
                })
                .collect();
            let c = 2.0;
            let d = fit_dual(&gram, &y, &vec![c; n]).unwrap();
            let s: f64 = d.coef.iter().sum();
            assert!(s.abs() < 1e-6, "sum a_i y_i = {s}");
            for i in 0..n {
                let a = d.coef[i] * y[i];
                let margin =
                    y[i] * ((0..n).map(|j| d.coef[j] * gram[i * n + j]).sum::<f64>() + d.bias);
                if a < 1e-6 {
                    assert!(margin > 1.0 - 1e-3, "a=0 needs margin >= 1: {margin}");
                } else if a > c - 1e-6 {
                    assert!(margin < 1.0 + 1e-3, "a=C needs margin <= 1: {margin}");
                } else {
                    assert!(
                        (margin - 1.0).abs() < 1e-3,
                        "free SV on the margin: {margin}"
                    );
                }
            }
        }
    }

    /// Chunking reaches the optimum of the whole QP: same objective as one dense solve.
    #[test]
    fn chunked_dual_equals_the_dense_dual() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let n = 300;
        let pts: Vec<[f64; 2]> = (0..n).map(|_| [rng.random(), rng.random()]).collect();
        let y: Vec<f64> = pts
            .iter()
            .map(|p| {
                if p[0] * p[1] + 0.2 * rng.random::<f64>() > 0.3 {
                    1.0
                } else {
                    -1.0
                }
            })
            .collect();
        let kernel = |i: usize, j: usize| rbf(3.0, &pts[i], &pts[j]);
        let gram: Vec<f64> = (0..n)
            .flat_map(|i| (0..n).map(move |j| kernel(i, j)))
            .collect();
        let c = vec![5.0; n];
        let objective = |coef: &[f64]| -> f64 {
            let a: Vec<f64> = coef.iter().zip(&y).map(|(v, yi)| v * yi).collect();
            let quad: f64 = (0..n)
                .map(|i| coef[i] * (0..n).map(|j| gram[i * n + j] * coef[j]).sum::<f64>())
                .sum();
            0.5 * quad - a.iter().sum::<f64>()
        };
        let dense = fit_dual(&gram, &y, &c).unwrap();
        let chunked = fit_dual_chunked(n, &kernel, &y, &c, 80).unwrap();
        let (fd, fc) = (objective(&dense.coef), objective(&chunked.coef));
        assert!(
            (fd - fc).abs() <= 1e-3 * fd.abs(),
            "dense {fd} vs chunked {fc}"
        );
        let agree = (0..n)
            .filter(|&i| {
                let f =
                    |d: &SvmDual| (0..n).map(|j| d.coef[j] * gram[i * n + j]).sum::<f64>() + d.bias;
                (f(&dense) > 0.0) == (f(&chunked) > 0.0)
            })
            .count();
        assert!(agree >= n - 3, "{agree}/{n} decisions agree");
    }

    fn toy() -> Dataset {
        // Positive bags hold one instance near (0.9, 0.9) among noise; negatives none.
        // Three instances per bag: MI-SVM starts each positive witness at the bag's mean,
        // which with many noise instances sits in the noise and stays there.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let mut ds = Dataset::default();
        for i in 0..40 {
            let pos = i % 2 == 0;
            let mut data = Vec::new();
            for _ in 0..3 {
                data.extend([rng.random::<f64>() * 0.5, rng.random::<f64>() * 0.5]);
            }
            if pos {
                data[0] = 0.9 + 0.05 * rng.random::<f64>();
                data[1] = 0.9 + 0.05 * rng.random::<f64>();
            }
            ds.ids.push(format!("b{i}"));
            ds.labels.push(if pos { "pos" } else { "neg" }.into());
            ds.samples.push(Sample::Bag(Bag::new(2, data).unwrap()));
        }
        ds
    }

    #[test]
    fn mi_svm_and_mi_svm_learn_a_witness_concept() {
        let ds = toy();
        for variant in [MiSvmVariant::Bag, MiSvmVariant::Instance] {
            let m = MiSvmModel::fit(&ds, &SvmParams::default(), variant).unwrap();
            m.validate().unwrap();
            let hits = ds
                .samples
                .iter()
                .zip(&ds.labels)
                .filter(|(s, l)| {
                    let Sample::Bag(b) = s else { unreachable!() };
                    let f = m
                        .instance_scores(b)
                        .into_iter()
                        .fold(f64::NEG_INFINITY, f64::max);
                    (f > 0.0) == (*l == "pos")
                })
                .count();
            assert!(
                hits >= 38,
                "{variant:?}: {hits}/40 after {} rounds",
                m.rounds
            );
        }
    }
}
