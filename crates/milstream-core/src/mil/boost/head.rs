//! The pooled ridge head (beyond the paper): class scores refit over every class's
//! hypotheses at once.
//!
//! One-vs-rest boosting (footnote 3) gives each class its own ensemble and margin; their
//! scores g_c are never fitted against each other, and a class cannot use another's
//! evidence ("this bag looks like class 7, so it is not class 1"). The head keeps the
//! hypotheses LPBoost chose and replaces only the last step: g_c(B) = b_c + sum_j w_cj
//! h_j(B) over the hypotheses of all classes, fitted by ridge regression on +-1 class
//! indicators, as RDST's and ROCKET's ridge classifier is over their features. The ridge
//! penalty is chosen by exact leave-one-out error from one eigendecomposition, guarded
//! against the interpolating end of the curve, where a prior penalty per training bag
//! stands in (see [`choose_penalty`]).

use nalgebra::{DMatrix, SymmetricEigen};
use serde::{Deserialize, Serialize};

/// Ridge penalties tried (on standardised features): 10^-3 .. 10^3 in half decades.
const ALPHAS: [f64; 13] = [
    1e-3, 3.16e-3, 1e-2, 3.16e-2, 1e-1, 3.16e-1, 1.0, 3.16, 10.0, 31.6, 100.0, 316.0, 1000.0,
];

/// The penalty per training bag taken where leave-one-out cannot tell (a curve rising from
/// the smallest penalty). With standardised features X'X has n on its diagonal, so 3n
/// weighs each hypothesis's coefficient three times its fit term whatever the number of
/// bags. Measured 1n, 3n, 10n over 22 series rows (docs/VARIANTS.md).
const PENALTY_PER_BAG: f64 = 3.0;

/// g_c(B) = bias[c] + sum_j weights[c][j] h_j(B), with h_j every hypothesis of every
/// ensemble in model order (ensemble by ensemble).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PooledHead {
    /// Per class (in the model's class order), one weight per hypothesis.
    pub weights: Vec<Vec<f64>>,
    pub bias: Vec<f64>,
    /// The ridge penalty leave-one-out chose (on standardised features).
    pub alpha: f64,
}

impl PooledHead {
    /// Every class's score from the hypotheses' outputs `values` (model order).
    pub fn scores(&self, values: &[f64]) -> Vec<f64> {
        self.weights
            .iter()
            .zip(&self.bias)
            .map(|(w, b)| b + w.iter().zip(values).map(|(w, v)| w * v).sum::<f64>())
            .collect()
    }

    /// Fits the head on the training bags' hypothesis outputs `rows` (one row per bag, model
    /// order) and class indices `labels` in 0..classes. None when there is no hypothesis or
    /// the fit is not finite (the model then keeps its ensembles' own scores).
    pub fn fit(rows: &[Vec<f64>], labels: &[usize], classes: usize) -> Option<Self> {
        let n = rows.len();
        let p = rows.first().map_or(0, Vec::len);
        if n < 2 || p == 0 {
            return None;
        }
        // Standardised features (a constant one is left at 0 and gets no weight).
        let mean: Vec<f64> = (0..p)
            .map(|j| rows.iter().map(|r| r[j]).sum::<f64>() / n as f64)
            .collect();
        let scale: Vec<f64> = (0..p)
            .map(|j| {
                let var = rows.iter().map(|r| (r[j] - mean[j]).powi(2)).sum::<f64>() / n as f64;
                if var > 1e-24 {
                    var.sqrt()
                } else {
                    1.0
                }
            })
            .collect();
        let x = DMatrix::from_fn(n, p, |i, j| (rows[i][j] - mean[j]) / scale[j]);
        // +-1 indicators, centred: the intercept is their mean.
        let y = DMatrix::from_fn(n, classes, |i, c| if labels[i] == c { 1.0 } else { -1.0 });
        let y_mean: Vec<f64> = (0..classes).map(|c| y.column(c).mean()).collect();
        let yc = DMatrix::from_fn(n, classes, |i, c| y[(i, c)] - y_mean[c]);
        let coef = ridge_loo(&x, &yc);
        let weights: Vec<Vec<f64>> = (0..classes)
            .map(|c| (0..p).map(|j| coef.w[(j, c)] / scale[j]).collect())
            .collect();
        let bias = (0..classes)
            .map(|c| y_mean[c] - (0..p).map(|j| weights[c][j] * mean[j]).sum::<f64>())
            .collect();
        let head = Self {
            weights,
            bias,
            alpha: coef.alpha,
        };
        let finite = head
            .weights
            .iter()
            .flatten()
            .chain(&head.bias)
            .all(|v| v.is_finite());
        finite.then_some(head)
    }
}

/// Ridge coefficients (p x targets) and the penalty chosen.
struct Ridge {
    w: DMatrix<f64>,
    alpha: f64,
}

/// Ridge regression of the centred targets `y` on the centred features `x`, with the penalty
/// [`choose_penalty`] takes from the leave-one-out squared errors over [`ALPHAS`]. One
/// eigendecomposition of the smaller Gram matrix (n x n when n <= p, else p x p) gives every
/// penalty's fit and its hat matrix's diagonal, hence the exact leave-one-out residuals
/// e_i / (1 - H_ii).
fn ridge_loo(x: &DMatrix<f64>, y: &DMatrix<f64>) -> Ridge {
    let (n, p) = x.shape();
    // Z Z' = X X' with the eigenvalues lam of the smaller Gram matrix: H = Z diag(1/(lam+a)) Z'.
    let dual = n <= p;
    let eig = if dual {
        SymmetricEigen::new(x * x.transpose())
    } else {
        SymmetricEigen::new(x.transpose() * x)
    };
    let lam: Vec<f64> = eig.eigenvalues.iter().map(|&l| l.max(0.0)).collect();
    let basis = &eig.eigenvectors;
    let z = if dual {
        DMatrix::from_fn(n, n, |i, k| basis[(i, k)] * lam[k].sqrt())
    } else {
        x * basis
    };
    let alpha = choose_penalty(&loo_errors(dual, &lam, basis, &z, y), n);
    // diag(1/(lam+a)) times `m`.
    let shrink = |mut m: DMatrix<f64>| {
        for (k, l) in lam.iter().enumerate() {
            m.row_mut(k).scale_mut(1.0 / (l + alpha));
        }
        m
    };
    let w = if dual {
        // W = X' U diag(1/(lam+a)) U' Y.
        x.transpose() * (basis * shrink(basis.transpose() * y))
    } else {
        // W = V diag(1/(lam+a)) Z' Y.
        basis * shrink(z.transpose() * y)
    };
    Ridge { w, alpha }
}

/// The penalty to fit with, from the leave-one-out errors over [`ALPHAS`] of a fit on `n`
/// bags: the least error, unless that is at the smallest penalty. There the errors either
/// have an interior local minimum, which is then taken (the lowest such), or rise from the
/// smallest penalty all the way, and then [`PENALTY_PER_BAG`] x n is taken. Both are the
/// ridge interpolating its training cases through hypotheses boosting chose on those very
/// cases, so that leaving one out costs nothing: after a peak (double descent) where a case
/// has near copies (windows cut from one recording; trusting it picked 1e-3 on
/// BasicMotionsWindows draw 1, 0.807 against 0.986 at the interior minimum), and from the
/// start on independent cases (the error is 0 up to 0.1-1 on every multiclass set measured;
/// ACSF1Frames draws 0-5 at 1e-3 0.571 on average, at 3n 0.635; docs/VARIANTS.md).
fn choose_penalty(errors: &[f64], n: usize) -> f64 {
    let least =
        |ks: &mut dyn Iterator<Item = usize>| ks.min_by(|&a, &b| errors[a].total_cmp(&errors[b]));
    let overall = least(&mut (0..errors.len())).unwrap_or(0);
    if overall != 0 {
        return ALPHAS[overall];
    }
    let interior = least(
        &mut (1..errors.len().saturating_sub(1))
            .filter(|&k| errors[k] < errors[k - 1] && errors[k] <= errors[k + 1]),
    );
    interior.map_or(PENALTY_PER_BAG * n as f64, |k| ALPHAS[k])
}

/// Leave-one-out squared error summed over bags and targets, per penalty in [`ALPHAS`].
/// Dual (n <= p): `basis` is U of X X' = U diag(lam) U' and I - H = U diag(a / (lam + a)) U'
/// (U is a complete basis), which keeps the residuals exact when the fit nearly
/// interpolates. Primal: `z` = X V and H = Z diag(1 / (lam + a)) Z'.
fn loo_errors(
    dual: bool,
    lam: &[f64],
    basis: &DMatrix<f64>,
    z: &DMatrix<f64>,
    y: &DMatrix<f64>,
) -> Vec<f64> {
    let n = y.nrows();
    let (rows, coef) = if dual {
        (basis, basis.transpose() * y)
    } else {
        (z, z.transpose() * y)
    };
    ALPHAS
        .iter()
        .map(|&alpha| {
            let f: Vec<f64> = if dual {
                lam.iter().map(|l| alpha / (l + alpha)).collect()
            } else {
                lam.iter().map(|l| 1.0 / (l + alpha)).collect()
            };
            let mut err = 0.0;
            for i in 0..n {
                let row = rows.row(i);
                let h: f64 = row.iter().zip(&f).map(|(u, f)| u * u * f).sum();
                let one_minus_h = if dual { h } else { 1.0 - h };
                for c in 0..y.ncols() {
                    let fitted: f64 = (0..f.len()).map(|k| row[k] * f[k] * coef[(k, c)]).sum();
                    let resid = if dual { fitted } else { y[(i, c)] - fitted };
                    err += (resid / one_minus_h.max(1e-12)).powi(2);
                }
            }
            err
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A seeded table of values in [-1, 1).
    fn table(n: usize, p: usize, seed: u64) -> DMatrix<f64> {
        let mut s = seed;
        DMatrix::from_fn(n, p, |_, _| {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
    }

    /// The penalty, coefficients and leave-one-out errors from the eigendecomposition equal
    /// a direct solve of (X'X + aI) W = X'Y and n refits without each row, on both sides
    /// of n = p.
    #[test]
    fn ridge_matches_direct_solves_and_refits() {
        for (n, p) in [(30, 8), (9, 25)] {
            let x = table(n, p, n as u64);
            let y = table(n, 2, 7);
            let r = ridge_loo(&x, &y);
            let direct = (x.transpose() * &x + DMatrix::identity(p, p) * r.alpha)
                .cholesky()
                .unwrap()
                .solve(&(x.transpose() * &y));
            assert!((&r.w - &direct).amax() < 1e-8, "n {n} p {p}");
            let dual = n <= p;
            let eig = if dual {
                SymmetricEigen::new(&x * x.transpose())
            } else {
                SymmetricEigen::new(x.transpose() * &x)
            };
            let lam: Vec<f64> = eig.eigenvalues.iter().map(|&l| l.max(0.0)).collect();
            let z = if dual {
                DMatrix::from_fn(n, n, |i, k| eig.eigenvectors[(i, k)] * lam[k].sqrt())
            } else {
                &x * &eig.eigenvectors
            };
            let errs = loo_errors(dual, &lam, &eig.eigenvectors, &z, &y);
            for (&alpha, &err) in ALPHAS.iter().zip(&errs) {
                let mut brute = 0.0;
                for i in 0..n {
                    let keep: Vec<usize> = (0..n).filter(|&j| j != i).collect();
                    let xs = x.select_rows(&keep);
                    let ys = y.select_rows(&keep);
                    let w = (xs.transpose() * &xs + DMatrix::identity(p, p) * alpha)
                        .cholesky()
                        .unwrap()
                        .solve(&(xs.transpose() * &ys));
                    let pred = x.row(i) * w;
                    brute += (y.row(i) - pred).map(|v| v * v).sum();
                }
                assert!(
                    (err - brute).abs() < 1e-6 * brute.max(1.0),
                    "n {n} p {p} alpha {alpha}: {err} against {brute}"
                );
            }
            assert_eq!(r.alpha, choose_penalty(&errs, n));
        }
    }

    /// The least error is taken, but a double descent's edge at the smallest penalty yields
    /// to the interior minimum (BasicMotionsWindows draw 1's curve, 13 penalties), and a
    /// curve rising from the smallest penalty to the prior penalty per bag.
    #[test]
    fn the_penalty_is_the_least_error_outside_an_interpolating_descent() {
        let draw1 = [
            7.6, 20.4, 41.2, 55.9, 54.5, 46.9, 38.8, 30.8, 24.7, 21.5, 21.0, 24.7, 38.9,
        ];
        assert_eq!(choose_penalty(&draw1, 280), 100.0);
        // Rising from the smallest penalty (ManyFew's kind): 3 per bag.
        let rising = [
            0.0, 0.0, 0.1, 0.9, 5.7, 20.9, 44.2, 66.8, 96.9, 150.8, 160.0, 170.0, 180.0,
        ];
        assert_eq!(choose_penalty(&rising, 80), 240.0);
        // A least error inside the grid, or at its largest penalty, is taken as it is.
        let inside = [
            9.0, 8.0, 7.0, 3.0, 5.0, 2.0, 4.0, 6.0, 8.0, 9.0, 9.5, 9.8, 9.9,
        ];
        assert_eq!(choose_penalty(&inside, 50), ALPHAS[5]);
        let falling: Vec<f64> = (0..13).map(|k| 20.0 - k as f64).collect();
        assert_eq!(choose_penalty(&falling, 50), 1000.0);
        // Equal errors at the edge and beyond: no strict interior minimum, 3 per bag.
        assert_eq!(choose_penalty(&[1.0; 13], 50), 150.0);
    }

    /// The head separates three classes that differ in which feature is high, keeps a
    /// constant feature at weight 0, and scores in the raw (unstandardised) units.
    #[test]
    fn the_head_fits_classes_in_raw_units() {
        let noise = table(60, 4, 3);
        let labels: Vec<usize> = (0..60).map(|i| i % 3).collect();
        let rows: Vec<Vec<f64>> = (0..60)
            .map(|i| {
                let mut r: Vec<f64> = (0..3)
                    .map(|f| 10.0 * f as f64 + if labels[i] == f { 2.0 } else { 0.0 })
                    .map(|v| v + 0.3 * noise[(i, 0)])
                    .collect();
                r[1] += 0.2 * noise[(i, 1)];
                r.push(5.0);
                r
            })
            .collect();
        let head = PooledHead::fit(&rows, &labels, 3).unwrap();
        assert!(
            head.weights.iter().all(|w| w[3] == 0.0),
            "{:?}",
            head.weights
        );
        for (r, &l) in rows.iter().zip(&labels) {
            let s = head.scores(r);
            let best = (0..3).max_by(|&a, &b| s[a].total_cmp(&s[b])).unwrap();
            assert_eq!(best, l, "{s:?}");
        }
        assert!(PooledHead::fit(&rows[..1], &labels[..1], 3).is_none());
        let mut broken = rows.clone();
        broken[7][2] = f64::NAN;
        assert!(PooledHead::fit(&broken, &labels, 3).is_none());
        assert!(PooledHead::fit(&vec![Vec::new(); 5], &[0, 1, 2, 0, 1], 3).is_none());
    }
}
